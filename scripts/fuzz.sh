#!/usr/bin/env bash
# Build every tests/fuzz/fuzz_*.c as a libFuzzer target (clang, ASan+UBSan) over
# a fuzz build of the library, then run each for FUZZ_SECONDS (default 20).
# Seeds: tests/fuzz/corpus/<target>/ when present. Crashes land in build-fuzz/crashes/.
set -euo pipefail
scripts/deps.sh clang libclang-rt-14-dev
secs=${FUZZ_SECONDS:-20}
san="-fsanitize=address,undefined -fno-omit-frame-pointer"
make --no-print-directory BUILD=build-fuzz CC=clang NO_CUDA=1 OPT=-O1 \
    SAN="$san -fsanitize=fuzzer-no-link" build-fuzz/libtessera.a build-fuzz/libtessera_net.a
libs=$(pkg-config --libs libuv libprotobuf-c libzstd yaml-0.1 libcrypto libssl)
mkdir -p build-fuzz/bin build-fuzz/crashes
status=0
for src in tests/fuzz/fuzz_*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    clang -std=c11 -D_GNU_SOURCE -I. -Ibuild-fuzz/gen -O1 -g $san -fsanitize=fuzzer \
        "$src" build-fuzz/libtessera_net.a build-fuzz/libtessera.a $libs -lm -o "build-fuzz/bin/$name"
    corpus=build-fuzz/corpus/$name
    mkdir -p "$corpus"
    [ -d "tests/fuzz/corpus/$name" ] && cp -n tests/fuzz/corpus/$name/* "$corpus"/ 2>/dev/null || true
    echo "fuzz: $name for ${secs}s"
    if ! "build-fuzz/bin/$name" -max_total_time="$secs" -artifact_prefix="build-fuzz/crashes/$name-" \
        -print_final_stats=1 "$corpus" 2>"build-fuzz/$name.log"; then
        echo "fuzz: $name FAILED (see build-fuzz/$name.log and build-fuzz/crashes/)"
        tail -30 "build-fuzz/$name.log"
        status=1
    else
        grep -E "stat::number_of_executed_units|cov:" "build-fuzz/$name.log" | tail -2
    fi
done
exit $status

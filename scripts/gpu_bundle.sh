#!/usr/bin/env bash
# scripts/gpu_bundle.sh — a prebuilt CUDA build for a GPU machine that cannot
# install anything (the lent device machines reach no network: no apt-get, so
# neither scripts/deps.sh nor a build can run there).
#
# Builds tessera with nvcc here (BUILD, default build-cuda; nvcc must be on
# PATH, no GPU needed), then gathers into BUNDLE (default gpu-bundle; both are
# ignored by git) what tests/gpu/run_all.sh runs, in the build's own layout:
# tessera, tesserad, tests/unit_tests, bench/{bench_gpu,bench_ckks,bench_boot},
# models/ (the generated draft text), stripped; lib/ with the shared libraries
# they load that a bare CUDA image lacks (protobuf-c, zstd, yaml, OpenSSL,
# subunit, libuv; the CUDA runtime is linked statically, the driver, the C and
# C++ runtimes are the machine's);
# .config; and .prebuilt (the commit), which tells run_all.sh to skip the
# dependencies and the build and to put lib/ on LD_LIBRARY_PATH.
#
# Usage: scripts/gpu_bundle.sh            (then, with the bundle carried beside
#        the tree: BUILD=gpu-bundle tests/gpu/run_all.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-cuda}
BUNDLE=${BUNDLE:-gpu-bundle}
command -v nvcc >/dev/null 2>&1 || {
    echo "gpu_bundle: nvcc is not on PATH (the bundle is a CUDA build)" >&2
    exit 1
}
scripts/deps.sh
make -j"$(nproc)" BUILD="$BUILD" all
grep -q 'cuda=1' "$BUILD/.config" || {
    echo "gpu_bundle: $BUILD was configured without CUDA" >&2
    exit 1
}
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/tests" "$BUNDLE/bench" "$BUNDLE/lib"
bins=(tessera tesserad tests/unit_tests bench/bench_gpu bench/bench_ckks bench/bench_boot)
for b in "${bins[@]}"; do
    cp "$BUILD/$b" "$BUNDLE/$b"
    strip --strip-debug "$BUNDLE/$b"
done
cp -r "$BUILD/models" "$BUNDLE/models"
cp "$BUILD/.config" "$BUNDLE/.config"
# the shared libraries outside the C library and the loader, as resolved here
for b in "${bins[@]}"; do
    ldd "$BUNDLE/$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
    case $(basename "$lib") in
    # the C and C++ runtimes: the machine's own (newer there, and shared with
    # everything else a run starts)
    libc.so.* | libm.so.* | libdl.so.* | librt.so.* | libpthread.so.* | ld-linux* | \
        libstdc++.so.* | libgcc_s.so.*) ;;
    *) cp -L "$lib" "$BUNDLE/lib/" ;;
    esac
done
git rev-parse HEAD >"$BUNDLE/.prebuilt"
echo "gpu_bundle: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1), commit $(cut -c1-12 "$BUNDLE/.prebuilt")):"
ls "$BUNDLE/lib"

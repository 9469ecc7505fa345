#!/usr/bin/env bash
# Run every benchmark binary (build/bench/*) and scripts/bench_draft.sh; each writes
# JSON into bench-out/.
# Usage: scripts/bench.sh BUILD_DIR   (BENCH_ARGS passes extra arguments to each)
set -uo pipefail
build=${1:-build}
out=${BENCH_OUT:-bench-out}
mkdir -p "$out"
status=0
found=0
for b in "$build"/bench/*; do
    [ -x "$b" ] || continue
    found=1
    name=$(basename "$b")
    echo "bench: $name -> $out/$name.json"
    if ! "$b" --json "$out/$name.json" ${BENCH_ARGS:-}; then
        echo "bench: $name failed"
        status=1
    fi
done
[ $found -eq 1 ] || echo "bench: no benchmarks built"
# the n-gram draft's acceptance, replayed in plaintext (seconds), priced by
# the engine's plans at the 128-bit preset (BENCH_PLAN_PARAMS; empty: none)
if [ -x "$build/tessera" ]; then
    echo "bench: draft-acceptance -> $out/draft-acceptance.json"
    BENCH_PLAN_PARAMS=${BENCH_PLAN_PARAMS-boot-n16-dense} \
        scripts/bench_draft.sh "$build" "$out/draft-acceptance.json" || {
        echo "bench: draft-acceptance failed"
        status=1
    }
fi
exit $status

#!/usr/bin/env bash
# tests/gpu/run_all.sh — the one-command GPU check of issue 9.
#
# Builds tessera with CUDA, runs every GPU test (the probe, the CPU-vs-GPU
# bit-exact op suite, and the ring / RLWE / CKKS suites with the GPU as the
# default backend), then the benchmarks on the GPU (bench_gpu: N = 2^16 NTT,
# element-wise ops, key switching, mult+relin; bench_ckks: the FHElium suite
# and the N = 2^16 operations), writing logs, JSON and a summary under $OUT
# (./gpu-results when OUT is unset). Meant to finish within 8 minutes on one
# H200: each stage has its own time limit, capped by what is left of the
# overall budget (GPU_RUN_BUDGET seconds, default 460); a failed or timed-out
# stage is reported and the next one still runs. There is no bootstrapping
# benchmark in tests/bench yet; the summary says so.
#
# Usage: tests/gpu/run_all.sh            (from anywhere; fresh machine: needs
#        nvcc on PATH and the Debian packages of scripts/deps.sh, which this
#        script runs first unless SKIP_DEPS=1)
# Exit status: 0 when every stage passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
root=$(pwd)
OUT=${OUT:-$root/gpu-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${BUILD:-build}
BUDGET=${GPU_RUN_BUDGET:-460}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
summary=$OUT/summary.txt
t_start=$(date +%s)
failed=0
: >"$summary"

say() { echo "$*" | tee -a "$summary"; }

# stage NAME LIMIT_SECONDS CMD... : run with a timeout, log to $OUT/NAME.log
stage() {
    local name=$1 limit=$2
    shift 2
    local now left
    now=$(date +%s)
    left=$((BUDGET - (now - t_start)))
    if [ "$left" -lt 15 ]; then
        printf '%-30s %-8s %5s  %s\n' "$name" SKIPPED "-" "overall budget used up" | tee -a "$summary"
        failed=1
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local log=$OUT/$name.log t0 rc
    t0=$(date +%s)
    echo "== $name (limit ${limit}s): $*" >&2
    timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    local dt=$(($(date +%s) - t0)) res=ok note=""
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        res=TIMEOUT
        note="killed after ${limit}s"
    elif [ $rc -ne 0 ]; then
        res=FAIL
        note="exit $rc"
    fi
    # the Check summary line, when there is one
    local ck
    ck=$(grep -E '^[0-9]+%: Checks:' "$log" | tail -1)
    [ -n "$ck" ] && note="${note:+$note; }$ck"
    grep -q 'SKIPPED (no GPU' "$log" && note="${note:+$note; }GPU tests SKIPPED (no GPU)"
    grep -qE 'default backend "gpu" unavailable|^bench_gpu: backend "gpu" unavailable' "$log" &&
        note="${note:+$note; }RAN ON THE CPU (GPU unavailable)"
    printf '%-30s %-8s %4ss  %s\n' "$name" "$res" "$dt" "$note" | tee -a "$summary"
    if [ "$res" != ok ]; then
        failed=1
        tail -n 15 "$log" | sed 's/^/    | /' >>"$summary"
    fi
    return 0
}

say "tessera GPU run — $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
{
    echo "--- nvidia-smi"
    timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
        --format=csv 2>&1 || echo "nvidia-smi unavailable"
    echo "--- nvcc"
    nvcc --version 2>&1 | tail -2 || echo "nvcc not on PATH"
    echo "--- host"
    uname -srm
    grep -m1 'model name' /proc/cpuinfo
    echo "cores: $(nproc)"
} >"$OUT/environment.txt" 2>&1
say "device: $(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)"
say ""
printf '%-30s %-8s %5s  %s\n' stage result time notes | tee -a "$summary"

# 1. dependencies and the CUDA build
if [ -z "${SKIP_DEPS:-}" ] && [ -x scripts/deps.sh ]; then
    stage deps 240 scripts/deps.sh
fi
if ! command -v nvcc >/dev/null 2>&1; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
        [ -x "$d/nvcc" ] && PATH=$d:$PATH && break
    done
fi
stage build 300 make -j"$JOBS" BUILD="$BUILD" all
if [ -f "$BUILD/.config" ] && ! grep -q 'cuda=1' "$BUILD/.config"; then
    say "WARNING: $BUILD was configured without CUDA (nvcc missing?): GPU stages will skip"
    failed=1
fi
tests=$BUILD/tests/unit_tests
export TS_BUILD_DIR=$BUILD CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-300} CK_VERBOSITY=normal

# 2. tests: probe, CPU-vs-GPU op suite, then core suites on the GPU backend
stage test_gpu_probe 60 env CK_RUN_SUITE=gpu "$tests"
stage test_gpu_ops 150 env CK_RUN_SUITE=gpu_ops "$tests"
for s in ring rlwe ckks_encoder ckks_eval; do
    stage "test_${s}_on_gpu" 120 env TS_TEST_BACKEND=gpu CK_RUN_SUITE=$s "$tests"
done

# 3. benchmarks on the GPU
stage bench_gpu 150 "$BUILD/bench/bench_gpu" --backend gpu --json "$OUT/bench_gpu.json"
stage bench_ckks_fhelium 120 "$BUILD/bench/bench_ckks" --backend gpu --suite fhelium \
    --json "$OUT/bench_ckks_fhelium.json"
stage bench_ckks_n16 150 "$BUILD/bench/bench_ckks" --backend gpu --suite none --large \
    --json "$OUT/bench_ckks_n16.json"

# 4. headline numbers
{
    echo ""
    echo "headline (bench_gpu.json):"
    if [ -s "$OUT/bench_gpu.json" ] && command -v python3 >/dev/null 2>&1; then
        python3 - "$OUT/bench_gpu.json" <<'PY' || echo "  (could not parse)"
import json, sys
d = json.load(open(sys.argv[1]))
if d.get("skipped"):
    print("  skipped:", d.get("reason"))
else:
    print("  device:", d.get("device"), " N =", d["params"]["n"])
    for r in d["results"]:
        extra = f"  {r['ns_per_limb']:.1f} ns/limb" if "ns_per_limb" in r else ""
        print(f"  {r['op']:<26} {r['batch']:<22} {r['us_per_call']:>12.2f} us{extra}")
PY
    else
        echo "  (no bench_gpu.json)"
    fi
    echo "bootstrapping benchmark: none in tests/bench yet (not run)"
    echo "total: $(($(date +%s) - t_start)) s; logs and JSON in $OUT"
} | tee -a "$summary"
exit $failed

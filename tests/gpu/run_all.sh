#!/usr/bin/env bash
# tests/gpu/run_all.sh — the one-command GPU check (issues 9 and 10).
#
# Builds tessera with CUDA (or takes a prebuilt bundle, below), runs the GPU
# tests (the probe, the CPU-vs-GPU bit-exact op suite), then, in order of
# what they tell: the 128-bit decode step of aidreams260K on the GPU (issue
# 10's "1 s per token on an H200": `tessera bench decode --params
# boot-n16-dense --context 16`, its ms per token, bootstraps, bits and argmax
# against the plaintext model), one 128-bit bootstrap (boot-n16-dense at 2^11
# slots, h' = 32), the suites whose code a GPU runs (the devemu suite's list,
# tests/unit/test_devemu.c, with the GPU as the default backend and the
# daemon tests' tesserad on it too), and the micro-benchmarks (bench_gpu:
# N = 2^16 NTT, element-wise ops, key switching, mult+relin; bench_ckks: the
# FHElium suite and the N = 2^16 operations), and last the same decode step
# on the machine's CPU cores (side by side with the GPU's, one run, one
# machine; what is left of the budget). Logs, JSON and a summary go
# under $OUT (./gpu-results when OUT is unset). Meant to finish within 9
# minutes on one H100 / H200: each stage has its own time limit, capped by
# what is left of the overall budget (GPU_RUN_BUDGET seconds, default 520);
# a failed or timed-out stage is reported and the next one still runs.
#
# Prebuilt: the lent device machines reach no network (no apt-get, so no
# scripts/deps.sh and no build there). scripts/gpu_bundle.sh builds with nvcc
# on a machine that has the packages and writes gpu-bundle/ (binaries in the
# build's layout, the shared libraries a bare CUDA image lacks, .prebuilt);
# carry it and run BUILD=gpu-bundle tests/gpu/run_all.sh: a BUILD holding
# .prebuilt skips the dependencies and the build and puts its lib/ on
# LD_LIBRARY_PATH.
#
# The second call, once the first has passed (GPU_RUN=costs): the GPU's cost
# table of boot-n16-dense, measured with the command of the CPU tables
# (`tessera --backend gpu bench costs ... --reps 3`, written to
# $OUT/gpu-boot-n16-dense.yaml: configs/costs/gpu-boot-n16-dense.yaml is
# where tesserad on a GPU looks for it, ts_sched_costs_shipped), the plans
# of the three policies under it, and the 16-position step priced by it
# beside its measured time (plan against measurement on the GPU).
#
# Usage: tests/gpu/run_all.sh            (from anywhere; fresh machine with a
#        network: needs nvcc on PATH and the Debian packages of
#        scripts/deps.sh, which this script runs first unless SKIP_DEPS=1)
#        GPU_RUN=costs tests/gpu/run_all.sh   (the second call, above)
# Exit status: 0 when every stage passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
root=$(pwd)
OUT=${OUT:-$root/gpu-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${BUILD:-build}
case ${GPU_RUN:-all} in
all | costs) ;;
*)
    echo "run_all.sh: GPU_RUN is all (default) or costs, not ${GPU_RUN}" >&2
    exit 2
    ;;
esac
BUDGET=${GPU_RUN_BUDGET:-520}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
summary=$OUT/summary.txt
t_start=$(date +%s)
failed=0
: >"$summary"

say() { echo "$*" | tee -a "$summary"; }
run_env=(env) # a prebuilt bundle's lib/ for the stages' commands only

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
    timeout --kill-after=10 "$limit" "${run_env[@]}" "$@" >"$log" 2>&1
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

# 1. dependencies and the CUDA build, or a prebuilt bundle (scripts/gpu_bundle.sh)
if [ -f "$BUILD/.prebuilt" ]; then
    case $BUILD in /*) blib=$BUILD/lib ;; *) blib=$root/$BUILD/lib ;; esac
    run_env=(env "LD_LIBRARY_PATH=$blib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    built=$(cat "$BUILD/.prebuilt")
    head=$(git rev-parse HEAD 2>/dev/null || echo unknown)
    say "prebuilt: $BUILD (commit ${built:0:12}; tree ${head:0:12})"
    [ "$built" = "$head" ] || say "WARNING: the bundle was built from another commit than this tree"
else
    if [ -z "${SKIP_DEPS:-}" ] && [ -x scripts/deps.sh ]; then
        stage deps 240 scripts/deps.sh
    fi
    if ! command -v nvcc >/dev/null 2>&1; then
        for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
            [ -x "$d/nvcc" ] && PATH=$d:$PATH && break
        done
    fi
    stage build 300 make -j"$JOBS" BUILD="$BUILD" all
fi
if [ -f "$BUILD/.config" ] && ! grep -q 'cuda=1' "$BUILD/.config"; then
    say "WARNING: $BUILD was configured without CUDA (nvcc missing?): GPU stages will skip"
    failed=1
fi
tests=$BUILD/tests/unit_tests
export TS_BUILD_DIR=$BUILD CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-300} CK_VERBOSITY=normal

# the second call: the GPU's cost table and its plans (header)
if [ "${GPU_RUN:-all}" = costs ]; then
    table=$OUT/gpu-boot-n16-dense.yaml
    stage gpu_costs 360 "$BUILD/tessera" --backend gpu bench costs --params boot-n16-dense \
        --slots 1024 --period-slots 64 --boot-slots 512,2048,4096,8192,16384,32768 --reps 3 \
        --out "$table" --json
    if [ -s "$table" ]; then
        stage plan_gpu_all 60 "$BUILD/tessera" plan --model models/aidreams260K.bin \
            --params boot-n16-dense --pos 15 --slots 1024 --policy all --costs "$table"
        stage bench_decode_128_costs 200 "$BUILD/tessera" --backend gpu bench decode \
            --params boot-n16-dense --policy ckks --context 16 --max-context 16 \
            --costs "$table" --json "$OUT/bench_decode_128_costs.json"
    fi
    {
        echo ""
        grep -E '^(ckks|hybrid|tfhe) |speedup' "$OUT/plan_gpu_all.log" 2>/dev/null
        grep -hE 'predicted|pos 15' "$OUT/bench_decode_128_costs.log" 2>/dev/null | head -5
        echo "total: $(($(date +%s) - t_start)) s; the table: $table"
    } | tee -a "$summary"
    exit $failed
fi

# 2. tests: probe, CPU-vs-GPU op suite
stage test_gpu_probe 60 env CK_RUN_SUITE=gpu "$tests"
stage test_gpu_ops 150 env CK_RUN_SUITE=gpu_ops "$tests"

# 3. the 128-bit decode step and bootstrap on the GPU (issue 10's target)
stage bench_decode_128 240 "$BUILD/tessera" --backend gpu bench decode --params boot-n16-dense \
    --policy ckks --context 16 --max-context 16 --json "$OUT/bench_decode_128.json"
stage bench_boot_128 120 "$BUILD/bench/bench_boot" --backend gpu --threads 1 --runs 3 \
    --case boot-n16-dense:11 --encap 32 --json "$OUT/bench_boot_128.json"

# 4. the suites whose code a GPU runs (tests/unit/test_devemu.c's list), on the GPU
for s in ring rlwe ckks_encoder ckks_eval ckks_lintrans ckks_serial serial encode_sparse boot \
    boot_encap convert convert_secure nonlinear_slots nonlinear_he net_aggregate llm_serve llm_enc \
    net_decode; do
    stage "test_${s}_on_gpu" 90 env TS_TEST_BACKEND=gpu CK_RUN_SUITE=$s "$tests"
done

# 5. micro-benchmarks on the GPU
stage bench_gpu 150 "$BUILD/bench/bench_gpu" --backend gpu --json "$OUT/bench_gpu.json"
stage bench_ckks_fhelium 120 "$BUILD/bench/bench_ckks" --backend gpu --suite fhelium \
    --json "$OUT/bench_ckks_fhelium.json"
stage bench_ckks_n16 150 "$BUILD/bench/bench_ckks" --backend gpu --suite none --large \
    --json "$OUT/bench_ckks_n16.json"

# 6. the same 128-bit decode step on this machine's CPU cores, last (what is
# left of the budget): the GPU's number beside the CPU's of the same machine
stage bench_decode_128_cpu 200 "$BUILD/tessera" --backend cpu bench decode --params boot-n16-dense \
    --policy ckks --context 16 --max-context 16 --json "$OUT/bench_decode_128_cpu.json"

# 7. headline numbers
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
    if [ -s "$OUT/bench_decode_128.json" ] || [ -s "$OUT/bench_boot_128.json" ]; then
        python3 - "$OUT/bench_decode_128.json" "$OUT/bench_boot_128.json" \
            "$OUT/bench_decode_128_cpu.json" <<'PY' || echo "  (could not parse)"
import json, sys
def walk(o):
    if isinstance(o, dict):
        yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
for path in sys.argv[1:]:
    try:
        d = json.load(open(path))
    except Exception as e:
        print(f"  {path}: {e}")
        continue
    for r in walk(d):
        if "latency_s_median" in r:
            print(f"  bootstrap {r.get('preset')} slots {r.get('slots')}: {r['latency_s_median']:.3f} s"
                  f" median, {r.get('precision_bits_mean')} bits, backend {r.get('backend')},"
                  f" {r.get('backend_calls')} backend calls, {r.get('upload_mib')} MiB up;"
                  f" phases (s) {r.get('phases_s_mean')}")
        for q in r.get("positions", []) if "model" in r else []:
            print(f"  decode ({path.rsplit('/', 1)[-1]}, backend {d.get('backend')}) {r['model']} {r.get('params')} {r.get('policy')} pos {q['pos']}:"
                  f" {q['ms']} ms, {q.get('bootstraps')} bootstraps, {q.get('precision_bits')} bits,"
                  f" argmax {q.get('argmax_enc')} (plaintext {q.get('argmax_plain')});"
                  f" {q.get('backend_calls')} backend calls, {q.get('upload_mib')} MiB up,"
                  f" {q.get('download_mib')} MiB down; stages {q.get('stages_ms')};"
                  f" bootstrap phases (ms) {q.get('bootstrap_phases_ms')}")
PY
    fi
    echo "total: $(($(date +%s) - t_start)) s; logs and JSON in $OUT"
} | tee -a "$summary"
exit $failed

#!/usr/bin/env bash
# Bootstrapping side by side: tessera (build/bench/bench_boot) and OpenFHE
# (tests/bench/openfhe_boot.py) on the same machine in one run, one JSON.
# Cases: N = 2^16, 2^15 slots (level budget 4/3, 6 levels left) and 2^7 slots;
# --quick: N = 2^12 insecure sets (test-boot-n12 and its OpenFHE match). Single-threaded figures
# use TS_THREADS=1 / OMP_NUM_THREADS=1; "all" uses every core.
# Usage: tests/bench/compare_boot.sh [BUILD_DIR] [--quick] [--json PATH]
#        (PYTHON: an interpreter with the openfhe wheel; default the pyenv 3.10)
set -uo pipefail
build=build
quick=0
json=bench-out/compare_boot.json
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --json) json=$2; shift ;;
        *) build=$1 ;;
    esac
    shift
done
py=${PYTHON:-/root/.pyenv/versions/3.10.13/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$(dirname "$json")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ncpu=$(nproc)
if [ $quick -eq 1 ]; then
    ours=(--case test-boot-n12:11:4:3 --case test-boot-n12:3:2:2 --runs 1)
    theirs=("--log-n 12 --log-slots 11 --insecure --runs 1" "--log-n 12 --log-slots 3 --level-budget 2 2 --insecure --runs 1")
else
    ours=(--case boot-n16-h192:15:4:3 --case boot-n16-h192:7:3:3 --runs 2)
    theirs=("--log-n 16 --log-slots 15 --runs 2" "--log-n 16 --log-slots 7 --level-budget 3 3 --runs 2")
fi
status=0
"$build/bench/bench_boot" "${ours[@]}" --json "$tmp/ours.json" || status=1
i=0
if "$py" -c "import openfhe" 2>/dev/null; then
    for args in "${theirs[@]}"; do
        for t in 1 "$ncpu"; do
            # shellcheck disable=SC2086
            OMP_NUM_THREADS=$t "$py" "$here/openfhe_boot.py" $args --json "$tmp/openfhe_$i.json" || status=1
            i=$((i + 1))
        done
    done
else
    echo "compare_boot: openfhe is not importable with $py; OpenFHE side skipped"
fi
{
    echo "{\"benchmark\": \"compare_boot\", \"tessera\": "
    cat "$tmp/ours.json" 2>/dev/null || echo null
    echo ", \"openfhe\": ["
    first=1
    for f in "$tmp"/openfhe_*.json; do
        [ -e "$f" ] || continue
        [ $first -eq 1 ] || echo ","
        cat "$f"
        first=0
    done
    echo "]}"
} >"$json"
echo "compare_boot: wrote $json"
exit $status

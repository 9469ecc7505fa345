#!/usr/bin/env bash
# make demo: run the most complete end-to-end path that exists, and say which.
# Usage: scripts/demo.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
model=models/aidreams260K.bin
tok=models/tok512.bin
say() { printf '\n== %s\n' "$*"; }
ran=()

if [ -x "$build/tessera" ] && "$build/tessera" run --help >/dev/null 2>&1; then
    say "plaintext reference generation on the bundled model (NOT encrypted)"
    "$build/tessera" run --model "$model" --tokenizer "$tok" --prompt "I dream of" --steps 45 || exit 1
    ran+=("plaintext reference decode")
fi
if [ -x "$build/bench/bench_ckks" ]; then
    say "CKKS engine: encrypted operations on the FHElium preset (quick run)"
    "$build/bench/bench_ckks" --quick --json "$build/demo_ckks.json" || exit 1
    ran+=("CKKS operations benchmark")
fi
if [ -x "$build/bench/bench_tfhe" ]; then
    say "TFHE engine: programmable bootstrapping (quick run)"
    "$build/bench/bench_tfhe" --quick --json "$build/demo_tfhe.json" || exit 1
    ran+=("TFHE PBS benchmark")
fi

say "demo summary"
if [ ${#ran[@]} -eq 0 ]; then
    echo "Only the foundation exists so far: no end-to-end path to run yet."
    echo "Encrypted decode is not implemented yet."
    exit 0
fi
for r in "${ran[@]}"; do echo "ran: $r"; done
echo "not yet: encrypted decode of the model (the ROSETTA pipeline is not built yet)"

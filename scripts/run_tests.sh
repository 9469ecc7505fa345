#!/usr/bin/env bash
# Run tessera's tests: one Check runner whose summary line ends the output.
# Usage: scripts/run_tests.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
export TS_BUILD_DIR=$build
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-600}
export CK_VERBOSITY=${CK_VERBOSITY:-normal}
exec "$build/tests/unit_tests"

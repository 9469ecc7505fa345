/*
 * CKKS bootstrapping benchmark (latency on one and on all threads, levels
 * left, precision): the code of `tessera bench boot` (client/bench_boot.c) as
 * a standalone benchmark for scripts/bench.sh and tests/bench/compare_boot.sh.
 *
 * Usage: bench_boot [--json PATH] [--quick] [--runs R] [--threads N]
 *                   [--case PRESET:LOG_SLOTS[:CTS:STC]]... [--help]
 */
#include "client/client.h"

int main(int argc, char **argv)
{
    ts_malloc_tune();
    return ts_bench_boot(argc, argv);
}

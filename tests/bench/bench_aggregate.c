/*
 * Encrypted weighted-average aggregation over the prime grid of seed 002: the
 * code of `tessera bench aggregate` (client/cmd_bench.c) as a standalone
 * benchmark for scripts/bench.sh.
 *
 * Usage: bench_aggregate [--json PATH] [--quick] [--sizes]
 */
#include "client/client.h"

int main(int argc, char **argv)
{
    ts_malloc_tune();
    return ts_bench_aggregate(argc, argv);
}

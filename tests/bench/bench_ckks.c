/*
 * CKKS benchmarks (FHElium suite with its matrix products, the seed-001 client
 * path, N = 2^16 operations with --large): the code of `tessera bench ckks`
 * (client/bench_ckks.c) as a standalone benchmark for scripts/bench.sh.
 *
 * Usage: bench_ckks [--json PATH] [--quick] [--threads N] [--suite S] [--large] [--help]
 */
#include "client/client.h"

int main(int argc, char **argv)
{
    ts_malloc_tune();
    return ts_bench_ckks(argc, argv);
}

/*
 * Encrypted decode benchmark: the code of `tessera bench decode`
 * (client/bench_decode.c) as a standalone benchmark for scripts/bench.sh.
 *
 * Usage: bench_decode [--json PATH] [--quick] [--aidreams-positions N] [--help]
 */
#include "client/client.h"

int main(int argc, char **argv)
{
    ts_malloc_tune();
    return ts_bench_decode(argc, argv);
}

/*
 * NTT benchmark: forward and inverse negacyclic NTT for N = 2^14 and 2^16
 * (and 2^12, 2^15 for context) with a 60-bit and a 50-bit prime, portable and
 * AVX2 kernels, single thread. Reports the median ns per call of several
 * timed rounds.
 *
 * Usage: bench_ntt [--json PATH] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/base.h"
#include "core/math/math.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* CPU time of the calling thread: meaningful on a loaded machine, where wall
 * time mostly measures the scheduler. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Median over `rounds` of the mean thread CPU time of `iters` calls. */
static double time_ntt(const ts_ntt_table_t *t, uint64_t *a, int inverse, ts_ntt_impl_t impl,
                       int rounds, int iters)
{
    uint64_t samples[64];
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = thread_cpu_ns();
        for (int i = 0; i < iters; i++) {
            if (inverse)
                ts_ntt_inverse_impl(t, a, impl);
            else
                ts_ntt_forward_impl(t, a, impl);
        }
        samples[r] = (thread_cpu_ns() - t0) / (uint64_t)iters;
    }
    qsort(samples, (size_t)rounds, sizeof samples[0], cmp_u64);
    return (double)samples[rounds / 2];
}

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--json PATH] [--quick]\n", argv[0]);
            return 2;
        }
    }
    FILE *out = json ? fopen(json, "w") : stdout;
    if (!out) {
        perror(json);
        return 1;
    }
    /* the table goes to stdout beside a --json file, else to stderr so that
     * stdout is the JSON report alone */
    FILE *tab = json ? stdout : stderr;
    const uint32_t logns[] = {12, 14, 15, 16};
    const uint32_t bits[] = {60, 50};
    const int rounds = quick ? 3 : 11;
    const bool avx2 = ts_cpu_has_avx2(), avx512 = ts_cpu_has_avx512();
    fprintf(out,
            "{\n  \"benchmark\": \"ntt\",\n  \"threads\": 1,\n  \"cpu_avx2\": %s,\n"
            "  \"cpu_avx512\": %s,\n",
            avx2 ? "true" : "false", avx512 ? "true" : "false");
    fprintf(out,
            "  \"unit\": \"thread CPU ns per call (median of %d rounds)\",\n  \"results\": [\n",
            rounds);
    fprintf(tab, "%-7s %-5s %-9s %-8s %12s\n", "N", "bits", "impl", "dir", "ns/call");
    int first = 1;
    for (size_t li = 0; li < sizeof logns / sizeof logns[0]; li++) {
        const uint32_t n = 1u << logns[li];
        for (size_t bi = 0; bi < 2; bi++) {
            uint64_t q;
            ts_ntt_table_t *t;
            if (ts_primes_ntt(bits[bi], 2ULL * n, 1, TS_PRIMES_DESCENDING, NULL, 0, &q) != TS_OK ||
                ts_ntt_table_new(n, q, &t) != TS_OK) {
                fprintf(stderr, "bench_ntt: setup failed\n");
                return 1;
            }
            uint64_t *a = ts_malloc(n * sizeof(uint64_t));
            for (uint32_t i = 0; i < n; i++)
                a[i] = (i * 0x9e3779b97f4a7c15ULL) % q;
            const int iters = (int)((quick ? 1u << 19 : 1u << 22) / n) + 1;
            for (int impl = TS_NTT_IMPL_PORTABLE; impl <= TS_NTT_IMPL_AVX512; impl++) {
                if ((impl == TS_NTT_IMPL_AVX2 && !avx2) || (impl == TS_NTT_IMPL_AVX512 && !avx512))
                    continue;
                for (int inv = 0; inv < 2; inv++) {
                    double ns = time_ntt(t, a, inv, (ts_ntt_impl_t)impl, rounds, iters);
                    const char *iname = impl == TS_NTT_IMPL_AVX512 ? "avx512"
                                        : impl == TS_NTT_IMPL_AVX2 ? "avx2"
                                                                   : "portable";
                    const char *dir = inv ? "inverse" : "forward";
                    fprintf(tab, "%-7u %-5u %-9s %-8s %12.0f\n", n, bits[bi], iname, dir, ns);
                    fprintf(out,
                            "%s    {\"n\": %u, \"prime_bits\": %u, \"impl\": \"%s\", "
                            "\"direction\": \"%s\", \"ns_per_call\": %.0f}",
                            first ? "" : ",\n", n, bits[bi], iname, dir, ns);
                    first = 0;
                }
            }
            ts_free(a);
            ts_ntt_table_free(t);
        }
    }
    fprintf(out, "\n  ]\n}\n");
    if (json)
        fclose(out);
    return 0;
}

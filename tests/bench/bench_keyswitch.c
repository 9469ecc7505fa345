/*
 * Key-switching benchmark (core/rlwe on the CPU backend): decompose + ModUp,
 * inner product and ModDown for one polynomial at the top level, single
 * thread and all threads, on the FHElium preset shape (N = 2^14, 7 x 40-bit +
 * one 60-bit Q primes, one 60-bit P prime, dnum = 8) and an N = 2^16 chain
 * (24 x 50-bit Q primes, 4 x 60-bit P primes, dnum = 6).
 *
 * Usage: bench_keyswitch [--json PATH] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rlwe/rlwe.h"

typedef struct {
    const char *name;
    uint32_t logn, nq, q_bits, np, dnum;
} shape_t;

/* CPU time of the whole process (all threads): meaningful on a loaded machine. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int run(const shape_t *sh, int threads, int rounds, FILE *out, int *first)
{
    const uint32_t n = 1u << sh->logn;
    uint64_t q[64], p[8];
    if (ts_primes_ntt(sh->q_bits, 2ULL * n, sh->nq - 1, TS_PRIMES_DESCENDING, NULL, 0, q) !=
            TS_OK ||
        ts_primes_ntt(60, 2ULL * n, sh->np + 1, TS_PRIMES_DESCENDING, NULL, 0, p) != TS_OK)
        return 1;
    q[sh->nq - 1] = p[sh->np]; /* one 60-bit prime in Q (the base prime) */
    ts_backend_t *be;
    if (ts_backend_cpu_new(threads, &be) != TS_OK)
        return 1;
    ts_ring_params_t prm = {
        .n = n, .q = q, .q_count = sh->nq, .p = p, .p_count = sh->np, .backend = be};
    ts_ring_t *r;
    ts_prng_t *prng;
    ts_rlwe_sk_t *sk;
    ts_rlwe_ksk_t *rk;
    ts_rlwe_ks_t *ks;
    ts_poly_t *c, *u0, *u1;
    if (ts_ring_new(&prm, &r) != TS_OK || ts_prng_new_os(&prng) != TS_OK ||
        ts_rlwe_sk_new(r, prng, 0, &sk) != TS_OK ||
        ts_rlwe_relin_key_new(sk, sh->dnum, prng, &rk) != TS_OK ||
        ts_rlwe_ks_new(r, sh->dnum, &ks) != TS_OK || ts_poly_new(r, sh->nq, 0, true, &c) != TS_OK ||
        ts_poly_new(r, sh->nq, 0, true, &u0) != TS_OK ||
        ts_poly_new(r, sh->nq, 0, true, &u1) != TS_OK || ts_poly_sample_uniform(c, prng) != TS_OK)
        return 1;
    uint64_t wall[64], cpu[64];
    ts_rlwe_keyswitch(ks, c, 1, rk, u0, u1); /* warm up */
    for (int i = 0; i < rounds; i++) {
        uint64_t t0 = ts_now_ns(), c0 = cpu_ns();
        if (ts_rlwe_keyswitch(ks, c, 1, rk, u0, u1) != TS_OK)
            return 1;
        wall[i] = ts_now_ns() - t0;
        cpu[i] = cpu_ns() - c0;
    }
    qsort(wall, (size_t)rounds, sizeof wall[0], cmp_u64);
    qsort(cpu, (size_t)rounds, sizeof cpu[0], cmp_u64);
    double us = (double)wall[rounds / 2] / 1e3, cpu_us = (double)cpu[rounds / 2] / 1e3;
    fprintf(stderr, "%-12s N=2^%u L+1=%u K=%u dnum=%u threads=%d: wall %.1f us, cpu %.1f us\n",
            sh->name, sh->logn, sh->nq, sh->np, sh->dnum, be->threads, us, cpu_us);
    fprintf(out,
            "%s    {\"shape\": \"%s\", \"n\": %u, \"q_count\": %u, \"p_count\": %u, \"dnum\": "
            "%u, \"threads\": %d, \"wall_us\": %.1f, \"cpu_us\": %.1f}",
            *first ? "" : ",\n", sh->name, n, sh->nq, sh->np, sh->dnum, be->threads, us, cpu_us);
    *first = 0;
    ts_poly_free(c);
    ts_poly_free(u0);
    ts_poly_free(u1);
    ts_rlwe_ks_free(ks);
    ts_rlwe_ksk_free(rk);
    ts_rlwe_sk_free(sk);
    ts_prng_free(prng);
    ts_ring_free(r);
    ts_backend_free(be);
    return 0;
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
    const shape_t shapes[] = {
        {"fhelium-n14", 14, 8, 40, 1, 8},
        {"boot-n16", 16, 24, 50, 4, 6},
    };
    fprintf(out, "{\n  \"benchmark\": \"keyswitch\",\n  \"results\": [\n");
    int first = 1, rc = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0] && rc == 0; s++) {
        if (quick && s > 0)
            break;
        rc |= run(&shapes[s], 1, quick ? 3 : 7, out, &first);
        if (ts_cpu_count() > 1)
            rc |= run(&shapes[s], 0, quick ? 3 : 7, out, &first);
    }
    fprintf(out, "\n  ]\n}\n");
    if (json)
        fclose(out);
    if (rc)
        fprintf(stderr, "bench_keyswitch: setup failed\n");
    return rc;
}

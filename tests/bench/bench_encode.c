/*
 * CKKS encoding benchmark: ts_ckks_encode_real (slot vector -> NTT-form
 * plaintext) at sparse and full slot counts, N = 2^16 and 13 Q limbs by
 * default (no keys: encoding only), one backend thread (TS_THREADS=1 unless
 * --threads). Reports the median process CPU time per encode over several
 * rounds (the dev machine is shared: CPU time, not wall time), and the same
 * for the plaintext's forward NTT alone (ts_poly_ntt of a dense polynomial,
 * the cost a sparse encode avoids).
 *
 * Usage: bench_encode [--json PATH] [--quick] [--log-n L] [--limbs K] [--threads T]
 *                     [--log-slots S]   (S: only that encode row)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/base.h"
#include "core/ckks/ckks.h"
#include "core/ring/ring.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t proc_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#define MAX_ROUNDS 64

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL;
    int quick = 0, log_n = 16, limbs = 13, threads = 1, only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--log-n") == 0 && i + 1 < argc)
            log_n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--limbs") == 0 && i + 1 < argc)
            limbs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--log-slots") == 0 && i + 1 < argc)
            only = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--json PATH] [--quick] [--log-n L] [--limbs K] [--threads T] "
                    "[--log-slots S]\n",
                    argv[0]);
            return 2;
        }
    }
    if (quick && log_n > 14)
        log_n = 14;
    if (log_n < 10 || log_n > 17 || limbs < 1 || limbs > 30 || threads < 1) {
        fprintf(stderr, "bench_encode: bad arguments\n");
        return 2;
    }
    /* the default backend reads TS_THREADS on first use */
    char tbuf[16];
    snprintf(tbuf, sizeof tbuf, "%d", threads);
    setenv("TS_THREADS", tbuf, 1);

    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof lit.name, "bench-encode-n%d", log_n);
    lit.log_n = log_n;
    lit.logq[0] = 60;
    for (int i = 1; i < limbs; i++)
        lit.logq[i] = 40;
    lit.logq_count = (size_t)limbs;
    lit.logp[0] = 61;
    lit.logp_count = 1;
    lit.scale_log2 = 40;
    lit.insecure = true;
    ts_ckks_params_t *params = NULL;
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_poly_t *dense = NULL;
    const int level = limbs - 1;
    const size_t n = (size_t)1 << log_n;
    double *vals = malloc(sizeof(double) * n / 2);
    if (!vals || ts_ckks_params_new(&lit, true, &params) != TS_OK ||
        ts_ckks_encoder_new(params, &enc) != TS_OK ||
        ts_ckks_plaintext_new(params, level, &pt) != TS_OK ||
        ts_poly_new(ts_ckks_params_ring(params), (uint32_t)limbs, 0, false, &dense) != TS_OK) {
        fprintf(stderr, "bench_encode: setup failed\n");
        return 1;
    }
    for (size_t i = 0; i < n / 2; i++)
        vals[i] = sin(0.37 * (double)i) * 0.9;
    const double scale = ldexp(1.0, 40);
    const int rounds = quick ? 5 : 21, iters = quick ? 2 : 5;

    FILE *out = json ? fopen(json, "w") : stdout;
    if (!out) {
        perror(json);
        return 1;
    }
    fprintf(out,
            "{\n  \"benchmark\": \"encode\",\n  \"log_n\": %d,\n  \"limbs\": %d,\n"
            "  \"threads\": %d,\n  \"machine\": \"dev-2c, AMD EPYC, 2 cores shared\",\n"
            "  \"unit\": \"process CPU us per call (median of %d rounds of %d)\",\n"
            "  \"results\": [\n",
            log_n, limbs, threads, rounds, iters);
    if (json)
        printf("%-10s %-8s %12s\n", "what", "slots", "us/call");
    const int log_slots[] = {9, 10, 11, 13, log_n - 1};
    int first = 1;
    uint64_t samples[MAX_ROUNDS];
    for (size_t k = 0; k <= sizeof log_slots / sizeof log_slots[0]; k++) {
        const bool ntt_only = k == sizeof log_slots / sizeof log_slots[0];
        const size_t slots = ntt_only ? n / 2 : (size_t)1 << log_slots[k];
        if (!ntt_only &&
            (log_slots[k] > log_n - 1 ||
             (k + 1 < sizeof log_slots / sizeof log_slots[0] && log_slots[k] == log_n - 1)))
            continue; /* out of range, or the full row listed twice */
        if (only && (ntt_only || log_slots[k] != only))
            continue;
        for (int r = 0; r < rounds; r++) {
            uint64_t t0 = proc_cpu_ns(), acc = 0;
            for (int i = 0; i < iters; i++) {
                ts_status_t st;
                if (ntt_only) {
                    ts_poly_reshape(dense, (uint32_t)limbs, 0, false);
                    t0 = proc_cpu_ns();
                    st = ts_poly_ntt(dense);
                    acc += proc_cpu_ns() - t0;
                } else {
                    st = ts_ckks_encode_real(enc, vals, slots, slots, level, scale, pt);
                }
                if (st != TS_OK) {
                    fprintf(stderr, "bench_encode: %s\n", ts_status_name(st));
                    return 1;
                }
            }
            samples[r] = (ntt_only ? acc : proc_cpu_ns() - t0) / (uint64_t)iters;
        }
        qsort(samples, (size_t)rounds, sizeof samples[0], cmp_u64);
        double us = (double)samples[rounds / 2] / 1e3;
        const char *what = ntt_only ? "ntt" : "encode";
        if (json)
            printf("%-10s %-8zu %12.1f\n", what, slots, us);
        fprintf(out, "%s    {\"what\": \"%s\", \"slots\": %zu, \"us_per_call\": %.1f}",
                first ? "" : ",\n", what, slots, us);
        first = 0;
    }
    fprintf(out, "\n  ]\n}\n");
    if (json)
        fclose(out);
    ts_poly_free(dense);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_params_free(params);
    free(vals);
    return 0;
}

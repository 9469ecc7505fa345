/*
 * TFHE benchmark: at the ROSETTA-size set (default tfhe_std128: n = 1024,
 * N_br = 2048, 53-bit Q) measures key generation, PBS latency (one thread),
 * PBS throughput (one evaluator per thread, all threads), multi-value PBS,
 * key switching and HomComp latency by precision, and prints the analytic
 * failure probabilities. Writes JSON.
 *
 * Usage: bench_tfhe [--json PATH] [--quick] [--preset NAME] [--threads T]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/base.h"
#include "core/tfhe/tfhe.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *ns, int n)
{
    qsort(ns, (size_t)n, sizeof ns[0], cmp_u64);
    return (double)ns[n / 2] / 1e6;
}

/* CPU time of the calling thread (ns): on a shared machine this is closer to
 * the cost of the work than the wall clock. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t f_square16(void *ctx, uint64_t m)
{
    (void)ctx;
    return (int64_t)((m * m) % 16);
}

static int64_t f_half16(void *ctx, uint64_t m)
{
    (void)ctx;
    return (int64_t)(m / 2);
}

typedef struct {
    const ts_tfhe_params_t *params;
    const ts_tfhe_evalkey_t *ek;
    const ts_tfhe_lut_t *lut;
    const ts_tfhe_lwe_t *in;
    int count;
    int failed;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    ts_tfhe_evaluator_t *ev = NULL;
    ts_tfhe_lwe_t *out = NULL;
    if (ts_tfhe_evaluator_new(w->params, w->ek, &ev) != TS_OK ||
        ts_tfhe_lwe_new(ts_tfhe_params_n_br(w->params), ts_tfhe_params_q_br(w->params), &out) !=
            TS_OK) {
        w->failed = 1;
        goto out;
    }
    for (int i = 0; i < w->count; i++)
        if (ts_tfhe_pbs(ev, out, w->in, w->lut) != TS_OK)
            w->failed = 1;
out:
    ts_tfhe_lwe_free(out);
    ts_tfhe_evaluator_free(ev);
    return NULL;
}

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        ts_status_t st_ = (expr);                                                                  \
        if (st_ != TS_OK) {                                                                        \
            fprintf(stderr, "%s: %s\n", #expr, ts_strerror(st_));                                  \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL, *preset = "tfhe_std128";
    int quick = 0, threads = ts_cpu_count();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--preset") == 0 && i + 1 < argc)
            preset = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--json PATH] [--quick] [--preset NAME] [--threads T]\n",
                    argv[0]);
            return 2;
        }
    }
    if (threads < 1)
        threads = 1;
    const int reps = quick ? 3 : 9;
    ts_tfhe_params_lit_t lit;
    ts_tfhe_params_t *params;
    CHECK(ts_tfhe_params_preset(preset, &lit));
    CHECK(ts_tfhe_params_new(&lit, &params));
    char desc[4096];
    ts_tfhe_params_describe(params, desc, sizeof desc);
    fputs(desc, stderr);
    const uint64_t Q = ts_tfhe_params_q_br(params);
    const uint32_t N = ts_tfhe_params_n_br(params);
    ts_prng_t *prng;
    CHECK(ts_prng_new_os(&prng));
    ts_tfhe_lwe_key_t *lwe_key, *big_key;
    ts_tfhe_rlwe_key_t *rlwe_key;
    ts_tfhe_evalkey_t *ek;
    CHECK(ts_tfhe_lwe_key_new(lit.lwe_n, lit.lwe_secret, prng, &lwe_key));
    CHECK(ts_tfhe_rlwe_key_new(params, prng, &rlwe_key));
    CHECK(ts_tfhe_rlwe_key_lwe(rlwe_key, &big_key));
    uint64_t t0 = ts_now_ns();
    CHECK(ts_tfhe_evalkey_new(params, lwe_key, rlwe_key, NULL, prng, &ek));
    double keygen_ms = (double)(ts_now_ns() - t0) / 1e6;
    uint8_t *ser = NULL;
    size_t ser_bytes = 0;
    CHECK(ts_tfhe_evalkey_serialize(ek, &ser, &ser_bytes));
    ts_free(ser);
    ts_tfhe_evaluator_t *ev;
    CHECK(ts_tfhe_evaluator_new(params, ek, &ev));
    const uint64_t p = 16, delta = ts_tfhe_delta(Q, p);
    ts_tfhe_lut_t *lut, *lut2;
    CHECK(ts_tfhe_lut_new(params, p, f_square16, NULL, delta, &lut));
    CHECK(ts_tfhe_lut_new(params, p, f_half16, NULL, delta, &lut2));
    ts_tfhe_lwe_t *in, *out, *out2, *small;
    CHECK(ts_tfhe_lwe_new(N, Q, &in));
    CHECK(ts_tfhe_lwe_new(N, Q, &out));
    CHECK(ts_tfhe_lwe_new(N, Q, &out2));
    CHECK(ts_tfhe_lwe_new(lit.lwe_n, ts_tfhe_params_q_lwe(params), &small));
    CHECK(ts_tfhe_lwe_encrypt(big_key, in, ts_tfhe_encode(Q, 7, p), lit.rlwe_sigma, prng));

    uint64_t ns[64], cpu[64];
    /* PBS, one thread */
    int wrong = 0;
    for (int i = 0; i < reps; i++) {
        t0 = ts_now_ns();
        uint64_t c0 = thread_cpu_ns();
        CHECK(ts_tfhe_pbs(ev, out, in, lut));
        cpu[i] = thread_cpu_ns() - c0;
        ns[i] = ts_now_ns() - t0;
        uint64_t ph;
        CHECK(ts_tfhe_lwe_phase(big_key, out, &ph));
        wrong += ts_tfhe_decode(Q, ph, p) != (7 * 7) % 16;
    }
    double pbs_ms = median_ms(ns, reps), pbs_cpu_ms = median_ms(cpu, reps);
    /* key switching alone */
    for (int i = 0; i < reps; i++) {
        t0 = ts_now_ns();
        CHECK(ts_tfhe_keyswitch_to_small(ev, small, in));
        ns[i] = ts_now_ns() - t0;
    }
    double ks_ms = median_ms(ns, reps);
    /* multi-value PBS: two LUTs from one blind rotation */
    ts_tfhe_lwe_t *outs[2] = {out, out2};
    const ts_tfhe_lut_t *luts[2] = {lut, lut2};
    for (int i = 0; i < reps; i++) {
        t0 = ts_now_ns();
        CHECK(ts_tfhe_pbs_multi(ev, outs, in, luts, 2));
        ns[i] = ts_now_ns() - t0;
    }
    double multi_ms = median_ms(ns, reps);
    /* throughput on all threads */
    int per_thread = quick ? 2 : 4;
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    worker_t *ws = calloc((size_t)threads, sizeof *ws);
    if (!tids || !ws)
        return 1;
    t0 = ts_now_ns();
    for (int t = 0; t < threads; t++) {
        ws[t] = (worker_t){params, ek, lut, in, per_thread, 0};
        pthread_create(&tids[t], NULL, worker, &ws[t]);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    double thr_s = (double)(ts_now_ns() - t0) / 1e9;
    double pbs_per_s = threads * per_thread / thr_s;
    /* HomComp by precision */
    uint32_t maxb = ts_tfhe_homcomp_max_bits(params);
    uint32_t hbits[4] = {4, 6, 8, maxb};
    double hc_ms[4] = {0};
    int hc_wrong = 0;
    for (int k = 0; k < 4; k++) {
        if (hbits[k] > maxb || hbits[k] == 0)
            continue;
        uint64_t top = 1ull << hbits[k];
        ts_tfhe_lwe_t *x;
        CHECK(ts_tfhe_lwe_new(N, Q, &x));
        int r = quick ? 1 : 3;
        for (int i = 0; i < r; i++) {
            uint64_t xv = (uint64_t)(i * 37 + 5) % top, tau = top / 2;
            CHECK(
                ts_tfhe_lwe_encrypt(big_key, x, ts_tfhe_encode(Q, xv, top), lit.rlwe_sigma, prng));
            t0 = ts_now_ns();
            CHECK(ts_tfhe_homcomp(ev, out, x, hbits[k], tau, ts_tfhe_delta(Q, 4)));
            ns[i] = ts_now_ns() - t0;
            uint64_t ph;
            CHECK(ts_tfhe_lwe_phase(big_key, out, &ph));
            hc_wrong += ts_tfhe_decode(Q, ph, 4) != (xv >= tau);
        }
        hc_ms[k] = median_ms(ns, r);
        ts_tfhe_lwe_free(x);
    }

    fprintf(stderr,
            "%s: keygen %.0f ms, evalkey %.1f MiB (%.1f MiB seeded), PBS %.2f ms (%.2f ms CPU), "
            "multi-value PBS "
            "(2 LUTs) %.2f ms, key switch %.3f ms, throughput %.1f PBS/s on %d threads, wrong %d\n",
            preset, keygen_ms, ts_tfhe_evalkey_bytes(ek) / 1048576.0, ser_bytes / 1048576.0, pbs_ms,
            pbs_cpu_ms, multi_ms, ks_ms, pbs_per_s, threads, wrong + hc_wrong);
    for (int k = 0; k < 4; k++)
        if (hc_ms[k] > 0)
            fprintf(stderr, "  HomComp %2u bits: %u PBS, %.1f ms\n", hbits[k],
                    ts_tfhe_homcomp_pbs_count(params, hbits[k]), hc_ms[k]);

    FILE *f = json ? fopen(json, "w") : stdout;
    if (!f) {
        perror(json);
        return 1;
    }
    fprintf(f, "{\n  \"benchmark\": \"tfhe\",\n  \"preset\": \"%s\",\n", preset);
    fprintf(f,
            "  \"params\": {\"lwe_n\": %u, \"lwe_logq\": %u, \"n_br\": %u, \"q_br\": %llu, "
            "\"br_log_base\": %u, \"br_levels\": %u, \"ks_log_base\": %u, \"ks_levels\": %u, "
            "\"lwe_secret\": \"%s\"},\n",
            lit.lwe_n, lit.lwe_logq, N, (unsigned long long)Q, lit.br_log_base, lit.br_levels,
            lit.ks_log_base, lit.ks_levels,
            lit.lwe_secret == TS_TFHE_SECRET_BINARY ? "binary" : "ternary");
    fprintf(f, "  \"machine\": {\"cpus\": %d},\n  \"threads\": %d,\n", ts_cpu_count(), threads);
    fprintf(f,
            "  \"keygen_ms\": %.2f,\n  \"evalkey_bytes\": %zu,\n  \"evalkey_seeded_bytes\": %zu,\n",
            keygen_ms, ts_tfhe_evalkey_bytes(ek), ser_bytes);
    fprintf(f, "  \"pbs_ms_single_thread\": %.3f,\n  \"pbs_cpu_ms_single_thread\": %.3f,\n", pbs_ms,
            pbs_cpu_ms);
    fprintf(f, "  \"pbs_multi2_ms\": %.3f,\n", multi_ms);
    fprintf(f, "  \"keyswitch_ms\": %.4f,\n  \"pbs_per_s_all_threads\": %.2f,\n", ks_ms, pbs_per_s);
    fprintf(f, "  \"homcomp\": [");
    int first = 1;
    for (int k = 0; k < 4; k++) {
        if (hc_ms[k] <= 0)
            continue;
        fprintf(f, "%s{\"bits\": %u, \"pbs\": %u, \"ms\": %.2f}", first ? "" : ", ", hbits[k],
                ts_tfhe_homcomp_pbs_count(params, hbits[k]), hc_ms[k]);
        first = 0;
    }
    fprintf(f, "],\n  \"log2_pfail\": {");
    first = 1;
    for (uint64_t pp = 2; pp <= 32; pp *= 2) {
        ts_tfhe_noise_t nz;
        ts_tfhe_noise_estimate(params, pp, &nz);
        fprintf(f, "%s\"p%llu\": %.1f", first ? "" : ", ", (unsigned long long)pp, nz.log2_pfail);
        first = 0;
    }
    fprintf(f, "},\n  \"decrypt_errors\": %d\n}\n", wrong + hc_wrong);
    if (json)
        fclose(f);
    free(tids);
    free(ws);
    ts_tfhe_lwe_free(in);
    ts_tfhe_lwe_free(out);
    ts_tfhe_lwe_free(out2);
    ts_tfhe_lwe_free(small);
    ts_tfhe_lut_free(lut);
    ts_tfhe_lut_free(lut2);
    ts_tfhe_evaluator_free(ev);
    ts_tfhe_evalkey_free(ek);
    ts_tfhe_lwe_key_free(lwe_key);
    ts_tfhe_lwe_key_free(big_key);
    ts_tfhe_rlwe_key_free(rlwe_key);
    ts_prng_free(prng);
    ts_tfhe_params_free(params);
    return (wrong + hc_wrong) ? 1 : 0;
}

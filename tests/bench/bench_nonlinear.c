/*
 * bench_nonlinear: the nonlinear primitives in the three modes of ROSETTA's
 * micro-benchmarks (Table 9: 1/x and 1/sqrt(x); Table 10: SiLU and GELU on
 * [-20, 20]): the hybrid segmented-LUT lookup (core/nonlinear lut_he), the
 * pure-CKKS path (Chebyshev / Goldschmidt / Newton) and the all-TFHE single
 * LUT (one PBS). Precision in bits = -log2 RMSE against the exact function
 * over a uniform grid of the range; latency = thread CPU time per element
 * (CKKS: per ciphertext of N/2 slots and per slot).
 *
 * INSECURE small parameters (N = 2^10 CKKS, N_br = 2^10, n = 256 TFHE): the
 * numbers show the shape of the comparison on our implementation, not the
 * paper's secure-parameter latencies. Softmax and the norms are not
 * benchmarked here yet.
 *
 * Usage: bench_nonlinear [--json PATH] [--quick]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long sysconf_cores(void)
{
    return sysconf(_SC_NPROCESSORS_ONLN);
}

#include "core/nonlinear/nonlinear.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c += 2;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, n, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        ts_status_t st_ = (x);                                                                     \
        if (st_ != TS_OK) {                                                                        \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #x, ts_status_name(st_));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double fexact(double x, void *ctx)
{
    return ts_nonlinear_exact((ts_nonlinear_fn_t)(intptr_t)ctx, x);
}

typedef struct {
    const char *table;
    ts_nonlinear_fn_t fn;
    double lo, hi, out_max;
    ts_nonlinear_bounds_t bounds;
    ts_nonlinear_spec_t ckks; /* the CKKS baseline */
} row_t;

typedef struct {
    double bits, sec;
} res_t;

static double to_bits(double se, int n)
{
    double rmse = sqrt(se / n);
    return rmse > 0 ? -log2(rmse) : 60;
}

int main(int argc, char **argv)
{
    const char *json = NULL;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
    }
    ts_log_set_level(TS_LOG_ERROR);
    /* CKKS: a chain of 40-bit levels over a 55-bit q0 (which is also the TFHE modulus) */
    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof(lit.name), "bench-nl-n10");
    lit.log_n = 10;
    lit.logq[0] = 55;
    for (int i = 1; i <= 16; i++)
        lit.logq[i] = 40;
    lit.logq_count = 17;
    lit.logp[0] = lit.logp[1] = lit.logp[2] = 56;
    lit.logp_count = 3;
    lit.scale_log2 = 40;
    lit.insecure = true;
    ts_ckks_params_t *p;
    CHECK(ts_ckks_params_new(&lit, true, &p));
    uint8_t seed[TS_SEED_BYTES] = {1, 2, 3};
    ts_prng_t *prng;
    CHECK(ts_prng_new_seeded(seed, 1, &prng));
    ts_ckks_secret_key_t *sk;
    CHECK(ts_ckks_keygen_secret(p, prng, &sk));
    ts_ckks_evalkeys_t *ek;
    CHECK(ts_ckks_evalkeys_new(p, &ek));
    CHECK(ts_ckks_evalkeys_gen_relin(ek, sk, prng));
    ts_ckks_evaluator_t *ev;
    CHECK(ts_ckks_evaluator_new(p, ek, &ev));
    ts_ckks_encoder_t *enc;
    CHECK(ts_ckks_encoder_new(p, &enc));
    ts_tfhe_params_lit_t tl;
    CHECK(ts_tfhe_params_preset("tfhe_test_small", &tl));
    tl.log_n_br = 10;
    tl.br_levels = 3;
    ts_convert_t *cv;
    CHECK(ts_convert_keygen(p, sk, &tl, prng, &cv));
    const ts_tfhe_params_t *tp = ts_convert_tfhe_params(cv);
    uint64_t Q = ts_convert_q(cv);
    uint32_t nbr = ts_convert_n_br(cv);

    const row_t rows[] = {
        {"table9",
         TS_NL_FN_RECIP,
         0.1,
         2.0,
         10.0,
         TS_NL_BOUNDS_LOG,
         {.method = TS_NL_ITER, .lo = 0.1, .hi = 2.0, .steps = 8}},
        {"table9",
         TS_NL_FN_RECIP,
         1.0,
         16.0,
         1.0,
         TS_NL_BOUNDS_LOG,
         {.method = TS_NL_ITER, .lo = 1.0, .hi = 16.0, .steps = 6}},
        {"table9",
         TS_NL_FN_RSQRT,
         0.1,
         2.0,
         3.2,
         TS_NL_BOUNDS_LOG,
         {.method = TS_NL_ITER, .lo = 0.1, .hi = 2.0, .degree = 4, .steps = 3}},
        {"table9",
         TS_NL_FN_RSQRT,
         1.0,
         16.0,
         1.0,
         TS_NL_BOUNDS_LOG,
         {.method = TS_NL_ITER, .lo = 1.0, .hi = 16.0, .degree = 4, .steps = 3}},
        {"table10",
         TS_NL_FN_SILU,
         -20.0,
         20.0,
         20.0,
         TS_NL_BOUNDS_UNIFORM,
         {.method = TS_NL_POLY, .lo = -20.0, .hi = 20.0, .degree = 59}},
        {"table10",
         TS_NL_FN_GELU,
         -20.0,
         20.0,
         20.0,
         TS_NL_BOUNDS_UNIFORM,
         {.method = TS_NL_POLY, .lo = -20.0, .hi = 20.0, .degree = 59}},
    };
    const size_t nrows = sizeof(rows) / sizeof(rows[0]);
    const int n_seg = 4, n_br = 16, k = 5, in_bits = 10, frac_bits = 20;
    const int pts = quick ? 4 : 24;
    res_t hy[6], ck[6], tf[6];
    size_t slots = ts_ckks_params_slots(p);
    printf("%-8s %-6s %-14s | %-22s | %-24s | %-22s\n", "table", "fn", "range",
           "hybrid LUT bits / ms", "CKKS bits / ms (ct, slot)", "TFHE 1-LUT bits / ms");
    for (size_t r = 0; r < nrows; r++) {
        const row_t *R = &rows[r];
        /* hybrid */
        ts_nonlinear_lut_t lut;
        CHECK(ts_nonlinear_lut_init(&lut, fexact, (void *)(intptr_t)R->fn, R->lo, R->hi, n_seg,
                                    n_br, R->bounds, k));
        ts_nonlinear_lut_he_t *he;
        CHECK(ts_nonlinear_lut_he_new(cv, &lut, in_bits, frac_bits, R->out_max, &he));
        ts_tfhe_rlwe_t *xin, *yout;
        CHECK(ts_tfhe_rlwe_new(tp, &xin));
        CHECK(ts_tfhe_rlwe_new(tp, &yout));
        uint64_t *ph = malloc((size_t)nbr * 8);
        double se = 0, t = 0;
        for (int i = 0; i < pts; i++) {
            double x = R->lo + (R->hi - R->lo) * (i + 0.5) / pts;
            CHECK(ts_nonlinear_lut_he_encrypt(he, ts_convert_rlwe_key(cv), x, prng, xin));
            double t0 = cpu_now();
            CHECK(ts_nonlinear_lut_he_eval(he, xin, yout, NULL, NULL));
            t += cpu_now() - t0;
            CHECK(ts_tfhe_rlwe_phase(ts_convert_rlwe_key(cv), yout, ph));
            double e = ts_nonlinear_lut_he_decode(he, ph[0]) - ts_nonlinear_exact(R->fn, x);
            se += e * e;
        }
        hy[r] = (res_t){to_bits(se, pts), t / pts};
        free(ph);
        ts_tfhe_rlwe_free(xin);
        ts_tfhe_rlwe_free(yout);
        ts_nonlinear_lut_he_free(he);
        ts_nonlinear_lut_clear(&lut);
        /* CKKS */
        ts_nonlinear_approx_t *a;
        CHECK(ts_nonlinear_approx_new(R->fn, &R->ckks, &a));
        double *xs = malloc(slots * sizeof(double)), *ys = malloc(slots * sizeof(double));
        for (size_t i = 0; i < slots; i++)
            xs[i] = R->lo + (R->hi - R->lo) * ((double)i + 0.5) / (double)slots;
        int L = ts_ckks_params_max_level(p);
        ts_ckks_ciphertext_t *ct;
        CHECK(ts_ckks_ciphertext_new(p, L, &ct));
        CHECK(ts_ckks_encrypt_sk_real(enc, sk, xs, slots, slots, L, ts_ckks_params_scale(p), prng,
                                      NULL, ct));
        double t0 = cpu_now();
        ts_status_t cst = ts_nonlinear_ckks_eval(ev, NULL, a, ct, ct);
        double tc = cpu_now() - t0;
        se = 0;
        if (cst == TS_OK) {
            ts_ckks_plaintext_t *pt;
            CHECK(ts_ckks_plaintext_new(p, L, &pt));
            CHECK(ts_ckks_decrypt(sk, ct, pt));
            CHECK(ts_ckks_decode_real(enc, pt, ys, slots));
            for (size_t i = 0; i < slots; i++) {
                double e = ys[i] - ts_nonlinear_exact(R->fn, xs[i]);
                se += e * e;
            }
            ts_ckks_plaintext_free(pt);
            ck[r] = (res_t){to_bits(se, (int)slots), tc};
        } else {
            ck[r] = (res_t){NAN, NAN};
        }
        ts_ckks_ciphertext_free(ct);
        ts_nonlinear_approx_free(a);
        /* TFHE single LUT, p = N_br / 32 */
        ts_nonlinear_pbs_t *pb;
        CHECK(ts_nonlinear_pbs_new(tp, R->fn, R->lo, R->hi, nbr / 32, R->out_max, &pb));
        ts_tfhe_lwe_t *li, *lo;
        CHECK(ts_tfhe_lwe_new(nbr, Q, &li));
        CHECK(ts_tfhe_lwe_new(nbr, Q, &lo));
        se = 0;
        t = 0;
        for (int i = 0; i < pts; i++) {
            double x = R->lo + (R->hi - R->lo) * (i + 0.5) / pts;
            CHECK(ts_nonlinear_pbs_encrypt(pb, ts_convert_lwe_key(cv), x, 3.2, prng, li));
            t0 = cpu_now();
            CHECK(ts_nonlinear_pbs_eval(pb, ts_convert_tfhe_evaluator(cv), li, lo));
            t += cpu_now() - t0;
            uint64_t phs;
            CHECK(ts_tfhe_lwe_phase(ts_convert_lwe_key(cv), lo, &phs));
            double e = ts_nonlinear_pbs_decode(pb, phs) - ts_nonlinear_exact(R->fn, x);
            se += e * e;
        }
        tf[r] = (res_t){to_bits(se, pts), t / pts};
        ts_tfhe_lwe_free(li);
        ts_tfhe_lwe_free(lo);
        ts_nonlinear_pbs_free(pb);
        free(xs);
        free(ys);
        char range[32];
        snprintf(range, sizeof(range), "[%g, %g]", R->lo, R->hi);
        printf("%-8s %-6s %-14s | %6.1f / %10.2f    | %6.1f / %8.1f, %7.3f | %6.1f / %8.2f\n",
               R->table, ts_nonlinear_fn_name(R->fn), range, hy[r].bits, 1e3 * hy[r].sec,
               ck[r].bits, 1e3 * ck[r].sec, 1e3 * ck[r].sec / (double)slots, tf[r].bits,
               1e3 * tf[r].sec);
        fflush(stdout);
    }
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        char cpu[256];
        cpu_model(cpu, sizeof(cpu));
        fprintf(f,
                "{\n  \"bench\": \"nonlinear\",\n  \"quick\": %s,\n  \"threads\": 1,\n"
                "  \"machine\": {\"cpu\": \"%s\", \"cores\": %ld},\n"
                "  \"params\": {\"ckks_log_n\": 10, \"ckks_levels\": 16, \"q0_bits\": 55, "
                "\"n_br\": %u, \"lwe_n\": %u, \"insecure\": true, \"lut_n_seg\": %d, "
                "\"lut_n_br\": %d, \"index_bits\": %d, \"in_bits\": %d, \"tfhe_lut_p\": %u, "
                "\"points\": %d, \"ckks_slots\": %zu},\n  \"rows\": [\n",
                quick ? "true" : "false", cpu, sysconf_cores(), nbr,
                ts_tfhe_params_literal(tp)->lwe_n, n_seg, n_br, k, in_bits, nbr / 32, pts, slots);
        for (size_t r = 0; r < nrows; r++) {
            const row_t *R = &rows[r];
            fprintf(f,
                    "    {\"table\": \"%s\", \"fn\": \"%s\", \"lo\": %g, \"hi\": %g, "
                    "\"hybrid\": {\"bits\": %.2f, \"ms\": %.3f}, "
                    "\"ckks\": {\"method\": \"%s\", \"degree\": %d, \"steps\": %d, \"bits\": %.2f, "
                    "\"ms_per_ct\": %.3f, \"ms_per_slot\": %.5f}, "
                    "\"tfhe_single_lut\": {\"bits\": %.2f, \"ms\": %.3f}}%s\n",
                    R->table, ts_nonlinear_fn_name(R->fn), R->lo, R->hi, hy[r].bits,
                    1e3 * hy[r].sec, ts_nonlinear_method_name(R->ckks.method), R->ckks.degree,
                    R->ckks.steps, isnan(ck[r].bits) ? -1.0 : ck[r].bits,
                    isnan(ck[r].sec) ? -1.0 : 1e3 * ck[r].sec,
                    isnan(ck[r].sec) ? -1.0 : 1e3 * ck[r].sec / (double)slots, tf[r].bits,
                    1e3 * tf[r].sec, r + 1 < nrows ? "," : "");
        }
        fprintf(f, "  ]\n}\n");
        fclose(f);
    }
    ts_convert_free(cv);
    ts_ckks_encoder_free(enc);
    ts_ckks_evaluator_free(ev);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
    return 0;
}

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
 * paper's secure-parameter latencies.
 *
 * Composite layers (Table 4: softmax, inputs from N(0, sigma) truncated to
 * [-M, M], sigma^2 = M^2 / 3; Table 5: M = 128; Table 6: RMSNorm and
 * LayerNorm with variances in [0.2, 150] and [1, 8192]) run on the insecure
 * test-boot-n12 preset (N = 2^12, 2048 slots) in the three modes of
 * ts_nonlinear_layer_* at REDUCED sizes (n, d <= 1024), each size recorded
 * in the JSON; --paper: the paper's sizes (softmax n in {128, 512, 2048},
 * M in {8, 16, 32} and 128; norms d in {768, 2048, 4096}) on test-boot-n13
 * (N = 2^13, 4096 slots), all three modes in one run (TFHE softmax only where
 * the n slots lie on the N_br = 2^10 subring, n <= 512). Precision = -log2
 * RMSE against the exact layer; latency = thread CPU time of one layer
 * evaluation. --quick: the primitives only, 2 points each (seconds).
 *
 * Usage: bench_nonlinear [--json PATH] [--quick] [--no-layers] [--paper] [--only tableN]
 * (--only: those layer rows, no primitives)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

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

/* ------------------------------------------------------------ layers */

typedef struct {
    const char *table, *kind_name;
    ts_nonlinear_layer_kind_t kind;
    size_t n;
    double M;      /* softmax: inputs in [-M, M] */
    double lo, hi; /* norms: variance range */
    double bits[3], sec[3];
    int status[3];           /* ts_status_t per mode; -1: not run (TFHE softmax off the subring) */
    double var;              /* norms: the drawn variance */
    double rel_bound;        /* CKKS inverse: the iteration's worst relative error */
    int lut_seg, in_bits;    /* hybrid LUT used */
    int ck_degree, ck_steps; /* CKKS inverse of round 0 */
} lrow_t;

static uint64_t rnd_u(ts_prng_t *prng, uint64_t b)
{
    uint64_t v = 0;
    CHECK(ts_prng_uniform(prng, b, &v));
    return v;
}

static double rnd_unit(ts_prng_t *prng)
{
    return ldexp((double)rnd_u(prng, 1ull << 40), -40);
}

/* N(0, sigma) truncated to [-M, M] by rejection (Box-Muller). */
static double rnd_trunc_normal(ts_prng_t *prng, double sigma, double M)
{
    for (;;) {
        double u1 = rnd_unit(prng), u2 = rnd_unit(prng);
        if (u1 <= 0)
            continue;
        double z = sigma * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        if (fabs(z) <= M)
            return z;
    }
}

static ts_nonlinear_spec_t lut_spec(double lo, double hi)
{
    return (ts_nonlinear_spec_t){.method = TS_NL_LUT,
                                 .lo = lo,
                                 .hi = hi,
                                 .n_seg = 8,
                                 .n_br = 16,
                                 .bounds = TS_NL_BOUNDS_LOG,
                                 .index_bits = 5};
}

/*
 * The CKKS 1/sqrt baseline on [lo, hi]: the scaled Newton (degree d
 * relative-minimax guess, s steps) with a worst-case bound <= 2^-20 that
 * costs the fewest levels (guess depth + 2 per step), d in {3, 7, 15, 31}.
 */
static ts_nonlinear_spec_t rsqrt_ckks_spec(double lo, double hi)
{
    ts_nonlinear_spec_t best = {0};
    int best_cost = 1 << 30;
    for (int d = 3; d <= 31; d = 2 * d + 1) {
        int depth = 2;
        while ((1 << (depth - 1)) <= d)
            depth++;
        for (int st = 1; st <= 8; st++) {
            ts_nonlinear_spec_t sp = {.method = TS_NL_ITER,
                                      .lo = lo,
                                      .hi = hi,
                                      .degree = d,
                                      .steps = st,
                                      .iter = TS_NL_ITER_SCALED};
            ts_nonlinear_approx_t *a = NULL;
            if (ts_nonlinear_approx_new(TS_NL_FN_RSQRT, &sp, &a) != TS_OK)
                continue;
            double b = ts_nonlinear_approx_rel_bound(a);
            ts_nonlinear_approx_free(a);
            if (b <= 0x1p-20) {
                if (depth + 2 * st < best_cost) {
                    best_cost = depth + 2 * st;
                    best = sp;
                }
                break;
            }
        }
    }
    return best;
}

static int goldschmidt_steps(double lo, double hi)
{
    /* (1 - 2 lo / (lo + hi))^(2^s) <= 2^-24 */
    double r = 1.0 - 2.0 * lo / (lo + hi);
    int s = 1;
    while (s < 30 && ldexp(1.0, s) * -log(r) < 24 * log(2.0))
        s++;
    return s;
}

/* does every slot j < n of a 2^log_slots-slot ciphertext lie on the N_br subring? */
static bool on_subring(const ts_ckks_params_t *p, const ts_convert_t *cv, size_t n)
{
    int log_n = 0, log_slots = 0;
    while ((1u << log_n) < ts_ckks_params_n(p))
        log_n++;
    while (((size_t)1 << log_slots) < ts_ckks_params_slots(p))
        log_slots++;
    for (size_t j = 0; j < n; j++)
        if (ts_convert_slot_coeff(log_n, log_slots, ts_convert_n_br(cv), j, false) < 0)
            return false;
    return true;
}

/*
 * Layer rows. Default: test-boot-n12 at REDUCED sizes; --paper: test-boot-n13
 * (4096 slots) at the paper's sizes (Table 4 n in {128, 512, 2048}, Table 6
 * d in {768, 2048, 4096}). The hybrid LUT is 8 x 16 LOG at in_bits 10 when
 * every segment is wider than the input grid's step; otherwise in_bits 11,
 * then fewer segments (recorded per row). TFHE softmax needs all n slots on
 * the N_br subring: rows beyond it are reported as not run (status -1).
 */
static void run_layers(int mode, const char *only, lrow_t *rows, size_t *nrows_out,
                       const char **preset_out, int *levels_out)
{
    const bool paper = mode == 2;
    const char *preset = paper ? "test-boot-n13" : "test-boot-n12";
    *preset_out = preset;
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/%s.yaml", root ? root : "", root ? "/" : "",
             preset);
    ts_ckks_params_t *p;
    ts_cfg_error_t err;
    CHECK(ts_ckks_params_load_file(path, true, &p, &err));
    uint8_t seed[TS_SEED_BYTES] = {8, 8, 1};
    ts_prng_t *prng;
    CHECK(ts_prng_new_seeded(seed, 5, &prng));
    ts_ckks_secret_key_t *sk;
    CHECK(ts_ckks_keygen_secret(p, prng, &sk));
    ts_ckks_encoder_t *enc;
    CHECK(ts_ckks_encoder_new(p, &enc));
    ts_ckks_evalkeys_t *ek;
    CHECK(ts_ckks_evalkeys_new(p, &ek));
    ts_boot_config_t cs, cb;
    CHECK(ts_boot_config_default(p, &cs));
    cs.order = TS_BOOT_STC_FIRST;
    cs.real_only = true;
    CHECK(ts_boot_config_default(p, &cb));
    CHECK(ts_boot_keygen(p, &cs, ek, sk, prng));
    CHECK(ts_boot_keygen(p, &cb, ek, sk, prng));
    ts_boot_t *bt_stc, *bt_boot;
    CHECK(ts_boot_new(p, &cs, &bt_stc));
    CHECK(ts_boot_new(p, &cb, &bt_boot));
    size_t slots = ts_ckks_params_slots(p);
    *levels_out = ts_boot_levels_left(bt_boot);
    size_t nr = 0;
    if (mode == 0) {
        const size_t ns[] = {64, 256};
        const double Ms[] = {8, 32};
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                rows[nr++] = (lrow_t){"table4", "softmax", TS_NL_LAYER_SOFTMAX,
                                      ns[i],    Ms[j],     0,
                                      0,        {0},       {0},
                                      {0},      0,         0,
                                      0,        0,         0,
                                      0};
        rows[nr++] = (lrow_t){
            "table5", "softmax", TS_NL_LAYER_SOFTMAX, 256, 128, 0, 0, {0}, {0}, {0}, 0, 0, 0, 0,
            0,        0};
    } else {
        const size_t ns[] = {128, 512, 2048};
        const double Ms[] = {8, 16, 32};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                rows[nr++] = (lrow_t){"table4", "softmax", TS_NL_LAYER_SOFTMAX,
                                      ns[i],    Ms[j],     0,
                                      0,        {0},       {0},
                                      {0},      0,         0,
                                      0,        0,         0,
                                      0};
        rows[nr++] = (lrow_t){
            "table5", "softmax", TS_NL_LAYER_SOFTMAX, 512, 128, 0, 0, {0}, {0}, {0}, 0, 0, 0, 0,
            0,        0};
    }
    {
        const size_t ds_red[] = {256, 1024}, ds_pap[] = {768, 2048, 4096};
        const size_t *ds = paper ? ds_pap : ds_red;
        const int nd = paper ? 3 : 2;
        const double rl[2][2] = {{0.2, 150}, {1, 8192}};
        for (int kd = 0; kd < 2; kd++)
            for (int i = 0; i < nd; i++)
                for (int j = 0; j < 2; j++)
                    rows[nr++] = (lrow_t){"table6",
                                          kd ? "layernorm" : "rmsnorm",
                                          kd ? TS_NL_LAYER_LAYERNORM : TS_NL_LAYER_RMSNORM,
                                          ds[i],
                                          0,
                                          rl[j][0],
                                          rl[j][1],
                                          {0},
                                          {0},
                                          {0},
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0};
    }
    if (only) { /* --only tableN: keep those rows */
        size_t w = 0;
        for (size_t r = 0; r < nr; r++)
            if (!strcmp(rows[r].table, only))
                rows[w++] = rows[r];
        nr = w;
    }
    /* rotations for every size */
    {
        int64_t steps[256];
        size_t count = 0;
        for (size_t r = 0; r < nr; r++) {
            ts_nonlinear_layer_spec_t sp = {.n = rows[r].n};
            int64_t st1[64];
            size_t c1 = 64;
            CHECK(ts_nonlinear_layer_rotation_steps(&sp, slots, st1, &c1));
            for (size_t i = 0; i < c1; i++) {
                bool have = false;
                for (size_t j = 0; j < count; j++)
                    have = have || steps[j] == st1[i];
                if (!have && count < 256)
                    steps[count++] = st1[i];
            }
        }
        CHECK(ts_ckks_evalkeys_gen_rotations(ek, sk, steps, count, prng));
    }
    ts_ckks_evaluator_t *ev;
    CHECK(ts_ckks_evaluator_new(p, ek, &ev));
    ts_tfhe_params_lit_t tl;
    CHECK(ts_tfhe_params_preset("tfhe_test_small", &tl));
    tl.log_n_br = 10;
    tl.br_levels = 3;
    ts_convert_t *cv;
    CHECK(ts_convert_keygen(p, sk, &tl, prng, &cv));

    double *v = calloc(slots, sizeof(double)), *out = calloc(slots, sizeof(double));
    double *exact = calloc(slots, sizeof(double));
    printf("\n%s (%zu slots, %d levels after a bootstrap)\n%-7s %-9s %5s %-12s | %-16s | %-16s | "
           "%-16s | LUT\n",
           preset, slots, *levels_out, "table", "layer", "n", "range", "hybrid bits / s",
           "CKKS bits / s", "TFHE bits / s");
    for (size_t r = 0; r < nr; r++) {
        lrow_t *R = &rows[r];
        const size_t n = R->n;
        bool sm = R->kind == TS_NL_LAYER_SOFTMAX;
        memset(v, 0, slots * sizeof(double));
        if (sm) {
            for (size_t i = 0; i < n; i++)
                v[i] = rnd_trunc_normal(prng, R->M / sqrt(3.0), R->M);
            ts_nonlinear_softmax_ref(v, n, exact);
        } else {
            /* a variance drawn log-uniformly in the range (inside it by a margin) */
            double lv = log(R->lo * 1.5) + (log(R->hi / 1.5) - log(R->lo * 1.5)) * rnd_unit(prng);
            double sd = sqrt(exp(lv) * 3.0), mean = 0, ms = 0;
            for (size_t i = 0; i < n; i++) {
                v[i] = sd * (2 * rnd_unit(prng) - 1) +
                       (R->kind == TS_NL_LAYER_LAYERNORM ? 0.5 * sd : 0.0);
                mean += v[i] / (double)n;
            }
            if (R->kind == TS_NL_LAYER_RMSNORM)
                mean = 0;
            for (size_t i = 0; i < n; i++)
                ms += (v[i] - mean) * (v[i] - mean) / (double)n;
            for (size_t i = 0; i < n; i++)
                exact[i] = (v[i] - mean) / sqrt(ms + 1e-5);
            R->var = ms;
        }
        int k = 0;
        while (sm && ldexp(1.0, k) < R->M)
            k++;
        double e2 = exp(2 * R->M / ldexp(1.0, k));
        ts_nonlinear_spec_t sexp = {.method = TS_NL_POLY, .lo = -1, .hi = 1, .degree = 8};
        ts_nonlinear_spec_t si_c =
            sm ? (ts_nonlinear_spec_t){.method = TS_NL_ITER,
                                       .lo = 1 / e2,
                                       .hi = e2,
                                       .steps = goldschmidt_steps(1 / e2, e2)}
               : rsqrt_ckks_spec(R->lo, R->hi);
        ts_nonlinear_spec_t si2_c = {.method = TS_NL_ITER,
                                     .lo = 1.0 / (double)n,
                                     .hi = 1.0,
                                     .steps = goldschmidt_steps(1.0 / (double)n, 1.0)};
        ts_nonlinear_fn_t ifn = sm ? TS_NL_FN_RECIP : TS_NL_FN_RSQRT;
        ts_nonlinear_approx_t *aexp = NULL, *inv_c = NULL, *inv2_c = NULL;
        CHECK(ts_nonlinear_approx_new(TS_NL_FN_EXP, &sexp, &aexp));
        CHECK(ts_nonlinear_approx_new(ifn, &si_c, &inv_c));
        CHECK(ts_nonlinear_approx_new(TS_NL_FN_RECIP, &si2_c, &inv2_c));
        R->rel_bound = ts_nonlinear_approx_rel_bound(inv_c);
        R->ck_degree = si_c.degree;
        R->ck_steps = si_c.steps;
        R->lut_seg = 0;
        R->in_bits = 0;
        for (int m = 0; m < 3; m++) {
            ts_nonlinear_layer_spec_t sp = {.kind = R->kind,
                                            .mode = (ts_nonlinear_layer_mode_t)m,
                                            .n = n,
                                            .k = k,
                                            .eps = 1e-5,
                                            .exp_a = aexp};
            ts_nonlinear_slots_cfg_default(
                sp.mode == TS_NL_LAYER_TFHE ? TS_NL_SLOTS_TFHE : TS_NL_SLOTS_HYBRID, &sp.slots_cfg);
            R->bits[m] = NAN;
            R->sec[m] = NAN;
            ts_nonlinear_layer_t *ly = NULL;
            ts_nonlinear_approx_t *inv_l = NULL, *inv2_l = NULL;
            ts_status_t st = TS_OK;
            if (sp.mode == TS_NL_LAYER_CKKS) {
                sp.inv_a = inv_c;
                sp.inv2_a = inv2_c;
                st = ts_nonlinear_layer_new(p, &sp, cv, bt_stc, bt_boot, &ly);
            } else if (sp.mode == TS_NL_LAYER_TFHE && sm && !on_subring(p, cv, n)) {
                st = TS_ERANGE; /* exp per element: the n slots are not all on the subring */
                R->status[m] = -1;
            } else {
                /* the finest valid LUT: 8 LOG segments at in_bits 10, then 11, then fewer */
                st = TS_ERANGE;
                for (int seg = 8; seg >= 3 && st == TS_ERANGE; seg--) {
                    for (int ib = 10; ib <= 11 && st == TS_ERANGE; ib++) {
                        ts_nonlinear_spec_t si_l =
                            sm ? lut_spec(1 / e2, e2) : lut_spec(R->lo, R->hi);
                        ts_nonlinear_spec_t si2_l = lut_spec(1.0 / (double)n, 1.0);
                        si_l.n_seg = si2_l.n_seg = seg;
                        ts_nonlinear_approx_free(inv_l);
                        ts_nonlinear_approx_free(inv2_l);
                        inv_l = inv2_l = NULL;
                        CHECK(ts_nonlinear_approx_new(ifn, &si_l, &inv_l));
                        CHECK(ts_nonlinear_approx_new(TS_NL_FN_RECIP, &si2_l, &inv2_l));
                        sp.inv_a = inv_l;
                        sp.inv2_a = inv2_l;
                        if (sp.mode == TS_NL_LAYER_HYBRID)
                            sp.slots_cfg.in_bits = ib;
                        st = ts_nonlinear_layer_new(p, &sp, cv, bt_stc, bt_boot, &ly);
                        if (st == TS_OK && sp.mode == TS_NL_LAYER_HYBRID) {
                            R->lut_seg = seg;
                            R->in_bits = ib;
                        }
                        if (sp.mode == TS_NL_LAYER_TFHE)
                            break; /* the PBS baseline has no segments */
                    }
                    if (sp.mode == TS_NL_LAYER_TFHE)
                        break;
                }
            }
            int L = ts_boot_levels_left(bt_boot);
            ts_ckks_ciphertext_t *ct = NULL;
            CHECK(ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &ct));
            CHECK(ts_ckks_encrypt_sk_real(enc, sk, v, slots, slots, L, ts_ckks_params_scale(p),
                                          prng, NULL, ct));
            double t0 = cpu_now();
            if (st == TS_OK)
                st = ts_nonlinear_layer_eval(ly, ev, ct, ct);
            double t = cpu_now() - t0;
            if (R->status[m] != -1)
                R->status[m] = (int)st;
            if (st == TS_OK) {
                ts_ckks_plaintext_t *pt;
                CHECK(ts_ckks_plaintext_new(p, ts_ckks_ciphertext_level(ct), &pt));
                CHECK(ts_ckks_decrypt(sk, ct, pt));
                CHECK(ts_ckks_decode_real(enc, pt, out, slots));
                double se = 0;
                for (size_t i = 0; i < n; i++)
                    se += (out[i] - exact[i]) * (out[i] - exact[i]);
                R->bits[m] = to_bits(se, (int)n);
                R->sec[m] = t;
                ts_ckks_plaintext_free(pt);
            }
            ts_ckks_ciphertext_free(ct);
            ts_nonlinear_layer_free(ly);
            ts_nonlinear_approx_free(inv_l);
            ts_nonlinear_approx_free(inv2_l);
        }
        char range[32];
        if (sm)
            snprintf(range, sizeof(range), "[-%g, %g]", R->M, R->M);
        else
            snprintf(range, sizeof(range), "[%g, %g]", R->lo, R->hi);
        printf("%-7s %-9s %5zu %-12s | %6.1f / %7.2f | %6.1f / %7.2f | %6.1f / %7.2f | %d x 16, "
               "in_bits %d",
               R->table, R->kind_name, n, range, R->bits[0], R->sec[0], R->bits[1], R->sec[1],
               R->bits[2], R->sec[2], R->lut_seg, R->in_bits);
        if (!sm)
            printf(", var %.4g, CKKS deg %d x %d steps (bound 2^%.1f)", R->var, R->ck_degree,
                   R->ck_steps, log2(R->rel_bound));
        if (R->status[2] == -1)
            printf(", TFHE: n > subring");
        printf("\n");
        fflush(stdout);
        ts_nonlinear_approx_free(aexp);
        ts_nonlinear_approx_free(inv_c);
        ts_nonlinear_approx_free(inv2_c);
    }
    free(v);
    free(out);
    free(exact);
    ts_convert_free(cv);
    ts_ckks_evaluator_free(ev);
    ts_boot_free(bt_stc);
    ts_boot_free(bt_boot);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_encoder_free(enc);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
    *nrows_out = nr;
}

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL;
    bool quick = false, layers = true, paper = false, prims = true;
    const char *only = NULL; /* --only table4|table5|table6: those layer rows, no primitives */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--no-layers"))
            layers = false;
        else if (!strcmp(argv[i], "--paper"))
            paper = true;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
    }
    if (quick && !paper)
        layers = false; /* --quick: the primitives on 2 points each (seconds) */
    if (only)
        prims = false;
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
    const size_t nrows = prims ? sizeof(rows) / sizeof(rows[0]) : 0;
    const int n_seg = 4, n_br = 16, k = 5, in_bits = 10, frac_bits = 20;
    const int pts = quick ? 2 : 24;
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
    lrow_t lrows[40];
    size_t nl = 0;
    const char *preset = "";
    int boot_levels = 0;
    if (layers)
        run_layers(paper ? 2 : 0, only, lrows, &nl, &preset, &boot_levels);
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
        fprintf(f,
                "  ],\n  \"layers_params\": {\"preset\": \"%s\", \"paper_sizes\": %s, "
                "\"levels_after_bootstrap\": %d, \"n_br\": 1024, \"insecure\": true, "
                "\"lut\": \"LOG x 16, index_bits 5 (segments and in_bits per row)\", "
                "\"tfhe_lut_p\": 32, \"exp\": \"Chebyshev deg 8 on [-1, 1]\", "
                "\"rsqrt_ckks\": \"scaled Newton, degree-15 relative-minimax guess, 4 steps\"},"
                "\n  \"layers\": [\n",
                preset, paper ? "true" : "false", boot_levels);
        for (size_t r = 0; r < nl; r++) {
            const lrow_t *R = &lrows[r];
            fprintf(f, "    {\"table\": \"%s\", \"layer\": \"%s\", \"n\": %zu, ", R->table,
                    R->kind_name, R->n);
            if (R->kind == TS_NL_LAYER_SOFTMAX)
                fprintf(f, "\"M\": %g, ", R->M);
            else
                fprintf(f, "\"var_lo\": %g, \"var_hi\": %g, \"var\": %.6g, ", R->lo, R->hi, R->var);
            fprintf(
                f,
                "\"lut_seg\": %d, \"in_bits\": %d, \"ckks_inv\": {\"degree\": %d, \"steps\": %d, "
                "\"rel_bound\": %.3g}, ",
                R->lut_seg, R->in_bits, R->ck_degree, R->ck_steps, R->rel_bound);
            const char *mn[3] = {"hybrid", "ckks", "tfhe"};
            for (int m = 0; m < 3; m++)
                fprintf(f, "\"%s\": {\"bits\": %.2f, \"s\": %.3f, \"status\": %d}%s", mn[m],
                        isnan(R->bits[m]) ? -1.0 : R->bits[m], isnan(R->sec[m]) ? -1.0 : R->sec[m],
                        R->status[m], m < 2 ? ", " : "");
            fprintf(f, "}%s\n", r + 1 < nl ? "," : "");
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

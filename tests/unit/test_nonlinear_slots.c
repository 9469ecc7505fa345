/*
 * Look-ups on CKKS slot values end to end (ts_nonlinear_slots_*): a CKKS
 * ciphertext with x at a few slots (junk elsewhere) goes through the
 * pre-scale, SlotToCoeff, RingSwitch, the encrypted lookup (HYBRID: the
 * three-step segmented LUT; TFHE: one PBS), repacking and ModRecover; the
 * decrypted slots must equal the cleartext reference of the same lookup
 * (ts_nonlinear_slots_ref: the LUT, or the PBS baseline's midpoint value) at
 * the same grid input within a stated bound, and every other slot must be 0.
 * The bound: out_max 2^-16 (the TFHE output noise at 2^-ratio_bits of q0;
 * the sine is pre-compensated, see nonlinear.h); the measured errors are
 * printed. HYBRID: when the interval position is within 4 sigma of the
 * TFHE noise from a rounding threshold, the line of a neighbouring interval
 * is accepted too (counted), as in test_nonlinear_he.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/nonlinear/nonlinear.h"
#include "core/nonlinear/nonlinear_int.h"
#include "tests/unit/ts_test.h"

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_encoder_t *enc;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_evaluator_t *ev;
    ts_boot_t *bt;
    ts_convert_t *cv;
    size_t n; /* slots */
} sfx_t;

static void sfx_init(sfx_t *f, const char *name, uint32_t log_n_br)
{
    memset(f, 0, sizeof(*f));
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/%s.yaml", root ? root : "", root ? "/" : "",
             name);
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &f->p, &err));
    ts_log_set_level(lv);
    uint8_t seed[TS_SEED_BYTES] = {9, 9, 4, 2};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 17, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ts_boot_config_t cfg;
    ck_assert_ts_ok(ts_boot_config_default(f->p, &cfg));
    cfg.order = TS_BOOT_STC_FIRST;
    cfg.real_only = true;
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_boot_keygen(f->p, &cfg, f->ek, f->sk, f->prng));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f->p, f->ek, &f->ev));
    ck_assert_ts_ok(ts_boot_new(f->p, &cfg, &f->bt));
    f->n = (size_t)1 << ts_boot_config(f->bt)->log_slots;
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    lit.log_n_br = log_n_br;
    lit.br_levels = 3;
    ck_assert_ts_ok(ts_convert_keygen(f->p, f->sk, &lit, f->prng, &f->cv));
}

static void sfx_clear(sfx_t *f)
{
    ts_convert_free(f->cv);
    ts_boot_free(f->bt);
    ts_ckks_evaluator_free(f->ev);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_encoder_free(f->enc);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

static uint64_t rnd(sfx_t *f, uint64_t bound)
{
    uint64_t v;
    ck_assert_ts_ok(ts_prng_uniform(f->prng, bound, &v));
    return v;
}

/*
 * |y - ref|, or, when x's rounded interval position V = t 2^k + 2^(k-1) is
 * within 4 sigma of a rounding threshold (sigma: the TFHE noise of V after
 * the ModSwitch to 2 N_br, ts_tfhe_noise_estimate, in units of V's boxes of
 * N_br / 2^(k+1)), the smallest distance to the line of a neighbouring
 * interval of the same segment (*neighbour counts those picks).
 */
static double lut_err(const ts_nonlinear_lut_t *lut, double sigma_v, double x, double y, double ref,
                      double tol, int *neighbour)
{
    double err = fabs(y - ref);
    if (!lut || err < tol)
        return err;
    int s = ts_nonlinear_lut_segment(lut, x);
    double w = lut->bounds[s + 1] - lut->bounds[s];
    double v = (x - lut->bounds[s]) / w * ldexp(1.0, lut->index_bits);
    double fr = v - floor(v);
    if (fabs(fr - 0.5) < 4 * sigma_v) {
        int i = ts_nonlinear_lut_interval(lut, s, x);
        for (int d = -1; d <= 1; d += 2) {
            int i2 = i + d;
            if (i2 < 0 || i2 >= lut->n_br)
                continue;
            size_t e = (size_t)s * lut->n_br + (size_t)i2;
            double e2 = fabs(y - (lut->slope[e] * x + lut->offset[e]));
            if (e2 < err) {
                err = e2;
                if (e2 < tol)
                    (*neighbour)++;
            }
        }
    }
    return err;
}

typedef struct {
    double max_err;   /* |enc - cleartext reference| at the chosen slots */
    double max_other; /* |enc| at the other slots */
    double max_exact; /* |enc - f(x)| */
    double out_max;
    int neighbour; /* HYBRID: neighbouring-interval picks near a rounding threshold */
} slots_result_t;

/*
 * A fresh ciphertext at the top level with x[i] at slots[i] (on the grid of
 * ns, random when xs == NULL) and junk in range elsewhere.
 */
static ts_ckks_ciphertext_t *encrypt_case(sfx_t *f, const ts_nonlinear_spec_t *spec,
                                          const ts_nonlinear_slots_t *ns,
                                          const ts_nonlinear_slots_cfg_t *cfg, const size_t *slots,
                                          size_t count, const double *xs, double *x)
{
    double *v = calloc(f->n, sizeof(double));
    for (size_t j = 0; j < f->n; j++)
        v[j] = spec->lo + (spec->hi - spec->lo) * (double)rnd(f, 1000) / 1000.0;
    uint64_t top = 1ull << cfg->in_bits;
    for (size_t i = 0; i < count; i++) {
        x[i] = xs ? xs[i] : ts_nonlinear_slots_grid(ns, (double)rnd(f, top));
        v[slots[i]] = x[i];
    }
    int L = ts_ckks_params_max_level(f->p);
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, L, &ct));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f->enc, f->sk, v, f->n, f->n, L,
                                            ts_ckks_params_scale(f->p), f->prng, NULL, ct));
    free(v);
    return ct;
}

/*
 * ct (the output of ns at want_level for inputs x at slots) decrypted: each
 * chosen slot within the bound of the cleartext reference, 0 elsewhere.
 */
static void check_case(sfx_t *f, ts_nonlinear_fn_t fn, const ts_nonlinear_spec_t *spec,
                       ts_nonlinear_slots_mode_t mode, const ts_nonlinear_approx_t *a,
                       const ts_nonlinear_slots_t *ns, const size_t *slots, size_t count,
                       const double *x, ts_ckks_ciphertext_t *ct, int want_level,
                       slots_result_t *res)
{
    double *out = calloc(f->n, sizeof(double));
    ck_assert_int_eq(ts_ckks_ciphertext_level(ct), want_level);
    ck_assert_double_eq(ts_ckks_ciphertext_scale(ct), ts_ckks_params_scale(f->p));
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, want_level, &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, ct, pt));
    ck_assert_ts_ok(ts_ckks_decode_real(f->enc, pt, out, f->n));
    const ts_nonlinear_lut_t *lut = mode == TS_NL_SLOTS_HYBRID ? ts_nonlinear_approx_lut(a) : NULL;
    memset(res, 0, sizeof(*res));
    res->out_max = ts_nonlinear_slots_out_max(ns);
    const double tol = res->out_max * ldexp(1.0, -16);
    double sigma_v = 0;
    if (lut) {
        ts_tfhe_noise_t nz;
        uint64_t p3 = 2ull << lut->index_bits;
        ck_assert_ts_ok(ts_tfhe_noise_estimate(ts_convert_tfhe_params(f->cv), p3, &nz));
        sigma_v = sqrt(nz.var_total_2n) / (double)(ts_convert_n_br(f->cv) / p3);
    }
    for (size_t j = 0; j < f->n; j++) {
        size_t i = 0;
        while (i < count && slots[i] != j)
            i++;
        if (i == count) {
            res->max_other = fmax(res->max_other, fabs(out[j]));
            continue;
        }
        double ref = ts_nonlinear_slots_ref(ns, x[i]);
        double err = lut_err(lut, sigma_v, x[i], out[j], ref, tol, &res->neighbour);
        res->max_err = fmax(res->max_err, err);
        res->max_exact = fmax(res->max_exact, fabs(out[j] - ts_nonlinear_exact(fn, x[i])));
        ck_assert_msg(err < tol,
                      "%s %s slot %zu x=%.9g: enc %.9g, cleartext %.9g (err %.3g > %.3g)",
                      ts_nonlinear_fn_name(fn), ts_nonlinear_slots_mode_name(mode), j, x[i], out[j],
                      ref, err, tol);
    }
    ck_assert_msg(res->max_other < tol, "%s %s: other slots up to %.3g (> %.3g)",
                  ts_nonlinear_fn_name(fn), ts_nonlinear_slots_mode_name(mode), res->max_other,
                  tol);
    fprintf(stderr,
            "nonlinear_slots %s %s [%g, %g] %zu slots -> level %d: max |enc - cleartext| %.3g "
            "(2^%.1f of out_max %.3g), neighbour picks %d, other slots %.3g, max |enc - exact| "
            "%.3g\n",
            ts_nonlinear_slots_mode_name(mode), ts_nonlinear_fn_name(fn), spec->lo, spec->hi, count,
            want_level, res->max_err, log2(res->max_err / res->out_max), res->out_max,
            res->neighbour, res->max_other, res->max_exact);
    ts_ckks_plaintext_free(pt);
    free(out);
}

/*
 * f at `count` slots of a fresh ciphertext at the top level through `mode`,
 * inputs on the grid (random when xs == NULL); checks the bound.
 */
static void run_case(sfx_t *f, ts_nonlinear_fn_t fn, const ts_nonlinear_spec_t *spec,
                     ts_nonlinear_slots_mode_t mode, const size_t *slots, size_t count,
                     const double *xs, int level, slots_result_t *res)
{
    ts_nonlinear_approx_t *a;
    ck_assert_ts_ok(ts_nonlinear_approx_new(fn, spec, &a));
    ts_nonlinear_slots_cfg_t cfg;
    ts_nonlinear_slots_cfg_default(mode, &cfg);
    ts_nonlinear_slots_t *ns;
    ck_assert_ts_ok(ts_nonlinear_slots_new(f->cv, f->bt, a, &cfg, &ns));
    double *x = calloc(count, sizeof(double));
    ts_ckks_ciphertext_t *ct = encrypt_case(f, spec, ns, &cfg, slots, count, xs, x);
    ck_assert_ts_ok(ts_nonlinear_slots_eval(ns, f->ev, ct, slots, count, level, ct));
    int want_level = level < 0 ? ts_nonlinear_slots_max_level(ns) : level;
    check_case(f, fn, spec, mode, a, ns, slots, count, x, ct, want_level, res);
    ts_ckks_ciphertext_free(ct);
    free(x);
    ts_nonlinear_slots_free(ns);
    ts_nonlinear_approx_free(a);
}

static ts_nonlinear_spec_t lut_spec(double lo, double hi, ts_nonlinear_bounds_t b)
{
    return (ts_nonlinear_spec_t){.method = TS_NL_LUT,
                                 .lo = lo,
                                 .hi = hi,
                                 .n_seg = 4,
                                 .n_br = 16,
                                 .bounds = b,
                                 .index_bits = 5};
}

static void random_slots(sfx_t *f, size_t *slots, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        bool dup;
        do {
            slots[i] = (size_t)rnd(f, f->n);
            dup = false;
            for (size_t j = 0; j < i; j++)
                dup |= slots[j] == slots[i];
        } while (dup);
    }
}

/* 1/x, 1/sqrt(x), exp, SiLU at random slots, both modes (N = 2^10, N_br = 2^10). */
START_TEST(test_nonlinear_slots_fns)
{
    sfx_t f;
    sfx_init(&f, "test-boot-n10", 10);
    const struct {
        ts_nonlinear_fn_t fn;
        double lo, hi;
        ts_nonlinear_bounds_t b;
    } cases[] = {
        {TS_NL_FN_RECIP, 0.25, 8.0, TS_NL_BOUNDS_LOG},
        {TS_NL_FN_RSQRT, 0.25, 16.0, TS_NL_BOUNDS_LOG},
        {TS_NL_FN_EXP, -8.0, 0.0, TS_NL_BOUNDS_UNIFORM},
        {TS_NL_FN_SILU, -8.0, 8.0, TS_NL_BOUNDS_UNIFORM},
    };
    const size_t count = ts_test_quick() ? 2 : 4;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ts_nonlinear_spec_t sp = lut_spec(cases[c].lo, cases[c].hi, cases[c].b);
        for (int m = 0; m < 2; m++) {
            size_t slots[4];
            random_slots(&f, slots, count);
            slots_result_t r;
            run_case(&f, cases[c].fn, &sp, (ts_nonlinear_slots_mode_t)m, slots, count, NULL, -1,
                     &r);
        }
    }
    sfx_clear(&f);
}
END_TEST

/* The words of ct's polynomials in order (form, limbs and N words each), with
 * the level and scale in front; *len words, malloc'd. */
static uint64_t *ct_words(ts_ckks_ciphertext_t *ct, size_t *len)
{
    int deg = ts_ckks_ciphertext_degree(ct);
    size_t n = ts_ckks_params_n(ts_ckks_ciphertext_params(ct)), total = 3;
    for (int i = 0; i <= deg; i++) {
        ts_poly_t *p = ts_ckks_ciphertext_poly(ct, i);
        total += 1 + (size_t)(p->nq + p->np) * n;
    }
    uint64_t *w = calloc(total, sizeof(uint64_t));
    double sc = ts_ckks_ciphertext_scale(ct);
    w[0] = (uint64_t)ts_ckks_ciphertext_level(ct);
    memcpy(&w[1], &sc, sizeof(sc));
    w[2] = (uint64_t)deg;
    size_t at = 3;
    for (int i = 0; i <= deg; i++) {
        ts_poly_t *p = ts_ckks_ciphertext_poly(ct, i);
        w[at++] = ((uint64_t)p->is_ntt << 48) | ((uint64_t)p->nq << 16) | p->np;
        ck_assert_ts_ok(ts_poly_download(p, w + at));
        at += (size_t)(p->nq + p->np) * n;
    }
    *len = total;
    return w;
}

/*
 * The look-ups of one conversion on several threads (ts_nonlinear_slots_eval
 * step 3, ts__nonlinear_slots_set_threads) against one value after the
 * other on the calling thread: for both modes, the same input ciphertext
 * gives an output identical word for word with 1 thread, with as many
 * threads as values, with fewer threads than values (3 for 4: a thread
 * takes two values) and again on the kept workers (their scratch holds the
 * previous call's state); and the output decrypts to the cleartext
 * reference within the bound of test_nonlinear_slots_fns. The TFHE steps
 * draw no randomness (blind rotations, key switches, traces are functions
 * of the input and the keys), so any difference is a race or shared state.
 */
START_TEST(test_nonlinear_slots_threads)
{
    sfx_t f;
    sfx_init(&f, "test-boot-n10", 10);
    const size_t count = ts_test_quick() ? 2 : 4;
    ts_nonlinear_spec_t sp = lut_spec(-8.0, 8.0, TS_NL_BOUNDS_UNIFORM);
    ts_nonlinear_approx_t *a;
    ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_SILU, &sp, &a));
    for (int m = 0; m < 2; m++) {
        ts_nonlinear_slots_mode_t mode = (ts_nonlinear_slots_mode_t)m;
        ts_nonlinear_slots_cfg_t cfg;
        ts_nonlinear_slots_cfg_default(mode, &cfg);
        ts_nonlinear_slots_t *ns;
        ck_assert_ts_ok(ts_nonlinear_slots_new(f.cv, f.bt, a, &cfg, &ns));
        size_t slots[4];
        double x[4];
        random_slots(&f, slots, count);
        ts_ckks_ciphertext_t *in = encrypt_case(&f, &sp, ns, &cfg, slots, count, NULL, x);
        const int threads[] = {1, (int)count, 3, (int)count};
        uint64_t *ref = NULL;
        size_t ref_len = 0;
        for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
            ts_ckks_ciphertext_t *out;
            ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, ts_ckks_params_max_level(f.p), &out));
            ts__nonlinear_slots_set_threads(ns, threads[t]);
            ck_assert_ts_ok(ts_nonlinear_slots_eval(ns, f.ev, in, slots, count, -1, out));
            size_t len;
            uint64_t *w = ct_words(out, &len);
            if (!ref) {
                ref = w;
                ref_len = len;
            } else {
                ck_assert_uint_eq(len, ref_len);
                size_t diff = 0;
                for (size_t k = 0; k < len; k++)
                    diff += w[k] != ref[k];
                ck_assert_msg(diff == 0, "%s, %d threads: %zu of %zu words differ from 1 thread",
                              ts_nonlinear_slots_mode_name(mode), threads[t], diff, len);
                free(w);
            }
            if (t == 1) {
                slots_result_t r;
                check_case(&f, TS_NL_FN_SILU, &sp, mode, a, ns, slots, count, x, out,
                           ts_nonlinear_slots_max_level(ns), &r);
            }
            ts_ckks_ciphertext_free(out);
        }
        free(ref);
        ts_ckks_ciphertext_free(in);
        ts_nonlinear_slots_free(ns);
    }
    ts_nonlinear_approx_free(a);
    sfx_clear(&f);
}
END_TEST

/* An allocator hook that records the size of every allocation in order. */
#define HOOK_CAP 8192
static atomic_ulong hook_calls;
static size_t hook_size[HOOK_CAP];

static void *hook_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    unsigned long i = atomic_fetch_add(&hook_calls, 1);
    if (i < HOOK_CAP)
        hook_size[i] = size;
    void *p = NULL;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

static void hook_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

/* ts_nonlinear_slots_eval(ns, in) with the hook: the sizes into sizes[], *n of them. */
static void eval_recorded(sfx_t *f, ts_nonlinear_slots_t *ns, ts_ckks_ciphertext_t *in,
                          const size_t *slots, size_t count, ts_ckks_ciphertext_t *out,
                          size_t *sizes, unsigned long *n)
{
    atomic_store(&hook_calls, 0);
    ts_allocator_t hook = {hook_alloc, hook_free, NULL};
    ts_set_allocator(&hook);
    ts_status_t st = ts_nonlinear_slots_eval(ns, f->ev, in, slots, count, -1, out);
    ts_set_allocator(NULL);
    ck_assert_ts_ok(st);
    *n = atomic_load(&hook_calls);
    ck_assert_uint_lt(*n, HOOK_CAP);
    memcpy(sizes, hook_size, *n * sizeof(size_t));
}

/*
 * Allocation failures around and inside the threaded look-ups. Two recorded
 * runs on one object, the first making the look-up workers, locate them: the
 * allocation sequences agree up to the first worker allocation P and differ
 * by the W allocations of the workers. Then, on fresh objects, every
 * allocation from P + j on fails (sticky) for j across the workers'
 * creation, the threads' bookkeeping and the look-ups (HYBRID: HomComp
 * allocates on every thread; TFHE's PBS allocates nothing, so its later j
 * land in the merge after the threads): each must return TS_ENOMEM and leak
 * nothing once the object is freed.
 */
START_TEST(test_nonlinear_slots_threads_nomem)
{
    sfx_t f;
    sfx_init(&f, "test-boot-n10", 10);
    const size_t count = 2;
    ts_nonlinear_spec_t sp = lut_spec(-8.0, 8.0, TS_NL_BOUNDS_UNIFORM);
    ts_nonlinear_approx_t *a;
    ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_SILU, &sp, &a));
    size_t slots[2] = {3, 17};
    double x[2];
    size_t *s1 = malloc(HOOK_CAP * sizeof(size_t)), *s2 = malloc(HOOK_CAP * sizeof(size_t));
    ts_ckks_ciphertext_t *out;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, ts_ckks_params_max_level(f.p), &out));
    for (int m = 0; m < 2; m++) {
        ts_nonlinear_slots_mode_t mode = (ts_nonlinear_slots_mode_t)m;
        ts_nonlinear_slots_cfg_t cfg;
        ts_nonlinear_slots_cfg_default(mode, &cfg);
        ts_nonlinear_slots_t *ns;
        ck_assert_ts_ok(ts_nonlinear_slots_new(f.cv, f.bt, a, &cfg, &ns));
        ts_ckks_ciphertext_t *in = encrypt_case(&f, &sp, ns, &cfg, slots, count, NULL, x);
        ts__nonlinear_slots_set_threads(ns, (int)count);
        unsigned long n1, n2, P = 0;
        eval_recorded(&f, ns, in, slots, count, out, s1, &n1);
        eval_recorded(&f, ns, in, slots, count, out, s2, &n2);
        ts_nonlinear_slots_free(ns);
        ck_assert_uint_gt(n1, n2);
        while (P < n2 && s1[P] == s2[P])
            P++;
        const unsigned long W = n1 - n2;
        const unsigned long at[] = {0, W / 2, W - 1, W, W + 1, W + 2, W + 3, W + 5, W + 8};
        for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
            if (P + at[k] >= n1)
                continue;
            int64_t live = ts_alloc_live();
            ck_assert_ts_ok(ts_nonlinear_slots_new(f.cv, f.bt, a, &cfg, &ns));
            ts__nonlinear_slots_set_threads(ns, (int)count);
            ts_alloc_fail_after(P + at[k] + 1, true);
            ts_status_t st = ts_nonlinear_slots_eval(ns, f.ev, in, slots, count, -1, out);
            ts_alloc_fail_after(0, false);
            ck_assert_msg(st == TS_ENOMEM, "%s: allocations from P + %lu on (P %lu, W %lu): %s",
                          ts_nonlinear_slots_mode_name(mode), at[k], P, W, ts_strerror(st));
            ts_nonlinear_slots_free(ns);
            ck_assert_int_eq(ts_alloc_live(), live);
        }
        fprintf(stderr,
                "nonlinear_slots %s threads: %lu allocations, the 1 worker's %lu from %lu\n",
                ts_nonlinear_slots_mode_name(mode), n1, W, P);
        ts_ckks_ciphertext_free(in);
    }
    ts_ckks_ciphertext_free(out);
    free(s1);
    free(s2);
    ts_nonlinear_approx_free(a);
    sfx_clear(&f);
}
END_TEST

/* The input checks: level, slot range, duplicates, mode/approx mismatch. */
START_TEST(test_nonlinear_slots_errors)
{
    sfx_t f;
    sfx_init(&f, "test-boot-n10", 10);
    ts_nonlinear_spec_t sp = lut_spec(0.25, 8.0, TS_NL_BOUNDS_LOG);
    ts_nonlinear_approx_t *a, *poly;
    ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_RECIP, &sp, &a));
    ts_nonlinear_spec_t pp = {.method = TS_NL_POLY, .lo = 0.25, .hi = 8.0, .degree = 7};
    ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_RECIP, &pp, &poly));
    ts_nonlinear_slots_cfg_t cfg;
    ts_nonlinear_slots_cfg_default(TS_NL_SLOTS_HYBRID, &cfg);
    ts_nonlinear_slots_t *ns = NULL;
    ck_assert_ts_status(ts_nonlinear_slots_new(f.cv, f.bt, poly, &cfg, &ns), TS_EINVAL);
    cfg.ratio_bits = 1;
    ck_assert_ts_status(ts_nonlinear_slots_new(f.cv, f.bt, a, &cfg, &ns), TS_EINVAL);
    ts_nonlinear_slots_cfg_default(TS_NL_SLOTS_HYBRID, &cfg);
    ck_assert_ts_ok(ts_nonlinear_slots_new(f.cv, f.bt, a, &cfg, &ns));
    int L = ts_ckks_params_max_level(f.p);
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, L, &ct));
    double *v = calloc(f.n, sizeof(double));
    for (size_t j = 0; j < f.n; j++)
        v[j] = 1.0;
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f.enc, f.sk, v, f.n, f.n, L, ts_ckks_params_scale(f.p),
                                            f.prng, NULL, ct));
    size_t dup[2] = {3, 3}, bad[1] = {f.n};
    ck_assert_ts_status(ts_nonlinear_slots_eval(ns, f.ev, ct, dup, 2, -1, ct), TS_EINVAL);
    ck_assert_ts_status(ts_nonlinear_slots_eval(ns, f.ev, ct, bad, 1, -1, ct), TS_ERANGE);
    ck_assert_ts_status(
        ts_nonlinear_slots_eval(ns, f.ev, ct, dup, 1, ts_nonlinear_slots_max_level(ns) + 1, ct),
        TS_ELEVEL);
    ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, ct, ts_nonlinear_slots_in_level(ns) - 1, ct));
    ck_assert_ts_status(ts_nonlinear_slots_eval(ns, f.ev, ct, dup, 1, -1, ct), TS_ELEVEL);
    free(v);
    ts_ckks_ciphertext_free(ct);
    ts_nonlinear_slots_free(ns);
    ts_nonlinear_slots_free(NULL);
    ts_nonlinear_approx_free(a);
    ts_nonlinear_approx_free(poly);
    sfx_clear(&f);
}
END_TEST

/*
 * The encrypted decode engine's use on test-boot-n12 (N = 2^12, 2048 slots,
 * N_br = 2^10): 1/x of four softmax sums at slots 0, hd, 2hd, 3hd and
 * 1/sqrt(x) of a mean square at slot 0, output at a low level.
 */
START_TEST(test_nonlinear_slots_n12)
{
    if (ts_test_quick())
        return;
    sfx_t f;
    sfx_init(&f, "test-boot-n12", 10);
    const size_t hd = 64;
    size_t s4[4] = {0, hd, 2 * hd, 3 * hd}, s1[1] = {0};
    ts_nonlinear_spec_t sp = lut_spec(1.0, 64.0, TS_NL_BOUNDS_LOG);
    slots_result_t r;
    run_case(&f, TS_NL_FN_RECIP, &sp, TS_NL_SLOTS_HYBRID, s4, 4, NULL, -1, &r);
    sp = lut_spec(0.0625, 16.0, TS_NL_BOUNDS_LOG);
    run_case(&f, TS_NL_FN_RSQRT, &sp, TS_NL_SLOTS_HYBRID, s1, 1, NULL, 2, &r);
    /* a slot off the subring of X^4 is refused */
    ts_nonlinear_approx_t *a;
    ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_RSQRT, &sp, &a));
    ts_nonlinear_slots_cfg_t cfg;
    ts_nonlinear_slots_cfg_default(TS_NL_SLOTS_HYBRID, &cfg);
    ts_nonlinear_slots_t *ns;
    ck_assert_ts_ok(ts_nonlinear_slots_new(f.cv, f.bt, a, &cfg, &ns));
    int L = ts_ckks_params_max_level(f.p);
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, L, &ct));
    double *v = calloc(f.n, sizeof(double));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f.enc, f.sk, v, f.n, f.n, L, ts_ckks_params_scale(f.p),
                                            f.prng, NULL, ct));
    size_t off[1] = {1024};
    ck_assert_ts_status(ts_nonlinear_slots_eval(ns, f.ev, ct, off, 1, -1, ct), TS_ERANGE);
    free(v);
    ts_ckks_ciphertext_free(ct);
    ts_nonlinear_slots_free(ns);
    ts_nonlinear_approx_free(a);
    sfx_clear(&f);
}
END_TEST

TS_TEST_SUITE(nonlinear_slots)
{
    Suite *s = suite_create("nonlinear_slots");
    TCase *tc = ts_tcase("slots", 0);
    tcase_add_test(tc, test_nonlinear_slots_fns);
    tcase_add_test(tc, test_nonlinear_slots_errors);
    tcase_add_test(tc, test_nonlinear_slots_threads);
    tcase_add_test(tc, test_nonlinear_slots_threads_nomem);
    tcase_add_test(tc, test_nonlinear_slots_n12);
    suite_add_tcase(s, tc);
    return s;
}

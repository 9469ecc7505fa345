/*
 * The encrypted segmented-LUT lookup (ROSETTA section 3.2) against the
 * cleartext ts_nonlinear_lut_t it is built from:
 *  - the encrypted segment index equals ts_nonlinear_lut_segment exactly on
 *    every grid point (HomComp is exact), including u = tau_j - 1, tau_j;
 *  - the encrypted interval index (the rounded V) equals
 *    ts_nonlinear_lut_interval on every grid point not within the
 *    blind-rotation noise of a rounding tie (counted; interval and segment
 *    boundaries are never ties);
 *  - the output equals ts_nonlinear_lut_eval within a stated tolerance.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/nonlinear/nonlinear.h"
#include "tests/unit/ts_test.h"

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_convert_t *cv;
    uint64_t q;
    uint32_t nbr;
} hfx_t;

static void hfx_init(hfx_t *f)
{
    memset(f, 0, sizeof(*f));
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/test-n10.yaml", root ? root : "",
             root ? "/" : "");
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &f->p, &err));
    ts_log_set_level(lv);
    uint8_t seed[TS_SEED_BYTES] = {2, 7, 1, 8};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 21, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset("tfhe_test_small", &lit));
    lit.log_n_br = 10;
    lit.br_levels = 3; /* 36 of the 55 bits of q0 in the gadget */
    ck_assert_ts_ok(ts_convert_keygen(f->p, f->sk, &lit, f->prng, &f->cv));
    f->q = ts_convert_q(f->cv);
    f->nbr = ts_convert_n_br(f->cv);
}

static void hfx_clear(hfx_t *f)
{
    ts_convert_free(f->cv);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

static double fexact(double x, void *ctx)
{
    return ts_nonlinear_exact((ts_nonlinear_fn_t)(intptr_t)ctx, x);
}

typedef struct {
    int checked, ties, idx_equal, seg_equal;
    double max_err, max_ref_err;
} he_stats_t;

static void check_point(hfx_t *f, ts_nonlinear_lut_he_t *he, const ts_nonlinear_lut_t *lut,
                        ts_nonlinear_fn_t fn, double u, double tol, he_stats_t *st)
{
    const ts_tfhe_params_t *tp = ts_convert_tfhe_params(f->cv);
    double x = ts_nonlinear_lut_he_grid(he, u);
    ts_tfhe_rlwe_t *in, *out;
    ts_tfhe_lwe_t *seg, *val;
    ck_assert_ts_ok(ts_tfhe_rlwe_new(tp, &in));
    ck_assert_ts_ok(ts_tfhe_rlwe_new(tp, &out));
    ck_assert_ts_ok(ts_tfhe_lwe_new(f->nbr, f->q, &seg));
    ck_assert_ts_ok(ts_tfhe_lwe_new(f->nbr, f->q, &val));
    ck_assert_ts_ok(ts_nonlinear_lut_he_encrypt(he, ts_convert_rlwe_key(f->cv), x, f->prng, in));
    ck_assert_ts_ok(ts_nonlinear_lut_he_eval(he, in, out, seg, val));
    const ts_tfhe_lwe_key_t *key = ts_convert_lwe_key(f->cv);
    uint64_t ph;
    /* segment: exact */
    ck_assert_ts_ok(ts_tfhe_lwe_phase(key, seg, &ph));
    int s_enc = (int)ts_tfhe_decode(f->q, ph, (uint64_t)lut->n_seg);
    int s_ref = ts_nonlinear_lut_segment(lut, x);
    ck_assert_msg(s_enc == s_ref, "segment of x=%.17g (u=%g): enc %d, cleartext %d", x, u, s_enc,
                  s_ref);
    st->seg_equal++;
    /* interval: V = t 2^k + 2^(k-1) at scale Q / 2^(k+2) */
    ck_assert_ts_ok(ts_tfhe_lwe_phase(key, val, &ph));
    int k = lut->index_bits;
    double v = (double)ts_tfhe_centered(ph, f->q) / ((double)f->q / ldexp(1.0, k + 2));
    double fr = v - floor(v);
    int i_ref = ts_nonlinear_lut_interval(lut, s_ref, x);
    if (fabs(fr - 0.5) < 0.15) {
        st->ties++;
    } else {
        int64_t T = (int64_t)floor(v + 0.5) - (1ll << (k - 1));
        int guard = 0;
        while ((1 << (k - guard)) > lut->n_br)
            guard++;
        int64_t i_enc = T < 0 ? 0 : T >> guard;
        if (i_enc > lut->n_br - 1)
            i_enc = lut->n_br - 1;
        ck_assert_msg(i_enc == i_ref,
                      "interval of x=%.17g (u=%g, seg %d): enc %lld (V=%.4f), "
                      "cleartext %d",
                      x, u, s_ref, (long long)i_enc, v, i_ref);
        st->idx_equal++;
    }
    /* value */
    uint64_t *phs = malloc((size_t)f->nbr * 8);
    ck_assert_ts_ok(ts_tfhe_rlwe_phase(ts_convert_rlwe_key(f->cv), out, phs));
    double y = ts_nonlinear_lut_he_decode(he, phs[0]);
    double want = ts_nonlinear_lut_eval(lut, x);
    double err = fabs(y - want);
    if (fabs(fr - 0.5) < 0.15) {
        /* near a tie either neighbouring line may be selected */
        for (int d = -1; d <= 1; d += 2) {
            int i2 = i_ref + d;
            if (i2 < 0 || i2 >= lut->n_br)
                continue;
            size_t e = (size_t)s_ref * lut->n_br + (size_t)i2;
            err = fmin(err, fabs(y - (lut->slope[e] * x + lut->offset[e])));
        }
    }
    st->max_err = fmax(st->max_err, err);
    st->max_ref_err = fmax(st->max_ref_err, fabs(y - ts_nonlinear_exact(fn, x)));
    ck_assert_msg(err < tol, "LUT(%.17g): enc %.9g, cleartext %.9g (err %.3g > %.3g)", x, y, want,
                  err, tol);
    st->checked++;
    free(phs);
    ts_tfhe_lwe_free(seg);
    ts_tfhe_lwe_free(val);
    ts_tfhe_rlwe_free(in);
    ts_tfhe_rlwe_free(out);
}

static void run_fn(ts_nonlinear_fn_t fn, double lo, double hi, ts_nonlinear_bounds_t bounds,
                   double out_max, int n_rand)
{
    hfx_t f;
    hfx_init(&f);
    const int n_seg = 4, n_br = 16, k = 5, in_bits = 10, frac_bits = 20;
    ts_nonlinear_lut_t lut;
    ck_assert_ts_ok(
        ts_nonlinear_lut_init(&lut, fexact, (void *)(intptr_t)fn, lo, hi, n_seg, n_br, bounds, k));
    ts_nonlinear_lut_he_t *he;
    ck_assert_ts_ok(ts_nonlinear_lut_he_new(f.cv, &lut, in_bits, frac_bits, out_max, &he));
    const double top = ldexp(1.0, in_bits), step = (hi - lo) / top;
    /* tolerance: the output noise plus the input quantization of the slope products */
    const double tol = out_max * ldexp(1.0, -12);
    he_stats_t st = {0};
    /* segment boundaries: the grid points on both sides */
    for (int j = 1; j < n_seg; j++) {
        double u0 = floor((lut.bounds[j] - lo) / step);
        for (double du = -1; du <= 1; du++)
            if (u0 + du >= 0 && u0 + du < top)
                check_point(&f, he, &lut, fn, u0 + du, tol, &st);
    }
    /* interval boundaries of a few intervals: nearest grid points */
    for (int s = 0; s < n_seg; s++) {
        double w = lut.bounds[s + 1] - lut.bounds[s];
        for (int i = 3; i < n_br; i += ts_test_quick() ? 12 : 6) {
            double xb = lut.bounds[s] + w * i / n_br;
            double u0 = floor((xb - lo) / step);
            if (u0 >= 0 && u0 < top)
                check_point(&f, he, &lut, fn, u0, tol, &st);
            if (u0 + 1 < top && !ts_test_quick() && i == 3)
                check_point(&f, he, &lut, fn, u0 + 1, tol, &st);
        }
    }
    /* the ends and random grid points */
    check_point(&f, he, &lut, fn, 0, tol, &st);
    check_point(&f, he, &lut, fn, top - 1, tol, &st);
    for (int i = 0; i < (ts_test_quick() ? n_rand / 4 : n_rand); i++) {
        uint64_t u;
        ck_assert_ts_ok(ts_prng_uniform(f.prng, (uint64_t)top, &u));
        check_point(&f, he, &lut, fn, (double)u, tol, &st);
    }
    fprintf(stderr,
            "nonlinear_he %s [%g, %g]: %d points, segment equal %d, interval equal %d, near-tie "
            "%d; max |enc - cleartext LUT| %.3g (2^%.1f of out_max), max |enc - exact| %.3g\n",
            ts_nonlinear_fn_name(fn), lo, hi, st.checked, st.seg_equal, st.idx_equal, st.ties,
            st.max_err, log2(st.max_err / out_max), st.max_ref_err);
    ts_nonlinear_lut_he_free(he);
    ts_nonlinear_lut_clear(&lut);
    hfx_clear(&f);
}

START_TEST(test_nonlinear_he_recip)
{
    run_fn(TS_NL_FN_RECIP, 0.1, 2.0, TS_NL_BOUNDS_LOG, 10.0, 6);
}
END_TEST

START_TEST(test_nonlinear_he_silu)
{
    run_fn(TS_NL_FN_SILU, -8.0, 8.0, TS_NL_BOUNDS_UNIFORM, 8.0, 6);
}
END_TEST

TS_TEST_SUITE(nonlinear_he)
{
    Suite *s = suite_create("nonlinear_he");
    TCase *tc = ts_tcase("lookup", 0);
    tcase_add_test(tc, test_nonlinear_he_recip);
    tcase_add_test(tc, test_nonlinear_he_silu);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * core/ckks double-hoisted linear transforms (lintrans.c, keys.c):
 *  - the baby rotations kept over Q_l * P, brought down by the one ModDown,
 *    equal ts_ckks_rotate_hoisted's ciphertexts word for word (step 0: x);
 *  - ts_ckks_lintrans_apply against the plaintext matrix-vector product in
 *    complex doubles (decrypt, decode, max |error| over the slots), at
 *    test-n11 (N = 2^11, 8 levels, 2 x 61-bit P): a dense 64 x 64 matrix on
 *    64 of 1024 slots (sparse slot count, 8 giant steps) at the top and at a
 *    middle level, and a diagonal-given transform on all 1024 slots whose
 *    giant steps mix the cases (baby step 0 with others, baby step 0 alone,
 *    no baby step 0, a negative offset);
 *  - the public ts_ckks_bsgs sum with diagonals encoded on the fly (full
 *    limbs) gives the words of the transform, whose sparse-slot diagonals are
 *    stored spread (one word per run), exactly (and reuses its rotations for a
 *    second matrix).
 */
#include <complex.h>

#include "core/ckks/ckks_int.h"
#include "tests/unit/ts_test.h"

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_encoder_t *enc;
    ts_ckks_evaluator_t *ev;
    int top;
} lfx_t;

static void lfx_init(lfx_t *f, const char *name)
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
    uint8_t seed[TS_SEED_BYTES] = {9, 4, 2};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 17, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f->p, f->ek, &f->ev));
    f->top = ts_ckks_params_max_level(f->p);
}

static void lfx_clear(lfx_t *f)
{
    ts_ckks_evaluator_free(f->ev);
    ts_ckks_encoder_free(f->enc);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

static void fill(double complex *v, size_t n, unsigned seed)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double re = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double im = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
        v[i] = 0.7 * re + 0.7 * I * im;
    }
}

static ts_ckks_ciphertext_t *enc_vec(lfx_t *f, const double complex *z, size_t slots, int level)
{
    ts_ckks_ciphertext_t *ct = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, level, &ct));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_values(f->enc, f->sk, z, slots, slots, level,
                                              ts_ckks_params_scale(f->p), f->prng, NULL, ct));
    return ct;
}

/* -log2 max |decrypt(ct) - want| over the slots. */
static double precision(lfx_t *f, const ts_ckks_ciphertext_t *ct, const double complex *want,
                        size_t slots)
{
    ts_ckks_plaintext_t *pt = NULL;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, f->top, &pt));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, ct, pt));
    double complex *got = ts_malloc(sizeof(double complex) * slots);
    ck_assert_ts_ok(ts_ckks_decode(f->enc, pt, got, slots));
    double m = 0;
    for (size_t i = 0; i < slots; i++) {
        double e = cabs(got[i] - want[i]);
        m = e > m ? e : m;
    }
    ts_free(got);
    ts_ckks_plaintext_free(pt);
    return m == 0 ? 60.0 : -log2(m);
}

static void check_prec(lfx_t *f, const ts_ckks_ciphertext_t *ct, const double complex *want,
                       size_t slots, double bound, const char *what)
{
    double b = precision(f, ct, want, slots);
    if (getenv("TS_TEST_VERBOSE"))
        fprintf(stderr, "ckks_lintrans: %-44s %5.1f bits (bound %.0f)\n", what, b, bound);
    ck_assert_msg(b >= bound, "%s: precision %.1f bits, expected >= %.0f", what, b, bound);
}

/* Keys for every rotation lt needs. */
static void keys_for(lfx_t *f, const ts_ckks_lintrans_t *lt)
{
    int64_t steps[256];
    size_t ns = 256;
    ck_assert_ts_ok(ts_ckks_lintrans_steps(lt, steps, &ns));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(f->ek, f->sk, steps, ns, f->prng));
}

static bool same_poly(const ts_poly_t *a, const ts_poly_t *b)
{
    return a->nq == b->nq && a->np == b->np && a->is_ntt == b->is_ntt && ts_poly_equal(a, b);
}

/* rotations over Q_l * P + ModDown = the hoisted rotations, word for word */
START_TEST(test_rotate_qp_exact)
{
    lfx_t f;
    lfx_init(&f, "test-n11");
    const size_t slots = ts_ckks_params_slots(f.p);
    const int64_t steps[] = {1, 3, 7, -5, 200};
    const size_t ns = sizeof steps / sizeof steps[0];
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(f.ek, f.sk, steps, ns, f.prng));
    double complex *x = ts_malloc(sizeof(double complex) * slots);
    fill(x, slots, 3);
    const int levels[] = {f.top, 2};
    for (int li = 0; li < 2; li++) {
        const int lv = levels[li];
        const uint32_t nq = (uint32_t)lv + 1, np = (uint32_t)ts_ckks_params_p_count(f.p);
        ts_ckks_ciphertext_t *a = enc_vec(&f, x, slots, lv);
        ts_ckks_ciphertext_t *ref[5] = {0};
        ts_poly_t *v[10] = {0}, *u0 = NULL, *u1 = NULL;
        for (size_t i = 0; i < ns; i++) {
            ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, lv, &ref[i]));
            ck_assert_ts_ok(ts_poly_new(a->c[0]->ring, nq, np, true, &v[2 * i]));
            ck_assert_ts_ok(ts_poly_new(a->c[0]->ring, nq, np, true, &v[2 * i + 1]));
        }
        ck_assert_ts_ok(ts_poly_new(a->c[0]->ring, nq, 0, true, &u0));
        ck_assert_ts_ok(ts_poly_new(a->c[0]->ring, nq, 0, true, &u1));
        ck_assert_ts_ok(ts_ckks_rotate_hoisted(f.ev, a, steps, ns, ref));
        ck_assert_ts_ok(ts__ckks_rotate_hoisted_qp(f.ev, a, steps, ns, v));
        for (size_t i = 0; i < ns; i++) {
            ck_assert_uint_eq(v[2 * i]->np, np);
            ck_assert_ts_ok(ts__ckks_moddown(f.ev, v[2 * i], v[2 * i + 1], u0, u1));
            ck_assert_msg(same_poly(u0, ref[i]->c[0]) && same_poly(u1, ref[i]->c[1]),
                          "step %lld level %d: ModDown of the Q*P rotation differs",
                          (long long)steps[i], lv);
        }
        /* a step of 0 (mod slots) is P x, which comes down to x exactly; a
         * step without a key is refused */
        const int64_t zero = (int64_t)slots, nokey = 11;
        ck_assert_ts_ok(ts__ckks_rotate_hoisted_qp(f.ev, a, &zero, 1, v));
        ck_assert_ts_ok(ts__ckks_moddown(f.ev, v[0], v[1], u0, u1));
        ck_assert(same_poly(u0, a->c[0]) && same_poly(u1, a->c[1]));
        ck_assert_ts_status(ts__ckks_rotate_hoisted_qp(f.ev, a, &nokey, 1, v), TS_ENOKEY);
        for (size_t i = 0; i < ns; i++) {
            ts_ckks_ciphertext_free(ref[i]);
            ts_poly_free(v[2 * i]);
            ts_poly_free(v[2 * i + 1]);
        }
        ts_poly_free(u0);
        ts_poly_free(u1);
        ts_ckks_ciphertext_free(a);
    }
    ts_free(x);
    lfx_clear(&f);
}
END_TEST

/* a dense n x n matrix on n of the parameters' slots, n1 = 8 baby steps */
START_TEST(test_lintrans_dense_sparse_slots)
{
    lfx_t f;
    lfx_init(&f, "test-n11");
    const size_t n = 64;
    double complex *m = ts_malloc(sizeof(double complex) * n * n);
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(m, n * n, 21);
    fill(x, n, 22);
    for (size_t i = 0; i < n * n; i++)
        m[i] /= 8; /* |M x| stays below ~ 1 */
    for (size_t i = 0; i < n; i++) {
        w[i] = 0;
        for (size_t j = 0; j < n; j++)
            w[i] += m[i * n + j] * x[j];
    }
    const int levels[] = {f.top, 4};
    for (int li = 0; li < 2; li++) {
        const int lv = levels[li];
        ts_ckks_lintrans_t *lt = NULL;
        ck_assert_ts_ok(ts_ckks_lintrans_new(f.enc, m, n, lv, 0, 8, &lt));
        int64_t steps[64];
        size_t ns = 64;
        ck_assert_ts_ok(ts_ckks_lintrans_steps(lt, steps, &ns));
        ck_assert_uint_eq(ns, 14); /* baby 1..7, giant 8, 16, .., 56 */
        keys_for(&f, lt);
        ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, lv), *o = NULL;
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, lv, &o));
        ck_assert_ts_ok(ts_ckks_lintrans_apply(f.ev, lt, a, o));
        ck_assert_int_eq(ts_ckks_ciphertext_level(o), lv);
        ck_assert_uint_eq(ts_ckks_ciphertext_slots(o), n);
        ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
        check_prec(&f, o, w, n, 26, lv == f.top ? "64x64 on 64 slots, top" : "64x64, level 4");
        /* the input's level is the transform's */
        if (lv != f.top) {
            ts_ckks_ciphertext_t *b = enc_vec(&f, x, n, f.top);
            ck_assert_ts_status(ts_ckks_lintrans_apply(f.ev, lt, b, o), TS_ELEVEL);
            ts_ckks_ciphertext_free(b);
        }
        ts_ckks_ciphertext_free(a);
        ts_ckks_ciphertext_free(o);
        ts_ckks_lintrans_free(lt);
    }
    ts_free(m);
    ts_free(x);
    ts_free(w);
    lfx_clear(&f);
}
END_TEST

/* diagonals on all slots; n1 = 16: giant 0 {0, 1, 5}, 16 {0, 1, 2}, 32 {0},
 * 48 {1}, slots - 16 {15} (offset -1) */
START_TEST(test_lintrans_diagonals_full)
{
    lfx_t f;
    lfx_init(&f, "test-n11");
    const size_t s = ts_ckks_params_slots(f.p);
    const int64_t off[] = {0, 1, 5, 16, 17, 18, 32, 49, -1};
    const size_t nd = sizeof off / sizeof off[0];
    double complex *dg = ts_malloc(sizeof(double complex) * nd * s);
    double complex *x = ts_malloc(sizeof(double complex) * s);
    double complex *w = ts_calloc(s, sizeof(double complex));
    fill(dg, nd * s, 31);
    fill(x, s, 32);
    for (size_t i = 0; i < nd * s; i++)
        dg[i] /= 3;
    /* (M x)[j] = sum_k d_k[j] x[(j + off_k) mod s] */
    for (size_t k = 0; k < nd; k++)
        for (size_t j = 0; j < s; j++)
            w[j] += dg[k * s + j] * x[(j + (size_t)(off[k] + (int64_t)s)) % s];
    ts_ckks_lintrans_t *lt = NULL;
    ck_assert_ts_ok(ts_ckks_lintrans_new_diagonals(f.enc, s, nd, off, dg, f.top, 0, 16, &lt));
    int64_t steps[64];
    size_t ns = 64;
    ck_assert_ts_ok(ts_ckks_lintrans_steps(lt, steps, &ns));
    ck_assert_uint_eq(ns, 8); /* baby 1, 5, 2, 15; giant 16, 32, 48, s - 16 */
    keys_for(&f, lt);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, s, f.top), *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    ck_assert_ts_ok(ts_ckks_lintrans_apply(f.ev, lt, a, o));
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    check_prec(&f, o, w, s, 25, "9 diagonals on 1024 slots, 5 giant steps");
    /* a missing rotation key is reported, not computed around */
    ts_ckks_evalkeys_t *ek2 = NULL;
    ts_ckks_evaluator_t *ev2 = NULL;
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f.p, &ek2));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, ek2, &ev2));
    ck_assert_ts_status(ts_ckks_lintrans_apply(ev2, lt, a, o), TS_ENOKEY);
    ts_ckks_evaluator_free(ev2);
    ts_ckks_evalkeys_free(ek2);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_ckks_lintrans_free(lt);
    ts_free(dg);
    ts_free(x);
    ts_free(w);
    lfx_clear(&f);
}
END_TEST

/* M d'-diagonal i at giant offset g: d'_i[j] = M[(j - g) mod n][(j - g + i) mod n]. */
static void shifted_diag(const double *m, size_t n, size_t i, size_t g, double *out)
{
    for (size_t j = 0; j < n; j++) {
        size_t r = (j + n - g) % n;
        out[j] = m[r * n + (r + i) % n];
    }
}

/*
 * The public double-hoisted sum with diagonals made on the fly (reals,
 * encoded per call, as the engine's matvec would) gives exactly the words of
 * ts_ckks_lintrans_apply on the same matrix and split, and a second matrix
 * after finish() reuses the baby rotations; both against the plaintext
 * product too.
 */
START_TEST(test_bsgs_on_the_fly)
{
    lfx_t f;
    lfx_init(&f, "test-n11");
    const size_t n = 32, n1 = 4;
    const int lv = f.top - 1;
    const double scale = (double)ts_ckks_params_q(f.p, (size_t)lv);
    double *m = ts_malloc(sizeof(double) * n * n * 2), *d = ts_malloc(sizeof(double) * n);
    double complex *mc = ts_malloc(sizeof(double complex) * n * n);
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 41);
    for (size_t i = 0; i < 2 * n * n; i++)
        m[i] = creal(x[i % n]) * 0.2 + 0.01 * (double)((i * 37) % 17) - 0.08;
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, lv), *o = NULL, *r = NULL, *o2 = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, lv, &o));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, lv, &r));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, lv, &o2));
    double *dd = ts_malloc(sizeof(double) * n1 * n);
    const int64_t baby[] = {0, 1, 2, 3};
    ts_ckks_bsgs_t *h = NULL;
    for (int pass = 0; pass < 2; pass++) {
        const double *mm = m + (size_t)pass * n * n;
        for (size_t i = 0; i < n * n; i++)
            mc[i] = mm[i];
        ts_ckks_lintrans_t *lt = NULL;
        ck_assert_ts_ok(ts_ckks_lintrans_new(f.enc, mc, n, lv, 0, n1, &lt));
        /* 32 of 1024 slots: diagonals stored spread (one word per run of
         * 2^11 / 64 equal words) where the backend takes spread digits (a
         * GPU's, devemu's: full ones), the sum below encodes full ones */
        const ts_backend_t *be = ts_backend_default();
        const bool spread = be->iface->keyswitch_inner_spread != NULL;
        ck_assert_uint_eq(ts__ckks_lintrans_gap(lt), spread ? ts_ckks_params_n(f.p) / (2 * n) : 1);
        keys_for(&f, lt);
        if (!h)
            ck_assert_ts_ok(ts_ckks_bsgs_new(f.ev, a, baby, 4, &h));
        /* giant steps in the other order (the sums are exact), step 0 left
         * pending for finish() */
        for (size_t g = n - n1 + 1; g-- > 0;) {
            if (g % n1)
                continue;
            for (size_t b = 0; b < n1; b++) {
                shifted_diag(mm, n, g + b, g, d);
                ck_assert_ts_ok(ts_ckks_bsgs_mul_add(h, b, f.enc, NULL, d, n, scale));
            }
            if (g)
                ck_assert_ts_ok(ts_ckks_bsgs_giant(h, (int64_t)g));
        }
        ck_assert_ts_ok(ts_ckks_bsgs_finish(h, o));
        ck_assert_ts_ok(ts_ckks_lintrans_apply(f.ev, lt, a, r));
        ck_assert_msg(same_poly(o->c[0], r->c[0]) && same_poly(o->c[1], r->c[1]),
                      "pass %d: the on-the-fly sum differs from the transform", pass);
        /* the same sum by runs of baby steps (compact diagonals at these 32
         * sparse slots): the whole giant step at once, or split 1 + 3 */
        for (size_t g = n; g >= n1;) {
            g -= n1; /* n - n1 down to 0: step 0 last, pending for finish() */
            for (size_t b = 0; b < n1; b++)
                shifted_diag(mm, n, g + b, g, dd + b * n);
            if ((g / n1) % 2 == 0) {
                ck_assert_ts_ok(ts_ckks_bsgs_mul_add_run(h, 0, n1, f.enc, dd, n, scale));
            } else {
                ck_assert_ts_ok(ts_ckks_bsgs_mul_add_run(h, 0, 1, f.enc, dd, n, scale));
                ck_assert_ts_ok(ts_ckks_bsgs_mul_add_run(h, 1, n1 - 1, f.enc, dd + n, n, scale));
            }
            if (g)
                ck_assert_ts_ok(ts_ckks_bsgs_giant(h, (int64_t)g));
        }
        ck_assert_ts_ok(ts_ckks_bsgs_finish(h, o2));
        ck_assert_msg(same_poly(o2->c[0], r->c[0]) && same_poly(o2->c[1], r->c[1]),
                      "pass %d: the sum by runs differs from the transform", pass);
        ck_assert(o->scale == r->scale);
        for (size_t i = 0; i < n; i++) {
            w[i] = 0;
            for (size_t j = 0; j < n; j++)
                w[i] += mm[i * n + j] * x[j];
        }
        ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
        check_prec(&f, o, w, n, 26, pass ? "on the fly, second matrix" : "on the fly, 32x32");
        ts_ckks_lintrans_free(lt);
    }
    /* one sum keeps one scale; an empty sum has nothing to finish */
    shifted_diag(m, n, 0, 0, d);
    ck_assert_ts_ok(ts_ckks_bsgs_mul_add(h, 0, f.enc, NULL, d, n, scale));
    ck_assert_ts_status(ts_ckks_bsgs_mul_add(h, 1, f.enc, NULL, d, n, scale * 2), TS_ESCALE);
    ck_assert_ts_ok(ts_ckks_bsgs_finish(h, o));
    ck_assert_ts_status(ts_ckks_bsgs_finish(h, o), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_bsgs_mul_add(h, 4, f.enc, NULL, d, n, scale), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_bsgs_mul_add_run(h, 0, 0, f.enc, dd, n, scale), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_bsgs_mul_add_run(h, 2, 3, f.enc, dd, n, scale), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_bsgs_mul_add_run(h, 0, 1, f.enc, dd, n / 2, scale), TS_EINVAL);
    ts_free(dd);
    ts_ckks_ciphertext_free(o2);
    ts_ckks_bsgs_free(h);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_ckks_ciphertext_free(r);
    ts_free(m);
    ts_free(d);
    ts_free(mc);
    ts_free(x);
    ts_free(w);
    lfx_clear(&f);
}
END_TEST

TS_TEST_SUITE(ckks_lintrans)
{
    Suite *s = suite_create("ckks_lintrans");
    TCase *tc = ts_tcase("lintrans", 0);
    tcase_add_test(tc, test_rotate_qp_exact);
    tcase_add_test(tc, test_lintrans_dense_sparse_slots);
    tcase_add_test(tc, test_lintrans_diagonals_full);
    tcase_add_test(tc, test_bsgs_on_the_fly);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * CKKS evaluator against the plaintext computation in complex doubles, at the
 * small insecure presets. Precision is -log2(max |error|) over the slots for
 * inputs in the unit disc; each check states its bound. The bounds leave a
 * margin of several bits below what the noise analysis predicts for N = 2^10,
 * scale 2^40 (fresh noise ~ 2^-28, key switching with a 56-bit P adds less).
 */
#include <complex.h>

#include "core/ckks/ckks.h"
#include "core/ckks/ckks_int.h"
#include "tests/unit/ts_test.h"

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_public_key_t *pk;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_encoder_t *enc;
    ts_ckks_evaluator_t *ev;
    size_t slots;
    int top;
} fx_t;

static const int64_t rot_steps[] = {1,  2,  3,   4,   5,   7,   8,  12, 16,
                                    31, 64, 100, 255, 256, 511, -1, -3};
#define NSTEPS (sizeof(rot_steps) / sizeof(rot_steps[0]))

#define PK_ENC_KAT 0xcc2292768425c7e2ULL

static void fx_init(fx_t *f, const char *name)
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
    uint8_t seed[TS_SEED_BYTES] = {7, 1, 2, 3};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 42, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_keygen_public(f->sk, f->prng, &f->pk));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_relin(f->ek, f->sk, f->prng));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(f->ek, f->sk, rot_steps, NSTEPS, f->prng));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_conjugate(f->ek, f->sk, f->prng));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f->p, f->ek, &f->ev));
    f->slots = ts_ckks_params_slots(f->p);
    f->top = ts_ckks_params_max_level(f->p);
}

static void fx_clear(fx_t *f)
{
    ts_ckks_evaluator_free(f->ev);
    ts_ckks_encoder_free(f->enc);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_public_key_free(f->pk);
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

static ts_ckks_ciphertext_t *enc_vec(fx_t *f, const double complex *z, size_t slots, int level)
{
    ts_ckks_plaintext_t *pt = NULL;
    ts_ckks_ciphertext_t *ct = NULL;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, level, &pt));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, level, &ct));
    ck_assert_ts_ok(ts_ckks_encode(f->enc, z, slots, slots, level, ts_ckks_params_scale(f->p), pt));
    ck_assert_ts_ok(ts_ckks_encrypt_pk(f->pk, pt, f->prng, ct));
    ts_ckks_plaintext_free(pt);
    return ct;
}

/* Precision in bits of ct against want (slots values). */
static double precision(fx_t *f, const ts_ckks_ciphertext_t *ct, const double complex *want,
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

#define CHECK_PREC(f, ct, want, slots, bound, what)                                                \
    do {                                                                                           \
        double ts__b = precision((f), (ct), (want), (slots));                                      \
        if (getenv("TS_TEST_VERBOSE"))                                                             \
            fprintf(stderr, "ckks_eval: %-40s %5.1f bits (bound %d)\n", (what), ts__b,             \
                    (int)(bound));                                                                 \
        ck_assert_msg(ts__b >= (bound), "%s: precision %.1f bits, expected >= %.1f", (what),       \
                      ts__b, (double)(bound));                                                     \
    } while (0)

START_TEST(test_encrypt_decrypt)
{
    fx_t f;
    fx_init(&f, "test-n10");
    double complex *z = ts_malloc(sizeof(double complex) * f.slots);
    fill(z, f.slots, 1);
    for (int level = 0; level <= f.top; level++) {
        ts_ckks_ciphertext_t *ct = enc_vec(&f, z, f.slots, level);
        ck_assert_int_eq(ts_ckks_ciphertext_level(ct), level);
        CHECK_PREC(&f, ct, z, f.slots, 22, "public-key encryption");
        /* symmetric, seeded: c_1 regenerates from the seed */
        ts_ckks_plaintext_t *pt = NULL;
        ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, level, &pt));
        ck_assert_ts_ok(ts_ckks_encode(f.enc, z, f.slots, 0, level, 0x1p40, pt));
        uint8_t seed[TS_SEED_BYTES] = {9, 9, 9}, got[TS_SEED_BYTES];
        ck_assert_ts_ok(ts_ckks_encrypt_sk(f.sk, pt, f.prng, seed, ct));
        ck_assert(ts_ckks_ciphertext_seed(ct, got));
        ck_assert_mem_eq(seed, got, TS_SEED_BYTES);
        CHECK_PREC(&f, ct, z, f.slots, 24, "symmetric encryption");
        ts_ckks_ciphertext_t *ct2 = NULL;
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, level, &ct2));
        ck_assert_ts_ok(ts_ckks_encrypt_sk(f.sk, pt, f.prng, seed, ct2));
        ck_assert(ts_poly_equal(ts_ckks_ciphertext_poly(ct, 1), ts_ckks_ciphertext_poly(ct2, 1)));
        ck_assert_ts_ok(ts_ckks_add(f.ev, ct, ct2, ct2));
        ck_assert(!ts_ckks_ciphertext_seed(ct2, NULL));
        ts_ckks_ciphertext_free(ct2);
        ts_ckks_plaintext_free(pt);
        ts_ckks_ciphertext_free(ct);
    }
    /* the fused client path: encode + symmetric encryption with one NTT per limb */
    {
        ts_ckks_ciphertext_t *ct = NULL, *ct2 = NULL;
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &ct));
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &ct2));
        uint8_t seed[TS_SEED_BYTES] = {1, 2, 3};
        ck_assert_ts_ok(
            ts_ckks_encrypt_sk_values(f.enc, f.sk, z, f.slots, 0, f.top, 0x1p40, f.prng, seed, ct));
        CHECK_PREC(&f, ct, z, f.slots, 24, "fused encode+encrypt (complex)");
        ck_assert(ts_ckks_ciphertext_seed(ct, NULL));
        double *re = ts_malloc(sizeof(double) * f.slots);
        double complex *zr = ts_malloc(sizeof(double complex) * f.slots);
        for (size_t i = 0; i < f.slots; i++) {
            re[i] = creal(z[i]);
            zr[i] = re[i];
        }
        ck_assert_ts_ok(
            ts_ckks_encrypt_sk_real(f.enc, f.sk, re, f.slots, 0, 2, 0x1p30, f.prng, seed, ct2));
        ck_assert_int_eq(ts_ckks_ciphertext_level(ct2), 2);
        CHECK_PREC(&f, ct2, zr, f.slots, 16, "fused encode+encrypt (real, scale 2^30)");
        ck_assert_ts_status(ts_ckks_encrypt_sk_real(f.enc, f.sk, re, f.slots, 0, f.top + 1, 0x1p30,
                                                    f.prng, seed, ct2),
                            TS_ELEVEL);
        ck_assert_ts_status(
            ts_ckks_encrypt_sk_real(f.enc, f.sk, re, f.slots, 3, 0, 0x1p30, f.prng, seed, ct2),
            TS_EINVAL);
        /* the fused path gives the same words as encode + ts_ckks_encrypt_sk with
         * the same randomness (error folded into the integer coefficients):
         * full and sparse slots, small and > 2^62 coefficients */
        const double scales[3] = {0x1p30, 0x1p40, 0x1p61};
        for (int si = 0; si < 3; si++)
            for (size_t sl = f.slots; sl >= f.slots / 4; sl /= 4) {
                ts_prng_t *g1, *g2;
                const uint8_t gs[TS_SEED_BYTES] = {9, 8, 7, (uint8_t)si};
                ck_assert_ts_ok(ts_prng_new_seeded(gs, 77, &g1));
                ck_assert_ts_ok(ts_prng_new_seeded(gs, 77, &g2));
                for (size_t i = 0; i < sl; i++)
                    re[i] = (si == 2 ? 6.0 : 0.0) + 1.5 * sin(0.3 * (double)i);
                ts_ckks_plaintext_t *pt = NULL;
                ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, f.top, &pt));
                ts_status_t a1 = ts_ckks_encrypt_sk_real(f.enc, f.sk, re, sl, sl, f.top, scales[si],
                                                         g1, NULL, ct);
                ts_status_t a2 = ts_ckks_encode_real(f.enc, re, sl, sl, f.top, scales[si], pt);
                ck_assert_int_eq(a1, a2);
                if (a1 == TS_OK) {
                    ck_assert_ts_ok(ts_ckks_encrypt_sk(f.sk, pt, g2, NULL, ct2));
                    for (int c = 0; c < 2; c++)
                        ck_assert_msg(ts_poly_equal(ts_ckks_ciphertext_poly(ct, c),
                                                    ts_ckks_ciphertext_poly(ct2, c)),
                                      "fused != encode+encrypt: scale 2^%d slots %zu part %d",
                                      si == 0   ? 30
                                      : si == 1 ? 40
                                                : 61,
                                      sl, c);
                }
                ts_ckks_plaintext_free(pt);
                ts_prng_free(g1);
                ts_prng_free(g2);
            }
        ts_free(re);
        ts_free(zr);
        ts_ckks_ciphertext_free(ct);
        ts_ckks_ciphertext_free(ct2);
    }
    /* public-key encryption: known answer recorded before its scratch reuse
     * (fresh v and e polynomials per call), at the top level twice (the second
     * reuses the ciphertext's scratch) and at level 2 */
    {
        ts_prng_t *g;
        const uint8_t gs[TS_SEED_BYTES] = {5, 4, 3};
        ck_assert_ts_ok(ts_prng_new_seeded(gs, 3, &g));
        ts_ckks_plaintext_t *pt = NULL;
        ts_ckks_ciphertext_t *ct = NULL;
        ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, f.top, &pt));
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &ct));
        uint64_t h = 0xcbf29ce484222325ULL;
        const int lv[3] = {f.top, f.top, 2};
        for (int r = 0; r < 3; r++) {
            ck_assert_ts_ok(ts_ckks_encode(f.enc, z, f.slots, 0, lv[r], 0x1p40, pt));
            ck_assert_ts_ok(ts_ckks_encrypt_pk(f.pk, pt, g, ct));
            ck_assert_int_eq(ts_ckks_ciphertext_degree(ct), 1);
            for (int c = 0; c < 2; c++) {
                const ts_poly_t *x = ts_ckks_ciphertext_poly(ct, c);
                uint64_t *hx = ts_test_poly_host(x);
                const uint8_t *b = (const uint8_t *)hx;
                for (size_t i = 0; i < (size_t)x->nq * ts_ring_n(x->ring) * 8; i++)
                    h = (h ^ b[i]) * 0x100000001b3ULL;
                ts_free(hx);
            }
        }
        CHECK_PREC(&f, ct, z, f.slots, 24, "pk encryption (KAT run)");
        ck_assert_uint_eq(h, PK_ENC_KAT);
        ts_ckks_ciphertext_free(ct);
        ts_ckks_plaintext_free(pt);
        ts_prng_free(g);
    }
    /* sparse slot counts */
    for (size_t slots = 1; slots < f.slots; slots *= 4) {
        ts_ckks_ciphertext_t *ct = enc_vec(&f, z, slots, f.top);
        ck_assert_uint_eq(ts_ckks_ciphertext_slots(ct), slots);
        CHECK_PREC(&f, ct, z, slots, 22, "sparse slots");
        ts_ckks_ciphertext_free(ct);
    }
    ts_free(z);
    fx_clear(&f);
}
END_TEST

START_TEST(test_add_sub_plain_const)
{
    fx_t f;
    fx_init(&f, "test-n10");
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *y = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 2);
    fill(y, n, 3);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *b = enc_vec(&f, y, n, f.top);
    ts_ckks_ciphertext_t *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));

    ck_assert_ts_ok(ts_ckks_add(f.ev, a, b, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] + y[i];
    CHECK_PREC(&f, o, w, n, 21, "add");
    ck_assert_ts_ok(ts_ckks_sub(f.ev, a, b, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] - y[i];
    CHECK_PREC(&f, o, w, n, 21, "sub");
    ck_assert_ts_ok(ts_ckks_neg(f.ev, a, o));
    for (size_t i = 0; i < n; i++)
        w[i] = -x[i];
    CHECK_PREC(&f, o, w, n, 22, "neg");

    ts_ckks_plaintext_t *pt = NULL;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, f.top, &pt));
    ck_assert_ts_ok(ts_ckks_encode(f.enc, y, n, 0, f.top, 0x1p40, pt));
    ck_assert_ts_ok(ts_ckks_add_plain(f.ev, a, pt, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] + y[i];
    CHECK_PREC(&f, o, w, n, 22, "add_plain");
    ck_assert_ts_ok(ts_ckks_sub_plain(f.ev, a, pt, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] - y[i];
    CHECK_PREC(&f, o, w, n, 22, "sub_plain");
    /* pt x ct at scale q_top, rescaled back to 2^40 */
    ck_assert_ts_ok(
        ts_ckks_encode(f.enc, y, n, 0, f.top, (double)ts_ckks_params_q(f.p, f.top), pt));
    ck_assert_ts_ok(ts_ckks_mul_plain(f.ev, a, pt, o));
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    ck_assert_int_eq(ts_ckks_ciphertext_level(o), f.top - 1);
    ck_assert(fabs(ts_ckks_ciphertext_scale(o) - 0x1p40) <= 0x1p40 * 0x1p-40);
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] * y[i];
    CHECK_PREC(&f, o, w, n, 21, "mul_plain + rescale");

    double complex c = 0.3 - 0.45 * I;
    ck_assert_ts_ok(ts_ckks_add_const(f.ev, a, c, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] + c;
    CHECK_PREC(&f, o, w, n, 22, "add_const complex");
    ck_assert_ts_ok(ts_ckks_mul_const(f.ev, a, -1.75, 0, o));
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    for (size_t i = 0; i < n; i++)
        w[i] = -1.75 * x[i];
    CHECK_PREC(&f, o, w, n, 21, "mul_const real");
    ck_assert_ts_ok(ts_ckks_mul_const(f.ev, a, c, 0, o));
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    for (size_t i = 0; i < n; i++)
        w[i] = c * x[i];
    CHECK_PREC(&f, o, w, n, 21, "mul_const complex");
    ck_assert_ts_ok(ts_ckks_mul_const(f.ev, a, I, 0, a)); /* aliasing */
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, a, a));
    for (size_t i = 0; i < n; i++)
        w[i] = I * x[i];
    CHECK_PREC(&f, a, w, n, 21, "mul_const i in place");
    ck_assert_ts_ok(ts_ckks_mul_int(f.ev, b, -3, o));
    for (size_t i = 0; i < n; i++)
        w[i] = -3.0 * y[i];
    CHECK_PREC(&f, o, w, n, 20, "mul_int");
    /* drop a level: scale and values unchanged */
    ck_assert_ts_ok(ts_ckks_drop_level(f.ev, b, 2, o));
    ck_assert_int_eq(ts_ckks_ciphertext_level(o), f.top - 2);
    CHECK_PREC(&f, o, y, n, 22, "drop_level");

    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(b);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    ts_free(y);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

START_TEST(test_mul_relin_rescale)
{
    fx_t f;
    fx_init(&f, "test-n10");
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *y = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 4);
    fill(y, n, 5);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *b = enc_vec(&f, y, n, f.top);
    ts_ckks_ciphertext_t *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] * y[i];
    /* degree 2 decrypts with s^2 */
    ck_assert_ts_ok(ts_ckks_mul(f.ev, a, b, o));
    ck_assert_int_eq(ts_ckks_ciphertext_degree(o), 2);
    ck_assert(ts_ckks_ciphertext_scale(o) == 0x1p80);
    CHECK_PREC(&f, o, w, n, 21, "mul (degree 2)");
    ck_assert_ts_ok(ts_ckks_relinearize(f.ev, o, o));
    ck_assert_int_eq(ts_ckks_ciphertext_degree(o), 1);
    CHECK_PREC(&f, o, w, n, 21, "relinearize");
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    CHECK_PREC(&f, o, w, n, 21, "rescale");
    /* repeated squaring down the chain: x^(2^k) */
    ck_assert_ts_ok(ts_ckks_ciphertext_copy(o, a));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i];
    for (int k = 0; k < f.top; k++) {
        ck_assert_ts_ok(ts_ckks_mul_relin(f.ev, o, o, o));
        ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
        for (size_t i = 0; i < n; i++)
            w[i] *= w[i];
        CHECK_PREC(&f, o, w, n, 18 - k, "repeated squaring");
    }
    ck_assert_int_eq(ts_ckks_ciphertext_level(o), 0);
    ck_assert_ts_status(ts_ckks_rescale(f.ev, o, o), TS_ELEVEL);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(b);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    ts_free(y);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

/* Words of polys 0..degree of a and b equal (same shape and form). */
static void assert_same_words(ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *b, const char *what)
{
    ck_assert_int_eq(ts_ckks_ciphertext_level(a), ts_ckks_ciphertext_level(b));
    ck_assert_int_eq(ts_ckks_ciphertext_degree(a), ts_ckks_ciphertext_degree(b));
    ck_assert_msg(ts_ckks_ciphertext_scale(a) == ts_ckks_ciphertext_scale(b), "%s: scale", what);
    for (int i = 0; i <= ts_ckks_ciphertext_degree(a); i++) {
        ts_poly_t *x = ts_ckks_ciphertext_poly(a, i), *y = ts_ckks_ciphertext_poly(b, i);
        ck_assert(x->is_ntt == y->is_ntt);
        ck_assert_uint_eq(x->nq, y->nq);
        ck_assert_msg(ts_poly_equal(x, y), "%s: poly %d differs", what, i);
    }
}

/*
 * The out-of-place forms read only what they keep: drop_to_level copies the
 * kept limbs, rescale reads a and writes out (degree 1 and 2), mul_const_at
 * multiplies the kept limbs. Each is word for word the copy-then-in-place
 * result, also when out starts at a different shape (level 0, or above) and
 * when out aliases a.
 */
START_TEST(test_out_of_place_exact)
{
    fx_t f;
    fx_init(&f, "test-n10");
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *y = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 21);
    fill(y, n, 22);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *b = enc_vec(&f, y, n, f.top);
    ts_ckks_ciphertext_t *ref = NULL, *o = NULL, *hi = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &ref));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &o));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &hi));
    for (int lv = 0; lv < f.top; lv++) {
        /* drop */
        ck_assert_ts_ok(ts_ckks_ciphertext_copy(ref, a));
        ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, ref, lv, ref));
        ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, a, lv, o));
        assert_same_words(o, ref, "drop_to_level");
        /* mul_const_at, into a fresh level-0 ciphertext and into one above */
        double cs = (double)ts_ckks_params_q(f.p, (size_t)lv);
        ck_assert_ts_ok(ts_ckks_mul_const(f.ev, ref, -0.375 + 0.25 * I, cs, ref));
        ck_assert_ts_ok(ts__ckks_mul_const_at(f.ev, a, -0.375 + 0.25 * I, cs, lv, o));
        assert_same_words(o, ref, "mul_const_at");
        ck_assert_ts_ok(ts__ckks_mul_const_at(f.ev, a, -0.375 + 0.25 * I, cs, lv, hi));
        assert_same_words(hi, ref, "mul_const_at (out above)");
        ck_assert_ts_ok(ts_ckks_ciphertext_copy(hi, a));
        ck_assert_ts_ok(ts__ckks_mul_const_at(f.ev, hi, -0.375 + 0.25 * I, cs, lv, hi));
        assert_same_words(hi, ref, "mul_const_at (in place)");
        ck_assert_ts_ok(ts_ckks_ciphertext_copy(hi, a)); /* back to the top for the next round */
    }
    /* mul_lo: the product at the lower level = the product of the dropped one */
    ts_ckks_ciphertext_t *bl = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &bl));
    for (int lv = 0; lv <= f.top; lv += f.top > 2 ? f.top / 2 : 1) {
        ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, b, lv, bl));
        ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, a, lv, ref));
        ck_assert_ts_ok(ts_ckks_mul(f.ev, ref, bl, ref));
        ck_assert_ts_ok(ts__ckks_mul_lo(f.ev, a, bl, o));
        assert_same_words(o, ref, "mul_lo (a higher)");
        ck_assert_ts_ok(ts__ckks_mul_lo(f.ev, bl, a, o));
        ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, a, lv, ref));
        ck_assert_ts_ok(ts_ckks_mul(f.ev, bl, ref, ref));
        assert_same_words(o, ref, "mul_lo (b higher)");
    }
    ts_ckks_ciphertext_free(bl);
    /* mul_const_add: acc += c a on acc's (lower) limbs = the sum of the two products */
    for (int lv = 0; lv <= f.top; lv += f.top > 2 ? f.top / 2 : 1) {
        double cs = (double)ts_ckks_params_q(f.p, (size_t)lv);
        ck_assert_ts_ok(ts__ckks_mul_const_at(f.ev, b, 0.625, cs, lv, o));
        ck_assert_ts_ok(ts__ckks_mul_const_at(f.ev, a, -0.8125, cs, lv, ref));
        ck_assert_ts_ok(ts_ckks_add(f.ev, ref, o, ref));
        ck_assert_ts_ok(ts__ckks_mul_const_add(f.ev, a, -0.8125, cs, o));
        assert_same_words(o, ref, "mul_const_add");
    }
    ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, a, 0, o));
    ck_assert_ts_status(ts__ckks_mul_const_add(f.ev, o, 1.0, 2.0, hi), TS_ELEVEL); /* acc above a */
    ck_assert_ts_status(ts__ckks_mul_const_add(f.ev, a, 1.0, 0.5, o), TS_ESCALE);
    ck_assert_ts_status(ts__ckks_mul_const_at(f.ev, a, 1.0, 0.0, f.top + 1, o), TS_ELEVEL);
    ck_assert_ts_status(ts__ckks_mul_const_at(f.ev, a, 1.0, 0.0, -1, o), TS_ELEVEL);
    /* rescale: degree 1 and degree 2 (an unrelinearized product) */
    ts_ckks_ciphertext_t *d2 = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &d2));
    ck_assert_ts_ok(ts_ckks_mul(f.ev, a, b, d2));
    ts_ckks_ciphertext_t *srcs[2] = {a, d2};
    for (int k = 0; k < 2; k++) {
        ck_assert_ts_ok(ts_ckks_ciphertext_copy(ref, srcs[k]));
        ck_assert_ts_ok(ts_ckks_rescale(f.ev, ref, ref));
        ts_ckks_ciphertext_t *fresh = NULL;
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &fresh));
        ck_assert_ts_ok(ts_ckks_rescale(f.ev, srcs[k], fresh));
        assert_same_words(fresh, ref, "rescale out of place");
        ck_assert_int_eq(ts_ckks_ciphertext_level(srcs[k]), f.top); /* the input is untouched */
        ts_ckks_ciphertext_free(fresh);
    }
    /* and the rescaled product still decrypts to x y */
    ck_assert_ts_ok(ts_ckks_relinearize(f.ev, ref, ref));
    for (size_t i = 0; i < n; i++)
        x[i] *= y[i];
    CHECK_PREC(&f, ref, x, n, 20, "rescale out of place, degree 2");
    ts_ckks_ciphertext_free(d2);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(b);
    ts_ckks_ciphertext_free(ref);
    ts_ckks_ciphertext_free(o);
    ts_ckks_ciphertext_free(hi);
    ts_free(x);
    ts_free(y);
    fx_clear(&f);
}
END_TEST

START_TEST(test_rotations)
{
    fx_t f;
    fx_init(&f, "test-n10");
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 6);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top);
    ts_ckks_ciphertext_t *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    for (size_t s = 0; s < NSTEPS; s++) {
        int64_t k = rot_steps[s];
        ck_assert_ts_ok(ts_ckks_rotate(f.ev, a, k, o));
        for (size_t i = 0; i < n; i++)
            w[i] = x[(size_t)(((int64_t)i + k) % (int64_t)n + (int64_t)n) % n];
        char what[64];
        snprintf(what, sizeof(what), "rotate %lld", (long long)k);
        CHECK_PREC(&f, o, w, n, 21, what);
    }
    ck_assert_ts_ok(ts_ckks_conjugate(f.ev, a, o));
    for (size_t i = 0; i < n; i++)
        w[i] = conj(x[i]);
    CHECK_PREC(&f, o, w, n, 21, "conjugate");
    /* hoisted: one decomposition, many steps; equal to the single rotations */
    ts_ckks_ciphertext_t *outs[NSTEPS];
    int64_t steps[NSTEPS];
    for (size_t s = 0; s < NSTEPS; s++) {
        steps[s] = rot_steps[s];
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &outs[s]));
    }
    ck_assert_ts_ok(ts_ckks_rotate_hoisted(f.ev, a, steps, NSTEPS, outs));
    for (size_t s = 0; s < NSTEPS; s++) {
        for (size_t i = 0; i < n; i++)
            w[i] = x[(size_t)(((int64_t)i + steps[s]) % (int64_t)n + (int64_t)n) % n];
        CHECK_PREC(&f, outs[s], w, n, 21, "hoisted rotation");
        ts_ckks_ciphertext_free(outs[s]);
    }
    /* a rotation without its key, a degree-2 input */
    ck_assert_ts_status(ts_ckks_rotate(f.ev, a, 6, o), TS_ENOKEY);
    ck_assert_ts_ok(ts_ckks_mul(f.ev, a, a, o));
    ck_assert_ts_status(ts_ckks_rotate(f.ev, o, 1, o), TS_EINVAL);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

/* Level-capped rotation keys: they rotate at and below their level like full
 * keys, refuse higher levels, take the memory the formula says, widen (never
 * narrow) when regenerated, and survive serialization with their cap. */
START_TEST(test_capped_rotations)
{
    fx_t f;
    fx_init(&f, "test-n10");
    size_t n = f.slots;
    const int cap = 2;
    ck_assert_int_gt(f.top, cap + 1);
    const int64_t steps[2] = {1, 5};
    const int levels[2] = {cap, cap};
    ts_ckks_evalkeys_t *ek = NULL, *ek2 = NULL;
    ts_ckks_evaluator_t *ev = NULL, *ev2 = NULL;
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f.p, &ek));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations_at(ek, f.sk, steps, levels, 2, f.prng));
    ck_assert_int_eq(ts_ckks_evalkeys_rotation_level(ek, 1), cap);
    ck_assert_int_eq(ts_ckks_evalkeys_rotation_level(ek, 5), cap);
    ck_assert_int_eq(ts_ckks_evalkeys_rotation_level(ek, 2), -1);
    /* memory: 2 keys x 2 halves x ceil((cap + 1) / alpha) digits x (cap + 1 + #P) limbs */
    const ts_rlwe_ksk_t *k1 =
        ts_ckks_evalkeys_galois(ek, ts_ring_galois_rotate(ts_ckks_params_ring(f.p), 1));
    ck_assert_ptr_nonnull(k1);
    ck_assert_uint_eq(k1->kq, (unsigned)cap + 1);
    ck_assert_uint_eq(k1->ndig, (cap + k1->alpha) / k1->alpha);
    size_t np = ts_ckks_params_p_count(f.p), N = 2 * n;
    ck_assert_uint_eq(ts_ckks_evalkeys_bytes(ek),
                      2 * 2 * (size_t)k1->ndig * (cap + 1 + np) * N * sizeof(uint64_t));
    size_t full = 2 * 2 * (size_t)k1->dnum * (f.top + 1 + np) * N * sizeof(uint64_t);
    ck_assert_uint_lt(ts_ckks_evalkeys_bytes(ek), full / 2);

    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 9);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *o = NULL, *o2 = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o2));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, ek, &ev));
    /* above the cap: refused */
    ck_assert_ts_status(ts_ckks_rotate(ev, a, 1, o), TS_ELEVEL);
    ts_ckks_ciphertext_t *outs[2] = {o, o2};
    ck_assert_ts_status(ts_ckks_rotate_hoisted(ev, a, steps, 2, outs), TS_ELEVEL);
    /* at and below the cap: the rotation, single and hoisted */
    for (int lv = cap; lv >= 0; lv--) {
        ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, a, lv, a));
        for (int s = 0; s < 2; s++) {
            ck_assert_ts_ok(ts_ckks_rotate(ev, a, steps[s], o));
            for (size_t i = 0; i < n; i++)
                w[i] = x[(i + (size_t)steps[s]) % n];
            CHECK_PREC(&f, o, w, n, 19, "capped rotation");
        }
        ck_assert_ts_ok(ts_ckks_rotate_hoisted(ev, a, steps, 2, outs));
        for (size_t i = 0; i < n; i++)
            w[i] = x[(i + 5) % n];
        CHECK_PREC(&f, o2, w, n, 19, "capped hoisted rotation");
    }
    /* serialized with the cap; the copy rotates bit-identically */
    uint8_t *blob = NULL, *c1 = NULL, *c2 = NULL;
    size_t bsize = 0, s1 = 0, s2 = 0;
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &blob, &bsize));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f.p, &ek2));
    ck_assert_ts_ok(ts_ckks_galois_keys_deserialize(ek2, blob, bsize));
    ck_assert_int_eq(ts_ckks_evalkeys_rotation_level(ek2, 5), cap);
    ck_assert_uint_eq(ts_ckks_evalkeys_bytes(ek2), ts_ckks_evalkeys_bytes(ek));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, ek2, &ev2));
    ck_assert_ts_ok(ts_ckks_rotate(ev, a, 5, o));
    ck_assert_ts_ok(ts_ckks_rotate(ev2, a, 5, o2));
    ck_assert_ts_ok(ts_ckks_ciphertext_serialize(o, 0, &c1, &s1));
    ck_assert_ts_ok(ts_ckks_ciphertext_serialize(o2, 0, &c2, &s2));
    ck_assert_uint_eq(s1, s2);
    ck_assert(memcmp(c1, c2, s1) == 0);
    ts_free(c1);
    ts_free(c2);
    /* a truncated blob is refused, ek2 keeps its keys */
    ck_assert_int_ne(ts_ckks_galois_keys_deserialize(ek2, blob, bsize - 1), TS_OK);
    ck_assert_int_eq(ts_ckks_evalkeys_rotation_level(ek2, 5), cap);
    ts_free(blob);
    /* widening replaces a narrow key; a narrower request keeps the wide one */
    const int64_t one = 1;
    const int top = f.top, zero = 0;
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations_at(ek, f.sk, &one, &top, 1, f.prng));
    ck_assert_int_eq(ts_ckks_evalkeys_rotation_level(ek, 1), f.top);
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations_at(ek, f.sk, &one, &zero, 1, f.prng));
    ck_assert_int_eq(ts_ckks_evalkeys_rotation_level(ek, 1), f.top);
    ts_ckks_evaluator_free(ev);
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, ek, &ev));
    ts_ckks_ciphertext_free(a);
    a = enc_vec(&f, x, n, f.top);
    ck_assert_ts_ok(ts_ckks_rotate(ev, a, 1, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[(i + 1) % n];
    CHECK_PREC(&f, o, w, n, 19, "widened rotation key");
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_ckks_ciphertext_free(o2);
    ts_ckks_evaluator_free(ev);
    ts_ckks_evaluator_free(ev2);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_evalkeys_free(ek2);
    ts_free(x);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

START_TEST(test_checks)
{
    fx_t f;
    fx_init(&f, "test-n10");
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 7);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *b = enc_vec(&f, x, n, f.top - 1);
    ts_ckks_ciphertext_t *s = enc_vec(&f, x, 16, f.top), *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    ck_assert_ts_status(ts_ckks_add(f.ev, a, b, o), TS_ELEVEL);
    ck_assert_ts_status(ts_ckks_mul(f.ev, a, b, o), TS_ELEVEL);
    ck_assert_ts_status(ts_ckks_add(f.ev, a, s, o), TS_EMISMATCH);
    ck_assert_ts_ok(ts_ckks_mul_const(f.ev, a, 2.0, 0, o));
    ck_assert_ts_status(ts_ckks_add(f.ev, a, o, o), TS_ESCALE);
    ck_assert_ts_status(ts_ckks_drop_level(f.ev, a, f.top + 1, o), TS_ELEVEL);
    ck_assert_ts_status(ts_ckks_drop_to_level(f.ev, b, f.top, o), TS_ELEVEL);
    ts_ckks_plaintext_t *pt = NULL;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, 0, &pt));
    ck_assert_ts_ok(ts_ckks_encode(f.enc, x, n, 0, 0, 0x1p40, pt));
    ck_assert_ts_status(ts_ckks_mul_plain(f.ev, a, pt, o), TS_ELEVEL);
    /* a ciphertext whose polynomial is in coefficient form (e.g. a bad decoding) */
    ts_poly_t *c0 = ts_ckks_ciphertext_poly(b, 0);
    c0->is_ntt = false;
    ck_assert_ts_status(ts_ckks_add(f.ev, b, b, o), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_rescale(f.ev, b, o), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_rotate(f.ev, b, 1, o), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_decrypt(f.sk, b, pt), TS_EINVAL);
    c0->is_ntt = true;
    /* another parameter set */
    fx_t g;
    fx_init(&g, "test-n11");
    ts_ckks_ciphertext_t *c = enc_vec(&g, x, 8, g.top);
    ck_assert_ts_status(ts_ckks_add(f.ev, a, c, o), TS_EMISMATCH);
    ck_assert_ts_status(ts_ckks_rescale(f.ev, c, o), TS_EMISMATCH);
    /* no keys */
    ts_ckks_evaluator_t *bare = NULL;
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, NULL, &bare));
    ck_assert_ts_status(ts_ckks_mul_relin(bare, a, a, o), TS_ENOKEY);
    ck_assert_ts_status(ts_ckks_rotate(bare, a, 1, o), TS_ENOKEY);
    ts_ckks_evaluator_free(bare);
    ts_ckks_ciphertext_free(c);
    fx_clear(&g);
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(b);
    ts_ckks_ciphertext_free(s);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    fx_clear(&f);
}
END_TEST

static double complex poly_ref(const double *c, size_t d, double complex x)
{
    double complex acc = 0;
    for (size_t i = d + 1; i-- > 0;)
        acc = acc * x + c[i];
    return acc;
}

START_TEST(test_poly_power_basis)
{
    fx_t f;
    fx_init(&f, "test-n11");
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 8);
    for (size_t i = 0; i < n; i++)
        x[i] = creal(x[i]); /* real inputs in [-0.7, 0.7] */
    static const double c4[] = {0.5, -1.25, 0.75, 0.3, -0.6};
    static const double c7[] = {0.1, 1.0, 0.0, -0.5, 0.25, 0.0, 0.2, -0.1};
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    struct {
        const double *c;
        size_t d;
        ts_ckks_poly_method_t m;
        size_t k;
        int depth; /* levels consumed */
        const char *name;
    } cases[] = {
        {c4, 4, TS_CKKS_POLY_HORNER, 0, 4, "horner deg 4"},
        {c4, 4, TS_CKKS_POLY_BALANCED, 0, 3, "balanced deg 4"},
        {c4, 4, TS_CKKS_POLY_PS, 2, 3, "PS k=2 deg 4"},
        {c7, 7, TS_CKKS_POLY_AUTO, 0, 4, "auto deg 7"},
        {c7, 7, TS_CKKS_POLY_BALANCED, 0, 4, "balanced deg 7"},
        {c7, 7, TS_CKKS_POLY_PS, 2, 4, "PS k=2 deg 7"},
        {c7, 7, TS_CKKS_POLY_HORNER, 0, 7, "horner deg 7"},
    };
    for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
        ck_assert_ts_ok(
            ts_ckks_eval_poly(f.ev, a, cases[t].c, cases[t].d, cases[t].m, cases[t].k, 0, o));
        for (size_t i = 0; i < n; i++)
            w[i] = poly_ref(cases[t].c, cases[t].d, x[i]);
        ck_assert_msg(ts_ckks_ciphertext_level(o) >= f.top - cases[t].depth,
                      "%s: exit level %d, expected >= %d", cases[t].name,
                      ts_ckks_ciphertext_level(o), f.top - cases[t].depth);
        ck_assert(ts_ckks_ciphertext_scale(o) == ts_ckks_params_scale(f.p));
        CHECK_PREC(&f, o, w, n, 16, cases[t].name);
    }
    /* not enough levels: Horner of degree 7 at level 3 */
    ts_ckks_ciphertext_t *low = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &low));
    ck_assert_ts_ok(ts_ckks_drop_to_level(f.ev, a, 3, low));
    ck_assert_ts_status(ts_ckks_eval_poly(f.ev, low, c7, 7, TS_CKKS_POLY_HORNER, 0, 0, o),
                        TS_ELEVEL);
    ts_ckks_ciphertext_free(low);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

static double f_sigmoid(double x, void *ctx)
{
    (void)ctx;
    return 1.0 / (1.0 + exp(-x));
}

/* sum_{k <= d} c_k T_k(y) in doubles (Clenshaw): the series' reference */
static double clenshaw(const double *c, size_t d, double y)
{
    double b1 = 0, b2 = 0;
    for (size_t k = d; k >= 1; k--) {
        double t = 2 * y * b1 - b2 + c[k];
        b2 = b1;
        b1 = t;
    }
    return y * b1 - b2 + c[0];
}

START_TEST(test_poly_chebyshev)
{
    fx_t f;
    fx_init(&f, "test-n11");
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 9);
    const double lo = -6, hi = 6;
    for (size_t i = 0; i < n; i++)
        x[i] = creal(x[i]) / 0.7 * 6.0; /* real inputs in [-6, 6] */
    double c[16];
    const size_t d = 15;
    ck_assert_ts_ok(ts_ckks_chebyshev_fit(f_sigmoid, NULL, lo, hi, d, c));
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    ck_assert_ts_ok(ts_ckks_eval_chebyshev(f.ev, a, c, d, lo, hi, 0, o));
    /* reference: the same Chebyshev series in doubles (Clenshaw) */
    double fit_err = 0;
    for (size_t i = 0; i < n; i++) {
        w[i] = clenshaw(c, d, (2 * creal(x[i]) - (lo + hi)) / (hi - lo));
        fit_err = fmax(fit_err, fabs(creal(w[i]) - f_sigmoid(creal(x[i]), NULL)));
    }
    ck_assert_msg(fit_err < 1e-3, "Chebyshev fit error %g", fit_err);
    /* change of variable (1) + depth ceil(log2 16) + 1 */
    ck_assert_int_ge(ts_ckks_ciphertext_level(o), f.top - 6);
    CHECK_PREC(&f, o, w, n, 14, "chebyshev sigmoid deg 15 on [-6, 6]");
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

static double f_sig4(double x, void *ctx)
{
    (void)ctx;
    return 1.0 / (1.0 + exp(-4.0 * x));
}

/*
 * A Chebyshev series at levels whose primes sit well above the scale
 * (test-boot-n12: 45-bit primes at levels 7..9 under Delta = 2^40): every
 * rescale of a basis product would leave scale^2 / q, and the giants'
 * squarings compound it (2^35, 2^30, 2^20, 2^0) until a rescale fails with
 * TS_ESCALE; the evaluator corrects each product's scale first (an integer
 * multiple, no level). Degree 56 (depth 6) from level 9, against Clenshaw.
 */
START_TEST(test_poly_chebyshev_wide_primes)
{
    fx_t f;
    fx_init(&f, "test-boot-n12");
    size_t n = 64;
    int lv = 9;
    ck_assert(fabs(log2((double)ts_ckks_params_q(f.p, (size_t)lv)) - 45.0) < 0.1);
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 13);
    for (size_t i = 0; i < n; i++)
        x[i] = creal(x[i]) / 0.7; /* real inputs in [-1, 1] */
    double c[57];
    const size_t d = 56;
    ck_assert_ts_ok(ts_ckks_chebyshev_fit(f_sig4, NULL, -1.0, 1.0, d, c));
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, lv), *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, lv, &o));
    ck_assert_ts_ok(ts_ckks_eval_chebyshev(f.ev, a, c, d, -1.0, 1.0, 0, o));
    for (size_t i = 0; i < n; i++)
        w[i] = clenshaw(c, d, creal(x[i]));
    ck_assert_int_ge(ts_ckks_ciphertext_level(o), lv - 6);
    ck_assert(fabs(ts_ckks_ciphertext_scale(o) / ts_ckks_params_scale(f.p) - 1.0) < 1e-9);
    CHECK_PREC(&f, o, w, n, 14, "chebyshev deg 56 from 45-bit levels");
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

START_TEST(test_linear_transform)
{
    fx_t f;
    fx_init(&f, "test-n10");
    /* (a) a dense 16 x 16 matrix on 16 slots: 16 diagonals, BSGS 4 x 4 */
    size_t n = 16;
    double complex *m = ts_malloc(sizeof(double complex) * n * n);
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * f.slots);
    fill(m, n * n, 10);
    fill(x, n, 11);
    ts_ckks_lintrans_t *lt = NULL;
    ck_assert_ts_ok(ts_ckks_lintrans_new(f.enc, m, n, f.top, 0, 0, &lt));
    int64_t steps[64];
    size_t ns = 64;
    ck_assert_ts_ok(ts_ckks_lintrans_steps(lt, steps, &ns));
    ck_assert_uint_eq(ns, 6); /* baby 1, 2, 3; giant 4, 8, 12 */
    for (size_t i = 0; i < ns; i++)
        ck_assert_msg(ts_ckks_evalkeys_has_rotation(f.ek, steps[i]), "no key for step %lld",
                      (long long)steps[i]);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    ck_assert_ts_ok(ts_ckks_lintrans_apply(f.ev, lt, a, o));
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    for (size_t i = 0; i < n; i++) {
        w[i] = 0;
        for (size_t j = 0; j < n; j++)
            w[i] += m[i * n + j] * x[j];
    }
    CHECK_PREC(&f, o, w, n, 18, "16x16 BSGS transform");
    ts_ckks_lintrans_free(lt);
    ts_ckks_ciphertext_free(a);

    /* (b) a banded matrix on all 512 slots (diagonals 0, 1, 511) */
    size_t s = f.slots;
    double complex *mb = ts_calloc(s * s, sizeof(double complex));
    double complex *xb = ts_malloc(sizeof(double complex) * s);
    fill(xb, s, 12);
    for (size_t i = 0; i < s; i++) {
        mb[i * s + i] = 0.5;
        mb[i * s + (i + 1) % s] = 0.25 * I;
        mb[i * s + (i + s - 1) % s] = -0.25;
    }
    ck_assert_ts_ok(ts_ckks_lintrans_new(f.enc, mb, s, f.top, 0, 0, &lt));
    a = enc_vec(&f, xb, s, f.top);
    ck_assert_ts_ok(ts_ckks_lintrans_apply(f.ev, lt, a, o));
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    for (size_t i = 0; i < s; i++)
        w[i] = 0.5 * xb[i] + 0.25 * I * xb[(i + 1) % s] - 0.25 * xb[(i + s - 1) % s];
    CHECK_PREC(&f, o, w, s, 19, "banded transform");
    ts_ckks_lintrans_free(lt);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_free(mb);
    ts_free(xb);
    ts_free(m);
    ts_free(x);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

START_TEST(test_sparse_secret)
{
    /* the sparse-secret path (h = 32): keys, encryption, product, rotation */
    fx_t f;
    fx_init(&f, "test-n11-sparse");
    ck_assert_int_eq(ts_ckks_params_secret(f.p), TS_CKKS_SECRET_SPARSE_TERNARY);
    size_t n = f.slots;
    double complex *x = ts_malloc(sizeof(double complex) * n);
    double complex *w = ts_malloc(sizeof(double complex) * n);
    fill(x, n, 13);
    ts_ckks_ciphertext_t *a = enc_vec(&f, x, n, f.top), *o = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, f.top, &o));
    CHECK_PREC(&f, a, x, n, 22, "sparse secret: encryption");
    ck_assert_ts_ok(ts_ckks_mul_relin(f.ev, a, a, o));
    ck_assert_ts_ok(ts_ckks_rescale(f.ev, o, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[i] * x[i];
    CHECK_PREC(&f, o, w, n, 21, "sparse secret: mul_relin + rescale");
    ck_assert_ts_ok(ts_ckks_rotate(f.ev, a, 3, o));
    for (size_t i = 0; i < n; i++)
        w[i] = x[(i + 3) % n];
    CHECK_PREC(&f, o, w, n, 21, "sparse secret: rotate 3");
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(o);
    ts_free(x);
    ts_free(w);
    fx_clear(&f);
}
END_TEST

/* Every allocation of object creation may fail: TS_ENOMEM, NULL, nothing leaked. */
START_TEST(test_alloc_failures)
{
    fx_t f;
    fx_init(&f, "test-n10");
    for (int what = 0; what < 4; what++) {
        bool done = false;
        for (uint64_t k = 1; k < 400 && !done; k++) {
            int64_t live = ts_alloc_live();
            void *obj = NULL;
            ts_alloc_fail_after(k, true);
            ts_status_t st;
            switch (what) {
            case 0:
                st = ts_ckks_encoder_new(f.p, (ts_ckks_encoder_t **)&obj);
                break;
            case 1:
                st = ts_ckks_evaluator_new(f.p, f.ek, (ts_ckks_evaluator_t **)&obj);
                break;
            case 2:
                st = ts_ckks_ciphertext_new(f.p, f.top, (ts_ckks_ciphertext_t **)&obj);
                break;
            default:
                st = ts_ckks_keygen_secret(f.p, f.prng, (ts_ckks_secret_key_t **)&obj);
                break;
            }
            ts_alloc_fail_after(0, false);
            if (st == TS_OK) {
                switch (what) {
                case 0:
                    ts_ckks_encoder_free(obj);
                    break;
                case 1:
                    ts_ckks_evaluator_free(obj);
                    break;
                case 2:
                    ts_ckks_ciphertext_free(obj);
                    break;
                default:
                    ts_ckks_secret_key_free(obj);
                    break;
                }
                done = true;
            } else {
                ck_assert_msg(st == TS_ENOMEM, "object %d, failing allocation %llu: %s", what,
                              (unsigned long long)k, ts_status_name(st));
                ck_assert_ptr_null(obj);
            }
            ck_assert_msg(ts_alloc_live() == live, "object %d, failing allocation %llu: leak", what,
                          (unsigned long long)k);
        }
        ck_assert(done);
    }
    fx_clear(&f);
}
END_TEST

TS_TEST_SUITE(ckks_eval)
{
    Suite *s = suite_create("ckks_eval");
    TCase *tc = ts_tcase("eval", 0);
    tcase_add_test(tc, test_encrypt_decrypt);
    tcase_add_test(tc, test_add_sub_plain_const);
    tcase_add_test(tc, test_mul_relin_rescale);
    tcase_add_test(tc, test_out_of_place_exact);
    tcase_add_test(tc, test_rotations);
    tcase_add_test(tc, test_capped_rotations);
    tcase_add_test(tc, test_checks);
    tcase_add_test(tc, test_poly_power_basis);
    tcase_add_test(tc, test_poly_chebyshev);
    tcase_add_test(tc, test_poly_chebyshev_wide_primes);
    tcase_add_test(tc, test_linear_transform);
    tcase_add_test(tc, test_sparse_secret);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

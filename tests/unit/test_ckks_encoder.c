/*
 * CKKS encoder: encode/decode round trips (complex and real, full and sparse
 * slot counts, every level, several scales) against the input, with the
 * precision in bits checked against the bound of the rounding error.
 */
#include <complex.h>

#include "core/ckks/ckks.h"
#include "tests/unit/ts_test.h"

static ts_ckks_params_t *load(const char *name)
{
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/%s.yaml", root ? root : "", root ? "/" : "",
             name);
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ts_ckks_params_t *p = NULL;
    ts_cfg_error_t err;
    ts_status_t st = ts_ckks_params_load_file(path, true, &p, &err);
    ts_log_set_level(lv);
    ck_assert_msg(st == TS_OK, "loading %s: %s", path, ts_status_name(st));
    return p;
}

/* Deterministic test vectors in the unit disc. */
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

static double max_err(const double complex *a, const double complex *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = cabs(a[i] - b[i]);
        m = e > m ? e : m;
    }
    return m;
}

START_TEST(test_roundtrip_complex)
{
    static const char *const sets[] = {"test-n10", "test-n11", "fhelium-n14"};
    size_t nsets = ts_test_quick() ? 2 : 3;
    for (size_t si = 0; si < nsets; si++) {
        ts_ckks_params_t *p = load(sets[si]);
        ts_ckks_encoder_t *enc = NULL;
        ts_ckks_plaintext_t *pt = NULL;
        ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
        int top = ts_ckks_params_max_level(p);
        ck_assert_ts_ok(ts_ckks_plaintext_new(p, top, &pt));
        size_t n = ts_ckks_params_n(p);
        double complex *z = ts_malloc(sizeof(double complex) * n / 2);
        double complex *w = ts_malloc(sizeof(double complex) * n / 2);
        for (size_t slots = 1; slots <= n / 2; slots *= (slots < 16 ? 2 : 8)) {
            fill(z, slots, (unsigned)slots);
            for (int level = 0; level <= top; level += (top > 3 ? 3 : 1)) {
                double scale = ts_ckks_params_scale(p);
                ck_assert_ts_ok(ts_ckks_encode(enc, z, slots, slots, level, scale, pt));
                ck_assert_int_eq(ts_ckks_plaintext_level(pt), level);
                ck_assert_uint_eq(ts_ckks_plaintext_slots(pt), slots);
                ck_assert_ts_ok(ts_ckks_decode(enc, pt, w, slots));
                /* rounding: each used coefficient is off by <= 1/2, the slot
                 * error is at most (2 slots) / (2 scale); plus FFT roundoff */
                double bound = (double)slots / scale + 1e-12;
                double e = max_err(z, w, slots);
                ck_assert_msg(e <= bound, "%s slots %zu level %d: error 2^%.1f above bound 2^%.1f",
                              sets[si], slots, level, log2(e), log2(bound));
            }
        }
        ts_free(z);
        ts_free(w);
        ts_ckks_plaintext_free(pt);
        ts_ckks_encoder_free(enc);
        ts_ckks_params_free(p);
    }
}
END_TEST

START_TEST(test_roundtrip_real_and_large_scale)
{
    ts_ckks_params_t *p = load("test-n11");
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    int top = ts_ckks_params_max_level(p);
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, top, &pt));
    size_t slots = ts_ckks_params_slots(p);
    double *x = ts_malloc(sizeof(double) * slots), *y = ts_malloc(sizeof(double) * slots);
    for (size_t i = 0; i < slots; i++)
        x[i] = sin(0.37 * (double)i) * 100.0;
    /* a scale beyond 2^64 (coefficients above 2^64 take the exact big path) */
    double scales[] = {0x1p20, 0x1p40, 0x1p80, 0x1p150};
    for (size_t k = 0; k < 4; k++) {
        ck_assert_ts_ok(ts_ckks_encode_real(enc, x, slots, 0, top, scales[k], pt));
        ck_assert_ts_ok(ts_ckks_decode_real(enc, pt, y, slots));
        double e = 0;
        for (size_t i = 0; i < slots; i++)
            e = fmax(e, fabs(x[i] - y[i]));
        /* 100 * 2^-52 relative FFT error dominates at the large scales */
        double bound = (double)slots / scales[k] + 1e-10;
        ck_assert_msg(e <= bound, "scale 2^%.0f: error %g above %g", log2(scales[k]), e, bound);
    }
    /* fewer values than slots: the rest decode as zeros */
    ck_assert_ts_ok(ts_ckks_encode_real(enc, x, 3, 8, top, 0x1p40, pt));
    ck_assert_ts_ok(ts_ckks_decode_real(enc, pt, y, 8));
    for (size_t i = 0; i < 8; i++)
        ck_assert(fabs(y[i] - (i < 3 ? x[i] : 0.0)) < 1e-9);
    ts_free(x);
    ts_free(y);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_params_free(p);
}
END_TEST

START_TEST(test_encode_errors)
{
    ts_ckks_params_t *p = load("test-n10");
    ts_ckks_params_t *q = load("test-n11");
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL, *pq = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, 0, &pt));
    ck_assert_ts_ok(ts_ckks_plaintext_new(q, 0, &pq));
    double complex z[4] = {1, 2, 3, 4};
    ts_ckks_plaintext_t *bad = NULL;
    ck_assert_ts_status(ts_ckks_plaintext_new(p, 99, &bad), TS_ELEVEL);
    ck_assert_ptr_null(bad);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 4, 5, 0x1p30, pt), TS_ELEVEL);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 4, -1, 0x1p30, pt), TS_ELEVEL);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 3, 0, 0x1p30, pt), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 2, 0, 0x1p30, pt), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 1024, 0, 0x1p30, pt), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 4, 0, 0.5, pt), TS_ESCALE);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 4, 0, NAN, pt), TS_ESCALE);
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 4, 0, 0x1p30, pq), TS_EMISMATCH);
    z[2] = NAN;
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 4, 0, 0x1p30, pt), TS_EINVAL);
    z[2] = 1e30; /* 1e30 * 2^30 does not fit below q_0 / 2 (55 bits) */
    ck_assert_ts_status(ts_ckks_encode(enc, z, 4, 4, 0, 0x1p30, pt), TS_ERANGE);
    double complex w[8];
    ck_assert_ts_ok(ts_ckks_encode(enc, z, 1, 4, 0, 0x1p30, pt));
    ck_assert_ts_status(ts_ckks_decode(enc, pt, w, 8), TS_EINVAL);
    ck_assert_ts_status(ts_ckks_decode(enc, pq, w, 1), TS_EMISMATCH);
    ts_ckks_plaintext_free(pt);
    ts_ckks_plaintext_free(pq);
    ts_ckks_encoder_free(enc);
    ts_ckks_params_free(p);
    ts_ckks_params_free(q);
}
END_TEST

#define ENCODE_KAT 0x1b5983f20f518b40ULL

/* Known answer of the encoding (recorded with the scalar inverse FFT before
 * the AVX-512 stages): every slot count from 1 to N/2 at N = 2^11, two
 * scales, hashed over the plaintext words. The vector FFT must give the same
 * doubles, hence the same words. */
START_TEST(test_encode_kat)
{
    ts_ckks_params_t *p = load("test-n11");
    ts_ckks_encoder_t *enc;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    const int L = ts_ckks_params_max_level(p);
    const size_t n = ts_ckks_params_slots(p);
    ts_ckks_plaintext_t *pt;
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, L, &pt));
    double complex *z = ts_malloc(sizeof(double complex) * n);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t slots = 1; slots <= n; slots *= 2)
        for (int si = 0; si < 2; si++) {
            fill(z, slots, (unsigned)(slots + 17 * si));
            ck_assert_ts_ok(ts_ckks_encode(enc, z, slots, slots, L, si ? 0x1p50 : 0x1p30, pt));
            const ts_poly_t *x = ts_ckks_plaintext_poly(pt);
            uint64_t *hx = ts_test_poly_host(x);
            const uint8_t *b = (const uint8_t *)hx;
            for (size_t i = 0; i < (size_t)x->nq * 2048 * 8; i++)
                h = (h ^ b[i]) * 0x100000001b3ULL;
            ts_free(hx);
        }
    printf("encode KAT: %016llx\n", (unsigned long long)h);
    ck_assert_uint_eq(h, ENCODE_KAT);
    ts_free(z);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_params_free(p);
}
END_TEST

TS_TEST_SUITE(ckks_encoder)
{
    Suite *s = suite_create("ckks_encoder");
    TCase *tc = ts_tcase("encoder", 0);
    tcase_add_test(tc, test_roundtrip_complex);
    tcase_add_test(tc, test_roundtrip_real_and_large_scale);
    tcase_add_test(tc, test_encode_errors);
    tcase_add_test(tc, test_encode_kat);
    suite_add_tcase(s, tc);
    return s;
}

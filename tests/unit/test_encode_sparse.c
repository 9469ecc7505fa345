/*
 * Sparse-slot encoding without a full-size NTT (core/math
 * ts_ntt_forward_sparse, core/ring ts_poly_ntt_sparse, core/ckks encode).
 * Oracles: the full N-point forward NTT of the zero-filled polynomial, word
 * for word (every implementation, every gap, 50- and 60-bit primes, garbage
 * in the words that must not be read); the ring op with and without the
 * backend member (the zeroing fallback); CKKS plaintexts (ts_ckks_encode_real,
 * ts_ckks_encode, the Q*P encoding of double hoisting) equal to the old path
 * (the coefficient-form encoding, zero-filled, then ts_poly_ntt) at test-n10,
 * test-n11 and an N = 2^14 set built here, for every sparse slot count and
 * several levels; and encode -> decode precision at sparse slot counts.
 */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "core/backend/backend.h"
#include "core/ckks/ckks_int.h"
#include "tests/unit/ts_test.h"

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* ------------------------------------------------------------- core/math */

static void check_math(uint32_t logn, uint32_t bits)
{
    const uint32_t n = 1u << logn;
    uint64_t q;
    ck_assert_ts_ok(ts_primes_ntt(bits, 2ULL * n, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
    ts_ntt_table_t *t = NULL;
    ck_assert_ts_ok(ts_ntt_table_new(n, q, &t));
    uint64_t *ref = ts_malloc(n * sizeof(uint64_t)), *a = ts_malloc(n * sizeof(uint64_t));
    uint64_t *c = ts_malloc(n * sizeof(uint64_t));
    ck_assert_ptr_nonnull(ref);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(c);
    uint64_t x = 0x243f6a8885a308d3ULL ^ ((uint64_t)logn << 8) ^ bits;
    for (uint32_t gap = 1; gap <= n / 2; gap <<= 1) {
        for (int impl = TS_NTT_IMPL_AUTO; impl <= TS_NTT_IMPL_AVX512; impl++) {
            if ((impl == TS_NTT_IMPL_AVX2 && !ts_cpu_has_avx2()) ||
                (impl == TS_NTT_IMPL_AVX512 && !ts_cpu_has_avx512()))
                continue;
            memset(ref, 0, n * sizeof(uint64_t));
            for (uint32_t i = 0; i < n; i++) {
                /* inputs anywhere in [0, 4q), garbage off the grid */
                uint64_t v = xorshift(&x) % (4 * q);
                a[i] = gap > 1 && i % gap ? xorshift(&x) : v;
                if (i % gap == 0)
                    ref[i] = c[i / gap] = v;
            }
            ts_ntt_forward(t, ref);
            ck_assert_ts_ok(ts_ntt_forward_sparse(t, gap, a, (ts_ntt_impl_t)impl));
            ck_assert_msg(memcmp(a, ref, n * sizeof(uint64_t)) == 0,
                          "N = 2^%u, %u-bit q, gap %u, impl %d: not the full NTT", logn, bits, gap,
                          impl);
            /* compact: the first word of each run, from the coefficients in order */
            ck_assert_ts_ok(ts_ntt_forward_compact(t, gap, c, (ts_ntt_impl_t)impl));
            for (uint32_t h = 0; h < n / gap; h++)
                ck_assert_msg(c[h] == ref[(size_t)h * gap],
                              "N = 2^%u, %u-bit q, gap %u, impl %d: compact word %u", logn, bits,
                              gap, impl, h);
        }
    }
    ck_assert_ts_status(ts_ntt_forward_sparse(t, 0, a, TS_NTT_IMPL_AUTO), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_forward_sparse(t, 3, a, TS_NTT_IMPL_AUTO), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_forward_sparse(t, n, a, TS_NTT_IMPL_AUTO), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_forward_sparse(t, 2, a, (ts_ntt_impl_t)9), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_forward_sparse(NULL, 2, a, TS_NTT_IMPL_AUTO), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_forward_compact(t, 3, c, TS_NTT_IMPL_AUTO), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_forward_compact(t, n, c, TS_NTT_IMPL_AUTO), TS_EINVAL);
    ts_free(c);
    ts_free(a);
    ts_free(ref);
    ts_ntt_table_free(t);
}

START_TEST(test_math_sparse_ntt)
{
    static const uint32_t logns[] = {1, 2, 3, 4, 5, 8, 10, 11, 14, 16};
    for (size_t i = 0; i < sizeof logns / sizeof logns[0]; i++) {
        if (logns[i] == 16 && ts_test_quick())
            continue;
        check_math(logns[i], 60);
        if (logns[i] >= 4) /* 50-bit primes = 1 mod 2N exist from here on */
            check_math(logns[i], 50);
    }
}
END_TEST

/* ------------------------------------------------------------- core/ring */

static ts_ring_t *make_ring(uint32_t n, uint32_t nq, uint32_t np, ts_backend_t *be)
{
    uint64_t q[16], p[4];
    ck_assert_ts_ok(ts_primes_ntt(50, 2 * n, nq, TS_PRIMES_DESCENDING, NULL, 0, q));
    ck_assert_ts_ok(ts_primes_ntt(60, 2 * n, np, TS_PRIMES_DESCENDING, NULL, 0, p));
    ts_ring_params_t prm = {.n = n, .q = q, .q_count = nq, .p = p, .p_count = np, .backend = be};
    ts_ring_t *r = NULL;
    ck_assert_ts_ok(ts_ring_new(&prm, &r));
    return r;
}

/* ts_poly_ntt_sparse on ring r (garbage off the grid) == ts_poly_ntt of the
 * zero-filled polynomial, for every gap, Q-only and Q+P shapes. */
static void check_ring(ts_ring_t *r)
{
    const uint32_t n = ts_ring_n(r), nq = ts_ring_q_count(r), np = ts_ring_p_count(r);
    uint64_t x = 0x13198a2e03707344ULL;
    uint64_t *h = ts_malloc((size_t)(nq + np) * n * sizeof(uint64_t));
    ck_assert_ptr_nonnull(h);
    for (int shape = 0; shape < 2; shape++) {
        const uint32_t lq = shape ? nq : nq - 1, lp = shape ? np : 0;
        ts_poly_t *a = NULL, *ref = NULL;
        ck_assert_ts_ok(ts_poly_new(r, lq, lp, false, &a));
        ck_assert_ts_ok(ts_poly_new(r, lq, lp, false, &ref));
        const uint32_t *idx = ts_ring_limb_index(r, lq, lp);
        for (uint32_t gap = 1; gap <= n / 2; gap <<= 1) {
            for (uint32_t l = 0; l < lq + lp; l++) {
                const uint64_t q = ts_ring_modulus(r, idx[l])->q;
                for (uint32_t i = 0; i < n; i++)
                    h[(size_t)l * n + i] = i % gap ? 0 : xorshift(&x) % q;
            }
            ck_assert_ts_ok(ts_poly_reshape(ref, lq, lp, false));
            ck_assert_ts_ok(ts_poly_upload(ref, h));
            ck_assert_ts_ok(ts_poly_ntt(ref));
            for (uint32_t l = 0; l < lq + lp; l++) {
                const uint64_t q = ts_ring_modulus(r, idx[l])->q;
                for (uint32_t i = 0; i < n; i++)
                    if (i % gap)
                        h[(size_t)l * n + i] = xorshift(&x) % q; /* must not be read */
            }
            ck_assert_ts_ok(ts_poly_reshape(a, lq, lp, false));
            ck_assert_ts_ok(ts_poly_upload(a, h));
            ck_assert_ts_ok(ts_poly_ntt_sparse(a, gap));
            ck_assert(a->is_ntt);
            ck_assert_msg(ts_poly_equal(a, ref), "N = %u, gap %u, %u+%u limbs", n, gap, lq, lp);
            /* NTT form: a no-op */
            ck_assert_ts_ok(ts_poly_ntt_sparse(a, gap));
            ck_assert(ts_poly_equal(a, ref));
            /* a device's path: the grid's words compact (n / gap per limb),
             * ntt_forward_compact, then spread_expand into the full limbs */
            ts_backend_t *be = ts_ring_backend(r);
            if (gap > 1 && be->iface->ntt_forward_compact && be->iface->spread_expand) {
                const size_t w = n / gap;
                uint64_t *c = ts_malloc((lq + lp) * w * sizeof(uint64_t)), *dc = NULL;
                ck_assert_ptr_nonnull(c);
                for (uint32_t l = 0; l < lq + lp; l++)
                    for (size_t k = 0; k < w; k++)
                        c[l * w + k] = h[(size_t)l * n + k * gap];
                ck_assert_ts_ok(
                    ts_backend_alloc(be, (lq + lp) * w * sizeof(uint64_t), (void **)&dc));
                ck_assert_ts_ok(ts_backend_upload(be, dc, c, (lq + lp) * w * sizeof(uint64_t)));
                ts_bk_batch_t cb = {dc, 1, lq + lp, (lq + lp) * w, idx};
                ck_assert_ts_ok(ts_backend_ntt_forward_compact(be, ts_ring_bk(r), &cb, gap));
                ck_assert_ts_ok(ts_poly_reshape(a, lq, lp, false));
                ts_bk_batch_t ab = ts_poly_batch(a);
                ck_assert_ts_ok(ts_backend_spread_expand(be, ts_ring_bk(r), &ab, &cb, gap));
                a->is_ntt = true;
                ck_assert_msg(ts_poly_equal(a, ref), "expand: N = %u, gap %u", n, gap);
                /* a gap past N / 2, a limb count that differs, an overlap */
                ck_assert_ts_status(ts_backend_spread_expand(be, ts_ring_bk(r), &ab, &cb, n),
                                    TS_EINVAL);
                ts_bk_batch_t short_b = cb;
                short_b.nlimbs = lq + lp - 1;
                if (short_b.nlimbs)
                    ck_assert_ts_status(
                        ts_backend_spread_expand(be, ts_ring_bk(r), &ab, &short_b, gap), TS_EINVAL);
                ts_bk_batch_t self = ab;
                self.poly_stride = (lq + lp) * w;
                ck_assert_ts_status(ts_backend_spread_expand(be, ts_ring_bk(r), &ab, &self, gap),
                                    TS_EINVAL);
                ts_backend_buf_free(be, dc);
                ts_free(c);
            }
        }
        ck_assert_ts_ok(ts_poly_reshape(a, lq, lp, false));
        ck_assert_ts_status(ts_poly_ntt_sparse(a, 0), TS_EINVAL);
        ck_assert_ts_status(ts_poly_ntt_sparse(a, 6), TS_EINVAL);
        ck_assert_ts_status(ts_poly_ntt_sparse(a, n), TS_EINVAL);
        ck_assert(!a->is_ntt);
        ts_poly_free(a);
        ts_poly_free(ref);
    }
    ck_assert_ts_status(ts_poly_ntt_sparse(NULL, 2), TS_EINVAL);
    /* the shape change without zeroing keeps the words */
    ts_poly_t *a = NULL;
    ck_assert_ts_ok(ts_poly_new(r, nq, np, false, &a));
    for (size_t i = 0; i < (size_t)(nq + np) * n; i++)
        h[i] = i % 1000;
    ck_assert_ts_ok(ts_poly_upload(a, h));
    ck_assert_ts_ok(ts_poly_reshape_uninit(a, 1, np, true));
    ck_assert(a->nq == 1 && a->np == np && a->is_ntt);
    uint64_t *ha = ts_test_poly_host(a);
    ck_assert(ha[5] == 5 && ha[n + 7] == (n + 7) % 1000);
    ts_free(ha);
    ck_assert_ts_status(ts_poly_reshape_uninit(a, nq + 1, 0, false), TS_ELEVEL);
    ck_assert_ts_status(ts_poly_reshape_uninit(a, 0, 0, false), TS_ELEVEL);
    ck_assert_ts_status(ts_poly_reshape_uninit(NULL, 1, 0, false), TS_EINVAL);
    ts_poly_free(a);
    ts_free(h);
}

START_TEST(test_ring_sparse_ntt)
{
    /* the CPU backend's op, 1 and 3 threads */
    for (int threads = 1; threads <= 3; threads += 2) {
        ts_backend_t *be = NULL;
        ck_assert_ts_ok(ts_backend_cpu_new(threads, &be));
        ts_ring_t *r = make_ring(1024, 4, 2, be);
        check_ring(r);
        ts_ring_free(r);
        ts_backend_free(be);
    }
    /* a backend without the member: the ring zeroes and runs the full NTT */
    ts_backend_t *be = NULL;
    ck_assert_ts_ok(ts_backend_cpu_new(1, &be));
    struct ts_backend_i iface = *be->iface;
    iface.ntt_forward_sparse = NULL;
    ts_backend_t bare = *be;
    bare.iface = &iface;
    ts_ring_t *r = make_ring(256, 3, 1, &bare);
    check_ring(r);
    ts_ring_free(r);
    ts_backend_free(be);
}
END_TEST

/* ------------------------------------------------------------- core/ckks */

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

/* N = 2^14, 60 + 7 x 40-bit Q primes, 2 x 61-bit P primes (insecure: tests). */
static ts_ckks_params_t *make_n14(void)
{
    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof lit.name, "test-encode-n14");
    lit.log_n = 14;
    lit.logq[0] = 60;
    for (int i = 1; i < 8; i++)
        lit.logq[i] = 40;
    lit.logq_count = 8;
    lit.logp[0] = lit.logp[1] = 61;
    lit.logp_count = 2;
    lit.scale_log2 = 40;
    lit.insecure = true;
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ts_ckks_params_t *p = NULL;
    ck_assert_ts_ok(ts_ckks_params_new(&lit, true, &p));
    ts_log_set_level(lv);
    return p;
}

static void fill(double complex *v, size_t n, uint64_t seed)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        double re = (double)(xorshift(&x) >> 11) / 9007199254740992.0 * 2 - 1;
        double im = (double)(xorshift(&x) >> 11) / 9007199254740992.0 * 2 - 1;
        v[i] = 0.9 * re + 0.9 * I * im;
    }
}

/*
 * The old path's plaintext: the coefficient-form encoding (every coefficient
 * written, zero-filled) of count values in `slots` slots over Q limbs
 * 0..level and, with np, the P limbs too (the same integers: centered from
 * q_0, |m| < q_0 / 2 here), then the full NTT.
 */
static void reference(ts_ckks_encoder_t *enc, ts_ckks_params_t *p, const double complex *cv,
                      const double *rv, size_t count, size_t slots, int level, double scale,
                      uint32_t np, ts_poly_t *coef, ts_poly_t *ref, uint64_t *h)
{
    const size_t n = ts_ckks_params_n(p);
    ck_assert_ts_ok(ts__ckks_encode_coeff(enc, cv, rv, count, slots, level, scale, coef, NULL));
    ck_assert_ts_ok(ts_poly_download(coef, h));
    const uint64_t q0 = ts_ckks_params_q(p, 0);
    const uint32_t nq = (uint32_t)level + 1;
    for (uint32_t j = 0; j < np; j++) {
        const uint64_t pj = ts_ckks_params_p(p, j);
        uint64_t *d = h + (size_t)(nq + j) * n;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = h[i];
            d[i] = r > q0 / 2 ? (pj - (q0 - r) % pj) % pj : r % pj;
        }
    }
    ck_assert_ts_ok(ts_poly_reshape(ref, nq, np, false));
    ck_assert_ts_ok(ts_poly_upload(ref, h));
    ck_assert_ts_ok(ts_poly_ntt(ref));
}

static void check_ckks(ts_ckks_params_t *p)
{
    const size_t n = ts_ckks_params_n(p);
    const int max_level = ts_ckks_params_max_level(p);
    const uint32_t np = (uint32_t)ts_ckks_params_p_count(p);
    const double scale = ts_ckks_params_scale(p);
    ts_ring_t *ring = ts_ckks_params_ring(p);
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_poly_t *coef = NULL, *ref = NULL, *qp = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, max_level, &pt));
    ck_assert_ts_ok(ts_poly_new(ring, (uint32_t)max_level + 1, np, false, &coef));
    ck_assert_ts_ok(ts_poly_new(ring, (uint32_t)max_level + 1, np, false, &ref));
    ck_assert_ts_ok(ts_poly_new(ring, (uint32_t)max_level + 1, np, false, &qp));
    double complex *cv = ts_malloc(sizeof(double complex) * n / 2);
    double *rv = ts_malloc(sizeof(double) * n / 2);
    uint64_t *h = ts_malloc(sizeof(uint64_t) * n * ((size_t)max_level + 1 + np));
    ck_assert(cv && rv && h);
    const int levels[] = {0, max_level / 2, max_level};
    for (size_t slots = 1; slots <= n / 4; slots <<= 1) {
        for (size_t li = 0; li < 3; li++) {
            const int level = levels[li];
            fill(cv, slots, slots * 7 + (size_t)level);
            for (size_t i = 0; i < slots; i++)
                rv[i] = creal(cv[i]);
            /* real values */
            reference(enc, p, NULL, rv, slots, slots, level, scale, 0, coef, ref, h);
            ck_assert_ts_ok(ts_ckks_encode_real(enc, rv, slots, slots, level, scale, pt));
            ck_assert_msg(ts_poly_equal(ts_ckks_plaintext_poly(pt), ref),
                          "%s: encode_real, %zu slots, level %d", ts_ckks_params_name(p), slots,
                          level);
            /* complex values, fewer than the slots */
            const size_t count = slots > 1 ? slots - 1 : 1;
            reference(enc, p, cv, NULL, count, slots, level, scale, 0, coef, ref, h);
            ck_assert_ts_ok(ts_ckks_encode(enc, cv, count, slots, level, scale, pt));
            ck_assert_msg(ts_poly_equal(ts_ckks_plaintext_poly(pt), ref),
                          "%s: encode, %zu slots, level %d", ts_ckks_params_name(p), slots, level);
            /* over Q_l * P (the plaintexts of double-hoisted products) */
            if (np) {
                reference(enc, p, cv, NULL, slots, slots, level, scale, np, coef, ref, h);
                ck_assert_ts_ok(ts__ckks_encode_qp(enc, cv, NULL, slots, slots, level, scale, qp));
                ck_assert_msg(ts_poly_equal(qp, ref), "%s: encode_qp, %zu slots, level %d",
                              ts_ckks_params_name(p), slots, level);
                reference(enc, p, NULL, rv, slots, slots, level, scale, np, coef, ref, h);
                ck_assert_ts_ok(ts__ckks_encode_qp(enc, NULL, rv, slots, slots, level, scale, qp));
                ck_assert_msg(ts_poly_equal(qp, ref), "%s: encode_qp reals, %zu slots, level %d",
                              ts_ckks_params_name(p), slots, level);
            }
        }
    }
    ts_free(h);
    ts_free(rv);
    ts_free(cv);
    ts_poly_free(qp);
    ts_poly_free(ref);
    ts_poly_free(coef);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
}

START_TEST(test_ckks_sparse_encode_exact)
{
    ts_ckks_params_t *p = load("test-n10");
    check_ckks(p);
    ts_ckks_params_free(p);
    p = load("test-n11");
    check_ckks(p);
    ts_ckks_params_free(p);
    p = make_n14();
    check_ckks(p);
    ts_ckks_params_free(p);
}
END_TEST

/* Coefficients beyond 2^62 (a large scale at the top level): the
 * per-coefficient conversion path writes the grid only, too. */
START_TEST(test_ckks_sparse_encode_large)
{
    ts_ckks_params_t *p = load("test-n11");
    const size_t n = ts_ckks_params_n(p);
    const int level = ts_ckks_params_max_level(p);
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_poly_t *coef = NULL, *ref = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, level, &pt));
    ck_assert_ts_ok(ts_poly_new(ts_ckks_params_ring(p), (uint32_t)level + 1, 0, false, &coef));
    ck_assert_ts_ok(ts_poly_new(ts_ckks_params_ring(p), (uint32_t)level + 1, 0, false, &ref));
    uint64_t *h = ts_malloc(sizeof(uint64_t) * n * ((size_t)level + 1));
    double rv[64];
    for (size_t slots = 2; slots <= 64; slots <<= 2) {
        for (size_t i = 0; i < slots; i++)
            rv[i] = cos(0.3 * (double)i);
        const double scale = 0x1p70;
        ck_assert_ts_ok(
            ts__ckks_encode_coeff(enc, NULL, rv, slots, slots, level, scale, coef, NULL));
        ck_assert_ts_ok(ts_poly_download(coef, h));
        ck_assert_ts_ok(ts_poly_upload(ref, h));
        ck_assert_ts_ok(ts_poly_ntt(ref));
        ck_assert_ts_ok(ts_ckks_encode_real(enc, rv, slots, slots, level, scale, pt));
        ck_assert_msg(ts_poly_equal(ts_ckks_plaintext_poly(pt), ref), "%zu slots", slots);
        ck_assert_ts_ok(ts_poly_reshape(ref, (uint32_t)level + 1, 0, false));
    }
    ts_free(h);
    ts_poly_free(ref);
    ts_poly_free(coef);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_params_free(p);
}
END_TEST

/* encode -> decode at sparse slot counts: the error stays at the rounding
 * bound (N / scale for |z| < 1, far below 2^-20 at scale 2^40). */
START_TEST(test_ckks_sparse_roundtrip)
{
    ts_ckks_params_t *p = make_n14();
    const size_t n = ts_ckks_params_n(p);
    const double scale = ts_ckks_params_scale(p);
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, 0, &pt));
    double complex *in = ts_malloc(sizeof(double complex) * n / 2);
    double complex *out = ts_malloc(sizeof(double complex) * n / 2);
    for (size_t slots = 2; slots <= n / 4; slots <<= 2) {
        for (int level = 0; level <= ts_ckks_params_max_level(p); level += 3) {
            fill(in, slots, slots + (size_t)level);
            ck_assert_ts_ok(ts_ckks_encode(enc, in, slots, slots, level, scale, pt));
            ck_assert_ts_ok(ts_ckks_decode(enc, pt, out, slots));
            double err = 0;
            for (size_t i = 0; i < slots; i++)
                err = fmax(err, cabs(out[i] - in[i]));
            ck_assert_msg(err < (double)n / scale, "%zu slots, level %d: error %g", slots, level,
                          err);
        }
    }
    ts_free(out);
    ts_free(in);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_params_free(p);
}
END_TEST

TS_TEST_SUITE(encode_sparse)
{
    Suite *s = suite_create("encode_sparse");
    TCase *tc = ts_tcase("encode_sparse", 0);
    tcase_add_test(tc, test_math_sparse_ntt);
    tcase_add_test(tc, test_ring_sparse_ntt);
    tcase_add_test(tc, test_ckks_sparse_encode_exact);
    tcase_add_test(tc, test_ckks_sparse_encode_large);
    tcase_add_test(tc, test_ckks_sparse_roundtrip);
    suite_add_tcase(s, tc);
    return s;
}

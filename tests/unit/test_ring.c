/*
 * core/backend + core/ring: ring contexts, RNS polynomial arithmetic vs a
 * schoolbook reference per limb, automorphisms vs the plaintext permutation,
 * backend thread counts bit-exact, basis extension / ModDown / key-switch
 * inner products vs core/math and direct loops, sampling statistics.
 */
#include "tests/unit/ts_test.h"

#include "core/backend/backend.h"
#include "core/ring/ring.h"

static uint64_t rs = 0x1234567ULL;
static uint64_t rnd(void)
{
    uint64_t z = (rs += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static ts_prng_t *seeded(uint8_t tag)
{
    uint8_t seed[TS_SEED_BYTES];
    memset(seed, tag, sizeof seed);
    ts_prng_t *p = NULL;
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 7, &p));
    return p;
}

/* A ring of degree n with nq Q primes (50-bit) and np P primes (60-bit). */
static ts_ring_t *make_ring(uint32_t n, uint32_t nq, uint32_t np, ts_backend_t *be)
{
    uint64_t q[32], p[8];
    ck_assert_ts_ok(ts_primes_ntt(50, 2 * n, nq, TS_PRIMES_DESCENDING, NULL, 0, q));
    if (np)
        ck_assert_ts_ok(ts_primes_ntt(60, 2 * n, np, TS_PRIMES_DESCENDING, NULL, 0, p));
    ts_ring_params_t prm = {.n = n, .q = q, .q_count = nq, .p = p, .p_count = np, .backend = be};
    ts_ring_t *r = NULL;
    ck_assert_ts_ok(ts_ring_new(&prm, &r));
    return r;
}

static void fill_random(ts_poly_t *p)
{
    const uint32_t n = ts_ring_n(p->ring);
    const uint32_t *idx = ts_ring_limb_index(p->ring, p->nq, p->np);
    uint64_t *h = ts_malloc((size_t)(p->nq + p->np) * n * 8);
    for (uint32_t l = 0; l < p->nq + p->np; l++)
        for (uint32_t i = 0; i < n; i++)
            h[(size_t)l * n + i] = rnd() % ts_ring_modulus(p->ring, idx[l])->q;
    ck_assert_ts_ok(ts_poly_upload(p, h));
    ts_free(h);
}

START_TEST(test_ring_params)
{
    uint64_t q[3];
    ck_assert_ts_ok(ts_primes_ntt(40, 2 * 64, 3, 0, NULL, 0, q));
    ts_ring_t *r = NULL;
    ts_ring_params_t prm = {.n = 64, .q = q, .q_count = 3};
    ck_assert_ts_ok(ts_ring_new(&prm, &r));
    ck_assert_uint_eq(ts_ring_n(r), 64);
    ck_assert_uint_eq(ts_ring_logn(r), 6);
    ck_assert_ptr_eq(ts_ring_ref(r), r);
    ts_ring_free(r); /* still one reference */
    ck_assert_uint_eq(ts_ring_modulus(r, 2)->q, q[2]);
    ck_assert_ptr_null(ts_ring_modulus(r, 3));
    ck_assert_uint_eq(ts_ring_galois_rotate(r, 0), 1);
    ck_assert_uint_eq(ts_ring_galois_rotate(r, 1), 5);
    ck_assert_uint_eq((ts_ring_galois_rotate(r, -1) * 5) % 128, 1);
    ck_assert_uint_eq(ts_ring_galois_conjugate(r), 127);
    ts_ring_free(r);
    ts_ring_free(NULL);
    uint64_t dup[2] = {q[0], q[0]};
    prm.q = dup;
    prm.q_count = 2;
    ck_assert_ts_status(ts_ring_new(&prm, &r), TS_EPARAMS);
    uint64_t bad[1] = {q[0] + 2};
    prm.q = bad;
    prm.q_count = 1;
    ck_assert_ts_status(ts_ring_new(&prm, &r), TS_EPARAMS);
    prm.q = q;
    prm.n = 48;
    ck_assert_ts_status(ts_ring_new(&prm, &r), TS_EPARAMS);
    prm.n = 1u << 7; /* q = 1 mod 128 but not mod 256 in general */
    uint64_t q128[1];
    ck_assert_ts_ok(ts_primes_ntt(40, 2 * 64, 1, 0, NULL, 0, q128));
    if (q128[0] % 256 != 1) {
        prm.q = q128;
        ck_assert_ts_status(ts_ring_new(&prm, &r), TS_EPARAMS);
    }
}
END_TEST

/* Negacyclic schoolbook product of limb l. */
static void ref_mul(const uint64_t *a, const uint64_t *b, uint64_t *c, uint32_t n,
                    const ts_modulus_t *m)
{
    memset(c, 0, n * 8);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) {
            uint64_t p = ts_mod_mul(a[i], b[j], m);
            if (i + j < n)
                c[i + j] = ts_mod_add(c[i + j], p, m->q);
            else
                c[i + j - n] = ts_mod_sub(c[i + j - n], p, m->q);
        }
}

START_TEST(test_poly_arith)
{
    const uint32_t n = 128, nq = 4, np = 2;
    ts_ring_t *r = make_ring(n, nq, np, NULL);
    ts_poly_t *a, *b, *c, *d;
    ck_assert_ts_ok(ts_poly_new(r, nq, np, false, &a));
    ck_assert_ts_ok(ts_poly_new(r, nq, np, false, &b));
    ck_assert_ts_ok(ts_poly_new(r, nq, np, false, &c));
    ck_assert_ts_ok(ts_poly_new(r, nq, np, false, &d));
    fill_random(a);
    fill_random(b);
    const size_t words = (size_t)(nq + np) * n;
    uint64_t *ha = ts_malloc(words * 8), *hb = ts_malloc(words * 8), *hc = ts_malloc(words * 8);
    uint64_t *ref = ts_malloc(n * 8);
    ck_assert_ts_ok(ts_poly_download(a, ha));
    ck_assert_ts_ok(ts_poly_download(b, hb));
    const uint32_t *idx = ts_ring_limb_index(r, nq, np);
    /* add, sub, neg, mul_int */
    ck_assert_ts_ok(ts_poly_add(c, a, b));
    ck_assert_ts_ok(ts_poly_download(c, hc));
    for (size_t w = 0; w < words; w++)
        ck_assert_uint_eq(hc[w], ts_mod_add(ha[w], hb[w], ts_ring_modulus(r, idx[w / n])->q));
    ck_assert_ts_ok(ts_poly_sub(c, c, b));
    ck_assert(ts_poly_equal(c, a));
    ck_assert_ts_ok(ts_poly_neg(c, a));
    ck_assert_ts_ok(ts_poly_add(c, c, a));
    ck_assert_ts_ok(ts_poly_download(c, hc));
    for (size_t w = 0; w < words; w++)
        ck_assert_uint_eq(hc[w], 0);
    ck_assert_ts_ok(ts_poly_mul_int(c, a, -3));
    ck_assert_ts_ok(ts_poly_download(c, hc));
    for (size_t w = 0; w < words; w++) {
        const ts_modulus_t *m = ts_ring_modulus(r, idx[w / n]);
        ck_assert_uint_eq(hc[w], ts_mod_mul(ha[w], m->q - 3, m));
    }
    /* NTT-form product = negacyclic product, limb by limb */
    ck_assert_ts_ok(ts_poly_copy(c, a));
    ck_assert_ts_ok(ts_poly_copy(d, b));
    ck_assert_ts_status(ts_poly_mul(c, c, d), TS_EINVAL); /* coefficient form */
    ck_assert_ts_ok(ts_poly_ntt(c));
    ck_assert_ts_ok(ts_poly_ntt(d));
    ck_assert_ts_ok(ts_poly_mul(c, c, d));
    ck_assert_ts_ok(ts_poly_intt(c));
    ck_assert_ts_ok(ts_poly_download(c, hc));
    for (uint32_t l = 0; l < nq + np; l++) {
        ref_mul(ha + (size_t)l * n, hb + (size_t)l * n, ref, n, ts_ring_modulus(r, idx[l]));
        ck_assert_int_eq(memcmp(ref, hc + (size_t)l * n, n * 8), 0);
    }
    /* mul_add: c = a*b + a*b */
    ck_assert_ts_ok(ts_poly_ntt(c));
    ts_poly_t *an;
    ck_assert_ts_ok(ts_poly_clone(a, &an));
    ck_assert_ts_ok(ts_poly_ntt(an));
    ck_assert_ts_ok(ts_poly_mul_add(c, an, d));
    ck_assert_ts_ok(ts_poly_intt(c));
    ck_assert_ts_ok(ts_poly_download(c, hc));
    for (uint32_t l = 0; l < nq + np; l++) {
        const ts_modulus_t *m = ts_ring_modulus(r, idx[l]);
        ref_mul(ha + (size_t)l * n, hb + (size_t)l * n, ref, n, m);
        for (uint32_t i = 0; i < n; i++)
            ck_assert_uint_eq(hc[(size_t)l * n + i], ts_mod_add(ref[i], ref[i], m->q));
    }
    /* shape checks */
    ts_poly_t *small;
    ck_assert_ts_ok(ts_poly_new(r, 2, 0, false, &small));
    ck_assert_ts_status(ts_poly_add(c, a, small), TS_EMISMATCH);
    ck_assert_ts_status(ts_poly_copy(small, a), TS_ELEVEL);
    ck_assert_ts_status(ts_poly_drop_limbs(a, 2), TS_ELEVEL); /* has P limbs */
    /* a prefix copy: the first k Q-limbs of a Q-only polynomial, nothing else
     * written (the rest of small keeps its words), in place a drop */
    ck_assert_ts_status(ts_poly_copy_prefix(small, a, 1), TS_ELEVEL); /* a has P limbs */
    ck_assert_ts_ok(ts_poly_reshape(c, nq, 0, false));
    fill_random(c);
    ck_assert_ts_ok(ts_poly_download(c, hc));
    ts_poly_t *big;
    ck_assert_ts_ok(ts_poly_new(r, nq, 0, false, &big));
    fill_random(big);
    uint64_t *hbig = ts_malloc(words * 8), *hbig2 = ts_malloc(words * 8);
    ck_assert_ts_ok(ts_poly_download(big, hbig));
    for (uint32_t k = 1; k <= 2 && k <= nq; k++) {
        ck_assert_ts_ok(ts_poly_reshape_uninit(big, nq, 0, false));
        ck_assert_ts_ok(ts_poly_copy_prefix(big, c, k));
        ck_assert_uint_eq(big->nq, k);
        ck_assert(!big->is_ntt);
        ck_assert_ts_ok(ts_poly_reshape_uninit(big, nq, 0, false));
        ck_assert_ts_ok(ts_poly_download(big, hbig2));
        ck_assert_int_eq(memcmp(hbig2, hc, (size_t)k * n * 8), 0);
        ck_assert_int_eq(
            memcmp(hbig2 + (size_t)k * n, hbig + (size_t)k * n, (size_t)(nq - k) * n * 8), 0);
    }
    ck_assert_ts_status(ts_poly_copy_prefix(small, c, 3), TS_ELEVEL); /* beyond small's room */
    ck_assert_ts_status(ts_poly_copy_prefix(big, c, nq + 1), TS_ELEVEL);
    ck_assert_ts_status(ts_poly_copy_prefix(big, c, 0), TS_ELEVEL);
    ts_free(hbig);
    ts_free(hbig2);
    ts_poly_free(big);
    ck_assert_ts_ok(ts_poly_copy_prefix(c, c, 1));
    ck_assert_uint_eq(c->nq, 1);
    ck_assert_ts_ok(ts_poly_reshape(c, nq, 0, false));
    ck_assert_ts_ok(ts_poly_drop_limbs(c, 1));
    ck_assert_uint_eq(c->nq, 1);
    ts_poly_t *none;
    ck_assert_ts_status(ts_poly_new(r, nq + 1, 0, false, &none), TS_ELEVEL);
    ck_assert_ptr_null(none);
    /* room for more limbs than the shape: the shape is zero, a reshape up to
     * the capacity zeroes what it adds (over a block the allocator had
     * written); capacities below the shape or past the ring are refused */
    {
        ts_poly_t *junk, *cap;
        ck_assert_ts_ok(ts_poly_new(r, nq, np, false, &junk));
        ck_assert_ts_ok(ts_poly_upload(junk, ha)); /* nonzero words */
        ts_poly_free(junk);
        ck_assert_ts_ok(ts_poly_new_cap(r, nq + np, 1, 0, false, &cap));
        ck_assert_uint_eq(cap->cap_limbs, nq + np);
        ck_assert_uint_eq(cap->nq, 1);
        uint64_t *hc = ts_test_poly_host(cap);
        for (uint32_t i = 0; i < n; i++)
            ck_assert_uint_eq(hc[i], 0);
        ts_free(hc);
        ck_assert_ts_ok(ts_poly_reshape(cap, nq, np, false));
        hc = ts_test_poly_host(cap);
        for (size_t i = 0; i < (size_t)(nq + np) * n; i++)
            ck_assert_uint_eq(hc[i], 0);
        ts_free(hc);
        ts_poly_free(cap);
        ck_assert_ts_status(ts_poly_new_cap(r, 1, 2, 0, false, &none), TS_EINVAL);
        ck_assert_ts_status(ts_poly_new_cap(r, nq + np + 1, 1, 0, false, &none), TS_EINVAL);
        ck_assert_ptr_null(none);
    }
    /* upload refuses unreduced residues */
    hc[0] = ts_ring_modulus(r, 0)->q;
    ck_assert_ts_status(ts_poly_upload(c, hc), TS_ERANGE);
    /* set_i64 puts the same integer in every limb */
    int64_t coeffs[128];
    for (uint32_t i = 0; i < n; i++)
        coeffs[i] = (int64_t)(rnd() % 2001) - 1000;
    coeffs[0] = INT64_MIN + 1;
    coeffs[1] = INT64_MAX;
    ck_assert_ts_ok(ts_poly_set_i64(a, coeffs));
    ck_assert_ts_ok(ts_poly_download(a, ha));
    for (uint32_t l = 0; l < nq + np; l++) {
        uint64_t q = ts_ring_modulus(r, idx[l])->q;
        for (uint32_t i = 0; i < n; i++) {
            int64_t v = coeffs[i] % (int64_t)q;
            uint64_t want = v < 0 ? (uint64_t)(v + (int64_t)q) : (uint64_t)v;
            ck_assert_uint_eq(ha[(size_t)l * n + i], want);
        }
    }
    ts_poly_free(an);
    ts_poly_free(small);
    ts_poly_free(a);
    ts_poly_free(b);
    ts_poly_free(c);
    ts_poly_free(d);
    ts_free(ha);
    ts_free(hb);
    ts_free(hc);
    ts_free(ref);
    ts_ring_free(r);
}
END_TEST

/* The backend's NTT-form automorphism for every odd k at N = 256 (more
 * Galois elements than its index cache holds, so both the cached tables and
 * the per-slot fallback run), twice each (cache hits), against
 * ts_ntt_automorphism_index. */
START_TEST(test_auto_ntt_all_k)
{
    const uint32_t n = 256, nq = 2;
    ts_ring_t *r = make_ring(n, nq, 0, NULL);
    ts_backend_t *be = ts_ring_backend(r);
    ts_poly_t *a, *b;
    ck_assert_ts_ok(ts_poly_new(r, nq, 0, true, &a));
    ck_assert_ts_ok(ts_poly_new(r, nq, 0, true, &b));
    fill_random(a);
    uint32_t idx[256];
    for (int round = 0; round < 2; round++)
        for (uint64_t k = 1; k < 2 * n; k += 2) {
            ts_bk_batch_t ob = ts_poly_batch(b), ab = ts_poly_batch(a);
            ck_assert_ts_ok(ts_backend_automorphism_ntt(be, ts_ring_bk(r), &ob, &ab, k));
            ts_ntt_automorphism_index(n, k, idx);
            uint64_t *hb = ts_test_poly_host(b), *ha = ts_test_poly_host(a);
            for (uint32_t l = 0; l < nq; l++)
                for (uint32_t i = 0; i < n; i++)
                    ck_assert_uint_eq(hb[l * n + i], ha[l * n + idx[i]]);
            ts_free(hb);
            ts_free(ha);
        }
    ts_poly_free(a);
    ts_poly_free(b);
    ts_ring_free(r);
}
END_TEST

START_TEST(test_poly_automorphism)
{
    const uint32_t n = 256, nq = 3;
    ts_ring_t *r = make_ring(n, nq, 1, NULL);
    ts_poly_t *a, *b, *c;
    ck_assert_ts_ok(ts_poly_new(r, nq, 1, false, &a));
    ck_assert_ts_ok(ts_poly_new(r, nq, 1, false, &b));
    ck_assert_ts_ok(ts_poly_new(r, nq, 1, false, &c));
    int64_t coeffs[256], perm[256];
    for (uint32_t i = 0; i < n; i++)
        coeffs[i] = (int64_t)(rnd() % 100001) - 50000;
    ck_assert_ts_ok(ts_poly_set_i64(a, coeffs));
    const int64_t steps[] = {1, 2, 5, -1, -7, 100};
    for (size_t s = 0; s <= sizeof steps / sizeof steps[0]; s++) {
        uint64_t k = s < sizeof steps / sizeof steps[0] ? ts_ring_galois_rotate(r, steps[s])
                                                        : ts_ring_galois_conjugate(r);
        /* plaintext permutation: X^i -> X^(ik mod 2N) with sign */
        for (uint32_t i = 0; i < n; i++) {
            uint64_t e = (i * k) % (2 * n);
            if (e < n)
                perm[e] = coeffs[i];
            else
                perm[e - n] = -coeffs[i];
        }
        ck_assert_ts_ok(ts_poly_set_i64(c, perm));
        ck_assert_ts_ok(ts_poly_automorphism(b, a, k));
        ck_assert(ts_poly_equal(b, c));
        /* the NTT-form automorphism agrees */
        ts_poly_t *an;
        ck_assert_ts_ok(ts_poly_clone(a, &an));
        ck_assert_ts_ok(ts_poly_ntt(an));
        ck_assert_ts_ok(ts_poly_automorphism(b, an, k));
        ck_assert(b->is_ntt);
        ck_assert_ts_ok(ts_poly_intt(b));
        ck_assert(ts_poly_equal(b, c));
        ts_poly_free(an);
    }
    ck_assert_ts_status(ts_poly_automorphism(b, a, 4), TS_EINVAL);
    ck_assert_ts_status(ts_poly_automorphism(a, a, 5), TS_EINVAL);
    ts_poly_free(a);
    ts_poly_free(b);
    ts_poly_free(c);
    ts_ring_free(r);
}
END_TEST

/*
 * Copies and zeroing of 4 MiB or more run on the pool in 1 MiB pieces: sizes
 * around and off the piece boundaries on a 3-thread backend give exactly
 * memcpy/memset's bytes, overlapping moves keep memmove's meaning (they stay
 * on the caller), and bytes outside the range are untouched.
 */
/* The wrappers' counts (ts_backend_counts): one per compute call (a
 * fallback's two ops two), uploads and downloads with their bytes; the
 * memory ops not counted. */
START_TEST(test_backend_counts)
{
    ts_backend_t *be;
    ck_assert_ts_ok(ts_backend_cpu_new(1, &be));
    ts_ring_t *r = make_ring(256, 3, 0, be);
    ts_poly_t *a = NULL;
    ck_assert_ts_ok(ts_poly_new(r, 3, 0, false, &a));
    uint64_t h[3 * 256] = {0};
    ts_backend_counts_t c0, c1;
    ts_backend_counts(be, &c0);
    ck_assert_ts_ok(ts_poly_upload(a, h));
    ck_assert_ts_ok(ts_poly_download(a, h));
    ts_bk_batch_t b = ts_poly_batch(a);
    ck_assert_ts_ok(ts_backend_add(be, ts_ring_bk(r), &b, &b, &b));
    const uint64_t s[3] = {1, 2, 3};
    ck_assert_ts_ok(ts_backend_sub_mul_scalar(be, ts_ring_bk(r), &b, &b, &b, s));
    ck_assert_ts_ok(ts_backend_zero(be, a->data, 64));
    ts_backend_counts_since(be, &c0, &c1);
    ck_assert_uint_eq(c1.calls, 2);
    ck_assert_uint_eq(c1.uploads, 1);
    ck_assert_uint_eq(c1.upload_bytes, sizeof h);
    ck_assert_uint_eq(c1.downloads, 1);
    ck_assert_uint_eq(c1.download_bytes, sizeof h);
    /* without the fused member: sub and mul_scalar, two calls */
    struct ts_backend_i iface = *be->iface;
    iface.sub_mul_scalar = NULL;
    ts_backend_t bare = *be;
    bare.iface = &iface;
    ts_backend_counts(&bare, &c0);
    ck_assert_ts_ok(ts_backend_sub_mul_scalar(&bare, ts_ring_bk(r), &b, &b, &b, s));
    ts_backend_counts(&bare, &c1);
    ck_assert_uint_eq(c1.calls - c0.calls, 2);
    ts_backend_counts(NULL, &c1);
    ck_assert_uint_eq(c1.calls, 0);
    /* set_i64 (the op a device reduces signed words with): every limb's
     * residues of src, extremes included; src inside out refused */
    int64_t *src = NULL;
    ck_assert_ts_ok(ts_backend_alloc(be, 256 * sizeof(int64_t), (void **)&src));
    uint64_t x = 12345;
    for (int i = 0; i < 256; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        src[i] = i == 0 ? INT64_MAX : i == 1 ? INT64_MIN + 1 : i == 2 ? -1 : (int64_t)x >> (i % 40);
    }
    ck_assert_ts_ok(ts_backend_set_i64(be, ts_ring_bk(r), &b, src));
    for (uint32_t l = 0; l < 3; l++) {
        uint64_t want[256];
        ts_vec_from_i64(want, src, 256, ts_ring_modulus(r, l));
        ck_assert_msg(!memcmp(want, a->data + l * 256, sizeof want), "set_i64 limb %u", l);
    }
    ck_assert_ts_status(ts_backend_set_i64(be, ts_ring_bk(r), &b, (int64_t *)a->data + 10),
                        TS_EINVAL);
    ts_backend_buf_free(be, src);
    ts_poly_free(a);
    ts_ring_free(r);
    ts_backend_free(be);
}
END_TEST

START_TEST(test_backend_copy_zero_pool)
{
    ts_backend_t *be;
    ck_assert_ts_ok(ts_backend_cpu_new(3, &be));
    const size_t mib = (size_t)1 << 20, cap = 9 * mib + 4096;
    uint8_t *src = NULL, *dst = NULL, *want = ts_malloc(cap);
    ck_assert_ts_ok(ts_backend_alloc(be, cap, (void **)&src));
    ck_assert_ts_ok(ts_backend_alloc(be, cap, (void **)&dst));
    ck_assert_ptr_nonnull(want);
    for (size_t i = 0; i < cap; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 13);
    const size_t sizes[] = {4 * mib - 8, 4 * mib, 4 * mib + 8, 5 * mib + 123, 9 * mib};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        size_t nb = sizes[t], off = t * 8;
        memset(dst, 0xA5, cap);
        memcpy(want, dst, cap);
        memcpy(want + off, src + 3, nb);
        ck_assert_ts_ok(ts_backend_copy(be, dst + off, src + 3, nb));
        ck_assert_msg(!memcmp(dst, want, cap), "copy of %zu bytes", nb);
        memset(want + off, 0, nb);
        ck_assert_ts_ok(ts_backend_zero(be, dst + off, nb));
        ck_assert_msg(!memcmp(dst, want, cap), "zero of %zu bytes", nb);
    }
    /* overlapping, both directions */
    for (int dir = 0; dir < 2; dir++) {
        memcpy(dst, src, cap);
        memcpy(want, src, cap);
        size_t nb = 6 * mib, a = dir ? 4096 : 0, b = dir ? 0 : 4096;
        memmove(want + b, want + a, nb);
        ck_assert_ts_ok(ts_backend_copy(be, dst + b, dst + a, nb));
        ck_assert_msg(!memcmp(dst, want, cap), "overlapping move, direction %d", dir);
    }
    ts_free(want);
    ts_backend_buf_free(be, src);
    ts_backend_buf_free(be, dst);
    ts_backend_free(be);
}
END_TEST

/* Every op on a 1-thread and a 3-thread backend gives identical bits. */
START_TEST(test_backend_threads)
{
    ts_backend_t *b1, *b3;
    ck_assert_ts_ok(ts_backend_cpu_new(1, &b1));
    ck_assert_ts_ok(ts_backend_cpu_new(3, &b3));
    ck_assert_int_eq(b3->threads, 3);
    ts_backend_t *bad = NULL;
    ck_assert_ts_status(ts_backend_cpu_new(-1, &bad), TS_EINVAL);
    ck_assert_ptr_null(bad);
    const uint32_t n = 1024, nq = 5, np = 2;
    ts_ring_t *r1 = make_ring(n, nq, np, b1), *r3 = make_ring(n, nq, np, b3);
    ts_poly_t *x1, *y1, *x3, *y3;
    ck_assert_ts_ok(ts_poly_new(r1, nq, np, false, &x1));
    ck_assert_ts_ok(ts_poly_new(r1, nq, np, false, &y1));
    ck_assert_ts_ok(ts_poly_new(r3, nq, np, false, &x3));
    ck_assert_ts_ok(ts_poly_new(r3, nq, np, false, &y3));
    fill_random(x1);
    fill_random(y1);
    const size_t words = (size_t)(nq + np) * n;
    uint64_t *h = ts_malloc(words * 8), *h3 = ts_malloc(words * 8);
    ck_assert_ts_ok(ts_poly_download(x1, h));
    ck_assert_ts_ok(ts_poly_upload(x3, h));
    ck_assert_ts_ok(ts_poly_download(y1, h));
    ck_assert_ts_ok(ts_poly_upload(y3, h));
    ts_poly_t *xs[2] = {x1, x3}, *ys[2] = {y1, y3};
    for (int i = 0; i < 2; i++) {
        ck_assert_ts_ok(ts_poly_ntt(xs[i]));
        ck_assert_ts_ok(ts_poly_ntt(ys[i]));
        ck_assert_ts_ok(ts_poly_mul(xs[i], xs[i], ys[i]));
        ck_assert_ts_ok(ts_poly_mul_add(xs[i], xs[i], ys[i]));
        ck_assert_ts_ok(ts_poly_sub(xs[i], xs[i], ys[i]));
        ck_assert_ts_ok(ts_poly_intt(xs[i]));
        ck_assert_ts_ok(ts_poly_automorphism(ys[i], xs[i], 25));
    }
    ck_assert_ts_ok(ts_poly_download(y1, h));
    ck_assert_ts_ok(ts_poly_download(y3, h3));
    ck_assert_int_eq(memcmp(h, h3, words * 8), 0);
    ts_poly_free(x1);
    ts_poly_free(y1);
    ts_poly_free(x3);
    ts_poly_free(y3);
    ts_ring_free(r1);
    ts_ring_free(r3);
    ts_free(h);
    ts_free(h3);
    ts_backend_free(b1);
    ts_backend_free(b3);
}
END_TEST

/* Backend basis extension, reduction and key-switch inner product vs core/math. */
/* The key-switch inner product over the Q+P limbs of r on backend be (host
 * memory: the batches are host arrays): 3 digits x 2 outputs (the
 * key-switching shape), then 20 digits (a reduction after 15 terms) x 1 and
 * 17 x 3 outputs, against a term-by-term reference; then the spread form.
 * (A GPU's inner product is compared with the CPU's in gpu_ops.) */
static void check_keyswitch_inner(ts_backend_t *be, ts_ring_t *r, uint32_t nq, uint32_t np)
{
    const uint32_t n = ts_ring_n(r);
    const uint32_t shapes[3][2] = {{20, 1}, {17, 3}, {3, 2}};
    const uint32_t nl = nq + np;
    const size_t stride = (size_t)nl * n;
    const uint32_t *idx = ts_ring_limb_index(r, nq, np);
    uint32_t key_limb[6] = {0, 1, 2, 3, 4, 5};
    uint64_t *dig = NULL, *key = NULL, *o = NULL;
    ts_bk_batch_t bd, bk, bo;
    for (int sh = 0; sh < 3; sh++) {
        const uint32_t nd = shapes[sh][0], no = shapes[sh][1];
        ts_free(dig);
        ts_free(key);
        ts_free(o);
        dig = ts_malloc(nd * stride * 8);
        key = ts_malloc(nd * no * stride * 8);
        o = ts_malloc(no * stride * 8);
        for (uint32_t d = 0; d < nd; d++)
            for (uint32_t l = 0; l < nl; l++)
                for (uint32_t i = 0; i < n; i++) {
                    uint64_t q = ts_ring_modulus(r, idx[l])->q;
                    /* some q - 1 everywhere: the largest terms */
                    dig[d * stride + l * n + i] = i % 7 == 0 ? q - 1 : rnd() % q;
                    for (uint32_t c = 0; c < no; c++)
                        key[(no * d + c) * stride + l * n + i] = i % 5 == 0 ? q - 1 : rnd() % q;
                }
        bd = (ts_bk_batch_t){
            .data = dig, .npolys = nd, .nlimbs = nl, .poly_stride = stride, .mod_idx = idx};
        bk = (ts_bk_batch_t){
            .data = key, .npolys = no * nd, .nlimbs = nl, .poly_stride = stride, .mod_idx = idx};
        bo = (ts_bk_batch_t){
            .data = o, .npolys = no, .nlimbs = nl, .poly_stride = stride, .mod_idx = idx};
        ck_assert_ts_ok(ts_backend_keyswitch_inner(be, ts_ring_bk(r), &bo, &bd, &bk, key_limb));
        for (uint32_t c = 0; c < no; c++)
            for (uint32_t l = 0; l < nl; l++) {
                const ts_modulus_t *m = ts_ring_modulus(r, idx[l]);
                for (uint32_t i = 0; i < n; i++) {
                    uint64_t acc = 0;
                    for (uint32_t d = 0; d < nd; d++)
                        acc = ts_mod_add(acc,
                                         ts_mod_mul(dig[d * stride + l * n + i],
                                                    key[(no * d + c) * stride + l * n + i], m),
                                         m->q);
                    ck_assert_uint_eq(o[c * stride + l * n + i], acc);
                }
            }
    }
    /* spread digits (each word standing for gap equal words): the same words
     * as the full inner product on the digits written out, for runs shorter
     * and longer than the kernel's 128-word block and one run per limb; with
     * the last shape (3 digits x 2 outputs) */
    {
        const uint32_t nd = shapes[2][0], no = shapes[2][1];
        uint64_t *sd = ts_malloc(nd * stride * 8), *o2 = ts_malloc(no * stride * 8);
        const uint32_t gaps[] = {2, 8, 256, n};
        for (size_t gi = 0; gi < sizeof gaps / sizeof gaps[0]; gi++) {
            const uint32_t gap = gaps[gi], w = n / gap;
            for (uint32_t d = 0; d < nd; d++)
                for (uint32_t l = 0; l < nl; l++) {
                    uint64_t q = ts_ring_modulus(r, idx[l])->q;
                    for (uint32_t k = 0; k < w; k++) {
                        uint64_t v = k % 3 == 0 ? q - 1 : rnd() % q;
                        sd[(size_t)d * nl * w + l * w + k] = v;
                        for (uint32_t t = 0; t < gap; t++)
                            dig[d * stride + l * n + k * gap + t] = v;
                    }
                }
            ts_bk_batch_t bs = {.data = sd,
                                .npolys = nd,
                                .nlimbs = nl,
                                .poly_stride = (size_t)nl * w,
                                .mod_idx = idx};
            bd.npolys = nd;
            ck_assert_ts_ok(ts_backend_keyswitch_inner(be, ts_ring_bk(r), &bo, &bd, &bk, key_limb));
            ts_bk_batch_t bo2 = bo;
            bo2.data = o2;
            ck_assert_ts_ok(ts_backend_keyswitch_inner_spread(be, ts_ring_bk(r), &bo2, &bs, &bk,
                                                              key_limb, gap));
            ck_assert_msg(memcmp(o, o2, no * stride * 8) == 0, "spread gap %u differs", gap);
            if (gap == 8) {
                /* not a power of two, past n, a stride below nlimbs * n / gap */
                ck_assert_ts_status(ts_backend_keyswitch_inner_spread(be, ts_ring_bk(r), &bo2, &bs,
                                                                      &bk, key_limb, 6),
                                    TS_EINVAL);
                ck_assert_ts_status(ts_backend_keyswitch_inner_spread(be, ts_ring_bk(r), &bo2, &bs,
                                                                      &bk, key_limb, 2 * n),
                                    TS_EINVAL);
                ts_bk_batch_t bad = bs;
                bad.poly_stride = (size_t)nl * w - 1;
                ck_assert_ts_status(ts_backend_keyswitch_inner_spread(be, ts_ring_bk(r), &bo2, &bad,
                                                                      &bk, key_limb, gap),
                                    TS_EINVAL);
            }
        }
        ts_free(sd);
        ts_free(o2);
    }
    key_limb[0] = 1; /* wrong modulus */
    ck_assert_ts_status(ts_backend_keyswitch_inner(be, ts_ring_bk(r), &bo, &bd, &bk, key_limb),
                        TS_EINVAL);
    ts_free(dig);
    ts_free(key);
    ts_free(o);
}

START_TEST(test_backend_conv_ks)
{
    const uint32_t n = 256, nq = 4, np = 2;
    ts_ring_t *r = make_ring(n, nq, np, NULL);
    ts_backend_t *be = ts_ring_backend(r);
    ts_poly_t *x, *ext;
    ck_assert_ts_ok(ts_poly_new(r, nq, 0, false, &x));
    ck_assert_ts_ok(ts_poly_new(r, nq, np, false, &ext));
    fill_random(x);
    /* extend Q (4 limbs) -> P (2 limbs) */
    uint32_t from[4] = {0, 1, 2, 3}, to[2] = {4, 5};
    ts_bk_conv_t *conv;
    ck_assert_ts_ok(be->iface->conv_new(be, ts_ring_bk(r), from, 4, to, 2, &conv));
    ts_bk_batch_t in = ts_poly_batch(x);
    ts_bk_batch_t out = {.data = ext->data + 4 * (size_t)n,
                         .npolys = 1,
                         .nlimbs = 2,
                         .poly_stride = 2 * (size_t)n,
                         .mod_idx = to};
    ck_assert_ts_ok(ts_backend_basis_extend(be, ts_ring_bk(r), conv, &out, &in));
    uint64_t qs[4], ps[2];
    for (int i = 0; i < 4; i++)
        qs[i] = ts_ring_modulus(r, (uint32_t)i)->q;
    for (int i = 0; i < 2; i++)
        ps[i] = ts_ring_modulus(r, 4 + (uint32_t)i)->q;
    ts_rns_conv_t *mc;
    ck_assert_ts_ok(ts_rns_conv_new(qs, 4, ps, 2, &mc));
    uint64_t *ref = ts_malloc(2 * n * 8);
    uint64_t *hx = ts_test_poly_host(x), *hext = ts_test_poly_host(ext);
    ts_rns_conv_apply(mc, hx, n, ref, n, n);
    ck_assert_int_eq(memcmp(ref, hext + 4 * (size_t)n, 2 * n * 8), 0);
    /* reduce: divide (x_Q, x_P) by P back to Q */
    ts_bk_conv_t *down;
    ck_assert_ts_ok(be->iface->conv_new(be, ts_ring_bk(r), to, 2, from, 4, &down));
    ts_bk_batch_t xa = {.data = ext->data + 4 * (size_t)n,
                        .npolys = 1,
                        .nlimbs = 2,
                        .poly_stride = 2 * (size_t)n,
                        .mod_idx = to};
    ts_bk_batch_t xb = ts_poly_batch(x);
    ts_poly_t *y;
    ck_assert_ts_ok(ts_poly_new(r, nq, 0, false, &y));
    ts_bk_batch_t yb = ts_poly_batch(y);
    ck_assert_ts_ok(ts_backend_basis_reduce(be, ts_ring_bk(r), down, &yb, &xa, &xb));
    ts_rns_conv_t *md;
    ck_assert_ts_ok(ts_rns_conv_new(ps, 2, qs, 4, &md));
    uint64_t *ref2 = ts_malloc(4 * n * 8);
    ts_rns_conv_moddown(md, hext + 4 * (size_t)n, n, hx, ref2, n, n);
    uint64_t *hy = ts_test_poly_host(y);
    ck_assert_int_eq(memcmp(ref2, hy, 4 * n * 8), 0);
    ts_free(hy);
    ts_free(hx);
    ts_free(hext);
    /* the inner products take host arrays as batches: backends with host memory */
    if (be->host_memory)
        check_keyswitch_inner(be, r, nq, np);
    ck_assert_ts_status(ts_backend_external_product(be, ts_ring_bk(r), NULL), TS_ENOTSUP);
    be->iface->conv_free(be, conv);
    be->iface->conv_free(be, down);
    ts_rns_conv_free(mc);
    ts_rns_conv_free(md);
    ts_free(ref);
    ts_free(ref2);
    ts_poly_free(x);
    ts_poly_free(y);
    ts_poly_free(ext);
    ts_ring_free(r);
}
END_TEST

#define SAMPLING_KAT 0x272b8cbb4725ce87ULL

static uint64_t fnv_words(uint64_t h, const void *p, size_t bytes)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* Known answers of the uniform and Gaussian samplers for a fixed stream
 * (recorded from the one-sample-at-a-time loops before the AVX-512 kernels):
 * the vector kernels must consume and accept exactly the same words. Primes
 * just above a power of two reject about half the words. */
START_TEST(test_sampling_kat)
{
    const uint32_t n = 1024;
    uint64_t q[4], p[1];
    ck_assert_ts_ok(ts_primes_ntt(30, 2 * n, 2, TS_PRIMES_ASCENDING, NULL, 0, q));
    ck_assert_ts_ok(ts_primes_ntt(40, 2 * n, 1, TS_PRIMES_DESCENDING, NULL, 0, q + 2));
    ck_assert_ts_ok(ts_primes_ntt(50, 2 * n, 1, TS_PRIMES_ASCENDING, NULL, 0, q + 3));
    ck_assert_ts_ok(ts_primes_ntt(61, 2 * n, 1, TS_PRIMES_ASCENDING, NULL, 0, p));
    ts_ring_params_t prm = {.n = n, .q = q, .q_count = 4, .p = p, .p_count = 1};
    ts_ring_t *r = NULL;
    ck_assert_ts_ok(ts_ring_new(&prm, &r));
    ts_poly_t *x;
    ck_assert_ts_ok(ts_poly_new(r, 4, 1, true, &x));
    ts_prng_t *g = seeded(9);
    ck_assert_ts_ok(ts_poly_sample_uniform(x, g));
    uint64_t *hx = ts_test_poly_host(x);
    uint64_t h = fnv_words(0xcbf29ce484222325ULL, hx, 5 * (size_t)n * 8);
    ts_free(hx);
    ck_assert_ts_ok(ts_poly_sample_uniform(x, g)); /* the stream continues correctly */
    hx = ts_test_poly_host(x);
    h = fnv_words(h, hx, 5 * (size_t)n * 8);
    ts_free(hx);
    int64_t v[1000];
    ck_assert_ts_ok(ts_ring_sample_gaussian(g, 1000, 3.2, v));
    h = fnv_words(h, v, sizeof v);
    ck_assert_ts_ok(ts_ring_sample_gaussian(g, 77, 3.2, v));
    h = fnv_words(h, v, 77 * 8);
    ck_assert_ts_ok(ts_ring_sample_gaussian(g, 333, 19.5, v));
    h = fnv_words(h, v, 333 * 8);
    printf("sampling KAT: %016llx\n", (unsigned long long)h);
    ck_assert_uint_eq(h, SAMPLING_KAT);
    ts_prng_free(g);
    ts_poly_free(x);
    ts_ring_free(r);
}
END_TEST

START_TEST(test_sampling)
{
    ts_prng_t *prng = seeded(1);
    const size_t n = 1 << 16;
    int64_t *v = ts_malloc(n * sizeof(int64_t));
    /* ternary: each value 1/3, within 6 standard deviations */
    ck_assert_ts_ok(ts_ring_sample_ternary(prng, n, v));
    size_t cnt[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        ck_assert(v[i] >= -1 && v[i] <= 1);
        cnt[v[i] + 1]++;
    }
    double sd = sqrt(n * (1.0 / 3) * (2.0 / 3));
    for (int k = 0; k < 3; k++)
        ck_assert_msg(fabs((double)cnt[k] - n / 3.0) < 6 * sd, "ternary count[%d] = %zu", k - 1,
                      cnt[k]);
    /* sparse: exact Hamming weight, signs balanced */
    const size_t hs[] = {0, 1, 64, 192, 4096};
    for (size_t t = 0; t < sizeof hs / sizeof hs[0]; t++) {
        ck_assert_ts_ok(ts_ring_sample_sparse_ternary(prng, 8192, hs[t], v));
        size_t w = 0, pos = 0;
        for (size_t i = 0; i < 8192; i++) {
            ck_assert(v[i] >= -1 && v[i] <= 1);
            w += v[i] != 0;
            pos += v[i] == 1;
        }
        ck_assert_uint_eq(w, hs[t]);
        if (hs[t] >= 192)
            ck_assert(fabs((double)pos - hs[t] / 2.0) < 6 * sqrt(hs[t] / 4.0));
    }
    ck_assert_ts_status(ts_ring_sample_sparse_ternary(prng, 8, 9, v), TS_EINVAL);
    /* Gaussian: mean 0, variance sigma^2 within 3%, bounded by 6 sigma */
    const double sigmas[] = {3.2, 1.0, 10.0};
    for (size_t t = 0; t < 3; t++) {
        const double sg = sigmas[t];
        ck_assert_ts_ok(ts_ring_sample_gaussian(prng, n, sg, v));
        double sum = 0, sq = 0;
        int64_t mx = 0;
        for (size_t i = 0; i < n; i++) {
            sum += (double)v[i];
            sq += (double)v[i] * (double)v[i];
            mx = v[i] > mx ? v[i] : -v[i] > mx ? -v[i] : mx;
        }
        double mean = sum / n, var = sq / n - mean * mean;
        printf("gaussian sigma=%.1f: mean %.4f var %.3f (want %.3f) max |x| %lld\n", sg, mean, var,
               sg * sg, (long long)mx);
        ck_assert_msg(fabs(mean) < 6 * sg / sqrt((double)n), "mean %f", mean);
        ck_assert_msg(fabs(var - sg * sg) < 0.03 * sg * sg, "var %f vs %f", var, sg * sg);
        ck_assert(mx <= (int64_t)ceil(6 * sg));
    }
    ck_assert_ts_status(ts_ring_sample_gaussian(prng, n, 0, v), TS_EINVAL);
    /* seeded determinism */
    ts_prng_t *p1 = seeded(9), *p2 = seeded(9);
    int64_t *w = ts_malloc(1024 * sizeof(int64_t));
    ck_assert_ts_ok(ts_ring_sample_gaussian(p1, 1024, 3.2, v));
    ck_assert_ts_ok(ts_ring_sample_gaussian(p2, 1024, 3.2, w));
    ck_assert_int_eq(memcmp(v, w, 1024 * sizeof(int64_t)), 0);
    ts_prng_free(p1);
    ts_prng_free(p2);
    ts_free(w);
    ts_free(v);

    /* polynomial samplers: the same integer in every limb; uniform in range */
    const uint32_t rn = 2048, nq = 3, np = 1;
    ts_ring_t *r = make_ring(rn, nq, np, NULL);
    ts_poly_t *p;
    ck_assert_ts_ok(ts_poly_new(r, nq, np, true, &p));
    const size_t words = (size_t)(nq + np) * rn;
    uint64_t *h = ts_malloc(words * 8);
    for (int kind = 0; kind < 3; kind++) {
        if (kind == 0)
            ck_assert_ts_ok(ts_poly_sample_ternary(p, prng));
        else if (kind == 1)
            ck_assert_ts_ok(ts_poly_sample_sparse_ternary(p, prng, 64));
        else
            ck_assert_ts_ok(ts_poly_sample_gaussian(p, prng, TS_GAUSSIAN_SIGMA));
        ck_assert(!p->is_ntt);
        ck_assert_ts_ok(ts_poly_download(p, h));
        const uint32_t *idx = ts_ring_limb_index(r, nq, np);
        size_t nz = 0;
        for (uint32_t i = 0; i < rn; i++) {
            int64_t c0 = 0;
            for (uint32_t l = 0; l < nq + np; l++) {
                uint64_t q = ts_ring_modulus(r, idx[l])->q, x = h[(size_t)l * rn + i];
                int64_t c = x > q / 2 ? -(int64_t)(q - x) : (int64_t)x;
                if (l == 0)
                    c0 = c;
                ck_assert(c == c0);
            }
            nz += c0 != 0;
        }
        if (kind == 1)
            ck_assert_uint_eq(nz, 64);
    }
    p->is_ntt = true;
    ck_assert_ts_ok(ts_poly_sample_uniform(p, prng));
    ck_assert(p->is_ntt);
    ck_assert_ts_ok(ts_poly_download(p, h));
    const uint32_t *idx = ts_ring_limb_index(r, nq, np);
    for (uint32_t l = 0; l < nq + np; l++) {
        uint64_t q = ts_ring_modulus(r, idx[l])->q;
        double mean = 0;
        for (uint32_t i = 0; i < rn; i++) {
            ck_assert(h[(size_t)l * rn + i] < q);
            mean += (double)h[(size_t)l * rn + i] / (double)q;
        }
        mean /= rn;
        ck_assert_msg(fabs(mean - 0.5) < 6 * sqrt(1.0 / 12 / rn), "uniform mean %f", mean);
    }
    ts_free(h);
    ts_poly_free(p);
    ts_ring_free(r);
    ts_prng_free(prng);
}
END_TEST

/* Every allocation failure is reported as TS_ENOMEM and leaks nothing. */
START_TEST(test_ring_alloc_failures)
{
    ck_assert_ptr_nonnull(ts_backend_default()); /* process-wide, outside the accounting */
    uint64_t q[3], p[2];
    ck_assert_ts_ok(ts_primes_ntt(40, 128, 3, 0, NULL, 0, q));
    ck_assert_ts_ok(ts_primes_ntt(50, 128, 2, 0, NULL, 0, p));
    ts_ring_params_t prm = {.n = 64, .q = q, .q_count = 3, .p = p, .p_count = 2};
    ts_prng_t *prng = seeded(2);
    for (int what = 0; what < 3; what++) {
        bool done = false;
        for (uint64_t n = 1; n < 400 && !done; n++) {
            int64_t live = ts_alloc_live();
            ts_ring_t *r = NULL;
            ts_poly_t *x = NULL;
            ts_backend_t *be = NULL;
            ts_alloc_fail_after(n, true);
            ts_status_t st;
            if (what == 0) {
                st = ts_ring_new(&prm, &r);
            } else if (what == 1) {
                st = ts_backend_cpu_new(2, &be);
            } else {
                st = ts_ring_new(&prm, &r);
                if (st == TS_OK)
                    st = ts_poly_new(r, 3, 2, false, &x);
                if (st == TS_OK)
                    st = ts_poly_sample_gaussian(x, prng, 3.2);
            }
            ts_alloc_fail_after(0, false);
            if (st == TS_OK)
                done = true;
            else
                ck_assert_msg(st == TS_ENOMEM, "case %d, failure %llu: %s", what,
                              (unsigned long long)n, ts_status_name(st));
            ts_poly_free(x);
            ts_ring_free(r);
            ts_backend_free(be);
            ck_assert_msg(ts_alloc_live() == live, "case %d, failure %llu: leak", what,
                          (unsigned long long)n);
        }
        ck_assert(done);
    }
    ts_prng_free(prng);
}
END_TEST

TS_TEST_SUITE(ring)
{
    Suite *s = suite_create("ring");
    TCase *tc = ts_tcase("ring", 0);
    tcase_add_test(tc, test_ring_params);
    tcase_add_test(tc, test_poly_arith);
    tcase_add_test(tc, test_poly_automorphism);
    tcase_add_test(tc, test_auto_ntt_all_k);
    tcase_add_test(tc, test_backend_threads);
    tcase_add_test(tc, test_backend_copy_zero_pool);
    tcase_add_test(tc, test_backend_counts);
    tcase_add_test(tc, test_backend_conv_ks);
    tcase_add_test(tc, test_sampling);
    tcase_add_test(tc, test_sampling_kat);
    tcase_add_test(tc, test_ring_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

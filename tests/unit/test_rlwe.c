/*
 * core/rlwe: keys (ternary / sparse, public key error, seeded a), hybrid key
 * switching noise vs its analytic bound (printed: measured vs bound), relin
 * and Galois keys, hoisted rotations vs the plaintext permutation, the switch
 * without ModDown + ModDown vs the whole switch (bit for bit), the wire
 * form of Galois keys, gadget decomposition.
 */
#include "tests/unit/ts_test.h"

#include "core/rlwe/rlwe.h"

static ts_prng_t *seeded(uint8_t tag)
{
    uint8_t seed[TS_SEED_BYTES];
    memset(seed, tag, sizeof seed);
    ts_prng_t *p = NULL;
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 11, &p));
    return p;
}

/* N = 2^11, Q = 6 x 45-bit, P = 2 x 60-bit (insecure test sizes). */
static ts_ring_t *test_ring(void)
{
    const uint32_t n = 2048;
    uint64_t q[6], p[2];
    ck_assert_ts_ok(ts_primes_ntt(45, 2 * n, 6, TS_PRIMES_DESCENDING, NULL, 0, q));
    ck_assert_ts_ok(ts_primes_ntt(60, 2 * n, 2, TS_PRIMES_DESCENDING, NULL, 0, p));
    ts_ring_params_t prm = {.n = n, .q = q, .q_count = 6, .p = p, .p_count = 2};
    ts_ring_t *r;
    ck_assert_ts_ok(ts_ring_new(&prm, &r));
    return r;
}

/* View of the first nq Q limbs of an NTT-form key polynomial. */
static ts_poly_t q_view(const ts_poly_t *s, uint32_t nq)
{
    ts_poly_t v = *s;
    v.nq = nq;
    v.np = 0;
    v.cap_limbs = nq;
    return v;
}

/*
 * max |x| of a small polynomial x (NTT form, Q limbs), checking that every limb
 * holds the same centered integer (so x is small, not just small mod q_0).
 */
static int64_t small_norm(ts_poly_t *x)
{
    ck_assert_ts_ok(ts_poly_intt(x));
    const uint32_t n = ts_ring_n(x->ring), nl = x->nq;
    uint64_t *h = ts_malloc((size_t)nl * n * 8);
    ck_assert_ts_ok(ts_poly_download(x, h));
    int64_t mx = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t c0 = 0;
        for (uint32_t l = 0; l < nl; l++) {
            uint64_t q = ts_ring_modulus(x->ring, l)->q, v = h[(size_t)l * n + i];
            int64_t c = v > q / 2 ? -(int64_t)(q - v) : (int64_t)v;
            if (l == 0)
                c0 = c;
            ck_assert_msg(c == c0 || llabs(c0) > (int64_t)(q / 4), "limbs disagree");
        }
        mx = llabs(c0) > mx ? llabs(c0) : mx;
    }
    ts_free(h);
    return mx;
}

START_TEST(test_keys)
{
    ts_ring_t *r = test_ring();
    ts_prng_t *prng = seeded(3);
    const uint32_t n = ts_ring_n(r);
    ts_rlwe_sk_t *sk, *sp;
    ck_assert_ts_ok(ts_rlwe_sk_new(r, prng, 0, &sk));
    ck_assert_ts_ok(ts_rlwe_sk_new(r, prng, 64, &sp));
    ck_assert_uint_eq(sp->hamming, 64);
    ck_assert(sp->sparse);
    ck_assert(sk->hamming > n / 2 && sk->hamming < n * 5 / 6);
    /* the NTT-form key is the coefficient vector */
    ts_poly_t *s;
    ck_assert_ts_ok(ts_poly_clone(sp->s, &s));
    ck_assert_ts_ok(ts_poly_intt(s));
    int64_t *c = ts_malloc(n * sizeof(int64_t));
    for (uint32_t i = 0; i < n; i++)
        c[i] = sp->coeffs[i];
    ts_poly_t *t;
    ck_assert_ts_ok(ts_poly_new(r, s->nq, s->np, false, &t));
    ck_assert_ts_ok(ts_poly_set_i64(t, c));
    ck_assert(ts_poly_equal(s, t));
    /* public key: b + a s = e with |e| <= 6 sigma; a regenerates from the seed */
    ts_rlwe_pk_t *pk;
    ck_assert_ts_ok(ts_rlwe_pk_new(sk, prng, &pk));
    ts_poly_t *x, *a2;
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &x));
    ts_poly_t sv = q_view(sk->s, 6);
    ck_assert_ts_ok(ts_poly_mul(x, pk->a, &sv));
    ck_assert_ts_ok(ts_poly_add(x, x, pk->b));
    int64_t e = small_norm(x);
    ck_assert_msg(e <= 20 && e > 0, "public key error %lld", (long long)e);
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &a2));
    ck_assert_ts_ok(ts_rlwe_expand_a(pk->seed, 0, a2));
    ck_assert(ts_poly_equal(a2, pk->a));
    /* bad coefficient */
    int8_t bad[2048] = {0};
    bad[5] = 2;
    ts_rlwe_sk_t *sb;
    ck_assert_ts_status(ts_rlwe_sk_from_coeffs(r, bad, &sb), TS_EINVAL);
    ck_assert_ts_status(ts_rlwe_sk_new(r, prng, n + 1, &sb), TS_EINVAL);
    ts_rlwe_sk_free(NULL);
    ts_rlwe_pk_free(pk);
    ts_poly_free(x);
    ts_poly_free(a2);
    ts_poly_free(s);
    ts_poly_free(t);
    ts_free(c);
    ts_rlwe_sk_free(sk);
    ts_rlwe_sk_free(sp);
    ts_prng_free(prng);
    ts_ring_free(r);
}
END_TEST

/*
 * The analytic bound of rlwe.h for one switch at nq limbs:
 * worst case  sum_j N * (Q_j / 2) * B_e / P + (1 + |s|_1) / 2, B_e = ceil(6 sigma);
 * and the usual high-probability estimate: 6 standard deviations of
 * sum_j d_j e_j / P + r0 + r1 s with d_j uniform in Q_j, r uniform in [-1/2, 1/2].
 */
static void ks_bound(ts_ring_t *r, uint32_t nq, uint32_t alpha, uint32_t h, double *worst,
                     double *likely)
{
    const double n = ts_ring_n(r), be = ceil(6 * TS_GAUSSIAN_SIGMA);
    double log2p = 0;
    for (uint32_t j = 0; j < ts_ring_p_count(r); j++)
        log2p += log2((double)ts_ring_modulus(r, 6 + j)->q);
    double w = 0, var = 0;
    for (uint32_t lo = 0; lo < nq; lo += alpha) {
        double log2qj = 0;
        for (uint32_t i = lo; i < lo + alpha && i < nq; i++)
            log2qj += log2((double)ts_ring_modulus(r, i)->q);
        double ratio = exp2(log2qj - log2p);
        w += n * ratio / 2 * be;
        var += n * ratio * ratio / 12 * TS_GAUSSIAN_SIGMA * TS_GAUSSIAN_SIGMA;
    }
    *worst = w + (1.0 + h) / 2;
    *likely = 6 * sqrt(var + 1.0 / 12 + h / 12.0);
}

START_TEST(test_keyswitch_noise)
{
    ts_ring_t *r = test_ring();
    ts_prng_t *prng = seeded(4);
    ts_rlwe_sk_t *sk, *sk2;
    ck_assert_ts_ok(ts_rlwe_sk_new(r, prng, 0, &sk));
    ck_assert_ts_ok(ts_rlwe_sk_new(r, prng, 0, &sk2));
    const uint32_t dnums[] = {3, 6, 2};
    for (size_t di = 0; di < 3; di++) {
        const uint32_t dnum = dnums[di];
        uint32_t alpha;
        ck_assert_ts_ok(ts_rlwe_ksk_shape(r, dnum, &alpha));
        ts_rlwe_ksk_t *key;
        ck_assert_ts_ok(ts_rlwe_ksk_new(sk, sk2->s, dnum, prng, &key));
        ts_rlwe_ks_t *ks;
        ck_assert_ts_ok(ts_rlwe_ks_new(r, dnum, &ks));
        const uint32_t levels[] = {6, 4, 1};
        for (size_t li = 0; li < 3; li++) {
            const uint32_t nq = levels[li];
            ts_poly_t *c, *u0, *u1, *x;
            ck_assert_ts_ok(ts_poly_new(r, nq, 0, true, &c));
            ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &u0));
            ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &u1));
            ck_assert_ts_ok(ts_poly_new(r, nq, 0, true, &x));
            ck_assert_ts_ok(ts_poly_sample_uniform(c, prng));
            if (li == 1)
                ck_assert_ts_ok(ts_poly_intt(c)); /* coefficient-form input works too */
            ck_assert_ts_ok(ts_rlwe_keyswitch(ks, c, 1, key, u0, u1));
            ck_assert_uint_eq(u0->nq, nq);
            ck_assert(u0->is_ntt && u1->is_ntt);
            ck_assert_ts_ok(ts_poly_ntt(c));
            /* e = u0 + u1 s - c s' */
            ts_poly_t sv = q_view(sk->s, nq), s2v = q_view(sk2->s, nq);
            ck_assert_ts_ok(ts_poly_mul(x, u1, &sv));
            ck_assert_ts_ok(ts_poly_add(x, x, u0));
            ts_poly_t *cs;
            ck_assert_ts_ok(ts_poly_new(r, nq, 0, true, &cs));
            ck_assert_ts_ok(ts_poly_mul(cs, c, &s2v));
            ck_assert_ts_ok(ts_poly_sub(x, x, cs));
            int64_t e = small_norm(x);
            double worst, likely;
            ks_bound(r, nq, alpha, sk->hamming, &worst, &likely);
            printf("keyswitch N=%u dnum=%u alpha=%u limbs=%u: max|e| = %lld, bound %.1f "
                   "(high-probability %.1f)\n",
                   ts_ring_n(r), dnum, alpha, nq, (long long)e, worst, likely);
            ck_assert_msg((double)e <= worst, "key switch error %lld above bound %.1f",
                          (long long)e, worst);
            ck_assert_msg((double)e <= likely, "key switch error %lld above 6 sd %.1f",
                          (long long)e, likely);
            ts_poly_free(cs);
            ts_poly_free(c);
            ts_poly_free(u0);
            ts_poly_free(u1);
            ts_poly_free(x);
        }
        ts_rlwe_ks_free(ks);
        ts_rlwe_ksk_free(key);
    }
    /* mismatched dnum */
    ts_rlwe_ksk_t *key3;
    ts_rlwe_ks_t *ks6;
    ck_assert_ts_ok(ts_rlwe_ksk_new(sk, sk2->s, 3, prng, &key3));
    ck_assert_ts_ok(ts_rlwe_ks_new(r, 6, &ks6));
    ts_poly_t *c, *u0, *u1;
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &c));
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &u0));
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &u1));
    ck_assert_ts_status(ts_rlwe_keyswitch(ks6, c, 1, key3, u0, u1), TS_EMISMATCH);
    ck_assert_ts_status(ts_rlwe_keyswitch(ks6, c, 5, key3, u0, u1), TS_EMISMATCH);
    ts_rlwe_ks_t *bad;
    ck_assert_ts_status(ts_rlwe_ks_new(r, 7, &bad), TS_EPARAMS);
    ck_assert_ts_status(ts_rlwe_ks_new(r, 4, &bad), TS_EPARAMS); /* 2,2,2,0: empty digit */
    ck_assert_ptr_eq(ts_rlwe_ksk_ref(key3), key3);
    ts_rlwe_ksk_free(key3);
    ts_rlwe_ksk_free(key3);
    ts_rlwe_ks_free(ks6);
    ts_poly_free(c);
    ts_poly_free(u0);
    ts_poly_free(u1);
    ts_rlwe_sk_free(sk);
    ts_rlwe_sk_free(sk2);
    ts_prng_free(prng);
    ts_ring_free(r);
}
END_TEST

/* Encrypt a small message m under s: (b, a) with b + a s = m + e. */
static void encrypt_small(ts_ring_t *r, const ts_rlwe_sk_t *sk, const int64_t *m, ts_prng_t *prng,
                          ts_poly_t **b, ts_poly_t **a)
{
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, a));
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, false, b));
    ck_assert_ts_ok(ts_poly_sample_uniform(*a, prng));
    ts_poly_t *e;
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, false, &e));
    ck_assert_ts_ok(ts_poly_sample_gaussian(e, prng, TS_GAUSSIAN_SIGMA));
    ck_assert_ts_ok(ts_poly_set_i64(*b, m));
    ck_assert_ts_ok(ts_poly_add(*b, *b, e));
    ck_assert_ts_ok(ts_poly_ntt(*b));
    ts_poly_t sv = q_view(sk->s, 6);
    ts_poly_t *as;
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &as));
    ck_assert_ts_ok(ts_poly_mul(as, *a, &sv));
    ck_assert_ts_ok(ts_poly_sub(*b, *b, as));
    ts_poly_free(as);
    ts_poly_free(e);
}

START_TEST(test_relin_galois)
{
    ts_ring_t *r = test_ring();
    ts_prng_t *prng = seeded(5);
    const uint32_t n = ts_ring_n(r);
    ts_rlwe_sk_t *sk;
    ck_assert_ts_ok(ts_rlwe_sk_new(r, prng, 0, &sk));
    ts_rlwe_ks_t *ks;
    ck_assert_ts_ok(ts_rlwe_ks_new(r, 3, &ks));
    /* relinearization key: u0 + u1 s = c s^2 + small */
    ts_rlwe_ksk_t *rk;
    ck_assert_ts_ok(ts_rlwe_relin_key_new(sk, 3, prng, &rk));
    ts_poly_t *c, *u0, *u1, *x, *t;
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &c));
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &u0));
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &u1));
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &x));
    ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &t));
    ck_assert_ts_ok(ts_poly_sample_uniform(c, prng));
    ck_assert_ts_ok(ts_rlwe_keyswitch(ks, c, 1, rk, u0, u1));
    ts_poly_t sv = q_view(sk->s, 6);
    ck_assert_ts_ok(ts_poly_mul(x, u1, &sv));
    ck_assert_ts_ok(ts_poly_add(x, x, u0));
    ck_assert_ts_ok(ts_poly_mul(t, c, &sv));
    ck_assert_ts_ok(ts_poly_mul(t, t, &sv));
    ck_assert_ts_ok(ts_poly_sub(x, x, t));
    int64_t e = small_norm(x);
    printf("relinearization key switch: max|e| = %lld\n", (long long)e);
    ck_assert(e < 200);

    /* Galois keys; hoisted rotations of an encryption of m vs the permutation of m */
    const int64_t steps[] = {1, 2, 3, -1, 1, 0, 700};
    ts_rlwe_galois_keys_t *gk;
    ck_assert_ts_ok(ts_rlwe_galois_keys_new(sk, steps, 7, true, 3, prng, &gk));
    ck_assert_uint_eq(gk->count, 6); /* duplicates and step 0 skipped, conjugation added */
    int64_t *m = ts_malloc(n * sizeof(int64_t)), *pm = ts_malloc(n * sizeof(int64_t));
    for (uint32_t i = 0; i < n; i++)
        m[i] = (int64_t)(i % 97) * 1000 - 48000;
    ts_poly_t *b, *a;
    encrypt_small(r, sk, m, prng, &b, &a);
    ts_rlwe_decomp_t *d;
    ck_assert_ts_ok(ts_rlwe_decomp_new(ks, &d));
    ck_assert_ts_ok(ts_rlwe_decompose(ks, a, d));
    for (size_t g = 0; g < gk->count; g++) {
        uint64_t k = gk->elements[g];
        const ts_rlwe_ksk_t *key = ts_rlwe_galois_keys_find(gk, k);
        ck_assert_ptr_nonnull(key);
        ck_assert_ts_ok(ts_rlwe_keyswitch_hoisted(ks, d, k, key, u0, u1));
        /* the one-shot switch (automorphism fused into the decomposition) gives
         * the same words, from NTT and from coefficient form, and at a lower
         * level (a partial last digit) */
        for (int form = 0; form < 3; form++) {
            ts_poly_t *ac, *v0, *v1, *w0, *w1;
            uint32_t lvl = form == 2 ? 4 : 6;
            ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &ac));
            ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &v0));
            ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &v1));
            ck_assert_ts_ok(ts_poly_copy(ac, a));
            if (form == 1)
                ck_assert_ts_ok(ts_poly_intt(ac));
            if (form == 2)
                ck_assert_ts_ok(ts_poly_drop_limbs(ac, lvl));
            ck_assert_ts_ok(ts_rlwe_keyswitch(ks, ac, k, key, v0, v1));
            if (form < 2) {
                w0 = u0;
                w1 = u1;
            } else {
                ts_rlwe_decomp_t *d4;
                ck_assert_ts_ok(ts_rlwe_decomp_new(ks, &d4));
                ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &w0));
                ck_assert_ts_ok(ts_poly_new(r, 6, 0, true, &w1));
                ck_assert_ts_ok(ts_rlwe_decompose(ks, ac, d4));
                ck_assert_ts_ok(ts_rlwe_keyswitch_hoisted(ks, d4, k, key, w0, w1));
                ts_rlwe_decomp_free(d4);
            }
            ck_assert_uint_eq(v0->nq, lvl);
            ck_assert_uint_eq(w0->nq, lvl);
            uint64_t *hv0 = ts_test_poly_host(v0), *hw0 = ts_test_poly_host(w0);
            uint64_t *hv1 = ts_test_poly_host(v1), *hw1 = ts_test_poly_host(w1);
            ck_assert_msg(!memcmp(hv0, hw0, sizeof(uint64_t) * n * lvl) &&
                              !memcmp(hv1, hw1, sizeof(uint64_t) * n * lvl),
                          "fused switch differs, k=%llu form %d", (unsigned long long)k, form);
            ts_free(hv0);
            ts_free(hw0);
            ts_free(hv1);
            ts_free(hw1);
            if (form == 2) {
                ts_poly_free(w0);
                ts_poly_free(w1);
            }
            ts_poly_free(ac);
            ts_poly_free(v0);
            ts_poly_free(v1);
        }
        /* rotated ciphertext (sigma(b) + u0, u1); decrypt: + u1 s */
        ck_assert_ts_ok(ts_poly_automorphism(x, b, k));
        ck_assert_ts_ok(ts_poly_add(x, x, u0));
        ck_assert_ts_ok(ts_poly_mul(t, u1, &sv));
        ck_assert_ts_ok(ts_poly_add(x, x, t));
        /* minus the plaintext permutation of m */
        for (uint32_t i = 0; i < n; i++) {
            uint64_t ex = ((uint64_t)i * k) % (2 * n);
            if (ex < n)
                pm[ex] = m[i];
            else
                pm[ex - n] = -m[i];
        }
        ts_poly_t *pp;
        ck_assert_ts_ok(ts_poly_new(r, 6, 0, false, &pp));
        ck_assert_ts_ok(ts_poly_set_i64(pp, pm));
        ck_assert_ts_ok(ts_poly_ntt(pp));
        ck_assert_ts_ok(ts_poly_sub(x, x, pp));
        int64_t err = small_norm(x);
        printf("rotation k=%llu: max|decrypt - permuted m| = %lld\n", (unsigned long long)k,
               (long long)err);
        ck_assert_msg(err < 300, "rotation k=%llu error %lld", (unsigned long long)k,
                      (long long)err);
        ts_poly_free(pp);
    }
    /* a Galois key refuses another element */
    ck_assert_ts_status(ts_rlwe_keyswitch_hoisted(ks, d, 5, gk->keys[1], u0, u1), TS_EINVAL);
    ck_assert_ptr_null(ts_rlwe_galois_keys_find(gk, 7));
    ts_rlwe_decomp_free(d);
    ts_rlwe_galois_keys_free(gk);
    ts_rlwe_ksk_free(rk);
    ts_free(m);
    ts_free(pm);
    ts_poly_free(a);
    ts_poly_free(b);
    ts_poly_free(c);
    ts_poly_free(u0);
    ts_poly_free(u1);
    ts_poly_free(x);
    ts_poly_free(t);
    ts_rlwe_ks_free(ks);
    ts_rlwe_sk_free(sk);
    ts_prng_free(prng);
    ts_ring_free(r);
}
END_TEST

/* True when the first `limbs` limbs of a and b hold the same words. */
static bool same_limbs(const ts_poly_t *a, const ts_poly_t *b, uint32_t limbs)
{
    const size_t words = (size_t)limbs * ts_ring_n(a->ring);
    uint64_t *ha = ts_malloc(words * 8 * 2), *hb = ha + words;
    ts_poly_t va = *a, vb = *b;
    va.nq = vb.nq = limbs;
    va.np = vb.np = 0;
    ck_assert_ts_ok(ts_poly_download(&va, ha));
    ck_assert_ts_ok(ts_poly_download(&vb, hb));
    bool eq = !memcmp(ha, hb, words * 8);
    ts_free(ha);
    return eq;
}

/*
 * Double hoisting: the switch without ModDown (over Q_l * P) followed by the
 * public ModDown gives ts_rlwe_keyswitch_hoisted's words bit for bit, for
 * Galois keys and a plain key (k = 1), at a full and a partial last digit,
 * two polynomials at once, one alone and in place; and ModDown(P x) = x
 * exactly (the ciphertext's c0 entering a Q*P sum as P c0).
 */
START_TEST(test_keyswitch_qp)
{
    ts_ring_t *r = test_ring();
    ts_prng_t *prng = seeded(9);
    const uint32_t lq = 6, kp = 2;
    ts_rlwe_sk_t *sk;
    ck_assert_ts_ok(ts_rlwe_sk_new(r, prng, 0, &sk));
    ts_rlwe_ks_t *ks;
    ck_assert_ts_ok(ts_rlwe_ks_new(r, 3, &ks));
    const int64_t steps[] = {1, 5, -3};
    ts_rlwe_galois_keys_t *gk;
    ck_assert_ts_ok(ts_rlwe_galois_keys_new(sk, steps, 3, true, 3, prng, &gk));
    ts_rlwe_ksk_t *rk;
    ck_assert_ts_ok(ts_rlwe_relin_key_new(sk, 3, prng, &rk));
    ts_poly_t *c, *u0, *u1, *v0, *v1, *w0, *w1;
    ck_assert_ts_ok(ts_poly_new(r, lq, 0, true, &c));
    ck_assert_ts_ok(ts_poly_new(r, lq, 0, true, &u0));
    ck_assert_ts_ok(ts_poly_new(r, lq, 0, true, &u1));
    ck_assert_ts_ok(ts_poly_new(r, lq, kp, true, &v0));
    ck_assert_ts_ok(ts_poly_new(r, lq, kp, true, &v1));
    ck_assert_ts_ok(ts_poly_new(r, lq, 0, true, &w0));
    ck_assert_ts_ok(ts_poly_new(r, lq, 0, true, &w1));
    ts_rlwe_decomp_t *d;
    ck_assert_ts_ok(ts_rlwe_decomp_new(ks, &d));
    const uint32_t levels[] = {6, 4};
    for (size_t li = 0; li < 2; li++) {
        const uint32_t nq = levels[li];
        ck_assert_ts_ok(ts_poly_reshape(c, nq, 0, true));
        ck_assert_ts_ok(ts_poly_sample_uniform(c, prng));
        ck_assert_ts_ok(ts_rlwe_decompose(ks, c, d));
        for (size_t g = 0; g <= gk->count; g++) {
            const bool plain = g == gk->count;
            const uint64_t k = plain ? 1 : gk->elements[g];
            const ts_rlwe_ksk_t *key = plain ? rk : gk->keys[g];
            ck_assert_ts_ok(ts_rlwe_keyswitch_hoisted(ks, d, k, key, u0, u1));
            ck_assert_ts_ok(ts_rlwe_keyswitch_hoisted_qp(ks, d, k, key, v0, v1));
            ck_assert_uint_eq(v0->nq, nq);
            ck_assert_uint_eq(v0->np, kp);
            ck_assert(v0->is_ntt && v1->is_ntt);
            ck_assert_ts_ok(ts_rlwe_moddown(ks, v0, v1, w0, w1));
            ck_assert_uint_eq(w0->nq, nq);
            ck_assert_uint_eq(w0->np, 0);
            ck_assert_msg(same_limbs(u0, w0, nq) && same_limbs(u1, w1, nq),
                          "ModDown of the Q*P switch differs, k=%llu nq=%u", (unsigned long long)k,
                          nq);
            /* one polynomial, in place */
            ck_assert_ts_ok(ts_rlwe_moddown(ks, v1, NULL, v1, NULL));
            ck_assert_uint_eq(v1->np, 0);
            ck_assert(same_limbs(u1, v1, nq));
        }
    }
    /* ModDown(P x) = x: x [P]_{q_i} on the Q limbs, 0 on the P limbs */
    uint64_t pq[6];
    for (uint32_t i = 0; i < lq; i++) {
        const ts_modulus_t *m = ts_ring_modulus(r, i);
        pq[i] =
            ts_mod_mul(ts_ring_modulus(r, lq)->q % m->q, ts_ring_modulus(r, lq + 1)->q % m->q, m);
    }
    ck_assert_ts_ok(ts_poly_reshape(c, lq, 0, true));
    ck_assert_ts_ok(ts_poly_sample_uniform(c, prng));
    ck_assert_ts_ok(ts_poly_reshape(v0, lq, kp, true)); /* zero */
    ts_poly_t vq = *v0;
    vq.nq = lq;
    vq.np = 0;
    vq.cap_limbs = lq;
    ck_assert_ts_ok(ts_poly_mul_scalar(&vq, c, pq));
    ck_assert_ts_ok(ts_rlwe_moddown(ks, v0, NULL, w0, NULL));
    ck_assert(same_limbs(c, w0, lq));
    /* shapes: Q-only input, missing P capacity, lone second polynomial */
    ck_assert_ts_status(ts_rlwe_moddown(ks, c, NULL, w0, NULL), TS_ELEVEL);
    ck_assert_ts_ok(ts_rlwe_decompose(ks, c, d));
    ck_assert_ts_status(ts_rlwe_keyswitch_hoisted_qp(ks, d, gk->elements[0], gk->keys[0], u0, u1),
                        TS_ELEVEL);
    ck_assert_ts_status(ts_rlwe_moddown(ks, v0, NULL, w0, w1), TS_EINVAL);
    ts_rlwe_decomp_free(d);
    ts_rlwe_galois_keys_free(gk);
    ts_rlwe_ksk_free(rk);
    ts_poly_free(c);
    ts_poly_free(u0);
    ts_poly_free(u1);
    ts_poly_free(v0);
    ts_poly_free(v1);
    ts_poly_free(w0);
    ts_poly_free(w1);
    ts_rlwe_ks_free(ks);
    ts_rlwe_sk_free(sk);
    ts_prng_free(prng);
    ts_ring_free(r);
}
END_TEST

/*
 * A Galois key is held permuted (sigma_k^-1 of every limb, so the switch
 * rotates its inner product instead of every digit) but travels as the key
 * itself: its serialized body equals, byte for byte, the body of the plain
 * key s(X^k) -> s made from the same randomness, and reads back to a key
 * whose switch is the same.
 */
START_TEST(test_galois_key_wire)
{
    ts_ring_t *r = test_ring();
    ts_prng_t *p0 = seeded(9);
    ts_rlwe_sk_t *sk;
    ck_assert_ts_ok(ts_rlwe_sk_new(r, p0, 0, &sk));
    const uint64_t ks_k[] = {5, 2 * 2048 - 1, 4095 - 8};
    for (size_t t = 0; t < sizeof ks_k / sizeof ks_k[0]; t++) {
        const uint64_t k = ks_k[t];
        ts_prng_t *pa = seeded(21), *pb = seeded(21);
        ts_rlwe_ksk_t *gk, *plain;
        ck_assert_ts_ok(ts_rlwe_galois_key_new(sk, k, 3, 0, pa, &gk));
        ts_poly_t *sk_k;
        ck_assert_ts_ok(ts_poly_new(r, sk->s->nq, sk->s->np, true, &sk_k));
        ck_assert_ts_ok(ts_poly_automorphism(sk_k, sk->s, k));
        ck_assert_ts_ok(ts_rlwe_ksk_new(sk, sk_k, 3, pb, &plain));
        ck_assert_mem_eq(gk->seed, plain->seed, TS_SEED_BYTES);
        /* held differently ... */
        uint8_t *hg = ts_test_backend_host(r, gk->data, ts_rlwe_ksk_bytes(gk));
        uint8_t *hp = ts_test_backend_host(r, plain->data, ts_rlwe_ksk_bytes(plain));
        ck_assert(memcmp(hg, hp, ts_rlwe_ksk_bytes(gk)) != 0);
        ts_free(hp);
        /* ... written the same */
        ts_writer_t wa, wb;
        ts_writer_init(&wa);
        ts_writer_init(&wb);
        ts_rlwe_ksk_put_body(&wa, gk, false);
        ts_rlwe_ksk_put_body(&wb, plain, false);
        ck_assert_ts_ok(wa.err);
        ck_assert_ts_ok(wb.err);
        ck_assert_uint_eq(wa.len, wb.len);
        ck_assert_msg(!memcmp(wa.buf, wb.buf, wa.len), "k=%llu: body is not the key itself",
                      (unsigned long long)k);
        /* read back: held as the original Galois key */
        ts_reader_t rd;
        ts_reader_init(&rd, wa.buf, wa.len);
        ts_rlwe_ksk_t *back;
        ck_assert_ts_ok(ts_rlwe_ksk_get_body(&rd, r, 3, 0, k, gk->seed, false, &back));
        uint8_t *hb = ts_test_backend_host(r, back->data, ts_rlwe_ksk_bytes(back));
        ck_assert(!memcmp(hb, hg, ts_rlwe_ksk_bytes(gk)));
        ts_free(hb);
        ts_free(hg);
        ts_rlwe_ksk_free(back);
        ts_writer_clear(&wa);
        ts_writer_clear(&wb);
        ts_poly_free(sk_k);
        ts_rlwe_ksk_free(gk);
        ts_rlwe_ksk_free(plain);
        ts_prng_free(pa);
        ts_prng_free(pb);
    }
    ts_rlwe_sk_free(sk);
    ts_prng_free(p0);
    ts_ring_free(r);
}
END_TEST

START_TEST(test_gadget)
{
    uint64_t q;
    ck_assert_ts_ok(ts_primes_ntt(53, 2 * 2048, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
    ts_modulus_t m;
    ts_modulus_init(&m, q);
    const uint32_t cfg[][2] = {{7, 3}, {10, 5}, {1, 20}, {23, 2}};
    uint64_t x[256];
    int64_t dig[20 * 256];
    uint64_t s = 77;
    for (size_t c = 0; c < 4; c++) {
        ts_gadget_t g;
        ck_assert_ts_ok(ts_gadget_init(&g, q, cfg[c][0], cfg[c][1]));
        const int64_t bb = 1LL << cfg[c][0];
        for (int i = 0; i < 256; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            x[i] = (s >> 11) % q;
        }
        x[0] = 0;
        x[1] = q - 1;
        x[2] = q / 2;
        ts_gadget_decompose(&g, x, 256, dig);
        /* half a step of rounding (+1 for the multiply-shift), plus the digits' rounding of g */
        double bound =
            ldexp((double)q, -(int)(cfg[c][0] * cfg[c][1])) / 2 + 1 + cfg[c][1] * bb / 2.0;
        /* the residue form, and a reference: the multiply-shift rounding
         * written out, balanced digits by carrying from the bottom (the
         * former core/rlwe loop) and by the B/2-offset fields (the former
         * core/tfhe loop): all the same digits; the rounding matches the
         * exact one except within 2^(bits - 63) of a tie */
        uint64_t dm[20 * 256];
        ts_gadget_decompose_mod(&g, x, 256, dm);
        const uint32_t lb = cfg[c][0], L = cfg[c][1], bits = lb * L;
        int ties = 0;
        for (int i = 0; i < 256; i++) {
            uint64_t t =
                (uint64_t)(((ts_u128_t)x[i] * g.dec_mul + ((ts_u128_t)1 << (g.dec_shift - 1))) >>
                           g.dec_shift) &
                ((1ULL << bits) - 1);
            uint64_t te =
                (uint64_t)((((ts_u128_t)x[i] << bits) + q / 2) / q) & ((1ULL << bits) - 1);
            ties += t != te;
            uint64_t v = t, carry = 0, off = 0;
            for (uint32_t l = 0; l < L; l++)
                off |= (1ULL << (lb - 1)) << (l * lb);
            uint64_t f = (t + off) & ((1ULL << bits) - 1);
            for (uint32_t l = L; l-- > 0;) {
                uint64_t d = (v & ((1ULL << lb) - 1)) + carry;
                v >>= lb;
                carry = d >= (1ULL << (lb - 1)) ? 1 : 0;
                int64_t want = (int64_t)d - (int64_t)(carry << lb);
                int64_t want2 = (int64_t)((f >> ((L - 1 - l) * lb)) & ((1ULL << lb) - 1)) -
                                (int64_t)(1ULL << (lb - 1));
                ck_assert_int_eq(dig[l * 256 + i], want);
                ck_assert_int_eq(dig[l * 256 + i], want2);
                ck_assert_uint_eq(dm[l * 256 + i],
                                  want < 0 ? q - (uint64_t)(-want) : (uint64_t)want);
            }
        }
        ck_assert_int_le(ties, 1);
        for (int i = 0; i < 256; i++) {
            uint64_t acc = 0;
            for (uint32_t l = 0; l < cfg[c][1]; l++) {
                int64_t d = dig[l * 256 + i];
                ck_assert(d >= -bb / 2 && d < bb / 2 + (bb == 2 ? 1 : 0));
                uint64_t dm = d < 0 ? q - (uint64_t)(-d) : (uint64_t)d;
                acc = ts_mod_add(acc, ts_mod_mul(dm, g.g[l], &m), q);
            }
            uint64_t diff = ts_mod_sub(acc, x[i], q);
            double err = diff > q / 2 ? (double)(q - diff) : (double)diff;
            ck_assert_msg(err <= bound, "gadget (%u,%u) x=%llu err %.0f bound %.0f", cfg[c][0],
                          cfg[c][1], (unsigned long long)x[i], err, bound);
        }
    }
    ts_gadget_t g;
    ck_assert_ts_status(ts_gadget_init(&g, q, 31, 2), TS_EINVAL);
    ck_assert_ts_status(ts_gadget_init(&g, q, 21, 3), TS_EINVAL);
}
END_TEST

/* Allocation failures anywhere in key generation or switching: TS_ENOMEM, no leak. */
START_TEST(test_rlwe_alloc_failures)
{
    ck_assert_ptr_nonnull(ts_backend_default());
    uint64_t q[3], p[1];
    ck_assert_ts_ok(ts_primes_ntt(40, 256, 3, 0, NULL, 0, q));
    ck_assert_ts_ok(ts_primes_ntt(50, 256, 1, 0, NULL, 0, p));
    ts_ring_params_t prm = {.n = 128, .q = q, .q_count = 3, .p = p, .p_count = 1};
    ts_ring_t *r;
    ck_assert_ts_ok(ts_ring_new(&prm, &r));
    ts_prng_t *prng = seeded(8);
    bool done = false;
    for (uint64_t n = 1; n < 2000 && !done; n++) {
        int64_t live = ts_alloc_live();
        ts_rlwe_sk_t *sk = NULL;
        ts_rlwe_pk_t *pk = NULL;
        ts_rlwe_ksk_t *rk = NULL;
        ts_rlwe_galois_keys_t *gk = NULL;
        ts_rlwe_ks_t *ks = NULL;
        ts_rlwe_decomp_t *d = NULL;
        ts_poly_t *c = NULL, *u0 = NULL, *u1 = NULL;
        const int64_t steps[] = {1, -1};
        ts_alloc_fail_after(n, true);
        ts_status_t st = ts_rlwe_sk_new(r, prng, 0, &sk);
        if (st == TS_OK)
            st = ts_rlwe_pk_new(sk, prng, &pk);
        if (st == TS_OK)
            st = ts_rlwe_relin_key_new(sk, 3, prng, &rk);
        if (st == TS_OK)
            st = ts_rlwe_galois_keys_new(sk, steps, 2, true, 3, prng, &gk);
        if (st == TS_OK)
            st = ts_rlwe_ks_new(r, 3, &ks);
        if (st == TS_OK)
            st = ts_rlwe_decomp_new(ks, &d);
        if (st == TS_OK)
            st = ts_poly_new(r, 3, 0, true, &c);
        if (st == TS_OK)
            st = ts_poly_new(r, 3, 0, true, &u0);
        if (st == TS_OK)
            st = ts_poly_new(r, 3, 0, true, &u1);
        if (st == TS_OK)
            st = ts_rlwe_decompose(ks, c, d);
        if (st == TS_OK)
            st = ts_rlwe_keyswitch_hoisted(ks, d, gk->elements[0], gk->keys[0], u0, u1);
        ts_alloc_fail_after(0, false);
        if (st == TS_OK)
            done = true;
        else
            ck_assert_msg(st == TS_ENOMEM, "failure %llu: %s", (unsigned long long)n,
                          ts_status_name(st));
        ts_poly_free(c);
        ts_poly_free(u0);
        ts_poly_free(u1);
        ts_rlwe_decomp_free(d);
        ts_rlwe_ks_free(ks);
        ts_rlwe_galois_keys_free(gk);
        ts_rlwe_ksk_free(rk);
        ts_rlwe_pk_free(pk);
        ts_rlwe_sk_free(sk);
        ck_assert_msg(ts_alloc_live() == live, "failure %llu: leak", (unsigned long long)n);
    }
    ck_assert(done);
    ts_prng_free(prng);
    ts_ring_free(r);
}
END_TEST

TS_TEST_SUITE(rlwe)
{
    Suite *s = suite_create("rlwe");
    TCase *tc = ts_tcase("rlwe", 0);
    tcase_add_test(tc, test_keys);
    tcase_add_test(tc, test_keyswitch_noise);
    tcase_add_test(tc, test_relin_galois);
    tcase_add_test(tc, test_keyswitch_qp);
    tcase_add_test(tc, test_galois_key_wire);
    tcase_add_test(tc, test_gadget);
    tcase_add_test(tc, test_rlwe_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * core/math: modular arithmetic vs a 128-bit reference, primes, the NTT vs
 * schoolbook negacyclic multiplication (every N = 2^1..2^12, six prime
 * classes, both implementations), AVX2 vs portable bit-exactness, the NTT
 * automorphism permutation, and RNS composition / conversion / ModDown vs
 * exact big-integer arithmetic.
 */
#include "tests/unit/ts_test.h"

#include "core/math/math.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    /* splitmix64: deterministic test data */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t ref_mulmod(uint64_t a, uint64_t b, uint64_t q)
{
    return (uint64_t)(((ts_u128_t)a * b) % q);
}

static const uint32_t prime_bits[] = {30, 40, 50, 53, 60, 61};
#define NBITS (sizeof prime_bits / sizeof prime_bits[0])

START_TEST(test_modarith)
{
    const uint64_t qs[] = {3,
                           17,
                           65537,
                           1073479681ULL,
                           1152921504606748673ULL,
                           (1ULL << 62) - 57 /* largest prime < 2^62 */,
                           2305843009213693951ULL};
    for (size_t qi = 0; qi < sizeof qs / sizeof qs[0]; qi++) {
        const uint64_t q = qs[qi];
        ts_modulus_t m;
        ck_assert_ts_ok(ts_modulus_init(&m, q));
        const uint64_t edge[] = {0, 1, 2, q - 1, q - 2, q / 2, q >> 1 | 1};
        for (int it = 0; it < 20000; it++) {
            uint64_t a, b;
            if (it < 49) {
                a = edge[it % 7];
                b = edge[it / 7];
            } else {
                a = rnd() % q;
                b = rnd() % q;
            }
            uint64_t want = ref_mulmod(a, b, q);
            ck_assert_uint_eq(ts_mod_mul(a, b, &m), want);
            uint64_t bp = ts_shoup_precompute(b, q);
            ck_assert_uint_eq(ts_mod_mul_shoup(a, b, bp, q), want);
            /* Shoup accepts any 64-bit a; lazy result in [0, 2q) */
            uint64_t big = it < 49 ? ~0ULL - (uint64_t)it : rnd();
            uint64_t lz = ts_mod_mul_shoup_lazy(big, b, bp, q);
            ck_assert_msg(lz < 2 * q, "lazy shoup out of range");
            ck_assert_uint_eq(lz % q, ref_mulmod(big % q, b, q));
            /* Barrett on one word and on 128 bits */
            uint64_t w = it < 49 ? edge[it % 7] * 3 + (uint64_t)it : rnd();
            ck_assert_uint_eq(ts_mod_reduce64(w, &m), w % q);
            uint64_t hi = rnd(), lo = rnd();
            if (it < 10)
                hi = ~0ULL, lo = ~0ULL - (uint64_t)it;
            ts_u128_t x = ((ts_u128_t)hi << 64) | lo;
            ck_assert_uint_eq(ts_mod_reduce128(hi, lo, &m), (uint64_t)(x % q));
            ck_assert_uint_eq(ts_mod_add(a, b, q), (uint64_t)(((ts_u128_t)a + b) % q));
            ck_assert_uint_eq(ts_mod_sub(a, b, q), (uint64_t)(((ts_u128_t)a + q - b) % q));
            ck_assert_uint_eq(ts_mod_neg(a, q), (q - a) % q);
            if (a != 0 && q > 2 && qi != 6) {
                uint64_t inv = ts_mod_inv(a, q);
                ck_assert_uint_eq(ref_mulmod(a, inv, q), 1);
            }
        }
        if (qi != 6) { /* Fermat for primes */
            uint64_t a = 1 + rnd() % (q - 1);
            ck_assert_uint_eq(ts_mod_pow(a, q - 1, &m), 1);
        }
    }
    ts_modulus_t m;
    ck_assert_ts_status(ts_modulus_init(&m, 1ULL << 62), TS_EINVAL);
    ck_assert_ts_status(ts_modulus_init(&m, 1), TS_EINVAL);
    ck_assert_uint_eq(ts_mod_inv(6, 9), 0);
}
END_TEST

static bool trial_prime(uint64_t n)
{
    if (n < 2)
        return false;
    for (uint64_t d = 2; d * d <= n; d++)
        if (n % d == 0)
            return false;
    return true;
}

START_TEST(test_primes)
{
    for (uint64_t n = 0; n < 20000; n++)
        ck_assert_msg(ts_is_prime(n) == trial_prime(n), "is_prime(%llu)", (unsigned long long)n);
    /* strong pseudoprimes to several bases, and Carmichael numbers */
    ck_assert(!ts_is_prime(3215031751ULL));
    ck_assert(!ts_is_prime(3825123056546413051ULL));
    ck_assert(!ts_is_prime(561));
    ck_assert(ts_is_prime(18446744073709551557ULL)); /* largest 64-bit prime */
    ck_assert(ts_is_prime(1152921504606748673ULL));
    for (uint32_t logn = 1; logn <= 17; logn += 4) {
        uint64_t two_n = 2ULL << logn;
        for (size_t b = 0; b < NBITS; b++) {
            for (int order = 0; order < 3; order++) {
                uint64_t ps[6];
                ck_assert_ts_ok(
                    ts_primes_ntt(prime_bits[b], two_n, 6, (ts_primes_order_t)order, NULL, 0, ps));
                for (int i = 0; i < 6; i++) {
                    ck_assert(ts_is_prime(ps[i]));
                    ck_assert_uint_eq(ps[i] % two_n, 1);
                    ck_assert(ps[i] < (1ULL << 62));
                    for (int j = 0; j < i; j++)
                        ck_assert(ps[i] != ps[j]);
                    if (order == TS_PRIMES_DESCENDING) {
                        ck_assert(ps[i] < (1ULL << prime_bits[b]));
                        ck_assert(ps[i] > (1ULL << (prime_bits[b] - 1)));
                        if (i)
                            ck_assert(ps[i] < ps[i - 1]);
                    } else if (order == TS_PRIMES_ASCENDING) {
                        ck_assert(ps[i] > (1ULL << prime_bits[b]));
                        if (i)
                            ck_assert(ps[i] > ps[i - 1]);
                    }
                }
                /* exclusion list */
                uint64_t more[2];
                ck_assert_ts_ok(
                    ts_primes_ntt(prime_bits[b], two_n, 2, (ts_primes_order_t)order, ps, 6, more));
                for (int i = 0; i < 6; i++)
                    ck_assert(more[0] != ps[i] && more[1] != ps[i]);
            }
        }
    }
    uint64_t p;
    ck_assert_ts_status(ts_primes_ntt(62, 4, 1, 0, NULL, 0, &p), TS_EINVAL);
    ck_assert_ts_status(ts_primes_ntt(10, 1 << 12, 1, 0, NULL, 0, &p), TS_EINVAL);
    /* the FHElium / seed primes are NTT-friendly for N = 2^14 */
    ck_assert_uint_eq(1099510054913ULL % (1 << 15), 1);
    ck_assert(ts_is_prime(1099510054913ULL));
}
END_TEST

/* c = a * b in Z_q[X]/(X^n + 1), schoolbook. */
static void schoolbook(const uint64_t *a, const uint64_t *b, uint64_t *c, uint32_t n,
                       const ts_modulus_t *m)
{
    const uint64_t q = m->q;
    for (uint32_t k = 0; k < n; k++)
        c[k] = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) {
            uint64_t p = ts_mod_mul(a[i], b[j], m);
            uint32_t k = i + j;
            if (k >= n)
                c[k - n] = ts_mod_sub(c[k - n], p, q);
            else
                c[k] = ts_mod_add(c[k], p, q);
        }
}

static uint64_t negacyclic_coeff(const uint64_t *a, const uint64_t *b, uint32_t n, uint32_t k,
                                 const ts_modulus_t *m)
{
    uint64_t c = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = (k + n - i) % n;
        uint64_t p = ts_mod_mul(a[i], b[j], m);
        c = (i <= k) ? ts_mod_add(c, p, m->q) : ts_mod_sub(c, p, m->q);
    }
    return c;
}

static void check_ntt_size(uint32_t logn, size_t b, bool full)
{
    const uint32_t n = 1u << logn;
    uint64_t q;
    ck_assert_ts_ok(ts_primes_ntt(prime_bits[b], 2ULL * n, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
    ts_ntt_table_t *t;
    ck_assert_ts_ok(ts_ntt_table_new(n, q, &t));
    const ts_modulus_t *m = &t->mod;
    uint64_t *a = ts_malloc(n * 8), *bb = ts_malloc(n * 8), *c = ts_malloc(n * 8);
    uint64_t *x = ts_malloc(n * 8), *y = ts_malloc(n * 8), *ref = ts_malloc(n * 8);
    for (uint32_t i = 0; i < n; i++) {
        a[i] = rnd() % q;
        bb[i] = rnd() % q;
    }
    if (full)
        schoolbook(a, bb, c, n, m);
    const bool have_avx2 = ts_cpu_has_avx2(), have_avx512 = ts_cpu_has_avx512();
    for (int impl = TS_NTT_IMPL_PORTABLE; impl <= TS_NTT_IMPL_AVX512; impl++) {
        if ((impl == TS_NTT_IMPL_AVX2 && !have_avx2) ||
            (impl == TS_NTT_IMPL_AVX512 && !have_avx512))
            continue;
        memcpy(x, a, n * 8);
        memcpy(y, bb, n * 8);
        ck_assert_ts_ok(ts_ntt_forward_impl(t, x, (ts_ntt_impl_t)impl));
        ck_assert_ts_ok(ts_ntt_forward_impl(t, y, (ts_ntt_impl_t)impl));
        /* the evaluation order contract, on a few slots */
        for (uint32_t s = 0; s < n && s < 4; s++) {
            uint32_t i = (uint32_t)(rnd() % n);
            uint64_t pt = ts_mod_pow(t->psi, 2ULL * ts_bitrev(i, logn) + 1, m), acc = 0, pw = 1;
            for (uint32_t j = 0; j < n; j++) {
                acc = ts_mod_add(acc, ts_mod_mul(a[j], pw, m), q);
                pw = ts_mod_mul(pw, pt, m);
            }
            ck_assert_msg(acc == x[i], "NTT slot %u of N=%u q=%llu impl %d", i, n,
                          (unsigned long long)q, impl);
        }
        for (uint32_t i = 0; i < n; i++)
            x[i] = ts_mod_mul(x[i], y[i], m);
        ck_assert_ts_ok(ts_ntt_inverse_impl(t, x, (ts_ntt_impl_t)impl));
        if (full) {
            for (uint32_t i = 0; i < n; i++)
                ck_assert_msg(x[i] == c[i], "N=%u bits=%u impl=%d coeff %u: %llu vs %llu", n,
                              prime_bits[b], impl, i, (unsigned long long)x[i],
                              (unsigned long long)c[i]);
        } else {
            for (int s = 0; s < 6; s++) {
                uint32_t k = s == 0 ? 0 : s == 1 ? n - 1 : (uint32_t)(rnd() % n);
                ck_assert_uint_eq(x[k], negacyclic_coeff(a, bb, n, k, m));
            }
        }
        /* lazy inputs in [0, 4q) give the same transforms, round trip is the identity */
        for (uint32_t i = 0; i < n; i++)
            y[i] = a[i] + q * (rnd() % 4);
        ck_assert_ts_ok(ts_ntt_forward_impl(t, y, (ts_ntt_impl_t)impl));
        memcpy(ref, a, n * 8);
        ts_ntt_forward_impl(t, ref, TS_NTT_IMPL_PORTABLE);
        ck_assert_int_eq(memcmp(y, ref, n * 8), 0); /* bit-exact with the portable path */
        for (uint32_t i = 0; i < n; i++)
            y[i] += q * (rnd() % 4);
        ck_assert_ts_ok(ts_ntt_inverse_impl(t, y, (ts_ntt_impl_t)impl));
        ck_assert_int_eq(memcmp(y, a, n * 8), 0);
    }
    ts_free(a);
    ts_free(bb);
    ts_free(c);
    ts_free(x);
    ts_free(y);
    ts_free(ref);
    ts_ntt_table_free(t);
}

START_TEST(test_ntt_schoolbook)
{
    const uint32_t max_logn = ts_test_quick() ? 9 : 12;
    for (uint32_t logn = 1; logn <= max_logn; logn++)
        for (size_t b = 0; b < NBITS; b++)
            check_ntt_size(logn, b, true);
}
END_TEST

START_TEST(test_ntt_large)
{
    const uint32_t max_logn = ts_test_quick() ? 14 : 17;
    for (uint32_t logn = 13; logn <= max_logn; logn++)
        for (size_t b = 0; b < NBITS; b += (logn == 17 ? 2 : 1))
            if (prime_bits[b] > logn + 2)
                check_ntt_size(logn, b, false);
    ts_ntt_table_t *t;
    ck_assert_ts_status(ts_ntt_table_new(1u << 18, 1152921504606748673ULL, &t), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_table_new(1024, 1152921504606748673ULL + 2, &t), TS_EINVAL);
    ck_assert_ts_status(ts_ntt_table_new(1024, 17, &t), TS_EINVAL);
}
END_TEST

START_TEST(test_ntt_automorphism)
{
    const uint32_t n = 64;
    uint64_t q;
    ck_assert_ts_ok(ts_primes_ntt(50, 2 * n, 1, 0, NULL, 0, &q));
    ts_ntt_table_t *t;
    ck_assert_ts_ok(ts_ntt_table_new(n, q, &t));
    uint64_t a[64], ak[64], na[64], idx_out[64];
    uint32_t idx[64];
    for (uint32_t i = 0; i < n; i++)
        a[i] = rnd() % q;
    const uint64_t ks[] = {1, 3, 5, 25, 127, 2 * 64 - 1, 5 + 128 * 3};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        uint64_t k = ks[ki] % (2 * n);
        /* coefficient-form permutation with sign: X^i -> X^(ik mod 2N) */
        for (uint32_t i = 0; i < n; i++)
            ak[i] = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t e = (i * k) % (2 * n);
            if (e < n)
                ak[e] = a[i];
            else
                ak[e - n] = ts_mod_neg(a[i], q);
        }
        memcpy(na, a, sizeof a);
        ts_ntt_forward(t, na);
        ts_ntt_forward(t, ak);
        ts_ntt_automorphism_index(n, ks[ki], idx);
        for (uint32_t i = 0; i < n; i++)
            idx_out[i] = na[idx[i]];
        ck_assert_int_eq(memcmp(idx_out, ak, sizeof ak), 0);
    }
    ts_ntt_table_free(t);
}
END_TEST

/* x mod q for a signed big integer (mag, neg) of w words. */
static uint64_t mp_mod(const uint64_t *mag, bool neg, uint32_t w, uint64_t q)
{
    ts_u128_t r = 0;
    for (uint32_t i = w; i-- > 0;)
        r = ((r << 64) | mag[i]) % q;
    uint64_t v = (uint64_t)r;
    return neg && v ? q - v : v;
}

START_TEST(test_rns)
{
    uint64_t qs[12], ps[4];
    ck_assert_ts_ok(ts_primes_ntt(50, 1 << 12, 12, TS_PRIMES_DESCENDING, NULL, 0, qs));
    ck_assert_ts_ok(ts_primes_ntt(61, 1 << 12, 4, TS_PRIMES_DESCENDING, NULL, 0, ps));
    qs[0] = 1152921504606748673ULL; /* a 60-bit one in the mix */
    ts_rns_basis_t *bq;
    ck_assert_ts_ok(ts_rns_basis_new(qs, 12, &bq));
    const uint32_t w = bq->words;
    uint64_t mag[16], got[16], res[12], scratch[32];
    for (int it = 0; it < 3000; it++) {
        /* a random centered x with |x| < Q/2, plus the edges +-floor(Q/2), 0 */
        bool neg = rnd() & 1;
        uint32_t top_bits = (uint32_t)(rnd() % (uint32_t)(bq->log2_prod - 1.0)) + 1;
        for (uint32_t i = 0; i < w; i++) {
            uint32_t lo = 64 * i;
            mag[i] = rnd();
            if (lo >= top_bits)
                mag[i] = 0;
            else if (top_bits - lo < 64)
                mag[i] &= (1ULL << (top_bits - lo)) - 1;
        }
        if (it < 2)
            memcpy(mag, bq->half, w * 8);
        neg = it == 0 ? true : it == 1 ? false : neg;
        if (it == 2)
            memset(mag, 0, w * 8);
        bool zero = true;
        for (uint32_t i = 0; i < w; i++)
            zero = zero && mag[i] == 0;
        if (zero)
            neg = false; /* 0 is not negative */
        for (uint32_t i = 0; i < 12; i++)
            res[i] = mp_mod(mag, neg, w, qs[i]);
        bool gneg;
        ts_rns_compose_mp(bq, res, 1, got, &gneg);
        ck_assert_int_eq(memcmp(got, mag, w * 8), 0);
        ck_assert_msg(gneg == neg, "it %d neg %d", it, (int)neg);
        long double ld = ts_rns_compose_ld(bq, res, 1, 0, scratch);
        long double want = 0;
        for (uint32_t i = w; i-- > 0;)
            want = want * 18446744073709551616.0L + mag[i];
        if (neg)
            want = -want;
        ck_assert(fabsl(ld - want) <= fabsl(want) * 1e-18L);
    }
    /* conversion Q -> P and ModDown vs exact arithmetic, at a few sizes of A */
    for (uint32_t na = 1; na <= 12; na += 3) {
        ts_rns_basis_t *ba;
        ck_assert_ts_ok(ts_rns_basis_new(qs, na, &ba));
        ts_rns_conv_t *conv;
        ck_assert_ts_ok(ts_rns_conv_new(qs, na, ps, 4, &conv));
        const size_t n = 37;
        uint64_t in[12 * 37], out[4 * 37];
        uint64_t mags[37][16];
        bool negs[37];
        for (size_t c = 0; c < n; c++) {
            /* |x| < A/2 * (1 - 2^-20): away from the documented ambiguity */
            negs[c] = rnd() & 1;
            memset(mags[c], 0, sizeof mags[c]);
            uint32_t bits = (uint32_t)(ba->log2_prod - 1.0 - 20.0 * (double)(rnd() % 2));
            for (uint32_t i = 0; i * 64 < bits; i++) {
                mags[c][i] = rnd();
                if (bits - 64 * i < 64)
                    mags[c][i] &= (1ULL << (bits - 64 * i)) - 1;
            }
            for (uint32_t i = 0; i < na; i++)
                in[i * n + c] = mp_mod(mags[c], negs[c], ba->words, qs[i]);
        }
        ts_rns_conv_apply(conv, in, n, out, n, n);
        for (size_t c = 0; c < n; c++)
            for (uint32_t j = 0; j < 4; j++)
                ck_assert_msg(out[j * n + c] == mp_mod(mags[c], negs[c], ba->words, ps[j]),
                              "conv na=%u coeff %zu limb %u", na, c, j);
        /* the largest residues (x = -1: every y_i = a_i - 1 when na = 1, the
         * largest sums of the reduction otherwise) and x = 1 */
        uint64_t edge[12 * 2], eo[4 * 2];
        for (uint32_t i = 0; i < na; i++) {
            edge[i * 2] = qs[i] - 1;
            edge[i * 2 + 1] = 1;
        }
        ts_rns_conv_apply(conv, edge, 2, eo, 2, 2);
        for (uint32_t j = 0; j < 4; j++) {
            ck_assert_uint_eq(eo[j * 2], ps[j] - 1);
            ck_assert_uint_eq(eo[j * 2 + 1], 1);
        }
        /* ModDown from Q_A * P to P dividing by A: y = x div A rounded, |error| <= 1 */
        uint64_t xb[4 * 37], md[4 * 37];
        int64_t qv[37];
        for (size_t c = 0; c < n; c++) {
            qv[c] = (int64_t)(rnd() % 2000000) - 1000000; /* x = qv * A + r, r = the centered x */
            for (uint32_t j = 0; j < 4; j++) {
                ts_modulus_t mj;
                ts_modulus_init(&mj, ps[j]);
                uint64_t am = conv->a_mod_b[j];
                uint64_t qvm = qv[c] < 0 ? ps[j] - (uint64_t)(-qv[c]) : (uint64_t)qv[c];
                xb[j * n + c] = ts_mod_add(ts_mod_mul(qvm, am, &mj), out[j * n + c], ps[j]);
            }
        }
        ts_rns_conv_moddown(conv, in, n, xb, md, n, n);
        for (size_t c = 0; c < n; c++)
            for (uint32_t j = 0; j < 4; j++) {
                uint64_t want = qv[c] < 0 ? ps[j] - (uint64_t)(-qv[c]) : (uint64_t)qv[c];
                ck_assert_msg(md[j * n + c] == want, "moddown na=%u coeff %zu", na, c);
            }
        /* in place (out aliasing x_b) */
        ts_rns_conv_moddown(conv, in, n, xb, xb, n, n);
        ck_assert_int_eq(memcmp(xb, md, sizeof md), 0);
        ts_rns_conv_free(conv);
        ts_rns_basis_free(ba);
    }
    /* one large source prime to smaller targets (the reducing single-prime path) */
    {
        ts_rns_conv_t *c1;
        ck_assert_ts_ok(ts_rns_conv_new(ps, 1, qs, 12, &c1));
        uint64_t x[64], o[12 * 64];
        for (int k = 0; k < 64; k++)
            x[k] = k < 2 ? (k ? ps[0] / 2 : ps[0] / 2 + 1) : rnd() % ps[0];
        ts_rns_conv_apply(c1, x, 64, o, 64, 64);
        for (int k = 0; k < 64; k++) {
            bool neg = x[k] > ps[0] / 2;
            uint64_t mag = neg ? ps[0] - x[k] : x[k];
            for (int j = 0; j < 12; j++)
                ck_assert_uint_eq(o[j * 64 + k], mp_mod(&mag, neg && mag, 1, qs[j]));
        }
        ts_rns_conv_free(c1);
    }
    {
        /* nine 61-bit sources: sum a_i > 2^64, so the portable kernel reduces
         * by Barrett (fewer sources take the Montgomery step); exact results */
        uint64_t big[9];
        ck_assert_ts_ok(ts_primes_ntt(61, 1 << 12, 9, TS_PRIMES_DESCENDING, NULL, 0, big));
        ts_rns_basis_t *bb;
        ck_assert_ts_ok(ts_rns_basis_new(big, 9, &bb));
        ts_rns_conv_t *cb;
        ck_assert_ts_ok(ts_rns_conv_new(big, 9, qs, 12, &cb));
        ck_assert_ptr_null(cb->ahat_mod_b_mont);
        enum { NB = 21 };
        uint64_t in[9 * NB], out[12 * NB], mag[NB][10];
        bool neg[NB];
        for (size_t c = 0; c < NB; c++) {
            neg[c] = c & 1;
            memset(mag[c], 0, sizeof mag[c]);
            uint32_t bits = (uint32_t)(bb->log2_prod - 2.0);
            for (uint32_t i = 0; i * 64 < bits; i++) {
                mag[c][i] = c < 2 ? ~0ULL : rnd(); /* c < 2: the largest magnitudes */
                if (bits - 64 * i < 64)
                    mag[c][i] &= (1ULL << (bits - 64 * i)) - 1;
            }
            for (uint32_t i = 0; i < 9; i++)
                in[i * NB + c] = mp_mod(mag[c], neg[c], bb->words, big[i]);
        }
        ts_rns_conv_apply(cb, in, NB, out, NB, NB);
        for (size_t c = 0; c < NB; c++)
            for (uint32_t j = 0; j < 12; j++)
                ck_assert_msg(out[j * NB + c] == mp_mod(mag[c], neg[c], bb->words, qs[j]),
                              "conv (Barrett) coeff %zu limb %u", c, j);
        ts_rns_conv_free(cb);
        ts_rns_basis_free(bb);
    }
    ts_rns_basis_t *bad;
    uint64_t dup[2] = {qs[1], qs[1]};
    ck_assert_ts_status(ts_rns_basis_new(dup, 2, &bad), TS_EINVAL);
    ts_rns_conv_t *badc;
    ck_assert_ts_status(ts_rns_conv_new(qs, 2, qs + 1, 2, &badc), TS_EINVAL);
    ts_rns_basis_free(bq);
}
END_TEST

/* The AVX-512 basis conversion and ModDown against the portable code, bit for
 * bit: every source count 2..15, target primes of 30..61 bits (IFMA and
 * 64-bit products), sources with and without a 60-bit prime, lengths with
 * and without a tail, edge residues 0 and q - 1. */
START_TEST(test_rns_conv_impls)
{
    uint64_t src[16], tgt[12], tmp[4];
    ck_assert_ts_ok(ts_primes_ntt(40, 1 << 12, 15, TS_PRIMES_DESCENDING, NULL, 0, src));
    src[15] = 1152921504606748673ULL; /* 60-bit */
    const uint32_t tb[4] = {30, 49, 60, 61};
    for (int g = 0; g < 4; g++) {
        ck_assert_ts_ok(ts_primes_ntt(tb[g], 1 << 12, 3, TS_PRIMES_NEAREST, src, 16, tmp));
        for (int k = 0; k < 3; k++)
            tgt[g * 3 + k] = tmp[k];
    }
    bool have = ts_cpu_has_avx512();
    for (uint32_t na = 1; na <= 15; na++) {
        for (int big = 0; big < 2; big++) {
            const uint64_t *from = big ? src + 16 - na : src; /* big: includes the 60-bit one */
            ts_rns_conv_t *conv;
            ck_assert_ts_ok(ts_rns_conv_new(from, na, tgt, 12, &conv));
            const size_t n = 16 * 5 + 3 + (size_t)na;
            uint64_t *in = malloc(sizeof(uint64_t) * 15 * n);
            uint64_t *xb = malloc(sizeof(uint64_t) * 12 * n);
            uint64_t *o1 = malloc(sizeof(uint64_t) * 12 * n);
            uint64_t *o2 = malloc(sizeof(uint64_t) * 12 * n);
            for (uint32_t i = 0; i < na; i++)
                for (size_t k = 0; k < n; k++)
                    in[i * n + k] = k < 3   ? (k == 0 ? 0 : from[i] - k)
                                    : k < 5 ? from[i] / 2 + (k - 3) /* the centering edge */
                                            : rnd() % from[i];
            for (uint32_t j = 0; j < 12; j++)
                for (size_t k = 0; k < n; k++)
                    xb[j * n + k] = k == 5 ? tgt[j] - 1 : rnd() % tgt[j];
            ts_status_t want = have ? TS_OK : TS_ENOTSUP;
            ck_assert_ts_ok(ts_rns_conv_apply_impl(conv, in, n, o1, n, n, TS_NTT_IMPL_PORTABLE));
            ck_assert_ts_status(ts_rns_conv_apply_impl(conv, in, n, o2, n, n, TS_NTT_IMPL_AVX512),
                                want);
            if (have)
                ck_assert_msg(!memcmp(o1, o2, sizeof(uint64_t) * 12 * n), "conv na=%u big=%d", na,
                              big);
            ck_assert_ts_ok(
                ts_rns_conv_moddown_impl(conv, in, n, xb, o1, n, n, TS_NTT_IMPL_PORTABLE));
            ck_assert_ts_status(
                ts_rns_conv_moddown_impl(conv, in, n, xb, o2, n, n, TS_NTT_IMPL_AVX512), want);
            if (have) {
                ck_assert_msg(!memcmp(o1, o2, sizeof(uint64_t) * 12 * n), "moddown na=%u", na);
                /* in place */
                ck_assert_ts_ok(
                    ts_rns_conv_moddown_impl(conv, in, n, xb, xb, n, n, TS_NTT_IMPL_AVX512));
                ck_assert(!memcmp(o1, xb, sizeof(uint64_t) * 12 * n));
            }
            /* the automatic choice agrees too */
            ts_rns_conv_apply(conv, in, n, o2, n, n);
            ck_assert_ts_ok(ts_rns_conv_apply_impl(conv, in, n, o1, n, n, TS_NTT_IMPL_PORTABLE));
            ck_assert(!memcmp(o1, o2, sizeof(uint64_t) * 12 * n));
            free(in);
            free(xb);
            free(o1);
            free(o2);
            ts_rns_conv_free(conv);
        }
    }
}
END_TEST

/* Element-wise vector ops: AVX-512 vs portable vs the scalar definitions,
 * word for word, for primes of 17..61 bits (both sides of the 2^50 IFMA
 * limit), lengths with tails, edge residues, output aliasing an input. */
START_TEST(test_vec_ops)
{
    const uint32_t bits[] = {17, 30, 31, 40, 49, 50, 51, 60, 61};
    bool have = ts_cpu_has_avx512();
    for (size_t bi = 0; bi < sizeof bits / sizeof bits[0]; bi++) {
        uint64_t q;
        ck_assert_ts_ok(ts_primes_ntt(bits[bi], 1 << 10, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
        ts_modulus_t m;
        ck_assert_ts_ok(ts_modulus_init(&m, q));
        const size_t n = 203;
        uint64_t a[203], b[203], o0[203], want[203], o1[203], o2[203];
        for (size_t i = 0; i < n; i++) {
            a[i] = i < 4 ? (i & 1 ? q - 1 : 0) : rnd() % q;
            b[i] = i < 4 ? (i & 2 ? q - 1 : 0) : rnd() % q;
            o0[i] = i == 5 ? q - 1 : rnd() % q;
        }
        const uint64_t s = rnd() % q;
        for (int op = TS_VEC_ADD; op <= TS_VEC_SUB_MUL_SCALAR; op++) {
            for (size_t i = 0; i < n; i++) {
                switch (op) {
                case TS_VEC_ADD:
                    want[i] = ts_mod_add(a[i], b[i], q);
                    break;
                case TS_VEC_SUB:
                    want[i] = ts_mod_sub(a[i], b[i], q);
                    break;
                case TS_VEC_MUL:
                    want[i] = ts_mod_mul(a[i], b[i], &m);
                    break;
                case TS_VEC_MUL_ADD:
                    want[i] = ts_mod_add(o0[i], ts_mod_mul(a[i], b[i], &m), q);
                    break;
                case TS_VEC_MUL_SCALAR_ADD:
                    want[i] = ts_mod_add(o0[i], ts_mod_mul(a[i], s, &m), q);
                    break;
                case TS_VEC_SUB_MUL_SCALAR:
                    want[i] = ts_mod_mul(ts_mod_sub(a[i], b[i], q), s, &m);
                    break;
                default:
                    want[i] = ts_mod_mul(a[i], s, &m);
                    break;
                }
            }
            memcpy(o1, o0, sizeof o1);
            memcpy(o2, o0, sizeof o2);
            ck_assert_ts_ok(
                ts_vec_op_impl((ts_vec_op_t)op, o1, a, b, s, n, &m, TS_NTT_IMPL_PORTABLE));
            ck_assert_msg(!memcmp(o1, want, sizeof want), "portable op %d q %u bits", op, bits[bi]);
            ck_assert_ts_status(
                ts_vec_op_impl((ts_vec_op_t)op, o2, a, b, s, n, &m, TS_NTT_IMPL_AVX512),
                have ? TS_OK : TS_ENOTSUP);
            if (have)
                ck_assert_msg(!memcmp(o2, want, sizeof want), "avx512 op %d q %u bits", op,
                              bits[bi]);
            /* aliasing: o = a */
            memcpy(o2, a, sizeof o2);
            if (op == TS_VEC_MUL_ADD || op == TS_VEC_MUL_SCALAR_ADD)
                continue;
            ts_vec_op((ts_vec_op_t)op, o2, o2, b, s, n, &m);
            ck_assert_msg(!memcmp(o2, want, sizeof want), "auto op %d q %u bits", op, bits[bi]);
        }
        ck_assert_ts_status(
            ts_vec_op_impl(TS_VEC_MUL_SCALAR, o1, a, NULL, q, n, &m, TS_NTT_IMPL_AUTO), TS_EINVAL);
        ck_assert_ts_status(
            ts_vec_op_impl(TS_VEC_MUL_SCALAR_ADD, o1, a, NULL, q, n, &m, TS_NTT_IMPL_AUTO),
            TS_EINVAL);
        ck_assert_ts_status(
            ts_vec_op_impl(TS_VEC_SUB_MUL_SCALAR, o1, a, NULL, s, n, &m, TS_NTT_IMPL_AUTO),
            TS_EINVAL); /* b is read */
    }
}
END_TEST

/* The centered lift mod p into Z_q: every kernel against the definition, for
 * p above and below q, with the edges 0, p/2, p/2 + 1, p - 1. */
START_TEST(test_vec_center_lift)
{
    const uint32_t pbits[] = {30, 40, 60, 61}, qbits[] = {30, 41, 59, 61};
    bool have = ts_cpu_has_avx512();
    for (int pi = 0; pi < 4; pi++)
        for (int qi = 0; qi < 4; qi++) {
            uint64_t pr, q;
            ck_assert_ts_ok(
                ts_primes_ntt(pbits[pi], 1 << 10, 1, TS_PRIMES_DESCENDING, NULL, 0, &pr));
            ck_assert_ts_ok(ts_primes_ntt(qbits[qi], 1 << 10, 1, TS_PRIMES_DESCENDING, &pr, 1, &q));
            ts_modulus_t m;
            ck_assert_ts_ok(ts_modulus_init(&m, q));
            const size_t n = 77;
            uint64_t x[77], want[77], o1[77], o2[77];
            for (size_t i = 0; i < n; i++) {
                x[i] = i == 0   ? 0
                       : i == 1 ? pr / 2
                       : i == 2 ? pr / 2 + 1
                       : i == 3 ? pr - 1
                                : rnd() % pr;
                want[i] = x[i] <= pr / 2 ? x[i] % q : (q - (pr - x[i]) % q) % q;
            }
            ck_assert_ts_ok(ts_vec_center_lift_impl(o1, x, n, pr, &m, TS_NTT_IMPL_PORTABLE));
            ck_assert(!memcmp(o1, want, sizeof want));
            ck_assert_ts_status(ts_vec_center_lift_impl(o2, x, n, pr, &m, TS_NTT_IMPL_AVX512),
                                have ? TS_OK : TS_ENOTSUP);
            if (have)
                ck_assert_msg(!memcmp(o2, want, sizeof want), "lift p %u q %u bits", pbits[pi],
                              qbits[qi]);
            memcpy(o2, x, sizeof x);
            ts_vec_center_lift(o2, o2, n, pr, &m); /* in place */
            ck_assert(!memcmp(o2, want, sizeof want));
        }
}
END_TEST

/* The rounded top of 128-bit products: every kernel against the definition,
 * with the edges (0, the largest operands, the rounding's halfway point). */
START_TEST(test_vec_mul_round_shift)
{
    const unsigned shifts[] = {65, 90, 100, 127};
    bool have = ts_cpu_has_avx512();
    for (int si = 0; si < 4; si++) {
        unsigned sh = shifts[si];
        const uint64_t ms[] = {0, 1, rnd(), ~0ULL, 0x9e3779b97f4a7c15ULL};
        for (int mi = 0; mi < 5; mi++) {
            uint64_t m = ms[mi];
            const size_t n = 77;
            uint64_t x[77], want[77], o1[77], o2[77];
            for (size_t i = 0; i < n; i++) {
                x[i] = i == 0 ? 0 : i == 1 ? (1ULL << 62) - 1 : rnd() >> 2; /* x m < 2^126 */
                ts_u128_t v = (ts_u128_t)x[i] * m + ((ts_u128_t)1 << (sh - 1));
                want[i] = (uint64_t)(v >> sh);
            }
            ck_assert_ts_ok(ts_vec_mul_round_shift_impl(o1, x, n, m, sh, TS_NTT_IMPL_PORTABLE));
            ck_assert(!memcmp(o1, want, sizeof want));
            ck_assert_ts_status(ts_vec_mul_round_shift_impl(o2, x, n, m, sh, TS_NTT_IMPL_AVX512),
                                have ? TS_OK : TS_ENOTSUP);
            if (have)
                ck_assert_msg(!memcmp(o2, want, sizeof want), "shift %u m %llx", sh,
                              (unsigned long long)m);
            memcpy(o2, x, sizeof x);
            ts_vec_mul_round_shift(o2, o2, n, m, sh); /* in place */
            ck_assert(!memcmp(o2, want, sizeof want));
        }
    }
    uint64_t w = 0;
    ck_assert_ts_status(ts_vec_mul_round_shift_impl(&w, &w, 1, 1, 64, TS_NTT_IMPL_AUTO), TS_EINVAL);
    ck_assert_ts_status(ts_vec_mul_round_shift_impl(&w, &w, 1, 1, 128, TS_NTT_IMPL_AUTO),
                        TS_EINVAL);
}
END_TEST

/* Signed integers to residues: every kernel against the definition. */
START_TEST(test_vec_from_i64)
{
    const uint32_t qbits[] = {20, 30, 41, 50, 61};
    bool have = ts_cpu_has_avx512();
    for (int qi = 0; qi < 5; qi++) {
        uint64_t q;
        ck_assert_ts_ok(ts_primes_ntt(qbits[qi], 1 << 10, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
        ts_modulus_t m;
        ck_assert_ts_ok(ts_modulus_init(&m, q));
        const size_t n = 83;
        int64_t x[83];
        uint64_t want[83], o1[83], o2[83];
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd();
            x[i] = i == 0   ? INT64_MAX
                   : i == 1 ? -INT64_MAX
                   : i == 2 ? 0
                   : i == 3 ? -(int64_t)q
                   : i == 4 ? INT64_MIN
                   : i % 3  ? (int64_t)(r >> (r & 63)) * (r & 1 ? -1 : 1)
                            : (int64_t)(r % 41) - 20;
            int64_t v = x[i] % (int64_t)q;
            want[i] = v < 0 ? (uint64_t)(v + (int64_t)q) : (uint64_t)v;
        }
        ck_assert_ts_ok(ts_vec_from_i64_impl(o1, x, n, &m, TS_NTT_IMPL_PORTABLE));
        ck_assert(!memcmp(o1, want, sizeof want));
        ck_assert_ts_status(ts_vec_from_i64_impl(o2, x, n, &m, TS_NTT_IMPL_AVX512),
                            have ? TS_OK : TS_ENOTSUP);
        if (have)
            ck_assert_msg(!memcmp(o2, want, sizeof want), "from_i64 q %u bits", qbits[qi]);
        memcpy(o2, x, sizeof x);
        ts_vec_from_i64(o2, (const int64_t *)o2, n, &m); /* in place */
        ck_assert(!memcmp(o2, want, sizeof want));
    }
}
END_TEST

/* Dot products: every kernel against the term-by-term definition, for 1..300
 * terms (reductions after 15 in the portable code), q - 1 terms, primes on
 * both sides of the 2^50 IFMA limit and up to 61 bits (the split-operand
 * kernel), and 1024 / 1025 terms of (q - 1)^2 (its accumulator bound). */
START_TEST(test_vec_dot)
{
    const uint32_t qbits[] = {30, 40, 49, 50, 51, 55, 60, 61};
    const size_t tcounts[] = {1, 2, 7, 15, 16, 40, 300};
    bool have = ts_cpu_has_avx512();
    enum { N = 45, T = 300 };
    static uint64_t xs[T][N], ys[T][N];
    const uint64_t *xp[T], *yp[T];
    for (int qi = 0; qi < 8; qi++) {
        uint64_t q;
        ck_assert_ts_ok(ts_primes_ntt(qbits[qi], 1 << 10, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
        ts_modulus_t m;
        ck_assert_ts_ok(ts_modulus_init(&m, q));
        for (int t = 0; t < T; t++) {
            for (int i = 0; i < N; i++) {
                xs[t][i] = i < 9 ? q - 1 : rnd() % q;
                ys[t][i] = i < 5 ? q - 1 : rnd() % q;
            }
            xp[t] = xs[t];
            yp[t] = ys[t];
        }
        for (size_t ti = 0; ti < 7; ti++) {
            const size_t terms = tcounts[ti];
            uint64_t want[N], o1[N], o2[N];
            for (int i = 0; i < N; i++) {
                uint64_t acc = 0;
                for (size_t t = 0; t < terms; t++)
                    acc = ts_mod_add(acc, ts_mod_mul(xs[t][i], ys[t][i], &m), q);
                want[i] = acc;
            }
            ck_assert_ts_ok(ts_vec_dot_impl(o1, xp, yp, terms, N, &m, TS_NTT_IMPL_PORTABLE));
            ck_assert(!memcmp(o1, want, sizeof want));
            ck_assert_ts_status(ts_vec_dot_impl(o2, xp, yp, terms, N, &m, TS_NTT_IMPL_AVX512),
                                have ? TS_OK : TS_ENOTSUP);
            if (have)
                ck_assert_msg(!memcmp(o2, want, sizeof want), "dot q %u bits, %zu terms", qbits[qi],
                              terms);
            ts_vec_dot(o2, xp, yp, terms, N, &m);
            ck_assert(!memcmp(o2, want, sizeof want));
        }
        /* the 62-bit kernel's bound: 1024 terms of (q - 1)^2 (and 1025, portable) */
        static const uint64_t *xl[1025], *yl[1025];
        for (size_t t = 0; t < 1025; t++) {
            xl[t] = xs[0];
            yl[t] = ys[0];
        }
        for (size_t terms = 1024; terms <= 1025; terms++) {
            uint64_t want[N], o2[N];
            for (int i = 0; i < N; i++)
                want[i] = ts_mod_mul(ts_mod_mul(xs[0][i], ys[0][i], &m), terms % q, &m);
            ts_vec_dot(o2, xl, yl, terms, N, &m);
            ck_assert_msg(!memcmp(o2, want, sizeof want), "dot q %u bits, %zu equal terms",
                          qbits[qi], terms);
        }
    }
}
END_TEST

TS_TEST_SUITE(math)
{
    Suite *s = suite_create("math");
    TCase *tc = ts_tcase("math", 0);
    tcase_add_test(tc, test_modarith);
    tcase_add_test(tc, test_primes);
    tcase_add_test(tc, test_ntt_schoolbook);
    tcase_add_test(tc, test_ntt_large);
    tcase_add_test(tc, test_ntt_automorphism);
    tcase_add_test(tc, test_rns);
    tcase_add_test(tc, test_rns_conv_impls);
    tcase_add_test(tc, test_vec_ops);
    tcase_add_test(tc, test_vec_center_lift);
    tcase_add_test(tc, test_vec_mul_round_shift);
    tcase_add_test(tc, test_vec_from_i64);
    tcase_add_test(tc, test_vec_dot);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * AVX-512 kernels of the element-wise vector operations mod q (vecmod.c;
 * compiled with -mavx512f -mavx512dq -mavx512vl -mavx512ifma, called only
 * when ts_cpu_has_avx512() says so), eight words per instruction, n a
 * multiple of 8. Each returns the unique reduced result (bit-exact with the
 * portable loops):
 *  - add / sub: one conditional correction;
 *  - multiply by a scalar: 64-bit Shoup (any q < 2^62);
 *  - products a b (q < 2^50, a, b < q): the 104-bit product by IFMA as
 *    hi 2^52 + lo, then hi (2^52 mod q) and lo each by a 52-bit Shoup product
 *    into [0, 2q), summed and corrected (plus o for multiply-add); for
 *    2^50 <= q < 2^62 as one term of the 62-bit dot product;
 *  - dot products: q < 2^50 with two IFMA accumulators, 2^50 <= q < 2^62 with
 *    the operands split at bit 52 and three accumulators.
 */
#include "core/math/math_int.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512IFMA__)
#include <immintrin.h>

typedef __m512i v8;

#define LD(p)    _mm512_loadu_si512((const void *)(p))
#define ST(p, v) _mm512_storeu_si512((void *)(p), (v))
#define SET1(x)  _mm512_set1_epi64((long long)(x))
#define MASK52   ((1ULL << 52) - 1)

static inline v8 csub(v8 x, v8 c)
{
    return _mm512_mask_sub_epi64(x, _mm512_cmpge_epu64_mask(x, c), x, c);
}

static inline v8 mulhi64(v8 a, v8 b)
{
    const v8 m32 = SET1(0xffffffffULL);
    v8 a_hi = _mm512_srli_epi64(a, 32), b_hi = _mm512_srli_epi64(b, 32);
    v8 p00 = _mm512_mul_epu32(a, b);
    v8 p01 = _mm512_mul_epu32(a, b_hi);
    v8 p10 = _mm512_mul_epu32(a_hi, b);
    v8 p11 = _mm512_mul_epu32(a_hi, b_hi);
    v8 mid = _mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_and_si512(p01, m32));
    mid = _mm512_add_epi64(mid, _mm512_and_si512(p10, m32));
    v8 hi = _mm512_add_epi64(p11, _mm512_srli_epi64(p01, 32));
    hi = _mm512_add_epi64(hi, _mm512_srli_epi64(p10, 32));
    return _mm512_add_epi64(hi, _mm512_srli_epi64(mid, 32));
}

static inline v8 mulshoup52(v8 a, v8 w, v8 wp, v8 q)
{
    const v8 zero = _mm512_setzero_si512();
    v8 quo = _mm512_madd52hi_epu64(zero, a, wp);
    v8 r = _mm512_sub_epi64(_mm512_madd52lo_epu64(zero, a, w), _mm512_madd52lo_epu64(zero, quo, q));
    return _mm512_and_si512(r, SET1(MASK52));
}

/* a c mod q in [0, 2q) for a < 2^64 and c < q < 2^63: 64-bit Shoup with cp = floor(c 2^64 / q) */
static inline v8 mulshoup64(v8 a, v8 c, v8 cp, v8 q)
{
    return _mm512_sub_epi64(_mm512_mullo_epi64(a, c), _mm512_mullo_epi64(mulhi64(a, cp), q));
}

/* The constants of the 62-bit products: q, 2q, 2^52 mod q and 2^104 mod q with their Shoup
 * constants. */
typedef struct {
    v8 q, q2, w1, w1p, w2, w2p;
} c62_t;

static inline c62_t c62_init(uint64_t qs)
{
    const uint64_t c1 = (uint64_t)(((ts_u128_t)1 << 52) % qs);
    const uint64_t c2 = (uint64_t)(((ts_u128_t)c1 << 52) % qs);
    c62_t c = {.q = SET1(qs),
               .q2 = SET1(2 * qs),
               .w1 = SET1(c1),
               .w1p = SET1(ts_shoup_precompute(c1, qs)),
               .w2 = SET1(c2),
               .w2p = SET1(ts_shoup_precompute(c2, qs))};
    return c;
}

/* (x y) into the accumulators by weight 1, 2^52, 2^104 (x, y < 2^62; see the dot below). */
static inline void madd62(v8 *a0, v8 *a1, v8 *a2, v8 xv, v8 yv)
{
    v8 xh = _mm512_srli_epi64(xv, 52), yh = _mm512_srli_epi64(yv, 52);
    /* IFMA reads the low 52 bits of its operands: xv, yv act as their low parts */
    *a0 = _mm512_madd52lo_epu64(*a0, xv, yv);
    *a1 = _mm512_madd52hi_epu64(*a1, xv, yv);
    *a1 = _mm512_madd52lo_epu64(*a1, xv, yh);
    *a1 = _mm512_madd52lo_epu64(*a1, xh, yv);
    *a2 = _mm512_madd52hi_epu64(*a2, xv, yh);
    *a2 = _mm512_madd52hi_epu64(*a2, xh, yv);
    *a2 = _mm512_madd52lo_epu64(*a2, xh, yh);
}

/* a0 + 2^52 a1 + 2^104 a2 mod q, reduced (a0 < 2^62, a1 < 2^64 - 2^10, a2 < 2^32; q >= 2^50). */
static inline v8 reduce62(v8 a0, v8 a1, v8 a2, const c62_t *c)
{
    const v8 m52 = SET1(MASK52);
    a1 = _mm512_add_epi64(a1, _mm512_srli_epi64(a0, 52));
    a0 = _mm512_and_si512(a0, m52);
    a2 = _mm512_add_epi64(a2, _mm512_srli_epi64(a1, 52));
    a1 = _mm512_and_si512(a1, m52);
    v8 r0 = csub(csub(a0, c->q2), c->q); /* a0 < 2^52 <= 4q */
    v8 r1 = csub(mulshoup64(a1, c->w1, c->w1p, c->q), c->q);
    v8 r2 = csub(mulshoup64(a2, c->w2, c->w2p, c->q), c->q);
    v8 r = csub(_mm512_add_epi64(r0, r1), c->q);
    return csub(_mm512_add_epi64(r, r2), c->q);
}

/*
 * Dot products for 2^50 <= q < 2^62 (x, y < q) and at most 1024 terms: with
 * x = xl + 2^52 xh, y = yl + 2^52 yh (xl, yl < 2^52; xh, yh < 2^10), IFMA
 * accumulates the product's parts by weight: A0 (1) += lo52(xl yl); A1 (2^52)
 * += hi52(xl yl) + lo52(xl yh) + lo52(xh yl); A2 (2^104) += hi52(xl yh) +
 * hi52(xh yl) + xh yh. A1 grows by < 3 2^52 a term, so 1024 terms stay below
 * 2^64 - 2^52. Carries then make A0, A1 < 2^52 (A2 < 2^32), and the sum is
 * A0 + A1 (2^52 mod q) + A2 (2^104 mod q), the products by 64-bit Shoup,
 * each piece corrected below q before the two additions.
 */
void ts__vec_dot62_avx512(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                          size_t terms, size_t n, const ts_modulus_t *m)
{
    const c62_t c = c62_init(m->q);
    const v8 zero = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 8) {
        v8 a0 = zero, a1 = zero, a2 = zero;
        for (size_t t = 0; t < terms; t++)
            madd62(&a0, &a1, &a2, LD(x[t] + i), LD(y[t] + i));
        ST(o + i, reduce62(a0, a1, a2, &c));
    }
}

/* Products (and multiply-add) for 2^50 <= q < 2^62: one term of the dot above. */
static void mul62(bool add, uint64_t *o, const uint64_t *a, const uint64_t *b, size_t n,
                  uint64_t qs)
{
    const c62_t c = c62_init(qs);
    const v8 zero = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 8) {
        v8 a0 = zero, a1 = zero, a2 = zero;
        madd62(&a0, &a1, &a2, LD(a + i), LD(b + i));
        v8 r = reduce62(a0, a1, a2, &c);
        if (add)
            r = csub(_mm512_add_epi64(r, LD(o + i)), c.q);
        ST(o + i, r);
    }
}

void ts__vec_avx512(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b, uint64_t s,
                    size_t n, const ts_modulus_t *m)
{
    const uint64_t qs = m->q;
    const v8 q = SET1(qs), q2 = SET1(2 * qs);
    switch (op) {
    case TS_VEC_ADD:
        for (size_t i = 0; i < n; i += 8)
            ST(o + i, csub(_mm512_add_epi64(LD(a + i), LD(b + i)), q));
        break;
    case TS_VEC_SUB:
        for (size_t i = 0; i < n; i += 8) {
            v8 x = LD(a + i), y = LD(b + i), d = _mm512_sub_epi64(x, y);
            ST(o + i, _mm512_mask_add_epi64(d, _mm512_cmplt_epu64_mask(x, y), d, q));
        }
        break;
    case TS_VEC_MUL_SCALAR:
    case TS_VEC_MUL_SCALAR_ADD:
    case TS_VEC_SUB_MUL_SCALAR: {
        const v8 w = SET1(s), wp = SET1(ts_shoup_precompute(s, qs));
        const bool add = op == TS_VEC_MUL_SCALAR_ADD, diff = op == TS_VEC_SUB_MUL_SCALAR;
        for (size_t i = 0; i < n; i += 8) {
            v8 x = LD(a + i);
            if (diff) {
                v8 y = LD(b + i), d = _mm512_sub_epi64(x, y);
                x = _mm512_mask_add_epi64(d, _mm512_cmplt_epu64_mask(x, y), d, q);
            }
            v8 r =
                _mm512_sub_epi64(_mm512_mullo_epi64(x, w), _mm512_mullo_epi64(mulhi64(x, wp), q));
            r = csub(r, q);
            if (add)
                r = csub(_mm512_add_epi64(r, LD(o + i)), q);
            ST(o + i, r);
        }
        break;
    }
    case TS_VEC_MUL:
    case TS_VEC_MUL_ADD: {
        if (qs >= (1ULL << 50)) {
            mul62(op == TS_VEC_MUL_ADD, o, a, b, n, qs);
            break;
        }
        /* q < 2^50: 2^52 mod q and the Shoup constants of it and of 1 */
        const uint64_t c52 = (1ULL << 52) % qs;
        const v8 w = SET1(c52), wp = SET1((uint64_t)(((ts_u128_t)c52 << 52) / qs));
        const v8 one = SET1(1), onep = SET1((uint64_t)((1ULL << 52) / qs));
        const v8 zero = _mm512_setzero_si512(), q4 = SET1(4 * qs);
        const bool add = op == TS_VEC_MUL_ADD;
        for (size_t i = 0; i < n; i += 8) {
            v8 x = LD(a + i), y = LD(b + i);
            v8 lo = _mm512_madd52lo_epu64(zero, x, y);
            v8 hi = _mm512_madd52hi_epu64(zero, x, y);
            v8 r = _mm512_add_epi64(mulshoup52(hi, w, wp, q), mulshoup52(lo, one, onep, q));
            if (add) /* < 5q */
                r = csub(_mm512_add_epi64(r, LD(o + i)), q4);
            r = csub(csub(r, q2), q);
            ST(o + i, r);
        }
        break;
    }
    }
}

/* x mod q for any 64-bit x: Barrett with floor(2^64 / q), one correction */
static inline v8 reduce64(v8 x, v8 bh, v8 q)
{
    v8 r = _mm512_sub_epi64(x, _mm512_mullo_epi64(mulhi64(x, bh), q));
    return csub(r, q);
}

/*
 * Dot products for q < 2^50: each 104-bit product x y as lo52 + 2^52 hi52 by
 * IFMA, summed into A0 (weight 1) and A1 (weight 2^52) without overflow for
 * fewer than 4096 terms; then A1 += A0 >> 52 (A0 < 2^52, A1 < 2^64), and
 * A0 + A1 (2^52 mod q) by two 52-bit Shoup products... A1 may exceed 2^52, so
 * it is split once more: A1 = B0 + 2^52 B1 with B1 < 2^12, and
 * r = A0 + B0 c1 + B1 c2 (c1 = 2^52 mod q, c2 = 2^104 mod q), each term by a
 * 52-bit Shoup product into [0, 2q), summed and corrected.
 */
void ts__vec_dot_avx512(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                        size_t terms, size_t n, const ts_modulus_t *m)
{
    const uint64_t qs = m->q;
    const uint64_t c1 = (1ULL << 52) % qs;
    const uint64_t c2 = (uint64_t)(((ts_u128_t)c1 << 52) % qs);
    const v8 q = SET1(qs), q2 = SET1(2 * qs), q4 = SET1(4 * qs), zero = _mm512_setzero_si512();
    const v8 m52 = SET1(MASK52);
    const v8 one = SET1(1), onep = SET1((uint64_t)((1ULL << 52) / qs));
    const v8 w1 = SET1(c1), w1p = SET1((uint64_t)(((ts_u128_t)c1 << 52) / qs));
    const v8 w2 = SET1(c2), w2p = SET1((uint64_t)(((ts_u128_t)c2 << 52) / qs));
    for (size_t i = 0; i < n; i += 8) {
        v8 a0 = zero, a1 = zero;
        for (size_t t = 0; t < terms; t++) {
            v8 xv = LD(x[t] + i), yv = LD(y[t] + i);
            a0 = _mm512_madd52lo_epu64(a0, xv, yv);
            a1 = _mm512_madd52hi_epu64(a1, xv, yv);
        }
        a1 = _mm512_add_epi64(a1, _mm512_srli_epi64(a0, 52));
        a0 = _mm512_and_si512(a0, m52);
        v8 b1 = _mm512_srli_epi64(a1, 52);
        v8 b0 = _mm512_and_si512(a1, m52);
        v8 r = _mm512_add_epi64(mulshoup52(a0, one, onep, q), mulshoup52(b0, w1, w1p, q));
        r = csub(_mm512_add_epi64(r, mulshoup52(b1, w2, w2p, q)), q4); /* < 6q -> < 4q */
        r = csub(csub(r, q2), q);
        ST(o + i, r);
    }
}

void ts__vec_from_i64_avx512(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m)
{
    const v8 q = SET1(m->q), bh = SET1(m->barrett_hi), zero = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 8) {
        v8 v = LD(x + i);
        __mmask8 neg = _mm512_cmplt_epi64_mask(v, zero);
        v8 r = reduce64(_mm512_abs_epi64(v), bh, q);
        __mmask8 flip = neg & _mm512_cmpneq_epu64_mask(r, zero);
        ST(o + i, _mm512_mask_sub_epi64(r, flip, q, r));
    }
}

void ts__vec_center_lift_avx512(uint64_t *o, const uint64_t *x, size_t n, uint64_t p,
                                const ts_modulus_t *m)
{
    const v8 q = SET1(m->q), bh = SET1(m->barrett_hi), half = SET1(p / 2), pv = SET1(p);
    const v8 zero = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 8) {
        v8 v = LD(x + i);
        __mmask8 neg = _mm512_cmpgt_epu64_mask(v, half);
        v8 a = _mm512_mask_sub_epi64(v, neg, pv, v); /* |lift| */
        v8 r = reduce64(a, bh, q);
        /* negative lifts: q - r, and 0 stays 0 */
        __mmask8 flip = neg & _mm512_cmpneq_epu64_mask(r, zero);
        ST(o + i, _mm512_mask_sub_epi64(r, flip, q, r));
    }
}

bool ts__vec_avx512_built(void)
{
    return true;
}

/* floor((x m + 2^(s-1)) / 2^s), 65 <= s <= 127: the rounding term is a
 * multiple of 2^64, so it joins the high word and the low word cannot carry
 * into the quotient: (hi + 2^(s-65)) >> (s - 64) */
void ts__vec_mul_round_shift_avx512(uint64_t *o, const uint64_t *x, size_t n, uint64_t m,
                                    unsigned s)
{
    const v8 mv = SET1(m), add = SET1(1ULL << (s - 65)), sh = SET1(s - 64);
    for (size_t i = 0; i < n; i += 8)
        ST(o + i, _mm512_srlv_epi64(_mm512_add_epi64(mulhi64(LD(x + i), mv), add), sh));
}

#else

void ts__vec_avx512(ts_vec_op_t op, uint64_t *o, const uint64_t *a, const uint64_t *b, uint64_t s,
                    size_t n, const ts_modulus_t *m)
{
    (void)op;
    (void)o;
    (void)a;
    (void)b;
    (void)s;
    (void)n;
    (void)m;
}

bool ts__vec_avx512_built(void)
{
    return false;
}

void ts__vec_dot_avx512(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                        size_t terms, size_t n, const ts_modulus_t *m)
{
    (void)o;
    (void)x;
    (void)y;
    (void)terms;
    (void)n;
    (void)m;
}

void ts__vec_dot62_avx512(uint64_t *o, const uint64_t *const *x, const uint64_t *const *y,
                          size_t terms, size_t n, const ts_modulus_t *m)
{
    (void)o;
    (void)x;
    (void)y;
    (void)terms;
    (void)n;
    (void)m;
}

void ts__vec_from_i64_avx512(uint64_t *o, const int64_t *x, size_t n, const ts_modulus_t *m)
{
    (void)o;
    (void)x;
    (void)n;
    (void)m;
}

void ts__vec_center_lift_avx512(uint64_t *o, const uint64_t *x, size_t n, uint64_t p,
                                const ts_modulus_t *m)
{
    (void)o;
    (void)x;
    (void)n;
    (void)p;
    (void)m;
}

void ts__vec_mul_round_shift_avx512(uint64_t *o, const uint64_t *x, size_t n, uint64_t m,
                                    unsigned s)
{
    (void)o;
    (void)x;
    (void)n;
    (void)m;
    (void)s;
}

#endif

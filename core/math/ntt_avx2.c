/*
 * AVX2 kernels of the negacyclic NTT (compiled with -mavx2; called only when
 * ts_cpu_has_avx2()). Same algorithm and value ranges as the portable kernels
 * in ntt.c, four butterflies per instruction. AVX2 has no 64x64-bit multiply,
 * so the Shoup product a*w mod q is assembled from 32x32 -> 64 products
 * (_mm256_mul_epu32): 4 for the high word of a*w', 6 for the low words of
 * a*w - Q*q. Unsigned 64-bit compares use the sign-flip trick. Stages whose
 * butterfly distance is below 4 words use a lane shuffle.
 */
#include "core/math/math_int.h"

#if defined(__AVX2__)
#include <immintrin.h>

typedef __m256i v4;

#define LD(p)    _mm256_loadu_si256((const v4 *)(p))
#define ST(p, v) _mm256_storeu_si256((v4 *)(p), (v))
#define SET1(x)  _mm256_set1_epi64x((long long)(x))
#define MASK32   _mm256_set1_epi64x(0xffffffffLL)
#define SIGNBIT  _mm256_set1_epi64x((long long)0x8000000000000000ULL)

/* x - c where x >= c (unsigned), else x; cm1s = (c - 1) ^ signbit */
static inline v4 csub(v4 x, v4 c, v4 cm1s)
{
    v4 gt = _mm256_cmpgt_epi64(_mm256_xor_si256(x, SIGNBIT), cm1s);
    return _mm256_sub_epi64(x, _mm256_and_si256(gt, c));
}

/* High 64 bits of a * b, lanewise. */
static inline v4 mulhi64(v4 a, v4 b, v4 b_hi)
{
    v4 a_hi = _mm256_srli_epi64(a, 32);
    v4 p00 = _mm256_mul_epu32(a, b);
    v4 p01 = _mm256_mul_epu32(a, b_hi);
    v4 p10 = _mm256_mul_epu32(a_hi, b);
    v4 p11 = _mm256_mul_epu32(a_hi, b_hi);
    v4 mid = _mm256_add_epi64(_mm256_srli_epi64(p00, 32), _mm256_and_si256(p01, MASK32));
    mid = _mm256_add_epi64(mid, _mm256_and_si256(p10, MASK32));
    v4 hi = _mm256_add_epi64(p11, _mm256_srli_epi64(p01, 32));
    hi = _mm256_add_epi64(hi, _mm256_srli_epi64(p10, 32));
    return _mm256_add_epi64(hi, _mm256_srli_epi64(mid, 32));
}

/*
 * Shoup lazy product: a*w - floor(a*w'/2^64)*q mod 2^64, in [0, 2q).
 * w, wp, q given with their high halves (w_hi = w >> 32 etc.).
 */
static inline v4 mulshoup(v4 a, v4 w, v4 w_hi, v4 wp, v4 wp_hi, v4 q, v4 q_hi)
{
    v4 quo = mulhi64(a, wp, wp_hi);
    v4 a_hi = _mm256_srli_epi64(a, 32);
    v4 quo_hi = _mm256_srli_epi64(quo, 32);
    v4 lo = _mm256_sub_epi64(_mm256_mul_epu32(a, w), _mm256_mul_epu32(quo, q));
    v4 cross = _mm256_add_epi64(_mm256_mul_epu32(a, w_hi), _mm256_mul_epu32(a_hi, w));
    cross = _mm256_sub_epi64(cross, _mm256_mul_epu32(quo, q_hi));
    cross = _mm256_sub_epi64(cross, _mm256_mul_epu32(quo_hi, q));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

/* Twiddles that differ per lane: w and wp vectors. */
static inline v4 mulshoup_v(v4 a, v4 w, v4 wp, v4 q, v4 q_hi)
{
    return mulshoup(a, w, _mm256_srli_epi64(w, 32), wp, _mm256_srli_epi64(wp, 32), q, q_hi);
}

/* One CT butterfly on vectors: x in [0,4q), y in [0,4q). */
static inline void ct_bfly(v4 *x, v4 *y, v4 t, v4 q2, v4 q2m1s)
{
    v4 u = csub(*x, q2, q2m1s);
    *x = _mm256_add_epi64(u, t);
    *y = _mm256_sub_epi64(_mm256_add_epi64(u, q2), t);
}

void ts__ntt_forward_avx2(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t n = t->n;
    if (n < 8) {
        ts__ntt_forward_portable(t, a);
        return;
    }
    const uint64_t qs = t->mod.q;
    const v4 q = SET1(qs), q_hi = SET1(qs >> 32), q2 = SET1(2 * qs);
    const v4 q2m1s = SET1((2 * qs - 1) ^ 0x8000000000000000ULL);
    uint32_t gap = n, m = 1;
    for (; gap > 8; m <<= 1) {
        gap >>= 1;
        for (uint32_t i = 0; i < m; i++) {
            const uint64_t ws = t->fwd[m + i], wps = t->fwd_shoup[m + i];
            const v4 w = SET1(ws), w_hi = SET1(ws >> 32), wp = SET1(wps), wp_hi = SET1(wps >> 32);
            uint64_t *xp = a + 2 * (size_t)i * gap, *yp = xp + gap;
            for (uint32_t j = 0; j < gap; j += 4) {
                v4 x = LD(xp + j), y = LD(yp + j);
                v4 tt = mulshoup(y, w, w_hi, wp, wp_hi, q, q_hi);
                ct_bfly(&x, &y, tt, q2, q2m1s);
                ST(xp + j, x);
                ST(yp + j, y);
            }
        }
    }
    (void)m;
    ts__ntt_forward_avx2_tail(t, a);
}

/* Forward stages of distance 4, 2 and 1 and the final reduction (n >= 8). */
void ts__ntt_forward_avx2_tail(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t n = t->n;
    const uint64_t qs = t->mod.q;
    const v4 q = SET1(qs), q_hi = SET1(qs >> 32), q2 = SET1(2 * qs);
    const v4 q2m1s = SET1((2 * qs - 1) ^ 0x8000000000000000ULL);
    const v4 qm1s = SET1((qs - 1) ^ 0x8000000000000000ULL);
    /* the stages of distance 4, 2 and 1 (the last two with lane shuffles) */
    {
        const uint32_t mm = n / 8; /* groups at gap 4 */
        for (uint32_t i = 0; i < mm; i++) {
            const uint64_t ws = t->fwd[mm + i], wps = t->fwd_shoup[mm + i];
            const v4 w = SET1(ws), w_hi = SET1(ws >> 32), wp = SET1(wps), wp_hi = SET1(wps >> 32);
            uint64_t *xp = a + 8 * (size_t)i;
            v4 x = LD(xp), y = LD(xp + 4);
            v4 tt = mulshoup(y, w, w_hi, wp, wp_hi, q, q_hi);
            ct_bfly(&x, &y, tt, q2, q2m1s);
            ST(xp, x);
            ST(xp + 4, y);
        }
    }
    {
        const uint32_t mm = n / 4; /* groups at gap 2 */
        for (uint32_t i = 0; i < mm; i += 2) {
            uint64_t *p = a + 4 * (size_t)i;
            v4 v0 = LD(p), v1 = LD(p + 4);                  /* (a0 a1 a2 a3) (a4 a5 a6 a7) */
            v4 x = _mm256_permute2x128_si256(v0, v1, 0x20); /* a0 a1 a4 a5 */
            v4 y = _mm256_permute2x128_si256(v0, v1, 0x31); /* a2 a3 a6 a7 */
            const uint64_t *tw = t->fwd + mm + i, *twp = t->fwd_shoup + mm + i;
            v4 w = _mm256_set_epi64x((long long)tw[1], (long long)tw[1], (long long)tw[0],
                                     (long long)tw[0]);
            v4 wp = _mm256_set_epi64x((long long)twp[1], (long long)twp[1], (long long)twp[0],
                                      (long long)twp[0]);
            v4 tt = mulshoup_v(y, w, wp, q, q_hi);
            ct_bfly(&x, &y, tt, q2, q2m1s);
            ST(p, _mm256_permute2x128_si256(x, y, 0x20));
            ST(p + 4, _mm256_permute2x128_si256(x, y, 0x31));
        }
    }
    {
        const uint32_t mm = n / 2; /* groups at gap 1 */
        for (uint32_t i = 0; i < mm; i += 4) {
            uint64_t *p = a + 2 * (size_t)i;
            v4 v0 = LD(p), v1 = LD(p + 4);        /* (a0 a1 a2 a3) (a4 a5 a6 a7) */
            v4 x = _mm256_unpacklo_epi64(v0, v1); /* a0 a4 a2 a6 */
            v4 y = _mm256_unpackhi_epi64(v0, v1); /* a1 a5 a3 a7 */
            const uint64_t *tw = t->fwd + mm + i, *twp = t->fwd_shoup + mm + i;
            /* lanes hold groups 0 2 1 3 */
            v4 w = _mm256_set_epi64x((long long)tw[3], (long long)tw[1], (long long)tw[2],
                                     (long long)tw[0]);
            v4 wp = _mm256_set_epi64x((long long)twp[3], (long long)twp[1], (long long)twp[2],
                                      (long long)twp[0]);
            v4 tt = mulshoup_v(y, w, wp, q, q_hi);
            ct_bfly(&x, &y, tt, q2, q2m1s);
            /* final reduction to [0, q) folded in */
            x = csub(csub(x, q2, q2m1s), q, qm1s);
            y = csub(csub(y, q2, q2m1s), q, qm1s);
            ST(p, _mm256_unpacklo_epi64(x, y));
            ST(p + 4, _mm256_unpackhi_epi64(x, y));
        }
    }
}

/* One inverse stage of m groups at distance gap >= 4 (values in [0, 2q)). */
static void inv_stage(const ts_ntt_table_t *t, uint64_t *a, uint32_t m, uint32_t gap)
{
    const uint64_t qs = t->mod.q;
    const v4 q = SET1(qs), q_hi = SET1(qs >> 32), q2 = SET1(2 * qs);
    const v4 q2m1s = SET1((2 * qs - 1) ^ 0x8000000000000000ULL);
    for (uint32_t i = 0; i < m; i++) {
        const uint64_t ws = t->inv[m + i], wps = t->inv_shoup[m + i];
        const v4 w = SET1(ws), w_hi = SET1(ws >> 32), wp = SET1(wps), wp_hi = SET1(wps >> 32);
        uint64_t *xp = a + 2 * (size_t)i * gap, *yp = xp + gap;
        for (uint32_t j = 0; j < gap; j += 4) {
            v4 x = LD(xp + j), y = LD(yp + j);
            v4 s = csub(_mm256_add_epi64(x, y), q2, q2m1s);
            v4 d =
                mulshoup(_mm256_sub_epi64(_mm256_add_epi64(x, q2), y), w, w_hi, wp, wp_hi, q, q_hi);
            ST(xp + j, s);
            ST(yp + j, d);
        }
    }
}

/* Inverse stages of distance 1 and 2 (inputs in [0, 4q)), and 4 unless that is
 * the last stage (n >= 8). */
void ts__ntt_inverse_avx2_head(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t n = t->n;
    const uint64_t qs = t->mod.q;
    const v4 q = SET1(qs), q_hi = SET1(qs >> 32), q2 = SET1(2 * qs);
    const v4 q2m1s = SET1((2 * qs - 1) ^ 0x8000000000000000ULL);
    {
        const uint32_t mm = n / 2; /* gap 1, inputs in [0, 4q) */
        for (uint32_t i = 0; i < mm; i += 4) {
            uint64_t *p = a + 2 * (size_t)i;
            v4 v0 = LD(p), v1 = LD(p + 4);
            v4 x = csub(_mm256_unpacklo_epi64(v0, v1), q2, q2m1s);
            v4 y = csub(_mm256_unpackhi_epi64(v0, v1), q2, q2m1s);
            const uint64_t *tw = t->inv + mm + i, *twp = t->inv_shoup + mm + i;
            v4 w = _mm256_set_epi64x((long long)tw[3], (long long)tw[1], (long long)tw[2],
                                     (long long)tw[0]);
            v4 wp = _mm256_set_epi64x((long long)twp[3], (long long)twp[1], (long long)twp[2],
                                      (long long)twp[0]);
            v4 s = csub(_mm256_add_epi64(x, y), q2, q2m1s);
            v4 d = mulshoup_v(_mm256_sub_epi64(_mm256_add_epi64(x, q2), y), w, wp, q, q_hi);
            ST(p, _mm256_unpacklo_epi64(s, d));
            ST(p + 4, _mm256_unpackhi_epi64(s, d));
        }
    }
    {
        const uint32_t mm = n / 4; /* gap 2 */
        if (mm > 1) {
            for (uint32_t i = 0; i < mm; i += 2) {
                uint64_t *p = a + 4 * (size_t)i;
                v4 v0 = LD(p), v1 = LD(p + 4);
                v4 x = _mm256_permute2x128_si256(v0, v1, 0x20);
                v4 y = _mm256_permute2x128_si256(v0, v1, 0x31);
                const uint64_t *tw = t->inv + mm + i, *twp = t->inv_shoup + mm + i;
                v4 w = _mm256_set_epi64x((long long)tw[1], (long long)tw[1], (long long)tw[0],
                                         (long long)tw[0]);
                v4 wp = _mm256_set_epi64x((long long)twp[1], (long long)twp[1], (long long)twp[0],
                                          (long long)twp[0]);
                v4 s = csub(_mm256_add_epi64(x, y), q2, q2m1s);
                v4 d = mulshoup_v(_mm256_sub_epi64(_mm256_add_epi64(x, q2), y), w, wp, q, q_hi);
                ST(p, _mm256_permute2x128_si256(s, d, 0x20));
                ST(p + 4, _mm256_permute2x128_si256(s, d, 0x31));
            }
        }
    }
    if (n / 8 > 1)
        inv_stage(t, a, n / 8, 4);
}

void ts__ntt_inverse_avx2(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t n = t->n;
    if (n < 8) {
        ts__ntt_inverse_portable(t, a);
        return;
    }
    ts__ntt_inverse_avx2_head(t, a);
    uint32_t gap = n / 8 > 1 ? 8 : 4;
    for (uint32_t m = n / (2 * gap); m > 1; m >>= 1) {
        inv_stage(t, a, m, gap);
        gap <<= 1;
    }
    ts__ntt_inverse_avx2_last(t, a);
}

/* The last inverse stage (one group at distance n/2) with 1/N merged in. */
void ts__ntt_inverse_avx2_last(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t gap = t->n / 2;
    const uint64_t qs = t->mod.q;
    const v4 q = SET1(qs), q_hi = SET1(qs >> 32), q2 = SET1(2 * qs);
    const v4 qm1s = SET1((qs - 1) ^ 0x8000000000000000ULL);
    {
        const v4 ni = SET1(t->n_inv), ni_hi = SET1(t->n_inv >> 32);
        const v4 nip = SET1(t->n_inv_shoup), nip_hi = SET1(t->n_inv_shoup >> 32);
        const v4 nw = SET1(t->n_inv_w), nw_hi = SET1(t->n_inv_w >> 32);
        const v4 nwp = SET1(t->n_inv_w_shoup), nwp_hi = SET1(t->n_inv_w_shoup >> 32);
        uint64_t *xp = a, *yp = a + gap;
        for (uint32_t j = 0; j < gap; j += 4) {
            v4 x = LD(xp + j), y = LD(yp + j);
            v4 s = mulshoup(_mm256_add_epi64(x, y), ni, ni_hi, nip, nip_hi, q, q_hi);
            v4 d = mulshoup(_mm256_sub_epi64(_mm256_add_epi64(x, q2), y), nw, nw_hi, nwp, nwp_hi, q,
                            q_hi);
            ST(xp + j, csub(s, q, qm1s));
            ST(yp + j, csub(d, q, qm1s));
        }
    }
}

#else /* no AVX2 at compile time (another architecture): portable fallback */

void ts__ntt_forward_avx2(const ts_ntt_table_t *t, uint64_t *a)
{
    ts__ntt_forward_portable(t, a);
}

void ts__ntt_inverse_avx2(const ts_ntt_table_t *t, uint64_t *a)
{
    ts__ntt_inverse_portable(t, a);
}

#endif

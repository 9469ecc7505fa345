/*
 * AVX-512 kernels of the negacyclic NTT (compiled with -mavx512f -mavx512dq
 * -mavx512vl -mavx512ifma; called only when ts_cpu_has_avx512() says so).
 * Same algorithm and value ranges as ntt.c, eight butterflies per instruction
 * for the stages of distance >= 8; the stages of distance 4, 2, 1 reuse the
 * AVX2 kernels (ntt_avx2.c), which keep the same [0, 4q) / [0, 2q) invariants.
 *
 * Two Shoup products:
 *  - q < 2^50 with AVX512-IFMA: 52-bit Shoup (w' = floor(w 2^52 / q)); every
 *    lazy value is below 4q < 2^52, so hi52(a w') by vpmadd52huq and the low
 *    52 bits of a w - Q q by two vpmadd52luq give the usual result in [0, 2q)
 *    (Harvey's argument with beta = 2^52), three multiplies per 8 lanes;
 *  - otherwise 64-bit Shoup: the high word from four 32x32 products and the
 *    low words with vpmullq.
 * Both return the unique reduced result, so they are bit-exact with the
 * portable kernels.
 */
#include "core/math/math_int.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512IFMA__)
#include <immintrin.h>

typedef __m512i v8;

#define LD(p)    _mm512_loadu_si512((const void *)(p))
#define ST(p, v) _mm512_storeu_si512((void *)(p), (v))
#define SET1(x)  _mm512_set1_epi64((long long)(x))
#define MASK52   ((1ULL << 52) - 1)

/* x - c when x >= c (unsigned lanes) */
static inline v8 csub(v8 x, v8 c)
{
    return _mm512_mask_sub_epi64(x, _mm512_cmpge_epu64_mask(x, c), x, c);
}

/* ---------------------------------------------------------- 52-bit IFMA */

static inline v8 mulshoup52(v8 a, v8 w, v8 wp, v8 q)
{
    const v8 zero = _mm512_setzero_si512();
    v8 quo = _mm512_madd52hi_epu64(zero, a, wp);
    v8 r = _mm512_sub_epi64(_mm512_madd52lo_epu64(zero, a, w), _mm512_madd52lo_epu64(zero, quo, q));
    return _mm512_and_si512(r, SET1(MASK52));
}

/* ------------------------------------------------------------ 64-bit */

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

static inline v8 mulshoup64(v8 a, v8 w, v8 wp, v8 q)
{
    v8 quo = mulhi64(a, wp);
    return _mm512_sub_epi64(_mm512_mullo_epi64(a, w), _mm512_mullo_epi64(quo, q));
}

/* ------------------------------------------------------------ kernels */

/*
 * The stage loops, written once for both products: MUL(a, w, wp) is the lazy
 * Shoup product; TW/TWP the twiddle and its Shoup constant arrays.
 */
#define FORWARD_HEAD(MUL, TWP)                                                                     \
    do {                                                                                           \
        uint32_t gap = n;                                                                          \
        for (uint32_t m = 1; gap > 8; m <<= 1) {                                                   \
            gap >>= 1;                                                                             \
            for (uint32_t i = 0; i < m; i++) {                                                     \
                const v8 w = SET1(t->fwd[m + i]), wp = SET1((TWP)[m + i]);                         \
                uint64_t *xp = a + 2 * (size_t)i * gap, *yp = xp + gap;                            \
                for (uint32_t j = 0; j < gap; j += 8) {                                            \
                    v8 x = csub(LD(xp + j), q2), y = LD(yp + j);                                   \
                    v8 tt = MUL(y, w, wp, q);                                                      \
                    ST(xp + j, _mm512_add_epi64(x, tt));                                           \
                    ST(yp + j, _mm512_sub_epi64(_mm512_add_epi64(x, q2), tt));                     \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define INVERSE_BODY(MUL, TWP, NIP, NWP)                                                           \
    do {                                                                                           \
        uint32_t gap = 8;                                                                          \
        for (uint32_t m = n / 16; m > 1; m >>= 1) {                                                \
            for (uint32_t i = 0; i < m; i++) {                                                     \
                const v8 w = SET1(t->inv[m + i]), wp = SET1((TWP)[m + i]);                         \
                uint64_t *xp = a + 2 * (size_t)i * gap, *yp = xp + gap;                            \
                for (uint32_t j = 0; j < gap; j += 8) {                                            \
                    v8 x = LD(xp + j), y = LD(yp + j);                                             \
                    ST(xp + j, csub(_mm512_add_epi64(x, y), q2));                                  \
                    ST(yp + j, MUL(_mm512_sub_epi64(_mm512_add_epi64(x, q2), y), w, wp, q));       \
                }                                                                                  \
            }                                                                                      \
            gap <<= 1;                                                                             \
        }                                                                                          \
        const v8 ni = SET1(t->n_inv), nip = SET1(NIP);                                             \
        const v8 nw = SET1(t->n_inv_w), nwp = SET1(NWP);                                           \
        uint64_t *xp = a, *yp = a + gap;                                                           \
        for (uint32_t j = 0; j < gap; j += 8) {                                                    \
            v8 x = LD(xp + j), y = LD(yp + j);                                                     \
            ST(xp + j, csub(MUL(_mm512_add_epi64(x, y), ni, nip, q), q));                          \
            ST(yp + j, csub(MUL(_mm512_sub_epi64(_mm512_add_epi64(x, q2), y), nw, nwp, q), q));    \
        }                                                                                          \
    } while (0)

void ts__ntt_forward_avx512(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t n = t->n;
    if (n < 16) {
        ts__ntt_forward_avx2(t, a);
        return;
    }
    const v8 q = SET1(t->mod.q), q2 = SET1(2 * t->mod.q);
    if (t->fwd_shoup52)
        FORWARD_HEAD(mulshoup52, t->fwd_shoup52);
    else
        FORWARD_HEAD(mulshoup64, t->fwd_shoup);
    ts__ntt_forward_avx2_tail(t, a);
}

void ts__ntt_inverse_avx512(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t n = t->n;
    if (n < 16) {
        ts__ntt_inverse_avx2(t, a);
        return;
    }
    ts__ntt_inverse_avx2_head(t, a);
    const v8 q = SET1(t->mod.q), q2 = SET1(2 * t->mod.q);
    if (t->inv_shoup52)
        INVERSE_BODY(mulshoup52, t->inv_shoup52, t->n_inv_shoup52, t->n_inv_w_shoup52);
    else
        INVERSE_BODY(mulshoup64, t->inv_shoup, t->n_inv_shoup, t->n_inv_w_shoup);
}

#else /* the compiler cannot target AVX-512: the AVX2 kernels */

void ts__ntt_forward_avx512(const ts_ntt_table_t *t, uint64_t *a)
{
    ts__ntt_forward_avx2(t, a);
}

void ts__ntt_inverse_avx512(const ts_ntt_table_t *t, uint64_t *a)
{
    ts__ntt_inverse_avx2(t, a);
}

#endif

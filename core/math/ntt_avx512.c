/*
 * AVX-512 kernels of the negacyclic NTT (compiled with -mavx512f -mavx512dq
 * -mavx512vl -mavx512ifma; called only when ts_cpu_has_avx512() says so).
 * Same algorithm and value ranges as ntt.c, eight butterflies per instruction
 * for every stage (those of distance 4, 2, 1 gather their halves with lane
 * permutations across two vectors).
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
/*
 * The forward stages of distance >= 8; with R4 (the IFMA kernels) two at a
 * time where possible (radix-4 passes: the four quarter-blocks of a group are
 * loaded once, both stages' butterflies applied, then stored; the 64-bit
 * product needs too many registers for it to pay). Each butterfly is the same
 * operation on the same values as in the one-stage loop: identical results.
 */
#define FWD_BFLY(MUL, X, Y, W, WP)                                                                 \
    do {                                                                                           \
        v8 x_ = csub((X), q2);                                                                     \
        v8 t_ = MUL((Y), (W), (WP), q);                                                            \
        (X) = _mm512_add_epi64(x_, t_);                                                            \
        (Y) = _mm512_sub_epi64(_mm512_add_epi64(x_, q2), t_);                                      \
    } while (0)

#define FORWARD_HEAD(MUL, TWP, R4)                                                                 \
    do {                                                                                           \
        uint32_t gap = n >> 1, m = 1;                                                              \
        /* pairs of stages while the second one's distance is still >= 8 */                        \
        for (; (R4) && gap >= 16; m <<= 2, gap >>= 2) {                                            \
            const uint32_t h = gap >> 1;                                                           \
            for (uint32_t i = 0; i < m; i++) {                                                     \
                const v8 w1 = SET1(t->fwd[m + i]), w1p = SET1((TWP)[m + i]);                       \
                const v8 w2 = SET1(t->fwd[2 * m + 2 * i]), w2p = SET1((TWP)[2 * m + 2 * i]);       \
                const v8 w3 = SET1(t->fwd[2 * m + 2 * i + 1]);                                     \
                const v8 w3p = SET1((TWP)[2 * m + 2 * i + 1]);                                     \
                uint64_t *p0 = a + 2 * (size_t)i * gap, *p1 = p0 + h, *p2 = p0 + gap,              \
                         *p3 = p2 + h;                                                             \
                for (uint32_t j = 0; j < h; j += 8) {                                              \
                    v8 x0 = LD(p0 + j), x1 = LD(p1 + j), x2 = LD(p2 + j), x3 = LD(p3 + j);         \
                    FWD_BFLY(MUL, x0, x2, w1, w1p);                                                \
                    FWD_BFLY(MUL, x1, x3, w1, w1p);                                                \
                    FWD_BFLY(MUL, x0, x1, w2, w2p);                                                \
                    FWD_BFLY(MUL, x2, x3, w3, w3p);                                                \
                    ST(p0 + j, x0);                                                                \
                    ST(p1 + j, x1);                                                                \
                    ST(p2 + j, x2);                                                                \
                    ST(p3 + j, x3);                                                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        /* a last single stage of distance 8 when the count is odd */                              \
        for (; gap >= 8; m <<= 1, gap >>= 1) {                                                     \
            for (uint32_t i = 0; i < m; i++) {                                                     \
                const v8 w = SET1(t->fwd[m + i]), wp = SET1((TWP)[m + i]);                         \
                uint64_t *xp = a + 2 * (size_t)i * gap, *yp = xp + gap;                            \
                for (uint32_t j = 0; j < gap; j += 8) {                                            \
                    v8 x = LD(xp + j), y = LD(yp + j);                                             \
                    FWD_BFLY(MUL, x, y, w, wp);                                                    \
                    ST(xp + j, x);                                                                 \
                    ST(yp + j, y);                                                                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define INV_BFLY(MUL, X, Y, W, WP)                                                                 \
    do {                                                                                           \
        v8 x_ = (X), y_ = (Y);                                                                     \
        (X) = csub(_mm512_add_epi64(x_, y_), q2);                                                  \
        (Y) = MUL(_mm512_sub_epi64(_mm512_add_epi64(x_, q2), y_), (W), (WP), q);                   \
    } while (0)

/* Inverse stages of distance 8 .. N/4, with R4 two at a time while the
 * second is not the last (radix-4 passes, same butterflies), then the last
 * stage with the 1/N factor. */
#define INVERSE_BODY(MUL, TWP, NIP, NWP, R4)                                                       \
    do {                                                                                           \
        uint32_t gap = 8, m = n / 16;                                                              \
        for (; (R4) && m >= 4; m >>= 2, gap <<= 2) {                                               \
            for (uint32_t i2 = 0; i2 < m / 2; i2++) {                                              \
                const v8 w0 = SET1(t->inv[m + 2 * i2]), w0p = SET1((TWP)[m + 2 * i2]);             \
                const v8 w1 = SET1(t->inv[m + 2 * i2 + 1]), w1p = SET1((TWP)[m + 2 * i2 + 1]);     \
                const v8 w2 = SET1(t->inv[m / 2 + i2]), w2p = SET1((TWP)[m / 2 + i2]);             \
                uint64_t *p0 = a + 4 * (size_t)i2 * gap, *p1 = p0 + gap, *p2 = p1 + gap,           \
                         *p3 = p2 + gap;                                                           \
                for (uint32_t j = 0; j < gap; j += 8) {                                            \
                    v8 x0 = LD(p0 + j), x1 = LD(p1 + j), x2 = LD(p2 + j), x3 = LD(p3 + j);         \
                    INV_BFLY(MUL, x0, x1, w0, w0p);                                                \
                    INV_BFLY(MUL, x2, x3, w1, w1p);                                                \
                    INV_BFLY(MUL, x0, x2, w2, w2p);                                                \
                    INV_BFLY(MUL, x1, x3, w2, w2p);                                                \
                    ST(p0 + j, x0);                                                                \
                    ST(p1 + j, x1);                                                                \
                    ST(p2 + j, x2);                                                                \
                    ST(p3 + j, x3);                                                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (; m > 1; m >>= 1) {                                                                   \
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

/*
 * Stages of distance g = 4, 2, 1 on blocks of 16 words (two vectors): lane
 * permutations gather the x and y halves of 8/g groups, the twiddles of those
 * groups are loaded together and spread over their lanes.
 */
static inline void small_idx(uint32_t g, v8 *ix, v8 *iy, v8 *o0, v8 *o1, v8 *itw)
{
    if (g == 4) {
        *ix = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
        *iy = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
        *o0 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
        *o1 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
        *itw = _mm512_set_epi64(1, 1, 1, 1, 0, 0, 0, 0);
    } else if (g == 2) {
        *ix = _mm512_set_epi64(13, 12, 9, 8, 5, 4, 1, 0);
        *iy = _mm512_set_epi64(15, 14, 11, 10, 7, 6, 3, 2);
        *o0 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
        *o1 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
        *itw = _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0);
    } else {
        *ix = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
        *iy = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
        *o0 = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
        *o1 = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
        *itw = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    }
}

/* Forward (CT) stages 4, 2, 1 and the final reduction to [0, q). */
#define FORWARD_TAIL(MUL, TWP)                                                                     \
    do {                                                                                           \
        for (uint32_t g = 4; g >= 1; g >>= 1) {                                                    \
            v8 ix, iy, o0, o1, itw;                                                                \
            small_idx(g, &ix, &iy, &o0, &o1, &itw);                                                \
            const uint32_t m = n / (2 * g), per = 8 / g;                                           \
            const __mmask8 lm = (__mmask8)((1u << per) - 1);                                       \
            for (uint32_t b = 0; b < n; b += 16) {                                                 \
                const uint32_t grp = m + b / (2 * g);                                              \
                v8 w = _mm512_permutexvar_epi64(itw, _mm512_maskz_loadu_epi64(lm, t->fwd + grp));  \
                v8 wp = _mm512_permutexvar_epi64(itw, _mm512_maskz_loadu_epi64(lm, (TWP) + grp));  \
                v8 v0 = LD(a + b), v1 = LD(a + b + 8);                                             \
                v8 x = csub(_mm512_permutex2var_epi64(v0, ix, v1), q2);                            \
                v8 y = _mm512_permutex2var_epi64(v0, iy, v1);                                      \
                v8 tt = MUL(y, w, wp, q);                                                          \
                v8 nx = _mm512_add_epi64(x, tt);                                                   \
                v8 ny = _mm512_sub_epi64(_mm512_add_epi64(x, q2), tt);                             \
                if (g == 1) {                                                                      \
                    nx = csub(csub(nx, q2), q);                                                    \
                    ny = csub(csub(ny, q2), q);                                                    \
                }                                                                                  \
                ST(a + b, _mm512_permutex2var_epi64(nx, o0, ny));                                  \
                ST(a + b + 8, _mm512_permutex2var_epi64(nx, o1, ny));                              \
            }                                                                                      \
            if (g == 1)                                                                            \
                break;                                                                             \
        }                                                                                          \
    } while (0)

/* Inverse (GS) stages 1, 2, 4; inputs of the first in [0, 4q). */
#define INVERSE_HEAD(MUL, TWP)                                                                     \
    do {                                                                                           \
        for (uint32_t g = 1; g <= 4; g <<= 1) {                                                    \
            v8 ix, iy, o0, o1, itw;                                                                \
            small_idx(g, &ix, &iy, &o0, &o1, &itw);                                                \
            const uint32_t m = n / (2 * g), per = 8 / g;                                           \
            const __mmask8 lm = (__mmask8)((1u << per) - 1);                                       \
            for (uint32_t b = 0; b < n; b += 16) {                                                 \
                const uint32_t grp = m + b / (2 * g);                                              \
                v8 w = _mm512_permutexvar_epi64(itw, _mm512_maskz_loadu_epi64(lm, t->inv + grp));  \
                v8 wp = _mm512_permutexvar_epi64(itw, _mm512_maskz_loadu_epi64(lm, (TWP) + grp));  \
                v8 v0 = LD(a + b), v1 = LD(a + b + 8);                                             \
                v8 x = _mm512_permutex2var_epi64(v0, ix, v1);                                      \
                v8 y = _mm512_permutex2var_epi64(v0, iy, v1);                                      \
                if (g == 1) {                                                                      \
                    x = csub(x, q2);                                                               \
                    y = csub(y, q2);                                                               \
                }                                                                                  \
                v8 s = csub(_mm512_add_epi64(x, y), q2);                                           \
                v8 d = MUL(_mm512_sub_epi64(_mm512_add_epi64(x, q2), y), w, wp, q);                \
                ST(a + b, _mm512_permutex2var_epi64(s, o0, d));                                    \
                ST(a + b + 8, _mm512_permutex2var_epi64(s, o1, d));                                \
            }                                                                                      \
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
    if (t->fwd_shoup52) {
        FORWARD_HEAD(mulshoup52, t->fwd_shoup52, 1);
        FORWARD_TAIL(mulshoup52, t->fwd_shoup52);
    } else {
        FORWARD_HEAD(mulshoup64, t->fwd_shoup, 0);
        FORWARD_TAIL(mulshoup64, t->fwd_shoup);
    }
}

void ts__ntt_inverse_avx512(const ts_ntt_table_t *t, uint64_t *a)
{
    const uint32_t n = t->n;
    if (n < 16) {
        ts__ntt_inverse_avx2(t, a);
        return;
    }
    const v8 q = SET1(t->mod.q), q2 = SET1(2 * t->mod.q);
    if (t->inv_shoup52) {
        INVERSE_HEAD(mulshoup52, t->inv_shoup52);
        INVERSE_BODY(mulshoup52, t->inv_shoup52, t->n_inv_shoup52, t->n_inv_w_shoup52, 1);
    } else {
        INVERSE_HEAD(mulshoup64, t->inv_shoup);
        INVERSE_BODY(mulshoup64, t->inv_shoup, t->n_inv_shoup, t->n_inv_w_shoup, 0);
    }
}

void ts__ntt_spread_avx512(uint64_t *a, uint32_t m, uint32_t gap)
{
    if (gap >= 8) {
        for (uint32_t h = m; h-- > 0;) {
            const v8 v = SET1(a[h]);
            uint64_t *d = a + (size_t)h * gap;
            for (uint32_t r = 0; r < gap; r += 8)
                ST(d + r, v);
        }
        return;
    }
    /* gap 2 or 4: eight values at a time, each vector of the output holds
     * 8 / gap of them (lane j of output vector s: value (8 s + j) / gap);
     * the eight are loaded before their block is written */
    v8 idx[4];
    for (uint32_t s = 0; s < gap; s++)
        idx[s] = _mm512_set_epi64((8 * s + 7) / gap, (8 * s + 6) / gap, (8 * s + 5) / gap,
                                  (8 * s + 4) / gap, (8 * s + 3) / gap, (8 * s + 2) / gap,
                                  (8 * s + 1) / gap, (8 * s) / gap);
    for (uint32_t hb = m; hb >= 8;) {
        hb -= 8;
        const v8 v = LD(a + hb);
        uint64_t *d = a + (size_t)hb * gap;
        for (uint32_t s = 0; s < gap; s++)
            ST(d + 8 * s, _mm512_permutexvar_epi64(idx[s], v));
    }
}

#else /* the compiler cannot target AVX-512: the AVX2 kernels */

void ts__ntt_spread_avx512(uint64_t *a, uint32_t m, uint32_t gap)
{
    for (uint32_t h = m; h-- > 0;) {
        const uint64_t v = a[h];
        uint64_t *d = a + (size_t)h * gap;
        for (uint32_t r = 0; r < gap; r++)
            d[r] = v;
    }
}

void ts__ntt_forward_avx512(const ts_ntt_table_t *t, uint64_t *a)
{
    ts__ntt_forward_avx2(t, a);
}

void ts__ntt_inverse_avx512(const ts_ntt_table_t *t, uint64_t *a)
{
    ts__ntt_inverse_avx2(t, a);
}

#endif

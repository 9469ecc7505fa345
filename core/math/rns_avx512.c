/*
 * AVX-512 kernel of the HPS basis conversion (rns.c's conv_block, eight
 * coefficients per instruction; compiled with -mavx512f -mavx512dq
 * -mavx512vl -mavx512ifma, called only when ts_cpu_has_avx512() says so).
 *
 * Bit-exact with the portable code:
 *  - y_i = [x_i (A/a_i)^{-1}]_{a_i} is the unique reduced value either way;
 *  - v = trunc(0.5 + sum_i (double)y_i * (1/a_i)) is computed with the same
 *    double operations in the same order (separate multiply and add, no FMA);
 *  - instead of one 128-bit dot product per target prime b, every term
 *    y_i (A/a_i) mod b is a lazy Shoup product in [0, 2b) with a precomputed
 *    constant, summed with a conditional subtraction of 2b after each add;
 *    the final value is again the unique sum mod b, then minus [v A]_b
 *    (a lane permutation of the per-b table for v = 0..na).
 * Terms use the 52-bit IFMA product when b < 2^50 and every a_i < 2^52 (so
 * y < 2^52: Harvey's bound with beta = 2^52), the 64-bit one otherwise.
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

/* a - b mod q for a, b in [0, q) */
static inline v8 modsub(v8 a, v8 b, v8 q)
{
    v8 d = _mm512_sub_epi64(a, b);
    return _mm512_mask_add_epi64(d, _mm512_cmplt_epu64_mask(a, b), d, q);
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

/* a w mod q in [0, 2q) for any 64-bit a, wp = floor(w 2^64 / q) */
static inline v8 mulshoup64(v8 a, v8 w, v8 wp, v8 q)
{
    v8 quo = mulhi64(a, wp);
    return _mm512_sub_epi64(_mm512_mullo_epi64(a, w), _mm512_mullo_epi64(quo, q));
}

/* a w mod q in [0, 2q) for a < 2^52, q < 2^51, wp = floor(w 2^52 / q) */
static inline v8 mulshoup52(v8 a, v8 w, v8 wp, v8 q)
{
    const v8 zero = _mm512_setzero_si512();
    v8 quo = _mm512_madd52hi_epu64(zero, a, wp);
    v8 r = _mm512_sub_epi64(_mm512_madd52lo_epu64(zero, a, w), _mm512_madd52lo_epu64(zero, quo, q));
    return _mm512_and_si512(r, SET1(MASK52));
}

/* x mod q for any 64-bit x: Barrett with floor(2^64 / q), one correction */
static inline v8 reduce64(v8 x, v8 bh, v8 q)
{
    v8 r = _mm512_sub_epi64(x, _mm512_mullo_epi64(mulhi64(x, bh), q));
    return csub(r, q);
}

/*
 * One source prime a (conv_single of rns.c): the centered lift of x, i.e.
 * x mod b minus [A]_b when x > a / 2 (an exact comparison), then ModDown's
 * (x_b - r) A^{-1} when asked; the same words as the portable loop.
 */
void ts__rns_conv1_avx512(const ts_rns_conv_t *c, const uint64_t *in, uint64_t *out,
                          size_t out_stride, size_t n, bool moddown, const uint64_t *x_b)
{
    const v8 half = SET1(c->from[0].q >> 1);
    for (uint32_t j = 0; j < c->nb; j++) {
        const ts_modulus_t *mb = &c->to[j];
        const v8 b = SET1(mb->q), bh = SET1(mb->barrett_hi), am = SET1(c->a_mod_b[j]);
        const v8 ai = SET1(c->a_inv_mod_b[j]), aip = SET1(c->a_inv_mod_b_sh[j]);
        uint64_t *dst = out + j * out_stride;
        const uint64_t *xb = moddown ? x_b + j * out_stride : NULL;
        for (size_t k = 0; k < n; k += 8) {
            v8 x = LD(in + k);
            v8 r = reduce64(x, bh, b);
            __mmask8 up = _mm512_cmpgt_epu64_mask(x, half);
            v8 d = _mm512_sub_epi64(r, am);
            d = _mm512_mask_add_epi64(d, _mm512_cmplt_epu64_mask(r, am), d, b);
            r = _mm512_mask_mov_epi64(r, up, d);
            if (moddown)
                r = csub(mulshoup64(modsub(LD(xb + k), r, b), ai, aip, b), b);
            ST(dst + k, r);
        }
    }
}

#define VB 16 /* coefficients per block: two vectors */

void ts__rns_conv_avx512(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride,
                         uint64_t *out, size_t out_stride, size_t n, bool moddown,
                         const uint64_t *x_b)
{
    const uint32_t na = c->na, nb = c->nb;
    bool small_a = true;
    for (uint32_t i = 0; i < na; i++)
        small_a = small_a && c->from[i].q < (1ULL << 52);
    _Alignas(64) uint64_t y[TS_RNS_MAX_MODULI][VB];
    for (size_t off = 0; off < n; off += VB) {
        const uint32_t nv = n - off >= VB ? 2 : 1;
        __m512d s[2] = {_mm512_set1_pd(0.5), _mm512_set1_pd(0.5)};
        for (uint32_t i = 0; i < na; i++) {
            const v8 q = SET1(c->from[i].q), w = SET1(c->ahat_inv[i]), wp = SET1(c->ahat_inv_sh[i]);
            const __m512d inv = _mm512_set1_pd(c->a_inv_d[i]);
            const uint64_t *src = in + i * in_stride + off;
            for (uint32_t k = 0; k < nv; k++) {
                v8 t = csub(mulshoup64(LD(src + 8 * k), w, wp, q), q);
                ST(y[i] + 8 * k, t);
                s[k] = _mm512_add_pd(s[k], _mm512_mul_pd(_mm512_cvtepu64_pd(t), inv));
            }
        }
        v8 vi[2];
        for (uint32_t k = 0; k < nv; k++)
            vi[k] = _mm512_cvttpd_epu64(s[k]); /* 0 <= v <= na */
        for (uint32_t j = 0; j < nb; j++) {
            const uint64_t qb = c->to[j].q;
            const v8 b = SET1(qb), b2 = SET1(2 * qb);
            const bool ifma = small_a && qb < (1ULL << 50);
            const uint64_t *h = c->ahat_mod_b + j;
            const uint64_t *hs = ifma ? c->ahat_mod_b_sh52 + j : c->ahat_mod_b_sh + j;
            v8 acc[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
            for (uint32_t i = 0; i < na; i++) {
                const v8 w = SET1(h[(size_t)i * nb]), wp = SET1(hs[(size_t)i * nb]);
                for (uint32_t k = 0; k < nv; k++) {
                    v8 yy = _mm512_load_si512((const void *)(y[i] + 8 * k));
                    v8 t = ifma ? mulshoup52(yy, w, wp, b) : mulshoup64(yy, w, wp, b);
                    acc[k] = csub(_mm512_add_epi64(acc[k], t), b2);
                }
            }
            const uint64_t *vt = c->va_mod_b_t + (size_t)j * 16;
            const v8 va_lo = LD(vt), va_hi = LD(vt + 8);
            uint64_t *dst = out + j * out_stride + off;
            for (uint32_t k = 0; k < nv; k++) {
                v8 r = csub(acc[k], b);
                r = modsub(r, _mm512_permutex2var_epi64(va_lo, vi[k], va_hi), b);
                if (moddown) {
                    const v8 ai = SET1(c->a_inv_mod_b[j]), aip = SET1(c->a_inv_mod_b_sh[j]);
                    v8 xb = LD(x_b + j * out_stride + off + 8 * k);
                    r = csub(mulshoup64(modsub(xb, r, b), ai, aip, b), b);
                }
                ST(dst + 8 * k, r);
            }
        }
    }
}

bool ts__rns_conv_avx512_built(void)
{
    return true;
}

#else

bool ts__rns_conv_avx512_built(void)
{
    return false;
}

void ts__rns_conv1_avx512(const ts_rns_conv_t *c, const uint64_t *in, uint64_t *out,
                          size_t out_stride, size_t n, bool moddown, const uint64_t *x_b)
{
    (void)c;
    (void)in;
    (void)out;
    (void)out_stride;
    (void)n;
    (void)moddown;
    (void)x_b;
}

void ts__rns_conv_avx512(const ts_rns_conv_t *c, const uint64_t *in, size_t in_stride,
                         uint64_t *out, size_t out_stride, size_t n, bool moddown,
                         const uint64_t *x_b)
{
    (void)c;
    (void)in;
    (void)in_stride;
    (void)out;
    (void)out_stride;
    (void)n;
    (void)moddown;
    (void)x_b;
}

#endif

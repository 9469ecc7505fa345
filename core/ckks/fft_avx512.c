/*
 * AVX-512 stage of the inverse special FFT (fft.c; compiled with -mavx512f
 * -mavx512dq, called only when ts_cpu_has_avx512() says so): four complex
 * butterflies per instruction. Each value is computed with the same double
 * operations as the scalar code (sum and difference, then the product
 * (a + bi)(c + di) = (ac - bd) + (ad + bc)i without fused multiply-adds), so
 * the results are identical.
 */
#include "core/ckks/ckks_int.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

bool ts__ckks_fft_avx512_built(void)
{
    return true;
}

void ts__ckks_fft_inv_stage_avx512(double complex *vals, size_t n, size_t len,
                                   const double complex *tw)
{
    const size_t half = len >> 1;
    double *v = (double *)vals;
    const double *t = (const double *)tw;
    for (size_t i = 0; i < n; i += len) {
        double *x = v + 2 * i, *y = v + 2 * (i + half);
        for (size_t j = 0; j < half; j += 4) {
            __m512d a = _mm512_loadu_pd(x + 2 * j), b = _mm512_loadu_pd(y + 2 * j);
            __m512d w = _mm512_loadu_pd(t + 2 * j);
            __m512d u = _mm512_add_pd(a, b), d = _mm512_sub_pd(a, b);
            __m512d wr = _mm512_movedup_pd(w);                /* c c */
            __m512d wi = _mm512_permute_pd(w, 0xff);          /* d d */
            __m512d ds = _mm512_permute_pd(d, 0x55);          /* b a */
            __m512d t1 = _mm512_mul_pd(d, wr);                /* ac bc */
            __m512d t2 = _mm512_mul_pd(ds, wi);               /* bd ad */
            __m512d re = _mm512_sub_pd(t1, t2);               /* ac - bd */
            __m512d r = _mm512_mask_add_pd(re, 0xaa, t2, t1); /* ad + bc in odd lanes */
            _mm512_storeu_pd(x + 2 * j, u);
            _mm512_storeu_pd(y + 2 * j, r);
        }
    }
}

#else

bool ts__ckks_fft_avx512_built(void)
{
    return false;
}

void ts__ckks_fft_inv_stage_avx512(double complex *vals, size_t n, size_t len,
                                   const double complex *tw)
{
    (void)vals;
    (void)n;
    (void)len;
    (void)tw;
}

#endif

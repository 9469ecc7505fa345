/*
 * core/tfhe/keyswitch_avx2.c — the key-switching inner loop with AVX2
 * (8 x 32-bit lanes); chosen at run time by ts_tfhe_lwe_keyswitch when the
 * CPU has AVX2. Bit-exact with ts__tfhe_ks_row_sub (wrap-around mod 2^32).
 */
#include <immintrin.h>

#include "core/tfhe/tfhe_int.h"

void ts__tfhe_ks_row_sub_avx2(uint32_t *acc, const uint32_t *row, uint32_t m, size_t n)
{
    const __m256i vm = _mm256_set1_epi32((int)m);
    size_t t = 0;
    for (; t + 8 <= n; t += 8) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(acc + t));
        __m256i r = _mm256_loadu_si256((const __m256i *)(row + t));
        a = _mm256_sub_epi32(a, _mm256_mullo_epi32(r, vm));
        _mm256_storeu_si256((__m256i *)(acc + t), a);
    }
    for (; t < n; t++)
        acc[t] -= m * row[t];
}

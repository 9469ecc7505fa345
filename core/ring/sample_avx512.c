/*
 * AVX-512 kernels of the samplers (sample.c; compiled with -mavx512f
 * -mavx512dq -mavx512vl -mavx512ifma, called only when ts_cpu_has_avx512()
 * says so): the Gaussian table count eight samples at a time, and the
 * rejection step of uniform sampling with a compressing store. Both produce
 * exactly what the one-at-a-time loops produce.
 */
#include "core/ring/ring_int.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

bool ts__ring_avx512_built(void)
{
    return true;
}

void ts__ring_cdt_count_avx512(const uint64_t *u, size_t cnt, const uint64_t *cdt, int bound,
                               int64_t *mag)
{
    const __m512i one = _mm512_set1_epi64(1);
    for (size_t i = 0; i < cnt; i += 8) {
        __m512i x = _mm512_loadu_si512((const void *)(u + i)), m = _mm512_setzero_si512();
        for (int k = 0; k < bound; k++) {
            __mmask8 ge = _mm512_cmpge_epu64_mask(x, _mm512_set1_epi64((long long)cdt[k]));
            m = _mm512_mask_add_epi64(m, ge, m, one);
        }
        _mm512_storeu_si512((void *)(mag + i), m);
    }
}

size_t ts__ring_accept_avx512(const uint64_t *w, size_t cnt, uint64_t mask, uint64_t q,
                              uint64_t *out, size_t room)
{
    const __m512i vm = _mm512_set1_epi64((long long)mask), vq = _mm512_set1_epi64((long long)q);
    size_t took = 0, i = 0;
    for (; i + 8 <= cnt; i += 8) {
        __m512i v = _mm512_and_si512(_mm512_loadu_si512((const void *)(w + i)), vm);
        __mmask8 ok = _mm512_cmplt_epu64_mask(v, vq);
        size_t c = (size_t)__builtin_popcount((unsigned)ok);
        if (took + c > room)
            break; /* the last few one at a time */
        _mm512_mask_compressstoreu_epi64((void *)(out + took), ok, v);
        took += c;
    }
    for (; i < cnt && took < room; i++) {
        uint64_t v = w[i] & mask;
        if (v < q)
            out[took++] = v;
    }
    return took;
}

#else

bool ts__ring_avx512_built(void)
{
    return false;
}

void ts__ring_cdt_count_avx512(const uint64_t *u, size_t cnt, const uint64_t *cdt, int bound,
                               int64_t *mag)
{
    (void)u;
    (void)cnt;
    (void)cdt;
    (void)bound;
    (void)mag;
}

size_t ts__ring_accept_avx512(const uint64_t *w, size_t cnt, uint64_t mask, uint64_t q,
                              uint64_t *out, size_t room)
{
    (void)w;
    (void)cnt;
    (void)mask;
    (void)q;
    (void)out;
    (void)room;
    return 0;
}

#endif

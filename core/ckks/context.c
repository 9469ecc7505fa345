/*
 * Derived tables of a parameter object: the FFT roots and rotation group of
 * the encoder, the ring (which also holds the CRT bases used for decoding).
 */
#include <math.h>

#include "core/ckks/ckks_int.h"

ts_status_t ts__ckks_params_build(ts_ckks_params_t *p)
{
    size_t n = p->n, m = 2 * n;
    p->rot_group = ts_malloc(sizeof(uint64_t) * (n / 2));
    p->ksi = ts_malloc(sizeof(double complex) * (m + 1));
    p->fft_inv_tw = ts_malloc(sizeof(double complex) * (n / 2));
    if (!p->rot_group || !p->ksi || !p->fft_inv_tw)
        return TS_ENOMEM;
    uint64_t g = 1;
    for (size_t j = 0; j < n / 2; j++) {
        p->rot_group[j] = g;
        g = (g * 5) % m;
    }
    /* exp(2 pi i k / m) with the angle reduced to the first octant for accuracy */
    const double two_pi = 6.283185307179586476925286766559;
    for (size_t k = 0; k <= m; k++) {
        double ang = two_pi * (double)k / (double)m;
        p->ksi[k] = cos(ang) + I * sin(ang);
    }
    for (size_t len = 2; len <= n / 2; len <<= 1) {
        size_t half = len >> 1, four_len = len << 2, step = m / four_len;
        for (size_t j = 0; j < half; j++)
            p->fft_inv_tw[half - 1 + j] =
                p->ksi[(four_len - (size_t)(p->rot_group[j] & (four_len - 1))) * step];
    }
    for (size_t i = 0; i < p->nq; i++) {
        ts_status_t st = ts_modulus_init(&p->qmod[i], p->q[i]);
        if (st != TS_OK)
            return st;
    }
    ts_ring_params_t rp = {.n = (uint32_t)n,
                           .q = p->q,
                           .q_count = (uint32_t)p->nq,
                           .p = p->np ? p->p : NULL,
                           .p_count = (uint32_t)p->np,
                           .backend = NULL};
    ts_status_t st = ts_ring_new(&rp, &p->ring);
    if (st == TS_OK && !p->ring)
        st = TS_ENOMEM; /* ts_ring_new can report success without a ring on allocation failure */
    if (st != TS_OK)
        return st;
    /* X^{N/2}: multiplying by it multiplies every slot by i (w_j^{N/2 / g} = i) */
    st = ts_poly_new(p->ring, (uint32_t)p->nq, 0, false, &p->imag_ntt);
    if (st != TS_OK)
        return st;
    int64_t *coeffs = ts_calloc(n, sizeof(int64_t));
    if (!coeffs)
        return TS_ENOMEM;
    coeffs[n / 2] = 1;
    st = ts_poly_set_i64(p->imag_ntt, coeffs);
    ts_free(coeffs);
    if (st == TS_OK)
        st = ts_poly_ntt(p->imag_ntt);
    if (st != TS_OK)
        return st;

    /* rescaling by q_l: the centered lift of limb l into q_0..q_{l-1}, and q_l^{-1} */
    p->rescale_conv = ts_calloc(p->nq, sizeof(ts_bk_conv_t *));
    p->rescale_qinv = ts_calloc(p->nq * p->nq, sizeof(uint64_t));
    if (!p->rescale_conv || !p->rescale_qinv)
        return TS_ENOMEM;
    ts_backend_t *be = ts_ring_backend(p->ring);
    const uint32_t *idx = ts_ring_limb_index(p->ring, (uint32_t)p->nq, 0);
    for (size_t l = 1; l < p->nq; l++) {
        st = be->iface->conv_new(be, ts_ring_bk(p->ring), &idx[l], 1, idx, (uint32_t)l,
                                 &p->rescale_conv[l]);
        if (st != TS_OK)
            return st;
        for (size_t i = 0; i < l; i++)
            p->rescale_qinv[l * p->nq + i] = ts_mod_inv(p->q[l] % p->q[i], p->q[i]);
    }
    return TS_OK;
}

void ts__ckks_params_destroy(ts_ckks_params_t *p)
{
    if (!p)
        return;
    if (p->rescale_conv) {
        ts_backend_t *be = ts_ring_backend(p->ring);
        for (size_t l = 1; l < p->nq; l++)
            if (p->rescale_conv[l])
                be->iface->conv_free(be, p->rescale_conv[l]);
    }
    ts_free(p->rescale_conv);
    ts_free(p->rescale_qinv);
    ts_poly_free(p->imag_ntt);
    ts_ring_free(p->ring);
    ts_free(p->ksi);
    ts_free(p->fft_inv_tw);
    ts_free(p->rot_group);
    ts_free(p);
}

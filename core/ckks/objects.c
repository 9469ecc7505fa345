/*
 * Plaintext and ciphertext objects: one polynomial (or two, three) with the
 * capacity of the top level, plus level, scale and slot count.
 */
#include <math.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

ts_status_t ts_ckks_plaintext_new(ts_ckks_params_t *params, int level, ts_ckks_plaintext_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    *out = NULL;
    if (level < 0 || (size_t)level >= params->nq)
        return TS_ELEVEL;
    ts_ckks_plaintext_t *pt = ts_calloc(1, sizeof(*pt));
    if (!pt)
        return TS_ENOMEM;
    ts_status_t st = ts_poly_new(params->ring, (uint32_t)params->nq, 0, true, &pt->poly);
    if (st == TS_OK)
        st = ts_poly_reshape(pt->poly, (uint32_t)level + 1, 0, true);
    if (st != TS_OK) {
        ts_poly_free(pt->poly);
        ts_free(pt);
        return st;
    }
    pt->params = ts_ckks_params_ref(params);
    pt->scale = 1.0;
    pt->log_slots = params->log_slots;
    *out = pt;
    return TS_OK;
}

void ts_ckks_plaintext_free(ts_ckks_plaintext_t *pt)
{
    if (!pt)
        return;
    /* plaintexts may hold client data: reshaping to the full capacity zeroes it */
    if (pt->poly)
        ts_poly_reshape(pt->poly, pt->poly->cap_limbs, 0, false);
    ts_poly_free(pt->poly);
    ts_ckks_params_free(pt->params);
    ts_free(pt);
}

int ts_ckks_plaintext_level(const ts_ckks_plaintext_t *pt)
{
    return ts__ckks_level(pt->poly);
}
double ts_ckks_plaintext_scale(const ts_ckks_plaintext_t *pt)
{
    return pt->scale;
}
size_t ts_ckks_plaintext_slots(const ts_ckks_plaintext_t *pt)
{
    return (size_t)1 << pt->log_slots;
}
const ts_poly_t *ts_ckks_plaintext_poly(const ts_ckks_plaintext_t *pt)
{
    return pt->poly;
}

ts_status_t ts_ckks_ciphertext_new(ts_ckks_params_t *params, int level, ts_ckks_ciphertext_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    *out = NULL;
    if (level < 0 || (size_t)level >= params->nq)
        return TS_ELEVEL;
    ts_ckks_ciphertext_t *ct = ts_calloc(1, sizeof(*ct));
    if (!ct)
        return TS_ENOMEM;
    ct->params = ts_ckks_params_ref(params);
    ct->degree = 1;
    ct->scale = 1.0;
    ct->log_slots = params->log_slots;
    ts_status_t st = TS_OK;
    /* room for the top level, zero at `level` (the whole capacity was zeroed,
     * then the shape again: 6% of a 128-bit decode step's samples were
     * memset, most of it here; the step's series -1 s, docs/benchmarks.md) */
    for (int i = 0; i < 2 && st == TS_OK; i++)
        st = ts_poly_new_cap(params->ring, (uint32_t)params->nq, (uint32_t)level + 1, 0, true,
                             &ct->c[i]);
    if (st != TS_OK) {
        ts_ckks_ciphertext_free(ct);
        return st;
    }
    *out = ct;
    return TS_OK;
}

void ts_ckks_ciphertext_free(ts_ckks_ciphertext_t *ct)
{
    if (!ct)
        return;
    for (int i = 0; i < 3; i++)
        ts_poly_free(ct->c[i]);
    ts_ckks_params_free(ct->params);
    ts_free(ct);
}

ts_status_t ts__ckks_ct_ensure_c2(ts_ckks_ciphertext_t *ct)
{
    if (ct->c[2])
        return TS_OK;
    return ts_poly_new(ct->params->ring, (uint32_t)ct->params->nq, 0, true, &ct->c[2]);
}

static ts_status_t ct_shape(ts_ckks_ciphertext_t *ct, int level, int degree, bool zero)
{
    if (degree == 2) {
        ts_status_t st = ts__ckks_ct_ensure_c2(ct);
        if (st != TS_OK)
            return st;
    }
    for (int i = 0; i <= degree; i++) {
        ts_status_t st = zero ? ts_poly_reshape(ct->c[i], (uint32_t)level + 1, 0, true)
                              : ts_poly_reshape_uninit(ct->c[i], (uint32_t)level + 1, 0, true);
        if (st != TS_OK)
            return st;
    }
    ct->degree = degree;
    return TS_OK;
}

ts_status_t ts__ckks_ct_reshape(ts_ckks_ciphertext_t *ct, int level, int degree)
{
    return ct_shape(ct, level, degree, true);
}

ts_status_t ts__ckks_ct_shape(ts_ckks_ciphertext_t *ct, int level, int degree)
{
    return ct_shape(ct, level, degree, false);
}

ts_status_t ts_ckks_ciphertext_copy(ts_ckks_ciphertext_t *dst, const ts_ckks_ciphertext_t *src)
{
    if (!dst || !src)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(dst->params, src->params))
        return TS_EMISMATCH;
    if (dst == src)
        return TS_OK;
    if (src->degree == 2) {
        ts_status_t st = ts__ckks_ct_ensure_c2(dst);
        if (st != TS_OK)
            return st;
    }
    for (int i = 0; i <= src->degree; i++) {
        ts_status_t st = ts_poly_copy(dst->c[i], src->c[i]);
        if (st != TS_OK)
            return st;
    }
    dst->degree = src->degree;
    dst->scale = src->scale;
    dst->log_slots = src->log_slots;
    dst->seeded = src->seeded;
    memcpy(dst->seed, src->seed, TS_SEED_BYTES);
    return TS_OK;
}

int ts_ckks_ciphertext_level(const ts_ckks_ciphertext_t *ct)
{
    return ts__ckks_level(ct->c[0]);
}
int ts_ckks_ciphertext_degree(const ts_ckks_ciphertext_t *ct)
{
    return ct->degree;
}
double ts_ckks_ciphertext_scale(const ts_ckks_ciphertext_t *ct)
{
    return ct->scale;
}
double ts_ckks_ciphertext_scale_log2(const ts_ckks_ciphertext_t *ct)
{
    return log2(ct->scale);
}
size_t ts_ckks_ciphertext_slots(const ts_ckks_ciphertext_t *ct)
{
    return (size_t)1 << ct->log_slots;
}
ts_ckks_params_t *ts_ckks_ciphertext_params(const ts_ckks_ciphertext_t *ct)
{
    return ct->params;
}
ts_poly_t *ts_ckks_ciphertext_poly(ts_ckks_ciphertext_t *ct, int i)
{
    if (i < 0 || i > ct->degree)
        return NULL;
    return ct->c[i];
}

ts_status_t ts_ckks_ciphertext_set_meta(ts_ckks_ciphertext_t *ct, int level, int degree,
                                        double scale, size_t slots)
{
    if (!ct)
        return TS_EINVAL;
    if (level < 0 || (size_t)level >= ct->params->nq)
        return TS_ELEVEL;
    if (degree < 1 || degree > 2 || !(scale >= 1.0) || !isfinite(scale))
        return TS_EINVAL;
    int log_slots = 0;
    if (slots == 0) {
        log_slots = ct->params->log_slots;
    } else {
        if (slots & (slots - 1) || slots > ct->params->n / 2)
            return TS_EINVAL;
        while (((size_t)1 << log_slots) < slots)
            log_slots++;
    }
    if (degree == 2) {
        ts_status_t st = ts__ckks_ct_ensure_c2(ct);
        if (st != TS_OK)
            return st;
    }
    for (int i = 0; i <= degree; i++)
        if ((int)ct->c[i]->nq != level + 1 || ct->c[i]->np != 0)
            return TS_ELEVEL;
    ct->degree = degree;
    ct->scale = scale;
    ct->log_slots = log_slots;
    ct->seeded = false;
    return TS_OK;
}

/*
 * The CKKS evaluator: arithmetic that needs no key (addition, plaintext and
 * constant products, the tensor product, rescaling, level drops). Key
 * switching (relinearization, rotations) is in keys.c.
 */
#include <math.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

#define SCALE_TOL 0x1p-36

ts_status_t ts__ckks_ks_scratch_new(ts_ckks_evaluator_t *ev);
void ts__ckks_ks_scratch_free(ts_ckks_evaluator_t *ev);

ts_status_t ts_ckks_evaluator_new(ts_ckks_params_t *params, const ts_ckks_evalkeys_t *keys,
                                  ts_ckks_evaluator_t **out)
{
    if (!params || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_ckks_evaluator_t *ev = ts_calloc(1, sizeof(*ev));
    if (!ev)
        return TS_ENOMEM;
    ev->params = ts_ckks_params_ref(params);
    ev->keys = keys;
    ev->be = ts_ring_backend(params->ring);
    ev->bk = ts_ring_bk(params->ring);
    ev->idx = ts_ring_limb_index(params->ring, (uint32_t)params->nq, 0);
    uint32_t nq = (uint32_t)params->nq;
    ts_status_t st = TS_OK;
    for (int i = 0; i < TS_CKKS_EV_TMP && st == TS_OK; i++)
        st = ts_poly_new(params->ring, nq, 0, true, &ev->tmp[i]);
    if (st == TS_OK)
        st = ts_poly_new(params->ring, nq, 0, false, &ev->rs_limb);
    if (st == TS_OK)
        st = ts_poly_new(params->ring, nq, 0, false, &ev->rs_ext);
    if (st == TS_OK) {
        ev->scalars = ts_malloc(sizeof(uint64_t) * (params->nq + params->np));
        if (!ev->scalars)
            st = TS_ENOMEM;
    }
    if (st == TS_OK)
        st = ts__ckks_ks_scratch_new(ev);
    if (st != TS_OK) {
        ts_ckks_evaluator_free(ev);
        return st;
    }
    *out = ev;
    return TS_OK;
}

void ts_ckks_evaluator_free(ts_ckks_evaluator_t *ev)
{
    if (!ev)
        return;
    ts__ckks_ks_scratch_free(ev);
    for (int i = 0; i < TS_CKKS_EV_TMP; i++)
        ts_poly_free(ev->tmp[i]);
    ts_poly_free(ev->rs_limb);
    ts_poly_free(ev->rs_ext);
    ts_free(ev->scalars);
    ts_ckks_params_free(ev->params);
    ts_free(ev);
}

const ts_ckks_evalkeys_t *ts_ckks_evaluator_keys(const ts_ckks_evaluator_t *ev)
{
    return ev ? ev->keys : NULL;
}

/* ----------------------------------------------------------- checks */

bool ts__ckks_scales_match(double a, double b)
{
    double m = a > b ? a : b;
    return fabs(a - b) <= SCALE_TOL * m;
}

ts_status_t ts__ckks_check_ct(const ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *ct)
{
    if (!ct)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ev->params, ct->params))
        return TS_EMISMATCH;
    /* the domain and shape invariants (a deserialized object may break them) */
    if (ct->degree < 1 || ct->degree > 2)
        return TS_EINVAL;
    for (int i = 0; i <= ct->degree; i++)
        if (!ct->c[i] || !ct->c[i]->is_ntt || ct->c[i]->np != 0 || ct->c[i]->nq != ct->c[0]->nq)
            return TS_EINVAL;
    return TS_OK;
}

/* Outputs only need to belong to the parameters; they are overwritten. */
static ts_status_t check_out(const ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *out)
{
    if (!out)
        return TS_EINVAL;
    return ts_ckks_params_equal(ev->params, out->params) ? TS_OK : TS_EMISMATCH;
}

/* Two operands and an output of ev's parameters with one slot count; with
 * same_level also at one level. */
static ts_status_t check_operands(const ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                  const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out,
                                  bool same_level)
{
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = ts__ckks_check_ct(ev, b);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    if (a->log_slots != b->log_slots)
        return TS_EMISMATCH;
    if (same_level && ts__ckks_level(a->c[0]) != ts__ckks_level(b->c[0]))
        return TS_ELEVEL;
    return TS_OK;
}

static ts_status_t check_pair(const ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    return check_operands(ev, a, b, out, true);
}

static ts_status_t check_plain(const ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                               const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    if (!pt)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ev->params, pt->params) || pt->log_slots != a->log_slots)
        return TS_EMISMATCH;
    if (ts__ckks_level(pt->poly) < ts__ckks_level(a->c[0]))
        return TS_ELEVEL;
    if (!pt->poly->is_ntt)
        return TS_EINVAL;
    return TS_OK;
}

/* out's polynomials 0..degree take the shape (nq limbs, NTT), never cleared:
 * every caller writes each word of them next (so out may alias an input, and
 * a reshape costs no pass over tens of MB at N = 2^16). */
static ts_status_t shape_out(ts_ckks_ciphertext_t *out, uint32_t nq, int degree)
{
    if (degree == 2) {
        ts_status_t st = ts__ckks_ct_ensure_c2(out);
        if (st != TS_OK)
            return st;
    }
    for (int i = 0; i <= degree; i++) {
        ts_poly_t *p = out->c[i];
        if (p->nq == nq && p->np == 0 && p->is_ntt)
            continue;
        ts_status_t st = ts_poly_reshape_uninit(p, nq, 0, true);
        if (st != TS_OK)
            return st;
    }
    out->degree = degree;
    out->seeded = false;
    return TS_OK;
}

/* ------------------------------------------------------- additions */

typedef enum { OP_ADD, OP_SUB } addsub_t;

static ts_status_t addsub(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                          const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out, addsub_t op)
{
    ts_status_t st = check_pair(ev, a, b, out);
    if (st != TS_OK)
        return st;
    if (!ts__ckks_scales_match(a->scale, b->scale))
        return TS_ESCALE;
    uint32_t nq = a->c[0]->nq;
    int da = a->degree, db = b->degree, d = da > db ? da : db;
    double scale = a->scale;
    int log_slots = a->log_slots;
    /* the larger-degree tail must be copied before out's shape changes */
    const ts_ckks_ciphertext_t *longer = da >= db ? a : b;
    st = shape_out(out, nq, d);
    for (int i = 0; i <= d && st == TS_OK; i++) {
        ts_bk_batch_t o = ts__ckks_view(ev, out->c[i], 0, nq);
        if (i <= da && i <= db) {
            ts_bk_batch_t x = ts__ckks_view(ev, a->c[i], 0, nq);
            ts_bk_batch_t y = ts__ckks_view(ev, b->c[i], 0, nq);
            st = op == OP_ADD ? ts_backend_add(ev->be, ev->bk, &o, &x, &y)
                              : ts_backend_sub(ev->be, ev->bk, &o, &x, &y);
        } else if (longer == a || op == OP_ADD) {
            if (out->c[i] != longer->c[i])
                st = ts_poly_copy(out->c[i], longer->c[i]);
        } else {
            ts_bk_batch_t y = ts__ckks_view(ev, b->c[i], 0, nq);
            st = ts_backend_neg(ev->be, ev->bk, &o, &y);
        }
    }
    out->scale = scale;
    out->log_slots = log_slots;
    return st;
}

ts_status_t ts_ckks_add(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    return addsub(ev, a, b, out, OP_ADD);
}

ts_status_t ts_ckks_sub(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    return addsub(ev, a, b, out, OP_SUB);
}

ts_status_t ts_ckks_neg(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    uint32_t nq = a->c[0]->nq;
    int d = a->degree;
    st = shape_out(out, nq, d);
    for (int i = 0; i <= d && st == TS_OK; i++) {
        ts_bk_batch_t o = ts__ckks_view(ev, out->c[i], 0, nq);
        ts_bk_batch_t x = ts__ckks_view(ev, a->c[i], 0, nq);
        st = ts_backend_neg(ev->be, ev->bk, &o, &x);
    }
    out->scale = a->scale;
    out->log_slots = a->log_slots;
    return st;
}

static ts_status_t copy_tail(ts_ckks_ciphertext_t *out, const ts_ckks_ciphertext_t *a)
{
    for (int i = 1; i <= a->degree; i++)
        if (out->c[i] != a->c[i]) {
            ts_status_t st = ts_poly_copy(out->c[i], a->c[i]);
            if (st != TS_OK)
                return st;
        }
    return TS_OK;
}

static ts_status_t plain_addsub(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out,
                                addsub_t op)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = check_plain(ev, a, pt, out);
    if (st != TS_OK)
        return st;
    if (!ts__ckks_scales_match(a->scale, pt->scale))
        return TS_ESCALE;
    uint32_t nq = a->c[0]->nq;
    double scale = a->scale;
    int log_slots = a->log_slots;
    st = shape_out(out, nq, a->degree);
    if (st == TS_OK)
        st = copy_tail(out, a);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t o = ts__ckks_view(ev, out->c[0], 0, nq);
    ts_bk_batch_t x = ts__ckks_view(ev, a->c[0], 0, nq);
    ts_bk_batch_t y = ts__ckks_view(ev, pt->poly, 0, nq);
    st = op == OP_ADD ? ts_backend_add(ev->be, ev->bk, &o, &x, &y)
                      : ts_backend_sub(ev->be, ev->bk, &o, &x, &y);
    out->scale = scale;
    out->log_slots = log_slots;
    return st;
}

ts_status_t ts_ckks_add_plain(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out)
{
    return plain_addsub(ev, a, pt, out, OP_ADD);
}

ts_status_t ts_ckks_sub_plain(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out)
{
    return plain_addsub(ev, a, pt, out, OP_SUB);
}

ts_status_t ts_ckks_mul_plain(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_plaintext_t *pt, ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = check_plain(ev, a, pt, out);
    if (st != TS_OK)
        return st;
    uint32_t nq = a->c[0]->nq;
    int d = a->degree;
    double scale = a->scale * pt->scale;
    int log_slots = a->log_slots;
    st = shape_out(out, nq, d);
    ts_bk_batch_t y = ts__ckks_view(ev, pt->poly, 0, nq);
    for (int i = 0; i <= d && st == TS_OK; i++) {
        ts_bk_batch_t o = ts__ckks_view(ev, out->c[i], 0, nq);
        ts_bk_batch_t x = ts__ckks_view(ev, a->c[i], 0, nq);
        st = ts_backend_mul(ev->be, ev->bk, &o, &x, &y);
    }
    out->scale = scale;
    out->log_slots = log_slots;
    return st;
}

/* ------------------------------------------------------- constants */

/* s[l] = x mod q_l for the integer-valued double x, l < nq. */
static void const_residues(const ts_ckks_params_t *p, double x, uint32_t nq, uint64_t *s)
{
    for (uint32_t l = 0; l < nq; l++)
        s[l] = ts__ckks_double_mod(x, &p->qmod[l]);
}

ts_status_t ts_ckks_add_const(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              double complex c, ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    double re = round(creal(c) * a->scale), im = round(cimag(c) * a->scale);
    if (!isfinite(re) || !isfinite(im))
        return TS_ERANGE;
    uint32_t nq = a->c[0]->nq;
    double lim = ev->params->logq_prefix[nq - 1] - 1;
    if ((re != 0 && log2(fabs(re)) >= lim) || (im != 0 && log2(fabs(im)) >= lim))
        return TS_ERANGE;
    double scale = a->scale;
    int log_slots = a->log_slots;
    st = shape_out(out, nq, a->degree);
    if (st == TS_OK)
        st = copy_tail(out, a);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t o = ts__ckks_view(ev, out->c[0], 0, nq);
    ts_bk_batch_t x = ts__ckks_view(ev, a->c[0], 0, nq);
    /* a constant polynomial re is the value re at every NTT point */
    const_residues(ev->params, re, nq, ev->scalars);
    st = ts_backend_add_scalar(ev->be, ev->bk, &o, &x, ev->scalars);
    if (st == TS_OK && im != 0) {
        /* + im * X^{N/2} */
        ts_bk_batch_t t = ts__ckks_view(ev, ev->tmp[0], 0, nq);
        ts_bk_batch_t iu = ts__ckks_view(ev, ev->params->imag_ntt, 0, nq);
        const_residues(ev->params, im, nq, ev->scalars);
        st = ts_backend_mul_scalar(ev->be, ev->bk, &t, &iu, ev->scalars);
        if (st == TS_OK)
            st = ts_backend_add(ev->be, ev->bk, &o, &o, &t);
    }
    out->scale = scale;
    out->log_slots = log_slots;
    return st;
}

ts_status_t ts_ckks_mul_int(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int64_t k,
                            ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    uint32_t nq = a->c[0]->nq;
    int d = a->degree;
    for (uint32_t l = 0; l < nq; l++) {
        uint64_t q = ev->params->q[l];
        uint64_t m = k < 0 ? (uint64_t)(-(k + 1)) + 1 : (uint64_t)k;
        m %= q;
        ev->scalars[l] = k < 0 ? ts_mod_neg(m, q) : m;
    }
    double scale = a->scale;
    int log_slots = a->log_slots;
    st = shape_out(out, nq, d);
    for (int i = 0; i <= d && st == TS_OK; i++) {
        ts_bk_batch_t o = ts__ckks_view(ev, out->c[i], 0, nq);
        ts_bk_batch_t x = ts__ckks_view(ev, a->c[i], 0, nq);
        st = ts_backend_mul_scalar(ev->be, ev->bk, &o, &x, ev->scalars);
    }
    out->scale = scale;
    out->log_slots = log_slots;
    return st;
}

ts_status_t ts_ckks_mul_const(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              double complex c, double const_scale, ts_ckks_ciphertext_t *out)
{
    if (!ev || !a)
        return TS_EINVAL;
    return ts__ckks_mul_const_at(ev, a, c, const_scale, ts__ckks_level(a->c[0]), out);
}

ts_status_t ts__ckks_mul_const_at(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                  double complex c, double const_scale, int level,
                                  ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    if (level < 0 || level > ts__ckks_level(a->c[0]))
        return TS_ELEVEL;
    uint32_t nq = (uint32_t)level + 1;
    if (const_scale == 0)
        const_scale = (double)ev->params->q[nq - 1];
    if (!(const_scale >= 1.0) || !isfinite(const_scale))
        return TS_ESCALE;
    double re = round(creal(c) * const_scale), im = round(cimag(c) * const_scale);
    if (!isfinite(re) || !isfinite(im))
        return TS_ERANGE;
    int d = a->degree;
    double scale = a->scale * const_scale;
    int log_slots = a->log_slots;
    /* per polynomial: the imaginary part goes to scratch before out is written,
     * so out may alias a */
    const ts_ckks_ciphertext_t *src = a;
    st = shape_out(out, nq, d);
    for (int i = 0; i <= d && st == TS_OK; i++) {
        ts_bk_batch_t o = ts__ckks_view(ev, out->c[i], 0, nq);
        ts_bk_batch_t x = ts__ckks_view(ev, src->c[i], 0, nq);
        ts_bk_batch_t t = ts__ckks_view(ev, ev->tmp[0], 0, nq);
        ts_bk_batch_t iu = ts__ckks_view(ev, ev->params->imag_ntt, 0, nq);
        if (im != 0) {
            /* t = x * X^{N/2} * im */
            st = ts_backend_mul(ev->be, ev->bk, &t, &x, &iu);
            const_residues(ev->params, im, nq, ev->scalars);
            if (st == TS_OK)
                st = ts_backend_mul_scalar(ev->be, ev->bk, &t, &t, ev->scalars);
        }
        const_residues(ev->params, re, nq, ev->scalars);
        if (st == TS_OK)
            st = ts_backend_mul_scalar(ev->be, ev->bk, &o, &x, ev->scalars);
        if (st == TS_OK && im != 0)
            st = ts_backend_add(ev->be, ev->bk, &o, &o, &t);
    }
    out->scale = scale;
    out->log_slots = log_slots;
    return st;
}

ts_status_t ts__ckks_mul_const_add(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, double c,
                                   double const_scale, ts_ckks_ciphertext_t *acc)
{
    if (!ev || !a || !acc)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = ts__ckks_check_ct(ev, acc);
    if (st != TS_OK)
        return st;
    if (a->degree != acc->degree || a->log_slots != acc->log_slots)
        return TS_EINVAL;
    uint32_t nq = acc->c[0]->nq;
    if (nq > a->c[0]->nq)
        return TS_ELEVEL;
    if (!(const_scale >= 1.0) || !isfinite(const_scale))
        return TS_ESCALE;
    double re = round(c * const_scale);
    if (!isfinite(re))
        return TS_ERANGE;
    const_residues(ev->params, re, nq, ev->scalars);
    for (int i = 0; i <= a->degree && st == TS_OK; i++) {
        ts_bk_batch_t o = ts__ckks_view(ev, acc->c[i], 0, nq);
        ts_bk_batch_t x = ts__ckks_view(ev, a->c[i], 0, nq);
        st = ts_backend_mul_scalar_add(ev->be, ev->bk, &o, &x, ev->scalars);
        if (st == TS_ENOTSUP) {
            /* the backend lacks the fused op: the product in scratch, then the sum */
            ts_bk_batch_t t = ts__ckks_view(ev, ev->tmp[0], 0, nq);
            st = ts_backend_mul_scalar(ev->be, ev->bk, &t, &x, ev->scalars);
            if (st == TS_OK)
                st = ts_backend_add(ev->be, ev->bk, &o, &o, &t);
        }
    }
    acc->seeded = false;
    return st;
}

/* ------------------------------------------------------- products */

/* The tensor product on the first nq limbs of a and b (degree 1 each). */
static ts_status_t tensor(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                          const ts_ckks_ciphertext_t *b, uint32_t nq, ts_ckks_ciphertext_t *out);

ts_status_t ts_ckks_mul(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                        const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = check_pair(ev, a, b, out);
    if (st != TS_OK)
        return st;
    if (a->degree != 1 || b->degree != 1)
        return TS_EINVAL;
    return tensor(ev, a, b, a->c[0]->nq, out);
}

ts_status_t ts__ckks_mul_lo(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                            const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    if (!ev || !a || !b)
        return TS_EINVAL;
    ts_status_t st = check_operands(ev, a, b, out, false);
    if (st != TS_OK)
        return st;
    if (a->degree != 1 || b->degree != 1)
        return TS_EINVAL;
    uint32_t na = a->c[0]->nq, nb = b->c[0]->nq;
    return tensor(ev, a, b, na < nb ? na : nb, out);
}

static ts_status_t tensor(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                          const ts_ckks_ciphertext_t *b, uint32_t nq, ts_ckks_ciphertext_t *out)
{
    ts_status_t st;
    double scale = a->scale * b->scale;
    int log_slots = a->log_slots;
    ts_bk_batch_t a0 = ts__ckks_view(ev, a->c[0], 0, nq), a1 = ts__ckks_view(ev, a->c[1], 0, nq);
    ts_bk_batch_t b0 = ts__ckks_view(ev, b->c[0], 0, nq), b1 = ts__ckks_view(ev, b->c[1], 0, nq);
    ts_bk_batch_t t0 = ts__ckks_view(ev, ev->tmp[0], 0, nq);
    ts_bk_batch_t t1 = ts__ckks_view(ev, ev->tmp[1], 0, nq);
    ts_bk_batch_t t2 = ts__ckks_view(ev, ev->tmp[2], 0, nq);
    /* into scratch first: out may alias a or b */
    st = ts_backend_mul(ev->be, ev->bk, &t0, &a0, &b0);
    if (st == TS_OK)
        st = ts_backend_mul(ev->be, ev->bk, &t1, &a0, &b1);
    if (st == TS_OK)
        st = ts_backend_mul_add(ev->be, ev->bk, &t1, &a1, &b0);
    if (st == TS_OK)
        st = ts_backend_mul(ev->be, ev->bk, &t2, &a1, &b1);
    if (st == TS_OK)
        st = ts__ckks_ct_ensure_c2(out);
    if (st != TS_OK)
        return st;
    /* the products become out's polynomials by exchanging buffers with the
     * scratch (same ring and capacity): no copy, and a or b may alias out */
    for (int i = 0; i < 3; i++) {
        ts_poly_t *t = ev->tmp[i];
        ev->tmp[i] = out->c[i];
        out->c[i] = t;
        t->nq = nq;
        t->np = 0;
        t->is_ntt = true;
    }
    out->degree = 2;
    out->seeded = false;
    out->scale = scale;
    out->log_slots = log_slots;
    return TS_OK;
}

/* ------------------------------------------------------ levels */

/* dst = src (an NTT-form polynomial of nq limbs) rescaled to nq - 1 limbs;
 * dst may be src (in place); otherwise src is only read, no copy first. */
static ts_status_t rescale_poly(ts_ckks_evaluator_t *ev, const ts_poly_t *src, ts_poly_t *dst,
                                uint32_t nq)
{
    const ts_ckks_params_t *p = ev->params;
    uint32_t l = nq - 1;
    size_t n = p->n;
    /* the top limb in coefficient form */
    ts_bk_batch_t top = ts__ckks_view(ev, src, l, 1);
    ts_bk_batch_t one = ts__ckks_view(ev, ev->rs_limb, l, 1);
    ts_status_t st = ts_backend_copy(ev->be, one.data, top.data, sizeof(uint64_t) * n);
    if (st == TS_OK)
        st = ts_backend_ntt_inverse(ev->be, ev->bk, &one);
    /* its centered lift into q_0..q_{l-1}, back to NTT form */
    ts_bk_batch_t ext = ts__ckks_view(ev, ev->rs_ext, 0, l);
    if (st == TS_OK && ev->be->host_memory) {
        /* host memory: the lift of one residue is a reduction per prime (the
         * backend's general conversion does the same with more work) */
        for (uint32_t i = 0; i < l; i++)
            ts_vec_center_lift(ev->rs_ext->data + (size_t)i * n, one.data, n, p->q[l], &p->qmod[i]);
    } else if (st == TS_OK) {
        st = ts_backend_basis_extend(ev->be, ev->bk, p->rescale_conv[l], &ext, &one);
    }
    if (st == TS_OK)
        st = ts_backend_ntt_forward(ev->be, ev->bk, &ext);
    /* (x - lift) * q_l^{-1}, into dst's l limbs */
    if (st == TS_OK && dst != src)
        st = ts_poly_reshape_uninit(dst, l, 0, true);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t low_in = ts__ckks_view(ev, src, 0, l);
    ts_bk_batch_t low = ts__ckks_view(ev, dst, 0, l);
    st = ts_backend_sub_mul_scalar(ev->be, ev->bk, &low, &low_in, &ext,
                                   p->rescale_qinv + (size_t)l * p->nq);
    if (st == TS_OK && dst == src)
        st = ts_poly_drop_limbs(dst, l);
    return st;
}

ts_status_t ts_ckks_rescale(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                            ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    uint32_t nq = a->c[0]->nq;
    if (nq < 2)
        return TS_ELEVEL;
    double q = (double)ev->params->q[nq - 1];
    if (a->scale / q < 1.0)
        return TS_ESCALE;
    /* out of place: each polynomial read from a, written to out (no copy first) */
    if (a->degree == 2 && (st = ts__ckks_ct_ensure_c2(out)) != TS_OK)
        return st;
    for (int i = 0; i <= a->degree && st == TS_OK; i++)
        st = rescale_poly(ev, a->c[i], out->c[i], nq);
    if (st != TS_OK)
        return st;
    out->degree = a->degree;
    out->scale = a->scale / q;
    out->log_slots = a->log_slots;
    out->seeded = false;
    return TS_OK;
}

ts_status_t ts_ckks_drop_to_level(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int level,
                                  ts_ckks_ciphertext_t *out)
{
    if (!ev)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st == TS_OK)
        st = check_out(ev, out);
    if (st != TS_OK)
        return st;
    if (level < 0 || level > ts__ckks_level(a->c[0]))
        return TS_ELEVEL;
    if (level == ts__ckks_level(a->c[0]))
        return ts_ckks_ciphertext_copy(out, a);
    /* the kept limbs only (a copy of the whole ciphertext first moved up to
     * twice the data at the top of a bootstrap's chain) */
    if (a->degree == 2 && (st = ts__ckks_ct_ensure_c2(out)) != TS_OK)
        return st;
    for (int i = 0; i <= a->degree && st == TS_OK; i++)
        st = ts_poly_copy_prefix(out->c[i], a->c[i], (uint32_t)level + 1);
    if (st != TS_OK)
        return st;
    out->degree = a->degree;
    out->scale = a->scale;
    out->log_slots = a->log_slots;
    out->seeded = false;
    return TS_OK;
}

ts_status_t ts_ckks_drop_level(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int levels,
                               ts_ckks_ciphertext_t *out)
{
    if (!ev || !a)
        return TS_EINVAL;
    if (levels < 0)
        return TS_ELEVEL;
    return ts_ckks_drop_to_level(ev, a, ts__ckks_level(a->c[0]) - levels, out);
}

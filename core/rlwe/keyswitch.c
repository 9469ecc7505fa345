/*
 * Hybrid key switching: decompose (digits of alpha primes), ModUp with the
 * centered HPS conversion, inner product with the key over Q_l * P, ModDown.
 * The inner product (inner_product) and the ModDown (moddown) are each one
 * function, shared by the whole switch and its two halves (the switch without
 * ModDown and the public ModDown of double hoisting).
 * Every conversion of every level is prepared in ts_rlwe_ks_new; the switch
 * itself only calls the backend on preallocated scratch.
 */
#include <string.h>

#include "core/rlwe/rlwe_int.h"

struct ts_rlwe_ks {
    ts_ring_t *ring;
    ts_backend_t *be;
    uint32_t n, lq, kp, dnum, alpha;
    /* [(nq - 1) * dnum + j]: digit j's primes [lo, hi) at level nq -> the
     * primes below it (up_lo, NULL for the first digit) and -> the primes
     * above it then P (up_hi): ModUp writes each part in place in the digit */
    ts_bk_conv_t **up_lo, **up_hi;
    ts_bk_conv_t **down; /* [nq - 1]: P -> Q_nq */
    uint32_t *p_idx;     /* P's modulus indices */
    uint64_t *p_inv;     /* [P^{-1}]_{q_i}, lq entries */
    uint32_t *key_limb;  /* scratch for key limb maps, lq + kp */
    /* backend scratch */
    uint64_t *ccoef;       /* lq limbs */
    uint64_t *rot;         /* 2 polys of lq + kp limbs: sigma_k of the inner product */
    uint64_t *acc;         /* 2 polys of lq + kp limbs */
    uint64_t *down_tmp;    /* 2 polys of lq limbs */
    ts_rlwe_decomp_t *own; /* for ts_rlwe_keyswitch */
};

struct ts_rlwe_decomp {
    const ts_rlwe_ks_t *ks;
    uint64_t *data; /* dnum polys, stride (lq + kp) * N */
    uint32_t nq;    /* level of the decomposed polynomial (limbs), 0 = empty */
    uint32_t ndig;  /* digits present at that level */
};

static size_t qp_stride(const ts_rlwe_ks_t *ks)
{
    return (size_t)(ks->lq + ks->kp) * ks->n;
}

void ts_rlwe_ks_free(ts_rlwe_ks_t *ks)
{
    if (!ks)
        return;
    ts_backend_t *be = ks->be;
    for (uint32_t i = 0; i < ks->lq * ks->dnum; i++) {
        if (ks->up_lo && ks->up_lo[i])
            be->iface->conv_free(be, ks->up_lo[i]);
        if (ks->up_hi && ks->up_hi[i])
            be->iface->conv_free(be, ks->up_hi[i]);
    }
    if (ks->down)
        for (uint32_t i = 0; i < ks->lq; i++)
            be->iface->conv_free(be, ks->down[i]);
    ts_free(ks->up_lo);
    ts_free(ks->up_hi);
    ts_free(ks->down);
    ts_free(ks->p_idx);
    ts_free(ks->p_inv);
    ts_free(ks->key_limb);
    if (be) {
        ts_backend_buf_free(be, ks->ccoef);
        ts_backend_buf_free(be, ks->rot);
        ts_backend_buf_free(be, ks->acc);
        ts_backend_buf_free(be, ks->down_tmp);
    }
    ts_rlwe_decomp_free(ks->own);
    ts_ring_free(ks->ring);
    ts_free(ks);
}

ts_status_t ts_rlwe_ks_new(ts_ring_t *r, uint32_t dnum, ts_rlwe_ks_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!r)
        return TS_EINVAL;
    uint32_t alpha;
    ts_status_t st = ts_rlwe_ksk_shape(r, dnum, &alpha);
    if (st != TS_OK)
        return st;
    ts_rlwe_ks_t *ks = ts_calloc(1, sizeof *ks);
    if (!ks)
        return TS_ENOMEM;
    ks->ring = ts_ring_ref(r);
    ks->be = ts_ring_backend(r);
    ks->n = ts_ring_n(r);
    ks->lq = ts_ring_q_count(r);
    ks->kp = ts_ring_p_count(r);
    ks->dnum = dnum;
    ks->alpha = alpha;
    ts_backend_t *be = ks->be;
    ts_bk_ring_t *bk = ts_ring_bk(r);
    const uint32_t lq = ks->lq, kp = ks->kp;
    st = TS_ENOMEM;
    ks->up_lo = ts_calloc((size_t)lq * dnum, sizeof *ks->up_lo);
    ks->up_hi = ts_calloc((size_t)lq * dnum, sizeof *ks->up_hi);
    ks->down = ts_calloc(lq, sizeof *ks->down);
    ks->p_idx = ts_calloc(kp, sizeof(uint32_t));
    ks->p_inv = ts_calloc(lq, sizeof(uint64_t));
    ks->key_limb = ts_calloc((size_t)lq + kp, sizeof(uint32_t));
    if (!ks->up_lo || !ks->up_hi || !ks->down || !ks->p_idx || !ks->p_inv || !ks->key_limb)
        goto out_free;
    for (uint32_t j = 0; j < kp; j++)
        ks->p_idx[j] = lq + j;
    for (uint32_t i = 0; i < lq; i++) {
        const ts_modulus_t *m = ts_ring_modulus(r, i);
        uint64_t v = 1;
        for (uint32_t j = 0; j < kp; j++)
            v = ts_mod_mul(v, ts_ring_modulus(r, lq + j)->q, m);
        ks->p_inv[i] = ts_mod_inv(v, m->q);
    }
    uint32_t from[TS_RNS_MAX_MODULI];
    for (uint32_t nq = 1; nq <= lq; nq++) {
        for (uint32_t i = 0; i < nq; i++)
            from[i] = i;
        st = be->iface->conv_new(be, bk, ks->p_idx, kp, from, nq, &ks->down[nq - 1]);
        if (st != TS_OK)
            goto out_free;
        const uint32_t ndig = (nq + alpha - 1) / alpha;
        for (uint32_t j = 0; j < ndig; j++) {
            const uint32_t lo = j * alpha, hi = (j + 1) * alpha < nq ? (j + 1) * alpha : nq;
            const size_t slot = (size_t)(nq - 1) * dnum + j;
            /* the targets are slices of Q_nq * P's index list */
            const uint32_t *qp = ts_ring_limb_index(r, nq, kp);
            for (uint32_t i = lo; i < hi; i++)
                from[i - lo] = i;
            st = lo ? be->iface->conv_new(be, bk, from, hi - lo, qp, lo, &ks->up_lo[slot]) : TS_OK;
            if (st == TS_OK && nq + kp > hi)
                st = be->iface->conv_new(be, bk, from, hi - lo, qp + hi, nq + kp - hi,
                                         &ks->up_hi[slot]);
            if (st != TS_OK)
                goto out_free;
        }
    }
    const size_t n = ks->n, w = sizeof(uint64_t);
    st = ts_backend_alloc(be, lq * n * w, (void **)&ks->ccoef);
    if (st == TS_OK)
        st = ts_backend_alloc(be, 2 * qp_stride(ks) * w, (void **)&ks->rot);
    if (st == TS_OK)
        st = ts_backend_alloc(be, 2 * qp_stride(ks) * w, (void **)&ks->acc);
    if (st == TS_OK)
        st = ts_backend_alloc(be, 2 * lq * n * w, (void **)&ks->down_tmp);
    if (st == TS_OK)
        st = ts_rlwe_decomp_new(ks, &ks->own);
    if (st != TS_OK)
        goto out_free;
    *out = ks;
    return TS_OK;
out_free:
    ts_rlwe_ks_free(ks);
    return st;
}

ts_status_t ts_rlwe_decomp_new(const ts_rlwe_ks_t *ks, ts_rlwe_decomp_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!ks)
        return TS_EINVAL;
    ts_rlwe_decomp_t *d = ts_calloc(1, sizeof *d);
    if (!d)
        return TS_ENOMEM;
    d->ks = ks;
    ts_status_t st =
        ts_backend_alloc(ks->be, ks->dnum * qp_stride(ks) * sizeof(uint64_t), (void **)&d->data);
    if (st != TS_OK) {
        ts_free(d);
        return st;
    }
    *out = d;
    return TS_OK;
}

void ts_rlwe_decomp_free(ts_rlwe_decomp_t *d)
{
    if (!d)
        return;
    ts_backend_buf_free(d->ks->be, d->data);
    ts_free(d);
}

static ts_bk_batch_t batch(uint64_t *data, uint32_t npolys, uint32_t nlimbs, size_t stride,
                           const uint32_t *idx)
{
    ts_bk_batch_t b = {
        .data = data, .npolys = npolys, .nlimbs = nlimbs, .poly_stride = stride, .mod_idx = idx};
    return b;
}

/* Decompose c: ModUp of every digit, NTT form over Q_nq * P. */
static ts_status_t decompose(ts_rlwe_ks_t *ks, const ts_poly_t *c, ts_rlwe_decomp_t *d)
{
    if (!ks || !c || !d || d->ks != ks)
        return TS_EINVAL;
    if (c->ring != ks->ring)
        return TS_EMISMATCH;
    if (c->np != 0)
        return TS_ELEVEL;
    ts_backend_t *be = ks->be;
    ts_bk_ring_t *bk = ts_ring_bk(ks->ring);
    const uint32_t nq = c->nq, kp = ks->kp, alpha = ks->alpha;
    const size_t n = ks->n, w = sizeof(uint64_t), stride = qp_stride(ks);
    const uint32_t *qidx = ts_ring_limb_index(ks->ring, nq, 0);
    const uint32_t *qp_idx = ts_ring_limb_index(ks->ring, nq, kp);
    d->nq = 0;
    /* coefficient form of c */
    ts_status_t st = ts_backend_copy(be, ks->ccoef, c->data, nq * n * w);
    if (st != TS_OK)
        return st;
    if (c->is_ntt) {
        ts_bk_batch_t cb = batch(ks->ccoef, 1, nq, nq * n, qidx);
        st = ts_backend_ntt_inverse(be, bk, &cb);
        if (st != TS_OK)
            return st;
    }
    const uint32_t ndig = (nq + alpha - 1) / alpha;
    for (uint32_t j = 0; j < ndig; j++) {
        const uint32_t lo = j * alpha, hi = (j + 1) * alpha < nq ? (j + 1) * alpha : nq;
        const size_t slot = (size_t)(nq - 1) * ks->dnum + j;
        const uint32_t above = nq + kp - hi;
        uint64_t *dj = d->data + j * stride;
        /* ModUp: the digit's residues to the primes of Q_nq * P below it and
         * above it, converted in place in the digit, then NTT */
        ts_bk_batch_t in = batch(ks->ccoef + lo * n, 1, hi - lo, (hi - lo) * n, qidx + lo);
        if (lo) {
            ts_bk_batch_t ex = batch(dj, 1, lo, lo * n, qp_idx);
            st = ts_backend_basis_extend(be, bk, ks->up_lo[slot], &ex, &in);
            if (st == TS_OK)
                st = ts_backend_ntt_forward(be, bk, &ex);
        }
        if (st == TS_OK && above) {
            ts_bk_batch_t ex = batch(dj + hi * n, 1, above, above * n, qp_idx + hi);
            st = ts_backend_basis_extend(be, bk, ks->up_hi[slot], &ex, &in);
            if (st == TS_OK)
                st = ts_backend_ntt_forward(be, bk, &ex);
        }
        if (st != TS_OK)
            return st;
        /* the digit's own limbs are c's own residues, in NTT form */
        if (c->is_ntt) {
            st = ts_backend_copy(be, dj + lo * n, c->data + lo * n, (hi - lo) * n * w);
        } else {
            ts_bk_batch_t own = batch(dj + lo * n, 1, hi - lo, (hi - lo) * n, qp_idx + lo);
            st = ts_backend_copy(be, dj + lo * n, ks->ccoef + lo * n, (hi - lo) * n * w);
            if (st == TS_OK)
                st = ts_backend_ntt_forward(be, bk, &own);
        }
        if (st != TS_OK)
            return st;
    }
    d->nq = nq;
    d->ndig = ndig;
    return TS_OK;
}

ts_status_t ts_rlwe_decompose(ts_rlwe_ks_t *ks, const ts_poly_t *c, ts_rlwe_decomp_t *d)
{
    return decompose(ks, c, d);
}

/* Arguments shared by the switches of a decomposition: TS_OK when (d, k, key)
 * can be switched into outputs of `limbs` limbs of capacity cap0, cap1. */
static ts_status_t check_switch(const ts_rlwe_ks_t *ks, const ts_rlwe_decomp_t *d, uint64_t *k,
                                const ts_rlwe_ksk_t *key, const ts_poly_t *o0, const ts_poly_t *o1,
                                uint32_t limbs)
{
    if (!ks || !d || !key || !o0 || !o1 || o0 == o1 || d->ks != ks || d->nq == 0)
        return TS_EINVAL;
    if (key->ring != ks->ring || key->dnum != ks->dnum || o0->ring != ks->ring ||
        o1->ring != ks->ring)
        return TS_EMISMATCH;
    const uint64_t mask = 2 * (uint64_t)ks->n - 1;
    *k &= mask;
    if (!(*k & 1) || (key->galois ? key->galois != *k : *k != 1))
        return TS_EINVAL;
    if (o0->cap_limbs < limbs || o1->cap_limbs < limbs || d->nq > key->kq)
        return TS_ELEVEL;
    return TS_OK;
}

/* The inner product of the digits with the key over Q_nq * P into ks->acc
 * (2 polynomials at stride qp_stride). */
static ts_status_t inner_product(ts_rlwe_ks_t *ks, const ts_rlwe_decomp_t *d,
                                 const ts_rlwe_ksk_t *key)
{
    const uint32_t nq = d->nq, kp = ks->kp, kq = key->kq;
    const size_t n = ks->n, stride = qp_stride(ks);
    const uint32_t *qp_idx = ts_ring_limb_index(ks->ring, nq, kp);
    const uint32_t *key_idx = ts_ring_limb_index(ks->ring, kq, kp);
    ts_bk_batch_t digits = batch(d->data, d->ndig, nq + kp, stride, qp_idx);
    for (uint32_t l = 0; l < nq; l++)
        ks->key_limb[l] = l;
    for (uint32_t l = 0; l < kp; l++)
        ks->key_limb[nq + l] = kq + l;
    /* the key's own shape: ndig digits over its kq Q limbs and P */
    ts_bk_batch_t kb = batch(key->data, 2 * key->ndig, kq + kp, (size_t)(kq + kp) * n, key_idx);
    ts_bk_batch_t acc = batch(ks->acc, 2, nq + kp, stride, qp_idx);
    return ts_backend_keyswitch_inner(ks->be, ts_ring_bk(ks->ring), &acc, &digits, &kb,
                                      ks->key_limb);
}

/*
 * ModDown of npolys (1 or 2) polynomials in NTT form: u_c = (x_c - NTT(conv_{P->Q}(
 * INTT(x_c mod P)))) * P^{-1} over the nq Q limbs, with x_c's Q limbs at q_src[c] and its
 * P limbs at pl + c * pstride (kp limbs; used as scratch). u_c may share memory with
 * q_src[c].
 */
static ts_status_t moddown(ts_rlwe_ks_t *ks, uint32_t nq, uint32_t npolys, uint64_t *pl,
                           size_t pstride, const uint64_t *const *q_src, ts_poly_t *const *u)
{
    ts_backend_t *be = ks->be;
    ts_bk_ring_t *bk = ts_ring_bk(ks->ring);
    const size_t n = ks->n;
    const uint32_t *qidx = ts_ring_limb_index(ks->ring, nq, 0);
    ts_bk_batch_t accp = batch(pl, npolys, ks->kp, pstride, ks->p_idx);
    ts_bk_batch_t tmp = batch(ks->down_tmp, npolys, nq, (size_t)nq * n, qidx);
    ts_status_t st = ts_backend_ntt_inverse(be, bk, &accp);
    if (st == TS_OK)
        st = ts_backend_basis_extend(be, bk, ks->down[nq - 1], &tmp, &accp);
    if (st == TS_OK)
        st = ts_backend_ntt_forward(be, bk, &tmp);
    for (uint32_t c = 0; c < npolys && st == TS_OK; c++) {
        u[c]->nq = nq;
        u[c]->np = 0;
        u[c]->is_ntt = true;
        ts_bk_batch_t ub = batch(u[c]->data, 1, nq, (size_t)nq * n, qidx);
        ts_bk_batch_t aq = batch((uint64_t *)q_src[c], 1, nq, (size_t)nq * n, qidx);
        ts_bk_batch_t tc = batch(ks->down_tmp + (size_t)c * nq * n, 1, nq, (size_t)nq * n, qidx);
        st = ts_backend_sub_mul_scalar(be, bk, &ub, &aq, &tc, ks->p_inv);
    }
    return st;
}

static ts_status_t keyswitch_digits(ts_rlwe_ks_t *ks, const ts_rlwe_decomp_t *d, uint64_t k,
                                    const ts_rlwe_ksk_t *key, ts_poly_t *u0, ts_poly_t *u1)
{
    ts_status_t st = check_switch(ks, d, &k, key, u0, u1, d ? d->nq : 0);
    if (st != TS_OK)
        return st;
    const uint32_t nq = d->nq, kp = ks->kp;
    const size_t n = ks->n, stride = qp_stride(ks);
    const uint32_t *qp_idx = ts_ring_limb_index(ks->ring, nq, kp);
    st = inner_product(ks, d, key);
    if (st != TS_OK)
        return st;
    /* a Galois key is held as sigma_k^-1 of the key (keys.c): sigma_k of the
     * inner product is the switch of the rotated digits */
    uint64_t *sum = ks->acc;
    if (k != 1) {
        ts_bk_batch_t acc = batch(ks->acc, 2, nq + kp, stride, qp_idx);
        ts_bk_batch_t rot = batch(ks->rot, 2, nq + kp, stride, qp_idx);
        st = ts_backend_automorphism_ntt(ks->be, ts_ring_bk(ks->ring), &rot, &acc, k);
        if (st != TS_OK)
            return st;
        sum = ks->rot;
    }
    const uint64_t *q_src[2] = {sum, sum + stride};
    ts_poly_t *u[2] = {u0, u1};
    return moddown(ks, nq, 2, sum + (size_t)nq * n, stride, q_src, u);
}

ts_status_t ts_rlwe_keyswitch_hoisted(ts_rlwe_ks_t *ks, const ts_rlwe_decomp_t *d, uint64_t k,
                                      const ts_rlwe_ksk_t *key, ts_poly_t *u0, ts_poly_t *u1)
{
    return keyswitch_digits(ks, d, k, key, u0, u1);
}

ts_status_t ts_rlwe_keyswitch_hoisted_qp(ts_rlwe_ks_t *ks, const ts_rlwe_decomp_t *d, uint64_t k,
                                         const ts_rlwe_ksk_t *key, ts_poly_t *v0, ts_poly_t *v1)
{
    ts_status_t st = check_switch(ks, d, &k, key, v0, v1, (ks && d) ? d->nq + ks->kp : 0);
    if (st != TS_OK)
        return st;
    const uint32_t nq = d->nq, kp = ks->kp;
    const size_t n = ks->n, stride = qp_stride(ks);
    const uint32_t *qp_idx = ts_ring_limb_index(ks->ring, nq, kp);
    st = inner_product(ks, d, key);
    ts_poly_t *v[2] = {v0, v1};
    for (int c = 0; c < 2 && st == TS_OK; c++) {
        v[c]->nq = nq;
        v[c]->np = kp;
        v[c]->is_ntt = true;
        ts_bk_batch_t in = batch(ks->acc + c * stride, 1, nq + kp, stride, qp_idx);
        ts_bk_batch_t out = batch(v[c]->data, 1, nq + kp, (size_t)(nq + kp) * n, qp_idx);
        st = k == 1 ? ts_backend_copy(ks->be, out.data, in.data, (nq + kp) * n * sizeof(uint64_t))
                    : ts_backend_automorphism_ntt(ks->be, ts_ring_bk(ks->ring), &out, &in, k);
    }
    return st;
}

ts_status_t ts_rlwe_moddown(ts_rlwe_ks_t *ks, const ts_poly_t *v0, const ts_poly_t *v1,
                            ts_poly_t *u0, ts_poly_t *u1)
{
    if (!ks || !v0 || !u0 || (!v1 != !u1) || (u1 && (u0 == u1 || u0 == v1 || u1 == v0)))
        return TS_EINVAL;
    const ts_poly_t *v[2] = {v0, v1};
    ts_poly_t *u[2] = {u0, u1};
    const uint32_t npolys = v1 ? 2 : 1, nq = v0->nq, kp = ks->kp;
    for (uint32_t c = 0; c < npolys; c++) {
        if (v[c]->ring != ks->ring || u[c]->ring != ks->ring)
            return TS_EMISMATCH;
        if (!v[c]->is_ntt)
            return TS_EINVAL;
        if (v[c]->np != kp || v[c]->nq != nq || u[c]->cap_limbs < nq)
            return TS_ELEVEL;
    }
    const size_t n = ks->n, stride = qp_stride(ks);
    /* the P limbs to scratch (ModDown works on them in place) */
    const uint64_t *q_src[2] = {NULL, NULL};
    ts_status_t st = TS_OK;
    for (uint32_t c = 0; c < npolys && st == TS_OK; c++) {
        q_src[c] = v[c]->data;
        st = ts_backend_copy(ks->be, ks->rot + c * stride, v[c]->data + (size_t)nq * n,
                             (size_t)kp * n * sizeof(uint64_t));
    }
    if (st == TS_OK)
        st = moddown(ks, nq, npolys, ks->rot, stride, q_src, u);
    return st;
}

ts_status_t ts_rlwe_keyswitch(ts_rlwe_ks_t *ks, const ts_poly_t *c, uint64_t k,
                              const ts_rlwe_ksk_t *key, ts_poly_t *u0, ts_poly_t *u1)
{
    if (!ks || !key)
        return TS_EINVAL;
    ts_status_t st = decompose(ks, c, ks->own);
    if (st != TS_OK)
        return st;
    return keyswitch_digits(ks, ks->own, k, key, u0, u1);
}

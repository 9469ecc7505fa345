/*
 * Ring contexts and RNS polynomials; every computation goes through the
 * ring's backend (core/backend).
 */
#include <stdatomic.h>
#include <string.h>

#include "core/ring/ring_int.h"

void ts__ring_destroy(ts_ring_t *r)
{
    if (!r)
        return;
    if (r->bk)
        r->backend->iface->ring_free(r->backend, r->bk);
    if (r->basis_q)
        for (uint32_t i = 0; i < r->q_count; i++)
            ts_rns_basis_free(r->basis_q[i]);
    ts_free(r->basis_q);
    ts_rns_basis_free(r->basis_p);
    if (r->idx_qp)
        for (uint32_t i = 0; i <= r->q_count; i++)
            ts_free(r->idx_qp[i]);
    ts_free(r->idx_qp);
    ts_free(r->idx_all);
    ts_free(r->mods);
    ts_free(r);
}

ts_status_t ts_ring_new(const ts_ring_params_t *params, ts_ring_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!params || !params->q || params->q_count == 0 || (params->p_count && !params->p))
        return TS_EINVAL;
    const uint32_t n = params->n;
    if (n < 2 || (n & (n - 1)) || n > (1u << TS_NTT_MAX_LOGN))
        return TS_EPARAMS;
    const uint32_t total = params->q_count + params->p_count;
    if (total > TS_RNS_MAX_MODULI)
        return TS_EPARAMS;
    uint64_t all[TS_RNS_MAX_MODULI];
    for (uint32_t i = 0; i < params->q_count; i++)
        all[i] = params->q[i];
    for (uint32_t i = 0; i < params->p_count; i++)
        all[params->q_count + i] = params->p[i];
    for (uint32_t i = 0; i < total; i++) {
        if (all[i] >> TS_MODULUS_MAX_BITS || all[i] % (2 * (uint64_t)n) != 1 ||
            !ts_is_prime(all[i]))
            return TS_EPARAMS;
        for (uint32_t j = 0; j < i; j++)
            if (all[i] == all[j])
                return TS_EPARAMS;
    }
    ts_backend_t *be = params->backend ? params->backend : ts_backend_default();
    if (!be)
        return TS_ENOMEM;
    ts_ring_t *r = ts_calloc(1, sizeof *r);
    if (!r)
        return TS_ENOMEM;
    atomic_init(&r->refs, 1);
    r->n = n;
    while ((1u << r->logn) < n)
        r->logn++;
    r->q_count = params->q_count;
    r->p_count = params->p_count;
    r->backend = be;
    ts_status_t st = TS_ENOMEM;
    r->mods = ts_calloc(total, sizeof *r->mods);
    r->idx_all = ts_calloc(total, sizeof(uint32_t));
    r->idx_qp = ts_calloc((size_t)r->q_count + 1, sizeof(uint32_t *));
    r->basis_q = ts_calloc(r->q_count, sizeof(ts_rns_basis_t *));
    if (!r->mods || !r->idx_all || !r->idx_qp || !r->basis_q)
        goto out_free;
    for (uint32_t i = 0; i < total; i++) {
        ts_modulus_init(&r->mods[i], all[i]);
        r->idx_all[i] = i;
    }
    for (uint32_t nq = 1; nq <= r->q_count; nq++) {
        r->idx_qp[nq] = ts_calloc((size_t)nq + r->p_count, sizeof(uint32_t));
        if (!r->idx_qp[nq]) {
            st = TS_ENOMEM;
            goto out_free;
        }
        for (uint32_t l = 0; l < nq; l++)
            r->idx_qp[nq][l] = l;
        for (uint32_t l = 0; l < r->p_count; l++)
            r->idx_qp[nq][nq + l] = r->q_count + l;
        st = ts_rns_basis_new(all, nq, &r->basis_q[nq - 1]);
        if (st != TS_OK)
            goto out_free;
    }
    if (r->p_count) {
        st = ts_rns_basis_new(all + r->q_count, r->p_count, &r->basis_p);
        if (st != TS_OK)
            goto out_free;
    }
    st = be->iface->ring_new(be, n, all, total, &r->bk);
    if (st != TS_OK)
        goto out_free;
    *out = r;
    return TS_OK;
out_free:
    ts__ring_destroy(r);
    return st;
}

ts_ring_t *ts_ring_ref(ts_ring_t *r)
{
    if (r)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void ts_ring_free(ts_ring_t *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1)
        ts__ring_destroy(r);
}

uint32_t ts_ring_n(const ts_ring_t *r)
{
    return r->n;
}
uint32_t ts_ring_logn(const ts_ring_t *r)
{
    return r->logn;
}
uint32_t ts_ring_q_count(const ts_ring_t *r)
{
    return r->q_count;
}
uint32_t ts_ring_p_count(const ts_ring_t *r)
{
    return r->p_count;
}
const ts_modulus_t *ts_ring_modulus(const ts_ring_t *r, uint32_t idx)
{
    return idx < r->q_count + r->p_count ? &r->mods[idx] : NULL;
}
ts_backend_t *ts_ring_backend(const ts_ring_t *r)
{
    return r->backend;
}
ts_bk_ring_t *ts_ring_bk(const ts_ring_t *r)
{
    return r->bk;
}
const ts_rns_basis_t *ts_ring_basis_q(const ts_ring_t *r, uint32_t nq)
{
    return nq >= 1 && nq <= r->q_count ? r->basis_q[nq - 1] : NULL;
}
const ts_rns_basis_t *ts_ring_basis_p(const ts_ring_t *r)
{
    return r->basis_p;
}
const uint32_t *ts_ring_limb_index(const ts_ring_t *r, uint32_t nq, uint32_t np)
{
    if (nq < 1 || nq > r->q_count)
        return NULL;
    if (np == 0)
        return r->idx_all;
    if (np != r->p_count)
        return NULL;
    return r->idx_qp[nq];
}

uint64_t ts_ring_galois_rotate(const ts_ring_t *r, int64_t step)
{
    /* 5 has order N/2 in (Z/2NZ)^* */
    const uint64_t half = r->n / 2, mask = 2 * (uint64_t)r->n - 1;
    uint64_t e = half ? (uint64_t)(((step % (int64_t)half) + (int64_t)half) % (int64_t)half) : 0;
    uint64_t g = 1, b = 5;
    while (e) {
        if (e & 1)
            g = (g * b) & mask;
        b = (b * b) & mask;
        e >>= 1;
    }
    return g;
}

uint64_t ts_ring_galois_conjugate(const ts_ring_t *r)
{
    return 2 * (uint64_t)r->n - 1;
}

/* ------------------------------------------------------------ polynomials */

ts_status_t ts_poly_new_cap(ts_ring_t *r, uint32_t cap_limbs, uint32_t nq, uint32_t np, bool is_ntt,
                            ts_poly_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!r)
        return TS_EINVAL;
    if (nq < 1 || nq > r->q_count || (np != 0 && np != r->p_count))
        return TS_ELEVEL;
    if (cap_limbs < nq + np || cap_limbs > r->q_count + r->p_count)
        return TS_EINVAL;
    ts_poly_t *p = ts_calloc(1, sizeof *p);
    if (!p)
        return TS_ENOMEM;
    size_t bytes = (size_t)cap_limbs * r->n * sizeof(uint64_t);
    ts_status_t st = ts_backend_alloc(r->backend, bytes, (void **)&p->data);
    if (st != TS_OK) {
        ts_free(p);
        return st;
    }
    /* the shape's limbs only: the rest of the capacity is written by whoever
     * grows into it (ts_poly_reshape zeroes, ts_poly_reshape_uninit's caller
     * writes every word) */
    st = ts_backend_zero(r->backend, p->data, (size_t)(nq + np) * r->n * sizeof(uint64_t));
    if (st != TS_OK) {
        ts_backend_buf_free(r->backend, p->data);
        ts_free(p);
        return st;
    }
    p->ring = ts_ring_ref(r);
    p->nq = nq;
    p->np = np;
    p->cap_limbs = cap_limbs;
    p->is_ntt = is_ntt;
    *out = p;
    return TS_OK;
}

ts_status_t ts_poly_new(ts_ring_t *r, uint32_t nq, uint32_t np, bool is_ntt, ts_poly_t **out)
{
    return ts_poly_new_cap(r, nq + np, nq, np, is_ntt, out);
}

void ts_poly_free(ts_poly_t *p)
{
    if (!p)
        return;
    if (p->ring) {
        ts_backend_buf_free(p->ring->backend, p->data);
        ts_ring_free(p->ring);
    }
    ts_free(p);
}

static size_t poly_words(const ts_poly_t *p)
{
    return (size_t)(p->nq + p->np) * p->ring->n;
}

ts_status_t ts_poly_copy(ts_poly_t *dst, const ts_poly_t *src)
{
    if (!dst || !src)
        return TS_EINVAL;
    if (dst->ring != src->ring)
        return TS_EMISMATCH;
    if (dst->cap_limbs < src->nq + src->np)
        return TS_ELEVEL;
    if (dst == src)
        return TS_OK;
    dst->nq = src->nq;
    dst->np = src->np;
    dst->is_ntt = src->is_ntt;
    return ts_backend_copy(src->ring->backend, dst->data, src->data,
                           poly_words(src) * sizeof(uint64_t));
}

ts_status_t ts_poly_copy_prefix(ts_poly_t *dst, const ts_poly_t *src, uint32_t nq)
{
    if (!dst || !src)
        return TS_EINVAL;
    if (dst->ring != src->ring)
        return TS_EMISMATCH;
    if (src->np != 0 || nq < 1 || nq > src->nq || dst->cap_limbs < nq)
        return TS_ELEVEL;
    if (dst == src)
        return ts_poly_drop_limbs(dst, nq);
    dst->nq = nq;
    dst->np = 0;
    dst->is_ntt = src->is_ntt;
    return ts_backend_copy(src->ring->backend, dst->data, src->data,
                           (size_t)nq * src->ring->n * sizeof(uint64_t));
}

ts_status_t ts_poly_clone(const ts_poly_t *src, ts_poly_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!src)
        return TS_EINVAL;
    ts_poly_t *p;
    ts_status_t st = ts_poly_new(src->ring, src->nq, src->np, src->is_ntt, &p);
    if (st != TS_OK)
        return st;
    st = ts_poly_copy(p, src);
    if (st != TS_OK) {
        ts_poly_free(p);
        return st;
    }
    *out = p;
    return TS_OK;
}

ts_status_t ts_poly_zero(ts_poly_t *p)
{
    if (!p)
        return TS_EINVAL;
    return ts_backend_zero(p->ring->backend, p->data, poly_words(p) * sizeof(uint64_t));
}

ts_status_t ts_poly_reshape_uninit(ts_poly_t *p, uint32_t nq, uint32_t np, bool is_ntt)
{
    if (!p)
        return TS_EINVAL;
    if (nq < 1 || nq > p->ring->q_count || (np != 0 && np != p->ring->p_count) ||
        nq + np > p->cap_limbs)
        return TS_ELEVEL;
    p->nq = nq;
    p->np = np;
    p->is_ntt = is_ntt;
    return TS_OK;
}

ts_status_t ts_poly_reshape(ts_poly_t *p, uint32_t nq, uint32_t np, bool is_ntt)
{
    ts_status_t st = ts_poly_reshape_uninit(p, nq, np, is_ntt);
    return st == TS_OK ? ts_poly_zero(p) : st;
}

ts_bk_batch_t ts_poly_batch(const ts_poly_t *p)
{
    ts_bk_batch_t b = {
        .data = p->data,
        .npolys = 1,
        .nlimbs = p->nq + p->np,
        .poly_stride = (size_t)(p->nq + p->np) * p->ring->n,
        .mod_idx = ts_ring_limb_index(p->ring, p->nq, p->np),
    };
    return b;
}

static ts_status_t check2(const ts_poly_t *a, const ts_poly_t *b)
{
    if (!a || !b)
        return TS_EINVAL;
    if (a->ring != b->ring || a->nq != b->nq || a->np != b->np)
        return TS_EMISMATCH;
    if (a->is_ntt != b->is_ntt)
        return TS_EINVAL;
    return TS_OK;
}

/* Give out a's shape (it must fit) before writing into it. */
static ts_status_t shape_out(ts_poly_t *out, const ts_poly_t *a)
{
    if (!out)
        return TS_EINVAL;
    if (out->ring != a->ring)
        return TS_EMISMATCH;
    if (out->cap_limbs < a->nq + a->np)
        return TS_ELEVEL;
    out->nq = a->nq;
    out->np = a->np;
    out->is_ntt = a->is_ntt;
    return TS_OK;
}

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_MUL_ADD } bin_op_t;

static ts_status_t binary(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b, bin_op_t op)
{
    ts_status_t st = check2(a, b);
    if (st != TS_OK)
        return st;
    if ((op == BIN_MUL || op == BIN_MUL_ADD) && !a->is_ntt)
        return TS_EINVAL;
    if (op == BIN_MUL_ADD) {
        st = check2(out, a);
        if (st != TS_OK)
            return st;
    } else {
        st = shape_out(out, a);
        if (st != TS_OK)
            return st;
    }
    ts_ring_t *r = a->ring;
    ts_bk_batch_t bo = ts_poly_batch(out), ba = ts_poly_batch(a), bb = ts_poly_batch(b);
    switch (op) {
    case BIN_ADD:
        return ts_backend_add(r->backend, r->bk, &bo, &ba, &bb);
    case BIN_SUB:
        return ts_backend_sub(r->backend, r->bk, &bo, &ba, &bb);
    case BIN_MUL:
        return ts_backend_mul(r->backend, r->bk, &bo, &ba, &bb);
    case BIN_MUL_ADD:
        return ts_backend_mul_add(r->backend, r->bk, &bo, &ba, &bb);
    }
    return TS_EINVAL;
}

ts_status_t ts_poly_add(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b)
{
    return binary(out, a, b, BIN_ADD);
}
ts_status_t ts_poly_sub(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b)
{
    return binary(out, a, b, BIN_SUB);
}
ts_status_t ts_poly_mul(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b)
{
    return binary(out, a, b, BIN_MUL);
}
ts_status_t ts_poly_mul_add(ts_poly_t *out, const ts_poly_t *a, const ts_poly_t *b)
{
    return binary(out, a, b, BIN_MUL_ADD);
}

ts_status_t ts_poly_neg(ts_poly_t *out, const ts_poly_t *a)
{
    if (!a)
        return TS_EINVAL;
    ts_status_t st = shape_out(out, a);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t bo = ts_poly_batch(out), ba = ts_poly_batch(a);
    return ts_backend_neg(a->ring->backend, a->ring->bk, &bo, &ba);
}

ts_status_t ts_poly_mul_scalar(ts_poly_t *out, const ts_poly_t *a, const uint64_t *s)
{
    if (!a || !s)
        return TS_EINVAL;
    ts_status_t st = shape_out(out, a);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t bo = ts_poly_batch(out), ba = ts_poly_batch(a);
    return ts_backend_mul_scalar(a->ring->backend, a->ring->bk, &bo, &ba, s);
}

static uint64_t i64_mod(int64_t c, const ts_modulus_t *m)
{
    if (c >= 0)
        return ts_mod_reduce64((uint64_t)c, m);
    uint64_t v = ts_mod_reduce64((uint64_t)0 - (uint64_t)c, m);
    return v ? m->q - v : 0;
}

ts_status_t ts_poly_mul_int(ts_poly_t *out, const ts_poly_t *a, int64_t c)
{
    if (!a)
        return TS_EINVAL;
    uint64_t s[TS_RNS_MAX_MODULI];
    const uint32_t *idx = ts_ring_limb_index(a->ring, a->nq, a->np);
    for (uint32_t l = 0; l < a->nq + a->np; l++)
        s[l] = i64_mod(c, &a->ring->mods[idx[l]]);
    return ts_poly_mul_scalar(out, a, s);
}

ts_status_t ts_poly_ntt(ts_poly_t *p)
{
    if (!p)
        return TS_EINVAL;
    if (p->is_ntt)
        return TS_OK;
    ts_bk_batch_t b = ts_poly_batch(p);
    ts_status_t st = ts_backend_ntt_forward(p->ring->backend, p->ring->bk, &b);
    if (st == TS_OK)
        p->is_ntt = true;
    return st;
}

/* Zero the words of every limb off the multiples of gap (host memory). */
static void zero_off_grid(uint64_t *w, size_t limbs, uint32_t n, uint32_t gap)
{
    for (size_t l = 0; l < limbs; l++, w += n)
        for (uint32_t k = 0; k < n; k += gap)
            memset(w + k + 1, 0, (gap - 1) * sizeof(uint64_t));
}

ts_status_t ts_poly_ntt_sparse(ts_poly_t *p, uint32_t gap)
{
    if (!p)
        return TS_EINVAL;
    const uint32_t n = p->ring->n;
    if (!gap || (gap & (gap - 1)) || gap > n / 2)
        return TS_EINVAL;
    if (p->is_ntt)
        return TS_OK;
    if (gap == 1)
        return ts_poly_ntt(p);
    ts_backend_t *be = p->ring->backend;
    ts_bk_batch_t b = ts_poly_batch(p);
    ts_status_t st;
    if (be->iface->ntt_forward_sparse) {
        st = ts_backend_ntt_forward_sparse(be, p->ring->bk, &b, gap);
    } else {
        /* the fallback: make the other words 0, then the full transform */
        const size_t limbs = p->nq + p->np, bytes = poly_words(p) * sizeof(uint64_t);
        if (be->host_memory) {
            zero_off_grid(p->data, limbs, n, gap);
            st = TS_OK;
        } else {
            uint64_t *h = ts_malloc(bytes);
            st = h ? ts_backend_download(be, h, p->data, bytes) : TS_ENOMEM;
            if (st == TS_OK) {
                zero_off_grid(h, limbs, n, gap);
                st = ts_backend_upload(be, p->data, h, bytes);
            }
            ts_free(h);
        }
        if (st == TS_OK)
            st = ts_backend_ntt_forward(be, p->ring->bk, &b);
    }
    if (st == TS_OK)
        p->is_ntt = true;
    return st;
}

ts_status_t ts_poly_intt(ts_poly_t *p)
{
    if (!p)
        return TS_EINVAL;
    if (!p->is_ntt)
        return TS_OK;
    ts_bk_batch_t b = ts_poly_batch(p);
    ts_status_t st = ts_backend_ntt_inverse(p->ring->backend, p->ring->bk, &b);
    if (st == TS_OK)
        p->is_ntt = false;
    return st;
}

ts_status_t ts_poly_automorphism(ts_poly_t *out, const ts_poly_t *a, uint64_t k)
{
    if (!a || !out || out == a || !(k & 1))
        return TS_EINVAL;
    ts_status_t st = shape_out(out, a);
    if (st != TS_OK)
        return st;
    ts_bk_batch_t bo = ts_poly_batch(out), ba = ts_poly_batch(a);
    ts_ring_t *r = a->ring;
    if (a->is_ntt)
        return ts_backend_automorphism_ntt(r->backend, r->bk, &bo, &ba, k);
    return ts_backend_automorphism_coeff(r->backend, r->bk, &bo, &ba, k);
}

ts_status_t ts_poly_drop_limbs(ts_poly_t *p, uint32_t nq)
{
    if (!p)
        return TS_EINVAL;
    if (p->np != 0 || nq < 1 || nq > p->nq)
        return TS_ELEVEL;
    p->nq = nq;
    return TS_OK;
}

/* Write the small integers `src` (N values; may alias the last limb of p when
 * p is in host memory) into every limb of p. */
static void fill_small_host(ts_poly_t *p, uint64_t *data, const int64_t *src)
{
    const uint32_t n = p->ring->n, nl = p->nq + p->np;
    const uint32_t *idx = ts_ring_limb_index(p->ring, p->nq, p->np);
    /* the last limb last (in place), since src may live there */
    for (uint32_t l = 0; l < nl; l++)
        ts_vec_from_i64(data + (size_t)l * n, src, n, &p->ring->mods[idx[l]]);
}

typedef ts_status_t (*small_sampler_fn)(void *arg, size_t n, int64_t *out);

static ts_status_t poly_set_small(ts_poly_t *p, small_sampler_fn fn, void *arg)
{
    const uint32_t n = p->ring->n, nl = p->nq + p->np;
    ts_backend_t *be = p->ring->backend;
    ts_status_t st;
    if (be->host_memory) {
        int64_t *tmp = (int64_t *)(p->data + (size_t)(nl - 1) * n);
        st = fn(arg, n, tmp);
        if (st == TS_OK)
            fill_small_host(p, p->data, tmp);
    } else if (be->iface->set_i64) {
        /* n words cross; the device reduces them into every limb (the
         * scratch wiped: the samplers' words are secrets) */
        int64_t *tmp = ts_malloc(n * sizeof(int64_t));
        int64_t *dev = NULL;
        st = tmp ? fn(arg, n, tmp) : TS_ENOMEM;
        if (st == TS_OK)
            st = ts_backend_alloc(be, n * sizeof(int64_t), (void **)&dev);
        if (st == TS_OK)
            st = ts_backend_upload(be, dev, tmp, n * sizeof(int64_t));
        if (st == TS_OK) {
            ts_bk_batch_t b = ts_poly_batch(p);
            st = ts_backend_set_i64(be, p->ring->bk, &b, dev);
        }
        if (dev) {
            ts_status_t zs = ts_backend_zero(be, dev, n * sizeof(int64_t));
            st = st == TS_OK ? zs : st;
            ts_backend_buf_free(be, dev);
        }
        ts_free_secret(tmp);
    } else {
        size_t words = (size_t)nl * n;
        uint64_t *host = ts_malloc((words + n) * sizeof(uint64_t));
        if (!host)
            return TS_ENOMEM;
        int64_t *tmp = (int64_t *)(host + words);
        st = fn(arg, n, tmp);
        if (st == TS_OK) {
            fill_small_host(p, host, tmp);
            st = ts_backend_upload(be, p->data, host, words * sizeof(uint64_t));
        }
        ts_free_secret(host);
    }
    if (st == TS_OK)
        p->is_ntt = false;
    else
        ts_poly_zero(p);
    return st;
}

static ts_status_t copy_sampler(void *arg, size_t n, int64_t *out)
{
    memmove(out, arg, n * sizeof(int64_t));
    return TS_OK;
}

ts_status_t ts_poly_set_i64(ts_poly_t *p, const int64_t *coeffs)
{
    if (!p || !coeffs)
        return TS_EINVAL;
    return poly_set_small(p, copy_sampler, (void *)coeffs);
}

ts_status_t ts_poly_download(const ts_poly_t *p, uint64_t *host)
{
    if (!p || !host)
        return TS_EINVAL;
    return ts_backend_download(p->ring->backend, host, p->data, poly_words(p) * sizeof(uint64_t));
}

ts_status_t ts_poly_upload(ts_poly_t *p, const uint64_t *host)
{
    if (!p || !host)
        return TS_EINVAL;
    /* untrusted data must not break the "reduced" invariant */
    const uint32_t n = p->ring->n;
    const uint32_t *idx = ts_ring_limb_index(p->ring, p->nq, p->np);
    for (uint32_t l = 0; l < p->nq + p->np; l++) {
        const uint64_t q = p->ring->mods[idx[l]].q;
        for (uint32_t i = 0; i < n; i++)
            if (host[(size_t)l * n + i] >= q)
                return TS_ERANGE;
    }
    return ts_backend_upload(p->ring->backend, p->data, host, poly_words(p) * sizeof(uint64_t));
}

bool ts_poly_equal(const ts_poly_t *a, const ts_poly_t *b)
{
    if (check2(a, b) != TS_OK)
        return false;
    size_t bytes = poly_words(a) * sizeof(uint64_t);
    if (a->ring->backend->host_memory)
        return memcmp(a->data, b->data, bytes) == 0;
    uint64_t *ha = ts_malloc(bytes), *hb = ts_malloc(bytes);
    bool eq = ha && hb && ts_poly_download(a, ha) == TS_OK && ts_poly_download(b, hb) == TS_OK &&
              memcmp(ha, hb, bytes) == 0;
    ts_free(ha);
    ts_free(hb);
    return eq;
}

/* --------------------------------------------------------------- sampling */

typedef struct {
    ts_prng_t *prng;
    size_t h;
    double sigma;
} sample_args_t;

static ts_status_t ternary_fn(void *arg, size_t n, int64_t *out)
{
    return ts_ring_sample_ternary(((sample_args_t *)arg)->prng, n, out);
}
static ts_status_t sparse_fn(void *arg, size_t n, int64_t *out)
{
    sample_args_t *a = arg;
    return ts_ring_sample_sparse_ternary(a->prng, n, a->h, out);
}
static ts_status_t gaussian_fn(void *arg, size_t n, int64_t *out)
{
    sample_args_t *a = arg;
    return ts_ring_sample_gaussian(a->prng, n, a->sigma, out);
}

ts_status_t ts_poly_sample_ternary(ts_poly_t *p, ts_prng_t *prng)
{
    if (!p || !prng)
        return TS_EINVAL;
    sample_args_t a = {.prng = prng};
    return poly_set_small(p, ternary_fn, &a);
}

ts_status_t ts_poly_sample_sparse_ternary(ts_poly_t *p, ts_prng_t *prng, size_t h)
{
    if (!p || !prng || h > p->ring->n)
        return TS_EINVAL;
    sample_args_t a = {.prng = prng, .h = h};
    return poly_set_small(p, sparse_fn, &a);
}

ts_status_t ts_poly_sample_gaussian(ts_poly_t *p, ts_prng_t *prng, double sigma)
{
    if (!p || !prng || !(sigma > 0) || sigma > 64)
        return TS_EINVAL;
    sample_args_t a = {.prng = prng, .sigma = sigma};
    return poly_set_small(p, gaussian_fn, &a);
}

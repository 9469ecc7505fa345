/*
 * The GPU backend's ts_backend_i table: argument validation (the checks of
 * the CPU backend in core/backend/cpu.c, so both backends accept and reject
 * the same calls), host-side precomputation of ring and conversion tables
 * (the very tables of core/math, uploaded), and dispatch to the launchers of
 * the .cu files of gpu/. Every entry point first checks the device's health: after a CUDA
 * error the backend answers TS_EDEVICE and never touches the device again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_int.h"

typedef struct gpu_ctx {
    tsg_dev_t *dev;
    int device;
} gpu_ctx_t;

static const struct ts_backend_i gpu_iface;

static tsg_dev_t *dev_of(ts_backend_t *be)
{
    return ((gpu_ctx_t *)be->ctx)->dev;
}

/* ------------------------------------------------------------- memory */

static ts_status_t g_alloc(ts_backend_t *be, size_t bytes, void **out)
{
    if (!out)
        return TS_EINVAL;
    return ts__gpu_alloc(dev_of(be), bytes, out);
}

static void g_buf_free(ts_backend_t *be, void *p)
{
    ts__gpu_free(dev_of(be), p);
}

static ts_status_t g_upload(ts_backend_t *be, void *dst, const void *src, size_t bytes)
{
    if (bytes && (!dst || !src))
        return TS_EINVAL;
    return ts__gpu_upload(dev_of(be), dst, src, bytes);
}

static ts_status_t g_download(ts_backend_t *be, void *dst, const void *src, size_t bytes)
{
    if (bytes && (!dst || !src))
        return TS_EINVAL;
    return ts__gpu_download(dev_of(be), dst, src, bytes);
}

static ts_status_t g_copy(ts_backend_t *be, void *dst, const void *src, size_t bytes)
{
    if (bytes && (!dst || !src))
        return TS_EINVAL;
    return ts__gpu_copy(dev_of(be), dst, src, bytes);
}

static ts_status_t g_zero(ts_backend_t *be, void *dst, size_t bytes)
{
    if (bytes && !dst)
        return TS_EINVAL;
    return ts__gpu_zero(dev_of(be), dst, bytes);
}

static ts_status_t g_sync(ts_backend_t *be)
{
    return ts__gpu_sync(dev_of(be));
}

/* --------------------------------------------------------------- rings */

static void g_ring_free(ts_backend_t *be, ts_bk_ring_t *r)
{
    if (!r)
        return;
    ts__gpu_free(dev_of(be), r->d_blob);
    ts_free(r->mods);
    ts_free(r);
}

static ts_status_t g_ring_new(ts_backend_t *be, uint32_t n, const uint64_t *moduli, uint32_t count,
                              ts_bk_ring_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    tsg_dev_t *dev = dev_of(be);
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK)
        return st;
    if (!moduli || count == 0 || count > 65535)
        return TS_EINVAL;
    ts_bk_ring_t *r = ts_calloc(1, sizeof *r);
    if (!r)
        return TS_ENOMEM;
    r->n = n;
    r->count = count;
    while (r->logn < 31 && (1u << r->logn) < n)
        r->logn++;
    r->mods = ts_calloc(count, sizeof *r->mods);
    const size_t words = tsg_ring_blob_words(count, n);
    uint64_t *host = ts_malloc(words * sizeof(uint64_t));
    st = TS_ENOMEM;
    if (!r->mods || !host)
        goto out_free;
    for (uint32_t i = 0; i < count; i++) {
        ts_ntt_table_t *t;
        st = ts_ntt_table_new(n, moduli[i], &t);
        if (st != TS_OK)
            goto out_free;
        r->mods[i] = t->mod;
        tsg_ring_pack(t, i, count, host);
        ts_ntt_table_free(t);
    }
    st = ts__gpu_alloc(dev, words * sizeof(uint64_t), &r->d_blob);
    if (st != TS_OK)
        goto out_free;
    st = ts__gpu_upload(dev, r->d_blob, host, words * sizeof(uint64_t));
    if (st == TS_OK)
        st = ts__gpu_sync(dev);
    if (st != TS_OK)
        goto out_free;
    r->d = tsg_ring_view((uintptr_t)r->d_blob, count, n);
    ts_free(host);
    *out = r;
    return TS_OK;
out_free:
    ts_free(host);
    g_ring_free(be, r);
    return st;
}

static ts_status_t g_conv_new(ts_backend_t *be, ts_bk_ring_t *r, const uint32_t *from_idx,
                              uint32_t na, const uint32_t *to_idx, uint32_t nb, ts_bk_conv_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    tsg_dev_t *dev = dev_of(be);
    ts_status_t st = ts__gpu_enter(dev);
    if (st != TS_OK)
        return st;
    if (!r || !from_idx || !to_idx || na == 0 || nb == 0 || na > TS_RNS_MAX_MODULI ||
        nb > TS_RNS_MAX_MODULI)
        return TS_EINVAL;
    ts_bk_conv_t *c = ts_calloc(1, sizeof *c);
    if (!c)
        return TS_ENOMEM;
    c->na = na;
    c->nb = nb;
    for (uint32_t i = 0; i < na; i++) {
        if (from_idx[i] >= r->count) {
            ts_free(c);
            return TS_EINVAL;
        }
        c->from_q[i] = r->mods[from_idx[i]].q;
    }
    for (uint32_t j = 0; j < nb; j++) {
        if (to_idx[j] >= r->count) {
            ts_free(c);
            return TS_EINVAL;
        }
        c->to_q[j] = r->mods[to_idx[j]].q;
    }
    ts_rns_conv_t *hc = NULL;
    uint64_t *blob = NULL;
    st = ts_rns_conv_new(c->from_q, na, c->to_q, nb, &hc);
    if (st != TS_OK)
        goto out_free;
    const size_t words = tsg_conv_blob_words(na, nb);
    blob = ts_malloc(words * sizeof(uint64_t));
    st = TS_ENOMEM;
    if (!blob)
        goto out_free;
    st = ts__gpu_alloc(dev, words * sizeof(uint64_t), &c->d_blob);
    if (st != TS_OK)
        goto out_free;
    tsg_conv_pack(hc, blob, (uintptr_t)c->d_blob, &c->view);
    st = ts__gpu_upload(dev, c->d_blob, blob, words * sizeof(uint64_t));
    if (st == TS_OK)
        st = ts__gpu_sync(dev);
    if (st != TS_OK)
        goto out_free;
    ts_free(blob);
    ts_rns_conv_free(hc);
    *out = c;
    return TS_OK;
out_free:
    ts_free(blob);
    ts_rns_conv_free(hc);
    ts__gpu_free(dev, c->d_blob);
    ts_free(c);
    return st;
}

static void g_conv_free(ts_backend_t *be, ts_bk_conv_t *c)
{
    if (!c)
        return;
    ts__gpu_free(dev_of(be), c->d_blob);
    ts_free(c);
}

/* ---------------------------------------------------------- validation */

static bool same_shape(const ts_bk_batch_t *x, const ts_bk_batch_t *y)
{
    return ts_bk_batch_same_shape(x, y);
}

static bool valid(const ts_bk_ring_t *r, const ts_bk_batch_t *x)
{
    return ts_bk_batch_valid(x, r->n, r->count);
}

static bool overlaps(const ts_bk_batch_t *x, const ts_bk_batch_t *y, uint32_t n)
{
    return ts_bk_batch_overlaps(x, n, y, n);
}

static tsg_limbs_t limbs_of(const ts_bk_batch_t *x)
{
    tsg_limbs_t lm;
    memset(&lm, 0, sizeof lm);
    lm.nlimbs = x->nlimbs;
    lm.npolys = x->npolys;
    for (uint32_t l = 0; l < x->nlimbs && l < TSG_MAX_LIMBS; l++)
        lm.mi[l] = (uint16_t)x->mod_idx[l];
    return lm;
}

static tsg_arg_t arg_of(const ts_bk_batch_t *x)
{
    tsg_arg_t a = {NULL, 0};
    if (x) {
        a.data = x->data;
        a.stride = x->poly_stride;
    }
    return a;
}

/* Health, then the CPU backend's shape checks (run_limbs in cpu.c), then the
 * device's limit on limbs per batch. */
static ts_status_t check_limbs(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                               const ts_bk_batch_t *a, const ts_bk_batch_t *b,
                               const ts_bk_batch_t *c)
{
    if (!be)
        return TS_EINVAL;
    ts_status_t st = ts__gpu_enter(dev_of(be));
    if (st != TS_OK)
        return st;
    if (!r || !a || !valid(r, a))
        return TS_EINVAL;
    if (out && (!valid(r, out) || !same_shape(out, a)))
        return TS_EINVAL;
    if (b && (!valid(r, b) || !same_shape(b, a)))
        return TS_EINVAL;
    if (c && (!valid(r, c) || !same_shape(c, a)))
        return TS_EINVAL;
    if (a->nlimbs > TSG_MAX_LIMBS)
        return TS_ENOTSUP;
    return TS_OK;
}

/* ------------------------------------------------------------------ ops */

static ts_status_t g_ntt(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *a, bool inv)
{
    ts_status_t st = check_limbs(be, r, NULL, a, NULL, NULL);
    if (st != TS_OK)
        return st;
    tsg_limbs_t lm = limbs_of(a);
    return ts__gpu_ntt(dev_of(be), r, arg_of(a), &lm, inv, r->logn);
}

static ts_status_t g_ntt_fwd(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *a)
{
    return g_ntt(be, r, a, false);
}

static ts_status_t g_ntt_inv(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *a)
{
    return g_ntt(be, r, a, true);
}

/* ntt_forward_compact: the (N / gap)-point forward transform of each limb of
 * a spread batch (N / gap words per limb), the CPU backend's checks */
static ts_status_t g_ntt_fwd_compact(ts_backend_t *be, const ts_bk_ring_t *r,
                                     const ts_bk_batch_t *a, uint32_t gap)
{
    if (!be)
        return TS_EINVAL;
    ts_status_t st = ts__gpu_enter(dev_of(be));
    if (st != TS_OK)
        return st;
    if (!r || gap > r->n / 2 || !ts_bk_batch_valid_spread(a, r->n, r->count, gap))
        return TS_EINVAL;
    if (a->nlimbs > TSG_MAX_LIMBS)
        return TS_ENOTSUP;
    const uint32_t lg = (uint32_t)ts_log2_exact(gap); /* gap checked: a power of two */
    tsg_limbs_t lm = limbs_of(a);
    return ts__gpu_ntt(dev_of(be), r, arg_of(a), &lm, false, r->logn - lg);
}

static ts_status_t g_ew(ts_backend_t *be, const ts_bk_ring_t *r, int op, const ts_bk_batch_t *o,
                        const ts_bk_batch_t *a, const ts_bk_batch_t *b, const ts_bk_batch_t *c,
                        const uint64_t *s)
{
    if (!o)
        return TS_EINVAL;
    ts_status_t st = check_limbs(be, r, o, a, b, c);
    if (st != TS_OK)
        return st;
    tsg_limbs_t lm = limbs_of(a);
    if (s) {
        tsg_scalars_t sc;
        memset(&sc, 0, sizeof sc);
        for (uint32_t l = 0; l < a->nlimbs; l++) {
            const uint64_t q = r->mods[a->mod_idx[l]].q;
            if (s[l] >= q)
                return TS_EINVAL;
            sc.v[l] = s[l];
            sc.vp[l] = ts_shoup_precompute(s[l], q);
        }
        return ts__gpu_ew(dev_of(be), r, op, &lm, arg_of(o), arg_of(a), arg_of(b), arg_of(NULL),
                          &sc);
    }
    return ts__gpu_ew(dev_of(be), r, op, &lm, arg_of(o), arg_of(a), arg_of(b), arg_of(c), NULL);
}

static ts_status_t g_add(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                         const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b ? g_ew(be, r, TSG_OP_ADD, o, a, b, NULL, NULL) : TS_EINVAL;
}

static ts_status_t g_sub(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                         const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b ? g_ew(be, r, TSG_OP_SUB, o, a, b, NULL, NULL) : TS_EINVAL;
}

static ts_status_t g_neg(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                         const ts_bk_batch_t *a)
{
    return g_ew(be, r, TSG_OP_NEG, o, a, NULL, NULL, NULL);
}

static ts_status_t g_mul(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                         const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b ? g_ew(be, r, TSG_OP_MUL, o, a, b, NULL, NULL) : TS_EINVAL;
}

static ts_status_t g_mul_add(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                             const ts_bk_batch_t *a, const ts_bk_batch_t *b)
{
    return b ? g_ew(be, r, TSG_OP_MUL_ADD, o, a, b, NULL, NULL) : TS_EINVAL;
}

static ts_status_t g_mul_shoup(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                               const ts_bk_batch_t *a, const ts_bk_batch_t *w,
                               const ts_bk_batch_t *wp)
{
    return w && wp ? g_ew(be, r, TSG_OP_MUL_SHOUP, o, a, w, wp, NULL) : TS_EINVAL;
}

static ts_status_t g_mul_scalar(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                const ts_bk_batch_t *a, const uint64_t *s)
{
    return s ? g_ew(be, r, TSG_OP_MUL_SCALAR, o, a, NULL, NULL, s) : TS_EINVAL;
}

static ts_status_t g_add_scalar(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                const ts_bk_batch_t *a, const uint64_t *s)
{
    return s ? g_ew(be, r, TSG_OP_ADD_SCALAR, o, a, NULL, NULL, s) : TS_EINVAL;
}

static ts_status_t g_mul_scalar_add(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                    const ts_bk_batch_t *a, const uint64_t *s)
{
    return s ? g_ew(be, r, TSG_OP_MUL_SCALAR_ADD, o, a, NULL, NULL, s) : TS_EINVAL;
}

static ts_status_t g_sub_mul_scalar(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                    const ts_bk_batch_t *a, const ts_bk_batch_t *b,
                                    const uint64_t *s)
{
    return s && b ? g_ew(be, r, TSG_OP_SUB_MUL_SCALAR, o, a, b, NULL, s) : TS_EINVAL;
}

static ts_status_t g_auto(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                          const ts_bk_batch_t *a, uint64_t k, bool ntt_form)
{
    if (!o || !a || !r || !(k & 1))
        return TS_EINVAL;
    ts_status_t st = check_limbs(be, r, o, a, NULL, NULL);
    if (st != TS_OK)
        return st;
    if (overlaps(o, a, r->n))
        return TS_EINVAL;
    tsg_limbs_t lm = limbs_of(a);
    return ts__gpu_automorphism(dev_of(be), r, ntt_form, &lm, arg_of(o), arg_of(a), k);
}

static ts_status_t g_auto_ntt(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                              const ts_bk_batch_t *a, uint64_t k)
{
    return g_auto(be, r, o, a, k, true);
}

static ts_status_t g_auto_coeff(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *o,
                                const ts_bk_batch_t *a, uint64_t k)
{
    return g_auto(be, r, o, a, k, false);
}

/* ------------------------------------------------------ basis conversion */

static bool conv_matches(const ts_bk_conv_t *c, const ts_bk_ring_t *r, const ts_bk_batch_t *from,
                         const ts_bk_batch_t *to)
{
    if (from->nlimbs != c->na || to->nlimbs != c->nb)
        return false;
    for (uint32_t i = 0; i < from->nlimbs; i++)
        if (r->mods[from->mod_idx[i]].q != c->from_q[i])
            return false;
    for (uint32_t i = 0; i < to->nlimbs; i++)
        if (r->mods[to->mod_idx[i]].q != c->to_q[i])
            return false;
    return true;
}

static ts_status_t g_basis_extend(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_conv_t *c,
                                  const ts_bk_batch_t *o, const ts_bk_batch_t *in)
{
    if (!be)
        return TS_EINVAL;
    ts_status_t st = ts__gpu_enter(dev_of(be));
    if (st != TS_OK)
        return st;
    if (!r || !c || !valid(r, o) || !valid(r, in) || o->npolys != in->npolys ||
        !conv_matches(c, r, in, o) || overlaps(o, in, r->n))
        return TS_EINVAL;
    tsg_arg_t none = {NULL, 0};
    return ts__gpu_conv(dev_of(be), r, c, o->npolys, arg_of(o), arg_of(in), none, false);
}

static ts_status_t g_basis_reduce(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_conv_t *c,
                                  const ts_bk_batch_t *o, const ts_bk_batch_t *x_a,
                                  const ts_bk_batch_t *x_b)
{
    if (!be)
        return TS_EINVAL;
    ts_status_t st = ts__gpu_enter(dev_of(be));
    if (st != TS_OK)
        return st;
    if (!r || !c || !valid(r, o) || !valid(r, x_a) || !valid(r, x_b) || !same_shape(o, x_b) ||
        x_a->npolys != o->npolys || !conv_matches(c, r, x_a, x_b) || overlaps(o, x_a, r->n))
        return TS_EINVAL;
    return ts__gpu_conv(dev_of(be), r, c, o->npolys, arg_of(o), arg_of(x_a), arg_of(x_b), true);
}

/* ------------------------------------------------- key-switch inner product */

/* set_i64: the CPU backend's checks */
static ts_status_t g_set_i64(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                             const int64_t *src)
{
    if (!be)
        return TS_EINVAL;
    ts_status_t st = ts__gpu_enter(dev_of(be));
    if (st != TS_OK)
        return st;
    if (!r || !ts_bk_set_i64_args_valid(out, src, r->n, r->count))
        return TS_EINVAL;
    if (out->nlimbs > TSG_MAX_LIMBS)
        return TS_ENOTSUP;
    tsg_limbs_t lm = limbs_of(out);
    return ts__gpu_set_i64(dev_of(be), r, &lm, arg_of(out), src);
}

/* spread_expand: the CPU backend's checks */
static ts_status_t g_spread_expand(ts_backend_t *be, const ts_bk_ring_t *r,
                                   const ts_bk_batch_t *out, const ts_bk_batch_t *a, uint32_t gap)
{
    if (!be)
        return TS_EINVAL;
    ts_status_t st = ts__gpu_enter(dev_of(be));
    if (st != TS_OK)
        return st;
    if (!r || !ts_bk_spread_expand_args_valid(out, a, r->n, r->count, gap))
        return TS_EINVAL;
    const uint32_t lg = (uint32_t)ts_log2_exact(gap); /* gap checked: a power of two */
    tsg_limbs_t lm = limbs_of(out);
    return ts__gpu_spread_expand(dev_of(be), r, &lm, arg_of(out), arg_of(a), lg);
}

/*
 * keyswitch_inner with full (gap 1) or spread (gap > 1: N / gap words per
 * digit limb) digits: the CPU backend's checks (core/backend/cpu.c ks_inner).
 */
static ts_status_t ks_inner(ts_backend_t *be, const ts_bk_ring_t *r, const ts_bk_batch_t *out,
                            const ts_bk_batch_t *digits, const ts_bk_batch_t *key,
                            const uint32_t *key_limb, uint32_t gap)
{
    if (!be)
        return TS_EINVAL;
    ts_status_t st = ts__gpu_enter(dev_of(be));
    if (st != TS_OK)
        return st;
    if (!r || !ts_bk_keyswitch_args_valid(out, digits, key, key_limb, r->n, r->count, gap,
                                          TSG_MAX_DIGITS))
        return TS_EINVAL;
    if (out->nlimbs > TSG_MAX_LIMBS)
        return TS_ENOTSUP;
    const uint32_t lg = (uint32_t)ts_log2_exact(gap); /* gap checked: a power of two */
    tsg_limbs_t lm = limbs_of(out), klm;
    memset(&klm, 0, sizeof klm);
    klm.nlimbs = out->nlimbs;
    klm.npolys = key->npolys;
    for (uint32_t l = 0; l < out->nlimbs; l++)
        klm.mi[l] = (uint16_t)key_limb[l];
    return ts__gpu_keyswitch(dev_of(be), r, &lm, arg_of(out), arg_of(digits), digits->npolys,
                             arg_of(key), &klm, lg);
}

static ts_status_t g_keyswitch_inner(ts_backend_t *be, const ts_bk_ring_t *r,
                                     const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                     const ts_bk_batch_t *key, const uint32_t *key_limb)
{
    return ks_inner(be, r, out, digits, key, key_limb, 1);
}

static ts_status_t g_keyswitch_inner_spread(ts_backend_t *be, const ts_bk_ring_t *r,
                                            const ts_bk_batch_t *out, const ts_bk_batch_t *digits,
                                            const ts_bk_batch_t *key, const uint32_t *key_limb,
                                            uint32_t gap)
{
    if (gap < 2) /* the full form has its own entry */
        return TS_EINVAL;
    return ks_inner(be, r, out, digits, key, key_limb, gap);
}

/* ------------------------------------------------------------ lifecycle */

static void g_free(ts_backend_t *be)
{
    if (!be)
        return;
    gpu_ctx_t *ctx = be->ctx;
    if (ctx)
        ts__gpu_dev_free(ctx->dev);
    free(ctx);
    free(be);
}

static const struct ts_backend_i gpu_iface = {
    .name = "gpu",
    .free = g_free,
    .buf_alloc = g_alloc,
    .buf_free = g_buf_free,
    .upload = g_upload,
    .download = g_download,
    .copy = g_copy,
    .zero = g_zero,
    .synchronize = g_sync,
    .ring_new = g_ring_new,
    .ring_free = g_ring_free,
    .conv_new = g_conv_new,
    .conv_free = g_conv_free,
    .ntt_forward = g_ntt_fwd,
    .ntt_inverse = g_ntt_inv,
    .add = g_add,
    .sub = g_sub,
    .neg = g_neg,
    .mul = g_mul,
    .mul_add = g_mul_add,
    .mul_shoup = g_mul_shoup,
    .mul_scalar = g_mul_scalar,
    .add_scalar = g_add_scalar,
    .automorphism_ntt = g_auto_ntt,
    .automorphism_coeff = g_auto_coeff,
    .basis_extend = g_basis_extend,
    .basis_reduce = g_basis_reduce,
    .keyswitch_inner = g_keyswitch_inner,
    .ntt_forward_sparse = NULL, /* optional: core/ring zeroes and runs ntt_forward */
    /* plaintexts of few slots in 1 / gap of the memory and traffic (the
     * weight and DFT diagonals of core/ckks lintrans) */
    .keyswitch_inner_spread = g_keyswitch_inner_spread,
    .ntt_forward_compact = g_ntt_fwd_compact,
    .spread_expand = g_spread_expand,
    .set_i64 = g_set_i64,
    .mul_scalar_add = g_mul_scalar_add,
    .sub_mul_scalar = g_sub_mul_scalar,
    .external_product = NULL, /* the CPU backend has none yet either */
};

ts_status_t ts_gpu_backend_new(int device, ts_backend_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (device < 0)
        return TS_EINVAL;
    char why[256] = "";
    tsg_dev_t *dev = NULL;
    ts_status_t st = ts__gpu_dev_new(device, &dev, why, sizeof why);
    if (st != TS_OK) {
        ts_log(TS_LOG_INFO, "gpu", "GPU backend unavailable: %s", why[0] ? why : ts_strerror(st));
        return st;
    }
    /* bookkeeping from the C library (see gpu.h) */
    ts_backend_t *be = calloc(1, sizeof *be);
    gpu_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!be || !ctx) {
        free(be);
        free(ctx);
        ts__gpu_dev_free(dev);
        return TS_ENOMEM;
    }
    ctx->dev = dev;
    ctx->device = device;
    be->iface = &gpu_iface;
    be->ctx = ctx;
    be->host_memory = false;
    be->threads = 1;
    *out = be;
    return TS_OK;
}

bool ts_gpu_backend_healthy(const ts_backend_t *be)
{
    return be && be->iface == &gpu_iface && ts__gpu_healthy(((const gpu_ctx_t *)be->ctx)->dev);
}

/*
 * Slot-wise linear transforms by the diagonal method with baby-step
 * giant-step (Halevi-Shoup, "Algorithms in HElib", CRYPTO 2014, section 4;
 * BSGS with pre-rotated diagonals as in Han-Ki, CT-RSA 2020, and Bossuat et
 * al., Eurocrypt 2021):
 *     M x = sum_g rot_{g n1}( sum_b d'_{g n1 + b} . rot_b(x) ),
 *     d_i[j] = M[j][(j + i) mod n],  d'_i = rot_{-g n1}(d_i),
 * with rot_k(v)[j] = v[(j + k) mod n]. Double hoisting (Bossuat, Mouchet,
 * Troncoso-Pastoriza, Hubaux, Eurocrypt 2021): one decomposition of x's c1
 * serves every baby step, and every baby rotation stays in the extended basis
 * Q_l * P (ts__ckks_rotate_hoisted_qp: P sigma_b(c0) plus the key switch of c1
 * without its ModDown; the baby step 0 is P x); a giant step's inner sum is
 * taken there against diagonals encoded over Q_l * P; its rotation brings only
 * c1 down to Q_l (to decompose it), switches it without ModDown and adds
 * sigma_g(c0 part) over Q_l * P (ts__ckks_rotate_qp_acc); the sum of the giant
 * steps has the transform's one ModDown of both polynomials. Per transform
 * with nb baby and ng giant steps: ng + 1 ModDowns (ng of one polynomial)
 * instead of nb + ng (of two), for products over np more limbs.
 * Memory: the diagonals hold level + 1 + np limbs (plaintexts used to reserve
 * the top level's limbs, so below the top np levels this is less), of N / gap
 * words each at sparse slots (spread diagonals, struct ts_ckks_lintrans), and
 * apply() keeps the baby rotations over Q_l * P: 2 (level + 1 + np) limbs each.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

typedef struct {
    size_t index; /* i = g n1 + b */
    ts_poly_t pt; /* d'_i at (level, scale), NTT form over Q_level * P: a view of dbuf
                   * (spread, gap > 1: n / gap words per limb, see struct ts_ckks_lintrans) */
} diag_t;

struct ts_ckks_lintrans {
    ts_ckks_params_t *params;
    size_t slots, n1;
    int level;
    double scale;
    size_t ndiag;
    diag_t *diags;  /* sorted by index, so a giant step's diagonals are consecutive */
    uint64_t *dbuf; /* backend memory: the diagonals one after the other */
    /* A diagonal of slots < n / 2 values is a sparse polynomial b(X^(n / 2 slots)),
     * whose NTT form repeats each word gap = n / (2 slots) times in a row
     * (ts_ntt_forward_sparse's spread): stored once per run (gap > 1) when the
     * backend's inner product reads such digits (keyswitch_inner_spread), in
     * 1 / gap of the memory (boot-n16-dense's DFT factors at 2^10 slots: 1.7 GB
     * -> 0.1 GB); gap 1 keeps full limbs. */
    uint32_t gap;
    ts_poly_t *full; /* construction scratch: one diagonal at full size (gap > 1) */
};

void ts_ckks_lintrans_free(ts_ckks_lintrans_t *lt)
{
    if (!lt)
        return;
    if (lt->dbuf)
        ts_backend_buf_free(ts_ring_backend(lt->params->ring), lt->dbuf);
    ts_free(lt->diags);
    ts_poly_free(lt->full);
    ts_ckks_params_free(lt->params);
    ts_free(lt);
}

/* A polynomial view of backend memory: (nq, np), NTT form; never ts_poly_free'd. */
static ts_poly_t view(ts_ring_t *r, uint64_t *data, uint32_t nq, uint32_t np)
{
    ts_poly_t v = {
        .ring = r, .data = data, .nq = nq, .np = np, .cap_limbs = nq + np, .is_ntt = true};
    return v;
}

uint32_t ts__ckks_lintrans_gap(const ts_ckks_lintrans_t *lt)
{
    return lt ? lt->gap : 0;
}

/* The words per limb of a stored diagonal. */
static size_t diag_words(const ts_ckks_lintrans_t *lt)
{
    return lt->params->n / lt->gap;
}

/*
 * The diagonal buffer of nd diagonals at lt's level and the parameters' P
 * (lt->params, slots set); spread storage (lt->gap) where it applies: more
 * than one diagonal (a lone diagonal 0 is applied by a plain product), sparse
 * slots, a backend with keyswitch_inner_spread.
 */
static ts_status_t alloc_diags(ts_ckks_lintrans_t *lt, size_t nd)
{
    const ts_ckks_params_t *p = lt->params;
    ts_backend_t *be = ts_ring_backend(p->ring);
    const size_t limbs = (size_t)lt->level + 1 + p->np;
    lt->gap = 1;
    if (nd > 1 && lt->slots < p->n / 2 && be->iface->keyswitch_inner_spread)
        lt->gap = (uint32_t)(p->n / (2 * lt->slots));
    lt->diags = ts_calloc(nd ? nd : 1, sizeof(diag_t));
    if (!lt->diags)
        return TS_ENOMEM;
    if (lt->gap > 1) {
        ts_status_t st =
            ts_poly_new(p->ring, (uint32_t)lt->level + 1, (uint32_t)p->np, true, &lt->full);
        if (st != TS_OK)
            return st;
    }
    return ts_backend_alloc(be, (nd ? nd : 1) * limbs * diag_words(lt) * sizeof(uint64_t),
                            (void **)&lt->dbuf);
}

/* full -> its spread form at dst (both backend memory), one word per run of
 * gap, a limb at a time (through host buffers where the backend's memory is
 * not the host's); TS_EINTERNAL when a run is not constant (the encoder left a
 * non-sparse plaintext). */
static ts_status_t spread_store(const ts_ckks_lintrans_t *lt, const ts_poly_t *full, uint64_t *dst)
{
    ts_backend_t *be = ts_ring_backend(lt->params->ring);
    const size_t n = lt->params->n, w = diag_words(lt), limbs = (size_t)full->nq + full->np;
    uint64_t *stage = NULL;
    if (!be->host_memory && !(stage = ts_malloc((n + w) * sizeof(uint64_t))))
        return TS_ENOMEM;
    ts_status_t st = TS_OK;
    for (size_t l = 0; l < limbs && st == TS_OK; l++) {
        const uint64_t *src = full->data + l * n;
        uint64_t *out = dst + l * w;
        if (stage) {
            st = ts_backend_download(be, stage, src, n * sizeof(uint64_t));
            src = stage;
            out = stage + n;
        }
        for (size_t k = 0; k < w && st == TS_OK; k++) {
            const uint64_t v = src[k * lt->gap];
            for (uint32_t r = 1; r < lt->gap; r++)
                if (src[k * lt->gap + r] != v)
                    st = TS_EINTERNAL;
            out[k] = v;
        }
        if (stage && st == TS_OK)
            st = ts_backend_upload(be, dst + l * w, out, w * sizeof(uint64_t));
    }
    ts_free(stage);
    return st;
}

/* Encode d (slots values) as the next diagonal, index i, over Q_level * P. */
static ts_status_t add_diag(ts_ckks_encoder_t *enc, ts_ckks_lintrans_t *lt, size_t i,
                            const double complex *d)
{
    const ts_ckks_params_t *p = lt->params;
    const uint32_t nq = (uint32_t)lt->level + 1, np = (uint32_t)p->np;
    diag_t *dg = &lt->diags[lt->ndiag];
    dg->index = i;
    dg->pt = view(p->ring, lt->dbuf + lt->ndiag * (nq + np) * diag_words(lt), nq, np);
    ts_status_t st = ts__ckks_encode_qp(enc, d, NULL, lt->slots, lt->slots, lt->level, lt->scale,
                                        lt->gap > 1 ? lt->full : &dg->pt);
    if (st == TS_OK && lt->gap > 1)
        st = spread_store(lt, lt->full, dg->pt.data);
    if (st == TS_OK)
        lt->ndiag++;
    return st;
}

ts_status_t ts_ckks_lintrans_new(ts_ckks_encoder_t *enc, const double complex *m, size_t slots,
                                 int level, double scale, size_t n1, ts_ckks_lintrans_t **out)
{
    if (!enc || !m || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_ckks_params_t *p = ts__ckks_encoder_params(enc);
    if (!slots || (slots & (slots - 1)) || slots > p->n / 2)
        return TS_EINVAL;
    if (level < 0 || (size_t)level >= p->nq)
        return TS_ELEVEL;
    if (scale == 0)
        scale = (double)p->q[level];
    if (!(scale >= 1.0) || !isfinite(scale))
        return TS_ESCALE;
    /* the nonzero diagonals */
    size_t nd = 0;
    bool *nz = ts_calloc(slots, sizeof(bool));
    double complex *d = ts_malloc(sizeof(double complex) * slots);
    ts_ckks_lintrans_t *lt = ts_calloc(1, sizeof(*lt));
    ts_status_t st = (nz && d && lt) ? TS_OK : TS_ENOMEM;
    if (st != TS_OK)
        goto out_fail;
    for (size_t i = 0; i < slots; i++)
        for (size_t j = 0; j < slots && !nz[i]; j++) {
            double complex v = m[j * slots + (j + i) % slots];
            if (!isfinite(creal(v)) || !isfinite(cimag(v))) {
                st = TS_EINVAL;
                goto out_fail;
            }
            if (v != 0)
                nz[i] = true;
        }
    for (size_t i = 0; i < slots; i++)
        nd += nz[i];
    if (n1 == 0) {
        n1 = 1;
        while (n1 * n1 < slots)
            n1 *= 2;
        if (nd < 4)
            n1 = slots; /* a few diagonals: no giant steps */
    }
    if (n1 & (n1 - 1) || n1 > slots) {
        st = TS_EINVAL;
        goto out_fail;
    }
    lt->params = ts_ckks_params_ref(p);
    lt->slots = slots;
    lt->n1 = n1;
    lt->level = level;
    lt->scale = scale;
    st = alloc_diags(lt, nd);
    if (st != TS_OK)
        goto out_fail;
    for (size_t i = 0; i < slots && st == TS_OK; i++) {
        if (!nz[i])
            continue;
        size_t g = i / n1 * n1;
        /* d'_i[j] = d_i[(j - g) mod n] */
        for (size_t j = 0; j < slots; j++) {
            size_t r = (j + slots - g) % slots;
            d[j] = m[r * slots + (r + i) % slots];
        }
        st = add_diag(enc, lt, i, d);
    }
    if (st != TS_OK)
        goto out_fail;
    ts_free(nz);
    ts_free(d);
    ts_poly_free(lt->full);
    lt->full = NULL;
    *out = lt;
    return TS_OK;

out_fail:
    ts_free(nz);
    ts_free(d);
    ts_ckks_lintrans_free(lt);
    return st;
}

/* Baby steps b in use (b = index mod n1) and giant offsets g n1 in use. */
static size_t collect(const ts_ckks_lintrans_t *lt, int64_t *baby, size_t *nbaby, int64_t *giant)
{
    size_t nb = 0, ng = 0;
    for (size_t i = 0; i < lt->ndiag; i++) {
        int64_t b = (int64_t)(lt->diags[i].index % lt->n1);
        int64_t g = (int64_t)(lt->diags[i].index - (size_t)b);
        bool seen = false;
        for (size_t j = 0; j < nb; j++)
            seen |= baby[j] == b;
        if (!seen)
            baby[nb++] = b;
        seen = false;
        for (size_t j = 0; j < ng; j++)
            seen |= giant[j] == g;
        if (!seen)
            giant[ng++] = g;
    }
    *nbaby = nb;
    return ng;
}

ts_status_t ts_ckks_lintrans_steps(const ts_ckks_lintrans_t *lt, int64_t *steps, size_t *count)
{
    if (!lt || !count)
        return TS_EINVAL;
    int64_t *baby = ts_malloc(sizeof(int64_t) * (lt->ndiag + 1));
    int64_t *giant = ts_malloc(sizeof(int64_t) * (lt->ndiag + 1));
    if (!baby || !giant) {
        ts_free(baby);
        ts_free(giant);
        return TS_ENOMEM;
    }
    size_t nb, ng = collect(lt, baby, &nb, giant), n = 0;
    ts_status_t st = TS_OK;
    for (size_t i = 0; i < nb + ng; i++) {
        int64_t s = i < nb ? baby[i] : giant[i - nb];
        if (s == 0)
            continue;
        if (steps && n >= *count) {
            st = TS_ERANGE;
            break;
        }
        if (steps)
            steps[n] = s;
        n++;
    }
    *count = n;
    ts_free(baby);
    ts_free(giant);
    return st;
}

/* out = x . d'_0 over Q_l: the transform of the main diagonal alone (no key switch). */
static ts_status_t apply_diagonal(ts_ckks_evaluator_t *ev, const ts_ckks_lintrans_t *lt,
                                  const ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *out)
{
    const uint32_t nq = (uint32_t)lt->level + 1;
    const double scale = a->scale * lt->scale;
    const int log_slots = a->log_slots;
    ts_status_t st = TS_OK;
    if (out != a)
        st = ts__ckks_ct_shape(out, lt->level, 1); /* written in full below */
    for (int c = 0; c < 2 && st == TS_OK; c++) {
        ts_bk_batch_t o = ts__ckks_view(ev, out->c[c], 0, nq);
        ts_bk_batch_t x = ts__ckks_view(ev, a->c[c], 0, nq);
        ts_bk_batch_t y = ts__ckks_view(ev, &lt->diags[0].pt, 0, nq);
        st = ts_backend_mul(ev->be, ev->bk, &o, &x, &y);
    }
    out->degree = 1;
    out->scale = scale;
    out->log_slots = log_slots;
    out->seeded = false;
    return st;
}

/* ------------------------------------------------ double-hoisted sums */

struct ts_ckks_bsgs {
    ts_ckks_evaluator_t *ev; /* borrowed */
    int level, log_slots;
    uint32_t nq, np;
    size_t stride, nb;     /* words per Q_l * P polynomial; baby steps */
    double xscale, dscale; /* x's scale; the diagonals' (0 until the first) */
    int64_t *baby;
    uint64_t *rbuf;        /* 2 nb polynomials: (c0 part, c1 part) of each baby rotation */
    uint64_t *tbuf, *abuf; /* 2 polynomials each: the inner sum, the sum */
    ts_poly_t *w[2], *pt;  /* scratch: a giant rotation's switch, an encoded diagonal */
    uint64_t *cbuf;        /* compact diagonals of a mul_add_run (nb of them), or NULL */
    uint32_t *limb;        /* identity limb map, nq + np */
    bool have_t, have_acc;
};

void ts_ckks_bsgs_free(ts_ckks_bsgs_t *h)
{
    if (!h)
        return;
    ts_backend_t *be = h->ev->be;
    ts_backend_buf_free(be, h->rbuf);
    ts_backend_buf_free(be, h->tbuf);
    ts_backend_buf_free(be, h->abuf);
    ts_backend_buf_free(be, h->cbuf);
    ts_poly_free(h->w[0]);
    ts_poly_free(h->w[1]);
    ts_poly_free(h->pt);
    ts_free(h->baby);
    ts_free(h->limb);
    ts_free(h);
}

ts_status_t ts_ckks_bsgs_new(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *x,
                             const int64_t *baby_steps, size_t nb, ts_ckks_bsgs_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!ev || !x || !nb || !baby_steps)
        return TS_EINVAL;
    ts_status_t st = ts__ckks_check_ct(ev, x);
    if (st != TS_OK)
        return st;
    if (x->degree != 1)
        return TS_EINVAL;
    if (!ev->ks)
        return TS_ENOKEY;
    ts_ckks_bsgs_t *h = ts_calloc(1, sizeof(*h));
    if (!h)
        return TS_ENOMEM;
    const ts_ckks_params_t *p = ev->params;
    h->ev = ev;
    h->level = ts_ckks_ciphertext_level(x);
    h->log_slots = x->log_slots;
    h->nq = (uint32_t)h->level + 1;
    h->np = (uint32_t)p->np;
    h->stride = (size_t)(h->nq + h->np) * p->n;
    h->nb = nb;
    h->xscale = x->scale;
    const size_t bytes = h->stride * sizeof(uint64_t);
    h->baby = ts_malloc(sizeof(int64_t) * nb);
    h->limb = ts_malloc(sizeof(uint32_t) * (h->nq + h->np));
    ts_poly_t **v = ts_malloc(sizeof(*v) * 2 * nb);
    ts_poly_t *rot = ts_malloc(sizeof(*rot) * 2 * nb);
    st = (h->baby && h->limb && v && rot) ? TS_OK : TS_ENOMEM;
    if (st == TS_OK)
        st = ts_backend_alloc(ev->be, 2 * nb * bytes, (void **)&h->rbuf);
    if (st == TS_OK)
        st = ts_backend_alloc(ev->be, 2 * bytes, (void **)&h->tbuf);
    if (st == TS_OK)
        st = ts_backend_alloc(ev->be, 2 * bytes, (void **)&h->abuf);
    for (int c = 0; c < 2 && st == TS_OK; c++)
        st = ts_poly_new(p->ring, h->nq, h->np, true, &h->w[c]);
    if (st == TS_OK) {
        memcpy(h->baby, baby_steps, sizeof(int64_t) * nb);
        for (uint32_t l = 0; l < h->nq + h->np; l++)
            h->limb[l] = l;
        for (size_t i = 0; i < 2 * nb; i++) {
            rot[i] = view(p->ring, h->rbuf + i * h->stride, h->nq, h->np);
            v[i] = &rot[i];
        }
        /* the baby rotations over Q_l * P, one decomposition of c1 (step 0: P x) */
        st = ts__ckks_rotate_hoisted_qp(ev, x, baby_steps, nb, v);
    }
    ts_free(v);
    ts_free(rot);
    if (st != TS_OK) {
        ts_ckks_bsgs_free(h);
        return st;
    }
    *out = h;
    return TS_OK;
}

/* The batch of `count` consecutive Q_l * P polynomials at data. */
static ts_bk_batch_t qp_batch(const ts_ckks_bsgs_t *h, uint64_t *data, uint32_t count)
{
    ts_bk_batch_t b = {.data = data,
                       .npolys = count,
                       .nlimbs = h->nq + h->np,
                       .poly_stride = h->stride,
                       .mod_idx = ts_ring_limb_index(h->ev->params->ring, h->nq, h->np)};
    return b;
}

/* The backend's inner product over full (gap 1) or spread digits. */
static ts_status_t inner(ts_ckks_evaluator_t *ev, const ts_bk_batch_t *o, const ts_bk_batch_t *d,
                         const ts_bk_batch_t *r, const uint32_t *limb, uint32_t gap)
{
    if (gap > 1)
        return ts_backend_keyswitch_inner_spread(ev->be, ev->bk, o, d, r, limb, gap);
    return ts_backend_keyswitch_inner(ev->be, ev->bk, o, d, r, limb);
}

static ts_status_t check_scale(ts_ckks_bsgs_t *h, double scale)
{
    if (!(scale >= 1.0) || !isfinite(scale))
        return TS_ESCALE;
    if (h->dscale == 0)
        h->dscale = scale;
    return ts__ckks_scales_match(h->dscale, scale) ? TS_OK : TS_ESCALE;
}

ts_status_t ts__ckks_bsgs_dot(ts_ckks_bsgs_t *h, size_t b0, size_t count, const uint64_t *diags,
                              uint32_t gap, double scale)
{
    if (!h || !diags || !count || b0 + count > h->nb || count > 64)
        return TS_EINVAL;
    ts_status_t st = check_scale(h, scale);
    if (st != TS_OK)
        return st;
    ts_ckks_evaluator_t *ev = h->ev;
    ts_bk_batch_t d = qp_batch(h, (uint64_t *)diags, (uint32_t)count);
    if (gap > 1)
        d.poly_stride = h->stride / gap;
    ts_bk_batch_t r = qp_batch(h, h->rbuf + 2 * b0 * h->stride, (uint32_t)(2 * count));
    if (!h->have_t) {
        ts_bk_batch_t o = qp_batch(h, h->tbuf, 2);
        st = inner(ev, &o, &d, &r, h->limb, gap);
    } else {
        /* into w, then added (the inner product sets its output) */
        for (int c = 0; c < 2 && st == TS_OK; c++) {
            ts_bk_batch_t oc = qp_batch(h, h->w[c]->data, 1);
            ts_bk_batch_t tc = qp_batch(h, h->tbuf + (size_t)c * h->stride, 1);
            ts_bk_batch_t rc = r; /* the c parts only */
            rc.data += (size_t)c * h->stride;
            rc.poly_stride = 2 * h->stride;
            rc.npolys = (uint32_t)count;
            st = inner(ev, &oc, &d, &rc, h->limb, gap);
            if (st == TS_OK)
                st = ts_backend_add(ev->be, ev->bk, &tc, &tc, &oc);
        }
    }
    h->have_t = true;
    return st;
}

ts_status_t ts__ckks_bsgs_mul_add_poly(ts_ckks_bsgs_t *h, size_t b, const ts_poly_t *d,
                                       double scale)
{
    if (!h || !d || b >= h->nb)
        return TS_EINVAL;
    if (d->nq != h->nq || d->np != h->np || !d->is_ntt)
        return TS_ELEVEL;
    return ts__ckks_bsgs_dot(h, b, 1, d->data, 1, scale);
}

ts_status_t ts_ckks_bsgs_mul_add(ts_ckks_bsgs_t *h, size_t b, ts_ckks_encoder_t *enc,
                                 const double complex *values, const double *reals, size_t count,
                                 double scale)
{
    if (!h || !enc || (!values == !reals) || b >= h->nb)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts__ckks_encoder_params(enc);
    if (!ts_ckks_params_equal(p, h->ev->params))
        return TS_EMISMATCH;
    const size_t slots = (size_t)1 << h->log_slots;
    if (count > slots)
        return TS_EINVAL;
    ts_status_t st = TS_OK;
    if (!h->pt)
        st = ts_poly_new(p->ring, h->nq, h->np, true, &h->pt);
    if (st == TS_OK)
        st = ts__ckks_encode_qp(enc, values, reals, count, slots, h->level, scale, h->pt);
    if (st == TS_OK)
        st = ts__ckks_bsgs_mul_add_poly(h, b, h->pt, scale);
    return st;
}

ts_status_t ts_ckks_bsgs_mul_add_run(ts_ckks_bsgs_t *h, size_t b0, size_t count,
                                     ts_ckks_encoder_t *enc, const double *reals, size_t slots,
                                     double scale)
{
    if (!h || !enc || !reals || !count || count > 64 || b0 + count > h->nb ||
        slots != (size_t)1 << h->log_slots)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts__ckks_encoder_params(enc);
    if (!ts_ckks_params_equal(p, h->ev->params))
        return TS_EMISMATCH;
    ts_backend_t *be = h->ev->be;
    ts_status_t st = TS_ENOTSUP;
    if (slots < p->n / 2 && be->iface->keyswitch_inner_spread && be->iface->ntt_forward_compact) {
        const size_t per = (size_t)(h->nq + h->np) * 2 * slots;
        st = h->cbuf ? TS_OK
                     : ts_backend_alloc(be, h->nb * per * sizeof(uint64_t), (void **)&h->cbuf);
        for (size_t k = 0; k < count && st == TS_OK; k++)
            st = ts__ckks_encode_qp_compact(enc, reals + k * slots, slots, slots, h->level, scale,
                                            h->cbuf + k * per);
        if (st == TS_OK)
            return ts__ckks_bsgs_dot(h, b0, count, h->cbuf, (uint32_t)(p->n / (2 * slots)), scale);
        if (st != TS_ENOTSUP)
            return st;
    }
    /* the full form, one diagonal at a time (a backend without the spread
     * ops, full slots, or a coefficient beyond 2^62) */
    st = TS_OK;
    for (size_t k = 0; k < count && st == TS_OK; k++)
        st = ts_ckks_bsgs_mul_add(h, b0 + k, enc, NULL, reals + k * slots, slots, scale);
    return st;
}

ts_status_t ts_ckks_bsgs_giant(ts_ckks_bsgs_t *h, int64_t step)
{
    if (!h)
        return TS_EINVAL;
    if (!h->have_t)
        return TS_OK;
    ts_ckks_evaluator_t *ev = h->ev;
    ts_ring_t *ring = ev->params->ring;
    const size_t slots = (size_t)1 << h->log_slots;
    ts_status_t st = TS_OK;
    if (step % (int64_t)slots == 0) {
        if (!h->have_acc) {
            uint64_t *x = h->abuf;
            h->abuf = h->tbuf;
            h->tbuf = x;
        } else {
            ts_bk_batch_t o = qp_batch(h, h->abuf, 2), x = qp_batch(h, h->tbuf, 2);
            st = ts_backend_add(ev->be, ev->bk, &o, &o, &x);
        }
    } else {
        /* the giant rotation stays over Q_l * P too (ModDown of t1 only) */
        ts_poly_t t0 = view(ring, h->tbuf, h->nq, h->np),
                  t1 = view(ring, h->tbuf + h->stride, h->nq, h->np);
        ts_poly_t a0 = view(ring, h->abuf, h->nq, h->np),
                  a1 = view(ring, h->abuf + h->stride, h->nq, h->np);
        st = ts__ckks_rotate_qp_acc(ev, step, slots, &t0, &t1, h->w[0], h->w[1], &a0, &a1,
                                    h->have_acc);
    }
    h->have_t = false;
    if (st == TS_OK)
        h->have_acc = true;
    return st;
}

ts_status_t ts_ckks_bsgs_finish(ts_ckks_bsgs_t *h, ts_ckks_ciphertext_t *out)
{
    if (!h || !out)
        return TS_EINVAL;
    ts_ckks_evaluator_t *ev = h->ev;
    if (!ts_ckks_params_equal(ev->params, out->params))
        return TS_EMISMATCH;
    ts_status_t st = ts_ckks_bsgs_giant(h, 0); /* a pending inner sum: giant step 0 */
    if (st == TS_OK && !h->have_acc)
        st = TS_EINVAL; /* nothing was added */
    if (st == TS_OK)
        st = ts__ckks_ct_shape(out, h->level, 1); /* the ModDown writes both in full */
    ts_ring_t *ring = ev->params->ring;
    ts_poly_t a0 = view(ring, h->abuf, h->nq, h->np),
              a1 = view(ring, h->abuf + h->stride, h->nq, h->np);
    /* the one ModDown of the sum */
    if (st == TS_OK)
        st = ts__ckks_moddown(ev, &a0, &a1, out->c[0], out->c[1]);
    if (st == TS_OK) {
        out->scale = h->xscale * h->dscale;
        out->log_slots = h->log_slots;
        out->seeded = false;
    }
    h->have_t = h->have_acc = false;
    h->dscale = 0;
    return st;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

ts_status_t ts_ckks_lintrans_apply(ts_ckks_evaluator_t *ev, const ts_ckks_lintrans_t *lt,
                                   const ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *out)
{
    if (!ev || !lt || !a || !out)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ev->params, lt->params) ||
        !ts_ckks_params_equal(ev->params, a->params) ||
        !ts_ckks_params_equal(ev->params, out->params))
        return TS_EMISMATCH;
    ts_status_t st = ts__ckks_check_ct(ev, a);
    if (st != TS_OK)
        return st;
    if (ts_ckks_ciphertext_slots(a) != lt->slots)
        return TS_EMISMATCH;
    if (ts_ckks_ciphertext_level(a) != lt->level)
        return TS_ELEVEL;
    if (a->degree != 1)
        return TS_EINVAL;
    if (lt->ndiag == 0)
        return TS_EINVAL;
    if (lt->ndiag == 1 && lt->diags[0].index == 0)
        return apply_diagonal(ev, lt, a, out);
    const size_t cap = lt->ndiag + 1;
    int64_t *baby = ts_malloc(sizeof(int64_t) * cap);
    int64_t *giant = ts_malloc(sizeof(int64_t) * cap);
    ts_ckks_bsgs_t *h = NULL;
    st = (baby && giant) ? TS_OK : TS_ENOMEM;
    size_t nb = 0;
    if (st == TS_OK) {
        collect(lt, baby, &nb, giant);
        qsort(baby, nb, sizeof(int64_t), cmp_i64);
        st = ts_ckks_bsgs_new(ev, a, baby, nb, &h);
    }
    /* the giant steps' runs of diagonals [k0, k1) (sorted by index) */
    for (size_t k0 = 0, k1; st == TS_OK && k0 < lt->ndiag; k0 = k1) {
        const int64_t g = (int64_t)(lt->diags[k0].index - lt->diags[k0].index % lt->n1);
        size_t pos0 = 0;
        while (baby[pos0] != (int64_t)(lt->diags[k0].index % lt->n1))
            pos0++;
        bool run = true; /* consecutive baby steps: one inner product */
        for (k1 = k0; k1 < lt->ndiag; k1++) {
            const diag_t *dg = &lt->diags[k1];
            if ((int64_t)(dg->index - dg->index % lt->n1) != g)
                break;
            const size_t pi = pos0 + (k1 - k0);
            run = run && pi < nb && baby[pi] == (int64_t)(dg->index % lt->n1);
        }
        if (run && k1 - k0 <= 64) {
            st = ts__ckks_bsgs_dot(h, pos0, k1 - k0, lt->diags[k0].pt.data, lt->gap, lt->scale);
        } else {
            for (size_t k = k0; k < k1 && st == TS_OK; k++) {
                size_t bi = 0;
                while (baby[bi] != (int64_t)(lt->diags[k].index % lt->n1))
                    bi++;
                st = ts__ckks_bsgs_dot(h, bi, 1, lt->diags[k].pt.data, lt->gap, lt->scale);
            }
        }
        if (st == TS_OK)
            st = ts_ckks_bsgs_giant(h, g);
    }
    if (st == TS_OK)
        st = ts_ckks_bsgs_finish(h, out);
    ts_ckks_bsgs_free(h);
    ts_free(baby);
    ts_free(giant);
    return st;
}

/*
 * The same transform given by its nonzero diagonals (for structured matrices
 * too large to write densely, e.g. the factors of the homomorphic DFT):
 * diagonal k has offset offsets[k] (taken mod slots; offsets must be distinct
 * mod slots) and values diags[k * slots + j] = M[j][(j + offsets[k]) mod slots].
 */
ts_status_t ts_ckks_lintrans_new_diagonals(ts_ckks_encoder_t *enc, size_t slots, size_t ndiag,
                                           const int64_t *offsets, const double complex *diags,
                                           int level, double scale, size_t n1,
                                           ts_ckks_lintrans_t **out)
{
    if (!enc || !out || (ndiag && (!offsets || !diags)) || ndiag > slots)
        return TS_EINVAL;
    *out = NULL;
    ts_ckks_params_t *p = ts__ckks_encoder_params(enc);
    if (!slots || (slots & (slots - 1)) || slots > p->n / 2 || ndiag == 0)
        return TS_EINVAL;
    if (level < 0 || (size_t)level >= p->nq)
        return TS_ELEVEL;
    if (scale == 0)
        scale = (double)p->q[level];
    if (!(scale >= 1.0) || !isfinite(scale))
        return TS_ESCALE;
    if (n1 == 0) {
        /* about sqrt(ndiag) baby steps at the stride of the offsets */
        uint64_t stride = slots;
        for (size_t k = 0; k < ndiag; k++) {
            uint64_t o =
                (uint64_t)(((offsets[k] % (int64_t)slots) + (int64_t)slots) % (int64_t)slots);
            if (o && (o & (0 - o)) < stride)
                stride = o & (0 - o);
        }
        size_t b = 1;
        while (b * b < ndiag)
            b *= 2;
        n1 = (size_t)stride * b;
        if (n1 > slots)
            n1 = slots;
    }
    if (n1 & (n1 - 1) || n1 > slots)
        return TS_EINVAL;
    /* sorted indices in [0, slots) */
    size_t *order = ts_malloc(sizeof(size_t) * ndiag);
    size_t *idx = ts_malloc(sizeof(size_t) * ndiag);
    double complex *d = ts_malloc(sizeof(double complex) * slots);
    ts_ckks_lintrans_t *lt = ts_calloc(1, sizeof(*lt));
    ts_status_t st = (order && idx && d && lt) ? TS_OK : TS_ENOMEM;
    if (st != TS_OK)
        goto out_fail;
    for (size_t k = 0; k < ndiag; k++) {
        idx[k] = (size_t)(((offsets[k] % (int64_t)slots) + (int64_t)slots) % (int64_t)slots);
        order[k] = k;
    }
    for (size_t a = 1; a < ndiag; a++) /* insertion sort by index */
        for (size_t b = a; b > 0 && idx[order[b - 1]] > idx[order[b]]; b--) {
            size_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (size_t a = 1; a < ndiag; a++)
        if (idx[order[a]] == idx[order[a - 1]]) {
            st = TS_EINVAL;
            goto out_fail;
        }
    lt->params = ts_ckks_params_ref(p);
    lt->slots = slots;
    lt->n1 = n1;
    lt->level = level;
    lt->scale = scale;
    st = alloc_diags(lt, ndiag);
    if (st != TS_OK)
        goto out_fail;
    for (size_t a = 0; a < ndiag && st == TS_OK; a++) {
        size_t k = order[a], i = idx[k];
        size_t g = i / n1 * n1;
        const double complex *src = diags + k * slots;
        /* d'_i[j] = d_i[(j - g) mod n] */
        for (size_t j = 0; j < slots; j++) {
            d[j] = src[(j + slots - g) % slots];
            if (!isfinite(creal(d[j])) || !isfinite(cimag(d[j])))
                st = TS_EINVAL;
        }
        if (st == TS_OK)
            st = add_diag(enc, lt, i, d);
    }
    if (st != TS_OK)
        goto out_fail;
    ts_free(order);
    ts_free(idx);
    ts_free(d);
    ts_poly_free(lt->full);
    lt->full = NULL;
    *out = lt;
    return TS_OK;

out_fail:
    ts_free(order);
    ts_free(idx);
    ts_free(d);
    ts_ckks_lintrans_free(lt);
    return st;
}

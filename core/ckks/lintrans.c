/*
 * Slot-wise linear transforms by the diagonal method with baby-step
 * giant-step (Halevi-Shoup, "Algorithms in HElib", CRYPTO 2014, section 4;
 * BSGS with pre-rotated diagonals as in Han-Ki, CT-RSA 2020, and Bossuat et
 * al., Eurocrypt 2021):
 *     M x = sum_g rot_{g n1}( sum_b d'_{g n1 + b} . rot_b(x) ),
 *     d_i[j] = M[j][(j + i) mod n],  d'_i = rot_{-g n1}(d_i),
 * with rot_k(v)[j] = v[(j + k) mod n]. Baby rotations are double hoisted
 * (Bossuat, Mouchet, Troncoso-Pastoriza, Hubaux, Eurocrypt 2021): one
 * decomposition of x's c1 for all baby steps, and each baby rotation stays in
 * the extended basis Q_l * P (ts__ckks_rotate_hoisted_qp: P sigma_b(c0) plus the
 * key switch of c1 without its ModDown); the inner sum of a giant step is taken
 * there against diagonals encoded over Q_l * P, and ModDown runs once per giant
 * step (both polynomials) instead of once per baby step. The baby step 0 (x
 * itself) is added over Q_l after that ModDown (the same as entering as P x).
 * Memory: the diagonals hold level + 1 + np limbs (plaintexts used to reserve
 * the top level's limbs, so below the top np levels this is less), and apply()
 * keeps the baby rotations over Q_l * P: 2 (level + 1 + np) limbs each.
 */
#include <math.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

typedef struct {
    size_t index;  /* i = g n1 + b */
    ts_poly_t *pt; /* d'_i at (level, scale), NTT form over Q_level * P */
} diag_t;

struct ts_ckks_lintrans {
    ts_ckks_params_t *params;
    size_t slots, n1;
    int level;
    double scale;
    size_t ndiag;
    diag_t *diags; /* sorted by index */
};

void ts_ckks_lintrans_free(ts_ckks_lintrans_t *lt)
{
    if (!lt)
        return;
    for (size_t i = 0; i < lt->ndiag; i++)
        ts_poly_free(lt->diags[i].pt);
    ts_free(lt->diags);
    ts_ckks_params_free(lt->params);
    ts_free(lt);
}

/* [out] d (slots values) encoded at (level, scale) over Q_level * P. */
static ts_status_t encode_diag(ts_ckks_encoder_t *enc, const double complex *d, size_t slots,
                               int level, double scale, ts_poly_t **out)
{
    const ts_ckks_params_t *p = ts__ckks_encoder_params(enc);
    ts_status_t st = ts_poly_new(p->ring, (uint32_t)level + 1, (uint32_t)p->np, true, out);
    if (st == TS_OK)
        st = ts__ckks_encode_qp(enc, d, slots, slots, level, scale, *out);
    if (st != TS_OK) {
        ts_poly_free(*out);
        *out = NULL;
    }
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
    lt->diags = ts_calloc(nd ? nd : 1, sizeof(diag_t));
    if (!lt->diags) {
        st = TS_ENOMEM;
        goto out_fail;
    }
    for (size_t i = 0; i < slots && st == TS_OK; i++) {
        if (!nz[i])
            continue;
        size_t g = i / n1 * n1;
        /* d'_i[j] = d_i[(j - g) mod n] */
        for (size_t j = 0; j < slots; j++) {
            size_t r = (j + slots - g) % slots;
            d[j] = m[r * slots + (r + i) % slots];
        }
        diag_t *dg = &lt->diags[lt->ndiag];
        dg->index = i;
        st = encode_diag(enc, d, slots, level, scale, &dg->pt);
        if (st == TS_OK)
            lt->ndiag++;
    }
    if (st != TS_OK)
        goto out_fail;
    ts_free(nz);
    ts_free(d);
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
    const uint32_t nq = (uint32_t)lt->level + 1, np = (uint32_t)ev->params->np;
    size_t cap = lt->ndiag + 1;
    int64_t *baby = ts_malloc(sizeof(int64_t) * cap);
    int64_t *giant = ts_malloc(sizeof(int64_t) * cap);
    int64_t *steps = ts_malloc(sizeof(int64_t) * cap);
    size_t *slot = ts_malloc(sizeof(size_t) * cap); /* baby step i -> its pair in rot, or cap */
    ts_poly_t **rot = ts_calloc(2 * cap, sizeof(*rot));
    ts_poly_t *qp[2] = {NULL, NULL};
    ts_ckks_ciphertext_t *acc = NULL, *sum = NULL;
    st = (baby && giant && steps && slot && rot) ? TS_OK : TS_ENOMEM;
    size_t nb = 0, ng = 0, nr = 0;
    if (st == TS_OK)
        ng = collect(lt, baby, &nb, giant);
    for (size_t i = 0; i < nb && st == TS_OK; i++) {
        slot[i] = cap;
        if (baby[i] == 0)
            continue;
        slot[i] = nr;
        steps[nr] = baby[i];
        st = ts_poly_new(ev->params->ring, nq, np, true, &rot[2 * nr]);
        if (st == TS_OK)
            st = ts_poly_new(ev->params->ring, nq, np, true, &rot[2 * nr + 1]);
        nr++;
    }
    for (int c = 0; c < 2 && st == TS_OK && nr; c++)
        st = ts_poly_new(ev->params->ring, nq, np, true, &qp[c]);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(ev->params, lt->level, &acc);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(ev->params, lt->level, &sum);
    /* the baby rotations over Q_l * P, one decomposition of c1 */
    if (st == TS_OK && nr)
        st = ts__ckks_rotate_hoisted_qp(ev, a, steps, nr, rot);
    const uint32_t *qp_idx = ts_ring_limb_index(ev->params->ring, nq, np);
    const size_t n = ev->params->n;
    bool have_sum = false;
    for (size_t gi = 0; gi < ng && st == TS_OK; gi++) {
        bool have_qp = false;
        const diag_t *d0 = NULL; /* the baby step 0 of this giant step */
        for (size_t k = 0; k < lt->ndiag && st == TS_OK; k++) {
            const diag_t *dg = &lt->diags[k];
            int64_t b = (int64_t)(dg->index % lt->n1);
            if ((int64_t)dg->index - b != giant[gi])
                continue;
            size_t bi = 0;
            while (baby[bi] != b)
                bi++;
            if (slot[bi] == cap) {
                d0 = dg;
                continue;
            }
            /* qp += rot_b(x) . d' over Q_l * P (the first product sets it) */
            ts_bk_batch_t y = {.data = dg->pt->data,
                               .npolys = 1,
                               .nlimbs = nq + np,
                               .poly_stride = (size_t)(nq + np) * n,
                               .mod_idx = qp_idx};
            for (int c = 0; c < 2 && st == TS_OK; c++) {
                ts_bk_batch_t o = y, x = y;
                o.data = qp[c]->data;
                x.data = rot[2 * slot[bi] + (size_t)c]->data;
                st = have_qp ? ts_backend_mul_add(ev->be, ev->bk, &o, &x, &y)
                             : ts_backend_mul(ev->be, ev->bk, &o, &x, &y);
            }
            have_qp = true;
        }
        /* one ModDown per giant step, then + x . d'_{g n1} over Q_l */
        if (st == TS_OK && have_qp)
            st = ts__ckks_moddown(ev, qp[0], qp[1], acc->c[0], acc->c[1]);
        for (int c = 0; c < 2 && st == TS_OK && d0; c++) {
            ts_bk_batch_t o = ts__ckks_view(ev, acc->c[c], 0, nq);
            ts_bk_batch_t x = ts__ckks_view(ev, a->c[c], 0, nq);
            ts_bk_batch_t y = ts__ckks_view(ev, d0->pt, 0, nq);
            st = have_qp ? ts_backend_mul_add(ev->be, ev->bk, &o, &x, &y)
                         : ts_backend_mul(ev->be, ev->bk, &o, &x, &y);
        }
        if (st != TS_OK)
            break;
        acc->degree = 1;
        acc->scale = a->scale * lt->scale;
        acc->log_slots = a->log_slots;
        if (giant[gi] != 0)
            st = ts_ckks_rotate(ev, acc, giant[gi], acc);
        if (st == TS_OK)
            st = have_sum ? ts_ckks_add(ev, sum, acc, sum) : ts_ckks_ciphertext_copy(sum, acc);
        have_sum = true;
    }
    if (st == TS_OK)
        st = ts_ckks_ciphertext_copy(out, sum);
    if (rot)
        for (size_t i = 0; i < 2 * cap; i++)
            ts_poly_free(rot[i]);
    ts_free(rot);
    ts_poly_free(qp[0]);
    ts_poly_free(qp[1]);
    ts_ckks_ciphertext_free(acc);
    ts_ckks_ciphertext_free(sum);
    ts_free(baby);
    ts_free(giant);
    ts_free(steps);
    ts_free(slot);
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
    lt->diags = ts_calloc(ndiag, sizeof(diag_t));
    if (!lt->diags) {
        st = TS_ENOMEM;
        goto out_fail;
    }
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
        diag_t *dg = &lt->diags[lt->ndiag];
        dg->index = i;
        if (st == TS_OK)
            st = encode_diag(enc, d, slots, level, scale, &dg->pt);
        if (st == TS_OK)
            lt->ndiag++;
    }
    if (st != TS_OK)
        goto out_fail;
    ts_free(order);
    ts_free(idx);
    ts_free(d);
    *out = lt;
    return TS_OK;

out_fail:
    ts_free(order);
    ts_free(idx);
    ts_free(d);
    ts_ckks_lintrans_free(lt);
    return st;
}

/*
 * The encrypted three-step lookup of ROSETTA section 3.2 (see nonlinear.h):
 * HomComp for the segment, online construct-then-select for the interval and
 * for the linear piece, on the small ring of a ts_convert_t.
 */
#include <math.h>
#include <string.h>

#include "core/math/math.h"
#include "core/nonlinear/nonlinear.h"
#include "core/nonlinear/nonlinear_int.h"
#include "core/ring/ring.h"

/* The mutable state of one look-up at a time (see nonlinear_int.h). */
struct ts__nonlinear_lut_he_worker {
    ts_tfhe_evaluator_t *tev; /* borrowed */
    ts_convert_worker_t *cw;  /* borrowed; NULL: the convert object's own trace */
    ts_poly_t *pa, *pb;       /* on the table's ring */
    ts_tfhe_rlwe_t *acc, *acc2, **res;
    ts_tfhe_lwe_t *lx, *ls, *lv, *lt;
    int n_seg;
};

/* The tables (read only once made) and the worker of ts_nonlinear_lut_he_eval. */
struct ts_nonlinear_lut_he {
    ts_convert_t *cv;
    const ts_tfhe_params_t *tp;
    ts_ring_t *ring; /* (N_br, {Q}) for plaintext products */
    uint64_t q;
    uint32_t n;
    int n_seg, n_br, in_bits, frac_bits, k, guard;
    double lo, step, du, dy, dv;
    uint64_t *tau;                     /* n_seg - 1 integer thresholds */
    ts_poly_t *a2;                     /* NTT */
    uint64_t *b2;                      /* coefficients */
    ts_poly_t **a3;                    /* n_seg, NTT */
    uint64_t *b3;                      /* n_seg * N coefficients */
    ts_poly_t **box;                   /* n_seg, NTT */
    ts__nonlinear_lut_he_worker_t *w0; /* cv's evaluator and trace */
};

static uint64_t enc_real(long double v, uint64_t q)
{
    long double r = roundl(v);
    long double m = fmodl(r, (long double)q);
    if (m < 0)
        m += (long double)q;
    uint64_t x = (uint64_t)m;
    return x >= q ? x - q : x;
}

void ts__nonlinear_lut_he_worker_free(ts__nonlinear_lut_he_worker_t *w)
{
    if (!w)
        return;
    ts_poly_free(w->pa);
    ts_poly_free(w->pb);
    ts_tfhe_rlwe_free(w->acc);
    ts_tfhe_rlwe_free(w->acc2);
    if (w->res)
        for (int s = 0; s < w->n_seg; s++)
            ts_tfhe_rlwe_free(w->res[s]);
    ts_free(w->res);
    ts_tfhe_lwe_free(w->lx);
    ts_tfhe_lwe_free(w->ls);
    ts_tfhe_lwe_free(w->lv);
    ts_tfhe_lwe_free(w->lt);
    ts_free(w);
}

ts_status_t ts__nonlinear_lut_he_worker_new(const ts_nonlinear_lut_he_t *he,
                                            ts_tfhe_evaluator_t *tev, ts_convert_worker_t *cw,
                                            ts__nonlinear_lut_he_worker_t **out)
{
    if (!he || !tev || !out)
        return TS_EINVAL;
    *out = NULL;
    ts__nonlinear_lut_he_worker_t *w = ts_calloc(1, sizeof(*w));
    if (!w)
        return TS_ENOMEM;
    w->tev = tev;
    w->cw = cw;
    w->n_seg = he->n_seg;
    ts_status_t st = TS_ENOMEM;
    w->res = ts_calloc((size_t)he->n_seg, sizeof(*w->res));
    if (!w->res)
        goto fail;
    for (int s = 0; s < he->n_seg; s++)
        if ((st = ts_tfhe_rlwe_new(he->tp, &w->res[s])) != TS_OK)
            goto fail;
    if ((st = ts_poly_new(he->ring, 1, 0, false, &w->pa)) != TS_OK ||
        (st = ts_poly_new(he->ring, 1, 0, false, &w->pb)) != TS_OK ||
        (st = ts_tfhe_rlwe_new(he->tp, &w->acc)) != TS_OK ||
        (st = ts_tfhe_rlwe_new(he->tp, &w->acc2)) != TS_OK ||
        (st = ts_tfhe_lwe_new(he->n, he->q, &w->lx)) != TS_OK ||
        (st = ts_tfhe_lwe_new(he->n, he->q, &w->ls)) != TS_OK ||
        (st = ts_tfhe_lwe_new(he->n, he->q, &w->lv)) != TS_OK ||
        (st = ts_tfhe_lwe_new(he->n, he->q, &w->lt)) != TS_OK)
        goto fail;
    *out = w;
    return TS_OK;
fail:
    ts__nonlinear_lut_he_worker_free(w);
    return st;
}

void ts_nonlinear_lut_he_free(ts_nonlinear_lut_he_t *he)
{
    if (!he)
        return;
    ts__nonlinear_lut_he_worker_free(he->w0);
    ts_free(he->tau);
    ts_poly_free(he->a2);
    ts_free(he->b2);
    for (int s = 0; s < he->n_seg; s++) {
        if (he->a3)
            ts_poly_free(he->a3[s]);
        if (he->box)
            ts_poly_free(he->box[s]);
    }
    ts_free(he->a3);
    ts_free(he->box);
    ts_free(he->b3);
    ts_ring_free(he->ring);
    ts_free(he);
}

double ts_nonlinear_lut_he_grid(const ts_nonlinear_lut_he_t *he, double u)
{
    return he->lo + u * he->step;
}
double ts_nonlinear_lut_he_in_scale(const ts_nonlinear_lut_he_t *he)
{
    return he->du;
}
double ts_nonlinear_lut_he_out_scale(const ts_nonlinear_lut_he_t *he)
{
    return he->dy;
}

/* a polynomial from N coefficients mod q, in NTT form */
static ts_status_t poly_from(ts_ring_t *r, const uint64_t *c, ts_poly_t **out)
{
    ts_status_t st = ts_poly_new(r, 1, 0, false, out);
    if (st != TS_OK)
        return st;
    if ((st = ts_poly_upload(*out, c)) != TS_OK)
        return st;
    return ts_poly_ntt(*out);
}

ts_status_t ts_nonlinear_lut_he_new(ts_convert_t *cv, const ts_nonlinear_lut_t *lut, int in_bits,
                                    int frac_bits, double out_max, ts_nonlinear_lut_he_t **out)
{
    if (!cv || !lut || !out || !(out_max > 0) || in_bits < 1 || frac_bits < 0)
        return TS_EINVAL;
    *out = NULL;
    const ts_tfhe_params_t *tp = ts_convert_tfhe_params(cv);
    uint32_t n = ts_tfhe_params_n_br(tp);
    uint64_t q = ts_tfhe_params_q_br(tp);
    int n_br = lut->n_br, k = lut->index_bits, lb = 0;
    while ((1 << lb) < n_br)
        lb++;
    if ((1 << lb) != n_br || k < lb || k > 20)
        return TS_EINVAL;
    if (((uint64_t)n >> (k + 1)) < 8 || n / (uint32_t)lut->n_seg < 8)
        return TS_EINVAL;
    if ((uint32_t)in_bits > ts_tfhe_homcomp_max_bits(tp) ||
        in_bits + frac_bits + 1 >= (int)log2((double)q) - 8)
        return TS_ERANGE;
    ts_status_t st = TS_ENOMEM;
    uint64_t *c = NULL;
    ts_nonlinear_lut_he_t *he = ts_calloc(1, sizeof(*he));
    if (!he)
        return TS_ENOMEM;
    he->cv = cv;
    he->tp = tp;
    he->q = q;
    he->n = n;
    he->n_seg = lut->n_seg;
    he->n_br = n_br;
    he->in_bits = in_bits;
    he->frac_bits = frac_bits;
    he->k = k;
    he->guard = k - lb;
    he->lo = lut->lo;
    he->step = (lut->hi - lut->lo) / ldexp(1.0, in_bits);
    he->du = (double)q / ldexp(1.0, in_bits + 1 + frac_bits);
    he->dy = (double)q / (4.0 * out_max);
    he->dv = (double)q / ldexp(1.0, k + 2);
    {
        ts_ring_params_t rp = {.n = n, .q = &q, .q_count = 1, .p = NULL, .p_count = 0};
        if ((st = ts_ring_new(&rp, &he->ring)) != TS_OK)
            goto fail;
    }
    st = TS_ENOMEM;
    he->tau = ts_calloc((size_t)he->n_seg, sizeof(uint64_t));
    he->b2 = ts_calloc(n, 8);
    he->b3 = ts_calloc((size_t)n * he->n_seg, 8);
    he->a3 = ts_calloc((size_t)he->n_seg, sizeof(*he->a3));
    he->box = ts_calloc((size_t)he->n_seg, sizeof(*he->box));
    c = ts_calloc(n, 8);
    if (!he->tau || !he->b2 || !he->b3 || !he->a3 || !he->box || !c)
        goto fail;
    /* thresholds on the input grid */
    const uint64_t top = 1ull << in_bits;
    for (int j = 1; j < he->n_seg; j++) {
        double b = lut->bounds[j];
        double u0 = ceil((b - he->lo) / he->step);
        int64_t u = (int64_t)u0 - 2;
        if (u < 0)
            u = 0;
        while ((uint64_t)u < top && !(ts_nonlinear_lut_he_grid(he, (double)u) >= b))
            u++;
        he->tau[j - 1] = (uint64_t)u;
        /* a segment holding no grid point can never be selected (its
         * segment decision would need a finer grid) */
        if (he->tau[j - 1] <= (j >= 2 ? he->tau[j - 2] : 0) || he->tau[j - 1] >= top)
            goto range;
    }
    /* step 2: box s of n_seg holds V_s = t_s 2^k + 2^(k-1) at scale dv */
    const long double two_k = ldexpl(1.0L, k);
    for (uint32_t i = 0; i < n; i++) {
        int s = (int)(((uint64_t)i * (uint64_t)he->n_seg) / n);
        long double w = (long double)lut->bounds[s + 1] - lut->bounds[s];
        c[i] = enc_real((long double)he->step * two_k * he->dv / (w * he->du), q);
        he->b2[i] =
            enc_real((((long double)he->lo - lut->bounds[s]) / w * two_k + two_k / 2) * he->dv, q);
    }
    if ((st = poly_from(he->ring, c, &he->a2)) != TS_OK)
        goto fail;
    /* step 3: per segment, box j of 2^(k+1) holds slope[s, I] x + offset[s, I] */
    const uint64_t p3 = 1ull << (k + 1);
    for (int s = 0; s < he->n_seg; s++) {
        for (uint32_t i = 0; i < n; i++) {
            int64_t j = (int64_t)(((uint64_t)i * p3) / n);
            int64_t t = j - (1ll << (k - 1));
            int64_t iv = t < 0 ? -1 : t >> he->guard; /* floor for t >= 0 */
            if (iv < 0)
                iv = 0;
            if (iv > n_br - 1)
                iv = n_br - 1;
            size_t e = (size_t)s * n_br + (size_t)iv;
            long double a = lut->slope[e], b = lut->offset[e];
            c[i] = enc_real(a * he->step * he->dy / he->du, q);
            he->b3[(size_t)s * n + i] = enc_real((a * he->lo + b) * he->dy, q);
        }
        if ((st = poly_from(he->ring, c, &he->a3[s])) != TS_OK)
            goto fail;
        for (uint32_t i = 0; i < n; i++)
            c[i] = ((uint64_t)i * (uint64_t)he->n_seg) / n == (uint64_t)s ? 1 : 0;
        if ((st = poly_from(he->ring, c, &he->box[s])) != TS_OK)
            goto fail;
    }
    if ((st = ts__nonlinear_lut_he_worker_new(he, ts_convert_tfhe_evaluator(cv), NULL, &he->w0)) !=
        TS_OK)
        goto fail;
    ts_free(c);
    *out = he;
    return TS_OK;
range:
    st = TS_ERANGE;
fail:
    ts_free(c);
    ts_nonlinear_lut_he_free(he);
    return st;
}

ts_status_t ts_nonlinear_lut_he_encrypt(const ts_nonlinear_lut_he_t *he,
                                        const ts_tfhe_rlwe_key_t *key, double x, ts_prng_t *prng,
                                        ts_tfhe_rlwe_t *out)
{
    if (!he || !key || !prng || !out || !isfinite(x))
        return TS_EINVAL;
    uint64_t *mu = ts_calloc(he->n, 8);
    if (!mu)
        return TS_ENOMEM;
    mu[0] = enc_real((long double)(x - he->lo) / he->step * he->du, he->q);
    ts_status_t st = ts_tfhe_rlwe_encrypt(key, out, mu, prng);
    ts_free(mu);
    return st;
}

double ts_nonlinear_lut_he_decode(const ts_nonlinear_lut_he_t *he, uint64_t phase)
{
    return (double)ts_tfhe_centered(phase, he->q) / he->dy;
}

/* out = P ct + B (B: coefficients or NULL) */
static ts_status_t mul_plain(const ts_nonlinear_lut_he_t *he, ts__nonlinear_lut_he_worker_t *w,
                             ts_tfhe_rlwe_t *out, const ts_tfhe_rlwe_t *ct, const ts_poly_t *p,
                             const uint64_t *b)
{
    ts_status_t st;
    for (int i = 0; i < 2; i++) {
        ts_poly_t *x = i ? w->pb : w->pa;
        if ((st = ts_poly_reshape(x, 1, 0, false)) != TS_OK ||
            (st = ts_poly_upload(x, ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)ct, i))) != TS_OK ||
            (st = ts_poly_ntt(x)) != TS_OK || (st = ts_poly_mul(x, x, p)) != TS_OK ||
            (st = ts_poly_intt(x)) != TS_OK)
            return st;
    }
    if ((st = ts_poly_download(w->pa, ts_tfhe_rlwe_poly(out, 0))) != TS_OK ||
        (st = ts_poly_download(w->pb, ts_tfhe_rlwe_poly(out, 1))) != TS_OK)
        return st;
    if (b) {
        uint64_t *ob = ts_tfhe_rlwe_poly(out, 1);
        for (uint32_t i = 0; i < he->n; i++)
            ob[i] = ts_mod_add(ob[i], b[i], he->q);
    }
    return TS_OK;
}

static void rlwe_acc(const ts_nonlinear_lut_he_t *he, ts_tfhe_rlwe_t *acc, const ts_tfhe_rlwe_t *x)
{
    for (int i = 0; i < 2; i++) {
        uint64_t *p = ts_tfhe_rlwe_poly(acc, i);
        const uint64_t *r = ts_tfhe_rlwe_poly((ts_tfhe_rlwe_t *)x, i);
        for (uint32_t j = 0; j < he->n; j++)
            p[j] = ts_mod_add(p[j], r[j], he->q);
    }
}

static ts_status_t trace(const ts_nonlinear_lut_he_t *he, ts__nonlinear_lut_he_worker_t *w,
                         ts_tfhe_rlwe_t *ct)
{
    return w->cw ? ts_convert_worker_trace(w->cw, ct) : ts_convert_trace(he->cv, ct);
}

ts_status_t ts__nonlinear_lut_he_eval_on(const ts_nonlinear_lut_he_t *he,
                                         ts__nonlinear_lut_he_worker_t *w, const ts_tfhe_rlwe_t *x,
                                         ts_tfhe_rlwe_t *y, ts_tfhe_lwe_t *seg, ts_tfhe_lwe_t *val)
{
    if (!he || !w || !x || !y)
        return TS_EINVAL;
    if (w->n_seg != he->n_seg)
        return TS_EMISMATCH;
    ts_status_t st;
    /* step 1: S = sum_j [u >= tau_j] */
    if ((st = ts_tfhe_rlwe_sample_extract(x, 0, w->lx)) != TS_OK)
        return st;
    ts_tfhe_lwe_mul_const(w->lx, (int64_t)1 << he->frac_bits);
    const uint64_t dseg = ts_tfhe_delta(he->q, (uint64_t)he->n_seg);
    ts_tfhe_lwe_trivial(w->ls, 0);
    for (int j = 0; j + 1 < he->n_seg; j++) {
        if ((st = ts_tfhe_homcomp(w->tev, w->lt, w->lx, (uint32_t)he->in_bits, he->tau[j], dseg)) !=
            TS_OK)
            return st;
        if ((st = ts_tfhe_lwe_add(w->ls, w->ls, w->lt)) != TS_OK)
            return st;
    }
    /* step 2: construct V_s in box s, select by S */
    if ((st = mul_plain(he, w, w->acc, x, he->a2, he->b2)) != TS_OK)
        return st;
    if ((st = ts_tfhe_blind_rotate_index(w->tev, w->acc, w->ls, (uint64_t)he->n_seg)) != TS_OK)
        return st;
    if ((st = ts_tfhe_rlwe_sample_extract(w->acc, 0, w->lv)) != TS_OK)
        return st;
    /* step 3, round 1: per segment select by V (rounded by the ModSwitch) */
    const uint64_t p3 = 1ull << (he->k + 1);
    ts_tfhe_rlwe_trivial(w->acc2, NULL);
    for (int s = 0; s < he->n_seg; s++) {
        if ((st = mul_plain(he, w, w->res[s], x, he->a3[s], he->b3 + (size_t)s * he->n)) != TS_OK)
            return st;
        if ((st = ts_tfhe_blind_rotate_index(w->tev, w->res[s], w->lv, p3)) != TS_OK)
            return st;
        if ((st = trace(he, w, w->res[s])) != TS_OK)
            return st;
        /* round 2 accumulator: the value of segment s in box s */
        if ((st = mul_plain(he, w, w->acc, w->res[s], he->box[s], NULL)) != TS_OK)
            return st;
        rlwe_acc(he, w->acc2, w->acc);
    }
    /* round 2: select by S, isolate */
    if ((st = ts_tfhe_blind_rotate_index(w->tev, w->acc2, w->ls, (uint64_t)he->n_seg)) != TS_OK)
        return st;
    if ((st = trace(he, w, w->acc2)) != TS_OK)
        return st;
    if ((st = ts_tfhe_rlwe_copy(y, w->acc2)) != TS_OK)
        return st;
    if (seg && (st = ts_tfhe_lwe_copy(seg, w->ls)) != TS_OK)
        return st;
    if (val && (st = ts_tfhe_lwe_copy(val, w->lv)) != TS_OK)
        return st;
    return TS_OK;
}

ts_status_t ts_nonlinear_lut_he_eval(ts_nonlinear_lut_he_t *he, const ts_tfhe_rlwe_t *x,
                                     ts_tfhe_rlwe_t *y, ts_tfhe_lwe_t *seg, ts_tfhe_lwe_t *val)
{
    if (!he || !x || !y)
        return TS_EINVAL;
    return ts__nonlinear_lut_he_eval_on(he, he->w0, x, y, seg, val);
}

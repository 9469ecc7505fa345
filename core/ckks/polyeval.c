/*
 * Polynomial evaluation on ciphertexts: power basis (Horner, balanced tree,
 * Paterson-Stockmeyer) and Chebyshev basis (Paterson-Stockmeyer over T_i,
 * i.e. baby-step giant-step), with exact scale management.
 *
 * Scale management (the approach of Lattigo's polynomial evaluator,
 * Bossuat et al., Eurocrypt 2021, section 5): every node of the evaluation
 * tree is asked for a result at a given (scale, level). A leaf
 * sum_{i<k} c_i B_i is computed at level tl + 1 by scalar products whose
 * constant scales are chosen as target * q_{tl+1} / scale(B_i), so that all
 * terms share one scale and the final rescale lands exactly on the target.
 * A split p = q * G + r asks q for target * q_{tl+1} / scale(G) at level
 * tl + 1 and r for (target, tl). Additions therefore never see two scales.
 *
 * Splitting (Paterson-Stockmeyer, "On the number of nonscalar
 * multiplications necessary to evaluate polynomials", 1973): baby basis
 * B_1..B_k, giants G_m = B_{k 2^m}; p of degree d >= k is split at the
 * largest K = k 2^m <= d. Power basis: p = q x^K + r with q_j = c_{K+j}.
 * Chebyshev basis (d < 2K): from T_K T_j = (T_{K+j} + T_{K-j}) / 2,
 * q_0 = c_K, q_j = 2 c_{K+j} and r_{K-j} = c_{K-j} - c_{K+j} (j >= 1).
 */
#include <math.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

typedef struct {
    ts_ckks_evaluator_t *ev;
    bool cheb;
    size_t k; /* baby steps: B[1..nb] computed, nb = min(k, degree) */
    size_t nb;
    ts_ckks_ciphertext_t **B; /* B[0] unused */
    size_t ng;                /* giants G[0..ng) */
    ts_ckks_ciphertext_t **G;
} pe_t;

static int lvl(const ts_ckks_ciphertext_t *ct)
{
    return ts_ckks_ciphertext_level(ct);
}

/* Scratch and basis ciphertexts: room for the top level, shaped (and
 * zeroed) at level 0 only, since every operation writing them reshapes them
 * (zeroing the top level's limbs was a pass over ~30 MB per ciphertext at
 * N = 2^16, two per node of the tree). */
static ts_status_t new_ct(pe_t *s, ts_ckks_ciphertext_t **out)
{
    return ts_ckks_ciphertext_new(s->ev->params, 0, out);
}

/* out = x * y without rescaling (relinearized), at the lower of their levels
 * (the higher one read in place: no drop copy). out may alias x or y. */
static ts_status_t prod_raw(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *x,
                            const ts_ckks_ciphertext_t *y, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = ts__ckks_mul_lo(ev, x, y, out);
    return st == TS_OK ? ts_ckks_relinearize(ev, out, out) : st;
}

/*
 * The basis element of degree a + b from those of degree a >= b (d = a - b):
 * power basis x^{a+b} = x^a x^b; Chebyshev T_{a+b} = 2 T_a T_b - T_d
 * (T_0 = 1, so T_{2a} = 2 T_a^2 - 1).
 */
static ts_status_t combine(pe_t *s, const ts_ckks_ciphertext_t *xa, const ts_ckks_ciphertext_t *xb,
                           const ts_ckks_ciphertext_t *xd, ts_ckks_ciphertext_t *t,
                           ts_ckks_ciphertext_t *out)
{
    ts_ckks_evaluator_t *ev = s->ev;
    ts_status_t st = prod_raw(ev, xa, xb, out);
    if (st != TS_OK || !s->cheb)
        goto rescale;
    st = ts_ckks_mul_int(ev, out, 2, out);
    if (st != TS_OK)
        return st;
    if (!xd) {
        st = ts_ckks_add_const(ev, out, -1.0, out);
    } else {
        /* T_d at out's level and scale: one scalar product by round(scale ratio) */
        st = ts__ckks_mul_const_at(ev, xd, 1.0, out->scale / xd->scale, lvl(out), t);
        if (st == TS_OK) {
            t->scale = out->scale; /* the rounding of the ratio is below 2^-36 relative */
            st = ts_ckks_sub(ev, out, t, out);
        }
    }
rescale:
    if (st != TS_OK)
        return st;
    /* at a prime well above the scale (a 45-bit prime under Delta = 2^40)
     * the rescale would leave scale^2 / q, and the squarings of the giants
     * compound the shortfall (2^35, 2^30, 2^20, 2^0: TS_ESCALE three levels
     * down): multiply by the integer round(Delta q / scale) first, an exact
     * scale change at no level, so the element lands near Delta */
    double r = floor(ev->params->scale * (double)ev->params->q[lvl(out)] / out->scale + 0.5);
    if (r >= 2.0 && (st = ts__ckks_mul_const_at(ev, out, 1.0, r, lvl(out), out)) != TS_OK)
        return st;
    return ts_ckks_rescale(ev, out, out);
}

static void pe_clear(pe_t *s)
{
    if (s->B)
        for (size_t i = 0; i <= s->nb; i++)
            ts_ckks_ciphertext_free(s->B[i]);
    if (s->G)
        for (size_t i = 0; i < s->ng; i++)
            ts_ckks_ciphertext_free(s->G[i]);
    ts_free(s->B);
    ts_free(s->G);
}

/* Baby basis B[1..nb] and giants G[0..ng) from x. */
static ts_status_t pe_build(pe_t *s, const ts_ckks_ciphertext_t *x, size_t degree)
{
    s->nb = s->k < degree ? s->k : degree;
    size_t ng = 0;
    if (degree >= s->k)
        for (size_t K = s->k; K <= degree; K <<= 1)
            ng++;
    s->ng = ng;
    s->B = ts_calloc(s->nb + 1, sizeof(*s->B));
    s->G = ts_calloc(ng ? ng : 1, sizeof(*s->G));
    if (!s->B || !s->G)
        return TS_ENOMEM;
    ts_ckks_ciphertext_t *t = NULL;
    ts_status_t st = new_ct(s, &t);
    for (size_t i = 1; i <= s->nb && st == TS_OK; i++) {
        st = new_ct(s, &s->B[i]);
        if (st != TS_OK)
            break;
        if (i == 1) {
            st = ts_ckks_ciphertext_copy(s->B[1], x);
            continue;
        }
        size_t a = 1;
        while (a * 2 < i)
            a *= 2; /* largest power of two below i (i = a + b, 1 <= b <= a) */
        size_t b = i - a;
        st = combine(s, s->B[a], s->B[b], a == b ? NULL : s->B[a - b], t, s->B[i]);
    }
    for (size_t m = 0; m < ng && st == TS_OK; m++) {
        st = new_ct(s, &s->G[m]);
        if (st != TS_OK)
            break;
        if (m == 0 && s->k <= s->nb) {
            st = ts_ckks_ciphertext_copy(s->G[0], s->B[s->k]);
        } else if (m == 0) {
            st = TS_EINTERNAL;
        } else {
            st = combine(s, s->G[m - 1], s->G[m - 1], NULL, t, s->G[m]);
        }
    }
    ts_ckks_ciphertext_free(t);
    return st;
}

static bool all_zero(const double *c, size_t from, size_t to)
{
    for (size_t i = from; i <= to; i++)
        if (c[i] != 0.0)
            return false;
    return true;
}

/* Coefficients of q and r when p (degree d, d >= K) is split at K. */
static void split(const pe_t *s, const double *c, size_t d, size_t K, double *q, double *r)
{
    for (size_t i = 0; i < K; i++)
        r[i] = c[i];
    for (size_t j = 0; j <= d - K; j++)
        q[j] = c[K + j];
    if (s->cheb) {
        for (size_t j = 1; j <= d - K; j++) {
            q[j] = 2.0 * c[K + j];
            r[K - j] -= c[K + j];
        }
    }
}

static size_t giant_index(const pe_t *s, size_t d, size_t *K)
{
    size_t m = 0, k = s->k;
    while (k * 2 <= d) {
        k *= 2;
        m++;
    }
    *K = k;
    return m;
}

/* The highest level at which p (degree d) can be produced; negative if none. */
static int plan(const pe_t *s, const double *c, size_t d, double *work)
{
    if (d < s->k) {
        int best = 1 << 30;
        bool any = false;
        for (size_t i = 1; i <= d; i++)
            if (c[i] != 0.0) {
                int l = lvl(s->B[i]) - 1;
                best = l < best ? l : best;
                any = true;
            }
        if (!any)
            best = lvl(s->B[1]) - 1;
        return best;
    }
    size_t K;
    size_t m = giant_index(s, d, &K);
    double *q = work, *r = work + (d - K + 1), *next = r + K;
    split(s, c, d, K, q, r);
    int best = lvl(s->G[m]) - 1;
    if (d - K >= 1 && !all_zero(q, 1, d - K)) {
        int lq = plan(s, q, d - K, next) - 1;
        best = lq < best ? lq : best;
    }
    size_t dr = K - 1;
    while (dr > 0 && r[dr] == 0.0)
        dr--;
    if (dr >= 1) {
        int lr = plan(s, r, dr, next);
        best = lr < best ? lr : best;
    }
    return best;
}

/*
 * out = p(x) at exactly (scale ts, level tl).
 *
 * The split chain p = q_0 G_0 + (q_1 G_1 + (... + r)): the remainder of each
 * split is asked for the same (ts, tl), so every product of the chain lands
 * at level tl + 1 and scale ts q_{tl+1}. They are summed unrelinearized
 * (degree 2) and relinearized once, and the final leaf r = sum c_i B_i (at
 * the same level and scale, by scalar products whose constant scales are
 * chosen so) added before the one rescale: one key switch per chain instead
 * of one per product (lazy relinearization). A leaf alone (d < k) is the
 * chain without products.
 */
static ts_status_t eval_node(pe_t *s, const double *c, size_t d, double ts, int tl, double *work,
                             ts_ckks_ciphertext_t *out)
{
    ts_ckks_evaluator_t *ev = s->ev;
    const ts_ckks_params_t *p = ev->params;
    ts_ckks_ciphertext_t *t = NULL; /* the splits' scratch (a leaf alone needs none) */
    ts_status_t st = d >= s->k ? new_ct(s, &t) : TS_OK;
    double ql = (double)p->q[tl + 1];
    bool have = false; /* out holds a term */
    const double *cc = c;
    size_t dc = d;
    double *wk = work;
    while (dc >= s->k && st == TS_OK) {
        size_t K;
        size_t m = giant_index(s, dc, &K);
        double *q = wk, *r = wk + (dc - K + 1), *next = r + K;
        split(s, cc, dc, K, q, r);
        /* the giant read at tl + 1 in place (no drop copy) */
        const ts_ckks_ciphertext_t *g = s->G[m];
        if (lvl(g) < tl + 1) {
            st = TS_ELEVEL;
            break;
        }
        double sq = ts * ql / g->scale;
        /* the first product into out, each later one into t (the product
         * may alias its operand t) and added */
        ts_ckks_ciphertext_t *dst = have ? t : out;
        if (dc - K == 0 || all_zero(q, 1, dc - K)) {
            /* q is the constant q_0: one scalar product of the giant */
            st = ts__ckks_mul_const_at(ev, g, q[0], sq, tl + 1, dst);
        } else {
            st = eval_node(s, q, dc - K, sq, tl + 1, next, t);
            if (st == TS_OK)
                st = ts__ckks_mul_lo(ev, t, g, dst);
        }
        if (st == TS_OK)
            dst->scale = ts * ql;
        if (st == TS_OK && have)
            st = ts_ckks_add(ev, out, t, out);
        have = true;
        /* on with the remainder r (degree dr, trailing zeros dropped) */
        size_t dr = K - 1;
        while (dr > 0 && r[dr] == 0.0)
            dr--;
        cc = r;
        dc = dr;
        wk = next;
    }
    if (st == TS_OK && have && out->degree > 1)
        st = ts_ckks_relinearize(ev, out, out);
    /* the leaf sum_{i>=1} c_i B_i at scale ts q_{tl+1}: the first term into
     * out (an all-zero leaf alone still writes c_1 B_1), the others added in
     * one fused pass each */
    for (size_t i = 1; i <= dc && st == TS_OK; i++) {
        if (cc[i] == 0.0 && (have || !(i == 1 && all_zero(cc, 1, dc))))
            continue;
        double cs = ts * ql / s->B[i]->scale;
        st = have ? ts__ckks_mul_const_add(ev, s->B[i], cc[i], cs, out)
                  : ts__ckks_mul_const_at(ev, s->B[i], cc[i], cs, tl + 1, out);
        out->scale = ts * ql;
        have = true;
    }
    if (st == TS_OK && cc[0] != 0.0)
        st = ts_ckks_add_const(ev, out, cc[0], out);
    if (st == TS_OK)
        st = ts_ckks_rescale(ev, out, out);
    if (st == TS_OK)
        out->scale = ts;
    ts_ckks_ciphertext_free(t);
    return st;
}

static size_t auto_k(size_t degree)
{
    size_t k = 2;
    while (k * k < 2 * (degree + 1))
        k *= 2;
    return k;
}

/* Depth and nonscalar products of eval_ps for degree d, baby steps k, all
 * coefficients nonzero (the structure of pe_build and eval_node). */
static int clog2(size_t x)
{
    int l = 0;
    while (((size_t)1 << l) < x)
        l++;
    return l;
}

static int ps_depth(size_t d, size_t k)
{
    if (d < k)
        return clog2(d) + 1;
    size_t K = k;
    int m = 0;
    while (K * 2 <= d) {
        K *= 2;
        m++;
    }
    int best = clog2(k) + m + 1;
    if (d - K >= 1) {
        int q = ps_depth(d - K, k) + 1;
        best = q > best ? q : best;
    }
    int r = ps_depth(K - 1, k);
    return r > best ? r : best;
}

static size_t ps_tree_products(size_t d, size_t k)
{
    if (d < k)
        return 0;
    size_t K = k;
    while (K * 2 <= d)
        K *= 2;
    return (d - K >= 1 ? ps_tree_products(d - K, k) + 1 : 0) + ps_tree_products(K - 1, k);
}

static size_t ps_products(size_t d, size_t k)
{
    size_t n = (k < d ? k : d) - 1; /* baby steps */
    if (d >= k)
        for (size_t K = k * 2; K <= d; K *= 2)
            n++; /* giants */
    return n + ps_tree_products(d, k);
}

size_t ts_ckks_chebyshev_ps_k(size_t degree)
{
    if (degree < 2)
        return 2;
    /* the least depth over the powers of two (k = 2 always reaches ceil(log2(d + 1)): its
     * leaves c_0 + c_1 T_1 cost one level, the giants T_2, T_4, ... one each), then the
     * fewest products: e.g. degree 15 in depth 4 with k = 2 (10 products) where the classic
     * k = 4 takes depth 5 (7 products); degree 51 in 15 products with k = 8 instead of 19
     * with k = 16, both at depth 6 */
    size_t best = auto_k(degree);
    for (size_t k = 2; k <= 64; k *= 2) {
        int d = ps_depth(degree, k), bd = ps_depth(degree, best);
        if (d < bd || (d == bd && ps_products(degree, k) < ps_products(degree, best)))
            best = k;
    }
    return best;
}

int ts_ckks_chebyshev_depth(size_t degree)
{
    return ps_depth(degree, ts_ckks_chebyshev_ps_k(degree));
}

size_t ts_ckks_chebyshev_products(size_t degree)
{
    return degree < 2 ? 0 : ps_products(degree, ts_ckks_chebyshev_ps_k(degree));
}

static ts_status_t eval_ps(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *x,
                           const double *coeffs, size_t degree, bool cheb, size_t k, double target,
                           ts_ckks_ciphertext_t *out)
{
    pe_t s = {.ev = ev, .cheb = cheb, .k = k};
    /* work space for the split coefficient vectors: a geometric series < 4 (d + 1) */
    double *work = ts_malloc(sizeof(double) * (4 * (degree + 1) + 8 * k + 16));
    double *c = ts_malloc(sizeof(double) * (degree + 1));
    ts_status_t st = (work && c) ? TS_OK : TS_ENOMEM;
    if (st == TS_OK) {
        memcpy(c, coeffs, sizeof(double) * (degree + 1));
        st = pe_build(&s, x, degree);
    }
    if (st == TS_OK) {
        int tl = plan(&s, c, degree, work);
        if (tl < 0)
            st = TS_ELEVEL;
        else
            st = eval_node(&s, c, degree, target, tl, work, out);
    }
    pe_clear(&s);
    ts_free(work);
    ts_free(c);
    return st;
}

/*
 * Horner: acc = c_d x + c_{d-1}, then acc = acc x + c_i. The first constant's
 * scale is chosen so that the result ends exactly on the target scale.
 */
static ts_status_t eval_horner(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *x,
                               const double *c, size_t d, double target, ts_ckks_ciphertext_t *out)
{
    const ts_ckks_params_t *p = ev->params;
    int l0 = lvl(x);
    if ((size_t)l0 < d)
        return TS_ELEVEL;
    /* final = sx * cs / q_{l0} * prod_{j=1}^{d-1} sx / q_{l0 - j} */
    double f = x->scale / (double)p->q[l0];
    for (size_t j = 1; j < d; j++)
        f *= x->scale / (double)p->q[l0 - (int)j];
    double cs = target / f;
    ts_ckks_ciphertext_t *t = NULL, *xc = NULL;
    ts_status_t st = ts_ckks_ciphertext_new(ev->params, 0, &t);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(ev->params, 0, &xc);
    if (st == TS_OK) /* out may alias x */
        st = ts_ckks_ciphertext_copy(xc, x);
    x = xc;
    if (st == TS_OK)
        st = ts_ckks_mul_const(ev, x, c[d], cs, out);
    if (st == TS_OK)
        st = ts_ckks_rescale(ev, out, out);
    if (st == TS_OK)
        st = ts_ckks_add_const(ev, out, c[d - 1], out);
    for (size_t i = d - 1; i-- > 0 && st == TS_OK;) {
        st = ts_ckks_drop_to_level(ev, x, lvl(out), t);
        if (st == TS_OK)
            st = ts_ckks_mul_relin(ev, out, t, out);
        if (st == TS_OK)
            st = ts_ckks_rescale(ev, out, out);
        if (st == TS_OK)
            st = ts_ckks_add_const(ev, out, c[i], out);
    }
    if (st == TS_OK)
        out->scale = target;
    ts_ckks_ciphertext_free(t);
    ts_ckks_ciphertext_free(xc);
    return st;
}

static ts_status_t check_args(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const double *coeffs, size_t degree, ts_ckks_ciphertext_t *out)
{
    if (!ev || !a || !coeffs || !out || degree == 0 || degree > (1u << 16))
        return TS_EINVAL;
    if (!ts_ckks_params_equal(ev->params, a->params) ||
        !ts_ckks_params_equal(ev->params, out->params))
        return TS_EMISMATCH;
    if (a->degree != 1)
        return TS_EINVAL;
    for (size_t i = 0; i <= degree; i++)
        if (!isfinite(coeffs[i]))
            return TS_EINVAL;
    if (!ts_ckks_evalkeys_has_relin(ev->keys) && degree > 1)
        return TS_ENOKEY;
    return TS_OK;
}

ts_status_t ts_ckks_eval_poly(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const double *coeffs, size_t degree, ts_ckks_poly_method_t method,
                              size_t ps_k, double target_scale, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_args(ev, a, coeffs, degree, out);
    if (st != TS_OK)
        return st;
    double target = target_scale > 0 ? target_scale : ev->params->scale;
    if (!isfinite(target) || target < 1.0)
        return TS_ESCALE;
    switch (method) {
    case TS_CKKS_POLY_HORNER:
        return eval_horner(ev, a, coeffs, degree, target, out);
    case TS_CKKS_POLY_BALANCED: {
        size_t k = 1;
        while (k <= degree)
            k *= 2;
        return eval_ps(ev, a, coeffs, degree, false, k, target, out);
    }
    case TS_CKKS_POLY_PS:
        if (ps_k < 2)
            return TS_EINVAL;
        return eval_ps(ev, a, coeffs, degree, false, ps_k, target, out);
    case TS_CKKS_POLY_AUTO:
        return eval_ps(ev, a, coeffs, degree, false, auto_k(degree), target, out);
    }
    return TS_EINVAL;
}

ts_status_t ts_ckks_eval_chebyshev(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                   const double *coeffs, size_t degree, double lo, double hi,
                                   double target_scale, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_args(ev, a, coeffs, degree, out);
    if (st != TS_OK)
        return st;
    if (!isfinite(lo) || !isfinite(hi) || !(hi > lo))
        return TS_EINVAL;
    double target = target_scale > 0 ? target_scale : ev->params->scale;
    if (!isfinite(target) || target < 1.0)
        return TS_ESCALE;
    ts_ckks_ciphertext_t *y = NULL;
    st = ts_ckks_ciphertext_new(ev->params, 0, &y);
    if (st != TS_OK)
        return st;
    if (lo == -1.0 && hi == 1.0) {
        st = ts_ckks_ciphertext_copy(y, a);
    } else {
        /* y = alpha a + beta, at a's scale after the rescale */
        double alpha = 2.0 / (hi - lo), beta = -(hi + lo) / (hi - lo);
        st = ts_ckks_mul_const(ev, a, alpha, 0, y);
        if (st == TS_OK)
            st = ts_ckks_rescale(ev, y, y);
        if (st == TS_OK)
            st = ts_ckks_add_const(ev, y, beta, y);
    }
    if (st == TS_OK)
        st = eval_ps(ev, y, coeffs, degree, true, ts_ckks_chebyshev_ps_k(degree), target, out);
    ts_ckks_ciphertext_free(y);
    return st;
}

ts_status_t ts_ckks_chebyshev_fit(double (*f)(double x, void *ctx), void *ctx, double lo, double hi,
                                  size_t degree, double *coeffs)
{
    if (!f || !coeffs || !(hi > lo) || degree > (1u << 16))
        return TS_EINVAL;
    size_t n = degree + 1;
    double *fx = ts_malloc(sizeof(double) * n);
    if (!fx)
        return TS_ENOMEM;
    const double pi = 3.14159265358979323846264338327950288;
    for (size_t j = 0; j < n; j++) {
        double t = cos(pi * ((double)j + 0.5) / (double)n);
        fx[j] = f(0.5 * (hi - lo) * t + 0.5 * (hi + lo), ctx);
    }
    for (size_t i = 0; i < n; i++) {
        double acc = 0;
        for (size_t j = 0; j < n; j++)
            acc += fx[j] * cos(pi * (double)i * ((double)j + 0.5) / (double)n);
        coeffs[i] = (i == 0 ? 1.0 : 2.0) * acc / (double)n;
    }
    ts_free(fx);
    return TS_OK;
}

/*
 * The pure-CKKS path of the primitives (Chebyshev, Goldschmidt, Newton, with
 * bootstrapping when levels run out) and the all-TFHE single-LUT baseline.
 */
#include <math.h>
#include <string.h>

#include "core/nonlinear/nonlinear.h"
#include "core/nonlinear/nonlinear_int.h"

ts_status_t ts__nonlinear_drop_to_scale(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *c)
{
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(c);
    double ls = ts_ckks_params_scale_log2(p);
    int lv = ts_ckks_ciphertext_level(c), to = lv;
    while (to > 1 && fabs(log2((double)ts_ckks_params_q(p, (size_t)to)) - ls) > 1.0)
        to--;
    /* no prime near the scale below: stay */
    if (fabs(log2((double)ts_ckks_params_q(p, (size_t)to)) - ls) > 1.0)
        return TS_OK;
    return to < lv ? ts_ckks_drop_to_level(ev, c, to, c) : TS_OK;
}

ts_status_t ts__nonlinear_bootstrap(ts_ckks_evaluator_t *ev, const ts_boot_t *bt,
                                    ts_ckks_ciphertext_t *c)
{
    ts_status_t st = ts_boot_bootstrap(bt, ev, c, c);
    return st == TS_OK ? ts__nonlinear_drop_to_scale(ev, c) : st;
}

static ts_status_t boot_drop(ts_ckks_evaluator_t *ev, const ts_boot_t *bt, ts_ckks_ciphertext_t *c)
{
    return ts__nonlinear_bootstrap(ev, bt, c);
}

/* bootstrap c when fewer than `need` levels are left (no-op without bt) */
static ts_status_t ensure(ts_ckks_evaluator_t *ev, const ts_boot_t *bt, ts_ckks_ciphertext_t *c,
                          int need)
{
    if (ts_ckks_ciphertext_level(c) >= need)
        return TS_OK;
    if (!bt)
        return TS_ELEVEL;
    return boot_drop(ev, bt, c);
}

/*
 * out = a * b, relinearized and rescaled; operands brought to the same level.
 * The product's scale is s_a s_b / q_l: when the primes are not exactly the
 * scale its log2 drifts and doubles at every squaring, so once it is more than
 * half a bit from the parameters' scale (and a level is left) it is put back
 * by a product with 1 at scale Delta q_l / s and a rescale.
 */
ts_status_t ts__nonlinear_mulr(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *a,
                               ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    ts_status_t st;
    int la = ts_ckks_ciphertext_level(a), lb = ts_ckks_ciphertext_level(b);
    if (la > lb && (st = ts_ckks_drop_to_level(ev, a, lb, a)) != TS_OK)
        return st;
    if (lb > la && (st = ts_ckks_drop_to_level(ev, b, la, b)) != TS_OK)
        return st;
    if ((st = ts_ckks_mul_relin(ev, a, b, out)) != TS_OK ||
        (st = ts_ckks_rescale(ev, out, out)) != TS_OK)
        return st;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(out);
    double want = ts_ckks_params_scale(p), s = ts_ckks_ciphertext_scale(out);
    int lv = ts_ckks_ciphertext_level(out);
    if (fabs(log2(s / want)) > 0.5 && lv >= 2) {
        double cs = round(want * (double)ts_ckks_params_q(p, (size_t)lv) / s);
        if ((st = ts_ckks_mul_const(ev, out, 1.0, cs, out)) != TS_OK ||
            (st = ts_ckks_rescale(ev, out, out)) != TS_OK)
            return st;
        st = ts_ckks_ciphertext_set_meta(out, ts_ckks_ciphertext_level(out), 1, want,
                                         ts_ckks_ciphertext_slots(out));
    }
    return st;
}

static ts_status_t mulr(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *b,
                        ts_ckks_ciphertext_t *out)
{
    return ts__nonlinear_mulr(ev, a, b, out);
}

static ts_status_t mulc(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *a, double c,
                        ts_ckks_ciphertext_t *out)
{
    ts_status_t st = ts_ckks_mul_const(ev, a, c, 0, out);
    if (st != TS_OK)
        return st;
    return ts_ckks_rescale(ev, out, out);
}

/*
 * 1/sqrt(x) by y <- y (a_k - b_k x y^2) from the approximation's guess, on
 * x' = x / hi and y' = y sqrt(lo) (see nonlinear.h): the step is
 * y' <- a_k y' - (b_k hi / lo) x' y'^3, two levels when x' has a level more
 * than y' (x' is only read; each step scales a copy), three otherwise. The
 * last step folds the 1 / sqrt(lo) back into its constants. x is consumed
 * (left as x'); the result goes to y; t and u are scratch.
 */
static ts_status_t rsqrt_ckks(ts_ckks_evaluator_t *ev, const ts_boot_t *bt,
                              const ts_nonlinear_approx_t *a, ts_ckks_ciphertext_t *x,
                              ts_ckks_ciphertext_t *y, ts_ckks_ciphertext_t *t,
                              ts_ckks_ciphertext_t *u)
{
    const ts_nonlinear_spec_t *s = ts_nonlinear_approx_spec(a);
    const ts_nonlinear_cheb_t *c = ts_nonlinear_approx_cheb(a);
    if (!c)
        return TS_EINVAL;
    const int steps = s->steps;
    const double sl = sqrt(s->lo), r = s->hi / s->lo;
    const double ys = steps > 0 ? sl : 1.0; /* the guess is computed as ys p(x) */
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(x);
    ts_ckks_ciphertext_t *v = NULL;
    double *cf = NULL;
    ts_status_t st;
    if ((st = ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &v)) != TS_OK)
        return st;
    /* x' = x / hi while x still has a level (a bootstrap of x at its own
     * magnitude would leave EvalMod's range when hi is large) */
    if ((st = ensure(ev, bt, x, 1)) != TS_OK || (st = mulc(ev, x, 1.0 / s->hi, x)) != TS_OK)
        goto done;
    if (c->degree > 0) {
        int depth = 2;
        while ((1 << (depth - 1)) <= c->degree)
            depth++;
        cf = ts_malloc(((size_t)c->degree + 1) * sizeof(double));
        if (!cf) {
            st = TS_ENOMEM;
            goto done;
        }
        for (int j = 0; j <= c->degree; j++)
            cf[j] = ys * c->coeffs[j];
        if ((st = ensure(ev, bt, x, depth + 1)) != TS_OK ||
            (st = ts_ckks_eval_chebyshev(ev, x, cf, (size_t)c->degree, s->lo / s->hi, 1.0, 0, y)) !=
                TS_OK)
            goto done;
    } else {
        /* y = 0 x + ys c_0 at x's scale */
        if ((st = ts_ckks_mul_int(ev, x, 0, y)) != TS_OK ||
            (st = ts_ckks_add_const(ev, y, ys * c->coeffs[0], y)) != TS_OK)
            goto done;
    }
    for (int i = 0; i < steps; i++) {
        double fa, fb;
        if ((st = ts_nonlinear_approx_rsqrt_step(a, i, &fa, &fb)) != TS_OK)
            goto done;
        fb *= r;
        if (i + 1 == steps) {
            fa /= sl;
            fb /= sl;
        }
        if (bt && ts_ckks_ciphertext_level(y) < 2 && (st = boot_drop(ev, bt, y)) != TS_OK)
            goto done;
        if (bt && ts_ckks_ciphertext_level(x) < 2 && (st = boot_drop(ev, bt, x)) != TS_OK)
            goto done;
        /* u = fb x' y; t = y^2; u = fb x' y^3 */
        if ((st = ts_ckks_ciphertext_copy(u, x)) != TS_OK || (st = mulc(ev, u, fb, u)) != TS_OK ||
            (st = ts_ckks_ciphertext_copy(t, y)) != TS_OK || (st = mulr(ev, u, t, u)) != TS_OK ||
            (st = ts_ckks_ciphertext_copy(t, y)) != TS_OK ||
            (st = ts_ckks_ciphertext_copy(v, y)) != TS_OK || (st = mulr(ev, t, v, t)) != TS_OK ||
            (st = mulr(ev, u, t, u)) != TS_OK)
            goto done;
        /* y = fa y, rescaled to exactly u's scale, minus u */
        int lv = ts_ckks_ciphertext_level(y);
        if (lv < 1) {
            st = TS_ELEVEL;
            goto done;
        }
        double cs = ts_ckks_ciphertext_scale(u) * (double)ts_ckks_params_q(p, (size_t)lv) /
                    ts_ckks_ciphertext_scale(y);
        if ((st = ts_ckks_mul_const(ev, y, fa, cs, y)) != TS_OK ||
            (st = ts_ckks_rescale(ev, y, y)) != TS_OK ||
            (st = ts_ckks_drop_to_level(ev, y, ts_ckks_ciphertext_level(u), y)) != TS_OK)
            goto done;
        if ((st = ts_ckks_ciphertext_set_meta(y, ts_ckks_ciphertext_level(y), 1,
                                              ts_ckks_ciphertext_scale(u),
                                              ts_ckks_ciphertext_slots(y))) != TS_OK ||
            (st = ts_ckks_sub(ev, y, u, y)) != TS_OK)
            goto done;
    }
done:
    ts_free(cf);
    ts_ckks_ciphertext_free(v);
    return st;
}

ts_status_t ts_nonlinear_ckks_eval(ts_ckks_evaluator_t *ev, const ts_boot_t *bt,
                                   const ts_nonlinear_approx_t *a, const ts_ckks_ciphertext_t *in,
                                   ts_ckks_ciphertext_t *out)
{
    if (!ev || !a || !in || !out)
        return TS_EINVAL;
    const ts_nonlinear_spec_t *s = ts_nonlinear_approx_spec(a);
    ts_nonlinear_fn_t fn = ts_nonlinear_approx_fn(a);
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(in);
    int L = ts_ckks_ciphertext_level(in);
    ts_status_t st;
    ts_ckks_ciphertext_t *x = NULL, *y = NULL, *t = NULL, *u = NULL;
    if ((st = ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &x)) != TS_OK ||
        (st = ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &y)) != TS_OK ||
        (st = ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &t)) != TS_OK ||
        (st = ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &u)) != TS_OK)
        goto done;
    (void)L;
    if ((st = ts_ckks_ciphertext_copy(x, in)) != TS_OK)
        goto done;
    switch (s->method) {
    case TS_NL_POLY: {
        const ts_nonlinear_cheb_t *c = ts_nonlinear_approx_cheb(a);
        if (!c) {
            st = TS_EINVAL;
            goto done;
        }
        int depth = 2;
        while ((1 << (depth - 1)) <= c->degree)
            depth++;
        if ((st = ensure(ev, bt, x, depth + 1)) != TS_OK)
            goto done;
        if ((st = ts_ckks_eval_chebyshev(ev, x, c->coeffs, (size_t)c->degree, c->lo, c->hi, 0,
                                         y)) != TS_OK)
            goto done;
        for (int i = 0; fn == TS_NL_FN_EXP && i < s->steps; i++) {
            if ((st = ensure(ev, bt, y, 2)) != TS_OK || (st = mulr(ev, y, y, y)) != TS_OK)
                goto done;
        }
        break;
    }
    case TS_NL_ITER:
        if (fn == TS_NL_FN_RECIP) {
            double sc = 2.0 / (s->lo + s->hi);
            const ts_nonlinear_cheb_t *g = ts_nonlinear_approx_cheb(a);
            bool guess = s->iter == TS_NL_ITER_SCALED;
            if (guess) {
                /* b = p(x), a = x p(x) (the Chebyshev-iteration guess); sc = 1 */
                int depth = (int)ts_ckks_chebyshev_depth((size_t)g->degree) + 1;
                sc = 1.0;
                if ((st = ensure(ev, bt, x, depth + 1)) != TS_OK ||
                    (st = ts_ckks_eval_chebyshev(ev, x, g->coeffs, (size_t)g->degree, g->lo, g->hi,
                                                 0, y)) != TS_OK ||
                    (st = ts_ckks_ciphertext_copy(u, y)) != TS_OK ||
                    (st = mulr(ev, x, u, x)) != TS_OK)
                    goto done;
            } else if ((st = ensure(ev, bt, x, 1)) != TS_OK || (st = mulc(ev, x, sc, x)) != TS_OK) {
                /* a = x sc; b = 1 (scaled first, while x has a level: a bootstrap of x
                 * itself may leave EvalMod's range for a wide [lo, hi]) */
                goto done;
            }
            for (int i = 0; i < s->steps; i++) {
                if ((i > 0 || guess) && ts_ckks_ciphertext_level(y) < 2 && bt) {
                    if ((st = boot_drop(ev, bt, y)) != TS_OK ||
                        (st = boot_drop(ev, bt, x)) != TS_OK)
                        goto done;
                }
                if ((st = ensure(ev, bt, x, 2)) != TS_OK)
                    goto done;
                /* f = 2 - a */
                if ((st = ts_ckks_neg(ev, x, t)) != TS_OK ||
                    (st = ts_ckks_add_const(ev, t, 2.0, t)) != TS_OK)
                    goto done;
                if (i == 0 && !guess) {
                    if ((st = ts_ckks_ciphertext_copy(y, t)) != TS_OK)
                        goto done;
                } else {
                    if ((st = ts_ckks_ciphertext_copy(u, t)) != TS_OK ||
                        (st = mulr(ev, y, u, y)) != TS_OK)
                        goto done;
                }
                if (i + 1 < s->steps && (st = mulr(ev, x, t, x)) != TS_OK)
                    goto done;
            }
            if (!guess && s->steps == 0 &&
                (st = ts_ckks_add_const(ev, x, 1.0, y)) != TS_OK) /* unused */
                goto done;
            if (!guess &&
                ((st = ensure(ev, bt, y, 1)) != TS_OK || (st = mulc(ev, y, sc, y)) != TS_OK))
                goto done;
        } else if (fn == TS_NL_FN_RSQRT) {
            if ((st = rsqrt_ckks(ev, bt, a, x, y, t, u)) != TS_OK)
                goto done;
        } else if (fn == TS_NL_FN_EXP) {
            if ((st = mulc(ev, x, ldexp(1.0, -s->steps), y)) != TS_OK ||
                (st = ts_ckks_add_const(ev, y, 1.0, y)) != TS_OK)
                goto done;
            for (int i = 0; i < s->steps; i++)
                if ((st = ensure(ev, bt, y, 2)) != TS_OK || (st = mulr(ev, y, y, y)) != TS_OK)
                    goto done;
        } else {
            st = TS_EINVAL;
            goto done;
        }
        break;
    default:
        st = TS_EINVAL;
        goto done;
    }
    st = ts_ckks_ciphertext_copy(out, y);
done:
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(y);
    ts_ckks_ciphertext_free(t);
    ts_ckks_ciphertext_free(u);
    return st;
}

/* ------------------------------------------------ the all-TFHE baseline */

struct ts_nonlinear_pbs {
    ts_tfhe_lut_t *lut;
    ts_nonlinear_fn_t fn;
    double lo, hi, dy;
    uint64_t p, q;
};

typedef struct {
    ts_nonlinear_fn_t fn;
    double lo, hi, dy, k;
    uint64_t p;
    bool bad; /* |k f| >= 1 somewhere */
} pbs_ctx_t;

static double pbs_mid(ts_nonlinear_fn_t fn, double lo, double hi, uint64_t p, uint64_t m)
{
    double x = lo + (hi - lo) * ((double)m + 0.5) / (double)p;
    return ts_nonlinear_exact(fn, x);
}

static int64_t pbs_fn(void *ctx, uint64_t m)
{
    pbs_ctx_t *c = ctx;
    double y = pbs_mid(c->fn, c->lo, c->hi, c->p, m);
    if (c->k > 0) {
        if (!(fabs(c->k * y) < 1.0)) {
            c->bad = true;
            return 0;
        }
        y = asin(c->k * y) / c->k;
    }
    return (int64_t)llround(y * c->dy);
}

ts_status_t ts_nonlinear_pbs_new(const ts_tfhe_params_t *tp, ts_nonlinear_fn_t fn, double lo,
                                 double hi, uint64_t p, double out_max, ts_nonlinear_pbs_t **out)
{
    return ts__nonlinear_pbs_new_warped(tp, fn, lo, hi, p, out_max, 0.0, out);
}

ts_status_t ts__nonlinear_pbs_new_warped(const ts_tfhe_params_t *tp, ts_nonlinear_fn_t fn,
                                         double lo, double hi, uint64_t p, double out_max, double k,
                                         ts_nonlinear_pbs_t **out)
{
    if (!tp || !out || !(hi > lo) || p < 2 || p > ts_tfhe_params_n_br(tp) || !(out_max > 0) ||
        !(k >= 0))
        return TS_EINVAL;
    ts_nonlinear_pbs_t *pb = ts_calloc(1, sizeof(*pb));
    if (!pb)
        return TS_ENOMEM;
    pb->fn = fn;
    pb->lo = lo;
    pb->hi = hi;
    pb->p = p;
    pb->q = ts_tfhe_params_q_br(tp);
    pb->dy = (double)pb->q / (4.0 * out_max);
    pbs_ctx_t c = {fn, lo, hi, pb->dy, k, p, false};
    ts_status_t st = ts_tfhe_lut_new(tp, p, pbs_fn, &c, 1, &pb->lut);
    if (st == TS_OK && c.bad) {
        ts_tfhe_lut_free(pb->lut);
        st = TS_ERANGE;
    }
    if (st != TS_OK) {
        ts_free(pb);
        return st;
    }
    *out = pb;
    return TS_OK;
}

void ts_nonlinear_pbs_free(ts_nonlinear_pbs_t *pb)
{
    if (!pb)
        return;
    ts_tfhe_lut_free(pb->lut);
    ts_free(pb);
}

static uint64_t pbs_index(const ts_nonlinear_pbs_t *pb, double x)
{
    double u = floor((x - pb->lo) / (pb->hi - pb->lo) * (double)pb->p);
    if (!(u >= 0))
        u = 0;
    if (u > (double)(pb->p - 1))
        u = (double)(pb->p - 1);
    return (uint64_t)u;
}

ts_status_t ts_nonlinear_pbs_encrypt(const ts_nonlinear_pbs_t *pb, const ts_tfhe_lwe_key_t *key,
                                     double x, double sigma, ts_prng_t *prng, ts_tfhe_lwe_t *out)
{
    if (!pb || !key || !prng || !out)
        return TS_EINVAL;
    return ts_tfhe_lwe_encrypt(key, out, ts_tfhe_encode(pb->q, pbs_index(pb, x), pb->p), sigma,
                               prng);
}

ts_status_t ts_nonlinear_pbs_eval(ts_nonlinear_pbs_t *pb, ts_tfhe_evaluator_t *ev,
                                  const ts_tfhe_lwe_t *in, ts_tfhe_lwe_t *out)
{
    if (!pb || !ev || !in || !out)
        return TS_EINVAL;
    return ts_tfhe_pbs(ev, out, in, pb->lut);
}

double ts_nonlinear_pbs_decode(const ts_nonlinear_pbs_t *pb, uint64_t phase)
{
    return (double)ts_tfhe_centered(phase, pb->q) / pb->dy;
}

double ts_nonlinear_pbs_ref(const ts_nonlinear_pbs_t *pb, double x)
{
    return pbs_mid(pb->fn, pb->lo, pb->hi, pb->p, pbs_index(pb, x));
}

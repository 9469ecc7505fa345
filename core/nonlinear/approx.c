/*
 * Plaintext approximations of the non-arithmetic primitives: Chebyshev
 * interpolation (fit + Clenshaw), Goldschmidt and Newton iterations, exp by
 * squaring, the approximation object that bundles one method with its fitted
 * data, error statistics and the max-free softmax. The segmented LUT lives in
 * lut.c. See nonlinear.h for the contracts.
 */
#include <math.h>
#include <string.h>

#include "core/nonlinear/nonlinear.h"
#include "core/nonlinear/nonlinear_int.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const char *const fn_names[TS_NL_FN_COUNT] = {"exp", "recip", "rsqrt", "silu", "gelu"};
static const char *const method_names[] = {"exact", "poly", "iter", "lut", "pbs"};

const char *ts_nonlinear_fn_name(ts_nonlinear_fn_t fn)
{
    return (unsigned)fn < TS_NL_FN_COUNT ? fn_names[fn] : "?";
}

const char *ts_nonlinear_method_name(ts_nonlinear_method_t m)
{
    return (unsigned)m <= TS_NL_PBS ? method_names[m] : "?";
}

double ts_nonlinear_exact(ts_nonlinear_fn_t fn, double x)
{
    switch (fn) {
    case TS_NL_FN_EXP:
        return exp(x);
    case TS_NL_FN_RECIP:
        return 1.0 / x;
    case TS_NL_FN_RSQRT:
        return 1.0 / sqrt(x);
    case TS_NL_FN_SILU:
        return x / (1.0 + exp(-x));
    case TS_NL_FN_GELU:
        return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    default:
        return NAN;
    }
}

static double exact_cb(double x, void *ctx)
{
    return ts_nonlinear_exact(*(const ts_nonlinear_fn_t *)ctx, x);
}

/* ------------------------------------------------------------ Chebyshev */

ts_status_t ts_nonlinear_cheb_init(ts_nonlinear_cheb_t *cheb, ts_nonlinear_func_t f, void *ctx,
                                   double lo, double hi, int degree)
{
    if (!cheb)
        return TS_EINVAL;
    memset(cheb, 0, sizeof(*cheb));
    if (!f || !isfinite(lo) || !isfinite(hi) || !(lo < hi) || degree < 0 || degree > 4096)
        return TS_EINVAL;
    int n = degree + 1;
    double *c = ts_calloc((size_t)n, sizeof(double));
    double *fv = ts_malloc((size_t)n * sizeof(double));
    if (!c || !fv) {
        ts_free(c);
        ts_free(fv);
        return TS_ENOMEM;
    }
    /* Nodes t_k = cos(pi (k + 1/2) / n), k = 0..n-1 (first kind). */
    for (int k = 0; k < n; k++) {
        double t = cos(M_PI * (k + 0.5) / n);
        double x = 0.5 * (hi - lo) * t + 0.5 * (hi + lo);
        fv[k] = f(x, ctx);
        if (!isfinite(fv[k])) {
            ts_free(c);
            ts_free(fv);
            return TS_ERANGE;
        }
    }
    /* c_j = (2/n) sum_k f(x_k) cos(pi j (k + 1/2) / n); c_0 halved. */
    for (int j = 0; j < n; j++) {
        double s = 0.0;
        for (int k = 0; k < n; k++)
            s += fv[k] * cos(M_PI * j * (k + 0.5) / n);
        c[j] = 2.0 * s / n;
    }
    c[0] *= 0.5;
    ts_free(fv);
    cheb->lo = lo;
    cheb->hi = hi;
    cheb->degree = degree;
    cheb->coeffs = c;
    return TS_OK;
}

void ts_nonlinear_cheb_clear(ts_nonlinear_cheb_t *cheb)
{
    if (!cheb)
        return;
    ts_free(cheb->coeffs);
    memset(cheb, 0, sizeof(*cheb));
}

double ts_nonlinear_cheb_eval(const ts_nonlinear_cheb_t *cheb, double x)
{
    double t = (2.0 * x - cheb->lo - cheb->hi) / (cheb->hi - cheb->lo);
    double b1 = 0.0, b2 = 0.0;
    for (int j = cheb->degree; j >= 1; j--) {
        double b0 = 2.0 * t * b1 - b2 + cheb->coeffs[j];
        b2 = b1;
        b1 = b0;
    }
    return t * b1 - b2 + cheb->coeffs[0];
}

/* ------------------------------------------------------------ iterations */

double ts_nonlinear_goldschmidt_recip(double x, double lo, double hi, int steps)
{
    /* Scale into (0, 2): s = 2/(lo+hi). Then a -> 1 while b -> 1/a0. */
    double s = 2.0 / (lo + hi);
    double a = x * s, b = 1.0;
    for (int i = 0; i < steps; i++) {
        double f = 2.0 - a;
        a *= f;
        b *= f;
    }
    /* After n steps a = 1 - e^(2^n) and b = a / a0, e = 1 - a0. */
    return b * s;
}

double ts_nonlinear_goldschmidt_bound(double lo, double hi, int steps)
{
    double e = (hi - lo) / (hi + lo);
    return pow(e, ldexp(1.0, steps));
}

/* ------------------------------------- 1/x: Chebyshev-iteration start */

/* 1 / T_{d+1}(sigma), sigma = (hi + lo) / (hi - lo): the guess's max |1 - x p(x)| */
static double recip_guess_err(double lo, double hi, int d)
{
    double sigma = (hi + lo) / (hi - lo);
    return 1.0 / cosh((d + 1) * acosh(sigma));
}

typedef struct {
    double lo, hi;
    int d;
} recip_guess_t;

/* p(x) = (1 - T_{d+1}(u(x)) / T_{d+1}(sigma)) / x, a polynomial of degree d */
static double recip_guess_cb(double x, void *ctx)
{
    const recip_guess_t *g = ctx;
    double u = (g->hi + g->lo - 2.0 * x) / (g->hi - g->lo);
    u = u < -1 ? -1 : u > 1 ? 1 : u;
    return (1.0 - cos((g->d + 1) * acos(u)) * recip_guess_err(g->lo, g->hi, g->d)) / x;
}

double ts_nonlinear_newton_rsqrt(double x, double y0, int steps)
{
    double y = y0;
    for (int i = 0; i < steps; i++)
        y = 0.5 * y * (3.0 - x * y * y);
    return y;
}

/* ------------------------------------------------ 1/sqrt(x): scaled Newton */

#define RS_MAX_STEPS 64

/*
 * The polynomial p of degree d on [lo, hi] (Chebyshev basis) minimizing
 * max |sqrt(x) p(x) - 1| over a grid (Chebyshev nodes plus geometric points,
 * so that both ends of a wide range are dense), by Lawson's iteratively
 * reweighted least squares (30 rounds; the true range of x p^2 is measured
 * afterwards, so the result need not be the exact minimax one).
 */
static ts_status_t rsqrt_rel_fit(double lo, double hi, int d, double *coeffs)
{
    enum { G = 1536, ROUNDS = 30 };
    const int n = d + 1;
    double *T = ts_malloc((size_t)G * (size_t)n * sizeof(double));
    double *sf = ts_malloc((size_t)G * sizeof(double)); /* sqrt(x) = 1 / f */
    double *w = ts_malloc((size_t)G * sizeof(double));
    double *A = ts_malloc((size_t)n * (size_t)n * sizeof(double));
    double *b = ts_malloc((size_t)n * sizeof(double));
    ts_status_t st = TS_OK;
    if (!T || !sf || !w || !A || !b) {
        st = TS_ENOMEM;
        goto done;
    }
    for (int i = 0; i < G; i++) {
        double x;
        if (i < G / 2)
            x = 0.5 * (hi - lo) * cos(M_PI * (i + 0.5) / (G / 2)) + 0.5 * (hi + lo);
        else
            x = lo * pow(hi / lo, (double)(i - G / 2) / (G / 2 - 1));
        double t = (2.0 * x - lo - hi) / (hi - lo);
        t = t < -1 ? -1 : t > 1 ? 1 : t;
        double *row = T + (size_t)i * n;
        row[0] = 1.0;
        if (n > 1)
            row[1] = t;
        for (int j = 2; j < n; j++)
            row[j] = 2.0 * t * row[j - 1] - row[j - 2];
        sf[i] = sqrt(x);
        w[i] = 1.0 / G;
    }
    for (int r = 0; r < ROUNDS; r++) {
        /* normal equations of min sum w_i (sqrt(x_i) p(x_i) - 1)^2 */
        memset(A, 0, (size_t)n * n * sizeof(double));
        memset(b, 0, (size_t)n * sizeof(double));
        for (int i = 0; i < G; i++) {
            const double *row = T + (size_t)i * n;
            double ws = w[i] * sf[i] * sf[i], wb = w[i] * sf[i];
            for (int j = 0; j < n; j++) {
                b[j] += wb * row[j];
                for (int k = 0; k <= j; k++)
                    A[j * n + k] += ws * row[j] * row[k];
            }
        }
        /* Cholesky (lower), with a tiny ridge for safety */
        for (int j = 0; j < n; j++) {
            A[j * n + j] *= 1.0 + 1e-13;
            for (int k = 0; k <= j; k++) {
                double v = A[j * n + k];
                for (int m = 0; m < k; m++)
                    v -= A[j * n + m] * A[k * n + m];
                if (k == j) {
                    if (!(v > 0)) {
                        st = TS_ERANGE;
                        goto done;
                    }
                    A[j * n + j] = sqrt(v);
                } else {
                    A[j * n + k] = v / A[k * n + k];
                }
            }
        }
        for (int j = 0; j < n; j++) {
            double v = b[j];
            for (int m = 0; m < j; m++)
                v -= A[j * n + m] * coeffs[m];
            coeffs[j] = v / A[j * n + j];
        }
        for (int j = n - 1; j >= 0; j--) {
            double v = coeffs[j];
            for (int m = j + 1; m < n; m++)
                v -= A[m * n + j] * coeffs[m];
            coeffs[j] = v / A[j * n + j];
        }
        double sum = 0;
        for (int i = 0; i < G; i++) {
            const double *row = T + (size_t)i * n;
            double p = 0;
            for (int j = 0; j < n; j++)
                p += coeffs[j] * row[j];
            w[i] *= fabs(sf[i] * p - 1.0) + 1e-300;
            sum += w[i];
        }
        for (int i = 0; i < G; i++)
            w[i] /= sum;
    }
done:
    ts_free(T);
    ts_free(sf);
    ts_free(w);
    ts_free(A);
    ts_free(b);
    return st;
}

/* The range of x p(x)^2 on [lo, hi] over a dense grid (Chebyshev nodes plus geometric points). */
static void rsqrt_t_range(const ts_nonlinear_cheb_t *c, double lo, double hi, double *tmin,
                          double *tmax)
{
    enum { G = 8192 };
    double mn = INFINITY, mx = -INFINITY;
    for (int i = 0; i < 2 * G; i++) {
        double x = i < G ? 0.5 * (hi - lo) * cos(M_PI * i / (G - 1)) + 0.5 * (hi + lo)
                         : lo * pow(hi / lo, (double)(i - G) / (G - 1));
        double y = ts_nonlinear_cheb_eval(c, x);
        double t = x * y * y;
        if (y <= 0)
            t = -1; /* a non-positive guess never converges */
        if (t < mn)
            mn = t;
        if (t > mx)
            mx = t;
    }
    /* margin for the grid (the polynomial is smooth between points) */
    *tmin = mn * (1 - 1e-3);
    *tmax = mx * (1 + 1e-3);
}

/*
 * The step y <- y (a - b x y^2) that maps t = x y^2 in [m, M] to the relative
 * factor g(t) = sqrt(t) (a - b t) closest to 1 in the max norm: with
 * h(t) = sqrt(t) (c - t), c = a / b, g ranges over b [h_min, h_max]; b
 * centres that range and c (> M, so that g > 0) minimizes its relative width
 * delta = (h_max - h_min) / (h_max + h_min), found by a scan and a golden
 * section (delta is unimodal in c).
 */
static double h_t(double t, double c)
{
    return sqrt(t) * (c - t);
}

static double step_delta(double m, double M, double c, double *b)
{
    double tc = c / 3.0;
    tc = tc < m ? m : tc > M ? M : tc;
    double hmax = h_t(tc, c), hmin = fmin(h_t(m, c), h_t(M, c));
    if (!(hmin > 0))
        return INFINITY;
    if (b)
        *b = 2.0 / (hmax + hmin);
    return (hmax - hmin) / (hmax + hmin);
}

static double rsqrt_step(double m, double M, double *a, double *b)
{
    double lo = M * (1 + 1e-12), hi = 3.0 * M + 3.0;
    /* coarse scan */
    double best = lo, bd = INFINITY;
    for (int i = 0; i <= 256; i++) {
        double c = lo + (hi - lo) * i / 256.0;
        double d = step_delta(m, M, c, NULL);
        if (d < bd) {
            bd = d;
            best = c;
        }
    }
    double step = (hi - lo) / 256.0;
    double l = fmax(lo, best - step), r = fmin(hi, best + step);
    const double g = 0.6180339887498949;
    for (int i = 0; i < 100; i++) {
        double c1 = r - g * (r - l), c2 = l + g * (r - l);
        if (step_delta(m, M, c1, NULL) < step_delta(m, M, c2, NULL))
            r = c2;
        else
            l = c1;
    }
    double c = 0.5 * (l + r), bb = 0;
    double d = step_delta(m, M, c, &bb);
    if (d > bd) { /* the scan's point was better (flat region) */
        c = best;
        d = step_delta(m, M, c, &bb);
    }
    *b = bb;
    *a = bb * c;
    return d;
}

/* ------------------------------------------------------- one approximation */

struct ts_nonlinear_approx {
    ts_nonlinear_fn_t fn;
    ts_nonlinear_spec_t spec;
    bool has_cheb, has_lut;
    ts_nonlinear_cheb_t cheb;
    ts_nonlinear_lut_t lut;
    double rs_a[RS_MAX_STEPS], rs_b[RS_MAX_STEPS]; /* ITER rsqrt: the step coefficients */
    double rel_bound;                              /* ITER: ts_nonlinear_approx_rel_bound */
};

double ts_nonlinear_approx_rel_bound(const ts_nonlinear_approx_t *a)
{
    return a ? a->rel_bound : NAN;
}

ts_status_t ts_nonlinear_approx_rsqrt_step(const ts_nonlinear_approx_t *a, int k, double *ak,
                                           double *bk)
{
    if (!a || !ak || !bk || a->fn != TS_NL_FN_RSQRT || a->spec.method != TS_NL_ITER || k < 0 ||
        k >= a->spec.steps)
        return TS_EINVAL;
    *ak = a->rs_a[k];
    *bk = a->rs_b[k];
    return TS_OK;
}

/* Fit the 1/sqrt(x) ITER guess and the step coefficients of a, and its bound. */
static ts_status_t rsqrt_setup(ts_nonlinear_approx_t *a)
{
    const ts_nonlinear_spec_t *s = &a->spec;
    ts_nonlinear_fn_t f = TS_NL_FN_RSQRT;
    ts_status_t st;
    bool scaled = s->iter == TS_NL_ITER_SCALED;
    if (scaled) {
        double *c = ts_calloc((size_t)s->degree + 1, sizeof(double));
        if (!c)
            return TS_ENOMEM;
        if ((st = rsqrt_rel_fit(s->lo, s->hi, s->degree, c)) != TS_OK) {
            ts_free(c);
            return st;
        }
        a->cheb = (ts_nonlinear_cheb_t){.lo = s->lo, .hi = s->hi, .degree = s->degree, .coeffs = c};
    } else if ((st = ts_nonlinear_cheb_init(&a->cheb, exact_cb, &f, s->lo, s->hi, s->degree)) !=
               TS_OK) {
        return st;
    }
    a->has_cheb = true;
    double m, M;
    rsqrt_t_range(&a->cheb, s->lo, s->hi, &m, &M);
    if (scaled && !(m > 0))
        return TS_ERANGE;
    double d = fmax(fabs(sqrt(fmax(m, 0)) - 1.0), fabs(sqrt(M) - 1.0));
    for (int k = 0; k < s->steps; k++) {
        if (scaled) {
            d = rsqrt_step(m, M, &a->rs_a[k], &a->rs_b[k]);
        } else {
            a->rs_a[k] = 1.5;
            a->rs_b[k] = 0.5;
            d = (m > 0 && M < 3) ? step_delta(m, M, 3.0, NULL) : INFINITY;
            /* plain Newton is centred at 1 only in the limit: the range of g is
             * [min(g(m), g(M)), 1] */
            if (isfinite(d)) {
                double gm = fmin(0.5 * h_t(m, 3.0), 0.5 * h_t(M, 3.0));
                d = 1.0 - gm;
            }
        }
        if (!isfinite(d)) {
            a->rel_bound = INFINITY;
            return TS_OK;
        }
        /* tiny widening for rounding */
        d = d * (1 + 1e-9) + 1e-16;
        m = (1 - d) * (1 - d);
        M = (1 + d) * (1 + d);
    }
    a->rel_bound = d;
    return TS_OK;
}

ts_status_t ts_nonlinear_approx_new(ts_nonlinear_fn_t fn, const ts_nonlinear_spec_t *spec,
                                    ts_nonlinear_approx_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!spec || (unsigned)fn >= TS_NL_FN_COUNT)
        return TS_EINVAL;
    ts_nonlinear_method_t m = spec->method;
    if (m != TS_NL_EXACT) {
        if (!isfinite(spec->lo) || !isfinite(spec->hi) || !(spec->lo < spec->hi))
            return TS_EINVAL;
        if ((fn == TS_NL_FN_RECIP || fn == TS_NL_FN_RSQRT) && m == TS_NL_ITER && spec->lo <= 0)
            return TS_EINVAL;
    }
    if (m == TS_NL_POLY && (spec->degree < 0 || spec->degree > 4096 || spec->steps < 0 ||
                            spec->steps > 30 || (spec->steps > 0 && fn != TS_NL_FN_EXP)))
        return TS_EINVAL;
    if (m == TS_NL_ITER && (fn == TS_NL_FN_SILU || fn == TS_NL_FN_GELU || spec->steps < 0 ||
                            spec->steps > 64 || spec->degree < 0 || spec->degree > 4096))
        return TS_EINVAL;
    if (m == TS_NL_ITER && fn == TS_NL_FN_EXP && spec->steps > 30)
        return TS_EINVAL;
    if (spec->iter != TS_NL_ITER_CLASSIC &&
        (spec->iter != TS_NL_ITER_SCALED || m != TS_NL_ITER ||
         !((fn == TS_NL_FN_RSQRT && spec->degree <= 63) ||
           (fn == TS_NL_FN_RECIP && spec->degree >= 1 && spec->degree <= 1023))))
        return TS_EINVAL;
    if (m == TS_NL_PBS && (spec->n_br < 2 || spec->n_br > TS_NL_LUT_MAX_BR))
        return TS_EINVAL;
    if ((unsigned)m > TS_NL_PBS)
        return TS_EINVAL;

    ts_nonlinear_approx_t *a = ts_calloc(1, sizeof(*a));
    if (!a)
        return TS_ENOMEM;
    a->fn = fn;
    a->spec = *spec;
    a->rel_bound = NAN;
    ts_status_t st = TS_OK;
    ts_nonlinear_fn_t f = fn;
    switch (m) {
    case TS_NL_EXACT:
        break;
    case TS_NL_POLY: {
        double sc = ldexp(1.0, -spec->steps); /* exp by squaring: fit on [lo, hi] / 2^steps */
        st = ts_nonlinear_cheb_init(&a->cheb, exact_cb, &f, spec->lo * sc, spec->hi * sc,
                                    spec->degree);
        a->has_cheb = st == TS_OK;
        break;
    }
    case TS_NL_ITER:
        a->rel_bound = NAN;
        if (fn == TS_NL_FN_RSQRT)
            st = rsqrt_setup(a);
        else if (fn == TS_NL_FN_RECIP && spec->iter == TS_NL_ITER_SCALED) {
            recip_guess_t g = {spec->lo, spec->hi, spec->degree};
            st = ts_nonlinear_cheb_init(&a->cheb, recip_guess_cb, &g, spec->lo, spec->hi,
                                        spec->degree);
            a->has_cheb = st == TS_OK;
            a->rel_bound =
                pow(recip_guess_err(spec->lo, spec->hi, spec->degree), ldexp(1.0, spec->steps));
        } else if (fn == TS_NL_FN_RECIP)
            a->rel_bound = ts_nonlinear_goldschmidt_bound(spec->lo, spec->hi, spec->steps);
        break;
    case TS_NL_LUT:
        st = ts_nonlinear_lut_init(&a->lut, exact_cb, &f, spec->lo, spec->hi, spec->n_seg,
                                   spec->n_br, spec->bounds, spec->index_bits);
        a->has_lut = st == TS_OK;
        break;
    case TS_NL_PBS:
        break;
    }
    if (st != TS_OK) {
        ts_nonlinear_approx_free(a);
        return st;
    }
    *out = a;
    return TS_OK;
}

void ts_nonlinear_approx_free(ts_nonlinear_approx_t *a)
{
    if (!a)
        return;
    if (a->has_cheb)
        ts_nonlinear_cheb_clear(&a->cheb);
    if (a->has_lut)
        ts_nonlinear_lut_clear(&a->lut);
    ts_free(a);
}

double ts_nonlinear_approx_eval(const ts_nonlinear_approx_t *a, double x)
{
    const ts_nonlinear_spec_t *s = &a->spec;
    switch (s->method) {
    case TS_NL_EXACT:
        return ts_nonlinear_exact(a->fn, x);
    case TS_NL_POLY: {
        if (s->steps == 0)
            return ts_nonlinear_cheb_eval(&a->cheb, x);
        double y = ts_nonlinear_cheb_eval(&a->cheb, ldexp(x, -s->steps));
        for (int i = 0; i < s->steps; i++)
            y *= y;
        return y;
    }
    case TS_NL_ITER:
        switch (a->fn) {
        case TS_NL_FN_RECIP: {
            if (s->iter != TS_NL_ITER_SCALED)
                return ts_nonlinear_goldschmidt_recip(x, s->lo, s->hi, s->steps);
            double b = ts_nonlinear_cheb_eval(&a->cheb, x), ax = x * b;
            for (int i = 0; i < s->steps; i++) {
                double f = 2.0 - ax;
                ax *= f;
                b *= f;
            }
            return b;
        }
        case TS_NL_FN_RSQRT: {
            /* degree 0: the constant 1/sqrt at the midpoint (the one-node interpolant) */
            double y = ts_nonlinear_cheb_eval(&a->cheb, x);
            if (s->iter != TS_NL_ITER_SCALED)
                return ts_nonlinear_newton_rsqrt(x, y, s->steps);
            for (int i = 0; i < s->steps; i++)
                y = y * (a->rs_a[i] - a->rs_b[i] * x * y * y);
            return y;
        }
        case TS_NL_FN_EXP: {
            double y = 1.0 + ldexp(x, -s->steps);
            for (int i = 0; i < s->steps; i++)
                y *= y;
            return y;
        }
        default:
            return NAN;
        }
    case TS_NL_LUT:
        return ts_nonlinear_lut_eval(&a->lut, x);
    case TS_NL_PBS: {
        /* f at the midpoint of x's box (clamped to the first and last) */
        double step = (s->hi - s->lo) / s->n_br, u = floor((x - s->lo) / step);
        if (!(u >= 0))
            u = 0;
        if (u > s->n_br - 1)
            u = s->n_br - 1;
        return ts_nonlinear_exact(a->fn, s->lo + (u + 0.5) * step);
    }
    }
    return NAN;
}

ts_nonlinear_fn_t ts_nonlinear_approx_fn(const ts_nonlinear_approx_t *a)
{
    return a->fn;
}

const ts_nonlinear_spec_t *ts_nonlinear_approx_spec(const ts_nonlinear_approx_t *a)
{
    return &a->spec;
}

const ts_nonlinear_cheb_t *ts_nonlinear_approx_cheb(const ts_nonlinear_approx_t *a)
{
    return a && a->has_cheb ? &a->cheb : NULL;
}

const ts_nonlinear_lut_t *ts_nonlinear_approx_lut(const ts_nonlinear_approx_t *a)
{
    return a && a->has_lut ? &a->lut : NULL;
}

void ts_nonlinear_approx_error(const ts_nonlinear_approx_t *a, double lo, double hi, int samples,
                               double *max_abs, double *mean_abs)
{
    double mx = 0.0, sum = 0.0;
    int n = samples < 2 ? 2 : samples;
    for (int i = 0; i < n; i++) {
        double x = lo + (hi - lo) * i / (n - 1);
        double e = fabs(ts_nonlinear_approx_eval(a, x) - ts_nonlinear_exact(a->fn, x));
        if (!(e <= mx))
            mx = e; /* NaN propagates as the max */
        sum += e;
    }
    if (max_abs)
        *max_abs = mx;
    if (mean_abs)
        *mean_abs = sum / n;
}

/* ------------------------------------------------------------ statistics */

void ts_nonlinear_stats_add(ts_nonlinear_stats_t *st, ts_nonlinear_fn_t fn, double x, double y,
                            double lo, double hi)
{
    double ex = ts_nonlinear_exact(fn, x);
    double e = fabs(y - ex);
    double r = e / fmax(fabs(ex), 1e-30);
    if (st->count == 0) {
        st->in_min = x;
        st->in_max = x;
    }
    st->count++;
    if (x < lo || x > hi)
        st->out_of_range++;
    if (!(e <= st->max_abs_err))
        st->max_abs_err = e;
    if (!(r <= st->max_rel_err))
        st->max_rel_err = r;
    st->sum_abs_err += e;
    if (x < st->in_min)
        st->in_min = x;
    if (x > st->in_max)
        st->in_max = x;
}

void ts_nonlinear_stats_merge(ts_nonlinear_stats_t *dst, const ts_nonlinear_stats_t *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0) {
        *dst = *src;
        return;
    }
    dst->count += src->count;
    dst->out_of_range += src->out_of_range;
    dst->sum_abs_err += src->sum_abs_err;
    if (!(src->max_abs_err <= dst->max_abs_err))
        dst->max_abs_err = src->max_abs_err;
    if (!(src->max_rel_err <= dst->max_rel_err))
        dst->max_rel_err = src->max_rel_err;
    dst->in_min = fmin(dst->in_min, src->in_min);
    dst->in_max = fmax(dst->in_max, src->in_max);
}

double ts_nonlinear_approx_eval_stats(const ts_nonlinear_approx_t *a, ts_nonlinear_fn_t fn,
                                      double x, ts_nonlinear_stats_t *st)
{
    double y = a ? ts_nonlinear_approx_eval(a, x) : ts_nonlinear_exact(fn, x);
    if (st) {
        double lo = -INFINITY, hi = INFINITY;
        if (a && a->spec.method != TS_NL_EXACT) {
            lo = a->spec.lo;
            hi = a->spec.hi;
        }
        ts_nonlinear_stats_add(st, fn, x, y, lo, hi);
    }
    return y;
}

/* ---------------------------------------------------------------- softmax */

ts_status_t ts_nonlinear_softmax_maxfree_stats(const double *z, size_t n, int k,
                                               const ts_nonlinear_approx_t *exp_a,
                                               const ts_nonlinear_approx_t *recip_a, double *out,
                                               ts_nonlinear_stats_t *exp_st,
                                               ts_nonlinear_stats_t *recip_st)
{
    if (!z || !out || n == 0 || k < 0 || k > 30)
        return TS_EINVAL;
    double sc = ldexp(1.0, -k);
    for (size_t i = 0; i < n; i++)
        out[i] = ts_nonlinear_approx_eval_stats(exp_a, TS_NL_FN_EXP, z[i] * sc, exp_st);
    if (k == 0) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++)
            s += out[i];
        double r = ts_nonlinear_approx_eval_stats(recip_a, TS_NL_FN_RECIP, s, recip_st);
        for (size_t i = 0; i < n; i++)
            out[i] *= r;
        return TS_OK;
    }
    for (int it = 0; it < k; it++) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++) {
            out[i] *= out[i];
            s += out[i];
        }
        double r = ts_nonlinear_approx_eval_stats(recip_a, TS_NL_FN_RECIP, s, recip_st);
        for (size_t i = 0; i < n; i++)
            out[i] *= r;
    }
    return TS_OK;
}

ts_status_t ts_nonlinear_softmax_maxfree(const double *z, size_t n, int k,
                                         const ts_nonlinear_approx_t *exp_a,
                                         const ts_nonlinear_approx_t *recip_a, double *out)
{
    return ts_nonlinear_softmax_maxfree_stats(z, n, k, exp_a, recip_a, out, NULL, NULL);
}

void ts_nonlinear_softmax_ref(const double *z, size_t n, double *out)
{
    if (n == 0)
        return;
    double mx = z[0];
    for (size_t i = 1; i < n; i++)
        if (z[i] > mx)
            mx = z[i];
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        out[i] = exp(z[i] - mx);
        s += out[i];
    }
    for (size_t i = 0; i < n; i++)
        out[i] /= s;
}

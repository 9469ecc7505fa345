/*
 * The adaptive segmented LUT of ROSETTA section 3.1, in plaintext: boundary
 * placement (uniform, logarithmic, or automatic equal-error search), per
 * interval linear pieces, and the three-step lookup with quantized indices.
 */
#include <math.h>
#include <string.h>

#include "core/nonlinear/nonlinear.h"

/* Sample points per interval when fitting the lines and when placing bounds. */
#define FIT_SAMPLES   16
#define PLACE_SAMPLES 8

/*
 * The line for f on [u, v]: secant slope a, offset b centring g = f - a x
 * between its sampled extremes (minimax among lines of slope a; the minimax
 * line outright when f is convex or concave on [u, v]). Returns the max
 * error of that line on the samples, or NAN when f is not finite there.
 */
/* Refine an extremum of g(x) = f(x) - a x inside [lo, hi] by golden-section
 * search (sign = +1 for a maximum, -1 for a minimum); returns the best g. */
static double refine(ts_nonlinear_func_t f, void *ctx, double a, double lo, double hi, double sign,
                     double best, int iters)
{
    const double r = 0.6180339887498949;
    double x1 = hi - r * (hi - lo), x2 = lo + r * (hi - lo);
    double g1 = sign * (f(x1, ctx) - a * x1), g2 = sign * (f(x2, ctx) - a * x2);
    for (int it = 0; it < iters && hi - lo > 1e-15 * (fabs(lo) + fabs(hi)); it++) {
        if (g1 > g2) {
            hi = x2;
            x2 = x1;
            g2 = g1;
            x1 = hi - r * (hi - lo);
            g1 = sign * (f(x1, ctx) - a * x1);
        } else {
            lo = x1;
            x1 = x2;
            g1 = g2;
            x2 = lo + r * (hi - lo);
            g2 = sign * (f(x2, ctx) - a * x2);
        }
    }
    double g = g1 > g2 ? g1 : g2;
    if (isfinite(g) && g > sign * best)
        return sign * g;
    return best;
}

/*
 * The line for f on [u, v]: secant slope a, offset b centring g = f - a x
 * between its extremes (minimax among lines of slope a; the minimax line
 * outright when f is convex or concave on [u, v]). The extremes are found on
 * a uniform grid (plus a geometric one when 0 < u << v, where 1/x-like
 * functions bend), then refined by golden-section search around the best
 * grid point. Returns the max error of that line, or NAN when f is not
 * finite there.
 */
static double fit_line(ts_nonlinear_func_t f, void *ctx, double u, double v, int samples,
                       double *a_out, double *b_out, double *fabs_min)
{
    double fu = f(u, ctx), fv = f(v, ctx);
    if (!isfinite(fu) || !isfinite(fv))
        return NAN;
    double fm = fmin(fabs(fu), fabs(fv));
    double a = v > u ? (fv - fu) / (v - u) : 0.0;
    double gmin = fu - a * u, gmax = gmin, xmin = u, xmax = u;
    bool geo = u > 0 && v > 4 * u;
    int n = geo ? 2 * samples : samples;
    for (int k = 1; k <= n; k++) {
        double x;
        if (k <= samples)
            x = k == samples ? v : u + (v - u) * k / samples;
        else
            x = u * pow(v / u, (double)(k - samples) / (samples + 1));
        double fx = x == v ? fv : f(x, ctx);
        if (!isfinite(fx))
            return NAN;
        fm = fmin(fm, fabs(fx));
        double g = fx - a * x;
        if (g < gmin) {
            gmin = g;
            xmin = x;
        }
        if (g > gmax) {
            gmax = g;
            xmax = x;
        }
    }
    if (v > u) {
        /* Search each extreme within a neighbourhood of its grid point. */
        double w = geo ? fmax(xmax - u, (v - u) / samples) : (v - u) / samples;
        int iters = samples >= FIT_SAMPLES ? 40 : 16; /* placement searches use fewer */
        gmax = refine(f, ctx, a, fmax(u, xmax - w), fmin(v, xmax + w), 1.0, gmax, iters);
        w = geo ? fmax(xmin - u, (v - u) / samples) : (v - u) / samples;
        gmin = refine(f, ctx, a, fmax(u, xmin - w), fmin(v, xmin + w), -1.0, gmin, iters);
    }
    if (a_out)
        *a_out = a;
    if (b_out)
        *b_out = 0.5 * (gmin + gmax);
    if (fabs_min)
        *fabs_min = fm;
    return 0.5 * (gmax - gmin);
}

/* Max error of a segment [u, v] split into n_br equal intervals (NAN if f
 * fails); relative to min |f| on each interval when `rel`. */
static double segment_error(ts_nonlinear_func_t f, void *ctx, double u, double v, int n_br,
                            int samples, bool rel)
{
    double mx = 0.0;
    for (int i = 0; i < n_br; i++) {
        double a = u + (v - u) * i / n_br;
        double b = i + 1 == n_br ? v : u + (v - u) * (i + 1) / n_br;
        double fm;
        double e = fit_line(f, ctx, a, b, samples, NULL, NULL, &fm);
        if (isnan(e))
            return NAN;
        if (rel)
            e /= fmax(fm, 1e-300);
        if (e > mx)
            mx = e;
    }
    return mx;
}

/*
 * Greedy placement for a target error eps: each segment extends as far right
 * as it can while its error stays <= eps (bisection on the right end). Fills
 * t[0..n_seg] and returns the error of the last segment, which takes the rest.
 */
static double place_greedy(ts_nonlinear_func_t f, void *ctx, double lo, double hi, int n_seg,
                           int n_br, int samples, bool rel, double eps, double *t)
{
    t[0] = lo;
    for (int s = 1; s < n_seg; s++) {
        double left = t[s - 1];
        double good = left, bad = hi;
        if (segment_error(f, ctx, left, hi, n_br, samples, rel) <= eps) {
            good = hi;
        } else {
            for (int it = 0; it < 30; it++) {
                double mid = 0.5 * (good + bad);
                double e = segment_error(f, ctx, left, mid, n_br, samples, rel);
                if (e <= eps)
                    good = mid;
                else
                    bad = mid;
            }
        }
        if (good >= hi) {
            /* Fewer segments suffice: split the rest evenly (only smaller
             * errors), and report feasible. */
            for (int j = s; j < n_seg; j++)
                t[j] = left + (hi - left) * (j - s + 1) / (n_seg - s + 1);
            t[n_seg] = hi;
            return 0.0;
        }
        /* Keep boundaries strictly increasing even when eps is too small. */
        double min_w = (hi - lo) * 1e-9;
        if (good < left + min_w)
            good = left + min_w;
        if (good > hi)
            good = hi;
        t[s] = good;
    }
    t[n_seg] = hi;
    for (int s = 1; s <= n_seg; s++)
        if (!(t[s] > t[s - 1]))
            return INFINITY; /* squeezed: infeasible */
    return segment_error(f, ctx, t[n_seg - 1], hi, n_br, samples, rel);
}

static ts_status_t place_auto(ts_nonlinear_func_t f, void *ctx, double lo, double hi, int n_seg,
                              int n_br, bool rel, double *t)
{
    /* Placement with up to 64 intervals per segment: the interpolation error
     * scales as h^2 in every segment alike, so the equal-error boundaries
     * barely move with more entries, and the search stays cheap. */
    if (n_br > 64)
        n_br = 64;
    int samples = PLACE_SAMPLES;
    /* Upper bound: the uniform placement's error. */
    double hi_eps = 0.0;
    for (int s = 0; s < n_seg; s++) {
        double u = lo + (hi - lo) * s / n_seg, v = lo + (hi - lo) * (s + 1) / n_seg;
        double e = segment_error(f, ctx, u, v, n_br, samples, rel);
        if (isnan(e))
            return TS_ERANGE;
        if (e > hi_eps)
            hi_eps = e;
    }
    if (n_seg == 1 || hi_eps == 0.0) {
        for (int s = 0; s <= n_seg; s++)
            t[s] = lo + (hi - lo) * s / n_seg;
        return TS_OK;
    }
    double *tmp = ts_malloc(sizeof(double) * (size_t)(n_seg + 1));
    if (!tmp)
        return TS_ENOMEM;
    /* Bisection on eps in the log domain: feasible when the last segment fits. */
    double lo_eps = hi_eps * 1e-12, best = INFINITY;
    for (int s = 0; s <= n_seg; s++)
        t[s] = lo + (hi - lo) * s / n_seg;
    for (int it = 0; it < 40; it++) {
        double eps = sqrt(lo_eps * hi_eps);
        double last = place_greedy(f, ctx, lo, hi, n_seg, n_br, samples, rel, eps, tmp);
        if (last <= eps) {
            hi_eps = eps;
            best = eps;
            memcpy(t, tmp, sizeof(double) * (size_t)(n_seg + 1));
        } else {
            lo_eps = eps;
        }
        if (hi_eps / lo_eps < 1.0 + 1e-4)
            break;
    }
    (void)best;
    ts_free(tmp);
    return TS_OK;
}

void ts_nonlinear_lut_clear(ts_nonlinear_lut_t *lut)
{
    if (!lut)
        return;
    ts_free(lut->bounds);
    ts_free(lut->slope);
    ts_free(lut->offset);
    memset(lut, 0, sizeof(*lut));
}

static bool lut_args_ok(int n_seg, int n_br, int index_bits)
{
    return n_seg >= 1 && n_seg <= TS_NL_LUT_MAX_SEG && n_br >= 1 && n_br <= TS_NL_LUT_MAX_BR &&
           (long)n_seg * n_br <= TS_NL_LUT_MAX_ENTRIES && index_bits >= 0 && index_bits <= 30;
}

ts_status_t ts_nonlinear_lut_init_bounds(ts_nonlinear_lut_t *lut, ts_nonlinear_func_t f, void *ctx,
                                         const double *bounds, int n_seg, int n_br, int index_bits)
{
    if (!lut)
        return TS_EINVAL;
    memset(lut, 0, sizeof(*lut));
    if (!f || !bounds || !lut_args_ok(n_seg, n_br, index_bits))
        return TS_EINVAL;
    for (int s = 0; s <= n_seg; s++)
        if (!isfinite(bounds[s]) || (s > 0 && !(bounds[s] > bounds[s - 1])))
            return TS_EINVAL;
    size_t m = (size_t)n_seg * (size_t)n_br;
    lut->bounds = ts_malloc(sizeof(double) * (size_t)(n_seg + 1));
    lut->slope = ts_malloc(sizeof(double) * m);
    lut->offset = ts_malloc(sizeof(double) * m);
    if (!lut->bounds || !lut->slope || !lut->offset) {
        ts_nonlinear_lut_clear(lut);
        return TS_ENOMEM;
    }
    memcpy(lut->bounds, bounds, sizeof(double) * (size_t)(n_seg + 1));
    lut->n_seg = n_seg;
    lut->n_br = n_br;
    lut->index_bits = index_bits;
    lut->lo = bounds[0];
    lut->hi = bounds[n_seg];
    int samples = n_br > 4096 ? 4 : FIT_SAMPLES;
    for (int s = 0; s < n_seg; s++) {
        double u = bounds[s], v = bounds[s + 1];
        for (int i = 0; i < n_br; i++) {
            double a = u + (v - u) * i / n_br;
            double b = i + 1 == n_br ? v : u + (v - u) * (i + 1) / n_br;
            size_t j = (size_t)s * (size_t)n_br + (size_t)i;
            if (isnan(fit_line(f, ctx, a, b, samples, &lut->slope[j], &lut->offset[j], NULL))) {
                ts_nonlinear_lut_clear(lut);
                return TS_ERANGE;
            }
        }
    }
    return TS_OK;
}

ts_status_t ts_nonlinear_lut_init(ts_nonlinear_lut_t *lut, ts_nonlinear_func_t f, void *ctx,
                                  double lo, double hi, int n_seg, int n_br,
                                  ts_nonlinear_bounds_t bounds, int index_bits)
{
    if (!lut)
        return TS_EINVAL;
    memset(lut, 0, sizeof(*lut));
    if (!f || !isfinite(lo) || !isfinite(hi) || !(lo < hi) || !lut_args_ok(n_seg, n_br, index_bits))
        return TS_EINVAL;
    double t[TS_NL_LUT_MAX_SEG + 1];
    switch (bounds) {
    case TS_NL_BOUNDS_UNIFORM:
        for (int s = 0; s <= n_seg; s++)
            t[s] = lo + (hi - lo) * s / n_seg;
        break;
    case TS_NL_BOUNDS_LOG:
        if (lo <= 0)
            return TS_EINVAL;
        for (int s = 0; s <= n_seg; s++)
            t[s] = lo * pow(hi / lo, (double)s / n_seg);
        break;
    case TS_NL_BOUNDS_AUTO:
    case TS_NL_BOUNDS_AUTO_REL: {
        ts_status_t st =
            place_auto(f, ctx, lo, hi, n_seg, n_br, bounds == TS_NL_BOUNDS_AUTO_REL, t);
        if (st != TS_OK)
            return st;
        break;
    }
    default:
        return TS_EINVAL;
    }
    t[0] = lo;
    t[n_seg] = hi;
    return ts_nonlinear_lut_init_bounds(lut, f, ctx, t, n_seg, n_br, index_bits);
}

int ts_nonlinear_lut_segment(const ts_nonlinear_lut_t *lut, double x)
{
    int s = 0;
    for (int j = 1; j < lut->n_seg; j++)
        s += x >= lut->bounds[j];
    return s;
}

int ts_nonlinear_lut_interval(const ts_nonlinear_lut_t *lut, int segment, double x)
{
    double u = lut->bounds[segment], v = lut->bounds[segment + 1];
    double t = (x - u) / (v - u);
    if (lut->index_bits > 0)
        t = ldexp(nearbyint(ldexp(t, lut->index_bits)), -lut->index_bits);
    t = floor(t * lut->n_br);
    if (!(t >= 0.0))
        return 0; /* also NaN */
    if (t >= lut->n_br)
        return lut->n_br - 1;
    return (int)t;
}

double ts_nonlinear_lut_eval(const ts_nonlinear_lut_t *lut, double x)
{
    int s = ts_nonlinear_lut_segment(lut, x);
    int i = ts_nonlinear_lut_interval(lut, s, x);
    size_t j = (size_t)s * (size_t)lut->n_br + (size_t)i;
    return lut->slope[j] * x + lut->offset[j];
}

double ts_nonlinear_lut_max_error(const ts_nonlinear_lut_t *lut, ts_nonlinear_func_t f, void *ctx,
                                  int samples)
{
    double mx = 0.0;
    int n = samples < 2 ? 2 : samples;
    for (int s = 0; s < lut->n_seg; s++) {
        double u = lut->bounds[s], v = lut->bounds[s + 1];
        for (int i = 0; i < lut->n_br; i++) {
            double a = u + (v - u) * i / lut->n_br;
            double b = u + (v - u) * (i + 1) / lut->n_br;
            for (int k = 0; k < n; k++) {
                double x = a + (b - a) * k / (n - 1);
                double fx = f(x, ctx);
                if (!isfinite(fx))
                    continue;
                double e = fabs(ts_nonlinear_lut_eval(lut, x) - fx);
                if (!(e <= mx))
                    mx = e;
            }
        }
    }
    return mx;
}

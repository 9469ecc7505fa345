/*
 * core/nonlinear — the approximations of the non-arithmetic primitives of an
 * LLM decode step (exp, 1/x, 1/sqrt(x), SiLU, GELU) and of the composite
 * layers built from them (max-free softmax), as plaintext functions.
 *
 * They are defined once, here, and used by two clients: the ciphertext-aligned
 * simulator in core/llm (ROSETTA section 5.4), which runs a model in plaintext
 * with each primitive replaced by exactly the approximation the encrypted engine
 * evaluates, and the encrypted engine itself, which reads the same fitted
 * objects (Chebyshev coefficients, LUT boundaries, slopes and offsets) to build
 * its CKKS polynomials and TFHE look-up tables. All arithmetic is in double.
 *
 * Methods (ts_nonlinear_method_t), per primitive:
 *   EXACT  the libm function (the reference).
 *   POLY   Chebyshev interpolant of degree `degree` on [lo, hi] (fit at the
 *          degree+1 Chebyshev nodes of the first kind, evaluated by Clenshaw).
 *          For exp, `steps` > 0 means "exp by squaring": the polynomial
 *          approximates exp on [lo/2^steps, hi/2^steps] and its value is squared
 *          `steps` times, the way CKKS evaluates exp on wide ranges.
 *   ITER   iterative methods. 1/x: Goldschmidt, after the optimal linear
 *          scaling x' = 2x/(lo+hi) which maps [lo, hi] into (0, 2); relative
 *          error (|1-x'|)^(2^steps). 1/sqrt(x): Newton y <- y(3 - x y^2)/2
 *          from the constant guess 1/sqrt((lo+hi)/2) when degree = 0 (the
 *          one-node interpolant; slow for x << hi), or from the Chebyshev
 *          interpolant of degree `degree` of 1/sqrt on [lo, hi], which must
 *          satisfy 0 < x y0^2 < 3 there (not checked: outside, the
 *          iteration diverges). With spec.iter = TS_NL_ITER_SCALED (1/sqrt
 *          only): the guess is the polynomial of degree `degree` (Chebyshev
 *          basis) that minimizes the maximum RELATIVE error on [lo, hi]
 *          (Lawson iterations on a grid), and step k is y <- y (a_k - b_k x
 *          y^2) with (a_k, b_k) chosen so that the worst relative error over
 *          the whole interval after the step is the smallest possible (the
 *          range of x y^2 is tracked exactly from step to step: plain Newton
 *          is a_k = 3/2, b_k = 1/2); it converges for any ratio hi / lo,
 *          and ts_nonlinear_approx_rel_bound() gives the guaranteed worst
 *          relative error (e.g. [1, 8192], degree 15: 4 steps 2^-17.5,
 *          5 steps 2^-35). TS_ERANGE when the fitted guess is not positive.
 *          1/x with spec.iter = TS_NL_ITER_SCALED and degree d >= 1: the
 *          guess p is the degree-d polynomial minimizing max |1 - x p(x)| on
 *          [lo, hi], in closed form 1 - x p(x) = T_{d+1}(u) / T_{d+1}(sigma),
 *          u = (hi + lo - 2x) / (hi - lo), sigma = (hi + lo) / (hi - lo)
 *          (the residual polynomial of Chebyshev iteration), so x p(x) lies
 *          in 1 +- e, e = 1 / T_{d+1}(sigma); then Goldschmidt from
 *          a = x p, b = p: relative error e^(2^steps). Against the linear
 *          start's (|1 - x'|)^(2^steps), e shrinks like exp(-2 (d + 1) /
 *          sqrt(hi / lo)) instead of exp(-2 / (hi / lo)) per step: on
 *          [0.02, 256] degree 255 gives e = 0.022 at depth 9 where the
 *          linear start needs 14 steps for 0.077.
 *          exp: (1 + x/2^steps)^(2^steps).
 *   LUT    the adaptive segmented LUT of ROSETTA section 3.1: N_seg segments
 *          [tau_s, tau_{s+1}], each split into N_br equal intervals carrying the
 *          linear function a_si x + b_si; see ts_nonlinear_lut_t.
 *
 * Inputs outside [lo, hi] are not clamped by POLY and ITER (a CKKS polynomial
 * diverges there too); the LUT clamps its indices (segment 0 / last interval of
 * the last segment) and extrapolates the linear piece, as the encrypted
 * comparisons saturate. Callers learn about such inputs from the statistics the
 * simulator keeps, not from an error.
 */
#ifndef TS_NONLINEAR_H
#define TS_NONLINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/convert/convert.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The non-arithmetic primitives (ROSETTA Table 2). */
typedef enum {
    TS_NL_FN_EXP = 0,
    TS_NL_FN_RECIP = 1, /* 1/x */
    TS_NL_FN_RSQRT = 2, /* 1/sqrt(x) */
    TS_NL_FN_SILU = 3,  /* x * sigmoid(x) */
    TS_NL_FN_GELU = 4,  /* GPT-2 tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    TS_NL_FN_COUNT = 5,
} ts_nonlinear_fn_t;

/* "exp", "recip", "rsqrt", "silu", "gelu" (never NULL; "?" for foreign values). */
const char *ts_nonlinear_fn_name(ts_nonlinear_fn_t fn);
/* The exact function in double. */
double ts_nonlinear_exact(ts_nonlinear_fn_t fn, double x);

/* A real function with a context, for fits of arbitrary functions. */
typedef double (*ts_nonlinear_func_t)(double x, void *ctx);

/* ------------------------------------------------------------ Chebyshev */

/*
 * p(x) = sum_{j=0}^{degree} c[j] T_j(t), t = (2x - lo - hi) / (hi - lo).
 * The caller owns the struct; _init allocates coeffs, _clear frees them.
 */
typedef struct ts_nonlinear_cheb {
    double lo, hi;
    int degree;
    double *coeffs; /* degree + 1 */
} ts_nonlinear_cheb_t;

/*
 * Interpolate f at the degree+1 Chebyshev nodes of [lo, hi].
 * [out] cheb: initialized on success (zeroed on failure).
 * Errors: TS_EINVAL (lo >= hi, non-finite bounds, degree < 0 or > 4096),
 * TS_ERANGE (f returned a non-finite value at a node), TS_ENOMEM.
 */
ts_status_t ts_nonlinear_cheb_init(ts_nonlinear_cheb_t *cheb, ts_nonlinear_func_t f, void *ctx,
                                   double lo, double hi, int degree);
void ts_nonlinear_cheb_clear(ts_nonlinear_cheb_t *cheb); /* accepts zeroed or NULL */
/* Clenshaw evaluation (any real x; no clamping). */
double ts_nonlinear_cheb_eval(const ts_nonlinear_cheb_t *cheb, double x);

/* ------------------------------------------------------------ iterations */

/* Goldschmidt 1/x for x in [lo, hi], 0 < lo < hi, after scaling by 2/(lo+hi). */
double ts_nonlinear_goldschmidt_recip(double x, double lo, double hi, int steps);
/* Newton 1/sqrt(x) from the initial guess y0: y <- y (3 - x y^2) / 2, `steps` times. */
double ts_nonlinear_newton_rsqrt(double x, double y0, int steps);
/* An upper bound on the relative error of ts_nonlinear_goldschmidt_recip on [lo, hi]. */
double ts_nonlinear_goldschmidt_bound(double lo, double hi, int steps);

/* ------------------------------------------------------------ segmented LUT */

/* Placement of the segment boundaries tau_0 < ... < tau_{N_seg}. */
typedef enum {
    TS_NL_BOUNDS_UNIFORM = 0,  /* equal widths (ROSETTA: SiLU, GELU) */
    TS_NL_BOUNDS_LOG = 1,      /* geometric, needs lo > 0 (ROSETTA: 1/x, 1/sqrt(x)) */
    TS_NL_BOUNDS_AUTO = 2,     /* minimize the max absolute error (equal-error search) */
    TS_NL_BOUNDS_AUTO_REL = 3, /* minimize the max error relative to |f| (1/x, 1/sqrt(x)) */
} ts_nonlinear_bounds_t;

/*
 * The adaptive segmented LUT (ROSETTA section 3.1). Lookup of x:
 *   1. segment S = #{ j in 1..N_seg-1 : x >= tau_j }            (HomComp sum)
 *   2. t = (x - tau_S) / (tau_{S+1} - tau_S), the position inside the segment
 *      (a plaintext-ciphertext product), rounded to index_bits fractional bits
 *      when index_bits > 0 (the precision left after ModSwitch), then
 *      interval I = floor(t * N_br) clamped to [0, N_br - 1]   (quantized index)
 *   3. f(x) ~= slope[S*N_br + I] * x + offset[S*N_br + I]         (select by PBS)
 * The linear evaluation uses x at full precision (the RLWE copy). Each (S, I)
 * line has the secant slope of f over its interval and the offset that
 * centres the error (the minimax line for convex or concave pieces).
 */
typedef struct ts_nonlinear_lut {
    double lo, hi; /* tau_0, tau_{N_seg} */
    int n_seg, n_br;
    int index_bits;
    double *bounds; /* n_seg + 1 */
    double *slope;  /* n_seg * n_br */
    double *offset; /* n_seg * n_br */
} ts_nonlinear_lut_t;

#define TS_NL_LUT_MAX_SEG     64
#define TS_NL_LUT_MAX_BR      65536
#define TS_NL_LUT_MAX_ENTRIES (1 << 20) /* n_seg * n_br */

/*
 * Build a LUT for f on [lo, hi].
 * [out] lut: initialized on success (zeroed on failure); free with _clear.
 * Errors: TS_EINVAL (lo >= hi, n_seg not in [1, 64], n_br not in [1, 65536],
 * n_seg * n_br > 2^20, index_bits not in [0, 30], LOG bounds with lo <= 0),
 * TS_ERANGE (f non-finite
 * somewhere on the domain), TS_ENOMEM.
 */
ts_status_t ts_nonlinear_lut_init(ts_nonlinear_lut_t *lut, ts_nonlinear_func_t f, void *ctx,
                                  double lo, double hi, int n_seg, int n_br,
                                  ts_nonlinear_bounds_t bounds, int index_bits);
/* Build on caller-chosen boundaries (n_seg + 1 increasing values). Same errors. */
ts_status_t ts_nonlinear_lut_init_bounds(ts_nonlinear_lut_t *lut, ts_nonlinear_func_t f, void *ctx,
                                         const double *bounds, int n_seg, int n_br, int index_bits);
void ts_nonlinear_lut_clear(ts_nonlinear_lut_t *lut); /* accepts zeroed or NULL */
/* Steps 1 and 2 of the lookup for x. */
int ts_nonlinear_lut_segment(const ts_nonlinear_lut_t *lut, double x);
int ts_nonlinear_lut_interval(const ts_nonlinear_lut_t *lut, int segment, double x);
/* The whole lookup. */
double ts_nonlinear_lut_eval(const ts_nonlinear_lut_t *lut, double x);
/*
 * Max absolute error of the LUT against f, over `samples` points per interval
 * of every segment (both ends included). Non-finite f values are skipped.
 */
double ts_nonlinear_lut_max_error(const ts_nonlinear_lut_t *lut, ts_nonlinear_func_t f, void *ctx,
                                  int samples);

/* ------------------------------------------------------- one approximation */

typedef enum {
    TS_NL_EXACT = 0,
    TS_NL_POLY = 1,
    TS_NL_ITER = 2,
    TS_NL_LUT = 3,
    /* One PBS per value, as the TFHE mode evaluates it (a plaintext model):
     * f at the midpoint of x's box among n_br equal boxes of [lo, hi],
     * clamped to the first and last box outside it. */
    TS_NL_PBS = 4,
} ts_nonlinear_method_t;

/* "exact", "poly", "iter", "lut", "pbs". */
const char *ts_nonlinear_method_name(ts_nonlinear_method_t m);

/* ITER variants (1/sqrt(x) and 1/x; see the module overview). */
typedef enum {
    TS_NL_ITER_CLASSIC = 0, /* Chebyshev-interpolant guess, plain Newton / linear start */
    TS_NL_ITER_SCALED = 1,  /* relative-minimax guess (rsqrt: per-step optimal coefficients) */
} ts_nonlinear_iter_t;

/* The documented parameters of one primitive's approximation (plain literal). */
typedef struct ts_nonlinear_spec {
    ts_nonlinear_method_t method;
    double lo, hi;                /* input interval (POLY, ITER, LUT) */
    int degree;                   /* POLY: Chebyshev degree; ITER: degree of the initial guess */
    int steps;                    /* ITER: iterations; POLY exp: squarings */
    int n_seg, n_br;              /* LUT */
    ts_nonlinear_bounds_t bounds; /* LUT */
    int index_bits;               /* LUT: fractional bits of the in-segment position (0 = exact) */
    int iter;                     /* ITER: ts_nonlinear_iter_t (0 = CLASSIC) */
} ts_nonlinear_spec_t;

/*
 * One fitted approximation of one primitive (opaque, one owner).
 * Errors: TS_EINVAL for a spec that does not fit the method (see the module
 * overview; ITER exists for exp, recip and rsqrt only; recip/rsqrt need lo > 0
 * for ITER and LOG bounds), TS_ERANGE, TS_ENOMEM.
 */
typedef struct ts_nonlinear_approx ts_nonlinear_approx_t;

ts_status_t ts_nonlinear_approx_new(ts_nonlinear_fn_t fn, const ts_nonlinear_spec_t *spec,
                                    ts_nonlinear_approx_t **out);
void ts_nonlinear_approx_free(ts_nonlinear_approx_t *a);
double ts_nonlinear_approx_eval(const ts_nonlinear_approx_t *a, double x);
ts_nonlinear_fn_t ts_nonlinear_approx_fn(const ts_nonlinear_approx_t *a);
const ts_nonlinear_spec_t *ts_nonlinear_approx_spec(const ts_nonlinear_approx_t *a);
/* The fitted objects the encrypted engine reads; NULL when the method has none. */
const ts_nonlinear_cheb_t *ts_nonlinear_approx_cheb(const ts_nonlinear_approx_t *a);
const ts_nonlinear_lut_t *ts_nonlinear_approx_lut(const ts_nonlinear_approx_t *a);
/*
 * The guaranteed worst relative error |approx / exact - 1| on [lo, hi] of an
 * ITER approximation in exact arithmetic: Goldschmidt's bound for 1/x; for
 * 1/sqrt(x) the range of x y^2 tracked through the steps (SCALED: the
 * guess's range measured on a dense grid, then exact; CLASSIC: the same
 * recursion with a = 3/2, b = 1/2, +inf when the guess leaves (0, 3)).
 * NAN for other methods and functions.
 */
double ts_nonlinear_approx_rel_bound(const ts_nonlinear_approx_t *a);
/*
 * Step k of an ITER 1/sqrt(x), y <- y (ak - bk x y^2): 3/2 and 1/2 (CLASSIC)
 * or the fitted per-step coefficients (SCALED). TS_EINVAL for another
 * approximation or k outside [0, steps).
 */
ts_status_t ts_nonlinear_approx_rsqrt_step(const ts_nonlinear_approx_t *a, int k, double *ak,
                                           double *bk);
/*
 * Max and mean absolute error against the exact function on a uniform grid of
 * `samples` (>= 2) points of [lo, hi] (both ends included).
 */
void ts_nonlinear_approx_error(const ts_nonlinear_approx_t *a, double lo, double hi, int samples,
                               double *max_abs, double *mean_abs);

/* ------------------------------------------------------------ statistics */

/*
 * Running error statistics of one primitive: every evaluation made through
 * ts_nonlinear_approx_eval_stats() compares the approximation with the exact
 * function on the same input. The caller owns the struct (zero it to start).
 */
typedef struct ts_nonlinear_stats {
    uint64_t count;
    uint64_t out_of_range; /* inputs outside the spec's [lo, hi] */
    double max_abs_err, sum_abs_err;
    double max_rel_err;    /* |approx - exact| / max(|exact|, 1e-30) */
    double in_min, in_max; /* observed inputs (valid when count > 0) */
} ts_nonlinear_stats_t;

/* Record one evaluation (approx at x gave y; exact is recomputed). */
void ts_nonlinear_stats_add(ts_nonlinear_stats_t *st, ts_nonlinear_fn_t fn, double x, double y,
                            double lo, double hi);
/* Merge src into dst. */
void ts_nonlinear_stats_merge(ts_nonlinear_stats_t *dst, const ts_nonlinear_stats_t *src);
/* Evaluate a (NULL = exact fn) and, when st != NULL, record the error. */
double ts_nonlinear_approx_eval_stats(const ts_nonlinear_approx_t *a, ts_nonlinear_fn_t fn,
                                      double x, ts_nonlinear_stats_t *st);

/* ---------------------------------------------------------------- softmax */

/*
 * Max-free softmax by normalize-and-square (ROSETTA section 2.3):
 *   y_i = exp(z_i / 2^k);  then k times:  y_i <- y_i^2 * recip(sum_j y_j^2)
 * which equals softmax(z) exactly when exp and recip are exact (k >= 1).
 * With k = 0 it is y_i = exp(z_i) * recip(sum_j exp(z_j)).
 * exp_a / recip_a: the approximations to use (NULL = exact).
 * [out] out: n values; may alias z. Errors: TS_EINVAL (n == 0, k < 0 or > 30).
 */
ts_status_t ts_nonlinear_softmax_maxfree(const double *z, size_t n, int k,
                                         const ts_nonlinear_approx_t *exp_a,
                                         const ts_nonlinear_approx_t *recip_a, double *out);
/* The same, recording exp and recip errors into exp_st / recip_st (each may be NULL). */
ts_status_t ts_nonlinear_softmax_maxfree_stats(const double *z, size_t n, int k,
                                               const ts_nonlinear_approx_t *exp_a,
                                               const ts_nonlinear_approx_t *recip_a, double *out,
                                               ts_nonlinear_stats_t *exp_st,
                                               ts_nonlinear_stats_t *recip_st);
/* The reference softmax (max subtracted), in double. out may alias z. */
void ts_nonlinear_softmax_ref(const double *z, size_t n, double *out);

/* ------------------------------------------- encrypted lookup (TFHE side) */

/*
 * The three-step cryptographic lookup of ROSETTA section 3.2 on the small
 * ring of a ts_convert_t (degree N_br, modulus Q), for a cleartext LUT `lut`
 * whose tables it reads unchanged.
 *
 * Input: an RLWE ciphertext [[x]] whose constant coefficient holds
 * u Delta_u, u = (x - lo) / step, step = (hi - lo) / 2^in_bits,
 * Delta_u = Q / 2^(in_bits + 1 + frac_bits), the other coefficients 0
 * (ts_convert_split or ts_convert_lwe_to_rlwe produce this shape).
 *  1. Segment: [[S]] = sum_j HomComp(u >= tau_j), tau_j the smallest integer
 *     u with lo + u step >= bounds[j] (so on the input grid x_q(u) =
 *     lo + u step the comparison is the cleartext one exactly); the LWE of
 *     ExtractLWE([[x]], 0) times 2^frac_bits is HomComp's input.
 *  2. Interval: the accumulator A2(Y) [[x]] + B2(Y) holds in box s (of
 *     n_seg boxes) the value V_s = t_s 2^k + 2^(k-1), t_s = (x - tau_s) /
 *     (tau_{s+1} - tau_s), k = lut->index_bits, at scale Q / 2^(k+2); one
 *     blind rotation by [[S]] selects V_S and ExtractLWE gives [[V]]. Its
 *     ModSwitch to 2 N_br inside the next blind rotations is the rounding
 *     T = round(t 2^k) of the cleartext; boxes of width N_br / 2^(k+1).
 *  3. Linear evaluation, two rounds of selection: per segment s the
 *     accumulator A3_s(Y) [[x]] + B3_s(Y) holds in box j (T = j - 2^(k-1))
 *     the candidate slope[s, I] x + offset[s, I], I = clamp(floor(T / 2^(k -
 *     log2 n_br))), blind rotation by [[V]], Trace; then sum_s Box_s(Y)
 *     Tr(res_s) is rotated by [[S]], Trace. Output: RLWE with y = f(x) at
 *     scale Delta_y = Q / (4 out_max) in the constant coefficient.
 * Cost: n_seg - 1 HomComp, n_seg + 1 plaintext products, n_seg + 2 blind
 * rotations, n_seg + 1 traces (the paper's count).
 *
 * Segment decisions are made on the input grid (u rounded to an integer):
 * for an input off the grid between a LUT boundary and its decision point
 * lo + (tau_j - 1/2) step the neighbouring segment's end line is
 * extrapolated; ts_nonlinear_slots therefore moves the boundaries onto the
 * decision points first (see there). TS_ERANGE when a segment holds no grid
 * threshold (tau not increasing: a finer grid is needed).
 * Requirements (TS_EINVAL otherwise): n_br a power of two, index_bits >=
 * log2 n_br, box widths N_br / 2^(index_bits+1) and N_br / n_seg at least
 * 8 coefficients, in_bits <= ts_tfhe_homcomp_max_bits, in_bits + frac_bits
 * + 1 < log2 Q - 8. The encrypted (S, I) equals the cleartext
 * ts_nonlinear_lut_segment / _interval at x_q(u) except where t 2^k is
 * within the blind-rotation noise of a rounding tie (k + 1 fractional
 * bits: never at segment or interval boundaries, which sit on exact
 * multiples).
 */
typedef struct ts_nonlinear_lut_he ts_nonlinear_lut_he_t;

ts_status_t ts_nonlinear_lut_he_new(ts_convert_t *cv, const ts_nonlinear_lut_t *lut, int in_bits,
                                    int frac_bits, double out_max, ts_nonlinear_lut_he_t **out);
void ts_nonlinear_lut_he_free(ts_nonlinear_lut_he_t *he);
/* The input grid x_q(u) = lo + u step, and the two scales. */
double ts_nonlinear_lut_he_grid(const ts_nonlinear_lut_he_t *he, double u);
double ts_nonlinear_lut_he_in_scale(const ts_nonlinear_lut_he_t *he);
double ts_nonlinear_lut_he_out_scale(const ts_nonlinear_lut_he_t *he);
/* Client helper: [[x]] for a real x (u = (x - lo) / step, not rounded). */
ts_status_t ts_nonlinear_lut_he_encrypt(const ts_nonlinear_lut_he_t *he,
                                        const ts_tfhe_rlwe_key_t *key, double x, ts_prng_t *prng,
                                        ts_tfhe_rlwe_t *out);
/*
 * y = LUT(x). seg / val (optional, big LWEs of the convert's TFHE params)
 * receive [[S]] (encoded as ts_tfhe_encode(Q, S, n_seg)) and [[V]] (V at
 * scale Q / 2^(k+2)), for tests and statistics.
 */
ts_status_t ts_nonlinear_lut_he_eval(ts_nonlinear_lut_he_t *he, const ts_tfhe_rlwe_t *x,
                                     ts_tfhe_rlwe_t *y, ts_tfhe_lwe_t *seg, ts_tfhe_lwe_t *val);
/* Decode a constant coefficient phase (centered) at the output scale. */
double ts_nonlinear_lut_he_decode(const ts_nonlinear_lut_he_t *he, uint64_t phase);

/* ------------------------------------------ the CKKS and all-TFHE baselines */

/*
 * Evaluate the approximation `a` on a CKKS ciphertext, slot-wise, exactly as
 * ts_nonlinear_approx_eval defines it: POLY by ts_ckks_eval_chebyshev on the
 * same coefficients (exp: then `steps` squarings); ITER recip by Goldschmidt
 * (x' = 2x/(lo+hi), f = 2 - a, a *= f, b *= f; result b * 2/(lo+hi)); ITER
 * rsqrt by the steps y <- y (a_k - b_k x y^2) from the approximation's
 * guess (CLASSIC: a_k = 3/2, b_k = 1/2), computed on the pre-scaled
 * x' = x / hi and y' = y sqrt(lo) (both O(1), so that a bootstrap of
 * either stays inside EvalMod's range; the input itself is scaled first,
 * while it still has a level, and is never bootstrapped at its own
 * magnitude); ITER exp by (1 + x/2^steps)^(2^steps).
 * LUT and EXACT are refused (TS_EINVAL). When a step finds fewer than 3
 * levels left and bt != NULL, the running ciphertexts are bootstrapped
 * (ts_boot_bootstrap); without bt that is TS_ELEVEL. The evaluator needs
 * the relinearization key (and the bootstrapping keys when bt is given).
 * out may alias in.
 */
ts_status_t ts_nonlinear_ckks_eval(ts_ckks_evaluator_t *ev, const ts_boot_t *bt,
                                   const ts_nonlinear_approx_t *a, const ts_ckks_ciphertext_t *in,
                                   ts_ckks_ciphertext_t *out);

/*
 * The all-TFHE baseline (one plain PBS per element, PEGASUS-style single
 * LUT): the input is a big LWE encoding u = floor((x - lo) / (hi - lo) p) in
 * [0, p) as ts_tfhe_encode(Q, u, p); the output encodes f at the midpoint of
 * interval u, at scale Q / (4 out_max) (decode with ts_nonlinear_pbs_decode).
 */
typedef struct ts_nonlinear_pbs ts_nonlinear_pbs_t;

ts_status_t ts_nonlinear_pbs_new(const ts_tfhe_params_t *tp, ts_nonlinear_fn_t fn, double lo,
                                 double hi, uint64_t p, double out_max, ts_nonlinear_pbs_t **out);
void ts_nonlinear_pbs_free(ts_nonlinear_pbs_t *pb);
/* Client helper: the input LWE for x under the extracted key (big LWE). */
ts_status_t ts_nonlinear_pbs_encrypt(const ts_nonlinear_pbs_t *pb, const ts_tfhe_lwe_key_t *key,
                                     double x, double sigma, ts_prng_t *prng, ts_tfhe_lwe_t *out);
ts_status_t ts_nonlinear_pbs_eval(ts_nonlinear_pbs_t *pb, ts_tfhe_evaluator_t *ev,
                                  const ts_tfhe_lwe_t *in, ts_tfhe_lwe_t *out);
double ts_nonlinear_pbs_decode(const ts_nonlinear_pbs_t *pb, uint64_t phase);
/* The cleartext value of the baseline at x (for error statistics). */
double ts_nonlinear_pbs_ref(const ts_nonlinear_pbs_t *pb, double x);

/* ------------------------------------------------ look-ups on CKKS slots */

/*
 * f on values held in CKKS slots, end to end through the scheme conversion
 * (ROSETTA sections 3.2-3.3): a CKKS ciphertext holds x_j at the slots
 * slots[0..count); the result holds f(x_j) at the same slots and 0 in every
 * other slot. Two modes:
 *   HYBRID  the three-step segmented lookup (ts_nonlinear_lut_he_*) of the
 *           approximation's LUT (method LUT required), input grid of
 *           2^in_bits points on [lo, hi);
 *   TFHE    the all-TFHE (PEGASUS-like) baseline: one plain PBS per value
 *           (ts_nonlinear_pbs_*, p = 2^in_bits intervals on [lo, hi), the
 *           exact f at each interval's midpoint); only fn, lo and hi of the
 *           approximation are read.
 * Pipeline of ts_nonlinear_slots_eval:
 *   1. pre-scale in CKKS, one level: v = c x + b (a constant product at
 *      const_scale q_level, exact return to the input's scale S, and a
 *      constant add) so that after SlotToCoeff the coefficient v S is the
 *      TFHE input: HYBRID u Delta_u, u = (x - lo) / step (the lut_he input
 *      convention, Delta_u = Q / 2^(in_bits + 1 + frac_bits)); TFHE
 *      (t - 1/2) Q / 2p, t = (x - lo) / (hi - lo) p (half a box down, so
 *      the PBS's rounding is the floor of the baseline's index);
 *   2. ts_convert_split: one SlotToCoeff (stc_levels), drop to level 0, one
 *      RingSwitch, X^-c and Trace per value;
 *   3. per value the lookup (HYBRID) or PBS + LWE-to-RLWE (TFHE), the
 *      values spread over min(count, T) threads, T the thread count of the
 *      CKKS ring's backend (TS_THREADS or one per core for the default CPU
 *      backend; 1 for a GPU backend), each thread with its own TFHE
 *      evaluator and scratch (ts_convert_worker_t; keys shared), the
 *      output bit-identical to one value after the other (see slots.c); the
 *      outputs hold f at scale Delta_y = q0 2^-ratio_bits / out_max, so
 *      |coefficient| / q0 <= 2^-ratio_bits, inside the range where
 *      ModRecover's sine (q0 / 2 pi) sin(2 pi c / q0) is invertible. The
 *      sine is pre-compensated: the tables hold g(y) = asin(k y) / k,
 *      k = 2 pi Delta_y / q0 (HYBRID: each line replaced by the secant of
 *      g over its interval), so the slots read y itself. What is left is
 *      the TFHE output noise, which ModRecover scales by 2^ratio_bits: on
 *      the insecure test presets (N_br = 2^10, Q = q0 = 2^60, BR gadget
 *      2^12 x 3) the measured slot error is 2^-19 to 2^-22 of out_max at
 *      the default ratio_bits = 8 (tests/unit/test_nonlinear_slots.c);
 *      HYBRID also quantizes the lines' slopes to integers times
 *      Delta_u / (step Delta_y) (a relative 2^(ratio_bits - frac_bits - 2)
 *      of out_max at most);
 *   4. ts_convert_merge: shift back and sum, one RingSwitch up, ModRecover
 *      to level + 1;
 *   5. one constant product (1 at scale out_scale q_{level+1} / Delta_y)
 *      and a rescale: out at `level`, scale out_scale.
 * HYBRID computes the approximation's LUT refitted on boundaries moved to
 * the look-up's segment decision points lo + (tau_j - 1/2) step (step =
 * (hi - lo) / 2^in_bits, tau_j the grid threshold of boundary j), so that
 * inputs off the grid get their own segment's line (before, an input
 * between a boundary and its decision point got the neighbour's end line
 * extrapolated: the LayerNorm [1, 8192] outlier); ts_nonlinear_slots_ref
 * is that refitted LUT. TS_ERANGE when two boundaries share a grid cell.
 * Inputs must lie in [lo, hi) (HYBRID: u in [0, 2^in_bits); outside, the
 * comparisons and the PBS wrap around: no clamping). On the input grid
 * (ts_nonlinear_slots_grid) the result equals ts_nonlinear_slots_ref up to
 * the noise above, except that near an interval rounding tie (HYBRID) or a
 * PBS box edge (TFHE, within the CKKS noise) the neighbouring entry may be
 * chosen; off the grid, HYBRID segment decisions use u rounded by HomComp.
 *
 * Keys. The ts_boot_t must be STC_FIRST with the input's slot count (1 <<
 * log_slots); real_only is recommended (values are real). The CKKS
 * evaluator needs what ts_boot_keygen generates for that configuration
 * (relinearization, conjugation and the rotation keys of
 * ts_boot_rotation_steps); the ts_convert_t holds the conversion keys
 * (ksk_down, ksk_up, the Galois keys of the small ring and the TFHE
 * bootstrapping and key-switching keys). Every slot must map to the
 * subring of the RingSwitch: ts_convert_slot_coeff(log N, log_slots,
 * N_br, j, false) >= 0 (all slots when N_br = N; at N = 2^12 with N_br =
 * 2^10 and 2048 slots, exactly the slots j < 512); TS_ERANGE otherwise.
 *
 * Levels: the input needs level >= ts_nonlinear_slots_in_level() (StC
 * budget + 1; a higher level is dropped); the output `level` is at most
 * ts_nonlinear_slots_max_level() (the ModRecover level - 1), -1 = that.
 *
 * Cost: one StC, one RingSwitch down, count Traces, per value the lookup
 * (HYBRID: n_seg - 1 HomComp, n_seg + 2 blind rotations, n_seg + 1
 * Traces; TFHE: one PBS and one Trace), one RingSwitch up, one ModRecover.
 *
 * Objects: borrows cv, bt and the approximation (all must outlive it);
 * not thread-safe (the convert's scratch and TFHE evaluator are shared):
 * one ts_nonlinear_slots_eval at a time per cv (it runs its own threads).
 */
typedef enum {
    TS_NL_SLOTS_HYBRID = 0,
    TS_NL_SLOTS_TFHE = 1,
} ts_nonlinear_slots_mode_t;

/* "hybrid", "tfhe". */
const char *ts_nonlinear_slots_mode_name(ts_nonlinear_slots_mode_t mode);

typedef struct ts_nonlinear_slots_cfg {
    ts_nonlinear_slots_mode_t mode;
    int in_bits;      /* HYBRID: input grid 2^in_bits (<= HomComp's max bits); TFHE: log2 p */
    int frac_bits;    /* HYBRID: lut_he's frac_bits (small = larger Delta_u, less noise) */
    double out_max;   /* bound on |f| on [lo, hi); 0: measured from the approximation */
    int ratio_bits;   /* |output coefficient| <= q0 2^-ratio_bits, 2..30 */
    double out_scale; /* scale of the result; 0: the parameters' default scale */
} ts_nonlinear_slots_cfg_t;

/* Defaults: HYBRID in_bits 10, TFHE in_bits 5 (p = 32), frac_bits 24, ratio_bits 8. */
void ts_nonlinear_slots_cfg_default(ts_nonlinear_slots_mode_t mode, ts_nonlinear_slots_cfg_t *cfg);

typedef struct ts_nonlinear_slots ts_nonlinear_slots_t;

/*
 * [out] out: the object for approximation `a` (HYBRID: method LUT).
 * Errors: TS_EINVAL (bad cfg, bt not STC_FIRST, HYBRID without a LUT),
 * TS_ERANGE / TS_EINVAL from ts_nonlinear_lut_he_new (grid too fine for
 * HomComp, LUT boxes too narrow for N_br), TS_ENOMEM.
 */
ts_status_t ts_nonlinear_slots_new(ts_convert_t *cv, const ts_boot_t *bt,
                                   const ts_nonlinear_approx_t *a,
                                   const ts_nonlinear_slots_cfg_t *cfg, ts_nonlinear_slots_t **out);
void ts_nonlinear_slots_free(ts_nonlinear_slots_t *ns); /* accepts NULL */
/*
 * out = f at slots[0..count) of in (distinct, count <= N_br), 0 elsewhere,
 * at `level` (-1: ts_nonlinear_slots_max_level) and scale cfg.out_scale.
 * out may alias in. Errors: TS_EINVAL, TS_EMISMATCH (slot count),
 * TS_ELEVEL, TS_ERANGE (slot off the subring), TS_ESCALE, and those of the
 * steps (TS_ENOKEY without the keys above).
 */
ts_status_t ts_nonlinear_slots_eval(ts_nonlinear_slots_t *ns, ts_ckks_evaluator_t *ev,
                                    const ts_ckks_ciphertext_t *in, const size_t *slots,
                                    size_t count, int level, ts_ckks_ciphertext_t *out);
/* The minimum input level and the maximum output level. */
int ts_nonlinear_slots_in_level(const ts_nonlinear_slots_t *ns);
int ts_nonlinear_slots_max_level(const ts_nonlinear_slots_t *ns);
/* The out_max in use (cfg's or measured). */
double ts_nonlinear_slots_out_max(const ts_nonlinear_slots_t *ns);
/* Grid point u (HYBRID: lo + u step; TFHE: the midpoint of interval u). */
double ts_nonlinear_slots_grid(const ts_nonlinear_slots_t *ns, double u);
/* The cleartext value the encrypted path computes at x (LUT or PBS baseline). */
double ts_nonlinear_slots_ref(const ts_nonlinear_slots_t *ns, double x);

/* ------------------------------------------------------ composite layers */

/*
 * Softmax (max-free, normalize-and-square, ROSETTA section 2.3), RMSNorm
 * and LayerNorm on n values in slots [0, n) of a CKKS ciphertext (every
 * other slot 0), in three modes that differ only in the non-arithmetic
 * primitives (the arithmetic is CKKS in all of them):
 *   HYBRID  ROSETTA: exp by its Chebyshev series in CKKS (SIMD over the n
 *           slots); 1/x of the softmax sums and 1/sqrt(x) of the norms by
 *           the segmented LUT on the one scalar (ts_nonlinear_slots, slot 0,
 *           then broadcast by rotations);
 *   CKKS    pure CKKS: exp as above, 1/x and 1/sqrt(x) by
 *           ts_nonlinear_ckks_eval (Goldschmidt / Newton for ITER
 *           approximations) with the sum in every slot, bootstrapping with
 *           bt_boot when levels run out;
 *   TFHE    PEGASUS-like: exp by one PBS per element (n look-ups through
 *           the conversion) and the inverses by one PBS on the scalar.
 * Definitions (the plaintext mirror ts_nonlinear_layer_ref computes exactly
 * this with the same approximations):
 *   softmax, k >= 1: y = exp(z / 2^k); round 0: y <- y^2 (1/n) inv(sum y^2 / n),
 *     rounds 1..k-1: y <- y^2 inv2(sum y^2) (inv = inv_a, inv2 = inv2_a:
 *     1/x on [e^{-2M/2^k}, e^{2M/2^k}] and on [1/n, 1] for inputs in
 *     [-M, M]; k = 0: y = exp(z) (1/n) inv(sum y / n)). Equals
 *     ts_nonlinear_softmax_maxfree with exact primitives.
 *   RMSNorm: y = x inv(sum x^2 / n + eps); LayerNorm: the same on
 *     x - mean(x). inv_a approximates 1/sqrt(x). No learned gain or bias
 *     (a plaintext product the caller applies).
 * HYBRID needs LUT inverses (method LUT); CKKS needs CKKS-evaluable
 * inverses (POLY or ITER); HYBRID and CKKS need exp_a of method POLY on
 * x = z / 2^k; TFHE reads only fn and range of each approximation (PBS at
 * the interval midpoints, p = 2^slots_cfg.in_bits).
 * Keys: relinearization, the rotations of ts_nonlinear_layer_rotation_steps,
 * bt_boot's keys (any order; NULL: TS_ELEVEL when levels run out) and, for
 * HYBRID/TFHE, bt_stc (STC_FIRST) with its keys and the conversion keys of
 * cv (see ts_nonlinear_slots). TFHE mode's n slots must all lie on the
 * RingSwitch subring (ts_convert_slot_coeff).
 * Objects: borrows params, cv, the bootstrappers and the approximations.
 */
typedef enum {
    TS_NL_LAYER_HYBRID = 0,
    TS_NL_LAYER_CKKS = 1,
    TS_NL_LAYER_TFHE = 2,
} ts_nonlinear_layer_mode_t;

typedef enum {
    TS_NL_LAYER_SOFTMAX = 0,
    TS_NL_LAYER_RMSNORM = 1,
    TS_NL_LAYER_LAYERNORM = 2,
} ts_nonlinear_layer_kind_t;

const char *ts_nonlinear_layer_mode_name(ts_nonlinear_layer_mode_t mode); /* "hybrid", ... */
const char *ts_nonlinear_layer_kind_name(ts_nonlinear_layer_kind_t kind); /* "softmax", ... */

typedef struct ts_nonlinear_layer_spec {
    ts_nonlinear_layer_kind_t kind;
    ts_nonlinear_layer_mode_t mode;
    size_t n;   /* elements: 2.., rounded up to a power of two <= slots for the rotations */
    int k;      /* softmax: normalize-and-square rounds, 0..30 */
    double eps; /* norms: added to the mean square / variance */
    const ts_nonlinear_approx_t *exp_a;  /* softmax: exp on x = z / 2^k */
    const ts_nonlinear_approx_t *inv_a;  /* softmax round 0: 1/x; norms: 1/sqrt(x) */
    const ts_nonlinear_approx_t *inv2_a; /* softmax rounds >= 1: 1/x on [1/n, 1] */
    ts_nonlinear_slots_cfg_t slots_cfg;  /* HYBRID/TFHE look-ups (mode set by the layer) */
} ts_nonlinear_layer_spec_t;

typedef struct ts_nonlinear_layer ts_nonlinear_layer_t;

/* The rotation steps the layer needs (left > 0, right < 0), *count in/out as
 * for ts_boot_rotation_steps (steps NULL: only the count; TS_ERANGE when short). */
ts_status_t ts_nonlinear_layer_rotation_steps(const ts_nonlinear_layer_spec_t *spec, size_t slots,
                                              int64_t *steps, size_t *count);
/* Errors: TS_EINVAL (spec), those of ts_nonlinear_slots_new, TS_ENOMEM. */
ts_status_t ts_nonlinear_layer_new(ts_ckks_params_t *params, const ts_nonlinear_layer_spec_t *spec,
                                   ts_convert_t *cv, const ts_boot_t *bt_stc,
                                   const ts_boot_t *bt_boot, ts_nonlinear_layer_t **out);
void ts_nonlinear_layer_free(ts_nonlinear_layer_t *ly); /* accepts NULL */
/* out = the layer on in's slots [0, n) (0 elsewhere). out may alias in. */
ts_status_t ts_nonlinear_layer_eval(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                                    const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out);
/* The plaintext mirror: out[0..n) from in[0..n) with the same approximations. */
ts_status_t ts_nonlinear_layer_ref(const ts_nonlinear_layer_t *ly, const double *in, double *out);

#ifdef __cplusplus
}
#endif

#endif /* TS_NONLINEAR_H */

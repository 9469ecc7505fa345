/*
 * Composite layers on CKKS ciphertexts in three modes (see nonlinear.h,
 * "composite layers"): max-free softmax (ROSETTA section 2.3), RMSNorm and
 * LayerNorm. The arithmetic is CKKS in every mode; the modes differ in how
 * the non-arithmetic primitives are evaluated.
 */
#include <math.h>
#include <string.h>

#include "core/nonlinear/nonlinear.h"
#include "core/nonlinear/nonlinear_int.h"

struct ts_nonlinear_layer {
    ts_nonlinear_layer_spec_t spec;
    ts_ckks_params_t *params;
    size_t slots;
    ts_convert_t *cv;
    const ts_boot_t *bt_stc, *bt_boot;
    ts_nonlinear_slots_t *ns_exp;    /* TFHE: exp per element */
    ts_nonlinear_slots_t *ns_inv[2]; /* HYBRID, TFHE: the inverses (round 0, later rounds) */
    ts_ckks_encoder_t *enc;          /* masks */
};

const char *ts_nonlinear_layer_mode_name(ts_nonlinear_layer_mode_t mode)
{
    switch (mode) {
    case TS_NL_LAYER_HYBRID:
        return "hybrid";
    case TS_NL_LAYER_CKKS:
        return "ckks";
    case TS_NL_LAYER_TFHE:
        return "tfhe";
    }
    return "?";
}

const char *ts_nonlinear_layer_kind_name(ts_nonlinear_layer_kind_t kind)
{
    switch (kind) {
    case TS_NL_LAYER_SOFTMAX:
        return "softmax";
    case TS_NL_LAYER_RMSNORM:
        return "rmsnorm";
    case TS_NL_LAYER_LAYERNORM:
        return "layernorm";
    }
    return "?";
}

void ts_nonlinear_layer_free(ts_nonlinear_layer_t *ly)
{
    if (!ly)
        return;
    ts_nonlinear_slots_free(ly->ns_exp);
    ts_nonlinear_slots_free(ly->ns_inv[0]);
    ts_nonlinear_slots_free(ly->ns_inv[1]);
    ts_ckks_encoder_free(ly->enc);
    ts_free(ly);
}

/* the window of the rotations: n rounded up to a power of two (slots [n, np2) hold zeros) */
static size_t next_pow2(size_t n)
{
    size_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

ts_status_t ts_nonlinear_layer_rotation_steps(const ts_nonlinear_layer_spec_t *spec, size_t slots,
                                              int64_t *steps, size_t *count)
{
    if (!spec || !count || spec->n < 2 || spec->n > slots)
        return TS_EINVAL;
    const size_t np2 = next_pow2(spec->n);
    if (np2 > slots)
        return TS_EINVAL;
    size_t c = 0, cap = steps ? *count : 0;
    for (size_t s = 1; s < np2; s *= 2) {
        if (c < cap)
            steps[c] = (int64_t)s;
        c++;
        if (c < cap)
            steps[c] = -(int64_t)s;
        c++;
    }
    if (2 * np2 <= slots) {
        if (c < cap)
            steps[c] = -(int64_t)np2;
        c++;
    }
    bool fits = steps && c <= *count;
    *count = c;
    return !steps || fits ? TS_OK : TS_ERANGE;
}

ts_status_t ts_nonlinear_layer_new(ts_ckks_params_t *params, const ts_nonlinear_layer_spec_t *spec,
                                   ts_convert_t *cv, const ts_boot_t *bt_stc,
                                   const ts_boot_t *bt_boot, ts_nonlinear_layer_t **out)
{
    if (!params || !spec || !out)
        return TS_EINVAL;
    *out = NULL;
    size_t slots = ts_ckks_params_slots(params);
    if (spec->n < 2 || next_pow2(spec->n) > slots || !spec->inv_a)
        return TS_EINVAL;
    bool softmax = spec->kind == TS_NL_LAYER_SOFTMAX;
    if (softmax && (!spec->exp_a || !spec->inv2_a || spec->k < 0 || spec->k > 30))
        return TS_EINVAL;
    if (spec->kind != TS_NL_LAYER_SOFTMAX && spec->kind != TS_NL_LAYER_RMSNORM &&
        spec->kind != TS_NL_LAYER_LAYERNORM)
        return TS_EINVAL;
    if (spec->mode != TS_NL_LAYER_CKKS && (!cv || !bt_stc))
        return TS_EINVAL;
    if (softmax && spec->mode != TS_NL_LAYER_TFHE && !ts_nonlinear_approx_cheb(spec->exp_a))
        return TS_EINVAL; /* exp in CKKS needs its Chebyshev series */
    ts_nonlinear_layer_t *ly = ts_calloc(1, sizeof(*ly));
    if (!ly)
        return TS_ENOMEM;
    ly->spec = *spec;
    ly->params = params;
    ly->slots = slots;
    ly->cv = cv;
    ly->bt_stc = bt_stc;
    ly->bt_boot = bt_boot;
    ts_status_t st = TS_OK;
    if (spec->mode != TS_NL_LAYER_CKKS) {
        ts_nonlinear_slots_cfg_t c = spec->slots_cfg;
        c.mode = spec->mode == TS_NL_LAYER_HYBRID ? TS_NL_SLOTS_HYBRID : TS_NL_SLOTS_TFHE;
        st = ts_nonlinear_slots_new(cv, bt_stc, spec->inv_a, &c, &ly->ns_inv[0]);
        if (st == TS_OK && softmax && spec->k > 0)
            st = ts_nonlinear_slots_new(cv, bt_stc, spec->inv2_a, &c, &ly->ns_inv[1]);
        if (st == TS_OK && softmax && spec->mode == TS_NL_LAYER_TFHE) {
            ts_nonlinear_slots_cfg_t ce = spec->slots_cfg;
            ce.mode = TS_NL_SLOTS_TFHE;
            st = ts_nonlinear_slots_new(cv, bt_stc, spec->exp_a, &ce, &ly->ns_exp);
        }
    }
    if (st == TS_OK)
        st = ts_ckks_encoder_new(params, &ly->enc);
    if (st != TS_OK) {
        ts_nonlinear_layer_free(ly);
        return st;
    }
    *out = ly;
    return TS_OK;
}

/* ------------------------------------------------------------ helpers */

static ts_status_t mask_fill(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                             ts_ckks_ciphertext_t *x, double fill);

/* Bootstrap c (bt_boot) when it has fewer than `need` levels. */
static ts_status_t refresh(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                           ts_ckks_ciphertext_t *c, int need)
{
    if (ts_ckks_ciphertext_level(c) >= need)
        return TS_OK;
    if (!ly->bt_boot)
        return TS_ELEVEL;
    ts_status_t st = ts__nonlinear_bootstrap(ev, ly->bt_boot, c);
    if (st == TS_OK && ts_ckks_ciphertext_level(c) < need)
        st = TS_ELEVEL;
    return st;
}

static ts_status_t mulr(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *b,
                        ts_ckks_ciphertext_t *out)
{
    return ts__nonlinear_mulr(ev, a, b, out);
}

/* out = c x (const_scale q_level: the rescale returns to x's scale exactly). */
static ts_status_t mulc(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *x, double c,
                        ts_ckks_ciphertext_t *out)
{
    ts_status_t st = ts_ckks_mul_const(ev, x, c, 0, out);
    if (st != TS_OK)
        return st;
    return ts_ckks_rescale(ev, out, out);
}

/* x := sum over windows of n slots (left rotations 1, 2, .., n/2): slot 0 holds the total. */
static ts_status_t window_sum(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *x,
                              ts_ckks_ciphertext_t *t, size_t n)
{
    ts_status_t st = TS_OK;
    for (size_t s = 1; s < n && st == TS_OK; s *= 2) {
        st = ts_ckks_rotate(ev, x, (int64_t)s, t);
        if (st == TS_OK)
            st = ts_ckks_add(ev, x, t, x);
    }
    return st;
}

/* x (slots [0, n), zeros elsewhere) := the total in every slot of [0, n) (other slots: junk). */
static ts_status_t sum_all(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                           ts_ckks_ciphertext_t *x, ts_ckks_ciphertext_t *t)
{
    ts_status_t st = TS_OK;
    const size_t np2 = next_pow2(ly->spec.n);
    if (2 * np2 <= ly->slots) {
        st = ts_ckks_rotate(ev, x, -(int64_t)np2, t);
        if (st == TS_OK)
            st = ts_ckks_add(ev, x, t, x);
    }
    if (st == TS_OK)
        st = window_sum(ev, x, t, np2);
    return st;
}

/* x (slot 0, zeros elsewhere) := slot 0 copied to [0, n) (right rotations). */
static ts_status_t broadcast(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *x,
                             ts_ckks_ciphertext_t *t, size_t n)
{
    ts_status_t st = TS_OK;
    for (size_t s = 1; s < n && st == TS_OK; s *= 2) {
        st = ts_ckks_rotate(ev, x, -(int64_t)s, t);
        if (st == TS_OK)
            st = ts_ckks_add(ev, x, t, x);
    }
    return st;
}

/*
 * inv := f(v) in slots [0, n) where v (slots [0, n), zeros elsewhere) is
 * summed first (times `mul` when mul != 1): CKKS: sum in every slot and the
 * CKKS evaluation of `a`; HYBRID/TFHE: the total at slot 0, one look-up
 * (ns), broadcast.
 */
static ts_status_t sum_inv(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                           ts_ckks_ciphertext_t *v, double mul, double add,
                           const ts_nonlinear_approx_t *a, ts_nonlinear_slots_t *ns,
                           ts_ckks_ciphertext_t *t, ts_ckks_ciphertext_t *inv)
{
    ts_status_t st;
    bool ckks = ly->spec.mode == TS_NL_LAYER_CKKS;
    /* the look-up's output level: not above v's (its partner in the next product), so
     * that products rescale by the primes near the scale */
    int out_level = ts_ckks_ciphertext_level(v);
    if ((st = ts_ckks_ciphertext_copy(inv, v)) != TS_OK)
        return st;
    st = ckks ? sum_all(ly, ev, inv, t) : window_sum(ev, inv, t, next_pow2(ly->spec.n));
    if (st == TS_OK && mul != 1.0) {
        if ((st = refresh(ly, ev, inv, 2)) == TS_OK)
            st = mulc(ev, inv, mul, inv);
    }
    if (st == TS_OK && add != 0.0)
        st = ts_ckks_add_const(ev, inv, add, inv);
    if (st != TS_OK)
        return st;
    if (ckks) {
        /* the slots outside [0, n) hold partial sums and zeros, far outside the
         * approximation's interval: set them to its midpoint so that the iterations
         * stay bounded there (large values would spoil every slot through the
         * bootstraps' EvalMod) */
        const ts_nonlinear_spec_t *as = ts_nonlinear_approx_spec(a);
        if ((st = mask_fill(ly, ev, inv, 0.5 * (as->lo + as->hi))) != TS_OK)
            return st;
        return ts_nonlinear_ckks_eval(ev, ly->bt_boot, a, inv, inv);
    }
    if ((st = refresh(ly, ev, inv, ts_nonlinear_slots_in_level(ns))) != TS_OK)
        return st;
    const size_t zero = 0;
    if (out_level > ts_nonlinear_slots_max_level(ns))
        out_level = ts_nonlinear_slots_max_level(ns);
    if ((st = ts_nonlinear_slots_eval(ns, ev, inv, &zero, 1, out_level, inv)) != TS_OK)
        return st;
    return broadcast(ev, inv, t, next_pow2(ly->spec.n));
}

/* x := x times the indicator of slots [0, n) plus `fill` elsewhere (one level; the scale is kept).
 */
static ts_status_t mask_fill(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                             ts_ckks_ciphertext_t *x, double fill);

static ts_status_t mask(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                        ts_ckks_ciphertext_t *x)
{
    return mask_fill(ly, ev, x, 0.0);
}

/* x := x times the indicator of slots [0, n) plus `fill` elsewhere (one level). */
static ts_status_t mask_fill(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                             ts_ckks_ciphertext_t *x, double fill)
{
    ts_status_t st = refresh(ly, ev, x, 1);
    if (st != TS_OK)
        return st;
    int lv = ts_ckks_ciphertext_level(x);
    size_t slots = ts_ckks_ciphertext_slots(x);
    double *m = ts_calloc(slots, sizeof(double));
    ts_ckks_plaintext_t *pt = NULL;
    if (!m)
        return TS_ENOMEM;
    for (size_t i = 0; i < ly->spec.n && i < slots; i++)
        m[i] = 1.0;
    st = ts_ckks_plaintext_new(ly->params, lv, &pt);
    if (st == TS_OK)
        st = ts_ckks_encode_real(ly->enc, m, slots, slots, lv,
                                 (double)ts_ckks_params_q(ly->params, (size_t)lv), pt);
    if (st == TS_OK)
        st = ts_ckks_mul_plain(ev, x, pt, x);
    if (st == TS_OK)
        st = ts_ckks_rescale(ev, x, x);
    if (st == TS_OK && fill != 0.0) {
        lv = ts_ckks_ciphertext_level(x);
        for (size_t i = 0; i < slots; i++)
            m[i] = i < ly->spec.n ? 0.0 : fill;
        ts_ckks_plaintext_free(pt);
        pt = NULL;
        st = ts_ckks_plaintext_new(ly->params, lv, &pt);
        if (st == TS_OK)
            st = ts_ckks_encode_real(ly->enc, m, slots, slots, lv, ts_ckks_ciphertext_scale(x), pt);
        if (st == TS_OK)
            st = ts_ckks_add_plain(ev, x, pt, x);
    }
    ts_ckks_plaintext_free(pt);
    ts_free(m);
    return st;
}

/* ------------------------------------------------------------ layers */

static ts_status_t softmax(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                           ts_ckks_ciphertext_t *y, ts_ckks_ciphertext_t *y2,
                           ts_ckks_ciphertext_t *t, ts_ckks_ciphertext_t *inv)
{
    const ts_nonlinear_layer_spec_t *sp = &ly->spec;
    const int k = sp->k;
    const size_t n = sp->n;
    ts_status_t st;
    /* y = exp(z / 2^k) */
    if (sp->mode == TS_NL_LAYER_TFHE) {
        if ((st = refresh(ly, ev, y, 2)) != TS_OK ||
            (k > 0 && (st = mulc(ev, y, ldexp(1.0, -k), y)) != TS_OK) ||
            (st = refresh(ly, ev, y, ts_nonlinear_slots_in_level(ly->ns_exp))) != TS_OK)
            return st;
        size_t *idx = ts_calloc(n, sizeof(size_t));
        if (!idx)
            return TS_ENOMEM;
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        int lv = ts_ckks_ciphertext_level(y);
        if (lv > ts_nonlinear_slots_max_level(ly->ns_exp))
            lv = ts_nonlinear_slots_max_level(ly->ns_exp);
        st = ts_nonlinear_slots_eval(ly->ns_exp, ev, y, idx, n, lv, y);
        ts_free(idx);
        if (st != TS_OK)
            return st;
    } else {
        const ts_nonlinear_cheb_t *c = ts_nonlinear_approx_cheb(sp->exp_a);
        int depth = 2;
        while ((1 << (depth - 1)) <= c->degree)
            depth++;
        double s = ldexp(1.0, k);
        if ((st = refresh(ly, ev, y, depth + 1)) != TS_OK ||
            (st = ts_ckks_eval_chebyshev(ev, y, c->coeffs, (size_t)c->degree, c->lo * s, c->hi * s,
                                         0, y)) != TS_OK)
            return st;
    }
    /* exp(0) = 1 in the slots outside [0, n): mask them (the TFHE path leaves zeros) */
    if (sp->mode != TS_NL_LAYER_TFHE && (st = mask(ly, ev, y)) != TS_OK)
        return st;
    if (k == 0) {
        if ((st = sum_inv(ly, ev, y, 1.0 / (double)n, 0.0, sp->inv_a, ly->ns_inv[0], t, inv)) !=
                TS_OK ||
            (st = refresh(ly, ev, y, 1)) != TS_OK || (st = refresh(ly, ev, inv, 1)) != TS_OK ||
            (st = mulr(ev, y, inv, y)) != TS_OK)
            return st;
        return mulc(ev, y, 1.0 / (double)n, y);
    }
    for (int r = 0; r < k; r++) {
        if ((st = refresh(ly, ev, y, 2)) != TS_OK ||
            (st = ts_ckks_ciphertext_copy(y2, y)) != TS_OK || (st = mulr(ev, y, y2, y2)) != TS_OK)
            return st;
        /* round 0: 1 / (sum / n) (then times 1/n); later rounds: 1 / sum */
        double mul = r == 0 ? 1.0 / (double)n : 1.0;
        const ts_nonlinear_approx_t *a = r == 0 ? sp->inv_a : sp->inv2_a;
        ts_nonlinear_slots_t *ns = r == 0 ? ly->ns_inv[0] : ly->ns_inv[1];
        if ((st = sum_inv(ly, ev, y2, mul, 0.0, a, ns, t, inv)) != TS_OK)
            return st;
        if ((st = refresh(ly, ev, y2, 2)) != TS_OK || (st = refresh(ly, ev, inv, 2)) != TS_OK ||
            (st = mulr(ev, y2, inv, y)) != TS_OK)
            return st;
        if (r == 0 && (st = mulc(ev, y, 1.0 / (double)n, y)) != TS_OK)
            return st;
    }
    return TS_OK;
}

static ts_status_t norm(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                        ts_ckks_ciphertext_t *x, ts_ckks_ciphertext_t *x2, ts_ckks_ciphertext_t *t,
                        ts_ckks_ciphertext_t *inv)
{
    const ts_nonlinear_layer_spec_t *sp = &ly->spec;
    const size_t n = sp->n;
    ts_status_t st;
    if (sp->kind == TS_NL_LAYER_LAYERNORM) {
        /* x := (x - mean) masked to [0, n) */
        if ((st = refresh(ly, ev, x, 3)) != TS_OK ||
            (st = ts_ckks_ciphertext_copy(x2, x)) != TS_OK ||
            (st = sum_all(ly, ev, x2, t)) != TS_OK ||
            (st = mulc(ev, x2, 1.0 / (double)n, x2)) != TS_OK ||
            (st = ts_ckks_drop_to_level(ev, x, ts_ckks_ciphertext_level(x2), x)) != TS_OK ||
            (st = ts_ckks_sub(ev, x, x2, x)) != TS_OK)
            return st;
        if ((st = mask(ly, ev, x)) != TS_OK)
            return st;
    }
    /* r = rsqrt(sum(x^2) / n + eps), y = x r */
    if ((st = refresh(ly, ev, x, 2)) != TS_OK || (st = ts_ckks_ciphertext_copy(x2, x)) != TS_OK ||
        (st = mulr(ev, x, x2, x2)) != TS_OK)
        return st;
    if ((st = sum_inv(ly, ev, x2, 1.0 / (double)n, sp->eps, sp->inv_a, ly->ns_inv[0], t, inv)) !=
        TS_OK)
        return st;
    if ((st = refresh(ly, ev, x, 1)) != TS_OK || (st = refresh(ly, ev, inv, 1)) != TS_OK)
        return st;
    return mulr(ev, x, inv, x);
}

ts_status_t ts_nonlinear_layer_eval(const ts_nonlinear_layer_t *ly, ts_ckks_evaluator_t *ev,
                                    const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out)
{
    if (!ly || !ev || !in || !out)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(in);
    int top = ts_ckks_params_max_level(p);
    ts_ckks_ciphertext_t *x = NULL, *x2 = NULL, *t = NULL, *inv = NULL;
    ts_status_t st;
    if ((st = ts_ckks_ciphertext_new(p, top, &x)) != TS_OK ||
        (st = ts_ckks_ciphertext_new(p, top, &x2)) != TS_OK ||
        (st = ts_ckks_ciphertext_new(p, top, &t)) != TS_OK ||
        (st = ts_ckks_ciphertext_new(p, top, &inv)) != TS_OK ||
        (st = ts_ckks_ciphertext_copy(x, in)) != TS_OK ||
        (st = ts__nonlinear_drop_to_scale(ev, x)) != TS_OK)
        goto done;
    st = ly->spec.kind == TS_NL_LAYER_SOFTMAX ? softmax(ly, ev, x, x2, t, inv)
                                              : norm(ly, ev, x, x2, t, inv);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_copy(out, x);
done:
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(x2);
    ts_ckks_ciphertext_free(t);
    ts_ckks_ciphertext_free(inv);
    return st;
}

/* ------------------------------------------------------- the plaintext mirror */

static double inv_ref(const ts_nonlinear_layer_t *ly, int which, double s)
{
    const ts_nonlinear_approx_t *a = which ? ly->spec.inv2_a : ly->spec.inv_a;
    if (ly->spec.mode == TS_NL_LAYER_CKKS)
        return ts_nonlinear_approx_eval(a, s);
    return ts_nonlinear_slots_ref(ly->ns_inv[which], s);
}

ts_status_t ts_nonlinear_layer_ref(const ts_nonlinear_layer_t *ly, const double *in, double *out)
{
    if (!ly || !in || !out)
        return TS_EINVAL;
    const ts_nonlinear_layer_spec_t *sp = &ly->spec;
    const size_t n = sp->n;
    if (sp->kind == TS_NL_LAYER_SOFTMAX) {
        double sc = ldexp(1.0, -sp->k);
        for (size_t i = 0; i < n; i++)
            out[i] = sp->mode == TS_NL_LAYER_TFHE ? ts_nonlinear_slots_ref(ly->ns_exp, in[i] * sc)
                                                  : ts_nonlinear_approx_eval(sp->exp_a, in[i] * sc);
        int rounds = sp->k > 0 ? sp->k : 1;
        for (int r = 0; r < rounds; r++) {
            double s = 0;
            for (size_t i = 0; i < n; i++) {
                if (sp->k > 0)
                    out[i] *= out[i];
                s += out[i];
            }
            double v = r == 0 ? inv_ref(ly, 0, s / (double)n) / (double)n : inv_ref(ly, 1, s);
            for (size_t i = 0; i < n; i++)
                out[i] *= v;
        }
        return TS_OK;
    }
    double mean = 0;
    for (size_t i = 0; i < n; i++)
        mean += in[i];
    mean = sp->kind == TS_NL_LAYER_LAYERNORM ? mean / (double)n : 0.0;
    double ms = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = in[i] - mean;
        ms += out[i] * out[i];
    }
    double r = inv_ref(ly, 0, ms / (double)n + sp->eps);
    for (size_t i = 0; i < n; i++)
        out[i] *= r;
    return TS_OK;
}

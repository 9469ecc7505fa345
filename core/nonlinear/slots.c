/*
 * A look-up on CKKS slot values end to end (ROSETTA sections 3.2-3.3; see
 * nonlinear.h, "look-ups on CKKS slots"): affine pre-scale in CKKS,
 * SlotToCoeff + RingSwitch + per-value Trace (ts_convert_split), the
 * three-step segmented lookup or one plain PBS per value, then repacking,
 * RingSwitch up and ModRecover (ts_convert_merge), and a last constant
 * product that puts the result at the requested scale.
 *
 * Threads: step 3 (the look-ups) spreads the values over min(count, T)
 * threads, T the thread count of the CKKS ring's backend (TS_THREADS or one
 * per core for the default CPU backend; 1, i.e. sequential, for a GPU
 * backend), each with its own TFHE evaluator and scratch
 * (ts_convert_worker_t; the keys are shared, never copied), made on first
 * use and kept until the object is freed. Every value goes through the same
 * deterministic steps whichever thread takes it, so the output is
 * bit-identical to the sequential loop. One ts_nonlinear_slots_eval at a
 * time per convert object still (it runs its own threads).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/backend/backend.h"
#include "core/nonlinear/nonlinear.h"
#include "core/nonlinear/nonlinear_int.h"
#include "core/ring/ring.h"

/* Hard cap on the look-up threads of one conversion. */
#define SLOTS_MAX_THREADS 256

/* The state of one more look-up thread (the calling thread uses ns->he and
 * ns->cv's own). */
typedef struct {
    ts_convert_worker_t *cw;
    ts__nonlinear_lut_he_worker_t *hw; /* HYBRID */
    ts_tfhe_lwe_t *lo;                 /* TFHE: the PBS output */
} slots_worker_t;

struct ts_nonlinear_slots {
    ts_convert_t *cv;
    const ts_boot_t *bt;
    ts_ckks_params_t *params;
    ts_nonlinear_slots_cfg_t cfg;
    ts_nonlinear_fn_t fn;
    const ts_nonlinear_approx_t *a; /* borrowed */
    double lo, hi, out_max;
    double q;  /* Q = q_0 */
    double dy; /* scale of the TFHE outputs (the merge scale) */
    uint32_t n_br;
    int log_n, log_slots;
    ts_nonlinear_lut_he_t *he; /* hybrid */
    ts_nonlinear_lut_t snap;   /* hybrid: the LUT on grid-snapped boundaries (what is computed) */
    bool has_snap;
    ts_nonlinear_pbs_t *pb; /* tfhe */
    uint64_t p;             /* tfhe: PBS message space */
    int threads;        /* look-up threads: 0 = the backend's (ts__nonlinear_slots_set_threads) */
    slots_worker_t *wk; /* nwk more look-up threads' state, made on first use */
    size_t nwk;
};

static void worker_clear(slots_worker_t *w)
{
    ts__nonlinear_lut_he_worker_free(w->hw);
    ts_tfhe_lwe_free(w->lo);
    ts_convert_worker_free(w->cw);
    memset(w, 0, sizeof(*w));
}

static ts_status_t worker_init(ts_nonlinear_slots_t *ns, slots_worker_t *w)
{
    ts_status_t st = ts_convert_worker_new(ns->cv, &w->cw);
    if (st == TS_OK) {
        if (ns->cfg.mode == TS_NL_SLOTS_HYBRID)
            st = ts__nonlinear_lut_he_worker_new(ns->he, ts_convert_worker_tfhe_evaluator(w->cw),
                                                 w->cw, &w->hw);
        else
            st = ts_tfhe_lwe_new(ns->n_br, ts_convert_q(ns->cv), &w->lo);
    }
    if (st != TS_OK)
        worker_clear(w);
    return st;
}

/* At least `want` extra workers in ns->wk. */
static ts_status_t workers_reserve(ts_nonlinear_slots_t *ns, size_t want)
{
    if (ns->nwk >= want)
        return TS_OK;
    slots_worker_t *wk = ts_calloc(want, sizeof(*wk));
    if (!wk)
        return TS_ENOMEM;
    if (ns->nwk)
        memcpy(wk, ns->wk, ns->nwk * sizeof(*wk));
    ts_free(ns->wk);
    ns->wk = wk;
    for (; ns->nwk < want; ns->nwk++) {
        ts_status_t st = worker_init(ns, &ns->wk[ns->nwk]);
        if (st != TS_OK)
            return st;
    }
    return TS_OK;
}

void ts__nonlinear_slots_set_threads(ts_nonlinear_slots_t *ns, int threads)
{
    if (ns)
        ns->threads = threads < 0 ? 0 : threads;
}

void ts_nonlinear_slots_cfg_default(ts_nonlinear_slots_mode_t mode, ts_nonlinear_slots_cfg_t *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->mode = mode;
    cfg->in_bits = mode == TS_NL_SLOTS_TFHE ? 5 : 10;
    cfg->frac_bits = 24;
    cfg->out_max = 0;
    cfg->ratio_bits = 8;
    cfg->out_scale = 0;
}

const char *ts_nonlinear_slots_mode_name(ts_nonlinear_slots_mode_t mode)
{
    switch (mode) {
    case TS_NL_SLOTS_HYBRID:
        return "hybrid";
    case TS_NL_SLOTS_TFHE:
        return "tfhe";
    }
    return "?";
}

static double f_exact(double x, void *ctx)
{
    return ts_nonlinear_exact(*(const ts_nonlinear_fn_t *)ctx, x);
}

/*
 * The segment decision of the look-up compares x rounded to its input grid
 * (step (hi - lo) / 2^in_bits, HomComp on u) with the grid threshold of each
 * boundary, so the decision boundary in x is lo + (tau - 1/2) step, not the
 * LUT's own boundary: an x between the two got the neighbouring segment and
 * the line of its end interval extrapolated (up to half a step away; the
 * LayerNorm [1, 8192] outlier). dst = src refitted (f exact, same n_br and
 * index_bits) on the boundaries moved to those decision points, so that the
 * encrypted segment decision is the cleartext one up to the noise.
 * TS_ERANGE when two boundaries fall between the same grid points (a
 * segment narrower than the grid can resolve).
 */
static ts_status_t lut_snapped(const ts_nonlinear_lut_t *src, ts_nonlinear_fn_t fn, int in_bits,
                               ts_nonlinear_lut_t *dst)
{
    if (in_bits < 1 || in_bits > 30)
        return TS_EINVAL;
    double *b = ts_calloc((size_t)src->n_seg + 1, sizeof(double));
    if (!b)
        return TS_ENOMEM;
    const double step = (src->hi - src->lo) / ldexp(1.0, in_bits);
    b[0] = src->lo;
    b[src->n_seg] = src->hi;
    ts_status_t st = TS_OK;
    for (int j = 1; j < src->n_seg && st == TS_OK; j++) {
        /* tau: the smallest grid index u with lo + u step >= bounds[j] (lut_he's rule) */
        double u = ceil((src->bounds[j] - src->lo) / step) - 2;
        if (u < 0)
            u = 0;
        while (src->lo + u * step < src->bounds[j])
            u++;
        b[j] = src->lo + (u - 0.5) * step;
        if (!(b[j] > b[j - 1]) || !(b[j] < src->hi))
            st = TS_ERANGE;
    }
    if (st == TS_OK)
        st = ts_nonlinear_lut_init_bounds(dst, f_exact, &fn, b, src->n_seg, src->n_br,
                                          src->index_bits);
    ts_free(b);
    return st;
}

void ts_nonlinear_slots_free(ts_nonlinear_slots_t *ns)
{
    if (!ns)
        return;
    for (size_t i = 0; i < ns->nwk; i++)
        worker_clear(&ns->wk[i]);
    ts_free(ns->wk);
    ts_nonlinear_lut_he_free(ns->he);
    ts_nonlinear_pbs_free(ns->pb);
    if (ns->has_snap)
        ts_nonlinear_lut_clear(&ns->snap);
    ts_free(ns);
}

/*
 * dst = src with every line a x + b replaced by the secant, over its
 * interval, of g(a x + b), g(y) = asin(k y) / k: ModRecover's sine then
 * returns the line itself up to g's curvature over one interval (k y is at
 * most 2 pi 2^-ratio_bits, so the residual is far below the TFHE noise).
 */
static ts_status_t lut_warped(const ts_nonlinear_lut_t *src, double k, ts_nonlinear_lut_t *dst)
{
    size_t ne = (size_t)src->n_seg * (size_t)src->n_br;
    *dst = *src;
    dst->bounds = ts_calloc((size_t)src->n_seg + 1, sizeof(double));
    dst->slope = ts_calloc(ne, sizeof(double));
    dst->offset = ts_calloc(ne, sizeof(double));
    if (!dst->bounds || !dst->slope || !dst->offset) {
        ts_nonlinear_lut_clear(dst);
        return TS_ENOMEM;
    }
    memcpy(dst->bounds, src->bounds, ((size_t)src->n_seg + 1) * sizeof(double));
    for (int s = 0; s < src->n_seg; s++) {
        double w = (src->bounds[s + 1] - src->bounds[s]) / src->n_br;
        for (int i = 0; i < src->n_br; i++) {
            size_t e = (size_t)s * src->n_br + (size_t)i;
            double x0 = src->bounds[s] + w * i, x1 = x0 + w;
            double y0 = src->slope[e] * x0 + src->offset[e];
            double y1 = src->slope[e] * x1 + src->offset[e];
            if (!(fabs(k * y0) < 1.0 && fabs(k * y1) < 1.0)) {
                ts_nonlinear_lut_clear(dst);
                return TS_ERANGE;
            }
            double g0 = asin(k * y0) / k, g1 = asin(k * y1) / k;
            dst->slope[e] = (g1 - g0) / (x1 - x0);
            dst->offset[e] = g0 - dst->slope[e] * x0;
        }
    }
    return TS_OK;
}

ts_status_t ts_nonlinear_slots_new(ts_convert_t *cv, const ts_boot_t *bt,
                                   const ts_nonlinear_approx_t *a,
                                   const ts_nonlinear_slots_cfg_t *cfg, ts_nonlinear_slots_t **out)
{
    if (!cv || !bt || !a || !cfg || !out)
        return TS_EINVAL;
    *out = NULL;
    const ts_boot_config_t *bc = ts_boot_config(bt);
    if (bc->order != TS_BOOT_STC_FIRST)
        return TS_EINVAL;
    if (cfg->ratio_bits < 2 || cfg->ratio_bits > 30 || cfg->out_max < 0 || cfg->out_scale < 0 ||
        !isfinite(cfg->out_max) || !isfinite(cfg->out_scale))
        return TS_EINVAL;
    const ts_nonlinear_spec_t *sp = ts_nonlinear_approx_spec(a);
    const ts_nonlinear_lut_t *lut = ts_nonlinear_approx_lut(a);
    if (cfg->mode == TS_NL_SLOTS_HYBRID && !lut)
        return TS_EINVAL;
    if (cfg->mode != TS_NL_SLOTS_HYBRID && cfg->mode != TS_NL_SLOTS_TFHE)
        return TS_EINVAL;
    double lo = lut ? lut->lo : sp->lo, hi = lut ? lut->hi : sp->hi;
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi))
        return TS_EINVAL;
    ts_nonlinear_slots_t *ns = ts_calloc(1, sizeof(*ns));
    if (!ns)
        return TS_ENOMEM;
    ns->cv = cv;
    ns->bt = bt;
    ns->cfg = *cfg;
    ns->fn = ts_nonlinear_approx_fn(a);
    ns->a = a;
    ns->lo = lo;
    ns->hi = hi;
    ns->q = (double)ts_convert_q(cv);
    ns->n_br = ts_convert_n_br(cv);
    ns->log_slots = bc->log_slots;
    ns->out_max = cfg->out_max;
    if (cfg->mode == TS_NL_SLOTS_HYBRID) {
        ts_status_t sst = lut_snapped(lut, ns->fn, cfg->in_bits, &ns->snap);
        if (sst != TS_OK) {
            ts_free(ns);
            return sst;
        }
        ns->has_snap = true;
        lut = &ns->snap;
    }
    if (ns->out_max == 0) {
        /* the largest |value| of the approximation (or of f at the PBS midpoints) */
        const int pts = 4096;
        for (int i = 0; i <= pts; i++) {
            double x = lo + (hi - lo) * i / pts;
            double y = cfg->mode == TS_NL_SLOTS_HYBRID ? ts_nonlinear_lut_eval(lut, x)
                                                       : ts_nonlinear_exact(ns->fn, x);
            if (isfinite(y))
                ns->out_max = fmax(ns->out_max, fabs(y));
        }
        ns->out_max = ns->out_max > 0 ? ns->out_max * 1.0625 : 1.0;
    }
    /* the TFHE output scale: |f| out_max at q0 2^-ratio_bits, i.e. out_max' =
     * out_max 2^(ratio_bits - 2) in the Q / (4 out_max') convention */
    double om = ldexp(ns->out_max, cfg->ratio_bits - 2);
    /* the sine of ModRecover reads coefficient y Q / (4 om) as
     * (Q / 2 pi) sin(k y Q / (4 om) ...) = y' with k = pi / (2 om): tables
     * hold g(y) = asin(k y) / k so that it returns y */
    double k = M_PI / (2.0 * om);
    ts_status_t st;
    if (cfg->mode == TS_NL_SLOTS_HYBRID) {
        ts_nonlinear_lut_t wl;
        st = lut_warped(lut, k, &wl);
        if (st == TS_OK) {
            st = ts_nonlinear_lut_he_new(cv, &wl, cfg->in_bits, cfg->frac_bits, om, &ns->he);
            ts_nonlinear_lut_clear(&wl);
        }
        if (st == TS_OK)
            ns->dy = ts_nonlinear_lut_he_out_scale(ns->he);
    } else {
        if (cfg->in_bits < 1 || cfg->in_bits > 30) {
            st = TS_EINVAL;
        } else {
            ns->p = 1ull << cfg->in_bits;
            st = ts__nonlinear_pbs_new_warped(ts_convert_tfhe_params(cv), ns->fn, lo, hi, ns->p, om,
                                              k, &ns->pb);
            ns->dy = ns->q / (4.0 * om);
        }
    }
    if (st != TS_OK) {
        ts_nonlinear_slots_free(ns);
        return st;
    }
    *out = ns;
    return TS_OK;
}

double ts_nonlinear_slots_out_max(const ts_nonlinear_slots_t *ns)
{
    return ns->out_max;
}

double ts_nonlinear_slots_ref(const ts_nonlinear_slots_t *ns, double x)
{
    if (ns->cfg.mode == TS_NL_SLOTS_HYBRID)
        return ts_nonlinear_lut_eval(&ns->snap, x);
    return ts_nonlinear_pbs_ref(ns->pb, x);
}

double ts_nonlinear_slots_grid(const ts_nonlinear_slots_t *ns, double u)
{
    if (ns->cfg.mode == TS_NL_SLOTS_HYBRID)
        return ts_nonlinear_lut_he_grid(ns->he, u);
    return ns->lo + (ns->hi - ns->lo) * (u + 0.5) / (double)ns->p;
}

int ts_nonlinear_slots_in_level(const ts_nonlinear_slots_t *ns)
{
    return ts_boot_config(ns->bt)->stc_levels + 1;
}

int ts_nonlinear_slots_max_level(const ts_nonlinear_slots_t *ns)
{
    return ts_boot_mod_recover_level(ns->bt) - 1;
}

/*
 * The pre-scale: v = c x + b at the input's scale S such that after
 * SlotToCoeff the coefficient v S is the TFHE input: hybrid u Delta_u with
 * u = (x - lo) / step; tfhe ((x - lo) / (hi - lo) p - 1/2) Q / 2p (half a box
 * down, so that the PBS's rounding is the floor of the baseline's index).
 */
static void prescale(const ts_nonlinear_slots_t *ns, double s, double *c, double *b)
{
    if (ns->cfg.mode == TS_NL_SLOTS_HYBRID) {
        double step = (ns->hi - ns->lo) / ldexp(1.0, ns->cfg.in_bits);
        *c = ts_nonlinear_lut_he_in_scale(ns->he) / (step * s);
        *b = -ns->lo * *c;
    } else {
        *c = ns->q / (2.0 * (ns->hi - ns->lo) * s);
        *b = -ns->lo * *c - ns->q / (4.0 * (double)ns->p * s);
    }
}

/* The look-up of one value: w NULL = the calling thread's state (ns->he,
 * ns->cv and the PBS output lo), else a worker's. */
static ts_status_t lookup_one(ts_nonlinear_slots_t *ns, slots_worker_t *w, ts_tfhe_lwe_t *lo,
                              const ts_tfhe_rlwe_t *r, const ts_tfhe_lwe_t *lw, ts_tfhe_rlwe_t *res)
{
    if (ns->cfg.mode == TS_NL_SLOTS_HYBRID)
        return w ? ts__nonlinear_lut_he_eval_on(ns->he, w->hw, r, res, NULL, NULL)
                 : ts_nonlinear_lut_he_eval(ns->he, r, res, NULL, NULL);
    if (w) {
        ts_status_t st =
            ts_nonlinear_pbs_eval(ns->pb, ts_convert_worker_tfhe_evaluator(w->cw), lw, w->lo);
        return st == TS_OK ? ts_convert_worker_lwe_to_rlwe(w->cw, w->lo, res) : st;
    }
    ts_status_t st = ts_nonlinear_pbs_eval(ns->pb, ts_convert_tfhe_evaluator(ns->cv), lw, lo);
    return st == TS_OK ? ts_convert_lwe_to_rlwe(ns->cv, lo, res) : st;
}

/* The values of one conversion, claimed one at a time by the threads. */
typedef struct {
    ts_nonlinear_slots_t *ns;
    ts_tfhe_rlwe_t *const *r, *const *res;
    ts_tfhe_lwe_t *const *lw; /* TFHE; entries NULL for HYBRID */
    size_t count;
    ts_status_t *st; /* per value */
    atomic_size_t next;
    atomic_bool failed;
} lookups_t;

typedef struct {
    lookups_t *job;
    slots_worker_t *w;
} lookup_thread_t;

static void lookups_drain(lookups_t *j, slots_worker_t *w, ts_tfhe_lwe_t *lo)
{
    while (!atomic_load(&j->failed)) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->count)
            break;
        ts_status_t st = lookup_one(j->ns, w, lo, j->r[i], j->lw[i], j->res[i]);
        j->st[i] = st;
        if (st != TS_OK)
            atomic_store(&j->failed, true);
    }
}

static void *lookup_thread_main(void *arg)
{
    lookup_thread_t *t = arg;
    lookups_drain(t->job, t->w, NULL);
    return NULL;
}

/* The look-up threads of a conversion of `count` values on ring p. */
static size_t lookup_threads(const ts_nonlinear_slots_t *ns, const ts_ckks_params_t *p,
                             size_t count)
{
    int t = ns->threads;
    if (t <= 0) {
        ts_backend_t *be = ts_ring_backend(ts_ckks_params_ring(p));
        t = be && be->threads > 1 ? be->threads : 1;
    }
    if (t > SLOTS_MAX_THREADS)
        t = SLOTS_MAX_THREADS;
    return (size_t)t < count ? (size_t)t : count;
}

/*
 * Step 3 for all values: res[i] from r[i] (HYBRID) or lw[i] (TFHE, lo the
 * calling thread's PBS output). With nt > 1 threads the calling thread and
 * nt - 1 threads of its own claim values in turn; every value is computed
 * by the same deterministic steps whichever thread takes it, so the
 * outputs are those of the sequential loop. On failure the error of the
 * lowest failing value (those after it may not have run).
 */
static ts_status_t lookups_run(ts_nonlinear_slots_t *ns, size_t nt, ts_tfhe_lwe_t *lo,
                               ts_tfhe_rlwe_t *const *r, ts_tfhe_rlwe_t *const *res,
                               ts_tfhe_lwe_t *const *lw, size_t count)
{
    ts_status_t st = TS_OK;
    if (nt <= 1) {
        for (size_t i = 0; i < count && st == TS_OK; i++)
            st = lookup_one(ns, NULL, lo, r[i], lw[i], res[i]);
        return st;
    }
    if ((st = workers_reserve(ns, nt - 1)) != TS_OK)
        return st;
    lookups_t job = {.ns = ns, .r = r, .res = res, .lw = lw, .count = count};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, false);
    job.st = ts_calloc(count, sizeof(*job.st));
    pthread_t *tid = ts_calloc(nt - 1, sizeof(*tid));
    lookup_thread_t *args = ts_calloc(nt - 1, sizeof(*args));
    if (!job.st || !tid || !args) {
        st = TS_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < count; i++)
        job.st[i] = TS_OK;
    size_t started = 0;
    for (size_t k = 0; k + 1 < nt; k++) {
        args[k] = (lookup_thread_t){.job = &job, .w = &ns->wk[k]};
        /* a thread that cannot start leaves its values to the others */
        if (pthread_create(&tid[started], NULL, lookup_thread_main, &args[k]) != 0)
            break;
        started++;
    }
    lookups_drain(&job, NULL, lo);
    for (size_t k = 0; k < started; k++)
        pthread_join(tid[k], NULL);
    for (size_t i = 0; i < count && st == TS_OK; i++)
        st = job.st[i];
done:
    ts_free(job.st);
    ts_free(tid);
    ts_free(args);
    return st;
}

ts_status_t ts_nonlinear_slots_eval(ts_nonlinear_slots_t *ns, ts_ckks_evaluator_t *ev,
                                    const ts_ckks_ciphertext_t *in, const size_t *slots,
                                    size_t count, int level, ts_ckks_ciphertext_t *out)
{
    if (!ns || !ev || !in || !out || !slots || count == 0 || count > ns->n_br)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(in);
    size_t n = (size_t)1 << ns->log_slots;
    if (ts_ckks_ciphertext_slots(in) != n)
        return TS_EMISMATCH;
    if (ts_ckks_ciphertext_level(in) < ts_nonlinear_slots_in_level(ns))
        return TS_ELEVEL;
    int top = ts_nonlinear_slots_max_level(ns);
    if (level < 0)
        level = top;
    if (level > top)
        return TS_ELEVEL;
    int log_n = ts_ckks_params_log_n(p);
    ts_status_t st = TS_ENOMEM;
    const ts_tfhe_params_t *tp = ts_convert_tfhe_params(ns->cv);
    uint32_t *pos = ts_calloc(count, sizeof(uint32_t));
    ts_tfhe_rlwe_t **r = ts_calloc(count, sizeof(*r)), **res = ts_calloc(count, sizeof(*res));
    ts_tfhe_lwe_t **lw = ts_calloc(count, sizeof(*lw));
    ts_tfhe_lwe_t *lo = NULL;
    ts_ckks_ciphertext_t *x = NULL;
    if (!pos || !r || !res || !lw)
        goto done;
    for (size_t i = 0; i < count; i++) {
        if (slots[i] >= n) {
            st = TS_ERANGE;
            goto done;
        }
        int64_t c = ts_convert_slot_coeff(log_n, ns->log_slots, ns->n_br, slots[i], false);
        if (c < 0) {
            st = TS_ERANGE;
            goto done;
        }
        pos[i] = (uint32_t)c;
        for (size_t j = 0; j < i; j++)
            if (slots[j] == slots[i]) {
                st = TS_EINVAL;
                goto done;
            }
        if ((st = ts_tfhe_rlwe_new(tp, &r[i])) != TS_OK ||
            (st = ts_tfhe_rlwe_new(tp, &res[i])) != TS_OK)
            goto done;
        if (ns->cfg.mode == TS_NL_SLOTS_TFHE &&
            (st = ts_tfhe_lwe_new(ns->n_br, ts_convert_q(ns->cv), &lw[i])) != TS_OK)
            goto done;
    }
    if (ns->cfg.mode == TS_NL_SLOTS_TFHE &&
        (st = ts_tfhe_lwe_new(ns->n_br, ts_convert_q(ns->cv), &lo)) != TS_OK)
        goto done;
    /* 1. pre-scale (one level; the rescale returns to the input's scale) */
    double c, b;
    prescale(ns, ts_ckks_ciphertext_scale(in), &c, &b);
    if ((st = ts_ckks_ciphertext_new(p, ts_ckks_ciphertext_level(in), &x)) != TS_OK ||
        (st = ts_ckks_mul_const(ev, in, c, 0, x)) != TS_OK ||
        (st = ts_ckks_rescale(ev, x, x)) != TS_OK || (st = ts_ckks_add_const(ev, x, b, x)) != TS_OK)
        goto done;
    /* 2. one SlotToCoeff and RingSwitch, a Trace per value */
    if ((st = ts_convert_split(ns->cv, ns->bt, ev, x, pos, count, r,
                               ns->cfg.mode == TS_NL_SLOTS_TFHE ? lw : NULL)) != TS_OK)
        goto done;
    /* 3. the look-ups, on up to the backend's thread count */
    if ((st = lookups_run(ns, lookup_threads(ns, p, count), lo, r, res, lw, count)) != TS_OK)
        goto done;
    /* 4. repack, RingSwitch up, ModRecover one level above the target */
    if ((st = ts_convert_merge(ns->cv, ns->bt, ev, (const ts_tfhe_rlwe_t *const *)res, pos, count,
                               ns->dy, level + 1, out)) != TS_OK)
        goto done;
    /* 5. to the output scale: times 1 at scale out_scale q_{level+1} / dy, rescale */
    {
        double want = ns->cfg.out_scale > 0 ? ns->cfg.out_scale : ts_ckks_params_scale(p);
        double ql = (double)ts_ckks_params_q(p, (size_t)level + 1);
        double cs = round(want * ql / ts_ckks_ciphertext_scale(out));
        if (!(cs >= 1.0)) {
            st = TS_ESCALE;
            goto done;
        }
        if ((st = ts_ckks_mul_const(ev, out, 1.0, cs, out)) != TS_OK ||
            (st = ts_ckks_rescale(ev, out, out)) != TS_OK)
            goto done;
        /* the scale is want up to 2^-30 or better: declare it exactly */
        st = ts_ckks_ciphertext_set_meta(out, ts_ckks_ciphertext_level(out), 1, want,
                                         ts_ckks_ciphertext_slots(out));
    }
done:
    for (size_t i = 0; i < count; i++) {
        if (r)
            ts_tfhe_rlwe_free(r[i]);
        if (res)
            ts_tfhe_rlwe_free(res[i]);
        if (lw)
            ts_tfhe_lwe_free(lw[i]);
    }
    ts_tfhe_lwe_free(lo);
    ts_ckks_ciphertext_free(x);
    ts_free(pos);
    ts_free(r);
    ts_free(res);
    ts_free(lw);
    return st;
}

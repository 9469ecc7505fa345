/*
 * The ciphertext-aligned simulator (ROSETTA section 5.4): the exact pass and
 * the approximate pass run side by side, teacher-forced on one token
 * sequence; the report holds the local error of every primitive call, the
 * residual-stream error after each layer, logit errors, argmax agreement and
 * the perplexity of the sequence under both passes.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/llm/llm_int.h"

#define NOISE_STREAM 0x6e6f6973u /* "nois" */

void ts_llm_sim_config_default(ts_llm_sim_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (int i = 0; i < TS_NL_FN_COUNT; i++)
        cfg->prim[i].method = TS_NL_EXACT;
    cfg->recip_norm.method = TS_NL_EXACT;
    cfg->recip_last.method = TS_NL_EXACT;
    cfg->softmax_k = -1;
    cfg->noise_bits = 0.0;
    cfg->seed = 1;
}

/* ------------------------------------------------------------- YAML */

typedef struct {
    int method;
    double lo, hi;
    int64_t degree, steps, segments, entries, index_bits;
    int bounds, iter;
} yprim_t;

typedef struct {
    int64_t softmax_k;
    double noise_bits;
    int64_t seed;
    yprim_t p[TS_NL_FN_COUNT];
    yprim_t recip_norm, recip_last;
    bool mean_first, center;
} ydoc_t;

static const char *const method_choices[] = {"exact", "poly", "iter", "lut", "pbs", NULL};
static const char *const bounds_choices[] = {"uniform", "log", "auto", "auto_rel", NULL};
static const char *const iter_choices[] = {"classic", "scaled", NULL}; /* ts_nonlinear_iter_t */

#define YP(field) offsetof(yprim_t, field)
static const ts_cfg_directive_t prim_table[] = {
    {.name = "method", .type = TS_CFG_ENUM, .offset = YP(method), .choices = method_choices},
    {.name = "lo", .type = TS_CFG_DOUBLE, .offset = YP(lo), .dmin = -1e12, .dmax = 1e12},
    {.name = "hi", .type = TS_CFG_DOUBLE, .offset = YP(hi), .dmin = -1e12, .dmax = 1e12},
    {.name = "degree", .type = TS_CFG_INT, .offset = YP(degree), .min = 0, .max = 4096},
    {.name = "steps", .type = TS_CFG_INT, .offset = YP(steps), .min = 0, .max = 64},
    {.name = "segments",
     .type = TS_CFG_INT,
     .offset = YP(segments),
     .min = 1,
     .max = TS_NL_LUT_MAX_SEG},
    {.name = "entries",
     .type = TS_CFG_INT,
     .offset = YP(entries),
     .min = 1,
     .max = TS_NL_LUT_MAX_BR},
    {.name = "bounds", .type = TS_CFG_ENUM, .offset = YP(bounds), .choices = bounds_choices},
    {.name = "index_bits", .type = TS_CFG_INT, .offset = YP(index_bits), .min = 0, .max = 30},
    {.name = "iter", .type = TS_CFG_ENUM, .offset = YP(iter), .choices = iter_choices},
    {.name = NULL},
};
#undef YP

#define YD(field) offsetof(ydoc_t, field)
static const ts_cfg_directive_t doc_table[] = {
    {.name = "softmax_k", .type = TS_CFG_INT, .offset = YD(softmax_k), .min = -1, .max = 30},
    {.name = "noise_bits", .type = TS_CFG_DOUBLE, .offset = YD(noise_bits), .dmin = 0, .dmax = 128},
    {.name = "seed", .type = TS_CFG_INT, .offset = YD(seed), .min = 0, .max = INT64_MAX},
    {.name = "exp", .type = TS_CFG_SECTION, .offset = YD(p[TS_NL_FN_EXP]), .sub = prim_table},
    {.name = "recip", .type = TS_CFG_SECTION, .offset = YD(p[TS_NL_FN_RECIP]), .sub = prim_table},
    {.name = "recip_norm", .type = TS_CFG_SECTION, .offset = YD(recip_norm), .sub = prim_table},
    {.name = "recip_last", .type = TS_CFG_SECTION, .offset = YD(recip_last), .sub = prim_table},
    {.name = "softmax_mean_first", .type = TS_CFG_BOOL, .offset = YD(mean_first)},
    {.name = "softmax_center", .type = TS_CFG_BOOL, .offset = YD(center)},
    {.name = "rsqrt", .type = TS_CFG_SECTION, .offset = YD(p[TS_NL_FN_RSQRT]), .sub = prim_table},
    {.name = "silu", .type = TS_CFG_SECTION, .offset = YD(p[TS_NL_FN_SILU]), .sub = prim_table},
    {.name = "gelu", .type = TS_CFG_SECTION, .offset = YD(p[TS_NL_FN_GELU]), .sub = prim_table},
    {.name = NULL},
};
#undef YD

static void spec_to_y(const ts_nonlinear_spec_t *s, yprim_t *p)
{
    p->method = (int)s->method;
    p->lo = s->lo;
    p->hi = s->hi;
    p->degree = s->degree;
    p->steps = s->steps;
    p->segments = s->n_seg;
    p->entries = s->n_br;
    p->bounds = (int)s->bounds;
    p->index_bits = s->index_bits;
    p->iter = s->iter;
}

static void y_to_spec(const yprim_t *p, ts_nonlinear_spec_t *s)
{
    s->method = (ts_nonlinear_method_t)p->method;
    s->lo = p->lo;
    s->hi = p->hi;
    s->degree = (int)p->degree;
    s->steps = (int)p->steps;
    s->n_seg = (int)p->segments;
    s->n_br = (int)p->entries;
    s->bounds = (ts_nonlinear_bounds_t)p->bounds;
    s->index_bits = (int)p->index_bits;
    s->iter = p->iter;
}

static void to_doc(const ts_llm_sim_config_t *c, ydoc_t *d)
{
    memset(d, 0, sizeof(*d));
    d->softmax_k = c->softmax_k;
    d->noise_bits = c->noise_bits;
    d->seed = c->seed > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)c->seed;
    for (int i = 0; i < TS_NL_FN_COUNT; i++)
        spec_to_y(&c->prim[i], &d->p[i]);
    spec_to_y(&c->recip_norm, &d->recip_norm);
    spec_to_y(&c->recip_last, &d->recip_last);
    d->mean_first = c->softmax_mean_first;
    d->center = c->softmax_center;
}

static void from_doc(const ydoc_t *d, ts_llm_sim_config_t *c)
{
    c->softmax_k = (int)d->softmax_k;
    c->noise_bits = d->noise_bits;
    c->seed = (uint64_t)d->seed;
    for (int i = 0; i < TS_NL_FN_COUNT; i++)
        y_to_spec(&d->p[i], &c->prim[i]);
    y_to_spec(&d->recip_norm, &c->recip_norm);
    y_to_spec(&d->recip_last, &c->recip_last);
    c->softmax_mean_first = d->mean_first;
    c->softmax_center = d->center;
}

/* Keys a file leaves out keep these markers (merge_doc tells them apart). */
#define Y_UNSET_I INT64_MIN
static void unset_prim(yprim_t *p)
{
    p->method = p->bounds = p->iter = -1;
    p->lo = p->hi = NAN;
    p->degree = p->steps = p->segments = p->entries = p->index_bits = Y_UNSET_I;
}

/*
 * The keys present in f over the configuration's doc d. A section that sets
 * `method` describes its primitive afresh: the keys it leaves out take the
 * method's defaults (degree, steps, segments, entries, index_bits 0, bounds
 * uniform, iter classic), not the previous values, so that a file's
 * `recip: {method: iter, lo, hi, steps}` means the linear-start Goldschmidt
 * whatever the base configuration's guess; lo and hi keep the previous
 * values. A section without `method` changes only the keys it names.
 */
static void merge_prim(const yprim_t *f, yprim_t *d)
{
    if (f->method != -1) {
        d->method = f->method;
        d->degree = d->steps = d->segments = d->entries = d->index_bits = 0;
        d->bounds = d->iter = 0;
    }
    if (!isnan(f->lo))
        d->lo = f->lo;
    if (!isnan(f->hi))
        d->hi = f->hi;
    if (f->degree != Y_UNSET_I)
        d->degree = f->degree;
    if (f->steps != Y_UNSET_I)
        d->steps = f->steps;
    if (f->segments != Y_UNSET_I)
        d->segments = f->segments;
    if (f->entries != Y_UNSET_I)
        d->entries = f->entries;
    if (f->index_bits != Y_UNSET_I)
        d->index_bits = f->index_bits;
    if (f->bounds != -1)
        d->bounds = f->bounds;
    if (f->iter != -1)
        d->iter = f->iter;
}

static ts_status_t load_common(const char *path, const char *text, size_t len,
                               ts_llm_sim_config_t *cfg, char *err, size_t err_size)
{
    if (!cfg)
        return TS_EINVAL;
    ydoc_t d, f;
    to_doc(cfg, &d);
    f = d; /* the document-level keys layer as they are */
    for (int i = 0; i < TS_NL_FN_COUNT; i++)
        unset_prim(&f.p[i]);
    unset_prim(&f.recip_norm);
    unset_prim(&f.recip_last);
    ts_cfg_error_t e;
    memset(&e, 0, sizeof(e));
    ts_status_t st = path ? ts_config_load_file(path, doc_table, &f, NULL, &e)
                          : ts_config_load_string(text, len, "approx", doc_table, &f, NULL, &e);
    if (st != TS_OK) {
        if (err && err_size)
            ts_cfg_error_format(&e, err, err_size);
        return st;
    }
    /* document-level keys from f, the primitives merged into d's */
    for (int i = 0; i < TS_NL_FN_COUNT; i++) {
        merge_prim(&f.p[i], &d.p[i]);
        f.p[i] = d.p[i];
    }
    merge_prim(&f.recip_norm, &d.recip_norm);
    merge_prim(&f.recip_last, &d.recip_last);
    f.recip_norm = d.recip_norm;
    f.recip_last = d.recip_last;
    from_doc(&f, cfg);
    /* Check every non-exact spec now, so the error names the primitive. */
    for (int i = 0; i < TS_NL_FN_COUNT; i++) {
        if (cfg->prim[i].method == TS_NL_EXACT)
            continue;
        ts_nonlinear_approx_t *a = NULL;
        st = ts_nonlinear_approx_new((ts_nonlinear_fn_t)i, &cfg->prim[i], &a);
        ts_nonlinear_approx_free(a);
        if (st != TS_OK)
            return ts__llm_errf(TS_ECONFIG, err, err_size,
                                "%s: the %s approximation (%s) is invalid: %s",
                                path ? path : "approx", ts_nonlinear_fn_name((ts_nonlinear_fn_t)i),
                                ts_nonlinear_method_name(cfg->prim[i].method), ts_strerror(st));
    }
    const ts_nonlinear_spec_t *extra[2] = {&cfg->recip_norm, &cfg->recip_last};
    static const char *const extra_name[2] = {"recip_norm", "recip_last"};
    for (int i = 0; i < 2; i++) {
        if (extra[i]->method == TS_NL_EXACT)
            continue;
        ts_nonlinear_approx_t *a = NULL;
        st = ts_nonlinear_approx_new(TS_NL_FN_RECIP, extra[i], &a);
        ts_nonlinear_approx_free(a);
        if (st != TS_OK)
            return ts__llm_errf(TS_ECONFIG, err, err_size,
                                "%s: the %s approximation (%s) is invalid: %s",
                                path ? path : "approx", extra_name[i],
                                ts_nonlinear_method_name(extra[i]->method), ts_strerror(st));
    }
    return TS_OK;
}

ts_status_t ts_llm_sim_config_load(const char *path, ts_llm_sim_config_t *cfg, char *err,
                                   size_t err_size)
{
    if (!path)
        return TS_EINVAL;
    return load_common(path, NULL, 0, cfg, err, err_size);
}

ts_status_t ts_llm_sim_config_load_string(const char *text, size_t len, ts_llm_sim_config_t *cfg,
                                          char *err, size_t err_size)
{
    if (!text)
        return TS_EINVAL;
    return load_common(NULL, text, len, cfg, err, err_size);
}

/* ------------------------------------------------------------- running */

void ts_llm_sim_report_clear(ts_llm_sim_report_t *r)
{
    if (!r)
        return;
    ts_free(r->layer_max_err);
    ts_free(r->layer_mean_err);
    ts_free(r->layer_rms);
    memset(r, 0, sizeof(*r));
}

typedef struct {
    ts_nonlinear_approx_t *a[TS_NL_FN_COUNT];
    ts_nonlinear_approx_t *recip_norm, *recip_last;
    ts_prng_t *noise;
    ts__llm_prims_t p;
} approx_set_t;

static void approx_set_clear(approx_set_t *s)
{
    for (int i = 0; i < TS_NL_FN_COUNT; i++)
        ts_nonlinear_approx_free(s->a[i]);
    ts_nonlinear_approx_free(s->recip_norm);
    ts_nonlinear_approx_free(s->recip_last);
    ts_prng_free(s->noise);
    memset(s, 0, sizeof(*s));
}

static ts_status_t approx_set_init(approx_set_t *s, const ts_llm_sim_config_t *cfg)
{
    memset(s, 0, sizeof(*s));
    if (cfg->softmax_k < -1 || cfg->softmax_k > 30 || !(cfg->noise_bits >= 0.0) ||
        cfg->noise_bits > 128.0)
        return TS_EINVAL;
    for (int i = 0; i < TS_NL_FN_COUNT; i++) {
        if (cfg->prim[i].method == TS_NL_EXACT)
            continue;
        ts_status_t st = ts_nonlinear_approx_new((ts_nonlinear_fn_t)i, &cfg->prim[i], &s->a[i]);
        if (st != TS_OK) {
            approx_set_clear(s);
            return st == TS_ENOMEM ? st : TS_EINVAL;
        }
        s->p.a[i] = s->a[i];
    }
    s->p.softmax_k = cfg->softmax_k;
    s->p.mean_first = cfg->softmax_mean_first;
    s->p.center = cfg->softmax_center;
    if (cfg->recip_norm.method != TS_NL_EXACT) {
        ts_status_t st = ts_nonlinear_approx_new(TS_NL_FN_RECIP, &cfg->recip_norm, &s->recip_norm);
        if (st != TS_OK) {
            approx_set_clear(s);
            return st == TS_ENOMEM ? st : TS_EINVAL;
        }
        s->p.recip_norm = s->recip_norm;
    }
    if (cfg->recip_last.method != TS_NL_EXACT) {
        ts_status_t st = ts_nonlinear_approx_new(TS_NL_FN_RECIP, &cfg->recip_last, &s->recip_last);
        if (st != TS_OK) {
            approx_set_clear(s);
            return st == TS_ENOMEM ? st : TS_EINVAL;
        }
        s->p.recip_last = s->recip_last;
    }
    if (cfg->noise_bits > 0.0) {
        uint8_t key[TS_SEED_BYTES] = {0};
        for (int i = 0; i < 8; i++)
            key[i] = (uint8_t)(cfg->seed >> (8 * i));
        ts_status_t st = ts_prng_new_seeded(key, NOISE_STREAM, &s->noise);
        if (st != TS_OK) {
            approx_set_clear(s);
            return st;
        }
        s->p.noise = s->noise;
        s->p.noise_sigma = pow(2.0, -cfg->noise_bits);
    }
    return TS_OK;
}

/* -log softmax(logits)[target], in double. */
static double nll(const float *logits, int n, int target)
{
    double mx = logits[0];
    for (int i = 1; i < n; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += exp((double)logits[i] - mx);
    return log(s) - ((double)logits[target] - mx);
}

ts_status_t ts_llm_simulate(const ts_llm_model_t *m, const ts_llm_sim_config_t *cfg,
                            const int *tokens, size_t n, ts_llm_sim_report_t *rep)
{
    if (!rep)
        return TS_EINVAL;
    memset(rep, 0, sizeof(*rep));
    if (!m || !cfg || !tokens || n == 0)
        return TS_EINVAL;
    const ts_llm_config_t *c = &m->cfg;
    if (n > (size_t)c->seq_len)
        return TS_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            return TS_EINVAL;
    size_t L = (size_t)c->n_layers, dim = (size_t)c->dim;
    approx_set_t as;
    ts_status_t st = approx_set_init(&as, cfg);
    if (st != TS_OK)
        return st;
    ts_llm_state_t *se = NULL, *sa = NULL;
    float *le = ts_malloc(L * dim * sizeof(float)), *la = ts_malloc(L * dim * sizeof(float));
    double *sq = ts_calloc(L, sizeof(double));
    rep->n_layers = (int)L;
    rep->layer_max_err = ts_calloc(L, sizeof(double));
    rep->layer_mean_err = ts_calloc(L, sizeof(double));
    rep->layer_rms = ts_calloc(L, sizeof(double));
    if (!le || !la || !sq || !rep->layer_max_err || !rep->layer_mean_err || !rep->layer_rms) {
        st = TS_ENOMEM;
        goto out;
    }
    if ((st = ts_llm_state_new_ctx(m, (int)n, &se)) || (st = ts_llm_state_new_ctx(m, (int)n, &sa)))
        goto out;
    rep->score_min = INFINITY;
    rep->score_max = -INFINITY;
    ts__llm_prims_t pe = {0};
    pe.softmax_k = -1;
    pe.layer_out = le;
    as.p.rep = rep;
    as.p.layer_out = la;
    double nll_e = 0.0, nll_a = 0.0, logit_sum = 0.0;
    for (size_t pos = 0; pos < n; pos++) {
        const float *lge, *lga;
        if ((st = ts__llm_forward_ex(m, se, tokens[pos], (int)pos, &pe, &lge)) ||
            (st = ts__llm_forward_ex(m, sa, tokens[pos], (int)pos, &as.p, &lga)))
            goto out;
        for (size_t l = 0; l < L; l++) {
            for (size_t j = 0; j < dim; j++) {
                double ex = le[l * dim + j];
                double e = fabs((double)la[l * dim + j] - ex);
                if (!(e <= rep->layer_max_err[l]))
                    rep->layer_max_err[l] = e;
                rep->layer_mean_err[l] += e;
                sq[l] += ex * ex;
            }
        }
        for (int i = 0; i < c->vocab_size; i++) {
            double e = fabs((double)lga[i] - (double)lge[i]);
            if (!(e <= rep->logits_max_err))
                rep->logits_max_err = e;
            logit_sum += e;
        }
        rep->agree += ts_llm_argmax(lge, c->vocab_size) == ts_llm_argmax(lga, c->vocab_size);
        rep->positions++;
        if (pos + 1 < n) {
            nll_e += nll(lge, c->vocab_size, tokens[pos + 1]);
            nll_a += nll(lga, c->vocab_size, tokens[pos + 1]);
            rep->ppl_tokens++;
        }
    }
    for (size_t l = 0; l < L; l++) {
        rep->layer_mean_err[l] /= (double)(n * dim);
        rep->layer_rms[l] = sqrt(sq[l] / (double)(n * dim));
    }
    rep->logits_mean_err = logit_sum / ((double)n * c->vocab_size);
    if (rep->softmax_count)
        rep->softmax_mean_err /= (double)rep->softmax_count;
    if (rep->ppl_tokens) {
        rep->ppl_exact = exp(nll_e / (double)rep->ppl_tokens);
        rep->ppl_approx = exp(nll_a / (double)rep->ppl_tokens);
    }
out:
    ts_llm_state_free(se);
    ts_llm_state_free(sa);
    ts_free(le);
    ts_free(la);
    ts_free(sq);
    approx_set_clear(&as);
    if (st != TS_OK)
        ts_llm_sim_report_clear(rep);
    return st;
}

ts_status_t ts_llm_simulate_greedy(const ts_llm_model_t *m, const ts_llm_sim_config_t *cfg,
                                   const int *prompt, size_t n_prompt, size_t n_total, int *out,
                                   size_t *n_out)
{
    if (!m || !cfg || !prompt || n_prompt == 0 || !out || !n_out)
        return TS_EINVAL;
    *n_out = 0;
    const ts_llm_config_t *c = &m->cfg;
    if (n_total > (size_t)c->seq_len)
        n_total = (size_t)c->seq_len;
    if (n_prompt > n_total)
        return TS_ERANGE;
    for (size_t i = 0; i < n_prompt; i++) {
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            return TS_EINVAL;
        out[i] = prompt[i];
    }
    approx_set_t as;
    ts_status_t st = approx_set_init(&as, cfg);
    if (st != TS_OK)
        return st;
    ts_llm_state_t *s = NULL;
    if ((st = ts_llm_state_new_ctx(m, (int)n_total, &s)))
        goto out;
    size_t n = n_prompt;
    for (size_t pos = 0; pos + 1 < n_total; pos++) {
        const float *lg;
        if ((st = ts__llm_forward_ex(m, s, out[pos], (int)pos, &as.p, &lg)))
            goto out;
        if (pos + 1 < n_prompt)
            continue;
        out[pos + 1] = ts_llm_argmax(lg, c->vocab_size);
        n = pos + 2;
    }
    *n_out = n;
out:
    ts_llm_state_free(s);
    approx_set_clear(&as);
    return st;
}

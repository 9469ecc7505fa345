/*
 * The reference decode step (float32, one position at a time, KV cache) and
 * its simulator hooks. The exact path follows llama2.c's run.c operation by
 * operation (same accumulation order, same float expressions), which is what
 * lets the bundled model reproduce the reference greedy ids; when a
 * ts__llm_prims_t names an approximation for a primitive, that primitive (and
 * only it) runs through core/nonlinear in double instead.
 */
#include <math.h>
#include <string.h>

#include "core/llm/llm_int.h"

struct ts_llm_state {
    int next_pos;
    int n_ctx; /* positions this state holds (<= seq_len) */
    int qd, kvd;
    float *x, *xb, *xb2, *hb, *hb2, *q, *k, *v, *att, *logits;
    float *key_cache, *value_cache; /* [layer][n_ctx][kv_dim] */
    double *sm;                     /* softmax scratch: 3 * n_ctx */
};

ts_status_t ts_llm_state_new(const ts_llm_model_t *m, ts_llm_state_t **out)
{
    return ts_llm_state_new_ctx(m, 0, out);
}

ts_status_t ts_llm_state_new_ctx(const ts_llm_model_t *m, int n_ctx, ts_llm_state_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!m)
        return TS_EINVAL;
    const ts_llm_config_t *c = &m->cfg;
    ts_llm_state_t *s = ts_calloc(1, sizeof(*s));
    if (!s)
        return TS_ENOMEM;
    s->n_ctx = n_ctx > 0 && n_ctx < c->seq_len ? n_ctx : c->seq_len;
    s->qd = c->n_heads * c->head_dim;
    s->kvd = c->n_kv_heads * c->head_dim;
    size_t xbw = (size_t)(s->qd > c->dim ? s->qd : c->dim);
    size_t cache;
    bool ok = ts_size_mul((size_t)c->n_layers * (size_t)s->n_ctx, (size_t)s->kvd, &cache);
    s->x = ts_calloc((size_t)c->dim, sizeof(float));
    s->xb = ts_calloc(xbw, sizeof(float));
    s->xb2 = ts_calloc((size_t)c->dim, sizeof(float));
    s->hb = ts_calloc((size_t)c->hidden_dim, sizeof(float));
    s->hb2 = ts_calloc((size_t)c->hidden_dim, sizeof(float));
    s->q = ts_calloc((size_t)s->qd, sizeof(float));
    s->k = ts_calloc((size_t)s->kvd, sizeof(float));
    s->v = ts_calloc((size_t)s->kvd, sizeof(float));
    s->att = ts_calloc((size_t)c->n_heads * (size_t)s->n_ctx, sizeof(float));
    s->logits = ts_calloc((size_t)c->vocab_size, sizeof(float));
    s->key_cache = ok ? ts_calloc(cache, sizeof(float)) : NULL;
    s->value_cache = ok ? ts_calloc(cache, sizeof(float)) : NULL;
    s->sm = ts_calloc(3 * (size_t)s->n_ctx, sizeof(double));
    if (!s->x || !s->xb || !s->xb2 || !s->hb || !s->hb2 || !s->q || !s->k || !s->v || !s->att ||
        !s->logits || !s->key_cache || !s->value_cache || !s->sm) {
        ts_llm_state_free(s);
        return TS_ENOMEM;
    }
    *out = s;
    return TS_OK;
}

void ts_llm_state_free(ts_llm_state_t *s)
{
    if (!s)
        return;
    float *bufs[] = {s->x, s->xb, s->xb2, s->hb,     s->hb2,       s->q,
                     s->k, s->v,  s->att, s->logits, s->key_cache, s->value_cache};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        ts_free(bufs[i]);
    ts_free(s->sm);
    ts_free(s);
}

/* ------------------------------------------------------------- helpers */

/* xout[d] = W[d][n] x[n] (+ b), float accumulation in index order (run.c). */
static void matmul(float *xout, const float *x, const float *w, const float *b, int n, int d)
{
    for (int i = 0; i < d; i++) {
        const float *row = w + (size_t)i * (size_t)n;
        float val = 0.0f;
        for (int j = 0; j < n; j++)
            val += row[j] * x[j];
        xout[i] = b ? val + b[i] : val;
    }
}

static double gauss(ts_prng_t *prng)
{
    double u1 = 0.0, u2 = 0.0;
    while (u1 <= 0.0)
        (void)ts_prng_double(prng, &u1);
    (void)ts_prng_double(prng, &u2);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* CKKS-like error after an arithmetic step (simulator only). */
static void add_noise(const ts__llm_prims_t *p, float *x, size_t n)
{
    if (!p || !p->noise)
        return;
    for (size_t i = 0; i < n; i++)
        x[i] += (float)(p->noise_sigma * gauss(p->noise));
}

static const ts_nonlinear_approx_t *approx_of(const ts__llm_prims_t *p, ts_nonlinear_fn_t fn)
{
    return p ? p->a[fn] : NULL;
}

static ts_nonlinear_stats_t *stats_of(const ts__llm_prims_t *p, ts_nonlinear_fn_t fn)
{
    return p && p->rep ? &p->rep->prim[fn] : NULL;
}

/* Record an exact evaluation (zero error, but the input range is kept). */
static void note_exact(const ts__llm_prims_t *p, ts_nonlinear_fn_t fn, double x)
{
    ts_nonlinear_stats_t *st = stats_of(p, fn);
    if (st)
        ts_nonlinear_stats_add(st, fn, x, ts_nonlinear_exact(fn, x), -INFINITY, INFINITY);
}

/* The normalization factor 1/sqrt(ss) of RMSNorm/LayerNorm. */
static float norm_factor(const ts__llm_prims_t *p, float ss)
{
    const ts_nonlinear_approx_t *a = approx_of(p, TS_NL_FN_RSQRT);
    if (!a) {
        note_exact(p, TS_NL_FN_RSQRT, ss);
        return 1.0f / sqrtf(ss);
    }
    return (float)ts_nonlinear_approx_eval_stats(a, TS_NL_FN_RSQRT, ss,
                                                 stats_of(p, TS_NL_FN_RSQRT));
}

static void rmsnorm(float *o, const float *x, const float *w, int size, float eps,
                    const ts__llm_prims_t *p)
{
    float ss = 0.0f;
    for (int j = 0; j < size; j++)
        ss += x[j] * x[j];
    ss /= size;
    ss += eps;
    add_noise(p, &ss, 1);
    float r = norm_factor(p, ss);
    for (int j = 0; j < size; j++)
        o[j] = w[j] * (r * x[j]);
    add_noise(p, o, (size_t)size);
}

static void layernorm(float *o, const float *x, const float *w, const float *b, int size, float eps,
                      const ts__llm_prims_t *p)
{
    float mean = 0.0f;
    for (int j = 0; j < size; j++)
        mean += x[j];
    mean /= size;
    float var = 0.0f;
    for (int j = 0; j < size; j++) {
        float d = x[j] - mean;
        var += d * d;
    }
    var /= size;
    var += eps;
    add_noise(p, &var, 1);
    float r = norm_factor(p, var);
    for (int j = 0; j < size; j++)
        o[j] = (x[j] - mean) * r * w[j] + b[j];
    add_noise(p, o, (size_t)size);
}

/* Softmax of one attention row, in place. */
static void softmax_row(float *x, int n, const ts__llm_prims_t *p, double *sm)
{
    const ts_nonlinear_approx_t *ea = approx_of(p, TS_NL_FN_EXP);
    const ts_nonlinear_approx_t *ra = approx_of(p, TS_NL_FN_RECIP);
    int k = p ? p->softmax_k : -1;
    if (k < 0 && !ea && !ra) {
        /* run.c's softmax */
        float max_val = x[0];
        for (int i = 1; i < n; i++)
            if (x[i] > max_val)
                max_val = x[i];
        float sum = 0.0f;
        for (int i = 0; i < n; i++) {
            note_exact(p, TS_NL_FN_EXP, (double)x[i] - max_val);
            x[i] = expf(x[i] - max_val);
            sum += x[i];
        }
        note_exact(p, TS_NL_FN_RECIP, sum);
        for (int i = 0; i < n; i++)
            x[i] /= sum;
        return;
    }
    double *z = sm, *y = sm + n, *ref = sm + 2 * (size_t)n;
    for (int i = 0; i < n; i++)
        z[i] = x[i];
    if (k >= 0 && p->center) {
        /* the engine's centered scores: minus the row's mean (the softmax is
         * unchanged, the primitives see other inputs) */
        double zm = 0.0;
        for (int i = 0; i < n; i++)
            zm += z[i] / n;
        for (int i = 0; i < n; i++)
            z[i] -= zm;
    }
    ts_nonlinear_stats_t *est = stats_of(p, TS_NL_FN_EXP), *rst = stats_of(p, TS_NL_FN_RECIP);
    if (k < 0) {
        double mx = z[0];
        for (int i = 1; i < n; i++)
            mx = z[i] > mx ? z[i] : mx;
        double s = 0.0;
        for (int i = 0; i < n; i++) {
            y[i] = ts_nonlinear_approx_eval_stats(ea, TS_NL_FN_EXP, z[i] - mx, est);
            s += y[i];
        }
        double r = ts_nonlinear_approx_eval_stats(ra, TS_NL_FN_RECIP, s, rst);
        for (int i = 0; i < n; i++)
            y[i] *= r;
    } else if (k >= 1 && (p->recip_norm || p->recip_last || p->mean_first)) {
        /* the encrypted engine's variant: y = exp(z / 2^k); k rounds of
         * y <- y^2 / sum y^2, the first 1/x on the mean sum (mean_first),
         * the later ones by recip_norm */
        const ts_nonlinear_approx_t *rn = p->recip_norm ? p->recip_norm : ra;
        const ts_nonlinear_approx_t *rl = p->recip_last ? p->recip_last : rn;
        double sc = ldexp(1.0, -k);
        for (int i = 0; i < n; i++)
            y[i] = ts_nonlinear_approx_eval_stats(ea, TS_NL_FN_EXP, z[i] * sc, est);
        for (int r = 0; r < k; r++) {
            double s = 0.0;
            for (int i = 0; i < n; i++) {
                y[i] *= y[i];
                s += y[i];
            }
            double inv;
            if (r == 0 && p->mean_first)
                inv = ts_nonlinear_approx_eval_stats(ra, TS_NL_FN_RECIP, s / n, rst) / n;
            else
                inv = ts_nonlinear_approx_eval_stats(r == 0       ? ra
                                                     : r == k - 1 ? rl
                                                                  : rn,
                                                     TS_NL_FN_RECIP, s, rst);
            for (int i = 0; i < n; i++)
                y[i] *= inv;
        }
    } else {
        (void)ts_nonlinear_softmax_maxfree_stats(z, (size_t)n, k, ea, ra, y, est, rst);
    }
    if (p->rep) {
        ts_nonlinear_softmax_ref(z, (size_t)n, ref);
        double mx = 0.0;
        for (int i = 0; i < n; i++) {
            double e = fabs(y[i] - ref[i]);
            if (!(e <= mx))
                mx = e;
        }
        ts_llm_sim_report_t *r = p->rep;
        if (!(mx <= r->softmax_max_err))
            r->softmax_max_err = mx;
        r->softmax_mean_err += mx; /* sum of row maxima; divided at the end */
        r->softmax_count++;
    }
    for (int i = 0; i < n; i++)
        x[i] = (float)y[i];
}

/* ------------------------------------------------------------- forward */

ts_status_t ts__llm_forward_ex(const ts_llm_model_t *m, ts_llm_state_t *s, int token, int pos,
                               const ts__llm_prims_t *p, const float **logits)
{
    if (!m || !s || !logits)
        return TS_EINVAL;
    *logits = NULL;
    const ts_llm_config_t *c = &m->cfg;
    if (token < 0 || token >= c->vocab_size)
        return TS_EINVAL;
    if (pos < 0 || pos >= s->n_ctx || pos > s->next_pos)
        return TS_ERANGE;
    bool gpt2 = c->arch == TS_LLM_ARCH_GPT2;
    int dim = c->dim, hd = c->head_dim, hid = c->hidden_dim;
    int qd = s->qd, kvd = s->kvd, kv_mul = c->n_heads / c->n_kv_heads;
    float *x = s->x;

    memcpy(x, m->tok_emb + (size_t)token * (size_t)dim, (size_t)dim * sizeof(float));
    if (gpt2) {
        const float *pe = m->pos_emb + (size_t)pos * (size_t)dim;
        for (int i = 0; i < dim; i++)
            x[i] += pe[i];
    }

    for (int l = 0; l < c->n_layers; l++) {
        const ts__llm_layer_t *ly = &m->layers[l];
        if (gpt2)
            layernorm(s->xb, x, ly->attn_norm, ly->attn_norm_b, dim, c->norm_eps, p);
        else
            rmsnorm(s->xb, x, ly->attn_norm, dim, c->norm_eps, p);

        size_t loff = (size_t)l * (size_t)s->n_ctx * (size_t)kvd;
        float *kc = s->key_cache + loff + (size_t)pos * (size_t)kvd;
        float *vc = s->value_cache + loff + (size_t)pos * (size_t)kvd;
        matmul(s->q, s->xb, ly->wq, ly->bq, dim, qd);
        matmul(kc, s->xb, ly->wk, ly->bk, dim, kvd);
        matmul(vc, s->xb, ly->wv, ly->bv, dim, kvd);
        add_noise(p, s->q, (size_t)qd);
        add_noise(p, kc, (size_t)kvd);
        add_noise(p, vc, (size_t)kvd);

        if (!gpt2) {
            /* RoPE on pairs (2i, 2i+1) of each head (run.c). Rotations by
             * public angles are plaintext multiplications: no noise step. */
            for (int i = 0; i < qd; i += 2) {
                int hdim = i % hd;
                if (hdim >= c->rope_dim)
                    continue;
                float freq = 1.0f / powf(c->rope_theta, hdim / (float)c->rope_dim);
                float val = pos * freq;
                float fcr = cosf(val), fci = sinf(val);
                int rotn = i < kvd ? 2 : 1;
                for (int v = 0; v < rotn; v++) {
                    float *vec = v == 0 ? s->q : kc;
                    float v0 = vec[i], v1 = vec[i + 1];
                    vec[i] = v0 * fcr - v1 * fci;
                    vec[i + 1] = v0 * fci + v1 * fcr;
                }
            }
        }

        for (int h = 0; h < c->n_heads; h++) {
            const float *q = s->q + (size_t)h * (size_t)hd;
            float *att = s->att + (size_t)h * (size_t)s->n_ctx;
            for (int t = 0; t <= pos; t++) {
                const float *k = s->key_cache + loff + (size_t)t * (size_t)kvd +
                                 (size_t)(h / kv_mul) * (size_t)hd;
                float score = 0.0f;
                for (int i = 0; i < hd; i++)
                    score += q[i] * k[i];
                score /= sqrtf((float)hd);
                att[t] = score;
            }
            add_noise(p, att, (size_t)pos + 1);
            if (p && p->rep) {
                for (int t = 0; t <= pos; t++) {
                    if (att[t] < p->rep->score_min)
                        p->rep->score_min = att[t];
                    if (att[t] > p->rep->score_max)
                        p->rep->score_max = att[t];
                }
            }
            softmax_row(att, pos + 1, p, s->sm);
            float *xb = s->xb + (size_t)h * (size_t)hd;
            memset(xb, 0, (size_t)hd * sizeof(float));
            for (int t = 0; t <= pos; t++) {
                const float *v = s->value_cache + loff + (size_t)t * (size_t)kvd +
                                 (size_t)(h / kv_mul) * (size_t)hd;
                float a = att[t];
                for (int i = 0; i < hd; i++)
                    xb[i] += a * v[i];
            }
        }
        add_noise(p, s->xb, (size_t)qd);
        matmul(s->xb2, s->xb, ly->wo, ly->bo, qd, dim);
        add_noise(p, s->xb2, (size_t)dim);
        for (int i = 0; i < dim; i++)
            x[i] += s->xb2[i];
        add_noise(p, x, (size_t)dim);

        if (gpt2)
            layernorm(s->xb, x, ly->ffn_norm, ly->ffn_norm_b, dim, c->norm_eps, p);
        else
            rmsnorm(s->xb, x, ly->ffn_norm, dim, c->norm_eps, p);

        if (gpt2) {
            matmul(s->hb, s->xb, ly->w1, ly->b1, dim, hid);
            add_noise(p, s->hb, (size_t)hid);
            const ts_nonlinear_approx_t *ga = approx_of(p, TS_NL_FN_GELU);
            for (int i = 0; i < hid; i++) {
                float v = s->hb[i];
                if (ga) {
                    s->hb[i] = (float)ts_nonlinear_approx_eval_stats(ga, TS_NL_FN_GELU, v,
                                                                     stats_of(p, TS_NL_FN_GELU));
                } else {
                    note_exact(p, TS_NL_FN_GELU, v);
                    s->hb[i] =
                        0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
                }
            }
        } else {
            matmul(s->hb, s->xb, ly->w1, NULL, dim, hid);
            matmul(s->hb2, s->xb, ly->w3, NULL, dim, hid);
            add_noise(p, s->hb, (size_t)hid);
            add_noise(p, s->hb2, (size_t)hid);
            const ts_nonlinear_approx_t *sa = approx_of(p, TS_NL_FN_SILU);
            for (int i = 0; i < hid; i++) {
                float val = s->hb[i];
                if (sa) {
                    val = (float)ts_nonlinear_approx_eval_stats(sa, TS_NL_FN_SILU, val,
                                                                stats_of(p, TS_NL_FN_SILU));
                } else {
                    note_exact(p, TS_NL_FN_SILU, val);
                    val *= (1.0f / (1.0f + expf(-val)));
                }
                val *= s->hb2[i];
                s->hb[i] = val;
            }
            add_noise(p, s->hb, (size_t)hid);
        }
        matmul(s->xb, s->hb, ly->w2, ly->b2, hid, dim);
        add_noise(p, s->xb, (size_t)dim);
        for (int i = 0; i < dim; i++)
            x[i] += s->xb[i];
        add_noise(p, x, (size_t)dim);
        if (p && p->layer_out)
            memcpy(p->layer_out + (size_t)l * (size_t)dim, x, (size_t)dim * sizeof(float));
    }

    if (gpt2)
        layernorm(x, x, m->final_norm, m->final_norm_b, dim, c->norm_eps, p);
    else
        rmsnorm(x, x, m->final_norm, dim, c->norm_eps, p);
    matmul(s->logits, x, m->wcls, NULL, dim, c->vocab_size);
    add_noise(p, s->logits, (size_t)c->vocab_size);
    s->next_pos = pos + 1;
    *logits = s->logits;
    return TS_OK;
}

ts_status_t ts_llm_forward(const ts_llm_model_t *m, ts_llm_state_t *s, int token, int pos,
                           const float **logits)
{
    return ts__llm_forward_ex(m, s, token, pos, NULL, logits);
}

ts_status_t ts_llm_state_kv(const ts_llm_model_t *m, const ts_llm_state_t *s, int layer,
                            const float **k, const float **v, int *n_pos)
{
    if (!m || !s || !k || !v || !n_pos || layer < 0 || layer >= m->cfg.n_layers ||
        s->kvd != m->cfg.n_kv_heads * m->cfg.head_dim)
        return TS_EINVAL;
    size_t loff = (size_t)layer * (size_t)s->n_ctx * (size_t)s->kvd;
    *k = s->key_cache + loff;
    *v = s->value_cache + loff;
    *n_pos = s->next_pos;
    return TS_OK;
}

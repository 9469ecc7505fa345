/*
 * Sampling (greedy, temperature, top-k, top-p) from a seeded AES-CTR stream,
 * and the generation loop.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/llm/llm_int.h"

#define SAMPLER_STREAM 0x6c6c6d73u /* "llms" */

struct ts_llm_sampler {
    ts_llm_sampler_cfg_t cfg;
    ts_prng_t *prng;
    double *probs;
    int cap;
};

int ts_llm_argmax(const float *logits, int n)
{
    if (!logits || n <= 0)
        return -1;
    int best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

double ts_llm_logit_margin(const float *logits, int n)
{
    if (!logits || n < 2)
        return 0.0;
    float b1 = -INFINITY, b2 = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (logits[i] > b1) {
            b2 = b1;
            b1 = logits[i];
        } else if (logits[i] > b2) {
            b2 = logits[i];
        }
    }
    return (double)b1 - (double)b2;
}

static bool cfg_ok(const ts_llm_sampler_cfg_t *c)
{
    return c && isfinite(c->temperature) && c->temperature >= 0.0f && c->top_k >= 0 &&
           isfinite(c->top_p) && c->top_p >= 0.0f;
}

typedef struct {
    double p;
    int i;
} pi_t;

static int cmp_desc(const void *a, const void *b)
{
    const pi_t *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return x->i - y->i;
}

ts_status_t ts_llm_sampler_probs(const ts_llm_sampler_cfg_t *cfg, const float *logits, int n,
                                 double *probs)
{
    if (!cfg_ok(cfg) || !logits || n <= 0 || !probs)
        return TS_EINVAL;
    if (cfg->temperature == 0.0f) {
        memset(probs, 0, (size_t)n * sizeof(double));
        probs[ts_llm_argmax(logits, n)] = 1.0;
        return TS_OK;
    }
    double mx = logits[0];
    for (int i = 1; i < n; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        probs[i] = exp((logits[i] - mx) / cfg->temperature);
        sum += probs[i];
    }
    for (int i = 0; i < n; i++)
        probs[i] /= sum;
    bool use_k = cfg->top_k > 0 && cfg->top_k < n;
    bool use_p = cfg->top_p > 0.0f && cfg->top_p < 1.0f;
    if (!use_k && !use_p)
        return TS_OK;
    pi_t *v = ts_malloc((size_t)n * sizeof(pi_t));
    if (!v)
        return TS_ENOMEM;
    for (int i = 0; i < n; i++) {
        v[i].p = probs[i];
        v[i].i = i;
    }
    qsort(v, (size_t)n, sizeof(pi_t), cmp_desc);
    int keep = use_k ? cfg->top_k : n;
    if (use_p) {
        /* Renormalize the top-k mass first, then take the smallest prefix
         * reaching top_p (always at least one token). */
        double mass = 0.0;
        for (int i = 0; i < keep; i++)
            mass += v[i].p;
        double cum = 0.0;
        int j = 0;
        while (j < keep) {
            cum += v[j].p / mass;
            j++;
            if (cum >= cfg->top_p)
                break;
        }
        keep = j;
    }
    double kept = 0.0;
    for (int i = 0; i < keep; i++)
        kept += v[i].p;
    memset(probs, 0, (size_t)n * sizeof(double));
    for (int i = 0; i < keep; i++)
        probs[v[i].i] = v[i].p / kept;
    ts_free(v);
    return TS_OK;
}

ts_status_t ts_llm_sampler_new(const ts_llm_sampler_cfg_t *cfg, uint64_t seed,
                               ts_llm_sampler_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!cfg_ok(cfg))
        return TS_EINVAL;
    ts_llm_sampler_t *s = ts_calloc(1, sizeof(*s));
    if (!s)
        return TS_ENOMEM;
    s->cfg = *cfg;
    uint8_t key[TS_SEED_BYTES] = {0};
    for (int i = 0; i < 8; i++)
        key[i] = (uint8_t)(seed >> (8 * i));
    ts_status_t st = ts_prng_new_seeded(key, SAMPLER_STREAM, &s->prng);
    if (st != TS_OK) {
        ts_free(s);
        return st;
    }
    *out = s;
    return TS_OK;
}

void ts_llm_sampler_free(ts_llm_sampler_t *s)
{
    if (!s)
        return;
    ts_prng_free(s->prng);
    ts_free(s->probs);
    ts_free(s);
}

ts_status_t ts_llm_sampler_sample(ts_llm_sampler_t *s, const float *logits, int n, int *out)
{
    if (!s || !logits || n <= 0 || !out)
        return TS_EINVAL;
    if (s->cfg.temperature == 0.0f) {
        *out = ts_llm_argmax(logits, n);
        return TS_OK;
    }
    if (n > s->cap) {
        double *np = ts_realloc(s->probs, (size_t)n * sizeof(double));
        if (!np)
            return TS_ENOMEM;
        s->probs = np;
        s->cap = n;
    }
    ts_status_t st = ts_llm_sampler_probs(&s->cfg, logits, n, s->probs);
    if (st != TS_OK)
        return st;
    double u;
    st = ts_prng_double(s->prng, &u);
    if (st != TS_OK)
        return st;
    double cum = 0.0;
    int last = -1;
    for (int i = 0; i < n; i++) {
        if (s->probs[i] <= 0.0)
            continue;
        last = i;
        cum += s->probs[i];
        if (u < cum) {
            *out = i;
            return TS_OK;
        }
    }
    *out = last >= 0 ? last : ts_llm_argmax(logits, n); /* rounding left u above the sum */
    return TS_OK;
}

ts_status_t ts_llm_generate(const ts_llm_model_t *m, ts_llm_sampler_t *sampler, const int *prompt,
                            size_t n_prompt, size_t n_total, bool stop_eos, int eos_id,
                            ts_llm_token_cb on_token, void *ctx, int *out, size_t *n_out)
{
    if (!m || !prompt || n_prompt == 0 || !out || !n_out)
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
    ts_llm_state_t *s;
    ts_status_t st = ts_llm_state_new_ctx(m, (int)n_total, &s);
    if (st != TS_OK)
        return st;
    size_t n = n_prompt;
    for (size_t pos = 0; pos + 1 < n_total; pos++) {
        const float *logits;
        st = ts_llm_forward(m, s, out[pos], (int)pos, &logits);
        if (st != TS_OK)
            break;
        if (pos + 1 < n_prompt)
            continue;
        int next;
        if (sampler)
            st = ts_llm_sampler_sample(sampler, logits, c->vocab_size, &next);
        else
            next = ts_llm_argmax(logits, c->vocab_size);
        if (st != TS_OK)
            break;
        out[pos + 1] = next;
        n = pos + 2;
        if (on_token)
            on_token(ctx, out[pos], next);
        if (stop_eos && next == eos_id)
            break;
    }
    ts_llm_state_free(s);
    *n_out = n;
    return st;
}

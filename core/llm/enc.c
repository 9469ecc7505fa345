/*
 * core/llm encrypted decode engine: packing, matrix-vector products by
 * periodic diagonals with baby-step giant-step (plaintext biases), RMSNorm and
 * LayerNorm (one norm routine), RoPE, learned positions, attention over an
 * encrypted KV cache with the max-free softmax, SwiGLU and GELU FFNs, LM head.
 * See the overview in core/llm/llm.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/llm/llm_int.h"

#define ENC_MAX_N1 64

/*
 * Bootstrap precision and magnitude bounds. The bootstrapper scales its
 * level-0 input so that a value of 1 at the declared scale sits at 2^-r of
 * q_0 (the message ratio: r = 12 up to 2^11 slots, 10 at the lanes' 2^14),
 * where the sine's distortion (2 pi t)^2 / 6 is at most ~2^-21 (r = 12) or
 * ~2^-17 (r = 10) relative, for a vector whose coefficients are as large as
 * its values; its own error is then about 2^-19.5 of that unit (measured:
 * ~1.1e-6 at boot-n16-dense, 2^10-2^11 slots; ~2^-21 at 2^14 with r = 10).
 * A value up to B is bootstrapped with its scale declared B times larger (it
 * reads v / B), so the absolute error is ~1.1e-6 B, and a value beyond B is
 * distorted by up to ~(2 pi 2^-r v / B)^2 / 6 relative (graceful: 1e-4 at
 * 16 B for r = 12, 1.6e-3 for r = 10). The engine
 * therefore bootstraps every value with the bound of its section: values
 * with no known bound (activations) at ENC_BOOT_BOUND (64 keeps a few
 * hundred in the sine's linear range), the softmax's and the norms' values
 * at the bounds their intervals give (bound_set). At 64 positions a bound
 * of 64 on the softmax's values cost ~4 bits of the logits: their errors
 * are multiplied by 1/sum (up to n) in the last normalization.
 */
#define ENC_BOOT_BOUND 64.0

typedef ts_ckks_ciphertext_t ct_t;

struct ts_llm_enc {
    const ts_llm_model_t *m;
    ts_ckks_params_t *params;
    ts_llm_enc_config_t cfg;
    const ts_boot_t *boot;
    const ts_boot_t *boot_pd; /* the residual stream's, at pd slots (NULL: boot) */
    int slots, log_slots, pd, ph, pv;
    /* lanes (ts_llm_enc_config_t lanes): ciphertexts carry cs = slots lanes
     * slots, 2^log_cs, lane l at slots j lanes + l; every rotation by r of
     * one lane's layout is a rotation by r lanes */
    int lanes, cs, log_cs;
    int dim, hid, vocab, nh, hd, nl;
    int max_pos;
    double delta;
    ts_nonlinear_approx_t *a_exp, *a_recip, *a_rsqrt, *a_silu, *a_recip_norm, *a_recip_last,
        *a_gelu;
    /* GPT2: LayerNorm, biases, learned positions, GELU. The norms run without
     * gain and bias (out = (x - mean) / sqrt(var + eps)); gain g and bias b of
     * a norm are folded into the matrices it feeds: W diag(g) (the products
     * w_ij g_j of two floats are exact in double) and the bias W b + b_W
     * (summed in double). bias_raw / bias_fold: [n_layers][bias_stride] in
     * the order bq bk bv bo b1 b2, then the LM head's bias (raw: none). */
    bool gpt2;
    double *bias_raw, *bias_fold;
    size_t bias_stride;
    /* grouped-query attention: wk and wv with each key/value head's rows
     * repeated for the n_heads / n_kv_heads query heads that share it
     * ([n_layers][dim][dim]); NULL for multi-head attention */
    float *wk_x, *wv_x;
    /* per layer: the largest |k_i| and |v_i| a key and a value row can
     * take, [2 layer] and [2 layer + 1] (kv_bound_of); the attention
     * output's is v's (a convex combination of the rows) */
    double *kv_bound;
    /* bit 2l (2l + 1): bootstrap the residual stream with the attention (FFN)
     * output of layer l before adding them, where that lets the rest of the
     * step land with fewer bootstraps (chosen by ts__llm_enc_place from the
     * engine's own plan; 0 without bootstrapping) */
    uint64_t resid_boot;
    uint64_t resid_boot_pass; /* a prefill pass's (placed for it, defer_choose) */
    /* levels dropped right after the step's i-th bootstrap (ts__llm_enc_boot_drops) */
    uint8_t *boot_drop;
    size_t n_boot_drop;
    /* a pass's (ts__llm_enc_boot_drops_pass): [0] after a pass or a
     * prefilled cache, [1] after ordinary steps (its plans differ: the K/V
     * refresh). What plans without a session take (tessera plan --prefill
     * [--after-steps]); a session's passes find theirs from their caches'
     * actual levels (pass_state), which give these two in those states */
    uint8_t *boot_drop_pass[2];
    size_t n_boot_drop_pass[2];
    /* lanes: an ordinary step's K row level per layer (ts__llm_enc_step_rows),
     * the least a prefill's shared rows must reach (NULL: unknown) */
    int8_t *row_lv;
    /* bumped whenever the placement (and so every drop list) changes
     * (ts__llm_enc_set_resid_boot): sessions' lists of an older one are stale */
    unsigned gen;
    /* The residual stream's scale: the step carries ks x instead of x, with
     * ks^2 = al / dim (al: the CKKS 1/sqrt series' domain-map slope) or 1 / dim
     * (1/sqrt in TFHE), so a norm's sum of squares is already the mapped
     * (or plain) mean and the norm spends no level on it. The input comes in
     * that unit (ts_llm_enc_embed, ts_llm_enc_encrypt_token), the matrices
     * that write the stream (wo, w2 and their biases) carry ks, those that
     * read a norm's output 1 / ks (no level either way). */
    double ks;
    /* the step's norms deferred (llm_int.h ts__llm_enc_shape_t norm_defer):
     * chosen in ts_llm_enc_new where the plan predicts less time; a prefill
     * pass's likewise (norm_defer_pass) */
    bool norm_defer, norm_defer_pass;
};

/* The primitives the engine evaluates (index into the session's TFHE objects). */
enum { P_EXP, P_RECIP, P_RSQRT, P_SILU, P_RECIP_NORM, P_RECIP_LAST, P_GELU, P_COUNT };

#define PASS_MEMO 4 /* struct ts_llm_enc_session memo */

struct ts_llm_enc_session {
    const ts_llm_enc_t *e;
    const ts_boot_t *boot;    /* e->boot, or a view with the session's keys */
    const ts_boot_t *boot_pd; /* e->boot_pd, or a view; NULL: none */
    ts_ckks_evaluator_t *ev;
    ts_ckks_encoder_t *ecd;
    ts_ckks_plaintext_t *pt;
    double *buf;
    ct_t **kc, **vc;
    /* a speculative prefill's rows before lane_share, per layer (NULL: none
     * pending): ts_llm_enc_commit takes the rejected ones back out */
    ct_t **pk, **pv;
    int spec_n; /* the pending pass's positions, next_pos - spec_n on (0: none) */
    bool spec;  /* the pass now running keeps its rows (pk, pv) */
    int next_pos;
    /* the step's positions: lane l at pos0 + l lane_step (lane_step 0: every
     * lane at pos0, independent sequences; 1: a prefill, consecutive
     * positions of one sequence whose keys and values every lane shares) */
    int pos0, lane_step, lane_n; /* a prefill's lanes from lane_n on repeat lane lane_n - 1's
                                    position and share nothing */
    bool buf_lanes;              /* s->buf holds every lane's values (encode_lanes: no spread) */
    uint64_t nboot;
    bool in_step;   /* inside ts_llm_enc_step: the engine's boot_drop applies */
    size_t boot_ev; /* bootstraps of the current step so far */
    /* a pass's drops after bootstraps, found from its caches' levels
     * (pass_state): the last PASS_MEMO found, and the running pass's */
    struct {
        int8_t *lv; /* 2 n_layers (ts__llm_enc_pass_t cache_lv); NULL: unused */
        uint8_t *drop;
        size_t n;
        unsigned gen; /* the engine's (struct ts_llm_enc gen) when found */
    } memo[PASS_MEMO];
    int memo_next;
    const uint8_t *pass_drop;
    size_t n_pass_drop;
    ts_convert_t *cv;                   /* TFHE side (borrowed), NULL when unused */
    ts_nonlinear_slots_t *nls[P_COUNT]; /* per primitive evaluated in TFHE */
    int sub;                            /* slots [0, sub) map onto the small ring */
    ts_llm_enc_stats_t stats;
    int stage;     /* ts_llm_stage_t being timed */
    uint64_t mark; /* ts_now_ns() when it began */
    double bound;  /* magnitude bound of what the current section bootstraps (bound_set) */
    ts_llm_enc_probe_fn probe; /* ts_llm_enc_session_set_probe; NULL: none */
    void *probe_ctx;
    int layer; /* the step's layer now running, for the probe (-1: none) */
};

static int pow2_at_least(int n)
{
    int p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* The widest padded vector the engine packs: pow2 of dim, FFN width, vocabulary. */
static int widest_vector(const ts_llm_config_t *c)
{
    int w = pow2_at_least(c->dim), h = pow2_at_least(c->hidden_dim),
        v = pow2_at_least(c->vocab_size);
    return w > h ? (w > v ? w : v) : (h > v ? h : v);
}

static int baby_steps(int pin)
{
    int n1 = 1;
    while (n1 * n1 < pin)
        n1 <<= 1;
    return n1 > ENC_MAX_N1 ? ENC_MAX_N1 : n1;
}

static void spec_poly(ts_nonlinear_spec_t *s, double lo, double hi, int degree)
{
    memset(s, 0, sizeof(*s));
    s->method = TS_NL_POLY;
    s->lo = lo;
    s->hi = hi;
    s->degree = degree;
}

static void spec_iter(ts_nonlinear_spec_t *s, double lo, double hi, int degree, int steps)
{
    memset(s, 0, sizeof(*s));
    s->method = TS_NL_ITER;
    s->lo = lo;
    s->hi = hi;
    s->degree = degree;
    s->steps = steps;
}

void ts_llm_enc_config_default(ts_llm_enc_config_t *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    /* Ranges from `tessera simulate` on aidreams260K (scores / 8 in [-2.7, 2.0],
     * softmax sums in [0.024, 91], mean squares in [0.012, 0.54], SiLU inputs in
     * [-4.4, 3.6]) with margin. */
    cfg->softmax_k = 3;
    spec_poly(&cfg->exp, -3.5, 2.5, 12);
    spec_iter(&cfg->recip, 0.02, 256.0, 0, 14);
    spec_iter(&cfg->rsqrt, 0.005, 1.0, 7, 2);
    spec_poly(&cfg->silu, -8.0, 8.0, 15);
    /* GPT2's GELU (unused by LLAMA): GELU(x) is x Phi(x), as smooth as SiLU,
     * on the same interval (GELU is 0 below -4 and x above 4 to 1e-4, so the
     * interval only has to hold the pre-activations; the tests size it for
     * their model from measured ranges). */
    spec_poly(&cfg->gelu, -8.0, 8.0, 15);
    cfg->recip_norm = cfg->recip;
    cfg->recip_last = cfg->recip;
}

static void spec_lut(ts_nonlinear_spec_t *s, double lo, double hi, int n_seg, int n_br,
                     ts_nonlinear_bounds_t bounds)
{
    memset(s, 0, sizeof(*s));
    s->method = TS_NL_LUT;
    s->lo = lo;
    s->hi = hi;
    s->n_seg = n_seg;
    s->n_br = n_br;
    s->bounds = bounds;
    s->index_bits = 5; /* >= log2 n_br; boxes of N_br / 64 coefficients in the look-up */
}

/* Bits of 1/x a softmax round before the last needs: its per-head factor
 * cancels in the next round, so it only has to keep the next round's sums in
 * that round's interval [0.8 / n, 1.25] around [1 / n, 1]. A relative error
 * eps scales those sums by (1 +- eps)^2, inside [0.8, 1.25] for eps <= 0.105,
 * i.e. 3.25 bits; 3.3 bits leaves the worst case at (1 -+ 0.102)^2 in
 * [0.806, 1.214]. (The rounds of aidreams260K at 16 positions take 5 steps
 * instead of 6 for 4 bits, at 128 positions 8 instead of 9.) */
#define COND_BITS 3.3
/* Bits of the last round's 1/x: 1/sum is one factor per head, so its error
 * scales that head's attention output by 1 +- 2^-LAST_BITS, about the
 * relative error a bootstrap of the residual stream leaves (~1.1e-6 x 64,
 * 2^-13.8: ENC_BOOT_BOUND). 12 bits take one Goldschmidt step less than
 * 24 (a level), no change in the logits' error at 16 positions (measured
 * in docs/benchmarks.md, session 11). */
#define LAST_BITS 12.0
/*
 * The 1/x spec on [lo, hi] (0 < lo < hi) to a relative 2^-bits whose
 * Goldschmidt division (enc.c divide) is shallowest: the linear start, depth
 * 1 + steps, or the Chebyshev-iteration guess of degree d
 * (ts_nonlinear ITER SCALED), depth chebyshev_depth(d) + 2 + steps; at
 * equal depth the one with the fewest ciphertext products that reaches a
 * quarter bit more (a margin for the CKKS noise), else `bits`. A guess may
 * need at most GUESS_MAX_NEED levels at once (its series and the first
 * product: the engine bootstraps den and num to that), the fewest a
 * bootstrap leaves among the presets the engine runs at (test-boot-n12: 7;
 * boot-n16-dense: 11-12). The ckks policy's first round, [0.02, 256] to
 * COND_BITS: depth 11 instead of 15 (degree 30 + 4 steps at the least-depth
 * Paterson-Stockmeyer split; 12 with the classic one); test_llm_plan prints
 * every round's.
 */
#define GUESS_MAX_NEED 7
/*
 * From this many positions the ckks policy's exp is the degree-7 series
 * (depth 3) instead of degree 12 (depth 4): its error, 3.1e-3 absolute on
 * [-3.5, 3] against 2e-7, moves the softmax's rows by at most 3.8e-3 but not
 * the logits (aidreams260K over seven prompts at 16, 64 and 128 positions:
 * max error 0.330 against 0.332, 881 of 889 teacher-forced argmaxes against
 * 883; `tessera simulate --policy ckks`), and the level it saves lets the
 * engine's placement at boot-n16-dense plan 16 bootstraps instead of 17 at
 * 2^12 and 2^13 working slots (118.7 -> 111.3 s planned at 128 positions)
 * and 7% less time at 2^11; at 2^9 and 2^10 slots it plans 1-2% more time
 * (the same 16, at higher levels), so fewer positions keep degree 12. The
 * threshold is 17, not 32, because a session of 17-32 positions (tesserad's
 * max_context, `tessera simulate -n`) already runs at 2^11 slots for a
 * 64-wide model, where `tessera bench decode` passes the slots' 32.
 */
#define EXP_SHALLOW_POS 17
static void spec_recip(ts_nonlinear_spec_t *s, double lo, double hi, double bits)
{
    /* pass 0: the least depth for `bits`; pass 1: at that depth, the fewest
     * products for a quarter bit more (a margin for the CKKS noise); pass 2,
     * when none reaches that: the fewest for `bits` */
    int best_depth = 0, best_d = 0, best_j = 0;
    double sigma = (hi + lo) / (hi - lo);
    for (int pass = 0; pass < 3; pass++) {
        double want = (pass == 1 ? bits + 0.25 : bits) * log(2.0), best_cost = INFINITY;
        bool found = false;
        for (int d = 0; d <= 1023; d++) {
            /* log of the start's error: the linear one's, or 1 / T_{d+1}(sigma) */
            double le = d ? -log(cosh((d + 1) * acosh(sigma))) : log((hi - lo) / (hi + lo));
            int j = 0;
            while (j < 30 && ldexp(1.0, j) * -le < want)
                j++;
            int guess = d ? (int)ts_ckks_chebyshev_depth((size_t)d) + 2 : 1;
            if (guess > GUESS_MAX_NEED)
                break; /* deeper guesses need more levels at once */
            int depth = guess + j;
            double cost = 2.0 * j;
            if (d) {
                int k = (int)ts_ckks_chebyshev_ps_k((size_t)d), lk = 0;
                while ((1 << lk) < (d + k) / k)
                    lk++;
                cost += (k - 1) + lk + (d + k - 1) / k + 2.0;
            }
            if (pass == 0 ? (!found || depth < best_depth)
                          : depth == best_depth && cost < best_cost) {
                if (pass == 0)
                    best_depth = depth;
                best_d = d;
                best_j = j;
                best_cost = cost;
                found = true;
            }
        }
        if (pass == 1 && found)
            break;
    }
    spec_iter(s, lo, hi, best_d, best_j);
    if (best_d > 0)
        s->iter = TS_NL_ITER_SCALED;
}

void ts_llm_enc_config_policy(ts_llm_enc_config_t *cfg, ts_sched_policy_t policy, int max_pos)
{
    if (!cfg)
        return;
    ts_llm_enc_config_default(cfg);
    if (max_pos < 1)
        max_pos = 1;
    if (policy == TS_SCHED_HYBRID) {
        /* Five normalize-and-square rounds: exp(z / 32) has a narrow range
         * (scaled scores of aidreams260K in [-24.9, 16.1]), so the first sum
         * divided by the positions, (1/n) sum_t exp(z_t / 16), lies in
         * [0.21, 2.7] and every 1/x becomes a narrow-range look-up: the first
         * on [0.125, 4], the later ones on the normalized sums [1/n, 1]. The
         * intermediate normalizations only condition the values (their
         * constant factors cancel in the last round). Mean squares of the
         * norms in [0.012, 0.48] plus eps. */
        cfg->softmax_k = 5;
        cfg->softmax_mean_first = true;
        spec_poly(&cfg->exp, -1.25, 1.0, 10);
        spec_lut(&cfg->recip, 0.125, 4.0, 2, 32, TS_NL_BOUNDS_LOG);
        spec_lut(&cfg->recip_norm, 0.8 / max_pos, 1.25, 2, 32, TS_NL_BOUNDS_LOG);
        spec_lut(&cfg->recip_last, 0.8 / max_pos, 1.25, 4, 32, TS_NL_BOUNDS_LOG);
        spec_lut(&cfg->rsqrt, 0.005, 1.0, 4, 32, TS_NL_BOUNDS_LOG);
        /* GELU (GPT2) as a segmented LUT with equal widths (ROSETTA) */
        spec_lut(&cfg->gelu, cfg->gelu.lo, cfg->gelu.hi, 4, 32, TS_NL_BOUNDS_UNIFORM);
        cfg->eval_gelu = TS_LLM_EVAL_LUT;
        cfg->eval_recip = TS_LLM_EVAL_LUT;
        cfg->eval_recip_norm = TS_LLM_EVAL_LUT;
        cfg->eval_recip_last = TS_LLM_EVAL_LUT;
        cfg->eval_rsqrt = TS_LLM_EVAL_LUT;
    } else if (policy == TS_SCHED_CKKS) {
        /* Centered scores (softmax_center): the first round's mean sum
         * (1/n) sum_t exp(z~_t / 4) is at least 1 (Jensen); on aidreams260K
         * over 128 free-running greedy positions it reached 5.5 ("I dream
         * of") to 43.9 ("Once upon a time"), the centered z~ / 8 stayed in
         * [-2.9, 2.7] for five prompts: 1/x on [0.8, 256] to COND_BITS in
         * depth 7 (uncentered, the sum on [0.02, 256]: depth 11). After the
         * first normalization the sums of squares lie in [1/n, 1] for n
         * positions: Goldschmidt on [0.8 / n, 1.25], the last round's to
         * LAST_BITS, the rounds between to COND_BITS; each from the
         * shallowest start (spec_recip) */
        cfg->softmax_center = true;
        cfg->softmax_mean_first = true;
        spec_poly(&cfg->exp, -3.5, 3.0, max_pos >= EXP_SHALLOW_POS ? 7 : 12);
        spec_recip(&cfg->recip, 0.8, 256.0, COND_BITS);
        spec_recip(&cfg->recip_last, 0.8 / max_pos, 1.25, LAST_BITS);
        spec_recip(&cfg->recip_norm, 0.8 / max_pos, 1.25, COND_BITS);
        /* 1/sqrt(x) on [0.005, 1]: the degree-31 Chebyshev interpolant
         * alone, 7.1 bits worst-case (7.7 on aidreams260K's mean squares,
         * [0.012, 0.54]) in depth 6 (the default's degree 7 and two Newton
         * steps: 5.0 bits in depth 9; test_llm_plan checks both). Degree 56
         * (12.6 bits, depth 7) until session 23: one level less on each
         * norm lets a deferred norm's FFN fit one 14-level bootstrap at
         * 2^13 slots (17 bootstraps per step instead of 20, docs/
         * benchmarks.md), and the simulated logits, argmax and perplexity of
         * three prompts at 16-128 positions stay within those of degree 56
         * (the error of the norm is a per-position factor, ~0.5% here). */
        cfg->rsqrt.degree = 31;
        cfg->rsqrt.steps = 0;
    } else if (policy == TS_SCHED_TFHE) {
        cfg->softmax_mean_first = true;
        cfg->recip_norm.lo = cfg->recip_last.lo = 0.8 / max_pos;
        cfg->recip_norm.hi = cfg->recip_last.hi = 1.25;
        cfg->eval_recip_last = TS_LLM_EVAL_PBS;
        cfg->eval_exp = cfg->eval_recip = cfg->eval_rsqrt = cfg->eval_silu = cfg->eval_recip_norm =
            TS_LLM_EVAL_PBS;
        cfg->eval_gelu = TS_LLM_EVAL_PBS;
    }
}

const ts_nonlinear_spec_t *ts_llm_enc_config_act(const ts_llm_enc_config_t *cfg,
                                                 const ts_llm_model_t *model)
{
    return model->cfg.arch == TS_LLM_ARCH_GPT2 ? &cfg->gelu : &cfg->silu;
}

bool ts_llm_enc_config_mean_first(const ts_llm_enc_config_t *cfg)
{
    return cfg && (cfg->softmax_mean_first || cfg->eval_recip != TS_LLM_EVAL_CKKS);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

const char *ts_llm_kind_name(int kind)
{
    static const char *const names[TS_LLM_KIND_COUNT] = {"exp",   "recip", "recip_norm",
                                                         "rsqrt", "silu",  "gelu"};
    return kind >= 0 && kind < TS_LLM_KIND_COUNT ? names[kind] : "?";
}

void ts_llm_kinds_format(unsigned mask, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    buf[0] = '\0';
    size_t n = 0;
    for (int k = 0; k < TS_LLM_KIND_COUNT; k++)
        if ((mask >> k) & 1u) {
            int w = snprintf(buf + n, size - n, "%s%s", n ? "," : "", ts_llm_kind_name(k));
            if (w < 0 || (size_t)w >= size - n)
                return;
            n += (size_t)w;
        }
    if (!n)
        snprintf(buf, size, "none");
}

ts_status_t ts_llm_kinds_parse(const char *text, unsigned *mask)
{
    if (!text || !mask)
        return TS_EINVAL;
    *mask = 0;
    if (!strcmp(text, "none"))
        return TS_OK;
    const char *p = text;
    for (;;) {
        size_t n = strcspn(p, ",");
        int k = 0;
        while (k < TS_LLM_KIND_COUNT &&
               !(strlen(ts_llm_kind_name(k)) == n && !memcmp(p, ts_llm_kind_name(k), n)))
            k++;
        if (k == TS_LLM_KIND_COUNT || (*mask >> k) & 1u)
            return TS_EINVAL; /* unknown, empty or repeated */
        *mask |= 1u << k;
        if (!p[n])
            return TS_OK;
        p += n + 1;
    }
}

unsigned ts_llm_enc_config_tfhe_kinds(const ts_llm_enc_config_t *cfg)
{
    if (!cfg)
        return 0;
    return (cfg->eval_exp != TS_LLM_EVAL_CKKS ? 1u << TS_LLM_KIND_EXP : 0) |
           (cfg->eval_recip != TS_LLM_EVAL_CKKS ? 1u << TS_LLM_KIND_RECIP : 0) |
           (cfg->eval_recip_norm != TS_LLM_EVAL_CKKS ? 1u << TS_LLM_KIND_RECIP_NORM : 0) |
           (cfg->eval_rsqrt != TS_LLM_EVAL_CKKS ? 1u << TS_LLM_KIND_RSQRT : 0) |
           (cfg->eval_silu != TS_LLM_EVAL_CKKS ? 1u << TS_LLM_KIND_SILU : 0) |
           (cfg->eval_gelu != TS_LLM_EVAL_CKKS ? 1u << TS_LLM_KIND_GELU : 0);
}

void ts_llm_enc_config_kinds(ts_llm_enc_config_t *cfg, ts_sched_policy_t policy, int max_pos,
                             unsigned tfhe_kinds)
{
    if (!cfg)
        return;
    ts_llm_enc_config_policy(cfg, policy, max_pos);
    ts_llm_eval_t tf = policy == TS_SCHED_TFHE ? TS_LLM_EVAL_PBS : TS_LLM_EVAL_LUT;
    ts_llm_eval_t *ev[TS_LLM_KIND_COUNT] = {&cfg->eval_exp,        &cfg->eval_recip,
                                            &cfg->eval_recip_norm, &cfg->eval_rsqrt,
                                            &cfg->eval_silu,       &cfg->eval_gelu};
    ts_nonlinear_spec_t *sp[TS_LLM_KIND_COUNT] = {&cfg->exp,   &cfg->recip, &cfg->recip_norm,
                                                  &cfg->rsqrt, &cfg->silu,  &cfg->gelu};
    ts_llm_enc_config_t ck; /* the ckks policy's specs */
    ts_llm_enc_config_policy(&ck, TS_SCHED_CKKS, max_pos);
    const ts_nonlinear_spec_t *ck_sp[TS_LLM_KIND_COUNT] = {&ck.exp,   &ck.recip, &ck.recip_norm,
                                                           &ck.rsqrt, &ck.silu,  &ck.gelu};
    for (int k = 0; k < TS_LLM_KIND_COUNT; k++) {
        bool to_tfhe = (tfhe_kinds >> k) & 1u;
        if (to_tfhe == (*ev[k] != TS_LLM_EVAL_CKKS))
            continue; /* where the policy's defaults put it: their spec */
        if (!to_tfhe) {
            *ev[k] = TS_LLM_EVAL_CKKS;
            if (k == TS_LLM_KIND_RECIP && policy == TS_SCHED_HYBRID) {
                /* the hybrid's first round divides the mean sum: Goldschmidt
                 * on the look-up's narrow interval, to COND_BITS (a round
                 * before the last) */
                spec_recip(sp[k], sp[k]->lo, sp[k]->hi, COND_BITS);
            } else {
                *sp[k] = *ck_sp[k];
            }
            continue;
        }
        *ev[k] = tf;
        if (tf == TS_LLM_EVAL_LUT && sp[k]->method != TS_NL_LUT) {
            bool log =
                k == TS_LLM_KIND_RECIP || k == TS_LLM_KIND_RECIP_NORM || k == TS_LLM_KIND_RSQRT;
            spec_lut(sp[k], sp[k]->lo, sp[k]->hi, 4, 32,
                     log ? TS_NL_BOUNDS_LOG : TS_NL_BOUNDS_UNIFORM);
        }
    }
    /* the last round goes where the normalized rounds go */
    cfg->eval_recip_last = cfg->eval_recip_norm;
    if (cfg->eval_recip_last == TS_LLM_EVAL_CKKS)
        cfg->recip_last = ck.recip_last;
    else if (cfg->eval_recip_last == TS_LLM_EVAL_LUT && cfg->recip_last.method != TS_NL_LUT)
        spec_lut(&cfg->recip_last, cfg->recip_norm.lo, cfg->recip_norm.hi, 4, 32, TS_NL_BOUNDS_LOG);
    if (cfg->eval_recip_norm != TS_LLM_EVAL_CKKS && max_pos >= 1) {
        cfg->recip_norm.lo = cfg->recip_last.lo = 0.8 / max_pos; /* the normalized-sum range */
        cfg->recip_norm.hi = cfg->recip_last.hi = 1.25;
    }
}

ts_status_t ts_llm_enc_config_from_plan(ts_llm_enc_config_t *cfg, const ts_sched_graph_t *g,
                                        const ts_sched_plan_t *plan, int max_pos, int *n_tfhe)
{
    if (!cfg || !g || !plan || plan->n_steps != ts_sched_graph_count(g))
        return TS_EINVAL;
    /* votes per primitive kind: [kind][0 = CKKS, 1 = TFHE] */
    int votes[TS_LLM_KIND_COUNT][2] = {{0}};
    for (size_t i = 0; i < plan->n_steps; i++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, i);
        if (!op || !ts_op_kind_is_nonarith(op->kind))
            continue;
        int k = -1;
        if (op->kind == TS_OP_EXP)
            k = TS_LLM_KIND_EXP;
        else if (op->kind == TS_OP_INVSQRT)
            k = TS_LLM_KIND_RSQRT;
        else if (op->kind == TS_OP_SILU)
            k = TS_LLM_KIND_SILU;
        else if (op->kind == TS_OP_GELU)
            k = TS_LLM_KIND_GELU;
        else if (op->kind == TS_OP_INV)
            k = ends_with(op->name, ".step0.inv") ? TS_LLM_KIND_RECIP : TS_LLM_KIND_RECIP_NORM;
        if (k >= 0)
            votes[k][plan->steps[i].scheme == TS_SCHEME_TFHE]++;
    }
    unsigned mask = 0;
    int n = 0;
    for (int k = 0; k < TS_LLM_KIND_COUNT; k++)
        if (votes[k][1] > votes[k][0]) {
            mask |= 1u << k;
            n++;
        }
    ts_llm_enc_config_kinds(cfg, plan->policy, max_pos, mask);
    if (n_tfhe)
        *n_tfhe = n;
    return TS_OK;
}

const char *ts_llm_eval_name(ts_llm_eval_t ev)
{
    return ev == TS_LLM_EVAL_CKKS  ? "ckks"
           : ev == TS_LLM_EVAL_LUT ? "lut"
           : ev == TS_LLM_EVAL_PBS ? "pbs"
                                   : "?";
}

void ts_llm_enc_config_to_sim(const ts_llm_enc_config_t *cfg, ts_llm_sim_config_t *sim)
{
    if (!cfg || !sim)
        return;
    ts_llm_sim_config_default(sim);
    sim->softmax_k = cfg->softmax_k;
    sim->prim[TS_NL_FN_EXP] = cfg->exp;
    sim->prim[TS_NL_FN_RECIP] = cfg->recip;
    sim->prim[TS_NL_FN_RSQRT] = cfg->rsqrt;
    sim->recip_norm = cfg->recip_norm;
    sim->recip_last = cfg->recip_last;
    sim->softmax_mean_first = ts_llm_enc_config_mean_first(cfg);
    sim->softmax_center = cfg->softmax_center;
    sim->prim[TS_NL_FN_SILU] = cfg->silu;
    sim->prim[TS_NL_FN_GELU] = cfg->gelu;
    /* what runs as one PBS per value: the TFHE mode's midpoint table of
     * 2^in_bits boxes on the spec's interval (ts_nonlinear_slots) */
    ts_nonlinear_slots_cfg_t sc;
    ts_nonlinear_slots_cfg_default(TS_NL_SLOTS_TFHE, &sc);
    struct {
        ts_llm_eval_t ev;
        ts_nonlinear_spec_t *sp;
    } pbs[] = {{cfg->eval_exp, &sim->prim[TS_NL_FN_EXP]},
               {cfg->eval_recip, &sim->prim[TS_NL_FN_RECIP]},
               {cfg->eval_rsqrt, &sim->prim[TS_NL_FN_RSQRT]},
               {cfg->eval_recip_norm, &sim->recip_norm},
               {cfg->eval_recip_last, &sim->recip_last},
               {cfg->eval_silu, &sim->prim[TS_NL_FN_SILU]},
               {cfg->eval_gelu, &sim->prim[TS_NL_FN_GELU]}};
    for (size_t i = 0; i < sizeof pbs / sizeof pbs[0]; i++)
        if (pbs[i].ev == TS_LLM_EVAL_PBS) {
            pbs[i].sp->method = TS_NL_PBS;
            pbs[i].sp->n_br = 1 << sc.in_bits;
        }
}

void ts_llm_enc_config_from_sim(const ts_llm_sim_config_t *sim, ts_llm_enc_config_t *cfg)
{
    if (!cfg || !sim)
        return;
    cfg->softmax_k = sim->softmax_k;
    cfg->softmax_mean_first = sim->softmax_mean_first;
    cfg->softmax_center = sim->softmax_center;
    cfg->exp = sim->prim[TS_NL_FN_EXP];
    cfg->recip = sim->prim[TS_NL_FN_RECIP];
    cfg->rsqrt = sim->prim[TS_NL_FN_RSQRT];
    cfg->silu = sim->prim[TS_NL_FN_SILU];
    cfg->gelu = sim->prim[TS_NL_FN_GELU];
}

void ts_llm_enc_free(ts_llm_enc_t *e)
{
    if (!e)
        return;
    ts_nonlinear_approx_free(e->a_exp);
    ts_nonlinear_approx_free(e->a_recip);
    ts_nonlinear_approx_free(e->a_rsqrt);
    ts_nonlinear_approx_free(e->a_silu);
    ts_nonlinear_approx_free(e->a_recip_norm);
    ts_nonlinear_approx_free(e->a_recip_last);
    ts_nonlinear_approx_free(e->a_gelu);
    ts_free(e->bias_raw);
    ts_free(e->bias_fold);
    ts_free(e->row_lv);
    ts_free(e->wk_x);
    ts_free(e->wv_x);
    ts_free(e->kv_bound);
    ts_free(e->boot_drop);
    ts_free(e->boot_drop_pass[0]);
    ts_free(e->boot_drop_pass[1]);
    ts_ckks_params_free(e->params);
    ts_free(e);
}

/* A spec fits where it is evaluated: CKKS needs the method the engine
 * implements, LUT a segmented LUT, PBS any interval (only lo, hi are read). */
static bool spec_fits(const ts_nonlinear_spec_t *sp, ts_llm_eval_t ev, ts_nonlinear_method_t ckks)
{
    switch (ev) {
    case TS_LLM_EVAL_CKKS:
        return sp->method == ckks;
    case TS_LLM_EVAL_LUT:
        return sp->method == TS_NL_LUT;
    case TS_LLM_EVAL_PBS:
        return sp->method != TS_NL_EXACT && sp->lo < sp->hi;
    default:
        return false;
    }
}

ts_status_t ts_llm_enc_supports(const ts_llm_model_t *model, const ts_ckks_params_t *params,
                                char *err, size_t err_size)
{
    if (!model || !params)
        return TS_EINVAL;
    const ts_llm_config_t *c = &model->cfg;
    int slots = (int)ts_ckks_params_slots(params);
    const char *arch = ts_llm_arch_name(c->arch);
    if (c->arch != TS_LLM_ARCH_LLAMA && c->arch != TS_LLM_ARCH_GPT2)
        return ts__llm_errf(TS_ENOTSUP, err, err_size, "architecture %d is not supported",
                            (int)c->arch);
    if (c->n_kv_heads < 1 || c->n_heads % c->n_kv_heads)
        return ts__llm_errf(TS_ENOTSUP, err, err_size,
                            "%s: %d query heads are not a multiple of %d key/value heads", arch,
                            c->n_heads, c->n_kv_heads);
    if (c->n_heads * c->head_dim != c->dim)
        return ts__llm_errf(TS_ENOTSUP, err, err_size,
                            "%s: %d heads of %d do not make the residual width %d", arch,
                            c->n_heads, c->head_dim, c->dim);
    if (c->head_dim & (c->head_dim - 1))
        return ts__llm_errf(TS_ENOTSUP, err, err_size,
                            "%s: head width %d is not a power of two (the per-head sums rotate "
                            "by powers of two)",
                            arch, c->head_dim);
    const int w[3] = {c->dim, c->hidden_dim, c->vocab_size};
    static const char *const wn[3] = {"residual width", "FFN width", "vocabulary"};
    for (int i = 0; i < 3; i++)
        if (slots % pow2_at_least(w[i]))
            return ts__llm_errf(TS_ENOTSUP, err, err_size,
                                "%s: the %s %d (padded to %d) does not divide the %d slots of "
                                "the parameters",
                                arch, wn[i], w[i], pow2_at_least(w[i]), slots);
    return TS_OK;
}

/* GPT2: the raw and the folded biases (see struct ts_llm_enc). */
static ts_status_t fold_biases(ts_llm_enc_t *e)
{
    const ts_llm_model_t *m = e->m;
    int d = e->dim, h = e->hid;
    e->bias_stride = 5 * (size_t)d + (size_t)h;
    size_t n = (size_t)e->nl * e->bias_stride + (size_t)e->vocab;
    e->bias_raw = ts_calloc(n, sizeof(double));
    e->bias_fold = ts_calloc(n, sizeof(double));
    if (!e->bias_raw || !e->bias_fold)
        return TS_ENOMEM;
    for (int l = 0; l < e->nl; l++) {
        const ts__llm_layer_t *ly = &m->layers[l];
        double *raw = e->bias_raw + (size_t)l * e->bias_stride;
        double *fold = e->bias_fold + (size_t)l * e->bias_stride;
        /* matrix, its bias, rows, the norm bias it follows (NULL: none) */
        const float *mw[6] = {ly->wq, ly->wk, ly->wv, ly->wo, ly->w1, ly->w2};
        const float *mb[6] = {ly->bq, ly->bk, ly->bv, ly->bo, ly->b1, ly->b2};
        const float *nb[6] = {
            ly->attn_norm_b, ly->attn_norm_b, ly->attn_norm_b, NULL, ly->ffn_norm_b, NULL};
        const int rows[6] = {d, d, d, d, h, d}, cols[6] = {d, d, d, d, d, h};
        for (int k = 0; k < 6; k++) {
            for (int r = 0; r < rows[k]; r++) {
                double b = mb[k] ? (double)mb[k][r] : 0.0, f = b;
                for (int j = 0; nb[k] && j < cols[k]; j++)
                    f += (double)mw[k][(size_t)r * cols[k] + j] * (double)nb[k][j];
                raw[r] = b;
                fold[r] = f;
            }
            raw += rows[k];
            fold += rows[k];
        }
    }
    double *fold = e->bias_fold + (size_t)e->nl * e->bias_stride;
    for (int r = 0; r < e->vocab; r++) {
        double f = 0.0;
        for (int j = 0; m->final_norm_b && j < d; j++)
            f += (double)m->wcls[(size_t)r * d + j] * (double)m->final_norm_b[j];
        fold[r] = f;
    }
    return TS_OK;
}

/*
 * Deferred norms for the ordinary step (pass: a lanes engine's prefill
 * passes) where the engine's plan predicts less time than without, each
 * form with its residual bootstraps: the step's placed for it (before the
 * drops after bootstraps are found; the entry's placement is the
 * non-deferred step's), a pass's either the step's or its own placement
 * (after the step's rows; at boot-n16-dense a 16-lane engine's pass plans 20
 * bootstraps with its own, 24 with the step's).
 */
static void defer_choose(ts_llm_enc_t *e, bool pass)
{
    bool *flag = pass ? &e->norm_defer_pass : &e->norm_defer;
    uint64_t m0 = e->resid_boot, best_m = m0;
    double ns[2] = {NAN, NAN}; /* [deferred], the best placement's */
    bool best_d = false;
    for (int d = 0; d < 2; d++) {
        *flag = d;
        uint64_t cand[2] = {m0, 0};
        int nc = 1;
        if (pass)
            cand[nc++] = ts__llm_enc_place(e, true);
        else if (d)
            cand[0] = ts__llm_enc_place(e, false);
        for (int k = 0; k < nc; k++) {
            double t = 0.0;
            if (!ts__llm_enc_defer_ns(e, pass, cand[k], &t))
                continue;
            bool take = isnan(ns[best_d]) || t < ns[best_d];
            if (isnan(ns[d]) || t < ns[d])
                ns[d] = t;
            if (take) {
                best_d = d;
                best_m = cand[k];
            }
        }
    }
    *flag = best_d;
    if (pass)
        e->resid_boot_pass = best_m;
    else
        e->resid_boot = e->resid_boot_pass = best_m;
    if (!isnan(ns[1]))
        ts_log(TS_LOG_DEBUG, "llm",
               "encrypted engine: %s norms %s, residual bootstraps 0x%llx%s (planned at %.1f s "
               "deferred, %.1f s not; built-in cost table)",
               pass ? "prefill" : "step", *flag ? "deferred" : "not deferred",
               (unsigned long long)best_m, pass && best_m != m0 ? ", not the step's" : "",
               ns[1] / 1e9, ns[0] / 1e9);
}

/*
 * e->kv_bound: per layer the largest |k_i| and |v_i| the key and value
 * projections can give. Their input is the norm's unit-gain output u,
 * ||u||_2 <= sqrt(dim) (RMSNorm: u = x / rms(x); LayerNorm: (x - mean) /
 * std), and the norm's gain (and GPT2's bias, folded) ride in the matrix,
 * so |y_i| <= sqrt(dim) ||w_i (.) g||_2 + |b_i| (Cauchy-Schwarz), in the
 * model's unit (matvec_which folds 1 / ks); RoPE (folded into wk) mixes a
 * key's rows in pairs, c w_i - s w_j with c^2 + s^2 = 1: at most sqrt(2)
 * times the largest row's. A softmax row's weights sum to ~1, so the
 * attention's output A V is bounded by v's (aidreams260K: k 13-15, v
 * 2.8-3.2, against the trace's largest 5.1 and 1.1).
 */
static double proj_bound(const ts_llm_enc_t *e, const float *w, const float *g, const double *b,
                         int rows)
{
    int d = e->dim;
    double top = 0.0;
    for (int r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int j = 0; j < d; j++) {
            double x = (double)w[(size_t)r * d + j] * (double)g[j];
            ss += x * x;
        }
        top = fmax(top, sqrt((double)d * ss) + (b ? fabs(b[r]) : 0.0));
    }
    return top;
}

static ts_status_t kv_bound_of(ts_llm_enc_t *e)
{
    const ts_llm_config_t *c = &e->m->cfg;
    int kvd = c->n_kv_heads * c->head_dim;
    e->kv_bound = ts_calloc(2 * (size_t)e->nl, sizeof(double));
    if (!e->kv_bound)
        return TS_ENOMEM;
    for (int l = 0; l < e->nl; l++) {
        const ts__llm_layer_t *ly = &e->m->layers[l];
        /* GPT2's folded biases: bq bk bv ... (fold_biases) */
        const double *bf = e->gpt2 ? e->bias_fold + (size_t)l * e->bias_stride : NULL;
        e->kv_bound[2 * l] = proj_bound(e, ly->wk, ly->attn_norm, bf ? bf + e->dim : NULL, kvd) *
                             (e->gpt2 ? 1.0 : sqrt(2.0));
        e->kv_bound[2 * l + 1] =
            proj_bound(e, ly->wv, ly->attn_norm, bf ? bf + 2 * (size_t)e->dim : NULL, kvd);
    }
    return TS_OK;
}

ts_status_t ts_llm_enc_new(const ts_llm_model_t *model, ts_ckks_params_t *params,
                           const ts_llm_enc_config_t *cfg, const ts_boot_t *boot,
                           ts_llm_enc_t **out)
{
    if (!model || !params || !out)
        return TS_EINVAL;
    *out = NULL;
    const ts_llm_config_t *c = &model->cfg;
    char why[256] = "";
    ts_status_t sup = ts_llm_enc_supports(model, params, why, sizeof why);
    if (sup != TS_OK) {
        ts_log(TS_LOG_DEBUG, "llm", "encrypted engine: %s", why);
        return sup;
    }
    bool gpt2 = c->arch == TS_LLM_ARCH_GPT2;
    ts_llm_enc_config_t def;
    if (!cfg) {
        ts_llm_enc_config_default(&def);
        cfg = &def;
    }
    if (cfg->softmax_k < 0 || cfg->softmax_k > 8 ||
        !spec_fits(&cfg->exp, cfg->eval_exp, TS_NL_POLY) ||
        (cfg->eval_exp == TS_LLM_EVAL_CKKS && cfg->exp.steps != 0) ||
        !spec_fits(&cfg->recip, cfg->eval_recip, TS_NL_ITER) ||
        !spec_fits(&cfg->recip_norm, cfg->eval_recip_norm, TS_NL_ITER) ||
        !spec_fits(&cfg->recip_last, cfg->eval_recip_last, TS_NL_ITER) ||
        !spec_fits(&cfg->rsqrt, cfg->eval_rsqrt, TS_NL_ITER) ||
        (cfg->eval_rsqrt == TS_LLM_EVAL_CKKS && cfg->rsqrt.degree < 1) ||
        (!gpt2 && !spec_fits(&cfg->silu, cfg->eval_silu, TS_NL_POLY)) ||
        (gpt2 && !spec_fits(&cfg->gelu, cfg->eval_gelu, TS_NL_POLY)))
        return TS_EINVAL;
    /* lanes: a power of two, CKKS only (the look-ups read one layout) */
    int lanes = cfg->lanes > 1 ? cfg->lanes : 1, ll = 0;
    while ((1 << ll) < lanes)
        ll++;
    if ((1 << ll) != lanes || ll > 10)
        return TS_EINVAL;
    if (lanes > 1 && ts_llm_enc_config_tfhe_kinds(cfg) != 0) {
        ts_log(TS_LOG_DEBUG, "llm", "encrypted engine: lanes need every primitive in CKKS");
        return TS_ENOTSUP;
    }
    /* the working slot count (per lane): configured, else the
     * bootstrapper's, else all */
    int ls = cfg->log_slots ? cfg->log_slots
             : boot         ? ts_boot_config(boot)->log_slots - ll
                            : ts_ckks_params_log_slots(params) - ll;
    int widest = widest_vector(c);
    if (ls < 1 || ls + ll > ts_ckks_params_log_slots(params) || (1 << ls) < widest ||
        (boot && ts_boot_config(boot)->log_slots != ls + ll)) {
        ts_log(TS_LOG_DEBUG, "llm",
               "encrypted engine: working slots 2^%d x %d lanes (bootstrapper 2^%d, parameters "
               "2^%d, widest vector %d)",
               ls, lanes, boot ? ts_boot_config(boot)->log_slots : -1,
               ts_ckks_params_log_slots(params), widest);
        return TS_EINVAL;
    }
    ts_llm_enc_t *e = ts_malloc(sizeof(*e));
    if (!e)
        return TS_ENOMEM;
    memset(e, 0, sizeof(*e));
    e->m = model;
    e->params = ts_ckks_params_ref(params);
    e->cfg = *cfg;
    e->boot = boot;
    e->log_slots = ls;
    e->slots = 1 << ls;
    e->lanes = lanes;
    e->log_cs = ls + ll;
    e->cs = 1 << e->log_cs;
    e->dim = c->dim;
    e->hid = c->hidden_dim;
    e->vocab = c->vocab_size;
    e->nh = c->n_heads;
    e->hd = c->head_dim;
    e->nl = c->n_layers;
    e->pd = pow2_at_least(c->dim);
    e->ph = pow2_at_least(c->hidden_dim);
    e->pv = pow2_at_least(c->vocab_size);
    e->delta = ts_ckks_params_scale(params);
    e->gpt2 = gpt2;
    ts_status_t st;
    if (gpt2 && (st = fold_biases(e)) != TS_OK)
        goto fail;
    e->max_pos = ts_llm_enc_positions_for(model, ls);
    if (c->n_kv_heads < c->n_heads) {
        /* GQA as MHA: query head h reads key/value head h / g; repeating the
         * rows of wk and wv makes k and v dim wide with that layout, so the
         * rest of the engine (RoPE, cache, scores) is unchanged */
        size_t dd = (size_t)c->dim * (size_t)c->dim, nl = (size_t)c->n_layers;
        int g = c->n_heads / c->n_kv_heads;
        st = TS_ENOMEM;
        if (nl > SIZE_MAX / sizeof(float) / dd / 2)
            goto fail;
        e->wk_x = ts_malloc(nl * dd * sizeof(float));
        e->wv_x = ts_malloc(nl * dd * sizeof(float));
        if (!e->wk_x || !e->wv_x)
            goto fail;
        for (size_t l = 0; l < nl; l++)
            for (int r = 0; r < c->dim; r++) {
                int src = (r / c->head_dim / g) * c->head_dim + r % c->head_dim;
                memcpy(e->wk_x + l * dd + (size_t)r * c->dim,
                       model->layers[l].wk + (size_t)src * c->dim, (size_t)c->dim * sizeof(float));
                memcpy(e->wv_x + l * dd + (size_t)r * c->dim,
                       model->layers[l].wv + (size_t)src * c->dim, (size_t)c->dim * sizeof(float));
            }
    }
    if ((st = kv_bound_of(e)) != TS_OK)
        goto fail;
    if ((st = ts_nonlinear_approx_new(TS_NL_FN_EXP, &cfg->exp, &e->a_exp)) != TS_OK ||
        (st = ts_nonlinear_approx_new(TS_NL_FN_RECIP, &cfg->recip, &e->a_recip)) != TS_OK ||
        (st = ts_nonlinear_approx_new(TS_NL_FN_RSQRT, &cfg->rsqrt, &e->a_rsqrt)) != TS_OK ||
        (st = ts_nonlinear_approx_new(TS_NL_FN_SILU, &cfg->silu, &e->a_silu)) != TS_OK ||
        (st = ts_nonlinear_approx_new(TS_NL_FN_RECIP, &cfg->recip_norm, &e->a_recip_norm)) !=
            TS_OK ||
        (st = ts_nonlinear_approx_new(TS_NL_FN_RECIP, &cfg->recip_last, &e->a_recip_last)) !=
            TS_OK ||
        (gpt2 && (st = ts_nonlinear_approx_new(TS_NL_FN_GELU, &cfg->gelu, &e->a_gelu)) != TS_OK))
        goto fail;
    {
        const ts_nonlinear_cheb_t *rc = ts_nonlinear_approx_cheb(e->a_rsqrt);
        double al = 1.0, be;
        if (cfg->eval_rsqrt == TS_LLM_EVAL_CKKS && rc)
            ts__llm_cheb_map(rc, &al, &be);
        e->ks = sqrt(al / e->dim);
    }
    e->resid_boot = e->resid_boot_pass = ts__llm_enc_place(e, false);
    if (!gpt2)
        defer_choose(e, false);
    if ((st = ts__llm_enc_boot_drops(e, &e->boot_drop, &e->n_boot_drop)) != TS_OK)
        goto fail;
    if (e->lanes > 1 && (st = ts__llm_enc_step_rows(e, &e->row_lv)) != TS_OK)
        goto fail;
    if (e->lanes > 1 && !gpt2)
        defer_choose(e, true);
    for (int k = 0; k < 2 && e->lanes > 1; k++)
        if ((st = ts__llm_enc_boot_drops_pass(e, k, &e->boot_drop_pass[k],
                                              &e->n_boot_drop_pass[k])) != TS_OK)
            goto fail;
    *out = e;
    return TS_OK;
fail:
    ts_llm_enc_free(e);
    return st;
}

double ts_llm_enc_stream_scale(const ts_llm_enc_t *e)
{
    return e ? e->ks : 0.0;
}

void ts__llm_enc_set_resid_boot(ts_llm_enc_t *e, uint64_t mask)
{
    if (!e)
        return;
    e->gen++;
    e->resid_boot = e->resid_boot_pass = mask;
    /* the drops belong to a placement: found again for this one (none on
     * failure: the search leaves the list empty then) */
    ts_free(e->boot_drop);
    e->boot_drop = NULL;
    e->n_boot_drop = 0;
    (void)ts__llm_enc_boot_drops(e, &e->boot_drop, &e->n_boot_drop);
    ts_free(e->row_lv);
    e->row_lv = NULL;
    if (e->lanes > 1)
        (void)ts__llm_enc_step_rows(e, &e->row_lv);
    for (int k = 0; k < 2; k++) {
        ts_free(e->boot_drop_pass[k]);
        e->boot_drop_pass[k] = NULL;
        e->n_boot_drop_pass[k] = 0;
        if (e->lanes > 1)
            (void)ts__llm_enc_boot_drops_pass(e, k, &e->boot_drop_pass[k], &e->n_boot_drop_pass[k]);
    }
}

ts_status_t ts_llm_enc_set_norm_defer(ts_llm_enc_t *e, bool defer)
{
    if (!e)
        return TS_EINVAL;
    if (defer && e->gpt2)
        return TS_ENOTSUP;
    e->norm_defer = e->norm_defer_pass = defer;
    /* placed as ts_llm_enc_new places: before any drops after bootstraps
     * (the search's plans would otherwise replay the old placement's) */
    ts_free(e->boot_drop);
    e->boot_drop = NULL;
    e->n_boot_drop = 0;
    ts__llm_enc_set_resid_boot(e, ts__llm_enc_place(e, false));
    return TS_OK;
}

bool ts_llm_enc_norm_defer(const ts_llm_enc_t *e)
{
    return e && e->norm_defer;
}

int ts_llm_enc_input_level(const ts_llm_enc_t *e)
{
    if (!e)
        return 0;
    return e->boot ? ts_boot_levels_left(e->boot) : ts_ckks_params_max_level(e->params);
}

int ts_llm_enc_max_positions(const ts_llm_enc_t *e)
{
    return e ? e->max_pos : 0;
}

int ts_llm_enc_slots(const ts_llm_enc_t *e)
{
    return e ? e->slots : 0;
}

int ts_llm_enc_lanes(const ts_llm_enc_t *e)
{
    return e ? e->lanes : 0;
}

int ts_llm_enc_log_slots_for(const ts_llm_model_t *m, const ts_ckks_params_t *p, int max_ctx)
{
    if (!m || !p)
        return 0;
    const ts_llm_config_t *c = &m->cfg;
    int cap = ts_ckks_params_log_slots(p);
    if (max_ctx <= 0)
        return cap;
    int64_t need = (int64_t)pow2_at_least(c->dim) * max_ctx;
    int ls = 1;
    while (ls < cap && ((int64_t)1 << ls < need || 1 << ls < widest_vector(c)))
        ls++;
    return ls;
}

int ts_llm_enc_positions_for(const ts_llm_model_t *m, int log_slots)
{
    if (!m || log_slots < 0 || log_slots > 30)
        return 0;
    int n = (1 << log_slots) / pow2_at_least(m->cfg.dim);
    return n < m->cfg.seq_len ? n : m->cfg.seq_len;
}

void ts__llm_enc_shape(const ts_llm_enc_t *e, ts__llm_enc_shape_t *out)
{
    memset(out, 0, sizeof(*out));
    out->m = e->m;
    out->params = e->params;
    out->cfg = &e->cfg;
    out->boot = e->boot;
    out->period_log_slots = e->boot_pd ? ts_boot_config(e->boot_pd)->log_slots : 0;
    out->boot_log_slots = e->boot ? ts_boot_config(e->boot)->log_slots : e->log_cs;
    out->log_cs = e->log_cs;
    out->slots = e->slots;
    out->pd = e->pd;
    out->ph = e->ph;
    out->pv = e->pv;
    out->dim = e->dim;
    out->hid = e->hid;
    out->vocab = e->vocab;
    out->nh = e->nh;
    out->hd = e->hd;
    out->nl = e->nl;
    out->max_pos = e->max_pos;
    out->a_exp = e->a_exp;
    out->a_rsqrt = e->a_rsqrt;
    out->a_recip = e->a_recip;
    out->a_recip_norm = e->a_recip_norm;
    out->a_recip_last = e->a_recip_last;
    out->a_silu = e->a_silu;
    out->a_gelu = e->a_gelu;
    out->gpt2 = e->gpt2;
    out->resid_boot = e->resid_boot;
    out->resid_boot_pass = e->resid_boot_pass;
    out->boot_drop = e->boot_drop;
    out->n_boot_drop = e->n_boot_drop;
    for (int k = 0; k < 2; k++) {
        out->boot_drop_pass[k] = e->boot_drop_pass[k];
        out->n_boot_drop_pass[k] = e->n_boot_drop_pass[k];
    }
    out->row_lv = e->row_lv;
    out->norm_defer = e->norm_defer;
    out->norm_defer_pass = e->norm_defer_pass;
}

static void add_raw(int64_t *steps, size_t cap, size_t *n, int64_t step, int64_t slots)
{
    step %= slots;
    if (step < 0)
        step += slots;
    if (step == 0)
        return;
    for (size_t i = 0; i < *n && i < cap; i++)
        if (steps && steps[i] == step)
            return;
    if (!steps) {
        /* counting: duplicates are only removed when writing; count an upper bound */
        (*n)++;
        return;
    }
    if (*n < cap)
        steps[*n] = step;
    (*n)++;
}

/* step r of one lane's layout: r lanes of the ciphertext's */
static void add_step(int64_t *steps, size_t cap, size_t *n, int64_t r, const ts_llm_enc_t *e)
{
    add_raw(steps, cap, n, r * e->lanes, e->cs);
}

static void mv_steps(int pin, const ts_llm_enc_t *e, int64_t *steps, size_t cap, size_t *n)
{
    int n1 = baby_steps(pin);
    for (int b = 1; b < n1; b++)
        add_step(steps, cap, n, b, e);
    for (int g = 1; g * n1 < pin; g++)
        add_step(steps, cap, n, (int64_t)g * n1, e);
}

ts_status_t ts_llm_enc_rotation_steps(const ts_llm_enc_t *e, int64_t *steps, size_t *count)
{
    if (!e || !count)
        return TS_EINVAL;
    size_t cap = steps ? *count : 0, n = 0;
    mv_steps(e->pd, e, steps, cap, &n);
    mv_steps(e->ph, e, steps, cap, &n);
    mv_steps(e->pv, e, steps, cap, &n); /* one-hot input (ts_llm_enc_embed) */
    for (int r = 1; r < e->pd; r <<= 1)
        add_step(steps, cap, &n, r, e); /* norm sums */
    for (int r = 1; r < e->hd; r <<= 1)
        add_step(steps, cap, &n, -r, e); /* head replication */
    for (int r = e->pd; r < e->slots; r <<= 1) {
        add_step(steps, cap, &n, r, e);  /* block sums */
        add_step(steps, cap, &n, -r, e); /* cache placement */
    }
    add_step(steps, cap, &n, -1, e); /* RoPE */
    if (e->lanes > 1) {
        /* raw +-2^i below the lanes: lane_share (a prefill's keys and values
         * to every lane) */
        for (int r = 1; r < e->lanes; r <<= 1) {
            add_raw(steps, cap, &n, r, e->cs);
            add_raw(steps, cap, &n, -r, e->cs);
        }
    }
    if (ts_llm_enc_uses_tfhe(e))
        for (int r = 1; r < e->pd; r <<= 1)
            add_step(steps, cap, &n, -r, e); /* spreading a looked-up norm */
    bool fits = !steps || n <= cap;
    *count = n;
    return fits ? TS_OK : TS_ERANGE;
}

int ts_llm_enc_rotation_level(const ts_llm_enc_t *e)
{
    if (!e)
        return -1;
    int level = ts_llm_enc_input_level(e);
    /* look-ups come back through the SlotToCoeff-first bootstrapper's
     * ModRecover, which lands above a bootstrap's output */
    ts_boot_config_t bc;
    int left;
    if (ts_llm_enc_uses_tfhe(e) && ts_llm_enc_tfhe_boot_config(e, &bc) == TS_OK &&
        ts_boot_depth(e->params, &bc, NULL, NULL, NULL, &left) == TS_OK && left > level)
        level = left;
    return level;
}

unsigned ts_llm_enc_tfhe_kinds(const ts_llm_enc_t *e)
{
    if (!e)
        return 0;
    unsigned k = ts_llm_enc_config_tfhe_kinds(&e->cfg);
    if (e->cfg.eval_recip_last != TS_LLM_EVAL_CKKS)
        k |= 1u << TS_LLM_KIND_RECIP;
    /* only the FFN activation the model has */
    k &= ~(1u << (e->gpt2 ? TS_LLM_KIND_SILU : TS_LLM_KIND_GELU));
    return k;
}

bool ts_llm_enc_uses_tfhe(const ts_llm_enc_t *e)
{
    return ts_llm_enc_tfhe_kinds(e) != 0;
}

ts_status_t ts_llm_enc_tfhe_literal(const ts_llm_enc_t *e, ts_tfhe_params_lit_t *lit)
{
    if (!e)
        return TS_EINVAL;
    return ts_llm_tfhe_literal(e->params, lit);
}

ts_status_t ts_llm_tfhe_literal(const ts_ckks_params_t *params, ts_tfhe_params_lit_t *lit)
{
    if (!params || !lit)
        return TS_EINVAL;
    /* 128-bit CKKS parameters get the 128-bit conversion set (N_br = 2^12,
     * n = 1024; core/convert's security gate); insecure test presets keep
     * the fast test set (N_br = 2^10, n = 256, BR gadget 2^12 x 3) */
    if (!ts_ckks_params_insecure(params))
        return ts_tfhe_params_preset("tfhe_conv128", lit);
    ts_status_t st = ts_tfhe_params_preset("tfhe_test_small", lit);
    if (st == TS_OK) {
        lit->log_n_br = 10;
        lit->br_levels = 3;
    }
    return st;
}

int ts_llm_boot_encap_h(const ts_ckks_params_t *params)
{
    return params && ts_ckks_params_secret(params) != TS_CKKS_SECRET_SPARSE_TERNARY ? 32 : 0;
}

ts_status_t ts_llm_boot_config(const ts_ckks_params_t *params, int log_slots, int encap_h,
                               int cts_levels, int stc_levels, ts_boot_config_t *cfg)
{
    if (!params || !cfg || cts_levels < 0 || stc_levels < 0)
        return TS_EINVAL;
    ts_status_t st = ts_boot_config_slots(params, log_slots, cfg);
    if (st != TS_OK)
        return st;
    if (cts_levels > 0)
        cfg->cts_levels = cts_levels;
    if (stc_levels > 0)
        cfg->stc_levels = stc_levels;
    if (encap_h > 0 && (st = ts_boot_config_encapsulate(params, encap_h, cfg)) != TS_OK)
        return st;
    int left = 0;
    st = ts_boot_depth(params, cfg, NULL, NULL, NULL, &left);
    return st != TS_OK ? st : left < 1 ? TS_EINVAL : TS_OK;
}

ts_status_t ts_llm_tfhe_boot_config(ts_ckks_params_t *params, int log_slots, int encap_h,
                                    ts_boot_config_t *cfg)
{
    if (!params || !cfg)
        return TS_EINVAL;
    ts_status_t st =
        ts_boot_config_slots(params, log_slots ? log_slots : ts_ckks_params_log_slots(params), cfg);
    if (st == TS_OK && encap_h > 0)
        st = ts_boot_config_encapsulate(params, encap_h, cfg);
    if (st != TS_OK)
        return st;
    cfg->order = TS_BOOT_STC_FIRST;
    cfg->real_only = true;
    return TS_OK;
}

ts_status_t ts_llm_enc_tfhe_boot_config(const ts_llm_enc_t *e, ts_boot_config_t *cfg)
{
    if (!e || !cfg)
        return TS_EINVAL;
    /* the same sparse-secret encapsulation as the main bootstrapper */
    return ts_llm_tfhe_boot_config(e->params, e->log_slots,
                                   e->boot ? ts_boot_config(e->boot)->encap_h : 0, cfg);
}

/* ------------------------------------------------------------ client side */

/* buf (slots values) encrypted at (level, scale): symmetric under sk, or
 * under the public key pk when sk is NULL (the server, for a client) */
static ts_status_t encrypt_buf(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                               const ts_ckks_public_key_t *pk, ts_prng_t *prng, const double *buf,
                               size_t slots, int level, double scale, ts_ckks_ciphertext_t *ct)
{
    if (sk)
        return ts_ckks_encrypt_sk_real(ecd, sk, buf, slots, slots, level, scale, prng, NULL, ct);
    ts_ckks_plaintext_t *pt = NULL;
    ts_status_t st = ts_ckks_plaintext_new(ts_ckks_ciphertext_params(ct), level, &pt);
    if (st == TS_OK)
        st = ts_ckks_encode_real(ecd, buf, slots, slots, level, scale, pt);
    if (st == TS_OK)
        st = ts_ckks_encrypt_pk(pk, pt, prng, ct);
    ts_ckks_plaintext_free(pt);
    return st;
}

/* n lanes (a power of two), lane l: v[l] (w values) with period per over
 * `slots` slots (0: the parameters' slots / n), interleaved */
static ts_status_t encrypt_lanes(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                 const ts_ckks_public_key_t *pk, ts_prng_t *prng,
                                 const float *const *v, int n, int w, int per, int slots, int level,
                                 ts_ckks_ciphertext_t *ct)
{
    if (!ecd || (!sk && !pk) || !prng || !v || n < 1 || (n & (n - 1)) || w <= 0 || per < w || !ct ||
        slots < 0)
        return TS_EINVAL;
    for (int l = 0; l < n; l++)
        if (!v[l])
            return TS_EINVAL;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(ct);
    if ((size_t)n > ts_ckks_params_slots(p))
        return TS_EINVAL;
    if (!slots)
        slots = (int)(ts_ckks_params_slots(p) / (size_t)n);
    if (slots & (slots - 1) || (size_t)slots * (size_t)n > ts_ckks_params_slots(p))
        return TS_EINVAL;
    if (slots % per)
        return TS_ENOTSUP;
    size_t total = (size_t)slots * (size_t)n;
    double *buf = ts_malloc(total * sizeof(double));
    if (!buf)
        return TS_ENOMEM;
    for (size_t k = 0; k < total; k++) {
        int i = (int)((k / (size_t)n) % (size_t)per);
        buf[k] = i < w ? (double)v[k % (size_t)n][i] : 0.0;
    }
    ts_status_t st = encrypt_buf(ecd, sk, pk, prng, buf, total, level, ts_ckks_params_scale(p), ct);
    ts_free_secret(buf);
    return st;
}

static ts_status_t encrypt_vec(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                               const ts_ckks_public_key_t *pk, ts_prng_t *prng, const float *v,
                               int w, int slots, int level, ts_ckks_ciphertext_t *ct)
{
    if (w <= 0)
        return TS_EINVAL;
    return encrypt_lanes(ecd, sk, pk, prng, &v, 1, w, pow2_at_least(w), slots, level, ct);
}

ts_status_t ts_llm_enc_encrypt_lanes(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                     ts_prng_t *prng, const float *const *v, int n, int w, int per,
                                     int slots, int level, ts_ckks_ciphertext_t *ct)
{
    if (!sk)
        return TS_EINVAL;
    return encrypt_lanes(ecd, sk, NULL, prng, v, n, w, per, slots, level, ct);
}

/* e's layout: lane l holds v[l] (w values, period pow2(w)), one vector in
 * every lane when v has one entry (n 1); under sk, else pk, at level */
static ts_status_t encrypt_input(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                 const ts_ckks_secret_key_t *sk, const ts_ckks_public_key_t *pk,
                                 ts_prng_t *prng, const float *const *v, int n, int w, int level,
                                 ts_ckks_ciphertext_t *ct)
{
    const float *one[1024];
    if (n == 1)
        for (int l = 0; l < e->lanes; l++)
            one[l] = v[0];
    return encrypt_lanes(ecd, sk, pk, prng, n == 1 ? one : v, e->lanes, w, pow2_at_least(w),
                         e->slots, level, ct);
}

ts_status_t ts_llm_enc_encrypt_input_pk(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                        const ts_ckks_public_key_t *pk, ts_prng_t *prng,
                                        const float *v, int w, int level, ts_ckks_ciphertext_t *ct)
{
    if (!e || !pk || !v)
        return TS_EINVAL;
    return encrypt_input(e, ecd, NULL, pk, prng, &v, 1, w, level, ct);
}

ts_status_t ts_llm_enc_encrypt_vec(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                   ts_prng_t *prng, const float *v, int w, int slots, int level,
                                   ts_ckks_ciphertext_t *ct)
{
    if (!sk)
        return TS_EINVAL;
    return encrypt_vec(ecd, sk, NULL, prng, v, w, slots, level, ct);
}

ts_status_t ts_llm_enc_encrypt_vec_pk(ts_ckks_encoder_t *ecd, const ts_ckks_public_key_t *pk,
                                      ts_prng_t *prng, const float *v, int w, int slots, int level,
                                      ts_ckks_ciphertext_t *ct)
{
    if (!pk)
        return TS_EINVAL;
    return encrypt_vec(ecd, NULL, pk, prng, v, w, slots, level, ct);
}

ts_status_t ts_llm_enc_encrypt_token(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                     const ts_ckks_secret_key_t *sk, ts_prng_t *prng, int token,
                                     ts_ckks_ciphertext_t *ct)
{
    if (!e || token < 0 || token >= e->vocab)
        return TS_EINVAL;
    /* in the residual stream's unit (ks; the float rounding, 2^-24
     * relative, is far below the CKKS noise) */
    float *v = ts_malloc((size_t)e->dim * sizeof(float));
    if (!v)
        return TS_ENOMEM;
    for (int i = 0; i < e->dim; i++)
        v[i] = (float)(e->ks * (double)e->m->tok_emb[(size_t)token * (size_t)e->dim + i]);
    const float *vv = v;
    ts_status_t st =
        encrypt_input(e, ecd, sk, NULL, prng, &vv, 1, e->dim, ts_llm_enc_input_level(e), ct);
    ts_free(v);
    return st;
}

ts_status_t ts_llm_enc_decrypt_lanes(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                     const ts_ckks_ciphertext_t *ct, int n, int first, int count,
                                     double *out, int w)
{
    if (!ecd || !sk || !ct || !out || n < 1 || (n & (n - 1)) || first < 0 || count < 1 ||
        count > n - first || w <= 0)
        return TS_EINVAL;
    size_t sl = ts_ckks_ciphertext_slots(ct);
    if (sl % (size_t)n || (size_t)w > sl / (size_t)n)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(ct);
    ts_ckks_plaintext_t *pt = NULL;
    size_t need = (size_t)w * (size_t)n;
    double *buf = ts_malloc(need * sizeof(double));
    ts_status_t st = buf ? ts_ckks_plaintext_new(p, ts_ckks_ciphertext_level(ct), &pt) : TS_ENOMEM;
    if (st == TS_OK)
        st = ts_ckks_decrypt(sk, ct, pt);
    if (st == TS_OK)
        st = ts_ckks_decode_real(ecd, pt, buf, need);
    for (int k = 0; st == TS_OK && k < count; k++)
        for (int i = 0; i < w; i++)
            out[(size_t)k * (size_t)w + (size_t)i] =
                buf[(size_t)i * (size_t)n + (size_t)(first + k)];
    ts_ckks_plaintext_free(pt);
    ts_free_secret(buf);
    return st;
}

int ts_llm_enc_logits_period(const ts_llm_enc_t *e)
{
    return e ? e->pv * e->lanes : 0;
}

ts_status_t ts_llm_enc_decrypt_logits(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                      const ts_ckks_ciphertext_t *ct, int n, int first, int count,
                                      double *out, int w)
{
    if (!ct || n < 1 || (n & (n - 1)) || w <= 0)
        return TS_EINVAL;
    size_t per = (size_t)pow2_at_least(w) * (size_t)n, sl = ts_ckks_ciphertext_slots(ct);
    if (per > sl || sl % per)
        return TS_EINVAL;
    /* the same ciphertext read at the period: the decoder then takes only
     * the coefficients of that subring (the average of the sl / per copies) */
    ts_ckks_ciphertext_t *c = NULL;
    ts_status_t st =
        ts_ckks_ciphertext_new(ts_ckks_ciphertext_params(ct), ts_ckks_ciphertext_level(ct), &c);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_copy(c, ct);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(c, ts_ckks_ciphertext_level(ct), 1,
                                         ts_ckks_ciphertext_scale(ct), per);
    if (st == TS_OK)
        st = ts_llm_enc_decrypt_lanes(ecd, sk, c, n, first, count, out, w);
    ts_ckks_ciphertext_free(c);
    return st;
}

ts_status_t ts_llm_enc_decrypt_lane(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                    const ts_ckks_ciphertext_t *ct, int n, int lane, double *out,
                                    int w)
{
    return ts_llm_enc_decrypt_lanes(ecd, sk, ct, n, lane, 1, out, w);
}

ts_status_t ts_llm_enc_decrypt_vec(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                   const ts_ckks_ciphertext_t *ct, float *v, int w)
{
    if (!ecd || !sk || !ct || !v || w <= 0 || (size_t)w > ts_ckks_ciphertext_slots(ct))
        return TS_EINVAL;
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(ct);
    ts_ckks_plaintext_t *pt = NULL;
    double *buf = ts_malloc((size_t)w * sizeof(double));
    ts_status_t st = buf ? ts_ckks_plaintext_new(p, ts_ckks_ciphertext_level(ct), &pt) : TS_ENOMEM;
    if (st == TS_OK)
        st = ts_ckks_decrypt(sk, ct, pt);
    if (st == TS_OK)
        st = ts_ckks_decode_real(ecd, pt, buf, (size_t)w);
    if (st == TS_OK)
        for (int i = 0; i < w; i++)
            v[i] = (float)buf[i];
    ts_ckks_plaintext_free(pt);
    ts_free(buf);
    return st;
}

static ts_status_t cache_encrypt(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                 const ts_ckks_secret_key_t *sk, const ts_ckks_public_key_t *pk,
                                 ts_prng_t *prng, const float *rows, int n, int level,
                                 ts_ckks_ciphertext_t *ct)
{
    if (!e || !ecd || (!sk && !pk) || !prng || !rows || !ct)
        return TS_EINVAL;
    if (n < 1 || n > e->max_pos)
        return TS_ERANGE;
    if (level < 0 || level > ts_ckks_params_max_level(e->params))
        return TS_ELEVEL;
    if (!ts_ckks_params_equal(ts_ckks_ciphertext_params(ct), e->params))
        return TS_EMISMATCH;
    const ts_llm_config_t *c = &e->m->cfg;
    int hd = e->hd, kvd = c->n_kv_heads * hd, g = e->nh / c->n_kv_heads;
    double *buf = ts_malloc((size_t)e->cs * sizeof(double));
    if (!buf)
        return TS_ENOMEM;
    /* block t = slots [t pd, (t + 1) pd) holds position t's dim-wide vector
     * (query head h reads key/value head h / g), zeros elsewhere: what
     * cache_put builds (the same in every lane) */
    for (int k = 0; k < e->cs; k++) {
        int j = k / e->lanes, t = j / e->pd, i = j % e->pd;
        buf[k] =
            t < n && i < e->dim ? (double)rows[(size_t)t * kvd + (i / hd / g) * hd + i % hd] : 0.0;
    }
    ts_status_t st = encrypt_buf(ecd, sk, pk, prng, buf, (size_t)e->cs, level, e->delta, ct);
    ts_free_secret(buf);
    return st;
}

ts_status_t ts_llm_enc_cache_encrypt(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                     const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                     const float *rows, int n, int level, ts_ckks_ciphertext_t *ct)
{
    if (!sk)
        return TS_EINVAL;
    return cache_encrypt(e, ecd, sk, NULL, prng, rows, n, level, ct);
}

ts_status_t ts_llm_enc_cache_encrypt_pk(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                        const ts_ckks_public_key_t *pk, ts_prng_t *prng,
                                        const float *rows, int n, int level,
                                        ts_ckks_ciphertext_t *ct)
{
    if (!pk)
        return TS_EINVAL;
    return cache_encrypt(e, ecd, NULL, pk, prng, rows, n, level, ct);
}

/* ---------------------------------------------------------------- session */

/* Forget a speculative pass's kept rows: its cache rows stay (all accepted). */
static void spec_drop(ts_llm_enc_session_t *s)
{
    for (int l = 0; s->pk && s->pv && l < s->e->nl; l++) {
        ts_ckks_ciphertext_free(s->pk[l]);
        ts_ckks_ciphertext_free(s->pv[l]);
        s->pk[l] = s->pv[l] = NULL;
    }
    s->spec_n = 0;
}

void ts_llm_enc_session_free(ts_llm_enc_session_t *s)
{
    if (!s)
        return;
    if (s->kc)
        for (int l = 0; l < s->e->nl; l++) {
            ts_ckks_ciphertext_free(s->kc[l]);
            ts_ckks_ciphertext_free(s->vc[l]);
        }
    spec_drop(s);
    for (int i = 0; i < PASS_MEMO; i++) {
        ts_free(s->memo[i].lv);
        ts_free(s->memo[i].drop);
    }
    ts_free(s->kc);
    ts_free(s->vc);
    ts_free(s->pk);
    ts_free(s->pv);
    for (int p = 0; p < P_COUNT; p++)
        ts_nonlinear_slots_free(s->nls[p]);
    ts_free(s->buf);
    ts_ckks_plaintext_free(s->pt);
    ts_ckks_encoder_free(s->ecd);
    ts_free(s);
}

ts_status_t ts_llm_enc_session_new(const ts_llm_enc_t *e, ts_ckks_evaluator_t *ev,
                                   ts_llm_enc_session_t **out)
{
    if (!e || !ev || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_llm_enc_session_t *s = ts_malloc(sizeof(*s));
    if (!s)
        return TS_ENOMEM;
    memset(s, 0, sizeof(*s));
    s->e = e;
    s->boot = e->boot;
    s->boot_pd = e->boot_pd;
    s->ev = ev;
    s->bound = ENC_BOOT_BOUND;
    s->lane_n = 1;
    ts_status_t st = ts_ckks_encoder_new(e->params, &s->ecd);
    if (st == TS_OK)
        st = ts_ckks_plaintext_new(e->params, ts_ckks_params_max_level(e->params), &s->pt);
    if (st == TS_OK) {
        s->buf = ts_malloc((size_t)e->cs * sizeof(double));
        s->kc = ts_malloc((size_t)e->nl * sizeof(ct_t *));
        s->vc = ts_malloc((size_t)e->nl * sizeof(ct_t *));
        s->pk = ts_calloc((size_t)e->nl, sizeof(ct_t *));
        s->pv = ts_calloc((size_t)e->nl, sizeof(ct_t *));
        if (!s->buf || !s->kc || !s->vc || !s->pk || !s->pv)
            st = TS_ENOMEM;
        else {
            memset(s->kc, 0, (size_t)e->nl * sizeof(ct_t *));
            memset(s->vc, 0, (size_t)e->nl * sizeof(ct_t *));
        }
    }
    if (st != TS_OK) {
        ts_llm_enc_session_free(s);
        return st;
    }
    *out = s;
    return TS_OK;
}

ts_status_t ts_llm_enc_session_set_boot(ts_llm_enc_session_t *s, const ts_boot_t *boot)
{
    if (!s || !boot || !s->e->boot)
        return TS_EINVAL;
    const ts_boot_config_t *a = ts_boot_config(boot), *b = ts_boot_config(s->e->boot);
    if (memcmp(a, b, sizeof(*a)) != 0)
        return TS_EMISMATCH;
    s->boot = boot;
    return TS_OK;
}

ts_status_t ts__llm_enc_boot_config(const ts_llm_enc_t *e, ts_boot_config_t *cfg)
{
    if (e->boot) {
        *cfg = *ts_boot_config(e->boot);
        return TS_OK;
    }
    return ts_llm_boot_config(e->params, e->log_cs, ts_llm_boot_encap_h(e->params),
                              e->cfg.boot_cts_levels, e->cfg.boot_stc_levels, cfg);
}

int ts_llm_enc_period_log_slots(const ts_llm_enc_t *e)
{
    ts_boot_config_t mc;
    if (!e || e->pd >= e->slots || ts__llm_enc_boot_config(e, &mc) != TS_OK ||
        mc.order != TS_BOOT_CTS_FIRST)
        return -1;
    return ts_log2_exact((uint64_t)e->pd) + (e->log_cs - e->log_slots);
}

ts_status_t ts_llm_enc_period_boot_config(const ts_llm_enc_t *e, ts_boot_config_t *cfg)
{
    if (!e || !cfg)
        return TS_EINVAL;
    int lp = ts_llm_enc_period_log_slots(e);
    ts_boot_config_t mc;
    if (lp < 0 || ts__llm_enc_boot_config(e, &mc) != TS_OK)
        return TS_ENOTSUP;
    /* the main one's level budgets (fewer slots could take fewer): the same
     * levels left, so the engine's level plan holds for both */
    return ts_boot_config_slots_like(e->params, lp, &mc, cfg);
}

/* boot fits e as its residual-stream bootstrapper */
static ts_status_t period_boot_fits(const ts_llm_enc_t *e, const ts_boot_t *boot)
{
    if (!boot || !e->boot)
        return TS_EINVAL;
    const ts_boot_config_t *a = ts_boot_config(boot), *b = ts_boot_config(e->boot);
    int lp = ts_llm_enc_period_log_slots(e);
    if (lp < 0 || a->log_slots != lp || a->order != b->order || a->encap_h != b->encap_h ||
        ts_boot_levels_left(boot) != ts_boot_levels_left(e->boot))
        return TS_EMISMATCH;
    return TS_OK;
}

ts_status_t ts_llm_enc_set_boot_period(ts_llm_enc_t *e, const ts_boot_t *boot)
{
    if (!e)
        return TS_EINVAL;
    ts_status_t st = period_boot_fits(e, boot);
    if (st == TS_OK)
        e->boot_pd = boot;
    return st;
}

ts_status_t ts_llm_enc_session_set_boot_period(ts_llm_enc_session_t *s, const ts_boot_t *boot)
{
    if (!s)
        return TS_EINVAL;
    ts_status_t st = period_boot_fits(s->e, boot);
    if (st == TS_OK)
        s->boot_pd = boot;
    return st;
}

const ts_boot_t *ts_llm_enc_boot_period(const ts_llm_enc_t *e)
{
    return e ? e->boot_pd : NULL;
}

ts_status_t ts_llm_enc_session_set_tfhe(ts_llm_enc_session_t *s, ts_convert_t *cv,
                                        const ts_boot_t *stc_boot)
{
    if (!s || !cv || !stc_boot)
        return TS_EINVAL;
    const ts_llm_enc_t *e = s->e;
    /* the activation the model does not have stays unset */
    const ts_llm_eval_t ev[P_COUNT] = {e->cfg.eval_exp,
                                       e->cfg.eval_recip,
                                       e->cfg.eval_rsqrt,
                                       e->gpt2 ? TS_LLM_EVAL_CKKS : e->cfg.eval_silu,
                                       e->cfg.eval_recip_norm,
                                       e->cfg.eval_recip_last,
                                       e->gpt2 ? e->cfg.eval_gelu : TS_LLM_EVAL_CKKS};
    const ts_nonlinear_approx_t *ap[P_COUNT] = {
        e->a_exp, e->a_recip, e->a_rsqrt, e->a_silu, e->a_recip_norm, e->a_recip_last, e->a_gelu};
    ts_status_t st = TS_OK;
    for (int p = 0; p < P_COUNT; p++) {
        ts_nonlinear_slots_free(s->nls[p]);
        s->nls[p] = NULL;
    }
    for (int p = 0; p < P_COUNT && st == TS_OK; p++) {
        if (ev[p] == TS_LLM_EVAL_CKKS)
            continue;
        ts_nonlinear_slots_cfg_t sc;
        ts_nonlinear_slots_mode_t mode =
            ev[p] == TS_LLM_EVAL_LUT ? TS_NL_SLOTS_HYBRID : TS_NL_SLOTS_TFHE;
        ts_nonlinear_slots_cfg_default(mode, &sc);
        sc.out_scale = e->delta;
        st = ts_nonlinear_slots_new(cv, stc_boot, ap[p], &sc, &s->nls[p]);
    }
    /* the slots whose values land on the small ring: a prefix [0, sub) */
    s->sub = 0;
    if (st == TS_OK) {
        const ts_boot_config_t *bc = ts_boot_config(stc_boot);
        int log_n = ts_ckks_params_log_n(e->params);
        while (s->sub < e->slots && ts_convert_slot_coeff(log_n, bc->log_slots, ts_convert_n_br(cv),
                                                          (size_t)s->sub, false) >= 0)
            s->sub++;
    }
    s->cv = st == TS_OK ? cv : NULL;
    return st;
}

ts_status_t ts_llm_enc_session_set_cache(ts_llm_enc_session_t *s,
                                         const ts_ckks_ciphertext_t *const *k,
                                         const ts_ckks_ciphertext_t *const *v, int n_pos)
{
    if (!s || !k || !v)
        return TS_EINVAL;
    const ts_llm_enc_t *e = s->e;
    if (n_pos < 1 || n_pos > e->max_pos) {
        ts_log(TS_LOG_WARN, "llm", "set_cache: %d positions outside 1..%d (the session's cache)",
               n_pos, e->max_pos);
        return TS_ERANGE;
    }
    /* validate everything before installing anything */
    for (int l = 0; l < e->nl; l++)
        for (int w = 0; w < 2; w++) {
            const ct_t *ct = w ? v[l] : k[l];
            if (!ct) {
                ts_log(TS_LOG_WARN, "llm", "set_cache: layer %d has no %s cache", l, w ? "V" : "K");
                return TS_EINVAL;
            }
            if (!ts_ckks_params_equal(ts_ckks_ciphertext_params(ct), e->params) ||
                ts_ckks_ciphertext_slots(ct) != (size_t)e->cs ||
                ts_ckks_ciphertext_degree(ct) != 1 ||
                fabs(ts_ckks_ciphertext_scale(ct) / e->delta - 1.0) > 0x1p-20) {
                ts_log(TS_LOG_WARN, "llm",
                       "set_cache: layer %d %s: parameters, %zu slots (engine %d), degree %d or "
                       "scale 2^%.3f (engine 2^%.3f) do not match the engine's",
                       l, w ? "V" : "K", ts_ckks_ciphertext_slots(ct), e->cs,
                       ts_ckks_ciphertext_degree(ct), log2(ts_ckks_ciphertext_scale(ct)),
                       log2(e->delta));
                return TS_EMISMATCH;
            }
            /* the scores multiply the cache by q: it needs a level (or a bootstrap) */
            if (ts_ckks_ciphertext_level(ct) < 1 && !s->boot) {
                ts_log(TS_LOG_WARN, "llm",
                       "set_cache: layer %d %s at level 0 and no bootstrapper to lift it", l,
                       w ? "V" : "K");
                return TS_ELEVEL;
            }
        }
    size_t nl = (size_t)e->nl;
    ct_t **nk = ts_malloc(2 * nl * sizeof(ct_t *));
    if (!nk)
        return TS_ENOMEM;
    memset(nk, 0, 2 * nl * sizeof(ct_t *));
    ts_status_t st = TS_OK;
    for (size_t i = 0; i < 2 * nl && st == TS_OK; i++) {
        const ct_t *src = i < nl ? k[i] : v[i - nl];
        st = ts_ckks_ciphertext_new(e->params, 0, &nk[i]);
        if (st == TS_OK)
            st = ts_ckks_ciphertext_copy(nk[i], src);
    }
    if (st != TS_OK) {
        for (size_t i = 0; i < 2 * nl; i++)
            ts_ckks_ciphertext_free(nk[i]);
        ts_free(nk);
        return st;
    }
    for (size_t l = 0; l < nl; l++) {
        ts_ckks_ciphertext_free(s->kc[l]);
        ts_ckks_ciphertext_free(s->vc[l]);
        s->kc[l] = nk[l];
        s->vc[l] = nk[nl + l];
    }
    ts_free(nk);
    s->next_pos = n_pos;
    return TS_OK;
}

uint64_t ts_llm_enc_session_bootstraps(const ts_llm_enc_session_t *s)
{
    return s ? s->nboot : 0;
}

const char *ts_llm_stage_name(ts_llm_stage_t st)
{
    static const char *names[TS_LLM_STAGE_COUNT] = {"matvec",    "attention", "nonlinear",
                                                    "bootstrap", "convert",   "other"};
    return (unsigned)st < TS_LLM_STAGE_COUNT ? names[st] : "?";
}

void ts_llm_enc_session_stats(const ts_llm_enc_session_t *s, ts_llm_enc_stats_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof(*out));
    if (s) {
        *out = s->stats;
        out->bootstraps = s->nboot;
    }
}

void ts_llm_enc_session_stats_reset(ts_llm_enc_session_t *s)
{
    if (!s)
        return;
    memset(&s->stats, 0, sizeof(s->stats));
    s->nboot = 0;
}

/* Charge the time since the last switch to the current stage, enter `stage`;
 * returns the stage left (restore it with stage_to when done). */
static int stage_to(ts_llm_enc_session_t *s, int stage)
{
    uint64_t now = ts_now_ns();
    s->stats.seconds[s->stage] += 1e-9 * (double)(now - s->mark);
    s->mark = now;
    int prev = s->stage;
    s->stage = stage;
    return prev;
}

void ts_llm_enc_session_set_probe(ts_llm_enc_session_t *s, ts_llm_enc_probe_fn fn, void *ctx)
{
    if (!s)
        return;
    s->probe = fn;
    s->probe_ctx = fn ? ctx : NULL;
}

double ts_llm_enc_session_bound(const ts_llm_enc_session_t *s)
{
    return s ? s->bound : 0.0;
}

/* The probe at a point (ts_llm_enc_session_set_probe), its time charged to
 * no stage. */
static void probe(ts_llm_enc_session_t *s, const char *point, const ct_t *ct)
{
    if (!s->probe)
        return;
    stage_to(s, s->stage);
    s->probe(s->probe_ctx, point, s->layer, ct);
    s->mark = ts_now_ns();
}

/* At a public entry point: start timing (nothing before counts). */
static void stage_begin(ts_llm_enc_session_t *s)
{
    s->mark = ts_now_ns();
    s->stage = TS_LLM_STAGE_OTHER;
    s->bound = ENC_BOOT_BOUND;
    s->layer = -1;
}

/* --------------------------------------------------------------- helpers */

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((st = (x)) != TS_OK) {                                                                 \
            ts_log(TS_LOG_DEBUG, "llm", "enc.c:%d: %s", __LINE__, ts_status_name(st));             \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

static ts_status_t ct_new(ts_llm_enc_session_t *s, ct_t **out)
{
    return ts_ckks_ciphertext_new(s->e->params, 0, out);
}

/* Set the bootstrap bound of the current section (rounded up to a power of
 * two, at least 1/16: below ~1/4 a bootstrap's own error at the output scale
 * dominates even at 2^14 slots, below ~2 at 2^10, ARCHITECTURE.md; 1 until
 * session 31); returns the previous one. */
static double bound_set(ts_llm_enc_session_t *s, double b)
{
    double prev = s->bound;
    s->bound = b > 0.0625 ? ldexp(1.0, (int)ceil(log2(b) - 1e-9)) : 0.0625;
    return prev;
}

/* After the step's next bootstrap (of a, and b for a pair): drop them by the
 * levels the engine's plan found unused until the next one
 * (ts__llm_enc_boot_drops), never below lv. */
static ts_status_t boot_drop(ts_llm_enc_session_t *s, ct_t *a, ct_t *b, int lv)
{
    const ts_llm_enc_t *e = s->e;
    if (!s->in_step)
        return TS_OK;
    /* a pass's own list, found from its caches' levels (pass_state) */
    const uint8_t *dl = s->lane_step ? s->pass_drop : e->boot_drop;
    size_t nd = s->lane_step ? s->n_pass_drop : e->n_boot_drop;
    size_t ev = s->boot_ev++;
    if (ev >= nd || !dl[ev])
        return TS_OK;
    int t = ts_boot_levels_left(s->boot) - dl[ev];
    t = t > lv ? t : lv;
    ts_status_t st = TS_OK;
    if (ts_ckks_ciphertext_level(a) > t)
        st = ts_ckks_drop_to_level(s->ev, a, t, a);
    if (st == TS_OK && b && ts_ckks_ciphertext_level(b) > t)
        st = ts_ckks_drop_to_level(s->ev, b, t, b);
    return st;
}

/* The bootstrapper for a ciphertext of sl slots: the residual stream's at pd
 * slots for a value that repeats every pd slots (pd: the residual stream, a
 * norm's output; a message of pd slots, whose sparse bootstrap is cheaper),
 * else the engine's. */
static const ts_boot_t *boot_for(const ts_llm_enc_session_t *s, bool pd, size_t sl)
{
    return pd && s->boot_pd && sl == (size_t)s->e->cs ? s->boot_pd : s->boot;
}

/* ct's slot count relabeled (a value repeating every n slots is a message of n) */
static ts_status_t relabel(ct_t *ct, size_t n)
{
    return ts_ckks_ciphertext_set_meta(ct, ts_ckks_ciphertext_level(ct),
                                       ts_ckks_ciphertext_degree(ct), ts_ckks_ciphertext_scale(ct),
                                       n);
}

/* Make sure ct has at least lv levels, bootstrapping in place (values up to
 * the section's bound: see ENC_BOOT_BOUND) when allowed; pd: ct repeats
 * every pd slots (boot_for). */
static ts_status_t need_at(ts_llm_enc_session_t *s, ct_t *ct, int lv, bool pd)
{
    const double bound = s->bound;
    if (ts_ckks_ciphertext_level(ct) >= lv)
        return TS_OK;
    if (!s->boot)
        return TS_ELEVEL;
    double sc = ts_ckks_ciphertext_scale(ct);
    int deg = ts_ckks_ciphertext_degree(ct);
    size_t sl = ts_ckks_ciphertext_slots(ct);
    const ts_boot_t *bt = boot_for(s, pd, sl);
    size_t bsl = (size_t)1 << ts_boot_config(bt)->log_slots;
    ts_status_t st =
        ts_ckks_ciphertext_set_meta(ct, ts_ckks_ciphertext_level(ct), deg, sc * bound, bsl);
    if (st == TS_OK) {
        int prev_stage = stage_to(s, TS_LLM_STAGE_BOOTSTRAP);
        st = ts_boot_bootstrap(bt, s->ev, ct, ct);
        stage_to(s, prev_stage);
    }
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(ct, ts_ckks_ciphertext_level(ct), deg, sc, sl);
    if (st == TS_OK)
        probe(s, "boot", ct);
    s->nboot++;
    s->stats.boots_period += bt != s->boot;
    if (st == TS_OK && ts_ckks_ciphertext_level(ct) < lv)
        st = TS_ELEVEL;
    if (st == TS_OK)
        st = boot_drop(s, ct, NULL, lv);
    return st;
}

static ts_status_t need(ts_llm_enc_session_t *s, ct_t *ct, int lv)
{
    return need_at(s, ct, lv, false);
}

/* Bring a and b to the same level (drops the higher one in place). */
static ts_status_t align(ts_llm_enc_session_t *s, ct_t *a, ct_t *b);

/*
 * Make sure a and b both have at least lv levels, then align them. When one
 * needs a bootstrap and the other is below a bootstrap's output level, they
 * share one (ts_boot_bootstrap_pair: Re a + i Re b, at the section's bound;
 * the scheduler's replay counts the pair as one): the partner rides along
 * for free, and the product lands a bootstrap's levels high instead of at
 * the partner's (aligning a fresh a down to b would waste them). pd: both
 * repeat every pd slots (boot_for).
 */
static ts_status_t need2_at(ts_llm_enc_session_t *s, ct_t *a, ct_t *b, int lv, bool pd)
{
    ts_status_t st;
    double sa = ts_ckks_ciphertext_scale(a), sb = ts_ckks_ciphertext_scale(b);
    size_t sl = ts_ckks_ciphertext_slots(a);
    int la = ts_ckks_ciphertext_level(a), lb = ts_ckks_ciphertext_level(b);
    bool pair = a != b && s->boot && ts_boot_config(s->boot)->order == TS_BOOT_CTS_FIRST &&
                (la < lv || lb < lv) && la < ts_boot_levels_left(s->boot) &&
                lb < ts_boot_levels_left(s->boot) && ts_ckks_ciphertext_degree(a) == 1 &&
                ts_ckks_ciphertext_degree(b) == 1 && sl == ts_ckks_ciphertext_slots(b) &&
                fabs(sa / sb - 1.0) < 0x1p-30;
    if (!pair) {
        if ((st = need_at(s, a, lv, pd)) != TS_OK || (st = need_at(s, b, lv, pd)) != TS_OK)
            return st;
        return align(s, a, b);
    }
    int prev_stage = stage_to(s, TS_LLM_STAGE_BOOTSTRAP);
    const ts_boot_t *bt = boot_for(s, pd, sl);
    size_t bsl = (size_t)1 << ts_boot_config(bt)->log_slots;
    st = align(s, a, b);
    if (st == TS_OK && bsl != sl && (st = relabel(a, bsl)) == TS_OK)
        st = relabel(b, bsl);
    if (st == TS_OK)
        st = ts_boot_bootstrap_pair(bt, s->ev, a, b, s->bound);
    if (st == TS_OK && bsl != sl && (st = relabel(a, sl)) == TS_OK)
        st = relabel(b, sl);
    if (st == TS_OK) {
        probe(s, "boot.pair", a);
        probe(s, "boot.pair", b);
    }
    s->nboot++;
    s->stats.boots_period += bt != s->boot;
    if (st == TS_OK && ts_ckks_ciphertext_level(a) < lv)
        st = TS_ELEVEL;
    if (st == TS_OK)
        st = boot_drop(s, a, b, lv);
    stage_to(s, prev_stage);
    return st;
}

static ts_status_t need2(ts_llm_enc_session_t *s, ct_t *a, ct_t *b, int lv)
{
    return need2_at(s, a, b, lv, false);
}

/*
 * Bring the scale back to Delta after a ciphertext-ciphertext product: snapped
 * when the rescaling prime was close to Delta (relative 2^-10), otherwise
 * corrected exactly by a constant product (one level).
 */
/* out = a at scale Delta exactly, one level lower: a constant 1 encoded at
 * q_l Delta / scale(a), then the rescale by q_l. */
static ts_status_t to_delta(ts_llm_enc_session_t *s, const ct_t *a, ct_t *out)
{
    int lv = ts_ckks_ciphertext_level(a);
    if (lv < 1)
        return TS_ELEVEL;
    double r = ts_ckks_ciphertext_scale(a) / s->e->delta;
    double q = (double)ts_ckks_params_q(s->e->params, (size_t)lv);
    ts_status_t st = ts_ckks_mul_const(s->ev, a, 1.0, q / r, out);
    return st == TS_OK ? ts_ckks_rescale(s->ev, out, out) : st;
}

static ts_status_t snap(ts_llm_enc_session_t *s, ct_t *ct)
{
    double r = ts_ckks_ciphertext_scale(ct) / s->e->delta;
    if (fabs(r - 1.0) < 0x1p-10)
        return ts_ckks_ciphertext_set_meta(ct, ts_ckks_ciphertext_level(ct),
                                           ts_ckks_ciphertext_degree(ct), s->e->delta,
                                           ts_ckks_ciphertext_slots(ct));
    return to_delta(s, ct, ct);
}

/* Bring a and b to the same level (drops the higher one in place). */
static ts_status_t align(ts_llm_enc_session_t *s, ct_t *a, ct_t *b)
{
    int la = ts_ckks_ciphertext_level(a), lb = ts_ckks_ciphertext_level(b);
    if (la > lb)
        return ts_ckks_drop_to_level(s->ev, a, lb, a);
    if (lb > la)
        return ts_ckks_drop_to_level(s->ev, b, la, b);
    return TS_OK;
}

/* out = a * b, relinearized, rescaled, scale Delta. a, b may be bootstrapped/dropped. */
static ts_status_t mul_cc(ts_llm_enc_session_t *s, ct_t *a, ct_t *b, ct_t *out)
{
    ts_status_t st;
    if ((st = need2(s, a, b, 1)) != TS_OK)
        return st;
    if ((st = ts_ckks_mul_relin(s->ev, a, b, out)) != TS_OK)
        return st;
    if ((st = ts_ckks_rescale(s->ev, out, out)) != TS_OK)
        return st;
    return snap(s, out);
}

/* out = a + b (levels aligned first; both at scale Delta). */
static ts_status_t add_cc(ts_llm_enc_session_t *s, ct_t *a, ct_t *b, ct_t *out)
{
    ts_status_t st = align(s, a, b);
    return st == TS_OK ? ts_ckks_add(s->ev, a, b, out) : st;
}

/* out = a * c for a real constant (exact scale, one level). */
static ts_status_t mul_k(ts_llm_enc_session_t *s, ct_t *a, double c, ct_t *out)
{
    ts_status_t st = need(s, a, 1);
    if (st == TS_OK)
        st = ts_ckks_mul_const(s->ev, a, c, 0.0, out);
    if (st == TS_OK)
        st = ts_ckks_rescale(s->ev, out, out);
    return st;
}

/* s->buf[0, slots), one lane's values, into every lane (in place) and
 * encoded at (level, scale) into s->pt */
static ts_status_t encode_lanes(ts_llm_enc_session_t *s, int level, double scale)
{
    const ts_llm_enc_t *e = s->e;
    for (int k = e->cs - 1; k >= 0 && e->lanes > 1 && !s->buf_lanes; k--)
        s->buf[k] = s->buf[k / e->lanes];
    s->buf_lanes = false;
    return ts_ckks_encode_real(s->ecd, s->buf, (size_t)e->cs, (size_t)e->cs, level, scale, s->pt);
}

/* Encode s->buf at a's level with scale q_level into s->pt. */
static ts_status_t encode_buf(ts_llm_enc_session_t *s, int level)
{
    return encode_lanes(s, level, (double)ts_ckks_params_q(s->e->params, (size_t)level));
}

/* out = a (.) s->buf, rescaled (exact scale, one level). */
static ts_status_t mul_buf(ts_llm_enc_session_t *s, ct_t *a, ct_t *out)
{
    ts_status_t st = need(s, a, 1);
    if (st == TS_OK)
        st = encode_buf(s, ts_ckks_ciphertext_level(a));
    if (st == TS_OK)
        st = ts_ckks_mul_plain(s->ev, a, s->pt, out);
    if (st == TS_OK)
        st = ts_ckks_rescale(s->ev, out, out);
    return st;
}

/* ct += s->buf as a plaintext (encoded at ct's level and scale: no level). */
static ts_status_t add_buf(ts_llm_enc_session_t *s, ct_t *ct)
{
    ts_status_t st = encode_lanes(s, ts_ckks_ciphertext_level(ct), ts_ckks_ciphertext_scale(ct));
    return st == TS_OK ? ts_ckks_add_plain(s->ev, ct, s->pt, ct) : st;
}

/* ct += k v as a plaintext, v of width w repeated with period per (zero padded). */
static ts_status_t add_vec(ts_llm_enc_session_t *s, ct_t *ct, const double *dv, const float *fv,
                           int w, int per, double k)
{
    for (int j = 0; j < s->e->slots; j++) {
        int i = j % per;
        s->buf[j] = i >= w ? 0.0 : k * (dv ? dv[i] : (double)fv[i]);
    }
    return add_buf(s, ct);
}

/* x += rot(x, r) for r = first, first*2, ... while |r| < lim (signs as given). */
static ts_status_t rot_sum(ts_llm_enc_session_t *s, ct_t *x, int first, int lim)
{
    ct_t *t = NULL;
    ts_status_t st;
    TRY(ct_new(s, &t));
    for (int r = first; (r < 0 ? -r : r) < lim; r *= 2) {
        TRY(ts_ckks_rotate(s->ev, x, (int64_t)r * s->e->lanes, t));
        TRY(ts_ckks_add(s->ev, x, t, x));
    }
done:
    ts_ckks_ciphertext_free(t);
    return st;
}

/* The series at x; a series on [-1, 1] (its domain map folded into the
 * product before, ts__llm_cheb_map) starting at a deep level first takes a scale
 * correction there (one level), as the map's own product would have. */
/* A series on [-1, 1] at a deep level (its prime far from Delta) first
 * brings x to Delta (to_delta), one level */
static bool cheb_to_delta(const ts_llm_enc_session_t *s, const ts_nonlinear_cheb_t *cb,
                          const ct_t *x)
{
    return cb->lo == -1.0 && cb->hi == 1.0 &&
           ts__llm_level_deep(s->e->params, s->e->delta, ts_ckks_ciphertext_level(x));
}

static ts_status_t cheb_eval(ts_llm_enc_session_t *s, const ts_nonlinear_cheb_t *cb, ct_t *x,
                             ct_t *out)
{
    if (!cheb_to_delta(s, cb, x))
        return ts_ckks_eval_chebyshev(s->ev, x, cb->coeffs, (size_t)cb->degree, cb->lo, cb->hi,
                                      s->e->delta, out);
    ct_t *y = NULL;
    ts_status_t st = ct_new(s, &y);
    if (st == TS_OK)
        st = to_delta(s, x, y);
    if (st == TS_OK)
        st = ts_ckks_eval_chebyshev(s->ev, y, cb->coeffs, (size_t)cb->degree, cb->lo, cb->hi,
                                    s->e->delta, out);
    ts_ckks_ciphertext_free(y);
    return st;
}

/* Chebyshev series of an approximation's fitted object (retries after a bootstrap). */
static ts_status_t cheb_body(ts_llm_enc_session_t *s, const ts_nonlinear_cheb_t *cb, ct_t *x,
                             ct_t *out)
{
    /* bootstrap first when x has fewer levels than the series takes (the affine map
     * to [-1, 1], then Paterson-Stockmeyer): at too low a level the evaluation may
     * fail with another error than TS_ELEVEL (a constant out of range) */
    int depth = ts__llm_cheb_levels(cb);
    ts_status_t st = need(s, x, depth);
    /* to_delta's level on top, or the series' last products would want
     * scales below 1 (TS_ESCALE, not TS_ELEVEL) */
    if (st == TS_OK && cheb_to_delta(s, cb, x))
        st = need(s, x, depth + 1);
    if (st != TS_OK)
        return st;
    st = cheb_eval(s, cb, x, out);
    if (st == TS_ELEVEL && s->boot) {
        int lv = ts_ckks_params_max_level(s->e->params);
        if ((st = need(s, x, lv + 1)) != TS_ELEVEL && st != TS_OK)
            return st;
        st = cheb_eval(s, cb, x, out);
    }
    return st;
}

static ts_status_t cheb(ts_llm_enc_session_t *s, const ts_nonlinear_cheb_t *cb, ct_t *x, ct_t *out)
{
    int prev_stage = stage_to(s, TS_LLM_STAGE_NONLINEAR);
    ts_status_t st = cheb_body(s, cb, x, out);
    stage_to(s, prev_stage);
    return st;
}

/*
 * out = f(x) at slots[0..count) (0 in every other slot) through primitive
 * p's TFHE object: conversion, look-up (LUT) or PBS, recovery (ts_nonlinear_slots).
 */
static ts_status_t tfhe_eval(ts_llm_enc_session_t *s, int p, ct_t *x, const size_t *slots,
                             size_t count, ct_t *out)
{
    if (!s->nls[p]) {
        ts_log(TS_LOG_ERROR, "llm",
               "a primitive is configured for TFHE but the session has no conversion keys "
               "(ts_llm_enc_session_set_tfhe)");
        return TS_ENOKEY;
    }
    int prev_stage = stage_to(s, TS_LLM_STAGE_CONVERT);
    ts_status_t st = need(s, x, ts_nonlinear_slots_in_level(s->nls[p]));
    if (st == TS_OK)
        st = ts_nonlinear_slots_eval(s->nls[p], s->ev, x, slots, count, -1, out);
    if (st == TS_OK) {
        s->stats.conversions++;
        s->stats.lookups += count;
    }
    stage_to(s, prev_stage);
    return st;
}

/* Rotate x left by r slots (r a multiple of pd: powers-of-two keys of the block sums). */
static ts_status_t rotate_blocks(ts_llm_enc_session_t *s, ct_t *x, int64_t r)
{
    ts_status_t st = TS_OK;
    int64_t a = r < 0 ? -r : r;
    for (int64_t bit = s->e->pd; bit <= a && st == TS_OK; bit <<= 1)
        if (a & bit)
            st = ts_ckks_rotate(s->ev, x, (r < 0 ? -bit : bit) * s->e->lanes, x);
    return st;
}

/*
 * The same for values at block-periodic slots t pd + i stride (t in [0, nt),
 * i in [0, n_off)) when they do not all land on the small ring: in batches of
 * blocks, each rotated down to slot 0 and back.
 */
static ts_status_t tfhe_eval_blocks(ts_llm_enc_session_t *s, int p, ct_t *x, int nt, int stride,
                                    int n_off, ct_t *out)
{
    const ts_llm_enc_t *e = s->e;
    int per = s->sub / e->pd; /* whole blocks per batch */
    if (per < 1 || (size_t)n_off * (size_t)(per < nt ? per : nt) > ts_convert_n_br(s->cv))
        return TS_ENOTSUP;
    size_t *sl = ts_malloc((size_t)per * (size_t)n_off * sizeof(size_t));
    ct_t *xr = NULL, *yr = NULL;
    ts_status_t st = sl ? TS_OK : TS_ENOMEM;
    if (st == TS_OK)
        st = ct_new(s, &xr);
    if (st == TS_OK)
        st = ct_new(s, &yr);
    bool have = false;
    for (int t0 = 0; t0 < nt && st == TS_OK; t0 += per) {
        int t1 = t0 + per < nt ? t0 + per : nt;
        size_t n = 0;
        for (int t = t0; t < t1; t++)
            for (int i = 0; i < n_off; i++)
                sl[n++] = (size_t)((t - t0) * e->pd + i * stride);
        st = ts_ckks_ciphertext_copy(xr, x);
        if (st == TS_OK)
            st = rotate_blocks(s, xr, (int64_t)t0 * e->pd);
        if (st == TS_OK)
            st = tfhe_eval(s, p, xr, sl, n, yr);
        if (st == TS_OK)
            st = rotate_blocks(s, yr, -(int64_t)t0 * e->pd);
        if (st == TS_OK && !have) {
            st = ts_ckks_ciphertext_copy(out, yr);
            have = true;
        } else if (st == TS_OK) {
            st = add_cc(s, out, yr, out);
        }
    }
    ts_free(sl);
    ts_ckks_ciphertext_free(xr);
    ts_ckks_ciphertext_free(yr);
    return st;
}

/* Lane l's position in the current step. */
static int lane_pos(const ts_llm_enc_session_t *s, int l)
{
    return s->pos0 + (l < s->lane_n ? l : s->lane_n - 1) * s->lane_step;
}

/* s->buf = k / (pos_l + 1) on every lane l's slots (for mul_buf). */
static void lanes_recip_pos(ts_llm_enc_session_t *s, double k)
{
    for (int j = 0; j < s->e->cs; j++)
        s->buf[j] = k / (lane_pos(s, j % s->e->lanes) + 1);
    s->buf_lanes = true;
}

/*
 * A prefill's keys or values to every lane: x holds lane l's vector in its
 * own block (pos0 + l) and zeros in the others (wk and wv write nothing for
 * the idle lanes from lane_n on: matvec), so in each group of L raw slots
 * (one lane-local slot of every lane) at most one lane holds a value, and
 * the group's sum is the cache row every lane needs. Window sums by
 * doubling, no masks between: w(s) = sum_{r < L} x(s - r) (log2 L raw
 * rotations by -2^i) reads the whole group at its last slot (s = jL + L - 1)
 * and nothing of the next; one mask keeps those slots (the level); then
 * b(s) = sum_{r < L} m(s + r) (log2 L rotations by +2^i, one level lower)
 * spreads each group's last slot over the group and reads nothing of the
 * next group (its value sits L - 1 slots past the group's end). Only the
 * cache blocks from `from` on (0: all; ts_llm_enc_commit: the rejected).
 */
static ts_status_t lane_share(ts_llm_enc_session_t *s, ct_t *x, int from)
{
    const ts_llm_enc_t *e = s->e;
    int L = e->lanes;
    ct_t *t = NULL;
    ts_status_t st;
    TRY(ct_new(s, &t));
    TRY(need(s, x, 1));
    for (int k = 1; k < L; k <<= 1) {
        TRY(ts_ckks_rotate(s->ev, x, -k, t));
        TRY(ts_ckks_add(s->ev, x, t, x));
    }
    for (int k = 0; k < e->cs; k++)
        s->buf[k] = k % L == L - 1 && k / L / e->pd >= from ? 1.0 : 0.0;
    s->buf_lanes = true;
    TRY(encode_buf(s, ts_ckks_ciphertext_level(x)));
    TRY(ts_ckks_mul_plain(s->ev, x, s->pt, t));
    TRY(ts_ckks_rescale(s->ev, t, x));
    for (int k = 1; k < L; k <<= 1) {
        TRY(ts_ckks_rotate(s->ev, x, k, t));
        TRY(ts_ckks_add(s->ev, x, t, x));
    }
done:
    ts_ckks_ciphertext_free(t);
    return st;
}

/* ------------------------------------------------------------ matvec */

/*
 * What a matrix product folds in (LLAMA): rope_pos >= 0 the RoPE rotation
 * at that position (out = R_pos W x, so q and k need no rope() level),
 * first_block the cache's mask (out zero outside the first block of pout
 * slots: k and v go into the cache by rotations alone), scale a factor on
 * every entry (0: none; the SiLU series' domain map in w1). All ride on the
 * diagonals: no level, no extra product.
 */
typedef struct {
    int rope_pos;
    bool first_block;
    double scale;
    double bias_scale; /* a factor on the bias (0: none) */
    /* a prefill's query: zero in the blocks after each lane's position, so
     * that the scores there are zero as in a step (the cache holds the
     * later lanes' keys: the centering's block sum and the exp's constant
     * assume zeros after pos) */
    bool upto_pos;
} mv_fold_t;

/* RoPE at pos per row (run.c's float angles): row i of the pair (2j, 2j + 1)
 * of a head turns by pos theta_j, theta_j = rope_theta^(-hdim / rope_dim);
 * rows past rope_dim in their head stay (cr 1, ci 0). */
static void rope_row_coeffs(const ts_llm_enc_t *e, int pos, int rows, double *cr, double *ci)
{
    const ts_llm_config_t *c = &e->m->cfg;
    for (int i = 0; i < rows; i++) {
        int hdim = (i & ~1) % e->hd;
        float fcr = 1.0f, fci = 0.0f;
        if (hdim < c->rope_dim) {
            float freq = 1.0f / powf(c->rope_theta, hdim / (float)c->rope_dim);
            float val = pos * freq;
            fcr = cosf(val);
            fci = sinf(val);
        }
        cr[i] = fcr;
        ci[i] = fci;
    }
}

/*
 * out = W diag(gain) x + b, W rows x cols row-major (float), x periodic with
 * period pin >= cols, out periodic with period pout >= rows. gain (a folded norm
 * gain, cols) and b (rows) may be NULL. Periodic diagonals with BSGS; the
 * diagonals are encoded on the fly at x's level (scale q_level: exact), those
 * of one giant step together (ts_ckks_bsgs_mul_add_run: at sparse slots in
 * their compact form, one pass over the baby rotations per giant step), the
 * bias is added as a plaintext after the rescale. A wide matrix (pout < pin:
 * the one-hot embedding, w2) takes pout diagonals of period pin and sums
 * the pin / pout blocks by rotations after the rescale (the hybrid diagonal
 * method: out[j] = sum_t y[j + t pout]; 64 diagonals instead of 512 for
 * the embedding of aidreams260K), unless the first-block mask is folded.
 */
static ts_status_t matvec(ts_llm_enc_session_t *s, const float *w, const float *gain,
                          const double *bias, int rows, int cols, int pin, int pout,
                          const mv_fold_t *fold, ts_ckks_bsgs_t **shared, ct_t *x, ct_t *out)
{
    const ts_llm_enc_t *e = s->e;
    bool wide = pout < pin && !(fold && fold->first_block);
    int slots = e->slots, nd = wide ? pout : pin, n1 = baby_steps(nd), n2 = nd / n1, L = e->lanes,
        cs = e->cs;
    /* RoPE folded in: row i of R W, with R the rotation of the pairs
     * (2i, 2i + 1) of each head by pos theta_i (cr, ci per row; exact in
     * double up to the float angles run.c uses) */
    double *cr = NULL, *ci = NULL;
    /* a prefill's lanes differ in position: their RoPE and cache block
     * (first_block: lane l's block l, rotated to pos0 + l by cache_put) */
    bool varies = s->lane_step && L > 1 && fold &&
                  (fold->rope_pos >= 0 || fold->first_block || fold->upto_pos);
    int nfill = varies ? L : 1;
    if (fold && fold->rope_pos >= 0) {
        cr = ts_malloc(2 * (size_t)rows * (size_t)nfill * sizeof *cr);
        if (!cr)
            return TS_ENOMEM;
        ci = cr + (size_t)rows * (size_t)nfill;
        for (int l = 0; l < nfill; l++)
            rope_row_coeffs(e, fold->rope_pos + lane_pos(s, l) - s->pos0, rows,
                            cr + (size_t)l * rows, ci + (size_t)l * rows);
    }
    /* double-hoisted BSGS (ts_ckks_bsgs): the baby rotations of x over
     * Q_l P once (shared by the matrices of one input when the caller
     * passes `shared`: wq wk wv, w1 w3), one ModDown per product */
    ts_ckks_bsgs_t *own = NULL, *h = shared ? *shared : NULL;
    ct_t *tot = NULL;
    int64_t steps[ENC_MAX_N1];
    bool nzb[ENC_MAX_N1];
    /* the n1 diagonals of one giant step, one row of `cs` values each (one
     * lane's row in every lane) */
    double *dg = ts_malloc((size_t)n1 * (size_t)cs * sizeof(double));
    ts_status_t st = dg ? TS_OK : TS_ENOMEM;
    int prev_stage = stage_to(s, TS_LLM_STAGE_MATVEC);
    if (st != TS_OK)
        goto done;
    TRY(need(s, x, 1));
    int lv = ts_ckks_ciphertext_level(x);
    double sc = (double)ts_ckks_params_q(e->params, (size_t)lv);
    if (!h) {
        for (int b = 0; b < n1; b++)
            steps[b] = (int64_t)b * L;
        TRY(ts_ckks_bsgs_new(s->ev, x, steps, (size_t)n1, &h));
        if (shared)
            *shared = h;
        else
            own = h;
    }
    TRY(ct_new(s, &tot));
    bool have_tot = false;
    for (int g = 0; g < n2; g++) {
        bool have_acc = false;
        for (int b = 0; b < n1; b++) {
            int r = g * n1 + b;
            double *drow = dg + (size_t)b * (size_t)cs;
            bool nz = false;
            for (int l = 0; l < nfill; l++) {
                const double *lcr = cr ? cr + (size_t)l * rows : NULL,
                             *lci = cr ? ci + (size_t)l * rows : NULL;
                int blk = fold && fold->first_block ? lane_pos(s, l) - s->pos0 : 0;
                for (int j = 0; j < slots; j++) {
                    /* u[j] = d_r[(j - g n1) mod slots] */
                    int jj = ((j - g * n1) % slots + slots) % slots;
                    int row = jj % pout, col = (jj + r) % pin;
                    double v = row < rows && col < cols ? (double)w[(size_t)row * cols + col] : 0.0;
                    if (lcr && row < rows && col < cols) {
                        /* even row: cr w_i - ci w_(i+1); odd: ci w_(i-1) + cr w_i */
                        int mate = row ^ 1;
                        double wm = mate < rows ? (double)w[(size_t)mate * cols + col] : 0.0;
                        v = lcr[row] * v + (row & 1 ? lci[row] : -lci[row]) * wm;
                    }
                    if (gain && col < cols)
                        v *= (double)gain[col]; /* exact: a product of two floats */
                    if (fold && fold->scale != 0.0)
                        v *= fold->scale;
                    if (fold && fold->first_block && (jj / pout != blk || l >= s->lane_n))
                        v = 0.0; /* the output's first block only (a prefill lane's
                                  * own; nothing from an idle lane: lane_share sums) */
                    if (fold && fold->upto_pos && jj / pout > lane_pos(s, l))
                        v = 0.0; /* a prefill's query: the blocks up to the lane's position */
                    drow[varies ? (size_t)j * L + l : (size_t)j] = v;
                    nz |= v != 0.0;
                }
            }
            for (int k = cs - 1; k >= 0 && L > 1 && !varies; k--)
                drow[k] = drow[k / L];
            nzb[b] = nz;
        }
        /* each run of nonzero diagonals in one call */
        for (int b0 = 0; b0 < n1;) {
            if (!nzb[b0]) {
                b0++;
                continue;
            }
            int b1 = b0;
            while (b1 < n1 && nzb[b1])
                b1++;
            TRY(ts_ckks_bsgs_mul_add_run(h, (size_t)b0, (size_t)(b1 - b0), s->ecd,
                                         dg + (size_t)b0 * (size_t)cs, (size_t)cs, sc));
            have_acc = true;
            b0 = b1;
        }
        if (!have_acc)
            continue;
        TRY(ts_ckks_bsgs_giant(h, (int64_t)g * n1 * L));
        have_tot = true;
    }
    if (!have_tot) {
        st = TS_EINVAL;
        goto done;
    }
    TRY(ts_ckks_bsgs_finish(h, tot));
    TRY(ts_ckks_rescale(s->ev, tot, out));
    if (wide)
        TRY(rot_sum(s, out, pout, pin));
    double bk = fold && fold->bias_scale != 0.0 ? fold->bias_scale : 1.0;
    if (bias && fold && fold->first_block) {
        for (int k = 0; k < (varies ? cs : slots); k++) {
            int j = varies ? k / L : k, o = varies ? j - (lane_pos(s, k % L) - s->pos0) * pout : j;
            bool idle = varies && k % L >= s->lane_n; /* as the diagonals: lane_share sums */
            s->buf[k] = o >= 0 && o < rows && !idle ? bk * bias[o] : 0.0;
        }
        s->buf_lanes = varies;
        TRY(add_buf(s, out));
    } else if (bias) {
        TRY(add_vec(s, out, bias, NULL, rows, pout, bk));
    }
done:
    stage_to(s, prev_stage);
    ts_free(cr);
    ts_free(dg);
    ts_ckks_bsgs_free(own);
    ts_ckks_ciphertext_free(tot);
    return st;
}

/*
 * Model matrix `which` (0 wq 1 wk 2 wv 3 wo 4 w1 5 w3 6 w2 7 wcls) with its
 * bias (GPT2). fold: x is the unit-gain norm output, and the gain (and for
 * GPT2 the bias) of the norm before the matrix are folded in (struct
 * ts_llm_enc): W diag(g), exact products of two floats.
 */
static ts_status_t matvec_which(ts_llm_enc_session_t *s, int layer, int which, bool fold,
                                const mv_fold_t *mf, ts_ckks_bsgs_t **sh, ct_t *x, ct_t *out)
{
    const ts_llm_enc_t *e = s->e;
    /* in the step (fold) the residual stream's scale rides along: 1 / ks on
     * a norm's output, ks (bias too) on what wo and w2 write into the stream */
    mv_fold_t f = mf ? *mf : (mv_fold_t){-1, false, 0.0, 0.0, false};
    if (fold && e->ks != 1.0) {
        bool writes = which == 3 || which == 6;
        double k = writes ? e->ks : 1.0 / e->ks;
        f.scale = (f.scale != 0.0 ? f.scale : 1.0) * k;
        if (writes)
            f.bias_scale = k;
    }
    mf = &f;
    if (which == 7) {
        const double *b = e->gpt2 && fold ? e->bias_fold + (size_t)e->nl * e->bias_stride : NULL;
        const float *g = fold ? e->m->final_norm : NULL;
        return matvec(s, e->m->wcls, g, b, e->vocab, e->dim, e->pd, e->pv, mf, sh, x, out);
    }
    if (layer < 0 || layer >= e->nl || which < 0 || which > 7 || (e->gpt2 && which == 5))
        return TS_EINVAL;
    const ts__llm_layer_t *ly = &e->m->layers[layer];
    const float *g = NULL;
    const double *b = NULL;
    if (e->gpt2) {
        /* bq bk bv bo (dim each), b1 (hid), b2 (dim) */
        size_t at = which <= 4 ? (size_t)which * e->dim : 4 * (size_t)e->dim + (size_t)e->hid;
        b = (fold ? e->bias_fold : e->bias_raw) + (size_t)layer * e->bias_stride + at;
    }
    if (fold)
        g = which <= 2 ? ly->attn_norm : which == 4 || which == 5 ? ly->ffn_norm : NULL;
    switch (which) {
    case 0:
        return matvec(s, ly->wq, g, b, e->dim, e->dim, e->pd, e->pd, mf, sh, x, out);
    case 1:
        return matvec(s, e->wk_x ? e->wk_x + (size_t)layer * e->dim * e->dim : ly->wk, g, b, e->dim,
                      e->dim, e->pd, e->pd, mf, sh, x, out);
    case 2:
        return matvec(s, e->wv_x ? e->wv_x + (size_t)layer * e->dim * e->dim : ly->wv, g, b, e->dim,
                      e->dim, e->pd, e->pd, mf, sh, x, out);
    case 3:
        return matvec(s, ly->wo, g, b, e->dim, e->dim, e->pd, e->pd, mf, sh, x, out);
    case 4:
        return matvec(s, ly->w1, g, b, e->hid, e->dim, e->pd, e->ph, mf, sh, x, out);
    case 5:
        return matvec(s, ly->w3, g, b, e->hid, e->dim, e->pd, e->ph, mf, sh, x, out);
    default:
        return matvec(s, ly->w2, g, b, e->dim, e->hid, e->ph, e->pd, mf, sh, x, out);
    }
}

ts_status_t ts_llm_enc_matvec(ts_llm_enc_session_t *s, int layer, int which,
                              const ts_ckks_ciphertext_t *x, ts_ckks_ciphertext_t *out)
{
    if (!s || !x || !out)
        return TS_EINVAL;
    ct_t *t = NULL;
    ts_status_t st;
    stage_begin(s);
    TRY(ct_new(s, &t));
    TRY(ts_ckks_ciphertext_copy(t, x));
    TRY(matvec_which(s, layer, which, false, NULL, NULL, t, out));
done:
    stage_to(s, TS_LLM_STAGE_OTHER);
    ts_ckks_ciphertext_free(t);
    return st;
}

/* ------------------------------------------------------------ nonlinear */

/* out = 1/sqrt(x) by Newton from the Chebyshev guess (ts_nonlinear ITER
 * rsqrt), given t = al x + be (the domain map (ts__llm_cheb_map) of the guess's series, folded into
 * the norm's mean): the guess from t, each step's -bk x from t */
static ts_status_t rsqrt(ts_llm_enc_session_t *s, ct_t *t, ct_t *out)
{
    const ts_nonlinear_cheb_t *cb = ts_nonlinear_approx_cheb(s->e->a_rsqrt);
    double al, be;
    ts__llm_cheb_map(cb, &al, &be);
    ts_nonlinear_cheb_t unit = ts__llm_cheb_unit(cb);
    ct_t *y = NULL, *xh = NULL, *y2 = NULL, *a = NULL, *y15 = NULL;
    ts_status_t st;
    int prev_stage = stage_to(s, TS_LLM_STAGE_NONLINEAR);
    TRY(ct_new(s, &y));
    TRY(ct_new(s, &xh));
    TRY(ct_new(s, &y2));
    TRY(ct_new(s, &a));
    TRY(ct_new(s, &y15));
    TRY(cheb(s, &unit, t, y));
    /* y up to 1/sqrt(lo) (its square further, only near lo) */
    double prev_bound = bound_set(s, 1.0 / sqrt(s->e->cfg.rsqrt.lo));
    for (int i = 0; i < s->e->cfg.rsqrt.steps; i++) {
        /* y <- ak y + (-bk x y) y^2 (CLASSIC: 3/2, 1/2), -bk x from x; y
         * refreshed with xh */
        double ak, bk;
        TRY(ts_nonlinear_approx_rsqrt_step(s->e->a_rsqrt, i, &ak, &bk));
        TRY(mul_k(s, t, -bk / al, xh));
        TRY(ts_ckks_add_const(s->ev, xh, bk * be / al, xh));
        TRY(need2(s, y, xh, 2));
        TRY(ts_ckks_ciphertext_copy(a, y));
        TRY(ts_ckks_ciphertext_copy(y2, y));
        TRY(mul_cc(s, y2, y, y2));
        TRY(mul_cc(s, xh, a, a));
        TRY(mul_cc(s, a, y2, a));
        TRY(mul_k(s, y, ak, y15));
        TRY(add_cc(s, a, y15, y));
    }
    TRY(ts_ckks_ciphertext_copy(out, y));
    s->bound = prev_bound;
done:
    stage_to(s, prev_stage);
    ts_ckks_ciphertext_free(y);
    ts_ckks_ciphertext_free(xh);
    ts_ckks_ciphertext_free(y2);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(y15);
    return st;
}

/* How far below a proven or interval top a bound may sit where the values
 * mostly sit far below it: a value BOUND_MARGIN times its bound is distorted
 * by ~1e-4 relative (ENC_BOOT_BOUND) at a message ratio of 2^12 (1.6e-3
 * at 2^10, as far as margin_ratio lets any top go), below the error of every 1/x the
 * engine evaluates (LAST_BITS), while the bootstrap's absolute error, ~1e-6
 * of the bound, shrinks as much (docs/benchmarks.md, session 31). */
#define BOUND_MARGIN 16.0

/* The farthest a margin's top may sit over its bound at a message ratio of
 * 2^12 (den_bound's first round, Goldschmidt's lifted b): a value m times
 * its bound comes back from a bootstrapper of ratio 2^r distorted by
 * ~(2 pi m 2^-r)^2 / 6 relative (EvalMod's sine), at 64 times and 2^12
 * ~1.6e-3, the size of the shallow exp series' own error (3.1e-3,
 * EXP_SHALLOW_POS); below 2^12 (ts_boot_config_slots: 2^11 at 2^12-2^13
 * slots, 2^10 at 2^14-2^15) the same m is distorted 2^(2 (12 - r)) times
 * more. */
#define MARGIN_TOP 64.0

/* The factor a bound whose values may reach m times it (its margin's top:
 * BOUND_MARGIN, MARGIN_TOP) takes at s's bootstrapper (pd: boot_for's):
 * m / MARGIN_TOP x 2^(12 - r) where that exceeds 1, so that no top lies
 * more than MARGIN_TOP x 2^(r - 12) times over its bound (~1.6e-3
 * distortion): at 2^10 the 64-times margins bootstrap at 4 times their
 * bounds (ratio 2^12's error), the sixteenth-of-the-interval bounds, whose
 * values stayed below them in every trace (`--noise-trace`'s value max),
 * keep the lower ratio's smaller error. Session 41: at 2^14 slots
 * Goldschmidt's lifted b reached 58 times its bound (~2% distortion)
 * before (docs/benchmarks.md). */
static double margin_ratio(const ts_llm_enc_session_t *s, bool pd, double m)
{
    const ts_boot_t *bt = boot_for(s, pd, (size_t)s->e->cs);
    double r = bt ? ts_boot_config(bt)->log_message_ratio : 0.0;
    return r > 0.0 ? fmax(1.0, m / MARGIN_TOP * exp2(12.0 - r)) : 1.0;
}

/* The bootstrap bound of a value in [lo, hi] (0 < lo < hi): hi, or
 * hi / BOUND_MARGIN (margin_ratio) for a wide interval, whose top is a
 * margin rarely reached (the softmax's sums, their inverses on a uniform
 * row); a quarter until session 31. */
static double interval_bound(const ts_llm_enc_session_t *s, double lo, double hi)
{
    return hi / lo > 16.0 ? hi / BOUND_MARGIN * margin_ratio(s, false, BOUND_MARGIN) : hi;
}

/*
 * The bootstrap bound of a softmax round's sum and terms (divide's den and
 * num) for the 1/x spec sp: its interval's (interval_bound), or for the first
 * round a sixty-fourth of the interval's top. Those sums are means of
 * exp(z) (or its square) over the positions, far below the top: the ckks
 * policy's [0.8, 256] holds sums of 1.3 on average and at most 44 over five
 * prompts and 128 positions (11 times the bound of 4: ~5e-5 distortion,
 * ENC_BOOT_BOUND), and a value at the top is distorted by ~1.6e-3 relative,
 * where the round's own 1/x keeps 3.3 bits (COND_BITS); a term below
 * e^(2 hi) of exp's interval (~400), 100 times the bound, by ~4e-3, the
 * size of the shallow exp series' own error (3.1e-3, EXP_SHALLOW_POS).
 * Session 31: a lanes pass's first round 15.2 -> 17.2 bits. (At a message
 * ratio of 2^12; margin_ratio below it.)
 */
static double den_bound(const ts_llm_enc_session_t *s, const ts_nonlinear_spec_t *sp, bool first)
{
    return first ? sp->hi / 64.0 * margin_ratio(s, false, MARGIN_TOP)
                 : interval_bound(s, sp->lo, sp->hi);
}

/* The bootstrap bound of Goldschmidt's pair (a, b) in divide: both lie in
 * [0, 2), a near 1 and b a softmax term over its sum, mostly far below 1
 * (~1 / n): at an eighth of their interval's top a value at the top is
 * distorted by ~1e-4 relative (ENC_BOOT_BOUND) while b's bootstrap error
 * shrinks 8x against a bound of 2 where the bootstrap is that coarse (a
 * lanes engine's 2^14 slots: docs/benchmarks.md, session 31). Times
 * margin_ratio (b, lifted, reaches 64 times it). */
#define GS_BOOT_BOUND 0.25

/* Goldschmidt's b lifted GS_LIFT times itself (an integer, no level) before
 * its pair bootstraps with a, where the next softmax round divides in CKKS
 * and so keeps the factor for nothing (a division is invariant to it, its
 * pre reads the sum at the factor squared): b, a term over its
 * sum (~1 / n), sat 4-8 bits below a ~1 there and kept 14.9 bits at 128
 * positions (one lane), 16.6 in a lanes engine's step; a lifted term at
 * the top (1) lands at 64 times the bound, distorted ~1.6e-3 relative
 * (ENC_BOOT_BOUND), where the round's 1/x keeps 3.3 bits (COND_BITS);
 * docs/benchmarks.md, session 33. */
#define GS_LIFT 16

/* s->buf = c (over the lane's positions when per_n) on each head's first
 * slot of the blocks 0..pos of each lane, 0 elsewhere */
static void score_mask(ts_llm_enc_session_t *s, double c, bool per_n)
{
    const ts_llm_enc_t *e = s->e;
    for (int k = 0; k < e->cs; k++) {
        int j = k / e->lanes, pos = lane_pos(s, k % e->lanes), t = j / e->pd, i = j % e->pd;
        s->buf[k] = t <= pos && i % e->hd == 0 && i < e->dim ? c / (per_n ? pos + 1 : 1) : 0.0;
    }
    s->buf_lanes = true;
}

/*
 * x (a softmax round's terms: one value per position and head, replicated
 * over the head's hd slots) times c (per lane over pos_l + 1 when per_n),
 * averaged over those replicas: summed into each head's first slot
 * (log2 hd rotations), masked there with c / hd (the one plaintext product,
 * the level c's constant product takes), spread back (log2 hd rotations).
 * Right after a bootstrap the replicas' errors are independent from slot to
 * slot (a bootstrap at the working slots): the average shrinks them by
 * sqrt(hd), as den's over its position blocks (divide).
 */
static ts_status_t head_average(ts_llm_enc_session_t *s, ct_t *x, double c, bool per_n)
{
    ts_status_t st;
    TRY(rot_sum(s, x, 1, s->e->hd));
    score_mask(s, c / s->e->hd, per_n);
    TRY(mul_buf(s, x, x));
    TRY(rot_sum(s, x, -1, s->e->hd));
done:
    return st;
}

ts_status_t ts__llm_enc_head_average(ts_llm_enc_session_t *s, ts_ckks_ciphertext_t *x, double c)
{
    return s && x ? head_average(s, x, c, false) : TS_EINVAL;
}

/* ... of 1/x on sp's interval. */
static double recip_bound(const ts_llm_enc_session_t *s, const ts_nonlinear_spec_t *sp)
{
    return interval_bound(s, 1.0 / sp->hi, 1.0 / sp->lo);
}

/*
 * out = num / den by Goldschmidt division, den in the interval of spec sp
 * (ts_nonlinear ITER recip) once multiplied by pre: a = den c, b = num c
 * with c = pre 2 / (lo + hi), then f = 2 - a, a *= f, b *= f, so that
 * a -> 1 and b -> num / den. b is the reciprocal chain with the numerator
 * folded into its first constant (the same value as num * (1/den) in exact
 * arithmetic, one level shallower), and num must lie in [0, den] (a softmax
 * term over its sum) so that both a and b stay in [0, 2): their pair
 * bootstraps run at GS_BOOT_BOUND. num and den may be bootstrapped in place.
 * SCALED (the guess g of sp's Chebyshev series): den is read at a unit u =
 * 1 / nk (the mean's, where num was lifted by its n; otherwise 1: a factor
 * num and den both carry, the last round's lift squared, stays), f = g(den)
 * ~ 1 / (u den), a = (u den) f and b = (u num) f / nk, u den and u num / nk
 * each a constant product on a level above f's.
 * So f, u den and u num stay near their natural sizes (~1, ~1, ~1/n): f
 * carries an absolute error (~2^-26.5 at boot-n16-dense) that a and b take
 * times u den, and one at 2^-10 (1 / sum: a step's sum of 32 terms, averaged
 * over 32 blocks) kept them ~16 bits, and u num at 2^-12 (a term of a later
 * round without its lift) 15 (docs/benchmarks.md, session 33).
 * lanes_num (a prefill pass's first round): den is every lane's mean sum
 * already, num its raw terms, each lane's 1 / (pos_l + 1) applied here after
 * den and num's (pair) bootstrap, which so sees num at its own size, not the
 * mean's (log2(pos_l + 1) bits more of num: docs/benchmarks.md, session 31).
 * nk: the mean's n where pre is 1 / n (an ordinary step's first round),
 * whose pair bound is n times den's mean bound while num, one term, sits at
 * the mean's size: num enters the pair nk times itself (an integer product,
 * no level), its bootstrap error so nk times smaller against it, and u num
 * takes it back (13.5 -> ~18 bits in a lanes engine's ordinary step).
 * lift: b (so out) GS_LIFT times num / den. bound: den's and num's bootstrap
 * bound before pre (den_bound).
 */
static ts_status_t divide(ts_llm_enc_session_t *s, const ts_nonlinear_spec_t *sp,
                          const ts_nonlinear_approx_t *ap, double pre, double bound, bool lanes_num,
                          int nk, int lift, ct_t *num, ct_t *den, ct_t *out)
{
    double sc = pre * 2.0 / (sp->lo + sp->hi);
    ct_t *a = NULL, *b = NULL, *f = NULL, *f2 = NULL;
    double *coeffs = NULL;
    ts_status_t st;
    int prev_stage = stage_to(s, TS_LLM_STAGE_NONLINEAR);
    double prev_bound = bound_set(s, bound / pre);
    /* SCALED: the Chebyshev-iteration guess g replaces the constant c */
    const ts_nonlinear_cheb_t *g0 = NULL;
    ts_nonlinear_cheb_t g;
    if (sp->iter == TS_NL_ITER_SCALED && !(g0 = ts_nonlinear_approx_cheb(ap))) {
        st = TS_EINVAL;
        goto done;
    }
    TRY(ct_new(s, &a));
    TRY(ct_new(s, &b));
    TRY(ct_new(s, &f));
    TRY(ct_new(s, &f2));
    /* num's integer lift (above) */
    if (nk > 1)
        TRY(ts_ckks_mul_int(s->ev, num, nk, num));
    if (!g0) {
        TRY(need2(s, den, num, 1));
        TRY(mul_k(s, den, sc, a));
        if (lanes_num) {
            lanes_recip_pos(s, sc);
            TRY(mul_buf(s, num, b));
        } else {
            TRY(mul_k(s, num, sc / nk, b));
        }
    } else {
        g = *g0;
        uint64_t nb0 = s->nboot;
        TRY(need2(s, den, num, ts__llm_cheb_levels(&g) + 1));
        double nb = 1.0, u = 1.0 / nk;
        if (s->nboot != nb0 && s->e->lanes > 1) {
            /* den (one sum per head, replicated over the position blocks)
             * averaged over its replicas after its bootstrap: the
             * bootstrap's error, independent from slot to slot, shrinks by
             * sqrt(blocks), while every output of the head shares den's.
             * den now holds nb times the sum */
            nb = (double)(s->e->slots / s->e->pd);
            TRY(rot_sum(s, den, s->e->pd, s->e->slots));
        }
        /* f = g0(pre den / nb) pre / u: g reads den on sp's interval over
         * pre / nb, its coefficients times pre / u (1 in a mean's round) */
        g.lo = g0->lo * nb / pre;
        g.hi = g0->hi * nb / pre;
        if (fabs(pre / u - 1.0) > 1e-12) {
            if (!(coeffs = ts_malloc(((size_t)g.degree + 1) * sizeof *coeffs))) {
                st = TS_ENOMEM;
                goto done;
            }
            for (int j = 0; j <= g.degree; j++)
                coeffs[j] = g0->coeffs[j] * (pre / u);
            g.coeffs = coeffs;
        }
        TRY(cheb(s, &g, den, f)); /* f ~ nb / (u den) */
        /* u num (lanes_num: each lane's own), u den: levels above f's; num
         * averaged over its heads' replicas where the pair bootstrapped it
         * (in any round: the product stays above f's level) */
        if (s->nboot != nb0) {
            TRY(head_average(s, num, u / nk, lanes_num));
        } else if (lanes_num) {
            lanes_recip_pos(s, u);
            TRY(mul_buf(s, num, num));
        } else if (nk > 1) {
            TRY(mul_k(s, num, u / nk, num));
        }
        if (u / nb != 1.0)
            TRY(mul_k(s, den, u / nb, den));
        bound_set(s, GS_BOOT_BOUND * margin_ratio(s, false, MARGIN_TOP));
        TRY(mul_cc(s, den, f, a));
        TRY(mul_cc(s, num, f, b));
    }
    /* b's lift (above): an integer, no level; the steps are linear in b */
    if (lift > 1)
        TRY(ts_ckks_mul_int(s->ev, b, lift, b));
    bound_set(s, GS_BOOT_BOUND * margin_ratio(s, false, MARGIN_TOP));
    for (int i = 0; i < sp->steps; i++) {
        /* a and b refreshed together before f = 2 - a is taken from a, so
         * that a and f are never bootstrapped apart */
        TRY(need2(s, a, b, 1));
        TRY(ts_ckks_neg(s->ev, a, f));
        TRY(ts_ckks_add_const(s->ev, f, 2.0, f));
        TRY(ts_ckks_ciphertext_copy(f2, f)); /* mul_cc may drop its operands */
        TRY(mul_cc(s, b, f2, b));
        if (i + 1 < sp->steps)
            TRY(mul_cc(s, a, f, a));
    }
    TRY(ts_ckks_ciphertext_copy(out, b));
done:
    stage_to(s, prev_stage);
    s->bound = prev_bound;
    ts_free(coeffs);
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(b);
    ts_ckks_ciphertext_free(f);
    ts_ckks_ciphertext_free(f2);
    return st;
}

/* ------------------------------------------------------------ norms */

/*
 * The norm of the model: RMSNorm (LLAMA), out = w x / sqrt(mean(x^2) + eps),
 * or LayerNorm (GPT2), out = w (x - mean) / sqrt(var + eps) + b, with var
 * the mean square of x - mean. The mean is a rotate-and-sum over the period
 * times a plaintext 1/dim on the real slots (one level; the padding stays 0);
 * then both are the same computation. w and b may be NULL (a gain folded
 * into the following matrices; no bias); b is added as a plaintext.
 * stream: x is the step's residual stream, ks x (struct ts_llm_enc): the sum
 * of its squares is the (mapped) mean already, no constant product; out is
 * then ks times the norm (the matrices after it carry 1 / ks).
 * defer (the step's RMSNorm, struct ts_llm_enc norm_defer): out is the
 * factor r = 1 / sqrt(mean + eps) alone, x keeps its level.
 */
/* The bootstrap bound of a norm's input (ENC_BOOT_BOUND), in the model's
 * unit: its mean square lies in the 1/sqrt's interval, so |x_i| <=
 * sqrt(dim hi) (RMSNorm); LayerNorm's input may carry a mean: no bound known. */
static double norm_in_bound(const ts_llm_enc_t *e)
{
    return e->gpt2 ? ENC_BOOT_BOUND : sqrt(e->dim * e->cfg.rsqrt.hi);
}

/* The bootstrap bound of the residual stream (a norm's input, in the model's
 * unit): RMSNorm's proven bound B = norm_in_bound over BOUND_MARGIN, as the
 * stream sits far below it (aidreams260K: rms 0.03-0.06 of B = 16); at B the
 * norm's own input bootstrap (one per norm) left the stream ~16 bits in a
 * lanes pass, the residual pairs at 2 B / BOUND_MARGIN ~18 (docs/benchmarks.md,
 * session 32). LayerNorm: ENC_BOOT_BOUND. */
static double stream_bound(const ts_llm_enc_session_t *s, bool pd)
{
    const ts_llm_enc_t *e = s->e;
    return e->gpt2 ? ENC_BOOT_BOUND
                   : norm_in_bound(e) / BOUND_MARGIN * margin_ratio(s, pd, BOUND_MARGIN);
}

/* The bootstrap bound of a norm's output as the products after it read it
 * (period pd): the unit-gain output u in the stream's unit, ks u with
 * ||u||_2 <= sqrt(dim) (RMSNorm and LayerNorm), so its proven bound ks
 * sqrt(dim) over BOUND_MARGIN (aidreams260K: 1.41 / 16, values up to 0.66);
 * deferred (the stream itself): the stream's, as the norm's input. Until
 * session 44 ENC_BOOT_BOUND, where a lanes pass bootstraps
 * there (every layer at 32 positions). */
static double norm_out_bound(const ts_llm_enc_session_t *s, bool deferred)
{
    const ts_llm_enc_t *e = s->e;
    return deferred
               ? stream_bound(s, true) * e->ks
               : e->ks * sqrt((double)e->dim) / BOUND_MARGIN * margin_ratio(s, true, BOUND_MARGIN);
}

/* The bootstrap bound of layer's key (v: value) rows, and by v's of its
 * attention output (A V, which wo reads): the proven bound (e->kv_bound)
 * over BOUND_MARGIN, as the values sit below it (aidreams260K: v 1.1 of
 * 3.2). Until session 44 ENC_BOOT_BOUND, where a step's levels ran out
 * there (one lane at 2^10 slots: A V at 17 bits, the logits' noise 2^4.7
 * above 2^9's and 2^11's) and in a lanes pass's K/V refresh. */
static double kv_boot_bound(const ts_llm_enc_session_t *s, int layer, bool v)
{
    return s->e->kv_bound[2 * layer + v] / BOUND_MARGIN * margin_ratio(s, false, BOUND_MARGIN);
}

/* The bootstrap bound of the FFN's inputs w1 x (its activation's interval
 * sp, [lo, hi]) and w3 x, and of the activation's output: the interval's top
 * over BOUND_MARGIN (margin_ratio). w1 x and w3 x come from the same
 * normalized input and sit far below that top (rms ~0.6 of 8), and
 * |silu(t)|, |gelu(t)| <= max(|t|, 0.28), so the activation's output does
 * too; a soft bound: a value o times over it is distorted by ~3.9e-7 o^2
 * (ENC_BOOT_BOUND). */
static double ffn_in_bound(const ts_llm_enc_session_t *s, const ts_nonlinear_spec_t *sp)
{
    return fmax(1.0, fmax(fabs(sp->lo), fabs(sp->hi))) / BOUND_MARGIN *
           margin_ratio(s, false, BOUND_MARGIN);
}

static ts_status_t norm(ts_llm_enc_session_t *s, const float *w, const float *b, bool stream,
                        bool defer, ct_t *x, ct_t *out)
{
    const ts_llm_enc_t *e = s->e;
    ct_t *sq = NULL, *r = NULL, *xw = NULL, *xc = NULL;
    ts_status_t st;
    int prev_stage = stage_to(s, TS_LLM_STAGE_NONLINEAR);
    /* bounds (ENC_BOOT_BOUND): the input's (norm_in_bound), the output
     * |x_i w_i| / sqrt(ms) <= sqrt(dim) max |w| */
    const double ms_hi = e->cfg.rsqrt.hi, kx = stream ? e->ks : 1.0;
    double wmax = 1.0;
    for (int i = 0; w && i < e->dim; i++)
        wmax = fmax(wmax, fabs((double)w[i]));
    double prev_bound = bound_set(s, stream_bound(s, stream) * kx);
    TRY(ct_new(s, &sq));
    TRY(ct_new(s, &r));
    TRY(ct_new(s, &xw));
    TRY(ct_new(s, &xc));
    TRY(need_at(s, x, (stream ? 2 : 3) + e->gpt2, stream));
    TRY(ts_ckks_ciphertext_copy(xc, x));
    if (e->gpt2) {
        /* xc = x - mean on the real slots of every period */
        TRY(ts_ckks_ciphertext_copy(sq, x));
        TRY(rot_sum(s, sq, 1, e->pd));
        for (int j = 0; j < e->slots; j++)
            s->buf[j] = j % e->pd < e->dim ? 1.0 / e->dim : 0.0;
        TRY(mul_buf(s, sq, sq));
        TRY(align(s, xc, sq));
        TRY(ts_ckks_sub(s->ev, xc, sq, xc));
    }
    TRY(ts_ckks_ciphertext_copy(sq, xc));
    TRY(mul_cc(s, sq, xc, sq));
    TRY(rot_sum(s, sq, 1, e->pd));
    if (e->cfg.eval_rsqrt == TS_LLM_EVAL_CKKS) {
        /* t = al (sum / dim + eps) + be: the guess's domain map in the mean
         * (the stream's sum of squares is al sum / dim already) */
        double al, be;
        ts__llm_cheb_map(ts_nonlinear_approx_cheb(e->a_rsqrt), &al, &be);
        if (!stream)
            TRY(mul_k(s, sq, al / e->dim, sq));
        TRY(ts_ckks_add_const(s->ev, sq, al * (double)e->m->cfg.norm_eps + be, sq));
        bound_set(s, 1.0);
        TRY(rsqrt(s, sq, r));
    } else {
        if (!stream)
            TRY(mul_k(s, sq, 1.0 / e->dim, sq));
        TRY(ts_ckks_add_const(s->ev, sq, (double)e->m->cfg.norm_eps, sq));
        bound_set(s, ms_hi);
        /* the mean square is in every slot: look up slot 0, spread it back */
        const size_t at0 = 0;
        TRY(tfhe_eval(s, P_RSQRT, sq, &at0, 1, r));
        TRY(rot_sum(s, r, -1, e->pd));
        TRY(rot_sum(s, r, -e->pd, e->slots));
    }
    if (defer) {
        /* the factor alone (norm_in, scale_out) */
        TRY(ts_ckks_ciphertext_copy(out, r));
        goto done;
    }
    if (w) {
        for (int j = 0; j < e->slots; j++) {
            int i = j % e->pd;
            s->buf[j] = i < e->dim ? (double)w[i] : 0.0;
        }
        TRY(mul_buf(s, xc, xw));
    } else {
        TRY(ts_ckks_ciphertext_copy(xw, xc));
    }
    /* xw = w (x - mean) (GPT2): no bound known */
    bound_set(s, e->gpt2 ? ENC_BOOT_BOUND * kx
                         : fmax(norm_in_bound(e) * wmax * kx, 1.0 / sqrt(e->cfg.rsqrt.lo)));
    TRY(mul_cc(s, xw, r, out));
    if (b)
        TRY(add_vec(s, out, NULL, b, e->dim, e->pd, 1.0));
done:
    s->bound = prev_bound;
    stage_to(s, prev_stage);
    ts_ckks_ciphertext_free(sq);
    ts_ckks_ciphertext_free(r);
    ts_ckks_ciphertext_free(xw);
    ts_ckks_ciphertext_free(xc);
    return st;
}

ts_status_t ts_llm_enc_rmsnorm(ts_llm_enc_session_t *s, int layer, int which,
                               const ts_ckks_ciphertext_t *x, ts_ckks_ciphertext_t *out)
{
    if (!s || !x || !out || which < 0 || which > 2)
        return TS_EINVAL;
    if (which < 2 && (layer < 0 || layer >= s->e->nl))
        return TS_EINVAL;
    const ts_llm_model_t *m = s->e->m;
    const float *w = which == 2   ? m->final_norm
                     : which == 0 ? m->layers[layer].attn_norm
                                  : m->layers[layer].ffn_norm;
    const float *b = which == 2   ? m->final_norm_b
                     : which == 0 ? m->layers[layer].attn_norm_b
                                  : m->layers[layer].ffn_norm_b; /* NULL for LLAMA */
    ct_t *t = NULL;
    ts_status_t st;
    stage_begin(s);
    TRY(ct_new(s, &t));
    TRY(ts_ckks_ciphertext_copy(t, x));
    TRY(norm(s, w, b, false, false, t, out));
done:
    stage_to(s, TS_LLM_STAGE_OTHER);
    ts_ckks_ciphertext_free(t);
    return st;
}

/*
 * A deferred norm's operand (llm_int.h ts__llm_enc_shape_t norm_defer): r
 * with at least out + 1 levels (bootstrapped in place), then xb = a copy of
 * the stream x dropped to r's level + 1 (the products' matrices need no more)
 * with at least out + 2, so that (W xb) r lands at level out or above.
 */
static ts_status_t norm_in(ts_llm_enc_session_t *s, ct_t *x, ct_t *r, int out, ct_t *xb)
{
    const ts_llm_enc_t *e = s->e;
    ts_status_t st;
    int prev_stage = stage_to(s, TS_LLM_STAGE_NONLINEAR);
    double prev_bound = bound_set(s, 1.0 / sqrt(e->cfg.rsqrt.lo)); /* r */
    TRY(need_at(s, r, out + 1, true));
    TRY(ts_ckks_ciphertext_copy(xb, x));
    int to = ts_ckks_ciphertext_level(r) + 1;
    if (ts_ckks_ciphertext_level(xb) > to)
        TRY(ts_ckks_drop_to_level(s->ev, xb, to, xb));
    bound_set(s, sqrt(e->dim * e->cfg.rsqrt.hi) * e->ks); /* the stream (norm) */
    TRY(need_at(s, xb, out + 2, true));
done:
    s->bound = prev_bound;
    stage_to(s, prev_stage);
    return st;
}

/* y *= r: a deferred norm's factor on a product of its operand (in place;
 * r may be aligned down). Values up to ENC_BOOT_BOUND and r up to
 * 1 / sqrt(lo) when they need a (pair) bootstrap. */
static ts_status_t scale_out(ts_llm_enc_session_t *s, ct_t *y, ct_t *r)
{
    double prev_bound = bound_set(s, fmax(ENC_BOOT_BOUND, 1.0 / sqrt(s->e->cfg.rsqrt.lo)));
    ts_status_t st = mul_cc(s, y, r, y);
    s->bound = prev_bound;
    return st;
}

/* ------------------------------------------------------------ attention */

/* Move x (zero outside its first block: matvec's first_block) into block
 * pos and add it to the cache. */
static ts_status_t cache_put(ts_llm_enc_session_t *s, ct_t **cache, ct_t **keep, ct_t *x, int pos)
{
    const ts_llm_enc_t *e = s->e;
    ct_t *b = NULL;
    ts_status_t st;
    int prev_stage = stage_to(s, TS_LLM_STAGE_ATTENTION);
    TRY(ct_new(s, &b));
    TRY(ts_ckks_ciphertext_copy(b, x));
    for (int bit = 0; (1 << bit) <= pos; bit++)
        if (pos & (1 << bit))
            TRY(ts_ckks_rotate(s->ev, b, -((int64_t)e->pd << bit) * e->lanes, b));
    if (s->lane_step && e->lanes > 1) {
        if (s->spec) { /* a speculative pass: its rows before sharing, for ts_llm_enc_commit */
            TRY(need(s, b, 1));
            if (!*keep)
                TRY(ct_new(s, keep));
            TRY(ts_ckks_ciphertext_copy(*keep, b));
        }
        TRY(lane_share(s, b, 0));
    }
    if (!*cache) {
        *cache = b;
        b = NULL;
    } else {
        TRY(add_cc(s, *cache, b, *cache));
    }
done:
    stage_to(s, prev_stage);
    ts_ckks_ciphertext_free(b);
    return st;
}

/* the probe's names of the softmax's rounds (softmax_k <= 8: config check) */
static const char *const round_name[8] = {"attn.round0", "attn.round1", "attn.round2",
                                          "attn.round3", "attn.round4", "attn.round5",
                                          "attn.round6", "attn.round7"};

/* Where the softmax's round `round` of k takes its 1/x: round 0 recip, the
 * last (k >= 2) recip_last, between recip_norm. */
static int round_prim(int round, int k)
{
    return round == 0 ? P_RECIP : round == k - 1 ? P_RECIP_LAST : P_RECIP_NORM;
}

static ts_llm_eval_t round_eval(const ts_llm_enc_t *e, int p)
{
    return p == P_RECIP        ? e->cfg.eval_recip
           : p == P_RECIP_LAST ? e->cfg.eval_recip_last
                               : e->cfg.eval_recip_norm;
}

/* out = attention(layer, xb) at pos; out NULL: only k and v into the cache
 * (a cache-only step's last layer: no query, no scores) */
static ts_status_t attention(ts_llm_enc_session_t *s, int layer, bool fold, ct_t *xb, ct_t *rn,
                             int pos, ct_t *out)
{
    const ts_llm_enc_t *e = s->e;
    int k = e->cfg.softmax_k;
    ct_t *q = NULL, *kk = NULL, *v = NULL, *z = NULL, *y = NULL, *sq = NULL, *sum = NULL, *r = NULL,
         *vc = NULL, *zm = NULL;
    ts_ckks_bsgs_t *sh = NULL; /* wq's, wk's and wv's baby rotations of xb */
    ts_status_t st;
    int prev_stage = stage_to(s, TS_LLM_STAGE_ATTENTION);
    TRY(ct_new(s, &q));
    TRY(ct_new(s, &kk));
    TRY(ct_new(s, &v));
    TRY(ct_new(s, &z));
    TRY(ct_new(s, &y));
    TRY(ct_new(s, &sq));
    TRY(ct_new(s, &sum));
    TRY(ct_new(s, &r));
    TRY(ct_new(s, &vc));
    TRY(ct_new(s, &zm));
    /* a norm's output: period pd. A prefill's keys and values lose a level
     * to lane_share, and the cache keeps its lowest row's level: rows a level
     * below an ordinary step's would cost every later step's scores and
     * softmax that level (more bootstraps per generated token), so a prefill
     * takes xb two levels (wk's and lane_share's) above a step's row of this
     * layer (the engine's plan of a step: row_lv), at most a bootstrap's
     * levels, all of them when row_lv is unknown: a bootstrap only where xb
     * is lower, which the prefill's own attention then also runs on */
    int xb_lv = 3;
    if (s->lane_step && e->lanes > 1 && s->boot) {
        int full = ts_boot_levels_left(boot_for(s, true, ts_ckks_ciphertext_slots(xb)));
        int want = e->row_lv ? e->row_lv[layer] + 2 : full;
        xb_lv = want < 3 ? 3 : want > full ? full : want;
    }
    if (rn) {
        /* deferred (xb: the stream): the outputs land where the normalized
         * input's would, xb_lv - 1 (at most a bootstrap's levels - 2); the
         * stream's copy in zm until the scores */
        int lo = xb_lv - 1;
        if (s->boot && lo > ts_boot_levels_left(s->boot) - 2)
            lo = ts_boot_levels_left(s->boot) - 2;
        TRY(norm_in(s, xb, rn, lo, zm));
        xb = zm;
        xb_lv = 1;
    }
    double nb = bound_set(s, norm_out_bound(s, rn != NULL));
    st = need_at(s, xb, xb_lv, true);
    s->bound = nb;
    TRY(st);
    probe(s, "attn.in", xb);
    /* RoPE (LLAMA; GPT2 adds learned positions to the input) folded into
     * wq and wk, the cache's first-block mask into wk and wv: q, k and v one
     * level below xb */
    const mv_fold_t fq = {e->gpt2 ? -1 : pos, false, 0.0, 0.0, s->lane_step != 0},
                    fk = {e->gpt2 ? -1 : pos, true, 0.0, 0.0, false},
                    fv = {-1, true, 0.0, 0.0, false};
    if (out)
        TRY(matvec_which(s, layer, 0, fold, &fq, &sh, xb, q));
    TRY(matvec_which(s, layer, 1, fold, &fk, &sh, xb, kk));
    TRY(matvec_which(s, layer, 2, fold, &fv, &sh, xb, v));
    ts_ckks_bsgs_free(sh);
    sh = NULL;
    if (rn) {
        if (out)
            TRY(scale_out(s, q, rn));
        TRY(scale_out(s, kk, rn));
        TRY(scale_out(s, v, rn));
    }
    if (out)
        probe(s, "attn.q", q);
    probe(s, "attn.k", kk);
    probe(s, "attn.v", v);
    TRY(cache_put(s, &s->kc[layer], &s->pk[layer], kk, pos));
    TRY(cache_put(s, &s->vc[layer], &s->pv[layer], v, pos));
    if (!out)
        goto done;
    /* scores: q (.) K, summed inside each head, masked and scaled, replicated */
    TRY(ts_ckks_ciphertext_copy(z, s->kc[layer]));
    /* a pass (lanes) after ordinary steps: the cache holds their rows at the
     * step's row level (aidreams260K at boot-n16-dense: 5-6), far below the
     * pass's queries (11-12); K and V are refreshed together (one pair
     * bootstrap, at their rows' bounds) so that the scores and the
     * softmax start near the queries' level instead of the cache's: an
     * 8-lane pass after a step 27 -> 24 bootstraps, 106 -> 91 s. In place:
     * the cache keeps the level, so a pass after a pass (whose rows join it
     * at the pass's row level) needs none where this one refreshed (enc_plan.c
     * models the rule; a plan with TS_LLM_PLAN_AFTER_STEPS caps the cache at
     * the step's rows, a session's plan at its caches' levels: pass_state) */
    bool v_ready = false;
    /* CKKS exp: the series' domain map folded into the scaling (ts__llm_cheb_map) */
    const ts_nonlinear_cheb_t *cexp =
        e->cfg.eval_exp == TS_LLM_EVAL_CKKS ? ts_nonlinear_approx_cheb(e->a_exp) : NULL;
    /* worth a bootstrap only where the cache's level leaves the scores too
     * few levels for the scaling and the exp (one each side of the product)
     * and the queries' level (at most a bootstrap's) would not */
    int kv_need = cexp ? 2 + ts__llm_cheb_levels(cexp) : 0,
        kv_top = s->boot ? ts_boot_levels_left(s->boot) : 0,
        kv_q = ts_ckks_ciphertext_level(q) < kv_top ? ts_ckks_ciphertext_level(q) : kv_top;
    if (s->lane_step && cexp && s->boot && ts_ckks_ciphertext_level(z) - 1 < kv_need &&
        kv_q - 1 >= kv_need) {
        TRY(ts_ckks_ciphertext_copy(vc, s->vc[layer]));
        double pb =
            bound_set(s, fmax(kv_boot_bound(s, layer, false), kv_boot_bound(s, layer, true)));
        st = need2_at(s, z, vc, kv_q, false);
        s->bound = pb;
        if (st != TS_OK)
            goto done;
        /* kept only once both refreshed (a failure leaves the cache as it was) */
        TRY(ts_ckks_ciphertext_copy(s->kc[layer], z));
        TRY(ts_ckks_ciphertext_copy(s->vc[layer], vc));
        v_ready = true;
    }
    TRY(mul_cc(s, z, q, z));
    TRY(rot_sum(s, z, 1, e->hd));
    double zs = 1.0 / sqrt((double)e->hd) / ldexp(1.0, k);
    double al = 1.0, be = 0.0;
    if (cexp)
        ts__llm_cheb_map(cexp, &al, &be);
    if (e->cfg.softmax_center) {
        /* minus the head's mean over the positions: the sum over the blocks
         * of the head sums (the cache is 0 after pos, so are they) times the
         * mask / n, at the level of the mask's own product */
        TRY(need(s, z, 1));
        TRY(ts_ckks_ciphertext_copy(zm, z));
        TRY(rot_sum(s, zm, e->pd, e->slots));
        score_mask(s, zs * al, true);
        TRY(mul_buf(s, zm, zm));
    }
    score_mask(s, zs * al, false);
    TRY(mul_buf(s, z, z));
    if (e->cfg.softmax_center)
        TRY(ts_ckks_sub(s->ev, z, zm, z));
    TRY(rot_sum(s, z, -1, e->hd));
    probe(s, "attn.scores", z);
    /* the softmax's values have known magnitudes (see ENC_BOOT_BOUND): the
     * scaled scores lie in exp's interval (mapped: [-1, 1]), y = exp(z)
     * below e^hi */
    double act_bound = bound_set(s, cexp ? 1.0 : fmax(fabs(e->cfg.exp.lo), fabs(e->cfg.exp.hi)));
    if (!cexp) {
        /* one value per (position, head) at t pd + h hd; blocks after pos stay 0 */
        TRY(tfhe_eval_blocks(s, P_EXP, z, pos + 1, e->hd, e->nh, y));
        TRY(rot_sum(s, y, -1, e->hd));
    } else {
        /* y = exp(z) of the mapped t = al z + be; blocks after pos hold
         * exp(0) = 1: subtract it */
        ts_nonlinear_cheb_t unit = ts__llm_cheb_unit(cexp);
        TRY(ts_ckks_add_const(s->ev, z, be, z));
        TRY(cheb(s, &unit, z, y));
        double c0 = ts_nonlinear_approx_eval(e->a_exp, 0.0);
        int lv = ts_ckks_ciphertext_level(y);
        for (int k = 0; k < e->cs; k++)
            s->buf[k] = k / e->lanes / e->pd > lane_pos(s, k % e->lanes) ? c0 : 0.0;
        s->buf_lanes = true;
        TRY(encode_lanes(s, lv, ts_ckks_ciphertext_scale(y)));
        TRY(ts_ckks_sub_plain(s->ev, y, s->pt, y));
    }
    probe(s, "attn.exp", y);
    double yb = exp(e->cfg.exp.hi);
    int ylift = 1; /* the last round's lift on y (divide) */
    for (int round = 0; round < (k > 0 ? k : 1); round++) {
        /* the squares' bootstrap (where exp left y no level: a lanes
         * engine's ordinary step, layer 0): y = exp(z) on exp's interval
         * (interval_bound: mostly near 1, e^hi a margin), later rounds' y
         * below 1; session 33: 14.3 -> ~18 bits at e^hi */
        bound_set(s, round == 0 ? interval_bound(s, exp(e->cfg.exp.lo), yb) : yb);
        if (k > 0) {
            TRY(ts_ckks_ciphertext_copy(sq, y));
            TRY(mul_cc(s, sq, y, sq));
        } else {
            TRY(ts_ckks_ciphertext_copy(sq, y));
        }
        TRY(ts_ckks_ciphertext_copy(sum, sq));
        TRY(rot_sum(s, sum, e->pd, e->slots));
        int p = round_prim(round, k);
        ts_llm_eval_t where = round_eval(e, p);
        const ts_nonlinear_spec_t *rsp = p == P_RECIP        ? &e->cfg.recip
                                         : p == P_RECIP_LAST ? &e->cfg.recip_last
                                                             : &e->cfg.recip_norm;
        /* the first round may take 1/x of the mean (1/n) sum and divide by n after */
        bool mean = round == 0 && ts_llm_enc_config_mean_first(&e->cfg);
        double sb = interval_bound(s, rsp->lo, rsp->hi);
        /* a round followed by one in CKKS returns its terms GS_LIFT times
         * themselves (divide's lift), which the next division, invariant
         * to it, keeps (its pre reads the sum at the factor squared) */
        bool next_ckks =
            round + 1 < k && round_eval(e, round_prim(round + 1, k)) == TS_LLM_EVAL_CKKS;
        int lift = where == TS_LLM_EVAL_CKKS && next_ckks ? GS_LIFT : 1;
        if (where == TS_LLM_EVAL_CKKS) {
            /* y = sq / sum, the mean's 1/n folded into the constants */
            const ts_nonlinear_approx_t *ap = p == P_RECIP        ? e->a_recip
                                              : p == P_RECIP_LAST ? e->a_recip_last
                                                                  : e->a_recip_norm;
            if (mean && s->lane_step && e->lanes > 1) {
                /* a prefill's lanes average over their own positions: the
                 * sum times 1 / (pos_l + 1) (one level) here, sq in divide
                 * after their pair bootstrap (lanes_num); a bootstrap before
                 * the product sees the sums themselves: the mean's bound
                 * (den_bound, as divide's) times the positions */
                double pb = bound_set(s, den_bound(s, rsp, true) * (lane_pos(s, e->lanes - 1) + 1));
                lanes_recip_pos(s, 1.0);
                TRY(mul_buf(s, sum, sum));
                s->bound = pb;
                TRY(divide(s, rsp, ap, 1.0, den_bound(s, rsp, true), true, 1, lift, sq, sum, y));
            } else {
                /* pre: the mean's 1 / n (num lifted by n), or the last
                 * round's lift squared */
                TRY(divide(s, rsp, ap, 1.0 / (mean ? pos + 1 : ylift * ylift),
                           den_bound(s, rsp, p == P_RECIP), false, mean ? pos + 1 : 1, lift, sq,
                           sum, y));
            }
            yb = ylift = lift;
            probe(s, round_name[round], y);
            continue;
        }
        bound_set(s, sb * (mean ? pos + 1 : 1));
        if (mean)
            TRY(mul_k(s, sum, 1.0 / (pos + 1), sum));
        bound_set(s, sb);
        /* one sum per head (replicated over its slots and every block) */
        TRY(tfhe_eval_blocks(s, p, sum, 1, e->hd, e->nh, r));
        TRY(rot_sum(s, r, -1, e->hd));
        TRY(rot_sum(s, r, -e->pd, e->slots));
        /* sq below yb^2 (typically below yb: the scores' interval has a
         * margin) and r = 1/sum */
        bound_set(s, fmax(yb, recip_bound(s, rsp)));
        if (mean)
            TRY(mul_k(s, r, 1.0 / (pos + 1), r));
        TRY(mul_cc(s, sq, r, y));
        yb = 1.0; /* normalized: the squares of the next round sum to ~1 */
        ylift = 1;
    }
    /* the weights below yb, the value rows below theirs */
    bound_set(s, fmax(yb, kv_boot_bound(s, layer, true)));
    if (!v_ready)
        TRY(ts_ckks_ciphertext_copy(vc, s->vc[layer]));
    TRY(mul_cc(s, y, vc, out));
    s->bound = act_bound;
    TRY(rot_sum(s, out, e->pd, e->slots));
    probe(s, "attn.av", out);
done:
    stage_to(s, prev_stage);
    ts_ckks_bsgs_free(sh);
    ts_ckks_ciphertext_free(q);
    ts_ckks_ciphertext_free(kk);
    ts_ckks_ciphertext_free(v);
    ts_ckks_ciphertext_free(z);
    ts_ckks_ciphertext_free(y);
    ts_ckks_ciphertext_free(sq);
    ts_ckks_ciphertext_free(sum);
    ts_ckks_ciphertext_free(r);
    ts_ckks_ciphertext_free(vc);
    ts_ckks_ciphertext_free(zm);
    return st;
}

ts_status_t ts_llm_enc_attention(ts_llm_enc_session_t *s, int layer, const ts_ckks_ciphertext_t *xb,
                                 int pos, ts_ckks_ciphertext_t *out)
{
    if (!s || !xb || !out || layer < 0 || layer >= s->e->nl)
        return TS_EINVAL;
    if (pos < 0 || pos >= s->e->max_pos)
        return TS_ERANGE;
    ct_t *t = NULL;
    ts_status_t st;
    stage_begin(s);
    /* every lane at pos (the positions the masks read: lane_pos) */
    s->pos0 = pos;
    s->lane_step = 0;
    s->lane_n = 1;
    TRY(ct_new(s, &t));
    TRY(ts_ckks_ciphertext_copy(t, xb));
    TRY(attention(s, layer, false, t, NULL, pos, out));
done:
    stage_to(s, TS_LLM_STAGE_OTHER);
    ts_ckks_ciphertext_free(t);
    return st;
}

/* ------------------------------------------------------------ FFN */

/* The activation's series when the engine evaluates it in CKKS, else NULL. */
static const ts_nonlinear_cheb_t *activation_cheb(const ts_llm_enc_t *e)
{
    ts_llm_eval_t where = e->gpt2 ? e->cfg.eval_gelu : e->cfg.eval_silu;
    return where == TS_LLM_EVAL_CKKS ? ts_nonlinear_approx_cheb(e->gpt2 ? e->a_gelu : e->a_silu)
                                     : NULL;
}

/* out = act(h) on the hid values of h (period ph): SiLU (LLAMA) or GELU (GPT2),
 * in CKKS or through TFHE as the configuration says. */
static ts_status_t activation(ts_llm_enc_session_t *s, ct_t *h, ct_t *out)
{
    const ts_llm_enc_t *e = s->e;
    int p = e->gpt2 ? P_GELU : P_SILU;
    const ts_nonlinear_spec_t *sp = e->gpt2 ? &e->cfg.gelu : &e->cfg.silu;
    double prev_bound = bound_set(s, fmax(fabs(sp->lo), fabs(sp->hi))); /* its input interval */
    ts_status_t st;
    const ts_nonlinear_cheb_t *cb = activation_cheb(e);
    if (cb) {
        /* LLAMA: h is t = al (w1 x) + be, the series' domain map folded
         * into w1 (ffn) */
        ts_nonlinear_cheb_t unit = ts__llm_cheb_unit(cb);
        if (!e->gpt2)
            bound_set(s, 1.0);
        st = cheb(s, e->gpt2 ? cb : &unit, h, out);
        s->bound = prev_bound;
        return st;
    }
    /* hid values at slots [0, hid), spread over the periods of ph */
    size_t *at = NULL;
    if (s->nls[p] && (e->hid > s->sub || (size_t)e->hid > ts_convert_n_br(s->cv)))
        st = TS_ENOTSUP; /* (without keys tfhe_eval says so) */
    else if (!(at = ts_malloc((size_t)e->hid * sizeof(size_t))))
        st = TS_ENOMEM;
    else {
        for (int i = 0; i < e->hid; i++)
            at[i] = (size_t)i;
        st = tfhe_eval(s, p, h, at, (size_t)e->hid, out);
    }
    ts_free(at);
    s->bound = prev_bound;
    return st == TS_OK ? rot_sum(s, out, -e->ph, e->slots) : st;
}

double ts__llm_act_max(ts_nonlinear_fn_t fn, double lo, double hi)
{
    double m = fmax(fabs(ts_nonlinear_exact(fn, lo)), fabs(ts_nonlinear_exact(fn, hi)));
    const bool gelu = fn == TS_NL_FN_GELU;
    const double xm = gelu ? -0.7524614 : -1.2784645, ym = gelu ? 0.1700408 : 0.2784646;
    if (lo < xm && hi > xm)
        m = fmax(m, ym);
    return m;
}

/* LLAMA: out = w2(silu(w1 xb) * (w3 xb)); GPT2: out = w2 gelu(w1 xb + b1) + b2. */
static ts_status_t ffn(ts_llm_enc_session_t *s, int layer, bool fold, ct_t *xb, ct_t *rn, ct_t *out)
{
    const ts_llm_enc_t *e = s->e;
    ct_t *h1 = NULL, *h3 = NULL, *g = NULL;
    ts_ckks_bsgs_t *sh = NULL; /* w1's and w3's baby rotations of xb */
    ts_status_t st;
    TRY(ct_new(s, &h1));
    TRY(ct_new(s, &h3));
    TRY(ct_new(s, &g));
    if (rn) {
        /* deferred (xb: the stream): its copy in g until the activation */
        TRY(norm_in(s, xb, rn, 1, g));
        xb = g;
    }
    /* a norm's output: period pd (rn: norm_in's) */
    double nb = bound_set(s, norm_out_bound(s, rn != NULL));
    st = need_at(s, xb, rn ? 1 : 2, true);
    s->bound = nb;
    TRY(st);
    const ts_nonlinear_cheb_t *cb = activation_cheb(e);
    /* LLAMA, CKKS SiLU: h1 = al (w1 x) + be, the series' domain map in w1 */
    double al = 1.0, be = 0.0;
    if (cb && !e->gpt2)
        ts__llm_cheb_map(cb, &al, &be);
    const mv_fold_t f1 = {-1, false, al, 0.0, false};
    TRY(matvec_which(s, layer, 4, fold, &f1, &sh, xb, h1));
    if (!e->gpt2)
        TRY(matvec_which(s, layer, 5, fold, NULL, &sh, xb, h3));
    ts_ckks_bsgs_free(sh);
    sh = NULL;
    if (rn) {
        TRY(scale_out(s, h1, rn));
        TRY(scale_out(s, h3, rn));
    }
    if (cb && !e->gpt2)
        TRY(ts_ckks_add_const(s->ev, h1, be, h1));
    if (cb && !e->gpt2) {
        /* h3 (which the activation's output multiplies) rides along when
         * the series needs a bootstrap of h1 (mapped, in [-1, 1]), at
         * ffn_in_bound. At the interval itself a one-lane step at 128
         * positions left the pair 13.7 / 16.5 bits (docs/benchmarks.md,
         * session 33) */
        double prev_bound = bound_set(s, ffn_in_bound(s, &e->cfg.silu));
        ts_nonlinear_cheb_t unit = ts__llm_cheb_unit(cb);
        st = need2(s, h1, h3, ts__llm_cheb_levels(&unit));
        s->bound = prev_bound;
        if (st != TS_OK)
            goto done;
    }
    TRY(activation(s, h1, g));
    if (!e->gpt2) {
        /* the pair's bootstrap where the product's levels run out (one
         * lane at 2^10 slots; at ENC_BOOT_BOUND until session 44) */
        double prev_bound = bound_set(s, ffn_in_bound(s, &e->cfg.silu));
        st = mul_cc(s, g, h3, g);
        s->bound = prev_bound;
        if (st != TS_OK)
            goto done;
    }
    {
        /* w2's input g = act(h1) h3 (GPT2: act(h1)), bootstrapped where its
         * levels run out (a lanes step at 64 positions): at the
         * activation's largest value on its interval times h3's bound (the
         * interval's over BOUND_MARGIN, as the pair above), not the
         * activations' ENC_BOOT_BOUND, ~9 bits above g's rms there
         * (docs/benchmarks.md, session 40) */
        const ts_nonlinear_spec_t *sp = ts_llm_enc_config_act(&e->cfg, e->m);
        double gb = ts__llm_act_max(e->gpt2 ? TS_NL_FN_GELU : TS_NL_FN_SILU, sp->lo, sp->hi);
        if (!e->gpt2)
            gb *= ffn_in_bound(s, sp);
        double prev_bound = bound_set(s, gb);
        st = matvec_which(s, layer, 6, fold, NULL, NULL, g, out);
        s->bound = prev_bound;
    }
done:
    ts_ckks_bsgs_free(sh);
    ts_ckks_ciphertext_free(h1);
    ts_ckks_ciphertext_free(h3);
    ts_ckks_ciphertext_free(g);
    return st;
}

ts_status_t ts_llm_enc_ffn(ts_llm_enc_session_t *s, int layer, const ts_ckks_ciphertext_t *xb,
                           ts_ckks_ciphertext_t *out)
{
    if (!s || !xb || !out || layer < 0 || layer >= s->e->nl)
        return TS_EINVAL;
    ct_t *t = NULL;
    ts_status_t st;
    stage_begin(s);
    TRY(ct_new(s, &t));
    TRY(ts_ckks_ciphertext_copy(t, xb));
    TRY(ffn(s, layer, false, t, NULL, out));
done:
    stage_to(s, TS_LLM_STAGE_OTHER);
    ts_ckks_ciphertext_free(t);
    return st;
}

/* ------------------------------------------------------------ step */

/*
 * xx += o, both bootstrapped first (one pair) where e->resid_boot's bit says.
 * Their bound: the sum feeds a norm (the next layer's, the FFN's or the
 * final one) and xx fed one, so (RMSNorm) |xx_i|, |xx_i + o_i| <= B =
 * norm_in_bound and |o_i| <= 2 B; the stream sits far below that (aidreams
 * 260K: rms ~0.03 of 16), so the pair is bootstrapped at 2 B /
 * BOUND_MARGIN (aidreams260K: 1 against ENC_BOOT_BOUND's 64; session 31,
 * 2 B until then). LayerNorm: ENC_BOOT_BOUND. In the stream's unit ks.
 */
static ts_status_t resid(ts_llm_enc_session_t *s, int bit, ct_t *xx, ct_t *o)
{
    const ts_llm_enc_t *e = s->e;
    uint64_t rb = s->lane_step ? e->resid_boot_pass : e->resid_boot;
    if (s->boot && bit < 64 && ((rb >> bit) & 1u)) {
        int prev_stage = stage_to(s, TS_LLM_STAGE_OTHER);
        double prev_bound = bound_set(s, (e->gpt2 ? 1.0 : 2.0) * stream_bound(s, true) * e->ks);
        ts_status_t st = need2_at(s, xx, o, ts_boot_levels_left(s->boot), true);
        s->bound = prev_bound;
        stage_to(s, prev_stage);
        if (st != TS_OK)
            return st;
    }
    return add_cc(s, xx, o, xx);
}

/*
 * The session's next pass as it will run (ts__llm_enc_pass_t): its caches'
 * levels now, and the drops after its bootstraps that the plan of a pass
 * from those caches finds (ts__llm_enc_pass_drops). The caches decide the
 * pass's levels: after ordinary steps every layer's rows sit at a step's
 * row level; after a pass, a layer whose K and V that pass refreshed (enc.c
 * attention's rule) sits high, one it did not keeps the rows below (a
 * first pass after steps refreshes only where the cache leaves the scores
 * too few levels). Each list found is kept for the session's later passes
 * from the same levels (a few: a generation's passes repeat two or three
 * states). ps's pointers are the session's, valid until its next pass.
 */
static ts_status_t pass_state(ts_llm_enc_session_t *s, ts__llm_enc_pass_t *ps)
{
    const ts_llm_enc_t *e = s->e;
    memset(ps, 0, sizeof *ps);
    int8_t *lv = ts_malloc(2 * (size_t)e->nl);
    if (!lv)
        return TS_ENOMEM;
    for (int l = 0; l < e->nl; l++) {
        lv[l] = s->kc[l] ? (int8_t)ts_ckks_ciphertext_level(s->kc[l]) : TS_LLM_NO_CACHE;
        lv[e->nl + l] = s->vc[l] ? (int8_t)ts_ckks_ciphertext_level(s->vc[l]) : TS_LLM_NO_CACHE;
    }
    for (int i = 0; i < PASS_MEMO; i++)
        if (s->memo[i].lv && s->memo[i].gen == e->gen &&
            !memcmp(s->memo[i].lv, lv, 2 * (size_t)e->nl)) {
            ts_free(lv);
            ps->cache_lv = s->memo[i].lv;
            ps->drop = s->memo[i].drop;
            ps->n_drop = s->memo[i].n;
            return TS_OK;
        }
    uint8_t *drop = NULL;
    size_t n = 0;
    ts_status_t st = e->lanes > 1 ? ts__llm_enc_pass_drops(e, lv, &drop, &n) : TS_OK;
    if (st != TS_OK) {
        ts_free(lv);
        return st;
    }
    if (ts_log_enabled(TS_LOG_DEBUG)) {
        /* which list the caches' levels gave: one of the engine's (after a
         * pass, after steps) or the pass's own */
        const char *same = "its own";
        for (int k = 0; k < 2; k++)
            if (n == e->n_boot_drop_pass[k] && (!n || !memcmp(drop, e->boot_drop_pass[k], n)))
                same = k ? "the list after steps" : "the list after a pass";
        char ks[160] = "";
        size_t o = 0;
        for (int l = 0; l < e->nl && o + 8 < sizeof ks; l++)
            o += (size_t)snprintf(ks + o, sizeof ks - o, "%s%d/%d", l ? " " : "", lv[l],
                                  lv[e->nl + l]);
        ts_log(TS_LOG_DEBUG, "llm", "pass drops: caches K/V at levels [%s]: %zu drops, %s", ks, n,
               same);
    }
    int i = s->memo_next;
    s->memo_next = (i + 1) % PASS_MEMO;
    ts_free(s->memo[i].lv);
    ts_free(s->memo[i].drop);
    s->memo[i].lv = lv;
    s->memo[i].drop = drop;
    s->memo[i].n = n;
    s->memo[i].gen = e->gen;
    ps->cache_lv = lv;
    ps->drop = drop;
    ps->n_drop = n;
    return TS_OK;
}

ts_status_t ts_llm_enc_session_plan(ts_llm_enc_session_t *s, int pos, unsigned flags,
                                    const ts_sched_costs_t *costs, ts_sched_policy_t policy,
                                    ts_sched_graph_t **g, ts_sched_plan_t **plan, char *msg,
                                    size_t msg_size)
{
    if (!s || !costs || !g || !plan)
        return TS_EINVAL;
    ts__llm_enc_pass_t ps;
    if ((flags & TS_LLM_PLAN_PREFILL) && s->e->lanes > 1) {
        ts_status_t st = pass_state(s, &ps);
        if (st != TS_OK)
            return st;
    }
    return ts__llm_enc_plan_at(s->e, pos, flags & ~TS_LLM_PLAN_AFTER_STEPS,
                               (flags & TS_LLM_PLAN_PREFILL) && s->e->lanes > 1 ? &ps : NULL, costs,
                               policy, g, plan, msg, msg_size);
}

/* The step at pos; logits NULL: cache only (the last layer stops once its k
 * and v are in the cache: a prefix of the full step's operations, so its
 * bootstraps are the full step's first ones, boot_drop included) */
static ts_status_t step(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x, int pos,
                        int lane_step, int n, ts_ckks_ciphertext_t *logits)
{
    const ts_llm_enc_t *e = s->e;
    int last = pos + (n - 1) * lane_step;
    if (n < 1 || n > e->lanes || pos < 0 || last >= e->max_pos || pos != s->next_pos)
        return TS_ERANGE;
    if (ts_ckks_ciphertext_slots(x) != (size_t)e->cs)
        return TS_EMISMATCH;
    spec_drop(s); /* a pending speculative pass not committed: all accepted */
    s->pos0 = pos;
    s->lane_step = lane_step;
    s->lane_n = n;
    ct_t *xx = NULL, *xb = NULL, *o = NULL, *rn = NULL;
    ts_status_t st;
    /* deferred norms (struct ts_llm_enc norm_defer, a prefill's
     * norm_defer_pass): rn = the norm's factor, the products read the
     * stream through norm_in */
    const bool defer = lane_step ? e->norm_defer_pass : e->norm_defer;
    stage_begin(s);
    s->in_step = true;
    s->boot_ev = 0;
    if (lane_step) {
        ts__llm_enc_pass_t ps;
        TRY(pass_state(s, &ps));
        s->pass_drop = ps.drop;
        s->n_pass_drop = ps.n_drop;
    }
    TRY(ct_new(s, &xx));
    TRY(ct_new(s, &xb));
    TRY(ct_new(s, &o));
    TRY(ct_new(s, &rn));
    TRY(ts_ckks_ciphertext_copy(xx, x));
    /* a client-encrypted embedding (one level above the one-hot product's)
     * joins the one-hot path's level, whose bootstraps the engine placed
     * (aidreams260K at boot-n16-dense: 27 bootstraps from the top, 20 so) */
    int top = ts_llm_enc_input_level(e) - 1;
    if (s->boot && ts_ckks_ciphertext_level(xx) > top)
        TRY(ts_ckks_drop_to_level(s->ev, xx, top, xx));
    /* GPT2: the learned position row, added as a plaintext. The norms run
     * with unit gain and no bias, folded into the matrices after them (one
     * level less on the normalized vector) */
    if (e->gpt2) {
        for (int k = 0; k < e->cs; k++) {
            int i = k / e->lanes % e->pd;
            const float *row = e->m->pos_emb + (size_t)lane_pos(s, k % e->lanes) * e->dim;
            s->buf[k] = i < e->dim ? e->ks * (double)row[i] : 0.0;
        }
        s->buf_lanes = true;
        TRY(add_buf(s, xx));
    }
    ct_t *r = defer ? rn : NULL;
    for (int l = 0; l < e->nl; l++) {
        s->layer = l;
        /* deferred: rn the factor, the products read the stream (norm_in) */
        TRY(norm(s, NULL, NULL, true, defer, xx, defer ? rn : xb));
        if (!logits && l == e->nl - 1) {
            TRY(attention(s, l, true, defer ? xx : xb, r, pos, NULL));
            break;
        }
        TRY(attention(s, l, true, defer ? xx : xb, r, pos, o));
        double pb = bound_set(s, kv_boot_bound(s, l, true)); /* wo reads A V */
        st = matvec_which(s, l, 3, true, NULL, NULL, o, o);
        s->bound = pb;
        TRY(st);
        probe(s, "attn.out", o);
        TRY(resid(s, 2 * l, xx, o));
        probe(s, "resid.attn", xx);
        TRY(norm(s, NULL, NULL, true, defer, xx, defer ? rn : xb));
        TRY(ffn(s, l, true, defer ? xx : xb, r, o));
        probe(s, "ffn.out", o);
        TRY(resid(s, 2 * l + 1, xx, o));
        probe(s, "resid.ffn", xx);
    }
    s->layer = -1;
    if (logits) {
        TRY(norm(s, NULL, NULL, true, defer, xx, defer ? rn : xb));
        if (defer)
            TRY(norm_in(s, xx, rn, 0, xb));
        probe(s, "final.in", xb);
        TRY(matvec_which(s, 0, 7, true, NULL, NULL, xb, logits));
        if (defer)
            TRY(scale_out(s, logits, rn));
        probe(s, "logits", logits);
    }
    s->next_pos = last + 1;
    s->stats.steps++;
done:
    s->in_step = false;
    s->lane_step = 0;
    stage_to(s, TS_LLM_STAGE_OTHER);
    ts_ckks_ciphertext_free(xx);
    ts_ckks_ciphertext_free(xb);
    ts_ckks_ciphertext_free(o);
    ts_ckks_ciphertext_free(rn);
    return st;
}

ts_status_t ts_llm_enc_step(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x, int pos,
                            ts_ckks_ciphertext_t *logits)
{
    if (!s || !x || !logits)
        return TS_EINVAL;
    return step(s, x, pos, 0, 1, logits);
}

ts_status_t ts_llm_enc_prefill(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x, int pos,
                               int n, ts_ckks_ciphertext_t *logits)
{
    if (!s || !x)
        return TS_EINVAL;
    if (s->e->lanes < 2)
        return TS_ENOTSUP;
    return step(s, x, pos, 1, n, logits);
}

ts_status_t ts_llm_enc_prefill_speculative(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x,
                                           int pos, int n, ts_ckks_ciphertext_t *logits)
{
    if (!s || !x || !logits)
        return TS_EINVAL;
    if (s->e->lanes < 2)
        return TS_ENOTSUP;
    s->spec = true;
    ts_status_t st = step(s, x, pos, 1, n, logits);
    s->spec = false;
    if (st != TS_OK) {
        spec_drop(s);
        return st;
    }
    s->spec_n = n;
    return TS_OK;
}

int ts_llm_enc_pending(const ts_llm_enc_session_t *s)
{
    return s ? s->spec_n : 0;
}

ts_status_t ts_llm_enc_commit(ts_llm_enc_session_t *s, int m)
{
    if (!s)
        return TS_EINVAL;
    if (s->spec_n == 0)
        return TS_ENOENT;
    if (m < 0 || m > s->spec_n)
        return TS_ERANGE;
    const ts_llm_enc_t *e = s->e;
    int at = s->next_pos - s->spec_n; /* the pass's first position */
    ct_t *t = NULL;
    ts_status_t st = TS_OK;
    int prev_stage = stage_to(s, TS_LLM_STAGE_ATTENTION);
    if (m < s->spec_n) {
        /* the rejected rows (blocks at + m on), shared as the pass
         * shared them, out of every cache it wrote: the same level */
        TRY(ct_new(s, &t));
        for (int l = 0; l < e->nl; l++)
            for (int w = 0; w < 2; w++) {
                ct_t *keep = w ? s->pv[l] : s->pk[l], *cache = w ? s->vc[l] : s->kc[l];
                if (!keep)
                    continue;
                TRY(ts_ckks_ciphertext_copy(t, keep));
                TRY(lane_share(s, t, at + m));
                TRY(align(s, cache, t));
                TRY(ts_ckks_sub(s->ev, cache, t, cache));
            }
    }
    s->next_pos = at + m;
    spec_drop(s);
done:
    stage_to(s, prev_stage);
    ts_ckks_ciphertext_free(t);
    return st;
}

ts_status_t ts_llm_enc_step_cache(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x, int pos)
{
    if (!s || !x)
        return TS_EINVAL;
    return step(s, x, pos, 0, 1, NULL);
}

/* ---------------------------------------------- encrypted one-hot token input */

/*
 * out = E^T onehot: the embedding as a plaintext-matrix x ciphertext product
 * (E^T is dim x vocab; the one-hot vector has period pow2(vocab), the result
 * period pow2(dim)), so the embedding table never leaves the server.
 */
ts_status_t ts_llm_enc_embed(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *onehot,
                             ts_ckks_ciphertext_t *out)
{
    if (!s || !onehot || !out)
        return TS_EINVAL;
    const ts_llm_enc_t *e = s->e;
    size_t n = (size_t)e->dim * (size_t)e->vocab;
    float *wt = ts_malloc(n * sizeof(float));
    ct_t *t = NULL;
    ts_status_t st = wt ? TS_OK : TS_ENOMEM;
    if (st != TS_OK)
        return st;
    for (int v = 0; v < e->vocab; v++)
        for (int i = 0; i < e->dim; i++)
            wt[(size_t)i * e->vocab + v] = e->m->tok_emb[(size_t)v * e->dim + i];
    stage_begin(s);
    TRY(ct_new(s, &t));
    TRY(ts_ckks_ciphertext_copy(t, onehot));
    const mv_fold_t fe = {-1, false, e->ks, 0.0, false}; /* in the residual stream's unit */
    TRY(matvec(s, wt, NULL, NULL, e->dim, e->vocab, e->pv, e->pd, &fe, NULL, t, out));
done:
    stage_to(s, TS_LLM_STAGE_OTHER);
    ts_ckks_ciphertext_free(t);
    ts_free(wt);
    return st;
}

ts_status_t ts_llm_enc_encrypt_onehot(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                      const ts_ckks_secret_key_t *sk, ts_prng_t *prng, int token,
                                      ts_ckks_ciphertext_t *ct)
{
    if (!e || token < 0 || token >= e->vocab)
        return TS_EINVAL;
    float *v = ts_malloc((size_t)e->vocab * sizeof(float));
    if (!v)
        return TS_ENOMEM;
    memset(v, 0, (size_t)e->vocab * sizeof(float));
    v[token] = 1.0f;
    const float *vv = v;
    ts_status_t st =
        encrypt_input(e, ecd, sk, NULL, prng, &vv, 1, e->vocab, ts_llm_enc_input_level(e), ct);
    ts_memzero(v, (size_t)e->vocab * sizeof(float));
    ts_free(v);
    return st;
}

ts_status_t ts_llm_enc_encrypt_onehot_lanes(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                            const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                            const int *tokens, ts_ckks_ciphertext_t *ct)
{
    if (!e || !tokens)
        return TS_EINVAL;
    for (int l = 0; l < e->lanes; l++)
        if (tokens[l] < 0 || tokens[l] >= e->vocab)
            return TS_EINVAL;
    size_t nv = (size_t)e->vocab, bytes = (size_t)e->lanes * nv * sizeof(float);
    float *v = ts_malloc(bytes);
    const float *rows[1024];
    if (!v)
        return TS_ENOMEM;
    memset(v, 0, bytes);
    for (int l = 0; l < e->lanes; l++) {
        v[(size_t)l * nv + (size_t)tokens[l]] = 1.0f;
        rows[l] = v + (size_t)l * nv;
    }
    ts_status_t st = encrypt_input(e, ecd, sk, NULL, prng, rows, e->lanes, e->vocab,
                                   ts_llm_enc_input_level(e), ct);
    ts_memzero(v, bytes);
    ts_free(v);
    return st;
}

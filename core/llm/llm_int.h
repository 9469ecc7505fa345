/*
 * core/llm internals shared by its files (never included outside core/llm).
 */
#ifndef TS_LLM_INT_H
#define TS_LLM_INT_H

#include <math.h>
#include <stdbool.h>

#include "core/llm/llm.h"

/* Weights of one layer. NULL members are absent (biases of LLAMA, w3 of GPT2). */
typedef struct ts__llm_layer {
    float *attn_norm, *attn_norm_b; /* [dim] */
    float *wq, *wk, *wv;            /* [n_heads*hd][dim], [kv_dim][dim], [kv_dim][dim] */
    float *bq, *bk, *bv;
    float *wo, *bo;               /* [dim][n_heads*hd], [dim] */
    float *ffn_norm, *ffn_norm_b; /* [dim] */
    float *w1, *b1;               /* LLAMA gate / GPT2 up: [hidden][dim] */
    float *w2, *b2;               /* down: [dim][hidden] */
    float *w3;                    /* LLAMA up: [hidden][dim] */
} ts__llm_layer_t;

struct ts_llm_model {
    ts_llm_config_t cfg;
    float *data; /* one block holding every tensor below */
    size_t n_floats;
    float *tok_emb; /* [vocab][dim] */
    float *pos_emb; /* GPT2: [seq_len][dim] */
    float *final_norm, *final_norm_b;
    float *wcls; /* [vocab][dim]; == tok_emb when shared */
    ts__llm_layer_t *layers;
};

/* Validate cfg (sizes, caps, divisibility; message into err) and count the
 * floats its tensors take (checked against the file before allocating). */
ts_status_t ts__llm_config_floats(const ts_llm_config_t *cfg, size_t *n_floats, char *err,
                                  size_t err_size);
/* ts__llm_config_floats, then allocate a model with every tensor carved from
 * one zeroed block. */
ts_status_t ts__llm_model_alloc(const ts_llm_config_t *cfg, ts_llm_model_t **out, char *err,
                                size_t err_size);

/* printf into an optional error buffer; returns `st` for tail calls. */
ts_status_t ts__llm_errf(ts_status_t st, char *err, size_t err_size, const char *fmt, ...)
    TS_PRINTF(4, 5);

/* Read a whole file into memory (ts_malloc'd), at most max_bytes (0: 64 GiB).
 * TS_EIO / TS_ENOMEM / TS_ELIMIT, with a sentence naming the path. */
ts_status_t ts__llm_read_file(const char *path, uint64_t max_bytes, uint8_t **buf, size_t *size,
                              char *err, size_t err_size);

ts_status_t ts__llm_load_llama2c(const uint8_t *buf, size_t size, ts_llm_model_t **out, char *err,
                                 size_t err_size);
ts_status_t ts__llm_load_gguf(const uint8_t *buf, size_t size, ts_llm_model_t **out, char *err,
                              size_t err_size);
ts_status_t ts__llm_tokenizer_from_gguf(const uint8_t *buf, size_t size, int vocab_size,
                                        ts_llm_tokenizer_t **out, char *err, size_t err_size);

/* Little-endian readers (no alignment assumptions). */
static inline uint32_t ts__le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ts__le64(const uint8_t *p)
{
    return (uint64_t)ts__le32(p) | (uint64_t)ts__le32(p + 4) << 32;
}
static inline float ts__lef32(const uint8_t *p)
{
    union {
        uint32_t u;
        float f;
    } v = {ts__le32(p)};
    return v.f;
}
/* IEEE binary16 to float (subnormals, infinities and NaN included). */
float ts__f16_to_f32(uint16_t h);

/* Tokenizer construction shared by the llama2.c and GGUF loaders. */
ts_status_t ts__llm_tokenizer_alloc(ts_llm_tok_kind_t kind, int vocab_size,
                                    ts_llm_tokenizer_t **out);
/* Set piece `id` (bytes copied) and its score. */
ts_status_t ts__llm_tokenizer_set(ts_llm_tokenizer_t *tok, int id, const char *piece, size_t len,
                                  float score);
/* SPM dummy prefix on (default) or off (GGUF tokenizer.ggml.add_space_prefix). */
void ts__llm_tokenizer_set_space_prefix(ts_llm_tokenizer_t *tok, bool on);
/* Mark a token as control (decodes to nothing). */
void ts__llm_tokenizer_set_control(ts_llm_tokenizer_t *tok, int id);
/* GPT-2 merges: "left right" strings in rank order. */
ts_status_t ts__llm_tokenizer_add_merge(ts_llm_tokenizer_t *tok, const char *merge, size_t len,
                                        int rank);
/* After all pieces are set: build lookups; bos/eos -1 when absent;
 * space_prefix: SPM text gets this prefix (" " for llama2.c, "\xe2\x96\x81" for
 * GGUF) and, for GGUF, spaces are replaced by U+2581. */
ts_status_t ts__llm_tokenizer_finish(ts_llm_tokenizer_t *tok, int bos, int eos, bool spm_gguf);

/* ---------------------------------------------------------- forward hooks */

/* The approximations and bookkeeping of the simulator (all members optional). */
typedef struct ts__llm_prims {
    const ts_nonlinear_approx_t *a[TS_NL_FN_COUNT]; /* NULL = exact float path */
    int softmax_k;                                  /* < 0: reference softmax */
    const ts_nonlinear_approx_t *recip_norm;        /* 1/x of rounds 2..k-1 (NULL: a[RECIP]) */
    const ts_nonlinear_approx_t *recip_last;        /* 1/x of round k (NULL: recip_norm's) */
    bool mean_first;                                /* first round: 1/x of the mean sum */
    bool center;                                    /* scores minus their row mean first */
    ts_prng_t *noise;                               /* non-NULL: add noise */
    double noise_sigma;
    ts_llm_sim_report_t *rep; /* primitive and softmax statistics */
    float *layer_out;         /* [n_layers][dim]: residual stream after each layer */
} ts__llm_prims_t;

ts_status_t ts__llm_forward_ex(const ts_llm_model_t *model, ts_llm_state_t *state, int token,
                               int pos, const ts__llm_prims_t *p, const float **logits);

/* What core/llm/enc_plan.c reads of an encrypted engine (enc.c fills it). */
typedef struct ts__llm_enc_shape {
    const ts_llm_model_t *m;
    ts_ckks_params_t *params;
    const ts_llm_enc_config_t *cfg;
    const ts_boot_t *boot;
    int slots, pd, ph, pv, dim, hid, vocab, nh, hd, nl, max_pos;
    const ts_nonlinear_approx_t *a_exp, *a_rsqrt, *a_silu, *a_gelu, *a_recip, *a_recip_norm,
        *a_recip_last;
    bool gpt2;                /* LayerNorm, biases, learned positions, GELU (see enc.c) */
    uint64_t resid_boot;      /* residual bootstraps (struct ts_llm_enc) */
    uint64_t resid_boot_pass; /* a prefill pass's (struct ts_llm_enc) */
    const uint8_t *boot_drop; /* levels dropped after each bootstrap (struct ts_llm_enc) */
    size_t n_boot_drop;
    /* a pass's: [0] after a pass or a prefilled cache, [1] after ordinary
     * steps (struct ts_llm_enc boot_drop_pass) */
    const uint8_t *boot_drop_pass[2];
    size_t n_boot_drop_pass[2];
    const int8_t *row_lv; /* an ordinary step's K row level per layer (NULL: unknown) */
    int period_log_slots; /* the residual stream's bootstrapper's slots (0: none) */
    int boot_log_slots;   /* the main bootstrapper's (the ciphertexts' slots, lanes
                           * included, when there is none) */
    int log_cs;           /* the ciphertexts' slots, lanes included (log2) */
    bool norm_defer;      /* the step's norms deferred (struct ts_llm_enc) */
    bool norm_defer_pass; /* a prefill pass's (struct ts_llm_enc) */
} ts__llm_enc_shape_t;

/*
 * The step's RMSNorm deferred (struct ts_llm_enc norm_defer): the norm
 * yields only its factor r = 1 / sqrt(mean(x^2) + eps), the products that
 * read the norm (wq wk wv, w1 w3, the LM head) take the residual stream
 * itself, and r multiplies their outputs: W (x r) = (W x) r, with the matrix
 * product beside the 1/sqrt series instead of after it (one level less on
 * the path; aidreams260K at boot-n16-dense, 2^13 slots: 17 bootstraps per
 * step instead of 20), at the price of the products running above the norm
 * (enc.c norm_in drops the stream's copy they read to r's level + 1) and
 * one ciphertext product per output instead of one per norm. LLAMA only
 * (GPT2's LayerNorm adds folded biases after the product); the engine
 * defers where its plan of the step predicts less time, and in a lanes
 * engine's prefill passes (norm_defer_pass) where the plan of its last pass
 * does (ts_llm_enc_new).
 */
void ts__llm_enc_shape(const ts_llm_enc_t *e, ts__llm_enc_shape_t *out);
/* The engine's bootstrapper's configuration or, without one, the one
 * tesserad would give it (the working slots; dense secrets with h' = 32
 * encapsulation): what plans assume. */
ts_status_t ts__llm_enc_boot_config(const ts_llm_enc_t *e, ts_boot_config_t *cfg);
/* The residual bootstraps (bit 2l: after layer l's attention, 2l + 1: after
 * its FFN) with which the engine's plan of the step (one-hot input, last
 * position; pass: a lanes engine's last prefill pass) needs the fewest
 * bootstraps (then the least predicted time under the built-in cost table):
 * every subset for up to 5 layers, else bit by bit (two passes). 0 when the
 * engine does not bootstrap or nothing helps. */
uint64_t ts__llm_enc_place(const ts_llm_enc_t *e, bool pass);
/* The predicted time (ns, built-in cost table) of the engine's plan of its
 * last ordinary step (pass: a lanes engine's last prefill pass) with
 * residual bootstraps mask and no drops after bootstraps, as ts_llm_enc_new
 * compares its norm choices; false when it does not plan. */
bool ts__llm_enc_defer_ns(const ts_llm_enc_t *e, bool pass, uint64_t mask, double *ns);
/* Replace the engine's residual bootstraps by mask, the step's and the
 * prefill passes' (tests: a placement the search would not choose, executed
 * against its plan); the drops after bootstraps (below) are found again for
 * it. */
void ts__llm_enc_set_resid_boot(ts_llm_enc_t *e, uint64_t mask);
/* A softmax round's terms x (one value per position and head, replicated
 * over the head's slots, the session's next positions) times c, averaged
 * over each head's replicas in the positions up to the session's first
 * (enc.c head_average: divide runs it on the terms right after their pair
 * bootstrap); one level. Tests: the oracle is the mean of each head's slots. */
ts_status_t ts__llm_enc_head_average(ts_llm_enc_session_t *s, ts_ckks_ciphertext_t *x, double c);
/*
 * The levels the step drops right after each of its bootstraps
 * (ts_sched_graph_set_boot_drop): for each bootstrap in order, the most that
 * leaves the step's bootstraps as they are (their count, under the engine's
 * plan of the last position) and lowers its predicted time under the
 * built-in cost table: levels a bootstrap leaves that the operations until
 * the next one do not use, so that they run on fewer primes. *drop
 * (ts_malloc'd, *n entries) NULL when none helps or the configuration
 * evaluates anything in TFHE (its conversions are placed by levels too).
 */
ts_status_t ts__llm_enc_boot_drops(const ts_llm_enc_t *e, uint8_t **drop, size_t *n);
/* The same for a lanes engine's pass (under its plan at the last pass's
 * position): after a pass or a prefilled cache (after_steps false) or after
 * ordinary steps (true: TS_LLM_PLAN_AFTER_STEPS). *drop NULL without lanes. */
ts_status_t ts__llm_enc_boot_drops_pass(const ts_llm_enc_t *e, bool after_steps, uint8_t **drop,
                                        size_t *n);
/*
 * A session's pass as it will run (enc.c pass_state): each layer's K cache
 * level in cache_lv[0, n_layers), its V cache's in cache_lv[n_layers,
 * 2 n_layers), TS_LLM_NO_CACHE for a layer with no cache yet (the pass's
 * rows join each cache at most at its level: after ordinary steps their
 * rows', after a pass that refreshed a layer the refresh's), and the drops
 * after its bootstraps (ts__llm_enc_pass_drops of those levels).
 */
#define TS_LLM_NO_CACHE INT8_MAX
typedef struct ts__llm_enc_pass {
    const int8_t *cache_lv;
    const uint8_t *drop;
    size_t n_drop;
} ts__llm_enc_pass_t;
/* The drops of a lanes engine's pass whose caches sit at cache_lv (as
 * above), found as ts__llm_enc_boot_drops_pass finds them (its plan at the
 * last pass's position). *drop NULL when none helps or without lanes. */
ts_status_t ts__llm_enc_pass_drops(const ts_llm_enc_t *e, const int8_t *cache_lv, uint8_t **drop,
                                   size_t *n);
/* ts_llm_enc_plan of a pass (TS_LLM_PLAN_PREFILL) as ps says (NULL: as
 * ts_llm_enc_plan; ignored for a step). */
ts_status_t ts__llm_enc_plan_at(const ts_llm_enc_t *e, int pos, unsigned flags,
                                const ts__llm_enc_pass_t *ps, const ts_sched_costs_t *costs,
                                ts_sched_policy_t policy, ts_sched_graph_t **g,
                                ts_sched_plan_t **plan, char *msg, size_t msg_size);
/* The level of each layer's K row in the engine's plan of an ordinary step
 * at its last position (*rows: n_layers entries, ts_free; NULL without a
 * bootstrapper or a plan): what a prefill's shared rows must reach so that
 * the cache stays at a step's level. */
ts_status_t ts__llm_enc_step_rows(const ts_llm_enc_t *e, int8_t **rows);

/* Levels a Chebyshev series takes in CKKS: the affine map to [-1, 1] unless
 * its domain is that already, then Paterson-Stockmeyer (the engine's cheb
 * and its plan mirror). */
static inline int ts__llm_cheb_levels(const ts_nonlinear_cheb_t *cb)
{
    return ts_ckks_chebyshev_depth((size_t)cb->degree) + (cb->lo == -1.0 && cb->hi == 1.0 ? 0 : 1);
}

/* The largest |act(x)| on [lo, hi] (lo < hi) of the activation fn
 * (TS_NL_FN_SILU or TS_NL_FN_GELU, as ts_nonlinear_exact computes it): at
 * the ends, or its minimum (SiLU -0.2784646 at -1.2784645, GELU -0.1700408
 * at -0.7524614; rounded up) where the interval holds it. The FFN's bound
 * for w2's input (enc.c ffn). */
double ts__llm_act_max(ts_nonlinear_fn_t fn, double lo, double hi);

/*
 * The affine map of a Chebyshev series' domain [lo, hi] onto [-1, 1],
 * t = al x + be. The engine folds it into the product before the series
 * (the scores' scaling for exp, the norm's mean for 1/sqrt, w1 for SiLU) and
 * adds be, saving the level the series would spend on it; the unit copy
 * (the same coefficients on [-1, 1]) then evaluates t. A slot where x = 0
 * gets t = be: x = 0 in the series' terms.
 */
static inline void ts__llm_cheb_map(const ts_nonlinear_cheb_t *cb, double *al, double *be)
{
    *al = 2.0 / (cb->hi - cb->lo);
    *be = -(cb->hi + cb->lo) / (cb->hi - cb->lo);
}

static inline ts_nonlinear_cheb_t ts__llm_cheb_unit(const ts_nonlinear_cheb_t *cb)
{
    ts_nonlinear_cheb_t u = *cb;
    u.lo = -1.0;
    u.hi = 1.0;
    return u;
}

/* Whether a product rescaled at level lv (1..max) leaves a scale off Delta by
 * 2^-10 or more (its prime far from the scale: a deep level), so that the
 * engine spends one more level correcting it (enc.c snap, cheb_eval). */
static inline bool ts__llm_level_deep(const ts_ckks_params_t *p, double delta, int lv)
{
    return lv >= 1 && fabs(delta / (double)ts_ckks_params_q(p, (size_t)lv) - 1.0) >= 0x1p-10;
}

#endif

/*
 * core/llm — language models in plaintext: loading, tokenizers, the reference
 * decode step, sampling, and the ciphertext-aligned simulator.
 *
 * Models. Two architectures, with every shape read from the file:
 *   LLAMA  RMSNorm, RoPE on pairs (2i, 2i+1) of each head, grouped-query
 *          attention (n_heads a multiple of n_kv_heads), SwiGLU FFN
 *          w2(silu(w1 x) * w3 x), no biases.
 *   GPT2   LayerNorm with bias, learned positions, fused or split QKV with
 *          biases, GELU (tanh form) FFN with biases.
 * Files: llama2.c checkpoints (version 0 legacy layout and version 1 "ak42"
 * header), and GGUF v2/v3 (architectures "llama" and "gpt2"; F32, F16 and Q8_0
 * tensors, dequantized to float32 on load). Weights are float32 in memory.
 * Every size is checked against the file length before it is read; malformed
 * files give TS_EFORMAT (unsupported variants TS_ENOTSUP) and a sentence in
 * the caller's error buffer, never a crash.
 *
 * Tokenizers: llama2.c tokenizer.bin (greedy merges by score, dummy-prefix
 * space, <0xAB> byte pieces), SentencePiece-style GGUF vocabularies (same
 * algorithm, U+2581 for spaces) and GPT-2 byte-level BPE (merge ranks from
 * GGUF "tokenizer.ggml.merges"). The GPT-2 pre-tokenizer follows the GPT-2
 * regex with one simplification: every non-ASCII code point counts as a letter.
 *
 * Decoding: ts_llm_forward() runs one position of one sequence with a KV cache
 * in ts_llm_state_t, in float32, with the same operation order as llama2.c's
 * run.c, and returns the logits. Sampling (greedy, temperature, top-k, top-p)
 * draws from a seeded AES-CTR stream, so a seed fixes the output.
 *
 * Simulator (ROSETTA section 5.4): the same forward pass in which each
 * non-arithmetic primitive (exp and 1/x inside softmax, 1/sqrt(x) in the norms,
 * SiLU, GELU) is replaced by its approximation from core/nonlinear, with
 * optional Gaussian noise after each arithmetic step. With every primitive
 * exact and no noise it runs the reference code path and reproduces the
 * reference logits bit for bit.
 *
 * Threading: a model is immutable after loading and may be shared by threads;
 * a state, sampler or tokenizer call sequence belongs to one thread at a time.
 */
#ifndef TS_LLM_H
#define TS_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/circuits/circuits.h"
#include "core/ckks/ckks.h"
#include "core/nonlinear/nonlinear.h"
#include "core/sched/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Caps on shapes read from files (anything larger is TS_EFORMAT). */
#define TS_LLM_MAX_DIM    65536
#define TS_LLM_MAX_LAYERS 1024
#define TS_LLM_MAX_VOCAB  1048576
#define TS_LLM_MAX_SEQ    1048576
#define TS_LLM_MAX_PIECE  65536

typedef enum {
    TS_LLM_ARCH_LLAMA = 0,
    TS_LLM_ARCH_GPT2 = 1,
} ts_llm_arch_t;

/* "llama" or "gpt2". */
const char *ts_llm_arch_name(ts_llm_arch_t arch);

/* The public shape of a model (all from the file). */
typedef struct ts_llm_config {
    ts_llm_arch_t arch;
    int dim;        /* residual width */
    int hidden_dim; /* FFN width */
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim; /* per-head width of q, k, v */
    int vocab_size;
    int seq_len;  /* maximum positions (context length) */
    int rope_dim; /* rotated dimensions per head (LLAMA), 0 for GPT2 */
    float rope_theta;
    float norm_eps;
    bool shared_classifier; /* logits use the token-embedding matrix */
} ts_llm_config_t;

/* ---------------------------------------------------------------- model */

typedef struct ts_llm_model ts_llm_model_t;

/*
 * Load a model file; the format is detected from its first bytes (GGUF magic,
 * llama2.c "ak42" version header, otherwise the llama2.c version 0 layout).
 * [out] out: the model (free with ts_llm_model_free).
 * [out] err: optional buffer for a sentence saying what is wrong.
 * Errors: TS_EIO (cannot read), TS_EFORMAT, TS_ENOTSUP, TS_ENOMEM.
 */
ts_status_t ts_llm_model_load(const char *path, ts_llm_model_t **out, char *err, size_t err_size);
/* The same from bytes in memory (not retained). */
ts_status_t ts_llm_model_load_buffer(const void *buf, size_t size, ts_llm_model_t **out, char *err,
                                     size_t err_size);
void ts_llm_model_free(ts_llm_model_t *model);
const ts_llm_config_t *ts_llm_model_config(const ts_llm_model_t *model);
/* Number of float parameters held. */
size_t ts_llm_model_n_params(const ts_llm_model_t *model);

/* ------------------------------------------------------------ tokenizer */

typedef enum {
    TS_LLM_TOK_SPM = 0,  /* score-greedy merges (llama2.c and GGUF "llama") */
    TS_LLM_TOK_GPT2 = 1, /* byte-level BPE with merge ranks */
} ts_llm_tok_kind_t;

typedef struct ts_llm_tokenizer ts_llm_tokenizer_t;

/*
 * Load a tokenizer: a llama2.c tokenizer.bin (needs vocab_size, the model's),
 * or the tokenizer inside a GGUF file (vocab_size 0 or the model's to check).
 * Errors: TS_EIO, TS_EFORMAT, TS_ENOTSUP, TS_ENOMEM, TS_EINVAL.
 */
ts_status_t ts_llm_tokenizer_load(const char *path, int vocab_size, ts_llm_tokenizer_t **out,
                                  char *err, size_t err_size);
ts_status_t ts_llm_tokenizer_load_buffer(const void *buf, size_t size, int vocab_size,
                                         ts_llm_tokenizer_t **out, char *err, size_t err_size);
void ts_llm_tokenizer_free(ts_llm_tokenizer_t *tok);

ts_llm_tok_kind_t ts_llm_tokenizer_kind(const ts_llm_tokenizer_t *tok);
int ts_llm_tokenizer_vocab_size(const ts_llm_tokenizer_t *tok);
int ts_llm_tokenizer_bos(const ts_llm_tokenizer_t *tok); /* -1 when none */
int ts_llm_tokenizer_eos(const ts_llm_tokenizer_t *tok); /* -1 when none */
/* The stored piece of a token (not NUL-terminated); NULL for ids out of range. */
const char *ts_llm_tokenizer_piece(const ts_llm_tokenizer_t *tok, int id, size_t *len);

/*
 * Encode `len` bytes of text. bos/eos: add those tokens (when the vocabulary
 * has them). Writes at most cap ids.
 * [out] n: the number of ids (also on TS_ELIMIT: the number needed).
 * Errors: TS_ELIMIT (cap too small), TS_ENOMEM, TS_EINVAL.
 */
ts_status_t ts_llm_tokenizer_encode(const ts_llm_tokenizer_t *tok, const char *text, size_t len,
                                    bool bos, bool eos, int *ids, size_t cap, size_t *n);
/* An upper bound on the ids encode can produce for len bytes. */
size_t ts_llm_tokenizer_max_ids(size_t len);
/*
 * The bytes token `id` stands for, following token `prev` (-1 at the start):
 * SPM drops the leading space right after BOS and turns <0xAB> into a byte;
 * GPT-2 maps its byte-level characters back to bytes. Control tokens (BOS,
 * EOS) decode to nothing. Writes at most cap bytes plus a NUL when room.
 * [out] n: bytes produced (needed, on TS_ELIMIT).
 */
ts_status_t ts_llm_tokenizer_decode(const ts_llm_tokenizer_t *tok, int prev, int id, char *buf,
                                    size_t cap, size_t *n);

/* --------------------------------------------------------------- decode */

/* Per-sequence decode state: KV cache and scratch (one owner). */
typedef struct ts_llm_state ts_llm_state_t;

ts_status_t ts_llm_state_new(const ts_llm_model_t *model, ts_llm_state_t **out);
/* A state for the first n_ctx positions only (n_ctx <= 0 or >= seq_len: all),
 * so long-context models need not reserve their whole KV cache. */
ts_status_t ts_llm_state_new_ctx(const ts_llm_model_t *model, int n_ctx, ts_llm_state_t **out);
void ts_llm_state_free(ts_llm_state_t *state);

/*
 * Run token `token` at position `pos` (0 <= pos < the state's context; positions before
 * pos must have been run with this state, pos may rewind to recompute).
 * [out] logits: vocab_size floats owned by the state, valid until the next call.
 * Errors: TS_EINVAL (token out of range), TS_ERANGE (pos out of range or
 * beyond the next position).
 */
ts_status_t ts_llm_forward(const ts_llm_model_t *model, ts_llm_state_t *state, int token, int pos,
                           const float **logits);

/*
 * The KV cache of one layer as ts_llm_forward left it (for benchmarks that
 * prefill an encrypted cache, ts_llm_enc_cache_encrypt): rows [0, *n_pos) of
 * kv_dim = n_kv_heads * head_dim floats, position t at row t; keys after RoPE
 * (LLAMA), keys and values with their biases (GPT2). *n_pos is the next
 * position of the state. Borrowed: valid until the next ts_llm_forward.
 * Errors: TS_EINVAL (layer out of range, a state of another model's shape).
 */
ts_status_t ts_llm_state_kv(const ts_llm_model_t *model, const ts_llm_state_t *state, int layer,
                            const float **k, const float **v, int *n_pos);

/* ------------------------------------------------------------- sampling */

typedef struct ts_llm_sampler_cfg {
    float temperature; /* 0 = greedy (argmax, lowest id on ties) */
    int top_k;         /* 0 = off */
    float top_p;       /* 0 or >= 1 = off */
} ts_llm_sampler_cfg_t;

typedef struct ts_llm_sampler ts_llm_sampler_t;

/*
 * A sampler drawing from ts_prng_new_seeded(seed expanded to 32 bytes
 * little-endian, stream id 0x6c6c6d73).
 * Errors: TS_EINVAL (temperature < 0 or not finite, top_k < 0, top_p < 0),
 * TS_ENOMEM.
 */
ts_status_t ts_llm_sampler_new(const ts_llm_sampler_cfg_t *cfg, uint64_t seed,
                               ts_llm_sampler_t **out);
void ts_llm_sampler_free(ts_llm_sampler_t *s);
/* Sample one id from n logits. Errors: TS_EINVAL (n <= 0), TS_ENOMEM. */
ts_status_t ts_llm_sampler_sample(ts_llm_sampler_t *s, const float *logits, int n, int *out);
/*
 * The distribution the sampler draws from: softmax(logits / T), cut to the k
 * most likely, then to the smallest most-likely prefix with mass >= top_p,
 * renormalized. probs: n doubles (zero outside the kept set). Greedy gives a
 * one-hot vector. Errors: TS_EINVAL, TS_ENOMEM.
 */
ts_status_t ts_llm_sampler_probs(const ts_llm_sampler_cfg_t *cfg, const float *logits, int n,
                                 double *probs);
/* argmax, lowest index on ties; -1 when n <= 0. */
int ts_llm_argmax(const float *logits, int n);
/* The top logit over the runner-up (>= 0): how safe the argmax is; 0 when
 * n < 2. */
double ts_llm_logit_margin(const float *logits, int n);

/*
 * Greedy/sampled generation helper: runs prompt[0..n_prompt) and then samples
 * until `n_total` positions are filled (or seq_len, or EOS when stop_eos).
 * out: at least n_total ids, starting with the prompt. sampler NULL = greedy.
 * on_token (optional) is called for every generated (not prompt) id.
 * [out] n_out: ids written.
 */
typedef void (*ts_llm_token_cb)(void *ctx, int prev, int id);
ts_status_t ts_llm_generate(const ts_llm_model_t *model, ts_llm_sampler_t *sampler,
                            const int *prompt, size_t n_prompt, size_t n_total, bool stop_eos,
                            int eos_id, ts_llm_token_cb on_token, void *ctx, int *out,
                            size_t *n_out);

/* ---------------------------------------------------------- n-gram draft */

/*
 * The n-gram draft of speculative decoding (core/llm/draft.c): counts which
 * token followed each context of nmin..nmax tokens in the sequences added,
 * and guesses greedily from the longest context seen (the most frequent next
 * token, the lowest id on a tie). It holds the user's tokens: wiped on free.
 */
#define TS_LLM_NGRAM_MAX 4
typedef struct ts_llm_ngram ts_llm_ngram_t;
/* Errors: TS_EINVAL (not 1 <= nmin <= nmax <= TS_LLM_NGRAM_MAX), TS_ENOMEM. */
ts_status_t ts_llm_ngram_new(int nmin, int nmax, ts_llm_ngram_t **out);
void ts_llm_ngram_free(ts_llm_ngram_t *g);
/*
 * Also count contexts shorter than nmin (down to one token) and guess from
 * them where no longer context has been seen: a pass's first guess only
 * when that context was seen twice or more and its most frequent next token
 * took at least `share` of its occurrences (a speculative pass that keeps
 * nothing costs more than the ordinary step it replaces), the pass's later
 * guesses freely. Before the first ts_llm_ngram_add. Errors: TS_EINVAL
 * (share outside (0, 1], or counts already added).
 */
ts_status_t ts_llm_ngram_set_fallback(ts_llm_ngram_t *g, double share);
/*
 * Counts the tokens ids[from..n) of one sequence, each after its contexts
 * (which may reach back before `from`: a growing text is added in pieces
 * with the same ids). Contexts never cross sequences added separately.
 * Errors: TS_EINVAL, TS_ENOMEM (the counts so far stay).
 */
ts_status_t ts_llm_ngram_add(ts_llm_ngram_t *g, const int *ids, size_t n, size_t from);
/* Up to k guesses for the tokens after ids[0..n) into out; returns how many
 * (they stop where no context of nmin tokens or more has been seen). */
size_t ts_llm_ngram_guess(const ts_llm_ngram_t *g, const int *ids, size_t n, size_t k, int *out);
/* ts_llm_ngram_guess, the rest of out[0..k) filled with the last guess (a
 * speculative pass fills every lane); returns the draft's own guesses. */
size_t ts_llm_ngram_draft(const ts_llm_ngram_t *g, const int *ids, size_t n, size_t k, int *out);
/* Counts each non-empty line of text[0..len) as one sequence (BOS and its
 * tokens; a line over 1024 bytes in pieces of at most that, cut after a
 * space where one is in the piece's second half). Errors: TS_EINVAL,
 * TS_ENOMEM, the tokenizer's. */
ts_status_t ts_llm_ngram_add_text(ts_llm_ngram_t *g, const ts_llm_tokenizer_t *tok,
                                  const char *text, size_t len);
/* ts_llm_ngram_add_text of a file of at most 64 MiB (read, counted, wiped);
 * err gets a sentence naming the path. Errors: TS_EIO, TS_ELIMIT, TS_ENOMEM,
 * TS_EINVAL, the tokenizer's. */
ts_status_t ts_llm_ngram_add_file(ts_llm_ngram_t *g, const ts_llm_tokenizer_t *tok,
                                  const char *path, char *err, size_t err_size);
/*
 * Speculative decoding of ids[from + 1 .. n) with the n-gram draft, replayed
 * on known ids as `tessera generate --draft-lookup` runs it (ids[0..from]
 * known before; a pass of up to `lanes` positions where the draft guesses,
 * keeping its guesses up to the first wrong one, else a one-position step).
 * Since a kept guess is the token the sampler drew, this is exact for any
 * sampler given the ids it drew. The text's ids are added to g as they
 * become known. Errors: TS_EINVAL (from >= n, lanes not in 2..1024), TS_ENOMEM.
 */
typedef struct ts_llm_ngram_replay {
    size_t tokens;  /* decoded: n - 1 - from */
    size_t passes;  /* speculative passes */
    size_t steps;   /* one-position steps (no guess) */
    size_t drafted; /* the draft's own guesses in the passes */
    size_t kept;    /* guesses kept */
    /* passes right after a one-position step: their caches hold its rows
     * (a plan with TS_LLM_PLAN_AFTER_STEPS); the others follow a pass */
    size_t after_step;
} ts_llm_ngram_replay_t;
ts_status_t ts_llm_ngram_replay(ts_llm_ngram_t *g, const int *ids, size_t n, size_t from,
                                size_t lanes, ts_llm_ngram_replay_t *r);
/* ------------------------------------------------------------ simulator */

/*
 * Which approximation replaces each primitive. prim[fn] for fn in
 * ts_nonlinear_fn_t. softmax_k < 0: the reference softmax (max subtracted,
 * exp and 1/x exact unless prim[] says otherwise); softmax_k >= 0: the max-free
 * normalize-and-square softmax with that k. noise_bits > 0 adds Gaussian noise
 * of standard deviation 2^-noise_bits after each arithmetic step (matrix-vector
 * products, attention scores and sums, norm sums and products, residual adds,
 * gating products), drawn from the seeded stream `seed`.
 */
typedef struct ts_llm_sim_config {
    ts_nonlinear_spec_t prim[TS_NL_FN_COUNT];
    int softmax_k;
    double noise_bits;
    uint64_t seed;
    /* The encrypted engine's max-free softmax variants (softmax_k >= 1):
     * recip_norm (method EXACT: use prim[RECIP]) is the 1/x of rounds 2..k-1,
     * recip_last (EXACT: recip_norm's) the 1/x of round k (k >= 2);
     * softmax_mean_first: the first round looks up 1/x of the mean sum
     * (1/n) sum and divides the result by n; softmax_center: the scores
     * minus their mean over the row first (the softmax is unchanged, and
     * the first round's mean sum is then at least 1: Jensen). */
    ts_nonlinear_spec_t recip_norm, recip_last;
    bool softmax_mean_first;
    bool softmax_center;
} ts_llm_sim_config_t;

/* Everything exact, reference softmax, no noise. */
void ts_llm_sim_config_default(ts_llm_sim_config_t *cfg);
/*
 * Load a YAML file (examples in configs/approx/):
 *   softmax_k: 4          noise_bits: 0       seed: 1
 *   softmax_mean_first: false    softmax_center: false
 *   exp|recip|recip_norm|recip_last|rsqrt|silu|gelu:
 *     method: exact|poly|iter|lut   lo: ..  hi: ..  degree: ..  steps: ..
 *     segments: ..  entries: ..  bounds: uniform|log|auto|auto_rel  index_bits: ..
 *     iter: classic|scaled
 * Keys not present keep the values already in cfg, except in a section that
 * sets `method`: it describes its primitive afresh, so its absent keys take
 * the method's defaults (0, uniform, classic) and only lo and hi carry over.
 * Errors: TS_ECONFIG, TS_EIO (message in err).
 */
ts_status_t ts_llm_sim_config_load(const char *path, ts_llm_sim_config_t *cfg, char *err,
                                   size_t err_size);
ts_status_t ts_llm_sim_config_load_string(const char *text, size_t len, ts_llm_sim_config_t *cfg,
                                          char *err, size_t err_size);

/* The simulator's report (owned by the caller; free arrays with _clear). */
typedef struct ts_llm_sim_report {
    ts_nonlinear_stats_t prim[TS_NL_FN_COUNT]; /* local error of each primitive call */
    uint64_t softmax_count;                    /* softmax rows */
    double softmax_max_err, softmax_mean_err;  /* vs exact softmax of the same row */
    double score_min, score_max;               /* attention scores seen (softmax inputs) */
    int n_layers;
    double *layer_max_err; /* residual stream after each layer, vs the exact pass */
    double *layer_mean_err;
    double *layer_rms; /* RMS of the exact residual stream (the scale) */
    double logits_max_err, logits_mean_err;
    size_t positions;  /* positions run (teacher-forced) */
    size_t agree;      /* positions where both passes have the same argmax */
    size_t ppl_tokens; /* predicted tokens counted in the perplexities */
    double ppl_exact, ppl_approx;
} ts_llm_sim_report_t;

void ts_llm_sim_report_clear(ts_llm_sim_report_t *r);

/*
 * Teacher-forced simulation: run tokens[0..n) through the exact pass and the
 * approximate pass side by side; report primitive, layer and logit errors,
 * argmax agreement over all n positions, and the perplexities of
 * tokens[1..n) under both passes.
 * Errors: TS_EINVAL (n == 0, n > seq_len, token out of range, bad spec),
 * TS_ENOMEM.
 */
ts_status_t ts_llm_simulate(const ts_llm_model_t *model, const ts_llm_sim_config_t *cfg,
                            const int *tokens, size_t n, ts_llm_sim_report_t *report);

/*
 * Free-running greedy generation with the approximate pass from a prompt, up
 * to n_total positions. out: n_total ids (prompt first). [out] n_out.
 */
ts_status_t ts_llm_simulate_greedy(const ts_llm_model_t *model, const ts_llm_sim_config_t *cfg,
                                   const int *prompt, size_t n_prompt, size_t n_total, int *out,
                                   size_t *n_out);

/* ------------------------------------------------------ encrypted decode */

/*
 * The encrypted decode engine (pure-CKKS policy `ckks`), core/llm/enc*.c.
 *
 * Packing. A vector of width w is padded with zeros to P = the next power of
 * two and repeated periodically across all slots (slot j holds v[j mod P]).
 * The residual stream and q, k, v have period Pd = pow2(dim), the FFN hidden
 * vectors pow2(hidden_dim), the logits pow2(vocab). Rotating a periodic
 * vector by r gives v[(j + r) mod P], so an out x in matrix W is applied as
 * the "periodic diagonals" d_r[j] = W[j mod P_out][(j + r) mod P_in] for
 * r < P_in (core/ckks lintrans with baby-step giant-step and hoisted baby
 * rotations); the output comes out periodic with period P_out. Slots must be
 * a multiple of every period.
 *
 * KV cache (kept encrypted between tokens, per layer): one ciphertext for K
 * and one for V holding position t's vector in slot block [t Pd, (t+1) Pd),
 * so at most slots / Pd positions (32 at 2^11 slots with dim 64).
 *
 * Primitives (the approximations of core/nonlinear, so the simulator with the
 * same specs is ciphertext-aligned): RMSNorm by rotate-and-sum of squares and
 * 1/sqrt by Newton from a Chebyshev initial guess (spec rsqrt, method ITER);
 * attention scores by a slot-wise product with the K cache and rotate-sum
 * inside each head, then the max-free softmax (exp by Chebyshev, 1/x by
 * Goldschmidt, softmax_k normalize-and-square rounds) computed across the
 * blocks of one ciphertext; SwiGLU with SiLU by Chebyshev (spec silu, POLY).
 * RoPE is a three-diagonal plaintext transform per position.
 *
 * Levels: before each step the engine checks the levels the step needs and
 * bootstraps (ts_boot_bootstrap) when a bootstrapper was given; without one it
 * returns TS_ELEVEL. After each ciphertext-ciphertext product the scale is
 * snapped back to the parameters' scale Delta (relative error |q_l / Delta - 1|,
 * about 2^-17 with 40-bit primes near 2^40; measured by the tests).
 *
 * Token input: the client encrypts the embedding row of its token (the model
 * publishes its embedding table), or, the default of the daemon, the one-hot
 * vector of its token, which the server embeds (ts_llm_enc_embed, below).
 * LLAMA models, with multi-head or grouped-query attention (GQA runs as
 * multi-head attention: each key/value head's rows of wk and wv are repeated
 * for the query heads sharing it, so k and v are dim wide; the KV cache is
 * n_heads / n_kv_heads times larger than necessary).
 * GPT2 models: the server adds row pos of the learned position table to the
 * input embedding as a plaintext (inside ts_llm_enc_step); LayerNorm is the
 * RMSNorm code after a mean subtraction (rotate-and-sum, times a plaintext
 * 1/dim on the real slots: one level) and runs with unit gain and no bias:
 * each norm's gain g and bias b are folded into the matrices it feeds (q, k,
 * v; the FFN's up matrix; the tied LM head) as W diag(g) (products of two
 * floats, exact in double) and the bias W b + b_W (in double); every linear
 * layer's bias is a plaintext addition after its rescale (no level); the FFN
 * is w2 gelu(w1 x + b1) + b2 with GELU (spec gelu) evaluated like SiLU (POLY
 * in CKKS, a uniform segmented LUT in hybrid, PBS in tfhe). The norm's 1/sqrt
 * follows eval_rsqrt as for LLAMA. Shapes the engine cannot pack are refused
 * with TS_ENOTSUP and a sentence (ts_llm_enc_supports).
 */
/*
 * Where a non-arithmetic primitive is evaluated (the policies of core/sched):
 *   CKKS  in CKKS: the spec's POLY (Chebyshev) or ITER (Goldschmidt, Newton);
 *   LUT   ROSETTA's hybrid: the values are converted to TFHE, looked up in
 *         the spec's segmented LUT (method LUT) and recovered to CKKS
 *         (ts_nonlinear_slots_t, mode HYBRID);
 *   PBS   the all-TFHE (PEGASUS-like) baseline: one plain PBS per value on
 *         the spec's [lo, hi) (ts_nonlinear_slots_t, mode TFHE).
 * LUT and PBS need ts_llm_enc_session_set_tfhe() (conversion keys and the
 * SlotToCoeff-first bootstrapper of ts_llm_enc_tfhe_boot_config()).
 */
typedef enum {
    TS_LLM_EVAL_CKKS = 0,
    TS_LLM_EVAL_LUT = 1,
    TS_LLM_EVAL_PBS = 2,
} ts_llm_eval_t;

const char *ts_llm_eval_name(ts_llm_eval_t ev); /* "ckks", "lut", "pbs" */

/* The approximations the engine evaluates, and where. */
typedef struct ts_llm_enc_config {
    ts_nonlinear_spec_t exp;   /* CKKS: POLY (Chebyshev), steps 0 */
    ts_nonlinear_spec_t recip; /* 1/x of the first softmax round (CKKS: ITER Goldschmidt) */
    ts_nonlinear_spec_t rsqrt; /* CKKS: ITER (Newton from a Chebyshev guess of `degree`) */
    ts_nonlinear_spec_t silu;  /* CKKS: POLY (Chebyshev) */
    /* 1/x of the later softmax rounds: after one normalization the sum of
     * squares lies in [1/n, 1] for n positions, a much narrower range. */
    ts_nonlinear_spec_t recip_norm;
    /* 1/x of the last round (k >= 2): the only normalization whose error
     * reaches the probabilities; the earlier rounds' per-head factors cancel,
     * so they only need to keep the sums in range (a cheaper look-up). */
    ts_nonlinear_spec_t recip_last;
    int softmax_k; /* normalize-and-square rounds, 0..8 */
    /* The first round's 1/x reads the mean sum (1/n) sum_t and divides by n
     * after (a range that does not grow with the context); implied when that
     * 1/x runs in TFHE (ts_llm_enc_config_mean_first). */
    bool softmax_mean_first;
    /* The scores minus their mean over the positions 0..pos (per head)
     * before exp, at no level (the mean comes from the masked scores by a
     * rotate-and-sum over the blocks and one more plaintext product at the
     * mask's level): the softmax is unchanged, and with softmax_mean_first
     * the first round's mean sum (1/n) sum_t exp(z~_t / 2^(k-1)) is at least
     * exp of the mean exponent, 1 (Jensen), instead of reaching down to
     * exp(min z / 2^(k-1)): a narrow 1/x interval. */
    bool softmax_center;
    ts_llm_eval_t eval_exp, eval_recip, eval_rsqrt, eval_silu, eval_recip_norm, eval_recip_last;
    /* GPT2's FFN activation (CKKS: POLY); LLAMA models ignore it (and GPT2 silu) */
    ts_nonlinear_spec_t gelu;
    ts_llm_eval_t eval_gelu;
    /* The engine's working slot count 2^log_slots (sparse packing; 0: the
     * bootstrapper's slot count when there is one, else the parameters').
     * Every ciphertext of the engine is packed with this many slots, the
     * bootstrapper must run at it, and the KV cache holds 2^log_slots /
     * pow2(dim) positions; fewer slots bootstrap faster
     * (ts_llm_enc_log_slots_for sizes it for a context length). */
    int log_slots;
    /* Lanes (0 or 1: one; else a power of two): every ciphertext carries
     * `lanes` independent copies of the engine's 2^log_slots-slot layout,
     * interleaved (slot j lanes + l of the ciphertext is slot j of lane l),
     * so rotations by r lanes keep each lane cyclic and one pass of the step
     * decodes `lanes` sequences at the same position (their tokens differ:
     * several samples of one prompt). Ciphertexts, the bootstrapper and the
     * residual stream's one run at 2^log_slots x lanes slots; the encryption
     * and decryption helpers of the _lanes suffix pack and read them.
     * CKKS-only configurations (no TFHE evaluation). */
    int lanes;
    /* The main bootstrapper's CoeffToSlot and SlotToCoeff level budgets
     * (ts_llm_boot_config; 0: ts_boot_config_slots's). An engine given a
     * bootstrapper takes its budgets; these are the ones its plan assumes
     * without one (ts_llm_enc_boot_budgets chooses them). */
    int boot_cts_levels, boot_stc_levels;
    /* The budgets above as given, not chosen (ts_llm_enc_boot_budgets and
     * ts_llm_enc_config_refine keep them): `tessera bench decode
     * --boot-dft`'s A/B runs. */
    bool boot_budgets_fixed;
} ts_llm_enc_config_t;

/* Defaults sized for the bundled aidreams260K model (ranges with margin),
 * everything in CKKS (policy ckks). */
void ts_llm_enc_config_default(ts_llm_enc_config_t *cfg);
/*
 * Defaults for a policy: ckks as above; hybrid: every 1/x of the softmax and
 * the norms' 1/sqrt(x) as segmented LUTs (one conversion per call for all
 * heads), exp and SiLU in CKKS, with softmax_k = 5 so that exp(z / 32) and
 * the first round's mean sum (1/n) sum_t exp(z_t / 16) have narrow ranges
 * (a 10-bit LUT input grid cannot resolve wide ones), the first round on the
 * mean sum (softmax_mean_first);
 * GPT2's GELU as a uniform segmented LUT (4 x 32 lines on its interval).
 * tfhe: every primitive by one PBS per value. max_pos: the positions the
 * session may hold (sets the normalized-sum range [0.8 / max_pos, 1.25]).
 */
void ts_llm_enc_config_policy(ts_llm_enc_config_t *cfg, ts_sched_policy_t policy, int max_pos);
/*
 * Where a scheduler plan puts each primitive, for a plan of the decoder graph
 * of ts_sched_graph_build_decoder (operator names ending in ".invsqrt",
 * ".exp", ".step0.inv" (first softmax round), ".stepK.inv" (K >= 1), ".silu",
 * ".gelu").
 * The engine evaluates one primitive kind the same way in every layer, so a
 * kind goes to TFHE when the plan places the majority of its operators
 * there: as a segmented LUT (specs from the hybrid defaults; exp and SiLU on
 * their CKKS intervals with uniform segments), or one PBS per value under the
 * tfhe policy. Starts from ts_llm_enc_config_policy(cfg, plan->policy,
 * max_pos). [out] n_tfhe (may be NULL): primitive kinds placed in TFHE.
 * Errors: TS_EINVAL (plan and graph of different sizes).
 */
ts_status_t ts_llm_enc_config_from_plan(ts_llm_enc_config_t *cfg, const ts_sched_graph_t *g,
                                        const ts_sched_plan_t *plan, int max_pos, int *n_tfhe);
/* The primitive kinds the engine places as a whole (one evaluation per kind
 * in every layer): bits of a TFHE mask. RECIP is the 1/x of the first
 * softmax round, RECIP_NORM that of the later rounds (the last round's
 * recip_last goes with it). */
enum {
    TS_LLM_KIND_EXP = 0,
    TS_LLM_KIND_RECIP,
    TS_LLM_KIND_RECIP_NORM,
    TS_LLM_KIND_RSQRT,
    TS_LLM_KIND_SILU,
    TS_LLM_KIND_GELU, /* GPT2's FFN activation */
    TS_LLM_KIND_COUNT
};
/*
 * The policy's defaults (ts_llm_enc_config_policy) with the kinds of
 * `tfhe_kinds` in TFHE (segmented LUT, or one PBS per value under policy
 * tfhe) and the others in CKKS: a kind the defaults already place where the
 * mask wants it keeps their spec; one moved to TFHE gets a 4-segment LUT on
 * its interval (the policy tfhe: its interval), one moved to CKKS the ckks
 * policy's spec (under hybrid, the first round's 1/x: Goldschmidt on the
 * look-up's interval of the mean sum, to 2^-4: a round before the last only
 * conditions the sums).
 * ts_llm_enc_config_from_plan ends here.
 */
void ts_llm_enc_config_kinds(ts_llm_enc_config_t *cfg, ts_sched_policy_t policy, int max_pos,
                             unsigned tfhe_kinds);
/* The spec of model's FFN activation in cfg: gelu for GPT2, else silu. */
const ts_nonlinear_spec_t *ts_llm_enc_config_act(const ts_llm_enc_config_t *cfg,
                                                 const ts_llm_model_t *model);
/* Whether the first softmax round divides the mean sum (see softmax_mean_first). */
bool ts_llm_enc_config_mean_first(const ts_llm_enc_config_t *cfg);
/* A kind's short name: exp, recip, recip_norm, rsqrt, silu, gelu ("?" out of range). */
const char *ts_llm_kind_name(int kind);
/* The names of the kinds in mask, comma-separated, into buf ("none" for 0). */
void ts_llm_kinds_format(unsigned mask, char *buf, size_t size);
/* Its inverse: "none" or names separated by commas; TS_EINVAL for an unknown,
 * empty or repeated name. */
ts_status_t ts_llm_kinds_parse(const char *text, unsigned *mask);
/* The kinds a configuration evaluates in TFHE (a mask as above). */
unsigned ts_llm_enc_config_tfhe_kinds(const ts_llm_enc_config_t *cfg);
/* The same approximations as a simulator config (for ts_llm_simulate). */
void ts_llm_enc_config_to_sim(const ts_llm_enc_config_t *cfg, ts_llm_sim_config_t *sim);
/* The other way (a configs/approx file loaded with ts_llm_sim_config_load):
 * softmax_k, softmax_mean_first, softmax_center, exp, recip, rsqrt, silu, gelu; the rest of
 * cfg is kept. */
void ts_llm_enc_config_from_sim(const ts_llm_sim_config_t *sim, ts_llm_enc_config_t *cfg);

typedef struct ts_llm_enc ts_llm_enc_t;

/*
 * Whether the engine can run model at params: TS_OK, or TS_ENOTSUP with a
 * sentence in err (n_heads not a multiple of n_kv_heads, n_heads * head_dim
 * != dim, head_dim not a power of two, padded widths not dividing the slots).
 */
ts_status_t ts_llm_enc_supports(const ts_llm_model_t *model, const ts_ckks_params_t *params,
                                char *err, size_t err_size);
/*
 * Server side: the model's plaintext diagonals encoded for params (shared,
 * immutable after creation). boot may be NULL (no bootstrapping: TS_ELEVEL
 * when levels run out). Errors: TS_ENOTSUP (see ts_llm_enc_supports),
 * TS_EINVAL (a spec the configured evaluation cannot run), TS_ENOMEM.
 */
ts_status_t ts_llm_enc_new(const ts_llm_model_t *model, ts_ckks_params_t *params,
                           const ts_llm_enc_config_t *cfg, const ts_boot_t *boot,
                           ts_llm_enc_t **out);
void ts_llm_enc_free(ts_llm_enc_t *enc);
/* The rotation steps the engine needs (capacity *count; steps NULL: count only). */
ts_status_t ts_llm_enc_rotation_steps(const ts_llm_enc_t *enc, int64_t *steps, size_t *count);
/* The highest level any of those rotations runs at (their keys may be capped
 * there, ts_ckks_evalkeys_gen_rotations_at): the input level, or the level the
 * look-ups' ModRecover returns at when higher. */
int ts_llm_enc_rotation_level(const ts_llm_enc_t *enc);
/* The level clients encrypt inputs at: the level a bootstrap leaves (whose
 * primes are close to the scale), or the top level without bootstrapping. */
int ts_llm_enc_input_level(const ts_llm_enc_t *enc);
/* Maximum positions of the encrypted KV cache. */
int ts_llm_enc_max_positions(const ts_llm_enc_t *enc);
/* The engine's working slot count (every input and output is packed with it). */
int ts_llm_enc_slots(const ts_llm_enc_t *enc);
/*
 * The smallest working log2 slot count for model at params that holds
 * max_ctx positions in the KV cache (pow2(dim) slots per position) and the
 * padded vocabulary and FFN widths, capped at the parameters' slots (then
 * fewer positions fit: ts_llm_enc_max_positions). max_ctx <= 0: the cap.
 */
int ts_llm_enc_log_slots_for(const ts_llm_model_t *model, const ts_ckks_params_t *params,
                             int max_ctx);
/* The KV cache positions 2^log_slots working slots hold for model (capped at
 * its context length): ts_llm_enc_max_positions of such an engine. */
int ts_llm_enc_positions_for(const ts_llm_model_t *model, int log_slots);

/* Client: encrypt (symmetric) a plain vector of width w, periodic with period
 * pow2(w), packed with `slots` slots (the engine's ts_llm_enc_slots; 0: the
 * parameters' slots). */
ts_status_t ts_llm_enc_encrypt_vec(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                   ts_prng_t *prng, const float *v, int w, int slots, int level,
                                   ts_ckks_ciphertext_t *ct);
/* The same under a public key (the server encrypting plaintext logits of a
 * public position for the client). */
ts_status_t ts_llm_enc_encrypt_vec_pk(ts_ckks_encoder_t *ecd, const ts_ckks_public_key_t *pk,
                                      ts_prng_t *prng, const float *v, int w, int slots, int level,
                                      ts_ckks_ciphertext_t *ct);
/* The server: v (w values, period pow2(w)) in every lane of e's layout under
 * the client's public key pk at level (a public position's logits). */
ts_status_t ts_llm_enc_encrypt_input_pk(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                        const ts_ckks_public_key_t *pk, ts_prng_t *prng,
                                        const float *v, int w, int level, ts_ckks_ciphertext_t *ct);
/* Client: the embedding row of `token` encrypted at the top level, in the
 * step's residual-stream unit (times ts_llm_enc_stream_scale). */
ts_status_t ts_llm_enc_encrypt_token(const ts_llm_enc_t *enc, ts_ckks_encoder_t *ecd,
                                     const ts_ckks_secret_key_t *sk, ts_prng_t *prng, int token,
                                     ts_ckks_ciphertext_t *ct);
/* Lanes (ts_llm_enc_config_t lanes): the engine's lane count (1 without). */
int ts_llm_enc_lanes(const ts_llm_enc_t *enc);
/* A ciphertext of n lanes (a power of two) whose lane l holds v[l] (w
 * values) repeated with period `per` over `slots` slots per lane (slots a
 * multiple of per; slots x n at most the parameters' slots), symmetric under
 * sk, at level. n = 1 is ts_llm_enc_encrypt_vec. */
ts_status_t ts_llm_enc_encrypt_lanes(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                     ts_prng_t *prng, const float *const *v, int n, int w, int per,
                                     int slots, int level, ts_ckks_ciphertext_t *ct);
/* The first w values of lane l of a ciphertext of n lanes. */
ts_status_t ts_llm_enc_decrypt_lane(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                    const ts_ckks_ciphertext_t *ct, int n, int lane, double *out,
                                    int w);
/* The same for lanes [first, first + count) with one decryption: lane
 * first + k's values at out[k w, (k + 1) w). */
ts_status_t ts_llm_enc_decrypt_lanes(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                     const ts_ckks_ciphertext_t *ct, int n, int first, int count,
                                     double *out, int w);
/* The logits' period in the engine's slots: pow2(vocab) x its lanes (the
 * subring the Renyi mode's sanitization projects them on). */
int ts_llm_enc_logits_period(const ts_llm_enc_t *enc);
/* Client: logits (vocabulary w, period pow2(w) per lane: the LM head's
 * output, sanitized) of lanes [first, first + count) of n, decoded at their
 * period pow2(w) n: the coefficients of that subring only, i.e. the average
 * of the ciphertext's copies of the period, which divides the noise off it
 * (the Renyi mode's flooding included) by sqrt(slots / period). As
 * ts_llm_enc_decrypt_lanes otherwise; TS_EINVAL when the period does not
 * divide the slots. */
ts_status_t ts_llm_enc_decrypt_logits(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                      const ts_ckks_ciphertext_t *ct, int n, int first, int count,
                                      double *out, int w);
/* The encrypted one-hot input of the engine's lanes: lane l holds tokens[l]
 * (ts_llm_enc_lanes tokens). */
ts_status_t ts_llm_enc_encrypt_onehot_lanes(const ts_llm_enc_t *e, ts_ckks_encoder_t *ecd,
                                            const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                            const int *tokens, ts_ckks_ciphertext_t *ct);
/* Client: decrypt the first w slots. */
ts_status_t ts_llm_enc_decrypt_vec(ts_ckks_encoder_t *ecd, const ts_ckks_secret_key_t *sk,
                                   const ts_ckks_ciphertext_t *ct, float *v, int w);

/*
 * Client, for benchmarks at a context length: one layer's K or V cache for
 * positions [0, n) encrypted (symmetric) at `level` and scale Delta, in the
 * layout the engine's own steps build (packed with its working slots,
 * ts_llm_enc_slots; slot block t = [t Pd, t Pd + dim) holds position t, zeros
 * elsewhere; grouped-query attention repeated per query head as the engine's
 * k and v are). rows: n rows of kv_dim =
 * n_kv_heads * head_dim floats as ts_llm_state_kv gives them (post-RoPE
 * keys). ts_llm_enc_input_level is a fine level: the engine drops the cache
 * to its new entry's level when it appends. This is a benchmark method, not a
 * private path: K and V come from the plaintext model, whose weights a client
 * never has. Errors: TS_EINVAL, TS_ERANGE (n outside 1..max positions),
 * TS_ELEVEL, TS_EMISMATCH (ct of other parameters), TS_ENOMEM.
 */
ts_status_t ts_llm_enc_cache_encrypt(const ts_llm_enc_t *enc, ts_ckks_encoder_t *ecd,
                                     const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                     const float *rows, int n, int level, ts_ckks_ciphertext_t *ct);
/*
 * The same under the client's public key, by the server: the K and V of a
 * PUBLIC prefix of the session (positions whose tokens the client sent in
 * the clear, DecodeStep.public_token: e.g. BOS), computed by the plaintext
 * model and encrypted for the client, who alone can decrypt them; fresh
 * randomness from prng (the OS CSPRNG).
 */
ts_status_t ts_llm_enc_cache_encrypt_pk(const ts_llm_enc_t *enc, ts_ckks_encoder_t *ecd,
                                        const ts_ckks_public_key_t *pk, ts_prng_t *prng,
                                        const float *rows, int n, int level,
                                        ts_ckks_ciphertext_t *ct);

/* One sequence (encrypted KV cache) on one evaluator (keys: relin + rotations + boot's). */
typedef struct ts_llm_enc_session ts_llm_enc_session_t;
ts_status_t ts_llm_enc_session_new(const ts_llm_enc_t *enc, ts_ckks_evaluator_t *ev,
                                   ts_llm_enc_session_t **out);
void ts_llm_enc_session_free(ts_llm_enc_session_t *s);
/*
 * The SlotToCoeff-first bootstrapping configuration the LUT and PBS
 * evaluations convert with (the client generates its keys with
 * ts_boot_keygen, like the main bootstrapper's; with the main bootstrapper's
 * sparse-secret encapsulation, the same h', so the same encapsulation keys).
 */
ts_status_t ts_llm_enc_tfhe_boot_config(const ts_llm_enc_t *enc, ts_boot_config_t *cfg);
/* The sparse-secret encapsulation weight h' tesserad bootstraps params with
 * (ModelInfo.encap_h): 32 for a dense secret, 0 (none) for a sparse one. */
int ts_llm_boot_encap_h(const ts_ckks_params_t *params);
/*
 * The main (CoeffToSlot-first) bootstrapper of a decode engine whose
 * ciphertexts have 2^log_slots slots (lanes included): ts_boot_config_slots
 * with the DFT level budgets cts_levels and stc_levels where > 0 (0: its
 * own), then the sparse-secret encapsulation of weight encap_h where > 0.
 * tesserad builds its bootstrapper with it and the client its keys, from
 * ModelInfo's slots, lanes, encap_h and budgets. TS_EINVAL (budgets beyond
 * log_slots, a chain without room for them), TS_ESECURITY (encapsulation).
 */
ts_status_t ts_llm_boot_config(const ts_ckks_params_t *params, int log_slots, int encap_h,
                               int cts_levels, int stc_levels, ts_boot_config_t *cfg);
/*
 * The DFT level budgets of ts_llm_boot_config for the engine of model at
 * params with cfg (its policy, working slots and lanes; its own budgets
 * ignored) whose sessions hold max_pos positions: of ts_boot_config_slots's
 * budgets (c, s) and (c + 1, s + 1), (c + 1, s), (c, s + 1), the one whose
 * plan of the step at position max_pos - 1 (the assumed bootstrapper's,
 * ts_llm_enc_plan with flags) has the fewest bootstraps, then the most DFT
 * levels (a bootstrap with more, shorter DFT groups is cheaper:
 * boot-n16-dense at 2^10 slots 3.32 -> 2.86 s from 3 + 2 to 4 + 3 levels,
 * docs/benchmarks.md session 38), then the defaults. An engine of lanes
 * (cfg->lanes > 1) keeps the defaults: its passes' placement moves with the
 * budgets, trading the residual stream's cheap bootstraps for main ones
 * (8 lanes of 2^11 slots at 5 + 3: as many bootstraps, each 17% cheaper
 * alone, the pass 2% faster; session 39). The
 * bootstrapper assumed is tesserad's (encapsulation h' = 32 for a dense
 * secret, as ts_llm_enc_levels). With cfg->boot_budgets_fixed, cfg's own
 * budgets. [out] cts, stc (0: the defaults). Errors:
 * TS_EINVAL, TS_ENOMEM, or the defaults' plan's (e.g. TS_ELEVEL).
 */
ts_status_t ts_llm_enc_boot_budgets(const ts_llm_model_t *model, ts_ckks_params_t *params,
                                    const ts_llm_enc_config_t *cfg, int max_pos, unsigned flags,
                                    int *cts, int *stc);
/*
 * The precision the engine's levels give for free: cfg (an engine of model
 * at params whose sessions hold max_pos positions; its own budgets ignored
 * unless boot_budgets_fixed)
 * with the FFN activation's Chebyshev interpolant (SiLU, GELU) at degree 23
 * instead of a lower one, and the norms' 1/sqrt (a Chebyshev interpolant
 * without Newton steps, the ckks policy's) at degree 56 instead of a lower
 * one, both first, else the activation alone, else the norms alone: the
 * first whose step at position max_pos - 1 (an engine of lanes, cfg->lanes
 * > 1: also the pass of its last lanes positions, after a pass and after
 * steps) plans no more bootstraps and at most 3% more time each under the
 * built-in cost table, with as many DFT levels
 * in the bootstrapper (each with the budgets of ts_llm_enc_boot_budgets,
 * flags as there; fewer levels, a dearer bootstrap the table does not
 * price: at boot-n16-dense 8-16 positions keep the policy's unless the
 * budgets are fixed). aidreams260K at boot-n16-dense, 8 lanes: both at 8
 * positions (the passes +1.9%), SiLU alone at 64 (+1.0%), neither at 16-32
 * (the step or a pass 2-5 bootstraps more; until session 45 no engine of
 * lanes was refined). Only kinds cfg evaluates
 * in CKKS change. On aidreams260K (the ckks policy, 32 positions,
 * simulated) the logits' error falls from 0.24 to 0.03 at most, 0.024 to
 * 0.002 on average (docs/llm.md). cfg is unchanged when nothing is free or
 * on error: TS_EINVAL, TS_ENOMEM, or the plan's of cfg itself.
 */
ts_status_t ts_llm_enc_config_refine(const ts_llm_model_t *model, ts_ckks_params_t *params,
                                     ts_llm_enc_config_t *cfg, int max_pos, unsigned flags);
/* The same for params, a working slot count (0: the parameters') and the main
 * bootstrapper's encapsulation weight (0: none). */
ts_status_t ts_llm_tfhe_boot_config(ts_ckks_params_t *params, int log_slots, int encap_h,
                                    ts_boot_config_t *cfg);
/*
 * The TFHE literal for the conversion keys (ts_convert_keygen). CKKS
 * parameters not marked insecure get "tfhe_conv128" (N_br = 2^12 modulo
 * q_0, n = 1024, BR gadget 2^15 x 3: passes core/convert's security gate,
 * docs/parameters.md); insecure test presets get the fast test set
 * tfhe_test_small with N_br = 2^10 and a 3-level blind-rotation gadget
 * (with 2 levels the look-ups come out about 100 times noisier: errors of
 * 5% of the value were measured at test-boot-n12), which is not 128-bit
 * secure (the small ring works modulo q_0 of 55-60 bits).
 */
ts_status_t ts_llm_enc_tfhe_literal(const ts_llm_enc_t *enc, ts_tfhe_params_lit_t *lit);
/* The same for CKKS parameters (what the engine at params uses). */
ts_status_t ts_llm_tfhe_literal(const ts_ckks_params_t *params, ts_tfhe_params_lit_t *lit);
/* True when the configuration evaluates some primitive in TFHE. */
bool ts_llm_enc_uses_tfhe(const ts_llm_enc_t *enc);
/* The primitive kinds the engine evaluates in TFHE (ts_llm_kinds_format's
 * mask; the FFN activation the model lacks is never listed). */
unsigned ts_llm_enc_tfhe_kinds(const ts_llm_enc_t *enc);
/*
 * Bootstrap this session with `boot` instead of the engine's bootstrapper: a
 * view of it with the session's encapsulation keys (ts_boot_view), when
 * several clients share one engine. Borrowed; must outlive the session.
 * TS_EMISMATCH when its configuration differs from the engine's; TS_EINVAL
 * when the engine has no bootstrapper.
 */
ts_status_t ts_llm_enc_session_set_boot(ts_llm_enc_session_t *s, const ts_boot_t *boot);
/*
 * The residual stream's own bootstrapper. The stream (and each norm's
 * output) repeats with the model's period pd = pow2(dim) in the session's
 * slots, so it is a message of pd slots: bootstrapped at pd slots its
 * DFTs are shorter (boot-n16-dense at 2^6 instead of 2^10 slots: ~19%
 * faster, ~3.7 bits more precise, 4 more rotation keys). -1 when the
 * engine cannot use one (no sparse working slots, or SlotToCoeff first;
 * without a bootstrapper, the one tesserad would give it is assumed, as
 * ts_llm_enc_levels does); else log2(pd): build it with
 * ts_llm_enc_period_boot_config, make its keys (ts_boot_keygen), then hand
 * it over.
 */
int ts_llm_enc_period_log_slots(const ts_llm_enc_t *enc);
/* That bootstrapper's configuration: ts_boot_config_slots at
 * ts_llm_enc_period_log_slots with the engine's encapsulation and DFT level
 * budgets (so that it leaves the same levels). TS_ENOTSUP
 * when the engine cannot use one or the preset's chain leaves it fewer
 * levels than the engine's bootstrapper (ts_llm_enc_set_boot_period would
 * refuse it). */
ts_status_t ts_llm_enc_period_boot_config(const ts_llm_enc_t *enc, ts_boot_config_t *cfg);
/*
 * Use `boot` (borrowed, outliving enc and its sessions; before any session
 * is made) for the residual stream's bootstraps. TS_EMISMATCH unless its
 * slots are ts_llm_enc_period_log_slots and its order, encapsulation and
 * levels left equal the engine's bootstrapper's; TS_EINVAL when the engine
 * has none. Sessions then bootstrap their stream with it, or with a view of
 * it set by ts_llm_enc_session_set_boot_period.
 */
ts_status_t ts_llm_enc_set_boot_period(ts_llm_enc_t *enc, const ts_boot_t *boot);
/*
 * Deferred norms (docs/ARCHITECTURE.md): the step's RMSNorm yields its
 * factor r, the matrices that read the norm take the residual stream, and r
 * multiplies their outputs. ts_llm_enc_new defers where the engine's plan of
 * the step predicts less time; ts_llm_enc_set_norm_defer forces the choice
 * (A/B runs; before any session is made), the residual bootstraps and drops
 * found again for it. TS_ENOTSUP to defer a GPT2 model's norms (LayerNorm),
 * TS_EINVAL for NULL.
 */
ts_status_t ts_llm_enc_set_norm_defer(ts_llm_enc_t *enc, bool defer);
bool ts_llm_enc_norm_defer(const ts_llm_enc_t *enc);
/* The session's view of it (ts_boot_view with its keys); same checks. */
ts_status_t ts_llm_enc_session_set_boot_period(ts_llm_enc_session_t *s, const ts_boot_t *boot);
/* The engine's residual-stream bootstrapper (NULL: none). */
const ts_boot_t *ts_llm_enc_boot_period(const ts_llm_enc_t *enc);
/*
 * Give a session the TFHE side: cv (conversion keys of this client) and
 * stc_boot (ts_boot_new of ts_llm_enc_tfhe_boot_config), both borrowed and
 * outliving the session. Required before a step when ts_llm_enc_uses_tfhe.
 * Errors: TS_EINVAL, errors of ts_nonlinear_slots_new.
 */
ts_status_t ts_llm_enc_session_set_tfhe(ts_llm_enc_session_t *s, ts_convert_t *cv,
                                        const ts_boot_t *stc_boot);

/*
 * Server, for benchmarks at a context length: install copies of encrypted K
 * and V caches of positions [0, n_pos) (k[l], v[l] for every layer l, from
 * ts_llm_enc_cache_encrypt) in place of the session's, so the next step runs
 * at position n_pos without running the earlier ones encrypted. All or
 * nothing: on an error the session is unchanged. Errors: TS_EINVAL (NULL
 * arrays or entries), TS_ERANGE (n_pos outside 1..ts_llm_enc_max_positions),
 * TS_EMISMATCH (other parameters, slot count, degree or a scale other than
 * Delta), TS_ELEVEL (level 0 without a bootstrapper), TS_ENOMEM; each with a
 * warning saying which.
 */
ts_status_t ts_llm_enc_session_set_cache(ts_llm_enc_session_t *s,
                                         const ts_ckks_ciphertext_t *const *k,
                                         const ts_ckks_ciphertext_t *const *v, int n_pos);

/* Bootstraps done by this session so far. */
uint64_t ts_llm_enc_session_bootstraps(const ts_llm_enc_session_t *s);

/*
 * Where a session's time went (wall clock, exclusive: time in a bootstrap
 * triggered inside a nonlinear primitive counts as bootstrapping only).
 *   MATVEC     plaintext-matrix products (projections, FFN, LM head, embedding)
 *   ATTENTION  RoPE, KV-cache placement, scores and the weighted sum of V
 *   NONLINEAR  exp, 1/x, 1/sqrt(x), SiLU evaluated in CKKS, and the norms' sums
 *   BOOTSTRAP  CKKS bootstrapping
 *   CONVERT    CKKS <-> TFHE conversions and look-ups (hybrid, tfhe policies)
 *   OTHER      residual adds, scale corrections, copies
 */
typedef enum {
    TS_LLM_STAGE_MATVEC = 0,
    TS_LLM_STAGE_ATTENTION,
    TS_LLM_STAGE_NONLINEAR,
    TS_LLM_STAGE_BOOTSTRAP,
    TS_LLM_STAGE_CONVERT,
    TS_LLM_STAGE_OTHER,
    TS_LLM_STAGE_COUNT
} ts_llm_stage_t;

typedef struct ts_llm_enc_stats {
    double seconds[TS_LLM_STAGE_COUNT];
    uint64_t bootstraps;   /* ciphertexts bootstrapped */
    uint64_t boots_period; /* of which by the residual stream's bootstrapper (pd slots) */
    uint64_t conversions;  /* CKKS -> TFHE -> CKKS round trips (one per batch of values) */
    uint64_t lookups;      /* values looked up in TFHE */
    uint64_t steps;        /* decode steps completed */
} ts_llm_enc_stats_t;

const char *ts_llm_stage_name(ts_llm_stage_t st); /* "matvec", "attention", ... */
/* Totals since the session started (or since the last reset). */
void ts_llm_enc_session_stats(const ts_llm_enc_session_t *s, ts_llm_enc_stats_t *out);
void ts_llm_enc_session_stats_reset(ts_llm_enc_session_t *s);

/*
 * A probe of a step's intermediate ciphertexts, for noise measurements in
 * process (`tessera bench decode --noise-trace`, which holds the secret key
 * beside the engine): fn is called at fixed points of every step with the
 * point's name (static), the layer (-1: before the first or after the last)
 * and the ciphertext there (read only, valid during the call). Points, in
 * order: per layer "attn.in" (the normalized input after its bootstrap, or
 * the stream when the norm is deferred), "attn.q", "attn.k", "attn.v",
 * "attn.scores" (scaled, centered), "attn.exp", "attn.round0".. (the
 * softmax's rounds, CKKS only), "attn.av", "attn.out" (after wo),
 * "resid.attn", "ffn.out", "resid.ffn"; "boot" / "boot.pair" (each
 * bootstrap's output, each of a pair's two) wherever one runs; "final.in"
 * and "logits". The time the probe takes is charged to no stage. The
 * engine never decrypts; tesserad sets no probe. fn NULL removes it.
 */
typedef void (*ts_llm_enc_probe_fn)(void *ctx, const char *point, int layer,
                                    const ts_ckks_ciphertext_t *ct);
void ts_llm_enc_session_set_probe(ts_llm_enc_session_t *s, ts_llm_enc_probe_fn fn, void *ctx);
/* The bootstrap bound in force (the magnitude, in the ciphertext's unit, a
 * bootstrap there maps to the sine's range; at a "boot" / "boot.pair" probe
 * the one that bootstrap ran at): for a probe to set values against it. */
double ts_llm_enc_session_bound(const ts_llm_enc_session_t *s);

/*
 * The scheduler's view of the engine (core/llm/enc_plan.c): the decode step
 * of ts_llm_enc_step as a core/sched graph, one operator per ciphertext
 * operation whose level matters, in the engine's order and under the
 * engine's configuration: products and constant products, rotate-and-sums,
 * the Chebyshev series (depth of the affine map plus Paterson-Stockmeyer),
 * Newton and Goldschmidt iterations, softmax_k rounds, the KV cache, and
 * each primitive pinned where the configuration evaluates it (TFHE: its
 * conversions, values and LUT segments or PBS); need levels as the engine's
 * `need` calls ask; each operator's group is the ts_llm_stage_t it is timed
 * in. ts_sched_plan_new_engine on this graph predicts exactly the
 * bootstraps, conversions and look-ups of a step (ts_llm_enc_session_stats).
 * Llama and GPT-2, the engine's two architectures. A ciphertext product at a
 * level whose rescaling prime is not within 2^-10 of the scale spends one
 * level more (enc.c's snap): the graph marks those levels (deep_levels).
 */
typedef struct ts_llm_enc_levels {
    int input;    /* level of fresh inputs and of bootstrap outputs */
    int tfhe_in;  /* level a conversion needs (SlotToCoeff budget + 1) */
    int tfhe_out; /* level a conversion's result is recovered to */
    int sub;      /* slots [0, sub) land on the small ring (values per batch) */
    bool boot;    /* the engine bootstraps when levels run out */
    bool assumed; /* no bootstrapper given: the default one's levels are assumed */
} ts_llm_enc_levels_t;
ts_status_t ts_llm_enc_levels(const ts_llm_enc_t *enc, ts_llm_enc_levels_t *out);
/* The step's input comes from ts_llm_enc_embed on the client's one-hot vector
 * (the daemon's default), one level below a fresh embedding's. */
#define TS_LLM_PLAN_ONEHOT 1u
/* Plan the residual stream's bootstraps at its period bootstrapper's slots
 * (ts_llm_enc_period_boot_config) as if the engine had one (tesserad gives
 * it one whenever that configuration exists); an engine that has one is
 * always planned so. */
#define TS_LLM_PLAN_PERIOD_BOOT 2u
/* The cache-only step (ts_llm_enc_step_cache): the last layer ends with its
 * K/V cache writes, no final norm, no LM head. */
#define TS_LLM_PLAN_CACHE_ONLY 4u
/* A prefill pass (ts_llm_enc_prefill) from position pos of an engine with
 * lanes (TS_EINVAL without): every layer's attention input two levels above
 * an ordinary step's K row (at most a bootstrap's levels), each cache
 * write's lane_share (one level), the first softmax
 * round's per-lane mean (one level on the sum and on the squares), the
 * pass's own level drops after bootstraps (after a pass, or with
 * TS_LLM_PLAN_AFTER_STEPS after steps). With TS_LLM_PLAN_CACHE_ONLY: a
 * cache-only pass. */
#define TS_LLM_PLAN_PREFILL 8u
/* With TS_LLM_PLAN_PREFILL at pos > 0: a pass after ordinary steps (a
 * generation's speculative pass, tessera generate --draft): each layer's K
 * and V caches sit at the step's row level (its own rows join them), and the
 * pass refreshes its copies of both as one pair bootstrap in the layers
 * where the engine does (enc.c attention's rule). Without it a pass's caches
 * sit at its own rows' level, as after a prefill pass or an installed cache. */
#define TS_LLM_PLAN_AFTER_STEPS 16u
/* The graph of the step at position pos (flags: TS_LLM_PLAN_*). [out] *out
 * (ts_sched_graph_free). TS_ERANGE (pos), TS_ENOTSUP, TS_ENOMEM. */
ts_status_t ts_llm_enc_graph(const ts_llm_enc_t *enc, int pos, unsigned flags,
                             ts_sched_graph_t **out);
/*
 * The graph and the engine's plan of the step at pos (flags as above) under `costs` (policy:
 * recorded in the plan; the configuration decides the schemes). TS_ELEVEL
 * when the step cannot run (a need above the bootstrap level, or
 * bootstraps without a bootstrapper), with a sentence in msg (may be NULL).
 */
ts_status_t ts_llm_enc_plan(const ts_llm_enc_t *enc, int pos, unsigned flags,
                            const ts_sched_costs_t *costs, ts_sched_policy_t policy,
                            ts_sched_graph_t **g, ts_sched_plan_t **plan, char *msg,
                            size_t msg_size);
/*
 * ts_llm_enc_plan of the session's next call at pos as it will run: a pass
 * (TS_LLM_PLAN_PREFILL) from the session's caches as they are now (each
 * layer's K and V at their levels, the rows of earlier steps and passes and
 * the refreshes of earlier passes included; TS_LLM_PLAN_AFTER_STEPS is
 * implied where it holds) with the drops after bootstraps the pass will
 * take; a step as ts_llm_enc_plan.
 */
ts_status_t ts_llm_enc_session_plan(ts_llm_enc_session_t *s, int pos, unsigned flags,
                                    const ts_sched_costs_t *costs, ts_sched_policy_t policy,
                                    ts_sched_graph_t **g, ts_sched_plan_t **plan, char *msg,
                                    size_t msg_size);
/* The plan's predicted latency per engine stage (bootstraps in BOOTSTRAP,
 * TFHE operators in CONVERT), ns. */
void ts_llm_enc_plan_stages(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                            double ns[TS_LLM_STAGE_COUNT]);
/*
 * Why each primitive is where it is: for every primitive kind the predicted
 * total of the same engine with that kind moved to the other scheme
 * (ts_llm_enc_config_kinds with the kind's bit flipped, re-planned);
 * alt[i] (g's operator count) gets it for every primitive operator of g (NAN
 * for the others), kind_total (may be NULL) per kind; INFINITY when the
 * variant cannot run. For ts_sched_plan_explain_alt.
 */
ts_status_t ts_llm_enc_plan_alternatives(const ts_llm_enc_t *enc, int pos, unsigned flags,
                                         const ts_sched_costs_t *costs, ts_sched_policy_t policy,
                                         const ts_sched_graph_t *g, double *alt,
                                         double kind_total[TS_LLM_KIND_COUNT]);

/*
 * The hybrid policy as a shortest path over the engine's assignments: of the
 * ckks policy's structure and the hybrid's, each with every set of the
 * model's primitive kinds in TFHE (ts_llm_enc_config_kinds; the empty sets
 * are the ckks policy itself and the hybrid structure all in CKKS), the one
 * whose plan (ts_llm_enc_plan at
 * position pos, flags as there) has the smallest predicted latency under
 * `costs`; ties go to the earlier candidate (the ckks policy first). boot (may
 * be NULL: the default bootstrapper's levels are assumed) is the one the
 * engine will run with; log_slots its working slots; max_pos the session's
 * positions (pos < max_pos). [out] cfg, whose boot_cts_levels and
 * boot_stc_levels are kept (the assumed bootstrapper's budgets when boot is
 * NULL); ns (may be NULL) its predicted ns.
 * Errors: TS_EINVAL, TS_ENOMEM, or the last candidate's error when none can
 * run (e.g. TS_ELEVEL).
 */
ts_status_t ts_llm_enc_config_best(const ts_llm_model_t *m, ts_ckks_params_t *params,
                                   const ts_boot_t *boot, int log_slots, int max_pos, int pos,
                                   unsigned flags, const ts_sched_costs_t *costs,
                                   ts_llm_enc_config_t *cfg, double *ns);

/*
 * One decode step: x = the encrypted embedding of the token at `pos` times
 * ts_llm_enc_stream_scale (as ts_llm_enc_embed and ts_llm_enc_encrypt_token
 * make it; pos must be the next position); logits (period pow2(vocab))
 * written to out.
 * Errors: TS_ERANGE (pos), TS_ELEVEL (no bootstrapper and too few levels), CKKS errors.
 */
ts_status_t ts_llm_enc_step(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x, int pos,
                            ts_ckks_ciphertext_t *logits);
/*
 * A cache-only step (a prompt position whose logits nobody reads): the same
 * as ts_llm_enc_step up to the last layer's K/V cache write, then stops (no
 * query, scores, FFN or final norm there, and no LM head): a prefix of the
 * full step's operations, so the cache afterwards holds what the full step
 * would have put there and the next position runs as usual. aidreams260K at
 * boot-n16-dense: 12 bootstraps instead of 16. Errors as ts_llm_enc_step.
 */
ts_status_t ts_llm_enc_step_cache(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x, int pos);
/*
 * A prefill (an engine of lanes >= 2): the positions pos, pos + 1, ...,
 * pos + n - 1 (1 <= n <= lanes) of one sequence in one pass, lane l at
 * pos + l (x: lane l the embedding or embedded one-hot of that position's
 * token, e.g. from ts_llm_enc_encrypt_onehot_lanes; lanes from n on run lane
 * n - 1's position and must carry its token too: their keys and values are
 * unused, but a token the approximations' intervals were not sized for
 * there can overflow the whole ciphertext). Each lane's keys and values go to its
 * block of the cache and to every lane (one level, 2 log2(lanes) rotations
 * per cache write), so afterwards every lane holds the whole cache and the
 * session continues at pos + n (ts_llm_enc_step: every lane at the next
 * position; further prefills). Lane l's logits are position pos + l's
 * (logits NULL: cache only, as ts_llm_enc_step_cache). The first softmax
 * round averages over each lane's own positions (one level more than a
 * step). Errors as ts_llm_enc_step; TS_ENOTSUP with one lane.
 */
ts_status_t ts_llm_enc_prefill(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x, int pos,
                               int n, ts_ckks_ciphertext_t *logits);
/*
 * A speculative prefill: ts_llm_enc_prefill (logits required) whose
 * positions stay pending until ts_llm_enc_commit keeps the first m of them
 * (speculative decoding: lane 0 carries the true token at pos, lanes 1..n-1
 * a draft's guesses for the next positions; the key holder keeps the lanes
 * up to the first guess that differs from the previous lane's decrypted
 * choice). The pass keeps its key/value rows before sharing (one ciphertext
 * per layer and kind). Any other step or prefill before a commit accepts all
 * n. Errors as ts_llm_enc_prefill.
 */
ts_status_t ts_llm_enc_prefill_speculative(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *x,
                                           int pos, int n, ts_ckks_ciphertext_t *logits);
/* Positions of the pending speculative pass (0: none; 0 for NULL). */
int ts_llm_enc_pending(const ts_llm_enc_session_t *s);
/*
 * Keep the first m (0 <= m <= pending) positions of the pending speculative
 * pass: the rows of the others are shared as the pass shared them and
 * subtracted from every cache it wrote (the cache keeps its level; those
 * blocks hold noise, which later rows are added onto), and the session
 * continues at pos + m. 2 (2 log2(lanes) rotations + a product) per layer
 * when m < pending, nothing when m = pending. TS_ENOENT: nothing pending;
 * TS_ERANGE: m out of range.
 */
ts_status_t ts_llm_enc_commit(ts_llm_enc_session_t *s, int m);
/*
 * The residual stream's unit ks: the step carries ks x for the model's x,
 * ks^2 = al / dim with al the slope of the CKKS 1/sqrt series' domain map
 * (1 / dim when 1/sqrt runs in TFHE), so that every norm's sum of squares
 * is its mapped mean without a constant product (one level per norm). The
 * matrices reading a norm's output carry 1 / ks, those writing the stream
 * (wo, w2, their biases) ks, at no level. 0 for NULL.
 */
double ts_llm_enc_stream_scale(const ts_llm_enc_t *enc);

/* The blocks on their own (for tests). */
/* out = W x for a model matrix: 0 wq 1 wk 2 wv 3 wo 4 w1 5 w3 6 w2 7 wcls (norm weights not
 * folded; GPT2: plus the layer's bias, and no w3). */
ts_status_t ts_llm_enc_matvec(ts_llm_enc_session_t *s, int layer, int which,
                              const ts_ckks_ciphertext_t *x, ts_ckks_ciphertext_t *out);
/* The model's norm with its weights: LLAMA out = w * x / sqrt(mean(x^2) + eps), GPT2 the
 * LayerNorm w * (x - mean) / sqrt(var + eps) + b; which 0 attention norm, 1 FFN norm, 2 final
 * norm. */
ts_status_t ts_llm_enc_rmsnorm(ts_llm_enc_session_t *s, int layer, int which,
                               const ts_ckks_ciphertext_t *x, ts_ckks_ciphertext_t *out);
/* out = attention(layer, xb) at pos (xb = the weighted attention-norm output),
 * appending k, v to the cache; out is the input of wo (not yet multiplied). */
ts_status_t ts_llm_enc_attention(ts_llm_enc_session_t *s, int layer, const ts_ckks_ciphertext_t *xb,
                                 int pos, ts_ckks_ciphertext_t *out);
/* out = w2(silu(w1 xb) * (w3 xb)) (GPT2: w2 gelu(w1 xb + b1) + b2) for the weighted FFN-norm
 * output xb. */
ts_status_t ts_llm_enc_ffn(ts_llm_enc_session_t *s, int layer, const ts_ckks_ciphertext_t *xb,
                           ts_ckks_ciphertext_t *out);

/*
 * Encrypted one-hot token input (issue 10's default): the client encrypts the
 * one-hot vector of its token over the vocabulary (period pow2(vocab), at
 * ts_llm_enc_input_level) and the server computes the embedding as the
 * plaintext-matrix x ciphertext product E^T onehot (periodic diagonals, BSGS;
 * one level), so the embedding table stays on the server. The result (period
 * pow2(dim)), E^T onehot times ts_llm_enc_stream_scale, is the x of
 * ts_llm_enc_step. Needs pow2(vocab) to divide the
 * slots; its rotation steps are part of ts_llm_enc_rotation_steps.
 */
ts_status_t ts_llm_enc_embed(ts_llm_enc_session_t *s, const ts_ckks_ciphertext_t *onehot,
                             ts_ckks_ciphertext_t *out);
/* Client: the one-hot vector of `token` encrypted at ts_llm_enc_input_level. */
ts_status_t ts_llm_enc_encrypt_onehot(const ts_llm_enc_t *enc, ts_ckks_encoder_t *ecd,
                                      const ts_ckks_secret_key_t *sk, ts_prng_t *prng, int token,
                                      ts_ckks_ciphertext_t *ct);

/*
 * Sanitized logits (core/llm/sanitize.c). Before encrypted logits leave the
 * server they are brought to a fixed level and scale (every reply looks the
 * same: level `level`, scale Delta, degree 1), re-randomized with a fresh
 * public-key encryption of zero under the client's key (c_1 no longer
 * depends on the computation), and flooded: c_0 gets coefficients uniform in
 * [-F, F], F = 2^ceil(lambda + log2 B), where B is the estimated bound of the
 * noise the last rescale and key switch leave (ts_llm_sanitize_noise_bound).
 * The flooded noise is then within statistical distance N 2^-lambda of noise
 * independent of the computation's (stat_security = lambda - log2 N bits).
 * What is not hidden: the approximation error of the nonlinear primitives,
 * which is part of the (approximate) logits the client is meant to learn.
 * Precision cost: each real slot moves by at most about 6 F sqrt(N/6) / Delta
 * (err_bound; 6 sigma), so lambda + log2 B + log2 sqrt(N) must stay well below
 * log2 Delta (lambda = 20 leaves ~7 bits at Delta = 2^40, N = 2^10; 40 needs
 * Delta >= 2^60 for similar precision).
 */
typedef enum {
    TS_LLM_SANITIZE_UNIFORM = 0, /* uniform flooding sized by lambda (statistical distance) */
    TS_LLM_SANITIZE_RD = 1       /* projection + Gaussian flooding sized by Renyi divergence */
} ts_llm_sanitize_mode_t;

typedef struct ts_llm_sanitize_info {
    int mode;              /* ts_llm_sanitize_mode_t */
    int level;             /* the fixed output level */
    double scale;          /* the fixed output scale (Delta) */
    int lambda;            /* statistical parameter asked for */
    double noise_log2;     /* log2 B */
    double flood_log2;     /* log2 F */
    double err_bound;      /* estimated absolute error the flooding adds per slot */
    double precision_bits; /* -log2(err_bound) */
    double stat_security;  /* lambda - log2 N (uniform mode; NAN in the Renyi mode) */
    /* TS_LLM_SANITIZE_RD: the slots of the logits' period (the subring they
     * are projected on), log2 of the Gaussian's sigma per coefficient and of
     * the queries the bound covers, and the Renyi divergence of order 2
     * over those queries (2 as planned). noise_log2 there: log2 of the
     * stated bound on the noise's l2 norm, flood_log2 = sigma_log2. */
    int period;
    double sigma_log2, queries_log2, rd;
} ts_llm_sanitize_info_t;

/* B for params: 12 sqrt((1 + h) / 12), h the secret's Hamming weight (2N/3 for ternary). */
double ts_llm_sanitize_noise_bound(const ts_ckks_params_t *params);
/* The numbers ts_llm_sanitize will use; TS_ERANGE when the flooding does not fit
 * q_0..q_level, TS_ELEVEL for a bad level, TS_EINVAL for lambda outside 0..128. */
ts_status_t ts_llm_sanitize_plan(const ts_ckks_params_t *params, int level, int lambda,
                                 ts_llm_sanitize_info_t *info);
/*
 * The Renyi mode (docs/SECURITY.md "Sanitized logits"): the logits, a message
 * of period `period` slots (pow2(vocab) x the engine's lanes), are projected
 * on the subring of that period after the re-randomization (the trace of
 * ts_boot's ModRaise: log2(N / 2 period) rotations at `level`, keys
 * ts_ckks_trace_steps), which removes every component of the computation's
 * noise the client could otherwise read off that subring, and c_0 gets a
 * rounded Gaussian of sigma per coefficient. With e the noise the logits
 * carry (||e||_2 <= 2^noise_l2_log2, a stated bound: `tessera bench decode
 * --noise` measures it, "run_diff_logit_subring" + log2 sqrt(2 period) - 1/2),
 * the client's view differs from one without e by a Renyi divergence of
 * order 2 of at most exp(||e||^2 / sigma^2) per reply; sigma = 2^noise_l2_log2
 * sqrt(2^queries_log2 / ln 2) keeps 2^queries_log2 replies within 2, so any
 * search problem on the weights (recovering one, say) succeeds with at most
 * sqrt(2 p), p its success from noise-free logits. Precision: a logit decoded
 * at `period` slots (ts_llm_enc_decrypt_logits) moves by sigma sqrt(period) /
 * Delta (one sigma; err_bound is 6 of them). TS_ERANGE when sigma does not
 * fit q_0..q_level, TS_EINVAL for a bad period, bound or query count,
 * TS_ENOTSUP for a preset of fewer than N/2 slots (its Galois keys are
 * rotations mod its own slot count: the projection's steps above it have none).
 */
ts_status_t ts_llm_sanitize_plan_rd(const ts_ckks_params_t *params, int level, int period,
                                    double noise_l2_log2, double queries_log2,
                                    ts_llm_sanitize_info_t *info);
/* Sanitize ct in place as `plan` says (either mode; see ts_llm_sanitize):
 * ev must hold the projection's keys in the Renyi mode (TS_ENOKEY). */
ts_status_t ts_llm_sanitize_with(ts_ckks_evaluator_t *ev, const ts_ckks_public_key_t *pk,
                                 const ts_llm_sanitize_info_t *plan, ts_prng_t *prng,
                                 ts_ckks_ciphertext_t *ct);
/*
 * Sanitize ct in place (its level must be >= level; a scale not within 2^-30
 * of Delta is corrected exactly with one more level). pk: the client's public
 * key; prng: the server's CSPRNG (ts_prng_new_os). lambda 0: re-randomize only.
 * [out] info (optional). Errors: TS_EINVAL, TS_ELEVEL, TS_ERANGE, CKKS errors.
 */
ts_status_t ts_llm_sanitize(ts_ckks_evaluator_t *ev, const ts_ckks_public_key_t *pk, int level,
                            int lambda, ts_prng_t *prng, ts_ckks_ciphertext_t *ct,
                            ts_llm_sanitize_info_t *info);

#ifdef __cplusplus
}
#endif

#endif /* TS_LLM_H */

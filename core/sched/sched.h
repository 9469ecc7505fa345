/*
 * core/sched — the scheme-aware scheduler (ROSETTA section 4).
 *
 * Three pieces of plain data and one solver:
 *
 *  1. The decode-step operator graph (ts_sched_graph_t). A model's decode
 *     step is described as a list of operators in execution (topological)
 *     order. Arithmetic operators (plaintext-ciphertext matrix-vector product,
 *     ciphertext products, additions, rotate-and-sum, RoPE, attention products)
 *     always run in CKKS. Non-arithmetic primitives (exp, 1/x, 1/sqrt(x),
 *     SiLU, GELU, ReLU) carry one or more CKKS implementations (each with its
 *     multiplicative depth and its operation counts, derived from the input
 *     range) and a TFHE alternative (the segmented LUT protocol of section 3
 *     behind the conversion pipeline of section 3.3). Composite nonlinear
 *     layers (RMSNorm, LayerNorm, max-free softmax) are added by helpers that
 *     decompose them into these primitives (section 4.1).
 *
 *  2. The cost table (ts_sched_costs_t): measured latency of every CKKS
 *     operation per level, bootstrapping, conversions per batch size, PBS and
 *     HomComp, for one backend. YAML (or JSON, which YAML reads) on disk;
 *     `tessera bench` produces it, configs/costs/cpu-default.yaml is an
 *     estimate.
 *
 *  3. The plan (ts_sched_plan_t): for every operator its scheme, the level it
 *     runs at, the level its result has, the bootstraps inserted before it and
 *     the rotation steps it needs; the total predicted latency.
 *
 * The solver (ts_sched_plan_new) is one shortest path over a DAG whose
 * vertices are (operator, level of the running value, common level of the
 * values kept for later) and whose edges carry the operator's cost at the
 * chosen level, bootstrapping where levels run out, and, for the TFHE
 * alternative of a non-arithmetic primitive, the conversion costs and the
 * level its result is recovered to. The policy restricts the edges:
 * TS_SCHED_HYBRID (all edges), TS_SCHED_CKKS (TFHE edges removed: pure-CKKS
 * baseline), TS_SCHED_TFHE (CKKS edges of non-arithmetic primitives removed:
 * all-TFHE baseline).
 *
 * Level model. Levels count the remaining rescalings: a fresh ciphertext has
 * level costs->max_level, an operator of depth d at input level l leaves its
 * result at l - d when l >= d; a deeper CKKS implementation bootstraps inside
 * each time its levels run out (counted in the step). Dropping levels
 * (ModSwitch down) is free, so an operator may run at any level not above
 * what its inputs have; running lower is cheaper. Bootstrapping takes a
 * ciphertext at any level to costs->boot_output_level. Values produced now
 * and consumed later than by the next operator (residual stream, the other
 * factor of a product) are kept at one common level (the minimum of theirs:
 * dropping is free; an engine may also keep them higher, since every
 * operator drops its inputs to its planned level); a bootstrap inserted before
 * an operator refreshes either only the running value or all live values. See
 * docs/ARCHITECTURE.md "Scheduler".
 *
 * Nothing here touches ciphertexts: the graph describes, the plan prescribes,
 * core/llm executes.
 */
#ifndef TS_SCHED_H
#define TS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ operators */

/* Operator kinds. Values below TS_OP_EXP are arithmetic (always CKKS). */
typedef enum {
    TS_OP_MATVEC = 0,   /* plaintext matrix (rows x cols) times ciphertext vector, BSGS diagonals */
    TS_OP_MUL_CC = 1,   /* ciphertext x ciphertext, element-wise, relinearize + rescale; depth 1 */
    TS_OP_MUL_CP = 2,   /* ciphertext x plaintext (vector or scalar) + rescale; depth 1 */
    TS_OP_ADD_CC = 3,   /* ciphertext + ciphertext; depth 0 */
    TS_OP_ADD_CP = 4,   /* ciphertext + plaintext; depth 0 */
    TS_OP_SUM = 5,      /* rotate-and-sum over `cols` slots (log2 rotations); depth 0 */
    TS_OP_ROPE = 6,     /* rotary embedding: two plaintext products, one rotation; depth 1 */
    TS_OP_ATTN_QK = 7,  /* scores q . K^T against the encrypted K cache; depth 1 */
    TS_OP_ATTN_PV = 8,  /* probabilities . V against the encrypted V cache; depth 1 */
    TS_OP_EXP = 9,      /* e^x on [range_lo, range_hi] */
    TS_OP_INV = 10,     /* 1/x, x in [range_lo, range_hi], range_lo > 0 */
    TS_OP_INVSQRT = 11, /* 1/sqrt(x), x in [range_lo, range_hi], range_lo > 0 */
    TS_OP_SILU = 12,    /* x * sigmoid(x) */
    TS_OP_GELU = 13,    /* x * Phi(x) */
    TS_OP_RELU = 14,    /* max(x, 0) */
    TS_OP_KIND_COUNT = 15,
} ts_op_kind_t;

/* "matvec", "mul_cc", ..., "gelu"; "?" for foreign values. */
const char *ts_op_kind_name(ts_op_kind_t kind);
/* True for exp, 1/x, 1/sqrt(x), SiLU, GELU, ReLU: candidates for TFHE. */
bool ts_op_kind_is_nonarith(ts_op_kind_t kind);

/* Operator inputs are value ids: the id of an earlier operator (its result),
 * TS_SCHED_FRESH (a ciphertext the client encrypted: level costs->max_level)
 * or TS_SCHED_NONE (no second input). */
#define TS_SCHED_FRESH (-1)
#define TS_SCHED_NONE  (-2)

#define TS_SCHED_MAX_IMPL 4 /* CKKS implementations per operator */

/*
 * One way to evaluate an operator in CKKS: its multiplicative depth and the
 * primitive operations it executes PER CIPHERTEXT (fractions allowed: an
 * average). The solver spreads the counts evenly over the `depth` levels the
 * implementation consumes, starting at the input level (all at the input level
 * when depth is 0).
 */
typedef struct ts_sched_impl {
    char name[32]; /* "goldschmidt-6", "cheb-59", "bsgs" ... */
    int depth;     /* levels consumed, >= 0 */
    double n_add, n_pmul, n_cmul, n_rot, n_rescale;
    double n_encode; /* plaintexts encoded on the fly (costs->encode_ns; 0 when not listed) */
    /* A double-hoisted BSGS product (ts_ckks_bsgs): the decomposition of x
     * shared by its baby rotations (n_hoist), the baby rotations over Q_l P
     * (n_baby), the diagonals encoded, multiplied and added there (n_diag),
     * the giant rotate-and-accumulate steps (n_giant) and the sum's ModDowns
     * (n_moddown). Priced by the table's bsgs_* entries when it has them,
     * else as n_baby + n_giant rotations and n_diag plaintext products and
     * encodings (n_hoist and n_moddown then cost nothing). */
    double n_hoist, n_baby, n_diag, n_giant, n_moddown;
} ts_sched_impl_t;

/*
 * One operator (plain data; the graph copies it). Fill it by hand and add it
 * with ts_sched_graph_add_op(), or use the typed helpers below, which fill the
 * counts and rotation steps from the dimensions.
 */
typedef struct ts_sched_op {
    ts_op_kind_t kind;
    char name[48]; /* for plans and logs: "L0.attn.norm.invsqrt" */
    int layer;     /* model layer (block) index; -1 outside the blocks */
    int in[2];     /* value ids (see TS_SCHED_FRESH); in[1] = TS_SCHED_NONE if unary */
    uint32_t n_ct; /* ciphertexts this operator processes (>= 1) */
    /* Scalars to look up when a non-arithmetic primitive runs in TFHE (each
     * one is one segmented-LUT evaluation); 0 for arithmetic operators. */
    uint32_t n_values;
    uint32_t rows, cols;       /* matvec shape; SUM: cols = length summed */
    double range_lo, range_hi; /* input range of a non-arithmetic primitive */
    int n_impl;                /* CKKS implementations, 1..TS_SCHED_MAX_IMPL */
    ts_sched_impl_t impl[TS_SCHED_MAX_IMPL];
    bool tfhe_ok; /* true when a TFHE alternative exists (non-arithmetic only) */

    /* The level model of an executing engine (ts_sched_plan_new_engine;
     * the shortest-path solver ignores these fields, 0 = default). */
    uint8_t pin;            /* TS_SCHED_PIN_*: where the engine evaluates a primitive */
    uint8_t group;          /* a free tag < TS_SCHED_MAX_GROUPS (core/llm: the engine stage) */
    uint8_t inplace;        /* bit i: the engine bootstraps / aligns input i in place, so later
                             * readers of that value see the new level; clear: it works on a copy */
    int need_level;         /* CKKS: an input below this level is bootstrapped first
                             * (0 = impl[0].depth) */
    int tfhe_in_level;      /* TFHE: level a conversion needs; an input below it is bootstrapped
                             * once per conversion (0 = costs->extract_depth + 1) */
    int tfhe_out_level;     /* TFHE: level the result is recovered to (0 = the bootstrap level) */
    uint32_t n_conv;        /* TFHE: conversions (batches of values); 0 = as in
                             * ts_sched_costs_convert_ns */
    int lut_seg;            /* TFHE: segments per value's look-up (0 = costs->n_seg);
                             * TS_SCHED_LUT_PBS = one plain PBS per value (the tfhe policy) */
    uint64_t deep_levels;   /* CKKS: bit l set: run at level l, the operator consumes one
                             * level more than its depth (a scale correction after
                             * rescaling by a prime far from the scale) */
    uint8_t boot_log_slots; /* CKKS: its bootstraps run at 2^boot_log_slots slots (0:
                             * unknown, the table's main bootstrap): priced at
                             * costs->boot_period_ns when the table's
                             * boot_period_slots matches, else from the table's
                             * latencies by slot count (boot_slots) when it has
                             * them, else at costs->boot_ns */
    uint8_t drop_above;     /* CKKS, > 0: the operator is a copy of input 0 dropped to input
                             * 1's level + drop_above (never raised; no cost, no bootstrap):
                             * an operand made only as deep as a product with input 1 needs */
    bool capped;            /* CKKS: the result is at level_cap at most: a value added to
                             * stored ones that sit there (an encrypted cache whose earlier
                             * rows an ordinary step wrote lower) */
    uint8_t level_cap;
    uint8_t log_slots; /* CKKS: the ciphertext holds 2^log_slots slots (0: the table's slots):
                        * its plaintexts encoded on the fly (encode_ns, the BSGS diagonals)
                        * priced at that count when the table has diag_by_slots */
    uint8_t boot_rot;  /* CKKS: rotations (each with an addition) the engine runs on a
                        * bootstrap's output when this operator bootstraps (an average
                        * over a value's replicas: core/llm divide), priced at the
                        * bootstrap's output level; none without a bootstrap */
} ts_sched_op_t;

#define TS_SCHED_PIN_NONE   0 /* the policy decides */
#define TS_SCHED_PIN_CKKS   1
#define TS_SCHED_PIN_TFHE   2
#define TS_SCHED_LUT_PBS    (-1)
#define TS_SCHED_MAX_GROUPS 16

/* ---------------------------------------------------------------- graph */

typedef struct ts_sched_graph ts_sched_graph_t;

/* An empty graph. [out] *out, owned by the caller (ts_sched_graph_free).
 * TS_EINVAL (out NULL), TS_ENOMEM. */
ts_status_t ts_sched_graph_new(ts_sched_graph_t **out);
void ts_sched_graph_free(ts_sched_graph_t *g); /* accepts NULL */

/*
 * Append a copy of `op`; its id (the value id of its result) is written to
 * *out_id (may be NULL). `rot_steps` (n_rot entries, may be NULL when 0) are
 * the slot-rotation steps the operator needs keys for; they are copied.
 * Inputs must refer to earlier operators or TS_SCHED_FRESH.
 * TS_EINVAL (bad input id, n_ct 0, n_impl out of range, negative depth, a
 * TFHE alternative on an arithmetic operator, range_lo > range_hi, or a
 * non-arithmetic primitive with n_values 0 and tfhe_ok), TS_ENOMEM.
 */
ts_status_t ts_sched_graph_add_op(ts_sched_graph_t *g, const ts_sched_op_t *op,
                                  const int32_t *rot_steps, size_t n_rot, int *out_id);

/*
 * Levels the engine drops right after its CKKS bootstraps (engine plans,
 * ts_sched_plan_new_engine): drop[i] for the i-th operator that bootstraps
 * (one pair counts once), whose bootstrapped inputs then continue at the
 * bootstrap's level minus drop[i] (never below the level the operator
 * needs); later ones none. A bootstrap leaves more levels than the
 * operations until the next one use, and the operations run cheaper at
 * fewer. Replaces an earlier list (copied). TS_EINVAL, TS_ENOMEM.
 */
ts_status_t ts_sched_graph_set_boot_drop(ts_sched_graph_t *g, const uint8_t *drop, size_t n);

size_t ts_sched_graph_count(const ts_sched_graph_t *g);
/* The i-th operator, NULL when i is out of range. Valid until the next add. */
const ts_sched_op_t *ts_sched_graph_op(const ts_sched_graph_t *g, size_t i);
/* Rotation steps of operator i (pointer into the graph; *n = 0 when none). */
const int32_t *ts_sched_graph_op_rot_steps(const ts_sched_graph_t *g, size_t i, size_t *n);
/* How many operators of `kind` the graph holds. */
size_t ts_sched_graph_count_kind(const ts_sched_graph_t *g, ts_op_kind_t kind);

/*
 * Typed helpers. Each appends one operator (composites: several) with the
 * counts of the evaluation the encrypted engine performs, and writes the id
 * of the (last) result to *out_id (may be NULL). `slots` is the CKKS slot
 * count N/2. They return what ts_sched_graph_add_op returns.
 */

/* y = W x, W rows x cols, by diagonals with baby-step giant-step: depth 1,
 * about min(rows,cols) plaintext products and 2 sqrt(min(rows,cols)) + log2
 * of the aspect ratio rotations per block of `slots`. */
ts_status_t ts_sched_graph_add_matvec(ts_sched_graph_t *g, const char *name, int layer, int in,
                                      uint32_t rows, uint32_t cols, uint32_t slots, int *out_id);
/* Element-wise binary arithmetic: kind is MUL_CC, MUL_CP, ADD_CC or ADD_CP
 * (b = TS_SCHED_NONE for the _CP kinds). */
ts_status_t ts_sched_graph_add_binary(ts_sched_graph_t *g, ts_op_kind_t kind, const char *name,
                                      int layer, int a, int b, uint32_t n_ct, int *out_id);
/* Rotate-and-sum over `len` slots (len a power of two or rounded up). */
ts_status_t ts_sched_graph_add_sum(ts_sched_graph_t *g, const char *name, int layer, int in,
                                   uint32_t len, uint32_t n_ct, int *out_id);
/* RoPE on `width` slots (q or k of all heads); rotation by width/2. */
ts_status_t ts_sched_graph_add_rope(ts_sched_graph_t *g, const char *name, int layer, int in,
                                    uint32_t width, uint32_t slots, int *out_id);
/* Attention products against the encrypted cache of `n_ctx` positions:
 * ATTN_QK (in = q, kv = k) or ATTN_PV (in = probabilities, kv = v). */
ts_status_t ts_sched_graph_add_attn(ts_sched_graph_t *g, ts_op_kind_t kind, const char *name,
                                    int layer, int in, int kv, uint32_t n_heads, uint32_t head_dim,
                                    uint32_t n_ctx, uint32_t slots, int *out_id);
/*
 * A non-arithmetic primitive on `n_values` scalars packed in `n_ct`
 * ciphertexts, input in [lo, hi]. The CKKS implementations (and their
 * depths) are derived from the kind and range by ts_sched_nonarith_impls();
 * the TFHE alternative is enabled.
 */
ts_status_t ts_sched_graph_add_nonarith(ts_sched_graph_t *g, ts_op_kind_t kind, const char *name,
                                        int layer, int in, uint32_t n_ct, uint32_t n_values,
                                        double lo, double hi, int *out_id);

/*
 * The CKKS implementations of a non-arithmetic primitive on [lo, hi]
 * (section 4.1: high-degree polynomials or iterations):
 *   exp      scale by 2^-r, degree-7 Taylor/Chebyshev, r squarings
 *   1/x      Goldschmidt, iterations from the ratio hi/lo (error 2^-20)
 *   1/sqrt   Newton from a degree-7 initial guess, iterations from hi/lo
 *   SiLU/GELU Chebyshev interpolant of degree 59 (Paterson-Stockmeyer),
 *             and a degree-27 cheaper variant for ranges |x| <= 8
 *   ReLU     composite sign polynomial (degrees 15, 15, 27)
 * Writes up to TS_SCHED_MAX_IMPL entries and their count. TS_EINVAL for an
 * arithmetic kind or an invalid range (lo > hi, lo <= 0 for 1/x, 1/sqrt).
 */
ts_status_t ts_sched_nonarith_impls(ts_op_kind_t kind, double lo, double hi,
                                    ts_sched_impl_t impl[TS_SCHED_MAX_IMPL], int *n_impl);

/* Norm kinds and activations of a decoder block. */
typedef enum { TS_NORM_RMS = 0, TS_NORM_LAYER = 1 } ts_sched_norm_t;
typedef enum {
    TS_ACT_SWIGLU = 0, /* Llama: W2 (SiLU(W1 x) * W3 x) */
    TS_ACT_GELU = 1,   /* GPT-2: W2 GELU(W1 x) */
} ts_sched_act_t;

/*
 * RMSNorm (x^2, sum, * 1/d + eps, 1/sqrt, * x; gamma folded into the next
 * matrix) or LayerNorm (sum, mean, x - mean, square, sum, 1/sqrt, *; gamma
 * and beta folded). `var_max` bounds the mean square (input of 1/sqrt is in
 * [eps, var_max]).
 */
ts_status_t ts_sched_graph_add_norm(ts_sched_graph_t *g, ts_sched_norm_t kind, const char *name,
                                    int layer, int in, uint32_t dim, double var_max, int *out_id);
/*
 * Max-free softmax (normalize-and-square, section 2.3; the same recurrence as
 * ts_nonlinear_softmax) over n_ctx scores of n_heads heads, scores in
 * [-range, range]: y = exp(z / 2^k) with k = max(1, ceil(log2 range)), then k
 * steps y <- y^2 * (1 / sum y^2): square, sum over n_ctx, 1/x (n_heads
 * values; the first step sees [n e^-2r, n e^2r] with r = range / 2^k, later
 * ones [1/n, 1]), product.
 */
ts_status_t ts_sched_graph_add_softmax(ts_sched_graph_t *g, const char *name, int layer, int in,
                                       uint32_t n_heads, uint32_t n_ctx, double range,
                                       uint32_t slots, int *out_id);

/* Plain model dimensions (core/llm fills them from the loaded file). */
typedef struct ts_sched_model_dims {
    uint32_t dim;        /* d_model */
    uint32_t hidden_dim; /* FFN intermediate dimension */
    uint32_t n_layers;
    uint32_t n_heads;
    uint32_t n_kv_heads; /* grouped-query attention; 0 = n_heads */
    uint32_t vocab;
    uint32_t seq_pos;     /* position of the token decoded (context length = seq_pos + 1) */
    ts_sched_act_t act;   /* TS_ACT_SWIGLU (Llama) or TS_ACT_GELU (GPT-2) */
    ts_sched_norm_t norm; /* TS_NORM_RMS (Llama) or TS_NORM_LAYER (GPT-2) */
    uint32_t slots;       /* CKKS slots N/2; 0 = 32768 */
    bool embed_public;    /* client encrypts the embedding: no one-hot lookup */
    /* Input ranges; 0 = defaults (softmax scores [-32, 32], activations
     * [-20, 20], norm variance up to 8192: ROSETTA section 5.2). */
    double softmax_range, act_range, norm_var_max;
} ts_sched_model_dims_t;

/*
 * The graph of one decode step of a Llama (SwiGLU, RMSNorm, RoPE, GQA) or
 * GPT-2 (GELU, LayerNorm, learned positions) decoder:
 *   [embedding lookup matvec vocab x dim on the encrypted one-hot token,
 *    (GPT-2) + position embedding]
 *   per layer: norm; Q, K, V matvecs; (Llama) RoPE on q and k; scores q.K;
 *     softmax; p.V; output matvec; residual add; norm; FFN; residual add
 *   final norm; LM head matvec vocab x dim.
 * Op counts per layer: Llama 4+3 = 7 matvecs (q, k, v, o, w1, w3, w2), GPT-2
 * 6 (q, k, v, o, fc, proj); plus 1 embedding (unless embed_public) and 1 head.
 * [out] *out (caller frees). TS_EINVAL for zero or inconsistent dims
 * (dim % n_heads, n_heads % n_kv_heads).
 */
ts_status_t ts_sched_graph_build_decoder(const ts_sched_model_dims_t *dims, ts_sched_graph_t **out);

/* ----------------------------------------------------------- cost table */

#define TS_SCHED_MAX_LEVELS     64 /* entries of per-level lists (levels 0..63) */
#define TS_SCHED_MAX_BATCHES    16 /* entries of per-batch-size lists */
#define TS_SCHED_MAX_BOOT_SLOTS 16 /* entries of the bootstrap-by-slots lists */

/*
 * Measured (or estimated) latencies, nanoseconds, for one backend and one
 * parameter set. Per-level lists have max_level + 1 entries (index = level).
 * On disk (YAML; JSON is read too):
 *
 *   format: 1
 *   name: cpu-default          backend: cpu        params: ckks-n16-l13
 *   estimated: true            note: "..."
 *   cpu: avx512                optional (backend cpu): the vector kernels it was
 *                              measured with (core/math ts_cpu_kernels)
 *   ckks:
 *     max_level: 13            slots: 32768
 *     add_ns:     [L+1 ints]   pmul_ns: [...]  cmul_ns: [...]  (cmul includes relin)
 *     rot_ns:     [...]        rescale_ns: [...]
 *   bootstrap:
 *     latency_ns: N            output_level: 13
 *     period_slots: S  period_latency_ns: N   optional, measured together: a
 *                                          bootstrap at S slots with the same
 *                                          level budgets (the residual stream's)
 *     by_slots: [S, ...]  by_slots_ns: [N, ...]   optional, measured together:
 *                                          bootstraps at these slot counts
 *                                          (increasing powers of two; a lanes
 *                                          engine's or a longer session's
 *                                          working slots)
 *   convert:
 *     batch_sizes:  [1, 4, 16, ...]
 *     extract_ns:   [one per batch size]   SlotToCoeff + RingSwitch + per-value
 *                                          Trace/ModSwitch/ExtractLWE for a batch
 *     extract_depth: 3                     levels SlotToCoeff consumes
 *     recover_ns:   [L+1 ints]             RingSwitch back + ModRecover to level l
 *     roundtrip_ns: N                      optional, measured: one conversion of a
 *                                          batch (SlotToCoeff, RingSwitch, split,
 *                                          merge, ModRecover) without its values
 *   tfhe:
 *     pbs_ns: N  homcomp_ns: N  small_pmul_ns: N  trace_ns: N  n_seg: 4
 *     lut_seg: [2, 4]  lut_value_ns: [..]  optional, measured: per value of a
 *                                          conversion, a segmented-LUT look-up
 *                                          with that many segments (Traces incl.)
 *     pbs_value_ns: N                      optional, measured: per value, one
 *                                          plain PBS (the tfhe policy)
 *     workers: W                           optional: a conversion looks its values
 *                                          up W at a time (threads); its values
 *                                          cost ceil(n / W) per-value latencies
 *   ckks.encode_ns: [L+1 ints]             optional: encoding one plaintext
 *   ckks.bsgs_hoist_ns, bsgs_baby_ns, bsgs_diag_ns, bsgs_giant_ns,
 *     bsgs_moddown_ns: [L+1 ints] each      optional, all five or none: the
 *                                          pieces of a double-hoisted BSGS
 *                                          product at the table's slots
 *                                          (ts_sched_impl_t n_hoist ...)
 *   ckks.diag_by_slots: [S, ...]  diag_by_slots_ns: [N, ...]   optional,
 *                                          measured together: one BSGS
 *                                          diagonal (encoded over Q_l P and
 *                                          multiplied) at one level, at these
 *                                          slot counts (increasing powers of
 *                                          two, the table's slots among them):
 *                                          an operator on ciphertexts of S
 *                                          slots (ts_sched_op_t log_slots)
 *                                          pays its diagonals and encodings
 *                                          times entry(S) / entry(slots)
 *
 * One segmented-LUT evaluation (section 3.2) costs (n_seg - 1) HomComp,
 * n_seg + 2 PBS, n_seg + 1 small-ring plaintext products and n_seg + 1 Traces
 * (the formula, used when lut_value_ns does not list the segment count); a
 * conversion costs roundtrip_ns when measured, else extract_ns + recover_ns.
 */
typedef struct ts_sched_costs {
    int64_t format;
    char name[64];
    char backend[16];
    char params[64];
    bool estimated;
    char note[512];
    char cpu[16]; /* CPU backend: the kernels it was measured with (ts_cpu_kernels); "": unknown */

    int64_t max_level;
    int64_t slots;
    int64_t add_ns[TS_SCHED_MAX_LEVELS];
    size_t n_add;
    int64_t pmul_ns[TS_SCHED_MAX_LEVELS];
    size_t n_pmul;
    int64_t cmul_ns[TS_SCHED_MAX_LEVELS];
    size_t n_cmul;
    int64_t rot_ns[TS_SCHED_MAX_LEVELS];
    size_t n_rot;
    int64_t rescale_ns[TS_SCHED_MAX_LEVELS];
    size_t n_rescale;

    int64_t boot_ns;
    int64_t boot_output_level;
    /* Optional: a bootstrap at boot_period_slots slots with the main one's
     * level budgets (the engine's residual stream; 0: not measured). */
    int64_t boot_period_ns;
    int64_t boot_period_slots;
    /* Optional: bootstraps measured at other slot counts (increasing powers
     * of two, each with the main one's chain; 0 entries: none). A bootstrap
     * at S slots costs the entry at S, log-linear between two entries, the
     * nearest entry outside them. */
    int64_t boot_slots[TS_SCHED_MAX_BOOT_SLOTS];
    size_t n_boot_slots;
    int64_t boot_slots_ns[TS_SCHED_MAX_BOOT_SLOTS];
    size_t n_boot_slots_ns;

    int64_t batch_sizes[TS_SCHED_MAX_BATCHES];
    size_t n_batch_sizes;
    int64_t extract_ns[TS_SCHED_MAX_BATCHES];
    size_t n_extract;
    int64_t extract_depth;
    int64_t recover_ns[TS_SCHED_MAX_LEVELS];
    size_t n_recover;

    int64_t pbs_ns;
    int64_t homcomp_ns;
    int64_t small_pmul_ns;
    int64_t trace_ns;
    int64_t n_seg;

    /* Optional measured entries (0 / empty: not measured; the formulas above). */
    int64_t encode_ns[TS_SCHED_MAX_LEVELS];
    size_t n_encode;
    int64_t bsgs_hoist_ns[TS_SCHED_MAX_LEVELS];
    size_t n_bsgs_hoist;
    int64_t bsgs_baby_ns[TS_SCHED_MAX_LEVELS];
    size_t n_bsgs_baby;
    int64_t bsgs_diag_ns[TS_SCHED_MAX_LEVELS];
    size_t n_bsgs_diag;
    int64_t bsgs_giant_ns[TS_SCHED_MAX_LEVELS];
    size_t n_bsgs_giant;
    int64_t bsgs_moddown_ns[TS_SCHED_MAX_LEVELS];
    size_t n_bsgs_moddown;
    /* Optional: one BSGS diagonal at these slot counts (see above; 0 entries:
     * every operator's encodings at the table's slots). */
    int64_t diag_slots[TS_SCHED_MAX_BOOT_SLOTS];
    size_t n_diag_slots;
    int64_t diag_slots_ns[TS_SCHED_MAX_BOOT_SLOTS];
    size_t n_diag_slots_ns;
    int64_t roundtrip_ns;
    int64_t lut_seg[8];
    size_t n_lut_seg;
    int64_t lut_value_ns[8];
    size_t n_lut_value;
    int64_t pbs_value_ns;
    /* Optional: the look-ups of one conversion run on this many threads at
     * once (0 or 1: one at a time); per-value costs are then per round of
     * `workers` values (lut_value_ns and pbs_value_ns measured so). */
    int64_t workers;
} ts_sched_costs_t;

/*
 * Load a cost table. Errors (syntax, unknown keys, wrong types, ranges, and
 * list lengths that disagree with max_level or batch_sizes, non-increasing
 * batch sizes, output_level above max_level) come back with file:line:column
 * in *err (may be NULL). TS_ECONFIG, TS_EIO, TS_EINVAL.
 */
ts_status_t ts_sched_costs_load(const char *path, ts_sched_costs_t *out, ts_cfg_error_t *err);
ts_status_t ts_sched_costs_load_string(const char *text, size_t size, const char *name,
                                       ts_sched_costs_t *out, ts_cfg_error_t *err);
/* Check the cross-field rules above on a filled struct (msg may be NULL). */
ts_status_t ts_sched_costs_validate(const ts_sched_costs_t *c, char *msg, size_t msg_size);
/* Write in the YAML format above (loadable by ts_sched_costs_load). TS_EIO. */
ts_status_t ts_sched_costs_save(const ts_sched_costs_t *c, const char *path);
/*
 * True when c is a CPU table measured with other vector kernels than
 * `kernels` (ts_cpu_kernels() of the running machine) names: its latencies
 * are then off by a roughly constant factor (~3.5x between avx512 and avx2
 * for CKKS). False when either is unknown.
 */
bool ts_sched_costs_cpu_mismatch(const ts_sched_costs_t *c, const char *kernels);

/*
 * The shipped table of CKKS preset `params` in folder `dir` for a machine
 * whose compute backend is `backend` ("cpu", or "gpu"; NULL or "": "cpu") and
 * whose kernels are `kernels` (a CPU's ts_cpu_kernels(): "avx512", "avx2",
 * "portable"): dir/BACKEND-KERNELS-PARAMS.yaml when it can be read (a table
 * measured with those kernels), else dir/BACKEND-PARAMS.yaml (the preset's
 * table on that backend, whatever kernels measured it; `cpu:` in a CPU table
 * says which). kernels may be NULL or "" (then only the second). A GPU never
 * takes a CPU table: their ratios differ (a PBS against a bootstrap above
 * all). Writes the path into path[size]. TS_ENOENT when neither can be read
 * (path then ""), TS_EINVAL on a NULL or empty dir or params, another
 * backend, or a path longer than size.
 */
ts_status_t ts_sched_costs_shipped(const char *dir, const char *params, const char *backend,
                                   const char *kernels, char *path, size_t size);

/* The built-in estimate (same numbers as configs/costs/cpu-default.yaml). */
void ts_sched_costs_default(ts_sched_costs_t *out);

/*
 * Extend a table to max_level (a chain deeper than the one it was measured
 * at): every per-level list continues from its top entry by its last step
 * per level (the costs are linear in the limbs), never below that entry.
 * No-op when the table already reaches max_level; max_level is clamped to
 * TS_SCHED_MAX_LEVELS - 1.
 */
void ts_sched_costs_extend(ts_sched_costs_t *c, int max_level);

/* Latency of one segmented-LUT evaluation (n_seg segments). */
double ts_sched_costs_lut_ns(const ts_sched_costs_t *c);
/* Latency of one value's evaluation in TFHE: a look-up with `seg` segments
 * (0 = c->n_seg) or one plain PBS (TS_SCHED_LUT_PBS): the measured entry when
 * the table lists it, else the formula. */
double ts_sched_costs_value_ns(const ts_sched_costs_t *c, int seg);
/*
 * Latency of the conversion round trip of `n` values held in `n_ct`
 * ciphertexts, recovered to `level`: batches = max(n_ct, ceil(n / largest
 * batch size)), each batch one extraction (extract_ns interpolated linearly
 * between listed batch sizes, extrapolated beyond them) and one recovery
 * (recover_ns[level]). LUT evaluations are not included.
 */
double ts_sched_costs_convert_ns(const ts_sched_costs_t *c, uint32_t n, uint32_t n_ct, int level);
/* Level-by-level latency of one ciphertext through `impl` at input level
 * `level` (see the level model: bootstraps inside when levels run out).
 * [out] *out_level, *n_boot (may be NULL). */
double ts_sched_costs_impl_ns(const ts_sched_costs_t *c, const ts_sched_impl_t *impl, int level,
                              int *out_level, uint32_t *n_boot);
/* The same on ciphertexts of 2^log_slots slots (0: the table's): the
 * diagonals and encodings scaled by the table's diag_by_slots. */
double ts_sched_costs_impl_ns_slots(const ts_sched_costs_t *c, const ts_sched_impl_t *impl,
                                    int level, int log_slots, int *out_level, uint32_t *n_boot);
/* The factor diag_by_slots gives encodings at 2^log_slots slots against the
 * table's slots (1 when the table has none, log_slots is 0 or the table's). */
double ts_sched_costs_encode_scale(const ts_sched_costs_t *c, int log_slots);

/* ----------------------------------------------------------------- plans */

typedef enum {
    TS_SCHED_HYBRID = 0, /* shortest path over all choices */
    TS_SCHED_CKKS = 1,   /* TFHE forbidden (CacheMir-like pure CKKS) */
    TS_SCHED_TFHE = 2,   /* every non-arithmetic primitive in TFHE (PEGASUS-like) */
} ts_sched_policy_t;

const char *ts_sched_policy_name(ts_sched_policy_t p); /* "hybrid", "ckks", "tfhe" */
ts_status_t ts_sched_policy_parse(const char *s, ts_sched_policy_t *out); /* TS_EINVAL */

typedef enum { TS_SCHEME_CKKS = 0, TS_SCHEME_TFHE = 1 } ts_sched_scheme_t;

/* Bootstraps inserted before an operator. */
typedef enum {
    TS_BOOT_NONE = 0,
    TS_BOOT_MAIN = 1, /* the running value (result of the previous operator) */
    TS_BOOT_ALL = 2,  /* the running value and every value kept for later */
} ts_sched_boot_t;

/* One operator of the plan (index = operator id in the graph). */
typedef struct ts_sched_step {
    ts_sched_scheme_t scheme;
    int impl; /* CKKS implementation index; -1 for TFHE */
    ts_sched_boot_t boot;
    uint32_t n_boot;       /* ciphertexts bootstrapped before the operator */
    uint32_t n_boot_inner; /* bootstraps inside a CKKS implementation deeper than the levels */
    int level_avail;       /* min level of the inputs (after bootstraps) */
    int level_in;          /* level the operator runs at (<= level_avail) */
    int level_out;         /* level of its result (TFHE: the recovery level) */
    double op_ns;          /* predicted latency of the operator itself */
    double boot_ns;        /* of the bootstraps before it (inner ones are in op_ns) */
} ts_sched_step_t;

typedef struct ts_sched_plan {
    ts_sched_policy_t policy;
    size_t n_steps;
    ts_sched_step_t *steps;
    double total_ns;    /* sum of op_ns + boot_ns */
    double boot_ns;     /* of which bootstrapping */
    double convert_ns;  /* of which conversions + LUTs (TFHE operators) */
    uint32_t n_boot;    /* ciphertexts bootstrapped */
    uint32_t n_tfhe;    /* operators placed in TFHE */
    uint32_t n_convert; /* CKKS -> TFHE -> CKKS round trips (batches of values) */
    uint32_t n_lookup;  /* values evaluated in TFHE */
    bool engine;        /* levels from the engine's level model (ts_sched_plan_new_engine) */
    int engine_input_level, engine_boot_level; /* its levels (engine plans) */
    size_t n_rot_steps;
    int32_t *rot_steps; /* sorted, distinct: the rotation keys the plan needs */
    char costs_name[64];
} ts_sched_plan_t;

/*
 * Solve: one shortest path (relaxation in topological order) over the level
 * DAG of `g` under `costs` and `policy`. [out] *out (ts_sched_plan_free).
 * TS_EINVAL (empty graph, invalid costs), TS_ELEVEL (no feasible plan: an
 * operator's depth exceeds every reachable level, e.g. a CKKS-only primitive
 * deeper than boot_output_level), TS_ENOMEM.
 */
ts_status_t ts_sched_plan_new(const ts_sched_graph_t *g, const ts_sched_costs_t *costs,
                              ts_sched_policy_t policy, ts_sched_plan_t **out);
void ts_sched_plan_free(ts_sched_plan_t *p); /* accepts NULL */

/*
 * The same with some primitives pinned: force[i] (g's operator count
 * entries; NULL = none) is -1 (policy decides), TS_SCHEME_CKKS or
 * TS_SCHEME_TFHE; a pin overrides the policy for that operator. Pinning an
 * operator without a TFHE alternative to TFHE is TS_EINVAL.
 * ts_sched_plan_check rejects pins that contradict the policy.
 */
ts_status_t ts_sched_plan_new_pinned(const ts_sched_graph_t *g, const ts_sched_costs_t *costs,
                                     ts_sched_policy_t policy, const int8_t *force,
                                     ts_sched_plan_t **out);

/*
 * For every non-arithmetic operator i of plan p: the predicted total of the
 * best plan (same policy and costs) in which operator i alone uses the scheme
 * it does NOT use in p (INFINITY when no such plan exists); NAN for the other
 * operators. One forward and one backward pass over the DAG, not one solve
 * per operator. alt has ts_sched_graph_count(g) entries.
 */
ts_status_t ts_sched_plan_alternatives(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                       const ts_sched_costs_t *costs, double *alt);

/*
 * The plan an executing engine follows (instead of the shortest path): each
 * primitive where op->pin puts it (unpinned ones: TFHE under policy tfhe,
 * else CKKS), and levels as the engine manages them, lazily: before an
 * operator, an input below its need (need_level, the depth, or for TFHE the
 * conversion's input level) is bootstrapped to `boot_level` (in place when
 * the op's inplace bit says so; a TFHE input once per conversion, on a
 * copy; operands in order, so a value given twice, once as a copy, may be
 * bootstrapped twice); binary operators drop both inputs to the lower level
 * (in place per inplace); a CKKS operator leaves its result depth levels lower; a TFHE one
 * at its recovery level. Fresh inputs (TS_SCHED_FRESH) start at
 * `input_level`. Nothing is dropped on purpose, so the plan predicts exactly
 * the bootstraps, conversions and look-ups (n_boot, n_convert, n_lookup) of
 * an engine that follows these rules (core/llm builds such a graph for its
 * decode step). Levels below 0 are TS_ELEVEL (infeasible), as is a need
 * above boot_level. boot_level / input_level <= 0: costs->boot_output_level.
 * [out] *out (ts_sched_plan_free); p->engine is set. TS_EINVAL, TS_ELEVEL
 * (msg, may be NULL, says where), TS_ENOMEM.
 */
ts_status_t ts_sched_plan_new_engine(const ts_sched_graph_t *g, const ts_sched_costs_t *costs,
                                     ts_sched_policy_t policy, int input_level, int boot_level,
                                     ts_sched_plan_t **out, char *msg, size_t msg_size);

/*
 * Check a plan against its graph and costs (engine plans: replayed and
 * compared step by step): every level in range and not
 * below the operator's depth, inputs available at the levels claimed,
 * schemes allowed by the policy, totals consistent. TS_ELEVEL / TS_EINVAL
 * with a reason in msg (may be NULL).
 */
ts_status_t ts_sched_plan_check(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                const ts_sched_costs_t *costs, char *msg, size_t msg_size);

/*
 * The plan as JSON (one object: policy, costs, totals, rotation steps, and an
 * array of steps with name, kind, layer, scheme, impl, levels, bootstraps,
 * predicted ns). [out] *json NUL-terminated, ts_free() it; *len may be NULL.
 */
ts_status_t ts_sched_plan_to_json(const ts_sched_plan_t *p, const ts_sched_graph_t *g, char **json,
                                  size_t *len);

/*
 * A readable explanation: totals by category, and for every non-arithmetic
 * primitive why it is where it is: the cost delta of the whole plan when that
 * one primitive is forced to the other scheme (re-solved with the same
 * costs). [out] *text, ts_free() it.
 */
ts_status_t ts_sched_plan_explain(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                  const ts_sched_costs_t *costs, char **text, size_t *len);
/*
 * The same with the alternatives given by the caller: alt[i] (g's operator
 * count entries) is the predicted total when operator i is moved to the other
 * scheme (NAN: not applicable, INFINITY: infeasible); `why` (may be NULL) is
 * printed as the line that says what alt means. For engine plans, whose
 * engine moves a primitive kind in every layer at once (core/llm computes
 * them by re-planning the engine with that kind flipped).
 */
ts_status_t ts_sched_plan_explain_alt(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                      const ts_sched_costs_t *costs, const double *alt,
                                      const char *why, char **text, size_t *len);

/*
 * The graph itself for people and tools (issue 7): JSON (one node per
 * operator: id, kind, name, layer, arithmetic or not, input value ids with
 * "fresh" for client ciphertexts, shape, input range of non-arithmetic
 * primitives) or Graphviz dot (non-arithmetic primitives filled). [out] the
 * NUL-terminated text, ts_free() it; *len may be NULL. TS_EINVAL, TS_ENOMEM.
 */
ts_status_t ts_sched_graph_to_json(const ts_sched_graph_t *g, char **json, size_t *len);
ts_status_t ts_sched_graph_to_dot(const ts_sched_graph_t *g, char **dot, size_t *len);

/* --------------------------------------------------------- wire format */

/*
 * SHA-256 of the canonical encoding of a graph (every operator field and its
 * rotation steps). Two parties that build the graph from the same public
 * model shape get the same digest.
 */
ts_status_t ts_sched_graph_digest(const ts_sched_graph_t *g, uint8_t out[32]);

/*
 * A plan and the cost table it was made with, in a core/serial envelope of
 * type TS_OBJ_SCHED_PLAN whose parameter id is the graph digest.
 * [out] *out (ts_free), *out_size.
 */
ts_status_t ts_sched_plan_serialize(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                    const ts_sched_costs_t *costs, uint8_t **out, size_t *out_size);
/*
 * Open a serialized plan against the graph the receiver built itself:
 * TS_EMISMATCH when it was made for another graph, TS_EFORMAT for anything
 * malformed, an invalid cost table, or a plan that ts_sched_plan_check
 * rejects (levels, schemes, policy, totals). Rotation steps and totals are
 * recomputed from the graph, not taken from the bytes.
 * [out] *out (ts_sched_plan_free); costs_out (may be NULL) gets the table.
 */
ts_status_t ts_sched_plan_deserialize(const void *data, size_t size, const ts_sched_graph_t *g,
                                      ts_sched_plan_t **out, ts_sched_costs_t *costs_out);

#ifdef __cplusplus
}
#endif

#endif /* TS_SCHED_H */

/*
 * Encrypted decode benchmark (JSON): per-position latency of the private
 * decode path as the daemon runs it (one-hot embedding, ts_llm_enc_step,
 * sanitization) and its breakdown by stage (embed, matvec, attention,
 * nonlinear, bootstrap, convert, other, sanitize), bootstraps, and the logits'
 * error against the float reference (max abs error, bits below max |logit|,
 * argmax agreement). In process, without the network (the wire adds one
 * ciphertext each way; see tests/unit/test_net_decode.c).
 *
 * Cases: tiny (the synthetic model of tests/unit/llm_tiny.h at test-llm-tiny,
 * no bootstrapping; --quick: 2 positions, else 8), unless --quick the tiny
 * GPT-2 of the same header likewise (8 positions), and, unless --quick,
 * aidreams260K at test-boot-n12 with bootstrapping for --aidreams-positions
 * positions (default 1; about 200 s each on a loaded 2-core machine).
 *
 * --context L[,L...] measures the step at position L-1 instead: the plaintext
 * model decodes BOS and its greedy continuation up to position L-1, the client
 * encrypts the plaintext KV cache of positions [0, L-1) in the engine's layout
 * (ts_llm_enc_cache_encrypt), the session installs it
 * (ts_llm_enc_session_set_cache), and only the step at L-1 runs encrypted.
 * A benchmark method, not a private path (the client never has the weights);
 * the step it times is the one the engine would run at that position.
 *
 * `tessera bench decode` (client/cmd_bench.c) and build/bench/bench_decode
 * (tests/bench/bench_decode.c) both run ts_bench_decode below.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "client/llm_cli.h"
#include "core/convert/convert.h"
#include "core/llm/llm.h"
#include "tests/unit/llm_tiny.h"

#define NSTAGE 8

static const char *stage_names[NSTAGE] = {"embed",     "matvec",  "attention", "nonlinear",
                                          "bootstrap", "convert", "other",     "sanitize"};

typedef struct {
    int pos, token;
    double ms, st[NSTAGE];
    uint64_t boots, boots_pd, convs, lookups;
    ts_backend_counts_t bk; /* the embedding's and the step's backend calls and transfers */
    double boot_ph[TS_BOOT_PHASE_COUNT]; /* its bootstraps' phases (ts_boot_profile), ms */
    double err, bits;
    /* a prefill pass: the largest error over every lane's logits against
     * the plaintext model's at that lane's position, and its lane (-1: none) */
    double lanes_err;
    int lanes_err_lane;
    int lanes_agree; /* lanes whose encrypted argmax is the plaintext's */
    int am_enc, am_ref;
    /* the scheduler's engine plan of this step (--costs): predicted latency per
     * engine stage (index = ts_llm_stage_t) and counts */
    bool pred;
    double mst[TS_LLM_STAGE_COUNT]; /* measured engine stages, embedding included, ms */
    double pred_ms, pred_st[TS_LLM_STAGE_COUNT];
    uint32_t pred_boots, pred_convs, pred_lookups;
    int ctx;           /* > 0: the step at ctx - 1 after a prefill of [0, ctx - 1) */
    int after;         /* --after: the a-th ordinary step after the prefill pass (0: none) */
    double prefill_ms; /* client encryption and installation of the prefilled caches */
    /* --noise: log2 of the unsanitized logits' coefficients at level 0 (rms,
     * max |.|) outside the sparse packing's subring (noise alone), and of
     * their difference from the previous record's at the same position and
     * token (a second run; NAN without one) over the whole polynomial */
    bool noise;
    double nz_off_rms, nz_off_max, nz_diff_rms, nz_diff_max, nz_b; /* nz_b: log2 B */
    /* the run difference on the logits' own subring (period pow2(vocab):
     * every N / (2 pv)-th coefficient): log2 rms and max; and what Gaussian
     * flooding sized by Renyi divergence would cost (rd_flood below) */
    double nz_sub_rms, nz_sub_max, nz_l2; /* nz_l2: one run's l2 on that subring */
    double rd_sigma_full, rd_err_full, rd_sigma_sub, rd_err_sub;
    /* --noise-trace: per probe point of the step, the run difference from the
     * previous record's at the same position and token (NULL without one) */
    struct tr_row *tr;
    int n_tr;
} pos_t;

/* A probe point's values in one run and their difference from the previous
 * run's (--noise-trace): rms of the slots' real parts, log2 of the rms and
 * of the max of the difference, and the bits between them (rms / diff rms) */
typedef struct tr_row {
    const char *point;
    int layer, level;
    double rms, max, diff_rms, diff_max, bits;
    double bound; /* a bootstrap's bound (its output's points), else 0 */
} tr_row_t;

typedef struct {
    char model[64], params[64];
    bool boot;
    ts_sched_policy_t policy;
    int n;
    pos_t p[64];
    double keygen_ms, key_mib, key_mem_mib;
    int lambda;
    ts_llm_sanitize_info_t san; /* the plan the steps were sanitized with */
    double err_bound;
    int max_ctx;         /* the session's context limit: sizes the working slots */
    int n_ctx, ctxs[8];  /* contexts: each runs only the step at L - 1, after a prefill */
    int max_pos;         /* the session's positions */
    int slots;           /* the engine's working slot count (out) */
    int period_slots;    /* the residual stream's bootstrap slots (out; 0: the working ones) */
    int boot_dft[2];     /* the bootstrapper's DFT level budgets (out; 0: none) */
    bool norm_defer;     /* the step's norms deferred (out) */
    int act_degree;      /* the FFN activation's Chebyshev degree (out) */
    int rsqrt_degree;    /* the norms' 1/sqrt's (out; 0: not a CKKS interpolant) */
    unsigned tfhe_kinds; /* the primitive kinds the engine runs in TFHE (out) */
    bool best;           /* hybrid with --costs: the cheapest assignment under the table */
    int kinds;           /* --kinds: the policy's structure with these kinds in TFHE (-1: none) */
    ts_status_t st;
} case_t;

/* --no-period-boot: the residual stream bootstraps at the working slots too */
static bool g_period_boot = true;
/* --boot-dft C:S: the main bootstrapper's DFT level budgets (-1: as tesserad
 * chooses them, ts_llm_enc_boot_budgets; 0:0 ts_boot_config_slots's) */
static int g_boot_cts = -1, g_boot_stc = -1;
/* --norm-defer on|off: force the step's deferred norms (-1: the engine's choice) */
static int g_norm_defer = -1;
/* --no-refine: the policy's approximations as they are (not the finer ones
 * tesserad takes where its plans show them free, ts_llm_enc_config_refine) */
static bool g_refine = true;
/* --cache-only: the timed step is a cache-only one (ts_llm_enc_step_cache: a
 * prompt position before the last; no logits, so no precision or argmax) */
static bool g_cache_only = false;
/* --prefill N (with --context L): the timed operation is one prefill pass of
 * positions [L - N, L) in an engine of N lanes (ts_llm_enc_prefill; 0: off) */
static int g_prefill = 0;
/* --lanes N: an engine of N lanes whose timed step is an ordinary one (every
 * lane at the step's position: what a session of a prefill_lanes model pays
 * per generated token; 0: one lane, or --prefill's) */
static int g_lanes = 0;
/* --after K (with --prefill): K ordinary steps after each prefill pass, every
 * lane at the next position: what the prefill leaves each generated token */
static int g_after = 0;
/* --step-before (with --prefill): one ordinary step at L - N - 1 before the
 * pass (untimed): the cache then holds a step's rows, as in a generation */
static bool g_step_before = false;
/* --pass-before (with --prefill N): one more pass of N lanes before the timed
 * one (untimed; after --step-before's step): the cache then holds a pass's
 * rows, and what that pass refreshed of it (consecutive speculative passes) */
static bool g_pass_before = false;
/* --prompt-ids LIST: the context's tokens (BOS first) instead of the greedy
 * continuation of BOS, as far as they go */
static int g_ids[TS_LLM_MAX_SEQ], g_n_ids = 0;
/* --noise: measure the coefficients of the logits before sanitization */
static bool g_noise = false;
/* --noise-trace: decrypt the step's intermediate values at the engine's probe
 * points (ts_llm_enc_session_set_probe) and compare two runs */
static bool g_trace = false;

/* One run's decrypted values at the probe points (--noise-trace) */
typedef struct {
    const char *point;
    int layer, level;
    size_t n;
    double *v;    /* real parts of the ciphertext's slots (decryptions: wiped) */
    double bound; /* the session's bootstrap bound there (ts_llm_enc_session_bound) */
} tr_pt_t;

typedef struct {
    const ts_ckks_secret_key_t *sk;
    const ts_llm_enc_session_t *s; /* the probed session (its bootstrap bound) */
    ts_ckks_encoder_t *ecd;
    ts_ckks_params_t *p;
    tr_pt_t *pts;
    int n, cap;
    uint64_t ns; /* time spent decrypting (not the step's) */
    ts_status_t st;
} trace_t;

static void trace_clear(trace_t *t)
{
    for (int i = 0; i < t->n; i++)
        ts_free_secret(t->pts[i].v);
    t->n = 0;
    t->ns = 0;
    t->st = TS_OK;
}

static void trace_free(trace_t *t)
{
    trace_clear(t);
    free(t->pts);
    t->pts = NULL;
    t->cap = 0;
}

/* ts_llm_enc_probe_fn: decrypt and decode ct, keep the slots' real parts */
static void trace_probe(void *ctx, const char *point, int layer, const ts_ckks_ciphertext_t *ct)
{
    trace_t *t = ctx;
    uint64_t t0 = ts_now_ns();
    size_t n = ts_ckks_ciphertext_slots(ct);
    int level = ts_ckks_ciphertext_level(ct);
    ts_ckks_plaintext_t *pt = NULL;
    double *v = NULL;
    ts_status_t st = TS_OK;
    if (t->st != TS_OK)
        return;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        tr_pt_t *np = realloc(t->pts, (size_t)cap * sizeof *np);
        if (!np) {
            t->st = TS_ENOMEM;
            return;
        }
        t->pts = np;
        t->cap = cap;
    }
    if (!(v = ts_malloc(n * sizeof *v)))
        st = TS_ENOMEM;
    if (st == TS_OK)
        st = ts_ckks_plaintext_new(t->p, level, &pt);
    if (st == TS_OK)
        st = ts_ckks_decrypt(t->sk, ct, pt);
    if (st == TS_OK)
        st = ts_ckks_decode_real(t->ecd, pt, v, n);
    ts_ckks_plaintext_free(pt);
    if (st != TS_OK) {
        ts_free_secret(v);
        t->st = st;
        return;
    }
    t->pts[t->n++] = (tr_pt_t){point, layer, level, n, v, ts_llm_enc_session_bound(t->s)};
    t->ns += ts_now_ns() - t0;
}

/* The rows of two runs' traces (the same points in the same order), or
 * TS_EMISMATCH */
static ts_status_t trace_diff(const trace_t *a, const trace_t *b, tr_row_t **out, int *n_out)
{
    if (a->n != b->n || a->n == 0)
        return TS_EMISMATCH;
    tr_row_t *r = calloc((size_t)a->n, sizeof *r);
    if (!r)
        return TS_ENOMEM;
    for (int i = 0; i < a->n; i++) {
        const tr_pt_t *x = &a->pts[i], *y = &b->pts[i];
        if (strcmp(x->point, y->point) || x->layer != y->layer || x->n != y->n) {
            free(r);
            return TS_EMISMATCH;
        }
        double ss = 0, sd = 0, md = 0, mx = 0;
        for (size_t j = 0; j < x->n; j++) {
            double d = x->v[j] - y->v[j];
            ss += x->v[j] * x->v[j];
            sd += d * d;
            md = fmax(md, fabs(d));
            mx = fmax(mx, fabs(x->v[j]));
        }
        double rms = sqrt(ss / (double)x->n), drms = sqrt(sd / (double)x->n);
        bool boot = !strncmp(x->point, "boot", 4);
        r[i] = (tr_row_t){x->point,
                          x->layer,
                          x->level,
                          rms,
                          mx,
                          log2(drms),
                          log2(md),
                          log2(rms / drms),
                          boot ? x->bound : 0.0};
    }
    *out = r;
    *n_out = a->n;
    return TS_OK;
}
/* --sanitize-l2 X [--sanitize-queries Q]: the Renyi mode (X > 0: the stated
 * l2 bound of the logits' noise, log2; Q: log2 of the replies it covers) */
static double g_san_l2 = 0.0, g_san_q = 12.0;

/*
 * A prefill pass's lanes: each lane's encrypted and plaintext argmax, the
 * plaintext's margin (its top logit over its second) and, where the two
 * argmaxes differ, by how much the encrypted logits prefer their choice:
 * a flip at a margin below the engine's per-logit error is a near-tie.
 * dl: nl x V decrypted logits, ref: nl x V plaintext logits (lane l at
 * position pos + l); lane: V floats of scratch. Counts the agreeing lanes in q->lanes_agree.
 */
static void print_lanes_argmax(const double *dl, const float *ref, float *lane, int nl, int V,
                               int pos, pos_t *q)
{
    q->lanes_agree = 0;
    for (int l = 0; l < nl; l++) {
        const float *r = ref + (size_t)l * (size_t)V;
        for (int i = 0; i < V; i++)
            lane[i] = (float)dl[(size_t)l * (size_t)V + (size_t)i];
        int ae = ts_llm_argmax(lane, V), ar = ts_llm_argmax(r, V);
        q->lanes_agree += ae == ar;
        fprintf(stderr,
                "bench decode: lane %d (pos %d): argmax %d/%d (encrypted/plaintext), "
                "plaintext margin %.4f",
                l, pos + l, ae, ar, ts_llm_logit_margin(r, V));
        if (ae != ar)
            fprintf(stderr, ", encrypted %d over %d by %.4f (plaintext %d over %d by %.4f)", ae, ar,
                    (double)lane[ae] - lane[ar], ar, ae, (double)r[ar] - r[ae]);
        fprintf(stderr, "\n");
    }
}

static double ms_since(uint64_t t0)
{
    return (double)(ts_now_ns() - t0) / 1e6;
}

/* log2 of the rms and of the max |.| of v[i] over i with (i % gap != 0) ==
 * off (off: the coefficients outside the subring of X^gap; gap 1: all) */
static void coeff_stats(const int64_t *v, size_t n, size_t gap, bool off, double *rms, double *mx)
{
    double ss = 0, m = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (gap > 1 && (i % gap != 0) != off)
            continue;
        double a = fabs((double)v[i]);
        ss += a * a;
        m = fmax(m, a);
        k++;
    }
    *rms = k && ss > 0 ? 0.5 * log2(ss / (double)k) : -INFINITY;
    *mx = m > 0 ? log2(m) : -INFINITY;
}

/*
 * --noise: Gaussian flooding sized by Renyi divergence (docs/SECURITY.md).
 * The logits decrypt to m + e + f (m: the approximate logits, e: the noise
 * the computation left, f: the flood, iid Gaussian of sigma per
 * coefficient); the client's view with e and without it differ in Renyi
 * divergence of order 2 by exp(||e||^2 / sigma^2) per query, so Q queries
 * stay within R = 2 (any search problem, e.g. finding a weight, succeeds
 * with at most sqrt(2 p) where p is its probability without e) when sigma =
 * ||e|| sqrt(Q / ln 2) (ts_llm_sanitize_plan_rd). ||e|| is estimated from
 * two runs' difference d (two independent draws of e: ||e|| ~ ||d|| /
 * sqrt 2) over the coefficients the client sees: all N (flooding without
 * the projection: the plan at the working slots as its "period"), or only
 * the logits' subring of 2 pv coefficients (the Renyi mode: the plan at pv).
 * Values in log2; NAN where the preset cannot plan it.
 */
#define RD_QUERIES_LOG2 12.0
static void rd_flood(ts_ckks_params_t *p, double l2_log2, size_t slots, double *sigma, double *err)
{
    ts_llm_sanitize_info_t i;
    bool ok = ts_llm_sanitize_plan_rd(p, 0, (int)slots, l2_log2, RD_QUERIES_LOG2, &i) == TS_OK;
    *sigma = ok ? i.sigma_log2 : NAN;
    *err = ok ? log2(i.err_bound / 6.0) : NAN; /* one sigma */
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((st = (x)) != TS_OK) {                                                                 \
            fprintf(stderr, "bench decode: %s: %s\n", #x, ts_status_name(st));                     \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* The engine's plan of session s's step (or, from, its prefill pass: from
 * the session's caches as they are) at pos under costs. */
static void predict(ts_llm_enc_session_t *s, const ts_sched_costs_t *costs, ts_sched_policy_t pol,
                    int from, bool prefill, pos_t *q)
{
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *p = NULL;
    char msg[256] = "";
    /* the daemon's path: one-hot input embedded on the server, then the step */
    ts_status_t st =
        ts_llm_enc_session_plan(s, from,
                                TS_LLM_PLAN_ONEHOT | (g_cache_only ? TS_LLM_PLAN_CACHE_ONLY : 0u) |
                                    (prefill ? TS_LLM_PLAN_PREFILL : 0u),
                                costs, pol, &g, &p, msg, sizeof msg);
    if (st != TS_OK) {
        fprintf(stderr, "bench decode: no plan for pos %d: %s %s\n", from, ts_status_name(st), msg);
        return;
    }
    q->pred = true;
    q->pred_ms = p->total_ns / 1e6;
    ts_llm_enc_plan_stages(p, g, q->pred_st);
    for (int i = 0; i < TS_LLM_STAGE_COUNT; i++)
        q->pred_st[i] /= 1e6;
    q->pred_boots = p->n_boot;
    q->pred_convs = p->n_convert;
    q->pred_lookups = p->n_lookup;
    ts_sched_plan_free(p);
    ts_sched_graph_free(g);
}

/* The measured embedding and step (the engine's stages, without sanitization). */
static double step_ms(const pos_t *q)
{
    double t = 0;
    for (int i = 0; i < TS_LLM_STAGE_COUNT; i++)
        t += q->mst[i];
    return t;
}

/* A decode session of enc on ev, with the TFHE side when cv (*out NULL on
 * failure). */
static ts_status_t session_open(const ts_llm_enc_t *enc, ts_ckks_evaluator_t *ev, ts_convert_t *cv,
                                const ts_boot_t *stc, ts_llm_enc_session_t **out)
{
    ts_status_t st = ts_llm_enc_session_new(enc, ev, out);
    if (st == TS_OK && cv && (st = ts_llm_enc_session_set_tfhe(*out, cv, stc)) != TS_OK) {
        ts_llm_enc_session_free(*out);
        *out = NULL;
    }
    return st;
}

/* The phases of the n bootstrappers b (NULL entries skipped), summed. */
static ts_status_t boot_phases_sum(const ts_boot_t *const *b, int n, ts_boot_phases_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        ts_boot_phases_t one;
        ts_status_t st = b[i] ? ts_boot_phases(b[i], &one) : TS_OK;
        if (st != TS_OK)
            return st;
        for (int j = 0; b[i] && j < TS_BOOT_PHASE_COUNT; j++)
            out->ns[j] += one.ns[j];
    }
    return TS_OK;
}

static ts_status_t run_case(case_t *k, const char *model_path, const char *approx,
                            const int *tokens, int n, const ts_sched_costs_t *costs)
{
    ts_status_t st = TS_OK;
    ts_llm_model_t *m = NULL;
    ts_ckks_params_t *p = NULL;
    ts_prng_t *prng = NULL;
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_public_key_t *pk = NULL;
    ts_ckks_evalkeys_t *ek = NULL;
    ts_boot_t *boot = NULL, *stc = NULL, *boot_pd = NULL;
    ts_boot_encap_keys_t *encap = NULL;
    ts_convert_t *cv = NULL;
    ts_llm_enc_t *enc = NULL;
    ts_ckks_evaluator_t *ev = NULL;
    ts_ckks_encoder_t *ecd = NULL;
    ts_llm_enc_session_t *s = NULL;
    ts_llm_state_t *ref = NULL;
    ts_ckks_ciphertext_t *x = NULL, *y = NULL, *lg = NULL;
    ts_ckks_ciphertext_t **kc = NULL, **vc = NULL;
    int *ctx_toks = NULL, n_layers = 0;
    float *lane_ref = NULL; /* a timed prefill's lanes' plaintext logits, V each */
    int64_t *steps = NULL;
    int64_t *nz_cur = NULL, *nz_prev = NULL; /* --noise: this and the previous run's */
    int nz_pos = -1, nz_tok = -1;
    trace_t tr[2] = {{0}}; /* --noise-trace: this run's [cur] and the previous one's */
    int cur = 0, tr_pos = -1, tr_tok = -1;
    float *logits = NULL;
    char path[600];
    TRY(ts_llm_model_load(model_path, &m, NULL, 0));
    snprintf(path, sizeof path, "configs/params/%s.yaml", k->params);
    TRY(ts_ckks_params_load_file(path, true, &p, NULL));
    ts_llm_enc_config_t cfg;
    int log_slots = ts_llm_enc_log_slots_for(m, p, k->max_ctx);
    if (k->kinds >= 0)
        ts_llm_enc_config_kinds(&cfg, k->policy, (1 << log_slots) / 64, (unsigned)k->kinds);
    else
        ts_llm_enc_config_policy(&cfg, k->policy, (1 << log_slots) / 64);
    if (approx && k->policy == TS_SCHED_CKKS) {
        ts_llm_sim_config_t sim;
        char err[256] = "";
        ts_llm_enc_config_to_sim(&cfg, &sim);
        TRY(ts_llm_sim_config_load(approx, &sim, err, sizeof err));
        ts_llm_enc_config_from_sim(&sim, &cfg);
    }
    cfg.log_slots = log_slots;
    int log_lanes = 0;
    int lanes = g_prefill ? g_prefill : g_lanes;
    while ((1 << log_lanes) < lanes)
        log_lanes++;
    cfg.lanes = lanes;
    if (log_slots + log_lanes > ts_ckks_params_log_slots(p))
        log_slots = ts_ckks_params_log_slots(p) - log_lanes; /* fewer positions per lane */
    cfg.log_slots = log_slots;
    if (costs && k->policy == TS_SCHED_HYBRID && k->kinds < 0 && !g_prefill) {
        /* the hybrid policy as the scheduler places it: the cheapest assignment
         * of primitive kinds under the table, at the last position timed */
        int mp = ts_llm_enc_positions_for(m, log_slots), last = 0;
        for (int ci = 0; ci < k->n_ctx; ci++)
            if (k->ctxs[ci] - 1 > last)
                last = k->ctxs[ci] - 1;
        if (k->n_ctx == 0)
            last = n - 1;
        if (mp > k->max_ctx)
            mp = k->max_ctx;
        if (last >= mp)
            last = mp - 1;
        TRY(ts_llm_enc_config_best(m, p, NULL, log_slots, mp, last < 0 ? 0 : last,
                                   TS_LLM_PLAN_ONEHOT |
                                       (g_period_boot ? TS_LLM_PLAN_PERIOD_BOOT : 0u),
                                   costs, &cfg, NULL));
        k->best = true;
    }
    /* --boot-dft: the bootstrapper's DFT budgets as given (A/B runs) */
    cfg.boot_budgets_fixed = g_boot_cts >= 0;
    if (g_boot_cts >= 0) {
        cfg.boot_cts_levels = g_boot_cts;
        cfg.boot_stc_levels = g_boot_stc;
    }
    bool refine = g_refine && !approx && k->kinds < 0 && k->policy == TS_SCHED_CKKS;
    if (refine) {
        /* the finer approximations where free, as tesserad takes them */
        int mp = ts_llm_enc_positions_for(m, log_slots);
        ts_status_t sr = ts_llm_enc_config_refine(
            m, p, &cfg, mp < k->max_ctx ? mp : k->max_ctx,
            TS_LLM_PLAN_ONEHOT | (g_period_boot ? TS_LLM_PLAN_PERIOD_BOOT : 0u));
        if (sr == TS_ENOMEM)
            TRY(sr);
    }
    k->act_degree = ts_llm_enc_config_act(&cfg, m)->degree;
    k->rsqrt_degree = cfg.eval_rsqrt == TS_LLM_EVAL_CKKS ? cfg.rsqrt.degree : 0;
    if (k->policy == TS_SCHED_CKKS)
        fprintf(stderr, "bench decode: %s %s: %s at degree %d, the norms' 1/sqrt at %d%s\n",
                k->model, k->params,
                ts_llm_model_config(m)->arch == TS_LLM_ARCH_GPT2 ? "GELU" : "SiLU", k->act_degree,
                k->rsqrt_degree, refine ? " (finer where free)" : "");
    /* the kinds this model evaluates (its FFN activation: SiLU or GELU) */
    k->tfhe_kinds = ts_llm_enc_config_tfhe_kinds(&cfg) &
                    ~(1u << (ts_llm_model_config(m)->arch == TS_LLM_ARCH_GPT2 ? TS_LLM_KIND_SILU
                                                                              : TS_LLM_KIND_GELU));
    uint64_t t0 = ts_now_ns();
    TRY(ts_prng_new_os(&prng));
    TRY(ts_ckks_keygen_secret(p, prng, &sk));
    TRY(ts_ckks_keygen_public(sk, prng, &pk));
    TRY(ts_ckks_evalkeys_new(p, &ek));
    TRY(ts_ckks_evalkeys_gen_relin(ek, sk, prng));
    if (k->boot) {
        ts_boot_config_t bc;
        /* the DFT level budgets as tesserad chooses them (fixed above for
         * --boot-dft and the Renyi mode) */
        int mp = ts_llm_enc_positions_for(m, log_slots);
        TRY(ts_llm_enc_boot_budgets(m, p, &cfg, mp < k->max_ctx ? mp : k->max_ctx,
                                    TS_LLM_PLAN_ONEHOT |
                                        (g_period_boot ? TS_LLM_PLAN_PERIOD_BOOT : 0u),
                                    &cfg.boot_cts_levels, &cfg.boot_stc_levels));
        /* dense-secret presets bootstrap with sparse-secret encapsulation */
        bool dense = ts_llm_boot_encap_h(p) > 0;
        TRY(ts_llm_boot_config(p, log_slots + log_lanes, ts_llm_boot_encap_h(p),
                               cfg.boot_cts_levels, cfg.boot_stc_levels,
                               &bc)); /* (the lanes' slots) */
        k->boot_dft[0] = bc.cts_levels;
        k->boot_dft[1] = bc.stc_levels;
        TRY(ts_boot_keygen(p, &bc, ek, sk, prng));
        TRY(ts_boot_new(p, &bc, &boot));
        if (dense) {
            TRY(ts_boot_encap_keygen(p, &bc, sk, prng, &encap));
            TRY(ts_boot_set_encap_keys(boot, encap));
        }
    }
    TRY(ts_llm_enc_new(m, p, &cfg, boot, &enc));
    if (g_norm_defer >= 0)
        TRY(ts_llm_enc_set_norm_defer(enc, g_norm_defer == 1));
    k->norm_defer = ts_llm_enc_norm_defer(enc);
    ts_boot_config_t pc;
    if (boot && g_period_boot && ts_llm_enc_period_boot_config(enc, &pc) == TS_OK) {
        /* the residual stream's bootstrapper at pow2(dim) slots, as tesserad's */
        TRY(ts_boot_keygen(p, &pc, ek, sk, prng));
        TRY(ts_boot_new(p, &pc, &boot_pd));
        if (encap)
            TRY(ts_boot_set_encap_keys(boot_pd, encap));
        TRY(ts_llm_enc_set_boot_period(enc, boot_pd));
        k->period_slots = 1 << pc.log_slots;
    }
    k->slots = ts_llm_enc_slots(enc);
    k->max_pos = ts_llm_enc_max_positions(enc);
    for (int ci = 0; ci < k->n_ctx; ci++)
        if (k->ctxs[ci] > k->max_pos) {
            fprintf(stderr,
                    "bench decode: context %d does not fit the session (%d positions: %d working "
                    "slots at %s, --max-context %d)\n",
                    k->ctxs[ci], k->max_pos, k->slots, k->params, k->max_ctx);
            st = TS_ERANGE;
            goto out;
        }
    if (ts_llm_enc_uses_tfhe(enc)) {
        /* the TFHE side: StC-first bootstrapper keys and conversion keys */
        ts_boot_config_t sc;
        TRY(ts_llm_enc_tfhe_boot_config(enc, &sc));
        TRY(ts_boot_keygen(p, &sc, ek, sk, prng));
        TRY(ts_boot_new(p, &sc, &stc));
        if (encap)
            TRY(ts_boot_set_encap_keys(stc, encap));
        ts_tfhe_params_lit_t lit;
        TRY(ts_llm_enc_tfhe_literal(enc, &lit));
        TRY(ts_convert_keygen(p, sk, &lit, prng, &cv));
    }
    size_t ns = 0;
    TRY(ts_llm_enc_rotation_steps(enc, NULL, &ns));
    steps = calloc(ns ? ns : 1, sizeof *steps);
    if (!steps) {
        st = TS_ENOMEM;
        goto out;
    }
    TRY(ts_llm_enc_rotation_steps(enc, steps, &ns));
    {
        /* keys capped at the engine's rotation level (a quarter of a full key's
         * memory at N = 2^16); bootstrapping's own keys keep theirs */
        int lv = ts_llm_enc_rotation_level(enc);
        int *levels = calloc(ns ? ns : 1, sizeof *levels);
        if (!levels) {
            st = TS_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < ns; i++)
            levels[i] = lv;
        st = ts_ckks_evalkeys_gen_rotations_at(ek, sk, steps, levels, ns, prng);
        free(levels);
        TRY(st);
        if (g_san_l2 > 0) {
            /* the Renyi mode's projection, at the logits' level 0 */
            int64_t ps[64];
            int pl[64] = {0};
            size_t np = 64;
            TRY(ts_ckks_trace_steps(p, (size_t)ts_llm_enc_logits_period(enc), ps, &np));
            TRY(ts_ckks_evalkeys_gen_rotations_at(ek, sk, ps, pl, np, prng));
        }
    }
    k->keygen_ms = ms_since(t0);
    k->key_mem_mib = (double)ts_ckks_evalkeys_bytes(ek) / 1048576.0;
    k->key_mib = -1; /* serialized size: measured below 2 GiB of keys (the copy doubles them) */
    if (k->key_mem_mib < 2048) {
        uint8_t *b = NULL;
        size_t n1 = 0, n2 = 0;
        if (ts_ckks_galois_keys_serialize(ek, 0, &b, &n1) == TS_OK)
            ts_free(b);
        b = NULL;
        if (ts_ckks_relin_key_serialize(ek, 0, &b, &n2) == TS_OK)
            ts_free(b);
        k->key_mib = (double)(n1 + n2) / 1048576.0;
    }
    TRY(ts_ckks_evaluator_new(p, ek, &ev));
    TRY(ts_ckks_encoder_new(p, &ecd));
    TRY(session_open(enc, ev, cv, stc, &s));
    /* the bootstraps' phases, per step (each bootstrapper's, summed) */
    const ts_boot_t *boots[3] = {boot, boot_pd, stc};
    for (int i = 0; i < 3; i++)
        if (boots[i])
            TRY(ts_boot_profile(boots[i], true));
    for (int i = 0; i < 2; i++)
        tr[i] = (trace_t){.sk = sk, .ecd = ecd, .p = p};
    TRY(ts_llm_state_new(m, &ref));
    TRY(ts_ckks_ciphertext_new(p, 0, &x));
    TRY(ts_ckks_ciphertext_new(p, 0, &y));
    TRY(ts_ckks_ciphertext_new(p, 0, &lg));
    int V = ts_llm_model_config(m)->vocab_size;
    logits = calloc((size_t)V, sizeof *logits);
    if (!logits) {
        st = TS_ENOMEM;
        goto out;
    }
    ts_llm_sanitize_info_t info;
    if (g_san_l2 > 0)
        TRY(ts_llm_sanitize_plan_rd(p, 0, ts_llm_enc_logits_period(enc), g_san_l2, g_san_q, &info));
    else
        TRY(ts_llm_sanitize_plan(p, 0, k->lambda, &info));
    k->err_bound = info.err_bound;
    k->san = info;
    if (k->n_ctx > 0) {
        n_layers = ts_llm_model_config(m)->n_layers;
        ctx_toks = calloc((size_t)k->max_pos, sizeof *ctx_toks);
        if (g_prefill && !(lane_ref = calloc((size_t)V * (size_t)g_prefill, sizeof *lane_ref))) {
            st = TS_ENOMEM;
            goto out;
        }
        kc = calloc((size_t)n_layers, sizeof *kc);
        vc = calloc((size_t)n_layers, sizeof *vc);
        if (!ctx_toks || !kc || !vc) {
            st = TS_ENOMEM;
            goto out;
        }
        for (int l = 0; l < n_layers; l++) {
            TRY(ts_ckks_ciphertext_new(p, 0, &kc[l]));
            TRY(ts_ckks_ciphertext_new(p, 0, &vc[l]));
        }
        tokens = ctx_toks;
        n = k->n_ctx;
    }
    for (int r = 0; r < n; r++) {
        int pos = r;
        pos_t *q = &k->p[k->n];
        if (k->n_ctx > 0) {
            /* the plaintext greedy decode from BOS (id 1) up to position L - 1 */
            int L = k->ctxs[r];
            const float *rl = NULL;
            ctx_toks[0] = 1;
            for (int i = 0; i + 1 < L; i++) {
                TRY(ts_llm_forward(m, ref, ctx_toks[i], i, &rl));
                ctx_toks[i + 1] = i + 1 < g_n_ids ? g_ids[i + 1] : ts_llm_argmax(rl, V);
                if (lane_ref && i >= L - g_prefill) /* a timed pass's lane before the last */
                    memcpy(lane_ref + (size_t)(i - (L - g_prefill)) * (size_t)V, rl,
                           (size_t)V * sizeof *lane_ref);
            }
            /* the client encrypts the plaintext K and V of [0, L - 1) (of
             * [0, L - N) before a prefill of N), the server installs them:
             * the session's next step is at L - 1 (L - N) */
            int first = g_prefill ? L - g_prefill - (g_step_before ? 1 : 0) -
                                        (g_pass_before ? g_prefill : 0)
                                  : L - 1;
            if (first < 0) {
                fprintf(stderr, "bench decode: --prefill %d needs --context >= %d\n", g_prefill,
                        g_prefill);
                st = TS_ERANGE;
                goto out;
            }
            uint64_t tp = ts_now_ns();
            int lv = ts_llm_enc_input_level(enc);
            for (int l = 0; l < n_layers && first > 0; l++) {
                const float *pk_rows = NULL, *pv_rows = NULL;
                int np = 0;
                TRY(ts_llm_state_kv(m, ref, l, &pk_rows, &pv_rows, &np));
                TRY(ts_llm_enc_cache_encrypt(enc, ecd, sk, prng, pk_rows, first, lv, kc[l]));
                TRY(ts_llm_enc_cache_encrypt(enc, ecd, sk, prng, pv_rows, first, lv, vc[l]));
            }
            if (first > 0) {
                TRY(ts_llm_enc_session_set_cache(s, (const ts_ckks_ciphertext_t *const *)kc,
                                                 (const ts_ckks_ciphertext_t *const *)vc, first));
            } else if (r > 0) {
                /* nothing to install: a fresh session (the last run's
                 * cache and next position go with the old one) */
                ts_llm_enc_session_free(s);
                s = NULL;
                TRY(session_open(enc, ev, cv, stc, &s));
            }
            q->prefill_ms = ms_since(tp);
            q->ctx = L;
            pos = first;
            if (g_prefill && g_step_before) {
                /* --step-before: an ordinary step at `first` (every lane there) */
                TRY(ts_llm_enc_encrypt_onehot(enc, ecd, sk, prng, tokens[pos], x));
                TRY(ts_llm_enc_embed(s, x, y));
                TRY(ts_llm_enc_step(s, y, pos, lg));
                pos++;
            }
            if (g_prefill && g_pass_before) {
                /* --pass-before: a pass of the same lanes before the timed one */
                TRY(ts_llm_enc_encrypt_onehot_lanes(enc, ecd, sk, prng, tokens + pos, x));
                TRY(ts_llm_enc_embed(s, x, y));
                TRY(ts_llm_enc_prefill(s, y, pos, g_prefill, g_cache_only ? NULL : lg));
                pos += g_prefill;
            }
        }
        /* --after K: K ordinary steps after the prefill, every lane at the
         * next position (the plaintext greedy token, or --prompt-ids') */
        int n_after = g_prefill && !g_cache_only && k->n_ctx > 0 ? g_after : 0;
        const float *rl = NULL; /* the plaintext logits at the last record's position */
        for (int a = 0; a <= n_after; a++) {
            bool pf = g_prefill && a == 0; /* this record is the prefill pass */
            if (a > 0) {
                if (k->n >= (int)(sizeof k->p / sizeof k->p[0]) || pos + 1 >= k->max_pos) {
                    fprintf(stderr, "bench decode: --after %d does not fit the session (%d)\n",
                            g_after, k->max_pos);
                    st = TS_ELIMIT;
                    goto out;
                }
                pos++;
                ctx_toks[pos] = pos < g_n_ids ? g_ids[pos] : ts_llm_argmax(rl, V);
                q = &k->p[k->n];
                memset(q, 0, sizeof *q);
                q->ctx = k->ctxs[r];
                q->after = a;
            }
            int last = pf ? pos + g_prefill - 1 : pos; /* the position whose logits we read */
            q->pos = last;
            q->token = tokens[last];
            if (costs)
                predict(s, costs, k->policy, pos, pf, q);
            ts_llm_enc_stats_t a0, b, c;
            if (pf)
                TRY(ts_llm_enc_encrypt_onehot_lanes(enc, ecd, sk, prng, tokens + pos, x));
            else
                TRY(ts_llm_enc_encrypt_onehot(enc, ecd, sk, prng, tokens[pos], x));
            if (g_trace) {
                trace_clear(&tr[cur]);
                tr[cur].s = s;
                ts_llm_enc_session_set_probe(s, trace_probe, &tr[cur]);
            }
            uint64_t t1 = ts_now_ns();
            ts_backend_t *be = ts_ring_backend(ts_ckks_params_ring(p));
            ts_backend_counts_t bk0;
            ts_backend_counts(be, &bk0);
            ts_boot_phases_t ph0, ph1;
            TRY(boot_phases_sum(boots, 3, &ph0));
            ts_llm_enc_session_stats(s, &a0);
            TRY(ts_llm_enc_embed(s, x, y));
            ts_llm_enc_session_stats(s, &b);
            q->st[0] = ms_since(t1);
            if (pf)
                TRY(ts_llm_enc_prefill(s, y, pos, g_prefill, g_cache_only ? NULL : lg));
            else if (g_cache_only)
                TRY(ts_llm_enc_step_cache(s, y, pos));
            else
                TRY(ts_llm_enc_step(s, y, pos, lg));
            ts_llm_enc_session_stats(s, &c);
            ts_backend_counts_since(be, &bk0, &q->bk);
            TRY(boot_phases_sum(boots, 3, &ph1));
            for (int j = 0; j < TS_BOOT_PHASE_COUNT; j++)
                q->boot_ph[j] = (double)(ph1.ns[j] - ph0.ns[j]) * 1e-6;
            uint64_t t2 = ts_now_ns();
            if (g_trace) {
                /* the probes' decryptions are charged to no stage; off the wall too */
                ts_llm_enc_session_set_probe(s, NULL, NULL);
                t1 += tr[cur].ns;
                TRY(tr[cur].st);
                if (tr_pos == last && tr_tok == tokens[last]) {
                    TRY(trace_diff(&tr[cur], &tr[1 - cur], &q->tr, &q->n_tr));
                    fprintf(stderr,
                            "bench decode: noise trace pos %d (two runs' difference "
                            "over the slots' real parts):\n"
                            "  %-12s %5s %5s %10s %10s %8s %9s %9s %6s\n",
                            last, "point", "layer", "level", "value rms", "value max", "bound",
                            "diff rms", "diff max", "bits");
                    for (int i = 0; i < q->n_tr; i++) {
                        const tr_row_t *w = &q->tr[i];
                        char bd[16] = "-";
                        if (w->bound > 0)
                            snprintf(bd, sizeof bd, "%g", w->bound);
                        fprintf(stderr,
                                "  %-12s %5d %5d %10.3g %10.3g %8s   2^%-6.2f  2^%-6.2f %6.2f\n",
                                w->point, w->layer, w->level, w->rms, w->max, bd, w->diff_rms,
                                w->diff_max, w->bits);
                    }
                }
                tr_pos = last;
                tr_tok = tokens[last];
                cur = 1 - cur;
            }
            if (g_noise && !g_cache_only) {
                /* the unsanitized logits' coefficients (outside the timing); a
                 * lanes engine's ciphertexts fill its lanes x the working slots,
                 * and its logits' period is every lane's (pow2(vocab) x lanes:
                 * a reply carries them all) */
                size_t N = ts_ckks_params_n(p),
                       cts = (size_t)ts_llm_enc_slots(enc) * (size_t)ts_llm_enc_lanes(enc),
                       gap = N / 2 / cts;
                if (!nz_cur) {
                    nz_cur = ts_calloc(N, sizeof *nz_cur);
                    nz_prev = ts_calloc(N, sizeof *nz_prev);
                    if (!nz_cur || !nz_prev) {
                        st = TS_ENOMEM;
                        goto out;
                    }
                }
                TRY(ts_ckks_decrypt_coeffs(sk, ev, lg, nz_cur));
                q->noise = true;
                q->nz_b = log2(ts_llm_sanitize_noise_bound(p));
                coeff_stats(nz_cur, N, gap, true, &q->nz_off_rms, &q->nz_off_max);
                q->nz_diff_rms = q->nz_diff_max = q->nz_sub_rms = q->nz_sub_max = q->nz_l2 = NAN;
                q->rd_sigma_full = q->rd_err_full = q->rd_sigma_sub = q->rd_err_sub = NAN;
                if (nz_pos == last && nz_tok == tokens[last]) {
                    size_t pv = (size_t)ts_llm_enc_logits_period(enc), gsub = N / 2 / pv;
                    for (size_t i = 0; i < N; i++)
                        nz_prev[i] -= nz_cur[i];
                    coeff_stats(nz_prev, N, 1, false, &q->nz_diff_rms, &q->nz_diff_max);
                    coeff_stats(nz_prev, N, gsub, false, &q->nz_sub_rms, &q->nz_sub_max);
                    q->nz_l2 = q->nz_sub_rms + 0.5 * log2((double)(2 * pv)) - 0.5;
                    rd_flood(p, q->nz_diff_rms + 0.5 * log2((double)N) - 0.5, cts,
                             &q->rd_sigma_full, &q->rd_err_full);
                    rd_flood(p, q->nz_l2, pv, &q->rd_sigma_sub, &q->rd_err_sub);
                }
                memcpy(nz_prev, nz_cur, N * sizeof *nz_cur);
                nz_pos = last;
                nz_tok = tokens[last];
                fprintf(stderr,
                        "bench decode: noise pos %d: logits' coefficients outside the subring "
                        "(every %zu-th): rms 2^%.2f, max 2^%.2f; difference from the previous "
                        "run: rms 2^%.2f, max 2^%.2f (on the logits' subring: rms 2^%.2f, max "
                        "2^%.2f); B = 2^%.2f; Gaussian flooding for 2^%.0f queries at Renyi "
                        "divergence 2: sigma 2^%.2f, logit error 2^%.2f (all coefficients) or "
                        "sigma 2^%.2f, error 2^%.2f (projected on the logits' subring); the "
                        "logits' noise there, l2: 2^%.2f (a model's sanitize_noise_l2_log2, "
                        "plus a margin)\n",
                        last, gap, q->nz_off_rms, q->nz_off_max, q->nz_diff_rms, q->nz_diff_max,
                        q->nz_sub_rms, q->nz_sub_max, q->nz_b, RD_QUERIES_LOG2, q->rd_sigma_full,
                        q->rd_err_full, q->rd_sigma_sub, q->rd_err_sub, q->nz_l2);
                t2 = ts_now_ns();
            }
            if (!g_cache_only)
                TRY(ts_llm_sanitize_with(ev, pk, &info, prng, lg));
            q->st[7] = ms_since(t2);
            q->ms = ms_since(t1);
            for (int i = 0; i < TS_LLM_STAGE_COUNT && i + 1 < NSTAGE - 1; i++) {
                double d = c.seconds[i] - b.seconds[i];
                q->st[i + 1] = d > 0 ? d * 1e3 : 0.0;
                q->mst[i] = q->st[i + 1];
            }
            q->mst[TS_LLM_STAGE_MATVEC] += q->st[0]; /* the embedding is one matvec */
            q->boots = c.bootstraps - a0.bootstraps;
            q->boots_pd = c.boots_period - a0.boots_period;
            q->convs = c.conversions - a0.conversions;
            q->lookups = c.lookups - a0.lookups;
            TRY(ts_llm_forward(m, ref, tokens[last], last, &rl));
            k->n++;
            q->lanes_err = NAN;
            q->lanes_err_lane = -1;
            q->lanes_agree = -1;
            if (g_cache_only) {
                q->err = q->bits = NAN;
                q->am_enc = q->am_ref = -1;
                fprintf(stderr, "bench decode: %s %s pos %d: %.1f ms (cache only)\n", k->model,
                        ts_sched_policy_name(k->policy), last, q->ms);
                continue;
            }
            /* the last lane's logits (position L - 1 of a prefill; every lane's
             * at a step); a prefill pass after a context: every lane's, each
             * against the plaintext's at its position */
            int nl = g_prefill ? g_prefill : g_lanes ? g_lanes : 1;
            int nd = pf && lane_ref ? nl : 1;
            double *dl = ts_calloc((size_t)V * (size_t)nd, sizeof *dl);
            if (!dl) {
                st = TS_ENOMEM;
                goto out;
            }
            st = ts_llm_enc_decrypt_logits(ecd, sk, lg, nl, nl - nd, nd, dl, V);
            if (nd > 1) {
                memcpy(lane_ref + (size_t)(nl - 1) * (size_t)V, rl, (size_t)V * sizeof *lane_ref);
                for (int l = 0; st == TS_OK && l < nl; l++)
                    for (int i = 0; i < V; i++) {
                        size_t at = (size_t)l * (size_t)V + (size_t)i;
                        double d = fabs(dl[at] - lane_ref[at]);
                        if (!(d <= q->lanes_err)) {
                            q->lanes_err = d;
                            q->lanes_err_lane = l;
                        }
                    }
            }
            if (st == TS_OK && nd > 1) /* logits: its scratch, then the last lane's */
                print_lanes_argmax(dl, lane_ref, logits, nl, V, pos, q);
            const double *dlast = dl + (size_t)(nd - 1) * (size_t)V;
            for (int i = 0; i < V; i++)
                logits[i] = (float)dlast[i];
            ts_free_secret(dl); /* decryptions */
            TRY(st);
            if (nd > 1)
                fprintf(stderr,
                        "bench decode: pos %d-%d: every lane's logits within %.2e of the "
                        "plaintext's (largest at lane %d)\n",
                        pos, last, q->lanes_err, q->lanes_err_lane);
            double mx = 0, ra = 0;
            for (int i = 0; i < V; i++) {
                mx = fmax(mx, fabs((double)logits[i] - rl[i]));
                ra = fmax(ra, fabs((double)rl[i]));
            }
            q->err = mx;
            q->bits = mx > 0 ? log2(ra / mx) : 99.0;
            q->am_enc = ts_llm_argmax(logits, V);
            q->am_ref = ts_llm_argmax(rl, V);
            fprintf(stderr,
                    "bench decode: %s %s pos %d%s: %.1f ms, err %.2e, argmax %d/%d (backend: "
                    "%llu calls, %.1f MiB up, %.1f MiB down)\n",
                    k->model, ts_sched_policy_name(k->policy), last,
                    a ? " (after the prefill)" : "", q->ms, mx, q->am_enc, q->am_ref,
                    (unsigned long long)q->bk.calls, (double)q->bk.upload_bytes / 1048576.0,
                    (double)q->bk.download_bytes / 1048576.0);
            if (q->boots > 0) {
                fprintf(stderr, "bench decode: pos %d: its %llu bootstraps' phases (s):", last,
                        (unsigned long long)q->boots);
                for (int j = 0; j < TS_BOOT_PHASE_COUNT; j++)
                    fprintf(stderr, " %s %.2f", ts_boot_phase_name(j), q->boot_ph[j] * 1e-3);
                fprintf(stderr, "\n");
            }
            pos = last;
        }
    }
out:
    k->st = st;
    ts_llm_enc_session_set_probe(s, NULL, NULL);
    trace_free(&tr[0]);
    trace_free(&tr[1]);
    ts_free_secret(nz_cur); /* decryptions */
    ts_free_secret(nz_prev);
    free(logits);
    free(steps);
    free(ctx_toks);
    free(lane_ref);
    for (int l = 0; l < n_layers && kc && vc; l++) {
        ts_ckks_ciphertext_free(kc[l]);
        ts_ckks_ciphertext_free(vc[l]);
    }
    free(kc);
    free(vc);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(y);
    ts_ckks_ciphertext_free(lg);
    ts_llm_state_free(ref);
    ts_llm_enc_session_free(s);
    ts_llm_enc_free(enc);
    ts_convert_free(cv);
    ts_boot_free(stc);
    ts_boot_free(boot_pd);
    ts_boot_free(boot);
    ts_boot_encap_keys_free(encap);
    ts_ckks_encoder_free(ecd);
    ts_ckks_evaluator_free(ev);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_public_key_free(pk);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
    ts_llm_model_free(m);
    return st;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tessera bench decode [--json PATH] [--quick] [--aidreams-positions N]\n"
               "                            [--policy ckks|hybrid|tfhe]... [--params PRESET]\n"
               "                            [--threads N] [--costs FILE] [--max-context N]\n"
               "                            [--context L[,L...]] [--kinds LIST]\n"
               "                            [--no-period-boot] [--boot-dft C:S]\n"
               "                            [--norm-defer on|off] [--no-refine]\n"
               "                            [--cache-only] [--noise] [--noise-trace]\n"
               "                            [--sanitize-l2 X [--sanitize-queries Q]]\n"
               "                            [--prefill N [--after K] [--step-before]\n"
               "                             [--pass-before] | --lanes N]\n"
               "                            [--prompt-ids LIST]\n\n"
               "Per-position latency of the private decode path (one-hot embedding, decode step,\n"
               "sanitized logits) and its breakdown by stage, in process on this machine: the\n"
               "tiny synthetic model at test-llm-tiny (8 positions; --quick: 2), unless --quick\n"
               "the tiny synthetic GPT-2 likewise (8 positions) and aidreams260K at\n"
               "test-boot-n12 with bootstrapping (N positions, default\n"
               "1; minutes each on a small CPU) in each --policy (default ckks; hybrid and tfhe\n"
               "also make the conversion keys) at --params (default test-boot-n12; dense-secret\n"
               "presets such as test-boot-n12-dense bootstrap with sparse-secret encapsulation).\n"
               "Insecure test presets: the numbers show where time goes, not production\n"
               "latency. A table on stdout (ms); --json the report (machine, backend, threads,\n"
               "parameters, per-position results with bootstraps, conversions and look-ups,\n"
               "the backend's calls and transfers, and the bootstraps' time by phase:\n"
               "bootstrap_phases_ms, ts_boot_profile's mod_raise, subsum, cts, eval_mod, stc).\n"
               "--costs FILE (a `tessera bench costs` table, best measured at --params): the\n"
               "scheduler's plan of each bootstrapping step (core/llm ts_llm_enc_session_plan:\n"
               "a pass from the session's caches as they are) side by side with the measured\n"
               "step: predicted and measured ms per stage, predicted and executed bootstraps,\n"
               "conversions and look-ups; policy hybrid then runs the cheapest assignment of\n"
               "primitive kinds to CKKS or TFHE under the table (as `tessera plan` and\n"
               "tesserad under their tables choose it; JSON: tfhe_kinds).\n"
               "--kinds LIST: aidreams260K in each --policy's structure (its softmax rounds)\n"
               "with these primitive kinds in TFHE and the others in CKKS (exp, recip,\n"
               "recip_norm, rsqrt, silu, comma-separated, or none): any assignment the\n"
               "hybrid scheduler may choose (JSON: tfhe_kinds, assignment \"--kinds\").\n"
               "--max-context N (default 128): the session's context limit; the engine packs\n"
               "its ciphertexts in the fewest slots that hold N positions (sparse packing:\n"
               "cheaper bootstraps), capped at the parameters' slots.\n"
               "--context L[,L...] (instead of the cases above): the step at position L-1 of\n"
               "aidreams260K at --params in each --policy (--quick: the tiny model at\n"
               "test-llm-tiny, policy ckks). The plaintext model decodes BOS and its greedy\n"
               "continuation to position L-1; positions [0, L-1) are PREFILLED: their plaintext\n"
               "K and V are encrypted into the session's KV cache, and only the step at L-1\n"
               "runs encrypted (a benchmark method, not a private path: a client never has the\n"
               "weights; the timed step is the one the engine runs at that position). L must\n"
               "fit the session (--max-context, and the parameters' slots / pow2(dim)).\n"
               "The residual stream bootstraps at pow2(dim) slots (its period: a cheaper\n"
               "bootstrap, 4 more keys at boot-n16-dense), as tesserad runs it;\n"
               "--no-period-boot: at the working slots, as every other value (JSON:\n"
               "period_boot_slots, 0 then).\n"
               "--boot-dft C:S: the bootstrapper's CoeffToSlot and SlotToCoeff level budgets\n"
               "(0:0 the defaults of ts_boot_config_slots) instead of those tesserad chooses\n"
               "(the fewest bootstraps a step, then the most DFT levels: A/B runs; JSON:\n"
               "boot_dft).\n"
               "--norm-defer on|off: the step's norms deferred or not (the factor multiplied\n"
               "into the products that read the norm), instead of the engine's choice where\n"
               "its plan predicts less time (A/B runs; on: LLAMA only; JSON: norm_defer).\n"
               "--no-refine: policy ckks's approximations as they are, not the finer ones\n"
               "tesserad takes where the engine's plans show them free (the FFN activation\n"
               "at degree 23, the norms' 1/sqrt at 56: ts_llm_enc_config_refine; A/B runs;\n"
               "JSON: act_degree, rsqrt_degree).\n"
               "--cache-only: each timed step is a cache-only step (ts_llm_enc_step_cache, a\n"
               "prompt position before the last, as tessera generate sends them: the last\n"
               "layer stops at its K/V cache, no logits; JSON: cache_only, precision and\n"
               "argmax null).\n"
               "--prefill N (with --context L, policy ckks): the timed operation is one\n"
               "prefill pass (ts_llm_enc_prefill) of positions [L-N, L) in an engine of N\n"
               "lanes (a power of two; ciphertexts and bootstraps at N times the working\n"
               "slots), after [0, L-N) prefilled as above; precision and argmax of position\n"
               "L-1's logits (the last lane), and the largest error over every lane's logits\n"
               "against the plaintext model's at its position (JSON: lanes_max_abs_err, its\n"
               "lane lanes_max_abs_err_lane); with --cache-only no logits (JSON: prefill).\n"
               "--lanes N (with --context L): the ordinary step at L-1 in an engine of N lanes\n"
               "(every lane at L-1): a generated token's cost in a prefill_lanes model.\n"
               "--after K (with --prefill): then K ordinary steps at L, L+1, ... in the same\n"
               "session, every lane at the position (the plaintext greedy token): what a\n"
               "prefill leaves each generated token (--max-context >= L+K; JSON: after_prefill).\n"
               "--step-before (with --prefill N): one ordinary step at L-N-1 before the pass\n"
               "(untimed; [0, L-N-1) prefilled): the cache then holds a step's rows at the\n"
               "step's level, as in a generation's speculative passes (the plan predicted:\n"
               "as tessera plan --after-steps) (JSON: step_before).\n"
               "--pass-before (with --prefill N): one more pass of N lanes before the timed one\n"
               "(untimed, after --step-before's step): the cache holds that pass's rows and\n"
               "what it refreshed, as in consecutive speculative passes (JSON: pass_before).\n"
               "--prompt-ids ID,ID,... (with --context): the context's tokens after BOS are these\n"
               "(as far as they go; then the greedy continuation) instead of the greedy one.\n"
               "--noise: the logits' coefficients before sanitization (level 0, centered mod\n"
               "q_0): log2 rms and max outside the sparse packing's subring (noise alone), and,\n"
               "when the previous record ran the same position and token (--context L,L: a\n"
               "second, independently encrypted run), of the two runs' difference (JSON:\n"
               "noise_log2), against B, the flooding's noise estimate. With two runs also the\n"
               "difference on the logits' subring (period pow2(vocab) x lanes: with --prefill\n"
               "or --lanes every lane's logits, as one reply carries them), the l2 of the\n"
               "logits' noise there (logit_noise_l2: what a model's sanitize_noise_l2_log2\n"
               "bounds, docs/SECURITY.md) and the Renyi mode's sigma and logit error for 2^12\n"
               "replies.\n"
               "--sanitize-l2 X [--sanitize-queries Q]: sanitize in the Renyi mode (the logits\n"
               "projected on their subring, a Gaussian flood for 2^Q replies, default 12, of\n"
               "noise up to 2^X in l2; tesserad's sanitize_noise_l2_log2) instead of uniform\n"
               "flooding: the logits' error against the plaintext then includes that flood.\n"
               "--noise-trace: the step's intermediate values decrypted at the engine's probe\n"
               "points (the attention's input, q, k, v, scores, exp, each softmax round, A V,\n"
               "its output after wo, the residual stream after each add, the FFN's output,\n"
               "every bootstrap's output, the final norm's and the logits); when the previous\n"
               "record ran the same position and token (--context L,L), per point the\n"
               "values' rms and largest |value|, a bootstrap's bound (what it maps to the\n"
               "sine's range), the two runs' difference over the slots' real parts: log2 rms\n"
               "and max, and the bits between the values' rms and it (JSON: noise_trace);\n"
               "where the logits' noise comes from. The decryptions are not timed; with\n"
               "--prefill, over every lane (the pass's probe points; the record's position\n"
               "is its last lane's).\n");
}

static void print_json(FILE *f, const case_t *cs, int nc, bool quick)
{
    char cpu[256];
    ts_bench_cpu_model(cpu, sizeof cpu);
    const char *thr = getenv("TS_THREADS");
    fprintf(f, "{\n  \"benchmark\": \"decode\",\n  \"machine\": {\"cpu\": ");
    ts_cli_json_str(f, cpu);
    fprintf(f, ", \"cores\": %ld},\n  \"threads\": ", sysconf(_SC_NPROCESSORS_ONLN));
    ts_cli_json_str(f, thr && *thr ? thr : "default");
    const ts_backend_t *be = ts_backend_default(); /* the backend the cases ran on */
    fprintf(f, ",\n  \"backend\": ");
    ts_cli_json_str(f, be && be->iface && be->iface->name ? be->iface->name : "none");
    fprintf(f, ",\n  \"quick\": %s,\n  \"cases\": [\n", quick ? "true" : "false");
    for (int c = 0; c < nc; c++) {
        const case_t *k = &cs[c];
        double mean = 0;
        for (int i = 0; i < k->n; i++)
            mean += k->p[i].ms;
        mean = k->n ? mean / k->n : 0;
        fprintf(f,
                "    {\"model\": \"%s\", \"params\": \"%s\", \"policy\": \"%s\", \"bootstrap\": "
                "%s, \"status\": \"%s\", \"keygen_ms\": %.1f, \"eval_key_mib\": %.2f, "
                "\"eval_key_mem_mib\": %.1f, "
                "\"sanitize_lambda\": %d, \"sanitize_mode\": \"%s\", \"sanitize_sigma_log2\": "
                "%.2f, \"sanitize_queries_log2\": %.1f, \"flood_err_bound\": %.3g, "
                "\"max_context\": %d, "
                "\"slots\": %d, \"period_boot_slots\": %d, \"boot_dft\": [%d, %d], "
                "\"max_positions\": %d, \"norm_defer\": %s, \"act_degree\": %d, "
                "\"rsqrt_degree\": %d, \"mean_ms_per_token\": %.1f,",
                k->model, k->params, ts_sched_policy_name(k->policy), k->boot ? "true" : "false",
                ts_status_name(k->st), k->keygen_ms, k->key_mib, k->key_mem_mib, k->lambda,
                k->san.mode == TS_LLM_SANITIZE_RD ? "renyi" : "uniform",
                k->san.mode == TS_LLM_SANITIZE_RD ? k->san.sigma_log2 : k->san.flood_log2,
                k->san.queries_log2, k->err_bound, k->max_ctx, k->slots, k->period_slots,
                k->boot_dft[0], k->boot_dft[1], k->max_pos, k->norm_defer ? "true" : "false",
                k->act_degree, k->rsqrt_degree, mean);
        char kinds[96];
        ts_llm_kinds_format(k->tfhe_kinds, kinds, sizeof kinds);
        fprintf(f, "\n      \"tfhe_kinds\": \"%s\", \"assignment\": \"%s\",", kinds,
                k->best         ? "cheapest under the cost table"
                : k->kinds >= 0 ? "--kinds"
                                : "the policy's default");
        if (k->n_ctx > 0 && g_prefill)
            fprintf(f,
                    "\n      \"prefill\": \"per context L, positions 0..L-%d prefilled from the "
                    "plaintext model (their K and V encrypted into the session's cache; a "
                    "benchmark method, not a private path); positions L-%d..L-1 ran encrypted "
                    "in one pass of %d lanes (ts_llm_enc_prefill), pos the last\", "
                    "\"prefill_lanes\": %d,",
                    g_prefill + 1, g_prefill, g_prefill, g_prefill);
        else if (k->n_ctx > 0)
            fprintf(f, "\n      \"prefill\": \"per context L, positions 0..L-2 prefilled from "
                       "the plaintext model (their K and V encrypted into the session's cache; a "
                       "benchmark method, not a private path); only position L-1 ran "
                       "encrypted\", \"prefill_lanes\": 0,");
        if (k->n_ctx > 0)
            fprintf(f, "\n      \"lanes\": %d,", g_prefill ? g_prefill : g_lanes ? g_lanes : 1);
        fprintf(f, "\n      \"positions\": [");
        for (int i = 0; i < k->n; i++) {
            const pos_t *q = &k->p[i];
            fprintf(f,
                    "%s\n        {\"pos\": %d, \"token\": %d, \"cache_only\": %s, \"ms\": %.1f, "
                    "\"bootstraps\": %llu, \"bootstraps_period\": %llu, "
                    "\"conversions\": %llu, \"lookups\": %llu, ",
                    i ? "," : "", q->pos, q->token, g_cache_only ? "true" : "false", q->ms,
                    (unsigned long long)q->boots, (unsigned long long)q->boots_pd,
                    (unsigned long long)q->convs, (unsigned long long)q->lookups);
            if (g_cache_only) /* no logits */
                fprintf(f, "\"logits_max_abs_err\": null, \"precision_bits\": null, "
                           "\"argmax_enc\": null, \"argmax_plain\": null, ");
            else
                fprintf(f,
                        "\"logits_max_abs_err\": %.3g, \"precision_bits\": %.2f, "
                        "\"argmax_enc\": %d, \"argmax_plain\": %d, ",
                        q->err, q->bits, q->am_enc, q->am_ref);
            if (q->lanes_err_lane >= 0)
                fprintf(f,
                        "\"lanes_max_abs_err\": %.3g, \"lanes_max_abs_err_lane\": %d, "
                        "\"lanes_argmax_agree\": %d, ",
                        q->lanes_err, q->lanes_err_lane, q->lanes_agree);
            fprintf(f,
                    "\"backend_calls\": %llu, \"uploads\": %llu, \"upload_mib\": %.2f, "
                    "\"downloads\": %llu, \"download_mib\": %.2f, ",
                    (unsigned long long)q->bk.calls, (unsigned long long)q->bk.uploads,
                    (double)q->bk.upload_bytes / 1048576.0, (unsigned long long)q->bk.downloads,
                    (double)q->bk.download_bytes / 1048576.0);
            fprintf(f, "\"bootstrap_phases_ms\": {");
            for (int j = 0; j < TS_BOOT_PHASE_COUNT; j++)
                fprintf(f, "%s\"%s\": %.1f", j ? ", " : "", ts_boot_phase_name(j), q->boot_ph[j]);
            fprintf(f, "}, ");
            fprintf(f, "\"stages_ms\": {");
            for (int j = 0; j < NSTAGE; j++)
                fprintf(f, "%s\"%s\": %.1f", j ? ", " : "", stage_names[j], q->st[j]);
            fprintf(f, "}");
            if (q->ctx > 0)
                fprintf(f,
                        ", \"context_length\": %d, \"prefilled_positions\": %d, "
                        "\"prefilled_from\": \"plaintext\", \"prefill_ms\": %.1f",
                        q->ctx, q->ctx - (g_prefill ? g_prefill : 1), q->prefill_ms);
            if (q->after > 0)
                fprintf(f, ", \"after_prefill\": %d", q->after);
            if (g_step_before && q->ctx > 0 && q->after == 0)
                fprintf(f, ", \"step_before\": true");
            if (g_pass_before && q->ctx > 0 && q->after == 0)
                fprintf(f, ", \"pass_before\": true");
            if (q->noise) {
                /* log2 of a zero is -inf: null */
                const char *nm[12] = {"off_subring_rms",
                                      "off_subring_max",
                                      "B",
                                      "run_diff_rms",
                                      "run_diff_max",
                                      "run_diff_logit_subring_rms",
                                      "run_diff_logit_subring_max",
                                      "rd_sigma_all",
                                      "rd_logit_err_all",
                                      "rd_sigma_projected",
                                      "rd_logit_err_projected",
                                      "logit_noise_l2"};
                const double nv[12] = {q->nz_off_rms,   q->nz_off_max,    q->nz_b,
                                       q->nz_diff_rms,  q->nz_diff_max,   q->nz_sub_rms,
                                       q->nz_sub_max,   q->rd_sigma_full, q->rd_err_full,
                                       q->rd_sigma_sub, q->rd_err_sub,    q->nz_l2};
                fprintf(f, ", \"noise_log2\": {");
                for (int j = 0; j < 12; j++) {
                    if (j >= 3 && isnan(nv[j]))
                        continue; /* no second run */
                    fprintf(f, "%s\"%s\": ", j ? ", " : "", nm[j]);
                    if (isfinite(nv[j]))
                        fprintf(f, "%.3f", nv[j]);
                    else
                        fprintf(f, "null");
                }
                fprintf(f, "}");
            }
            if (q->n_tr > 0) {
                fprintf(f, ",\n         \"noise_trace\": [");
                for (int j = 0; j < q->n_tr; j++) {
                    const tr_row_t *w = &q->tr[j];
                    fprintf(f,
                            "%s\n           {\"point\": \"%s\", \"layer\": %d, \"level\": %d, "
                            "\"value_rms\": %.4g, \"value_max\": %.4g, ",
                            j ? "," : "", w->point, w->layer, w->level, w->rms, w->max);
                    if (w->bound > 0)
                        fprintf(f, "\"bound\": %g, ", w->bound);
                    fprintf(f, "\"diff_rms_log2\": ");
                    /* identical runs: log2 0 = -inf, null */
                    const double dv[3] = {w->diff_rms, w->diff_max, w->bits};
                    const char *dn[3] = {"", "diff_max_log2", "bits"};
                    for (int d = 0; d < 3; d++) {
                        if (d)
                            fprintf(f, ", \"%s\": ", dn[d]);
                        if (isfinite(dv[d]))
                            fprintf(f, "%.3f", dv[d]);
                        else
                            fprintf(f, "null");
                    }
                    fprintf(f, "}");
                }
                fprintf(f, "]");
            }
            if (q->pred) {
                /* the scheduler's engine plan side by side with the measured step */
                fprintf(
                    f,
                    ",\n         \"predicted\": {\"step_ms\": %.1f, \"measured_step_ms\": %.1f, "
                    "\"ratio\": %.3f, \"bootstraps\": %u, \"conversions\": %u, \"lookups\": %u, "
                    "\"counts_match\": %s, \"stages_ms\": {",
                    q->pred_ms, step_ms(q), step_ms(q) > 0 ? q->pred_ms / step_ms(q) : 0.0,
                    q->pred_boots, q->pred_convs, q->pred_lookups,
                    q->pred_boots == q->boots && q->pred_convs == q->convs &&
                            q->pred_lookups == q->lookups
                        ? "true"
                        : "false");
                for (int j = 0; j < TS_LLM_STAGE_COUNT; j++)
                    fprintf(f, "%s\"%s\": {\"predicted\": %.1f, \"measured\": %.1f}", j ? ", " : "",
                            stage_names[j + 1], q->pred_st[j], q->mst[j]);
                fprintf(f, "}}");
            }
            fprintf(f, "}");
        }
        fprintf(f, "\n      ]}%s\n", c + 1 < nc ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
}

int ts_bench_decode(int argc, char **argv)
{
    const char *json = NULL, *aid_params = "test-boot-n12", *costs_path = NULL;
    bool quick = false;
    int aid_pos = 1, n_pol = 0, max_ctx = 128, n_ctx = 0, ctxs[8], kinds = -1;
    ts_sched_policy_t pols[3];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json = argv[++i];
        } else if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--aidreams-positions") && i + 1 < argc) {
            aid_pos = atoi(argv[++i]);
            if (aid_pos < 0 || aid_pos > 7) {
                fprintf(stderr, "bench decode: --aidreams-positions is 0..7\n");
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--policy") && i + 1 < argc) {
            if (n_pol == 3 || ts_sched_policy_parse(argv[++i], &pols[n_pol]) != TS_OK) {
                fprintf(stderr, "bench decode: --policy is ckks, hybrid or tfhe (at most 3)\n");
                return TS_EXIT_USAGE;
            }
            n_pol++;
        } else if (!strcmp(argv[i], "--params") && i + 1 < argc) {
            aid_params = argv[++i];
        } else if (!strcmp(argv[i], "--kinds") && i + 1 < argc) {
            unsigned mk = 0;
            if (ts_llm_kinds_parse(argv[++i], &mk) != TS_OK) {
                fprintf(stderr, "bench decode: --kinds is a comma-separated list of exp, recip, "
                                "recip_norm, rsqrt, silu, gelu, or none\n");
                return TS_EXIT_USAGE;
            }
            kinds = (int)mk;
        } else if (!strcmp(argv[i], "--max-context") && i + 1 < argc) {
            max_ctx = atoi(argv[++i]);
            if (max_ctx < 1) {
                fprintf(stderr, "bench decode: --max-context must be >= 1\n");
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--context") && i + 1 < argc) {
            const char *a = argv[++i];
            char *end = NULL;
            n_ctx = 0;
            for (;;) {
                long L = strtol(a, &end, 10);
                if (end == a || L < 2 || L > TS_LLM_MAX_SEQ || n_ctx == 8 ||
                    (*end && *end != ',')) {
                    fprintf(stderr, "bench decode: --context is L[,L...] (at most 8, each >= 2)\n");
                    return TS_EXIT_USAGE;
                }
                ctxs[n_ctx++] = (int)L;
                if (!*end)
                    break;
                a = end + 1;
            }
        } else if (!strcmp(argv[i], "--prompt-ids") && i + 1 < argc) {
            size_t n = 0;
            g_ids[0] = 1; /* BOS */
            if (!ts_cli_llm_parse_ids(argv[++i], TS_LLM_MAX_VOCAB, g_ids + 1, TS_LLM_MAX_SEQ - 1,
                                      &n)) {
                fprintf(stderr, "bench decode: --prompt-ids is ID[,ID...] (token ids)\n");
                return TS_EXIT_USAGE;
            }
            g_n_ids = (int)n + 1;
        } else if (!strcmp(argv[i], "--no-period-boot")) {
            g_period_boot = false;
        } else if (!strcmp(argv[i], "--boot-dft") && i + 1 < argc) {
            if (!ts_cli_llm_parse_boot_dft(argv[++i], &g_boot_cts, &g_boot_stc)) {
                fprintf(stderr, "bench decode: --boot-dft is C:S (CoeffToSlot and SlotToCoeff "
                                "levels, 0..8 each; 0:0 the defaults)\n");
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--norm-defer") && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "on") || !strcmp(argv[i + 1], "off"))) {
            g_norm_defer = !strcmp(argv[++i], "on");
        } else if (!strcmp(argv[i], "--no-refine")) {
            g_refine = false;
        } else if (!strcmp(argv[i], "--noise")) {
            g_noise = true;
        } else if (!strcmp(argv[i], "--noise-trace")) {
            g_trace = true;
        } else if (!strcmp(argv[i], "--sanitize-l2") && i + 1 < argc) {
            g_san_l2 = atof(argv[++i]);
            if (!(g_san_l2 > 0 && g_san_l2 < 60)) {
                fprintf(stderr, "bench decode: --sanitize-l2 takes log2 of a bound in (0, 60)\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--sanitize-queries") && i + 1 < argc) {
            g_san_q = atof(argv[++i]);
            if (!(g_san_q >= 0 && g_san_q <= 40)) {
                fprintf(stderr, "bench decode: --sanitize-queries takes 0..40 (log2)\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--cache-only")) {
            g_cache_only = true;
        } else if ((!strcmp(argv[i], "--prefill") || !strcmp(argv[i], "--lanes")) && i + 1 < argc) {
            int v = atoi(argv[i + 1]);
            if (v < 2 || v > 64 || (v & (v - 1))) {
                fprintf(stderr, "bench decode: %s is a power of two in [2, 64]\n", argv[i]);
                return TS_EXIT_USAGE;
            }
            *(!strcmp(argv[i], "--prefill") ? &g_prefill : &g_lanes) = v;
            i++;
        } else if (!strcmp(argv[i], "--step-before")) {
            g_step_before = true;
        } else if (!strcmp(argv[i], "--pass-before")) {
            g_pass_before = true;
        } else if (!strcmp(argv[i], "--after") && i + 1 < argc) {
            g_after = atoi(argv[++i]);
            if (g_after < 1 || g_after > 32) {
                fprintf(stderr, "bench decode: --after is 1..32\n");
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--costs") && i + 1 < argc) {
            costs_path = argv[++i];
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            if (atoi(argv[i + 1]) < 1) {
                fprintf(stderr, "bench decode: --threads must be >= 1\n");
                return TS_EXIT_USAGE;
            }
            setenv("TS_THREADS", argv[++i], 1); /* read by the CPU backend when it starts */
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return TS_EXIT_OK;
        } else {
            usage(stderr);
            return TS_EXIT_USAGE;
        }
    }
    if (n_pol == 0)
        pols[n_pol++] = TS_SCHED_CKKS;
    if ((g_prefill || g_lanes) && n_ctx == 0) {
        fprintf(stderr, "bench decode: --prefill and --lanes need --context\n");
        return TS_EXIT_USAGE;
    }
    for (int ci = 0; (g_step_before || g_pass_before) && ci < (n_ctx ? n_ctx : 1); ci++)
        if (!g_prefill || !n_ctx ||
            ctxs[ci] < g_prefill * (g_pass_before ? 2 : 1) + (g_step_before ? 1 : 0)) {
            fprintf(stderr, "bench decode: --step-before and --pass-before precede a --prefill N "
                            "pass (--context >= N + 1 with the step, 2N with the pass)\n");
            return TS_EXIT_USAGE;
        }
    if (g_after && (!g_prefill || g_cache_only)) {
        fprintf(stderr, "bench decode: --after follows a --prefill pass (not --cache-only)\n");
        return TS_EXIT_USAGE;
    }
    if (g_prefill && g_lanes) {
        fprintf(stderr, "bench decode: --prefill N is an engine of N lanes already\n");
        return TS_EXIT_USAGE;
    }
    ts_sched_costs_t costs;
    if (costs_path) {
        ts_cfg_error_t err;
        if (ts_sched_costs_load(costs_path, &costs, &err) != TS_OK) {
            char line[600];
            ts_cfg_error_format(&err, line, sizeof line);
            fprintf(stderr, "bench decode: %s\n", line);
            return TS_EXIT_LOCAL;
        }
        if (strcmp(costs.params, aid_params) != 0)
            fprintf(stderr,
                    "bench decode: note: the cost table was measured at '%s', the decode runs at "
                    "%s\n",
                    costs.params, aid_params);
    }
    case_t *cs = calloc(32, sizeof *cs);
    if (!cs)
        return TS_EXIT_LOCAL;
    int nc = 0;
    /* tiny */
    char dir[256], model[300];
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tessera-bench-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench decode: cannot make a temporary directory\n");
        free(cs);
        return TS_EXIT_LOCAL;
    }
    snprintf(model, sizeof model, "%s/tiny.bin", dir);
    if (tiny_model_write(model) != 0) {
        fprintf(stderr, "bench decode: cannot write %s\n", model);
        free(cs);
        return TS_EXIT_LOCAL;
    }
    static const int tiny_toks[8] = {1, 3, 4, 5, 10, 11, 6, 7};
    case_t *k = NULL;
    /* --context: the step at L - 1 after a prefill of [0, L - 1) */
    for (int pi = 0; n_ctx > 0 && pi < (quick ? 1 : n_pol); pi++) {
        k = &cs[nc++];
        snprintf(k->model, sizeof k->model, "%s", quick ? "tiny" : "aidreams260K");
        snprintf(k->params, sizeof k->params, "%s", quick ? "test-llm-tiny" : aid_params);
        k->boot = !quick;
        k->lambda = 20;
        k->max_ctx = max_ctx;
        k->n_ctx = n_ctx;
        memcpy(k->ctxs, ctxs, sizeof ctxs);
        k->policy = quick ? TS_SCHED_CKKS : pols[pi];
        k->kinds = quick ? -1 : kinds;
        run_case(k, quick ? model : "models/aidreams260K.bin",
                 quick ? "configs/approx/tiny-test.yaml" : NULL, tiny_toks, 0,
                 costs_path && !quick ? &costs : NULL);
    }
    if (n_ctx == 0) {
        k = &cs[nc++];
        snprintf(k->model, sizeof k->model, "tiny");
        snprintf(k->params, sizeof k->params, "test-llm-tiny");
        k->policy = TS_SCHED_CKKS; /* no bootstrapping at test-llm-tiny: no conversions either */
        k->kinds = -1;
        k->lambda = 20;
        k->max_ctx = max_ctx;
        run_case(k, model, "configs/approx/tiny-test.yaml", tiny_toks, quick ? 2 : 8, NULL);
        unlink(model);
        if (!quick) {
            /* the tiny GPT-2 (GGUF; LayerNorm, biases, positions, GELU) likewise */
            snprintf(model, sizeof model, "%s/tiny-gpt2.gguf", dir);
            k = &cs[nc++];
            snprintf(k->model, sizeof k->model, "tiny-gpt2");
            snprintf(k->params, sizeof k->params, "test-llm-tiny");
            k->policy = TS_SCHED_CKKS;
            k->kinds = -1;
            k->lambda = 20;
            k->max_ctx = max_ctx;
            if (tiny_gpt2_write(model) != 0)
                k->st = TS_EIO;
            else
                run_case(k, model, "configs/approx/tiny-gpt2-test.yaml", tiny_toks, 8, NULL);
            unlink(model);
        }
        rmdir(dir);
        for (int pi = 0; pi < n_pol && !quick && aid_pos > 0; pi++) {
            static const int aid_toks[7] = {1, 303, 281, 269, 435, 447, 275};
            k = &cs[nc++];
            snprintf(k->model, sizeof k->model, "aidreams260K");
            snprintf(k->params, sizeof k->params, "%s", aid_params);
            k->boot = true;
            k->lambda = 20;
            k->max_ctx = max_ctx;
            k->policy = pols[pi];
            k->kinds = kinds;
            run_case(k, "models/aidreams260K.bin", NULL, aid_toks, aid_pos,
                     costs_path ? &costs : NULL);
        }
    } else {
        unlink(model);
        rmdir(dir);
    }
    for (int c = 0; c < nc; c++)
        if (cs[c].n_ctx > 0) {
            printf("context cases: positions [0, L-1) PREFILLED from the plaintext model (their K "
                   "and V encrypted into the session's cache: a benchmark method, not a private "
                   "path); only the step at L-1 ran encrypted\n\n");
            break;
        }
    printf("%-13s %-20s %-6s %3s %9s %7s %8s %8s %8s %9s %8s %5s %5s %6s\n", "model", "params",
           "policy", "pos", "ms", "embed", "matvec", "attn", "nonlin", "bootstrap", "convert",
           "boots", "convs", "bits");
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < cs[c].n; i++) {
            const pos_t *q = &cs[c].p[i];
            char bits[16];
            snprintf(bits, sizeof bits, g_cache_only ? "cache" : "%.2f", q->bits);
            printf("%-13s %-20s %-6s %3d %9.0f %7.0f %8.0f %8.0f %8.0f %9.0f %8.0f %5llu %5llu "
                   "%6s\n",
                   cs[c].model, cs[c].params, ts_sched_policy_name(cs[c].policy), q->pos, q->ms,
                   q->st[0], q->st[1], q->st[2], q->st[3], q->st[4], q->st[5],
                   (unsigned long long)q->boots, (unsigned long long)q->convs, bits);
        }
    bool any_pred = false;
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < cs[c].n; i++)
            any_pred |= cs[c].p[i].pred;
    if (any_pred) {
        printf("\npredicted (the scheduler's engine plan, %s) vs measured embedding + step, "
               "ms:\n",
               costs_path);
        printf("%-13s %-6s %3s %9s %9s %6s %5s %5s %6s", "model", "policy", "pos", "predicted",
               "measured", "ratio", "boots", "convs", "values");
        for (int j = 1; j <= TS_LLM_STAGE_COUNT; j++)
            printf(" %17s", stage_names[j]);
        printf("\n");
        for (int c = 0; c < nc; c++)
            for (int i = 0; i < cs[c].n; i++) {
                const pos_t *q = &cs[c].p[i];
                if (!q->pred)
                    continue;
                printf("%-13s %-6s %3d %9.0f %9.0f %6.2f %2u/%-2llu %2u/%-2llu %3u/%-3llu",
                       cs[c].model, ts_sched_policy_name(cs[c].policy), q->pos, q->pred_ms,
                       step_ms(q), step_ms(q) > 0 ? q->pred_ms / step_ms(q) : 0.0, q->pred_boots,
                       (unsigned long long)q->boots, q->pred_convs, (unsigned long long)q->convs,
                       q->pred_lookups, (unsigned long long)q->lookups);
                for (int j = 0; j < TS_LLM_STAGE_COUNT; j++)
                    printf(" %8.0f/%-8.0f", q->pred_st[j], q->mst[j]);
                printf("\n");
            }
    }
    if (json) {
        FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
        if (!f) {
            fprintf(stderr, "bench decode: cannot write %s\n", json);
            free(cs);
            return TS_EXIT_LOCAL;
        }
        print_json(f, cs, nc, quick);
        if (f != stdout)
            fclose(f);
    }
    int rc = TS_EXIT_OK;
    for (int c = 0; c < nc; c++) {
        if (cs[c].st != TS_OK)
            rc = TS_EXIT_FAIL;
        for (int i = 0; i < cs[c].n; i++)
            free(cs[c].p[i].tr);
    }
    free(cs);
    return rc;
}

/*
 * The private decode service of tesserad (issue 10): models named by files in
 * models_dir, decode sessions holding a client's evaluation keys and the
 * encrypted KV cache, one encrypted decode step per request (one-hot token in,
 * sanitized logits out). Loading runs at startup on the loop thread; session
 * opening and steps run on worker threads (a model is immutable after loading
 * and shared by its sessions; a session is used by one worker at a time).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/convert/convert.h"
#include "core/llm/llm.h"
#include "server/ckks_wire.h"
#include "server/tesserad.h"

#define MAX_MODELS 64
#define MiB        ((int64_t)1 << 20)
#define GiB        ((int64_t)1 << 30)

typedef struct dec_model_cfg {
    char path[512];
    char params[64];
    char approx[512];
    bool bootstrap;
    int64_t max_context;
    int64_t max_sessions;
    int64_t session_memory_bytes;
    int64_t sanitize_lambda;
    /* > 0: the Renyi mode (ts_llm_sanitize_plan_rd): log2 of the bound on
     * the logits' noise (l2, on their subring) and of the replies it covers */
    double sanitize_noise_l2_log2, sanitize_queries_log2;
    char sanitize_state[512]; /* the Renyi mode's reply count on disk (ts_san_state) */
    int sanitize_budget;      /* past 2^queries replies: budget_choices, -1 unset (warn) */
    int64_t logits_level;
    char policies[64];
    char costs[512];
    int64_t prefill_lanes; /* >= 2: an engine of that many lanes (ts_llm_enc_prefill) */
    char draft_text[512];  /* the public text the host publishes for clients' n-gram drafts */
} dec_model_cfg_t;

/*
 * One policy a model serves: its engine (policy ckks: the model's approx
 * file; hybrid / tfhe: ts_llm_enc_config_policy), the Galois keys a session
 * needs for it (engine steps and, with TFHE, the SlotToCoeff-first
 * bootstrapper's) and the TFHE literal of its conversion keys.
 */
typedef struct dec_policy {
    const char *name;
    ts_sched_policy_t pol;
    ts_llm_enc_t *enc; /* borrowed from the model for ckks */
    int64_t *steps;
    int32_t *levels; /* the highest level each step's rotations run at */
    size_t n_steps;
    bool tfhe;
    char kinds[96]; /* ts_llm_kinds_format of the engine's TFHE kinds (PolicyInfo.tfhe_kinds) */
    ts_tfhe_params_lit_t lit;
    Tessera__PolicyInfo info;
} dec_policy_t;

struct ts_dec_model {
    char name[64];
    dec_model_cfg_t cfg;
    ts_llm_model_t *m;
    ts_ckks_params_t *p;
    uint8_t pid[TS_SHA256_BYTES];
    ts_boot_t *boot;
    ts_boot_t *boot_pd; /* the residual stream's, at pow2(dim) slots (NULL: none) */
    ts_llm_enc_t *enc;
    int64_t *steps;
    int32_t *levels; /* parallel to steps (ModelInfo.rotation_levels) */
    size_t n_steps;
    int max_ctx;
    int log_slots; /* the engines' working slot count (sized for max_context) */
    ts_llm_sanitize_info_t san;
    atomic_uint_least64_t replies; /* sanitized logits sent (every session, every worker),
                                      without a state file */
    ts_san_state_t *san_state;     /* the count on disk (sanitize_state), else NULL */
    bool san_refuse;               /* sanitize_budget: refuse */
    uint64_t kv_bytes; /* KV cache of a full session (estimate; with lanes, a speculative pass's
                          rows too) */
    int sessions;      /* live sessions (loop thread) */
    dec_policy_t pol[3];
    size_t n_pol;
    char *pol_names[3];
    Tessera__PolicyInfo *pol_info[3];
    ts_boot_t *stc; /* SlotToCoeff-first bootstrapper of the TFHE policies (shared) */
    uint8_t *draft; /* draft_text's bytes (public), NULL when none */
    size_t draft_n;
    uint8_t draft_sha[TS_SHA256_BYTES];
};

struct ts_dec_registry {
    ts_dec_model_t *models;
    size_t n;
};

struct ts_dec_session {
    ts_dec_model_t *md;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_public_key_t *pk;
    ts_ckks_evaluator_t *ev;
    ts_llm_enc_session_t *s;
    const dec_policy_t *pol;
    ts_convert_t *cv; /* conversion keys (TFHE policies), no secrets */
    /* dense-secret presets: the client's encapsulation keys and views of the
     * model's bootstrappers that use them */
    ts_boot_encap_keys_t *encap;
    ts_boot_t *boot, *stc, *boot_pd;
    ts_prng_t *prng;
    int next_pos;
    int public_n;          /* positions [0, public_n) were public (DecodeStep.token_public) */
    ts_llm_state_t *plain; /* their plaintext state (the public prefix only) */
    bool broken;           /* a step failed part-way: the KV cache may be inconsistent */
    uint64_t mem;
};

#define STR(key, field)                                                                            \
    {                                                                                              \
        .name = key, .type = TS_CFG_STRING, .offset = offsetof(dec_model_cfg_t, field),            \
        .cap = sizeof(((dec_model_cfg_t *)0)->field)                                               \
    }
#define INT(key, field, lo, hi)                                                                    \
    {                                                                                              \
        .name = key, .type = TS_CFG_INT, .offset = offsetof(dec_model_cfg_t, field), .min = (lo),  \
        .max = (hi)                                                                                \
    }

#define DBL(key, field, lo, hi)                                                                    \
    {                                                                                              \
        .name = key, .type = TS_CFG_DOUBLE, .offset = offsetof(dec_model_cfg_t, field),            \
        .dmin = (lo), .dmax = (hi)                                                                 \
    }

static const char *const budget_choices[] = {"warn", "refuse", NULL};

static const ts_cfg_directive_t model_table[] = {
    {.name = "path",
     .type = TS_CFG_STRING,
     .offset = offsetof(dec_model_cfg_t, path),
     .cap = sizeof(((dec_model_cfg_t *)0)->path),
     .required = true},
    {.name = "params",
     .type = TS_CFG_STRING,
     .offset = offsetof(dec_model_cfg_t, params),
     .cap = sizeof(((dec_model_cfg_t *)0)->params),
     .required = true},
    STR("approx", approx),
    {.name = "bootstrap", .type = TS_CFG_BOOL, .offset = offsetof(dec_model_cfg_t, bootstrap)},
    INT("max_context", max_context, 1, 1 << 20),
    INT("max_sessions", max_sessions, 1, 1 << 16),
    INT("session_memory_bytes", session_memory_bytes, 1 * MiB, INT64_MAX),
    INT("sanitize_lambda", sanitize_lambda, 0, 128),
    DBL("sanitize_noise_l2_log2", sanitize_noise_l2_log2, 0.0, 60.0),
    DBL("sanitize_queries_log2", sanitize_queries_log2, 0.0, 40.0),
    STR("sanitize_state", sanitize_state),
    {.name = "sanitize_budget",
     .type = TS_CFG_ENUM,
     .offset = offsetof(dec_model_cfg_t, sanitize_budget),
     .choices = budget_choices},
    INT("logits_level", logits_level, 0, 63),
    STR("policies", policies),
    STR("costs", costs),
    INT("prefill_lanes", prefill_lanes, 0, 64),
    STR("draft_text", draft_text),
    {.name = NULL},
};

static void model_clear(ts_dec_model_t *md)
{
    for (size_t i = 0; i < md->n_pol; i++) {
        if (md->pol[i].enc != md->enc)
            ts_llm_enc_free(md->pol[i].enc);
        ts_free(md->pol[i].steps);
        ts_free(md->pol[i].levels);
    }
    ts_boot_free(md->stc);
    ts_san_state_free(md->san_state);
    ts_llm_enc_free(md->enc);
    ts_boot_free(md->boot_pd);
    ts_boot_free(md->boot);
    ts_ckks_params_free(md->p);
    ts_llm_model_free(md->m);
    ts_free(md->steps);
    ts_free(md->levels);
    ts_free(md->draft);
    memset(md, 0, sizeof *md);
}

void ts_dec_registry_free(ts_dec_registry_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        model_clear(&r->models[i]);
    ts_free(r->models);
    ts_free(r);
}

static bool name_ok(const char *s, size_t len)
{
    if (len == 0 || len >= 64)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
              ch == '.'))
            return false;
    }
    return s[0] != '.';
}

/* The engine's approximations from a configs/approx YAML file. */
static ts_status_t load_approx(const char *path, ts_llm_enc_config_t *cfg, char *err,
                               size_t err_size)
{
    ts_llm_sim_config_t sim;
    ts_llm_enc_config_default(cfg);
    ts_llm_enc_config_to_sim(cfg, &sim);
    ts_status_t st = ts_llm_sim_config_load(path, &sim, err, err_size);
    if (st != TS_OK)
        return st;
    ts_llm_enc_config_from_sim(&sim, cfg);
    return TS_OK;
}

/* Add step at level to the list (steps/levels with room), keeping the highest level. */
static void step_add(int64_t *steps, int32_t *levels, size_t *n, int64_t step, int level)
{
    for (size_t i = 0; i < *n; i++)
        if (steps[i] == step) {
            if (levels[i] < level)
                levels[i] = level;
            return;
        }
    steps[*n] = step;
    levels[(*n)++] = level;
}

/*
 * The Galois steps of an engine (at its rotation level), when stc is given
 * of the SlotToCoeff-first bootstrapper (each at its own level), and in the
 * Renyi sanitization mode of the logits' projection (at the logits' level).
 * [out] *steps, *levels: ts_calloc'd.
 */
static ts_status_t engine_steps(ts_dec_model_t *md, const ts_llm_enc_t *enc, const ts_boot_t *stc,
                                int64_t **steps, int32_t **levels, size_t *count)
{
    /* the engine's bootstrappers besides the main one (whose keys ModelInfo
     * implies): the SlotToCoeff-first one, the residual stream's */
    const ts_boot_t *extra[2] = {stc, ts_llm_enc_boot_period(enc)};
    size_t ne = 0, nb[2] = {0, 0};
    bool conj = false;
    ts_boot_config_t bc[2];
    int64_t *es = NULL, *bs[2] = {NULL, NULL};
    int *bl[2] = {NULL, NULL};
    ts_status_t st = ts_llm_enc_rotation_steps(enc, NULL, &ne);
    for (int k = 0; k < 2 && st == TS_OK; k++) {
        if (!extra[k])
            continue;
        bc[k] = *ts_boot_config(extra[k]);
        st = ts_boot_rotation_steps(md->p, &bc[k], NULL, NULL, &nb[k], &conj);
    }
    if (st != TS_OK)
        return st;
    /* the Renyi mode's projection of the logits on their subring */
    int64_t ps[64];
    size_t np = 0;
    if (md->cfg.sanitize_noise_l2_log2 > 0) {
        np = sizeof ps / sizeof ps[0];
        st = ts_ckks_trace_steps(md->p, (size_t)ts_llm_enc_logits_period(enc), ps, &np);
        if (st != TS_OK)
            return st;
    }
    es = ts_calloc(ne + 1, sizeof *es);
    *steps = ts_calloc(ne + nb[0] + nb[1] + np + 1, sizeof **steps);
    *levels = ts_calloc(ne + nb[0] + nb[1] + np + 1, sizeof **levels);
    if (!es || !*steps || !*levels)
        st = TS_ENOMEM;
    for (int k = 0; k < 2 && st == TS_OK; k++) {
        bs[k] = ts_calloc(nb[k] + 1, sizeof *bs[k]);
        bl[k] = ts_calloc(nb[k] + 1, sizeof *bl[k]);
        if (!bs[k] || !bl[k])
            st = TS_ENOMEM;
    }
    if (st == TS_OK)
        st = ts_llm_enc_rotation_steps(enc, es, &ne);
    for (int k = 0; k < 2 && st == TS_OK; k++)
        if (extra[k])
            st = ts_boot_rotation_steps(md->p, &bc[k], bs[k], bl[k], &nb[k], &conj);
    size_t n = 0;
    int lv = ts_llm_enc_rotation_level(enc);
    for (size_t i = 0; i < ne && st == TS_OK; i++)
        step_add(*steps, *levels, &n, es[i], lv);
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; extra[k] && i < nb[k] && st == TS_OK; i++)
            step_add(*steps, *levels, &n, bs[k][i], bl[k][i]);
    for (size_t i = 0; i < np && st == TS_OK; i++)
        step_add(*steps, *levels, &n, ps[i], (int)md->cfg.logits_level);
    *count = n;
    ts_free(es);
    for (int k = 0; k < 2; k++) {
        ts_free(bs[k]);
        ts_free(bl[k]);
    }
    return st;
}

/* The Galois steps of a policy: its engine's and, with TFHE, the StC-first bootstrapper's. */
static ts_status_t policy_steps(ts_dec_model_t *md, dec_policy_t *pl)
{
    return engine_steps(md, pl->enc, pl->tfhe ? md->stc : NULL, &pl->steps, &pl->levels,
                        &pl->n_steps);
}

/* The backend a cost table must have measured for the model's engine: "gpu"
 * on the CUDA backend, else "cpu" (the device-memory emulation computes on
 * the CPU). */
static const char *costs_backend(const ts_dec_model_t *md)
{
    return ts_backend_is_gpu(ts_ring_backend(ts_ckks_params_ring(md->p))) ? "gpu" : "cpu";
}

/*
 * The cost table of the hybrid policy: the model file's `costs` (a path;
 * "none": no table), else the table `tessera bench costs` measured at the
 * model's preset as the repository ships them for the engine's backend
 * (ts_sched_costs_shipped: on a CPU costs_dir/cpu-KERNELS-PARAMS.yaml for its
 * kernels, else costs_dir/cpu-PARAMS.yaml; on a GPU costs_dir/gpu-PARAMS.yaml,
 * never a CPU's). Empty: no table, the default assignment.
 */
static void hybrid_costs_path(const ts_dec_model_t *md, const char *costs_dir, char *path,
                              size_t size)
{
    path[0] = 0;
    if (md->cfg.costs[0]) {
        if (strcmp(md->cfg.costs, "none") != 0)
            snprintf(path, size, "%s", md->cfg.costs);
        return;
    }
    if (!costs_dir || !costs_dir[0])
        return;
    const char *backend = costs_backend(md);
    bool cpu = !strcmp(backend, "cpu");
    if (ts_sched_costs_shipped(costs_dir, md->cfg.params, backend, cpu ? ts_cpu_kernels() : NULL,
                               path, size) == TS_OK)
        return;
    char also[160] = "";
    if (cpu)
        snprintf(also, sizeof also, " (nor cpu-%s-%s.yaml)", ts_cpu_kernels(), md->cfg.params);
    ts_log(TS_LOG_INFO, "decode",
           "model=%s policy=hybrid no cost table %s/%s-%s.yaml%s: the default assignment", md->name,
           costs_dir, backend, md->cfg.params, also);
}

/*
 * The hybrid policy under the cost table at `path`: the cheapest assignment
 * of primitive kinds to CKKS or TFHE at the session's last position
 * (ts_llm_enc_config_best); logged with its prediction.
 */
static ts_status_t hybrid_best(ts_dec_model_t *md, const char *file, const char *path,
                               ts_llm_enc_config_t *cfg, char *err, size_t err_size)
{
    ts_sched_costs_t costs;
    ts_cfg_error_t ce;
    memset(&ce, 0, sizeof ce);
    ts_status_t st = ts_sched_costs_load(path, &costs, &ce);
    if (st != TS_OK) {
        char why[400];
        ts_cfg_error_format(&ce, why, sizeof why);
        snprintf(err, err_size, "%s: costs: %s", file, why);
        return st;
    }
    const char *backend = costs_backend(md);
    if (costs.backend[0] && strcmp(costs.backend, backend) != 0)
        ts_log(TS_LOG_WARN, "decode",
               "model=%s costs=%s measured on backend %s, the engine runs on %s: the hybrid "
               "assignment follows its numbers anyway (`tessera bench costs --backend %s` "
               "measures this machine)",
               md->name, path, costs.backend, backend, backend);
    else if (ts_sched_costs_cpu_mismatch(&costs, ts_cpu_kernels()))
        ts_log(TS_LOG_WARN, "decode",
               "model=%s costs=%s measured with the %s CPU kernels, this machine runs the %s "
               "ones: its predictions are off by a roughly constant factor (`tessera bench "
               "costs` measures this machine)",
               md->name, path, costs.cpu, ts_cpu_kernels());
    if (strcmp(costs.params, md->cfg.params) != 0)
        ts_log(TS_LOG_WARN, "decode",
               "model=%s costs=%s measured at params %s, not %s: the hybrid assignment follows "
               "its numbers anyway",
               md->name, path, costs.params, md->cfg.params);
    double ns = 0;
    st = ts_llm_enc_config_best(md->m, md->p, md->boot, md->log_slots, md->max_ctx, md->max_ctx - 1,
                                TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT, &costs, cfg, &ns);
    if (st != TS_OK) {
        snprintf(err, err_size, "%s: no hybrid assignment runs with params %s: %s", file,
                 md->cfg.params, ts_strerror(st));
        return st;
    }
    char kinds[96];
    ts_llm_kinds_format(ts_llm_enc_config_tfhe_kinds(cfg), kinds, sizeof kinds);
    ts_log(TS_LOG_INFO, "decode",
           "model=%s policy=hybrid tfhe_kinds=%s predicted_s=%.2f position=%d costs=%s", md->name,
           kinds, ns / 1e9, md->max_ctx - 1, path);
    return TS_OK;
}

/*
 * The policies of the model file ("ckks" when none is named): ckks runs the
 * model's engine; hybrid and tfhe an engine of ts_llm_enc_config_policy and
 * need bootstrapping (the conversions recover through a SlotToCoeff-first
 * bootstrapper, shared by the model's sessions).
 */
static ts_status_t model_policies(ts_dec_model_t *md, const char *file, const char *costs_dir,
                                  char *err, size_t err_size)
{
    char list[64];
    snprintf(list, sizeof list, "%s", md->cfg.policies[0] ? md->cfg.policies : "ckks");
    ts_status_t st = TS_OK;
    char *save = NULL;
    for (char *t = strtok_r(list, ", ", &save); t && st == TS_OK; t = strtok_r(NULL, ", ", &save)) {
        ts_sched_policy_t pol;
        if (ts_sched_policy_parse(t, &pol) != TS_OK) {
            snprintf(err, err_size, "%s: policies: unknown policy \"%s\" (ckks, hybrid, tfhe)",
                     file, t);
            return TS_ECONFIG;
        }
        for (size_t i = 0; i < md->n_pol; i++)
            if (md->pol[i].pol == pol) {
                snprintf(err, err_size, "%s: policies: %s named twice", file, t);
                return TS_ECONFIG;
            }
        if (pol != TS_SCHED_CKKS && !md->boot) {
            snprintf(err, err_size,
                     "%s: policies: %s needs bootstrap: true (its conversions recover through "
                     "bootstrapping)",
                     file, t);
            return TS_ECONFIG;
        }
        dec_policy_t *pl = &md->pol[md->n_pol++];
        pl->pol = pol;
        pl->name = ts_sched_policy_name(pol);
        if (pol == TS_SCHED_CKKS) {
            pl->enc = md->enc;
        } else {
            ts_llm_enc_config_t cfg;
            ts_llm_enc_config_policy(&cfg, pol, md->max_ctx);
            cfg.log_slots = md->log_slots;
            char costs[1024] = "";
            if (pol == TS_SCHED_HYBRID)
                hybrid_costs_path(md, costs_dir, costs, sizeof costs);
            if (costs[0] && (st = hybrid_best(md, file, costs, &cfg, err, err_size)) != TS_OK)
                return st;
            if ((st = ts_llm_enc_new(md->m, md->p, &cfg, md->boot, &pl->enc)) != TS_OK ||
                (md->boot_pd && (st = ts_llm_enc_set_boot_period(pl->enc, md->boot_pd)) != TS_OK)) {
                snprintf(err, err_size, "%s: the %s engine cannot run with params %s: %s", file, t,
                         md->cfg.params, ts_strerror(st));
                return st;
            }
            pl->tfhe = ts_llm_enc_uses_tfhe(pl->enc);
        }
        if (pl->tfhe) {
            ts_boot_config_t bc;
            if (!md->stc && ((st = ts_llm_enc_tfhe_boot_config(pl->enc, &bc)) != TS_OK ||
                             (st = ts_boot_new(md->p, &bc, &md->stc)) != TS_OK)) {
                snprintf(err, err_size,
                         "%s: the SlotToCoeff-first bootstrapper of policy %s with params %s: %s",
                         file, t, md->cfg.params, ts_strerror(st));
                return st;
            }
            if ((st = ts_llm_enc_tfhe_literal(pl->enc, &pl->lit)) != TS_OK)
                return st;
        }
        if ((st = policy_steps(md, pl)) != TS_OK) {
            snprintf(err, err_size, "%s: rotation steps of policy %s: %s", file, t,
                     ts_strerror(st));
            return st;
        }
        int mp = ts_llm_enc_max_positions(pl->enc);
        if (mp < md->max_ctx)
            md->max_ctx = mp;
        Tessera__PolicyInfo *pi = &pl->info;
        tessera__policy_info__init(pi);
        pi->policy = (char *)pl->name;
        pi->rotation_steps = pl->steps;
        pi->n_rotation_steps = pl->n_steps;
        pi->rotation_levels = pl->levels;
        pi->n_rotation_levels = pl->n_steps;
        pi->input_level = (uint32_t)ts_llm_enc_input_level(pl->enc);
        pi->tfhe = pl->tfhe;
        ts_llm_kinds_format(ts_llm_enc_tfhe_kinds(pl->enc), pl->kinds, sizeof pl->kinds);
        pi->tfhe_kinds = pl->kinds;
        if (pl->tfhe) {
            pi->tfhe_preset = (char *)pl->lit.name;
            pi->tfhe_log_n_br = pl->lit.log_n_br;
            pi->tfhe_br_levels = pl->lit.br_levels;
            /* the conversion's own 128-bit gate (small ring, its keys, small LWE) */
            pi->tfhe_insecure =
                pl->lit.insecure || ts_convert_security_check(md->p, &pl->lit, NULL, 0) != TS_OK;
        }
        md->pol_names[md->n_pol - 1] = (char *)pl->name;
        md->pol_info[md->n_pol - 1] = pi;
    }
    return st;
}

/* The Renyi mode's reply budget (sanitize_state, sanitize_budget). */
static ts_status_t budget_open(ts_dec_model_t *md, const char *file, bool check, char *err,
                               size_t err_size)
{
    const dec_model_cfg_t *c = &md->cfg;
    bool refuse = c->sanitize_budget == 1;
    if ((c->sanitize_state[0] || c->sanitize_budget >= 0) && md->san.mode != TS_LLM_SANITIZE_RD) {
        snprintf(err, err_size,
                 "%s: sanitize_state and sanitize_budget count the Renyi mode's replies "
                 "(sanitize_noise_l2_log2 > 0); the uniform mode has no reply budget",
                 file);
        return TS_ECONFIG;
    }
    if (refuse && !c->sanitize_state[0]) {
        snprintf(err, err_size,
                 "%s: sanitize_budget: refuse needs sanitize_state (a count that a restart "
                 "resets bounds nothing)",
                 file);
        return TS_ECONFIG;
    }
    md->san_refuse = refuse;
    if (!c->sanitize_state[0])
        return TS_OK;
    uint8_t sha[TS_SHA256_BYTES];
    char why[400] = "";
    ts_status_t st = ts_sha256_path(c->path, sha);
    uint64_t n = 0;
    if (st == TS_OK)
        st = check ? ts_san_state_check(c->sanitize_state, sha, &n, why, sizeof why)
                   : ts_san_state_open(c->sanitize_state, sha, &md->san_state, why, sizeof why);
    if (st != TS_OK) {
        snprintf(err, err_size, "%s: sanitize_state: %s", file, why[0] ? why : ts_strerror(st));
        return st == TS_EIO ? TS_EIO : TS_ECONFIG;
    }
    if (check) /* checked, not held: the count as read, for the log */
        atomic_store(&md->replies, n);
    return TS_OK;
}

/* Whether buf[0..n) is UTF-8 without NUL bytes (shortest forms, no surrogates). */
static bool text_ok(const uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t b = buf[i];
        size_t len = b < 0x80             ? 1
                     : (b & 0xE0) == 0xC0 ? 2
                     : (b & 0xF0) == 0xE0 ? 3
                     : (b & 0xF8) == 0xF0 ? 4
                                          : 0;
        if (!b || !len || i + len > n)
            return false;
        uint32_t cp = len == 1 ? b : len == 2 ? b & 0x1Fu : len == 3 ? b & 0x0Fu : b & 0x07u;
        for (size_t k = 1; k < len; k++) {
            if ((buf[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (buf[i + k] & 0x3Fu);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* draft_text: the whole file (public text, one sequence per line), read
 * once at load and checked: a regular file of 1 byte to TS_DEC_DRAFT_MAX,
 * UTF-8 without NUL bytes. */
static ts_status_t draft_load(ts_dec_model_t *md, const char *file, char *err, size_t err_size)
{
    const char *path = md->cfg.draft_text;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, err_size, "%s: draft_text %s: %s", file, path,
                 fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return TS_ECONFIG;
    }
    if (sb.st_size < 1 || (uint64_t)sb.st_size > TS_DEC_DRAFT_MAX) {
        snprintf(err, err_size, "%s: draft_text %s: %lld bytes (1 to %llu)", file, path,
                 (long long)sb.st_size, (unsigned long long)TS_DEC_DRAFT_MAX);
        close(fd);
        return TS_ECONFIG;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    md->draft = ts_malloc(n);
    if (!md->draft) {
        close(fd);
        return TS_ENOMEM;
    }
    while (got < n) {
        ssize_t r = read(fd, md->draft + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n || !text_ok(md->draft, n)) {
        snprintf(err, err_size, "%s: draft_text %s: %s", file, path,
                 got != n ? "short read" : "not UTF-8 text (or holds NUL bytes)");
        return TS_ECONFIG;
    }
    md->draft_n = n;
    return ts_sha256(md->draft, n, md->draft_sha);
}

static ts_status_t model_load(ts_dec_model_t *md, const char *file, const char *params_dir,
                              const char *costs_dir, unsigned flags, char *err, size_t err_size)
{
    dec_model_cfg_t *c = &md->cfg;
    memset(c, 0, sizeof *c);
    c->max_context = 1 << 20;
    c->max_sessions = 4;
    c->session_memory_bytes = 8 * GiB;
    c->sanitize_lambda = 40;
    c->sanitize_queries_log2 = 12.0;
    c->sanitize_budget = -1;
    c->logits_level = 0;
    ts_cfg_error_t ce;
    memset(&ce, 0, sizeof ce);
    ts_status_t st = ts_config_load_file(file, model_table, c, NULL, &ce);
    if (st != TS_OK) {
        ts_cfg_error_format(&ce, err, err_size);
        return st;
    }
    if (c->draft_text[0] && (st = draft_load(md, file, err, err_size)) != TS_OK)
        return st;
    char why[256] = "";
    st = ts_llm_model_load(md->cfg.path, &md->m, why, sizeof why);
    if (st != TS_OK) {
        snprintf(err, err_size, "%s: model %s: %s", file, c->path, why[0] ? why : ts_strerror(st));
        return st;
    }
    st = ts_wire_params_get(params_dir, c->params, (flags & TS_DEC_LOAD_INSECURE) != 0, &md->p,
                            md->pid, why, sizeof why);
    if (st != TS_OK) {
        snprintf(err, err_size, "%s: params %s: %s", file, c->params,
                 why[0] ? why : ts_strerror(st));
        return st;
    }
    /* prefill_lanes: every ciphertext carries that many lanes of the working
     * slots (ts_llm_enc_config_t lanes), policy ckks only */
    int lanes = c->prefill_lanes > 1 ? (int)c->prefill_lanes : 1, ll = 0;
    while ((1 << ll) < lanes)
        ll++;
    if (lanes != 1 << ll || (lanes > 1 && !c->bootstrap)) {
        snprintf(err, err_size,
                 "%s: prefill_lanes %lld: a power of two from 2 to 64, with bootstrap: true", file,
                 (long long)c->prefill_lanes);
        return TS_ECONFIG;
    }
    if (lanes > 1 && c->policies[0] && strcmp(c->policies, "ckks") != 0) {
        snprintf(err, err_size,
                 "%s: prefill_lanes serves policy ckks only (policies: %s): look-ups read one "
                 "lane's layout",
                 file, c->policies);
        return TS_ECONFIG;
    }
    /* sparse packing: the fewest slots that hold max_context positions (cheaper
     * bootstraps and rotations; ModelInfo.slots tells the clients), times the lanes */
    md->log_slots = ts_llm_enc_log_slots_for(md->m, md->p, (int)c->max_context);
    if (md->log_slots + ll > ts_ckks_params_log_slots(md->p))
        md->log_slots = ts_ckks_params_log_slots(md->p) - ll; /* fewer positions per lane */
    int ctx = ts_llm_enc_positions_for(md->m, md->log_slots);
    if (c->max_context < ctx)
        ctx = (int)c->max_context;
    /* the ckks policy's approximations for that context (an approx file overrides) */
    ts_llm_enc_config_t ecfg;
    ts_llm_enc_config_policy(&ecfg, TS_SCHED_CKKS, ctx);
    if (c->approx[0] && (st = load_approx(c->approx, &ecfg, why, sizeof why)) != TS_OK) {
        snprintf(err, err_size, "%s: approx %s: %s", file, c->approx, why);
        return st;
    }
    ecfg.log_slots = md->log_slots;
    ecfg.lanes = lanes;
    /* the DFT budgets as in every mode (session 43 kept the defaults in the
     * Renyi mode: the chosen ones left aidreams260K's logits 2^22.79 at 8
     * positions, from bootstraps at ENC_BOOT_BOUND that session 44 bounded:
     * 2^18.10 since; docs/SECURITY.md) */
    /* without an approx file, the finer approximations the engine's levels
     * give for free (its plans' bootstraps and time unchanged) */
    if (!c->approx[0] && c->bootstrap &&
        ts_llm_enc_config_refine(md->m, md->p, &ecfg, ctx,
                                 TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT) == TS_ENOMEM)
        return TS_ENOMEM;
    ts_log(TS_LOG_INFO, "decode", "model=%s approximations %s_degree=%d rsqrt_degree=%d (%s)",
           md->name, ts_llm_model_config(md->m)->arch == TS_LLM_ARCH_GPT2 ? "gelu" : "silu",
           ts_llm_enc_config_act(&ecfg, md->m)->degree,
           ecfg.eval_rsqrt == TS_LLM_EVAL_CKKS ? ecfg.rsqrt.degree : 0,
           c->approx[0] ? c->approx : "policy ckks, finer where free");
    if (c->bootstrap) {
        ts_boot_config_t bc;
        /* dense-secret presets bootstrap with sparse-secret encapsulation
         * (ts_llm_boot_encap_h); the DFT level budgets of the fewest bootstraps a step (ModelInfo
         * tells the clients, whose keys follow them; the defaults when the
         * engine cannot plan, which the checks below then explain) */
        if (ts_llm_enc_boot_budgets(md->m, md->p, &ecfg, ctx,
                                    TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT,
                                    &ecfg.boot_cts_levels, &ecfg.boot_stc_levels) != TS_OK)
            ecfg.boot_cts_levels = ecfg.boot_stc_levels = 0;
        if ((st = ts_llm_boot_config(md->p, md->log_slots + ll, ts_llm_boot_encap_h(md->p),
                                     ecfg.boot_cts_levels, ecfg.boot_stc_levels, &bc)) != TS_OK ||
            (st = ts_boot_new(md->p, &bc, &md->boot)) != TS_OK) {
            snprintf(err, err_size, "%s: bootstrapping with params %s: %s", file, c->params,
                     ts_strerror(st));
            return st;
        }
        ts_log(TS_LOG_INFO, "decode",
               "model=%s bootstrap slots=%d cts_levels=%d stc_levels=%d levels_left=%d encap_h=%d "
               "(%s)",
               md->name, 1 << bc.log_slots, bc.cts_levels, bc.stc_levels,
               ts_boot_levels_left(md->boot), bc.encap_h,
               "the fewest bootstraps, then the most DFT levels");
    }
    why[0] = 0;
    st = ts_llm_enc_supports(md->m, md->p, why, sizeof why);
    if (st == TS_OK)
        st = ts_llm_enc_new(md->m, md->p, &ecfg, md->boot, &md->enc);
    if (st != TS_OK) {
        snprintf(err, err_size, "%s: the encrypted engine cannot run this model with params %s: %s",
                 file, c->params, why[0] ? why : ts_strerror(st));
        return st;
    }
    /* the residual stream repeats every pow2(dim) slots: its own, cheaper
     * bootstrapper at that count when the preset leaves it as many levels */
    ts_boot_config_t pc;
    if (md->boot && ts_llm_enc_period_boot_config(md->enc, &pc) == TS_OK &&
        ((st = ts_boot_new(md->p, &pc, &md->boot_pd)) != TS_OK ||
         (st = ts_llm_enc_set_boot_period(md->enc, md->boot_pd)) != TS_OK)) {
        snprintf(err, err_size, "%s: the residual stream's bootstrapper (%d slots): %s", file,
                 1 << pc.log_slots, ts_strerror(st));
        return st;
    }
    if ((st = engine_steps(md, md->enc, NULL, &md->steps, &md->levels, &md->n_steps)) != TS_OK)
        return st;
    md->max_ctx = ts_llm_enc_max_positions(md->enc);
    if (c->max_context < md->max_ctx)
        md->max_ctx = (int)c->max_context;
    if ((st = model_policies(md, file, costs_dir, err, err_size)) != TS_OK)
        return st;
    if (c->sanitize_noise_l2_log2 > 0) {
        st = ts_llm_sanitize_plan_rd(md->p, (int)c->logits_level, ts_llm_enc_logits_period(md->enc),
                                     c->sanitize_noise_l2_log2, c->sanitize_queries_log2, &md->san);
        if (st == TS_ENOTSUP) {
            snprintf(err, err_size,
                     "%s: sanitize_noise_l2_log2 needs params of N/2 slots (the projection's "
                     "Galois keys); %s has 2^%d of N = 2^%d",
                     file, c->params, ts_ckks_params_log_slots(md->p), ts_ckks_params_log_n(md->p));
            return TS_ECONFIG;
        }
        if (st != TS_OK) {
            snprintf(err, err_size,
                     "%s: sanitize_noise_l2_log2 %.2f with sanitize_queries_log2 %.1f: a flood "
                     "of sigma 2^%.1f does not fit level %lld of params %s",
                     file, c->sanitize_noise_l2_log2, c->sanitize_queries_log2, md->san.sigma_log2,
                     (long long)c->logits_level, c->params);
            return TS_ECONFIG;
        }
    } else {
        st = ts_llm_sanitize_plan(md->p, (int)c->logits_level, (int)c->sanitize_lambda, &md->san);
    }
    if (st != TS_OK) {
        snprintf(err, err_size,
                 "%s: sanitize_lambda %lld does not fit level %lld of params %s (flooding 2^%.0f)",
                 file, (long long)c->sanitize_lambda, (long long)c->logits_level, c->params,
                 md->san.flood_log2);
        return TS_ECONFIG;
    }
    if (md->san.precision_bits < 4.0) {
        snprintf(err, err_size,
                 "%s: %s %lld leaves %.1f bits of logit precision at scale 2^%.0f "
                 "(error up to %.3g): lower it or use params with a larger scale",
                 file,
                 md->san.mode == TS_LLM_SANITIZE_RD ? "the flood of sanitize_queries_log2"
                                                    : "sanitize_lambda",
                 md->san.mode == TS_LLM_SANITIZE_RD ? (long long)c->sanitize_queries_log2
                                                    : (long long)c->sanitize_lambda,
                 md->san.precision_bits, ts_ckks_params_scale_log2(md->p), md->san.err_bound);
        return TS_ECONFIG;
    }
    if ((st = budget_open(md, file, (flags & TS_DEC_LOAD_CHECK) != 0, err, err_size)) != TS_OK)
        return st;
    const ts_llm_config_t *mc = ts_llm_model_config(md->m);
    uint64_t ct_bytes =
        2ull * (uint64_t)(ts_ckks_params_max_level(md->p) + 1) * ts_ckks_params_n(md->p) * 8ull;
    /* K and V per layer; a model with lanes may also hold a speculative
     * pass's rows until the next step (ts_llm_enc_prefill_speculative) */
    md->kv_bytes = (c->prefill_lanes > 1 ? 4ull : 2ull) * (uint64_t)mc->n_layers * ct_bytes;
    return TS_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ts_status_t ts_dec_registry_load(const char *models_dir, const char *params_dir,
                                 const char *costs_dir, unsigned flags, ts_dec_registry_t **out,
                                 char *err, size_t err_size)
{
    *out = NULL;
    ts_dec_registry_t *r = ts_calloc(1, sizeof *r);
    if (!r)
        return TS_ENOMEM;
    if (!models_dir || !models_dir[0]) {
        *out = r;
        return TS_OK;
    }
    DIR *d = opendir(models_dir);
    if (!d) {
        snprintf(err, err_size, "models_dir %s: cannot open", models_dir);
        ts_free(r);
        return TS_EIO;
    }
    char *names[MAX_MODELS];
    size_t n = 0;
    ts_status_t st = TS_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
            continue;
        if (!name_ok(de->d_name, len - 5)) {
            snprintf(err, err_size, "%s/%s: model names are [a-z0-9_.-], at most 63 characters",
                     models_dir, de->d_name);
            st = TS_ECONFIG;
            break;
        }
        if (n == MAX_MODELS) {
            snprintf(err, err_size, "%s: more than %d models", models_dir, MAX_MODELS);
            st = TS_ELIMIT;
            break;
        }
        names[n] = ts_malloc(len + 1);
        if (!names[n]) {
            st = TS_ENOMEM;
            break;
        }
        memcpy(names[n], de->d_name, len + 1);
        n++;
    }
    closedir(d);
    if (st == TS_OK && n) {
        qsort(names, n, sizeof names[0], cmp_str);
        r->models = ts_calloc(n, sizeof *r->models);
        if (!r->models)
            st = TS_ENOMEM;
    }
    for (size_t i = 0; i < n && st == TS_OK; i++) {
        ts_dec_model_t *md = &r->models[r->n++];
        size_t len = strlen(names[i]) - 5;
        memcpy(md->name, names[i], len);
        md->name[len] = 0;
        char file[1024];
        snprintf(file, sizeof file, "%s/%s", models_dir, names[i]);
        st = model_load(md, file, params_dir, costs_dir, flags, err, err_size);
        if (st == TS_OK)
            ts_log(
                TS_LOG_INFO, "tesserad",
                "event=model_loaded model=%s params=%s max_context=%d lanes=%d rotation_keys=%zu "
                "bootstrap=%d stream_bootstrap_slots=%d policies=%s sanitize=%s "
                "sanitize_lambda=%d logits_level=%d logit_err_bound=%.3g norm_defer=%d",
                md->name, md->cfg.params, md->max_ctx, ts_llm_enc_lanes(md->enc), md->n_steps,
                md->boot != NULL, md->boot_pd ? 1 << ts_boot_config(md->boot_pd)->log_slots : 0,
                md->cfg.policies[0] ? md->cfg.policies : "ckks",
                md->san.mode == TS_LLM_SANITIZE_RD ? "renyi" : "uniform", md->san.lambda,
                md->san.level, md->san.err_bound, ts_llm_enc_norm_defer(md->enc));
        if (st == TS_OK && md->draft) {
            char hex[2 * TS_SHA256_BYTES + 1];
            ts_sha256_hex(md->draft_sha, hex);
            ts_log(TS_LOG_INFO, "tesserad",
                   "event=draft_text model=%s path=%s bytes=%zu sha256=%s: published to every "
                   "client for its n-gram draft (public text; docs/SECURITY.md)",
                   md->name, md->cfg.draft_text, md->draft_n, hex);
        }
        if (st == TS_OK && md->san.mode == TS_LLM_SANITIZE_RD)
            ts_log(TS_LOG_INFO, "tesserad",
                   "event=sanitize model=%s mode=renyi period=%d noise_l2_log2=%.2f "
                   "sigma_log2=%.2f queries_log2=%.1f renyi_divergence=%.3f: the logits are "
                   "projected on their subring and flooded so that 2^%.0f replies stay within "
                   "a Renyi divergence of %.0f of replies without the computation's noise, as "
                   "long as that noise stays below the stated bound (docs/SECURITY.md)",
                   md->name, md->san.period, md->san.noise_log2, md->san.sigma_log2,
                   md->san.queries_log2, md->san.rd, md->san.queries_log2, md->san.rd);
        if (st == TS_OK && md->san.mode == TS_LLM_SANITIZE_RD)
            ts_log(md->cfg.sanitize_state[0] ? TS_LOG_INFO : TS_LOG_WARN, "tesserad",
                   "event=sanitize_state model=%s state=%s replies=%llu queries_log2=%.1f "
                   "budget=%s%s",
                   md->name, md->cfg.sanitize_state[0] ? md->cfg.sanitize_state : "none",
                   (unsigned long long)ts_dec_model_replies(md), md->san.queries_log2,
                   md->san_refuse ? "refuse" : "warn",
                   md->cfg.sanitize_state[0]
                       ? ""
                       : ": the replies are counted per process (a restart resets "
                         "the count; set sanitize_state to keep it)");
        if (st == TS_OK && md->san.mode != TS_LLM_SANITIZE_RD)
            ts_log(TS_LOG_WARN, "tesserad",
                   "event=sanitize_limit model=%s: the logits' flooding (2^%.1f) is sized from "
                   "an estimate of their noise (2^%.1f) that the noise measured before "
                   "sanitization exceeds by 13-17 bits at the presets measured (docs/SECURITY.md): "
                   "it does not hide the weights from the client (the client's privacy does not "
                   "depend on it)",
                   md->name, md->san.flood_log2, md->san.noise_log2);
    }
    for (size_t i = 0; i < n; i++)
        ts_free(names[i]);
    if (st != TS_OK) {
        ts_dec_registry_free(r);
        return st;
    }
    *out = r;
    return TS_OK;
}

size_t ts_dec_registry_count(const ts_dec_registry_t *r)
{
    return r ? r->n : 0;
}

ts_dec_model_t *ts_dec_find(ts_dec_registry_t *r, const char *name)
{
    if (!r || r->n == 0)
        return NULL;
    if (!name || !name[0])
        return &r->models[0];
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->models[i].name, name) == 0)
            return &r->models[i];
    return NULL;
}

void ts_dec_registry_names(const ts_dec_registry_t *r, char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = 0;
    for (size_t i = 0; r && i < r->n && used + 1 < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", r->models[i].name);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
}

const char *ts_dec_model_name(const ts_dec_model_t *md)
{
    return md->name;
}

int *ts_dec_model_sessions(ts_dec_model_t *md)
{
    return &md->sessions;
}

int ts_dec_model_max_sessions(const ts_dec_model_t *md)
{
    return (int)md->cfg.max_sessions;
}

const char *ts_dec_model_params(const ts_dec_model_t *md)
{
    return md->cfg.params;
}

static const dec_policy_t *find_policy(const ts_dec_model_t *md, const char *policy)
{
    if (!policy || !policy[0])
        policy = "ckks";
    for (size_t i = 0; i < md->n_pol; i++)
        if (strcmp(md->pol[i].name, policy) == 0)
            return &md->pol[i];
    return NULL;
}

ts_status_t ts_dec_policy_check(const ts_dec_model_t *md, const char *policy, char *why,
                                size_t why_size)
{
    if (find_policy(md, policy))
        return TS_OK;
    if (!policy || !policy[0])
        policy = "ckks";
    ts_sched_policy_t p;
    if (ts_sched_policy_parse(policy, &p) != TS_OK) {
        snprintf(why, why_size, "unknown policy (one of ckks, hybrid, tfhe)");
        return TS_EINVAL;
    }
    char list[64] = "";
    for (size_t i = 0, u = 0; i < md->n_pol && u < sizeof list; i++)
        u += (size_t)snprintf(list + u, sizeof list - u, "%s%s", i ? ", " : "", md->pol[i].name);
    snprintf(why, why_size,
             "model %s does not serve policy %s (served: %s; the model file's `policies` names "
             "them, and hybrid and tfhe need bootstrapping)",
             md->name, policy, list);
    return TS_ENOTSUP;
}

void ts_dec_model_info(const ts_dec_model_t *md, Tessera__ModelInfo *mi)
{
    const ts_llm_config_t *c = ts_llm_model_config(md->m);
    mi->model = (char *)md->name;
    mi->param_id = (char *)md->cfg.params;
    mi->params_sha256.data = (uint8_t *)md->pid;
    mi->params_sha256.len = TS_SHA256_BYTES;
    mi->log_n = (uint32_t)ts_ckks_params_log_n(md->p);
    mi->slots = (uint32_t)ts_llm_enc_slots(md->enc);
    mi->lanes = (uint32_t)ts_llm_enc_lanes(md->enc);
    mi->rotation_steps = md->steps;
    mi->n_rotation_steps = md->n_steps;
    mi->rotation_levels = md->levels;
    mi->n_rotation_levels = md->n_steps;
    mi->encap_h = md->boot ? ts_boot_config(md->boot)->encap_h : 0;
    mi->boot_cts_levels = md->boot ? (uint32_t)ts_boot_config(md->boot)->cts_levels : 0;
    mi->boot_stc_levels = md->boot ? (uint32_t)ts_boot_config(md->boot)->stc_levels : 0;
    mi->bootstrap = md->boot != NULL;
    mi->vocab = (uint32_t)c->vocab_size;
    mi->dim = (uint32_t)c->dim;
    mi->n_layers = (uint32_t)c->n_layers;
    mi->arch = (char *)ts_llm_arch_name(c->arch);
    mi->max_context = (uint32_t)md->max_ctx;
    mi->input_level = (uint32_t)ts_llm_enc_input_level(md->enc);
    mi->policies = (char **)md->pol_names;
    mi->n_policies = md->n_pol;
    mi->policy_info = (Tessera__PolicyInfo **)md->pol_info;
    mi->n_policy_info = md->n_pol;
    mi->token_input = (char *)"onehot";
    mi->logits_level = (uint32_t)md->san.level;
    mi->public_prefix = true;
    mi->sanitize_lambda = md->san.lambda;
    mi->logits_err_bound = md->san.err_bound;
    if (md->san.mode == TS_LLM_SANITIZE_RD) {
        mi->sanitize_mode = (char *)"renyi";
        mi->sanitize_sigma_log2 = md->san.sigma_log2;
        mi->sanitize_queries_log2 = md->san.queries_log2;
        mi->logits_period = (uint32_t)md->san.period;
        mi->sanitize_replies = ts_dec_model_replies(md);
        mi->sanitize_budget = md->san_refuse ? (char *)"refuse" : (char *)"warn";
        mi->sanitize_persistent = md->san_state != NULL;
    } else {
        mi->sanitize_mode = (char *)"uniform";
    }
    mi->session_memory_bytes = (uint64_t)md->cfg.session_memory_bytes;
    mi->draft_text_bytes = md->draft_n;
    if (md->draft) {
        mi->draft_text_sha256.data = (uint8_t *)md->draft_sha;
        mi->draft_text_sha256.len = TS_SHA256_BYTES;
    }
}

const uint8_t *ts_dec_model_draft(const ts_dec_model_t *md, size_t *n)
{
    *n = md ? md->draft_n : 0;
    return md ? md->draft : NULL;
}

/* --------------------------------------------------------------- sessions */

void ts_dec_session_free(ts_dec_session_t *s)
{
    if (!s)
        return;
    ts_llm_enc_session_free(s->s);
    ts_llm_state_free(s->plain);
    ts_boot_free(s->boot);
    ts_boot_free(s->stc);
    ts_boot_free(s->boot_pd);
    ts_boot_encap_keys_free(s->encap);
    ts_convert_free(s->cv);
    ts_ckks_evaluator_free(s->ev);
    ts_ckks_evalkeys_free(s->ek);
    ts_ckks_public_key_free(s->pk);
    ts_prng_free(s->prng);
    ts_free(s);
}

uint64_t ts_dec_session_memory(const ts_dec_session_t *s)
{
    return s ? s->mem : 0;
}

/* The conversion keys of a TFHE policy: bound to the model's CKKS params and the policy's literal.
 */
static ts_status_t load_convert(ts_dec_session_t *s, size_t i, const ts_dec_blob_t *key, char *why,
                                size_t why_size)
{
    const dec_policy_t *pl = s->pol;
    if (!pl->tfhe) {
        snprintf(why, why_size, "key %zu is a conversion key set, which policy %s does not use", i,
                 pl->name);
        return TS_EINVAL;
    }
    if (s->cv) {
        snprintf(why, why_size, "two conversion key sets");
        return TS_EINVAL;
    }
    ts_status_t st = ts_convert_keys_deserialize(s->md->p, &pl->lit, key->data, key->size, &s->cv);
    if (st == TS_EMISMATCH)
        snprintf(why, why_size,
                 "key %zu: the conversion keys belong to other parameters than %s's (CKKS %s, "
                 "TFHE %s with log_n_br %u, br_levels %u: PolicyInfo)",
                 i, s->md->name, s->md->cfg.params, pl->lit.name, pl->lit.log_n_br,
                 pl->lit.br_levels);
    else if (st != TS_OK)
        snprintf(why, why_size, "key %zu: the conversion keys do not parse: %s", i,
                 ts_strerror(st));
    return st;
}

ts_status_t ts_dec_session_open(ts_dec_model_t *md, const char *policy, size_t n_keys,
                                ts_dec_key_load_fn load, void *load_ctx, uint64_t memory_cap,
                                ts_dec_session_t **out, char *why, size_t why_size)
{
    *out = NULL;
    const dec_policy_t *pl = find_policy(md, policy);
    if (!pl)
        return ts_dec_policy_check(md, policy, why, why_size);
    ts_dec_session_t *s = ts_calloc(1, sizeof *s);
    if (!s)
        return TS_ENOMEM;
    s->md = md;
    s->pol = pl;
    ts_status_t st = ts_ckks_evalkeys_new(md->p, &s->ek);
    if (st == TS_OK)
        st = ts_prng_new_os(&s->prng);
    /* one blob in memory at a time: at N = 2^16 the Galois keys are GBs */
    ts_dec_blob_t blob = {NULL, 0};
    for (size_t i = 0; i < n_keys && st == TS_OK; i++) {
        ts_free((void *)blob.data);
        blob.data = NULL;
        blob.size = 0;
        uint8_t *d = NULL;
        st = load(load_ctx, i, &d, &blob.size, why, why_size);
        blob.data = d;
        if (st != TS_OK)
            break;
        ts_serial_header_t h;
        st = ts_serial_peek(blob.data, blob.size, &h);
        if (st != TS_OK) {
            snprintf(why, why_size, "key %zu is not a serialized object", i);
            break;
        }
        if (h.type == TS_OBJ_RING_SWITCH_KEY) {
            /* bound to SHA-256(CKKS id || TFHE id): checked by the parser */
            st = load_convert(s, i, &blob, why, why_size);
            continue;
        }
        if (memcmp(h.param_id, md->pid, TS_SHA256_BYTES) != 0) {
            snprintf(why, why_size, "key %zu belongs to other parameters than %s's (%s)", i,
                     md->name, md->cfg.params);
            st = TS_EMISMATCH;
            break;
        }
        switch (h.type) {
        case TS_OBJ_PUBLIC_KEY:
            if (s->pk) {
                snprintf(why, why_size, "two public keys");
                st = TS_EINVAL;
                break;
            }
            st = ts_ckks_public_key_deserialize(md->p, blob.data, blob.size, &s->pk);
            break;
        case TS_OBJ_RELIN_KEY:
            st = ts_ckks_relin_key_deserialize(s->ek, blob.data, blob.size);
            break;
        case TS_OBJ_GALOIS_KEYS:
            st = ts_ckks_galois_keys_deserialize(s->ek, blob.data, blob.size);
            break;
        case TS_OBJ_BOOTSTRAP_KEYS:
            if (!md->boot || ts_boot_config(md->boot)->encap_h <= 0) {
                snprintf(why, why_size,
                         "key %zu is a set of encapsulation keys, which model %s does not use", i,
                         md->name);
                st = TS_EINVAL;
            } else if (s->encap) {
                snprintf(why, why_size, "two sets of encapsulation keys");
                st = TS_EINVAL;
            } else {
                st = ts_boot_encap_keys_deserialize(md->p, ts_boot_config(md->boot), blob.data,
                                                    blob.size, &s->encap);
            }
            break;
        default:
            snprintf(why, why_size,
                     "key %zu has object type %u, not a public, relinearization, "
                     "Galois, encapsulation or conversion key",
                     i, h.type);
            st = TS_EINVAL;
            break;
        }
        if (st != TS_OK && !why[0])
            snprintf(why, why_size, "key %zu does not parse: %s", i, ts_strerror(st));
    }
    ts_free((void *)blob.data);
    if (st == TS_OK && !s->pk) {
        snprintf(why, why_size,
                 "the session needs the client's public key (logits are "
                 "re-randomized under it)");
        st = TS_ENOKEY;
    }
    if (st == TS_OK && !ts_ckks_evalkeys_has_relin(s->ek)) {
        snprintf(why, why_size, "the session needs a relinearization key");
        st = TS_ENOKEY;
    }
    if (st == TS_OK && md->boot && ts_boot_config(md->boot)->encap_h > 0 && !s->encap) {
        snprintf(why, why_size,
                 "model %s bootstraps with sparse-secret encapsulation (h' = %d, "
                 "ModelInfo.encap_h): the session needs the client's encapsulation keys "
                 "(ts_boot_encap_keygen)",
                 md->name, ts_boot_config(md->boot)->encap_h);
        st = TS_ENOKEY;
    }
    if (st == TS_OK && pl->tfhe && !s->cv) {
        snprintf(why, why_size,
                 "policy %s needs the client's CKKS-TFHE conversion keys (ts_convert_keygen with "
                 "the TFHE literal of PolicyInfo)",
                 pl->name);
        st = TS_ENOKEY;
    }
    for (size_t i = 0; i < pl->n_steps && st == TS_OK; i++) {
        int have = ts_ckks_evalkeys_rotation_level(s->ek, pl->steps[i]);
        if (have < 0) {
            snprintf(why, why_size,
                     "no rotation key for step %lld (PolicyInfo.rotation_steps of policy %s)",
                     (long long)pl->steps[i], pl->name);
            st = TS_ENOKEY;
        } else if (have < pl->levels[i]) {
            snprintf(why, why_size,
                     "the rotation key for step %lld serves levels up to %d; policy %s rotates at "
                     "level %d (PolicyInfo.rotation_levels)",
                     (long long)pl->steps[i], have, pl->name, (int)pl->levels[i]);
            st = TS_ENOKEY;
        }
    }
    if (st == TS_OK && md->boot) {
        size_t nb = 0;
        bool conj = false;
        ts_boot_config_t bc = *ts_boot_config(md->boot);
        st = ts_boot_rotation_steps(md->p, &bc, NULL, NULL, &nb, &conj);
        int64_t *bs = st == TS_OK ? ts_calloc(nb ? nb : 1, sizeof *bs) : NULL;
        int *bl = st == TS_OK ? ts_calloc(nb ? nb : 1, sizeof *bl) : NULL;
        if (st == TS_OK && (!bs || !bl))
            st = TS_ENOMEM;
        if (st == TS_OK)
            st = ts_boot_rotation_steps(md->p, &bc, bs, bl, &nb, &conj);
        for (size_t i = 0; i < nb && st == TS_OK; i++)
            if (ts_ckks_evalkeys_rotation_level(s->ek, bs[i]) < bl[i]) {
                snprintf(why, why_size,
                         "no bootstrapping rotation key for step %lld serving level %d",
                         (long long)bs[i], bl[i]);
                st = TS_ENOKEY;
            }
        ts_free(bl);
        if (st == TS_OK && conj && !ts_ckks_evalkeys_has_conjugate(s->ek)) {
            snprintf(why, why_size, "no conjugation key (bootstrapping needs it)");
            st = TS_ENOKEY;
        }
        ts_free(bs);
    }
    /* memory: the expanded keys (exact) and the KV cache at most kv_bytes */
    s->mem =
        ts_ckks_evalkeys_bytes(s->ek) + (s->cv ? ts_convert_keys_bytes(s->cv) : 0) + md->kv_bytes;
    if (st == TS_OK && (s->mem > (uint64_t)md->cfg.session_memory_bytes || s->mem > memory_cap)) {
        snprintf(why, why_size,
                 "session would hold about %llu MiB (keys and KV cache), over the limit of %llu "
                 "MiB",
                 (unsigned long long)(s->mem >> 20),
                 (unsigned long long)((uint64_t)md->cfg.session_memory_bytes < memory_cap
                                          ? (uint64_t)md->cfg.session_memory_bytes >> 20
                                          : memory_cap >> 20));
        st = TS_ELIMIT;
    }
    if (st == TS_OK)
        st = ts_ckks_evaluator_new(md->p, s->ek, &s->ev);
    if (st == TS_OK)
        st = ts_llm_enc_session_new(pl->enc, s->ev, &s->s);
    if (st == TS_OK && s->encap) {
        /* the shared bootstrappers, with this client's encapsulation keys */
        st = ts_boot_view(md->boot, s->encap, &s->boot);
        if (st == TS_OK)
            st = ts_llm_enc_session_set_boot(s->s, s->boot);
        if (st == TS_OK && md->boot_pd)
            st = ts_boot_view(md->boot_pd, s->encap, &s->boot_pd);
        if (st == TS_OK && md->boot_pd)
            st = ts_llm_enc_session_set_boot_period(s->s, s->boot_pd);
        if (st == TS_OK && pl->tfhe)
            st = ts_boot_view(md->stc, s->encap, &s->stc);
        if (st != TS_OK)
            snprintf(why, why_size, "the encapsulation keys: %s", ts_strerror(st));
    }
    if (st == TS_OK && pl->tfhe &&
        (st = ts_llm_enc_session_set_tfhe(s->s, s->cv, s->stc ? s->stc : md->stc)) != TS_OK)
        snprintf(why, why_size, "the TFHE side of policy %s: %s", pl->name, ts_strerror(st));
    if (st != TS_OK) {
        if (!why[0])
            snprintf(why, why_size, "%s", ts_strerror(st));
        ts_dec_session_free(s);
        return st;
    }
    *out = s;
    return TS_OK;
}

int ts_dec_session_next_pos(const ts_dec_session_t *s)
{
    return s->next_pos;
}

int ts_dec_session_pending(const ts_dec_session_t *s)
{
    return s->broken ? 0 : ts_llm_enc_pending(s->s);
}

int ts_dec_session_max_context(const ts_dec_session_t *s)
{
    return s->md->max_ctx;
}

void ts_dec_result_clear(ts_dec_result_t *r)
{
    if (!r)
        return;
    ts_free(r->logits);
    memset(r, 0, sizeof *r);
}

const char *const ts_dec_stage_names[TS_DEC_STAGES] = {
    "embed", "matvec", "attention", "nonlinear", "bootstrap", "convert", "other", "sanitize"};

/* Sanitize a reply's logits as the model says (md->san); the Renyi mode
 * projects on the logits' period in the session's engine (its lanes). */
static ts_status_t sanitize_reply(ts_dec_model_t *md, ts_dec_session_t *s, ts_ckks_ciphertext_t *lg,
                                  ts_llm_sanitize_info_t *info)
{
    if (md->san.mode != TS_LLM_SANITIZE_RD)
        return ts_llm_sanitize(s->ev, s->pk, md->san.level, md->san.lambda, s->prng, lg, info);
    ts_llm_sanitize_info_t plan = md->san;
    int per = ts_llm_enc_logits_period(s->pol->enc);
    ts_status_t st = TS_OK;
    if (per != plan.period)
        st = ts_llm_sanitize_plan_rd(md->p, md->san.level, per, md->san.noise_log2,
                                     md->san.queries_log2, &plan);
    if (st == TS_OK)
        st = ts_llm_sanitize_with(s->ev, s->pk, &plan, s->prng, lg);
    if (st == TS_OK && info)
        *info = plan;
    return st;
}

uint64_t ts_dec_model_replies(const ts_dec_model_t *md)
{
    return md->san_state ? ts_san_state_replies(md->san_state)
                         : atomic_load((atomic_uint_least64_t *)&md->replies);
}

/*
 * Count a reply of sanitized logits before its step runs (the Renyi mode;
 * every session of the model, every worker), on disk when the model keeps
 * a state file; with sanitize_budget: refuse, none past 2^queries_log2.
 * A step that fails later stays counted (the count never understates).
 */
static ts_status_t budget_take(ts_dec_model_t *md, char *why, size_t why_size)
{
    if (md->san.mode != TS_LLM_SANITIZE_RD)
        return TS_OK;
    double q = exp2(md->san.queries_log2);
    uint64_t n = 0;
    ts_status_t st = TS_OK;
    if (md->san_state)
        st = ts_san_state_take(md->san_state, md->san_refuse ? (uint64_t)ceil(q) : 0, &n);
    else
        n = atomic_fetch_add(&md->replies, 1) + 1;
    if (st == TS_ELIMIT) {
        snprintf(why, why_size,
                 "model %s has sent the %llu sanitized replies its Renyi bound covers (2^%.1f); "
                 "the host refuses more (sanitize_budget: refuse) until it rotates the model or "
                 "restates the bound",
                 md->name, (unsigned long long)n, md->san.queries_log2);
        ts_log(TS_LOG_WARN, "tesserad", "event=sanitize_refused model=%s replies=%llu", md->name,
               (unsigned long long)n);
        return st;
    }
    if (st != TS_OK) {
        snprintf(why, why_size, "recording the reply in %s failed (%s): the reply is withheld",
                 md->cfg.sanitize_state, ts_strerror(st));
        ts_log(TS_LOG_ERROR, "tesserad", "event=sanitize_state_error model=%s state=%s: %s",
               md->name, md->cfg.sanitize_state, ts_strerror(st));
        return st;
    }
    /* past 2^queries replies (all clients together: colluding clients pool
     * theirs) the bound degrades to R = 2^(replies / Q): said at Q, 2Q, 4Q */
    double k = (double)n / q;
    if (k >= 1.0 && floor(k) == k && (n & (n - 1)) == 0)
        ts_log(TS_LOG_WARN, "tesserad",
               "event=sanitize_budget model=%s replies=%llu queries_log2=%.1f: the model's "
               "sanitized replies have reached %.0f x the count its Renyi bound covers at R = "
               "2; for any search on the weights it now gives R <= 2^%.0f, success at most "
               "sqrt(R p) (docs/SECURITY.md): restate sanitize_queries_log2 or rotate the model",
               md->name, (unsigned long long)n, md->san.queries_log2, k, k);
    return TS_OK;
}

/*
 * A public position (its token in the clear, the session's public prefix):
 * the plaintext model's step on the session's plaintext state, the K and V
 * of positions [0, pos] encrypted under the client's public key into the
 * engine's cache (ts_llm_enc_cache_encrypt_pk, ts_llm_enc_session_set_cache),
 * and unless cache_only the plaintext logits encrypted the same way and
 * sanitized as an encrypted step's are.
 */
static ts_status_t public_step(ts_dec_session_t *s, uint32_t pos, int token, bool cache_only,
                               ts_dec_result_t *res, char *why, size_t why_size)
{
    ts_dec_model_t *md = s->md;
    const ts_llm_config_t *c = ts_llm_model_config(md->m);
    if (s->public_n != (int)pos) {
        snprintf(why, why_size,
                 "position %u cannot be public: public positions form a prefix (positions "
                 "[0, %d) were public, then encrypted ones)",
                 pos, s->public_n);
        return TS_EINVAL;
    }
    if (token < 0 || token >= c->vocab_size) {
        snprintf(why, why_size, "public token %d is outside the vocabulary (0..%d)", token,
                 c->vocab_size - 1);
        return TS_EINVAL;
    }
    ts_status_t st = cache_only ? TS_OK : budget_take(md, why, why_size);
    if (st != TS_OK)
        return st;
    uint64_t t0 = ts_now_ns();
    const ts_llm_enc_t *enc = s->pol->enc;
    int nl = c->n_layers, lv = ts_llm_enc_input_level(enc);
    ts_ckks_encoder_t *ecd = NULL;
    ts_ckks_ciphertext_t **kc = ts_calloc(2 * (size_t)nl, sizeof *kc), **vc = kc ? kc + nl : NULL,
                         *lg = NULL;
    const float *logits = NULL;
    st = kc ? TS_OK : TS_ENOMEM;
    s->broken = true;             /* until the step completes */
    if (st == TS_OK && !s->plain) /* the session's context only; freed when the prefix ends */
        st = ts_llm_state_new_ctx(md->m, md->max_ctx, &s->plain);
    if (st == TS_OK)
        st = ts_llm_forward(md->m, s->plain, token, (int)pos, &logits);
    if (st == TS_OK)
        st = ts_ckks_encoder_new(md->p, &ecd);
    for (int l = 0; l < nl && st == TS_OK; l++) {
        const float *kr = NULL, *vr = NULL;
        int np = 0;
        st = ts_llm_state_kv(md->m, s->plain, l, &kr, &vr, &np);
        if (st == TS_OK && np != (int)pos + 1)
            st = TS_EINTERNAL;
        if (st == TS_OK && (st = ts_ckks_ciphertext_new(md->p, 0, &kc[l])) == TS_OK)
            st = ts_ckks_ciphertext_new(md->p, 0, &vc[l]);
        if (st == TS_OK)
            st = ts_llm_enc_cache_encrypt_pk(enc, ecd, s->pk, s->prng, kr, np, lv, kc[l]);
        if (st == TS_OK)
            st = ts_llm_enc_cache_encrypt_pk(enc, ecd, s->pk, s->prng, vr, np, lv, vc[l]);
    }
    if (st == TS_OK)
        st = ts_llm_enc_session_set_cache(s->s, (const ts_ckks_ciphertext_t *const *)kc,
                                          (const ts_ckks_ciphertext_t *const *)vc, (int)pos + 1);
    if (st != TS_OK) {
        snprintf(why, why_size, "the public position's cache: %s", ts_strerror(st));
        goto out;
    }
    res->ms[6] = (double)(ts_now_ns() - t0) / 1e6;
    if (!cache_only) {
        uint64_t ts0 = ts_now_ns();
        ts_llm_sanitize_info_t info;
        st = ts_ckks_ciphertext_new(md->p, 0, &lg);
        if (st == TS_OK)
            st = ts_llm_enc_encrypt_input_pk(enc, ecd, s->pk, s->prng, logits, c->vocab_size,
                                             md->san.level, lg);
        if (st == TS_OK)
            st = sanitize_reply(md, s, lg, &info);
        if (st == TS_OK)
            st = ts_wire_ct_encode(lg, md->pid, 0, &res->logits, &res->logits_size);
        if (st != TS_OK) {
            snprintf(why, why_size, "the public position's logits: %s", ts_strerror(st));
            goto out;
        }
        res->ms[7] = (double)(ts_now_ns() - ts0) / 1e6;
        res->level = ts_ckks_ciphertext_level(lg);
        res->err_bound = info.err_bound;
    }
    res->cache_only = cache_only;
    res->token_public = true;
    res->positions = 1;
    s->public_n++;
    s->next_pos++;
    s->broken = false;
    res->server_ms = (double)(ts_now_ns() - t0) / 1e6;
out:
    if (st != TS_OK)
        ts_dec_result_clear(res);
    for (int l = 0; kc && l < nl; l++) {
        ts_ckks_ciphertext_free(kc[l]);
        ts_ckks_ciphertext_free(vc[l]);
    }
    ts_free(kc);
    ts_ckks_ciphertext_free(lg);
    ts_ckks_encoder_free(ecd);
    return st;
}

/* The bootstraps of the engine's plan of the step (n > 1: the pass) at pos
 * from the session's state as it is (a few ms); -1 when it does not plan. */
static int planned_boots(ts_dec_session_t *s, uint32_t pos, uint32_t n, bool cache_only)
{
    ts_sched_costs_t *c = ts_malloc(sizeof *c);
    if (!c)
        return -1;
    ts_sched_costs_default(c); /* the engine's counts do not depend on the table */
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *p = NULL;
    unsigned flags = TS_LLM_PLAN_ONEHOT | (n > 1 ? TS_LLM_PLAN_PREFILL : 0u) |
                     (cache_only ? TS_LLM_PLAN_CACHE_ONLY : 0u);
    int nb =
        ts_llm_enc_session_plan(s->s, (int)pos, flags, c, TS_SCHED_HYBRID, &g, &p, NULL, 0) == TS_OK
            ? (int)p->n_boot
            : -1;
    ts_sched_plan_free(p);
    ts_sched_graph_free(g);
    ts_free(c);
    return nb;
}

ts_status_t ts_dec_session_step(ts_dec_session_t *s, uint32_t pos, uint32_t n, const uint8_t *data,
                                size_t size, bool cache_only, bool speculative, int public_token,
                                ts_dec_result_t *res, char *why, size_t why_size)
{
    memset(res, 0, sizeof *res);
    res->planned_bootstraps = -1;
    ts_dec_model_t *md = s->md;
    int lanes = ts_llm_enc_lanes(md->enc);
    if (n == 0)
        n = 1;
    if (speculative && (n < 2 || cache_only || public_token >= 0)) {
        snprintf(why, why_size,
                 "a speculative step is a prefill of 2 or more positions with logits (not "
                 "cache_only, not public)");
        return TS_EINVAL;
    }
    if (n > 1 && (int)n > lanes) {
        snprintf(why, why_size,
                 "%u positions in one step: this model prefills at most %d (ModelInfo.lanes)", n,
                 lanes);
        return TS_EINVAL;
    }
    if (n > 1 && public_token >= 0) {
        snprintf(why, why_size, "a public position is one position, not a prefill of %u", n);
        return TS_EINVAL;
    }
    if (s->broken) {
        snprintf(why, why_size, "a previous step of this session failed; open a new session");
        return TS_EINVAL;
    }
    /* after a speculative pass of positions [p, next_pos): any position in
     * (p, next_pos] keeps that prefix of it (next_pos: all of it) */
    int pending = ts_dec_session_pending(s), spec_pos = s->next_pos - pending;
    bool rewind = pending > 0 && (int64_t)pos > spec_pos && (int64_t)pos < s->next_pos;
    if ((int64_t)pos != s->next_pos && !rewind) {
        if (pending > 0)
            snprintf(why, why_size,
                     "position %u is not the next one (%d) nor a kept prefix of the speculative "
                     "pass at %d (%d .. %d)",
                     pos, s->next_pos, spec_pos, spec_pos + 1, s->next_pos);
        else
            snprintf(why, why_size, "position %u is not the next one (%d)", pos, s->next_pos);
        return TS_ERANGE;
    }
    if ((int64_t)pos + n > md->max_ctx) {
        snprintf(why, why_size, "context full: this model's sessions hold at most %d positions",
                 md->max_ctx);
        return TS_ELIMIT;
    }
    if (public_token >= 0) {
        if (size) {
            snprintf(why, why_size, "a public position carries public_token, not a ciphertext");
            return TS_EINVAL;
        }
        return public_step(s, pos, public_token, cache_only, res, why, why_size);
    }
    uint64_t t0 = ts_now_ns();
    ts_ckks_ciphertext_t *x = NULL, *y = NULL, *lg = NULL;
    ts_status_t st = ts_wire_ct_decode(md->p, md->pid, data, size, 1, &x, why, why_size);
    if (st != TS_OK)
        return st;
    int in_lv = ts_llm_enc_input_level(s->pol->enc);
    if (ts_ckks_ciphertext_level(x) != in_lv) {
        snprintf(why, why_size,
                 "the token must be encrypted at level %d (ModelInfo.input_level), "
                 "not %d",
                 in_lv, ts_ckks_ciphertext_level(x));
        st = TS_ELEVEL;
        goto out;
    }
    if (ts_ckks_ciphertext_slots(x) != (size_t)ts_llm_enc_slots(md->enc) * (size_t)lanes ||
        fabs(ts_ckks_ciphertext_scale(x) / ts_ckks_params_scale(md->p) - 1.0) > 1e-9) {
        snprintf(why, why_size,
                 "the token must be packed in %d slots (ModelInfo.slots x ModelInfo.lanes) at the "
                 "parameters' scale",
                 ts_llm_enc_slots(md->enc) * lanes);
        st = TS_EINVAL;
        goto out;
    }
    if (!cache_only && (st = budget_take(md, why, why_size)) != TS_OK)
        goto out;
    ts_llm_enc_stats_t before, after;
    ts_llm_enc_session_stats(s->s, &before);
    if ((st = ts_ckks_ciphertext_new(md->p, 0, &y)) != TS_OK ||
        (st = ts_ckks_ciphertext_new(md->p, 0, &lg)) != TS_OK)
        goto out;
    s->broken = true; /* until the step completes */
    if (pending > 0) {
        /* the previous speculative pass: the positions before pos kept */
        if ((st = ts_llm_enc_commit(s->s, (int)pos - spec_pos)) != TS_OK) {
            snprintf(why, why_size, "keeping %d positions of the speculative pass failed: %s",
                     (int)pos - spec_pos, ts_strerror(st));
            goto out;
        }
        res->kept = (uint32_t)((int)pos - spec_pos);
        s->next_pos = (int)pos;
    }
    uint64_t te = ts_now_ns();
    if ((st = ts_llm_enc_embed(s->s, x, y)) != TS_OK) {
        snprintf(why, why_size, "embedding failed: %s", ts_strerror(st));
        goto out;
    }
    ts_llm_enc_stats_t mid;
    ts_llm_enc_session_stats(s->s, &mid);
    double embed_s = (double)(ts_now_ns() - te) / 1e9;
    res->planned_bootstraps = planned_boots(s, pos, n, cache_only);
    st = speculative  ? ts_llm_enc_prefill_speculative(s->s, y, (int)pos, (int)n, lg)
         : n > 1      ? ts_llm_enc_prefill(s->s, y, (int)pos, (int)n, cache_only ? NULL : lg)
         : cache_only ? ts_llm_enc_step_cache(s->s, y, (int)pos)
                      : ts_llm_enc_step(s->s, y, (int)pos, lg);
    if (st != TS_OK) {
        snprintf(why, why_size, "decode step failed: %s", ts_strerror(st));
        goto out;
    }
    ts_llm_enc_session_stats(s->s, &after);
    ts_llm_sanitize_info_t info = {0};
    if (!cache_only) {
        uint64_t ts0 = ts_now_ns();
        st = sanitize_reply(md, s, lg, &info);
        if (st != TS_OK) {
            snprintf(why, why_size, "sanitizing the logits failed: %s", ts_strerror(st));
            goto out;
        }
        res->ms[7] = (double)(ts_now_ns() - ts0) / 1e6;
        st = ts_wire_ct_encode(lg, md->pid, 0, &res->logits, &res->logits_size);
        if (st != TS_OK)
            goto out;
    }
    res->cache_only = cache_only;
    /* the embedding's matvec is counted as embed, not matvec */
    res->ms[0] = embed_s * 1e3;
    for (int i = 0; i < TS_LLM_STAGE_COUNT && i + 1 < TS_DEC_STAGES - 1; i++) {
        double d = after.seconds[i] - before.seconds[i];
        if (i == TS_LLM_STAGE_MATVEC)
            d -= mid.seconds[i] - before.seconds[i];
        res->ms[i + 1] = d > 0 ? d * 1e3 : 0.0;
    }
    res->bootstraps = after.bootstraps - before.bootstraps;
    res->level = cache_only ? 0 : ts_ckks_ciphertext_level(lg);
    res->err_bound = info.err_bound;
    res->positions = n;
    res->speculative = speculative;
    s->next_pos += (int)n;
    s->broken = false;
    /* the public prefix, if any, has ended: its plaintext state is not needed */
    ts_llm_state_free(s->plain);
    s->plain = NULL;
    res->server_ms = (double)(ts_now_ns() - t0) / 1e6;
out:
    if (st != TS_OK)
        ts_dec_result_clear(res);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(y);
    ts_ckks_ciphertext_free(lg);
    return st;
}

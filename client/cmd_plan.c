/*
 * client/cmd_plan.c — `tessera plan`: the scheduler's plan for a model's
 * decode step, its predicted latency, and why each non-arithmetic primitive
 * is in CKKS or TFHE (core/sched, ROSETTA section 4).
 *
 *   tessera plan (--model FILE | --dims D,H,L,NH,NKV,V | --dim D --hidden H
 *                 --layers L --heads NH [--kv-heads NKV] --vocab V)
 *                [--arch llama|gpt2] [--pos N] [--slots S] [--embed-public]
 *                [--policy hybrid|ckks|tfhe|all] [--costs FILE] [--json]
 *                [--for cpu|gpu]
 *
 * Without --costs the table measured for --params PRESET that ships in
 * configs/costs for the machine --for names (default: the backend this
 * command computes on) is used when there is one (on a CPU cpu-KERNELS-PRESET.yaml,
 * measured with this machine's CPU kernels, else cpu-PRESET.yaml; on a GPU
 * gpu-PRESET.yaml: ts_sched_costs_shipped), else the built-in estimate
 * (configs/costs/cpu-default.yaml), and the output says which. --policy all prints the
 * three plans' totals side by side (with --json: one object holding the three plans).
 *
 * With --model FILE --params PRESET (or --costs FILE of a table measured at
 * a preset of configs/params) the plan is the encrypted engine's own
 * (core/llm ts_llm_enc_plan): its decode step at that preset under the
 * policy's configuration, operation by operation, with the bootstraps,
 * conversions and look-ups it will execute, the predicted latency per stage
 * and, for each primitive kind, the predicted total with that kind in the
 * other scheme (why it is where it is).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cmd_plan.h"
#include "core/llm/llm.h"
#include "core/sched/sched.h"
#include "core/backend/backend.h"

static void usage(FILE *f)
{
    fputs("usage: tessera plan (--model FILE | --dims D,H,L,NH,NKV,V |\n"
          "                     --dim D --hidden H --layers L --heads NH [--kv-heads NKV] "
          "--vocab V)\n"
          "                    [--arch llama|gpt2] [--pos N] [--slots S] [--embed-public]\n"
          "                    [--policy hybrid|ckks|tfhe|all] [--costs FILE] [--json]\n"
          "                    [--for cpu|gpu]\n"
          "       tessera plan --model FILE --params PRESET [--insecure-params] [--pos N]\n"
          "                    [--slots S] [--cache-only] [--prefill N [--after-steps] |\n"
          "                    --lanes N]\n"
          "                    [--policy hybrid|ckks|tfhe|all] [--costs FILE] [--json]\n"
          "                    [--for cpu|gpu]\n"
          "Prints the scheme-aware plan of one decode step: every operator with its scheme,\n"
          "levels, bootstraps and rotation keys, the predicted latency, and the reason for\n"
          "each TFHE/CKKS choice. Without --costs: the table measured at --params that\n"
          "ships in configs/costs for the machine --for names (default: the backend this\n"
          "command computes on, tessera's --backend, the CPU unless told): on cpu\n"
          "cpu-KERNELS-PRESET.yaml for this CPU's kernels (avx512, avx2, portable) or else\n"
          "cpu-PRESET.yaml, on gpu gpu-PRESET.yaml (never a CPU's: what tesserad on a GPU\n"
          "takes), if any, else the estimated cpu-default.\n"
          "With --params: the encrypted engine's own plan at that CKKS preset (its exact\n"
          "operations, bootstraps, conversions and look-ups, latency per stage); --slots S\n"
          "its working slot count (sparse packing, a power of two; default the preset's);\n"
          "--cache-only the step of a prompt position before the last (tessera generate's\n"
          "prefill: the last layer stops at its K/V cache, no logits). --prefill N: the\n"
          "prefill pass from --pos of an engine of N lanes (a model's prefill_lanes: N\n"
          "positions in one pass, ciphertexts of N x the working slots; policy ckks);\n"
          "a speculative pass (tessera generate --draft) is that prefill, after ordinary\n"
          "steps: --after-steps plans it so (--pos > 0: the K and V caches at a step's row\n"
          "level, and the pair bootstraps that refresh the pass's copies of them where\n"
          "the engine runs them). --lanes N: an ordinary step of that engine (every step\n"
          "after the prompt that is not a pass).\n",
          f);
}

static int parse_u32(const char *s, uint32_t *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > UINT32_MAX || s[0] == '-')
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_dims_list(const char *s, ts_sched_model_dims_t *d)
{
    uint32_t v[6];
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return -1;
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL, *tok = strtok_r(buf, ",", &save);
    int n = 0;
    while (tok && n < 6) {
        if (parse_u32(tok, &v[n]) != 0)
            return -1;
        n++;
        tok = strtok_r(NULL, ",", &save);
    }
    if (n != 6 || tok)
        return -1;
    d->dim = v[0];
    d->hidden_dim = v[1];
    d->n_layers = v[2];
    d->n_heads = v[3];
    d->n_kv_heads = v[4];
    d->vocab = v[5];
    return 0;
}

int ts_cli_dims_from_model(const char *prog, const char *path, ts_sched_model_dims_t *d)
{
    ts_llm_model_t *m = NULL;
    char err[256] = "";
    ts_status_t st = ts_llm_model_load(path, &m, err, sizeof err);
    if (st != TS_OK) {
        fprintf(stderr, "%s: %s: %s%s%s\n", prog, path, ts_strerror(st), *err ? ": " : "", err);
        return -1;
    }
    const ts_llm_config_t *c = ts_llm_model_config(m);
    d->dim = (uint32_t)c->dim;
    d->hidden_dim = (uint32_t)c->hidden_dim;
    d->n_layers = (uint32_t)c->n_layers;
    d->n_heads = (uint32_t)c->n_heads;
    d->n_kv_heads = (uint32_t)c->n_kv_heads;
    d->vocab = (uint32_t)c->vocab_size;
    d->act = c->arch == TS_LLM_ARCH_GPT2 ? TS_ACT_GELU : TS_ACT_SWIGLU;
    d->norm = c->arch == TS_LLM_ARCH_GPT2 ? TS_NORM_LAYER : TS_NORM_RMS;
    ts_llm_model_free(m);
    return 0;
}

static int print_plan(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                      const ts_sched_costs_t *c, bool json)
{
    char *out = NULL;
    ts_status_t st =
        json ? ts_sched_plan_to_json(p, g, &out, NULL) : ts_sched_plan_explain(p, g, c, &out, NULL);
    if (st != TS_OK) {
        fprintf(stderr, "tessera plan: %s\n", ts_strerror(st));
        return -1;
    }
    fputs(out, stdout);
    ts_free(out);
    return 0;
}

static const char *const kind_names[TS_LLM_KIND_COUNT] = {
    "exp", "1/x (softmax round 1)", "1/x (later rounds)", "1/sqrt(x)", "SiLU", "GELU"};

/* Kinds the model has (SiLU for Llama, GELU for GPT-2). */
static bool kind_used(const ts_sched_graph_t *g, int k)
{
    if (k == TS_LLM_KIND_SILU)
        return ts_sched_graph_count_kind(g, TS_OP_SILU) > 0;
    if (k == TS_LLM_KIND_GELU)
        return ts_sched_graph_count_kind(g, TS_OP_GELU) > 0;
    return true;
}

/* The engine's plan of one policy; prints it (text or JSON object). */
static int engine_plan_one(const ts_llm_model_t *m, ts_ckks_params_t *params,
                           const ts_sched_costs_t *costs, ts_sched_policy_t pol, int pos,
                           int log_slots, int lanes, unsigned flags, bool json, bool brief,
                           double *total)
{
    ts_llm_enc_t *e0 = NULL, *e = NULL;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *p = NULL;
    double *alt = NULL, kt[TS_LLM_KIND_COUNT];
    char msg[256] = "", *text = NULL;
    int rc = 1;
    ts_llm_enc_config_t cfg;
    ts_llm_enc_config_default(&cfg);
    cfg.log_slots = log_slots;
    cfg.lanes = lanes;
    int bcts = 0, bstc = 0; /* the bootstrapper's DFT budgets (0: the defaults) */
    bool refined = false;   /* finer approximations than the ckks policy's */
    ts_status_t st = ts_llm_enc_new(m, params, &cfg, NULL, &e0);
    double fixed_ns = NAN; /* hybrid: the policy's default assignment, for comparison */
    if (st == TS_OK) {
        int mp = ts_llm_enc_max_positions(e0);
        /* the bootstrapper's DFT budgets as tesserad chooses them (on its ckks
         * engine's step); every policy's engine shares that bootstrapper */
        ts_llm_enc_config_policy(&cfg, TS_SCHED_CKKS, mp);
        cfg.log_slots = log_slots;
        cfg.lanes = lanes;
        /* its approximations: finer where free (ts_llm_enc_config_refine) */
        ts_llm_enc_config_t ck = cfg;
        (void)ts_llm_enc_config_refine(m, params, &ck, mp,
                                       TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT);
        if (ts_llm_enc_boot_budgets(m, params, &ck, mp,
                                    TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT, &bcts,
                                    &bstc) != TS_OK)
            bcts = bstc = 0;
        refined = ts_llm_enc_config_act(&ck, m)->degree != ts_llm_enc_config_act(&cfg, m)->degree ||
                  ck.rsqrt.degree != cfg.rsqrt.degree;
        if (pol == TS_SCHED_CKKS)
            cfg = ck;
        else
            ts_llm_enc_config_policy(&cfg, pol, mp);
        cfg.log_slots = log_slots;
        cfg.lanes = lanes;
        cfg.boot_cts_levels = bcts;
        cfg.boot_stc_levels = bstc;
        if (pol == TS_SCHED_HYBRID && pos < mp) {
            ts_llm_enc_t *ef = NULL;
            ts_sched_graph_t *gf = NULL;
            ts_sched_plan_t *pf = NULL;
            if (ts_llm_enc_new(m, params, &cfg, NULL, &ef) == TS_OK &&
                ts_llm_enc_plan(ef, pos, flags, costs, pol, &gf, &pf, NULL, 0) == TS_OK)
                fixed_ns = pf->total_ns;
            ts_sched_plan_free(pf);
            ts_sched_graph_free(gf);
            ts_llm_enc_free(ef);
            /* the daemon chooses on the full step; a cache-only step runs that choice */
            st = ts_llm_enc_config_best(m, params, NULL, log_slots, mp, pos,
                                        flags & ~TS_LLM_PLAN_CACHE_ONLY, costs, &cfg, NULL);
        }
        if (st == TS_OK)
            st = ts_llm_enc_new(m, params, &cfg, NULL, &e);
    }
    if (st == TS_OK && pos >= ts_llm_enc_max_positions(e)) {
        st = TS_ERANGE;
        snprintf(msg, sizeof msg,
                 "--pos %d does not fit the session: %d working slots hold positions 0..%d "
                 "(a larger --slots holds more)",
                 pos, ts_llm_enc_slots(e), ts_llm_enc_max_positions(e) - 1);
    }
    if (st == TS_OK)
        st = ts_llm_enc_plan(e, pos, flags, costs, pol, &g, &p, msg, sizeof msg);
    if (st != TS_OK) {
        fprintf(stderr, "tessera plan: policy %s: %s%s%s\n", ts_sched_policy_name(pol),
                ts_strerror(st), *msg ? ": " : "", msg);
        goto out;
    }
    *total = p->total_ns;
    ts_llm_enc_levels_t lv;
    if (ts_llm_enc_levels(e, &lv) != TS_OK)
        lv.boot = false;
    double stg[TS_LLM_STAGE_COUNT];
    ts_llm_enc_plan_stages(p, g, stg);
    alt = ts_malloc(ts_sched_graph_count(g) * sizeof *alt);
    if (!alt || ts_llm_enc_plan_alternatives(e, pos, flags, costs, pol, g, alt, kt) != TS_OK)
        goto out;
    unsigned mask = ts_llm_enc_config_tfhe_kinds(&cfg);
    if (json) {
        char *pj = NULL;
        if (ts_sched_plan_to_json(p, g, &pj, NULL) != TS_OK)
            goto out;
        printf("{\"policy\":\"%s\",\"position\":%d,\"predicted_ns\":%.0f,\"n_bootstrap\":%u,"
               "\"n_convert\":%u,\"n_lookup\":%u,\"stages_ns\":{",
               ts_sched_policy_name(pol), pos, p->total_ns, p->n_boot, p->n_convert, p->n_lookup);
        for (int i = 0; i < TS_LLM_STAGE_COUNT; i++)
            printf("%s\"%s\":%.0f", i ? "," : "", ts_llm_stage_name((ts_llm_stage_t)i), stg[i]);
        printf("},\"kinds\":[");
        for (int k = 0, n = 0; k < TS_LLM_KIND_COUNT; k++)
            if (kind_used(g, k))
                printf("%s{\"kind\":\"%s\",\"scheme\":\"%s\",\"other_scheme_total_ns\":%.0f}",
                       n++ ? "," : "", kind_names[k], (mask >> k) & 1 ? "tfhe" : "ckks",
                       isfinite(kt[k]) ? kt[k] : -1.0);
        printf("],\"norm_defer\":%s", ts_llm_enc_norm_defer(e) ? "true" : "false");
        if (pol == TS_SCHED_CKKS)
            printf(",\"act_degree\":%d,\"rsqrt_degree\":%d", ts_llm_enc_config_act(&cfg, m)->degree,
                   cfg.rsqrt.degree);
        if (lv.boot)
            printf(",\"boot_dft\":[%d,%d],\"boot_levels_left\":%d", bcts, bstc, lv.input);
        if (isfinite(fixed_ns))
            printf(",\"default_assignment_ns\":%.0f", fixed_ns);
        printf(",\"plan\":%s}", pj);
        ts_free(pj);
        rc = 0;
        goto out;
    }
    printf("%-7s %10.2f s  %5u bootstraps %4u conversions %5u values  (", ts_sched_policy_name(pol),
           p->total_ns / 1e9, p->n_boot, p->n_convert, p->n_lookup);
    for (int i = 0; i < TS_LLM_STAGE_COUNT; i++)
        printf("%s%s %.2f", i ? ", " : "", ts_llm_stage_name((ts_llm_stage_t)i), stg[i] / 1e9);
    printf(")\n");
    if (ts_llm_enc_norm_defer(e))
        printf("        (norms deferred: the products that read a norm take the residual "
               "stream and its factor multiplies their outputs, where the engine's plan "
               "predicts less time)\n");
    if (pol == TS_SCHED_CKKS)
        printf("        (%s at degree %d, the norms' 1/sqrt at %d: %s)\n",
               ts_llm_model_config(m)->arch == TS_LLM_ARCH_GPT2 ? "GELU" : "SiLU",
               ts_llm_enc_config_act(&cfg, m)->degree, cfg.rsqrt.degree,
               refined ? "finer than the policy's, as the levels give them without more "
                         "bootstraps or time"
                       : "the policy's; finer ones would cost bootstraps or time");
    if (isfinite(fixed_ns))
        printf("        (the cheapest assignment of primitive kinds under this table; the "
               "default one, every 1/x and 1/sqrt(x) in TFHE: %.2f s)\n",
               fixed_ns / 1e9);
    ts_boot_config_t dbc; /* the defaults the choice departs from, at the engine's slots */
    if (lv.boot && (bcts || bstc) &&
        ts_llm_boot_config(
            params, ts_log2_exact((uint64_t)ts_llm_enc_slots(e) * (uint64_t)ts_llm_enc_lanes(e)),
            ts_llm_boot_encap_h(params), 0, 0, &dbc) == TS_OK)
        printf("        (bootstrapping with %d CoeffToSlot + %d SlotToCoeff levels, %d left, as "
               "tesserad chooses them: as few bootstraps as its defaults' %d + %d, each "
               "cheaper)\n",
               bcts, bstc, lv.input, dbc.cts_levels, dbc.stc_levels);
    if (brief) {
        rc = 0;
        goto out;
    }
    printf("primitive kinds (the engine places a kind in every layer at once; total = the whole "
           "step re-planned with that kind in the other scheme):\n");
    for (int k = 0; k < TS_LLM_KIND_COUNT; k++) {
        if (!kind_used(g, k))
            continue;
        bool tf = (mask >> k) & 1;
        printf("  %-22s %s", kind_names[k], tf ? "TFHE" : "CKKS");
        if (!isfinite(kt[k])) {
            printf("  (in %s the step cannot run)\n", tf ? "CKKS" : "TFHE");
            continue;
        }
        double d = kt[k] - p->total_ns;
        printf("  in %s: %.2f s (%s%.2f s)%s\n", tf ? "CKKS" : "TFHE", kt[k] / 1e9,
               d >= 0 ? "+" : "-", fabs(d) / 1e9,
               d >= 0 ? (tf ? "  TFHE is cheaper" : "  CKKS is cheaper")
                      : "  the policy's choice is the slower one here");
    }
    if (ts_sched_plan_explain_alt(p, g, costs, alt,
                                  "delta = the step with this primitive's kind in the other "
                                  "scheme in every layer",
                                  &text, NULL) == TS_OK)
        fputs(text, stdout);
    rc = 0;
out:
    ts_free(text);
    ts_free(alt);
    ts_sched_plan_free(p);
    ts_sched_graph_free(g);
    ts_llm_enc_free(e);
    ts_llm_enc_free(e0);
    return rc;
}

static int engine_plan(const char *model, const char *preset, bool insecure,
                       const ts_sched_costs_t *costs, bool all, ts_sched_policy_t policy, int pos,
                       uint32_t slots, int lanes, unsigned flags, bool json)
{
    char path[600];
    snprintf(path, sizeof path, "configs/params/%s.yaml", preset);
    ts_ckks_params_t *params = NULL;
    ts_cfg_error_t perr;
    ts_status_t st = ts_ckks_params_load_file(path, insecure, &params, &perr);
    if (st != TS_OK) {
        fprintf(stderr, "tessera plan: %s: %s%s\n", path, ts_strerror(st),
                insecure ? "" : " (test presets need --insecure-params)");
        return 1;
    }
    ts_llm_model_t *m = NULL;
    char err[256] = "";
    st = ts_llm_model_load(model, &m, err, sizeof err);
    if (st != TS_OK) {
        fprintf(stderr, "tessera plan: %s: %s %s\n", model, ts_strerror(st), err);
        ts_ckks_params_free(params);
        return 1;
    }
    if (!json) {
        char pf[64] = "";
        if (flags & TS_LLM_PLAN_PREFILL)
            snprintf(pf, sizeof pf, "%s of %d lanes from ",
                     flags & TS_LLM_PLAN_AFTER_STEPS ? "pass after ordinary steps" : "prefill pass",
                     lanes);
        else if (lanes > 1)
            snprintf(pf, sizeof pf, "an ordinary step of an engine of %d lanes, ", lanes);
        printf("engine plan: %s at %s, %s%sposition %d, %s input; cost table %s%s\n", model, preset,
               pf, flags & TS_LLM_PLAN_CACHE_ONLY ? "cache-only step (no logits) at " : "", pos,
               flags & TS_LLM_PLAN_ONEHOT ? "one-hot (embedded on the server)" : "embedding",
               costs->name,
               !costs->estimated ? ""
               : strcmp(costs->params, preset) == 0
                   ? " (measured at this preset; the entries its note names are estimated)"
                   : " (estimated; `tessera bench costs` measures it)");
        if (strcmp(costs->params, preset) != 0)
            printf("note: the cost table was measured at '%s', not at %s; pass "
                   "--costs FILE from `tessera bench costs --params %s`\n",
                   costs->params, preset, preset);
        if (ts_sched_costs_cpu_mismatch(costs, ts_cpu_kernels()))
            printf("note: the cost table was measured with the %s CPU kernels and this machine "
                   "runs the %s ones: its latencies here differ by a roughly constant factor "
                   "(~3.5x for CKKS between avx512 and avx2); `tessera bench costs --params %s "
                   "--out FILE` measures this machine\n",
                   costs->cpu, ts_cpu_kernels(), preset);
    }
    int ls = slots ? ts_log2_exact(slots) : 0; /* --slots: the working slot count (0: preset's) */
    if (ls < 0) {
        fprintf(stderr, "tessera plan: --slots %u is not a power of two\n", slots);
        ts_llm_model_free(m);
        ts_ckks_params_free(params);
        return 2;
    }
    int rc = 0;
    double tot[3] = {0, 0, 0};
    if (json && all)
        fputs("{", stdout);
    for (int k = 0; k < 3 && !rc; k++) {
        if (!all && k != (int)policy)
            continue;
        if (json && all)
            printf("%s\"%s\":", k ? "," : "", ts_sched_policy_name((ts_sched_policy_t)k));
        rc = engine_plan_one(m, params, costs, (ts_sched_policy_t)k, pos, ls, lanes, flags, json,
                             all, &tot[k]);
    }
    if (json)
        fputs(all ? "}\n" : "\n", stdout);
    else if (all && !rc)
        printf("hybrid speedup (predicted): %.2fx over ckks, %.2fx over tfhe\n",
               tot[TS_SCHED_CKKS] / tot[TS_SCHED_HYBRID],
               tot[TS_SCHED_TFHE] / tot[TS_SCHED_HYBRID]);
    ts_llm_model_free(m);
    ts_ckks_params_free(params);
    return rc;
}

int ts_cmd_plan(int argc, char **argv)
{
    ts_sched_model_dims_t d = {.act = TS_ACT_SWIGLU, .norm = TS_NORM_RMS};
    const char *model = NULL, *costs_path = NULL, *policy_s = NULL, *arch = NULL, *preset = NULL;
    const char *plan_for = NULL; /* --for cpu|gpu: the machine whose table prices the plan */
    bool json = false, have_dims = false, insecure = false, cache_only = false, after_steps = false;
    uint32_t prefill = 0; /* --prefill N: the pass of an engine of N lanes */
    uint32_t lanes = 0;   /* --lanes N: an ordinary step of that engine */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint32_t *u = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = true;
            continue;
        } else if (!strcmp(a, "--after-steps")) {
            after_steps = true;
            continue;
        } else if (!strcmp(a, "--embed-public")) {
            d.embed_public = true;
            continue;
        } else if (!strcmp(a, "--insecure-params")) {
            insecure = true;
            continue;
        } else if (!strcmp(a, "--cache-only")) {
            cache_only = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "tessera plan: '%s' needs a value\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--costs"))
            costs_path = v;
        else if (!strcmp(a, "--params"))
            preset = v;
        else if (!strcmp(a, "--policy"))
            policy_s = v;
        else if (!strcmp(a, "--arch"))
            arch = v;
        else if (!strcmp(a, "--for"))
            plan_for = v;
        else if (!strcmp(a, "--dims")) {
            if (parse_dims_list(v, &d) != 0) {
                fprintf(stderr, "tessera plan: --dims wants D,H,L,NH,NKV,V (6 integers)\n");
                return 2;
            }
            have_dims = true;
        } else if (!strcmp(a, "--dim"))
            u = &d.dim;
        else if (!strcmp(a, "--hidden"))
            u = &d.hidden_dim;
        else if (!strcmp(a, "--layers"))
            u = &d.n_layers;
        else if (!strcmp(a, "--heads"))
            u = &d.n_heads;
        else if (!strcmp(a, "--kv-heads"))
            u = &d.n_kv_heads;
        else if (!strcmp(a, "--vocab"))
            u = &d.vocab;
        else if (!strcmp(a, "--pos"))
            u = &d.seq_pos;
        else if (!strcmp(a, "--slots"))
            u = &d.slots;
        else if (!strcmp(a, "--prefill"))
            u = &prefill;
        else if (!strcmp(a, "--lanes"))
            u = &lanes;
        else {
            fprintf(stderr, "tessera plan: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (u) {
            if (parse_u32(v, u) != 0) {
                fprintf(stderr, "tessera plan: %s wants a non-negative integer, got '%s'\n", a, v);
                return 2;
            }
            if ((u == &prefill || u == &lanes) && (*u < 2 || *u > 1024 || (*u & (*u - 1)))) {
                fprintf(stderr, "tessera plan: %s is a power of two from 2 to 1024\n", a);
                return 2;
            }
            if (u != &d.seq_pos && u != &d.slots && u != &prefill && u != &lanes)
                have_dims = true;
        }
    }
    if (model && have_dims) {
        fprintf(stderr, "tessera plan: give either --model or dimensions, not both\n");
        return 2;
    }
    if (model && ts_cli_dims_from_model("tessera plan", model, &d) != 0)
        return 1;
    if (!model && !have_dims) {
        usage(stderr);
        return 2;
    }
    if (arch) {
        if (!strcmp(arch, "llama")) {
            d.act = TS_ACT_SWIGLU;
            d.norm = TS_NORM_RMS;
        } else if (!strcmp(arch, "gpt2")) {
            d.act = TS_ACT_GELU;
            d.norm = TS_NORM_LAYER;
        } else {
            fprintf(stderr, "tessera plan: --arch is llama or gpt2\n");
            return 2;
        }
    }
    if (prefill && lanes) {
        fprintf(stderr, "tessera plan: --prefill N plans the pass, --lanes N an ordinary step: "
                        "one of them\n");
        return 2;
    }
    if (after_steps && (!prefill || d.seq_pos == 0)) {
        fprintf(stderr, "tessera plan: --after-steps plans a pass (--prefill N) after ordinary "
                        "steps, at --pos > 0\n");
        return 2;
    }
    if (!policy_s)
        policy_s = prefill || lanes ? "ckks" : "hybrid"; /* lanes run policy ckks */
    bool all = !strcmp(policy_s, "all");
    ts_sched_policy_t policy = TS_SCHED_HYBRID;
    if (!all && ts_sched_policy_parse(policy_s, &policy) != TS_OK) {
        fprintf(stderr, "tessera plan: --policy is hybrid, ckks, tfhe or all\n");
        return 2;
    }

    /* the backend whose shipped table prices the plan: --for, else the one
     * this process computes on (tessera --backend) */
    const char *costs_backend = "cpu";
    if (!plan_for) {
        if (ts_backend_is_gpu(ts_backend_default()))
            costs_backend = "gpu";
    } else if (!strcmp(plan_for, "gpu")) {
        costs_backend = "gpu";
    } else if (strcmp(plan_for, "cpu") != 0) {
        fprintf(stderr, "tessera plan: --for is cpu or gpu, not '%s'\n", plan_for);
        return 2;
    }
    ts_sched_costs_t costs;
    char shipped[200]; /* configs/costs/BACKEND-[KERNELS-]PRESET.yaml */
    if (costs_path) {
        ts_cfg_error_t err;
        ts_status_t st = ts_sched_costs_load(costs_path, &costs, &err);
        if (st != TS_OK) {
            char line[600];
            ts_cfg_error_format(&err, line, sizeof line);
            fprintf(stderr, "tessera plan: %s\n", line);
            return 1;
        }
    } else {
        ts_sched_costs_default(&costs);
        /* the table measured at --params that ships with tessera, if any */
        ts_cfg_error_t err;
        if (preset && ts_sched_costs_shipped("configs/costs", preset, costs_backend,
                                             strcmp(costs_backend, "cpu") ? NULL : ts_cpu_kernels(),
                                             shipped, sizeof shipped) == TS_OK) {
            if (ts_sched_costs_load(shipped, &costs, &err) == TS_OK)
                costs_path = shipped;
            else
                ts_sched_costs_default(&costs);
        } else if (preset && !strcmp(costs_backend, "gpu")) {
            fprintf(stderr,
                    "tessera plan: no GPU cost table of %s ships (configs/costs/gpu-%s.yaml): "
                    "the CPU estimate %s prices the plan; `tessera bench costs --backend gpu "
                    "--params %s --out FILE` measures a GPU\n",
                    preset, preset, costs.name, preset);
        }
    }
    /* a measured table names its preset: with --model, plan the engine at it */
    char costs_preset[80] = "";
    if (!preset && model && costs_path && costs.params[0] &&
        snprintf(costs_preset, sizeof costs_preset, "%s", costs.params) <
            (int)sizeof costs_preset) {
        char path[200];
        snprintf(path, sizeof path, "configs/params/%s.yaml", costs_preset);
        FILE *pf = fopen(path, "r");
        if (pf) {
            fclose(pf);
            preset = costs_preset;
        }
    }
    if (preset) {
        if (!model) {
            fprintf(stderr, "tessera plan: --params needs --model (the engine's plan)\n");
            return 2;
        }
        /* the daemon's default input: the one-hot token, embedded on the server */
        if ((prefill || lanes) && (all || policy != TS_SCHED_CKKS)) {
            fprintf(stderr,
                    "tessera plan: --%s plans policy ckks (the lanes' look-ups "
                    "would read one lane's layout)\n",
                    prefill ? "prefill" : "lanes");
            return 2;
        }
        return engine_plan(model, preset, insecure, &costs, all, policy, (int)d.seq_pos, d.slots,
                           prefill ? (int)prefill
                           : lanes ? (int)lanes
                                   : 1,
                           (d.embed_public ? 0 : TS_LLM_PLAN_ONEHOT) | TS_LLM_PLAN_PERIOD_BOOT |
                               (cache_only ? TS_LLM_PLAN_CACHE_ONLY : 0) |
                               (prefill ? TS_LLM_PLAN_PREFILL : 0) |
                               (after_steps ? TS_LLM_PLAN_AFTER_STEPS : 0),
                           json);
    }
    if (cache_only || prefill || lanes) {
        fprintf(stderr, "tessera plan: --%s is a plan of the engine (needs --params)\n",
                cache_only ? "cache-only"
                : prefill  ? "prefill"
                           : "lanes");
        return 2;
    }
    if (!d.slots && costs.slots > 0)
        d.slots = (uint32_t)costs.slots;

    ts_sched_graph_t *g = NULL;
    ts_status_t st = ts_sched_graph_build_decoder(&d, &g);
    if (st != TS_OK) {
        fprintf(stderr,
                "tessera plan: invalid model dimensions (%s): dim %u hidden %u layers %u heads "
                "%u kv-heads %u vocab %u\n",
                ts_strerror(st), d.dim, d.hidden_dim, d.n_layers, d.n_heads, d.n_kv_heads, d.vocab);
        return 1;
    }
    int rc = 0;
    ts_sched_plan_t *p[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        if (!all && k != (int)policy)
            continue;
        st = ts_sched_plan_new(g, &costs, (ts_sched_policy_t)k, &p[k]);
        if (st != TS_OK) {
            fprintf(stderr, "tessera plan: policy %s: %s\n",
                    ts_sched_policy_name((ts_sched_policy_t)k), ts_strerror(st));
            rc = 1;
            goto out;
        }
    }
    if (!all) {
        if (!json && costs.estimated)
            printf("note: cost table '%s' is estimated; run `tessera bench` and pass --costs "
                   "for measured numbers\n",
                   costs.name);
        rc = print_plan(p[policy], g, &costs, json) ? 1 : 0;
        goto out;
    }
    if (json) {
        fputs("{", stdout);
        for (int k = 0; k < 3; k++) {
            printf("%s\"%s\":", k ? "," : "", ts_sched_policy_name((ts_sched_policy_t)k));
            if (print_plan(p[k], g, &costs, true)) {
                rc = 1;
                goto out;
            }
        }
        fputs("}\n", stdout);
        goto out;
    }
    printf("decode step: dim %u hidden %u layers %u heads %u kv-heads %u vocab %u position %u "
           "(%s), %zu operators\ncost table: %s%s\n",
           d.dim, d.hidden_dim, d.n_layers, d.n_heads, d.n_kv_heads ? d.n_kv_heads : d.n_heads,
           d.vocab, d.seq_pos, d.act == TS_ACT_GELU ? "gpt2" : "llama", ts_sched_graph_count(g),
           costs.name, costs.estimated ? " (estimated; `tessera bench` measures it)" : "");
    printf("%-7s %12s %12s %12s %6s %6s %6s\n", "policy", "total s", "bootstrap s", "tfhe+conv s",
           "boots", "tfhe", "rotkeys");
    for (int k = 0; k < 3; k++)
        printf("%-7s %12.2f %12.2f %12.2f %6u %6u %6zu\n",
               ts_sched_policy_name((ts_sched_policy_t)k), p[k]->total_ns / 1e9,
               p[k]->boot_ns / 1e9, p[k]->convert_ns / 1e9, p[k]->n_boot, p[k]->n_tfhe,
               p[k]->n_rot_steps);
    printf("hybrid speedup: %.2fx over ckks, %.2fx over tfhe\n\n",
           p[TS_SCHED_CKKS]->total_ns / p[TS_SCHED_HYBRID]->total_ns,
           p[TS_SCHED_TFHE]->total_ns / p[TS_SCHED_HYBRID]->total_ns);
    rc = print_plan(p[TS_SCHED_HYBRID], g, &costs, false) ? 1 : 0;
out:
    for (int k = 0; k < 3; k++)
        ts_sched_plan_free(p[k]);
    ts_sched_graph_free(g);
    return rc;
}

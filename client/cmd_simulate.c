/*
 * tessera simulate — the ciphertext-aligned simulator (ROSETTA section 5.4):
 * run the model in plaintext with each non-arithmetic primitive replaced by
 * the approximation the encrypted engine uses, and print the error report.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/llm_cli.h"

static const char sim_help[] =
    "usage: tessera simulate --model FILE [--tokenizer FILE] [--config approx.yaml] [options]\n"
    "\n"
    "Ciphertext-aligned plaintext simulation: the model runs twice, exactly and with\n"
    "every non-arithmetic primitive (exp, 1/x, 1/sqrt(x), SiLU, GELU, the max-free\n"
    "softmax) replaced by its approximation from the YAML file (see configs/approx/),\n"
    "optionally with Gaussian noise after each arithmetic step. Reports per-primitive\n"
    "and per-layer errors, argmax agreement, perplexity, and free-running greedy\n"
    "agreement.\n"
    "\n"
    "  -m, --model FILE        llama2.c checkpoint (.bin) or GGUF model\n"
    "  -z, --tokenizer FILE    llama2.c tokenizer.bin (default for GGUF: the model's own)\n"
    "  -c, --config FILE       approximation config (alias --approx; default: all exact)\n"
    "      --policy P          ckks|hybrid|tfhe: the encrypted engine's configuration of\n"
    "                          that policy for the run's positions (its softmax rounds,\n"
    "                          ranges and approximations; tfhe's one PBS per value as its\n"
    "                          midpoint table); instead of --config\n"
    "      --kinds LIST        with --policy: that policy's structure with these primitive\n"
    "                          kinds in TFHE and the others in CKKS (exp, recip,\n"
    "                          recip_norm, rsqrt, silu, gelu, comma-separated, or none):\n"
    "                          an assignment the hybrid scheduler may choose\n"
    "      --params PRESET     with --policy ckks: the engine as tesserad builds it at\n"
    "                          that preset (configs/params/PRESET.yaml) for one lane:\n"
    "                          the policy's approximations made finer where the\n"
    "                          engine's plans show them free (SiLU or GELU at degree\n"
    "                          23, the norms' 1/sqrt at 56)\n"
    "  -p, --prompt TEXT       prompt for the greedy runs (default \"I dream of\")\n"
    "  -n, --steps N           positions (default: context length)\n"
    "      --text FILE         perplexity on this text (default: the exact greedy\n"
    "                          continuation of the prompt)\n"
    "      --json              one JSON object\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 success, 1 simulation failed, 2 bad command line, 4 file error.\n";

static void describe(const ts_nonlinear_spec_t *s, char *buf, size_t n)
{
    switch (s->method) {
    case TS_NL_EXACT:
        snprintf(buf, n, "exact");
        break;
    case TS_NL_POLY:
        if (s->steps)
            snprintf(buf, n, "poly d=%d sq=%d [%g,%g]", s->degree, s->steps, s->lo, s->hi);
        else
            snprintf(buf, n, "poly d=%d [%g,%g]", s->degree, s->lo, s->hi);
        break;
    case TS_NL_ITER:
        snprintf(buf, n, "iter n=%d g=%d [%g,%g]", s->steps, s->degree, s->lo, s->hi);
        break;
    case TS_NL_LUT: {
        static const char *const b[] = {"uniform", "log", "auto", "auto_rel"};
        snprintf(buf, n, "lut %dx%d %s b=%d [%g,%g]", s->n_seg, s->n_br,
                 (unsigned)s->bounds < 4 ? b[s->bounds] : "?", s->index_bits, s->lo, s->hi);
        break;
    }
    case TS_NL_PBS:
        snprintf(buf, n, "pbs p=%d [%g,%g]", s->n_br, s->lo, s->hi);
        break;
    default:
        snprintf(buf, n, "?");
    }
}

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (n < cap)
            break;
        if (cap >= ((size_t)16 << 20))
            break; /* 16 MiB is plenty for a context window */
        char *nb = realloc(b, cap * 2);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    *len = n;
    return b;
}

/* A JSON number, or null when not finite (a diverging approximation). */
static const char *json_num(char buf[32], double x)
{
    if (isfinite(x))
        snprintf(buf, 32, "%.6g", x);
    else
        snprintf(buf, 32, "null");
    return buf;
}

int ts_cmd_simulate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"tokenizer", required_argument, NULL, 'z'},
        {"config", required_argument, NULL, 'c'},
        {"approx", required_argument, NULL, 'c'},
        {"prompt", required_argument, NULL, 'p'},
        {"steps", required_argument, NULL, 'n'},
        {"text", required_argument, NULL, 0x300},
        {"json", no_argument, NULL, 'j'},
        {"policy", required_argument, NULL, 0x301},
        {"kinds", required_argument, NULL, 0x302},
        {"params", required_argument, NULL, 0x303},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "tessera simulate";
    const char *model_path = NULL, *tok_path = NULL, *cfg_path = NULL, *text_path = NULL;
    const char *prompt = "I dream of", *policy = NULL, *kinds = NULL, *preset = NULL;
    double steps = 0;
    bool json = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "m:z:c:p:n:jh", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            model_path = optarg;
            break;
        case 'z':
            tok_path = optarg;
            break;
        case 'c':
            cfg_path = optarg;
            break;
        case 'p':
            prompt = optarg;
            break;
        case 'n':
            if (!ts_cli_llm_parse_num(optarg, 2, 1 << 20, &steps)) {
                fprintf(stderr, "%s: bad --steps: %s\n", prog, optarg);
                return RUN_EXIT_USAGE;
            }
            break;
        case 0x300:
            text_path = optarg;
            break;
        case 0x301:
            policy = optarg;
            break;
        case 0x302:
            kinds = optarg;
            break;
        case 0x303:
            preset = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(sim_help, stdout);
            return RUN_EXIT_OK;
        default:
            fputs(sim_help, stderr);
            return RUN_EXIT_USAGE;
        }
    }
    if (!model_path || optind != argc) {
        fprintf(stderr, "%s: --model is required\n\n%s", prog, sim_help);
        return RUN_EXIT_USAGE;
    }
    ts_llm_sim_config_t cfg;
    ts_llm_sim_config_default(&cfg);
    char err[512] = "";
    if (cfg_path && ts_llm_sim_config_load(cfg_path, &cfg, err, sizeof(err)) != TS_OK) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return RUN_EXIT_LOCAL;
    }
    ts_sched_policy_t pol = TS_SCHED_CKKS;
    if (policy && ts_sched_policy_parse(policy, &pol) != TS_OK) {
        fprintf(stderr, "%s: --policy %s: ckks, hybrid or tfhe\n", prog, policy);
        return RUN_EXIT_USAGE;
    }
    if (policy && cfg_path) {
        fprintf(stderr, "%s: --policy and --config are alternatives\n", prog);
        return RUN_EXIT_USAGE;
    }
    unsigned kind_mask = 0;
    if (kinds && (!policy || ts_llm_kinds_parse(kinds, &kind_mask) != TS_OK)) {
        fprintf(stderr,
                "%s: --kinds %s: with --policy, a comma-separated list of exp, recip, "
                "recip_norm, rsqrt, silu, gelu (or none)\n",
                prog, kinds);
        return RUN_EXIT_USAGE;
    }
    if (preset && (!policy || pol != TS_SCHED_CKKS || kinds)) {
        fprintf(stderr,
                "%s: --params %s: with --policy ckks (without --kinds), the engine "
                "tesserad builds\n",
                prog, preset);
        return RUN_EXIT_USAGE;
    }
    ts_ckks_params_t *params = NULL;
    if (preset) {
        char path[600];
        ts_cfg_error_t perr;
        snprintf(path, sizeof path, "configs/params/%s.yaml", preset);
        memset(&perr, 0, sizeof perr);
        ts_status_t sp = ts_ckks_params_load_file(path, true, &params, &perr);
        if (sp != TS_OK) {
            fprintf(stderr, "%s: --params %s: %s: %s\n", prog, preset, path,
                    perr.msg[0] ? perr.msg : ts_strerror(sp));
            return RUN_EXIT_LOCAL;
        }
    }
    ts_llm_model_t *m = NULL;
    ts_llm_tokenizer_t *t = NULL;
    int rc = ts_cli_llm_load(prog, model_path, tok_path, &m, &t);
    if (rc != RUN_EXIT_OK) {
        ts_ckks_params_free(params);
        return rc;
    }
    const ts_llm_config_t *c = ts_llm_model_config(m);
    size_t total = steps > 0 ? (size_t)steps : (size_t)c->seq_len;
    if (total > (size_t)c->seq_len)
        total = (size_t)c->seq_len;
    char pol_name[192];
    if (policy) {
        /* the engine's configuration for a session of `total` positions */
        ts_llm_enc_config_t ec;
        if (kinds)
            ts_llm_enc_config_kinds(&ec, pol, (int)total, kind_mask);
        else
            ts_llm_enc_config_policy(&ec, pol, (int)total);
        char fine[96] = "";
        if (params) {
            /* tesserad's engine for a session of `total` positions (one lane) */
            ec.log_slots = ts_llm_enc_log_slots_for(m, params, (int)total);
            ts_status_t sr = ts_llm_enc_config_refine(m, params, &ec, (int)total,
                                                      TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT);
            snprintf(fine, sizeof fine, " at %s: %s degree %d, 1/sqrt degree %d%s", preset,
                     c->arch == TS_LLM_ARCH_GPT2 ? "GELU" : "SiLU",
                     ts_llm_enc_config_act(&ec, m)->degree, ec.rsqrt.degree,
                     sr == TS_OK ? "" : " (the engine cannot plan it)");
        }
        ts_llm_enc_config_to_sim(&ec, &cfg);
        snprintf(pol_name, sizeof pol_name, "policy %s%s%s (%zu positions)%s", policy,
                 kinds ? ", tfhe kinds " : "", kinds ? kinds : "", total, fine);
        cfg_path = pol_name;
    }
    size_t plen = strlen(prompt), pcap = ts_llm_tokenizer_max_ids(plen);
    size_t n_prompt = 0, n_exact = 0, n_approx = 0, n_seq = 0;
    int *pids = malloc(pcap * sizeof(int));
    int *gexact = malloc((total + 1) * sizeof(int)), *gapprox = malloc((total + 1) * sizeof(int));
    int *seq = NULL;
    char *text = NULL;
    ts_llm_sim_report_t r;
    memset(&r, 0, sizeof(r));
    ts_status_t st;
    rc = RUN_EXIT_FAIL;
    if (!pids || !gexact || !gapprox)
        goto out;
    st = ts_llm_tokenizer_encode(t, prompt, plen, true, false, pids, pcap, &n_prompt);
    if (st != TS_OK || n_prompt == 0 || n_prompt >= total) {
        fprintf(stderr, "%s: the prompt does not fit (%zu tokens, %zu positions)\n", prog, n_prompt,
                total);
        rc = RUN_EXIT_USAGE;
        goto out;
    }
    /* Free-running greedy: exact vs approximate. */
    st = ts_llm_generate(m, NULL, pids, n_prompt, total, false, -1, NULL, NULL, gexact, &n_exact);
    if (st == TS_OK)
        st = ts_llm_simulate_greedy(m, &cfg, pids, n_prompt, total, gapprox, &n_approx);
    if (st != TS_OK) {
        fprintf(stderr, "%s: greedy runs failed: %s\n", prog, ts_strerror(st));
        goto out;
    }
    /* The teacher-forced sequence: the text, or the exact greedy sequence. */
    if (text_path) {
        size_t tl;
        text = read_text(text_path, &tl);
        if (!text) {
            fprintf(stderr, "%s: cannot read %s\n", prog, text_path);
            rc = RUN_EXIT_LOCAL;
            goto out;
        }
        size_t cap = ts_llm_tokenizer_max_ids(tl);
        seq = malloc(cap * sizeof(int));
        if (!seq || ts_llm_tokenizer_encode(t, text, tl, true, false, seq, cap, &n_seq) != TS_OK)
            goto out;
        if (n_seq > total)
            n_seq = total;
    } else {
        seq = malloc(n_exact * sizeof(int));
        if (!seq)
            goto out;
        memcpy(seq, gexact, n_exact * sizeof(int));
        n_seq = n_exact;
    }
    st = ts_llm_simulate(m, &cfg, seq, n_seq, &r);
    if (st != TS_OK) {
        fprintf(stderr, "%s: simulation failed: %s\n", prog, ts_strerror(st));
        goto out;
    }
    size_t same = 0, first_div = 0;
    bool diverged = false;
    for (size_t i = n_prompt; i < n_exact && i < n_approx; i++) {
        if (gexact[i] == gapprox[i]) {
            same++;
        } else if (!diverged) {
            diverged = true;
            first_div = i;
        }
    }
    size_t gen = n_exact - n_prompt;
    double dppl = r.ppl_exact > 0 ? (r.ppl_approx / r.ppl_exact - 1.0) * 100.0 : 0.0;

    if (json) {
        char b[8][32];
        printf("{\"mode\":\"plaintext-simulation\",\"model\":");
        ts_cli_llm_json_escape(stdout, model_path, strlen(model_path));
        printf(",\"config\":");
        ts_cli_llm_json_escape(stdout, cfg_path ? cfg_path : "(exact)",
                               strlen(cfg_path ? cfg_path : "(exact)"));
        printf(",\"softmax_k\":%d,\"noise_bits\":%s,\"primitives\":{", cfg.softmax_k,
               json_num(b[0], cfg.noise_bits));
        for (int f = 0; f < TS_NL_FN_COUNT; f++) {
            const ts_nonlinear_stats_t *s = &r.prim[f];
            char d[128];
            describe(&cfg.prim[f], d, sizeof(d));
            double cnt = s->count ? (double)s->count : 1.0;
            printf("%s\"%s\":{\"method\":\"%s\",\"calls\":%llu,\"out_of_range\":%llu,"
                   "\"max_abs_err\":%s,\"mean_abs_err\":%s,\"max_rel_err\":%s,"
                   "\"in_min\":%s,\"in_max\":%s}",
                   f ? "," : "", ts_nonlinear_fn_name((ts_nonlinear_fn_t)f), d,
                   (unsigned long long)s->count, (unsigned long long)s->out_of_range,
                   json_num(b[0], s->max_abs_err), json_num(b[1], s->sum_abs_err / cnt),
                   json_num(b[2], s->max_rel_err), json_num(b[3], s->count ? s->in_min : 0.0),
                   json_num(b[4], s->count ? s->in_max : 0.0));
        }
        printf("},\"softmax\":{\"rows\":%llu,\"max_err\":%s,\"mean_err\":%s,"
               "\"score_min\":%s,\"score_max\":%s},\"layers\":[",
               (unsigned long long)r.softmax_count, json_num(b[0], r.softmax_max_err),
               json_num(b[1], r.softmax_mean_err), json_num(b[2], r.score_min),
               json_num(b[3], r.score_max));
        for (int l = 0; l < r.n_layers; l++)
            printf("%s{\"max_abs_err\":%s,\"mean_abs_err\":%s,\"rms\":%s}", l ? "," : "",
                   json_num(b[0], r.layer_max_err[l]), json_num(b[1], r.layer_mean_err[l]),
                   json_num(b[2], r.layer_rms[l]));
        printf("],\"logits\":{\"max_abs_err\":%s,\"mean_abs_err\":%s},"
               "\"positions\":%zu,\"argmax_agree\":%zu,\"ppl_tokens\":%zu,\"ppl_exact\":%s,"
               "\"ppl_approx\":%s,\"ppl_increase_percent\":%s,"
               "\"greedy\":{\"generated\":%zu,\"identical\":%zu,\"first_divergence\":%lld}}\n",
               json_num(b[0], r.logits_max_err), json_num(b[1], r.logits_mean_err), r.positions,
               r.agree, r.ppl_tokens, json_num(b[2], r.ppl_exact), json_num(b[3], r.ppl_approx),
               json_num(b[4], dppl), gen, same, diverged ? (long long)first_div : -1LL);
    } else {
        printf("[plaintext simulation] %s, config %s\n", model_path,
               cfg_path ? cfg_path : "(all exact)");
        if (cfg.softmax_k >= 0)
            printf("softmax: max-free normalize-and-square, k = %d\n", cfg.softmax_k);
        else
            printf("softmax: reference (max subtracted)\n");
        if (cfg.noise_bits > 0)
            printf("noise: Gaussian, sigma 2^-%g after each arithmetic step (seed %llu)\n",
                   cfg.noise_bits, (unsigned long long)cfg.seed);
        printf("\n%-6s %-34s %9s %6s %11s %11s %11s  %s\n", "prim", "method", "calls", "oor",
               "max abs", "mean abs", "max rel", "inputs seen");
        for (int f = 0; f < TS_NL_FN_COUNT; f++) {
            const ts_nonlinear_stats_t *s = &r.prim[f];
            char d[128];
            describe(&cfg.prim[f], d, sizeof(d));
            printf("%-6s %-34s %9llu %6llu %11.3e %11.3e %11.3e  [%.4g, %.4g]\n",
                   ts_nonlinear_fn_name((ts_nonlinear_fn_t)f), d, (unsigned long long)s->count,
                   (unsigned long long)s->out_of_range, s->max_abs_err,
                   s->count ? s->sum_abs_err / s->count : 0.0, s->max_rel_err,
                   s->count ? s->in_min : 0.0, s->count ? s->in_max : 0.0);
        }
        printf("\nsoftmax rows %llu: max err %.3e, mean of row maxima %.3e; attention scores in "
               "[%.4g, %.4g]\n",
               (unsigned long long)r.softmax_count, r.softmax_max_err, r.softmax_mean_err,
               r.score_min, r.score_max);
        printf("\n%-6s %12s %12s %12s\n", "layer", "max abs err", "mean abs err", "rms (exact)");
        for (int l = 0; l < r.n_layers; l++)
            printf("%-6d %12.3e %12.3e %12.3e\n", l, r.layer_max_err[l], r.layer_mean_err[l],
                   r.layer_rms[l]);
        printf("logits max abs err %.3e, mean %.3e\n", r.logits_max_err, r.logits_mean_err);
        printf("\nteacher-forced argmax agreement: %zu / %zu (%.2f%%)\n", r.agree, r.positions,
               100.0 * (double)r.agree / (double)r.positions);
        printf("perplexity over %zu tokens (%s): exact %.5f, approximate %.5f (%+.3f%%)\n",
               r.ppl_tokens, text_path ? text_path : "exact greedy continuation", r.ppl_exact,
               r.ppl_approx, dppl);
        if (diverged)
            printf("free-running greedy: %zu / %zu generated tokens identical, first divergence "
                   "at position %zu\n",
                   same, gen, first_div);
        else
            printf("free-running greedy: %zu / %zu generated tokens identical\n", same, gen);
    }
    rc = RUN_EXIT_OK;
out:
    if (rc == RUN_EXIT_FAIL && !pids)
        fprintf(stderr, "%s: out of memory\n", prog);
    ts_llm_sim_report_clear(&r);
    free(pids);
    free(gexact);
    free(gapprox);
    free(seq);
    free(text);
    ts_llm_tokenizer_free(t);
    ts_llm_model_free(m);
    ts_ckks_params_free(params);
    return rc;
}

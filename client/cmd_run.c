/*
 * tessera run — local PLAINTEXT generation with the reference forward pass
 * (core/llm). Nothing is encrypted and no server is involved: this is the
 * twin the encrypted decode is checked against.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/llm_cli.h"

static const char run_help[] =
    "usage: tessera run --model FILE [--tokenizer FILE] --prompt TEXT [options]\n"
    "\n"
    "Generate text locally in PLAINTEXT with the reference forward pass (no\n"
    "encryption, no server). Tokens stream to stdout as they are produced.\n"
    "\n"
    "  -m, --model FILE        llama2.c checkpoint (.bin) or GGUF model\n"
    "  -z, --tokenizer FILE    llama2.c tokenizer.bin (default for GGUF: the model's own)\n"
    "  -p, --prompt TEXT       prompt (encoded with BOS first)\n"
    "  -n, --steps N           positions to fill, prompt included (default: context length)\n"
    "  -t, --temperature T     0 = greedy (default 0)\n"
    "  -k, --top-k K           keep the K most likely tokens (0 = off)\n"
    "      --top-p P           nucleus sampling mass (0 or 1 = off)\n"
    "      --seed S            sampler seed (default 1): same seed, same text\n"
    "      --stop-eos          stop at the end-of-sequence token\n"
    "      --plaintext         accepted for clarity (this command is always plaintext)\n"
    "      --draft-lookup      replay the generation as `tessera generate --draft-lookup`\n"
    "                          would decode it on a model of --lanes lanes (the n-gram\n"
    "                          draft; exact for these ids, sampled or greedy): how many\n"
    "                          speculative passes, one-position steps and kept guesses\n"
    "                          (a line on stderr; with --json the object's speculative)\n"
    "      --draft-text FILE   count FILE's lines in the n-gram draft too (implies\n"
    "                          --draft-lookup)\n"
    "      --lanes N           lanes of the replay (default 8; 2 to 1024)\n"
    "      --json              one JSON object instead of streamed text\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 success, 2 bad command line, 4 model/tokenizer file error.\n";

typedef struct {
    const ts_llm_tokenizer_t *tok;
    FILE *out;
} stream_ctx_t;

static void stream_token(void *ctx, int prev, int id)
{
    stream_ctx_t *s = ctx;
    char buf[512];
    size_t n;
    if (ts_llm_tokenizer_decode(s->tok, prev, id, buf, sizeof(buf), &n) == TS_OK) {
        fwrite(buf, 1, n, s->out);
        fflush(s->out);
    }
}

void ts_cli_llm_json_escape(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int ts_cli_llm_load(const char *prog, const char *model_path, const char *tok_path,
                    ts_llm_model_t **m, ts_llm_tokenizer_t **t)
{
    char err[512] = "";
    ts_status_t st = ts_llm_model_load(model_path, m, err, sizeof(err));
    if (st != TS_OK) {
        fprintf(stderr, "%s: %s\n", prog, err[0] ? err : ts_strerror(st));
        return RUN_EXIT_LOCAL;
    }
    const char *tp = tok_path ? tok_path : model_path;
    st = ts_llm_tokenizer_load(tp, ts_llm_model_config(*m)->vocab_size, t, err, sizeof(err));
    if (st != TS_OK) {
        fprintf(stderr, "%s: %s%s\n", prog, err[0] ? err : ts_strerror(st),
                tok_path ? "" : " (pass --tokenizer for llama2.c checkpoints)");
        ts_llm_model_free(*m);
        *m = NULL;
        return RUN_EXIT_LOCAL;
    }
    return RUN_EXIT_OK;
}

bool ts_cli_llm_parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

/* The n-gram draft's one-token contexts guess a pass's first token when
 * their most frequent next took this share of their occurrences (and they
 * were seen twice): with a history of earlier generations (20 prompts of
 * aidreams260K at 32 positions, 8 lanes, greedy) 0.371 encrypted steps per
 * token against 0.398 without them, and as many as without them from the
 * text so far alone; 0.2 to 0.5 did as well, 0.7 less (docs/benchmarks.md,
 * session 27) */
#define NGRAM_FALLBACK_SHARE 0.35

ts_status_t ts_cli_ngram_load(const ts_llm_tokenizer_t *tok, const char *text_path,
                              ts_llm_ngram_t **out, char *err, size_t errcap)
{
    ts_status_t st = ts_llm_ngram_new(2, TS_LLM_NGRAM_MAX, out);
    if (st == TS_OK)
        st = ts_llm_ngram_set_fallback(*out, NGRAM_FALLBACK_SHARE);
    if (st == TS_OK && text_path)
        st = ts_llm_ngram_add_file(*out, tok, text_path, err, errcap);
    return st;
}

int ts_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"tokenizer", required_argument, NULL, 'z'},
        {"prompt", required_argument, NULL, 'p'},
        {"steps", required_argument, NULL, 'n'},
        {"temperature", required_argument, NULL, 't'},
        {"top-k", required_argument, NULL, 'k'},
        {"top-p", required_argument, NULL, 0x200},
        {"seed", required_argument, NULL, 0x201},
        {"stop-eos", no_argument, NULL, 0x202},
        {"plaintext", no_argument, NULL, 0x203},
        {"draft-lookup", no_argument, NULL, 0x204},
        {"draft-text", required_argument, NULL, 0x205},
        {"lanes", required_argument, NULL, 0x206},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "tessera run";
    const char *model_path = NULL, *tok_path = NULL, *prompt = NULL, *draft_text = NULL;
    double steps = 0, temp = 0, top_k = 0, top_p = 0, seed = 1, lanes = 8;
    bool json = false, stop_eos = false, lookup = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "m:z:p:n:t:k:jh", opts, NULL)) != -1) {
        bool ok = true;
        switch (ch) {
        case 'm':
            model_path = optarg;
            break;
        case 'z':
            tok_path = optarg;
            break;
        case 'p':
            prompt = optarg;
            break;
        case 'n':
            ok = ts_cli_llm_parse_num(optarg, 1, 1 << 20, &steps);
            break;
        case 't':
            ok = ts_cli_llm_parse_num(optarg, 0, 1000, &temp);
            break;
        case 'k':
            ok = ts_cli_llm_parse_num(optarg, 0, 1 << 24, &top_k);
            break;
        case 0x200:
            ok = ts_cli_llm_parse_num(optarg, 0, 1, &top_p);
            break;
        case 0x201:
            ok = ts_cli_llm_parse_num(optarg, 0, 9007199254740992.0, &seed);
            break;
        case 0x202:
            stop_eos = true;
            break;
        case 0x203:
            break;
        case 0x205:
            draft_text = optarg;
            /* fall through */
        case 0x204:
            lookup = true;
            break;
        case 0x206:
            ok = ts_cli_llm_parse_num(optarg, 2, 1024, &lanes) && lanes == (double)(int)lanes;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(run_help, stdout);
            return RUN_EXIT_OK;
        default:
            fputs(run_help, stderr);
            return RUN_EXIT_USAGE;
        }
        if (!ok) {
            fprintf(stderr, "%s: bad value for --%s: %s\n", prog, argv[optind - 1], optarg);
            return RUN_EXIT_USAGE;
        }
    }
    if (!model_path || !prompt || optind != argc) {
        fprintf(stderr, "%s: --model and --prompt are required\n\n%s", prog, run_help);
        return RUN_EXIT_USAGE;
    }
    ts_llm_model_t *m = NULL;
    ts_llm_tokenizer_t *t = NULL;
    int rc = ts_cli_llm_load(prog, model_path, tok_path, &m, &t);
    if (rc != RUN_EXIT_OK)
        return rc;
    const ts_llm_config_t *c = ts_llm_model_config(m);
    size_t plen = strlen(prompt), cap = ts_llm_tokenizer_max_ids(plen), n_prompt = 0, n_out = 0;
    size_t total = steps > 0 ? (size_t)steps : (size_t)c->seq_len;
    if (total > (size_t)c->seq_len)
        total = (size_t)c->seq_len;
    int *ids = malloc(cap * sizeof(int));
    int *out = malloc((total > cap ? total : cap) * sizeof(int));
    ts_llm_sampler_t *sampler = NULL;
    ts_llm_ngram_t *ngram = NULL;
    ts_status_t st = TS_OK;
    if (!ids || !out) {
        fprintf(stderr, "%s: out of memory\n", prog);
        rc = RUN_EXIT_FAIL;
        goto out;
    }
    st = ts_llm_tokenizer_encode(t, prompt, plen, true, false, ids, cap, &n_prompt);
    if (st != TS_OK || n_prompt == 0) {
        fprintf(stderr, "%s: cannot encode the prompt: %s\n", prog, ts_strerror(st));
        rc = RUN_EXIT_FAIL;
        goto out;
    }
    if (n_prompt >= total) {
        fprintf(stderr, "%s: the prompt takes %zu positions, --steps/context allows %zu\n", prog,
                n_prompt, total);
        rc = RUN_EXIT_USAGE;
        goto out;
    }
    ts_llm_sampler_cfg_t scfg = {(float)temp, (int)top_k, (float)top_p};
    st = ts_llm_sampler_new(&scfg, (uint64_t)seed, &sampler);
    if (st != TS_OK) {
        fprintf(stderr, "%s: sampler: %s\n", prog, ts_strerror(st));
        rc = RUN_EXIT_USAGE;
        goto out;
    }
    fprintf(stderr,
            "[plaintext] local generation, nothing encrypted: %s (%s, dim %d, %d layers, "
            "vocab %d), %s\n",
            model_path, ts_llm_arch_name(c->arch), c->dim, c->n_layers, c->vocab_size,
            temp == 0 ? "greedy" : "sampled");
    stream_ctx_t sc = {t, stdout};
    if (!json) {
        /* The prompt as the tokenizer reads it back, then the new tokens. */
        for (size_t i = 1; i < n_prompt; i++)
            stream_token(&sc, ids[i - 1], ids[i]);
    }
    uint64_t t0 = ts_now_ns();
    st = ts_llm_generate(m, sampler, ids, n_prompt, total, stop_eos, ts_llm_tokenizer_eos(t),
                         json ? NULL : stream_token, &sc, out, &n_out);
    double secs = (double)(ts_now_ns() - t0) * 1e-9;
    if (st != TS_OK) {
        fprintf(stderr, "\n%s: generation failed: %s\n", prog, ts_strerror(st));
        rc = RUN_EXIT_FAIL;
        goto out;
    }
    /* --draft-lookup: the speculative schedule of these ids (the first
     * generated token comes from the prompt's last step, as in generate) */
    ts_llm_ngram_replay_t rep = {0};
    if (lookup) {
        char err[300] = "";
        st = ts_cli_ngram_load(t, draft_text, &ngram, err, sizeof err);
        if (st != TS_OK) {
            fprintf(stderr, "%s: --draft-text: %s\n", prog, err[0] ? err : ts_strerror(st));
            rc = st == TS_ENOMEM ? RUN_EXIT_FAIL : RUN_EXIT_USAGE;
            goto out;
        }
        if (n_out > n_prompt + 1 &&
            (st = ts_llm_ngram_replay(ngram, out, n_out, n_prompt, (size_t)lanes, &rep)) != TS_OK) {
            fprintf(stderr, "%s: the n-gram draft: %s\n", prog, ts_strerror(st));
            rc = RUN_EXIT_FAIL;
            goto out;
        }
    }
    if (json) {
        printf("{\"mode\":\"plaintext\",\"model\":");
        ts_cli_llm_json_escape(stdout, model_path, strlen(model_path));
        printf(",\"arch\":\"%s\",\"temperature\":%g,\"top_k\":%d,\"top_p\":%g,\"seed\":%.0f,"
               "\"prompt_tokens\":%zu,\"ids\":[",
               ts_llm_arch_name(c->arch), temp, (int)top_k, top_p, seed, n_prompt);
        for (size_t i = 0; i < n_out; i++)
            printf("%s%d", i ? "," : "", out[i]);
        printf("],\"text\":");
        char *text = malloc(n_out * 64 + 1);
        size_t w = 0;
        for (size_t i = 1; text && i < n_out; i++) {
            size_t k;
            if (ts_llm_tokenizer_decode(t, out[i - 1], out[i], text + w, 64, &k) == TS_OK)
                w += k;
        }
        ts_cli_llm_json_escape(stdout, text ? text : "", text ? w : 0);
        free(text);
        printf(",\"seconds\":%.6f,\"tokens_per_second\":%.1f", secs,
               secs > 0 ? (double)(n_out - n_prompt) / secs : 0.0);
        if (lookup)
            printf(",\"speculative\":{\"lanes\":%d,\"tokens\":%zu,\"passes\":%zu,\"steps\":%zu,"
                   "\"drafted\":%zu,\"kept\":%zu,\"passes_after_step\":%zu}",
                   (int)lanes, rep.tokens, rep.passes, rep.steps, rep.drafted, rep.kept,
                   rep.after_step);
        printf("}\n");
    } else {
        printf("\n");
        fflush(stdout); /* the status line on stderr comes after the text */
        fprintf(stderr, "[plaintext] %zu new tokens in %.3f s (%.1f tok/s)\n", n_out - n_prompt,
                secs, secs > 0 ? (double)(n_out - n_prompt) / secs : 0.0);
        if (lookup)
            fprintf(stderr,
                    "[plaintext] --draft-lookup on %d lanes: the %zu tokens after the first in "
                    "%zu speculative passes (%zu guesses kept of %zu drafted; %zu right after "
                    "a step) and %zu one-position steps\n",
                    (int)lanes, rep.tokens, rep.passes, rep.kept, rep.drafted, rep.after_step,
                    rep.steps);
    }
    rc = RUN_EXIT_OK;
out:
    ts_llm_ngram_free(ngram);
    ts_llm_sampler_free(sampler);
    free(ids);
    free(out);
    ts_llm_tokenizer_free(t);
    ts_llm_model_free(m);
    return rc;
}

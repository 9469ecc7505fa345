/*
 * tessera run — local PLAINTEXT generation with the reference forward pass
 * (core/llm). Nothing is encrypted and no server is involved: this is the
 * twin the encrypted decode is checked against.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/llm_cli.h"

/* --prompt-file: the file's size and a line's (without '\n' and '\r') */
#define PROMPT_FILE_MAX ((size_t)16 << 20)
#define PROMPT_LINE_MAX 4096

static const char run_help[] =
    "usage: tessera run --model FILE [--tokenizer FILE] --prompt TEXT [options]\n"
    "       tessera run --model FILE [--tokenizer FILE] --prompt-file FILE [options]\n"
    "       tessera run --model FILE [--tokenizer FILE] --score-ids LIST [--json]\n"
    "\n"
    "Generate text locally in PLAINTEXT with the reference forward pass (no\n"
    "encryption, no server). Tokens stream to stdout as they are produced.\n"
    "\n"
    "  -m, --model FILE        llama2.c checkpoint (.bin) or GGUF model\n"
    "  -z, --tokenizer FILE    llama2.c tokenizer.bin (default for GGUF: the model's own)\n"
    "  -p, --prompt TEXT       prompt (encoded with BOS first)\n"
    "      --prompt-file FILE  one prompt per line of FILE (a trailing \\r dropped, blank\n"
    "                          lines skipped; at most 16 MiB, lines of at most 4096\n"
    "                          bytes), each generated as --prompt would: ONE line of\n"
    "                          output per prompt, --prompt's text with its newlines as\n"
    "                          spaces. Suitable as a draft text for `tessera generate\n"
    "                          --draft-text` or a model's published draft_text. Not\n"
    "                          with --prompt, --json, --draft-lookup or --draft-text\n"
    "  -n, --steps N           positions to fill, prompt included (default: context length)\n"
    "  -t, --temperature T     0 = greedy (default 0)\n"
    "  -k, --top-k K           keep the K most likely tokens (0 = off)\n"
    "      --top-p P           nucleus sampling mass (0 or 1 = off)\n"
    "      --seed S            sampler seed (default 1): same seed, same text (each\n"
    "                          prompt of --prompt-file starts from it afresh)\n"
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
    "      --score-ids LIST    score a given sequence instead of generating (teacher\n"
    "                          forcing): LIST is token ids, BOS first (a prompt's ids\n"
    "                          and the ids a decode chose); at each position p the\n"
    "                          model runs ids[0..p] and a line gives its argmax for\n"
    "                          p + 1, how far the given next id's logit falls short\n"
    "                          of the argmax's (0: the greedy choice) and the argmax's\n"
    "                          margin over the runner-up: was an encrypted decode's\n"
    "                          choice the greedy one, or a near-tie? Not with --prompt,\n"
    "                          --prompt-file, --draft-lookup or --draft-text\n"
    "      --json              one JSON object instead of streamed text\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 bad command line, 4 model/tokenizer/prompt\n"
    "file error.\n";

typedef struct {
    const ts_llm_tokenizer_t *tok;
    FILE *out;
    bool one_line; /* '\n' and '\r' written as spaces (--prompt-file) */
} stream_ctx_t;

static void stream_token(void *ctx, int prev, int id)
{
    stream_ctx_t *s = ctx;
    char buf[512];
    size_t n;
    if (ts_llm_tokenizer_decode(s->tok, prev, id, buf, sizeof(buf), &n) == TS_OK) {
        for (size_t i = 0; s->one_line && i < n; i++)
            if (buf[i] == '\n' || buf[i] == '\r')
                buf[i] = ' ';
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

bool ts_cli_llm_parse_ids(const char *s, int max_id, int *ids, size_t cap, size_t *n)
{
    *n = 0;
    for (;;) {
        char *end = NULL;
        errno = 0;
        long id = strtol(s, &end, 10);
        if (end == s || errno || id < 0 || id >= max_id || *n == cap || (*end && *end != ','))
            return false;
        ids[(*n)++] = (int)id;
        if (!*end)
            return true;
        s = end + 1;
    }
}

bool ts_cli_llm_parse_boot_dft(const char *s, int *cts, int *stc)
{
    int c = -1, t = -1;
    char tail = 0;
    if (sscanf(s, "%d:%d%c", &c, &t, &tail) != 2 || c < 0 || c > 8 || t < 0 || t > 8)
        return false;
    *cts = c;
    *stc = t;
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

/* The options of one `tessera run`, as parsed. */
typedef struct {
    const char *model_path, *draft_text;
    double steps, temp, top_k, top_p, seed, lanes;
    bool json, stop_eos, lookup;
} run_opts_t;

/* Generated tokens and seconds, summed over the prompts of --prompt-file. */
typedef struct {
    size_t prompts, new_tokens;
    double secs;
} run_stats_t;

static void print_banner(const run_opts_t *o, const ts_llm_config_t *c)
{
    fprintf(stderr,
            "[plaintext] local generation, nothing encrypted: %s (%s, dim %d, %d layers, "
            "vocab %d), %s\n",
            o->model_path, ts_llm_arch_name(c->arch), c->dim, c->n_layers, c->vocab_size,
            o->temp == 0 ? "greedy" : "sampled");
}

/*
 * One prompt's generation: the prompt as the tokenizer reads it back and
 * the new tokens streamed to stdout, then "\n" (or the --json object).
 * one_line (--prompt-file): '\n' and '\r' in the text become spaces, and
 * the banner and status lines on stderr are left to the caller; stats
 * gathers the counts. Returns the exit code, having printed why.
 */
static int run_prompt(const char *prog, const run_opts_t *o, const ts_llm_model_t *m,
                      const ts_llm_tokenizer_t *t, const char *prompt, size_t plen, bool one_line,
                      run_stats_t *stats)
{
    const ts_llm_config_t *c = ts_llm_model_config(m);
    size_t cap = ts_llm_tokenizer_max_ids(plen), n_prompt = 0, n_out = 0;
    size_t total = o->steps > 0 ? (size_t)o->steps : (size_t)c->seq_len;
    if (total > (size_t)c->seq_len)
        total = (size_t)c->seq_len;
    int *ids = malloc(cap * sizeof(int));
    int *out = malloc((total > cap ? total : cap) * sizeof(int));
    ts_llm_sampler_t *sampler = NULL;
    ts_llm_ngram_t *ngram = NULL;
    ts_status_t st = TS_OK;
    int rc;
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
    ts_llm_sampler_cfg_t scfg = {(float)o->temp, (int)o->top_k, (float)o->top_p};
    st = ts_llm_sampler_new(&scfg, (uint64_t)o->seed, &sampler);
    if (st != TS_OK) {
        fprintf(stderr, "%s: sampler: %s\n", prog, ts_strerror(st));
        rc = RUN_EXIT_USAGE;
        goto out;
    }
    if (!one_line)
        print_banner(o, c);
    stream_ctx_t sc = {t, stdout, one_line};
    if (!o->json) {
        /* The prompt as the tokenizer reads it back, then the new tokens. */
        for (size_t i = 1; i < n_prompt; i++)
            stream_token(&sc, ids[i - 1], ids[i]);
    }
    uint64_t t0 = ts_now_ns();
    st = ts_llm_generate(m, sampler, ids, n_prompt, total, o->stop_eos, ts_llm_tokenizer_eos(t),
                         o->json ? NULL : stream_token, &sc, out, &n_out);
    double secs = (double)(ts_now_ns() - t0) * 1e-9;
    if (st != TS_OK) {
        fprintf(stderr, "\n%s: generation failed: %s\n", prog, ts_strerror(st));
        rc = RUN_EXIT_FAIL;
        goto out;
    }
    stats->prompts++;
    stats->new_tokens += n_out - n_prompt;
    stats->secs += secs;
    /* --draft-lookup: the speculative schedule of these ids (the first
     * generated token comes from the prompt's last step, as in generate) */
    ts_llm_ngram_replay_t rep = {0};
    if (o->lookup) {
        char err[300] = "";
        st = ts_cli_ngram_load(t, o->draft_text, &ngram, err, sizeof err);
        if (st != TS_OK) {
            fprintf(stderr, "%s: --draft-text: %s\n", prog, err[0] ? err : ts_strerror(st));
            rc = st == TS_ENOMEM ? RUN_EXIT_FAIL : RUN_EXIT_USAGE;
            goto out;
        }
        if (n_out > n_prompt + 1 && (st = ts_llm_ngram_replay(ngram, out, n_out, n_prompt,
                                                              (size_t)o->lanes, &rep)) != TS_OK) {
            fprintf(stderr, "%s: the n-gram draft: %s\n", prog, ts_strerror(st));
            rc = RUN_EXIT_FAIL;
            goto out;
        }
    }
    if (o->json) {
        printf("{\"mode\":\"plaintext\",\"model\":");
        ts_cli_llm_json_escape(stdout, o->model_path, strlen(o->model_path));
        printf(",\"arch\":\"%s\",\"temperature\":%g,\"top_k\":%d,\"top_p\":%g,\"seed\":%.0f,"
               "\"prompt_tokens\":%zu,\"ids\":[",
               ts_llm_arch_name(c->arch), o->temp, (int)o->top_k, o->top_p, o->seed, n_prompt);
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
        if (o->lookup)
            printf(",\"speculative\":{\"lanes\":%d,\"tokens\":%zu,\"passes\":%zu,\"steps\":%zu,"
                   "\"drafted\":%zu,\"kept\":%zu,\"passes_after_step\":%zu}",
                   (int)o->lanes, rep.tokens, rep.passes, rep.steps, rep.drafted, rep.kept,
                   rep.after_step);
        printf("}\n");
    } else {
        printf("\n");
        fflush(stdout); /* the status line on stderr comes after the text */
        if (!one_line)
            fprintf(stderr, "[plaintext] %zu new tokens in %.3f s (%.1f tok/s)\n", n_out - n_prompt,
                    secs, secs > 0 ? (double)(n_out - n_prompt) / secs : 0.0);
        if (o->lookup)
            fprintf(stderr,
                    "[plaintext] --draft-lookup on %d lanes: the %zu tokens after the first in "
                    "%zu speculative passes (%zu guesses kept of %zu drafted; %zu right after "
                    "a step) and %zu one-position steps\n",
                    (int)o->lanes, rep.tokens, rep.passes, rep.kept, rep.drafted, rep.after_step,
                    rep.steps);
    }
    rc = RUN_EXIT_OK;
out:
    ts_llm_ngram_free(ngram);
    ts_llm_sampler_free(sampler);
    free(ids);
    free(out);
    return rc;
}

/*
 * --score-ids: the model teacher-forced on ids[0..n): at each position p <
 * n - 1 its argmax, the shortfall of ids[p + 1]'s logit below the argmax's
 * and the argmax's margin over the runner-up; a table on stdout or (json)
 * one object. Returns the exit code, having printed why.
 */
static int run_score(const char *prog, const run_opts_t *o, const ts_llm_model_t *m,
                     const ts_llm_tokenizer_t *t, const int *ids, size_t n)
{
    const ts_llm_config_t *c = ts_llm_model_config(m);
    if (n < 2 || n > (size_t)c->seq_len) {
        fprintf(stderr, "%s: --score-ids takes 2 to %d ids (the model's context), not %zu\n", prog,
                c->seq_len, n);
        return RUN_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= c->vocab_size) {
            fprintf(stderr, "%s: --score-ids: id %d is outside the vocabulary (%d ids)\n", prog,
                    ids[i], c->vocab_size);
            return RUN_EXIT_USAGE;
        }
    ts_llm_state_t *state = NULL;
    ts_status_t st = ts_llm_state_new_ctx(m, (int)n, &state);
    if (st != TS_OK) {
        fprintf(stderr, "%s: %s\n", prog, ts_strerror(st));
        return RUN_EXIT_FAIL;
    }
    if (o->json) {
        printf("{\"mode\":\"score\",\"model\":");
        ts_cli_llm_json_escape(stdout, o->model_path, strlen(o->model_path));
        printf(",\"arch\":\"%s\",\"positions\":[", ts_llm_arch_name(c->arch));
    } else {
        printf("%5s %6s %6s %10s %10s  %s\n", "pos", "next", "argmax", "shortfall", "margin",
               "next / argmax text");
    }
    size_t agree = 0;
    double worst = 0;
    for (size_t p = 0; p + 1 < n; p++) {
        const float *lg = NULL;
        st = ts_llm_forward(m, state, ids[p], (int)p, &lg);
        if (st != TS_OK) {
            fprintf(stderr, "%s: forward at position %zu: %s\n", prog, p, ts_strerror(st));
            ts_llm_state_free(state);
            return RUN_EXIT_FAIL;
        }
        int a = ts_llm_argmax(lg, c->vocab_size), next = ids[p + 1];
        double shortfall = (double)lg[a] - lg[next],
               margin = ts_llm_logit_margin(lg, c->vocab_size);
        agree += a == next;
        worst = fmax(worst, shortfall);
        char tn[64] = "", ta[64] = "";
        size_t kn = 0, ka = 0;
        if (ts_llm_tokenizer_decode(t, ids[p], next, tn, sizeof tn - 1, &kn) != TS_OK)
            kn = 0;
        if (ts_llm_tokenizer_decode(t, ids[p], a, ta, sizeof ta - 1, &ka) != TS_OK)
            ka = 0;
        if (o->json) {
            printf("%s{\"pos\":%zu,\"next\":%d,\"argmax\":%d,\"shortfall\":%.6f,"
                   "\"margin\":%.6f,\"next_text\":",
                   p ? "," : "", p, next, a, shortfall, margin);
            ts_cli_llm_json_escape(stdout, tn, kn);
            printf(",\"argmax_text\":");
            ts_cli_llm_json_escape(stdout, ta, ka);
            printf("}");
        } else {
            printf("%5zu %6d %6d %10.4f %10.4f  ", p, next, a, shortfall, margin);
            ts_cli_llm_json_escape(stdout, tn, kn);
            if (a != next) {
                printf(" / ");
                ts_cli_llm_json_escape(stdout, ta, ka);
            }
            printf("\n");
        }
    }
    ts_llm_state_free(state);
    if (o->json)
        printf("],\"scored\":%zu,\"agree\":%zu,\"max_shortfall\":%.6f}\n", n - 1, agree, worst);
    else
        printf("%zu of %zu next ids are the model's argmax; the largest shortfall %.4f\n", agree,
               n - 1, worst);
    return RUN_EXIT_OK;
}

/* The whole of a --prompt-file (at most PROMPT_FILE_MAX bytes) into a
 * malloc'd *buf; on failure print why (naming the path) and return
 * RUN_EXIT_LOCAL. */
static int prompt_file_read(const char *prog, const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: --prompt-file %s: %s\n", prog, path, strerror(errno));
        return RUN_EXIT_LOCAL;
    }
    size_t cap = 0, n = 0;
    char *b = NULL;
    int rc = RUN_EXIT_OK;
    for (;;) {
        if (n == cap) {
            if (cap > PROMPT_FILE_MAX) {
                fprintf(stderr, "%s: --prompt-file %s: larger than %d MiB\n", prog, path,
                        (int)(PROMPT_FILE_MAX >> 20));
                rc = RUN_EXIT_LOCAL;
                break;
            }
            /* up to one byte past the limit, to see that it is passed */
            size_t ncap =
                cap ? (cap * 2 > PROMPT_FILE_MAX ? PROMPT_FILE_MAX + 1 : cap * 2) : 64 << 10;
            char *nb = realloc(b, ncap);
            if (!nb) {
                fprintf(stderr, "%s: out of memory\n", prog);
                rc = RUN_EXIT_FAIL;
                break;
            }
            b = nb;
            cap = ncap;
        }
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (k == 0) {
            if (ferror(f)) {
                fprintf(stderr, "%s: --prompt-file %s: %s\n", prog, path, strerror(errno));
                rc = RUN_EXIT_LOCAL;
            }
            break;
        }
    }
    fclose(f);
    if (rc != RUN_EXIT_OK) {
        free(b);
        return rc;
    }
    *buf = b;
    *len = n;
    return RUN_EXIT_OK;
}

/* The line of buf[0..len) starting at `at`: returns its length without the
 * '\n' and one trailing '\r'; *next is where the following line starts. */
static size_t prompt_line(const char *buf, size_t len, size_t at, size_t *next)
{
    const char *nl = memchr(buf + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
    *next = at + n + (nl != NULL);
    if (n > 0 && buf[at + n - 1] == '\r')
        n--;
    return n;
}

static bool is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isspace((unsigned char)s[i]))
            return false;
    return true;
}

/*
 * --prompt-file: each non-blank line of path generated as `--prompt LINE`
 * would, one line of output per prompt (the n-gram draft's
 * ts_llm_ngram_add_text counts each line as one sequence). Every line is
 * checked before the first generation, so a bad file prints nothing on
 * stdout. Returns the exit code, having printed why.
 */
static int run_prompt_file(const char *prog, const run_opts_t *o, const ts_llm_model_t *m,
                           const ts_llm_tokenizer_t *t, const char *path)
{
    char *buf = NULL;
    size_t len = 0, next, line = 1;
    int rc = prompt_file_read(prog, path, &buf, &len);
    if (rc != RUN_EXIT_OK)
        return rc;
    for (size_t at = 0; at < len; at = next, line++) {
        size_t n = prompt_line(buf, len, at, &next);
        if (n > PROMPT_LINE_MAX || memchr(buf + at, '\0', n)) {
            if (n > PROMPT_LINE_MAX)
                fprintf(stderr, "%s: --prompt-file %s: line %zu is longer than %d bytes\n", prog,
                        path, line, PROMPT_LINE_MAX);
            else
                fprintf(stderr, "%s: --prompt-file %s: line %zu contains a NUL byte\n", prog, path,
                        line);
            rc = RUN_EXIT_LOCAL;
            goto out;
        }
    }
    print_banner(o, ts_llm_model_config(m));
    run_stats_t stats = {0};
    line = 1;
    for (size_t at = 0; at < len; at = next, line++) {
        size_t n = prompt_line(buf, len, at, &next);
        if (is_blank(buf + at, n))
            continue;
        rc = run_prompt(prog, o, m, t, buf + at, n, true, &stats);
        if (rc != RUN_EXIT_OK) {
            fprintf(stderr, "%s: --prompt-file %s: stopped at the prompt of line %zu\n", prog, path,
                    line);
            goto out;
        }
    }
    fprintf(stderr, "[plaintext] %zu prompts, %zu new tokens in %.3f s (%.1f tok/s)\n",
            stats.prompts, stats.new_tokens, stats.secs,
            stats.secs > 0 ? (double)stats.new_tokens / stats.secs : 0.0);
out:
    free(buf);
    return rc;
}

int ts_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"tokenizer", required_argument, NULL, 'z'},
        {"prompt", required_argument, NULL, 'p'},
        {"prompt-file", required_argument, NULL, 0x207},
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
        {"score-ids", required_argument, NULL, 0x208},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "tessera run";
    const char *tok_path = NULL, *prompt = NULL, *prompt_file = NULL, *score = NULL;
    run_opts_t o = {.seed = 1, .lanes = 8};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "m:z:p:n:t:k:jh", opts, NULL)) != -1) {
        bool ok = true;
        switch (ch) {
        case 'm':
            o.model_path = optarg;
            break;
        case 'z':
            tok_path = optarg;
            break;
        case 'p':
            prompt = optarg;
            break;
        case 0x207:
            prompt_file = optarg;
            break;
        case 0x208:
            score = optarg;
            break;
        case 'n':
            ok = ts_cli_llm_parse_num(optarg, 1, 1 << 20, &o.steps);
            break;
        case 't':
            ok = ts_cli_llm_parse_num(optarg, 0, 1000, &o.temp);
            break;
        case 'k':
            ok = ts_cli_llm_parse_num(optarg, 0, 1 << 24, &o.top_k);
            break;
        case 0x200:
            ok = ts_cli_llm_parse_num(optarg, 0, 1, &o.top_p);
            break;
        case 0x201:
            ok = ts_cli_llm_parse_num(optarg, 0, 9007199254740992.0, &o.seed);
            break;
        case 0x202:
            o.stop_eos = true;
            break;
        case 0x203:
            break;
        case 0x205:
            o.draft_text = optarg;
            /* fall through */
        case 0x204:
            o.lookup = true;
            break;
        case 0x206:
            ok = ts_cli_llm_parse_num(optarg, 2, 1024, &o.lanes) && o.lanes == (double)(int)o.lanes;
            break;
        case 'j':
            o.json = true;
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
    if (score && (prompt || prompt_file || o.lookup)) {
        fprintf(stderr,
                "%s: --score-ids scores the given ids: not with --prompt, --prompt-file, "
                "--draft-lookup or --draft-text\n",
                prog);
        return RUN_EXIT_USAGE;
    }
    int *score_ids = NULL;
    size_t n_score = 0;
    if (score) {
        if (!(score_ids = malloc(TS_LLM_MAX_SEQ * sizeof *score_ids))) {
            fprintf(stderr, "%s: out of memory\n", prog);
            return RUN_EXIT_FAIL;
        }
        if (!ts_cli_llm_parse_ids(score, TS_LLM_MAX_VOCAB, score_ids, TS_LLM_MAX_SEQ, &n_score)) {
            fprintf(stderr, "%s: --score-ids is ID,ID[,ID...] (token ids, BOS first)\n", prog);
            free(score_ids);
            return RUN_EXIT_USAGE;
        }
    }
    if (prompt && prompt_file) {
        fprintf(stderr, "%s: --prompt and --prompt-file are mutually exclusive\n", prog);
        return RUN_EXIT_USAGE;
    }
    if (prompt_file && (o.json || o.lookup)) {
        fprintf(stderr,
                "%s: --prompt-file prints one plain line per prompt: it does not take --json, "
                "--draft-lookup or --draft-text\n",
                prog);
        return RUN_EXIT_USAGE;
    }
    if (!o.model_path || !(prompt || prompt_file || score) || optind != argc) {
        fprintf(stderr,
                "%s: --model and --prompt (or --prompt-file or --score-ids) are required\n\n%s",
                prog, run_help);
        free(score_ids);
        return RUN_EXIT_USAGE;
    }
    ts_llm_model_t *m = NULL;
    ts_llm_tokenizer_t *t = NULL;
    int rc = ts_cli_llm_load(prog, o.model_path, tok_path, &m, &t);
    if (rc != RUN_EXIT_OK) {
        free(score_ids);
        return rc;
    }
    if (score) {
        rc = run_score(prog, &o, m, t, score_ids, n_score);
    } else if (prompt_file) {
        rc = run_prompt_file(prog, &o, m, t, prompt_file);
    } else {
        run_stats_t stats = {0};
        rc = run_prompt(prog, &o, m, t, prompt, strlen(prompt), false, &stats);
    }
    free(score_ids);
    ts_llm_tokenizer_free(t);
    ts_llm_model_free(m);
    return rc;
}

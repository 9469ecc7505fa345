/*
 * Private decode over the network (issue 10): the real tesserad serving the
 * tiny synthetic model (tests/unit/llm_tiny.h; preset test-llm-tiny,
 * approximations configs/approx/tiny-test.yaml, flooding lambda 20) over TLS
 * on loopback.
 * Oracles: `tessera generate --temperature 0` reproduces the plaintext greedy
 * ids of ts_llm_generate for the same prompt; a step driven through the
 * library client decrypts to logits within 2e-2 of ts_llm_forward.
 * Hostile inputs: unknown model, unserved and unknown policies, missing
 * rotation keys, no public key, no keys, a session over the model's memory
 * limit, unknown session, a position that is not
 * the next one, a position past the context, garbage and bit-flipped token
 * ciphertexts, a token at the wrong level, a step on a closed session: each
 * gets its error code and a sentence, and the daemon keeps serving.
 * Model files: unknown keys, a missing path, an unreadable model, an unknown
 * preset, a lambda that leaves no precision (the default 40 at a 40-bit
 * scale) or does not fit, a bad name: each stops loading with "file: reason".
 * Policies (model "tinyb", bootstrapping preset test-llm-tiny-boot): the
 * hybrid/tfhe key upload and validation path and a hybrid step that converts
 * on the server; TS_SLOW_TESTS=1 adds the greedy-ids oracle of --policy
 * hybrid on aidreams260K at test-boot-n12 (case decode_slow).
 * GPT-2: the tiny GGUF GPT-2 served, two steps against ts_llm_forward.
 * Sessions: two connections step concurrently (both right), the model's
 * session limit refuses a third, and a disconnect in the middle of a step
 * cancels it (the session is freed, its slot serves a new one).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.h"
#include "core/convert/convert.h"
#include "core/llm/llm.h"
#include "server/ckks_wire.h"
#include "server/tesserad.h"
#include "tests/unit/llm_tiny.h"
#include "tests/unit/net_test_util.h"

#define printf(...) (printf(__VA_ARGS__), fflush(stdout))

typedef struct {
    char certs[512];
    char model[700], tok[700], models[700];
    net_daemon_t d;
} dfx_t;

/* Write dir/name from a format (model files of the daemon's models_dir). */
static void write_yaml(const char *dir, const char *name, const char *fmt, ...)
{
    char path[900];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *y = fopen(path, "w");
    ck_assert_ptr_nonnull(y);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(y, fmt, ap);
    va_end(ap);
    ck_assert_int_eq(fclose(y), 0);
}

/* A fresh temporary directory (tag) with certificates and an empty models/. */
static void dfx_dirs(dfx_t *f, const char *tag)
{
    memset(f, 0, sizeof *f);
    net_tmpdir(f->certs, sizeof f->certs, tag);
    net_make_certs(f->certs, "client");
    snprintf(f->models, sizeof f->models, "%s/models", f->certs);
    ck_assert_int_eq(mkdir(f->models, 0700), 0);
}

static size_t plain_sampled(const dfx_t *f, const char *prompt, size_t n_total, float t,
                            uint64_t seed, int *out, size_t *n_prompt)
{
    ts_llm_model_t *m = NULL;
    ts_llm_tokenizer_t *tok = NULL;
    ts_llm_sampler_t *smp = NULL;
    ck_assert_ts_ok(ts_llm_model_load(f->model, &m, NULL, 0));
    ck_assert_ts_ok(ts_llm_tokenizer_load(f->tok, TINY_VOCAB, &tok, NULL, 0));
    ts_llm_sampler_cfg_t cfg = {t, 0, 0.0f};
    ck_assert_ts_ok(ts_llm_sampler_new(&cfg, seed, &smp));
    int ids[64];
    ck_assert_ts_ok(
        ts_llm_tokenizer_encode(tok, prompt, strlen(prompt), true, false, ids, 64, n_prompt));
    size_t n = 0;
    ck_assert_ts_ok(ts_llm_generate(m, smp, ids, *n_prompt, n_total, true,
                                    ts_llm_tokenizer_eos(tok), NULL, NULL, out, &n));
    ts_llm_sampler_free(smp);
    ts_llm_tokenizer_free(tok);
    ts_llm_model_free(m);
    return n;
}

/* The text of ids[1..upto) as the tokenizer decodes it, into out (cap bytes). */
static void ids_text(const dfx_t *f, const int *ids, size_t upto, char *out, size_t cap)
{
    ts_llm_tokenizer_t *tok = NULL;
    ck_assert_ts_ok(ts_llm_tokenizer_load(f->tok, TINY_VOCAB, &tok, NULL, 0));
    size_t n = 0;
    for (size_t i = 1; i < upto; i++) {
        size_t k = 0;
        ck_assert_ts_ok(ts_llm_tokenizer_decode(tok, ids[i - 1], ids[i], out + n, cap - n, &k));
        n += k;
    }
    out[n] = 0;
    ts_llm_tokenizer_free(tok);
}

static void dfx_start(dfx_t *f)
{
    dfx_dirs(f, "dec-certs");
    snprintf(f->model, sizeof f->model, "%s/tiny.bin", f->certs);
    snprintf(f->tok, sizeof f->tok, "%s/tiny_tok.bin", f->certs);
    ck_assert_int_eq(tiny_model_write(f->model), 0);
    ck_assert_int_eq(tiny_tokenizer_write(f->tok), 0);
    write_yaml(f->models, "tiny.yaml",
               "path: %s\nparams: test-llm-tiny\napprox: configs/approx/tiny-test.yaml\n"
               "max_context: 8\nmax_sessions: 2\nsanitize_lambda: 20\n",
               f->model);
    /* the same model with a session memory limit no session fits */
    write_yaml(f->models, "zsmall.yaml",
               "path: %s\nparams: test-llm-tiny\napprox: configs/approx/tiny-test.yaml\n"
               "session_memory_bytes: 1048576\nsanitize_lambda: 20\n",
               f->model);
    /* the same model with bootstrapping, serving all three policies */
    write_yaml(f->models, "tinyb.yaml",
               "path: %s\nparams: test-llm-tiny-boot\napprox: configs/approx/tiny-test.yaml\n"
               "bootstrap: true\npolicies: ckks, hybrid, tfhe\nmax_context: 4\nmax_sessions: 2\n"
               "sanitize_lambda: 20\n",
               f->model);
    /* the hybrid policy under a cost table that prices TFHE out: the cheapest
     * assignment is the ckks configuration (no conversion keys) */
    char costs[800];
    snprintf(costs, sizeof costs, "%s/dear-tfhe.yaml", f->certs);
    ts_sched_costs_t tab;
    ts_sched_costs_default(&tab);
    tab.roundtrip_ns = INT64_C(1) << 50;
    ck_assert_ts_ok(ts_sched_costs_save(&tab, costs));
    write_yaml(f->models, "tinyc.yaml",
               "path: %s\nparams: test-llm-tiny-boot\nbootstrap: true\npolicies: hybrid\n"
               "max_context: 4\nmax_sessions: 2\nsanitize_lambda: 20\ncosts: %s\n",
               f->model, costs);
    /* and with a dense secret: bootstrapping with sparse-secret encapsulation */
    write_yaml(f->models, "tinyd.yaml",
               "path: %s\nparams: test-llm-tiny-boot-dense\napprox: configs/approx/tiny-test.yaml\n"
               "bootstrap: true\npolicies: ckks, hybrid\nmax_context: 4\nmax_sessions: 2\n"
               "sanitize_lambda: 20\n",
               f->model);
    /* and with four lanes: prompts prefilled four positions per pass; its
     * logits sanitized in the Renyi mode (projected on their period, 32 x 4
     * slots, and flooded for 1 reply of noise up to 2^20 in l2: the
     * daemon then says when its replies pass the bound's count) */
    write_yaml(f->models, "tinyp.yaml",
               "path: %s\nparams: test-llm-tiny-boot\napprox: configs/approx/tiny-test.yaml\n"
               "bootstrap: true\nprefill_lanes: 4\nmax_context: 8\nmax_sessions: 2\n"
               "sanitize_noise_l2_log2: 20\nsanitize_queries_log2: 0\n",
               f->model);
    /* and without flooding (re-randomized logits only): the sampled ids of
     * --samples then sit far from the sampler's boundaries; it publishes a
     * draft text (draft_text): an unrelated line and the greedy text of
     * "ab" to 8 positions (test_generate_draft's --draft-published) */
    {
        int g[16];
        size_t gp = 0, gn = plain_sampled(f, "ab", 8, 0.0f, 5, g, &gp);
        char text[256];
        ids_text(f, g, gn, text, sizeof text);
        write_yaml(f->certs, "published.txt", "unrelated words\n%s\n", text);
    }
    write_yaml(f->models, "tinys.yaml",
               "path: %s\nparams: test-llm-tiny-boot\napprox: configs/approx/tiny-test.yaml\n"
               "bootstrap: true\nprefill_lanes: 4\nmax_context: 8\nmax_sessions: 1\n"
               "sanitize_lambda: 0\ndraft_text: %s/published.txt\n",
               f->model, f->certs);
    char sections[800];
    snprintf(sections, sizeof sections, "models_dir: %s\n", f->models);
    net_daemon_start(&f->d, f->certs, NULL, NULL, sections, true);
}

static void dfx_stop(dfx_t *f)
{
    ck_assert_int_eq(net_daemon_stop(&f->d), 0);
    net_daemon_cleanup(&f->d);
    net_rm_rf(f->certs);
}

/*
 * Every encrypted decode step in the daemon's log ran the bootstraps the
 * engine's plan of it from the session's state predicted (tesserad logs
 * both: event=decode_step ... bootstraps=B planned_bootstraps=P, P = -1
 * for a public position, and warns with event=decode_plan_differs where
 * they differ). *steps: the lines with a plan, *passes: those of several
 * positions.
 */
static void plans_match_log(const dfx_t *f, size_t *steps, size_t *passes)
{
    char path[700], line[1024];
    snprintf(path, sizeof path, "%s/tesserad.log", f->d.dir);
    FILE *lf = fopen(path, "r");
    ck_assert_ptr_nonnull(lf);
    *steps = *passes = 0;
    while (fgets(line, sizeof line, lf)) {
        ck_assert_msg(!strstr(line, "event=decode_plan_differs"), "%s", line);
        const char *ev = strstr(line, "event=decode_step ");
        if (!ev)
            continue;
        const char *b = strstr(ev, " bootstraps="), *pb = strstr(ev, " planned_bootstraps="),
                   *np = strstr(ev, " positions=");
        ck_assert_msg(b && pb && np, "%s", line);
        int planned = atoi(pb + 20);
        if (planned < 0)
            continue;
        ck_assert_msg(atoi(b + 12) == planned, "plan and run differ: %s", line);
        (*steps)++;
        *passes += atoi(np + 11) > 1;
    }
    fclose(lf);
}

/* Greedy ids of the plaintext model for the ids of BOS, `system` (may be
 * NULL) and the prompt, as tessera generate --system tokenizes them;
 * *n_sys: BOS and the system text's tokens. */
/* Run cmd; when it fails, show its stderr (err_path) and fail the test. */
static void run_shown(const char *cmd, const char *err_path, const char *what)
{
    int rc = system(cmd);
    if (rc != 0) {
        FILE *e = fopen(err_path, "r");
        char buf[1024];
        size_t n;
        while (e && (n = fread(buf, 1, sizeof buf, e)) > 0)
            fwrite(buf, 1, n, stdout);
        if (e)
            fclose(e);
    }
    ck_assert_msg(rc == 0, "%s failed with %d", what, rc);
}

static size_t plain_greedy_sys(const dfx_t *f, const char *system, const char *prompt,
                               size_t n_total, int *out, size_t *n_prompt, size_t *n_sys_out)
{
    ts_llm_model_t *m = NULL;
    ts_llm_tokenizer_t *tok = NULL;
    ck_assert_ts_ok(ts_llm_model_load(f->model, &m, NULL, 0));
    ck_assert_ts_ok(ts_llm_tokenizer_load(f->tok, TINY_VOCAB, &tok, NULL, 0));
    int ids[64];
    size_t n_sys = 0, n_user = 0;
    const char *first = system ? system : prompt;
    ck_assert_ts_ok(
        ts_llm_tokenizer_encode(tok, first, strlen(first), true, false, ids, 64, &n_sys));
    if (system)
        ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, prompt, strlen(prompt), false, false,
                                                ids + n_sys, 64 - n_sys, &n_user));
    *n_prompt = n_sys + n_user;
    *n_sys_out = system ? n_sys : 1;
    size_t n = 0;
    ck_assert_ts_ok(
        ts_llm_generate(m, NULL, ids, *n_prompt, n_total, false, -1, NULL, NULL, out, &n));
    ts_llm_tokenizer_free(tok);
    ts_llm_model_free(m);
    return n;
}

static size_t plain_greedy(const dfx_t *f, const char *prompt, size_t n_total, int *out,
                           size_t *n_prompt)
{
    size_t n_sys;
    return plain_greedy_sys(f, NULL, prompt, n_total, out, n_prompt, &n_sys);
}

/* Bytes of the *.key files of the key store's namespace "public" (a client without a certificate).
 */
static long long key_bytes(const char *dir)
{
    char path[900];
    snprintf(path, sizeof path, "%s/keys/public", dir);
    DIR *d = opendir(path);
    long long total = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".key") != 0)
            continue;
        char f[1200];
        struct stat sb;
        snprintf(f, sizeof f, "%s/%s", path, e->d_name);
        if (stat(f, &sb) == 0)
            total += (long long)sb.st_size;
    }
    if (d)
        closedir(d);
    return total;
}

/*
 * The Galois keys are made on a second thread while the batch before
 * uploads: a refused upload in the middle (the key store's quota, set to
 * half of what a session's keys take: the public and relinearization keys
 * and some Galois batches fit) stops the maker and `tessera generate` exits
 * with the daemon's reason, batches made and waiting freed (no hang, no
 * leak under ASan).
 */
START_TEST(test_generate_key_quota)
{
    dfx_t f;
    dfx_start(&f);
    char cmd[3000], errp[800];
    snprintf(errp, sizeof errp, "%s/quota-ok.err", f.d.dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tinyb "
             "--prompt a --max-tokens 1 --temperature 0 --policy ckks --tokenizer %s "
             "--insecure-params --json > /dev/null 2>%s",
             ts_test_build_dir(), f.d.port, f.certs, f.tok, errp);
    run_shown(cmd, errp, "tessera generate (all keys)");
    long long all = key_bytes(f.d.dir);
    ck_assert_int_gt(all, 0);
    net_daemon_t d2;
    char ks[100], sections[800];
    snprintf(ks, sizeof ks, "  quota_bytes: %lld\n", all / 2);
    snprintf(sections, sizeof sections, "models_dir: %s\n", f.models);
    net_daemon_start(&d2, f.certs, NULL, ks, sections, true);
    snprintf(errp, sizeof errp, "%s/quota.err", d2.dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tinyb "
             "--prompt a --max-tokens 1 --temperature 0 --policy ckks --tokenizer %s "
             "--insecure-params --json > /dev/null 2>%s",
             ts_test_build_dir(), d2.port, f.certs, f.tok, errp);
    int rc = system(cmd);
    static char err[1 << 14];
    ts_test_read_file(errp, err, sizeof err);
    ck_assert_msg(rc != 0, "generate succeeded over the quota:\n%s", err);
    ck_assert_msg(strstr(err, "quota") != NULL, "no quota reason:\n%s", err);
    ck_assert_msg(strstr(err, "Sanitizer") == NULL, "%s", err); /* under ASan: no leak, no error */
    /* a part went in before the refusal, within the quota */
    long long held = key_bytes(d2.dir);
    ck_assert_msg(held > all / 10 && held <= all / 2, "held %lld of %lld bytes", held, all);
    ck_assert_int_eq(net_daemon_stop(&d2), 0);
    net_daemon_cleanup(&d2);
    dfx_stop(&f);
}
END_TEST

START_TEST(test_generate_greedy)
{
    dfx_t f;
    dfx_start(&f);
    char cmd[3000], out[700];
    /* by default the prompt's positions before its last are cache-only steps
     * (no logits) and BOS goes in the clear (a public position: the plaintext
     * model, its K/V encrypted under the client's key); --full-steps: logits
     * at every position; --encrypt-bos: BOS encrypted too; prompt "" (BOS
     * alone): the first generated id comes from the public BOS position's
     * logits. Each must give the plaintext greedy ids. */
    static const struct {
        const char *prompt, *args, *system;
        bool full, public_bos;
    } var[5] = {{"ab", "", NULL, false, true},
                {"ab", " --full-steps", NULL, true, true},
                {"ab", " --encrypt-bos", NULL, false, false},
                {"", "", NULL, false, true},
                {"b", " --system 'a'", "a", false, true}};
    for (int vi = 0; vi < 5; vi++) {
        const char *prompt = var[vi].prompt;
        bool full = var[vi].full;
        int want[16];
        size_t n_prompt = 0, n_sys = 0,
               n = plain_greedy_sys(&f, var[vi].system, prompt, 7, want, &n_prompt, &n_sys);
        ck_assert_uint_eq(n, 7);
        ck_assert_uint_ge(n_prompt, prompt[0] ? 2 : 1);
        snprintf(out, sizeof out, "%s/gen%d.json", f.d.dir, vi);
        snprintf(cmd, sizeof cmd,
                 "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tiny "
                 "--prompt '%s' --max-tokens %zu --temperature 0 --tokenizer %s "
                 "--insecure-params --json%s > %s 2>%s/gen.err",
                 ts_test_build_dir(), f.d.port, f.certs, prompt, 7 - n_prompt, f.tok, var[vi].args,
                 out, f.d.dir);
        int rc = system(cmd);
        ck_assert_msg(rc == 0, "%s failed with %d", cmd, rc);
        FILE *j = fopen(out, "r");
        ck_assert_ptr_nonnull(j);
        char line[4096];
        size_t got = 0, positions = 0, cached = 0, public_n = 0;
        int ids[16];
        double margin_min = 1e9;
        while (fgets(line, sizeof line, j)) {
            positions++;
            const char *pp = strstr(line, "\"prompt\":false");
            const char *ip = strstr(line, "\"id\":");
            const char *mp = strstr(line, "\"logit_margin\":");
            bool co = strstr(line, "\"cache_only\":true") != NULL;
            if (strstr(line, "\"public\":true")) {
                ck_assert_uint_eq(strtoul(strstr(line, "{\"pos\":") + 7, NULL, 10), public_n);
                public_n++;
            } else {
                ck_assert_ptr_nonnull(strstr(line, "\"public\":false"));
            }
            ck_assert_ptr_nonnull(ip);
            ck_assert_ptr_nonnull(strstr(line, "\"stages\":{\"embed\":"));
            /* a cache-only position: no logits, so no precision or margin */
            if (co) {
                cached++;
                ck_assert_ptr_null(pp);
                ck_assert_ptr_null(strstr(line, "\"precision_bits\":"));
            } else {
                ck_assert_ptr_nonnull(strstr(line, "\"cache_only\":false"));
                ck_assert_ptr_nonnull(strstr(line, "\"precision_bits\":"));
            }
            /* the default policy, ckks: nothing in TFHE */
            ck_assert_ptr_nonnull(strstr(line, "\"policy\":\"ckks\",\"tfhe_kinds\":\"none\""));
            if (pp && got < 16) {
                ids[got++] = atoi(ip + 5);
                if (mp)
                    margin_min = fmin(margin_min, atof(mp + 15));
            }
        }
        fclose(j);
        printf("tessera generate over TLS, prompt '%s'%s: %zu positions (%zu cache-only, %zu "
               "public), generated",
               prompt, var[vi].args, positions, cached, public_n);
        for (size_t i = 0; i < got; i++)
            printf(" %d", ids[i]);
        printf(" (plaintext greedy");
        for (size_t i = n_prompt; i < n; i++)
            printf(" %d", want[i]);
        printf("), smallest top-2 logit margin %.3f\n", margin_min);
        ck_assert_uint_eq(positions, 6);
        ck_assert_uint_eq(cached, full ? 0 : n_prompt - 1);
        /* BOS, and with --system its tokens too, in the clear */
        ck_assert_uint_eq(public_n, var[vi].public_bos ? n_sys : 0);
        if (var[vi].system)
            ck_assert_uint_gt(n_sys, 1);
        ck_assert_uint_eq(got, n - n_prompt);
        for (size_t i = 0; i < got; i++)
            ck_assert_int_eq(ids[i], want[n_prompt + i]);
    }
    int rc;
    /* a policy the model does not serve is refused by the server with a clear sentence */
    snprintf(
        cmd, sizeof cmd,
        "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tiny "
        "--prompt ab --policy hybrid --tokenizer %s --insecure-params > /dev/null 2>%s/pol.err",
        ts_test_build_dir(), f.d.port, f.certs, f.tok, f.d.dir);
    rc = system(cmd);
    ck_assert_int_eq(WEXITSTATUS(rc), TS_EXIT_FAIL);
    snprintf(cmd, sizeof cmd, "grep -q 'does not serve policy hybrid' %s/pol.err", f.d.dir);
    ck_assert_int_eq(system(cmd), 0);
    dfx_stop(&f);
}
END_TEST

/* ------------------------------------------------------------ hostile peers */

static ts_client_t *connect_lib(const dfx_t *f)
{
    char ca[600];
    snprintf(ca, sizeof ca, "%s/ca.crt", f->certs);
    ts_client_opts_t o = {.host = "127.0.0.1",
                          .port = f->d.port,
                          .ca_file = ca,
                          .servername = "localhost",
                          .timeout_ms = 60000};
    ts_client_t *c = NULL;
    char err[600];
    ck_assert_msg(ts_client_connect(&o, &c, err, sizeof err) == TS_OK, "connect: %s", err);
    return c;
}

/* ModelInfo of model (NULL: the first); the reply envelope (free it). */
static Tessera__Envelope *model_info_call(ts_client_t *c, const char *model)
{
    Tessera__ModelInfoRequest mq = TESSERA__MODEL_INFO_REQUEST__INIT;
    mq.model = (char *)model;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT, *info = NULL;
    req.body_case = TESSERA__ENVELOPE__BODY_MODEL_INFO_REQUEST;
    req.model_info_request = &mq;
    ck_assert_ts_ok(ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_MODEL_INFO, &info));
    return info;
}

/* Send req; expect an Error reply with `code` and a message containing `text` (may be NULL). */
static void expect_err(ts_client_t *c, Tessera__Envelope *req, Tessera__ErrorCode code,
                       const char *text)
{
    Tessera__Envelope *rep = NULL;
    ts_status_t st = ts_client_call(c, req, TESSERA__ENVELOPE__BODY_SESSION_OPENED, &rep);
    ck_assert_int_ne(st, TS_OK);
    ck_assert_ptr_nonnull(rep);
    ck_assert_int_eq(rep->body_case, TESSERA__ENVELOPE__BODY_ERROR);
    printf("  refused (%d): %s\n", rep->error->code, rep->error->message);
    ck_assert_int_eq(rep->error->code, code);
    ck_assert(!rep->error->fatal);
    if (text)
        ck_assert_msg(strstr(rep->error->message, text), "message \"%s\" lacks \"%s\"",
                      rep->error->message, text);
    ts_net_envelope_free(rep);
}

static uint64_t open_session(ts_client_t *c, ProtobufCBinaryData *kb, size_t n, const char *model,
                             const char *policy, Tessera__ErrorCode want, const char *text)
{
    Tessera__SessionOpen so = TESSERA__SESSION_OPEN__INIT;
    so.service = (char *)"decode";
    so.model = (char *)model;
    so.policy = (char *)policy;
    so.n_key_sha256 = n;
    so.key_sha256 = kb;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_SESSION_OPEN;
    req.session_open = &so;
    if (want != TESSERA__ERROR_CODE__ERROR_UNSPECIFIED) {
        expect_err(c, &req, want, text);
        return 0;
    }
    Tessera__Envelope *rep = NULL;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_SESSION_OPENED, &rep);
    ck_assert_msg(st == TS_OK, "open: %s", c->err);
    uint64_t id = rep->session_opened->session_id;
    ts_net_envelope_free(rep);
    return id;
}

static void step_req(Tessera__Envelope *req, Tessera__DecodeStep *ds, uint64_t sid, uint32_t pos,
                     const uint8_t *data, size_t n)
{
    tessera__decode_step__init(ds);
    ds->session_id = sid;
    ds->position = pos;
    ds->token.data = (uint8_t *)data;
    ds->token.len = n;
    tessera__envelope__init(req);
    req->body_case = TESSERA__ENVELOPE__BODY_DECODE_STEP;
    req->decode_step = ds;
}

/* A client's keys for preset param_id: params (and their id), CSPRNG, secret,
 * public and evaluation keys with the relinearization key. */
static void client_keys(const char *param_id, ts_ckks_params_t **p, uint8_t pid[32],
                        ts_prng_t **prng, ts_ckks_secret_key_t **sk, ts_ckks_public_key_t **pk,
                        ts_ckks_evalkeys_t **ek)
{
    char why[256];
    ck_assert_ts_ok(ts_wire_params_get("configs/params", param_id, true, p, pid, why, sizeof why));
    ck_assert_ts_ok(ts_prng_new_os(prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(*p, *prng, sk));
    ck_assert_ts_ok(ts_ckks_keygen_public(*sk, *prng, pk));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(*p, ek));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_relin(*ek, *sk, *prng));
}

static void client_keys_free(ts_ckks_params_t *p, ts_prng_t *prng, ts_ckks_secret_key_t *sk,
                             ts_ckks_public_key_t *pk, ts_ckks_evalkeys_t *ek)
{
    ts_ckks_evalkeys_free(ek);
    ts_ckks_public_key_free(pk);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
}

/* " a b c (label x y z)\n": generated ids and the reference's. */
static void show_ids(const int *got, size_t n_got, const char *label, const int *want,
                     size_t n_want)
{
    for (size_t i = 0; i < n_got; i++)
        printf(" %d", got[i]);
    printf(" (%s", label);
    for (size_t i = 0; i < n_want; i++)
        printf(" %d", want[i]);
    printf(")\n");
}

/*
 * A model of prefill_lanes 4 (tinyp: bootstrapping at 4 x the working slots):
 * tessera generate sends BOS public, then the prompt's encrypted positions in
 * prefills of up to four (DecodeStep.positions; the one holding the prompt's
 * last position returns its logits from its last lane), then one step per
 * token with the token in every lane. The ids must be the plaintext greedy
 * ones; the JSON lines count the positions each step ran. A prefill on a
 * model without lanes, and one longer than the lanes, are refused.
 */
START_TEST(test_generate_prefill)
{
    dfx_t f;
    dfx_start(&f);
    char cmd[3000], out[700], errp[800];
    const char *prompt = "ababa";
    int want[16];
    size_t n_prompt = 0, n_sys = 0,
           n = plain_greedy_sys(&f, NULL, prompt, 8, want, &n_prompt, &n_sys);
    ck_assert_uint_eq(n, 8);
    ck_assert_uint_ge(n_prompt, 4);
    snprintf(out, sizeof out, "%s/genp.json", f.d.dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tinyp "
             "--prompt '%s' --max-tokens %zu --temperature 0 --tokenizer %s "
             "--insecure-params --json > %s 2>%s/genp.err",
             ts_test_build_dir(), f.d.port, f.certs, prompt, 8 - n_prompt, f.tok, out, f.d.dir);
    snprintf(errp, sizeof errp, "%s/genp.err", f.d.dir);
    run_shown(cmd, errp, "tessera generate (prefill)");
    FILE *j = fopen(out, "r");
    ck_assert_ptr_nonnull(j);
    char line[4096];
    size_t got = 0, lines = 0, covered = 0, widest = 0;
    int ids[16];
    while (fgets(line, sizeof line, j)) {
        lines++;
        const char *np = strstr(line, "\"positions\":");
        ck_assert_ptr_nonnull(np);
        size_t k = strtoul(np + 12, NULL, 10);
        ck_assert_uint_ge(k, 1);
        ck_assert_uint_le(k, 4);
        covered += k;
        widest = k > widest ? k : widest;
        const char *pp = strstr(line, "\"prompt\":false");
        const char *ip = strstr(line, "\"id\":");
        ck_assert_ptr_nonnull(ip);
        if (pp && got < 16)
            ids[got++] = atoi(ip + 5);
    }
    fclose(j);
    printf("tessera generate over TLS with prefill_lanes 4, prompt '%s' (%zu positions): %zu "
           "steps for %zu positions (widest %zu), generated",
           prompt, n_prompt, lines, covered, widest);
    show_ids(ids, got, "plaintext greedy", want + n_prompt, n - n_prompt);
    ck_assert_uint_eq(covered, 7); /* positions 0..6 (position 7's token is the last generated) */
    ck_assert_uint_gt(widest, 1);  /* the prompt went in prefills */
    ck_assert_uint_lt(lines, covered);
    ck_assert_uint_eq(got, n - n_prompt);
    for (size_t i = 0; i < got; i++)
        ck_assert_int_eq(ids[i], want[n_prompt + i]);
    /* the Renyi bound covers 1 reply: the daemon said when the model passed it */
    char logp[800];
    snprintf(logp, sizeof logp, "%s/tesserad.log", f.d.dir);
    FILE *lf = fopen(logp, "r");
    ck_assert_ptr_nonnull(lf);
    bool said_mode = false, said_budget = false;
    char *ll = NULL;
    size_t lcap = 0;
    while (getline(&ll, &lcap, lf) > 0) {
        said_mode |= strstr(ll, "event=sanitize model=tinyp mode=renyi period=128") != NULL;
        said_budget |= strstr(ll, "event=sanitize_budget model=tinyp replies=1 ") != NULL;
    }
    free(ll);
    ll = NULL;
    lcap = 0;
    fclose(lf);
    ck_assert(said_mode);
    ck_assert(said_budget);
    /* and tessera generate said what the server announced */
    FILE *ge = fopen(errp, "r");
    ck_assert_ptr_nonnull(ge);
    bool told = false;
    while (getline(&ll, &lcap, ge) > 0)
        told |= strstr(ll, "logits sanitized in the Renyi mode: projected on their 128-slot "
                           "period") != NULL;
    free(ll);
    fclose(ge);
    ck_assert(told);
    dfx_stop(&f);
}
END_TEST

/* The plaintext model's ids for BOS and the prompt, sampled with
 * temperature t and seed (ts_llm_generate, up to EOS): what tessera generate
 * --samples must give for its sample k with --seed seed - k. */
/* tessera generate on `model` with `flags` must exit 2 with `want` in its
 * error output (a refusal with a sentence) */
static void generate_refused(const dfx_t *f, const char *model, const char *flags, const char *want)
{
    char cmd[3000], errp[800], msg[600] = "";
    snprintf(errp, sizeof errp, "%s/refused.err", f->d.dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model %s "
             "--prompt ab --max-tokens 2 %s --tokenizer %s --insecure-params >/dev/null 2>%s",
             ts_test_build_dir(), f->d.port, f->certs, model, flags, f->tok, errp);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
    FILE *e = fopen(errp, "r");
    ck_assert_ptr_nonnull(e);
    size_t mn = fread(msg, 1, sizeof msg - 1, e);
    msg[mn] = 0;
    fclose(e);
    printf("  refused (%s): %s", flags, msg);
    ck_assert_ptr_nonnull(strstr(msg, want));
}

/*
 * tessera generate --draft on the four-lane model (speculative decoding):
 * each step runs the next token and a public draft's guesses for the ones
 * after it; the client keeps the tokens up to the first guess its sampler
 * does not draw, and the next step's position tells the server how many
 * (DecodeStep.speculative; the rejected positions' keys and values leave the
 * cache). Drafts: the served model itself (greedy: every guess right) and
 * the tiny GPT-2 of the same vocabulary (mostly wrong); and the n-gram draft
 * (--draft-lookup) alone, counting a text of the greedy continuation
 * (--draft-text: its guesses right where the text's contexts are), and with
 * the GPT-2 guessing where it has none. Each run's ids must be the plaintext
 * model's with the same seed, as without a draft; the JSON lines' lanes count
 * the guesses kept, their guesses how many each pass ran. A model of one
 * lane refuses --draft and --draft-lookup.
 */
START_TEST(test_generate_draft)
{
    dfx_t f;
    dfx_start(&f);
    char gpt2[700], cmd[6000], out[700], errp[800];
    snprintf(gpt2, sizeof gpt2, "%s/draft-gpt2.gguf", f.certs);
    ck_assert_int_eq(tiny_gpt2_write(gpt2), 0);
    const char *prompt = "ab";
    /* the n-gram draft's texts: the greedy continuation's, and the prompt's
     * with only the first token after it (re-encoding each must give its ids
     * back, or the test would not test the guesses) */
    char text_path[3][700];
    {
        int g[16], back[64];
        size_t gp = 0, gn = plain_sampled(&f, prompt, 8, 0.0f, 5, g, &gp);
        ts_llm_tokenizer_t *tok = NULL;
        ck_assert_ts_ok(ts_llm_tokenizer_load(f.tok, TINY_VOCAB, &tok, NULL, 0));
        for (int w = 0; w < 3; w++) {
            char dtext[256];
            size_t upto = w ? gp + (size_t)w : gn, bn = 0;
            ids_text(&f, g, upto, dtext, sizeof dtext);
            size_t dn = strlen(dtext);
            ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, dtext, dn, true, false, back, 64, &bn));
            ck_assert_msg(bn == upto && memcmp(back, g, upto * sizeof *g) == 0,
                          "the greedy text '%s' does not encode to its ids", dtext);
            snprintf(text_path[w], sizeof text_path[w], "%s/draft%d.txt", f.certs, w);
            FILE *t = fopen(text_path[w], "w");
            ck_assert_ptr_nonnull(t);
            fprintf(t, "unrelated words\n%s\n", dtext);
            fclose(t);
        }
        ts_llm_tokenizer_free(tok);
    }
    static const struct {
        float t;
        int draft; /* 0: the model itself, 1: the GPT-2, 2: n-gram + text, 3: n-gram,
                      4: n-gram + the text to the first token, the GPT-2 where it has none,
                      5: n-gram + the text to the second token: a pass, then steps,
                      6: n-gram + the model's published draft text (--draft-published) */
    } var[8] = {{0.0f, 0}, {0.8f, 0}, {0.8f, 1}, {0.0f, 2},
                {0.8f, 3}, {0.8f, 4}, {0.0f, 5}, {0.0f, 6}};
    for (int vi = 0; vi < 8; vi++) {
        int want[16];
        size_t n_prompt = 0, want_n = plain_sampled(&f, prompt, 8, var[vi].t, 5, want, &n_prompt);
        snprintf(out, sizeof out, "%s/gend%d.json", f.d.dir, vi);
        snprintf(errp, sizeof errp, "%s/gend.err", f.d.dir);
        int dk = var[vi].draft;
        char dflags[2200] = "";
        if (dk < 2 || dk == 4)
            snprintf(dflags, sizeof dflags, "--draft %s ", dk == 0 ? f.model : gpt2);
        if (dk == 6)
            snprintf(dflags, sizeof dflags, "--draft-published ");
        else if (dk >= 2)
            snprintf(dflags + strlen(dflags), sizeof dflags - strlen(dflags), "%s%s ",
                     dk == 3 ? "--draft-lookup" : "--draft-text ",
                     dk == 3 ? "" : text_path[dk == 2 ? 0 : dk - 3]);
        snprintf(cmd, sizeof cmd,
                 "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tinys "
                 "--prompt '%s' --max-tokens %zu --temperature %.1f --seed 5 %s"
                 "--tokenizer %s --insecure-params --json > %s 2>%s",
                 ts_test_build_dir(), f.d.port, f.certs, prompt, 8 - n_prompt, (double)var[vi].t,
                 dflags, f.tok, out, errp);
        run_shown(cmd, errp, "tessera generate --draft");
        FILE *j = fopen(out, "r");
        ck_assert_ptr_nonnull(j);
        char line[8192];
        int got[16];
        size_t got_n = 0, passes = 0, kept = 0, spec = 0, guesses = 0, by[2] = {0, 0};
        size_t after = 0; /* ordinary steps after a pass (the server keeps its prefix) */
        while (fgets(line, sizeof line, j)) {
            if (!strstr(line, "\"prompt\":false"))
                continue;
            const char *ip = strstr(line, "\"id\":"), *lp = strstr(line, "\"lane\":"),
                       *gp = strstr(line, "\"guesses\":");
            ck_assert_ptr_nonnull(ip);
            /* no lane: the prompt's last prefill, or a step without guesses */
            int lane = lp ? atoi(lp + 7) : 0;
            passes += lane == 0;
            kept += lane > 0;
            if (gp) {
                ck_assert_int_eq(lane, 0);
                spec++;
                /* every lane of a pass filled, at least one by the draft */
                const char *pp = strstr(line, "\"positions\":"), *dp = strstr(line, "\"drafted\":");
                ck_assert(pp && dp);
                int ng = atoi(gp + 10), nd = atoi(dp + 10);
                ck_assert_int_eq(atoi(pp + 12), ng + 1);
                ck_assert(nd >= 1 && nd <= ng);
                guesses += (size_t)ng;
                bool by_ngram = strstr(line, "\"draft\":\"ngram") != NULL,
                     by_model = strstr(line, "model\"") != NULL;
                ck_assert(by_ngram || by_model);
                by[0] += by_ngram;
                by[1] += by_model;
            } else if (!lp && spec) {
                after++;
            }
            if (got_n < 16)
                got[got_n++] = atoi(ip + 5);
        }
        fclose(j);
        static const char *dname[7] = {"self",
                                       "gpt2",
                                       "n-gram + text",
                                       "n-gram",
                                       "n-gram + text to token 1, gpt2",
                                       "n-gram + text to token 2",
                                       "n-gram + published text"};
        printf("tessera generate --draft %s --temperature %.1f on 4 lanes: %zu tokens in %zu "
               "steps (%zu from kept guesses of %zu in %zu passes, %zu with the n-gram's, %zu the "
               "model's; %zu ordinary steps after a pass):",
               dname[dk], (double)var[vi].t, got_n, passes, kept, guesses, spec, by[0], by[1],
               after);
        show_ids(got, got_n, "plaintext, seed 5:", want + n_prompt, want_n - n_prompt);
        ck_assert_uint_eq(got_n, want_n - n_prompt);
        for (size_t i = 0; i < got_n; i++)
            ck_assert_int_eq(got[i], want[n_prompt + i]);
        if (vi == 0) /* greedy with the model as its own draft: every guess kept */
            ck_assert_uint_eq(passes, (got_n + 2) / 4 + 1);
        if (vi < 2 || dk == 2 || dk == 6)
            ck_assert_uint_gt(kept, 0);
        ck_assert_uint_eq(passes + kept, got_n);
        ck_assert_uint_le(kept, guesses);
        /* the model's guesses only with --draft (4: the text runs out after
         * the first token, the GPT-2 guesses after it); the n-gram's only
         * with it (2: its text holds the whole continuation) */
        ck_assert(dk < 2 || dk == 4 ? by[1] > 0 : by[1] == 0);
        ck_assert(dk < 2 ? by[0] == 0 : dk == 2 || dk == 5 || dk == 6 ? by[0] > 0 : true);
        if (dk == 5) /* the text runs out: ordinary steps follow the pass */
            ck_assert_uint_gt(after, 0);
    }
    /* every step and pass of these generations (passes after passes and
     * after ordinary steps, speculative ones, partly kept) ran the
     * bootstraps its session's plan predicted */
    size_t n_steps, n_passes;
    plans_match_log(&f, &n_steps, &n_passes);
    printf("tessera generate --draft: %zu encrypted steps (%zu passes), each with the bootstraps "
           "its plan predicted\n",
           n_steps, n_passes);
    ck_assert_uint_gt(n_passes, 0);
    ck_assert_uint_gt(n_steps, n_passes);
    /* one lane: refused with a sentence; a --draft-text that cannot be read too */
    char flags[1500];
    snprintf(flags, sizeof flags, "--draft %s", f.model);
    generate_refused(&f, "tiny", flags, "--draft needs a model with lanes");
    generate_refused(&f, "tiny", "--draft-lookup", "--draft-lookup needs a model with lanes");
    snprintf(flags, sizeof flags, "--draft-text %s/none.txt", f.certs);
    generate_refused(&f, "tinys", flags, "none.txt: cannot open");
    /* a model of lanes that publishes no draft text refuses --draft-published */
    generate_refused(&f, "tinyp", "--draft-published", "model tinyp publishes no draft text");
    dfx_stop(&f);
}
END_TEST

/*
 * tessera generate --samples 3 on the four-lane model: after the prompt's
 * prefill every lane holds the prompt's cache, and sample k continues in lane
 * k with its own sampler (seed + k); lane 3 runs sample 0's tokens unread.
 * Each sample's ids must be the plaintext model's sampled with the same seed
 * (temperature 0.8: the samples differ, so a lane reading another's tokens or
 * logits fails), greedy samples the greedy ids; a model of one lane refuses
 * --samples 2.
 */
START_TEST(test_generate_samples)
{
    dfx_t f;
    dfx_start(&f);
    char cmd[3000], out[700];
    const char *prompt = "ab";
    static const struct {
        float t;
        int n;
    } var[2] = {{0.8f, 3}, {0.0f, 2}};
    for (int vi = 0; vi < 2; vi++) {
        int want[3][16];
        size_t want_n[3], n_prompt = 0;
        for (int k = 0; k < var[vi].n; k++)
            want_n[k] =
                plain_sampled(&f, prompt, 8, var[vi].t, 5 + (uint64_t)k, want[k], &n_prompt);
        snprintf(out, sizeof out, "%s/gens%d.json", f.d.dir, vi);
        snprintf(cmd, sizeof cmd,
                 "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tinys "
                 "--prompt '%s' --max-tokens %zu --temperature %.1f --seed 5 --samples %d "
                 "--tokenizer %s --insecure-params --json > %s 2>%s/gens.err",
                 ts_test_build_dir(), f.d.port, f.certs, prompt, 8 - n_prompt, (double)var[vi].t,
                 var[vi].n, f.tok, out, f.d.dir);
        char errp[800];
        snprintf(errp, sizeof errp, "%s/gens.err", f.d.dir);
        run_shown(cmd, errp, "tessera generate --samples");
        FILE *j = fopen(out, "r");
        ck_assert_ptr_nonnull(j);
        char line[8192];
        int got[3][16];
        size_t got_n[3] = {0, 0, 0}, steps = 0;
        double prec = 1e9;
        while (fgets(line, sizeof line, j)) {
            if (!strstr(line, "\"prompt\":false"))
                continue;
            steps++;
            const char *pb = strstr(line, "\"precision_bits\":");
            ck_assert_ptr_nonnull(pb);
            prec = fmin(prec, atof(pb + 17));
            const char *sp = strstr(line, "\"samples\":[");
            ck_assert_ptr_nonnull(sp);
            for (int k = 0; k < var[vi].n; k++) {
                sp = strstr(sp, "{\"id\":");
                ck_assert_ptr_nonnull(sp);
                int id = atoi(sp + 6);
                sp += 6;
                if (id >= 0 && got_n[k] < 16)
                    got[k][got_n[k]++] = id;
            }
            /* sample 0's fields are the line's */
            ck_assert_ptr_nonnull(strstr(line, "\"id\":"));
        }
        fclose(j);
        printf("tessera generate --samples %d --temperature %.1f on 4 lanes: %zu steps, precision "
               ">= %.1f bits\n",
               var[vi].n, (double)var[vi].t, steps, prec);
        bool differ = false;
        for (int k = 0; k < var[vi].n; k++) {
            printf("  sample %d:", k);
            for (size_t i = 0; i < got_n[k]; i++)
                printf(" %d", got[k][i]);
            printf(" (plaintext, seed %d:", 5 + k);
            for (size_t i = n_prompt; i < want_n[k]; i++)
                printf(" %d", want[k][i]);
            printf(")\n");
            ck_assert_uint_eq(got_n[k], want_n[k] - n_prompt);
            for (size_t i = 0; i < got_n[k]; i++) {
                ck_assert_int_eq(got[k][i], want[k][n_prompt + i]);
                differ = differ || (k > 0 && (i >= got_n[0] || got[k][i] != got[0][i]));
            }
        }
        /* sampled continuations differ (the oracle then tells the lanes apart) */
        ck_assert(differ == (var[vi].t > 0));
    }
    /* a model of one lane: one sequence per step */
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tiny "
             "--prompt ab --samples 2 --tokenizer %s --insecure-params > /dev/null 2>%s/gens1.err",
             ts_test_build_dir(), f.d.port, f.certs, f.tok, f.d.dir);
    int rc = system(cmd);
    ck_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == TS_EXIT_USAGE);
    snprintf(cmd, sizeof cmd, "grep -q 'decodes 1 sequence per step' %s/gens1.err", f.d.dir);
    ck_assert_int_eq(system(cmd), 0);
    dfx_stop(&f);
}
END_TEST

START_TEST(test_decode_hostile)
{
    dfx_t f;
    dfx_start(&f);
    ts_client_t *c = connect_lib(&f);
    /* model info */
    Tessera__Envelope *info = model_info_call(c, "tiny");
    const Tessera__ModelInfo *mi = info->model_info;
    ck_assert_str_eq(mi->param_id, "test-llm-tiny");
    ck_assert_uint_eq(mi->vocab, TINY_VOCAB);
    ck_assert_uint_eq(mi->max_context, 8);
    ck_assert_uint_eq(mi->logits_level, 0);
    ck_assert_str_eq(mi->token_input, "onehot");
    Tessera__ModelInfoRequest mq = TESSERA__MODEL_INFO_REQUEST__INIT;
    mq.model = (char *)"nope";
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_MODEL_INFO_REQUEST;
    req.model_info_request = &mq;
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_NOT_FOUND, "no model");
    /* the published draft text: ModelInfo states its size and SHA-256 (tinys),
     * DraftTextRequest returns it whole; a model without one (tiny) says so */
    ck_assert_uint_eq(mi->draft_text_bytes, 0);
    ck_assert_uint_eq(mi->draft_text_sha256.len, 0);
    {
        char dpath[800];
        snprintf(dpath, sizeof dpath, "%s/published.txt", f.certs);
        uint8_t want[512], sha[TS_SHA256_BYTES];
        FILE *d = fopen(dpath, "rb");
        ck_assert_ptr_nonnull(d);
        size_t wn = fread(want, 1, sizeof want, d);
        fclose(d);
        ck_assert_uint_gt(wn, 0);
        ck_assert_ts_ok(ts_sha256(want, wn, sha));
        Tessera__Envelope *si = model_info_call(c, "tinys");
        ck_assert_uint_eq(si->model_info->draft_text_bytes, wn);
        ck_assert_uint_eq(si->model_info->draft_text_sha256.len, TS_SHA256_BYTES);
        ck_assert_mem_eq(si->model_info->draft_text_sha256.data, sha, TS_SHA256_BYTES);
        ts_net_envelope_free(si);
        Tessera__DraftTextRequest dq = TESSERA__DRAFT_TEXT_REQUEST__INIT;
        dq.model = (char *)"tinys";
        Tessera__Envelope dreq = TESSERA__ENVELOPE__INIT, *drep = NULL;
        dreq.body_case = TESSERA__ENVELOPE__BODY_DRAFT_TEXT_REQUEST;
        dreq.draft_text_request = &dq;
        ck_assert_ts_ok(ts_client_call(c, &dreq, TESSERA__ENVELOPE__BODY_DRAFT_TEXT, &drep));
        ck_assert_str_eq(drep->draft_text->model, "tinys");
        ck_assert_uint_eq(drep->draft_text->text.len, wn);
        ck_assert_mem_eq(drep->draft_text->text.data, want, wn);
        ts_net_envelope_free(drep);
        dq.model = (char *)"tiny";
        expect_err(c, &dreq, TESSERA__ERROR_CODE__ERROR_NOT_FOUND,
                   "model tiny publishes no draft text");
        dq.model = (char *)"nope";
        expect_err(c, &dreq, TESSERA__ERROR_CODE__ERROR_NOT_FOUND, "no model named");
    }
    /* keys */
    ts_ckks_params_t *p = NULL;
    uint8_t pid[32];
    ts_prng_t *prng = NULL;
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_public_key_t *pk = NULL;
    ts_ckks_evalkeys_t *ek = NULL;
    client_keys("test-llm-tiny", &p, pid, &prng, &sk, &pk, &ek);
    char why[256];
    /* all rotation keys but the last step's */
    ck_assert_uint_gt(mi->n_rotation_steps, 1);
    ck_assert_ts_ok(
        ts_ckks_evalkeys_gen_rotations(ek, sk, mi->rotation_steps, mi->n_rotation_steps - 1, prng));
    uint8_t *blob[4];
    size_t size[4];
    ck_assert_ts_ok(ts_wire_pk_encode(pk, pid, &blob[0], &size[0]));
    ck_assert_ts_ok(ts_ckks_relin_key_serialize(ek, 0, &blob[1], &size[1]));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &blob[2], &size[2]));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(
        ek, sk, mi->rotation_steps + mi->n_rotation_steps - 1, 1, prng));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &blob[3], &size[3]));
    static const char *kinds[4] = {"public", "relin", "galois", "galois"};
    uint8_t shas[4][32];
    ProtobufCBinaryData kb[4];
    for (int i = 0; i < 4; i++) {
        ts_upload_report_t rep;
        ck_assert_ts_ok(
            ts_client_key_upload(c, blob[i], size[i], kinds[i], "test-llm-tiny", 0, false, &rep));
        memcpy(shas[i], rep.sha256, 32);
        kb[i].data = shas[i];
        kb[i].len = 32;
        ts_free(blob[i]);
    }
    /* keys capped one level below where the engine rotates: refused */
    ck_assert_uint_eq(mi->n_rotation_levels, mi->n_rotation_steps);
    {
        ts_ckks_evalkeys_t *low = NULL;
        int *lv = calloc(mi->n_rotation_steps, sizeof *lv);
        ck_assert_ptr_nonnull(lv);
        for (size_t i = 0; i < mi->n_rotation_steps; i++) {
            ck_assert_int_ge(mi->rotation_levels[i], 1);
            lv[i] = mi->rotation_levels[i] - 1;
        }
        ck_assert_ts_ok(ts_ckks_evalkeys_new(p, &low));
        ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations_at(low, sk, mi->rotation_steps, lv,
                                                          mi->n_rotation_steps, prng));
        uint8_t *lb = NULL;
        size_t ls = 0;
        ck_assert_ts_ok(ts_ckks_galois_keys_serialize(low, 0, &lb, &ls));
        ts_upload_report_t rep;
        ck_assert_ts_ok(ts_client_key_upload(c, lb, ls, "galois", "test-llm-tiny", 0, false, &rep));
        ProtobufCBinaryData capped[3] = {kb[0], kb[1], {.data = rep.sha256, .len = 32}};
        open_session(c, capped, 3, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_NOT_FOUND,
                     "serves levels up to");
        ts_free(lb);
        free(lv);
        ts_ckks_evalkeys_free(low);
    }
    /* refused sessions */
    open_session(c, kb, 3, "nope", "ckks", TESSERA__ERROR_CODE__ERROR_NOT_FOUND, "no model");
    open_session(c, kb, 3, "tiny", "hybrid", TESSERA__ERROR_CODE__ERROR_UNSUPPORTED,
                 "does not serve policy hybrid");
    open_session(c, kb, 3, "tiny", "tfhe", TESSERA__ERROR_CODE__ERROR_UNSUPPORTED,
                 "does not serve policy tfhe");
    open_session(c, kb, 3, "tiny", "bogus", TESSERA__ERROR_CODE__ERROR_INVALID, "unknown policy");
    open_session(c, kb, 3, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_NOT_FOUND, "rotation key");
    open_session(c, kb + 1, 1, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_NOT_FOUND, "public key");
    /* (hashes of another length than 32 bytes are refused by the envelope check, fatally) */
    open_session(c, kb, 0, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_INVALID, "1..16 keys");
    ProtobufCBinaryData all[3] = {kb[0], kb[1], kb[3]};
    open_session(c, all, 3, "zsmall", "ckks", TESSERA__ERROR_CODE__ERROR_LIMIT, "over the limit");
    /* a good session: public, relin, and the two Galois blobs */
    ProtobufCBinaryData good[3] = {kb[0], kb[1], kb[3]};
    uint64_t sid =
        open_session(c, good, 3, "tiny", "", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
    /* a valid token (BOS) and hostile variants */
    ts_ckks_encoder_t *ecd = NULL;
    ts_ckks_ciphertext_t *x = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &ecd));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(p, 0, &x));
    float onehot[TINY_VOCAB] = {0};
    onehot[1] = 1.0f;
    ck_assert_ts_ok(ts_llm_enc_encrypt_vec(ecd, sk, prng, onehot, TINY_VOCAB, (int)mi->slots,
                                           (int)mi->input_level, x));
    uint8_t *good_ct = NULL, *low_ct = NULL;
    size_t good_n = 0, low_n = 0;
    ck_assert_ts_ok(ts_wire_ct_encode(x, pid, 0, &good_ct, &good_n));
    ck_assert_ts_ok(
        ts_llm_enc_encrypt_vec(ecd, sk, prng, onehot, TINY_VOCAB, (int)mi->slots, 3, x));
    ck_assert_ts_ok(ts_wire_ct_encode(x, pid, 0, &low_ct, &low_n));
    Tessera__DecodeStep ds;
    step_req(&req, &ds, sid ^ 1, 0, good_ct, good_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_NOT_FOUND, "no decode session");
    step_req(&req, &ds, sid, 1, good_ct, good_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "not the session's next");
    step_req(&req, &ds, sid, 8, good_ct, good_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_LIMIT, "context full");
    step_req(&req, &ds, sid, 0, (const uint8_t *)"garbage!", 8);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_MALFORMED, NULL);
    step_req(&req, &ds, sid, 0, good_ct, 0);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "no token");
    good_ct[good_n / 2] ^= 0x10;
    step_req(&req, &ds, sid, 0, good_ct, good_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_MALFORMED, NULL);
    good_ct[good_n / 2] ^= 0x10;
    step_req(&req, &ds, sid, 0, good_ct, good_n - 100);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_MALFORMED, NULL);
    step_req(&req, &ds, sid, 0, low_ct, low_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "level");
    /* after all that, the real step works and decrypts to the plaintext logits */
    step_req(&req, &ds, sid, 0, good_ct, good_n);
    Tessera__Envelope *rep = NULL;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &rep);
    ck_assert_msg(st == TS_OK, "step: %s", c->err);
    const Tessera__DecodeResult *dr = rep->decode_result;
    ck_assert_uint_eq(dr->level, 0);
    ck_assert_uint_eq(dr->n_stages, 8);
    ts_ckks_ciphertext_t *lg = NULL;
    ck_assert_ts_ok(
        ts_wire_ct_decode(p, pid, dr->logits.data, dr->logits.len, 1, &lg, why, sizeof why));
    float got[TINY_VOCAB];
    ck_assert_ts_ok(ts_llm_enc_decrypt_vec(ecd, sk, lg, got, TINY_VOCAB));
    ts_llm_model_t *m = NULL;
    ts_llm_state_t *stt = NULL;
    const float *ref = NULL;
    ck_assert_ts_ok(ts_llm_model_load(f.model, &m, NULL, 0));
    ck_assert_ts_ok(ts_llm_state_new(m, &stt));
    ck_assert_ts_ok(ts_llm_forward(m, stt, 1, 0, &ref));
    double mx = 0;
    for (int i = 0; i < TINY_VOCAB; i++)
        mx = fmax(mx, fabs((double)got[i] - ref[i]));
    printf("decode step over the network: logits within %.2e of the plaintext (flooding bound "
           "%.2e), server %.0f ms\n",
           mx, dr->err_bound, dr->server_ms);
    ck_assert(mx < 2e-2);
    ts_net_envelope_free(rep);
    /* a cache-only step (a prompt position): no logits, the position taken */
    step_req(&req, &ds, sid, 1, good_ct, good_n);
    ds.cache_only = true;
    st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &rep);
    ck_assert_msg(st == TS_OK, "cache-only step: %s", c->err);
    ck_assert(rep->decode_result->cache_only);
    ck_assert_uint_eq(rep->decode_result->logits.len, 0);
    ck_assert_uint_eq(rep->decode_result->level, 0);
    ck_assert_uint_eq(rep->decode_result->n_stages, 8);
    ts_net_envelope_free(rep);
    /* a public position after encrypted ones, or with a ciphertext, or out of the vocabulary */
    step_req(&req, &ds, sid, 2, NULL, 0);
    ds.token_public = true;
    ds.public_token = 1;
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "public positions form a prefix");
    step_req(&req, &ds, sid, 2, good_ct, good_n);
    ds.token_public = true;
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "not a ciphertext");
    step_req(&req, &ds, sid, 2, NULL, 0);
    ds.token_public = true;
    ds.public_token = 0x80000000u;
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "public_token");
    /* a prefill on a model without lanes; one past the context */
    step_req(&req, &ds, sid, 2, good_ct, good_n);
    ds.positions = 2;
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "prefills at most 1");
    step_req(&req, &ds, sid, 2, good_ct, good_n);
    ds.positions = 7;
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_LIMIT, "context full");
    /* the same positions again: not the next one any more */
    step_req(&req, &ds, sid, 0, good_ct, good_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "not the session's next");
    step_req(&req, &ds, sid, 1, good_ct, good_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_INVALID, "not the session's next");
    /* close; then the session is gone */
    Tessera__SessionClose sc = TESSERA__SESSION_CLOSE__INIT;
    sc.session_id = sid;
    Tessera__Envelope creq = TESSERA__ENVELOPE__INIT;
    creq.body_case = TESSERA__ENVELOPE__BODY_SESSION_CLOSE;
    creq.session_close = &sc;
    ck_assert_ts_ok(ts_client_call(c, &creq, TESSERA__ENVELOPE__BODY_SESSION_CLOSED, &rep));
    ts_net_envelope_free(rep);
    step_req(&req, &ds, sid, 2, good_ct, good_n);
    expect_err(c, &req, TESSERA__ERROR_CODE__ERROR_NOT_FOUND, "no decode session");
    /* still serving */
    Tessera__Ping ping = TESSERA__PING__INIT;
    Tessera__Envelope preq = TESSERA__ENVELOPE__INIT;
    preq.body_case = TESSERA__ENVELOPE__BODY_PING;
    preq.ping = &ping;
    ck_assert_ts_ok(ts_client_call(c, &preq, TESSERA__ENVELOPE__BODY_PONG, &rep));
    ts_net_envelope_free(rep);
    ts_free(good_ct);
    ts_free(low_ct);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(lg);
    ts_ckks_encoder_free(ecd);
    ts_llm_state_free(stt);
    ts_llm_model_free(m);
    client_keys_free(p, prng, sk, pk, ek);
    ts_net_envelope_free(info);
    ts_client_close(c);
    dfx_stop(&f);
}
END_TEST

/* Upload blob; its hash to kb (sha: storage). */
static void upload(ts_client_t *c, const uint8_t *blob, size_t n, const char *kind,
                   const char *param_id, uint8_t sha[32], ProtobufCBinaryData *kb)
{
    ts_upload_report_t rep;
    ck_assert_ts_ok(ts_client_key_upload(c, blob, n, kind, param_id, 0, false, &rep));
    memcpy(sha, rep.sha256, 32);
    kb->data = sha;
    kb->len = 32;
}

/*
 * `tessera generate --model MODEL --policy hybrid --prompt a --max-tokens 1`
 * against the fixture's daemon (keys made, uploaded and used by the CLI):
 * the positions it printed, the generated id, the conversion time summed
 * over the positions and whether a line named a TFHE kind (every line names
 * the policy and its tfhe_kinds; "none" lines convert nothing). The prompt is BOS, " ", "a"; the
 * generated id comes from position 2, where the tiny engine's logits are close (the presets'
 * comment), so it must be the plaintext greedy id, want[3] of plain_greedy.
 */
static int generate_cli(const dfx_t *f, const char *model, size_t *positions, double *conv,
                        bool *tfhe)
{
    char cmd[3000], line[4096];
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model %s "
             "--prompt a --max-tokens 1 --temperature 0 --policy hybrid --tokenizer %s "
             "--insecure-params --json > %s/gen-%s.json 2>%s/gen-%s.err",
             ts_test_build_dir(), f->d.port, f->certs, model, f->tok, f->d.dir, model, f->d.dir,
             model);
    char errp[800];
    snprintf(errp, sizeof errp, "%s/gen-%s.err", f->d.dir, model);
    run_shown(cmd, errp, "tessera generate --policy hybrid");
    snprintf(cmd, sizeof cmd, "%s/gen-%s.json", f->d.dir, model);
    FILE *j = fopen(cmd, "r");
    ck_assert_ptr_nonnull(j);
    int got = -1;
    *positions = 0;
    *conv = 0;
    *tfhe = false;
    while (fgets(line, sizeof line, j)) {
        const char *ip = strstr(line, "\"id\":"), *cp = strstr(line, "\"convert\":");
        ck_assert_ptr_nonnull(ip);
        ck_assert_ptr_nonnull(cp); /* every position reports its conversion time */
        /* and what the server evaluates in TFHE: with nothing, no conversion */
        const char *kp = strstr(line, "\"policy\":\"hybrid\",\"tfhe_kinds\":\"");
        ck_assert_ptr_nonnull(kp);
        if (strncmp(kp + 32, "none\"", 5) == 0)
            ck_assert(atof(cp + 10) == 0);
        else
            *tfhe = true;
        (*positions)++;
        *conv += atof(cp + 10);
        if (strstr(line, "\"prompt\":false"))
            got = atoi(ip + 5);
    }
    fclose(j);
    return got;
}

/*
 * `tessera generate` on a terminal (util-linux script(1) gives it one; the
 * check is skipped without it): the running step's elapsed time once a
 * second (the hybrid steps here take seconds), the text printed at the end
 * (stdout is the same terminal), the time to the first token.
 */
static void generate_tty(const dfx_t *f, const char *model)
{
    if (access("/usr/bin/script", X_OK) != 0) {
        printf("tessera generate on a terminal: skipped (no /usr/bin/script)\n");
        return;
    }
    char cmd[3000], path[700];
    snprintf(path, sizeof path, "%s/tty-%s.out", f->d.dir, model);
    snprintf(cmd, sizeof cmd,
             "script -qfec \"%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model %s "
             "--prompt a --max-tokens 1 --temperature 0 --policy hybrid --tokenizer %s "
             "--insecure-params\" %s > /dev/null 2>&1",
             ts_test_build_dir(), f->d.port, f->certs, model, f->tok, path);
    ck_assert_int_eq(system(cmd), 0);
    static char buf[1 << 16];
    ts_test_read_file(path, buf, sizeof buf);
    /* the generated position's step: "[token 3/3] T s/token"; progress is
     * due once it ran past a second (a much faster machine may not get there) */
    const char *tp = strstr(buf, "[token 3/3] ");
    double secs = 0;
    for (const char *q = tp; q; q = strstr(q + 1, "[token 3/3] ")) {
        int n = 0;
        if (sscanf(q, "[token 3/3] %lf s/token%n", &secs, &n) == 1 && n > 0)
            break;
        secs = 0;
    }
    ck_assert_msg(tp && secs > 0, "no status line for the generated position:\n%s", buf);
    if (secs > 1.5)
        ck_assert_msg(strstr(buf, "s on the server"), "no progress while the %.1f s step ran:\n%s",
                      secs, buf);
    ck_assert_ptr_nonnull(strstr(buf, "first after"));
    ck_assert_ptr_nonnull(strstr(buf, "1 public, 2 cache-only")); /* BOS, " " */
    printf("tessera generate on a terminal: a %.1f s step, progress %s\n", secs,
           strstr(buf, "s on the server") ? "shown while it ran" : "not due");
    unlink(path);
}

/*
 * The hybrid and tfhe policies on the bootstrapping tiny model (preset
 * test-llm-tiny-boot): ModelInfo describes what each policy needs; the
 * conversion keys travel through the key upload and are checked on the
 * server (missing, made for another TFHE literal, bit-flipped, truncated,
 * given to a ckks session, StC-first rotation keys missing: each refused with
 * its sentence); hybrid and tfhe sessions with the right keys run a step
 * whose conversions happen on the server; `tessera generate --policy hybrid`
 * makes, uploads and uses the keys end to end and its generated id (from
 * position 2) is the plaintext greedy id. (The tiny engine's logits at
 * positions 0-1 under the policies' default approximations are off, see the
 * preset; the full plaintext-ids oracle is the slow aidreams260K case.)
 */
START_TEST(test_decode_policies)
{
    dfx_t f;
    dfx_start(&f);
    ts_client_t *c = connect_lib(&f);
    Tessera__Envelope *info = model_info_call(c, "tinyb");
    const Tessera__ModelInfo *mi = info->model_info;
    ck_assert(mi->bootstrap);
    ck_assert_uint_eq(mi->n_policies, 3);
    ck_assert_uint_eq(mi->n_policy_info, 3);
    const Tessera__PolicyInfo *ck = mi->policy_info[0], *hy = mi->policy_info[1];
    ck_assert_str_eq(ck->policy, "ckks");
    ck_assert_str_eq(hy->policy, "hybrid");
    ck_assert_str_eq(mi->policy_info[2]->policy, "tfhe");
    ck_assert(!ck->tfhe);
    ck_assert_uint_eq(ck->n_rotation_steps, mi->n_rotation_steps);
    ck_assert(hy->tfhe && mi->policy_info[2]->tfhe);
    ck_assert_str_eq(hy->tfhe_preset, "tfhe_test_small");
    ck_assert_uint_eq(hy->tfhe_log_n_br, 10);
    ck_assert_uint_eq(hy->tfhe_br_levels, 3);
    ck_assert(hy->tfhe_insecure);
    printf("tinyb: ckks %zu rotation keys, hybrid %zu (with the StC-first bootstrapper's)\n",
           ck->n_rotation_steps, hy->n_rotation_steps);
    /* client keys for the hybrid policy */
    ts_ckks_params_t *p = NULL;
    uint8_t pid[32];
    ts_prng_t *prng = NULL;
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_public_key_t *pk = NULL;
    ts_ckks_evalkeys_t *ek = NULL;
    client_keys(mi->param_id, &p, pid, &prng, &sk, &pk, &ek);
    /* Galois blob 1: the ckks policy's steps only (bootstrapping's missing) */
    ck_assert_ts_ok(
        ts_ckks_evalkeys_gen_rotations(ek, sk, ck->rotation_steps, ck->n_rotation_steps, prng));
    uint8_t *blob[8] = {0};
    size_t size[8] = {0};
    ck_assert_ts_ok(ts_wire_pk_encode(pk, pid, &blob[0], &size[0]));
    ck_assert_ts_ok(ts_ckks_relin_key_serialize(ek, 0, &blob[1], &size[1]));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &blob[2], &size[2]));
    /* Galois blob 2: everything (bootstrapping and the hybrid policy's steps) */
    ts_boot_config_t bc;
    ck_assert_ts_ok(ts_llm_boot_config(p, ts_log2_exact(mi->slots), mi->encap_h,
                                       (int)mi->boot_cts_levels, (int)mi->boot_stc_levels, &bc));
    ck_assert_ts_ok(ts_boot_keygen(p, &bc, ek, sk, prng));
    ck_assert_ts_ok(
        ts_ckks_evalkeys_gen_rotations(ek, sk, hy->rotation_steps, hy->n_rotation_steps, prng));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &blob[3], &size[3]));
    /* conversion keys: right, another literal (log_n_br 9), bit-flipped, truncated */
    ts_tfhe_params_lit_t lit;
    ck_assert_ts_ok(ts_tfhe_params_preset(hy->tfhe_preset, &lit));
    lit.log_n_br = hy->tfhe_log_n_br;
    lit.br_levels = hy->tfhe_br_levels;
    ts_convert_t *cv = NULL;
    ck_assert_ts_ok(ts_convert_keygen(p, sk, &lit, prng, &cv));
    ck_assert_ts_ok(ts_convert_keys_serialize(cv, 0, &blob[4], &size[4]));
    ts_convert_free(cv);
    lit.log_n_br = 9;
    ck_assert_ts_ok(ts_convert_keygen(p, sk, &lit, prng, &cv));
    ck_assert_ts_ok(ts_convert_keys_serialize(cv, 0, &blob[5], &size[5]));
    ts_convert_free(cv);
    blob[6] = ts_malloc(size[4]);
    ck_assert_ptr_nonnull(blob[6]);
    memcpy(blob[6], blob[4], size[4]);
    size[6] = size[4];
    blob[6][size[6] / 2] ^= 0x04;
    blob[7] = ts_malloc(size[4] / 2);
    ck_assert_ptr_nonnull(blob[7]);
    memcpy(blob[7], blob[4], size[4] / 2);
    size[7] = size[4] / 2;
    printf("conversion keys: %.1f MiB serialized\n", (double)size[4] / 1048576.0);
    static const char *kinds[8] = {"public",  "relin",   "galois",  "galois",
                                   "convert", "convert", "convert", "convert"};
    uint8_t shas[8][32];
    ProtobufCBinaryData kb[8];
    for (int i = 0; i < 8; i++) {
        upload(c, blob[i], size[i], kinds[i], mi->param_id, shas[i], &kb[i]);
        ts_free(blob[i]);
    }
    ProtobufCBinaryData set[4] = {kb[0], kb[1], kb[3], kb[4]};
    /* refusals */
    open_session(c, set, 3, "tinyb", "hybrid", TESSERA__ERROR_CODE__ERROR_NOT_FOUND,
                 "conversion keys");
    set[3] = kb[5];
    open_session(c, set, 4, "tinyb", "hybrid", TESSERA__ERROR_CODE__ERROR_MISMATCH,
                 "other parameters");
    set[3] = kb[6];
    open_session(c, set, 4, "tinyb", "hybrid", TESSERA__ERROR_CODE__ERROR_MALFORMED,
                 "do not parse");
    set[3] = kb[7];
    open_session(c, set, 4, "tinyb", "tfhe", TESSERA__ERROR_CODE__ERROR_MALFORMED, "key 3");
    set[3] = kb[4];
    open_session(c, set, 4, "tinyb", "ckks", TESSERA__ERROR_CODE__ERROR_INVALID, "does not use");
    set[2] = kb[2];
    open_session(c, set, 4, "tinyb", "hybrid", TESSERA__ERROR_CODE__ERROR_NOT_FOUND,
                 "rotation key");
    set[2] = kb[3];
    /* the right keys: tfhe and hybrid sessions open; a hybrid step converts on the server */
    uint64_t tid =
        open_session(c, set, 4, "tinyb", "tfhe", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
    ck_assert_uint_ne(tid, 0);
    uint64_t sid =
        open_session(c, set, 4, "tinyb", "hybrid", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
    ts_ckks_encoder_t *ecd = NULL;
    ts_ckks_ciphertext_t *x = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &ecd));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(p, 0, &x));
    float onehot[TINY_VOCAB] = {0};
    onehot[1] = 1.0f;
    ck_assert_ts_ok(ts_llm_enc_encrypt_vec(ecd, sk, prng, onehot, TINY_VOCAB, (int)mi->slots,
                                           (int)hy->input_level, x));
    uint8_t *ct = NULL;
    size_t ctn = 0;
    ck_assert_ts_ok(ts_wire_ct_encode(x, pid, 0, &ct, &ctn));
    Tessera__DecodeStep ds;
    Tessera__Envelope req;
    step_req(&req, &ds, sid, 0, ct, ctn);
    Tessera__Envelope *rep = NULL;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &rep);
    ck_assert_msg(st == TS_OK, "hybrid step: %s", c->err);
    const Tessera__DecodeResult *dr = rep->decode_result;
    double conv = -1;
    for (size_t i = 0; i < dr->n_stages; i++)
        if (!strcmp(dr->stages[i]->stage, "convert"))
            conv = dr->stages[i]->ms;
    printf("hybrid step over the network: server %.0f ms, conversions %.0f ms, %llu bootstraps\n",
           dr->server_ms, conv, (unsigned long long)dr->bootstraps);
    ck_assert(conv > 0);
    ck_assert_uint_gt(dr->bootstraps, 0);
    ts_net_envelope_free(rep);
    /* and a tfhe step (every primitive by PBS) */
    step_req(&req, &ds, tid, 0, ct, ctn);
    st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &rep);
    ck_assert_msg(st == TS_OK, "tfhe step: %s", c->err);
    dr = rep->decode_result;
    conv = -1;
    for (size_t i = 0; i < dr->n_stages; i++)
        if (!strcmp(dr->stages[i]->stage, "convert"))
            conv = dr->stages[i]->ms;
    printf("tfhe step over the network: server %.0f ms, conversions %.0f ms\n", dr->server_ms,
           conv);
    ck_assert(conv > 0);
    ts_net_envelope_free(rep);
    ts_free(ct);
    ts_ckks_ciphertext_free(x);
    ts_ckks_encoder_free(ecd);
    client_keys_free(p, prng, sk, pk, ek);
    ts_net_envelope_free(info);
    ts_client_close(c);
    /* the command line: keys made, uploaded and used; prompt "a" is BOS, " ", "a" and the
     * generated id comes from position 2, where the tiny engine's logits are close (the
     * preset's comment): it must be the plaintext greedy id */
    if (!ts_test_quick()) {
        int want[16];
        size_t n_prompt = 0, n = plain_greedy(&f, "a", 8, want, &n_prompt);
        ck_assert_uint_eq(n_prompt, 3);
        ck_assert_uint_ge(n, 4);
        size_t positions = 0;
        double conv = 0;
        bool tfhe = false;
        int got = generate_cli(&f, "tinyb", &positions, &conv, &tfhe);
        printf("tessera generate --policy hybrid over TLS: %zu positions, conversions %.0f ms, "
               "generated %d (plaintext greedy %d)\n",
               positions, conv, got, want[3]);
        ck_assert_uint_eq(positions, 3);
        ck_assert(conv > 0 && tfhe);
        ck_assert_int_eq(got, want[3]);
        generate_tty(&f, "tinyb");
        /* tinyc: the hybrid the server placed all in CKKS under its cost table
         * (PolicyInfo.tfhe false: the client makes no conversion keys, which
         * tinyc's sessions would refuse); the steps convert nothing */
        got = generate_cli(&f, "tinyc", &positions, &conv, &tfhe);
        printf("tessera generate --policy hybrid (all CKKS under tinyc's table): %zu positions, "
               "conversions %.0f ms, generated %d (plaintext greedy %d)\n",
               positions, conv, got, want[3]);
        ck_assert_uint_eq(positions, 3);
        ck_assert(conv == 0 && !tfhe);
        ck_assert_int_eq(got, want[3]);
    }
    dfx_stop(&f);
}
END_TEST

/*
 * A dense-secret model (tinyd, test-llm-tiny-boot-dense): ModelInfo says the
 * bootstrapping uses encapsulation (encap_h 32); a session without the
 * client's encapsulation keys is refused with its sentence, keys of another
 * kind in their place too; `tessera generate --policy hybrid` makes and
 * uploads them (with level-capped rotation keys) and its generated id (from
 * position 2, as for tinyb) is the plaintext greedy id: the session
 * bootstrapped under its own keys through a view of the shared bootstrapper.
 */
START_TEST(test_decode_dense_encap)
{
    dfx_t f;
    dfx_start(&f);
    ts_client_t *c = connect_lib(&f);
    Tessera__Envelope *info = model_info_call(c, "tinyd");
    const Tessera__ModelInfo *mi = info->model_info;
    ck_assert(mi->bootstrap);
    ck_assert_int_eq(mi->encap_h, 32);
    ck_assert_uint_eq(mi->n_rotation_levels, mi->n_rotation_steps);
    /* every key but the encapsulation keys */
    ts_ckks_params_t *p = NULL;
    uint8_t pid[32];
    ts_prng_t *prng = NULL;
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_public_key_t *pk = NULL;
    ts_ckks_evalkeys_t *ek = NULL;
    client_keys(mi->param_id, &p, pid, &prng, &sk, &pk, &ek);
    ts_boot_config_t bc;
    ck_assert_ts_ok(ts_llm_boot_config(p, ts_log2_exact(mi->slots), mi->encap_h,
                                       (int)mi->boot_cts_levels, (int)mi->boot_stc_levels, &bc));
    ck_assert_ts_ok(ts_boot_keygen(p, &bc, ek, sk, prng));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations_at(
        ek, sk, mi->rotation_steps, mi->rotation_levels, mi->n_rotation_steps, prng));
    uint8_t *blob[4] = {0};
    size_t size[4] = {0};
    ck_assert_ts_ok(ts_wire_pk_encode(pk, pid, &blob[0], &size[0]));
    ck_assert_ts_ok(ts_ckks_relin_key_serialize(ek, 0, &blob[1], &size[1]));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &blob[2], &size[2]));
    /* encapsulation keys of another h' (48): refused when the session opens */
    ts_boot_config_t bc48 = bc;
    ck_assert_ts_ok(ts_boot_config_encapsulate(p, 48, &bc48));
    ts_boot_encap_keys_t *k48 = NULL;
    ck_assert_ts_ok(ts_boot_encap_keygen(p, &bc48, sk, prng, &k48));
    ck_assert_ts_ok(ts_boot_encap_keys_serialize(k48, 0, &blob[3], &size[3]));
    ts_boot_encap_keys_free(k48);
    static const char *kinds[4] = {"public", "relin", "galois", "encap"};
    uint8_t shas[4][32];
    ProtobufCBinaryData kb[4];
    for (int i = 0; i < 4; i++) {
        upload(c, blob[i], size[i], kinds[i], mi->param_id, shas[i], &kb[i]);
        ts_free(blob[i]);
    }
    open_session(c, kb, 3, "tinyd", "ckks", TESSERA__ERROR_CODE__ERROR_NOT_FOUND,
                 "encapsulation keys");
    open_session(c, kb, 4, "tinyd", "ckks", TESSERA__ERROR_CODE__ERROR_MALFORMED, "key 3");
    client_keys_free(p, prng, sk, pk, ek);
    ts_net_envelope_free(info);
    ts_client_close(c);
    /* the command line end to end (skipped under ASan: minutes) */
    if (ts_test_quick()) {
        dfx_stop(&f);
        return;
    }
    int want[16];
    size_t n_prompt = 0, n = plain_greedy(&f, "a", 8, want, &n_prompt);
    ck_assert_uint_eq(n_prompt, 3);
    ck_assert_uint_ge(n, 4);
    size_t positions = 0;
    double conv = 0;
    bool tfhe = false;
    int got = generate_cli(&f, "tinyd", &positions, &conv, &tfhe);
    printf("tessera generate on a dense-secret model (encapsulation over TLS): generated %d "
           "(plaintext greedy %d)\n",
           got, want[3]);
    ck_assert_uint_eq(positions, 3);
    ck_assert_int_eq(got, want[3]);
    dfx_stop(&f);
}
END_TEST

/*
 * TS_SLOW_TESTS=1: `tessera generate --policy hybrid` against tesserad serving
 * the bundled aidreams260K at the insecure test-boot-n12 (bootstrapping,
 * conversions at N_br = 2^10) reproduces the plaintext greedy ids of the
 * prompt "I" (BOS + 1 token, 1 generated; minutes per position on 2 cores):
 *   TS_SLOW_TESTS=1 CK_RUN_SUITE=net_decode CK_RUN_CASE=decode_slow build/tests/unit_tests
 * TS_SLOW_POLICY=tfhe runs the tfhe policy instead.
 */
START_TEST(test_generate_aidreams_policy)
{
    if (!getenv("TS_SLOW_TESTS"))
        return;
    const char *policy = getenv("TS_SLOW_POLICY") ? getenv("TS_SLOW_POLICY") : "hybrid";
    char certs[512], models[700], model[700], tok[700], cmd[3000];
    net_tmpdir(certs, sizeof certs, "dec-slow");
    net_make_certs(certs, "client");
    snprintf(models, sizeof models, "%s/models", certs);
    ck_assert_int_eq(mkdir(models, 0700), 0);
    char *cwd = getcwd(NULL, 0);
    ck_assert_ptr_nonnull(cwd);
    snprintf(model, sizeof model, "%s/%s/aidreams260K.bin", cwd, ts_test_model_dir());
    snprintf(tok, sizeof tok, "%s/%s/tok512.bin", cwd, ts_test_model_dir());
    free(cwd);
    write_yaml(models, "aidreams.yaml",
               "path: %s\nparams: test-boot-n12\nbootstrap: true\npolicies: ckks, %s\n"
               "max_context: 8\nmax_sessions: 1\nsanitize_lambda: 20\n",
               model, policy);
    char sections[800];
    snprintf(sections, sizeof sections, "models_dir: %s\n", models);
    net_daemon_t d;
    net_daemon_start(&d, certs, NULL, NULL, sections, true);
    /* plaintext greedy ids */
    ts_llm_model_t *m = NULL;
    ts_llm_tokenizer_t *tk = NULL;
    ck_assert_ts_ok(ts_llm_model_load(model, &m, NULL, 0));
    ck_assert_ts_ok(ts_llm_tokenizer_load(tok, ts_llm_model_config(m)->vocab_size, &tk, NULL, 0));
    int ids[16], want[16];
    size_t n_prompt = 0, n = 0;
    ck_assert_ts_ok(ts_llm_tokenizer_encode(tk, "I", 1, true, false, ids, 16, &n_prompt));
    ck_assert_ts_ok(
        ts_llm_generate(m, NULL, ids, n_prompt, n_prompt + 1, false, -1, NULL, NULL, want, &n));
    ck_assert_uint_eq(n, n_prompt + 1);
    ts_llm_tokenizer_free(tk);
    ts_llm_model_free(m);
    char out[700];
    snprintf(out, sizeof out, "%s/gen.json", d.dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model aidreams "
             "--prompt I --max-tokens 1 --temperature 0 --policy %s --tokenizer %s "
             "--insecure-params --json > %s 2>%s/gen.err",
             ts_test_build_dir(), d.port, certs, policy, tok, out, d.dir);
    uint64_t t0 = ts_now_ns();
    int rc = system(cmd);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat %s/gen.err; tail -5 %s/tesserad.log", d.dir, d.dir);
        ck_assert_int_ge(system(cmd), 0);
    }
    ck_assert_int_eq(rc, 0);
    FILE *j = fopen(out, "r");
    ck_assert_ptr_nonnull(j);
    char line[4096];
    int got = -1;
    size_t positions = 0;
    while (fgets(line, sizeof line, j)) {
        positions++;
        const char *ip = strstr(line, "\"id\":");
        ck_assert_ptr_nonnull(ip);
        ck_assert_ptr_nonnull(strstr(line, "\"convert\":"));
        if (strstr(line, "\"prompt\":false"))
            got = atoi(ip + 5);
        printf("  %s", line);
    }
    fclose(j);
    printf("aidreams260K --policy %s over TLS at test-boot-n12: %zu positions in %.0f s, "
           "generated %d (plaintext greedy %d)\n",
           policy, positions, (double)(ts_now_ns() - t0) / 1e9, got, want[n_prompt]);
    ck_assert_int_eq(got, want[n_prompt]);
    ck_assert_int_eq(net_daemon_stop(&d), 0);
    net_daemon_cleanup(&d);
    net_rm_rf(certs);
}
END_TEST

/* Keys for the tiny model uploaded through c; kb[0..3) set. */
typedef struct {
    ts_ckks_params_t *p;
    uint8_t pid[32];
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_encoder_t *ecd;
    uint8_t shas[3][32];
    ProtobufCBinaryData kb[3];
    int slots; /* ModelInfo.slots */
} keys_t;

static void keys_make(keys_t *k, ts_client_t *c)
{
    memset(k, 0, sizeof *k);
    Tessera__Envelope *info = model_info_call(c, NULL);
    const Tessera__ModelInfo *mi = info->model_info;
    k->slots = (int)mi->slots;
    char why[256];
    ck_assert_ts_ok(
        ts_wire_params_get("configs/params", mi->param_id, true, &k->p, k->pid, why, sizeof why));
    ts_ckks_public_key_t *pk = NULL;
    ts_ckks_evalkeys_t *ek = NULL;
    ck_assert_ts_ok(ts_prng_new_os(&k->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(k->p, k->prng, &k->sk));
    ck_assert_ts_ok(ts_ckks_keygen_public(k->sk, k->prng, &pk));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(k->p, &ek));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_relin(ek, k->sk, k->prng));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(ek, k->sk, mi->rotation_steps,
                                                   mi->n_rotation_steps, k->prng));
    if (mi->bootstrap) { /* the bootstrapping keys at the model's slots */
        ts_boot_config_t bc;
        ck_assert_ts_ok(ts_llm_boot_config(k->p, ts_log2_exact(mi->slots), mi->encap_h,
                                           (int)mi->boot_cts_levels, (int)mi->boot_stc_levels,
                                           &bc));
        ck_assert_ts_ok(ts_boot_keygen(k->p, &bc, ek, k->sk, k->prng));
    }
    uint8_t *blob[3];
    size_t size[3];
    ck_assert_ts_ok(ts_wire_pk_encode(pk, k->pid, &blob[0], &size[0]));
    ck_assert_ts_ok(ts_ckks_relin_key_serialize(ek, 0, &blob[1], &size[1]));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &blob[2], &size[2]));
    static const char *kinds[3] = {"public", "relin", "galois"};
    for (int i = 0; i < 3; i++) {
        ts_upload_report_t rep;
        ck_assert_ts_ok(
            ts_client_key_upload(c, blob[i], size[i], kinds[i], mi->param_id, 0, false, &rep));
        memcpy(k->shas[i], rep.sha256, 32);
        k->kb[i].data = k->shas[i];
        k->kb[i].len = 32;
        ts_free(blob[i]);
    }
    ck_assert_ts_ok(ts_ckks_encoder_new(k->p, &k->ecd));
    ts_ckks_evalkeys_free(ek);
    ts_ckks_public_key_free(pk);
    ts_net_envelope_free(info);
}

static void keys_clear(keys_t *k)
{
    ts_ckks_encoder_free(k->ecd);
    ts_ckks_secret_key_free(k->sk);
    ts_prng_free(k->prng);
    ts_ckks_params_free(k->p);
}

/* The serialized one-hot token at the input level (60 for test-llm-tiny). */
static uint8_t *token_ct(keys_t *k, int token, size_t *n)
{
    ts_ckks_ciphertext_t *x = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(k->p, 0, &x));
    float onehot[TINY_VOCAB] = {0};
    onehot[token] = 1.0f;
    ck_assert_ts_ok(ts_llm_enc_encrypt_vec(k->ecd, k->sk, k->prng, onehot, TINY_VOCAB, k->slots,
                                           ts_ckks_params_max_level(k->p), x));
    uint8_t *b = NULL;
    ck_assert_ts_ok(ts_wire_ct_encode(x, k->pid, 0, &b, n));
    ts_ckks_ciphertext_free(x);
    return b;
}

static uint32_t stats_sessions(ts_client_t *c)
{
    Tessera__StatsRequest sr = TESSERA__STATS_REQUEST__INIT;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT, *rep = NULL;
    req.body_case = TESSERA__ENVELOPE__BODY_STATS_REQUEST;
    req.stats_request = &sr;
    ck_assert_ts_ok(ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_STATS_REPLY, &rep));
    uint32_t n = rep->stats_reply->sessions;
    ts_net_envelope_free(rep);
    return n;
}

/*
 * Two sessions on two connections step at the same time (both results
 * right); the model's session limit (2) refuses a third; closing a
 * connection while its step runs cancels it: the session is freed and its
 * slot serves a new session.
 */
START_TEST(test_decode_concurrent)
{
    dfx_t f;
    dfx_start(&f);
    ts_client_t *c1 = connect_lib(&f), *c2 = connect_lib(&f), *c3 = connect_lib(&f);
    keys_t k;
    keys_make(&k, c1);
    uint64_t s1 =
        open_session(c1, k.kb, 3, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
    uint64_t s2 =
        open_session(c2, k.kb, 3, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
    open_session(c3, k.kb, 3, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_BUSY, "already serves");
    ck_assert_uint_eq(stats_sessions(c3), 2);
    static const int toks[2] = {1, 7};
    size_t n1 = 0, n2 = 0;
    uint8_t *t1 = token_ct(&k, toks[0], &n1), *t2 = token_ct(&k, toks[1], &n2);
    Tessera__DecodeStep d1, d2;
    Tessera__Envelope r1, r2, *rep1 = NULL, *rep2 = NULL;
    step_req(&r1, &d1, s1, 0, t1, n1);
    step_req(&r2, &d2, s2, 0, t2, n2);
    uint64_t t0 = ts_now_ns();
    ck_assert_ts_ok(ts_client_send(c1, &r1));
    ck_assert_ts_ok(ts_client_send(c2, &r2));
    ck_assert_ts_ok(ts_client_recv(c1, &rep1));
    ck_assert_ts_ok(ts_client_recv(c2, &rep2));
    double wall = (double)(ts_now_ns() - t0) / 1e6;
    ck_assert_int_eq(rep1->body_case, TESSERA__ENVELOPE__BODY_DECODE_RESULT);
    ck_assert_int_eq(rep2->body_case, TESSERA__ENVELOPE__BODY_DECODE_RESULT);
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(f.model, &m, NULL, 0));
    Tessera__Envelope *reps[2] = {rep1, rep2};
    for (int i = 0; i < 2; i++) {
        const Tessera__DecodeResult *dr = reps[i]->decode_result;
        ts_ckks_ciphertext_t *lg = NULL;
        char why[256];
        ck_assert_ts_ok(ts_wire_ct_decode(k.p, k.pid, dr->logits.data, dr->logits.len, 1, &lg, why,
                                          sizeof why));
        float got[TINY_VOCAB];
        ck_assert_ts_ok(ts_llm_enc_decrypt_vec(k.ecd, k.sk, lg, got, TINY_VOCAB));
        ts_llm_state_t *st = NULL;
        const float *ref = NULL;
        ck_assert_ts_ok(ts_llm_state_new(m, &st));
        ck_assert_ts_ok(ts_llm_forward(m, st, toks[i], 0, &ref));
        double mx = 0;
        for (int j = 0; j < TINY_VOCAB; j++)
            mx = fmax(mx, fabs((double)got[j] - ref[j]));
        printf("concurrent session %d: logits within %.2e, server %.0f ms (both done in %.0f ms)\n",
               i + 1, mx, dr->server_ms, wall);
        ck_assert(mx < 2e-2);
        ts_llm_state_free(st);
        ts_ckks_ciphertext_free(lg);
    }
    ts_net_envelope_free(rep1);
    ts_net_envelope_free(rep2);
    /* cancel by disconnecting in the middle of a step */
    ts_free(t1);
    t1 = token_ct(&k, 4, &n1);
    step_req(&r1, &d1, s1, 1, t1, n1);
    ck_assert_ts_ok(ts_client_send(c1, &r1));
    ts_client_close(c1);
    uint32_t live = 2;
    for (int i = 0; i < 300 && live != 1; i++) {
        live = stats_sessions(c3);
        if (live != 1)
            usleep(50000);
    }
    ck_assert_uint_eq(live, 1);
    uint64_t s3 =
        open_session(c3, k.kb, 3, "tiny", "ckks", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
    ck_assert(s3 != 0);
    ck_assert_uint_eq(stats_sessions(c3), 2);
    ts_free(t1);
    ts_free(t2);
    ts_llm_model_free(m);
    keys_clear(&k);
    ts_client_close(c2);
    ts_client_close(c3);
    dfx_stop(&f);
}
END_TEST

/*
 * A GPT-2 model served (the tiny GGUF of tests/unit/llm_tiny.h at
 * test-llm-tiny, approximations configs/approx/tiny-gpt2-test.yaml): the
 * server embeds the one-hot token, adds the position row, and two steps over
 * TLS decrypt to sanitized logits within 5e-2 of ts_llm_forward, same argmax.
 */
START_TEST(test_decode_gpt2)
{
    dfx_t f;
    dfx_dirs(&f, "dec-gpt2");
    snprintf(f.model, sizeof f.model, "%s/tiny-gpt2.gguf", f.certs);
    ck_assert_int_eq(tiny_gpt2_write(f.model), 0);
    write_yaml(f.models, "gpt2.yaml",
               "path: %s\nparams: test-llm-tiny\napprox: configs/approx/tiny-gpt2-test.yaml\n"
               "max_context: 8\nmax_sessions: 1\nsanitize_lambda: 20\n",
               f.model);
    char sections[800];
    snprintf(sections, sizeof sections, "models_dir: %s\n", f.models);
    net_daemon_start(&f.d, f.certs, NULL, NULL, sections, true);
    ts_client_t *c = connect_lib(&f);
    keys_t k;
    keys_make(&k, c); /* the daemon's only model */
    uint64_t sid =
        open_session(c, k.kb, 3, "gpt2", "ckks", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(f.model, &m, NULL, 0));
    ck_assert_int_eq(ts_llm_model_config(m)->arch, TS_LLM_ARCH_GPT2);
    ts_llm_state_t *st = NULL;
    ck_assert_ts_ok(ts_llm_state_new(m, &st));
    /* position 0 public (BOS in the clear: the plaintext model, its K/V and
     * logits encrypted under the client's public key), then two encrypted
     * positions that read that cache: every logit vs ts_llm_forward */
    static const int toks[3] = {1, 10, 20};
    for (uint32_t pos = 0; pos < 3; pos++) {
        size_t n = 0;
        uint8_t *t = pos ? token_ct(&k, toks[pos], &n) : NULL;
        Tessera__DecodeStep ds;
        Tessera__Envelope req, *rep = NULL;
        step_req(&req, &ds, sid, pos, t, n);
        ds.token_public = pos == 0;
        ds.public_token = pos == 0 ? (uint32_t)toks[0] : 0;
        ck_assert_msg(ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &rep) == TS_OK,
                      "step: %s", c->err);
        const Tessera__DecodeResult *dr = rep->decode_result;
        ck_assert(dr->token_public == (pos == 0));
        ck_assert_uint_eq(dr->bootstraps, 0);
        ts_ckks_ciphertext_t *lg = NULL;
        char why[256];
        ck_assert_ts_ok(ts_wire_ct_decode(k.p, k.pid, dr->logits.data, dr->logits.len, 1, &lg, why,
                                          sizeof why));
        ck_assert_uint_eq(dr->level, ts_ckks_ciphertext_level(lg));
        float got[TINY_VOCAB];
        ck_assert_ts_ok(ts_llm_enc_decrypt_vec(k.ecd, k.sk, lg, got, TINY_VOCAB));
        const float *ref = NULL;
        ck_assert_ts_ok(ts_llm_forward(m, st, toks[pos], (int)pos, &ref));
        double mx = 0;
        for (int j = 0; j < TINY_VOCAB; j++)
            mx = fmax(mx, fabs((double)got[j] - ref[j]));
        int a = ts_llm_argmax(got, TINY_VOCAB), b = ts_llm_argmax(ref, TINY_VOCAB);
        printf("gpt2 over TLS pos %u%s: logits within %.2e, argmax %d (plaintext %d), server %.0f "
               "ms\n",
               pos, pos ? "" : " (public)", mx, a, b, dr->server_ms);
        ck_assert(mx < 5e-2);
        ck_assert_int_eq(a, b);
        ts_ckks_ciphertext_free(lg);
        ts_net_envelope_free(rep);
        ts_free(t);
    }
    ts_llm_state_free(st);
    ts_llm_model_free(m);
    keys_clear(&k);
    ts_client_close(c);
    dfx_stop(&f);
}
END_TEST

/* One public position of session sid (cache_only: no logits); the reply or NULL
 * after an Error of code `want`, its message containing text. */
static void budget_step(ts_client_t *c, uint64_t sid, uint32_t pos, bool cache_only,
                        Tessera__ErrorCode want, const char *text)
{
    Tessera__DecodeStep ds;
    Tessera__Envelope req, *rep = NULL;
    step_req(&req, &ds, sid, pos, NULL, 0);
    ds.token_public = true;
    ds.public_token = 1 + pos;
    ds.cache_only = cache_only;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &rep);
    if (want == TESSERA__ERROR_CODE__ERROR_UNSPECIFIED) {
        ck_assert_msg(st == TS_OK, "step %u: %s", pos, c->err);
        ck_assert(rep->decode_result->cache_only == cache_only);
        ck_assert(cache_only == (rep->decode_result->logits.len == 0));
    } else {
        ck_assert_int_ne(st, TS_OK);
        ck_assert_int_eq(rep->body_case, TESSERA__ENVELOPE__BODY_ERROR);
        printf("  step %u refused (%d): %s\n", pos, rep->error->code, rep->error->message);
        ck_assert_int_eq(rep->error->code, want);
        ck_assert_msg(strstr(rep->error->message, text), "\"%s\" lacks \"%s\"", rep->error->message,
                      text);
    }
    ts_net_envelope_free(rep);
}

/* ModelInfo's reply count; the state file's count. */
static uint64_t budget_info(ts_client_t *c, const char *budget, bool persistent)
{
    Tessera__Envelope *rep = model_info_call(c, NULL);
    const Tessera__ModelInfo *mi = rep->model_info;
    ck_assert_str_eq(mi->sanitize_mode, "renyi");
    ck_assert_str_eq(mi->sanitize_budget, budget);
    ck_assert(mi->sanitize_persistent == persistent);
    uint64_t n = mi->sanitize_replies;
    ts_net_envelope_free(rep);
    return n;
}

static uint64_t state_replies(const char *path)
{
    char line[300];
    FILE *sf = fopen(path, "r");
    ck_assert_ptr_nonnull(sf);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, sf));
    fclose(sf);
    const char *r = strstr(line, " replies=");
    ck_assert_ptr_nonnull(r);
    return strtoull(r + 9, NULL, 10);
}

static bool log_has(const net_daemon_t *d, const char *text)
{
    char path[700], ll[2048];
    snprintf(path, sizeof path, "%s/tesserad.log", d->dir);
    FILE *lf = fopen(path, "r");
    ck_assert_ptr_nonnull(lf);
    bool found = false;
    while (!found && fgets(ll, sizeof ll, lf))
        found = strstr(ll, text) != NULL;
    fclose(lf);
    return found;
}

/*
 * The reply count's file (server/san_state.c) without a daemon: the count
 * is on disk after each take; the lock holds across the renames each take
 * makes (a second holder is refused after the first has written); the
 * limit refuses without counting; a new holder reads the count, a check
 * reads it beside a holder, other weights are refused.
 */
START_TEST(test_san_state)
{
    char dir[512], path[700], why[600] = "";
    net_tmpdir(dir, sizeof dir, "san-state");
    snprintf(path, sizeof path, "%s/m.state", dir);
    uint8_t sha[TS_SHA256_BYTES] = {1, 2, 3}, other[TS_SHA256_BYTES] = {9};
    ts_san_state_t *a = NULL, *b = NULL;
    ck_assert_msg(ts_san_state_open(path, sha, &a, why, sizeof why) == TS_OK, "%s", why);
    ck_assert_uint_eq(ts_san_state_replies(a), 0);
    ck_assert_uint_eq(state_replies(path), 0);
    uint64_t n = 0;
    ck_assert_ts_ok(ts_san_state_take(a, 0, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(state_replies(path), 1);
    ck_assert_int_eq(ts_san_state_open(path, sha, &b, why, sizeof why), TS_ECONFIG);
    ck_assert_msg(strstr(why, "locked by another holder"), "%s", why);
    ck_assert_ptr_null(b);
    ck_assert_ts_ok(ts_san_state_take(a, 2, &n));
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ts_san_state_take(a, 2, &n), TS_ELIMIT);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(state_replies(path), 2);
    ck_assert_msg(ts_san_state_check(path, sha, &n, why, sizeof why) == TS_OK, "%s", why);
    ck_assert_uint_eq(n, 2);
    ts_san_state_free(a);
    ck_assert_int_eq(ts_san_state_open(path, other, &b, why, sizeof why), TS_ECONFIG);
    ck_assert_msg(strstr(why, "other weights"), "%s", why);
    ck_assert_int_eq(ts_san_state_check(path, other, &n, why, sizeof why), TS_ECONFIG);
    ck_assert_msg(ts_san_state_open(path, sha, &b, why, sizeof why) == TS_OK, "%s", why);
    ck_assert_uint_eq(ts_san_state_replies(b), 2);
    ts_san_state_free(b);
    net_rm_rf(dir);
}
END_TEST

/* tessera generate (2 tokens of "ab") against f's daemon, which refuses it
 * (exit 1); its error output in msg. */
static void budget_generate(const dfx_t *f, char *msg, size_t size)
{
    char cmd[3000], errp[800];
    snprintf(errp, sizeof errp, "%s/budget.err", f->d.dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera generate --server 127.0.0.1:%d --ca %s/ca.crt --model tinyr "
             "--prompt ab --max-tokens 2 --temperature 0 --tokenizer %s --insecure-params "
             ">/dev/null 2>%s",
             ts_test_build_dir(), f->d.port, f->certs, f->tok, errp);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), TS_EXIT_FAIL);
    FILE *e = fopen(errp, "r");
    ck_assert_ptr_nonnull(e);
    msg[fread(msg, 1, size - 1, e)] = 0;
    fclose(e);
    printf("  tessera generate: %s", msg);
}

/*
 * The Renyi mode's reply budget over TLS (a model whose bound covers 2
 * replies, sanitize_budget: refuse, a state file): two public positions
 * with logits are served, the third refused with ERROR_LIMIT while a
 * cache-only one (no logits) still is; the count is on disk before each
 * reply and survives a restart (the first reply of a new daemon is
 * refused); with sanitize_budget: warn the daemon serves on and keeps
 * counting. ModelInfo says the count, the budget and that it persists.
 */
START_TEST(test_decode_reply_budget)
{
    dfx_t f;
    dfx_dirs(&f, "dec-budget");
    snprintf(f.model, sizeof f.model, "%s/tiny.bin", f.certs);
    snprintf(f.tok, sizeof f.tok, "%s/tiny_tok.bin", f.certs);
    ck_assert_int_eq(tiny_model_write(f.model), 0);
    ck_assert_int_eq(tiny_tokenizer_write(f.tok), 0);
    char state[700], sections[800];
    snprintf(state, sizeof state, "%s/tinyr.state", f.certs);
    snprintf(sections, sizeof sections, "models_dir: %s\n", f.models);
    const char *budgets[3] = {"refuse", "refuse", "warn"};
    for (int run = 0; run < 3; run++) {
        write_yaml(f.models, "tinyr.yaml",
                   "path: %s\nparams: test-llm-tiny-boot\napprox: configs/approx/tiny-test.yaml\n"
                   "bootstrap: true\nmax_context: 8\nmax_sessions: 2\nsanitize_noise_l2_log2: 20\n"
                   "sanitize_queries_log2: 1\nsanitize_state: %s\nsanitize_budget: %s\n",
                   f.model, state, budgets[run]);
        net_daemon_start(&f.d, f.certs, NULL, NULL, sections, true);
        ts_client_t *c = connect_lib(&f);
        keys_t k;
        keys_make(&k, c);
        uint64_t sid =
            open_session(c, k.kb, 3, "tinyr", "ckks", TESSERA__ERROR_CODE__ERROR_UNSPECIFIED, NULL);
        const Tessera__ErrorCode ok = TESSERA__ERROR_CODE__ERROR_UNSPECIFIED,
                                 lim = TESSERA__ERROR_CODE__ERROR_LIMIT;
        const char *spent = "sanitized replies its Renyi bound covers";
        char msg[4000];
        if (run == 0) {
            ck_assert_uint_eq(budget_info(c, "refuse", true), 0);
            budget_step(c, sid, 0, false, ok, NULL);
            ck_assert_uint_eq(state_replies(state), 1);
            /* tessera generate warns that one reply is left, gets its
             * first token and stops at the second with the server's sentence */
            budget_generate(&f, msg, sizeof msg);
            ck_assert_ptr_nonnull(strstr(msg, "serves 1 more sanitized replies"));
            ck_assert_ptr_nonnull(strstr(msg, spent));
            ck_assert_uint_eq(state_replies(state), 2);
            budget_step(c, sid, 1, false, lim, spent);
            ck_assert_uint_eq(state_replies(state), 2);
            budget_step(c, sid, 1, true, ok, NULL); /* no logits: not counted */
            ck_assert_uint_eq(budget_info(c, "refuse", true), 2);
        } else if (run == 1) {
            /* after a restart: the count on disk, so no reply */
            ck_assert_uint_eq(budget_info(c, "refuse", true), 2);
            budget_step(c, sid, 0, false, lim, spent);
            ck_assert(log_has(&f.d, "event=sanitize_state model=tinyr state="));
            /* tessera generate stops before making keys: nothing left */
            budget_generate(&f, msg, sizeof msg);
            ck_assert_ptr_nonnull(strstr(msg, "model tinyr's server has sent the 2 sanitized "
                                              "replies its Renyi bound covers (2^1.0) and refuses "
                                              "more"));
            ck_assert_ptr_null(strstr(msg, "keys generated")); /* before any key */
            ck_assert(log_has(&f.d, " replies=2 queries_log2=1.0 budget=refuse"));
        } else {
            budget_step(c, sid, 0, false, ok, NULL);
            budget_step(c, sid, 1, false, ok, NULL);
            ck_assert_uint_eq(state_replies(state), 4);
            ck_assert_uint_eq(budget_info(c, "warn", true), 4);
            ck_assert(log_has(&f.d, "event=sanitize_budget model=tinyr replies=4 "));
        }
        keys_clear(&k);
        ts_client_close(c);
        ck_assert_int_eq(net_daemon_stop(&f.d), 0);
        if (run < 2)
            ck_assert(log_has(&f.d, "event=sanitize_refused model=tinyr replies=2"));
        net_daemon_cleanup(&f.d);
    }
    net_rm_rf(f.certs);
}
END_TEST

/* Model files: every mistake stops loading with "file: reason". */
static void registry_expect(const char *dir, const char *yaml, const char *name, ts_status_t want,
                            const char *text)
{
    char path[700], err[600] = "";
    write_yaml(dir, name, "%s", yaml);
    ts_dec_registry_t *r = NULL;
    ts_status_t st = ts_dec_registry_load(dir, "configs/params", NULL, TS_DEC_LOAD_INSECURE, &r,
                                          err, sizeof err);
    printf("  %s: %s\n", name, err[0] ? err : ts_status_name(st));
    ck_assert_int_eq(st, want);
    if (text)
        ck_assert_msg(strstr(err, text), "\"%s\" lacks \"%s\"", err, text);
    if (st == TS_OK) {
        ck_assert_uint_eq(ts_dec_registry_count(r), 1);
        ck_assert_ptr_nonnull(ts_dec_find(r, NULL));
        ck_assert_ptr_null(ts_dec_find(r, "other"));
    }
    ts_dec_registry_free(r);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

/* A cost table where TFHE costs ~nothing (dear: where a conversion costs 2^50 ns). */
static ts_status_t tfhe_priced_save(const char *path, bool dear)
{
    ts_sched_costs_t tab;
    ts_sched_costs_default(&tab);
    if (dear) {
        tab.roundtrip_ns = INT64_C(1) << 50;
    } else {
        tab.roundtrip_ns = tab.pbs_value_ns = tab.pbs_ns = tab.homcomp_ns = 1;
        for (size_t i = 0; i < tab.n_lut_value; i++)
            tab.lut_value_ns[i] = 1;
    }
    return ts_sched_costs_save(&tab, path);
}

/*
 * Loads the one model file `yaml` of dir (policies ckks, hybrid) with the
 * daemon's costs_dir and tells whether its hybrid places anything in TFHE;
 * when not, the hybrid needs the ckks policy's rotation keys.
 */
static bool hybrid_uses_tfhe(const char *dir, const char *yaml, const char *costs_dir)
{
    char path[800], err[600] = "";
    write_yaml(dir, "tiny.yaml", "%s", yaml);
    ts_dec_registry_t *r = NULL;
    ck_assert_msg(ts_dec_registry_load(dir, "configs/params", costs_dir, TS_DEC_LOAD_INSECURE, &r,
                                       err, sizeof err) == TS_OK,
                  "%s", err);
    Tessera__ModelInfo mi = TESSERA__MODEL_INFO__INIT;
    ts_dec_model_info(ts_dec_find(r, "tiny"), &mi);
    ck_assert_uint_eq(mi.n_policy_info, 2);
    ck_assert_str_eq(mi.policy_info[1]->policy, "hybrid");
    bool tfhe = mi.policy_info[1]->tfhe;
    if (!tfhe)
        ck_assert_uint_eq(mi.policy_info[1]->n_rotation_steps, mi.policy_info[0]->n_rotation_steps);
    /* PolicyInfo.tfhe_kinds: "none" exactly when nothing is in TFHE */
    ck_assert_str_eq(mi.policy_info[0]->tfhe_kinds, "none");
    ck_assert_int_eq(strcmp(mi.policy_info[1]->tfhe_kinds, "none") != 0, tfhe);
    ts_dec_registry_free(r);
    snprintf(path, sizeof path, "%s/tiny.yaml", dir);
    unlink(path);
    return tfhe;
}

START_TEST(test_decode_model_files)
{
    char dir[512], model[700], yaml[2400];
    net_tmpdir(dir, sizeof dir, "dec-models");
    snprintf(model, sizeof model, "%s/tiny.bin.model", dir);
    ck_assert_int_eq(tiny_model_write(model), 0);
    const char *base = "params: test-llm-tiny\napprox: configs/approx/tiny-test.yaml\n";
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\n", model, base);
    registry_expect(dir, yaml, "tiny.yaml", TS_OK, NULL);
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\ncolour: blue\n", model, base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "tiny.yaml:");
    snprintf(yaml, sizeof yaml, "%ssanitize_lambda: 20\n", base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "path");
    snprintf(yaml, sizeof yaml, "path: %s/none.bin\n%s", dir, base);
    registry_expect(dir, yaml, "tiny.yaml", TS_EIO, "none.bin");
    snprintf(yaml, sizeof yaml, "path: %s\nparams: no-such-preset\n", model);
    registry_expect(dir, yaml, "tiny.yaml", TS_EPARAMS, "no-such-preset");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 30\n", model, base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "bits of logit precision");
    /* draft_text: a readable, non-empty UTF-8 text without NUL bytes, at most 8 MiB */
    {
        static const struct {
            const char *bytes;
            size_t n;
            const char *want; /* NULL: loads */
        } dt[] = {{"a b\nc d\n", 8, NULL},
                  {"", 0, "0 bytes (1 to 8388608)"},
                  {"a\0b\n", 4, "not UTF-8 text"},
                  {"caf\xc3\n", 5, "not UTF-8 text"},
                  {"\xc0\xaf\n", 3, "not UTF-8 text"},
                  {"\xed\xa0\x80\n", 4, "not UTF-8 text"},
                  {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82\n", 15, NULL}};
        char dpath[800];
        snprintf(dpath, sizeof dpath, "%s/draft.txt", dir);
        for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++) {
            FILE *d = fopen(dpath, "wb");
            ck_assert_ptr_nonnull(d);
            ck_assert_uint_eq(fwrite(dt[i].bytes, 1, dt[i].n, d), dt[i].n);
            ck_assert_int_eq(fclose(d), 0);
            snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\ndraft_text: %s\n", model,
                     base, dpath);
            registry_expect(dir, yaml, "tiny.yaml", dt[i].want ? TS_ECONFIG : TS_OK, dt[i].want);
        }
        snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\ndraft_text: %s\n", model,
                 base, dir);
        registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "not a regular file");
        unlink(dpath);
        snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\ndraft_text: %s\n", model,
                 base, dpath);
        registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "draft.txt: No such file");
        /* one byte over the limit */
        FILE *d = fopen(dpath, "wb");
        ck_assert_ptr_nonnull(d);
        ck_assert_int_eq(ftruncate(fileno(d), (off_t)(8 << 20) + 1), 0);
        ck_assert_int_eq(fclose(d), 0);
        registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "8388609 bytes");
        unlink(dpath);
    }
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 60\n", model, base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "does not fit");
    /* the Renyi mode: a preset of fewer than N/2 slots (test-llm-tiny), a
     * noise bound whose flood does not fit q_0, one that leaves too little
     * precision, a query count outside the key's range */
    const char *full = "params: test-llm-tiny-boot\napprox: configs/approx/tiny-test.yaml\n";
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_noise_l2_log2: 20\n", model, base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "needs params of N/2 slots");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_noise_l2_log2: 50\n", model, full);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "does not fit");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_noise_l2_log2: 30\n", model, full);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "sanitize_queries_log2 12 leaves");
    snprintf(yaml, sizeof yaml,
             "path: %s\n%ssanitize_noise_l2_log2: 20\nsanitize_queries_log2: 41\n", model, full);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "sanitize_queries_log2");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_noise_l2_log2: 20\n", model, full);
    registry_expect(dir, yaml, "tiny.yaml", TS_OK, NULL);
    /* the Renyi mode's reply budget: sanitize_budget warn|refuse; both keys
     * need the Renyi mode, refuse needs a state file; the state file is one
     * line of these weights, locked while a registry holds it */
    char state[800], rd[1200];
    snprintf(state, sizeof state, "%s/tiny.state", dir);
    snprintf(rd, sizeof rd, "path: %s\n%ssanitize_noise_l2_log2: 20\n", model, full);
    snprintf(yaml, sizeof yaml, "%ssanitize_budget: maybe\n", rd);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG,
                    "tiny.yaml:5:18: 'sanitize_budget' must be");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\nsanitize_state: %s\n", model,
             base, state);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "the uniform mode has no reply budget");
    snprintf(yaml, sizeof yaml, "%ssanitize_budget: refuse\n", rd);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "refuse needs sanitize_state");
    snprintf(yaml, sizeof yaml, "%ssanitize_budget: refuse\nsanitize_state: %s\n", rd, state);
    registry_expect(dir, yaml, "tiny.yaml", TS_OK, NULL); /* creates it at 0 */
    char line[300];
    FILE *sf = fopen(state, "r");
    ck_assert_ptr_nonnull(sf);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, sf));
    fclose(sf);
    ck_assert_msg(strncmp(line, "tessera-sanitize-state 1 model=", 31) == 0, "%s", line);
    ck_assert_msg(strstr(line, " replies=0\n") != NULL, "%s", line);
    /* the count of other weights (a digit of the hash changed) is refused, not reset */
    char other[300];
    memcpy(other, line, sizeof other);
    other[31] = other[31] == 'a' ? 'b' : 'a';
    sf = fopen(state, "w");
    fputs(other, sf);
    fclose(sf);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "counts the replies of other weights");
    sf = fopen(state, "w");
    fputs("tessera-sanitize-state 1 model=12 replies=3\n", sf);
    fclose(sf);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "tiny.state:1: not a sanitize state");
    sf = fopen(state, "w");
    fprintf(sf, "%sreplies=4\n", line);
    fclose(sf);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "tiny.state:2: one line expected");
    sf = fopen(state, "w");
    fputs(line, sf);
    fclose(sf);
    /* two holders of one count: the second is refused while the first holds it */
    write_yaml(dir, "tiny.yaml", "%s", yaml);
    ts_dec_registry_t *held = NULL;
    char herr[600] = "";
    ck_assert_msg(ts_dec_registry_load(dir, "configs/params", NULL, TS_DEC_LOAD_INSECURE, &held,
                                       herr, sizeof herr) == TS_OK,
                  "%s", herr);
    char tdir[700];
    snprintf(tdir, sizeof tdir, "%s/second", dir);
    ck_assert_int_eq(mkdir(tdir, 0700), 0);
    registry_expect(tdir, yaml, "tiny.yaml", TS_ECONFIG, "locked by another holder");
    /* tesserad --check-config reads the held file without locking it */
    write_yaml(tdir, "tiny.yaml", "%s", yaml);
    ts_dec_registry_t *chk = NULL;
    ck_assert_msg(ts_dec_registry_load(tdir, "configs/params", NULL,
                                       TS_DEC_LOAD_INSECURE | TS_DEC_LOAD_CHECK, &chk, herr,
                                       sizeof herr) == TS_OK,
                  "%s", herr);
    ts_dec_registry_free(chk);
    ts_dec_registry_free(held);
    /* and neither creates a missing one nor accepts a broken one */
    unlink(state);
    ck_assert_ts_ok(ts_dec_registry_load(tdir, "configs/params", NULL,
                                         TS_DEC_LOAD_INSECURE | TS_DEC_LOAD_CHECK, &chk, herr,
                                         sizeof herr));
    ts_dec_registry_free(chk);
    ck_assert_int_eq(access(state, F_OK), -1);
    FILE *bf = fopen(state, "w");
    fputs("replies=0\n", bf);
    fclose(bf);
    ck_assert_int_eq(ts_dec_registry_load(tdir, "configs/params", NULL,
                                          TS_DEC_LOAD_INSECURE | TS_DEC_LOAD_CHECK, &chk, herr,
                                          sizeof herr),
                     TS_ECONFIG);
    ck_assert_msg(strstr(herr, "tiny.state:1: not a sanitize state"), "%s", herr);
    unlink(state);
    registry_expect(tdir, yaml, "tiny.yaml", TS_OK, NULL);
    rmdir(tdir);
    snprintf(herr, sizeof herr, "%s/tiny.yaml", dir);
    unlink(herr);
    unlink(state);
    /* prefill_lanes: a power of two, with bootstrapping, policy ckks only */
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\nprefill_lanes: 4\n", model, base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "with bootstrap: true");
    snprintf(yaml, sizeof yaml,
             "path: %s\nparams: test-llm-tiny-boot\nbootstrap: true\nsanitize_lambda: 20\n"
             "prefill_lanes: 3\n",
             model);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "a power of two");
    snprintf(yaml, sizeof yaml,
             "path: %s\nparams: test-llm-tiny-boot\nbootstrap: true\nsanitize_lambda: 20\n"
             "prefill_lanes: 2\npolicies: ckks, hybrid\n",
             model);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "policy ckks only");
    snprintf(yaml, sizeof yaml, "path: %s\nparams: test-n10\n", model);
    /* the default lambda (40) leaves nothing at a 40-bit scale */
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "sanitize_lambda 40 leaves");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\n", model, base);
    registry_expect(dir, yaml, "Tiny.yaml", TS_ECONFIG, "model names");
    /* policies: unknown names, repeats, hybrid without bootstrapping */
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\npolicies: ckks, fast\n", model,
             base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "unknown policy \"fast\"");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\npolicies: ckks ckks\n", model,
             base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "named twice");
    snprintf(yaml, sizeof yaml, "path: %s\n%ssanitize_lambda: 20\npolicies: ckks, hybrid\n", model,
             base);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "hybrid needs bootstrap: true");
    /* costs: a missing or broken table; with one, the hybrid policy is the
     * cheapest assignment under it: all CKKS when TFHE is priced out (the
     * hybrid then needs no conversion keys), TFHE when it is nearly free */
    const char *boot = "params: test-llm-tiny-boot\napprox: configs/approx/tiny-test.yaml\n"
                       "bootstrap: true\nmax_context: 4\nsanitize_lambda: 20\n"
                       "policies: ckks, hybrid\n";
    char costs[800], tables[700];
    snprintf(tables, sizeof tables, "%s/tables", dir); /* not a model file of dir */
    ck_assert_int_eq(mkdir(tables, 0700), 0);
    snprintf(costs, sizeof costs, "%s/costs.yaml", tables);
    snprintf(yaml, sizeof yaml, "path: %s\n%scosts: %s\n", model, boot, costs);
    registry_expect(dir, yaml, "tiny.yaml", TS_EIO, "costs");
    FILE *cf = fopen(costs, "w");
    ck_assert_ptr_nonnull(cf);
    fputs("format: 1\nckks:\n  max_level: banana\n", cf);
    fclose(cf);
    registry_expect(dir, yaml, "tiny.yaml", TS_ECONFIG, "costs.yaml:3");
    /* the shipped-table name the daemon looks for in its costs_dir: its
     * engines' backend's (gpu-PARAMS.yaml where the suite runs on a GPU) */
    bool on_gpu = ts_backend_is_gpu(ts_backend_default());
    char shipped[800], foreign[800];
    snprintf(shipped, sizeof shipped, "%s/%s-test-llm-tiny-boot.yaml", tables,
             on_gpu ? "gpu" : "cpu");
    snprintf(foreign, sizeof foreign, "%s/%s-test-llm-tiny-boot.yaml", tables,
             on_gpu ? "cpu" : "gpu");
    char plain[1200]; /* no costs key */
    snprintf(plain, sizeof plain, "path: %s\n%s", model, boot);
    for (int dear = 0; dear < 2; dear++) {
        /* the key's table prices TFHE out (dear) or nearly free; the shipped
         * one the other way */
        ck_assert_ts_ok(tfhe_priced_save(costs, dear));
        ck_assert_ts_ok(tfhe_priced_save(shipped, !dear));
        ck_assert(hybrid_uses_tfhe(dir, yaml, NULL) == !dear);
        ck_assert(hybrid_uses_tfhe(dir, yaml, tables) == !dear); /* the key wins */
        /* without the key: costs_dir/{cpu,gpu}-PARAMS.yaml when there is one */
        ck_assert(hybrid_uses_tfhe(dir, plain, tables) == dear);
        unlink(shipped);
    }
    /* no table (none in costs_dir, no costs_dir, `costs: none`): the default
     * assignment, 1/x and 1/sqrt(x) in TFHE */
    ck_assert(hybrid_uses_tfhe(dir, plain, tables));
    ck_assert(hybrid_uses_tfhe(dir, plain, NULL));
    /* the other backend's table is never taken (a CPU's on a GPU, a GPU's
     * on a CPU): the default assignment */
    ck_assert_ts_ok(tfhe_priced_save(foreign, true));
    ck_assert(hybrid_uses_tfhe(dir, plain, tables));
    unlink(foreign);
    ck_assert_ts_ok(tfhe_priced_save(shipped, true));
    char none[1300];
    snprintf(none, sizeof none, "%scosts: none\n", plain);
    ck_assert(hybrid_uses_tfhe(dir, none, tables));
    ck_assert(!hybrid_uses_tfhe(dir, plain, tables));
    unlink(shipped);
    unlink(costs);
    ts_dec_registry_t *r = NULL;
    char err[600] = "";
    ck_assert_int_eq(ts_dec_registry_load("/nonexistent/models", "configs/params", NULL,
                                          TS_DEC_LOAD_INSECURE, &r, err, sizeof err),
                     TS_EIO);
    ck_assert_ts_ok(ts_dec_registry_load("", "configs/params", NULL, TS_DEC_LOAD_INSECURE, &r, err,
                                         sizeof err));
    ck_assert_uint_eq(ts_dec_registry_count(r), 0);
    ts_dec_registry_free(r);
    net_rm_rf(dir);
}
END_TEST

TS_TEST_SUITE(net_decode)
{
    Suite *s = suite_create("net_decode");
    TCase *tc = ts_tcase("decode", 300);
    tcase_add_test(tc, test_decode_model_files);
    tcase_add_test(tc, test_generate_greedy);
    tcase_add_test(tc, test_generate_key_quota);
    tcase_add_test(tc, test_generate_prefill);
    tcase_add_test(tc, test_generate_samples);
    tcase_add_test(tc, test_generate_draft);
    tcase_add_test(tc, test_decode_hostile);
    tcase_add_test(tc, test_decode_concurrent);
    tcase_add_test(tc, test_decode_gpt2);
    tcase_add_test(tc, test_decode_reply_budget);
    tcase_add_test(tc, test_san_state);
    suite_add_tcase(s, tc);
    TCase *th = ts_tcase("decode_policies", 600);
    tcase_add_test(th, test_decode_policies);
    tcase_add_test(th, test_decode_dense_encap);
    suite_add_tcase(s, th);
    TCase *ts = ts_tcase("decode_slow", 3600);
    tcase_add_test(ts, test_generate_aidreams_policy);
    suite_add_tcase(s, ts);
    return s;
}

/*
 * tessera generate: private text generation against tesserad's decode
 * service (issue 10). Keys are made here from the OS CSPRNG and uploaded
 * (content-addressed, resumable); the prompt is tokenized here; every
 * position goes to the server as an encrypted one-hot vector and comes back
 * as sanitized encrypted logits, which are decrypted and sampled here. The
 * server never sees a token, an activation or a logit.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/llm_cli.h"
#include "core/convert/convert.h"
#include "core/llm/llm.h"
#include "server/ckks_wire.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera generate --server HOST:PORT --model NAME --prompt TEXT [options]\n\n"
            "Generates text with a model served by tesserad without revealing the prompt or\n"
            "the output to the server: keys are generated here from the OS CSPRNG and\n"
            "uploaded, the prompt is tokenized here, each position is sent as an encrypted\n"
            "one-hot vector (BOS and a --system text in the clear, see below) and the\n"
            "sanitized encrypted logits are decrypted and sampled here.\n"
            "Tokens are printed as they are decrypted; on a terminal stderr shows progress\n"
            "(each step's elapsed time; when stdout is that terminal too, the status line\n"
            "shows the latest text and the whole text is printed at the end).\n\n"
            "  -m, --model NAME        model served by the daemon (default: its first)\n"
            "  -p, --prompt TEXT       the prompt (BOS is added)\n"
            "  -n, --max-tokens N      tokens to generate (default 16; capped by the context)\n"
            "  -t, --temperature T     0 = greedy (default 0)\n"
            "      --top-p P           nucleus sampling (default off)\n"
            "      --seed S            sampling seed (default 1; sample k draws with S + k)\n"
            "      --samples N         N independent continuations of the prompt, decoded\n"
            "                          together: a model with lanes (ModelInfo.lanes >= N, the\n"
            "                          daemon's prefill_lanes) runs sequence k in lane k, so a\n"
            "                          step costs the same for 1 or N (default 1); the server\n"
            "                          cannot tell N; printed one after another at the end\n"
            "      --draft FILE        speculative decoding with a PUBLIC draft model (a\n"
            "                          llama2.c or GGUF file of the same vocabulary, run here in\n"
            "                          plaintext): each step runs the next token and the\n"
            "                          draft's guesses for the ones after it in the lanes of a\n"
            "                          model with lanes (ModelInfo.lanes), and keeps the tokens\n"
            "                          up to the first guess the sampler does not draw: the\n"
            "                          same tokens as without it, up to lanes per step; the\n"
            "                          server learns how many guesses each step kept\n"
            "      --draft-lookup      speculative decoding with an n-gram draft (prompt lookup):\n"
            "                          the guesses continue the last 2-4 tokens as they went on\n"
            "                          before in the text so far (and in --draft-text), the\n"
            "                          longest context first, its most frequent continuation;\n"
            "                          the last token alone where it was seen at least twice\n"
            "                          and went on one way 35%% of the time or more; where none\n"
            "                          guesses the step runs one position (no\n"
            "                          speculative pass); with --draft FILE too, the model\n"
            "                          guesses on where the n-gram draft stops; a pass fills\n"
            "                          every lane (the last guess repeated); needs a model\n"
            "                          with lanes, like --draft; the server learns at which\n"
            "                          steps the draft had no guess\n"
            "      --draft-text FILE   count the n-grams of FILE's lines too (each a sequence\n"
            "                          after BOS: your earlier generations, e.g. kept by\n"
            "                          appending stdout to FILE, or public text of the domain;\n"
            "                          it stays on this machine); implies --draft-lookup; pays\n"
            "                          off for greedy decoding (docs/benchmarks.md)\n"
            "      --draft-published   count the n-grams of the draft text the model's host\n"
            "                          publishes (ModelInfo.draft_text_bytes; fetched once, its\n"
            "                          SHA-256 checked): public text such as the model's own\n"
            "                          sample generations, which gives first-time users the\n"
            "                          guesses a history would; implies --draft-lookup. The\n"
            "                          server knows that text, so the guesses each step kept\n"
            "                          tell it more about yours (docs/SECURITY.md)\n"
            "      --policy P          ckks | hybrid | tfhe (default ckks; hybrid and tfhe also\n"
            "                          make and upload the CKKS-TFHE conversion keys and the\n"
            "                          SlotToCoeff-first bootstrapping keys when the server's\n"
            "                          engine for the policy uses TFHE: a hybrid placed all in\n"
            "                          CKKS under the server's cost table needs none; the model\n"
            "                          must serve the policy, see its ModelInfo)\n"
            "      --full-steps        a full step (logits) at every prompt position; by default\n"
            "                          the prompt's positions before its last are cache-only\n"
            "                          steps (the server fills its KV cache and returns no\n"
            "                          logits: ~3/4 of a step), which tells the server how\n"
            "                          many of the positions are the prompt's; --full-steps\n"
            "                          keeps that hidden (docs/SECURITY.md); a model with lanes\n"
            "                          (ModelInfo.lanes, the daemon's prefill_lanes) takes the\n"
            "                          encrypted prompt positions in prefills of up to that\n"
            "                          many per step (one pass; --full-steps: one per step)\n"
            "      --system TEXT       a PUBLIC system text before the prompt (BOS, then its\n"
            "                          tokens, then the prompt's): sent in the clear and run on\n"
            "                          the server's plaintext model (no encrypted step for it);\n"
            "                          never put anything private there\n"
            "      --encrypt-bos       send BOS (position 0) encrypted like every token; by\n"
            "                          default, when the server accepts public positions\n"
            "                          (ModelInfo.public_prefix), BOS goes in the clear: every\n"
            "                          session starts with it, so the server learns nothing,\n"
            "                          and runs it on the plaintext model (no encrypted step)\n"
            "      --tokenizer PATH    tokenizer (default models/tok512.bin)\n"
            "  -k, --keys DIR          use the secret key of DIR (tessera keygen, same preset as\n"
            "                          the model) instead of a fresh one; evaluation keys are\n"
            "                          derived from it with fresh randomness\n"
            "      --params-dir D      preset folder (default configs/params)\n"
            "      --insecure-params   allow presets marked insecure (tests only)\n"
            "      (--timeout applies to connecting; replies are awaited for at least an hour)\n"
            "      --json              one JSON object per step on stdout: pos (the step's\n"
            "                          last position), positions (how many it ran), id, text,\n"
            "                          prompt, policy, tfhe_kinds (what the server evaluates\n"
            "                          in TFHE), latency_ms, server_ms, stages, bootstraps,\n"
            "                          precision_bits (of the flooding), logit_margin,\n"
            "                          cache_only (no logits: the fields after bootstraps "
            "absent);\n"
            "                          with --samples N > 1 also samples: N objects {id, text,\n"
            "                          logit_margin, done} (the line's own id, text and\n"
            "                          logit_margin are sample 0's; done: the sample ended with\n"
            "                          EOS at an earlier step, its id -1); with --draft a\n"
            "                          line per token, lane on a speculative step's (the lane\n"
            "                          that gave its logits; latency, server_ms and stages on\n"
            "                          lane 0's line, 0 on the others; there also draft: ngram,\n"
            "                          model or ngram+model, guesses: how many lanes the pass\n"
            "                          filled, drafted: how many of them the draft made, the\n"
            "                          others its last guess repeated)\n\n%s\n%s",
            ts_cli_conn_help, ts_cli_exit_help);
}

static double ms_since(uint64_t t0)
{
    return (double)(ts_now_ns() - t0) / 1e6;
}

/* The last few characters of text (n bytes) for a status line: from a UTF-8
 * character boundary, control characters as spaces. */
static void text_tail(const char *text, size_t n, char *out, size_t cap)
{
    size_t keep = cap - 1 < 32 ? cap - 1 : 32, from = n > keep ? n - keep : 0;
    while (from < n && ((unsigned char)text[from] & 0xC0) == 0x80)
        from++;
    size_t j = 0;
    for (size_t i = from; i < n && j + 1 < cap; i++)
        out[j++] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
    out[j] = 0;
}

/* On a terminal, while a step runs on the server (minutes at 128 bits): the
 * elapsed time once a second, against the last step of the same kind. */
typedef struct ticker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, running;
    uint64_t t0;
    char what[64], tail[48]; /* the position; the generated text's tail (may be empty) */
    double last_ms;          /* < 0: none yet */
} ticker_t;

static void *ticker_main(void *arg)
{
    ticker_t *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->stop)
            break;
        double el = ms_since(t->t0) / 1e3;
        if (t->last_ms >= 0)
            fprintf(stderr, "\r\033[K[%s] %.0f s on the server (the last one took %.0f s)%s%s",
                    t->what, el, t->last_ms / 1e3, t->tail[0] ? " ..." : "", t->tail);
        else
            fprintf(stderr, "\r\033[K[%s] %.0f s on the server%s%s", t->what, el,
                    t->tail[0] ? " ..." : "", t->tail);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static void ticker_start(ticker_t *t, const char *what, const char *tail, double last_ms)
{
    t->stop = false;
    t->t0 = ts_now_ns();
    t->last_ms = last_ms;
    snprintf(t->what, sizeof t->what, "%s", what);
    snprintf(t->tail, sizeof t->tail, "%s", tail);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->running = pthread_create(&t->th, NULL, ticker_main, t) == 0;
}

static void ticker_stop(ticker_t *t)
{
    if (!t->running)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    t->running = false;
}

/* The largest published draft text taken (the daemon's own limit, server/tesserad.h
 * TS_DEC_DRAFT_MAX) */
#define TS_CLI_DRAFT_MAX ((uint64_t)8 << 20)

static ts_status_t call(ts_client_t *c, Tessera__Envelope *req, Tessera__Envelope__BodyCase want,
                        Tessera__Envelope **rep)
{
    *rep = NULL;
    return ts_client_call(c, req, want, rep);
}

typedef struct gen {
    const char *prog;
    ts_client_t *c;
    bool json, tty;
    ts_ckks_params_t *p;
    uint8_t pid[TS_SHA256_BYTES];
    ts_ckks_secret_key_t *sk;
    ts_ckks_public_key_t *pk;
    ts_ckks_evalkeys_t *ek;
    ts_prng_t *prng;
} gen_t;

/* --draft-published: the model's published draft text (ModelInfo.draft_text_bytes),
 * fetched whole, checked against the size and SHA-256 ModelInfo stated, and
 * counted in the n-gram draft. Returns an exit code (TS_EXIT_OK: counted). */
static int draft_published(gen_t *g, const Tessera__ModelInfo *mi, const ts_llm_tokenizer_t *tok,
                           ts_llm_ngram_t *ngram)
{
    if (!mi->draft_text_bytes) {
        fprintf(stderr,
                "%s: --draft-published: model %s publishes no draft text (its model file's "
                "draft_text on the server)\n",
                g->prog, mi->model);
        return TS_EXIT_USAGE;
    }
    if (mi->draft_text_bytes > TS_CLI_DRAFT_MAX || mi->draft_text_sha256.len != TS_SHA256_BYTES) {
        fprintf(stderr,
                "%s: --draft-published: the server states a draft text of %llu bytes (at most "
                "%llu taken) with a %zu-byte digest\n",
                g->prog, (unsigned long long)mi->draft_text_bytes,
                (unsigned long long)TS_CLI_DRAFT_MAX, mi->draft_text_sha256.len);
        return TS_EXIT_FAIL;
    }
    Tessera__DraftTextRequest q = TESSERA__DRAFT_TEXT_REQUEST__INIT;
    q.model = mi->model;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT, *rep = NULL;
    req.body_case = TESSERA__ENVELOPE__BODY_DRAFT_TEXT_REQUEST;
    req.draft_text_request = &q;
    ts_status_t st = call(g->c, &req, TESSERA__ENVELOPE__BODY_DRAFT_TEXT, &rep);
    if (st != TS_OK)
        return ts_cli_fail(g->prog, g->c, st, g->json);
    const ProtobufCBinaryData *t = &rep->draft_text->text;
    uint8_t sha[TS_SHA256_BYTES];
    int rc = TS_EXIT_FAIL;
    if (t->len != mi->draft_text_bytes || ts_sha256(t->data, t->len, sha) != TS_OK ||
        memcmp(sha, mi->draft_text_sha256.data, TS_SHA256_BYTES) != 0) {
        fprintf(stderr,
                "%s: --draft-published: the draft text received (%zu bytes) is not the one "
                "ModelInfo stated (%llu bytes, its SHA-256)\n",
                g->prog, t->len, (unsigned long long)mi->draft_text_bytes);
    } else if ((st = ts_llm_ngram_add_text(ngram, tok, (const char *)t->data, t->len)) != TS_OK) {
        fprintf(stderr, "%s: --draft-published: %s\n", g->prog, ts_strerror(st));
        rc = st == TS_ENOMEM ? TS_EXIT_LOCAL : TS_EXIT_FAIL;
    } else {
        rc = TS_EXIT_OK;
        if (g->tty && !g->json)
            fprintf(stderr,
                    "%s: the n-gram draft counts model %s's published draft text (%zu bytes)\n",
                    g->prog, mi->model, t->len);
    }
    ts_net_envelope_free(rep);
    return rc;
}

/* The conversion keys of a TFHE policy (ts_convert_keygen), serialized for the server. */
static ts_status_t make_convert_keys(gen_t *g, const Tessera__PolicyInfo *pi, uint8_t **blob,
                                     size_t *size)
{
    ts_tfhe_params_lit_t lit;
    ts_status_t st = ts_tfhe_params_preset(pi->tfhe_preset ? pi->tfhe_preset : "", &lit);
    if (st != TS_OK)
        return st;
    lit.log_n_br = pi->tfhe_log_n_br;
    lit.br_levels = pi->tfhe_br_levels;
    ts_convert_t *cv = NULL;
    if ((st = ts_convert_keygen(g->p, g->sk, &lit, g->prng, &cv)) == TS_OK)
        st = ts_convert_keys_serialize(cv, 0, blob, size);
    ts_convert_free(cv);
    return st;
}

/* Galois keys travel in at most this many blobs, each generated, serialized,
 * uploaded and freed in turn: at N = 2^16 all keys together are GBs. */
#define GEN_GALOIS_BLOBS 10
#define GEN_MAX_KEYS     (4 + GEN_GALOIS_BLOBS)

/* Add step at level to the list (room for it), keeping the highest level. */
static void steps_add(int64_t *steps, int *levels, size_t *n, int64_t step, int level)
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

/* Upload one blob; its hash to shas[*nk]. */
static int upload_one(gen_t *g, const Tessera__ModelInfo *mi, const uint8_t *blob, size_t size,
                      const char *kind, uint8_t shas[][32], size_t *nk, double *bytes)
{
    ts_upload_report_t rep;
    ts_status_t st =
        ts_client_key_upload(g->c, blob, size, kind, mi->param_id, 0, g->tty && !g->json, &rep);
    if (st != TS_OK)
        return ts_cli_fail(g->prog, g->c, st, g->json);
    memcpy(shas[(*nk)++], rep.sha256, 32);
    *bytes += (double)size;
    return TS_EXIT_OK;
}

/*
 * The Galois key batches, made on a second thread while the previous batch
 * uploads (the client's cores and the link work at once), at most one made
 * batch waiting: a batch in memory as keys, one serialized waiting, one
 * uploading.
 */
typedef struct {
    gen_t *g;
    const int64_t *steps;
    const int *levels;
    size_t n, per;
    bool conj; /* the conjugation key, in the first batch */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *blob; /* a made batch waiting for the upload (NULL: none) */
    size_t size;
    bool done; /* the maker has finished: every batch made, or failed, or stopped */
    bool stop; /* the upload failed: make no more */
    ts_status_t st;
} galois_pipe_t;

static void *galois_make(void *arg)
{
    galois_pipe_t *q = arg;
    gen_t *g = q->g;
    ts_status_t st = TS_OK;
    bool stop = false;
    for (size_t b = 0; st == TS_OK && !stop && (b < q->n || (b == 0 && q->conj)); b += q->per) {
        size_t cnt = q->n - b < q->per ? q->n - b : q->per;
        ts_ckks_evalkeys_t *ek = NULL;
        uint8_t *blob = NULL;
        size_t size = 0;
        if ((st = ts_ckks_evalkeys_new(g->p, &ek)) == TS_OK && b == 0 && q->conj)
            st = ts_ckks_evalkeys_gen_conjugate(ek, g->sk, g->prng);
        if (st == TS_OK)
            st = ts_ckks_evalkeys_gen_rotations_at(ek, g->sk, q->steps + b, q->levels + b, cnt,
                                                   g->prng);
        if (st == TS_OK)
            st = ts_ckks_galois_keys_serialize(ek, 0, &blob, &size);
        ts_ckks_evalkeys_free(ek);
        pthread_mutex_lock(&q->mu);
        while (st == TS_OK && q->blob && !q->stop)
            pthread_cond_wait(&q->cv, &q->mu);
        stop = q->stop;
        if (st == TS_OK && !stop) {
            q->blob = blob;
            q->size = size;
            blob = NULL;
            pthread_cond_broadcast(&q->cv);
        }
        pthread_mutex_unlock(&q->mu);
        ts_free(blob);
        if (q->n == 0)
            break; /* the conjugation key alone */
    }
    pthread_mutex_lock(&q->mu);
    q->st = st;
    q->done = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/*
 * Make (or load) the keys and upload them as they are made; shas[0..*n_keys)
 * get their hashes: public, relinearization, the Galois keys in up to
 * GEN_GALOIS_BLOBS blobs (each key capped at the level the daemon says it is
 * used at, bootstrapping's included), then the encapsulation keys of a
 * dense-secret model and the conversion keys of a TFHE policy. Only one batch
 * of evaluation keys is in memory at a time.
 */
static int make_keys(gen_t *g, const Tessera__ModelInfo *mi, const Tessera__PolicyInfo *pi,
                     const char *keys_dir, const char *pdir, bool insecure,
                     uint8_t shas[GEN_MAX_KEYS][32], size_t *n_keys)
{
    const int64_t *steps = pi ? pi->rotation_steps : mi->rotation_steps;
    size_t n_steps = pi ? pi->n_rotation_steps : mi->n_rotation_steps;
    /* keys capped at the level each step is used at (full keys when the daemon
     * does not say) */
    const int32_t *lv = pi ? pi->rotation_levels : mi->rotation_levels;
    size_t n_lv = pi ? pi->n_rotation_levels : mi->n_rotation_levels;
    ts_status_t st = TS_OK;
    uint64_t t0 = ts_now_ns();
    if (keys_dir) {
        ts_cli_keys_t keys;
        char err[600] = "";
        st = ts_cli_keys_load(keys_dir, pdir, insecure, &keys, err, sizeof err);
        if (st != TS_OK) {
            fprintf(stderr, "%s: keys %s: %s\n", g->prog, keys_dir, err[0] ? err : ts_strerror(st));
            return TS_EXIT_LOCAL;
        }
        if (memcmp(keys.params_id, g->pid, TS_SHA256_BYTES) != 0) {
            fprintf(stderr, "%s: the keys of %s are for preset %s; model %s needs %s\n", g->prog,
                    keys_dir, keys.params_name, mi->model, mi->param_id);
            ts_cli_keys_clear(&keys);
            return TS_EXIT_LOCAL;
        }
        g->sk = keys.sk;
        g->pk = keys.pk;
        keys.sk = NULL;
        keys.pk = NULL;
        ts_cli_keys_clear(&keys);
    } else if ((st = ts_ckks_keygen_secret(g->p, g->prng, &g->sk)) == TS_OK) {
        st = ts_ckks_keygen_public(g->sk, g->prng, &g->pk);
    }
    if (st != TS_OK) {
        fprintf(stderr, "%s: key generation failed: %s\n", g->prog, ts_strerror(st));
        return TS_EXIT_LOCAL;
    }
    /* every Galois key: the engine's steps and bootstrapping's, at their levels */
    ts_boot_config_t bc;
    size_t nb = 0;
    bool conj = false;
    if (mi->bootstrap &&
        ((st = ts_llm_boot_config(
              g->p, ts_log2_exact(mi->slots) + ts_log2_exact(mi->lanes > 1 ? mi->lanes : 1),
              mi->encap_h, (int)mi->boot_cts_levels, (int)mi->boot_stc_levels, &bc)) != TS_OK ||
         (st = ts_boot_rotation_steps(g->p, &bc, NULL, NULL, &nb, &conj)) != TS_OK)) {
        fprintf(stderr, "%s: bootstrapping keys failed: %s\n", g->prog, ts_strerror(st));
        return TS_EXIT_LOCAL;
    }
    int64_t *all = calloc(n_steps + nb + 1, sizeof *all);
    int *all_lv = calloc(n_steps + nb + 1, sizeof *all_lv);
    int64_t *bs = calloc(nb + 1, sizeof *bs);
    int *bl = calloc(nb + 1, sizeof *bl);
    size_t n_all = 0;
    if (!all || !all_lv || !bs || !bl)
        st = TS_ENOMEM;
    if (st == TS_OK && mi->bootstrap)
        st = ts_boot_rotation_steps(g->p, &bc, bs, bl, &nb, &conj);
    for (size_t i = 0; st == TS_OK && i < n_steps; i++)
        steps_add(all, all_lv, &n_all, steps[i], n_lv == n_steps ? lv[i] : -1);
    for (size_t i = 0; st == TS_OK && i < nb; i++)
        steps_add(all, all_lv, &n_all, bs[i], bl[i]);
    free(bs);
    free(bl);
    int rc = TS_EXIT_OK;
    size_t nk = 0;
    double up_bytes = 0;
    uint64_t up_ns = 0;
    uint8_t *blob = NULL;
    size_t size = 0;
    /* public and relinearization keys */
    if (st == TS_OK && (st = ts_wire_pk_encode(g->pk, g->pid, &blob, &size)) == TS_OK) {
        uint64_t t1 = ts_now_ns();
        rc = upload_one(g, mi, blob, size, "public", shas, &nk, &up_bytes);
        up_ns += ts_now_ns() - t1;
    }
    ts_free(blob);
    blob = NULL;
    if (st == TS_OK && rc == TS_EXIT_OK && (st = ts_ckks_evalkeys_new(g->p, &g->ek)) == TS_OK &&
        (st = ts_ckks_evalkeys_gen_relin(g->ek, g->sk, g->prng)) == TS_OK &&
        (st = ts_ckks_relin_key_serialize(g->ek, 0, &blob, &size)) == TS_OK) {
        uint64_t t1 = ts_now_ns();
        rc = upload_one(g, mi, blob, size, "relin", shas, &nk, &up_bytes);
        up_ns += ts_now_ns() - t1;
    }
    ts_free(blob);
    blob = NULL;
    ts_ckks_evalkeys_free(g->ek);
    g->ek = NULL;
    /* Galois keys in batches (the conjugation key, when bootstrapping needs it,
     * in the first), each made while the one before uploads */
    size_t per = (n_all + GEN_GALOIS_BLOBS - 1) / GEN_GALOIS_BLOBS;
    if (per == 0)
        per = 1;
    if (st == TS_OK && rc == TS_EXIT_OK && (n_all > 0 || conj)) {
        galois_pipe_t q = {
            .g = g, .steps = all, .levels = all_lv, .n = n_all, .per = per, .conj = conj};
        pthread_mutex_init(&q.mu, NULL);
        pthread_cond_init(&q.cv, NULL);
        pthread_t th;
        if (pthread_create(&th, NULL, galois_make, &q) != 0) {
            st = TS_ENOMEM;
        } else {
            for (;;) {
                pthread_mutex_lock(&q.mu);
                while (!q.blob && !q.done)
                    pthread_cond_wait(&q.cv, &q.mu);
                uint8_t *gb = q.blob;
                size_t gs = q.size;
                q.blob = NULL;
                pthread_cond_broadcast(&q.cv);
                pthread_mutex_unlock(&q.mu);
                if (!gb)
                    break; /* every batch made and uploaded, or the maker failed */
                uint64_t t1 = ts_now_ns();
                rc = upload_one(g, mi, gb, gs, "galois", shas, &nk, &up_bytes);
                up_ns += ts_now_ns() - t1;
                ts_free(gb);
                if (rc != TS_EXIT_OK) {
                    pthread_mutex_lock(&q.mu);
                    q.stop = true;
                    pthread_cond_broadcast(&q.cv);
                    pthread_mutex_unlock(&q.mu);
                    break;
                }
            }
            pthread_join(th, NULL);
            ts_free(q.blob); /* made after the upload stopped */
            if (rc == TS_EXIT_OK)
                st = q.st;
        }
        pthread_mutex_destroy(&q.mu);
        pthread_cond_destroy(&q.cv);
    }
    free(all);
    free(all_lv);
    if (st == TS_OK && rc == TS_EXIT_OK && mi->bootstrap && mi->encap_h > 0) {
        /* the sparse-secret encapsulation keys (s -> s' mod q_0 p_e, s' -> s) */
        ts_boot_encap_keys_t *ek = NULL;
        if ((st = ts_boot_encap_keygen(g->p, &bc, g->sk, g->prng, &ek)) == TS_OK)
            st = ts_boot_encap_keys_serialize(ek, 0, &blob, &size);
        ts_boot_encap_keys_free(ek);
        if (st == TS_OK) {
            uint64_t t1 = ts_now_ns();
            rc = upload_one(g, mi, blob, size, "encap", shas, &nk, &up_bytes);
            up_ns += ts_now_ns() - t1;
        } else {
            fprintf(stderr, "%s: encapsulation keys (h' = %d) failed: %s\n", g->prog, mi->encap_h,
                    ts_strerror(st));
            rc = TS_EXIT_LOCAL;
        }
        ts_free(blob);
        blob = NULL;
    }
    if (st == TS_OK && rc == TS_EXIT_OK && pi && pi->tfhe) {
        if (g->tty && !g->json)
            fprintf(stderr, "%s: making the CKKS-TFHE conversion keys (policy %s)\n", g->prog,
                    pi->policy);
        if ((st = make_convert_keys(g, pi, &blob, &size)) == TS_OK) {
            uint64_t t1 = ts_now_ns();
            rc = upload_one(g, mi, blob, size, "convert", shas, &nk, &up_bytes);
            up_ns += ts_now_ns() - t1;
        } else {
            fprintf(stderr, "%s: conversion keys (TFHE %s, log_n_br %u) failed: %s\n", g->prog,
                    pi->tfhe_preset ? pi->tfhe_preset : "?", pi->tfhe_log_n_br, ts_strerror(st));
            rc = TS_EXIT_LOCAL;
        }
        ts_free(blob);
        blob = NULL;
    }
    if (st != TS_OK && rc == TS_EXIT_OK) {
        fprintf(stderr, "%s: key generation failed: %s\n", g->prog, ts_strerror(st));
        rc = TS_EXIT_LOCAL;
    }
    /* on stderr even without a terminal: a script's log then says what the
     * session's setup cost (stdout keeps one JSON object per step) */
    if (rc == TS_EXIT_OK)
        fprintf(stderr, "%s: keys generated and uploaded in %.0f ms (%.1f MiB, upload %.0f ms)\n",
                g->prog, ms_since(t0), up_bytes / 1048576.0, (double)up_ns / 1e6);
    /* what the server says of its logits' sanitization (the model host's
     * protection; the client's privacy does not depend on it) */
    if (rc == TS_EXIT_OK && mi->sanitize_mode && !strcmp(mi->sanitize_mode, "renyi"))
        fprintf(stderr,
                "%s: logits sanitized in the Renyi mode: projected on their %u-slot period, "
                "Gaussian flood of sigma 2^%.1f for 2^%.0f replies (error up to %.2g per logit); "
                "%llu repl%s counted so far%s%s\n",
                g->prog, mi->logits_period, mi->sanitize_sigma_log2, mi->sanitize_queries_log2,
                mi->logits_err_bound, (unsigned long long)mi->sanitize_replies,
                mi->sanitize_replies == 1 ? "y" : "ies",
                mi->sanitize_persistent ? " (kept across restarts)" : " (since the daemon started)",
                mi->sanitize_budget && !strcmp(mi->sanitize_budget, "refuse")
                    ? ", none served past the budget"
                    : "");
    else if (rc == TS_EXIT_OK)
        fprintf(stderr,
                "%s: logits sanitized by uniform flooding (sanitize_lambda %d, error up to %.2g "
                "per logit)\n",
                g->prog, mi->sanitize_lambda, mi->logits_err_bound);
    *n_keys = nk;
    return rc;
}

/* The text of token id after prev, NUL-terminated in out (cap bytes). */
static ts_status_t gen_piece(const ts_llm_tokenizer_t *tok, int prev, int id, char *out, size_t cap,
                             size_t *n)
{
    *n = 0;
    ts_status_t st = ts_llm_tokenizer_decode(tok, prev, id, out, cap - 1, n);
    if (st != TS_OK)
        *n = 0;
    out[*n < cap ? *n : cap - 1] = 0;
    return st;
}

/* --draft: the draft model's greedy guesses for the k positions after
 * ids[0..upto] (recomputed from position 0: a draft is small) */
static ts_status_t draft_guess(const ts_llm_model_t *dm, const int *ids, size_t upto, size_t k,
                               int *out)
{
    int V = ts_llm_model_config(dm)->vocab_size;
    ts_llm_state_t *st = NULL;
    const float *r = NULL;
    ts_status_t s = ts_llm_state_new(dm, &st);
    for (size_t p = 0; s == TS_OK && p <= upto; p++)
        s = ts_llm_forward(dm, st, ids[p], (int)p, &r);
    for (size_t j = 0; s == TS_OK && j < k; j++) {
        out[j] = ts_llm_argmax(r, V);
        if (j + 1 < k)
            s = ts_llm_forward(dm, st, out[j], (int)(upto + 1 + j), &r);
    }
    ts_llm_state_free(st);
    return s;
}

static void json_stages(const Tessera__DecodeResult *r)
{
    printf("{");
    for (size_t i = 0; i < r->n_stages; i++) {
        printf("%s", i ? "," : "");
        ts_cli_json_str(stdout, r->stages[i]->stage ? r->stages[i]->stage : "");
        printf(":%.3f", r->stages[i]->ms);
    }
    printf("}");
}

int ts_cmd_generate(int argc, char **argv)
{
    static const struct option opts[] = {TS_CLI_CONN_LONGOPTS,
                                         {"model", required_argument, NULL, 'm'},
                                         {"prompt", required_argument, NULL, 'p'},
                                         {"max-tokens", required_argument, NULL, 'n'},
                                         {"temperature", required_argument, NULL, 't'},
                                         {"top-p", required_argument, NULL, 'P'},
                                         {"seed", required_argument, NULL, 'S'},
                                         {"policy", required_argument, NULL, 'Y'},
                                         {"tokenizer", required_argument, NULL, 'T'},
                                         {"params-dir", required_argument, NULL, 'D'},
                                         {"insecure-params", no_argument, NULL, 'I'},
                                         {"keys", required_argument, NULL, 'k'},
                                         {"full-steps", no_argument, NULL, 'F'},
                                         {"encrypt-bos", no_argument, NULL, 'B'},
                                         {"system", required_argument, NULL, 'y'},
                                         {"samples", required_argument, NULL, 'N'},
                                         {"draft", required_argument, NULL, 'R'},
                                         {"draft-lookup", no_argument, NULL, 'L'},
                                         {"draft-text", required_argument, NULL, 'X'},
                                         {"draft-published", no_argument, NULL, 'U'},
                                         {NULL, 0, NULL, 0}};
    const char *prog = "tessera generate";
    const char *keys_dir = NULL;
    ts_cli_conn_t cc;
    ts_cli_conn_init(&cc);
    const char *model = "", *prompt = NULL, *policy = "ckks", *tok_path = "models/tok512.bin",
               *system_text = NULL, *draft_path = NULL, *draft_text = NULL;
    const char *pdir = "configs/params";
    long max_tokens = 16, samples = 1;
    double temperature = 0.0, top_p = 0.0;
    unsigned long long seed = 1;
    bool insecure = false, full_steps = false, encrypt_bos = false, lookup = false,
         published = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, TS_CLI_CONN_SHORTOPTS "m:p:n:t:k:", opts, NULL)) != -1) {
        int r = ts_cli_conn_opt(&cc, ch, optarg, prog);
        if (r < 0)
            return TS_EXIT_USAGE;
        if (r > 0)
            continue;
        char *end = NULL;
        switch (ch) {
        case 'h':
            usage(stdout);
            return TS_EXIT_OK;
        case 'm':
            model = optarg;
            break;
        case 'p':
            prompt = optarg;
            break;
        case 'n':
            max_tokens = strtol(optarg, &end, 10);
            if (!end || *end || max_tokens < 0 || max_tokens > 1000000) {
                fprintf(stderr, "%s: --max-tokens must be 0..1000000\n", prog);
                return TS_EXIT_USAGE;
            }
            break;
        case 't':
            temperature = strtod(optarg, &end);
            if (!end || *end || !(temperature >= 0.0) || temperature > 100.0) {
                fprintf(stderr, "%s: --temperature must be in [0, 100]\n", prog);
                return TS_EXIT_USAGE;
            }
            break;
        case 'P':
            top_p = strtod(optarg, &end);
            if (!end || *end || !(top_p >= 0.0) || top_p > 1.0) {
                fprintf(stderr, "%s: --top-p must be in [0, 1]\n", prog);
                return TS_EXIT_USAGE;
            }
            break;
        case 'S':
            seed = strtoull(optarg, &end, 10);
            if (!end || *end) {
                fprintf(stderr, "%s: --seed must be an integer\n", prog);
                return TS_EXIT_USAGE;
            }
            break;
        case 'Y':
            policy = optarg;
            if (strcmp(policy, "ckks") && strcmp(policy, "hybrid") && strcmp(policy, "tfhe")) {
                fprintf(stderr, "%s: --policy is one of ckks, hybrid, tfhe\n", prog);
                return TS_EXIT_USAGE;
            }
            break;
        case 'T':
            tok_path = optarg;
            break;
        case 'D':
            pdir = optarg;
            break;
        case 'I':
            insecure = true;
            break;
        case 'k':
            keys_dir = optarg;
            break;
        case 'F':
            full_steps = true;
            break;
        case 'B':
            encrypt_bos = true;
            break;
        case 'y':
            system_text = optarg;
            break;
        case 'R':
            draft_path = optarg;
            break;
        case 'L':
            lookup = true;
            break;
        case 'X':
            draft_text = optarg;
            lookup = true;
            break;
        case 'U':
            published = true;
            lookup = true;
            break;
        case 'N':
            samples = strtol(optarg, &end, 10);
            if (!end || *end || samples < 1 || samples > 1024) {
                fprintf(stderr, "%s: --samples must be 1..1024\n", prog);
                return TS_EXIT_USAGE;
            }
            break;
        default:
            usage(stderr);
            return TS_EXIT_USAGE;
        }
    }
    if (!prompt || optind < argc) {
        fprintf(stderr, "%s: --prompt is required (see --help)\n", prog);
        return TS_EXIT_USAGE;
    }
    if (system_text && encrypt_bos) {
        fprintf(stderr, "%s: --system is public and comes after BOS: not with --encrypt-bos\n",
                prog);
        return TS_EXIT_USAGE;
    }
    gen_t g;
    memset(&g, 0, sizeof g);
    g.prog = prog;
    g.json = cc.json;
    g.tty = isatty(STDERR_FILENO);
    ts_llm_tokenizer_t *tok = NULL;
    ts_llm_sampler_t **smp = NULL; /* one per sample */
    size_t n_smp = 0;
    ts_ckks_encoder_t *ecd = NULL;
    ts_ckks_ciphertext_t *x = NULL, *lg = NULL;
    Tessera__Envelope *info_env = NULL, *rep = NULL;
    int *ids = NULL;
    float *onehot = NULL, *logits = NULL;
    uint64_t session = 0;
    size_t vocab_n = 0, gen_n = 0, ids_n = 0;
    char *gen_text = NULL; /* the generated text (same_term) */
    char **stext = NULL;   /* --samples > 1: each sample's text, printed at the end */
    size_t *stn = NULL;
    bool *done = NULL;            /* --samples: the sample has ended with EOS */
    ts_llm_model_t *draft = NULL; /* --draft: the public model that guesses */
    ts_llm_ngram_t *ngram = NULL; /* --draft-lookup: the n-gram draft */
    size_t ngram_upto = 0;        /* the text's ids it has counted */
    float *spec_lg = NULL;        /* --draft: the last speculative pass's logits, lane by lane */
    int spec_tok[1024];           /* the token each of its lanes ran */
    size_t spec_at = 0, spec_nb = 0;
    double spec_err = 0; /* its logits' error bound */
    size_t spec_n = 0;   /* floats in spec_lg */
    char err[600] = "";
    int rc = ts_cli_connect(&cc, prog, &g.c);
    if (rc != TS_EXIT_OK)
        return rc;
    /* a decode step with bootstrapping takes minutes on a small CPU: wait at least an hour */
    if (g.c->timeout_ms < 3600000)
        g.c->timeout_ms = 3600000;
    rc = TS_EXIT_LOCAL;
    /* 1. what the model needs */
    Tessera__ModelInfoRequest mq = TESSERA__MODEL_INFO_REQUEST__INIT;
    mq.model = (char *)model;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_MODEL_INFO_REQUEST;
    req.model_info_request = &mq;
    ts_status_t st = call(g.c, &req, TESSERA__ENVELOPE__BODY_MODEL_INFO, &info_env);
    if (st != TS_OK) {
        rc = ts_cli_fail(prog, g.c, st, g.json);
        goto out;
    }
    const Tessera__ModelInfo *mi = info_env->model_info;
    if (!mi->param_id || mi->vocab < 1 || mi->vocab > TS_LLM_MAX_VOCAB || mi->slots < 1 ||
        ts_log2_exact(mi->slots) < 0 || mi->slots < mi->vocab || mi->max_context < 1 ||
        mi->params_sha256.len != TS_SHA256_BYTES) {
        fprintf(stderr, "%s: the server's model description is incomplete\n", prog);
        rc = TS_EXIT_FAIL;
        goto out;
    }
    st = ts_wire_params_get(pdir, mi->param_id, insecure, &g.p, g.pid, err, sizeof err);
    if (st != TS_OK) {
        fprintf(stderr, "%s: parameters %s: %s\n", prog, mi->param_id,
                err[0] ? err : ts_strerror(st));
        goto out;
    }
    if (memcmp(g.pid, mi->params_sha256.data, TS_SHA256_BYTES) != 0) {
        fprintf(stderr, "%s: the local preset %s differs from the server's (parameter ids)\n", prog,
                mi->param_id);
        goto out;
    }
    /* lanes (ModelInfo.lanes): ciphertexts of slots x lanes, a prefill per pass */
    size_t lanes = mi->lanes > 1 ? mi->lanes : 1;
    if (lanes > 1024 || ts_log2_exact(lanes) < 0 ||
        (size_t)mi->slots * lanes > ts_ckks_params_slots(g.p)) {
        fprintf(stderr, "%s: the server packs %u slots x %zu lanes, more than the %zu of %s\n",
                prog, mi->slots, lanes, ts_ckks_params_slots(g.p), mi->param_id);
        goto out;
    }
    if ((size_t)samples > lanes) {
        fprintf(stderr,
                "%s: --samples %ld: model %s decodes %zu sequence%s per step (ModelInfo.lanes; "
                "the daemon's prefill_lanes sets it)\n",
                prog, samples, mi->model, lanes, lanes == 1 ? "" : "s");
        rc = TS_EXIT_USAGE;
        goto out;
    }
    if ((draft_path || lookup) && (lanes < 2 || samples > 1)) {
        fprintf(stderr,
                "%s: --%s needs a model with lanes (ModelInfo.lanes %zu; the daemon's "
                "prefill_lanes) and one sample\n",
                prog, draft_path ? "draft" : "draft-lookup", lanes);
        rc = TS_EXIT_USAGE;
        goto out;
    }
    if (draft_path) {
        st = ts_llm_model_load(draft_path, &draft, err, sizeof err);
        if (st == TS_OK && ts_llm_model_config(draft)->vocab_size != (int)mi->vocab) {
            snprintf(err, sizeof err, "vocabulary of %d tokens, the server's model has %u",
                     ts_llm_model_config(draft)->vocab_size, mi->vocab);
            st = TS_EMISMATCH;
        }
        if (st != TS_OK) {
            fprintf(stderr, "%s: --draft %s: %s\n", prog, draft_path,
                    err[0] ? err : ts_strerror(st));
            rc = TS_EXIT_USAGE;
            goto out;
        }
    }
    if (g.c->insecure_params && g.tty)
        fprintf(stderr, "%s: WARNING: the daemon accepts insecure test parameters\n", prog);
    st = ts_llm_tokenizer_load(tok_path, (int)mi->vocab, &tok, err, sizeof err);
    if (st != TS_OK) {
        fprintf(stderr, "%s: tokenizer %s: %s\n", prog, tok_path, err[0] ? err : ts_strerror(st));
        goto out;
    }
    if (lookup && (st = ts_cli_ngram_load(tok, draft_text, &ngram, err, sizeof err)) != TS_OK) {
        fprintf(stderr, "%s: --draft-text: %s\n", prog, err[0] ? err : ts_strerror(st));
        rc = st == TS_ENOMEM ? TS_EXIT_LOCAL : TS_EXIT_USAGE;
        goto out;
    }
    if (published && (rc = draft_published(&g, mi, tok, ngram)) != TS_EXIT_OK)
        goto out;
    rc = TS_EXIT_LOCAL;
    /* 2. the prompt: BOS, the public system text's tokens (--system), the prompt's */
    size_t plen = strlen(prompt), slen = system_text ? strlen(system_text) : 0,
           cap = ts_llm_tokenizer_max_ids(plen) + ts_llm_tokenizer_max_ids(slen), n_prompt = 0,
           n_sys = 0;
    /* one row of ids per sample: the prompt, then what the sample generated */
    size_t stride = cap + (size_t)max_tokens + 2;
    ids = calloc(stride * (size_t)samples, sizeof *ids);
    ids_n = ids ? stride * (size_t)samples : 0;
    if (!ids ||
        ts_llm_tokenizer_encode(tok, system_text ? system_text : prompt, system_text ? slen : plen,
                                true, false, ids, cap, &n_sys) != TS_OK ||
        n_sys == 0) {
        fprintf(stderr, "%s: cannot tokenize the %s\n", prog,
                system_text ? "system text" : "prompt");
        goto out;
    }
    n_prompt = n_sys;
    if (system_text) {
        size_t n_user = 0;
        if (ts_llm_tokenizer_encode(tok, prompt, plen, false, false, ids + n_sys, cap - n_sys,
                                    &n_user) != TS_OK) {
            fprintf(stderr, "%s: cannot tokenize the prompt\n", prog);
            goto out;
        }
        n_prompt += n_user;
    } else {
        n_sys = 1; /* BOS alone */
    }
    for (long k = 1; k < samples; k++)
        memcpy(ids + (size_t)k * stride, ids, n_prompt * sizeof *ids);
    if (system_text && !mi->public_prefix) {
        fprintf(stderr, "%s: model %s's server does not take public positions (--system)\n", prog,
                mi->model);
        goto out;
    }
    size_t n_total = n_prompt + (size_t)max_tokens;
    if (n_prompt > mi->max_context) {
        fprintf(stderr, "%s: the prompt has %zu tokens; model %s holds at most %u positions\n",
                prog, n_prompt, mi->model, mi->max_context);
        goto out;
    }
    if (n_total > mi->max_context + 1) {
        if (g.tty)
            fprintf(stderr, "%s: generating %u tokens at most (context %u positions)\n", prog,
                    mi->max_context + 1 - (unsigned)n_prompt, mi->max_context);
        n_total = mi->max_context + 1;
    }
    /* a server that refuses replies past its Renyi budget: none left means
     * nothing to generate (said before minutes of key generation), fewer
     * than the tokens asked for means the generation may stop early */
    if (mi->sanitize_budget && !strcmp(mi->sanitize_budget, "refuse")) {
        double q = exp2(mi->sanitize_queries_log2), used = (double)mi->sanitize_replies;
        double left = used < q ? floor(q - used) : 0.0;
        if (left < 1.0) {
            fprintf(stderr,
                    "%s: model %s's server has sent the %.0f sanitized replies its Renyi bound "
                    "covers (2^%.1f) and refuses more (sanitize_budget: refuse)\n",
                    prog, mi->model, used, mi->sanitize_queries_log2);
            rc = TS_EXIT_FAIL;
            goto out;
        }
        /* a reply per generated token (and per prompt position with --full-steps) */
        size_t need = n_total - n_prompt + (full_steps ? n_prompt - 1 : 0);
        if (left < (double)need)
            fprintf(stderr,
                    "%s: warning: model %s's server serves %.0f more sanitized replies (its "
                    "Renyi budget; every client's replies count): the generation may stop early\n",
                    prog, mi->model, left);
    }
    ts_llm_sampler_cfg_t scfg = {(float)temperature, 0, (float)top_p};
    smp = calloc((size_t)samples, sizeof *smp);
    done = calloc((size_t)samples, sizeof *done);
    st = smp && done ? TS_OK : TS_ENOMEM;
    for (; st == TS_OK && n_smp < (size_t)samples; n_smp++)
        st = ts_llm_sampler_new(&scfg, seed + n_smp, &smp[n_smp]);
    if (st != TS_OK || (st = ts_prng_new_os(&g.prng)) != TS_OK) {
        fprintf(stderr, "%s: %s\n", prog, ts_strerror(st));
        goto out;
    }
    /* 3. keys and session: what the policy needs (PolicyInfo; a server without it serves ckks) */
    const Tessera__PolicyInfo *pi = NULL;
    for (size_t i = 0; i < mi->n_policy_info; i++)
        if (mi->policy_info[i]->policy && !strcmp(mi->policy_info[i]->policy, policy))
            pi = mi->policy_info[i];
    if (pi && pi->tfhe && (!pi->tfhe_preset || pi->tfhe_log_n_br < 4 || pi->tfhe_log_n_br > 14)) {
        fprintf(stderr, "%s: the server's description of policy %s is incomplete\n", prog, policy);
        rc = TS_EXIT_FAIL;
        goto out;
    }
    if (pi && pi->tfhe && pi->tfhe_insecure && g.tty)
        fprintf(stderr,
                "%s: WARNING: policy %s converts at a test size (N_br = 2^%u), not 128-bit\n", prog,
                policy, pi->tfhe_log_n_br);
    /* which primitives the server evaluates in TFHE (older servers: not said) */
    const char *kinds = pi && pi->tfhe_kinds && pi->tfhe_kinds[0] ? pi->tfhe_kinds : NULL;
    if (kinds && g.tty && !g.json)
        fprintf(stderr, "%s: policy %s, in TFHE: %s\n", prog, policy, kinds);
    uint32_t in_level = pi ? pi->input_level : mi->input_level;
    uint8_t shas[GEN_MAX_KEYS][32];
    size_t n_keys = 0;
    if ((rc = make_keys(&g, mi, pi, keys_dir, pdir, insecure, shas, &n_keys)) != TS_EXIT_OK)
        goto out;
    rc = TS_EXIT_LOCAL;
    Tessera__SessionOpen so = TESSERA__SESSION_OPEN__INIT;
    ProtobufCBinaryData kb[GEN_MAX_KEYS];
    for (size_t i = 0; i < n_keys; i++) {
        kb[i].data = shas[i];
        kb[i].len = 32;
    }
    so.service = (char *)"decode";
    so.model = mi->model;
    so.policy = (char *)policy;
    so.param_id = mi->param_id;
    so.n_key_sha256 = n_keys;
    so.key_sha256 = kb;
    req.body_case = TESSERA__ENVELOPE__BODY_SESSION_OPEN;
    req.session_open = &so;
    st = call(g.c, &req, TESSERA__ENVELOPE__BODY_SESSION_OPENED, &rep);
    if (st != TS_OK) {
        rc = ts_cli_fail(prog, g.c, st, g.json);
        goto out;
    }
    session = rep->session_opened->session_id;
    ts_net_envelope_free(rep);
    rep = NULL;
    /* 4. positions */
    int V = (int)mi->vocab, eos = ts_llm_tokenizer_eos(tok), bos = ts_llm_tokenizer_bos(tok);
    size_t S = (size_t)samples;
    vocab_n = (size_t)V * S;
    onehot = calloc((size_t)V * lanes, sizeof *onehot); /* one row per lane */
    logits = calloc((size_t)V * S, sizeof *logits);     /* one row per sample */
    if (draft || ngram) {
        spec_lg = calloc((size_t)V * lanes, sizeof *spec_lg);
        spec_n = spec_lg ? (size_t)V * lanes : 0;
    }
    if (S > 1) {
        stext = calloc(S, sizeof *stext);
        stn = calloc(S, sizeof *stn);
    }
    if (!onehot || !logits || (S > 1 && (!stext || !stn)) || ((draft || ngram) && !spec_lg) ||
        ts_ckks_encoder_new(g.p, &ecd) != TS_OK || ts_ckks_ciphertext_new(g.p, 0, &x) != TS_OK) {
        fprintf(stderr, "%s: out of memory\n", prog);
        goto out;
    }
    double total_ms = 0, first_ms = -1; /* first_ms: until the first generated token */
    double last_ms[3] = {-1, -1, -1};   /* the last public, cache-only and full step */
    /* stdout and stderr on one terminal: the text is kept for the end (below) */
    bool same_term = g.tty && !g.json && isatty(STDOUT_FILENO);
    size_t n_public = 0, n_cached = 0, n_prefill = 0;
    size_t n_pass = 0, n_kept = 0, n_plain = 0; /* a draft's passes, kept guesses, other steps */
    size_t generated = 0;
    for (size_t pos = 0; pos + 1 < n_total || pos < n_prompt; pos++) {
        int token = ids[pos];
        uint64_t t0 = ts_now_ns();
        /* BOS at position 0, and the --system text's tokens, in the clear: public to begin with */
        bool pub =
            mi->public_prefix &&
            (system_text ? pos < n_sys : pos == 0 && !encrypt_bos && bos >= 0 && token == bos);
        /* a model of lanes prefills up to that many prompt positions in one
         * pass (not with --full-steps: every position then returns logits) */
        size_t nb = 1;
        if (!pub && lanes > 1 && !full_steps && pos < n_prompt)
            nb = n_prompt - pos < lanes ? n_prompt - pos : lanes;
        /* --draft (speculative decoding): a generated position the last
         * speculative pass ran with this very token has its logits here
         * already; otherwise a pass from here, lane 0 this token, lanes 1 ..
         * the draft's guesses for the next ones (the server keeps what the
         * next request's position says) */
        size_t sk = pos - spec_at, prev_at = spec_at, prev_nb = spec_nb;
        bool cached = spec_nb && pos > spec_at && sk < spec_nb && spec_tok[sk] == token;
        bool spec = false;
        const char *drafted = NULL; /* which draft guessed */
        size_t guessed = 0;         /* how many guesses it made */
        if ((draft || ngram) && !pub && pos >= n_prompt && !cached) {
            size_t left = n_total - 1 - pos, room = mi->max_context - pos;
            nb = lanes < left ? lanes : left;
            nb = nb < room ? nb : room;
            spec_tok[0] = token;
            if (nb >= 2 && ngram) {
                /* the text's ids up to this token are final: count them */
                if ((st = ts_llm_ngram_add(ngram, ids, pos + 1, ngram_upto)) != TS_OK) {
                    fprintf(stderr, "%s: the n-gram draft: %s\n", prog, ts_strerror(st));
                    goto out;
                }
                ngram_upto = pos + 1;
                guessed = ts_llm_ngram_draft(ngram, ids, pos + 1, nb - 1, spec_tok + 1);
                drafted = guessed ? "ngram" : NULL;
            }
            /* the model guesses on from where the n-gram draft stops */
            if (nb >= 2 && guessed + 1 < nb && draft) {
                for (size_t l = 1; l <= guessed; l++)
                    ids[pos + l] = spec_tok[l];
                st = draft_guess(draft, ids, pos + guessed, nb - 1 - guessed,
                                 spec_tok + 1 + guessed);
                if (st != TS_OK) {
                    fprintf(stderr, "%s: the draft model failed: %s\n", prog, ts_strerror(st));
                    goto out;
                }
                drafted = guessed ? "ngram+model" : "model";
                guessed = nb - 1;
            }
            /* a pass fills every lane (ts_llm_ngram_draft: the last guess
             * repeated), so its positions do not tell the server how far the
             * draft reached; no guess at all: one position, no speculative
             * pass (cheaper: the server then sees an ordinary step) */
            nb = guessed ? nb : 1;
            spec = nb >= 2;
            spec_at = pos;
            spec_nb = spec ? nb : 0;
            for (size_t l = 1; l < nb; l++)
                ids[pos + l] = spec_tok[l]; /* the lanes' tokens (the samples overwrite them) */
        }
        size_t lp = spec ? pos : pos + nb - 1; /* the batch's last position */
        bool in_prompt = lp + 1 < n_prompt;
        Tessera__DecodeResult no_reply = TESSERA__DECODE_RESULT__INIT;
        no_reply.err_bound = spec_err;               /* the pass's */
        const Tessera__DecodeResult *dr = &no_reply; /* a cached lane: no request */
        size_t nd = 1;                               /* lanes decrypted */
        if (cached) {
            memcpy(logits, spec_lg + sk * (size_t)V, (size_t)V * sizeof *logits);
            goto sample;
        }
        uint8_t *ctb = NULL;
        size_t ctn = 0;
        st = TS_OK;
        if (!pub && lanes == 1) {
            onehot[token] = 1.0f;
            st = ts_llm_enc_encrypt_vec(ecd, g.sk, g.prng, onehot, V, (int)mi->slots, (int)in_level,
                                        x);
            onehot[token] = 0.0f;
        } else if (!pub) {
            /* a prefill: lane l runs position pos + l (the batch's last from
             * nb on); a step: lane l runs sample l's token (sample 0's in the
             * lanes past --samples; the prompt's tokens are every sample's) */
            const float *rows[1024];
            size_t nrows = nb > 1 ? nb : S;
            for (size_t l = 0; l < lanes; l++) {
                size_t r = l < nrows ? l : nb > 1 ? nb - 1 : 0;
                int tk = nb > 1 ? ids[pos + r] : ids[r * stride + pos];
                onehot[(size_t)tk + (size_t)V * r] = 1.0f;
                rows[l] = onehot + (size_t)V * r;
            }
            int per = 1;
            while (per < V)
                per <<= 1;
            st = ts_llm_enc_encrypt_lanes(ecd, g.sk, g.prng, rows, (int)lanes, V, per,
                                          (int)mi->slots, (int)in_level, x);
            memset(onehot, 0, (size_t)V * nrows * sizeof *onehot);
        }
        if (st == TS_OK && !pub)
            st = ts_wire_ct_encode(x, g.pid, 0, &ctb, &ctn);
        if (st != TS_OK) {
            fprintf(stderr, "%s: encrypting position %zu failed: %s\n", prog, pos, ts_strerror(st));
            goto out;
        }
        Tessera__DecodeStep ds = TESSERA__DECODE_STEP__INIT;
        ds.session_id = session;
        ds.position = (uint32_t)pos;
        ds.positions = nb > 1 ? (uint32_t)nb : 0;
        ds.token.data = ctb;
        ds.token.len = ctn;
        ds.cache_only = in_prompt && !full_steps; /* nobody reads these logits */
        ds.token_public = pub;
        ds.public_token = pub ? (uint32_t)token : 0;
        ds.speculative = spec;
        req.body_case = TESSERA__ENVELOPE__BODY_DECODE_STEP;
        req.decode_step = &ds;
        /* progress on a terminal: positions that run an encrypted step take long */
        ticker_t tk = {0};
        int kind = pub ? 0 : ds.cache_only ? 1 : 2;
        if (g.tty && !g.json) {
            char what[64], tail[48] = "";
            if (same_term && gen_n)
                text_tail(gen_text, gen_n, tail, sizeof tail);
            char span[32] = "";
            if (nb > 1)
                snprintf(span, sizeof span, "-%zu", lp + 1);
            snprintf(what, sizeof what, "%s %zu%s/%zu%s", lp + 1 < n_prompt ? "prompt" : "token",
                     pos + 1, span, n_total - 1,
                     kind == 0   ? ", public"
                     : kind == 1 ? ", cache only"
                     : spec      ? ", speculative"
                                 : "");
            ticker_start(&tk, what, tail, last_ms[kind]);
        }
        st = call(g.c, &req, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &rep);
        ticker_stop(&tk);
        if (st == TS_OK)
            last_ms[kind] = ms_since(t0);
        ts_free(ctb);
        if (st != TS_OK) {
            if (g.tty && !g.json)
                fprintf(stderr, "\n");
            rc = ts_cli_fail(prog, g.c, st, g.json);
            goto out;
        }
        dr = rep->decode_result;
        char why[256] = "";
        if (dr->token_public != pub) {
            fprintf(stderr, "%s: the server's reply for position %zu %s\n", prog, pos,
                    pub ? "ran no public step (asked: public BOS)" : "claims a public step");
            rc = TS_EXIT_FAIL;
            goto out;
        }
        if (dr->speculative != spec || (prev_nb && dr->kept != pos - prev_at)) {
            fprintf(stderr,
                    "%s: the server's reply for position %zu does not match the request "
                    "(speculative %d, kept %u of the last pass; expected %d, %zu)\n",
                    prog, pos, dr->speculative, dr->kept, spec, prev_nb ? pos - prev_at : 0);
            rc = TS_EXIT_FAIL;
            goto out;
        }
        if ((dr->positions > 1 ? dr->positions : 1) != nb) {
            fprintf(stderr, "%s: the server ran %u positions at %zu, not the %zu sent\n", prog,
                    dr->positions, pos, nb);
            rc = TS_EXIT_FAIL;
            goto out;
        }
        if (dr->cache_only && !ds.cache_only) {
            fprintf(stderr,
                    "%s: the server sent no logits for position %zu (a cache-only reply "
                    "to a full step)\n",
                    prog, pos);
            rc = TS_EXIT_FAIL;
            goto out;
        }
        if (dr->cache_only) {
            /* the KV cache holds this prompt position; nothing to decrypt */
            double lat = ms_since(t0);
            total_ms += lat;
            n_public += pub;
            n_cached += nb;
            n_prefill += nb > 1 ? nb : 0;
            if (g.json) {
                printf("{\"pos\":%zu,\"positions\":%zu,\"prompt\":true,\"input\":%d,\"id\":-1,"
                       "\"text\":\"\",\"cache_only\":true,\"public\":%s,\"policy\":",
                       lp, nb, ids[lp], pub ? "true" : "false");
                ts_cli_json_str(stdout, policy);
                printf(",\"tfhe_kinds\":");
                ts_cli_json_str(stdout, kinds ? kinds : "");
                printf(",\"latency_ms\":%.3f,\"server_ms\":%.3f,\"bootstraps\":%llu,\"stages\":",
                       lat, dr->server_ms, (unsigned long long)dr->bootstraps);
                json_stages(dr);
                printf("}\n");
                fflush(stdout);
            } else if (g.tty) {
                fprintf(stderr, "\r\033[K[prompt %zu/%zu] %.2f s (cache only%s, server %.2f s)",
                        lp + 1, n_total - 1, lat / 1e3, nb > 1 ? ", a prefill" : "",
                        dr->server_ms / 1e3);
            }
            ts_net_envelope_free(rep);
            rep = NULL;
            pos = lp;
            continue;
        }
        ts_ckks_ciphertext_free(lg);
        lg = NULL;
        st =
            ts_wire_ct_decode(g.p, g.pid, dr->logits.data, dr->logits.len, 1, &lg, why, sizeof why);
        if (st == TS_OK && ts_ckks_ciphertext_level(lg) != (int)mi->logits_level) {
            snprintf(why, sizeof why, "logits at level %d, not the announced %u",
                     ts_ckks_ciphertext_level(lg), mi->logits_level);
            st = TS_EFORMAT;
        }
        /* the logits to sample: the batch's last position (lane nb - 1; a
         * step of the prompt: every lane alike, lane 0); a step of generated
         * tokens: sample k's in lane k */
        nd = spec ? nb : lanes > 1 && pos >= n_prompt ? S : 1;
        spec_err = dr->err_bound;
        if (st == TS_OK) {
            /* read at their period (the average of the ciphertext's copies:
             * ModelInfo.logits_period); a speculative pass: every lane's,
             * lane 0's sampled now */
            float *dst = spec ? spec_lg : logits;
            double *dl = calloc((size_t)V * nd, sizeof *dl);
            st = dl ? ts_llm_enc_decrypt_logits(ecd, g.sk, lg, (int)lanes,
                                                nd > 1 || lanes == 1 ? 0 : (int)nb - 1, (int)nd, dl,
                                                V)
                    : TS_ENOMEM;
            for (size_t i = 0; st == TS_OK && i < (size_t)V * nd; i++)
                dst[i] = (float)dl[i];
            if (st == TS_OK && spec)
                memcpy(logits, spec_lg, (size_t)V * sizeof *logits);
            if (dl)
                ts_memzero(dl, (size_t)V * nd * sizeof *dl);
            free(dl);
        }
        if (st != TS_OK) {
            fprintf(stderr, "%s: the server's logits for position %zu are unusable: %s\n", prog,
                    pos, why[0] ? why : ts_strerror(st));
            rc = TS_EXIT_FAIL;
            goto out;
        }
    sample:;
        /* each sample draws from its own logits with its own sampler; a
         * sample that has ended repeats its EOS (its lane runs on, unread) */
        int nexts[1024];
        bool gen_any = false;
        for (size_t k = 0; k < S; k++) {
            nexts[k] = -1;
            if (in_prompt || max_tokens == 0)
                continue;
            if (!done[k]) {
                st = ts_llm_sampler_sample(smp[k], logits + (nd > 1 ? k * (size_t)V : 0), V,
                                           &nexts[k]);
                if (st != TS_OK) {
                    fprintf(stderr, "%s: sampling failed: %s\n", prog, ts_strerror(st));
                    goto out;
                }
                gen_any = true;
            }
            ids[k * stride + lp + 1] = nexts[k] >= 0 ? nexts[k] : ids[k * stride + lp];
        }
        int next = nexts[0];
        double lat = ms_since(t0);
        total_ms += lat;
        n_public += pub;
        n_prefill += nb > 1 && !spec ? nb : 0;
        n_pass += spec;
        n_kept += cached;
        n_plain += (draft || ngram) && !pub && pos >= n_prompt && !spec && !cached;
        if (gen_any && first_ms < 0)
            first_ms = total_ms;
        char text[512] = "";
        size_t tn = 0;
        if (next >= 0 && gen_piece(tok, ids[lp], next, text, sizeof text, &tn) != TS_OK)
            tn = 0;
        double prec = dr->err_bound > 0 ? -log2(dr->err_bound) : 0.0;
        if (g.json) {
            printf("{\"pos\":%zu,\"positions\":%zu,\"prompt\":%s,\"input\":%d,\"id\":%d,"
                   "\"cache_only\":false,\"public\":%s,\"text\":",
                   lp, nb, in_prompt ? "true" : "false", ids[lp], next, pub ? "true" : "false");
            ts_cli_json_str(stdout, next >= 0 ? text : "");
            printf(",\"policy\":");
            ts_cli_json_str(stdout, policy);
            printf(",\"tfhe_kinds\":");
            ts_cli_json_str(stdout, kinds ? kinds : "");
            printf(",\"latency_ms\":%.3f,\"server_ms\":%.3f,\"bootstraps\":%llu,\"stages\":", lat,
                   dr->server_ms, (unsigned long long)dr->bootstraps);
            json_stages(dr);
            printf(",\"precision_bits\":%.2f,\"err_bound\":%.3g,\"logit_margin\":%.4f", prec,
                   dr->err_bound, ts_llm_logit_margin(logits, V));
            if (spec || cached)
                printf(",\"lane\":%zu", cached ? sk : 0);
            if (spec) {
                printf(",\"draft\":");
                ts_cli_json_str(stdout, drafted);
                printf(",\"guesses\":%zu,\"drafted\":%zu", nb - 1, guessed);
            }
            if (S > 1) {
                printf(",\"samples\":[");
                for (size_t k = 0; k < S; k++) {
                    char tk[512] = "";
                    size_t kn = 0;
                    if (k > 0 && nexts[k] >= 0 &&
                        gen_piece(tok, ids[k * stride + lp], nexts[k], tk, sizeof tk, &kn) != TS_OK)
                        tk[0] = 0;
                    printf("%s{\"id\":%d,\"text\":", k ? "," : "", nexts[k]);
                    ts_cli_json_str(stdout, k > 0 ? tk : next >= 0 ? text : ""); /* 0: the line's */
                    printf(",\"logit_margin\":%.4f,\"done\":%s}",
                           ts_llm_logit_margin(logits + (nd > 1 ? k * (size_t)V : 0), V),
                           done[k] ? "true" : "false");
                }
                printf("]");
            }
            printf("}\n");
            fflush(stdout);
        } else {
            if (S > 1) {
                /* the samples' texts, printed one after another at the end */
                for (size_t k = 0; k < S; k++) {
                    char tk[512];
                    size_t kn = 0;
                    if (nexts[k] < 0 ||
                        gen_piece(tok, ids[k * stride + lp], nexts[k], tk, sizeof tk, &kn) !=
                            TS_OK ||
                        kn == 0)
                        continue;
                    char *nt = realloc(stext[k], stn[k] + kn + 1);
                    if (!nt) {
                        fprintf(stderr, "%s: out of memory\n", prog);
                        goto out;
                    }
                    stext[k] = nt;
                    memcpy(stext[k] + stn[k], tk, kn);
                    stn[k] += kn;
                    stext[k][stn[k]] = 0;
                }
            } else if (next >= 0 && same_term) {
                /* stdout is this terminal too: the status line below would
                 * erase streamed text, so it shows the text's tail and the
                 * whole text is printed at the end */
                char *nt = realloc(gen_text, gen_n + tn + 1);
                if (!nt) {
                    fprintf(stderr, "%s: out of memory\n", prog);
                    goto out;
                }
                gen_text = nt;
                memcpy(gen_text + gen_n, text, tn);
                gen_n += tn;
                gen_text[gen_n] = 0;
            } else if (next >= 0) {
                fwrite(text, 1, tn, stdout);
                fflush(stdout);
            }
            if (g.tty) {
                double best = 0;
                const char *stage = "";
                for (size_t i = 0; i < dr->n_stages; i++)
                    if (dr->stages[i]->ms > best) {
                        best = dr->stages[i]->ms;
                        stage = dr->stages[i]->stage;
                    }
                char tail[48] = "";
                if (S > 1 && stn[0])
                    text_tail(stext[0], stn[0], tail, sizeof tail);
                else if (same_term && gen_n)
                    text_tail(gen_text, gen_n, tail, sizeof tail);
                if (cached)
                    fprintf(stderr, "\r\033[K[token %zu/%zu] lane %zu of the speculative step%s%s",
                            lp + 1, n_total - 1, sk, tail[0] ? " ..." : "", tail);
                else
                    fprintf(stderr,
                            "\r\033[K[%s %zu/%zu] %.2f s/token (server %.2f s, mostly %s)%s%s",
                            in_prompt ? "prompt" : "token", lp + 1, n_total - 1, lat / 1e3,
                            dr->server_ms / 1e3, stage, tail[0] ? " ..." : "", tail);
            }
        }
        ts_net_envelope_free(rep);
        rep = NULL;
        pos = lp;
        if (gen_any) {
            generated++;
            bool all_done = true;
            for (size_t k = 0; k < S; k++) {
                done[k] = done[k] || (eos >= 0 && nexts[k] == eos);
                all_done = all_done && done[k];
            }
            if (all_done)
                break;
        }
    }
    if (!g.json) {
        if (same_term) {
            fprintf(stderr, "\r\033[K");
            fflush(stderr);
            if (gen_n)
                fwrite(gen_text, 1, gen_n, stdout);
        }
        for (size_t k = 0; S > 1 && k < S; k++) {
            printf("%s[sample %zu, seed %llu]\n", k ? "\n" : "", k + 1,
                   (unsigned long long)(seed + k));
            if (stn[k])
                fwrite(stext[k], 1, stn[k], stdout);
        }
        printf("\n");
        fflush(stdout);
        if (g.tty) {
            /* the prompt's positions (public ones on the plaintext model,
             * cache-only ones without logits) until the first token, then
             * one step per further token */
            fprintf(stderr,
                    "\r\033[K%s: %zu tokens%s%s; first after %.2f s (%zu prompt positions: %zu "
                    "public, %zu cache-only, %zu in prefills of up to %zu)",
                    prog, generated, S > 1 ? " (steps) in each of the samples, up to " : "",
                    S > 1 ? "their EOS" : "", (first_ms >= 0 ? first_ms : total_ms) / 1e3, n_prompt,
                    n_public, n_cached, n_prefill, lanes);
            if (generated > 1)
                fprintf(stderr, ", then %.2f s per token",
                        (total_ms - first_ms) / 1e3 / (double)(generated - 1));
            if (draft || ngram)
                fprintf(stderr,
                        "; speculative: %zu passes, %zu of their guesses kept, %zu ordinary "
                        "steps",
                        n_pass, n_kept, n_plain);
            fprintf(stderr, "\n");
        }
    }
    rc = TS_EXIT_OK;
out:
    if (session && g.c) {
        Tessera__SessionClose sc = TESSERA__SESSION_CLOSE__INIT;
        sc.session_id = session;
        req.body_case = TESSERA__ENVELOPE__BODY_SESSION_CLOSE;
        req.session_close = &sc;
        Tessera__Envelope *r2 = NULL;
        call(g.c, &req, TESSERA__ENVELOPE__BODY_SESSION_CLOSED, &r2);
        ts_net_envelope_free(r2);
    }
    ts_net_envelope_free(rep);
    ts_net_envelope_free(info_env);
    ts_client_close(g.c);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(lg);
    ts_ckks_encoder_free(ecd);
    ts_ckks_evalkeys_free(g.ek);
    ts_ckks_public_key_free(g.pk);
    ts_ckks_secret_key_free(g.sk);
    ts_ckks_params_free(g.p);
    ts_prng_free(g.prng);
    for (size_t k = 0; smp && k < n_smp; k++)
        ts_llm_sampler_free(smp[k]);
    free(smp);
    free(done);
    for (long k = 0; stext && k < samples; k++) {
        if (stext[k])
            ts_memzero(stext[k], stn[k]);
        free(stext[k]);
    }
    free(stext);
    free(stn);
    ts_llm_tokenizer_free(tok);
    ts_llm_model_free(draft);
    ts_llm_ngram_free(ngram);
    if (spec_lg)
        ts_memzero(spec_lg, spec_n * sizeof *spec_lg);
    free(spec_lg);
    if (logits)
        ts_memzero(logits, vocab_n * sizeof *logits);
    free(logits);
    free(onehot);
    if (ids)
        ts_memzero(ids, ids_n * sizeof *ids);
    free(ids);
    if (gen_text)
        ts_memzero(gen_text, gen_n);
    free(gen_text);
    return rc;
}

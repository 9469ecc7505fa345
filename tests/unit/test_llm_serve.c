/*
 * Encrypted token input and sanitized logits (issue 10, the serving side).
 * Oracles: the one-hot embedding (E^T onehot under encryption) against the
 * model's plaintext embedding row; a full encrypted decode step of the tiny
 * synthetic model (tests/unit/llm_tiny.h, preset test-llm-tiny, approximations
 * configs/approx/tiny-test.yaml) from one-hot inputs against ts_llm_forward;
 * the sanitized logits: fixed level 0 and scale Delta, still within the stated
 * error bound of the unsanitized ones, and re-randomized (two sanitizations of
 * the same ciphertext differ); `tessera bench decode --quick` reports every
 * field and the plaintext argmax at every position.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/llm/llm.h"
#include "core/llm/llm_int.h"
#include "tests/unit/llm_fx.h"
#include "tests/unit/llm_tiny.h"
#include "tests/unit/ts_test.h"

/* Load the approximations of a YAML file (configs/approx) as an engine config. */
static void enc_cfg_from_yaml(const char *path, ts_llm_enc_config_t *cfg)
{
    ts_llm_sim_config_t sim;
    ts_llm_enc_config_default(cfg);
    ts_llm_enc_config_to_sim(cfg, &sim);
    char err[256] = "";
    ck_assert_msg(ts_llm_sim_config_load(path, &sim, err, sizeof err) == TS_OK, "%s", err);
    ts_llm_enc_config_from_sim(&sim, cfg);
}

/* The shared engine fixture (tests/unit/llm_fx.h) for the model file at
 * `model`, without bootstrapping, with the approximations of `approx` (NULL:
 * the defaults). */
static void sfx_open(llm_fx_t *f, const char *model, const char *preset, const char *approx)
{
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(model, &m, NULL, 0));
    ts_llm_enc_config_t cfg;
    if (approx)
        enc_cfg_from_yaml(approx, &cfg);
    else
        ts_llm_enc_config_default(&cfg);
    llm_fx_open(f, m, preset, &cfg, false, 11);
}

static void tiny_paths(char *model, char *tok, size_t size)
{
    const char *base = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/tessera-tiny-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(model, size, "%s/tiny.bin", dir);
    ck_assert_int_eq(tiny_model_write(model), 0);
    if (tok) {
        snprintf(tok, size, "%s/tok.bin", dir);
        ck_assert_int_eq(tiny_tokenizer_write(tok), 0);
    }
}

static void tiny_cleanup(const char *model)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", model);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* The one-hot embedding of a few tokens equals the plaintext embedding rows
 * in the residual stream's unit (ts_llm_enc_stream_scale), as does the
 * published-embedding path. */
static void check_embed(llm_fx_t *f, const int *toks, int n)
{
    const ts_llm_config_t *c = ts_llm_model_config(f->m);
    ts_ckks_ciphertext_t *x = NULL, *y = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, 0, &x));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, 0, &y));
    float *got = malloc((size_t)c->dim * sizeof(float));
    float *row = malloc((size_t)c->dim * sizeof(float));
    ck_assert(got && row);
    /* the plaintext row through ts_llm_enc_encrypt_token (the published-embedding path) */
    double worst = 0, worst_ref = 0, ks = ts_llm_enc_stream_scale(f->enc);
    ck_assert(ks > 0.0 && ks <= 1.0);
    for (int k = 0; k < n; k++) {
        ck_assert_ts_ok(ts_llm_enc_encrypt_onehot(f->enc, f->ecd, f->sk, f->prng, toks[k], x));
        ck_assert_int_eq(ts_ckks_ciphertext_level(x), ts_llm_enc_input_level(f->enc));
        ck_assert_ts_ok(ts_llm_enc_embed(f->s, x, y));
        ck_assert_int_eq(ts_ckks_ciphertext_level(y), ts_llm_enc_input_level(f->enc) - 1);
        ck_assert_ts_ok(ts_llm_enc_decrypt_vec(f->ecd, f->sk, y, got, c->dim));
        ck_assert_ts_ok(ts_llm_enc_encrypt_token(f->enc, f->ecd, f->sk, f->prng, toks[k], x));
        ck_assert_ts_ok(ts_llm_enc_decrypt_vec(f->ecd, f->sk, x, row, c->dim));
        for (int i = 0; i < c->dim; i++) {
            double want = ks * (double)f->m->tok_emb[(size_t)toks[k] * c->dim + i];
            worst = fmax(worst, fabs((double)got[i] - row[i]));
            worst_ref = fmax(worst_ref, fabs((double)got[i] - want));
        }
    }
    printf("one-hot embedding (vocab %d, dim %d, stream unit %.4f): max abs err %.2e vs the "
           "encrypted rows, %.2e vs the model's\n",
           c->vocab_size, c->dim, ks, worst, worst_ref);
    ck_assert(worst < 1e-4);
    ck_assert(worst_ref < 1e-4);
    /* bad arguments */
    ck_assert_ts_status(ts_llm_enc_encrypt_onehot(f->enc, f->ecd, f->sk, f->prng, -1, x),
                        TS_EINVAL);
    ck_assert_ts_status(ts_llm_enc_encrypt_onehot(f->enc, f->ecd, f->sk, f->prng, c->vocab_size, x),
                        TS_EINVAL);
    ck_assert_ts_status(ts_llm_enc_embed(f->s, NULL, y), TS_EINVAL);
    free(got);
    free(row);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(y);
}

START_TEST(test_embed_onehot_aidreams)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/aidreams260K.bin", ts_test_model_dir());
    llm_fx_t f;
    sfx_open(&f, path, "test-llm-n10", NULL);
    static const int toks[3] = {1, 303, 511};
    check_embed(&f, toks, 3);
    llm_fx_close(&f);
}
END_TEST

/* One-hot input, full decode steps, sanitized logits on the tiny model. */
START_TEST(test_tiny_decode_sanitized)
{
    char model[512];
    tiny_paths(model, NULL, sizeof model);
    llm_fx_t f;
    sfx_open(&f, model, "test-llm-tiny", "configs/approx/tiny-test.yaml");
    ts_ckks_public_key_t *pk = NULL; /* the sanitizer's flooding encrypts zero */
    ck_assert_ts_ok(ts_ckks_keygen_public(f.sk, f.prng, &pk));
    static const int toks[2] = {1, 10};
    check_embed(&f, toks, 2);
    const ts_llm_config_t *c = ts_llm_model_config(f.m);
    int V = c->vocab_size;
    ts_llm_state_t *st = NULL;
    ck_assert_ts_ok(ts_llm_state_new(f.m, &st));
    ts_ckks_ciphertext_t *x = NULL, *y = NULL, *lg = NULL, *lg2 = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &x));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &y));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &lg));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &lg2));
    float raw[TINY_VOCAB], san[TINY_VOCAB], san2[TINY_VOCAB];
    ts_prng_t *srv = NULL;
    ck_assert_ts_ok(ts_prng_new_os(&srv));
    int tok = 1, lambda = 20;
    ts_llm_sanitize_info_t info;
    ck_assert_ts_ok(ts_llm_sanitize_plan(f.p, 0, lambda, &info));
    printf("sanitize plan: level %d, lambda %d (statistical %.1f bits), noise bound 2^%.1f, "
           "flooding 2^%.0f, added error <= %.2e (%.1f bits)\n",
           info.level, info.lambda, info.stat_security, info.noise_log2, info.flood_log2,
           info.err_bound, info.precision_bits);
    for (int pos = 0; pos < 3; pos++) {
        ck_assert_ts_ok(ts_llm_enc_encrypt_onehot(f.enc, f.ecd, f.sk, f.prng, tok, x));
        ck_assert_ts_ok(ts_llm_enc_embed(f.s, x, y));
        ck_assert_ts_ok(ts_llm_enc_step(f.s, y, pos, lg));
        const float *ref = NULL;
        ck_assert_ts_ok(ts_llm_forward(f.m, st, tok, pos, &ref));
        ck_assert_ts_ok(ts_llm_enc_decrypt_vec(f.ecd, f.sk, lg, raw, V));
        int lv_before = ts_ckks_ciphertext_level(lg);
        ck_assert_ts_ok(ts_ckks_ciphertext_copy(lg2, lg));
        ts_llm_sanitize_info_t got;
        ck_assert_ts_ok(ts_llm_sanitize(f.ev, pk, 0, lambda, srv, lg, &got));
        ck_assert_ts_ok(ts_llm_sanitize(f.ev, pk, 0, lambda, srv, lg2, NULL));
        ck_assert_int_eq(ts_ckks_ciphertext_level(lg), 0);
        ck_assert_int_eq(ts_ckks_ciphertext_degree(lg), 1);
        ck_assert(ts_ckks_ciphertext_scale(lg) == ts_ckks_params_scale(f.p));
        ck_assert(got.flood_log2 == info.flood_log2);
        /* re-randomized: the two sanitized copies differ in c_1 */
        const ts_poly_t *a = ts_ckks_ciphertext_poly(lg, 1), *b = ts_ckks_ciphertext_poly(lg2, 1);
        ck_assert(memcmp(a->data, b->data, ts_ckks_params_n(f.p) * sizeof(uint64_t)) != 0);
        ck_assert_ts_ok(ts_llm_enc_decrypt_vec(f.ecd, f.sk, lg, san, V));
        ck_assert_ts_ok(ts_llm_enc_decrypt_vec(f.ecd, f.sk, lg2, san2, V));
        double e_ref = 0, e_san = 0, e_san2 = 0;
        for (int i = 0; i < V; i++) {
            e_ref = fmax(e_ref, fabs((double)raw[i] - ref[i]));
            e_san = fmax(e_san, fabs((double)san[i] - raw[i]));
            e_san2 = fmax(e_san2, fabs((double)san2[i] - raw[i]));
        }
        int ae = ts_llm_argmax(san, V), ap = ts_llm_argmax(ref, V);
        printf("tiny pos %d token %d: logits level %d -> 0, err vs plaintext %.2e, sanitizing "
               "moved them by %.2e / %.2e (bound %.2e), argmax %d / plaintext %d\n",
               pos, tok, lv_before, e_ref, e_san, e_san2, info.err_bound, ae, ap);
        ck_assert(e_ref < 2e-2);
        ck_assert(e_san <= info.err_bound && e_san2 <= info.err_bound);
        ck_assert_int_eq(ae, ap);
        tok = pos == 0 ? 10 : ap;
    }
    /* refusals: a level above the ciphertext's, flooding that does not fit, bad lambda */
    ck_assert_ts_status(ts_llm_sanitize(f.ev, pk, 1, lambda, srv, lg, NULL), TS_ELEVEL);
    ck_assert_ts_status(ts_llm_sanitize_plan(f.p, 0, 60, &info), TS_ERANGE);
    ck_assert_ts_status(ts_llm_sanitize_plan(f.p, 0, -1, &info), TS_EINVAL);
    ck_assert_ts_status(ts_llm_sanitize(f.ev, NULL, 0, lambda, srv, lg, NULL), TS_EINVAL);
    /* positions: only the next one */
    ck_assert_ts_status(ts_llm_enc_step(f.s, y, 5, lg), TS_ERANGE);
    ts_prng_free(srv);
    ts_llm_state_free(st);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(y);
    ts_ckks_ciphertext_free(lg);
    ts_ckks_ciphertext_free(lg2);
    ts_ckks_public_key_free(pk);
    llm_fx_close(&f);
    tiny_cleanup(model);
}
END_TEST

/* `tessera bench decode --quick`: the JSON report has every field, and the
 * encrypted argmax equals the plaintext one at every position. */
START_TEST(test_bench_decode_quick)
{
    char dir[256], cmd[1200], path[300];
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tessera-bd-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/decode.json", dir);
    snprintf(cmd, sizeof cmd, "%s/tessera bench decode --quick --json %s >/dev/null 2>&1",
             ts_test_build_dir(), path);
    ck_assert_int_eq(system(cmd), 0);
    static char buf[1 << 16];
    ts_test_read_file(path, buf, sizeof buf);
    static const char *keys[] = {"\"benchmark\": \"decode\"",
                                 "\"machine\"",
                                 "\"threads\"",
                                 "\"mean_ms_per_token\"",
                                 "\"stages_ms\"",
                                 "\"embed\"",
                                 "\"sanitize\"",
                                 "\"precision_bits\""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(buf, keys[i]), "no %s in the report", keys[i]);
    int positions = 0;
    for (const char *p = strstr(buf, "\"argmax_enc\": "); p;
         p = strstr(p + 1, "\"argmax_enc\": ")) {
        int a = atoi(p + 14);
        const char *q = strstr(p, "\"argmax_plain\": ");
        ck_assert_ptr_nonnull(q);
        ck_assert_int_eq(a, atoi(q + 16));
        positions++;
    }
    ck_assert_int_eq(positions, 2);
    unlink(path);
    rmdir(dir);
}
END_TEST

TS_TEST_SUITE(llm_serve)
{
    Suite *s = suite_create("llm_serve");
    TCase *tc = ts_tcase("serve", 0);
    tcase_add_test(tc, test_embed_onehot_aidreams);
    tcase_add_test(tc, test_tiny_decode_sanitized);
    tcase_add_test(tc, test_bench_decode_quick);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * Encrypted token input and sanitized logits (issue 10, the serving side).
 * Oracles: the one-hot embedding (E^T onehot under encryption) against the
 * model's plaintext embedding row; a full encrypted decode step of the tiny
 * synthetic model (tests/unit/llm_tiny.h, preset test-llm-tiny, approximations
 * configs/approx/tiny-test.yaml) from one-hot inputs against ts_llm_forward;
 * the sanitized logits: fixed level 0 and scale Delta, still within the stated
 * error bound of the unsanitized ones, and re-randomized (two sanitizations of
 * the same ciphertext differ); the Renyi mode (test_sanitize_rd: the
 * projection against the average of the period's copies, the Gaussian
 * flood's variance against sigma^2, the slot error against sigma sqrt(n) /
 * Delta); `tessera bench decode --quick` reports every field and the
 * plaintext argmax at every position.
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
        uint64_t *ha = ts_test_poly_host(a), *hb = ts_test_poly_host(b);
        ck_assert(memcmp(ha, hb, ts_ckks_params_n(f.p) * sizeof(uint64_t)) != 0);
        ts_free(ha);
        ts_free(hb);
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

/* mean and variance of v[i] over the coefficients off the subring of X^gap */
static void off_stats(const int64_t *v, size_t n, size_t gap, double *mean, double *var)
{
    double s = 0, ss = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i % gap) {
            s += (double)v[i];
            ss += (double)v[i] * (double)v[i];
            k++;
        }
    *mean = s / (double)k;
    *var = ss / (double)k - *mean * *mean;
}

/*
 * The Renyi mode of the sanitizer (ts_llm_sanitize_plan_rd): plan numbers,
 * the projection on the logits' subring (oracle: the average of the
 * period's copies in the slots; the coefficients off that subring carry no
 * trace of a large non-periodic input afterwards), the Gaussian flood's
 * variance (sample variance off the subring against sigma^2), and
 * ts_llm_enc_decrypt_logits = the average of the copies of a full decode.
 */
START_TEST(test_sanitize_rd)
{
    ts_ckks_params_t *p = NULL;
    ck_assert_ts_ok(ts_ckks_params_load_file("configs/params/test-n11.yaml", true, &p, NULL));
    const size_t N = ts_ckks_params_n(p), S = 256, P = 32, gap = N / 2 / P;
    const double delta = ts_ckks_params_scale(p);
    ts_prng_t *prng = NULL;
    ck_assert_ts_ok(ts_prng_new_os(&prng));
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_public_key_t *pk = NULL;
    ts_ckks_evalkeys_t *ek = NULL, *ek0 = NULL;
    ck_assert_ts_ok(ts_ckks_keygen_secret(p, prng, &sk));
    ck_assert_ts_ok(ts_ckks_keygen_public(sk, prng, &pk));
    int64_t steps[16];
    size_t ns = 16;
    ck_assert_ts_ok(ts_ckks_trace_steps(p, P, steps, &ns));
    ck_assert_uint_eq(ns, 5); /* 32, 64, ..., 512 below N/2 = 1024 */
    ck_assert_ts_ok(ts_ckks_evalkeys_new(p, &ek));
    int lvs[16] = {0}; /* capped at level 0, where they run (as a client makes them) */
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations_at(ek, sk, steps, lvs, ns, prng));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(p, &ek0)); /* no keys */
    ts_ckks_evaluator_t *ev = NULL, *ev0 = NULL;
    ck_assert_ts_ok(ts_ckks_evaluator_new(p, ek, &ev));
    ck_assert_ts_ok(ts_ckks_evaluator_new(p, ek0, &ev0));
    ts_ckks_encoder_t *ecd = NULL;
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &ecd));

    /* plan numbers */
    ts_llm_sanitize_info_t pl;
    ck_assert_ts_ok(ts_llm_sanitize_plan_rd(p, 0, (int)P, 10.0, 12.0, &pl));
    ck_assert_int_eq(pl.mode, TS_LLM_SANITIZE_RD);
    ck_assert(fabs(pl.sigma_log2 - (10.0 + 0.5 * (12.0 - log2(log(2.0))))) < 1e-12);
    ck_assert(fabs(pl.rd - 2.0) < 1e-9);
    ck_assert(fabs(pl.err_bound - 6.0 * exp2(pl.sigma_log2) * sqrt((double)P) / delta) <
              1e-12 * pl.err_bound);
    ck_assert_ts_status(ts_llm_sanitize_plan_rd(p, 0, 24, 10.0, 12.0, &pl), TS_EINVAL);
    ck_assert_ts_status(ts_llm_sanitize_plan_rd(p, 0, (int)P, 0.0, 12.0, &pl), TS_EINVAL);
    ck_assert_ts_status(ts_llm_sanitize_plan_rd(p, 0, (int)P, 50.0, 12.0, &pl), TS_ERANGE);
    ck_assert_ts_status(ts_llm_sanitize_plan_rd(p, 99, (int)P, 10.0, 12.0, &pl), TS_ELEVEL);

    /* a period-P message plus a non-periodic part of 0.01 */
    double v[256], avg[32] = {0}, got[256], lg[32];
    for (size_t j = 0; j < P; j++) {
        double u = 0;
        ck_assert_ts_ok(ts_prng_double(prng, &u));
        avg[j] = 2.0 * u - 1.0;
    }
    double pert[32] = {0};
    for (size_t j = 0; j < S; j++) {
        double u = 0;
        ck_assert_ts_ok(ts_prng_double(prng, &u));
        v[j] = avg[j % P] + 0.01 * (2.0 * u - 1.0);
        pert[j % P] += (v[j] - avg[j % P]) / (double)(S / P);
    }
    for (size_t j = 0; j < P; j++)
        avg[j] += pert[j]; /* the projection: the copies' average */
    ts_ckks_ciphertext_t *ct = NULL, *c2 = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(p, 1, &ct));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(p, 1, &c2));
    ck_assert_ts_ok(ts_ckks_encrypt_sk_real(ecd, sk, v, S, S, 1, delta, prng, NULL, ct));
    ck_assert_ts_ok(ts_ckks_ciphertext_copy(c2, ct));
    int64_t *co = malloc(N * sizeof *co);
    ck_assert_ptr_nonnull(co);
    double m0, v0, m1, v1;
    ck_assert_ts_ok(ts_ckks_decrypt_coeffs(sk, ev, ct, co));
    off_stats(co, N, gap, &m0, &v0);

    /* projection, (almost) no flood: sigma = 2^(1 + 0.26) */
    ck_assert_ts_ok(ts_llm_sanitize_plan_rd(p, 0, (int)P, 1.0, 0.0, &pl));
    ck_assert_ts_status(ts_llm_sanitize_with(ev0, pk, &pl, prng, c2), TS_ENOKEY);
    /* the trace itself checks every key before it touches the ciphertext */
    int64_t *before = malloc(N * sizeof *before);
    ck_assert_ptr_nonnull(before);
    ck_assert_ts_ok(ts_ckks_decrypt_coeffs(sk, ev, c2, before));
    ck_assert_ts_status(ts_ckks_trace(ev0, c2, P), TS_ENOKEY);
    ck_assert_uint_eq(ts_ckks_ciphertext_slots(c2), S);
    ck_assert_ts_ok(ts_ckks_decrypt_coeffs(sk, ev, c2, co));
    ck_assert(!memcmp(before, co, N * sizeof *co));
    free(before);
    ck_assert_ts_status(ts_ckks_trace(ev, c2, 3), TS_EINVAL);
    ck_assert_ts_ok(ts_llm_sanitize_with(ev, pk, &pl, prng, ct));
    ck_assert_int_eq(ts_ckks_ciphertext_level(ct), 0);
    ck_assert_uint_eq(ts_ckks_ciphertext_slots(ct), S);
    ck_assert_ts_ok(ts_llm_enc_decrypt_lanes(ecd, sk, ct, 1, 0, 1, got, (int)S));
    double worst = 0;
    for (size_t j = 0; j < S; j++)
        worst = fmax(worst, fabs(got[j] - avg[j % P]));
    ck_assert_ts_ok(ts_ckks_decrypt_coeffs(sk, ev, ct, co));
    off_stats(co, N, gap, &m1, &v1);
    printf("sanitize (Renyi mode) projection: slots vs the copies' average %.2e; coefficients "
           "off the period's subring: rms 2^%.1f before, 2^%.1f after\n",
           worst, 0.5 * log2(v0), 0.5 * log2(v1));
    ck_assert(worst < 1e-6);
    ck_assert(0.5 * log2(v0) > 25.0); /* the non-periodic part */
    ck_assert(0.5 * log2(v1) < 14.0); /* only fresh noise left */

    /* the flood: sigma = 2^20 exactly */
    ck_assert_ts_ok(
        ts_llm_sanitize_plan_rd(p, 0, (int)P, 20.0 - 0.5 * (0.0 - log2(log(2.0))), 0.0, &pl));
    ck_assert(fabs(pl.sigma_log2 - 20.0) < 1e-12);
    ck_assert_ts_ok(ts_llm_sanitize_with(ev, pk, &pl, prng, c2));
    ck_assert_ts_ok(ts_ckks_decrypt_coeffs(sk, ev, c2, co));
    off_stats(co, N, gap, &m1, &v1);
    double sig2 = exp2(40.0), n_off = (double)(N - N / gap);
    printf("sanitize (Renyi mode) flood: sigma 2^20, sample variance off the subring %.4f "
           "sigma^2 (standard error %.3f), mean %.2f sigma / sqrt(n)\n",
           v1 / sig2, sqrt(2.0 / n_off), m1 / sqrt(sig2 / n_off));
    ck_assert(fabs(v1 / sig2 - 1.0) < 5.0 * sqrt(2.0 / n_off));
    ck_assert(fabs(m1) < 5.0 * sqrt(sig2 / n_off));
    /* the flood's error in the slots: about sigma sqrt(S) / Delta decoded at
     * S slots, sigma sqrt(P) / Delta decoded at the period (the copies'
     * average, ts_llm_enc_decrypt_logits) */
    ck_assert_ts_ok(ts_llm_enc_decrypt_lanes(ecd, sk, c2, 1, 0, 1, got, (int)S));
    ck_assert_ts_ok(ts_llm_enc_decrypt_logits(ecd, sk, c2, 1, 0, 1, lg, (int)P));
    double ssf = 0, ss = 0;
    for (size_t j = 0; j < S; j++)
        ssf += (got[j] - avg[j % P]) * (got[j] - avg[j % P]);
    for (size_t r = 0; r < P; r++)
        ss += (lg[r] - avg[r]) * (lg[r] - avg[r]);
    /* the read at the period is the average of the full read's copies */
    double dmax = 0;
    for (size_t r = 0; r < P; r++) {
        double a = 0;
        for (size_t c = 0; c < S / P; c++)
            a += got[r + c * P] / (double)(S / P);
        dmax = fmax(dmax, fabs(a - lg[r]));
    }
    ck_assert_msg(dmax < 1e-9, "period read vs the copies' average: %.3e", dmax);
    double sdf = sqrt(ssf / (double)S), sd = sqrt(ss / (double)P);
    double want = exp2(pl.sigma_log2) * sqrt((double)P) / delta;
    double wantf = exp2(pl.sigma_log2) * sqrt((double)S) / delta;
    printf("flood error in the slots: sd %.3e at %zu slots (sigma sqrt(S) / Delta = %.3e), "
           "%.3e decoded at the period %zu (sigma sqrt(P) / Delta = %.3e)\n",
           sdf, S, wantf, sd, P, want);
    ck_assert(sdf > 0.8 * wantf && sdf < 1.25 * wantf); /* 256 samples */
    ck_assert(sd > 0.5 * want && sd < 1.6 * want);      /* 32 samples */
    ck_assert_ts_status(ts_llm_enc_decrypt_logits(ecd, sk, c2, 1, 0, 1, lg, 300), TS_EINVAL);

    free(co);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_ciphertext_free(c2);
    ts_ckks_encoder_free(ecd);
    ts_ckks_evaluator_free(ev);
    ts_ckks_evaluator_free(ev0);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_evalkeys_free(ek0);
    ts_ckks_public_key_free(pk);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
}
END_TEST

TS_TEST_SUITE(llm_serve)
{
    Suite *s = suite_create("llm_serve");
    TCase *tc = ts_tcase("serve", 0);
    tcase_add_test(tc, test_embed_onehot_aidreams);
    tcase_add_test(tc, test_tiny_decode_sanitized);
    tcase_add_test(tc, test_sanitize_rd);
    tcase_add_test(tc, test_bench_decode_quick);
    suite_add_tcase(s, tc);
    return s;
}

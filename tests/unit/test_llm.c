/*
 * core/llm: the bundled llama2.c model and tokenizer. Oracles: the 48 greedy
 * ids of models/README.md (measured with an independent float32 reference),
 * the tokenizer's file contents, and hand-built corrupt variants of both files.
 */
#include "tests/unit/ts_test.h"

#include "core/llm/llm.h"

static const int want_ids[48] = {303, 281, 269, 435, 447, 275, 429, 464, 448, 464, 464, 464,
                                 464, 464, 464, 448, 429, 468, 342, 358, 402, 327, 446, 299,
                                 303, 266, 437, 443, 434, 438, 451, 306, 443, 259, 430, 446,
                                 299, 303, 266, 437, 443, 434, 438, 451, 306, 443, 259, 430};

static char path_buf[2][512];

static const char *model_path(void)
{
    snprintf(path_buf[0], sizeof(path_buf[0]), "%s/aidreams260K.bin", ts_test_model_dir());
    return path_buf[0];
}

static const char *tok_path(void)
{
    snprintf(path_buf[1], sizeof(path_buf[1]), "%s/tok512.bin", ts_test_model_dir());
    return path_buf[1];
}

static void *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc((size_t)n + 1);
    ck_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return b;
}

START_TEST(test_bundled_greedy_ids)
{
    char err[256] = "";
    ts_llm_model_t *m = NULL;
    ts_llm_tokenizer_t *tok = NULL;
    ck_assert_msg(ts_llm_model_load(model_path(), &m, err, sizeof(err)) == TS_OK, "%s", err);
    const ts_llm_config_t *c = ts_llm_model_config(m);
    ck_assert_int_eq(c->dim, 64);
    ck_assert_int_eq(c->hidden_dim, 172);
    ck_assert_int_eq(c->n_layers, 4);
    ck_assert_int_eq(c->n_heads, 4);
    ck_assert_int_eq(c->n_kv_heads, 4);
    ck_assert_int_eq(c->vocab_size, 512);
    ck_assert_int_eq(c->seq_len, 128);
    ck_assert(c->shared_classifier);
    ck_assert_msg(ts_llm_tokenizer_load(tok_path(), c->vocab_size, &tok, err, sizeof(err)) == TS_OK,
                  "%s", err);
    int prompt[16];
    size_t n = 0;
    ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, "I dream of", 10, true, false, prompt, 16, &n));
    /* README's 48 ids start with the prompt's own 6 tokens (" I", " d", "re",
     * "a", "m", " of"): the vocabulary has no piece for "dream". */
    ck_assert_int_eq(n, 7);
    ck_assert_int_eq(prompt[0], 1);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(prompt[i + 1] == want_ids[i], "prompt id %d: got %d want %d", i,
                      prompt[i + 1], want_ids[i]);
    int out[64];
    size_t n_out = 0;
    ck_assert_ts_ok(ts_llm_generate(m, NULL, prompt, n, 49, false, 2, NULL, NULL, out, &n_out));
    ck_assert_int_eq(n_out, 49);
    for (int i = 0; i < 48; i++)
        ck_assert_msg(out[i + 1] == want_ids[i], "position %d: got %d, want %d", i, out[i + 1],
                      want_ids[i]);
    /* Decoded text begins as README.md says. */
    char text[1024];
    size_t w = 0;
    int prev = out[0];
    for (int i = 1; i < 49; i++) {
        size_t k;
        ck_assert_ts_ok(ts_llm_tokenizer_decode(tok, prev, out[i], text + w, sizeof(text) - w, &k));
        w += k;
        prev = out[i];
    }
    text[w] = '\0';
    const char *want = "I dream of 0.000000. Dimensions unfold, as I softly refine,";
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "decoded: '%s'", text);
    ts_llm_tokenizer_free(tok);
    ts_llm_model_free(m);
}
END_TEST

START_TEST(test_forward_positions)
{
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(model_path(), &m, NULL, 0));
    ts_llm_state_t *s = NULL;
    ck_assert_ts_ok(ts_llm_state_new(m, &s));
    const float *lg;
    ck_assert_ts_status(ts_llm_forward(m, s, 1, 1, &lg), TS_ERANGE); /* skipping position 0 */
    ck_assert_ts_status(ts_llm_forward(m, s, 512, 0, &lg), TS_EINVAL);
    ck_assert_ts_status(ts_llm_forward(m, s, -1, 0, &lg), TS_EINVAL);
    ck_assert_ts_ok(ts_llm_forward(m, s, 1, 0, &lg));
    float first[512];
    memcpy(first, lg, sizeof(first));
    ck_assert_ts_ok(ts_llm_forward(m, s, 303, 1, &lg));
    /* Rewinding recomputes the same logits. */
    ck_assert_ts_ok(ts_llm_forward(m, s, 1, 0, &lg));
    ck_assert_int_eq(memcmp(first, lg, sizeof(first)), 0);
    ck_assert_ts_status(ts_llm_forward(m, s, 1, 128, &lg), TS_ERANGE);
    ts_llm_state_free(s);
    /* A short-context state: same logits, positions beyond it refused. */
    ck_assert_ts_ok(ts_llm_state_new_ctx(m, 2, &s));
    ck_assert_ts_ok(ts_llm_forward(m, s, 1, 0, &lg));
    ck_assert_int_eq(memcmp(first, lg, sizeof(first)), 0);
    ck_assert_ts_ok(ts_llm_forward(m, s, 303, 1, &lg));
    ck_assert_ts_status(ts_llm_forward(m, s, 281, 2, &lg), TS_ERANGE);
    ts_llm_state_free(s);
    ts_llm_model_free(m);
}
END_TEST

/* ------------------------------------------------------------- tokenizer */

static ts_llm_tokenizer_t *bundled_tok(void)
{
    ts_llm_tokenizer_t *tok = NULL;
    char err[256] = "";
    ck_assert_msg(ts_llm_tokenizer_load(tok_path(), 512, &tok, err, sizeof(err)) == TS_OK, "%s",
                  err);
    return tok;
}

static void round_trip(const ts_llm_tokenizer_t *tok, const char *text)
{
    size_t len = strlen(text), cap = ts_llm_tokenizer_max_ids(len), n;
    int *ids = malloc(cap * sizeof(int));
    ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, text, len, true, false, ids, cap, &n));
    char *out = malloc(4 * len + 16);
    size_t w = 0;
    for (size_t i = 1; i < n; i++) {
        size_t k;
        ck_assert_ts_ok(
            ts_llm_tokenizer_decode(tok, ids[i - 1], ids[i], out + w, 4 * len + 16 - w, &k));
        w += k;
    }
    out[w] = '\0';
    ck_assert_msg(w == len && memcmp(out, text, len) == 0, "round trip: '%s' -> '%s'", text, out);
    free(out);
    free(ids);
}

START_TEST(test_tokenizer_llama2c)
{
    ts_llm_tokenizer_t *tok = bundled_tok();
    ck_assert_int_eq(ts_llm_tokenizer_kind(tok), TS_LLM_TOK_SPM);
    ck_assert_int_eq(ts_llm_tokenizer_bos(tok), 1);
    ck_assert_int_eq(ts_llm_tokenizer_eos(tok), 2);
    size_t len;
    const char *p = ts_llm_tokenizer_piece(tok, 264, &len);
    ck_assert(len == 3 && memcmp(p, "ing", 3) == 0);
    ck_assert_ptr_null(ts_llm_tokenizer_piece(tok, 512, NULL));
    /* Known encodings (checked by hand against the vocabulary's scores). */
    int ids[64];
    size_t n;
    ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, "", 0, true, true, ids, 64, &n));
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(ids[0], 1);
    ck_assert_int_eq(ids[1], 2);
    /* A byte with no piece falls back to <0xAB> = id 3 + byte. */
    ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, "\x01", 1, false, false, ids, 64, &n));
    ck_assert_int_ge(n, 1);
    ck_assert_int_eq(ids[n - 1], 3 + 1);
    /* Too small a buffer is TS_ELIMIT with the size needed. */
    ck_assert_ts_status(ts_llm_tokenizer_encode(tok, "I dream of", 10, true, false, ids, 2, &n),
                        TS_ELIMIT);
    ck_assert_int_eq(n, 7);
    round_trip(tok, "I dream of electric sheep.");
    round_trip(tok, "Dimensions unfold, as I softly refine, 3.14159!");
    round_trip(tok, "tabs\tand\nnewlines  and  double spaces");
    round_trip(tok, "unicode: caf\xc3\xa9 \xce\xbb \xe2\x82\xac \xf0\x9f\x98\x80 end");
    round_trip(tok, "\x01\x02\xff raw bytes");
    ts_llm_tokenizer_free(tok);
}
END_TEST

START_TEST(test_tokenizer_rejects_corrupt)
{
    size_t size;
    uint8_t *buf = read_all(tok_path(), &size);
    ts_llm_tokenizer_t *tok = NULL;
    char err[256];
    /* Every truncation length is rejected cleanly. */
    for (size_t cut = 0; cut < size; cut += (cut < 64 ? 1 : 97)) {
        ck_assert_ts_status(ts_llm_tokenizer_load_buffer(buf, cut, 512, &tok, err, sizeof(err)),
                            TS_EFORMAT);
        ck_assert_ptr_null(tok);
    }
    /* Wrong vocab size: trailing bytes or truncation. */
    ck_assert_ts_status(ts_llm_tokenizer_load_buffer(buf, size, 511, &tok, err, sizeof(err)),
                        TS_EFORMAT);
    ck_assert_ts_status(ts_llm_tokenizer_load_buffer(buf, size, 513, &tok, err, sizeof(err)),
                        TS_EFORMAT);
    ck_assert_ts_status(ts_llm_tokenizer_load_buffer(buf, size, 0, &tok, err, sizeof(err)),
                        TS_EINVAL);
    /* A piece length beyond the file, and a negative one. */
    uint8_t *bad = malloc(size);
    memcpy(bad, buf, size);
    bad[8] = 0xff;
    bad[9] = 0xff;
    bad[10] = 0xff;
    bad[11] = 0x7f;
    ck_assert_ts_status(ts_llm_tokenizer_load_buffer(bad, size, 512, &tok, err, sizeof(err)),
                        TS_EFORMAT);
    ck_assert_msg(strstr(err, "length") != NULL, "message: %s", err);
    bad[11] = 0xff;
    ck_assert_ts_status(ts_llm_tokenizer_load_buffer(bad, size, 512, &tok, err, sizeof(err)),
                        TS_EFORMAT);
    ck_assert_ts_ok(ts_llm_tokenizer_load_buffer(buf, size, 512, &tok, err, sizeof(err)));
    ts_llm_tokenizer_free(tok);
    free(bad);
    free(buf);
}
END_TEST

/* ------------------------------------------------------------- loader */

START_TEST(test_loader_rejects_corrupt)
{
    size_t size;
    uint8_t *buf = read_all(model_path(), &size);
    ts_llm_model_t *m = NULL;
    char err[256];
    /* Every truncation of the header, then a sample of longer ones. */
    for (size_t cut = 0; cut < size; cut += (cut < 300 ? 1 : 4099)) {
        ts_status_t st = ts_llm_model_load_buffer(buf, cut, &m, err, sizeof(err));
        ck_assert_msg(st == TS_EFORMAT, "cut %zu: %s", cut, ts_status_name(st));
        ck_assert_ptr_null(m);
    }
    ck_assert_ts_status(ts_llm_model_load_buffer(buf, size - 1, &m, err, sizeof(err)), TS_EFORMAT);
    ck_assert_msg(strstr(err, "needs exactly") != NULL, "message: %s", err);
    /* Header fields: each made absurd in turn (sizes beyond the file,
     * negative, zero, non-divisible). */
    uint8_t *bad = malloc(size + 64);
    const int32_t evil[] = {0, -1, 3, 1 << 30, INT32_MIN, 65};
    for (int field = 0; field < 7; field++) {
        for (size_t e = 0; e < sizeof(evil) / sizeof(evil[0]); e++) {
            memcpy(bad, buf, size);
            memcpy(bad + 4 * field, &evil[e], 4);
            ts_status_t st = ts_llm_model_load_buffer(bad, size, &m, err, sizeof(err));
            ck_assert_msg(st == TS_EFORMAT, "field %d = %d: %s", field, evil[e],
                          ts_status_name(st));
            ck_assert_ptr_null(m);
        }
    }
    /* Trailing garbage. */
    memcpy(bad, buf, size);
    ck_assert_ts_status(ts_llm_model_load_buffer(bad, size + 4, &m, err, sizeof(err)), TS_EFORMAT);
    /* Version header: unsupported versions and truncation. */
    uint8_t v1[256 + 16] = {0};
    uint32_t magic = 0x616b3432u, ver = 2;
    memcpy(v1, &magic, 4);
    memcpy(v1 + 4, &ver, 4);
    ck_assert_ts_status(ts_llm_model_load_buffer(v1, sizeof(v1), &m, err, sizeof(err)), TS_ENOTSUP);
    ver = 1;
    memcpy(v1 + 4, &ver, 4);
    for (size_t cut = 0; cut <= sizeof(v1); cut++) {
        ts_status_t st = ts_llm_model_load_buffer(v1, cut, &m, err, sizeof(err));
        ck_assert_msg(st == TS_EFORMAT, "v1 cut %zu: %s", cut, ts_status_name(st));
    }
    ck_assert_ts_status(ts_llm_model_load("/nonexistent/model.bin", &m, err, sizeof(err)), TS_EIO);
    free(bad);
    free(buf);
}
END_TEST

/* Rewrite the bundled checkpoint as version 1 (ak42 header, new tensor order)
 * and as version 0 with a separate classifier: same greedy ids. */
START_TEST(test_loader_version1_and_unshared)
{
    size_t size;
    uint8_t *buf = read_all(model_path(), &size);
    int32_t h[7];
    memcpy(h, buf, sizeof(h));
    int dim = h[0], hid = h[1], L = h[2], V = h[5], S = h[6], hs = h[0] / h[3];
    const float *w = (const float *)(buf + 28);
    size_t o_emb = 0, o_att = o_emb + (size_t)V * dim, o_wq = o_att + (size_t)L * dim;
    size_t o_wk = o_wq + (size_t)L * dim * dim, o_wv = o_wk + (size_t)L * dim * dim;
    size_t o_wo = o_wv + (size_t)L * dim * dim, o_ffn = o_wo + (size_t)L * dim * dim;
    size_t o_w1 = o_ffn + (size_t)L * dim, o_w2 = o_w1 + (size_t)L * hid * dim;
    size_t o_w3 = o_w2 + (size_t)L * hid * dim, o_fin = o_w3 + (size_t)L * hid * dim;
    size_t n_w = o_fin + dim;
    uint8_t *v1 = calloc(1, 256 + n_w * 4 + (size_t)V * dim * 4);
    uint32_t magic = 0x616b3432u;
    int32_t ver = 1;
    memcpy(v1, &magic, 4);
    memcpy(v1 + 4, &ver, 4);
    memcpy(v1 + 8, h, sizeof(h));
    v1[36] = 1;
    float *d = (float *)(v1 + 256);
    size_t k = 0;
#define PUT(off, cnt) (memcpy(d + k, w + (off), (size_t)(cnt)*4), k += (size_t)(cnt))
    PUT(o_att, L * dim);
    PUT(o_ffn, L * dim);
    PUT(o_fin, dim);
    PUT(o_emb, V * dim);
    PUT(o_wq, L * dim * dim);
    PUT(o_wk, L * dim * dim);
    PUT(o_wv, L * dim * dim);
    PUT(o_wo, L * dim * dim);
    PUT(o_w1, L * hid * dim);
    PUT(o_w2, L * hid * dim);
    PUT(o_w3, L * hid * dim);
#undef PUT
    ts_llm_model_t *m1 = NULL, *m0 = NULL, *mu = NULL;
    char err[256] = "";
    ck_assert_msg(ts_llm_model_load_buffer(v1, 256 + k * 4, &m1, err, sizeof(err)) == TS_OK, "%s",
                  err);
    /* Version 1 with an unshared classifier (a copy of the embeddings). */
    v1[36] = 0;
    memcpy(d + k, w + o_emb, (size_t)V * dim * 4);
    ck_assert_msg(ts_llm_model_load_buffer(v1, 256 + (k + (size_t)V * dim) * 4, &mu, err,
                                           sizeof(err)) == TS_OK,
                  "%s", err);
    ck_assert(!ts_llm_model_config(mu)->shared_classifier);
    v1[36] = 7;
    ck_assert_ts_status(
        ts_llm_model_load_buffer(v1, 256 + (k + (size_t)V * dim) * 4, &m0, err, sizeof(err)),
        TS_EFORMAT);
    /* Version 0 with negative vocab: the classifier follows freq_cis. */
    size_t sz0 = size + (size_t)V * dim * 4;
    uint8_t *v0 = malloc(sz0);
    memcpy(v0, buf, size);
    int32_t negv = -V;
    memcpy(v0 + 16 + 4, &negv, 4);
    memcpy(v0 + size, w + o_emb, (size_t)V * dim * 4);
    ck_assert_msg(ts_llm_model_load_buffer(v0, sz0, &m0, err, sizeof(err)) == TS_OK, "%s", err);
    (void)S;
    (void)hs;
    int prompt[7] = {1, 303, 281, 269, 435, 447, 275};
    ts_llm_model_t *ms[3] = {m1, mu, m0};
    for (int i = 0; i < 3; i++) {
        int out[50];
        size_t n;
        ck_assert_ts_ok(ts_llm_generate(ms[i], NULL, prompt, 7, 49, false, 2, NULL, NULL, out, &n));
        for (int j = 0; j < 48; j++)
            ck_assert_msg(out[j + 1] == want_ids[j], "model %d position %d: %d vs %d", i, j,
                          out[j + 1], want_ids[j]);
    }
    ts_llm_model_free(m0);
    ts_llm_model_free(m1);
    ts_llm_model_free(mu);
    free(v0);
    free(v1);
    free(buf);
}
END_TEST

/* Every allocation failure on the load path is clean (no leak, no crash). */
START_TEST(test_loader_alloc_failures)
{
    int64_t live = ts_alloc_live();
    for (uint64_t n = 1; n < 64; n++) {
        ts_llm_model_t *m = NULL;
        ts_llm_tokenizer_t *t = NULL;
        ts_alloc_fail_after(n, false);
        ts_status_t st = ts_llm_model_load(model_path(), &m, NULL, 0);
        ts_alloc_fail_after(0, false);
        ck_assert(st == TS_OK || st == TS_ENOMEM);
        ts_llm_model_free(m);
        ts_alloc_fail_after(n, false);
        st = ts_llm_tokenizer_load(tok_path(), 512, &t, NULL, 0);
        ts_alloc_fail_after(0, false);
        ck_assert(st == TS_OK || st == TS_ENOMEM);
        ts_llm_tokenizer_free(t);
    }
    ck_assert_int_eq(ts_alloc_live(), live);
}
END_TEST

TS_TEST_SUITE(llm)
{
    Suite *s = suite_create("llm");
    TCase *tc = ts_tcase("bundled", 0);
    tcase_add_test(tc, test_bundled_greedy_ids);
    tcase_add_test(tc, test_forward_positions);
    tcase_add_test(tc, test_tokenizer_llama2c);
    tcase_add_test(tc, test_tokenizer_rejects_corrupt);
    tcase_add_test(tc, test_loader_rejects_corrupt);
    tcase_add_test(tc, test_loader_version1_and_unshared);
    tcase_add_test(tc, test_loader_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

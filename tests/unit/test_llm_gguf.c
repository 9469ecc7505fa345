/*
 * GGUF loading on small files the test writes itself (the minimal GGUF writer
 * of tests/unit/gguf_writer.h). Oracles: values exactly representable in F16 and Q8_0, so
 * dequantization must reproduce them bit for bit; the same Llama weights
 * written as a llama2.c checkpoint must give identical logits; an independent
 * double-precision GPT-2 forward (full attention, no cache) written here;
 * tokenizer encodings worked out by hand; every truncation of a file.
 */
#include "tests/unit/ts_test.h"

#include "core/llm/llm.h"

#include "tests/unit/gguf_writer.h"

/* ------------------------------------------------------------- llama */

enum { D = 32, H = 64, NL = 2, NH = 4, NKV = 2, V = 40, CTX = 16, HD = D / NH, KVD = NKV * HD };

typedef struct {
    float emb[V * D], fin[D], att[NL][D], ffn[NL][D];
    float wq[NL][D * D], wk[NL][KVD * D], wv[NL][KVD * D], wo[NL][D * D];
    float w1[NL][H * D], w2[NL][D * H], w3[NL][H * D];
} llama_w_t;

static void llama_fill(llama_w_t *w)
{
    uint32_t s = 42;
    float *all = (float *)w;
    for (size_t i = 0; i < sizeof(*w) / 4; i++)
        all[i] = rnd_val(&s);
    for (int l = 0; l < NL; l++)
        for (int j = 0; j < D; j++) {
            w->att[l][j] = 1.0f;
            w->ffn[l][j] = 0.5f + (float)j / 64.0f;
        }
}

static void llama_meta(wb_t *m, uint64_t *n_kv)
{
    kv_str(m, "general.architecture", "llama");
    kv_u32(m, "llama.context_length", CTX);
    kv_u32(m, "llama.embedding_length", D);
    kv_u32(m, "llama.feed_forward_length", H);
    kv_u32(m, "llama.block_count", NL);
    kv_u32(m, "llama.attention.head_count", NH);
    kv_u32(m, "llama.attention.head_count_kv", NKV);
    kv_f32(m, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    kv_f32(m, "llama.rope.freq_base", 10000.0f);
    kv_u32(m, "general.alignment", 32);
    *n_kv = 10;
}

static size_t llama_tensors(const llama_w_t *w, wt_t *t, int type)
{
    size_t n = 0;
#define T(nm, a, b, ptr, ty)                                                                       \
    (snprintf(t[n].name, 64, "%s", nm), t[n].ne0 = a, t[n].ne1 = b, t[n].type = ty, t[n].v = ptr,  \
     n++)
    T("token_embd.weight", D, V, w->emb, type);
    T("output_norm.weight", D, 1, w->fin, T_F32);
    char nm[64];
    for (int l = 0; l < NL; l++) {
        snprintf(nm, 64, "blk.%d.attn_norm.weight", l);
        T(nm, D, 1, w->att[l], T_F32);
        snprintf(nm, 64, "blk.%d.ffn_norm.weight", l);
        T(nm, D, 1, w->ffn[l], T_F32);
        snprintf(nm, 64, "blk.%d.attn_q.weight", l);
        T(nm, D, D, w->wq[l], type);
        snprintf(nm, 64, "blk.%d.attn_k.weight", l);
        T(nm, D, KVD, w->wk[l], type);
        snprintf(nm, 64, "blk.%d.attn_v.weight", l);
        T(nm, D, KVD, w->wv[l], type);
        snprintf(nm, 64, "blk.%d.attn_output.weight", l);
        T(nm, D, D, w->wo[l], type);
        snprintf(nm, 64, "blk.%d.ffn_gate.weight", l);
        T(nm, D, H, w->w1[l], type);
        snprintf(nm, 64, "blk.%d.ffn_down.weight", l);
        T(nm, H, D, w->w2[l], T_F16);
        snprintf(nm, 64, "blk.%d.ffn_up.weight", l);
        T(nm, D, H, w->w3[l], type);
    }
#undef T
    return n;
}

/* The same weights as a llama2.c version 1 checkpoint. */
static uint8_t *llama2c_build(const llama_w_t *w, size_t *size)
{
    wb_t b = {0};
    w_u32(&b, 0x616b3432u);
    w_u32(&b, 1);
    int32_t h[7] = {D, H, NL, NH, NKV, V, CTX};
    w_bytes(&b, h, sizeof(h));
    uint8_t shared = 1;
    w_bytes(&b, &shared, 1);
    uint8_t zero[256] = {0};
    w_bytes(&b, zero, 256 - b.n);
    for (int l = 0; l < NL; l++)
        w_bytes(&b, w->att[l], sizeof(w->att[l]));
    for (int l = 0; l < NL; l++)
        w_bytes(&b, w->ffn[l], sizeof(w->ffn[l]));
    w_bytes(&b, w->fin, sizeof(w->fin));
    w_bytes(&b, w->emb, sizeof(w->emb));
    w_bytes(&b, w->wq, sizeof(w->wq));
    w_bytes(&b, w->wk, sizeof(w->wk));
    w_bytes(&b, w->wv, sizeof(w->wv));
    w_bytes(&b, w->wo, sizeof(w->wo));
    w_bytes(&b, w->w1, sizeof(w->w1));
    w_bytes(&b, w->w2, sizeof(w->w2));
    w_bytes(&b, w->w3, sizeof(w->w3));
    *size = b.n;
    return b.b;
}

START_TEST(test_gguf_llama_matches_llama2c)
{
    llama_w_t *w = calloc(1, sizeof(*w));
    llama_fill(w);
    for (int j = 0; j < D; j++)
        w->fin[j] = 1.0f;
    size_t n2c;
    uint8_t *b2c = llama2c_build(w, &n2c);
    ts_llm_model_t *ref = NULL;
    char err[256] = "";
    ck_assert_msg(ts_llm_model_load_buffer(b2c, n2c, &ref, err, sizeof(err)) == TS_OK, "%s", err);
    const int types[3] = {T_F32, T_F16, T_Q8_0};
    for (int ti = 0; ti < 3; ti++) {
        wb_t meta = {0};
        uint64_t nkv;
        llama_meta(&meta, &nkv);
        wt_t t[64];
        size_t nt = llama_tensors(w, t, types[ti]);
        size_t size;
        uint8_t *g = gguf_build(&meta, nkv, t, nt, &size);
        ts_llm_model_t *m = NULL;
        ck_assert_msg(ts_llm_model_load_buffer(g, size, &m, err, sizeof(err)) == TS_OK,
                      "type %d: %s", types[ti], err);
        const ts_llm_config_t *c = ts_llm_model_config(m);
        ck_assert_int_eq(c->arch, TS_LLM_ARCH_LLAMA);
        ck_assert_int_eq(c->dim, D);
        ck_assert_int_eq(c->n_kv_heads, NKV);
        ck_assert_int_eq(c->vocab_size, V);
        ck_assert(c->shared_classifier);
        /* Same logits, bit for bit, at every position (GQA, RoPE, SwiGLU). */
        ts_llm_state_t *sa, *sb;
        ck_assert_ts_ok(ts_llm_state_new(m, &sa));
        ck_assert_ts_ok(ts_llm_state_new(ref, &sb));
        for (int pos = 0; pos < CTX; pos++) {
            const float *la, *lb;
            int tok = (pos * 7 + 3) % V;
            ck_assert_ts_ok(ts_llm_forward(m, sa, tok, pos, &la));
            ck_assert_ts_ok(ts_llm_forward(ref, sb, tok, pos, &lb));
            for (int i = 0; i < V; i++)
                ck_assert_msg(la[i] == lb[i], "type %d pos %d logit %d: %g vs %g", types[ti], pos,
                              i, la[i], lb[i]);
        }
        ts_llm_state_free(sa);
        ts_llm_state_free(sb);
        ts_llm_model_free(m);
        /* Every truncation is a clean TS_EFORMAT. */
        for (size_t cut = 0; cut < size; cut += cut < 1024 ? 1 : 331) {
            ts_status_t st = ts_llm_model_load_buffer(g, cut, &m, err, sizeof(err));
            ck_assert_msg(st == TS_EFORMAT, "cut %zu: %s", cut, ts_status_name(st));
            ck_assert_ptr_null(m);
        }
        free(g);
        free(meta.b);
    }
    ts_llm_model_free(ref);
    free(b2c);
    free(w);
}
END_TEST

START_TEST(test_gguf_corrupt)
{
    llama_w_t *w = calloc(1, sizeof(*w));
    llama_fill(w);
    wb_t meta = {0};
    uint64_t nkv;
    llama_meta(&meta, &nkv);
    wt_t t[64];
    size_t nt = llama_tensors(w, t, T_F32), size;
    uint8_t *g = gguf_build(&meta, nkv, t, nt, &size);
    uint8_t *bad = malloc(size);
    ts_llm_model_t *m = NULL;
    char err[256];
#define EXPECT(st_want, what)                                                                      \
    do {                                                                                           \
        ts_status_t st = ts_llm_model_load_buffer(bad, size, &m, err, sizeof(err));                \
        ck_assert_msg(st == (st_want), "%s: %s (%s)", what, ts_status_name(st), err);              \
        ck_assert_ptr_null(m);                                                                     \
    } while (0)
    memcpy(bad, g, size);
    bad[4] = 9; /* version */
    EXPECT(TS_ENOTSUP, "version");
    memcpy(bad, g, size);
    memset(bad + 8, 0xff, 8); /* tensor count */
    EXPECT(TS_EFORMAT, "tensor count");
    memcpy(bad, g, size);
    memset(bad + 16, 0x7f, 8); /* kv count */
    EXPECT(TS_EFORMAT, "kv count");
    memcpy(bad, g, size);
    memset(bad + 24, 0xee, 8); /* first key length */
    EXPECT(TS_EFORMAT, "key length");
    /* Find the first tensor name and corrupt its info fields. */
    const char *key = "token_embd.weight";
    uint8_t *p = memmem(g, size, key, strlen(key));
    ck_assert_ptr_nonnull(p);
    size_t o = (size_t)(p - g) + strlen(key);
    memcpy(bad, g, size);
    bad[o] = 7; /* n_dims */
    EXPECT(TS_EFORMAT, "n_dims");
    memcpy(bad, g, size);
    memset(bad + o + 4 + 8, 0x40, 8); /* ne[1] huge: data beyond the file */
    EXPECT(TS_EFORMAT, "shape");
    memcpy(bad, g, size);
    memset(bad + o + 4 + 16 + 4, 0x20, 8); /* offset beyond the file */
    EXPECT(TS_EFORMAT, "offset");
    memcpy(bad, g, size);
    bad[o + 4 + 16] = 2; /* ggml type Q4_1: unsupported */
    EXPECT(TS_ENOTSUP, "type");
    memcpy(bad, g, size);
    p = memmem(bad, size, "general.architecture", 20);
    memcpy(p + 20 + 4 + 8, "mamba", 5);
    EXPECT(TS_ENOTSUP, "architecture");
    memcpy(bad, g, size);
    p = memmem(bad, size, "llama.block_count", 17);
    memset(p + 17 + 4, 0xff, 4);
    EXPECT(TS_EFORMAT, "block count");
    memcpy(bad, g, size);
    p = memmem(bad, size, "general.alignment", 17);
    p[17 + 4] = 33;
    EXPECT(TS_EFORMAT, "alignment");
    memcpy(bad, g, size);
    p = memmem(bad, size, "blk.1.ffn_up.weight", 19);
    p[5] = 'X'; /* a required tensor goes missing */
    EXPECT(TS_EFORMAT, "missing tensor");
    ck_assert_msg(strstr(err, "blk.1.ffn_up.weight") != NULL, "%s", err);
    /* A NaN weight. */
    memcpy(bad, g, size);
    float nan = NAN;
    memcpy(bad + size - 4 * D, &nan, 4); /* inside the last tensor (F32) */
    EXPECT(TS_EFORMAT, "NaN weight");
#undef EXPECT
    free(bad);
    free(g);
    free(meta.b);
    free(w);
}
END_TEST

/* ------------------------------------------------------------- gpt-2 */

enum { GD = 32, GH = 64, GL = 2, GNH = 2, GV = 24, GCTX = 8, GHD = GD / GNH };

typedef struct {
    float wte[GV * GD], wpe[GCTX * GD], lnf_w[GD], lnf_b[GD];
    float ln1_w[GL][GD], ln1_b[GL][GD], ln2_w[GL][GD], ln2_b[GL][GD];
    float qkv_w[GL][3 * GD * GD], qkv_b[GL][3 * GD], o_w[GL][GD * GD], o_b[GL][GD];
    float up_w[GL][GH * GD], up_b[GL][GH], down_w[GL][GD * GH], down_b[GL][GD];
} gpt2_w_t;

static void ln_ref(double *o, const double *x, const float *w, const float *b)
{
    double mean = 0, var = 0;
    for (int i = 0; i < GD; i++)
        mean += x[i];
    mean /= GD;
    for (int i = 0; i < GD; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= GD;
    double r = 1.0 / sqrt(var + 1e-5);
    for (int i = 0; i < GD; i++)
        o[i] = (x[i] - mean) * r * w[i] + b[i];
}

/* Independent GPT-2 forward: full causal attention over tokens[0..n). */
static void gpt2_ref(const gpt2_w_t *w, const int *tok, int n, double *logits)
{
    static double x[GCTX][GD], q[GCTX][GD], k[GCTX][GD], v[GCTX][GD], h[GD], a[GD], u[GH];
    for (int t = 0; t < n; t++)
        for (int i = 0; i < GD; i++)
            x[t][i] = (double)w->wte[tok[t] * GD + i] + w->wpe[t * GD + i];
    for (int l = 0; l < GL; l++) {
        for (int t = 0; t < n; t++) {
            ln_ref(h, x[t], w->ln1_w[l], w->ln1_b[l]);
            for (int r = 0; r < 3 * GD; r++) {
                double s = w->qkv_b[l][r];
                for (int i = 0; i < GD; i++)
                    s += (double)w->qkv_w[l][r * GD + i] * h[i];
                (r < GD ? q[t] : r < 2 * GD ? k[t] : v[t])[r % GD] = s;
            }
        }
        for (int t = 0; t < n; t++) {
            for (int hh = 0; hh < GNH; hh++) {
                double sc[GCTX], mx = -1e300, sum = 0;
                for (int s = 0; s <= t; s++) {
                    sc[s] = 0;
                    for (int i = 0; i < GHD; i++)
                        sc[s] += q[t][hh * GHD + i] * k[s][hh * GHD + i];
                    sc[s] /= sqrt((double)GHD);
                    mx = fmax(mx, sc[s]);
                }
                for (int s = 0; s <= t; s++)
                    sum += (sc[s] = exp(sc[s] - mx));
                for (int i = 0; i < GHD; i++) {
                    double acc = 0;
                    for (int s = 0; s <= t; s++)
                        acc += sc[s] / sum * v[s][hh * GHD + i];
                    a[hh * GHD + i] = acc;
                }
            }
            for (int r = 0; r < GD; r++) {
                double s = w->o_b[l][r];
                for (int i = 0; i < GD; i++)
                    s += (double)w->o_w[l][r * GD + i] * a[i];
                h[r] = s;
            }
            for (int i = 0; i < GD; i++)
                q[t][i] = x[t][i] + h[i]; /* reuse q as the post-attention stream */
        }
        for (int t = 0; t < n; t++) {
            memcpy(x[t], q[t], sizeof(x[t]));
            ln_ref(h, x[t], w->ln2_w[l], w->ln2_b[l]);
            for (int r = 0; r < GH; r++) {
                double s = w->up_b[l][r];
                for (int i = 0; i < GD; i++)
                    s += (double)w->up_w[l][r * GD + i] * h[i];
                u[r] = 0.5 * s * (1 + tanh(sqrt(2 / M_PI) * (s + 0.044715 * s * s * s)));
            }
            for (int r = 0; r < GD; r++) {
                double s = w->down_b[l][r];
                for (int i = 0; i < GH; i++)
                    s += (double)w->down_w[l][r * GH + i] * u[i];
                x[t][r] += s;
            }
        }
    }
    ln_ref(h, x[n - 1], w->lnf_w, w->lnf_b);
    for (int r = 0; r < GV; r++) {
        double s = 0;
        for (int i = 0; i < GD; i++)
            s += (double)w->wte[r * GD + i] * h[i];
        logits[r] = s;
    }
}

static uint8_t *gpt2_build(const gpt2_w_t *w, bool fused, int type, size_t *size)
{
    const gguf_gpt2_t g = {.dim = GD,
                           .hid = GH,
                           .layers = GL,
                           .heads = GNH,
                           .vocab = GV,
                           .ctx = GCTX,
                           .wte = w->wte,
                           .wpe = w->wpe,
                           .lnf_w = w->lnf_w,
                           .lnf_b = w->lnf_b,
                           .ln1_w = w->ln1_w[0],
                           .ln1_b = w->ln1_b[0],
                           .ln2_w = w->ln2_w[0],
                           .ln2_b = w->ln2_b[0],
                           .qkv_w = w->qkv_w[0],
                           .qkv_b = w->qkv_b[0],
                           .o_w = w->o_w[0],
                           .o_b = w->o_b[0],
                           .up_w = w->up_w[0],
                           .up_b = w->up_b[0],
                           .down_w = w->down_w[0],
                           .down_b = w->down_b[0]};
    return gguf_gpt2_build(&g, fused, type, T_F16, size);
}

START_TEST(test_gguf_gpt2_reference)
{
    gpt2_w_t *w = calloc(1, sizeof(*w));
    uint32_t s = 7;
    float *all = (float *)w;
    for (size_t i = 0; i < sizeof(*w) / 4; i++)
        all[i] = rnd_val(&s);
    for (int l = 0; l < GL; l++)
        for (int i = 0; i < GD; i++)
            w->ln1_w[l][i] = w->ln2_w[l][i] = 1.0f + (float)i / 64;
    const int toks[GCTX] = {3, 17, 5, 5, 23, 0, 11, 8};
    double ref[GV];
    const int types[3] = {T_F32, T_F16, T_Q8_0};
    float first[GV];
    for (int variant = 0; variant < 4; variant++) {
        bool fused = variant != 3;
        int type = types[variant < 3 ? variant : 0];
        size_t size;
        uint8_t *g = gpt2_build(w, fused, type, &size);
        ts_llm_model_t *m = NULL;
        char err[256] = "";
        ck_assert_msg(ts_llm_model_load_buffer(g, size, &m, err, sizeof(err)) == TS_OK, "%s", err);
        ck_assert_int_eq(ts_llm_model_config(m)->arch, TS_LLM_ARCH_GPT2);
        ts_llm_state_t *st;
        ck_assert_ts_ok(ts_llm_state_new(m, &st));
        for (int pos = 0; pos < GCTX; pos++) {
            const float *lg;
            ck_assert_ts_ok(ts_llm_forward(m, st, toks[pos], pos, &lg));
            gpt2_ref(w, toks, pos + 1, ref);
            for (int i = 0; i < GV; i++)
                ck_assert_msg(fabs(lg[i] - ref[i]) < 1e-4 * (1 + fabs(ref[i])),
                              "variant %d pos %d logit %d: %g vs %g", variant, pos, i, lg[i],
                              ref[i]);
            if (pos == GCTX - 1 && variant == 0)
                memcpy(first, lg, sizeof(first));
            if (pos == GCTX - 1 && variant > 0) /* dequantized values are exact */
                ck_assert_int_eq(memcmp(first, lg, sizeof(first)), 0);
        }
        ts_llm_state_free(st);
        ts_llm_model_free(m);
        free(g);
    }
    free(w);
}
END_TEST

/* ------------------------------------------------------------- tokenizers */

static uint8_t *spm_gguf(size_t *size)
{
    static const char *const toks[] = {"<unk>",
                                       "<s>",
                                       "</s>",
                                       "\xe2\x96\x81",
                                       "a",
                                       "b",
                                       "\xe2\x96\x81"
                                       "a",
                                       "ab",
                                       "\xe2\x96\x81"
                                       "ab",
                                       "<0x63>",
                                       "<0x0A>"};
    static const float scores[] = {0, 0, 0, -5, -6, -7, -1, -2, -0.5f, 0, 0};
    wb_t m = {0};
    kv_str(&m, "general.architecture", "llama");
    kv_str(&m, "tokenizer.ggml.model", "llama");
    kv_strs(&m, "tokenizer.ggml.tokens", toks, 11);
    kv_f32s(&m, "tokenizer.ggml.scores", scores, 11);
    kv_u32(&m, "tokenizer.ggml.bos_token_id", 1);
    kv_u32(&m, "tokenizer.ggml.eos_token_id", 2);
    uint8_t *g = gguf_build(&m, 6, NULL, 0, size);
    free(m.b);
    return g;
}

static void decode_all(const ts_llm_tokenizer_t *t, const int *ids, size_t n, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        ck_assert_ts_ok(
            ts_llm_tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], out + w, 256 - w, &k));
        w += k;
    }
    out[w] = '\0';
}

START_TEST(test_gguf_tokenizer_spm)
{
    size_t size;
    uint8_t *g = spm_gguf(&size);
    ts_llm_tokenizer_t *t = NULL;
    char err[256] = "";
    ck_assert_msg(ts_llm_tokenizer_load_buffer(g, size, 0, &t, err, sizeof(err)) == TS_OK, "%s",
                  err);
    ck_assert_int_eq(ts_llm_tokenizer_kind(t), TS_LLM_TOK_SPM);
    int ids[32];
    size_t n;
    /* "ab ab" -> "▁ab▁ab": merges by score (▁a, then ▁ab, ...) -> [▁ab, ▁ab]. */
    ck_assert_ts_ok(ts_llm_tokenizer_encode(t, "ab ab", 5, true, false, ids, 32, &n));
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(ids[0], 1);
    ck_assert_int_eq(ids[1], 8);
    ck_assert_int_eq(ids[2], 8);
    char out[256];
    decode_all(t, ids, n, out);
    ck_assert_str_eq(out, "ab ab");
    /* Byte fallback: 'c' -> <0x63>, '\n' -> <0x0A>; unknown byte 'z' -> <unk>. */
    ck_assert_ts_ok(ts_llm_tokenizer_encode(t, "ac\n", 3, false, false, ids, 32, &n));
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(ids[0], 6);
    ck_assert_int_eq(ids[1], 9);
    ck_assert_int_eq(ids[2], 10);
    decode_all(t, ids, n, out);
    ck_assert_str_eq(out, "ac\n");
    ck_assert_ts_ok(ts_llm_tokenizer_encode(t, "z", 1, false, false, ids, 32, &n));
    ck_assert_int_eq(ids[n - 1], 0);
    ts_llm_tokenizer_free(t);
    /* add_space_prefix = false: no dummy prefix, so "ab" stays "ab". */
    {
        wb_t m = {0};
        static const char *const toks[] = {"<unk>",
                                           "<s>",
                                           "</s>",
                                           "\xe2\x96\x81",
                                           "a",
                                           "b",
                                           "\xe2\x96\x81"
                                           "a",
                                           "ab",
                                           "\xe2\x96\x81"
                                           "ab"};
        static const float scores[] = {0, 0, 0, -5, -6, -7, -1, -2, -0.5f};
        kv_str(&m, "tokenizer.ggml.model", "llama");
        kv_strs(&m, "tokenizer.ggml.tokens", toks, 9);
        kv_f32s(&m, "tokenizer.ggml.scores", scores, 9);
        w_str(&m, "tokenizer.ggml.add_space_prefix");
        w_u32(&m, 7);
        uint8_t no = 0;
        w_bytes(&m, &no, 1);
        size_t sz;
        uint8_t *g2 = gguf_build(&m, 4, NULL, 0, &sz);
        ck_assert_ts_ok(ts_llm_tokenizer_load_buffer(g2, sz, 0, &t, err, sizeof(err)));
        ck_assert_ts_ok(ts_llm_tokenizer_encode(t, "ab", 2, false, false, ids, 32, &n));
        ck_assert_int_eq(n, 1);
        ck_assert_int_eq(ids[0], 7);
        decode_all(t, ids, n, out);
        ck_assert_str_eq(out, "ab");
        free(g2);
        free(m.b);
    }
    /* The model's vocab size must agree. */
    ts_llm_tokenizer_free(t);
    ck_assert_ts_status(ts_llm_tokenizer_load_buffer(g, size, 12, &t, err, sizeof(err)),
                        TS_EFORMAT);
    for (size_t cut = 0; cut < size; cut++) {
        ts_status_t st = ts_llm_tokenizer_load_buffer(g, cut, 0, &t, err, sizeof(err));
        ck_assert_msg(st != TS_OK, "cut %zu loaded", cut);
        ck_assert_ptr_null(t);
    }
    free(g);
}
END_TEST

static uint8_t *gpt2_tok_gguf(size_t *size, const char ***vocab_out)
{
    /* 256 byte characters (GPT-2's table), then merged pieces. */
    static char store[300][16];
    static const char *toks[300];
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int cp = b;
        bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        if (!printable) {
            int k = 0;
            for (int i = 0; i < b; i++)
                k += !((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174));
            cp = 256 + k;
        }
        if (cp < 0x80) {
            store[n][0] = (char)cp;
            store[n][1] = 0;
        } else {
            store[n][0] = (char)(0xC0 | (cp >> 6));
            store[n][1] = (char)(0x80 | (cp & 0x3F));
            store[n][2] = 0;
        }
        toks[n] = store[n];
        n++;
    }
    const char *extra[] = {"\xc4\xa0t", "he",        "\xc4\xa0the",  "ll",
                           "llo",       "\xc4\xa0w", "<|endoftext|>"};
    for (int i = 0; i < 7; i++)
        toks[n++] = extra[i];
    static const char *const merges[] = {"\xc4\xa0 t", "h e",  "\xc4\xa0t he",
                                         "l l",        "ll o", "\xc4\xa0 w"};
    wb_t m = {0};
    kv_str(&m, "tokenizer.ggml.model", "gpt2");
    kv_strs(&m, "tokenizer.ggml.tokens", toks, (size_t)n);
    kv_strs(&m, "tokenizer.ggml.merges", merges, 6);
    kv_u32(&m, "tokenizer.ggml.bos_token_id", 262);
    kv_u32(&m, "tokenizer.ggml.eos_token_id", 262);
    *vocab_out = toks;
    uint8_t *g = gguf_build(&m, 5, NULL, 0, size);
    free(m.b);
    return g;
}

START_TEST(test_gguf_tokenizer_gpt2)
{
    size_t size;
    const char **vocab;
    uint8_t *g = gpt2_tok_gguf(&size, &vocab);
    ts_llm_tokenizer_t *t = NULL;
    char err[256] = "";
    ck_assert_msg(ts_llm_tokenizer_load_buffer(g, size, 263, &t, err, sizeof(err)) == TS_OK, "%s",
                  err);
    ck_assert_int_eq(ts_llm_tokenizer_kind(t), TS_LLM_TOK_GPT2);
    int ids[64];
    size_t n;
    /* " the hello" -> [Ġthe][Ġ][h][e][llo]: "Ġ h" has no merge; "h e" rank 1
     * fires, then "l l" and "ll o". */
    const char *s = " the hello";
    ck_assert_ts_ok(ts_llm_tokenizer_encode(t, s, strlen(s), false, false, ids, 64, &n));
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(ids[0], 258); /* Ġthe */
    ck_assert_int_eq(ids[1], 32);  /* Ġ: byte 0x20 (character U+0120) */
    ck_assert_int_eq(ids[2], 257); /* he */
    ck_assert_int_eq(ids[3], 260); /* llo */
    char out[256];
    decode_all(t, ids, n, out);
    ck_assert_str_eq(out, s);
    /* Pre-tokenizer: contractions, digits, punctuation and whitespace runs. */
    const char *samples[] = {"I'm here, it's 2024!!  ok\n\nnew\tline  ",
                             "caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac"
                             "5",
                             "   ", "x"};
    for (int i = 0; i < 4; i++) {
        ck_assert_ts_ok(
            ts_llm_tokenizer_encode(t, samples[i], strlen(samples[i]), false, false, ids, 64, &n));
        decode_all(t, ids, n, out);
        ck_assert_str_eq(out, samples[i]);
    }
    /* "I'm" splits as "I" + "'m": no token spans the apostrophe boundary. */
    ck_assert_ts_ok(ts_llm_tokenizer_encode(t, "I'm", 3, false, false, ids, 64, &n));
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(ts_llm_tokenizer_bos(t), 262);
    /* BOS/EOS are control tokens: they decode to nothing. */
    size_t k;
    ck_assert_ts_ok(ts_llm_tokenizer_decode(t, -1, 262, out, sizeof(out), &k));
    ck_assert_int_eq(k, 0);
    ts_llm_tokenizer_free(t);
    free(g);
}
END_TEST

TS_TEST_SUITE(llm_gguf)
{
    Suite *s = suite_create("llm_gguf");
    TCase *tc = ts_tcase("gguf", 0);
    tcase_add_test(tc, test_gguf_llama_matches_llama2c);
    tcase_add_test(tc, test_gguf_corrupt);
    tcase_add_test(tc, test_gguf_gpt2_reference);
    tcase_add_test(tc, test_gguf_tokenizer_spm);
    tcase_add_test(tc, test_gguf_tokenizer_gpt2);
    suite_add_tcase(s, tc);
    return s;
}

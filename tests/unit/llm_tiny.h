/*
 * A tiny synthetic llama2.c model and tokenizer written by tests (the bundled
 * aidreams260K takes minutes per encrypted token on a 2-core machine), and a
 * tiny synthetic GPT-2 GGUF (tiny_gpt2_gguf, at the end).
 * Shape: dim 16, hidden 32, 1 layer, 2 heads of 8, vocab 32, seq_len 8, its
 * own classifier;
 * weights from a fixed LCG, so every run writes the same bytes. The
 * vocabulary: <unk> <s> </s>, then " ", "a".."z", ".", ",".
 */
#ifndef TS_TEST_LLM_TINY_H
#define TS_TEST_LLM_TINY_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/gguf_writer.h"

#define TINY_DIM    16
#define TINY_HID    32
#define TINY_LAYERS 1
#define TINY_HEADS  2
#define TINY_VOCAB  32
#define TINY_SEQ    8

static inline float tiny_rand(uint64_t *s, float a)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*s >> 11) / 9007199254740992.0; /* [0, 1) */
    return (float)((2.0 * u - 1.0) * a);
}

static inline int tiny_put(FILE *f, float *v, size_t n, uint64_t *s, float a, float bias)
{
    for (size_t i = 0; i < n; i++)
        v[i] = bias + tiny_rand(s, a);
    return fwrite(v, sizeof(float), n, f) == n ? 0 : -1;
}

/* Write the model to `path`; returns 0 on success. */
static inline int tiny_model_write(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    /* negative vocab: a classifier of its own (wcls after the RoPE tables) */
    int32_t hdr[7] = {TINY_DIM,   TINY_HID,    TINY_LAYERS, TINY_HEADS,
                      TINY_HEADS, -TINY_VOCAB, TINY_SEQ};
    float buf[TINY_VOCAB * TINY_DIM];
    uint64_t s = 0x7e55e7a;
    int rc = fwrite(hdr, sizeof hdr, 1, f) == 1 ? 0 : -1;
    const int d = TINY_DIM, h = TINY_HID, L = TINY_LAYERS;
    rc |= tiny_put(f, buf, (size_t)TINY_VOCAB * d, &s, 1.0f, 0.0f); /* token embedding */
    rc |= tiny_put(f, buf, (size_t)L * d, &s, 0.2f, 1.0f);          /* rms_att */
    for (int m = 0; m < 4; m++) /* wq wk (small: scores near 0) wv wo */
        for (int l = 0; l < L; l++)
            rc |= tiny_put(f, buf, (size_t)d * d, &s, m < 2 ? 0.15f : 0.4f, 0.0f);
    rc |= tiny_put(f, buf, (size_t)L * d, &s, 0.2f, 1.0f); /* rms_ffn */
    for (int l = 0; l < L; l++)
        rc |= tiny_put(f, buf, (size_t)h * d, &s, 0.4f, 0.0f); /* w1 */
    for (int l = 0; l < L; l++)
        rc |= tiny_put(f, buf, (size_t)d * h, &s, 0.3f, 0.0f); /* w2 */
    for (int l = 0; l < L; l++)
        rc |= tiny_put(f, buf, (size_t)h * d, &s, 0.4f, 0.0f); /* w3 */
    rc |= tiny_put(f, buf, (size_t)d, &s, 0.2f, 1.0f);         /* rms_final */
    /* the legacy RoPE tables (skipped by loaders) */
    memset(buf, 0, sizeof buf);
    size_t fc = (size_t)TINY_SEQ * (d / TINY_HEADS) / 2;
    rc |= fwrite(buf, sizeof(float), fc, f) == fc ? 0 : -1;
    rc |= fwrite(buf, sizeof(float), fc, f) == fc ? 0 : -1;
    rc |= tiny_put(f, buf, (size_t)TINY_VOCAB * d, &s, 1.0f, 0.0f); /* wcls */
    rc |= fclose(f);
    return rc;
}

/* Write the tokenizer to `path`; returns 0 on success. */
static inline int tiny_tokenizer_write(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    static const char *special[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    int32_t maxlen = 8;
    int rc = fwrite(&maxlen, 4, 1, f) == 1 ? 0 : -1;
    for (int i = 0; i < TINY_VOCAB; i++) {
        char piece[8];
        if (i < 3)
            snprintf(piece, sizeof piece, "%s", special[i]);
        else if (i == 3)
            snprintf(piece, sizeof piece, " ");
        else if (i < 30)
            snprintf(piece, sizeof piece, "%c", 'a' + (i - 4));
        else
            snprintf(piece, sizeof piece, "%c", i == 30 ? '.' : ',');
        float score = 0.0f;
        int32_t len = (int32_t)strlen(piece);
        rc |= fwrite(&score, 4, 1, f) == 1 ? 0 : -1;
        rc |= fwrite(&len, 4, 1, f) == 1 ? 0 : -1;
        rc |= fwrite(piece, 1, (size_t)len, f) == (size_t)len ? 0 : -1;
    }
    rc |= fclose(f);
    return rc;
}

/*
 * The tiny GPT-2: dim 16, FFN 32 (GPT-2 has 4 x dim; 2 x halves the look-ups
 * of the hybrid and tfhe tests), 1 layer, 2 heads of 8, vocab
 * 32, context 8, LayerNorm gains 1 +- 0.2 and biases +- 0.1, every linear
 * layer with a bias, learned positions (+- 0.3), tied LM head; F32 tensors
 * from the same LCG. wq and wk are small (scores near 0, as in the llama).
 * Returns the GGUF bytes (free()) or NULL.
 */
#define TINY_G2_HID 32
static inline uint8_t *tiny_gpt2_gguf(size_t *size)
{
    enum { d = TINY_DIM, h = TINY_G2_HID, V = TINY_VOCAB, C = TINY_SEQ };
    static float wte[V * d], wpe[C * d], lnf_w[d], lnf_b[d], ln1_w[d], ln1_b[d], ln2_w[d], ln2_b[d],
        qkv_w[3 * d * d], qkv_b[3 * d], o_w[d * d], o_b[d], up_w[h * d], up_b[h], down_w[d * h],
        down_b[d];
    struct {
        float *v;
        size_t n;
        float a, bias;
    } fill[] = {
        {wte, V * d, 1.0f, 0},   {wpe, C * d, 0.3f, 0},        {ln1_w, d, 0.2f, 1},
        {ln1_b, d, 0.1f, 0},     {qkv_w, 2 * d * d, 0.15f, 0}, {qkv_w + 2 * d * d, d * d, 0.4f, 0},
        {qkv_b, 3 * d, 0.1f, 0}, {o_w, d * d, 0.4f, 0},        {o_b, d, 0.1f, 0},
        {ln2_w, d, 0.2f, 1},     {ln2_b, d, 0.1f, 0},          {up_w, h * d, 0.4f, 0},
        {up_b, h, 0.2f, 0},      {down_w, d * h, 0.3f, 0},     {down_b, d, 0.1f, 0},
        {lnf_w, d, 0.2f, 1},     {lnf_b, d, 0.1f, 0}};
    uint64_t s = 0x9e2;
    for (size_t k = 0; k < sizeof fill / sizeof fill[0]; k++)
        for (size_t i = 0; i < fill[k].n; i++)
            fill[k].v[i] = fill[k].bias + tiny_rand(&s, fill[k].a);
    const gguf_gpt2_t g = {.dim = d,
                           .hid = h,
                           .layers = 1,
                           .heads = TINY_HEADS,
                           .vocab = V,
                           .ctx = C,
                           .wte = wte,
                           .wpe = wpe,
                           .lnf_w = lnf_w,
                           .lnf_b = lnf_b,
                           .ln1_w = ln1_w,
                           .ln1_b = ln1_b,
                           .ln2_w = ln2_w,
                           .ln2_b = ln2_b,
                           .qkv_w = qkv_w,
                           .qkv_b = qkv_b,
                           .o_w = o_w,
                           .o_b = o_b,
                           .up_w = up_w,
                           .up_b = up_b,
                           .down_w = down_w,
                           .down_b = down_b};
    return gguf_gpt2_build(&g, true, T_F32, T_F32, size);
}

/* Write the tiny GPT-2 GGUF to `path`; returns 0 on success. */
static inline int tiny_gpt2_write(const char *path)
{
    size_t n = 0;
    uint8_t *g = tiny_gpt2_gguf(&n);
    FILE *f = g ? fopen(path, "wb") : NULL;
    int rc = f && fwrite(g, 1, n, f) == n ? 0 : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    free(g);
    return rc;
}

#endif

/*
 * A minimal GGUF v3 writer for tests (F32, F16 and Q8_0 tensors), and a GPT-2
 * GGUF builder of any shape (test_llm_gguf.c, llm_tiny.h). Every helper is
 * static inline so a test includes only what it uses.
 */
#ifndef TS_TEST_GGUF_WRITER_H
#define TS_TEST_GGUF_WRITER_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *b;
    size_t n, cap;
} wb_t;

static inline void w_bytes(wb_t *w, const void *p, size_t n)
{
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->b = realloc(w->b, w->cap);
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static inline void w_u32(wb_t *w, uint32_t v)
{
    w_bytes(w, &v, 4);
}
static inline void w_u64(wb_t *w, uint64_t v)
{
    w_bytes(w, &v, 8);
}
static inline void w_str(wb_t *w, const char *s)
{
    w_u64(w, strlen(s));
    w_bytes(w, s, strlen(s));
}
static inline void kv_str(wb_t *w, const char *k, const char *v)
{
    w_str(w, k);
    w_u32(w, 8);
    w_str(w, v);
}
static inline void kv_u32(wb_t *w, const char *k, uint32_t v)
{
    w_str(w, k);
    w_u32(w, 4);
    w_u32(w, v);
}
static inline void kv_f32(wb_t *w, const char *k, float v)
{
    w_str(w, k);
    w_u32(w, 6);
    w_bytes(w, &v, 4);
}
static inline void kv_strs(wb_t *w, const char *k, const char *const *v, size_t n)
{
    w_str(w, k);
    w_u32(w, 9);
    w_u32(w, 8);
    w_u64(w, n);
    for (size_t i = 0; i < n; i++)
        w_str(w, v[i]);
}
static inline void kv_f32s(wb_t *w, const char *k, const float *v, size_t n)
{
    w_str(w, k);
    w_u32(w, 9);
    w_u32(w, 6);
    w_u64(w, n);
    w_bytes(w, v, 4 * n);
}

enum { T_F32 = 0, T_F16 = 1, T_Q8_0 = 8 };

typedef struct {
    char name[64];
    uint64_t ne0, ne1;
    int type;
    const float *v; /* values exactly representable in `type` (see rnd_val) */
} wt_t;

/* Exactly representable in F16 and, per 32-block with scale 1/64, in Q8_0:
 * multiples of 1/64 in [-1, 1]. */
static inline float rnd_val(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((int)((*s >> 9) % 129) - 64) / 64.0f;
}

static inline uint16_t f16_of(float f)
{
    /* Only for multiples of 2^-6 with |f| <= 1: exact normal halves or 0. */
    if (f == 0.0f)
        return 0;
    uint16_t sign = f < 0 ? 0x8000 : 0;
    float a = fabsf(f);
    int e = 0;
    while (a >= 2.0f) {
        a /= 2;
        e++;
    }
    while (a < 1.0f) {
        a *= 2;
        e--;
    }
    uint16_t m = (uint16_t)((a - 1.0f) * 1024.0f);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | m);
}

/* Write a GGUF with kvs already in `meta` (count n_kv) and tensors `t`. */
static inline uint8_t *gguf_build(const wb_t *meta, uint64_t n_kv, const wt_t *t, size_t nt,
                                  size_t *size)
{
    wb_t w = {0};
    w_bytes(&w, "GGUF", 4);
    w_u32(&w, 3);
    w_u64(&w, nt);
    w_u64(&w, n_kv);
    w_bytes(&w, meta->b, meta->n);
    uint64_t off = 0;
    uint64_t *offs = calloc(nt + 1, 8);
    for (size_t i = 0; i < nt; i++) {
        w_str(&w, t[i].name);
        int nd = t[i].ne1 > 1 ? 2 : 1;
        w_u32(&w, (uint32_t)nd);
        w_u64(&w, t[i].ne0);
        if (nd == 2)
            w_u64(&w, t[i].ne1);
        w_u32(&w, (uint32_t)t[i].type);
        w_u64(&w, off);
        offs[i] = off;
        uint64_t n = t[i].ne0 * t[i].ne1;
        uint64_t bytes = t[i].type == T_F32 ? 4 * n : t[i].type == T_F16 ? 2 * n : n / 32 * 34;
        off += (bytes + 31) / 32 * 32;
    }
    while (w.n % 32)
        w_bytes(&w, "", 1);
    size_t data = w.n;
    uint8_t zero[32] = {0};
    for (size_t i = 0; i < nt; i++) {
        while (w.n < data + offs[i])
            w_bytes(&w, zero, 1);
        uint64_t n = t[i].ne0 * t[i].ne1;
        for (uint64_t j = 0; j < n; j++) {
            if (t[i].type == T_F32) {
                w_bytes(&w, &t[i].v[j], 4);
            } else if (t[i].type == T_F16) {
                uint16_t h = f16_of(t[i].v[j]);
                w_bytes(&w, &h, 2);
            } else if (j % 32 == 0) {
                uint16_t d = f16_of(1.0f / 64.0f);
                w_bytes(&w, &d, 2);
                for (int k = 0; k < 32; k++) {
                    int8_t q = (int8_t)lrintf(t[i].v[j + (uint64_t)k] * 64.0f);
                    w_bytes(&w, &q, 1);
                }
            }
        }
    }
    while (w.n % 32)
        w_bytes(&w, zero, 1);
    free(offs);
    *size = w.n;
    return w.b;
}

/*
 * GPT-2 weights of any shape (row-major [out][in] matrices, per layer
 * back to back): qkv_w [layers][3 dim][dim], qkv_b [layers][3 dim], o_w
 * [layers][dim][dim], up_w [layers][hid][dim], down_w [layers][dim][hid];
 * the LM head is tied to wte.
 */
typedef struct {
    int dim, hid, layers, heads, vocab, ctx;
    const float *wte, *wpe, *lnf_w, *lnf_b;
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    const float *qkv_w, *qkv_b, *o_w, *o_b, *up_w, *up_b, *down_w, *down_b;
} gguf_gpt2_t;

/* A GGUF "gpt2" file: fused or split QKV, the big matrices in `type`, ffn_down
 * in down_type (values must be exact in those types; see rnd_val). */
static inline uint8_t *gguf_gpt2_build(const gguf_gpt2_t *w, bool fused, int type, int down_type,
                                       size_t *size)
{
    const uint64_t d = (uint64_t)w->dim, h = (uint64_t)w->hid;
    wb_t m = {0};
    kv_str(&m, "general.architecture", "gpt2");
    kv_u32(&m, "gpt2.context_length", (uint32_t)w->ctx);
    kv_u32(&m, "gpt2.embedding_length", (uint32_t)w->dim);
    kv_u32(&m, "gpt2.feed_forward_length", (uint32_t)w->hid);
    kv_u32(&m, "gpt2.block_count", (uint32_t)w->layers);
    kv_u32(&m, "gpt2.attention.head_count", (uint32_t)w->heads);
    kv_f32(&m, "gpt2.attention.layer_norm_epsilon", 1e-5f);
    size_t cap = 4 + 16 * (size_t)w->layers, n = 0;
    wt_t *t = calloc(cap, sizeof(wt_t));
    char nm[64];
#define T(a, b, ptr, ty)                                                                           \
    (snprintf(t[n].name, 64, "%s", nm), t[n].ne0 = a, t[n].ne1 = b, t[n].type = ty, t[n].v = ptr,  \
     n++)
    snprintf(nm, 64, "token_embd.weight");
    T(d, (uint64_t)w->vocab, w->wte, type);
    snprintf(nm, 64, "position_embd.weight");
    T(d, (uint64_t)w->ctx, w->wpe, T_F32);
    snprintf(nm, 64, "output_norm.weight");
    T(d, 1, w->lnf_w, T_F32);
    snprintf(nm, 64, "output_norm.bias");
    T(d, 1, w->lnf_b, T_F32);
    for (int l = 0; l < w->layers; l++) {
        const float *qkv = w->qkv_w + (size_t)l * 3 * d * d, *qkvb = w->qkv_b + (size_t)l * 3 * d;
#define B(s) snprintf(nm, 64, "blk.%d.%s", l, s)
        B("attn_norm.weight"), T(d, 1, w->ln1_w + l * d, T_F32);
        B("attn_norm.bias"), T(d, 1, w->ln1_b + l * d, T_F32);
        B("ffn_norm.weight"), T(d, 1, w->ln2_w + l * d, T_F32);
        B("ffn_norm.bias"), T(d, 1, w->ln2_b + l * d, T_F32);
        if (fused) {
            B("attn_qkv.weight"), T(d, 3 * d, qkv, type);
            B("attn_qkv.bias"), T(3 * d, 1, qkvb, T_F32);
        } else {
            B("attn_q.weight"), T(d, d, qkv, type);
            B("attn_k.weight"), T(d, d, qkv + d * d, type);
            B("attn_v.weight"), T(d, d, qkv + 2 * d * d, type);
            B("attn_q.bias"), T(d, 1, qkvb, T_F32);
            B("attn_k.bias"), T(d, 1, qkvb + d, T_F32);
            B("attn_v.bias"), T(d, 1, qkvb + 2 * d, T_F32);
        }
        B("attn_output.weight"), T(d, d, w->o_w + l * d * d, type);
        B("attn_output.bias"), T(d, 1, w->o_b + l * d, T_F32);
        B("ffn_up.weight"), T(d, h, w->up_w + l * h * d, type);
        B("ffn_up.bias"), T(h, 1, w->up_b + l * h, T_F32);
        B("ffn_down.weight"), T(h, d, w->down_w + l * d * h, down_type);
        B("ffn_down.bias"), T(d, 1, w->down_b + l * d, T_F32);
#undef B
    }
#undef T
    uint8_t *g = gguf_build(&m, 7, t, n, size);
    free(t);
    free(m.b);
    return g;
}

#endif

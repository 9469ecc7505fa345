/*
 * GGUF (v2 and v3) reader: metadata, tensor directory, F32/F16/BF16/Q8_0
 * dequantization, and the models ("llama", "gpt2") and tokenizers
 * ("llama" SentencePiece scores, "gpt2" byte-level BPE) they describe.
 *
 * Layout (little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv;
 * n_kv x {string key, u32 type, value}; n_tensors x {string name, u32 n_dims,
 * u64 ne[n_dims], u32 ggml_type, u64 offset}; padding to general.alignment
 * (default 32); tensor data, each at data_start + offset. A string is u64
 * length + bytes; an array is u32 element type + u64 count + elements.
 * ne[0] is the contiguous dimension: a [rows][cols] matrix has ne = {cols, rows}.
 *
 * Every length and offset is checked against the bytes that remain before it
 * is used, and counts are capped, so a hostile file gets TS_EFORMAT.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/llm/llm_int.h"

enum {
    GG_U8 = 0,
    GG_I8 = 1,
    GG_U16 = 2,
    GG_I16 = 3,
    GG_U32 = 4,
    GG_I32 = 5,
    GG_F32 = 6,
    GG_BOOL = 7,
    GG_STRING = 8,
    GG_ARRAY = 9,
    GG_U64 = 10,
    GG_I64 = 11,
    GG_F64 = 12,
};

enum { GT_F32 = 0, GT_F16 = 1, GT_Q8_0 = 8, GT_BF16 = 30 };

#define MAX_KV      65536
#define MAX_TENSORS 65536
#define MAX_DIMS    4

typedef struct {
    const char *key;
    size_t key_len;
    uint32_t type;
    const uint8_t *val; /* value bytes (for arrays: the first element) */
    uint32_t arr_type;  /* arrays */
    uint64_t arr_n;
} gg_kv_t;

typedef struct {
    const char *name;
    size_t name_len;
    uint32_t n_dims;
    uint64_t ne[MAX_DIMS];
    uint32_t type;
    uint64_t offset;
    uint64_t n_elems;
    uint64_t n_bytes;
} gg_tensor_t;

typedef struct {
    const uint8_t *buf;
    size_t size;
    uint32_t version;
    gg_kv_t *kv;
    size_t n_kv;
    gg_tensor_t *tensors;
    size_t n_tensors;
    size_t data_start;
} gguf_t;

typedef struct {
    const uint8_t *p, *end;
} rd_t;

static bool rd_u32(rd_t *r, uint32_t *v)
{
    if (r->end - r->p < 4)
        return false;
    *v = ts__le32(r->p);
    r->p += 4;
    return true;
}

static bool rd_u64(rd_t *r, uint64_t *v)
{
    if (r->end - r->p < 8)
        return false;
    *v = ts__le64(r->p);
    r->p += 8;
    return true;
}

static bool rd_str(rd_t *r, const char **s, size_t *n)
{
    uint64_t len;
    if (!rd_u64(r, &len) || len > (uint64_t)(r->end - r->p))
        return false;
    *s = (const char *)r->p;
    *n = (size_t)len;
    r->p += len;
    return true;
}

static size_t scalar_size(uint32_t t)
{
    switch (t) {
    case GG_U8:
    case GG_I8:
    case GG_BOOL:
        return 1;
    case GG_U16:
    case GG_I16:
        return 2;
    case GG_U32:
    case GG_I32:
    case GG_F32:
        return 4;
    case GG_U64:
    case GG_I64:
    case GG_F64:
        return 8;
    default:
        return 0;
    }
}

/* Skip one value of type t (arrays nest at most `depth` more levels). */
static bool skip_value(rd_t *r, uint32_t t, int depth)
{
    size_t sz = scalar_size(t);
    if (sz) {
        if ((size_t)(r->end - r->p) < sz)
            return false;
        r->p += sz;
        return true;
    }
    if (t == GG_STRING) {
        const char *s;
        size_t n;
        return rd_str(r, &s, &n);
    }
    if (t == GG_ARRAY && depth > 0) {
        uint32_t et;
        uint64_t n;
        if (!rd_u32(r, &et) || !rd_u64(r, &n))
            return false;
        size_t esz = scalar_size(et);
        if (esz) {
            if (n > (uint64_t)(r->end - r->p) / esz)
                return false;
            r->p += (size_t)n * esz;
            return true;
        }
        if (et != GG_STRING && et != GG_ARRAY)
            return false;
        /* Each string or array takes at least 8 bytes: cap n by what is left. */
        if (n > (uint64_t)(r->end - r->p) / 8)
            return false;
        for (uint64_t i = 0; i < n; i++)
            if (!skip_value(r, et, depth - 1))
                return false;
        return true;
    }
    return false;
}

static void gguf_clear(gguf_t *g)
{
    ts_free(g->kv);
    ts_free(g->tensors);
    memset(g, 0, sizeof(*g));
}

static const gg_kv_t *find_kv(const gguf_t *g, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key_len == n && memcmp(g->kv[i].key, key, n) == 0)
            return &g->kv[i];
    return NULL;
}

static const gg_tensor_t *find_tensor(const gguf_t *g, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].name_len == n && memcmp(g->tensors[i].name, name, n) == 0)
            return &g->tensors[i];
    return NULL;
}

/* An integer-typed scalar as int64 (false for other types). */
static bool kv_int(const gg_kv_t *kv, int64_t *v)
{
    if (!kv)
        return false;
    const uint8_t *p = kv->val;
    switch (kv->type) {
    case GG_U8:
        *v = p[0];
        return true;
    case GG_I8:
        *v = (int8_t)p[0];
        return true;
    case GG_U16:
        *v = (uint16_t)(p[0] | p[1] << 8);
        return true;
    case GG_I16:
        *v = (int16_t)(uint16_t)(p[0] | p[1] << 8);
        return true;
    case GG_U32:
        *v = ts__le32(p);
        return true;
    case GG_I32:
        *v = (int32_t)ts__le32(p);
        return true;
    case GG_U64: {
        uint64_t u = ts__le64(p);
        if (u > INT64_MAX)
            return false;
        *v = (int64_t)u;
        return true;
    }
    case GG_I64:
        *v = (int64_t)ts__le64(p);
        return true;
    default:
        return false;
    }
}

static bool kv_float(const gg_kv_t *kv, double *v)
{
    if (!kv)
        return false;
    if (kv->type == GG_F32) {
        *v = ts__lef32(kv->val);
        return true;
    }
    if (kv->type == GG_F64) {
        union {
            uint64_t u;
            double d;
        } x = {ts__le64(kv->val)};
        *v = x.d;
        return true;
    }
    int64_t i;
    if (kv_int(kv, &i)) {
        *v = (double)i;
        return true;
    }
    return false;
}

static bool kv_str(const gg_kv_t *kv, const char **s, size_t *n)
{
    if (!kv || kv->type != GG_STRING)
        return false;
    rd_t r = {kv->val, kv->val + 8 + ts__le64(kv->val)}; /* validated at parse */
    return rd_str(&r, s, n);
}

static bool str_is(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static ts_status_t gguf_parse(const uint8_t *buf, size_t size, gguf_t *g, char *err,
                              size_t err_size)
{
    memset(g, 0, sizeof(*g));
    g->buf = buf;
    g->size = size;
    rd_t r = {buf, buf + size};
    uint64_t n_tensors, n_kv;
    if (size < 4 || memcmp(buf, "GGUF", 4) != 0)
        return ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: bad magic");
    r.p += 4;
    if (!rd_u32(&r, &g->version) || !rd_u64(&r, &n_tensors) || !rd_u64(&r, &n_kv))
        return ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: truncated header (%zu bytes)", size);
    if (g->version != 2 && g->version != 3)
        return ts__llm_errf(TS_ENOTSUP, err, err_size,
                            "GGUF: version %u is not supported (2 and 3 are)", g->version);
    if (n_kv > MAX_KV || n_tensors > MAX_TENSORS)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "GGUF: %llu metadata entries / %llu tensors exceed the limits",
                            (unsigned long long)n_kv, (unsigned long long)n_tensors);
    g->kv = ts_calloc(n_kv ? (size_t)n_kv : 1, sizeof(gg_kv_t));
    g->tensors = ts_calloc(n_tensors ? (size_t)n_tensors : 1, sizeof(gg_tensor_t));
    if (!g->kv || !g->tensors) {
        gguf_clear(g);
        return TS_ENOMEM;
    }
    ts_status_t st = TS_EFORMAT;
    for (uint64_t i = 0; i < n_kv; i++) {
        gg_kv_t *kv = &g->kv[i];
        if (!rd_str(&r, &kv->key, &kv->key_len) || !rd_u32(&r, &kv->type)) {
            ts__llm_errf(st, err, err_size, "GGUF: truncated metadata entry %llu",
                         (unsigned long long)i);
            goto fail;
        }
        kv->val = r.p;
        if (kv->type == GG_ARRAY) {
            if (r.end - r.p < 12) {
                ts__llm_errf(st, err, err_size, "GGUF: truncated array '%.*s'",
                             (int)(kv->key_len > 200 ? 200 : kv->key_len), kv->key);
                goto fail;
            }
            kv->arr_type = ts__le32(r.p);
            kv->arr_n = ts__le64(r.p + 4);
            kv->val = r.p + 12;
        }
        if (!skip_value(&r, kv->type, 2)) {
            ts__llm_errf(st, err, err_size,
                         "GGUF: metadata '%.*s' (type %u) is malformed or runs past the end",
                         (int)(kv->key_len > 200 ? 200 : kv->key_len), kv->key, kv->type);
            goto fail;
        }
        g->n_kv++;
    }
    uint64_t align = 32;
    const gg_kv_t *akv = find_kv(g, "general.alignment");
    if (akv) {
        int64_t a;
        if (!kv_int(akv, &a) || a <= 0 || a > 65536 || (a & (a - 1)) != 0) {
            ts__llm_errf(st, err, err_size, "GGUF: general.alignment is not a power of two");
            goto fail;
        }
        align = (uint64_t)a;
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        gg_tensor_t *t = &g->tensors[i];
        if (!rd_str(&r, &t->name, &t->name_len) || !rd_u32(&r, &t->n_dims)) {
            ts__llm_errf(st, err, err_size, "GGUF: truncated tensor info %llu",
                         (unsigned long long)i);
            goto fail;
        }
        if (t->n_dims < 1 || t->n_dims > MAX_DIMS) {
            ts__llm_errf(st, err, err_size, "GGUF: tensor '%.*s' has %u dimensions",
                         (int)(t->name_len > 200 ? 200 : t->name_len), t->name, t->n_dims);
            goto fail;
        }
        uint64_t n = 1;
        for (uint32_t d = 0; d < MAX_DIMS; d++)
            t->ne[d] = 1;
        for (uint32_t d = 0; d < t->n_dims; d++) {
            if (!rd_u64(&r, &t->ne[d])) {
                ts__llm_errf(st, err, err_size, "GGUF: truncated tensor info %llu",
                             (unsigned long long)i);
                goto fail;
            }
            if (t->ne[d] == 0 || t->ne[d] > ((uint64_t)1 << 40) ||
                n > (((uint64_t)1 << 40) / t->ne[d])) {
                ts__llm_errf(st, err, err_size, "GGUF: tensor '%.*s' has a bad shape",
                             (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
                goto fail;
            }
            n *= t->ne[d];
        }
        t->n_elems = n;
        if (!rd_u32(&r, &t->type) || !rd_u64(&r, &t->offset)) {
            ts__llm_errf(st, err, err_size, "GGUF: truncated tensor info %llu",
                         (unsigned long long)i);
            goto fail;
        }
        switch (t->type) {
        case GT_F32:
            t->n_bytes = 4 * n;
            break;
        case GT_F16:
        case GT_BF16:
            t->n_bytes = 2 * n;
            break;
        case GT_Q8_0:
            if (t->ne[0] % 32 != 0) {
                ts__llm_errf(st, err, err_size,
                             "GGUF: Q8_0 tensor '%.*s' rows are not a multiple of 32",
                             (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
                goto fail;
            }
            t->n_bytes = n / 32 * 34;
            break;
        default:
            t->n_bytes = 0; /* unsupported: reported only if the tensor is used */
            break;
        }
        g->n_tensors++;
    }
    size_t pos = (size_t)(r.p - buf);
    uint64_t ds = ((uint64_t)pos + align - 1) / align * align;
    if (ds > size) {
        ts__llm_errf(st, err, err_size, "GGUF: file ends before the tensor data");
        goto fail;
    }
    g->data_start = (size_t)ds;
    for (size_t i = 0; i < g->n_tensors; i++) {
        gg_tensor_t *t = &g->tensors[i];
        uint64_t avail = size - g->data_start;
        if (t->offset > avail || t->n_bytes > avail - t->offset) {
            ts__llm_errf(st, err, err_size,
                         "GGUF: tensor '%.*s' (%llu bytes at offset %llu) lies beyond the end "
                         "of the file (%llu data bytes)",
                         (int)(t->name_len > 200 ? 200 : t->name_len), t->name,
                         (unsigned long long)t->n_bytes, (unsigned long long)t->offset,
                         (unsigned long long)avail);
            goto fail;
        }
        if (t->offset % align != 0) {
            ts__llm_errf(st, err, err_size, "GGUF: tensor '%.*s' offset is not aligned",
                         (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
            goto fail;
        }
    }
    return TS_OK;
fail:
    gguf_clear(g);
    return st;
}

/* ------------------------------------------------------------- tensors */

float ts__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    int e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;
    union {
        uint32_t u;
        float f;
    } v;
    if (e == 0) {
        /* zero or subnormal: m * 2^-24 */
        float f = (float)m * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    if (e == 31)
        v.u = sign | 0x7f800000u | (m << 13);
    else
        v.u = sign | (uint32_t)(e - 15 + 127) << 23 | (m << 13);
    return v.f;
}

/* Dequantize tensor `name` into dst, checking it has shape {ne0, ne1}. */
static ts_status_t load_tensor(const gguf_t *g, const char *name, float *dst, uint64_t ne0,
                               uint64_t ne1, char *err, size_t err_size)
{
    const gg_tensor_t *t = find_tensor(g, name);
    if (!t)
        return ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: tensor '%s' is missing", name);
    if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "GGUF: tensor '%s' has shape {%llu, %llu, %llu, %llu}, the model "
                            "needs {%llu, %llu}",
                            name, (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                            (unsigned long long)t->ne[2], (unsigned long long)t->ne[3],
                            (unsigned long long)ne0, (unsigned long long)ne1);
    const uint8_t *p = g->buf + g->data_start + t->offset;
    size_t n = (size_t)t->n_elems;
    switch (t->type) {
    case GT_F32:
        for (size_t i = 0; i < n; i++)
            dst[i] = ts__lef32(p + 4 * i);
        break;
    case GT_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = ts__f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        break;
    case GT_BF16:
        for (size_t i = 0; i < n; i++) {
            union {
                uint32_t u;
                float f;
            } v = {(uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16};
            dst[i] = v.f;
        }
        break;
    case GT_Q8_0:
        for (size_t b = 0; b < n / 32; b++) {
            const uint8_t *blk = p + 34 * b;
            float d = ts__f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
            for (int j = 0; j < 32; j++)
                dst[32 * b + (size_t)j] = d * (float)(int8_t)blk[2 + j];
        }
        break;
    default:
        return ts__llm_errf(TS_ENOTSUP, err, err_size,
                            "GGUF: tensor '%s' has ggml type %u (F32, F16, BF16 and Q8_0 are "
                            "supported)",
                            name, t->type);
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return ts__llm_errf(TS_EFORMAT, err, err_size,
                                "GGUF: tensor '%s' holds a non-finite value at %zu", name, i);
    return TS_OK;
}

/* ------------------------------------------------------------- models */

static ts_status_t get_dim(const gguf_t *g, const char *arch, const char *suffix, bool required,
                           int64_t def, int *out, char *err, size_t err_size)
{
    char key[128];
    snprintf(key, sizeof(key), "%s.%s", arch, suffix);
    const gg_kv_t *kv = find_kv(g, key);
    int64_t v = def;
    if (kv && !kv_int(kv, &v))
        return ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: '%s' is not an integer", key);
    if (!kv && required)
        return ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: metadata '%s' is missing", key);
    if (v < 0 || v > INT32_MAX)
        return ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: '%s' = %lld is out of range", key,
                            (long long)v);
    *out = (int)v;
    return TS_OK;
}

ts_status_t ts__llm_load_gguf(const uint8_t *buf, size_t size, ts_llm_model_t **out, char *err,
                              size_t err_size)
{
    *out = NULL;
    gguf_t g;
    ts_status_t st = gguf_parse(buf, size, &g, err, err_size);
    if (st != TS_OK)
        return st;
    ts_llm_model_t *m = NULL;
    const char *as;
    size_t an;
    char arch[32];
    ts_llm_config_t c = {0};
    if (!kv_str(find_kv(&g, "general.architecture"), &as, &an)) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: general.architecture is missing or not a string");
        goto out;
    }
    if (str_is(as, an, "llama")) {
        c.arch = TS_LLM_ARCH_LLAMA;
    } else if (str_is(as, an, "gpt2")) {
        c.arch = TS_LLM_ARCH_GPT2;
    } else {
        st = ts__llm_errf(TS_ENOTSUP, err, err_size,
                          "GGUF: architecture '%.*s' is not supported (llama, gpt2 are)",
                          (int)(an > 64 ? 64 : an), as);
        goto out;
    }
    snprintf(arch, sizeof(arch), "%s", ts_llm_arch_name(c.arch));
    int head_dim = 0;
    if ((st = get_dim(&g, arch, "embedding_length", true, 0, &c.dim, err, err_size)) ||
        (st = get_dim(&g, arch, "feed_forward_length", true, 0, &c.hidden_dim, err, err_size)) ||
        (st = get_dim(&g, arch, "block_count", true, 0, &c.n_layers, err, err_size)) ||
        (st = get_dim(&g, arch, "context_length", true, 0, &c.seq_len, err, err_size)) ||
        (st = get_dim(&g, arch, "attention.head_count", true, 0, &c.n_heads, err, err_size)))
        goto out;
    if ((st = get_dim(&g, arch, "attention.head_count_kv", false, c.n_heads, &c.n_kv_heads, err,
                      err_size)))
        goto out;
    if (c.n_heads <= 0 || c.dim % c.n_heads != 0) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: embedding_length %d is not a multiple of head_count %d", c.dim,
                          c.n_heads);
        goto out;
    }
    if ((st = get_dim(&g, arch, "attention.key_length", false, c.dim / c.n_heads, &head_dim, err,
                      err_size)))
        goto out;
    c.head_dim = head_dim;
    if (c.arch == TS_LLM_ARCH_LLAMA) {
        if ((st = get_dim(&g, arch, "rope.dimension_count", false, c.head_dim, &c.rope_dim, err,
                          err_size)))
            goto out;
        double eps = 1e-5, theta = 10000.0;
        const gg_kv_t *kv = find_kv(&g, "llama.attention.layer_norm_rms_epsilon");
        if (kv && !kv_float(kv, &eps)) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: rms epsilon is not a number");
            goto out;
        }
        kv = find_kv(&g, "llama.rope.freq_base");
        if (kv && !kv_float(kv, &theta)) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: rope freq_base is not a number");
            goto out;
        }
        c.norm_eps = (float)eps;
        c.rope_theta = (float)theta;
    } else {
        double eps = 1e-5;
        const gg_kv_t *kv = find_kv(&g, "gpt2.attention.layer_norm_epsilon");
        if (kv && !kv_float(kv, &eps)) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size,
                              "GGUF: layer norm epsilon is not a "
                              "number");
            goto out;
        }
        c.norm_eps = (float)eps;
        if (c.n_kv_heads != c.n_heads) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size,
                              "GGUF: gpt2 with head_count_kv != "
                              "head_count");
            goto out;
        }
    }
    const gg_tensor_t *emb = find_tensor(&g, "token_embd.weight");
    if (!emb || emb->n_dims != 2 || emb->ne[1] > TS_LLM_MAX_VOCAB) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: token_embd.weight is missing or not a matrix");
        goto out;
    }
    c.vocab_size = (int)emb->ne[1];
    c.shared_classifier = find_tensor(&g, "output.weight") == NULL;
    /* Every parameter comes from a tensor element of the file: refuse shapes
     * the file cannot hold before allocating for them. */
    size_t need;
    uint64_t have = 0;
    if ((st = ts__llm_config_floats(&c, &need, err, err_size)))
        goto out;
    for (size_t i = 0; i < g.n_tensors; i++)
        have += g.tensors[i].n_elems; /* each <= 2^40, at most 65536 of them */
    if ((uint64_t)need > have) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: the metadata's shape needs %zu parameters, the file's tensors "
                          "hold %llu",
                          need, (unsigned long long)have);
        goto out;
    }
    if ((st = ts__llm_model_alloc(&c, &m, err, err_size)))
        goto out;

    uint64_t dim = (uint64_t)c.dim, hid = (uint64_t)c.hidden_dim, V = (uint64_t)c.vocab_size;
    uint64_t qd = (uint64_t)c.n_heads * (uint64_t)c.head_dim;
    uint64_t kvd = (uint64_t)c.n_kv_heads * (uint64_t)c.head_dim;
    char name[96];
#define LOAD(nm, dst, a, b)                                                                        \
    if ((st = load_tensor(&g, nm, dst, a, b, err, err_size)) != TS_OK)                             \
        goto out;
    LOAD("token_embd.weight", m->tok_emb, dim, V);
    LOAD("output_norm.weight", m->final_norm, dim, 1);
    if (!c.shared_classifier)
        LOAD("output.weight", m->wcls, dim, V);
    if (c.arch == TS_LLM_ARCH_GPT2) {
        LOAD("position_embd.weight", m->pos_emb, dim, (uint64_t)c.seq_len);
        LOAD("output_norm.bias", m->final_norm_b, dim, 1);
    }
    for (int l = 0; l < c.n_layers; l++) {
        ts__llm_layer_t *ly = &m->layers[l];
#define LAYER(suffix, dst, a, b)                                                                   \
    snprintf(name, sizeof(name), "blk.%d.%s", l, suffix);                                          \
    LOAD(name, dst, a, b);
        LAYER("attn_norm.weight", ly->attn_norm, dim, 1);
        LAYER("ffn_norm.weight", ly->ffn_norm, dim, 1);
        LAYER("attn_output.weight", ly->wo, qd, dim);
        LAYER("ffn_down.weight", ly->w2, hid, dim);
        if (c.arch == TS_LLM_ARCH_LLAMA) {
            LAYER("attn_q.weight", ly->wq, dim, qd);
            LAYER("attn_k.weight", ly->wk, dim, kvd);
            LAYER("attn_v.weight", ly->wv, dim, kvd);
            LAYER("ffn_gate.weight", ly->w1, dim, hid);
            LAYER("ffn_up.weight", ly->w3, dim, hid);
        } else {
            LAYER("attn_norm.bias", ly->attn_norm_b, dim, 1);
            LAYER("ffn_norm.bias", ly->ffn_norm_b, dim, 1);
            LAYER("attn_output.bias", ly->bo, dim, 1);
            LAYER("ffn_up.weight", ly->w1, dim, hid);
            LAYER("ffn_up.bias", ly->b1, hid, 1);
            LAYER("ffn_down.bias", ly->b2, dim, 1);
            snprintf(name, sizeof(name), "blk.%d.attn_qkv.weight", l);
            if (find_tensor(&g, name)) {
                /* Fused QKV: rows [q | k | v] of a {dim, qd + 2 kvd} matrix; the q, k,
                 * v blocks are contiguous in ts__llm_model_alloc's layout. */
                TS_ASSERT(ly->wk == ly->wq + qd * dim && ly->wv == ly->wk + kvd * dim);
                LOAD(name, ly->wq, dim, qd + 2 * kvd);
                snprintf(name, sizeof(name), "blk.%d.attn_qkv.bias", l);
                float *bias = ts_malloc((size_t)(qd + 2 * kvd) * sizeof(float));
                if (!bias) {
                    st = TS_ENOMEM;
                    goto out;
                }
                st = load_tensor(&g, name, bias, qd + 2 * kvd, 1, err, err_size);
                if (st == TS_OK) {
                    memcpy(ly->bq, bias, (size_t)qd * sizeof(float));
                    memcpy(ly->bk, bias + qd, (size_t)kvd * sizeof(float));
                    memcpy(ly->bv, bias + qd + kvd, (size_t)kvd * sizeof(float));
                }
                ts_free(bias);
                if (st != TS_OK)
                    goto out;
            } else {
                LAYER("attn_q.weight", ly->wq, dim, qd);
                LAYER("attn_k.weight", ly->wk, dim, kvd);
                LAYER("attn_v.weight", ly->wv, dim, kvd);
                LAYER("attn_q.bias", ly->bq, qd, 1);
                LAYER("attn_k.bias", ly->bk, kvd, 1);
                LAYER("attn_v.bias", ly->bv, kvd, 1);
            }
        }
#undef LAYER
    }
#undef LOAD
    *out = m;
    m = NULL;
out:
    ts_llm_model_free(m);
    gguf_clear(&g);
    return st;
}

/* ------------------------------------------------------------- tokenizer */

ts_status_t ts__llm_tokenizer_from_gguf(const uint8_t *buf, size_t size, int vocab_size,
                                        ts_llm_tokenizer_t **out, char *err, size_t err_size)
{
    *out = NULL;
    gguf_t g;
    ts_status_t st = gguf_parse(buf, size, &g, err, err_size);
    if (st != TS_OK)
        return st;
    ts_llm_tokenizer_t *t = NULL;
    const char *ms;
    size_t mn;
    ts_llm_tok_kind_t kind;
    if (!kv_str(find_kv(&g, "tokenizer.ggml.model"), &ms, &mn)) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: tokenizer.ggml.model is missing");
        goto out;
    }
    if (str_is(ms, mn, "llama")) {
        kind = TS_LLM_TOK_SPM;
    } else if (str_is(ms, mn, "gpt2")) {
        kind = TS_LLM_TOK_GPT2;
    } else {
        st = ts__llm_errf(TS_ENOTSUP, err, err_size,
                          "GGUF: tokenizer model '%.*s' is not supported (llama, gpt2 are)",
                          (int)(mn > 64 ? 64 : mn), ms);
        goto out;
    }
    const gg_kv_t *toks = find_kv(&g, "tokenizer.ggml.tokens");
    if (!toks || toks->type != GG_ARRAY || toks->arr_type != GG_STRING || toks->arr_n == 0 ||
        toks->arr_n > TS_LLM_MAX_VOCAB) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: tokenizer.ggml.tokens is missing or not an array of strings");
        goto out;
    }
    int n = (int)toks->arr_n;
    if (vocab_size > 0 && vocab_size != n) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: the tokenizer has %d tokens, the model %d", n, vocab_size);
        goto out;
    }
    const gg_kv_t *scores = find_kv(&g, "tokenizer.ggml.scores");
    if (scores &&
        (scores->type != GG_ARRAY || scores->arr_type != GG_F32 || scores->arr_n != toks->arr_n)) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: tokenizer.ggml.scores does not match the tokens");
        goto out;
    }
    const gg_kv_t *types = find_kv(&g, "tokenizer.ggml.token_type");
    if (types &&
        (types->type != GG_ARRAY || types->arr_type != GG_I32 || types->arr_n != toks->arr_n)) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "GGUF: tokenizer.ggml.token_type does not match the tokens");
        goto out;
    }
    if ((st = ts__llm_tokenizer_alloc(kind, n, &t)))
        goto out;
    rd_t r = {toks->val, buf + size};
    for (int i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if (!rd_str(&r, &s, &len) || len > TS_LLM_MAX_PIECE) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: token %d is malformed", i);
            goto out;
        }
        float sc = scores ? ts__lef32(scores->val + 4 * (size_t)i) : 0.0f;
        if ((st = ts__llm_tokenizer_set(t, i, s, len, sc)))
            goto out;
        if (types && (int32_t)ts__le32(types->val + 4 * (size_t)i) == 3)
            ts__llm_tokenizer_set_control(t, i);
    }
    int64_t bos = -1, eos = -1;
    const gg_kv_t *kv = find_kv(&g, "tokenizer.ggml.bos_token_id");
    if (kv && !kv_int(kv, &bos))
        bos = -1;
    kv = find_kv(&g, "tokenizer.ggml.eos_token_id");
    if (kv && !kv_int(kv, &eos))
        eos = -1;
    if (bos >= n)
        bos = -1;
    if (eos >= n)
        eos = -1;
    if ((st = ts__llm_tokenizer_finish(t, (int)bos, (int)eos, kind == TS_LLM_TOK_SPM)))
        goto out;
    kv = find_kv(&g, "tokenizer.ggml.add_space_prefix");
    if (kv && kv->type == GG_BOOL)
        ts__llm_tokenizer_set_space_prefix(t, kv->val[0] != 0);
    if (kind == TS_LLM_TOK_GPT2) {
        const gg_kv_t *merges = find_kv(&g, "tokenizer.ggml.merges");
        if (!merges || merges->type != GG_ARRAY || merges->arr_type != GG_STRING ||
            merges->arr_n > INT32_MAX) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size,
                              "GGUF: gpt2 tokenizer without tokenizer.ggml.merges");
            goto out;
        }
        rd_t mr = {merges->val, buf + size};
        for (uint64_t i = 0; i < merges->arr_n; i++) {
            const char *s;
            size_t len;
            if (!rd_str(&mr, &s, &len) || len > 2 * TS_LLM_MAX_PIECE) {
                st = ts__llm_errf(TS_EFORMAT, err, err_size, "GGUF: merge %llu is malformed",
                                  (unsigned long long)i);
                goto out;
            }
            st = ts__llm_tokenizer_add_merge(t, s, len, (int)i);
            if (st == TS_EFORMAT)
                ts__llm_errf(st, err, err_size, "GGUF: merge %llu has no space",
                             (unsigned long long)i);
            if (st != TS_OK)
                goto out;
        }
    }
    *out = t;
    t = NULL;
out:
    ts_llm_tokenizer_free(t);
    gguf_clear(&g);
    return st;
}

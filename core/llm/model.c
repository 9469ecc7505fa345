/*
 * Model allocation, format detection and the llama2.c checkpoint loader
 * (version 0 legacy layout and the version 1 "ak42" header, as written by
 * llama2.c's export.py; see models/README.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/llm/llm_int.h"

#define LLAMA2C_MAGIC    0x616b3432u /* "ak42" */
#define LLAMA2C_V1_BYTES 256
/* Files larger than this are refused before reading (64 GiB). */
#define MAX_FILE_BYTES ((uint64_t)64 << 30)

ts_status_t ts__llm_errf(ts_status_t st, char *err, size_t err_size, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return st;
}

const char *ts_llm_arch_name(ts_llm_arch_t arch)
{
    return arch == TS_LLM_ARCH_GPT2 ? "gpt2" : arch == TS_LLM_ARCH_LLAMA ? "llama" : "?";
}

ts_status_t ts__llm_read_file(const char *path, uint64_t max_bytes, uint8_t **buf, size_t *size,
                              char *err, size_t err_size)
{
    *buf = NULL;
    *size = 0;
    if (!path)
        return TS_EINVAL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ts__llm_errf(TS_EIO, err, err_size, "%s: cannot open: %s", path, strerror(errno));
    ts_status_t st = TS_OK;
    uint8_t *b = NULL;
    if (fseeko(f, 0, SEEK_END) != 0) {
        st = ts__llm_errf(TS_EIO, err, err_size, "%s: cannot seek", path);
        goto out_close;
    }
    off_t len = ftello(f);
    if (len < 0 || fseeko(f, 0, SEEK_SET) != 0) {
        st = ts__llm_errf(TS_EIO, err, err_size, "%s: cannot tell its size", path);
        goto out_close;
    }
    if (!max_bytes)
        max_bytes = MAX_FILE_BYTES;
    if ((uint64_t)len > max_bytes || (uint64_t)len > SIZE_MAX) {
        st = ts__llm_errf(TS_ELIMIT, err, err_size, "%s: file too large (over %llu MiB)", path,
                          (unsigned long long)(max_bytes >> 20));
        goto out_close;
    }
    b = ts_malloc(len ? (size_t)len : 1);
    if (!b) {
        st = ts__llm_errf(TS_ENOMEM, err, err_size, "%s: out of memory", path);
        goto out_close;
    }
    if (len && fread(b, 1, (size_t)len, f) != (size_t)len) {
        st = ts__llm_errf(TS_EIO, err, err_size, "%s: read failed", path);
        ts_free(b);
        goto out_close;
    }
    *buf = b;
    *size = (size_t)len;
out_close:
    fclose(f);
    return st;
}

/* ------------------------------------------------------------- allocation */

/* Adds n floats to *total, false on overflow. */
static bool add_tensor(size_t *total, size_t a, size_t b)
{
    size_t n;
    return ts_size_mul(a, b, &n) && ts_size_add(*total, n, total);
}

ts_status_t ts__llm_config_floats(const ts_llm_config_t *c, size_t *n_floats, char *err,
                                  size_t err_size)
{
    *n_floats = 0;
#define CHECK_RANGE(v, lo, hi)                                                                     \
    if ((v) < (lo) || (v) > (hi))                                                                  \
        return ts__llm_errf(TS_EFORMAT, err, err_size, "model shape: %s = %d is outside [%d, %d]", \
                            #v, (int)(v), (int)(lo), (int)(hi));
    CHECK_RANGE(c->dim, 1, TS_LLM_MAX_DIM);
    CHECK_RANGE(c->hidden_dim, 1, 16 * TS_LLM_MAX_DIM);
    CHECK_RANGE(c->n_layers, 1, TS_LLM_MAX_LAYERS);
    CHECK_RANGE(c->n_heads, 1, c->dim);
    CHECK_RANGE(c->n_kv_heads, 1, c->n_heads);
    CHECK_RANGE(c->head_dim, 1, TS_LLM_MAX_DIM);
    CHECK_RANGE(c->vocab_size, 1, TS_LLM_MAX_VOCAB);
    CHECK_RANGE(c->seq_len, 1, TS_LLM_MAX_SEQ);
#undef CHECK_RANGE
    if (c->n_heads % c->n_kv_heads != 0)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "model shape: n_heads = %d is not a multiple of n_kv_heads = %d",
                            c->n_heads, c->n_kv_heads);
    if ((size_t)c->n_heads * (size_t)c->head_dim > 4u * TS_LLM_MAX_DIM)
        return ts__llm_errf(TS_EFORMAT, err, err_size, "model shape: attention too wide");
    if (c->arch == TS_LLM_ARCH_LLAMA &&
        (c->rope_dim < 0 || c->rope_dim > c->head_dim || c->rope_dim % 2 != 0))
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "model shape: rope dimension %d must be even and <= head_dim %d",
                            c->rope_dim, c->head_dim);
    if (!(c->norm_eps >= 0.0f) || !(c->norm_eps < 1.0f))
        return ts__llm_errf(TS_EFORMAT, err, err_size, "model shape: norm epsilon out of range");
    if (c->arch == TS_LLM_ARCH_LLAMA && !(c->rope_theta > 0.0f && c->rope_theta < 1e30f))
        return ts__llm_errf(TS_EFORMAT, err, err_size, "model shape: rope theta out of range");

    bool gpt2 = c->arch == TS_LLM_ARCH_GPT2;
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t qd = (size_t)c->n_heads * (size_t)c->head_dim;
    size_t kvd = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    size_t per_layer = 0, total = 0;
    bool ok = add_tensor(&per_layer, dim, gpt2 ? 2 : 1) && add_tensor(&per_layer, qd, dim) &&
              add_tensor(&per_layer, kvd, 2 * dim) && add_tensor(&per_layer, dim, qd) &&
              add_tensor(&per_layer, dim, gpt2 ? 2 : 1) &&
              add_tensor(&per_layer, hid, dim * (gpt2 ? 1 : 2)) && add_tensor(&per_layer, dim, hid);
    if (gpt2)
        ok = ok && add_tensor(&per_layer, qd + 2 * kvd + dim + hid + dim, 1);
    ok = ok && add_tensor(&total, per_layer, L) && add_tensor(&total, (size_t)c->vocab_size, dim) &&
         add_tensor(&total, dim, gpt2 ? 2 : 1);
    if (gpt2)
        ok = ok && add_tensor(&total, (size_t)c->seq_len, dim);
    if (!c->shared_classifier)
        ok = ok && add_tensor(&total, (size_t)c->vocab_size, dim);
    size_t bytes;
    if (!ok || !ts_size_mul(total, sizeof(float), &bytes) || bytes > ((size_t)1 << 40))
        return ts__llm_errf(TS_EFORMAT, err, err_size, "model shape: parameter count overflows");
    *n_floats = total;
    return TS_OK;
}

ts_status_t ts__llm_model_alloc(const ts_llm_config_t *c, ts_llm_model_t **out, char *err,
                                size_t err_size)
{
    *out = NULL;
    size_t total;
    ts_status_t st = ts__llm_config_floats(c, &total, err, err_size);
    if (st != TS_OK)
        return st;
    bool gpt2 = c->arch == TS_LLM_ARCH_GPT2;
    size_t dim = (size_t)c->dim, hid = (size_t)c->hidden_dim, L = (size_t)c->n_layers;
    size_t qd = (size_t)c->n_heads * (size_t)c->head_dim;
    size_t kvd = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    ts_llm_model_t *m = ts_calloc(1, sizeof(*m));
    if (!m)
        return TS_ENOMEM;
    m->cfg = *c;
    m->n_floats = total;
    m->data = ts_calloc(total, sizeof(float));
    m->layers = ts_calloc(L, sizeof(ts__llm_layer_t));
    if (!m->data || !m->layers) {
        ts_llm_model_free(m);
        return ts__llm_errf(TS_ENOMEM, err, err_size, "out of memory for %zu parameters", total);
    }
    float *p = m->data;
#define TAKE(n) (p += (n), p - (n))
    m->tok_emb = TAKE((size_t)c->vocab_size * dim);
    if (gpt2)
        m->pos_emb = TAKE((size_t)c->seq_len * dim);
    for (size_t l = 0; l < L; l++) {
        ts__llm_layer_t *ly = &m->layers[l];
        ly->attn_norm = TAKE(dim);
        ly->wq = TAKE(qd * dim);
        ly->wk = TAKE(kvd * dim);
        ly->wv = TAKE(kvd * dim);
        ly->wo = TAKE(dim * qd);
        ly->ffn_norm = TAKE(dim);
        ly->w1 = TAKE(hid * dim);
        ly->w2 = TAKE(dim * hid);
        if (gpt2) {
            ly->attn_norm_b = TAKE(dim);
            ly->ffn_norm_b = TAKE(dim);
            ly->bq = TAKE(qd);
            ly->bk = TAKE(kvd);
            ly->bv = TAKE(kvd);
            ly->bo = TAKE(dim);
            ly->b1 = TAKE(hid);
            ly->b2 = TAKE(dim);
        } else {
            ly->w3 = TAKE(hid * dim);
        }
    }
    m->final_norm = TAKE(dim);
    if (gpt2)
        m->final_norm_b = TAKE(dim);
    m->wcls = c->shared_classifier ? m->tok_emb : TAKE((size_t)c->vocab_size * dim);
#undef TAKE
    TS_ASSERT((size_t)(p - m->data) == total);
    *out = m;
    return TS_OK;
}

void ts_llm_model_free(ts_llm_model_t *m)
{
    if (!m)
        return;
    ts_free(m->data);
    ts_free(m->layers);
    ts_free(m);
}

const ts_llm_config_t *ts_llm_model_config(const ts_llm_model_t *m)
{
    return &m->cfg;
}

size_t ts_llm_model_n_params(const ts_llm_model_t *m)
{
    return m->n_floats;
}

/* ---------------------------------------------------------- llama2.c */

/* A cursor over float32 data: copy n floats or fail cleanly. */
typedef struct {
    const uint8_t *p, *end;
} cursor_t;

static bool take_floats(cursor_t *c, float *dst, size_t n)
{
    if ((size_t)(c->end - c->p) / 4 < n)
        return false;
    for (size_t i = 0; i < n; i++)
        dst[i] = ts__lef32(c->p + 4 * i);
    c->p += 4 * n;
    return true;
}

static bool skip_floats(cursor_t *c, size_t n)
{
    if ((size_t)(c->end - c->p) / 4 < n)
        return false;
    c->p += 4 * n;
    return true;
}

ts_status_t ts__llm_load_llama2c(const uint8_t *buf, size_t size, ts_llm_model_t **out, char *err,
                                 size_t err_size)
{
    *out = NULL;
    int version = 0;
    size_t hdr = 28;
    if (size >= 4 && ts__le32(buf) == LLAMA2C_MAGIC) {
        if (size < 8)
            return ts__llm_errf(TS_EFORMAT, err, err_size,
                                "llama2.c checkpoint: truncated header (%zu bytes)", size);
        version = (int)ts__le32(buf + 4);
        if (version != 1)
            return ts__llm_errf(TS_ENOTSUP, err, err_size,
                                "llama2.c checkpoint: version %d is not supported (0 and 1 are)",
                                version);
        hdr = LLAMA2C_V1_BYTES;
    }
    if (size < hdr)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "llama2.c checkpoint: truncated header (%zu of %zu bytes)", size, hdr);
    const uint8_t *h = version == 1 ? buf + 8 : buf;
    int32_t v[7];
    for (int i = 0; i < 7; i++)
        v[i] = (int32_t)ts__le32(h + 4 * i);
    ts_llm_config_t c = {0};
    c.arch = TS_LLM_ARCH_LLAMA;
    c.dim = v[0];
    c.hidden_dim = v[1];
    c.n_layers = v[2];
    c.n_heads = v[3];
    c.n_kv_heads = v[4];
    c.seq_len = v[6];
    c.norm_eps = 1e-5f;
    c.rope_theta = 10000.0f;
    if (version == 0) {
        /* Negative vocab_size: a separate classifier follows. */
        c.shared_classifier = v[5] > 0;
        c.vocab_size = v[5] == INT32_MIN ? 0 : (v[5] < 0 ? -v[5] : v[5]);
    } else {
        uint8_t shared = buf[36];
        if (shared > 1)
            return ts__llm_errf(TS_EFORMAT, err, err_size,
                                "llama2.c checkpoint: shared_classifier flag is %u", shared);
        c.shared_classifier = shared == 1;
        c.vocab_size = v[5];
    }
    if (c.n_heads <= 0 || c.dim <= 0 || c.dim % c.n_heads != 0)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "llama2.c checkpoint: dim = %d is not a positive multiple of "
                            "n_heads = %d",
                            c.dim, c.n_heads);
    c.head_dim = c.dim / c.n_heads;
    c.rope_dim = c.head_dim;
    if (c.head_dim % 2 != 0)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "llama2.c checkpoint: head size %d is odd (RoPE needs pairs)",
                            c.head_dim);
    /* The file size the header's shape implies, checked before allocating. */
    size_t need;
    ts_status_t st = ts__llm_config_floats(&c, &need, err, err_size);
    if (st != TS_OK)
        return st;
    if (version == 0)
        need += (size_t)c.seq_len * (size_t)c.head_dim; /* freq_cis real + imag */
    size_t need_bytes = hdr + need * 4;                 /* < 2^41: checked above */
    if (size != need_bytes)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "llama2.c checkpoint (version %d): file has %zu bytes, the header's "
                            "shape needs exactly %zu",
                            version, size, need_bytes);
    ts_llm_model_t *m = NULL;
    if ((st = ts__llm_model_alloc(&c, &m, err, err_size)) != TS_OK)
        return st;
    size_t dim = (size_t)c.dim, hid = (size_t)c.hidden_dim, L = (size_t)c.n_layers;
    size_t kvd = (size_t)c.n_kv_heads * (size_t)c.head_dim, V = (size_t)c.vocab_size;
    cursor_t cur = {buf + hdr, buf + size};
    bool ok = true;
    if (version == 0) {
        ok = ok && take_floats(&cur, m->tok_emb, V * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].attn_norm, dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wq, dim * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wk, kvd * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wv, kvd * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wo, dim * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].ffn_norm, dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].w1, hid * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].w2, dim * hid);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].w3, hid * dim);
        ok = ok && take_floats(&cur, m->final_norm, dim);
        ok = ok && skip_floats(&cur, (size_t)c.seq_len * (size_t)c.head_dim);
        if (!c.shared_classifier)
            ok = ok && take_floats(&cur, m->wcls, V * dim);
    } else {
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].attn_norm, dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].ffn_norm, dim);
        ok = ok && take_floats(&cur, m->final_norm, dim);
        ok = ok && take_floats(&cur, m->tok_emb, V * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wq, dim * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wk, kvd * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wv, kvd * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].wo, dim * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].w1, hid * dim);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].w2, dim * hid);
        for (size_t l = 0; l < L; l++)
            ok = ok && take_floats(&cur, m->layers[l].w3, hid * dim);
        if (!c.shared_classifier)
            ok = ok && take_floats(&cur, m->wcls, V * dim);
    }
    if (!ok || cur.p != cur.end) {
        /* Unreachable after the exact size check; kept as a guard. */
        ts_llm_model_free(m);
        return ts__llm_errf(TS_EFORMAT, err, err_size, "llama2.c checkpoint: size mismatch");
    }
    *out = m;
    return TS_OK;
}

/* ---------------------------------------------------------- dispatch */

ts_status_t ts_llm_model_load_buffer(const void *buf, size_t size, ts_llm_model_t **out, char *err,
                                     size_t err_size)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!buf && size)
        return TS_EINVAL;
    if (err && err_size)
        err[0] = '\0';
    const uint8_t *b = buf;
    if (size >= 4 && memcmp(b, "GGUF", 4) == 0)
        return ts__llm_load_gguf(b, size, out, err, err_size);
    return ts__llm_load_llama2c(b, size, out, err, err_size);
}

ts_status_t ts_llm_model_load(const char *path, ts_llm_model_t **out, char *err, size_t err_size)
{
    if (!out || !path)
        return TS_EINVAL;
    *out = NULL;
    uint8_t *buf;
    size_t size;
    ts_status_t st = ts__llm_read_file(path, 0, &buf, &size, err, err_size);
    if (st != TS_OK)
        return st;
    st = ts_llm_model_load_buffer(buf, size, out, err, err_size);
    ts_free(buf);
    if (st != TS_OK && err && err_size) {
        /* Prefix the path so the user sees which file. */
        char tmp[512];
        snprintf(tmp, sizeof(tmp), "%s", err);
        snprintf(err, err_size, "%s: %s", path, tmp);
    }
    return st;
}

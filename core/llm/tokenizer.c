/*
 * Tokenizers: the llama2.c tokenizer.bin loader, the score-greedy merge
 * encoder (llama2.c's algorithm, also used for SentencePiece GGUF
 * vocabularies) and GPT-2 byte-level BPE with merge ranks.
 */
#include <stdio.h>
#include <string.h>

#include "core/llm/llm_int.h"

#define SPACE_U2581 "\xe2\x96\x81"

typedef struct merge_entry {
    uint64_t key; /* left << 32 | right, UINT64_MAX = empty */
    int32_t rank;
    int32_t result;
} merge_entry_t;

struct ts_llm_tokenizer {
    ts_llm_tok_kind_t kind;
    int vocab_size;
    char **pieces;
    uint32_t *lens;
    float *scores;
    uint8_t *control; /* decodes to nothing */
    int bos, eos;
    bool spm_gguf;
    bool no_prefix; /* GGUF tokenizer.ggml.add_space_prefix = false */
    size_t max_piece;
    int byte_id[256];     /* SPM: <0xAB> piece; GPT-2: the byte's character; -1 when absent */
    int16_t cp_byte[512]; /* GPT-2: character code point -> byte, -1 when none */
    /* piece -> id, open addressing, -1 = empty */
    int32_t *htab;
    size_t hcap;
    /* GPT-2 merges */
    merge_entry_t *mtab;
    size_t mcap, mcount;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* id of the piece equal to s[0..n), lowest id on duplicates; -1 when none. */
static int lookup(const ts_llm_tokenizer_t *t, const char *s, size_t n)
{
    size_t mask = t->hcap - 1;
    for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
        int32_t id = t->htab[i];
        if (id < 0)
            return -1;
        if (t->lens[id] == n && memcmp(t->pieces[id], s, n) == 0)
            return id;
    }
}

ts_status_t ts__llm_tokenizer_alloc(ts_llm_tok_kind_t kind, int vocab_size,
                                    ts_llm_tokenizer_t **out)
{
    *out = NULL;
    if (vocab_size < 1 || vocab_size > TS_LLM_MAX_VOCAB)
        return TS_EINVAL;
    ts_llm_tokenizer_t *t = ts_calloc(1, sizeof(*t));
    if (!t)
        return TS_ENOMEM;
    t->kind = kind;
    t->vocab_size = vocab_size;
    t->bos = t->eos = -1;
    t->pieces = ts_calloc((size_t)vocab_size, sizeof(char *));
    t->lens = ts_calloc((size_t)vocab_size, sizeof(uint32_t));
    t->scores = ts_calloc((size_t)vocab_size, sizeof(float));
    t->control = ts_calloc((size_t)vocab_size, 1);
    if (!t->pieces || !t->lens || !t->scores || !t->control) {
        ts_llm_tokenizer_free(t);
        return TS_ENOMEM;
    }
    *out = t;
    return TS_OK;
}

void ts_llm_tokenizer_free(ts_llm_tokenizer_t *t)
{
    if (!t)
        return;
    if (t->pieces)
        for (int i = 0; i < t->vocab_size; i++)
            ts_free(t->pieces[i]);
    ts_free(t->pieces);
    ts_free(t->lens);
    ts_free(t->scores);
    ts_free(t->control);
    ts_free(t->htab);
    ts_free(t->mtab);
    ts_free(t);
}

ts_status_t ts__llm_tokenizer_set(ts_llm_tokenizer_t *t, int id, const char *piece, size_t len,
                                  float score)
{
    if (id < 0 || id >= t->vocab_size || len > TS_LLM_MAX_PIECE)
        return TS_EINVAL;
    char *p = ts_malloc(len + 1);
    if (!p)
        return TS_ENOMEM;
    if (len)
        memcpy(p, piece, len);
    p[len] = '\0';
    ts_free(t->pieces[id]);
    t->pieces[id] = p;
    t->lens[id] = (uint32_t)len;
    t->scores[id] = score;
    if (len > t->max_piece)
        t->max_piece = len;
    return TS_OK;
}

void ts__llm_tokenizer_set_space_prefix(ts_llm_tokenizer_t *t, bool on)
{
    t->no_prefix = !on;
}

void ts__llm_tokenizer_set_control(ts_llm_tokenizer_t *t, int id)
{
    if (id >= 0 && id < t->vocab_size)
        t->control[id] = 1;
}

static ts_status_t merge_insert(ts_llm_tokenizer_t *t, uint64_t key, int32_t rank, int32_t result)
{
    if ((t->mcount + 1) * 2 > t->mcap) {
        size_t ncap = t->mcap ? t->mcap * 2 : 1024;
        merge_entry_t *nt = ts_malloc(ncap * sizeof(*nt));
        if (!nt)
            return TS_ENOMEM;
        for (size_t i = 0; i < ncap; i++)
            nt[i].key = UINT64_MAX;
        for (size_t i = 0; i < t->mcap; i++) {
            if (t->mtab[i].key == UINT64_MAX)
                continue;
            size_t j = hash_u64(t->mtab[i].key) & (ncap - 1);
            while (nt[j].key != UINT64_MAX)
                j = (j + 1) & (ncap - 1);
            nt[j] = t->mtab[i];
        }
        ts_free(t->mtab);
        t->mtab = nt;
        t->mcap = ncap;
    }
    size_t j = hash_u64(key) & (t->mcap - 1);
    while (t->mtab[j].key != UINT64_MAX) {
        if (t->mtab[j].key == key)
            return TS_OK; /* the first (lowest) rank wins */
        j = (j + 1) & (t->mcap - 1);
    }
    t->mtab[j].key = key;
    t->mtab[j].rank = rank;
    t->mtab[j].result = result;
    t->mcount++;
    return TS_OK;
}

static const merge_entry_t *merge_find(const ts_llm_tokenizer_t *t, int left, int right)
{
    if (!t->mcap)
        return NULL;
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    for (size_t j = hash_u64(key) & (t->mcap - 1);; j = (j + 1) & (t->mcap - 1)) {
        if (t->mtab[j].key == UINT64_MAX)
            return NULL;
        if (t->mtab[j].key == key)
            return &t->mtab[j];
    }
}

/* Needs the piece lookup, so call after ts__llm_tokenizer_finish's hashing:
 * the GGUF loader calls finish first, then adds merges. */
ts_status_t ts__llm_tokenizer_add_merge(ts_llm_tokenizer_t *t, const char *m, size_t len, int rank)
{
    const char *sp = memchr(m, ' ', len);
    if (!sp || !t->htab)
        return TS_EFORMAT;
    size_t ln = (size_t)(sp - m), rn = len - ln - 1;
    int l = lookup(t, m, ln), r = lookup(t, sp + 1, rn);
    if (l < 0 || r < 0 || ln + rn > TS_LLM_MAX_PIECE)
        return TS_OK; /* merges of unknown pieces can never fire */
    char buf[512];
    char *cat = ln + rn <= sizeof(buf) ? buf : ts_malloc(ln + rn);
    if (!cat)
        return TS_ENOMEM;
    memcpy(cat, m, ln);
    memcpy(cat + ln, sp + 1, rn);
    int res = lookup(t, cat, ln + rn);
    if (cat != buf)
        ts_free(cat);
    if (res < 0)
        return TS_OK;
    return merge_insert(t, (uint64_t)(uint32_t)l << 32 | (uint32_t)r, rank, res);
}

/* GPT-2's byte <-> character table: printable bytes map to themselves. */
static uint32_t gpt2_byte_cp(int b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))
        return (uint32_t)b;
    int n = 0;
    for (int i = 0; i < b; i++)
        if (!((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174 && i <= 255)))
            n++;
    return 256u + (uint32_t)n;
}

static size_t utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

ts_status_t ts__llm_tokenizer_finish(ts_llm_tokenizer_t *t, int bos, int eos, bool spm_gguf)
{
    t->bos = bos >= 0 && bos < t->vocab_size ? bos : -1;
    t->eos = eos >= 0 && eos < t->vocab_size ? eos : -1;
    t->spm_gguf = spm_gguf;
    if (t->bos >= 0)
        t->control[t->bos] = 1;
    if (t->eos >= 0)
        t->control[t->eos] = 1;
    size_t cap = 16;
    while (cap < 2 * (size_t)t->vocab_size)
        cap *= 2;
    t->htab = ts_malloc(cap * sizeof(int32_t));
    if (!t->htab)
        return TS_ENOMEM;
    t->hcap = cap;
    for (size_t i = 0; i < cap; i++)
        t->htab[i] = -1;
    for (int id = 0; id < t->vocab_size; id++) {
        if (!t->pieces[id]) {
            if (ts__llm_tokenizer_set(t, id, "", 0, 0.0f) != TS_OK)
                return TS_ENOMEM;
        }
        if (lookup(t, t->pieces[id], t->lens[id]) >= 0)
            continue; /* keep the lowest id of duplicates */
        size_t i = hash_bytes(t->pieces[id], t->lens[id]) & (cap - 1);
        while (t->htab[i] >= 0)
            i = (i + 1) & (cap - 1);
        t->htab[i] = id;
    }
    for (int c = 0; c < 512; c++)
        t->cp_byte[c] = -1;
    for (int b = 0; b < 256; b++)
        t->cp_byte[gpt2_byte_cp(b)] = (int16_t)b;
    for (int b = 0; b < 256; b++) {
        char buf[8];
        if (t->kind == TS_LLM_TOK_SPM) {
            snprintf(buf, sizeof(buf), "<0x%02X>", b);
            t->byte_id[b] = lookup(t, buf, 6);
        } else {
            size_t n = utf8_put(gpt2_byte_cp(b), buf);
            t->byte_id[b] = lookup(t, buf, n);
        }
    }
    return TS_OK;
}

ts_llm_tok_kind_t ts_llm_tokenizer_kind(const ts_llm_tokenizer_t *t)
{
    return t->kind;
}
int ts_llm_tokenizer_vocab_size(const ts_llm_tokenizer_t *t)
{
    return t->vocab_size;
}
int ts_llm_tokenizer_bos(const ts_llm_tokenizer_t *t)
{
    return t->bos;
}
int ts_llm_tokenizer_eos(const ts_llm_tokenizer_t *t)
{
    return t->eos;
}

const char *ts_llm_tokenizer_piece(const ts_llm_tokenizer_t *t, int id, size_t *len)
{
    if (!t || id < 0 || id >= t->vocab_size)
        return NULL;
    if (len)
        *len = t->lens[id];
    return t->pieces[id];
}

/* ------------------------------------------------------------- loading */

static ts_status_t load_llama2c_tok(const uint8_t *buf, size_t size, int vocab_size,
                                    ts_llm_tokenizer_t **out, char *err, size_t err_size)
{
    if (vocab_size < 1 || vocab_size > TS_LLM_MAX_VOCAB)
        return ts__llm_errf(TS_EINVAL, err, err_size,
                            "llama2.c tokenizer: needs the model's vocab_size (got %d)",
                            vocab_size);
    if (size < 4)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "llama2.c tokenizer: truncated header (%zu bytes)", size);
    int32_t max_len = (int32_t)ts__le32(buf);
    if (max_len < 0 || max_len > TS_LLM_MAX_PIECE)
        return ts__llm_errf(TS_EFORMAT, err, err_size,
                            "llama2.c tokenizer: max_token_length %d out of range", (int)max_len);
    ts_llm_tokenizer_t *t;
    ts_status_t st = ts__llm_tokenizer_alloc(TS_LLM_TOK_SPM, vocab_size, &t);
    if (st != TS_OK)
        return st;
    size_t off = 4;
    for (int i = 0; i < vocab_size; i++) {
        if (size - off < 8) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size,
                              "llama2.c tokenizer: truncated at token %d of %d (offset %zu)", i,
                              vocab_size, off);
            goto fail;
        }
        float score = ts__lef32(buf + off);
        int32_t len = (int32_t)ts__le32(buf + off + 4);
        off += 8;
        if (len < 0 || len > max_len || (size_t)len > size - off) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size,
                              "llama2.c tokenizer: token %d has length %d (max %d, %zu bytes "
                              "left)",
                              i, (int)len, (int)max_len, size - off);
            goto fail;
        }
        if (score != score) {
            st = ts__llm_errf(TS_EFORMAT, err, err_size, "llama2.c tokenizer: token %d score NaN",
                              i);
            goto fail;
        }
        st = ts__llm_tokenizer_set(t, i, (const char *)buf + off, (size_t)len, score);
        if (st != TS_OK)
            goto fail;
        off += (size_t)len;
    }
    if (off != size) {
        st = ts__llm_errf(TS_EFORMAT, err, err_size,
                          "llama2.c tokenizer: %zu trailing bytes after %d tokens (wrong "
                          "vocab_size?)",
                          size - off, vocab_size);
        goto fail;
    }
    st = ts__llm_tokenizer_finish(t, vocab_size > 1 ? 1 : -1, vocab_size > 2 ? 2 : -1, false);
    if (st != TS_OK)
        goto fail;
    *out = t;
    return TS_OK;
fail:
    ts_llm_tokenizer_free(t);
    return st;
}

ts_status_t ts_llm_tokenizer_load_buffer(const void *buf, size_t size, int vocab_size,
                                         ts_llm_tokenizer_t **out, char *err, size_t err_size)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!buf && size)
        return TS_EINVAL;
    if (err && err_size)
        err[0] = '\0';
    if (size >= 4 && memcmp(buf, "GGUF", 4) == 0)
        return ts__llm_tokenizer_from_gguf(buf, size, vocab_size, out, err, err_size);
    return load_llama2c_tok(buf, size, vocab_size, out, err, err_size);
}

ts_status_t ts_llm_tokenizer_load(const char *path, int vocab_size, ts_llm_tokenizer_t **out,
                                  char *err, size_t err_size)
{
    if (!out || !path)
        return TS_EINVAL;
    *out = NULL;
    uint8_t *buf;
    size_t size;
    ts_status_t st = ts__llm_read_file(path, 0, &buf, &size, err, err_size);
    if (st != TS_OK)
        return st;
    st = ts_llm_tokenizer_load_buffer(buf, size, vocab_size, out, err, err_size);
    ts_free(buf);
    if (st != TS_OK && err && err_size) {
        char tmp[512];
        snprintf(tmp, sizeof(tmp), "%s", err);
        snprintf(err, err_size, "%s: %s", path, tmp);
    }
    return st;
}

/* ------------------------------------------------------------- encoding */

size_t ts_llm_tokenizer_max_ids(size_t len)
{
    /* Every byte may become up to 3 byte tokens (a space widened to U+2581),
     * plus the dummy prefix (3), BOS and EOS. */
    return 3 * len + 6;
}

typedef struct {
    int *v;
    size_t n, cap;
} ids_t;

static ts_status_t ids_push(ids_t *a, int id)
{
    if (a->n == a->cap) {
        size_t nc = a->cap ? 2 * a->cap : 64;
        int *nv = ts_realloc(a->v, nc * sizeof(int));
        if (!nv)
            return TS_ENOMEM;
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = id;
    return TS_OK;
}

/* Append the SPM symbols of one code point s[0..n): its piece, or its bytes. */
static ts_status_t spm_symbol(const ts_llm_tokenizer_t *t, const char *s, size_t n, ids_t *a)
{
    int id = lookup(t, s, n);
    if (id >= 0)
        return ids_push(a, id);
    for (size_t i = 0; i < n; i++) {
        int b = t->byte_id[(uint8_t)s[i]];
        /* llama2.c assumes <0x00> at id 3; without byte pieces use <unk> = 0. */
        ts_status_t st = ids_push(a, b >= 0 ? b : 0);
        if (st != TS_OK)
            return st;
    }
    return TS_OK;
}

static ts_status_t spm_encode(const ts_llm_tokenizer_t *t, const char *text, size_t len, ids_t *a)
{
    ts_status_t st = TS_OK;
    size_t start = a->n;
    if (len == 0)
        return TS_OK;
    /* The dummy prefix and, for GGUF vocabularies, U+2581 for every space. */
    if (t->no_prefix)
        st = TS_OK;
    else if (t->spm_gguf)
        st = spm_symbol(t, SPACE_U2581, 3, a);
    else
        st = spm_symbol(t, " ", 1, a);
    if (st != TS_OK)
        return st;
    size_t i = 0;
    while (i < len) {
        size_t n = 1;
        /* A code point: one byte and up to 3 continuation bytes (llama2.c). */
        while (i + n < len && n < 4 && ((uint8_t)text[i + n] & 0xC0) == 0x80)
            n++;
        if (t->spm_gguf && n == 1 && text[i] == ' ')
            st = spm_symbol(t, SPACE_U2581, 3, a);
        else
            st = spm_symbol(t, text + i, n, a);
        if (st != TS_OK)
            return st;
        i += n;
    }
    /* Greedy merges: the adjacent pair whose concatenation has the best score. */
    size_t cap = 2 * t->max_piece + 1;
    char *buf = ts_malloc(cap);
    if (!buf)
        return TS_ENOMEM;
    for (;;) {
        float best = -1e10f;
        int best_id = -1;
        size_t best_i = 0;
        for (size_t k = start; k + 1 < a->n; k++) {
            int l = a->v[k], r = a->v[k + 1];
            size_t ln = t->lens[l], rn = t->lens[r];
            memcpy(buf, t->pieces[l], ln);
            memcpy(buf + ln, t->pieces[r], rn);
            int id = lookup(t, buf, ln + rn);
            if (id >= 0 && t->scores[id] > best) {
                best = t->scores[id];
                best_id = id;
                best_i = k;
            }
        }
        if (best_id < 0)
            break;
        a->v[best_i] = best_id;
        memmove(&a->v[best_i + 1], &a->v[best_i + 2], (a->n - best_i - 2) * sizeof(int));
        a->n--;
    }
    ts_free(buf);
    return TS_OK;
}

static bool is_ws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static bool is_letter(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
static bool is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}

/* Length of the GPT-2 pre-token at s[i..n) (the regex, see the header). */
static size_t gpt2_pretoken(const uint8_t *s, size_t i, size_t n)
{
    if (s[i] == '\'' && i + 1 < n) {
        static const char *const c2[] = {"re", "ve", "ll"};
        for (int k = 0; k < 3; k++)
            if (i + 2 < n && s[i + 1] == (uint8_t)c2[k][0] && s[i + 2] == (uint8_t)c2[k][1])
                return 3;
        if (s[i + 1] == 's' || s[i + 1] == 't' || s[i + 1] == 'm' || s[i + 1] == 'd')
            return 2;
    }
    size_t j = i;
    if (s[j] == ' ' && j + 1 < n && !is_ws(s[j + 1]))
        j++;
    if (!is_ws(s[j])) {
        size_t k = j;
        if (is_letter(s[j])) {
            while (k < n && is_letter(s[k]))
                k++;
        } else if (is_digit(s[j])) {
            while (k < n && is_digit(s[k]))
                k++;
        } else {
            while (k < n && !is_ws(s[k]) && !is_letter(s[k]) && !is_digit(s[k]))
                k++;
        }
        return k - i;
    }
    size_t k = i;
    while (k < n && is_ws(s[k]))
        k++;
    size_t run = k - i;
    if (k == n || run == 1)
        return run;
    return run - 1;
}

static ts_status_t gpt2_encode(const ts_llm_tokenizer_t *t, const char *text, size_t len, ids_t *a)
{
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0;
    while (i < len) {
        size_t m = gpt2_pretoken(s, i, len);
        size_t start = a->n;
        for (size_t k = 0; k < m; k++) {
            int b = t->byte_id[s[i + k]];
            ts_status_t st = ids_push(a, b >= 0 ? b : 0);
            if (st != TS_OK)
                return st;
        }
        /* BPE: merge the lowest-rank adjacent pair (leftmost on ties). */
        for (;;) {
            int best_rank = INT32_MAX;
            size_t best_k = 0;
            int best_res = -1;
            for (size_t k = start; k + 1 < a->n; k++) {
                const merge_entry_t *e = merge_find(t, a->v[k], a->v[k + 1]);
                if (e && e->rank < best_rank) {
                    best_rank = e->rank;
                    best_k = k;
                    best_res = e->result;
                }
            }
            if (best_res < 0)
                break;
            a->v[best_k] = best_res;
            memmove(&a->v[best_k + 1], &a->v[best_k + 2], (a->n - best_k - 2) * sizeof(int));
            a->n--;
        }
        i += m;
    }
    return TS_OK;
}

ts_status_t ts_llm_tokenizer_encode(const ts_llm_tokenizer_t *t, const char *text, size_t len,
                                    bool bos, bool eos, int *ids, size_t cap, size_t *n)
{
    if (!t || (!text && len) || !n || (!ids && cap))
        return TS_EINVAL;
    *n = 0;
    ids_t a = {0};
    ts_status_t st = TS_OK;
    if (bos && t->bos >= 0)
        st = ids_push(&a, t->bos);
    if (st == TS_OK)
        st = t->kind == TS_LLM_TOK_GPT2 ? gpt2_encode(t, text, len, &a)
                                        : spm_encode(t, text, len, &a);
    if (st == TS_OK && eos && t->eos >= 0)
        st = ids_push(&a, t->eos);
    if (st == TS_OK) {
        *n = a.n;
        if (a.n > cap)
            st = TS_ELIMIT;
        else if (a.n)
            memcpy(ids, a.v, a.n * sizeof(int));
    }
    ts_free(a.v);
    return st;
}

/* ------------------------------------------------------------- decoding */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

ts_status_t ts_llm_tokenizer_decode(const ts_llm_tokenizer_t *t, int prev, int id, char *buf,
                                    size_t cap, size_t *n)
{
    if (!t || !n || (!buf && cap))
        return TS_EINVAL;
    *n = 0;
    if (id < 0 || id >= t->vocab_size)
        return TS_EINVAL;
    size_t w = 0;
    char tmp[4];
    const char *p = t->pieces[id];
    size_t len = t->lens[id];
#define PUT(c)                                                                                     \
    do {                                                                                           \
        if (w < cap)                                                                               \
            buf[w] = (char)(c);                                                                    \
        w++;                                                                                       \
    } while (0)
    if (t->control[id]) {
        len = 0;
    } else if (t->kind == TS_LLM_TOK_SPM) {
        if (len == 6 && p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[5] == '>' &&
            hexval(p[3]) >= 0 && hexval(p[4]) >= 0) {
            tmp[0] = (char)(hexval(p[3]) * 16 + hexval(p[4]));
            p = tmp;
            len = 1;
        } else {
            bool first = !t->no_prefix && (prev < 0 || prev == t->bos);
            if (first && len >= 1 && p[0] == ' ') {
                p++;
                len--;
            } else if (first && t->spm_gguf && len >= 3 && memcmp(p, SPACE_U2581, 3) == 0) {
                p += 3;
                len -= 3;
            }
        }
        for (size_t i = 0; i < len; i++) {
            if (t->spm_gguf && i + 2 < len && memcmp(p + i, SPACE_U2581, 3) == 0) {
                PUT(' ');
                i += 2;
            } else {
                PUT(p[i]);
            }
        }
        len = 0;
    } else {
        /* GPT-2: each character of the piece is one byte. */
        for (size_t i = 0; i < len;) {
            uint8_t c = (uint8_t)p[i];
            uint32_t cp;
            size_t k;
            if (c < 0x80) {
                cp = c;
                k = 1;
            } else if ((c & 0xE0) == 0xC0 && i + 1 < len) {
                cp = (uint32_t)(c & 0x1F) << 6 | ((uint8_t)p[i + 1] & 0x3F);
                k = 2;
            } else if ((c & 0xF0) == 0xE0 && i + 2 < len) {
                cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)((uint8_t)p[i + 1] & 0x3F) << 6 |
                     ((uint8_t)p[i + 2] & 0x3F);
                k = 3;
            } else {
                PUT(c); /* not a byte-level character: pass through */
                i++;
                continue;
            }
            int b = cp < 512 ? t->cp_byte[cp] : -1;
            if (b >= 0) {
                PUT(b);
            } else {
                for (size_t q = 0; q < k; q++)
                    PUT(p[i + q]);
            }
            i += k;
        }
        len = 0;
    }
#undef PUT
    (void)len;
    *n = w;
    if (w < cap)
        buf[w] = '\0';
    return w > cap ? TS_ELIMIT : TS_OK;
}

/*
 * The n-gram draft of speculative decoding (prompt lookup with counts): a
 * table of which token followed each context of nmin..nmax tokens in the
 * sequences it was given (the text so far, and any public or earlier text
 * the client adds), guessing greedily from the longest context it has seen.
 * Two open-addressing tables: (context, next) -> count and context ->
 * (best next, its count); counts only grow, so the best is kept exactly on
 * each increment (the higher count, the lower id on a tie).
 *
 * The table holds the user's own tokens (prompt and generated text): it is
 * wiped when freed and never leaves the client.
 */
#include <string.h>

#include "core/llm/llm_int.h"

#define NGRAM_MIN_CAP  256
#define NGRAM_LINE_MAX 1024                 /* bytes of a text's line tokenized at once */
#define NGRAM_FILE_MAX ((uint64_t)64 << 20) /* ts_llm_ngram_add_file */

typedef struct {
    int32_t tok[TS_LLM_NGRAM_MAX]; /* the context, oldest first; unused entries 0 */
    int32_t next;                  /* pairs: the next token; contexts: the best next */
    uint32_t count;                /* 0: an empty entry */
    uint32_t total;                /* contexts: how often the context was seen */
    uint8_t n;                     /* context length */
} ngram_entry_t;

typedef struct {
    ngram_entry_t *e;
    size_t cap, used; /* cap: a power of two */
} ngram_table_t;

struct ts_llm_ngram {
    int nmin, nmax;
    /* ts_llm_ngram_set_fallback: contexts shorter than nmin guess a pass's
     * first token only when their best next took at least this share of the
     * context's occurrences (0: never); later guesses take them freely */
    double share;
    ngram_table_t pairs, ctx;
};

static uint64_t ngram_hash(const int32_t *tok, int n, int32_t next)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (int i = 0; i <= n; i++) {
        uint64_t v = (uint64_t)(uint32_t)(i < n ? tok[i] : next);
        h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    return h;
}

/* The slot of (tok[0..n), next) in t: its entry, or the empty one it would take. */
static ngram_entry_t *ngram_slot(const ngram_table_t *t, const int32_t *tok, int n, int32_t next,
                                 bool by_next)
{
    size_t mask = t->cap - 1, i = (size_t)ngram_hash(tok, n, by_next ? next : -1) & mask;
    for (;;) {
        ngram_entry_t *e = &t->e[i];
        if (!e->count || (e->n == n && (!by_next || e->next == next) &&
                          memcmp(e->tok, tok, (size_t)n * sizeof *tok) == 0))
            return e;
        i = (i + 1) & mask;
    }
}

static ts_status_t ngram_grow(ngram_table_t *t, bool by_next)
{
    if ((t->used + 1) * 4 <= t->cap * 3)
        return TS_OK;
    size_t cap = t->cap ? t->cap * 2 : NGRAM_MIN_CAP;
    ngram_table_t nt = {ts_calloc(cap, sizeof(ngram_entry_t)), cap, t->used};
    if (!nt.e)
        return TS_ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].count)
            *ngram_slot(&nt, t->e[i].tok, t->e[i].n, t->e[i].next, by_next) = t->e[i];
    ts_free_secret(t->e);
    *t = nt;
    return TS_OK;
}

ts_status_t ts_llm_ngram_new(int nmin, int nmax, ts_llm_ngram_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (nmin < 1 || nmax < nmin || nmax > TS_LLM_NGRAM_MAX)
        return TS_EINVAL;
    ts_llm_ngram_t *g = ts_calloc(1, sizeof *g);
    if (!g)
        return TS_ENOMEM;
    g->nmin = nmin;
    g->nmax = nmax;
    *out = g;
    return TS_OK;
}

ts_status_t ts_llm_ngram_set_fallback(ts_llm_ngram_t *g, double share)
{
    if (!g || !(share > 0.0 && share <= 1.0) || g->ctx.used)
        return TS_EINVAL;
    g->share = share;
    return TS_OK;
}

void ts_llm_ngram_free(ts_llm_ngram_t *g)
{
    if (!g)
        return;
    ts_free_secret(g->pairs.e);
    ts_free_secret(g->ctx.e);
    ts_free(g);
}

ts_status_t ts_llm_ngram_add(ts_llm_ngram_t *g, const int *ids, size_t n, size_t from)
{
    if (!g || (n && !ids) || from > n)
        return TS_EINVAL;
    int kmin = g->share > 0 ? 1 : g->nmin;
    for (size_t i = from ? from : 1; i < n; i++) {
        for (int k = kmin; k <= g->nmax && (size_t)k <= i; k++) {
            int32_t tok[TS_LLM_NGRAM_MAX] = {0};
            for (int j = 0; j < k; j++)
                tok[j] = (int32_t)ids[i - (size_t)k + (size_t)j];
            int32_t next = (int32_t)ids[i];
            if (ngram_grow(&g->pairs, true) != TS_OK || ngram_grow(&g->ctx, false) != TS_OK)
                return TS_ENOMEM;
            ngram_entry_t *p = ngram_slot(&g->pairs, tok, k, next, true);
            if (!p->count) {
                memcpy(p->tok, tok, sizeof tok);
                p->n = (uint8_t)k;
                p->next = next;
                g->pairs.used++;
            }
            if (p->count < UINT32_MAX)
                p->count++;
            ngram_entry_t *c = ngram_slot(&g->ctx, tok, k, 0, false);
            if (!c->count) {
                memcpy(c->tok, tok, sizeof tok);
                c->n = (uint8_t)k;
                g->ctx.used++;
            }
            if (c->total < UINT32_MAX)
                c->total++;
            if (p->count > c->count || (p->count == c->count && next < c->next)) {
                c->count = p->count;
                c->next = next;
            }
        }
    }
    return TS_OK;
}

size_t ts_llm_ngram_guess(const ts_llm_ngram_t *g, const int *ids, size_t n, size_t k, int *out)
{
    if (!g || !ids || !out || !g->ctx.cap)
        return 0;
    size_t got = 0;
    while (got < k) {
        /* the last nmax tokens of ids followed by the guesses so far */
        size_t have = n + got;
        int32_t last[TS_LLM_NGRAM_MAX];
        int m = have < (size_t)g->nmax ? (int)have : g->nmax;
        for (int j = 0; j < m; j++) {
            size_t at = have - (size_t)m + (size_t)j;
            last[j] = (int32_t)(at < n ? ids[at] : out[at - n]);
        }
        const ngram_entry_t *best = NULL;
        for (int c = m; c >= g->nmin && !best; c--) {
            const ngram_entry_t *e = ngram_slot(&g->ctx, last + (m - c), c, 0, false);
            best = e->count ? e : NULL;
        }
        /* the shorter contexts (ts_llm_ngram_set_fallback): a pass's first
         * guess only from a context seen twice or more whose best next took
         * `share` of its occurrences (a pass that keeps nothing costs more
         * than the step it replaces); later guesses freely (the pass runs
         * anyway, and every lane it fills may be kept) */
        for (int c = (m < g->nmin ? m : g->nmin - 1); g->share > 0 && c >= 1 && !best; c--) {
            const ngram_entry_t *e = ngram_slot(&g->ctx, last + (m - c), c, 0, false);
            if (e->count &&
                (got > 0 || (e->count >= 2 && (double)e->count >= g->share * (double)e->total)))
                best = e;
        }
        if (!best)
            break;
        out[got++] = best->next;
    }
    return got;
}

size_t ts_llm_ngram_draft(const ts_llm_ngram_t *g, const int *ids, size_t n, size_t k, int *out)
{
    size_t got = ts_llm_ngram_guess(g, ids, n, k, out);
    for (size_t i = got; got && i < k; i++)
        out[i] = out[got - 1];
    return got;
}

ts_status_t ts_llm_ngram_add_text(ts_llm_ngram_t *g, const ts_llm_tokenizer_t *tok,
                                  const char *text, size_t len)
{
    if (!g || !tok || (len && !text))
        return TS_EINVAL;
    int *ids = NULL;
    size_t cap = 0;
    ts_status_t st = TS_OK;
    for (size_t at = 0; st == TS_OK && at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at, m = 0, skip = 1;
        if (n > NGRAM_LINE_MAX) {
            /* a long line in pieces (the merge is quadratic in a piece's
             * length): cut after its last space within the limit, else at
             * a UTF-8 character boundary */
            size_t cut = NGRAM_LINE_MAX;
            while (cut > NGRAM_LINE_MAX / 2 && text[at + cut - 1] != ' ')
                cut--;
            if (text[at + cut - 1] != ' ') {
                cut = NGRAM_LINE_MAX;
                while (cut > 1 && ((unsigned char)text[at + cut] & 0xC0) == 0x80)
                    cut--;
            }
            n = cut;
            skip = 0;
        }
        if (n) {
            size_t need = ts_llm_tokenizer_max_ids(n) + 2;
            if (need > cap) {
                int *ni = ts_realloc(ids, need * sizeof *ids);
                if (!ni) {
                    st = TS_ENOMEM;
                    break;
                }
                ids = ni;
                cap = need;
            }
            st = ts_llm_tokenizer_encode(tok, text + at, n, true, false, ids, cap, &m);
            if (st == TS_OK)
                st = ts_llm_ngram_add(g, ids, m, 0);
        }
        at += n + skip;
    }
    ts_free_secret(ids);
    return st;
}

ts_status_t ts_llm_ngram_add_file(ts_llm_ngram_t *g, const ts_llm_tokenizer_t *tok,
                                  const char *path, char *err, size_t err_size)
{
    if (!g || !tok || !path)
        return TS_EINVAL;
    uint8_t *buf = NULL;
    size_t n = 0;
    ts_status_t st = ts__llm_read_file(path, NGRAM_FILE_MAX, &buf, &n, err, err_size);
    if (st == TS_OK && (st = ts_llm_ngram_add_text(g, tok, (const char *)buf, n)) != TS_OK)
        ts__llm_errf(st, err, err_size, "%s: %s", path, ts_strerror(st));
    ts_free_secret(buf); /* perhaps the user's earlier texts */
    return st;
}

ts_status_t ts_llm_ngram_replay(ts_llm_ngram_t *g, const int *ids, size_t n, size_t from,
                                size_t lanes, ts_llm_ngram_replay_t *r)
{
    if (!g || !ids || !r || from >= n || lanes < 2 || lanes > 1024)
        return TS_EINVAL;
    memset(r, 0, sizeof *r);
    int guess[1024];
    size_t upto = 0;
    bool stepped = false; /* the last call was a one-position step (not the prompt's pass) */
    for (size_t pos = from; pos + 1 < n;) {
        ts_status_t st = ts_llm_ngram_add(g, ids, pos + 1, upto);
        if (st != TS_OK)
            return st;
        upto = pos + 1;
        size_t left = n - 1 - pos, nb = lanes < left ? lanes : left, m = 0;
        size_t got = nb >= 2 ? ts_llm_ngram_draft(g, ids, pos + 1, nb - 1, guess) : 0;
        if (got) {
            while (m < nb - 1 && guess[m] == ids[pos + 1 + m])
                m++;
            r->passes++;
            r->after_step += stepped;
            r->drafted += got;
            r->kept += m;
        } else {
            r->steps++;
        }
        stepped = !got;
        pos += 1 + m;
        r->tokens += 1 + m;
    }
    return TS_OK;
}

/*
 * The n-gram draft (core/llm/draft.c) against a brute-force count over the
 * same sequences: every guess chain on random texts of small alphabets (many
 * repeated contexts, table growth past several rehashes), sequences added in
 * pieces equal to added at once, no context across sequences, errors; the
 * replay of speculative decoding against a brute-force schedule; a text's
 * lines as sequences.
 */
#include "tests/unit/ts_test.h"

#include "core/llm/llm.h"

/* The brute-force next token after ctx[0..c) in the sequences: the highest
 * count, the lowest id on a tie; -1 when the context never occurs. */
static int brute_next(int *const *seqs, const size_t *lens, int n_seqs, const int *ctx, int c,
                      int alphabet)
{
    int cnt[64] = {0};
    bool seen = false;
    for (int s = 0; s < n_seqs; s++)
        for (size_t i = (size_t)c; i < lens[s]; i++)
            if (memcmp(seqs[s] + i - c, ctx, (size_t)c * sizeof *ctx) == 0) {
                cnt[seqs[s][i]]++;
                seen = true;
            }
    if (!seen)
        return -1;
    int best = 0;
    for (int t = 1; t < alphabet; t++)
        if (cnt[t] > cnt[best])
            best = t;
    return best;
}

/* The brute-force guess chain after q[0..n): at each step the longest
 * context of nmax..nmin tokens that occurs. */
static size_t brute_guess(int *const *seqs, const size_t *lens, int n_seqs, int nmin, int nmax,
                          const int *q, size_t n, size_t k, int alphabet, int *out)
{
    int buf[256];
    memcpy(buf, q, n * sizeof *q);
    size_t got = 0;
    while (got < k) {
        size_t have = n + got;
        int nx = -1;
        for (int c = nmax; c >= nmin && nx < 0; c--)
            if ((size_t)c <= have)
                nx = brute_next(seqs, lens, n_seqs, buf + have - c, c, alphabet);
        if (nx < 0)
            break;
        out[got++] = nx;
        buf[have] = nx;
    }
    return got;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

START_TEST(test_ngram_brute)
{
    uint64_t rs = 12345;
    const int shapes[][3] = {{1, 1, 2}, {1, 3, 3}, {2, 4, 5}, {2, 2, 7}, {3, 4, 4}, {1, 4, 40}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        int nmin = shapes[sh][0], nmax = shapes[sh][1], alphabet = shapes[sh][2];
        enum { NS = 4 };
        int *seqs[NS];
        size_t lens[NS];
        ts_llm_ngram_t *g = NULL;
        ck_assert_ts_ok(ts_llm_ngram_new(nmin, nmax, &g));
        for (int s = 0; s < NS; s++) {
            lens[s] = 200 + lcg(&rs) % 400; /* ~1500 tokens: several rehashes */
            seqs[s] = malloc(lens[s] * sizeof(int));
            ck_assert_ptr_nonnull(seqs[s]);
            for (size_t i = 0; i < lens[s]; i++)
                seqs[s][i] = (int)(lcg(&rs) % (uint64_t)alphabet);
            /* sequence 0 in pieces (the growing text), the others at once */
            if (s == 0) {
                size_t at = 0;
                while (at < lens[s]) {
                    size_t to = at + 1 + lcg(&rs) % 37;
                    to = to < lens[s] ? to : lens[s];
                    ck_assert_ts_ok(ts_llm_ngram_add(g, seqs[s], to, at));
                    at = to;
                }
            } else {
                ck_assert_ts_ok(ts_llm_ngram_add(g, seqs[s], lens[s], 0));
            }
        }
        for (int t = 0; t < 300; t++) {
            int q[16];
            size_t n = 1 + lcg(&rs) % 6, k = lcg(&rs) % 9;
            for (size_t i = 0; i < n; i++)
                q[i] = (int)(lcg(&rs) % (uint64_t)alphabet);
            int want[16], got[16];
            size_t nw = brute_guess(seqs, lens, NS, nmin, nmax, q, n, k, alphabet, want);
            size_t ng = ts_llm_ngram_guess(g, q, n, k, got);
            ck_assert_msg(ng == nw, "shape %zu query %d: %zu guesses, brute force %zu", sh, t, ng,
                          nw);
            for (size_t i = 0; i < ng; i++)
                ck_assert_msg(got[i] == want[i], "shape %zu query %d guess %zu: %d, brute %d", sh,
                              t, i, got[i], want[i]);
        }
        ts_llm_ngram_free(g);
        for (int s = 0; s < NS; s++)
            free(seqs[s]);
    }
}
END_TEST

START_TEST(test_ngram_edges)
{
    ts_llm_ngram_t *g = NULL;
    ck_assert_int_eq(ts_llm_ngram_new(0, 2, &g), TS_EINVAL);
    ck_assert_int_eq(ts_llm_ngram_new(3, 2, &g), TS_EINVAL);
    ck_assert_int_eq(ts_llm_ngram_new(1, TS_LLM_NGRAM_MAX + 1, &g), TS_EINVAL);
    ck_assert_ptr_null(g);
    ck_assert_ts_ok(ts_llm_ngram_new(2, 3, &g));
    int out[8];
    const int a[] = {5, 6, 7, 8};
    /* empty: no guesses */
    ck_assert_uint_eq(ts_llm_ngram_guess(g, a, 2, 4, out), 0);
    ck_assert_int_eq(ts_llm_ngram_add(g, a, 4, 5), TS_EINVAL);
    ck_assert_ts_ok(ts_llm_ngram_add(g, a, 4, 0));
    /* 5 6 -> 7 8, then nothing follows 7 8 */
    ck_assert_uint_eq(ts_llm_ngram_guess(g, a, 2, 4, out), 2);
    ck_assert_int_eq(out[0], 7);
    ck_assert_int_eq(out[1], 8);
    /* one token of context is below nmin = 2 */
    ck_assert_uint_eq(ts_llm_ngram_guess(g, a + 2, 1, 4, out), 0);
    /* no context across sequences: 8 | 9 ... adds no (7 8) -> 9 */
    const int b[] = {9, 10};
    ck_assert_ts_ok(ts_llm_ngram_add(g, b, 2, 0));
    ck_assert_uint_eq(ts_llm_ngram_guess(g, a, 4, 4, out), 0);
    /* a count beats an earlier, lower id: (5 6) -> 1 twice */
    const int c[] = {5, 6, 1, 5, 6, 1};
    ck_assert_ts_ok(ts_llm_ngram_add(g, c, 6, 0));
    ck_assert_uint_eq(ts_llm_ngram_guess(g, a, 2, 1, out), 1);
    ck_assert_int_eq(out[0], 1);
    ts_llm_ngram_free(g);
    ts_llm_ngram_free(NULL);

    /* the one-token fallback: a share in (0, 1], set before any count */
    ck_assert_ts_ok(ts_llm_ngram_new(2, 3, &g));
    ck_assert_int_eq(ts_llm_ngram_set_fallback(g, 0.0), TS_EINVAL);
    ck_assert_int_eq(ts_llm_ngram_set_fallback(g, 1.5), TS_EINVAL);
    ck_assert_ts_ok(ts_llm_ngram_set_fallback(g, 0.5));
    /* 3 -> 4 seen three times, 3 -> 9 once (share 0.75); 20 -> 21 once */
    const int f1[] = {3, 4, 1, 3, 4, 2, 3, 4, 5, 3, 9, 20, 21};
    ck_assert_ts_ok(ts_llm_ngram_add(g, f1, 13, 0));
    ck_assert_int_eq(ts_llm_ngram_set_fallback(g, 0.5), TS_EINVAL); /* counts added */
    /* (7 3) unseen: the last token 3 alone guesses 4; then (3 4) -> 1
     * (two tokens: the first of the three continuations, lowest id) */
    const int q1[] = {7, 3};
    ck_assert_uint_eq(ts_llm_ngram_guess(g, q1, 2, 2, out), 2);
    ck_assert_int_eq(out[0], 4);
    ck_assert_int_eq(out[1], 1);
    /* 20 was seen once: no first guess from it */
    const int q2[] = {7, 20};
    ck_assert_uint_eq(ts_llm_ngram_guess(g, q2, 2, 2, out), 0);
    ts_llm_ngram_free(g);
    /* a share the best next does not reach: 3 -> 4 two of four times, under
     * 0.6: no first guess from 3 alone; but a pass's later guesses take it
     * freely: after 6 (6 -> 3 in two sequences, share 1) the guesses go on
     * 3 -> 4 (one token, share 0.5, a later guess), then (3 4) -> 3 */
    ck_assert_ts_ok(ts_llm_ngram_new(2, 3, &g));
    ck_assert_ts_ok(ts_llm_ngram_set_fallback(g, 0.6));
    const int f2[] = {3, 4, 3, 8, 3, 9, 3, 4}, f3[] = {6, 3};
    ck_assert_ts_ok(ts_llm_ngram_add(g, f2, 8, 0));
    ck_assert_ts_ok(ts_llm_ngram_add(g, f3, 2, 0));
    ck_assert_ts_ok(ts_llm_ngram_add(g, f3, 2, 0));
    ck_assert_uint_eq(ts_llm_ngram_guess(g, q1, 2, 2, out), 0);
    const int q3[] = {7, 6};
    ck_assert_uint_eq(ts_llm_ngram_guess(g, q3, 2, 3, out), 3);
    ck_assert_int_eq(out[0], 3);
    ck_assert_int_eq(out[1], 4);
    ck_assert_int_eq(out[2], 3);
    ts_llm_ngram_free(g);
}
END_TEST

/* The brute-force replay: at each position a pass of the guesses (the last
 * repeated to fill the lanes) where there is one, keeping the right ones
 * up to the first wrong, else one position. */
static void brute_replay(int *const *corpus, const size_t *clens, int nc, const int *ids, size_t n,
                         size_t from, size_t lanes, int alphabet, ts_llm_ngram_replay_t *r)
{
    memset(r, 0, sizeof *r);
    int *seqs[8];
    size_t lens[8];
    for (int c = 0; c < nc; c++) {
        seqs[c] = corpus[c];
        lens[c] = clens[c];
    }
    seqs[nc] = (int *)ids;
    bool prev_step = false;
    for (size_t pos = from; pos + 1 < n;) {
        lens[nc] = pos + 1;
        size_t left = n - 1 - pos, nb = lanes < left ? lanes : left, m = 0, got = 0;
        int g[64];
        if (nb >= 2)
            got = brute_guess(seqs, lens, nc + 1, 2, 3, ids + pos - 3, 4, nb - 1, alphabet, g);
        for (size_t i = got; got && i < nb - 1; i++)
            g[i] = g[got - 1];
        if (got) {
            while (m < nb - 1 && g[m] == ids[pos + 1 + m])
                m++;
            r->passes++;
            if (prev_step)
                r->after_step++;
            r->drafted += got;
            r->kept += m;
            prev_step = false;
        } else {
            r->steps++;
            prev_step = true;
        }
        pos += 1 + m;
        r->tokens += 1 + m;
    }
}

START_TEST(test_ngram_replay)
{
    uint64_t rs = 777;
    for (int trial = 0; trial < 40; trial++) {
        int alphabet = 2 + (int)(lcg(&rs) % 4), nc = (int)(lcg(&rs) % 3);
        size_t lanes = (size_t)2 << (lcg(&rs) % 4), n = 20 + lcg(&rs) % 80, from = 4;
        int *corpus[3], ids[100];
        size_t clens[3];
        ts_llm_ngram_t *g = NULL;
        ck_assert_ts_ok(ts_llm_ngram_new(2, 3, &g));
        for (int c = 0; c < nc; c++) {
            clens[c] = 10 + lcg(&rs) % 60;
            corpus[c] = malloc(clens[c] * sizeof(int));
            ck_assert_ptr_nonnull(corpus[c]);
            for (size_t i = 0; i < clens[c]; i++)
                corpus[c][i] = (int)(lcg(&rs) % (uint64_t)alphabet);
            ck_assert_ts_ok(ts_llm_ngram_add(g, corpus[c], clens[c], 0));
        }
        /* a text that repeats itself now and then (runs copied from earlier) */
        for (size_t i = 0; i < n; i++)
            ids[i] = i > 8 && lcg(&rs) % 3 ? ids[i - 1 - lcg(&rs) % 8]
                                           : (int)(lcg(&rs) % (uint64_t)alphabet);
        ts_llm_ngram_replay_t got, want;
        ck_assert_ts_ok(ts_llm_ngram_replay(g, ids, n, from, lanes, &got));
        brute_replay(corpus, clens, nc, ids, n, from, lanes, alphabet, &want);
        ck_assert_msg(got.passes == want.passes && got.steps == want.steps &&
                          got.kept == want.kept && got.drafted == want.drafted &&
                          got.tokens == want.tokens && got.after_step == want.after_step,
                      "trial %d: passes %zu/%zu steps %zu/%zu kept %zu/%zu drafted %zu/%zu "
                      "after a step %zu/%zu",
                      trial, got.passes, want.passes, got.steps, want.steps, got.kept, want.kept,
                      got.drafted, want.drafted, got.after_step, want.after_step);
        ck_assert_uint_le(got.after_step, got.steps);
        ck_assert_uint_eq(got.tokens, n - 1 - from);
        ck_assert_uint_eq(got.tokens, got.passes + got.steps + got.kept);
        ts_llm_ngram_free(g);
        for (int c = 0; c < nc; c++)
            free(corpus[c]);
    }
    ts_llm_ngram_t *g = NULL;
    ts_llm_ngram_replay_t r;
    const int ids[4] = {1, 2, 3, 4};
    ck_assert_ts_ok(ts_llm_ngram_new(2, 3, &g));
    ck_assert_int_eq(ts_llm_ngram_replay(g, ids, 4, 4, 8, &r), TS_EINVAL);
    ck_assert_int_eq(ts_llm_ngram_replay(g, ids, 4, 0, 1, &r), TS_EINVAL);
    ts_llm_ngram_free(g);
}
END_TEST

/* A text's lines, each a sequence after BOS: the draft continues a line it
 * has seen with that line's tokens. */
START_TEST(test_ngram_text)
{
    char tp[512];
    snprintf(tp, sizeof tp, "%s/tok512.bin", ts_test_model_dir());
    ts_llm_tokenizer_t *tok = NULL;
    ck_assert_ts_ok(ts_llm_tokenizer_load(tp, 512, &tok, NULL, 0));
    const char *line = "Dimensions unfold, as I softly refine";
    char text[256];
    snprintf(text, sizeof text, "\n%s\nsomething else entirely\n", line);
    ts_llm_ngram_t *g = NULL;
    ck_assert_ts_ok(ts_llm_ngram_new(2, 4, &g));
    ck_assert_ts_ok(ts_llm_ngram_add_text(g, tok, text, strlen(text)));
    int ids[64], out[64];
    size_t n = 0;
    ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, line, strlen(line), true, false, ids, 64, &n));
    ck_assert_uint_ge(n, 6);
    /* after BOS and its first two tokens: the rest of the line, then (no
     * context seen past its end) nothing more */
    size_t k = ts_llm_ngram_guess(g, ids, 3, 60, out);
    ck_assert_uint_eq(k, n - 3);
    ck_assert_int_eq(memcmp(out, ids + 3, k * sizeof *ids), 0);
    /* ts_llm_ngram_draft fills the rest with the last guess */
    size_t d = ts_llm_ngram_draft(g, ids, 3, k + 2, out);
    ck_assert_uint_eq(d, k);
    ck_assert_int_eq(out[k], ids[n - 1]);
    ck_assert_int_eq(out[k + 1], ids[n - 1]);
    ck_assert_int_eq(ts_llm_ngram_add_text(g, NULL, text, 1), TS_EINVAL);
    ts_llm_ngram_free(g);
    /* one line of 1 MB (the phrase over and over, no newline; then one
     * without spaces): in pieces, in well under a second, and the phrase's
     * continuation is guessed from it */
    size_t big = 1 << 20;
    char *t = malloc(big + 1);
    ck_assert_ptr_nonnull(t);
    for (size_t i = 0; i < big; i++)
        t[i] = "as I softly refine, "[i % 20];
    ck_assert_ts_ok(ts_llm_ngram_new(2, 4, &g));
    uint64_t t0 = ts_now_ns();
    ck_assert_ts_ok(ts_llm_ngram_add_text(g, tok, t, big));
    memset(t, 'x', big);
    ck_assert_ts_ok(ts_llm_ngram_add_text(g, tok, t, big));
    double secs = (double)(ts_now_ns() - t0) * 1e-9;
    printf("n-gram draft: two 1 MB lines counted in %.2f s\n", secs);
    ck_assert(secs < 30.0);
    const char *ph = "as I softly refine, as I";
    ck_assert_ts_ok(ts_llm_tokenizer_encode(tok, ph, strlen(ph), true, false, ids, 64, &n));
    ck_assert_uint_ge(ts_llm_ngram_guess(g, ids, n, 4, out), 1);
    ts_llm_ngram_free(g);
    free(t);
    ts_llm_tokenizer_free(tok);
}
END_TEST

TS_TEST_SUITE(llm_draft)
{
    Suite *s = suite_create("llm_draft");
    TCase *tc = ts_tcase("draft", 0);
    tcase_add_test(tc, test_ngram_brute);
    tcase_add_test(tc, test_ngram_edges);
    tcase_add_test(tc, test_ngram_replay);
    tcase_add_test(tc, test_ngram_text);
    suite_add_tcase(s, tc);
    return s;
}

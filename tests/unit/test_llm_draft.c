/*
 * The n-gram draft (core/llm/draft.c) against a brute-force count over the
 * same sequences: every guess chain on random texts of small alphabets (many
 * repeated contexts, table growth past several rehashes), sequences added in
 * pieces equal to added at once, no context across sequences, errors.
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
}
END_TEST

TS_TEST_SUITE(llm_draft)
{
    Suite *s = suite_create("llm_draft");
    TCase *tc = ts_tcase("draft", 0);
    tcase_add_test(tc, test_ngram_brute);
    tcase_add_test(tc, test_ngram_edges);
    suite_add_tcase(s, tc);
    return s;
}

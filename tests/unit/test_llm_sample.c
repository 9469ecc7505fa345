/*
 * Sampling: the filtered distribution against hand-computed values, seeded
 * determinism, and empirical frequencies against the distribution (a
 * 5-sigma binomial bound per token, so the test is not flaky).
 */
#include "tests/unit/ts_test.h"

#include "core/llm/llm.h"

START_TEST(test_probs)
{
    /* log-probabilities of [0.5, 0.3, 0.15, 0.05] (shuffled order). */
    const float lg[4] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)};
    double p[4];
    ts_llm_sampler_cfg_t c = {.temperature = 1.0f};
    ck_assert_ts_ok(ts_llm_sampler_probs(&c, lg, 4, p));
    const double want[4] = {0.15, 0.5, 0.05, 0.3};
    for (int i = 0; i < 4; i++)
        ck_assert_msg(fabs(p[i] - want[i]) < 1e-6, "T=1 p[%d] = %g", i, p[i]);
    /* top-k 2: 0.5 and 0.3, renormalized. */
    c.top_k = 2;
    ck_assert_ts_ok(ts_llm_sampler_probs(&c, lg, 4, p));
    ck_assert(p[0] == 0.0 && p[2] == 0.0);
    ck_assert(fabs(p[1] - 0.625) < 1e-6 && fabs(p[3] - 0.375) < 1e-6);
    /* top-p 0.7: smallest prefix reaching 0.7 is {0.5, 0.3}; 0.85 adds 0.15. */
    c.top_k = 0;
    c.top_p = 0.7f;
    ck_assert_ts_ok(ts_llm_sampler_probs(&c, lg, 4, p));
    ck_assert(fabs(p[1] - 0.625) < 1e-6 && fabs(p[3] - 0.375) < 1e-6 && p[0] == 0.0);
    c.top_p = 0.85f;
    ck_assert_ts_ok(ts_llm_sampler_probs(&c, lg, 4, p));
    ck_assert(fabs(p[0] - 0.15 / 0.95) < 1e-6 && p[2] == 0.0);
    /* top-p after top-k: mass renormalized inside the k kept. */
    c.top_k = 3;
    c.top_p = 0.6f;
    ck_assert_ts_ok(ts_llm_sampler_probs(&c, lg, 4, p));
    /* kept {0.5, 0.3, 0.15}: 0.5/0.95 = 0.526 < 0.6, adding 0.3 reaches it. */
    ck_assert(fabs(p[1] - 0.625) < 1e-6 && fabs(p[3] - 0.375) < 1e-6 && p[0] == 0.0);
    /* temperature 2 flattens: p ~ sqrt(q). */
    c = (ts_llm_sampler_cfg_t){.temperature = 2.0f};
    ck_assert_ts_ok(ts_llm_sampler_probs(&c, lg, 4, p));
    double z = sqrt(0.15) + sqrt(0.5) + sqrt(0.05) + sqrt(0.3);
    ck_assert(fabs(p[1] - sqrt(0.5) / z) < 1e-6);
    /* greedy: one-hot at the argmax (lowest index on ties). */
    c = (ts_llm_sampler_cfg_t){.temperature = 0.0f};
    const float tie[3] = {1.0f, 3.0f, 3.0f};
    ck_assert_ts_ok(ts_llm_sampler_probs(&c, tie, 3, p));
    ck_assert(p[1] == 1.0 && p[2] == 0.0);
    ck_assert_int_eq(ts_llm_argmax(tie, 3), 1);
    /* the argmax's margin over the runner-up: 0 on a tie and below 2 logits */
    const float spread[4] = {0.5f, -2.0f, 2.25f, 1.5f};
    ck_assert_double_eq_tol(ts_llm_logit_margin(spread, 4), 0.75, 1e-9);
    ck_assert_double_eq_tol(ts_llm_logit_margin(spread, 2), 2.5, 1e-9);
    ck_assert_double_eq(ts_llm_logit_margin(tie, 3), 0.0);
    ck_assert_double_eq(ts_llm_logit_margin(spread, 1), 0.0);
    c.temperature = -1.0f;
    ck_assert_ts_status(ts_llm_sampler_probs(&c, tie, 3, p), TS_EINVAL);
}
END_TEST

START_TEST(test_sampler_seeded)
{
    const float lg[6] = {0.1f, 1.2f, -0.5f, 0.9f, 0.0f, 2.0f};
    ts_llm_sampler_cfg_t c = {.temperature = 0.8f, .top_k = 4, .top_p = 0.95f};
    ts_llm_sampler_t *a, *b, *d;
    ck_assert_ts_ok(ts_llm_sampler_new(&c, 1234, &a));
    ck_assert_ts_ok(ts_llm_sampler_new(&c, 1234, &b));
    ck_assert_ts_ok(ts_llm_sampler_new(&c, 1235, &d));
    int same = 0;
    for (int i = 0; i < 200; i++) {
        int x, y, z;
        ck_assert_ts_ok(ts_llm_sampler_sample(a, lg, 6, &x));
        ck_assert_ts_ok(ts_llm_sampler_sample(b, lg, 6, &y));
        ck_assert_ts_ok(ts_llm_sampler_sample(d, lg, 6, &z));
        ck_assert_int_eq(x, y);
        same += x == z;
    }
    ck_assert_int_lt(same, 200);
    ts_llm_sampler_free(a);
    ts_llm_sampler_free(b);
    ts_llm_sampler_free(d);
}
END_TEST

START_TEST(test_sampler_distribution)
{
    const float lg[5] = {0.3f, 1.0f, -1.0f, 0.5f, 0.8f};
    ts_llm_sampler_cfg_t cfgs[3] = {{.temperature = 1.0f},
                                    {.temperature = 1.0f, .top_k = 3},
                                    {.temperature = 0.7f, .top_p = 0.6f}};
    const int N = ts_test_quick() ? 4000 : 40000;
    for (int ci = 0; ci < 3; ci++) {
        double p[5];
        ck_assert_ts_ok(ts_llm_sampler_probs(&cfgs[ci], lg, 5, p));
        ts_llm_sampler_t *s;
        ck_assert_ts_ok(ts_llm_sampler_new(&cfgs[ci], 99 + (uint64_t)ci, &s));
        int cnt[5] = {0};
        for (int i = 0; i < N; i++) {
            int x;
            ck_assert_ts_ok(ts_llm_sampler_sample(s, lg, 5, &x));
            ck_assert(x >= 0 && x < 5);
            cnt[x]++;
        }
        for (int i = 0; i < 5; i++) {
            if (p[i] == 0.0) {
                ck_assert_msg(cnt[i] == 0, "cfg %d token %d excluded but drawn %d times", ci, i,
                              cnt[i]);
                continue;
            }
            double mean = N * p[i], sd = sqrt(N * p[i] * (1 - p[i]));
            ck_assert_msg(fabs(cnt[i] - mean) <= 5 * sd + 1, "cfg %d token %d: %d vs %g", ci, i,
                          cnt[i], mean);
        }
        ts_llm_sampler_free(s);
    }
}
END_TEST

TS_TEST_SUITE(llm_sample)
{
    Suite *s = suite_create("llm_sample");
    TCase *tc = ts_tcase("sample", 0);
    tcase_add_test(tc, test_probs);
    tcase_add_test(tc, test_sampler_seeded);
    tcase_add_test(tc, test_sampler_distribution);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * `tessera bench costs` end to end: the real CLI measures a cost table at the
 * insecure bootstrappable preset test-boot-n10 (--quick, TFHE at
 * tfhe_test_small), the file loads with ts_sched_costs_load (which validates
 * every cross-field rule), the measured entries have the preset's shape and
 * provenance, and the scheduler makes a plan from it. A few seconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sched/sched.h"
#include "tests/unit/ts_test.h"

static int run(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

START_TEST(test_bench_costs_quick)
{
    char dir[] = "/tmp/tessera-costs-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[256], cmd[1024];
    snprintf(out, sizeof out, "%s/costs.yaml", dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera bench costs --params test-boot-n10 --insecure-params --quick "
             "--backend auto --out %s > %s/stdout.json 2> %s/stderr.txt",
             ts_test_build_dir(), out, dir, dir);
    ck_assert_int_eq(run(cmd), 0);

    ts_sched_costs_t c;
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_sched_costs_load(out, &c, &err));
    ck_assert_ts_ok(ts_sched_costs_validate(&c, NULL, 0));
    ck_assert_int_eq(c.max_level, 17); /* test-boot-n10: 18 primes */
    ck_assert_int_eq(c.slots, 512);
    ck_assert_uint_eq(c.n_cmul, 18);
    ck_assert_uint_eq(c.n_recover, 18); /* the estimate, resampled to the preset */
    ck_assert_str_eq(c.params, "test-boot-n10");
    ck_assert_str_eq(c.backend, "cpu"); /* no GPU in this build or on this machine */
    for (int l = 0; l <= 17; l++) {
        ck_assert_int_gt(c.add_ns[l], 0);
        ck_assert_int_gt(c.cmul_ns[l], 0);
        ck_assert_int_gt(c.rot_ns[l], 0);
    }
    /* Measured bootstrapping: the default config leaves 2 levels of 17 (not
     * the estimate's 25 s / 13). */
    ck_assert_int_eq(c.boot_output_level, 2);
    ck_assert_int_lt(c.boot_ns, 25000000000LL);
    /* Conversions are estimated: the table says so. */
    ck_assert(c.estimated);
    ck_assert_ptr_nonnull(strstr(c.note, "measured ckks.*"));
    ck_assert_ptr_nonnull(strstr(c.note, "estimated"));
    ck_assert_ptr_nonnull(strstr(c.note, "convert.*"));

    ts_sched_model_dims_t d = {.dim = 16,
                               .hidden_dim = 32,
                               .n_layers = 1,
                               .n_heads = 2,
                               .vocab = 32,
                               .seq_pos = 3,
                               .act = TS_ACT_SWIGLU,
                               .norm = TS_NORM_RMS,
                               .slots = 512};
    ts_sched_graph_t *g = NULL;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&d, &g));
    ts_sched_plan_t *plan = NULL;
    ck_assert_ts_ok(ts_sched_plan_new(g, &c, TS_SCHED_HYBRID, &plan));
    ck_assert(plan->total_ns > 0);
    ts_sched_plan_free(plan);
    ts_sched_graph_free(g);

    /* Bad usage: no --out. */
    snprintf(cmd, sizeof cmd, "%s/tessera bench costs --params test-n10 2>/dev/null",
             ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 2);
    /* Unknown backend: usage error, names the choices. */
    snprintf(cmd, sizeof cmd,
             "%s/tessera bench costs --params test-n10 --insecure-params --out %s/x.yaml "
             "--backend tpu 2>/dev/null",
             ts_test_build_dir(), dir);
    ck_assert_int_eq(run(cmd), 2);

    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(run(cmd), 0);
}
END_TEST

TS_TEST_SUITE(bench_costs)
{
    Suite *s = suite_create("bench_costs");
    TCase *tc = ts_tcase("cli", 0);
    tcase_add_test(tc, test_bench_costs_quick);
    suite_add_tcase(s, tc);
    return s;
}

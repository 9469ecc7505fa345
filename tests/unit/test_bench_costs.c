/*
 * `tessera bench costs` end to end: the real CLI measures a cost table at the
 * insecure bootstrappable preset test-boot-n10 (--quick, TFHE at
 * tfhe_test_small), the file loads with ts_sched_costs_load (which validates
 * every cross-field rule), the measured entries (conversions included) have
 * the preset's shape and provenance, and the scheduler makes a plan from it
 * (the generic one, and `tessera plan --params` the engine's on the tiny
 * model). A few seconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sched/sched.h"
#include "tests/unit/llm_tiny.h"
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
             "--backend auto --boot-slots 128,64 --out %s > %s/stdout.json 2> %s/stderr.txt",
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
    /* Measured bootstrapping: the default config leaves 3 levels of 17 (not
     * the estimate's 25 s / 13; EvalMod takes 8 levels with r = 2). */
    ck_assert_int_eq(c.boot_output_level, 3);
    ck_assert_int_lt(c.boot_ns, 25000000000LL);
    /* --boot-slots: the same chain at 64 and 128 slots with the main 512,
     * in increasing order, the main entry = latency_ns */
    ck_assert_uint_eq(c.n_boot_slots, 3);
    ck_assert_int_eq(c.boot_slots[0], 64);
    ck_assert_int_eq(c.boot_slots[1], 128);
    ck_assert_int_eq(c.boot_slots[2], 512);
    ck_assert_int_eq(c.boot_slots_ns[2], c.boot_ns);
    ck_assert_int_gt(c.boot_slots_ns[0], 0);
    ck_assert_int_gt(c.boot_slots_ns[1], 0);
    /* and a BSGS diagonal at the same three counts: encodings at 64 slots
     * priced below the table's, at the table's 1 */
    ck_assert_uint_eq(c.n_diag_slots, 3);
    ck_assert_int_eq(c.diag_slots[0], 64);
    ck_assert_int_eq(c.diag_slots[2], 512);
    ck_assert_int_gt(c.diag_slots_ns[0], 0);
    ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 9), 1.0, 1e-12);
    ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 0), 1.0, 1e-12);
    ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 6),
                            (double)c.diag_slots_ns[0] / (double)c.diag_slots_ns[2], 1e-12);
    /* Conversions are measured (the preset bootstraps); the small-ring entries are
     * estimated: the table says so. */
    ck_assert(c.estimated);
    ck_assert_ptr_nonnull(strstr(c.note, "measured ckks.*"));
    ck_assert_ptr_nonnull(strstr(c.note, "estimated"));
    ck_assert_ptr_nonnull(strstr(c.note, "convert.roundtrip_ns"));
    ck_assert_ptr_nonnull(strstr(c.note, "tfhe.trace_ns"));
    ck_assert_int_gt(c.roundtrip_ns, 0);
    ck_assert_int_gt(c.pbs_value_ns, 0);
    ck_assert_uint_eq(c.n_lut_seg, 2);
    ck_assert_int_eq(c.lut_seg[0], 2);
    ck_assert_int_eq(c.lut_seg[1], 4);
    ck_assert_int_gt(c.lut_value_ns[1], 0);
    ck_assert_uint_eq(c.n_encode, (size_t)c.max_level + 1);
    /* the BSGS pieces, at every level */
    ck_assert_uint_eq(c.n_bsgs_hoist, (size_t)c.max_level + 1);
    for (int l = 0; l <= 17; l++) {
        ck_assert_int_gt(c.bsgs_hoist_ns[l], 0);
        ck_assert_int_gt(c.bsgs_baby_ns[l], 0);
        ck_assert_int_gt(c.bsgs_diag_ns[l], 0);
        ck_assert_int_gt(c.bsgs_giant_ns[l], 0);
        ck_assert_int_gt(c.bsgs_moddown_ns[l], 0);
    }
    static char yb[1 << 16];
    ck_assert_ptr_nonnull(strstr(ts_test_read_file(out, yb, sizeof yb), "bsgs_moddown_ns:"));

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

    /* The engine's plan: `tessera plan --params` on the tiny model at the preset it
     * runs at (a bootstrap at test-boot-n10 leaves 2 levels, too few for the engine's
     * norms: TS_ELEVEL), the three policies, JSON with counts and stages. */
    char model[300];
    snprintf(model, sizeof model, "%s/tiny.bin", dir);
    ck_assert_int_eq(tiny_model_write(model), 0);
    snprintf(cmd, sizeof cmd,
             "%s/tessera plan --model %s --params test-llm-tiny-boot --insecure-params --costs %s "
             "--policy all --json > %s/plan.json 2>/dev/null",
             ts_test_build_dir(), model, out, dir);
    ck_assert_int_eq(run(cmd), 0);
    char pj[300];
    snprintf(pj, sizeof pj, "%s/plan.json", dir);
    static char buf[1 << 20];
    ts_test_read_file(pj, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"hybrid\":{\"policy\":\"hybrid\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"n_bootstrap\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"stages_ns\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"other_scheme_total_ns\""));
    /* text: why each kind is where it is */
    snprintf(cmd, sizeof cmd,
             "%s/tessera plan --model %s --params test-llm-tiny-boot --insecure-params --costs %s "
             "--policy hybrid > %s/plan.txt 2>/dev/null",
             ts_test_build_dir(), model, out, dir);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(pj, sizeof pj, "%s/plan.txt", dir);
    ts_test_read_file(pj, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "1/sqrt(x)"));
    /* each kind priced in the other scheme; the hybrid is the cheapest assignment */
    ck_assert(strstr(buf, "TFHE  in CKKS") || strstr(buf, "CKKS  in TFHE"));
    ck_assert_ptr_nonnull(strstr(buf, "the cheapest assignment of primitive kinds"));
    ck_assert_ptr_null(strstr(buf, "the policy's choice is the slower one"));
    ck_assert_ptr_nonnull(strstr(buf, "the engine's level model: exact"));
    /* at test-boot-n10 the step cannot run: the plan says so */
    snprintf(cmd, sizeof cmd,
             "%s/tessera plan --model %s --params test-boot-n10 --insecure-params --costs %s "
             "--policy ckks >/dev/null 2>&1",
             ts_test_build_dir(), model, out);
    ck_assert_int_eq(run(cmd), 1);
    /* --params without --model is a usage error */
    snprintf(cmd, sizeof cmd,
             "%s/tessera plan --dims 16,32,1,2,2,32 --params test-boot-n10 2>/dev/null",
             ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 2);

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

    /* --boot-dft C:S: the bootstrapper at those DFT budgets (2 + 2 at 512
     * slots of test-boot-n10 leaves 5 levels, the defaults 3 + 3 leave 3) */
    snprintf(cmd, sizeof cmd,
             "%s/tessera bench costs --params test-boot-n10 --insecure-params --quick "
             "--no-convert --boot-dft 2:2 --out %s/dft.yaml > /dev/null 2>&1",
             ts_test_build_dir(), dir);
    ck_assert_int_eq(run(cmd), 0);
    snprintf(out, sizeof out, "%s/dft.yaml", dir);
    ck_assert_ts_ok(ts_sched_costs_load(out, &c, &err));
    ck_assert_int_eq(c.boot_output_level, 5);
    ck_assert_int_gt(c.boot_ns, 0);
    snprintf(cmd, sizeof cmd,
             "%s/tessera bench costs --params test-boot-n10 --insecure-params --out %s/x.yaml "
             "--boot-dft 3 2>/dev/null",
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

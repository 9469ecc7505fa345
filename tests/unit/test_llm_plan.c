/*
 * The scheduler's plan of the encrypted engine (core/llm/enc_plan.c +
 * ts_sched_plan_new_engine) against the engine itself. Oracle: exact counts.
 * On the tiny model of tests/unit/llm_tiny.h at the bootstrapping preset
 * test-llm-tiny-boot, for each policy (ckks, hybrid, tfhe) the engine runs
 * decode steps (positions 0 and, for tfhe, 1; the one-hot input embedded on
 * the server as the daemon does, and for tfhe at position 0 a fresh
 * embedding) and counts its bootstraps, conversions
 * and looked-up values (ts_llm_enc_session_stats); the engine plan of the
 * same step must predict exactly these numbers, every level it assigns must
 * be feasible (ts_sched_plan_check replays it; no level below 0, every CKKS
 * operator at a level covering its depth). Timing is not asserted here: the
 * predicted and measured latencies go to `tessera bench decode`.
 * The same for the tiny GPT-2 (policy ckks; all three with TS_SLOW_TESTS=1).
 * Also: the level model itself on hand-made graphs (in-place vs copy
 * bootstraps, align drops, TFHE batches), and the explanation of a plan.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/convert/convert.h"
#include "core/llm/llm.h"
#include "core/llm/llm_int.h"
#include "core/nonlinear/nonlinear.h"
#include "tests/unit/llm_tiny.h"
#include "tests/unit/llm_fx.h"
#include "tests/unit/ts_test.h"

/* ------------------------------------------------ the level model alone */

static int op_add(ts_sched_graph_t *g, ts_op_kind_t kind, int a, int b, int depth, int need,
                  unsigned inplace)
{
    ts_sched_op_t op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    snprintf(op.name, sizeof op.name, "op%zu", ts_sched_graph_count(g));
    op.in[0] = a;
    op.in[1] = b;
    op.n_ct = 1;
    op.n_impl = 1;
    op.impl[0].depth = depth;
    op.impl[0].n_cmul = 1;
    op.need_level = need;
    op.inplace = (uint8_t)inplace;
    int id = -1;
    ck_assert_ts_ok(ts_sched_graph_add_op(g, &op, NULL, 0, &id));
    return id;
}

START_TEST(test_engine_levels_model)
{
    ts_sched_costs_t c;
    ts_sched_costs_default(&c);
    c.boot_output_level = 4;
    ts_sched_graph_t *g = NULL;
    ck_assert_ts_ok(ts_sched_graph_new(&g));
    /* fresh at 4: x = mul(fresh) -> 3; y = mul(x) -> 2; z = mul(y) -> 1 */
    int x = op_add(g, TS_OP_MUL_CP, TS_SCHED_FRESH, TS_SCHED_NONE, 1, 1, 1);
    int y = op_add(g, TS_OP_MUL_CP, x, TS_SCHED_NONE, 1, 1, 1);
    int z = op_add(g, TS_OP_MUL_CP, y, TS_SCHED_NONE, 1, 1, 1);
    /* w = z * x aligned in place: x drops to 1 (in place) -> w at 0 */
    int w = op_add(g, TS_OP_MUL_CC, z, x, 1, 1, 3);
    /* x needs 1: still 1, no bootstrap -> 0 */
    int u = op_add(g, TS_OP_MUL_CP, x, TS_SCHED_NONE, 1, 1, 1);
    /* w (level 0) on a copy: bootstrapped, w stays 0; twice */
    op_add(g, TS_OP_MUL_CP, w, TS_SCHED_NONE, 1, 1, 0);
    op_add(g, TS_OP_MUL_CP, w, TS_SCHED_NONE, 1, 1, 0);
    /* u (level 0) in place with need 3: bootstrapped once to 4 -> 3; then 2 */
    int v = op_add(g, TS_OP_MUL_CP, u, TS_SCHED_NONE, 1, 3, 1);
    op_add(g, TS_OP_ADD_CC, u, v, 0, 0, 0);
    ts_sched_plan_t *p = NULL;
    char msg[200];
    ck_assert_ts_ok(ts_sched_plan_new_engine(g, &c, TS_SCHED_CKKS, 0, 0, &p, msg, sizeof msg));
    ck_assert(p->engine);
    int want_out[] = {3, 2, 1, 0, 0, 3, 3, 3, 3};
    uint32_t want_boot[] = {0, 0, 0, 0, 0, 1, 1, 1, 0};
    ck_assert_uint_eq(p->n_steps, 9);
    for (size_t k = 0; k < p->n_steps; k++) {
        ck_assert_msg(p->steps[k].level_out == want_out[k], "op %zu: level %d, want %d", k,
                      p->steps[k].level_out, want_out[k]);
        ck_assert_uint_eq(p->steps[k].n_boot, want_boot[k]);
    }
    ck_assert_int_eq(p->steps[8].level_in, 3);
    ck_assert_uint_eq(p->n_boot, 3);
    ck_assert_ts_ok(ts_sched_plan_check(p, g, &c, msg, sizeof msg));
    /* a tampered plan is caught by the replay */
    p->steps[2].level_out = 2;
    ck_assert_ts_status(ts_sched_plan_check(p, g, &c, NULL, 0), TS_EINVAL);
    ts_sched_plan_free(p);
    /* a need above the bootstrap level is infeasible */
    op_add(g, TS_OP_MUL_CP, v, TS_SCHED_NONE, 1, 5, 1);
    ck_assert_ts_status(ts_sched_plan_new_engine(g, &c, TS_SCHED_CKKS, 0, 0, &p, msg, sizeof msg),
                        TS_ELEVEL);
    ck_assert_ptr_null(p);
    ck_assert(strstr(msg, "needs level 5") != NULL);
    (void)y;
    ts_sched_graph_free(g);

    /* a capped result (a value joined to stored ones lower down: an
     * encrypted cache after ordinary steps) continues at the cap: the next
     * product finds level 1 and the one after bootstraps; the cap is part of
     * the graph's digest, and only a CKKS operator takes one */
    {
        ts_sched_graph_t *h[2];
        uint8_t dg[2][32];
        for (int k = 0; k < 2; k++) {
            ck_assert_ts_ok(ts_sched_graph_new(&h[k]));
            ts_sched_op_t op;
            memset(&op, 0, sizeof op);
            op.kind = TS_OP_MUL_CP;
            snprintf(op.name, sizeof op.name, "cache");
            op.in[0] = TS_SCHED_FRESH;
            op.in[1] = TS_SCHED_NONE;
            op.n_ct = op.n_impl = 1;
            op.impl[0].depth = 1;
            op.capped = k == 1;
            op.level_cap = k == 1 ? 1 : 0;
            ck_assert_ts_ok(ts_sched_graph_add_op(h[k], &op, NULL, 0, NULL));
            op_add(h[k], TS_OP_MUL_CP, 0, TS_SCHED_NONE, 1, 1, 1);
            op_add(h[k], TS_OP_MUL_CP, 1, TS_SCHED_NONE, 1, 1, 1);
            ck_assert_ts_ok(ts_sched_graph_digest(h[k], dg[k]));
            if (k == 1) {
                op.level_cap = 0;
                op.capped = false;
                op.level_cap = 2; /* a cap value without the flag */
                ck_assert_ts_status(ts_sched_graph_add_op(h[k], &op, NULL, 0, NULL), TS_EINVAL);
                op.kind = TS_OP_EXP;
                op.capped = true;
                op.tfhe_ok = true;
                op.n_values = 1;
                ck_assert_ts_status(ts_sched_graph_add_op(h[k], &op, NULL, 0, NULL), TS_EINVAL);
            }
        }
        ck_assert(memcmp(dg[0], dg[1], 32) != 0);
        int want_cap[2][3] = {{3, 2, 1}, {1, 0, 3}};
        for (int k = 0; k < 2; k++) {
            ck_assert_ts_ok(
                ts_sched_plan_new_engine(h[k], &c, TS_SCHED_CKKS, 0, 0, &p, msg, sizeof msg));
            for (int i = 0; i < 3; i++)
                ck_assert_int_eq(p->steps[i].level_out, want_cap[k][i]);
            ck_assert_uint_eq(p->n_boot, k == 1 ? 1 : 0);
            ck_assert_ts_ok(ts_sched_plan_check(p, h[k], &c, msg, sizeof msg));
            ts_sched_plan_free(p);
            ts_sched_graph_free(h[k]);
        }
    }

    /* rotations after a bootstrap (boot_rot: core/llm divide's average of a
     * lanes engine's sums over their replicas): priced, rotation and
     * addition at the bootstrap's output level, on the operator that
     * bootstraps, and nowhere else; part of the graph's digest */
    {
        ts_sched_graph_t *h[2];
        ts_sched_plan_t *q[2];
        uint8_t dg[2][32];
        for (int k = 0; k < 2; k++) {
            ck_assert_ts_ok(ts_sched_graph_new(&h[k]));
            /* fresh at 4 -> 3 -> 0; the third needs 4: bootstrapped; the
             * fourth needs 1 at level 3: no bootstrap */
            int a = op_add(h[k], TS_OP_MUL_CP, TS_SCHED_FRESH, TS_SCHED_NONE, 1, 1, 1);
            a = op_add(h[k], TS_OP_MUL_CP, a, TS_SCHED_NONE, 3, 3, 1);
            ts_sched_op_t op;
            memset(&op, 0, sizeof op);
            op.kind = TS_OP_SUM;
            op.in[0] = a;
            op.in[1] = TS_SCHED_NONE;
            op.n_ct = op.n_impl = 1;
            op.need_level = 4;
            op.inplace = 1;
            op.boot_rot = k == 1 ? 5 : 0;
            snprintf(op.name, sizeof op.name, "need");
            ck_assert_ts_ok(ts_sched_graph_add_op(h[k], &op, NULL, 0, &a));
            op.need_level = 1;
            op.in[0] = a;
            snprintf(op.name, sizeof op.name, "need.again");
            ck_assert_ts_ok(ts_sched_graph_add_op(h[k], &op, NULL, 0, NULL));
            ck_assert_ts_ok(ts_sched_graph_digest(h[k], dg[k]));
            ck_assert_ts_ok(
                ts_sched_plan_new_engine(h[k], &c, TS_SCHED_CKKS, 0, 0, &q[k], msg, sizeof msg));
            ck_assert_uint_eq(q[k]->n_boot, 1);
            ck_assert_uint_eq(q[k]->steps[2].n_boot, 1);
            ck_assert_uint_eq(q[k]->steps[3].n_boot, 0);
        }
        ck_assert(memcmp(dg[0], dg[1], 32) != 0);
        double extra = 5.0 * ((double)c.rot_ns[4] + (double)c.add_ns[4]);
        ck_assert(extra > 0);
        double more = q[1]->steps[2].op_ns - q[0]->steps[2].op_ns;
        ck_assert_double_eq_tol(more, extra, 1e-6);
        ck_assert_double_eq_tol(q[1]->steps[3].op_ns, q[0]->steps[3].op_ns, 1e-9);
        for (int k = 0; k < 2; k++) {
            ts_sched_plan_free(q[k]);
            ts_sched_graph_free(h[k]);
        }
    }

    /* TFHE: bootstraps once per conversion (on copies), counts values */
    ck_assert_ts_ok(ts_sched_graph_new(&g));
    x = op_add(g, TS_OP_MUL_CP, TS_SCHED_FRESH, TS_SCHED_NONE, 4, 4, 1); /* -> 0 */
    ts_sched_op_t op;
    memset(&op, 0, sizeof op);
    op.kind = TS_OP_EXP;
    op.in[0] = x;
    op.in[1] = TS_SCHED_NONE;
    op.n_ct = 1;
    op.n_impl = 1;
    op.n_values = 10;
    op.tfhe_ok = true;
    op.pin = TS_SCHED_PIN_TFHE;
    op.n_conv = 3;
    op.lut_seg = 2;
    op.tfhe_in_level = 2;
    op.tfhe_out_level = 3;
    ck_assert_ts_ok(ts_sched_graph_add_op(g, &op, NULL, 0, NULL));
    op.pin = TS_SCHED_PIN_NONE; /* unpinned: the policy */
    op.in[0] = 1;
    op.n_conv = 0;
    ck_assert_ts_ok(ts_sched_graph_add_op(g, &op, NULL, 0, NULL));
    ck_assert_ts_ok(ts_sched_plan_new_engine(g, &c, TS_SCHED_HYBRID, 0, 0, &p, msg, sizeof msg));
    ck_assert_int_eq(p->steps[1].scheme, TS_SCHEME_TFHE);
    ck_assert_uint_eq(p->steps[1].n_boot, 3);
    ck_assert_int_eq(p->steps[1].level_out, 3);
    ck_assert_int_eq(p->steps[2].scheme, TS_SCHEME_CKKS);
    ck_assert_uint_eq(p->n_convert, 3);
    ck_assert_uint_eq(p->n_lookup, 10);
    /* 3 conversions of ceil(10 / 3) = 4 values (batch size 4), recovered to 3 */
    double want =
        3.0 * (double)(c.extract_ns[1] + c.recover_ns[3]) + 10 * ts_sched_costs_value_ns(&c, 2);
    ck_assert(fabs(p->steps[1].op_ns - want) < 1);
    ts_sched_plan_free(p);
    /* look-ups `workers` at a time: each conversion's 4 values in 2 rounds on 3
     * workers, in 1 on 4 */
    for (int w = 3; w <= 4; w++) {
        c.workers = w;
        ck_assert_ts_ok(
            ts_sched_plan_new_engine(g, &c, TS_SCHED_HYBRID, 0, 0, &p, msg, sizeof msg));
        double rounds = w == 3 ? 3 * 2 : 3 * 1;
        want = 3.0 * (double)(c.extract_ns[1] + c.recover_ns[3]) +
               rounds * ts_sched_costs_value_ns(&c, 2);
        ck_assert(fabs(p->steps[1].op_ns - want) < 1);
        ts_sched_plan_free(p);
    }
    c.workers = 0;
    ck_assert_ts_ok(ts_sched_plan_new_engine(g, &c, TS_SCHED_TFHE, 0, 0, &p, msg, sizeof msg));
    ck_assert_int_eq(p->steps[2].scheme, TS_SCHEME_TFHE);
    ck_assert_uint_eq(p->n_lookup, 20);
    ts_sched_plan_free(p);
    ts_sched_graph_free(g);
}
END_TEST

/* --------------------------------------------------- engine vs plan */

/* The shared engine fixture (tests/unit/llm_fx.h) at test-llm-tiny-boot with
 * bootstrapping, for the model file at `model`. */
static void fx_open(llm_fx_t *f, const char *model, const ts_llm_enc_config_t *cfg)
{
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(model, &m, NULL, 0));
    llm_fx_open(f, m, "test-llm-tiny-boot", cfg, true, 9);
}

static void tiny_dir(char *dir, size_t size, char *model, size_t msize)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, size, "%s/tessera-plan-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(model, msize, "%s/tiny.bin", dir);
    ck_assert_int_eq(tiny_model_write(model), 0);
}

/* The tiny model written to a fresh directory, loaded, and test-llm-tiny-boot. */
static void tiny_load(char *dir, size_t size, char *model, size_t msize, ts_llm_model_t **m,
                      ts_ckks_params_t **p)
{
    tiny_dir(dir, size, model, msize);
    ck_assert_ts_ok(ts_llm_model_load(model, m, NULL, 0));
    ck_assert_ts_ok(
        ts_ckks_params_load_file("configs/params/test-llm-tiny-boot.yaml", true, p, NULL));
}

/* The built-in cost table with its level-0 costs at every level up to
 * max_level (the table's levels must cover the preset's). */
static void fit_costs(ts_sched_costs_t *costs, int max_level, int boot_level)
{
    ts_sched_costs_default(costs);
    costs->max_level = max_level;
    for (int l = 0; l <= max_level; l++) {
        costs->add_ns[l] = costs->add_ns[0];
        costs->pmul_ns[l] = costs->pmul_ns[0];
        costs->cmul_ns[l] = costs->cmul_ns[0];
        costs->rot_ns[l] = costs->rot_ns[0];
        costs->rescale_ns[l] = costs->rescale_ns[0];
        costs->recover_ns[l] = costs->recover_ns[0];
    }
    costs->n_add = costs->n_pmul = costs->n_cmul = costs->n_rot = costs->n_rescale =
        costs->n_recover = (size_t)max_level + 1;
    costs->boot_output_level = boot_level;
}

/* The engine's counts of one step at each position vs the plan's; kinds >= 0:
 * the policy with those primitive kinds in TFHE (ts_llm_enc_config_kinds). */
static void check_policy(const char *model, ts_sched_policy_t pol, int kinds)
{
    ts_llm_enc_config_t cfg;
    if (kinds >= 0)
        ts_llm_enc_config_kinds(&cfg, pol, TINY_SEQ, (unsigned)kinds);
    else
        ts_llm_enc_config_policy(&cfg, pol, TINY_SEQ);
    llm_fx_t f;
    fx_open(&f, model, &cfg);
    ts_sched_costs_t costs;
    fit_costs(&costs, ts_ckks_params_max_level(f.p), ts_boot_levels_left(f.boot));
    ts_llm_enc_levels_t lv;
    ck_assert_ts_ok(ts_llm_enc_levels(f.enc, &lv));
    ck_assert(lv.boot && !lv.assumed);
    ck_assert_int_eq(lv.input, ts_llm_enc_input_level(f.enc));
    if (f.stc)
        ck_assert_int_eq(lv.tfhe_out, ts_boot_mod_recover_level(f.stc) - 1);
    /* positions change the counts only through the exp's conversion batches and
     * values (tfhe); one position for the other policies keeps the suite short */
    const int positions = ts_test_quick() || pol != TS_SCHED_TFHE ? 1 : 2;
    for (int pos = 0; pos < positions; pos++) {
        ts_sched_graph_t *g = NULL;
        ts_sched_plan_t *plan = NULL;
        char msg[256] = "";
        /* tfhe: the fresh embedding at position 0; otherwise the daemon's path, the
         * one-hot token embedded on the server (one level lower) */
        unsigned flags = pol == TS_SCHED_TFHE && pos == 0 ? 0 : TS_LLM_PLAN_ONEHOT;
        ts_status_t st =
            ts_llm_enc_plan(f.enc, pos, flags, &costs, pol, &g, &plan, msg, sizeof msg);
        ck_assert_msg(st == TS_OK, "%s pos %d: plan: %s: %s", ts_sched_policy_name(pol), pos,
                      ts_status_name(st), msg);
        ck_assert_ts_ok(ts_sched_plan_check(plan, g, &costs, msg, sizeof msg));
        for (size_t k = 0; k < plan->n_steps; k++) {
            const ts_sched_op_t *op = ts_sched_graph_op(g, k);
            const ts_sched_step_t *sp = &plan->steps[k];
            ck_assert_int_ge(sp->level_out, 0);
            if (sp->scheme == TS_SCHEME_CKKS)
                ck_assert_int_ge(sp->level_in, op->impl[0].depth);
            else
                ck_assert_int_ge(sp->level_in, lv.tfhe_in);
        }
        if (getenv("TS_PLAN_TRACE"))
            for (size_t k = 0; k < plan->n_steps; k++)
                fprintf(stderr, "PLAN %-40s %s in %d out %d boot %u\n",
                        ts_sched_graph_op(g, k)->name, plan->steps[k].scheme ? "tfhe" : "ckks",
                        plan->steps[k].level_in, plan->steps[k].level_out, plan->steps[k].n_boot);
        /* one step of the engine */
        ts_ckks_ciphertext_t *x = NULL, *logits = NULL;
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &x));
        ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &logits));
        ts_llm_enc_session_stats_reset(f.s);
        if (flags & TS_LLM_PLAN_ONEHOT) {
            ts_ckks_ciphertext_t *oh = NULL;
            ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &oh));
            ck_assert_ts_ok(ts_llm_enc_encrypt_onehot(f.enc, f.ecd, f.sk, f.prng, 3 + pos, oh));
            ck_assert_ts_ok(ts_llm_enc_embed(f.s, oh, x));
            ts_ckks_ciphertext_free(oh);
        } else {
            ck_assert_ts_ok(ts_llm_enc_encrypt_token(f.enc, f.ecd, f.sk, f.prng, 3 + pos, x));
        }
        ck_assert_ts_ok(ts_llm_enc_step(f.s, x, pos, logits));
        ts_llm_enc_stats_t ss;
        ts_llm_enc_session_stats(f.s, &ss);
        printf("plan %s pos %d: %zu ops; predicted %u bootstraps %u conversions %u values; "
               "engine %llu %llu %llu\n",
               ts_sched_policy_name(pol), pos, plan->n_steps, plan->n_boot, plan->n_convert,
               plan->n_lookup, (unsigned long long)ss.bootstraps,
               (unsigned long long)ss.conversions, (unsigned long long)ss.lookups);
        ck_assert_uint_eq(plan->n_boot, ss.bootstraps);
        ck_assert_uint_eq(plan->n_convert, ss.conversions);
        ck_assert_uint_eq(plan->n_lookup, ss.lookups);
        /* the logits come back at the level the plan says */
        ck_assert_int_eq(ts_ckks_ciphertext_level(logits),
                         plan->steps[plan->n_steps - 1].level_out);
        ts_ckks_ciphertext_free(x);
        ts_ckks_ciphertext_free(logits);
        ts_sched_plan_free(plan);
        ts_sched_graph_free(g);
    }
    /* a cache-only step (a prompt position) at the next position: the plan of
     * TS_LLM_PLAN_CACHE_ONLY counts what ts_llm_enc_step_cache executes */
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *plan = NULL;
    char msg[256] = "";
    ts_status_t st = ts_llm_enc_plan(f.enc, positions, TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_CACHE_ONLY,
                                     &costs, pol, &g, &plan, msg, sizeof msg);
    ck_assert_msg(st == TS_OK, "cache-only plan: %s: %s", ts_status_name(st), msg);
    ck_assert_ts_ok(ts_sched_plan_check(plan, g, &costs, msg, sizeof msg));
    char last[40];
    snprintf(last, sizeof last, "L%d.attn.cache_v", f.m->cfg.n_layers - 1);
    ck_assert_str_eq(ts_sched_graph_op(g, plan->n_steps - 1)->name, last);
    ts_ckks_ciphertext_t *x = NULL, *oh = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &x));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, 0, &oh));
    ck_assert_ts_ok(ts_llm_enc_encrypt_onehot(f.enc, f.ecd, f.sk, f.prng, 5, oh));
    ck_assert_ts_ok(ts_llm_enc_embed(f.s, oh, x));
    ts_llm_enc_session_stats_reset(f.s);
    ck_assert_ts_ok(ts_llm_enc_step_cache(f.s, x, positions));
    ts_llm_enc_stats_t ss;
    ts_llm_enc_session_stats(f.s, &ss);
    printf("plan %s cache-only pos %d: %zu ops; predicted %u bootstraps %u conversions %u values; "
           "engine %llu %llu %llu\n",
           ts_sched_policy_name(pol), positions, plan->n_steps, plan->n_boot, plan->n_convert,
           plan->n_lookup, (unsigned long long)ss.bootstraps, (unsigned long long)ss.conversions,
           (unsigned long long)ss.lookups);
    ck_assert_uint_eq(plan->n_boot, ss.bootstraps);
    ck_assert_uint_eq(plan->n_convert, ss.conversions);
    ck_assert_uint_eq(plan->n_lookup, ss.lookups);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(oh);
    ts_sched_plan_free(plan);
    ts_sched_graph_free(g);
    llm_fx_close(&f);
}

START_TEST(test_engine_plan_counts)
{
    char dir[256], model[300];
    tiny_dir(dir, sizeof dir, model, sizeof model);
    static const ts_sched_policy_t pols[5] = {TS_SCHED_CKKS, TS_SCHED_HYBRID, TS_SCHED_TFHE,
                                              TS_SCHED_HYBRID, TS_SCHED_CKKS};
    /* 3: a mixed hybrid assignment, the first softmax round's 1/x in CKKS on
     * the mean sum (Goldschmidt), the later rounds and 1/sqrt(x) in TFHE;
     * 4: the ckks policy's structure (its rounds and exp) with the first
     * round's 1/x (on the mean sum) and 1/sqrt(x) as look-ups */
    check_policy(model, pols[_i],
                 _i < 3    ? -1
                 : _i == 3 ? (1 << TS_LLM_KIND_RECIP_NORM) | (1 << TS_LLM_KIND_RSQRT)
                           : (1 << TS_LLM_KIND_RECIP) | (1 << TS_LLM_KIND_RSQRT));
    unlink(model);
    rmdir(dir);
}
END_TEST

/* The same for the tiny GPT-2 (LayerNorm, biases, positions, GELU): policy
 * ckks by default, hybrid and tfhe with TS_SLOW_TESTS=1 (their conversions
 * take ~20 s a step here). */
START_TEST(test_engine_plan_counts_gpt2)
{
    static const ts_sched_policy_t pols[3] = {TS_SCHED_CKKS, TS_SCHED_HYBRID, TS_SCHED_TFHE};
    if (pols[_i] != TS_SCHED_CKKS && !getenv("TS_SLOW_TESTS"))
        return;
    char dir[256], model[300], g2[320];
    tiny_dir(dir, sizeof dir, model, sizeof model);
    snprintf(g2, sizeof g2, "%s/tiny-gpt2.gguf", dir);
    ck_assert_int_eq(tiny_gpt2_write(g2), 0);
    check_policy(g2, pols[_i], -1);
    unlink(g2);
    unlink(model);
    rmdir(dir);
}
END_TEST

/* The explanation: every primitive kind priced in the other scheme. */
START_TEST(test_engine_plan_explain)
{
    char dir[256], model[300];
    ts_llm_model_t *m = NULL;
    ts_ckks_params_t *p = NULL;
    tiny_load(dir, sizeof dir, model, sizeof model, &m, &p);
    ts_llm_enc_config_t cfg;
    ts_llm_enc_config_policy(&cfg, TS_SCHED_HYBRID, TINY_SEQ);
    /* (GELU: the hybrid default of GPT-2 models; LLAMA models never evaluate it) */
    ck_assert_uint_eq(ts_llm_enc_config_tfhe_kinds(&cfg),
                      (1u << TS_LLM_KIND_RECIP) | (1u << TS_LLM_KIND_RECIP_NORM) |
                          (1u << TS_LLM_KIND_RSQRT) | (1u << TS_LLM_KIND_GELU));
    /* the mask reproduces the policy's configuration */
    ts_llm_enc_config_t again;
    ts_llm_enc_config_kinds(&again, TS_SCHED_HYBRID, TINY_SEQ, ts_llm_enc_config_tfhe_kinds(&cfg));
    ck_assert_int_eq(memcmp(&again, &cfg, sizeof cfg), 0);
    ts_llm_enc_t *e = NULL;
    ck_assert_ts_ok(ts_llm_enc_new(m, p, &cfg, NULL, &e));
    ts_llm_enc_levels_t lv;
    ck_assert_ts_ok(ts_llm_enc_levels(e, &lv));
    ck_assert(lv.boot && lv.assumed); /* no bootstrapper given: the default one's levels */
    ts_sched_costs_t costs;
    ts_sched_costs_default(&costs);
    costs.boot_output_level = lv.input;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *plan = NULL;
    ck_assert_ts_ok(
        ts_llm_enc_plan(e, 3, TS_LLM_PLAN_ONEHOT, &costs, TS_SCHED_HYBRID, &g, &plan, NULL, 0));
    double *alt = malloc(ts_sched_graph_count(g) * sizeof(double));
    double kt[TS_LLM_KIND_COUNT];
    ck_assert_ts_ok(ts_llm_enc_plan_alternatives(e, 3, TS_LLM_PLAN_ONEHOT, &costs, TS_SCHED_HYBRID,
                                                 g, alt, kt));
    for (int k = 0; k < TS_LLM_KIND_COUNT; k++)
        ck_assert(isfinite(kt[k]) && kt[k] > 0);
    char *text = NULL;
    ck_assert_ts_ok(ts_sched_plan_explain_alt(plan, g, &costs, alt, "why", &text, NULL));
    ck_assert(strstr(text, "invsqrt") && strstr(text, "TFHE") && strstr(text, "exact"));
    double st[TS_LLM_STAGE_COUNT], sum = 0;
    ts_llm_enc_plan_stages(plan, g, st);
    for (int i = 0; i < TS_LLM_STAGE_COUNT; i++)
        sum += st[i];
    ck_assert(fabs(sum - plan->total_ns) < 1e-6 * plan->total_ns);
    ck_assert(st[TS_LLM_STAGE_CONVERT] > 0 && st[TS_LLM_STAGE_MATVEC] > 0);
    ts_free(text);
    free(alt);
    ts_sched_plan_free(plan);
    ts_sched_graph_free(g);
    ts_llm_enc_free(e);
    ts_ckks_params_free(p);
    ts_llm_model_free(m);
    unlink(model);
    rmdir(dir);
}
END_TEST

/* The predicted total of the engine with configuration cfg at pos. */
static double plan_total(const ts_llm_model_t *m, ts_ckks_params_t *p, ts_llm_enc_config_t *cfg,
                         const ts_sched_costs_t *costs, ts_sched_policy_t pol, int pos)
{
    ts_llm_enc_t *e = NULL;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *plan = NULL;
    ck_assert_ts_ok(ts_llm_enc_new(m, p, cfg, NULL, &e));
    ck_assert_ts_ok(ts_llm_enc_plan(e, pos, TS_LLM_PLAN_ONEHOT, costs, pol, &g, &plan, NULL, 0));
    double t = plan->total_ns;
    ts_sched_plan_free(plan);
    ts_sched_graph_free(g);
    ts_llm_enc_free(e);
    return t;
}

/*
 * The hybrid policy as the cheapest assignment (ts_llm_enc_config_best):
 * no dearer than the ckks policy, the hybrid default and every assignment one
 * kind away from it in either structure (the ckks policy's softmax rounds or
 * the hybrid's); with TFHE nearly free the softmax's and the norms' kinds go
 * to TFHE, with TFHE priced out it is the ckks policy's configuration itself.
 */
/* The ckks policy's 1/x specs (ts_llm_enc_config_policy): each meets its
 * precision (the first round and the rounds between: COND_BITS 3.3, enough to
 * keep the next round's sums in [0.8 / n, 1.25]; the last: LAST_BITS 12) by
 * the approximation's own bound, and its division is no deeper than the
 * linear start's at that precision; the first round (the centered scores'
 * mean sum on [0.8, 256]) in depth 7, where the uncentered sum on
 * [0.02, 256] took 11. */
static int linear_depth(double lo, double hi, double bits)
{
    int k = 0;
    while (ts_nonlinear_goldschmidt_bound(lo, hi, k) > ldexp(1.0, -bits) * (1 + 1e-12))
        k++;
    return 1 + k;
}

START_TEST(test_engine_recip_specs)
{
    const int npos[] = {1, 16, 64, 128, 1024};
    for (size_t i = 0; i < sizeof npos / sizeof npos[0]; i++) {
        ts_llm_enc_config_t c;
        ts_llm_enc_config_policy(&c, TS_SCHED_CKKS, npos[i]);
        const ts_nonlinear_spec_t *sp[3] = {&c.recip, &c.recip_norm, &c.recip_last};
        const double bits[3] = {3.3, 3.3, 12};
        for (int r = 0; r < 3; r++) {
            ts_nonlinear_approx_t *a = NULL;
            ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_RECIP, sp[r], &a));
            double bound = ts_nonlinear_approx_rel_bound(a);
            int depth = sp[r]->iter == TS_NL_ITER_SCALED
                            ? ts_ckks_chebyshev_depth((size_t)sp[r]->degree) + 2 + sp[r]->steps
                            : 1 + sp[r]->steps;
            int lin = linear_depth(sp[r]->lo, sp[r]->hi, bits[r]);
            printf("n %4d 1/x %d on [%g, %g]: degree %d + %d steps, depth %d (linear %d), "
                   "bound 2^%.1f\n",
                   npos[i], r, sp[r]->lo, sp[r]->hi, sp[r]->degree, sp[r]->steps, depth, lin,
                   log2(bound));
            ck_assert_msg(bound <= ldexp(1.0, -bits[r]), "bound 2^%.2f", log2(bound));
            ck_assert_int_le(depth, lin);
            if (r == 0) {
                ck_assert(c.softmax_center && c.softmax_mean_first);
                ck_assert_int_le(depth, 7);
            }
            /* the guess and the first product fit the smallest bootstrap
             * budget (test-boot-n12: 7 levels) */
            if (sp[r]->iter == TS_NL_ITER_SCALED)
                ck_assert_int_le(ts_ckks_chebyshev_depth((size_t)sp[r]->degree) + 2, 7);
            ts_nonlinear_approx_free(a);
        }
        /* 1/sqrt(x): the degree-31 interpolant alone, 7 bits worst-case over
         * the whole interval in depth 6, where the default's degree 7 and two
         * Newton steps reach 5 bits in depth 8 */
        ts_llm_enc_config_t d;
        ts_llm_enc_config_default(&d);
        ts_nonlinear_approx_t *a = NULL, *ad = NULL;
        ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_RSQRT, &c.rsqrt, &a));
        ck_assert_ts_ok(ts_nonlinear_approx_new(TS_NL_FN_RSQRT, &d.rsqrt, &ad));
        ck_assert_double_eq(c.rsqrt.lo, d.rsqrt.lo);
        ck_assert_double_eq(c.rsqrt.hi, d.rsqrt.hi);
        int depth = ts_ckks_chebyshev_depth((size_t)c.rsqrt.degree) + 1 + 2 * c.rsqrt.steps;
        int ddepth = ts_ckks_chebyshev_depth((size_t)d.rsqrt.degree) + 1 + 2 * d.rsqrt.steps;
        double worst = 0;
        for (int k = 0; k <= 20000; k++) {
            double x = c.rsqrt.lo * pow(c.rsqrt.hi / c.rsqrt.lo, k / 20000.0);
            worst = fmax(worst, fabs(ts_nonlinear_approx_eval(a, x) * sqrt(x) - 1.0));
        }
        ck_assert_msg(worst < pow(2.0, -7.0), "1/sqrt worst 2^%.2f", log2(worst));
        ck_assert_int_eq(depth, 6);
        ck_assert_int_eq(ddepth, 8);
        ck_assert(ts_nonlinear_approx_rel_bound(ad) > 0x1p-6);
        ts_nonlinear_approx_free(a);
        ts_nonlinear_approx_free(ad);
    }
}
END_TEST

/* Every policy's step of aidreams260K plans at each bootstrapping preset
 * and working slot count the engine runs it at (a need above what a
 * bootstrap leaves is TS_ELEVEL: a degree-107 division guess once made
 * every ckks step at test-boot-n12 fail) — the plan only, no keys. */
START_TEST(test_engine_plan_presets)
{
    static const struct {
        const char *preset;
        int log_slots;
    } cs[] = {{"test-boot-n12", 10},  {"test-boot-n12", 11},  {"test-boot-n12-dense", 10},
              {"boot-n16-dense", 10}, {"boot-n16-dense", 12}, {"boot-n16-dense", 13}};
    char path[512];
    snprintf(path, sizeof path, "%s/aidreams260K.bin", ts_test_model_dir());
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(path, &m, NULL, 0));
    ts_sched_costs_t costs;
    ts_sched_costs_default(&costs);
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        ts_ckks_params_t *p = NULL;
        snprintf(path, sizeof path, "configs/params/%s.yaml", cs[i].preset);
        ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &p, NULL));
        int npos = (1 << cs[i].log_slots) / 64;
        for (int pol = TS_SCHED_HYBRID; pol <= TS_SCHED_TFHE; pol++) {
            ts_llm_enc_config_t c;
            ts_llm_enc_config_policy(&c, (ts_sched_policy_t)pol, npos);
            c.log_slots = cs[i].log_slots;
            ts_llm_enc_t *e = NULL;
            ts_sched_graph_t *g = NULL;
            ts_sched_plan_t *plan = NULL;
            char msg[256] = "";
            ck_assert_ts_ok(ts_llm_enc_new(m, p, &c, NULL, &e));
            ts_status_t st = ts_llm_enc_plan(e, npos - 1, TS_LLM_PLAN_ONEHOT, &costs,
                                             (ts_sched_policy_t)pol, &g, &plan, msg, sizeof msg);
            ck_assert_msg(st == TS_OK, "%s 2^%d slots, policy %d: %s (%s)", cs[i].preset,
                          cs[i].log_slots, pol, ts_status_name(st), msg);
            printf("%s 2^%d slots policy %d: %u bootstraps\n", cs[i].preset, cs[i].log_slots, pol,
                   plan->n_boot);
            ts_sched_plan_free(plan);
            ts_sched_graph_free(g);
            ts_llm_enc_free(e);
        }
        ts_ckks_params_free(p);
    }
    ts_llm_model_free(m);
}
END_TEST

/* aidreams260K and the 128-bit boot-n16-dense parameters. */
static ts_llm_model_t *aidreams_dense(ts_ckks_params_t **p)
{
    char path[512];
    snprintf(path, sizeof path, "%s/aidreams260K.bin", ts_test_model_dir());
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(path, &m, NULL, 0));
    ck_assert_ts_ok(ts_ckks_params_load_file("configs/params/boot-n16-dense.yaml", false, p, NULL));
    return m;
}

/* The ckks plan's bootstrap count of aidreams260K (cfg) with the assumed
 * bootstrapper at DFT budgets (cts, stc) at position pos; -1 when the
 * budgets cannot be built. */
static int budget_boots(const ts_llm_model_t *m, ts_ckks_params_t *p,
                        const ts_llm_enc_config_t *cfg, int cts, int stc, int pos)
{
    ts_llm_enc_config_t c = *cfg;
    c.boot_cts_levels = cts;
    c.boot_stc_levels = stc;
    ts_boot_config_t bc;
    if (ts_llm_boot_config(p, c.log_slots, 32, cts, stc, &bc) != TS_OK)
        return -1;
    ts_sched_costs_t costs;
    ts_sched_costs_default(&costs);
    ts_llm_enc_t *e = NULL;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *plan = NULL;
    ck_assert_ts_ok(ts_llm_enc_new(m, p, &c, NULL, &e));
    ts_status_t st = ts_llm_enc_plan(e, pos, TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT, &costs,
                                     TS_SCHED_CKKS, &g, &plan, NULL, 0);
    int n = st == TS_OK ? (int)plan->n_boot : -1;
    ts_sched_plan_free(plan);
    ts_sched_graph_free(g);
    ts_llm_enc_free(e);
    return n;
}

/*
 * The bootstrapper's DFT level budgets (ts_llm_boot_config,
 * ts_llm_enc_boot_budgets): at boot-n16-dense, aidreams260K's step plans 16
 * bootstraps at 2^10 slots with the defaults (3 + 2 levels) and with 4 + 3
 * (13 levels left instead of 15), so the daemon takes 4 + 3 (a cheaper
 * bootstrap, fewer keys); at 2^11 slots (32 positions) 4 + 3 and the other
 * larger budgets plan more bootstraps than the defaults (3 + 3), which stay.
 * Checked against every budget pair the chain admits around them: none
 * plans fewer bootstraps than the choice, none with as few has more levels.
 */
START_TEST(test_engine_boot_budgets)
{
    ts_ckks_params_t *p = NULL;
    ts_llm_model_t *m = aidreams_dense(&p);

    /* tesserad's encapsulation: h' = 32 for the dense secret, none for a sparse one */
    ck_assert_int_eq(ts_llm_boot_encap_h(p), 32);
    ts_ckks_params_t *sp = NULL;
    ck_assert_ts_ok(ts_ckks_params_load_file("configs/params/test-boot-n12.yaml", true, &sp, NULL));
    ck_assert_int_eq(ts_llm_boot_encap_h(sp), 0);
    ts_ckks_params_free(sp);
    /* ts_llm_boot_config: 0 keeps ts_boot_config_slots's budgets; others are applied */
    ts_boot_config_t d, b;
    ck_assert_ts_ok(ts_boot_config_slots(p, 10, &d));
    ck_assert_ts_ok(ts_boot_config_encapsulate(p, 32, &d));
    ck_assert_ts_ok(ts_llm_boot_config(p, 10, 32, 0, 0, &b));
    ck_assert_int_eq(memcmp(&d, &b, sizeof d), 0);
    ck_assert_int_eq(b.cts_levels, 3);
    ck_assert_int_eq(b.stc_levels, 2);
    ck_assert_ts_ok(ts_llm_boot_config(p, 10, 32, 4, 3, &b));
    ck_assert_int_eq(b.cts_levels, 4);
    ck_assert_int_eq(b.stc_levels, 3);
    ck_assert_int_eq(b.encap_h, 32);
    ck_assert_ts_ok(ts_llm_boot_config(p, 10, 0, 4, 0, &b));
    ck_assert_int_eq(b.stc_levels, 2);
    ck_assert_int_eq(b.encap_h, 0);
    ck_assert(b.k > d.k); /* the dense secret's I without encapsulation */
    ck_assert_int_eq(ts_llm_boot_config(p, 2, 32, 3, 0, &b), TS_EINVAL);    /* > log_slots */
    ck_assert_int_eq(ts_llm_boot_config(p, 10, 32, 11, 2, &b), TS_EINVAL);  /* > log_slots */
    ck_assert_int_eq(ts_llm_boot_config(p, 10, 32, 10, 10, &b), TS_EINVAL); /* no level left */
    ck_assert_ts_ok(ts_llm_boot_config(p, 10, 32, 9, 9, &b));               /* 2 left */
    ck_assert_int_eq(ts_llm_boot_config(p, 10, 32, -1, 0, &b), TS_EINVAL);
    ck_assert_int_eq(ts_llm_boot_config(NULL, 10, 32, 0, 0, &b), TS_EINVAL);

    static const struct {
        int log_slots, cts, stc; /* the expected choice (0: the defaults) */
    } cs[] = {{10, 4, 3}, {11, 0, 0}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        int npos = (1 << cs[i].log_slots) / 64;
        ts_llm_enc_config_t c;
        ts_llm_enc_config_policy(&c, TS_SCHED_CKKS, npos);
        c.log_slots = cs[i].log_slots;
        c.boot_cts_levels = 7; /* ignored */
        int cts = -1, stc = -1;
        ck_assert_ts_ok(ts_llm_enc_boot_budgets(
            m, p, &c, npos, TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT, &cts, &stc));
        ck_assert_int_eq(cts, cs[i].cts);
        ck_assert_int_eq(stc, cs[i].stc);
        c.boot_cts_levels = 0;
        ck_assert_ts_ok(ts_llm_boot_config(p, c.log_slots, 32, 0, 0, &d));
        int chosen = budget_boots(m, p, &c, cts, stc, npos - 1);
        int lv_chosen = (cts ? cts : d.cts_levels) + (stc ? stc : d.stc_levels);
        int dflt = budget_boots(m, p, &c, 0, 0, npos - 1);
        ck_assert_int_gt(chosen, 0);
        ck_assert_int_le(chosen, dflt);
        for (int a = d.cts_levels; a <= d.cts_levels + 1; a++)
            for (int s2 = d.stc_levels; s2 <= d.stc_levels + 1; s2++) {
                int n = budget_boots(m, p, &c, a, s2, npos - 1);
                printf("boot budgets: 2^%d slots, %d + %d levels: %d bootstraps\n", cs[i].log_slots,
                       a, s2, n);
                if (n < 0)
                    continue;
                ck_assert_int_ge(n, chosen);
                ck_assert(n > chosen || a + s2 <= lv_chosen);
                if (cs[i].cts == 0 && a + s2 > lv_chosen)
                    ck_assert_int_gt(n, chosen); /* a choice the count decides */
            }
    }
    int cts, stc;
    ts_llm_enc_config_t c;
    ts_llm_enc_config_policy(&c, TS_SCHED_CKKS, 16);
    /* an engine of lanes keeps the defaults */
    c.log_slots = 10;
    c.lanes = 2;
    cts = stc = -1;
    ck_assert_ts_ok(ts_llm_enc_boot_budgets(m, p, &c, 16, TS_LLM_PLAN_ONEHOT, &cts, &stc));
    ck_assert_int_eq(cts, 0);
    ck_assert_int_eq(stc, 0);
    c.lanes = 1;
    ck_assert_int_eq(ts_llm_enc_boot_budgets(m, p, &c, 0, 0, &cts, &stc), TS_EINVAL);
    ck_assert_int_eq(ts_llm_enc_boot_budgets(NULL, p, &c, 16, 0, &cts, &stc), TS_EINVAL);
    ts_ckks_params_free(p);
    ts_llm_model_free(m);
}
END_TEST

/* A step's bootstraps with tesserad's DFT budgets for cfg (refine's measure). */
static int refine_boots(const ts_llm_model_t *m, ts_ckks_params_t *p,
                        const ts_llm_enc_config_t *cfg, int max_pos)
{
    int cts = -1, stc = -1;
    ck_assert_ts_ok(ts_llm_enc_boot_budgets(
        m, p, cfg, max_pos, TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT, &cts, &stc));
    return budget_boots(m, p, cfg, cts, stc, max_pos - 1);
}

/* The simulated logits' max error of cfg on the exact greedy continuation of BOS. */
static double refine_sim_err(const ts_llm_model_t *m, const ts_llm_enc_config_t *cfg, int n,
                             size_t *agree)
{
    ts_llm_sim_config_t ex, sc;
    ts_llm_sim_config_default(&ex);
    int bos = 1, ids[128];
    size_t got = 0;
    ck_assert_int_le(n, 128);
    ck_assert_ts_ok(ts_llm_simulate_greedy(m, &ex, &bos, 1, (size_t)n, ids, &got));
    ck_assert_int_eq(got, n);
    ts_llm_enc_config_to_sim(cfg, &sc);
    ts_llm_sim_report_t r;
    memset(&r, 0, sizeof r);
    ck_assert_ts_ok(ts_llm_simulate(m, &sc, ids, got, &r));
    double err = r.logits_max_err;
    *agree = r.agree;
    ts_llm_sim_report_clear(&r);
    return err;
}

/* base: the ckks policy of an engine of `lanes` lanes of 2^log_slots for npos
 * positions; c: its refinement. */
static void refine_case(const ts_llm_model_t *m, ts_ckks_params_t *p, int npos, int log_slots,
                        int lanes, ts_llm_enc_config_t *base, ts_llm_enc_config_t *c)
{
    ts_llm_enc_config_policy(base, TS_SCHED_CKKS, npos);
    base->log_slots = log_slots;
    base->lanes = lanes;
    *c = *base;
    ck_assert_ts_ok(
        ts_llm_enc_config_refine(m, p, c, npos, TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT));
}

/*
 * The finer approximations where the levels give them (ts_llm_enc_config_refine)
 * at boot-n16-dense: one lane of 32 positions (2^11 slots) takes SiLU at degree
 * 23 and the norms' 1/sqrt at 56 with the step's bootstraps unchanged, and the
 * simulated logits' error falls to under a third (0.16 -> 0.015 on this
 * sequence); at 16 positions (2^10) the bootstrapper would lose DFT levels;
 * at 128 positions (2^13) both would plan more bootstraps, SiLU
 * alone does not: SiLU only; an engine of lanes by the same rule over its
 * step and its passes: at 8 lanes of 2^11 the policy's (SiLU at 23 costs
 * the ordinary step bootstraps), of 2^9 both (a pass +2%), of 2^12 SiLU
 * only (both: a pass after steps 2 bootstraps more). A hybrid configuration's look-ups stay;
 * a refined configuration is its own refinement.
 */
START_TEST(test_engine_config_refine)
{
    ts_ckks_params_t *p = NULL;
    ts_llm_model_t *m = aidreams_dense(&p);
    const unsigned fl = TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PERIOD_BOOT;
    ts_llm_enc_config_t base, c, v;

    /* one lane, 32 positions: both, no bootstrap more, the error under a third */
    refine_case(m, p, 32, 11, 1, &base, &c);
    ck_assert_int_eq(base.silu.degree, 15);
    ck_assert_int_eq(base.rsqrt.degree, 31);
    ck_assert_int_eq(c.silu.degree, 23);
    ck_assert_int_eq(c.rsqrt.degree, 56);
    ck_assert_int_eq(c.rsqrt.steps, 0);
    int nb = refine_boots(m, p, &base, 32), nc = refine_boots(m, p, &c, 32);
    printf("refine: 32 positions: %d -> %d bootstraps\n", nb, nc);
    ck_assert_int_gt(nb, 0);
    ck_assert_int_le(nc, nb);
    size_t ab = 0, ac = 0;
    double eb = refine_sim_err(m, &base, 32, &ab), ec = refine_sim_err(m, &c, 32, &ac);
    printf("refine: 32 positions: logits' max error %.4f -> %.4f, argmax %zu -> %zu of 32\n", eb,
           ec, ab, ac);
    ck_assert(ec < eb / 3.0);
    ck_assert_int_ge(ac, ab);
    v = c;
    ck_assert_ts_ok(ts_llm_enc_config_refine(m, p, &v, 32, fl));
    ck_assert_int_eq(memcmp(&v, &c, sizeof v), 0);

    /* 16 positions (2^10): as many bootstraps either way, but the finer ones
     * leave the bootstrapper's DFT budgets one or two levels fewer (a dearer
     * bootstrap): the policy's stay */
    refine_case(m, p, 16, 10, 1, &base, &c);
    ck_assert_int_eq(memcmp(&c, &base, sizeof c), 0);
    v = base;
    v.silu.degree = 23;
    int cts[2], stc[2];
    ck_assert_ts_ok(ts_llm_enc_boot_budgets(m, p, &base, 16, fl, &cts[0], &stc[0]));
    ck_assert_ts_ok(ts_llm_enc_boot_budgets(m, p, &v, 16, fl, &cts[1], &stc[1]));
    printf("refine: 16 positions: DFT budgets %d + %d, with SiLU at 23 %d + %d\n", cts[0], stc[0],
           cts[1], stc[1]);
    ck_assert_int_eq(cts[0] + stc[0], 7);
    ck_assert(cts[1] + stc[1] < 7); /* 0 + 0: the defaults, 3 + 2 */
    /* with the budgets fixed (tesserad's Renyi mode: the defaults) both are
     * free there, and the budgets are the ones given */
    base.boot_budgets_fixed = true;
    ck_assert_ts_ok(ts_llm_enc_boot_budgets(m, p, &base, 16, fl, &cts[0], &stc[0]));
    ck_assert_int_eq(cts[0], 0);
    ck_assert_int_eq(stc[0], 0);
    c = base;
    ck_assert_ts_ok(ts_llm_enc_config_refine(m, p, &c, 16, fl));
    ck_assert_int_eq(c.silu.degree, 23);
    ck_assert_int_eq(c.rsqrt.degree, 56);
    ck_assert(c.boot_budgets_fixed);
    ck_assert_int_le(budget_boots(m, p, &c, 0, 0, 15), budget_boots(m, p, &base, 0, 0, 15));
    v = base;
    v.boot_cts_levels = 4;
    v.boot_stc_levels = 2;
    ck_assert_ts_ok(ts_llm_enc_boot_budgets(m, p, &v, 16, fl, &cts[0], &stc[0]));
    ck_assert_int_eq(cts[0], 4);
    ck_assert_int_eq(stc[0], 2);

    /* 128 positions: SiLU only; with the 1/sqrt too the step bootstraps more */
    refine_case(m, p, 128, 13, 1, &base, &c);
    ck_assert_int_eq(c.silu.degree, 23);
    ck_assert_int_eq(c.rsqrt.degree, 31);
    v = c;
    v.rsqrt.degree = 56;
    nb = refine_boots(m, p, &base, 128);
    nc = refine_boots(m, p, &c, 128);
    int nv = refine_boots(m, p, &v, 128);
    printf("refine: 128 positions: %d, SiLU %d, both %d bootstraps\n", nb, nc, nv);
    ck_assert_int_le(nc, nb);
    ck_assert_int_gt(nv, nb);

    /* 8 lanes of 2^11: the policy's (the ordinary step would bootstrap more
     * with SiLU at 23 anyway) */
    refine_case(m, p, 32, 11, 8, &base, &c);
    ck_assert_int_eq(memcmp(&c, &base, sizeof c), 0);
    v = base;
    v.silu.degree = 23;
    nb = budget_boots(m, p, &base, 0, 0, 31);
    nv = budget_boots(m, p, &v, 0, 0, 31);
    printf("refine: 8 lanes: step %d, SiLU at 23 %d bootstraps\n", nb, nv);
    ck_assert_int_gt(nv, nb);
    /* 8 lanes of 2^9 (8 positions: one pass, the step): both */
    refine_case(m, p, 8, 9, 8, &base, &c);
    ck_assert_int_eq(c.silu.degree, 23);
    ck_assert_int_eq(c.rsqrt.degree, 56);
    ck_assert_int_le(budget_boots(m, p, &c, 0, 0, 7), budget_boots(m, p, &base, 0, 0, 7));
    /* of 2^10 (16): the policy's, by the passes alone (SiLU at 23 leaves
     * the step's 16 bootstraps, a pass after steps 20) */
    refine_case(m, p, 16, 10, 8, &base, &c);
    ck_assert_int_eq(memcmp(&c, &base, sizeof c), 0);
    v = base;
    v.silu.degree = 23;
    ck_assert_int_le(budget_boots(m, p, &v, 0, 0, 15), budget_boots(m, p, &base, 0, 0, 15));
    /* of 2^12 (64): SiLU only (both: a pass after steps 2 bootstraps more) */
    refine_case(m, p, 64, 12, 8, &base, &c);
    ck_assert_int_eq(c.silu.degree, 23);
    ck_assert_int_eq(c.rsqrt.degree, 31);

    /* hybrid: the 1/sqrt look-up stays a look-up */
    ts_llm_enc_config_policy(&c, TS_SCHED_HYBRID, 32);
    c.log_slots = 11;
    (void)ts_llm_enc_config_refine(m, p, &c, 32, fl);
    ck_assert_int_eq(c.rsqrt.method, TS_NL_LUT);
    ck_assert_int_eq(c.eval_rsqrt, TS_LLM_EVAL_LUT);

    ck_assert_int_eq(ts_llm_enc_config_refine(NULL, p, &c, 32, fl), TS_EINVAL);
    ck_assert_int_eq(ts_llm_enc_config_refine(m, p, &c, 0, fl), TS_EINVAL);
    ck_assert_int_eq(ts_llm_enc_config_refine(m, NULL, &c, 32, fl), TS_EINVAL);
    ts_ckks_params_free(p);
    ts_llm_model_free(m);
}
END_TEST

/*
 * Residual bootstraps (enc.c resid, ts__llm_enc_place): aidreams260K at
 * test-boot-n12-dense (boot-n16-dense's chain, 13 levels after a bootstrap at
 * 2^10 slots), policy ckks. The step plans with 20 bootstraps (5 per layer)
 * and no residual bootstrap helps there (session 9, before the stream scale
 * and the least-depth Paterson-Stockmeyer split: 27 lazily, 24 with layer
 * 0's FFN output refreshed with the stream). The engine's own placement is
 * no worse than refreshing the stream after layer 0's FFN, and with that
 * placement forced the plan shows the resid.boot operator and one encrypted
 * step (the daemon's one-hot path) bootstraps exactly as planned, its argmax
 * the plaintext's.
 */
/* aidreams260K and the ckks policy's configuration for 16 positions at 2^10 slots. */
static ts_llm_model_t *aidreams_ckks16(ts_llm_enc_config_t *c)
{
    char path[512];
    snprintf(path, sizeof path, "%s/aidreams260K.bin", ts_test_model_dir());
    ts_llm_model_t *m = NULL;
    ck_assert_ts_ok(ts_llm_model_load(path, &m, NULL, 0));
    ts_llm_enc_config_policy(c, TS_SCHED_CKKS, 16);
    c->log_slots = 10;
    return m;
}

/* One encrypted step at pos of token 1 through the daemon's one-hot path:
 * its bootstraps and the logits' level as planned, its logits within 0.5 of
 * the plaintext model's and the same argmax. */
static void step_as_planned(llm_fx_t *f, const ts_sched_plan_t *plan, int pos, const char *what)
{
    ts_ckks_ciphertext_t *oh = NULL, *x = NULL, *logits = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, 0, &oh));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, 0, &x));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, 0, &logits));
    const int tok = 1;
    ck_assert_ts_ok(ts_llm_enc_encrypt_onehot(f->enc, f->ecd, f->sk, f->prng, tok, oh));
    ck_assert_ts_ok(ts_llm_enc_embed(f->s, oh, x));
    ck_assert_ts_ok(ts_llm_enc_step(f->s, x, pos, logits));
    ts_llm_enc_stats_t ss;
    ts_llm_enc_session_stats(f->s, &ss);
    ck_assert_uint_eq(ss.bootstraps, plan->n_boot);
    ck_assert_int_eq(ts_ckks_ciphertext_level(logits), plan->steps[plan->n_steps - 1].level_out);
    int V = ts_llm_model_config(f->m)->vocab_size;
    float *lg = malloc((size_t)V * sizeof(float));
    ck_assert_ptr_nonnull(lg);
    ck_assert_ts_ok(ts_llm_enc_decrypt_vec(f->ecd, f->sk, logits, lg, V));
    ts_llm_state_t *st = NULL;
    ck_assert_ts_ok(ts_llm_state_new(f->m, &st));
    const float *ref = NULL;
    ck_assert_ts_ok(ts_llm_forward(f->m, st, tok, pos, &ref));
    double mx = 0;
    for (int i = 0; i < V; i++)
        mx = fmax(mx, fabs((double)lg[i] - ref[i]));
    printf("%s: step %llu bootstraps (planned %u), max logit error %.6e, argmax %d / %d\n", what,
           (unsigned long long)ss.bootstraps, plan->n_boot, mx, ts_llm_argmax(lg, V),
           ts_llm_argmax(ref, V));
    ck_assert_int_eq(ts_llm_argmax(lg, V), ts_llm_argmax(ref, V));
    ck_assert(mx < 0.5);
    free(lg);
    ts_llm_state_free(st);
    ts_ckks_ciphertext_free(oh);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(logits);
}

/* The engine's ckks plan of the step at pos (flags) under the built-in cost
 * table, into *g and *plan (freed first when set). */
static void plan_ckks(llm_fx_t *f, int pos, unsigned flags, ts_sched_graph_t **g,
                      ts_sched_plan_t **plan)
{
    ts_sched_plan_free(*plan);
    ts_sched_graph_free(*g);
    *plan = NULL;
    *g = NULL;
    ts_sched_costs_t costs;
    ts_sched_costs_default(&costs);
    char msg[256] = "";
    ck_assert_msg(ts_llm_enc_plan(f->enc, pos, flags, &costs, TS_SCHED_CKKS, g, plan, msg,
                                  sizeof msg) == TS_OK,
                  "plan: %s", msg);
}

START_TEST(test_engine_resid_boot)
{
    ts_llm_enc_config_t c;
    ts_llm_model_t *m = aidreams_ckks16(&c);
    llm_fx_t f;
    llm_fx_open(&f, m, "test-boot-n12-dense", &c, true, 11);
    const int pos = 0;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *plan = NULL;
    plan_ckks(&f, pos, TS_LLM_PLAN_ONEHOT, &g, &plan);
    uint32_t n_own = plan->n_boot;
    ck_assert_uint_le(n_own, 20);
    /* a client-encrypted embedding drops to the one-hot product's level and
     * bootstraps as that path does (from one level higher it took 27) */
    plan_ckks(&f, pos, 0, &g, &plan);
    ck_assert_uint_eq(plan->n_boot, n_own);
    ts__llm_enc_set_resid_boot(f.enc, 2); /* bit 2l + 1, l = 0: after layer 0's FFN */
    plan_ckks(&f, pos, TS_LLM_PLAN_ONEHOT, &g, &plan);
    int n_resid = 0;
    for (size_t k = 0; k < plan->n_steps; k++)
        n_resid += strstr(ts_sched_graph_op(g, k)->name, "resid.boot") != NULL;
    printf("resid placement: own %u bootstraps; forced: %d residual bootstraps, %u planned\n",
           n_own, n_resid, plan->n_boot);
    ck_assert_int_eq(n_resid, 1);
    ck_assert_uint_ge(plan->n_boot, n_own);
    step_as_planned(&f, plan, pos, "resid placement");
    ts_sched_plan_free(plan);
    ts_sched_graph_free(g);
    llm_fx_close(&f);
}
END_TEST

/*
 * Deferred norms (llm_int.h ts__llm_enc_shape_t norm_defer): aidreams260K at
 * test-boot-n12-dense, policy ckks, 2^10 slots. The engine defers exactly
 * where its plan with deferred norms predicts less time than without (each
 * with its own residual bootstraps); a plan with deferred norms has no
 * "normalize" but a "norm.in" and a factor product per output; forced on,
 * one encrypted step bootstraps exactly as planned and lands at the planned
 * level, its logits within the non-deferred bound of the plaintext's and its
 * argmax the plaintext's; forced off, the plan normalizes again.
 */
static int count_ops(const ts_sched_graph_t *g, size_t n, const char *part)
{
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += strstr(ts_sched_graph_op(g, i)->name, part) != NULL;
    return k;
}

START_TEST(test_engine_norm_defer)
{
    ts_llm_enc_config_t c;
    ts_llm_model_t *m = aidreams_ckks16(&c);
    llm_fx_t f;
    llm_fx_open(&f, m, "test-boot-n12-dense", &c, true, 11);
    /* the choice: the lower predicted time */
    bool chosen = ts_llm_enc_norm_defer(f.enc);
    double ns[2];
    for (int d = 0; d < 2; d++) {
        ck_assert_ts_ok(ts_llm_enc_set_norm_defer(f.enc, d == 1));
        ts__llm_enc_shape_t sh;
        ts__llm_enc_shape(f.enc, &sh);
        ck_assert(ts__llm_enc_defer_ns(f.enc, false, sh.resid_boot, &ns[d]));
    }
    printf("norm defer: planned %.1f s deferred, %.1f s not; chosen %s\n", ns[1] / 1e9, ns[0] / 1e9,
           chosen ? "deferred" : "not deferred");
    ck_assert(chosen == (ns[1] < ns[0]));
    const int pos = 0;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *plan = NULL;
    ck_assert_ts_ok(ts_llm_enc_set_norm_defer(f.enc, false));
    plan_ckks(&f, pos, TS_LLM_PLAN_ONEHOT, &g, &plan);
    int nl = ts_llm_model_config(f.m)->n_layers;
    ck_assert_int_eq(count_ops(g, plan->n_steps, "normalize"), 2 * nl + 1);
    ck_assert_int_eq(count_ops(g, plan->n_steps, ".norm.in"), 0);
    ck_assert_ts_ok(ts_llm_enc_set_norm_defer(f.enc, true));
    ck_assert(ts_llm_enc_norm_defer(f.enc));
    plan_ckks(&f, pos, TS_LLM_PLAN_ONEHOT, &g, &plan);
    ck_assert_int_eq(count_ops(g, plan->n_steps, "normalize"), 0);
    /* norm.in and norm.in.need per norm; the factor on q k v, w1 w3, the head */
    ck_assert_int_eq(count_ops(g, plan->n_steps, ".norm.in"), 2 * (2 * nl + 1));
    static const char *const outs[] = {"wq.norm", "wk.norm", "wv.norm", "w1.norm", "w3.norm"};
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++)
        ck_assert_int_eq(count_ops(g, plan->n_steps, outs[i]), nl);
    ck_assert_int_eq(count_ops(g, plan->n_steps, "lm_head.norm"), 1);
    step_as_planned(&f, plan, pos, "norm defer");
    ts_sched_plan_free(plan);
    ts_sched_graph_free(g);
    llm_fx_close(&f);
}
END_TEST

/* aidreams260K's ckks engine at test-boot-n12-dense with `lanes` lanes of
 * 2^log_slots slots (no bootstrapper: the plan's level model). */
static ts_llm_enc_t *dense_engine(int lanes, int log_slots, ts_llm_model_t **m,
                                  ts_ckks_params_t **p)
{
    ts_llm_enc_config_t c;
    *m = aidreams_ckks16(&c);
    c.log_slots = log_slots;
    c.lanes = lanes;
    ck_assert_ts_ok(
        ts_ckks_params_load_file("configs/params/test-boot-n12-dense.yaml", true, p, NULL));
    ts_llm_enc_t *e = NULL;
    ck_assert_ts_ok(ts_llm_enc_new(*m, *p, &c, NULL, &e));
    return e;
}

/* The engine's plan at pos (flags) with the drop list its graph carries and
 * without one: the same bootstraps, less predicted time with it. */
static void drop_plans(const ts_llm_enc_t *e, int pos, unsigned flags, const char *what,
                       size_t n_drop, ts_sched_plan_t **with, ts_sched_plan_t **without)
{
    ts_sched_costs_t costs;
    ts_sched_costs_default(&costs);
    ts_llm_enc_levels_t lv;
    ck_assert_ts_ok(ts_llm_enc_levels(e, &lv));
    ts_sched_costs_extend(&costs, lv.input);
    ts_sched_graph_t *g = NULL;
    ck_assert_ts_ok(ts_llm_enc_graph(e, pos, flags, &g));
    ck_assert_ts_ok(
        ts_sched_plan_new_engine(g, &costs, TS_SCHED_CKKS, lv.input, lv.input, with, NULL, 0));
    ck_assert_ts_ok(ts_sched_graph_set_boot_drop(g, NULL, 0));
    ck_assert_ts_ok(
        ts_sched_plan_new_engine(g, &costs, TS_SCHED_CKKS, lv.input, lv.input, without, NULL, 0));
    ts_sched_graph_free(g);
    printf("%s: %zu bootstraps with a drop list; %u / %u bootstraps, predicted %.2f / %.2f s\n",
           what, n_drop, (*with)->n_boot, (*without)->n_boot, (*with)->total_ns / 1e9,
           (*without)->total_ns / 1e9);
    ck_assert_uint_gt(n_drop, 0);
    ck_assert_uint_eq((*with)->n_boot, (*without)->n_boot);
    ck_assert((*with)->total_ns < (*without)->total_ns);
}

/*
 * Drops after bootstraps (ts__llm_enc_boot_drops): aidreams260K, ckks policy,
 * at test-boot-n12-dense; the engine's plan with its drops has the same
 * bootstraps as without them, a lower predicted time, and operators at lower
 * levels. (test_engine_resid_boot executes a step with drops against its
 * plan.)
 */
START_TEST(test_engine_boot_drops)
{
    ts_llm_model_t *m = NULL;
    ts_ckks_params_t *p = NULL;
    ts_llm_enc_t *e = dense_engine(1, 10, &m, &p);
    ts__llm_enc_shape_t sh;
    ts__llm_enc_shape(e, &sh);
    ts_sched_plan_t *with = NULL, *without = NULL;
    drop_plans(e, 15, TS_LLM_PLAN_ONEHOT, "step drops", sh.n_boot_drop, &with, &without);
    size_t lower = 0, higher = 0;
    for (size_t k = 0; k < with->n_steps; k++) {
        lower += with->steps[k].level_in < without->steps[k].level_in;
        higher += with->steps[k].level_in > without->steps[k].level_in;
    }
    printf("step drops: %zu operators lower, %zu higher\n", lower, higher);
    ck_assert_uint_gt(lower, 0);
    ts_sched_plan_free(with);
    ts_sched_plan_free(without);
    ts_llm_enc_free(e);
    ts_ckks_params_free(p);
    ts_llm_model_free(m);
}
END_TEST

/*
 * A lanes engine's passes have their own drop lists
 * (ts__llm_enc_boot_drops_pass): after a pass (or a prefilled cache) and
 * after ordinary steps. aidreams260K, ckks policy, 4 lanes of 2^9 slots (the
 * widest vector, the vocabulary's 512) at test-boot-n12-dense, the pass from
 * position 4: each plan keeps its bootstraps with its list and predicts less
 * time than without it. A session's pass finds its list from its caches'
 * levels (ts__llm_enc_pass_drops): with no caches the list after a pass,
 * with every cache at an ordinary step's row level the list after steps.
 * (test_llm_ctx runs passes after a step and after a pass against their
 * session's plans.)
 */
START_TEST(test_engine_pass_drops)
{
    ts_llm_model_t *m = NULL;
    ts_ckks_params_t *p = NULL;
    ts_llm_enc_t *e = dense_engine(4, 9, &m, &p);
    ts__llm_enc_shape_t sh;
    ts__llm_enc_shape(e, &sh);
    for (int k = 0; k < 2; k++) {
        ts_sched_plan_t *with = NULL, *without = NULL;
        drop_plans(e, 4,
                   TS_LLM_PLAN_ONEHOT | TS_LLM_PLAN_PREFILL | (k ? TS_LLM_PLAN_AFTER_STEPS : 0),
                   k ? "pass drops after steps" : "pass drops after a pass", sh.n_boot_drop_pass[k],
                   &with, &without);
        ts_sched_plan_free(with);
        ts_sched_plan_free(without);
        /* the same list from the caches' levels */
        int nl = ts_llm_model_config(m)->n_layers;
        int8_t lv[64];
        ck_assert_int_le(2 * nl, 64);
        ck_assert_ptr_nonnull(sh.row_lv);
        for (int l = 0; l < nl; l++)
            lv[l] = lv[nl + l] = k ? sh.row_lv[l] : TS_LLM_NO_CACHE;
        uint8_t *d = NULL;
        size_t nd = 0;
        ck_assert_ts_ok(ts__llm_enc_pass_drops(e, lv, &d, &nd));
        ck_assert_uint_eq(nd, sh.n_boot_drop_pass[k]);
        ck_assert(nd == 0 || !memcmp(d, sh.boot_drop_pass[k], nd));
        ts_free(d);
    }
    ts_llm_enc_free(e);
    ts_ckks_params_free(p);
    ts_llm_model_free(m);
}
END_TEST

START_TEST(test_engine_config_best)
{
    char dir[256], model[300];
    ts_llm_model_t *m = NULL;
    ts_ckks_params_t *p = NULL;
    tiny_load(dir, sizeof dir, model, sizeof model, &m, &p);
    ts_llm_enc_config_t probe;
    ts_llm_enc_config_default(&probe);
    ts_llm_enc_t *e = NULL;
    ck_assert_ts_ok(ts_llm_enc_new(m, p, &probe, NULL, &e));
    ts_llm_enc_levels_t lv;
    ck_assert_ts_ok(ts_llm_enc_levels(e, &lv));
    ts_llm_enc_free(e);
    ts_sched_costs_t costs;
    fit_costs(&costs, ts_ckks_params_max_level(p), lv.input);
    const int pos = 3, ls = ts_ckks_params_log_slots(p);
    const unsigned used = (1u << TS_LLM_KIND_EXP) | (1u << TS_LLM_KIND_RECIP) |
                          (1u << TS_LLM_KIND_RECIP_NORM) | (1u << TS_LLM_KIND_RSQRT) |
                          (1u << TS_LLM_KIND_SILU);
    ts_llm_enc_config_t best, c;
    double ns = 0;
    ck_assert_ts_ok(ts_llm_enc_config_best(m, p, NULL, ls, TINY_SEQ, pos, TS_LLM_PLAN_ONEHOT,
                                           &costs, &best, &ns));
    ck_assert_int_eq(best.log_slots, ls);
    ck_assert(fabs(plan_total(m, p, &best, &costs, TS_SCHED_HYBRID, pos) - ns) < 1e-6 * ns);
    ts_llm_enc_config_policy(&c, TS_SCHED_CKKS, TINY_SEQ);
    c.log_slots = ls;
    double t_ckks = plan_total(m, p, &c, &costs, TS_SCHED_CKKS, pos);
    ts_llm_enc_config_policy(&c, TS_SCHED_HYBRID, TINY_SEQ);
    c.log_slots = ls;
    double t_default = plan_total(m, p, &c, &costs, TS_SCHED_HYBRID, pos);
    ck_assert(ns <= t_ckks && ns <= t_default);
    unsigned mask = ts_llm_enc_config_tfhe_kinds(&best);
    char kinds[96];
    ts_llm_kinds_format(mask, kinds, sizeof kinds);
    printf("config_best (built-in table): tfhe kinds %s, %.2f s (ckks %.2f s, hybrid default "
           "%.2f s)\n",
           kinds, ns / 1e9, t_ckks / 1e9, t_default / 1e9);
    /* its structure (the ckks policy's rounds or the hybrid's), and no
     * assignment of either structure one kind away from it is cheaper */
    ts_llm_enc_config_kinds(&c, TS_SCHED_CKKS, TINY_SEQ, mask);
    c.log_slots = ls;
    ts_sched_policy_t structure =
        memcmp(&c, &best, sizeof c) == 0 ? TS_SCHED_CKKS : TS_SCHED_HYBRID;
    ts_llm_enc_config_kinds(&c, structure, TINY_SEQ, mask);
    c.log_slots = ls;
    ck_assert_int_eq(memcmp(&c, &best, sizeof c), 0);
    for (int k = 0; k < TS_LLM_KIND_COUNT; k++) {
        if (!((used >> k) & 1u))
            continue;
        for (int sk = 0; sk < 2; sk++) {
            ts_llm_enc_config_kinds(&c, sk ? TS_SCHED_HYBRID : TS_SCHED_CKKS, TINY_SEQ,
                                    mask ^ (1u << k));
            c.log_slots = ls;
            ck_assert_msg(plan_total(m, p, &c, &costs, TS_SCHED_HYBRID, pos) >= ns,
                          "kind %s flipped is cheaper (%s structure)", ts_llm_kind_name(k),
                          sk ? "hybrid" : "ckks");
        }
    }
    /* TFHE nearly free: the softmax's and the norms' kinds in TFHE, no dearer
     * than every kind in TFHE */
    ts_sched_costs_t cheap = costs;
    cheap.roundtrip_ns = cheap.pbs_value_ns = cheap.pbs_ns = cheap.homcomp_ns = 1;
    for (size_t i = 0; i < cheap.n_lut_value; i++)
        cheap.lut_value_ns[i] = 1;
    /* (the all-TFHE assignments are candidates; in the ckks structure the
     * SiLU's look-up is dearer than its polynomial even so: 106.3 vs 104.6 s
     * here, since a conversion also takes levels and a recovery) */
    double t_cheap = 0;
    ck_assert_ts_ok(ts_llm_enc_config_best(m, p, NULL, ls, TINY_SEQ, pos, TS_LLM_PLAN_ONEHOT,
                                           &cheap, &best, &t_cheap));
    /* the deepest CKKS primitives go to TFHE: the wide first 1/x and 1/sqrt
     * (exp, 5 levels on the scores with RoPE and the cache mask folded into
     * the matrices, and the later rounds' few-level divisions: either) */
    const unsigned softmax_norms = (1u << TS_LLM_KIND_RECIP) | (1u << TS_LLM_KIND_RSQRT);
    ck_assert_uint_eq(ts_llm_enc_config_tfhe_kinds(&best) & softmax_norms, softmax_norms);
    for (int sk = 0; sk < 2; sk++) {
        ts_llm_enc_config_kinds(&c, sk ? TS_SCHED_HYBRID : TS_SCHED_CKKS, TINY_SEQ, used);
        c.log_slots = ls;
        ck_assert(t_cheap <= plan_total(m, p, &c, &cheap, TS_SCHED_HYBRID, pos));
    }
    ck_assert(ts_llm_enc_config_mean_first(&best));
    /* TFHE priced out: the ckks policy's own configuration */
    ts_sched_costs_t dear = costs;
    dear.roundtrip_ns = INT64_C(1) << 50;
    ck_assert_ts_ok(ts_llm_enc_config_best(m, p, NULL, ls, TINY_SEQ, pos, TS_LLM_PLAN_ONEHOT, &dear,
                                           &best, NULL));
    ts_llm_enc_config_policy(&c, TS_SCHED_CKKS, TINY_SEQ);
    c.log_slots = ls;
    ck_assert_int_eq(memcmp(&best, &c, sizeof c), 0);
    /* refusals */
    ck_assert_ts_status(ts_llm_enc_config_best(m, p, NULL, ls, TINY_SEQ, TINY_SEQ,
                                               TS_LLM_PLAN_ONEHOT, &costs, &best, NULL),
                        TS_EINVAL);
    ck_assert_ts_status(
        ts_llm_enc_config_best(m, p, NULL, ls, TINY_SEQ, 0, TS_LLM_PLAN_ONEHOT, NULL, &best, NULL),
        TS_EINVAL);
    ts_ckks_params_free(p);
    ts_llm_model_free(m);
    unlink(model);
    rmdir(dir);
}
END_TEST

TS_TEST_SUITE(llm_plan)
{
    Suite *s = suite_create("llm_plan");
    TCase *tc = ts_tcase("plan", 0);
    tcase_add_test(tc, test_engine_levels_model);
    tcase_add_test(tc, test_engine_recip_specs);
    tcase_add_test(tc, test_engine_plan_presets);
    tcase_add_test(tc, test_engine_plan_explain);
    tcase_add_test(tc, test_engine_config_best);
    tcase_add_test(tc, test_engine_boot_budgets);
    tcase_add_test(tc, test_engine_config_refine);
    tcase_add_test(tc, test_engine_resid_boot);
    tcase_add_test(tc, test_engine_norm_defer);
    tcase_add_test(tc, test_engine_boot_drops);
    tcase_add_test(tc, test_engine_pass_drops);
    tcase_add_loop_test(tc, test_engine_plan_counts, 0, 5);
    tcase_add_loop_test(tc, test_engine_plan_counts_gpt2, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * core/sched tests. Oracles:
 *   - brute force: on small random graphs with random cost tables, the
 *     shortest path equals the cheapest of all schedules (every bootstrap,
 *     scheme, implementation, level and recovery-level choice), simulated by
 *     an independent level tracker;
 *   - ts_sched_plan_check re-simulates every plan (levels never run out,
 *     costs add up, policy respected);
 *   - policy laws: ckks never uses TFHE, tfhe always does for non-arithmetic
 *     primitives, hybrid <= both baselines;
 *   - op counts of the Llama / GPT-2 builder for the bundled model's dims;
 *   - cost tables: round trip, the shipped default, errors with file:line.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/cmd_plan.h"
#include "core/circuits/circuits.h"
#include "core/sched/sched.h"
#include "core/sched/sched_int.h"
#include "tests/unit/ts_test.h"

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state;
static uint32_t rnd(uint32_t bound)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)((rng_state >> 33) % bound);
}

static void random_costs(ts_sched_costs_t *c, int L)
{
    memset(c, 0, sizeof *c);
    c->format = 1;
    snprintf(c->name, sizeof c->name, "random");
    c->max_level = L;
    size_t n = (size_t)L + 1;
    for (size_t l = 0; l < n; l++) {
        c->add_ns[l] = 1 + rnd(50);
        c->pmul_ns[l] = 1 + rnd(100);
        c->cmul_ns[l] = 100 + rnd(1000) * (l + 1);
        c->rot_ns[l] = 100 + rnd(800) * (l + 1);
        c->rescale_ns[l] = 10 + rnd(100);
        c->recover_ns[l] = 500 + rnd(3000) + 200 * (int64_t)l;
    }
    c->n_add = c->n_pmul = c->n_cmul = c->n_rot = c->n_rescale = c->n_recover = n;
    c->boot_ns = 1000 + rnd(6000);
    c->boot_output_level = 1 + rnd((uint32_t)L);
    c->n_batch_sizes = c->n_extract = 2;
    c->batch_sizes[0] = 1;
    c->batch_sizes[1] = 4;
    c->extract_ns[0] = 200 + rnd(1000);
    c->extract_ns[1] = c->extract_ns[0] + rnd(1000);
    c->extract_depth = rnd(2);
    c->pbs_ns = 10 + rnd(200);
    c->homcomp_ns = 10 + rnd(300);
    c->small_pmul_ns = rnd(10);
    c->trace_ns = rnd(50);
    c->n_seg = 1 + rnd(4);
}

static ts_sched_graph_t *random_graph(int n_ops)
{
    ts_sched_graph_t *g;
    ck_assert_ts_ok(ts_sched_graph_new(&g));
    for (int k = 0; k < n_ops; k++) {
        ts_sched_op_t op;
        memset(&op, 0, sizeof op);
        bool nonarith = rnd(2);
        op.kind = nonarith ? (ts_op_kind_t)(TS_OP_EXP + rnd(6)) : (ts_op_kind_t)rnd(9);
        snprintf(op.name, sizeof op.name, "op%d", k);
        op.layer = 0;
        op.in[0] = k == 0 ? TS_SCHED_FRESH : (rnd(4) ? k - 1 : (int)rnd((uint32_t)k));
        op.in[1] = k >= 2 && rnd(2) ? (int)rnd((uint32_t)k) : TS_SCHED_NONE;
        op.n_ct = 1 + rnd(2);
        op.n_impl = 1 + (nonarith ? (int)rnd(2) : 0);
        for (int j = 0; j < op.n_impl; j++) {
            snprintf(op.impl[j].name, sizeof op.impl[j].name, "i%d", j);
            op.impl[j].depth = (int)rnd(nonarith ? 5 : 2);
            op.impl[j].n_add = rnd(5);
            op.impl[j].n_pmul = rnd(5);
            op.impl[j].n_cmul = rnd(4);
            op.impl[j].n_rot = rnd(3);
            op.impl[j].n_rescale = rnd(3);
        }
        if (nonarith) {
            op.tfhe_ok = true;
            op.n_values = 1 + rnd(6);
            op.range_lo = 1;
            op.range_hi = 2;
        }
        int32_t steps[2] = {1, (int32_t)(1 + rnd(8))};
        ck_assert_ts_ok(ts_sched_graph_add_op(g, &op, steps, rnd(3), NULL));
    }
    return g;
}

/* Independent brute force: depth-first over every choice, exact level
 * tracking per value, kept values sharing the minimum of their levels. */
typedef struct bf {
    const ts_sched_graph_t *g;
    const ts_sched_costs_t *c;
    ts_sched_policy_t policy;
    int last[16];
    double best;
    long leaves;
} bf_t;

static void bf_rec(bf_t *B, size_t k, const int *lev_in, double cost)
{
    size_t n = ts_sched_graph_count(B->g);
    if (cost >= B->best)
        return;
    if (k == n) {
        B->best = cost;
        B->leaves++;
        return;
    }
    const ts_sched_op_t *op = ts_sched_graph_op(B->g, k);
    const ts_sched_costs_t *c = B->c;
    int L = (int)c->max_level, Bl = (int)c->boot_output_level;
    int lev[16];
    memcpy(lev, lev_in, sizeof lev);
    int kept = L + 1;
    for (size_t v = 0; v + 1 < k; v++)
        if (B->last[v] >= (int)k && lev[v] < kept)
            kept = lev[v];
    for (size_t v = 0; v + 1 < k; v++)
        if (B->last[v] >= (int)k)
            lev[v] = kept;
    bool mlive = k > 0 && B->last[k - 1] >= (int)k;
    for (int boot = 0; boot < 3; boot++) {
        int l2[16];
        memcpy(l2, lev, sizeof l2);
        double bc = 0;
        if (boot == 1) {
            if (!mlive)
                continue;
            l2[k - 1] = Bl;
            bc = (double)c->boot_ns * ts_sched_graph_op(B->g, k - 1)->n_ct;
        } else if (boot == 2) {
            if (kept > L)
                continue;
            for (size_t v = 0; v < k; v++)
                if (B->last[v] >= (int)k) {
                    l2[v] = Bl;
                    bc += (double)c->boot_ns * ts_sched_graph_op(B->g, v)->n_ct;
                }
        }
        int avail = L;
        for (int i = 0; i < 2; i++)
            if (op->in[i] >= 0 && l2[op->in[i]] < avail)
                avail = l2[op->in[i]];
        bool ckks = !op->tfhe_ok || B->policy != TS_SCHED_TFHE;
        bool tfhe = op->tfhe_ok && B->policy != TS_SCHED_CKKS;
        if (ckks) {
            for (int j = 0; j < op->n_impl; j++) {
                for (int l = 0; l <= avail; l++) {
                    int o;
                    double ns = ts_sched_costs_impl_ns(c, &op->impl[j], l, &o, NULL) * op->n_ct;
                    l2[k] = o;
                    bf_rec(B, k + 1, l2, cost + bc + ns);
                }
            }
        }
        if (tfhe && avail >= c->extract_depth) {
            for (int r = 0; r <= Bl; r++) {
                double ns = ts_sched_costs_convert_ns(c, op->n_values, op->n_ct, r) +
                            op->n_values * ts_sched_costs_lut_ns(c);
                l2[k] = r;
                bf_rec(B, k + 1, l2, cost + bc + ns);
            }
        }
    }
}

static double brute_force(const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                          ts_sched_policy_t policy)
{
    bf_t B = {.g = g, .c = c, .policy = policy, .best = INFINITY};
    size_t n = ts_sched_graph_count(g);
    ck_assert(n <= 16);
    for (size_t v = 0; v < n; v++)
        B.last[v] = -1;
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < 2; i++)
            if (ts_sched_graph_op(g, k)->in[i] >= 0)
                B.last[ts_sched_graph_op(g, k)->in[i]] = (int)k;
    int lev[16] = {0};
    bf_rec(&B, 0, lev, 0);
    return B.best;
}

static void assert_plan_sane(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                             const ts_sched_costs_t *c)
{
    char msg[256];
    ts_status_t st = ts_sched_plan_check(p, g, c, msg, sizeof msg);
    ck_assert_msg(st == TS_OK, "plan check: %s (%s)", msg, ts_status_name(st));
    for (size_t k = 0; k < p->n_steps; k++) {
        const ts_sched_step_t *s = &p->steps[k];
        const ts_sched_op_t *op = ts_sched_graph_op(g, k);
        ck_assert_int_ge(s->level_out, 0);
        ck_assert_int_le(s->level_in, s->level_avail);
        if (s->scheme == TS_SCHEME_CKKS && s->n_boot_inner == 0)
            ck_assert_msg(s->level_in >= op->impl[s->impl].depth, "%s: level %d < depth %d",
                          op->name, s->level_in, op->impl[s->impl].depth);
        if (s->scheme == TS_SCHEME_TFHE)
            ck_assert_int_ge(s->level_in, (int)c->extract_depth);
        if (p->policy == TS_SCHED_CKKS)
            ck_assert_int_eq(s->scheme, TS_SCHEME_CKKS);
        if (p->policy == TS_SCHED_TFHE && op->tfhe_ok)
            ck_assert_int_eq(s->scheme, TS_SCHEME_TFHE);
        if (!ts_op_kind_is_nonarith(op->kind))
            ck_assert_int_eq(s->scheme, TS_SCHEME_CKKS);
    }
}

/* -------------------------------------------------------------- tests */

START_TEST(test_sched_brute_force)
{
    rng_state = 0x5eed0001;
    int trials = ts_test_quick() ? 40 : 150;
    for (int t = 0; t < trials; t++) {
        ts_sched_costs_t c;
        random_costs(&c, 2 + (int)rnd(2));
        ts_sched_graph_t *g = random_graph(2 + (int)rnd(3));
        double tot[3];
        for (int pol = 0; pol < 3; pol++) {
            ts_sched_plan_t *p = NULL;
            ck_assert_ts_ok(ts_sched_plan_new(g, &c, (ts_sched_policy_t)pol, &p));
            assert_plan_sane(p, g, &c);
            double bf = brute_force(g, &c, (ts_sched_policy_t)pol);
            ck_assert_msg(fabs(bf - p->total_ns) <= 1e-9 * (bf + 1),
                          "trial %d policy %s: shortest path %.3f, brute force %.3f", t,
                          ts_sched_policy_name((ts_sched_policy_t)pol), p->total_ns, bf);
            tot[pol] = p->total_ns;
            ts_sched_plan_free(p);
        }
        ck_assert(tot[TS_SCHED_HYBRID] <= tot[TS_SCHED_CKKS] + 1e-9);
        ck_assert(tot[TS_SCHED_HYBRID] <= tot[TS_SCHED_TFHE] + 1e-9);
        ts_sched_graph_free(g);
    }
}
END_TEST

static const ts_sched_model_dims_t bundled = {
    .dim = 64,
    .hidden_dim = 172,
    .n_layers = 4,
    .n_heads = 4,
    .n_kv_heads = 4,
    .vocab = 512,
    .seq_pos = 15,
    .act = TS_ACT_SWIGLU,
    .norm = TS_NORM_RMS,
};

START_TEST(test_sched_llama_counts)
{
    ts_sched_graph_t *g;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&bundled, &g));
    /* embed + 4 x (q k v o w1 w3 w2) + lm_head */
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_MATVEC), 1 + 4 * 7 + 1);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_INVSQRT), 2 * 4 + 1);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_SILU), 4);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_GELU), 0);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_EXP), 4);
    /* softmax range 32: k = 5 normalize-and-square steps per layer */
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_INV), 4 * 5);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_ROPE), 8);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_ATTN_QK), 4);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_ATTN_PV), 4);
    /* residual adds: 2 per layer */
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_ADD_CC), 8);
    /* Every op's inputs point backwards; the lm_head is last and vocab x dim. */
    size_t n = ts_sched_graph_count(g);
    const ts_sched_op_t *last = ts_sched_graph_op(g, n - 1);
    ck_assert_str_eq(last->name, "lm_head");
    ck_assert_uint_eq(last->rows, 512);
    ck_assert_uint_eq(last->cols, 64);
    for (size_t k = 0; k < n; k++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, k);
        ck_assert(op->in[0] == TS_SCHED_FRESH || (op->in[0] >= 0 && (size_t)op->in[0] < k));
        ck_assert_int_eq(op->tfhe_ok, ts_op_kind_is_nonarith(op->kind));
    }
    /* Scores of 4 heads at context 16: 64 values for exp, 4 for each 1/x. */
    for (size_t k = 0; k < n; k++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, k);
        if (op->kind == TS_OP_EXP)
            ck_assert_uint_eq(op->n_values, 4 * 16);
        if (op->kind == TS_OP_INV)
            ck_assert_uint_eq(op->n_values, 4);
        if (op->kind == TS_OP_SILU)
            ck_assert_uint_eq(op->n_values, 172);
    }
    ts_sched_graph_free(g);

    /* GPT-2 shape: 6 matvecs per layer, GELU, LayerNorm, no RoPE. */
    ts_sched_model_dims_t d = bundled;
    d.act = TS_ACT_GELU;
    d.norm = TS_NORM_LAYER;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&d, &g));
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_MATVEC), 1 + 4 * 6 + 1);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_GELU), 4);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_ROPE), 0);
    ck_assert_uint_eq(ts_sched_graph_count_kind(g, TS_OP_INVSQRT), 9);
    ts_sched_graph_free(g);

    /* Grouped-query attention and bad dims. */
    d = bundled;
    d.n_kv_heads = 3;
    ck_assert_ts_status(ts_sched_graph_build_decoder(&d, &g), TS_EINVAL);
    d.n_kv_heads = 2;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&d, &g));
    ts_sched_graph_free(g);
    d.dim = 0;
    ck_assert_ts_status(ts_sched_graph_build_decoder(&d, &g), TS_EINVAL);
}
END_TEST

START_TEST(test_sched_policies_llama)
{
    ts_sched_costs_t c;
    ts_sched_costs_default(&c);
    ts_sched_graph_t *g;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&bundled, &g));
    ts_sched_plan_t *p[3];
    for (int pol = 0; pol < 3; pol++) {
        ck_assert_ts_ok(ts_sched_plan_new(g, &c, (ts_sched_policy_t)pol, &p[pol]));
        assert_plan_sane(p[pol], g, &c);
    }
    ck_assert_uint_eq(p[TS_SCHED_CKKS]->n_tfhe, 0);
    ck_assert_uint_eq(p[TS_SCHED_TFHE]->n_tfhe, 4 + 20 + 9 + 4);
    ck_assert(p[TS_SCHED_HYBRID]->total_ns <= p[TS_SCHED_CKKS]->total_ns);
    ck_assert(p[TS_SCHED_HYBRID]->total_ns <= p[TS_SCHED_TFHE]->total_ns);
    ck_assert_uint_gt(p[TS_SCHED_CKKS]->n_rot_steps, 0);

    char *json = NULL, *text = NULL;
    size_t jl = 0, tl = 0;
    ck_assert_ts_ok(ts_sched_plan_to_json(p[TS_SCHED_HYBRID], g, &json, &jl));
    ck_assert_uint_eq(strlen(json), jl);
    ck_assert(json[0] == '{');
    ck_assert_ptr_nonnull(strstr(json, "\"policy\":\"hybrid\""));
    ck_assert_ptr_nonnull(strstr(json, "\"name\":\"lm_head\""));
    ck_assert_ptr_nonnull(strstr(json, "\"rotations\":["));
    long depth = 0;
    for (size_t i = 0; i < jl; i++) {
        depth += json[i] == '{' || json[i] == '[';
        depth -= json[i] == '}' || json[i] == ']';
        ck_assert(depth >= 0);
    }
    ck_assert_int_eq(depth, 0);
    ck_assert_ts_ok(ts_sched_plan_explain(p[TS_SCHED_HYBRID], g, &c, &text, &tl));
    ck_assert_ptr_nonnull(strstr(text, "predicted latency"));
    ck_assert_ptr_nonnull(strstr(text, "L0.ffn_norm.invsqrt"));
    printf("%s", text);
    for (int pol = 0; pol < 3; pol++)
        printf("policy %-6s %.1f s, %u bootstraps, %u in TFHE\n",
               ts_sched_policy_name((ts_sched_policy_t)pol), p[pol]->total_ns / 1e9, p[pol]->n_boot,
               p[pol]->n_tfhe);
    ts_free(json);
    ts_free(text);
    for (int pol = 0; pol < 3; pol++)
        ts_sched_plan_free(p[pol]);
    ts_sched_graph_free(g);
}
END_TEST

START_TEST(test_sched_explain_deltas)
{
    /* The alternatives priced by the forward/backward passes equal full
     * re-solves with that one primitive pinned to the other scheme; under
     * hybrid none is cheaper than the plan. */
    rng_state = 0x5eed0002;
    for (int t = 0; t < 40; t++) {
        ts_sched_costs_t c;
        random_costs(&c, 2 + (int)rnd(3));
        ts_sched_graph_t *g = random_graph(3 + (int)rnd(4));
        size_t n = ts_sched_graph_count(g);
        for (int pol = 0; pol < 3; pol++) {
            ts_sched_plan_t *p = NULL;
            ck_assert_ts_ok(ts_sched_plan_new(g, &c, (ts_sched_policy_t)pol, &p));
            double alt[16];
            ck_assert_ts_ok(ts_sched_plan_alternatives(p, g, &c, alt));
            for (size_t k = 0; k < n; k++) {
                const ts_sched_op_t *op = ts_sched_graph_op(g, k);
                if (!op->tfhe_ok) {
                    ck_assert(isnan(alt[k]));
                    continue;
                }
                int8_t force[16];
                memset(force, -1, sizeof force);
                force[k] = p->steps[k].scheme == TS_SCHEME_TFHE ? TS_SCHEME_CKKS : TS_SCHEME_TFHE;
                ts_sched_plan_t *q = NULL;
                ts_status_t st = ts_sched_plan_new_pinned(g, &c, (ts_sched_policy_t)pol, force, &q);
                if (st == TS_ELEVEL) {
                    ck_assert(isinf(alt[k]));
                    continue;
                }
                ck_assert_ts_ok(st);
                ck_assert_int_eq(q->steps[k].scheme, force[k]);
                ck_assert_msg(fabs(q->total_ns - alt[k]) <= 1e-9 * (alt[k] + 1),
                              "trial %d op %zu: alternative %.3f, re-solve %.3f", t, k, alt[k],
                              q->total_ns);
                if (pol == TS_SCHED_HYBRID)
                    ck_assert(alt[k] >= p->total_ns - 1e-9);
                ts_sched_plan_free(q);
            }
            char *text = NULL;
            ck_assert_ts_ok(ts_sched_plan_explain(p, g, &c, &text, NULL));
            ck_assert_ptr_nonnull(strstr(text, "plan: policy"));
            if (pol == TS_SCHED_HYBRID)
                ck_assert_ptr_null(strstr(text, "forced by policy"));
            ts_free(text);
            ts_sched_plan_free(p);
        }
        ts_sched_graph_free(g);
    }
}
END_TEST

START_TEST(test_sched_costs_files)
{
    ts_sched_costs_t def, c;
    ts_sched_costs_default(&def);
    char path[] = "/tmp/ts_sched_costsXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_ts_ok(ts_sched_costs_save(&def, path));
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_sched_costs_load(path, &c, &err));
    ck_assert_int_eq(memcmp(&c.add_ns, &def.add_ns, sizeof def.add_ns), 0);
    ck_assert_int_eq(c.boot_ns, def.boot_ns);
    ck_assert_str_eq(c.note, def.note);
    ck_assert_int_eq(c.estimated, true);
    ck_assert_int_eq(c.workers, 0);
    /* the look-up workers round-trip */
    def.workers = 2;
    ck_assert_ts_ok(ts_sched_costs_save(&def, path));
    ck_assert_ts_ok(ts_sched_costs_load(path, &c, &err));
    ck_assert_int_eq(c.workers, 2);
    def.workers = 0;
    /* the kernels a CPU table was measured with round-trip; a table without
     * them (the default) or of another backend never mismatches */
    ck_assert_str_eq(c.cpu, "");
    ck_assert(!ts_sched_costs_cpu_mismatch(&c, "avx2"));
    snprintf(def.cpu, sizeof def.cpu, "avx512");
    ck_assert_ts_ok(ts_sched_costs_save(&def, path));
    ck_assert_ts_ok(ts_sched_costs_load(path, &c, &err));
    ck_assert_str_eq(c.cpu, "avx512");
    ck_assert(ts_sched_costs_cpu_mismatch(&c, "avx2"));
    ck_assert(!ts_sched_costs_cpu_mismatch(&c, "avx512"));
    ck_assert(!ts_sched_costs_cpu_mismatch(&c, ""));
    snprintf(c.backend, sizeof c.backend, "gpu");
    ck_assert(!ts_sched_costs_cpu_mismatch(&c, "avx2"));
    def.cpu[0] = 0;
    unlink(path);

    /* The shipped default equals the built-in one. */
    ck_assert_ts_ok(ts_sched_costs_load("configs/costs/cpu-default.yaml", &c, &err));
    ck_assert_int_eq(c.max_level, def.max_level);
    for (int l = 0; l <= def.max_level; l++) {
        ck_assert_int_eq(c.cmul_ns[l], def.cmul_ns[l]);
        ck_assert_int_eq(c.rot_ns[l], def.rot_ns[l]);
        ck_assert_int_eq(c.recover_ns[l], def.recover_ns[l]);
    }
    ck_assert_int_eq(c.extract_ns[2], def.extract_ns[2]);
    ck_assert_int_eq(c.estimated, true);

    /* Errors carry file:line. */
    const char *bad_len =
        "format: 1\n"
        "ckks:\n"
        "  max_level: 2\n"
        "  add_ns: [1, 2, 3]\n"
        "  pmul_ns: [1,  2]\n"
        "  cmul_ns: [1, 2, 3]\n"
        "  rot_ns: [1, 2, 3]\n"
        "  rescale_ns: [1, 2, 3]\n"
        "bootstrap: {latency_ns: 10, output_level: 2}\n"
        "convert:\n"
        "  batch_sizes: [1]\n"
        "  extract_ns: [5]\n"
        "  extract_depth: 1\n"
        "  recover_ns: [1, 2, 3]\n"
        "tfhe: {pbs_ns: 1, homcomp_ns: 1, small_pmul_ns: 1, trace_ns: 1, n_seg: 4}\n";
    ck_assert_ts_status(ts_sched_costs_load_string(bad_len, strlen(bad_len), "t.yaml", &c, &err),
                        TS_ECONFIG);
    char line[512];
    ts_cfg_error_format(&err, line, sizeof line);
    ck_assert_msg(strncmp(line, "t.yaml:5:", 9) == 0, "got '%s'", line);
    ck_assert_ptr_nonnull(strstr(line, "pmul_ns"));

    /* The same table with the list fixed loads. */
    char good[2048];
    snprintf(good, sizeof good, "%s", bad_len);
    char *pm = strstr(good, "pmul_ns: [1,  2]");
    memcpy(pm, "pmul_ns: [1,2,3]", 16);
    ck_assert_ts_ok(ts_sched_costs_load_string(good, strlen(good), "t.yaml", &c, &err));

    const char *unknown = "format: 1\nckks:\n  max_level: 2\n  bogus: 3\n";
    ck_assert_ts_status(ts_sched_costs_load_string(unknown, strlen(unknown), "u.yaml", &c, &err),
                        TS_ECONFIG);
    ck_assert_int_eq(err.line, 4);

    const char *syntax = "format: 1\nckks: [\n";
    ck_assert_int_ne(ts_sched_costs_load_string(syntax, strlen(syntax), "s.yaml", &c, &err), TS_OK);
    ck_assert_int_gt(err.line, 0);

    /* JSON is read too (YAML flow style). */
    const char *json = "{\"format\": 1, \"ckks\": {\"max_level\": 1, \"add_ns\": [1, 2], "
                       "\"pmul_ns\": [1, 2], \"cmul_ns\": [1, 2], \"rot_ns\": [1, 2], "
                       "\"rescale_ns\": [1, 2]}, \"bootstrap\": {\"latency_ns\": 9, "
                       "\"output_level\": 1}, \"convert\": {\"batch_sizes\": [1, 8], "
                       "\"extract_ns\": [3, 4], \"extract_depth\": 0, \"recover_ns\": [5, 6]}, "
                       "\"tfhe\": {\"pbs_ns\": 1, \"homcomp_ns\": 1, \"small_pmul_ns\": 1, "
                       "\"trace_ns\": 1, \"n_seg\": 2}}";
    ck_assert_ts_ok(ts_sched_costs_load_string(json, strlen(json), "j.json", &c, &err));
    ck_assert_int_eq(c.recover_ns[1], 6);

    /* Extended to a deeper chain: each list continues by its last step,
     * never below its top (a flat or falling top stays flat), and the
     * result validates. */
    c.cmul_ns[0] = 10;
    c.cmul_ns[1] = 4;
    ts_sched_costs_extend(&c, 4);
    ck_assert_int_eq(c.max_level, 4);
    ck_assert_uint_eq(c.n_add, 5);
    ck_assert_int_eq(c.add_ns[4], 1 + 4 * 1);
    ck_assert_int_eq(c.recover_ns[3], 6 + 2 * 1);
    ck_assert_int_eq(c.cmul_ns[4], 4);
    ck_assert_uint_eq(c.n_encode, 0); /* not measured: stays absent */
    ck_assert_ts_ok(ts_sched_costs_validate(&c, NULL, 0));
    ts_sched_costs_extend(&c, 2); /* shallower: nothing changes */
    ck_assert_int_eq(c.max_level, 4);
    ts_sched_costs_extend(&c, 1000);
    ck_assert_int_eq(c.max_level, TS_SCHED_MAX_LEVELS - 1);
    ck_assert_int_eq(c.rot_ns[TS_SCHED_MAX_LEVELS - 1], 2 + (TS_SCHED_MAX_LEVELS - 2));
    ck_assert_ts_ok(ts_sched_costs_validate(&c, NULL, 0));

    ck_assert_ts_status(ts_sched_costs_load("/nonexistent/costs.yaml", &c, &err), TS_EIO);
}
END_TEST

/* An empty file at path (a table's presence is all the lookup reads). */
static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

/* ts_sched_costs_shipped(dir, "p16", backend, kernels) finds want ("": none). */
static void expect_shipped(const char *dir, const char *backend, const char *kernels,
                           const char *want)
{
    char path[300] = "x";
    ts_status_t st = ts_sched_costs_shipped(dir, "p16", backend, kernels, path, sizeof path);
    ck_assert_int_eq(st, want[0] ? TS_OK : TS_ENOENT);
    ck_assert_str_eq(path, want);
}

/* The shipped table of a preset: the one measured with this CPU's kernels
 * first (cpu-KERNELS-PARAMS.yaml), else the preset's (cpu-PARAMS.yaml); a
 * GPU's (gpu-[KERNELS-]PARAMS.yaml) only for a GPU. */
START_TEST(test_sched_costs_shipped)
{
    char dir[] = "/tmp/ts_sched_shippedXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[300], generic[300], avx2[300], gpu[300], gpu90[300];
    snprintf(generic, sizeof generic, "%s/cpu-p16.yaml", dir);
    snprintf(avx2, sizeof avx2, "%s/cpu-avx2-p16.yaml", dir);
    snprintf(gpu, sizeof gpu, "%s/gpu-p16.yaml", dir);
    snprintf(gpu90, sizeof gpu90, "%s/gpu-sm90-p16.yaml", dir);
    /* neither: TS_ENOENT and an empty path */
    expect_shipped(dir, "cpu", "avx2", "");
    /* the preset's table whatever the kernels */
    touch(generic);
    expect_shipped(dir, "cpu", "avx2", generic);
    expect_shipped(dir, "cpu", NULL, generic);
    /* a table of the machine's kernels wins; other kernels keep the preset's */
    touch(avx2);
    expect_shipped(dir, "cpu", "avx2", avx2);
    expect_shipped(dir, "cpu", "avx512", generic);
    expect_shipped(dir, "cpu", "", generic);
    /* another preset has neither */
    ck_assert_int_eq(ts_sched_costs_shipped(dir, "p15", "cpu", "avx2", path, sizeof path),
                     TS_ENOENT);
    /* the kernels' table alone */
    unlink(generic);
    expect_shipped(dir, "cpu", "avx2", avx2);
    expect_shipped(dir, "cpu", "portable", "");
    /* no backend named: the CPU's */
    expect_shipped(dir, NULL, "avx2", avx2);
    expect_shipped(dir, "", "avx2", avx2);
    /* a GPU takes the GPU's tables only, never a CPU's; a CPU never a GPU's */
    expect_shipped(dir, "gpu", NULL, "");
    touch(gpu);
    expect_shipped(dir, "gpu", NULL, gpu);
    expect_shipped(dir, "gpu", "sm90", gpu);
    touch(gpu90);
    expect_shipped(dir, "gpu", "sm90", gpu90);
    expect_shipped(dir, "cpu", "avx2", avx2);
    expect_shipped(dir, "cpu", "portable", "");
    /* arguments: no folder or preset, another backend, a path that does not fit */
    ck_assert_int_eq(ts_sched_costs_shipped(NULL, "p16", "cpu", "avx2", path, sizeof path),
                     TS_EINVAL);
    ck_assert_int_eq(ts_sched_costs_shipped(dir, "", "cpu", "avx2", path, sizeof path), TS_EINVAL);
    ck_assert_int_eq(ts_sched_costs_shipped(dir, "p16", "tpu", NULL, path, sizeof path), TS_EINVAL);
    ck_assert_int_eq(ts_sched_costs_shipped(dir, "p16", "devemu", NULL, path, sizeof path),
                     TS_EINVAL);
    ck_assert_int_eq(ts_sched_costs_shipped(dir, "p16", "cpu", "avx2", path, 8), TS_EINVAL);
    ck_assert_str_eq(path, "");
    ck_assert_int_eq(ts_sched_costs_shipped(dir, "p16", "cpu", "avx2", NULL, 8), TS_EINVAL);
    unlink(gpu);
    unlink(gpu90);
    unlink(avx2);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* ts_cmd_plan(argc, argv) with stdout in the file out, which must succeed;
 * what it printed into buf (out removed). */
static void plan_stdout(int argc, char **argv, const char *out, char *buf, size_t size)
{
    ck_assert_ptr_nonnull(freopen(out, "w", stdout));
    ck_assert_int_eq(ts_cmd_plan(argc, argv), 0);
    fflush(stdout);
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stdout));
    ts_test_read_file(out, buf, size);
    unlink(out);
}

/* The BSGS entries of a table: all five or none (file:line otherwise), saved
 * and loaded back, and an implementation's n_hoist .. n_moddown priced by
 * them; without them, as rotations, products and encodings of their own. */
START_TEST(test_sched_costs_bsgs)
{
    const char *base =
        "format: 1\n"
        "ckks:\n"
        "  max_level: 2\n"
        "  add_ns: [1, 2, 3]\n"
        "  pmul_ns: [10, 20, 30]\n"
        "  cmul_ns: [100, 200, 300]\n"
        "  rot_ns: [1000, 2000, 3000]\n"
        "  rescale_ns: [5, 6, 7]\n"
        "  encode_ns: [40, 50, 60]\n"
        "%s"
        "bootstrap: {latency_ns: 10, output_level: 2}\n"
        "convert:\n"
        "  batch_sizes: [1]\n"
        "  extract_ns: [5]\n"
        "  extract_depth: 1\n"
        "  recover_ns: [1, 2, 3]\n"
        "tfhe: {pbs_ns: 1, homcomp_ns: 1, small_pmul_ns: 1, trace_ns: 1, n_seg: 4}\n";
    const char *lists = "  bsgs_hoist_ns: [300, 400, 500]\n"
                        "  bsgs_baby_ns: [110, 120, 130]\n"
                        "  bsgs_diag_ns: [7, 8, 9]\n"
                        "  bsgs_giant_ns: [210, 220, 230]\n"
                        "  bsgs_moddown_ns: [70, 80, 90]\n";
    char text[4096];
    ts_sched_costs_t c, plain, back;
    ts_cfg_error_t err;
    snprintf(text, sizeof text, base, "");
    ck_assert_ts_ok(ts_sched_costs_load_string(text, strlen(text), "p.yaml", &plain, &err));
    ck_assert_uint_eq(plain.n_bsgs_diag, 0);
    snprintf(text, sizeof text, base, lists);
    ck_assert_ts_ok(ts_sched_costs_load_string(text, strlen(text), "b.yaml", &c, &err));
    ck_assert_uint_eq(c.n_bsgs_moddown, 3);
    ck_assert_int_eq(c.bsgs_giant_ns[1], 220);

    /* a matvec of 16 diagonals (4 x 4 steps, hoisted), and one of the same
     * x that shares its baby rotations, at level 2 (depth 0: all there) */
    ts_sched_impl_t im = {.name = "bsgs", .depth = 0, .n_rescale = 1};
    im.n_hoist = 1;
    im.n_baby = 3;
    im.n_diag = 16;
    im.n_giant = 3;
    im.n_moddown = 1;
    int lv = -1;
    double want = 500 + 3 * 130 + 16 * 9 + 3 * 230 + 90 + 7;
    ck_assert_double_eq_tol(ts_sched_costs_impl_ns(&c, &im, 2, &lv, NULL), want, 1e-9);
    ck_assert_int_eq(lv, 2);
    ts_sched_impl_t sh = im;
    sh.n_hoist = sh.n_baby = 0;
    ck_assert_double_eq_tol(ts_sched_costs_impl_ns(&c, &sh, 2, &lv, NULL), want - 500 - 3 * 130,
                            1e-9);
    /* without the entries: 6 rotations, 16 products and encodings, no
     * hoist or ModDown */
    double old = 6 * 3000 + 16 * (30 + 60) + 7;
    ck_assert_double_eq_tol(ts_sched_costs_impl_ns(&plain, &im, 2, &lv, NULL), old, 1e-9);

    /* saved and loaded back; extended with the rest */
    char path[] = "/tmp/ts_sched_bsgsXXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_ts_ok(ts_sched_costs_save(&c, path));
    ck_assert_ts_ok(ts_sched_costs_load(path, &back, &err));
    for (int l = 0; l <= 2; l++) {
        ck_assert_int_eq(back.bsgs_hoist_ns[l], c.bsgs_hoist_ns[l]);
        ck_assert_int_eq(back.bsgs_baby_ns[l], c.bsgs_baby_ns[l]);
        ck_assert_int_eq(back.bsgs_diag_ns[l], c.bsgs_diag_ns[l]);
        ck_assert_int_eq(back.bsgs_giant_ns[l], c.bsgs_giant_ns[l]);
        ck_assert_int_eq(back.bsgs_moddown_ns[l], c.bsgs_moddown_ns[l]);
    }
    /* the period bootstrap: both keys or neither, a power of two; round trip */
    ck_assert_int_eq(back.boot_period_ns, 0);
    c.boot_period_ns = 7;
    ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
    c.boot_period_slots = 48;
    ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
    c.boot_period_slots = 64;
    ck_assert_ts_ok(ts_sched_costs_validate(&c, NULL, 0));
    ck_assert_ts_ok(ts_sched_costs_save(&c, path));
    ck_assert_ts_ok(ts_sched_costs_load(path, &back, &err));
    ck_assert_int_eq(back.boot_period_ns, 7);
    ck_assert_int_eq(back.boot_period_slots, 64);
    /* bootstraps by slot count: equal lengths, increasing powers of two,
     * positive; saved and loaded back */
    ck_assert_uint_eq(back.n_boot_slots, 0);
    const int64_t bs[3] = {512, 2048, 8192}, bn[3] = {3000, 3400, 5000};
    memcpy(c.boot_slots, bs, sizeof bs);
    memcpy(c.boot_slots_ns, bn, sizeof bn);
    c.n_boot_slots = 3;
    c.n_boot_slots_ns = 2;
    ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
    c.n_boot_slots_ns = 3;
    ck_assert_ts_ok(ts_sched_costs_validate(&c, NULL, 0));
    c.boot_slots[1] = 1000;
    ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
    c.boot_slots[1] = 512; /* not increasing */
    ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
    c.boot_slots[1] = 2048;
    c.boot_slots_ns[2] = 0;
    ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
    c.boot_slots_ns[2] = 5000;
    ck_assert_ts_ok(ts_sched_costs_save(&c, path));
    ck_assert_ts_ok(ts_sched_costs_load(path, &back, &err));
    ck_assert_uint_eq(back.n_boot_slots, 3);
    ck_assert_int_eq(memcmp(back.boot_slots, bs, sizeof bs), 0);
    ck_assert_int_eq(memcmp(back.boot_slots_ns, bn, sizeof bn), 0);
    /* priced by an operator's slots: the period bootstrap where it matches, an
     * entry, log-linear between two, the nearest outside, the main one when
     * the operator's slots are unknown */
    {
        ts_sched_op_t op = {0};
        c.boot_ns = 2900;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 2900, 1e-9);
        op.boot_log_slots = 6;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 7, 1e-9); /* the period's */
        op.boot_log_slots = 11;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 3400, 1e-9);
        op.boot_log_slots = 10;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 3200, 1e-9);
        op.boot_log_slots = 12;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 4200, 1e-9);
        op.boot_log_slots = 8;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 3000, 1e-9);
        op.boot_log_slots = 15;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 5000, 1e-9);
        c.n_boot_slots = c.n_boot_slots_ns = 0;
        ck_assert_double_eq_tol(ts__sched_boot_ns(&c, &op), 2900, 1e-9);
    }
    /* a diagonal by slot count: the table's slots among them; an operator's
     * diagonals priced at its ciphertexts' slots against the table's */
    {
        const int64_t ds[3] = {512, 1024, 4096}, dn[3] = {6, 9, 30};
        c.slots = 1024;
        memcpy(c.diag_slots, ds, sizeof ds);
        memcpy(c.diag_slots_ns, dn, sizeof dn);
        c.n_diag_slots = 3;
        c.n_diag_slots_ns = 2;
        ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
        c.n_diag_slots_ns = 3;
        ck_assert_ts_ok(ts_sched_costs_validate(&c, NULL, 0));
        c.slots = 2048; /* not among them */
        ck_assert_ts_status(ts_sched_costs_validate(&c, NULL, 0), TS_ECONFIG);
        c.slots = 1024;
        ck_assert_ts_ok(ts_sched_costs_save(&c, path));
        ck_assert_ts_ok(ts_sched_costs_load(path, &back, &err));
        ck_assert_uint_eq(back.n_diag_slots, 3);
        ck_assert_int_eq(memcmp(back.diag_slots_ns, dn, sizeof dn), 0);
        ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 10), 1.0, 1e-12);
        ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 0), 1.0, 1e-12);
        ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 12), 30.0 / 9.0, 1e-12);
        ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 11), 19.5 / 9.0, 1e-12);
        ck_assert_double_eq_tol(ts_sched_costs_encode_scale(&c, 8), 6.0 / 9.0, 1e-12);
        ck_assert_double_eq_tol(ts_sched_costs_impl_ns_slots(&c, &im, 2, 12, &lv, NULL),
                                want + 16 * 9 * (30.0 / 9.0 - 1.0), 1e-9);
        ck_assert_double_eq_tol(ts_sched_costs_impl_ns_slots(&c, &im, 2, 10, &lv, NULL), want,
                                1e-9);
        c.n_diag_slots = c.n_diag_slots_ns = 0;
        ck_assert_double_eq_tol(ts_sched_costs_impl_ns_slots(&c, &im, 2, 12, &lv, NULL), want,
                                1e-9);
    }
    unlink(path);
    ts_sched_costs_extend(&back, 4);
    ck_assert_uint_eq(back.n_bsgs_baby, 5);
    ck_assert_int_eq(back.bsgs_baby_ns[4], 150);
    ck_assert_ts_ok(ts_sched_costs_validate(&back, NULL, 0));

    /* four of five: an error naming the missing one */
    char some[1024];
    snprintf(some, sizeof some, "%s", lists);
    char *gi = strstr(some, "  bsgs_giant_ns");
    char *md = strstr(some, "  bsgs_moddown_ns");
    memmove(gi, md, strlen(md) + 1);
    snprintf(text, sizeof text, base, some);
    ck_assert_ts_status(ts_sched_costs_load_string(text, strlen(text), "s.yaml", &c, &err),
                        TS_ECONFIG);
    char line[512];
    ts_cfg_error_format(&err, line, sizeof line);
    ck_assert_msg(strstr(line, "bsgs_giant_ns") != NULL, "got '%s'", line);
    /* a short list: its own line */
    snprintf(some, sizeof some, "%s", lists);
    char *d9 = strstr(some, "[7, 8, 9]");
    memcpy(d9, "[7, 8]   ", 9);
    snprintf(text, sizeof text, base, some);
    ck_assert_ts_status(ts_sched_costs_load_string(text, strlen(text), "d.yaml", &c, &err),
                        TS_ECONFIG);
    ts_cfg_error_format(&err, line, sizeof line);
    ck_assert_msg(strncmp(line, "d.yaml:12:", 10) == 0, "got '%s'", line);
}
END_TEST

START_TEST(test_sched_graph_errors)
{
    ts_sched_graph_t *g;
    ck_assert_ts_ok(ts_sched_graph_new(&g));
    ts_sched_op_t op;
    memset(&op, 0, sizeof op);
    op.kind = TS_OP_ADD_CP;
    op.in[0] = 3; /* no such value yet */
    op.in[1] = TS_SCHED_NONE;
    op.n_ct = 1;
    op.n_impl = 1;
    ck_assert_ts_status(ts_sched_graph_add_op(g, &op, NULL, 0, NULL), TS_EINVAL);
    op.in[0] = TS_SCHED_FRESH;
    op.tfhe_ok = true; /* TFHE on arithmetic */
    ck_assert_ts_status(ts_sched_graph_add_op(g, &op, NULL, 0, NULL), TS_EINVAL);
    op.tfhe_ok = false;
    int id = -5;
    ck_assert_ts_ok(ts_sched_graph_add_op(g, &op, NULL, 0, &id));
    ck_assert_int_eq(id, 0);
    ck_assert_ts_status(ts_sched_graph_add_nonarith(g, TS_OP_INV, "x", 0, 0, 1, 1, 0.0, 1.0, NULL),
                        TS_EINVAL);
    ck_assert_ts_status(ts_sched_graph_add_nonarith(g, TS_OP_MATVEC, "x", 0, 0, 1, 1, 1, 2, NULL),
                        TS_EINVAL);
    ts_sched_costs_t c;
    ts_sched_costs_default(&c);
    ts_sched_plan_t *p;
    ck_assert_ts_ok(ts_sched_plan_new(g, &c, TS_SCHED_HYBRID, &p));
    ts_sched_plan_free(p);
    c.n_pmul = 3;
    ck_assert_ts_status(ts_sched_plan_new(g, &c, TS_SCHED_HYBRID, &p), TS_EINVAL);
    ts_sched_graph_free(g);
    ts_sched_graph_free(NULL);
    ts_sched_plan_free(NULL);

    ts_sched_policy_t pol;
    ck_assert_ts_ok(ts_sched_policy_parse("tfhe", &pol));
    ck_assert_int_eq(pol, TS_SCHED_TFHE);
    ck_assert_ts_status(ts_sched_policy_parse("mixed", &pol), TS_EINVAL);
}
END_TEST

START_TEST(test_sched_alloc_failures)
{
    /* Every allocation failure along build + plan + json + explain is clean. */
    ts_sched_costs_t c;
    ts_sched_costs_default(&c);
    ts_sched_model_dims_t d = bundled;
    d.n_layers = 1;
    for (uint64_t n = 1; n < 400; n++) {
        int64_t live = ts_alloc_live();
        ts_alloc_fail_after(n, false);
        ts_sched_graph_t *g = NULL;
        ts_sched_plan_t *p = NULL;
        char *j = NULL, *t = NULL;
        ts_status_t st = ts_sched_graph_build_decoder(&d, &g);
        if (st == TS_OK)
            st = ts_sched_plan_new(g, &c, TS_SCHED_HYBRID, &p);
        if (st == TS_OK)
            st = ts_sched_plan_to_json(p, g, &j, NULL);
        if (st == TS_OK)
            st = ts_sched_plan_explain(p, g, &c, &t, NULL);
        ts_alloc_fail_after(0, false);
        ck_assert(st == TS_OK || st == TS_ENOMEM);
        ts_free(j);
        ts_free(t);
        ts_sched_plan_free(p);
        ts_sched_graph_free(g);
        ck_assert_int_eq(ts_alloc_live(), live);
        if (st == TS_OK)
            break;
    }
}
END_TEST

START_TEST(test_sched_cmd_plan)
{
    /* `tessera plan` end to end (output discarded; this runs in a forked child). */
    ck_assert_ptr_nonnull(freopen("/dev/null", "w", stdout));
    char path[512];
    snprintf(path, sizeof path, "%s/aidreams260K.bin", ts_test_model_dir());
    char *a1[] = {"plan", "--model", path, "--policy", "all", NULL};
    ck_assert_int_eq(ts_cmd_plan(5, a1), 0);
    char *a2[] = {"plan",   "--dims",  "64,172,4,4,4,512",
                  "--json", "--costs", "configs/costs/cpu-default.yaml",
                  NULL};
    ck_assert_int_eq(ts_cmd_plan(6, a2), 0);
    char *a3[] = {"plan", "--dim",   "64",  "--hidden", "172",  "--layers", "2",    "--heads",
                  "4",    "--vocab", "512", "--arch",   "gpt2", "--policy", "tfhe", NULL};
    ck_assert_int_eq(ts_cmd_plan(15, a3), 0);
    char *a4[] = {"plan", "--dims", "64,172,4", NULL};
    ck_assert_int_eq(ts_cmd_plan(3, a4), 2);
    char *a5[] = {"plan", "--dims", "64,172,4,4,4,512", "--costs", "/nonexistent.yaml", NULL};
    ck_assert_int_eq(ts_cmd_plan(5, a5), 1);
    char *a6[] = {"plan", "--dims", "64,172,4,3,3,512", NULL}; /* 64 % 3 != 0 */
    ck_assert_int_eq(ts_cmd_plan(3, a6), 1);
    char *a7[] = {"plan", "--policy", "mixed", "--dims", "64,172,4,4,4,512", NULL};
    ck_assert_int_eq(ts_cmd_plan(5, a7), 2);
    /* the engine's plan at a preset with a shipped measured table uses it */
    char out[] = "/tmp/ts_plan_outXXXXXX";
    int fd = mkstemp(out);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char *a8[] = {"plan", "--model",  path,   "--params", "boot-n16-dense", "--pos", "0", "--slots",
                  "1024", "--policy", "ckks", "--json",   "--for",          "cpu",   NULL};
    static char buf[1 << 20];
    plan_stdout(14, a8, out, buf, sizeof buf);
    /* the table of this machine's CPU kernels where one ships (avx2), else
     * the preset's (measured with avx512) */
    char shipped[300], want[200];
    ck_assert_ts_ok(ts_sched_costs_shipped("configs/costs", "boot-n16-dense", "cpu",
                                           ts_cpu_kernels(), shipped, sizeof shipped));
    {
        ts_sched_costs_t sc;
        ts_cfg_error_t serr;
        ck_assert_ts_ok(ts_sched_costs_load(shipped, &sc, &serr));
        snprintf(want, sizeof want, "\"costs\":\"%s\"", sc.name);
    }
    ck_assert_ptr_nonnull(strstr(buf, want));
    {
        /* --for gpu: a GPU's table where one ships, never a CPU's (none
         * ships yet: the built-in estimate) */
        char *ag[] = {"plan",  "--model", path,      "--params", "boot-n16-dense",
                      "--pos", "0",       "--slots", "1024",     "--policy",
                      "ckks",  "--json",  "--for",   "gpu",      NULL};
        static char gbuf[1 << 20];
        plan_stdout(14, ag, out, gbuf, sizeof gbuf);
        ts_sched_costs_t sc;
        char gpath[300], gwant[200];
        if (ts_sched_costs_shipped("configs/costs", "boot-n16-dense", "gpu", NULL, gpath,
                                   sizeof gpath) == TS_OK) {
            ts_cfg_error_t serr;
            ck_assert_ts_ok(ts_sched_costs_load(gpath, &sc, &serr));
            ck_assert_str_eq(sc.backend, "gpu");
        } else {
            ts_sched_costs_default(&sc);
        }
        snprintf(gwant, sizeof gwant, "\"costs\":\"%s\"", sc.name);
        ck_assert_ptr_nonnull(strstr(gbuf, gwant));
        ck_assert_ptr_null(strstr(gbuf, want));
        char *ab[] = {"plan", "--dims", "64,172,4,4,4,512", "--for", "tpu", NULL};
        ck_assert_int_eq(ts_cmd_plan(5, ab), 2);
    }
    ck_assert_ptr_nonnull(strstr(buf, "\"n_bootstrap\":16"));
    /* with the bootstrapper's 4 + 3 DFT levels tesserad takes here (13
     * levels left, session 38) the engine defers its norms (false with 3 + 2) */
    ck_assert_ptr_nonnull(strstr(buf, "\"norm_defer\":true"));
    ck_assert_ptr_nonnull(strstr(buf, "\"boot_dft\":[4,3],\"boot_levels_left\":13"));
    /* the policy's SiLU and 1/sqrt: finer ones would take the bootstrapper
     * a DFT level (ts_llm_enc_config_refine, session 43) */
    ck_assert_ptr_nonnull(strstr(buf, "\"act_degree\":15,\"rsqrt_degree\":31"));
    /* at 2^13 slots (14 levels per bootstrap) the engine defers its norms:
     * 17 bootstraps instead of 20 (docs/benchmarks.md, session 23); 16
     * since session 26 with the degree-7 exp above 16 positions
     * (core/llm/enc.c EXP_SHALLOW_POS) */
    char *a18[] = {"plan",    "--model", path,       "--params", "boot-n16-dense", "--pos", "63",
                   "--slots", "8192",    "--policy", "ckks",     "--json",         NULL};
    plan_stdout(12, a18, out, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"n_bootstrap\":16"));
    ck_assert_ptr_nonnull(strstr(buf, "\"norm_defer\":true"));
    ck_assert_ptr_nonnull(strstr(buf, "\"boot_dft\":[0,0],\"boot_levels_left\":14"));
    ck_assert_ptr_nonnull(strstr(buf, "\"act_degree\":23,\"rsqrt_degree\":31")); /* SiLU finer */
    ck_assert_ptr_nonnull(strstr(buf, "norm.in"));
    /* the prefill pass of a 16-lane engine (a model's prefill_lanes): 20
     * bootstraps with the pass's own residual bootstraps (24 with the
     * ordinary step's, until session 25; 22 as tesserad ran positions
     * 1..12 of "Once upon a time" at 128 bits in session 20, with the
     * norms' degree-56 1/sqrt, docs/benchmarks.md); lanes plan policy ckks
     * only */
    char *a9[] = {"plan",    "--model", path,        "--params", "boot-n16-dense", "--pos", "1",
                  "--slots", "1024",    "--prefill", "16",       "--json",         NULL};
    plan_stdout(12, a9, out, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"policy\":\"ckks\""));
    ck_assert_ptr_nonnull(strstr(buf, "lane_share"));
    ck_assert_ptr_nonnull(strstr(buf, "\"n_bootstrap\":20"));
    /* an 8-lane pass at 32 positions (2^11 working slots) after ordinary
     * steps: the K/V caches at the step's row level and one pair refresh
     * per layer, 24 bootstraps as the engine ran it in session 27 (91-93 s,
     * docs/benchmarks.md); right after a pass (the refresh kept) 20 */
    for (int after = 0; after < 2; after++) {
        char *a19[] = {"plan",
                       "--model",
                       path,
                       "--params",
                       "boot-n16-dense",
                       "--pos",
                       "24",
                       "--slots",
                       "2048",
                       "--prefill",
                       "8",
                       "--json",
                       after ? "--after-steps" : NULL,
                       NULL};
        plan_stdout(after ? 13 : 12, a19, out, buf, sizeof buf);
        ck_assert_ptr_nonnull(strstr(buf, after ? "\"n_bootstrap\":24" : "\"n_bootstrap\":20"));
        int n = 0;
        for (const char *q = buf; (q = strstr(q, "attn.kv_refresh\"")) != NULL; q++)
            n++;
        ck_assert_int_eq(n, after ? 4 : 0);
    }
    char *a20[] = {"plan", "--model", path, "--params", "boot-n16-dense", "--after-steps", NULL};
    ck_assert_int_eq(ts_cmd_plan(6, a20), 2); /* a pass's option */
    char *a21[] = {"plan",      "--model", path,    "--params", "boot-n16-dense",
                   "--prefill", "8",       "--pos", "0",        "--after-steps",
                   NULL};
    ck_assert_int_eq(ts_cmd_plan(10, a21), 2); /* nothing before position 0 */
    char *a10[] = {"plan",      "--model", path,       "--params", "boot-n16-dense",
                   "--prefill", "16",      "--policy", "hybrid",   NULL};
    ck_assert_int_eq(ts_cmd_plan(9, a10), 2);
    char *a11[] = {"plan", "--model", path, "--params", "boot-n16-dense", "--prefill", "3", NULL};
    ck_assert_int_eq(ts_cmd_plan(7, a11), 2);
    char *a12[] = {"plan", "--model", path, "--prefill", "4", NULL};
    ck_assert_int_eq(ts_cmd_plan(5, a12), 2);
    /* an ordinary step of an 8-lane engine: 17 bootstraps (20 until the
     * degree-7 exp of session 26; 20 as tesserad ran positions 14..19 of
     * "Once upon a time" at 128 bits with 2^11 working slots,
     * docs/benchmarks.md, session 22); a one-lane step there: 16 (18 before
     * session 23's deferred norms) */
    char *a13[] = {"plan",    "--model", path,      "--params", "boot-n16-dense", "--pos", "14",
                   "--slots", "2048",    "--lanes", "8",        "--json",         NULL};
    plan_stdout(12, a13, out, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"policy\":\"ckks\""));
    ck_assert_ptr_nonnull(strstr(buf, "\"n_bootstrap\":17"));
    ck_assert_ptr_null(strstr(buf, "lane_share"));
    char *a14[] = {"plan",    "--model", path,       "--params", "boot-n16-dense", "--pos", "14",
                   "--slots", "2048",    "--policy", "ckks",     "--json",         NULL};
    plan_stdout(12, a14, out, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "\"n_bootstrap\":16"));
    char *a15[] = {"plan",      "--model", path,      "--params", "boot-n16-dense",
                   "--prefill", "8",       "--lanes", "8",        NULL};
    ck_assert_int_eq(ts_cmd_plan(9, a15), 2);
    char *a16[] = {"plan",    "--model", path,       "--params", "boot-n16-dense",
                   "--lanes", "8",       "--policy", "hybrid",   NULL};
    ck_assert_int_eq(ts_cmd_plan(9, a16), 2);
    char *a17[] = {"plan", "--model", path, "--params", "boot-n16-dense", "--lanes", "6", NULL};
    ck_assert_int_eq(ts_cmd_plan(7, a17), 2);
    /* the shipped tables: measured at that preset over its whole chain, one
     * with dev-2c's AVX-512 IFMA kernels, one with AVX2 alone */
    static const char *const tables[][2] = {{"configs/costs/cpu-boot-n16-dense.yaml", "avx512"},
                                            {"configs/costs/cpu-avx2-boot-n16-dense.yaml", "avx2"}};
    for (int t = 0; t < 2; t++) {
        ts_sched_costs_t c;
        ts_cfg_error_t err;
        ck_assert_ts_ok(ts_sched_costs_load(tables[t][0], &c, &err));
        ck_assert_str_eq(c.params, "boot-n16-dense");
        ck_assert_str_eq(c.cpu, tables[t][1]);
        ck_assert_int_eq(c.max_level, 28);
        /* the engine's matrix products priced by their measured BSGS pieces */
        ck_assert_uint_eq(c.n_bsgs_hoist, 29);
        ck_assert_uint_eq(c.n_bsgs_moddown, 29);
        /* and their diagonals by slot count: a lanes engine's (2^14) cost more */
        ck_assert_uint_eq(c.n_diag_slots, 7);
        ck_assert(ts_sched_costs_encode_scale(&c, 14) > 1.5);
        /* its bootstrap output level is what tesserad's bootstrapper leaves at the
         * table's slots (2^10, h' = 32 encapsulation): the table is current */
        ts_ckks_params_t *bp = NULL;
        ck_assert_ts_ok(
            ts_ckks_params_load_file("configs/params/boot-n16-dense.yaml", false, &bp, &err));
        ts_boot_config_t bc;
        int left = -1;
        ck_assert_ts_ok(ts_boot_config_slots(bp, 10, &bc));
        ck_assert_ts_ok(ts_boot_config_encapsulate(bp, 32, &bc));
        ck_assert_ts_ok(ts_boot_depth(bp, &bc, NULL, NULL, NULL, &left));
        ck_assert_int_eq(c.slots, 1024);
        ck_assert_int_eq(c.boot_output_level, left);
        ck_assert_int_eq(left, 15);
        ts_ckks_params_free(bp);
        ck_assert(c.boot_ns > 1000000000LL && c.boot_ns < 20000000000LL);
    }
}
END_TEST

START_TEST(test_sched_plan_wire)
{
    ts_sched_costs_t c, c2;
    ts_sched_costs_default(&c);
    ts_sched_graph_t *g, *g2;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&bundled, &g));
    ts_sched_plan_t *p, *q;
    ck_assert_ts_ok(ts_sched_plan_new(g, &c, TS_SCHED_HYBRID, &p));
    uint8_t *buf;
    size_t len;
    ck_assert_ts_ok(ts_sched_plan_serialize(p, g, &c, &buf, &len));
    /* A receiver that built the same graph from the public shape opens it. */
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&bundled, &g2));
    uint8_t d1[32], d2[32];
    ck_assert_ts_ok(ts_sched_graph_digest(g, d1));
    ck_assert_ts_ok(ts_sched_graph_digest(g2, d2));
    ck_assert_int_eq(memcmp(d1, d2, 32), 0);
    ck_assert_ts_ok(ts_sched_plan_deserialize(buf, len, g2, &q, &c2));
    ck_assert_uint_eq(q->n_steps, p->n_steps);
    ck_assert_int_eq(memcmp(q->steps, p->steps, p->n_steps * sizeof *p->steps), 0);
    ck_assert_uint_eq(q->n_rot_steps, p->n_rot_steps);
    ck_assert(fabs(q->total_ns - p->total_ns) < 1e-3);
    ck_assert_int_eq(c2.boot_ns, c.boot_ns);
    ck_assert_str_eq(c2.note, c.note);
    ts_sched_plan_free(q);
    ts_sched_graph_free(g2);

    /* A measured table's optional entries travel too (the receiver's check
     * re-prices every step with them: BSGS pieces, encodings, conversions,
     * look-ups, the period bootstrap): the shipped boot-n16-dense table */
    {
        ts_sched_costs_t m, m2;
        ts_cfg_error_t err;
        ck_assert_ts_ok(ts_sched_costs_load("configs/costs/cpu-boot-n16-dense.yaml", &m, &err));
        ck_assert_uint_gt(m.n_bsgs_diag, 0);
        ck_assert_int_gt(m.boot_period_ns, 0);
        ts_sched_plan_t *pm = NULL, *qm = NULL;
        uint8_t *bm = NULL;
        size_t lm = 0;
        ck_assert_ts_ok(ts_sched_plan_new(g, &m, TS_SCHED_HYBRID, &pm));
        ck_assert_ts_ok(ts_sched_plan_serialize(pm, g, &m, &bm, &lm));
        ck_assert_ts_ok(ts_sched_plan_deserialize(bm, lm, g, &qm, &m2));
        ck_assert(fabs(qm->total_ns - pm->total_ns) < 1e-3 * pm->total_ns);
        ck_assert_int_eq(memcmp(m2.bsgs_diag_ns, m.bsgs_diag_ns, sizeof m.bsgs_diag_ns), 0);
        ck_assert_int_eq(memcmp(m2.encode_ns, m.encode_ns, sizeof m.encode_ns), 0);
        ck_assert_int_eq(m2.roundtrip_ns, m.roundtrip_ns);
        ck_assert_int_eq(m2.lut_value_ns[1], m.lut_value_ns[1]);
        ck_assert_int_eq(m2.workers, m.workers);
        ck_assert_int_eq(m2.boot_period_slots, m.boot_period_slots);
        ck_assert_uint_eq(m2.n_boot_slots, m.n_boot_slots);
        ck_assert_int_eq(memcmp(m2.boot_slots_ns, m.boot_slots_ns, sizeof m.boot_slots_ns), 0);
        ts_sched_plan_free(qm);
        ts_sched_plan_free(pm);
        ts_free(bm);
    }

    /* Another graph (one more token of context): TS_EMISMATCH. */
    ts_sched_model_dims_t d = bundled;
    d.seq_pos++;
    ck_assert_ts_ok(ts_sched_graph_build_decoder(&d, &g2));
    ck_assert_ts_status(ts_sched_plan_deserialize(buf, len, g2, &q, NULL), TS_EMISMATCH);
    ts_sched_graph_free(g2);

    /* Truncations and bit flips never crash; no truncation yields a plan,
     * and a flip yields one only where the payload decodes to the same bytes
     * (the envelope's SHA-256 covers them: some bits of a zstd frame do not
     * change its output), so the very plan and table that were sent. */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 4) {
        q = NULL;
        ck_assert_int_ne(ts_sched_plan_deserialize(buf, cut, g, &q, NULL), TS_OK);
        ck_assert_ptr_null(q);
    }
    for (size_t i = 0; i < len; i += 7) {
        buf[i] ^= 0x10;
        q = NULL;
        ts_sched_costs_t cf;
        if (ts_sched_plan_deserialize(buf, len, g, &q, &cf) == TS_OK) {
            ck_assert_uint_eq(q->n_steps, p->n_steps);
            ck_assert_int_eq(memcmp(q->steps, p->steps, p->n_steps * sizeof *p->steps), 0);
            ck_assert_int_eq(memcmp(cf.add_ns, c.add_ns, sizeof c.add_ns), 0);
            ck_assert_int_eq(memcmp(cf.rot_ns, c.rot_ns, sizeof c.rot_ns), 0);
            ck_assert_int_eq(cf.boot_ns, c.boot_ns);
            ts_sched_plan_free(q);
        } else {
            ck_assert_ptr_null(q);
        }
        buf[i] ^= 0x10;
    }
    ts_free(buf);

    /* A well-formed envelope with a tampered step is refused by the checker. */
    p->steps[5].level_in = p->steps[5].level_avail + 1;
    ck_assert_ts_ok(ts_sched_plan_serialize(p, g, &c, &buf, &len));
    ck_assert_ts_status(ts_sched_plan_deserialize(buf, len, g, &q, NULL), TS_EFORMAT);
    ts_free(buf);
    ts_sched_plan_free(p);
    ts_sched_graph_free(g);
}
END_TEST

TS_TEST_SUITE(sched)
{
    Suite *s = suite_create("sched");
    TCase *tc = ts_tcase("sched", 0);
    tcase_add_test(tc, test_sched_brute_force);
    tcase_add_test(tc, test_sched_llama_counts);
    tcase_add_test(tc, test_sched_policies_llama);
    tcase_add_test(tc, test_sched_explain_deltas);
    tcase_add_test(tc, test_sched_costs_files);
    tcase_add_test(tc, test_sched_costs_shipped);
    tcase_add_test(tc, test_sched_costs_bsgs);
    tcase_add_test(tc, test_sched_graph_errors);
    tcase_add_test(tc, test_sched_alloc_failures);
    tcase_add_test(tc, test_sched_plan_wire);
    tcase_add_test(tc, test_sched_cmd_plan);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * core/sched/engine.c — the plan an executing engine follows: every
 * primitive where the graph pins it, and the engine's lazy level management
 * (bootstrap an input only when an operator needs more levels than it has;
 * drop only what the graph's boot_drop list says, right after a bootstrap)
 * replayed operator by operator, so that the
 * predicted bootstraps, conversions and look-ups are the engine's own counts.
 * See ts_sched_plan_new_engine in sched.h.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/sched/sched_int.h"

static ts_sched_scheme_t engine_scheme(const ts_sched_op_t *op, ts_sched_policy_t policy)
{
    if (op->pin == TS_SCHED_PIN_TFHE)
        return TS_SCHEME_TFHE;
    if (op->pin == TS_SCHED_PIN_CKKS || !op->tfhe_ok)
        return TS_SCHEME_CKKS;
    return policy == TS_SCHED_TFHE ? TS_SCHEME_TFHE : TS_SCHEME_CKKS;
}

/* Replay g into steps (n entries). lev: n + 1 scratch ints (the last one holds
 * the fresh input's level). */
static ts_status_t replay(const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                          ts_sched_policy_t policy, int in_level, int boot_level, int *lev,
                          ts_sched_step_t *steps, char *msg, size_t msg_size)
{
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (msg && msg_size)                                                                       \
            snprintf(msg, msg_size, __VA_ARGS__);                                                  \
        return TS_ELEVEL;                                                                          \
    } while (0)
    size_t n = g->n_ops, ev = 0;
    const int B = boot_level;
    lev[n] = in_level;
    for (size_t k = 0; k < n; k++) {
        const ts_sched_op_t *op = &g->ops[k];
        ts_sched_step_t *st = &steps[k];
        memset(st, 0, sizeof *st);
        ts_sched_scheme_t scheme = engine_scheme(op, policy);
        if (op->drop_above) {
            /* a copy of input 0 dropped to input 1's level + drop_above */
            int l0 = lev[op->in[0] == TS_SCHED_FRESH ? n : (size_t)op->in[0]];
            int l1 = lev[op->in[1] == TS_SCHED_FRESH ? n : (size_t)op->in[1]];
            int to = l1 + op->drop_above;
            st->scheme = TS_SCHEME_CKKS;
            st->level_avail = st->level_in = l0;
            st->level_out = lev[k] = l0 < to ? l0 : to;
            continue;
        }
        int need;
        if (scheme == TS_SCHEME_CKKS)
            need = op->need_level > 0 ? op->need_level : op->impl[0].depth;
        else
            need = op->tfhe_in_level > 0 ? op->tfhe_in_level : (int)c->extract_depth + 1;
        if (need > B)
            FAIL("op %zu (%s) needs level %d; a bootstrap leaves %d", k, op->name, need, B);
        size_t ids[2];
        int nin = 0;
        uint8_t bits[2];
        for (int i = 0; i < 2; i++) {
            int in = op->in[i];
            if (in == TS_SCHED_NONE)
                continue;
            /* the same value twice: two operands, in order (one may be a copy) */
            size_t id = in == TS_SCHED_FRESH ? n : (size_t)in;
            ids[nin] = id;
            bits[nin] = (uint8_t)((op->inplace >> i) & 1);
            nin++;
        }
        int avail = INT_MAX, lin = INT_MAX;
        uint32_t nb = 0;
        /* two single ciphertexts share one bootstrap (the engine packs them
         * as a + i b: core/llm need2) when one is below the level and the
         * other below a bootstrap's output level: both come out at B */
        bool pair =
            scheme == TS_SCHEME_CKKS && nin == 2 && (lev[ids[0]] < need || lev[ids[1]] < need);
        for (int i = 0; pair && i < 2; i++)
            pair = lev[ids[i]] < B && (ids[i] == n || g->ops[ids[i]].n_ct == 1);
        /* the level bootstrapped CKKS inputs continue at (boot_drop) */
        int bl = B;
        bool boots = pair;
        for (int i = 0; i < nin; i++)
            boots |= lev[ids[i]] < need;
        if (boots && scheme == TS_SCHEME_CKKS) {
            int d = ev < g->n_boot_drop ? g->boot_drop[ev] : 0;
            bl = B - d > need ? B - d : need;
            ev++;
        }
        for (int i = 0; i < nin; i++) {
            int l = lev[ids[i]];
            avail = l < avail ? l : avail;
            if (l < need || pair) {
                if (pair)
                    nb = 1;
                else if (scheme == TS_SCHEME_CKKS)
                    nb += ids[i] == n ? 1 : g->ops[ids[i]].n_ct;
                else
                    nb += ts__sched_conversions(c, op);
                l = scheme == TS_SCHEME_CKKS ? bl : B;
                if (bits[i])
                    lev[ids[i]] = l;
            }
            lin = l < lin ? l : lin;
        }
        if (nin == 0)
            avail = lin = in_level;
        if (nin == 2 && ids[0] != ids[1])
            for (int i = 0; i < 2; i++)
                if (bits[i])
                    lev[ids[i]] = lin;
        st->scheme = scheme;
        st->boot = nb ? TS_BOOT_MAIN : TS_BOOT_NONE;
        st->n_boot = nb;
        st->boot_ns = (double)nb * ts__sched_boot_ns(c, op);
        st->level_avail = avail;
        st->level_in = lin;
        if (scheme == TS_SCHEME_CKKS) {
            int o;
            uint32_t inner;
            st->impl = 0;
            if (lin - op->impl[0].depth < 0)
                FAIL("op %zu (%s): depth %d at level %d", k, op->name, op->impl[0].depth, lin);
            /* priced at the table's levels (clamped to its max_level), leveled exactly */
            st->op_ns =
                ts_sched_costs_impl_ns_slots(c, &op->impl[0], lin, op->log_slots, &o, &inner) *
                op->n_ct;
            if (nb && op->boot_rot) {
                int lb = bl > (int)c->max_level ? (int)c->max_level : bl;
                st->op_ns += (double)op->boot_rot * ((double)c->rot_ns[lb] + (double)c->add_ns[lb]);
            }
            o = lin - op->impl[0].depth;
            if (lin < 64 && ((op->deep_levels >> lin) & 1u)) {
                /* one constant product and a rescale more, one level below */
                if (o < 1)
                    FAIL("op %zu (%s): no level left for the scale correction at level %d", k,
                         op->name, lin);
                int oc = o > c->max_level ? (int)c->max_level : o;
                st->op_ns += ((double)c->pmul_ns[oc] + (double)c->rescale_ns[oc]) * op->n_ct;
                o--;
            }
            if (op->capped && o > op->level_cap)
                o = op->level_cap; /* joins stored values at that level */
            st->level_out = o;
        } else {
            st->impl = -1;
            st->level_out = op->tfhe_out_level > 0 ? op->tfhe_out_level : B;
            st->op_ns = ts__sched_tfhe_ns(c, op, st->level_out);
        }
        lev[k] = st->level_out;
    }
    return TS_OK;
#undef FAIL
}

static ts_status_t engine_levels(const ts_sched_costs_t *c, int *in_level, int *boot_level)
{
    if (*boot_level <= 0)
        *boot_level = (int)c->boot_output_level;
    if (*in_level <= 0)
        *in_level = *boot_level;
    return *boot_level > c->max_level || *in_level > c->max_level ? TS_EINVAL : TS_OK;
}

ts_status_t ts_sched_plan_new_engine(const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                                     ts_sched_policy_t policy, int input_level, int boot_level,
                                     ts_sched_plan_t **out, char *msg, size_t msg_size)
{
    if (msg && msg_size)
        msg[0] = '\0';
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!g || !c || g->n_ops == 0 || (int)policy < 0 || policy > TS_SCHED_TFHE ||
        ts_sched_costs_validate(c, msg, msg_size) != TS_OK ||
        engine_levels(c, &input_level, &boot_level) != TS_OK)
        return TS_EINVAL;
    ts_sched_plan_t *p = ts_calloc(1, sizeof *p);
    int *lev = ts_malloc((g->n_ops + 1) * sizeof *lev);
    ts_status_t st = TS_ENOMEM;
    if (!p || !lev)
        goto out;
    p->steps = ts_calloc(g->n_ops, sizeof *p->steps);
    if (!p->steps)
        goto out;
    st = replay(g, c, policy, input_level, boot_level, lev, p->steps, msg, msg_size);
    if (st != TS_OK)
        goto out;
    p->policy = policy;
    p->n_steps = g->n_ops;
    p->engine = true;
    p->engine_input_level = input_level;
    p->engine_boot_level = boot_level;
    snprintf(p->costs_name, sizeof p->costs_name, "%s", c->name);
    st = ts__sched_plan_finish(p, g, c);
    if (st != TS_OK)
        goto out;
    *out = p;
    p = NULL;
out:
    ts_sched_plan_free(p);
    ts_free(lev);
    return st;
}

ts_status_t ts__sched_engine_check(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                   const ts_sched_costs_t *c, char *msg, size_t msg_size)
{
    int in_level = p->engine_input_level, boot_level = p->engine_boot_level;
    if (engine_levels(c, &in_level, &boot_level) != TS_OK)
        return TS_EINVAL;
    int *lev = ts_malloc((g->n_ops + 1) * sizeof *lev);
    ts_sched_step_t *s = ts_calloc(g->n_ops, sizeof *s);
    ts_status_t st = TS_ENOMEM;
    if (!lev || !s)
        goto out;
    st = replay(g, c, p->policy, in_level, boot_level, lev, s, msg, msg_size);
    for (size_t k = 0; st == TS_OK && k < g->n_ops; k++) {
        const ts_sched_step_t *a = &p->steps[k], *b = &s[k];
        if (a->scheme != b->scheme || a->n_boot != b->n_boot || a->level_in != b->level_in ||
            a->level_out != b->level_out || a->level_avail != b->level_avail ||
            fabs(a->op_ns - b->op_ns) > 1e-6 * (fabs(b->op_ns) + 1)) {
            if (msg && msg_size)
                snprintf(msg, msg_size, "op %zu (%s): the plan differs from the engine's replay", k,
                         g->ops[k].name);
            st = TS_EINVAL;
        }
    }
out:
    ts_free(lev);
    ts_free(s);
    return st;
}

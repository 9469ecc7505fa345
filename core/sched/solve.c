/*
 * core/sched/solve.c — scheme-aware placement and level allocation as one
 * shortest path (ROSETTA section 4.2, on CacheMir's level DAG).
 *
 * Vertices: boundary k (before operator k) x state (m, s), where m is the
 * level of the running value (result of operator k-1) and s the common level
 * of the values kept for later (NONE when there are none). Edges from a
 * boundary-k vertex to a boundary-(k+1) vertex: one per choice of
 *   bootstrap before the operator (none / running value / all live values),
 *   scheme and CKKS implementation, input level l (at most what the inputs
 *     have: dropping levels is free), and for TFHE the level the result is
 *     recovered to,
 * weighted by the predicted latency. Boundaries are a topological order, so
 * one relaxation pass in order gives the shortest path; a backward pass gives
 * the cost-to-go, which prices "this primitive forced to the other scheme"
 * for the explanations without re-solving.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched/sched_int.h"

typedef struct choice {
    int32_t prev;  /* state index at the previous boundary */
    int8_t boot;   /* ts_sched_boot_t */
    int8_t impl;   /* CKKS implementation, -1 = TFHE */
    int8_t lin;    /* level the operator runs at */
    int8_t lavail; /* level available to it */
    int8_t lout;   /* level of its result (TFHE: the recovery level) */
} choice_t;

typedef struct solver {
    const ts_sched_graph_t *g;
    const ts_sched_costs_t *c;
    ts_sched_policy_t policy;
    const int8_t *force;
    int L, B, NONE, S; /* max level, bootstrap output level, NONE code, states per boundary */
    size_t n;
    int *last_use;     /* per value: last consumer (-1 none) */
    uint32_t *side_ct; /* per boundary: ciphertexts of the kept values */
    int32_t *side_cnt; /* per boundary: how many values are kept */
    double *ckks_ns;   /* [op][impl][level] */
    int8_t *ckks_out;  /* [op][impl][level] */
    uint32_t *ckks_nb; /* [op][impl][level] */
    double *tfhe_ns;   /* [op][level] */
} solver_t;

#define IDX3(S, k, j, l)                                                                           \
    (((size_t)(k)*TS_SCHED_MAX_IMPL + (size_t)(j)) * (size_t)((S)->L + 1) + (size_t)(l))

static bool main_live(const solver_t *S, size_t k)
{
    return k > 0 && S->last_use[k - 1] >= (int)k;
}

static bool allowed(const solver_t *S, size_t k, ts_sched_scheme_t scheme)
{
    const ts_sched_op_t *op = &S->g->ops[k];
    if (!op->tfhe_ok)
        return scheme == TS_SCHEME_CKKS;
    if (S->force && S->force[k] >= 0)
        return scheme == (ts_sched_scheme_t)S->force[k];
    switch (S->policy) {
    case TS_SCHED_CKKS:
        return scheme == TS_SCHEME_CKKS;
    case TS_SCHED_TFHE:
        return scheme == TS_SCHEME_TFHE;
    default:
        return true;
    }
}

static void solver_clear(solver_t *S)
{
    ts_free(S->last_use);
    ts_free(S->side_ct);
    ts_free(S->side_cnt);
    ts_free(S->ckks_ns);
    ts_free(S->ckks_out);
    ts_free(S->ckks_nb);
    ts_free(S->tfhe_ns);
}

static ts_status_t solver_init(solver_t *S, const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                               ts_sched_policy_t policy, const int8_t *force)
{
    memset(S, 0, sizeof *S);
    if (!g || !c || g->n_ops == 0 || (int)policy < 0 || policy > TS_SCHED_TFHE)
        return TS_EINVAL;
    if (ts_sched_costs_validate(c, NULL, 0) != TS_OK)
        return TS_EINVAL;
    S->g = g;
    S->c = c;
    S->policy = policy;
    S->force = force;
    S->L = (int)c->max_level;
    S->B = (int)c->boot_output_level;
    S->NONE = S->L + 1;
    S->S = (S->L + 1) * (S->L + 2);
    S->n = g->n_ops;
    size_t n = S->n, nl = (size_t)S->L + 1;
    S->last_use = ts_malloc(n * sizeof *S->last_use);
    S->side_ct = ts_calloc(n + 1, sizeof *S->side_ct);
    S->side_cnt = ts_calloc(n + 2, sizeof *S->side_cnt);
    S->ckks_ns = ts_malloc(n * TS_SCHED_MAX_IMPL * nl * sizeof *S->ckks_ns);
    S->ckks_out = ts_malloc(n * TS_SCHED_MAX_IMPL * nl * sizeof *S->ckks_out);
    S->ckks_nb = ts_malloc(n * TS_SCHED_MAX_IMPL * nl * sizeof *S->ckks_nb);
    S->tfhe_ns = ts_malloc(n * nl * sizeof *S->tfhe_ns);
    if (!S->last_use || !S->side_ct || !S->side_cnt || !S->ckks_ns || !S->ckks_out || !S->ckks_nb ||
        !S->tfhe_ns) {
        solver_clear(S);
        return TS_ENOMEM;
    }
    for (size_t v = 0; v < n; v++)
        S->last_use[v] = -1;
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < 2; i++)
            if (g->ops[k].in[i] >= 0)
                S->last_use[g->ops[k].in[i]] = (int)k;
    /* Kept values at boundary k: v < k-1 with last_use >= k. Quadratic scan
     * is avoided by a running sum over an interval-add difference array. */
    int64_t *diff = ts_calloc(n + 2, sizeof *diff);
    int32_t *cnt = ts_calloc(n + 2, sizeof *cnt);
    if (!diff || !cnt) {
        ts_free(diff);
        ts_free(cnt);
        solver_clear(S);
        return TS_ENOMEM;
    }
    for (size_t v = 0; v < n; v++) {
        /* v is kept (not running) at boundaries v+2 .. last_use[v]. */
        if (S->last_use[v] >= (int)v + 2) {
            diff[v + 2] += g->ops[v].n_ct;
            diff[S->last_use[v] + 1] -= g->ops[v].n_ct;
            cnt[v + 2]++;
            cnt[S->last_use[v] + 1]--;
        }
    }
    int64_t run = 0;
    int32_t rc = 0;
    for (size_t k = 0; k <= n; k++) {
        run += diff[k];
        rc += cnt[k];
        S->side_ct[k] = (uint32_t)(run > UINT32_MAX ? UINT32_MAX : run);
        S->side_cnt[k] = rc;
    }
    ts_free(diff);
    ts_free(cnt);
    for (size_t k = 0; k < n; k++) {
        const ts_sched_op_t *op = &g->ops[k];
        for (int j = 0; j < op->n_impl; j++) {
            for (int l = 0; l <= S->L; l++) {
                int o;
                uint32_t nb;
                double ns = ts_sched_costs_impl_ns(c, &op->impl[j], l, &o, &nb);
                S->ckks_ns[IDX3(S, k, j, l)] = ns * op->n_ct;
                S->ckks_out[IDX3(S, k, j, l)] = (int8_t)o;
                S->ckks_nb[IDX3(S, k, j, l)] = nb * op->n_ct;
            }
        }
        for (int r = 0; r <= S->L; r++)
            S->tfhe_ns[k * nl + (size_t)r] = op->tfhe_ok ? ts__sched_tfhe_ns(c, op, r) : INFINITY;
    }
    return TS_OK;
}

/* One edge: from state `from` at boundary k to `to` at boundary k+1. */
typedef void (*edge_fn)(void *ctx, size_t k, int from, int to, double cost, const choice_t *ch);

static int min_level(int a, int b)
{
    return a < b ? a : b;
}

/* Enumerate the edges out of (k, from). `scheme_only` >= 0 restricts to one scheme. */
static void edges(const solver_t *S, size_t k, int from, int scheme_only, edge_fn fn, void *ctx)
{
    const ts_sched_op_t *op = &S->g->ops[k];
    const ts_sched_costs_t *c = S->c;
    int m0 = from / (S->L + 2), s0 = from % (S->L + 2);
    bool mlive = main_live(S, k), side = S->side_cnt[k] > 0;
    uint32_t main_ct = k > 0 ? S->g->ops[k - 1].n_ct : 0;
    bool prev_persist = k > 0 && S->last_use[k - 1] > (int)k;
    /* Do values kept at boundary k outlive operator k? Kept at k+1 are those
     * plus the running value of boundary k when it is used after k. */
    bool sides_persist = S->side_cnt[k + 1] - (prev_persist ? 1 : 0) > 0;
    bool k_live_next = S->last_use[k] >= (int)k + 1;
    bool ckks_ok = allowed(S, k, TS_SCHEME_CKKS) && scheme_only != TS_SCHEME_TFHE;
    bool tfhe_ok = op->tfhe_ok && allowed(S, k, TS_SCHEME_TFHE) && scheme_only != TS_SCHEME_CKKS;

    for (int boot = TS_BOOT_NONE; boot <= TS_BOOT_ALL; boot++) {
        int m = m0, s = s0;
        double bcost = 0;
        if (boot == TS_BOOT_MAIN) {
            if (!mlive)
                continue;
            m = S->B;
            bcost = (double)c->boot_ns * main_ct;
        } else if (boot == TS_BOOT_ALL) {
            if (!side)
                continue;
            if (mlive)
                m = S->B;
            s = S->B;
            bcost = (double)c->boot_ns * ((mlive ? main_ct : 0) + S->side_ct[k]);
        }
        int avail = S->L;
        for (int i = 0; i < 2; i++) {
            int in = op->in[i];
            if (in == TS_SCHED_NONE || in == TS_SCHED_FRESH)
                continue;
            avail = min_level(avail, in == (int)k - 1 ? m : s);
        }
        /* Next kept level. */
        int s_next = S->NONE;
        if (prev_persist)
            s_next = min_level(s_next, m);
        if (sides_persist)
            s_next = min_level(s_next, s);
        choice_t ch = {.prev = from, .boot = (int8_t)boot, .lavail = (int8_t)avail};
        if (ckks_ok) {
            for (int j = 0; j < op->n_impl; j++) {
                for (int l = 0; l <= avail; l++) {
                    int o = S->ckks_out[IDX3(S, k, j, l)];
                    int to = (k_live_next ? o : 0) * (S->L + 2) + s_next;
                    ch.impl = (int8_t)j;
                    ch.lin = (int8_t)l;
                    ch.lout = (int8_t)o;
                    fn(ctx, k, from, to, bcost + S->ckks_ns[IDX3(S, k, j, l)], &ch);
                }
            }
        }
        if (tfhe_ok && avail >= c->extract_depth) {
            ch.impl = -1;
            ch.lin = (int8_t)c->extract_depth;
            for (int r = 0; r <= S->B; r++) {
                int to = (k_live_next ? r : 0) * (S->L + 2) + s_next;
                ch.lout = (int8_t)r;
                fn(ctx, k, from, to, bcost + S->tfhe_ns[k * (size_t)(S->L + 1) + (size_t)r], &ch);
            }
        }
    }
}

typedef struct fwd_ctx {
    const solver_t *S;
    double *dist; /* [(n+1) * S] */
    choice_t *back;
    int *to_level; /* scratch: output level of the chosen edge per target (for TFHE r) */
} fwd_ctx_t;

static void relax(void *ctx, size_t k, int from, int to, double cost, const choice_t *ch)
{
    fwd_ctx_t *F = ctx;
    size_t S = (size_t)F->S->S;
    double d = F->dist[k * S + (size_t)from] + cost;
    size_t t = (k + 1) * S + (size_t)to;
    if (d < F->dist[t]) {
        F->dist[t] = d;
        F->back[t] = *ch;
    }
}

/* Forward pass; dist and back have (n+1) * S entries. */
static void forward(const solver_t *S, double *dist, choice_t *back)
{
    size_t ns = (size_t)S->S;
    for (size_t i = 0; i < (S->n + 1) * ns; i++)
        dist[i] = INFINITY;
    dist[0 * ns + (size_t)(0 * (S->L + 2) + S->NONE)] = 0;
    fwd_ctx_t F = {.S = S, .dist = dist, .back = back};
    for (size_t k = 0; k < S->n; k++)
        for (int st = 0; st < S->S; st++)
            if (isfinite(dist[k * ns + (size_t)st]))
                edges(S, k, st, -1, relax, &F);
}

/* Recompute the op cost and output level of a chosen edge (for the plan). */
static void step_from_choice(const solver_t *S, size_t k, const choice_t *ch, ts_sched_step_t *st)
{
    const ts_sched_op_t *op = &S->g->ops[k];
    const ts_sched_costs_t *c = S->c;
    memset(st, 0, sizeof *st);
    st->boot = (ts_sched_boot_t)ch->boot;
    bool mlive = main_live(S, k);
    uint32_t main_ct = k > 0 ? S->g->ops[k - 1].n_ct : 0;
    if (ch->boot == TS_BOOT_MAIN)
        st->n_boot = main_ct;
    else if (ch->boot == TS_BOOT_ALL)
        st->n_boot = (mlive ? main_ct : 0) + S->side_ct[k];
    st->boot_ns = (double)c->boot_ns * st->n_boot;
    st->level_avail = ch->lavail;
    st->level_in = ch->lin;
    st->impl = ch->impl;
    if (ch->impl >= 0) {
        st->scheme = TS_SCHEME_CKKS;
        st->op_ns = S->ckks_ns[IDX3(S, k, ch->impl, ch->lin)];
        st->level_out = S->ckks_out[IDX3(S, k, ch->impl, ch->lin)];
        st->n_boot_inner = S->ckks_nb[IDX3(S, k, ch->impl, ch->lin)];
    } else {
        st->scheme = TS_SCHEME_TFHE;
        int r = ch->lout;
        st->level_out = r;
        st->op_ns = S->tfhe_ns[k * (size_t)(S->L + 1) + (size_t)r];
    }
    (void)op;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Totals and the rotation-key set from the steps (shared with plan_io.c). */
ts_status_t ts__sched_plan_finish(ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                  const ts_sched_costs_t *c)
{
    p->total_ns = p->boot_ns = p->convert_ns = 0;
    p->n_boot = p->n_tfhe = p->n_convert = p->n_lookup = 0;
    ts_free(p->rot_steps);
    p->rot_steps = NULL;
    p->n_rot_steps = 0;
    size_t nrot = 0;
    for (size_t k = 0; k < p->n_steps; k++) {
        ts_sched_step_t *s = &p->steps[k];
        p->total_ns += s->op_ns + s->boot_ns;
        p->boot_ns += s->boot_ns + (double)s->n_boot_inner * (double)c->boot_ns;
        p->n_boot += s->n_boot + s->n_boot_inner;
        if (s->scheme == TS_SCHEME_TFHE) {
            p->n_tfhe++;
            p->n_convert += ts__sched_conversions(c, &g->ops[k]);
            p->n_lookup += g->ops[k].n_values;
            p->convert_ns += s->op_ns;
        } else {
            nrot += g->rot_n[k];
        }
    }
    if (!nrot)
        return TS_OK;
    p->rot_steps = ts_malloc(nrot * sizeof *p->rot_steps);
    if (!p->rot_steps)
        return TS_ENOMEM;
    size_t w = 0;
    for (size_t k = 0; k < p->n_steps; k++)
        if (p->steps[k].scheme == TS_SCHEME_CKKS)
            for (size_t j = 0; j < g->rot_n[k]; j++)
                p->rot_steps[w++] = g->rot[g->rot_off[k] + j];
    qsort(p->rot_steps, w, sizeof *p->rot_steps, cmp_i32);
    size_t u = 0;
    for (size_t i = 0; i < w; i++)
        if (u == 0 || p->rot_steps[u - 1] != p->rot_steps[i])
            p->rot_steps[u++] = p->rot_steps[i];
    p->n_rot_steps = u;
    return TS_OK;
}

ts_status_t ts__sched_solve(const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                            ts_sched_policy_t policy, const int8_t *force, ts_sched_plan_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    solver_t S;
    ts_status_t st = solver_init(&S, g, c, policy, force);
    if (st != TS_OK)
        return st;
    size_t ns = (size_t)S.S, total;
    double *dist = NULL;
    choice_t *back = NULL;
    ts_sched_plan_t *p = NULL;
    if (!ts_size_mul(S.n + 1, ns, &total)) {
        st = TS_ELIMIT;
        goto out;
    }
    dist = ts_malloc(total * sizeof *dist);
    back = ts_malloc(total * sizeof *back);
    p = ts_calloc(1, sizeof *p);
    if (!dist || !back || !p) {
        st = TS_ENOMEM;
        goto out;
    }
    p->steps = ts_calloc(S.n, sizeof *p->steps);
    if (!p->steps) {
        st = TS_ENOMEM;
        goto out;
    }
    forward(&S, dist, back);
    int best = -1;
    double bd = INFINITY;
    for (int s = 0; s < S.S; s++) {
        if (dist[S.n * ns + (size_t)s] < bd) {
            bd = dist[S.n * ns + (size_t)s];
            best = s;
        }
    }
    if (best < 0) {
        st = TS_ELEVEL;
        goto out;
    }
    p->policy = policy;
    p->n_steps = S.n;
    snprintf(p->costs_name, sizeof p->costs_name, "%s", c->name);
    int cur = best;
    for (size_t k = S.n; k-- > 0;) {
        const choice_t *ch = &back[(k + 1) * ns + (size_t)cur];
        step_from_choice(&S, k, ch, &p->steps[k]);
        cur = ch->prev;
    }
    st = ts__sched_plan_finish(p, g, c);
    if (st != TS_OK)
        goto out;
    *out = p;
    p = NULL;
out:
    ts_sched_plan_free(p);
    ts_free(dist);
    ts_free(back);
    solver_clear(&S);
    return st;
}

ts_status_t ts_sched_plan_new(const ts_sched_graph_t *g, const ts_sched_costs_t *costs,
                              ts_sched_policy_t policy, ts_sched_plan_t **out)
{
    return ts__sched_solve(g, costs, policy, NULL, out);
}

ts_status_t ts_sched_plan_new_pinned(const ts_sched_graph_t *g, const ts_sched_costs_t *costs,
                                     ts_sched_policy_t policy, const int8_t *force,
                                     ts_sched_plan_t **out)
{
    if (!g || !out)
        return TS_EINVAL;
    for (size_t k = 0; force && k < g->n_ops; k++) {
        if (force[k] < -1 || force[k] > TS_SCHEME_TFHE)
            return TS_EINVAL;
        if (force[k] == TS_SCHEME_TFHE && !g->ops[k].tfhe_ok)
            return TS_EINVAL;
    }
    return ts__sched_solve(g, costs, policy, force, out);
}

ts_status_t ts_sched_plan_alternatives(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                       const ts_sched_costs_t *costs, double *alt)
{
    return ts__sched_alternatives(g, costs, p, alt);
}

void ts_sched_plan_free(ts_sched_plan_t *p)
{
    if (!p)
        return;
    ts_free(p->steps);
    ts_free(p->rot_steps);
    ts_free(p);
}

/* ------------------------------------------------ forced alternatives */

typedef struct bwd_ctx {
    const solver_t *S;
    const double *bwd; /* boundary k+1 row */
    double best;
} bwd_ctx_t;

static void bwd_edge(void *ctx, size_t k, int from, int to, double cost, const choice_t *ch)
{
    (void)k;
    (void)from;
    (void)ch;
    bwd_ctx_t *B = ctx;
    double d = cost + B->bwd[to];
    if (d < B->best)
        B->best = d;
}

typedef struct alt_ctx {
    const double *fwd_row, *bwd_row;
    double best;
} alt_ctx_t;

static void alt_edge(void *ctx, size_t k, int from, int to, double cost, const choice_t *ch)
{
    (void)k;
    (void)ch;
    alt_ctx_t *A = ctx;
    double d = A->fwd_row[from] + cost + A->bwd_row[to];
    if (d < A->best)
        A->best = d;
}

ts_status_t ts__sched_alternatives(const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                                   const ts_sched_plan_t *p, double *alt)
{
    if (!g || !c || !p || !alt || p->n_steps != g->n_ops)
        return TS_EINVAL;
    solver_t S;
    ts_status_t st = solver_init(&S, g, c, p->policy, NULL);
    if (st != TS_OK)
        return st;
    /* Forcing one primitive overrides the policy for that primitive only. */
    int8_t *force = ts_malloc(S.n);
    size_t ns = (size_t)S.S, total = (S.n + 1) * ns;
    double *fwd = ts_malloc(total * sizeof *fwd);
    double *bwd = ts_malloc(total * sizeof *bwd);
    choice_t *back = ts_malloc(total * sizeof *back);
    if (!force || !fwd || !bwd || !back) {
        st = TS_ENOMEM;
        goto out;
    }
    memset(force, -1, S.n);
    forward(&S, fwd, back);
    for (size_t s = 0; s < ns; s++)
        bwd[S.n * ns + s] = 0;
    for (size_t k = S.n; k-- > 0;) {
        bwd_ctx_t B = {.S = &S, .bwd = bwd + (k + 1) * ns};
        for (int s = 0; s < S.S; s++) {
            B.best = INFINITY;
            edges(&S, k, s, -1, bwd_edge, &B);
            bwd[k * ns + (size_t)s] = B.best;
        }
    }
    for (size_t k = 0; k < S.n; k++) {
        const ts_sched_op_t *op = &g->ops[k];
        if (!ts_op_kind_is_nonarith(op->kind) || !op->tfhe_ok) {
            alt[k] = NAN;
            continue;
        }
        int other = p->steps[k].scheme == TS_SCHEME_TFHE ? TS_SCHEME_CKKS : TS_SCHEME_TFHE;
        force[k] = (int8_t)other; /* lift the policy for op k only */
        S.force = force;
        alt_ctx_t A = {.fwd_row = fwd + k * ns, .bwd_row = bwd + (k + 1) * ns, .best = INFINITY};
        for (int s = 0; s < S.S; s++)
            if (isfinite(A.fwd_row[s]))
                edges(&S, k, s, other, alt_edge, &A);
        alt[k] = A.best;
        force[k] = -1;
        S.force = NULL;
    }
out:
    ts_free(force);
    ts_free(fwd);
    ts_free(bwd);
    ts_free(back);
    solver_clear(&S);
    return st;
}

/* ------------------------------------------------------------- checking */

ts_status_t ts_sched_plan_check(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                const ts_sched_costs_t *c, char *msg, size_t msg_size)
{
#define FAIL(code, ...)                                                                            \
    do {                                                                                           \
        if (msg && msg_size)                                                                       \
            snprintf(msg, msg_size, __VA_ARGS__);                                                  \
        st = (code);                                                                               \
        goto out;                                                                                  \
    } while (0)
    if (!p || !g || !c)
        return TS_EINVAL;
    if (p->n_steps != g->n_ops || ts_sched_costs_validate(c, NULL, 0) != TS_OK)
        return TS_EINVAL;
    if (p->engine)
        return ts__sched_engine_check(p, g, c, msg, msg_size);
    ts_status_t st = TS_OK;
    size_t n = g->n_ops;
    int *lev = ts_malloc(n * sizeof *lev);
    int *last = ts_malloc(n * sizeof *last);
    if (!lev || !last) {
        st = TS_ENOMEM;
        goto out;
    }
    for (size_t v = 0; v < n; v++)
        last[v] = -1;
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < 2; i++)
            if (g->ops[k].in[i] >= 0)
                last[g->ops[k].in[i]] = (int)k;
    int L = (int)c->max_level, B = (int)c->boot_output_level;
    double total = 0;
    for (size_t k = 0; k < n; k++) {
        const ts_sched_op_t *op = &g->ops[k];
        const ts_sched_step_t *s = &p->steps[k];
        /* Kept values share the minimum of their levels (free drops). */
        int kept = L + 1;
        for (size_t v = 0; v + 1 < k; v++)
            if (last[v] >= (int)k && lev[v] < kept)
                kept = lev[v];
        for (size_t v = 0; v + 1 < k; v++)
            if (last[v] >= (int)k)
                lev[v] = kept;
        uint32_t nb = 0;
        bool mlive = k > 0 && last[k - 1] >= (int)k;
        if (s->boot == TS_BOOT_MAIN) {
            if (!mlive)
                FAIL(TS_EINVAL, "op %zu: bootstraps a running value that is not live", k);
            lev[k - 1] = B;
            nb = op[-1].n_ct;
        } else if (s->boot == TS_BOOT_ALL) {
            if (kept > L)
                FAIL(TS_EINVAL, "op %zu: bootstraps kept values but none are live", k);
            for (size_t v = 0; v < k; v++)
                if (last[v] >= (int)k) {
                    lev[v] = B;
                    nb += g->ops[v].n_ct;
                }
        } else if (s->boot != TS_BOOT_NONE) {
            FAIL(TS_EINVAL, "op %zu: bad bootstrap code", k);
        }
        if (nb != s->n_boot)
            FAIL(TS_EINVAL, "op %zu (%s): %u bootstraps claimed, %u needed", k, op->name, s->n_boot,
                 nb);
        if (fabs((double)nb * (double)c->boot_ns - s->boot_ns) > 1e-6 * (s->boot_ns + 1))
            FAIL(TS_EINVAL, "op %zu (%s): bootstrap cost %.0f ns, plan says %.0f", k, op->name,
                 (double)nb * (double)c->boot_ns, s->boot_ns);
        int avail = L;
        for (int i = 0; i < 2; i++)
            if (op->in[i] >= 0 && lev[op->in[i]] < avail)
                avail = lev[op->in[i]];
        if (s->level_avail != avail || s->level_in > avail || s->level_in < 0)
            FAIL(TS_ELEVEL, "op %zu (%s): runs at level %d, inputs have %d (plan says %d)", k,
                 op->name, s->level_in, avail, s->level_avail);
        double ns;
        if (s->scheme == TS_SCHEME_CKKS) {
            if (s->impl < 0 || s->impl >= op->n_impl)
                FAIL(TS_EINVAL, "op %zu: bad implementation %d", k, s->impl);
            if (op->tfhe_ok && p->policy == TS_SCHED_TFHE)
                FAIL(TS_EINVAL, "op %zu (%s): CKKS under policy tfhe", k, op->name);
            int o;
            uint32_t inner;
            ns = ts_sched_costs_impl_ns(c, &op->impl[s->impl], s->level_in, &o, &inner) * op->n_ct;
            if (inner == 0 && s->level_in < op->impl[s->impl].depth)
                FAIL(TS_ELEVEL, "op %zu (%s): level %d below depth %d", k, op->name, s->level_in,
                     op->impl[s->impl].depth);
            if (o != s->level_out || o < 0 || inner * op->n_ct != s->n_boot_inner)
                FAIL(TS_ELEVEL, "op %zu (%s): output level %d, plan says %d", k, op->name, o,
                     s->level_out);
        } else {
            if (!op->tfhe_ok)
                FAIL(TS_EINVAL, "op %zu (%s): arithmetic operator placed in TFHE", k, op->name);
            if (p->policy == TS_SCHED_CKKS)
                FAIL(TS_EINVAL, "op %zu (%s): TFHE under policy ckks", k, op->name);
            if (s->level_in < c->extract_depth)
                FAIL(TS_ELEVEL, "op %zu (%s): extraction needs level %lld, has %d", k, op->name,
                     (long long)c->extract_depth, s->level_in);
            if (s->level_out < 0 || s->level_out > B)
                FAIL(TS_ELEVEL, "op %zu (%s): recovery level %d outside [0, %d]", k, op->name,
                     s->level_out, B);
            ns = ts__sched_tfhe_ns(c, op, s->level_out);
        }
        if (fabs(ns - s->op_ns) > 1e-6 * (fabs(ns) + 1))
            FAIL(TS_EINVAL, "op %zu (%s): cost %.0f ns, plan says %.0f", k, op->name, ns, s->op_ns);
        lev[k] = s->level_out;
        total += ns + (double)nb * (double)c->boot_ns;
    }
    if (fabs(total - p->total_ns) > 1e-6 * (total + 1))
        FAIL(TS_EINVAL, "total %.0f ns, plan says %.0f", total, p->total_ns);
out:
    ts_free(lev);
    ts_free(last);
    return st;
#undef FAIL
}

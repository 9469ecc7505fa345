/*
 * core/sched internals shared by its files (not part of the public face).
 */
#ifndef TS_SCHED_INT_H
#define TS_SCHED_INT_H

#include "core/sched/sched.h"

struct ts_sched_graph {
    ts_sched_op_t *ops;
    size_t n_ops, cap_ops;
    size_t *rot_off; /* per op: offset into rot, count in rot_n */
    size_t *rot_n;
    int32_t *rot;
    size_t n_rot, cap_rot;
    uint8_t *boot_drop; /* ts_sched_graph_set_boot_drop */
    size_t n_boot_drop;
};

/* Per-op forced scheme for the solver: -1 free, TS_SCHEME_CKKS, TS_SCHEME_TFHE. */
ts_status_t ts__sched_solve(const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                            ts_sched_policy_t policy, const int8_t *force, ts_sched_plan_t **out);

/* For every non-arithmetic op i: the total of the best plan with op i forced to
 * the scheme it does NOT have in `p` (INFINITY when impossible). alt[] has
 * g->n_ops entries (NAN for arithmetic ops). */
ts_status_t ts__sched_alternatives(const ts_sched_graph_t *g, const ts_sched_costs_t *c,
                                   const ts_sched_plan_t *p, double *alt);

/* Recompute a plan's totals and rotation-key set from its steps. */
ts_status_t ts__sched_plan_finish(ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                  const ts_sched_costs_t *c);

/* An engine plan against a replay of its graph (ts_sched_plan_check). */
ts_status_t ts__sched_engine_check(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                   const ts_sched_costs_t *c, char *msg, size_t msg_size);

/* Conversions (batches) of a TFHE operator, and its latency recovered to `level`
 * (conversions plus one evaluation per value). */
uint32_t ts__sched_conversions(const ts_sched_costs_t *c, const ts_sched_op_t *op);
double ts__sched_tfhe_ns(const ts_sched_costs_t *c, const ts_sched_op_t *op, int level);
/* One bootstrap of op's inputs: the table's period bootstrap when op's
 * boot_log_slots is its period_slots, else from its by-slots latencies when
 * it has them (ts_sched_costs_t boot_slots), else the main one. */
double ts__sched_boot_ns(const ts_sched_costs_t *c, const ts_sched_op_t *op);

#endif

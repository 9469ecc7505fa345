/*
 * libFuzzer target for core/sched's parsers: the first byte picks one.
 *   even: the rest is a cost table (YAML/JSON) for ts_sched_costs_load_string
 *   odd:  the rest is a serialized plan opened against a fixed one-layer
 *         Llama decode-step graph (ts_sched_plan_deserialize)
 * Neither may crash or leak; a plan that opens must pass ts_sched_plan_check.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/sched/sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ts_sched_graph_t *graph;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!graph) {
        ts_sched_model_dims_t d = {.dim = 64,
                                   .hidden_dim = 172,
                                   .n_layers = 1,
                                   .n_heads = 4,
                                   .n_kv_heads = 4,
                                   .vocab = 512,
                                   .seq_pos = 3};
        if (ts_sched_graph_build_decoder(&d, &graph) != TS_OK)
            abort();
    }
    if ((data[0] & 1) == 0) {
        ts_sched_costs_t c;
        ts_cfg_error_t err;
        if (ts_sched_costs_load_string((const char *)data + 1, size - 1, "fuzz", &c, &err) ==
                TS_OK &&
            ts_sched_costs_validate(&c, NULL, 0) != TS_OK)
            abort();
        return 0;
    }
    ts_sched_plan_t *p = NULL;
    ts_sched_costs_t c;
    if (ts_sched_plan_deserialize(data + 1, size - 1, graph, &p, &c) == TS_OK) {
        if (ts_sched_plan_check(p, graph, &c, NULL, 0) != TS_OK)
            abort();
        ts_sched_plan_free(p);
    }
    return 0;
}

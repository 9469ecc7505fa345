/*
 * The encrypted weighted-average service (seed 002, Algorithm 1, lines 7-14):
 * Theta_e = sum_j (n_j / sum_i n_i) * Theta_e_j over the clients' encrypted
 * updates. Waiting for core/ckks: until it lands every entry point answers
 * TS_ENOTSUP so the daemon reports the service as unavailable.
 */
#include <stdio.h>

#include "server/tesserad.h"

ts_status_t ts_agg_check_params(const char *params_dir, const char *param_id, bool allow_insecure,
                                char *why, size_t why_size)
{
    (void)params_dir;
    (void)param_id;
    (void)allow_insecure;
    snprintf(why, why_size, "the aggregation service is not built yet (needs core/ckks)");
    return TS_ENOTSUP;
}

ts_status_t ts_agg_validate(const char *params_dir, const char *param_id,
                            const ProtobufCBinaryData *cts, size_t count, char *why,
                            size_t why_size)
{
    (void)params_dir;
    (void)param_id;
    (void)cts;
    (void)count;
    snprintf(why, why_size, "the aggregation service is not built yet (needs core/ckks)");
    return TS_ENOTSUP;
}

ts_status_t ts_agg_compute(const char *params_dir, const char *param_id,
                           const ts_agg_input_t *inputs, size_t n_inputs, size_t count,
                           ProtobufCBinaryData **out, char *why, size_t why_size)
{
    (void)params_dir;
    (void)param_id;
    (void)inputs;
    (void)n_inputs;
    (void)count;
    *out = NULL;
    snprintf(why, why_size, "the aggregation service is not built yet (needs core/ckks)");
    return TS_ENOTSUP;
}

void ts_agg_result_free(ProtobufCBinaryData *out, size_t count)
{
    if (!out)
        return;
    for (size_t i = 0; i < count; i++)
        ts_free(out[i].data);
    ts_free(out);
}

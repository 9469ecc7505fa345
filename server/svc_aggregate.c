/*
 * The encrypted weighted-average service (seed 002, Algorithm 1, lines 7-14):
 *     Theta_e = sum_j (n_j / sum_i n_i) * Theta_e_j
 * over the clients' encrypted updates. Each weight is multiplied in as a
 * constant encoded at q_level (ts_ckks_mul_const with const_scale 0), the
 * products are added, and one rescale returns the sum to the inputs' scale at
 * level - 1: every result leaves at the same, lowest level the computation
 * reaches. Runs on worker threads; each call has its own evaluator.
 */
#include <stdio.h>
#include <string.h>

#include "server/ckks_wire.h"
#include "server/tesserad.h"

ts_status_t ts_agg_check_params(const char *params_dir, const char *param_id, bool allow_insecure,
                                char *why, size_t why_size)
{
    ts_ckks_params_t *p = NULL;
    uint8_t id[TS_SHA256_BYTES];
    ts_status_t st =
        ts_wire_params_get(params_dir, param_id, allow_insecure, &p, id, why, why_size);
    if (st != TS_OK)
        return st;
    if (ts_ckks_params_max_level(p) < 1) {
        snprintf(why, why_size, "preset '%s' has no level to spend on the weights (L = 0)",
                 param_id);
        st = TS_EPARAMS;
    }
    ts_ckks_params_free(p);
    return st;
}

ts_status_t ts_agg_validate(const char *params_dir, const char *param_id, bool allow_insecure,
                            const ProtobufCBinaryData *cts, size_t count, char *why,
                            size_t why_size)
{
    ts_ckks_params_t *p = NULL;
    uint8_t id[TS_SHA256_BYTES];
    ts_status_t st =
        ts_wire_params_get(params_dir, param_id, allow_insecure, &p, id, why, why_size);
    if (st != TS_OK)
        return st;
    for (size_t i = 0; i < count && st == TS_OK; i++) {
        ts_ckks_ciphertext_t *ct = NULL;
        char w[200] = "";
        st = ts_wire_ct_decode(p, id, cts[i].data, cts[i].len, 1, &ct, w, sizeof w);
        if (st == TS_OK && ts_ckks_ciphertext_level(ct) < 1) {
            snprintf(w, sizeof w, "level 0 leaves no room for the weight multiplication");
            st = TS_ELEVEL;
        }
        if (st != TS_OK)
            snprintf(why, why_size, "ciphertext %zu: %s", i, w);
        ts_ckks_ciphertext_free(ct);
    }
    ts_ckks_params_free(p);
    return st;
}

ts_status_t ts_agg_compute(const char *params_dir, const char *param_id, bool allow_insecure,
                           int flood_bits, const ts_agg_input_t *inputs, size_t n_inputs,
                           size_t count, ProtobufCBinaryData **out, char *why, size_t why_size)
{
    *out = NULL;
    if (n_inputs == 0 || count == 0)
        return TS_EINVAL;
    ts_ckks_params_t *p = NULL;
    uint8_t id[TS_SHA256_BYTES];
    ts_status_t st =
        ts_wire_params_get(params_dir, param_id, allow_insecure, &p, id, why, why_size);
    if (st != TS_OK)
        return st;
    ts_ckks_evaluator_t *ev = NULL;
    ts_ckks_ciphertext_t *acc = NULL, *term = NULL, *in = NULL;
    ts_prng_t *prng = NULL;
    ProtobufCBinaryData *res = ts_calloc(count, sizeof *res);
    if (!res) {
        st = TS_ENOMEM;
        goto out;
    }
    if (flood_bits > 0 && (flood_bits > 50 || (st = ts_prng_new_os(&prng)) != TS_OK)) {
        st = st != TS_OK ? st : TS_EINVAL;
        goto out;
    }
    st = ts_ckks_evaluator_new(p, NULL, &ev);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &acc);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, ts_ckks_params_max_level(p), &term);
    if (st != TS_OK)
        goto out;
    double total = 0;
    for (size_t i = 0; i < n_inputs; i++) {
        if (inputs[i].count != count) {
            snprintf(why, why_size, "contribution %zu has %zu ciphertexts, expected %zu", i,
                     inputs[i].count, count);
            st = TS_EMISMATCH;
            goto out;
        }
        total += (double)inputs[i].weight;
    }
    for (size_t j = 0; j < count; j++) {
        for (size_t i = 0; i < n_inputs; i++) {
            char w[200] = "";
            st = ts_wire_ct_decode(p, id, inputs[i].cts[j].data, inputs[i].cts[j].len, 1, &in, w,
                                   sizeof w);
            if (st != TS_OK) {
                snprintf(why, why_size, "contribution %zu, ciphertext %zu: %s", i, j, w);
                goto out;
            }
            /* m_i = Theta_e_i * (n_i / sum n): the weight rounded at q_level. */
            st =
                ts_ckks_mul_const(ev, in, (double)inputs[i].weight / total, 0, i == 0 ? acc : term);
            if (st == TS_OK && i > 0)
                st = ts_ckks_add(ev, acc, term, acc);
            ts_ckks_ciphertext_free(in);
            in = NULL;
            if (st != TS_OK) {
                snprintf(why, why_size,
                         "contribution %zu, ciphertext %zu does not combine with the others (%s: "
                         "levels, scales or slot counts differ)",
                         i, j, ts_status_name(st));
                goto out;
            }
        }
        st = ts_ckks_rescale(ev, acc, acc);
        if (st == TS_OK && flood_bits > 0)
            st = ts_ckks_flood(acc, false, flood_bits, prng);
        if (st == TS_OK)
            st = ts_wire_ct_encode(acc, id, 0, &res[j].data, &res[j].len);
        if (st != TS_OK) {
            snprintf(why, why_size, "rescale or encoding of result %zu failed: %s", j,
                     ts_strerror(st));
            goto out;
        }
    }
    *out = res;
    res = NULL;
out:
    ts_prng_free(prng);
    ts_agg_result_free(res, count);
    ts_ckks_ciphertext_free(in);
    ts_ckks_ciphertext_free(term);
    ts_ckks_ciphertext_free(acc);
    ts_ckks_evaluator_free(ev);
    ts_ckks_params_free(p);
    return st;
}

void ts_agg_result_free(ProtobufCBinaryData *out, size_t count)
{
    if (!out)
        return;
    for (size_t i = 0; i < count; i++)
        ts_free(out[i].data);
    ts_free(out);
}

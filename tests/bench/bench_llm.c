/*
 * Plaintext LLM benchmark on the bundled model (models/aidreams260K.bin):
 * reference decode steps per second (one position at a time, KV cache), the
 * ciphertext-aligned simulator's cost per position for a few approximation
 * configurations (exact, ROSETTA-like segmented LUTs, pure-CKKS polynomial /
 * iterative), with their logit errors and perplexity change, and the time to
 * build each primitive's approximation. Single thread.
 *
 * Usage: bench_llm [--json PATH] [--quick] [--model-dir DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/base.h"
#include "core/llm/llm.h"

static const char *const configs[][2] = {
    {"exact", ""},
    {"rosetta_lut_4x256",
     "softmax_k: 4\n"
     "exp: {method: poly, lo: -4, hi: 2, degree: 12}\n"
     "recip: {method: lut, lo: 0.0078125, hi: 8192, segments: 4, entries: 256, bounds: log, "
     "index_bits: 16}\n"
     "rsqrt: {method: lut, lo: 0.001, hi: 64, segments: 4, entries: 256, bounds: log, "
     "index_bits: 16}\n"
     "silu: {method: lut, lo: -20, hi: 20, segments: 4, entries: 256, bounds: uniform, "
     "index_bits: 16}\n"},
    {"ckks_poly_iter", "softmax_k: 4\n"
                       "exp: {method: poly, lo: -4, hi: 2, degree: 12}\n"
                       "recip: {method: iter, lo: 0.0078125, hi: 8192, steps: 24}\n"
                       "rsqrt: {method: iter, lo: 0.001, hi: 64, degree: 0, steps: 24}\n"
                       "silu: {method: poly, lo: -20, hi: 20, degree: 59}\n"},
};

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL, *dir = "models";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--model-dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--json PATH] [--quick] [--model-dir DIR]\n", argv[0]);
            return 2;
        }
    }
    char path[1024], err[512] = "";
    snprintf(path, sizeof(path), "%s/aidreams260K.bin", dir);
    ts_llm_model_t *m = NULL;
    if (ts_llm_model_load(path, &m, err, sizeof(err)) != TS_OK) {
        fprintf(stderr, "bench_llm: %s\n", err);
        return 1;
    }
    const ts_llm_config_t *c = ts_llm_model_config(m);
    FILE *out = json ? fopen(json, "w") : stdout;
    if (!out) {
        perror(json);
        return 1;
    }
    /* Reference decode: greedy over the whole context, repeated. */
    int prompt[1] = {1};
    int *ids = malloc((size_t)c->seq_len * sizeof(int));
    size_t n = 0;
    int reps = quick ? 3 : 20;
    uint64_t t0 = ts_now_ns();
    for (int r = 0; r < reps; r++)
        (void)ts_llm_generate(m, NULL, prompt, 1, (size_t)c->seq_len, false, -1, NULL, NULL, ids,
                              &n);
    double fwd_s = (double)(ts_now_ns() - t0) * 1e-9 / ((double)reps * (double)n);
    printf("reference decode: %.1f us per position (%.0f positions/s), %zu params\n", fwd_s * 1e6,
           1.0 / fwd_s, ts_llm_model_n_params(m));
    fprintf(out,
            "{\n  \"benchmark\": \"llm\",\n  \"model\": \"%s\",\n  \"threads\": 1,\n"
            "  \"params\": %zu,\n  \"positions\": %zu,\n"
            "  \"reference_us_per_position\": %.2f,\n  \"simulator\": [",
            path, ts_llm_model_n_params(m), n, fwd_s * 1e6);
    for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); k++) {
        ts_llm_sim_config_t cfg;
        ts_llm_sim_config_default(&cfg);
        if (configs[k][1][0] && ts_llm_sim_config_load_string(configs[k][1], strlen(configs[k][1]),
                                                              &cfg, err, sizeof(err)) != TS_OK) {
            fprintf(stderr, "bench_llm: %s\n", err);
            return 1;
        }
        ts_llm_sim_report_t rep;
        int sreps = quick ? 1 : 5;
        t0 = ts_now_ns();
        for (int r = 0; r < sreps; r++) {
            if (ts_llm_simulate(m, &cfg, ids, n, &rep) != TS_OK) {
                fprintf(stderr, "bench_llm: simulate failed\n");
                return 1;
            }
            if (r + 1 < sreps)
                ts_llm_sim_report_clear(&rep);
        }
        double us = (double)(ts_now_ns() - t0) * 1e-3 / ((double)sreps * (double)n);
        printf("simulate %-20s %8.1f us/position (both passes, incl. setup)  logits max err "
               "%.3e  agree %zu/%zu  ppl %.5f -> %.5f\n",
               configs[k][0], us, rep.logits_max_err, rep.agree, rep.positions, rep.ppl_exact,
               rep.ppl_approx);
        fprintf(out,
                "%s\n    {\"config\": \"%s\", \"us_per_position\": %.2f, \"logits_max_err\": %.6g, "
                "\"argmax_agree\": %zu, \"positions\": %zu, \"ppl_exact\": %.6g, "
                "\"ppl_approx\": %.6g}",
                k ? "," : "", configs[k][0], us, rep.logits_max_err, rep.agree, rep.positions,
                rep.ppl_exact, rep.ppl_approx);
        ts_llm_sim_report_clear(&rep);
    }
    fprintf(out, "\n  ]\n}\n");
    if (json)
        fclose(out);
    free(ids);
    ts_llm_model_free(m);
    return 0;
}

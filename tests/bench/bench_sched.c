/*
 * bench_sched: the scheduler's predictions and its own speed.
 *
 * For each model shape (the bundled aidreams260K, GPT-2 base, TinyLlama-1.1B,
 * Llama-3-8B) and context length, builds the decode-step graph and solves it
 * under the three policies with a cost table (the estimated cpu-default, or
 * --costs FILE, e.g. one written by `tessera bench`). Reports the predicted
 * per-token latency per policy, the hybrid speedups, bootstrap and TFHE
 * counts, and the wall time of the solver itself. Predictions, not
 * measurements of encrypted decoding: they are only as good as the table.
 *
 * Usage: bench_sched [--json PATH] [--quick] [--costs FILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched/sched.h"

typedef struct shape {
    const char *name;
    ts_sched_model_dims_t d;
} shape_t;

static void cpu_model(char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                c[strcspn(c, "\n")] = '\0';
                /* keep it JSON-safe */
                for (char *p = c; *p; p++)
                    if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
                        *p = ' ';
                snprintf(out, size, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL, *costs_path = NULL;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--costs") == 0 && i + 1 < argc)
            costs_path = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--json PATH] [--quick] [--costs FILE]\n", argv[0]);
            return 2;
        }
    }
    ts_sched_costs_t costs;
    if (costs_path) {
        ts_cfg_error_t err;
        if (ts_sched_costs_load(costs_path, &costs, &err) != TS_OK) {
            char line[600];
            ts_cfg_error_format(&err, line, sizeof line);
            fprintf(stderr, "bench_sched: %s\n", line);
            return 1;
        }
    } else {
        ts_sched_costs_default(&costs);
    }
    const shape_t shapes[] = {
        {"aidreams260K",
         {.dim = 64,
          .hidden_dim = 172,
          .n_layers = 4,
          .n_heads = 4,
          .n_kv_heads = 4,
          .vocab = 512}},
        {"gpt2-base",
         {.dim = 768,
          .hidden_dim = 3072,
          .n_layers = 12,
          .n_heads = 12,
          .n_kv_heads = 12,
          .vocab = 50257,
          .act = TS_ACT_GELU,
          .norm = TS_NORM_LAYER}},
        {"tinyllama-1.1b",
         {.dim = 2048,
          .hidden_dim = 5632,
          .n_layers = 22,
          .n_heads = 32,
          .n_kv_heads = 4,
          .vocab = 32000}},
        {"llama3-8b",
         {.dim = 4096,
          .hidden_dim = 14336,
          .n_layers = 32,
          .n_heads = 32,
          .n_kv_heads = 8,
          .vocab = 128256}},
    };
    const uint32_t ctx_full[] = {16, 64, 128, 512, 2048};
    const uint32_t ctx_quick[] = {16, 128};
    const uint32_t *ctx = quick ? ctx_quick : ctx_full;
    size_t n_ctx = quick ? 2 : 5, n_shapes = quick ? 2 : 4;

    FILE *out = json ? fopen(json, "w") : NULL;
    if (json && !out) {
        perror(json);
        return 1;
    }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    if (out)
        fprintf(out,
                "{\n  \"benchmark\": \"sched\",\n  \"threads\": 1,\n  \"machine\": {\"cpu\": "
                "\"%s\", \"cores\": %d},\n  \"costs\": \"%s\",\n  \"costs_estimated\": %s,\n"
                "  \"unit\": \"predicted seconds per token; solver wall ms\",\n  \"results\": [\n",
                cpu, ts_cpu_count(), costs.name, costs.estimated ? "true" : "false");
    printf("cost table %s%s; predicted seconds per decoded token\n", costs.name,
           costs.estimated ? " (estimated)" : "");
    printf("%-15s %5s %5s %12s %12s %12s %8s %8s %6s %6s %9s\n", "model", "ctx", "ops", "hybrid",
           "ckks", "tfhe", "x ckks", "x tfhe", "boots", "tfhe", "solve ms");
    int first = 1, rc = 0;
    for (size_t s = 0; s < n_shapes; s++) {
        for (size_t c = 0; c < n_ctx; c++) {
            ts_sched_model_dims_t d = shapes[s].d;
            d.seq_pos = ctx[c] - 1;
            d.slots = costs.slots > 0 ? (uint32_t)costs.slots : 0;
            ts_sched_graph_t *g = NULL;
            if (ts_sched_graph_build_decoder(&d, &g) != TS_OK) {
                rc = 1;
                continue;
            }
            ts_sched_plan_t *p[3] = {NULL, NULL, NULL};
            double solve_ms = 0;
            int ok = 1;
            for (int k = 0; k < 3 && ok; k++) {
                uint64_t t0 = ts_now_ns();
                ok = ts_sched_plan_new(g, &costs, (ts_sched_policy_t)k, &p[k]) == TS_OK;
                solve_ms += (double)(ts_now_ns() - t0) / 1e6;
            }
            if (ok) {
                double h = p[0]->total_ns / 1e9, ck = p[1]->total_ns / 1e9,
                       tf = p[2]->total_ns / 1e9;
                printf("%-15s %5u %5zu %12.1f %12.1f %12.1f %8.2f %8.2f %6u %6u %9.1f\n",
                       shapes[s].name, ctx[c], ts_sched_graph_count(g), h, ck, tf, ck / h, tf / h,
                       p[0]->n_boot, p[0]->n_tfhe, solve_ms / 3);
                if (out)
                    fprintf(out,
                            "%s    {\"model\": \"%s\", \"ctx\": %u, \"ops\": %zu, \"hybrid_s\": "
                            "%.3f, \"ckks_s\": %.3f, \"tfhe_s\": %.3f, \"speedup_vs_ckks\": "
                            "%.3f, \"speedup_vs_tfhe\": %.3f, \"hybrid_bootstraps\": %u, "
                            "\"ckks_bootstraps\": %u, \"hybrid_tfhe_ops\": %u, "
                            "\"rotation_keys\": %zu, \"solve_ms\": %.2f}",
                            first ? "" : ",\n", shapes[s].name, ctx[c], ts_sched_graph_count(g), h,
                            ck, tf, ck / h, tf / h, p[0]->n_boot, p[1]->n_boot, p[0]->n_tfhe,
                            p[0]->n_rot_steps, solve_ms / 3);
                first = 0;
            } else {
                rc = 1;
            }
            for (int k = 0; k < 3; k++)
                ts_sched_plan_free(p[k]);
            ts_sched_graph_free(g);
        }
    }
    if (out) {
        fprintf(out, "\n  ]\n}\n");
        fclose(out);
    }
    return rc;
}

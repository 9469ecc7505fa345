/*
 * tessera graph --model FILE [--format json|dot] [--pos N] [--slots S]
 *
 * The decode step of a model as the operator graph the scheduler plans over
 * (ROSETTA Table 2 and section 4.1): arithmetic primitives and the
 * non-arithmetic ones (exp, 1/x, 1/sqrt(x), SiLU, GELU) with their shapes,
 * as JSON or Graphviz dot (`tessera graph --model M --format dot | dot -Tsvg`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cmd_plan.h"
#include "core/sched/sched.h"

static void usage(FILE *f)
{
    fputs("usage: tessera graph --model FILE [--format json|dot] [--pos N] [--slots S]\n"
          "\n"
          "Prints the decode-step operator graph of a llama2.c or GGUF model: one node\n"
          "per operator (matvec, products, sums, RoPE, attention, exp, 1/x, 1/sqrt(x),\n"
          "SiLU, GELU) with its layer, inputs and shape. Non-arithmetic primitives are\n"
          "the candidates for TFHE (`tessera plan` decides).\n"
          "\n"
          "  -m, --model FILE   llama2.c checkpoint (.bin) or GGUF model\n"
          "  -f, --format F     json (default) or dot (Graphviz)\n"
          "      --pos N        decode position (attention length), default 0\n"
          "      --slots S      CKKS slot count used for packing, default from the builder\n"
          "  -h, --help         this text\n"
          "\n"
          "Exit status: 0 success, 1 model or graph error, 2 usage error.\n",
          f);
}

int ts_cmd_graph(int argc, char **argv)
{
    const char *model = NULL, *format = "json";
    ts_sched_model_dims_t d = {.act = TS_ACT_SWIGLU, .norm = TS_NORM_RMS};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "tessera graph: '%s' needs a value\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        char *end = NULL;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            model = v;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--format")) {
            format = v;
        } else if (!strcmp(a, "--pos") || !strcmp(a, "--slots")) {
            unsigned long x = strtoul(v, &end, 10);
            if (!*v || *end || x > 1u << 24) {
                fprintf(stderr, "tessera graph: %s wants a non-negative integer, got '%s'\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--pos"))
                d.seq_pos = (uint32_t)x;
            else
                d.slots = (uint32_t)x;
        } else {
            fprintf(stderr, "tessera graph: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model) {
        usage(stderr);
        return 2;
    }
    bool dot = !strcmp(format, "dot");
    if (!dot && strcmp(format, "json") != 0) {
        fprintf(stderr, "tessera graph: --format is json or dot\n");
        return 2;
    }
    if (ts_cli_dims_from_model("tessera graph", model, &d) != 0)
        return 1;
    ts_sched_graph_t *g = NULL;
    ts_status_t st = ts_sched_graph_build_decoder(&d, &g);
    if (st != TS_OK) {
        fprintf(stderr, "tessera graph: cannot build the graph: %s\n", ts_strerror(st));
        return 1;
    }
    char *text = NULL;
    size_t len = 0;
    st = dot ? ts_sched_graph_to_dot(g, &text, &len) : ts_sched_graph_to_json(g, &text, &len);
    ts_sched_graph_free(g);
    if (st != TS_OK) {
        fprintf(stderr, "tessera graph: %s\n", ts_strerror(st));
        return 1;
    }
    fwrite(text, 1, len, stdout);
    ts_free(text);
    return 0;
}

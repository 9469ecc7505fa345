/*
 * tessera — the client CLI. One subcommand per client/cmd_<name>.c, each
 * defining `int ts_cmd_<name>(int argc, char **argv)` (argv[0] is the
 * subcommand's name) with its own --help.
 *
 * To add a command: write client/cmd_<name>.c and add ONE line to
 * TS_COMMANDS below (name, one-line summary).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "server/tesserad.h"

#define TS_COMMANDS(X)                                                                             \
    X(ping, "check that tesserad answers; prints version, identity and round-trip time")           \
    X(stats, "print the daemon's counters (connections, queue, memory, latencies)")                \
    X(keys, "upload keys in resumable chunks, or ask which chunks the server holds")               \
    X(keygen, "make CKKS keys for a parameter preset (secret key mode 0600)")                      \
    X(encrypt, "encrypt a vector (csv, json, float32) into a ciphertext file")                     \
    X(decrypt, "decrypt a ciphertext file into a vector")                                          \
    X(aggregate, "one round of encrypted weighted averaging (seed 002, Algorithm 1)")              \
    X(bench,                                                                                       \
      "benchmarks: `bench ckks`, `bench boot`, `bench decode`, `bench aggregate`, `bench costs`")  \
    X(params, "list parameter presets (security, sizes); suggest primes for aggregation")          \
    X(run, "generate text with a model in plaintext (the reference the encrypted path matches)")   \
    X(simulate, "plaintext decode with simulated encryption error, per layer and on the logits")   \
    X(plan, "the scheduler's plan for a model: scheme and level of every operator")                \
    X(graph, "the decode-step operator graph of a model, as JSON or Graphviz dot")                 \
    X(generate, "private text generation against tesserad (encrypted tokens and logits)")

#define TS_CMD_DECLARE(name, summary) int ts_cmd_##name(int argc, char **argv);
TS_COMMANDS(TS_CMD_DECLARE)

typedef struct ts_cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} ts_cli_command_t;

#define TS_CMD_ENTRY(name, summary) {#name, summary, ts_cmd_##name},
static const ts_cli_command_t commands[] = {TS_COMMANDS(TS_CMD_ENTRY)};

static void usage(FILE *f)
{
    fprintf(f, "usage: tessera COMMAND [options]   (tessera COMMAND --help for each)\n\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nGlobal options (before COMMAND):\n"
               "  --backend cpu|gpu|auto, or env TESSERA_BACKEND: the compute backend of commands\n"
               "      that compute (default: the CPU; `bench costs`: auto). gpu without a working\n"
               "      GPU is an error.\n"
               "  --log-level error|warn|info|debug, or env TESSERA_LOG: what the library logs on\n"
               "      stderr (default warn; debug explains e.g. each assignment `plan` weighs).\n");
    fprintf(f, "\n%s", ts_cli_exit_help);
}

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *backend = getenv("TESSERA_BACKEND"), *log = getenv("TESSERA_LOG");
    for (;;) {
        if (argc >= 3 && !strcmp(argv[1], "--backend"))
            backend = argv[2];
        else if (argc >= 3 && !strcmp(argv[1], "--log-level"))
            log = argv[2];
        else
            break;
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    if (log && *log) {
        ts_log_level_t lv;
        if (ts_log_level_parse(log, &lv) != TS_OK) {
            fprintf(stderr, "tessera: unknown log level \"%s\" (error, warn, info, debug)\n", log);
            return TS_EXIT_USAGE;
        }
        ts_log_set_level(lv);
    }
    if (backend && *backend) {
        char used[16], why[400];
        ts_status_t st = ts_srv_backend_apply(backend, used, sizeof used, why, sizeof why);
        if (st != TS_OK) {
            fprintf(stderr, "tessera: %s\n", why);
            return st == TS_EINVAL ? TS_EXIT_USAGE : TS_EXIT_FAIL;
        }
        fprintf(stderr, "tessera: backend %s (%s)\n", used, why);
    }
    if (argc < 2) {
        usage(stderr);
        return TS_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return TS_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tessera: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return TS_EXIT_USAGE;
}

/*
 * client/cmd_plan.h — entry point of `tessera plan` (client/cmd_plan.c).
 *
 * int ts_cmd_plan(int argc, char **argv): argv[0] is the command name
 * ("plan"), the rest its options (see `tessera plan --help`). Prints to
 * stdout, errors to stderr. Returns 0 on success, 1 on a failure (unreadable
 * model or cost table, invalid dimensions), 2 on a usage error.
 */
#ifndef TS_CLIENT_CMD_PLAN_H
#define TS_CLIENT_CMD_PLAN_H

#include "core/sched/sched.h"

int ts_cmd_plan(int argc, char **argv);

/* Model dimensions from a llama2.c or GGUF file (errors on stderr, prefixed
 * with prog). 0 on success, -1 when the file cannot be loaded. */
int ts_cli_dims_from_model(const char *prog, const char *path, ts_sched_model_dims_t *d);

/* `tessera graph`: the decode-step operator graph as JSON or Graphviz dot. */
int ts_cmd_graph(int argc, char **argv);

#endif

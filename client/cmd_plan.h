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

int ts_cmd_plan(int argc, char **argv);

#endif

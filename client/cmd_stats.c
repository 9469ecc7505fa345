/* tessera stats: the daemon's counters. */
#include <string.h>

#include "client/client.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera stats [options]\n\n"
            "Prints the daemon's counters: connections, sessions, worker queue depth,\n"
            "memory held, frames and bytes, and per-operation counts and latencies.\n\n%s\n%s",
            ts_cli_conn_help, ts_cli_exit_help);
}

int ts_cmd_stats(int argc, char **argv)
{
    static const struct option opts[] = {TS_CLI_CONN_LONGOPTS, {NULL, 0, NULL, 0}};
    ts_cli_conn_t cc;
    ts_cli_conn_init(&cc);
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, TS_CLI_CONN_SHORTOPTS, opts, NULL)) != -1) {
        int r = ts_cli_conn_opt(&cc, ch, optarg, "tessera stats");
        if (r < 0)
            return TS_EXIT_USAGE;
        if (r > 0)
            continue;
        if (ch == 'h') {
            usage(stdout);
            return TS_EXIT_OK;
        }
        usage(stderr);
        return TS_EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "tessera stats: unexpected argument \"%s\"\n", argv[optind]);
        return TS_EXIT_USAGE;
    }
    ts_client_t *c = NULL;
    int rc = ts_cli_connect(&cc, "tessera stats", &c);
    if (rc != TS_EXIT_OK)
        return rc;
    Tessera__StatsRequest sr = TESSERA__STATS_REQUEST__INIT;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_STATS_REQUEST;
    req.stats_request = &sr;
    Tessera__Envelope *rep = NULL;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_STATS_REPLY, &rep);
    if (st != TS_OK) {
        rc = ts_cli_fail("tessera stats", c, st, cc.json);
        ts_net_envelope_free(rep);
        ts_client_close(c);
        return rc;
    }
    const Tessera__StatsReply *s = rep->stats_reply;
    if (cc.json) {
        printf("{\"ok\":true,\"uptime_ms\":%llu,\"connections\":%u,\"sessions\":%u,"
               "\"queue_depth\":%u,\"workers\":%u,\"memory_bytes\":%llu,"
               "\"connections_total\":%llu,\"frames_in\":%llu,\"frames_out\":%llu,"
               "\"bytes_in\":%llu,\"bytes_out\":%llu,\"keys_stored\":%llu,\"rejected\":%llu,"
               "\"ops\":[",
               (unsigned long long)s->uptime_ms, s->connections, s->sessions, s->queue_depth,
               s->workers, (unsigned long long)s->memory_bytes,
               (unsigned long long)s->connections_total, (unsigned long long)s->frames_in,
               (unsigned long long)s->frames_out, (unsigned long long)s->bytes_in,
               (unsigned long long)s->bytes_out, (unsigned long long)s->keys_stored,
               (unsigned long long)s->rejected);
        for (size_t i = 0; i < s->n_ops; i++) {
            const Tessera__OpStats *o = s->ops[i];
            printf("%s{\"op\":", i ? "," : "");
            ts_cli_json_str(stdout, o->op);
            printf(",\"count\":%llu,\"errors\":%llu,\"mean_us\":%.1f,\"max_us\":%llu}",
                   (unsigned long long)o->count, (unsigned long long)o->errors,
                   o->count ? (double)o->total_us / (double)o->count : 0.0,
                   (unsigned long long)o->max_us);
        }
        printf("]}\n");
    } else {
        printf("uptime %.1f s, %u connections (%llu total), %u sessions, queue %u, %u workers\n"
               "memory %llu bytes, frames in/out %llu/%llu, bytes in/out %llu/%llu, keys %llu, "
               "rejected %llu\n",
               (double)s->uptime_ms / 1e3, s->connections, (unsigned long long)s->connections_total,
               s->sessions, s->queue_depth, s->workers, (unsigned long long)s->memory_bytes,
               (unsigned long long)s->frames_in, (unsigned long long)s->frames_out,
               (unsigned long long)s->bytes_in, (unsigned long long)s->bytes_out,
               (unsigned long long)s->keys_stored, (unsigned long long)s->rejected);
        for (size_t i = 0; i < s->n_ops; i++) {
            const Tessera__OpStats *o = s->ops[i];
            printf("  %-20s %8llu calls %6llu errors  mean %9.1f us  max %9llu us\n", o->op,
                   (unsigned long long)o->count, (unsigned long long)o->errors,
                   o->count ? (double)o->total_us / (double)o->count : 0.0,
                   (unsigned long long)o->max_us);
        }
    }
    ts_net_envelope_free(rep);
    ts_client_close(c);
    return TS_EXIT_OK;
}

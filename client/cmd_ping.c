/* tessera ping: hello + ping round trips. */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera ping [options] [--count N]\n\n"
            "Connects (TLS 1.3, server certificate verified), exchanges hello and sends N\n"
            "pings (default 1). Prints the server, protocol version, this client's key\n"
            "namespace and the round-trip time.\n\n"
            "  -n, --count N           pings to send (1..1000)\n\n%s\n%s",
            ts_cli_conn_help, ts_cli_exit_help);
}

int ts_cmd_ping(int argc, char **argv)
{
    static const struct option opts[] = {
        TS_CLI_CONN_LONGOPTS, {"count", required_argument, NULL, 'n'}, {NULL, 0, NULL, 0}};
    ts_cli_conn_t cc;
    ts_cli_conn_init(&cc);
    long count = 1;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, TS_CLI_CONN_SHORTOPTS "n:", opts, NULL)) != -1) {
        int r = ts_cli_conn_opt(&cc, ch, optarg, "tessera ping");
        if (r < 0)
            return TS_EXIT_USAGE;
        if (r > 0)
            continue;
        if (ch == 'h') {
            usage(stdout);
            return TS_EXIT_OK;
        }
        if (ch == 'n') {
            count = strtol(optarg, NULL, 10);
            if (count < 1 || count > 1000) {
                fprintf(stderr, "tessera ping: --count must be 1..1000\n");
                return TS_EXIT_USAGE;
            }
            continue;
        }
        usage(stderr);
        return TS_EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "tessera ping: unexpected argument \"%s\"\n", argv[optind]);
        return TS_EXIT_USAGE;
    }
    uint64_t t0 = ts_now_ns();
    ts_client_t *c = NULL;
    int rc = ts_cli_connect(&cc, "tessera ping", &c);
    if (rc != TS_EXIT_OK)
        return rc;
    double connect_ms = (double)(ts_now_ns() - t0) / 1e6;
    double best = 1e30, total = 0;
    for (long i = 0; i < count; i++) {
        uint8_t payload[16];
        memcpy(payload, &i, sizeof i);
        Tessera__Ping p = TESSERA__PING__INIT;
        p.payload.data = payload;
        p.payload.len = sizeof payload;
        Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
        req.body_case = TESSERA__ENVELOPE__BODY_PING;
        req.ping = &p;
        Tessera__Envelope *rep = NULL;
        uint64_t t1 = ts_now_ns();
        ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_PONG, &rep);
        double ms = (double)(ts_now_ns() - t1) / 1e6;
        if (st == TS_OK && (rep->pong->payload.len != sizeof payload ||
                            memcmp(rep->pong->payload.data, payload, sizeof payload))) {
            snprintf(c->err, sizeof c->err, "pong payload differs from the ping's");
            st = TS_EPROTO;
        }
        ts_net_envelope_free(rep);
        if (st != TS_OK) {
            rc = ts_cli_fail("tessera ping", c, st, cc.json);
            ts_client_close(c);
            return rc;
        }
        total += ms;
        if (ms < best)
            best = ms;
    }
    if (cc.json) {
        printf("{\"ok\":true,\"server\":");
        ts_cli_json_str(stdout, c->server_name);
        printf(",\"version\":%u,\"identity\":", c->version);
        ts_cli_json_str(stdout, c->identity);
        printf(",\"insecure_params\":%s,\"count\":%ld,\"connect_ms\":%.3f,\"rtt_ms\":%.3f,"
               "\"rtt_min_ms\":%.3f}\n",
               c->insecure_params ? "true" : "false", count, connect_ms, total / (double)count,
               best);
    } else {
        printf("%s (protocol %u) at %s:%d: identity %s, connect %.2f ms, rtt %.3f ms (min %.3f "
               "over %ld)\n",
               c->server_name, c->version, cc.host, cc.port, c->identity, connect_ms,
               total / (double)count, best, count);
    }
    ts_client_close(c);
    return TS_EXIT_OK;
}

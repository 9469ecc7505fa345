/* Shared command-line helpers of tessera (client/client.h). */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

const char ts_cli_conn_help[] =
    "Connection options (defaults from TESSERA_SERVER, TESSERA_CA, TESSERA_CERT, TESSERA_KEY):\n"
    "  -s, --server HOST:PORT  the daemon (default 127.0.0.1:7878)\n"
    "      --ca FILE           CA certificate that must have signed the server's (required)\n"
    "      --cert FILE         client certificate for mutual TLS (with --key)\n"
    "      --key FILE          its private key\n"
    "      --servername NAME   name the server certificate must carry (default: HOST)\n"
    "      --timeout MS        give up waiting on the server after MS (default 30000)\n"
    "  -j, --json              one JSON object on stdout instead of text\n"
    "  -h, --help              this text\n";

const char ts_cli_exit_help[] =
    "Exit status: 0 success, 1 refused by the server or failed, 2 usage error,\n"
    "3 cannot connect (network, TLS, version), 4 local file or data error.\n";

static int parse_server(ts_cli_conn_t *cc, const char *arg)
{
    const char *colon = strrchr(arg, ':');
    if (!colon || colon == arg || strlen(arg) >= sizeof cc->host)
        return -1;
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (!end || *end || p <= 0 || p > 65535)
        return -1;
    size_t hl = (size_t)(colon - arg);
    memcpy(cc->host, arg, hl);
    cc->host[hl] = '\0';
    /* [::1]:7878 */
    if (cc->host[0] == '[' && hl >= 2 && cc->host[hl - 1] == ']') {
        memmove(cc->host, cc->host + 1, hl - 2);
        cc->host[hl - 2] = '\0';
    }
    cc->port = (int)p;
    return 0;
}

void ts_cli_conn_init(ts_cli_conn_t *cc)
{
    memset(cc, 0, sizeof *cc);
    snprintf(cc->host, sizeof cc->host, "127.0.0.1");
    cc->port = 7878;
    cc->timeout_ms = 30000;
    const char *s = getenv("TESSERA_SERVER");
    if (s && *s)
        parse_server(cc, s);
    cc->ca = getenv("TESSERA_CA");
    cc->cert = getenv("TESSERA_CERT");
    cc->key = getenv("TESSERA_KEY");
}

int ts_cli_conn_opt(ts_cli_conn_t *cc, int ch, const char *arg, const char *prog)
{
    switch (ch) {
    case 's':
        if (parse_server(cc, arg) != 0) {
            fprintf(stderr, "%s: --server wants HOST:PORT, got \"%s\"\n", prog, arg);
            return -1;
        }
        return 1;
    case 0x101:
        cc->ca = arg;
        return 1;
    case 0x102:
        cc->cert = arg;
        return 1;
    case 0x103:
        cc->key = arg;
        return 1;
    case 0x104:
        cc->servername = arg;
        return 1;
    case 0x105: {
        char *end = NULL;
        long v = strtol(arg, &end, 10);
        if (!end || *end || v <= 0 || v > 86400000) {
            fprintf(stderr, "%s: --timeout wants milliseconds, got \"%s\"\n", prog, arg);
            return -1;
        }
        cc->timeout_ms = (int)v;
        return 1;
    }
    case 'j':
        cc->json = true;
        return 1;
    default:
        return 0;
    }
}

void ts_cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void print_error_json(const char *kind, const char *msg, ts_status_t st)
{
    printf("{\"ok\":false,\"error\":");
    ts_cli_json_str(stdout, kind);
    printf(",\"status\":");
    ts_cli_json_str(stdout, ts_status_name(st));
    printf(",\"message\":");
    ts_cli_json_str(stdout, msg);
    printf("}\n");
}

int ts_cli_connect(const ts_cli_conn_t *cc, const char *prog, ts_client_t **out)
{
    *out = NULL;
    if (!cc->ca || !*cc->ca) {
        fprintf(stderr, "%s: --ca FILE is required to verify the server (or set TESSERA_CA)\n",
                prog);
        return TS_EXIT_USAGE;
    }
    ts_client_opts_t o = {.host = cc->host,
                          .port = cc->port,
                          .ca_file = cc->ca,
                          .cert_file = cc->cert,
                          .key_file = cc->key,
                          .servername = cc->servername,
                          .timeout_ms = cc->timeout_ms};
    char err[600];
    ts_status_t st = ts_client_connect(&o, out, err, sizeof err);
    if (st != TS_OK) {
        if (cc->json)
            print_error_json("connect", err, st);
        fprintf(stderr, "%s: cannot talk to %s:%d: %s\n", prog, cc->host, cc->port, err);
        return st == TS_ECONFIG ? TS_EXIT_USAGE : TS_EXIT_CONNECT;
    }
    if ((*out)->insecure_params)
        fprintf(stderr,
                "%s: warning: the daemon accepts insecure test parameters (--insecure-params)\n",
                prog);
    return TS_EXIT_OK;
}

int ts_cli_fail(const char *prog, ts_client_t *c, ts_status_t st, bool json)
{
    const char *msg = c && c->err[0] ? c->err : ts_strerror(st);
    if (json)
        print_error_json("server", msg, st);
    fprintf(stderr, "%s: %s (%s)\n", prog, msg, ts_status_name(st));
    return (st == TS_EIO || st == TS_ETIMEDOUT) ? TS_EXIT_CONNECT : TS_EXIT_FAIL;
}

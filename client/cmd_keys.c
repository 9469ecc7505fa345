/* tessera keys upload|status: resumable, content-addressed key upload. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "server/tesserad.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera keys upload FILE [--kind KIND] [--param-id ID] [options]\n"
            "       tessera keys status FILE|SHA256 [options]\n\n"
            "upload: sends FILE (a key written by `tessera keygen`) in the server's chunk size.\n"
            "  Keys are named by the SHA-256 of their bytes; chunks the server already holds\n"
            "  are skipped, so an interrupted upload resumes where it stopped, and a key the\n"
            "  server has is not sent again. The server verifies the hash before storing.\n"
            "status: which chunks of a key the server holds.\n\n"
            "      --kind KIND         what the key is (public, relin, galois...), for logs\n"
            "      --param-id ID       the parameter preset the key belongs to\n"
            "      --max-chunks N      stop after sending N chunks (to test resumption)\n\n"
            "%s\n%s",
            ts_cli_conn_help, ts_cli_exit_help);
}

static void print_report(const ts_upload_report_t *r, bool json, const char *what, bool known)
{
    char hex[65];
    ts_net_hex(r->sha256, 32, hex);
    if (json) {
        printf("{\"ok\":true,\"sha256\":\"%s\",\"size\":%llu,\"chunks\":%u,\"sent\":%u,"
               "\"skipped\":%u,\"known\":%s,\"complete\":%s}\n",
               hex, (unsigned long long)r->size, r->chunk_count, r->chunks_sent, r->chunks_skipped,
               known ? "true" : "false", r->complete ? "true" : "false");
    } else {
        printf("%s %s: %llu bytes, %u chunks, sent %u, already held %u, %s\n", what, hex,
               (unsigned long long)r->size, r->chunk_count, r->chunks_sent, r->chunks_skipped,
               r->complete ? "stored and verified"
               : known     ? "incomplete"
                           : "unknown to the server");
    }
}

int ts_cmd_keys(int argc, char **argv)
{
    static const struct option opts[] = {TS_CLI_CONN_LONGOPTS,
                                         {"kind", required_argument, NULL, 'k'},
                                         {"param-id", required_argument, NULL, 'p'},
                                         {"max-chunks", required_argument, NULL, 'm'},
                                         {NULL, 0, NULL, 0}};
    ts_cli_conn_t cc;
    ts_cli_conn_init(&cc);
    const char *kind = "", *param_id = "";
    long max_chunks = 0;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, TS_CLI_CONN_SHORTOPTS "k:p:m:", opts, NULL)) != -1) {
        int r = ts_cli_conn_opt(&cc, ch, optarg, "tessera keys");
        if (r < 0)
            return TS_EXIT_USAGE;
        if (r > 0)
            continue;
        switch (ch) {
        case 'h':
            usage(stdout);
            return TS_EXIT_OK;
        case 'k':
            kind = optarg;
            break;
        case 'p':
            param_id = optarg;
            break;
        case 'm':
            max_chunks = strtol(optarg, NULL, 10);
            if (max_chunks < 1) {
                fprintf(stderr, "tessera keys: --max-chunks must be positive\n");
                return TS_EXIT_USAGE;
            }
            break;
        default:
            usage(stderr);
            return TS_EXIT_USAGE;
        }
    }
    if (argc - optind != 2 || (strcmp(argv[optind], "upload") && strcmp(argv[optind], "status"))) {
        fprintf(stderr, "tessera keys: want `upload FILE` or `status FILE|SHA256`\n");
        usage(stderr);
        return TS_EXIT_USAGE;
    }
    bool upload = strcmp(argv[optind], "upload") == 0;
    const char *arg = argv[optind + 1];
    uint8_t sha[32];
    const uint8_t *data = NULL;
    size_t size = 0;
    bool by_hash = !upload && ts_net_unhex32(arg, sha);
    if (!by_hash) {
        char err[600];
        if (ts_file_map(arg, &data, &size, err, sizeof err) != TS_OK) {
            fprintf(stderr, "tessera keys: %s\n", err);
            return TS_EXIT_LOCAL;
        }
        if (size == 0) {
            fprintf(stderr, "tessera keys: %s is empty\n", arg);
            return TS_EXIT_LOCAL;
        }
        ts_sha256(data, size, sha);
    }
    ts_client_t *c = NULL;
    int rc = ts_cli_connect(&cc, "tessera keys", &c);
    if (rc != TS_EXIT_OK) {
        ts_file_unmap(data, size);
        return rc;
    }
    ts_upload_report_t rep;
    ts_status_t st;
    bool known = true;
    if (upload)
        st = ts_client_key_upload(c, data, size, kind, param_id, (uint32_t)max_chunks,
                                  !cc.json && isatty(2), &rep);
    else
        st = ts_client_key_query(c, sha, &rep, &known);
    if (st != TS_OK)
        rc = ts_cli_fail("tessera keys", c, st, cc.json);
    else
        print_report(&rep, cc.json, upload ? "key" : "status of", known);
    ts_client_close(c);
    ts_file_unmap(data, size);
    return rc;
}

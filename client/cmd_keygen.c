/* tessera keygen: make a CKKS key pair for a parameter preset. */
#include <string.h>

#include "client/client.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera keygen --params PRESET --out DIR [--params-dir D] [--insecure-params] "
            "[--json]\n\n"
            "Makes the keys a service needs for a CKKS preset (configs/params/PRESET.yaml):\n"
            "  DIR/secret.key  the secret, stored as a 32-byte seed, mode 0600 (never sent)\n"
            "  DIR/public.key  the public key (upload it with `tessera keys upload`)\n"
            "The weighted-average service needs no evaluation keys. An existing secret key is\n"
            "never overwritten. Presets marked insecure need --insecure-params.\n\n"
            "  -p, --params PRESET     parameter preset name (e.g. pfedckks-n13)\n"
            "  -o, --out DIR           where to write the keys (created mode 0700)\n"
            "      --params-dir D      preset folder (default configs/params)\n"
            "      --insecure-params   allow presets marked insecure (tests only)\n"
            "  -j, --json              one JSON object on stdout\n"
            "  -h, --help              this text\n\n%s",
            ts_cli_exit_help);
}

int ts_cmd_keygen(int argc, char **argv)
{
    static const struct option opts[] = {{"params", required_argument, NULL, 'p'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"params-dir", required_argument, NULL, 'D'},
                                         {"insecure-params", no_argument, NULL, 'I'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *preset = NULL, *out = NULL, *pdir = "configs/params";
    bool insecure = false, json = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "p:o:jh", opts, NULL)) != -1) {
        switch (ch) {
        case 'p':
            preset = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'D':
            pdir = optarg;
            break;
        case 'I':
            insecure = true;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            usage(stdout);
            return TS_EXIT_OK;
        default:
            usage(stderr);
            return TS_EXIT_USAGE;
        }
    }
    if (!preset || !out || optind < argc) {
        fprintf(stderr, "tessera keygen: --params and --out are required\n");
        return TS_EXIT_USAGE;
    }
    char err[600], hex[65] = "";
    uint64_t t0 = ts_now_ns();
    ts_status_t st = ts_cli_keygen(out, pdir, preset, insecure, hex, err, sizeof err);
    if (st != TS_OK) {
        if (json) {
            printf("{\"ok\":false,\"status\":\"%s\",\"message\":", ts_status_name(st));
            ts_cli_json_str(stdout, err);
            printf("}\n");
        }
        fprintf(stderr, "tessera keygen: %s\n", err);
        return st == TS_EPARAMS || st == TS_ESECURITY ? TS_EXIT_USAGE : TS_EXIT_LOCAL;
    }
    double ms = (double)(ts_now_ns() - t0) / 1e6;
    if (json) {
        printf("{\"ok\":true,\"params\":");
        ts_cli_json_str(stdout, preset);
        printf(",\"dir\":");
        ts_cli_json_str(stdout, out);
        printf(",\"public_key_sha256\":\"%s\",\"ms\":%.1f}\n", hex, ms);
    } else {
        printf("keys for %s in %s (public key %s, %.1f ms)\n", preset, out, hex, ms);
    }
    return TS_EXIT_OK;
}

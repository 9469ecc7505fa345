/*
 * tesserad — the tessera daemon. Parses the command line, loads the config,
 * and runs the server until SIGTERM/SIGINT (graceful) ; SIGHUP reloads
 * certificates and limits. Exit codes: 0 clean shutdown, 1 runtime failure,
 * 2 usage or configuration error.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/tesserad.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tesserad [--config FILE] [--insecure-params] [--check-config]\n"
            "\n"
            "The tessera daemon: serves encrypted computation over TLS 1.3.\n"
            "\n"
            "  -c, --config FILE     YAML configuration (default configs/tesserad.yaml)\n"
            "      --insecure-params accept parameter presets marked `insecure: true`\n"
            "                        (small test parameters without 128-bit security).\n"
            "                        Without this flag they are refused, and clients are\n"
            "                        told why.\n"
            "      --check-config    load and check the configuration and certificates, then exit\n"
            "      --log-level LVL   override log.level (error|warn|info|debug|trace)\n"
            "  -h, --help            this text\n"
            "\n"
            "Signals: SIGTERM/SIGINT drain and stop (running work finishes, waiting work is\n"
            "canceled, clients are told); SIGHUP reloads the configuration and certificates.\n"
            "Logs are JSON lines on stderr (log.json: false for plain text).\n"
            "Exit status: 0 clean shutdown, 1 runtime failure, 2 usage or configuration error.\n");
}

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *config = "configs/tesserad.yaml";
    const char *log_level = NULL;
    bool insecure = false, check_only = false;
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"insecure-params", no_argument, NULL, 'I'},
        {"check-config", no_argument, NULL, 'C'}, {"log-level", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            config = optarg;
            break;
        case 'I':
            insecure = true;
            break;
        case 'C':
            check_only = true;
            break;
        case 'L':
            log_level = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tesserad: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return 2;
    }
    ts_srv_config_t cfg;
    ts_srv_config_defaults(&cfg);
    char err[1024];
    if (ts_srv_config_load(config, &cfg, err, sizeof err) != TS_OK) {
        fprintf(stderr, "tesserad: configuration error: %s\n", err);
        return 2;
    }
    if (log_level) {
        ts_log_level_t lvl;
        if (ts_log_level_parse(log_level, &lvl) != TS_OK) {
            fprintf(stderr, "tesserad: --log-level must be error|warn|info|debug|trace\n");
            return 2;
        }
        snprintf(cfg.log.level, sizeof cfg.log.level, "%s", log_level);
    }
    /* The compute backend, before anything makes a ring (issue 9): "gpu"
     * without a working GPU refuses to start; "auto" says why it chose. */
    char be_used[16], be_why[400];
    const char *be_name = ts_srv_backend_names[cfg.backend];
    ts_status_t st = ts_srv_backend_apply(be_name, be_used, sizeof be_used, be_why, sizeof be_why);
    if (st != TS_OK) {
        fprintf(stderr, "tesserad: %s: refusing to start: %s\n", config, be_why);
        return 1;
    }
    ts_log(TS_LOG_INFO, "tesserad", "event=backend requested=%s backend=%s reason=\"%s\"", be_name,
           be_used, be_why);
    ts_server_opts_t so = {.config_path = config,
                           .insecure_params = insecure,
                           .handle_signals = true,
                           .check_only = check_only};
    ts_server_t *srv = NULL;
    st = ts_server_new(&cfg, &so, &srv, err, sizeof err);
    if (st != TS_OK) {
        fprintf(stderr, "tesserad: %s\n", err);
        return st == TS_ECONFIG || st == TS_ECRYPTO ? 2 : 1;
    }
    if (check_only) {
        printf("tesserad: configuration %s is valid (port %d)\n", config, ts_server_port(srv));
        ts_server_free(srv);
        return 0;
    }
    if (insecure)
        ts_log(TS_LOG_WARN, "tesserad",
               "event=insecure_params msg=--insecure-params: presets without 128-bit security "
               "are accepted; every client is told so in the hello reply");
    st = ts_server_run(srv);
    ts_server_free(srv);
    return st == TS_OK ? 0 : 1;
}

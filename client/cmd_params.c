/*
 * tessera params: list the CKKS presets (security, sizes, precision), and
 * `params suggest`: choose primes for encrypted weighted averaging under the
 * constraints of seed 002 (N = 8192, L = 1, q0 = q2 > q1 = scale, log2(Q) under
 * the 128-bit bound).
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "core/serial/serial.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera params [list] [--params-dir D] [--json]\n"
            "       tessera params suggest --precision BITS [--integer-bits I] [--json]\n\n"
            "list: every CKKS preset with N, levels, log2(QP) against the 128-bit bound for\n"
            "  its ring degree, the default scale and the size of a fresh ciphertext.\n"
            "suggest: primes for encrypted weighted averaging (seed 002): N = 8192, one level,\n"
            "  outer primes q0 = q2 > inner prime q1 = scale. The inner prime is the wanted\n"
            "  fractional precision plus 16 bits of noise headroom (fresh public-key\n"
            "  encryption and one rescale at N = 8192 lose about 13 bits on average and 16 in\n"
            "  the worst slot); the outer primes add the integer bits and a sign bit. The\n"
            "  suggestion is refused when 2*outer + inner passes the security bound. Prints the\n"
            "  preset as YAML (or JSON).\n\n"
            "      --params-dir D      preset folder (default configs/params)\n"
            "      --precision BITS    bits after the binary point wanted (suggest)\n"
            "      --integer-bits I    bits before the point, |x| < 2^I (default 1)\n"
            "  -j, --json              JSON output\n"
            "  -h, --help              this text\n\n%s",
            ts_cli_exit_help);
}

static size_t ct_bytes(const ts_ckks_params_t *p)
{
    size_t n = ts_ckks_params_n(p), bytes = 0;
    for (int j = 0; j <= ts_ckks_params_max_level(p); j++) {
        size_t b = 0;
        ts_serial_packed_bytes(n, ts_serial_width(ts_ckks_params_q(p, (size_t)j)), &b);
        bytes += 2 * b;
    }
    return bytes + TS_SERIAL_HEADER_BYTES + 12;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list(const char *dir, bool json)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tessera params: cannot open %s\n", dir);
        return TS_EXIT_LOCAL;
    }
    char *names[256];
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && count < 256) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".yaml"))
            names[count++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, cmp_str);
    if (json)
        printf("{\"ok\":true,\"presets\":[");
    int shown = 0;
    for (size_t i = 0; i < count; i++) {
        char path[800];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        ts_ckks_params_literal_t lit;
        ts_ckks_params_t *p = NULL;
        /* Not every YAML here is a CKKS preset (TFHE sets live beside them). */
        if (ts_ckks_params_literal_load_file(path, &lit, NULL) != TS_OK ||
            ts_ckks_params_new(&lit, true, &p) != TS_OK)
            continue;
        double bound = 0;
        bool known = ts_ckks_security_max_logqp(ts_ckks_params_log_n(p), ts_ckks_params_secret(p),
                                                ts_ckks_params_hamming_weight(p), &bound) == TS_OK;
        double logqp = ts_ckks_params_logqp(p);
        bool secure = !lit.insecure && known && logqp <= bound;
        if (json) {
            printf("%s{\"name\":", shown ? "," : "");
            ts_cli_json_str(stdout, ts_ckks_params_name(p));
            printf(",\"log_n\":%d,\"levels\":%d,\"logqp\":%.2f,\"max_logqp\":%.2f,"
                   "\"security\":\"%s\",\"scale_log2\":%.2f,\"slots\":%zu,"
                   "\"ciphertext_bytes\":%zu}",
                   ts_ckks_params_log_n(p), ts_ckks_params_max_level(p), logqp, known ? bound : 0,
                   secure ? "128-bit" : "insecure", ts_ckks_params_scale_log2(p),
                   ts_ckks_params_slots(p), ct_bytes(p));
        } else {
            printf("%-20s N=2^%-2d L=%-2d log2(QP)=%7.2f (max %6.1f) %-9s scale 2^%-5.1f "
                   "slots %-6zu ciphertext %zu bytes\n",
                   ts_ckks_params_name(p), ts_ckks_params_log_n(p), ts_ckks_params_max_level(p),
                   logqp, known ? bound : 0.0, secure ? "128-bit" : "INSECURE",
                   ts_ckks_params_scale_log2(p), ts_ckks_params_slots(p), ct_bytes(p));
        }
        shown++;
        ts_ckks_params_free(p);
    }
    if (json)
        printf("]}\n");
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    return TS_EXIT_OK;
}

static int suggest(long precision, long integer_bits, bool json)
{
    if (precision < 1 || precision > 40 || integer_bits < 0 || integer_bits > 20) {
        fprintf(stderr, "tessera params suggest: --precision 1..40 and --integer-bits 0..20\n");
        return TS_EXIT_USAGE;
    }
    long inner = precision + 16, outer = inner + integer_bits + 1;
    if (inner < 20)
        inner = 20;
    if (outer <= inner)
        outer = inner + 1;
    double bound = 0;
    ts_ckks_security_max_logqp(13, TS_CKKS_SECRET_TERNARY, 0, &bound);
    long total = 2 * outer + inner;
    if (outer > 60) {
        fprintf(stderr,
                "tessera params suggest: the outer primes would need %ld bits (at most 60); ask "
                "for fewer bits\n",
                outer);
        return TS_EXIT_FAIL;
    }
    if ((double)total > bound) {
        fprintf(stderr,
                "tessera params suggest: %ld + %ld + %ld = %ld bits passes the 128-bit bound of "
                "%.0f bits at N = 8192; ask for fewer bits\n",
                outer, inner, outer, total, bound);
        return TS_EXIT_FAIL;
    }
    /* Validate it for real: primes exist and the gate admits it. */
    char name[64];
    snprintf(name, sizeof name, "agg-n13-%ld-%ld", outer, inner);
    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof lit.name, "%s", name);
    lit.log_n = 13;
    lit.logq[0] = outer;
    lit.logq[1] = inner;
    lit.logq_count = 2;
    lit.logp[0] = outer;
    lit.logp_count = 1;
    lit.scale_log2 = (double)inner;
    ts_ckks_params_t *p = NULL;
    ts_status_t st = ts_ckks_params_new(&lit, false, &p);
    if (st != TS_OK) {
        fprintf(stderr, "tessera params suggest: the preset is refused: %s\n", ts_strerror(st));
        return TS_EXIT_FAIL;
    }
    size_t bytes = ct_bytes(p);
    ts_ckks_params_free(p);
    if (json) {
        printf("{\"ok\":true,\"name\":\"%s\",\"outer_bits\":%ld,\"inner_bits\":%ld,"
               "\"total_bits\":%ld,\"max_bits\":%.0f,\"ciphertext_bytes\":%zu,"
               "\"expected_precision_bits\":%ld}\n",
               name, outer, inner, total, bound, bytes, precision);
    } else {
        printf("# Suggested by `tessera params suggest --precision %ld --integer-bits %ld`:\n"
               "# seed 002 constraints, N = 8192, L = 1, q0 = q2 = %ld bits > q1 = scale = %ld "
               "bits,\n# %ld of at most %.0f bits; fresh ciphertext %zu bytes.\n"
               "name: %s\nlog_n: 13\nlogq: [%ld, %ld]\nlogp: [%ld]\nscale_log2: %ld\n"
               "secret: ternary\n",
               precision, integer_bits, outer, inner, total, bound, bytes, name, outer, inner,
               outer, inner);
    }
    return TS_EXIT_OK;
}

int ts_cmd_params(int argc, char **argv)
{
    static const struct option opts[] = {{"params-dir", required_argument, NULL, 'D'},
                                         {"precision", required_argument, NULL, 'P'},
                                         {"integer-bits", required_argument, NULL, 'B'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = "configs/params";
    long precision = 0, integer_bits = 1;
    bool json = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        switch (ch) {
        case 'D':
            dir = optarg;
            break;
        case 'P':
            precision = strtol(optarg, NULL, 10);
            break;
        case 'B':
            integer_bits = strtol(optarg, NULL, 10);
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
    const char *sub = optind < argc ? argv[optind] : "list";
    if (optind + 1 < argc) {
        fprintf(stderr, "tessera params: unexpected argument \"%s\"\n", argv[optind + 1]);
        return TS_EXIT_USAGE;
    }
    if (!strcmp(sub, "list"))
        return list(dir, json);
    if (!strcmp(sub, "suggest"))
        return suggest(precision, integer_bits, json);
    fprintf(stderr, "tessera params: unknown subcommand \"%s\" (list, suggest)\n", sub);
    return TS_EXIT_USAGE;
}

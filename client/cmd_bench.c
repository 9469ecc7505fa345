/*
 * tessera bench aggregate: encrypted weighted-average aggregation over the prime grid of seed 002
 * (pFedCKKS): N = 8192, L = 1, q0 = q2 = outer bits, q1 = scale = inner bits,
 * outer 20..40 and inner 18..38 in steps of 4 (outer > inner), 3 clients with
 * synthetic updates of the seed's model sizes (30.2K parameters by default;
 * --sizes adds 6.6M and 8M). Per configuration: encryption and decryption time
 * per client, server aggregation time (the daemon's code path,
 * ts_agg_compute), bytes each client sends and receives per round (the wire
 * encoding of server/ckks_wire.h: residues bit-packed at their prime's width),
 * and precision (mean and max |error| per parameter against the plaintext
 * weighted average). Bytes grow with outer + inner bits without a
 * byte-alignment step.
 *
 * `tessera bench aggregate [--json PATH] [--quick] [--sizes]`; build/bench/bench_aggregate
 * runs the same code (tests/bench/bench_aggregate.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "server/ckks_wire.h"
#include "server/tesserad.h"

typedef struct result {
    int outer, inner;
    size_t params;
    const char *status;
    double enc_ms, agg_ms, dec_ms, mean_err, max_err;
    size_t sent, received, cts;
} result_t;

static double ms(uint64_t t0)
{
    return (double)(ts_now_ns() - t0) / 1e6;
}

static void run_one(int outer, int inner, size_t len, result_t *r)
{
    memset(r, 0, sizeof *r);
    r->outer = outer;
    r->inner = inner;
    r->params = len;
    r->status = "ok";
    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof lit.name, "agg-%d-%d", outer, inner);
    lit.log_n = 13;
    lit.logq[0] = outer;
    lit.logq[1] = inner;
    lit.logq_count = 2;
    lit.logp[0] = outer;
    lit.logp_count = 1;
    lit.scale_log2 = inner;
    ts_ckks_params_t *p = NULL;
    if (ts_ckks_params_new(&lit, false, &p) != TS_OK) {
        r->status = "params refused (no NTT prime of that size, or security gate)";
        return;
    }
    /* The aggregation service loads presets by name: write this one to a temp dir. */
    char dir[] = "/tmp/tessera-bench-agg-XXXXXX";
    if (!mkdtemp(dir)) {
        r->status = "mkdtemp failed";
        ts_ckks_params_free(p);
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/%s.yaml", dir, lit.name);
    FILE *f = fopen(path, "w");
    fprintf(f, "name: %s\nlog_n: 13\nlogq: [%d, %d]\nlogp: [%d]\nscale_log2: %d\n", lit.name, outer,
            inner, outer, inner);
    fclose(f);
    uint8_t id[32];
    ts_wire_params_id(p, id);
    size_t slots = ts_ckks_params_slots(p), n_ct = (len + slots - 1) / slots;
    int top = ts_ckks_params_max_level(p);
    enum { K = 3 };
    const uint64_t w[K] = {120, 45, 300};
    double *x = malloc(K * len * sizeof *x), *ref = calloc(len, sizeof *ref);
    double *out = malloc(slots * sizeof *out);
    ts_prng_t *rng = NULL;
    uint8_t seed[TS_SEED_BYTES] = {7};
    ts_prng_new_seeded(seed, 1, &rng);
    double wsum = (double)(w[0] + w[1] + w[2]);
    for (size_t j = 0; j < len; j++)
        for (int i = 0; i < K; i++) {
            double u;
            ts_prng_double(rng, &u);
            x[i * len + j] = (2 * u - 1) * 0.5; /* model weights are small */
            ref[j] += (double)w[i] * x[i * len + j] / wsum;
        }
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_public_key_t *pk = NULL;
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_ckks_ciphertext_t *ct = NULL;
    ts_ckks_keygen_secret(p, rng, &sk);
    ts_ckks_keygen_public(sk, rng, &pk);
    ts_ckks_encoder_new(p, &enc);
    ts_ckks_plaintext_new(p, top, &pt);
    ts_ckks_ciphertext_new(p, top, &ct);
    ProtobufCBinaryData *cts[K];
    ts_agg_input_t in[K];
    uint64_t t0 = ts_now_ns();
    for (int i = 0; i < K; i++) {
        cts[i] = calloc(n_ct, sizeof *cts[i]);
        for (size_t c = 0; c < n_ct; c++) {
            size_t m = len - c * slots < slots ? len - c * slots : slots;
            ts_status_t st = ts_ckks_encode_real(enc, x + i * len + c * slots, m, 0, top,
                                                 ts_ckks_params_scale(p), pt);
            if (st == TS_OK)
                st = ts_ckks_encrypt_pk(pk, pt, rng, ct);
            if (st == TS_OK)
                st = ts_wire_ct_encode(ct, id, 0, &cts[i][c].data, &cts[i][c].len);
            if (st != TS_OK) {
                r->status = "encryption failed (values out of range for these primes)";
                goto out;
            }
            if (i == 0)
                r->sent += cts[i][c].len;
        }
        in[i].weight = w[i];
        in[i].count = n_ct;
        in[i].cts = cts[i];
    }
    r->enc_ms = ms(t0) / K;
    r->cts = n_ct;
    ProtobufCBinaryData *res = NULL;
    char why[256] = "";
    t0 = ts_now_ns();
    ts_status_t st = ts_agg_compute(dir, lit.name, false, 0, in, K, n_ct, &res, why, sizeof why);
    r->agg_ms = ms(t0);
    if (st != TS_OK) {
        r->status = "aggregation failed";
        fprintf(stderr, "bench_aggregate: %d/%d: %s\n", outer, inner, why);
        goto out;
    }
    t0 = ts_now_ns();
    double sum = 0, max = 0;
    for (size_t c = 0; c < n_ct; c++) {
        r->received += res[c].len;
        ts_ckks_ciphertext_t *rc = NULL;
        ts_ckks_plaintext_t *rp = NULL;
        st = ts_wire_ct_decode(p, id, res[c].data, res[c].len, 1, &rc, why, sizeof why);
        if (st == TS_OK)
            st = ts_ckks_plaintext_new(p, ts_ckks_ciphertext_level(rc), &rp);
        if (st == TS_OK)
            st = ts_ckks_decrypt(sk, rc, rp);
        size_t m = len - c * slots < slots ? len - c * slots : slots;
        if (st == TS_OK)
            st = ts_ckks_decode_real(enc, rp, out, m);
        ts_ckks_plaintext_free(rp);
        ts_ckks_ciphertext_free(rc);
        if (st != TS_OK) {
            r->status = "decryption failed";
            break;
        }
        for (size_t j = 0; j < m; j++) {
            double e = fabs(out[j] - ref[c * slots + j]);
            sum += e;
            if (e > max || isnan(e))
                max = e;
        }
    }
    r->dec_ms = ms(t0);
    r->mean_err = sum / (double)len;
    r->max_err = max;
    ts_agg_result_free(res, n_ct);
out:
    for (int i = 0; i < K; i++) {
        for (size_t c = 0; cts[i] && c < n_ct; c++)
            ts_free(cts[i][c].data);
        free(cts[i]);
    }
    ts_ckks_ciphertext_free(ct);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_public_key_free(pk);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(rng);
    ts_ckks_params_free(p);
    free(x);
    free(ref);
    free(out);
    remove(path);
    remove(dir);
}

int ts_bench_costs(int argc, char **argv); /* client/cmd_bench_costs.c */

/* argv[0] is "aggregate"; options follow. */
int ts_bench_aggregate(int argc, char **argv)
{
    const char *json = NULL;
    bool quick = false, sizes = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--sizes"))
            sizes = true;
        else {
            fprintf(stderr, "usage: tessera bench aggregate [--json PATH] [--quick] [--sizes]\n");
            return 2;
        }
    }
    ts_log_set_level(TS_LOG_ERROR);
    size_t models[3] = {30200, 6600000, 8000000};
    int n_models = sizes ? 3 : 1;
    FILE *f = json ? fopen(json, "w") : stdout;
    if (!f)
        return 1;
    fprintf(f, "{\"benchmark\":\"aggregate\",\"seed\":\"002 pFedCKKS\",\"log_n\":13,"
               "\"clients\":3,\"results\":[");
    int first = 1;
    for (int m = 0; m < n_models; m++)
        for (int outer = 20; outer <= 40; outer += quick ? 8 : 4)
            for (int inner = 18; inner <= 38; inner += quick ? 8 : 4) {
                if (outer <= inner)
                    continue;
                result_t r;
                run_one(outer, inner, quick ? 4096 : models[m], &r);
                fprintf(f,
                        "%s\n{\"outer_bits\":%d,\"inner_bits\":%d,\"parameters\":%zu,"
                        "\"status\":\"%s\",\"ciphertexts\":%zu,\"encrypt_ms_per_client\":%.2f,"
                        "\"aggregate_ms\":%.2f,\"decrypt_ms_per_client\":%.2f,"
                        "\"bytes_sent_per_client\":%zu,\"bytes_received_per_client\":%zu,"
                        "\"mean_abs_error\":%.3g,\"max_abs_error\":%.3g}",
                        first ? "" : ",", r.outer, r.inner, r.params, r.status, r.cts, r.enc_ms,
                        r.agg_ms, r.dec_ms, r.sent, r.received, r.mean_err, r.max_err);
                first = 0;
                fprintf(stderr,
                        "aggregate %2d/%2d bits, %zu params: enc %.1f ms, agg %.1f ms, dec %.1f "
                        "ms, sent %zu B, recv %zu B, mean err %.2g, max %.2g (%s)\n",
                        r.outer, r.inner, r.params, r.enc_ms, r.agg_ms, r.dec_ms, r.sent,
                        r.received, r.mean_err, r.max_err, r.status);
            }
    fprintf(f, "\n]}\n");
    if (f != stdout)
        fclose(f);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tessera bench aggregate [--json PATH] [--quick] [--sizes]\n"
        "       tessera bench costs --params PRESET --out FILE [...]   (see --help there)\n"
        "       tessera bench ckks [--json PATH] [--quick] [--threads N] [...]   (--help there)\n"
        "       tessera bench boot [--json PATH] [--quick] [--threads N] [...]   (--help there)\n"
        "       tessera bench decode [--json PATH] [--quick] [...]   (--help there): encrypted\n"
        "       decode latency per position and its breakdown (issue 10)\n\n"
        "ckks: the CKKS benchmarks of issue 3 (FHElium suite with its matrix products,\n"
        "client encode+encrypt, N = 2^16 operations); boot: CKKS bootstrapping latency\n"
        "and precision (issue 4). Both run the code of build/bench/bench_ckks and\n"
        "bench_boot. aggregate:\n"
        "Encrypted weighted averaging over the prime grid of seed 002 (N = 8192, L = 1,\n"
        "outer 20..40 and inner 18..38 bits, 3 clients, 30.2K parameters; --sizes adds\n"
        "6.6M and 8M): encryption, aggregation and decryption time, bytes sent and\n"
        "received per client, mean and max error against the plaintext average.\n"
        "JSON to PATH (default stdout), a table on stderr. --quick: a 3 x 3 grid of\n"
        "4096 parameters.\n\n%s",
        ts_cli_exit_help);
}

int ts_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? TS_EXIT_USAGE : TS_EXIT_OK;
    }
    if (strcmp(argv[1], "costs") == 0)
        return ts_bench_costs(argc - 1, argv + 1);
    if (strcmp(argv[1], "ckks") == 0)
        return ts_bench_ckks(argc - 1, argv + 1);
    if (strcmp(argv[1], "boot") == 0)
        return ts_bench_boot(argc - 1, argv + 1);
    if (strcmp(argv[1], "decode") == 0)
        return ts_bench_decode(argc - 1, argv + 1);
    if (strcmp(argv[1], "aggregate") != 0) {
        fprintf(stderr,
                "tessera bench: unknown benchmark \"%s\" (aggregate, costs, ckks, boot, decode)\n",
                argv[1]);
        return TS_EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return TS_EXIT_OK;
        }
    return ts_bench_aggregate(argc - 1, argv + 1);
}

/*
 * tessera aggregate: one client's round of encrypted weighted averaging
 * (seed 002, Algorithm 1, lines 19-22 and 16-17): encrypt the update with the
 * public key, send it with the sample count, wait for the round, fetch the
 * encrypted weighted average and decrypt it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "server/ckks_wire.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tessera aggregate --keys DIR --round NAME --participants N --weight W\n"
        "                         --input FILE [--output FILE] [options]\n\n"
        "Encrypts the vector in FILE (csv, json or raw float32 by extension or --format)\n"
        "under the keys of DIR (tessera keygen), sends it with its weight (the sample\n"
        "count |D_i|) to round NAME, waits until all N participants have sent theirs,\n"
        "and writes the decrypted weighted average sum_i w_i x_i / sum_i w_i.\n\n"
        "  -k, --keys DIR          keys from tessera keygen (same keys for every participant)\n"
        "  -r, --round NAME        round name shared by the participants\n"
        "  -n, --participants N    contributions that close the round\n"
        "  -w, --weight W          this client's sample count (positive integer)\n"
        "  -i, --input FILE        this client's update\n"
        "  -o, --output FILE       the average (default: stdout as csv; '-' = stdout)\n"
        "      --format F          csv | json | f32 for input and output\n"
        "      --wait-ms MS        how long to wait for the round (default 600000)\n"
        "      --params-dir D      preset folder (default configs/params)\n"
        "      --insecure-params   allow presets marked insecure (tests only)\n"
        "      --symmetric         encrypt with the secret key instead of the public key\n"
        "                          (Algorithm 1 uses pk; every participant holds sk): c_1\n"
        "                          then travels as a 32-byte seed, about half the upload\n\n%s\n%s",
        ts_cli_conn_help, ts_cli_exit_help);
}

static double ms_since(uint64_t t0)
{
    return (double)(ts_now_ns() - t0) / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int ts_cmd_aggregate(int argc, char **argv)
{
    static const struct option opts[] = {TS_CLI_CONN_LONGOPTS,
                                         {"keys", required_argument, NULL, 'k'},
                                         {"round", required_argument, NULL, 'r'},
                                         {"participants", required_argument, NULL, 'n'},
                                         {"weight", required_argument, NULL, 'w'},
                                         {"input", required_argument, NULL, 'i'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"format", required_argument, NULL, 'F'},
                                         {"wait-ms", required_argument, NULL, 'W'},
                                         {"params-dir", required_argument, NULL, 'D'},
                                         {"insecure-params", no_argument, NULL, 'I'},
                                         {"symmetric", no_argument, NULL, 'S'},
                                         {NULL, 0, NULL, 0}};
    const char *prog = "tessera aggregate";
    ts_cli_conn_t cc;
    ts_cli_conn_init(&cc);
    const char *keys_dir = NULL, *round = NULL, *input = NULL, *output = "-", *format = NULL;
    const char *pdir = "configs/params";
    long participants = 0, wait_ms = 600000;
    long long weight = 0;
    bool insecure = false, symmetric = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, TS_CLI_CONN_SHORTOPTS "k:r:n:w:i:o:", opts, NULL)) != -1) {
        int r = ts_cli_conn_opt(&cc, ch, optarg, prog);
        if (r < 0)
            return TS_EXIT_USAGE;
        if (r > 0)
            continue;
        switch (ch) {
        case 'h':
            usage(stdout);
            return TS_EXIT_OK;
        case 'k':
            keys_dir = optarg;
            break;
        case 'r':
            round = optarg;
            break;
        case 'n':
            participants = strtol(optarg, NULL, 10);
            break;
        case 'w':
            weight = strtoll(optarg, NULL, 10);
            break;
        case 'i':
            input = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'F':
            format = optarg;
            break;
        case 'W':
            wait_ms = strtol(optarg, NULL, 10);
            break;
        case 'D':
            pdir = optarg;
            break;
        case 'I':
            insecure = true;
            break;
        case 'S':
            symmetric = true;
            break;
        default:
            usage(stderr);
            return TS_EXIT_USAGE;
        }
    }
    if (!keys_dir || !round || !input || participants < 1 || participants > 1024 || weight < 1 ||
        wait_ms < 1 || optind < argc) {
        fprintf(stderr,
                "%s: --keys, --round, --participants (1..1024), --weight (>= 1) and "
                "--input are required (see --help)\n",
                prog);
        return TS_EXIT_USAGE;
    }
    char err[600];
    ts_cli_keys_t keys;
    ts_status_t st = ts_cli_keys_load(keys_dir, pdir, insecure, &keys, err, sizeof err);
    if (st != TS_OK) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return TS_EXIT_LOCAL;
    }
    double *x = NULL, *avg = NULL;
    size_t len = 0;
    ts_client_t *c = NULL;
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_ckks_ciphertext_t *ct = NULL;
    ts_prng_t *prng = NULL;
    ProtobufCBinaryData *cts = NULL;
    size_t n_ct = 0;
    int rc = TS_EXIT_LOCAL;
    st = ts_cli_vector_read(input, format, &x, &len, err, sizeof err);
    if (st != TS_OK) {
        fprintf(stderr, "%s: %s\n", prog, err);
        goto out;
    }
    /* Encode + encrypt (Algorithm 1, line 21) at the top level and default scale. */
    ts_ckks_params_t *p = keys.params;
    size_t slots = ts_ckks_params_slots(p);
    int top = ts_ckks_params_max_level(p);
    n_ct = (len + slots - 1) / slots;
    uint64_t t_enc = ts_now_ns();
    cts = calloc(n_ct, sizeof *cts);
    if (!cts || ts_ckks_encoder_new(p, &enc) != TS_OK ||
        ts_ckks_plaintext_new(p, top, &pt) != TS_OK ||
        ts_ckks_ciphertext_new(p, top, &ct) != TS_OK || ts_prng_new_os(&prng) != TS_OK) {
        fprintf(stderr, "%s: out of memory or no OS randomness\n", prog);
        goto out;
    }
    size_t bytes_ct = 0;
    for (size_t i = 0; i < n_ct; i++) {
        size_t m = len - i * slots < slots ? len - i * slots : slots;
        st = ts_ckks_encode_real(enc, x + i * slots, m, 0, top, ts_ckks_params_scale(p), pt);
        if (st == TS_OK)
            st = symmetric ? ts_ckks_encrypt_sk(keys.sk, pt, prng, NULL, ct)
                           : ts_ckks_encrypt_pk(keys.pk, pt, prng, ct);
        if (st == TS_OK)
            st = ts_wire_ct_encode(ct, keys.params_id, 0, &cts[i].data, &cts[i].len);
        if (st != TS_OK) {
            fprintf(stderr, "%s: encrypting values %zu..%zu failed: %s%s\n", prog, i * slots,
                    i * slots + m, ts_strerror(st),
                    st == TS_ERANGE ? " (values too large for this preset)" : "");
            goto out;
        }
        bytes_ct += cts[i].len;
    }
    double enc_ms = ms_since(t_enc);
    rc = ts_cli_connect(&cc, prog, &c);
    if (rc != TS_EXIT_OK)
        goto out;
    /* Session for the service and preset. */
    Tessera__SessionOpen so = TESSERA__SESSION_OPEN__INIT;
    so.service = "aggregate";
    so.param_id = keys.params_name;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_SESSION_OPEN;
    req.session_open = &so;
    Tessera__Envelope *rep = NULL;
    st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_SESSION_OPENED, &rep);
    if (st != TS_OK) {
        rc = ts_cli_fail(prog, c, st, cc.json);
        ts_net_envelope_free(rep);
        goto out;
    }
    uint64_t session = rep->session_opened->session_id;
    ts_net_envelope_free(rep);
    /* Send the contribution in parts that fit the server's frames (line 22). */
    uint64_t t_send = ts_now_ns();
    size_t budget = c->limits.max_frame_bytes - 4096;
    bool progress = !cc.json && isatty(2) && n_ct > 1;
    uint64_t job = 0;
    for (size_t first = 0; first < n_ct;) {
        size_t k = 0, bytes = 0;
        while (first + k < n_ct && (k == 0 || bytes + cts[first + k].len + 16 <= budget)) {
            bytes += cts[first + k].len + 16;
            k++;
        }
        Tessera__AggregateContribution ac = TESSERA__AGGREGATE_CONTRIBUTION__INIT;
        ac.round = (char *)round;
        ac.participants = (uint32_t)participants;
        ac.weight = (uint64_t)weight;
        ac.length = len;
        ac.total = (uint32_t)n_ct;
        ac.first = (uint32_t)first;
        ac.n_ciphertexts = k;
        ac.ciphertexts = cts + first;
        Tessera__JobSubmit js = TESSERA__JOB_SUBMIT__INIT;
        js.session_id = session;
        js.work_case = TESSERA__JOB_SUBMIT__WORK_AGGREGATE;
        js.aggregate = &ac;
        req.body_case = TESSERA__ENVELOPE__BODY_JOB_SUBMIT;
        req.job_submit = &js;
        st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_JOB_ACCEPTED, &rep);
        if (st != TS_OK) {
            rc = ts_cli_fail(prog, c, st, cc.json);
            ts_net_envelope_free(rep);
            goto out;
        }
        job = rep->job_accepted->job_id;
        ts_net_envelope_free(rep);
        first += k;
        if (progress)
            fprintf(stderr, "\r%s: sent %zu/%zu ciphertexts%s", prog, first, n_ct,
                    first == n_ct ? "\n" : "");
    }
    double send_ms = ms_since(t_send);
    /* Wait for the round. */
    uint64_t t_wait = ts_now_ns();
    int nap = 20;
    for (;;) {
        Tessera__JobStatusRequest q = TESSERA__JOB_STATUS_REQUEST__INIT;
        q.job_id = job;
        req.body_case = TESSERA__ENVELOPE__BODY_JOB_STATUS_REQUEST;
        req.job_status_request = &q;
        st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_JOB_STATUS, &rep);
        if (st != TS_OK) {
            rc = ts_cli_fail(prog, c, st, cc.json);
            ts_net_envelope_free(rep);
            goto out;
        }
        Tessera__JobState state = rep->job_status->state;
        if (state == TESSERA__JOB_STATE__JOB_FAILED || state == TESSERA__JOB_STATE__JOB_CANCELED) {
            snprintf(c->err, sizeof c->err, "round failed: %s", rep->job_status->detail);
            ts_net_envelope_free(rep);
            rc = ts_cli_fail(prog, c, TS_ECANCELED, cc.json);
            goto out;
        }
        ts_net_envelope_free(rep);
        if (state == TESSERA__JOB_STATE__JOB_DONE)
            break;
        if (ms_since(t_wait) > (double)wait_ms) {
            snprintf(c->err, sizeof c->err, "the round did not complete within %ld ms", wait_ms);
            rc = ts_cli_fail(prog, c, TS_ETIMEDOUT, cc.json);
            goto out;
        }
        sleep_ms(nap);
        if (nap < 500)
            nap *= 2;
    }
    double wait_total_ms = ms_since(t_wait);
    /* Fetch and decrypt the encrypted average (lines 16-17). */
    avg = calloc(len, sizeof *avg);
    double *buf = malloc(slots * sizeof *buf);
    if (!avg || !buf) {
        free(buf);
        goto out;
    }
    uint64_t t_dec = ts_now_ns();
    double fetch_ms = 0;
    for (uint32_t first = 0; first < n_ct;) {
        Tessera__JobResultRequest q = TESSERA__JOB_RESULT_REQUEST__INIT;
        q.job_id = job;
        q.first = first;
        req.body_case = TESSERA__ENVELOPE__BODY_JOB_RESULT_REQUEST;
        req.job_result_request = &q;
        uint64_t tf = ts_now_ns();
        st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_JOB_RESULT, &rep);
        fetch_ms += ms_since(tf);
        if (st == TS_OK && (rep->job_result->total != n_ct || rep->job_result->first != first ||
                            rep->job_result->n_ciphertexts == 0 ||
                            rep->job_result->n_ciphertexts > n_ct - first)) {
            snprintf(c->err, sizeof c->err, "inconsistent result page from the server");
            st = TS_EPROTO;
        }
        if (st != TS_OK) {
            rc = ts_cli_fail(prog, c, st, cc.json);
            ts_net_envelope_free(rep);
            free(buf);
            goto out;
        }
        for (size_t i = 0; i < rep->job_result->n_ciphertexts; i++) {
            size_t idx = first + i;
            ts_ckks_ciphertext_t *r = NULL;
            char why[256];
            st = ts_wire_ct_decode(p, keys.params_id, rep->job_result->ciphertexts[i].data,
                                   rep->job_result->ciphertexts[i].len, 1, &r, why, sizeof why);
            ts_ckks_plaintext_t *rp = NULL;
            if (st == TS_OK)
                st = ts_ckks_plaintext_new(p, ts_ckks_ciphertext_level(r), &rp);
            if (st == TS_OK)
                st = ts_ckks_decrypt(keys.sk, r, rp);
            size_t m = len - idx * slots < slots ? len - idx * slots : slots;
            if (st == TS_OK)
                st = ts_ckks_decode_real(enc, rp, buf, m);
            ts_ckks_plaintext_free(rp);
            ts_ckks_ciphertext_free(r);
            if (st != TS_OK) {
                fprintf(stderr, "%s: result %zu cannot be decrypted: %s\n", prog, idx,
                        ts_strerror(st));
                ts_net_envelope_free(rep);
                free(buf);
                rc = TS_EXIT_FAIL;
                goto out;
            }
            memcpy(avg + idx * slots, buf, m * sizeof *buf);
        }
        first += (uint32_t)rep->job_result->n_ciphertexts;
        ts_net_envelope_free(rep);
    }
    free(buf);
    double dec_ms = ms_since(t_dec) - fetch_ms;
    if (strcmp(output, "-") || !cc.json) {
        st = ts_cli_vector_write(output, format, avg, len, err, sizeof err);
        if (st != TS_OK) {
            fprintf(stderr, "%s: %s\n", prog, err);
            goto out;
        }
    }
    if (cc.json) {
        printf("{\"ok\":true,\"round\":");
        ts_cli_json_str(stdout, round);
        printf(",\"params\":");
        ts_cli_json_str(stdout, keys.params_name);
        printf(",\"length\":%zu,\"ciphertexts\":%zu,\"ciphertext_bytes\":%zu,\"bytes_sent\":%llu,"
               "\"bytes_received\":%llu,\"encrypt_ms\":%.2f,\"send_ms\":%.2f,\"wait_ms\":%.2f,"
               "\"fetch_ms\":%.2f,\"decrypt_ms\":%.2f}\n",
               len, n_ct, bytes_ct, (unsigned long long)c->bytes_sent,
               (unsigned long long)c->bytes_received, enc_ms, send_ms, wait_total_ms, fetch_ms,
               dec_ms);
    }
    rc = TS_EXIT_OK;
out:
    ts_client_close(c);
    for (size_t i = 0; cts && i < n_ct; i++)
        ts_free(cts[i].data);
    free(cts);
    free(x);
    free(avg);
    ts_prng_free(prng);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_cli_keys_clear(&keys);
    return rc;
}

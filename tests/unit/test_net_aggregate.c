/*
 * The encrypted weighted-average service end to end (seed 002, Algorithm 1):
 * the real tesserad, three real `tessera aggregate` clients with different
 * weights (two encrypting with the public key, one with the secret key and a
 * seeded c_1), the decrypted result compared with the plaintext weighted average;
 * and hostile contributions (wrong parameter id, residue at the modulus,
 * garbage, refused presets) rejected while the daemon keeps serving.
 *
 * Precision: preset pfedckks-n13 (the seed's recommended (28, 26, 28) bits,
 * scale 2^26) on values in [-1, 1]: every decrypted value within 1e-2 of the
 * plaintext average (observed max ~1.3e-3, mean ~1.6e-4).
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "client/client.h"
#include "server/ckks_wire.h"
#include "server/tesserad.h"
#include "tests/unit/net_test_util.h"

static char certs[512];

static void setup(void)
{
    net_tmpdir(certs, sizeof certs, "agg-certs");
    net_make_certs(certs, "client");
}

static void teardown(void)
{
    net_rm_rf(certs);
}

typedef net_daemon_t daemon_t;

static void start(daemon_t *d, bool insecure)
{
    /* Small frames: an update of several ciphertexts travels in several parts. */
    net_daemon_start(d, certs, NULL, "  chunk_bytes: 65536\n",
                     "limits:\n  max_frame_bytes: 262144\n  max_decompressed_bytes: 262144\n",
                     insecure);
}

static void stop(daemon_t *d)
{
    int st = net_daemon_stop(d);
    ck_assert_msg(st == 0, "tesserad exit status %d (see %s)", st, d->dir);
    net_rm_rf(d->dir);
}

static void write_vec(const char *path, const double *v, size_t n)
{
    FILE *f = fopen(path, "w");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.17g\n", v[i]);
    fclose(f);
}

START_TEST(test_three_clients_weighted_average)
{
    daemon_t d;
    start(&d, false);
    char cmd[4096], keys[600];
    snprintf(keys, sizeof keys, "%s/keys-client", d.dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera keygen --params pfedckks-n13 --out %s --json > %s/keygen.json",
             ts_test_build_dir(), keys, d.dir);
    ck_assert_int_eq(system(cmd), 0);
    /* 3 clients, 10000 values each (3 ciphertexts of 4096 slots, several frames). */
    enum { K = 3, LEN = 10000 };
    static double x[K][LEN], ref[LEN];
    const long w[K] = {120, 45, 300};
    ts_prng_t *rng;
    uint8_t seed[TS_SEED_BYTES] = {42};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 2, &rng));
    double wsum = 0;
    for (int i = 0; i < K; i++)
        wsum += (double)w[i];
    for (size_t j = 0; j < LEN; j++) {
        ref[j] = 0;
        for (int i = 0; i < K; i++) {
            double u;
            ts_prng_double(rng, &u);
            x[i][j] = 2 * u - 1;
            ref[j] += (double)w[i] * x[i][j] / wsum;
        }
    }
    ts_prng_free(rng);
    pid_t kids[K];
    for (int i = 0; i < K; i++) {
        char in[700];
        snprintf(in, sizeof in, "%s/x%d.csv", d.dir, i);
        write_vec(in, x[i], LEN);
        snprintf(cmd, sizeof cmd,
                 "%s/tessera aggregate --server 127.0.0.1:%d --ca %s/ca.crt --keys %s --round r1 "
                 "--participants %d --weight %ld --input %s --output %s/out%d.csv --json %s"
                 "> %s/agg%d.json 2> %s/agg%d.err",
                 ts_test_build_dir(), d.port, certs, keys, K, w[i], in, d.dir, i,
                 /* one participant encrypts with the secret key: seeded c_1 on the wire */
                 i == 1 ? "--symmetric " : "", d.dir, i, d.dir, i);
        kids[i] = fork();
        if (kids[i] == 0) {
            int rc = system(cmd);
            _exit(WIFEXITED(rc) ? WEXITSTATUS(rc) : 99);
        }
    }
    for (int i = 0; i < K; i++) {
        int st;
        waitpid(kids[i], &st, 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d exited %d (see %s)", i,
                      WEXITSTATUS(st), d.dir);
    }
    for (int i = 0; i < K; i++) {
        char out[700], err[300];
        snprintf(out, sizeof out, "%s/out%d.csv", d.dir, i);
        double *v = NULL;
        size_t n = 0;
        ck_assert_ts_ok(ts_cli_vector_read(out, NULL, &v, &n, err, sizeof err));
        ck_assert_uint_eq(n, LEN);
        double max = 0, mean = 0;
        for (size_t j = 0; j < LEN; j++) {
            double e = fabs(v[j] - ref[j]);
            mean += e / LEN;
            if (e > max)
                max = e;
        }
        free(v);
        fprintf(stderr, "aggregate client %d: max |err| %.3g, mean %.3g (bound 1e-2)\n", i, max,
                mean);
        ck_assert_msg(max < 1e-2, "client %d: max error %g vs the plaintext average", i, max);
        ck_assert_msg(mean > 0, "an exact result means nothing was encrypted");
    }
    stop(&d);
}
END_TEST

/* A connected, hello'd client with a session for `preset`. */
static ts_client_t *session(const daemon_t *d, const char *preset, uint64_t *sid, ts_status_t *st)
{
    char ca[600], err[600];
    snprintf(ca, sizeof ca, "%s/ca.crt", certs);
    ts_client_opts_t o = {.host = "127.0.0.1",
                          .port = d->port,
                          .ca_file = ca,
                          .servername = "localhost",
                          .timeout_ms = 10000};
    ts_client_t *c = NULL;
    ck_assert_ts_ok(ts_client_connect(&o, &c, err, sizeof err));
    Tessera__SessionOpen so = TESSERA__SESSION_OPEN__INIT;
    so.service = "aggregate";
    so.param_id = (char *)preset;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT, *rep = NULL;
    req.body_case = TESSERA__ENVELOPE__BODY_SESSION_OPEN;
    req.session_open = &so;
    *st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_SESSION_OPENED, &rep);
    *sid = *st == TS_OK ? rep->session_opened->session_id : 0;
    ts_net_envelope_free(rep);
    return c;
}

static ts_status_t submit(ts_client_t *c, uint64_t sid, const char *round, uint32_t n,
                          ProtobufCBinaryData *ct)
{
    Tessera__AggregateContribution ac = TESSERA__AGGREGATE_CONTRIBUTION__INIT;
    ac.round = (char *)round;
    ac.participants = n;
    ac.weight = 3;
    ac.length = 4;
    ac.n_ciphertexts = 1;
    ac.ciphertexts = ct;
    Tessera__JobSubmit js = TESSERA__JOB_SUBMIT__INIT;
    js.session_id = sid;
    js.work_case = TESSERA__JOB_SUBMIT__WORK_AGGREGATE;
    js.aggregate = &ac;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT, *rep = NULL;
    req.body_case = TESSERA__ENVELOPE__BODY_JOB_SUBMIT;
    req.job_submit = &js;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_JOB_ACCEPTED, &rep);
    ts_net_envelope_free(rep);
    return st;
}

START_TEST(test_hostile_contributions)
{
    daemon_t d;
    start(&d, false);
    ts_status_t st;
    uint64_t sid;
    /* Insecure presets are refused without --insecure-params, and the client is told why. */
    ts_client_t *c = session(&d, "test-n10", &sid, &st);
    ck_assert_ts_status(st, TS_ESECURITY);
    ck_assert_msg(strstr(c->err, "--insecure-params") != NULL, "%s", c->err);
    ts_client_close(c);
    c = session(&d, "no-such-preset", &sid, &st);
    ck_assert_ts_status(st, TS_EPARAMS);
    ts_client_close(c);
    c = session(&d, "../../etc/passwd", &sid, &st);
    ck_assert_ts_status(st, TS_EPARAMS);
    ts_client_close(c);

    c = session(&d, "pfedckks-n13", &sid, &st);
    ck_assert_ts_ok(st);
    /* A real ciphertext to start from. */
    ts_ckks_params_t *p = NULL;
    uint8_t id[32];
    char why[300];
    ck_assert_ts_ok(
        ts_wire_params_get("configs/params", "pfedckks-n13", false, &p, id, why, sizeof why));
    ts_prng_t *rng;
    ck_assert_ts_ok(ts_prng_new_os(&rng));
    ts_ckks_secret_key_t *sk;
    ts_ckks_encoder_t *enc;
    ts_ckks_plaintext_t *pt;
    ts_ckks_ciphertext_t *ct;
    ck_assert_ts_ok(ts_ckks_keygen_secret(p, rng, &sk));
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    int top = ts_ckks_params_max_level(p);
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, top, &pt));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(p, top, &ct));
    double v[4] = {0.5, -0.25, 0.125, 1};
    ck_assert_ts_ok(ts_ckks_encode_real(enc, v, 4, 0, top, ts_ckks_params_scale(p), pt));
    ck_assert_ts_ok(ts_ckks_encrypt_sk(sk, pt, rng, NULL, ct));
    /* 1: another parameter id. */
    uint8_t other[32];
    memcpy(other, id, 32);
    other[0] ^= 1;
    ProtobufCBinaryData bad = {0, NULL};
    ck_assert_ts_ok(ts_wire_ct_encode(ct, other, 0, &bad.data, &bad.len));
    ck_assert_ts_status(submit(c, sid, "h1", 2, &bad), TS_EMISMATCH);
    ts_free(bad.data);
    /* 2: a residue equal to its modulus. */
    size_t n = ts_ckks_params_n(p);
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u8(&w, 1);
    ts_put_u8(&w, (uint8_t)top);
    ts_put_u8(&w, 1);
    ts_put_u8(&w, (uint8_t)ts_ckks_params_log_slots(p));
    ts_put_f64(&w, ts_ckks_params_scale(p));
    uint64_t *limb = calloc(n, sizeof *limb);
    for (int i = 0; i <= 1; i++)
        for (int j = 0; j <= top; j++) {
            uint64_t q = ts_ckks_params_q(p, (size_t)j);
            limb[7] = (i == 1 && j == top) ? q : 1;
            ts_put_packed(&w, limb, n, ts_serial_width(q));
        }
    free(limb);
    ck_assert_ts_ok(ts_serial_seal(&w, TS_OBJ_CKKS_CIPHERTEXT, id, 0, &bad.data, &bad.len));
    ts_writer_clear(&w);
    ck_assert_ts_status(submit(c, sid, "h1", 2, &bad), TS_EFORMAT);
    ck_assert_msg(strstr(c->err, "modulus") != NULL, "%s", c->err);
    ts_free(bad.data);
    /* 3: garbage bytes and a truncated ciphertext. */
    uint8_t junk[100];
    memset(junk, 0x41, sizeof junk);
    bad.data = junk;
    bad.len = sizeof junk;
    ck_assert_int_ne(submit(c, sid, "h1", 2, &bad), TS_OK);
    ProtobufCBinaryData good = {0, NULL};
    ck_assert_ts_ok(ts_wire_ct_encode(ct, id, 0, &good.data, &good.len));
    bad.data = good.data;
    bad.len = good.len / 2;
    ck_assert_int_ne(submit(c, sid, "h1", 2, &bad), TS_OK);
    /* 4: a valid contribution is still accepted on the same connection. */
    ck_assert_ts_ok(submit(c, sid, "h1", 2, &good));
    /* A second contribution from the same session to the same round is refused. */
    ck_assert_ts_status(submit(c, sid, "h1", 2, &good), TS_EINVAL);
    ts_free(good.data);
    ts_client_close(c);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(rng);
    ts_ckks_params_free(p);
    /* The daemon still answers. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s/tessera ping --server 127.0.0.1:%d --ca %s/ca.crt >/dev/null 2>&1",
             ts_test_build_dir(), d.port, certs);
    ck_assert_int_eq(system(cmd), 0);
    stop(&d);
}
END_TEST

START_TEST(test_insecure_preset_with_flag)
{
    /* With --insecure-params the test preset is admitted and hello says so. */
    daemon_t d;
    start(&d, true);
    ts_status_t st;
    uint64_t sid;
    ts_client_t *c = session(&d, "test-n10", &sid, &st);
    ck_assert_ts_ok(st);
    ck_assert(c->insecure_params);
    ts_client_close(c);
    stop(&d);
}
END_TEST

START_TEST(test_encrypt_decrypt_files)
{
    char dir[512], cmd[4096], path[700], err[300];
    net_tmpdir(dir, sizeof dir, "crypt");
    const char *b = ts_test_build_dir();
    snprintf(cmd, sizeof cmd, "%s/tessera keygen --params pfedckks-n13 --out %s/k >/dev/null", b,
             dir);
    ck_assert_int_eq(system(cmd), 0);
    struct stat sb;
    snprintf(path, sizeof path, "%s/k/secret.key", dir);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);
    /* A second keygen never overwrites the secret key. */
    snprintf(cmd, sizeof cmd, "%s/tessera keygen --params pfedckks-n13 --out %s/k 2>/dev/null", b,
             dir);
    ck_assert_int_ne(system(cmd), 0);
    enum { LEN = 5000 };
    static double v[LEN];
    for (size_t i = 0; i < LEN; i++)
        v[i] = sin((double)i) * 0.9;
    snprintf(path, sizeof path, "%s/v.csv", dir);
    write_vec(path, v, LEN);
    snprintf(cmd, sizeof cmd,
             "%s/tessera encrypt -k %s/k -i %s -o %s/v.ct && %s/tessera decrypt -k %s/k -i %s/v.ct "
             "-o %s/back.json",
             b, dir, path, dir, b, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/back.json", dir);
    double *back = NULL;
    size_t n = 0;
    ck_assert_ts_ok(ts_cli_vector_read(path, NULL, &back, &n, err, sizeof err));
    ck_assert_uint_eq(n, LEN);
    double max = 0;
    for (size_t i = 0; i < LEN; i++)
        max = fmax(max, fabs(back[i] - v[i]));
    free(back);
    ck_assert_msg(max < 1e-2 && max > 0, "max error %g", max);
    /* Symmetric encryption: c_1 travels as its seed, about half the bytes. */
    snprintf(cmd, sizeof cmd,
             "%s/tessera encrypt --symmetric -k %s/k -i %s/v.csv -o %s/s.ct && %s/tessera decrypt "
             "-k %s/k -i %s/s.ct -o %s/back2.csv",
             b, dir, dir, dir, b, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    struct stat full, half;
    snprintf(path, sizeof path, "%s/v.ct", dir);
    ck_assert_int_eq(stat(path, &full), 0);
    snprintf(path, sizeof path, "%s/s.ct", dir);
    ck_assert_int_eq(stat(path, &half), 0);
    ck_assert_msg(half.st_size * 2 < full.st_size + 4096 && half.st_size * 2 > full.st_size - 4096,
                  "seeded %lld bytes vs %lld", (long long)half.st_size, (long long)full.st_size);
    snprintf(path, sizeof path, "%s/back2.csv", dir);
    ck_assert_ts_ok(ts_cli_vector_read(path, NULL, &back, &n, err, sizeof err));
    ck_assert_uint_eq(n, LEN);
    max = 0;
    for (size_t i = 0; i < LEN; i++)
        max = fmax(max, fabs(back[i] - v[i]));
    free(back);
    ck_assert_msg(max < 1e-2 && max > 0, "max error %g (symmetric)", max);
    /* A truncated ciphertext file is refused with the local-data exit code. */
    snprintf(cmd, sizeof cmd,
             "head -c 50000 %s/v.ct > %s/cut.ct && %s/tessera decrypt -k %s/k -i %s/cut.ct -o "
             "%s/x.csv 2>/dev/null",
             dir, dir, b, dir, dir, dir);
    int st = system(cmd);
    ck_assert_int_eq(WEXITSTATUS(st), TS_EXIT_LOCAL);
    net_rm_rf(dir);
}
END_TEST

/*
 * Flooding noise on results: with coefficients uniform in [-B, B] added to c_0,
 * each real slot carries noise of standard deviation sqrt(N / 6) * B / scale
 * (variance B^2/3 per coefficient, half of it in the real part after decoding).
 */
START_TEST(test_flooding_noise_matches_formula)
{
    ts_ckks_params_t *p = NULL;
    uint8_t id[32];
    char why[300];
    ck_assert_ts_ok(
        ts_wire_params_get("configs/params", "pfedckks-n13", false, &p, id, why, sizeof why));
    ts_prng_t *rng;
    ck_assert_ts_ok(ts_prng_new_os(&rng));
    ts_ckks_secret_key_t *sk;
    ts_ckks_encoder_t *enc;
    ts_ckks_plaintext_t *pt;
    ts_ckks_ciphertext_t *ct;
    int top = ts_ckks_params_max_level(p);
    size_t slots = ts_ckks_params_slots(p), n = ts_ckks_params_n(p);
    ck_assert_ts_ok(ts_ckks_keygen_secret(p, rng, &sk));
    ck_assert_ts_ok(ts_ckks_encoder_new(p, &enc));
    ck_assert_ts_ok(ts_ckks_plaintext_new(p, top, &pt));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(p, top, &ct));
    double *zero = calloc(slots, sizeof *zero), *out = calloc(slots, sizeof *out);
    ck_assert_ts_ok(ts_ckks_encode_real(enc, zero, slots, 0, top, ts_ckks_params_scale(p), pt));
    ck_assert_ts_ok(ts_ckks_encrypt_sk(sk, pt, rng, NULL, ct));
    ProtobufCBinaryData in = {0, NULL};
    ck_assert_ts_ok(ts_wire_ct_encode(ct, id, 0, &in.data, &in.len));
    ts_agg_input_t input = {.weight = 1, .count = 1, .cts = &in};
    double sd[2];
    for (int flood = 0; flood < 2; flood++) {
        ProtobufCBinaryData *res = NULL;
        ck_assert_ts_ok(ts_agg_compute("configs/params", "pfedckks-n13", false, flood ? 16 : 0,
                                       &input, 1, 1, &res, why, sizeof why));
        ts_ckks_ciphertext_t *rc = NULL;
        ts_ckks_plaintext_t *rp = NULL;
        ck_assert_ts_ok(ts_wire_ct_decode(p, id, res[0].data, res[0].len, 1, &rc, why, sizeof why));
        ck_assert_int_eq(ts_ckks_ciphertext_level(rc), top - 1);
        ck_assert_ts_ok(ts_ckks_plaintext_new(p, top - 1, &rp));
        ck_assert_ts_ok(ts_ckks_decrypt(sk, rc, rp));
        ck_assert_ts_ok(ts_ckks_decode_real(enc, rp, out, slots));
        double var = 0;
        for (size_t i = 0; i < slots; i++)
            var += out[i] * out[i] / (double)slots;
        sd[flood] = sqrt(var);
        ts_ckks_plaintext_free(rp);
        ts_ckks_ciphertext_free(rc);
        ts_agg_result_free(res, 1);
    }
    double want = sqrt((double)n / 6.0) * 65536.0 / ts_ckks_params_scale(p);
    fprintf(stderr, "flooding 2^16: slot noise sd %.4g (formula %.4g), without %.3g\n", sd[1], want,
            sd[0]);
    ck_assert_msg(sd[1] > 0.8 * want && sd[1] < 1.25 * want, "sd %g vs formula %g", sd[1], want);
    ck_assert_msg(sd[0] < want / 8, "unflooded noise %g should be far below %g", sd[0], want);
    ts_free(in.data);
    free(zero);
    free(out);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(rng);
    ts_ckks_params_free(p);
}
END_TEST

/*
 * `tessera bench aggregate --quick`: every grid point works, and the bytes a
 * client sends are exactly header + 2 N (outer + inner) / 8 per ciphertext:
 * residues bit-packed at their prime's width, no byte-alignment step.
 */
START_TEST(test_bench_bytes_exact)
{
    char dir[512], cmd[2048], path[700], line[1024];
    net_tmpdir(dir, sizeof dir, "bench");
    snprintf(path, sizeof path, "%s/agg.json", dir);
    snprintf(cmd, sizeof cmd, "%s/tessera bench aggregate --quick --json %s 2>/dev/null",
             ts_test_build_dir(), path);
    ck_assert_int_eq(system(cmd), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        int outer, inner;
        size_t params, cts, sent;
        if (sscanf(line, "{\"outer_bits\":%d,\"inner_bits\":%d,\"parameters\":%zu,", &outer, &inner,
                   &params) != 3)
            continue;
        ck_assert_msg(strstr(line, "\"status\":\"ok\"") != NULL, "%s", line);
        const char *c = strstr(line, "\"ciphertexts\":"),
                   *b = strstr(line, "\"bytes_sent_per_client\":");
        ck_assert(c && b);
        sscanf(c, "\"ciphertexts\":%zu", &cts);
        sscanf(b, "\"bytes_sent_per_client\":%zu", &sent);
        size_t want = cts * (TS_SERIAL_HEADER_BYTES + 12 + 2 * 8192 * (size_t)(outer + inner) / 8);
        ck_assert_msg(sent == want, "%d/%d: %zu bytes, expected %zu", outer, inner, sent, want);
        rows++;
    }
    fclose(f);
    ck_assert_int_ge(rows, 6);
    net_rm_rf(dir);
}
END_TEST

/*
 * Public keys announced as such are parsed against their preset before they are
 * stored: a good one is stored, a corrupted one or one declared for another
 * preset is refused and discarded, and the daemon keeps serving.
 */
START_TEST(test_public_key_upload_checked)
{
    daemon_t d;
    start(&d, false);
    char cmd[4096], out[4096];
    const char *b = ts_test_build_dir();
    snprintf(cmd, sizeof cmd, "%s/tessera keygen --params pfedckks-n13 --out %s/k >/dev/null", b,
             d.dir);
    ck_assert_int_eq(system(cmd), 0);
    /* A key of another preset, to be declared as pfedckks-n13. */
    snprintf(cmd, sizeof cmd,
             "%s/tessera keygen --params seed001-client-n13 --out %s/k2 >/dev/null", b, d.dir);
    ck_assert_int_eq(system(cmd), 0);
    /* A corrupted copy: one residue byte inverted (the envelope digest no
     * longer matches; inverted, not overwritten, so it always changes) */
    snprintf(cmd, sizeof cmd, "cp %s/k/public.key %s/bad.key", d.dir, d.dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/bad.key", d.dir);
    FILE *bf = fopen(cmd, "r+b");
    ck_assert_ptr_nonnull(bf);
    ck_assert_int_eq(fseek(bf, 5000, SEEK_SET), 0);
    int byte = fgetc(bf);
    ck_assert_int_ne(byte, EOF);
    ck_assert_int_eq(fseek(bf, 5000, SEEK_SET), 0);
    ck_assert_int_eq(fputc(byte ^ 0xff, bf), byte ^ 0xff);
    ck_assert_int_eq(fclose(bf), 0);
    const char *cases[3][2] = {{"k/public.key", "pfedckks-n13"},
                               {"bad.key", "pfedckks-n13"},
                               {"k2/public.key", "pfedckks-n13"}};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s/tessera keys upload %s/%s --kind public --param-id %s --json --server "
                 "127.0.0.1:%d --ca %s/ca.crt 2>/dev/null",
                 b, d.dir, cases[i][0], cases[i][1], d.port, certs);
        FILE *p = popen(cmd, "r");
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = '\0';
        int st = pclose(p);
        if (i == 0) {
            ck_assert_msg(WEXITSTATUS(st) == 0 && strstr(out, "\"complete\":true"), "%s", out);
        } else {
            ck_assert_msg(WEXITSTATUS(st) == TS_EXIT_FAIL, "case %d accepted: %s", i, out);
            ck_assert_msg(strstr(out, "key refused") != NULL, "case %d: %s", i, out);
        }
    }
    /* Refused uploads leave nothing behind: asking again starts from zero. */
    snprintf(cmd, sizeof cmd,
             "%s/tessera keys status %s/bad.key --json --server 127.0.0.1:%d --ca %s/ca.crt", b,
             d.dir, d.port, certs);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    ck_assert_msg(strstr(out, "\"known\":false") != NULL, "%s", out);
    stop(&d);
}
END_TEST

TS_TEST_SUITE(net_aggregate)
{
    Suite *s = suite_create("net_aggregate");
    TCase *tc = ts_tcase("aggregate", 300);
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_three_clients_weighted_average);
    tcase_add_test(tc, test_hostile_contributions);
    tcase_add_test(tc, test_insecure_preset_with_flag);
    tcase_add_test(tc, test_encrypt_decrypt_files);
    tcase_add_test(tc, test_flooding_noise_matches_formula);
    tcase_add_test(tc, test_bench_bytes_exact);
    tcase_add_test(tc, test_public_key_upload_checked);
    suite_add_tcase(s, tc);
    return s;
}

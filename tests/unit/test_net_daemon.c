/*
 * Integration tests: the real build/tesserad on 127.0.0.1 with certificates
 * from deploy/make-certs.sh, driven by the real build/tessera binary (and, for
 * hostile bytes the CLI never sends, by the client library). Each test starts
 * its own daemon on a free port (port 0 + port_file).
 */
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <zstd.h>

#include "client/client.h"
#include "tests/unit/net_test_util.h"

static char certs[512];

static void suite_setup(void)
{
    net_tmpdir(certs, sizeof certs, "daemon-certs");
    net_make_certs(certs, "alice bob");
}

static void suite_teardown(void)
{
    net_rm_rf(certs);
}

typedef net_daemon_t daemon_t;

/* Start tesserad with extra YAML: lines in tls: and keystore:, limits: and timeouts: sections. */
static void daemon_start(daemon_t *d, const char *tls_extra, const char *limits,
                         const char *timeouts, const char *keystore_extra, bool insecure)
{
    char sections[1024], ks[256];
    snprintf(sections, sizeof sections, "%s%s", limits ? limits : "", timeouts ? timeouts : "");
    snprintf(ks, sizeof ks, "  chunk_bytes: 4096\n%s", keystore_extra ? keystore_extra : "");
    net_daemon_start(d, certs, tls_extra, ks, sections, insecure);
}

static int daemon_stop(daemon_t *d)
{
    return net_daemon_stop(d);
}

static void daemon_cleanup(daemon_t *d)
{
    net_daemon_cleanup(d);
}

/* Run build/tessera with arguments; stdout into out. Returns the exit code. */
static int cli(const daemon_t *d, char *out, size_t out_size, const char *fmt, ...) TS_PRINTF(4, 5);
static int cli(const daemon_t *d, char *out, size_t out_size, const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/tessera %s --server 127.0.0.1:%d --ca %s/ca.crt 2>>%s/cli.err",
             ts_test_build_dir(), args, d->port, certs, d->dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, out_size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static ts_client_t *lib_connect(const daemon_t *d, bool hello, const char *who)
{
    char ca[600], crt[600], key[600];
    snprintf(ca, sizeof ca, "%s/ca.crt", certs);
    snprintf(crt, sizeof crt, "%s/%s.crt", certs, who ? who : "");
    snprintf(key, sizeof key, "%s/%s.key", certs, who ? who : "");
    ts_client_opts_t o = {.host = "127.0.0.1",
                          .port = d->port,
                          .ca_file = ca,
                          .cert_file = who ? crt : NULL,
                          .key_file = who ? key : NULL,
                          .servername = "localhost",
                          .timeout_ms = 10000};
    ts_client_t *c = NULL;
    char err[600];
    ts_status_t st = hello ? ts_client_connect(&o, &c, err, sizeof err)
                           : ts_client_connect_raw(&o, &c, err, sizeof err);
    ck_assert_msg(st == TS_OK, "connect: %s", err);
    return c;
}

/* Expect an error reply (any request id) or a closed connection. */
static ts_status_t expect_error(ts_client_t *c, char *msg, size_t msg_size)
{
    Tessera__Envelope *e = NULL;
    ts_status_t st = ts_client_recv(c, &e);
    if (st != TS_OK) {
        snprintf(msg, msg_size, "closed: %s", c->err);
        return TS_EIO;
    }
    ck_assert_msg(e->body_case == TESSERA__ENVELOPE__BODY_ERROR, "got %s instead of an error",
                  ts_net_body_name(e->body_case));
    snprintf(msg, msg_size, "%s", e->error->message);
    st = ts_net_error_status(e->error->code);
    ts_net_envelope_free(e);
    return st;
}

static void assert_ping_ok(const daemon_t *d)
{
    char out[4096];
    int rc = cli(d, out, sizeof out, "ping --json");
    ck_assert_msg(rc == 0, "ping exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\"ok\":true") != NULL, "%s", out);
}

START_TEST(test_ping_stats_identity)
{
    daemon_t d;
    char tls[700];
    snprintf(tls, sizeof tls, "  client_ca: %s/ca.crt\n", certs);
    daemon_start(&d, tls, NULL, NULL, NULL, false);
    char out[8192];
    int rc = cli(&d, out, sizeof out, "ping --json --count 3");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\"identity\":\"public\"") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"version\":1") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"insecure_params\":false") != NULL, "%s", out);
    /* With a client certificate the identity is its SHA-256 fingerprint. */
    rc = cli(&d, out, sizeof out, "ping --json --cert %s/alice.crt --key %s/alice.key", certs,
             certs);
    ck_assert_int_eq(rc, 0);
    char *id = strstr(out, "\"identity\":\"");
    ck_assert_ptr_nonnull(id);
    id += strlen("\"identity\":\"");
    ck_assert_msg(strspn(id, "0123456789abcdef") == 64, "identity: %s", out);
    rc = cli(&d, out, sizeof out, "stats --json");
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\"op\":\"ping\",\"count\":4") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"connections\":1,") != NULL, "%s", out);
    /* Usage errors and --help. */
    ck_assert_int_eq(cli(&d, out, sizeof out, "ping --bogus"), TS_EXIT_USAGE);
    ck_assert_int_eq(cli(&d, out, sizeof out, "ping --help"), 0);
    ck_assert(strstr(out, "usage: tessera ping") != NULL);
    ck_assert_int_eq(cli(&d, out, sizeof out, "keys --help"), 0);
    ck_assert_int_eq(cli(&d, out, sizeof out, "stats --help"), 0);
    ck_assert_int_eq(cli(&d, out, sizeof out, "nosuchcommand"), TS_EXIT_USAGE);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

/*
 * Several requests in flight on one connection (ts_client_send_request /
 * ts_client_recv_reply, what a key upload's window uses): four pings sent
 * before any reply is read; the reply to an abandoned one (not among the
 * rids waited for) is dropped, each other comes back once with its own
 * payload and index; an ordinary call works after.
 */
START_TEST(test_pipelined_requests)
{
    daemon_t d;
    daemon_start(&d, NULL, NULL, NULL, NULL, false);
    ts_client_t *c = lib_connect(&d, true, NULL);
    uint8_t payload[4][8];
    uint64_t rids[4];
    for (int i = 0; i < 4; i++) {
        memset(payload[i], 'a' + i, sizeof payload[i]);
        Tessera__Ping p = TESSERA__PING__INIT;
        p.payload.data = payload[i];
        p.payload.len = sizeof payload[i];
        Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
        req.body_case = TESSERA__ENVELOPE__BODY_PING;
        req.ping = &p;
        ck_assert_ts_ok(ts_client_send_request(c, &req));
        rids[i] = req.request_id;
        if (i)
            ck_assert_uint_ne(rids[i], rids[i - 1]);
    }
    /* rids[0] abandoned: wait for the other three */
    uint64_t want[3] = {rids[1], rids[2], rids[3]};
    bool got[3] = {false, false, false};
    for (int k = 0; k < 3; k++) {
        Tessera__Envelope *r = NULL;
        size_t w = 99;
        ck_assert_ts_ok(ts_client_recv_reply(c, want, 3, TESSERA__ENVELOPE__BODY_PONG, &r, &w));
        ck_assert_uint_lt(w, 3);
        ck_assert(!got[w]);
        got[w] = true;
        ck_assert_uint_eq(r->request_id, want[w]);
        ck_assert_uint_eq(r->pong->payload.len, 8);
        ck_assert_int_eq(r->pong->payload.data[0], 'a' + (int)w + 1);
        ts_net_envelope_free(r);
    }
    Tessera__Ping p = TESSERA__PING__INIT;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_PING;
    req.ping = &p;
    Tessera__Envelope *r = NULL;
    ck_assert_ts_ok(ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_PONG, &r));
    ts_net_envelope_free(r);
    ts_client_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_key_upload_resume_quota)
{
    daemon_t d;
    daemon_start(&d, NULL, NULL, NULL, "  quota_bytes: 60000\n", false);
    char key[700], big[700], out[4096];
    snprintf(key, sizeof key, "%s/key.bin", d.dir);
    snprintf(big, sizeof big, "%s/big.bin", d.dir);
    FILE *f = fopen(key, "wb");
    for (int i = 0; i < 20000; i++)
        fputc((i * 7919) >> 3 & 0xff, f);
    fclose(f);
    f = fopen(big, "wb");
    for (int i = 0; i < 50000; i++)
        fputc(i & 0xff, f);
    fclose(f);
    /* Interrupted after 2 of 5 chunks. */
    int rc = cli(&d, out, sizeof out, "keys upload %s --kind public --max-chunks 2 --json", key);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\"chunks\":5,\"sent\":2,\"skipped\":0") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"complete\":false") != NULL, "%s", out);
    rc = cli(&d, out, sizeof out, "keys status %s --json", key);
    ck_assert_msg(strstr(out, "\"skipped\":2") != NULL && strstr(out, "\"complete\":false"), "%s",
                  out);
    /* Resumed on a new connection: only the 3 missing chunks travel. */
    rc = cli(&d, out, sizeof out, "keys upload %s --json", key);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    ck_assert_msg(strstr(out, "\"sent\":3,\"skipped\":2") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"complete\":true") != NULL, "%s", out);
    /* Known key: nothing is sent. */
    rc = cli(&d, out, sizeof out, "keys upload %s --json", key);
    ck_assert_msg(strstr(out, "\"sent\":0,\"skipped\":5") != NULL, "%s", out);
    /* Stored under its hash, mode 0600, no temporary files left. */
    char *h = strstr(out, "\"sha256\":\"");
    ck_assert_ptr_nonnull(h);
    char hex[65];
    memcpy(hex, h + 10, 64);
    hex[64] = '\0';
    char path[900];
    snprintf(path, sizeof path, "%s/keys/public/%s.key", d.dir, hex);
    struct stat sb;
    ck_assert_msg(stat(path, &sb) == 0, "missing %s", path);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);
    ck_assert_int_eq(sb.st_size, 20000);
    snprintf(path, sizeof path, "%s/keys/public/%s.map", d.dir, hex);
    ck_assert_int_ne(stat(path, &sb), 0);
    /* 20000 held + 50000 > 60000 quota: refused with a clear message. */
    rc = cli(&d, out, sizeof out, "keys upload %s --json", big);
    ck_assert_int_eq(rc, TS_EXIT_FAIL);
    ck_assert_msg(strstr(out, "quota") != NULL, "%s", out);
    assert_ping_ok(&d);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_hostile_frames)
{
    daemon_t d;
    daemon_start(&d, NULL, "limits:\n  max_frame_bytes: 65536\n  max_decompressed_bytes: 65536\n",
                 NULL, NULL, false);
    char msg[600];
    /* 1: a length prefix over the limit: error reply, connection closed. */
    ts_client_t *c = lib_connect(&d, true, NULL);
    uint8_t hdr[5];
    ts_net_frame_header(hdr, 1u << 30, 0);
    ck_assert_ts_ok(ts_client_send_bytes(c, hdr, sizeof hdr));
    ck_assert_ts_status(expect_error(c, msg, sizeof msg), TS_ELIMIT);
    ck_assert_ts_status(expect_error(c, msg, sizeof msg), TS_EIO);
    ts_client_close(c);
    /* 2: malformed protobuf. */
    c = lib_connect(&d, true, NULL);
    uint8_t bad[5 + 3];
    ts_net_frame_header(bad, 3, 0);
    bad[5] = 0x2a, bad[6] = 0x7f, bad[7] = 0x01;
    ck_assert_ts_ok(ts_client_send_bytes(c, bad, sizeof bad));
    ck_assert_ts_status(expect_error(c, msg, sizeof msg), TS_EFORMAT);
    ts_client_close(c);
    /* 3: a zstd bomb (64 MiB of zeros declared in a tiny frame). */
    c = lib_connect(&d, true, NULL);
    size_t big = 64u << 20, bound = ZSTD_compressBound(big);
    uint8_t *zeros = calloc(1, big), *z = malloc(bound + 5);
    size_t zn = ZSTD_compress(z + 5, bound, zeros, big, 3);
    ts_net_frame_header(z, zn, TS_NET_FLAG_ZSTD);
    ck_assert_ts_ok(ts_client_send_bytes(c, z, zn + 5));
    ck_assert_ts_status(expect_error(c, msg, sizeof msg), TS_ELIMIT);
    free(zeros);
    free(z);
    ts_client_close(c);
    /* 4: a request before hello, and a hello without a common version. */
    c = lib_connect(&d, false, NULL);
    Tessera__StatsRequest sr = TESSERA__STATS_REQUEST__INIT;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_STATS_REQUEST;
    req.stats_request = &sr;
    Tessera__Envelope *rep = NULL;
    ck_assert_ts_status(ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_STATS_REPLY, &rep),
                        TS_EPROTO);
    ck_assert_msg(strstr(c->err, "hello") != NULL, "%s", c->err);
    ts_net_envelope_free(rep);
    ts_client_close(c);
    c = lib_connect(&d, false, NULL);
    Tessera__Hello h = TESSERA__HELLO__INIT;
    h.min_version = 7;
    h.max_version = 9;
    req.body_case = TESSERA__ENVELOPE__BODY_HELLO;
    req.hello = &h;
    ck_assert_ts_status(ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_HELLO_REPLY, &rep),
                        TS_EPROTO);
    ck_assert_msg(strstr(c->err, "version") != NULL, "%s", c->err);
    ts_net_envelope_free(rep);
    ts_client_close(c);
    /* 5: plain garbage instead of TLS. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq(write(fd, junk, sizeof junk - 1), (ssize_t)(sizeof junk - 1));
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        ;
    ck_assert_int_le(n, 0); /* closed */
    close(fd);
    /* 6: a TLS 1.2-only client is refused in the handshake. */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    SSL_CTX *old = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(old, TLS1_2_VERSION);
    SSL *ssl = SSL_new(old);
    SSL_set_fd(ssl, fd);
    ck_assert_int_ne(SSL_connect(ssl), 1);
    SSL_free(ssl);
    SSL_CTX_free(old);
    close(fd);
    /* The daemon still serves everyone else. */
    assert_ping_ok(&d);
    char out[8192];
    cli(&d, out, sizeof out, "stats --json");
    ck_assert_msg(strstr(out, "\"rejected\":0") == NULL, "rejections counted: %s", out);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_limits_and_timeouts)
{
    daemon_t d;
    daemon_start(&d, NULL,
                 "limits:\n  max_messages_per_connection: 4\n  max_connections_per_client: 2\n",
                 "timeouts:\n  request_ms: 400\n  handshake_ms: 600\n", NULL, false);
    char out[4096], msg[600];
    /* Messages per connection: hello + 3 pings pass, the 5th message is refused. */
    ck_assert_int_eq(cli(&d, out, sizeof out, "ping --count 3 --json"), 0);
    int rc = cli(&d, out, sizeof out, "ping --count 5 --json");
    ck_assert_int_eq(rc, TS_EXIT_FAIL);
    ck_assert_msg(strstr(out, "message limit") != NULL, "%s", out);
    /* Connections per client: a third connection from this IP is refused. */
    ts_client_t *c1 = lib_connect(&d, true, NULL), *c2 = lib_connect(&d, true, NULL);
    ts_client_t *c3 = lib_connect(&d, false, NULL);
    ck_assert_ts_status(expect_error(c3, msg, sizeof msg), TS_ELIMIT);
    ts_client_close(c3);
    ts_client_close(c2);
    ts_client_close(c1);
    /* A client trickling a frame is cut off after request_ms. */
    c1 = lib_connect(&d, true, NULL);
    uint8_t partial[4] = {0, 0, 0, 100};
    ck_assert_ts_ok(ts_client_send_bytes(c1, partial, sizeof partial));
    usleep(200000);
    uint8_t more[1] = {0};
    ck_assert_ts_ok(ts_client_send_bytes(c1, more, 1));
    ck_assert_ts_status(expect_error(c1, msg, sizeof msg), TS_ETIMEDOUT);
    ck_assert_msg(strstr(msg, "request not complete") != NULL, "%s", msg);
    ts_client_close(c1);
    /* A TCP peer that never starts TLS is dropped after handshake_ms. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char b;
    /* (a generous receive timeout turns "never dropped" into a failure, not a hang) */
    struct timeval tv = {.tv_sec = 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    errno = 0;
    ssize_t got = read(fd, &b, 1);
    ck_assert_msg(got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK),
                  "silent peer not dropped (read %zd, %s)", got, strerror(errno));
    close(fd);
    assert_ping_ok(&d);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_mutual_tls_required)
{
    daemon_t d;
    char tls[700];
    snprintf(tls, sizeof tls, "  client_ca: %s/ca.crt\n  require_client_cert: true\n", certs);
    daemon_start(&d, tls, NULL, NULL, NULL, false);
    char out[4096];
    int rc = cli(&d, out, sizeof out, "ping --json");
    ck_assert_msg(rc == TS_EXIT_CONNECT, "ping without a certificate: exit %d %s", rc, out);
    rc = cli(&d, out, sizeof out, "ping --json --cert %s/bob.crt --key %s/bob.key", certs, certs);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
    /* Each identity has its own key namespace. */
    char key[700];
    snprintf(key, sizeof key, "%s/k.bin", d.dir);
    FILE *f = fopen(key, "wb");
    fputs("a small key", f);
    fclose(f);
    rc = cli(&d, out, sizeof out, "keys upload %s --json --cert %s/bob.crt --key %s/bob.key", key,
             certs, certs);
    ck_assert_msg(rc == 0 && strstr(out, "\"complete\":true"), "exit %d: %s", rc, out);
    rc = cli(&d, out, sizeof out, "keys status %s --json --cert %s/alice.crt --key %s/alice.key",
             key, certs, certs);
    ck_assert_msg(rc == 0 && strstr(out, "\"known\":false"), "alice sees bob's key: %s", out);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_concurrent_clients)
{
    daemon_t d;
    daemon_start(&d, NULL, NULL, NULL, NULL, false);
    enum { N = 6 };
    pid_t kids[N];
    for (int i = 0; i < N; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            char cmd[2048];
            snprintf(cmd, sizeof cmd,
                     "%s/tessera ping --count 50 --server 127.0.0.1:%d --ca %s/ca.crt "
                     ">/dev/null 2>&1",
                     ts_test_build_dir(), d.port, certs);
            int rc = system(cmd);
            _exit(WIFEXITED(rc) ? WEXITSTATUS(rc) : 99);
        }
    }
    for (int i = 0; i < N; i++) {
        int st;
        waitpid(kids[i], &st, 0);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d failed", i);
    }
    char out[8192];
    ck_assert_int_eq(cli(&d, out, sizeof out, "stats --json"), 0);
    ck_assert_msg(strstr(out, "\"op\":\"ping\",\"count\":300") != NULL, "%s", out);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_sigterm_graceful)
{
    daemon_t d;
    daemon_start(&d, NULL, NULL, NULL, NULL, false);
    ts_client_t *c = lib_connect(&d, true, NULL);
    kill(d.pid, SIGTERM);
    char msg[600];
    /* The connected client is told, then the connection closes cleanly. */
    ck_assert_ts_status(expect_error(c, msg, sizeof msg), TS_ECANCELED);
    ck_assert_msg(strstr(msg, "shutting down") != NULL, "%s", msg);
    ts_client_close(c);
    int st = 0;
    for (int i = 0; i < 100 && waitpid(d.pid, &st, WNOHANG) == 0; i++)
        usleep(50000);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "tesserad status %d", st);
    d.pid = 0;
    char out[4096];
    ck_assert_int_eq(cli(&d, out, sizeof out, "ping --json"), TS_EXIT_CONNECT);
    char logp[700];
    snprintf(logp, sizeof logp, "%s/tesserad.log", d.dir);
    FILE *f = fopen(logp, "r");
    char line[4096];
    bool saw = false;
    while (fgets(line, sizeof line, f))
        saw |= strstr(line, "\"msg\":\"event=stopped") != NULL;
    fclose(f);
    ck_assert_msg(saw, "no JSON stop line in %s", logp);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_sighup_reload)
{
    daemon_t d;
    daemon_start(&d, NULL, NULL, NULL, NULL, false);
    char out[4096], cfg[700];
    ck_assert_int_eq(cli(&d, out, sizeof out, "ping --count 5 --json"), 0);
    /* A broken file is logged and ignored: the daemon keeps its configuration. */
    snprintf(cfg, sizeof cfg, "%s/tesserad.yaml", d.dir);
    FILE *f = fopen(cfg, "a");
    fputs("limits: [this is not a mapping\n", f);
    fclose(f);
    kill(d.pid, SIGHUP);
    usleep(300000);
    ck_assert_int_eq(cli(&d, out, sizeof out, "ping --count 5 --json"), 0);
    /* A good file takes effect for new connections. */
    f = fopen(cfg, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    char *cut = strstr(text, "limits: [");
    ck_assert_ptr_nonnull(cut);
    *cut = '\0';
    f = fopen(cfg, "w");
    fprintf(f, "%slimits:\n  max_messages_per_connection: 3\n", text);
    fclose(f);
    kill(d.pid, SIGHUP);
    usleep(300000);
    int rc = cli(&d, out, sizeof out, "ping --count 5 --json");
    ck_assert_msg(rc == TS_EXIT_FAIL && strstr(out, "message limit"), "exit %d: %s", rc, out);
    char logp[700], line[4096];
    snprintf(logp, sizeof logp, "%s/tesserad.log", d.dir);
    f = fopen(logp, "r");
    bool failed = false, reloaded = false;
    while (fgets(line, sizeof line, f)) {
        failed |= strstr(line, "event=reload_failed") != NULL;
        reloaded |= strstr(line, "event=reloaded") != NULL;
    }
    fclose(f);
    ck_assert(failed && reloaded);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

/*
 * Backpressure: a client that sends requests and never reads the replies ends
 * up blocked (the daemon stops reading it once write_buffer_bytes of replies
 * are queued), instead of making the daemon buffer without bound; everyone
 * else is still served.
 */
START_TEST(test_backpressure)
{
    daemon_t d;
    daemon_start(&d, NULL, "limits:\n  write_buffer_bytes: 65536\n", NULL, NULL, false);
    ts_client_t *c = lib_connect(&d, true, NULL);
    c->timeout_ms = 1500;
    static uint8_t payload[1024];
    Tessera__Ping p = TESSERA__PING__INIT;
    p.payload.data = payload;
    p.payload.len = sizeof payload;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_PING;
    req.ping = &p;
    uint8_t *frame = NULL;
    size_t fn = 0;
    ck_assert_ts_ok(ts_net_envelope_pack(&req, &c->limits, 0, 0, &frame, &fn));
    ts_status_t st = TS_OK;
    long sent = 0;
    for (; sent < 400000 && st == TS_OK; sent++)
        st = ts_client_send_bytes(c, frame, fn);
    ts_free(frame);
    ck_assert_msg(st == TS_ETIMEDOUT, "sent %ld pings without being stopped (%s)", sent,
                  ts_status_name(st));
    /* Another client is served meanwhile. */
    assert_ping_ok(&d);
    ts_client_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}
END_TEST

START_TEST(test_daemon_command_line)
{
    char out[4096], cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/tesserad --help", ts_test_build_dir());
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    ck_assert(strstr(out, "--insecure-params") != NULL);
    /* A config error names file, line and column, and exits 2. */
    char dir[512], cfg[700];
    net_tmpdir(dir, sizeof dir, "badcfg");
    snprintf(cfg, sizeof cfg, "%s/bad.yaml", dir);
    FILE *f = fopen(cfg, "w");
    fputs("port: 7878\nlimits:\n  max_frame_bytes: 12\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/tesserad --config %s 2>&1", ts_test_build_dir(), cfg);
    p = popen(cmd, "r");
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    ck_assert_msg(strstr(out, "bad.yaml:3:") != NULL, "%s", out);
    net_rm_rf(dir);
}
END_TEST

TS_TEST_SUITE(net_daemon)
{
    Suite *s = suite_create("net_daemon");
    TCase *tc = ts_tcase("daemon", 120);
    tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
    tcase_add_test(tc, test_daemon_command_line);
    tcase_add_test(tc, test_ping_stats_identity);
    tcase_add_test(tc, test_key_upload_resume_quota);
    tcase_add_test(tc, test_pipelined_requests);
    tcase_add_test(tc, test_hostile_frames);
    tcase_add_test(tc, test_limits_and_timeouts);
    tcase_add_test(tc, test_mutual_tls_required);
    tcase_add_test(tc, test_concurrent_clients);
    tcase_add_test(tc, test_sigterm_graceful);
    tcase_add_test(tc, test_sighup_reload);
    tcase_add_test(tc, test_backpressure);
    suite_add_tcase(s, tc);
    return s;
}

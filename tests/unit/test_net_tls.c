/*
 * The TLS 1.3 engine of server/net.h, two engines pumping bytes to each other
 * in memory: a good handshake with data both ways, mutual TLS identity, and
 * the rejections — wrong CA, wrong host name, missing client certificate when
 * one is required, a TLS 1.2-only peer.
 */
#include <openssl/ssl.h>

#include "server/net.h"
#include "tests/unit/net_test_util.h"

static char dir_a[512], dir_b[512];

static void certs_setup(void)
{
    net_tmpdir(dir_a, sizeof dir_a, "tls-a");
    net_tmpdir(dir_b, sizeof dir_b, "tls-b");
    net_make_certs(dir_a, "alice");
    net_make_certs(dir_b, "mallory");
}

static void certs_teardown(void)
{
    net_rm_rf(dir_a);
    net_rm_rf(dir_b);
}

static const char *p(const char *dir, const char *file)
{
    static char buf[4][600];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", dir, file);
    return buf[i];
}

/* Move bytes between the engines until both are done or one fails. */
static void pump(ts_tls_t *cli, ts_tls_t *srv, ts_status_t *cst, ts_status_t *sst, char *cerr,
                 char *serr)
{
    *cst = *sst = TS_EBUSY;
    for (int round = 0; round < 50; round++) {
        if (*cst == TS_EBUSY)
            *cst = ts_tls_handshake(cli, cerr, 256);
        uint8_t buf[65536];
        size_t n;
        while ((n = ts_tls_take(cli, buf, sizeof buf)) > 0)
            ts_tls_feed(srv, buf, n);
        if (*sst == TS_EBUSY)
            *sst = ts_tls_handshake(srv, serr, 256);
        while ((n = ts_tls_take(srv, buf, sizeof buf)) > 0)
            ts_tls_feed(cli, buf, n);
        if (*cst != TS_EBUSY && *sst != TS_EBUSY)
            break;
        if ((*cst != TS_OK && *cst != TS_EBUSY) || (*sst != TS_OK && *sst != TS_EBUSY))
            break;
    }
}

static void handshake(SSL_CTX *sctx, SSL_CTX *cctx, const char *host, ts_status_t *cst,
                      ts_status_t *sst, char *cerr, char *serr, char *fp_seen)
{
    ts_tls_t cli, srv;
    ck_assert_ts_ok(ts_tls_init(&srv, sctx, true, NULL));
    ck_assert_ts_ok(ts_tls_init(&cli, cctx, false, host));
    pump(&cli, &srv, cst, sst, cerr, serr);
    /* The client finishes first in TLS 1.3; a server rejection arrives as an alert. */
    if (*cst == TS_OK && *sst == TS_OK) {
        const char msg[] = "hello over tls";
        ck_assert_ts_ok(ts_tls_write(&cli, msg, sizeof msg));
        uint8_t buf[65536];
        size_t n = ts_tls_take(&cli, buf, sizeof buf);
        ts_tls_feed(&srv, buf, n);
        char got[64] = {0};
        size_t gn = 0;
        ck_assert_ts_ok(ts_tls_read(&srv, got, sizeof got, &gn));
        ck_assert_uint_eq(gn, sizeof msg);
        ck_assert_str_eq(got, msg);
        ck_assert_str_eq(SSL_get_version(srv.ssl), "TLSv1.3");
        if (fp_seen && !ts_tls_peer_fingerprint(&srv, fp_seen))
            fp_seen[0] = '\0';
    } else if (*cst == TS_OK) {
        /* Client thought it was done: the server's alert makes its next read fail. */
        uint8_t tmp[16];
        size_t n = 0;
        ts_status_t r = ts_tls_read(&cli, tmp, sizeof tmp, &n);
        ck_assert_int_ne(r, TS_OK);
    }
    ts_tls_clear(&cli);
    ts_tls_clear(&srv);
}

START_TEST(test_good_handshake)
{
    SSL_CTX *sctx, *cctx;
    char err[256];
    ck_assert_ts_ok(ts_tls_ctx_new_server(p(dir_a, "server.crt"), p(dir_a, "server.key"), NULL,
                                          false, &sctx, err, sizeof err));
    ck_assert_ts_ok(ts_tls_ctx_new_client(p(dir_a, "ca.crt"), NULL, NULL, &cctx, err, sizeof err));
    ts_status_t cst, sst;
    char cerr[256] = "", serr[256] = "", fp[65] = "x";
    handshake(sctx, cctx, "localhost", &cst, &sst, cerr, serr, fp);
    ck_assert_msg(cst == TS_OK && sst == TS_OK, "client %s (%s) server %s (%s)",
                  ts_status_name(cst), cerr, ts_status_name(sst), serr);
    ck_assert_str_eq(fp, ""); /* no client certificate */
    SSL_CTX_free(sctx);
    SSL_CTX_free(cctx);
}
END_TEST

START_TEST(test_mutual_tls_identity)
{
    SSL_CTX *sctx, *cctx;
    char err[256];
    ck_assert_ts_ok(ts_tls_ctx_new_server(p(dir_a, "server.crt"), p(dir_a, "server.key"),
                                          p(dir_a, "ca.crt"), true, &sctx, err, sizeof err));
    ck_assert_ts_ok(ts_tls_ctx_new_client(p(dir_a, "ca.crt"), p(dir_a, "alice.crt"),
                                          p(dir_a, "alice.key"), &cctx, err, sizeof err));
    ts_status_t cst, sst;
    char cerr[256] = "", serr[256] = "", fp1[65] = "", fp2[65] = "";
    handshake(sctx, cctx, "localhost", &cst, &sst, cerr, serr, fp1);
    ck_assert_msg(cst == TS_OK && sst == TS_OK, "client %s server %s (%s)", cerr,
                  ts_status_name(sst), serr);
    ck_assert_uint_eq(strlen(fp1), 64);
    /* The identity is stable across connections: the same namespace each time. */
    handshake(sctx, cctx, "localhost", &cst, &sst, cerr, serr, fp2);
    ck_assert_str_eq(fp1, fp2);
    SSL_CTX_free(cctx);
    /* A certificate from another CA is refused by the server. */
    ck_assert_ts_ok(ts_tls_ctx_new_client(p(dir_a, "ca.crt"), p(dir_b, "mallory.crt"),
                                          p(dir_b, "mallory.key"), &cctx, err, sizeof err));
    handshake(sctx, cctx, "localhost", &cst, &sst, cerr, serr, NULL);
    ck_assert_ts_status(sst, TS_ECRYPTO);
    SSL_CTX_free(cctx);
    /* No certificate at all while one is required: refused. */
    ck_assert_ts_ok(ts_tls_ctx_new_client(p(dir_a, "ca.crt"), NULL, NULL, &cctx, err, sizeof err));
    handshake(sctx, cctx, "localhost", &cst, &sst, cerr, serr, NULL);
    ck_assert_ts_status(sst, TS_ECRYPTO);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}
END_TEST

START_TEST(test_wrong_ca_and_host_rejected)
{
    SSL_CTX *sctx, *cctx;
    char err[256];
    ck_assert_ts_ok(ts_tls_ctx_new_server(p(dir_a, "server.crt"), p(dir_a, "server.key"), NULL,
                                          false, &sctx, err, sizeof err));
    /* The client trusts another CA: the server certificate does not verify. */
    ck_assert_ts_ok(ts_tls_ctx_new_client(p(dir_b, "ca.crt"), NULL, NULL, &cctx, err, sizeof err));
    ts_status_t cst, sst;
    char cerr[256] = "", serr[256] = "";
    handshake(sctx, cctx, "localhost", &cst, &sst, cerr, serr, NULL);
    ck_assert_ts_status(cst, TS_ECRYPTO);
    ck_assert_msg(strstr(cerr, "certificate") != NULL, "reason: %s", cerr);
    SSL_CTX_free(cctx);
    /* Right CA, wrong name. */
    ck_assert_ts_ok(ts_tls_ctx_new_client(p(dir_a, "ca.crt"), NULL, NULL, &cctx, err, sizeof err));
    handshake(sctx, cctx, "evil.example", &cst, &sst, cerr, serr, NULL);
    ck_assert_ts_status(cst, TS_ECRYPTO);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
}
END_TEST

START_TEST(test_tls12_peer_rejected)
{
    SSL_CTX *sctx;
    char err[256];
    ck_assert_ts_ok(ts_tls_ctx_new_server(p(dir_a, "server.crt"), p(dir_a, "server.key"), NULL,
                                          false, &sctx, err, sizeof err));
    SSL_CTX *old = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(old, TLS1_2_VERSION);
    SSL_CTX_load_verify_locations(old, p(dir_a, "ca.crt"), NULL);
    ts_status_t cst, sst;
    char cerr[256] = "", serr[256] = "";
    handshake(sctx, old, "localhost", &cst, &sst, cerr, serr, NULL);
    ck_assert_ts_status(sst, TS_ECRYPTO);
    ck_assert_int_ne(cst, TS_OK);
    SSL_CTX_free(old);
    SSL_CTX_free(sctx);
}
END_TEST

START_TEST(test_context_errors)
{
    SSL_CTX *ctx = NULL;
    char err[512];
    ck_assert_ts_status(ts_tls_ctx_new_server("/nonexistent.crt", p(dir_a, "server.key"), NULL,
                                              false, &ctx, err, sizeof err),
                        TS_ECRYPTO);
    ck_assert_msg(strstr(err, "/nonexistent.crt") != NULL, "error names the file: %s", err);
    /* Key of another certificate. */
    ck_assert_ts_status(ts_tls_ctx_new_server(p(dir_a, "server.crt"), p(dir_b, "server.key"), NULL,
                                              false, &ctx, err, sizeof err),
                        TS_ECRYPTO);
    ck_assert_ts_status(ts_tls_ctx_new_server(p(dir_a, "server.crt"), p(dir_a, "server.key"), NULL,
                                              true, &ctx, err, sizeof err),
                        TS_ECONFIG);
    ck_assert_ts_status(ts_tls_ctx_new_client(NULL, NULL, NULL, &ctx, err, sizeof err), TS_ECONFIG);
    ck_assert_ts_status(ts_tls_ctx_new_client(p(dir_a, "ca.crt"), p(dir_a, "alice.crt"), NULL, &ctx,
                                              err, sizeof err),
                        TS_ECONFIG);
    ck_assert_ptr_null(ctx);
}
END_TEST

TS_TEST_SUITE(net_tls)
{
    Suite *s = suite_create("net_tls");
    TCase *tc = ts_tcase("tls", 0);
    tcase_add_unchecked_fixture(tc, certs_setup, certs_teardown);
    tcase_add_test(tc, test_good_handshake);
    tcase_add_test(tc, test_mutual_tls_identity);
    tcase_add_test(tc, test_wrong_ca_and_host_rejected);
    tcase_add_test(tc, test_tls12_peer_rejected);
    tcase_add_test(tc, test_context_errors);
    suite_add_tcase(s, tc);
    return s;
}

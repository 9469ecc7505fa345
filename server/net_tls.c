/*
 * TLS 1.3 through OpenSSL memory BIOs (server/net.h). OpenSSL errors are
 * translated here, once, into TS_ECRYPTO plus a readable reason.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "server/net.h"

void ts_tls_errors(char *buf, size_t size)
{
    if (!buf || size == 0)
        return;
    buf[0] = '\0';
    size_t used = 0;
    unsigned long e;
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof one);
        int w = snprintf(buf + used, size - used, "%s%s", used ? "; " : "", one);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
    ERR_clear_error();
}

static void set_err(char *err, size_t err_size, const char *what, const char *file)
{
    char ossl[512];
    ts_tls_errors(ossl, sizeof ossl);
    if (err && err_size)
        snprintf(err, err_size, "%s%s%s%s%s", what, file ? " " : "", file ? file : "",
                 ossl[0] ? ": " : "", ossl);
}

static SSL_CTX *ctx_base(const SSL_METHOD *method)
{
    SSL_CTX *ctx = SSL_CTX_new(method);
    if (!ctx)
        return NULL;
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return ctx;
}

ts_status_t ts_tls_ctx_new_server(const char *cert_file, const char *key_file,
                                  const char *client_ca_file, bool require_client_cert,
                                  SSL_CTX **out, char *err, size_t err_size)
{
    *out = NULL;
    if (!cert_file || !*cert_file || !key_file || !*key_file) {
        snprintf(err, err_size, "a server certificate and key are required");
        return TS_ECONFIG;
    }
    SSL_CTX *ctx = ctx_base(TLS_server_method());
    if (!ctx) {
        set_err(err, err_size, "cannot create a TLS 1.3 context", NULL);
        return TS_ECRYPTO;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        set_err(err, err_size, "cannot load certificate", cert_file);
        goto out_free_ctx;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        set_err(err, err_size, "cannot load private key", key_file);
        goto out_free_ctx;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        set_err(err, err_size, "private key does not match certificate", key_file);
        goto out_free_ctx;
    }
    if (client_ca_file && *client_ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, client_ca_file, NULL) != 1) {
            set_err(err, err_size, "cannot load client CA", client_ca_file);
            goto out_free_ctx;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(client_ca_file);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
        int mode = SSL_VERIFY_PEER | (require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0);
        SSL_CTX_set_verify(ctx, mode, NULL);
    } else if (require_client_cert) {
        snprintf(err, err_size, "mutual TLS requires a client CA file");
        SSL_CTX_free(ctx);
        return TS_ECONFIG;
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
    /* No session tickets: every connection proves its identity afresh. */
    SSL_CTX_set_num_tickets(ctx, 0);
    *out = ctx;
    return TS_OK;
out_free_ctx:
    SSL_CTX_free(ctx);
    return TS_ECRYPTO;
}

ts_status_t ts_tls_ctx_new_client(const char *ca_file, const char *cert_file, const char *key_file,
                                  SSL_CTX **out, char *err, size_t err_size)
{
    *out = NULL;
    if (!ca_file || !*ca_file) {
        snprintf(err, err_size, "a CA file to verify the server is required (--ca)");
        return TS_ECONFIG;
    }
    bool have_cert = cert_file && *cert_file, have_key = key_file && *key_file;
    if (have_cert != have_key) {
        snprintf(err, err_size, "a client certificate needs its key and the other way round");
        return TS_ECONFIG;
    }
    SSL_CTX *ctx = ctx_base(TLS_client_method());
    if (!ctx) {
        set_err(err, err_size, "cannot create a TLS 1.3 context", NULL);
        return TS_ECRYPTO;
    }
    if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
        set_err(err, err_size, "cannot load CA", ca_file);
        goto out_free_ctx;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (have_cert) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
            set_err(err, err_size, "cannot load client certificate", cert_file);
            goto out_free_ctx;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            set_err(err, err_size, "cannot load client key", key_file);
            goto out_free_ctx;
        }
    }
    *out = ctx;
    return TS_OK;
out_free_ctx:
    SSL_CTX_free(ctx);
    return TS_ECRYPTO;
}

ts_status_t ts_tls_init(ts_tls_t *t, SSL_CTX *ctx, bool is_server, const char *host)
{
    memset(t, 0, sizeof *t);
    t->ssl = SSL_new(ctx);
    if (!t->ssl)
        return TS_ENOMEM;
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (!t->rbio || !t->wbio) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        SSL_free(t->ssl);
        memset(t, 0, sizeof *t);
        return TS_ENOMEM;
    }
    /* An empty read BIO means "retry later", not end of file. */
    BIO_set_mem_eof_return(t->rbio, -1);
    BIO_set_mem_eof_return(t->wbio, -1);
    SSL_set_bio(t->ssl, t->rbio, t->wbio); /* the SSL owns both BIOs now */
    if (is_server) {
        SSL_set_accept_state(t->ssl);
    } else {
        SSL_set_connect_state(t->ssl);
        if (host && *host) {
            SSL_set_tlsext_host_name(t->ssl, host);
            if (SSL_set1_host(t->ssl, host) != 1) {
                ts_tls_clear(t);
                return TS_ECRYPTO;
            }
        }
    }
    return TS_OK;
}

void ts_tls_clear(ts_tls_t *t)
{
    if (!t)
        return;
    if (t->ssl)
        SSL_free(t->ssl);
    memset(t, 0, sizeof *t);
}

ts_status_t ts_tls_feed(ts_tls_t *t, const void *data, size_t n)
{
    while (n > 0) {
        int chunk = n > (1u << 30) ? (1 << 30) : (int)n;
        int w = BIO_write(t->rbio, data, chunk);
        if (w <= 0)
            return TS_ENOMEM;
        data = (const uint8_t *)data + w;
        n -= (size_t)w;
    }
    return TS_OK;
}

ts_status_t ts_tls_handshake(ts_tls_t *t, char *err, size_t err_size)
{
    if (t->established)
        return TS_OK;
    ERR_clear_error();
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        t->established = true;
        return TS_OK;
    }
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return TS_EBUSY;
    t->closed = true;
    long vr = SSL_get_verify_result(t->ssl);
    if (vr != X509_V_OK) {
        ERR_clear_error();
        if (err && err_size)
            snprintf(err, err_size, "certificate verification failed: %s",
                     X509_verify_cert_error_string(vr));
    } else {
        set_err(err, err_size, "TLS handshake failed", NULL);
    }
    return TS_ECRYPTO;
}

ts_status_t ts_tls_read(ts_tls_t *t, void *buf, size_t cap, size_t *n)
{
    *n = 0;
    if (cap == 0)
        return TS_OK;
    ERR_clear_error();
    size_t got = 0;
    int r = SSL_read_ex(t->ssl, buf, cap, &got);
    if (r == 1) {
        *n = got;
        return TS_OK;
    }
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return TS_OK;
    t->closed = true;
    ERR_clear_error();
    return e == SSL_ERROR_ZERO_RETURN ? TS_EIO : TS_ECRYPTO;
}

ts_status_t ts_tls_write(ts_tls_t *t, const void *data, size_t n)
{
    ERR_clear_error();
    while (n > 0) {
        size_t w = 0;
        int r = SSL_write_ex(t->ssl, data, n, &w);
        if (r != 1) {
            ERR_clear_error();
            return TS_EIO;
        }
        data = (const uint8_t *)data + w;
        n -= w;
    }
    return TS_OK;
}

void ts_tls_shutdown(ts_tls_t *t)
{
    if (t->ssl && t->established && !t->closed) {
        SSL_shutdown(t->ssl);
        ERR_clear_error();
    }
}

size_t ts_tls_pending(const ts_tls_t *t)
{
    return t->wbio ? BIO_ctrl_pending(t->wbio) : 0;
}

size_t ts_tls_take(ts_tls_t *t, void *buf, size_t cap)
{
    size_t pend = ts_tls_pending(t);
    if (pend == 0 || cap == 0)
        return 0;
    int want = (int)(pend < cap ? pend : cap);
    if (want <= 0)
        return 0;
    int r = BIO_read(t->wbio, buf, want);
    return r > 0 ? (size_t)r : 0;
}

bool ts_tls_peer_fingerprint(const ts_tls_t *t, char hex[65])
{
    X509 *cert = SSL_get1_peer_certificate(t->ssl);
    if (!cert)
        return false;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    bool ok = X509_digest(cert, EVP_sha256(), md, &mdlen) == 1 && mdlen == 32;
    X509_free(cert);
    if (ok)
        ts_net_hex(md, 32, hex);
    return ok;
}

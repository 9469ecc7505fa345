/*
 * The blocking TLS client of tesserad (client/client.h): a TCP socket, the
 * memory-BIO TLS engine of server/net.h, and poll() for the timeouts.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client.h"

#define DEFAULT_MAX (64u << 20)

static void cerr(ts_client_t *c, const char *fmt, const char *arg)
{
    snprintf(c->err, sizeof c->err, fmt, arg);
}

static ts_status_t wait_fd(ts_client_t *c, short ev)
{
    struct pollfd p = {.fd = c->fd, .events = ev};
    for (;;) {
        int r = poll(&p, 1, c->timeout_ms);
        if (r > 0)
            return TS_OK;
        if (r == 0) {
            snprintf(c->err, sizeof c->err, "timed out after %d ms waiting for the server",
                     c->timeout_ms);
            return TS_ETIMEDOUT;
        }
        if (errno != EINTR) {
            cerr(c, "poll: %s", strerror(errno));
            return TS_EIO;
        }
    }
}

static ts_status_t flush_out(ts_client_t *c)
{
    uint8_t buf[64 * 1024];
    size_t n;
    while ((n = ts_tls_take(&c->tls, buf, sizeof buf)) > 0) {
        size_t off = 0;
        while (off < n) {
            ssize_t w = send(c->fd, buf + off, n - off, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    ts_status_t st = wait_fd(c, POLLOUT);
                    if (st != TS_OK)
                        return st;
                    continue;
                }
                cerr(c, "send: %s (the server closed the connection?)", strerror(errno));
                return TS_EIO;
            }
            off += (size_t)w;
            c->bytes_sent += (uint64_t)w;
        }
    }
    return TS_OK;
}

/* Read ciphertext from the socket into the TLS engine (waits up to the timeout). */
static ts_status_t fill_in(ts_client_t *c)
{
    uint8_t buf[64 * 1024];
    for (;;) {
        ssize_t r = recv(c->fd, buf, sizeof buf, 0);
        if (r > 0) {
            c->bytes_received += (uint64_t)r;
            return ts_tls_feed(&c->tls, buf, (size_t)r);
        }
        if (r == 0) {
            snprintf(c->err, sizeof c->err, "the server closed the connection");
            return TS_EIO;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            ts_status_t st = wait_fd(c, POLLIN);
            if (st != TS_OK)
                return st;
            continue;
        }
        cerr(c, "recv: %s", strerror(errno));
        return TS_EIO;
    }
}

static ts_status_t tcp_connect(ts_client_t *c, const char *host, int port)
{
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int r = getaddrinfo(host, ps, &hints, &res);
    if (r != 0) {
        snprintf(c->err, sizeof c->err, "cannot resolve %s: %s", host, gai_strerror(r));
        return TS_EIO;
    }
    ts_status_t st = TS_EIO;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd =
            socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0)
            continue;
        c->fd = fd;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
            if (wait_fd(c, POLLOUT) == TS_OK) {
                int soerr = 0;
                socklen_t sl = sizeof soerr;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                if (soerr == 0) {
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    st = TS_OK;
                    break;
                }
                errno = soerr;
            }
        }
        snprintf(c->err, sizeof c->err, "cannot connect to %s port %d: %s", host, port,
                 strerror(errno));
        close(fd);
        c->fd = -1;
    }
    freeaddrinfo(res);
    return st;
}

ts_status_t ts_client_connect_raw(const ts_client_opts_t *o, ts_client_t **out, char *err,
                                  size_t err_size)
{
    *out = NULL;
    ts_client_t *c = ts_calloc(1, sizeof *c);
    if (!c)
        return TS_ENOMEM;
    c->fd = -1;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    c->limits.max_frame_bytes = DEFAULT_MAX;
    c->limits.max_decompressed_bytes = DEFAULT_MAX;
    c->next_rid = 1;
    ts_status_t st = ts_tls_ctx_new_client(o->ca_file, o->cert_file, o->key_file, &c->ctx, c->err,
                                           sizeof c->err);
    if (st != TS_OK)
        goto fail;
    st = tcp_connect(c, o->host, o->port);
    if (st != TS_OK)
        goto fail;
    st = ts_tls_init(&c->tls, c->ctx, false, o->servername ? o->servername : o->host);
    if (st != TS_OK) {
        snprintf(c->err, sizeof c->err, "cannot set up TLS");
        goto fail;
    }
    for (;;) {
        st = ts_tls_handshake(&c->tls, c->err, sizeof c->err);
        ts_status_t fs = flush_out(c);
        if (st == TS_OK)
            break;
        if (st != TS_EBUSY)
            goto fail;
        if (fs != TS_OK) {
            st = fs;
            goto fail;
        }
        st = fill_in(c);
        if (st != TS_OK) {
            if (st == TS_EIO)
                snprintf(c->err, sizeof c->err,
                         "the server closed the connection during the TLS handshake (it requires "
                         "a client certificate, or rejected ours?)");
            goto fail;
        }
    }
    *out = c;
    return TS_OK;
fail:
    snprintf(err, err_size, "%s", c->err[0] ? c->err : ts_strerror(st));
    ts_client_close(c);
    return st;
}

ts_status_t ts_client_connect(const ts_client_opts_t *o, ts_client_t **out, char *err,
                              size_t err_size)
{
    ts_client_t *c = NULL;
    ts_status_t st = ts_client_connect_raw(o, &c, err, err_size);
    if (st != TS_OK)
        return st;
    Tessera__Hello h = TESSERA__HELLO__INIT;
    h.min_version = TS_NET_PROTOCOL_VERSION;
    h.max_version = TS_NET_PROTOCOL_VERSION;
    h.client_name = (char *)(o->client_name ? o->client_name : "tessera/0.1");
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_HELLO;
    req.hello = &h;
    Tessera__Envelope *rep = NULL;
    st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_HELLO_REPLY, &rep);
    if (st != TS_OK) {
        snprintf(err, err_size, "hello failed: %s", c->err);
        ts_net_envelope_free(rep);
        ts_client_close(c);
        return st;
    }
    Tessera__HelloReply *hr = rep->hello_reply;
    c->version = hr->version;
    snprintf(c->server_name, sizeof c->server_name, "%s", hr->server_name ? hr->server_name : "");
    snprintf(c->identity, sizeof c->identity, "%s", hr->identity ? hr->identity : "");
    c->insecure_params = hr->insecure_params;
    if (hr->limits) {
        c->key_chunk_bytes = hr->limits->key_chunk_bytes;
        if (hr->limits->max_frame_bytes >= 1024 && hr->limits->max_frame_bytes <= (1u << 30))
            c->limits.max_frame_bytes = hr->limits->max_frame_bytes;
        if (hr->limits->max_decompressed_bytes >= 1024 &&
            hr->limits->max_decompressed_bytes <= (1u << 30))
            c->limits.max_decompressed_bytes = hr->limits->max_decompressed_bytes;
    }
    ts_net_envelope_free(rep);
    *out = c;
    return TS_OK;
}

void ts_client_close(ts_client_t *c)
{
    if (!c)
        return;
    if (c->fd >= 0 && c->tls.established && !c->tls.closed) {
        ts_tls_shutdown(&c->tls);
        int saved = c->timeout_ms;
        c->timeout_ms = 1000;
        flush_out(c);
        c->timeout_ms = saved;
    }
    ts_tls_clear(&c->tls);
    if (c->fd >= 0)
        close(c->fd);
    SSL_CTX_free(c->ctx);
    ts_free(c->in);
    ts_free(c);
}

ts_status_t ts_client_send_bytes(ts_client_t *c, const void *data, size_t n)
{
    ts_status_t st = ts_tls_write(&c->tls, data, n);
    if (st != TS_OK) {
        snprintf(c->err, sizeof c->err, "TLS write failed");
        return st;
    }
    return flush_out(c);
}

ts_status_t ts_client_send(ts_client_t *c, Tessera__Envelope *req)
{
    uint8_t *frame = NULL;
    size_t n = 0;
    /* Ciphertexts are uniformly random residues: not worth compressing. */
    size_t cmin = req->body_case == TESSERA__ENVELOPE__BODY_JOB_SUBMIT ? 0 : 1024;
    ts_status_t st = ts_net_envelope_pack(req, &c->limits, cmin, 3, &frame, &n);
    if (st != TS_OK) {
        snprintf(c->err, sizeof c->err, "request too large for the server's frame limit (%zu)",
                 c->limits.max_frame_bytes);
        return st;
    }
    st = ts_client_send_bytes(c, frame, n);
    ts_free(frame);
    return st;
}

ts_status_t ts_client_recv(ts_client_t *c, Tessera__Envelope **reply)
{
    *reply = NULL;
    for (;;) {
        size_t used = 0;
        ts_status_t st = ts_net_frame_decode_all(c->in, c->in_len, &c->limits, reply, &used);
        if (st != TS_OK) {
            snprintf(c->err, sizeof c->err, "bad frame from the server: %s", ts_strerror(st));
            return st;
        }
        if (used) {
            memmove(c->in, c->in + used, c->in_len - used);
            c->in_len -= used;
            return TS_OK;
        }
        if (c->in_len == c->in_cap) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 65536;
            if (cap > TS_NET_HEADER_BYTES + c->limits.max_frame_bytes)
                cap = TS_NET_HEADER_BYTES + c->limits.max_frame_bytes;
            uint8_t *nb = cap > c->in_cap ? ts_realloc(c->in, cap) : NULL;
            if (!nb) {
                snprintf(c->err, sizeof c->err, "out of memory for a frame");
                return TS_ENOMEM;
            }
            c->in = nb;
            c->in_cap = cap;
        }
        size_t n = 0;
        st = ts_tls_read(&c->tls, c->in + c->in_len, c->in_cap - c->in_len, &n);
        if (st != TS_OK) {
            snprintf(c->err, sizeof c->err, "the server closed the connection");
            return TS_EIO;
        }
        if (n > 0) {
            c->in_len += n;
            continue;
        }
        st = fill_in(c);
        if (st != TS_OK)
            return st;
    }
}

ts_status_t ts_client_send_request(ts_client_t *c, Tessera__Envelope *req)
{
    req->request_id = c->next_rid++;
    c->err[0] = '\0';
    return ts_client_send(c, req);
}

ts_status_t ts_client_recv_reply(ts_client_t *c, const uint64_t *rids, size_t n,
                                 Tessera__Envelope__BodyCase want, Tessera__Envelope **reply,
                                 size_t *which)
{
    *reply = NULL;
    for (;;) {
        Tessera__Envelope *e = NULL;
        ts_status_t st = ts_client_recv(c, &e);
        if (st != TS_OK)
            return st;
        size_t w = 0;
        while (w < n && rids[w] != e->request_id)
            w++;
        if (which)
            *which = w;
        if (e->body_case == TESSERA__ENVELOPE__BODY_ERROR && (w < n || e->request_id == 0)) {
            snprintf(c->err, sizeof c->err, "%s", e->error->message ? e->error->message : "");
            *reply = e;
            return ts_net_error_status(e->error->code);
        }
        if (w == n) {
            ts_net_envelope_free(e); /* a late reply to an abandoned request */
            continue;
        }
        *reply = e;
        if (e->body_case != want) {
            snprintf(c->err, sizeof c->err, "unexpected reply %s (wanted %s)",
                     ts_net_body_name(e->body_case), ts_net_body_name(want));
            return TS_EPROTO;
        }
        return TS_OK;
    }
}

ts_status_t ts_client_call(ts_client_t *c, Tessera__Envelope *req, Tessera__Envelope__BodyCase want,
                           Tessera__Envelope **reply)
{
    *reply = NULL;
    ts_status_t st = ts_client_send_request(c, req);
    if (st != TS_OK)
        return st;
    return ts_client_recv_reply(c, &req->request_id, 1, want, reply, NULL);
}

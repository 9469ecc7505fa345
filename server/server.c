/*
 * tesserad's server: one libuv loop for all I/O, TLS 1.3 through memory BIOs,
 * frames of one envelope each, and the libuv worker pool for work that can
 * take long (hash verification of uploaded keys, homomorphic aggregation), so
 * the loop never blocks on it. See docs/PROTOCOL.md for the messages.
 *
 * Ownership: the server owns its connections, sessions, jobs and rounds. A
 * connection that has work on a worker holds a reference and is freed only
 * after that work returned. Everything except the worker bodies runs on the
 * loop thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "server/ckks_wire.h"
#include "server/tesserad.h"

#define MOD               "tesserad"
#define READ_CHUNK        (64 * 1024)
#define COMPRESS_MIN      1024
#define ERR_FRAME_SLACK   4096 /* room for the fields around bulk bytes in one frame */
#define N_OPS             32
#define RESULT_PAGE_BYTES (4u << 20)

typedef struct conn conn_t;
typedef struct round round_t;

typedef struct session {
    struct session *next;
    uint64_t id;
    conn_t *owner;
    char service[32];
    char param_id[64];
    uint64_t mem;
    /* decode sessions */
    ts_dec_model_t *model;
    ts_dec_session_t *dec;
    bool dec_busy; /* a step runs on a worker */
    bool dead;     /* closed while busy: the step's completion frees it */
} session_t;

typedef struct job {
    struct job *next;
    uint64_t id;
    char ns[80];
    round_t *round;
    uint64_t session_id;
    uint64_t done_ns; /* when its round finished (TTL) */
} job_t;

typedef struct contrib {
    uint64_t weight;
    uint64_t session_id;
    uint64_t job_id;
    ProtobufCBinaryData *cts; /* `count` slots, the first `received` filled */
    size_t count, received;
    size_t bytes;
} contrib_t;

enum round_state { ROUND_COLLECTING, ROUND_RUNNING, ROUND_DONE, ROUND_FAILED };

struct round {
    round_t *next;
    ts_server_t *srv;
    char name[128];
    char param_id[64];
    uint32_t participants;
    uint64_t length;
    size_t ct_count;
    contrib_t *contribs;
    size_t n;    /* contributors with a slot */
    size_t done; /* contributions complete */
    enum round_state state;
    ProtobufCBinaryData *result;
    size_t result_bytes;
    ts_status_t work_status;
    char detail[256];
    uint64_t created_ns;
    uint64_t compute_ns;
    int jobs; /* live jobs referring to it */
    /* Settings captured when the round is queued (SIGHUP may change the config). */
    char params_dir[512];
    bool insecure;
    int flood_bits;
    uv_work_t work;
};

enum conn_state { CONN_HANDSHAKE, CONN_HELLO, CONN_READY };

struct conn {
    uv_tcp_t tcp; /* first: the handle's address is the connection's */
    conn_t *prev, *next;
    ts_server_t *srv;
    ts_tls_t tls;
    enum conn_state state;
    bool closing, closed_handle, listed, counted, drain_close;
    char peer[64];
    char ident[96]; /* for connections-per-client: namespace or ip */
    char ns[80];    /* key namespace */
    uint8_t *in;
    size_t in_len, in_cap;
    uint64_t t_accept, t_last, t_partial, t_closing;
    uint64_t messages;
    size_t write_pending;
    bool reading;
    int busy;
    int refs;
    uv_shutdown_t shutdown_req;
    int sessions;
    /* What the last KeyUploadBegins announced (kind, preset), for the final check. */
    struct {
        uint8_t sha[32];
        char kind[16];
        char param_id[64];
    } announced[4];
    unsigned n_announced;
};

typedef struct op_stat {
    uint64_t count, errors, total_us, max_us;
} op_stat_t;

struct ts_server {
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t tick;
    uv_async_t stop_async;
    ts_srv_config_t cfg;
    ts_server_opts_t opts;
    char config_path[512];
    SSL_CTX *ssl_ctx;
    ts_keystore_t *ks;
    ts_dec_registry_t *dec; /* decode models */
    conn_t *conns;
    session_t *sessions;
    job_t *jobs;
    round_t *rounds;
    uint32_t n_conns, n_sessions, live_conns;
    uint64_t next_id;
    int port;
    bool draining, listening, stopped;
    uint64_t drain_deadline;
    int in_flight; /* worker tasks */
    uint64_t mem_used;
    uint64_t start_ns;
    uint64_t conns_total, frames_in, frames_out, bytes_in, bytes_out, rejected;
    op_stat_t ops[N_OPS];
    uint8_t rbuf[READ_CHUNK];
    bool rbuf_busy;
};

/* ------------------------------------------------------------- utilities */

static uint64_t now_ms(void)
{
    return ts_now_ns() / 1000000u;
}

static ts_net_limits_t limits_of(const ts_server_t *s)
{
    ts_net_limits_t l = {(size_t)s->cfg.limits.max_frame_bytes,
                         (size_t)s->cfg.limits.max_decompressed_bytes};
    return l;
}

static uint64_t new_id(ts_server_t *s)
{
    /* Unpredictable ids: a peer cannot guess another namespace's job ids. */
    uint64_t v = 0;
    if (ts_os_random(&v, sizeof v) != TS_OK || v == 0)
        v = ++s->next_id ^ ts_now_ns();
    return v & 0x7fffffffffffffffULL; /* keep JSON consumers with doubles honest */
}

/* Copy a peer-supplied string for logs: printable ASCII only. */
static void clean(char *out, size_t size, const char *in)
{
    size_t j = 0;
    for (size_t i = 0; in && in[i] && j + 1 < size; i++)
        out[j++] = (in[i] >= 0x20 && in[i] < 0x7f && in[i] != '"' && in[i] != '\\') ? in[i] : '?';
    out[j] = '\0';
}

static session_t *find_session(ts_server_t *s, uint64_t id)
{
    for (session_t *x = s->sessions; x; x = x->next)
        if (x->id == id)
            return x;
    return NULL;
}

static job_t *find_job(ts_server_t *s, uint64_t id, const char *ns)
{
    for (job_t *j = s->jobs; j; j = j->next)
        if (j->id == id && strcmp(j->ns, ns) == 0)
            return j;
    return NULL;
}

static void free_cts(ProtobufCBinaryData *cts, size_t count)
{
    if (!cts)
        return;
    for (size_t i = 0; i < count; i++)
        ts_free(cts[i].data);
    ts_free(cts);
}

/* ------------------------------------------------------------ connections */

static void conn_pump(conn_t *c);
static void conn_close(conn_t *c, const char *why);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void server_maybe_finish(ts_server_t *s);

static void conn_unref(conn_t *c)
{
    if (--c->refs > 0)
        return;
    ts_tls_clear(&c->tls);
    c->srv->mem_used -= c->in_cap;
    ts_free(c->in);
    ts_free(c);
}

static void conn_update_reading(conn_t *c)
{
    bool want =
        !c->closing && !c->busy && c->write_pending < (size_t)c->srv->cfg.limits.write_buffer_bytes;
    if (want == c->reading)
        return;
    if (want) {
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
            c->reading = true;
    } else {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

typedef struct write_req {
    uv_write_t req;
    conn_t *c;
    size_t n;
    uint8_t data[];
} write_req_t;

static void on_write(uv_write_t *req, int status)
{
    write_req_t *w = (write_req_t *)req;
    conn_t *c = w->c;
    c->write_pending -= w->n;
    c->srv->bytes_out += w->n;
    ts_free(w);
    if (status < 0 && !c->closing)
        conn_close(c, "write failed");
    else if (!c->closing && !c->reading) {
        conn_update_reading(c);
        if (c->reading)
            conn_pump(c);
    }
    conn_unref(c);
}

/* Move TLS output to the socket. */
static void conn_flush(conn_t *c)
{
    if (c->closed_handle || uv_is_closing((uv_handle_t *)&c->tcp))
        return;
    size_t pend;
    while ((pend = ts_tls_pending(&c->tls)) > 0) {
        size_t n = pend < (256u << 10) ? pend : (256u << 10);
        write_req_t *w = ts_malloc(sizeof *w + n);
        if (!w) {
            conn_close(c, "out of memory");
            return;
        }
        w->n = ts_tls_take(&c->tls, w->data, n);
        w->c = c;
        uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->n);
        c->refs++;
        if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
            c->refs--;
            ts_free(w);
            conn_close(c, "write failed");
            return;
        }
        c->write_pending += w->n;
    }
    conn_update_reading(c);
}

static ts_status_t conn_send(conn_t *c, Tessera__Envelope *env)
{
    if (c->closed_handle || uv_is_closing((uv_handle_t *)&c->tcp))
        return TS_EIO;
    ts_net_limits_t l = limits_of(c->srv);
    uint8_t *frame = NULL;
    size_t n = 0;
    /* Ciphertext residues are uniformly random: compressing them only costs time. */
    size_t cmin = env->body_case == TESSERA__ENVELOPE__BODY_JOB_RESULT ? 0 : COMPRESS_MIN;
    ts_status_t st = ts_net_envelope_pack(env, &l, cmin, 3, &frame, &n);
    if (st != TS_OK)
        return st;
    st = ts_tls_write(&c->tls, frame, n);
    ts_free(frame);
    if (st == TS_OK) {
        c->srv->frames_out++;
        conn_flush(c);
    }
    return st;
}

static void send_error(conn_t *c, uint64_t req_id, ts_status_t code, bool fatal, const char *fmt,
                       ...) TS_PRINTF(5, 6);

static void send_error(conn_t *c, uint64_t req_id, ts_status_t code, bool fatal, const char *fmt,
                       ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    Tessera__Error e = TESSERA__ERROR__INIT;
    e.code = ts_net_error_code(code);
    e.message = msg;
    e.fatal = fatal;
    Tessera__Envelope env = TESSERA__ENVELOPE__INIT;
    env.request_id = req_id;
    env.body_case = TESSERA__ENVELOPE__BODY_ERROR;
    env.error = &e;
    ts_log(fatal ? TS_LOG_WARN : TS_LOG_INFO, MOD,
           "event=error_reply peer=%s ns=%s code=%s fatal=%d msg=%s", c->peer, c->ns,
           ts_status_name(code), fatal, msg);
    conn_send(c, &env);
    if (fatal)
        conn_close(c, msg);
}

static void on_closed(uv_handle_t *h)
{
    conn_t *c = (conn_t *)h;
    ts_server_t *s = c->srv;
    if (c->listed) {
        if (c->prev)
            c->prev->next = c->next;
        else
            s->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        c->listed = false;
    }
    s->live_conns--;
    c->closed_handle = true;
    conn_unref(c);
    server_maybe_finish(s);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    conn_t *c = req->data;
    if (!uv_is_closing((uv_handle_t *)&c->tcp))
        uv_close((uv_handle_t *)&c->tcp, on_closed);
    conn_unref(c);
}

/* Free an unlinked session (a decode session with a step in flight is freed
 * by the step's completion instead). */
static void session_release(ts_server_t *s, session_t *x)
{
    if (x->dec_busy) {
        x->dead = true;
        return;
    }
    if (x->model)
        (*ts_dec_model_sessions(x->model))--;
    if (x->dec) {
        s->mem_used -= x->mem;
        ts_dec_session_free(x->dec);
    }
    ts_free(x);
}

static void sessions_drop_owner(ts_server_t *s, conn_t *c)
{
    session_t **pp = &s->sessions;
    while (*pp) {
        session_t *x = *pp;
        if (x->owner == c) {
            *pp = x->next;
            s->n_sessions--;
            session_release(s, x);
        } else {
            pp = &x->next;
        }
    }
}

static uint32_t ident_count(ts_server_t *s, const char *ident)
{
    uint32_t n = 0;
    for (conn_t *x = s->conns; x; x = x->next)
        if (!x->closing && strcmp(x->ident, ident) == 0)
            n++;
    return n;
}

/* Close a connection: flush what is queued, send close_notify, then close. */
static void conn_close(conn_t *c, const char *why)
{
    if (c->closing)
        return;
    ts_server_t *s = c->srv;
    c->closing = true;
    c->t_closing = now_ms();
    ts_log(TS_LOG_INFO, MOD, "event=close peer=%s ns=%s messages=%llu reason=%s", c->peer, c->ns,
           (unsigned long long)c->messages, why ? why : "-");
    if (c->counted) {
        c->counted = false;
        s->n_conns--;
    }
    sessions_drop_owner(s, c);
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    ts_tls_shutdown(&c->tls);
    conn_flush(c);
    c->shutdown_req.data = c;
    c->refs++;
    if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        c->refs--;
        if (!uv_is_closing((uv_handle_t *)&c->tcp))
            uv_close((uv_handle_t *)&c->tcp, on_closed);
    }
}

/* ------------------------------------------------------------ op handlers */

static void op_done(ts_server_t *s, int op, uint64_t t0_ns, bool err)
{
    if (op < 0 || op >= N_OPS)
        return;
    uint64_t us = (ts_now_ns() - t0_ns) / 1000u;
    op_stat_t *o = &s->ops[op];
    o->count++;
    o->errors += err;
    o->total_us += us;
    if (us > o->max_us)
        o->max_us = us;
}

static void reply(conn_t *c, uint64_t req_id, Tessera__Envelope__BodyCase bc, void *body)
{
    Tessera__Envelope env = TESSERA__ENVELOPE__INIT;
    env.request_id = req_id;
    env.body_case = bc;
    /* Every body member of the oneof shares one pointer slot. */
    env.error = body;
    ts_status_t st = conn_send(c, &env);
    if (st != TS_OK && !c->closing)
        send_error(c, req_id, st, false, "reply could not be sent: %s", ts_strerror(st));
}

static const char *services_list[] = {"aggregate", "decode"};

static void handle_hello(conn_t *c, uint64_t rid, const Tessera__Hello *h)
{
    ts_server_t *s = c->srv;
    if (h->min_version > TS_NET_PROTOCOL_VERSION || h->max_version < TS_NET_PROTOCOL_VERSION ||
        h->min_version > h->max_version) {
        send_error(c, rid, TS_EPROTO, true,
                   "no common protocol version: client speaks %u..%u, server speaks %d..%d",
                   h->min_version, h->max_version, TS_NET_PROTOCOL_VERSION,
                   TS_NET_PROTOCOL_VERSION);
        return;
    }
    char name[64];
    clean(name, sizeof name, h->client_name);
    c->state = CONN_READY;
    ts_log(TS_LOG_INFO, MOD, "event=hello peer=%s ns=%s client=%s version=%d", c->peer, c->ns, name,
           TS_NET_PROTOCOL_VERSION);
    Tessera__Limits lim = TESSERA__LIMITS__INIT;
    lim.max_frame_bytes = (uint64_t)s->cfg.limits.max_frame_bytes;
    lim.max_decompressed_bytes = (uint64_t)s->cfg.limits.max_decompressed_bytes;
    lim.max_messages = (uint64_t)s->cfg.limits.max_messages_per_connection;
    lim.key_chunk_bytes = (uint64_t)s->cfg.keystore.chunk_bytes;
    lim.key_quota_bytes = (uint64_t)s->cfg.keystore.quota_bytes;
    lim.session_memory_bytes = (uint64_t)s->cfg.limits.session_memory_bytes;
    lim.request_timeout_ms = (uint32_t)s->cfg.timeouts.request_ms;
    lim.idle_timeout_ms = (uint32_t)s->cfg.timeouts.idle_ms;
    Tessera__HelloReply r = TESSERA__HELLO_REPLY__INIT;
    r.version = TS_NET_PROTOCOL_VERSION;
    r.server_name = (char *)TS_SERVER_NAME;
    r.identity = c->ns;
    r.insecure_params = s->opts.insecure_params;
    r.limits = &lim;
    r.n_services = ts_dec_registry_count(s->dec) ? 2 : 1;
    r.services = (char **)services_list;
    reply(c, rid, TESSERA__ENVELOPE__BODY_HELLO_REPLY, &r);
}

static void fill_key_status(Tessera__KeyStatus *ks, const uint8_t sha[32],
                            const ts_key_status_t *st)
{
    ks->sha256.data = (uint8_t *)sha;
    ks->sha256.len = 32;
    ks->size = st->size;
    ks->chunk_bytes = st->chunk_bytes;
    ks->chunk_count = st->chunk_count;
    ks->complete = st->complete;
    ks->known = st->known;
    if (st->have) {
        ks->have.data = st->have;
        ks->have.len = (st->chunk_count + 7) / 8;
    }
}

static void handle_key_begin(conn_t *c, uint64_t rid, const Tessera__KeyUploadBegin *b)
{
    ts_server_t *s = c->srv;
    ts_key_status_t st;
    ts_status_t r = ts_keystore_begin(s->ks, c->ns, b->sha256.data, b->size, &st);
    if (r == TS_ELIMIT) {
        send_error(c, rid, r, false,
                   "key store quota exceeded: namespace holds %llu bytes, key needs %llu, quota "
                   "is %llu",
                   (unsigned long long)ts_keystore_usage(s->ks, c->ns), (unsigned long long)b->size,
                   (unsigned long long)s->cfg.keystore.quota_bytes);
        return;
    }
    if (r != TS_OK) {
        send_error(c, rid, r, false, "cannot start key upload: %s", ts_strerror(r));
        return;
    }
    unsigned slot = c->n_announced++ % 4;
    memcpy(c->announced[slot].sha, b->sha256.data, 32);
    snprintf(c->announced[slot].kind, sizeof c->announced[slot].kind, "%s", b->kind ? b->kind : "");
    snprintf(c->announced[slot].param_id, sizeof c->announced[slot].param_id, "%s",
             b->param_id ? b->param_id : "");
    char hex[65], kind[32];
    ts_net_hex(b->sha256.data, 32, hex);
    clean(kind, sizeof kind, b->kind);
    ts_log(TS_LOG_INFO, MOD, "event=key_begin ns=%s key=%s kind=%s size=%llu have=%u/%u", c->ns,
           hex, kind, (unsigned long long)b->size, st.received, st.chunk_count);
    Tessera__KeyStatus ks = TESSERA__KEY_STATUS__INIT;
    fill_key_status(&ks, b->sha256.data, &st);
    reply(c, rid, TESSERA__ENVELOPE__BODY_KEY_STATUS, &ks);
}

static void handle_key_query(conn_t *c, uint64_t rid, const Tessera__KeyQuery *q)
{
    ts_key_status_t st;
    ts_status_t r = ts_keystore_query(c->srv->ks, c->ns, q->sha256.data, &st);
    if (r != TS_OK) {
        send_error(c, rid, r, false, "key query failed: %s", ts_strerror(r));
        return;
    }
    Tessera__KeyStatus ks = TESSERA__KEY_STATUS__INIT;
    fill_key_status(&ks, q->sha256.data, &st);
    reply(c, rid, TESSERA__ENVELOPE__BODY_KEY_STATUS, &ks);
}

typedef struct key_finish {
    uv_work_t work;
    conn_t *c;
    uint64_t rid;
    uint32_t index, received;
    uint8_t sha[32];
    char ns[80];
    char kind[16], param_id[64], params_dir[512];
    bool insecure;
    ts_status_t result;
    char why[256];
    uint64_t t0;
} key_finish_t;

/* A key announced as `public` for a preset is parsed before it is stored. */
static ts_status_t check_public_key(key_finish_t *k)
{
    ts_ckks_params_t *p = NULL;
    uint8_t id[TS_SHA256_BYTES];
    ts_status_t st =
        ts_wire_params_get(k->params_dir, k->param_id, k->insecure, &p, id, k->why, sizeof k->why);
    if (st != TS_OK)
        return st;
    uint8_t *data = NULL;
    size_t n = 0;
    st = ts_keystore_part_load(k->c->srv->ks, k->ns, k->sha, &data, &n);
    if (st == TS_OK)
        st = ts_wire_pk_check(p, id, data, n, k->why, sizeof k->why);
    ts_free(data);
    ts_ckks_params_free(p);
    return st;
}

static void key_finish_work(uv_work_t *w)
{
    key_finish_t *k = w->data;
    k->result = TS_OK;
    if (!strcmp(k->kind, "public") && k->param_id[0])
        k->result = check_public_key(k);
    if (k->result == TS_OK)
        k->result = ts_keystore_finish(k->c->srv->ks, k->ns, k->sha);
}

static void key_finish_after(uv_work_t *w, int status)
{
    key_finish_t *k = w->data;
    conn_t *c = k->c;
    ts_server_t *s = c->srv;
    if (status == UV_ECANCELED)
        k->result = TS_ECANCELED;
    ts_keystore_finish_end(s->ks, k->ns, k->sha, k->result);
    s->in_flight--;
    c->busy--;
    char hex[65];
    ts_net_hex(k->sha, 32, hex);
    ts_log(k->result == TS_OK ? TS_LOG_INFO : TS_LOG_WARN, MOD,
           "event=key_stored ns=%s key=%s status=%s", k->ns, hex, ts_status_name(k->result));
    if (!c->closing) {
        if (k->result == TS_OK) {
            Tessera__KeyChunkAck a = TESSERA__KEY_CHUNK_ACK__INIT;
            a.index = k->index;
            a.received = k->received;
            a.complete = true;
            reply(c, k->rid, TESSERA__ENVELOPE__BODY_KEY_CHUNK_ACK, &a);
        } else if (k->why[0]) {
            send_error(c, k->rid, k->result, false, "key refused, upload discarded: %s", k->why);
        } else if (k->result == TS_EFORMAT) {
            send_error(c, k->rid, TS_EFORMAT, false,
                       "uploaded bytes do not hash to the announced SHA-256; upload discarded");
        } else {
            send_error(c, k->rid, k->result, false, "storing the key failed: %s",
                       ts_strerror(k->result));
        }
    }
    op_done(s, TESSERA__ENVELOPE__BODY_KEY_CHUNK, k->t0, k->result != TS_OK);
    ts_free(k);
    if (c->drain_close && !c->busy)
        send_error(c, 0, TS_ECANCELED, true, "server is shutting down");
    if (!c->closing) {
        conn_update_reading(c);
        conn_pump(c);
    }
    conn_unref(c);
    server_maybe_finish(s);
}

/* Returns true when the reply is deferred to a worker. */
static bool handle_key_chunk(conn_t *c, uint64_t rid, const Tessera__KeyChunk *k, uint64_t t0)
{
    ts_server_t *s = c->srv;
    bool all_in = false;
    ts_status_t r = ts_keystore_put_chunk(s->ks, c->ns, k->sha256.data, k->index, k->data.data,
                                          k->data.len, &all_in);
    if (r == TS_EEXIST) {
        Tessera__KeyChunkAck a = TESSERA__KEY_CHUNK_ACK__INIT;
        a.index = k->index;
        a.complete = true;
        reply(c, rid, TESSERA__ENVELOPE__BODY_KEY_CHUNK_ACK, &a);
        return false;
    }
    if (r != TS_OK) {
        send_error(c, rid, r, false, "chunk %u rejected: %s%s", k->index, ts_strerror(r),
                   r == TS_ENOENT ? " (send key_upload_begin first)" : "");
        return false;
    }
    ts_key_status_t st;
    ts_keystore_query(s->ks, c->ns, k->sha256.data, &st);
    if (!all_in) {
        Tessera__KeyChunkAck a = TESSERA__KEY_CHUNK_ACK__INIT;
        a.index = k->index;
        a.received = st.received;
        reply(c, rid, TESSERA__ENVELOPE__BODY_KEY_CHUNK_ACK, &a);
        return false;
    }
    r = ts_keystore_finish_begin(s->ks, c->ns, k->sha256.data);
    if (r != TS_OK) {
        send_error(c, rid, r, false, "cannot finish key: %s", ts_strerror(r));
        return false;
    }
    key_finish_t *f = ts_calloc(1, sizeof *f);
    if (!f) {
        ts_keystore_finish_end(s->ks, c->ns, k->sha256.data, TS_ENOMEM);
        send_error(c, rid, TS_ENOMEM, false, "out of memory");
        return false;
    }
    f->c = c;
    f->rid = rid;
    f->index = k->index;
    f->received = st.received;
    memcpy(f->sha, k->sha256.data, 32);
    snprintf(f->ns, sizeof f->ns, "%s", c->ns);
    for (unsigned i = 0; i < 4 && i < c->n_announced; i++)
        if (!memcmp(c->announced[i].sha, f->sha, 32)) {
            memcpy(f->kind, c->announced[i].kind, sizeof f->kind);
            memcpy(f->param_id, c->announced[i].param_id, sizeof f->param_id);
        }
    snprintf(f->params_dir, sizeof f->params_dir, "%s", s->cfg.params_dir);
    f->insecure = s->opts.insecure_params;
    f->t0 = t0;
    f->work.data = f;
    c->refs++;
    c->busy++;
    s->in_flight++;
    if (uv_queue_work(&s->loop, &f->work, key_finish_work, key_finish_after) != 0) {
        c->refs--;
        c->busy--;
        s->in_flight--;
        ts_keystore_finish_end(s->ks, c->ns, k->sha256.data, TS_EINTERNAL);
        ts_free(f);
        send_error(c, rid, TS_EINTERNAL, false, "cannot queue key verification");
        return false;
    }
    conn_update_reading(c);
    return true;
}

static void handle_decode_open(conn_t *c, uint64_t rid, const Tessera__SessionOpen *o, uint64_t t0);

static void handle_session_open(conn_t *c, uint64_t rid, const Tessera__SessionOpen *o, uint64_t t0)
{
    ts_server_t *s = c->srv;
    if (c->sessions >= s->cfg.limits.max_sessions_per_connection) {
        send_error(c, rid, TS_ELIMIT, false, "at most %lld sessions per connection",
                   (long long)s->cfg.limits.max_sessions_per_connection);
        return;
    }
    if (o->service && strcmp(o->service, "decode") == 0) {
        handle_decode_open(c, rid, o, t0);
        return;
    }
    if (!o->service || strcmp(o->service, "aggregate") != 0) {
        char svc[32];
        clean(svc, sizeof svc, o->service);
        send_error(c, rid, TS_ENOTSUP, false, "unknown service \"%s\" (offered: aggregate%s)", svc,
                   ts_dec_registry_count(s->dec) ? ", decode" : "");
        return;
    }
    if (!o->param_id || !*o->param_id || strlen(o->param_id) >= 64) {
        send_error(c, rid, TS_EINVAL, false, "param_id missing or too long");
        return;
    }
    char why[256] = "";
    ts_status_t r = ts_agg_check_params(s->cfg.params_dir, o->param_id, s->opts.insecure_params,
                                        why, sizeof why);
    if (r != TS_OK) {
        send_error(c, rid, r, false, "%s", why[0] ? why : ts_strerror(r));
        return;
    }
    for (size_t i = 0; i < o->n_key_sha256; i++) {
        if (!ts_keystore_has(s->ks, c->ns, o->key_sha256[i].data, NULL)) {
            char hex[65];
            ts_net_hex(o->key_sha256[i].data, 32, hex);
            send_error(c, rid, TS_ENOKEY, false, "key %s is not in this namespace's store", hex);
            return;
        }
    }
    session_t *x = ts_calloc(1, sizeof *x);
    if (!x) {
        send_error(c, rid, TS_ENOMEM, false, "out of memory");
        return;
    }
    x->id = new_id(s);
    x->owner = c;
    snprintf(x->service, sizeof x->service, "%s", o->service);
    snprintf(x->param_id, sizeof x->param_id, "%s", o->param_id);
    x->next = s->sessions;
    s->sessions = x;
    s->n_sessions++;
    c->sessions++;
    Tessera__SessionOpened so = TESSERA__SESSION_OPENED__INIT;
    so.session_id = x->id;
    so.memory_limit_bytes = (uint64_t)s->cfg.limits.session_memory_bytes;
    reply(c, rid, TESSERA__ENVELOPE__BODY_SESSION_OPENED, &so);
}

static void handle_session_close(conn_t *c, uint64_t rid, const Tessera__SessionClose *sc)
{
    ts_server_t *s = c->srv;
    session_t **pp = &s->sessions;
    while (*pp && !((*pp)->id == sc->session_id && (*pp)->owner == c))
        pp = &(*pp)->next;
    if (!*pp) {
        send_error(c, rid, TS_ENOENT, false, "no such session on this connection");
        return;
    }
    session_t *x = *pp;
    *pp = x->next;
    bool was_busy = x->dec_busy;
    session_release(s, x);
    s->n_sessions--;
    c->sessions--;
    if (was_busy)
        ts_log(TS_LOG_INFO, MOD, "event=decode_cancel peer=%s session=%llu", c->peer,
               (unsigned long long)sc->session_id);
    Tessera__SessionClosed r = TESSERA__SESSION_CLOSED__INIT;
    r.session_id = sc->session_id;
    reply(c, rid, TESSERA__ENVELOPE__BODY_SESSION_CLOSED, &r);
}

/* ----------------------------------------------------- aggregation rounds */

static void round_release_inputs(ts_server_t *s, round_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        contrib_t *k = &r->contribs[i];
        session_t *x = find_session(s, k->session_id);
        if (x)
            x->mem = x->mem > k->bytes ? x->mem - k->bytes : 0;
        s->mem_used -= k->bytes;
        free_cts(k->cts, k->received);
    }
    ts_free(r->contribs);
    r->contribs = NULL;
    r->n = 0;
}

static void round_work(uv_work_t *w)
{
    round_t *r = w->data;
    uint64_t t0 = ts_now_ns();
    ts_agg_input_t *in = ts_calloc(r->n, sizeof *in);
    if (!in) {
        r->work_status = TS_ENOMEM;
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        in[i].weight = r->contribs[i].weight;
        in[i].count = r->contribs[i].count;
        in[i].cts = r->contribs[i].cts;
    }
    r->work_status = ts_agg_compute(r->params_dir, r->param_id, r->insecure, r->flood_bits, in,
                                    r->n, r->ct_count, &r->result, r->detail, sizeof r->detail);
    ts_free(in);
    r->compute_ns = ts_now_ns() - t0;
}

static void round_after(uv_work_t *w, int status)
{
    round_t *r = w->data;
    ts_server_t *s = r->srv;
    s->in_flight--;
    if (status == UV_ECANCELED)
        r->work_status = TS_ECANCELED;
    round_release_inputs(s, r);
    if (r->work_status == TS_OK) {
        r->state = ROUND_DONE;
        r->result_bytes = 0;
        for (size_t i = 0; i < r->ct_count; i++)
            r->result_bytes += r->result[i].len;
        s->mem_used += r->result_bytes;
        snprintf(r->detail, sizeof r->detail, "aggregated %u contributions in %.1f ms",
                 r->participants, (double)r->compute_ns / 1e6);
    } else {
        r->state = ROUND_FAILED;
        if (!r->detail[0])
            snprintf(r->detail, sizeof r->detail, "%s", ts_strerror(r->work_status));
    }
    char name[128];
    clean(name, sizeof name, r->name);
    ts_log(r->state == ROUND_DONE ? TS_LOG_INFO : TS_LOG_WARN, MOD,
           "event=round_done round=%s participants=%u ciphertexts=%zu status=%s ms=%.1f", name,
           r->participants, r->ct_count, ts_status_name(r->work_status),
           (double)r->compute_ns / 1e6);
    uint64_t t = now_ms();
    for (job_t *j = s->jobs; j; j = j->next)
        if (j->round == r)
            j->done_ns = t;
    op_done(s, TESSERA__ENVELOPE__BODY_JOB_SUBMIT + 8, ts_now_ns() - r->compute_ns,
            r->state != ROUND_DONE);
    server_maybe_finish(s);
}

static void round_fail(ts_server_t *s, round_t *r, ts_status_t st, const char *why)
{
    round_release_inputs(s, r);
    r->state = ROUND_FAILED;
    r->work_status = st;
    snprintf(r->detail, sizeof r->detail, "%s", why);
    uint64_t t = now_ms();
    for (job_t *j = s->jobs; j; j = j->next)
        if (j->round == r)
            j->done_ns = t;
}

static void round_unlink_free(ts_server_t *s, round_t *r)
{
    round_t **pp = &s->rounds;
    while (*pp && *pp != r)
        pp = &(*pp)->next;
    if (*pp)
        *pp = r->next;
    round_release_inputs(s, r);
    if (r->result) {
        s->mem_used -= r->result_bytes;
        free_cts(r->result, r->ct_count);
    }
    ts_free(r);
}

static void job_free(ts_server_t *s, job_t *j)
{
    job_t **pp = &s->jobs;
    while (*pp && *pp != j)
        pp = &(*pp)->next;
    if (*pp)
        *pp = j->next;
    round_t *r = j->round;
    ts_free(j);
    if (r && --r->jobs == 0 && r->state != ROUND_RUNNING && r->state != ROUND_COLLECTING)
        round_unlink_free(s, r);
}

static size_t count_jobs(ts_server_t *s)
{
    size_t n = 0;
    for (job_t *j = s->jobs; j; j = j->next)
        n++;
    return n;
}

static bool printable(const char *str, size_t max)
{
    size_t n = str ? strlen(str) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (str[i] < 0x21 || str[i] > 0x7e)
            return false;
    return true;
}

/* Ciphertext validation of a submission, on a worker (decoding checks every residue). */
typedef struct submit_work {
    uv_work_t work;
    conn_t *c;
    Tessera__Envelope *env; /* owned until the submission is committed */
    char params_dir[512];
    char param_id[64];
    bool insecure;
    ts_status_t st;
    char why[256];
    uint64_t t0;
} submit_work_t;

static bool handle_job_submit(conn_t *c, uint64_t rid, Tessera__Envelope *e, bool validated,
                              uint64_t t0);

static void submit_validate_work(uv_work_t *w)
{
    submit_work_t *v = w->data;
    const Tessera__AggregateContribution *a = v->env->job_submit->aggregate;
    v->st = ts_agg_validate(v->params_dir, v->param_id, v->insecure, a->ciphertexts,
                            a->n_ciphertexts, v->why, sizeof v->why);
}

static void submit_validate_after(uv_work_t *w, int status)
{
    submit_work_t *v = w->data;
    conn_t *c = v->c;
    ts_server_t *s = c->srv;
    s->in_flight--;
    c->busy--;
    if (status == UV_ECANCELED)
        v->st = TS_ECANCELED;
    uint64_t rid = v->env->request_id;
    if (!c->closing) {
        if (v->st != TS_OK) {
            s->rejected++;
            send_error(c, rid, v->st, false, "ciphertext rejected: %s",
                       v->why[0] ? v->why : ts_strerror(v->st));
        } else {
            /* Everything is checked again: the round may have moved meanwhile. */
            handle_job_submit(c, rid, v->env, true, v->t0);
        }
    }
    op_done(s, TESSERA__ENVELOPE__BODY_JOB_SUBMIT, v->t0, v->st != TS_OK);
    ts_net_envelope_free(v->env);
    ts_free(v);
    if (c->drain_close && !c->busy && !c->closing)
        send_error(c, 0, TS_ECANCELED, true, "server is shutting down");
    if (!c->closing) {
        conn_update_reading(c);
        conn_pump(c);
    }
    conn_unref(c);
    server_maybe_finish(s);
}

/*
 * A contribution part. The first pass (validated = false) checks the request
 * and hands the ciphertexts to a worker for validation, taking ownership of e
 * (returns true: deferred); the second pass, after validation, commits it.
 */
static bool handle_job_submit(conn_t *c, uint64_t rid, Tessera__Envelope *e, bool validated,
                              uint64_t t0)
{
    const Tessera__JobSubmit *js = e->job_submit;
    ts_server_t *s = c->srv;
    session_t *x = find_session(s, js->session_id);
    if (!x || x->owner != c) {
        send_error(c, rid, TS_ENOENT, false, "no such session on this connection");
        return false;
    }
    if (s->draining) {
        send_error(c, rid, TS_ECANCELED, false, "server is shutting down");
        return false;
    }
    if (js->work_case != TESSERA__JOB_SUBMIT__WORK_AGGREGATE || strcmp(x->service, "aggregate")) {
        send_error(c, rid, TS_ENOTSUP, false, "this session's service does not take that job");
        return false;
    }
    const Tessera__AggregateContribution *a = js->aggregate;
    size_t n_cts = a->n_ciphertexts;
    size_t total = a->total ? a->total : n_cts;
    if (!printable(a->round, 127)) {
        send_error(c, rid, TS_EINVAL, false, "round name must be 1..127 printable characters");
        return false;
    }
    if (a->participants < 1 || a->participants > 1024 || a->weight < 1 ||
        a->weight > ((uint64_t)1 << 40) || a->length < 1 || n_cts < 1 ||
        total > (size_t)s->cfg.limits.max_ciphertexts_per_job || a->first > total ||
        n_cts > total - a->first) {
        send_error(c, rid, TS_EINVAL, false,
                   "contribution out of range: participants 1..1024, weight 1..2^40, length >= 1, "
                   "1..%lld ciphertexts, parts within the total",
                   (long long)s->cfg.limits.max_ciphertexts_per_job);
        return false;
    }
    size_t bytes = 0;
    for (size_t i = 0; i < n_cts; i++)
        bytes += a->ciphertexts[i].len;
    if (x->mem + bytes > (uint64_t)s->cfg.limits.session_memory_bytes) {
        s->rejected++;
        send_error(c, rid, TS_ELIMIT, false,
                   "session memory limit: %llu bytes held, %zu more would pass %lld",
                   (unsigned long long)x->mem, bytes,
                   (long long)s->cfg.limits.session_memory_bytes);
        return false;
    }
    if (s->mem_used + bytes > (uint64_t)s->cfg.limits.total_memory_bytes) {
        send_error(c, rid, TS_EBUSY, false, "server memory limit reached; retry later");
        return false;
    }
    round_t *r = NULL;
    for (round_t *q = s->rounds; q; q = q->next)
        if (q->state == ROUND_COLLECTING && strcmp(q->name, a->round) == 0) {
            r = q;
            break;
        }
    if (r && (strcmp(r->param_id, x->param_id) || r->participants != a->participants ||
              r->length != a->length || r->ct_count != total)) {
        send_error(c, rid, TS_EMISMATCH, false,
                   "round \"%s\" was opened with params %s, %u participants, length %llu, %zu "
                   "ciphertexts; this contribution differs",
                   r->name, r->param_id, r->participants, (unsigned long long)r->length,
                   r->ct_count);
        return false;
    }
    contrib_t *k = NULL;
    for (size_t i = 0; r && i < r->n; i++)
        if (r->contribs[i].session_id == x->id)
            k = &r->contribs[i];
    if (k && (k->received == k->count || k->weight != a->weight || a->first != k->received)) {
        send_error(c, rid, TS_EINVAL, false,
                   "this session's contribution to the round %s (expected the part starting at "
                   "%zu with weight %llu)",
                   k->received == k->count ? "is already complete" : "continues differently",
                   k->received, (unsigned long long)k->weight);
        return false;
    }
    if (!k && a->first != 0) {
        send_error(c, rid, TS_EINVAL, false, "the first part of a contribution starts at 0");
        return false;
    }
    if (!k && r && r->n == r->participants) {
        send_error(c, rid, TS_ELIMIT, false, "round \"%s\" already has its %u participants",
                   r->name, r->participants);
        return false;
    }
    if (!k && count_jobs(s) >= (size_t)s->cfg.limits.max_queued_jobs) {
        send_error(c, rid, TS_EBUSY, false, "job queue full (%lld jobs); retry later",
                   (long long)s->cfg.limits.max_queued_jobs);
        return false;
    }
    /* Every ciphertext is validated, off the loop, before it is kept. */
    if (!validated) {
        submit_work_t *v = ts_calloc(1, sizeof *v);
        if (!v) {
            send_error(c, rid, TS_ENOMEM, false, "out of memory");
            return false;
        }
        v->c = c;
        v->env = e;
        snprintf(v->params_dir, sizeof v->params_dir, "%s", s->cfg.params_dir);
        snprintf(v->param_id, sizeof v->param_id, "%s", x->param_id);
        v->insecure = s->opts.insecure_params;
        v->t0 = t0;
        v->work.data = v;
        c->busy++;
        c->refs++;
        s->in_flight++;
        if (uv_queue_work(&s->loop, &v->work, submit_validate_work, submit_validate_after) != 0) {
            c->busy--;
            c->refs--;
            s->in_flight--;
            ts_free(v);
            send_error(c, rid, TS_EINTERNAL, false, "cannot queue the validation");
            return false;
        }
        conn_update_reading(c);
        return true;
    }
    bool created = false;
    job_t *j = NULL;
    if (!r) {
        r = ts_calloc(1, sizeof *r);
        if (!r)
            goto oom;
        r->contribs = ts_calloc(a->participants, sizeof *r->contribs);
        if (!r->contribs) {
            ts_free(r);
            goto oom;
        }
        r->srv = s;
        snprintf(r->name, sizeof r->name, "%s", a->round);
        snprintf(r->param_id, sizeof r->param_id, "%s", x->param_id);
        r->participants = a->participants;
        r->length = a->length;
        r->ct_count = total;
        r->created_ns = now_ms();
        r->work.data = r;
        created = true;
    }
    ProtobufCBinaryData *cts = k ? k->cts : ts_calloc(total, sizeof *cts);
    if (!k) {
        j = ts_calloc(1, sizeof *j);
        if (!j || !cts) {
            ts_free(j);
            ts_free(cts);
            goto oom_round;
        }
    }
    size_t base = k ? k->received : 0;
    for (size_t i = 0; i < n_cts; i++) {
        ProtobufCBinaryData *dst = &cts[base + i];
        dst->len = a->ciphertexts[i].len;
        dst->data = ts_malloc(dst->len ? dst->len : 1);
        if (!dst->data) {
            for (size_t q = 0; q < i; q++) {
                ts_free(cts[base + q].data);
                cts[base + q].data = NULL;
            }
            if (!k) {
                ts_free(cts);
                ts_free(j);
            }
            goto oom_round;
        }
        memcpy(dst->data, a->ciphertexts[i].data, dst->len);
    }
    if (created) {
        r->next = s->rounds;
        s->rounds = r;
    }
    if (!k) {
        k = &r->contribs[r->n++];
        k->weight = a->weight;
        k->session_id = x->id;
        k->cts = cts;
        k->count = total;
        j->id = new_id(s);
        k->job_id = j->id;
        snprintf(j->ns, sizeof j->ns, "%s", c->ns);
        j->round = r;
        j->session_id = x->id;
        r->jobs++;
        j->next = s->jobs;
        s->jobs = j;
    }
    k->received += n_cts;
    k->bytes += bytes;
    x->mem += bytes;
    s->mem_used += bytes;
    if (k->received == k->count)
        r->done++;
    char name[128];
    clean(name, sizeof name, r->name);
    ts_log(TS_LOG_INFO, MOD,
           "event=contribution ns=%s round=%s part=%zu..%zu/%zu complete=%zu/%u weight=%llu "
           "bytes=%zu",
           c->ns, name, base, base + n_cts, total, r->done, r->participants,
           (unsigned long long)a->weight, bytes);
    if (r->done == r->participants) {
        r->state = ROUND_RUNNING;
        snprintf(r->params_dir, sizeof r->params_dir, "%s", s->cfg.params_dir);
        r->insecure = s->opts.insecure_params;
        r->flood_bits = (int)s->cfg.sanitize.flood_bits;
        s->in_flight++;
        if (uv_queue_work(&s->loop, &r->work, round_work, round_after) != 0) {
            s->in_flight--;
            round_fail(s, r, TS_EINTERNAL, "cannot queue the aggregation");
        }
    }
    Tessera__JobAccepted acc = TESSERA__JOB_ACCEPTED__INIT;
    acc.job_id = k->job_id;
    reply(c, rid, TESSERA__ENVELOPE__BODY_JOB_ACCEPTED, &acc);
    return false;
oom_round:
    if (created) {
        ts_free(r->contribs);
        ts_free(r);
    }
oom:
    send_error(c, rid, TS_ENOMEM, false, "out of memory");
    return false;
}

static Tessera__JobState job_state(const job_t *j)
{
    switch (j->round->state) {
    case ROUND_COLLECTING:
        return TESSERA__JOB_STATE__JOB_QUEUED;
    case ROUND_RUNNING:
        return TESSERA__JOB_STATE__JOB_RUNNING;
    case ROUND_DONE:
        return TESSERA__JOB_STATE__JOB_DONE;
    default:
        return j->round->work_status == TS_ECANCELED ? TESSERA__JOB_STATE__JOB_CANCELED
                                                     : TESSERA__JOB_STATE__JOB_FAILED;
    }
}

static void handle_job_status(conn_t *c, uint64_t rid, const Tessera__JobStatusRequest *q)
{
    job_t *j = find_job(c->srv, q->job_id, c->ns);
    if (!j) {
        send_error(c, rid, TS_ENOENT, false, "no such job in this namespace");
        return;
    }
    Tessera__JobStatus r = TESSERA__JOB_STATUS__INIT;
    r.job_id = j->id;
    r.state = job_state(j);
    char detail[256];
    if (j->round->state == ROUND_COLLECTING) {
        r.waiting_for = j->round->participants - (uint32_t)j->round->done;
        snprintf(detail, sizeof detail, "waiting for %u of %u contributions", r.waiting_for,
                 j->round->participants);
    } else {
        snprintf(detail, sizeof detail, "%s", j->round->detail);
    }
    r.detail = detail;
    reply(c, rid, TESSERA__ENVELOPE__BODY_JOB_STATUS, &r);
}

static void handle_job_result(conn_t *c, uint64_t rid, const Tessera__JobResultRequest *q)
{
    ts_server_t *s = c->srv;
    job_t *j = find_job(s, q->job_id, c->ns);
    if (!j) {
        send_error(c, rid, TS_ENOENT, false, "no such job in this namespace");
        return;
    }
    round_t *rd = j->round;
    Tessera__JobResult r = TESSERA__JOB_RESULT__INIT;
    r.job_id = j->id;
    r.state = job_state(j);
    r.param_id = rd->param_id;
    r.length = rd->length;
    r.detail = rd->detail;
    if (rd->state != ROUND_DONE) {
        reply(c, rid, TESSERA__ENVELOPE__BODY_JOB_RESULT, &r);
        return;
    }
    r.total = (uint32_t)rd->ct_count;
    r.first = q->first;
    if (q->first > rd->ct_count) {
        send_error(c, rid, TS_ERANGE, false, "first %u beyond the %zu ciphertexts", q->first,
                   rd->ct_count);
        return;
    }
    /* Pages of at most 4 MiB keep the loop's TLS work per request short. */
    size_t budget = (size_t)s->cfg.limits.max_frame_bytes - ERR_FRAME_SLACK;
    if (budget > RESULT_PAGE_BYTES)
        budget = RESULT_PAGE_BYTES;
    size_t n = 0, bytes = 0;
    for (size_t i = q->first; i < rd->ct_count; i++) {
        if (q->max_count && n == q->max_count)
            break;
        if (bytes + rd->result[i].len + 16 > budget)
            break;
        bytes += rd->result[i].len + 16;
        n++;
    }
    if (n == 0 && q->first < rd->ct_count) {
        send_error(c, rid, TS_ELIMIT, false, "one ciphertext exceeds the frame size limit");
        return;
    }
    r.n_ciphertexts = n;
    r.ciphertexts = rd->result + q->first;
    reply(c, rid, TESSERA__ENVELOPE__BODY_JOB_RESULT, &r);
}

static void handle_stats(conn_t *c, uint64_t rid)
{
    ts_server_t *s = c->srv;
    Tessera__StatsReply r = TESSERA__STATS_REPLY__INIT;
    r.uptime_ms = (ts_now_ns() - s->start_ns) / 1000000u;
    r.connections = s->n_conns;
    r.sessions = s->n_sessions;
    r.queue_depth = (uint32_t)s->in_flight;
    r.workers = (uint32_t)s->cfg.workers;
    r.memory_bytes = s->mem_used;
    r.connections_total = s->conns_total;
    r.frames_in = s->frames_in;
    r.frames_out = s->frames_out;
    r.bytes_in = s->bytes_in;
    r.bytes_out = s->bytes_out;
    r.keys_stored = ts_keystore_count(s->ks);
    r.rejected = s->rejected;
    Tessera__OpStats ops[N_OPS], *pops[N_OPS];
    char names[N_OPS][40];
    size_t n = 0;
    for (int i = 0; i < N_OPS; i++) {
        if (!s->ops[i].count)
            continue;
        tessera__op_stats__init(&ops[n]);
        if (i == TESSERA__ENVELOPE__BODY_JOB_SUBMIT + 8)
            snprintf(names[n], sizeof names[n], "aggregate_compute");
        else
            snprintf(names[n], sizeof names[n], "%s", ts_net_body_name(i));
        ops[n].op = names[n];
        ops[n].count = s->ops[i].count;
        ops[n].errors = s->ops[i].errors;
        ops[n].total_us = s->ops[i].total_us;
        ops[n].max_us = s->ops[i].max_us;
        pops[n] = &ops[n];
        n++;
    }
    r.n_ops = n;
    r.ops = pops;
    reply(c, rid, TESSERA__ENVELOPE__BODY_STATS_REPLY, &r);
}

/* Handle one complete frame. */
/* ------------------------------------------------------- decode sessions */

/* The served model a request names (empty: the first), else NULL after an error reply. */
static ts_dec_model_t *model_named(conn_t *c, uint64_t rid, const char *model)
{
    ts_server_t *s = c->srv;
    if (!ts_dec_registry_count(s->dec)) {
        send_error(c, rid, TS_ENOTSUP, false, "this daemon serves no models (models_dir)");
        return NULL;
    }
    ts_dec_model_t *md = ts_dec_find(s->dec, model);
    if (!md) {
        char name[64], names[256];
        clean(name, sizeof name, model);
        ts_dec_registry_names(s->dec, names, sizeof names);
        send_error(c, rid, TS_ENOENT, false, "no model named \"%s\" (served: %s)", name, names);
    }
    return md;
}

static void handle_model_info(conn_t *c, uint64_t rid, const Tessera__ModelInfoRequest *q)
{
    ts_dec_model_t *md = model_named(c, rid, q->model);
    if (!md)
        return;
    Tessera__ModelInfo mi = TESSERA__MODEL_INFO__INIT;
    ts_dec_model_info(md, &mi);
    reply(c, rid, TESSERA__ENVELOPE__BODY_MODEL_INFO, &mi);
}

/* The model's published draft text, whole (ModelInfo.draft_text_bytes). */
static void handle_draft_text(conn_t *c, uint64_t rid, const Tessera__DraftTextRequest *q)
{
    ts_dec_model_t *md = model_named(c, rid, q->model);
    if (!md)
        return;
    size_t n = 0;
    const uint8_t *text = ts_dec_model_draft(md, &n);
    if (!text) {
        send_error(c, rid, TS_ENOENT, false,
                   "model %s publishes no draft text (its model file's draft_text)",
                   ts_dec_model_name(md));
        return;
    }
    Tessera__DraftText dt = TESSERA__DRAFT_TEXT__INIT;
    dt.model = (char *)ts_dec_model_name(md);
    dt.text.data = (uint8_t *)text;
    dt.text.len = n;
    ts_log(TS_LOG_DEBUG, MOD, "event=draft_text peer=%s model=%s bytes=%zu", c->peer,
           ts_dec_model_name(md), n);
    reply(c, rid, TESSERA__ENVELOPE__BODY_DRAFT_TEXT, &dt);
}

typedef struct dec_work {
    uv_work_t work;
    conn_t *c;
    uint64_t rid, t0;
    ts_status_t st;
    char why[256];
    /* open */
    ts_dec_model_t *md;
    uint8_t (*shas)[32];
    size_t n_keys;
    char ns[80];
    char policy[16];
    uint64_t cap;
    ts_dec_session_t *sess;
    /* step */
    session_t *x;
    Tessera__Envelope *env;
    ts_dec_result_t res;
} dec_work_t;

static void dec_work_done(ts_server_t *s, conn_t *c, dec_work_t *w, int op)
{
    op_done(s, op, w->t0, w->st != TS_OK);
    ts_free(w->shas);
    ts_net_envelope_free(w->env);
    ts_dec_result_clear(&w->res);
    ts_dec_session_free(w->sess);
    ts_free(w);
    if (c->drain_close && !c->busy && !c->closing)
        send_error(c, 0, TS_ECANCELED, true, "server is shutting down");
    if (!c->closing) {
        conn_update_reading(c);
        conn_pump(c);
    }
    conn_unref(c);
    server_maybe_finish(s);
}

/* Key i of a session, read from the store when the session parses it. */
static ts_status_t decode_key_load(void *ctx, size_t i, uint8_t **data, size_t *size, char *why,
                                   size_t why_size)
{
    dec_work_t *w = ctx;
    ts_status_t st = ts_keystore_load(w->c->srv->ks, w->ns, w->shas[i], data, size);
    if (st != TS_OK)
        snprintf(why, why_size, "key %zu cannot be read from the store: %s", i, ts_strerror(st));
    return st;
}

static void decode_open_work(uv_work_t *uw)
{
    dec_work_t *w = uw->data;
    w->st = ts_dec_session_open(w->md, w->policy, w->n_keys, decode_key_load, w, w->cap, &w->sess,
                                w->why, sizeof w->why);
}

static void decode_open_after(uv_work_t *uw, int status)
{
    dec_work_t *w = uw->data;
    conn_t *c = w->c;
    ts_server_t *s = c->srv;
    s->in_flight--;
    c->busy--;
    if (status == UV_ECANCELED)
        w->st = TS_ECANCELED;
    bool ok = false;
    if (w->st == TS_OK && !c->closing) {
        uint64_t mem = ts_dec_session_memory(w->sess);
        if (s->mem_used + mem > (uint64_t)s->cfg.limits.total_memory_bytes) {
            w->st = TS_EBUSY;
            snprintf(w->why, sizeof w->why, "server memory is full (a session needs %llu MiB)",
                     (unsigned long long)(mem >> 20));
        } else {
            session_t *x = ts_calloc(1, sizeof *x);
            if (!x) {
                w->st = TS_ENOMEM;
            } else {
                x->id = new_id(s);
                x->owner = c;
                snprintf(x->service, sizeof x->service, "decode");
                snprintf(x->param_id, sizeof x->param_id, "%s", ts_dec_model_params(w->md));
                x->model = w->md;
                x->dec = w->sess;
                w->sess = NULL;
                x->mem = mem;
                s->mem_used += mem;
                x->next = s->sessions;
                s->sessions = x;
                s->n_sessions++;
                c->sessions++;
                ok = true;
                ts_log(TS_LOG_INFO, MOD,
                       "event=decode_open peer=%s ns=%s model=%s policy=%s session=%llu "
                       "memory_mib=%llu",
                       c->peer, c->ns, ts_dec_model_name(w->md), w->policy,
                       (unsigned long long)x->id, (unsigned long long)(mem >> 20));
                Tessera__SessionOpened so = TESSERA__SESSION_OPENED__INIT;
                so.session_id = x->id;
                so.memory_limit_bytes = mem;
                reply(c, w->rid, TESSERA__ENVELOPE__BODY_SESSION_OPENED, &so);
            }
        }
    }
    if (!ok) {
        (*ts_dec_model_sessions(w->md))--;
        if (!c->closing)
            send_error(c, w->rid, w->st, false, "decode session refused: %s",
                       w->why[0] ? w->why : ts_strerror(w->st));
    }
    dec_work_done(s, c, w, TESSERA__ENVELOPE__BODY_SESSION_OPEN);
}

static void handle_decode_open(conn_t *c, uint64_t rid, const Tessera__SessionOpen *o, uint64_t t0)
{
    ts_server_t *s = c->srv;
    char why[256] = "";
    if (!ts_dec_registry_count(s->dec)) {
        send_error(c, rid, TS_ENOTSUP, false, "this daemon serves no models (models_dir)");
        return;
    }
    if (s->draining) {
        send_error(c, rid, TS_ECANCELED, false, "server is shutting down");
        return;
    }
    ts_dec_model_t *md = ts_dec_find(s->dec, o->model);
    if (!md) {
        char name[64], names[256];
        clean(name, sizeof name, o->model);
        ts_dec_registry_names(s->dec, names, sizeof names);
        send_error(c, rid, TS_ENOENT, false, "no model named \"%s\" (served: %s)", name, names);
        return;
    }
    ts_status_t r = ts_dec_policy_check(md, o->policy, why, sizeof why);
    if (r != TS_OK) {
        send_error(c, rid, r, false, "%s", why);
        return;
    }
    if (o->param_id && o->param_id[0] && strcmp(o->param_id, ts_dec_model_params(md)) != 0) {
        send_error(c, rid, TS_EMISMATCH, false, "model %s runs with params %s",
                   ts_dec_model_name(md), ts_dec_model_params(md));
        return;
    }
    if (o->n_key_sha256 == 0 || o->n_key_sha256 > 16) {
        send_error(c, rid, TS_EINVAL, false,
                   "a decode session needs 1..16 keys (public, relinearization, Galois, "
                   "conversion)");
        return;
    }
    for (size_t i = 0; i < o->n_key_sha256; i++) {
        if (o->key_sha256[i].len != 32) {
            send_error(c, rid, TS_EINVAL, false, "key hash %zu is not 32 bytes", i);
            return;
        }
        if (!ts_keystore_has(s->ks, c->ns, o->key_sha256[i].data, NULL)) {
            char hex[65];
            ts_net_hex(o->key_sha256[i].data, 32, hex);
            send_error(c, rid, TS_ENOKEY, false, "key %s is not in this namespace's store", hex);
            return;
        }
    }
    int *live = ts_dec_model_sessions(md);
    if (*live >= ts_dec_model_max_sessions(md)) {
        send_error(c, rid, TS_EBUSY, false, "model %s already serves %d sessions (its limit)",
                   ts_dec_model_name(md), *live);
        return;
    }
    dec_work_t *w = ts_calloc(1, sizeof *w);
    if (w)
        w->shas = ts_calloc(o->n_key_sha256, 32);
    if (!w || !w->shas) {
        ts_free(w);
        send_error(c, rid, TS_ENOMEM, false, "out of memory");
        return;
    }
    for (size_t i = 0; i < o->n_key_sha256; i++)
        memcpy(w->shas[i], o->key_sha256[i].data, 32);
    w->n_keys = o->n_key_sha256;
    w->c = c;
    w->rid = rid;
    w->t0 = t0;
    w->md = md;
    snprintf(w->ns, sizeof w->ns, "%s", c->ns);
    snprintf(w->policy, sizeof w->policy, "%s", o->policy && o->policy[0] ? o->policy : "ckks");
    w->cap = (uint64_t)s->cfg.limits.session_memory_bytes;
    w->work.data = w;
    (*live)++;
    c->refs++;
    c->busy++;
    s->in_flight++;
    if (uv_queue_work(&s->loop, &w->work, decode_open_work, decode_open_after) != 0) {
        (*live)--;
        c->refs--;
        c->busy--;
        s->in_flight--;
        ts_free(w->shas);
        ts_free(w);
        send_error(c, rid, TS_EINTERNAL, false, "cannot queue the session");
    }
}

static void decode_step_work(uv_work_t *uw)
{
    dec_work_t *w = uw->data;
    const Tessera__DecodeStep *d = w->env->decode_step;
    w->st = ts_dec_session_step(w->x->dec, d->position, d->positions, d->token.data, d->token.len,
                                d->cache_only, d->speculative,
                                d->token_public ? (int)d->public_token : -1, &w->res, w->why,
                                sizeof w->why);
}

static void decode_step_after(uv_work_t *uw, int status)
{
    dec_work_t *w = uw->data;
    conn_t *c = w->c;
    ts_server_t *s = c->srv;
    session_t *x = w->x;
    s->in_flight--;
    c->busy--;
    x->dec_busy = false;
    if (status == UV_ECANCELED)
        w->st = TS_ECANCELED;
    const Tessera__DecodeStep *d = w->env->decode_step;
    if (x->dead) {
        session_release(s, x); /* closed meanwhile: the result is dropped */
        if (!c->closing)
            send_error(c, w->rid, TS_ECANCELED, false, "session closed during the step");
    } else if (!c->closing) {
        if (w->st != TS_OK) {
            s->rejected++;
            send_error(c, w->rid, w->st, false, "decode step refused: %s",
                       w->why[0] ? w->why : ts_strerror(w->st));
        } else {
            Tessera__StageTime st[TS_DEC_STAGES], *sp[TS_DEC_STAGES];
            for (int i = 0; i < TS_DEC_STAGES; i++) {
                tessera__stage_time__init(&st[i]);
                st[i].stage = (char *)ts_dec_stage_names[i];
                st[i].ms = w->res.ms[i];
                sp[i] = &st[i];
            }
            Tessera__DecodeResult r = TESSERA__DECODE_RESULT__INIT;
            r.session_id = d->session_id;
            r.position = d->position;
            r.logits.data = w->res.logits;
            r.logits.len = w->res.logits_size;
            r.level = (uint32_t)w->res.level;
            r.n_stages = TS_DEC_STAGES;
            r.stages = sp;
            r.server_ms = w->res.server_ms;
            r.err_bound = w->res.err_bound;
            r.bootstraps = w->res.bootstraps;
            r.cache_only = w->res.cache_only;
            r.token_public = w->res.token_public;
            r.positions = w->res.positions ? w->res.positions : 1;
            r.speculative = w->res.speculative;
            r.kept = w->res.kept;
            reply(c, w->rid, TESSERA__ENVELOPE__BODY_DECODE_RESULT, &r);
            ts_log(TS_LOG_INFO, MOD,
                   "event=decode_step session=%llu pos=%u positions=%u cache_only=%d public=%d "
                   "ms=%.1f bootstraps=%llu planned_bootstraps=%d",
                   (unsigned long long)d->session_id, d->position, r.positions,
                   (int)w->res.cache_only, (int)w->res.token_public, w->res.server_ms,
                   (unsigned long long)w->res.bootstraps, w->res.planned_bootstraps);
            if (w->res.planned_bootstraps >= 0 &&
                (uint64_t)w->res.planned_bootstraps != w->res.bootstraps)
                ts_log(TS_LOG_WARN, MOD,
                       "event=decode_plan_differs session=%llu pos=%u positions=%u "
                       "bootstraps=%llu planned_bootstraps=%d (the engine ran other bootstraps "
                       "than its plan of the step predicted: its plan's levels do not model "
                       "this session's state)",
                       (unsigned long long)d->session_id, d->position, r.positions,
                       (unsigned long long)w->res.bootstraps, w->res.planned_bootstraps);
        }
    }
    dec_work_done(s, c, w, TESSERA__ENVELOPE__BODY_DECODE_STEP);
}

/* Returns true when e was handed to a worker. */
static bool handle_decode_step(conn_t *c, uint64_t rid, Tessera__Envelope *e, uint64_t t0)
{
    ts_server_t *s = c->srv;
    const Tessera__DecodeStep *d = e->decode_step;
    session_t *x = find_session(s, d->session_id);
    if (!x || x->owner != c || !x->dec) {
        send_error(c, rid, TS_ENOENT, false, "no decode session %llu on this connection",
                   (unsigned long long)d->session_id);
        return false;
    }
    if (s->draining) {
        send_error(c, rid, TS_ECANCELED, false, "server is shutting down");
        return false;
    }
    if (x->dec_busy) {
        send_error(c, rid, TS_EBUSY, false, "the session is already running a step");
        return false;
    }
    int next = ts_dec_session_next_pos(x->dec), max = ts_dec_session_max_context(x->dec);
    if ((int64_t)d->position + (d->positions > 1 ? d->positions : 1) > max) {
        send_error(c, rid, TS_ELIMIT, false,
                   "context full: position %u (%u positions), this model's sessions hold at most "
                   "%d positions",
                   d->position, d->positions > 1 ? d->positions : 1, max);
        return false;
    }
    /* after a speculative pass, any position inside it keeps that prefix of it */
    int pending = ts_dec_session_pending(x->dec);
    if ((int64_t)d->position != next &&
        !((int64_t)d->position > next - pending && (int64_t)d->position < next)) {
        if (pending)
            send_error(c, rid, TS_ERANGE, false,
                       "position %u is not the session's next (%d) nor inside its speculative "
                       "pass (%d .. %d)",
                       d->position, next, next - pending + 1, next - 1);
        else
            send_error(c, rid, TS_ERANGE, false, "position %u is not the session's next (%d)",
                       d->position, next);
        return false;
    }
    if (d->token.len == 0 && !d->token_public) {
        send_error(c, rid, TS_EINVAL, false, "the step carries no token ciphertext");
        return false;
    }
    /* a public position's other rules are the session's (ts_dec_session_step) */
    if (d->token_public && d->public_token > INT32_MAX) {
        send_error(c, rid, TS_EINVAL, false, "public_token %u is out of range", d->public_token);
        return false;
    }
    dec_work_t *w = ts_calloc(1, sizeof *w);
    if (!w) {
        send_error(c, rid, TS_ENOMEM, false, "out of memory");
        return false;
    }
    w->c = c;
    w->rid = rid;
    w->t0 = t0;
    w->x = x;
    w->env = e;
    w->work.data = w;
    x->dec_busy = true;
    c->refs++;
    c->busy++;
    s->in_flight++;
    if (uv_queue_work(&s->loop, &w->work, decode_step_work, decode_step_after) != 0) {
        x->dec_busy = false;
        c->refs--;
        c->busy--;
        s->in_flight--;
        ts_free(w);
        send_error(c, rid, TS_EINTERNAL, false, "cannot queue the step");
        return false;
    }
    return true;
}

static void handle_frame(conn_t *c, const ts_net_frame_t *f)
{
    ts_server_t *s = c->srv;
    uint64_t t0 = ts_now_ns();
    s->frames_in++;
    c->messages++;
    c->t_last = now_ms();
    if (s->cfg.limits.max_messages_per_connection &&
        c->messages > (uint64_t)s->cfg.limits.max_messages_per_connection) {
        s->rejected++;
        send_error(c, 0, TS_ELIMIT, true, "message limit of %lld per connection reached",
                   (long long)s->cfg.limits.max_messages_per_connection);
        return;
    }
    ts_net_limits_t l = limits_of(s);
    uint8_t *msg = NULL;
    size_t msg_n = 0;
    ts_status_t st = ts_net_payload_decode(f, &l, &msg, &msg_n);
    if (st != TS_OK) {
        s->rejected++;
        send_error(c, 0, st, true, "frame payload rejected: %s", ts_strerror(st));
        return;
    }
    /* Decompressed bytes count toward the server's memory while they live. */
    Tessera__Envelope *e = NULL;
    st = ts_net_envelope_unpack(msg, msg_n, &e);
    ts_free(msg);
    if (st != TS_OK) {
        s->rejected++;
        send_error(c, 0, st, true, "malformed message: %s", ts_strerror(st));
        return;
    }
    uint64_t rid = e->request_id;
    int op = (int)e->body_case;
    if (c->state == CONN_HELLO && e->body_case != TESSERA__ENVELOPE__BODY_HELLO) {
        send_error(c, rid, TS_EPROTO, true, "the first message must be hello, got %s",
                   ts_net_body_name(e->body_case));
        ts_net_envelope_free(e);
        return;
    }
    bool deferred = false;
    switch (e->body_case) {
    case TESSERA__ENVELOPE__BODY_HELLO:
        if (c->state == CONN_READY)
            send_error(c, rid, TS_EPROTO, false, "hello was already exchanged");
        else
            handle_hello(c, rid, e->hello);
        break;
    case TESSERA__ENVELOPE__BODY_PING: {
        Tessera__Pong p = TESSERA__PONG__INIT;
        p.payload = e->ping->payload;
        reply(c, rid, TESSERA__ENVELOPE__BODY_PONG, &p);
        break;
    }
    case TESSERA__ENVELOPE__BODY_KEY_UPLOAD_BEGIN:
        handle_key_begin(c, rid, e->key_upload_begin);
        break;
    case TESSERA__ENVELOPE__BODY_KEY_QUERY:
        handle_key_query(c, rid, e->key_query);
        break;
    case TESSERA__ENVELOPE__BODY_KEY_CHUNK:
        deferred = handle_key_chunk(c, rid, e->key_chunk, t0);
        break;
    case TESSERA__ENVELOPE__BODY_SESSION_OPEN:
        handle_session_open(c, rid, e->session_open, t0);
        break;
    case TESSERA__ENVELOPE__BODY_MODEL_INFO_REQUEST:
        handle_model_info(c, rid, e->model_info_request);
        break;
    case TESSERA__ENVELOPE__BODY_DRAFT_TEXT_REQUEST:
        handle_draft_text(c, rid, e->draft_text_request);
        break;
    case TESSERA__ENVELOPE__BODY_DECODE_STEP:
        if (handle_decode_step(c, rid, e, t0))
            return; /* e now belongs to the step's work */
        break;
    case TESSERA__ENVELOPE__BODY_SESSION_CLOSE:
        handle_session_close(c, rid, e->session_close);
        break;
    case TESSERA__ENVELOPE__BODY_JOB_SUBMIT:
        if (handle_job_submit(c, rid, e, false, t0))
            return; /* e and the latency now belong to the validation work */
        break;
    case TESSERA__ENVELOPE__BODY_JOB_STATUS_REQUEST:
        handle_job_status(c, rid, e->job_status_request);
        break;
    case TESSERA__ENVELOPE__BODY_JOB_RESULT_REQUEST:
        handle_job_result(c, rid, e->job_result_request);
        break;
    case TESSERA__ENVELOPE__BODY_STATS_REQUEST:
        handle_stats(c, rid);
        break;
    default:
        send_error(c, rid, TS_EPROTO, false, "%s is not a request", ts_net_body_name(e->body_case));
        break;
    }
    ts_net_envelope_free(e);
    if (!deferred)
        op_done(s, op, t0, false);
}

/* Decrypt what TLS holds and handle whole frames until blocked. */
static void conn_pump(conn_t *c)
{
    ts_server_t *s = c->srv;
    ts_net_limits_t l = limits_of(s);
    size_t max_cap = TS_NET_HEADER_BYTES + l.max_frame_bytes;
    while (!c->closing && !c->busy && c->state != CONN_HANDSHAKE) {
        ts_net_frame_t f;
        size_t used = 0;
        ts_status_t st = ts_net_frame_parse(c->in, c->in_len, &l, &f, &used);
        if (st != TS_OK) {
            s->rejected++;
            send_error(c, 0, st, true, "%s",
                       st == TS_ELIMIT ? "frame larger than max_frame_bytes"
                                       : "bad frame header (unknown flags or empty frame)");
            return;
        }
        if (used) {
            handle_frame(c, &f);
            if (c->closing)
                return;
            memmove(c->in, c->in + used, c->in_len - used);
            c->in_len -= used;
            continue;
        }
        if (c->in_len == c->in_cap) {
            size_t want = c->in_cap ? c->in_cap * 2 : READ_CHUNK;
            if (c->in_len >= TS_NET_HEADER_BYTES) {
                size_t need =
                    TS_NET_HEADER_BYTES + (((size_t)c->in[0] << 24) | ((size_t)c->in[1] << 16) |
                                           ((size_t)c->in[2] << 8) | c->in[3]);
                if (want > need && need > c->in_cap)
                    want = need;
            }
            if (want > max_cap)
                want = max_cap;
            if (want <= c->in_cap ||
                s->mem_used + (want - c->in_cap) > (uint64_t)s->cfg.limits.total_memory_bytes) {
                s->rejected++;
                send_error(c, 0, TS_ELIMIT, true, "server memory limit reached");
                return;
            }
            uint8_t *nb = ts_realloc(c->in, want);
            if (!nb) {
                send_error(c, 0, TS_ENOMEM, true, "out of memory");
                return;
            }
            s->mem_used += want - c->in_cap;
            c->in = nb;
            c->in_cap = want;
        }
        size_t n = 0;
        st = ts_tls_read(&c->tls, c->in + c->in_len, c->in_cap - c->in_len, &n);
        if (st != TS_OK) {
            conn_flush(c);
            conn_close(c, st == TS_EIO ? "peer closed TLS" : "TLS error");
            return;
        }
        if (n == 0)
            break;
        c->in_len += n;
    }
    /* No partial request pending: the request timer stops. */
    if (c->in_len == 0 && BIO_ctrl_pending(c->tls.rbio) == 0)
        c->t_partial = 0;
    /* Give back a large buffer once the big frame that needed it is handled. */
    if (c->in_len == 0 && c->in_cap > READ_CHUNK) {
        s->mem_used -= c->in_cap;
        ts_free(c->in);
        c->in = NULL;
        c->in_cap = 0;
    }
    conn_flush(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    conn_t *c = (conn_t *)h;
    ts_server_t *s = c->srv;
    /* One shared buffer: the read callback consumes it before returning. */
    if (s->rbuf_busy) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    s->rbuf_busy = true;
    *buf = uv_buf_init((char *)s->rbuf, sizeof s->rbuf);
}

static void conn_on_established(conn_t *c)
{
    ts_server_t *s = c->srv;
    char fp[65];
    if (ts_tls_peer_fingerprint(&c->tls, fp)) {
        snprintf(c->ns, sizeof c->ns, "%s", fp);
        snprintf(c->ident, sizeof c->ident, "%s", fp);
    } else {
        snprintf(c->ns, sizeof c->ns, "public");
        snprintf(c->ident, sizeof c->ident, "ip-%s", c->peer);
    }
    c->state = CONN_HELLO;
    c->t_last = now_ms();
    uint32_t same = ident_count(s, c->ident); /* includes this one */
    if (same > (uint64_t)s->cfg.limits.max_connections_per_client) {
        s->rejected++;
        send_error(c, 0, TS_ELIMIT, true, "at most %lld connections per client",
                   (long long)s->cfg.limits.max_connections_per_client);
        return;
    }
    ts_log(TS_LOG_DEBUG, MOD, "event=tls_established peer=%s ns=%s cipher=%s", c->peer, c->ns,
           SSL_get_cipher_name(c->tls.ssl));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    conn_t *c = (conn_t *)stream;
    ts_server_t *s = c->srv;
    if (buf->base == (char *)s->rbuf)
        s->rbuf_busy = false;
    if (nread == 0)
        return;
    if (nread < 0) {
        conn_close(c, nread == UV_EOF ? "peer closed" : uv_strerror((int)nread));
        return;
    }
    if (c->closing)
        return;
    s->bytes_in += (uint64_t)nread;
    if (c->t_partial == 0)
        c->t_partial = now_ms();
    if (ts_tls_feed(&c->tls, buf->base, (size_t)nread) != TS_OK) {
        conn_close(c, "out of memory");
        return;
    }
    if (c->state == CONN_HANDSHAKE) {
        char err[256] = "";
        ts_status_t st = ts_tls_handshake(&c->tls, err, sizeof err);
        conn_flush(c);
        if (st == TS_EBUSY)
            return;
        if (st != TS_OK) {
            s->rejected++;
            ts_log(TS_LOG_WARN, MOD, "event=tls_failed peer=%s reason=%s", c->peer, err);
            conn_close(c, "TLS handshake failed");
            return;
        }
        conn_on_established(c);
        if (c->closing)
            return;
    }
    conn_pump(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    ts_server_t *s = server->data;
    if (status < 0) {
        ts_log(TS_LOG_WARN, MOD, "event=accept_failed error=%s", uv_strerror(status));
        return;
    }
    conn_t *c = ts_calloc(1, sizeof *c);
    if (!c)
        return;
    c->srv = s;
    c->refs = 1;
    uv_tcp_init(&s->loop, &c->tcp);
    s->live_conns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    struct sockaddr_storage ss;
    int len = sizeof ss;
    snprintf(c->peer, sizeof c->peer, "?");
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        char ip[64] = "?";
        if (ss.ss_family == AF_INET6)
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
        else
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
        snprintf(c->peer, sizeof c->peer, "%s", ip);
    }
    snprintf(c->ns, sizeof c->ns, "-");
    c->t_accept = c->t_last = now_ms();
    s->conns_total++;
    if (s->draining || s->n_conns >= (uint32_t)s->cfg.limits.max_connections) {
        s->rejected++;
        ts_log(TS_LOG_WARN, MOD, "event=reject peer=%s reason=%s", c->peer,
               s->draining ? "shutting down" : "max_connections reached");
        c->closing = true;
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    if (ts_tls_init(&c->tls, s->ssl_ctx, true, NULL) != TS_OK) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->tcp, on_closed);
        return;
    }
    c->listed = true;
    c->counted = true;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    ts_log(TS_LOG_DEBUG, MOD, "event=accept peer=%s connections=%u", c->peer, s->n_conns);
    conn_update_reading(c);
}

/* --------------------------------------------------------------- lifecycle */

static void close_cb_noop(uv_handle_t *h)
{
    (void)h;
}

static void walk_close(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, close_cb_noop);
}

/* After a drain: once nothing is left, close the remaining handles. */
static void server_maybe_finish(ts_server_t *s)
{
    if (!s->draining || s->stopped)
        return;
    if (s->n_conns || s->live_conns || s->in_flight)
        return;
    for (round_t *r = s->rounds; r; r = r->next)
        if (r->state == ROUND_RUNNING)
            return;
    s->stopped = true;
    ts_log(TS_LOG_INFO, MOD, "event=stopped connections_total=%llu",
           (unsigned long long)s->conns_total);
    uv_walk(&s->loop, walk_close, NULL);
}

static void server_drain(ts_server_t *s, const char *why)
{
    if (s->draining)
        return;
    s->draining = true;
    s->drain_deadline = now_ms() + (uint64_t)s->cfg.timeouts.shutdown_ms;
    ts_log(TS_LOG_INFO, MOD, "event=shutdown reason=%s connections=%u in_flight=%d", why,
           s->n_conns, s->in_flight);
    if (s->listening) {
        uv_close((uv_handle_t *)&s->listener, close_cb_noop);
        s->listening = false;
    }
    /* Rounds still collecting cannot complete: cancel them. */
    for (round_t *r = s->rounds; r; r = r->next)
        if (r->state == ROUND_COLLECTING)
            round_fail(s, r, TS_ECANCELED, "canceled: server shut down");
    conn_t *next;
    for (conn_t *c = s->conns; c; c = next) {
        next = c->next;
        if (c->closing)
            continue;
        if (c->busy)
            c->drain_close = true; /* closed when its work returns */
        else if (c->state == CONN_READY)
            send_error(c, 0, TS_ECANCELED, true, "server is shutting down");
        else
            conn_close(c, "server is shutting down");
    }
    server_maybe_finish(s);
}

static void on_tick(uv_timer_t *t)
{
    ts_server_t *s = t->data;
    uint64_t now = now_ms();
    const ts_srv_timeouts_cfg_t *to = &s->cfg.timeouts;
    conn_t *next;
    for (conn_t *c = s->conns; c; c = next) {
        next = c->next;
        if (c->closing) {
            /* A peer that does not read its last bytes is not waited for long. */
            if (!c->closed_handle && !uv_is_closing((uv_handle_t *)&c->tcp) &&
                (now - c->t_closing > 2000 || (s->draining && now > s->drain_deadline)))
                uv_close((uv_handle_t *)&c->tcp, on_closed);
            continue;
        }
        if (c->busy)
            continue;
        if (c->state != CONN_READY && now - c->t_accept > (uint64_t)to->handshake_ms) {
            s->rejected++;
            if (c->state == CONN_HELLO)
                send_error(c, 0, TS_ETIMEDOUT, true, "no hello within %lld ms",
                           (long long)to->handshake_ms);
            else
                conn_close(c, "handshake timeout");
        } else if (c->t_partial && now - c->t_partial > (uint64_t)to->request_ms) {
            s->rejected++;
            send_error(c, 0, TS_ETIMEDOUT, true, "request not complete within %lld ms",
                       (long long)to->request_ms);
        } else if (!c->t_partial && now - c->t_last > (uint64_t)to->idle_ms) {
            send_error(c, 0, TS_ETIMEDOUT, true, "idle for %lld ms", (long long)to->idle_ms);
        }
    }
    /* Rounds that wait too long fail; finished jobs expire after job_ms. */
    for (round_t *r = s->rounds; r; r = r->next)
        if (r->state == ROUND_COLLECTING && now - r->created_ns > (uint64_t)to->job_ms) {
            char why[160];
            snprintf(why, sizeof why, "round timed out with %zu of %u contributions", r->done,
                     r->participants);
            round_fail(s, r, TS_ETIMEDOUT, why);
        }
    job_t *jn;
    for (job_t *j = s->jobs; j; j = jn) {
        jn = j->next;
        if (j->done_ns && now - j->done_ns > (uint64_t)to->job_ms)
            job_free(s, j);
    }
    if (s->draining && now > s->drain_deadline) {
        /* Grace period over: close what is left without waiting for peers. */
        for (conn_t *c = s->conns; c; c = next) {
            next = c->next;
            if (!c->closing && !c->busy)
                conn_close(c, "shutdown deadline");
        }
    }
    server_maybe_finish(s);
}

static ts_status_t ssl_ctx_from(const ts_srv_config_t *cfg, SSL_CTX **out, char *err,
                                size_t err_size)
{
    return ts_tls_ctx_new_server(cfg->tls.cert, cfg->tls.key, cfg->tls.client_ca,
                                 cfg->tls.require_client_cert, out, err, err_size);
}

static void apply_log(const ts_srv_config_t *cfg)
{
    ts_log_level_t lvl;
    if (ts_log_level_parse(cfg->log.level, &lvl) == TS_OK)
        ts_log_set_level(lvl);
    ts_log_set_json(cfg->log.json);
}

static void server_reload(ts_server_t *s)
{
    if (!s->config_path[0]) {
        ts_log(TS_LOG_WARN, MOD, "event=reload_skipped reason=no config file");
        return;
    }
    ts_srv_config_t cfg;
    ts_srv_config_defaults(&cfg);
    char err[600];
    ts_status_t st = ts_srv_config_load(s->config_path, &cfg, err, sizeof err);
    if (st != TS_OK) {
        ts_log(TS_LOG_ERROR, MOD, "event=reload_failed keeping=old config error=%s", err);
        return;
    }
    SSL_CTX *ctx = NULL;
    st = ssl_ctx_from(&cfg, &ctx, err, sizeof err);
    if (st != TS_OK) {
        ts_log(TS_LOG_ERROR, MOD, "event=reload_failed keeping=old certificates error=%s", err);
        return;
    }
    if (strcmp(cfg.listen, s->cfg.listen) || cfg.port != s->cfg.port ||
        strcmp(cfg.keystore.dir, s->cfg.keystore.dir) || cfg.workers != s->cfg.workers ||
        strcmp(cfg.models_dir, s->cfg.models_dir) || strcmp(cfg.costs_dir, s->cfg.costs_dir))
        ts_log(TS_LOG_WARN, MOD,
               "event=reload_partial msg=listen address, port, keystore.dir, workers, "
               "models_dir and costs_dir take effect on restart");
    /* New connections use the new context; live ones keep theirs (refcounted). */
    SSL_CTX_free(s->ssl_ctx);
    s->ssl_ctx = ctx;
    snprintf(cfg.listen, sizeof cfg.listen, "%s", s->cfg.listen);
    cfg.port = s->cfg.port;
    snprintf(cfg.keystore.dir, sizeof cfg.keystore.dir, "%s", s->cfg.keystore.dir);
    cfg.workers = s->cfg.workers;
    snprintf(cfg.models_dir, sizeof cfg.models_dir, "%s", s->cfg.models_dir);
    snprintf(cfg.costs_dir, sizeof cfg.costs_dir, "%s", s->cfg.costs_dir);
    s->cfg = cfg;
    ts_keystore_set_quota(s->ks, (uint64_t)cfg.keystore.quota_bytes);
    apply_log(&cfg);
    ts_log(TS_LOG_INFO, MOD, "event=reloaded config=%s", s->config_path);
}

static void on_signal(uv_signal_t *h, int signum)
{
    ts_server_t *s = h->data;
    if (signum == SIGHUP)
        server_reload(s);
    else
        server_drain(s, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_stop_async(uv_async_t *a)
{
    server_drain(a->data, "stop requested");
}

ts_status_t ts_server_new(const ts_srv_config_t *cfg, const ts_server_opts_t *opts,
                          ts_server_t **out, char *err, size_t err_size)
{
    *out = NULL;
    ts_server_t *s = ts_calloc(1, sizeof *s);
    if (!s)
        return TS_ENOMEM;
    s->cfg = *cfg;
    if (opts)
        s->opts = *opts;
    if (opts && opts->config_path)
        snprintf(s->config_path, sizeof s->config_path, "%s", opts->config_path);
    s->opts.config_path = s->config_path;
    s->start_ns = ts_now_ns();
    apply_log(cfg);
    ts_status_t st = ssl_ctx_from(cfg, &s->ssl_ctx, err, err_size);
    if (st != TS_OK)
        goto out_free;
    st = ts_keystore_open(cfg->keystore.dir, (uint64_t)cfg->keystore.quota_bytes,
                          (uint64_t)cfg->keystore.chunk_bytes, &s->ks);
    if (st != TS_OK) {
        snprintf(err, err_size, "cannot open key store %s: %s", cfg->keystore.dir, ts_strerror(st));
        goto out_free_ctx;
    }
    st = ts_dec_registry_load(cfg->models_dir, cfg->params_dir, cfg->costs_dir,
                              (s->opts.insecure_params ? TS_DEC_LOAD_INSECURE : 0u) |
                                  (s->opts.check_only ? TS_DEC_LOAD_CHECK : 0u),
                              &s->dec, err, err_size);
    if (st != TS_OK)
        goto out_free_ks_only;
    /* The worker pool size is read by libuv when it first queues work. */
    char nw[16];
    snprintf(nw, sizeof nw, "%lld", (long long)cfg->workers);
    setenv("UV_THREADPOOL_SIZE", nw, 1);
    if (uv_loop_init(&s->loop) != 0) {
        snprintf(err, err_size, "cannot create the event loop");
        st = TS_EINTERNAL;
        goto out_free_ks;
    }
    uv_tcp_init(&s->loop, &s->listener);
    s->listener.data = s;
    struct sockaddr_storage addr;
    int r = strchr(cfg->listen, ':')
                ? uv_ip6_addr(cfg->listen, (int)cfg->port, (struct sockaddr_in6 *)&addr)
                : uv_ip4_addr(cfg->listen, (int)cfg->port, (struct sockaddr_in *)&addr);
    if (r == 0)
        r = uv_tcp_bind(&s->listener, (struct sockaddr *)&addr, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
    if (r != 0) {
        snprintf(err, err_size, "cannot listen on %s port %lld: %s", cfg->listen,
                 (long long)cfg->port, uv_strerror(r));
        st = TS_EIO;
        goto out_close_loop;
    }
    s->listening = true;
    int len = sizeof addr;
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&addr, &len);
    s->port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                               : ((struct sockaddr_in *)&addr)->sin_port);
    uv_timer_init(&s->loop, &s->tick);
    s->tick.data = s;
    uv_timer_start(&s->tick, on_tick, 200, 200);
    uv_async_init(&s->loop, &s->stop_async, on_stop_async);
    s->stop_async.data = s;
    if (s->opts.handle_signals) {
        uv_signal_init(&s->loop, &s->sig_term);
        uv_signal_init(&s->loop, &s->sig_int);
        uv_signal_init(&s->loop, &s->sig_hup);
        s->sig_term.data = s->sig_int.data = s->sig_hup.data = s;
        uv_signal_start(&s->sig_term, on_signal, SIGTERM);
        uv_signal_start(&s->sig_int, on_signal, SIGINT);
        uv_signal_start(&s->sig_hup, on_signal, SIGHUP);
        signal(SIGPIPE, SIG_IGN);
    }
    if (cfg->port_file[0]) {
        char tmp[600];
        snprintf(tmp, sizeof tmp, "%s.tmp", cfg->port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", s->port) < 0 || fclose(f) != 0 ||
            rename(tmp, cfg->port_file) != 0) {
            snprintf(err, err_size, "cannot write port_file %s", cfg->port_file);
            st = TS_EIO;
            goto out_close_loop;
        }
    }
    *out = s;
    return TS_OK;
out_close_loop:
    uv_walk(&s->loop, walk_close, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
out_free_ks:
    ts_dec_registry_free(s->dec);
out_free_ks_only:
    ts_keystore_free(s->ks);
out_free_ctx:
    SSL_CTX_free(s->ssl_ctx);
out_free:
    ts_free(s);
    return st;
}

int ts_server_port(const ts_server_t *s)
{
    return s->port;
}

ts_status_t ts_server_run(ts_server_t *s)
{
    ts_log(TS_LOG_INFO, MOD,
           "event=listening address=%s port=%d workers=%lld mtls=%s insecure_params=%s",
           s->cfg.listen, s->port, (long long)s->cfg.workers,
           s->cfg.tls.require_client_cert ? "required"
           : s->cfg.tls.client_ca[0]      ? "optional"
                                          : "off",
           s->opts.insecure_params ? "ALLOWED (test presets accepted; not for production)"
                                   : "refused");
    uv_run(&s->loop, UV_RUN_DEFAULT);
    return TS_OK;
}

void ts_server_stop(ts_server_t *s)
{
    uv_async_send(&s->stop_async);
}

void ts_server_free(ts_server_t *s)
{
    if (!s)
        return;
    if (!s->stopped) {
        s->draining = true;
        uv_walk(&s->loop, walk_close, NULL);
        uv_run(&s->loop, UV_RUN_DEFAULT);
    }
    uv_loop_close(&s->loop);
    while (s->jobs)
        job_free(s, s->jobs);
    while (s->rounds)
        round_unlink_free(s, s->rounds);
    while (s->sessions) {
        session_t *x = s->sessions;
        s->sessions = x->next;
        x->dec_busy = false;
        session_release(s, x);
    }
    ts_dec_registry_free(s->dec);
    ts_keystore_free(s->ks);
    SSL_CTX_free(s->ssl_ctx);
    ts_free(s);
}

/*
 * client/client.h — the tessera side of the wire: a blocking TLS 1.3
 * connection to tesserad (one request at a time, replies matched by id) and
 * the helpers every subcommand shares (connection options, JSON output,
 * exit codes). See docs/PROTOCOL.md.
 */
#ifndef TS_CLIENT_CLIENT_H
#define TS_CLIENT_CLIENT_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "server/net.h"

/* Exit codes of every tessera command (documented in --help). */
enum {
    TS_EXIT_OK = 0,      /* success */
    TS_EXIT_FAIL = 1,    /* the server refused or the operation failed */
    TS_EXIT_USAGE = 2,   /* bad command line */
    TS_EXIT_CONNECT = 3, /* cannot connect, TLS failure, version mismatch */
    TS_EXIT_LOCAL = 4,   /* local file or data error */
};

typedef struct ts_client_opts {
    const char *host;
    int port;
    const char *ca_file;
    const char *cert_file; /* mutual TLS (optional) */
    const char *key_file;
    const char *servername; /* name the server certificate must carry; default host */
    int timeout_ms;         /* per I/O wait */
    const char *client_name;
} ts_client_opts_t;

typedef struct ts_client {
    int fd;
    SSL_CTX *ctx;
    ts_tls_t tls;
    uint8_t *in;
    size_t in_len, in_cap;
    ts_net_limits_t limits;
    uint64_t next_rid;
    int timeout_ms;
    /* From the hello reply. */
    uint32_t version;
    char server_name[64];
    char identity[96];
    bool insecure_params;
    uint64_t key_chunk_bytes;
    uint64_t bytes_sent, bytes_received;
    char err[512]; /* reason of the last failure */
} ts_client_t;

/* Connect, handshake TLS 1.3 (server verified against ca_file), exchange hello. */
ts_status_t ts_client_connect(const ts_client_opts_t *o, ts_client_t **out, char *err,
                              size_t err_size);
/* TCP + TLS only, no hello (for tests of the hello rules). */
ts_status_t ts_client_connect_raw(const ts_client_opts_t *o, ts_client_t **out, char *err,
                                  size_t err_size);
void ts_client_close(ts_client_t *c);

/*
 * Send `req` (its request_id is assigned) and wait for the reply with the same
 * id. An error reply becomes its status (c->err holds the server's message)
 * and *reply is still set; a reply of another body than `want` is TS_EPROTO.
 */
ts_status_t ts_client_call(ts_client_t *c, Tessera__Envelope *req, Tessera__Envelope__BodyCase want,
                           Tessera__Envelope **reply);
/*
 * The two halves of a call, for several requests in flight (pipelining):
 * send `req` as a new request (its request_id assigned), and wait for the
 * reply to any of the n requests `rids` (*which: its index; replies to other
 * requests, abandoned ones, are dropped), with ts_client_call's errors.
 */
ts_status_t ts_client_send_request(ts_client_t *c, Tessera__Envelope *req);
ts_status_t ts_client_recv_reply(ts_client_t *c, const uint64_t *rids, size_t n,
                                 Tessera__Envelope__BodyCase want, Tessera__Envelope **reply,
                                 size_t *which);
ts_status_t ts_client_send(ts_client_t *c, Tessera__Envelope *req);
ts_status_t ts_client_recv(ts_client_t *c, Tessera__Envelope **reply);
/* Send raw bytes inside TLS (tests send hostile frames with it). */
ts_status_t ts_client_send_bytes(ts_client_t *c, const void *data, size_t n);

/* -------------------------------------------------- command-line helpers */

typedef struct ts_cli_conn {
    char host[256];
    int port;
    const char *ca, *cert, *key, *servername;
    int timeout_ms;
    bool json;
} ts_cli_conn_t;

/* Long options every networked command accepts (ids 0x100..0x10f, 'j', 'h', 's'). */
#define TS_CLI_CONN_LONGOPTS                                                                       \
    {"server", required_argument, NULL, 's'}, {"ca", required_argument, NULL, 0x101},              \
        {"cert", required_argument, NULL, 0x102}, {"key", required_argument, NULL, 0x103},         \
        {"servername", required_argument, NULL, 0x104},                                            \
        {"timeout", required_argument, NULL, 0x105}, {"json", no_argument, NULL, 'j'},             \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }
#define TS_CLI_CONN_SHORTOPTS "s:jh"
extern const char ts_cli_conn_help[];
extern const char ts_cli_exit_help[];

/* Defaults from the environment (TESSERA_SERVER, TESSERA_CA, TESSERA_CERT, TESSERA_KEY). */
void ts_cli_conn_init(ts_cli_conn_t *cc);
/* Handle one of the shared options: 1 handled, 0 not ours, -1 bad value (message printed). */
int ts_cli_conn_opt(ts_cli_conn_t *cc, int ch, const char *arg, const char *prog);
/* Connect as configured; on failure print why and return the exit code (else TS_EXIT_OK). */
int ts_cli_connect(const ts_cli_conn_t *cc, const char *prog, ts_client_t **out);
/* Exit code for a failed call (prints the reason). */
int ts_cli_fail(const char *prog, ts_client_t *c, ts_status_t st, bool json);

/* JSON helpers: a quoted, escaped string. */
void ts_cli_json_str(FILE *f, const char *s);

#endif

/* ------------------------------------------------------------ key upload */

/* chunks in flight during a key upload: at 4 MiB chunks and a 50 ms round
 * trip, one at a time caps an upload at ~80 MB/s */
#define TS_CLIENT_UPLOAD_WINDOW 8

typedef struct ts_upload_report {
    uint8_t sha256[32];
    uint64_t size;
    uint32_t chunk_count;
    uint32_t chunks_sent;    /* this run */
    uint32_t chunks_skipped; /* already on the server */
    bool complete;
} ts_upload_report_t;

/*
 * Upload a key blob in the server's chunk size, skipping chunks the server
 * already holds (resumable), with up to TS_CLIENT_UPLOAD_WINDOW chunks in
 * flight (the link's rate rather than a round trip per chunk). max_chunks >
 * 0 stops after that many chunks (tests interrupt uploads with it).
 * progress: draw a bar on stderr.
 */
ts_status_t ts_client_key_upload(ts_client_t *c, const uint8_t *data, size_t size, const char *kind,
                                 const char *param_id, uint32_t max_chunks, bool progress,
                                 ts_upload_report_t *rep);
/* Ask the server what it holds of key `sha`. *known false when never seen. */
ts_status_t ts_client_key_query(ts_client_t *c, const uint8_t sha[32], ts_upload_report_t *rep,
                                bool *known);
/* Map a whole file read-only ( *size 0 for empty). Unmap with ts_file_unmap. */
ts_status_t ts_file_map(const char *path, const uint8_t **data, size_t *size, char *err,
                        size_t err_size);
void ts_file_unmap(const uint8_t *data, size_t size);

/* ------------------------------------------------- CKKS on the client side */

#include "core/ckks/ckks.h"

/* The key material of `tessera keygen`: a secret seed and the preset it is for. */
typedef struct ts_cli_keys {
    char params_name[64];
    ts_ckks_params_t *params;
    uint8_t params_id[32];
    ts_ckks_secret_key_t *sk;
    ts_ckks_public_key_t *pk;
} ts_cli_keys_t;

/* Write DIR/secret.key (mode 0600, the 32-byte seed) and DIR/public.key. */
ts_status_t ts_cli_keygen(const char *dir, const char *params_dir, const char *preset,
                          bool allow_insecure, char *pk_sha_hex, char *err, size_t err_size);
/* Regenerate the keys from DIR/secret.key. */
ts_status_t ts_cli_keys_load(const char *dir, const char *params_dir, bool allow_insecure,
                             ts_cli_keys_t *keys, char *err, size_t err_size);
void ts_cli_keys_clear(ts_cli_keys_t *keys);

/* `tessera bench aggregate` (client/cmd_bench.c); argv[0] is ignored. Returns an exit code. */
int ts_bench_aggregate(int argc, char **argv);
/* `tessera bench ckks` / build/bench/bench_ckks (client/bench_ckks.c) and `tessera bench boot` /
 * build/bench/bench_boot (client/bench_boot.c); argv[0] is ignored. Return an exit code. */
int ts_bench_ckks(int argc, char **argv);
int ts_bench_boot(int argc, char **argv);
/* `tessera bench decode` (client/bench_decode.c). */
int ts_bench_decode(int argc, char **argv);
/* The CPU model from /proc/cpuinfo ("unknown" when absent), JSON-safe. */
void ts_bench_cpu_model(char *out, size_t cap);

/* Vectors: csv (numbers separated by commas/whitespace), json (array), f32 (raw LE). */
ts_status_t ts_cli_vector_read(const char *path, const char *format, double **values, size_t *count,
                               char *err, size_t err_size);
ts_status_t ts_cli_vector_write(const char *path, const char *format, const double *values,
                                size_t count, char *err, size_t err_size);

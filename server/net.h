/*
 * server/net.h — the wire layer shared by tesserad and tessera: frames,
 * compressed payloads, protobuf envelopes and the TLS 1.3 engine.
 *
 * Frame (docs/PROTOCOL.md): a 5-byte header — payload length as a 32-bit
 * big-endian integer, then one flags byte — followed by the payload. The
 * payload is one serialized tessera.Envelope, zstd-compressed when flag
 * TS_NET_FLAG_ZSTD is set. Everything here treats its input as hostile: a
 * length over the limit, an unknown flag, a zstd frame without a declared
 * content size, a window over the limit or a declared size over the cap are
 * refused before any allocation proportional to them.
 *
 * The TLS engine is OpenSSL through a pair of memory BIOs: the caller moves
 * ciphertext between the engine and its transport (a libuv stream in the
 * daemon, a blocking socket in the CLI, another engine in the tests). Only
 * TLS 1.3 is negotiated.
 */
#ifndef TS_SERVER_NET_H
#define TS_SERVER_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/base/base.h"
#include "proto/tessera.pb-c.h"

#define TS_NET_PROTOCOL_VERSION 1
#define TS_NET_HEADER_BYTES     5
#define TS_NET_FLAG_ZSTD        0x01u
#define TS_NET_FLAGS_KNOWN      TS_NET_FLAG_ZSTD
/* zstd window accepted from a peer: 2^23 = 8 MiB (the decoder's memory). */
#define TS_NET_ZSTD_WINDOW_LOG_MAX 23

/* Size limits of the frame codec. */
typedef struct ts_net_limits {
    size_t max_frame_bytes;        /* payload bytes on the wire */
    size_t max_decompressed_bytes; /* payload bytes after zstd */
} ts_net_limits_t;

/* A parsed frame header plus a view of its payload inside the caller's buffer. */
typedef struct ts_net_frame {
    uint8_t flags;
    const uint8_t *payload;
    size_t payload_bytes;
} ts_net_frame_t;

/*
 * Parse one frame at the start of buf[0..len).
 * [out] frame: valid when *used > 0.  [out] used: bytes the frame occupies,
 * 0 when more bytes are needed.
 * Errors: TS_ELIMIT (declared length over max_frame_bytes, known from the
 * header alone), TS_EPROTO (unknown flag bits).
 */
ts_status_t ts_net_frame_parse(const uint8_t *buf, size_t len, const ts_net_limits_t *limits,
                               ts_net_frame_t *frame, size_t *used);

/* Write a frame header for `payload_bytes` and `flags` into hdr. */
void ts_net_frame_header(uint8_t hdr[TS_NET_HEADER_BYTES], size_t payload_bytes, uint8_t flags);

/*
 * Turn a frame payload into message bytes: a copy, or the zstd decompression
 * of it under the limits. [out] *out is ts_malloc'ed (caller ts_free's).
 * Errors: TS_ELIMIT (declared or actual size over the cap, window too large),
 * TS_EFORMAT (not one well-formed zstd frame, unknown content size), TS_ENOMEM.
 */
ts_status_t ts_net_payload_decode(const ts_net_frame_t *frame, const ts_net_limits_t *limits,
                                  uint8_t **out, size_t *out_bytes);

/*
 * Unpack and structurally validate an envelope (known body, sizes of fixed
 * fields such as SHA-256 hashes). [out] *env: free with ts_net_envelope_free.
 * Errors: TS_EFORMAT (not a valid envelope), TS_EPROTO (no body or a field of
 * the wrong shape).
 */
ts_status_t ts_net_envelope_unpack(const uint8_t *data, size_t size, Tessera__Envelope **env);
void ts_net_envelope_free(Tessera__Envelope *env);

/*
 * Serialize an envelope into a complete frame (header + payload). Payloads of
 * at least `compress_min_bytes` are zstd-compressed at `level` when that makes
 * them smaller (compress_min_bytes = 0 disables compression). The frame must
 * fit the limits, else TS_ELIMIT. [out] *frame is ts_malloc'ed.
 */
ts_status_t ts_net_envelope_pack(const Tessera__Envelope *env, const ts_net_limits_t *limits,
                                 size_t compress_min_bytes, int level, uint8_t **frame,
                                 size_t *frame_bytes);

/* Parse + decode + unpack in one call (used by the fuzz target and tests). */
ts_status_t ts_net_frame_decode_all(const uint8_t *buf, size_t len, const ts_net_limits_t *limits,
                                    Tessera__Envelope **env, size_t *used);

/* Map a status to the wire error code, and back. */
Tessera__ErrorCode ts_net_error_code(ts_status_t st);
ts_status_t ts_net_error_status(Tessera__ErrorCode code);
const char *ts_net_body_name(Tessera__Envelope__BodyCase c);

/* Lowercase hex of n bytes into out (2n+1 bytes). */
void ts_net_hex(const uint8_t *bytes, size_t n, char *out);
/* Parse 64 hex digits into 32 bytes; false when malformed. */
bool ts_net_unhex32(const char *hex, uint8_t out[32]);

/* ------------------------------------------------------------------ TLS */

/*
 * Server context: certificate chain and key (PEM files). With client_ca set,
 * clients are asked for a certificate signed by it; require_client_cert makes
 * that certificate mandatory (mutual TLS). err receives a readable reason.
 */
ts_status_t ts_tls_ctx_new_server(const char *cert_file, const char *key_file,
                                  const char *client_ca_file, bool require_client_cert,
                                  SSL_CTX **out, char *err, size_t err_size);
/*
 * Client context: the server certificate must chain to ca_file. cert/key
 * (both or neither) present a client certificate for mutual TLS.
 */
ts_status_t ts_tls_ctx_new_client(const char *ca_file, const char *cert_file, const char *key_file,
                                  SSL_CTX **out, char *err, size_t err_size);

typedef struct ts_tls {
    SSL *ssl;
    BIO *rbio; /* network -> TLS */
    BIO *wbio; /* TLS -> network */
    bool established;
    bool closed; /* close_notify received or fatal error */
} ts_tls_t;

/* host: the name the server certificate must carry (client side), or NULL. */
ts_status_t ts_tls_init(ts_tls_t *t, SSL_CTX *ctx, bool is_server, const char *host);
void ts_tls_clear(ts_tls_t *t);
/* Give ciphertext received from the peer to the engine. */
ts_status_t ts_tls_feed(ts_tls_t *t, const void *data, size_t n);
/*
 * Advance the handshake. TS_OK when established (sets t->established), TS_EBUSY
 * when it needs more input, TS_ECRYPTO when it failed (reason in err).
 */
ts_status_t ts_tls_handshake(ts_tls_t *t, char *err, size_t err_size);
/* Decrypted bytes; *n = 0 when none are available yet. TS_EIO when the peer closed. */
ts_status_t ts_tls_read(ts_tls_t *t, void *buf, size_t cap, size_t *n);
/* Encrypt bytes (they become pending output). */
ts_status_t ts_tls_write(ts_tls_t *t, const void *data, size_t n);
/* Send close_notify (pending output). */
void ts_tls_shutdown(ts_tls_t *t);
/* Ciphertext waiting to be sent to the peer. */
size_t ts_tls_pending(const ts_tls_t *t);
size_t ts_tls_take(ts_tls_t *t, void *buf, size_t cap);
/* SHA-256 of the peer certificate (DER) as 64 hex digits; false without one. */
bool ts_tls_peer_fingerprint(const ts_tls_t *t, char hex[65]);
/* Collect the OpenSSL error queue into a sentence (and clear it). */
void ts_tls_errors(char *buf, size_t size);

#endif

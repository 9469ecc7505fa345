/*
 * core/serial — the canonical byte encoding of tessera objects.
 *
 * Every serialized object is an envelope:
 *
 *   offset size  field
 *        0    4  magic "TESS"
 *        4    2  format version (TS_SERIAL_VERSION), little endian
 *        6    2  object type (ts_serial_type_t)
 *        8    4  flags (TS_SERIAL_ZSTD: the payload is one zstd frame)
 *       12   32  parameter id (SHA-256 of the canonical parameter encoding)
 *       44    8  payload bytes as stored (after compression)
 *       52    8  raw payload bytes (before compression)
 *       60   32  SHA-256 of the raw payload
 *       92       payload
 *
 * Payloads are written with a ts_writer_t (little-endian integers, IEEE-754
 * doubles, residues bit-packed at the exact width of their modulus with no
 * byte padding between values) and read back with a ts_reader_t, which checks
 * every length against what is left before anything is allocated and every
 * residue against its modulus. Opening an envelope checks magic, version,
 * type, lengths, the decompressed-size cap, the zstd window limit and the
 * digest, so truncated, oversized and bit-flipped inputs are refused with
 * TS_EFORMAT (or TS_ELIMIT for caps) and never crash.
 *
 * Writers and readers carry a sticky error: after the first failure every
 * call is a no-op and the error is reported at the end.
 */
#ifndef TS_SERIAL_H
#define TS_SERIAL_H

#include "core/base/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_SERIAL_VERSION      1
#define TS_SERIAL_HEADER_BYTES 92
#define TS_SERIAL_ZSTD         0x1u
#define TS_SHA256_BYTES        32

/* Object types; values are part of the format and never reused. */
typedef enum {
    TS_OBJ_ANY = 0, /* for ts_serial_open: accept any type */
    TS_OBJ_CKKS_PARAMS = 1,
    TS_OBJ_CKKS_PLAINTEXT = 2,
    TS_OBJ_CKKS_CIPHERTEXT = 3,
    TS_OBJ_SECRET_KEY = 4,
    TS_OBJ_PUBLIC_KEY = 5,
    TS_OBJ_RELIN_KEY = 6,
    TS_OBJ_GALOIS_KEYS = 7,
    TS_OBJ_TFHE_PARAMS = 8,
    TS_OBJ_LWE_CIPHERTEXT = 9,
    TS_OBJ_TFHE_BOOTSTRAP_KEY = 10,
    TS_OBJ_TFHE_KEYSWITCH_KEY = 11,
    TS_OBJ_RING_SWITCH_KEY = 12,
    TS_OBJ_BOOTSTRAP_KEYS = 13,
    TS_OBJ_TFHE_SECRET_KEY = 14,
    TS_OBJ_SCHED_PLAN = 32, /* core/sched: a plan with its cost table (param id: graph digest) */
    TS_OBJ_USER_MIN = 1000, /* types >= this are free for tests and tools */
} ts_serial_type_t;

/* SHA-256 of a byte string (OpenSSL). */
ts_status_t ts_sha256(const void *data, size_t size, uint8_t out[TS_SHA256_BYTES]);
/* SHA-256 of the first size bytes of an open file (pread, 1 MiB at a time):
 * TS_EIO when it holds fewer. */
ts_status_t ts_sha256_fd(int fd, uint64_t size, uint8_t out[TS_SHA256_BYTES]);
/* Lower-case hex of a digest into out (65 bytes). */
void ts_sha256_hex(const uint8_t digest[TS_SHA256_BYTES], char out[2 * TS_SHA256_BYTES + 1]);

/* Bits needed for values in [0, modulus): ceil(log2(modulus)); 0 for modulus <= 1. */
unsigned ts_serial_width(uint64_t modulus);
/* Bytes taken by n values packed at `width` bits: ceil(n * width / 8); false on overflow. */
bool ts_serial_packed_bytes(size_t n, unsigned width, size_t *out);

/* ---------------------------------------------------------------- writer */

typedef struct ts_writer {
    uint8_t *buf; /* owned; ts_malloc */
    size_t len, cap;
    ts_status_t err; /* sticky */
} ts_writer_t;

void ts_writer_init(ts_writer_t *w);
/* Frees the buffer (wiped: payloads may hold secret keys). */
void ts_writer_clear(ts_writer_t *w);
void ts_put_u8(ts_writer_t *w, uint8_t v);
void ts_put_u16(ts_writer_t *w, uint16_t v);
void ts_put_u32(ts_writer_t *w, uint32_t v);
void ts_put_u64(ts_writer_t *w, uint64_t v);
void ts_put_f64(ts_writer_t *w, double v);
void ts_put_bytes(ts_writer_t *w, const void *data, size_t size);
/* n values, each < 2^width (1 <= width <= 64), packed LSB first. */
void ts_put_packed(ts_writer_t *w, const uint64_t *v, size_t n, unsigned width);

/* ---------------------------------------------------------------- reader */

typedef struct ts_reader {
    const uint8_t *p; /* borrowed */
    size_t len, pos;
    ts_status_t err; /* sticky */
} ts_reader_t;

void ts_reader_init(ts_reader_t *r, const void *data, size_t size);
uint8_t ts_get_u8(ts_reader_t *r);
uint16_t ts_get_u16(ts_reader_t *r);
uint32_t ts_get_u32(ts_reader_t *r);
uint64_t ts_get_u64(ts_reader_t *r);
/* Refuses NaN and infinities (TS_EFORMAT). */
double ts_get_f64(ts_reader_t *r);
void ts_get_bytes(ts_reader_t *r, void *out, size_t size);
/* A count field: TS_EFORMAT when it exceeds `max`. */
uint64_t ts_get_count(ts_reader_t *r, uint64_t max);
/*
 * n values packed at `width` bits; each must be < modulus (TS_EFORMAT
 * otherwise). The byte length is checked against what is left first.
 */
void ts_get_packed(ts_reader_t *r, uint64_t *out, size_t n, unsigned width, uint64_t modulus);
size_t ts_reader_left(const ts_reader_t *r);
/* TS_OK when no error occurred and every byte was consumed (TS_EFORMAT otherwise). */
ts_status_t ts_reader_finish(const ts_reader_t *r);

/* -------------------------------------------------------------- envelope */

typedef struct ts_serial_header {
    uint16_t version;
    uint16_t type;
    uint32_t flags;
    uint8_t param_id[TS_SHA256_BYTES];
    uint64_t payload_bytes;
    uint64_t raw_bytes;
    uint8_t digest[TS_SHA256_BYTES];
} ts_serial_header_t;

typedef struct ts_serial_limits {
    uint64_t max_raw_bytes; /* cap on the (decompressed) payload; 0 = 1 GiB */
    int max_window_log;     /* zstd window limit (log2 bytes); 0 = 27 (128 MiB) */
} ts_serial_limits_t;

/*
 * Wrap the payload in `w` into an envelope. zstd_level 0 stores it raw;
 * 1..19 compresses (kept raw when compression does not help).
 * [out] *out is ts_malloc'd (free with ts_free), *out_size its length.
 */
ts_status_t ts_serial_seal(const ts_writer_t *w, uint16_t type,
                           const uint8_t param_id[TS_SHA256_BYTES], int zstd_level, uint8_t **out,
                           size_t *out_size);
/* Parse and check only the header (no digest check): for routing and size checks. */
ts_status_t ts_serial_peek(const void *data, size_t size, ts_serial_header_t *hdr);
/*
 * Check and open an envelope. want_type TS_OBJ_ANY accepts any type;
 * want_param NULL accepts any parameter id (else TS_EMISMATCH when different).
 * [out] *payload is ts_malloc'd raw payload (free with ts_free_secret when it
 * may hold secrets), *payload_size its length.
 */
ts_status_t ts_serial_open(const void *data, size_t size, uint16_t want_type,
                           const uint8_t *want_param, const ts_serial_limits_t *limits,
                           ts_serial_header_t *hdr, uint8_t **payload, size_t *payload_size);

#ifdef __cplusplus
}
#endif

#endif /* TS_SERIAL_H */

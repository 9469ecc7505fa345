/*
 * Frames, zstd payloads and envelopes (server/net.h). Input is hostile.
 */
#include <stdio.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader for the window size */
#include <zstd.h>
#include <zstd_errors.h>

#include "server/net.h"

void ts_net_frame_header(uint8_t hdr[TS_NET_HEADER_BYTES], size_t payload_bytes, uint8_t flags)
{
    hdr[0] = (uint8_t)(payload_bytes >> 24);
    hdr[1] = (uint8_t)(payload_bytes >> 16);
    hdr[2] = (uint8_t)(payload_bytes >> 8);
    hdr[3] = (uint8_t)payload_bytes;
    hdr[4] = flags;
}

ts_status_t ts_net_frame_parse(const uint8_t *buf, size_t len, const ts_net_limits_t *limits,
                               ts_net_frame_t *frame, size_t *used)
{
    *used = 0;
    if (len < TS_NET_HEADER_BYTES)
        return TS_OK;
    size_t n = ((size_t)buf[0] << 24) | ((size_t)buf[1] << 16) | ((size_t)buf[2] << 8) | buf[3];
    uint8_t flags = buf[4];
    if (n > limits->max_frame_bytes)
        return TS_ELIMIT;
    if (flags & ~TS_NET_FLAGS_KNOWN)
        return TS_EPROTO;
    if (n == 0)
        return TS_EPROTO; /* an empty envelope has no body: never valid */
    if (len - TS_NET_HEADER_BYTES < n)
        return TS_OK;
    frame->flags = flags;
    frame->payload = buf + TS_NET_HEADER_BYTES;
    frame->payload_bytes = n;
    *used = TS_NET_HEADER_BYTES + n;
    return TS_OK;
}

/* Decompress one zstd frame whose header declares its size, within the limits. */
static ts_status_t zstd_decode(const uint8_t *src, size_t n, const ts_net_limits_t *limits,
                               uint8_t **out, size_t *out_bytes)
{
    ZSTD_frameHeader fh;
    size_t r = ZSTD_getFrameHeader(&fh, src, n);
    if (r != 0) /* error, or the header itself is incomplete */
        return TS_EFORMAT;
    if (fh.frameType != ZSTD_frame)
        return TS_EFORMAT;
    if (fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ||
        fh.frameContentSize == ZSTD_CONTENTSIZE_ERROR)
        return TS_EFORMAT;
    if (fh.frameContentSize > limits->max_decompressed_bytes)
        return TS_ELIMIT;
    if (fh.windowSize > ((unsigned long long)1 << TS_NET_ZSTD_WINDOW_LOG_MAX))
        return TS_ELIMIT;
    /* Exactly one frame, no trailing bytes. */
    size_t fsize = ZSTD_findFrameCompressedSize(src, n);
    if (ZSTD_isError(fsize) || fsize != n)
        return TS_EFORMAT;
    size_t want = (size_t)fh.frameContentSize;
    if (want == 0)
        return TS_EFORMAT;
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        return TS_ENOMEM;
    ts_status_t st = TS_OK;
    uint8_t *buf = NULL;
    if (ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, TS_NET_ZSTD_WINDOW_LOG_MAX))) {
        st = TS_EINTERNAL;
        goto out_free_dctx;
    }
    buf = ts_malloc(want);
    if (!buf) {
        st = TS_ENOMEM;
        goto out_free_dctx;
    }
    r = ZSTD_decompressDCtx(d, buf, want, src, n);
    if (ZSTD_isError(r)) {
        st = ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge ? TS_ELIMIT
                                                                              : TS_EFORMAT;
        goto out_free_buf;
    }
    if (r != want) {
        st = TS_EFORMAT;
        goto out_free_buf;
    }
    *out = buf;
    *out_bytes = want;
    ZSTD_freeDCtx(d);
    return TS_OK;
out_free_buf:
    ts_free(buf);
out_free_dctx:
    ZSTD_freeDCtx(d);
    return st;
}

ts_status_t ts_net_payload_decode(const ts_net_frame_t *frame, const ts_net_limits_t *limits,
                                  uint8_t **out, size_t *out_bytes)
{
    *out = NULL;
    *out_bytes = 0;
    if (frame->payload_bytes == 0)
        return TS_EPROTO;
    if (frame->flags & TS_NET_FLAG_ZSTD)
        return zstd_decode(frame->payload, frame->payload_bytes, limits, out, out_bytes);
    if (frame->payload_bytes > limits->max_decompressed_bytes)
        return TS_ELIMIT;
    uint8_t *buf = ts_malloc(frame->payload_bytes);
    if (!buf)
        return TS_ENOMEM;
    memcpy(buf, frame->payload, frame->payload_bytes);
    *out = buf;
    *out_bytes = frame->payload_bytes;
    return TS_OK;
}

static bool hash_ok(ProtobufCBinaryData h)
{
    return h.len == 32;
}

/* Shape checks that do not depend on server state. */
static ts_status_t envelope_check(const Tessera__Envelope *e)
{
    switch (e->body_case) {
    case TESSERA__ENVELOPE__BODY_KEY_UPLOAD_BEGIN:
        return hash_ok(e->key_upload_begin->sha256) ? TS_OK : TS_EPROTO;
    case TESSERA__ENVELOPE__BODY_KEY_QUERY:
        return hash_ok(e->key_query->sha256) ? TS_OK : TS_EPROTO;
    case TESSERA__ENVELOPE__BODY_KEY_CHUNK:
        return hash_ok(e->key_chunk->sha256) ? TS_OK : TS_EPROTO;
    case TESSERA__ENVELOPE__BODY_KEY_STATUS:
        return hash_ok(e->key_status->sha256) ? TS_OK : TS_EPROTO;
    case TESSERA__ENVELOPE__BODY_SESSION_OPEN:
        for (size_t i = 0; i < e->session_open->n_key_sha256; i++)
            if (!hash_ok(e->session_open->key_sha256[i]))
                return TS_EPROTO;
        return TS_OK;
    case TESSERA__ENVELOPE__BODY_JOB_SUBMIT:
        if (e->job_submit->work_case == TESSERA__JOB_SUBMIT__WORK__NOT_SET)
            return TS_EPROTO;
        return TS_OK;
    case TESSERA__ENVELOPE__BODY__NOT_SET:
        return TS_EPROTO;
    default:
        /* protobuf-c leaves unknown oneof members NOT_SET, so any other case is known. */
        return TS_OK;
    }
}

ts_status_t ts_net_envelope_unpack(const uint8_t *data, size_t size, Tessera__Envelope **env)
{
    *env = NULL;
    Tessera__Envelope *e = tessera__envelope__unpack(NULL, size, data);
    if (!e)
        return TS_EFORMAT;
    ts_status_t st = envelope_check(e);
    if (st != TS_OK) {
        tessera__envelope__free_unpacked(e, NULL);
        return st;
    }
    *env = e;
    return TS_OK;
}

void ts_net_envelope_free(Tessera__Envelope *env)
{
    if (env)
        tessera__envelope__free_unpacked(env, NULL);
}

ts_status_t ts_net_envelope_pack(const Tessera__Envelope *env, const ts_net_limits_t *limits,
                                 size_t compress_min_bytes, int level, uint8_t **frame,
                                 size_t *frame_bytes)
{
    *frame = NULL;
    *frame_bytes = 0;
    size_t raw_n = tessera__envelope__get_packed_size(env);
    if (raw_n == 0 || raw_n > limits->max_decompressed_bytes)
        return TS_ELIMIT;
    size_t cap = TS_NET_HEADER_BYTES + raw_n;
    uint8_t *raw = ts_malloc(cap);
    if (!raw)
        return TS_ENOMEM;
    tessera__envelope__pack(env, raw + TS_NET_HEADER_BYTES);
    if (compress_min_bytes && raw_n >= compress_min_bytes) {
        size_t bound = ZSTD_compressBound(raw_n);
        uint8_t *z = ts_malloc(TS_NET_HEADER_BYTES + bound);
        if (!z) {
            ts_free(raw);
            return TS_ENOMEM;
        }
        ZSTD_CCtx *c = ZSTD_createCCtx();
        size_t zn = 0;
        if (c) {
            ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
            ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 20);
            ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
            zn =
                ZSTD_compress2(c, z + TS_NET_HEADER_BYTES, bound, raw + TS_NET_HEADER_BYTES, raw_n);
            ZSTD_freeCCtx(c);
        }
        if (c && !ZSTD_isError(zn) && zn < raw_n && zn <= limits->max_frame_bytes) {
            ts_free(raw);
            ts_net_frame_header(z, zn, TS_NET_FLAG_ZSTD);
            *frame = z;
            *frame_bytes = TS_NET_HEADER_BYTES + zn;
            return TS_OK;
        }
        ts_free(z);
    }
    if (raw_n > limits->max_frame_bytes) {
        ts_free(raw);
        return TS_ELIMIT;
    }
    ts_net_frame_header(raw, raw_n, 0);
    *frame = raw;
    *frame_bytes = cap;
    return TS_OK;
}

ts_status_t ts_net_frame_decode_all(const uint8_t *buf, size_t len, const ts_net_limits_t *limits,
                                    Tessera__Envelope **env, size_t *used)
{
    *env = NULL;
    ts_net_frame_t f;
    ts_status_t st = ts_net_frame_parse(buf, len, limits, &f, used);
    if (st != TS_OK)
        return st;
    if (*used == 0)
        return TS_OK;
    uint8_t *msg = NULL;
    size_t msg_n = 0;
    st = ts_net_payload_decode(&f, limits, &msg, &msg_n);
    if (st != TS_OK)
        return st;
    st = ts_net_envelope_unpack(msg, msg_n, env);
    ts_free(msg);
    return st;
}

Tessera__ErrorCode ts_net_error_code(ts_status_t st)
{
    switch (st) {
    case TS_EPROTO:
        return TESSERA__ERROR_CODE__ERROR_PROTOCOL;
    case TS_EFORMAT:
        return TESSERA__ERROR_CODE__ERROR_MALFORMED;
    case TS_ELIMIT:
    case TS_ENOMEM:
        return TESSERA__ERROR_CODE__ERROR_LIMIT;
    case TS_EINVAL:
    case TS_ERANGE:
    case TS_ELEVEL:
    case TS_ESCALE:
        return TESSERA__ERROR_CODE__ERROR_INVALID;
    case TS_ENOENT:
    case TS_ENOKEY:
        return TESSERA__ERROR_CODE__ERROR_NOT_FOUND;
    case TS_EPARAMS:
        return TESSERA__ERROR_CODE__ERROR_PARAMS;
    case TS_ESECURITY:
        return TESSERA__ERROR_CODE__ERROR_SECURITY;
    case TS_EBUSY:
        return TESSERA__ERROR_CODE__ERROR_BUSY;
    case TS_ETIMEDOUT:
        return TESSERA__ERROR_CODE__ERROR_TIMEOUT;
    case TS_ECANCELED:
        return TESSERA__ERROR_CODE__ERROR_SHUTTING_DOWN;
    case TS_ENOTSUP:
    case TS_ENOIMPL:
        return TESSERA__ERROR_CODE__ERROR_UNSUPPORTED;
    case TS_EMISMATCH:
        return TESSERA__ERROR_CODE__ERROR_MISMATCH;
    default:
        return TESSERA__ERROR_CODE__ERROR_INTERNAL;
    }
}

ts_status_t ts_net_error_status(Tessera__ErrorCode code)
{
    switch (code) {
    case TESSERA__ERROR_CODE__ERROR_PROTOCOL:
    case TESSERA__ERROR_CODE__ERROR_VERSION:
        return TS_EPROTO;
    case TESSERA__ERROR_CODE__ERROR_LIMIT:
        return TS_ELIMIT;
    case TESSERA__ERROR_CODE__ERROR_INVALID:
        return TS_EINVAL;
    case TESSERA__ERROR_CODE__ERROR_NOT_FOUND:
        return TS_ENOENT;
    case TESSERA__ERROR_CODE__ERROR_PARAMS:
        return TS_EPARAMS;
    case TESSERA__ERROR_CODE__ERROR_SECURITY:
    case TESSERA__ERROR_CODE__ERROR_UNAUTHORIZED:
        return TS_ESECURITY;
    case TESSERA__ERROR_CODE__ERROR_BUSY:
        return TS_EBUSY;
    case TESSERA__ERROR_CODE__ERROR_TIMEOUT:
        return TS_ETIMEDOUT;
    case TESSERA__ERROR_CODE__ERROR_SHUTTING_DOWN:
        return TS_ECANCELED;
    case TESSERA__ERROR_CODE__ERROR_UNSUPPORTED:
        return TS_ENOTSUP;
    case TESSERA__ERROR_CODE__ERROR_MISMATCH:
        return TS_EMISMATCH;
    case TESSERA__ERROR_CODE__ERROR_MALFORMED:
        return TS_EFORMAT;
    default:
        return TS_EINTERNAL;
    }
}

const char *ts_net_body_name(Tessera__Envelope__BodyCase c)
{
    switch (c) {
    case TESSERA__ENVELOPE__BODY_ERROR:
        return "error";
    case TESSERA__ENVELOPE__BODY_HELLO:
        return "hello";
    case TESSERA__ENVELOPE__BODY_HELLO_REPLY:
        return "hello_reply";
    case TESSERA__ENVELOPE__BODY_PING:
        return "ping";
    case TESSERA__ENVELOPE__BODY_PONG:
        return "pong";
    case TESSERA__ENVELOPE__BODY_KEY_UPLOAD_BEGIN:
        return "key_upload_begin";
    case TESSERA__ENVELOPE__BODY_KEY_QUERY:
        return "key_query";
    case TESSERA__ENVELOPE__BODY_KEY_STATUS:
        return "key_status";
    case TESSERA__ENVELOPE__BODY_KEY_CHUNK:
        return "key_chunk";
    case TESSERA__ENVELOPE__BODY_KEY_CHUNK_ACK:
        return "key_chunk_ack";
    case TESSERA__ENVELOPE__BODY_SESSION_OPEN:
        return "session_open";
    case TESSERA__ENVELOPE__BODY_SESSION_OPENED:
        return "session_opened";
    case TESSERA__ENVELOPE__BODY_SESSION_CLOSE:
        return "session_close";
    case TESSERA__ENVELOPE__BODY_SESSION_CLOSED:
        return "session_closed";
    case TESSERA__ENVELOPE__BODY_JOB_SUBMIT:
        return "job_submit";
    case TESSERA__ENVELOPE__BODY_JOB_ACCEPTED:
        return "job_accepted";
    case TESSERA__ENVELOPE__BODY_JOB_STATUS_REQUEST:
        return "job_status_request";
    case TESSERA__ENVELOPE__BODY_JOB_STATUS:
        return "job_status";
    case TESSERA__ENVELOPE__BODY_JOB_RESULT_REQUEST:
        return "job_result_request";
    case TESSERA__ENVELOPE__BODY_JOB_RESULT:
        return "job_result";
    case TESSERA__ENVELOPE__BODY_STATS_REQUEST:
        return "stats_request";
    case TESSERA__ENVELOPE__BODY_STATS_REPLY:
        return "stats_reply";
    case TESSERA__ENVELOPE__BODY_MODEL_INFO_REQUEST:
        return "model_info_request";
    case TESSERA__ENVELOPE__BODY_MODEL_INFO:
        return "model_info";
    case TESSERA__ENVELOPE__BODY_DECODE_STEP:
        return "decode_step";
    case TESSERA__ENVELOPE__BODY_DECODE_RESULT:
        return "decode_result";
    case TESSERA__ENVELOPE__BODY_DRAFT_TEXT_REQUEST:
        return "draft_text_request";
    case TESSERA__ENVELOPE__BODY_DRAFT_TEXT:
        return "draft_text";
    default:
        return "none";
    }
}

void ts_net_hex(const uint8_t *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool ts_net_unhex32(const char *hex, uint8_t out[32])
{
    if (!hex || strlen(hex) != 64)
        return false;
    for (int i = 0; i < 32; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

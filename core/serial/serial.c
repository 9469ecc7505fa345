/* Canonical encoding: writers, readers, bit-packing and the checked envelope. */
#include "core/serial/serial.h"

#include <math.h>
#include <openssl/evp.h>
#include <string.h>
#include <unistd.h>
#include <zstd_errors.h>
#include <zstd.h>

static const uint8_t magic[4] = {'T', 'E', 'S', 'S'};

ts_status_t ts_sha256(const void *data, size_t size, uint8_t out[TS_SHA256_BYTES])
{
    unsigned int n = 0;
    if (EVP_Digest(data, size, out, &n, EVP_sha256(), NULL) != 1 || n != TS_SHA256_BYTES)
        return TS_ECRYPTO;
    return TS_OK;
}

ts_status_t ts_sha256_fd(int fd, uint64_t size, uint8_t out[TS_SHA256_BYTES])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    uint8_t *buf = ts_malloc(1 << 20);
    ts_status_t st = md && buf ? TS_OK : TS_ENOMEM;
    if (st == TS_OK && EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
        st = TS_ECRYPTO;
    for (uint64_t off = 0; off < size && st == TS_OK;) {
        size_t want = size - off < (1u << 20) ? (size_t)(size - off) : (1u << 20);
        ssize_t r = pread(fd, buf, want, (off_t)off);
        if (r <= 0)
            st = TS_EIO;
        else if (EVP_DigestUpdate(md, buf, (size_t)r) != 1)
            st = TS_ECRYPTO;
        off += r > 0 ? (uint64_t)r : 0;
    }
    unsigned int n = 0;
    if (st == TS_OK && (EVP_DigestFinal_ex(md, out, &n) != 1 || n != TS_SHA256_BYTES))
        st = TS_ECRYPTO;
    ts_free(buf);
    EVP_MD_CTX_free(md);
    return st;
}

void ts_sha256_hex(const uint8_t digest[TS_SHA256_BYTES], char out[2 * TS_SHA256_BYTES + 1])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < TS_SHA256_BYTES; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[2 * TS_SHA256_BYTES] = '\0';
}

unsigned ts_serial_width(uint64_t modulus)
{
    if (modulus <= 1)
        return 0;
    uint64_t top = modulus - 1;
    unsigned w = 0;
    while (top) {
        w++;
        top >>= 1;
    }
    return w;
}

bool ts_serial_packed_bytes(size_t n, unsigned width, size_t *out)
{
    size_t bits;
    if (!ts_size_mul(n, width, &bits) || !ts_size_add(bits, 7, &bits))
        return false;
    *out = bits / 8;
    return true;
}

/* ---------------------------------------------------------------- writer */

void ts_writer_init(ts_writer_t *w)
{
    memset(w, 0, sizeof *w);
}

void ts_writer_clear(ts_writer_t *w)
{
    if (!w)
        return;
    ts_free_secret(w->buf);
    memset(w, 0, sizeof *w);
}

/* Make room for n more bytes; returns the write position or NULL (sticky error). */
static uint8_t *reserve(ts_writer_t *w, size_t n)
{
    if (w->err != TS_OK)
        return NULL;
    size_t need;
    if (!ts_size_add(w->len, n, &need)) {
        w->err = TS_ELIMIT;
        return NULL;
    }
    if (need > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < need) {
            if (!ts_size_mul(cap, 2, &cap)) {
                w->err = TS_ELIMIT;
                return NULL;
            }
        }
        uint8_t *nb = ts_malloc(cap);
        if (!nb) {
            w->err = TS_ENOMEM;
            return NULL;
        }
        if (w->len)
            memcpy(nb, w->buf, w->len);
        ts_free_secret(w->buf);
        w->buf = nb;
        w->cap = cap;
    }
    uint8_t *p = w->buf + w->len;
    w->len = need;
    return p;
}

static void put_le(ts_writer_t *w, uint64_t v, int bytes)
{
    uint8_t *p = reserve(w, (size_t)bytes);
    if (!p)
        return;
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void ts_put_u8(ts_writer_t *w, uint8_t v)
{
    put_le(w, v, 1);
}
void ts_put_u16(ts_writer_t *w, uint16_t v)
{
    put_le(w, v, 2);
}
void ts_put_u32(ts_writer_t *w, uint32_t v)
{
    put_le(w, v, 4);
}
void ts_put_u64(ts_writer_t *w, uint64_t v)
{
    put_le(w, v, 8);
}

void ts_put_f64(ts_writer_t *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(w, bits, 8);
}

void ts_put_bytes(ts_writer_t *w, const void *data, size_t size)
{
    uint8_t *p = reserve(w, size);
    if (p && size)
        memcpy(p, data, size);
}

void ts_put_packed(ts_writer_t *w, const uint64_t *v, size_t n, unsigned width)
{
    if (w->err != TS_OK)
        return;
    if (width == 0 || width > 64) {
        w->err = TS_EINVAL;
        return;
    }
    size_t bytes;
    if (!ts_serial_packed_bytes(n, width, &bytes)) {
        w->err = TS_ELIMIT;
        return;
    }
    uint8_t *p = reserve(w, bytes);
    if (!p)
        return;
    uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
    /* Bit accumulator: up to 7 pending bits plus one value fit in 128 bits as two words. */
    uint64_t acc = 0;
    unsigned nacc = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i] & mask;
        acc |= x << nacc; /* nacc < 8, so the low part always fits */
        uint64_t spill = nacc ? (width + nacc > 64 ? x >> (64 - nacc) : 0) : 0;
        unsigned total = nacc + width;
        while (total >= 8) {
            p[o++] = (uint8_t)acc;
            acc = (acc >> 8) | (spill << 56);
            spill >>= 8;
            total -= 8;
        }
        nacc = total;
    }
    if (nacc)
        p[o++] = (uint8_t)acc;
    TS_ASSERT(o == bytes);
}

/* ---------------------------------------------------------------- reader */

void ts_reader_init(ts_reader_t *r, const void *data, size_t size)
{
    r->p = data;
    r->len = data ? size : 0;
    r->pos = 0;
    r->err = TS_OK;
}

size_t ts_reader_left(const ts_reader_t *r)
{
    return r->len - r->pos;
}

static const uint8_t *take(ts_reader_t *r, size_t n)
{
    if (r->err != TS_OK)
        return NULL;
    if (n > r->len - r->pos) {
        r->err = TS_EFORMAT;
        return NULL;
    }
    const uint8_t *p = r->p + r->pos;
    r->pos += n;
    return p;
}

static uint64_t get_le(ts_reader_t *r, int bytes)
{
    const uint8_t *p = take(r, (size_t)bytes);
    uint64_t v = 0;
    if (!p)
        return 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint8_t ts_get_u8(ts_reader_t *r)
{
    return (uint8_t)get_le(r, 1);
}
uint16_t ts_get_u16(ts_reader_t *r)
{
    return (uint16_t)get_le(r, 2);
}
uint32_t ts_get_u32(ts_reader_t *r)
{
    return (uint32_t)get_le(r, 4);
}
uint64_t ts_get_u64(ts_reader_t *r)
{
    return get_le(r, 8);
}

double ts_get_f64(ts_reader_t *r)
{
    uint64_t bits = get_le(r, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (r->err == TS_OK && !isfinite(v)) {
        r->err = TS_EFORMAT;
        return 0;
    }
    return r->err == TS_OK ? v : 0;
}

void ts_get_bytes(ts_reader_t *r, void *out, size_t size)
{
    const uint8_t *p = take(r, size);
    if (p && size)
        memcpy(out, p, size);
}

uint64_t ts_get_count(ts_reader_t *r, uint64_t max)
{
    uint64_t v = get_le(r, 8);
    if (r->err == TS_OK && v > max) {
        r->err = TS_EFORMAT;
        return 0;
    }
    return v;
}

void ts_get_packed(ts_reader_t *r, uint64_t *out, size_t n, unsigned width, uint64_t modulus)
{
    if (r->err != TS_OK)
        return;
    size_t bytes;
    if (width == 0 || width > 64 || !ts_serial_packed_bytes(n, width, &bytes)) {
        r->err = TS_EFORMAT;
        return;
    }
    const uint8_t *p = take(r, bytes);
    if (!p)
        return;
    uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
    size_t bit = 0;
    for (size_t i = 0; i < n; i++) {
        size_t byte = bit >> 3;
        unsigned shift = (unsigned)(bit & 7);
        /* Gather up to 9 bytes: 64 value bits plus at most 7 bits of offset. */
        uint64_t lo = 0;
        unsigned need = (shift + width + 7) / 8;
        for (unsigned k = 0; k < need && k < 8; k++)
            lo |= (uint64_t)p[byte + k] << (8 * k);
        uint64_t x = lo >> shift;
        if (need == 9)
            x |= (uint64_t)p[byte + 8] << (64 - shift);
        x &= mask;
        if (modulus && x >= modulus) {
            r->err = TS_EFORMAT;
            return;
        }
        out[i] = x;
        bit += width;
    }
    /* Padding bits of the last byte must be zero: one canonical encoding. */
    unsigned pad = (unsigned)(bytes * 8 - bit);
    if (pad && (p[bytes - 1] >> (8 - pad)) != 0)
        r->err = TS_EFORMAT;
}

ts_status_t ts_reader_finish(const ts_reader_t *r)
{
    if (r->err != TS_OK)
        return r->err;
    return r->pos == r->len ? TS_OK : TS_EFORMAT;
}

/* -------------------------------------------------------------- envelope */

static void write_header(uint8_t *p, const ts_serial_header_t *h)
{
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_bytes(&w, magic, 4);
    ts_put_u16(&w, h->version);
    ts_put_u16(&w, h->type);
    ts_put_u32(&w, h->flags);
    ts_put_bytes(&w, h->param_id, TS_SHA256_BYTES);
    ts_put_u64(&w, h->payload_bytes);
    ts_put_u64(&w, h->raw_bytes);
    ts_put_bytes(&w, h->digest, TS_SHA256_BYTES);
    if (w.err == TS_OK && w.len == TS_SERIAL_HEADER_BYTES)
        memcpy(p, w.buf, TS_SERIAL_HEADER_BYTES);
    ts_writer_clear(&w);
}

ts_status_t ts_serial_seal(const ts_writer_t *w, uint16_t type,
                           const uint8_t param_id[TS_SHA256_BYTES], int zstd_level, uint8_t **out,
                           size_t *out_size)
{
    *out = NULL;
    *out_size = 0;
    if (!w || w->err != TS_OK)
        return w ? w->err : TS_EINVAL;
    if (zstd_level < 0 || zstd_level > 19)
        return TS_EINVAL;
    ts_serial_header_t h = {.version = TS_SERIAL_VERSION, .type = type, .raw_bytes = w->len};
    if (param_id)
        memcpy(h.param_id, param_id, TS_SHA256_BYTES);
    ts_status_t st = ts_sha256(w->buf ? w->buf : (const uint8_t *)"", w->len, h.digest);
    if (st != TS_OK)
        return st;

    size_t bound = w->len, total;
    if (zstd_level > 0)
        bound = ZSTD_compressBound(w->len);
    if (!ts_size_add(bound, TS_SERIAL_HEADER_BYTES, &total))
        return TS_ELIMIT;
    uint8_t *buf = ts_malloc(total);
    if (!buf)
        return TS_ENOMEM;
    size_t stored = w->len;
    if (zstd_level > 0 && w->len > 0) {
        size_t c = ZSTD_compress(buf + TS_SERIAL_HEADER_BYTES, bound, w->buf, w->len, zstd_level);
        if (!ZSTD_isError(c) && c < w->len) {
            h.flags |= TS_SERIAL_ZSTD;
            stored = c;
        }
    }
    if (!(h.flags & TS_SERIAL_ZSTD) && w->len)
        memcpy(buf + TS_SERIAL_HEADER_BYTES, w->buf, w->len);
    h.payload_bytes = stored;
    write_header(buf, &h);
    *out = buf;
    *out_size = TS_SERIAL_HEADER_BYTES + stored;
    return TS_OK;
}

ts_status_t ts_serial_peek(const void *data, size_t size, ts_serial_header_t *h)
{
    if (!data || size < TS_SERIAL_HEADER_BYTES)
        return TS_EFORMAT;
    ts_reader_t r;
    ts_reader_init(&r, data, TS_SERIAL_HEADER_BYTES);
    uint8_t m[4];
    ts_get_bytes(&r, m, 4);
    h->version = ts_get_u16(&r);
    h->type = ts_get_u16(&r);
    h->flags = ts_get_u32(&r);
    ts_get_bytes(&r, h->param_id, TS_SHA256_BYTES);
    h->payload_bytes = ts_get_u64(&r);
    h->raw_bytes = ts_get_u64(&r);
    ts_get_bytes(&r, h->digest, TS_SHA256_BYTES);
    if (r.err != TS_OK || memcmp(m, magic, 4) != 0 || h->version != TS_SERIAL_VERSION ||
        (h->flags & ~TS_SERIAL_ZSTD) != 0 || h->type == TS_OBJ_ANY)
        return TS_EFORMAT;
    if (h->payload_bytes != size - TS_SERIAL_HEADER_BYTES)
        return TS_EFORMAT;
    if (!(h->flags & TS_SERIAL_ZSTD) && h->raw_bytes != h->payload_bytes)
        return TS_EFORMAT;
    return TS_OK;
}

ts_status_t ts_serial_open(const void *data, size_t size, uint16_t want_type,
                           const uint8_t *want_param, const ts_serial_limits_t *limits,
                           ts_serial_header_t *hdr, uint8_t **payload, size_t *payload_size)
{
    *payload = NULL;
    *payload_size = 0;
    uint64_t cap = limits && limits->max_raw_bytes ? limits->max_raw_bytes : (1ull << 30);
    int wlog = limits && limits->max_window_log ? limits->max_window_log : 27;
    ts_serial_header_t h;
    ts_status_t st = ts_serial_peek(data, size, &h);
    if (st != TS_OK)
        return st;
    if (want_type != TS_OBJ_ANY && h.type != want_type)
        return TS_EMISMATCH;
    if (want_param && memcmp(want_param, h.param_id, TS_SHA256_BYTES) != 0)
        return TS_EMISMATCH;
    if (h.raw_bytes > cap || h.raw_bytes > SIZE_MAX - 1)
        return TS_ELIMIT;
    const uint8_t *body = (const uint8_t *)data + TS_SERIAL_HEADER_BYTES;
    uint8_t *raw = ts_malloc(h.raw_bytes ? (size_t)h.raw_bytes : 1);
    if (!raw)
        return TS_ENOMEM;
    if (h.flags & TS_SERIAL_ZSTD) {
        unsigned long long claimed = ZSTD_getFrameContentSize(body, (size_t)h.payload_bytes);
        if (claimed == ZSTD_CONTENTSIZE_ERROR || claimed != h.raw_bytes) {
            st = TS_EFORMAT;
            goto out_free;
        }
        ZSTD_DCtx *dctx = ZSTD_createDCtx();
        if (!dctx) {
            st = TS_ENOMEM;
            goto out_free;
        }
        size_t got = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, wlog);
        if (!ZSTD_isError(got))
            got =
                ZSTD_decompressDCtx(dctx, raw, (size_t)h.raw_bytes, body, (size_t)h.payload_bytes);
        ZSTD_freeDCtx(dctx);
        if (ZSTD_isError(got)) {
            st = ZSTD_getErrorCode(got) == ZSTD_error_frameParameter_windowTooLarge ? TS_ELIMIT
                                                                                    : TS_EFORMAT;
            goto out_free;
        }
        if (got != h.raw_bytes) {
            st = TS_EFORMAT;
            goto out_free;
        }
    } else if (h.raw_bytes) {
        memcpy(raw, body, (size_t)h.raw_bytes);
    }
    uint8_t digest[TS_SHA256_BYTES];
    st = ts_sha256(raw, (size_t)h.raw_bytes, digest);
    if (st == TS_OK && !ts_memeq_ct(digest, h.digest, TS_SHA256_BYTES))
        st = TS_EFORMAT;
    if (st != TS_OK)
        goto out_free;
    if (hdr)
        *hdr = h;
    *payload = raw;
    *payload_size = (size_t)h.raw_bytes;
    return TS_OK;
out_free:
    ts_free_secret(raw);
    return st;
}

/*
 * Randomness. ts_os_random() reads getrandom(2) and fails closed. A ts_prng_t
 * is AES-256-CTR (OpenSSL EVP, AES-NI when the CPU has it) over a 256-bit key:
 * from the OS for the CSPRNG, or the caller's public seed for a deterministic
 * stream. The 128-bit counter block is [stream_id (8 bytes LE) | block index
 * (8 bytes BE)], so (seed, stream_id) names one keystream everywhere.
 * Keystream is produced in 4 KiB chunks; consumed bytes are wiped.
 */
#include "core/base/base.h"

#include <errno.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/random.h>

#define BUF_BYTES 4096

struct ts_prng {
    EVP_CIPHER_CTX *ctx;
    uint8_t buf[BUF_BYTES];
    size_t pos; /* next unread byte of buf; BUF_BYTES = empty */
};

static const uint8_t zeros[BUF_BYTES];

ts_status_t ts_os_random(void *buf, size_t size)
{
    uint8_t *p = buf;
    while (size > 0) {
        ssize_t got = getrandom(p, size, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return TS_ERANDOM;
        }
        p += got;
        size -= (size_t)got;
    }
    return TS_OK;
}

static ts_status_t prng_new_key(const uint8_t key[32], uint64_t stream_id, ts_prng_t **out)
{
    *out = NULL;
    ts_prng_t *g = ts_calloc(1, sizeof *g);
    if (!g)
        return TS_ENOMEM;
    uint8_t iv[16] = {0};
    for (int i = 0; i < 8; i++)
        iv[i] = (uint8_t)(stream_id >> (8 * i));
    g->ctx = EVP_CIPHER_CTX_new();
    if (!g->ctx || EVP_EncryptInit_ex(g->ctx, EVP_aes_256_ctr(), NULL, key, iv) != 1) {
        ts_prng_free(g);
        return TS_ECRYPTO;
    }
    g->pos = BUF_BYTES;
    *out = g;
    return TS_OK;
}

ts_status_t ts_prng_new_os(ts_prng_t **out)
{
    uint8_t key[32];
    ts_status_t st = ts_os_random(key, sizeof key);
    if (st == TS_OK)
        st = prng_new_key(key, 0, out);
    else
        *out = NULL;
    ts_memzero(key, sizeof key);
    return st;
}

ts_status_t ts_prng_new_seeded(const uint8_t seed[TS_SEED_BYTES], uint64_t stream_id,
                               ts_prng_t **out)
{
    if (!seed || !out)
        return TS_EINVAL;
    return prng_new_key(seed, stream_id, out);
}

void ts_prng_free(ts_prng_t *prng)
{
    if (!prng)
        return;
    EVP_CIPHER_CTX_free(prng->ctx); /* wipes the expanded key */
    ts_free_secret(prng);
}

static ts_status_t refill(ts_prng_t *g)
{
    int outl = 0;
    if (EVP_EncryptUpdate(g->ctx, g->buf, &outl, zeros, BUF_BYTES) != 1 || outl != BUF_BYTES)
        return TS_ECRYPTO;
    g->pos = 0;
    return TS_OK;
}

ts_status_t ts_prng_bytes(ts_prng_t *prng, void *buf, size_t size)
{
    if (!prng || (!buf && size))
        return TS_EINVAL;
    uint8_t *p = buf;
    while (size > 0) {
        if (prng->pos == BUF_BYTES) {
            ts_status_t st = refill(prng);
            if (st != TS_OK)
                return st;
        }
        size_t n = BUF_BYTES - prng->pos;
        if (n > size)
            n = size;
        memcpy(p, prng->buf + prng->pos, n);
        ts_memzero(prng->buf + prng->pos, n);
        prng->pos += n;
        p += n;
        size -= n;
    }
    return TS_OK;
}

ts_status_t ts_prng_u64(ts_prng_t *prng, uint64_t *out)
{
    uint8_t b[8];
    ts_status_t st = ts_prng_bytes(prng, b, 8);
    if (st != TS_OK)
        return st;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    *out = v;
    return TS_OK;
}

ts_status_t ts_prng_uniform(ts_prng_t *prng, uint64_t bound, uint64_t *out)
{
    if (bound == 0)
        return TS_EINVAL;
    /* Reject the top partial copy of [0, bound) so every residue is equally likely. */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % bound + 1) % bound;
    for (;;) {
        uint64_t v;
        ts_status_t st = ts_prng_u64(prng, &v);
        if (st != TS_OK)
            return st;
        if (v <= limit) {
            *out = v % bound;
            return TS_OK;
        }
    }
}

ts_status_t ts_prng_double(ts_prng_t *prng, double *out)
{
    uint64_t v;
    ts_status_t st = ts_prng_u64(prng, &v);
    if (st == TS_OK)
        *out = (double)(v >> 11) * 0x1.0p-53;
    return st;
}

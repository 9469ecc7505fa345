/*
 * Samplers: uniform mod q, uniform ternary, sparse ternary with exact
 * Hamming weight, and a table-based discrete Gaussian (see ring.h).
 */
#include <math.h>
#include <string.h>

#include "core/ring/ring_int.h"

#define RAND_BUF 512

ts_status_t ts_ring_sample_ternary(ts_prng_t *prng, size_t n, int64_t *out)
{
    if (!prng || (!out && n))
        return TS_EINVAL;
    uint8_t buf[RAND_BUF];
    size_t pos = RAND_BUF, i = 0;
    ts_status_t st = TS_OK;
    while (i < n) {
        if (pos == RAND_BUF) {
            st = ts_prng_bytes(prng, buf, RAND_BUF);
            if (st != TS_OK)
                goto out;
            pos = 0;
        }
        uint8_t b = buf[pos++];
        if (b < 255) /* 255 = 3 * 85: reject the last value for exact thirds */
            out[i++] = (int64_t)(b % 3) - 1;
    }
out:
    ts_memzero(buf, sizeof buf);
    return st;
}

ts_status_t ts_ring_sample_sparse_ternary(ts_prng_t *prng, size_t n, size_t h, int64_t *out)
{
    if (!prng || (!out && n) || h > n)
        return TS_EINVAL;
    memset(out, 0, n * sizeof(int64_t));
    /* positions by rejection on occupancy: exactly h distinct positions, each
     * h-subset equally likely; signs from separate random bits */
    size_t placed = 0;
    uint64_t bits = 0;
    int nbits = 0;
    while (placed < h) {
        uint64_t pos;
        ts_status_t st = ts_prng_uniform(prng, n, &pos);
        if (st != TS_OK)
            return st;
        if (out[pos] != 0)
            continue;
        if (nbits == 0) {
            st = ts_prng_u64(prng, &bits);
            if (st != TS_OK)
                return st;
            nbits = 64;
        }
        out[pos] = (bits & 1) ? 1 : -1;
        bits >>= 1;
        nbits--;
        placed++;
    }
    bits = 0;
    return TS_OK;
}

#define GAUSS_MAX_TABLE 400
#define GAUSS_CHUNK     64

ts_status_t ts_ring_sample_gaussian(ts_prng_t *prng, size_t n, double sigma, int64_t *out)
{
    if (!prng || (!out && n) || !(sigma > 0) || sigma > 64)
        return TS_EINVAL;
    /* cumulative table of |x| for x in [-B, B], B = ceil(6 sigma):
     * P(|x| = 0) = 1/S, P(|x| = k) = 2 rho(k)/S, rho(k) = exp(-k^2 / (2 sigma^2));
     * cdt[k] = floor(2^64 * P(|x| <= k)); |x| = #{k : u >= cdt[k]} for u uniform 64-bit. */
    const int bound = (int)ceil(6.0 * sigma);
    long double rho[GAUSS_MAX_TABLE + 1], total = 1.0L;
    uint64_t cdt[GAUSS_MAX_TABLE + 1];
    rho[0] = 1.0L;
    for (int k = 1; k <= bound; k++) {
        rho[k] = 2.0L * expl(-(long double)k * k / (2.0L * sigma * sigma));
        total += rho[k];
    }
    long double acc = 0;
    for (int k = 0; k <= bound; k++) {
        acc += rho[k] / total;
        long double v = acc * 18446744073709551616.0L;
        cdt[k] = v >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)v;
    }
    cdt[bound] = UINT64_MAX;
    uint64_t buf[RAND_BUF / 8];
    size_t pos = RAND_BUF / 8;
    uint64_t signs = 0;
    int nsigns = 0;
    ts_status_t st = TS_OK;
    const bool vec = ts__ring_avx512_built() && ts_cpu_has_avx512();
    /* chunks: the words are taken from the stream in the same order as one
     * sample at a time (a magnitude word, a sign word every 64 samples), then
     * the magnitudes counted against the whole table (8 at a time with AVX-512) */
    uint64_t u[GAUSS_CHUNK];
    int64_t mag[GAUSS_CHUNK], sg[GAUSS_CHUNK];
    for (size_t i0 = 0; i0 < n; i0 += GAUSS_CHUNK) {
        const size_t cnt = n - i0 < GAUSS_CHUNK ? n - i0 : GAUSS_CHUNK;
        for (size_t i = 0; i < cnt; i++) {
            if (pos + 2 > RAND_BUF / 8) {
                st = ts_prng_bytes(prng, buf, sizeof buf);
                if (st != TS_OK)
                    goto out;
                pos = 0;
            }
            u[i] = buf[pos++];
            if (nsigns == 0) {
                signs = buf[pos++];
                nsigns = 64;
            }
            sg[i] = (int64_t)(signs & 1);
            signs >>= 1;
            nsigns--;
        }
        size_t done = vec ? cnt & ~(size_t)7 : 0;
        if (done)
            ts__ring_cdt_count_avx512(u, done, cdt, bound, mag);
        for (size_t i = done; i < cnt; i++) {
            /* constant-time-ish: every table entry is compared, no early exit */
            int64_t m = 0;
            for (int k = 0; k < bound; k++)
                m += (int64_t)(u[i] >= cdt[k]);
            mag[i] = m;
        }
        for (size_t i = 0; i < cnt; i++)
            out[i0 + i] = mag[i] - 2 * sg[i] * mag[i]; /* s ? -mag : mag, without a branch */
    }
out:
    ts_memzero(buf, sizeof buf);
    ts_memzero(u, sizeof u);
    ts_memzero(mag, sizeof mag);
    ts_memzero(sg, sizeof sg);
    signs = 0;
    return st;
}

ts_status_t ts_poly_sample_uniform(ts_poly_t *p, ts_prng_t *prng)
{
    if (!p || !prng)
        return TS_EINVAL;
    const uint32_t n = p->ring->n, nl = p->nq + p->np;
    const uint32_t *idx = ts_ring_limb_index(p->ring, p->nq, p->np);
    ts_backend_t *be = p->ring->backend;
    uint64_t *host = p->data;
    if (!be->host_memory) {
        host = ts_malloc((size_t)nl * n * sizeof(uint64_t));
        if (!host)
            return TS_ENOMEM;
    }
    uint64_t buf[RAND_BUF / 8];
    ts_status_t st = TS_OK;
    const bool vec = ts__ring_avx512_built() && ts_cpu_has_avx512();
    for (uint32_t l = 0; l < nl && st == TS_OK; l++) {
        const uint64_t q = p->ring->mods[idx[l]].q;
        const uint32_t bits = p->ring->mods[idx[l]].bits;
        const uint64_t mask = bits >= 64 ? UINT64_MAX : (1ULL << bits) - 1;
        uint64_t *dst = host + (size_t)l * n;
        size_t pos = RAND_BUF / 8;
        for (uint32_t i = 0; i < n;) {
            if (pos == RAND_BUF / 8) {
                st = ts_prng_bytes(prng, buf, sizeof buf);
                if (st != TS_OK)
                    break;
                pos = 0;
            }
            if (vec && n - i >= 8) {
                /* whole buffer at once: the accepted words in order (the
                 * rest of a buffer is dropped at the end of a limb either way) */
                size_t took =
                    ts__ring_accept_avx512(buf + pos, RAND_BUF / 8 - pos, mask, q, dst + i, n - i);
                i += (uint32_t)took;
                pos = RAND_BUF / 8;
                continue;
            }
            uint64_t v = buf[pos++] & mask;
            if (v < q)
                dst[i++] = v;
        }
    }
    if (!be->host_memory) {
        if (st == TS_OK)
            st = ts_backend_upload(be, p->data, host, (size_t)nl * n * sizeof(uint64_t));
        ts_free(host);
    }
    return st;
}

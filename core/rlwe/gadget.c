/*
 * Approximate signed gadget decomposition in base 2^k over one modulus
 * (the TFHE decomposition, Chillotti et al. J. Cryptology 2020, section 3.2,
 * written for a non-power-of-two q by rounding x to (log_base * levels) bits
 * of x / q first). The rounding is a multiply-shift (no division, see
 * rlwe.h); balanced digits come from adding B/2 to every digit field first,
 * so no carries or branches are needed: field - B/2 is the balanced digit.
 */
#include "core/rlwe/rlwe_int.h"

ts_status_t ts_gadget_init(ts_gadget_t *g, uint64_t q, uint32_t log_base, uint32_t levels)
{
    if (!g || log_base < 1 || log_base > 30 || levels < 1 || levels > 64 || log_base * levels > 62)
        return TS_EINVAL;
    ts_status_t st = ts_modulus_init(&g->mod, q);
    if (st != TS_OK)
        return st;
    g->log_base = log_base;
    g->levels = levels;
    const uint32_t bits = log_base * levels;
    for (uint32_t i = 0; i < levels; i++) {
        /* g_i = round(q / B^(i+1)) = round(q 2^e / 2^bits), e = bits - (i+1) log_base */
        uint32_t e = bits - (i + 1) * log_base;
        ts_u128_t v = ((ts_u128_t)q << e) + ((ts_u128_t)1 << (bits - 1));
        g->g[i] = (uint64_t)(v >> bits) % q;
    }
    for (uint32_t i = levels; i < 64; i++)
        g->g[i] = 0;
    /* x * dec_mul < 2^bitlen(q) * 2^63: fits in 128 bits */
    uint32_t bits_q = 0;
    while (bits_q < 64 && (q >> bits_q) != 0)
        bits_q++;
    g->dec_shift = 62 + bits_q - bits;
    ts_u128_t num = (ts_u128_t)1 << (g->dec_shift + bits);
    g->dec_mul = (uint64_t)((num + q / 2) / q);
    return TS_OK;
}

/* The rounded x (bits wide) plus B/2 in every digit field. */
static inline uint64_t fields(const ts_gadget_t *g, uint64_t x, uint64_t offset, uint64_t keep,
                              ts_u128_t rnd)
{
    uint64_t t = (uint64_t)(((ts_u128_t)x * g->dec_mul + rnd) >> g->dec_shift);
    return (t + offset) & keep;
}

#define GADGET_SETUP                                                                               \
    const uint32_t lb = g->log_base, L = g->levels, bits = lb * L;                                 \
    const uint64_t bmask = (1ULL << lb) - 1, half = 1ULL << (lb - 1);                              \
    const uint64_t keep = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;                                 \
    const ts_u128_t rnd = (ts_u128_t)1 << (g->dec_shift - 1);                                      \
    uint64_t offset = 0;                                                                           \
    for (uint32_t i = 0; i < L; i++)                                                               \
        offset |= half << (i * lb);

void ts_gadget_decompose(const ts_gadget_t *g, const uint64_t *in, size_t n, int64_t *digits)
{
    GADGET_SETUP
    for (size_t j = 0; j < n; j++) {
        uint64_t x = fields(g, in[j], offset, keep, rnd);
        for (uint32_t i = 0; i < L; i++)
            digits[(size_t)i * n + j] =
                (int64_t)((x >> ((L - 1 - i) * lb)) & bmask) - (int64_t)half;
    }
}

void ts_gadget_decompose_mod(const ts_gadget_t *g, const uint64_t *in, size_t n, uint64_t *out)
{
    GADGET_SETUP
    const uint64_t q = g->mod.q;
    /* the rounded values by the vector kernels into the last digit row
     * (each word read there before the digits overwrite it) */
    uint64_t *t = out + (size_t)(L - 1) * n;
    bool vec = g->dec_shift >= 65;
    if (vec)
        ts_vec_mul_round_shift(t, in, n, g->dec_mul, g->dec_shift);
    for (size_t j = 0; j < n; j++) {
        uint64_t x = vec ? (t[j] + offset) & keep : fields(g, in[j], offset, keep, rnd);
        for (uint32_t i = 0; i < L; i++) {
            int64_t d = (int64_t)((x >> ((L - 1 - i) * lb)) & bmask) - (int64_t)half;
            /* d mod q without a branch */
            out[(size_t)i * n + j] = (uint64_t)d + (q & (uint64_t)(d >> 63));
        }
    }
}

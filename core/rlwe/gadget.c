/*
 * Approximate signed gadget decomposition in base 2^k over one modulus
 * (the TFHE decomposition, Chillotti et al. J. Cryptology 2020, section 3.2,
 * written for a non-power-of-two q by rounding x to (log_base * levels) bits
 * of x / q first).
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
    for (uint32_t i = 0; i < levels; i++) {
        /* g_i = round(q / B^(i+1)) */
        uint32_t sh = log_base * (i + 1);
        ts_u128_t v = ((ts_u128_t)q + (((ts_u128_t)1 << sh) >> 1)) >> sh;
        g->g[i] = (uint64_t)v % q;
    }
    for (uint32_t i = levels; i < 64; i++)
        g->g[i] = 0;
    return TS_OK;
}

void ts_gadget_decompose(const ts_gadget_t *g, const uint64_t *in, size_t n, int64_t *digits)
{
    const uint32_t lb = g->log_base, L = g->levels, bits = lb * L;
    const uint64_t q = g->mod.q, mask = (1ULL << lb) - 1, half = 1ULL << (lb - 1);
    for (size_t j = 0; j < n; j++) {
        /* t = round(x * 2^bits / q) mod 2^bits */
        ts_u128_t t = (((ts_u128_t)in[j] << bits) + q / 2) / q;
        uint64_t v = (uint64_t)t & ((bits >= 64) ? ~0ULL : ((1ULL << bits) - 1));
        /* balanced digits from the least significant (i = L - 1) up */
        uint64_t carry = 0;
        for (uint32_t i = L; i-- > 0;) {
            uint64_t d = (v & mask) + carry;
            v >>= lb;
            carry = d >= half ? 1 : 0; /* d in [half, B]: use d - B, carry one */
            digits[(size_t)i * n + j] = (int64_t)d - (int64_t)(carry << lb);
        }
    }
}

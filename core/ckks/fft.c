/*
 * The special FFT of CKKS (Cheon, Kim, Kim, Song, "Homomorphic encryption for
 * arithmetic of approximate numbers", Asiacrypt 2017, and the HEAAN library's
 * variant over the rotation group).
 *
 * With n slots (a power of two, n <= N/2) and gap g = N / (2n), a message
 * polynomial m(X) = m'(X^g), m' in R[Y]/(Y^{2n} + 1), holds the slots
 *     z_j = m'(w_j),   w_j = exp(2 pi i 5^j / 4n),   j < n.
 * Since w_j^n = i, z_j = u(w_j) with u_k = m'_k + i m'_{k+n} (k < n): decoding
 * is the evaluation of a degree-n complex polynomial at the n points w_j.
 * Splitting u into even and odd parts gives the butterfly
 *     z_j = E_j + w_j O_j,  z_{j+n/2} = E_j - w_j O_j,
 * because w_j^2 runs over the points of n/2 slots and w_{j+n/2} = -w_j
 * (5^{n/2} = 2n + 1 mod 4n). ts__ckks_fft_fwd is that radix-2 DIT on
 * bit-reversed input; ts__ckks_fft_inv undoes it stage by stage.
 */
#include <math.h>

#include "core/ckks/ckks_int.h"

static void bit_reverse(double complex *v, size_t n)
{
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            double complex t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    }
}

void ts__ckks_fft_fwd(const ts_ckks_params_t *p, double complex *vals, size_t n)
{
    const size_t m = 2 * p->n; /* ksi has m + 1 entries: exp(2 pi i k / m) */
    bit_reverse(vals, n);
    for (size_t len = 2; len <= n; len <<= 1) {
        size_t half = len >> 1, four_len = len << 2, step = m / four_len;
        for (size_t i = 0; i < n; i += len) {
            for (size_t j = 0; j < half; j++) {
                size_t k = (size_t)(p->rot_group[j] & (four_len - 1)) * step;
                double complex u = vals[i + j];
                double complex v = vals[i + j + half] * p->ksi[k];
                vals[i + j] = u + v;
                vals[i + j + half] = u - v;
            }
        }
    }
}

void ts__ckks_fft_inv(const ts_ckks_params_t *p, double complex *vals, size_t n)
{
    const bool vec = ts__ckks_fft_avx512_built() && ts_cpu_has_avx512();
    for (size_t len = n; len >= 2; len >>= 1) {
        size_t half = len >> 1;
        const double complex *tw = p->fft_inv_tw + half - 1;
        if (vec && half >= 4) {
            ts__ckks_fft_inv_stage_avx512(vals, n, len, tw);
            continue;
        }
        for (size_t i = 0; i < n; i += len) {
            for (size_t j = 0; j < half; j++) {
                double complex u = vals[i + j] + vals[i + j + half];
                double complex v = (vals[i + j] - vals[i + j + half]) * tw[j];
                vals[i + j] = u;
                vals[i + j + half] = v;
            }
        }
    }
    bit_reverse(vals, n);
    double inv = 1.0 / (double)n;
    for (size_t i = 0; i < n; i++)
        vals[i] *= inv;
}

uint64_t ts__ckks_double_mod(double x, const ts_modulus_t *m)
{
    bool neg = x < 0;
    double a = neg ? -x : x;
    uint64_t r;
    if (a < 18446744073709551616.0) { /* 2^64 */
        r = ts_mod_reduce64((uint64_t)a, m);
    } else {
        /* a = mant * 2^e exactly, mant < 2^53 */
        int e;
        double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
        uint64_t mant = (uint64_t)ldexp(f, 53);
        e -= 53;
        uint64_t two_e = ts_mod_pow(2, (uint64_t)e, m);
        r = ts_mod_mul(ts_mod_reduce64(mant, m), two_e, m);
    }
    return neg ? ts_mod_neg(r, m->q) : r;
}

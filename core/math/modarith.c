/*
 * Modular arithmetic on words, primality, NTT-friendly prime generation and
 * roots of unity.
 */
#include "core/math/math_int.h"

ts_status_t ts_modulus_init(ts_modulus_t *m, uint64_t q)
{
    if (!m || q < 2 || q >> TS_MODULUS_MAX_BITS)
        return TS_EINVAL;
    m->q = q;
    /* floor(2^128 / q) = floor((2^128 - 1) / q), plus one when q divides 2^128 */
    ts_u128_t all = ~(ts_u128_t)0;
    ts_u128_t r = all / q;
    if (all % q == q - 1)
        r += 1;
    m->barrett_hi = (uint64_t)(r >> 64);
    m->barrett_lo = (uint64_t)r;
    uint32_t bits = 0;
    while (bits < 64 && (q >> bits))
        bits++;
    m->bits = bits;
    return TS_OK;
}

uint64_t ts_mod_pow(uint64_t a, uint64_t e, const ts_modulus_t *m)
{
    uint64_t r = 1 % m->q, b = ts_mod_reduce64(a, m);
    while (e) {
        if (e & 1)
            r = ts_mod_mul(r, b, m);
        b = ts_mod_mul(b, b, m);
        e >>= 1;
    }
    return r;
}

uint64_t ts_mod_inv(uint64_t a, uint64_t q)
{
    /* extended Euclid on signed 128-bit to avoid overflow */
    __extension__ typedef __int128 s128;
    if (q < 2)
        return 0;
    s128 t = 0, nt = 1, r = q, nr = a % q;
    while (nr != 0) {
        s128 quo = r / nr, tmp;
        tmp = t - quo * nt;
        t = nt;
        nt = tmp;
        tmp = r - quo * nr;
        r = nr;
        nr = tmp;
    }
    if (r != 1)
        return 0;
    if (t < 0)
        t += q;
    return (uint64_t)t;
}

/* ---------------------------------------------------------------- primes */

static uint64_t mulmod_slow(uint64_t a, uint64_t b, uint64_t n)
{
    return (uint64_t)(((ts_u128_t)a * b) % n);
}

static uint64_t powmod_slow(uint64_t a, uint64_t e, uint64_t n)
{
    uint64_t r = 1 % n;
    a %= n;
    while (e) {
        if (e & 1)
            r = mulmod_slow(r, a, n);
        a = mulmod_slow(a, a, n);
        e >>= 1;
    }
    return r;
}

bool ts_is_prime(uint64_t n)
{
    static const uint64_t small[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
    if (n < 2)
        return false;
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        if (n == small[i])
            return true;
        if (n % small[i] == 0)
            return false;
    }
    static const uint64_t more[] = {41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        if (n == more[i])
            return true;
        if (n % more[i] == 0)
            return false;
    }
    uint64_t d = n - 1;
    int s = 0;
    while ((d & 1) == 0) {
        d >>= 1;
        s++;
    }
    /* bases 2..37 are a deterministic witness set for n < 3.3 * 10^24 */
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        uint64_t x = powmod_slow(small[i], d, n);
        if (x == 1 || x == n - 1)
            continue;
        bool composite = true;
        for (int r = 1; r < s; r++) {
            x = mulmod_slow(x, x, n);
            if (x == n - 1) {
                composite = false;
                break;
            }
        }
        if (composite)
            return false;
    }
    return true;
}

static bool excluded(uint64_t c, const uint64_t *ex, size_t nex, const uint64_t *got, size_t ngot)
{
    for (size_t i = 0; i < nex; i++)
        if (ex[i] == c)
            return true;
    for (size_t i = 0; i < ngot; i++)
        if (got[i] == c)
            return true;
    return false;
}

ts_status_t ts_primes_ntt(uint32_t bits, uint64_t two_n, size_t count, ts_primes_order_t order,
                          const uint64_t *exclude, size_t n_exclude, uint64_t *out)
{
    if (!out || bits < 2 || bits > 61 || two_n < 2 || (two_n & (two_n - 1)) ||
        (n_exclude && !exclude) || order > TS_PRIMES_NEAREST)
        return TS_EINVAL;
    uint64_t center = (uint64_t)1 << bits;
    if (two_n >= center)
        return TS_EINVAL;
    uint64_t lo_lim = center >> 1, hi_lim = (uint64_t)1 << 62;
    if (bits + 1 < 62)
        hi_lim = center << 1;
    /* down: candidates center - two_n + 1, step -two_n (= 1 mod two_n) */
    uint64_t down = center - two_n + 1, up = center + 1;
    bool down_ok = down > lo_lim, up_ok = up < hi_lim;
    size_t got = 0;
    bool turn_down = true;
    while (got < count) {
        bool use_down;
        if (order == TS_PRIMES_DESCENDING)
            use_down = true;
        else if (order == TS_PRIMES_ASCENDING)
            use_down = false;
        else
            use_down = turn_down;
        if (use_down && !down_ok)
            use_down = false, turn_down = false;
        if (!use_down && !up_ok) {
            if (order == TS_PRIMES_NEAREST && down_ok)
                use_down = true;
            else
                return TS_ERANGE;
        }
        if (use_down && !down_ok)
            return TS_ERANGE;
        uint64_t c;
        if (use_down) {
            c = down;
            if (down - two_n <= lo_lim || down < two_n)
                down_ok = false;
            else
                down -= two_n;
        } else {
            c = up;
            if (up + two_n >= hi_lim)
                up_ok = false;
            else
                up += two_n;
        }
        if (ts_is_prime(c) && !excluded(c, exclude, n_exclude, out, got)) {
            out[got++] = c;
            if (order == TS_PRIMES_NEAREST)
                turn_down = !use_down;
        }
    }
    return TS_OK;
}

ts_status_t ts_primitive_root_2pow(uint64_t q, uint64_t m, uint64_t *out)
{
    ts_modulus_t mod;
    if (!out || m < 2 || (m & (m - 1)) || ts_modulus_init(&mod, q) != TS_OK || (q - 1) % m)
        return TS_EINVAL;
    /* a quadratic non-residue g gives g^((q-1)/m) of order exactly m */
    uint64_t w = 0;
    for (uint64_t g = 2; g < q && g < 1000000; g++) {
        if (ts_mod_pow(g, (q - 1) / 2, &mod) == q - 1) {
            w = ts_mod_pow(g, (q - 1) / m, &mod);
            break;
        }
    }
    if (!w)
        return TS_EINVAL;
    /* primitive m-th roots are w^k, k odd: take the smallest */
    uint64_t w2 = ts_mod_mul(w, w, &mod), cur = w, best = w;
    for (uint64_t k = 3; k < m; k += 2) {
        cur = ts_mod_mul(cur, w2, &mod);
        if (cur < best)
            best = cur;
    }
    *out = best;
    return TS_OK;
}

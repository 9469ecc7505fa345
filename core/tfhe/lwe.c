/*
 * core/tfhe/lwe.c — LWE keys and ciphertexts, encoding, modulus switching and
 * LWE-to-LWE key switching (Chillotti, Gama, Georgieva, Izabachene, "TFHE:
 * fast fully homomorphic encryption over the torus", J. Cryptology 2020,
 * section 4.1, with signed digits).
 */
#include <math.h>
#include <string.h>

#include "core/ring/ring.h"
#include "core/tfhe/tfhe_int.h"

/* ------------------------------------------------------------ encoding */

uint64_t ts_tfhe_encode(uint64_t q, uint64_t m, uint64_t p)
{
    /* round(m * q / (2p)) */
    ts_u128_t num = (ts_u128_t)(m % (2 * p)) * q + p;
    return (uint64_t)(num / (2 * p)) % q;
}

uint64_t ts_tfhe_decode(uint64_t q, uint64_t phase, uint64_t p)
{
    ts_u128_t num = (ts_u128_t)(phase % q) * (2 * p) + q / 2;
    return (uint64_t)(num / q) % (2 * p);
}

int64_t ts_tfhe_centered(uint64_t x, uint64_t q)
{
    x %= q;
    return x > q / 2 ? (int64_t)x - (int64_t)q : (int64_t)x;
}

uint64_t ts_tfhe_delta(uint64_t q, uint64_t p)
{
    return ts_tfhe_encode(q, 1, p);
}

/* ------------------------------------------------------------ sampling */

ts_status_t ts__tfhe_gauss(ts_prng_t *prng, double sigma, int64_t *out)
{
    if (sigma == 0) {
        *out = 0;
        return TS_OK;
    }
    /* core/ring's table sampler (no data-dependent branch) covers sigma <= 64 */
    if (sigma <= 64)
        return ts_ring_sample_gaussian(prng, 1, sigma, out);
    /* wider noise (tests and flooding only): rounded Box-Muller */
    double u1, u2;
    ts_status_t st = ts_prng_double(prng, &u1);
    if (st == TS_OK)
        st = ts_prng_double(prng, &u2);
    if (st != TS_OK)
        return st;
    u1 = 1.0 - u1; /* (0, 1] */
    double r = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
    *out = (int64_t)llround(r * sigma);
    return TS_OK;
}

/* ---------------------------------------------------------------- keys */

static ts_status_t lwe_key_alloc(uint32_t n, ts_tfhe_secret_t dist, ts_tfhe_lwe_key_t **out)
{
    if (!out || n == 0 || (dist != TS_TFHE_SECRET_BINARY && dist != TS_TFHE_SECRET_TERNARY))
        return TS_EINVAL;
    ts_tfhe_lwe_key_t *k = ts_calloc(1, sizeof(*k));
    if (!k)
        return TS_ENOMEM;
    k->s = ts_calloc(n, sizeof(int32_t));
    if (!k->s) {
        ts_free(k);
        return TS_ENOMEM;
    }
    k->n = n;
    k->dist = dist;
    *out = k;
    return TS_OK;
}

ts_status_t ts_tfhe_lwe_key_new(uint32_t n, ts_tfhe_secret_t dist, ts_prng_t *prng,
                                ts_tfhe_lwe_key_t **out)
{
    if (!prng)
        return TS_EINVAL;
    ts_tfhe_lwe_key_t *k;
    ts_status_t st = lwe_key_alloc(n, dist, &k);
    if (st != TS_OK)
        return st;
    if (dist == TS_TFHE_SECRET_TERNARY) {
        int64_t *t = ts_malloc((size_t)n * sizeof(int64_t));
        st = t ? ts_ring_sample_ternary(prng, n, t) : TS_ENOMEM;
        for (uint32_t i = 0; st == TS_OK && i < n; i++)
            k->s[i] = (int32_t)t[i];
        ts_free_secret(t);
    } else {
        /* uniform bits, 64 at a time */
        uint64_t w = 0;
        for (uint32_t i = 0; st == TS_OK && i < n; i++) {
            if ((i & 63) == 0)
                st = ts_prng_u64(prng, &w);
            k->s[i] = (int32_t)(w & 1);
            w >>= 1;
        }
        ts_memzero(&w, sizeof(w));
    }
    if (st != TS_OK) {
        ts_tfhe_lwe_key_free(k);
        return st;
    }
    *out = k;
    return TS_OK;
}

ts_status_t ts_tfhe_lwe_key_from_coeffs(const int32_t *s, uint32_t n, ts_tfhe_secret_t dist,
                                        ts_tfhe_lwe_key_t **out)
{
    if (!s)
        return TS_EINVAL;
    ts_tfhe_lwe_key_t *k;
    ts_status_t st = lwe_key_alloc(n, dist, &k);
    if (st != TS_OK)
        return st;
    memcpy(k->s, s, (size_t)n * sizeof(int32_t));
    *out = k;
    return TS_OK;
}

void ts_tfhe_lwe_key_free(ts_tfhe_lwe_key_t *key)
{
    if (!key)
        return;
    ts_free_secret(key->s);
    ts_free_secret(key);
}

uint32_t ts_tfhe_lwe_key_dim(const ts_tfhe_lwe_key_t *key)
{
    return key->n;
}

ts_tfhe_secret_t ts_tfhe_lwe_key_dist(const ts_tfhe_lwe_key_t *key)
{
    return key->dist;
}

/* --------------------------------------------------------- ciphertexts */

ts_status_t ts_tfhe_lwe_new(uint32_t n, uint64_t q, ts_tfhe_lwe_t **out)
{
    if (!out || n == 0 || q < 2 || q > (1ull << 62))
        return TS_EINVAL;
    size_t bytes;
    if (!ts_size_mul(n, sizeof(uint64_t), &bytes) ||
        !ts_size_add(bytes, sizeof(ts_tfhe_lwe_t), &bytes))
        return TS_ENOMEM;
    ts_tfhe_lwe_t *ct = ts_calloc(1, bytes);
    if (!ct)
        return TS_ENOMEM;
    ct->n = n;
    ct->q = q;
    ct->a = (uint64_t *)(ct + 1);
    *out = ct;
    return TS_OK;
}

void ts_tfhe_lwe_free(ts_tfhe_lwe_t *ct)
{
    ts_free(ct);
}

uint32_t ts_tfhe_lwe_dim(const ts_tfhe_lwe_t *ct)
{
    return ct->n;
}

uint64_t ts_tfhe_lwe_modulus(const ts_tfhe_lwe_t *ct)
{
    return ct->q;
}

uint64_t *ts_tfhe_lwe_mask(ts_tfhe_lwe_t *ct)
{
    return ct->a;
}

uint64_t *ts_tfhe_lwe_body(ts_tfhe_lwe_t *ct)
{
    return &ct->b;
}

const uint64_t *ts_tfhe_lwe_mask_const(const ts_tfhe_lwe_t *ct)
{
    return ct->a;
}

uint64_t ts_tfhe_lwe_body_get(const ts_tfhe_lwe_t *ct)
{
    return ct->b;
}

ts_status_t ts_tfhe_lwe_copy(ts_tfhe_lwe_t *dst, const ts_tfhe_lwe_t *src)
{
    if (!dst || !src)
        return TS_EINVAL;
    if (dst->n != src->n || dst->q != src->q)
        return TS_EMISMATCH;
    if (dst != src) {
        memcpy(dst->a, src->a, (size_t)src->n * sizeof(uint64_t));
        dst->b = src->b;
    }
    return TS_OK;
}

/* <a, s> mod q */
static uint64_t dot_mod(const uint64_t *a, const int32_t *s, uint32_t n, uint64_t q)
{
    ts_u128_t pos = 0, neg = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (s[i] > 0)
            pos += (ts_u128_t)a[i] * (uint64_t)s[i];
        else if (s[i] < 0)
            neg += (ts_u128_t)a[i] * (uint64_t)(-(int64_t)s[i]);
    }
    uint64_t p = (uint64_t)(pos % q), m = (uint64_t)(neg % q);
    return p >= m ? p - m : p + q - m;
}

ts_status_t ts_tfhe_lwe_encrypt(const ts_tfhe_lwe_key_t *key, ts_tfhe_lwe_t *ct, uint64_t mu,
                                double sigma, ts_prng_t *prng)
{
    if (!key || !ct || !prng || sigma < 0)
        return TS_EINVAL;
    if (key->n != ct->n)
        return TS_EMISMATCH;
    ts_status_t st;
    for (uint32_t i = 0; i < ct->n; i++) {
        st = ts_prng_uniform(prng, ct->q, &ct->a[i]);
        if (st != TS_OK)
            return st;
    }
    int64_t e;
    st = ts__tfhe_gauss(prng, sigma, &e);
    if (st != TS_OK)
        return st;
    uint64_t as = dot_mod(ct->a, key->s, ct->n, ct->q);
    ct->b = ts_mod_add(ts_mod_add(as, mu % ct->q, ct->q), ts__tfhe_from_signed(e, ct->q), ct->q);
    return TS_OK;
}

ts_status_t ts_tfhe_lwe_phase(const ts_tfhe_lwe_key_t *key, const ts_tfhe_lwe_t *ct,
                              uint64_t *phase)
{
    if (!key || !ct || !phase)
        return TS_EINVAL;
    if (key->n != ct->n)
        return TS_EMISMATCH;
    *phase = ts_mod_sub(ct->b, dot_mod(ct->a, key->s, ct->n, ct->q), ct->q);
    return TS_OK;
}

void ts_tfhe_lwe_trivial(ts_tfhe_lwe_t *ct, uint64_t mu)
{
    memset(ct->a, 0, (size_t)ct->n * sizeof(uint64_t));
    ct->b = mu % ct->q;
}

ts_status_t ts_tfhe_lwe_add(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *x, const ts_tfhe_lwe_t *y)
{
    if (!out || !x || !y)
        return TS_EINVAL;
    if (x->n != y->n || x->q != y->q || out->n != x->n || out->q != x->q)
        return TS_EMISMATCH;
    uint64_t q = x->q;
    for (uint32_t i = 0; i < x->n; i++)
        out->a[i] = ts_mod_add(x->a[i], y->a[i], q);
    out->b = ts_mod_add(x->b, y->b, q);
    return TS_OK;
}

ts_status_t ts_tfhe_lwe_sub(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *x, const ts_tfhe_lwe_t *y)
{
    if (!out || !x || !y)
        return TS_EINVAL;
    if (x->n != y->n || x->q != y->q || out->n != x->n || out->q != x->q)
        return TS_EMISMATCH;
    uint64_t q = x->q;
    for (uint32_t i = 0; i < x->n; i++)
        out->a[i] = ts_mod_sub(x->a[i], y->a[i], q);
    out->b = ts_mod_sub(x->b, y->b, q);
    return TS_OK;
}

void ts_tfhe_lwe_neg(ts_tfhe_lwe_t *ct)
{
    for (uint32_t i = 0; i < ct->n; i++)
        ct->a[i] = ts_mod_neg(ct->a[i], ct->q);
    ct->b = ts_mod_neg(ct->b, ct->q);
}

void ts_tfhe_lwe_add_const(ts_tfhe_lwe_t *ct, uint64_t c)
{
    ct->b = ts_mod_add(ct->b, c % ct->q, ct->q);
}

void ts_tfhe_lwe_mul_const(ts_tfhe_lwe_t *ct, int64_t k)
{
    uint64_t km = ts__tfhe_from_signed(k, ct->q);
    for (uint32_t i = 0; i < ct->n; i++)
        ct->a[i] = (uint64_t)(((ts_u128_t)ct->a[i] * km) % ct->q);
    ct->b = (uint64_t)(((ts_u128_t)ct->b * km) % ct->q);
}

ts_status_t ts_tfhe_lwe_modswitch(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in)
{
    if (!out || !in)
        return TS_EINVAL;
    if (out->n != in->n)
        return TS_EMISMATCH;
    uint64_t qi = in->q, qo = out->q;
    for (uint32_t i = 0; i < in->n; i++)
        out->a[i] = ts__tfhe_modswitch1(in->a[i], qi, qo);
    out->b = ts__tfhe_modswitch1(in->b, qi, qo);
    return TS_OK;
}

/* -------------------------------------------------------- key switching */

ts_status_t ts_tfhe_ksk_new(const ts_tfhe_lwe_key_t *from, const ts_tfhe_lwe_key_t *to,
                            uint32_t logq, uint32_t log_base, uint32_t levels, double sigma,
                            const uint8_t *seed, ts_prng_t *noise_prng, ts_tfhe_ksk_t **out)
{
    if (!from || !to || !noise_prng || !out || logq < 2 || logq > 32 || log_base == 0 ||
        levels == 0 || (uint64_t)log_base * levels > logq || sigma < 0)
        return TS_EINVAL;
    ts_status_t st;
    ts_prng_t *mask = NULL;
    ts_tfhe_ksk_t *k = ts_calloc(1, sizeof(*k));
    if (!k)
        return TS_ENOMEM;
    k->n_in = from->n;
    k->n_out = to->n;
    k->logq = logq;
    k->log_base = log_base;
    k->levels = levels;
    k->q = 1ull << logq;
    size_t words;
    if (!ts_size_mul((size_t)from->n * levels, (size_t)to->n + 1, &words)) {
        st = TS_ENOMEM;
        goto out_free_key;
    }
    k->data = ts_malloc(words * sizeof(uint32_t));
    if (!k->data) {
        st = TS_ENOMEM;
        goto out_free_key;
    }
    if (seed)
        memcpy(k->seed, seed, TS_SEED_BYTES);
    else if ((st = ts_prng_bytes(noise_prng, k->seed, TS_SEED_BYTES)) != TS_OK)
        goto out_free_key;
    /* stream id 0x4b534b ("KSK"): domain separation from the bootstrapping key */
    if ((st = ts_prng_new_seeded(k->seed, 0x4b534b, &mask)) != TS_OK)
        goto out_free_key;
    uint64_t qmask = k->q - 1;
    for (uint32_t i = 0; i < from->n; i++) {
        for (uint32_t j = 0; j < levels; j++) {
            uint32_t *row = k->data + ((size_t)i * levels + j) * (to->n + 1);
            if ((st = ts__tfhe_ksk_mask_row(mask, row, to->n, k->q)) != TS_OK)
                goto out_free_prng;
            uint64_t acc = 0;
            for (uint32_t t = 0; t < to->n; t++)
                acc += (uint64_t)row[t] * (uint64_t)(int64_t)to->s[t];
            int64_t e;
            if ((st = ts__tfhe_gauss(noise_prng, sigma, &e)) != TS_OK)
                goto out_free_prng;
            /* gadget 2^(logq - (j+1) log_base): digit j is the (j+1)-th from the top */
            uint64_t g = 1ull << (logq - (j + 1) * log_base);
            acc += (uint64_t)(int64_t)from->s[i] * g + (uint64_t)e;
            row[to->n] = (uint32_t)(acc & qmask);
        }
    }
    ts_prng_free(mask);
    *out = k;
    return TS_OK;
out_free_prng:
    ts_prng_free(mask);
out_free_key:
    ts_tfhe_ksk_free(k);
    return st;
}

void ts_tfhe_ksk_free(ts_tfhe_ksk_t *ksk)
{
    if (!ksk)
        return;
    ts_free(ksk->data);
    ts_free(ksk);
}

const uint8_t *ts_tfhe_ksk_seed(const ts_tfhe_ksk_t *ksk)
{
    return ksk->seed;
}

ts_status_t ts__tfhe_ksk_mask_row(ts_prng_t *mask, uint32_t *row, uint32_t n_out, uint64_t q)
{
    ts_status_t st = ts_prng_bytes(mask, row, (size_t)n_out * sizeof(uint32_t));
    uint32_t qmask = (uint32_t)(q - 1);
    for (uint32_t t = 0; t < n_out; t++)
        row[t] &= qmask;
    return st;
}

void ts__tfhe_ks_row_sub(uint32_t *acc, const uint32_t *row, uint32_t m, size_t n)
{
    for (size_t t = 0; t < n; t++)
        acc[t] -= m * row[t];
}

ts_status_t ts_tfhe_lwe_keyswitch(const ts_tfhe_ksk_t *ksk, ts_tfhe_lwe_t *out,
                                  const ts_tfhe_lwe_t *in)
{
    if (!ksk || !out || !in)
        return TS_EINVAL;
    if (in->n != ksk->n_in || out->n != ksk->n_out || in->q != ksk->q || out->q != ksk->q)
        return TS_EMISMATCH;
    const uint32_t n = ksk->n_out, L = ksk->levels, lb = ksk->log_base;
    const uint32_t kept = L * lb, drop = ksk->logq - kept;
    const uint64_t qmask = ksk->q - 1, bmask = (1ull << lb) - 1, half = 1ull << (lb - 1);
    /* half a digit in every position: digits come out offset by +B/2 */
    uint64_t offset = 0;
    for (uint32_t j = 0; j < L; j++)
        offset |= half << (j * lb);
    const uint64_t keep = (1ull << kept) - 1;
    void (*row_sub)(uint32_t *, const uint32_t *, uint32_t, size_t) =
        ts_cpu_has_avx2() ? ts__tfhe_ks_row_sub_avx2 : ts__tfhe_ks_row_sub;
    /* accumulate in 32-bit words (the out mask is reused as scratch) */
    uint32_t *acc = (uint32_t *)out->a;
    memset(acc, 0, (size_t)n * sizeof(uint32_t));
    uint32_t body = (uint32_t)in->b;
    for (uint32_t i = 0; i < ksk->n_in; i++) {
        /* round to the kept top bits, then balanced digits without branches */
        uint64_t x = drop ? ((in->a[i] + (1ull << (drop - 1))) >> drop) : in->a[i];
        x = (x + offset) & keep;
        const uint32_t *rows = ksk->data + (size_t)i * L * (n + 1);
        for (uint32_t j = 0; j < L; j++) {
            /* digit of gadget index j (0 = most significant) */
            int64_t d = (int64_t)((x >> ((L - 1 - j) * lb)) & bmask) - (int64_t)half;
            if (d == 0)
                continue;
            const uint32_t *row = rows + (size_t)j * (n + 1);
            uint32_t m = (uint32_t)d;
            row_sub(acc, row, m, n);
            body -= m * row[n];
        }
    }
    /* widen in place from the top so no word is overwritten before it is read */
    for (uint32_t t = n; t-- > 0;)
        out->a[t] = (uint64_t)acc[t] & qmask;
    out->b = (uint64_t)body & qmask;
    return TS_OK;
}

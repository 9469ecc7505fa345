/*
 * core/tfhe/keys_io.c — canonical encodings of TFHE objects through
 * core/serial: parameter id, evaluation keys (seeded: only the bodies are
 * stored, masks are regenerated from the 32-byte seed), LWE ciphertexts and
 * secret keys. Everything read back is validated against the parameters
 * before use; malformed input gives TS_EFORMAT / TS_EMISMATCH, never a crash.
 */
#include <string.h>

#include "core/serial/serial.h"
#include "core/tfhe/tfhe_int.h"

#define KEYS_FORMAT 1

static void put_params(ts_writer_t *w, const ts_tfhe_params_t *p)
{
    const ts_tfhe_params_lit_t *l = &p->lit;
    ts_put_u32(w, l->lwe_n);
    ts_put_u32(w, l->lwe_logq);
    ts_put_f64(w, l->lwe_sigma);
    ts_put_u8(w, (uint8_t)l->lwe_secret);
    ts_put_u32(w, l->log_n_br);
    ts_put_u64(w, p->q_br);
    ts_put_f64(w, l->rlwe_sigma);
    ts_put_u8(w, (uint8_t)l->rlwe_secret);
    ts_put_u32(w, l->br_log_base);
    ts_put_u32(w, l->br_levels);
    ts_put_u32(w, l->ks_log_base);
    ts_put_u32(w, l->ks_levels);
}

ts_status_t ts_tfhe_params_id(const ts_tfhe_params_t *params, uint8_t id[32])
{
    if (!params || !id)
        return TS_EINVAL;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_bytes(&w, "tessera-tfhe-params", 19);
    put_params(&w, params);
    ts_status_t st = w.err;
    if (st == TS_OK)
        st = ts_sha256(w.buf, w.len, id);
    ts_writer_clear(&w);
    return st;
}

/* ------------------------------------------------------- evaluation key */

ts_status_t ts_tfhe_evalkey_serialize(const ts_tfhe_evalkey_t *ek, uint8_t **buf, size_t *size)
{
    if (!ek || !buf || !size)
        return TS_EINVAL;
    const ts_tfhe_params_t *p = ek->params;
    const uint32_t N = p->n_br, L = p->lit.br_levels;
    const size_t count = ek->dist == TS_TFHE_SECRET_BINARY ? ek->n : 2 * (size_t)ek->n;
    const unsigned wq = ts_serial_width(p->q_br);
    uint8_t id[32];
    ts_status_t st = ts_tfhe_params_id(p, id);
    if (st != TS_OK)
        return st;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, KEYS_FORMAT);
    ts_put_bytes(&w, ek->seed, TS_SEED_BYTES);
    ts_put_u32(&w, ek->n);
    ts_put_u8(&w, (uint8_t)ek->dist);
    /* bootstrapping key: the body of every row (NTT form) */
    for (size_t g = 0; g < count; g++) {
        const uint64_t *rows = ek->bsk + g * ek->rgsw_words;
        for (uint32_t r = 0; r < 2 * L; r++)
            ts_put_packed(&w, rows + ((size_t)r * 2 + 1) * N, N, wq);
    }
    /* key-switching key: the body of every row */
    const ts_tfhe_ksk_t *k = ek->ksk;
    ts_put_u32(&w, k->n_in);
    ts_put_u32(&w, k->n_out);
    for (size_t r = 0; r < (size_t)k->n_in * k->levels; r++) {
        uint64_t body = k->data[r * (k->n_out + 1) + k->n_out];
        ts_put_packed(&w, &body, 1, k->logq);
    }
    st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_TFHE_BOOTSTRAP_KEY, id, 0, buf, size);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_tfhe_evalkey_deserialize(const ts_tfhe_params_t *params, const uint8_t *buf,
                                        size_t size, ts_tfhe_evalkey_t **out)
{
    if (!params || !buf || !out)
        return TS_EINVAL;
    const ts_tfhe_params_lit_t *l = &params->lit;
    const uint32_t N = params->n_br, L = l->br_levels;
    const uint64_t Q = params->q_br;
    uint8_t id[32];
    ts_status_t st = ts_tfhe_params_id(params, id);
    if (st != TS_OK)
        return st;
    uint8_t *payload = NULL;
    size_t plen = 0;
    ts_serial_header_t hdr;
    ts_serial_limits_t lim = {.max_raw_bytes = (uint64_t)4 << 30, .max_window_log = 0};
    st = ts_serial_open(buf, size, TS_OBJ_TFHE_BOOTSTRAP_KEY, id, &lim, &hdr, &payload, &plen);
    if (st != TS_OK)
        return st;
    ts_reader_t r;
    ts_reader_init(&r, payload, plen);
    ts_prng_t *mask = NULL;
    ts_tfhe_evalkey_t *ek = ts_calloc(1, sizeof(*ek));
    if (!ek) {
        st = TS_ENOMEM;
        goto out_free_payload;
    }
    ek->params = params;
    ek->rgsw_words = ts__tfhe_rgsw_words(params);
    uint32_t fmt = ts_get_u32(&r);
    ts_get_bytes(&r, ek->seed, TS_SEED_BYTES);
    ek->n = ts_get_u32(&r);
    ek->dist = (ts_tfhe_secret_t)ts_get_u8(&r);
    if (r.err != TS_OK || fmt != KEYS_FORMAT || ek->n != l->lwe_n || ek->dist != l->lwe_secret) {
        st = r.err != TS_OK ? r.err : TS_EFORMAT;
        goto out_free_key;
    }
    const size_t count = ek->dist == TS_TFHE_SECRET_BINARY ? ek->n : 2 * (size_t)ek->n;
    /* every byte of the bootstrapping key must be present before allocating it */
    size_t need;
    if (!ts_serial_packed_bytes((size_t)N, ts_serial_width(Q), &need) ||
        !ts_size_mul(need, count * 2 * L, &need) || need > ts_reader_left(&r)) {
        st = TS_EFORMAT;
        goto out_free_key;
    }
    if (!(ek->bsk = ts_malloc(count * ek->rgsw_words * sizeof(uint64_t)))) {
        st = TS_ENOMEM;
        goto out_free_key;
    }
    if ((st = ts_prng_new_seeded(ek->seed, 0x42534b, &mask)) != TS_OK)
        goto out_free_key;
    for (size_t g = 0; g < count && st == TS_OK; g++) {
        uint64_t *rows = ek->bsk + g * ek->rgsw_words;
        for (uint32_t row = 0; row < 2 * L && st == TS_OK; row++) {
            uint64_t *a = rows + (size_t)row * 2 * N;
            st = ts__tfhe_uniform(mask, Q, a, N);
            ts_get_packed(&r, a + N, N, ts_serial_width(Q), Q);
        }
    }
    ts_prng_free(mask);
    mask = NULL;
    if (st == TS_OK)
        st = r.err;
    if (st != TS_OK)
        goto out_free_key;
    /* key-switching key */
    uint32_t n_in = ts_get_u32(&r), n_out = ts_get_u32(&r);
    if (r.err != TS_OK || n_in != N || n_out != l->lwe_n) {
        st = TS_EFORMAT;
        goto out_free_key;
    }
    ts_tfhe_ksk_t *k = ts_calloc(1, sizeof(*k));
    if (!k) {
        st = TS_ENOMEM;
        goto out_free_key;
    }
    ek->ksk = k;
    k->n_in = n_in;
    k->n_out = n_out;
    k->logq = l->lwe_logq;
    k->log_base = l->ks_log_base;
    k->levels = l->ks_levels;
    k->q = 1ull << k->logq;
    memcpy(k->seed, ek->seed, TS_SEED_BYTES);
    size_t rows = (size_t)n_in * k->levels;
    if (!ts_serial_packed_bytes(rows, k->logq, &need) || need > ts_reader_left(&r)) {
        st = TS_EFORMAT;
        goto out_free_key;
    }
    if (k->logq > 32 || !(k->data = ts_malloc(rows * (n_out + 1) * sizeof(uint32_t)))) {
        st = TS_ENOMEM;
        goto out_free_key;
    }
    if ((st = ts_prng_new_seeded(k->seed, 0x4b534b, &mask)) != TS_OK)
        goto out_free_key;
    for (size_t i = 0; i < rows && st == TS_OK; i++) {
        uint32_t *row = k->data + i * (n_out + 1);
        st = ts__tfhe_ksk_mask_row(mask, row, n_out, k->q);
        uint64_t body = 0;
        ts_get_packed(&r, &body, 1, k->logq, k->q);
        row[n_out] = (uint32_t)body;
    }
    ts_prng_free(mask);
    if (st == TS_OK)
        st = ts_reader_finish(&r);
    if (st != TS_OK)
        goto out_free_key;
    ts_free(payload);
    *out = ek;
    return TS_OK;
out_free_key:
    ts_tfhe_evalkey_free(ek);
out_free_payload:
    ts_free(payload);
    return st;
}

/* ---------------------------------------------------------- LWE ciphertext */

ts_status_t ts_tfhe_lwe_serialize(const ts_tfhe_params_t *params, const ts_tfhe_lwe_t *ct,
                                  uint8_t **buf, size_t *size)
{
    if (!params || !ct || !buf || !size)
        return TS_EINVAL;
    uint8_t id[32];
    ts_status_t st = ts_tfhe_params_id(params, id);
    if (st != TS_OK)
        return st;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, ct->n);
    ts_put_u64(&w, ct->q);
    unsigned width = ts_serial_width(ct->q);
    ts_put_packed(&w, ct->a, ct->n, width);
    ts_put_packed(&w, &ct->b, 1, width);
    st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_LWE_CIPHERTEXT, id, 0, buf, size);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_tfhe_lwe_deserialize(const ts_tfhe_params_t *params, const uint8_t *buf, size_t size,
                                    ts_tfhe_lwe_t **out)
{
    if (!params || !buf || !out)
        return TS_EINVAL;
    uint8_t id[32];
    ts_status_t st = ts_tfhe_params_id(params, id);
    if (st != TS_OK)
        return st;
    uint8_t *payload = NULL;
    size_t plen = 0;
    ts_serial_header_t hdr;
    st = ts_serial_open(buf, size, TS_OBJ_LWE_CIPHERTEXT, id, NULL, &hdr, &payload, &plen);
    if (st != TS_OK)
        return st;
    ts_reader_t r;
    ts_reader_init(&r, payload, plen);
    uint32_t n = ts_get_u32(&r);
    uint64_t q = ts_get_u64(&r);
    ts_tfhe_lwe_t *ct = NULL;
    /* only the two shapes of these parameters exist */
    bool big = n == params->n_br && q == params->q_br;
    bool small = n == params->lit.lwe_n && q == params->q_lwe;
    if (r.err != TS_OK || !(big || small)) {
        st = TS_EFORMAT;
        goto out;
    }
    if ((st = ts_tfhe_lwe_new(n, q, &ct)) != TS_OK)
        goto out;
    unsigned width = ts_serial_width(q);
    ts_get_packed(&r, ct->a, n, width, q);
    ts_get_packed(&r, &ct->b, 1, width, q);
    st = ts_reader_finish(&r);
    if (st != TS_OK) {
        ts_tfhe_lwe_free(ct);
        goto out;
    }
    *out = ct;
out:
    ts_free(payload);
    return st;
}

/* ------------------------------------------------------------ secret keys */

ts_status_t ts_tfhe_secret_serialize(const ts_tfhe_params_t *params,
                                     const ts_tfhe_lwe_key_t *lwe_key,
                                     const ts_tfhe_rlwe_key_t *rlwe_key, uint8_t **buf,
                                     size_t *size)
{
    if (!params || !lwe_key || !rlwe_key || !buf || !size)
        return TS_EINVAL;
    if (lwe_key->n != params->lit.lwe_n || rlwe_key->params->n_br != params->n_br)
        return TS_EMISMATCH;
    uint8_t id[32];
    ts_status_t st = ts_tfhe_params_id(params, id);
    if (st != TS_OK)
        return st;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, lwe_key->n);
    ts_put_u8(&w, (uint8_t)lwe_key->dist);
    for (uint32_t i = 0; i < lwe_key->n; i++)
        ts_put_u32(&w, (uint32_t)lwe_key->s[i]);
    ts_put_u32(&w, params->n_br);
    for (uint32_t i = 0; i < params->n_br; i++)
        ts_put_u32(&w, (uint32_t)rlwe_key->s[i]);
    st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_TFHE_SECRET_KEY, id, 0, buf, size);
    ts_writer_clear(&w); /* wipes */
    return st;
}

ts_status_t ts_tfhe_secret_deserialize(const ts_tfhe_params_t *params, const uint8_t *buf,
                                       size_t size, ts_tfhe_lwe_key_t **lwe_key,
                                       ts_tfhe_rlwe_key_t **rlwe_key)
{
    if (!params || !buf || !lwe_key || !rlwe_key)
        return TS_EINVAL;
    uint8_t id[32];
    ts_status_t st = ts_tfhe_params_id(params, id);
    if (st != TS_OK)
        return st;
    uint8_t *payload = NULL;
    size_t plen = 0;
    ts_serial_header_t hdr;
    st = ts_serial_open(buf, size, TS_OBJ_TFHE_SECRET_KEY, id, NULL, &hdr, &payload, &plen);
    if (st != TS_OK)
        return st;
    ts_reader_t r;
    ts_reader_init(&r, payload, plen);
    int32_t *s = NULL;
    ts_tfhe_lwe_key_t *lk = NULL;
    uint32_t n = ts_get_u32(&r);
    ts_tfhe_secret_t dist = (ts_tfhe_secret_t)ts_get_u8(&r);
    if (r.err != TS_OK || n != params->lit.lwe_n || dist != params->lit.lwe_secret) {
        st = TS_EFORMAT;
        goto out;
    }
    uint32_t cap = n > params->n_br ? n : params->n_br;
    if (!(s = ts_malloc((size_t)cap * sizeof(int32_t)))) {
        st = TS_ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        s[i] = (int32_t)ts_get_u32(&r);
        if (s[i] < (dist == TS_TFHE_SECRET_BINARY ? 0 : -1) || s[i] > 1)
            r.err = TS_EFORMAT;
    }
    if (r.err != TS_OK || (st = ts_tfhe_lwe_key_from_coeffs(s, n, dist, &lk)) != TS_OK) {
        st = r.err != TS_OK ? r.err : st;
        goto out;
    }
    uint32_t nb = ts_get_u32(&r);
    if (r.err != TS_OK || nb != params->n_br) {
        st = TS_EFORMAT;
        goto out;
    }
    for (uint32_t i = 0; i < nb; i++) {
        s[i] = (int32_t)ts_get_u32(&r);
        if (s[i] < -(1 << 20) || s[i] > (1 << 20)) /* a small secret */
            r.err = TS_EFORMAT;
    }
    if ((st = ts_reader_finish(&r)) != TS_OK)
        goto out;
    if ((st = ts_tfhe_rlwe_key_from_coeffs(params, s, rlwe_key)) != TS_OK)
        goto out;
    *lwe_key = lk;
    lk = NULL;
out:
    ts_tfhe_lwe_key_free(lk);
    ts_free_secret(s);
    ts_free_secret(payload);
    return st;
}

/* CKKS objects on the wire (server/ckks_wire.h). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/ckks_wire.h"

#define CT_VERSION        1 /* c_0 .. c_degree, all residues */
#define CT_VERSION_SEEDED 2 /* c_0 residues, then the 32-byte seed of c_1 */

void ts_wire_params_id(const ts_ckks_params_t *p, uint8_t id[TS_SHA256_BYTES])
{
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_bytes(&w, "tessera-ckks-params-v1", 22);
    ts_put_u32(&w, (uint32_t)ts_ckks_params_log_n(p));
    ts_put_u32(&w, (uint32_t)ts_ckks_params_q_count(p));
    for (size_t i = 0; i < ts_ckks_params_q_count(p); i++)
        ts_put_u64(&w, ts_ckks_params_q(p, i));
    ts_put_u32(&w, (uint32_t)ts_ckks_params_p_count(p));
    for (size_t i = 0; i < ts_ckks_params_p_count(p); i++)
        ts_put_u64(&w, ts_ckks_params_p(p, i));
    ts_put_u32(&w, (uint32_t)ts_ckks_params_dnum(p));
    ts_put_u32(&w, (uint32_t)ts_ckks_params_secret(p));
    ts_put_u64(&w, (uint64_t)ts_ckks_params_hamming_weight(p));
    ts_put_f64(&w, ts_ckks_params_sigma(p));
    ts_put_f64(&w, ts_ckks_params_scale_log2(p));
    ts_put_u32(&w, (uint32_t)ts_ckks_params_log_slots(p));
    if (w.err != TS_OK || ts_sha256(w.buf, w.len, id) != TS_OK)
        memset(id, 0, TS_SHA256_BYTES);
    ts_writer_clear(&w);
}

/* ---------------------------------------------------------- preset cache */

typedef struct cached {
    struct cached *next;
    char dir[512], name[64];
    bool insecure_allowed;
    ts_ckks_params_t *params;
    uint8_t id[TS_SHA256_BYTES];
} cached_t;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cached_t *cache;

static bool name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len >= 64 || n[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

ts_status_t ts_wire_params_get(const char *dir, const char *name, bool allow_insecure,
                               ts_ckks_params_t **out, uint8_t id[TS_SHA256_BYTES], char *why,
                               size_t why_size)
{
    *out = NULL;
    if (!name || !name_ok(name)) {
        snprintf(why, why_size, "parameter id must be a preset name ([A-Za-z0-9._-], < 64)");
        return TS_EPARAMS;
    }
    pthread_mutex_lock(&cache_mu);
    for (cached_t *c = cache; c; c = c->next) {
        if (!strcmp(c->dir, dir) && !strcmp(c->name, name) &&
            c->insecure_allowed == allow_insecure) {
            *out = ts_ckks_params_ref(c->params);
            memcpy(id, c->id, TS_SHA256_BYTES);
            pthread_mutex_unlock(&cache_mu);
            return TS_OK;
        }
    }
    pthread_mutex_unlock(&cache_mu);
    char path[700];
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    ts_cfg_error_t err;
    memset(&err, 0, sizeof err);
    ts_ckks_params_t *p = NULL;
    ts_status_t st = ts_ckks_params_load_file(path, allow_insecure, &p, &err);
    if (st != TS_OK) {
        if (st == TS_ESECURITY) {
            ts_ckks_params_literal_t lit;
            bool marked =
                ts_ckks_params_literal_load_file(path, &lit, NULL) == TS_OK && lit.insecure;
            if (marked)
                snprintf(why, why_size,
                         "parameter preset '%s' is marked insecure (test only) and this daemon "
                         "was not started with --insecure-params",
                         name);
            else
                snprintf(why, why_size,
                         "parameter preset '%s' is refused by the 128-bit security gate", name);
        } else if (st == TS_EIO || st == TS_ENOENT) {
            snprintf(why, why_size, "unknown parameter preset '%s'", name);
        } else {
            char e[400];
            ts_cfg_error_format(&err, e, sizeof e);
            snprintf(why, why_size, "parameter preset '%s' cannot be loaded: %s", name,
                     e[0] ? e : ts_strerror(st));
        }
        return st == TS_EIO || st == TS_ECONFIG || st == TS_ENOENT ? TS_EPARAMS : st;
    }
    cached_t *c = ts_calloc(1, sizeof *c);
    if (!c) {
        ts_ckks_params_free(p);
        return TS_ENOMEM;
    }
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->insecure_allowed = allow_insecure;
    c->params = p;
    ts_wire_params_id(p, c->id);
    memcpy(id, c->id, TS_SHA256_BYTES);
    *out = ts_ckks_params_ref(p);
    pthread_mutex_lock(&cache_mu);
    c->next = cache;
    cache = c;
    pthread_mutex_unlock(&cache_mu);
    return TS_OK;
}

/* ------------------------------------------------------------ ciphertexts */

ts_status_t ts_wire_ct_encode(const ts_ckks_ciphertext_t *ct, const uint8_t id[TS_SHA256_BYTES],
                              int zstd_level, uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    ts_ckks_ciphertext_t *c = (ts_ckks_ciphertext_t *)ct; /* poly access is read-only here */
    ts_ckks_params_t *p = ts_ckks_ciphertext_params(c);
    int level = ts_ckks_ciphertext_level(c), degree = ts_ckks_ciphertext_degree(c);
    size_t n = ts_ckks_params_n(p), slots = ts_ckks_ciphertext_slots(c);
    int log_slots = 0;
    while (((size_t)1 << log_slots) < slots)
        log_slots++;
    uint8_t seed[TS_SEED_BYTES];
    bool seeded = ts_ckks_ciphertext_seed(c, seed); /* c_1 travels as its seed */
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u8(&w, seeded ? CT_VERSION_SEEDED : CT_VERSION);
    ts_put_u8(&w, (uint8_t)level);
    ts_put_u8(&w, (uint8_t)degree);
    ts_put_u8(&w, (uint8_t)log_slots);
    ts_put_f64(&w, ts_ckks_ciphertext_scale(c));
    for (int i = 0; i <= (seeded ? 0 : degree); i++) {
        const ts_poly_t *poly = ts_ckks_ciphertext_poly(c, i);
        if (!poly->is_ntt || (int)poly->nq != level + 1) {
            ts_writer_clear(&w);
            return TS_EINVAL;
        }
        for (int j = 0; j <= level; j++)
            ts_put_packed(&w, poly->data + (size_t)j * n, n,
                          ts_serial_width(ts_ckks_params_q(p, (size_t)j)));
    }
    if (seeded)
        ts_put_bytes(&w, seed, TS_SEED_BYTES);
    ts_status_t st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_CKKS_CIPHERTEXT, id, zstd_level, out, size);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_wire_ct_decode(ts_ckks_params_t *p, const uint8_t id[TS_SHA256_BYTES],
                              const void *data, size_t size, int max_degree,
                              ts_ckks_ciphertext_t **out, char *why, size_t why_size)
{
    *out = NULL;
    size_t n = ts_ckks_params_n(p);
    int max_level = ts_ckks_params_max_level(p);
    ts_serial_limits_t lim = {.max_raw_bytes = 16 + (uint64_t)3 * (uint64_t)(max_level + 1) * n * 8,
                              .max_window_log = 23};
    ts_serial_header_t hdr;
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st =
        ts_serial_open(data, size, TS_OBJ_CKKS_CIPHERTEXT, id, &lim, &hdr, &payload, &psize);
    if (st != TS_OK) {
        snprintf(why, why_size, "%s",
                 st == TS_EMISMATCH ? "ciphertext belongs to another parameter set (parameter id)"
                 : st == TS_ELIMIT  ? "ciphertext larger than its parameters allow"
                                    : "not a well-formed ciphertext envelope");
        return st;
    }
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    unsigned version = ts_get_u8(&r);
    int level = ts_get_u8(&r), degree = ts_get_u8(&r), log_slots = ts_get_u8(&r);
    double scale = ts_get_f64(&r);
    ts_ckks_ciphertext_t *ct = NULL;
    bool seeded = version == CT_VERSION_SEEDED;
    uint8_t seed[TS_SEED_BYTES];
    if (r.err != TS_OK || (version != CT_VERSION && !seeded)) {
        snprintf(why, why_size, "unknown ciphertext version");
        st = TS_EFORMAT;
        goto out_free;
    }
    if (level > max_level) {
        snprintf(why, why_size, "level %d beyond the top level %d", level, max_level);
        st = TS_ELEVEL;
        goto out_free;
    }
    if (degree < 1 || degree > max_degree || (seeded && degree != 1) || log_slots < 0 ||
        ((size_t)1 << log_slots) > n / 2) {
        snprintf(why, why_size, "degree %d or slot count 2^%d out of range", degree, log_slots);
        st = TS_EFORMAT;
        goto out_free;
    }
    if (!(scale >= 2.0) || !(scale < ldexp(1.0, 120))) {
        snprintf(why, why_size, "scale out of range");
        st = TS_EFORMAT;
        goto out_free;
    }
    st = ts_ckks_ciphertext_new(p, level, &ct);
    if (st != TS_OK)
        goto out_free;
    if (degree == 2) {
        st = ts_ckks_ciphertext_set_meta(ct, level, 2, scale, (size_t)1 << log_slots);
        if (st != TS_OK)
            goto out_free;
    }
    for (int i = 0; i <= (seeded ? 0 : degree) && r.err == TS_OK; i++) {
        ts_poly_t *poly = ts_ckks_ciphertext_poly(ct, i);
        if (!poly || (int)poly->nq != level + 1) {
            st = TS_EINTERNAL;
            goto out_free;
        }
        poly->is_ntt = true;
        for (int j = 0; j <= level; j++) {
            uint64_t q = ts_ckks_params_q(p, (size_t)j);
            ts_get_packed(&r, poly->data + (size_t)j * n, n, ts_serial_width(q), q);
        }
    }
    if (seeded)
        ts_get_bytes(&r, seed, TS_SEED_BYTES);
    st = ts_reader_finish(&r);
    if (st != TS_OK) {
        snprintf(why, why_size,
                 "ciphertext body malformed (a residue at or above its modulus, "
                 "or wrong length)");
        goto out_free;
    }
    st = ts_ckks_ciphertext_set_meta(ct, level, degree, scale, (size_t)1 << log_slots);
    if (st == TS_OK && seeded)
        st = ts_ckks_ciphertext_set_seeded_c1(ct, seed); /* after set_meta, which unseeds */
    if (st != TS_OK) {
        snprintf(why, why_size, "ciphertext metadata refused");
        goto out_free;
    }
    ts_free(payload);
    *out = ct;
    return TS_OK;
out_free:
    ts_ckks_ciphertext_free(ct);
    ts_free(payload);
    return st;
}

/* -------------------------------------------------------------- public keys */

ts_status_t ts_wire_pk_encode(const ts_ckks_public_key_t *pk, const uint8_t id[TS_SHA256_BYTES],
                              uint8_t **out, size_t *size)
{
    const ts_rlwe_pk_t *r = ts_ckks_public_key_rlwe(pk);
    const ts_poly_t *b = r->b;
    const ts_ring_t *ring = b->ring;
    size_t n = ts_ring_n(ring);
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, b->nq);
    ts_put_u32(&w, b->np);
    ts_put_u8(&w, b->is_ntt);
    for (uint32_t j = 0; j < b->nq + b->np; j++) {
        const ts_modulus_t *m =
            ts_ring_modulus(ring, j < b->nq ? j : ts_ring_q_count(ring) + (j - b->nq));
        if (!m) {
            ts_writer_clear(&w);
            return TS_EINTERNAL;
        }
        ts_put_packed(&w, b->data + (size_t)j * n, n, ts_serial_width(m->q));
    }
    ts_put_bytes(&w, r->seed, TS_SEED_BYTES);
    ts_status_t st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_PUBLIC_KEY, id, 0, out, size);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_wire_pk_check(ts_ckks_params_t *p, const uint8_t id[TS_SHA256_BYTES],
                             const void *data, size_t size, char *why, size_t why_size)
{
    size_t n = ts_ckks_params_n(p), nq_max = ts_ckks_params_q_count(p);
    size_t np_all = ts_ckks_params_p_count(p);
    ts_serial_limits_t lim = {.max_raw_bytes = 64 + (uint64_t)(nq_max + np_all) * n * 8,
                              .max_window_log = 23};
    ts_serial_header_t hdr;
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st =
        ts_serial_open(data, size, TS_OBJ_PUBLIC_KEY, id, &lim, &hdr, &payload, &psize);
    if (st != TS_OK) {
        snprintf(why, why_size, "%s",
                 st == TS_EMISMATCH ? "public key of another parameter set"
                                    : "not a well-formed public key envelope");
        return st;
    }
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    uint32_t nq = ts_get_u32(&r), np = ts_get_u32(&r);
    unsigned is_ntt = ts_get_u8(&r);
    uint64_t *limb = NULL;
    if (r.err != TS_OK || nq < 1 || nq > nq_max || (np != 0 && np != np_all) || is_ntt > 1) {
        snprintf(why, why_size, "public key shape does not fit the parameter set");
        st = TS_EFORMAT;
        goto out;
    }
    limb = ts_malloc(n * sizeof *limb);
    if (!limb) {
        st = TS_ENOMEM;
        goto out;
    }
    for (uint32_t j = 0; j < nq + np && r.err == TS_OK; j++) {
        uint64_t q = j < nq ? ts_ckks_params_q(p, j) : ts_ckks_params_p(p, j - nq);
        ts_get_packed(&r, limb, n, ts_serial_width(q), q);
    }
    uint8_t seed[TS_SEED_BYTES];
    ts_get_bytes(&r, seed, sizeof seed);
    st = ts_reader_finish(&r);
    if (st != TS_OK)
        snprintf(why, why_size,
                 "public key body malformed (a residue at or above its modulus, "
                 "or wrong length)");
out:
    ts_free(limb);
    ts_free(payload);
    return st;
}

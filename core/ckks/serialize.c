/*
 * Serialization of CKKS objects on core/serial (payload layouts in ckks.h).
 *
 * Every reader follows the same order: open the envelope (type, parameter id,
 * digest, a size cap computed from the parameters), read the fixed header
 * fields, check them against the parameters, check that the remaining byte
 * count is exactly what the header implies (before anything is allocated),
 * then read the residues (each checked below its modulus by ts_get_packed).
 */
#include <math.h>
#include <string.h>

#include "core/ckks/ckks_int.h"

#define CT_FORM_FULL   1 /* c_0 .. c_degree */
#define CT_FORM_SEEDED 2 /* c_0, then the seed of c_1 */
#define PT_FORM        1
#define SK_FORM_PACKED 1 /* N ternary coefficients at 2 bits */

/* Little-endian fields into a fixed buffer (no allocation: ids are computed
 * inside every deserializer, also under allocation-failure tests). */
typedef struct {
    uint8_t b[1024];
    size_t len;
} idbuf_t;

static void id_put(idbuf_t *d, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        d->b[d->len++] = (uint8_t)(v >> (8 * i));
}

static void id_put_f64(idbuf_t *d, double x)
{
    uint64_t v;
    memcpy(&v, &x, sizeof v);
    id_put(d, v, 8);
}

void ts_ckks_params_serial_id(const ts_ckks_params_t *p, uint8_t id[TS_SHA256_BYTES])
{
    /* The canonical encoding, byte for byte the one of the wire's first
     * version (so ids of existing key directories stay valid):
     * "tessera-ckks-params-v1", u32 log_n, u32 #Q, u64 q_i, u32 #P, u64 p_i,
     * u32 dnum, u32 secret, u64 h, f64 sigma, f64 scale_log2, u32 log_slots.
     * At most 22 + 4 + 4 + 64 * 8 + 4 + 16 * 8 + 36 bytes. */
    idbuf_t d;
    d.len = 0;
    memcpy(d.b, "tessera-ckks-params-v1", 22);
    d.len = 22;
    id_put(&d, (uint32_t)p->log_n, 4);
    id_put(&d, (uint32_t)p->nq, 4);
    for (size_t i = 0; i < p->nq; i++)
        id_put(&d, p->q[i], 8);
    id_put(&d, (uint32_t)p->np, 4);
    for (size_t i = 0; i < p->np; i++)
        id_put(&d, p->p[i], 8);
    id_put(&d, (uint32_t)p->dnum, 4);
    id_put(&d, (uint32_t)p->secret, 4);
    id_put(&d, (uint64_t)p->h, 8);
    id_put_f64(&d, p->sigma);
    id_put_f64(&d, p->scale_log2);
    id_put(&d, (uint32_t)p->log_slots, 4);
    if (ts_sha256(d.b, d.len, id) != TS_OK)
        memset(id, 0, TS_SHA256_BYTES);
}

/* Modulus of global limb l of the ring (Q primes, then P). */
static uint64_t limb_q(const ts_ckks_params_t *p, size_t l)
{
    return l < p->nq ? p->q[l] : p->p[l - p->nq];
}

/* Packed bytes of one polynomial over Q limbs [0, nq) and P limbs [0, np):
 * each limb is one ts_put_packed run, which ends on a byte boundary. */
static size_t poly_bytes(const ts_ckks_params_t *p, size_t nq, size_t np)
{
    size_t total = 0;
    for (size_t l = 0; l < nq + np; l++) {
        size_t b = 0;
        ts_serial_packed_bytes(p->n, ts_serial_width(limb_q(p, l < nq ? l : p->nq + (l - nq))), &b);
        total += b;
    }
    return total;
}

/* Write limbs of a polynomial: Q limbs 0..nq-1 then P limbs 0..np-1 (off a
 * device one limb at a time through the host). */
static void put_poly(ts_writer_t *w, const ts_ckks_params_t *p, const ts_poly_t *poly, size_t nq,
                     size_t np)
{
    ts_backend_t *be = ts_ring_backend(poly->ring);
    uint64_t *host = NULL;
    if (!be->host_memory && w->err == TS_OK && !(host = ts_malloc(p->n * sizeof(uint64_t))))
        w->err = TS_ENOMEM;
    for (size_t l = 0; l < nq + np && w->err == TS_OK; l++) {
        uint64_t q = limb_q(p, l < nq ? l : p->nq + (l - nq));
        const uint64_t *limb = poly->data + l * p->n;
        if (host) {
            ts_status_t st = ts_backend_download(be, host, limb, p->n * sizeof(uint64_t));
            if (st != TS_OK) {
                w->err = st;
                break;
            }
            limb = host;
        }
        ts_put_packed(w, limb, p->n, ts_serial_width(q));
    }
    ts_free(host);
}

static void get_poly(ts_reader_t *r, const ts_ckks_params_t *p, ts_poly_t *poly, size_t nq,
                     size_t np)
{
    ts_backend_t *be = ts_ring_backend(poly->ring);
    uint64_t *host = NULL;
    if (!be->host_memory && r->err == TS_OK && !(host = ts_malloc(p->n * sizeof(uint64_t))))
        r->err = TS_ENOMEM;
    for (size_t l = 0; l < nq + np && r->err == TS_OK; l++) {
        uint64_t q = limb_q(p, l < nq ? l : p->nq + (l - nq));
        uint64_t *limb = poly->data + l * p->n;
        ts_get_packed(r, host ? host : limb, p->n, ts_serial_width(q), q);
        if (host && r->err == TS_OK)
            r->err = ts_backend_upload(be, limb, host, p->n * sizeof(uint64_t));
    }
    ts_free(host);
}

static ts_status_t seal(ts_writer_t *w, uint16_t type, const ts_ckks_params_t *p, int zstd_level,
                        uint8_t **out, size_t *size)
{
    ts_status_t st = w->err;
    if (st == TS_OK) {
        uint8_t id[TS_SHA256_BYTES];
        ts_ckks_params_serial_id(p, id);
        st = ts_serial_seal(w, type, id, zstd_level, out, size);
    }
    ts_writer_clear(w);
    return st;
}

static ts_status_t open_env(const ts_ckks_params_t *p, const void *data, size_t size, uint16_t type,
                            uint64_t max_raw, uint8_t **payload, size_t *psize)
{
    /* Keys are uniform residues, which zstd cannot shrink: a frame claiming
     * much more than it holds is a decompression bomb (the Galois-key cap
     * alone, N keys, would allow terabytes). */
    ts_serial_header_t peek;
    if (type == TS_OBJ_GALOIS_KEYS || type == TS_OBJ_RELIN_KEY || type == TS_OBJ_PUBLIC_KEY) {
        if (ts_serial_peek(data, size, &peek) == TS_OK && (peek.flags & TS_SERIAL_ZSTD) &&
            peek.raw_bytes > peek.payload_bytes + peek.payload_bytes / 4 + 65536)
            return TS_ELIMIT;
    }
    uint8_t id[TS_SHA256_BYTES];
    ts_ckks_params_serial_id(p, id);
    ts_serial_limits_t lim = {.max_raw_bytes = max_raw, .max_window_log = 0};
    ts_serial_header_t hdr;
    if (!data && size)
        return TS_EINVAL;
    return ts_serial_open(data, size, type, id, &lim, &hdr, payload, psize);
}

/* ------------------------------------------------------------ ciphertexts */

ts_status_t ts_ckks_ciphertext_serialize(const ts_ckks_ciphertext_t *ct, int zstd_level,
                                         uint8_t **out, size_t *size)
{
    if (!ct || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    const ts_ckks_params_t *p = ct->params;
    int level = ts__ckks_level(ct->c[0]);
    bool seeded = ct->seeded && ct->degree == 1;
    for (int i = 0; i <= ct->degree; i++)
        if (!ct->c[i]->is_ntt || (int)ct->c[i]->nq != level + 1 || ct->c[i]->np != 0)
            return TS_EINVAL;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u8(&w, seeded ? CT_FORM_SEEDED : CT_FORM_FULL);
    ts_put_u8(&w, (uint8_t)level);
    ts_put_u8(&w, (uint8_t)ct->degree);
    ts_put_u8(&w, (uint8_t)ct->log_slots);
    ts_put_f64(&w, ct->scale);
    for (int i = 0; i <= (seeded ? 0 : ct->degree); i++)
        put_poly(&w, p, ct->c[i], (size_t)level + 1, 0);
    if (seeded)
        ts_put_bytes(&w, ct->seed, TS_SEED_BYTES);
    return seal(&w, TS_OBJ_CKKS_CIPHERTEXT, p, zstd_level, out, size);
}

/* A scale is plausible when finite, >= 1 and below 2^1000 (log2 stays exact enough). */
static bool scale_ok(double s)
{
    return isfinite(s) && s >= 1.0 && s < ldexp(1.0, 1000);
}

ts_status_t ts_ckks_ciphertext_deserialize(ts_ckks_params_t *p, const void *data, size_t size,
                                           int max_degree, ts_ckks_ciphertext_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!p || max_degree < 1)
        return TS_EINVAL;
    uint64_t max_raw = 12 + TS_SEED_BYTES + 3 * poly_bytes(p, p->nq, 0);
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st = open_env(p, data, size, TS_OBJ_CKKS_CIPHERTEXT, max_raw, &payload, &psize);
    if (st != TS_OK)
        return st;
    ts_ckks_ciphertext_t *ct = NULL;
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    unsigned form = ts_get_u8(&r);
    int level = ts_get_u8(&r), degree = ts_get_u8(&r), log_slots = ts_get_u8(&r);
    double scale = ts_get_f64(&r);
    bool seeded = form == CT_FORM_SEEDED;
    st = TS_EFORMAT;
    if (r.err != TS_OK || (form != CT_FORM_FULL && !seeded))
        goto out_free;
    if ((size_t)level >= p->nq) {
        st = TS_ELEVEL;
        goto out_free;
    }
    if (degree < 1 || degree > 2 || degree > max_degree || (seeded && degree != 1) ||
        log_slots > p->log_n - 1 || !scale_ok(scale))
        goto out_free;
    size_t npoly = seeded ? 1 : (size_t)degree + 1;
    if (ts_reader_left(&r) !=
        npoly * poly_bytes(p, (size_t)level + 1, 0) + (seeded ? TS_SEED_BYTES : 0))
        goto out_free;
    st = ts_ckks_ciphertext_new(p, level, &ct);
    if (st == TS_OK && degree == 2)
        st = ts__ckks_ct_reshape(ct, level, 2);
    if (st != TS_OK)
        goto out_free;
    for (size_t i = 0; i < npoly; i++)
        get_poly(&r, p, ct->c[i], (size_t)level + 1, 0);
    uint8_t seed[TS_SEED_BYTES];
    if (seeded)
        ts_get_bytes(&r, seed, TS_SEED_BYTES);
    st = ts_reader_finish(&r);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(ct, level, degree, scale, (size_t)1 << log_slots);
    if (st == TS_OK && seeded)
        st = ts_ckks_ciphertext_set_seeded_c1(ct, seed); /* after set_meta, which unseeds */
    if (st != TS_OK)
        goto out_free;
    ts_free(payload);
    *out = ct;
    return TS_OK;
out_free:
    ts_ckks_ciphertext_free(ct);
    ts_free(payload);
    return st;
}

/* ------------------------------------------------------------- plaintexts */

ts_status_t ts_ckks_plaintext_serialize(const ts_ckks_plaintext_t *pt, int zstd_level,
                                        uint8_t **out, size_t *size)
{
    if (!pt || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    const ts_ckks_params_t *p = pt->params;
    if (pt->poly->np != 0)
        return TS_EINVAL;
    int level = ts__ckks_level(pt->poly);
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u8(&w, PT_FORM);
    ts_put_u8(&w, (uint8_t)level);
    ts_put_u8(&w, (uint8_t)pt->log_slots);
    ts_put_u8(&w, pt->poly->is_ntt ? 1 : 0);
    ts_put_f64(&w, pt->scale);
    put_poly(&w, p, pt->poly, (size_t)level + 1, 0);
    return seal(&w, TS_OBJ_CKKS_PLAINTEXT, p, zstd_level, out, size);
}

ts_status_t ts_ckks_plaintext_deserialize(ts_ckks_params_t *p, const void *data, size_t size,
                                          ts_ckks_plaintext_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!p)
        return TS_EINVAL;
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st = open_env(p, data, size, TS_OBJ_CKKS_PLAINTEXT, 12 + poly_bytes(p, p->nq, 0),
                              &payload, &psize);
    if (st != TS_OK)
        return st;
    ts_ckks_plaintext_t *pt = NULL;
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    unsigned form = ts_get_u8(&r);
    int level = ts_get_u8(&r), log_slots = ts_get_u8(&r);
    unsigned is_ntt = ts_get_u8(&r);
    double scale = ts_get_f64(&r);
    st = TS_EFORMAT;
    if (r.err != TS_OK || form != PT_FORM || is_ntt > 1 || log_slots > p->log_n - 1 ||
        !scale_ok(scale))
        goto out_free;
    if ((size_t)level >= p->nq) {
        st = TS_ELEVEL;
        goto out_free;
    }
    if (ts_reader_left(&r) != poly_bytes(p, (size_t)level + 1, 0))
        goto out_free;
    st = ts_ckks_plaintext_new(p, level, &pt);
    if (st != TS_OK)
        goto out_free;
    get_poly(&r, p, pt->poly, (size_t)level + 1, 0);
    st = ts_reader_finish(&r);
    if (st != TS_OK)
        goto out_free;
    pt->poly->is_ntt = is_ntt != 0;
    pt->scale = scale;
    pt->log_slots = log_slots;
    ts_free_secret(payload); /* plaintexts may hold client data */
    *out = pt;
    return TS_OK;
out_free:
    ts_ckks_plaintext_free(pt);
    ts_free_secret(payload);
    return st;
}

/* ------------------------------------------------------------ secret keys */

ts_status_t ts_ckks_secret_key_serialize(const ts_ckks_secret_key_t *sk, uint8_t **out,
                                         size_t *size)
{
    if (!sk || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    const ts_rlwe_sk_t *rsk = ts_ckks_secret_key_rlwe(sk);
    const ts_ckks_params_t *p = ts__ckks_secret_key_params(sk);
    uint64_t *v = ts_malloc(p->n * sizeof *v);
    if (!v)
        return TS_ENOMEM;
    for (size_t i = 0; i < p->n; i++)
        v[i] = rsk->coeffs[i] < 0 ? 2 : (uint64_t)rsk->coeffs[i];
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u8(&w, SK_FORM_PACKED);
    ts_put_u8(&w, rsk->sparse ? 1 : 0);
    ts_put_u32(&w, rsk->hamming);
    ts_put_packed(&w, v, p->n, 2);
    ts_free_secret(v);
    return seal(&w, TS_OBJ_SECRET_KEY, p, 0, out, size); /* seal's writer clear wipes */
}

ts_status_t ts_ckks_secret_key_deserialize(ts_ckks_params_t *p, const void *data, size_t size,
                                           ts_ckks_secret_key_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!p)
        return TS_EINVAL;
    size_t body = 0;
    ts_serial_packed_bytes(p->n, 2, &body);
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st = open_env(p, data, size, TS_OBJ_SECRET_KEY, 6 + body, &payload, &psize);
    if (st != TS_OK)
        return st;
    uint64_t *v = NULL;
    int8_t *c = NULL;
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    unsigned form = ts_get_u8(&r), sparse = ts_get_u8(&r);
    uint32_t h = ts_get_u32(&r);
    bool want_sparse = p->secret == TS_CKKS_SECRET_SPARSE_TERNARY;
    st = TS_EFORMAT;
    if (r.err != TS_OK || form != SK_FORM_PACKED || sparse != (want_sparse ? 1u : 0u) || h > p->n ||
        (want_sparse && h != (uint64_t)p->h) || ts_reader_left(&r) != body)
        goto out_free;
    st = TS_ENOMEM;
    v = ts_malloc(p->n * sizeof *v);
    c = ts_malloc(p->n);
    if (!v || !c)
        goto out_free;
    ts_get_packed(&r, v, p->n, 2, 3);
    st = ts_reader_finish(&r);
    if (st != TS_OK)
        goto out_free;
    uint32_t count = 0;
    for (size_t i = 0; i < p->n; i++) {
        c[i] = v[i] == 2 ? -1 : (int8_t)v[i];
        count += v[i] != 0;
    }
    st = TS_EFORMAT;
    if (count != h)
        goto out_free;
    ts_rlwe_sk_t *rsk = NULL;
    st = ts_rlwe_sk_from_coeffs(p->ring, c, &rsk);
    if (st != TS_OK)
        goto out_free;
    rsk->sparse = sparse != 0;
    st = ts__ckks_secret_key_wrap(p, rsk, out);
out_free:
    ts_free_secret(c);
    ts_free_secret(v);
    ts_free_secret(payload);
    return st;
}

/* ------------------------------------------------------------ public keys */

ts_status_t ts_ckks_public_key_serialize(const ts_ckks_public_key_t *pk, int zstd_level,
                                         uint8_t **out, size_t *size)
{
    if (!pk || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    const ts_rlwe_pk_t *r = ts_ckks_public_key_rlwe(pk);
    const ts_ckks_params_t *p = ts__ckks_public_key_params(pk);
    const ts_poly_t *b = r->b;
    if (b->nq > p->nq || (b->np != 0 && b->np != p->np))
        return TS_EINVAL;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, b->nq);
    ts_put_u32(&w, b->np);
    ts_put_u8(&w, b->is_ntt);
    put_poly(&w, p, b, b->nq, b->np);
    ts_put_bytes(&w, r->seed, TS_SEED_BYTES);
    return seal(&w, TS_OBJ_PUBLIC_KEY, p, zstd_level, out, size);
}

ts_status_t ts_ckks_public_key_deserialize(ts_ckks_params_t *p, const void *data, size_t size,
                                           ts_ckks_public_key_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!p)
        return TS_EINVAL;
    size_t body = poly_bytes(p, p->nq, 0) + TS_SEED_BYTES;
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st = open_env(p, data, size, TS_OBJ_PUBLIC_KEY, 9 + body, &payload, &psize);
    if (st != TS_OK)
        return st;
    ts_rlwe_pk_t *pk = NULL;
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    uint32_t nq = ts_get_u32(&r), np = ts_get_u32(&r);
    unsigned is_ntt = ts_get_u8(&r);
    st = TS_EFORMAT; /* keys are made over all Q primes, NTT form (ts_rlwe_pk_new) */
    if (r.err != TS_OK || nq != p->nq || np != 0 || is_ntt != 1 || ts_reader_left(&r) != body)
        goto out_free;
    st = TS_ENOMEM;
    pk = ts_calloc(1, sizeof *pk);
    if (!pk)
        goto out_free;
    st = ts_poly_new(p->ring, nq, 0, true, &pk->b);
    if (st == TS_OK)
        st = ts_poly_new(p->ring, nq, 0, true, &pk->a);
    if (st != TS_OK)
        goto out_free;
    get_poly(&r, p, pk->b, nq, 0);
    ts_get_bytes(&r, pk->seed, TS_SEED_BYTES);
    st = ts_reader_finish(&r);
    if (st == TS_OK)
        st = ts_rlwe_expand_a(pk->seed, 0, pk->a);
    if (st != TS_OK)
        goto out_free;
    ts_free(payload);
    return ts__ckks_public_key_wrap(p, pk, out);
out_free:
    ts_rlwe_pk_free(pk);
    ts_free(payload);
    return st;
}

/* ------------------------------------------------------ key-switching keys */

/* Bytes of one key-switching key after its header, capped at kq Q limbs:
 * ceil(kq / alpha) b polynomials over those limbs and P (kq = nq: a full key). */
static size_t ksk_body_bytes(const ts_ckks_params_t *p, uint32_t kq)
{
    uint32_t alpha;
    if (ts_rlwe_ksk_shape(p->ring, (uint32_t)p->dnum, &alpha) != TS_OK)
        return 0;
    return (size_t)((kq + alpha - 1) / alpha) * poly_bytes(p, kq, p->np);
}

#define KSK_HEADER_BYTES (4 + 4 + 8 + TS_SEED_BYTES)

static void put_ksk(ts_writer_t *w, const ts_ckks_params_t *p, const ts_rlwe_ksk_t *k)
{
    if (k->dnum != (uint32_t)p->dnum || ts_ring_n(k->ring) != p->n) {
        if (w->err == TS_OK)
            w->err = TS_EMISMATCH;
        return;
    }
    ts_put_u32(w, k->dnum);
    ts_put_u32(w, k->kq);
    ts_put_u64(w, k->galois);
    ts_put_bytes(w, k->seed, TS_SEED_BYTES);
    ts_rlwe_ksk_put_body(w, k, false);
}

/* Read one key-switching key; galois_ok: Galois keys (odd element) vs relin (0). */
static ts_status_t get_ksk(ts_reader_t *r, ts_ckks_params_t *p, bool galois, ts_rlwe_ksk_t **out)
{
    *out = NULL;
    uint32_t dnum = ts_get_u32(r);
    uint32_t kq = ts_get_u32(r);
    uint64_t el = ts_get_u64(r);
    uint8_t seed[TS_SEED_BYTES];
    ts_get_bytes(r, seed, TS_SEED_BYTES);
    if (r->err != TS_OK)
        return r->err;
    uint64_t two_n = 2 * (uint64_t)p->n;
    if (dnum != (uint32_t)p->dnum)
        return TS_EFORMAT;
    /* Galois keys may be level-capped; the relinearization key serves every level */
    if (kq < 1 || kq > (uint32_t)p->nq || (!galois && kq != (uint32_t)p->nq))
        return TS_EFORMAT;
    if (galois ? (el >= two_n || !(el & 1) || el == 1) : el != 0)
        return TS_EFORMAT;
    return ts_rlwe_ksk_get_body(r, p->ring, dnum, kq, el, seed, false, out);
}

ts_status_t ts_ckks_relin_key_serialize(const ts_ckks_evalkeys_t *ek, int zstd_level, uint8_t **out,
                                        size_t *size)
{
    if (!ek || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    const ts_rlwe_ksk_t *k = ts_ckks_evalkeys_relin(ek);
    if (!k)
        return TS_ENOKEY;
    const ts_ckks_params_t *p = ts__ckks_evalkeys_params(ek);
    ts_writer_t w;
    ts_writer_init(&w);
    put_ksk(&w, p, k);
    return seal(&w, TS_OBJ_RELIN_KEY, p, zstd_level, out, size);
}

ts_status_t ts_ckks_relin_key_deserialize(ts_ckks_evalkeys_t *ek, const void *data, size_t size)
{
    if (!ek)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts__ckks_evalkeys_params(ek);
    if (p->np == 0)
        return TS_ENOTSUP;
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st =
        open_env(p, data, size, TS_OBJ_RELIN_KEY,
                 KSK_HEADER_BYTES + ksk_body_bytes(p, (uint32_t)p->nq), &payload, &psize);
    if (st != TS_OK)
        return st;
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    ts_rlwe_ksk_t *k = NULL;
    st = get_ksk(&r, p, false, &k);
    if (st == TS_OK)
        st = ts_reader_finish(&r);
    if (st == TS_OK)
        ts__ckks_evalkeys_put_relin(ek, k);
    else
        ts_rlwe_ksk_free(k);
    ts_free(payload);
    return st;
}

/* The rotation step of element k (k = 5^step mod 2N), -1 when k is not a power of 5. */
static int64_t element_step(const ts_ckks_params_t *p, uint64_t k)
{
    for (size_t j = 0; j < p->n / 2; j++)
        if (p->rot_group[j] == k)
            return (int64_t)j;
    return -1;
}

ts_status_t ts_ckks_galois_keys_serialize(const ts_ckks_evalkeys_t *ek, int zstd_level,
                                          uint8_t **out, size_t *size)
{
    if (!ek || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    const ts_ckks_params_t *p = ts__ckks_evalkeys_params(ek);
    size_t count = ts__ckks_evalkeys_galois_count(ek);
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u64(&w, (uint64_t)count);
    for (size_t i = 0; i < count; i++) {
        const ts_rlwe_ksk_t *k = ts__ckks_evalkeys_galois_at(ek, i);
        ts_put_u64(&w, (uint64_t)element_step(p, k->galois));
        put_ksk(&w, p, k);
    }
    return seal(&w, TS_OBJ_GALOIS_KEYS, p, zstd_level, out, size);
}

ts_status_t ts_ckks_galois_keys_deserialize(ts_ckks_evalkeys_t *ek, const void *data, size_t size)
{
    if (!ek)
        return TS_EINVAL;
    ts_ckks_params_t *p = ts__ckks_evalkeys_params(ek);
    if (p->np == 0)
        return TS_ENOTSUP;
    /* at most N distinct odd elements below 2N */
    size_t per_key = 8 + KSK_HEADER_BYTES + ksk_body_bytes(p, (uint32_t)p->nq);
    size_t min_key = 8 + KSK_HEADER_BYTES + ksk_body_bytes(p, 1);
    uint64_t max_raw = 8 + (uint64_t)per_key * p->n;
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st = open_env(p, data, size, TS_OBJ_GALOIS_KEYS, max_raw, &payload, &psize);
    if (st != TS_OK)
        return st;
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    uint64_t count = ts_get_count(&r, p->n);
    ts_rlwe_ksk_t **keys = NULL;
    st = r.err;
    /* keys may be level-capped: a lower bound on the size before allocating the
     * list; each key's exact size is checked before its allocation (get_ksk) */
    if (st == TS_OK &&
        (ts_reader_left(&r) < count * min_key || ts_reader_left(&r) > count * per_key))
        st = TS_EFORMAT;
    if (st == TS_OK && count) {
        keys = ts_calloc((size_t)count, sizeof *keys);
        if (!keys)
            st = TS_ENOMEM;
    }
    for (size_t i = 0; i < count && st == TS_OK; i++) {
        int64_t step = (int64_t)ts_get_u64(&r);
        st = get_ksk(&r, p, true, &keys[i]);
        if (st != TS_OK)
            break;
        /* the listed step must be the element's */
        if (step != element_step(p, keys[i]->galois))
            st = TS_EFORMAT;
        for (size_t j = 0; j < i && st == TS_OK; j++)
            if (keys[j]->galois == keys[i]->galois)
                st = TS_EFORMAT; /* duplicate */
    }
    if (st == TS_OK)
        st = ts_reader_finish(&r);
    size_t i = 0;
    for (; i < count && st == TS_OK; i++) {
        st = ts__ckks_evalkeys_put_galois(ek, keys[i]); /* takes the key, also on failure */
        keys[i] = NULL;
    }
    for (size_t j = 0; keys && j < count; j++)
        ts_rlwe_ksk_free(keys[j]);
    ts_free(keys);
    ts_free(payload);
    return st;
}

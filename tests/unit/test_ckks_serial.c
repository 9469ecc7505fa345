/*
 * CKKS object serialization (core/ckks/serialize.c) at the small insecure
 * presets. Oracles: a loaded object behaves bit for bit like the original
 * (decryption, encryption under the same prng stream, relinearization and
 * rotations give identical residues) and re-serializes to the same bytes;
 * damaged inputs (truncated payloads resealed with a valid digest, flipped
 * bits, hostile header fields, other parameter sets) are refused with an
 * error; failed allocations at every point leave no live block behind.
 */
#include <math.h>

#include "core/ckks/ckks.h"
#include "tests/unit/ts_test.h"

typedef struct {
    ts_ckks_params_t *p;
    ts_prng_t *prng;
    ts_ckks_secret_key_t *sk;
    ts_ckks_public_key_t *pk;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_encoder_t *enc;
    uint8_t id[TS_SHA256_BYTES];
} fx_t;

static const int64_t steps[] = {1, 3, -1};

static ts_ckks_params_t *load_params(const char *name)
{
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s%sconfigs/params/%s.yaml", root ? root : "", root ? "/" : "",
             name);
    ts_log_level_t lv = ts_log_get_level();
    ts_log_set_level(TS_LOG_ERROR);
    ts_cfg_error_t err;
    ts_ckks_params_t *p = NULL;
    ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &p, &err));
    ts_log_set_level(lv);
    return p;
}

static void fx_init(fx_t *f, const char *name, bool evalkeys)
{
    memset(f, 0, sizeof(*f));
    f->p = load_params(name);
    uint8_t seed[TS_SEED_BYTES] = {9, 8, 7};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 1, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_keygen_public(f->sk, f->prng, &f->pk));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    if (evalkeys) {
        ck_assert_ts_ok(ts_ckks_evalkeys_gen_relin(f->ek, f->sk, f->prng));
        ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(f->ek, f->sk, steps, 3, f->prng));
        ck_assert_ts_ok(ts_ckks_evalkeys_gen_conjugate(f->ek, f->sk, f->prng));
    }
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ts_ckks_params_serial_id(f->p, f->id);
}

static void fx_clear(fx_t *f)
{
    ts_ckks_encoder_free(f->enc);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_public_key_free(f->pk);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
}

/* A fresh ciphertext of known values at `level` (pk or seeded sk encryption). */
static ts_ckks_ciphertext_t *make_ct(fx_t *f, int level, bool symmetric)
{
    size_t slots = ts_ckks_params_slots(f->p);
    double *v = ts_malloc(slots * sizeof *v);
    for (size_t i = 0; i < slots; i++)
        v[i] = sin((double)i);
    ts_ckks_ciphertext_t *ct = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f->p, level, &ct));
    if (symmetric) {
        ck_assert_ts_ok(ts_ckks_encrypt_sk_real(f->enc, f->sk, v, slots, 0, level,
                                                ts_ckks_params_scale(f->p), f->prng, NULL, ct));
    } else {
        ts_ckks_plaintext_t *pt = NULL;
        ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, level, &pt));
        ck_assert_ts_ok(
            ts_ckks_encode_real(f->enc, v, slots, 0, level, ts_ckks_params_scale(f->p), pt));
        ck_assert_ts_ok(ts_ckks_encrypt_pk(f->pk, pt, f->prng, ct));
        ts_ckks_plaintext_free(pt);
    }
    ts_free(v);
    return ct;
}

static bool poly_eq(const ts_poly_t *a, const ts_poly_t *b)
{
    return a->nq == b->nq && a->np == b->np && a->is_ntt == b->is_ntt && ts_poly_equal(a, b);
}

static bool ct_eq(ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *b)
{
    if (ts_ckks_ciphertext_level(a) != ts_ckks_ciphertext_level(b) ||
        ts_ckks_ciphertext_degree(a) != ts_ckks_ciphertext_degree(b) ||
        ts_ckks_ciphertext_scale(a) != ts_ckks_ciphertext_scale(b) ||
        ts_ckks_ciphertext_slots(a) != ts_ckks_ciphertext_slots(b))
        return false;
    for (int i = 0; i <= ts_ckks_ciphertext_degree(a); i++)
        if (!poly_eq(ts_ckks_ciphertext_poly(a, i), ts_ckks_ciphertext_poly(b, i)))
            return false;
    return true;
}

/* Decrypt both and compare the plaintext residues bit for bit. */
static void assert_same_decryption(const ts_ckks_secret_key_t *sk, fx_t *f,
                                   const ts_ckks_ciphertext_t *a, const ts_ckks_ciphertext_t *b)
{
    ts_ckks_plaintext_t *pa = NULL, *pb = NULL;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, ts_ckks_params_max_level(f->p), &pa));
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, ts_ckks_params_max_level(f->p), &pb));
    ck_assert_ts_ok(ts_ckks_decrypt(f->sk, a, pa));
    ck_assert_ts_ok(ts_ckks_decrypt(sk, b, pb));
    ck_assert(poly_eq(ts_ckks_plaintext_poly(pa), ts_ckks_plaintext_poly(pb)));
    ts_ckks_plaintext_free(pa);
    ts_ckks_plaintext_free(pb);
}

/* Reseal a (damaged) payload under the right type and id, so the body parser is reached. */
static void reseal(const uint8_t *payload, size_t len, uint16_t type, const uint8_t *id,
                   uint8_t **out, size_t *size)
{
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_bytes(&w, payload, len);
    ck_assert_ts_ok(ts_serial_seal(&w, type, id, 0, out, size));
    ts_writer_clear(&w);
}

static void open_raw(const uint8_t *data, size_t size, uint8_t **payload, size_t *psize,
                     uint16_t *type)
{
    ts_serial_header_t h;
    ck_assert_ts_ok(ts_serial_open(data, size, TS_OBJ_ANY, NULL, NULL, &h, payload, psize));
    *type = h.type;
}

/* Load `data` as the object of its type; returns the status (object freed). */
static ts_status_t load_any(fx_t *f, const uint8_t *data, size_t size)
{
    ts_serial_header_t h;
    ts_status_t st = ts_serial_peek(data, size, &h);
    if (st != TS_OK)
        return st;
    switch (h.type) {
    case TS_OBJ_CKKS_CIPHERTEXT: {
        ts_ckks_ciphertext_t *ct = NULL;
        st = ts_ckks_ciphertext_deserialize(f->p, data, size, 2, &ct);
        ts_ckks_ciphertext_free(ct);
        return st;
    }
    case TS_OBJ_CKKS_PLAINTEXT: {
        ts_ckks_plaintext_t *pt = NULL;
        st = ts_ckks_plaintext_deserialize(f->p, data, size, &pt);
        ts_ckks_plaintext_free(pt);
        return st;
    }
    case TS_OBJ_SECRET_KEY: {
        ts_ckks_secret_key_t *sk = NULL;
        st = ts_ckks_secret_key_deserialize(f->p, data, size, &sk);
        ts_ckks_secret_key_free(sk);
        return st;
    }
    case TS_OBJ_PUBLIC_KEY: {
        ts_ckks_public_key_t *pk = NULL;
        st = ts_ckks_public_key_deserialize(f->p, data, size, &pk);
        ts_ckks_public_key_free(pk);
        return st;
    }
    case TS_OBJ_RELIN_KEY:
    case TS_OBJ_GALOIS_KEYS: {
        ts_ckks_evalkeys_t *ek = NULL;
        st = ts_ckks_evalkeys_new(f->p, &ek);
        if (st != TS_OK)
            return st;
        st = h.type == TS_OBJ_RELIN_KEY ? ts_ckks_relin_key_deserialize(ek, data, size)
                                        : ts_ckks_galois_keys_deserialize(ek, data, size);
        ts_ckks_evalkeys_free(ek);
        return st;
    }
    default:
        return TS_EFORMAT;
    }
}

/* ---------------------------------------------------------- round trips */

START_TEST(test_ct_roundtrip)
{
    fx_t f;
    fx_init(&f, "test-n10", true);
    int top = ts_ckks_params_max_level(f.p);
    for (int level = 0; level <= top; level += top) {
        for (int sym = 0; sym < 2; sym++) {
            ts_ckks_ciphertext_t *ct = make_ct(&f, level, sym);
            for (int z = 0; z <= 3; z += 3) {
                uint8_t *b = NULL, *b2 = NULL;
                size_t n = 0, n2 = 0;
                ck_assert_ts_ok(ts_ckks_ciphertext_serialize(ct, z, &b, &n));
                ts_ckks_ciphertext_t *back = NULL;
                ck_assert_ts_ok(ts_ckks_ciphertext_deserialize(f.p, b, n, 1, &back));
                ck_assert(ct_eq(ct, back));
                uint8_t s1[TS_SEED_BYTES], s2[TS_SEED_BYTES];
                ck_assert_int_eq(ts_ckks_ciphertext_seed(ct, s1), sym);
                ck_assert_int_eq(ts_ckks_ciphertext_seed(back, s2), sym);
                assert_same_decryption(f.sk, &f, ct, back);
                ck_assert_ts_ok(ts_ckks_ciphertext_serialize(back, z, &b2, &n2));
                ck_assert_uint_eq(n, n2);
                ck_assert(!memcmp(b, b2, n));
                ts_free(b);
                ts_free(b2);
                ts_ckks_ciphertext_free(back);
            }
            ts_ckks_ciphertext_free(ct);
        }
    }
    fx_clear(&f);
}
END_TEST

START_TEST(test_ct_seeded_smaller)
{
    fx_t f;
    fx_init(&f, "test-n10", false);
    int top = ts_ckks_params_max_level(f.p);
    ts_ckks_ciphertext_t *ct = make_ct(&f, top, true);
    uint8_t *b = NULL, *full = NULL;
    size_t n = 0, nfull = 0;
    ck_assert_ts_ok(ts_ckks_ciphertext_serialize(ct, 0, &b, &n));
    /* set_meta forgets the seed: the same ciphertext in full form */
    ck_assert_ts_ok(ts_ckks_ciphertext_set_meta(ct, top, 1, ts_ckks_ciphertext_scale(ct),
                                                ts_ckks_ciphertext_slots(ct)));
    ck_assert_ts_ok(ts_ckks_ciphertext_serialize(ct, 0, &full, &nfull));
    size_t limb = 0, body = 0;
    for (int l = 0; l <= top; l++) {
        ck_assert(ts_serial_packed_bytes(ts_ckks_params_n(f.p),
                                         ts_serial_width(ts_ckks_params_q(f.p, (size_t)l)), &limb));
        body += limb;
    }
    /* exact sizes: header + 12 bytes + packed residues (+ seed) */
    ck_assert_uint_eq(n, TS_SERIAL_HEADER_BYTES + 12 + body + TS_SEED_BYTES);
    ck_assert_uint_eq(nfull, TS_SERIAL_HEADER_BYTES + 12 + 2 * body);
    ck_assert_uint_lt(n, nfull);
    ts_ckks_ciphertext_t *a = NULL, *c = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_deserialize(f.p, b, n, 1, &a));
    ck_assert_ts_ok(ts_ckks_ciphertext_deserialize(f.p, full, nfull, 1, &c));
    ck_assert(ct_eq(a, c)); /* the seed regenerates the same c_1 */
    ts_ckks_ciphertext_free(a);
    ts_ckks_ciphertext_free(c);
    ts_free(b);
    ts_free(full);
    ts_ckks_ciphertext_free(ct);
    fx_clear(&f);
}
END_TEST

START_TEST(test_keys_roundtrip)
{
    fx_t f;
    fx_init(&f, "test-n10", true);
    int top = ts_ckks_params_max_level(f.p);
    /* secret key: decrypts identically, re-serializes to the same bytes */
    uint8_t *b = NULL, *b2 = NULL;
    size_t n = 0, n2 = 0;
    ck_assert_ts_ok(ts_ckks_secret_key_serialize(f.sk, &b, &n));
    ts_ckks_secret_key_t *sk = NULL;
    ck_assert_ts_ok(ts_ckks_secret_key_deserialize(f.p, b, n, &sk));
    ck_assert_ts_ok(ts_ckks_secret_key_serialize(sk, &b2, &n2));
    ck_assert(n == n2 && !memcmp(b, b2, n));
    ts_free_secret(b);
    ts_free_secret(b2);
    ts_ckks_ciphertext_t *ct = make_ct(&f, top, false);
    assert_same_decryption(sk, &f, ct, ct);

    /* public key: encryption under the same prng stream gives the same bits */
    ck_assert_ts_ok(ts_ckks_public_key_serialize(f.pk, 0, &b, &n));
    ts_ckks_public_key_t *pk = NULL;
    ck_assert_ts_ok(ts_ckks_public_key_deserialize(f.p, b, n, &pk));
    ck_assert(poly_eq(ts_ckks_public_key_rlwe(pk)->a, ts_ckks_public_key_rlwe(f.pk)->a));
    ck_assert(poly_eq(ts_ckks_public_key_rlwe(pk)->b, ts_ckks_public_key_rlwe(f.pk)->b));
    ts_free(b);

    /* evaluation keys: relinearization and every rotation bit for bit */
    ts_ckks_evalkeys_t *ek = NULL;
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f.p, &ek));
    ck_assert_ts_ok(ts_ckks_relin_key_serialize(f.ek, 0, &b, &n));
    ck_assert_ts_ok(ts_ckks_relin_key_deserialize(ek, b, n));
    ck_assert_ts_ok(ts_ckks_relin_key_serialize(ek, 0, &b2, &n2));
    ck_assert(n == n2 && !memcmp(b, b2, n));
    ts_free(b);
    ts_free(b2);
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(f.ek, 0, &b, &n));
    ck_assert_ts_ok(ts_ckks_galois_keys_deserialize(ek, b, n));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(ek, 0, &b2, &n2));
    ck_assert(n == n2 && !memcmp(b, b2, n));
    ts_free(b);
    ts_free(b2);
    for (size_t i = 0; i < 3; i++)
        ck_assert(ts_ckks_evalkeys_has_rotation(ek, steps[i]));
    ck_assert(ts_ckks_evalkeys_has_conjugate(ek));

    ts_ckks_evaluator_t *ev0 = NULL, *ev1 = NULL;
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, f.ek, &ev0));
    ck_assert_ts_ok(ts_ckks_evaluator_new(f.p, ek, &ev1));
    ts_ckks_ciphertext_t *r0 = NULL, *r1 = NULL;
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, top, &r0));
    ck_assert_ts_ok(ts_ckks_ciphertext_new(f.p, top, &r1));
    ck_assert_ts_ok(ts_ckks_mul_relin(ev0, ct, ct, r0));
    ck_assert_ts_ok(ts_ckks_mul_relin(ev1, ct, ct, r1));
    ck_assert(ct_eq(r0, r1));
    for (size_t i = 0; i < 3; i++) {
        ck_assert_ts_ok(ts_ckks_rotate(ev0, ct, steps[i], r0));
        ck_assert_ts_ok(ts_ckks_rotate(ev1, ct, steps[i], r1));
        ck_assert(ct_eq(r0, r1));
    }
    ck_assert_ts_ok(ts_ckks_conjugate(ev0, ct, r0));
    ck_assert_ts_ok(ts_ckks_conjugate(ev1, ct, r1));
    ck_assert(ct_eq(r0, r1));
    /* a degree-2 ciphertext round trips too (max_degree 2), and is refused at 1 */
    ck_assert_ts_ok(ts_ckks_mul(ev0, ct, ct, r0));
    ck_assert_ts_ok(ts_ckks_ciphertext_serialize(r0, 0, &b, &n));
    ts_ckks_ciphertext_t *d2 = NULL;
    ck_assert_ts_status(ts_ckks_ciphertext_deserialize(f.p, b, n, 1, &d2), TS_EFORMAT);
    ck_assert_ts_ok(ts_ckks_ciphertext_deserialize(f.p, b, n, 2, &d2));
    ck_assert(ct_eq(r0, d2));
    ts_ckks_ciphertext_free(d2);
    ts_free(b);

    ts_ckks_ciphertext_free(r0);
    ts_ckks_ciphertext_free(r1);
    ts_ckks_evaluator_free(ev0);
    ts_ckks_evaluator_free(ev1);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_public_key_free(pk);
    ts_ckks_secret_key_free(sk);
    ts_ckks_ciphertext_free(ct);
    fx_clear(&f);
}
END_TEST

START_TEST(test_sparse_secret_and_plaintext)
{
    fx_t f;
    fx_init(&f, "test-n11-sparse", false);
    uint8_t *b = NULL;
    size_t n = 0;
    ck_assert_ts_ok(ts_ckks_secret_key_serialize(f.sk, &b, &n));
    ts_ckks_secret_key_t *sk = NULL;
    ck_assert_ts_ok(ts_ckks_secret_key_deserialize(f.p, b, n, &sk));
    ck_assert_uint_eq(ts_ckks_secret_key_rlwe(sk)->hamming,
                      (uint32_t)ts_ckks_params_hamming_weight(f.p));
    ck_assert(ts_ckks_secret_key_rlwe(sk)->sparse);
    ts_ckks_ciphertext_t *ct = make_ct(&f, 1, false);
    assert_same_decryption(sk, &f, ct, ct);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_secret_key_free(sk);
    ts_free_secret(b);

    ts_ckks_plaintext_t *pt = NULL, *back = NULL;
    double v[4] = {0.5, -0.25, 1, 2};
    ck_assert_ts_ok(ts_ckks_plaintext_new(f.p, 1, &pt));
    ck_assert_ts_ok(ts_ckks_encode_real(f.enc, v, 4, 4, 1, ldexp(1, 30), pt));
    ck_assert_ts_ok(ts_ckks_plaintext_serialize(pt, 1, &b, &n));
    ck_assert_ts_ok(ts_ckks_plaintext_deserialize(f.p, b, n, &back));
    ck_assert(poly_eq(ts_ckks_plaintext_poly(pt), ts_ckks_plaintext_poly(back)));
    ck_assert(ts_ckks_plaintext_scale(pt) == ts_ckks_plaintext_scale(back));
    ck_assert_uint_eq(ts_ckks_plaintext_slots(back), 4);
    ts_free(b);
    ts_ckks_plaintext_free(pt);
    ts_ckks_plaintext_free(back);
    fx_clear(&f);
}
END_TEST

/* ------------------------------------------------------------- tampering */

/* All serialized objects of a fixture with one rotation key (small enough to scan). */
typedef struct {
    uint8_t *b[7];
    size_t n[7];
    int count;
} objs_t;

static void make_objs(fx_t *f, objs_t *o)
{
    memset(o, 0, sizeof *o);
    ts_ckks_ciphertext_t *ct = make_ct(f, 0, false), *cs = make_ct(f, 1, true);
    ck_assert_ts_ok(ts_ckks_ciphertext_serialize(ct, 0, &o->b[0], &o->n[0]));
    ck_assert_ts_ok(ts_ckks_ciphertext_serialize(cs, 0, &o->b[1], &o->n[1]));
    ck_assert_ts_ok(ts_ckks_secret_key_serialize(f->sk, &o->b[2], &o->n[2]));
    ck_assert_ts_ok(ts_ckks_public_key_serialize(f->pk, 0, &o->b[3], &o->n[3]));
    ck_assert_ts_ok(ts_ckks_relin_key_serialize(f->ek, 0, &o->b[4], &o->n[4]));
    ck_assert_ts_ok(ts_ckks_galois_keys_serialize(f->ek, 0, &o->b[5], &o->n[5]));
    ts_ckks_plaintext_t *pt = NULL;
    ck_assert_ts_ok(ts_ckks_plaintext_new(f->p, 0, &pt));
    ck_assert_ts_ok(ts_ckks_plaintext_serialize(pt, 0, &o->b[6], &o->n[6]));
    ts_ckks_plaintext_free(pt);
    o->count = 7;
    ts_ckks_ciphertext_free(ct);
    ts_ckks_ciphertext_free(cs);
}

static void free_objs(objs_t *o)
{
    for (int i = 0; i < o->count; i++)
        ts_free_secret(o->b[i]);
}

static void fx_small_keys(fx_t *f)
{
    memset(f, 0, sizeof(*f));
    f->p = load_params("test-n10");
    uint8_t seed[TS_SEED_BYTES] = {3};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 2, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_keygen_public(f->sk, f->prng, &f->pk));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_relin(f->ek, f->sk, f->prng));
    int64_t one = 1;
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(f->ek, f->sk, &one, 1, f->prng));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->enc));
    ts_ckks_params_serial_id(f->p, f->id);
}

START_TEST(test_truncation)
{
    fx_t f;
    fx_small_keys(&f);
    objs_t o;
    make_objs(&f, &o);
    for (int i = 0; i < o.count; i++) {
        ck_assert_ts_ok(load_any(&f, o.b[i], o.n[i]));
        /* the envelope: every shorter length */
        for (size_t len = 0; len < o.n[i]; len++)
            ck_assert_int_ne(load_any(&f, o.b[i], len), TS_OK);
        /* the body: payloads cut short and resealed with a valid digest. Every
         * length for the small objects; for keys every length of the headers
         * and a stride through the residues (each try hashes the payload). */
        uint8_t *pl = NULL;
        size_t pn = 0;
        uint16_t type;
        open_raw(o.b[i], o.n[i], &pl, &pn, &type);
        size_t stride = pn > 40000 ? 997 : (ts_test_quick() ? 13 : 1);
        for (size_t len = 0; len < pn; len += (len < 128 || len + 128 > pn) ? 1 : stride) {
            uint8_t *e = NULL;
            size_t en = 0;
            reseal(pl, len, type, f.id, &e, &en);
            ck_assert_msg(load_any(&f, e, en) != TS_OK, "object %d cut at %zu of %zu accepted", i,
                          len, pn);
            ts_free(e);
        }
        /* one byte too many */
        uint8_t *longer = ts_malloc(pn + 1);
        memcpy(longer, pl, pn);
        longer[pn] = 0;
        uint8_t *e = NULL;
        size_t en = 0;
        reseal(longer, pn + 1, type, f.id, &e, &en);
        ck_assert_int_ne(load_any(&f, e, en), TS_OK);
        ts_free(e);
        ts_free_secret(longer);
        ts_free_secret(pl);
    }
    free_objs(&o);
    fx_clear(&f);
}
END_TEST

START_TEST(test_bit_flips)
{
    fx_t f;
    fx_small_keys(&f);
    objs_t o;
    make_objs(&f, &o);
    uint8_t seed[TS_SEED_BYTES] = {5};
    ts_prng_t *rng = NULL;
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 77, &rng));
    int tries = ts_test_quick() ? 50 : 300;
    for (int i = 0; i < o.count; i++) {
        /* anywhere in the envelope: refused (the digest covers the payload) */
        for (int t = 0; t < tries; t++) {
            uint64_t pos = 0;
            ck_assert_ts_ok(ts_prng_u64(rng, &pos));
            pos %= o.n[i] * 8;
            o.b[i][pos / 8] ^= (uint8_t)(1u << (pos % 8));
            ck_assert_msg(load_any(&f, o.b[i], o.n[i]) != TS_OK, "object %d bit %llu", i,
                          (unsigned long long)pos);
            o.b[i][pos / 8] ^= (uint8_t)(1u << (pos % 8));
        }
        /* in the payload's header fields, resealed: refused, or loads cleanly */
        uint8_t *pl = NULL;
        size_t pn = 0;
        uint16_t type;
        open_raw(o.b[i], o.n[i], &pl, &pn, &type);
        size_t hdr = pn < 48 ? pn : 48;
        for (size_t bit = 0; bit < hdr * 8; bit++) {
            pl[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            uint8_t *e = NULL;
            size_t en = 0;
            reseal(pl, pn, type, f.id, &e, &en);
            (void)load_any(&f, e, en); /* must not crash or leak (ASan) */
            ts_free(e);
            pl[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        ts_free_secret(pl);
    }
    ts_prng_free(rng);
    free_objs(&o);
    fx_clear(&f);
}
END_TEST

/* Build a ciphertext payload by hand. */
static void hostile_ct(fx_t *f, uint8_t form, uint8_t level, uint8_t degree, uint8_t log_slots,
                       double scale, uint64_t fill, ts_status_t want)
{
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u8(&w, form);
    ts_put_u8(&w, level);
    ts_put_u8(&w, degree);
    ts_put_u8(&w, log_slots);
    ts_put_f64(&w, scale);
    size_t n = ts_ckks_params_n(f->p);
    uint64_t *v = ts_malloc(n * sizeof *v);
    for (int i = 0; i < (degree ? degree : 1) + 1; i++)
        for (int l = 0; l <= level && (size_t)l < ts_ckks_params_q_count(f->p); l++) {
            uint64_t q = ts_ckks_params_q(f->p, (size_t)l);
            for (size_t j = 0; j < n; j++)
                v[j] = fill == UINT64_MAX ? q : fill;
            ts_put_packed(&w, v, n, ts_serial_width(q));
        }
    ts_free(v);
    uint8_t *e = NULL;
    size_t en = 0;
    ck_assert_ts_ok(ts_serial_seal(&w, TS_OBJ_CKKS_CIPHERTEXT, f->id, 0, &e, &en));
    ts_writer_clear(&w);
    ts_ckks_ciphertext_t *ct = NULL;
    ck_assert_ts_status(ts_ckks_ciphertext_deserialize(f->p, e, en, 2, &ct), want);
    ck_assert(want == TS_OK || ct == NULL);
    ts_ckks_ciphertext_free(ct);
    ts_free(e);
}

START_TEST(test_hostile_fields)
{
    fx_t f;
    fx_init(&f, "test-n10", false);
    double s = ldexp(1, 40);
    hostile_ct(&f, 1, 1, 1, 9, s, 5, TS_OK); /* the builder itself is right */
    hostile_ct(&f, 3, 1, 1, 9, s, 5, TS_EFORMAT);
    hostile_ct(&f, 1, 9, 1, 9, s, 5, TS_ELEVEL);
    hostile_ct(&f, 1, 1, 0, 9, s, 5, TS_EFORMAT);
    hostile_ct(&f, 1, 1, 3, 9, s, 5, TS_EFORMAT);
    hostile_ct(&f, 1, 1, 1, 10, s, 5, TS_EFORMAT); /* more slots than N/2 */
    hostile_ct(&f, 1, 1, 1, 9, 0.5, 5, TS_EFORMAT);
    hostile_ct(&f, 1, 1, 1, 9, -s, 5, TS_EFORMAT);
    hostile_ct(&f, 1, 1, 1, 9, INFINITY, 5, TS_EFORMAT);
    hostile_ct(&f, 1, 1, 1, 9, NAN, 5, TS_EFORMAT);
    hostile_ct(&f, 1, 1, 1, 9, s, UINT64_MAX, TS_EFORMAT); /* residues = q */
    /* a zstd bomb where keys (incompressible residues) are expected */
    ts_writer_t w;
    ts_writer_init(&w);
    uint8_t *zeros = ts_calloc(1, 1 << 20);
    ts_put_bytes(&w, zeros, 1 << 20);
    ts_free(zeros);
    uint8_t *e = NULL;
    size_t en = 0;
    ck_assert_ts_ok(ts_serial_seal(&w, TS_OBJ_GALOIS_KEYS, f.id, 1, &e, &en));
    ts_writer_clear(&w);
    ck_assert_uint_lt(en, 1 << 16);
    ck_assert_ts_status(ts_ckks_galois_keys_deserialize(f.ek, e, en), TS_ELIMIT);
    ts_free(e);
    fx_clear(&f);
}
END_TEST

START_TEST(test_wrong_params)
{
    fx_t f;
    fx_small_keys(&f);
    objs_t o;
    make_objs(&f, &o);
    fx_t g;
    fx_init(&g, "test-n11", false);
    for (int i = 0; i < o.count; i++)
        ck_assert_ts_status(load_any(&g, o.b[i], o.n[i]), TS_EMISMATCH);
    /* the wrong type is refused too */
    ts_ckks_public_key_t *pk = NULL;
    ck_assert_int_ne(ts_ckks_public_key_deserialize(f.p, o.b[0], o.n[0], &pk), TS_OK);
    ck_assert_ptr_null(pk);
    fx_clear(&g);
    free_objs(&o);
    fx_clear(&f);
}
END_TEST

START_TEST(test_alloc_failures)
{
    fx_t f;
    fx_small_keys(&f);
    objs_t o;
    make_objs(&f, &o);
    for (int i = 0; i < o.count; i++) {
        int64_t live = ts_alloc_live();
        bool done = false;
        for (uint64_t k = 1; !done && k < 10000; k++) {
            ts_alloc_fail_after(k, false);
            ts_status_t st = load_any(&f, o.b[i], o.n[i]);
            ts_alloc_fail_after(0, false);
            ck_assert_int_eq(ts_alloc_live(), live);
            if (st == TS_OK)
                done = true;
            else
                ck_assert_msg(st == TS_ENOMEM, "object %d, allocation %llu: %s", i,
                              (unsigned long long)k, ts_strerror(st));
        }
        ck_assert(done);
    }
    /* serializers too */
    ts_ckks_ciphertext_t *ct = make_ct(&f, 1, true);
    int64_t live = ts_alloc_live();
    for (uint64_t k = 1; k < 100; k++) {
        uint8_t *b = NULL;
        size_t n = 0;
        ts_alloc_fail_after(k, false);
        ts_status_t st = ts_ckks_ciphertext_serialize(ct, 3, &b, &n);
        ts_alloc_fail_after(0, false);
        ts_free(b);
        ck_assert_int_eq(ts_alloc_live(), live);
        if (st == TS_OK)
            break;
        ck_assert_ts_status(st, TS_ENOMEM);
    }
    ts_ckks_ciphertext_free(ct);
    free_objs(&o);
    fx_clear(&f);
}
END_TEST

TS_TEST_SUITE(ckks_serial)
{
    Suite *s = suite_create("ckks_serial");
    TCase *tc = ts_tcase("serial", 0);
    tcase_add_test(tc, test_ct_roundtrip);
    tcase_add_test(tc, test_ct_seeded_smaller);
    tcase_add_test(tc, test_keys_roundtrip);
    tcase_add_test(tc, test_sparse_secret_and_plaintext);
    tcase_add_test(tc, test_truncation);
    tcase_add_test(tc, test_bit_flips);
    tcase_add_test(tc, test_hostile_fields);
    tcase_add_test(tc, test_wrong_params);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(s, tc);
    return s;
}

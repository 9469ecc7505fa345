/*
 * Keys, encryption, decryption and key switching (relinearization, rotations)
 * for CKKS, on top of core/rlwe. Until core/rlwe lands these entry points
 * return TS_ENOIMPL.
 */
#include "core/ckks/ckks_int.h"

ts_status_t ts__ckks_ks_scratch_new(ts_ckks_evaluator_t *ev)
{
    (void)ev;
    return TS_OK;
}

void ts__ckks_ks_scratch_free(ts_ckks_evaluator_t *ev)
{
    (void)ev;
}

ts_status_t ts_ckks_keygen_secret(ts_ckks_params_t *params, ts_prng_t *prng,
                                  ts_ckks_secret_key_t **out)
{
    (void)params;
    (void)prng;
    if (out)
        *out = NULL;
    return TS_ENOIMPL;
}

void ts_ckks_secret_key_free(ts_ckks_secret_key_t *sk)
{
    (void)sk;
}

ts_status_t ts_ckks_keygen_public(const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                  const uint8_t *seed, ts_ckks_public_key_t **out)
{
    (void)sk;
    (void)prng;
    (void)seed;
    if (out)
        *out = NULL;
    return TS_ENOIMPL;
}

void ts_ckks_public_key_free(ts_ckks_public_key_t *pk)
{
    (void)pk;
}

ts_status_t ts_ckks_evalkeys_new(ts_ckks_params_t *params, ts_ckks_evalkeys_t **out)
{
    (void)params;
    if (out)
        *out = NULL;
    return TS_ENOIMPL;
}

void ts_ckks_evalkeys_free(ts_ckks_evalkeys_t *ek)
{
    (void)ek;
}

ts_status_t ts_ckks_evalkeys_gen_relin(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                       ts_prng_t *prng)
{
    (void)ek;
    (void)sk;
    (void)prng;
    return TS_ENOIMPL;
}

ts_status_t ts_ckks_evalkeys_gen_rotations(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                           const int64_t *steps, size_t count, ts_prng_t *prng)
{
    (void)ek;
    (void)sk;
    (void)steps;
    (void)count;
    (void)prng;
    return TS_ENOIMPL;
}

ts_status_t ts_ckks_evalkeys_gen_conjugate(ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk,
                                           ts_prng_t *prng)
{
    (void)ek;
    (void)sk;
    (void)prng;
    return TS_ENOIMPL;
}

bool ts_ckks_evalkeys_has_relin(const ts_ckks_evalkeys_t *ek)
{
    (void)ek;
    return false;
}

bool ts_ckks_evalkeys_has_rotation(const ts_ckks_evalkeys_t *ek, int64_t step)
{
    (void)ek;
    (void)step;
    return false;
}

ts_status_t ts_ckks_encrypt_pk(const ts_ckks_public_key_t *pk, const ts_ckks_plaintext_t *pt,
                               ts_prng_t *prng, ts_ckks_ciphertext_t *ct)
{
    (void)pk;
    (void)pt;
    (void)prng;
    (void)ct;
    return TS_ENOIMPL;
}

ts_status_t ts_ckks_encrypt_sk(const ts_ckks_secret_key_t *sk, const ts_ckks_plaintext_t *pt,
                               ts_prng_t *prng, const uint8_t *seed, ts_ckks_ciphertext_t *ct)
{
    (void)sk;
    (void)pt;
    (void)prng;
    (void)seed;
    (void)ct;
    return TS_ENOIMPL;
}

bool ts_ckks_ciphertext_seed(const ts_ckks_ciphertext_t *ct, uint8_t seed[TS_SEED_BYTES])
{
    (void)ct;
    (void)seed;
    return false;
}

ts_status_t ts_ckks_decrypt(const ts_ckks_secret_key_t *sk, const ts_ckks_ciphertext_t *ct,
                            ts_ckks_plaintext_t *pt)
{
    (void)sk;
    (void)ct;
    (void)pt;
    return TS_ENOIMPL;
}

ts_status_t ts_ckks_relinearize(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                ts_ckks_ciphertext_t *out)
{
    (void)ev;
    (void)a;
    (void)out;
    return TS_ENOIMPL;
}

ts_status_t ts_ckks_mul_relin(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              const ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = ts_ckks_mul(ev, a, b, out);
    if (st == TS_OK)
        st = ts_ckks_relinearize(ev, out, out);
    return st;
}

ts_status_t ts_ckks_rotate(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a, int64_t step,
                           ts_ckks_ciphertext_t *out)
{
    (void)ev;
    (void)a;
    (void)step;
    (void)out;
    return TS_ENOIMPL;
}

ts_status_t ts_ckks_conjugate(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                              ts_ckks_ciphertext_t *out)
{
    (void)ev;
    (void)a;
    (void)out;
    return TS_ENOIMPL;
}

ts_status_t ts_ckks_rotate_hoisted(ts_ckks_evaluator_t *ev, const ts_ckks_ciphertext_t *a,
                                   const int64_t *steps, size_t count,
                                   ts_ckks_ciphertext_t *const *outs)
{
    (void)ev;
    (void)a;
    (void)steps;
    (void)count;
    (void)outs;
    return TS_ENOIMPL;
}

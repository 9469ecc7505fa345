/*
 * libFuzzer target: core/ckks's deserializers (ciphertext, plaintext, secret,
 * public, relinearization and Galois keys) on arbitrary bytes against the
 * small test preset. The first input byte picks the object type and whether
 * the envelope is relabelled with the right parameter id and type and
 * resealed (so the body parsers are reached past the digest). Whatever loads
 * must serialize again to bytes that load again and serialize identically.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ckks/ckks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ts_ckks_params_t *params;
static uint8_t id[TS_SHA256_BYTES];

static const uint16_t types[] = {TS_OBJ_CKKS_CIPHERTEXT, TS_OBJ_CKKS_PLAINTEXT, TS_OBJ_SECRET_KEY,
                                 TS_OBJ_PUBLIC_KEY,      TS_OBJ_RELIN_KEY,      TS_OBJ_GALOIS_KEYS};

/* Load as `type`; on success serialize again into *out. */
static ts_status_t load(uint16_t type, const uint8_t *in, size_t n, uint8_t **out, size_t *on)
{
    ts_status_t st = TS_EFORMAT;
    *out = NULL;
    *on = 0;
    switch (type) {
    case TS_OBJ_CKKS_CIPHERTEXT: {
        ts_ckks_ciphertext_t *o = NULL;
        st = ts_ckks_ciphertext_deserialize(params, in, n, 2, &o);
        if (st == TS_OK)
            st = ts_ckks_ciphertext_serialize(o, 0, out, on);
        ts_ckks_ciphertext_free(o);
        break;
    }
    case TS_OBJ_CKKS_PLAINTEXT: {
        ts_ckks_plaintext_t *o = NULL;
        st = ts_ckks_plaintext_deserialize(params, in, n, &o);
        if (st == TS_OK)
            st = ts_ckks_plaintext_serialize(o, 0, out, on);
        ts_ckks_plaintext_free(o);
        break;
    }
    case TS_OBJ_SECRET_KEY: {
        ts_ckks_secret_key_t *o = NULL;
        st = ts_ckks_secret_key_deserialize(params, in, n, &o);
        if (st == TS_OK)
            st = ts_ckks_secret_key_serialize(o, out, on);
        ts_ckks_secret_key_free(o);
        break;
    }
    case TS_OBJ_PUBLIC_KEY: {
        ts_ckks_public_key_t *o = NULL;
        st = ts_ckks_public_key_deserialize(params, in, n, &o);
        if (st == TS_OK)
            st = ts_ckks_public_key_serialize(o, 0, out, on);
        ts_ckks_public_key_free(o);
        break;
    }
    default: {
        ts_ckks_evalkeys_t *ek = NULL;
        st = ts_ckks_evalkeys_new(params, &ek);
        if (st == TS_OK)
            st = type == TS_OBJ_RELIN_KEY ? ts_ckks_relin_key_deserialize(ek, in, n)
                                          : ts_ckks_galois_keys_deserialize(ek, in, n);
        if (st == TS_OK)
            st = type == TS_OBJ_RELIN_KEY ? ts_ckks_relin_key_serialize(ek, 0, out, on)
                                          : ts_ckks_galois_keys_serialize(ek, 0, out, on);
        ts_ckks_evalkeys_free(ek);
        break;
    }
    }
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!params) {
        ts_cfg_error_t err;
        ts_log_set_level(TS_LOG_ERROR);
        if (ts_ckks_params_load_file("configs/params/test-n10.yaml", true, &params, &err) != TS_OK)
            abort(); /* run from the repository root */
        ts_ckks_params_serial_id(params, id);
    }
    if (size < 1)
        return 0;
    uint16_t type = types[(data[0] >> 1) % 6];
    const uint8_t *in = data + 1;
    size_t n = size - 1;
    uint8_t *sealed = NULL;
    if (data[0] & 1) { /* treat the rest as a payload: seal it properly */
        ts_writer_t w;
        ts_writer_init(&w);
        ts_put_bytes(&w, in, n);
        if (ts_serial_seal(&w, type, id, 0, &sealed, &n) != TS_OK)
            __builtin_trap();
        ts_writer_clear(&w);
        in = sealed;
    }
    uint8_t *again = NULL, *third = NULL;
    size_t an = 0, tn = 0;
    if (load(type, in, n, &again, &an) == TS_OK) {
        if (load(type, again, an, &third, &tn) != TS_OK || tn != an || memcmp(again, third, an))
            __builtin_trap();
    }
    ts_free_secret(again);
    ts_free_secret(third);
    ts_free(sealed);
    return 0;
}

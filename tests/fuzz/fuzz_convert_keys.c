/*
 * libFuzzer target: the conversion key set a server receives
 * (ts_convert_keys_deserialize) never crashes on arbitrary bytes. Three
 * shapes per input: the bytes as an envelope; the bytes as the payload of a
 * valid envelope (right type and parameter id, so the payload parser is
 * reached past the digest check); and a real key set's payload with the
 * input's bytes written over it at the offset its first 4 bytes name
 * (hostile counts, lengths and residues deep inside a well-formed object).
 * Keys: CKKS test-n10 with TFHE tfhe_test_small at log_n_br 8 (the
 * parameters of tests/unit/test_convert.c), made once from a fixed seed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/convert/convert.h"
#include "core/serial/serial.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ts_ckks_params_t *params;
static ts_tfhe_params_lit_t lit;
static uint8_t param_id[TS_SHA256_BYTES];
static uint8_t *payload;
static size_t payload_size;
static int ready; /* 1 ok, -1 setup failed */

static void setup(void)
{
    ready = -1;
    char path[512];
    const char *root = getenv("TS_SOURCE_DIR");
    snprintf(path, sizeof path, "%s%sconfigs/params/test-n10.yaml", root ? root : "",
             root ? "/" : "");
    ts_log_set_level(TS_LOG_ERROR);
    ts_cfg_error_t err;
    uint8_t seed[TS_SEED_BYTES] = {7, 7, 7};
    ts_prng_t *prng = NULL;
    ts_ckks_secret_key_t *sk = NULL;
    ts_convert_t *cv = NULL;
    uint8_t *blob = NULL;
    size_t n = 0;
    ts_serial_header_t hdr;
    if (ts_ckks_params_load_file(path, true, &params, &err) != TS_OK ||
        ts_prng_new_seeded(seed, 1, &prng) != TS_OK ||
        ts_ckks_keygen_secret(params, prng, &sk) != TS_OK ||
        ts_tfhe_params_preset("tfhe_test_small", &lit) != TS_OK)
        goto out;
    lit.log_n_br = 8;
    if (ts_convert_keygen(params, sk, &lit, prng, &cv) != TS_OK ||
        ts_convert_keys_serialize(cv, 0, &blob, &n) != TS_OK ||
        ts_serial_open(blob, n, TS_OBJ_RING_SWITCH_KEY, NULL, NULL, &hdr, &payload,
                       &payload_size) != TS_OK)
        goto out;
    memcpy(param_id, hdr.param_id, TS_SHA256_BYTES);
    ready = 1;
out:
    ts_free(blob);
    ts_convert_free(cv);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
}

static void try_sealed(const uint8_t *p, size_t n)
{
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_bytes(&w, p, n);
    uint8_t *buf = NULL;
    size_t bn = 0;
    if (ts_serial_seal(&w, TS_OBJ_RING_SWITCH_KEY, param_id, 0, &buf, &bn) == TS_OK) {
        ts_convert_t *cv = NULL;
        if (ts_convert_keys_deserialize(params, &lit, buf, bn, &cv) == TS_OK)
            ts_convert_free(cv);
    }
    ts_free(buf);
    ts_writer_clear(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    if (ready < 0)
        return 0;
    ts_convert_t *cv = NULL;
    if (ts_convert_keys_deserialize(params, &lit, data, size, &cv) == TS_OK)
        ts_convert_free(cv);
    try_sealed(data, size);
    if (size >= 4) {
        uint32_t off = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                       (uint32_t)data[3] << 24;
        off %= (uint32_t)payload_size;
        uint8_t *m = ts_malloc(payload_size);
        if (!m)
            return 0;
        memcpy(m, payload, payload_size);
        size_t k = size - 4;
        if (k > payload_size - off)
            k = payload_size - off;
        memcpy(m + off, data + 4, k);
        try_sealed(m, payload_size);
        /* and truncated at the offset */
        try_sealed(m, off);
        ts_free(m);
    }
    return 0;
}

/*
 * libFuzzer target: TFHE payloads from arbitrary bytes never crash. The bytes
 * are sealed into valid envelopes (right type and parameter id) so that the
 * payload parsers of ts_tfhe_*_deserialize are reached past the digest check.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/serial/serial.h"
#include "core/tfhe/tfhe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ts_tfhe_params_t *params;
static uint8_t param_id[32];

static uint8_t *seal(const uint8_t *data, size_t size, uint16_t type, size_t *out_size)
{
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_bytes(&w, data, size);
    uint8_t *buf = NULL;
    if (ts_serial_seal(&w, type, param_id, 0, &buf, out_size) != TS_OK)
        buf = NULL;
    ts_writer_clear(&w);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!params) {
        ts_tfhe_params_lit_t lit;
        if (ts_tfhe_params_preset("tfhe_test_tiny", &lit) != TS_OK ||
            ts_tfhe_params_new(&lit, &params) != TS_OK || ts_tfhe_params_id(params, param_id))
            return 0;
    }
    size_t n = 0;
    uint8_t *buf = seal(data, size, TS_OBJ_LWE_CIPHERTEXT, &n);
    ts_tfhe_lwe_t *ct = NULL;
    if (buf && ts_tfhe_lwe_deserialize(params, buf, n, &ct) == TS_OK)
        ts_tfhe_lwe_free(ct);
    ts_free(buf);
    buf = seal(data, size, TS_OBJ_TFHE_SECRET_KEY, &n);
    ts_tfhe_lwe_key_t *lk = NULL;
    ts_tfhe_rlwe_key_t *rk = NULL;
    if (buf && ts_tfhe_secret_deserialize(params, buf, n, &lk, &rk) == TS_OK) {
        ts_tfhe_lwe_key_free(lk);
        ts_tfhe_rlwe_key_free(rk);
    }
    ts_free(buf);
    buf = seal(data, size, TS_OBJ_TFHE_BOOTSTRAP_KEY, &n);
    ts_tfhe_evalkey_t *ek = NULL;
    if (buf && ts_tfhe_evalkey_deserialize(params, buf, n, &ek) == TS_OK)
        ts_tfhe_evalkey_free(ek);
    ts_free(buf);
    /* and the raw bytes as an envelope */
    if (ts_tfhe_lwe_deserialize(params, data, size, &ct) == TS_OK)
        ts_tfhe_lwe_free(ct);
    return 0;
}

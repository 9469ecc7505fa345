/*
 * libFuzzer target: the CKKS ciphertext codec of the wire (server/ckks_wire.h)
 * on arbitrary bytes, against the small test preset. Whatever parses must
 * re-encode to bytes that parse again to the same level, degree and scale.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/ckks_wire.h"

static ts_ckks_params_t *params;
static uint8_t id[TS_SHA256_BYTES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!params) {
        char why[256];
        if (ts_wire_params_get("configs/params", "test-n10", true, &params, id, why, sizeof why) !=
            TS_OK)
            abort(); /* run from the repository root */
    }
    /* Let the fuzzer reach the body: the first byte selects "use the right parameter id". */
    uint8_t *buf = NULL;
    const uint8_t *in = data;
    if (size > TS_SERIAL_HEADER_BYTES && (data[0] & 1)) {
        buf = malloc(size);
        memcpy(buf, data, size);
        memcpy(buf + 12, id, TS_SHA256_BYTES);
        in = buf;
    }
    ts_ckks_ciphertext_t *ct = NULL;
    char why[256];
    if (ts_wire_ct_decode(params, id, in, size, 2, &ct, why, sizeof why) == TS_OK) {
        uint8_t *again = NULL;
        size_t n = 0;
        if (ts_wire_ct_encode(ct, id, 0, &again, &n) != TS_OK)
            __builtin_trap();
        ts_ckks_ciphertext_t *ct2 = NULL;
        if (ts_wire_ct_decode(params, id, again, n, 2, &ct2, why, sizeof why) != TS_OK ||
            ts_ckks_ciphertext_level(ct2) != ts_ckks_ciphertext_level(ct) ||
            ts_ckks_ciphertext_degree(ct2) != ts_ckks_ciphertext_degree(ct) ||
            ts_ckks_ciphertext_scale(ct2) != ts_ckks_ciphertext_scale(ct))
            __builtin_trap();
        ts_ckks_ciphertext_free(ct2);
        ts_free(again);
    }
    ts_ckks_ciphertext_free(ct);
    free(buf);
    return 0;
}

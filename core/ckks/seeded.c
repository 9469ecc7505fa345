/*
 * Seeded ciphertexts on the wire: c_1 of a symmetric encryption is the
 * uniform polynomial expanded from its 32-byte seed (ts_ckks_encrypt_sk), so
 * serialization sends the seed and the receiver regenerates c_1 here.
 */
#include <string.h>

#include "core/ckks/ckks_int.h"

ts_status_t ts_ckks_ciphertext_set_seeded_c1(ts_ckks_ciphertext_t *ct,
                                             const uint8_t seed[TS_SEED_BYTES])
{
    if (!ct || !seed || ct->degree != 1)
        return TS_EINVAL;
    ts_status_t st = ts_rlwe_expand_a(seed, TS_CKKS_SEED_STREAM, ct->c[1]);
    if (st != TS_OK)
        return st;
    ct->seeded = true;
    memcpy(ct->seed, seed, TS_SEED_BYTES);
    return TS_OK;
}

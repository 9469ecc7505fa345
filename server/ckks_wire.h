/*
 * server/ckks_wire.h — CKKS objects on tessera's wire, shared by tesserad and
 * tessera: parameter presets by name (cached, security-gated), the 32-byte
 * parameter id, and the ciphertext codec inside a core/serial envelope
 * (type TS_OBJ_CKKS_CIPHERTEXT, residues bit-packed at the width of their
 * prime, optional zstd). A symmetric ciphertext whose c_1 is still its seeded
 * uniform polynomial travels as c_0 and the 32-byte seed (about half the bytes). Decoding validates
 * level, degree, domain, scale, slot count and every residue before a ciphertext exists.
 *
 * The format is core/ckks's (ts_ckks_ciphertext_serialize,
 * ts_ckks_public_key_serialize; layouts in core/ckks/ckks.h); these wrappers
 * add the preset cache and the reasons sent back to peers.
 */
#ifndef TS_SERVER_CKKS_WIRE_H
#define TS_SERVER_CKKS_WIRE_H

#include "core/ckks/ckks.h"
#include "core/serial/serial.h"

/*
 * A preset by name from dir/<name>.yaml (names: [a-z0-9_.-], no paths),
 * cached per process. Refuses presets marked insecure unless allow_insecure,
 * with a reason in why. [out] *out: a new reference (ts_ckks_params_free).
 */
ts_status_t ts_wire_params_get(const char *dir, const char *name, bool allow_insecure,
                               ts_ckks_params_t **out, uint8_t id[TS_SHA256_BYTES], char *why,
                               size_t why_size);
/* SHA-256 of the canonical description (N, primes, dnum, secret, sigma, scale). */
void ts_wire_params_id(const ts_ckks_params_t *params, uint8_t id[TS_SHA256_BYTES]);

/* Serialize a degree-1 or 2 ciphertext. [out] *out ts_malloc'ed. */
ts_status_t ts_wire_ct_encode(const ts_ckks_ciphertext_t *ct, const uint8_t id[TS_SHA256_BYTES],
                              int zstd_level, uint8_t **out, size_t *size);
/*
 * Parse and validate. max_degree: 1 to refuse unrelinearized inputs.
 * Errors: TS_EFORMAT (structure, residue at or above its modulus, bad scale),
 * TS_EMISMATCH (other parameter id), TS_ELEVEL, TS_ELIMIT (size caps).
 */
ts_status_t ts_wire_ct_decode(ts_ckks_params_t *params, const uint8_t id[TS_SHA256_BYTES],
                              const void *data, size_t size, int max_degree,
                              ts_ckks_ciphertext_t **out, char *why, size_t why_size);

/*
 * Public keys (TS_OBJ_PUBLIC_KEY): u32 nq, u32 np, u8 is_ntt, the residues of b
 * over its Q then P limbs bit-packed at each prime's width, then the 32-byte
 * seed of a. ts_wire_pk_check validates an uploaded key against a preset
 * (envelope, parameter id, shape, every residue below its modulus).
 */
ts_status_t ts_wire_pk_encode(const ts_ckks_public_key_t *pk, const uint8_t id[TS_SHA256_BYTES],
                              uint8_t **out, size_t *size);
ts_status_t ts_wire_pk_check(ts_ckks_params_t *params, const uint8_t id[TS_SHA256_BYTES],
                             const void *data, size_t size, char *why, size_t why_size);

#endif

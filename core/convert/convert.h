/*
 * core/convert — the CKKS <-> TFHE scheme conversion of ROSETTA section 3.3.
 *
 * Rings and keys. CKKS lives in R_N = Z[X]/(X^N + 1) with the secret s; the
 * TFHE side lives in the small ring R_br = Z[Y]/(Y^N_br + 1) with a fresh
 * ternary secret s_br, modulo Q = q_0 (the CKKS base prime, which is NTT
 * friendly for 2 N_br as well). The TFHE parameters are derived from a
 * caller literal with q_br forced to q_0, so the LWEs extracted from the
 * small ring are directly the "big" LWEs of core/tfhe (dimension N_br modulo
 * Q, key = coefficients of s_br) and PBS results can be repacked without a
 * modulus change.
 *
 * Ciphertext conventions. CKKS: phase c_0 + c_1 s. TFHE (core/tfhe): phase
 * b - a s. A small-ring ciphertext here is a ts_tfhe_rlwe_t (a, b),
 * coefficient form; the conversions translate (c_0, c_1) = (b, -a).
 *
 * Steps (g = N / N_br):
 *   SlotToCoeff   circuits' ts_boot_slot_to_coeff, then a drop to level 0
 *                 (the ModSwitch to the TFHE modulus q_0; no division, the
 *                 scale is kept). Slot j of a ciphertext of n <= N_br / 2
 *                 slots lands in big coefficient rev(j) N / 2n (imaginary
 *                 part at (rev(j) + n) N / 2n), i.e. small coefficient
 *                 ts_convert_slot_coeff().
 *   RingSwitch    down: key switching s -> s_sub(X) = s_br(X^g) in R_N at
 *                 level 0 (hybrid key switching with the CKKS special
 *                 primes), then the projection onto the coefficients of
 *                 index 0 mod g: coefficient i g of the phase is exactly the
 *                 phase of the projected pair under s_br (Gentry-Halevi-
 *                 Peikert-Smart 2013). up: the embedding Y -> X^g (the pair
 *                 now decrypts under s_sub) and key switching s_sub -> s.
 *   ExtractLWE    coefficient i of a small-ring ciphertext as an LWE of
 *                 dimension N_br modulo Q (ts_tfhe_rlwe_sample_extract).
 *   Trace         Tr(c) = sum over Gal(R_br) of sigma(c), computed as
 *                 c <- c + sigma_{2^k + 1}(c), k = log N_br .. 1, after a
 *                 multiplication by N_br^{-1} mod Q (Chen-Dai-Kim-Song 2021):
 *                 keeps the constant coefficient, zeroes the others. The
 *                 Galois keys live in a ring (N_br, {q_0}, P_br).
 *   Repack        LWE (a, b) -> RLWE whose constant phase coefficient is the
 *                 LWE phase (a'(Y) = a_0 - sum_{i>0} a_i Y^{N_br - i}),
 *                 Trace, shift to its position by Y^pos, sum.
 *   ModRecover    circuits' ts_boot_mod_recover at the requested level.
 *
 * Multi-value batching (section 3.3.2): ts_convert_split does one
 * SlotToCoeff and one RingSwitch for K values, then per value multiplies by
 * Y^-c and traces, giving K small-ring ciphertexts with the value in the
 * constant coefficient (and its LWE by ExtractLWE); ts_convert_merge shifts
 * K results back by Y^c, sums them, does one RingSwitch up and one
 * ModRecover.
 *
 * The conversion key set (client generated, ts_convert_keygen), all at
 * level 0 only (one digit: q_0 over the special primes):
 *   - ksk_down: s -> s_sub in (N, {q_0}, P_br): 2 (1 + #P_br) N words;
 *   - ksk_up:   s_sub -> s in (N, {q_0}, P): 2 (1 + #P) N words;
 *   - log2 N_br Galois keys sigma_{2^k+1} in (N_br, {q_0}, P_br), dnum 1:
 *     2 (1 + #P_br) N_br words each;
 *   - the TFHE evaluation key (bootstrapping key of the small LWE key under
 *     s_br, and the key-switching key), ts_tfhe_evalkey_bytes().
 * ts_convert_keys_bytes() reports the total. The object also keeps the
 * secrets s_br and the small LWE key (for the client and for tests); the
 * server's copy, made by ts_convert_keys_deserialize, has none.
 *
 * Security (ts_convert_security_check). Everything the server holds under
 * s_br is an RLWE instance of dimension N_br: the projected ciphertexts and
 * the bootstrapping key modulo q_0, the trace's Galois keys modulo q_0 P_br,
 * and ksk_down too (its secret s_sub(X) = s_br(X^g) lies in the subring, so
 * the key splits into g RLWE samples of dimension N_br modulo q_0 P_br).
 * P_br is therefore not the CKKS P (five 61-bit primes would need N_br >=
 * 2^14) but one dedicated prime of floor(bound(N_br) - log2 q_0) bits, 1
 * mod 2N, where bound is the dense-ternary table of the CKKS gate
 * (ts_ckks_security_max_logqp: 106 bits at N_br = 2^12, so a 46-bit P_br
 * next to a 60-bit q_0); the CKKS P when q_0 P already fits. With a
 * dedicated P_br (smaller than q_0) the keys over it decompose q_0 into two
 * unsigned digits (digit key i switches 2^(i dig_bits) s_from -> s), so a
 * switch adds ~digit e / P_br + rounding instead of q_0 e / P_br (which the
 * trace would multiply by up to N_br). The small LWE
 * (and the LWE key-switching key) is held to ts_tfhe_security_check.
 * ts_convert_keygen refuses (TS_ESECURITY) a configuration that fails,
 * unless the CKKS parameters or the TFHE literal are marked insecure.
 * The 128-bit TFHE set for the conversion is the preset "tfhe_conv128"
 * (N_br = 2^12, n = 1024, see core/tfhe and docs/parameters.md).
 *
 * Objects: a ts_convert_t holds keys and scratch; not thread-safe (see
 * "Workers" below for running the per-value steps on several threads).
 */
#ifndef TS_CONVERT_H
#define TS_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/ckks/ckks.h"
#include "core/circuits/circuits.h"
#include "core/tfhe/tfhe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_convert ts_convert_t;

/*
 * The security gate of the conversion (see the overview): TS_OK when the
 * small ring (N_br, q_0 and q_0 P_br against the dense-ternary table of
 * core/ckks, q_0 and rlwe_sigma against core/tfhe's table) and the small
 * LWE (ts_tfhe_security_check) are 128-bit secure, TS_ESECURITY otherwise
 * (why, when not NULL, says which part and by how much), TS_EINVAL for
 * bad arguments. The insecure flags are not consulted here.
 */
ts_status_t ts_convert_security_check(const ts_ckks_params_t *ckks,
                                      const ts_tfhe_params_lit_t *tlit, char *why, size_t why_size);

/*
 * [out] out: the conversion keys and scratch for CKKS params `ckks` (with
 * special primes) and the TFHE literal `tlit` (its q_br is replaced by q_0,
 * log_n_br must not exceed log N). Randomness from prng. Unless `ckks` or
 * `tlit` is marked insecure, ts_convert_security_check must pass
 * (TS_ESECURITY otherwise). Errors: TS_ESECURITY, TS_EPARAMS, TS_EINVAL,
 * TS_ENOMEM, errors of the key generators.
 */
ts_status_t ts_convert_keygen(ts_ckks_params_t *ckks, const ts_ckks_secret_key_t *sk,
                              const ts_tfhe_params_lit_t *tlit, ts_prng_t *prng,
                              ts_convert_t **out);
void ts_convert_free(ts_convert_t *cv); /* accepts NULL; wipes secrets */

/* The TFHE parameters, evaluator and keys of the small ring (borrowed). */
const ts_tfhe_params_t *ts_convert_tfhe_params(const ts_convert_t *cv);
ts_tfhe_evaluator_t *ts_convert_tfhe_evaluator(ts_convert_t *cv);
const ts_tfhe_rlwe_key_t *ts_convert_rlwe_key(const ts_convert_t *cv); /* secret s_br */
const ts_tfhe_lwe_key_t *ts_convert_lwe_key(const ts_convert_t *cv);   /* extracted key (N_br) */
/* Bytes of the evaluation keys a server needs (see the overview). */
size_t ts_convert_keys_bytes(const ts_convert_t *cv);
uint32_t ts_convert_n_br(const ts_convert_t *cv);
uint64_t ts_convert_q(const ts_convert_t *cv); /* Q = q_0 */

/* Small-ring coefficient of slot j (imag: its imaginary part) for n = 2^log_slots
 * slots in ring degree 2^log_n and small degree n_br; -1 when not on the subring. */
int64_t ts_convert_slot_coeff(int log_n, int log_slots, uint32_t n_br, size_t j, bool imag);

/*
 * The evaluation keys for a server (no secrets), as one core/serial envelope
 * of type TS_OBJ_RING_SWITCH_KEY bound to SHA-256(CKKS parameter id || TFHE
 * parameter id). Seeded: every a part is regenerated from a 32-byte seed;
 * ksk_down / ksk_up (level 0 only), the trace's Galois keys carry their
 * whole b, and the TFHE evaluation key its own seeded envelope
 * (ts_tfhe_evalkey_serialize). zstd_level as ts_serial_seal (keys are
 * uniform residues; 0 is right). [out] *out: ts_malloc'd.
 * Errors: TS_EINVAL, TS_ENOKEY (a copy without keys), TS_ENOMEM.
 */
ts_status_t ts_convert_keys_serialize(const ts_convert_t *cv, int zstd_level, uint8_t **out,
                                      size_t *size);
/*
 * [out] out: a server-side ts_convert_t for the CKKS params and TFHE literal
 * the client used with ts_convert_keygen; no secrets (ts_convert_rlwe_key
 * and ts_convert_lwe_key return NULL; encrypting or decrypting with them is
 * the client's job). Everything from outside is checked before use:
 * TS_EFORMAT (truncated, bit flips, hostile counts, residues >= q, wrong
 * Galois elements, trailing bytes), TS_EMISMATCH (other parameters or
 * object type), TS_ELIMIT, TS_EINVAL, TS_ENOMEM.
 */
ts_status_t ts_convert_keys_deserialize(ts_ckks_params_t *ckks, const ts_tfhe_params_lit_t *tlit,
                                        const void *data, size_t size, ts_convert_t **out);
/* True when cv holds the client secrets (made by ts_convert_keygen). */
bool ts_convert_has_secrets(const ts_convert_t *cv);

/* ------------------------------------------------------------ the steps */

/* SlotToCoeff (circuits) then drop to level 0. out may alias in. */
ts_status_t ts_convert_slot_to_coeff(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                     const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out);
/* RingSwitch N -> N_br: in (any level; its level-0 part is used) -> out. */
ts_status_t ts_convert_ring_down(ts_convert_t *cv, const ts_ckks_ciphertext_t *in,
                                 ts_tfhe_rlwe_t *out);
/* RingSwitch N_br -> N: out at level 0 with the given scale and slot count
 * (slots 0: the parameters' default). */
ts_status_t ts_convert_ring_up(ts_convert_t *cv, const ts_tfhe_rlwe_t *in, double scale,
                               size_t slots, ts_ckks_ciphertext_t *out);
/* ExtractLWE of coefficient idx: out has dimension N_br, modulus Q. */
ts_status_t ts_convert_extract(const ts_tfhe_rlwe_t *in, uint32_t idx, ts_tfhe_lwe_t *out);
/* ModSwitch an LWE to out's modulus (e.g. 2^k for the small LWE domain). */
ts_status_t ts_convert_modswitch(ts_tfhe_lwe_t *out, const ts_tfhe_lwe_t *in);
/* ct := ct * Y^e (e any integer; Y^N_br = -1). */
void ts_convert_monomial_mul(ts_convert_t *cv, ts_tfhe_rlwe_t *ct, int64_t e);
/* Trace: ct keeps its constant coefficient, the others become 0 (plus noise). */
ts_status_t ts_convert_trace(ts_convert_t *cv, ts_tfhe_rlwe_t *ct);
/* LWE -> RLWE: out's constant phase coefficient = the LWE phase, others 0 (traced). */
ts_status_t ts_convert_lwe_to_rlwe(ts_convert_t *cv, const ts_tfhe_lwe_t *in, ts_tfhe_rlwe_t *out);
/* Repack count LWEs: coefficient pos[i] of out holds LWE i. */
ts_status_t ts_convert_repack(ts_convert_t *cv, const ts_tfhe_lwe_t *const *in, const uint32_t *pos,
                              size_t count, ts_tfhe_rlwe_t *out);
/* ModRecover (circuits) at `level` (-1: the highest available). */
ts_status_t ts_convert_mod_recover(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                   const ts_ckks_ciphertext_t *in, int level,
                                   ts_ckks_ciphertext_t *out);

/*
 * Workers. A ts_convert_t is not thread-safe (its scratch is shared by all
 * its steps), but its keys, rings and constants are only read after
 * creation. A worker is the mutable state one more thread needs to run the
 * per-value TFHE-side steps of the same cv concurrently: its own TFHE
 * evaluator on cv's evaluation key (borrowed, never copied) and its own
 * trace scratch on the small ring (a few polynomials of N_br words). Any
 * number of workers of one cv may run at once, and alongside one thread
 * using cv itself (ts_convert_trace, ts_convert_tfhe_evaluator, ...); the
 * results are bit-identical to cv's own steps (no randomness). cv must
 * outlive its workers. TS_ENOKEY when cv has no evaluation key.
 */
typedef struct ts_convert_worker ts_convert_worker_t;
ts_status_t ts_convert_worker_new(const ts_convert_t *cv, ts_convert_worker_t **out);
void ts_convert_worker_free(ts_convert_worker_t *w); /* accepts NULL */
/* The worker's own TFHE evaluator (borrowed). */
ts_tfhe_evaluator_t *ts_convert_worker_tfhe_evaluator(ts_convert_worker_t *w);
/* ts_convert_trace and ts_convert_lwe_to_rlwe with the worker's scratch. */
ts_status_t ts_convert_worker_trace(ts_convert_worker_t *w, ts_tfhe_rlwe_t *ct);
ts_status_t ts_convert_worker_lwe_to_rlwe(ts_convert_worker_t *w, const ts_tfhe_lwe_t *in,
                                          ts_tfhe_rlwe_t *out);

/* ------------------------------------------------ multi-value batching */

/*
 * One SlotToCoeff and one RingSwitch for the values at small coefficients
 * pos[0..count): out[i] (RLWE, value in the constant coefficient, others
 * traced to 0) and, when lwe != NULL, lwe[i] = ExtractLWE(out[i], 0).
 * `in` must be at level >= the SlotToCoeff budget of bt (stc_first config).
 */
ts_status_t ts_convert_split(ts_convert_t *cv, const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                             const ts_ckks_ciphertext_t *in, const uint32_t *pos, size_t count,
                             ts_tfhe_rlwe_t *const *out, ts_tfhe_lwe_t *const *lwe);
/*
 * results[i] (value in the constant coefficient, zero elsewhere) shifted to
 * pos[i] and summed, one RingSwitch up (scale `scale`), one ModRecover to
 * `level` (bt NULL: stop after the RingSwitch, out at level 0 in
 * coefficient form).
 */
ts_status_t ts_convert_merge(ts_convert_t *cv, const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                             const ts_tfhe_rlwe_t *const *results, const uint32_t *pos,
                             size_t count, double scale, int level, ts_ckks_ciphertext_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TS_CONVERT_H */

/*
 * core/circuits — circuits built on the CKKS evaluator: bootstrapping and its
 * pieces (ModRaise, CoeffToSlot, EvalMod, SlotToCoeff) and ModRecover for
 * the scheme conversion (ROSETTA section 3.3). Linear transforms and
 * polynomial evaluation themselves live in core/ckks (ts_ckks_lintrans_*,
 * ts_ckks_eval_chebyshev); this module composes them.
 *
 * Math (Cheon-Han-Kim-Kim-Song, "Bootstrapping for approximate homomorphic
 * encryption", Eurocrypt 2018; Chen-Chillotti-Song, Eurocrypt 2019; Han-Ki,
 * CT-RSA 2020; Bossuat et al., Eurocrypt 2021). With n slots (n a power of
 * two, n <= N/2) and gap g = N / 2n, a message is m(X) = m'(X^g) and its
 * slots are z = V u, u_k = m'_k + i m'_{k+n} (k < n), V_jk = w_j^k,
 * w_j = exp(2 pi i 5^j / 4n) (core/ckks/fft.c). V = T_n ... T_2 B, B the
 * bit-reversal permutation and T_len the radix-2 butterflies.
 *  - ModRaise: a level-0 ciphertext (c0, c1) is lifted (centered) to the top
 *    modulus: it now decrypts to t + q0 I, |I| <= K with high probability
 *    (K ~ 7 sqrt((h + 1) / 12) for a secret of Hamming weight h). Its scale
 *    is declared q0, so the slots read (t + q0 I) / q0. For sparse slots the
 *    ciphertext is multiplied by g^-1 mod Q (exact) and traced to the
 *    subring of X^g (log2 g rotations), which removes the off-subring part
 *    of I exactly.
 *  - CoeffToSlot: the slots z' = V u' become B u' / 2K (the 1/n of the
 *    inverse DFT included) by the butterfly factors merged into `cts_levels`
 *    groups, one level each, applied with BSGS and hoisted baby rotations;
 *    then conjugation splits B u' into its real and imaginary parts
 *    (two ciphertexts at full slots; one ciphertext at 2n slots, real parts
 *    then imaginary parts, for sparse slots).
 *  - EvalMod: x -> sin(2 pi K x) ~ 2 pi (t / q0) by a Chebyshev interpolant
 *    of cos(2 pi (K x - 1/4) / 2^r) on [-1, 1] and r double-angle steps
 *    cos 2a = 2 cos^2 a - 1. The result is declared at scale
 *    S * 2 pi Delta_in / q0, so its slots read t / Delta_in.
 *  - SlotToCoeff: slots B u -> V u = z by the butterflies in `stc_levels`
 *    groups (the bit reversals of both transforms cancel).
 *
 * Coefficient order. SlotToCoeff leaves slot j's value in coefficient
 * (rev(j), rev(j) + n) (real, imaginary parts; rev = bit reversal on log2 n
 * bits, times the gap g), and ModRecover reads coefficients in the same
 * order, so SlotToCoeff -> (anything coefficient-wise) -> ModRecover keeps
 * every value in its slot.
 *
 * Levels: CoeffToSlot takes cts_levels, EvalMod depth(cheb_degree) +
 * double_angle, SlotToCoeff stc_levels; ts_boot_levels_left() is what a
 * bootstrapped ciphertext has left. The output scale equals the input's.
 *
 * Objects: a ts_boot_t owns its precomputed plaintext diagonals and an
 * encoder; it is immutable after creation and may be shared by threads that
 * each use their own ts_ckks_evaluator_t (which must hold the relinearization
 * key, the conjugation key and the rotation keys of ts_boot_rotation_steps).
 */
#ifndef TS_CIRCUITS_H
#define TS_CIRCUITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/ckks/ckks.h"
#include "core/serial/serial.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which transform comes first in ts_boot_bootstrap. */
typedef enum {
    TS_BOOT_CTS_FIRST = 0, /* ModRaise, CoeffToSlot, EvalMod, SlotToCoeff (input at any level) */
    TS_BOOT_STC_FIRST = 1, /* SlotToCoeff, ModRaise, CoeffToSlot, EvalMod (= ModRecover) */
} ts_boot_order_t;

/* A bootstrapping configuration: plain data (ts_boot_config_default fills it). */
typedef struct ts_boot_config {
    int log_slots;            /* slots n = 2^log_slots, 1..log_n - 1 (0: the parameters' default) */
    int cts_levels;           /* CoeffToSlot level budget, 1..log_slots */
    int stc_levels;           /* SlotToCoeff level budget, 1..log_slots */
    double k;                 /* EvalMod interval: |I| <= k (in units of q0) */
    int cheb_degree;          /* degree of the cosine interpolant, 3..255 */
    int double_angle;         /* r: double-angle steps, 0..8 */
    int order;                /* ts_boot_order_t */
    bool real_only;           /* STC_FIRST / ModRecover: imaginary coefficients are ignored
                               * (real values; saves one EvalMod at full slots) */
    double log_message_ratio; /* CTS_FIRST: the level-0 input is multiplied by 2^a so that
                               * q0 / (scale 2^a) ~ 2^log_message_ratio (0: as it comes) */
    int encap_h;              /* sparse-secret encapsulation: Hamming weight h' of the
                               * ephemeral sparse secret of ModRaise (0: off; see
                               * ts_boot_config_encapsulate) */
} ts_boot_config_t;

/*
 * Defaults for params: the parameters' slot count, 4 + 3 levels for the
 * DFTs at 2^12 slots and more (3 + 3 from 2^6, 2 + 2 from 2^2, else 1 + 1),
 * k from the secret (7 sigma of I, sigma = sqrt((h + 1) / 12)), and for each r = 1..4
 * double angles the smallest degree (15 + 4j) that keeps the EvalMod error below 2^-38 on
 * [-k, k] with a converged series (last four Chebyshev coefficients below 2^-40), of which the
 * (r, degree) of fewest EvalMod levels (depth + r), then fewest products (K = 12: r = 2,
 * degree 47, 8 levels; K = 29: r = 3, degree 55, 9 levels); CTS_FIRST with a message ratio
 * of 2^12 up to 2^11 slots, 2^11 at 2^12-2^13 and 2^10 at 2^14-2^15 (the EvalMod noise,
 * multiplied by the ratio and summed over the slots by SlotToCoeff, grows one bit per doubling of
 * the slots; the sine's cubic term is deterministic, ~2^-21 relative at 2^12 where a vector's
 * coefficients are as large as its values, as a constant's, while n random values have
 * coefficients ~ 1 / sqrt n of theirs; each step keeps that worst case within 0.4 bit of the
 * noise ratio 2^12 had there: at 2^14 slots the noise 2^-19.1 -> 2^-21.1, a constant vector
 * 2^-18.8).
 */
ts_status_t ts_boot_config_default(const ts_ckks_params_t *params, ts_boot_config_t *cfg);

/*
 * The same defaults for a sparse slot count: 2^log_slots slots (1 <= log_slots
 * <= log N - 1), whose DFT level budgets follow the rule above. A ciphertext
 * packed with fewer slots (a message periodic in the full slots) bootstraps
 * faster and keeps one more level at <= 2^11 slots; e.g. boot-n16-dense:
 * 9.0 s at 2^15 slots, 3.9 s at 2^8 (2 threads). TS_EINVAL outside the range.
 */
ts_status_t ts_boot_config_slots(const ts_ckks_params_t *params, int log_slots,
                                 ts_boot_config_t *cfg);

/*
 * A bootstrapper at 2^log_slots that leaves as many levels as `like` (fewer
 * slots alone would take smaller budgets and leave more): like's EvalMod,
 * order and encapsulation, and as many DFT levels in all, CoeffToSlot at
 * like's budget but at most log_slots / 2 (no radix-2 group at the top
 * level) and SlotToCoeff the rest (each at most log_slots): a second
 * bootstrapper for values that repeat with a
 * shorter period (core/llm's residual stream). TS_ENOTSUP when the levels
 * left differ anyway; TS_EINVAL outside the range.
 */
ts_status_t ts_boot_config_slots_like(const ts_ckks_params_t *params, int log_slots,
                                      const ts_boot_config_t *like, ts_boot_config_t *cfg);

/*
 * The levels the configuration consumes: CoeffToSlot, EvalMod, SlotToCoeff,
 * and the levels left after a bootstrap (negative when the chain is too
 * short). Any output pointer may be NULL. TS_EINVAL on a malformed config.
 */
ts_status_t ts_boot_depth(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                          int *cts_depth, int *evalmod_depth, int *stc_depth, int *levels_left);

/*
 * Exactly the rotation keys the configuration needs: the steps (left
 * rotations, in [1, N/2)) for ts_ckks_evalkeys_gen_rotations_at, written to
 * steps (capacity *count; steps NULL: only count), with levels (may be NULL)
 * the highest level each step's rotations run at (the key's cap: the trace
 * and CoeffToSlot from the top, SlotToCoeff at EvalMod's output level or, in
 * the SlotToCoeff-first order, from level stc_levels after the drop), and
 * whether the conjugation key is needed (always true; it serves the top).
 * The relinearization key is needed too. TS_ERANGE when the capacity is too
 * small (*count set to the need). The parameters' default slot count must be
 * N/2 (keys are generated mod it).
 */
ts_status_t ts_boot_rotation_steps(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                                   int64_t *steps, int *levels, size_t *count, bool *conjugate);

/*
 * Generate into ek everything the configuration needs (relin, conjugation,
 * rotations, each rotation key capped at its level; a step ek already holds
 * at a lower cap is widened). With cfg->encap_h > 0 the key list also holds the two
 * encapsulation keys, made by ts_boot_encap_keygen and given to the
 * bootstrapper with ts_boot_set_encap_keys (they do not live in ek).
 */
ts_status_t ts_boot_keygen(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                           ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk, ts_prng_t *prng);

/*
 * Sparse-secret encapsulation (Bossuat, Troncoso-Pastoriza, Hubaux, "Bootstrapping
 * for approximate homomorphic encryption with negligible failure-probability
 * by using sparse-secret encapsulation", ACNS 2022; Bossuat et al., "Security
 * guidelines for implementing homomorphic encryption", 2024). The computation
 * runs under the parameters' secret s (dense ternary: the dense security
 * rows apply to the whole chain). Bootstrapping switches the level-0
 * ciphertext from s to an ephemeral sparse secret s' of Hamming weight h'
 * (key K_{s->s'}, over q_0 and one special prime p_e only: the sparse-secret
 * RLWE instance it contains lives modulo q_0 p_e, which the sparse row for h'
 * must admit), raises it (|I| <= K(h'), a small EvalMod interval) and switches
 * it back to s at the top level (key K_{s'->s} over the whole chain: s' is the
 * message there, under the dense s). Both switches add key-switching noise
 * only. In the CoeffToSlot-first order the first switch comes after the
 * message-ratio multiplication, so its noise is not amplified.
 *
 * ts_boot_config_encapsulate sets cfg->encap_h = h and re-derives k and the
 * Chebyshev degree for h' (as ts_boot_config_default does for the secret).
 * TS_EINVAL for h outside 1..N; TS_ESECURITY when no sparse-secret row admits
 * q_0 times a special prime of at least 40 bits for (N, h) (secure
 * parameters only).
 */
ts_status_t ts_boot_config_encapsulate(const ts_ckks_params_t *params, int h,
                                       ts_boot_config_t *cfg);

/* The two encapsulation keys (and the small parameter set q_0 * p_e they use). */
typedef struct ts_boot_encap_keys ts_boot_encap_keys_t;

/*
 * [out] the encapsulation keys of cfg (cfg->encap_h > 0) for the secret sk:
 * a fresh sparse s' from prng, K_{s->s'} and K_{s'->s}. s' itself is wiped.
 * The small parameter set passes the security gate for (N, sparse, h')
 * unless params is insecure. Errors: TS_EINVAL (encap_h = 0), TS_ESECURITY.
 */
ts_status_t ts_boot_encap_keygen(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                                 const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                 ts_boot_encap_keys_t **out);
void ts_boot_encap_keys_free(ts_boot_encap_keys_t *keys); /* accepts NULL */
/* log2(q_0 p_e): the modulus of the sparse-secret instance, for the report. */
double ts_boot_encap_keys_logqp(const ts_boot_encap_keys_t *keys);
/*
 * The keys as a core/serial envelope of type TS_OBJ_BOOTSTRAP_KEYS bound to
 * the CKKS parameter id (the client uploads them with the rest of the key
 * list): the b parts of both keys, residues bit-packed at each prime's width,
 * the a parts as their 32-byte seeds. Deserialization rebuilds the small set
 * from (params, cfg->encap_h) and validates everything (parameter id, h',
 * p_e, sizes before allocation, every residue below its prime): TS_EMISMATCH,
 * TS_EFORMAT, TS_EINVAL (cfg without encapsulation). Bytes are ts_malloc'd.
 */
ts_status_t ts_boot_encap_keys_serialize(const ts_boot_encap_keys_t *keys, int zstd_level,
                                         uint8_t **out, size_t *size);
ts_status_t ts_boot_encap_keys_deserialize(const ts_ckks_params_t *params,
                                           const ts_boot_config_t *cfg, const void *data,
                                           size_t size, ts_boot_encap_keys_t **out);

typedef struct ts_boot ts_boot_t;

/*
 * [out] a bootstrapper: validates cfg against params (TS_EPARAMS when the
 * chain is too short, the default slot count is not N/2, or there are no
 * special primes) and encodes the DFT diagonals. Holds a params reference.
 */
ts_status_t ts_boot_new(ts_ckks_params_t *params, const ts_boot_config_t *cfg, ts_boot_t **out);
void ts_boot_free(ts_boot_t *bt); /* accepts NULL */
/*
 * Give the bootstrapper the encapsulation keys of its configuration (borrowed:
 * they must outlive bt; set once, before bt is shared). Bootstrapping and
 * ModRecover with cfg.encap_h > 0 return TS_ENOKEY until they are set.
 * TS_EINVAL when the configuration has no encapsulation or the keys are for
 * another h'; TS_EMISMATCH for keys of other parameters.
 */
ts_status_t ts_boot_set_encap_keys(ts_boot_t *bt, const ts_boot_encap_keys_t *keys);
/*
 * A view of bt with its own encapsulation keys, for one client among several
 * sharing one bootstrapper (the encoded DFT matrices are shared, not copied):
 * the daemon's sessions each bootstrap with their client's keys. bt and keys
 * are borrowed and must outlive the view; free the view with ts_boot_free
 * (which then frees only the view). Errors as ts_boot_set_encap_keys.
 */
ts_status_t ts_boot_view(const ts_boot_t *bt, const ts_boot_encap_keys_t *keys, ts_boot_t **out);
const ts_boot_config_t *ts_boot_config(const ts_boot_t *bt);
/* Levels left after ts_boot_bootstrap with this bootstrapper's order. */
int ts_boot_levels_left(const ts_boot_t *bt);

/*
 * Refresh a ciphertext of the configured slot count: out encrypts the same
 * slots at level ts_boot_levels_left() and the input's scale. CTS_FIRST
 * takes any input level (it is dropped to 0); STC_FIRST needs an input at
 * level >= stc_levels. The input values must satisfy |value| * scale << q0
 * (the message ratio). out may alias in. Errors: TS_EMISMATCH (slots,
 * parameters), TS_ELEVEL, TS_ENOKEY, TS_EINVAL.
 */
ts_status_t ts_boot_bootstrap(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                              const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out);
/*
 * The same (CTS_FIRST only) with the output at scale out_scale (in.scale /
 * 2^10 .. in.scale; the values are kept, the raw coefficients scale by
 * out_scale / in.scale): e.g. in.scale / 2 for a pair packed as a + i b,
 * whose parts c + conj(c) = 2a and -i (c - conj(c)) = 2b then come out at
 * in.scale without a level. TS_ENOTSUP for STC_FIRST, TS_EINVAL outside the
 * range.
 */
ts_status_t ts_boot_bootstrap_scaled(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                     const ts_ckks_ciphertext_t *in, double out_scale,
                                     ts_ckks_ciphertext_t *out);

/*
 * Two real vectors in one bootstrap (CTS_FIRST only): a and b (same slot
 * count, scale and degree 1, any levels) are refreshed in place to
 * ts_boot_levels_left() at their scale. Their real parts travel as one
 * complex vector Re a + i Re b (the imaginary parts are dropped first, by a
 * conjugation each at level 0: packed as they come, Im b would land in a's
 * real part and Im a in b's); a conjugation splits the result. bound: the
 * magnitude of the values (a power of two normally): they are bootstrapped
 * read as v / bound (the message ratio 2^r then puts the bound at 2^-r of
 * q_0), so the error is about bound times the bootstrap's error on [-1, 1],
 * and values beyond the bound are distorted by the sine, up to ~(2 pi 2^-r v
 * / bound)^2 / 6 relative. Needs the conjugation key. Errors: TS_ENOTSUP
 * (STC_FIRST), TS_EINVAL (a == b, scales differ, bound outside 2^-20..2^20),
 * those of ts_boot_bootstrap.
 */
ts_status_t ts_boot_bootstrap_pair(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                   ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *b, double bound);

/*
 * ModRecover: in is a ciphertext at level 0 (higher levels are dropped)
 * whose coefficients carry values at scale in.scale: coefficient rev(j) * g
 * (and (rev(j) + n) * g for the imaginary part) holds value j. out: slot j
 * holds value j (real part only when cfg.real_only), at `level` (<= the
 * level EvalMod ends on; -1 = that level) and scale in.scale. In the sparse,
 * complex case one more level is spent to pack the 2n real results into n
 * complex slots. out may alias in.
 */
ts_status_t ts_boot_mod_recover(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                const ts_ckks_ciphertext_t *in, int level,
                                ts_ckks_ciphertext_t *out);
/* The level ModRecover's output lands on before any requested drop. */
int ts_boot_mod_recover_level(const ts_boot_t *bt);

/*
 * Where a bootstrapper's time goes. Off by default; when on, every bootstrap
 * (ts_boot_bootstrap, _scaled, _pair, ts_boot_mod_recover,
 * ts_boot_slot_to_coeff; ts_boot_mod_raise its phases without a run) adds
 * the wall time of each phase, the backend's
 * queue drained at every phase boundary (so a GPU's asynchronous work is
 * charged to the phase that queued it). The totals are shared by bt and its
 * views and safe to update from several threads; ts_boot_phases reads them
 * (differences of two reads give one call's). Phases:
 *  - MOD_RAISE: the input dropped to level 0, its coefficients lifted to the
 *    top level, and with encapsulation the key switch from s' back to s;
 *  - SUBSUM: the trace onto the slots' subring (sparse slots only: log2(N /
 *    2n) key switches at the top level);
 *  - CTS: CoeffToSlot with the real / imaginary split;
 *  - EVAL_MOD: the scaled sine (once, twice for full complex slots);
 *  - STC: SlotToCoeff, and ModRecover's packing of 2n reals into n slots.
 * What a caller's wall time has beyond their sum is the level drops, the
 * pair's packing and scale bookkeeping (small).
 */
typedef enum ts_boot_phase {
    TS_BOOT_PHASE_MOD_RAISE,
    TS_BOOT_PHASE_SUBSUM,
    TS_BOOT_PHASE_CTS,
    TS_BOOT_PHASE_EVAL_MOD,
    TS_BOOT_PHASE_STC,
    TS_BOOT_PHASE_COUNT
} ts_boot_phase_t;

typedef struct ts_boot_phases {
    uint64_t runs;                    /* ModRaise-to-EvalMod passes (one per bootstrap) */
    uint64_t ns[TS_BOOT_PHASE_COUNT]; /* wall nanoseconds per phase */
} ts_boot_phases_t;

/* Start (true) or stop timing bt's phases (and its views'); TS_EINVAL for NULL. */
ts_status_t ts_boot_profile(const ts_boot_t *bt, bool on);
/* [out] the totals since ts_boot_new; TS_EINVAL for NULL arguments. */
ts_status_t ts_boot_phases(const ts_boot_t *bt, ts_boot_phases_t *out);
/* "mod_raise", "subsum", "cts", "eval_mod", "stc"; NULL out of range. */
const char *ts_boot_phase_name(int phase);

/* ------------------------------------------------ the steps on their own */

/*
 * ModRaise: in at level 0 (dropped there first) -> out at the top level,
 * decrypting to t + q0 I; out's scale is declared q0 (slots read (t + q0 I)
 * / q0). For sparse slots out is traced to the subring (exact, see overview).
 */
ts_status_t ts_boot_mod_raise(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                              const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out);
/*
 * SlotToCoeff at level `level` (>= stc_levels): slots z -> a ciphertext whose
 * coefficients hold z in the order of the overview, scale unchanged, level
 * - stc_levels. Uses the diagonals of the STC_FIRST path (encoded at levels
 * stc_levels..1), so in must be at level stc_levels (higher is dropped).
 */
ts_status_t ts_boot_slot_to_coeff(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                  const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TS_CIRCUITS_H */

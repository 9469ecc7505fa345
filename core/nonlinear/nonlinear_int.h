/* core/nonlinear internals shared across its files (not a public header). */
#ifndef TS_NONLINEAR_INT_H
#define TS_NONLINEAR_INT_H

#include "core/nonlinear/nonlinear.h"

/*
 * ts_nonlinear_pbs_new whose table holds g(f(mid)) instead of f(mid), with
 * g(y) = asin(k y) / k (k = 0: g = identity): after ModRecover's sine,
 * sin(k g(y)) / k = y exactly (the pre-compensation of ts_nonlinear_slots).
 * TS_ERANGE when |k f| >= 1 somewhere.
 */
ts_status_t ts__nonlinear_pbs_new_warped(const ts_tfhe_params_t *tp, ts_nonlinear_fn_t fn,
                                         double lo, double hi, uint64_t p, double out_max, double k,
                                         ts_nonlinear_pbs_t **out);

/*
 * Drop c to the highest level whose prime is within a factor 2 of the parameters' scale
 * (no-op when the level's prime already is): products rescaled by primes far
 * from the scale (EvalMod's 45- and 60-bit primes above a bootstrap's output
 * level on the test-boot-n12 chain) would lose scale bits at every step.
 */
ts_status_t ts__nonlinear_drop_to_scale(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *c);
/* out = a b relinearized and rescaled, the scale put back to the parameters'
 * scale (one more level) once it drifts by more than half a bit. */
ts_status_t ts__nonlinear_mulr(ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *a,
                               ts_ckks_ciphertext_t *b, ts_ckks_ciphertext_t *out);
/* ts_boot_bootstrap, then ts__nonlinear_drop_to_scale. */
ts_status_t ts__nonlinear_bootstrap(ts_ckks_evaluator_t *ev, const ts_boot_t *bt,
                                    ts_ckks_ciphertext_t *c);

/*
 * The mutable state of one ts_nonlinear_lut_he look-up at a time: scratch
 * polynomials, RLWEs and LWEs, the TFHE evaluator tev and the trace of cw
 * (both borrowed; cw NULL: he's convert object's own trace). The tables of
 * he are only read, so workers with distinct tev and cw may evaluate at
 * once (ts_nonlinear_lut_he_eval is the worker made with he, on the
 * convert object's own evaluator and trace).
 */
typedef struct ts__nonlinear_lut_he_worker ts__nonlinear_lut_he_worker_t;
ts_status_t ts__nonlinear_lut_he_worker_new(const ts_nonlinear_lut_he_t *he,
                                            ts_tfhe_evaluator_t *tev, ts_convert_worker_t *cw,
                                            ts__nonlinear_lut_he_worker_t **out);
void ts__nonlinear_lut_he_worker_free(ts__nonlinear_lut_he_worker_t *w);
/* ts_nonlinear_lut_he_eval with worker w. */
ts_status_t ts__nonlinear_lut_he_eval_on(const ts_nonlinear_lut_he_t *he,
                                         ts__nonlinear_lut_he_worker_t *w, const ts_tfhe_rlwe_t *x,
                                         ts_tfhe_rlwe_t *y, ts_tfhe_lwe_t *seg, ts_tfhe_lwe_t *val);

/*
 * The number of threads of ts_nonlinear_slots_eval's look-ups (step 3):
 * 0 (the default) = the CKKS ring's backend's thread count, 1 = one value
 * after the other on the calling thread, n > 1 = up to n threads whatever
 * the backend (tests compare the two paths).
 */
void ts__nonlinear_slots_set_threads(ts_nonlinear_slots_t *ns, int threads);

#endif /* TS_NONLINEAR_INT_H */

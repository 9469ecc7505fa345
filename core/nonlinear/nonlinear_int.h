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

/* ITER rsqrt: the step coefficients y <- y (ak[i] - bk[i] x y^2), i < spec.steps. */
void ts__nonlinear_rsqrt_coeffs(const ts_nonlinear_approx_t *a, const double **ak,
                                const double **bk);

#endif /* TS_NONLINEAR_INT_H */

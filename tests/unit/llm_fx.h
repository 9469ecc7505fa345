/*
 * The encrypted engine's test fixture (tests/unit/llm_fx.c), shared by the
 * engine suites: keys (relinearization, the engine's rotations, bootstrapping
 * at the configuration's working slots with sparse-secret encapsulation for
 * dense presets, the TFHE side when the configuration uses it), evaluator,
 * encoder, engine and one session, all from a seeded PRNG.
 */
#ifndef TS_TEST_LLM_FX_H
#define TS_TEST_LLM_FX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/convert/convert.h"
#include "core/llm/llm.h"

typedef struct {
    ts_llm_model_t *m;
    ts_ckks_params_t *p;
    ts_ckks_secret_key_t *sk;
    ts_ckks_evalkeys_t *ek;
    ts_ckks_evaluator_t *ev;
    ts_ckks_encoder_t *ecd;
    ts_prng_t *prng;
    ts_llm_enc_t *enc;
    ts_llm_enc_session_t *s;
    ts_boot_t *boot;
    ts_boot_t *stc;              /* SlotToCoeff-first bootstrapper of the TFHE side */
    ts_convert_t *cv;            /* conversion keys */
    ts_boot_encap_keys_t *encap; /* dense-secret presets */
    ts_boot_t *boot_pd;          /* the residual stream's (llm_fx_period_boot) */
} llm_fx_t;

/* The bootstrapper's message ratio (log2) the next llm_fx_open sets (0:
 * ts_boot_config_slots's); tests that set it reset it to 0. */
extern double llm_fx_log_ratio;

/* The fixture for model m (owned by the fixture from now on) at preset, the
 * engine's configuration cfg (NULL: defaults), bootstrapping when boot; the
 * PRNG is seeded with `seed`. */
void llm_fx_open(llm_fx_t *f, ts_llm_model_t *m, const char *preset, const ts_llm_enc_config_t *cfg,
                 bool boot, uint8_t seed);
void llm_fx_close(llm_fx_t *f);
/* Give the fixture's engine and session the residual stream's bootstrapper
 * (ts_llm_enc_period_boot_config) with its keys; fails the test when the
 * engine cannot take one. */
void llm_fx_period_boot(llm_fx_t *f);
/* The tiny synthetic GPT-2 of tests/unit/llm_tiny.h, loaded (the caller owns it). */
ts_llm_model_t *llm_fx_tiny_gpt2(void);

#endif

/* The encrypted engine's test fixture (tests/unit/llm_fx.h). */
#include <stdlib.h>

#include "tests/unit/llm_fx.h"
#include "tests/unit/llm_tiny.h"
#include "tests/unit/ts_test.h"

double llm_fx_log_ratio = 0.0;

void llm_fx_open(llm_fx_t *f, ts_llm_model_t *m, const char *preset, const ts_llm_enc_config_t *cfg,
                 bool boot, uint8_t seed_byte)
{
    char path[512];
    memset(f, 0, sizeof(*f));
    f->m = m;
    snprintf(path, sizeof(path), "configs/params/%s.yaml", preset);
    ck_assert_ts_ok(ts_ckks_params_load_file(path, true, &f->p, NULL));
    uint8_t seed[TS_SEED_BYTES] = {seed_byte};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 1, &f->prng));
    ck_assert_ts_ok(ts_ckks_keygen_secret(f->p, f->prng, &f->sk));
    ck_assert_ts_ok(ts_ckks_evalkeys_new(f->p, &f->ek));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_relin(f->ek, f->sk, f->prng));
    if (boot) {
        ts_boot_config_t bc;
        /* at the engine's working slot count (times its lanes) when the
         * configuration sets one */
        int ll = 0;
        while (cfg && (1 << ll) < cfg->lanes)
            ll++;
        ck_assert_ts_ok(ts_boot_config_slots(
            f->p, cfg && cfg->log_slots ? cfg->log_slots + ll : ts_ckks_params_log_slots(f->p),
            &bc));
        if (llm_fx_log_ratio > 0)
            bc.log_message_ratio = llm_fx_log_ratio;
        bool dense = ts_ckks_params_secret(f->p) != TS_CKKS_SECRET_SPARSE_TERNARY;
        if (dense) /* sparse-secret encapsulation, h' = 32 as boot-n16-dense */
            ck_assert_ts_ok(ts_boot_config_encapsulate(f->p, 32, &bc));
        ck_assert_ts_ok(ts_boot_keygen(f->p, &bc, f->ek, f->sk, f->prng));
        ck_assert_ts_ok(ts_boot_new(f->p, &bc, &f->boot));
        if (dense) {
            ck_assert_ts_ok(ts_boot_encap_keygen(f->p, &bc, f->sk, f->prng, &f->encap));
            ck_assert_ts_ok(ts_boot_set_encap_keys(f->boot, f->encap));
        }
    }
    ck_assert_ts_ok(ts_llm_enc_new(f->m, f->p, cfg, f->boot, &f->enc));
    if (ts_llm_enc_uses_tfhe(f->enc)) {
        ts_boot_config_t bc;
        ck_assert_ts_ok(ts_llm_enc_tfhe_boot_config(f->enc, &bc));
        ck_assert_ts_ok(ts_boot_keygen(f->p, &bc, f->ek, f->sk, f->prng));
        ck_assert_ts_ok(ts_boot_new(f->p, &bc, &f->stc));
        if (f->encap)
            ck_assert_ts_ok(ts_boot_set_encap_keys(f->stc, f->encap));
        ts_tfhe_params_lit_t lit;
        ck_assert_ts_ok(ts_llm_enc_tfhe_literal(f->enc, &lit));
        ck_assert_ts_ok(ts_convert_keygen(f->p, f->sk, &lit, f->prng, &f->cv));
    }
    size_t n = 0;
    ck_assert_ts_ok(ts_llm_enc_rotation_steps(f->enc, NULL, &n));
    int64_t *steps = malloc(n * sizeof(int64_t));
    ck_assert_ptr_nonnull(steps);
    ck_assert_ts_ok(ts_llm_enc_rotation_steps(f->enc, steps, &n));
    ck_assert_ts_ok(ts_ckks_evalkeys_gen_rotations(f->ek, f->sk, steps, n, f->prng));
    free(steps);
    ck_assert_ts_ok(ts_ckks_evaluator_new(f->p, f->ek, &f->ev));
    ck_assert_ts_ok(ts_ckks_encoder_new(f->p, &f->ecd));
    ck_assert_ts_ok(ts_llm_enc_session_new(f->enc, f->ev, &f->s));
    if (f->cv)
        ck_assert_ts_ok(ts_llm_enc_session_set_tfhe(f->s, f->cv, f->stc));
}

void llm_fx_period_boot(llm_fx_t *f)
{
    ts_boot_config_t pc;
    ck_assert_ts_ok(ts_llm_enc_period_boot_config(f->enc, &pc));
    ck_assert_int_eq(pc.log_slots, ts_llm_enc_period_log_slots(f->enc));
    ck_assert_ts_ok(ts_boot_keygen(f->p, &pc, f->ek, f->sk, f->prng));
    ck_assert_ts_ok(ts_boot_new(f->p, &pc, &f->boot_pd));
    if (f->encap)
        ck_assert_ts_ok(ts_boot_set_encap_keys(f->boot_pd, f->encap));
    ck_assert_ts_ok(ts_llm_enc_set_boot_period(f->enc, f->boot_pd));
    ck_assert_ts_ok(ts_llm_enc_session_set_boot_period(f->s, f->boot_pd));
    ck_assert_ptr_eq(ts_llm_enc_boot_period(f->enc), f->boot_pd);
}

void llm_fx_close(llm_fx_t *f)
{
    ts_llm_enc_session_free(f->s);
    ts_llm_enc_free(f->enc);
    ts_boot_free(f->boot_pd);
    ts_boot_free(f->boot);
    ts_boot_free(f->stc);
    ts_boot_encap_keys_free(f->encap);
    ts_convert_free(f->cv);
    ts_ckks_encoder_free(f->ecd);
    ts_ckks_evaluator_free(f->ev);
    ts_ckks_evalkeys_free(f->ek);
    ts_ckks_secret_key_free(f->sk);
    ts_prng_free(f->prng);
    ts_ckks_params_free(f->p);
    ts_llm_model_free(f->m);
}

ts_llm_model_t *llm_fx_tiny_gpt2(void)
{
    size_t n = 0;
    uint8_t *g = tiny_gpt2_gguf(&n);
    ck_assert_ptr_nonnull(g);
    ts_llm_model_t *m = NULL;
    char err[256] = "";
    ck_assert_msg(ts_llm_model_load_buffer(g, n, &m, err, sizeof err) == TS_OK, "%s", err);
    free(g);
    ck_assert_int_eq(ts_llm_model_config(m)->arch, TS_LLM_ARCH_GPT2);
    return m;
}

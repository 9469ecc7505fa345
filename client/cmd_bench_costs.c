/*
 * tessera bench costs: measure the scheduler's cost table (core/sched
 * ts_sched_costs_t) on this machine with the real engine, and write it in the
 * format of configs/costs/cpu-default.yaml (ts_sched_costs_save).
 *
 * Measured: CKKS add, plaintext product, ct-ct product with relinearization,
 * rotation, rescale and encoding at every level of the preset (median of the
 * repetitions; rescale at level 0 does not exist and is extrapolated from
 * level 1); bootstrapping latency and output level (core/circuits, when the
 * preset admits bootstrapping); TFHE PBS and HomComp (core/tfhe, preset
 * tfhe_std128 by default, the ROSETTA shape); when the preset bootstraps,
 * the conversions as the encrypted engine runs them (measure_convert: one
 * conversion, and per value a 2- or 4-segment LUT or a PBS). Not measured
 * and kept from the built-in estimate (resampled to the preset's levels):
 * extract_ns and recover_ns (unused once roundtrip_ns is measured), the
 * small-ring products and Traces (small_pmul_ns, trace_ns), and
 * bootstrapping and conversions when the preset cannot bootstrap. The table has a single
 * `estimated` flag: it is false only when every entry was measured; the note and a trailing comment
 * block list which entries are measured and which are estimated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/llm_cli.h"
#include "core/circuits/circuits.h"
#include "core/convert/convert.h"
#include "core/llm/llm.h"
#include "core/sched/sched.h"
#include "core/tfhe/tfhe.h"
#include "server/ckks_wire.h"
#include "server/tesserad.h"

typedef struct bench_opts {
    const char *params, *params_dir, *out, *backend, *tfhe;
    bool quick, json, insecure, no_convert;
    int reps;
    int log_slots;          /* --slots: the bootstrappers' slot count (0: the preset's) */
    int period_log_slots;   /* --period-slots: a bootstrap at that count too (0: none) */
    int boot_cts, boot_stc; /* --boot-dft: the DFT level budgets (0: the defaults) */
    /* --boot-slots: the main chain's bootstrap also at these counts (log2) */
    int boot_log_slots[TS_SCHED_MAX_BOOT_SLOTS - 1];
    int n_boot_slots;
} bench_opts_t;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    return v[n / 2];
}

/* Per-level CKKS operations; each entry the median of o->reps runs. */
/*
 * The pieces of a double-hoisted BSGS product (ts_ckks_bsgs, enc.c matvec) of
 * x at its level, 8 baby steps, one giant step: the decomposition of x (the
 * fixed part of ts_ckks_bsgs_new, from 2 and 8 baby steps), a baby rotation,
 * a diagonal (encoded and multiplied in one run of 8), a rotating giant step
 * and the ModDown. Every step is 1 (one rotation key; a rotation costs the
 * same whatever its step). Medians of o->reps runs into c's bsgs_* at l.
 */
#define BSGS_NB 8
static ts_status_t measure_bsgs(const bench_opts_t *o, ts_ckks_params_t *p, ts_ckks_evaluator_t *ev,
                                ts_ckks_encoder_t *enc, const ts_ckks_ciphertext_t *x,
                                const double *dg, size_t slots, int l, ts_sched_costs_t *c)
{
    int64_t steps[BSGS_NB], v[5][64];
    steps[0] = 0;
    for (int b = 1; b < BSGS_NB; b++)
        steps[b] = 1;
    double sc = (double)ts_ckks_params_q(p, (size_t)l);
    ts_ckks_ciphertext_t *out = NULL;
    ts_status_t st = ts_ckks_ciphertext_new(p, l, &out);
    for (int r = 0; st == TS_OK && r < o->reps; r++) {
        ts_ckks_bsgs_t *h2 = NULL, *h = NULL;
        uint64_t t0 = ts_now_ns();
        st = ts_ckks_bsgs_new(ev, x, steps, 2, &h2);
        uint64_t t1 = ts_now_ns();
        ts_ckks_bsgs_free(h2);
        uint64_t t2 = ts_now_ns();
        if (st == TS_OK)
            st = ts_ckks_bsgs_new(ev, x, steps, BSGS_NB, &h);
        uint64_t t3 = ts_now_ns();
        if (st == TS_OK)
            st = ts_ckks_bsgs_mul_add_run(h, 0, BSGS_NB, enc, dg, slots, sc);
        uint64_t t4 = ts_now_ns();
        if (st == TS_OK)
            st = ts_ckks_bsgs_giant(h, 1);
        uint64_t t5 = ts_now_ns();
        if (st == TS_OK)
            st = ts_ckks_bsgs_finish(h, out);
        uint64_t t6 = ts_now_ns();
        ts_ckks_bsgs_free(h);
        int64_t two = (int64_t)(t1 - t0), all = (int64_t)(t3 - t2);
        int64_t baby = (all - two) / (BSGS_NB - 2);
        v[0][r] = two - baby;
        v[1][r] = baby;
        v[2][r] = (int64_t)(t4 - t3) / BSGS_NB;
        v[3][r] = (int64_t)(t5 - t4);
        v[4][r] = (int64_t)(t6 - t5);
    }
    int64_t *dst[5] = {c->bsgs_hoist_ns, c->bsgs_baby_ns, c->bsgs_diag_ns, c->bsgs_giant_ns,
                       c->bsgs_moddown_ns};
    for (int k = 0; st == TS_OK && k < 5; k++) {
        int64_t m = median(v[k], o->reps);
        dst[k][l] = m > 0 ? m : 1; /* the validator wants positive latencies */
    }
    ts_ckks_ciphertext_free(out);
    return st;
}

/*
 * One BSGS diagonal (encoded over Q_l P and multiplied, as measure_bsgs) at
 * level l on ciphertexts of 2^lg[i] slots for each of the n counts (c's
 * diag_by_slots): a lanes engine's or a longer session's encodings cost more
 * than the table's slots say (their sparse NTTs grow with the slots).
 */
static ts_status_t measure_diag_slots(const bench_opts_t *o, ts_ckks_params_t *p,
                                      ts_ckks_secret_key_t *sk, ts_ckks_evaluator_t *ev,
                                      ts_ckks_encoder_t *enc, ts_prng_t *rng, const int *lg, int n,
                                      int l, ts_sched_costs_t *c)
{
    int64_t steps[BSGS_NB], v[64];
    steps[0] = 0;
    for (int b = 1; b < BSGS_NB; b++)
        steps[b] = 1;
    double scale = ts_ckks_params_scale(p), sc = (double)ts_ckks_params_q(p, (size_t)l);
    size_t most = (size_t)1 << lg[n - 1];
    double *x = malloc(BSGS_NB * most * sizeof *x);
    ts_ckks_ciphertext_t *ct = NULL;
    ts_status_t st = x ? ts_ckks_ciphertext_new(p, l, &ct) : TS_ENOMEM;
    for (size_t i = 0; st == TS_OK && i < BSGS_NB * most; i++) {
        double r;
        st = ts_prng_double(rng, &r);
        x[i] = r - 0.5;
    }
    c->n_diag_slots = c->n_diag_slots_ns = 0;
    for (int i = 0; st == TS_OK && i < n; i++) {
        size_t slots = (size_t)1 << lg[i];
        ts_ckks_bsgs_t *h = NULL;
        st = ts_ckks_encrypt_sk_real(enc, sk, x, slots, slots, l, scale, rng, NULL, ct);
        if (st == TS_OK)
            st = ts_ckks_bsgs_new(ev, ct, steps, BSGS_NB, &h);
        for (int r = 0; st == TS_OK && r < o->reps; r++) {
            uint64_t t0 = ts_now_ns();
            st = ts_ckks_bsgs_mul_add_run(h, 0, BSGS_NB, enc, x, slots, sc);
            v[r] = (int64_t)(ts_now_ns() - t0) / BSGS_NB;
        }
        ts_ckks_bsgs_free(h);
        if (st != TS_OK)
            break;
        int64_t m = median(v, o->reps);
        c->diag_slots[c->n_diag_slots++] = (int64_t)slots;
        c->diag_slots_ns[c->n_diag_slots_ns++] = m > 0 ? m : 1;
        fprintf(stderr, "tessera bench costs: a BSGS diagonal at %zu slots, level %d: %.3f ms\n",
                slots, l, (double)m / 1e6);
    }
    ts_ckks_ciphertext_free(ct);
    free(x);
    return st;
}

static ts_status_t measure_ckks(const bench_opts_t *o, ts_ckks_params_t *p,
                                ts_ckks_secret_key_t *sk, ts_ckks_evaluator_t *ev,
                                ts_ckks_encoder_t *enc, ts_prng_t *rng, ts_sched_costs_t *c)
{
    int top = ts_ckks_params_max_level(p);
    /* at the table's slots: encodings and the BSGS diagonals cost less at
     * sparse slots (the rest does not depend on them) */
    size_t slots = (size_t)c->slots;
    double scale = ts_ckks_params_scale(p);
    double *x = malloc(BSGS_NB * slots * sizeof *x);
    ts_ckks_ciphertext_t *a = NULL, *b = NULL, *t = NULL, *u = NULL, *out = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_status_t st = x ? TS_OK : TS_ENOMEM;
    for (size_t i = 0; st == TS_OK && i < BSGS_NB * slots; i++) {
        double r;
        st = ts_prng_double(rng, &r);
        x[i] = r - 0.5;
    }
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, top, &a);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, top, &b);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, top, &t);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, top, &u);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, top, &out);
    if (st == TS_OK)
        st = ts_ckks_plaintext_new(p, top, &pt);
    if (st == TS_OK)
        st = ts_ckks_encrypt_sk_real(enc, sk, x, slots, slots, top, scale, rng, NULL, t);
    if (st == TS_OK)
        st = ts_ckks_encrypt_sk_real(enc, sk, x, slots, slots, top, scale, rng, NULL, u);
    int64_t v[6][64];
    for (int l = top; st == TS_OK && l >= 0; l--) {
        st = ts_ckks_drop_to_level(ev, t, l, a);
        if (st == TS_OK)
            st = ts_ckks_drop_to_level(ev, u, l, b);
        if (st == TS_OK)
            st = ts_ckks_encode_real(enc, x, slots, slots, l, scale, pt);
        for (int r = 0; st == TS_OK && r < o->reps; r++) {
            uint64_t t0 = ts_now_ns();
            st = ts_ckks_add(ev, a, b, out);
            uint64_t t1 = ts_now_ns();
            if (st == TS_OK)
                st = ts_ckks_mul_plain(ev, a, pt, out);
            uint64_t t2 = ts_now_ns();
            if (st == TS_OK && l > 0)
                st = ts_ckks_rescale(ev, out, out);
            uint64_t t3 = ts_now_ns();
            if (st == TS_OK)
                st = ts_ckks_mul_relin(ev, a, b, out);
            uint64_t t4 = ts_now_ns();
            if (st == TS_OK)
                st = ts_ckks_rotate(ev, a, 1, out);
            uint64_t t5 = ts_now_ns();
            if (st == TS_OK)
                st = ts_ckks_encode_real(enc, x, slots, slots, l, scale, pt);
            uint64_t t6 = ts_now_ns();
            v[5][r] = (int64_t)(t6 - t5);
            v[0][r] = (int64_t)(t1 - t0);
            v[1][r] = (int64_t)(t2 - t1);
            v[2][r] = (int64_t)(t3 - t2);
            v[3][r] = (int64_t)(t4 - t3);
            v[4][r] = (int64_t)(t5 - t4);
        }
        if (st != TS_OK)
            break;
        c->add_ns[l] = median(v[0], o->reps);
        c->pmul_ns[l] = median(v[1], o->reps);
        c->rescale_ns[l] = median(v[2], o->reps);
        c->cmul_ns[l] = median(v[3], o->reps);
        c->rot_ns[l] = median(v[4], o->reps);
        c->encode_ns[l] = median(v[5], o->reps);
        st = measure_bsgs(o, p, ev, enc, a, x, slots, l, c);
    }
    /* No rescale below level 0: half of level 1's (one limb instead of two). */
    if (st == TS_OK)
        c->rescale_ns[0] = top > 0 ? c->rescale_ns[1] / 2 : 1;
    for (int l = 0; l <= top; l++) /* the validator wants positive latencies */
        if (c->add_ns[l] <= 0)
            c->add_ns[l] = 1;
    c->n_add = c->n_pmul = c->n_cmul = c->n_rot = c->n_rescale = c->n_encode = (size_t)top + 1;
    c->n_bsgs_hoist = c->n_bsgs_baby = c->n_bsgs_diag = c->n_bsgs_giant = c->n_bsgs_moddown =
        (size_t)top + 1;
    ts_ckks_plaintext_free(pt);
    ts_ckks_ciphertext_free(out);
    ts_ckks_ciphertext_free(u);
    ts_ckks_ciphertext_free(t);
    ts_ckks_ciphertext_free(b);
    ts_ckks_ciphertext_free(a);
    free(x);
    return st;
}

/* Bootstrapping: *measured false (and nothing changed) when the preset cannot
 * bootstrap. */
static ts_status_t measure_boot(const bench_opts_t *o, ts_ckks_params_t *p, ts_boot_t *bt,
                                ts_ckks_secret_key_t *sk, ts_ckks_evaluator_t *ev,
                                ts_ckks_encoder_t *enc, ts_prng_t *rng, int64_t *ns)
{
    size_t slots = (size_t)1 << ts_boot_config(bt)->log_slots;
    double *x = calloc(slots, sizeof *x);
    ts_ckks_ciphertext_t *ct = NULL, *in = NULL;
    ts_status_t st = x ? TS_OK : TS_ENOMEM;
    for (size_t i = 0; i < slots && x; i++)
        x[i] = 0.25 * (double)(i % 7) / 7.0;
    int top = ts_ckks_params_max_level(p);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, top, &ct);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, top, &in);
    if (st == TS_OK)
        st = ts_ckks_encrypt_sk_real(enc, sk, x, slots, slots, top, ts_ckks_params_scale(p), rng,
                                     NULL, in);
    int reps = o->quick ? 1 : 3;
    int64_t v[3];
    for (int r = 0; st == TS_OK && r < reps; r++) {
        st = ts_ckks_drop_to_level(ev, in, 0, ct);
        uint64_t t0 = ts_now_ns();
        if (st == TS_OK)
            st = ts_boot_bootstrap(bt, ev, ct, ct);
        v[r] = (int64_t)(ts_now_ns() - t0);
    }
    if (st == TS_OK)
        *ns = median(v, reps);
    ts_ckks_ciphertext_free(in);
    ts_ckks_ciphertext_free(ct);
    free(x);
    return st;
}

static int64_t ident(void *ctx, uint64_t m)
{
    (void)ctx;
    return (int64_t)m;
}

/* The main chain's bootstrapper at 2^log_slots slots, as tesserad makes it:
 * dense secrets with encapsulation (h' = 32); TS_ELEVEL where the chain
 * leaves no level. */
static ts_status_t boot_make(ts_ckks_params_t *p, int log_slots, bool encapsulate, int cts, int stc,
                             ts_boot_config_t *cfg, ts_boot_t **bt)
{
    int left = -1;
    ts_status_t st =
        ts_llm_boot_config(p, log_slots, encapsulate ? ts_llm_boot_encap_h(p) : 0, cts, stc, cfg);
    if (st == TS_OK)
        st = ts_boot_depth(p, cfg, NULL, NULL, NULL, &left);
    if (st == TS_OK && left < 0)
        st = TS_ELEVEL;
    if (st == TS_OK)
        st = ts_boot_new(p, cfg, bt);
    return st;
}

/* --boot-slots: a bootstrapper of the main chain at 2^log_slots slots, with
 * its own keys (made, measured and freed here: one slot count's keys at a
 * time), encapsulated as the main one */
static ts_status_t measure_boot_at(const bench_opts_t *o, ts_ckks_params_t *p, int log_slots,
                                   const ts_boot_encap_keys_t *encap, ts_ckks_secret_key_t *sk,
                                   ts_ckks_encoder_t *enc, ts_prng_t *rng, int64_t *ns)
{
    ts_boot_config_t cfg;
    ts_ckks_evalkeys_t *ek = NULL;
    ts_ckks_evaluator_t *ev = NULL;
    ts_boot_t *bt = NULL;
    ts_status_t st = boot_make(p, log_slots, encap != NULL, 0, 0, &cfg, &bt);
    if (st == TS_OK && encap)
        st = ts_boot_set_encap_keys(bt, encap);
    if (st == TS_OK)
        st = ts_ckks_evalkeys_new(p, &ek);
    if (st == TS_OK)
        st = ts_boot_keygen(p, &cfg, ek, sk, rng);
    if (st == TS_OK && !ts_ckks_evalkeys_has_relin(ek))
        st = ts_ckks_evalkeys_gen_relin(ek, sk, rng);
    if (st == TS_OK)
        st = ts_ckks_evaluator_new(p, ek, &ev);
    if (st == TS_OK)
        st = measure_boot(o, p, bt, sk, ev, enc, rng, ns);
    ts_ckks_evaluator_free(ev);
    ts_ckks_evalkeys_free(ek);
    ts_boot_free(bt);
    return st;
}

/* PBS (8-valued LUT) and HomComp (at the largest safe width, at most 8 bits). */
static ts_status_t measure_tfhe(const bench_opts_t *o, ts_sched_costs_t *c, char *why,
                                size_t why_size)
{
    ts_tfhe_params_lit_t lit;
    ts_tfhe_params_t *tp = NULL;
    ts_tfhe_lwe_key_t *lk = NULL, *big = NULL;
    ts_tfhe_rlwe_key_t *rk = NULL;
    ts_tfhe_evalkey_t *ek = NULL;
    ts_tfhe_evaluator_t *ev = NULL;
    ts_tfhe_lut_t *lut = NULL;
    ts_tfhe_lwe_t *in = NULL, *out = NULL;
    ts_prng_t *rng = NULL;
    ts_status_t st = ts_tfhe_params_preset(o->tfhe, &lit);
    if (st != TS_OK) {
        snprintf(why, why_size, "unknown TFHE preset \"%s\"", o->tfhe);
        return st;
    }
    st = ts_tfhe_params_new(&lit, &tp);
    if (st == TS_OK)
        st = ts_prng_new_os(&rng);
    if (st == TS_OK)
        st = ts_tfhe_lwe_key_new(lit.lwe_n, lit.lwe_secret, rng, &lk);
    if (st == TS_OK)
        st = ts_tfhe_rlwe_key_new(tp, rng, &rk);
    if (st == TS_OK)
        st = ts_tfhe_rlwe_key_lwe(rk, &big);
    if (st == TS_OK)
        st = ts_tfhe_evalkey_new(tp, lk, rk, NULL, rng, &ek);
    if (st == TS_OK)
        st = ts_tfhe_evaluator_new(tp, ek, &ev);
    uint64_t q = ts_tfhe_params_q_br(tp);
    uint32_t n_br = ts_tfhe_params_n_br(tp);
    if (st == TS_OK)
        st = ts_tfhe_lut_new(tp, 8, ident, NULL, ts_tfhe_delta(q, 8), &lut);
    if (st == TS_OK)
        st = ts_tfhe_lwe_new(n_br, q, &in);
    if (st == TS_OK)
        st = ts_tfhe_lwe_new(n_br, q, &out);
    if (st == TS_OK)
        st = ts_tfhe_lwe_encrypt(big, in, ts_tfhe_encode(q, 3, 8), lit.rlwe_sigma, rng);
    int reps = o->quick ? 2 : 5;
    int64_t v[8];
    for (int r = 0; st == TS_OK && r < reps; r++) {
        uint64_t t0 = ts_now_ns();
        st = ts_tfhe_pbs(ev, out, in, lut);
        v[r] = (int64_t)(ts_now_ns() - t0);
    }
    if (st == TS_OK)
        c->pbs_ns = median(v, reps);
    uint32_t bits = ts_tfhe_homcomp_max_bits(tp);
    if (bits > 8)
        bits = 8;
    if (st == TS_OK && bits >= 2) {
        uint64_t p = (uint64_t)1 << bits;
        st = ts_tfhe_lwe_encrypt(big, in, ts_tfhe_encode(q, p / 3, p), lit.rlwe_sigma, rng);
        for (int r = 0; st == TS_OK && r < reps; r++) {
            uint64_t t0 = ts_now_ns();
            st = ts_tfhe_homcomp(ev, out, in, bits, p / 2, ts_tfhe_delta(q, 2));
            v[r] = (int64_t)(ts_now_ns() - t0);
        }
        if (st == TS_OK)
            c->homcomp_ns = median(v, reps);
    } else if (st == TS_OK) {
        snprintf(why, why_size, "no safe HomComp width at %s", o->tfhe);
        st = TS_ERANGE;
    }
    if (st != TS_OK && !why[0])
        snprintf(why, why_size, "TFHE at %s: %s", o->tfhe, ts_strerror(st));
    ts_tfhe_lwe_free(out);
    ts_tfhe_lwe_free(in);
    ts_tfhe_lut_free(lut);
    ts_tfhe_evaluator_free(ev);
    ts_tfhe_evalkey_free(ek);
    ts_tfhe_lwe_key_free(big);
    ts_tfhe_rlwe_key_free(rk);
    ts_tfhe_lwe_key_free(lk);
    ts_tfhe_params_free(tp);
    ts_prng_free(rng);
    return st;
}

/*
 * Conversions as the encrypted engine runs them (core/llm: the SlotToCoeff-
 * first bootstrapper of ts_llm_tfhe_boot_config, the small ring of
 * ts_llm_tfhe_literal, ts_nonlinear_slots): one evaluation of k values
 * at the engine's input level, for k = 1 and k = kmax, in three ways: a
 * segmented LUT of 2 and of 4 segments (the engine's 1/x and 1/sqrt(x)
 * look-ups: 32 entries, log bounds) and one PBS per value (the tfhe
 * policy). The values of a conversion are looked up W at a time (the
 * ring backend's threads): per round of W values the slope
 * (t(kmax) - t(1)) / (ceil(kmax / W) - 1); one conversion without its values
 * (StC, RingSwitch, split, merge, ModRecover): the median of the three
 * intercepts t(1) - slope. Writes roundtrip_ns, lut_seg / lut_value_ns,
 * pbs_value_ns, workers (W) and extract_depth (the StC budget).
 */
static ts_status_t measure_convert(const bench_opts_t *o, ts_ckks_params_t *p,
                                   ts_ckks_secret_key_t *sk, ts_ckks_evalkeys_t *ek,
                                   ts_ckks_evaluator_t *ev, ts_ckks_encoder_t *enc, ts_prng_t *rng,
                                   int log_slots, const ts_boot_encap_keys_t *encap, int encap_h,
                                   ts_sched_costs_t *c, char *why, size_t why_size)
{
    ts_boot_config_t bc;
    ts_tfhe_params_lit_t lit;
    ts_boot_t *stc = NULL;
    ts_convert_t *cv = NULL;
    ts_nonlinear_approx_t *ap[3] = {NULL, NULL, NULL};
    ts_nonlinear_slots_t *ns = NULL;
    ts_ckks_ciphertext_t *in = NULL, *out = NULL;
    size_t slots = (size_t)1 << log_slots;
    double *x = malloc(slots * sizeof *x);
    ts_status_t st = x ? TS_OK : TS_ENOMEM;
    if (st == TS_OK)
        st = ts_llm_tfhe_boot_config(p, log_slots, encap_h, &bc);
    if (st == TS_OK)
        st = ts_llm_tfhe_literal(p, &lit);
    if (st == TS_OK)
        st = ts_boot_keygen(p, &bc, ek, sk, rng);
    if (st == TS_OK)
        st = ts_boot_new(p, &bc, &stc);
    if (st == TS_OK && encap)
        st = ts_boot_set_encap_keys(stc, encap);
    if (st == TS_OK)
        st = ts_convert_keygen(p, sk, &lit, rng, &cv);
    if (st != TS_OK) {
        snprintf(why, why_size, "conversion keys at %s: %s", o->params, ts_strerror(st));
        goto out;
    }
    /* values on the small ring: a prefix of the slots */
    size_t sub = 0;
    while (sub < slots && ts_convert_slot_coeff(ts_ckks_params_log_n(p), bc.log_slots,
                                                ts_convert_n_br(cv), sub, false) >= 0)
        sub++;
    size_t kmax = o->quick ? 8 : 16;
    if (kmax > sub)
        kmax = sub;
    if (kmax < 2) {
        snprintf(why, why_size, "conversions at %s: %zu slots on the small ring", o->params, sub);
        st = TS_ENOTSUP;
        goto out;
    }
    size_t at[16];
    for (size_t i = 0; i < kmax; i++)
        at[i] = i;
    int in_level = bc.stc_levels + 1;
    for (size_t i = 0; i < slots; i++)
        x[i] = 1.0;
    st = ts_ckks_ciphertext_new(p, in_level, &in);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(p, in_level, &out);
    if (st == TS_OK)
        st = ts_ckks_encrypt_sk_real(enc, sk, x, slots, slots, in_level, ts_ckks_params_scale(p),
                                     rng, NULL, in);
    /* the engine's 1/x look-up on [0.125, 4] with 2 and 4 segments; PBS on the same range */
    const int segs[2] = {2, 4};
    for (int m = 0; m < 3 && st == TS_OK; m++) {
        ts_nonlinear_spec_t sp;
        memset(&sp, 0, sizeof sp);
        sp.lo = 0.125;
        sp.hi = 4.0;
        if (m < 2) {
            sp.method = TS_NL_LUT;
            sp.n_seg = segs[m];
            sp.n_br = 32;
            sp.bounds = TS_NL_BOUNDS_LOG;
            sp.index_bits = 5;
        } else {
            sp.method = TS_NL_ITER;
            sp.steps = 1;
        }
        st = ts_nonlinear_approx_new(TS_NL_FN_RECIP, &sp, &ap[m]);
    }
    /* the look-ups of a conversion run `workers` at a time (the ring
     * backend's threads, ts_nonlinear_slots_eval): kmax values take
     * ceil(kmax / workers) rounds */
    ts_backend_t *be = ts_ring_backend(ts_ckks_params_ring(p));
    size_t workers = be && be->threads > 1 ? (size_t)be->threads : 1;
    if (workers > kmax / 2)
        workers = kmax / 2 > 1 ? kmax / 2 : 1;
    size_t rounds = (kmax + workers - 1) / workers;
    double icpt[3], slope[3];
    for (int m = 0; m < 3 && st == TS_OK; m++) {
        ts_nonlinear_slots_cfg_t sc;
        ts_nonlinear_slots_mode_t mode = m < 2 ? TS_NL_SLOTS_HYBRID : TS_NL_SLOTS_TFHE;
        ts_nonlinear_slots_cfg_default(mode, &sc);
        sc.out_scale = ts_ckks_params_scale(p);
        st = ts_nonlinear_slots_new(cv, stc, ap[m], &sc, &ns);
        int64_t v[2][64];
        for (int r = 0; st == TS_OK && r < o->reps; r++) {
            for (int k = 0; k < 2 && st == TS_OK; k++) {
                uint64_t t0 = ts_now_ns();
                st = ts_nonlinear_slots_eval(ns, ev, in, at, k ? kmax : 1, -1, out);
                v[k][r] = (int64_t)(ts_now_ns() - t0);
            }
        }
        if (st == TS_OK) {
            double t1 = (double)median(v[0], o->reps), tk = (double)median(v[1], o->reps);
            slope[m] = (tk - t1) / (double)(rounds - 1);
            if (slope[m] < 1)
                slope[m] = 1;
            icpt[m] = t1 - slope[m];
            fprintf(stderr,
                    "tessera bench costs: conversion (%s): 1 value %.1f ms, %zu values %.1f ms\n",
                    m == 0   ? "LUT, 2 segments"
                    : m == 1 ? "LUT, 4 segments"
                             : "PBS",
                    t1 / 1e6, kmax, tk / 1e6);
        }
        ts_nonlinear_slots_free(ns);
        ns = NULL;
    }
    if (st != TS_OK) {
        snprintf(why, why_size, "conversions at %s: %s", o->params, ts_strerror(st));
        goto out;
    }
    /* the median of the three intercepts */
    double a = icpt[0], b = icpt[1], d = icpt[2];
    double med = a > b ? (b > d ? b : (a > d ? d : a)) : (a > d ? a : (b > d ? d : b));
    c->roundtrip_ns = med > 1 ? (int64_t)med : 1;
    c->n_lut_seg = c->n_lut_value = 2;
    for (int m = 0; m < 2; m++) {
        c->lut_seg[m] = segs[m];
        c->lut_value_ns[m] = (int64_t)slope[m];
    }
    c->pbs_value_ns = (int64_t)slope[2];
    c->workers = (int64_t)workers;
    c->extract_depth = bc.stc_levels;
out:
    for (int m = 0; m < 3; m++)
        ts_nonlinear_approx_free(ap[m]);
    ts_nonlinear_slots_free(ns);
    ts_ckks_ciphertext_free(in);
    ts_ckks_ciphertext_free(out);
    ts_convert_free(cv);
    ts_boot_free(stc);
    free(x);
    return st;
}

/* A per-level list of the default estimate resampled to max_level + 1 entries
 * (the default's level l, clamped to its last entry). */
static void resample(const int64_t *src, size_t n_src, int64_t *dst, size_t *n_dst, int max_level)
{
    for (int l = 0; l <= max_level; l++)
        dst[l] = src[(size_t)l < n_src ? (size_t)l : n_src - 1];
    *n_dst = (size_t)max_level + 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessera bench costs --params PRESET --out FILE [--backend cpu|gpu|auto]\n"
            "                           [--quick] [--json] [--tfhe PRESET] [--reps N]\n"
            "                           [--no-convert] [--slots S] [--period-slots S]\n"
            "                           [--boot-dft C:S] [--boot-slots S,S,...]\n"
            "                           [--params-dir D] [--insecure-params]\n\n"
            "Measure the scheduler's cost table (latency of every CKKS operation per level,\n"
            "bootstrapping, PBS, HomComp) on this machine and write it to FILE in the format of\n"
            "configs/costs/cpu-default.yaml; use it with `tessera plan --costs FILE`.\n"
            "Conversions are measured as the encrypted engine runs them (one conversion,\n"
            "and per value a 2- or 4-segment LUT or a PBS) when the preset bootstraps.\n"
            "Entries not measured (small-ring products and Traces, and bootstrapping and\n"
            "conversions for presets that cannot bootstrap) keep the built-in estimate;\n"
            "the note and a comment at the end of FILE say which. Bootstrapping runs at\n"
            "--slots S (the engine's working slot count, `tessera plan --slots`; default\n"
            "the preset's), with sparse-secret encapsulation (h' = 32) for dense secrets,\n"
            "as tesserad bootstraps.\n\n"
            "      --params PRESET     CKKS preset (configs/params/PRESET.yaml)\n"
            "      --tfhe PRESET       TFHE preset for PBS/HomComp (default tfhe_std128;\n"
            "                          tfhe_test_small with --quick --insecure-params)\n"
            "      --backend B         compute backend: cpu, gpu or auto (default auto;\n"
            "                          env TESSERA_BACKEND)\n"
            "      --quick             one repetition per entry (default 5)\n"
            "      --no-convert        skip the conversions (keep their estimate)\n"
            "      --period-slots S    also a bootstrap at S < --slots slots with the same\n"
            "                          level budgets: the engine's residual stream, which\n"
            "                          repeats every pow2(dim) slots (64 for aidreams260K)\n"
            "                          (bootstrap.period_slots, period_latency_ns)\n"
            "      --boot-dft C:S      the --slots bootstrapper's CoeffToSlot / SlotToCoeff\n"
            "                          level budgets (default: ts_boot_config_slots's), as\n"
            "                          tesserad chooses them for a model (its log, `tessera\n"
            "                          plan --params --log-level debug`)\n"
            "      --boot-slots S,...  also bootstraps of the same chain at these slot\n"
            "                          counts (powers of two: a lanes engine's or a longer\n"
            "                          session's working slots), with --slots' own\n"
            "                          (bootstrap.by_slots, by_slots_ns); the plan prices\n"
            "                          a bootstrap at its slots from them; and a BSGS\n"
            "                          diagonal at those counts (ckks.diag_by_slots,\n"
            "                          diag_by_slots_ns): an operation's encodings are\n"
            "                          priced at its ciphertexts' slots\n"
            "      --json              print a JSON summary on stdout\n\n%s",
            ts_cli_exit_help);
}

/* argv[0] is "costs". */
int ts_bench_costs(int argc, char **argv)
{
    bench_opts_t o = {.params_dir = "configs/params", .backend = getenv("TESSERA_BACKEND")};
    o.reps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--params") && has)
            o.params = argv[++i];
        else if (!strcmp(a, "--out") && has)
            o.out = argv[++i];
        else if (!strcmp(a, "--backend") && has)
            o.backend = argv[++i];
        else if (!strcmp(a, "--tfhe") && has)
            o.tfhe = argv[++i];
        else if (!strcmp(a, "--params-dir") && has)
            o.params_dir = argv[++i];
        else if (!strcmp(a, "--reps") && has)
            o.reps = atoi(argv[++i]);
        else if (!strcmp(a, "--quick"))
            o.quick = true;
        else if (!strcmp(a, "--json"))
            o.json = true;
        else if (!strcmp(a, "--insecure-params"))
            o.insecure = true;
        else if (!strcmp(a, "--no-convert"))
            o.no_convert = true;
        else if (!strcmp(a, "--slots") && has) {
            long v = atol(argv[++i]);
            o.log_slots = v >= 2 ? ts_log2_exact((uint64_t)v) : -1;
            if (o.log_slots < 1) {
                fprintf(stderr, "tessera bench costs: --slots is a power of two >= 2\n");
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--boot-dft") && has) {
            if (!ts_cli_llm_parse_boot_dft(argv[++i], &o.boot_cts, &o.boot_stc)) {
                fprintf(stderr, "tessera bench costs: --boot-dft is C:S (0..8 each; 0:0 the "
                                "defaults)\n");
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--period-slots") && has) {
            long v = atol(argv[++i]);
            o.period_log_slots = v >= 2 ? ts_log2_exact((uint64_t)v) : -1;
            if (o.period_log_slots < 1) {
                fprintf(stderr, "tessera bench costs: --period-slots is a power of two >= 2\n");
                return TS_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--boot-slots") && has) {
            const char *q = argv[++i];
            o.n_boot_slots = 0;
            while (*q) {
                char *end = NULL;
                long v = strtol(q, &end, 10);
                int lg = v >= 2 && v <= (1L << 20) ? ts_log2_exact((uint64_t)v) : -1;
                if (end == q || lg < 1 || (*end && *end != ',') ||
                    o.n_boot_slots >= (int)(sizeof o.boot_log_slots / sizeof o.boot_log_slots[0])) {
                    fprintf(stderr,
                            "tessera bench costs: --boot-slots is a list of at most %d "
                            "powers of two in [2, 2^20], comma-separated\n",
                            (int)(sizeof o.boot_log_slots / sizeof o.boot_log_slots[0]));
                    return TS_EXIT_USAGE;
                }
                o.boot_log_slots[o.n_boot_slots++] = lg;
                q = *end ? end + 1 : end;
            }
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return TS_EXIT_OK;
        } else {
            fprintf(stderr, "tessera bench costs: bad option \"%s\"\n", a);
            usage(stderr);
            return TS_EXIT_USAGE;
        }
    }
    if (!o.params || !o.out) {
        fprintf(stderr, "tessera bench costs: --params and --out are required\n");
        return TS_EXIT_USAGE;
    }
    if (o.reps <= 0 || o.reps > 64)
        o.reps = o.quick ? 1 : 5;
    if (!o.tfhe)
        o.tfhe = o.quick && o.insecure ? "tfhe_test_small" : "tfhe_std128";
    char be_name[16], why_be[400];
    ts_status_t st =
        ts_srv_backend_apply(o.backend, be_name, sizeof be_name, why_be, sizeof why_be);
    if (st != TS_OK) {
        fprintf(stderr, "tessera bench costs: %s\n", why_be);
        return st == TS_EINVAL ? TS_EXIT_USAGE : TS_EXIT_FAIL;
    }
    fprintf(stderr, "tessera bench costs: backend %s (%s)\n", be_name, why_be);

    ts_sched_costs_t c;
    ts_sched_costs_default(&c);
    const ts_sched_costs_t def = c;
    char why[256] = "";
    ts_ckks_params_t *p = NULL;
    uint8_t id[32];
    st = ts_wire_params_get(o.params_dir, o.params, o.insecure, &p, id, why, sizeof why);
    if (st != TS_OK) {
        fprintf(stderr, "tessera bench costs: %s\n", why[0] ? why : ts_strerror(st));
        return TS_EXIT_LOCAL;
    }
    int top = ts_ckks_params_max_level(p);
    if (top + 1 > TS_SCHED_MAX_LEVELS) {
        fprintf(stderr, "tessera bench costs: %d levels exceed the table's %d\n", top + 1,
                TS_SCHED_MAX_LEVELS);
        ts_ckks_params_free(p);
        return TS_EXIT_LOCAL;
    }
    snprintf(c.name, sizeof c.name, "%s-%s", be_name, o.params);
    snprintf(c.backend, sizeof c.backend, "%s", be_name);
    snprintf(c.params, sizeof c.params, "%s", o.params);
    if (!strcmp(be_name, "cpu"))
        snprintf(c.cpu, sizeof c.cpu, "%s", ts_cpu_kernels());
    c.max_level = top;
    int log_slots = o.log_slots ? o.log_slots : ts_ckks_params_log_slots(p);
    c.slots = (int64_t)1 << log_slots;
    resample(def.recover_ns, def.n_recover, c.recover_ns, &c.n_recover, top);
    if (def.extract_depth > top)
        c.extract_depth = top;

    ts_prng_t *rng = NULL;
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_evalkeys_t *ek = NULL;
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_evaluator_t *ev = NULL;
    ts_boot_t *bt = NULL, *bt_pd = NULL;
    ts_boot_encap_keys_t *encap = NULL;
    ts_boot_config_t cfg;
    /* as tesserad: dense secrets bootstrap with encapsulation */
    bool dense = ts_llm_boot_encap_h(p) > 0;
    bool boot_ok = boot_make(p, log_slots, dense, o.boot_cts, o.boot_stc, &cfg, &bt) == TS_OK;
    bool boot_measured = false, tfhe_measured = false;
    const int64_t step = 1;
    st = ts_prng_new_os(&rng);
    if (st == TS_OK)
        st = ts_ckks_keygen_secret(p, rng, &sk);
    if (st == TS_OK)
        st = ts_ckks_evalkeys_new(p, &ek);
    if (st == TS_OK && boot_ok)
        st = ts_boot_keygen(p, &cfg, ek, sk, rng);
    if (st == TS_OK && boot_ok && dense)
        st = ts_boot_encap_keygen(p, &cfg, sk, rng, &encap);
    if (st == TS_OK && encap)
        st = ts_boot_set_encap_keys(bt, encap);
    if (st == TS_OK && !ts_ckks_evalkeys_has_relin(ek))
        st = ts_ckks_evalkeys_gen_relin(ek, sk, rng);
    /* a full key (bootstrapping's may be capped at its levels): measured at every level */
    if (st == TS_OK)
        st = ts_ckks_evalkeys_gen_rotations(ek, sk, &step, 1, rng);
    if (st == TS_OK)
        st = ts_ckks_encoder_new(p, &enc);
    if (st == TS_OK)
        st = ts_ckks_evaluator_new(p, ek, &ev);
    if (st == TS_OK)
        st = measure_ckks(&o, p, sk, ev, enc, rng, &c);
    /* --boot-slots: the table's slot count and these, increasing, once each */
    int lg[TS_SCHED_MAX_BOOT_SLOTS], n_lg = 0;
    lg[n_lg++] = log_slots;
    for (int i = 0; i < o.n_boot_slots; i++)
        lg[n_lg++] = o.boot_log_slots[i];
    for (int i = 1; i < n_lg; i++)
        for (int j = i; j > 0 && lg[j - 1] > lg[j]; j--) {
            int t = lg[j];
            lg[j] = lg[j - 1];
            lg[j - 1] = t;
        }
    {
        int u = 0;
        for (int i = 0; i < n_lg; i++)
            if (!u || lg[i] != lg[u - 1])
                lg[u++] = lg[i];
        n_lg = u;
    }
    if (st == TS_OK && o.n_boot_slots > 0 && lg[n_lg - 1] > ts_ckks_params_log_slots(p)) {
        fprintf(stderr, "tessera bench costs: --boot-slots %d: %s holds at most %d slots\n",
                1 << lg[n_lg - 1], o.params, 1 << ts_ckks_params_log_slots(p));
        st = TS_EINVAL;
    }
    /* the diagonals at those counts, at a bootstrap's output level (where the
     * engine's products start) */
    if (st == TS_OK && o.n_boot_slots > 0)
        st = measure_diag_slots(&o, p, sk, ev, enc, rng, lg, n_lg,
                                boot_ok ? ts_boot_levels_left(bt) : top, &c);
    if (st != TS_OK) {
        fprintf(stderr, "tessera bench costs: CKKS at %s: %s\n", o.params, ts_strerror(st));
        goto out;
    }
    if (boot_ok) {
        st = measure_boot(&o, p, bt, sk, ev, enc, rng, &c.boot_ns);
        c.boot_output_level = ts_boot_levels_left(bt);
        if (st == TS_OK && o.period_log_slots > 0) {
            /* the residual stream's bootstrapper (core/llm
             * ts_llm_enc_period_boot_config): the same level budgets at fewer slots */
            ts_boot_config_t pc;
            st = o.period_log_slots < log_slots
                     ? ts_boot_config_slots_like(p, o.period_log_slots, &cfg, &pc)
                     : TS_EINVAL;
            if (st == TS_OK)
                st = ts_boot_keygen(p, &pc, ek, sk, rng);
            if (st == TS_OK)
                st = ts_boot_new(p, &pc, &bt_pd);
            if (st == TS_OK && encap)
                st = ts_boot_set_encap_keys(bt_pd, encap);
            if (st == TS_OK)
                st = measure_boot(&o, p, bt_pd, sk, ev, enc, rng, &c.boot_period_ns);
            if (st == TS_OK)
                c.boot_period_slots = (int64_t)1 << o.period_log_slots;
            else
                fprintf(stderr, "tessera bench costs: --period-slots %d: %s\n",
                        1 << o.period_log_slots, ts_strerror(st));
        }
        if (st == TS_OK && o.n_boot_slots > 0) {
            /* --boot-slots: the main chain at other slot counts, with its own
             * count, in increasing order (lg above) */
            c.n_boot_slots = c.n_boot_slots_ns = 0;
            for (int i = 0; i < n_lg && st == TS_OK; i++) {
                int64_t ns = c.boot_ns;
                if (lg[i] != log_slots)
                    st = measure_boot_at(&o, p, lg[i], encap, sk, enc, rng, &ns);
                if (st != TS_OK) {
                    fprintf(stderr, "tessera bench costs: --boot-slots %d: %s\n", 1 << lg[i],
                            ts_strerror(st));
                    break;
                }
                fprintf(stderr, "tessera bench costs: bootstrap at %d slots: %.1f ms\n", 1 << lg[i],
                        ns / 1e6);
                c.boot_slots[c.n_boot_slots++] = (int64_t)1 << lg[i];
                c.boot_slots_ns[c.n_boot_slots_ns++] = ns;
            }
        }
        if (st != TS_OK) {
            fprintf(stderr, "tessera bench costs: bootstrapping at %s: %s\n", o.params,
                    ts_strerror(st));
            goto out;
        }
        boot_measured = true;
    } else {
        c.boot_output_level = top; /* estimate: a refresh to the top level */
    }
    st = measure_tfhe(&o, &c, why, sizeof why);
    if (st != TS_OK) {
        fprintf(stderr, "tessera bench costs: %s\n", why);
        goto out;
    }
    tfhe_measured = true;
    /* conversions need the bootstrapping chain (SlotToCoeff first, ModRecover) */
    bool conv_measured = false;
    if (boot_measured && !o.no_convert) {
        st = measure_convert(&o, p, sk, ek, ev, enc, rng, log_slots, encap, cfg.encap_h, &c, why,
                             sizeof why);
        if (st != TS_OK) {
            fprintf(stderr, "tessera bench costs: %s\n", why);
            goto out;
        }
        conv_measured = true;
    }

    const char *est_list =
        conv_measured   ? "convert.extract_ns and recover_ns (unused: roundtrip_ns is measured), "
                          "tfhe.small_pmul_ns, tfhe.trace_ns"
        : boot_measured ? "convert.*, tfhe.small_pmul_ns, tfhe.trace_ns"
                        : "bootstrap.*, convert.*, tfhe.small_pmul_ns, tfhe.trace_ns";
    const char *conv_list = conv_measured ? ", convert.roundtrip_ns and extract_depth, "
                                            "tfhe.lut_value_ns (2, 4 segments) and pbs_value_ns "
                                            "(the engine's conversions)"
                                          : "";
    c.estimated = true; /* the small-ring entries are never measured */
    snprintf(c.note, sizeof c.note,
             "tessera bench costs%s: measured ckks.* (rescale_ns[0] extrapolated)%s%s, "
             "tfhe.pbs_ns and tfhe.homcomp_ns (%s); estimated (built-in default, resampled to %d "
             "levels): %s",
             o.quick ? " --quick" : "", boot_measured ? ", bootstrap.*" : "", conv_list, o.tfhe,
             top + 1, est_list);
    char msg[256];
    st = ts_sched_costs_validate(&c, msg, sizeof msg);
    if (st != TS_OK) {
        fprintf(stderr, "tessera bench costs: the measured table does not validate: %s\n", msg);
        goto out;
    }
    st = ts_sched_costs_save(&c, o.out);
    if (st != TS_OK) {
        fprintf(stderr, "tessera bench costs: cannot write %s: %s\n", o.out, ts_strerror(st));
        goto out;
    }
    FILE *f = fopen(o.out, "a");
    if (f) {
        fprintf(f,
                "# provenance (tessera bench costs, backend %s, params %s, tfhe %s):\n"
                "#   measured:  ckks.add_ns pmul_ns cmul_ns rot_ns rescale_ns encode_ns bsgs_* (at "
                "%lld slots; levels 1..%d; level 0 of rescale_ns extrapolated)%s%s%s%s\n"
                "#   estimated: %s\n",
                be_name, o.params, o.tfhe, (long long)c.slots, top,
                c.n_diag_slots ? ", ckks.diag_by_slots (a BSGS diagonal at each count, at a "
                                 "bootstrap's output level)"
                               : "",
                boot_measured ? ", bootstrap.*" : "",
                tfhe_measured ? ", tfhe.pbs_ns homcomp_ns" : "", conv_list, est_list);
        fclose(f);
    }
    fprintf(stderr, "tessera bench costs: %s: top level %d: add %.3f ms, cmul %.3f ms, rot %.3f ms",
            o.params, top, c.add_ns[top] / 1e6, c.cmul_ns[top] / 1e6, c.rot_ns[top] / 1e6);
    fprintf(stderr, "; boot %.1f ms%s; PBS %.2f ms, HomComp %.2f ms", c.boot_ns / 1e6,
            boot_measured ? "" : " (estimate)", c.pbs_ns / 1e6, c.homcomp_ns / 1e6);
    if (conv_measured)
        fprintf(stderr,
                "; conversion %.1f ms + per value LUT-2 %.2f ms, LUT-4 %.2f ms, PBS %.2f ms "
                "(%lld at a time)",
                c.roundtrip_ns / 1e6, c.lut_value_ns[0] / 1e6, c.lut_value_ns[1] / 1e6,
                c.pbs_value_ns / 1e6, (long long)(c.workers > 1 ? c.workers : 1));
    fprintf(stderr, " -> %s\n", o.out);
    if (o.json) {
        printf("{\"benchmark\":\"costs\",\"params\":");
        ts_cli_json_str(stdout, o.params);
        printf(",\"backend\":\"%s\",\"tfhe\":", be_name);
        ts_cli_json_str(stdout, o.tfhe);
        printf(",\"out\":");
        ts_cli_json_str(stdout, o.out);
        printf(",\"boot_period_slots\":%lld,\"boot_period_ns\":%lld",
               (long long)c.boot_period_slots, (long long)c.boot_period_ns);
        printf(",\"boot_by_slots\":[");
        for (size_t i = 0; i < c.n_boot_slots; i++)
            printf("%s{\"slots\":%lld,\"ns\":%lld}", i ? "," : "", (long long)c.boot_slots[i],
                   (long long)c.boot_slots_ns[i]);
        printf("],\"diag_by_slots\":[");
        for (size_t i = 0; i < c.n_diag_slots; i++)
            printf("%s{\"slots\":%lld,\"ns\":%lld}", i ? "," : "", (long long)c.diag_slots[i],
                   (long long)c.diag_slots_ns[i]);
        printf("]");
        printf(",\"max_level\":%d,\"boot_measured\":%s,\"boot_ns\":%lld,\"boot_output_level\":%lld,"
               "\"pbs_ns\":%lld,\"homcomp_ns\":%lld,\"convert_measured\":%s,"
               "\"roundtrip_ns\":%lld,\"lut2_value_ns\":%lld,\"lut4_value_ns\":%lld,"
               "\"pbs_value_ns\":%lld,\"workers\":%lld,\"levels\":[",
               top, boot_measured ? "true" : "false", (long long)c.boot_ns,
               (long long)c.boot_output_level, (long long)c.pbs_ns, (long long)c.homcomp_ns,
               conv_measured ? "true" : "false", (long long)c.roundtrip_ns,
               (long long)(c.n_lut_value > 0 ? c.lut_value_ns[0] : 0),
               (long long)(c.n_lut_value > 1 ? c.lut_value_ns[1] : 0), (long long)c.pbs_value_ns,
               (long long)(c.workers > 1 ? c.workers : 1));
        for (int l = 0; l <= top; l++)
            printf("%s{\"level\":%d,\"add_ns\":%lld,\"pmul_ns\":%lld,\"cmul_ns\":%lld,"
                   "\"rot_ns\":%lld,\"rescale_ns\":%lld,\"encode_ns\":%lld,"
                   "\"bsgs_hoist_ns\":%lld,\"bsgs_baby_ns\":%lld,\"bsgs_diag_ns\":%lld,"
                   "\"bsgs_giant_ns\":%lld,\"bsgs_moddown_ns\":%lld}",
                   l ? "," : "", l, (long long)c.add_ns[l], (long long)c.pmul_ns[l],
                   (long long)c.cmul_ns[l], (long long)c.rot_ns[l], (long long)c.rescale_ns[l],
                   (long long)c.encode_ns[l], (long long)c.bsgs_hoist_ns[l],
                   (long long)c.bsgs_baby_ns[l], (long long)c.bsgs_diag_ns[l],
                   (long long)c.bsgs_giant_ns[l], (long long)c.bsgs_moddown_ns[l]);
        printf("]}\n");
    }
out:
    ts_boot_free(bt_pd);
    ts_boot_free(bt);
    ts_boot_encap_keys_free(encap);
    ts_ckks_evaluator_free(ev);
    ts_ckks_encoder_free(enc);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(rng);
    ts_ckks_params_free(p);
    return st == TS_OK ? TS_EXIT_OK : TS_EXIT_FAIL;
}

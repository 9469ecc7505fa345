/*
 * The 128-bit CKKS <-> TFHE conversion (core/convert with the tfhe_conv128
 * set) at a CKKS preset (default boot-n16-dense, N = 2^16, 128-bit):
 *  1. the PBS input noise of the TFHE set on Q = q_0: the phase error after
 *     key switching and the ModSwitch to 2 N_br over many samples, against
 *     the model (ts_tfhe_noise_estimate), with the fraction of samples past
 *     the half box of p = 64, 128, 256 (measured vs model), and a number of
 *     full PBS at p = 64 (wrong decodings counted);
 *  2. key generation (the CKKS secret, the SlotToCoeff-first bootstrapping
 *     keys at 2^log_slots slots as the decode engine uses them, the
 *     conversion keys), key sizes (ts_convert_keys_bytes, serialized);
 *  3. one conversion of K values with the engine's LUT shape (1/sqrt(x) on
 *     [0.005, 1], 4 segments x 32 intervals, index_bits 5) in both modes
 *     (HYBRID: the three-step segmented look-up; TFHE: one PBS per value),
 *     end to end (ts_nonlinear_slots_eval) with its precision against the
 *     cleartext reference, twice: look-ups one after the other, then on the
 *     backend's threads (TS_THREADS; the outputs compared word for word),
 *     and stage by stage (SlotToCoeff, RingSwitch down,
 *     X^-c + Trace per value, the look-up per value, shift + sum + RingSwitch
 *     up, ModRecover).
 * Times are the process's CPU time (run with TS_THREADS=1 for single-thread
 * numbers on a shared machine) or, with --wall, the wall clock.
 *
 * Usage: bench_convert128 [--json PATH] [--quick] [--params NAME|PATH]
 *        [--tfhe NAME] [--values K] [--log-slots S] [--samples N] [--pbs N]
 *        [--no-hybrid] [--no-recover] [--wall] [--br LOG_BASE LEVELS]
 * --br: another blind-rotation gadget for the TFHE set (the set keeps its name).
 * --quick: test-boot-n12 (insecure CKKS, same TFHE set), fewer samples.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/base/base.h"
#include "core/nonlinear/nonlinear.h"
#include "core/nonlinear/nonlinear_int.h"

/* The clock of every measurement: the process's CPU time (default; with
 * TS_THREADS=1 this is the single-thread time and does not grow with the
 * load of a shared machine) or the wall clock (--wall). */
static bool use_wall = false;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(use_wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long max_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        ts_status_t st_ = (x);                                                                     \
        if (st_ != TS_OK) {                                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ts_strerror(st_));          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static int64_t ident(void *ctx, uint64_t m)
{
    (void)ctx;
    return (int64_t)m;
}

typedef struct {
    double std_meas, std_model;
    double frac_meas[3], frac_model[3]; /* p = 64, 128, 256 */
    int samples, pbs, pbs_wrong;
    double pbs_s;
} noise_res_t;

/* The TFHE part alone: own keys on Q = q0. */
static void measure_noise(const ts_tfhe_params_lit_t *lit0, uint64_t q0, int samples, int pbs,
                          noise_res_t *r)
{
    ts_tfhe_params_lit_t lit = *lit0;
    lit.q_br = q0;
    ts_tfhe_params_t *tp;
    TRY(ts_tfhe_params_new(&lit, &tp));
    uint8_t seed[TS_SEED_BYTES] = {7, 7};
    ts_prng_t *prng;
    TRY(ts_prng_new_seeded(seed, 3, &prng));
    ts_tfhe_lwe_key_t *small, *big;
    ts_tfhe_rlwe_key_t *rk;
    ts_tfhe_evalkey_t *ek;
    ts_tfhe_evaluator_t *ev;
    TRY(ts_tfhe_lwe_key_new(lit.lwe_n, lit.lwe_secret, prng, &small));
    TRY(ts_tfhe_rlwe_key_new(tp, prng, &rk));
    TRY(ts_tfhe_rlwe_key_lwe(rk, &big));
    TRY(ts_tfhe_evalkey_new(tp, small, rk, NULL, prng, &ek));
    TRY(ts_tfhe_evaluator_new(tp, ek, &ev));
    uint32_t nbr = ts_tfhe_params_n_br(tp);
    uint64_t Q = ts_tfhe_params_q_br(tp), two_n = 2ull * nbr;
    ts_tfhe_lwe_t *in, *sm, *s2, *out;
    TRY(ts_tfhe_lwe_new(nbr, Q, &in));
    TRY(ts_tfhe_lwe_new(nbr, Q, &out));
    TRY(ts_tfhe_lwe_new(lit.lwe_n, ts_tfhe_params_q_lwe(tp), &sm));
    TRY(ts_tfhe_lwe_new(lit.lwe_n, two_n, &s2));
    ts_tfhe_noise_t nz;
    TRY(ts_tfhe_noise_estimate(tp, 64, &nz));
    double sum2 = 0;
    int past[3] = {0, 0, 0};
    const double half[3] = {nbr / 128.0, nbr / 256.0, nbr / 512.0};
    for (int i = 0; i < samples; i++) {
        uint64_t mu, ph;
        TRY(ts_prng_uniform(prng, Q, &mu));
        /* the PBS input carries PBS-output-like noise: rlwe_sigma, as a fresh big LWE */
        TRY(ts_tfhe_lwe_encrypt(big, in, mu, lit.rlwe_sigma, prng));
        TRY(ts_tfhe_keyswitch_to_small(ev, sm, in));
        TRY(ts_tfhe_lwe_modswitch(s2, sm));
        TRY(ts_tfhe_lwe_phase(small, s2, &ph));
        double ideal = (double)mu * (double)two_n / (double)Q;
        double e = (double)ph - ideal;
        e -= (double)two_n * floor(e / (double)two_n + 0.5);
        sum2 += e * e;
        for (int k = 0; k < 3; k++)
            past[k] += fabs(e) >= half[k];
    }
    r->samples = samples;
    r->std_meas = sqrt(sum2 / samples);
    r->std_model = sqrt(nz.var_total_2n);
    for (int k = 0; k < 3; k++) {
        ts_tfhe_noise_t nk;
        TRY(ts_tfhe_noise_estimate(tp, 64ull << k, &nk));
        r->frac_meas[k] = (double)past[k] / samples;
        r->frac_model[k] = exp2(nk.log2_pfail);
    }
    /* full PBS at p = 64 */
    ts_tfhe_lut_t *lut;
    TRY(ts_tfhe_lut_new(tp, 64, ident, NULL, ts_tfhe_delta(Q, 64), &lut));
    r->pbs = pbs;
    r->pbs_wrong = 0;
    double t0 = now_s();
    for (int i = 0; i < pbs; i++) {
        uint64_t m, ph;
        TRY(ts_prng_uniform(prng, 64, &m));
        TRY(ts_tfhe_lwe_encrypt(big, in, ts_tfhe_encode(Q, m, 64), lit.rlwe_sigma, prng));
        TRY(ts_tfhe_pbs(ev, out, in, lut));
        TRY(ts_tfhe_lwe_phase(big, out, &ph));
        r->pbs_wrong += ts_tfhe_decode(Q, ph, 64) != m;
    }
    r->pbs_s = pbs ? (now_s() - t0) / pbs : 0;
    ts_tfhe_lut_free(lut);
    ts_tfhe_lwe_free(in);
    ts_tfhe_lwe_free(out);
    ts_tfhe_lwe_free(sm);
    ts_tfhe_lwe_free(s2);
    ts_tfhe_evaluator_free(ev);
    ts_tfhe_evalkey_free(ek);
    ts_tfhe_lwe_key_free(small);
    ts_tfhe_lwe_key_free(big);
    ts_tfhe_rlwe_key_free(rk);
    ts_prng_free(prng);
    ts_tfhe_params_free(tp);
}

/* Do a and b hold the same words (polynomials, level, scale)? */
static bool same_ct(ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *b)
{
    if (ts_ckks_ciphertext_degree(a) != ts_ckks_ciphertext_degree(b) ||
        ts_ckks_ciphertext_level(a) != ts_ckks_ciphertext_level(b) ||
        ts_ckks_ciphertext_scale(a) != ts_ckks_ciphertext_scale(b))
        return false;
    size_t n = ts_ckks_params_n(ts_ckks_ciphertext_params(a));
    bool same = true;
    for (int i = 0; i <= ts_ckks_ciphertext_degree(a) && same; i++) {
        ts_poly_t *pa = ts_ckks_ciphertext_poly(a, i), *pb = ts_ckks_ciphertext_poly(b, i);
        if (pa->nq != pb->nq || pa->np != pb->np || pa->is_ntt != pb->is_ntt)
            return false;
        size_t w = (size_t)(pa->nq + pa->np) * n;
        uint64_t *ha = malloc(w * 8), *hb = malloc(w * 8);
        TRY(ts_poly_download(pa, ha));
        TRY(ts_poly_download(pb, hb));
        same = memcmp(ha, hb, w * 8) == 0;
        free(ha);
        free(hb);
    }
    return same;
}

typedef struct {
    double total_s, seq_s, bits_ref, bits_exact, max_err, bits_rms;
    bool identical; /* the threaded output equals the sequential one word for word */
    int neighbour;  /* HYBRID: values equal to a neighbouring interval's line */
} e2e_t;

/* |y - ref|, or (HYBRID, when closer) the distance to the line of a
 * neighbouring interval of x's segment: the interval index is rounded from a
 * noisy value, so near a rounding tie either line is the look-up's answer
 * (as in tests/unit/test_nonlinear_slots.c). */
static double lut_dist(const ts_nonlinear_lut_t *lut, double x, double y, double ref, int *nb)
{
    double err = fabs(y - ref);
    if (!lut)
        return err;
    int sg = ts_nonlinear_lut_segment(lut, x), i = ts_nonlinear_lut_interval(lut, sg, x);
    double best = err;
    for (int d = -1; d <= 1; d += 2) {
        int i2 = i + d;
        if (i2 < 0 || i2 >= lut->n_br)
            continue;
        size_t e = (size_t)sg * (size_t)lut->n_br + (size_t)i2;
        best = fmin(best, fabs(y - (lut->slope[e] * x + lut->offset[e])));
    }
    if (best < err)
        (*nb)++;
    return best;
}

typedef struct {
    double stc, down, trace, lookup, up, recover; /* seconds; trace and lookup per value */
} stages_t;

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL, *params = "boot-n16-dense", *tfhe = "tfhe_conv128";
    bool quick = false, hybrid = true, recover = true;
    bool values_set = false;
    int K = 4, log_slots = 7, samples = 4096, npbs = 32, br_base = 0, br_levels = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--params") == 0 && i + 1 < argc)
            params = argv[++i];
        else if (strcmp(argv[i], "--tfhe") == 0 && i + 1 < argc)
            tfhe = argv[++i];
        else if (strcmp(argv[i], "--values") == 0 && i + 1 < argc) {
            K = atoi(argv[++i]);
            values_set = true;
        } else if (strcmp(argv[i], "--log-slots") == 0 && i + 1 < argc)
            log_slots = atoi(argv[++i]);
        else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
            samples = atoi(argv[++i]);
        else if (strcmp(argv[i], "--pbs") == 0 && i + 1 < argc)
            npbs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-hybrid") == 0)
            hybrid = false;
        else if (strcmp(argv[i], "--no-recover") == 0)
            recover = false;
        else if (strcmp(argv[i], "--wall") == 0)
            use_wall = true;
        else if (strcmp(argv[i], "--br") == 0 && i + 2 < argc) {
            br_base = atoi(argv[++i]);
            br_levels = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: %s [--json PATH] [--quick] [--params NAME|PATH] [--tfhe NAME] "
                    "[--values K] [--log-slots S] [--samples N] [--pbs N] [--no-hybrid] "
                    "[--no-recover] [--wall] [--br LOG_BASE LEVELS]\n",
                    argv[0]);
            return 2;
        }
    }
    if (quick) {
        params = "test-boot-n12";
        samples = 512;
        npbs = 4;
        K = values_set ? K : 2;
    }
    if (K < 1 || K > 8)
        K = 4;
    ts_log_set_level(TS_LOG_WARN);
    char path[512];
    if (strchr(params, '/'))
        snprintf(path, sizeof(path), "%s", params);
    else
        snprintf(path, sizeof(path), "configs/params/%s.yaml", params);
    ts_ckks_params_t *p;
    ts_cfg_error_t err;
    TRY(ts_ckks_params_load_file(path, true, &p, &err));
    bool secure = !ts_ckks_params_insecure(p);
    ts_tfhe_params_lit_t lit;
    TRY(ts_tfhe_params_preset(tfhe, &lit));
    if (br_base > 0 && br_levels > 0) {
        lit.br_log_base = (uint32_t)br_base;
        lit.br_levels = (uint32_t)br_levels;
    }
    uint64_t q0 = ts_ckks_params_q(p, 0);
    char why[160];
    ts_status_t gate = ts_convert_security_check(p, &lit, why, sizeof(why));
    fprintf(stderr, "params %s (N = 2^%d, %s), TFHE %s: gate %s%s%s\n", ts_ckks_params_name(p),
            ts_ckks_params_log_n(p), secure ? "128-bit" : "INSECURE", tfhe,
            gate == TS_OK ? "passes" : "refuses", gate == TS_OK ? "" : ": ", why);

    /* 1. noise of the TFHE set on q0 */
    noise_res_t nr;
    measure_noise(&lit, q0, samples, npbs, &nr);
    fprintf(stderr,
            "PBS input phase error (2N units): std %.3f measured over %d samples, model %.3f; past "
            "half box p=64/128/256: %.2e/%.2e/%.2e measured, %.2e/%.2e/%.2e model; PBS p=64: %d "
            "wrong of %d, %.3f s each\n",
            nr.std_meas, nr.samples, nr.std_model, nr.frac_meas[0], nr.frac_meas[1],
            nr.frac_meas[2], nr.frac_model[0], nr.frac_model[1], nr.frac_model[2], nr.pbs_wrong,
            nr.pbs, nr.pbs_s);

    /* 2. keys */
    uint8_t seed[TS_SEED_BYTES] = {1, 2, 8, 128};
    ts_prng_t *prng;
    TRY(ts_prng_new_seeded(seed, 9, &prng));
    double t0 = now_s();
    ts_ckks_secret_key_t *sk;
    ts_ckks_encoder_t *enc;
    TRY(ts_ckks_keygen_secret(p, prng, &sk));
    TRY(ts_ckks_encoder_new(p, &enc));
    ts_boot_config_t cfg;
    TRY(ts_boot_config_default(p, &cfg));
    if (secure && ts_ckks_params_secret(p) == TS_CKKS_SECRET_TERNARY)
        TRY(ts_boot_config_encapsulate(p, 32, &cfg));
    cfg.log_slots = log_slots;
    cfg.cts_levels = cfg.stc_levels = log_slots >= 6 ? 3 : 2;
    cfg.order = TS_BOOT_STC_FIRST;
    cfg.real_only = true;
    ts_ckks_evalkeys_t *eks;
    ts_ckks_evaluator_t *ev;
    ts_boot_t *bt;
    ts_boot_encap_keys_t *encap = NULL;
    TRY(ts_ckks_evalkeys_new(p, &eks));
    if (recover) {
        TRY(ts_boot_keygen(p, &cfg, eks, sk, prng));
        if (cfg.encap_h > 0)
            TRY(ts_boot_encap_keygen(p, &cfg, sk, prng, &encap));
    } else {
        /* only what SlotToCoeff needs: every step's key capped at its
         * levels (a step shared with CoeffToSlot is listed at the top; capped
         * here it serves SlotToCoeff only), no CoeffToSlot / EvalMod keys at
         * the top, no ModRecover */
        size_t cnt = 0;
        bool conj;
        ts_boot_rotation_steps(p, &cfg, NULL, NULL, &cnt, &conj);
        int64_t *steps = calloc(cnt + 1, sizeof(int64_t));
        int *levels = calloc(cnt + 1, sizeof(int));
        TRY(ts_boot_rotation_steps(p, &cfg, steps, levels, &cnt, &conj));
        for (size_t i = 0; i < cnt; i++)
            if (levels[i] > cfg.stc_levels)
                levels[i] = cfg.stc_levels;
        TRY(ts_ckks_evalkeys_gen_rotations_at(eks, sk, steps, levels, cnt, prng));
        fprintf(stderr, "SlotToCoeff keys only: %zu rotation steps capped at level %d, %.1f MiB\n",
                cnt, cfg.stc_levels, ts_ckks_evalkeys_bytes(eks) / 1048576.0);
        free(steps);
        free(levels);
    }
    TRY(ts_ckks_evaluator_new(p, eks, &ev));
    TRY(ts_boot_new(p, &cfg, &bt));
    if (encap)
        TRY(ts_boot_set_encap_keys(bt, encap));
    double t_bootkeys = now_s() - t0;
    t0 = now_s();
    ts_convert_t *cv;
    TRY(ts_convert_keygen(p, sk, &lit, prng, &cv));
    double t_cvkeys = now_s() - t0;
    uint8_t *ser = NULL;
    size_t ser_size = 0;
    TRY(ts_convert_keys_serialize(cv, 0, &ser, &ser_size));
    ts_free(ser);
    size_t key_bytes = ts_convert_keys_bytes(cv);
    fprintf(stderr,
            "keys: StC-first boot keys %.1f s, conversion keys %.1f s: %.1f MiB in memory, %.1f "
            "MiB serialized; max RSS %ld MiB\n",
            t_bootkeys, t_cvkeys, key_bytes / 1048576.0, ser_size / 1048576.0, max_rss_mb());

    /* 3. one conversion of K values */
    size_t n = (size_t)1 << log_slots;
    size_t slots[8];
    for (int i = 0; i < K; i++)
        slots[i] = (size_t)i * (n / (size_t)K);
    ts_nonlinear_spec_t sp = {.method = TS_NL_LUT,
                              .lo = 0.005,
                              .hi = 1.0,
                              .n_seg = 4,
                              .n_br = 32,
                              .bounds = TS_NL_BOUNDS_LOG,
                              .index_bits = 5};
    ts_nonlinear_approx_t *a;
    TRY(ts_nonlinear_approx_new(TS_NL_FN_RSQRT, &sp, &a));
    int L = ts_ckks_params_max_level(p);
    double *v = calloc(n, sizeof(double)), *out = calloc(n, sizeof(double));
    e2e_t e2e[2];
    memset(e2e, 0, sizeof(e2e));
    ts_ckks_ciphertext_t *ct;
    TRY(ts_ckks_ciphertext_new(p, L, &ct));
    for (int m = 0; m < 2 && recover; m++) {
        if (m == 0 && !hybrid)
            continue;
        ts_nonlinear_slots_mode_t mode = m == 0 ? TS_NL_SLOTS_HYBRID : TS_NL_SLOTS_TFHE;
        ts_nonlinear_slots_cfg_t sc;
        ts_nonlinear_slots_cfg_default(mode, &sc);
        ts_nonlinear_slots_t *ns;
        TRY(ts_nonlinear_slots_new(cv, bt, a, &sc, &ns));
        double x[8];
        for (size_t j = 0; j < n; j++)
            v[j] = 0.005 + 0.99 * (double)(j % 89) / 89.0;
        for (int i = 0; i < K; i++) {
            uint64_t u;
            TRY(ts_prng_uniform(prng, 1ull << sc.in_bits, &u));
            x[i] = ts_nonlinear_slots_grid(ns, (double)u);
            v[slots[i]] = x[i];
        }
        TRY(ts_ckks_encrypt_sk_real(enc, sk, v, n, n, L, ts_ckks_params_scale(p), prng, NULL, ct));
        /* the look-ups one after the other, then on the backend's threads */
        ts_ckks_ciphertext_t *cs;
        TRY(ts_ckks_ciphertext_new(p, L, &cs));
        TRY(ts_ckks_ciphertext_copy(cs, ct));
        ts__nonlinear_slots_set_threads(ns, 1);
        t0 = now_s();
        TRY(ts_nonlinear_slots_eval(ns, ev, cs, slots, (size_t)K, -1, cs));
        e2e[m].seq_s = now_s() - t0;
        ts__nonlinear_slots_set_threads(ns, 0);
        t0 = now_s();
        TRY(ts_nonlinear_slots_eval(ns, ev, ct, slots, (size_t)K, -1, ct));
        e2e[m].total_s = now_s() - t0;
        e2e[m].identical = same_ct(cs, ct);
        ts_ckks_ciphertext_free(cs);
        ts_ckks_plaintext_t *pt;
        TRY(ts_ckks_plaintext_new(p, ts_ckks_ciphertext_level(ct), &pt));
        TRY(ts_ckks_decrypt(sk, ct, pt));
        TRY(ts_ckks_decode_real(enc, pt, out, n));
        double om = ts_nonlinear_slots_out_max(ns), me = 0, mx = 0, s2 = 0;
        const ts_nonlinear_lut_t *lut = m == 0 ? ts_nonlinear_approx_lut(a) : NULL;
        for (int i = 0; i < K; i++) {
            double d = lut_dist(lut, x[i], out[slots[i]], ts_nonlinear_slots_ref(ns, x[i]),
                                &e2e[m].neighbour);
            s2 += d * d;
            me = fmax(me, fabs(d));
            mx = fmax(mx, fabs(out[slots[i]] - 1.0 / sqrt(x[i])));
        }
        e2e[m].max_err = me;
        e2e[m].bits_rms = -log2(sqrt(s2 / K) / om);
        e2e[m].bits_ref = -log2(me / om);
        e2e[m].bits_exact = -log2(mx / om);
        fprintf(stderr,
                "%s: %d values end to end %.2f s with the look-ups one after the other, %.2f s on "
                "the backend's threads (outputs %s)\n",
                ts_nonlinear_slots_mode_name(mode), K, e2e[m].seq_s, e2e[m].total_s,
                e2e[m].identical ? "identical" : "DIFFERENT");
        fprintf(stderr,
                "%s: %d values end to end %.2f s, max |enc - cleartext LUT| %.3g (%.1f bits of "
                "out_max %.3g; RMS %.1f bits; %d neighbouring-interval picks), max |enc - 1/sqrt "
                "x| %.3g; max RSS %ld MiB\n",
                ts_nonlinear_slots_mode_name(mode), K, e2e[m].total_s, me, e2e[m].bits_ref, om,
                e2e[m].bits_rms, e2e[m].neighbour, mx, max_rss_mb());
        ts_ckks_plaintext_free(pt);
        ts_nonlinear_slots_free(ns);
    }

    /* stage by stage (values as they come: the cost does not depend on them) */
    stages_t stg[2];
    memset(stg, 0, sizeof(stg));
    const ts_tfhe_params_t *tp = ts_convert_tfhe_params(cv);
    uint32_t nbr = ts_convert_n_br(cv);
    uint32_t pos[8];
    for (int i = 0; i < K; i++)
        pos[i] = (uint32_t)ts_convert_slot_coeff(ts_ckks_params_log_n(p), log_slots, nbr, slots[i],
                                                 false);
    ts_tfhe_rlwe_t *r[8], *acc, *y;
    ts_tfhe_lwe_t *lw, *lo;
    for (int i = 0; i < K; i++)
        TRY(ts_tfhe_rlwe_new(tp, &r[i]));
    TRY(ts_tfhe_rlwe_new(tp, &acc));
    TRY(ts_tfhe_rlwe_new(tp, &y));
    TRY(ts_tfhe_lwe_new(nbr, ts_convert_q(cv), &lw));
    TRY(ts_tfhe_lwe_new(nbr, ts_convert_q(cv), &lo));
    ts_nonlinear_lut_he_t *he = NULL;
    TRY(ts_nonlinear_lut_he_new(cv, ts_nonlinear_approx_lut(a), 10, 24, 16.0, &he));
    ts_tfhe_lut_t *plut;
    TRY(ts_tfhe_lut_new(tp, 32, ident, NULL, ts_tfhe_delta(ts_convert_q(cv), 32), &plut));
    for (int m = 0; m < 2; m++) {
        if (m == 0 && !hybrid)
            continue;
        stages_t *s = &stg[m];
        TRY(ts_ckks_encrypt_sk_real(enc, sk, v, n, n, L, ts_ckks_params_scale(p), prng, NULL, ct));
        ts_ckks_ciphertext_t *c;
        TRY(ts_ckks_ciphertext_new(p, L, &c));
        t0 = now_s();
        TRY(ts_convert_slot_to_coeff(bt, ev, ct, c));
        s->stc = now_s() - t0;
        t0 = now_s();
        TRY(ts_convert_ring_down(cv, c, acc));
        s->down = now_s() - t0;
        t0 = now_s();
        for (int i = 0; i < K; i++) {
            TRY(ts_tfhe_rlwe_copy(r[i], acc));
            ts_convert_monomial_mul(cv, r[i], -(int64_t)pos[i]);
            TRY(ts_convert_trace(cv, r[i]));
        }
        s->trace = (now_s() - t0) / K;
        t0 = now_s();
        for (int i = 0; i < K; i++) {
            if (m == 0) {
                TRY(ts_nonlinear_lut_he_eval(he, r[i], y, NULL, NULL));
                TRY(ts_tfhe_rlwe_copy(r[i], y));
            } else {
                TRY(ts_convert_extract(r[i], 0, lw));
                TRY(ts_tfhe_pbs(ts_convert_tfhe_evaluator(cv), lo, lw, plut));
                TRY(ts_convert_lwe_to_rlwe(cv, lo, r[i]));
            }
        }
        s->lookup = (now_s() - t0) / K;
        t0 = now_s();
        TRY(ts_convert_merge(cv, NULL, ev, (const ts_tfhe_rlwe_t *const *)r, pos, (size_t)K,
                             ts_ckks_params_scale(p), 0, c));
        s->up = now_s() - t0;
        TRY(ts_ckks_ciphertext_set_meta(c, 0, 1, ts_ckks_params_scale(p), n));
        t0 = now_s();
        if (recover)
            TRY(ts_convert_mod_recover(bt, ev, c, -1, c));
        s->recover = recover ? now_s() - t0 : -1;
        fprintf(stderr,
                "%s stages: SlotToCoeff %.3f s, RingSwitch down %.3f s, X^-c + Trace %.3f s per "
                "value, look-up %.3f s per value (%s), shift + sum + RingSwitch up %.3f s, "
                "ModRecover %.3f s\n",
                m == 0 ? "hybrid" : "tfhe", s->stc, s->down, s->trace, s->lookup,
                m == 0 ? "HomComp x3 + 6 blind rotations + traces" : "PBS + LWE-to-RLWE", s->up,
                s->recover);
        ts_ckks_ciphertext_free(c);
    }

    FILE *f = json ? fopen(json, "w") : stdout;
    if (!f) {
        perror(json);
        return 1;
    }
    const char *thr = getenv("TS_THREADS");
    fprintf(f,
            "{\n  \"bench\": \"convert128\",\n  \"machine\": {\"cpus\": %d},\n  \"threads\": "
            "%d,\n  \"clock\": \"%s\",\n",
            ts_cpu_count(), thr ? atoi(thr) : ts_cpu_count(), use_wall ? "wall" : "process_cpu");
    fprintf(f,
            "  \"params\": {\"ckks\": \"%s\", \"log_n\": %d, \"secure\": %s, \"tfhe\": \"%s\", "
            "\"n_br\": %u, \"lwe_n\": %u, \"br_gadget\": [%u, %u], \"ks_gadget\": [%u, %u], "
            "\"gate\": \"%s\", \"log_slots\": %d, \"values\": %d, \"lut\": \"rsqrt [0.005, 1] "
            "4x32\"},\n",
            ts_ckks_params_name(p), ts_ckks_params_log_n(p), secure ? "true" : "false", tfhe, nbr,
            lit.lwe_n, lit.br_log_base, lit.br_levels, lit.ks_log_base, lit.ks_levels,
            gate == TS_OK ? "pass" : "refuse", log_slots, K);
    fprintf(f,
            "  \"noise\": {\"samples\": %d, \"std_2n_measured\": %.4f, \"std_2n_model\": %.4f, "
            "\"past_half_box\": {\"p64\": [%.3e, %.3e], \"p128\": [%.3e, %.3e], \"p256\": [%.3e, "
            "%.3e]}, \"pbs_p64\": {\"count\": %d, \"wrong\": %d, \"seconds_each\": %.4f}},\n",
            nr.samples, nr.std_meas, nr.std_model, nr.frac_meas[0], nr.frac_model[0],
            nr.frac_meas[1], nr.frac_model[1], nr.frac_meas[2], nr.frac_model[2], nr.pbs,
            nr.pbs_wrong, nr.pbs_s);
    fprintf(f,
            "  \"keys\": {\"boot_keygen_s\": %.2f, \"convert_keygen_s\": %.2f, "
            "\"convert_bytes\": %zu, \"convert_serialized_bytes\": %zu, \"max_rss_mib\": %ld},\n",
            t_bootkeys, t_cvkeys, key_bytes, ser_size, max_rss_mb());
    for (int m = 0; m < 2; m++) {
        const stages_t *s = &stg[m];
        fprintf(f,
                "  \"%s\": {\"end_to_end_s\": %.3f, \"end_to_end_sequential_s\": %.3f, "
                "\"threaded_identical\": %s, \"bits_vs_lut\": %.2f, \"bits_rms_vs_lut\": "
                "%.2f, \"neighbour_picks\": %d, \"bits_vs_exact\": "
                "%.2f, \"stc_s\": %.3f, \"ring_down_s\": %.3f, \"trace_s_per_value\": %.3f, "
                "\"lookup_s_per_value\": %.3f, \"ring_up_s\": %.3f, \"mod_recover_s\": %.3f}%s\n",
                m == 0 ? "hybrid" : "tfhe", e2e[m].total_s, e2e[m].seq_s,
                e2e[m].identical ? "true" : "false", e2e[m].bits_ref, e2e[m].bits_rms,
                e2e[m].neighbour, e2e[m].bits_exact, s->stc, s->down, s->trace, s->lookup, s->up,
                s->recover, m == 0 ? "," : "");
    }
    fprintf(f, "}\n");
    if (json)
        fclose(f);
    for (int i = 0; i < K; i++)
        ts_tfhe_rlwe_free(r[i]);
    ts_tfhe_rlwe_free(acc);
    ts_tfhe_rlwe_free(y);
    ts_tfhe_lwe_free(lw);
    ts_tfhe_lwe_free(lo);
    ts_tfhe_lut_free(plut);
    ts_nonlinear_lut_he_free(he);
    ts_nonlinear_approx_free(a);
    free(v);
    free(out);
    ts_ckks_ciphertext_free(ct);
    ts_convert_free(cv);
    ts_boot_free(bt);
    ts_boot_encap_keys_free(encap);
    ts_ckks_evaluator_free(ev);
    ts_ckks_evalkeys_free(eks);
    ts_ckks_encoder_free(enc);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
    return 0;
}

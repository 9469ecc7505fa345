/*
 * core/tfhe/params.c — TFHE parameter presets, YAML override, the security
 * check against the Homomorphic Encryption Standard table and the analytic
 * noise / failure-probability formulas of one PBS.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/tfhe/tfhe_int.h"

/* ------------------------------------------------------------- presets */

/*
 * tfhe_std128: the ROSETTA shape (n_LWE = 1024, N_br = 2048, 53-bit modulus).
 * Small LWE: n = 1024, q = 2^26, sigma = 6.4, binary key: log2(q/sigma) =
 * 23.32 against the bound 25.32 - 1 (binary margin) = 24.32.
 * RLWE: N = 2048, Q = largest NTT prime below 2^53, sigma = 3.2, ternary:
 * log2(Q/sigma) = 51.32 against 52.32. See docs/parameters.md.
 */
static const ts_tfhe_params_lit_t preset_std128 = {
    .name = "tfhe_std128",
    .insecure = false,
    .lwe_n = 1024,
    .lwe_logq = 26,
    .lwe_sigma = 6.4,
    .lwe_secret = TS_TFHE_SECRET_BINARY,
    .log_n_br = 11,
    .log_q_br = 53,
    .q_br = 0,
    .rlwe_sigma = 3.2,
    .rlwe_secret = TS_TFHE_SECRET_TERNARY,
    .br_log_base = 25,
    .br_levels = 1,
    .ks_log_base = 4,
    .ks_levels = 5,
};

/* The same with a ternary LWE key (strictly inside the HE-standard table;
 * blind rotation costs two external products per coefficient). */
static const ts_tfhe_params_lit_t preset_std128_ternary = {
    .name = "tfhe_std128_ternary",
    .insecure = false,
    .lwe_n = 1024,
    .lwe_logq = 26,
    .lwe_sigma = 3.2,
    .lwe_secret = TS_TFHE_SECRET_TERNARY,
    .log_n_br = 11,
    .log_q_br = 53,
    .q_br = 0,
    .rlwe_sigma = 3.2,
    .rlwe_secret = TS_TFHE_SECRET_TERNARY,
    .br_log_base = 25,
    .br_levels = 1,
    .ks_log_base = 4,
    .ks_levels = 5,
};

/*
 * tfhe_conv128: the 128-bit set of the CKKS <-> TFHE conversion
 * (core/convert), whose RLWE modulus is the CKKS q_0 (q_br is replaced by it;
 * 60 bits on the 128-bit CKKS presets): N_br = 2^12 admits log2 Q <= 106 in
 * the dense table (room for q_0 and the 46-bit special prime of the small
 * ring's keys), the small LWE is tfhe_std128's (n = 1024, q = 2^26, sigma
 * 6.4, binary). BR gadget 2^15 x 3 (45 of Q's 60 bits): blind-rotation noise
 * 2^-33 of Q, below the trace's. KS gadget 2^2 x 12 (top 24 of 26 bits): key
 * switching from dimension 4096 adds std 1739 (q_lwe units; 2^4 x 5 gave
 * 4355), which keeps HomComp at 10 bits (the engine's HYBRID grid) within
 * 2^-64 per PBS (9 bits with 2^3 x 8, 8 with 2^4 x 5). log_q_br 60 is used
 * only when the set runs on its own (q_br = 0). See docs/parameters.md.
 */
static const ts_tfhe_params_lit_t preset_conv128 = {
    .name = "tfhe_conv128",
    .insecure = false,
    .lwe_n = 1024,
    .lwe_logq = 26,
    .lwe_sigma = 6.4,
    .lwe_secret = TS_TFHE_SECRET_BINARY,
    .log_n_br = 12,
    .log_q_br = 60,
    .q_br = 0,
    .rlwe_sigma = 3.2,
    .rlwe_secret = TS_TFHE_SECRET_TERNARY,
    .br_log_base = 15,
    .br_levels = 3,
    .ks_log_base = 2,
    .ks_levels = 12,
};

/* Insecure sets for fast tests. */
static const ts_tfhe_params_lit_t preset_test_tiny = {
    .name = "tfhe_test_tiny",
    .insecure = true,
    .lwe_n = 64,
    .lwe_logq = 26,
    .lwe_sigma = 2.0,
    .lwe_secret = TS_TFHE_SECRET_BINARY,
    .log_n_br = 8,
    .log_q_br = 40,
    .q_br = 0,
    .rlwe_sigma = 3.2,
    .rlwe_secret = TS_TFHE_SECRET_TERNARY,
    .br_log_base = 10,
    .br_levels = 2,
    .ks_log_base = 4,
    .ks_levels = 5,
};

static const ts_tfhe_params_lit_t preset_test_small = {
    .name = "tfhe_test_small",
    .insecure = true,
    .lwe_n = 256,
    .lwe_logq = 26,
    .lwe_sigma = 2.0,
    .lwe_secret = TS_TFHE_SECRET_BINARY,
    .log_n_br = 10,
    .log_q_br = 50,
    .q_br = 0,
    .rlwe_sigma = 3.2,
    .rlwe_secret = TS_TFHE_SECRET_TERNARY,
    .br_log_base = 12,
    .br_levels = 2,
    .ks_log_base = 4,
    .ks_levels = 5,
};

static const ts_tfhe_params_lit_t *const presets[] = {&preset_std128,     &preset_std128_ternary,
                                                      &preset_conv128,    &preset_test_tiny,
                                                      &preset_test_small, NULL};
static const char *const preset_names[] = {"tfhe_std128",    "tfhe_std128_ternary", "tfhe_conv128",
                                           "tfhe_test_tiny", "tfhe_test_small",     NULL};

const char *const *ts_tfhe_params_preset_names(void)
{
    return preset_names;
}

ts_status_t ts_tfhe_params_preset(const char *name, ts_tfhe_params_lit_t *lit)
{
    if (!name || !lit)
        return TS_EINVAL;
    for (size_t i = 0; presets[i]; i++) {
        if (strcmp(presets[i]->name, name) == 0) {
            *lit = *presets[i];
            return TS_OK;
        }
    }
    return TS_ENOENT;
}

/* ---------------------------------------------------------------- YAML */

typedef struct {
    char name[64];
    bool insecure;
    int64_t lwe_n, lwe_logq, log_n_br, log_q_br, q_br;
    int lwe_secret, rlwe_secret; /* TS_CFG_ENUM stores an int */
    int64_t br_log_base, br_levels, ks_log_base, ks_levels;
    double lwe_sigma, rlwe_sigma;
} yaml_lit_t;

static const char *const secret_choices[] = {"binary", "ternary", NULL};

#define Y_INT(f, lo, hi)                                                                           \
    {                                                                                              \
        .name = #f, .type = TS_CFG_INT, .offset = offsetof(yaml_lit_t, f), .min = lo, .max = hi    \
    }
#define Y_DBL(f, lo, hi)                                                                           \
    {                                                                                              \
        .name = #f, .type = TS_CFG_DOUBLE, .offset = offsetof(yaml_lit_t, f), .dmin = lo,          \
        .dmax = hi                                                                                 \
    }
#define Y_ENUM(f)                                                                                  \
    {                                                                                              \
        .name = #f, .type = TS_CFG_ENUM, .offset = offsetof(yaml_lit_t, f),                        \
        .choices = secret_choices                                                                  \
    }

static const ts_cfg_directive_t yaml_table[] = {
    {.name = "name", .type = TS_CFG_STRING, .offset = offsetof(yaml_lit_t, name), .cap = 64},
    {.name = "insecure", .type = TS_CFG_BOOL, .offset = offsetof(yaml_lit_t, insecure)},
    Y_INT(lwe_n, 1, 1 << 16),
    Y_INT(lwe_logq, 8, 32),
    Y_DBL(lwe_sigma, 0.0, 1e18),
    Y_ENUM(lwe_secret),
    Y_INT(log_n_br, 4, 14),
    Y_INT(log_q_br, 16, 61),
    Y_INT(q_br, 0, (int64_t)1 << 62),
    Y_DBL(rlwe_sigma, 0.0, 1e18),
    Y_ENUM(rlwe_secret),
    Y_INT(br_log_base, 1, 62),
    Y_INT(br_levels, 1, 62),
    Y_INT(ks_log_base, 1, 62),
    Y_INT(ks_levels, 1, 62),
    {.name = NULL},
};

ts_status_t ts_tfhe_params_load_yaml(const char *path, ts_tfhe_params_lit_t *lit,
                                     ts_cfg_error_t *err)
{
    if (!path || !lit)
        return TS_EINVAL;
    yaml_lit_t y;
    memset(&y, 0, sizeof(y));
    memcpy(y.name, lit->name, sizeof(y.name));
    y.insecure = lit->insecure;
    y.lwe_n = lit->lwe_n;
    y.lwe_logq = lit->lwe_logq;
    y.lwe_sigma = lit->lwe_sigma;
    y.lwe_secret = (int)lit->lwe_secret;
    y.log_n_br = lit->log_n_br;
    y.log_q_br = lit->log_q_br;
    y.q_br = (int64_t)lit->q_br;
    y.rlwe_sigma = lit->rlwe_sigma;
    y.rlwe_secret = (int)lit->rlwe_secret;
    y.br_log_base = lit->br_log_base;
    y.br_levels = lit->br_levels;
    y.ks_log_base = lit->ks_log_base;
    y.ks_levels = lit->ks_levels;
    ts_status_t st = ts_config_load_file(path, yaml_table, &y, NULL, err);
    if (st != TS_OK)
        return st;
    ts_tfhe_params_lit_t o = *lit;
    memcpy(o.name, y.name, sizeof(o.name));
    o.name[sizeof(o.name) - 1] = 0;
    o.insecure = y.insecure;
    o.lwe_n = (uint32_t)y.lwe_n;
    o.lwe_logq = (uint32_t)y.lwe_logq;
    o.lwe_sigma = y.lwe_sigma;
    o.lwe_secret = (ts_tfhe_secret_t)y.lwe_secret;
    o.log_n_br = (uint32_t)y.log_n_br;
    o.log_q_br = (uint32_t)y.log_q_br;
    o.q_br = (uint64_t)y.q_br;
    o.rlwe_sigma = y.rlwe_sigma;
    o.rlwe_secret = (ts_tfhe_secret_t)y.rlwe_secret;
    o.br_log_base = (uint32_t)y.br_log_base;
    o.br_levels = (uint32_t)y.br_levels;
    o.ks_log_base = (uint32_t)y.ks_log_base;
    o.ks_levels = (uint32_t)y.ks_levels;
    *lit = o;
    return TS_OK;
}

/* ------------------------------------------------------------ security */

/*
 * Homomorphic Encryption Standard (Albrecht et al., 2018/2019), Table 1,
 * uniform ternary secret, 128-bit classical security, sigma = 3.2: the largest
 * log2(q) for each ring/LWE dimension.
 */
static const struct {
    uint32_t n;
    double logq;
} he_std_128[] = {
    {1024, 27}, {2048, 54}, {4096, 109}, {8192, 218}, {16384, 438}, {32768, 881},
};
#define HE_STD_SIGMA 3.2

ts_status_t ts_tfhe_security_check(uint32_t n, double log2_q, double sigma, ts_tfhe_secret_t secret,
                                   double *margin_bits)
{
    size_t rows = sizeof(he_std_128) / sizeof(he_std_128[0]);
    if (n < he_std_128[0].n || n > he_std_128[rows - 1].n || !(sigma > 0)) {
        if (margin_bits)
            *margin_bits = -INFINITY;
        return TS_ESECURITY;
    }
    double bound = 0;
    for (size_t i = 0; i + 1 < rows; i++) {
        if (n >= he_std_128[i].n && n <= he_std_128[i + 1].n) {
            double t =
                (double)(n - he_std_128[i].n) / (double)(he_std_128[i + 1].n - he_std_128[i].n);
            bound = he_std_128[i].logq + t * (he_std_128[i + 1].logq - he_std_128[i].logq);
            break;
        }
    }
    bound -= log2(HE_STD_SIGMA); /* the table is a bound on log2(q / sigma) at sigma = 3.2 */
    if (secret == TS_TFHE_SECRET_BINARY)
        bound -= 1.0;
    double margin = bound - (log2_q - log2(sigma));
    if (sigma < HE_STD_SIGMA - 1e-9)
        margin = fmin(margin, -1.0); /* noise narrower than the table assumes */
    if (margin_bits)
        *margin_bits = margin;
    return margin >= 0 ? TS_OK : TS_ESECURITY;
}

/* -------------------------------------------------------------- create */

ts_status_t ts_tfhe_params_new(const ts_tfhe_params_lit_t *lit, ts_tfhe_params_t **out)
{
    if (!lit || !out)
        return TS_EINVAL;
    const ts_tfhe_params_lit_t *l = lit;
    if (l->lwe_n == 0 || l->lwe_n > (1u << 16) || l->lwe_logq < 8 || l->lwe_logq > 32 ||
        !(l->lwe_sigma >= 0) || l->log_n_br < 4 || l->log_n_br > 14 || !(l->rlwe_sigma >= 0) ||
        l->br_log_base == 0 || l->br_levels == 0 || l->ks_log_base == 0 || l->ks_levels == 0 ||
        (uint64_t)l->ks_log_base * l->ks_levels > l->lwe_logq ||
        (uint64_t)l->br_log_base * l->br_levels > 62 || l->br_log_base > 30 ||
        (l->lwe_secret != TS_TFHE_SECRET_BINARY && l->lwe_secret != TS_TFHE_SECRET_TERNARY) ||
        (l->rlwe_secret != TS_TFHE_SECRET_BINARY && l->rlwe_secret != TS_TFHE_SECRET_TERNARY))
        return TS_EPARAMS;
    uint32_t n_br = 1u << l->log_n_br;
    /* q_lwe must hold the 2N grid of the blind rotation */
    if (l->lwe_logq < l->log_n_br + 1)
        return TS_EPARAMS;
    uint64_t q = l->q_br;
    if (q == 0) {
        if (l->log_q_br < l->log_n_br + 3 || l->log_q_br > 61)
            return TS_EPARAMS;
        ts_status_t st =
            ts_primes_ntt(l->log_q_br, 2ull * n_br, 1, TS_PRIMES_DESCENDING, NULL, 0, &q);
        if (st != TS_OK)
            return TS_EPARAMS;
    } else if (q >= (1ull << 62) || !ts_is_prime(q) || q % (2ull * n_br) != 1) {
        return TS_EPARAMS;
    }
    if ((uint64_t)l->br_log_base * l->br_levels > 64 - 2 ||
        ldexp(1.0, (int)(l->br_log_base * l->br_levels)) > 4.0 * (double)q)
        return TS_EPARAMS; /* more digits than the modulus has bits */
    if (!l->insecure) {
        double m1 = 0, m2 = 0;
        ts_status_t s1 =
            ts_tfhe_security_check(l->lwe_n, l->lwe_logq, l->lwe_sigma, l->lwe_secret, &m1);
        ts_status_t s2 =
            ts_tfhe_security_check(n_br, log2((double)q), l->rlwe_sigma, l->rlwe_secret, &m2);
        if (s1 != TS_OK || s2 != TS_OK) {
            ts_log(TS_LOG_WARN, "tfhe",
                   "parameter set %s refused: security margins %.2f (LWE) and %.2f (RLWE) bits",
                   l->name, m1, m2);
            return TS_ESECURITY;
        }
    }
    ts_tfhe_params_t *p = ts_calloc(1, sizeof(*p));
    if (!p)
        return TS_ENOMEM;
    p->lit = *l;
    p->lit.name[sizeof(p->lit.name) - 1] = 0;
    p->lit.q_br = q;
    p->n_br = n_br;
    p->q_br = q;
    p->q_lwe = 1ull << l->lwe_logq;
    ts_status_t st = ts_modulus_init(&p->mod_br, q);
    if (st == TS_OK)
        st = ts_gadget_init(&p->gad, q, l->br_log_base, l->br_levels);
    if (st == TS_OK)
        st = ts_ntt_table_new(n_br, q, &p->ntt);
    if (st != TS_OK) {
        ts_tfhe_params_free(p);
        return st;
    }
    *out = p;
    return TS_OK;
}

void ts_tfhe_params_free(ts_tfhe_params_t *params)
{
    if (!params)
        return;
    ts_ntt_table_free(params->ntt);
    ts_free(params);
}

const ts_tfhe_params_lit_t *ts_tfhe_params_literal(const ts_tfhe_params_t *params)
{
    return &params->lit;
}

uint32_t ts_tfhe_params_n_br(const ts_tfhe_params_t *params)
{
    return params->n_br;
}

uint64_t ts_tfhe_params_q_br(const ts_tfhe_params_t *params)
{
    return params->q_br;
}

uint64_t ts_tfhe_params_q_lwe(const ts_tfhe_params_t *params)
{
    return params->q_lwe;
}

/* --------------------------------------------------------------- noise */

static double secret_e2(ts_tfhe_secret_t d)
{
    return d == TS_TFHE_SECRET_BINARY ? 0.5 : 2.0 / 3.0;
}

/* log2 of P(|X| >= t) for X ~ N(0, var): erfc(t / sqrt(2 var)), with the
 * asymptotic expansion where erfc underflows. */
double ts__tfhe_log2_tail(double t, double var)
{
    if (var <= 0)
        return -INFINITY;
    double z = t / sqrt(2.0 * var);
    if (z < 20.0)
        return log2(erfc(z));
    /* erfc(z) ~ exp(-z^2) / (z sqrt(pi)) * (1 - 1/(2z^2)) */
    return (-z * z - log(z * sqrt(3.14159265358979323846)) + log1p(-0.5 / (z * z))) / log(2.0);
}

/* Variance of one blind rotation output (Q units). */
static void br_variance(const ts_tfhe_params_t *p, double *total, double *ext_part)
{
    const ts_tfhe_params_lit_t *l = &p->lit;
    double N = p->n_br, n = l->lwe_n, Q = (double)p->q_br;
    double B = ldexp(1.0, (int)l->br_log_base), L = l->br_levels;
    double var_digit = (B * B + 2.0) / 12.0;
    /* rounding to the kept digits plus the rounded gadget values */
    double var_dec =
        pow(Q / ldexp(1.0, (int)(l->br_log_base * l->br_levels)), 2) / 12.0 + L * var_digit / 12.0;
    double s2 = secret_e2(l->rlwe_secret);
    double ext = 2.0 * L * N * var_digit * l->rlwe_sigma * l->rlwe_sigma;
    double dec = (1.0 + N * s2) * var_dec;
    double v_ext, v_dec;
    if (l->lwe_secret == TS_TFHE_SECRET_BINARY) {
        v_ext = n * ext;
        v_dec = n * dec * 0.5; /* the selector is 1 half of the time */
    } else {
        v_ext = n * 2.0 * ext;
        v_dec = n * dec * (2.0 / 3.0);
    }
    *total = v_ext + v_dec;
    *ext_part = v_ext;
}

ts_status_t ts_tfhe_noise_estimate(const ts_tfhe_params_t *params, uint64_t p, ts_tfhe_noise_t *out)
{
    if (!params || !out || p < 2 || p > params->n_br)
        return TS_EINVAL;
    const ts_tfhe_params_lit_t *l = &params->lit;
    double N = params->n_br, Q = (double)params->q_br, q = (double)params->q_lwe;
    memset(out, 0, sizeof(*out));
    out->var_fresh_small = l->lwe_sigma * l->lwe_sigma;
    br_variance(params, &out->var_br, &out->var_br_ext);
    double s2_big = secret_e2(l->rlwe_secret), s2_small = secret_e2(l->lwe_secret);
    out->var_ms_big = (1.0 + N * s2_big) / 12.0;
    double Bk = ldexp(1.0, (int)l->ks_log_base);
    int drop = (int)l->lwe_logq - (int)(l->ks_log_base * l->ks_levels);
    double var_drop = drop > 0 ? N * s2_big * (ldexp(1.0, 2 * drop) - 1.0) / 12.0 : 0.0;
    out->var_ks =
        N * l->ks_levels * ((Bk * Bk + 2.0) / 12.0) * l->lwe_sigma * l->lwe_sigma + var_drop;
    out->var_ms_2n = (1.0 + l->lwe_n * s2_small) / 12.0;
    double small = out->var_br * (q / Q) * (q / Q) + out->var_ms_big + out->var_ks;
    out->var_total_2n = small * (2.0 * N / q) * (2.0 * N / q) + out->var_ms_2n;
    out->p = p;
    out->half_box_2n = N / (2.0 * (double)p);
    out->log2_pfail = ts__tfhe_log2_tail(out->half_box_2n, out->var_total_2n);
    return TS_OK;
}

size_t ts_tfhe_params_describe(const ts_tfhe_params_t *params, char *buf, size_t size)
{
    const ts_tfhe_params_lit_t *l = &params->lit;
    char tmp[4096];
    size_t len = 0;
    double m1, m2;
    ts_tfhe_security_check(l->lwe_n, l->lwe_logq, l->lwe_sigma, l->lwe_secret, &m1);
    ts_tfhe_security_check(params->n_br, log2((double)params->q_br), l->rlwe_sigma, l->rlwe_secret,
                           &m2);
#define OUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(tmp + len, sizeof(tmp) - len, __VA_ARGS__);                              \
        if (k_ > 0)                                                                                \
            len += (size_t)k_ < sizeof(tmp) - len ? (size_t)k_ : sizeof(tmp) - len - 1;            \
    } while (0)
    OUT("%s%s: LWE n=%u q=2^%u sigma=%.3g %s key (margin %.2f bits); RLWE N=%u Q=%llu (%.2f bits) "
        "sigma=%.3g %s key (margin %.2f bits); BR gadget 2^%u x %u; KS gadget 2^%u x %u\n",
        l->name, l->insecure ? " [INSECURE]" : "", l->lwe_n, l->lwe_logq, l->lwe_sigma,
        l->lwe_secret == TS_TFHE_SECRET_BINARY ? "binary" : "ternary", m1, params->n_br,
        (unsigned long long)params->q_br, log2((double)params->q_br), l->rlwe_sigma,
        l->rlwe_secret == TS_TFHE_SECRET_BINARY ? "binary" : "ternary", m2, l->br_log_base,
        l->br_levels, l->ks_log_base, l->ks_levels);
    ts_tfhe_noise_t nz;
    ts_tfhe_noise_estimate(params, 2, &nz);
    OUT("  noise: BR std 2^%.2f (Q units, 2^%.2f relative), KS std %.1f, ModSwitch(Q->q) std %.2f "
        "(q units), ModSwitch(q->2N) std %.2f, total std %.2f (2N units)\n",
        0.5 * log2(nz.var_br), 0.5 * log2(nz.var_br) - log2((double)params->q_br), sqrt(nz.var_ks),
        sqrt(nz.var_ms_big), sqrt(nz.var_ms_2n), sqrt(nz.var_total_2n));
    for (uint64_t p = 2; p <= 64 && p <= params->n_br; p *= 2) {
        ts_tfhe_noise_estimate(params, p, &nz);
        OUT("  p=%-3llu (%u bits + padding): half box %.1f, failure probability 2^%.1f per PBS\n",
            (unsigned long long)p, (unsigned)log2((double)p), nz.half_box_2n, nz.log2_pfail);
    }
    {
        uint32_t mb = ts_tfhe_homcomp_max_bits(params);
        OUT("  HomComp: up to %u bits at <= 2^-64 per PBS (%u-bit digits, %u PBS at %u bits)\n", mb,
            ts_tfhe_homcomp_digit_bits(params, mb), ts_tfhe_homcomp_pbs_count(params, mb), mb);
    }
#undef OUT
    if (buf && size) {
        size_t c = len < size - 1 ? len : size - 1;
        memcpy(buf, tmp, c);
        buf[c] = 0;
    }
    return len;
}

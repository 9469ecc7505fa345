/*
 * CKKS bootstrapping and ModRecover (see circuits.h for the math and the
 * conventions). The plan of one configuration (the DFT factors in their
 * working view, their levels, the EvalMod polynomial) is computed by the same
 * code for the key list (client side, no keys) and for the bootstrapper.
 */
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/backend/backend.h"
#include "core/circuits/circuits_int.h"

#define MAX_GROUPS 17
static const double PI = 3.14159265358979323846264338327950288;

/* ------------------------------------------------------------ config */

/* sqrt((h + 1) / 12): the deviation of I after ModRaise (h = Hamming weight). */
static double i_sigma(const ts_ckks_params_t *p)
{
    double h = ts_ckks_params_secret(p) == TS_CKKS_SECRET_SPARSE_TERNARY
                   ? (double)ts_ckks_params_hamming_weight(p)
                   : 2.0 * (double)ts_ckks_params_n(p) / 3.0;
    return sqrt((h + 1.0) / 12.0);
}

typedef struct {
    double k;
    int r;
} cosctx_t;

/* cos(2 pi (K x - 1/4) / 2^r): r double angles later, sin(2 pi K x). */
static double scaled_cos(double x, void *ctx)
{
    const cosctx_t *c = ctx;
    return cos(2.0 * PI * (c->k * x - 0.25) / ldexp(1.0, c->r));
}

static double cheb_value(const double *c, size_t d, double x)
{
    double t0 = 1, t1 = x, acc = c[0] + (d >= 1 ? c[1] * x : 0);
    for (size_t i = 2; i <= d; i++) {
        double t2 = 2 * x * t1 - t0;
        acc += c[i] * t2;
        t0 = t1;
        t1 = t2;
    }
    return acc;
}

/* Max |approx - sin(2 pi K x)| after the double angles, on a grid of [-1, 1]. */
static double evalmod_error(const double *c, size_t d, double k, int r)
{
    double worst = 0;
    for (int i = 0; i <= 4000; i++) {
        double x = -1.0 + 2.0 * i / 4000.0;
        double v = cheb_value(c, d, x);
        for (int j = 0; j < r; j++)
            v = 2 * v * v - 1;
        double e = fabs(v - sin(2 * PI * k * x));
        worst = e > worst ? e : worst;
    }
    return worst;
}

/*
 * The smallest degree (15 + 4j) with an EvalMod error below 2^-38 on [-k, k]
 * whose series has also converged (its last four Chebyshev coefficients below
 * 2^-40). The second rule matters: K = 12 meets the error bound at degree 31,
 * but the worst slot after bootstrapping is then ~3 bits worse than at degree
 * 35 (20.8 instead of 24.1 bits at test-boot-n12); for K = 29 it moves 51 to
 * 55 (+0.4 bits on the worst slot). Both keep the depth and the product count.
 */
static ts_status_t fit_degree_search(double k, int r, int *degree)
{
    cosctx_t cc = {.k = k, .r = r};
    double c[256];
    *degree = 255;
    for (int d = 15; d <= 255; d += 4) {
        if (ts_ckks_chebyshev_fit(scaled_cos, &cc, -1, 1, (size_t)d, c) != TS_OK)
            return TS_EINTERNAL;
        double tail = 0;
        for (int i = d - 3; i <= d; i++)
            tail = fmax(tail, fabs(c[i]));
        if (evalmod_error(c, (size_t)d, cc.k, cc.r) < 0x1p-38 && tail < 0x1p-40) {
            *degree = d;
            break;
        }
    }
    return TS_OK;
}

/*
 * The double-angle count r and degree of least EvalMod depth for K: over r =
 * 1..4 the degree fit_degree_search takes, then the fewest levels
 * (Chebyshev depth + r), then the fewest relinearized products (the series'
 * plus r squarings), then the larger r. r = 3 had been fixed: for K = 12 (the
 * h' = 32 encapsulation of the dense presets) it takes degree 35, depth 6 + 3
 * = 9 levels, where r = 2 takes degree 47 in 6 + 2 = 8 (one level more for
 * the computation after every bootstrap); for K = 29 r = 3 stays (degree 55,
 * 9 levels).
 */
static ts_status_t fit_evalmod(double k, int *r_out, int *degree_out)
{
    int best_r = -1, best_d = 0, best_levels = 0;
    size_t best_products = 0;
    for (int r = 1; r <= 4; r++) {
        int d;
        ts_status_t st = fit_degree_search(k, r, &d);
        if (st != TS_OK)
            return st;
        int levels = ts_ckks_chebyshev_depth((size_t)d) + r;
        size_t products = ts_ckks_chebyshev_products((size_t)d) + (size_t)r;
        if (best_r < 0 || levels < best_levels ||
            (levels == best_levels && products <= best_products)) {
            best_r = r;
            best_d = d;
            best_levels = levels;
            best_products = products;
        }
    }
    *r_out = best_r;
    *degree_out = best_d;
    return TS_OK;
}

/* The search is a pure function of K and takes ~250 ms (the decode planner
 * asks for every graph it builds): the answers are remembered, a few K per
 * process. */
#define FIT_MEMO 16
static struct {
    double k;
    int r, degree;
} fit_memo[FIT_MEMO];
static int fit_memo_n;
static pthread_mutex_t fit_memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* cfg->double_angle and cfg->cheb_degree for cfg->k (fit_evalmod). */
static ts_status_t fit_degree(ts_boot_config_t *cfg)
{
    int d = -1, r = -1;
    pthread_mutex_lock(&fit_memo_lock);
    for (int i = 0; i < fit_memo_n; i++)
        if (fit_memo[i].k == cfg->k) {
            d = fit_memo[i].degree;
            r = fit_memo[i].r;
        }
    pthread_mutex_unlock(&fit_memo_lock);
    if (d < 0) {
        ts_status_t st = fit_evalmod(cfg->k, &r, &d);
        if (st != TS_OK)
            return st;
        pthread_mutex_lock(&fit_memo_lock);
        if (fit_memo_n < FIT_MEMO) {
            fit_memo[fit_memo_n].k = cfg->k;
            fit_memo[fit_memo_n].r = r;
            fit_memo[fit_memo_n].degree = d;
            fit_memo_n++;
        }
        pthread_mutex_unlock(&fit_memo_lock);
    }
    cfg->double_angle = r;
    cfg->cheb_degree = d;
    return TS_OK;
}

static int default_dft_levels(int log_slots)
{
    if (log_slots >= 12)
        return 4;
    if (log_slots >= 6)
        return 3;
    if (log_slots >= 2)
        return 2;
    return 1;
}

/*
 * The message ratio at 2^log_slots slots: 2^12 up to 2^11 slots, then one
 * bit lower per four times the slots (2^11 at 2^12-2^13, 2^10 at
 * 2^14-2^15). What it balances (boot-n16-dense, encapsulated,
 * docs/benchmarks.md session 40): the
 * bootstrap's noise is EvalMod's, multiplied by the ratio and summed by
 * SlotToCoeff over the slots: 2^-23.1 at 2^10 slots, 2^-19.1 at 2^14 (one
 * bit per doubling), one bit less per bit of ratio; the sine's cubic term
 * is deterministic and largest where a vector's coefficients are as large
 * as its values (a constant vector: ~2^-23.3 at ratio 2^12, two bits more
 * per bit less), while n random values have coefficients ~ 1 / sqrt(n) of
 * theirs. Each step keeps the worst case within 0.4 bit of the noise ratio
 * 2^12 had at that slot count and lowers the noise of every input: 2^14
 * slots at 2^10, noise 2^-21.1, a constant vector 2^-18.8.
 */
static double message_ratio(int log_slots)
{
    return log_slots <= 11 ? 12.0 : 12.0 - (double)((log_slots - 10) / 2);
}

ts_status_t ts_boot_config_default(const ts_ckks_params_t *params, ts_boot_config_t *cfg)
{
    if (!params || !cfg)
        return TS_EINVAL;
    return ts_boot_config_slots(params, ts_ckks_params_log_slots(params), cfg);
}

ts_status_t ts_boot_config_slots(const ts_ckks_params_t *params, int log_slots,
                                 ts_boot_config_t *cfg)
{
    if (!params || !cfg || log_slots < 1 || log_slots > ts_ckks_params_log_slots(params))
        return TS_EINVAL;
    memset(cfg, 0, sizeof(*cfg));
    cfg->log_slots = log_slots;
    cfg->cts_levels = default_dft_levels(cfg->log_slots);
    /* sparse 2^12 and 2^13 slots: 3 CoeffToSlot levels as below 2^12, one
     * level more for the computation for ~3-5% more time (radix-16 factors;
     * N = 2^14 copy of boot-n16-dense, one thread: 2^12 slots +2.4%, 2^13
     * +4.6%) */
    if (log_slots <= 13 && log_slots < ts_ckks_params_log_n(params) - 1)
        cfg->cts_levels = cfg->cts_levels < 3 ? cfg->cts_levels : 3;
    /* SlotToCoeff runs on fewer limbs, so it takes one level less at large n;
     * at sparse 2^6-2^10 slots two levels (radix up to 2^5 factors): one level
     * more for the computation (boot-n16-dense at 2^10 slots: 15 left, ckks
     * decode 17 -> 16 bootstraps per token) for ~5% more per bootstrap and
     * +1.0 GiB of rotation keys (docs/benchmarks.md, session 14) */
    cfg->stc_levels = cfg->log_slots >= 12 ? 3 : default_dft_levels(cfg->log_slots);
    if (cfg->log_slots >= 6 && cfg->log_slots <= 10 && log_slots < ts_ckks_params_log_n(params) - 1)
        cfg->stc_levels = 2;
    cfg->k = ceil(7.0 * i_sigma(params));
    cfg->order = TS_BOOT_CTS_FIRST;
    cfg->log_message_ratio = message_ratio(log_slots);
    return fit_degree(cfg);
}

/* The largest special-prime size the sparse row for (N, h) admits next to q_0
 * (61 for insecure parameters); TS_ESECURITY below 40 bits or without a row. */
static ts_status_t encap_p_bits(const ts_ckks_params_t *p, int h, int *bits)
{
    *bits = 61;
    if (ts_ckks_params_insecure(p))
        return TS_OK;
    double max;
    if (ts_ckks_security_max_logqp(ts_ckks_params_log_n(p), TS_CKKS_SECRET_SPARSE_TERNARY, h,
                                   &max) != TS_OK)
        return TS_ESECURITY;
    double b = floor(max - log2((double)ts_ckks_params_q(p, 0)));
    if (b < 40)
        return TS_ESECURITY;
    *bits = b > 61 ? 61 : (int)b;
    return TS_OK;
}

ts_status_t ts_boot_config_encapsulate(const ts_ckks_params_t *params, int h, ts_boot_config_t *cfg)
{
    if (!params || !cfg || h < 1 || (size_t)h > ts_ckks_params_n(params))
        return TS_EINVAL;
    int bits;
    ts_status_t st = encap_p_bits(params, h, &bits);
    if (st != TS_OK)
        return st;
    cfg->encap_h = h;
    cfg->k = ceil(7.0 * sqrt((h + 1.0) / 12.0));
    return fit_degree(cfg);
}

static ts_status_t check_config(const ts_ckks_params_t *p, const ts_boot_config_t *c);

ts_status_t ts_boot_config_slots_like(const ts_ckks_params_t *params, int log_slots,
                                      const ts_boot_config_t *like, ts_boot_config_t *cfg)
{
    if (!params || !like || !cfg || log_slots < 1 || log_slots > ts_ckks_params_log_slots(params))
        return TS_EINVAL;
    /* EvalMod, the order and the encapsulation do not depend on the slot
     * count: like's; the message ratio is the slot count's (message_ratio,
     * where like's is the default's). The DFT levels: as many in all as
     * like's, CoeffToSlot at like's budget but at most log_slots / 2 (no
     * radix-2 group: it takes about the rotations of a radix-4 one and one
     * more group at the top level, boot-n16-dense at 2^6 slots, 13 levels
     * left: 3 + 4 levels 2.56 s, 4 + 3 2.85 s; docs/benchmarks.md session
     * 38), SlotToCoeff the rest, each at most log_slots */
    int total = like->cts_levels + like->stc_levels;
    int c = like->cts_levels;
    if (c > log_slots / 2)
        c = log_slots / 2 > 1 ? log_slots / 2 : 1;
    if (total - c > log_slots)
        c = total - log_slots;
    *cfg = *like;
    cfg->log_slots = log_slots;
    if (like->log_message_ratio == message_ratio(like->log_slots))
        cfg->log_message_ratio = message_ratio(log_slots);
    cfg->cts_levels = c < log_slots ? c : log_slots;
    cfg->stc_levels = total - cfg->cts_levels < log_slots ? total - cfg->cts_levels : log_slots;
    int a = -1, b = -1;
    ts_status_t st = check_config(params, cfg);
    if (st == TS_OK)
        st = ts_boot_depth(params, like, NULL, NULL, NULL, &a);
    if (st == TS_OK)
        st = ts_boot_depth(params, cfg, NULL, NULL, NULL, &b);
    if (st == TS_OK && a != b)
        st = TS_ENOTSUP;
    return st;
}

/* The depth of ts_ckks_eval_chebyshev on [-1, 1] (core/ckks's Paterson-Stockmeyer). */
static int cheb_depth(int d)
{
    return ts_ckks_chebyshev_depth((size_t)d);
}

static ts_status_t check_config(const ts_ckks_params_t *p, const ts_boot_config_t *c)
{
    int log_n = ts_ckks_params_log_n(p);
    if (c->log_slots < 1 || c->log_slots > log_n - 1)
        return TS_EINVAL;
    if (c->cts_levels < 1 || c->cts_levels > c->log_slots || c->cts_levels > MAX_GROUPS)
        return TS_EINVAL;
    if (c->stc_levels < 1 || c->stc_levels > c->log_slots || c->stc_levels > MAX_GROUPS)
        return TS_EINVAL;
    if (!(c->k >= 1.0) || c->k > 4096 || c->cheb_degree < 3 || c->cheb_degree > 255)
        return TS_EINVAL;
    if (c->double_angle < 0 || c->double_angle > 8)
        return TS_EINVAL;
    if (c->order != TS_BOOT_CTS_FIRST && c->order != TS_BOOT_STC_FIRST)
        return TS_EINVAL;
    if (!(c->log_message_ratio >= 0) || c->log_message_ratio > 60)
        return TS_EINVAL;
    if (c->order == TS_BOOT_CTS_FIRST && c->real_only)
        return TS_EINVAL; /* the coefficients of a slot vector are complex */
    if (c->encap_h < 0 || (size_t)c->encap_h > ts_ckks_params_n(p))
        return TS_EINVAL;
    return TS_OK;
}

ts_status_t ts_boot_depth(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                          int *cts_depth, int *evalmod_depth, int *stc_depth, int *levels_left)
{
    if (!params || !cfg)
        return TS_EINVAL;
    ts_status_t st = check_config(params, cfg);
    if (st != TS_OK)
        return st;
    int em = cheb_depth(cfg->cheb_degree) + cfg->double_angle;
    int L = ts_ckks_params_max_level(params);
    bool sparse = cfg->log_slots < ts_ckks_params_log_n(params) - 1;
    int left = L - cfg->cts_levels - em;
    if (cfg->order == TS_BOOT_CTS_FIRST)
        left -= cfg->stc_levels;
    else if (sparse && !cfg->real_only)
        left -= 1;
    if (cts_depth)
        *cts_depth = cfg->cts_levels;
    if (evalmod_depth)
        *evalmod_depth = em;
    if (stc_depth)
        *stc_depth = cfg->stc_levels;
    if (levels_left)
        *levels_left = left;
    return TS_OK;
}

/* -------------------------------------------------------------- plan */

/*
 * The DFT factors of a configuration. n slots; the working view of the
 * CoeffToSlot/EvalMod part is `view` slots (n for full slots and real-only,
 * 2n for complex sparse slots).
 */
typedef struct {
    int log_n, log_slots;
    size_t n, view;
    bool full, sparse_complex;
    int ncts, nstc;
    ts__dmat_t cts[MAX_GROUPS];  /* CoeffToSlot in `view`, application order */
    ts__dmat_t stc[MAX_GROUPS];  /* CTS_FIRST: SlotToCoeff after EvalMod, in `view` */
    ts__dmat_t stc1[MAX_GROUPS]; /* STC_FIRST: SlotToCoeff on n slots */
    int nstc1;
    ts__dmat_t combine; /* sparse complex ModRecover: (re, im) -> re + i im, 2n view */
    bool has_combine;
} plan_t;

static void plan_clear(plan_t *pl)
{
    for (int i = 0; i < MAX_GROUPS; i++) {
        ts__dmat_clear(&pl->cts[i]);
        ts__dmat_clear(&pl->stc[i]);
        ts__dmat_clear(&pl->stc1[i]);
    }
    ts__dmat_clear(&pl->combine);
}

/*
 * The log2 n butterfly stages in application order, merged into `groups`
 * consecutive products (the first groups take the extra stages).
 * inverse: CoeffToSlot, S_n first; else SlotToCoeff, T_2 first.
 */
static ts_status_t dft_groups(int log_n, size_t n, int log_slots, bool inverse, int groups,
                              ts__dmat_t *out)
{
    ts_status_t st = TS_OK;
    int stage = 0;
    for (int g = 0; g < groups && st == TS_OK; g++) {
        int cnt = log_slots / groups + (g < log_slots % groups ? 1 : 0);
        ts__dmat_t acc;
        bool have = false;
        for (int j = 0; j < cnt && st == TS_OK; j++, stage++) {
            size_t len = inverse ? n >> stage : (size_t)2 << stage;
            ts__dmat_t s, prod;
            st = ts__dft_stage(log_n, n, len, inverse, &s);
            if (st == TS_OK && have) {
                /* acc = s * acc (s is applied after acc) */
                st = ts__dmat_mul(&s, &acc, &prod);
                ts__dmat_clear(&acc);
                ts__dmat_clear(&s);
                acc = prod;
            } else if (st == TS_OK) {
                acc = s;
                have = true;
            } else {
                ts__dmat_clear(&s);
            }
        }
        if (st == TS_OK) {
            ts__dmat_prune(&acc, 1e-12);
            out[g] = acc;
        } else if (have) {
            ts__dmat_clear(&acc);
        }
    }
    return st;
}

/* out (2n) = the n-matrix m acting on replicated vectors (v, v); row r >= n
 * is multiplied by c_hi. */
static ts_status_t lift(const ts__dmat_t *m, double complex c_hi, ts__dmat_t *out)
{
    size_t n = m->dim;
    ts_status_t st = ts__dmat_init(out, 2 * n);
    for (size_t k = 0; k < m->count && st == TS_OK; k++) {
        size_t o = (size_t)m->off[k];
        for (size_t r = 0; r < 2 * n && st == TS_OK; r++) {
            double complex v = m->v[k * n + (r % n)];
            if (r >= n)
                v *= c_hi;
            if (v != 0)
                st = ts__dmat_add(out, r, (r + o) % (2 * n), v);
        }
    }
    return st;
}

/* The 2n-matrix (re, im) -> (re + i im, re + i im). */
static ts_status_t combine_matrix(size_t n, ts__dmat_t *out)
{
    ts_status_t st = ts__dmat_init(out, 2 * n);
    for (size_t r = 0; r < 2 * n && st == TS_OK; r++) {
        size_t j = r % n;
        st = ts__dmat_add(out, r, j, 1.0);
        if (st == TS_OK)
            st = ts__dmat_add(out, r, j + n, I);
    }
    return st;
}

static ts_status_t plan_build(const ts_ckks_params_t *p, const ts_boot_config_t *c, plan_t *pl)
{
    memset(pl, 0, sizeof(*pl));
    pl->log_n = ts_ckks_params_log_n(p);
    pl->log_slots = c->log_slots;
    pl->n = (size_t)1 << c->log_slots;
    pl->full = c->log_slots == pl->log_n - 1;
    pl->sparse_complex = !pl->full && !c->real_only;
    pl->view = pl->sparse_complex ? 2 * pl->n : pl->n;
    size_t n = pl->n;
    ts__dmat_t tmp[MAX_GROUPS];
    memset(tmp, 0, sizeof(tmp));

    /*
     * CoeffToSlot: n B V^-1 (entries of magnitude 1); the factor 1 / 2Kn that
     * makes it B V^-1 / 2K is not put into the diagonals, whose rounding at
     * the plaintext scale would then cost log2(2Kn) bits, but into the
     * plaintext scales (see ts_boot_new) and the ciphertext's scale.
     */
    pl->ncts = c->cts_levels;
    ts_status_t st = dft_groups(pl->log_n, n, c->log_slots, true, c->cts_levels, tmp);
    for (int g = 0; g < pl->ncts && st == TS_OK; g++) {
        if (pl->sparse_complex)
            st = lift(&tmp[g], g == pl->ncts - 1 ? -I : 1.0, &pl->cts[g]);
        else {
            pl->cts[g] = tmp[g];
            memset(&tmp[g], 0, sizeof(tmp[g]));
        }
    }
    for (int g = 0; g < MAX_GROUPS; g++)
        ts__dmat_clear(&tmp[g]);

    /* SlotToCoeff: V B, after EvalMod (CTS_FIRST) or first (STC_FIRST) */
    if (st == TS_OK)
        st = dft_groups(pl->log_n, n, c->log_slots, false, c->stc_levels, tmp);
    if (st == TS_OK && c->order == TS_BOOT_CTS_FIRST) {
        pl->nstc = c->stc_levels;
        for (int g = 0; g < pl->nstc && st == TS_OK; g++) {
            if (!pl->sparse_complex) {
                pl->stc[g] = tmp[g];
                memset(&tmp[g], 0, sizeof(tmp[g]));
            } else if (g == 0) {
                ts__dmat_t l, cm;
                st = lift(&tmp[g], 1.0, &l);
                if (st == TS_OK)
                    st = combine_matrix(n, &cm);
                if (st == TS_OK)
                    st = ts__dmat_mul(&l, &cm, &pl->stc[g]);
                ts__dmat_clear(&l);
                ts__dmat_clear(&cm);
            } else {
                st = lift(&tmp[g], 1.0, &pl->stc[g]);
            }
        }
    } else if (st == TS_OK) {
        pl->nstc1 = c->stc_levels;
        for (int g = 0; g < pl->nstc1; g++) {
            pl->stc1[g] = tmp[g];
            memset(&tmp[g], 0, sizeof(tmp[g]));
        }
    }
    for (int g = 0; g < MAX_GROUPS; g++)
        ts__dmat_clear(&tmp[g]);
    if (st == TS_OK && pl->sparse_complex) {
        st = combine_matrix(n, &pl->combine);
        pl->has_combine = st == TS_OK;
    }
    if (st != TS_OK)
        plan_clear(pl);
    return st;
}

/* --------------------------------------------------------- key list */

/* A step and the highest level its rotations run at (the key's cap). */
typedef struct {
    int64_t *steps;
    int *levels;
    size_t cap, n;
} step_list_t;

static void add_step(step_list_t *sl, int64_t s, int level)
{
    if (s == 0)
        return;
    for (size_t i = 0; i < sl->n && i < sl->cap; i++)
        if (sl->steps[i] == s) {
            if (sl->levels[i] < level)
                sl->levels[i] = level;
            return;
        }
    if (sl->n < sl->cap) {
        sl->steps[sl->n] = s;
        sl->levels[sl->n] = level;
    }
    sl->n++;
}

/* The rotations ts_ckks_lintrans_apply makes for m with baby steps n1, all at
 * the level of its input. */
static void dmat_steps(const ts__dmat_t *m, step_list_t *sl, int level)
{
    size_t n1 = ts__dmat_n1(m);
    for (size_t k = 0; k < m->count; k++) {
        size_t o = (size_t)m->off[k];
        add_step(sl, (int64_t)(o % n1), level);
        add_step(sl, (int64_t)(o - o % n1), level);
    }
}

ts_status_t ts_boot_rotation_steps(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                                   int64_t *steps, int *levels, size_t *count, bool *conjugate)
{
    if (!params || !cfg || !count)
        return TS_EINVAL;
    ts_status_t st = check_config(params, cfg);
    if (st != TS_OK)
        return st;
    int em_depth;
    st = ts_boot_depth(params, cfg, NULL, &em_depth, NULL, NULL);
    if (st != TS_OK)
        return st;
    plan_t pl;
    st = plan_build(params, cfg, &pl);
    if (st != TS_OK)
        return st;
    /* the levels each group runs at (as ts_boot_new encodes them): the trace
     * and CoeffToSlot from the top after ModRaise; SlotToCoeff after EvalMod
     * (CoeffToSlot first) or from level stc_levels (SlotToCoeff first, after
     * the drop); the sparse-complex combination at EvalMod's output */
    const int top = ts_ckks_params_max_level(params);
    const int em_out = top - cfg->cts_levels - em_depth;
    step_list_t sl = {.cap = 4096};
    sl.steps = ts_malloc(sizeof(int64_t) * sl.cap);
    sl.levels = ts_malloc(sizeof(int) * sl.cap);
    if (!sl.steps || !sl.levels) {
        ts_free(sl.steps);
        ts_free(sl.levels);
        plan_clear(&pl);
        return TS_ENOMEM;
    }
    /* trace to the subring of n slots: rotations by n 2^j on N/2 slots */
    if (!pl.full)
        for (size_t s = pl.n; s < ((size_t)1 << (pl.log_n - 1)); s *= 2)
            add_step(&sl, (int64_t)s, top);
    for (int g = 0; g < pl.ncts; g++)
        dmat_steps(&pl.cts[g], &sl, top - g);
    for (int g = 0; g < pl.nstc; g++)
        dmat_steps(&pl.stc[g], &sl, em_out - g);
    for (int g = 0; g < pl.nstc1; g++)
        dmat_steps(&pl.stc1[g], &sl, cfg->stc_levels - g);
    if (pl.has_combine)
        dmat_steps(&pl.combine, &sl, em_out);
    plan_clear(&pl);
    size_t n = sl.n;
    if (n > sl.cap)
        st = TS_ENOMEM;
    else if (steps && n > *count)
        st = TS_ERANGE;
    if (conjugate)
        *conjugate = true;
    if (st == TS_OK && steps)
        memcpy(steps, sl.steps, sizeof(int64_t) * n);
    if (st == TS_OK && levels)
        memcpy(levels, sl.levels, sizeof(int) * n);
    if (st == TS_OK || st == TS_ERANGE)
        *count = n;
    ts_free(sl.steps);
    ts_free(sl.levels);
    return st;
}

ts_status_t ts_boot_keygen(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                           ts_ckks_evalkeys_t *ek, const ts_ckks_secret_key_t *sk, ts_prng_t *prng)
{
    if (!params || !cfg || !ek || !sk || !prng)
        return TS_EINVAL;
    size_t count = 0;
    ts_status_t st = ts_boot_rotation_steps(params, cfg, NULL, NULL, &count, NULL);
    if (st != TS_OK)
        return st;
    int64_t *steps = ts_malloc(sizeof(int64_t) * (count + 1));
    int *levels = ts_malloc(sizeof(int) * (count + 1));
    if (!steps || !levels)
        st = TS_ENOMEM;
    if (st == TS_OK)
        st = ts_boot_rotation_steps(params, cfg, steps, levels, &count, NULL);
    if (st == TS_OK && !ts_ckks_evalkeys_has_relin(ek))
        st = ts_ckks_evalkeys_gen_relin(ek, sk, prng);
    if (st == TS_OK && !ts_ckks_evalkeys_has_conjugate(ek))
        st = ts_ckks_evalkeys_gen_conjugate(ek, sk, prng);
    if (st == TS_OK)
        st = ts_ckks_evalkeys_gen_rotations_at(ek, sk, steps, levels, count, prng);
    ts_free(steps);
    ts_free(levels);
    return st;
}

/* ---------------------------------------------- encapsulation keys */

struct ts_boot_encap_keys {
    ts_ckks_params_t *params; /* the computation's set */
    ts_ckks_params_t *small;  /* N, q_0, p_e, sparse h' */
    int h;
    ts_rlwe_ksk_t *to_sparse; /* s -> s' over q_0 p_e */
    ts_rlwe_ksk_t *to_dense;  /* s' -> s over QP */
};

/* The parameter set of the sparse-secret instance: q_0 and one special prime. */
static ts_status_t encap_params_new(const ts_ckks_params_t *p, int h, ts_ckks_params_t **out)
{
    int bits;
    ts_status_t st = encap_p_bits(p, h, &bits);
    if (st != TS_OK)
        return st;
    ts_ckks_params_literal_t lit;
    ts_ckks_params_literal_init(&lit);
    snprintf(lit.name, sizeof(lit.name), "%.50s-encap", ts_ckks_params_name(p));
    lit.log_n = ts_ckks_params_log_n(p);
    lit.q[0] = (int64_t)ts_ckks_params_q(p, 0);
    lit.q_count = 1;
    lit.logp[0] = bits;
    lit.logp_count = 1;
    lit.dnum = 1;
    lit.scale_log2 = floor(log2((double)ts_ckks_params_q(p, 0))) - 1;
    lit.secret = TS_CKKS_SECRET_SPARSE_TERNARY;
    lit.hamming_weight = h;
    lit.sigma = ts_ckks_params_sigma(p);
    lit.insecure = ts_ckks_params_insecure(p);
    return ts_ckks_params_new(&lit, lit.insecure, out);
}

void ts_boot_encap_keys_free(ts_boot_encap_keys_t *keys)
{
    if (!keys)
        return;
    ts_rlwe_ksk_free(keys->to_sparse);
    ts_rlwe_ksk_free(keys->to_dense);
    ts_ckks_params_free(keys->small);
    ts_ckks_params_free(keys->params);
    ts_free(keys);
}

double ts_boot_encap_keys_logqp(const ts_boot_encap_keys_t *keys)
{
    return keys ? ts_ckks_params_logqp(keys->small) : 0;
}

ts_status_t ts_boot_encap_keygen(const ts_ckks_params_t *params, const ts_boot_config_t *cfg,
                                 const ts_ckks_secret_key_t *sk, ts_prng_t *prng,
                                 ts_boot_encap_keys_t **out)
{
    if (!params || !cfg || !sk || !prng || !out)
        return TS_EINVAL;
    *out = NULL;
    if (cfg->encap_h <= 0 || (size_t)cfg->encap_h > ts_ckks_params_n(params))
        return TS_EINVAL;
    const ts_rlwe_sk_t *s = ts_ckks_secret_key_rlwe(sk);
    ts_ring_t *big = ts_ckks_params_ring(params);
    if (!s || s->ring != big)
        return TS_EMISMATCH;
    ts_boot_encap_keys_t *k = ts_calloc(1, sizeof(*k));
    if (!k)
        return TS_ENOMEM;
    k->params = ts_ckks_params_ref((ts_ckks_params_t *)params);
    k->h = cfg->encap_h;
    ts_rlwe_sk_t *sp = NULL, *sp_small = NULL, *s_small = NULL;
    ts_status_t st = encap_params_new(params, cfg->encap_h, &k->small);
    if (st == TS_OK)
        st = ts_rlwe_sk_new(big, prng, (uint32_t)cfg->encap_h, &sp);
    ts_ring_t *small = st == TS_OK ? ts_ckks_params_ring(k->small) : NULL;
    if (st == TS_OK)
        st = ts_rlwe_sk_from_coeffs(small, sp->coeffs, &sp_small);
    if (st == TS_OK)
        st = ts_rlwe_sk_from_coeffs(small, s->coeffs, &s_small);
    if (st == TS_OK) /* s -> s' modulo q_0 p_e only */
        st = ts_rlwe_ksk_new(sp_small, s_small->s, 1, prng, &k->to_sparse);
    if (st == TS_OK) /* s' -> s over the whole chain */
        st = ts_rlwe_ksk_new(s, sp->s, (uint32_t)ts_ckks_params_dnum(params), prng, &k->to_dense);
    ts_rlwe_sk_free(sp);
    ts_rlwe_sk_free(sp_small);
    ts_rlwe_sk_free(s_small);
    if (st != TS_OK) {
        ts_boot_encap_keys_free(k);
        return st;
    }
    *out = k;
    return TS_OK;
}

/*
 * Payload of TS_OBJ_BOOTSTRAP_KEYS (version 1), bound to the CKKS parameter id:
 *   u32 version, u32 h', u64 p_e (the special prime of the small set, checked
 *   against the one regenerated from the parameters), then K_{s->s'} (ring
 *   q_0 p_e, one digit) and K_{s'->s} (every Q and P prime, the parameters'
 *   dnum), each as u32 dnum, the 32-byte seed and the b part of every digit
 *   over every limb, residues packed at each prime's width. The a parts are
 *   regenerated from the seed (stream j + 1, as ts_rlwe_ksk_new draws them).
 */
#define ENCAP_KEYS_VERSION 1u

static void put_encap_ksk(ts_writer_t *w, const ts_rlwe_ksk_t *k)
{
    ts_put_u32(w, k->dnum);
    ts_put_bytes(w, k->seed, TS_SEED_BYTES);
    ts_rlwe_ksk_put_body(w, k, false);
}

static ts_status_t get_encap_ksk(ts_reader_t *r, ts_ring_t *ring, uint32_t dnum,
                                 ts_rlwe_ksk_t **out)
{
    *out = NULL;
    uint32_t d = ts_get_u32(r);
    uint8_t seed[TS_SEED_BYTES];
    ts_get_bytes(r, seed, TS_SEED_BYTES);
    if (r->err != TS_OK)
        return r->err;
    if (d != dnum)
        return TS_EFORMAT;
    return ts_rlwe_ksk_get_body(r, ring, dnum, 0, 0, seed, false, out);
}

ts_status_t ts_boot_encap_keys_serialize(const ts_boot_encap_keys_t *keys, int zstd_level,
                                         uint8_t **out, size_t *size)
{
    if (!keys || !out || !size)
        return TS_EINVAL;
    *out = NULL;
    *size = 0;
    uint8_t id[TS_SHA256_BYTES];
    ts_ckks_params_serial_id(keys->params, id);
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, ENCAP_KEYS_VERSION);
    ts_put_u32(&w, (uint32_t)keys->h);
    ts_put_u64(&w, ts_ckks_params_p(keys->small, 0));
    put_encap_ksk(&w, keys->to_sparse);
    put_encap_ksk(&w, keys->to_dense);
    ts_status_t st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_BOOTSTRAP_KEYS, id, zstd_level, out, size);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_boot_encap_keys_deserialize(const ts_ckks_params_t *params,
                                           const ts_boot_config_t *cfg, const void *data,
                                           size_t size, ts_boot_encap_keys_t **out)
{
    if (!params || !cfg || !data || !out)
        return TS_EINVAL;
    *out = NULL;
    if (cfg->encap_h <= 0 || (size_t)cfg->encap_h > ts_ckks_params_n(params))
        return TS_EINVAL;
    uint8_t id[TS_SHA256_BYTES];
    ts_ckks_params_serial_id(params, id);
    ts_serial_header_t hdr;
    uint8_t *payload = NULL;
    size_t psize = 0;
    ts_status_t st =
        ts_serial_open(data, size, TS_OBJ_BOOTSTRAP_KEYS, id, NULL, &hdr, &payload, &psize);
    if (st != TS_OK)
        return st;
    ts_boot_encap_keys_t *k = ts_calloc(1, sizeof(*k));
    if (!k) {
        ts_free(payload);
        return TS_ENOMEM;
    }
    k->params = ts_ckks_params_ref((ts_ckks_params_t *)params);
    k->h = cfg->encap_h;
    ts_reader_t r;
    ts_reader_init(&r, payload, psize);
    uint32_t ver = ts_get_u32(&r), h = ts_get_u32(&r);
    uint64_t pe = ts_get_u64(&r);
    st = r.err;
    if (st == TS_OK && (ver != ENCAP_KEYS_VERSION || h != (uint32_t)cfg->encap_h))
        st = TS_EFORMAT;
    if (st == TS_OK)
        st = encap_params_new(params, cfg->encap_h, &k->small);
    if (st == TS_OK && pe != ts_ckks_params_p(k->small, 0))
        st = TS_EFORMAT;
    if (st == TS_OK)
        st = get_encap_ksk(&r, ts_ckks_params_ring(k->small), 1, &k->to_sparse);
    if (st == TS_OK)
        st = get_encap_ksk(&r, ts_ckks_params_ring(params), (uint32_t)ts_ckks_params_dnum(params),
                           &k->to_dense);
    if (st == TS_OK)
        st = ts_reader_finish(&r);
    ts_free(payload);
    if (st != TS_OK) {
        ts_boot_encap_keys_free(k);
        return st;
    }
    *out = k;
    return TS_OK;
}

/* ----------------------------------------------------- bootstrapper */

/* ts_boot_profile's totals: one block per owner, its views point to it */
typedef struct boot_stats {
    atomic_bool on;
    atomic_uint_fast64_t runs;
    atomic_uint_fast64_t ns[TS_BOOT_PHASE_COUNT];
} boot_stats_t;

struct ts_boot {
    ts_ckks_params_t *params;
    ts_boot_config_t cfg;
    int log_n, L;
    size_t n, view;
    bool full, sparse_complex;
    int em_in, cheb_out, em_out; /* levels: EvalMod input, after Chebyshev, after EvalMod */
    double q0;
    size_t ncts, nstc, nstc1;
    ts_ckks_lintrans_t *cts[MAX_GROUPS];
    ts_ckks_lintrans_t *stc[MAX_GROUPS];
    ts_ckks_lintrans_t *stc1[MAX_GROUPS];
    ts_ckks_lintrans_t *combine;
    double *cheb;                      /* cheb_degree + 1 coefficients */
    const ts_boot_encap_keys_t *encap; /* borrowed; cfg.encap_h > 0 */
    const ts_boot_t *base;             /* a view (ts_boot_view): the owner of the rest */
    boot_stats_t *stats;               /* the owner's (mutable through a const bt) */
};

ts_status_t ts_boot_set_encap_keys(ts_boot_t *bt, const ts_boot_encap_keys_t *keys)
{
    if (!bt || !keys)
        return TS_EINVAL;
    if (bt->cfg.encap_h == 0 || keys->h != bt->cfg.encap_h)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(bt->params, keys->params))
        return TS_EMISMATCH;
    bt->encap = keys;
    return TS_OK;
}

ts_status_t ts_boot_view(const ts_boot_t *bt, const ts_boot_encap_keys_t *keys, ts_boot_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = NULL;
    if (!bt || !keys)
        return TS_EINVAL;
    if (bt->cfg.encap_h == 0 || keys->h != bt->cfg.encap_h)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(bt->params, keys->params))
        return TS_EMISMATCH;
    ts_boot_t *v = ts_malloc(sizeof(*v));
    if (!v)
        return TS_ENOMEM;
    *v = *bt;
    v->base = bt->base ? bt->base : bt;
    v->encap = keys;
    *out = v;
    return TS_OK;
}

void ts_boot_free(ts_boot_t *bt)
{
    if (!bt)
        return;
    if (bt->base) { /* a view owns only itself */
        ts_free(bt);
        return;
    }
    for (int i = 0; i < MAX_GROUPS; i++) {
        ts_ckks_lintrans_free(bt->cts[i]);
        ts_ckks_lintrans_free(bt->stc[i]);
        ts_ckks_lintrans_free(bt->stc1[i]);
    }
    ts_ckks_lintrans_free(bt->combine);
    ts_free(bt->stats);
    ts_free(bt->cheb);
    ts_ckks_params_free(bt->params);
    ts_free(bt);
}

static ts_status_t encode_dmat(ts_ckks_encoder_t *enc, const ts__dmat_t *m, int level, double scale,
                               ts_ckks_lintrans_t **out)
{
    return ts_ckks_lintrans_new_diagonals(enc, m->dim, m->count, m->off, m->v, level, scale,
                                          ts__dmat_n1(m), out);
}

ts_status_t ts_boot_new(ts_ckks_params_t *params, const ts_boot_config_t *cfg, ts_boot_t **out)
{
    if (!params || !cfg || !out)
        return TS_EINVAL;
    *out = NULL;
    ts_status_t st = check_config(params, cfg);
    if (st != TS_OK)
        return st;
    if (ts_ckks_params_p_count(params) == 0 ||
        ts_ckks_params_log_slots(params) != ts_ckks_params_log_n(params) - 1)
        return TS_EPARAMS;
    int left;
    st = ts_boot_depth(params, cfg, NULL, NULL, NULL, &left);
    if (st != TS_OK)
        return st;
    if (left < 0)
        return TS_EPARAMS;
    ts_boot_t *bt = ts_calloc(1, sizeof(*bt));
    if (!bt)
        return TS_ENOMEM;
    bt->params = ts_ckks_params_ref(params);
    bt->cfg = *cfg;
    bt->log_n = ts_ckks_params_log_n(params);
    bt->L = ts_ckks_params_max_level(params);
    bt->n = (size_t)1 << cfg->log_slots;
    bt->q0 = (double)ts_ckks_params_q(params, 0);
    bt->em_in = bt->L - cfg->cts_levels;
    bt->cheb_out = bt->em_in - cheb_depth(cfg->cheb_degree);
    bt->em_out = bt->cheb_out - cfg->double_angle;

    bt->cheb = ts_malloc(sizeof(double) * ((size_t)cfg->cheb_degree + 1));
    bt->stats = ts_malloc(sizeof(*bt->stats));
    if (!bt->cheb || !bt->stats) {
        ts_boot_free(bt);
        return TS_ENOMEM;
    }
    atomic_init(&bt->stats->on, false);
    atomic_init(&bt->stats->runs, 0);
    for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
        atomic_init(&bt->stats->ns[i], 0);
    cosctx_t cc = {.k = cfg->k, .r = cfg->double_angle};
    st = ts_ckks_chebyshev_fit(scaled_cos, &cc, -1, 1, (size_t)cfg->cheb_degree, bt->cheb);

    plan_t pl;
    ts_ckks_encoder_t *enc = NULL;
    if (st == TS_OK)
        st = plan_build(params, cfg, &pl);
    if (st != TS_OK) {
        ts_boot_free(bt);
        return st;
    }
    bt->full = pl.full;
    bt->sparse_complex = pl.sparse_complex;
    bt->view = pl.view;
    st = ts_ckks_encoder_new(params, &enc);
    /* plaintext scales q_l f: their product divides by 2Kn and moves the
     * scale from q0 (ModRaise) to q_em, the prime EvalMod's first product
     * drops, so that the Chebyshev basis keeps its scale near its primes
     * (EvalMod primes smaller than q0 would otherwise let it grow squared) */
    double q_em = (double)ts_ckks_params_q(params, (size_t)bt->em_in);
    double f = pow(2.0 * cfg->k * (double)bt->n * bt->q0 / q_em, -1.0 / (double)pl.ncts);
    for (int i = 0; i < pl.ncts && st == TS_OK; i++) {
        double q = (double)ts_ckks_params_q(params, (size_t)(bt->L - i));
        st = encode_dmat(enc, &pl.cts[i], bt->L - i, q * f, &bt->cts[i]);
        bt->ncts += st == TS_OK;
    }
    /* CTS_FIRST: EvalMod ends at delta_out * 2n and the SlotToCoeff plaintext
     * scales q_l (2n)^(-1/nstc) bring it back to delta_out. SlotToCoeff sums
     * 2n coefficients of size ~ slot / sqrt(2n) into each slot, so the noise
     * of EvalMod's last rescale (fixed per coefficient) ended at delta_out
     * 2n times larger against the message than a rescale on the slots:
     * ~one bit per doubling of n (test-boot-n12-dense h' = 32, 2^10 slots:
     * 24.7 -> 25.5 bits; levels and operations unchanged) */
    double fs = pow(2.0 * (double)bt->n, -1.0 / (double)(pl.nstc > 0 ? pl.nstc : 1));
    for (int i = 0; i < pl.nstc && st == TS_OK; i++) {
        double q = (double)ts_ckks_params_q(params, (size_t)(bt->em_out - i));
        st = encode_dmat(enc, &pl.stc[i], bt->em_out - i, q * fs, &bt->stc[i]);
        bt->nstc += st == TS_OK;
    }
    for (int i = 0; i < pl.nstc1 && st == TS_OK; i++) {
        st = encode_dmat(enc, &pl.stc1[i], cfg->stc_levels - i, 0, &bt->stc1[i]);
        bt->nstc1 += st == TS_OK;
    }
    if (st == TS_OK && pl.has_combine)
        st = encode_dmat(enc, &pl.combine, bt->em_out, 0, &bt->combine);
    ts_ckks_encoder_free(enc);
    plan_clear(&pl);
    if (st != TS_OK) {
        ts_boot_free(bt);
        return st;
    }
    *out = bt;
    return TS_OK;
}

const ts_boot_config_t *ts_boot_config(const ts_boot_t *bt)
{
    return bt ? &bt->cfg : NULL;
}

int ts_boot_levels_left(const ts_boot_t *bt)
{
    if (!bt)
        return -1;
    int left;
    if (ts_boot_depth(bt->params, &bt->cfg, NULL, NULL, NULL, &left) != TS_OK)
        return -1;
    return left;
}

int ts_boot_mod_recover_level(const ts_boot_t *bt)
{
    if (!bt)
        return -1;
    return bt->sparse_complex ? bt->em_out - 1 : bt->em_out;
}

/* ------------------------------------------------------------ steps */

/* ------------------------------------------------------------ profile */

static const char *const phase_names[TS_BOOT_PHASE_COUNT] = {"mod_raise", "subsum", "cts",
                                                             "eval_mod", "stc"};

const char *ts_boot_phase_name(int phase)
{
    return phase >= 0 && phase < TS_BOOT_PHASE_COUNT ? phase_names[phase] : NULL;
}

ts_status_t ts_boot_profile(const ts_boot_t *bt, bool on)
{
    if (!bt)
        return TS_EINVAL;
    atomic_store_explicit(&bt->stats->on, on, memory_order_relaxed);
    return TS_OK;
}

ts_status_t ts_boot_phases(const ts_boot_t *bt, ts_boot_phases_t *out)
{
    if (!bt || !out)
        return TS_EINVAL;
    out->runs = atomic_load_explicit(&bt->stats->runs, memory_order_relaxed);
    for (int i = 0; i < TS_BOOT_PHASE_COUNT; i++)
        out->ns[i] = atomic_load_explicit(&bt->stats->ns[i], memory_order_relaxed);
    return TS_OK;
}

/* A phase boundary when profiling: the backend's queue drained (a failed
 * kernel is reported by the next operation, not here), the clock read; 0
 * when profiling is off. */
static uint64_t phase_mark(const ts_boot_t *bt)
{
    if (!atomic_load_explicit(&bt->stats->on, memory_order_relaxed))
        return 0;
    (void)ts_backend_sync(ts_ring_backend(ts_ckks_params_ring(bt->params)));
    return ts_now_ns();
}

/* Charge the time since *t (a phase_mark; 0: not profiling) to ph; *t = now. */
static void phase_next(const ts_boot_t *bt, ts_boot_phase_t ph, uint64_t *t)
{
    if (*t == 0)
        return;
    uint64_t now = phase_mark(bt);
    if (now != 0)
        atomic_fetch_add_explicit(&bt->stats->ns[ph], now - *t, memory_order_relaxed);
    *t = now;
}

/* Scratch: room for the top level, shaped at level 0 (every step writing one
 * reshapes it; zeroing the top level's limbs cost a pass over ~30 MB each). */
static ts_status_t new_ct(const ts_boot_t *bt, ts_ckks_ciphertext_t **out)
{
    return ts_ckks_ciphertext_new(bt->params, 0, out);
}

/* Lift one level-0 polynomial (coefficients mod q_0) to L + 1 limbs, centered, NTT form. */
static ts_status_t raise_poly(const ts_boot_t *bt, const uint64_t *raw, ts_poly_t *dst,
                              int64_t *coef)
{
    size_t N = (size_t)1 << bt->log_n;
    uint64_t q0 = ts_ckks_params_q(bt->params, 0);
    for (size_t j = 0; j < N; j++)
        coef[j] = raw[j] > q0 / 2 ? -(int64_t)(q0 - raw[j]) : (int64_t)raw[j];
    /* every word is written next: no zeroing */
    ts_status_t st = ts_poly_reshape_uninit(dst, (uint32_t)bt->L + 1, 0, false);
    if (st == TS_OK)
        st = ts_poly_set_i64(dst, coef);
    if (st == TS_OK)
        st = ts_poly_ntt(dst);
    return st;
}

/*
 * raw[0..2N) = the coefficients (mod q_0) of the level-0 ciphertext t (both
 * polynomials, t's polynomials are left in coefficient form); with
 * encapsulation, after switching t from s to s' modulo q_0 p_e.
 */
static ts_status_t level0_coeffs(const ts_boot_t *bt, ts_ckks_ciphertext_t *t, uint64_t *raw)
{
    size_t N = (size_t)1 << bt->log_n;
    ts_status_t st = TS_OK;
    for (int i = 0; i < 2 && st == TS_OK; i++) {
        st = ts_poly_intt(ts_ckks_ciphertext_poly(t, i));
        if (st == TS_OK)
            st = ts_poly_download(ts_ckks_ciphertext_poly(t, i), raw + (size_t)i * N);
    }
    if (st != TS_OK || !bt->encap)
        return st;
    ts_ckks_evaluator_t *es = NULL;
    ts_ckks_ciphertext_t *cs = NULL;
    st = ts_ckks_evaluator_new(bt->encap->small, NULL, &es);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_new(bt->encap->small, 0, &cs);
    for (int i = 0; i < 2 && st == TS_OK; i++) {
        ts_poly_t *p = ts_ckks_ciphertext_poly(cs, i);
        st = ts_poly_reshape(p, 1, 0, false);
        if (st == TS_OK)
            st = ts_poly_upload(p, raw + (size_t)i * N);
        if (st == TS_OK)
            st = ts_poly_ntt(p);
    }
    if (st == TS_OK)
        st = ts_ckks_keyswitch(es, cs, bt->encap->to_sparse, cs);
    for (int i = 0; i < 2 && st == TS_OK; i++) {
        ts_poly_t *p = ts_ckks_ciphertext_poly(cs, i);
        st = ts_poly_intt(p);
        if (st == TS_OK)
            st = ts_poly_download(p, raw + (size_t)i * N);
    }
    ts_ckks_ciphertext_free(cs);
    ts_ckks_evaluator_free(es);
    return st;
}

/* ModRaise (+ trace for sparse slots); out in the working view, scale q0. */
static ts_status_t mod_raise(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                             const ts_ckks_ciphertext_t *in, size_t view, ts_ckks_ciphertext_t *out)
{
    if (ts_ckks_ciphertext_slots(in) != bt->n)
        return TS_EMISMATCH;
    if (ts_ckks_ciphertext_degree(in) != 1)
        return TS_EINVAL;
    if (bt->cfg.encap_h > 0 && !bt->encap)
        return TS_ENOKEY;
    size_t N = (size_t)1 << bt->log_n;
    uint64_t clk = phase_mark(bt);
    ts_ckks_ciphertext_t *t = NULL;
    int64_t *coef = ts_malloc(sizeof(int64_t) * N);
    uint64_t *raw = ts_malloc(sizeof(uint64_t) * 2 * N);
    ts_status_t st = (coef && raw) ? new_ct(bt, &t) : TS_ENOMEM;
    if (st == TS_OK)
        st = ts_ckks_drop_to_level(ev, in, 0, t);
    if (st == TS_OK)
        st = level0_coeffs(bt, t, raw);
    for (int i = 0; i < 2 && st == TS_OK; i++)
        st = raise_poly(bt, raw + (size_t)i * N, ts_ckks_ciphertext_poly(out, i), coef);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(out, bt->L, 1, bt->q0, N / 2);
    if (st == TS_OK && bt->encap) /* back from s' to s at the top level */
        st = ts_ckks_keyswitch(ev, out, bt->encap->to_dense, out);
    phase_next(bt, TS_BOOT_PHASE_MOD_RAISE, &clk);
    if (st == TS_OK && !bt->full) { /* the trace to the subring: exactly t + q0 I on it */
        st = ts_ckks_trace(ev, out, bt->n);
        phase_next(bt, TS_BOOT_PHASE_SUBSUM, &clk);
    }
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(out, bt->L, 1, bt->q0, view);
    ts_ckks_ciphertext_free(t);
    ts_free(coef);
    ts_free(raw);
    return st;
}

ts_status_t ts_boot_mod_raise(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                              const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out)
{
    if (!bt || !ev || !in || !out)
        return TS_EINVAL;
    ts_status_t st = mod_raise(bt, ev, in, bt->view, out);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(out, bt->L, 1, bt->q0, bt->n);
    return st;
}

/* Apply the factors lts[0..count) in order, one rescale each. */
static ts_status_t apply_groups(ts_ckks_evaluator_t *ev, ts_ckks_lintrans_t *const *lts,
                                size_t count, ts_ckks_ciphertext_t *ct, ts_ckks_ciphertext_t *t)
{
    ts_status_t st = TS_OK;
    for (size_t i = 0; i < count && st == TS_OK; i++) {
        st = ts_ckks_lintrans_apply(ev, lts[i], ct, t);
        if (st == TS_OK)
            st = ts_ckks_rescale(ev, t, ct);
    }
    return st;
}

/*
 * EvalMod in place: x (values in [-1, 1], level em_in) -> sin(2 pi K x),
 * declared at scale delta_out, under which the slots read t / delta_in
 * (t: the coefficients ModRaise found, at scale delta_in).
 */
static ts_status_t eval_mod(const ts_boot_t *bt, ts_ckks_evaluator_t *ev, ts_ckks_ciphertext_t *x,
                            double delta_in, double delta_out, ts_ckks_ciphertext_t *t)
{
    const ts_boot_config_t *c = &bt->cfg;
    ts_status_t st = TS_OK;
    if (ts_ckks_ciphertext_level(x) > bt->em_in)
        st = ts_ckks_drop_to_level(ev, x, bt->em_in, x);
    if (st != TS_OK)
        return st;
    if (ts_ckks_ciphertext_level(x) != bt->em_in)
        return TS_ELEVEL;
    /* scales: S_r = q0 delta_out / (2 pi delta_in) so that S_r 2 pi delta_in / q0 = delta_out;
     * backwards S_{j-1} = sqrt(S_j q) with q the prime the j-th double angle drops */
    double s = bt->q0 * delta_out / (2.0 * PI * delta_in);
    for (int j = c->double_angle; j >= 1; j--)
        s = sqrt(s * (double)ts_ckks_params_q(bt->params, (size_t)(bt->cheb_out - (j - 1))));
    st = ts_ckks_eval_chebyshev(ev, x, bt->cheb, (size_t)c->cheb_degree, -1.0, 1.0, s, t);
    if (st != TS_OK)
        return st;
    if (ts_ckks_ciphertext_level(t) < bt->cheb_out)
        return TS_EINTERNAL; /* the depth formula disagrees with core/ckks */
    st = ts_ckks_drop_to_level(ev, t, bt->cheb_out, x);
    for (int j = 0; j < c->double_angle && st == TS_OK; j++) {
        st = ts_ckks_mul_relin(ev, x, x, x);
        if (st == TS_OK)
            st = ts_ckks_mul_int(ev, x, 2, x);
        if (st == TS_OK)
            st = ts_ckks_add_const(ev, x, -1.0, x);
        if (st == TS_OK)
            st = ts_ckks_rescale(ev, x, x);
    }
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(x, ts_ckks_ciphertext_level(x), 1,
                                         ts_ckks_ciphertext_scale(x) * 2.0 * PI * delta_in / bt->q0,
                                         ts_ckks_ciphertext_slots(x));
    return st;
}

/* Snap a scale within 2^-30 of want to want (the difference is rounding). */
static ts_status_t snap_scale(ts_ckks_ciphertext_t *ct, double want, size_t slots)
{
    double s = ts_ckks_ciphertext_scale(ct);
    if (fabs(s / want - 1.0) < 0x1p-30)
        s = want;
    return ts_ckks_ciphertext_set_meta(ct, ts_ckks_ciphertext_level(ct), 1, s, slots);
}

/*
 * ModRaise, CoeffToSlot, EvalMod: out holds, in the working view, the real
 * (and imaginary, in im, at full complex slots) parts of the coefficient
 * vector in bit-reversed order, at level em_out and scale delta_out.
 */
static ts_status_t recover_core(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                const ts_ckks_ciphertext_t *in, double delta_out,
                                ts_ckks_ciphertext_t *out)
{
    double delta = ts_ckks_ciphertext_scale(in);
    ts_ckks_ciphertext_t *w = NULL, *cj = NULL, *im = NULL, *t = NULL;
    ts_status_t st = new_ct(bt, &w);
    if (st == TS_OK)
        st = new_ct(bt, &cj);
    if (st == TS_OK)
        st = new_ct(bt, &t);
    if (st == TS_OK && bt->full && !bt->cfg.real_only)
        st = new_ct(bt, &im);
    if (st == TS_OK)
        st = mod_raise(bt, ev, in, bt->view, w);
    uint64_t clk = phase_mark(bt);
    if (st == TS_OK)
        st = apply_groups(ev, bt->cts, bt->ncts, w, t);
    /* the slots hold 2Kn w at scale ~ q_em / 2Kn: read them as w at ~ q_em */
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(w, ts_ckks_ciphertext_level(w), 1,
                                         ts_ckks_ciphertext_scale(w) * 2.0 * bt->cfg.k *
                                             (double)bt->n,
                                         ts_ckks_ciphertext_slots(w));
    if (st == TS_OK)
        st = ts_ckks_conjugate(ev, w, cj);
    if (st == TS_OK && im) {
        /* im = -i (w - conj w) = 2 Im w */
        st = ts_ckks_sub(ev, w, cj, im);
        if (st == TS_OK)
            st = ts_ckks_mul_const(ev, im, -I, 1.0, im);
    }
    if (st == TS_OK)
        st = ts_ckks_add(ev, w, cj, w);
    phase_next(bt, TS_BOOT_PHASE_CTS, &clk);
    if (st == TS_OK)
        st = eval_mod(bt, ev, w, delta, delta_out, t);
    if (st == TS_OK && im) {
        st = eval_mod(bt, ev, im, delta, delta_out, t);
        /* out = re + i im */
        if (st == TS_OK)
            st = ts_ckks_mul_const(ev, im, I, 1.0, im);
        if (st == TS_OK)
            st = ts_ckks_add(ev, w, im, w);
    }
    phase_next(bt, TS_BOOT_PHASE_EVAL_MOD, &clk);
    if (st == TS_OK && clk != 0)
        atomic_fetch_add_explicit(&bt->stats->runs, 1, memory_order_relaxed);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_copy(out, w);
    ts_ckks_ciphertext_free(w);
    ts_ckks_ciphertext_free(cj);
    ts_ckks_ciphertext_free(im);
    ts_ckks_ciphertext_free(t);
    return st;
}

static ts_status_t check_io(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                            const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out)
{
    if (!bt || !ev || !in || !out)
        return TS_EINVAL;
    if (!ts_ckks_params_equal(bt->params, ts_ckks_ciphertext_params(in)) ||
        !ts_ckks_params_equal(bt->params, ts_ckks_ciphertext_params(out)))
        return TS_EMISMATCH;
    if (ts_ckks_ciphertext_slots(in) != bt->n)
        return TS_EMISMATCH;
    if (ts_ckks_ciphertext_degree(in) != 1)
        return TS_EINVAL;
    return TS_OK;
}

ts_status_t ts_boot_mod_recover(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                const ts_ckks_ciphertext_t *in, int level,
                                ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_io(bt, ev, in, out);
    if (st != TS_OK)
        return st;
    int top = ts_boot_mod_recover_level(bt);
    if (level > top || level < -1)
        return TS_ELEVEL;
    double delta = ts_ckks_ciphertext_scale(in);
    ts_ckks_ciphertext_t *x = NULL, *t = NULL;
    st = new_ct(bt, &x);
    if (st == TS_OK)
        st = new_ct(bt, &t);
    if (st == TS_OK)
        st = recover_core(bt, ev, in, delta, x);
    uint64_t clk = phase_mark(bt);
    if (st == TS_OK && bt->sparse_complex)
        st = apply_groups(ev, &bt->combine, 1, x, t);
    phase_next(bt, TS_BOOT_PHASE_STC, &clk);
    if (st == TS_OK)
        st = snap_scale(x, delta, bt->n);
    if (st == TS_OK && level >= 0)
        st = ts_ckks_drop_to_level(ev, x, level, x);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_copy(out, x);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(t);
    return st;
}

ts_status_t ts_boot_slot_to_coeff(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                  const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_io(bt, ev, in, out);
    if (st != TS_OK)
        return st;
    if (bt->nstc1 == 0)
        return TS_ENOTSUP; /* built for CTS_FIRST */
    int s = bt->cfg.stc_levels;
    if (ts_ckks_ciphertext_level(in) < s)
        return TS_ELEVEL;
    ts_ckks_ciphertext_t *x = NULL, *t = NULL;
    st = new_ct(bt, &x);
    if (st == TS_OK)
        st = new_ct(bt, &t);
    if (st == TS_OK)
        st = ts_ckks_drop_to_level(ev, in, s, x);
    uint64_t clk = phase_mark(bt);
    if (st == TS_OK)
        st = apply_groups(ev, bt->stc1, bt->nstc1, x, t);
    phase_next(bt, TS_BOOT_PHASE_STC, &clk);
    if (st == TS_OK)
        st = snap_scale(x, ts_ckks_ciphertext_scale(in), bt->n);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_copy(out, x);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(t);
    return st;
}

static ts_status_t boot_cts(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                            const ts_ckks_ciphertext_t *in, double delta_out,
                            ts_ckks_ciphertext_t *out);

ts_status_t ts_boot_bootstrap(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                              const ts_ckks_ciphertext_t *in, ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_io(bt, ev, in, out);
    if (st != TS_OK)
        return st;
    if (bt->cfg.order == TS_BOOT_STC_FIRST) {
        ts_ckks_ciphertext_t *c = NULL;
        st = new_ct(bt, &c);
        if (st == TS_OK)
            st = ts_boot_slot_to_coeff(bt, ev, in, c);
        if (st == TS_OK)
            st = ts_boot_mod_recover(bt, ev, c, -1, out);
        ts_ckks_ciphertext_free(c);
        return st;
    }
    return boot_cts(bt, ev, in, ts_ckks_ciphertext_scale(in), out);
}

ts_status_t ts_boot_bootstrap_scaled(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                     const ts_ckks_ciphertext_t *in, double out_scale,
                                     ts_ckks_ciphertext_t *out)
{
    ts_status_t st = check_io(bt, ev, in, out);
    if (st != TS_OK)
        return st;
    if (bt->cfg.order != TS_BOOT_CTS_FIRST)
        return TS_ENOTSUP;
    double d = ts_ckks_ciphertext_scale(in);
    if (!(out_scale >= ldexp(d, -10) && out_scale <= d))
        return TS_EINVAL;
    return boot_cts(bt, ev, in, out_scale, out);
}

ts_status_t ts_boot_bootstrap_pair(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                                   ts_ckks_ciphertext_t *a, ts_ckks_ciphertext_t *b, double bound)
{
    ts_status_t st = check_io(bt, ev, a, b);
    if (st == TS_OK)
        st = check_io(bt, ev, b, a);
    if (st != TS_OK)
        return st;
    if (bt->cfg.order != TS_BOOT_CTS_FIRST)
        return TS_ENOTSUP;
    double sa = ts_ckks_ciphertext_scale(a), sb = ts_ckks_ciphertext_scale(b);
    if (a == b || !(bound >= 0x1p-20 && bound <= 0x1p20) || !(fabs(sa / sb - 1.0) < 0x1p-30))
        return TS_EINVAL;
    ts_ckks_ciphertext_t *c = NULL, *cj = NULL;
    st = new_ct(bt, &c);
    if (st == TS_OK)
        st = new_ct(bt, &cj);
    /* the real parts, at level 0 where the bootstrap starts anyway (one key
     * switch on one prime each): a + i b would move Im(b) into a's real part
     * and Im(a) into b's */
    ts_ckks_ciphertext_t *xs[2] = {a, b};
    for (int k = 0; k < 2 && st == TS_OK; k++) {
        st = ts_ckks_drop_to_level(ev, xs[k], 0, xs[k]);
        if (st == TS_OK)
            st = ts_ckks_conjugate(ev, xs[k], cj);
        if (st == TS_OK)
            st = ts_ckks_add(ev, xs[k], cj, xs[k]); /* 2 Re at scale sa */
    }
    /* c = 2 (Re a + i Re b) at sa, read as (Re a + i Re b) / bound; out at a
     * quarter of that scale, so that c + conj(c) holds 2 Re a at sa / 2 */
    if (st == TS_OK)
        st = ts_ckks_mul_const(ev, b, I, 1.0, c);
    if (st == TS_OK)
        st = ts_ckks_add(ev, a, c, c);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(c, 0, 1, 2.0 * sa * bound, bt->n);
    if (st == TS_OK)
        st = boot_cts(bt, ev, c, sa * bound / 2.0, c);
    if (st == TS_OK)
        st = ts_ckks_conjugate(ev, c, cj);
    if (st == TS_OK)
        st = ts_ckks_add(ev, c, cj, a);
    if (st == TS_OK)
        st = ts_ckks_sub(ev, c, cj, b);
    if (st == TS_OK)
        st = ts_ckks_mul_const(ev, b, -I, 1.0, b);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(a, ts_ckks_ciphertext_level(a), 1, sa, bt->n);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_set_meta(b, ts_ckks_ciphertext_level(b), 1, sa, bt->n);
    ts_ckks_ciphertext_free(c);
    ts_ckks_ciphertext_free(cj);
    return st;
}

/* The CoeffToSlot-first bootstrap with the output at scale delta_out. */
static ts_status_t boot_cts(const ts_boot_t *bt, ts_ckks_evaluator_t *ev,
                            const ts_ckks_ciphertext_t *in, double delta_out,
                            ts_ckks_ciphertext_t *out)
{
    ts_status_t st;
    double delta = ts_ckks_ciphertext_scale(in);
    ts_ckks_ciphertext_t *x = NULL, *t = NULL;
    st = new_ct(bt, &x);
    if (st == TS_OK)
        st = new_ct(bt, &t);
    if (st == TS_OK)
        st = ts_ckks_drop_to_level(ev, in, 0, x);
    /* lower the message ratio q0 / scale to 2^log_message_ratio (exact: times 2^a) */
    double a = floor(log2(bt->q0 / delta) - bt->cfg.log_message_ratio);
    if (st == TS_OK && bt->cfg.log_message_ratio > 0 && a >= 1) {
        a = a > 30 ? 30 : a;
        st = ts_ckks_mul_int(ev, x, (int64_t)1 << (int)a, x);
        if (st == TS_OK)
            st = ts_ckks_ciphertext_set_meta(x, 0, 1, ldexp(delta, (int)a), bt->n);
    }
    if (st == TS_OK)
        st = recover_core(bt, ev, x, delta_out * (bt->nstc > 0 ? 2.0 * (double)bt->n : 1.0), x);
    uint64_t clk = phase_mark(bt);
    if (st == TS_OK)
        st = apply_groups(ev, bt->stc, bt->nstc, x, t);
    phase_next(bt, TS_BOOT_PHASE_STC, &clk);
    if (st == TS_OK)
        st = snap_scale(x, delta_out, bt->n);
    if (st == TS_OK)
        st = ts_ckks_ciphertext_copy(out, x);
    ts_ckks_ciphertext_free(x);
    ts_ckks_ciphertext_free(t);
    return st;
}

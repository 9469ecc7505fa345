/*
 * CKKS benchmarks (JSON):
 *  - fhelium: the single-operation suite of FHElium (shared/seeds/000) at its
 *    preset (configs/params/fhelium-n14.yaml), every operation at each of the
 *    7 public levels, with FHElium's semantic-error limits checked;
 *  - client: the client path of shared/seeds/001 (N = 8192, six 30-bit
 *    primes, scale 2^25): encode + symmetric encryption of 4096 real slots,
 *    complete ciphertexts per second on one thread, with the split between
 *    encoding (IFFT, scaling and rounding, RNS reduction, NTT) and encryption
 *    (sampling, seeded a, NTT, assembly); input preparation excluded;
 *  - large (only with --large): N = 2^16 at configs/params/n16-128.yaml:
 *    NTT, mult+relin, rotate, rescale at the top level (keys of ~300 MB each).
 *
 * The fhelium suite also runs FHElium's 16 x 16 dense matrix products
 * (plaintext x ciphertext and ciphertext x ciphertext, entry at FHElium level
 * 0 = our top level), checked against the plaintext product (limit 3e-5).
 *
 * `tessera bench ckks [options]` (client/cmd_bench.c) and build/bench/bench_ckks
 * (tests/bench/bench_ckks.c) both run ts_bench_ckks below. Options: see usage().
 * --backend puts every context on that compute backend (gpu/gpu.h,
 * ts_backend_use_default); the default is the CPU.
 * FHElium level k is our level L - k (see core/ckks/ckks.h).
 */
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "core/ckks/ckks.h"
#include "gpu/gpu.h"

static bool quick;
static FILE *js;
static bool first_row = true;
static const char *params_dir = "configs/params";
static char params_json[8192]; /* the "parameters" array, filled by each suite */

static double now_ms(void)
{
    return (double)ts_now_ns() / 1e6;
}

/* Process CPU time: with one backend thread it is the work itself, robust to
 * other load on a shared machine (the wall time is reported too). */
static double cpu_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double last_cpu_ms;

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        ts_status_t st__ = (expr);                                                                 \
        if (st__ != TS_OK) {                                                                       \
            fprintf(stderr, "bench_ckks: %s failed: %s\n", #expr, ts_status_name(st__));           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static ts_ckks_params_t *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%.900s/%.63s.yaml", params_dir, name);
    ts_ckks_params_t *p = NULL;
    ts_cfg_error_t err;
    CHECK(ts_ckks_params_load_file(path, false, &p, &err));
    /* one entry of the report's "parameters" array per preset used */
    size_t len = strlen(params_json);
    int w = snprintf(params_json + len, sizeof(params_json) - len,
                     "%s    {\"preset\": \"%s\", \"log_n\": %d, \"slots\": %zu, \"max_level\": %d, "
                     "\"scale_log2\": %.1f, \"dnum\": %d, \"log_qp\": %.2f, \"q\": [",
                     len ? ",\n" : "", ts_ckks_params_name(p), ts_ckks_params_log_n(p),
                     ts_ckks_params_slots(p), ts_ckks_params_max_level(p),
                     ts_ckks_params_scale_log2(p), ts_ckks_params_dnum(p), ts_ckks_params_logqp(p));
    for (size_t i = 0; w > 0 && i < ts_ckks_params_q_count(p); i++) {
        len = strlen(params_json);
        w = snprintf(params_json + len, sizeof(params_json) - len, "%s%llu", i ? ", " : "",
                     (unsigned long long)ts_ckks_params_q(p, i));
    }
    len = strlen(params_json);
    w = snprintf(params_json + len, sizeof(params_json) - len, "], \"p\": [");
    for (size_t i = 0; w > 0 && i < ts_ckks_params_p_count(p); i++) {
        len = strlen(params_json);
        w = snprintf(params_json + len, sizeof(params_json) - len, "%s%llu", i ? ", " : "",
                     (unsigned long long)ts_ckks_params_p(p, i));
    }
    len = strlen(params_json);
    snprintf(params_json + len, sizeof(params_json) - len, "]}");
    return p;
}

/* Time fn(ctx) repeatedly: at least `min_reps` runs and ~budget_ms; returns ms per run. */
typedef ts_status_t (*op_fn)(void *ctx);
static double time_op(op_fn fn, void *ctx, int min_reps, double budget_ms)
{
    if (quick) {
        min_reps = min_reps > 2 ? 2 : min_reps;
        budget_ms /= 10;
    }
    CHECK(fn(ctx)); /* warm-up */
    int reps = 0;
    double t0 = now_ms(), c0 = cpu_now_ms(), t;
    do {
        CHECK(fn(ctx));
        reps++;
        t = now_ms();
    } while (reps < min_reps || (t - t0 < budget_ms && reps < 10000));
    last_cpu_ms = (cpu_now_ms() - c0) / reps;
    return (t - t0) / reps;
}

/* ---------------------------------------------------------------- fhelium */

typedef struct {
    ts_ckks_params_t *p;
    ts_ckks_encoder_t *enc;
    ts_ckks_evaluator_t *ev;
    ts_ckks_secret_key_t *sk;
    ts_ckks_public_key_t *pk;
    ts_prng_t *prng;
    ts_ckks_plaintext_t *pt, *pt_mul, *dec;
    ts_ckks_ciphertext_t *a, *b, *out, *d2;
    int level;
} fctx_t;

static ts_status_t op_encrypt(void *c)
{
    fctx_t *f = c;
    return ts_ckks_encrypt_pk(f->pk, f->pt, f->prng, f->out);
}
static ts_status_t op_decrypt(void *c)
{
    fctx_t *f = c;
    return ts_ckks_decrypt(f->sk, f->a, f->dec);
}
static ts_status_t op_ntt(void *c)
{
    fctx_t *f = c;
    ts_status_t st = TS_OK;
    for (int i = 0; i < 2 && st == TS_OK; i++) {
        ts_poly_t *x = ts_ckks_ciphertext_poly(f->out, i);
        x->is_ntt = false; /* time the transform of the ciphertext's limbs */
        st = ts_poly_ntt(x);
    }
    return st;
}
static ts_status_t op_intt(void *c)
{
    fctx_t *f = c;
    ts_status_t st = TS_OK;
    for (int i = 0; i < 2 && st == TS_OK; i++) {
        ts_poly_t *x = ts_ckks_ciphertext_poly(f->out, i);
        x->is_ntt = true;
        st = ts_poly_intt(x);
    }
    return st;
}
static ts_status_t op_add(void *c)
{
    fctx_t *f = c;
    return ts_ckks_add(f->ev, f->a, f->b, f->out);
}
static ts_status_t op_add_plain(void *c)
{
    fctx_t *f = c;
    return ts_ckks_add_plain(f->ev, f->a, f->pt, f->out);
}
static ts_status_t op_mul_plain(void *c)
{
    fctx_t *f = c;
    return ts_ckks_mul_plain(f->ev, f->a, f->pt_mul, f->out);
}
static ts_status_t op_mul(void *c)
{
    fctx_t *f = c;
    return ts_ckks_mul(f->ev, f->a, f->b, f->d2);
}
static ts_status_t op_relin(void *c)
{
    fctx_t *f = c;
    return ts_ckks_relinearize(f->ev, f->d2, f->out);
}
static ts_status_t op_rotate(void *c)
{
    fctx_t *f = c;
    return ts_ckks_rotate(f->ev, f->a, 1, f->out);
}
static ts_status_t op_rescale(void *c)
{
    fctx_t *f = c;
    return ts_ckks_rescale(f->ev, f->d2, f->out);
}
static ts_status_t op_modswitch(void *c)
{
    fctx_t *f = c;
    return ts_ckks_drop_level(f->ev, f->a, 1, f->out);
}

static double err_of(fctx_t *f, const ts_ckks_ciphertext_t *ct, const double complex *want,
                     size_t n)
{
    CHECK(ts_ckks_decrypt(f->sk, ct, f->dec));
    double complex *got = malloc(sizeof(double complex) * n);
    CHECK(ts_ckks_decode(f->enc, f->dec, got, n));
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, cabs(got[i] - want[i]));
    free(got);
    return m;
}

static void row(const char *suite, const char *op, int level, int fhelium_level, double ms,
                double err, double limit)
{
    bool ok = err <= limit;
    printf("  %-16s L%-2d (FHElium %d)  %10.4f ms wall %10.4f ms cpu   err %.3e %s %.1e %s\n", op,
           level, fhelium_level, ms, last_cpu_ms, err, ok ? "<=" : ">", limit, ok ? "ok" : "FAIL");
    if (js)
        fprintf(js,
                "%s    {\"suite\": \"%s\", \"op\": \"%s\", \"level\": %d, \"fhelium_level\": %d, "
                "\"ms\": %.6f, \"cpu_ms\": %.6f, \"abs_error\": %.4e, \"limit\": %.1e, "
                "\"pass\": %s}",
                first_row ? "" : ",\n", suite, op, level, fhelium_level, ms, last_cpu_ms, err,
                limit, ok ? "true" : "false");
    first_row = false;
}

/*
 * FHElium's polynomial methods at the top level: the affine map 0.5 x + 0.25
 * and p(x) = 1 + x/2 - x^2/3 + x^3/4 - x^4/5 by the balanced tree, Horner and
 * Paterson-Stockmeyer with k = 2; the exit level is reported in both numberings.
 */
typedef struct {
    fctx_t *f;
    ts_ckks_poly_method_t m;
    size_t k;
    const double *c;
    size_t d;
} pctx_t;

static ts_status_t op_poly(void *c)
{
    pctx_t *q = c;
    return ts_ckks_eval_poly(q->f->ev, q->f->a, q->c, q->d, q->m, q->k, 0, q->f->out);
}

static int bench_poly_methods(fctx_t *f, const double complex *x, double complex *w, size_t slots)
{
    int L = ts_ckks_params_max_level(f->p), fails = 0;
    CHECK(ts_ckks_encode(f->enc, x, slots, 0, L, ts_ckks_params_scale(f->p), f->pt));
    CHECK(ts_ckks_encrypt_pk(f->pk, f->pt, f->prng, f->a));
    static const double aff[] = {0.25, 0.5};
    static const double c4[] = {1.0, 0.5, -1.0 / 3, 0.25, -0.2};
    struct {
        const char *name;
        const double *c;
        size_t d;
        ts_ckks_poly_method_t m;
        size_t k;
    } cases[] = {
        {"affine", aff, 1, TS_CKKS_POLY_HORNER, 0},
        {"poly4_balanced", c4, 4, TS_CKKS_POLY_BALANCED, 0},
        {"poly4_horner", c4, 4, TS_CKKS_POLY_HORNER, 0},
        {"poly4_ps_k2", c4, 4, TS_CKKS_POLY_PS, 2},
    };
    for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
        pctx_t q = {f, cases[t].m, cases[t].k, cases[t].c, cases[t].d};
        double ms = time_op(op_poly, &q, 3, 500);
        for (size_t i = 0; i < slots; i++) {
            double complex acc = 0;
            for (size_t j = cases[t].d + 1; j-- > 0;)
                acc = acc * x[i] + cases[t].c[j];
            w[i] = acc;
        }
        double e = err_of(f, f->out, w, slots);
        int exit_level = ts_ckks_ciphertext_level(f->out);
        fails += e > 3e-5;
        row("fhelium", cases[t].name, exit_level, L - exit_level, ms, e, 3e-5);
    }
    return fails;
}

/*
 * FHElium's 16 x 16 dense matrix products C = A B (4096 multiply-adds), entry
 * at FHElium level 0 (our top level), matrices row-major in 256 slots
 * (slot 16 i + j), entries in [-1, 1], checked against the plaintext product
 * with FHElium's limit (3e-5 absolute, every entry).
 *  - pt x ct (A plaintext, B encrypted): vec(C) = (A (x) I_16) vec(B), one BSGS
 *    linear transform of 16 diagonals (offsets 16 k) and a rescale. The timed
 *    work includes encoding A's diagonals.
 *  - ct x ct (both encrypted): Jiang-Kim-Lauter-Song (CCS 2018),
 *    C = sum_k phi^k(sigma A) . psi^k(tau B): sigma and tau are linear
 *    transforms (31 and 16 diagonals), phi^k rotates every row by k (two
 *    hoisted rotations of sigma A and of sigma A rotated by -16, masked),
 *    psi^k rotates by 16 k (iterated). The 16 products are summed before one
 *    relinearization and one rescale: 3 levels. The transforms and masks are
 *    public constants prepared once (outside the timing, like keys).
 */
enum { MD = 16, MN = MD * MD };

typedef struct {
    fctx_t *f;
    ts_ckks_evaluator_t *ev;
    ts_ckks_ciphertext_t *ca, *cb, *out;
    const double *a;                      /* plaintext A (pt x ct) */
    ts_ckks_lintrans_t *sigma, *tau;      /* ct x ct */
    ts_ckks_plaintext_t *m1[MD], *m2[MD]; /* phi masks, level L - 1 */
    ts_ckks_ciphertext_t *sa, *sa2, *tb, *acc, *t1, *t2, *rot1[MD], *rot2[MD];
    double complex *dense; /* MN x MN scratch */
    int L;
} mctx_t;

static ts_status_t op_matmul_ptct(void *c)
{
    mctx_t *m = c;
    memset(m->dense, 0, sizeof(double complex) * MN * MN);
    for (int i = 0; i < MD; i++)
        for (int k = 0; k < MD; k++)
            for (int j = 0; j < MD; j++)
                m->dense[(size_t)(MD * i + j) * MN + (size_t)(MD * k + j)] = m->a[MD * i + k];
    ts_ckks_lintrans_t *lt = NULL;
    ts_status_t st = ts_ckks_lintrans_new(m->f->enc, m->dense, MN, m->L, 0, 0, &lt);
    if (st == TS_OK)
        st = ts_ckks_lintrans_apply(m->ev, lt, m->cb, m->out);
    if (st == TS_OK)
        st = ts_ckks_rescale(m->ev, m->out, m->out);
    ts_ckks_lintrans_free(lt);
    return st;
}

static ts_status_t op_matmul_ctct(void *c)
{
    mctx_t *m = c;
    ts_ckks_evaluator_t *ev = m->ev;
    int64_t steps[MD - 1];
    for (int k = 1; k < MD; k++)
        steps[k - 1] = k;
    ts_status_t st = ts_ckks_lintrans_apply(ev, m->sigma, m->ca, m->sa);
    if (st == TS_OK)
        st = ts_ckks_rescale(ev, m->sa, m->sa);
    if (st == TS_OK)
        st = ts_ckks_lintrans_apply(ev, m->tau, m->cb, m->tb);
    if (st == TS_OK)
        st = ts_ckks_rescale(ev, m->tb, m->tb);
    /* phi^k(X) = mask1_k . rot(X, k) + mask2_k . rot(X, k - 16) */
    if (st == TS_OK)
        st = ts_ckks_rotate(ev, m->sa, -MD, m->sa2);
    if (st == TS_OK)
        st = ts_ckks_rotate_hoisted(ev, m->sa, steps, MD - 1, m->rot1 + 1);
    if (st == TS_OK)
        st = ts_ckks_rotate_hoisted(ev, m->sa2, steps, MD - 1, m->rot2 + 1);
    if (st == TS_OK) /* k = 0: sigma A itself, one level down */
        st = ts_ckks_drop_level(ev, m->sa, 1, m->t1);
    if (st == TS_OK)
        st = ts_ckks_drop_level(ev, m->tb, 1, m->t2);
    if (st == TS_OK)
        st = ts_ckks_mul(ev, m->t1, m->t2, m->acc);
    for (int k = 1; k < MD && st == TS_OK; k++) {
        st = ts_ckks_mul_plain(ev, m->rot1[k], m->m1[k], m->t1);
        if (st == TS_OK)
            st = ts_ckks_mul_plain(ev, m->rot2[k], m->m2[k], m->rot2[k]);
        if (st == TS_OK)
            st = ts_ckks_add(ev, m->t1, m->rot2[k], m->t1);
        if (st == TS_OK)
            st = ts_ckks_rescale(ev, m->t1, m->t1);
        if (st == TS_OK) /* psi^k(tau B) = rot(psi^(k-1), 16) */
            st = ts_ckks_rotate(ev, m->tb, MD, m->tb);
        if (st == TS_OK)
            st = ts_ckks_drop_level(ev, m->tb, 1, m->t2);
        if (st == TS_OK)
            st = ts_ckks_mul(ev, m->t1, m->t2, m->t2);
        if (st == TS_OK)
            st = ts_ckks_add(ev, m->acc, m->t2, m->acc);
    }
    if (st == TS_OK)
        st = ts_ckks_relinearize(ev, m->acc, m->out);
    if (st == TS_OK)
        st = ts_ckks_rescale(ev, m->out, m->out);
    return st;
}

/* Add the rotation steps of lt (normalised to [1, MN)) to list. */
static void add_steps(const ts_ckks_lintrans_t *lt, int64_t *list, size_t *n, size_t cap)
{
    int64_t s[MN];
    size_t cnt = MN;
    CHECK(ts_ckks_lintrans_steps(lt, s, &cnt));
    for (size_t i = 0; i < cnt && *n < cap; i++)
        list[(*n)++] = ((s[i] % MN) + MN) % MN;
}

static int bench_matmul(fctx_t *f)
{
    int L = ts_ckks_params_max_level(f->p), fails = 0;
    double scale = ts_ckks_params_scale(f->p);
    double a[MN], b[MN], want[MN];
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 2 * MN; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
        if (i < MN)
            a[i] = u;
        else
            b[i - MN] = u;
    }
    for (int i = 0; i < MD; i++)
        for (int j = 0; j < MD; j++) {
            double s = 0;
            for (int k = 0; k < MD; k++)
                s += a[MD * i + k] * b[MD * k + j];
            want[MD * i + j] = s;
        }
    mctx_t m = {.f = f, .a = a, .L = L};
    m.dense = malloc(sizeof(double complex) * MN * MN);
    if (!m.dense)
        CHECK(TS_ENOMEM);
    /* sigma: sigma(A)[i][j] = A[i][(i + j) mod 16]; tau: tau(B)[i][j] = B[(i + j) mod 16][j] */
    memset(m.dense, 0, sizeof(double complex) * MN * MN);
    for (int i = 0; i < MD; i++)
        for (int j = 0; j < MD; j++)
            m.dense[(size_t)(MD * i + j) * MN + (size_t)(MD * i + (i + j) % MD)] = 1;
    CHECK(ts_ckks_lintrans_new(f->enc, m.dense, MN, L, 0, 0, &m.sigma));
    memset(m.dense, 0, sizeof(double complex) * MN * MN);
    for (int i = 0; i < MD; i++)
        for (int j = 0; j < MD; j++)
            m.dense[(size_t)(MD * i + j) * MN + (size_t)(MD * ((i + j) % MD) + j)] = 1;
    CHECK(ts_ckks_lintrans_new(f->enc, m.dense, MN, L, 0, 0, &m.tau));
    /* the pt x ct transform's steps (same diagonal offsets as any A with no zero column) */
    memset(m.dense, 0, sizeof(double complex) * MN * MN);
    for (int i = 0; i < MD; i++)
        for (int k = 0; k < MD; k++)
            for (int j = 0; j < MD; j++)
                m.dense[(size_t)(MD * i + j) * MN + (size_t)(MD * k + j)] = 1;
    ts_ckks_lintrans_t *shape = NULL;
    CHECK(ts_ckks_lintrans_new(f->enc, m.dense, MN, L, 0, 0, &shape));
    int64_t steps[4 * MN];
    size_t ns = 0;
    add_steps(shape, steps, &ns, 4 * MN);
    add_steps(m.sigma, steps, &ns, 4 * MN);
    add_steps(m.tau, steps, &ns, 4 * MN);
    ts_ckks_lintrans_free(shape);
    for (int k = 1; k < MD; k++)
        steps[ns++] = k;
    steps[ns++] = MN - MD; /* -16 */
    steps[ns++] = MD;
    size_t nd = 0; /* distinct steps: the rotation keys */
    for (size_t i = 0; i < ns; i++) {
        bool dup = false;
        for (size_t j = 0; j < nd; j++)
            dup |= steps[j] == steps[i];
        if (!dup)
            steps[nd++] = steps[i];
    }
    ns = nd;
    ts_ckks_evalkeys_t *ek = NULL;
    CHECK(ts_ckks_evalkeys_new(f->p, &ek));
    CHECK(ts_ckks_evalkeys_gen_relin(ek, f->sk, f->prng));
    CHECK(ts_ckks_evalkeys_gen_rotations(ek, f->sk, steps, ns, f->prng));
    CHECK(ts_ckks_evaluator_new(f->p, ek, &m.ev));
    /* masks: row positions j < 16 - k (mask1) and j >= 16 - k (mask2), at level L - 1 */
    double mv[MN];
    for (int k = 1; k < MD; k++) {
        CHECK(ts_ckks_plaintext_new(f->p, L - 1, &m.m1[k]));
        CHECK(ts_ckks_plaintext_new(f->p, L - 1, &m.m2[k]));
        for (int s = 0; s < MN; s++)
            mv[s] = (s % MD) < MD - k;
        CHECK(ts_ckks_encode_real(f->enc, mv, MN, MN, L - 1, (double)ts_ckks_params_q(f->p, L - 1),
                                  m.m1[k]));
        for (int s = 0; s < MN; s++)
            mv[s] = 1 - mv[s];
        CHECK(ts_ckks_encode_real(f->enc, mv, MN, MN, L - 1, (double)ts_ckks_params_q(f->p, L - 1),
                                  m.m2[k]));
    }
    ts_ckks_ciphertext_t **all[] = {&m.ca, &m.cb,  &m.out, &m.sa, &m.sa2,
                                    &m.tb, &m.acc, &m.t1,  &m.t2};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        CHECK(ts_ckks_ciphertext_new(f->p, L, all[i]));
    for (int k = 1; k < MD; k++) {
        CHECK(ts_ckks_ciphertext_new(f->p, L, &m.rot1[k]));
        CHECK(ts_ckks_ciphertext_new(f->p, L, &m.rot2[k]));
    }
    ts_ckks_plaintext_t *pt = NULL;
    CHECK(ts_ckks_plaintext_new(f->p, L, &pt));
    CHECK(ts_ckks_encode_real(f->enc, a, MN, MN, L, scale, pt));
    CHECK(ts_ckks_encrypt_pk(f->pk, pt, f->prng, m.ca));
    CHECK(ts_ckks_encode_real(f->enc, b, MN, MN, L, scale, pt));
    CHECK(ts_ckks_encrypt_pk(f->pk, pt, f->prng, m.cb));
    ts_ckks_plaintext_free(pt);

    double complex w[MN];
    for (int i = 0; i < MN; i++)
        w[i] = want[i];
    struct {
        const char *name;
        op_fn fn;
    } cases[] = {{"matmul16_ptct", op_matmul_ptct}, {"matmul16_ctct", op_matmul_ctct}};
    for (size_t t = 0; t < 2; t++) {
        double ms = time_op(cases[t].fn, &m, 2, 1000);
        double e = err_of(f, m.out, w, MN);
        int exit_level = ts_ckks_ciphertext_level(m.out);
        fails += e > 3e-5;
        row("fhelium", cases[t].name, exit_level, L - exit_level, ms, e, 3e-5);
        printf("  %-16s %.1f logical MACs/s wall, %.1f per CPU second (4096 multiply-adds), %zu "
               "rotation keys\n",
               "", 4096.0 / (ms / 1000.0), 4096.0 / (last_cpu_ms / 1000.0), ns);
    }
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        ts_ckks_ciphertext_free(*all[i]);
    for (int k = 1; k < MD; k++) {
        ts_ckks_ciphertext_free(m.rot1[k]);
        ts_ckks_ciphertext_free(m.rot2[k]);
        ts_ckks_plaintext_free(m.m1[k]);
        ts_ckks_plaintext_free(m.m2[k]);
    }
    ts_ckks_lintrans_free(m.sigma);
    ts_ckks_lintrans_free(m.tau);
    ts_ckks_evaluator_free(m.ev);
    ts_ckks_evalkeys_free(ek);
    free(m.dense);
    return fails;
}

static int bench_fhelium(void)
{
    fctx_t f = {0};
    f.p = load("fhelium-n14");
    int L = ts_ckks_params_max_level(f.p);
    size_t slots = ts_ckks_params_slots(f.p);
    CHECK(ts_prng_new_os(&f.prng));
    CHECK(ts_ckks_keygen_secret(f.p, f.prng, &f.sk));
    CHECK(ts_ckks_keygen_public(f.sk, f.prng, &f.pk));
    ts_ckks_evalkeys_t *ek = NULL;
    CHECK(ts_ckks_evalkeys_new(f.p, &ek));
    CHECK(ts_ckks_evalkeys_gen_relin(ek, f.sk, f.prng));
    int64_t one = 1;
    CHECK(ts_ckks_evalkeys_gen_rotations(ek, f.sk, &one, 1, f.prng));
    CHECK(ts_ckks_encoder_new(f.p, &f.enc));
    CHECK(ts_ckks_evaluator_new(f.p, ek, &f.ev));
    CHECK(ts_ckks_plaintext_new(f.p, L, &f.pt));
    CHECK(ts_ckks_plaintext_new(f.p, L, &f.pt_mul));
    CHECK(ts_ckks_plaintext_new(f.p, L, &f.dec));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.a));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.b));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.out));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.d2));
    double complex *x = malloc(sizeof(double complex) * slots);
    double complex *y = malloc(sizeof(double complex) * slots);
    double complex *w = malloc(sizeof(double complex) * slots);
    for (size_t i = 0; i < slots; i++) {
        x[i] = 0.5 * sin(0.001 * (double)i) + 0.25 * I * cos(0.002 * (double)i);
        y[i] = 0.5 * cos(0.003 * (double)i) - 0.25 * I * sin(0.001 * (double)i);
    }
    double scale = ts_ckks_params_scale(f.p);
    int fails = 0;
    printf("FHElium suite: N = 2^%d, %zu slots, scale 2^40, L = %d\n", ts_ckks_params_log_n(f.p),
           slots, L);
    /* FHElium's 7 public levels: their 0..6 = our L..1 */
    for (int fl = 0; fl < 7; fl++) {
        int l = L - fl;
        f.level = l;
        CHECK(ts_ckks_encode(f.enc, x, slots, 0, l, scale, f.pt));
        CHECK(ts_ckks_encode(f.enc, y, slots, 0, l, (double)ts_ckks_params_q(f.p, l), f.pt_mul));
        CHECK(ts_ckks_encrypt_pk(f.pk, f.pt, f.prng, f.a));
        ts_ckks_plaintext_t *pty = NULL;
        CHECK(ts_ckks_plaintext_new(f.p, l, &pty));
        CHECK(ts_ckks_encode(f.enc, y, slots, 0, l, scale, pty));
        CHECK(ts_ckks_encrypt_pk(f.pk, pty, f.prng, f.b));
        ts_ckks_plaintext_free(pty);
        double ms, e;

        ms = time_op(op_encrypt, &f, 5, 300);
        e = err_of(&f, f.out, x, slots);
        fails += e > 1e-5;
        row("fhelium", "encrypt", l, fl, ms, e, 1e-5);

        ms = time_op(op_decrypt, &f, 5, 300);
        e = err_of(&f, f.a, x, slots);
        fails += e > 1e-5;
        row("fhelium", "decrypt", l, fl, ms, e, 1e-5);

        CHECK(ts_ckks_ciphertext_copy(f.out, f.a));
        ms = time_op(op_intt, &f, 5, 300);
        double cpu_intt = last_cpu_ms;
        ts_ckks_ciphertext_poly(f.out, 0)->is_ntt = false;
        ts_ckks_ciphertext_poly(f.out, 1)->is_ntt = false;
        double ms2 = time_op(op_ntt, &f, 5, 300);
        /* a round trip of the real ciphertext for the error check */
        CHECK(ts_ckks_ciphertext_copy(f.out, f.a));
        for (int i = 0; i < 2; i++) {
            CHECK(ts_poly_intt(ts_ckks_ciphertext_poly(f.out, i)));
            CHECK(ts_poly_ntt(ts_ckks_ciphertext_poly(f.out, i)));
        }
        e = err_of(&f, f.out, x, slots);
        fails += e > 2e-5;
        row("fhelium", "coeff_to_ntt", l, fl, ms2, e, 2e-5);
        last_cpu_ms = cpu_intt;
        row("fhelium", "ntt_to_coeff", l, fl, ms, e, 2e-5);

        ms = time_op(op_add, &f, 20, 200);
        for (size_t i = 0; i < slots; i++)
            w[i] = x[i] + y[i];
        e = err_of(&f, f.out, w, slots);
        fails += e > 2e-5;
        row("fhelium", "add", l, fl, ms, e, 2e-5);

        ms = time_op(op_add_plain, &f, 20, 200);
        for (size_t i = 0; i < slots; i++)
            w[i] = x[i] + x[i];
        e = err_of(&f, f.out, w, slots);
        fails += e > 2e-5;
        row("fhelium", "add_plain", l, fl, ms, e, 2e-5);

        ms = time_op(op_mul_plain, &f, 20, 200);
        if (l > 0)
            CHECK(ts_ckks_rescale(f.ev, f.out, f.out));
        for (size_t i = 0; i < slots; i++)
            w[i] = x[i] * y[i];
        e = err_of(&f, f.out, w, slots);
        fails += e > 3e-5;
        row("fhelium", "pt_x_ct", l, fl, ms, e, 3e-5);

        ms = time_op(op_mul, &f, 20, 200);
        CHECK(ts_ckks_ciphertext_copy(f.out, f.d2));
        if (l > 0)
            CHECK(ts_ckks_rescale(f.ev, f.out, f.out));
        e = err_of(&f, f.out, w, slots);
        fails += e > 3e-5;
        row("fhelium", "ct_x_ct", l, fl, ms, e, 3e-5);

        ms = time_op(op_relin, &f, 5, 300);
        if (l > 0)
            CHECK(ts_ckks_rescale(f.ev, f.out, f.out));
        e = err_of(&f, f.out, w, slots);
        fails += e > 3e-5;
        row("fhelium", "relinearize", l, fl, ms, e, 3e-5);

        ms = time_op(op_rotate, &f, 5, 300);
        for (size_t i = 0; i < slots; i++)
            w[i] = x[(i + 1) % slots];
        e = err_of(&f, f.out, w, slots);
        fails += e > 2e-5;
        row("fhelium", "rotate", l, fl, ms, e, 2e-5);

        if (l > 1) { /* FHElium has no rescale / mod switch from its last level */
            CHECK(ts_ckks_relinearize(f.ev, f.d2, f.d2));
            ms = time_op(op_rescale, &f, 10, 200);
            for (size_t i = 0; i < slots; i++)
                w[i] = x[i] * y[i];
            e = err_of(&f, f.out, w, slots);
            fails += e > 3e-5;
            row("fhelium", "rescale", l, fl, ms, e, 3e-5);

            ms = time_op(op_modswitch, &f, 20, 200);
            e = err_of(&f, f.out, x, slots);
            fails += e > 2e-5;
            row("fhelium", "mod_switch", l, fl, ms, e, 2e-5);
        }
    }
    fails += bench_poly_methods(&f, x, w, slots);
    fails += bench_matmul(&f);
    free(x);
    free(y);
    free(w);
    ts_ckks_ciphertext_free(f.a);
    ts_ckks_ciphertext_free(f.b);
    ts_ckks_ciphertext_free(f.out);
    ts_ckks_ciphertext_free(f.d2);
    ts_ckks_plaintext_free(f.pt);
    ts_ckks_plaintext_free(f.pt_mul);
    ts_ckks_plaintext_free(f.dec);
    ts_ckks_evaluator_free(f.ev);
    ts_ckks_encoder_free(f.enc);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_public_key_free(f.pk);
    ts_ckks_secret_key_free(f.sk);
    ts_prng_free(f.prng);
    ts_ckks_params_free(f.p);
    return fails;
}

/* ----------------------------------------------------------------- client */

typedef struct {
    ts_ckks_params_t *p;
    const ts_ckks_secret_key_t *sk;
    double **in;
    size_t slots;
    double scale;
    int reps;
    ts_status_t st;
} client_job_t;

static void *client_worker(void *arg)
{
    client_job_t *j = arg;
    ts_prng_t *prng = NULL;
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_ciphertext_t *ct = NULL;
    int L = ts_ckks_params_max_level(j->p);
    j->st = ts_prng_new_os(&prng);
    if (j->st == TS_OK)
        j->st = ts_ckks_encoder_new(j->p, &enc);
    if (j->st == TS_OK)
        j->st = ts_ckks_ciphertext_new(j->p, L, &ct);
    for (int r = 0; r < j->reps && j->st == TS_OK; r++)
        j->st = ts_ckks_encrypt_sk_real(enc, j->sk, j->in[r % 16], j->slots, 0, L, j->scale, prng,
                                        NULL, ct);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_encoder_free(enc);
    ts_prng_free(prng);
    return NULL;
}

/* Throughput with one worker per core, each with its own encoder and prng. */
static double client_threads(ts_ckks_params_t *p, const ts_ckks_secret_key_t *sk, double **in,
                             size_t slots, double scale, int reps)
{
    int nt = ts_cpu_count();
    if (nt > 64)
        nt = 64;
    pthread_t th[64];
    client_job_t jobs[64];
    double t0 = now_ms();
    for (int t = 0; t < nt; t++) {
        jobs[t] = (client_job_t){p, sk, in, slots, scale, reps, TS_OK};
        if (pthread_create(&th[t], NULL, client_worker, &jobs[t]) != 0) {
            fprintf(stderr, "bench_ckks: pthread_create failed\n");
            exit(1);
        }
    }
    for (int t = 0; t < nt; t++) {
        pthread_join(th[t], NULL);
        CHECK(jobs[t].st);
    }
    return (double)nt * reps / ((now_ms() - t0) / 1000.0);
}

static int bench_client(void)
{
    ts_ckks_params_t *p = load("seed001-client-n13");
    ts_prng_t *prng = NULL;
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL, *dec = NULL;
    ts_ckks_ciphertext_t *ct = NULL;
    int L = ts_ckks_params_max_level(p);
    size_t slots = ts_ckks_params_slots(p);
    CHECK(ts_prng_new_os(&prng));
    CHECK(ts_ckks_keygen_secret(p, prng, &sk));
    CHECK(ts_ckks_encoder_new(p, &enc));
    CHECK(ts_ckks_plaintext_new(p, L, &pt));
    CHECK(ts_ckks_plaintext_new(p, L, &dec));
    CHECK(ts_ckks_ciphertext_new(p, L, &ct));
    /* 16 prepared real inputs (as in the paper's CPU reference), all 4096 slots */
    double *in[16];
    for (int v = 0; v < 16; v++) {
        in[v] = malloc(sizeof(double) * slots);
        for (size_t i = 0; i < slots; i++)
            in[v][i] = sin(0.01 * (double)(i + 37 * v)) * 4.0;
    }
    double scale = ts_ckks_params_scale(p);
    int reps = quick ? 50 : 1000;
    double t_enc = 0, t_encr = 0;
    double t0 = now_ms();
    for (int r = 0; r < reps; r++) {
        double a = now_ms();
        CHECK(ts_ckks_encode_real(enc, in[r % 16], slots, 0, L, scale, pt));
        double b = now_ms();
        CHECK(ts_ckks_encrypt_sk(sk, pt, prng, NULL, ct));
        double c = now_ms();
        t_enc += b - a;
        t_encr += c - b;
    }
    double total = now_ms() - t0;
    double cts_split = reps / (total / 1000.0);
    /* the fused path (one NTT per limb) */
    t0 = now_ms();
    double c0 = cpu_now_ms();
    for (int r = 0; r < reps; r++)
        CHECK(ts_ckks_encrypt_sk_real(enc, sk, in[r % 16], slots, 0, L, scale, prng, NULL, ct));
    total = now_ms() - t0;
    double cts = reps / (total / 1000.0);
    double cts_cpu = reps / ((cpu_now_ms() - c0) / 1000.0);
    double cts_mt = client_threads(p, sk, in, slots, scale, reps);
    /* correctness of the last ciphertext, all slots */
    CHECK(ts_ckks_decrypt(sk, ct, dec));
    double *out = malloc(sizeof(double) * slots), err = 0;
    CHECK(ts_ckks_decode_real(enc, dec, out, slots));
    for (size_t i = 0; i < slots; i++)
        err = fmax(err, fabs(out[i] - in[(reps - 1) % 16][i]));
    printf("client (seed 001): N = 8192, 6 x 30-bit primes, scale 2^25, %zu real slots\n", slots);
    printf("  encode then encrypt: %.1f ciphertexts/s (encode %.3f ms, encrypt %.3f ms)\n",
           cts_split, t_enc / reps, t_encr / reps);
    printf("  fused encode+encrypt: %.1f ciphertexts/s on 1 thread (%.3f ms each; %.1f per CPU "
           "second), %.1f on %d threads; max abs error %.2e\n",
           cts, total / reps, cts_cpu, cts_mt, ts_cpu_count(), err);
    if (js)
        fprintf(js,
                "%s    {\"suite\": \"client\", \"op\": \"encode_encrypt\", \"ciphertexts_per_s\": "
                "%.2f, \"ms\": %.6f, \"ciphertexts_per_cpu_s\": %.2f, "
                "\"ciphertexts_per_s_all_cores\": %.2f, \"cores\": %d, "
                "\"split_ciphertexts_per_s\": %.2f, \"encode_ms\": %.6f, \"encrypt_ms\": %.6f, "
                "\"reps\": %d, \"abs_error\": %.4e, \"reference_seal_embedded_cts\": 113, "
                "\"reference_fpga_cts\": 5143}",
                first_row ? "" : ",\n", cts, total / reps, cts_cpu, cts_mt, ts_cpu_count(),
                cts_split, t_enc / reps, t_encr / reps, reps, err);
    first_row = false;
    for (int v = 0; v < 16; v++)
        free(in[v]);
    free(out);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_plaintext_free(pt);
    ts_ckks_plaintext_free(dec);
    ts_ckks_encoder_free(enc);
    ts_ckks_secret_key_free(sk);
    ts_prng_free(prng);
    ts_ckks_params_free(p);
    return err > 1e-3;
}

/* ------------------------------------------------------------------ large */

static int bench_large(void)
{
    fctx_t f = {0};
    f.p = load("n16-128");
    int L = ts_ckks_params_max_level(f.p);
    size_t slots = ts_ckks_params_slots(f.p);
    CHECK(ts_prng_new_os(&f.prng));
    CHECK(ts_ckks_keygen_secret(f.p, f.prng, &f.sk));
    CHECK(ts_ckks_keygen_public(f.sk, f.prng, &f.pk));
    ts_ckks_evalkeys_t *ek = NULL;
    CHECK(ts_ckks_evalkeys_new(f.p, &ek));
    CHECK(ts_ckks_evalkeys_gen_relin(ek, f.sk, f.prng));
    int64_t one = 1;
    CHECK(ts_ckks_evalkeys_gen_rotations(ek, f.sk, &one, 1, f.prng));
    CHECK(ts_ckks_encoder_new(f.p, &f.enc));
    CHECK(ts_ckks_evaluator_new(f.p, ek, &f.ev));
    CHECK(ts_ckks_plaintext_new(f.p, L, &f.pt));
    CHECK(ts_ckks_plaintext_new(f.p, L, &f.dec));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.a));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.b));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.out));
    CHECK(ts_ckks_ciphertext_new(f.p, L, &f.d2));
    double complex *x = malloc(sizeof(double complex) * slots);
    double complex *w = malloc(sizeof(double complex) * slots);
    for (size_t i = 0; i < slots; i++)
        x[i] = 0.5 * sin(0.001 * (double)i);
    CHECK(ts_ckks_encode(f.enc, x, slots, 0, L, ts_ckks_params_scale(f.p), f.pt));
    CHECK(ts_ckks_encrypt_pk(f.pk, f.pt, f.prng, f.a));
    CHECK(ts_ckks_encrypt_pk(f.pk, f.pt, f.prng, f.b));
    printf("large: N = 2^16, L = %d, log2(QP) = %.0f\n", L, ts_ckks_params_logqp(f.p));
    int fails = 0;
    CHECK(ts_ckks_ciphertext_copy(f.out, f.a));
    double ms = time_op(op_intt, &f, 2, 500);
    double cpu_intt = last_cpu_ms;
    double ms2 = time_op(op_ntt, &f, 2, 500);
    row("large", "ntt_ct", L, -1, ms2, 0, 0);
    last_cpu_ms = cpu_intt;
    row("large", "intt_ct", L, -1, ms, 0, 0);
    ms = time_op(op_mul, &f, 2, 500);
    double cpu_mul = last_cpu_ms;
    double ms_r = time_op(op_relin, &f, 2, 1000);
    last_cpu_ms += cpu_mul;
    CHECK(ts_ckks_rescale(f.ev, f.out, f.out));
    for (size_t i = 0; i < slots; i++)
        w[i] = x[i] * x[i];
    double e = err_of(&f, f.out, w, slots);
    fails += e > 1e-5;
    row("large", "mult_relin", L, -1, ms + ms_r, e, 1e-5);
    ms = time_op(op_rotate, &f, 2, 1000);
    for (size_t i = 0; i < slots; i++)
        w[i] = x[(i + 1) % slots];
    e = err_of(&f, f.out, w, slots);
    fails += e > 1e-5;
    row("large", "rotate", L, -1, ms, e, 1e-5);
    CHECK(ts_ckks_relinearize(f.ev, f.d2, f.d2));
    ms = time_op(op_rescale, &f, 2, 500);
    row("large", "rescale", L, -1, ms, 0, 0);
    free(x);
    free(w);
    ts_ckks_ciphertext_free(f.a);
    ts_ckks_ciphertext_free(f.b);
    ts_ckks_ciphertext_free(f.out);
    ts_ckks_ciphertext_free(f.d2);
    ts_ckks_plaintext_free(f.pt);
    ts_ckks_plaintext_free(f.dec);
    ts_ckks_evaluator_free(f.ev);
    ts_ckks_encoder_free(f.enc);
    ts_ckks_evalkeys_free(ek);
    ts_ckks_public_key_free(f.pk);
    ts_ckks_secret_key_free(f.sk);
    ts_prng_free(f.prng);
    ts_ckks_params_free(f.p);
    return fails;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tessera bench ckks [--json PATH] [--quick] [--threads N]\n"
               "                          [--suite fhelium|client|all|none] [--large]\n"
               "                          [--backend cpu|gpu|auto] [--params-dir D]\n"
               "       (build/bench/bench_ckks takes the same options)\n\n"
               "CKKS benchmarks, each row checked against the plaintext computation:\n"
               "  fhelium  FHElium's suite (seed 000) at configs/params/fhelium-n14: every single\n"
               "           operation at its 7 levels, affine and degree-4 polynomial methods, the\n"
               "           16 x 16 dense matrix products pt x ct and ct x ct;\n"
               "  client   encode + symmetric encryption of 4096 real slots (seed 001);\n"
               "  --large  N = 2^16 NTT, mult+relin, rotate, rescale (n16-128; ~1 GB of keys).\n"
               "A table on stdout; with --json the report (machine, threads, parameters,\n"
               "results, failures). --quick: a few repetitions per row (a few seconds).\n"
               "--threads N: the CPU backend's worker threads (default 1). Exit status 1 when a\n"
               "row fails its error limit, 2 on bad usage.\n");
}

int ts_bench_ckks(int argc, char **argv)
{
    const char *json = NULL, *suite = "all", *backend = NULL;
    int threads = 1;
    bool large = false;
    quick = false;
    js = NULL;
    first_row = true;
    params_json[0] = 0;
    params_dir = "configs/params";
    const char *root = getenv("TS_SOURCE_DIR");
    static char root_dir[512];
    if (root) {
        snprintf(root_dir, sizeof(root_dir), "%s/configs/params", root);
        params_dir = root_dir;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--large"))
            large = true;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--suite") && i + 1 < argc)
            suite = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--params-dir") && i + 1 < argc)
            params_dir = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (strcmp(suite, "all") && strcmp(suite, "fhelium") && strcmp(suite, "client") &&
        strcmp(suite, "none")) {
        fprintf(stderr, "bench ckks: unknown suite \"%s\"\n", suite);
        return 2;
    }
    if (threads < 0 || threads > 1024) {
        fprintf(stderr, "bench ckks: --threads must be 0 (all cores) .. 1024\n");
        return 2;
    }
    if (getenv("TS_BENCH_QUICK"))
        quick = true;
    /* the default backend reads TS_THREADS on first use */
    char tbuf[16];
    snprintf(tbuf, sizeof(tbuf), "%d", threads > 0 ? threads : ts_cpu_count());
    setenv("TS_THREADS", tbuf, 1);
    ts_log_set_level(TS_LOG_WARN);
    if (backend && ts_backend_use_default(backend) != TS_OK) {
        fprintf(stderr, "bench ckks: unknown backend \"%s\"\n", backend);
        return 2;
    }
    if (json) {
        js = fopen(json, "w");
        if (!js) {
            perror(json);
            return 1;
        }
        char model[256];
        ts_bench_cpu_model(model, sizeof(model));
        fprintf(js,
                "{\n  \"benchmark\": \"ckks\",\n  \"machine\": {\"cpu\": \"%s\", \"cores\": %d},\n"
                "  \"threads\": %s,\n  \"quick\": %s,\n  \"suite\": \"%s\",\n  \"results\": [\n",
                model, ts_cpu_count(), tbuf, quick ? "true" : "false", suite);
    }
    int fails = 0;
    if (!strcmp(suite, "all") || !strcmp(suite, "fhelium"))
        fails += bench_fhelium();
    if (!strcmp(suite, "all") || !strcmp(suite, "client"))
        fails += bench_client();
    if (large)
        fails += bench_large();
    if (js) {
        fprintf(js, "\n  ],\n  \"parameters\": [\n%s\n  ],\n  \"failures\": %d\n}\n", params_json,
                fails);
        fclose(js);
        js = NULL;
    }
    printf("bench ckks: %d correctness failures\n", fails);
    return fails ? 1 : 0;
}

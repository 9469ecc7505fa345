/*
 * Backend benchmark (JSON), meant for the GPU backend: at N = 2^16 with the
 * chain shape of configs/params/n16-128.yaml (35 Q primes: 60 + 34 x 40 bits,
 * 5 special 61-bit primes, dnum = 7 digits of 5 primes) it times, through the
 * ts_backend_i table only:
 *  - NTT / inverse NTT over batches of limbs (reported per limb, amortized);
 *  - element-wise ops (add, mul, mul_add, mul_shoup, mul_scalar) and the
 *    NTT-form automorphism on a ciphertext-sized batch (2 x 35 limbs);
 *  - ModUp of one digit (basis_extend 5 -> 35 limbs), ModDown (basis_reduce
 *    5 -> 35 limbs, 2 polys), the key-switch inner product (7 digits);
 *  - a complete mult + relinearization composed from those ops (tensor
 *    product, INTT, ModUp of 7 digits, NTT, inner product, INTT, ModDown, NTT,
 *    adds), the same sequence core/rlwe's hybrid key switching runs;
 *  - host <-> device transfers of one ciphertext.
 * Every timing is wall clock between two synchronizations, the median of
 * several rounds of the mean over repetitions.
 *
 * Usage: bench_gpu [--json PATH] [--quick] [--backend gpu|cpu|auto] [--logn K]
 * Without a GPU (or in a build without CUDA) it says so, writes a JSON with
 * "skipped": true and exits 0. --backend cpu runs the same on the CPU backend
 * (use a smaller --logn on small machines).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend/backend.h"
#include "core/base/base.h"
#include "core/math/math.h"
#include "gpu/gpu.h"

#define NQ    35
#define NP    5
#define NT    (NQ + NP)
#define DNUM  7
#define ALPHA 5 /* NQ / DNUM */

static int quick;
static ts_backend_t *be;
static ts_bk_ring_t *ring;
static uint32_t n, logn;
static uint64_t mods[NT];
static FILE *js;
static int first_row = 1;

static uint64_t rng_state = 0x1234567;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void die(const char *what, ts_status_t st)
{
    fprintf(stderr, "bench_gpu: %s: %s\n", what, ts_strerror(st));
    exit(1);
}

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        ts_status_t st_ = (expr);                                                                  \
        if (st_ != TS_OK)                                                                          \
            die(#expr, st_);                                                                       \
    } while (0)

/* A batch in backend memory with random reduced residues. */
typedef struct buf {
    uint64_t *d;
    uint32_t npolys, nlimbs;
    uint32_t idx[NT];
} buf_t;

static void buf_new(buf_t *b, uint32_t npolys, uint32_t nlimbs, const uint32_t *idx)
{
    b->npolys = npolys;
    b->nlimbs = nlimbs;
    memcpy(b->idx, idx, nlimbs * sizeof(uint32_t));
    const size_t words = (size_t)npolys * nlimbs * n;
    CHECK(ts_backend_alloc(be, words * 8, (void **)&b->d));
    uint64_t *h = malloc(words * 8);
    if (!h)
        die("host staging", TS_ENOMEM);
    for (uint32_t p = 0; p < npolys; p++)
        for (uint32_t l = 0; l < nlimbs; l++) {
            uint64_t *x = h + ((size_t)p * nlimbs + l) * n;
            for (uint32_t i = 0; i < n; i++)
                x[i] = rng_next() % mods[idx[l]];
        }
    CHECK(ts_backend_upload(be, b->d, h, words * 8));
    CHECK(ts_backend_sync(be));
    free(h);
}

static ts_bk_batch_t view(const buf_t *b)
{
    ts_bk_batch_t v = {b->d, b->npolys, b->nlimbs, (size_t)b->nlimbs * n, b->idx};
    return v;
}

/* Limbs [l0, l0 + cnt) of every poly of b (same poly stride). */
static ts_bk_batch_t sub(const buf_t *b, uint32_t l0, uint32_t cnt)
{
    ts_bk_batch_t v = {b->d + (size_t)l0 * n, b->npolys, cnt, (size_t)b->nlimbs * n, b->idx + l0};
    return v;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*op_fn)(void *arg);

/* Median over rounds of the mean time (us) of `reps` calls, between syncs. */
static double time_op(op_fn fn, void *arg, int reps)
{
    const int rounds = quick ? 3 : 7;
    double t[16];
    fn(arg); /* warm-up */
    CHECK(ts_backend_sync(be));
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = ts_now_ns();
        for (int i = 0; i < reps; i++)
            fn(arg);
        CHECK(ts_backend_sync(be));
        t[r] = (double)(ts_now_ns() - t0) / 1e3 / reps;
    }
    qsort(t, (size_t)rounds, sizeof t[0], cmp_d);
    return t[rounds / 2];
}

static void row(const char *op, const char *batch, uint32_t limbs, double us)
{
    const double ns_limb = limbs ? us * 1e3 / limbs : 0;
    printf("%-26s %-22s %12.2f us", op, batch, us);
    if (limbs)
        printf("  %10.1f ns/limb", ns_limb);
    printf("\n");
    fprintf(js, "%s    {\"op\": \"%s\", \"batch\": \"%s\", \"limbs\": %u, \"us_per_call\": %.3f",
            first_row ? "" : ",\n", op, batch, limbs, us);
    if (limbs)
        fprintf(js, ", \"ns_per_limb\": %.2f", ns_limb);
    fprintf(js, "}");
    first_row = 0;
}

/* ------------------------------------------------------------- the ops */

typedef struct ctx {
    buf_t *a, *b, *c, *w, *wp;
    uint64_t scal[NT];
    ts_bk_conv_t *conv;
    uint64_t k;
    /* key switching */
    buf_t *ext, *tmp, *key, *ks_out, *ct0, *ct1, *d0, *d1, *d2;
    ts_bk_conv_t *modup[DNUM], *moddown;
    uint32_t tmp_idx[DNUM][NT], tmp_n; /* the complement of digit j, [Q | P] order */
    uint32_t key_limb[NT];
} ctx_t;

static void op_ntt_fwd(void *v)
{
    ts_bk_batch_t x = view(((ctx_t *)v)->a);
    CHECK(ts_backend_ntt_forward(be, ring, &x));
}
static void op_ntt_inv(void *v)
{
    ts_bk_batch_t x = view(((ctx_t *)v)->a);
    CHECK(ts_backend_ntt_inverse(be, ring, &x));
}
static void op_ntt_fwd_big(void *v)
{
    ts_bk_batch_t x = view(((ctx_t *)v)->ext);
    CHECK(ts_backend_ntt_forward(be, ring, &x));
}
static void op_add(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t o = view(c->c), a = view(c->a), b = view(c->b);
    CHECK(ts_backend_add(be, ring, &o, &a, &b));
}
static void op_mul(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t o = view(c->c), a = view(c->a), b = view(c->b);
    CHECK(ts_backend_mul(be, ring, &o, &a, &b));
}
static void op_mul_add(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t o = view(c->c), a = view(c->a), b = view(c->b);
    CHECK(ts_backend_mul_add(be, ring, &o, &a, &b));
}
static void op_mul_shoup(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t o = view(c->c), a = view(c->a), w = view(c->w), wp = view(c->wp);
    CHECK(ts_backend_mul_shoup(be, ring, &o, &a, &w, &wp));
}
static void op_mul_scalar(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t o = view(c->c), a = view(c->a);
    CHECK(ts_backend_mul_scalar(be, ring, &o, &a, c->scal));
}
static void op_auto(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t o = view(c->c), a = view(c->a);
    CHECK(ts_backend_automorphism_ntt(be, ring, &o, &a, c->k));
}

/* ModUp of digit 0: its ALPHA limbs to the other NQ - ALPHA + NP limbs. */
static void op_modup1(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t in = sub(c->ct0, 0, ALPHA);
    in.npolys = 1;
    ts_bk_batch_t out = {c->tmp->d, 1, c->tmp_n, (size_t)c->tmp_n * n, c->tmp_idx[0]};
    CHECK(ts_backend_basis_extend(be, ring, c->modup[0], &out, &in));
}

/* ModDown of the 2 key-switch outputs (P limbs -> Q limbs), in place; one
 * call per poly (the backends reject x_a interleaved with out in one batch). */
static void moddown(ctx_t *c)
{
    for (uint32_t p = 0; p < 2; p++) {
        ts_bk_batch_t xq = sub(c->ks_out, 0, NQ), xp = sub(c->ks_out, NQ, NP);
        xq.npolys = xp.npolys = 1;
        xq.data += (size_t)p * NT * n;
        xp.data += (size_t)p * NT * n;
        CHECK(ts_backend_basis_reduce(be, ring, c->moddown, &xq, &xp, &xq));
    }
}

static void op_moddown(void *v)
{
    moddown(v);
}

static void op_ks_inner(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t o = view(c->ks_out), d = view(c->ext), k = view(c->key);
    CHECK(ts_backend_keyswitch_inner(be, ring, &o, &d, &k, c->key_limb));
}

/*
 * mult + relin of two NTT-form ciphertexts at the top level: tensor, then
 * hybrid key switching of d2 (ModUp per digit into the common limb order
 * [Q | P], NTT, inner product with the relinearization key, INTT, ModDown,
 * NTT), then d0 + ks_0, d1 + ks_1.
 */
static void op_mult_relin(void *v)
{
    ctx_t *c = v;
    ts_bk_batch_t a0 = view(c->ct0), a1 = view(c->ct1);
    a0.npolys = a1.npolys = 1;
    ts_bk_batch_t b0 = a0, b1 = a1; /* squaring keeps memory small; same work */
    ts_bk_batch_t d0 = view(c->d0), d1 = view(c->d1), d2 = view(c->d2);
    CHECK(ts_backend_mul(be, ring, &d0, &a0, &b0));
    CHECK(ts_backend_mul(be, ring, &d1, &a0, &b1));
    CHECK(ts_backend_mul_add(be, ring, &d1, &a1, &b0));
    CHECK(ts_backend_mul(be, ring, &d2, &a1, &b1));
    CHECK(ts_backend_ntt_inverse(be, ring, &d2));
    const size_t limb_bytes = (size_t)n * 8;
    for (uint32_t j = 0; j < DNUM; j++) {
        /* digit j's limbs go through unchanged, the others from the conversion */
        uint64_t *dst = c->ext->d + (size_t)j * NT * n;
        ts_bk_batch_t in = sub(c->d2, j * ALPHA, ALPHA);
        ts_bk_batch_t out = {c->tmp->d, 1, c->tmp_n, (size_t)c->tmp_n * n, c->tmp_idx[j]};
        CHECK(ts_backend_basis_extend(be, ring, c->modup[j], &out, &in));
        const size_t before = (size_t)j * ALPHA, after = NT - before - ALPHA;
        CHECK(ts_backend_copy(be, dst + before * n, c->d2->d + before * n, ALPHA * limb_bytes));
        if (before)
            CHECK(ts_backend_copy(be, dst, c->tmp->d, before * limb_bytes));
        CHECK(ts_backend_copy(be, dst + (before + ALPHA) * n, c->tmp->d + before * n,
                              after * limb_bytes));
    }
    ts_bk_batch_t ext = view(c->ext);
    CHECK(ts_backend_ntt_forward(be, ring, &ext));
    ts_bk_batch_t o = view(c->ks_out), k = view(c->key);
    CHECK(ts_backend_keyswitch_inner(be, ring, &o, &ext, &k, c->key_limb));
    CHECK(ts_backend_ntt_inverse(be, ring, &o));
    moddown(c);
    ts_bk_batch_t xq = sub(c->ks_out, 0, NQ);
    CHECK(ts_backend_ntt_forward(be, ring, &xq));
    ts_bk_batch_t k0 = xq, k1 = xq;
    k0.npolys = k1.npolys = 1;
    k1.data += (size_t)NT * n;
    CHECK(ts_backend_add(be, ring, &d0, &d0, &k0));
    CHECK(ts_backend_add(be, ring, &d1, &d1, &k1));
}

/* ----------------------------------------------------------------- main */

static void machine_json(FILE *f)
{
    char model[256] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
        char line[512];
        while (fgets(line, sizeof line, ci)) {
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    p++;
                    while (*p == ' ')
                        p++;
                    p[strcspn(p, "\n\"\\")] = '\0';
                    snprintf(model, sizeof model, "%s", p);
                }
                break;
            }
        }
        fclose(ci);
    }
    fprintf(f, "  \"machine\": {\"cpu\": \"%s\", \"cores\": %d},\n", model, ts_cpu_count());
}

int main(int argc, char **argv)
{
    ts_malloc_tune();
    const char *json = NULL, *bname = "gpu";
    logn = 16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            bname = argv[++i];
        else if (!strcmp(argv[i], "--logn") && i + 1 < argc)
            logn = (uint32_t)atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--json PATH] [--quick] [--backend gpu|cpu|auto] [--logn K]\n",
                    argv[0]);
            return 2;
        }
    }
    if (logn < 10 || logn > 17) {
        fprintf(stderr, "bench_gpu: --logn must be in [10, 17]\n");
        return 2;
    }
    n = 1u << logn;
    js = json ? fopen(json, "w") : stdout;
    if (!js) {
        perror(json);
        return 1;
    }
    char why[320] = "";
    ts_status_t st = ts_backend_select_why(bname, &be, why, sizeof why);
    if (st != TS_OK) {
        printf("bench_gpu: backend \"%s\" unavailable (%s); nothing measured\n", bname,
               why[0] ? why : ts_strerror(st));
        fprintf(js, "{\n  \"benchmark\": \"gpu\",\n  \"skipped\": true,\n  \"reason\": \"");
        for (const char *p = why[0] ? why : ts_strerror(st); *p; p++)
            if (*p != '"' && *p != '\\')
                fputc(*p, js);
        fprintf(js, "\"\n}\n");
        if (json)
            fclose(js);
        return 0;
    }
    ts_gpu_info_t info;
    memset(&info, 0, sizeof info);
    const bool on_gpu = strcmp(be->iface->name, "gpu") == 0;
    if (on_gpu)
        (void)ts_gpu_probe(&info, NULL, 0);
    /* primes: q_0 60 bits, 34 of 40 bits, 5 special of 61 bits */
    CHECK(ts_primes_ntt(60, 2ull * n, 1, TS_PRIMES_DESCENDING, NULL, 0, mods));
    CHECK(ts_primes_ntt(40, 2ull * n, NQ - 1, TS_PRIMES_NEAREST, mods, 1, mods + 1));
    CHECK(ts_primes_ntt(61, 2ull * n, NP, TS_PRIMES_DESCENDING, mods, NQ, mods + NQ));
    CHECK(be->iface->ring_new(be, n, mods, NT, &ring));

    uint32_t all[NT];
    for (uint32_t l = 0; l < NT; l++)
        all[l] = l;
    ctx_t c;
    memset(&c, 0, sizeof c);
    buf_t A, B, C, W, WP, EXT, TMP, KEY, KS, CT0, CT1, D0, D1, D2;
    buf_new(&A, 2, NQ, all);
    buf_new(&B, 2, NQ, all);
    buf_new(&C, 2, NQ, all);
    buf_new(&W, 2, NQ, all);
    buf_new(&WP, 2, NQ, all); /* any words: Shoup constants are not checked */
    buf_new(&CT0, 1, NQ, all);
    buf_new(&CT1, 1, NQ, all);
    buf_new(&D0, 1, NQ, all);
    buf_new(&D1, 1, NQ, all);
    buf_new(&D2, 1, NQ, all);
    buf_new(&EXT, DNUM, NT, all);
    buf_new(&KEY, 2 * DNUM, NT, all);
    buf_new(&KS, 2, NT, all);
    c.a = &A;
    c.b = &B;
    c.c = &C;
    c.w = &W;
    c.wp = &WP;
    c.ext = &EXT;
    c.key = &KEY;
    c.ks_out = &KS;
    c.ct0 = &CT0;
    c.ct1 = &CT1;
    c.d0 = &D0;
    c.d1 = &D1;
    c.d2 = &D2;
    for (uint32_t l = 0; l < NT; l++) {
        c.scal[l] = rng_next() % mods[l];
        c.key_limb[l] = l;
    }
    c.k = 5;
    /* conversions: digit j -> its complement in [Q | P] order; P -> Q */
    for (uint32_t j = 0; j < DNUM; j++) {
        uint32_t from[ALPHA], to[NT];
        uint32_t nt = 0;
        for (uint32_t l = 0; l < ALPHA; l++)
            from[l] = j * ALPHA + l;
        for (uint32_t l = 0; l < NT; l++)
            if (l < j * ALPHA || l >= (j + 1) * ALPHA)
                to[nt++] = l;
        CHECK(be->iface->conv_new(be, ring, from, ALPHA, to, nt, &c.modup[j]));
        memcpy(c.tmp_idx[j], to, sizeof to);
        c.tmp_n = nt;
        if (j == 0) {
            buf_new(&TMP, 1, nt, to);
            c.tmp = &TMP;
        }
    }
    {
        uint32_t from[NP], to[NQ];
        for (uint32_t l = 0; l < NP; l++)
            from[l] = NQ + l;
        for (uint32_t l = 0; l < NQ; l++)
            to[l] = l;
        CHECK(be->iface->conv_new(be, ring, from, NP, to, NQ, &c.moddown));
    }

    fprintf(js, "{\n  \"benchmark\": \"gpu\",\n  \"backend\": \"%s\",\n", be->iface->name);
    fprintf(js, "  \"device\": \"%s\",\n", on_gpu ? info.name : "cpu");
    fprintf(js, "  \"threads\": %d,\n", be->threads);
    machine_json(js);
    fprintf(js,
            "  \"params\": {\"n\": %u, \"q_primes\": %d, \"q_bits\": \"60 + %d x 40\", "
            "\"p_primes\": %d, \"p_bits\": 61, \"dnum\": %d},\n",
            n, NQ, NQ - 1, NP, DNUM);
    fprintf(js, "  \"unit\": \"us per call (median of rounds), ns per limb amortized\",\n");
    fprintf(js, "  \"results\": [\n");
    printf("bench_gpu: backend %s%s%s, N = %u, %d + %d primes, dnum %d\n", be->iface->name,
           on_gpu ? " on " : "", on_gpu ? info.name : "", n, NQ, NP, DNUM);
    const int reps = quick ? 3 : (on_gpu ? 50 : 3);
    row("ntt_forward", "2 x 35 limbs", 2 * NQ, time_op(op_ntt_fwd, &c, reps));
    row("ntt_inverse", "2 x 35 limbs", 2 * NQ, time_op(op_ntt_inv, &c, reps));
    row("ntt_forward", "7 x 40 limbs", DNUM * NT, time_op(op_ntt_fwd_big, &c, reps));
    row("add", "2 x 35 limbs", 2 * NQ, time_op(op_add, &c, reps));
    row("mul", "2 x 35 limbs", 2 * NQ, time_op(op_mul, &c, reps));
    row("mul_add", "2 x 35 limbs", 2 * NQ, time_op(op_mul_add, &c, reps));
    row("mul_shoup", "2 x 35 limbs", 2 * NQ, time_op(op_mul_shoup, &c, reps));
    row("mul_scalar", "2 x 35 limbs", 2 * NQ, time_op(op_mul_scalar, &c, reps));
    row("automorphism_ntt", "2 x 35 limbs", 2 * NQ, time_op(op_auto, &c, reps));
    row("basis_extend (ModUp)", "1 digit 5 -> 35", 0, time_op(op_modup1, &c, reps));
    row("basis_reduce (ModDown)", "2 polys 5 -> 35", 0, time_op(op_moddown, &c, reps));
    row("keyswitch_inner", "7 digits x 2 x 40", 0, time_op(op_ks_inner, &c, reps));
    row("mult_relin", "top level, dnum 7", 0, time_op(op_mult_relin, &c, quick ? 2 : reps));
    {
        const size_t bytes = (size_t)2 * NQ * n * 8;
        uint64_t *h = malloc(bytes);
        if (!h)
            die("host buffer", TS_ENOMEM);
        memset(h, 0, bytes);
        uint64_t t0 = ts_now_ns();
        for (int i = 0; i < reps; i++)
            CHECK(ts_backend_upload(be, A.d, h, bytes));
        CHECK(ts_backend_sync(be));
        double up = (double)(ts_now_ns() - t0) / 1e3 / reps;
        t0 = ts_now_ns();
        for (int i = 0; i < reps; i++)
            CHECK(ts_backend_download(be, h, A.d, bytes));
        double down = (double)(ts_now_ns() - t0) / 1e3 / reps;
        row("upload (pageable)", "one ciphertext", 0, up);
        row("download (pageable)", "one ciphertext", 0, down);
        free(h);
    }
    fprintf(js, "\n  ]\n}\n");
    if (json)
        fclose(js);
    for (uint32_t j = 0; j < DNUM; j++)
        be->iface->conv_free(be, c.modup[j]);
    be->iface->conv_free(be, c.moddown);
    buf_t *bufs[] = {&A, &B, &C, &W, &WP, &EXT, &TMP, &KEY, &KS, &CT0, &CT1, &D0, &D1, &D2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ts_backend_buf_free(be, bufs[i]->d);
    be->iface->ring_free(be, ring);
    ts_backend_free(be);
    return 0;
}

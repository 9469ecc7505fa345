/*
 * gpu/ backend ops, in the style of ggml's test-backend-ops: every op of
 * struct ts_backend_i on random inputs at several parameter sets (N from 2^4
 * to 2^17, 1 to 9 limbs, 30- to 61-bit primes, padded poly strides, permuted
 * limb-to-modulus maps), compared bit for bit with the CPU backend.
 *
 * Two layers of checks:
 *  - emulation (runs everywhere): the kernel bodies and the NTT tile schedule
 *    of gpu/gpu_kern.h, which the CUDA kernels call, are run on the host over
 *    every thread index of each launch and compared with the CPU backend; the
 *    NTT emulation also asserts that tiles partition the words, that the
 *    butterflies of a stage touch each word once, pair words at the stage's
 *    gap and use the twiddle of core/math/ntt.c.
 *  - device (needs a GPU): the same ops through the GPU backend. Without a
 *    GPU (or in a build without CUDA) these print a skip message and pass.
 * The ring layer is also run on the GPU backend (ts_ring_params_t.backend).
 *
 * Any other suite runs on the GPU with TS_TEST_BACKEND=gpu (or auto), e.g.
 *     TS_TEST_BACKEND=gpu CK_RUN_SUITE=ckks_eval build/tests/unit_tests
 * (tests/gpu/run_all.sh does): the constructor below makes that backend the
 * process default (ts_backend_use_default), which every ring created with
 * backend NULL, hence every CKKS and RLWE context, uses. The backend is made
 * lazily in each forked test process (a CUDA context does not survive fork).
 */
#include "tests/unit/ts_test.h"

#include "core/backend/backend.h"
#include "core/math/math.h"
#include "core/ring/ring.h"
#include "gpu/gpu.h"
#include "gpu/gpu_kern.h"

/* A check for hot loops: Check's ck_assert records every passing point (a
 * write per call), far too slow for millions of butterflies. */
#define HOT_CHECK(cond)                                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg("%s:%d: %s failed", __FILE__, __LINE__, #cond);                           \
    } while (0)

/* The one compiler-specific construct of this file: run before main(). */
#define TS_TEST_CONSTRUCTOR __attribute__((constructor))

TS_TEST_CONSTRUCTOR static void test_backend_from_env(void)
{
    const char *name = getenv("TS_TEST_BACKEND");
    if (!name || !*name)
        return;
    ts_status_t st = ts_backend_use_default(name);
    fprintf(stderr, "unit_tests: TS_TEST_BACKEND=%s: %s\n", name,
            st == TS_OK ? "default backend installed (made on first use)" : ts_strerror(st));
}

/* ------------------------------------------------------------ fixtures */

typedef struct pset {
    const char *name;
    uint32_t logn, nq, np, bits_q, bits_p;
    int heavy; /* skipped under TS_TEST_QUICK */
} pset_t;

static const pset_t psets[] = {
    {"n16-3x30+1x31", 4, 3, 1, 30, 31, 0},     {"n1024-4x50+2x55", 10, 4, 2, 50, 55, 0},
    {"n4096-5x61+2x60", 12, 5, 2, 61, 60, 0},  {"n8192-3x45+1x50", 13, 3, 1, 45, 50, 0},
    {"n65536-6x60+3x61", 16, 6, 3, 60, 61, 1}, {"n131072-2x61+1x59", 17, 2, 1, 61, 59, 1},
};
#define NPSETS (sizeof psets / sizeof psets[0])

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A ring's moduli: nq primes of bits_q, then np of bits_p (distinct). */
typedef struct fix {
    const pset_t *ps;
    uint32_t n, logn, count;
    uint64_t mods[16];
    ts_ntt_table_t *tab[16];
    tsg_mod_t dmods[16];
    uint64_t *blob;       /* the GPU ring tables as backend.c packs them */
    tsg_ring_tables_t rt; /* and the kernels' view of them */
    ts_backend_t *cpu;
    ts_bk_ring_t *cring;
} fix_t;

static void fix_init(fix_t *f, const pset_t *ps)
{
    memset(f, 0, sizeof *f);
    f->ps = ps;
    f->logn = ps->logn;
    f->n = 1u << ps->logn;
    f->count = ps->nq + ps->np;
    ck_assert_uint_le(f->count, 16);
    ck_assert_ts_ok(
        ts_primes_ntt(ps->bits_q, 2ull * f->n, ps->nq, TS_PRIMES_DESCENDING, NULL, 0, f->mods));
    ck_assert_ts_ok(ts_primes_ntt(ps->bits_p, 2ull * f->n, ps->np, TS_PRIMES_ASCENDING, f->mods,
                                  ps->nq, f->mods + ps->nq));
    for (uint32_t i = 0; i < f->count; i++) {
        ck_assert_ts_ok(ts_ntt_table_new(f->n, f->mods[i], &f->tab[i]));
        f->dmods[i] = tsg_mod_from_table(f->tab[i]);
    }
    f->blob = ts_malloc(tsg_ring_blob_words(f->count, f->n) * 8);
    ck_assert_ptr_nonnull(f->blob);
    for (uint32_t i = 0; i < f->count; i++)
        tsg_ring_pack(f->tab[i], i, f->count, f->blob);
    f->rt = tsg_ring_view((uintptr_t)f->blob, f->count, f->n);
    ck_assert_ts_ok(ts_backend_cpu_new(1, &f->cpu));
    ck_assert_ts_ok(f->cpu->iface->ring_new(f->cpu, f->n, f->mods, f->count, &f->cring));
}

static void fix_clear(fix_t *f)
{
    f->cpu->iface->ring_free(f->cpu, f->cring);
    ts_backend_free(f->cpu);
    ts_free(f->blob);
    for (uint32_t i = 0; i < f->count; i++)
        ts_ntt_table_free(f->tab[i]);
}

/* A limb map: nl (<= count) distinct moduli in a rotated order. */
static void limb_map(const fix_t *f, uint32_t nl, uint32_t shift, uint32_t *idx)
{
    ck_assert_uint_le(nl, f->count);
    for (uint32_t l = 0; l < nl; l++)
        idx[l] = (l + shift) % f->count;
}

/* Host words of a batch: npolys x stride, random residues of each limb's modulus. */
static uint64_t *rand_batch(const fix_t *f, uint32_t npolys, uint32_t nl, size_t stride,
                            const uint32_t *idx, uint64_t *seed)
{
    uint64_t *h = ts_malloc((size_t)npolys * stride * sizeof(uint64_t));
    ck_assert_ptr_nonnull(h);
    for (size_t w = 0; w < (size_t)npolys * stride; w++)
        h[w] = 0x5a5a5a5a5a5a5a5aULL; /* padding stays put */
    for (uint32_t p = 0; p < npolys; p++)
        for (uint32_t l = 0; l < nl; l++) {
            const uint64_t q = f->mods[idx[l]];
            uint64_t *x = h + p * stride + (size_t)l * f->n;
            for (uint32_t i = 0; i < f->n; i++)
                x[i] = rng_next(seed) % q;
        }
    return h;
}

static void expect_same(const char *what, const pset_t *ps, const uint64_t *want,
                        const uint64_t *got, size_t words)
{
    for (size_t w = 0; w < words; w++)
        if (want[w] != got[w])
            ck_abort_msg("%s [%s]: word %zu: cpu %llu, other %llu", what, ps->name, w,
                         (unsigned long long)want[w], (unsigned long long)got[w]);
}

static tsg_limbs_t limbs_of(uint32_t npolys, uint32_t nl, const uint32_t *idx)
{
    tsg_limbs_t lm;
    memset(&lm, 0, sizeof lm);
    lm.npolys = npolys;
    lm.nlimbs = nl;
    for (uint32_t l = 0; l < nl; l++)
        lm.mi[l] = (uint16_t)idx[l];
    return lm;
}

/* ------------------------------------------------ emulation: arithmetic */

START_TEST(test_emul_arith)
{
    uint64_t seed = 1;
    const uint32_t bits[] = {20, 30, 40, 50, 55, 60, 61};
    for (size_t bi = 0; bi < sizeof bits / sizeof bits[0]; bi++) {
        uint64_t q;
        ck_assert_ts_ok(ts_primes_ntt(bits[bi], 1u << 18, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
        ts_modulus_t m;
        ck_assert_ts_ok(ts_modulus_init(&m, q));
        tsg_mod_t dm = {q, m.barrett_hi, m.barrett_lo, 0, 0, 0, 0};
        for (int it = 0; it < 20000; it++) {
            uint64_t a = rng_next(&seed) % q, b = rng_next(&seed) % q, c = rng_next(&seed) % q;
            uint64_t hi = rng_next(&seed), lo = rng_next(&seed);
            if (it < 4) { /* edges */
                a = it & 1 ? q - 1 : 0;
                b = it & 2 ? q - 1 : 0;
                hi = lo = it == 3 ? UINT64_MAX : 0;
            }
            HOT_CHECK((tsg_reduce128(hi, lo, &dm)) == (ts_mod_reduce128(hi, lo, &m)));
            HOT_CHECK((tsg_mul(a, b, &dm)) == (ts_mod_mul(a, b, &m)));
            ts_u128_t x = (ts_u128_t)a * b + c;
            HOT_CHECK((tsg_mul_add(a, b, c, &dm)) ==
                      (ts_mod_reduce128((uint64_t)(x >> 64), (uint64_t)x, &m)));
            const uint64_t bp = ts_shoup_precompute(b, q);
            HOT_CHECK((tsg_shoup(a, b, bp, q)) == (ts_mod_mul_shoup(a, b, bp, q)));
            HOT_CHECK((tsg_shoup(hi, b, bp, q)) == (ts_mod_mul_shoup(hi, b, bp, q)));
            HOT_CHECK((tsg_add(a, b, q)) == (ts_mod_add(a, b, q)));
            HOT_CHECK((tsg_sub(a, b, q)) == (ts_mod_sub(a, b, q)));
            HOT_CHECK((tsg_neg(a, q)) == (ts_mod_neg(a, q)));
        }
    }
    for (uint32_t bits2 = 1; bits2 <= 17; bits2++)
        for (uint32_t i = 0; i < (1u << bits2) && i < 4096; i++)
            HOT_CHECK((tsg_bitrev(i, bits2)) == (ts_bitrev(i, bits2)));
}
END_TEST

/* ----------------------------------------------------- emulation: NTT */

/*
 * One limb through the pass schedule exactly as ntt.cu runs it: per tile,
 * load into a tile buffer (shared memory), the stages with their butterflies
 * (serially: within a stage the butterflies are disjoint, asserted), store.
 */
static void emul_ntt(const fix_t *f, uint32_t mi, uint64_t *x, bool inverse, uint32_t logm)
{
    /* logm < the ring's logn: the compact forward transform of M = 2^logm
     * words (ntt_forward_compact), the first M twiddles of the N-point table */
    const uint32_t n = 1u << logm, logn = logm;
    /* the tables as ntt.cu addresses them in the packed ring blob */
    const uint64_t *tw = (inverse ? f->rt.inv : f->rt.fwd) + ((size_t)mi << f->logn);
    const uint64_t *tw_sh = (inverse ? f->rt.inv_sh : f->rt.fwd_sh) + ((size_t)mi << f->logn);
    const tsg_mod_t m = f->rt.mods[mi];
    tsg_ntt_pass_t passes[TSG_NTT_MAX_PASSES];
    const uint32_t np = tsg_ntt_plan(logn, passes);
    HOT_CHECK((np) >= (1));
    HOT_CHECK((np) <= (TSG_NTT_MAX_PASSES));
    HOT_CHECK((passes[0].s0) == (0));
    HOT_CHECK((passes[np - 1].s1) == (logn));
    uint64_t sh[1u << TSG_NTT_TILE_LOG];
    uint8_t touched[1u << TSG_NTT_TILE_LOG];
    uint8_t *seen = ts_calloc(n, 1);
    ck_assert_ptr_nonnull(seen);
    for (uint32_t k = 0; k < np; k++) {
        const uint32_t pi = inverse ? np - 1 - k : k;
        const tsg_ntt_pass_t *p = &passes[pi];
        if (pi > 0)
            HOT_CHECK((p->s0) == (passes[pi - 1].s1));
        HOT_CHECK((p->log_tile) <= (TSG_NTT_TILE_LOG));
        HOT_CHECK((p->log_s) >= (1));
        HOT_CHECK(((uint64_t)p->ntiles << p->log_tile) == (n));
        const uint32_t tile = 1u << p->log_tile, half = tile / 2;
        const int first = k == 0, last = k == np - 1;
        memset(seen, 0, n);
        for (uint32_t b = 0; b < p->ntiles; b++) {
            for (uint32_t e = 0; e < tile; e++) {
                const uint32_t g = tsg_ntt_elem(p, b, e);
                HOT_CHECK((g) < (n));
                seen[g]++;
                uint64_t v = x[g];
                if (inverse && first)
                    v = tsg_reduce_4q_2q(v, m.q);
                sh[e] = v;
            }
            for (uint32_t r = 0; r < p->log_s; r++) {
                const uint32_t s = inverse ? p->s1 - 1 - r : p->s0 + r;
                memset(touched, 0, tile);
                for (uint32_t tt = 0; tt < half; tt++) {
                    uint32_t ex, ey;
                    const uint32_t wi = tsg_ntt_bfly(p, b, s, tt, &ex, &ey);
                    HOT_CHECK((ex) < (tile));
                    HOT_CHECK((ey) < (tile));
                    touched[ex]++;
                    touched[ey]++;
                    /* the pair of core/math/ntt.c: gap N >> (s + 1), same group,
                     * x on the lower half of the group, twiddle (1 << s) + group */
                    const uint32_t gx = tsg_ntt_elem(p, b, ex), gy = tsg_ntt_elem(p, b, ey);
                    HOT_CHECK((gy - gx) == (n >> (s + 1)));
                    HOT_CHECK((gx >> (logn - s)) == (gy >> (logn - s)));
                    HOT_CHECK(((gx >> (logn - s - 1)) & 1) == (0));
                    HOT_CHECK((wi) == ((1u << s) + (gx >> (logn - s))));
                    if (!inverse)
                        tsg_ct_bfly(&sh[ex], &sh[ey], tw[wi], tw_sh[wi], m.q);
                    else if (s == 0)
                        tsg_gs_last(&sh[ex], &sh[ey], &m);
                    else
                        tsg_gs_bfly(&sh[ex], &sh[ey], tw[wi], tw_sh[wi], m.q);
                }
                for (uint32_t e = 0; e < tile; e++)
                    if (touched[e] != 1)
                        ck_abort_msg("stage %u touches local word %u %u times", s, e, touched[e]);
            }
            for (uint32_t e = 0; e < tile; e++) {
                uint64_t v = sh[e];
                if (!inverse && last)
                    v = tsg_reduce_4q(v, m.q);
                x[tsg_ntt_elem(p, b, e)] = v;
            }
        }
        for (uint32_t g = 0; g < n; g++)
            if (seen[g] != 1)
                ck_abort_msg("pass %u loads word %u %u times", pi, g, seen[g]);
    }
    ts_free(seen);
}

START_TEST(test_emul_ntt)
{
    /* every N from 2 to 2^17 (one and two passes), one prime each */
    for (uint32_t logn = 1; logn <= 17; logn++) {
        if (ts_test_quick() && logn > 14)
            break;
        pset_t ps = {"ntt", logn, 1, 1, logn + 40 > 61 ? 61 : logn + 40, 30 + logn, 0};
        fix_t f;
        fix_init(&f, &ps);
        uint64_t seed = logn;
        uint32_t idx[2] = {0, 1};
        const size_t stride = 2 * (size_t)f.n + 8;
        uint64_t *h = rand_batch(&f, 2, 2, stride, idx, &seed);
        uint64_t *e = ts_malloc(2 * stride * sizeof(uint64_t));
        ck_assert_ptr_nonnull(e);
        memcpy(e, h, 2 * stride * sizeof(uint64_t));
        uint32_t mi[2] = {0, 1};
        ts_bk_batch_t bt = {h, 2, 2, stride, mi};
        ck_assert_ts_ok(ts_backend_ntt_forward(f.cpu, f.cring, &bt));
        for (uint32_t p = 0; p < 2; p++)
            for (uint32_t l = 0; l < 2; l++)
                emul_ntt(&f, l, e + p * stride + (size_t)l * f.n, false, logn);
        expect_same("emulated ntt_forward", &ps, h, e, 2 * stride);
        ck_assert_ts_ok(ts_backend_ntt_inverse(f.cpu, f.cring, &bt));
        for (uint32_t p = 0; p < 2; p++)
            for (uint32_t l = 0; l < 2; l++)
                emul_ntt(&f, l, e + p * stride + (size_t)l * f.n, true, logn);
        expect_same("emulated ntt_inverse", &ps, h, e, 2 * stride);
        /* the compact forward transform (ntt_forward_compact) at every gap:
         * M = N / gap words per limb, inputs anywhere in [0, 4q) */
        for (uint32_t lg = 1; lg < logn; lg++) {
            const uint32_t m = f.n >> lg;
            const size_t cstride = 2 * (size_t)m + 3;
            for (size_t w = 0; w < 2 * cstride; w++)
                h[w] = 0x5a5a5a5a5a5a5a5aULL; /* padding stays put */
            for (uint32_t p = 0; p < 2; p++)
                for (uint32_t l = 0; l < 2; l++)
                    for (uint32_t k = 0; k < m; k++)
                        h[p * cstride + (size_t)l * m + k] = rng_next(&seed) % (4 * f.mods[l]);
            memcpy(e, h, 2 * cstride * sizeof(uint64_t));
            ts_bk_batch_t ct = {h, 2, 2, cstride, mi};
            ck_assert_ts_ok(ts_backend_ntt_forward_compact(f.cpu, f.cring, &ct, 1u << lg));
            for (uint32_t p = 0; p < 2; p++)
                for (uint32_t l = 0; l < 2; l++)
                    emul_ntt(&f, l, e + p * cstride + (size_t)l * m, false, logn - lg);
            expect_same("emulated ntt_forward_compact", &ps, h, e, 2 * cstride);
        }
        ts_free(h);
        ts_free(e);
        fix_clear(&f);
    }
}
END_TEST

/* -------------------------------------------- emulation: the other ops */

/*
 * For each op: random batches, the CPU backend's result, and the emulated
 * launch (the kernel's per-thread function over every thread index) on copies.
 */
static void emul_ops_one(const pset_t *ps)
{
    fix_t f;
    fix_init(&f, ps);
    const uint32_t n = f.n, logn = f.logn, np = 2, nl = ps->nq;
    const size_t stride = (size_t)nl * n + 24;
    const size_t words = np * stride, bytes = words * sizeof(uint64_t);
    uint32_t idx[16];
    limb_map(&f, nl, 1, idx);
    uint64_t seed = 77 + logn;
    uint64_t *a = rand_batch(&f, np, nl, stride, idx, &seed);
    uint64_t *b = rand_batch(&f, np, nl, stride, idx, &seed);
    uint64_t *o = rand_batch(&f, np, nl, stride, idx, &seed);
    uint64_t *bp = ts_malloc(bytes), *oc = ts_malloc(bytes), *oe = ts_malloc(bytes);
    ck_assert(bp && oc && oe);
    memcpy(bp, b, bytes);
    for (uint32_t p = 0; p < np; p++)
        for (uint32_t l = 0; l < nl; l++)
            for (uint32_t i = 0; i < n; i++) {
                size_t w = p * stride + (size_t)l * n + i;
                bp[w] = ts_shoup_precompute(b[w], f.mods[idx[l]]);
            }
    ts_bk_batch_t A = {a, np, nl, stride, idx}, B = {b, np, nl, stride, idx};
    ts_bk_batch_t BP = {bp, np, nl, stride, idx};
    ts_bk_batch_t OC = {oc, np, nl, stride, idx};
    tsg_limbs_t lm = limbs_of(np, nl, idx);
    tsg_arg_t ga = {a, stride}, gb = {b, stride}, gbp = {bp, stride}, ge = {oe, stride};
    tsg_arg_t none = {NULL, 0};
    const size_t total = tsg_total(&lm, logn);

    static const int ops[] = {TSG_OP_ADD, TSG_OP_SUB,     TSG_OP_NEG,
                              TSG_OP_MUL, TSG_OP_MUL_ADD, TSG_OP_MUL_SHOUP};
    static const char *names[] = {"add", "sub", "neg", "mul", "mul_add", "mul_shoup"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        memcpy(oc, o, bytes);
        memcpy(oe, o, bytes);
        ts_status_t st = TS_EINVAL;
        switch (ops[k]) {
        case TSG_OP_ADD:
            st = ts_backend_add(f.cpu, f.cring, &OC, &A, &B);
            break;
        case TSG_OP_SUB:
            st = ts_backend_sub(f.cpu, f.cring, &OC, &A, &B);
            break;
        case TSG_OP_NEG:
            st = ts_backend_neg(f.cpu, f.cring, &OC, &A);
            break;
        case TSG_OP_MUL:
            st = ts_backend_mul(f.cpu, f.cring, &OC, &A, &B);
            break;
        case TSG_OP_MUL_ADD:
            st = ts_backend_mul_add(f.cpu, f.cring, &OC, &A, &B);
            break;
        case TSG_OP_MUL_SHOUP:
            st = ts_backend_mul_shoup(f.cpu, f.cring, &OC, &A, &B, &BP);
            break;
        }
        ck_assert_ts_ok(st);
        for (size_t t = 0; t < total; t++)
            tsg_ew_thread(ops[k], t, &lm, logn, ge, ga, ops[k] == TSG_OP_NEG ? none : gb,
                          ops[k] == TSG_OP_MUL_SHOUP ? gbp : none, f.rt.mods);
        expect_same(names[k], ps, oc, oe, words);
    }
    /* scalar ops */
    uint64_t s[16];
    tsg_scalars_t sc;
    memset(&sc, 0, sizeof sc);
    for (uint32_t l = 0; l < nl; l++) {
        s[l] = rng_next(&seed) % f.mods[idx[l]];
        sc.v[l] = s[l];
        sc.vp[l] = ts_shoup_precompute(s[l], f.mods[idx[l]]);
    }
    for (int k = 0; k < 2; k++) {
        memcpy(oc, o, bytes);
        memcpy(oe, o, bytes);
        ck_assert_ts_ok(k ? ts_backend_add_scalar(f.cpu, f.cring, &OC, &A, s)
                          : ts_backend_mul_scalar(f.cpu, f.cring, &OC, &A, s));
        for (size_t t = 0; t < total; t++)
            tsg_ew_scalar_thread(k ? TSG_OP_ADD_SCALAR : TSG_OP_MUL_SCALAR, t, &lm, logn, ge, ga,
                                 &sc, f.rt.mods);
        expect_same(k ? "add_scalar" : "mul_scalar", ps, oc, oe, words);
    }
    /* the fused scalar ops: out += a s (out's old words kept), out = (a - b) s */
    for (int k = 0; k < 2; k++) {
        memcpy(oc, o, bytes);
        memcpy(oe, o, bytes);
        ck_assert_ts_ok(k ? ts_backend_sub_mul_scalar(f.cpu, f.cring, &OC, &A, &B, s)
                          : f.cpu->iface->mul_scalar_add(f.cpu, f.cring, &OC, &A, s));
        for (size_t t = 0; t < total; t++)
            tsg_ew_scalar2_thread(k ? TSG_OP_SUB_MUL_SCALAR : TSG_OP_MUL_SCALAR_ADD, t, &lm, logn,
                                  ge, ga, k ? gb : none, &sc, f.rt.mods);
        expect_same(k ? "sub_mul_scalar" : "mul_scalar_add", ps, oc, oe, words);
    }
    /* automorphisms, both forms, several k (with k >= 2N to check the masking) */
    const uint64_t two_n = 2ull * n;
    uint64_t ks[] = {1, 5, 25 % two_n, two_n - 1, (5 * 5 * 5 * 5 * 5) % two_n + two_n, 3};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        for (int form = 0; form < 2; form++) {
            memcpy(oc, o, bytes);
            memcpy(oe, o, bytes);
            ck_assert_ts_ok(form ? ts_backend_automorphism_ntt(f.cpu, f.cring, &OC, &A, ks[ki])
                                 : ts_backend_automorphism_coeff(f.cpu, f.cring, &OC, &A, ks[ki]));
            for (size_t t = 0; t < total; t++)
                tsg_auto_thread(form, t, &lm, logn, ge, ga, ks[ki], f.rt.mods);
            expect_same(form ? "automorphism_ntt" : "automorphism_coeff", ps, oc, oe, words);
        }
    }
    /* key-switch inner product: nd digits over the nl limbs, a key over all
     * ring moduli, key_limb mapping out limb l to the key limb of its modulus */
    {
        const uint32_t nd = 3, nout = 2, kl = f.count;
        uint32_t kidx[16], key_limb[16];
        for (uint32_t l = 0; l < kl; l++)
            kidx[l] = (kl - 1 - l); /* reversed order */
        for (uint32_t l = 0; l < nl; l++)
            key_limb[l] = kl - 1 - idx[l];
        const size_t kstride = (size_t)kl * n + 8;
        uint64_t *dig = rand_batch(&f, nd, nl, stride, idx, &seed);
        uint64_t *key = rand_batch(&f, nd * nout, kl, kstride, kidx, &seed);
        ts_bk_batch_t D = {dig, nd, nl, stride, idx}, K = {key, nd * nout, kl, kstride, kidx};
        memcpy(oc, o, bytes);
        memcpy(oe, o, bytes);
        ck_assert_ts_ok(ts_backend_keyswitch_inner(f.cpu, f.cring, &OC, &D, &K, key_limb));
        tsg_limbs_t klm = limbs_of(nd * nout, nl, key_limb);
        tsg_limbs_t olm = limbs_of(nout, nl, idx);
        tsg_arg_t gd = {dig, stride}, gk = {key, kstride};
        for (size_t t = 0; t < tsg_total(&olm, logn); t++)
            tsg_ks_thread(t, &olm, logn, 0, ge, gd, nd, gk, &klm, f.rt.mods);
        expect_same("keyswitch_inner", ps, oc, oe, words);
        /* spread digits (keyswitch_inner_spread): N / gap words per limb */
        const uint32_t lgs[] = {1, 2, 5, logn - 1};
        for (size_t li = 0; li < sizeof lgs / sizeof lgs[0]; li++) {
            const uint32_t lg = lgs[li];
            if (lg >= logn || (li == 3 && lg <= 5))
                continue;
            const size_t w = n >> lg, sstride = (size_t)nl * w + 5;
            for (uint32_t d = 0; d < nd; d++)
                for (uint32_t l = 0; l < nl; l++)
                    for (size_t k = 0; k < w; k++)
                        dig[d * sstride + l * w + k] = rng_next(&seed) % f.mods[idx[l]];
            ts_bk_batch_t DS = {dig, nd, nl, sstride, idx};
            memcpy(oc, o, bytes);
            memcpy(oe, o, bytes);
            ck_assert_ts_ok(ts_backend_keyswitch_inner_spread(f.cpu, f.cring, &OC, &DS, &K,
                                                              key_limb, 1u << lg));
            tsg_arg_t gs = {dig, sstride};
            for (size_t t = 0; t < tsg_total(&olm, logn); t++)
                tsg_ks_thread(t, &olm, logn, lg, ge, gs, nd, gk, &klm, f.rt.mods);
            expect_same("keyswitch_inner_spread", ps, oc, oe, words);
            /* spread_expand of the first np spread polys into out */
            ts_bk_batch_t DE = {dig, np, nl, sstride, idx};
            memcpy(oc, o, bytes);
            memcpy(oe, o, bytes);
            ck_assert_ts_ok(ts_backend_spread_expand(f.cpu, f.cring, &OC, &DE, 1u << lg));
            for (size_t t = 0; t < total; t++)
                tsg_expand_thread(t, &lm, logn, lg, ge, gs);
            expect_same("spread_expand", ps, oc, oe, words);
        }
        /* set_i64 into one polynomial: signed words, extremes included */
        {
            int64_t *sv = ts_malloc(n * sizeof(int64_t));
            ck_assert_ptr_nonnull(sv);
            for (uint32_t i = 0; i < n; i++)
                sv[i] = i == 0   ? INT64_MAX
                        : i == 1 ? INT64_MIN + 1
                                 : (int64_t)rng_next(&seed) >> (i % 50);
            ts_bk_batch_t O1 = {oc, 1, nl, stride, idx};
            tsg_limbs_t lm1 = limbs_of(1, nl, idx);
            memcpy(oc, o, bytes);
            memcpy(oe, o, bytes);
            ck_assert_ts_ok(ts_backend_set_i64(f.cpu, f.cring, &O1, sv));
            for (size_t t = 0; t < tsg_total(&lm1, logn); t++)
                tsg_set_i64_thread(t, &lm1, logn, ge, sv, f.rt.mods);
            expect_same("set_i64", ps, oc, oe, words);
            ts_free(sv);
        }
        ts_free(dig);
        ts_free(key);
    }
    /* basis extension Q -> P and reduction (ModDown) by P */
    if (ps->np > 0) {
        uint32_t qi[16], pi[16];
        for (uint32_t l = 0; l < ps->nq; l++)
            qi[l] = l;
        for (uint32_t l = 0; l < ps->np; l++)
            pi[l] = ps->nq + l;
        ts_bk_conv_t *cqp = NULL, *cpq = NULL;
        ck_assert_ts_ok(f.cpu->iface->conv_new(f.cpu, f.cring, qi, ps->nq, pi, ps->np, &cqp));
        ck_assert_ts_ok(f.cpu->iface->conv_new(f.cpu, f.cring, pi, ps->np, qi, ps->nq, &cpq));
        ts_rns_conv_t *hqp, *hpq;
        uint64_t qm[16], pm[16];
        for (uint32_t l = 0; l < ps->nq; l++)
            qm[l] = f.mods[l];
        for (uint32_t l = 0; l < ps->np; l++)
            pm[l] = f.mods[ps->nq + l];
        ck_assert_ts_ok(ts_rns_conv_new(qm, ps->nq, pm, ps->np, &hqp));
        ck_assert_ts_ok(ts_rns_conv_new(pm, ps->np, qm, ps->nq, &hpq));
        uint64_t *bq = ts_malloc(tsg_conv_blob_words(ps->nq, ps->np) * 8);
        uint64_t *bpq = ts_malloc(tsg_conv_blob_words(ps->np, ps->nq) * 8);
        ck_assert(bq && bpq);
        tsg_conv_t vqp, vpq;
        tsg_conv_pack(hqp, bq, (uintptr_t)bq, &vqp);
        tsg_conv_pack(hpq, bpq, (uintptr_t)bpq, &vpq);
        const size_t sq = (size_t)ps->nq * n + 16, sp = (size_t)ps->np * n + 16;
        uint64_t *xq = rand_batch(&f, np, ps->nq, sq, qi, &seed);
        uint64_t *xp = rand_batch(&f, np, ps->np, sp, pi, &seed);
        uint64_t *outp_c = rand_batch(&f, np, ps->np, sp, pi, &seed);
        uint64_t *outp_e = ts_malloc(np * sp * 8), *outq_c = ts_malloc(np * sq * 8);
        uint64_t *outq_e = ts_malloc(np * sq * 8);
        ck_assert(outp_e && outq_c && outq_e);
        memcpy(outp_e, outp_c, np * sp * 8);
        uint64_t y[TS_RNS_MAX_MODULI];
        ts_bk_batch_t XQ = {xq, np, ps->nq, sq, qi}, XP = {xp, np, ps->np, sp, pi};
        ts_bk_batch_t OP = {outp_c, np, ps->np, sp, pi}, OQ = {outq_c, np, ps->nq, sq, qi};
        ck_assert_ts_ok(ts_backend_basis_extend(f.cpu, f.cring, cqp, &OP, &XQ));
        tsg_arg_t gxq = {xq, sq}, gxp = {xp, sp}, gop = {outp_e, sp}, goq = {outq_e, sq};
        for (uint32_t p = 0; p < np; p++)
            for (uint32_t i = 0; i < n; i++)
                tsg_conv_thread(&vqp, logn, p, i, gop, gxq, none, 0, y, 1);
        expect_same("basis_extend", ps, outp_c, outp_e, np * sp);
        ck_assert_ts_ok(ts_backend_basis_reduce(f.cpu, f.cring, cpq, &OQ, &XP, &XQ));
        for (uint32_t p = 0; p < np; p++)
            for (uint32_t i = 0; i < n; i++)
                tsg_conv_thread(&vpq, logn, p, i, goq, gxp, gxq, 1, y, 1);
        /* only the limbs are written (the padding of outq_c/outq_e is not) */
        for (uint32_t p = 0; p < np; p++)
            expect_same("basis_reduce", ps, outq_c + p * sq, outq_e + p * sq, (size_t)ps->nq * n);
        ts_free(xq);
        ts_free(xp);
        ts_free(outp_c);
        ts_free(outp_e);
        ts_free(outq_c);
        ts_free(outq_e);
        ts_free(bq);
        ts_free(bpq);
        ts_rns_conv_free(hqp);
        ts_rns_conv_free(hpq);
        f.cpu->iface->conv_free(f.cpu, cqp);
        f.cpu->iface->conv_free(f.cpu, cpq);
    }
    ts_free(a);
    ts_free(b);
    ts_free(o);
    ts_free(bp);
    ts_free(oc);
    ts_free(oe);
    fix_clear(&f);
}

START_TEST(test_emul_ops)
{
    for (size_t i = 0; i < NPSETS; i++) {
        if (psets[i].heavy && ts_test_quick())
            continue;
        emul_ops_one(&psets[i]);
    }
}
END_TEST

/* --------------------------------------------------------- device tests */

/* The GPU backend, or NULL after printing why the device tests are skipped. */
static ts_backend_t *gpu_or_skip(const char *test)
{
    char why[256] = "";
    ts_gpu_info_t info;
    ts_status_t st = ts_gpu_probe(&info, why, sizeof why);
    ts_backend_t *g = NULL;
    if (st == TS_OK)
        st = ts_gpu_backend_new(0, &g);
    if (st != TS_OK) {
        fprintf(stderr, "test_gpu_ops: %s: SKIPPED (no GPU: %s)\n", test,
                why[0] ? why : ts_strerror(st));
        return NULL;
    }
    return g;
}

/* A buffer on both backends holding the same words. */
typedef struct dbuf {
    uint64_t *c, *g;
    size_t words;
} dbuf_t;

static void dbuf_init(dbuf_t *d, ts_backend_t *cpu, ts_backend_t *gpu, const uint64_t *host,
                      size_t words)
{
    d->words = words;
    ck_assert_ts_ok(ts_backend_alloc(cpu, words * 8, (void **)&d->c));
    ck_assert_ts_ok(ts_backend_alloc(gpu, words * 8, (void **)&d->g));
    ck_assert_ts_ok(ts_backend_upload(cpu, d->c, host, words * 8));
    ck_assert_ts_ok(ts_backend_upload(gpu, d->g, host, words * 8));
}

static void dbuf_clear(dbuf_t *d, ts_backend_t *cpu, ts_backend_t *gpu)
{
    ts_backend_buf_free(cpu, d->c);
    ts_backend_buf_free(gpu, d->g);
}

/* Download both copies and compare every word. */
static void dbuf_expect_same(const char *what, const pset_t *ps, const dbuf_t *d, ts_backend_t *cpu,
                             ts_backend_t *gpu)
{
    uint64_t *hc = ts_malloc(d->words * 8), *hg = ts_malloc(d->words * 8);
    ck_assert(hc && hg);
    ck_assert_ts_ok(ts_backend_download(cpu, hc, d->c, d->words * 8));
    ck_assert_ts_ok(ts_backend_download(gpu, hg, d->g, d->words * 8));
    expect_same(what, ps, hc, hg, d->words);
    ts_free(hc);
    ts_free(hg);
}

static ts_bk_batch_t bat(uint64_t *data, uint32_t npolys, uint32_t nl, size_t stride,
                         const uint32_t *idx)
{
    ts_bk_batch_t b = {data, npolys, nl, stride, idx};
    return b;
}

static void device_ops_one(ts_backend_t *g, const pset_t *ps)
{
    fix_t f;
    fix_init(&f, ps);
    ts_backend_t *c = f.cpu;
    ts_bk_ring_t *rc = f.cring, *rg = NULL;
    ck_assert_ts_ok(g->iface->ring_new(g, f.n, f.mods, f.count, &rg));
    const uint32_t n = f.n, np = 3, nl = f.count;
    const size_t stride = (size_t)nl * n + 40, words = np * stride;
    uint32_t idx[16];
    limb_map(&f, nl, 2, idx);
    uint64_t seed = 1234 + f.logn;
    uint64_t *ha = rand_batch(&f, np, nl, stride, idx, &seed);
    uint64_t *hb = rand_batch(&f, np, nl, stride, idx, &seed);
    uint64_t *ho = rand_batch(&f, np, nl, stride, idx, &seed);
    uint64_t *hw = ts_malloc(words * 8);
    ck_assert_ptr_nonnull(hw);
    for (uint32_t p = 0; p < np; p++)
        for (uint32_t l = 0; l < nl; l++)
            for (uint32_t i = 0; i < n; i++) {
                size_t w = p * stride + (size_t)l * n + i;
                hw[w] = ts_shoup_precompute(hb[w], f.mods[idx[l]]);
            }
    dbuf_t A, B, O, W;
    dbuf_init(&A, c, g, ha, words);
    dbuf_init(&B, c, g, hb, words);
    dbuf_init(&O, c, g, ho, words);
    dbuf_init(&W, c, g, hw, words);
#define BOTH(expr_c, expr_g)                                                                       \
    do {                                                                                           \
        ck_assert_ts_ok(expr_c);                                                                   \
        ck_assert_ts_ok(expr_g);                                                                   \
    } while (0)
    ts_bk_batch_t ac = bat(A.c, np, nl, stride, idx), ag = bat(A.g, np, nl, stride, idx);
    ts_bk_batch_t bc = bat(B.c, np, nl, stride, idx), bg = bat(B.g, np, nl, stride, idx);
    ts_bk_batch_t oc = bat(O.c, np, nl, stride, idx), og = bat(O.g, np, nl, stride, idx);
    ts_bk_batch_t wc = bat(W.c, np, nl, stride, idx), wg = bat(W.g, np, nl, stride, idx);

    /* NTT round trip on A (both directions compared) */
    BOTH(ts_backend_ntt_forward(c, rc, &ac), ts_backend_ntt_forward(g, rg, &ag));
    dbuf_expect_same("ntt_forward", ps, &A, c, g);
    BOTH(ts_backend_ntt_inverse(c, rc, &ac), ts_backend_ntt_inverse(g, rg, &ag));
    dbuf_expect_same("ntt_inverse", ps, &A, c, g);
    {
        uint64_t *back = ts_malloc(words * 8);
        ck_assert_ts_ok(ts_backend_download(g, back, A.g, words * 8));
        expect_same("ntt round trip", ps, ha, back, words);
        ts_free(back);
    }
    BOTH(ts_backend_add(c, rc, &oc, &ac, &bc), ts_backend_add(g, rg, &og, &ag, &bg));
    dbuf_expect_same("add", ps, &O, c, g);
    BOTH(ts_backend_sub(c, rc, &oc, &ac, &bc), ts_backend_sub(g, rg, &og, &ag, &bg));
    dbuf_expect_same("sub", ps, &O, c, g);
    BOTH(ts_backend_neg(c, rc, &oc, &ac), ts_backend_neg(g, rg, &og, &ag));
    dbuf_expect_same("neg", ps, &O, c, g);
    BOTH(ts_backend_mul(c, rc, &oc, &ac, &bc), ts_backend_mul(g, rg, &og, &ag, &bg));
    dbuf_expect_same("mul", ps, &O, c, g);
    BOTH(ts_backend_mul_add(c, rc, &oc, &ac, &bc), ts_backend_mul_add(g, rg, &og, &ag, &bg));
    dbuf_expect_same("mul_add", ps, &O, c, g);
    BOTH(ts_backend_mul_shoup(c, rc, &oc, &ac, &bc, &wc),
         ts_backend_mul_shoup(g, rg, &og, &ag, &bg, &wg));
    dbuf_expect_same("mul_shoup", ps, &O, c, g);
    uint64_t s[16];
    for (uint32_t l = 0; l < nl; l++)
        s[l] = rng_next(&seed) % f.mods[idx[l]];
    BOTH(ts_backend_mul_scalar(c, rc, &oc, &ac, s), ts_backend_mul_scalar(g, rg, &og, &ag, s));
    dbuf_expect_same("mul_scalar", ps, &O, c, g);
    BOTH(ts_backend_add_scalar(c, rc, &oc, &ac, s), ts_backend_add_scalar(g, rg, &og, &ag, s));
    dbuf_expect_same("add_scalar", ps, &O, c, g);
    /* the fused ones, the GPU's own kernels (not the two-op fallback) */
    ck_assert_ptr_nonnull(g->iface->mul_scalar_add);
    ck_assert_ptr_nonnull(g->iface->sub_mul_scalar);
    BOTH(c->iface->mul_scalar_add(c, rc, &oc, &ac, s),
         g->iface->mul_scalar_add(g, rg, &og, &ag, s));
    dbuf_expect_same("mul_scalar_add", ps, &O, c, g);
    BOTH(ts_backend_sub_mul_scalar(c, rc, &oc, &ac, &bc, s),
         ts_backend_sub_mul_scalar(g, rg, &og, &ag, &bg, s));
    dbuf_expect_same("sub_mul_scalar", ps, &O, c, g);
    /* in place: out aliases a (the rescale's form) */
    BOTH(ts_backend_sub_mul_scalar(c, rc, &ac, &ac, &bc, s),
         ts_backend_sub_mul_scalar(g, rg, &ag, &ag, &bg, s));
    dbuf_expect_same("sub_mul_scalar in place", ps, &A, c, g);
    /* in place: out aliases a */
    BOTH(ts_backend_mul_add(c, rc, &ac, &ac, &bc), ts_backend_mul_add(g, rg, &ag, &ag, &bg));
    dbuf_expect_same("mul_add in place", ps, &A, c, g);
    BOTH(ts_backend_add(c, rc, &ac, &ac, &bc), ts_backend_add(g, rg, &ag, &ag, &bg));
    dbuf_expect_same("add in place", ps, &A, c, g);
    /* automorphisms */
    const uint64_t two_n = 2ull * n, kk[] = {5, 25 % two_n, two_n - 1, 3 + two_n};
    for (size_t ki = 0; ki < sizeof kk / sizeof kk[0]; ki++) {
        BOTH(ts_backend_automorphism_ntt(c, rc, &oc, &ac, kk[ki]),
             ts_backend_automorphism_ntt(g, rg, &og, &ag, kk[ki]));
        dbuf_expect_same("automorphism_ntt", ps, &O, c, g);
        BOTH(ts_backend_automorphism_coeff(c, rc, &oc, &ac, kk[ki]),
             ts_backend_automorphism_coeff(g, rg, &og, &ag, kk[ki]));
        dbuf_expect_same("automorphism_coeff", ps, &O, c, g);
    }
    /* the same rejections */
    ck_assert_ts_status(ts_backend_automorphism_ntt(g, rg, &og, &ag, 4), TS_EINVAL);
    ck_assert_ts_status(ts_backend_automorphism_ntt(g, rg, &ag, &ag, 5), TS_EINVAL);
    {
        uint32_t bad[16];
        memcpy(bad, idx, sizeof bad);
        bad[0] = f.count; /* out of range */
        ts_bk_batch_t badg = bat(A.g, np, nl, stride, bad);
        ck_assert_ts_status(ts_backend_add(g, rg, &og, &badg, &bg), TS_EINVAL);
    }
    /* key-switch inner product: digits over nq limbs (idx 0..nq-1), key over all */
    {
        const uint32_t nq = ps->nq, nd = 4, nout = 2;
        uint32_t qidx[16], kidx[16], key_limb[16];
        for (uint32_t l = 0; l < nq; l++)
            qidx[l] = l;
        for (uint32_t l = 0; l < nl; l++)
            kidx[l] = l;
        for (uint32_t l = 0; l < nq; l++)
            key_limb[l] = l;
        const size_t ds = (size_t)nq * n, ks = (size_t)nl * n + 8;
        uint64_t *hd = rand_batch(&f, nd, nq, ds, qidx, &seed);
        uint64_t *hk = rand_batch(&f, nd * nout, nl, ks, kidx, &seed);
        uint64_t *hz = rand_batch(&f, nout, nq, ds, qidx, &seed);
        dbuf_t D, K, Z;
        dbuf_init(&D, c, g, hd, nd * ds);
        dbuf_init(&K, c, g, hk, nd * nout * ks);
        dbuf_init(&Z, c, g, hz, nout * ds);
        ts_bk_batch_t dc = bat(D.c, nd, nq, ds, qidx), dg = bat(D.g, nd, nq, ds, qidx);
        ts_bk_batch_t kc = bat(K.c, nd * nout, nl, ks, kidx),
                      kg = bat(K.g, nd * nout, nl, ks, kidx);
        ts_bk_batch_t zc = bat(Z.c, nout, nq, ds, qidx), zg = bat(Z.g, nout, nq, ds, qidx);
        BOTH(ts_backend_keyswitch_inner(c, rc, &zc, &dc, &kc, key_limb),
             ts_backend_keyswitch_inner(g, rg, &zg, &dg, &kg, key_limb));
        dbuf_expect_same("keyswitch_inner", ps, &Z, c, g);
        /* spread digits and the compact NTT (the GPU's own, not a fallback):
         * N / gap words per limb, gap 2 .. N / 2 */
        ck_assert_ptr_nonnull(g->iface->keyswitch_inner_spread);
        ck_assert_ptr_nonnull(g->iface->ntt_forward_compact);
        ck_assert_ptr_nonnull(g->iface->spread_expand);
        ck_assert_ptr_nonnull(g->iface->set_i64);
        for (uint32_t lg = 1; lg < f.logn; lg += lg < 2 ? 1 : (f.logn - lg > 4 ? 4 : f.logn - lg)) {
            const uint32_t gap = 1u << lg;
            const size_t ss = (size_t)nq * (n / gap) + 3;
            uint64_t *hs = ts_malloc(nd * ss * 8);
            ck_assert_ptr_nonnull(hs);
            for (uint32_t d = 0; d < nd; d++)
                for (size_t w = 0; w < ss; w++) {
                    const size_t l = w / (n / gap);
                    hs[d * ss + w] = l < nq ? rng_next(&seed) % (4 * f.mods[qidx[l]]) : 7;
                }
            dbuf_t S;
            dbuf_init(&S, c, g, hs, nd * ss);
            ts_bk_batch_t sc = bat(S.c, nd, nq, ss, qidx), sg = bat(S.g, nd, nq, ss, qidx);
            BOTH(ts_backend_ntt_forward_compact(c, rc, &sc, gap),
                 ts_backend_ntt_forward_compact(g, rg, &sg, gap));
            dbuf_expect_same("ntt_forward_compact", ps, &S, c, g);
            BOTH(ts_backend_keyswitch_inner_spread(c, rc, &zc, &sc, &kc, key_limb, gap),
                 ts_backend_keyswitch_inner_spread(g, rg, &zg, &sg, &kg, key_limb, gap));
            dbuf_expect_same("keyswitch_inner_spread", ps, &Z, c, g);
            /* the first nout spread digits written out in full into Z */
            ts_bk_batch_t ec = bat(S.c, nout, nq, ss, qidx), eg = bat(S.g, nout, nq, ss, qidx);
            BOTH(ts_backend_spread_expand(c, rc, &zc, &ec, gap),
                 ts_backend_spread_expand(g, rg, &zg, &eg, gap));
            dbuf_expect_same("spread_expand", ps, &Z, c, g);
            ck_assert_ts_status(
                ts_backend_keyswitch_inner_spread(g, rg, &zg, &sg, &kg, key_limb, 1), TS_EINVAL);
            dbuf_clear(&S, c, g);
            ts_free(hs);
        }
        /* set_i64: A's first N words, read as signed, into Z's first poly */
        ts_bk_batch_t z1c = bat(Z.c, 1, nq, ds, qidx), z1g = bat(Z.g, 1, nq, ds, qidx);
        BOTH(ts_backend_set_i64(c, rc, &z1c, (const int64_t *)A.c),
             ts_backend_set_i64(g, rg, &z1g, (const int64_t *)A.g));
        dbuf_expect_same("set_i64", ps, &Z, c, g);
        /* 20 digits: the accumulator's periodic reduction */
        if (nd * 5 <= TSG_MAX_DIGITS) {
            const uint32_t nd2 = 20;
            uint64_t *hd2 = rand_batch(&f, nd2, nq, ds, qidx, &seed);
            uint64_t *hk2 = rand_batch(&f, nd2 * nout, nl, ks, kidx, &seed);
            dbuf_t D2, K2;
            dbuf_init(&D2, c, g, hd2, nd2 * ds);
            dbuf_init(&K2, c, g, hk2, nd2 * nout * ks);
            ts_bk_batch_t d2c = bat(D2.c, nd2, nq, ds, qidx), d2g = bat(D2.g, nd2, nq, ds, qidx);
            ts_bk_batch_t k2c = bat(K2.c, nd2 * nout, nl, ks, kidx),
                          k2g = bat(K2.g, nd2 * nout, nl, ks, kidx);
            BOTH(ts_backend_keyswitch_inner(c, rc, &zc, &d2c, &k2c, key_limb),
                 ts_backend_keyswitch_inner(g, rg, &zg, &d2g, &k2g, key_limb));
            dbuf_expect_same("keyswitch_inner (20 digits)", ps, &Z, c, g);
            dbuf_clear(&D2, c, g);
            dbuf_clear(&K2, c, g);
            ts_free(hd2);
            ts_free(hk2);
        }
        dbuf_clear(&D, c, g);
        dbuf_clear(&K, c, g);
        dbuf_clear(&Z, c, g);
        ts_free(hd);
        ts_free(hk);
        ts_free(hz);
    }
    /* basis extension Q -> P and ModDown by P */
    if (ps->np > 0) {
        uint32_t qi[16], pi[16];
        for (uint32_t l = 0; l < ps->nq; l++)
            qi[l] = l;
        for (uint32_t l = 0; l < ps->np; l++)
            pi[l] = ps->nq + l;
        ts_bk_conv_t *cqp_c, *cqp_g, *cpq_c, *cpq_g;
        ck_assert_ts_ok(c->iface->conv_new(c, rc, qi, ps->nq, pi, ps->np, &cqp_c));
        ck_assert_ts_ok(g->iface->conv_new(g, rg, qi, ps->nq, pi, ps->np, &cqp_g));
        ck_assert_ts_ok(c->iface->conv_new(c, rc, pi, ps->np, qi, ps->nq, &cpq_c));
        ck_assert_ts_ok(g->iface->conv_new(g, rg, pi, ps->np, qi, ps->nq, &cpq_g));
        const size_t sq = (size_t)ps->nq * n, sp = (size_t)ps->np * n + 8;
        uint64_t *hq = rand_batch(&f, np, ps->nq, sq, qi, &seed);
        uint64_t *hp = rand_batch(&f, np, ps->np, sp, pi, &seed);
        dbuf_t XQ, XP, OP;
        dbuf_init(&XQ, c, g, hq, np * sq);
        dbuf_init(&XP, c, g, hp, np * sp);
        dbuf_init(&OP, c, g, hp, np * sp);
        ts_bk_batch_t xqc = bat(XQ.c, np, ps->nq, sq, qi), xqg = bat(XQ.g, np, ps->nq, sq, qi);
        ts_bk_batch_t xpc = bat(XP.c, np, ps->np, sp, pi), xpg = bat(XP.g, np, ps->np, sp, pi);
        ts_bk_batch_t opc = bat(OP.c, np, ps->np, sp, pi), opg = bat(OP.g, np, ps->np, sp, pi);
        BOTH(ts_backend_basis_extend(c, rc, cqp_c, &opc, &xqc),
             ts_backend_basis_extend(g, rg, cqp_g, &opg, &xqg));
        dbuf_expect_same("basis_extend", ps, &OP, c, g);
        /* ModDown in place (out aliases x_b) */
        BOTH(ts_backend_basis_reduce(c, rc, cpq_c, &xqc, &xpc, &xqc),
             ts_backend_basis_reduce(g, rg, cpq_g, &xqg, &xpg, &xqg));
        dbuf_expect_same("basis_reduce", ps, &XQ, c, g);
        dbuf_clear(&XQ, c, g);
        dbuf_clear(&XP, c, g);
        dbuf_clear(&OP, c, g);
        ts_free(hq);
        ts_free(hp);
        c->iface->conv_free(c, cqp_c);
        c->iface->conv_free(c, cpq_c);
        g->iface->conv_free(g, cqp_g);
        g->iface->conv_free(g, cpq_g);
    }
#undef BOTH
    /* memory ops: copy (overlapping too), zero */
    ck_assert_ts_ok(ts_backend_copy(g, O.g, A.g, words * 8));
    ck_assert_ts_ok(ts_backend_copy(c, O.c, A.c, words * 8));
    ck_assert_ts_ok(ts_backend_copy(g, O.g + 3, O.g, (words - 3) * 8));
    ck_assert_ts_ok(ts_backend_copy(c, O.c + 3, O.c, (words - 3) * 8));
    dbuf_expect_same("copy", ps, &O, c, g);
    const size_t zw = words > 200 ? 100 : 1;
    ck_assert_ts_ok(ts_backend_zero(g, O.g + 5, zw * 8));
    ck_assert_ts_ok(ts_backend_zero(c, O.c + 5, zw * 8));
    dbuf_expect_same("zero", ps, &O, c, g);
    ck_assert_ts_ok(ts_backend_sync(g));
    ck_assert(ts_gpu_backend_healthy(g));
    dbuf_clear(&A, c, g);
    dbuf_clear(&B, c, g);
    dbuf_clear(&O, c, g);
    dbuf_clear(&W, c, g);
    ts_free(ha);
    ts_free(hb);
    ts_free(ho);
    ts_free(hw);
    g->iface->ring_free(g, rg);
    fix_clear(&f);
}

START_TEST(test_device_ops)
{
    ts_backend_t *g = gpu_or_skip("device_ops");
    if (!g)
        return;
    fprintf(stderr, "test_gpu_ops: comparing every backend op, CPU vs GPU, bit for bit\n");
    for (size_t i = 0; i < NPSETS; i++) {
        device_ops_one(g, &psets[i]);
        fprintf(stderr, "test_gpu_ops: %s: all ops bit-exact\n", psets[i].name);
    }
    ts_backend_free(g);
}
END_TEST

/* The ring layer on the GPU backend against the same ring on the CPU. */
START_TEST(test_device_ring)
{
    ts_backend_t *g = gpu_or_skip("device_ring");
    if (!g)
        return;
    const uint32_t n = 1u << 12;
    uint64_t q[4], p[1];
    ck_assert_ts_ok(ts_primes_ntt(50, 2 * n, 4, TS_PRIMES_DESCENDING, NULL, 0, q));
    ck_assert_ts_ok(ts_primes_ntt(55, 2 * n, 1, TS_PRIMES_ASCENDING, q, 4, p));
    ts_ring_params_t rp = {.n = n, .q = q, .q_count = 4, .p = p, .p_count = 1, .backend = NULL};
    ts_ring_t *rc, *rg;
    ck_assert_ts_ok(ts_ring_new(&rp, &rc));
    rp.backend = g;
    ck_assert_ts_ok(ts_ring_new(&rp, &rg));
    int64_t *coef = ts_malloc(n * sizeof(int64_t));
    uint64_t seed = 9;
    for (uint32_t i = 0; i < n; i++)
        coef[i] = (int64_t)(rng_next(&seed) % 2001) - 1000;
    ts_poly_t *ac, *ag, *bc, *bg, *oc, *og;
    ck_assert_ts_ok(ts_poly_new(rc, 4, 0, false, &ac));
    ck_assert_ts_ok(ts_poly_new(rg, 4, 0, false, &ag));
    ck_assert_ts_ok(ts_poly_new(rc, 4, 0, false, &bc));
    ck_assert_ts_ok(ts_poly_new(rg, 4, 0, false, &bg));
    ck_assert_ts_ok(ts_poly_new(rc, 4, 0, true, &oc));
    ck_assert_ts_ok(ts_poly_new(rg, 4, 0, true, &og));
    ck_assert_ts_ok(ts_poly_set_i64(ac, coef));
    ck_assert_ts_ok(ts_poly_set_i64(ag, coef));
    for (uint32_t i = 0; i < n; i++)
        coef[i] = (int64_t)(rng_next(&seed) % 7) - 3;
    ck_assert_ts_ok(ts_poly_set_i64(bc, coef));
    ck_assert_ts_ok(ts_poly_set_i64(bg, coef));
    ck_assert_ts_ok(ts_poly_ntt(ac));
    ck_assert_ts_ok(ts_poly_ntt(ag));
    ck_assert_ts_ok(ts_poly_ntt(bc));
    ck_assert_ts_ok(ts_poly_ntt(bg));
    ck_assert_ts_ok(ts_poly_mul(oc, ac, bc));
    ck_assert_ts_ok(ts_poly_mul(og, ag, bg));
    ck_assert_ts_ok(ts_poly_mul_add(oc, ac, ac));
    ck_assert_ts_ok(ts_poly_mul_add(og, ag, ag));
    ck_assert_ts_ok(ts_poly_automorphism(ac, oc, ts_ring_galois_rotate(rc, 3)));
    ck_assert_ts_ok(ts_poly_automorphism(ag, og, ts_ring_galois_rotate(rg, 3)));
    ck_assert_ts_ok(ts_poly_intt(ac));
    ck_assert_ts_ok(ts_poly_intt(ag));
    const size_t words = 4 * (size_t)n;
    uint64_t *hc = ts_malloc(words * 8), *hg = ts_malloc(words * 8);
    ck_assert_ts_ok(ts_poly_download(ac, hc));
    ck_assert_ts_ok(ts_poly_download(ag, hg));
    pset_t ps = {"ring n4096", 12, 4, 1, 50, 55, 0};
    expect_same("ring pipeline", &ps, hc, hg, words);
    ts_free(hc);
    ts_free(hg);
    ts_free(coef);
    ts_poly_free(ac);
    ts_poly_free(ag);
    ts_poly_free(bc);
    ts_poly_free(bg);
    ts_poly_free(oc);
    ts_poly_free(og);
    ts_ring_free(rc);
    ts_ring_free(rg);
    ck_assert(ts_gpu_backend_healthy(g));
    ts_backend_free(g);
}
END_TEST

/*
 * A device error marks the backend unhealthy: a copy to a bogus device
 * address fails (at the call or at the next synchronization) with
 * TS_EDEVICE, and from then on every entry point answers TS_EDEVICE without
 * touching the device. Such an error may poison the process's CUDA context,
 * so this runs only in a forked test process (the Check default).
 */
START_TEST(test_device_health)
{
    const char *fork = getenv("CK_FORK");
    if (fork && !strcmp(fork, "no")) {
        fprintf(stderr, "test_gpu_ops: device_health: SKIPPED (needs CK_FORK=yes)\n");
        return;
    }
    ts_backend_t *g = gpu_or_skip("device_health");
    if (!g)
        return;
    ck_assert(ts_gpu_backend_healthy(g));
    uint64_t host[64] = {0};
    ts_status_t st1 = ts_backend_upload(g, (void *)(uintptr_t)0x1000, host, sizeof host);
    ts_status_t st2 = ts_backend_sync(g);
    ck_assert_msg(st1 == TS_EDEVICE || st2 == TS_EDEVICE, "upload %s, sync %s", ts_status_name(st1),
                  ts_status_name(st2));
    ck_assert(!ts_gpu_backend_healthy(g));
    void *p = NULL;
    ck_assert_ts_status(ts_backend_alloc(g, 64, &p), TS_EDEVICE);
    ck_assert_ts_status(ts_backend_sync(g), TS_EDEVICE);
    uint64_t q;
    ck_assert_ts_ok(ts_primes_ntt(40, 2 * 1024, 1, TS_PRIMES_DESCENDING, NULL, 0, &q));
    ts_bk_ring_t *r = NULL;
    ck_assert_ts_status(g->iface->ring_new(g, 1024, &q, 1, &r), TS_EDEVICE);
    ts_backend_free(g);
}
END_TEST

/* Backend selection: cpu always works, auto always yields a backend, gpu
 * either works or says why; unknown names are refused. */
START_TEST(test_select)
{
    ts_backend_t *be = NULL;
    char why[256];
    ck_assert_ts_ok(ts_backend_select_why("cpu", &be, why, sizeof why));
    ck_assert_str_eq(be->iface->name, "cpu");
    ck_assert(!ts_backend_is_gpu(be));
    ts_backend_free(be);
    ck_assert(!ts_backend_is_gpu(NULL));
    ck_assert_ts_ok(ts_backend_select("auto", &be));
    ck_assert_ptr_nonnull(be);
    const bool got_gpu = strcmp(be->iface->name, "gpu") == 0;
    ts_backend_free(be);
    ck_assert_ts_ok(ts_backend_select(NULL, &be));
    ts_backend_free(be);
    ts_status_t st = ts_backend_select_why("gpu", &be, why, sizeof why);
    if (got_gpu) {
        ck_assert_ts_ok(st);
        ck_assert(ts_gpu_backend_healthy(be));
        ck_assert(ts_backend_is_gpu(be));
        ts_backend_free(be);
    } else {
        ck_assert_ts_status(st, TS_ENOGPU);
        ck_assert_ptr_null(be);
        ck_assert_msg(why[0] != '\0', "a refusal comes with a reason");
        fprintf(stderr, "test_gpu_ops: select(\"gpu\") refused as expected: %s\n", why);
    }
    ck_assert_ts_status(ts_backend_select_why("tpu", &be, why, sizeof why), TS_EINVAL);
    ck_assert_ptr_null(be);
    ck_assert(strstr(why, "tpu") != NULL);
    ck_assert(!ts_gpu_backend_healthy(NULL));
    ck_assert_ts_status(ts_backend_use_default("tpu"), TS_EINVAL);
}
END_TEST

TS_TEST_SUITE(gpu_ops)
{
    Suite *s = suite_create("gpu_ops");
    TCase *tc = ts_tcase("emulation", 0);
    tcase_add_test(tc, test_emul_arith);
    tcase_add_test(tc, test_emul_ntt);
    tcase_add_test(tc, test_emul_ops);
    suite_add_tcase(s, tc);
    tc = ts_tcase("device", 0);
    tcase_add_test(tc, test_device_ops);
    tcase_add_test(tc, test_device_ring);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_device_health);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * core/llm/enc_plan.c — the scheduler's view of the encrypted decode engine
 * (issue 10): the decode step of ts_llm_enc_step as a core/sched graph, one
 * operator per ciphertext operation whose level matters, in the engine's
 * order, with the engine's configuration (each primitive pinned where the
 * configuration evaluates it, the Chebyshev degrees, Newton and Goldschmidt
 * iterations, softmax rounds, conversion batches, values and LUT segments),
 * the levels its `need` calls ask for and the stage each is timed in. Every
 * builder function below mirrors the enc.c function of the same name; keep
 * them in step (tests/unit/test_llm_plan.c compares the counts the plan
 * predicts with those the engine executes).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/convert/convert.h"
#include "core/llm/llm_int.h"

typedef struct gb {
    uint64_t snap;      /* levels whose rescaling prime is far from the scale (enc.c snap) */
    uint64_t deep_next; /* deep_levels of the next operator added */
    bool periodic_next; /* the next operator's bootstraps refresh a period-pd value */
    uint64_t mask;      /* residual bootstraps (ts__llm_enc_shape_t resid_boot) */
    ts_sched_graph_t *g;
    const ts__llm_enc_shape_t *e;
    const ts_llm_enc_levels_t *lv;
    int pos, layer, stage;
    int prefill;       /* a prefill pass of that many lanes (TS_LLM_PLAN_PREFILL; 0: a step) */
    const char *where; /* name prefix: "L0.attn" */
    ts_status_t st;
    /* a pass after ordinary steps (TS_LLM_PLAN_AFTER_STEPS): each layer's
     * caches at the step's row level at most; a session's pass
     * (ts__llm_enc_pass_t): its K (cache_lv) and V (cache_lv_v) caches'
     * levels, TS_LLM_NO_CACHE where there is none (NULL: its own rows') */
    const int8_t *cache_lv, *cache_lv_v;
    bool cap_next; /* the next operator's result at most cap_lv_next */
    int cap_lv_next;
    uint8_t boot_rot_next;        /* the next operator's boot_rot */
    bool after_steps;             /* a pass after ordinary steps: its drops after bootstraps */
    const ts__llm_enc_pass_t *ps; /* a session's pass: its caches and drops (NULL: flags') */
    const uint8_t *refresh; /* per layer: the pass refreshes its K and V copies (NULL: none) */
    int kv_need;            /* the level the refresh keeps the scores above (enc.c kv_need) */
    int *q_id, *kc_id;      /* per layer (NULL: not kept): the queries, the K cache after the put */
} gb_t;

static int ilog2_ceil(int n)
{
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* An operator of one ciphertext and one implementation at the builder's place. */
static void op_init(const gb_t *b, ts_sched_op_t *op, ts_op_kind_t kind, const char *nm, int x,
                    int y)
{
    memset(op, 0, sizeof *op);
    op->kind = kind;
    snprintf(op->name, sizeof op->name, "%s.%s", b->where, nm);
    op->layer = b->layer;
    op->in[0] = x;
    op->in[1] = y;
    op->n_ct = 1;
    op->n_impl = 1;
}

/* Append one operator; returns its id (-1 after an error, which sticks).
 * cnt: adds, plaintext products, ciphertext products, rotations, rescales,
 * encodings; bsgs (NULL: none): a BSGS product's hoists, baby rotations,
 * diagonals, giant steps and ModDowns (ts_sched_impl_t). */
static int add_bsgs(gb_t *b, ts_op_kind_t kind, const char *nm, int x, int y, unsigned inplace,
                    int depth, int need, const double cnt[6], const double *bsgs)
{
    if (b->st != TS_OK)
        return -1;
    ts_sched_op_t op;
    op_init(b, &op, kind, nm, x, y);
    ts_sched_impl_t *im = &op.impl[0];
    snprintf(im->name, sizeof im->name, "%s", nm);
    im->depth = depth;
    im->n_add = cnt[0];
    im->n_pmul = cnt[1];
    im->n_cmul = cnt[2];
    im->n_rot = cnt[3];
    im->n_rescale = cnt[4];
    im->n_encode = cnt[5];
    if (bsgs) {
        im->n_hoist = bsgs[0];
        im->n_baby = bsgs[1];
        im->n_diag = bsgs[2];
        im->n_giant = bsgs[3];
        im->n_moddown = bsgs[4];
    }
    op.group = (uint8_t)b->stage;
    op.log_slots = (uint8_t)b->e->log_cs; /* its encodings' slots (the table prices them) */
    op.inplace = (uint8_t)inplace;
    op.need_level = need;
    op.deep_levels = b->deep_next;
    b->deep_next = 0;
    /* enc.c need_at / need2_at with pd: at the residual stream's bootstrapper's
     * slots; else the main bootstrapper's (the table prices them by slots) */
    if (b->periodic_next && b->e->period_log_slots > 0)
        op.boot_log_slots = (uint8_t)b->e->period_log_slots;
    else
        op.boot_log_slots = (uint8_t)b->e->boot_log_slots;
    b->periodic_next = false;
    op.boot_rot = b->boot_rot_next;
    b->boot_rot_next = 0;
    if (b->cap_next) {
        op.capped = true;
        op.level_cap = (uint8_t)(b->cap_lv_next < 0 ? 0 : b->cap_lv_next);
        b->cap_next = false;
    }
    int id = -1;
    b->st = ts_sched_graph_add_op(b->g, &op, NULL, 0, &id);
    return id;
}

static int add(gb_t *b, ts_op_kind_t kind, const char *nm, int x, int y, unsigned inplace,
               int depth, int need, const double cnt[6])
{
    return add_bsgs(b, kind, nm, x, y, inplace, depth, need, cnt, NULL);
}

#define BOTH   3u /* inplace: both inputs */
#define FIRST  1u
#define SECOND 2u

/* ciphertext products: mul_cc's snap spends a level where the prime is far from the scale */
static int prod(gb_t *b, ts_op_kind_t kind, const char *nm, int x, int y, unsigned inplace,
                int need)
{
    const double c[6] = {0, 0, 1, 0, 1, 0};
    b->deep_next = b->snap;
    return add(b, kind, nm, x, y, inplace, 1, need, c);
}

static int mul_cc(gb_t *b, const char *nm, int x, int y, unsigned inplace, int need)
{
    return prod(b, TS_OP_MUL_CC, nm, x, y, inplace, need);
}

/* mul_k (constant) and mul_buf (encoded vector: one encoding) */
static int mul_k(gb_t *b, const char *nm, int x, bool encode)
{
    const double c[6] = {0, 1, 0, 0, 1, encode ? 1 : 0};
    return add(b, TS_OP_MUL_CP, nm, x, TS_SCHED_NONE, FIRST, 1, 1, c);
}

static int add_cc(gb_t *b, const char *nm, int x, int y)
{
    const double c[6] = {1, 0, 0, 0, 0, 0};
    return add(b, TS_OP_ADD_CC, nm, x, y, BOTH, 0, 0, c);
}

static int add_k(gb_t *b, const char *nm, int x, bool encode)
{
    const double c[6] = {1, 0, 0, 0, 0, encode ? 1 : 0};
    return add(b, TS_OP_ADD_CP, nm, x, TS_SCHED_NONE, 0, 0, 0, c);
}

/* x += rot(x, r) for r = first, 2 first, ... while |r| < lim */
static int rot_sum(gb_t *b, const char *nm, int x, int first, int lim)
{
    int n = 0;
    for (long r = first; (r < 0 ? -r : r) < lim; r *= 2)
        n++;
    const double c[6] = {n, 0, 0, n, 0, 0};
    return add(b, TS_OP_SUM, nm, x, TS_SCHED_NONE, 0, 0, 0, c);
}

/* Double-hoisted BSGS matvec from period pin to pout (enc.c matvec): nd =
 * min(pin, pout) diagonals encoded and multiplied over Q_l P, n1 baby steps
 * (the decomposition of x and its n1 - 1 rotations; hoist false when an
 * earlier product of the same x made them: wq's for wk and wv, w1's for
 * w3), n2 = nd / n1 giant steps of which n2 - 1 rotate, one ModDown, one
 * rescale; a wide matrix (pout < pin) then sums its pin / pout blocks
 * (log2 rotations and additions). */
static int matvec(gb_t *b, const char *nm, int x, int pin, int pout, int need, bool hoist)
{
    int nd = pout < pin ? pout : pin, sums = 0;
    for (int r = nd; r < pin; r <<= 1)
        sums++;
    int n1 = 1;
    while (n1 * n1 < nd)
        n1 <<= 1;
    if (n1 > 64)
        n1 = 64;
    int n2 = nd / n1;
    const double c[6] = {sums, 0, 0, sums, 1, 0};
    const double bs[5] = {hoist ? 1 : 0, hoist ? n1 - 1 : 0, nd, n2 - 1, 1};
    int prev = b->stage;
    b->stage = TS_LLM_STAGE_MATVEC;
    int id = add_bsgs(b, TS_OP_MATVEC, nm, x, TS_SCHED_NONE, FIRST, 1, need, c, bs);
    b->stage = prev;
    return id;
}

/* matvec and, for GPT2, its bias (a plaintext addition, no level) */
static int matvec_b(gb_t *b, const char *nm, int x, int pin, int pout, int need, bool hoist)
{
    int id = matvec(b, nm, x, pin, pout, need, hoist);
    if (!b->e->gpt2)
        return id;
    int prev = b->stage;
    b->stage = TS_LLM_STAGE_MATVEC;
    id = add_k(b, "bias", id, true);
    b->stage = prev;
    return id;
}

/* A primitive evaluated where the configuration says: its Chebyshev series
 * (CKKS: depth = the affine map to [-1, 1] + Paterson-Stockmeyer depth;
 * the engine bootstraps x in place and retries when that does not fit) or
 * one TFHE evaluation of `values` values in `conv` conversions. */
static int prim(gb_t *b, ts_op_kind_t kind, const char *nm, int x, ts_llm_eval_t ev,
                const ts_nonlinear_spec_t *sp, const ts_nonlinear_approx_t *a, uint32_t values,
                uint32_t conv)
{
    if (b->st != TS_OK)
        return -1;
    ts_sched_op_t op;
    op_init(b, &op, kind, nm, x, TS_SCHED_NONE);
    op.n_values = values;
    op.range_lo = sp->lo;
    op.range_hi = sp->hi;
    op.tfhe_ok = true;
    ts_sched_impl_t *im = &op.impl[0];
    if (ev == TS_LLM_EVAL_CKKS) {
        const ts_nonlinear_cheb_t *cb = a ? ts_nonlinear_approx_cheb(a) : NULL;
        if (!cb) {
            b->st = TS_EINVAL;
            return -1;
        }
        int d = cb->degree;
        /* exp, 1/sqrt and SiLU (LLAMA) get their domain map folded into
         * the product before them (ts__llm_cheb_map): a series on [-1, 1],
         * with a scale correction where it starts at a deep level */
        bool folded = kind == TS_OP_EXP || kind == TS_OP_INVSQRT || kind == TS_OP_SILU;
        ts_nonlinear_cheb_t unit = ts__llm_cheb_unit(cb);
        bool affine = !folded && !(cb->lo == -1.0 && cb->hi == 1.0);
        int k = (int)ts_ckks_chebyshev_ps_k((size_t)d);
        int depth = ts__llm_cheb_levels(folded ? &unit : cb);
        double cm = (k - 1) + ilog2_ceil((d + k) / k) + (d + k - 1) / k;
        snprintf(im->name, sizeof im->name, "cheb%d", d);
        im->depth = depth;
        /* the leaves' terms c_i T_i: one fused constant multiply-add each
         * (ts__ckks_mul_const_add, priced as an addition), plus c_0 */
        im->n_add = d + 1;
        im->n_pmul = affine ? 1 : 0;
        im->n_cmul = cm;
        im->n_rescale = cm + 1 + (affine ? 1 : 0);
        op.pin = TS_SCHED_PIN_CKKS;
        op.need_level = depth;
        if (folded)
            op.deep_levels = b->snap;
        op.inplace = FIRST;
        op.group = TS_LLM_STAGE_NONLINEAR;
    } else {
        snprintf(im->name, sizeof im->name, "-");
        op.pin = TS_SCHED_PIN_TFHE;
        op.tfhe_in_level = b->lv->tfhe_in;
        op.tfhe_out_level = b->lv->tfhe_out;
        op.n_conv = conv;
        op.lut_seg = ev == TS_LLM_EVAL_PBS ? TS_SCHED_LUT_PBS : sp->n_seg;
        op.group = TS_LLM_STAGE_CONVERT;
    }
    int id = -1;
    b->st = ts_sched_graph_add_op(b->g, &op, NULL, 0, &id);
    return id;
}

/* ------------------------------------------------ mirrors of enc.c */

static int rsqrt(gb_t *b, int x)
{
    const ts__llm_enc_shape_t *e = b->e;
    int y =
        prim(b, TS_OP_INVSQRT, "invsqrt", x, TS_LLM_EVAL_CKKS, &e->cfg->rsqrt, e->a_rsqrt, 1, 1);
    for (int i = 0; i < e->cfg->rsqrt.steps; i++) {
        const double c0[6] = {0, 0, 0, 0, 0, 0};
        int xh = mul_k(b, "invsqrt.xh", x, false); /* -bk x = (-bk t + bk be) / al, every step */
        xh = add_k(b, "invsqrt.xh.map", xh, false);
        add(b, TS_OP_SUM, "newton.need", y, xh, BOTH, 0, 2, c0); /* need2(y, xh, 2) */
        int y2 = mul_cc(b, "newton.y2", y, y, BOTH, 1);
        int a = mul_cc(b, "newton.xy", xh, y, FIRST, 1);
        a = mul_cc(b, "newton.xy3", a, y2, BOTH, 1);
        int y15 = mul_k(b, "newton.ay", y, false);
        y = add_cc(b, "newton.sum", a, y15);
    }
    return y;
}

/* Goldschmidt division num / den (enc.c divide); the operator a = den c
 * carries the primitive (kind INV); lanes_num: each lane's 1 / (pos_l + 1)
 * on num after their need (encoded); mean: the step's first round (pre =
 * 1 / n). SCALED: pre num and pre den (over a lanes engine's blocks) are
 * constant products above the guess's level, priced wherever the engine may
 * run them (a lanes engine's den: only after the pair's bootstrap) */
static int divide(gb_t *b, const char *nm, const ts_nonlinear_spec_t *sp,
                  const ts_nonlinear_approx_t *ap, bool lanes_num, bool mean, int num, int den)
{
    const double c[6] = {0, 1, 0, 0, 1, 0};
    const double c0[6] = {0, 0, 0, 0, 0, 0};
    if (b->st != TS_OK)
        return -1;
    int a = -1, bb = -1;
    if (sp->iter == TS_NL_ITER_SCALED) {
        /* the guess g(den) (its Chebyshev series), then a = den g, b = num g */
        const ts_nonlinear_cheb_t *g = ap ? ts_nonlinear_approx_cheb(ap) : NULL;
        if (!g) {
            b->st = TS_EINVAL;
            return -1;
        }
        /* a lanes engine averages den over its position blocks after their
         * bootstrap: log2(slots / pd) rotations */
        if (b->e->log_cs > ilog2_ceil(b->e->slots))
            b->boot_rot_next = (uint8_t)ilog2_ceil(b->e->slots / b->e->pd);
        /* and num over its heads' replicas (enc.c head_average, in the
         * plaintext product of its constant): 2 log2(hd) rotations; the
         * product priced in every round (the engine runs it in a later
         * round only after the bootstrap; num stays above the guess's
         * level either way) */
        b->boot_rot_next = (uint8_t)(b->boot_rot_next + 2 * ilog2_ceil(b->e->hd));
        add(b, TS_OP_SUM, "goldschmidt.need", den, num, BOTH, 0, ts__llm_cheb_levels(g) + 1, c0);
        int gi = prim(b, TS_OP_INV, nm, den, TS_LLM_EVAL_CKKS, sp, ap, (uint32_t)b->e->nh, 1);
        num = mul_k(b, "goldschmidt.num.pre", num, true);
        if (mean || b->e->log_cs > ilog2_ceil(b->e->slots))
            den = mul_k(b, "goldschmidt.den.pre", den, false);
        a = mul_cc(b, "goldschmidt.a", den, gi, BOTH, 1);
        bb = mul_cc(b, "goldschmidt.b", num, gi, BOTH, 1);
        goto steps;
    }
    /* need2(den, num, 1): one pair bootstrap when low */
    add(b, TS_OP_SUM, "goldschmidt.need", den, num, BOTH, 0, 1, c0);
    ts_sched_op_t op;
    memset(&op, 0, sizeof op);
    op.kind = TS_OP_INV;
    snprintf(op.name, sizeof op.name, "%s.%s", b->where, nm);
    op.layer = b->layer;
    op.in[0] = den;
    op.in[1] = TS_SCHED_NONE;
    op.n_ct = 1;
    op.n_impl = 1;
    op.n_values = (uint32_t)b->e->nh;
    op.range_lo = sp->lo;
    op.range_hi = sp->hi;
    op.tfhe_ok = true;
    snprintf(op.impl[0].name, sizeof op.impl[0].name, "goldschmidt-%d", sp->steps);
    op.impl[0].depth = 1;
    op.impl[0].n_pmul = c[1];
    op.impl[0].n_rescale = c[4];
    op.pin = TS_SCHED_PIN_CKKS;
    op.inplace = FIRST;
    op.need_level = 1;
    op.group = TS_LLM_STAGE_NONLINEAR;
    b->st = ts_sched_graph_add_op(b->g, &op, NULL, 0, &a);
    bb = mul_k(b, "goldschmidt.b", num, lanes_num);
steps:
    for (int i = 0; i < sp->steps; i++) {
        add(b, TS_OP_SUM, "goldschmidt.need", a, bb, BOTH, 0, 1, c0);
        int f = add_k(b, "goldschmidt.f", a, false);
        bb = mul_cc(b, "goldschmidt.b", bb, f, FIRST, 1);
        if (i + 1 < sp->steps)
            a = mul_cc(b, "goldschmidt.a", a, f, BOTH, 1);
    }
    return bb;
}

/* The norm of x (enc.c norm). defer (the step's RMSNorm deferred,
 * ts__llm_enc_shape_t norm_defer): the factor r = 1 / sqrt(mean(x^2) + eps)
 * alone, which the products that read the norm multiply into their outputs
 * (enc.c scale_out); else the normalized x. */
static int rmsnorm(gb_t *b, const char *where, int x, bool defer)
{
    const ts__llm_enc_shape_t *e = b->e;
    b->where = where;
    int prev = b->stage;
    b->stage = TS_LLM_STAGE_NONLINEAR;
    int xc = x, sq;
    /* the step's residual stream carries ks (enc.c struct ts_llm_enc): the
     * sum of squares is the (mapped) mean, no constant product */
    if (e->gpt2) {
        /* LayerNorm: need(x, 3) in place; the mean of a copy, subtracted from
         * another copy (align drops the copy) */
        const double c[6] = {0, 0, 0, 0, 0, 0};
        b->periodic_next = true; /* the stream */
        int m = add(b, TS_OP_SUM, "center.need", x, TS_SCHED_NONE, FIRST, 0, 3, c);
        m = rot_sum(b, "center.sum", m, 1, e->pd);
        m = mul_k(b, "center.mean", m, true);
        xc = add(b, TS_OP_ADD_CC, "center.sub", x, m, SECOND, 0, 0, c);
        sq = mul_cc(b, "square", xc, xc, BOTH, 1);
    } else {
        b->periodic_next = true;                 /* the stream */
        sq = mul_cc(b, "square", x, x, BOTH, 2); /* need(x, 2) in place */
    }
    sq = rot_sum(b, "sum", sq, 1, e->pd);
    sq = add_k(b, "eps", sq, false);
    int r;
    if (e->cfg->eval_rsqrt == TS_LLM_EVAL_CKKS) {
        r = rsqrt(b, sq);
    } else {
        r = prim(b, TS_OP_INVSQRT, "invsqrt", sq, e->cfg->eval_rsqrt, &e->cfg->rsqrt, NULL, 1, 1);
        r = rot_sum(b, "spread", r, -1, e->pd);
        r = rot_sum(b, "spread_blocks", r, -e->pd, e->slots);
    }
    if (defer) {
        b->stage = prev;
        return r;
    }
    /* unit gain (folded into the following matrices); LLAMA: the engine
     * multiplies a copy of x, which keeps its level */
    int out = mul_cc(b, "normalize", xc, r, e->gpt2 ? BOTH : SECOND, 1);
    b->stage = prev;
    return out;
}

/* A deferred norm's operand (enc.c norm_in): r (in place) with at least
 * out + 1 levels, then a copy of the stream x dropped to r's level + 1 and
 * made to hold out + 2, so that (W x) r lands at out or more */
static int norm_in(gb_t *b, int x, int r, int out)
{
    const double c0[6] = {0, 0, 0, 0, 0, 0};
    if (b->st != TS_OK)
        return -1;
    int prev = b->stage;
    b->stage = TS_LLM_STAGE_NONLINEAR;
    b->periodic_next = true; /* r: the same value in every slot */
    add(b, TS_OP_SUM, "norm.need", r, TS_SCHED_NONE, FIRST, 0, out + 1, c0);
    ts_sched_op_t op;
    op_init(b, &op, TS_OP_SUM, "norm.in", x, r);
    snprintf(op.impl[0].name, sizeof op.impl[0].name, "drop");
    op.group = (uint8_t)b->stage;
    op.drop_above = 1;
    int id = -1;
    b->st = ts_sched_graph_add_op(b->g, &op, NULL, 0, &id);
    if (b->st != TS_OK)
        return -1;
    b->periodic_next = true; /* the stream's copy */
    id = add(b, TS_OP_SUM, "norm.in.need", id, TS_SCHED_NONE, FIRST, 0, out + 2, c0);
    b->stage = prev;
    return id;
}

/* move x (zero outside its first block) into the cache: popcount(pos)
 * rotations, add (no level); a pass's rows shared across its lanes, and
 * after ordinary steps (cache_lv, passes only) the cache they join sits at
 * those steps' row level at most */
static int cache_put(gb_t *b, const char *nm, int x, bool v)
{
    int rots = 0;
    for (int bit = 0; (1 << bit) <= b->pos; bit++)
        rots += (b->pos >> bit) & 1;
    const double c[6] = {b->pos > 0 ? 1 : 0, 0, 0, rots, 0, 0};
    int id = add(b, TS_OP_SUM, nm, x, TS_SCHED_NONE, 0, 0, 0, c);
    if (!b->prefill)
        return id;
    /* lane_share: need(x, 1), log2 L rotations and additions each way, one
     * mask encoded and multiplied, one rescale */
    int lg = 0;
    while ((1 << lg) < b->prefill)
        lg++;
    const double cs[6] = {2 * lg, 1, 0, 2 * lg, 1, 1};
    char sn[40];
    snprintf(sn, sizeof sn, "%s.lane_share", nm);
    const int8_t *cl = v ? b->cache_lv_v : b->cache_lv;
    b->cap_next = cl && b->layer >= 0 && cl[b->layer] != TS_LLM_NO_CACHE;
    b->cap_lv_next = b->cap_next ? cl[b->layer] : 0;
    return add(b, TS_OP_MUL_CP, sn, id, TS_SCHED_NONE, FIRST, 1, 1, cs);
}

/* kv_only: enc.c attention with out NULL (the cache-only step's last layer):
 * wk makes the baby rotations wq would have made, then k and v into the cache */
static int attention(gb_t *b, int xb, int r, bool kv_only)
{
    const ts__llm_enc_shape_t *e = b->e;
    const ts_llm_enc_config_t *cfg = e->cfg;
    int k = cfg->softmax_k;
    b->stage = TS_LLM_STAGE_ATTENTION;
    b->periodic_next = true; /* the norm's output */
    /* need(xb, 3) in place; a prefill's at an ordinary step's row level plus
     * wk's and lane_share's levels (at most a bootstrap's; all of them when
     * the step's rows are unknown), so its shared rows reach the cache at a
     * step's level */
    int xb_need = 3;
    if (b->prefill && b->lv->boot) {
        int want = e->row_lv ? e->row_lv[b->layer] + 2 : b->lv->input;
        xb_need = want < 3 ? 3 : want > b->lv->input ? b->lv->input : want;
    }
    if (r >= 0) {
        /* deferred (xb: the stream): the outputs land where the normalized
         * input's would, xb_need - 1 (at most a bootstrap's levels - 2) */
        int out = xb_need - 1;
        if (b->lv->boot && out > b->lv->input - 2)
            out = b->lv->input - 2;
        xb = norm_in(b, xb, r, out);
        xb_need = 1;
        b->periodic_next = true; /* enc.c need_at(xb, 1, pd) */
    }
    int q = kv_only ? -1 : matvec_b(b, "wq", xb, e->pd, e->pd, xb_need, true);
    int kk = matvec_b(b, "wk", xb, e->pd, e->pd, kv_only ? xb_need : 1, kv_only);
    int v = matvec_b(b, "wv", xb, e->pd, e->pd, 1, false);
    if (r >= 0) {
        /* the deferred norm's factor (enc.c scale_out) */
        if (!kv_only)
            q = mul_cc(b, "wq.norm", q, r, BOTH, 1);
        kk = mul_cc(b, "wk.norm", kk, r, BOTH, 1);
        v = mul_cc(b, "wv.norm", v, r, BOTH, 1);
    }
    /* RoPE folded into wq and wk, the cache mask into wk and wv (enc.c mv_fold_t) */
    int kc = cache_put(b, "cache_k", kk, false);
    int vc = cache_put(b, "cache_v", v, true);
    if (kv_only)
        return vc;
    if (b->q_id) {
        b->q_id[b->layer] = q;
        b->kc_id[b->layer] = kc;
    }
    if (b->refresh && b->refresh[b->layer]) {
        /* enc.c attention's K/V refresh: both caches as one pair bootstrap,
         * in place (the graph's cache values are read only here) */
        const double c0[6] = {0, 0, 0, 0, 0, 0};
        kc = add(b, TS_OP_SUM, "kv_refresh", kc, vc, BOTH, 0, b->kv_need + 1, c0);
    }
    /* z = copy(K cache) * q: the copy may be bootstrapped (the cache only by a refresh) */
    int z = prod(b, TS_OP_ATTN_QK, "scores", kc, q, SECOND, 1);
    z = rot_sum(b, "scores.sum", z, 1, e->hd);
    int zm = -1;
    if (cfg->softmax_center) {
        /* need(z, 1) in place; the mean from a copy: block sums, mask / n */
        const double c0[6] = {0, 0, 0, 0, 0, 0};
        z = add(b, TS_OP_SUM, "scores.need", z, TS_SCHED_NONE, FIRST, 0, 1, c0);
        zm = rot_sum(b, "scores.mean", z, e->pd, e->slots);
        zm = mul_k(b, "scores.mean.scale", zm, true);
    }
    z = mul_k(b, "scores.scale", z, true);
    if (cfg->softmax_center)
        z = add_cc(b, "scores.center", z, zm);
    z = rot_sum(b, "scores.spread", z, -1, e->hd);
    int y;
    if (cfg->eval_exp != TS_LLM_EVAL_CKKS) {
        int per = b->lv->sub / e->pd, nt = b->pos + 1;
        if (per < 1) {
            b->st = TS_ENOTSUP;
            return -1;
        }
        y = prim(b, TS_OP_EXP, "softmax.exp", z, cfg->eval_exp, &cfg->exp, NULL,
                 (uint32_t)(nt * e->nh), (uint32_t)((nt + per - 1) / per));
        y = rot_sum(b, "softmax.exp.spread", y, -1, e->hd);
    } else {
        z = add_k(b, "softmax.exp.map", z, false); /* + be: the map's scale is in scores.scale */
        y = prim(b, TS_OP_EXP, "softmax.exp", z, TS_LLM_EVAL_CKKS, &cfg->exp, e->a_exp,
                 (uint32_t)((b->pos + 1) * e->nh), 1);
        y = add_k(b, "softmax.exp.mask", y, true);
    }
    for (int round = 0; round < (k > 0 ? k : 1); round++) {
        char nm[40];
        int sq = y;
        if (k > 0) {
            snprintf(nm, sizeof nm, "softmax.step%d.square", round);
            sq = mul_cc(b, nm, y, y, SECOND, 1); /* need(copy of y), then need(y) */
        }
        snprintf(nm, sizeof nm, "softmax.step%d.sum", round);
        int sum = rot_sum(b, nm, sq, e->pd, e->slots);
        bool first = round == 0, last = !first && round == k - 1;
        ts_llm_eval_t where = first  ? cfg->eval_recip
                              : last ? cfg->eval_recip_last
                                     : cfg->eval_recip_norm;
        const ts_nonlinear_spec_t *rsp = first  ? &cfg->recip
                                         : last ? &cfg->recip_last
                                                : &cfg->recip_norm;
        snprintf(nm, sizeof nm, "softmax.step%d.inv", round);
        int r;
        bool mean = first && ts_llm_enc_config_mean_first(cfg);
        if (where == TS_LLM_EVAL_CKKS) {
            int prev = b->stage;
            b->stage = TS_LLM_STAGE_NONLINEAR;
            const ts_nonlinear_approx_t *ap = first  ? e->a_recip
                                              : last ? e->a_recip_last
                                                     : e->a_recip_norm;
            /* a pass: each lane's 1 / (pos_l + 1) on the sum (encoded), on
             * sq in divide */
            bool lanes = mean && b->prefill;
            if (lanes)
                sum = mul_k(b, "softmax.mean.lanes", sum, true);
            y = divide(b, nm, rsp, ap, lanes, mean && !lanes, sq, sum);
            b->stage = prev;
            continue;
        }
        if (mean)
            sum = mul_k(b, "softmax.mean", sum, false);
        r = prim(b, TS_OP_INV, nm, sum, where, rsp, NULL, (uint32_t)e->nh, 1);
        r = rot_sum(b, "softmax.inv.spread", r, -1, e->hd);
        r = rot_sum(b, "softmax.inv.spread_blocks", r, -e->pd, e->slots);
        if (mean)
            r = mul_k(b, "softmax.mean.undo", r, false);
        snprintf(nm, sizeof nm, "softmax.step%d.mul", round);
        y = mul_cc(b, nm, sq, r, BOTH, 1);
    }
    int o = prod(b, TS_OP_ATTN_PV, "attn_v", y, vc, FIRST, 1);
    return rot_sum(b, "attn_v.sum", o, e->pd, e->slots);
}

static int ffn(gb_t *b, int xb, int r)
{
    const ts__llm_enc_shape_t *e = b->e;
    b->stage = TS_LLM_STAGE_OTHER;
    if (r >= 0)
        xb = norm_in(b, xb, r, 1); /* deferred (xb: the stream) */
    b->periodic_next = true;       /* the norm's output */
    /* need(xb, 2) in place (deferred: norm_in made it) */
    int h1 = matvec_b(b, "w1", xb, e->pd, e->ph, r >= 0 ? 1 : 2, true);
    int g;
    if (e->gpt2) { /* w2 gelu(w1 x + b1) + b2 */
        ts_llm_eval_t ev = e->cfg->eval_gelu;
        g = prim(b, TS_OP_GELU, "gelu", h1, ev, &e->cfg->gelu,
                 ev == TS_LLM_EVAL_CKKS ? e->a_gelu : NULL, (uint32_t)e->hid, 1);
        if (ev != TS_LLM_EVAL_CKKS)
            g = rot_sum(b, "gelu.spread", g, -e->ph, e->slots);
        return matvec_b(b, "w2", g, e->ph, e->pd, 1, true);
    }
    int h3 = matvec(b, "w3", xb, e->pd, e->ph, 1, false);
    if (r >= 0) {
        h1 = mul_cc(b, "w1.norm", h1, r, BOTH, 1);
        h3 = mul_cc(b, "w3.norm", h3, r, BOTH, 1);
    }
    if (e->cfg->eval_silu == TS_LLM_EVAL_CKKS)
        h1 = add_k(b, "silu.map", h1, false); /* + be: the map's scale is in w1 */
    if (e->cfg->eval_silu == TS_LLM_EVAL_CKKS) {
        /* need2(h1, h3, the series' depth): h3 rides along when h1 is bootstrapped */
        const double c0[6] = {0, 0, 0, 0, 0, 0};
        const ts_nonlinear_cheb_t *cb = ts_nonlinear_approx_cheb(e->a_silu);
        ts_nonlinear_cheb_t unit = cb ? ts__llm_cheb_unit(cb) : (ts_nonlinear_cheb_t){0};
        add(b, TS_OP_SUM, "silu.need", h1, h3, BOTH, 0, cb ? ts__llm_cheb_levels(&unit) : 1, c0);
        g = prim(b, TS_OP_SILU, "silu", h1, TS_LLM_EVAL_CKKS, &e->cfg->silu, e->a_silu,
                 (uint32_t)e->hid, 1);
    } else {
        g = prim(b, TS_OP_SILU, "silu", h1, e->cfg->eval_silu, &e->cfg->silu, NULL,
                 (uint32_t)e->hid, 1);
        g = rot_sum(b, "silu.spread", g, -e->ph, e->slots);
    }
    g = mul_cc(b, "glu", g, h3, BOTH, 1);
    return matvec(b, "w2", g, e->ph, e->pd, 1, true);
}

/* xx + o; where the shape's resid_boot bit is set, both bootstrapped first
 * (enc.c resid: need2 at the bootstrap's level) */
static int resid(gb_t *b, int bit, int xx, int o)
{
    if (!b->lv->boot || bit >= 64 || !((b->mask >> bit) & 1u))
        return add_cc(b, "resid", xx, o);
    const double c[6] = {1, 0, 0, 0, 0, 0};
    b->periodic_next = true; /* enc.c resid: need2_pd */
    return add(b, TS_OP_ADD_CC, "resid.boot", xx, o, BOTH, 0, b->lv->input, c);
}

static ts_status_t build_step(gb_t *b, unsigned flags)
{
    const ts__llm_enc_shape_t *e = b->e;
    const bool defer = (b->prefill ? e->norm_defer_pass : e->norm_defer) && !e->gpt2;
    int xx = TS_SCHED_FRESH;
    if (flags & TS_LLM_PLAN_ONEHOT) {
        /* ts_llm_enc_embed: E^T onehot on a copy of the client's one-hot vector */
        b->where = "embed";
        b->layer = -1;
        xx = matvec(b, "onehot", xx, e->pv, e->pd, 1, true);
    } else if (b->lv->boot) {
        /* ts_llm_enc_step: a client-encrypted embedding drops to the
         * one-hot product's level (no cost) */
        const double c[6] = {0, 0, 0, 0, 0, 0};
        b->where = "embed";
        b->layer = -1;
        xx = add(b, TS_OP_ADD_CP, "align", xx, TS_SCHED_NONE, FIRST, 1, 1, c);
    }
    char where[24];
    if (e->gpt2) { /* the learned position row */
        b->where = "embed";
        xx = add_k(b, "pos_emb", xx, true);
    }
    for (int l = 0; l < e->nl && b->st == TS_OK; l++) {
        b->layer = l;
        snprintf(where, sizeof where, "L%d.attn_norm", l);
        b->stage = TS_LLM_STAGE_OTHER;
        int xb = rmsnorm(b, where, xx, defer), r = -1;
        snprintf(where, sizeof where, "L%d.attn", l);
        b->where = where;
        if (defer) {
            r = xb; /* the factor; attention's norm_in copies the stream */
            xb = xx;
        }
        bool kv_only = (flags & TS_LLM_PLAN_CACHE_ONLY) && l == e->nl - 1;
        int o = attention(b, xb, r, kv_only);
        if (kv_only)
            return b->st; /* ts_llm_enc_step_cache: no FFN, final norm or LM head */
        b->stage = TS_LLM_STAGE_OTHER;
        o = matvec_b(b, "wo", o, e->pd, e->pd, 1, true);
        xx = resid(b, 2 * l, xx, o);
        snprintf(where, sizeof where, "L%d.ffn_norm", l);
        xb = rmsnorm(b, where, xx, defer);
        snprintf(where, sizeof where, "L%d.ffn", l);
        b->where = where;
        if (defer) {
            r = xb; /* ffn's norm_in copies the stream */
            xb = xx;
        }
        o = ffn(b, xb, r);
        b->stage = TS_LLM_STAGE_OTHER;
        xx = resid(b, 2 * l + 1, xx, o);
    }
    b->layer = -1;
    b->stage = TS_LLM_STAGE_OTHER;
    int xb = rmsnorm(b, "final_norm", xx, defer);
    b->where = "head";
    if (!defer) {
        matvec_b(b, "lm_head", xb, e->pd, e->pv, 1, true);
        return b->st;
    }
    int h = matvec(b, "lm_head", norm_in(b, xx, xb, 0), e->pd, e->pv, 1, true);
    mul_cc(b, "lm_head.norm", h, xb, BOTH, 1);
    return b->st;
}

/* ------------------------------------------------------------ public */

ts_status_t ts_llm_enc_levels(const ts_llm_enc_t *enc, ts_llm_enc_levels_t *out)
{
    if (!enc || !out)
        return TS_EINVAL;
    memset(out, 0, sizeof(*out));
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    ts_boot_config_t bc;
    int left = -1;
    if (e.boot) {
        out->input = ts_boot_levels_left(e.boot);
        out->boot = true;
    } else if (ts__llm_enc_boot_config(enc, &bc) == TS_OK &&
               ts_boot_depth(e.params, &bc, NULL, NULL, NULL, &left) == TS_OK && left >= 1) {
        out->input = left; /* as the engine will run: with the default bootstrapper */
        out->boot = true;
        out->assumed = true;
    } else {
        out->input = ts_ckks_params_max_level(e.params);
    }
    int cts, em, stc;
    ts_tfhe_params_lit_t lit;
    int eh = ts_llm_boot_encap_h(e.params);
    if (ts_llm_enc_tfhe_boot_config(enc, &bc) == TS_OK &&
        /* without a bootstrapper, the encapsulation the daemon would use */
        (e.boot || !eh || ts_boot_config_encapsulate(e.params, eh, &bc) == TS_OK) &&
        ts_boot_depth(e.params, &bc, &cts, &em, &stc, &left) == TS_OK && left >= 1 &&
        ts_llm_enc_tfhe_literal(enc, &lit) == TS_OK) {
        out->tfhe_in = bc.stc_levels + 1;
        out->tfhe_out = left - 1; /* ModRecover's level - 1 */
        int log_n = ts_ckks_params_log_n(e.params);
        uint32_t n_br = 1u << lit.log_n_br;
        while (out->sub < e.slots &&
               ts_convert_slot_coeff(log_n, bc.log_slots, n_br, (size_t)out->sub, false) >= 0)
            out->sub++;
    }
    return TS_OK;
}

/* graph_with: without the engine's drops after bootstraps (its placement
 * and norm choices are made before the drops are found) */
#define PLAN_NO_DROPS 0x100u

/* b->g: a new graph of the step (NULL on failure) */
static ts_status_t build_graph(gb_t *b, unsigned flags)
{
    b->g = NULL;
    b->st = TS_OK;
    ts_status_t st = ts_sched_graph_new(&b->g);
    if (st == TS_OK)
        st = build_step(b, flags);
    const uint8_t *dl = b->ps        ? b->ps->drop
                        : b->prefill ? b->e->boot_drop_pass[b->after_steps]
                                     : b->e->boot_drop;
    size_t nd = b->ps        ? b->ps->n_drop
                : b->prefill ? b->e->n_boot_drop_pass[b->after_steps]
                             : b->e->n_boot_drop;
    if (st == TS_OK && nd && !(flags & PLAN_NO_DROPS))
        st = ts_sched_graph_set_boot_drop(b->g, dl, nd);
    if (st != TS_OK) {
        ts_sched_graph_free(b->g);
        b->g = NULL;
    }
    return st;
}

/* The graph of the step with residual bootstraps `mask`; a pass (ps, with
 * TS_LLM_PLAN_PREFILL) from a session's caches with its drops (NULL: as the
 * flags say). */
static ts_status_t graph_at(const ts_llm_enc_t *enc, int pos, unsigned flags, uint64_t mask,
                            const ts__llm_enc_pass_t *ps, ts_sched_graph_t **out)
{
    *out = NULL;
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    if (pos < 0 || pos >= e.max_pos)
        return TS_ERANGE;
    ts_boot_config_t pc;
    if ((flags & TS_LLM_PLAN_PERIOD_BOOT) && !e.period_log_slots &&
        ts_llm_enc_period_boot_config(enc, &pc) == TS_OK)
        e.period_log_slots = pc.log_slots;
    ts_llm_enc_levels_t lv;
    ts_status_t st = ts_llm_enc_levels(enc, &lv);
    if (st != TS_OK)
        return st;
    gb_t b = {.e = &e, .lv = &lv, .pos = pos, .where = "step", .mask = mask};
    if (flags & TS_LLM_PLAN_PREFILL) {
        /* ts_llm_enc_prefill: lanes, policy ckks (no look-ups), no drops after bootstraps */
        if (e.cfg->lanes < 2)
            return TS_EINVAL;
        b.prefill = e.cfg->lanes;
    }
    /* after a product of two values at scale Delta rescaled by q_l, enc.c's snap
     * corrects the scale with one more level unless q_l is within 2^-10 of Delta */
    double delta = ts_ckks_params_scale(e.params);
    int top = ts_ckks_params_max_level(e.params);
    for (int l = 1; l <= top && l < 64; l++)
        if (ts__llm_level_deep(e.params, delta, l))
            b.snap |= (uint64_t)1 << l;
    /* a pass after ordinary steps: the caches at the steps' row level. A
     * pass: enc.c attention's K/V refresh where its rule holds, layer by
     * layer on the replay of the graph so far (a layer's levels depend only
     * on the refreshes before it) */
    const ts_nonlinear_cheb_t *cexp =
        e.cfg->eval_exp == TS_LLM_EVAL_CKKS ? ts_nonlinear_approx_cheb(e.a_exp) : NULL;
    b.after_steps = b.prefill && pos > 0 && (flags & TS_LLM_PLAN_AFTER_STEPS);
    if (b.after_steps)
        b.cache_lv = b.cache_lv_v = e.row_lv;
    if (b.prefill && ps) {
        b.ps = ps;
        b.cache_lv = ps->cache_lv;
        b.cache_lv_v = ps->cache_lv + e.nl;
    }
    uint8_t *refresh = NULL;
    int *ids = NULL;
    if (b.prefill && cexp && lv.boot && !(flags & TS_LLM_PLAN_CACHE_ONLY)) {
        refresh = ts_calloc((size_t)e.nl, 1);
        ids = ts_malloc(2 * (size_t)e.nl * sizeof *ids);
        if (!refresh || !ids) {
            ts_free(refresh);
            ts_free(ids);
            return TS_ENOMEM;
        }
        b.refresh = refresh;
        b.kv_need = 2 + ts__llm_cheb_levels(cexp);
    }
    b.q_id = ids;
    b.kc_id = ids ? ids + e.nl : NULL;
    st = build_graph(&b, flags);
    ts_sched_costs_t c; /* levels only: any table */
    if (refresh) {
        ts_sched_costs_default(&c);
        ts_sched_costs_extend(&c, lv.input);
    }
    for (int l = 0; st == TS_OK && refresh && l < e.nl; l++) {
        /* layer l's rule (enc.c attention): the cache's level leaves the
         * scores fewer than kv_need levels and the queries' (at most a
         * bootstrap's) would not */
        ts_sched_plan_t *p = NULL;
        if (ts_sched_plan_new_engine(b.g, &c, TS_SCHED_HYBRID, lv.input, lv.input, &p, NULL, 0) !=
            TS_OK)
            break; /* it does not plan: the caller's replay says why */
        int kl = p->steps[ids[e.nl + l]].level_out, ql = p->steps[ids[l]].level_out;
        ts_sched_plan_free(p);
        if (ql > lv.input)
            ql = lv.input;
        if (kl - 1 < b.kv_need && ql - 1 >= b.kv_need) {
            refresh[l] = 1;
            ts_sched_graph_free(b.g);
            st = build_graph(&b, flags);
        }
    }
    ts_free(refresh);
    ts_free(ids);
    if (st != TS_OK)
        return st;
    *out = b.g;
    return TS_OK;
}

static ts_status_t graph_with(const ts_llm_enc_t *enc, int pos, unsigned flags, uint64_t mask,
                              ts_sched_graph_t **out)
{
    return graph_at(enc, pos, flags, mask, NULL, out);
}

/* ts_llm_enc_graph, a session's pass with ps */
static ts_status_t graph_of(const ts_llm_enc_t *enc, int pos, unsigned flags,
                            const ts__llm_enc_pass_t *ps, ts_sched_graph_t **out)
{
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    return graph_at(enc, pos, flags,
                    (flags & TS_LLM_PLAN_PREFILL) ? e.resid_boot_pass : e.resid_boot, ps, out);
}

ts_status_t ts_llm_enc_graph(const ts_llm_enc_t *enc, int pos, unsigned flags,
                             ts_sched_graph_t **out)
{
    if (!enc || !out)
        return TS_EINVAL;
    return graph_of(enc, pos, flags, NULL, out);
}

/* Bootstraps and predicted time of the plan at pos with flags and residual
 * bootstraps mask under cost table c; false when it does not plan. A pass
 * after steps (TS_LLM_PLAN_AFTER_STEPS) counts the pass after a pass too:
 * a generation runs both (the second with the cache the first refreshed),
 * and a placement good for one can cost the other bootstraps. */
static bool plan_score(const ts_llm_enc_t *enc, const ts_sched_costs_t *c, int level, int pos,
                       unsigned flags, uint64_t mask, uint32_t *nb, double *ns)
{
    bool ok = true;
    *nb = 0;
    *ns = 0.0;
    for (int k = 0; ok && k < ((flags & TS_LLM_PLAN_AFTER_STEPS) ? 2 : 1); k++) {
        ts_sched_graph_t *g = NULL;
        ts_sched_plan_t *p = NULL;
        ok =
            graph_with(enc, pos, k ? flags & ~TS_LLM_PLAN_AFTER_STEPS : flags, mask, &g) == TS_OK &&
            ts_sched_plan_new_engine(g, c, TS_SCHED_HYBRID, level, level, &p, NULL, 0) == TS_OK;
        if (ok) {
            *nb += p->n_boot;
            *ns += p->total_ns;
        }
        ts_sched_plan_free(p);
        ts_sched_graph_free(g);
    }
    return ok;
}

/* The search's state: the best mask so far, its bootstraps and time. */
typedef struct {
    const ts_llm_enc_t *enc;
    ts_sched_costs_t c;
    int level, pos;
    unsigned flags;
    uint64_t best;
    uint32_t bn;
    double bns;
} place_t;

/* Keep m when it plans with fewer bootstraps (then less time). */
static void place_try(place_t *pl, uint64_t m)
{
    uint32_t n;
    double ns;
    if (plan_score(pl->enc, &pl->c, pl->level, pl->pos, pl->flags, m, &n, &ns) &&
        (n < pl->bn || (n == pl->bn && ns < pl->bns))) {
        pl->best = m;
        pl->bn = n;
        pl->bns = ns;
    }
}

/* The position and flags of the plan a choice is made on: the last
 * ordinary step, or (pass) the last prefill pass; false when there is none
 * (no bootstrapping; pass without lanes). */
static bool choice_plan(const ts_llm_enc_t *enc, bool pass, ts_llm_enc_levels_t *lv, int *pos,
                        unsigned *flags)
{
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    if ((pass && e.cfg->lanes < 2) || ts_llm_enc_levels(enc, lv) != TS_OK || !lv->boot ||
        e.max_pos < 1)
        return false;
    *pos = !pass ? e.max_pos - 1 : e.max_pos > e.cfg->lanes ? e.max_pos - e.cfg->lanes : 0;
    /* a pass: a generation's speculative one, after ordinary steps and
     * (plan_score) after a pass */
    *flags = TS_LLM_PLAN_ONEHOT | (pass ? TS_LLM_PLAN_PREFILL | TS_LLM_PLAN_AFTER_STEPS : 0u);
    return true;
}

bool ts__llm_enc_defer_ns(const ts_llm_enc_t *enc, bool pass, uint64_t mask, double *ns)
{
    ts_llm_enc_levels_t lv;
    int pos;
    unsigned flags;
    if (!choice_plan(enc, pass, &lv, &pos, &flags))
        return false;
    ts_sched_costs_t c;
    ts_sched_costs_default(&c);
    ts_sched_costs_extend(&c, lv.input);
    uint32_t nb;
    return plan_score(enc, &c, lv.input, pos, flags | PLAN_NO_DROPS, mask, &nb, ns);
}

uint64_t ts__llm_enc_place(const ts_llm_enc_t *enc, bool pass)
{
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    ts_llm_enc_levels_t lv;
    place_t pl = {.enc = enc};
    if (!choice_plan(enc, pass, &lv, &pl.pos, &pl.flags))
        return 0;
    pl.level = lv.input;
    ts_sched_costs_default(&pl.c);
    ts_sched_costs_extend(&pl.c, lv.input);
    if (!plan_score(enc, &pl.c, pl.level, pl.pos, pl.flags, 0, &pl.bn, &pl.bns))
        return 0;
    int nbits = 2 * e.nl < 64 ? 2 * e.nl : 64;
    if (nbits <= 10) {
        for (uint64_t m = 1; m < ((uint64_t)1 << nbits); m++)
            place_try(&pl, m);
        return pl.best;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nbits; i++)
            place_try(&pl, pl.best ^ ((uint64_t)1 << i));
    return pl.best;
}

/*
 * The engine's plan of an ordinary step at its last position under the
 * built-in cost table extended to its levels (*lv filled): *c, *g and *p for
 * the caller to free (ts_free, ts_sched_graph_free, ts_sched_plan_free).
 * TS_OK with *p NULL when the engine does not bootstrap or evaluates
 * anything in TFHE (its conversions are placed by levels too).
 */
static ts_status_t last_step_plan(const ts_llm_enc_t *enc, ts_llm_enc_levels_t *lv,
                                  ts_sched_costs_t **c, ts_sched_graph_t **g, ts_sched_plan_t **p)
{
    *c = NULL;
    *g = NULL;
    *p = NULL;
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    if (ts_llm_enc_levels(enc, lv) != TS_OK || !lv->boot || e.max_pos < 1 ||
        ts_llm_enc_uses_tfhe(enc))
        return TS_OK;
    if (!(*c = ts_malloc(sizeof **c)))
        return TS_ENOMEM;
    ts_sched_costs_default(*c);
    ts_sched_costs_extend(*c, lv->input);
    ts_status_t st = graph_with(enc, e.max_pos - 1, TS_LLM_PLAN_ONEHOT, e.resid_boot, g);
    if (st == TS_OK)
        st = ts_sched_plan_new_engine(*g, *c, TS_SCHED_HYBRID, lv->input, lv->input, p, NULL, 0);
    return st;
}

ts_status_t ts__llm_enc_step_rows(const ts_llm_enc_t *enc, int8_t **rows)
{
    *rows = NULL;
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    ts_llm_enc_levels_t lv;
    ts_sched_costs_t *c = NULL;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *p = NULL;
    int8_t *r = ts_calloc((size_t)e.nl, sizeof *r);
    ts_status_t st = r ? last_step_plan(enc, &lv, &c, &g, &p) : TS_ENOMEM;
    int found = 0;
    for (size_t i = 0; st == TS_OK && p && i < ts_sched_graph_count(g) && i < p->n_steps; i++) {
        int l = -1, end = 0;
        const ts_sched_op_t *op = ts_sched_graph_op(g, i);
        if (sscanf(op->name, "L%d.attn.cache_k%n", &l, &end) == 1 && op->name[end] == 0 && l >= 0 &&
            l < e.nl) {
            r[l] = (int8_t)p->steps[i].level_out;
            found++;
        }
    }
    ts_sched_plan_free(p);
    ts_sched_graph_free(g);
    ts_free(c);
    if (st != TS_OK || found != e.nl) {
        ts_free(r); /* unknown rows: a prefill takes full levels */
        return st;
    }
    *rows = r;
    return TS_OK;
}

/* The drops after each of the nb bootstraps of g's plan (best: its time
 * under c), in order, each the largest that keeps the count and lowers the
 * time; *drop NULL when none helps. Frees g and c. */
static ts_status_t drops_search(ts_sched_graph_t *g, ts_sched_costs_t *c, int input, uint32_t nb,
                                double best, uint8_t **drop, size_t *n)
{
    ts_sched_plan_t *p = NULL;
    uint8_t *d = NULL;
    ts_status_t st = TS_OK;
    if (nb && !(d = ts_calloc(nb, 1)))
        st = TS_ENOMEM;
    bool any = false;
    /* each bootstrap in order, the largest drop first */
    for (uint32_t i = 0; st == TS_OK && i < nb; i++) {
        for (int k = input - 1; k >= 1; k--) {
            d[i] = (uint8_t)k;
            if ((st = ts_sched_graph_set_boot_drop(g, d, nb)) != TS_OK)
                break;
            if (ts_sched_plan_new_engine(g, c, TS_SCHED_HYBRID, input, input, &p, NULL, 0) ==
                    TS_OK &&
                p->n_boot == nb && p->total_ns < best) {
                best = p->total_ns;
                any = true;
                ts_sched_plan_free(p);
                p = NULL;
                break;
            }
            ts_sched_plan_free(p);
            p = NULL;
            d[i] = 0;
        }
    }
    if (st == TS_OK && any) {
        *drop = d;
        *n = nb;
        d = NULL;
    }
    ts_free(d);
    ts_sched_graph_free(g);
    ts_free(c);
    return st;
}

ts_status_t ts__llm_enc_boot_drops(const ts_llm_enc_t *enc, uint8_t **drop, size_t *n)
{
    *drop = NULL;
    *n = 0;
    ts_llm_enc_levels_t lv;
    ts_sched_costs_t *c = NULL;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *p = NULL;
    ts_status_t st = last_step_plan(enc, &lv, &c, &g, &p);
    if (st != TS_OK || !p) {
        ts_free(c);
        ts_sched_graph_free(g);
        return st;
    }
    uint32_t nb = p->n_boot;
    double best = p->total_ns;
    ts_sched_plan_free(p);
    return drops_search(g, c, lv.input, nb, best, drop, n);
}

/* A pass's drops (ts__llm_enc_boot_drops_pass, ts__llm_enc_pass_drops):
 * from the caches of ps (NULL: as flags say) under the plan of the last
 * pass's position. */
static ts_status_t drops_pass(const ts_llm_enc_t *enc, bool after_steps,
                              const ts__llm_enc_pass_t *ps, uint8_t **drop, size_t *n)
{
    *drop = NULL;
    *n = 0;
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    ts_llm_enc_levels_t lv;
    int pos;
    unsigned flags;
    if (ts_llm_enc_uses_tfhe(enc) || !choice_plan(enc, true, &lv, &pos, &flags))
        return TS_OK;
    if (!after_steps)
        flags &= ~TS_LLM_PLAN_AFTER_STEPS;
    ts_sched_costs_t *c = ts_malloc(sizeof *c);
    if (!c)
        return TS_ENOMEM;
    ts_sched_costs_default(c);
    ts_sched_costs_extend(c, lv.input);
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *p = NULL;
    if (graph_at(enc, pos, flags | PLAN_NO_DROPS, e.resid_boot_pass, ps, &g) != TS_OK ||
        ts_sched_plan_new_engine(g, c, TS_SCHED_HYBRID, lv.input, lv.input, &p, NULL, 0) != TS_OK) {
        ts_sched_graph_free(g);
        ts_free(c);
        return TS_OK; /* no plan: no drops */
    }
    uint32_t nb = p->n_boot;
    double best = p->total_ns;
    ts_sched_plan_free(p);
    return drops_search(g, c, lv.input, nb, best, drop, n);
}

ts_status_t ts__llm_enc_boot_drops_pass(const ts_llm_enc_t *enc, bool after_steps, uint8_t **drop,
                                        size_t *n)
{
    return drops_pass(enc, after_steps, NULL, drop, n);
}

ts_status_t ts__llm_enc_pass_drops(const ts_llm_enc_t *enc, const int8_t *cache_lv, uint8_t **drop,
                                   size_t *n)
{
    ts__llm_enc_pass_t ps = {.cache_lv = cache_lv};
    return drops_pass(enc, false, &ps, drop, n);
}

ts_status_t ts_llm_enc_plan(const ts_llm_enc_t *enc, int pos, unsigned flags,
                            const ts_sched_costs_t *costs, ts_sched_policy_t policy,
                            ts_sched_graph_t **g_out, ts_sched_plan_t **plan_out, char *msg,
                            size_t msg_size)
{
    return ts__llm_enc_plan_at(enc, pos, flags, NULL, costs, policy, g_out, plan_out, msg,
                               msg_size);
}

ts_status_t ts__llm_enc_plan_at(const ts_llm_enc_t *enc, int pos, unsigned flags,
                                const ts__llm_enc_pass_t *ps, const ts_sched_costs_t *costs,
                                ts_sched_policy_t policy, ts_sched_graph_t **g_out,
                                ts_sched_plan_t **plan_out, char *msg, size_t msg_size)
{
    if (msg && msg_size)
        msg[0] = '\0';
    if (!enc || !costs || !g_out || !plan_out)
        return TS_EINVAL;
    *g_out = NULL;
    *plan_out = NULL;
    ts_llm_enc_levels_t lv;
    ts_sched_graph_t *g = NULL;
    ts_sched_plan_t *p = NULL;
    ts_sched_costs_t *c = NULL; /* costs extended to the engine's levels */
    ts_status_t st = ts_llm_enc_levels(enc, &lv);
    if (st == TS_OK && !(c = ts_malloc(sizeof *c)))
        st = TS_ENOMEM;
    if (st == TS_OK) {
        *c = *costs;
        ts_sched_costs_extend(c, lv.input);
        st = graph_of(enc, pos, flags, ps, &g);
    }
    if (st == TS_OK)
        st = ts_sched_plan_new_engine(g, c, policy, lv.input, lv.input, &p, msg, msg_size);
    ts_free(c);
    if (st == TS_OK && !lv.boot && p->n_boot > 0) {
        if (msg && msg_size)
            snprintf(msg, msg_size, "the step needs %u bootstraps and the engine has none",
                     p->n_boot);
        st = TS_ELEVEL;
    }
    if (st != TS_OK) {
        ts_sched_plan_free(p);
        ts_sched_graph_free(g);
        return st;
    }
    *g_out = g;
    *plan_out = p;
    return TS_OK;
}

void ts_llm_enc_plan_stages(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                            double ns[TS_LLM_STAGE_COUNT])
{
    for (int i = 0; i < TS_LLM_STAGE_COUNT; i++)
        ns[i] = 0;
    if (!p || !g || p->n_steps != ts_sched_graph_count(g))
        return;
    for (size_t k = 0; k < p->n_steps; k++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, k);
        int grp = op->group < TS_LLM_STAGE_COUNT ? op->group : TS_LLM_STAGE_OTHER;
        if (p->steps[k].scheme == TS_SCHEME_TFHE)
            grp = TS_LLM_STAGE_CONVERT;
        ns[grp] += p->steps[k].op_ns;
        ns[TS_LLM_STAGE_BOOTSTRAP] += p->steps[k].boot_ns;
    }
}

static int kind_of(const ts_sched_op_t *op)
{
    switch (op->kind) {
    case TS_OP_EXP:
        return TS_LLM_KIND_EXP;
    case TS_OP_INVSQRT:
        return TS_LLM_KIND_RSQRT;
    case TS_OP_SILU:
        return TS_LLM_KIND_SILU;
    case TS_OP_GELU:
        return TS_LLM_KIND_GELU;
    case TS_OP_INV: {
        size_t n = strlen(op->name);
        return n >= 10 && !strcmp(op->name + n - 10, ".step0.inv") ? TS_LLM_KIND_RECIP
                                                                   : TS_LLM_KIND_RECIP_NORM;
    }
    default:
        return -1;
    }
}

ts_status_t ts_llm_enc_plan_alternatives(const ts_llm_enc_t *enc, int pos, unsigned flags,
                                         const ts_sched_costs_t *costs, ts_sched_policy_t policy,
                                         const ts_sched_graph_t *g, double *alt,
                                         double kind_total[TS_LLM_KIND_COUNT])
{
    if (!enc || !costs || !g || !alt)
        return TS_EINVAL;
    ts__llm_enc_shape_t e;
    ts__llm_enc_shape(enc, &e);
    unsigned mask = ts_llm_enc_config_tfhe_kinds(e.cfg);
    double tot[TS_LLM_KIND_COUNT];
    for (int k = 0; k < TS_LLM_KIND_COUNT; k++) {
        ts_llm_enc_config_t cfg;
        ts_llm_enc_config_kinds(&cfg, policy, e.max_pos, mask ^ (1u << k));
        ts_llm_enc_t *v = NULL;
        ts_sched_graph_t *gv = NULL;
        ts_sched_plan_t *pv = NULL;
        tot[k] = INFINITY;
        if (ts_llm_enc_new(e.m, e.params, &cfg, e.boot, &v) == TS_OK &&
            ts_llm_enc_plan(v, pos, flags, costs, policy, &gv, &pv, NULL, 0) == TS_OK)
            tot[k] = pv->total_ns;
        ts_sched_plan_free(pv);
        ts_sched_graph_free(gv);
        ts_llm_enc_free(v);
        if (kind_total)
            kind_total[k] = tot[k];
    }
    for (size_t i = 0; i < ts_sched_graph_count(g); i++) {
        int k = kind_of(ts_sched_graph_op(g, i));
        alt[i] = k >= 0 ? tot[k] : NAN;
    }
    return TS_OK;
}

ts_status_t ts_llm_enc_config_best(const ts_llm_model_t *m, ts_ckks_params_t *params,
                                   const ts_boot_t *boot, int log_slots, int max_pos, int pos,
                                   unsigned flags, const ts_sched_costs_t *costs,
                                   ts_llm_enc_config_t *cfg, double *ns)
{
    if (!m || !params || !costs || !cfg || max_pos < 1 || pos < 0 || pos >= max_pos)
        return TS_EINVAL;
    /* the kinds the model has: SiLU (LLAMA) or GELU (GPT2) as its activation */
    unsigned used = (1u << TS_LLM_KIND_EXP) | (1u << TS_LLM_KIND_RECIP) |
                    (1u << TS_LLM_KIND_RECIP_NORM) | (1u << TS_LLM_KIND_RSQRT) |
                    (1u << (m->cfg.arch == TS_LLM_ARCH_GPT2 ? TS_LLM_KIND_GELU : TS_LLM_KIND_SILU));
    double best = INFINITY;
    ts_status_t last = TS_ELEVEL;
    const int bcts = cfg->boot_cts_levels, bstc = cfg->boot_stc_levels; /* kept */
    /* the ckks policy's structure (its softmax rounds and exp) with every
     * subset of the used kinds in TFHE (the empty one first: the ckks policy
     * itself), then the hybrid structure's (the empty one: its CKKS form) */
    for (unsigned c = 0; c < 2u * (used + 1u); c++) {
        bool hyb = c > used;
        unsigned mask = hyb ? c - used - 1u : c;
        if (mask & ~used)
            continue;
        ts_llm_enc_config_t v;
        ts_llm_enc_config_kinds(&v, hyb ? TS_SCHED_HYBRID : TS_SCHED_CKKS, max_pos, mask);
        v.log_slots = log_slots;
        v.boot_cts_levels = bcts;
        v.boot_stc_levels = bstc;
        ts_llm_enc_t *e = NULL;
        ts_sched_graph_t *g = NULL;
        ts_sched_plan_t *p = NULL;
        ts_status_t st = ts_llm_enc_new(m, params, &v, boot, &e);
        if (st == TS_OK && pos >= ts_llm_enc_max_positions(e))
            st = TS_ERANGE;
        if (st == TS_OK)
            st = ts_llm_enc_plan(e, pos, flags, costs, c ? TS_SCHED_HYBRID : TS_SCHED_CKKS, &g, &p,
                                 NULL, 0);
        if (st == TS_OK)
            ts_log(TS_LOG_DEBUG, "llm",
                   "assignment %s structure, tfhe-kinds 0x%x: %.3f s, %u bootstraps",
                   hyb ? "hybrid" : "ckks", mask, p->total_ns / 1e9, p->n_boot);
        if (st == TS_OK && p->total_ns < best) {
            best = p->total_ns;
            *cfg = v;
        }
        if (st == TS_ENOMEM) {
            ts_sched_plan_free(p);
            ts_sched_graph_free(g);
            ts_llm_enc_free(e);
            return st;
        }
        if (st != TS_OK)
            last = st;
        ts_sched_plan_free(p);
        ts_sched_graph_free(g);
        ts_llm_enc_free(e);
    }
    if (!isfinite(best))
        return last;
    if (ns)
        *ns = best;
    return TS_OK;
}

ts_status_t ts_llm_enc_boot_budgets(const ts_llm_model_t *m, ts_ckks_params_t *params,
                                    const ts_llm_enc_config_t *cfg, int max_pos, unsigned flags,
                                    int *cts, int *stc)
{
    if (!m || !params || !cfg || !cts || !stc || max_pos < 1)
        return TS_EINVAL;
    *cts = *stc = 0;
    if (cfg->boot_budgets_fixed) {
        *cts = cfg->boot_cts_levels;
        *stc = cfg->boot_stc_levels;
        return TS_OK;
    }
    /* a lanes engine keeps the defaults. Counting its step and two passes
     * (after steps, after a pass) would take other budgets where they plan
     * as few or fewer bootstraps, but the passes' placement then trades the
     * residual stream's cheap bootstraps (2^9 slots for 8 lanes) for main
     * ones (2^14): at 8 lanes of 2^11 slots 5 + 3 (as many, each 3.90 ->
     * 3.24 s alone) kept 3 of a pass's 20 at the stream instead of 12 and
     * ran 75.7 -> 74.5 s, 3 + 3 (61 -> 54 planned) 20 -> 18 and 79.4 -> 80.9
     * s (docs/benchmarks.md session 39): a choice by counts gains nothing
     * there; one by time needs prices per bootstrapper and budget */
    if (cfg->lanes > 1)
        return TS_OK;
    ts_sched_costs_t *costs = ts_malloc(sizeof *costs);
    if (!costs)
        return TS_ENOMEM;
    ts_sched_costs_default(costs); /* only the bootstrap counts are compared */
    /* the candidates: the defaults (c, s), then (c, s) + dd[i] */
    static const int dd[4][2] = {{0, 0}, {1, 1}, {1, 0}, {0, 1}};
    int c0 = 0, s0 = 0, best = -1;
    unsigned best_boot = 0;
    ts_status_t st = TS_OK;
    for (int i = 0; i < 4 && st == TS_OK; i++) {
        ts_llm_enc_config_t v = *cfg;
        v.boot_cts_levels = i ? c0 + dd[i][0] : 0;
        v.boot_stc_levels = i ? s0 + dd[i][1] : 0;
        ts_llm_enc_t *e = NULL;
        ts_sched_graph_t *g = NULL;
        ts_sched_plan_t *p = NULL;
        ts_boot_config_t bc;
        ts_status_t sc = ts_llm_enc_new(m, params, &v, NULL, &e);
        /* budgets the slots or the chain have no room for: not a candidate */
        if (sc == TS_OK)
            sc = ts__llm_enc_boot_config(e, &bc);
        if (sc == TS_OK && i == 0) {
            c0 = bc.cts_levels;
            s0 = bc.stc_levels;
        }
        if (sc == TS_OK) {
            int pos = ts_llm_enc_max_positions(e);
            pos = (pos < max_pos ? pos : max_pos) - 1;
            sc =
                ts_llm_enc_plan(e, pos > 0 ? pos : 0, flags, costs, TS_SCHED_CKKS, &g, &p, NULL, 0);
        }
        if (sc == TS_OK) {
            ts_log(TS_LOG_DEBUG, "llm", "bootstrapping DFT budgets %d + %d: %u bootstraps a step",
                   bc.cts_levels, bc.stc_levels, p->n_boot);
            /* fewer bootstraps, or as many with more DFT levels */
            if (best < 0 || p->n_boot < best_boot ||
                (p->n_boot == best_boot && dd[i][0] + dd[i][1] > dd[best][0] + dd[best][1])) {
                best = i;
                best_boot = p->n_boot;
            }
        }
        ts_sched_plan_free(p);
        ts_sched_graph_free(g);
        ts_llm_enc_free(e);
        if ((i == 0 && sc != TS_OK) || sc == TS_ENOMEM)
            st = sc; /* the defaults cannot run (nothing to choose from), or no memory */
    }
    ts_free(costs);
    if (st != TS_OK)
        return st;
    *cts = best > 0 ? c0 + dd[best][0] : 0;
    *stc = best > 0 ? s0 + dd[best][1] : 0;
    return TS_OK;
}

/* The finer forms ts_llm_enc_config_refine tries (llm.h). */
#define FINE_ACT_DEGREE   23
#define FINE_RSQRT_DEGREE 56
#define REFINE_SLACK      1.03 /* the step's predicted time may rise by 3% (plan noise) */

/* cfg with the finer FFN activation (act) and norm 1/sqrt (rs) where it
 * evaluates them in CKKS with coarser forms; false when nothing changes. */
static bool refine_apply(ts_llm_enc_config_t *v, const ts_llm_enc_config_t *cfg, bool gpt2,
                         bool act, bool rs)
{
    *v = *cfg;
    bool changed = false;
    ts_nonlinear_spec_t *a = gpt2 ? &v->gelu : &v->silu; /* ts_llm_enc_config_act's, writable */
    ts_llm_eval_t ae = gpt2 ? v->eval_gelu : v->eval_silu;
    if (act && ae == TS_LLM_EVAL_CKKS && a->method == TS_NL_POLY && a->degree < FINE_ACT_DEGREE) {
        a->degree = FINE_ACT_DEGREE;
        changed = true;
    }
    if (rs && v->eval_rsqrt == TS_LLM_EVAL_CKKS && v->rsqrt.method == TS_NL_ITER &&
        v->rsqrt.steps == 0 && v->rsqrt.degree < FINE_RSQRT_DEGREE) {
        v->rsqrt.degree = FINE_RSQRT_DEGREE;
        changed = true;
    }
    return changed;
}

/* refine's comparison: for each call the engine of cfg runs at max_pos's
 * end, the bootstraps (n[i]) and planned time (ns[i]): the step at the
 * last position and, for an engine of lanes, the pass of its last lanes
 * positions after a pass and after steps (where it has positions before
 * it); *k the calls compared, *dft the DFT levels of its bootstrapper (the
 * budgets as tesserad chooses them; more levels, a cheaper bootstrap,
 * which the built-in table does not price). */
#define REFINE_CALLS 3
static ts_status_t refine_step(const ts_llm_model_t *m, ts_ckks_params_t *params,
                               const ts_llm_enc_config_t *cfg, int max_pos, unsigned flags,
                               const ts_sched_costs_t *costs, int *n, double *ns, int *k, int *dft)
{
    ts_llm_enc_config_t v = *cfg;
    ts_status_t st = ts_llm_enc_boot_budgets(m, params, cfg, max_pos, flags, &v.boot_cts_levels,
                                             &v.boot_stc_levels);
    ts_llm_enc_t *e = NULL;
    ts_boot_config_t bc;
    *k = 0;
    if (st == TS_OK)
        st = ts_llm_enc_new(m, params, &v, NULL, &e);
    if (st == TS_OK)
        st = ts__llm_enc_boot_config(e, &bc);
    if (st == TS_OK) {
        int mp = ts_llm_enc_max_positions(e), lanes = ts_llm_enc_lanes(e);
        int last = (mp < max_pos ? mp : max_pos) - 1, pass = last + 1 - lanes;
        /* (position, flags) of each call */
        int cp[REFINE_CALLS] = {last, pass, pass}, nc = 1;
        unsigned cf[REFINE_CALLS] = {flags, flags | TS_LLM_PLAN_PREFILL,
                                     flags | TS_LLM_PLAN_PREFILL | TS_LLM_PLAN_AFTER_STEPS};
        if (lanes > 1 && pass >= 0)
            nc = pass > 0 ? 3 : 2;
        for (int i = 0; i < nc && st == TS_OK; i++) {
            ts_sched_graph_t *g = NULL;
            ts_sched_plan_t *p = NULL;
            st = ts_llm_enc_plan(e, cp[i], cf[i], costs, TS_SCHED_CKKS, &g, &p, NULL, 0);
            if (st == TS_OK) {
                n[i] = (int)p->n_boot;
                ns[i] = p->total_ns;
            }
            ts_sched_plan_free(p);
            ts_sched_graph_free(g);
        }
        *k = nc;
        *dft = bc.cts_levels + bc.stc_levels;
    }
    ts_llm_enc_free(e);
    return st;
}

ts_status_t ts_llm_enc_config_refine(const ts_llm_model_t *m, ts_ckks_params_t *params,
                                     ts_llm_enc_config_t *cfg, int max_pos, unsigned flags)
{
    if (!m || !params || !cfg || max_pos < 1)
        return TS_EINVAL;
    bool gpt2 = m->cfg.arch == TS_LLM_ARCH_GPT2;
    ts_sched_costs_t *costs = ts_malloc(sizeof *costs);
    if (!costs)
        return TS_ENOMEM;
    ts_sched_costs_default(costs);
    int n0[REFINE_CALLS] = {0}, n1[REFINE_CALLS] = {0}, k0 = 0, k1 = 0, d0 = 0, d1 = 0;
    double t0[REFINE_CALLS] = {0}, t1[REFINE_CALLS] = {0};
    ts_status_t st = refine_step(m, params, cfg, max_pos, flags, costs, n0, t0, &k0, &d0);
    /* most precise first: both, the activation, the norms */
    static const bool cand[3][2] = {{true, true}, {true, false}, {false, true}};
    for (int c = 0; c < 3 && st == TS_OK; c++) {
        ts_llm_enc_config_t v;
        if (!refine_apply(&v, cfg, gpt2, cand[c][0], cand[c][1]))
            continue;
        ts_status_t sc = refine_step(m, params, &v, max_pos, flags, costs, n1, t1, &k1, &d1);
        if (sc == TS_ENOMEM)
            st = sc;
        /* free: no call the engine runs takes more bootstraps or time */
        bool ok = sc == TS_OK && k1 == k0 && d1 >= d0;
        int w = 0; /* the call whose bootstraps, then time, rise most (logged) */
        for (int i = 0; sc == TS_OK && i < k0 && i < k1; i++) {
            ok = ok && n1[i] <= n0[i] && t1[i] <= t0[i] * REFINE_SLACK;
            if (n1[i] - n0[i] > n1[w] - n0[w] ||
                (n1[i] - n0[i] == n1[w] - n0[w] && t1[i] * t0[w] > t1[w] * t0[i]))
                w = i;
        }
        static const char *const call[REFINE_CALLS] = {"the step", "a pass after a pass",
                                                       "a pass after steps"};
        ts_log(TS_LOG_DEBUG, "llm",
               "approximations %s%s%s: %s (%s of %d: bootstraps %d -> %d, DFT levels %d -> %d, "
               "%.1f -> %.1f s planned)",
               cand[c][0] ? (gpt2 ? "GELU" : "SiLU") : "", cand[c][0] && cand[c][1] ? " + " : "",
               cand[c][1] ? "1/sqrt" : "",
               sc != TS_OK ? ts_strerror(sc)
               : ok        ? "taken"
                           : "not free",
               k0 == 2 && w == 1 ? "the first pass" : call[w], k0, n0[w], sc == TS_OK ? n1[w] : -1,
               d0, sc == TS_OK ? d1 : -1, t0[w] / 1e9, sc == TS_OK ? t1[w] / 1e9 : NAN);
        if (ok) {
            *cfg = v;
            break;
        }
    }
    ts_free(costs);
    return st;
}

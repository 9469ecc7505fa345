/*
 * core/sched/graph.c — the decode-step operator graph, its typed helpers,
 * the CKKS implementations of the non-arithmetic primitives (ROSETTA 4.1) and
 * the Llama / GPT-2 decode-step builder.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/sched/sched_int.h"

static const char *const kind_names[TS_OP_KIND_COUNT] = {
    "matvec",  "mul_cc", "mul_cp", "add_cc",  "add_cp", "sum",  "rope", "attn_qk",
    "attn_pv", "exp",    "inv",    "invsqrt", "silu",   "gelu", "relu",
};

const char *ts_op_kind_name(ts_op_kind_t kind)
{
    if ((int)kind < 0 || kind >= TS_OP_KIND_COUNT)
        return "?";
    return kind_names[kind];
}

bool ts_op_kind_is_nonarith(ts_op_kind_t kind)
{
    return kind >= TS_OP_EXP && kind < TS_OP_KIND_COUNT;
}

ts_status_t ts_sched_graph_new(ts_sched_graph_t **out)
{
    if (!out)
        return TS_EINVAL;
    *out = ts_calloc(1, sizeof(ts_sched_graph_t));
    return *out ? TS_OK : TS_ENOMEM;
}

void ts_sched_graph_free(ts_sched_graph_t *g)
{
    if (!g)
        return;
    ts_free(g->ops);
    ts_free(g->rot_off);
    ts_free(g->rot_n);
    ts_free(g->rot);
    ts_free(g->boot_drop);
    ts_free(g);
}

ts_status_t ts_sched_graph_set_boot_drop(ts_sched_graph_t *g, const uint8_t *drop, size_t n)
{
    if (!g || (n && !drop))
        return TS_EINVAL;
    uint8_t *d = NULL;
    if (n && !(d = ts_malloc(n)))
        return TS_ENOMEM;
    if (n)
        memcpy(d, drop, n);
    ts_free(g->boot_drop);
    g->boot_drop = d;
    g->n_boot_drop = n;
    return TS_OK;
}

size_t ts_sched_graph_count(const ts_sched_graph_t *g)
{
    return g ? g->n_ops : 0;
}

const ts_sched_op_t *ts_sched_graph_op(const ts_sched_graph_t *g, size_t i)
{
    return g && i < g->n_ops ? &g->ops[i] : NULL;
}

const int32_t *ts_sched_graph_op_rot_steps(const ts_sched_graph_t *g, size_t i, size_t *n)
{
    if (!g || i >= g->n_ops || g->rot_n[i] == 0) {
        if (n)
            *n = 0;
        return NULL;
    }
    if (n)
        *n = g->rot_n[i];
    return g->rot + g->rot_off[i];
}

size_t ts_sched_graph_count_kind(const ts_sched_graph_t *g, ts_op_kind_t kind)
{
    size_t n = 0;
    for (size_t i = 0; g && i < g->n_ops; i++)
        n += g->ops[i].kind == kind;
    return n;
}

static bool input_ok(int in, size_t n_ops, bool allow_none)
{
    if (in == TS_SCHED_FRESH)
        return true;
    if (in == TS_SCHED_NONE)
        return allow_none;
    return in >= 0 && (size_t)in < n_ops;
}

ts_status_t ts_sched_graph_add_op(ts_sched_graph_t *g, const ts_sched_op_t *op,
                                  const int32_t *rot_steps, size_t n_rot, int *out_id)
{
    if (!g || !op || (n_rot && !rot_steps))
        return TS_EINVAL;
    if ((int)op->kind < 0 || op->kind >= TS_OP_KIND_COUNT || op->n_ct == 0)
        return TS_EINVAL;
    if (!input_ok(op->in[0], g->n_ops, false) || !input_ok(op->in[1], g->n_ops, true))
        return TS_EINVAL;
    if (op->n_impl < 1 || op->n_impl > TS_SCHED_MAX_IMPL)
        return TS_EINVAL;
    for (int j = 0; j < op->n_impl; j++) {
        const ts_sched_impl_t *im = &op->impl[j];
        if (im->depth < 0 || im->depth > 4096 || !(im->n_add >= 0) || !(im->n_pmul >= 0) ||
            !(im->n_cmul >= 0) || !(im->n_rot >= 0) || !(im->n_rescale >= 0) ||
            !(im->n_encode >= 0) || !(im->n_hoist >= 0) || !(im->n_baby >= 0) ||
            !(im->n_diag >= 0) || !(im->n_giant >= 0) || !(im->n_moddown >= 0))
            return TS_EINVAL;
    }
    if (op->pin > TS_SCHED_PIN_TFHE || op->group >= TS_SCHED_MAX_GROUPS || op->need_level < 0 ||
        op->need_level > 4096 || op->tfhe_in_level < 0 || op->tfhe_in_level > 4096 ||
        op->tfhe_out_level < 0 || op->tfhe_out_level > 4096 || op->lut_seg < TS_SCHED_LUT_PBS ||
        op->lut_seg > 64 || (op->pin == TS_SCHED_PIN_TFHE && !op->tfhe_ok) ||
        (op->drop_above && (op->in[1] == TS_SCHED_NONE || op->tfhe_ok || op->pin)) ||
        (op->capped && (op->tfhe_ok || op->pin == TS_SCHED_PIN_TFHE)) ||
        (!op->capped && op->level_cap))
        return TS_EINVAL;
    bool nonarith = ts_op_kind_is_nonarith(op->kind);
    if (op->tfhe_ok && (!nonarith || op->n_values == 0))
        return TS_EINVAL;
    if (!(op->range_lo <= op->range_hi))
        return TS_EINVAL;
    if (g->n_ops >= (size_t)INT32_MAX - 1)
        return TS_ELIMIT;

    if (g->n_ops == g->cap_ops) {
        size_t cap = g->cap_ops ? 2 * g->cap_ops : 64;
        ts_sched_op_t *ops = ts_realloc(g->ops, cap * sizeof *ops);
        if (!ops)
            return TS_ENOMEM;
        g->ops = ops;
        size_t *off = ts_realloc(g->rot_off, cap * sizeof *off);
        if (!off)
            return TS_ENOMEM;
        g->rot_off = off;
        size_t *rn = ts_realloc(g->rot_n, cap * sizeof *rn);
        if (!rn)
            return TS_ENOMEM;
        g->rot_n = rn;
        g->cap_ops = cap;
    }
    if (g->n_rot + n_rot > g->cap_rot) {
        size_t cap = g->cap_rot ? g->cap_rot : 256;
        while (cap < g->n_rot + n_rot)
            cap *= 2;
        int32_t *r = ts_realloc(g->rot, cap * sizeof *r);
        if (!r)
            return TS_ENOMEM;
        g->rot = r;
        g->cap_rot = cap;
    }
    size_t id = g->n_ops;
    g->ops[id] = *op;
    g->ops[id].name[sizeof g->ops[id].name - 1] = '\0';
    g->rot_off[id] = g->n_rot;
    g->rot_n[id] = n_rot;
    if (n_rot)
        memcpy(g->rot + g->n_rot, rot_steps, n_rot * sizeof *rot_steps);
    g->n_rot += n_rot;
    g->n_ops++;
    if (out_id)
        *out_id = (int)id;
    return TS_OK;
}

/* ---------------------------------------------------------- typed helpers */

static void op_init(ts_sched_op_t *op, ts_op_kind_t kind, const char *name, int layer, int a, int b,
                    uint32_t n_ct)
{
    memset(op, 0, sizeof *op);
    op->kind = kind;
    snprintf(op->name, sizeof op->name, "%s", name ? name : ts_op_kind_name(kind));
    op->layer = layer;
    op->in[0] = a;
    op->in[1] = b;
    op->n_ct = n_ct ? n_ct : 1;
    op->n_impl = 1;
}

static void impl_set(ts_sched_impl_t *im, const char *name, int depth, double add, double pmul,
                     double cmul, double rot, double rescale)
{
    memset(im, 0, sizeof *im);
    snprintf(im->name, sizeof im->name, "%s", name);
    im->depth = depth;
    im->n_add = add;
    im->n_pmul = pmul;
    im->n_cmul = cmul;
    im->n_rot = rot;
    im->n_rescale = rescale;
}

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
    uint64_t q = (a + b - 1) / b;
    return q > UINT32_MAX ? UINT32_MAX : (uint32_t)q;
}

static int ceil_log2(uint64_t x)
{
    int k = 0;
    while (k < 63 && (1ULL << k) < x)
        k++;
    return k;
}

static uint32_t slots_or_default(uint32_t slots)
{
    return slots ? slots : 32768;
}

ts_status_t ts_sched_graph_add_matvec(ts_sched_graph_t *g, const char *name, int layer, int in,
                                      uint32_t rows, uint32_t cols, uint32_t slots, int *out_id)
{
    if (!rows || !cols)
        return TS_EINVAL;
    slots = slots_or_default(slots);
    uint32_t rb = rows < slots ? rows : slots, cb = cols < slots ? cols : slots;
    uint32_t blocks = ceil_div(rows, slots) * ceil_div(cols, slots);
    uint32_t m = rb < cb ? rb : cb; /* diagonals of one block */
    uint32_t baby = (uint32_t)ceil(sqrt((double)m));
    uint32_t giant = ceil_div(m, baby);
    uint32_t big = rb > cb ? rb : cb;
    int fold = ceil_log2(ceil_div(big, m)); /* fold (rb < cb) or replicate (rb > cb) */
    ts_sched_op_t op;
    op_init(&op, TS_OP_MATVEC, name, layer, in, TS_SCHED_NONE, blocks);
    op.rows = rows;
    op.cols = cols;
    /* double-hoisted BSGS: one decomposition, baby - 1 rotations, m
     * diagonals, giant - 1 rotating giant steps, one ModDown */
    impl_set(&op.impl[0], "bsgs-diag", 1, fold, 0, 0, fold, 1);
    op.impl[0].n_hoist = 1;
    op.impl[0].n_baby = baby - 1;
    op.impl[0].n_diag = m;
    op.impl[0].n_giant = giant - 1;
    op.impl[0].n_moddown = 1;
    /* Rotation steps: baby steps 1..baby-1, giant steps j*baby, fold steps m*2^j. */
    int32_t steps[512];
    size_t n = 0;
    for (uint32_t j = 1; j < baby && n < 256; j++)
        steps[n++] = (int32_t)j;
    for (uint32_t j = 1; j < giant && n < 500; j++)
        steps[n++] = (int32_t)(j * baby);
    for (int j = 0; j < fold && n < 512; j++)
        steps[n++] = (int32_t)((uint64_t)m << j);
    return ts_sched_graph_add_op(g, &op, steps, n, out_id);
}

ts_status_t ts_sched_graph_add_binary(ts_sched_graph_t *g, ts_op_kind_t kind, const char *name,
                                      int layer, int a, int b, uint32_t n_ct, int *out_id)
{
    ts_sched_op_t op;
    switch (kind) {
    case TS_OP_MUL_CC:
        op_init(&op, kind, name, layer, a, b, n_ct);
        impl_set(&op.impl[0], "mul-relin", 1, 0, 0, 1, 0, 1);
        break;
    case TS_OP_MUL_CP:
        op_init(&op, kind, name, layer, a, TS_SCHED_NONE, n_ct);
        impl_set(&op.impl[0], "pmul", 1, 0, 1, 0, 0, 1);
        break;
    case TS_OP_ADD_CC:
        op_init(&op, kind, name, layer, a, b, n_ct);
        impl_set(&op.impl[0], "add", 0, 1, 0, 0, 0, 0);
        break;
    case TS_OP_ADD_CP:
        op_init(&op, kind, name, layer, a, TS_SCHED_NONE, n_ct);
        impl_set(&op.impl[0], "padd", 0, 1, 0, 0, 0, 0);
        break;
    default:
        return TS_EINVAL;
    }
    if ((kind == TS_OP_MUL_CC || kind == TS_OP_ADD_CC) && b == TS_SCHED_NONE)
        return TS_EINVAL;
    return ts_sched_graph_add_op(g, &op, NULL, 0, out_id);
}

ts_status_t ts_sched_graph_add_sum(ts_sched_graph_t *g, const char *name, int layer, int in,
                                   uint32_t len, uint32_t n_ct, int *out_id)
{
    if (!len)
        return TS_EINVAL;
    int k = ceil_log2(len);
    ts_sched_op_t op;
    op_init(&op, TS_OP_SUM, name, layer, in, TS_SCHED_NONE, n_ct);
    op.cols = len;
    impl_set(&op.impl[0], "rotate-sum", 0, k, 0, 0, k, 0);
    int32_t steps[32];
    for (int j = 0; j < k && j < 31; j++)
        steps[j] = (int32_t)1 << j;
    return ts_sched_graph_add_op(g, &op, steps, (size_t)(k < 31 ? k : 31), out_id);
}

ts_status_t ts_sched_graph_add_rope(ts_sched_graph_t *g, const char *name, int layer, int in,
                                    uint32_t width, uint32_t slots, int *out_id)
{
    if (!width)
        return TS_EINVAL;
    /* Interleaved pairs: x*cos + rot(x, 1)*sin_odd + rot(x, -1)*sin_even. */
    ts_sched_op_t op;
    op_init(&op, TS_OP_ROPE, name, layer, in, TS_SCHED_NONE,
            ceil_div(width, slots_or_default(slots)));
    op.cols = width;
    impl_set(&op.impl[0], "pairs", 1, 2, 3, 0, 2, 1);
    const int32_t steps[2] = {1, -1};
    return ts_sched_graph_add_op(g, &op, steps, 2, out_id);
}

ts_status_t ts_sched_graph_add_attn(ts_sched_graph_t *g, ts_op_kind_t kind, const char *name,
                                    int layer, int in, int kv, uint32_t n_heads, uint32_t head_dim,
                                    uint32_t n_ctx, uint32_t slots, int *out_id)
{
    if ((kind != TS_OP_ATTN_QK && kind != TS_OP_ATTN_PV) || !n_heads || !head_dim || !n_ctx)
        return TS_EINVAL;
    slots = slots_or_default(slots);
    uint64_t elems = (uint64_t)n_ctx * n_heads * head_dim;
    ts_sched_op_t op;
    op_init(&op, kind, name, layer, in, kv, ceil_div(elems, slots));
    op.rows = n_heads;
    op.cols = n_ctx;
    int32_t steps[40];
    size_t n = 0;
    int k;
    if (kind == TS_OP_ATTN_QK) {
        /* q replicated over positions, times K, summed over head_dim. */
        k = ceil_log2(head_dim);
        for (int j = 0; j < k && n < 40; j++)
            steps[n++] = (int32_t)1 << j;
        impl_set(&op.impl[0], "slotwise-qk", 1, k, 0, 1, k, 1);
    } else {
        /* probabilities spread over head_dim, times V, summed over positions. */
        k = ceil_log2(n_ctx);
        uint64_t stride = (uint64_t)n_heads * head_dim;
        for (int j = 0; j < k && n < 40 && (stride << j) < slots; j++)
            steps[n++] = (int32_t)(stride << j);
        impl_set(&op.impl[0], "slotwise-pv", 1, k, 0, 1, k, 1);
    }
    return ts_sched_graph_add_op(g, &op, steps, n, out_id);
}

/* Paterson-Stockmeyer evaluation of a degree-d polynomial: depth ceil(log2(d+1)),
 * about 2 sqrt(d) + log2(d) non-scalar products and d scalar ones. */
static void poly_impl(ts_sched_impl_t *im, const char *name, int degree, int extra_depth,
                      double extra_cmul)
{
    int depth = ceil_log2((uint64_t)degree + 1);
    double cmul = floor(2.0 * sqrt((double)degree)) + depth + extra_cmul;
    impl_set(im, name, depth + extra_depth, degree + extra_cmul, degree, cmul, 0,
             cmul + 1 + extra_depth);
}

ts_status_t ts_sched_nonarith_impls(ts_op_kind_t kind, double lo, double hi,
                                    ts_sched_impl_t impl[TS_SCHED_MAX_IMPL], int *n_impl)
{
    if (!impl || !n_impl || !ts_op_kind_is_nonarith(kind) || !(lo <= hi) || !isfinite(lo) ||
        !isfinite(hi))
        return TS_EINVAL;
    char nm[32];
    int n = 0;
    switch (kind) {
    case TS_OP_EXP: {
        double m = fmax(fabs(lo), fabs(hi));
        int r = m > 1.0 ? ceil_log2((uint64_t)ceil(m)) : 0;
        snprintf(nm, sizeof nm, "cheb7-sq%d", r);
        poly_impl(&impl[n++], nm, 7, r, r);
        if (r >= 1) {
            snprintf(nm, sizeof nm, "cheb15-sq%d", r - 1);
            poly_impl(&impl[n++], nm, 15, r - 1, r - 1);
        }
        break;
    }
    case TS_OP_INV: {
        if (!(lo > 0))
            return TS_EINVAL;
        /* x' = 2x/(lo+hi) in (0, 2); error |1-x'|^(2^t) <= 2^-20. */
        double e = (hi - lo) / (hi + lo);
        int t = 1;
        if (e > 0) {
            double need = 20.0 / -log2(e);
            t = need > 1 ? ceil_log2((uint64_t)ceil(need)) : 1;
            if (t < 1)
                t = 1;
        }
        snprintf(nm, sizeof nm, "goldschmidt-%d", t);
        impl_set(&impl[n++], nm, t + 1, 2 * t, 1, 2 * t, 0, 2 * t + 1);
        break;
    }
    case TS_OP_INVSQRT: {
        if (!(lo > 0))
            return TS_EINVAL;
        /* Degree-7 initial guess, then Newton y <- 1.5 y - 0.5 (x y)(y y):
         * depth 2 and 3 products per iteration; roughly quadratic convergence
         * once the guess is within a factor of 2, one more per 4 octaves. */
        int oct = ceil_log2((uint64_t)ceil(hi / lo));
        int t = 3 + oct / 4;
        snprintf(nm, sizeof nm, "newton-%d", t);
        poly_impl(&impl[n], nm, 7, 2 * t, 3 * t);
        n++;
        break;
    }
    case TS_OP_SILU:
    case TS_OP_GELU: {
        poly_impl(&impl[n++], "cheb59", 59, 0, 0);
        if (fmax(fabs(lo), fabs(hi)) <= 8.0)
            poly_impl(&impl[n++], "cheb27", 27, 0, 0);
        break;
    }
    case TS_OP_RELU: {
        /* x (1 + sign(x)) / 2 with a composite sign of degrees 15, 15, 27. */
        ts_sched_impl_t a, b, c;
        poly_impl(&a, "s", 15, 0, 0);
        poly_impl(&b, "s", 15, 0, 0);
        poly_impl(&c, "s", 27, 0, 0);
        impl_set(&impl[n++], "sign-15-15-27", a.depth + b.depth + c.depth + 1,
                 a.n_add + b.n_add + c.n_add + 1, a.n_pmul + b.n_pmul + c.n_pmul,
                 a.n_cmul + b.n_cmul + c.n_cmul + 1, 0,
                 a.n_rescale + b.n_rescale + c.n_rescale + 1);
        break;
    }
    default:
        return TS_EINVAL;
    }
    *n_impl = n;
    return TS_OK;
}

ts_status_t ts_sched_graph_add_nonarith(ts_sched_graph_t *g, ts_op_kind_t kind, const char *name,
                                        int layer, int in, uint32_t n_ct, uint32_t n_values,
                                        double lo, double hi, int *out_id)
{
    if (!n_values)
        return TS_EINVAL;
    ts_sched_op_t op;
    op_init(&op, kind, name, layer, in, TS_SCHED_NONE, n_ct);
    ts_status_t st = ts_sched_nonarith_impls(kind, lo, hi, op.impl, &op.n_impl);
    if (st != TS_OK)
        return st;
    op.n_values = n_values;
    op.range_lo = lo;
    op.range_hi = hi;
    op.tfhe_ok = true;
    return ts_sched_graph_add_op(g, &op, NULL, 0, out_id);
}

/* ----------------------------------------------------- composite layers */

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        ts_status_t try_st_ = (expr);                                                              \
        if (try_st_ != TS_OK)                                                                      \
            return try_st_;                                                                        \
    } while (0)

static const char *sub(char *buf, size_t size, const char *base, const char *suffix)
{
    if (snprintf(buf, size, "%.30s.%s", base ? base : "op", suffix) < 0)
        buf[0] = '\0';
    return buf;
}

ts_status_t ts_sched_graph_add_norm(ts_sched_graph_t *g, ts_sched_norm_t kind, const char *name,
                                    int layer, int in, uint32_t dim, double var_max, int *out_id)
{
    if (!g || !dim || !(var_max > 0) || (kind != TS_NORM_RMS && kind != TS_NORM_LAYER))
        return TS_EINVAL;
    char b[48];
    uint32_t n_ct = 1; /* dim fits one ciphertext's slots for every supported model */
    double lo = var_max >= 100.0 ? 1.0 : var_max / 100.0;
    int x = in, sq, s, m, e, r, y;
    if (kind == TS_NORM_LAYER) {
        int s0, mean;
        TRY(ts_sched_graph_add_sum(g, sub(b, sizeof b, name, "sum"), layer, in, dim, n_ct, &s0));
        TRY(ts_sched_graph_add_binary(g, TS_OP_MUL_CP, sub(b, sizeof b, name, "mean"), layer, s0,
                                      TS_SCHED_NONE, n_ct, &mean));
        TRY(ts_sched_graph_add_binary(g, TS_OP_ADD_CC, sub(b, sizeof b, name, "center"), layer, in,
                                      mean, n_ct, &x));
    }
    TRY(ts_sched_graph_add_binary(g, TS_OP_MUL_CC, sub(b, sizeof b, name, "square"), layer, x, x,
                                  n_ct, &sq));
    TRY(ts_sched_graph_add_sum(g, sub(b, sizeof b, name, "sum_sq"), layer, sq, dim, n_ct, &s));
    TRY(ts_sched_graph_add_binary(g, TS_OP_MUL_CP, sub(b, sizeof b, name, "scale"), layer, s,
                                  TS_SCHED_NONE, n_ct, &m));
    TRY(ts_sched_graph_add_binary(g, TS_OP_ADD_CP, sub(b, sizeof b, name, "eps"), layer, m,
                                  TS_SCHED_NONE, n_ct, &e));
    TRY(ts_sched_graph_add_nonarith(g, TS_OP_INVSQRT, sub(b, sizeof b, name, "invsqrt"), layer, e,
                                    n_ct, 1, lo, var_max, &r));
    TRY(ts_sched_graph_add_binary(g, TS_OP_MUL_CC, sub(b, sizeof b, name, "normalize"), layer, r, x,
                                  n_ct, &y));
    if (out_id)
        *out_id = y;
    return TS_OK;
}

ts_status_t ts_sched_graph_add_softmax(ts_sched_graph_t *g, const char *name, int layer, int in,
                                       uint32_t n_heads, uint32_t n_ctx, double range,
                                       uint32_t slots, int *out_id)
{
    if (!g || !n_heads || !n_ctx || !(range > 0) || !isfinite(range))
        return TS_EINVAL;
    slots = slots_or_default(slots);
    uint32_t n_ct = ceil_div((uint64_t)n_heads * n_ctx, slots);
    uint32_t n_vals = n_heads * n_ctx;
    int k = range > 1.0 ? ceil_log2((uint64_t)ceil(range)) : 1;
    if (k < 1)
        k = 1;
    double r = range / (double)(1u << k);
    char b[48], t[24];
    int y;
    TRY(ts_sched_graph_add_nonarith(g, TS_OP_EXP, sub(b, sizeof b, name, "exp"), layer, in, n_ct,
                                    n_vals, -r, r, &y));
    for (int j = 0; j < k; j++) {
        int sq, s, inv;
        double lo = j == 0 ? n_ctx * exp(-2 * r) : 1.0 / n_ctx;
        double hi = j == 0 ? n_ctx * exp(2 * r) : 1.0;
        snprintf(t, sizeof t, "step%d.square", j);
        TRY(ts_sched_graph_add_binary(g, TS_OP_MUL_CC, sub(b, sizeof b, name, t), layer, y, y, n_ct,
                                      &sq));
        snprintf(t, sizeof t, "step%d.sum", j);
        TRY(ts_sched_graph_add_sum(g, sub(b, sizeof b, name, t), layer, sq, n_ctx, n_ct, &s));
        snprintf(t, sizeof t, "step%d.inv", j);
        TRY(ts_sched_graph_add_nonarith(g, TS_OP_INV, sub(b, sizeof b, name, t), layer, s, n_ct,
                                        n_heads, lo, hi, &inv));
        snprintf(t, sizeof t, "step%d.mul", j);
        TRY(ts_sched_graph_add_binary(g, TS_OP_MUL_CC, sub(b, sizeof b, name, t), layer, inv, sq,
                                      n_ct, &y));
    }
    if (out_id)
        *out_id = y;
    return TS_OK;
}

/* ------------------------------------------------------- decoder builder */

static ts_status_t build_decoder(ts_sched_graph_t *g, const ts_sched_model_dims_t *d)
{
    uint32_t slots = slots_or_default(d->slots);
    uint32_t kvh = d->n_kv_heads ? d->n_kv_heads : d->n_heads;
    uint32_t hd = d->dim / d->n_heads, kv_dim = kvh * hd, n_ctx = d->seq_pos + 1;
    double sm_range = d->softmax_range > 0 ? d->softmax_range : 32.0;
    double act_range = d->act_range > 0 ? d->act_range : 20.0;
    double var_max = d->norm_var_max > 0 ? d->norm_var_max : 8192.0;
    bool llama = d->act == TS_ACT_SWIGLU;
    char n[48];
    int x = TS_SCHED_FRESH;

    if (!d->embed_public)
        TRY(ts_sched_graph_add_matvec(g, "embed", -1, x, d->dim, d->vocab, slots, &x));
    if (!llama)
        TRY(ts_sched_graph_add_binary(g, TS_OP_ADD_CP, "embed.pos", -1, x, TS_SCHED_NONE, 1, &x));

    for (uint32_t l = 0; l < d->n_layers; l++) {
        int L = (int)l, h, q, k, v, s, p, o, f;
#define NM(s) (snprintf(n, sizeof n, "L%u.%s", l, s), n)
        TRY(ts_sched_graph_add_norm(g, d->norm, NM("attn_norm"), L, x, d->dim, var_max, &h));
        TRY(ts_sched_graph_add_matvec(g, NM("wq"), L, h, d->dim, d->dim, slots, &q));
        TRY(ts_sched_graph_add_matvec(g, NM("wk"), L, h, kv_dim, d->dim, slots, &k));
        TRY(ts_sched_graph_add_matvec(g, NM("wv"), L, h, kv_dim, d->dim, slots, &v));
        if (llama) {
            TRY(ts_sched_graph_add_rope(g, NM("rope_q"), L, q, d->dim, slots, &q));
            TRY(ts_sched_graph_add_rope(g, NM("rope_k"), L, k, kv_dim, slots, &k));
        }
        TRY(ts_sched_graph_add_attn(g, TS_OP_ATTN_QK, NM("scores"), L, q, k, d->n_heads, hd, n_ctx,
                                    slots, &s));
        TRY(ts_sched_graph_add_softmax(g, NM("softmax"), L, s, d->n_heads, n_ctx, sm_range, slots,
                                       &p));
        TRY(ts_sched_graph_add_attn(g, TS_OP_ATTN_PV, NM("attn_v"), L, p, v, d->n_heads, hd, n_ctx,
                                    slots, &o));
        TRY(ts_sched_graph_add_matvec(g, NM("wo"), L, o, d->dim, d->dim, slots, &o));
        TRY(ts_sched_graph_add_binary(g, TS_OP_ADD_CC, NM("resid_attn"), L, o, x, 1, &x));
        TRY(ts_sched_graph_add_norm(g, d->norm, NM("ffn_norm"), L, x, d->dim, var_max, &h));
        uint32_t hct = ceil_div(d->hidden_dim, slots);
        if (llama) {
            int up, gate, act;
            TRY(ts_sched_graph_add_matvec(g, NM("w3"), L, h, d->hidden_dim, d->dim, slots, &up));
            TRY(ts_sched_graph_add_matvec(g, NM("w1"), L, h, d->hidden_dim, d->dim, slots, &gate));
            TRY(ts_sched_graph_add_nonarith(g, TS_OP_SILU, NM("silu"), L, gate, hct, d->hidden_dim,
                                            -act_range, act_range, &act));
            TRY(ts_sched_graph_add_binary(g, TS_OP_MUL_CC, NM("glu"), L, act, up, hct, &f));
        } else {
            int up;
            TRY(ts_sched_graph_add_matvec(g, NM("fc"), L, h, d->hidden_dim, d->dim, slots, &up));
            TRY(ts_sched_graph_add_nonarith(g, TS_OP_GELU, NM("gelu"), L, up, hct, d->hidden_dim,
                                            -act_range, act_range, &f));
        }
        TRY(ts_sched_graph_add_matvec(g, NM(llama ? "w2" : "proj"), L, f, d->dim, d->hidden_dim,
                                      slots, &f));
        TRY(ts_sched_graph_add_binary(g, TS_OP_ADD_CC, NM("resid_ffn"), L, f, x, 1, &x));
#undef NM
    }
    TRY(ts_sched_graph_add_norm(g, d->norm, "final_norm", -1, x, d->dim, var_max, &x));
    TRY(ts_sched_graph_add_matvec(g, "lm_head", -1, x, d->vocab, d->dim, slots, &x));
    return TS_OK;
}

ts_status_t ts_sched_graph_build_decoder(const ts_sched_model_dims_t *d, ts_sched_graph_t **out)
{
    if (!d || !out)
        return TS_EINVAL;
    *out = NULL;
    if (!d->dim || !d->hidden_dim || !d->n_layers || !d->n_heads || !d->vocab ||
        d->dim % d->n_heads || (d->n_kv_heads && d->n_heads % d->n_kv_heads) ||
        (d->act != TS_ACT_SWIGLU && d->act != TS_ACT_GELU) ||
        (d->norm != TS_NORM_RMS && d->norm != TS_NORM_LAYER) || d->n_layers > 4096 ||
        d->seq_pos > (1u << 24) || d->softmax_range < 0 || d->act_range < 0 || d->norm_var_max < 0)
        return TS_EINVAL;
    ts_sched_graph_t *g;
    ts_status_t st = ts_sched_graph_new(&g);
    if (st != TS_OK)
        return st;
    st = build_decoder(g, d);
    if (st != TS_OK) {
        ts_sched_graph_free(g);
        return st;
    }
    *out = g;
    return TS_OK;
}

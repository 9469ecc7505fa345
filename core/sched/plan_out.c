/*
 * core/sched/plan_out.c — plans as JSON (hand-written, escaped) and as a
 * readable explanation of every scheme choice; policy names.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/sched/sched_int.h"

static const char *const policy_names[] = {"hybrid", "ckks", "tfhe"};

const char *ts_sched_policy_name(ts_sched_policy_t p)
{
    return (int)p >= 0 && p <= TS_SCHED_TFHE ? policy_names[p] : "?";
}

ts_status_t ts_sched_policy_parse(const char *s, ts_sched_policy_t *out)
{
    if (!s || !out)
        return TS_EINVAL;
    for (int i = 0; i <= TS_SCHED_TFHE; i++) {
        if (strcmp(s, policy_names[i]) == 0) {
            *out = (ts_sched_policy_t)i;
            return TS_OK;
        }
    }
    return TS_EINVAL;
}

/* ------------------------------------------------------------- buffer */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf_t;

static void sb_vprintf(sbuf_t *b, const char *fmt, va_list ap)
{
    if (b->oom)
        return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_list aq;
        va_copy(aq, ap);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, aq);
        va_end(aq);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *q = ts_realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

static void sb_printf(sbuf_t *b, const char *fmt, ...) TS_PRINTF(2, 3);
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

/* A JSON string literal: quotes, backslashes and control characters escaped. */
static void sb_json_str(sbuf_t *b, const char *s)
{
    sb_printf(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '"':
            sb_printf(b, "\\\"");
            break;
        case '\\':
            sb_printf(b, "\\\\");
            break;
        case '\n':
            sb_printf(b, "\\n");
            break;
        case '\r':
            sb_printf(b, "\\r");
            break;
        case '\t':
            sb_printf(b, "\\t");
            break;
        default:
            if (ch < 0x20 || ch == 0x7f)
                sb_printf(b, "\\u%04x", ch);
            else
                sb_printf(b, "%c", ch);
        }
    }
    sb_printf(b, "\"");
}

static ts_status_t sb_finish(sbuf_t *b, char **out, size_t *len)
{
    if (b->oom || !b->p) {
        ts_free(b->p);
        return TS_ENOMEM;
    }
    *out = b->p;
    if (len)
        *len = b->len;
    return TS_OK;
}

static const char *boot_name(ts_sched_boot_t b)
{
    return b == TS_BOOT_MAIN ? "running" : b == TS_BOOT_ALL ? "all" : "none";
}

/* JSON numbers must be finite. */
static double fin(double x)
{
    return isfinite(x) ? x : -1;
}

ts_status_t ts_sched_plan_to_json(const ts_sched_plan_t *p, const ts_sched_graph_t *g, char **json,
                                  size_t *len)
{
    if (!p || !g || !json || p->n_steps != g->n_ops)
        return TS_EINVAL;
    *json = NULL;
    sbuf_t b = {0};
    sb_printf(&b, "{\"format\":1,\"policy\":");
    sb_json_str(&b, ts_sched_policy_name(p->policy));
    sb_printf(&b, ",\"costs\":");
    sb_json_str(&b, p->costs_name);
    sb_printf(&b,
              ",\"total_ns\":%.0f,\"bootstrap_ns\":%.0f,\"convert_ns\":%.0f,\"n_bootstrap\":%u,"
              "\"n_tfhe\":%u,\"n_ops\":%zu,\"keys\":{\"relin\":true,\"bootstrap\":%s,"
              "\"convert\":%s,\"rotations\":[",
              fin(p->total_ns), fin(p->boot_ns), fin(p->convert_ns), p->n_boot, p->n_tfhe,
              p->n_steps, p->n_boot ? "true" : "false", p->n_tfhe ? "true" : "false");
    for (size_t i = 0; i < p->n_rot_steps; i++)
        sb_printf(&b, "%s%d", i ? "," : "", p->rot_steps[i]);
    sb_printf(&b, "]},\"ops\":[");
    for (size_t k = 0; k < p->n_steps; k++) {
        const ts_sched_op_t *op = &g->ops[k];
        const ts_sched_step_t *s = &p->steps[k];
        sb_printf(&b, "%s\n{\"id\":%zu,\"name\":", k ? "," : "", k);
        sb_json_str(&b, op->name);
        sb_printf(&b, ",\"kind\":\"%s\",\"layer\":%d,\"in\":[%d,%d],\"n_ct\":%u,\"scheme\":\"%s\"",
                  ts_op_kind_name(op->kind), op->layer, op->in[0],
                  op->in[1] == TS_SCHED_NONE ? -2 : op->in[1], op->n_ct,
                  s->scheme == TS_SCHEME_TFHE ? "tfhe" : "ckks");
        if (s->scheme == TS_SCHEME_CKKS && s->impl >= 0 && s->impl < op->n_impl) {
            sb_printf(&b, ",\"impl\":");
            sb_json_str(&b, op->impl[s->impl].name);
            sb_printf(&b, ",\"depth\":%d", op->impl[s->impl].depth);
        } else {
            sb_printf(&b, ",\"n_values\":%u", op->n_values);
        }
        sb_printf(
            &b,
            ",\"level_avail\":%d,\"level_in\":%d,\"level_out\":%d,\"bootstrap\":\"%s\","
            "\"n_bootstrap\":%u,\"n_bootstrap_inner\":%u,\"op_ns\":%.0f,\"bootstrap_ns\":%.0f",
            s->level_avail, s->level_in, s->level_out, boot_name(s->boot), s->n_boot,
            s->n_boot_inner, fin(s->op_ns), fin(s->boot_ns));
        size_t nr;
        const int32_t *r = ts_sched_graph_op_rot_steps(g, k, &nr);
        if (s->scheme == TS_SCHEME_CKKS && nr) {
            sb_printf(&b, ",\"rotations\":[");
            for (size_t i = 0; i < nr; i++)
                sb_printf(&b, "%s%d", i ? "," : "", r[i]);
            sb_printf(&b, "]");
        }
        sb_printf(&b, "}");
    }
    sb_printf(&b, "\n]}\n");
    return sb_finish(&b, json, len);
}

static void ms(sbuf_t *b, double ns)
{
    if (!isfinite(ns))
        sb_printf(b, "infeasible");
    else if (fabs(ns) >= 1e9)
        sb_printf(b, "%.2f s", ns / 1e9);
    else
        sb_printf(b, "%.1f ms", ns / 1e6);
}

ts_status_t ts_sched_plan_explain(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                  const ts_sched_costs_t *costs, char **text, size_t *len)
{
    if (!p || !g || !costs || !text || p->n_steps != g->n_ops)
        return TS_EINVAL;
    *text = NULL;
    double *alt = ts_malloc(g->n_ops * sizeof *alt);
    if (!alt)
        return TS_ENOMEM;
    ts_status_t st = ts__sched_alternatives(g, costs, p, alt);
    if (st == TS_OK)
        st = ts_sched_plan_explain_alt(
            p, g, costs, alt,
            "delta = whole plan re-solved with this one primitive in the other scheme", text, len);
    ts_free(alt);
    return st;
}

ts_status_t ts_sched_plan_explain_alt(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                      const ts_sched_costs_t *costs, const double *alt,
                                      const char *why, char **text, size_t *len)
{
    if (!p || !g || !costs || !alt || !text || p->n_steps != g->n_ops)
        return TS_EINVAL;
    *text = NULL;
    sbuf_t b = {0};
    sb_printf(&b, "plan: policy %s, cost table %s%s, %zu operators\n",
              ts_sched_policy_name(p->policy), costs->name, costs->estimated ? " (estimated)" : "",
              p->n_steps);
    sb_printf(&b, "predicted latency: ");
    ms(&b, p->total_ns);
    sb_printf(&b, "\n  bootstrapping:   ");
    ms(&b, p->boot_ns);
    sb_printf(&b, " (%u ciphertexts)\n  TFHE + convert:  ", p->n_boot);
    ms(&b, p->convert_ns);
    sb_printf(&b, " (%u primitives)\n  other CKKS:      ", p->n_tfhe);
    ms(&b, p->total_ns - p->boot_ns - p->convert_ns);
    if (p->engine && p->n_rot_steps == 0)
        sb_printf(&b, "\n  rotation keys:   the engine's own list\n");
    else
        sb_printf(&b, "\n  rotation keys:   %zu steps\n", p->n_rot_steps);
    sb_printf(&b, "  counts:          %u bootstraps, %u conversions, %u values looked up%s\n",
              p->n_boot, p->n_convert, p->n_lookup,
              p->engine ? " (the engine's level model: exact)" : "");
    sb_printf(&b, "non-arithmetic primitives (%s):\n", why ? why : "delta = alternative");
    const char *forced =
        p->engine ? " (the policy's configuration; the other is cheaper)" : " (forced by policy)";
    for (size_t k = 0; k < g->n_ops; k++) {
        const ts_sched_op_t *op = &g->ops[k];
        const ts_sched_step_t *s = &p->steps[k];
        if (!ts_op_kind_is_nonarith(op->kind))
            continue;
        sb_printf(&b, "  %-28s %-7s ", op->name, ts_op_kind_name(op->kind));
        if (s->scheme == TS_SCHEME_TFHE) {
            sb_printf(&b, "TFHE  %u values, level %d -> recovered to %d, ", op->n_values,
                      s->level_in, s->level_out);
            ms(&b, s->op_ns);
            sb_printf(&b, "; in CKKS the plan would cost ");
        } else {
            sb_printf(&b, "CKKS  %s depth %d, level %d -> %d, ", op->impl[s->impl].name,
                      op->impl[s->impl].depth, s->level_in, s->level_out);
            ms(&b, s->op_ns);
            if (s->n_boot || s->n_boot_inner)
                sb_printf(&b, " + %u bootstraps", s->n_boot + s->n_boot_inner);
            sb_printf(&b, "; in TFHE the plan would cost ");
        }
        if (isnan(alt[k])) {
            sb_printf(&b, "n/a\n");
            continue;
        }
        if (!isfinite(alt[k])) {
            sb_printf(&b, "n/a (infeasible)\n");
            continue;
        }
        double d = alt[k] - p->total_ns;
        sb_printf(&b, "%s", d >= 0 ? "+" : "-");
        ms(&b, fabs(d));
        if (s->scheme == TS_SCHEME_TFHE)
            sb_printf(&b, "%s\n", d >= 0 ? " (TFHE is cheaper)" : forced);
        else
            sb_printf(&b, "%s\n", d >= 0 ? " (CKKS is cheaper)" : forced);
    }
    return sb_finish(&b, text, len);
}

/* ------------------------------------------------------- graph export */

/* A value id as text: an operator id, or "fresh" (a client ciphertext). */
static void sb_value(sbuf_t *b, int v, bool json)
{
    if (v >= 0)
        sb_printf(b, "%d", v);
    else
        sb_printf(b, json ? "\"fresh\"" : "fresh");
}

ts_status_t ts_sched_graph_to_json(const ts_sched_graph_t *g, char **json, size_t *len)
{
    if (!g || !json)
        return TS_EINVAL;
    sbuf_t b = {0};
    size_t n = ts_sched_graph_count(g);
    sb_printf(&b, "{\"format\":1,\"operators\":%zu,\"nodes\":[", n);
    for (size_t i = 0; i < n; i++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, i);
        sb_printf(&b, "%s{\"id\":%zu,\"kind\":", i ? "," : "", i);
        sb_json_str(&b, ts_op_kind_name(op->kind));
        sb_printf(&b, ",\"name\":");
        sb_json_str(&b, op->name);
        sb_printf(&b, ",\"layer\":%d,\"arithmetic\":%s,\"inputs\":[", op->layer,
                  ts_op_kind_is_nonarith(op->kind) ? "false" : "true");
        for (int k = 0; k < 2; k++) {
            if (op->in[k] == TS_SCHED_NONE)
                continue;
            if (k)
                sb_printf(&b, ",");
            sb_value(&b, op->in[k], true);
        }
        sb_printf(&b, "],\"ciphertexts\":%u,\"values\":%u,\"rows\":%u,\"cols\":%u", op->n_ct,
                  op->n_values, op->rows, op->cols);
        if (ts_op_kind_is_nonarith(op->kind))
            sb_printf(&b, ",\"range\":[%.17g,%.17g]", fin(op->range_lo), fin(op->range_hi));
        sb_printf(&b, "}");
    }
    sb_printf(&b, "]}\n");
    return sb_finish(&b, json, len);
}

ts_status_t ts_sched_graph_to_dot(const ts_sched_graph_t *g, char **dot, size_t *len)
{
    if (!g || !dot)
        return TS_EINVAL;
    sbuf_t b = {0};
    size_t n = ts_sched_graph_count(g);
    sb_printf(&b, "digraph decode_step {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n"
                  "  fresh [label=\"client ciphertext\", shape=ellipse];\n");
    for (size_t i = 0; i < n; i++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, i);
        /* The label goes through the JSON escaper: dot reads \" and \n the same way. */
        char label[160];
        if (op->kind == TS_OP_MATVEC)
            snprintf(label, sizeof label, "%s\n%s %ux%u", op->name, ts_op_kind_name(op->kind),
                     op->rows, op->cols);
        else
            snprintf(label, sizeof label, "%s\n%s", op->name, ts_op_kind_name(op->kind));
        sb_printf(&b, "  n%zu [label=", i);
        sb_json_str(&b, label);
        sb_printf(&b, "%s];\n",
                  ts_op_kind_is_nonarith(op->kind) ? ", style=filled, fillcolor=lightblue" : "");
    }
    for (size_t i = 0; i < n; i++) {
        const ts_sched_op_t *op = ts_sched_graph_op(g, i);
        for (int k = 0; k < 2; k++) {
            if (op->in[k] == TS_SCHED_NONE)
                continue;
            if (op->in[k] >= 0)
                sb_printf(&b, "  n%d -> n%zu;\n", op->in[k], i);
            else
                sb_printf(&b, "  fresh -> n%zu;\n", i);
        }
    }
    sb_printf(&b, "}\n");
    return sb_finish(&b, dot, len);
}

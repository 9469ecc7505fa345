/*
 * core/sched/plan_io.c — the wire format of plans (core/serial envelope of
 * type TS_OBJ_SCHED_PLAN, parameter id = graph digest), and the graph digest.
 *
 * Payload (little endian, version 4; versions 1 to 3, still read, end the
 * cost table at n_seg, at boot_period_slots and at boot_slots_ns):
 *   u32 version
 *   cost table: i64 format; name[64] backend[16] params[64] note[512] bytes;
 *     u8 estimated; i64 max_level, slots; 6 per-level lists (u64 count,
 *     i64 items: add, pmul, cmul, rot, rescale, recover); i64 boot_ns,
 *     boot_output_level; u64 count + i64 batch_sizes; u64 count + i64
 *     extract_ns; i64 extract_depth, pbs_ns, homcomp_ns, small_pmul_ns,
 *     trace_ns, n_seg; (version 2) the optional measured entries: 6 per-level
 *     lists (encode, bsgs hoist, baby, diag, giant, moddown), i64
 *     roundtrip_ns; u64 count + i64 lut_seg; u64 count + i64 lut_value_ns;
 *     i64 pbs_value_ns, workers, boot_period_ns, boot_period_slots; (version
 *     3) u64 count + i64 boot_slots, u64 count + i64 boot_slots_ns;
 *     (version 4) u64 count + i64 diag_slots, u64 count + i64 diag_slots_ns
 *   plan: u8 policy; u64 n_steps; per step: u8 scheme, i8 impl, u8 boot,
 *     u32 n_boot, u32 n_boot_inner, i32 level_avail, level_in, level_out,
 *     f64 op_ns, boot_ns
 */
#include <stdio.h>
#include <string.h>

#include "core/sched/sched_int.h"
#include "core/serial/serial.h"

#define PLAN_VERSION 4u
#define MAX_STEPS    (1u << 24)

static void put_str(ts_writer_t *w, const char *s, size_t cap)
{
    char buf[512];
    memset(buf, 0, sizeof buf);
    size_t n = strnlen(s, cap - 1);
    memcpy(buf, s, n);
    ts_put_bytes(w, buf, cap);
}

static void get_str(ts_reader_t *r, char *s, size_t cap)
{
    ts_get_bytes(r, s, cap);
    if (r->err == TS_OK && memchr(s, '\0', cap) == NULL)
        r->err = TS_EFORMAT;
    s[cap - 1] = '\0';
}

static void put_list(ts_writer_t *w, const int64_t *v, size_t n)
{
    ts_put_u64(w, n);
    for (size_t i = 0; i < n; i++)
        ts_put_u64(w, (uint64_t)v[i]);
}

static void get_list(ts_reader_t *r, int64_t *v, size_t *n, size_t cap)
{
    *n = (size_t)ts_get_count(r, cap);
    for (size_t i = 0; i < *n && r->err == TS_OK; i++)
        v[i] = (int64_t)ts_get_u64(r);
}

static void put_costs(ts_writer_t *w, const ts_sched_costs_t *c)
{
    ts_put_u64(w, (uint64_t)c->format);
    put_str(w, c->name, sizeof c->name);
    put_str(w, c->backend, sizeof c->backend);
    put_str(w, c->params, sizeof c->params);
    put_str(w, c->note, sizeof c->note);
    ts_put_u8(w, c->estimated ? 1 : 0);
    ts_put_u64(w, (uint64_t)c->max_level);
    ts_put_u64(w, (uint64_t)c->slots);
    put_list(w, c->add_ns, c->n_add);
    put_list(w, c->pmul_ns, c->n_pmul);
    put_list(w, c->cmul_ns, c->n_cmul);
    put_list(w, c->rot_ns, c->n_rot);
    put_list(w, c->rescale_ns, c->n_rescale);
    put_list(w, c->recover_ns, c->n_recover);
    ts_put_u64(w, (uint64_t)c->boot_ns);
    ts_put_u64(w, (uint64_t)c->boot_output_level);
    put_list(w, c->batch_sizes, c->n_batch_sizes);
    put_list(w, c->extract_ns, c->n_extract);
    ts_put_u64(w, (uint64_t)c->extract_depth);
    ts_put_u64(w, (uint64_t)c->pbs_ns);
    ts_put_u64(w, (uint64_t)c->homcomp_ns);
    ts_put_u64(w, (uint64_t)c->small_pmul_ns);
    ts_put_u64(w, (uint64_t)c->trace_ns);
    ts_put_u64(w, (uint64_t)c->n_seg);
    /* the optional measured entries: the receiver's check re-prices with them */
    put_list(w, c->encode_ns, c->n_encode);
    put_list(w, c->bsgs_hoist_ns, c->n_bsgs_hoist);
    put_list(w, c->bsgs_baby_ns, c->n_bsgs_baby);
    put_list(w, c->bsgs_diag_ns, c->n_bsgs_diag);
    put_list(w, c->bsgs_giant_ns, c->n_bsgs_giant);
    put_list(w, c->bsgs_moddown_ns, c->n_bsgs_moddown);
    ts_put_u64(w, (uint64_t)c->roundtrip_ns);
    put_list(w, c->lut_seg, c->n_lut_seg);
    put_list(w, c->lut_value_ns, c->n_lut_value);
    ts_put_u64(w, (uint64_t)c->pbs_value_ns);
    ts_put_u64(w, (uint64_t)c->workers);
    ts_put_u64(w, (uint64_t)c->boot_period_ns);
    ts_put_u64(w, (uint64_t)c->boot_period_slots);
    put_list(w, c->boot_slots, c->n_boot_slots);
    put_list(w, c->boot_slots_ns, c->n_boot_slots_ns);
    put_list(w, c->diag_slots, c->n_diag_slots);
    put_list(w, c->diag_slots_ns, c->n_diag_slots_ns);
}

static void get_costs(ts_reader_t *r, uint32_t version, ts_sched_costs_t *c)
{
    memset(c, 0, sizeof *c);
    c->format = (int64_t)ts_get_u64(r);
    get_str(r, c->name, sizeof c->name);
    get_str(r, c->backend, sizeof c->backend);
    get_str(r, c->params, sizeof c->params);
    get_str(r, c->note, sizeof c->note);
    uint8_t est = ts_get_u8(r);
    if (est > 1 && r->err == TS_OK)
        r->err = TS_EFORMAT;
    c->estimated = est == 1;
    c->max_level = (int64_t)ts_get_u64(r);
    c->slots = (int64_t)ts_get_u64(r);
    get_list(r, c->add_ns, &c->n_add, TS_SCHED_MAX_LEVELS);
    get_list(r, c->pmul_ns, &c->n_pmul, TS_SCHED_MAX_LEVELS);
    get_list(r, c->cmul_ns, &c->n_cmul, TS_SCHED_MAX_LEVELS);
    get_list(r, c->rot_ns, &c->n_rot, TS_SCHED_MAX_LEVELS);
    get_list(r, c->rescale_ns, &c->n_rescale, TS_SCHED_MAX_LEVELS);
    get_list(r, c->recover_ns, &c->n_recover, TS_SCHED_MAX_LEVELS);
    c->boot_ns = (int64_t)ts_get_u64(r);
    c->boot_output_level = (int64_t)ts_get_u64(r);
    get_list(r, c->batch_sizes, &c->n_batch_sizes, TS_SCHED_MAX_BATCHES);
    get_list(r, c->extract_ns, &c->n_extract, TS_SCHED_MAX_BATCHES);
    c->extract_depth = (int64_t)ts_get_u64(r);
    c->pbs_ns = (int64_t)ts_get_u64(r);
    c->homcomp_ns = (int64_t)ts_get_u64(r);
    c->small_pmul_ns = (int64_t)ts_get_u64(r);
    c->trace_ns = (int64_t)ts_get_u64(r);
    c->n_seg = (int64_t)ts_get_u64(r);
    if (version < 2)
        return;
    get_list(r, c->encode_ns, &c->n_encode, TS_SCHED_MAX_LEVELS);
    get_list(r, c->bsgs_hoist_ns, &c->n_bsgs_hoist, TS_SCHED_MAX_LEVELS);
    get_list(r, c->bsgs_baby_ns, &c->n_bsgs_baby, TS_SCHED_MAX_LEVELS);
    get_list(r, c->bsgs_diag_ns, &c->n_bsgs_diag, TS_SCHED_MAX_LEVELS);
    get_list(r, c->bsgs_giant_ns, &c->n_bsgs_giant, TS_SCHED_MAX_LEVELS);
    get_list(r, c->bsgs_moddown_ns, &c->n_bsgs_moddown, TS_SCHED_MAX_LEVELS);
    c->roundtrip_ns = (int64_t)ts_get_u64(r);
    get_list(r, c->lut_seg, &c->n_lut_seg, 8);
    get_list(r, c->lut_value_ns, &c->n_lut_value, 8);
    c->pbs_value_ns = (int64_t)ts_get_u64(r);
    c->workers = (int64_t)ts_get_u64(r);
    c->boot_period_ns = (int64_t)ts_get_u64(r);
    c->boot_period_slots = (int64_t)ts_get_u64(r);
    if (version < 3)
        return;
    get_list(r, c->boot_slots, &c->n_boot_slots, TS_SCHED_MAX_BOOT_SLOTS);
    get_list(r, c->boot_slots_ns, &c->n_boot_slots_ns, TS_SCHED_MAX_BOOT_SLOTS);
    if (version < 4)
        return;
    get_list(r, c->diag_slots, &c->n_diag_slots, TS_SCHED_MAX_BOOT_SLOTS);
    get_list(r, c->diag_slots_ns, &c->n_diag_slots_ns, TS_SCHED_MAX_BOOT_SLOTS);
}

/* Latencies must be non-negative (the YAML loader enforces it; so must we). */
static bool costs_sane(const ts_sched_costs_t *c)
{
    const int64_t *lists[] = {
        c->add_ns,       c->pmul_ns,      c->cmul_ns,       c->rot_ns,          c->rescale_ns,
        c->recover_ns,   c->batch_sizes,  c->extract_ns,    c->encode_ns,       c->bsgs_hoist_ns,
        c->bsgs_baby_ns, c->bsgs_diag_ns, c->bsgs_giant_ns, c->bsgs_moddown_ns, c->lut_value_ns};
    const size_t ns[] = {c->n_add,        c->n_pmul,         c->n_cmul,        c->n_rot,
                         c->n_rescale,    c->n_recover,      c->n_batch_sizes, c->n_extract,
                         c->n_encode,     c->n_bsgs_hoist,   c->n_bsgs_baby,   c->n_bsgs_diag,
                         c->n_bsgs_giant, c->n_bsgs_moddown, c->n_lut_value};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; j < ns[i]; j++)
            if (lists[i][j] < 0)
                return false;
    if (c->format != 1 || c->boot_ns < 0 || c->extract_depth < 0 || c->pbs_ns < 0 ||
        c->homcomp_ns < 0 || c->small_pmul_ns < 0 || c->trace_ns < 0 || c->n_seg > 64 ||
        c->slots < 0 || c->roundtrip_ns < 0 || c->pbs_value_ns < 0 || c->workers < 0 ||
        c->workers > 4096 || c->boot_period_ns < 0 || c->boot_period_slots < 0)
        return false;
    return ts_sched_costs_validate(c, NULL, 0) == TS_OK;
}

ts_status_t ts_sched_graph_digest(const ts_sched_graph_t *g, uint8_t out[32])
{
    if (!g || !out)
        return TS_EINVAL;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u64(&w, g->n_ops);
    for (size_t k = 0; k < g->n_ops; k++) {
        const ts_sched_op_t *op = &g->ops[k];
        ts_put_u32(&w, (uint32_t)op->kind);
        put_str(&w, op->name, sizeof op->name);
        ts_put_u32(&w, (uint32_t)op->layer);
        ts_put_u32(&w, (uint32_t)op->in[0]);
        ts_put_u32(&w, (uint32_t)op->in[1]);
        ts_put_u32(&w, op->n_ct);
        ts_put_u32(&w, op->n_values);
        ts_put_u32(&w, op->rows);
        ts_put_u32(&w, op->cols);
        ts_put_f64(&w, op->range_lo);
        ts_put_f64(&w, op->range_hi);
        ts_put_u8(&w, op->tfhe_ok ? 1 : 0);
        ts_put_u32(&w, (uint32_t)op->n_impl);
        for (int j = 0; j < op->n_impl; j++) {
            const ts_sched_impl_t *im = &op->impl[j];
            put_str(&w, im->name, sizeof im->name);
            ts_put_u32(&w, (uint32_t)im->depth);
            ts_put_f64(&w, im->n_add);
            ts_put_f64(&w, im->n_pmul);
            ts_put_f64(&w, im->n_cmul);
            ts_put_f64(&w, im->n_rot);
            ts_put_f64(&w, im->n_rescale);
            if (im->n_encode != 0)
                ts_put_f64(&w, im->n_encode);
            /* the BSGS counts, when used (older graphs keep their digest) */
            if (im->n_hoist != 0 || im->n_baby != 0 || im->n_diag != 0 || im->n_giant != 0 ||
                im->n_moddown != 0) {
                ts_put_u8(&w, 0xb5);
                ts_put_f64(&w, im->n_hoist);
                ts_put_f64(&w, im->n_baby);
                ts_put_f64(&w, im->n_diag);
                ts_put_f64(&w, im->n_giant);
                ts_put_f64(&w, im->n_moddown);
            }
        }
        /* the engine level model's fields, when used (generic graphs keep their digest) */
        if (op->pin || op->group || op->inplace || op->need_level || op->tfhe_in_level ||
            op->tfhe_out_level || op->n_conv || op->lut_seg || op->deep_levels ||
            op->boot_log_slots || op->drop_above || op->capped || op->log_slots || op->boot_rot) {
            ts_put_u8(&w, op->pin);
            ts_put_u8(&w, op->group);
            ts_put_u8(&w, op->inplace);
            ts_put_u32(&w, (uint32_t)op->need_level);
            ts_put_u32(&w, (uint32_t)op->tfhe_in_level);
            ts_put_u32(&w, (uint32_t)op->tfhe_out_level);
            ts_put_u32(&w, op->n_conv);
            ts_put_u32(&w, (uint32_t)op->lut_seg);
            ts_put_u64(&w, op->deep_levels);
            if (op->boot_log_slots || op->drop_above || op->capped)
                ts_put_u8(&w, op->boot_log_slots);
            if (op->drop_above) {
                ts_put_u8(&w, 0xd0);
                ts_put_u8(&w, op->drop_above);
            }
            if (op->capped) {
                ts_put_u8(&w, 0xca);
                ts_put_u8(&w, op->level_cap);
            }
            if (op->log_slots) {
                ts_put_u8(&w, 0xc5);
                ts_put_u8(&w, op->log_slots);
            }
            if (op->boot_rot) {
                ts_put_u8(&w, 0xa7);
                ts_put_u8(&w, op->boot_rot);
            }
        }
        ts_put_u64(&w, g->rot_n[k]);
        for (size_t j = 0; j < g->rot_n[k]; j++)
            ts_put_u32(&w, (uint32_t)g->rot[g->rot_off[k] + j]);
    }
    ts_status_t st = w.err;
    if (st == TS_OK)
        st = ts_sha256(w.buf, w.len, out);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_sched_plan_serialize(const ts_sched_plan_t *p, const ts_sched_graph_t *g,
                                    const ts_sched_costs_t *costs, uint8_t **out, size_t *out_size)
{
    if (!p || !g || !costs || !out || !out_size || p->n_steps != g->n_ops)
        return TS_EINVAL;
    *out = NULL;
    *out_size = 0;
    if (p->engine) /* the engine re-plans from its own graph; nothing to send */
        return TS_ENOTSUP;
    uint8_t digest[32];
    ts_status_t st = ts_sched_graph_digest(g, digest);
    if (st != TS_OK)
        return st;
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u32(&w, PLAN_VERSION);
    put_costs(&w, costs);
    ts_put_u8(&w, (uint8_t)p->policy);
    ts_put_u64(&w, p->n_steps);
    for (size_t k = 0; k < p->n_steps; k++) {
        const ts_sched_step_t *s = &p->steps[k];
        ts_put_u8(&w, (uint8_t)s->scheme);
        ts_put_u8(&w, (uint8_t)(int8_t)s->impl);
        ts_put_u8(&w, (uint8_t)s->boot);
        ts_put_u32(&w, s->n_boot);
        ts_put_u32(&w, s->n_boot_inner);
        ts_put_u32(&w, (uint32_t)s->level_avail);
        ts_put_u32(&w, (uint32_t)s->level_in);
        ts_put_u32(&w, (uint32_t)s->level_out);
        ts_put_f64(&w, s->op_ns);
        ts_put_f64(&w, s->boot_ns);
    }
    st = w.err;
    if (st == TS_OK)
        st = ts_serial_seal(&w, TS_OBJ_SCHED_PLAN, digest, 3, out, out_size);
    ts_writer_clear(&w);
    return st;
}

ts_status_t ts_sched_plan_deserialize(const void *data, size_t size, const ts_sched_graph_t *g,
                                      ts_sched_plan_t **out, ts_sched_costs_t *costs_out)
{
    if (!data || !g || !out)
        return TS_EINVAL;
    *out = NULL;
    uint8_t digest[32];
    ts_status_t st = ts_sched_graph_digest(g, digest);
    if (st != TS_OK)
        return st;
    ts_serial_limits_t lim = {.max_raw_bytes = 64u << 20};
    uint8_t *payload = NULL;
    size_t plen = 0;
    st = ts_serial_open(data, size, TS_OBJ_SCHED_PLAN, digest, &lim, NULL, &payload, &plen);
    if (st != TS_OK)
        return st;
    ts_sched_costs_t *c = ts_malloc(sizeof *c);
    ts_sched_plan_t *p = ts_calloc(1, sizeof *p);
    if (!c || !p) {
        st = TS_ENOMEM;
        goto out;
    }
    ts_reader_t r;
    ts_reader_init(&r, payload, plen);
    uint32_t version = ts_get_u32(&r);
    if ((version < 1 || version > PLAN_VERSION) && r.err == TS_OK)
        r.err = TS_EFORMAT;
    get_costs(&r, version, c);
    uint8_t policy = ts_get_u8(&r);
    uint64_t n = ts_get_count(&r, MAX_STEPS);
    if (r.err != TS_OK || policy > TS_SCHED_TFHE || n != g->n_ops || !costs_sane(c)) {
        st = r.err != TS_OK ? r.err : TS_EFORMAT;
        goto out;
    }
    p->policy = (ts_sched_policy_t)policy;
    p->n_steps = (size_t)n;
    snprintf(p->costs_name, sizeof p->costs_name, "%s", c->name);
    p->steps = ts_calloc(n ? n : 1, sizeof *p->steps);
    if (!p->steps) {
        st = TS_ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < n && r.err == TS_OK; k++) {
        ts_sched_step_t *s = &p->steps[k];
        uint8_t scheme = ts_get_u8(&r), boot;
        s->impl = (int8_t)ts_get_u8(&r);
        boot = ts_get_u8(&r);
        s->n_boot = ts_get_u32(&r);
        s->n_boot_inner = ts_get_u32(&r);
        s->level_avail = (int32_t)ts_get_u32(&r);
        s->level_in = (int32_t)ts_get_u32(&r);
        s->level_out = (int32_t)ts_get_u32(&r);
        s->op_ns = ts_get_f64(&r);
        s->boot_ns = ts_get_f64(&r);
        if (scheme > TS_SCHEME_TFHE || boot > TS_BOOT_ALL) {
            r.err = TS_EFORMAT;
            break;
        }
        s->scheme = (ts_sched_scheme_t)scheme;
        s->boot = (ts_sched_boot_t)boot;
        if (s->scheme == TS_SCHEME_TFHE && s->impl != -1)
            r.err = TS_EFORMAT;
    }
    st = ts_reader_finish(&r);
    if (st != TS_OK)
        goto out;
    /* Every per-step cost and level is re-derived by the checker; the totals
     * and rotation keys are recomputed from the graph. */
    st = ts__sched_plan_finish(p, g, c);
    if (st != TS_OK)
        goto out;
    st = ts_sched_plan_check(p, g, c, NULL, 0);
    if (st == TS_ENOMEM)
        goto out;
    if (st != TS_OK) {
        st = TS_EFORMAT;
        goto out;
    }
    if (costs_out)
        *costs_out = *c;
    *out = p;
    p = NULL;
out:
    ts_sched_plan_free(p);
    ts_free(c);
    ts_free(payload);
    return st;
}

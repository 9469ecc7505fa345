/*
 * core/sched/costs.c — the cost table: YAML (and JSON) load through the
 * directive tables of core/base, cross-field validation with file:line,
 * save, the built-in estimate, and the derived latencies the solver uses.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/sched/sched_int.h"

#define OFF(f) offsetof(ts_sched_costs_t, f)
#define LIST(key, f, nf, capn)                                                                     \
    {                                                                                              \
        .name = key, .type = TS_CFG_INTLIST, .offset = OFF(f), .required = true, .min = 0,         \
        .max = INT64_MAX, .cap = capn, .count_offset = OFF(nf)                                     \
    }
#define LISTOPT(key, f, nf, capn)                                                                  \
    {                                                                                              \
        .name = key, .type = TS_CFG_INTLIST, .offset = OFF(f), .required = false, .min = 0,        \
        .max = INT64_MAX, .cap = capn, .count_offset = OFF(nf)                                     \
    }
#define INT(key, f, lo, hi, req)                                                                   \
    {                                                                                              \
        .name = key, .type = TS_CFG_INT, .offset = OFF(f), .required = req, .min = lo, .max = hi   \
    }

static const ts_cfg_directive_t ckks_table[] = {
    INT("max_level", max_level, 1, TS_SCHED_MAX_LEVELS - 1, true),
    INT("slots", slots, 1, INT64_C(1) << 20, false),
    LIST("add_ns", add_ns, n_add, TS_SCHED_MAX_LEVELS),
    LIST("pmul_ns", pmul_ns, n_pmul, TS_SCHED_MAX_LEVELS),
    LIST("cmul_ns", cmul_ns, n_cmul, TS_SCHED_MAX_LEVELS),
    LIST("rot_ns", rot_ns, n_rot, TS_SCHED_MAX_LEVELS),
    LIST("rescale_ns", rescale_ns, n_rescale, TS_SCHED_MAX_LEVELS),
    LISTOPT("encode_ns", encode_ns, n_encode, TS_SCHED_MAX_LEVELS),
    LISTOPT("bsgs_hoist_ns", bsgs_hoist_ns, n_bsgs_hoist, TS_SCHED_MAX_LEVELS),
    LISTOPT("bsgs_baby_ns", bsgs_baby_ns, n_bsgs_baby, TS_SCHED_MAX_LEVELS),
    LISTOPT("bsgs_diag_ns", bsgs_diag_ns, n_bsgs_diag, TS_SCHED_MAX_LEVELS),
    LISTOPT("bsgs_giant_ns", bsgs_giant_ns, n_bsgs_giant, TS_SCHED_MAX_LEVELS),
    LISTOPT("bsgs_moddown_ns", bsgs_moddown_ns, n_bsgs_moddown, TS_SCHED_MAX_LEVELS),
    LISTOPT("diag_by_slots", diag_slots, n_diag_slots, TS_SCHED_MAX_BOOT_SLOTS),
    LISTOPT("diag_by_slots_ns", diag_slots_ns, n_diag_slots_ns, TS_SCHED_MAX_BOOT_SLOTS),
    {.name = NULL},
};

static const ts_cfg_directive_t boot_table[] = {
    INT("latency_ns", boot_ns, 0, INT64_MAX, true),
    INT("output_level", boot_output_level, 1, TS_SCHED_MAX_LEVELS - 1, true),
    INT("period_latency_ns", boot_period_ns, 0, INT64_MAX, false),
    INT("period_slots", boot_period_slots, 0, INT64_C(1) << 20, false),
    LISTOPT("by_slots", boot_slots, n_boot_slots, TS_SCHED_MAX_BOOT_SLOTS),
    LISTOPT("by_slots_ns", boot_slots_ns, n_boot_slots_ns, TS_SCHED_MAX_BOOT_SLOTS),
    {.name = NULL},
};

static const ts_cfg_directive_t convert_table[] = {
    LIST("batch_sizes", batch_sizes, n_batch_sizes, TS_SCHED_MAX_BATCHES),
    LIST("extract_ns", extract_ns, n_extract, TS_SCHED_MAX_BATCHES),
    INT("extract_depth", extract_depth, 0, TS_SCHED_MAX_LEVELS - 1, true),
    LIST("recover_ns", recover_ns, n_recover, TS_SCHED_MAX_LEVELS),
    INT("roundtrip_ns", roundtrip_ns, 0, INT64_MAX, false),
    {.name = NULL},
};

static const ts_cfg_directive_t tfhe_table[] = {
    INT("pbs_ns", pbs_ns, 0, INT64_MAX, true),
    INT("homcomp_ns", homcomp_ns, 0, INT64_MAX, true),
    INT("small_pmul_ns", small_pmul_ns, 0, INT64_MAX, true),
    INT("trace_ns", trace_ns, 0, INT64_MAX, true),
    INT("n_seg", n_seg, 1, 64, true),
    LISTOPT("lut_seg", lut_seg, n_lut_seg, 8),
    LISTOPT("lut_value_ns", lut_value_ns, n_lut_value, 8),
    INT("pbs_value_ns", pbs_value_ns, 0, INT64_MAX, false),
    INT("workers", workers, 0, 4096, false),
    {.name = NULL},
};

static const ts_cfg_directive_t costs_table[] = {
    INT("format", format, 1, 1, true),
    {.name = "name", .type = TS_CFG_STRING, .offset = OFF(name), .cap = 64},
    {.name = "backend", .type = TS_CFG_STRING, .offset = OFF(backend), .cap = 16},
    {.name = "params", .type = TS_CFG_STRING, .offset = OFF(params), .cap = 64},
    {.name = "estimated", .type = TS_CFG_BOOL, .offset = OFF(estimated)},
    {.name = "note", .type = TS_CFG_STRING, .offset = OFF(note), .cap = 512},
    {.name = "cpu", .type = TS_CFG_STRING, .offset = OFF(cpu), .cap = 16},
    {.name = "ckks", .type = TS_CFG_SECTION, .offset = 0, .required = true, .sub = ckks_table},
    {.name = "bootstrap", .type = TS_CFG_SECTION, .offset = 0, .required = true, .sub = boot_table},
    {.name = "convert",
     .type = TS_CFG_SECTION,
     .offset = 0,
     .required = true,
     .sub = convert_table},
    {.name = "tfhe", .type = TS_CFG_SECTION, .offset = 0, .required = true, .sub = tfhe_table},
    {.name = NULL},
};

/* Cross-field rules; *key names the offending key for the file:line lookup. */
static ts_status_t validate(const ts_sched_costs_t *c, char *msg, size_t size, const char **key)
{
    const char *k = NULL;
    char buf[256] = "";
    size_t want = (size_t)c->max_level + 1;
    struct {
        const char *name;
        size_t n;
    } lv[] = {{"add_ns", c->n_add}, {"pmul_ns", c->n_pmul},       {"cmul_ns", c->n_cmul},
              {"rot_ns", c->n_rot}, {"rescale_ns", c->n_rescale}, {"recover_ns", c->n_recover}};
    if (c->max_level < 1 || c->max_level >= TS_SCHED_MAX_LEVELS) {
        k = "max_level";
        snprintf(buf, sizeof buf, "max_level %lld is outside [1, %d]", (long long)c->max_level,
                 TS_SCHED_MAX_LEVELS - 1);
        goto fail;
    }
    for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++) {
        if (lv[i].n != want) {
            k = lv[i].name;
            snprintf(buf, sizeof buf,
                     "'%s' has %zu entries; max_level %lld needs %zu (levels 0..%lld)", k, lv[i].n,
                     (long long)c->max_level, want, (long long)c->max_level);
            goto fail;
        }
    }
    if (c->boot_output_level < 1 || c->boot_output_level > c->max_level) {
        k = "output_level";
        snprintf(buf, sizeof buf, "bootstrap output_level %lld must be in [1, max_level %lld]",
                 (long long)c->boot_output_level, (long long)c->max_level);
        goto fail;
    }
    if ((c->boot_period_ns > 0) != (c->boot_period_slots > 0) ||
        (c->boot_period_slots & (c->boot_period_slots - 1)) != 0 || c->boot_period_slots == 1) {
        k = c->boot_period_ns > 0 ? "period_slots" : "period_latency_ns";
        snprintf(buf, sizeof buf,
                 "bootstrap period_latency_ns and period_slots come together, the slots a "
                 "power of two >= 2");
        goto fail;
    }
    /* the lists by slot count: bootstraps, diagonals (these with the table's) */
    const struct {
        const char *sec, *key, *key_ns;
        const int64_t *slots, *ns;
        size_t n, n_ns;
        bool with_own; /* the table's slots among them */
    } bl[2] = {{"bootstrap", "by_slots", "by_slots_ns", c->boot_slots, c->boot_slots_ns,
                c->n_boot_slots, c->n_boot_slots_ns, false},
               {"ckks", "diag_by_slots", "diag_by_slots_ns", c->diag_slots, c->diag_slots_ns,
                c->n_diag_slots, c->n_diag_slots_ns, true}};
    for (int b = 0; b < 2; b++) {
        if (bl[b].n != bl[b].n_ns) {
            k = bl[b].n ? bl[b].key_ns : bl[b].key;
            snprintf(buf, sizeof buf, "%s %s has %zu entries, %s %zu", bl[b].sec, bl[b].key,
                     bl[b].n, bl[b].key_ns, bl[b].n_ns);
            goto fail;
        }
        bool own = !bl[b].with_own || bl[b].n == 0;
        for (size_t i = 0; i < bl[b].n; i++) {
            int64_t s = bl[b].slots[i];
            if (s < 2 || s > (INT64_C(1) << 20) || (s & (s - 1)) ||
                (i && s <= bl[b].slots[i - 1])) {
                k = bl[b].key;
                snprintf(buf, sizeof buf, "%s %s must be increasing powers of two in [2, 2^20]",
                         bl[b].sec, bl[b].key);
                goto fail;
            }
            if (bl[b].ns[i] < 1) {
                k = bl[b].key_ns;
                snprintf(buf, sizeof buf, "%s %s must be positive latencies", bl[b].sec,
                         bl[b].key_ns);
                goto fail;
            }
            own |= s == c->slots;
        }
        if (!own) {
            k = bl[b].key;
            snprintf(buf, sizeof buf, "%s %s must include the table's slots (%lld)", bl[b].sec,
                     bl[b].key, (long long)c->slots);
            goto fail;
        }
    }
    if (c->extract_depth > c->max_level) {
        k = "extract_depth";
        snprintf(buf, sizeof buf, "extract_depth %lld exceeds max_level %lld",
                 (long long)c->extract_depth, (long long)c->max_level);
        goto fail;
    }
    if (c->n_batch_sizes == 0) {
        k = "batch_sizes";
        snprintf(buf, sizeof buf, "batch_sizes must list at least one size");
        goto fail;
    }
    for (size_t i = 0; i < c->n_batch_sizes; i++) {
        if (c->batch_sizes[i] < 1 || (i && c->batch_sizes[i] <= c->batch_sizes[i - 1])) {
            k = "batch_sizes";
            snprintf(buf, sizeof buf, "batch_sizes must be positive and strictly increasing");
            goto fail;
        }
    }
    if (c->n_extract != c->n_batch_sizes) {
        k = "extract_ns";
        snprintf(buf, sizeof buf, "extract_ns has %zu entries, batch_sizes %zu", c->n_extract,
                 c->n_batch_sizes);
        goto fail;
    }
    if (c->n_encode != 0 && c->n_encode != want) {
        k = "encode_ns";
        snprintf(buf, sizeof buf, "'encode_ns' has %zu entries; max_level %lld needs %zu",
                 c->n_encode, (long long)c->max_level, want);
        goto fail;
    }
    {
        const struct {
            const char *name;
            size_t n;
        } bs[] = {{"bsgs_hoist_ns", c->n_bsgs_hoist},
                  {"bsgs_baby_ns", c->n_bsgs_baby},
                  {"bsgs_diag_ns", c->n_bsgs_diag},
                  {"bsgs_giant_ns", c->n_bsgs_giant},
                  {"bsgs_moddown_ns", c->n_bsgs_moddown}};
        size_t listed = 0;
        for (size_t i = 0; i < sizeof bs / sizeof bs[0]; i++)
            listed += bs[i].n != 0;
        for (size_t i = 0; i < sizeof bs / sizeof bs[0]; i++) {
            if (listed && bs[i].n != want) {
                k = bs[i].name;
                snprintf(buf, sizeof buf,
                         "'%s' has %zu entries; the bsgs_* lists come together, each with "
                         "max_level + 1 = %zu",
                         k, bs[i].n, want);
                goto fail;
            }
        }
    }
    if (c->n_lut_value != c->n_lut_seg || c->n_lut_seg > 8) {
        k = "lut_value_ns";
        snprintf(buf, sizeof buf, "lut_value_ns has %zu entries, lut_seg %zu", c->n_lut_value,
                 c->n_lut_seg);
        goto fail;
    }
    for (size_t i = 0; i < c->n_lut_seg; i++) {
        if (c->lut_seg[i] < 1 || c->lut_seg[i] > 64) {
            k = "lut_seg";
            snprintf(buf, sizeof buf, "lut_seg entries must be in [1, 64]");
            goto fail;
        }
    }
    if (c->workers < 0 || c->workers > 4096) {
        k = "workers";
        snprintf(buf, sizeof buf, "workers must be in [0, 4096]");
        goto fail;
    }
    if (c->roundtrip_ns < 0 || c->pbs_value_ns < 0) {
        k = c->roundtrip_ns < 0 ? "roundtrip_ns" : "pbs_value_ns";
        snprintf(buf, sizeof buf, "%s must not be negative", k);
        goto fail;
    }
    if (c->n_seg < 1) {
        k = "n_seg";
        snprintf(buf, sizeof buf, "n_seg must be at least 1");
        goto fail;
    }
    if (key)
        *key = NULL;
    return TS_OK;
fail:
    if (msg && size)
        snprintf(msg, size, "%s", buf);
    if (key)
        *key = k;
    return TS_ECONFIG;
}

ts_status_t ts_sched_costs_validate(const ts_sched_costs_t *c, char *msg, size_t msg_size)
{
    if (!c)
        return TS_EINVAL;
    return validate(c, msg, msg_size, NULL);
}

/* Line (1-based) of the first "key:" at the start of a line (after blanks or
 * a JSON quote); 0 when absent. */
static int find_key_line(const char *text, size_t size, const char *key, int *column)
{
    size_t klen = strlen(key);
    int line = 1;
    size_t i = 0;
    while (i < size) {
        size_t j = i;
        while (j < size && (text[j] == ' ' || text[j] == '\t' || text[j] == '{' || text[j] == ','))
            j++;
        size_t q = j < size && text[j] == '"' ? j + 1 : j;
        if (q + klen < size && memcmp(text + q, key, klen) == 0) {
            size_t e = q + klen;
            if (e < size && text[e] == '"')
                e++;
            if (e < size && text[e] == ':') {
                *column = (int)(j - i) + 1;
                return line;
            }
        }
        while (i < size && text[i] != '\n')
            i++;
        i++;
        line++;
    }
    return 0;
}

ts_status_t ts_sched_costs_load_string(const char *text, size_t size, const char *name,
                                       ts_sched_costs_t *out, ts_cfg_error_t *err)
{
    if (!text || !out)
        return TS_EINVAL;
    ts_sched_costs_t c;
    memset(&c, 0, sizeof c);
    ts_status_t st = ts_config_load_string(text, size, name, costs_table, &c, NULL, err);
    if (st != TS_OK)
        return st;
    const char *key = NULL;
    char msg[256];
    st = validate(&c, msg, sizeof msg, &key);
    if (st != TS_OK) {
        if (err) {
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", name ? name : "<string>");
            int col = 0;
            err->line = key ? find_key_line(text, size, key, &col) : 0;
            err->column = err->line ? col : 0;
            snprintf(err->msg, sizeof err->msg, "%s", msg);
        }
        return st;
    }
    *out = c;
    return TS_OK;
}

ts_status_t ts_sched_costs_load(const char *path, ts_sched_costs_t *out, ts_cfg_error_t *err)
{
    if (!path || !out)
        return TS_EINVAL;
    if (err)
        memset(err, 0, sizeof *err);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->msg, sizeof err->msg, "cannot open: %s", strerror(errno));
        }
        return TS_EIO;
    }
    size_t cap = 1u << 20, n = 0;
    char *buf = ts_malloc(cap + 1);
    ts_status_t st = TS_OK;
    if (!buf) {
        st = TS_ENOMEM;
        goto out_close;
    }
    n = fread(buf, 1, cap + 1, f);
    if (ferror(f)) {
        st = TS_EIO;
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->msg, sizeof err->msg, "read error");
        }
        goto out_free;
    }
    if (n > cap) {
        st = TS_ECONFIG;
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->msg, sizeof err->msg, "cost table larger than %zu bytes", cap);
        }
        goto out_free;
    }
    st = ts_sched_costs_load_string(buf, n, path, out, err);
out_free:
    ts_free(buf);
out_close:
    fclose(f);
    return st;
}

/* YAML double-quoted string with escapes. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(f, "\\x%02x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void put_list(FILE *f, const char *indent, const char *key, const int64_t *v, size_t n)
{
    fprintf(f, "%s%s: [", indent, key);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
    fputs("]\n", f);
}

bool ts_sched_costs_cpu_mismatch(const ts_sched_costs_t *c, const char *kernels)
{
    return c && kernels && kernels[0] && c->cpu[0] && strcmp(c->backend, "cpu") == 0 &&
           strcmp(c->cpu, kernels) != 0;
}

/* dir/backend-[kernels-]params.yaml into path[size]: TS_OK when it can be
 * read, TS_ENOENT when not, TS_EINVAL when it does not fit (path "" unless TS_OK) */
static ts_status_t shipped_at(const char *dir, const char *backend, const char *kernels,
                              const char *params, char *path, size_t size)
{
    int n = kernels ? snprintf(path, size, "%s/%s-%s-%s.yaml", dir, backend, kernels, params)
                    : snprintf(path, size, "%s/%s-%s.yaml", dir, backend, params);
    ts_status_t st = n < 0 || (size_t)n >= size ? TS_EINVAL : TS_ENOENT;
    if (st == TS_ENOENT) {
        FILE *f = fopen(path, "r");
        if (f) {
            fclose(f);
            return TS_OK;
        }
    }
    path[0] = 0;
    return st;
}

ts_status_t ts_sched_costs_shipped(const char *dir, const char *params, const char *backend,
                                   const char *kernels, char *path, size_t size)
{
    if (!path || !size)
        return TS_EINVAL;
    path[0] = 0;
    if (!backend || !backend[0])
        backend = "cpu";
    if (!dir || !dir[0] || !params || !params[0] ||
        (strcmp(backend, "cpu") != 0 && strcmp(backend, "gpu") != 0))
        return TS_EINVAL;
    if (kernels && kernels[0]) {
        ts_status_t st = shipped_at(dir, backend, kernels, params, path, size);
        if (st != TS_ENOENT)
            return st;
    }
    return shipped_at(dir, backend, NULL, params, path, size);
}

ts_status_t ts_sched_costs_save(const ts_sched_costs_t *c, const char *path)
{
    if (!c || !path)
        return TS_EINVAL;
    ts_status_t st = ts_sched_costs_validate(c, NULL, 0);
    if (st != TS_OK)
        return TS_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f)
        return TS_EIO;
    fputs("# tessera cost table (core/sched/sched.h documents every key). Latencies in ns;\n"
          "# per-level lists are indexed by level 0..max_level.\n",
          f);
    fprintf(f, "format: %lld\nname: ", (long long)c->format ? (long long)c->format : 1LL);
    put_str(f, c->name);
    fputs("\nbackend: ", f);
    put_str(f, c->backend);
    fputs("\nparams: ", f);
    put_str(f, c->params);
    fprintf(f, "\nestimated: %s\nnote: ", c->estimated ? "true" : "false");
    put_str(f, c->note);
    if (c->cpu[0]) {
        fputs("\ncpu: ", f);
        put_str(f, c->cpu);
    }
    fprintf(f, "\nckks:\n  max_level: %lld\n", (long long)c->max_level);
    if (c->slots)
        fprintf(f, "  slots: %lld\n", (long long)c->slots);
    put_list(f, "  ", "add_ns", c->add_ns, c->n_add);
    put_list(f, "  ", "pmul_ns", c->pmul_ns, c->n_pmul);
    put_list(f, "  ", "cmul_ns", c->cmul_ns, c->n_cmul);
    put_list(f, "  ", "rot_ns", c->rot_ns, c->n_rot);
    put_list(f, "  ", "rescale_ns", c->rescale_ns, c->n_rescale);
    if (c->n_encode)
        put_list(f, "  ", "encode_ns", c->encode_ns, c->n_encode);
    if (c->n_bsgs_hoist) {
        put_list(f, "  ", "bsgs_hoist_ns", c->bsgs_hoist_ns, c->n_bsgs_hoist);
        put_list(f, "  ", "bsgs_baby_ns", c->bsgs_baby_ns, c->n_bsgs_baby);
        put_list(f, "  ", "bsgs_diag_ns", c->bsgs_diag_ns, c->n_bsgs_diag);
        put_list(f, "  ", "bsgs_giant_ns", c->bsgs_giant_ns, c->n_bsgs_giant);
        put_list(f, "  ", "bsgs_moddown_ns", c->bsgs_moddown_ns, c->n_bsgs_moddown);
    }
    if (c->n_diag_slots) {
        put_list(f, "  ", "diag_by_slots", c->diag_slots, c->n_diag_slots);
        put_list(f, "  ", "diag_by_slots_ns", c->diag_slots_ns, c->n_diag_slots);
    }
    fprintf(f, "bootstrap:\n  latency_ns: %lld\n  output_level: %lld\n", (long long)c->boot_ns,
            (long long)c->boot_output_level);
    if (c->boot_period_ns > 0)
        fprintf(f, "  period_slots: %lld\n  period_latency_ns: %lld\n",
                (long long)c->boot_period_slots, (long long)c->boot_period_ns);
    if (c->n_boot_slots) {
        put_list(f, "  ", "by_slots", c->boot_slots, c->n_boot_slots);
        put_list(f, "  ", "by_slots_ns", c->boot_slots_ns, c->n_boot_slots);
    }
    fputs("convert:\n", f);
    put_list(f, "  ", "batch_sizes", c->batch_sizes, c->n_batch_sizes);
    put_list(f, "  ", "extract_ns", c->extract_ns, c->n_extract);
    fprintf(f, "  extract_depth: %lld\n", (long long)c->extract_depth);
    put_list(f, "  ", "recover_ns", c->recover_ns, c->n_recover);
    if (c->roundtrip_ns)
        fprintf(f, "  roundtrip_ns: %lld\n", (long long)c->roundtrip_ns);
    fprintf(f,
            "tfhe:\n  pbs_ns: %lld\n  homcomp_ns: %lld\n  small_pmul_ns: %lld\n  trace_ns: %lld\n"
            "  n_seg: %lld\n",
            (long long)c->pbs_ns, (long long)c->homcomp_ns, (long long)c->small_pmul_ns,
            (long long)c->trace_ns, (long long)c->n_seg);
    if (c->n_lut_seg) {
        put_list(f, "  ", "lut_seg", c->lut_seg, c->n_lut_seg);
        put_list(f, "  ", "lut_value_ns", c->lut_value_ns, c->n_lut_value);
    }
    if (c->pbs_value_ns)
        fprintf(f, "  pbs_value_ns: %lld\n", (long long)c->pbs_value_ns);
    if (c->workers > 1)
        fprintf(f, "  workers: %lld\n", (long long)c->workers);
    if (fflush(f) != 0 || ferror(f))
        st = TS_EIO;
    if (fclose(f) != 0)
        st = TS_EIO;
    return st;
}

/*
 * The built-in estimate for N = 2^16, L = 13 (ROSETTA section 5.1 parameters)
 * on one x86-64 core, scaled from published Lattigo/OpenFHE figures: limb-wise
 * operations grow linearly with the limbs (level + 1), key switching adds a
 * fixed part for the special primes. Measure with `tessera bench`.
 */
void ts_sched_costs_default(ts_sched_costs_t *c)
{
    memset(c, 0, sizeof *c);
    c->format = 1;
    snprintf(c->name, sizeof c->name, "cpu-default");
    snprintf(c->backend, sizeof c->backend, "cpu");
    snprintf(c->params, sizeof c->params, "ckks-n16-l13");
    c->estimated = true;
    snprintf(c->note, sizeof c->note,
             "Estimated, not measured: scaled from published single-core figures for N=2^16, "
             "L=13. Run `tessera bench` to measure this machine's table.");
    c->max_level = 13;
    c->slots = 32768;
    size_t n = (size_t)c->max_level + 1;
    for (size_t l = 0; l < n; l++) {
        int64_t limbs = (int64_t)l + 1;
        c->add_ns[l] = 30000 * limbs;
        c->pmul_ns[l] = 80000 * limbs;
        c->cmul_ns[l] = 12000000 * limbs + 10000000;
        c->rot_ns[l] = 11000000 * limbs + 8000000;
        c->rescale_ns[l] = 1500000 * limbs;
        c->recover_ns[l] = INT64_C(16000000000) + INT64_C(300000000) * (int64_t)l;
    }
    c->n_add = c->n_pmul = c->n_cmul = c->n_rot = c->n_rescale = c->n_recover = n;
    c->boot_ns = INT64_C(25000000000);
    c->boot_output_level = 13;
    static const int64_t sizes[] = {1, 4, 16, 64, 256};
    c->n_batch_sizes = c->n_extract = sizeof sizes / sizeof sizes[0];
    for (size_t i = 0; i < c->n_batch_sizes; i++) {
        c->batch_sizes[i] = sizes[i];
        c->extract_ns[i] = INT64_C(3000000000) + 12000000 * sizes[i];
    }
    c->extract_depth = 3;
    c->pbs_ns = 40000000;
    c->homcomp_ns = 150000000;
    c->small_pmul_ns = 100000;
    c->trace_ns = 11000000;
    c->n_seg = 4;
}

static void extend_list(int64_t *v, size_t *n, int max_level)
{
    if (*n == 0 || *n >= (size_t)max_level + 1)
        return;
    size_t top = *n - 1;
    int64_t step = top > 0 && v[top] > v[top - 1] ? v[top] - v[top - 1] : 0;
    for (size_t l = top + 1; l <= (size_t)max_level; l++)
        v[l] = v[top] + (int64_t)(l - top) * step;
    *n = (size_t)max_level + 1;
}

void ts_sched_costs_extend(ts_sched_costs_t *c, int max_level)
{
    if (!c || max_level <= c->max_level)
        return;
    if (max_level > TS_SCHED_MAX_LEVELS - 1)
        max_level = TS_SCHED_MAX_LEVELS - 1;
    extend_list(c->add_ns, &c->n_add, max_level);
    extend_list(c->pmul_ns, &c->n_pmul, max_level);
    extend_list(c->cmul_ns, &c->n_cmul, max_level);
    extend_list(c->rot_ns, &c->n_rot, max_level);
    extend_list(c->rescale_ns, &c->n_rescale, max_level);
    extend_list(c->recover_ns, &c->n_recover, max_level);
    extend_list(c->encode_ns, &c->n_encode, max_level);
    extend_list(c->bsgs_hoist_ns, &c->n_bsgs_hoist, max_level);
    extend_list(c->bsgs_baby_ns, &c->n_bsgs_baby, max_level);
    extend_list(c->bsgs_diag_ns, &c->n_bsgs_diag, max_level);
    extend_list(c->bsgs_giant_ns, &c->n_bsgs_giant, max_level);
    extend_list(c->bsgs_moddown_ns, &c->n_bsgs_moddown, max_level);
    c->max_level = max_level;
}

double ts_sched_costs_value_ns(const ts_sched_costs_t *c, int seg)
{
    if (seg == TS_SCHED_LUT_PBS)
        return c->pbs_value_ns > 0 ? (double)c->pbs_value_ns
                                   : (double)c->pbs_ns + (double)c->trace_ns;
    if (seg <= 0)
        seg = (int)c->n_seg;
    for (size_t i = 0; i < c->n_lut_seg && i < c->n_lut_value; i++)
        if (c->lut_seg[i] == seg)
            return (double)c->lut_value_ns[i];
    double s = (double)seg;
    return (s - 1) * (double)c->homcomp_ns + (s + 2) * (double)c->pbs_ns +
           (s + 1) * ((double)c->small_pmul_ns + (double)c->trace_ns);
}

double ts_sched_costs_lut_ns(const ts_sched_costs_t *c)
{
    return ts_sched_costs_value_ns(c, 0);
}

static double extract_for(const ts_sched_costs_t *c, double b)
{
    size_t n = c->n_batch_sizes;
    if (n == 1)
        return (double)c->extract_ns[0] *
               (b / (double)c->batch_sizes[0] > 1 ? b / (double)c->batch_sizes[0] : 1);
    size_t i = 0;
    while (i + 2 < n && b > (double)c->batch_sizes[i + 1])
        i++;
    double x0 = (double)c->batch_sizes[i], x1 = (double)c->batch_sizes[i + 1];
    double y0 = (double)c->extract_ns[i], y1 = (double)c->extract_ns[i + 1];
    if (b <= x0)
        return y0;
    double y = y0 + (y1 - y0) * (b - x0) / (x1 - x0);
    return y > 0 ? y : 0;
}

double ts_sched_costs_convert_ns(const ts_sched_costs_t *c, uint32_t n, uint32_t n_ct, int level)
{
    if (level < 0)
        level = 0;
    if (level > c->max_level)
        level = (int)c->max_level;
    double bmax = (double)c->batch_sizes[c->n_batch_sizes - 1];
    double batches = ceil((double)n / bmax);
    if (batches < (double)n_ct)
        batches = (double)n_ct;
    if (batches < 1)
        batches = 1;
    if (c->roundtrip_ns > 0)
        return batches * (double)c->roundtrip_ns;
    double per = ceil((double)n / batches);
    return batches * (extract_for(c, per) + (double)c->recover_ns[level]);
}

/* A latency list by slot count at s: the entry, log-linear between two
 * entries, the nearest entry outside them (n > 0). */
static double by_slots(const int64_t *slots, const int64_t *ns, size_t n, int64_t s)
{
    if (s <= slots[0])
        return (double)ns[0];
    for (size_t i = 1; i < n; i++)
        if (s <= slots[i]) {
            double l0 = log2((double)slots[i - 1]), l1 = log2((double)slots[i]);
            double t = (log2((double)s) - l0) / (l1 - l0);
            return (1.0 - t) * (double)ns[i - 1] + t * (double)ns[i];
        }
    return (double)ns[n - 1];
}

double ts__sched_boot_ns(const ts_sched_costs_t *c, const ts_sched_op_t *op)
{
    if (!op->boot_log_slots || op->boot_log_slots > 30)
        return (double)c->boot_ns;
    int64_t s = INT64_C(1) << op->boot_log_slots;
    if (c->boot_period_ns > 0 && c->boot_period_slots == s)
        return (double)c->boot_period_ns;
    size_t n = c->n_boot_slots < c->n_boot_slots_ns ? c->n_boot_slots : c->n_boot_slots_ns;
    if (n == 0)
        return (double)c->boot_ns;
    return by_slots(c->boot_slots, c->boot_slots_ns, n, s);
}

double ts_sched_costs_encode_scale(const ts_sched_costs_t *c, int log_slots)
{
    size_t n = c->n_diag_slots < c->n_diag_slots_ns ? c->n_diag_slots : c->n_diag_slots_ns;
    if (!n || log_slots <= 0 || log_slots > 30 || c->slots < 2)
        return 1.0;
    double own = by_slots(c->diag_slots, c->diag_slots_ns, n, c->slots);
    double at = by_slots(c->diag_slots, c->diag_slots_ns, n, INT64_C(1) << log_slots);
    return own > 0 ? at / own : 1.0;
}

/* All of an implementation's operations at level l, its encodings (and the
 * diagonals' products with them) es times the table's. */
static double level_ns(const ts_sched_costs_t *c, const ts_sched_impl_t *im, int l, double es)
{
    double enc = (size_t)l < c->n_encode ? (double)c->encode_ns[l] * es : 0.0;
    double bsgs;
    if ((size_t)l < c->n_bsgs_hoist)
        bsgs = im->n_hoist * (double)c->bsgs_hoist_ns[l] + im->n_baby * (double)c->bsgs_baby_ns[l] +
               im->n_diag * (double)c->bsgs_diag_ns[l] * es +
               im->n_giant * (double)c->bsgs_giant_ns[l] +
               im->n_moddown * (double)c->bsgs_moddown_ns[l];
    else /* not measured: rotations, products and encodings of their own */
        bsgs = (im->n_baby + im->n_giant) * (double)c->rot_ns[l] +
               im->n_diag * ((double)c->pmul_ns[l] + enc);
    return im->n_add * (double)c->add_ns[l] + im->n_pmul * (double)c->pmul_ns[l] +
           im->n_cmul * (double)c->cmul_ns[l] + im->n_rot * (double)c->rot_ns[l] +
           im->n_rescale * (double)c->rescale_ns[l] + im->n_encode * enc + bsgs;
}

double ts_sched_costs_impl_ns(const ts_sched_costs_t *c, const ts_sched_impl_t *im, int level,
                              int *out_level, uint32_t *n_boot)
{
    return ts_sched_costs_impl_ns_slots(c, im, level, 0, out_level, n_boot);
}

double ts_sched_costs_impl_ns_slots(const ts_sched_costs_t *c, const ts_sched_impl_t *im, int level,
                                    int log_slots, int *out_level, uint32_t *n_boot)
{
    double es = ts_sched_costs_encode_scale(c, log_slots);
    uint32_t boots = 0;
    int cur = level;
    double ns = 0;
    if (cur > c->max_level)
        cur = (int)c->max_level;
    if (im->depth == 0) {
        ns = level_ns(c, im, cur < 0 ? 0 : cur, es);
    } else {
        double d = im->depth;
        for (int j = 0; j < im->depth; j++) {
            if (cur <= 0) { /* levels ran out: bootstrap inside the implementation */
                ns += (double)c->boot_ns;
                boots++;
                cur = (int)c->boot_output_level;
            }
            ns += level_ns(c, im, cur, es) / d;
            cur--;
        }
    }
    if (out_level)
        *out_level = cur;
    if (n_boot)
        *n_boot = boots;
    return ns;
}

uint32_t ts__sched_conversions(const ts_sched_costs_t *c, const ts_sched_op_t *op)
{
    if (op->n_conv)
        return op->n_conv;
    double bmax = (double)c->batch_sizes[c->n_batch_sizes - 1];
    double batches = ceil((double)op->n_values / bmax);
    if (batches < (double)op->n_ct)
        batches = (double)op->n_ct;
    if (batches < 1)
        batches = 1;
    return batches > UINT32_MAX ? UINT32_MAX : (uint32_t)batches;
}

double ts__sched_tfhe_ns(const ts_sched_costs_t *c, const ts_sched_op_t *op, int level)
{
    double conv;
    /* the values of each conversion, `workers` at a time */
    double nconv = (double)ts__sched_conversions(c, op);
    double rounds = (double)op->n_values;
    if (c->workers > 1 && nconv >= 1)
        rounds = nconv * ceil(ceil((double)op->n_values / nconv) / (double)c->workers);
    if (!op->n_conv) {
        conv = ts_sched_costs_convert_ns(c, op->n_values, op->n_ct, level);
    } else if (c->roundtrip_ns > 0) {
        conv = (double)op->n_conv * (double)c->roundtrip_ns;
    } else {
        int l = level < 0 ? 0 : level > c->max_level ? (int)c->max_level : level;
        double per = ceil((double)op->n_values / (double)op->n_conv);
        conv = (double)op->n_conv * (extract_for(c, per) + (double)c->recover_ns[l]);
    }
    return conv + rounds * ts_sched_costs_value_ns(c, op->lut_seg);
}

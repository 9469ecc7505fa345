/*
 * The YAML configuration loader (libyaml event parser) driven by directive
 * tables. Policy: the root is a mapping; every key must be known to the table
 * at its level; no duplicates; no anchors, aliases or tags; scalars convert to
 * the directive's type with range checks; documents larger than max_bytes or
 * nested deeper than max_depth are refused; exactly one document. Every error
 * names file:line:column (1-based).
 */
#include "core/base/base.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#define DEFAULT_MAX_BYTES (1u << 20)
#define DEFAULT_MAX_DEPTH 16
#define MAX_KEYS_PER_MAP  128

typedef struct {
    yaml_parser_t parser;
    ts_cfg_error_t *err;
    const char *name;
    int max_depth;
} loader_t;

static ts_status_t fail_at(loader_t *L, yaml_mark_t mark, const char *fmt, ...) TS_PRINTF(3, 4);

static ts_status_t fail_at(loader_t *L, yaml_mark_t mark, const char *fmt, ...)
{
    if (L->err) {
        snprintf(L->err->file, sizeof L->err->file, "%s", L->name);
        L->err->line = (int)mark.line + 1;
        L->err->column = (int)mark.column + 1;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->err->msg, sizeof L->err->msg, fmt, ap);
        va_end(ap);
    }
    return TS_ECONFIG;
}

/* Next event, turning parser errors, aliases, anchors and tags into errors. */
static ts_status_t next_event(loader_t *L, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&L->parser, ev)) {
        yaml_mark_t m = L->parser.problem_mark;
        return fail_at(L, m, "YAML syntax error: %s%s%s",
                       L->parser.problem ? L->parser.problem : "unknown problem",
                       L->parser.context ? " " : "", L->parser.context ? L->parser.context : "");
    }
    const char *what = NULL;
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        what = "aliases (*name) are not allowed";
        break;
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor)
            what = "anchors (&name) are not allowed";
        else if (ev->data.scalar.tag)
            what = "explicit tags (!tag) are not allowed";
        break;
    case YAML_SEQUENCE_START_EVENT:
        if (ev->data.sequence_start.anchor)
            what = "anchors (&name) are not allowed";
        else if (ev->data.sequence_start.tag)
            what = "explicit tags (!tag) are not allowed";
        break;
    case YAML_MAPPING_START_EVENT:
        if (ev->data.mapping_start.anchor)
            what = "anchors (&name) are not allowed";
        else if (ev->data.mapping_start.tag)
            what = "explicit tags (!tag) are not allowed";
        break;
    default:
        break;
    }
    if (what) {
        ts_status_t st = fail_at(L, ev->start_mark, "%s", what);
        yaml_event_delete(ev);
        return st;
    }
    return TS_OK;
}

static const char *type_name(ts_cfg_type_t t)
{
    switch (t) {
    case TS_CFG_INT:
        return "an integer";
    case TS_CFG_DOUBLE:
        return "a number";
    case TS_CFG_BOOL:
        return "a boolean (true/false)";
    case TS_CFG_STRING:
        return "a string";
    case TS_CFG_INTLIST:
        return "a list of integers";
    case TS_CFG_SECTION:
        return "a mapping";
    case TS_CFG_ENUM:
        return "one of a fixed set of words";
    }
    return "a value";
}

static bool parse_int(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 0);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static ts_status_t int_in_range(loader_t *L, const ts_cfg_directive_t *d, yaml_event_t *ev,
                                const char *s, int64_t *out)
{
    if (!parse_int(s, out))
        return fail_at(L, ev->start_mark, "'%s' expects an integer, got '%s'", d->name, s);
    if (d->min < d->max && (*out < d->min || *out > d->max))
        return fail_at(L, ev->start_mark, "'%s' = %lld is out of range [%lld, %lld]", d->name,
                       (long long)*out, (long long)d->min, (long long)d->max);
    return TS_OK;
}

static ts_status_t store_scalar(loader_t *L, const ts_cfg_directive_t *d, uint8_t *base,
                                yaml_event_t *ev)
{
    const char *s = (const char *)ev->data.scalar.value;
    void *field = base + d->offset;
    switch (d->type) {
    case TS_CFG_INT: {
        int64_t v;
        ts_status_t st = int_in_range(L, d, ev, s, &v);
        if (st != TS_OK)
            return st;
        *(int64_t *)field = v;
        break;
    }
    case TS_CFG_DOUBLE: {
        errno = 0;
        char *end;
        double v = strtod(s, &end);
        if (!*s || errno || *end || !isfinite(v))
            return fail_at(L, ev->start_mark, "'%s' expects a finite number, got '%s'", d->name, s);
        if (d->dmin < d->dmax && (v < d->dmin || v > d->dmax))
            return fail_at(L, ev->start_mark, "'%s' = %g is out of range [%g, %g]", d->name, v,
                           d->dmin, d->dmax);
        *(double *)field = v;
        break;
    }
    case TS_CFG_BOOL: {
        static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no",
                                                                               "off"};
        for (int i = 0; i < 3; i++) {
            if (strcasecmp(s, yes[i]) == 0) {
                *(bool *)field = true;
                goto validate;
            }
            if (strcasecmp(s, no[i]) == 0) {
                *(bool *)field = false;
                goto validate;
            }
        }
        return fail_at(L, ev->start_mark, "'%s' expects true or false, got '%s'", d->name, s);
    }
    case TS_CFG_STRING: {
        size_t n = ev->data.scalar.length;
        if (d->cap == 0 || n >= d->cap)
            return fail_at(L, ev->start_mark, "'%s' is too long (%zu bytes, at most %zu)", d->name,
                           n, d->cap ? d->cap - 1 : 0);
        if (memchr(s, '\0', n))
            return fail_at(L, ev->start_mark, "'%s' contains a NUL byte", d->name);
        memcpy(field, s, n);
        ((char *)field)[n] = '\0';
        break;
    }
    case TS_CFG_ENUM: {
        for (int i = 0; d->choices && d->choices[i]; i++) {
            if (strcmp(s, d->choices[i]) == 0) {
                *(int *)field = i;
                goto validate;
            }
        }
        char list[192] = "";
        for (int i = 0; d->choices && d->choices[i]; i++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", d->choices[i]);
        }
        return fail_at(L, ev->start_mark, "'%s' must be one of: %s (got '%s')", d->name, list, s);
    }
    default:
        return fail_at(L, ev->start_mark, "'%s' expects %s, got a scalar", d->name,
                       type_name(d->type));
    }
validate:
    if (d->validate) {
        char msg[200] = "invalid value";
        if (d->validate(field, msg, sizeof msg) != TS_OK)
            return fail_at(L, ev->start_mark, "'%s': %s", d->name, msg);
    }
    return TS_OK;
}

static ts_status_t parse_mapping(loader_t *L, const ts_cfg_directive_t *table, uint8_t *base,
                                 yaml_mark_t start, int depth);

static ts_status_t parse_list(loader_t *L, const ts_cfg_directive_t *d, uint8_t *base,
                              yaml_mark_t start, int depth)
{
    if (depth > L->max_depth)
        return fail_at(L, start, "nesting deeper than %d levels", L->max_depth);
    int64_t *items = (int64_t *)(base + d->offset);
    size_t n = 0;
    for (;;) {
        yaml_event_t ev;
        ts_status_t st = next_event(L, &ev);
        if (st != TS_OK)
            return st;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            st = fail_at(L, ev.start_mark, "'%s' items must be integers (no nested lists or maps)",
                         d->name);
            yaml_event_delete(&ev);
            return st;
        }
        if (n >= d->cap) {
            st = fail_at(L, ev.start_mark, "'%s' has more than %zu items", d->name, d->cap);
            yaml_event_delete(&ev);
            return st;
        }
        int64_t v;
        st = int_in_range(L, d, &ev, (const char *)ev.data.scalar.value, &v);
        yaml_event_delete(&ev);
        if (st != TS_OK)
            return st;
        items[n++] = v;
    }
    *(size_t *)(base + d->count_offset) = n;
    if (d->validate) {
        char msg[200] = "invalid list";
        if (d->validate(items, msg, sizeof msg) != TS_OK)
            return fail_at(L, start, "'%s': %s", d->name, msg);
    }
    return TS_OK;
}

static ts_status_t parse_value(loader_t *L, const ts_cfg_directive_t *d, uint8_t *base, int depth)
{
    yaml_event_t ev;
    ts_status_t st = next_event(L, &ev);
    if (st != TS_OK)
        return st;
    yaml_mark_t mark = ev.start_mark;
    yaml_event_type_t type = ev.type;
    if (type == YAML_SCALAR_EVENT) {
        st = store_scalar(L, d, base, &ev);
        yaml_event_delete(&ev);
        return st;
    }
    yaml_event_delete(&ev);
    if (type == YAML_SEQUENCE_START_EVENT && d->type == TS_CFG_INTLIST)
        return parse_list(L, d, base, mark, depth + 1);
    if (type == YAML_MAPPING_START_EVENT && d->type == TS_CFG_SECTION && d->sub) {
        if (depth + 1 > L->max_depth)
            return fail_at(L, mark, "nesting deeper than %d levels", L->max_depth);
        return parse_mapping(L, d->sub, base + d->offset, mark, depth + 1);
    }
    if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT)
        return fail_at(L, mark, "'%s' expects %s, got a %s", d->name, type_name(d->type),
                       type == YAML_SEQUENCE_START_EVENT ? "list" : "mapping");
    return fail_at(L, mark, "'%s': unexpected YAML structure", d->name);
}

static ts_status_t parse_mapping(loader_t *L, const ts_cfg_directive_t *table, uint8_t *base,
                                 yaml_mark_t start, int depth)
{
    const ts_cfg_directive_t *seen[MAX_KEYS_PER_MAP];
    size_t nseen = 0;
    for (;;) {
        yaml_event_t ev;
        ts_status_t st = next_event(L, &ev);
        if (st != TS_OK)
            return st;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            st = fail_at(L, ev.start_mark, "mapping keys must be plain words");
            yaml_event_delete(&ev);
            return st;
        }
        const char *key = (const char *)ev.data.scalar.value;
        const ts_cfg_directive_t *d = table;
        while (d->name && strcmp(d->name, key) != 0)
            d++;
        if (!d->name) {
            char known[160] = "";
            for (const ts_cfg_directive_t *k = table; k->name; k++) {
                size_t used = strlen(known);
                if (used + strlen(k->name) + 6 >= sizeof known) {
                    snprintf(known + used, sizeof known - used, ", ...");
                    break;
                }
                snprintf(known + used, sizeof known - used, "%s%s", k == table ? "" : ", ",
                         k->name);
            }
            st = fail_at(L, ev.start_mark, "unknown key '%.60s' (known here: %s)", key, known);
            yaml_event_delete(&ev);
            return st;
        }
        for (size_t i = 0; i < nseen; i++) {
            if (seen[i] == d) {
                st = fail_at(L, ev.start_mark, "duplicate key '%s'", d->name);
                yaml_event_delete(&ev);
                return st;
            }
        }
        yaml_event_delete(&ev);
        if (nseen < MAX_KEYS_PER_MAP)
            seen[nseen++] = d;
        st = parse_value(L, d, base, depth);
        if (st != TS_OK)
            return st;
    }
    for (const ts_cfg_directive_t *d = table; d->name; d++) {
        if (!d->required)
            continue;
        bool found = false;
        for (size_t i = 0; i < nseen && !found; i++)
            found = seen[i] == d;
        if (!found)
            return fail_at(L, start, "required key '%s' is missing", d->name);
    }
    return TS_OK;
}

static ts_status_t expect(loader_t *L, yaml_event_type_t type, const char *what, yaml_event_t *out)
{
    ts_status_t st = next_event(L, out);
    if (st != TS_OK)
        return st;
    if (out->type != type) {
        st = fail_at(L, out->start_mark, "expected %s", what);
        yaml_event_delete(out);
    }
    return st;
}

ts_status_t ts_config_load_string(const char *text, size_t size, const char *name,
                                  const ts_cfg_directive_t *table, void *out,
                                  const ts_cfg_limits_t *limits, ts_cfg_error_t *err)
{
    loader_t L = {.err = err, .name = name ? name : "<string>"};
    size_t max_bytes = limits && limits->max_bytes ? limits->max_bytes : DEFAULT_MAX_BYTES;
    L.max_depth = limits && limits->max_depth > 0 ? limits->max_depth : DEFAULT_MAX_DEPTH;
    if (err)
        memset(err, 0, sizeof *err);
    if (!text || !table || !out)
        return TS_EINVAL;
    if (size > max_bytes) {
        yaml_mark_t m = {0, 0, 0};
        return fail_at(&L, m, "document is %zu bytes, more than the limit of %zu", size, max_bytes);
    }
    if (!yaml_parser_initialize(&L.parser))
        return TS_ENOMEM;
    yaml_parser_set_input_string(&L.parser, (const unsigned char *)text, size);

    yaml_event_t ev;
    ts_status_t st = expect(&L, YAML_STREAM_START_EVENT, "a YAML stream", &ev);
    if (st != TS_OK)
        goto out_parser;
    yaml_event_delete(&ev);
    st = next_event(&L, &ev);
    if (st != TS_OK)
        goto out_parser;
    if (ev.type == YAML_STREAM_END_EVENT) { /* empty document: keep defaults */
        yaml_mark_t m = ev.start_mark;
        yaml_event_delete(&ev);
        for (const ts_cfg_directive_t *d = table; d->name && st == TS_OK; d++)
            if (d->required)
                st = fail_at(&L, m, "the document is empty; required key '%s' is missing", d->name);
        goto out_parser;
    }
    if (ev.type != YAML_DOCUMENT_START_EVENT) {
        st = fail_at(&L, ev.start_mark, "expected a YAML document");
        yaml_event_delete(&ev);
        goto out_parser;
    }
    yaml_event_delete(&ev);
    st = next_event(&L, &ev);
    if (st != TS_OK)
        goto out_parser;
    if (ev.type != YAML_MAPPING_START_EVENT) {
        st = fail_at(&L, ev.start_mark, "the document must be a mapping of key: value lines");
        yaml_event_delete(&ev);
        goto out_parser;
    }
    yaml_mark_t root = ev.start_mark;
    yaml_event_delete(&ev);
    st = parse_mapping(&L, table, out, root, 1);
    if (st != TS_OK)
        goto out_parser;
    st = expect(&L, YAML_DOCUMENT_END_EVENT, "the end of the document", &ev);
    if (st != TS_OK)
        goto out_parser;
    yaml_event_delete(&ev);
    st = expect(&L, YAML_STREAM_END_EVENT, "a single document (found more than one)", &ev);
    if (st != TS_OK)
        goto out_parser;
    yaml_event_delete(&ev);
out_parser:
    yaml_parser_delete(&L.parser);
    return st;
}

ts_status_t ts_config_load_file(const char *path, const ts_cfg_directive_t *table, void *out,
                                const ts_cfg_limits_t *limits, ts_cfg_error_t *err)
{
    size_t max_bytes = limits && limits->max_bytes ? limits->max_bytes : DEFAULT_MAX_BYTES;
    if (err)
        memset(err, 0, sizeof *err);
    if (!path)
        return TS_EINVAL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->msg, sizeof err->msg, "cannot open: %s", strerror(errno));
        }
        return errno == ENOENT ? TS_ENOENT : TS_EIO;
    }
    ts_status_t st = TS_OK;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->msg, sizeof err->msg, "not a regular file");
        }
        st = TS_ECONFIG;
        goto out_close;
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->msg, sizeof err->msg, "file is %lld bytes, more than the limit of %zu",
                     (long long)sb.st_size, max_bytes);
        }
        st = TS_ECONFIG;
        goto out_close;
    }
    char *buf = ts_malloc((size_t)sb.st_size + 1);
    if (!buf) {
        st = TS_ENOMEM;
        goto out_close;
    }
    size_t n = fread(buf, 1, (size_t)sb.st_size + 1, f);
    if (ferror(f) || n > (size_t)sb.st_size) {
        if (err) {
            snprintf(err->file, sizeof err->file, "%s", path);
            snprintf(err->msg, sizeof err->msg, "read failed or file changed while reading");
        }
        st = ferror(f) ? TS_EIO : TS_ECONFIG;
    } else {
        st = ts_config_load_string(buf, n, path, table, out, limits, err);
    }
    ts_free(buf);
out_close:
    fclose(f);
    return st;
}

void ts_cfg_error_format(const ts_cfg_error_t *err, char *buf, size_t size)
{
    if (!err || !size)
        return;
    if (err->line > 0)
        snprintf(buf, size, "%s:%d:%d: %s", err->file, err->line, err->column, err->msg);
    else
        snprintf(buf, size, "%s: %s", err->file[0] ? err->file : "<config>", err->msg);
}

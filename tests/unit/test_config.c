/* core/base YAML loader: valid documents, and every kind of bad one with its position. */
#include "tests/unit/ts_test.h"

#include <stddef.h>
#include <unistd.h>

typedef struct {
    int64_t port;
    char name[16];
} inner_t;

typedef struct {
    int64_t workers;
    double ratio;
    bool verbose;
    char host[32];
    int64_t primes[4];
    size_t nprimes;
    int mode;
    inner_t inner;
} conf_t;

static ts_status_t even_only(const void *field, char *msg, size_t size)
{
    if (*(const int64_t *)field % 2 != 0) {
        snprintf(msg, size, "must be even");
        return TS_EINVAL;
    }
    return TS_OK;
}

static const char *const modes[] = {"cpu", "gpu", "auto", NULL};

static const ts_cfg_directive_t inner_table[] = {
    {.name = "port",
     .type = TS_CFG_INT,
     .offset = offsetof(inner_t, port),
     .min = 1,
     .max = 65535,
     .required = true},
    {.name = "name", .type = TS_CFG_STRING, .offset = offsetof(inner_t, name), .cap = 16},
    {0},
};

static const ts_cfg_directive_t table[] = {
    {.name = "workers",
     .type = TS_CFG_INT,
     .offset = offsetof(conf_t, workers),
     .min = 1,
     .max = 64,
     .validate = even_only},
    {.name = "ratio",
     .type = TS_CFG_DOUBLE,
     .offset = offsetof(conf_t, ratio),
     .dmin = 0,
     .dmax = 1},
    {.name = "verbose", .type = TS_CFG_BOOL, .offset = offsetof(conf_t, verbose)},
    {.name = "host",
     .type = TS_CFG_STRING,
     .offset = offsetof(conf_t, host),
     .cap = 32,
     .required = true},
    {.name = "primes",
     .type = TS_CFG_INTLIST,
     .offset = offsetof(conf_t, primes),
     .cap = 4,
     .count_offset = offsetof(conf_t, nprimes),
     .min = 2,
     .max = 1ll << 61},
    {.name = "mode", .type = TS_CFG_ENUM, .offset = offsetof(conf_t, mode), .choices = modes},
    {.name = "inner",
     .type = TS_CFG_SECTION,
     .offset = offsetof(conf_t, inner),
     .sub = inner_table},
    {0},
};

/* Load `text`; on failure return the formatted error in a static buffer. */
static const char *load(const char *text, conf_t *c, ts_status_t *st_out)
{
    static char msg[600];
    ts_cfg_error_t err;
    memset(c, 0, sizeof *c);
    c->workers = 2;
    ts_status_t st = ts_config_load_string(text, strlen(text), "t.yaml", table, c, NULL, &err);
    if (st_out)
        *st_out = st;
    if (st == TS_OK)
        return NULL;
    ts_cfg_error_format(&err, msg, sizeof msg);
    return msg;
}

#define EXPECT_ERROR(text, where, what)                                                            \
    do {                                                                                           \
        conf_t c__;                                                                                \
        ts_status_t st__;                                                                          \
        const char *m__ = load(text, &c__, &st__);                                                 \
        ck_assert_msg(m__ != NULL, "accepted bad config: %s", text);                               \
        ck_assert_int_eq(st__, TS_ECONFIG);                                                        \
        ck_assert_msg(strstr(m__, where) && strstr(m__, what), "error '%s' lacks '%s'/'%s'", m__,  \
                      where, what);                                                                \
    } while (0)

START_TEST(test_valid)
{
    conf_t c;
    const char *m = load("# comment\n"
                         "host: example.org\n"
                         "workers: 8\n"
                         "ratio: 0.25\n"
                         "verbose: yes\n"
                         "primes: [3, 0x11, 1152921504606748673]\n"
                         "mode: gpu\n"
                         "inner:\n"
                         "  port: 443\n"
                         "  name: tls\n",
                         &c, NULL);
    ck_assert_msg(m == NULL, "%s", m);
    ck_assert_str_eq(c.host, "example.org");
    ck_assert_int_eq(c.workers, 8);
    ck_assert(fabs(c.ratio - 0.25) < 1e-15);
    ck_assert(c.verbose);
    ck_assert_uint_eq(c.nprimes, 3);
    ck_assert_int_eq(c.primes[1], 17);
    ck_assert_int_eq(c.primes[2], 1152921504606748673ll);
    ck_assert_int_eq(c.mode, 1);
    ck_assert_int_eq(c.inner.port, 443);
    ck_assert_str_eq(c.inner.name, "tls");
    /* Absent keys keep their defaults. */
    m = load("host: h\n", &c, NULL);
    ck_assert_msg(m == NULL, "%s", m);
    ck_assert_int_eq(c.workers, 2);
}
END_TEST

START_TEST(test_errors_with_positions)
{
    EXPECT_ERROR("host: h\nwrokers: 4\n", "t.yaml:2:1", "unknown key 'wrokers'");
    EXPECT_ERROR("host: h\nworkers: 4\nworkers: 6\n", "t.yaml:3:1", "duplicate key 'workers'");
    EXPECT_ERROR("host: h\nworkers: four\n", "t.yaml:2:10", "expects an integer");
    EXPECT_ERROR("host: h\nworkers: 100\n", "t.yaml:2:10", "out of range");
    EXPECT_ERROR("host: h\nworkers: 3\n", "t.yaml:2:10", "must be even");
    EXPECT_ERROR("host: h\nratio: 1.5\n", "t.yaml:2:8", "out of range");
    EXPECT_ERROR("host: h\nratio: nan\n", "t.yaml:2:8", "finite number");
    EXPECT_ERROR("host: h\nverbose: maybe\n", "t.yaml:2:10", "true or false");
    EXPECT_ERROR("host: h\nmode: tpu\n", "t.yaml:2:7", "one of: cpu, gpu, auto");
    EXPECT_ERROR("host: h\nprimes: [2, 3, 5, 7, 11]\n", "t.yaml:2:22", "more than 4 items");
    EXPECT_ERROR("host: h\nprimes: [2, [3]]\n", "t.yaml:2:13", "items must be integers");
    EXPECT_ERROR("host: h\nprimes: 5\n", "t.yaml:2:9", "a list of integers");
    EXPECT_ERROR("host: h\nworkers: [2]\n", "t.yaml:2:10", "expects an integer, got a list");
    EXPECT_ERROR("host: h\ninner:\n  name: x\n", "t.yaml:3:3", "required key 'port'");
    EXPECT_ERROR("workers: 2\n", "t.yaml:1:1", "required key 'host'");
    EXPECT_ERROR("host: this-host-name-is-far-too-long-for-the-field\n", "t.yaml:1:7", "too long");
    EXPECT_ERROR("host: h\nmode: \"cpu\nworkers: 2\n", "t.yaml:", "YAML syntax error");
    EXPECT_ERROR("host: h\n\tworkers: 2\n", "t.yaml:2", "YAML syntax error");
    EXPECT_ERROR("- a\n- b\n", "t.yaml:1:1", "must be a mapping");
    EXPECT_ERROR("", "t.yaml", "required key 'host'");
    EXPECT_ERROR("host: h\n---\nhost: g\n", "t.yaml:2", "single document");
}
END_TEST

START_TEST(test_hostile_documents)
{
    /* Aliases (billion laughs), anchors and tags are refused outright. */
    EXPECT_ERROR("host: &a h\n", "t.yaml:1:7", "anchors");
    EXPECT_ERROR("inner: &x {port: 1}\nhost: h\n", "t.yaml:1:8", "anchors");
    EXPECT_ERROR("host: h\nmode: *a\n", "t.yaml:2:7", "aliases");
    EXPECT_ERROR("host: !!str h\n", "t.yaml:1:7", "tags");
    EXPECT_ERROR("host: h\n{a: 1}: 2\n", "t.yaml:2:1", "plain words");
    /* Deep nesting: refused at the cap even where the table would allow it. */
    conf_t c;
    char deep[4096] = "host: h\nprimes: ";
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    const char *m = load(deep, &c, NULL);
    ck_assert_ptr_nonnull(m);
    /* Size cap: a 2 MiB document is refused before parsing. */
    size_t n = 2u << 20;
    char *huge = malloc(n + 1);
    memset(huge, '#', n);
    huge[n] = '\0';
    ts_cfg_error_t err;
    ck_assert_ts_status(ts_config_load_string(huge, n, "big.yaml", table, &c, NULL, &err),
                        TS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than the limit"));
    ts_cfg_limits_t lim = {.max_bytes = 16, .max_depth = 1};
    ck_assert_ts_status(
        ts_config_load_string("host: hello-world\n", 18, "s", table, &c, &lim, &err), TS_ECONFIG);
    free(huge);
    /* Garbage bytes never crash. */
    char junk[512];
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (char)((i * 7919 + (size_t)round * 104729) % 251 + 1);
        ts_config_load_string(junk, sizeof junk, "junk", table, &c, NULL, &err);
    }
}
END_TEST

/* A self-similar table: sections nest as deep as the document goes. */
typedef struct node {
    int64_t v;
    char pad[8];
} node_t;
static ts_cfg_directive_t node_table[3];

START_TEST(test_nesting_cap)
{
    node_table[0] = (ts_cfg_directive_t){.name = "v", .type = TS_CFG_INT, .offset = 0};
    node_table[1] = (ts_cfg_directive_t){
        .name = "child", .type = TS_CFG_SECTION, .offset = 0, .sub = node_table};
    node_table[2] = (ts_cfg_directive_t){0};
    char doc[2048] = "";
    for (int d = 0; d < 30; d++) {
        for (int i = 0; i < d; i++)
            strcat(doc, " ");
        strcat(doc, "child:\n");
    }
    for (int i = 0; i < 30; i++)
        strcat(doc, " ");
    strcat(doc, "v: 1\n");
    node_t n = {0};
    ts_cfg_error_t err;
    ts_cfg_limits_t lim = {.max_depth = 8};
    ck_assert_ts_status(ts_config_load_string(doc, strlen(doc), "deep", node_table, &n, &lim, &err),
                        TS_ECONFIG);
    ck_assert_msg(strstr(err.msg, "nesting deeper than 8"), "%s", err.msg);
    ck_assert_int_eq(err.line, 9); /* root mapping = depth 1, line k = depth k */
    lim.max_depth = 64;
    ck_assert_ts_ok(ts_config_load_string(doc, strlen(doc), "deep", node_table, &n, &lim, &err));
    ck_assert_int_eq(n.v, 1);
}
END_TEST

START_TEST(test_files)
{
    char path[] = "/tmp/ts_cfg_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "host: h\nworkers: 4\nverbose: on\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
    close(fd);
    conf_t c = {0};
    ts_cfg_error_t err;
    ck_assert_ts_ok(ts_config_load_file(path, table, &c, NULL, &err));
    ck_assert_int_eq(c.workers, 4);
    ck_assert(c.verbose);

    /* Every allocation of the loader can fail without leaking. */
    int64_t live = ts_alloc_live();
    for (uint64_t n = 1; n < 10; n++) {
        ts_alloc_fail_after(n, false);
        ts_status_t st = ts_config_load_file(path, table, &c, NULL, &err);
        ts_alloc_fail_after(0, false);
        ck_assert(st == TS_OK || st == TS_ENOMEM);
        ck_assert_int_eq(ts_alloc_live(), live);
    }
    unlink(path);
    ck_assert_ts_status(ts_config_load_file(path, table, &c, NULL, &err), TS_ENOENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
    ck_assert_ts_status(ts_config_load_file("/tmp", table, &c, NULL, &err), TS_ECONFIG);
}
END_TEST

TS_TEST_SUITE(config)
{
    Suite *s = suite_create("config");
    TCase *tc = ts_tcase("yaml", 0);
    tcase_add_test(tc, test_valid);
    tcase_add_test(tc, test_errors_with_positions);
    tcase_add_test(tc, test_hostile_documents);
    tcase_add_test(tc, test_nesting_cap);
    tcase_add_test(tc, test_files);
    suite_add_tcase(s, tc);
    return s;
}

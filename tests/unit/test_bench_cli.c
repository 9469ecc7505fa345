/*
 * `tessera bench ckks` and `tessera bench boot` (issues 3 and 4) run in --quick
 * mode through the real CLI and write valid JSON (checked by a strict
 * recursive-descent parser below) with the report's required fields:
 * machine (cpu, cores), threads, parameters and results; every result row of
 * the CKKS suite passed its error limit against the plaintext oracle (the
 * FHElium rows including the 16 x 16 matrix products), and the bootstrapping
 * rows carry latency, levels left and precision. --help succeeds and a bad
 * option is a usage error (exit 2). About 15 s (the FHElium quick suite).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/ts_test.h"

static int run(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* ------------------------------------------------ a strict JSON checker */

typedef struct {
    const char *p;
    int depth;
    /* top-level object keys seen */
    char keys[32][32];
    int nkeys;
} jp_t;

static void ws(jp_t *j)
{
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')
        j->p++;
}

static bool jstring(jp_t *j, char *out, size_t cap)
{
    if (*j->p != '"')
        return false;
    j->p++;
    size_t n = 0;
    while (*j->p && *j->p != '"') {
        if ((unsigned char)*j->p < 0x20)
            return false;
        if (*j->p == '\\') {
            j->p++;
            if (!strchr("\"\\/bfnrtu", *j->p) || !*j->p)
                return false;
        }
        if (out && n + 1 < cap)
            out[n++] = *j->p;
        j->p++;
    }
    if (out)
        out[n] = 0;
    if (*j->p != '"')
        return false;
    j->p++;
    return true;
}

static bool jnumber(jp_t *j)
{
    const char *s = j->p;
    if (*j->p == '-')
        j->p++;
    if (*j->p < '0' || *j->p > '9')
        return false;
    while ((*j->p >= '0' && *j->p <= '9') || *j->p == '.' || *j->p == 'e' || *j->p == 'E' ||
           *j->p == '+' || *j->p == '-')
        j->p++;
    char *end;
    strtod(s, &end);
    return end == j->p;
}

static bool jvalue(jp_t *j);

static bool jobject(jp_t *j)
{
    bool top = j->depth == 0;
    j->depth++;
    j->p++;
    ws(j);
    if (*j->p == '}') {
        j->p++;
        j->depth--;
        return true;
    }
    for (;;) {
        char key[32];
        ws(j);
        if (!jstring(j, key, sizeof key))
            return false;
        if (top && j->nkeys < 32)
            snprintf(j->keys[j->nkeys++], sizeof j->keys[0], "%s", key);
        ws(j);
        if (*j->p++ != ':')
            return false;
        if (!jvalue(j))
            return false;
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p++ != '}')
            return false;
        j->depth--;
        return true;
    }
}

static bool jarray(jp_t *j)
{
    j->depth++;
    j->p++;
    ws(j);
    if (*j->p == ']') {
        j->p++;
        j->depth--;
        return true;
    }
    for (;;) {
        if (!jvalue(j))
            return false;
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p++ != ']')
            return false;
        j->depth--;
        return true;
    }
}

static bool jvalue(jp_t *j)
{
    ws(j);
    if (j->depth > 64)
        return false;
    switch (*j->p) {
    case '{':
        return jobject(j);
    case '[':
        return jarray(j);
    case '"':
        return jstring(j, NULL, 0);
    case 't':
        return strncmp(j->p, "true", 4) == 0 && (j->p += 4);
    case 'f':
        return strncmp(j->p, "false", 5) == 0 && (j->p += 5);
    case 'n':
        return strncmp(j->p, "null", 4) == 0 && (j->p += 4);
    default:
        return jnumber(j);
    }
}

/* Read path, check it is one valid JSON object with every key of want. */
static char *check_json(const char *path, const char *const *want, size_t nwant)
{
    static char buf[1 << 20];
    ts_test_read_file(path, buf, sizeof buf);
    jp_t j = {.p = buf};
    ws(&j);
    ck_assert_int_eq(*j.p, '{');
    ck_assert_msg(jvalue(&j), "invalid JSON in %s near byte %td", path, j.p - buf);
    ws(&j);
    ck_assert_msg(*j.p == 0, "trailing bytes in %s", path);
    for (size_t w = 0; w < nwant; w++) {
        bool found = false;
        for (int k = 0; k < j.nkeys; k++)
            found |= strcmp(j.keys[k], want[w]) == 0;
        ck_assert_msg(found, "%s lacks \"%s\"", path, want[w]);
    }
    return buf;
}

static int count(const char *s, const char *sub)
{
    int n = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
        n++;
    return n;
}

static const char *const required[] = {"machine", "threads", "parameters", "results"};

START_TEST(test_json_checker)
{
    char path[] = "/tmp/tessera-json-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *good = "{\"machine\": {\"cpu\": \"x\"}, \"threads\": [1, 2], \"parameters\": [],"
                       " \"results\": [{\"a\": -1.5e-3, \"b\": true, \"c\": null}]}\n";
    ck_assert_int_eq(write(fd, good, strlen(good)), (ssize_t)strlen(good));
    close(fd);
    check_json(path, required, 4);
    unlink(path);
}
END_TEST

START_TEST(test_bench_ckks_cli)
{
    char dir[] = "/tmp/tessera-bench-ckks-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[1024], out[300];
    snprintf(out, sizeof out, "%s/ckks.json", dir);
    /* the FHElium suite (with the matrix products) in quick mode; the client suite only under
     * sanitizers */
    snprintf(cmd, sizeof cmd,
             "%s/tessera bench ckks --quick --threads 1 --suite %s --json %s > %s/table.txt",
             ts_test_build_dir(), ts_test_quick() ? "client" : "fhelium", out, dir);
    ck_assert_int_eq(run(cmd), 0);
    const char *s = check_json(out, required, 4);
    ck_assert_ptr_nonnull(strstr(s, "\"benchmark\": \"ckks\""));
    ck_assert_ptr_nonnull(strstr(s, "\"cores\": "));
    ck_assert_ptr_nonnull(strstr(s, "\"failures\": 0"));
    ck_assert_int_eq(count(s, "\"pass\": false"), 0);
    if (!ts_test_quick()) {
        ck_assert_ptr_nonnull(strstr(s, "\"preset\": \"fhelium-n14\""));
        ck_assert_int_eq(count(s, "\"op\": \"matmul16_ptct\""), 1);
        ck_assert_int_eq(count(s, "\"op\": \"matmul16_ctct\""), 1);
        /* 7 levels x 10 operations + 6 x 2 (rescale, mod switch) + 4 polynomials + 2 matrices */
        ck_assert_int_eq(count(s, "\"pass\": true"), 7 * 10 + 6 * 2 + 4 + 2);
    } else {
        ck_assert_ptr_nonnull(strstr(s, "\"preset\": \"seed001-client-n13\""));
    }
    snprintf(cmd, sizeof cmd, "%s/tessera bench ckks --help > /dev/null", ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/tessera bench ckks --nope 2> /dev/null", ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s/tessera bench ckks --suite nope 2> /dev/null",
             ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(run(cmd), 0);
}
END_TEST

START_TEST(test_bench_boot_cli)
{
    char dir[] = "/tmp/tessera-bench-boot-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cmd[1024], out[300];
    snprintf(out, sizeof out, "%s/boot.json", dir);
    snprintf(cmd, sizeof cmd,
             "%s/tessera bench boot --quick --case test-boot-n10:3 --runs 1 --threads 2 --json %s "
             "> %s/table.txt",
             ts_test_build_dir(), out, dir);
    ck_assert_int_eq(run(cmd), 0);
    const char *s = check_json(out, required, 4);
    ck_assert_ptr_nonnull(strstr(s, "\"benchmark\": \"boot\""));
    ck_assert_ptr_nonnull(strstr(s, "\"threads\": [1, 2]"));
    ck_assert_ptr_nonnull(strstr(s, "\"failures\": 0"));
    /* one result per thread count, each with the required measurements */
    ck_assert_int_eq(count(s, "\"preset\": \"test-boot-n10\""), 3);
    ck_assert_int_eq(count(s, "\"latency_s_median\""), 2);
    ck_assert_int_eq(count(s, "\"levels_left\": 5"), 2);
    ck_assert_int_eq(count(s, "\"precision_bits_mean\""), 2);
    /* one bootstrap's backend calls: hundreds (the same at 1 and 2 threads) */
    const char *bc = strstr(s, "\"backend_calls\": ");
    ck_assert_ptr_nonnull(bc);
    ck_assert_int_gt(atol(bc + 17), 100);
    ck_assert_int_eq(count(s, "\"upload_mib\""), 2);
    /* and its phases: two results, each with CoeffToSlot and EvalMod timed */
    ck_assert_int_eq(count(s, "\"phases_s_mean\": {\"mod_raise\": "), 2);
    const char *em = strstr(s, "\"eval_mod\": ");
    ck_assert_ptr_nonnull(em);
    ck_assert_double_gt(atof(em + 12), 0);
    /* sparse-secret encapsulation on the dense test preset */
    snprintf(cmd, sizeof cmd,
             "%s/tessera bench boot --case test-boot-n10-dense:3 --encap 32 --runs 1 --threads 1 "
             "--json %s > %s/table.txt 2>&1",
             ts_test_build_dir(), out, dir);
    ck_assert_int_eq(run(cmd), 0);
    s = check_json(out, required, 4);
    ck_assert_ptr_nonnull(strstr(s, "\"secret\": \"ternary\", \"encap_h\": 32"));
    ck_assert_ptr_nonnull(strstr(s, "\"failures\": 0"));
    snprintf(cmd, sizeof cmd, "%s/tessera bench boot --help > /dev/null", ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/tessera bench boot --case nope 2> /dev/null",
             ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 2);
    /* a preset that does not exist: the case fails, exit 1 */
    snprintf(cmd, sizeof cmd, "%s/tessera bench boot --case no-such:3 > /dev/null 2>&1",
             ts_test_build_dir());
    ck_assert_int_eq(run(cmd), 1);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(run(cmd), 0);
}
END_TEST

TS_TEST_SUITE(bench_cli)
{
    Suite *s = suite_create("bench_cli");
    TCase *tc = ts_tcase("cli", 0);
    tcase_add_test(tc, test_json_checker);
    tcase_add_test(tc, test_bench_ckks_cli);
    tcase_add_test(tc, test_bench_boot_cli);
    suite_add_tcase(s, tc);
    return s;
}

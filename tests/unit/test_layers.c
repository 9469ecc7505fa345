/*
 * scripts/check_layers.sh (make check-layers) on small trees written here:
 * it must pass a clean tree and fail, naming file and line, on every kind of
 * bad include. The repository itself is checked by `make test` directly.
 */
#include "tests/unit/ts_test.h"

#include <sys/stat.h>
#include <unistd.h>

static char g_root[64];

static void write_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(g_root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Run the checker on the temp tree; return its exit status and output. */
static int run_checker(char *out, size_t size)
{
    char cwd[512], cmd[1200];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(cmd, sizeof cmd, "%s/scripts/check_layers.sh %s 2>&1", cwd, g_root);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void make_clean_tree(void)
{
    snprintf(g_root, sizeof g_root, "/tmp/ts_layers_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_root));
    write_file("core/base/base.h", "#include <stdint.h>\n");
    write_file("core/math/math.h", "#include \"core/base/base.h\"\n");
    write_file("core/ring/ring.c",
               "#include \"core/backend/backend.h\"\n#include \"core/math/math.h\"\n");
    write_file("core/ckks/ckks.c",
               "#include \"core/ckks/ckks_int.h\"\n#include \"core/rlwe/rlwe.h\"\n");
    write_file("server/main.c", "#include \"core/ckks/ckks.h\"\n");
}

static void cleanup_tree(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_root);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_clean_tree_passes)
{
    char out[4096];
    make_clean_tree();
    int rc = run_checker(out, sizeof out);
    ck_assert_msg(rc == 0, "clean tree refused: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "check-layers: ok"));
    cleanup_tree();
}
END_TEST

static const struct {
    const char *file, *text, *expect;
} bad_cases[] = {
    /* upward include inside core */
    {"core/math/ntt.c", "#include <stdint.h>\n#include \"core/ckks/ckks.h\"\n",
     "core/math/ntt.c:2: core/math (rank 1) must not include \"core/ckks/ckks.h\""},
    /* sideways between siblings that are not built on each other */
    {"core/ckks/eval.c", "#include \"core/tfhe/tfhe.h\"\n",
     "core/ckks/eval.c:1: core/ckks (rank 4) must not include \"core/tfhe/tfhe.h\""},
    /* core reaching outside */
    {"core/base/log.c", "#include \"server/net.h\"\n",
     "core/base/log.c:1: core/ must not include \"server/net.h\" (outer layer)"},
    {"core/llm/x.c", "#  include \"gpu/gpu.h\"\n", "core/llm/x.c:1: core/ must not include"},
    {"core/rlwe/k.c", "#include \"proto/tessera.pb-c.h\"\n", "(outer layer)"},
    /* an unknown layer folder */
    {"core/extra/e.c", "#include \"core/base/base.h\"\n", "core/extra is not a known layer"},
    /* outer code reaching into a module's internals */
    {"client/cmd.c", "#include \"core/ckks/ckks_int.h\"\n",
     "client/cmd.c:1: \"core/ckks/ckks_int.h\" is internal to its module"},
};

START_TEST(test_bad_includes_fail)
{
    char out[8192];
    make_clean_tree();
    write_file(bad_cases[_i].file, bad_cases[_i].text);
    int rc = run_checker(out, sizeof out);
    ck_assert_msg(rc == 1, "case %d accepted (rc %d): %s", _i, rc, out);
    ck_assert_msg(strstr(out, bad_cases[_i].expect), "case %d: output lacks '%s':\n%s", _i,
                  bad_cases[_i].expect, out);
    ck_assert_ptr_nonnull(strstr(out, "check-layers: FAILED"));
    cleanup_tree();
}
END_TEST

TS_TEST_SUITE(layers)
{
    Suite *s = suite_create("layers");
    TCase *tc = ts_tcase("check_layers", 0);
    tcase_add_test(tc, test_clean_tree_passes);
    tcase_add_loop_test(tc, test_bad_includes_fail, 0,
                        (int)(sizeof bad_cases / sizeof bad_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

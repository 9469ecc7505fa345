/*
 * tessera run / tessera simulate, called in-process with stdout captured:
 * the greedy text of models/README.md, valid JSON fields, seeded sampling
 * reproducibility, --prompt-file against --prompt, the simulator's report
 * on the all-exact configuration, and the usage errors.
 */
#include <fcntl.h>
#include <unistd.h>

#include "tests/unit/ts_test.h"

#include "client/llm_cli.h"

/* Run fn(argc, argv) with stdout and stderr sent to temp files; returns
 * the exit code and malloc'd copies of stdout and (err not NULL) stderr. */
static int capture_err(int (*fn)(int, char **), int argc, const char **argv, char **out, char **err)
{
    char path[] = "/tmp/ts_llm_cli_XXXXXX", epath[] = "/tmp/ts_llm_cli_err_XXXXXX";
    int fd = mkstemp(path), efd = mkstemp(epath);
    ck_assert(fd >= 0 && efd >= 0);
    fflush(stdout);
    fflush(stderr);
    int saved = dup(1), esaved = dup(2);
    dup2(fd, 1);
    dup2(efd, 2);
    int rc = fn(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved, 1);
    dup2(esaved, 2);
    close(saved);
    close(esaved);
    off_t n = lseek(fd, 0, SEEK_END);
    *out = calloc(1, (size_t)n + 1);
    ck_assert(pread(fd, *out, (size_t)n, 0) == n);
    if (err) {
        off_t en = lseek(efd, 0, SEEK_END);
        *err = calloc(1, (size_t)en + 1);
        ck_assert(pread(efd, *err, (size_t)en, 0) == en);
    }
    close(fd);
    close(efd);
    unlink(path);
    unlink(epath);
    return rc;
}

static int capture(int (*fn)(int, char **), int argc, const char **argv, char **out)
{
    return capture_err(fn, argc, argv, out, NULL);
}

/* A temp file holding s[0..n); its path in path (a mkstemp template). */
static void temp_file(char *path, const char *s, size_t n)
{
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, s, n) == (ssize_t)n);
    close(fd);
}

static char mpath[512], tpath[512], cpath[512];

static void paths(void)
{
    snprintf(mpath, sizeof(mpath), "%s/aidreams260K.bin", ts_test_model_dir());
    snprintf(tpath, sizeof(tpath), "%s/tok512.bin", ts_test_model_dir());
    snprintf(cpath, sizeof(cpath), "configs/approx/rosetta_lut.yaml");
}

START_TEST(test_cli_run)
{
    paths();
    char *out;
    const char *a1[] = {"run",      "--model",    mpath,     "--tokenizer", tpath,
                        "--prompt", "I dream of", "--steps", "49",          "--plaintext"};
    ck_assert_int_eq(capture(ts_cmd_run, 10, a1, &out), 0);
    const char *want = "I dream of 0.000000. Dimensions unfold, as I softly refine,";
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "stdout: %s", out);
    free(out);
    const char *a2[] = {"run", "-m",  mpath, "-z", tpath,     "-p",   "I dream of", "-n", "40",
                        "-t",  "0.9", "-k",  "20", "--top-p", "0.95", "--seed",     "5",  "--json"};
    char *o2, *o3;
    ck_assert_int_eq(capture(ts_cmd_run, 18, a2, &o2), 0);
    ck_assert_int_eq(capture(ts_cmd_run, 18, a2, &o3), 0);
    ck_assert_ptr_nonnull(strstr(o2, "\"mode\":\"plaintext\""));
    ck_assert_ptr_nonnull(strstr(o2, "\"ids\":[1,303,281,269,435,447,275,"));
    /* Same seed, same ids (timings differ, so compare up to "seconds"). */
    char *c2 = strstr(o2, "\"seconds\""), *c3 = strstr(o3, "\"seconds\"");
    ck_assert(c2 && c3 && c2 - o2 == c3 - o3);
    ck_assert_int_eq(memcmp(o2, o3, (size_t)(c2 - o2)), 0);
    free(o2);
    free(o3);
    const char *a3[] = {"run", "--model", mpath};
    ck_assert_int_eq(capture(ts_cmd_run, 3, a3, &out), 2);
    free(out);
    const char *a4[] = {"run", "--model", "/nonexistent", "--prompt", "x"};
    ck_assert_int_eq(capture(ts_cmd_run, 5, a4, &out), 4);
    free(out);
    const char *a5[] = {"run", "--model", mpath, "--prompt", "x", "--top-p", "2"};
    ck_assert_int_eq(capture(ts_cmd_run, 7, a5, &out), 2);
    free(out);
    const char *a6[] = {"run", "--help"};
    ck_assert_int_eq(capture(ts_cmd_run, 2, a6, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "PLAINTEXT"));
    free(out);
    /* --draft-lookup: the replay's counts add up to the 41 tokens after the
     * first of the 49 positions (BOS and 6 prompt tokens before); the
     * reference text repeats itself, so some guesses are kept; with its own
     * text as --draft-text nearly every token comes from a kept guess */
    char hpath[] = "/tmp/ts_llm_cli_hist_XXXXXX";
    int hfd = mkstemp(hpath);
    ck_assert(hfd >= 0);
    const char *a7[] = {"run",        "--model", mpath, "--tokenizer",    tpath,   "--prompt",
                        "I dream of", "--steps", "49",  "--draft-lookup", "--json"};
    size_t kept[2] = {0, 0};
    for (int h = 0; h < 2; h++) {
        if (h == 1) {
            ck_assert_int_eq(capture(ts_cmd_run, 10, a1, &out), 0); /* the text */
            ck_assert(write(hfd, out, strlen(out)) == (ssize_t)strlen(out));
            free(out);
        }
        char opt[600];
        snprintf(opt, sizeof opt, "--draft-text=%s", hpath);
        if (h == 1)
            a7[9] = opt;
        ck_assert_int_eq(capture(ts_cmd_run, 11, a7, &out), 0);
        const char *sp = strstr(out, "\"speculative\":{\"lanes\":8,\"tokens\":41,");
        ck_assert_msg(sp != NULL, "stdout: %s", out);
        unsigned long passes = 0, steps = 0, drafted = 0, k = 0;
        ck_assert_int_eq(sscanf(strstr(sp, "\"passes\""),
                                "\"passes\":%lu,\"steps\":%lu,\"drafted\":%lu,\"kept\":%lu",
                                &passes, &steps, &drafted, &k),
                         4);
        printf("tessera run --draft-lookup%s, 8 lanes: 41 tokens in %lu passes (%lu kept) and "
               "%lu steps\n",
               h ? " --draft-text (its own text)" : "", passes, k, steps);
        ck_assert_uint_eq(passes + steps + k, 41);
        ck_assert_uint_gt(k, 0);
        kept[h] = k;
        free(out);
    }
    ck_assert_uint_ge(kept[1], 35);
    ck_assert_uint_gt(kept[1], kept[0]);
    close(hfd);
    unlink(hpath);
    const char *a8[] = {"run",      "--model", mpath,          "--tokenizer",     tpath,
                        "--prompt", "x",       "--draft-text", "/nonexistent.txt"};
    ck_assert_int_eq(capture(ts_cmd_run, 9, a8, &out), 2);
    free(out);
}
END_TEST

/* --score-ids: the greedy ids of "I dream of" score as the model's argmax
 * at every generated position (shortfall 0); with one generated id replaced, that
 * position's argmax is the replaced id and its shortfall and margin are the
 * logits' own (ts_llm_forward on the same ids, the oracle); the refusals. */
START_TEST(test_cli_run_score)
{
    paths();
    char *out;
    const char *a1[] = {"run", "-m", mpath, "-z", tpath, "-p", "I dream of", "-n", "24", "--json"};
    ck_assert_int_eq(capture(ts_cmd_run, 10, a1, &out), 0);
    int ids[24], n = 0;
    const char *at = strstr(out, "\"ids\":[");
    ck_assert_ptr_nonnull(at);
    at += 7;
    while (n < 24 && sscanf(at, "%d", &ids[n]) == 1) {
        n++;
        at = strpbrk(at, ",]");
        if (!at || *at == ']')
            break;
        at++;
    }
    ck_assert_int_eq(n, 24);
    free(out);
    for (int alter = 0; alter < 2; alter++) {
        const int p = 15; /* a generated position's next id */
        int orig = ids[p + 1];
        if (alter)
            ids[p + 1] = (orig + 7) % 512;
        char list[24 * 8] = "";
        for (int i = 0; i < n; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", ids[i]);
        const char *a2[] = {"run", "-m", mpath, "-z", tpath, "--score-ids", list, "--json"};
        ck_assert_int_eq(capture(ts_cmd_run, 8, a2, &out), 0);
        ck_assert_ptr_nonnull(strstr(out, "\"mode\":\"score\""));
        /* the prompt's positions 0..5 score its own ids: the model's argmax
         * at 2 of them (3 and 4); every generated id at 6..22 is the argmax
         * (altered: not at 15, and the ids after it follow another context) */
        const char *ag = strstr(out, "\"scored\":23,\"agree\":");
        int agree = -1;
        ck_assert_msg(ag && sscanf(ag + strlen("\"scored\":23,\"agree\":"), "%d", &agree) == 1,
                      "stdout: %s", out);
        if (alter)
            ck_assert_int_lt(agree, 19);
        else
            ck_assert_int_eq(agree, 19);
        char key[32];
        snprintf(key, sizeof key, "{\"pos\":%d,", p);
        const char *e = strstr(out, key);
        ck_assert_ptr_nonnull(e);
        int next = -1, am = -1;
        double sf = -1, mg = -1;
        ck_assert_int_eq(sscanf(e + strlen(key),
                                "\"next\":%d,\"argmax\":%d,\"shortfall\":%lf,\"margin\":%lf", &next,
                                &am, &sf, &mg),
                         4);
        ck_assert_int_eq(next, ids[p + 1]);
        ck_assert_int_eq(am, orig);
        /* the oracle: the model's logits after the same ids */
        ts_llm_model_t *m = NULL;
        char err[256];
        ck_assert_int_eq(ts_llm_model_load(mpath, &m, err, sizeof err), TS_OK);
        ts_llm_state_t *stt = NULL;
        ck_assert_int_eq(ts_llm_state_new(m, &stt), TS_OK);
        const float *lg = NULL;
        for (int i = 0; i <= p; i++)
            ck_assert_int_eq(ts_llm_forward(m, stt, ids[i], i, &lg), TS_OK);
        double second = -1e30;
        for (int i = 0; i < 512; i++)
            if (i != orig && lg[i] > second)
                second = lg[i];
        ck_assert_double_eq_tol(sf, (double)lg[orig] - lg[ids[p + 1]], 1e-5);
        ck_assert_double_eq_tol(mg, (double)lg[orig] - second, 1e-5);
        if (alter)
            ck_assert_double_gt(sf, 0);
        ts_llm_state_free(stt);
        ts_llm_model_free(m);
        free(out);
        ids[p + 1] = orig;
    }
    /* the refusals: with --prompt, a malformed list, an id past the
     * vocabulary, a single id (nothing to score) */
    const char *b1[] = {"run", "-m", mpath, "-z", tpath, "--score-ids", "1,5", "-p", "x"};
    ck_assert_int_eq(capture(ts_cmd_run, 9, b1, &out), 2);
    free(out);
    const char *bad[] = {"1,x", "1,,2", "1,512", "1"};
    for (int i = 0; i < 4; i++) {
        const char *b2[] = {"run", "-m", mpath, "-z", tpath, "--score-ids", bad[i]};
        ck_assert_msg(capture(ts_cmd_run, 7, b2, &out) == 2, "--score-ids %s", bad[i]);
        free(out);
    }
}
END_TEST

/* --prompt-file: one line per non-blank line of the file (a trailing \r
 * dropped), each the text `run --prompt LINE` prints with the same options,
 * newlines as spaces; greedy and seeded sampling (each prompt starts from
 * the seed afresh). Then the refusals: with --prompt, --json or --draft-text
 * (2), a missing file (4, naming it), an over-long line (4, its number). */
START_TEST(test_cli_run_prompt_file)
{
    paths();
    static const char text[] = "I dream of\n\nThe sea\r\n \t\nA cloud";
    static const char *const prompts[3] = {"I dream of", "The sea", "A cloud"};
    char fpath[] = "/tmp/ts_llm_cli_prompts_XXXXXX";
    temp_file(fpath, text, sizeof text - 1);
    char *out, *err;
    for (int sampled = 0; sampled < 2; sampled++) {
        const char *a1[] = {"run", "-m", mpath, "-z",     tpath, "--prompt-file", fpath, "-n",
                            "12",  "-t", "0.9", "--seed", "5"};
        int argc = sampled ? 13 : 9;
        ck_assert_int_eq(capture(ts_cmd_run, argc, a1, &out), 0);
        const char *line = out;
        for (int i = 0; i < 3; i++) {
            a1[5] = "--prompt";
            a1[6] = prompts[i];
            char *want;
            ck_assert_int_eq(capture(ts_cmd_run, argc, a1, &want), 0);
            size_t n = strlen(want);
            ck_assert(n > strlen(prompts[i]) && want[n - 1] == '\n');
            for (size_t k = 0; k + 1 < n; k++)
                if (want[k] == '\n' || want[k] == '\r')
                    want[k] = ' ';
            ck_assert_msg(strncmp(line, want, n) == 0, "line %d: %s\nwant: %s", i, line, want);
            line += n;
            free(want);
        }
        ck_assert_str_eq(line, ""); /* exactly 3 lines */
        free(out);
    }
    const char *a2[] = {"run", "-m", mpath, "-z", tpath, "--prompt-file", fpath, "-p", "x"};
    ck_assert_int_eq(capture_err(ts_cmd_run, 9, a2, &out, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "mutually exclusive"));
    free(out);
    free(err);
    const char *flag[2] = {"--json", "--draft-text=/dev/null"};
    for (int i = 0; i < 2; i++) {
        a2[7] = flag[i];
        ck_assert_int_eq(capture(ts_cmd_run, 8, a2, &out), 2);
        free(out);
    }
    unlink(fpath);
    const char *a3[] = {"run", "-m", mpath, "-z", tpath, "--prompt-file", "/nonexistent.txt"};
    ck_assert_int_eq(capture_err(ts_cmd_run, 7, a3, &out, &err), 4);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent.txt"));
    free(out);
    free(err);
    /* line 3 of 4097 bytes: nothing generated, the line named */
    char *lng = malloc(4200);
    ck_assert_ptr_nonnull(lng);
    memcpy(lng, "I dream of\n\n", 12);
    memset(lng + 12, 'a', 4097);
    memcpy(lng + 12 + 4097, "\nThe sea\n", 9);
    char lpath[] = "/tmp/ts_llm_cli_prompts_XXXXXX";
    temp_file(lpath, lng, 12 + 4097 + 9);
    free(lng);
    a3[6] = lpath;
    ck_assert_int_eq(capture_err(ts_cmd_run, 7, a3, &out, &err), 4);
    ck_assert_str_eq(out, "");
    ck_assert_msg(strstr(err, "line 3 is longer than 4096 bytes") != NULL, "stderr: %s", err);
    free(out);
    free(err);
    unlink(lpath);
}
END_TEST

START_TEST(test_cli_simulate)
{
    paths();
    char *out;
    const char *a1[] = {"simulate", "--model", mpath, "--tokenizer",
                        tpath,      "--steps", "32",  "--json"};
    ck_assert_int_eq(capture(ts_cmd_simulate, 8, a1, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"argmax_agree\":32,"));
    ck_assert_ptr_nonnull(strstr(out, "\"logits\":{\"max_abs_err\":0,"));
    ck_assert_ptr_nonnull(strstr(out, "\"first_divergence\":-1"));
    free(out);
    const char *a2[] = {"simulate", "-m", mpath, "-z", tpath, "-n", "32", "--approx", cpath};
    ck_assert_int_eq(capture(ts_cmd_simulate, 9, a2, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "lut 4x256 log"));
    ck_assert_ptr_nonnull(strstr(out, "perplexity over 31 tokens"));
    free(out);
    const char *a3[] = {"simulate", "-m", mpath, "-z", tpath, "--config", "/nonexistent.yaml"};
    ck_assert_int_eq(capture(ts_cmd_simulate, 7, a3, &out), 4);
    free(out);
    const char *a4[] = {"simulate", "--help"};
    ck_assert_int_eq(capture(ts_cmd_simulate, 2, a4, &out), 0);
    free(out);
    /* --kinds: the policy's structure with those kinds in TFHE (the first
     * round's 1/x as a 4 x 32 look-up on the ckks structure's interval) */
    const char *a5[] = {"simulate", "-m",       mpath,  "-z",      tpath,        "-n",
                        "16",       "--policy", "ckks", "--kinds", "recip,rsqrt"};
    ck_assert_int_eq(capture(ts_cmd_simulate, 11, a5, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "tfhe kinds recip,rsqrt"));
    ck_assert_ptr_nonnull(strstr(out, "lut 4x32 log b=5 [0.8,256]"));
    ck_assert_ptr_nonnull(strstr(out, "softmax: max-free normalize-and-square, k = 3"));
    free(out);
    /* refused: without --policy, an unknown or repeated kind */
    const char *bad[3][2] = {{"--steps", "recip"}, {"--policy", "ckks"}, {"--policy", "ckks"}};
    const char *bk[3] = {"recip", "recip,bogus", "recip,recip"};
    for (int i = 0; i < 3; i++) {
        const char *a6[] = {"simulate",          "-m",      mpath, "-z", tpath, bad[i][0],
                            i ? bad[i][1] : "4", "--kinds", bk[i]};
        ck_assert_int_eq(capture(ts_cmd_simulate, 9, a6, &out), 2);
        free(out);
    }
}
END_TEST

/* ts_llm_kinds_parse inverts ts_llm_kinds_format for every mask. */
START_TEST(test_cli_kinds_parse)
{
    for (unsigned mask = 0; mask < (1u << TS_LLM_KIND_COUNT); mask++) {
        char buf[128];
        unsigned back = ~0u;
        ts_llm_kinds_format(mask, buf, sizeof buf);
        ck_assert_ts_ok(ts_llm_kinds_parse(buf, &back));
        ck_assert_uint_eq(back, mask);
    }
    unsigned m = 0;
    const char *bad[] = {"", "exp,", ",exp", "exp,,recip", "Exp", "exp,exp", "nonee"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_ts_status(ts_llm_kinds_parse(bad[i], &m), TS_EINVAL);
    ck_assert_ts_status(ts_llm_kinds_parse(NULL, &m), TS_EINVAL);
}
END_TEST

TS_TEST_SUITE(llm_cli)
{
    Suite *s = suite_create("llm_cli");
    TCase *tc = ts_tcase("cli", 0);
    tcase_add_test(tc, test_cli_run);
    tcase_add_test(tc, test_cli_run_prompt_file);
    tcase_add_test(tc, test_cli_run_score);
    tcase_add_test(tc, test_cli_simulate);
    tcase_add_test(tc, test_cli_kinds_parse);
    suite_add_tcase(s, tc);
    return s;
}

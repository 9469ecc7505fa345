/*
 * The unit-test runner: every suite registered by TS_TEST_SUITE in
 * tests/unit/*.c runs in one Check SRunner, which prints one summary line at
 * the end and decides the exit status. Arguments (optional) name the suites to
 * run; CK_RUN_SUITE / CK_RUN_CASE work as usual.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Suite *(*ts_suite_fn)(void);
extern const ts_suite_fn ts_all_suites[];

static int wanted(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    SRunner *sr = NULL;
    for (size_t i = 0; ts_all_suites[i]; i++) {
        Suite *s = ts_all_suites[i]();
        if (!wanted(suite_name(s), argc, argv)) {
            suite_free(s);
            continue;
        }
        if (!sr)
            sr = srunner_create(s);
        else
            srunner_add_suite(sr, s);
    }
    if (!sr) {
        fprintf(stderr, "unit_tests: no suite matches the arguments\n");
        return 2;
    }
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

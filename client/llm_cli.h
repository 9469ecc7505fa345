/*
 * client/llm_cli.h — helpers shared by the plaintext LLM commands
 * (tessera run, tessera simulate, and the draft of tessera generate).
 */
#ifndef TS_CLIENT_LLM_CLI_H
#define TS_CLIENT_LLM_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "core/llm/llm.h"

/* Exit codes, the same values as every tessera command (client/client.h). */
enum { RUN_EXIT_OK = 0, RUN_EXIT_FAIL = 1, RUN_EXIT_USAGE = 2, RUN_EXIT_LOCAL = 4 };

/* Load a model and its tokenizer (tok_path NULL: a GGUF model's own); on
 * failure print why and return RUN_EXIT_LOCAL. */
int ts_cli_llm_load(const char *prog, const char *model_path, const char *tok_path,
                    ts_llm_model_t **m, ts_llm_tokenizer_t **t);
/* A JSON string literal of s[0..n). */
void ts_cli_llm_json_escape(FILE *f, const char *s, size_t n);
/* A number in [lo, hi]; false when malformed or out of range. */
bool ts_cli_llm_parse_num(const char *s, double lo, double hi, double *out);
/* A comma-separated list of token ids, each in [0, max_id), into ids[0..cap):
 * *n of them; false when malformed, out of range or longer than cap. */
bool ts_cli_llm_parse_ids(const char *s, int max_id, int *ids, size_t cap, size_t *n);
/* `--boot-dft C:S`: a bootstrapper's CoeffToSlot and SlotToCoeff level
 * budgets, 0..8 each (0: ts_boot_config_slots's); false when malformed. */
bool ts_cli_llm_parse_boot_dft(const char *s, int *cts, int *stc);

/* The n-gram draft of `--draft-lookup` (contexts of 2..TS_LLM_NGRAM_MAX
 * tokens), with the lines of text_path counted (NULL: none;
 * ts_llm_ngram_add_file); err says why on failure. */
ts_status_t ts_cli_ngram_load(const ts_llm_tokenizer_t *tok, const char *text_path,
                              ts_llm_ngram_t **out, char *err, size_t errcap);

int ts_cmd_run(int argc, char **argv);
int ts_cmd_simulate(int argc, char **argv);

#endif

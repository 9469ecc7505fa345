/*
 * libFuzzer target: core/llm's parsers on arbitrary bytes never crash, leak
 * or read out of bounds. The first byte picks the parser: model files
 * (llama2.c or GGUF, then one decode step when the shape is small),
 * tokenizer files (llama2.c with a 512 vocabulary, or GGUF, then an encode and
 * decode round of the rest of the input), or simulator YAML configs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/llm/llm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_model(const uint8_t *d, size_t n)
{
    ts_llm_model_t *m = NULL;
    char err[256];
    if (ts_llm_model_load_buffer(d, n, &m, err, sizeof(err)) != TS_OK)
        return;
    const ts_llm_config_t *c = ts_llm_model_config(m);
    if ((size_t)c->seq_len * (size_t)c->n_layers * (size_t)c->dim <= ((size_t)1 << 20)) {
        ts_llm_state_t *s = NULL;
        const float *lg;
        if (ts_llm_state_new(m, &s) == TS_OK) {
            (void)ts_llm_forward(m, s, 0, 0, &lg);
            if (c->seq_len > 1)
                (void)ts_llm_forward(m, s, c->vocab_size - 1, 1, &lg);
        }
        ts_llm_state_free(s);
    }
    ts_llm_model_free(m);
}

static void fuzz_tokenizer(const uint8_t *d, size_t n)
{
    if (n < 3)
        return;
    /* Header: two bytes split the rest into the file and a text, one byte is
     * the vocabulary size a llama2.c tokenizer is read with (GGUF: its own). */
    size_t cut = ((size_t)d[0] << 8 | d[1]) % n;
    if (cut < 3)
        cut = 3;
    const uint8_t *file = d + 3;
    size_t fn = cut - 3;
    ts_llm_tokenizer_t *t = NULL;
    char err[256];
    if (ts_llm_tokenizer_load_buffer(file, fn, d[2] ? d[2] : 512, &t, err, sizeof(err)) != TS_OK &&
        ts_llm_tokenizer_load_buffer(file, fn, 0, &t, err, sizeof(err)) != TS_OK)
        return;
    const char *text = (const char *)d + cut;
    size_t tl = n - cut;
    size_t cap = ts_llm_tokenizer_max_ids(tl), k;
    int *ids = malloc(cap * sizeof(int));
    if (ids && ts_llm_tokenizer_encode(t, text, tl, true, true, ids, cap, &k) == TS_OK) {
        char buf[256];
        size_t w;
        for (size_t i = 0; i < k; i++)
            (void)ts_llm_tokenizer_decode(t, i ? ids[i - 1] : -1, ids[i], buf, sizeof(buf), &w);
    }
    free(ids);
    ts_llm_tokenizer_free(t);
}

static void fuzz_sim_config(const uint8_t *d, size_t n)
{
    ts_llm_sim_config_t cfg;
    ts_llm_sim_config_default(&cfg);
    char err[256];
    (void)ts_llm_sim_config_load_string((const char *)d, n, &cfg, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        fuzz_model(data + 1, size - 1);
        break;
    case 1:
        fuzz_tokenizer(data + 1, size - 1);
        break;
    default:
        fuzz_sim_config(data + 1, size - 1);
        break;
    }
    return 0;
}

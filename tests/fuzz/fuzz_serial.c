/* libFuzzer target: envelopes and packed residues from arbitrary bytes never crash. */
#include <stddef.h>
#include <stdint.h>

#include "core/serial/serial.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_serial_limits_t lim = {.max_raw_bytes = 1u << 20, .max_window_log = 20};
    uint8_t *raw = NULL;
    size_t raw_size = 0;
    ts_serial_header_t h;
    if (ts_serial_open(data, size, TS_OBJ_ANY, NULL, &lim, &h, &raw, &raw_size) == TS_OK)
        ts_free(raw);
    /* Raw reader: a count, a width and modulus, then that many packed values. */
    ts_reader_t r;
    ts_reader_init(&r, data, size);
    uint64_t n = ts_get_count(&r, 4096);
    unsigned width = ts_get_u8(&r) % 65;
    uint64_t q = ts_get_u64(&r);
    uint64_t vals[4096];
    ts_get_packed(&r, vals, (size_t)n, width, q);
    (void)ts_get_f64(&r);
    (void)ts_reader_finish(&r);
    return 0;
}

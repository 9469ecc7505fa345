/* core/serial: bit-packing at every width, readers, and the checked envelope under tampering. */
#include "tests/unit/ts_test.h"

#include <zstd.h>

#include "core/serial/serial.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void)
{
    /* splitmix64: a fixed test stream, not a security primitive. */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Reference packer: one bit at a time, LSB first. */
static void ref_pack(const uint64_t *v, size_t n, unsigned width, uint8_t *out, size_t bytes)
{
    memset(out, 0, bytes);
    size_t bit = 0;
    for (size_t i = 0; i < n; i++)
        for (unsigned b = 0; b < width; b++, bit++)
            if ((v[i] >> b) & 1)
                out[bit / 8] |= (uint8_t)(1u << (bit % 8));
}

START_TEST(test_width)
{
    ck_assert_uint_eq(ts_serial_width(0), 0);
    ck_assert_uint_eq(ts_serial_width(1), 0);
    ck_assert_uint_eq(ts_serial_width(2), 1);
    ck_assert_uint_eq(ts_serial_width(3), 2);
    ck_assert_uint_eq(ts_serial_width(4), 2);
    ck_assert_uint_eq(ts_serial_width(5), 3);
    ck_assert_uint_eq(ts_serial_width(1152921504606748673ull), 60);
    ck_assert_uint_eq(ts_serial_width(UINT64_MAX), 64);
    size_t b;
    ck_assert(ts_serial_packed_bytes(3, 60, &b) && b == 23);
    ck_assert(!ts_serial_packed_bytes(SIZE_MAX, 64, &b));
}
END_TEST

START_TEST(test_pack_every_width)
{
    enum { N = 37 };
    uint64_t v[N], back[N];
    uint8_t ref[N * 8 + 1];
    for (unsigned width = 1; width <= 64; width++) {
        uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
        for (int round = 0; round < 20; round++) {
            size_t n = (size_t)(next_u64() % N) + 1;
            for (size_t i = 0; i < n; i++)
                v[i] = round == 0 ? mask : next_u64() & mask; /* all-ones edge first */
            size_t bytes;
            ck_assert(ts_serial_packed_bytes(n, width, &bytes));
            ref_pack(v, n, width, ref, bytes);
            ts_writer_t w;
            ts_writer_init(&w);
            ts_put_u8(&w, 0xa5); /* an unaligned start must not matter */
            ts_put_packed(&w, v, n, width);
            ck_assert_ts_ok(w.err);
            ck_assert_uint_eq(w.len, bytes + 1);
            ck_assert_msg(memcmp(w.buf + 1, ref, bytes) == 0, "width %u n %zu differs", width, n);
            ts_reader_t r;
            ts_reader_init(&r, w.buf, w.len);
            ck_assert_uint_eq(ts_get_u8(&r), 0xa5);
            ts_get_packed(&r, back, n, width, 0);
            ck_assert_ts_ok(ts_reader_finish(&r));
            ck_assert_mem_eq(back, v, n * sizeof v[0]);
            ts_writer_clear(&w);
        }
    }
}
END_TEST

START_TEST(test_reader_validation)
{
    const uint64_t q = 1099510054913ull; /* a 40-bit FHElium prime */
    uint64_t v[5] = {0, 1, q - 1, 12345, q - 2}, out[5];
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_packed(&w, v, 5, ts_serial_width(q));
    ts_reader_t r;
    ts_reader_init(&r, w.buf, w.len);
    ts_get_packed(&r, out, 5, ts_serial_width(q), q);
    ck_assert_ts_ok(ts_reader_finish(&r));
    /* A residue >= q is refused. */
    v[3] = q;
    ts_writer_clear(&w);
    ts_put_packed(&w, v, 5, ts_serial_width(q));
    ts_reader_init(&r, w.buf, w.len);
    ts_get_packed(&r, out, 5, ts_serial_width(q), q);
    ck_assert_ts_status(ts_reader_finish(&r), TS_EFORMAT);
    /* Truncation anywhere is refused, and the error is sticky. */
    ts_reader_init(&r, w.buf, w.len - 1);
    ts_get_packed(&r, out, 5, ts_serial_width(q), 0);
    ck_assert_ts_status(r.err, TS_EFORMAT);
    ck_assert_uint_eq(ts_get_u64(&r), 0);
    ts_writer_clear(&w);
    /* Non-zero padding bits break canonicity. */
    uint8_t odd[1] = {0x80}; /* one 3-bit value 0 followed by a set padding bit */
    ts_reader_init(&r, odd, 1);
    ts_get_packed(&r, out, 1, 3, 0);
    ck_assert_ts_status(r.err, TS_EFORMAT);
    /* Counts are bounded before use; NaN is refused; leftovers are refused. */
    ts_put_u64(&w, 1000);
    ts_put_f64(&w, NAN);
    ts_reader_init(&r, w.buf, w.len);
    ck_assert_uint_eq(ts_get_count(&r, 999), 0);
    ck_assert_ts_status(r.err, TS_EFORMAT);
    ts_reader_init(&r, w.buf, w.len);
    ck_assert_uint_eq(ts_get_count(&r, 1000), 1000);
    ts_get_f64(&r);
    ck_assert_ts_status(r.err, TS_EFORMAT);
    ts_reader_init(&r, w.buf, w.len);
    ts_get_u64(&r);
    ck_assert_ts_status(ts_reader_finish(&r), TS_EFORMAT); /* 8 bytes left over */
    ts_writer_clear(&w);
}
END_TEST

/* A compressible payload of `n` residues of a 60-bit prime plus a header word. */
static void make_payload(ts_writer_t *w, size_t n)
{
    const uint64_t q = 1152921504606748673ull;
    ts_writer_init(w);
    ts_put_u32(w, 0xfeedf00du);
    uint64_t *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (i % 3 == 0) ? 0 : next_u64() % q;
    ts_put_packed(w, v, n, 60);
    free(v);
}

START_TEST(test_envelope_round_trip)
{
    uint8_t pid[TS_SHA256_BYTES];
    ck_assert_ts_ok(ts_sha256("params", 6, pid));
    for (int level = 0; level <= 3; level += 3) {
        ts_writer_t w;
        make_payload(&w, 4096);
        uint8_t *blob;
        size_t size;
        ck_assert_ts_ok(ts_serial_seal(&w, TS_OBJ_CKKS_CIPHERTEXT, pid, level, &blob, &size));
        if (level)
            ck_assert_uint_lt(size, w.len + TS_SERIAL_HEADER_BYTES); /* zstd helped */
        ts_serial_header_t h;
        uint8_t *raw;
        size_t raw_size;
        ck_assert_ts_ok(
            ts_serial_open(blob, size, TS_OBJ_CKKS_CIPHERTEXT, pid, NULL, &h, &raw, &raw_size));
        ck_assert_uint_eq(raw_size, w.len);
        ck_assert_mem_eq(raw, w.buf, w.len);
        ck_assert_int_eq(h.type, TS_OBJ_CKKS_CIPHERTEXT);
        ck_assert_int_eq(!!(h.flags & TS_SERIAL_ZSTD), level > 0);
        ts_free(raw);
        /* Wrong type or parameters: refused as a mismatch. */
        ck_assert_ts_status(
            ts_serial_open(blob, size, TS_OBJ_PUBLIC_KEY, NULL, NULL, &h, &raw, &raw_size),
            TS_EMISMATCH);
        uint8_t other[TS_SHA256_BYTES] = {0};
        ck_assert_ts_status(
            ts_serial_open(blob, size, TS_OBJ_ANY, other, NULL, &h, &raw, &raw_size), TS_EMISMATCH);
        /* A cap below the payload size: refused before allocating. */
        ts_serial_limits_t lim = {.max_raw_bytes = w.len - 1};
        ck_assert_ts_status(ts_serial_open(blob, size, TS_OBJ_ANY, NULL, &lim, &h, &raw, &raw_size),
                            TS_ELIMIT);
        ck_assert_ptr_null(raw);
        ts_free(blob);
        ts_writer_clear(&w);
    }
}
END_TEST

START_TEST(test_envelope_tampering)
{
    ts_writer_t w;
    make_payload(&w, 512);
    for (int level = 0; level <= 3; level += 3) {
        uint8_t *blob;
        size_t size;
        ck_assert_ts_ok(ts_serial_seal(&w, TS_OBJ_USER_MIN, NULL, level, &blob, &size));
        uint8_t *raw;
        size_t raw_size;
        ts_serial_header_t h;
        int64_t live = ts_alloc_live();
        /* Every truncation is refused. */
        for (size_t cut = 0; cut < size; cut++)
            ck_assert_msg(ts_serial_open(blob, cut, TS_OBJ_ANY, NULL, NULL, &h, &raw, &raw_size) !=
                              TS_OK,
                          "truncated to %zu accepted", cut);
        /* Every single-bit flip is refused (header fields, payload or digest). */
        for (size_t i = 0; i < size; i++) {
            for (int b = 0; b < 8; b++) {
                blob[i] ^= (uint8_t)(1u << b);
                ts_status_t st =
                    ts_serial_open(blob, size, TS_OBJ_USER_MIN, NULL, NULL, &h, &raw, &raw_size);
                blob[i] ^= (uint8_t)(1u << b);
                if (st == TS_OK) {
                    /* A flip may pass only where it cannot change what is decoded: in
                     * the parameter id (checked by the caller through want_param) or
                     * in a zstd frame-header bit that does not alter the content
                     * (the digest covers the decoded bytes). */
                    ck_assert_msg((i >= 12 && i < 44) ||
                                      (raw_size == w.len && memcmp(raw, w.buf, w.len) == 0),
                                  "bit %d of byte %zu flipped unnoticed", b, i);
                    ts_free(raw);
                }
            }
        }
        /* Appended bytes are refused. */
        uint8_t *longer = malloc(size + 1);
        memcpy(longer, blob, size);
        longer[size] = 0;
        ck_assert_int_ne(
            ts_serial_open(longer, size + 1, TS_OBJ_ANY, NULL, NULL, &h, &raw, &raw_size), TS_OK);
        free(longer);
        ck_assert_int_eq(ts_alloc_live(), live);
        ts_free(blob);
    }
    ts_writer_clear(&w);
}
END_TEST

START_TEST(test_decompression_bomb)
{
    /* 64 MiB of zeros compresses to a few KiB; the header claims its real size.
     * With a 1 MiB cap it is refused before any large allocation. */
    size_t big = 64u << 20;
    uint8_t *zeros = calloc(1, big);
    size_t bound = ZSTD_compressBound(big);
    uint8_t *blob = malloc(TS_SERIAL_HEADER_BYTES + bound);
    size_t c = ZSTD_compress(blob + TS_SERIAL_HEADER_BYTES, bound, zeros, big, 3);
    ck_assert(!ZSTD_isError(c));
    /* Build a header by sealing a tiny payload and patching its sizes. */
    ts_writer_t w;
    ts_writer_init(&w);
    ts_put_u8(&w, 1);
    uint8_t *small;
    size_t small_size;
    ck_assert_ts_ok(ts_serial_seal(&w, TS_OBJ_USER_MIN, NULL, 0, &small, &small_size));
    memcpy(blob, small, TS_SERIAL_HEADER_BYTES);
    blob[8] = TS_SERIAL_ZSTD;
    for (int i = 0; i < 8; i++) {
        blob[44 + i] = (uint8_t)((uint64_t)c >> (8 * i));
        blob[52 + i] = (uint8_t)((uint64_t)big >> (8 * i));
    }
    ts_serial_limits_t lim = {.max_raw_bytes = 1u << 20};
    uint8_t *raw;
    size_t raw_size;
    ck_assert_ts_status(ts_serial_open(blob, TS_SERIAL_HEADER_BYTES + c, TS_OBJ_ANY, NULL, &lim,
                                       NULL, &raw, &raw_size),
                        TS_ELIMIT);
    /* Lying about the raw size (claims 1 KiB): refused by the frame's own size. */
    for (int i = 0; i < 8; i++)
        blob[52 + i] = (uint8_t)((uint64_t)1024 >> (8 * i));
    ck_assert_ts_status(ts_serial_open(blob, TS_SERIAL_HEADER_BYTES + c, TS_OBJ_ANY, NULL, &lim,
                                       NULL, &raw, &raw_size),
                        TS_EFORMAT);
    free(zeros);
    free(blob);
    ts_free(small);
    ts_writer_clear(&w);
}
END_TEST

START_TEST(test_sha256_known_answer)
{
    uint8_t d[TS_SHA256_BYTES];
    char hex[65];
    ck_assert_ts_ok(ts_sha256("abc", 3, d));
    ts_sha256_hex(d, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(test_writer_alloc_failure)
{
    ts_writer_t w;
    ts_writer_init(&w);
    ts_alloc_fail_after(1, true);
    ts_put_u64(&w, 1);
    ts_put_u64(&w, 2);
    ts_alloc_fail_after(0, false);
    ck_assert_ts_status(w.err, TS_ENOMEM);
    uint8_t *blob;
    size_t size;
    ck_assert_ts_status(ts_serial_seal(&w, TS_OBJ_USER_MIN, NULL, 0, &blob, &size), TS_ENOMEM);
    ts_writer_clear(&w);
}
END_TEST

TS_TEST_SUITE(serial)
{
    Suite *s = suite_create("serial");
    TCase *tc = ts_tcase("packing", 0);
    tcase_add_test(tc, test_width);
    tcase_add_test(tc, test_pack_every_width);
    tcase_add_test(tc, test_reader_validation);
    suite_add_tcase(s, tc);
    tc = ts_tcase("envelope", 0);
    tcase_add_test(tc, test_envelope_round_trip);
    tcase_add_test(tc, test_envelope_tampering);
    tcase_add_test(tc, test_decompression_bomb);
    tcase_add_test(tc, test_sha256_known_answer);
    tcase_add_test(tc, test_writer_alloc_failure);
    suite_add_tcase(s, tc);
    return s;
}

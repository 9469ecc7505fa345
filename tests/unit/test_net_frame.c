/*
 * Frames, zstd payloads and envelopes (server/net.h): round trips, and hostile
 * input — truncated frames, oversized length prefixes, unknown flags, garbage
 * payloads and decompression bombs — rejected with a status, never a crash.
 */
#include <zstd.h>

#include "server/net.h"
#include "tests/unit/ts_test.h"

static const ts_net_limits_t lim = {1 << 20, 4 << 20};

static void make_ping(Tessera__Envelope *env, Tessera__Ping *p, uint8_t *buf, size_t n,
                      uint64_t rid)
{
    tessera__envelope__init(env);
    tessera__ping__init(p);
    p->payload.data = buf;
    p->payload.len = n;
    env->request_id = rid;
    env->body_case = TESSERA__ENVELOPE__BODY_PING;
    env->ping = p;
}

START_TEST(test_roundtrip_plain_and_zstd)
{
    for (int compressible = 0; compressible < 2; compressible++) {
        size_t n = 100000;
        uint8_t *buf = malloc(n);
        for (size_t i = 0; i < n; i++)
            buf[i] = compressible ? (uint8_t)(i % 7) : (uint8_t)(rand() & 0xff);
        Tessera__Envelope env;
        Tessera__Ping p;
        make_ping(&env, &p, buf, n, 42);
        uint8_t *frame = NULL;
        size_t fn = 0;
        ck_assert_ts_ok(ts_net_envelope_pack(&env, &lim, 1024, 3, &frame, &fn));
        ck_assert_int_eq(frame[4] & TS_NET_FLAG_ZSTD, compressible ? TS_NET_FLAG_ZSTD : 0);
        if (compressible)
            ck_assert_msg(fn < n / 10, "compressed frame of %zu bytes for %zu", fn, n);
        Tessera__Envelope *out = NULL;
        size_t used = 0;
        ck_assert_ts_ok(ts_net_frame_decode_all(frame, fn, &lim, &out, &used));
        ck_assert_uint_eq(used, fn);
        ck_assert_ptr_nonnull(out);
        ck_assert_uint_eq(out->request_id, 42);
        ck_assert_int_eq(out->body_case, TESSERA__ENVELOPE__BODY_PING);
        ck_assert_uint_eq(out->ping->payload.len, n);
        ck_assert(memcmp(out->ping->payload.data, buf, n) == 0);
        ts_net_envelope_free(out);
        ts_free(frame);
        free(buf);
    }
}
END_TEST

START_TEST(test_truncated_frames_wait)
{
    uint8_t buf[300];
    memset(buf, 0xab, sizeof buf);
    Tessera__Envelope env;
    Tessera__Ping p;
    make_ping(&env, &p, buf, sizeof buf, 7);
    uint8_t *frame = NULL;
    size_t fn = 0;
    ck_assert_ts_ok(ts_net_envelope_pack(&env, &lim, 0, 0, &frame, &fn));
    /* Every proper prefix asks for more bytes and parses nothing. */
    for (size_t k = 0; k < fn; k++) {
        Tessera__Envelope *out = NULL;
        size_t used = 99;
        ck_assert_ts_ok(ts_net_frame_decode_all(frame, k, &lim, &out, &used));
        ck_assert_uint_eq(used, 0);
        ck_assert_ptr_null(out);
    }
    /* Two frames back to back: the first is parsed, the rest is left. */
    uint8_t *two = malloc(2 * fn);
    memcpy(two, frame, fn);
    memcpy(two + fn, frame, fn);
    Tessera__Envelope *out = NULL;
    size_t used = 0;
    ck_assert_ts_ok(ts_net_frame_decode_all(two, 2 * fn - 1, &lim, &out, &used));
    ck_assert_uint_eq(used, fn);
    ts_net_envelope_free(out);
    free(two);
    ts_free(frame);
}
END_TEST

START_TEST(test_header_limits)
{
    uint8_t hdr[TS_NET_HEADER_BYTES];
    ts_net_frame_t f;
    size_t used;
    /* A length over the limit is refused from the header alone. */
    ts_net_frame_header(hdr, lim.max_frame_bytes + 1, 0);
    ck_assert_ts_status(ts_net_frame_parse(hdr, sizeof hdr, &lim, &f, &used), TS_ELIMIT);
    uint8_t huge[5] = {0xff, 0xff, 0xff, 0xff, 0};
    ck_assert_ts_status(ts_net_frame_parse(huge, sizeof huge, &lim, &f, &used), TS_ELIMIT);
    /* Unknown flags and empty frames are protocol errors. */
    ts_net_frame_header(hdr, 10, 0x80);
    ck_assert_ts_status(ts_net_frame_parse(hdr, sizeof hdr, &lim, &f, &used), TS_EPROTO);
    ts_net_frame_header(hdr, 0, 0);
    ck_assert_ts_status(ts_net_frame_parse(hdr, sizeof hdr, &lim, &f, &used), TS_EPROTO);
    /* Exactly at the limit is fine (needs more bytes). */
    ts_net_frame_header(hdr, lim.max_frame_bytes, 0);
    ck_assert_ts_ok(ts_net_frame_parse(hdr, sizeof hdr, &lim, &f, &used));
    ck_assert_uint_eq(used, 0);
}
END_TEST

/* Frame a payload with a header. */
static uint8_t *framed(const void *payload, size_t n, uint8_t flags, size_t *fn)
{
    uint8_t *f = malloc(n + TS_NET_HEADER_BYTES);
    ts_net_frame_header(f, n, flags);
    memcpy(f + TS_NET_HEADER_BYTES, payload, n);
    *fn = n + TS_NET_HEADER_BYTES;
    return f;
}

START_TEST(test_garbage_never_crashes)
{
    ts_prng_t *rng = NULL;
    uint8_t seed[TS_SEED_BYTES] = {1, 2, 3};
    ck_assert_ts_ok(ts_prng_new_seeded(seed, 6, &rng));
    int rounds = ts_test_quick() ? 500 : 5000;
    int rejected = 0;
    for (int i = 0; i < rounds; i++) {
        uint64_t r;
        ts_prng_u64(rng, &r);
        size_t n = 1 + (size_t)(r % 300);
        uint8_t payload[300];
        ts_prng_bytes(rng, payload, n);
        size_t fn;
        uint8_t *f = framed(payload, n, (uint8_t)(r >> 32) & 1, &fn);
        Tessera__Envelope *out = NULL;
        size_t used = 0;
        ts_status_t st = ts_net_frame_decode_all(f, fn, &lim, &out, &used);
        if (st == TS_OK)
            ck_assert_uint_eq(used, fn);
        else
            rejected++;
        ts_net_envelope_free(out);
        free(f);
    }
    ck_assert_msg(rejected > rounds / 2, "only %d of %d garbage frames rejected", rejected, rounds);
    ts_prng_free(rng);
}
END_TEST

START_TEST(test_malformed_envelopes)
{
    /* Protobuf with a truncated length-delimited field. */
    uint8_t trunc[] = {0x2a, 0x10, 0x01};
    size_t fn;
    uint8_t *f = framed(trunc, sizeof trunc, 0, &fn);
    Tessera__Envelope *out = NULL;
    size_t used;
    ck_assert_ts_status(ts_net_frame_decode_all(f, fn, &lim, &out, &used), TS_EFORMAT);
    free(f);
    /* A valid envelope without a body. */
    uint8_t nobody[] = {0x08, 0x05};
    f = framed(nobody, sizeof nobody, 0, &fn);
    ck_assert_ts_status(ts_net_frame_decode_all(f, fn, &lim, &out, &used), TS_EPROTO);
    free(f);
    /* A key query whose hash is not 32 bytes. */
    Tessera__KeyQuery q = TESSERA__KEY_QUERY__INIT;
    uint8_t h[31] = {0};
    q.sha256.data = h;
    q.sha256.len = sizeof h;
    Tessera__Envelope env = TESSERA__ENVELOPE__INIT;
    env.body_case = TESSERA__ENVELOPE__BODY_KEY_QUERY;
    env.key_query = &q;
    uint8_t *frame;
    ck_assert_ts_ok(ts_net_envelope_pack(&env, &lim, 0, 0, &frame, &fn));
    ck_assert_ts_status(ts_net_frame_decode_all(frame, fn, &lim, &out, &used), TS_EPROTO);
    ck_assert_ptr_null(out);
    ts_free(frame);
}
END_TEST

START_TEST(test_decompression_bombs)
{
    ts_net_limits_t small = {1 << 20, 1 << 20};
    /* 1: a zstd frame that declares 32 MiB of zeros: refused from its header. */
    size_t big = 32u << 20;
    uint8_t *zeros = calloc(1, big);
    size_t bound = ZSTD_compressBound(big);
    uint8_t *z = malloc(bound);
    size_t zn = ZSTD_compress(z, bound, zeros, big, 1);
    ck_assert(!ZSTD_isError(zn));
    ck_assert_msg(zn < small.max_frame_bytes, "bomb of %zu bytes should fit a frame", zn);
    size_t fn;
    uint8_t *f = framed(z, zn, TS_NET_FLAG_ZSTD, &fn);
    Tessera__Envelope *out = NULL;
    size_t used;
    ck_assert_ts_status(ts_net_frame_decode_all(f, fn, &small, &out, &used), TS_ELIMIT);
    free(f);
    /* 2: the same data streamed without a declared size: refused as malformed. */
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_outBuffer ob = {z, bound, 0};
    ZSTD_inBuffer ib = {zeros, big / 2, 0};
    size_t rem;
    /* Feeding in two calls keeps the size out of the frame header. */
    while (ib.pos < ib.size)
        ck_assert(!ZSTD_isError(ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_continue)));
    ib.src = zeros + big / 2;
    ib.pos = 0;
    do {
        rem = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end);
        ck_assert(!ZSTD_isError(rem));
    } while (rem != 0);
    ZSTD_freeCCtx(c);
    f = framed(z, ob.pos, TS_NET_FLAG_ZSTD, &fn);
    ck_assert_ts_status(ts_net_frame_decode_all(f, fn, &small, &out, &used), TS_EFORMAT);
    free(f);
    /* 3: two concatenated zstd frames (trailing data) are refused. */
    uint8_t tiny[64] = {0};
    size_t t1 = ZSTD_compress(z, bound, tiny, sizeof tiny, 1);
    memcpy(z + t1, z, t1);
    f = framed(z, 2 * t1, TS_NET_FLAG_ZSTD, &fn);
    ck_assert_ts_status(ts_net_frame_decode_all(f, fn, &small, &out, &used), TS_EFORMAT);
    free(f);
    /* 4: a corrupted body under a valid header is refused, not trusted. */
    size_t pn = ZSTD_compress(z, bound, zeros, 100000, 1);
    for (size_t i = pn / 2; i < pn; i++)
        z[i] ^= 0x5a;
    f = framed(z, pn, TS_NET_FLAG_ZSTD, &fn);
    ck_assert_int_ne(ts_net_frame_decode_all(f, fn, &small, &out, &used), TS_OK);
    ck_assert_ptr_null(out);
    free(f);
    /* 5: an uncompressed payload over the decompressed cap. */
    ts_net_limits_t odd = {1 << 20, 1024};
    f = framed(zeros, 2000, 0, &fn);
    ck_assert_ts_status(ts_net_frame_decode_all(f, fn, &odd, &out, &used), TS_ELIMIT);
    free(f);
    free(z);
    free(zeros);
}
END_TEST

START_TEST(test_pack_limits_and_codes)
{
    ts_net_limits_t tiny = {1024, 1024};
    uint8_t buf[4000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    Tessera__Envelope env;
    Tessera__Ping p;
    make_ping(&env, &p, buf, sizeof buf, 1);
    uint8_t *frame = NULL;
    size_t fn;
    ck_assert_ts_status(ts_net_envelope_pack(&env, &tiny, 0, 0, &frame, &fn), TS_ELIMIT);
    ck_assert_ptr_null(frame);
    /* Status <-> wire code keeps the meaning of the common failures. */
    ts_status_t sts[] = {TS_EPROTO,    TS_ELIMIT,    TS_EINVAL,   TS_ENOENT,
                         TS_EPARAMS,   TS_ESECURITY, TS_EBUSY,    TS_ETIMEDOUT,
                         TS_ECANCELED, TS_ENOTSUP,   TS_EMISMATCH};
    for (size_t i = 0; i < sizeof sts / sizeof sts[0]; i++)
        ck_assert_int_eq(ts_net_error_status(ts_net_error_code(sts[i])), sts[i]);
    uint8_t h[32];
    char hex[65];
    for (int i = 0; i < 32; i++)
        h[i] = (uint8_t)(i * 37);
    ts_net_hex(h, 32, hex);
    uint8_t back[32];
    ck_assert(ts_net_unhex32(hex, back));
    ck_assert(memcmp(h, back, 32) == 0);
    ck_assert(!ts_net_unhex32("zz", back));
}
END_TEST

TS_TEST_SUITE(net_frame)
{
    Suite *s = suite_create("net_frame");
    TCase *tc = ts_tcase("frame", 0);
    tcase_add_test(tc, test_roundtrip_plain_and_zstd);
    tcase_add_test(tc, test_truncated_frames_wait);
    tcase_add_test(tc, test_header_limits);
    tcase_add_test(tc, test_garbage_never_crashes);
    tcase_add_test(tc, test_malformed_envelopes);
    tcase_add_test(tc, test_decompression_bombs);
    tcase_add_test(tc, test_pack_limits_and_codes);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * libFuzzer target: the frame/message parser of tesserad on arbitrary bytes.
 * A stream of frames is parsed the way the daemon parses a connection's
 * plaintext (header, limits, zstd payload, envelope, shape checks); nothing
 * may crash, leak or allocate beyond the limits. Successfully decoded
 * envelopes are re-packed and decoded again; a successful re-decode must agree.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ts_net_limits_t lim = {1 << 20, 4 << 20};
    size_t off = 0;
    while (off < size) {
        Tessera__Envelope *env = NULL;
        size_t used = 0;
        ts_status_t st = ts_net_frame_decode_all(data + off, size - off, &lim, &env, &used);
        if (st != TS_OK || used == 0) {
            ts_net_envelope_free(env);
            break;
        }
        if (env) {
            uint8_t *frame = NULL;
            size_t fn = 0;
            if (ts_net_envelope_pack(env, &lim, 64, 1, &frame, &fn) == TS_OK) {
                Tessera__Envelope *again = NULL;
                size_t used2 = 0;
                ts_status_t st2 = ts_net_frame_decode_all(frame, fn, &lim, &again, &used2);
                /* protobuf-c keeps unknown fields verbatim (even malformed ones), so
                 * the re-decode may refuse them; when it succeeds it must agree. */
                if (st2 == TS_OK && again &&
                    (used2 != fn || again->body_case != env->body_case ||
                     again->request_id != env->request_id))
                    __builtin_trap();
                ts_net_envelope_free(again);
                ts_free(frame);
            }
            ts_net_envelope_free(env);
        }
        off += used;
    }
    return 0;
}

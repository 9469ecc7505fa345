/* Resumable, content-addressed key upload (client side; see docs/PROTOCOL.md). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "server/tesserad.h"

ts_status_t ts_file_map(const char *path, const uint8_t **data, size_t *size, char *err,
                        size_t err_size)
{
    *data = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_size, "cannot open %s: %s", path, strerror(errno));
        return TS_EIO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, err_size, "%s is not a regular file", path);
        close(fd);
        return TS_EIO;
    }
    if (sb.st_size == 0) {
        close(fd);
        return TS_OK;
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, err_size, "cannot map %s: %s", path, strerror(errno));
        return TS_EIO;
    }
    *data = p;
    *size = (size_t)sb.st_size;
    return TS_OK;
}

void ts_file_unmap(const uint8_t *data, size_t size)
{
    if (data && size)
        munmap((void *)data, size);
}

static void report_from(const Tessera__KeyStatus *ks, ts_upload_report_t *rep)
{
    rep->size = ks->size;
    rep->chunk_count = ks->chunk_count;
    rep->complete = ks->complete;
}

ts_status_t ts_client_key_query(ts_client_t *c, const uint8_t sha[32], ts_upload_report_t *rep,
                                bool *known)
{
    memset(rep, 0, sizeof *rep);
    memcpy(rep->sha256, sha, 32);
    Tessera__KeyQuery q = TESSERA__KEY_QUERY__INIT;
    q.sha256.data = (uint8_t *)sha;
    q.sha256.len = 32;
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_KEY_QUERY;
    req.key_query = &q;
    Tessera__Envelope *r = NULL;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_KEY_STATUS, &r);
    if (st == TS_OK) {
        report_from(r->key_status, rep);
        *known = r->key_status->known;
        uint32_t have = 0;
        for (uint32_t i = 0; i < rep->chunk_count && i / 8 < r->key_status->have.len; i++)
            have += r->key_status->have.data[i / 8] >> (i % 8) & 1;
        rep->chunks_skipped = rep->complete ? rep->chunk_count : have;
    }
    ts_net_envelope_free(r);
    return st;
}

static void bar(uint32_t done, uint32_t total)
{
    int w = 40, fill = total ? (int)((uint64_t)done * (uint64_t)w / total) : w;
    fprintf(stderr, "\r[%.*s%*s] %u/%u chunks", fill, "########################################",
            w - fill, "", done, total);
    if (done == total)
        fputc('\n', stderr);
}

ts_status_t ts_client_key_upload(ts_client_t *c, const uint8_t *data, size_t size, const char *kind,
                                 const char *param_id, uint32_t max_chunks, bool progress,
                                 ts_upload_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    if (size == 0) {
        snprintf(c->err, sizeof c->err, "an empty key cannot be uploaded");
        return TS_EINVAL;
    }
    ts_sha256(data, size, rep->sha256);
    rep->size = size;
    Tessera__KeyUploadBegin b = TESSERA__KEY_UPLOAD_BEGIN__INIT;
    b.sha256.data = rep->sha256;
    b.sha256.len = 32;
    b.size = size;
    b.kind = (char *)(kind ? kind : "");
    b.param_id = (char *)(param_id ? param_id : "");
    Tessera__Envelope req = TESSERA__ENVELOPE__INIT;
    req.body_case = TESSERA__ENVELOPE__BODY_KEY_UPLOAD_BEGIN;
    req.key_upload_begin = &b;
    Tessera__Envelope *r = NULL;
    ts_status_t st = ts_client_call(c, &req, TESSERA__ENVELOPE__BODY_KEY_STATUS, &r);
    if (st != TS_OK) {
        ts_net_envelope_free(r);
        return st;
    }
    const Tessera__KeyStatus *ks = r->key_status;
    report_from(ks, rep);
    uint64_t chunk = ks->chunk_bytes;
    if (rep->complete) {
        rep->chunks_skipped = rep->chunk_count;
        ts_net_envelope_free(r);
        return TS_OK;
    }
    if (chunk == 0 || ks->chunk_count != (size + chunk - 1) / chunk ||
        ks->have.len < (ks->chunk_count + 7) / 8 || chunk + 4096 > c->limits.max_frame_bytes) {
        snprintf(c->err, sizeof c->err, "inconsistent key status from the server");
        ts_net_envelope_free(r);
        return TS_EPROTO;
    }
    uint32_t count = ks->chunk_count;
    uint8_t *have = ts_malloc((count + 7) / 8);
    if (!have) {
        ts_net_envelope_free(r);
        return TS_ENOMEM;
    }
    memcpy(have, ks->have.data, (count + 7) / 8);
    ts_net_envelope_free(r);
    for (uint32_t i = 0; i < count; i++)
        rep->chunks_skipped += have[i / 8] >> (i % 8) & 1;
    uint32_t done = rep->chunks_skipped;
    /* the window: requests in flight and their chunks (the server takes
     * chunks in any order, answers each, and verifies the key once the last
     * one is in: that answer comes after the others') */
    uint64_t rids[TS_CLIENT_UPLOAD_WINDOW];
    uint32_t inflight = 0, next = 0;
    for (;;) {
        while (st == TS_OK && inflight < TS_CLIENT_UPLOAD_WINDOW && next < count &&
               !(max_chunks && rep->chunks_sent + inflight >= max_chunks)) {
            uint32_t i = next++;
            if (have[i / 8] >> (i % 8) & 1)
                continue;
            uint64_t off = (uint64_t)i * chunk;
            size_t n = (size_t)(size - off < chunk ? size - off : chunk);
            Tessera__KeyChunk kc = TESSERA__KEY_CHUNK__INIT;
            kc.sha256.data = rep->sha256;
            kc.sha256.len = 32;
            kc.index = i;
            kc.data.data = (uint8_t *)data + off;
            kc.data.len = n;
            Tessera__Envelope creq = TESSERA__ENVELOPE__INIT;
            creq.body_case = TESSERA__ENVELOPE__BODY_KEY_CHUNK;
            creq.key_chunk = &kc;
            st = ts_client_send_request(c, &creq);
            if (st == TS_OK)
                rids[inflight++] = creq.request_id;
        }
        if (st != TS_OK || inflight == 0)
            break;
        Tessera__Envelope *ack = NULL;
        size_t w = 0;
        st = ts_client_recv_reply(c, rids, inflight, TESSERA__ENVELOPE__BODY_KEY_CHUNK_ACK, &ack,
                                  &w);
        if (st == TS_OK) {
            rep->chunks_sent++;
            rep->complete = rep->complete || ack->key_chunk_ack->complete;
            done++;
            if (progress)
                bar(done, count);
            rids[w] = rids[--inflight];
        }
        ts_net_envelope_free(ack);
    }
    ts_free(have);
    return st;
}

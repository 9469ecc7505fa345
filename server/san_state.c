/*
 * The Renyi sanitization mode's reply count, kept on disk (server/tesserad.h).
 *
 * The mode's bound covers 2^queries_log2 sanitized replies of a model, all
 * clients together and over the model's whole life: a count that a restart
 * resets bounds nothing. The state file is one line,
 *     tessera-sanitize-state 1 model=<sha256 hex of the weights file> replies=<n>
 * rewritten before each reply leaves: into <path>.tmp (mode 0600), fsync'ed,
 * renamed over <path>, the directory fsync'ed; a crash leaves the old count
 * or the new one, and the reply is not sent before the new one is on disk
 * (a failed step still counts: the count may overstate the replies sent,
 * never understate them). A lock file beside it, <path>.lock (never
 * replaced, unlike the state file's inode), is flock'ed while a registry
 * holds the count, so two daemons cannot share a count unknowingly. A file of other
 * weights is refused, not reset: rotating the model is the host's act
 * (remove the file).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/serial/serial.h"
#include "server/tesserad.h"

#define MAGIC "tessera-sanitize-state 1"

struct ts_san_state {
    char path[512];
    char model_hex[2 * TS_SHA256_BYTES + 1];
    int lock_fd;
    pthread_mutex_t mu;
    uint64_t replies;
};

static ts_status_t fsync_parent(const char *path)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", path);
    int d = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return TS_EIO;
    int r = fsync(d);
    close(d);
    return r == 0 ? TS_OK : TS_EIO;
}

/* Write the count (tmp file, fsync, rename, fsync of the directory). */
static ts_status_t persist(const ts_san_state_t *s, uint64_t replies)
{
    char tmp[600], line[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    int n =
        snprintf(line, sizeof line, MAGIC " model=%s replies=%" PRIu64 "\n", s->model_hex, replies);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return TS_EIO;
    bool ok = write(fd, line, (size_t)n) == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, s->path) != 0) {
        unlink(tmp);
        return TS_EIO;
    }
    return fsync_parent(s->path);
}

/* Parse the file's one line; why says what is wrong (with the line number). */
static ts_status_t parse(const char *path, const char *text, size_t size, const char *model_hex,
                         uint64_t *replies, char *why, size_t why_size)
{
    const char *nl = memchr(text, '\n', size);
    size_t len = nl ? (size_t)(nl - text) : size;
    if (nl && (size_t)(nl - text) + 1 != size) {
        snprintf(why, why_size, "%s:2: one line expected, more found", path);
        return TS_EFORMAT;
    }
    char line[256], hex[80];
    if (len >= sizeof line) {
        snprintf(why, why_size, "%s:1: line too long (%zu bytes)", path, len);
        return TS_EFORMAT;
    }
    memcpy(line, text, len);
    line[len] = 0;
    char num[32];
    int used = 0;
    if (strncmp(line, MAGIC " model=", sizeof MAGIC + 6) != 0 ||
        sscanf(line + sizeof MAGIC + 6, "%79[0-9a-f] replies=%31[0-9]%n", hex, num, &used) != 2 ||
        line[sizeof MAGIC + 6 + used] != 0 || strlen(hex) != 2 * TS_SHA256_BYTES) {
        snprintf(why, why_size,
                 "%s:1: not a sanitize state line ('" MAGIC
                 " model=<64 hex digits> replies=<count>')",
                 path);
        return TS_EFORMAT;
    }
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(num, &end, 10);
    if (errno || *end) {
        snprintf(why, why_size, "%s:1: replies=%s is out of range", path, num);
        return TS_EFORMAT;
    }
    if (strcmp(hex, model_hex) != 0) {
        snprintf(why, why_size,
                 "%s:1: counts the replies of other weights (sha256 %.16s..., these are "
                 "%.16s...): the model changed; remove the file to start the new weights' count",
                 path, hex, model_hex);
        return TS_ECONFIG;
    }
    *replies = (uint64_t)v;
    return TS_OK;
}

/* The count in the open file fd (*empty: a new, empty file). */
static ts_status_t read_state(int fd, const char *path, const char *model_hex, uint64_t *replies,
                              bool *empty, char *why, size_t why_size)
{
    struct stat sb;
    *empty = false;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > 4096) {
        snprintf(why, why_size, "%s: not a regular file of at most 4096 bytes", path);
        return TS_EFORMAT;
    }
    if (sb.st_size == 0) {
        *empty = true;
        *replies = 0;
        return TS_OK;
    }
    char text[4097];
    ssize_t r = pread(fd, text, (size_t)sb.st_size, 0);
    if (r != sb.st_size) {
        snprintf(why, why_size, "%s: cannot read: %s", path, strerror(errno));
        return TS_EIO;
    }
    return parse(path, text, (size_t)r, model_hex, replies, why, why_size);
}

ts_status_t ts_san_state_check(const char *path, const uint8_t model_sha[TS_SHA256_BYTES],
                               uint64_t *replies, char *why, size_t why_size)
{
    char hex[2 * TS_SHA256_BYTES + 1];
    ts_sha256_hex(model_sha, hex);
    *replies = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return TS_OK; /* would start at 0 */
    if (fd < 0) {
        snprintf(why, why_size, "%s: cannot open: %s", path, strerror(errno));
        return TS_EIO;
    }
    bool empty;
    ts_status_t st = read_state(fd, path, hex, replies, &empty, why, why_size);
    close(fd);
    return st;
}

ts_status_t ts_san_state_open(const char *path, const uint8_t model_sha[TS_SHA256_BYTES],
                              ts_san_state_t **out, char *why, size_t why_size)
{
    *out = NULL;
    if (strlen(path) >= sizeof((ts_san_state_t *)0)->path - 8) {
        snprintf(why, why_size, "%s: path too long", path);
        return TS_EINVAL;
    }
    ts_san_state_t *s = ts_calloc(1, sizeof *s);
    if (!s)
        return TS_ENOMEM;
    s->lock_fd = -1;
    snprintf(s->path, sizeof s->path, "%s", path);
    ts_sha256_hex(model_sha, s->model_hex);
    pthread_mutex_init(&s->mu, NULL);
    ts_status_t st = TS_OK;
    /* the lock lives on PATH.lock, which is never replaced: the state file's
     * inode changes with every rename */
    char lock[600];
    snprintf(lock, sizeof lock, "%s.lock", path);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        snprintf(why, why_size, "%s: cannot open: %s", lock, strerror(errno));
        st = TS_EIO;
        goto fail;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(why, why_size,
                 "%s: locked by another holder (another tesserad, or another model of this "
                 "one; %s): a count must have one owner",
                 path, lock);
        st = TS_ECONFIG;
        goto fail;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    bool empty = fd < 0 && errno == ENOENT;
    if (fd < 0 && !empty) {
        snprintf(why, why_size, "%s: cannot open: %s", path, strerror(errno));
        st = TS_EIO;
        goto fail;
    }
    if (fd >= 0) {
        st = read_state(fd, path, s->model_hex, &s->replies, &empty, why, why_size);
        close(fd);
        if (st != TS_OK)
            goto fail;
    }
    if (empty && (st = persist(s, 0)) != TS_OK) { /* new: the count starts */
        snprintf(why, why_size, "%s: cannot write: %s", path, strerror(errno));
        goto fail;
    }
    *out = s;
    return TS_OK;
fail:
    ts_san_state_free(s);
    return st;
}

void ts_san_state_free(ts_san_state_t *s)
{
    if (!s)
        return;
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the lock */
    pthread_mutex_destroy(&s->mu);
    ts_free(s);
}

uint64_t ts_san_state_replies(const ts_san_state_t *s)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&s->mu; /* the count's lock, not its value */
    pthread_mutex_lock(mu);
    uint64_t n = s->replies;
    pthread_mutex_unlock(mu);
    return n;
}

ts_status_t ts_san_state_take(ts_san_state_t *s, uint64_t limit, uint64_t *n)
{
    pthread_mutex_lock(&s->mu);
    ts_status_t st = TS_OK;
    if (limit && s->replies >= limit) {
        st = TS_ELIMIT;
    } else if (s->replies == UINT64_MAX) {
        st = TS_ELIMIT;
    } else {
        /* counted in memory even if the write fails: never under */
        s->replies++;
        st = persist(s, s->replies);
    }
    *n = s->replies;
    pthread_mutex_unlock(&s->mu);
    return st;
}

ts_status_t ts_sha256_path(const char *path, uint8_t out[TS_SHA256_BYTES])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TS_EIO;
    struct stat sb;
    ts_status_t st = fstat(fd, &sb) == 0 ? ts_sha256_fd(fd, (uint64_t)sb.st_size, out) : TS_EIO;
    close(fd);
    return st;
}

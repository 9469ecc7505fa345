/*
 * The content-addressed key store (server/tesserad.h).
 *
 * Crash safety: a key is written into <hex>.part (mode 0600), verified against
 * its SHA-256, fsync'ed, renamed to <hex>.key and the directory fsync'ed; a
 * crash at any point leaves either no <hex>.key or a complete one. <hex>.map
 * records the chunks held so an upload resumes after a reconnect or restart;
 * the final hash check catches a map that claims more than the .part holds.
 * Files with other names (stray temporaries) are ignored.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/tesserad.h"

#define MAP_MAGIC  "TSKMAP01"
#define MAP_HEADER 24

typedef struct upload {
    struct upload *next;
    char ns[80];
    uint8_t sha[32];
    uint64_t size, chunk_bytes;
    uint32_t count, received;
    uint8_t *have;
    int fd, map_fd;
    bool finishing;
} upload_t;

typedef struct ns_usage {
    struct ns_usage *next;
    char ns[80];
    uint64_t used;
} ns_usage_t;

struct ts_keystore {
    char dir[512];
    uint64_t quota, chunk_bytes;
    upload_t *uploads;
    ns_usage_t *usage;
    uint64_t count;
    pthread_mutex_t mu;
};

static bool ns_ok(const char *ns)
{
    size_t n = strlen(ns);
    if (n == 0 || n >= 80)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = ns[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

static int path_of(const ts_keystore_t *ks, const char *ns, const uint8_t *sha, const char *ext,
                   char *out, size_t size)
{
    char hex[65];
    if (sha)
        ts_net_hex(sha, 32, hex);
    int n = sha ? snprintf(out, size, "%s/%s/%s%s", ks->dir, ns, hex, ext)
                : snprintf(out, size, "%s/%s", ks->dir, ns);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static ts_status_t mkdir_p(const char *path)
{
    char buf[600];
    size_t n = strlen(path);
    if (n >= sizeof buf)
        return TS_EINVAL;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0700) != 0 && errno != EEXIST)
                return TS_EIO;
            buf[i] = c;
        }
    }
    return TS_OK;
}

ts_status_t ts_keystore_open(const char *dir, uint64_t quota_bytes, uint64_t chunk_bytes,
                             ts_keystore_t **out)
{
    *out = NULL;
    if (!dir || !*dir || strlen(dir) >= 400 || chunk_bytes == 0)
        return TS_EINVAL;
    ts_status_t st = mkdir_p(dir);
    if (st != TS_OK)
        return st;
    ts_keystore_t *ks = ts_calloc(1, sizeof *ks);
    if (!ks)
        return TS_ENOMEM;
    snprintf(ks->dir, sizeof ks->dir, "%s", dir);
    ks->quota = quota_bytes;
    ks->chunk_bytes = chunk_bytes;
    pthread_mutex_init(&ks->mu, NULL);
    /* Count the stored keys (for stats). */
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.' || !ns_ok(e->d_name))
                continue;
            char sub[600];
            snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
            DIR *s = opendir(sub);
            if (!s)
                continue;
            struct dirent *f;
            while ((f = readdir(s)) != NULL) {
                size_t l = strlen(f->d_name);
                if (l == 68 && strcmp(f->d_name + 64, ".key") == 0)
                    ks->count++;
            }
            closedir(s);
        }
        closedir(d);
    }
    *out = ks;
    return TS_OK;
}

static void upload_free(upload_t *u)
{
    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    if (u->map_fd >= 0)
        close(u->map_fd);
    ts_free(u->have);
    ts_free(u);
}

void ts_keystore_free(ts_keystore_t *ks)
{
    if (!ks)
        return;
    for (upload_t *u = ks->uploads, *n; u; u = n) {
        n = u->next;
        upload_free(u);
    }
    for (ns_usage_t *u = ks->usage, *n; u; u = n) {
        n = u->next;
        ts_free(u);
    }
    pthread_mutex_destroy(&ks->mu);
    ts_free(ks);
}

void ts_keystore_set_quota(ts_keystore_t *ks, uint64_t quota_bytes)
{
    pthread_mutex_lock(&ks->mu);
    ks->quota = quota_bytes;
    pthread_mutex_unlock(&ks->mu);
}

uint64_t ts_keystore_count(const ts_keystore_t *ks)
{
    return ks->count;
}

/* Bytes a namespace holds on disk: complete keys plus reserved uploads. Locked. */
static ns_usage_t *usage_of(ts_keystore_t *ks, const char *ns)
{
    for (ns_usage_t *u = ks->usage; u; u = u->next)
        if (strcmp(u->ns, ns) == 0)
            return u;
    ns_usage_t *u = ts_calloc(1, sizeof *u);
    if (!u)
        return NULL;
    snprintf(u->ns, sizeof u->ns, "%s", ns);
    char dir[600];
    if (path_of(ks, ns, NULL, "", dir, sizeof dir) == 0) {
        DIR *d = opendir(dir);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                size_t l = strlen(e->d_name);
                bool key = l == 68 && strcmp(e->d_name + 64, ".key") == 0;
                bool part = l == 69 && strcmp(e->d_name + 64, ".part") == 0;
                if (!key && !part)
                    continue;
                char p[1024];
                struct stat sb;
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                if (stat(p, &sb) == 0)
                    u->used += (uint64_t)sb.st_size;
            }
            closedir(d);
        }
    }
    u->next = ks->usage;
    ks->usage = u;
    return u;
}

uint64_t ts_keystore_usage(ts_keystore_t *ks, const char *ns)
{
    pthread_mutex_lock(&ks->mu);
    ns_usage_t *u = ns_ok(ns) ? usage_of(ks, ns) : NULL;
    uint64_t v = u ? u->used : 0;
    pthread_mutex_unlock(&ks->mu);
    return v;
}

static upload_t *find_upload(ts_keystore_t *ks, const char *ns, const uint8_t sha[32])
{
    for (upload_t *u = ks->uploads; u; u = u->next)
        if (strcmp(u->ns, ns) == 0 && memcmp(u->sha, sha, 32) == 0)
            return u;
    return NULL;
}

static void fill_status(const upload_t *u, ts_key_status_t *st)
{
    memset(st, 0, sizeof *st);
    st->known = true;
    st->size = u->size;
    st->chunk_bytes = u->chunk_bytes;
    st->chunk_count = u->count;
    st->received = u->received;
    st->have = u->have;
    st->finishing = u->finishing;
}

static bool key_file_size(ts_keystore_t *ks, const char *ns, const uint8_t sha[32], uint64_t *size)
{
    char p[700];
    struct stat sb;
    if (path_of(ks, ns, sha, ".key", p, sizeof p) != 0 || stat(p, &sb) != 0)
        return false;
    if (size)
        *size = (uint64_t)sb.st_size;
    return true;
}

static bool complete_status(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                            ts_key_status_t *st)
{
    uint64_t size;
    if (!key_file_size(ks, ns, sha, &size))
        return false;
    memset(st, 0, sizeof *st);
    st->known = true;
    st->complete = true;
    st->size = size;
    st->chunk_bytes = ks->chunk_bytes;
    st->chunk_count = (uint32_t)((size + ks->chunk_bytes - 1) / ks->chunk_bytes);
    st->received = st->chunk_count;
    return true;
}

/* Resume an upload whose .part and .map survived a restart. Locked. */
static upload_t *resume_from_disk(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                                  uint64_t size)
{
    char part[700], map[700];
    if (path_of(ks, ns, sha, ".part", part, sizeof part) ||
        path_of(ks, ns, sha, ".map", map, sizeof map))
        return NULL;
    int fd = open(part, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    int mfd = open(map, O_RDWR | O_CLOEXEC);
    if (mfd < 0) {
        close(fd);
        return NULL;
    }
    uint8_t hdr[MAP_HEADER];
    upload_t *u = NULL;
    if (pread(mfd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr || memcmp(hdr, MAP_MAGIC, 8) != 0)
        goto fail;
    uint64_t msize = 0, mchunk = 0;
    for (int i = 0; i < 8; i++) {
        msize = msize << 8 | hdr[8 + i];
        mchunk = mchunk << 8 | hdr[16 + i];
    }
    if (msize != size || mchunk == 0 || mchunk > ((uint64_t)1 << 30))
        goto fail;
    u = ts_calloc(1, sizeof *u);
    if (!u)
        goto fail;
    u->count = (uint32_t)((size + mchunk - 1) / mchunk);
    u->have = ts_calloc((u->count + 7) / 8 + 1, 1);
    if (!u->have)
        goto fail;
    ssize_t want = (ssize_t)((u->count + 7) / 8);
    if (pread(mfd, u->have, (size_t)want, MAP_HEADER) != want)
        goto fail;
    for (uint32_t i = 0; i < u->count; i++)
        if (u->have[i / 8] >> (i % 8) & 1)
            u->received++;
    snprintf(u->ns, sizeof u->ns, "%s", ns);
    memcpy(u->sha, sha, 32);
    u->size = size;
    u->chunk_bytes = mchunk;
    u->fd = fd;
    u->map_fd = mfd;
    return u;
fail:
    if (u)
        ts_free(u->have);
    ts_free(u);
    close(fd);
    close(mfd);
    return NULL;
}

ts_status_t ts_keystore_begin(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                              uint64_t size, ts_key_status_t *st)
{
    if (!ns_ok(ns))
        return TS_EINVAL;
    if (size == 0)
        return TS_EINVAL;
    ts_status_t ret = TS_OK;
    pthread_mutex_lock(&ks->mu);
    upload_t *u = find_upload(ks, ns, sha);
    if (u) {
        ret = u->size == size ? TS_OK : TS_EMISMATCH;
        if (ret == TS_OK)
            fill_status(u, st);
        goto out;
    }
    if (complete_status(ks, ns, sha, st)) {
        ret = st->size == size ? TS_OK : TS_EMISMATCH;
        goto out;
    }
    char dir[600];
    if (path_of(ks, ns, NULL, "", dir, sizeof dir) || mkdir_p(dir) != TS_OK) {
        ret = TS_EIO;
        goto out;
    }
    u = resume_from_disk(ks, ns, sha, size);
    if (!u) {
        ns_usage_t *use = usage_of(ks, ns);
        if (!use) {
            ret = TS_ENOMEM;
            goto out;
        }
        if (use->used > ks->quota || size > ks->quota - use->used) {
            ret = TS_ELIMIT;
            goto out;
        }
        uint64_t count64 = (size + ks->chunk_bytes - 1) / ks->chunk_bytes;
        if (count64 > UINT32_MAX / 2) {
            ret = TS_ELIMIT;
            goto out;
        }
        char part[700], map[700];
        path_of(ks, ns, sha, ".part", part, sizeof part);
        path_of(ks, ns, sha, ".map", map, sizeof map);
        u = ts_calloc(1, sizeof *u);
        if (!u) {
            ret = TS_ENOMEM;
            goto out;
        }
        u->fd = u->map_fd = -1;
        u->count = (uint32_t)count64;
        u->have = ts_calloc((u->count + 7) / 8 + 1, 1);
        u->fd = open(part, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        u->map_fd = open(map, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (!u->have || u->fd < 0 || u->map_fd < 0 || ftruncate(u->fd, (off_t)size) != 0) {
            ret = u->have ? TS_EIO : TS_ENOMEM;
            upload_free(u);
            unlink(part);
            unlink(map);
            goto out;
        }
        uint8_t hdr[MAP_HEADER];
        memcpy(hdr, MAP_MAGIC, 8);
        for (int i = 0; i < 8; i++) {
            hdr[8 + i] = (uint8_t)(size >> (56 - 8 * i));
            hdr[16 + i] = (uint8_t)(ks->chunk_bytes >> (56 - 8 * i));
        }
        size_t mapn = MAP_HEADER + (u->count + 7) / 8;
        uint8_t *zero = ts_calloc(mapn, 1);
        if (!zero) {
            ret = TS_ENOMEM;
            upload_free(u);
            unlink(part);
            unlink(map);
            goto out;
        }
        memcpy(zero, hdr, MAP_HEADER);
        ssize_t w = pwrite(u->map_fd, zero, mapn, 0);
        ts_free(zero);
        if (w != (ssize_t)mapn) {
            ret = TS_EIO;
            upload_free(u);
            unlink(part);
            unlink(map);
            goto out;
        }
        snprintf(u->ns, sizeof u->ns, "%s", ns);
        memcpy(u->sha, sha, 32);
        u->size = size;
        u->chunk_bytes = ks->chunk_bytes;
        use->used += size;
    }
    u->next = ks->uploads;
    ks->uploads = u;
    fill_status(u, st);
out:
    pthread_mutex_unlock(&ks->mu);
    return ret;
}

ts_status_t ts_keystore_query(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                              ts_key_status_t *st)
{
    memset(st, 0, sizeof *st);
    if (!ns_ok(ns))
        return TS_EINVAL;
    pthread_mutex_lock(&ks->mu);
    upload_t *u = find_upload(ks, ns, sha);
    if (u)
        fill_status(u, st);
    else
        complete_status(ks, ns, sha, st);
    pthread_mutex_unlock(&ks->mu);
    return TS_OK;
}

ts_status_t ts_keystore_put_chunk(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                                  uint32_t index, const uint8_t *data, size_t n, bool *all_in)
{
    *all_in = false;
    if (!ns_ok(ns))
        return TS_EINVAL;
    ts_status_t ret = TS_OK;
    pthread_mutex_lock(&ks->mu);
    upload_t *u = find_upload(ks, ns, sha);
    if (!u) {
        ret = key_file_size(ks, ns, sha, NULL) ? TS_EEXIST : TS_ENOENT;
        goto out;
    }
    if (u->finishing) {
        ret = TS_EBUSY;
        goto out;
    }
    if (index >= u->count) {
        ret = TS_ERANGE;
        goto out;
    }
    uint64_t off = (uint64_t)index * u->chunk_bytes;
    uint64_t want = u->size - off < u->chunk_bytes ? u->size - off : u->chunk_bytes;
    if (n != want) {
        ret = TS_EINVAL;
        goto out;
    }
    if (pwrite(u->fd, data, n, (off_t)off) != (ssize_t)n) {
        ret = TS_EIO;
        goto out;
    }
    if (!(u->have[index / 8] >> (index % 8) & 1)) {
        u->have[index / 8] |= (uint8_t)(1u << (index % 8));
        u->received++;
        if (pwrite(u->map_fd, &u->have[index / 8], 1, MAP_HEADER + index / 8) != 1) {
            ret = TS_EIO;
            goto out;
        }
    }
    *all_in = u->received == u->count;
out:
    pthread_mutex_unlock(&ks->mu);
    return ret;
}

ts_status_t ts_keystore_finish_begin(ts_keystore_t *ks, const char *ns, const uint8_t sha[32])
{
    pthread_mutex_lock(&ks->mu);
    upload_t *u = find_upload(ks, ns, sha);
    ts_status_t ret = TS_OK;
    if (!u)
        ret = TS_ENOENT;
    else if (u->finishing)
        ret = TS_EBUSY;
    else if (u->received != u->count)
        ret = TS_EINVAL;
    else
        u->finishing = true;
    pthread_mutex_unlock(&ks->mu);
    return ret;
}

ts_status_t ts_keystore_part_load(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                                  uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    pthread_mutex_lock(&ks->mu);
    upload_t *u = find_upload(ks, ns, sha);
    int fd = u && u->finishing ? u->fd : -1;
    uint64_t n = u ? u->size : 0;
    pthread_mutex_unlock(&ks->mu);
    if (fd < 0)
        return TS_ENOENT;
    if (n > ((uint64_t)1 << 32))
        return TS_ELIMIT;
    uint8_t *buf = ts_malloc((size_t)n);
    if (!buf)
        return TS_ENOMEM;
    for (size_t off = 0; off < n;) {
        ssize_t r = pread(fd, buf + off, (size_t)n - off, (off_t)off);
        if (r <= 0) {
            ts_free(buf);
            return TS_EIO;
        }
        off += (size_t)r;
    }
    *data = buf;
    *size = (size_t)n;
    return TS_OK;
}

static ts_status_t fsync_dir(const char *dir)
{
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return TS_EIO;
    int r = fsync(d);
    close(d);
    return r == 0 ? TS_OK : TS_EIO;
}

ts_status_t ts_keystore_finish(ts_keystore_t *ks, const char *ns, const uint8_t sha[32])
{
    pthread_mutex_lock(&ks->mu);
    upload_t *u = find_upload(ks, ns, sha);
    int fd = u && u->finishing ? u->fd : -1;
    uint64_t size = u ? u->size : 0;
    pthread_mutex_unlock(&ks->mu);
    if (fd < 0)
        return TS_ENOENT;
    /* The upload is ours while finishing: nobody else touches fd. */
    uint8_t got[32];
    ts_status_t ret = ts_sha256_fd(fd, size, got);
    if (ret != TS_OK)
        return ret;
    if (memcmp(got, sha, 32) != 0)
        return TS_EFORMAT;
    if (fsync(fd) != 0)
        return TS_EIO;
    char part[700], key[700], dir[600];
    path_of(ks, ns, sha, ".part", part, sizeof part);
    path_of(ks, ns, sha, ".key", key, sizeof key);
    path_of(ks, ns, NULL, "", dir, sizeof dir);
    if (rename(part, key) != 0)
        return TS_EIO;
    return fsync_dir(dir);
}

void ts_keystore_finish_end(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                            ts_status_t result)
{
    pthread_mutex_lock(&ks->mu);
    upload_t **pp = &ks->uploads;
    while (*pp && !(strcmp((*pp)->ns, ns) == 0 && memcmp((*pp)->sha, sha, 32) == 0))
        pp = &(*pp)->next;
    upload_t *u = *pp;
    if (!u) {
        pthread_mutex_unlock(&ks->mu);
        return;
    }
    *pp = u->next;
    char part[700], map[700];
    path_of(ks, ns, sha, ".part", part, sizeof part);
    path_of(ks, ns, sha, ".map", map, sizeof map);
    if (result == TS_OK) {
        ks->count++;
    } else {
        /* A corrupt upload is forgotten entirely; the client starts over. */
        unlink(part);
        ns_usage_t *use = usage_of(ks, ns);
        if (use)
            use->used = use->used > u->size ? use->used - u->size : 0;
    }
    unlink(map);
    upload_free(u);
    pthread_mutex_unlock(&ks->mu);
}

bool ts_keystore_has(ts_keystore_t *ks, const char *ns, const uint8_t sha[32], uint64_t *size)
{
    if (!ns_ok(ns))
        return false;
    return key_file_size(ks, ns, sha, size);
}

ts_status_t ts_keystore_load(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                             uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    if (!ns_ok(ns))
        return TS_EINVAL;
    char p[700];
    if (path_of(ks, ns, sha, ".key", p, sizeof p))
        return TS_EINVAL;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TS_ENOENT;
    struct stat sb;
    ts_status_t ret = TS_OK;
    uint8_t *buf = NULL;
    if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
        ret = TS_EIO;
        goto out_close;
    }
    buf = ts_malloc((size_t)sb.st_size);
    if (!buf) {
        ret = TS_ENOMEM;
        goto out_close;
    }
    for (size_t off = 0; off < (size_t)sb.st_size;) {
        ssize_t r = pread(fd, buf + off, (size_t)sb.st_size - off, (off_t)off);
        if (r <= 0) {
            ret = TS_EIO;
            goto out_free;
        }
        off += (size_t)r;
    }
    uint8_t got[32];
    ts_sha256(buf, (size_t)sb.st_size, got);
    if (memcmp(got, sha, 32) != 0) {
        ret = TS_EFORMAT;
        goto out_free;
    }
    *data = buf;
    *size = (size_t)sb.st_size;
    close(fd);
    return TS_OK;
out_free:
    ts_free(buf);
out_close:
    close(fd);
    return ret;
}

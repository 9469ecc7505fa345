/*
 * Client-side CKKS helpers of tessera: key generation and loading (the secret
 * key is stored as a 32-byte seed, mode 0600; secret and public keys are
 * regenerated from it deterministically), and vector files.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "server/ckks_wire.h"

#define SK_MAGIC  "TSSKSEED"
#define STREAM_SK 1
#define STREAM_PK 2

static ts_status_t keys_from_seed(ts_ckks_params_t *p, const uint8_t seed[TS_SEED_BYTES],
                                  ts_ckks_secret_key_t **sk, ts_ckks_public_key_t **pk)
{
    ts_prng_t *r1 = NULL, *r2 = NULL;
    ts_status_t st = ts_prng_new_seeded(seed, STREAM_SK, &r1);
    if (st == TS_OK)
        st = ts_prng_new_seeded(seed, STREAM_PK, &r2);
    if (st == TS_OK)
        st = ts_ckks_keygen_secret(p, r1, sk);
    if (st == TS_OK)
        st = ts_ckks_keygen_public(*sk, r2, pk);
    ts_prng_free(r1);
    ts_prng_free(r2);
    return st;
}

static ts_status_t write_file(const char *path, const void *data, size_t n, mode_t mode, char *err,
                              size_t err_size)
{
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(err, err_size, "cannot create %s: %s", tmp, strerror(errno));
        return TS_EIO;
    }
    const uint8_t *p = data;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, p + off, n - off);
        if (w <= 0) {
            snprintf(err, err_size, "cannot write %s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return TS_EIO;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        snprintf(err, err_size, "cannot finish %s: %s", path, strerror(errno));
        unlink(tmp);
        return TS_EIO;
    }
    return TS_OK;
}

ts_status_t ts_cli_keygen(const char *dir, const char *params_dir, const char *preset,
                          bool allow_insecure, char *pk_sha_hex, char *err, size_t err_size)
{
    ts_ckks_params_t *p = NULL;
    uint8_t id[32];
    ts_status_t st = ts_wire_params_get(params_dir, preset, allow_insecure, &p, id, err, err_size);
    if (st != TS_OK)
        return st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_size, "cannot create %s: %s", dir, strerror(errno));
        ts_ckks_params_free(p);
        return TS_EIO;
    }
    uint8_t file[8 + 64 + TS_SEED_BYTES];
    memset(file, 0, sizeof file);
    memcpy(file, SK_MAGIC, 8);
    snprintf((char *)file + 8, 64, "%s", preset);
    uint8_t *seed = file + 8 + 64;
    ts_ckks_secret_key_t *sk = NULL;
    ts_ckks_public_key_t *pk = NULL;
    uint8_t *pkb = NULL;
    size_t pkn = 0;
    st = ts_os_random(seed, TS_SEED_BYTES);
    if (st == TS_OK)
        st = keys_from_seed(p, seed, &sk, &pk);
    if (st == TS_OK)
        st = ts_wire_pk_encode(pk, id, &pkb, &pkn);
    if (st != TS_OK) {
        snprintf(err, err_size, "key generation failed: %s", ts_strerror(st));
        goto out;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/secret.key", dir);
    if (access(path, F_OK) == 0) {
        snprintf(err, err_size, "%s exists; refusing to overwrite a secret key", path);
        st = TS_EEXIST;
        goto out;
    }
    st = write_file(path, file, sizeof file, 0600, err, err_size);
    if (st != TS_OK)
        goto out;
    snprintf(path, sizeof path, "%s/public.key", dir);
    st = write_file(path, pkb, pkn, 0644, err, err_size);
    if (st == TS_OK && pk_sha_hex) {
        uint8_t h[32];
        ts_sha256(pkb, pkn, h);
        ts_sha256_hex(h, pk_sha_hex);
    }
out:
    ts_memzero(file, sizeof file);
    ts_free(pkb);
    ts_ckks_public_key_free(pk);
    ts_ckks_secret_key_free(sk);
    ts_ckks_params_free(p);
    return st;
}

ts_status_t ts_cli_keys_load(const char *dir, const char *params_dir, bool allow_insecure,
                             ts_cli_keys_t *keys, char *err, size_t err_size)
{
    memset(keys, 0, sizeof *keys);
    char path[600];
    snprintf(path, sizeof path, "%s/secret.key", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_size, "cannot open %s: %s (run tessera keygen)", path, strerror(errno));
        return TS_EIO;
    }
    struct stat sb;
    uint8_t file[8 + 64 + TS_SEED_BYTES];
    ssize_t r = read(fd, file, sizeof file);
    bool loose = fstat(fd, &sb) == 0 && (sb.st_mode & 077);
    close(fd);
    if (r != (ssize_t)sizeof file || memcmp(file, SK_MAGIC, 8) != 0 || !memchr(file + 8, 0, 64)) {
        ts_memzero(file, sizeof file);
        snprintf(err, err_size, "%s is not a tessera secret key", path);
        return TS_EFORMAT;
    }
    if (loose)
        fprintf(stderr, "tessera: warning: %s is readable by others (chmod 600)\n", path);
    memcpy(keys->params_name, file + 8, sizeof keys->params_name);
    keys->params_name[sizeof keys->params_name - 1] = '\0';
    ts_status_t st = ts_wire_params_get(params_dir, keys->params_name, allow_insecure,
                                        &keys->params, keys->params_id, err, err_size);
    if (st == TS_OK) {
        st = keys_from_seed(keys->params, file + 72, &keys->sk, &keys->pk);
        if (st != TS_OK)
            snprintf(err, err_size, "cannot regenerate the keys: %s", ts_strerror(st));
    }
    ts_memzero(file, sizeof file);
    if (st != TS_OK)
        ts_cli_keys_clear(keys);
    return st;
}

void ts_cli_keys_clear(ts_cli_keys_t *keys)
{
    ts_ckks_public_key_free(keys->pk);
    ts_ckks_secret_key_free(keys->sk);
    ts_ckks_params_free(keys->params);
    memset(keys, 0, sizeof *keys);
}

/* ---------------------------------------------------------------- vectors */

static const char *guess_format(const char *path, const char *format)
{
    if (format && *format)
        return format;
    const char *dot = strrchr(path, '.');
    if (dot && !strcmp(dot, ".json"))
        return "json";
    if (dot && (!strcmp(dot, ".f32") || !strcmp(dot, ".bin")))
        return "f32";
    return "csv";
}

ts_status_t ts_cli_vector_read(const char *path, const char *format, double **values, size_t *count,
                               char *err, size_t err_size)
{
    *values = NULL;
    *count = 0;
    format = guess_format(path, format);
    const uint8_t *data = NULL;
    size_t size = 0;
    ts_status_t st = ts_file_map(path, &data, &size, err, err_size);
    if (st != TS_OK)
        return st;
    double *v = NULL;
    size_t n = 0;
    if (!strcmp(format, "f32")) {
        if (size % 4) {
            snprintf(err, err_size, "%s: size %zu is not a multiple of 4 (float32)", path, size);
            st = TS_EFORMAT;
            goto out;
        }
        n = size / 4;
        v = malloc((n ? n : 1) * sizeof *v);
        for (size_t i = 0; v && i < n; i++) {
            float f;
            memcpy(&f, data + 4 * i, 4);
            v[i] = f;
        }
    } else if (!strcmp(format, "csv") || !strcmp(format, "json")) {
        bool json = format[0] == 'j';
        char *text = malloc(size + 1);
        if (!text) {
            st = TS_ENOMEM;
            goto out;
        }
        memcpy(text, data, size);
        text[size] = '\0';
        char *p = text;
        if (json) {
            while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
                p++;
            if (*p != '[') {
                snprintf(err, err_size, "%s: a JSON array of numbers is expected", path);
                free(text);
                st = TS_EFORMAT;
                goto out;
            }
            p++;
        }
        size_t cap = 1024;
        v = malloc(cap * sizeof *v);
        for (;;) {
            while (*p && (*p == ',' || *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
                p++;
            if (!*p || (json && *p == ']'))
                break;
            char *end = NULL;
            double d = strtod(p, &end);
            if (end == p || !isfinite(d)) {
                snprintf(err, err_size, "%s: not a finite number at byte %zu", path,
                         (size_t)(p - text));
                free(text);
                st = TS_EFORMAT;
                goto out;
            }
            if (n == cap) {
                cap *= 2;
                double *nv = realloc(v, cap * sizeof *v);
                if (!nv) {
                    free(text);
                    st = TS_ENOMEM;
                    goto out;
                }
                v = nv;
            }
            v[n++] = d;
            p = end;
        }
        free(text);
    } else {
        snprintf(err, err_size, "unknown vector format \"%s\" (csv, json, f32)", format);
        st = TS_EINVAL;
        goto out;
    }
    if (!v) {
        st = TS_ENOMEM;
        goto out;
    }
    if (n == 0) {
        snprintf(err, err_size, "%s holds no values", path);
        st = TS_EFORMAT;
        goto out;
    }
    *values = v;
    *count = n;
    v = NULL;
out:
    free(v);
    ts_file_unmap(data, size);
    return st;
}

ts_status_t ts_cli_vector_write(const char *path, const char *format, const double *values,
                                size_t count, char *err, size_t err_size)
{
    format = guess_format(path, format);
    FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
    if (!f) {
        snprintf(err, err_size, "cannot write %s: %s", path, strerror(errno));
        return TS_EIO;
    }
    if (!strcmp(format, "f32")) {
        for (size_t i = 0; i < count; i++) {
            float x = (float)values[i];
            fwrite(&x, 4, 1, f);
        }
    } else {
        bool json = !strcmp(format, "json");
        if (json)
            fputc('[', f);
        for (size_t i = 0; i < count; i++)
            fprintf(f, "%s%.17g", i ? (json ? "," : "\n") : "", values[i]);
        fputs(json ? "]\n" : "\n", f);
    }
    bool bad = ferror(f) != 0;
    if (f != stdout && fclose(f) != 0)
        bad = true;
    if (bad) {
        snprintf(err, err_size, "cannot write %s", path);
        return TS_EIO;
    }
    return TS_OK;
}

/*
 * CKKS objects on the wire (server/ckks_wire.h): the preset cache, and thin
 * wrappers over core/ckks's serializers (ts_ckks_*_serialize) that add the
 * reasons the daemon sends back.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "server/ckks_wire.h"

void ts_wire_params_id(const ts_ckks_params_t *p, uint8_t id[TS_SHA256_BYTES])
{
    ts_ckks_params_serial_id(p, id);
}

/* ---------------------------------------------------------- preset cache */

typedef struct cached {
    struct cached *next;
    char dir[512], name[64];
    bool insecure_allowed;
    ts_ckks_params_t *params;
    uint8_t id[TS_SHA256_BYTES];
} cached_t;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cached_t *cache;

static bool name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len >= 64 || n[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

ts_status_t ts_wire_params_get(const char *dir, const char *name, bool allow_insecure,
                               ts_ckks_params_t **out, uint8_t id[TS_SHA256_BYTES], char *why,
                               size_t why_size)
{
    *out = NULL;
    if (!name || !name_ok(name)) {
        snprintf(why, why_size, "parameter id must be a preset name ([A-Za-z0-9._-], < 64)");
        return TS_EPARAMS;
    }
    pthread_mutex_lock(&cache_mu);
    for (cached_t *c = cache; c; c = c->next) {
        if (!strcmp(c->dir, dir) && !strcmp(c->name, name) &&
            c->insecure_allowed == allow_insecure) {
            *out = ts_ckks_params_ref(c->params);
            memcpy(id, c->id, TS_SHA256_BYTES);
            pthread_mutex_unlock(&cache_mu);
            return TS_OK;
        }
    }
    pthread_mutex_unlock(&cache_mu);
    char path[700];
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    ts_cfg_error_t err;
    memset(&err, 0, sizeof err);
    ts_ckks_params_t *p = NULL;
    ts_status_t st = ts_ckks_params_load_file(path, allow_insecure, &p, &err);
    if (st != TS_OK) {
        if (st == TS_ESECURITY) {
            ts_ckks_params_literal_t lit;
            bool marked =
                ts_ckks_params_literal_load_file(path, &lit, NULL) == TS_OK && lit.insecure;
            if (marked)
                snprintf(why, why_size,
                         "parameter preset '%s' is marked insecure (test only) and this daemon "
                         "was not started with --insecure-params",
                         name);
            else
                snprintf(why, why_size,
                         "parameter preset '%s' is refused by the 128-bit security gate", name);
        } else if (st == TS_EIO || st == TS_ENOENT) {
            snprintf(why, why_size, "unknown parameter preset '%s'", name);
        } else {
            char e[400];
            ts_cfg_error_format(&err, e, sizeof e);
            snprintf(why, why_size, "parameter preset '%s' cannot be loaded: %s", name,
                     e[0] ? e : ts_strerror(st));
        }
        return st == TS_EIO || st == TS_ECONFIG || st == TS_ENOENT ? TS_EPARAMS : st;
    }
    cached_t *c = ts_calloc(1, sizeof *c);
    if (!c) {
        ts_ckks_params_free(p);
        return TS_ENOMEM;
    }
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->insecure_allowed = allow_insecure;
    c->params = p;
    ts_wire_params_id(p, c->id);
    memcpy(id, c->id, TS_SHA256_BYTES);
    *out = ts_ckks_params_ref(p);
    pthread_mutex_lock(&cache_mu);
    c->next = cache;
    cache = c;
    pthread_mutex_unlock(&cache_mu);
    return TS_OK;
}

/* ------------------------------------------------------------ ciphertexts */

/* The envelope's parameter id is the object's own; a caller may label it with
 * another id (tests of the mismatch path): the digest covers only the payload. */
static void relabel(uint8_t *env, size_t size, const uint8_t id[TS_SHA256_BYTES])
{
    if (id && size >= TS_SERIAL_HEADER_BYTES)
        memcpy(env + 12, id, TS_SHA256_BYTES);
}

ts_status_t ts_wire_ct_encode(const ts_ckks_ciphertext_t *ct, const uint8_t id[TS_SHA256_BYTES],
                              int zstd_level, uint8_t **out, size_t *size)
{
    ts_status_t st = ts_ckks_ciphertext_serialize(ct, zstd_level, out, size);
    if (st == TS_OK)
        relabel(*out, *size, id);
    return st;
}

static const char *ct_reason(ts_status_t st)
{
    switch (st) {
    case TS_EMISMATCH:
        return "ciphertext belongs to another parameter set (parameter id)";
    case TS_ELIMIT:
        return "ciphertext larger than its parameters allow";
    case TS_ELEVEL:
        return "ciphertext level beyond the top level of its parameters";
    case TS_ENOMEM:
        return "out of memory";
    default:
        return "not a well-formed ciphertext (envelope, version, degree, slot count, scale, "
               "a residue at or above its modulus, or wrong length)";
    }
}

ts_status_t ts_wire_ct_decode(ts_ckks_params_t *p, const uint8_t id[TS_SHA256_BYTES],
                              const void *data, size_t size, int max_degree,
                              ts_ckks_ciphertext_t **out, char *why, size_t why_size)
{
    *out = NULL;
    uint8_t own[TS_SHA256_BYTES];
    ts_ckks_params_serial_id(p, own);
    if (id && memcmp(id, own, TS_SHA256_BYTES) != 0) {
        snprintf(why, why_size, "%s", ct_reason(TS_EMISMATCH));
        return TS_EMISMATCH;
    }
    ts_status_t st = ts_ckks_ciphertext_deserialize(p, data, size, max_degree, out);
    if (st != TS_OK)
        snprintf(why, why_size, "%s", ct_reason(st));
    return st;
}

/* -------------------------------------------------------------- public keys */

ts_status_t ts_wire_pk_encode(const ts_ckks_public_key_t *pk, const uint8_t id[TS_SHA256_BYTES],
                              uint8_t **out, size_t *size)
{
    ts_status_t st = ts_ckks_public_key_serialize(pk, 0, out, size);
    if (st == TS_OK)
        relabel(*out, *size, id);
    return st;
}

ts_status_t ts_wire_pk_check(ts_ckks_params_t *p, const uint8_t id[TS_SHA256_BYTES],
                             const void *data, size_t size, char *why, size_t why_size)
{
    uint8_t own[TS_SHA256_BYTES];
    ts_ckks_params_serial_id(p, own);
    ts_ckks_public_key_t *pk = NULL;
    ts_status_t st = id && memcmp(id, own, TS_SHA256_BYTES) != 0
                         ? TS_EMISMATCH
                         : ts_ckks_public_key_deserialize(p, data, size, &pk);
    ts_ckks_public_key_free(pk);
    if (st == TS_EMISMATCH)
        snprintf(why, why_size, "public key of another parameter set");
    else if (st == TS_ENOMEM)
        snprintf(why, why_size, "out of memory");
    else if (st != TS_OK)
        snprintf(why, why_size,
                 "public key malformed (envelope, shape, a residue at or above its modulus, "
                 "or wrong length)");
    return st;
}

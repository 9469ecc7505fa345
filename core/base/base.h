/*
 * core/base — the bottom layer of tessera: status codes, the allocator hook,
 * logging, the CSPRNG and the YAML configuration loader.
 *
 * Everything in core/ returns a ts_status_t (0 = success, negative = a
 * specific failure); ts_strerror() turns it into a sentence. All heap memory
 * of the library goes through ts_malloc()/ts_free() so that tests can make the
 * N-th allocation fail and prove every error path is clean. Secret material is
 * released with ts_free_secret(), which wipes the whole block first.
 *
 * Randomness: ts_prng_new_os() is a CSPRNG (AES-256-CTR keyed from getrandom,
 * fails closed when the OS cannot provide entropy); ts_prng_new_seeded()
 * expands a public 32-byte seed deterministically (the "a" half of seeded
 * ciphertexts and keys). Both produce the same keystream format, so a seeded
 * object can be regenerated bit for bit on any machine.
 */
#ifndef TS_BASE_H
#define TS_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status */

/* X(name, value, message): the one table for status codes. */
#define TS_STATUS_MAP(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EIO, -3, "input/output error")                                                               \
    X(EFORMAT, -4, "malformed or corrupt data")                                                    \
    X(EPARAMS, -5, "invalid or inconsistent parameters")                                           \
    X(ESECURITY, -6, "rejected by the security policy")                                            \
    X(ELEVEL, -7, "level out of range")                                                            \
    X(ESCALE, -8, "scale mismatch")                                                                \
    X(EPROTO, -9, "protocol violation")                                                            \
    X(EDEVICE, -10, "device failure")                                                              \
    X(ENOTSUP, -11, "operation not supported")                                                     \
    X(ERANGE, -12, "value out of range")                                                           \
    X(ECONFIG, -13, "configuration error")                                                         \
    X(ERANDOM, -14, "operating-system randomness unavailable")                                     \
    X(ENOKEY, -15, "required key missing")                                                         \
    X(ELIMIT, -16, "limit exceeded")                                                               \
    X(ETIMEDOUT, -17, "timed out")                                                                 \
    X(ECANCELED, -18, "operation canceled")                                                        \
    X(ENOENT, -19, "no such object")                                                               \
    X(EEXIST, -20, "object already exists")                                                        \
    X(EMISMATCH, -21, "objects do not belong together (parameters, keys or shapes differ)")        \
    X(ENOGPU, -22, "no GPU support built or no usable GPU")                                        \
    X(ECRYPTO, -23, "cryptographic library failure")                                               \
    X(EBUSY, -24, "resource busy")                                                                 \
    X(ENOIMPL, -25, "not implemented")                                                             \
    X(EINTERNAL, -26, "internal error")

typedef enum {
#define TS_STATUS_ENUM(name, value, msg) TS_##name = value,
    TS_STATUS_MAP(TS_STATUS_ENUM)
#undef TS_STATUS_ENUM
} ts_status_t;

/* A sentence for a status; never NULL ("unknown status" for foreign values). */
const char *ts_strerror(int status);
/* The symbolic name of a status ("TS_EINVAL"); never NULL. */
const char *ts_status_name(int status);

/* Internal invariants only: never for anything a peer or a file can trigger. */
void ts__assert_fail(const char *expr, const char *file, int line);
#define TS_ASSERT(e) ((e) ? (void)0 : ts__assert_fail(#e, __FILE__, __LINE__))

/* ------------------------------------------------------------- allocator */

/*
 * The allocator hook. alloc must return memory aligned to `align` (a power of
 * two, at most 4096) or NULL; free accepts NULL.
 */
typedef struct ts_allocator {
    void *(*alloc)(void *ctx, size_t size, size_t align);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} ts_allocator_t;

/* Install a hook (NULL restores the default). Not thread-safe: call at start. */
void ts_set_allocator(const ts_allocator_t *allocator);
/*
 * Tune the C library's allocator for FHE working sets (glibc; a no-op
 * elsewhere): blocks up to 32 MiB come from the heap (a bootstrap's
 * temporaries at N = 2^16 are 0.5-30 MB), the heap grows in 256 MiB steps
 * and is never trimmed. Otherwise glibc returns freed memory to the kernel
 * and takes it back page by page (faults and page clearing): ~8% of a 128-bit
 * decode step (docs/benchmarks.md, session 11). The process keeps its peak
 * heap, in one arena for every thread (a thread's own arena would unmap its
 * heaps as they empty). Call once at start, before threads; the programs
 * (tessera, tesserad, the tests and benchmarks) do.
 */
void ts_malloc_tune(void);

/* Memory of the library, 64-byte aligned (enough for AVX-512 loads). */
void *ts_malloc(size_t size);
void *ts_calloc(size_t count, size_t size); /* zeroed; NULL on overflow */
void *ts_realloc(void *ptr, size_t size);   /* like realloc; ptr may be NULL */
void ts_free(void *ptr);                    /* accepts NULL */
/* Wipe the whole block (its allocated size), then free it. Accepts NULL. */
void ts_free_secret(void *ptr);
/* The size requested for a block from ts_malloc & co (0 for NULL). */
size_t ts_alloc_size(const void *ptr);
/* Wipe memory in a way the compiler cannot elide. */
void ts_memzero(void *ptr, size_t size);
/* Constant-time comparison of two byte strings; true when equal. */
bool ts_memeq_ct(const void *a, const void *b, size_t size);

/*
 * Fault injection for tests: the n-th allocation from now (1 = the next one)
 * fails, and so does every later one while `sticky`. n = 0 disarms.
 */
void ts_alloc_fail_after(uint64_t n, bool sticky);
/* Allocations made since the process started (successful ones). */
uint64_t ts_alloc_count(void);
/* Blocks currently live (allocated and not yet freed). */
int64_t ts_alloc_live(void);

/* Overflow-checked size arithmetic: false on overflow. */
bool ts_size_mul(size_t a, size_t b, size_t *out);
bool ts_size_add(size_t a, size_t b, size_t *out);
/* log2(v) when v is a power of two (v >= 1), else -1. */
int ts_log2_exact(uint64_t v);

/* ---------------------------------------------------------------- arena */

/* A bump allocator for scratch space; one owner, not thread-safe. */
typedef struct ts_arena {
    uint8_t *base;
    size_t size;
    size_t used;
} ts_arena_t;

ts_status_t ts_arena_init(ts_arena_t *arena, size_t size);
void ts_arena_clear(ts_arena_t *arena); /* wipes and frees; accepts zeroed arena */
/* 64-byte aligned; NULL when the arena is exhausted. */
void *ts_arena_alloc(ts_arena_t *arena, size_t size);
static inline void ts_arena_reset(ts_arena_t *arena)
{
    arena->used = 0;
}

/* --------------------------------------------------------------- logging */

typedef enum {
    TS_LOG_ERROR = 0,
    TS_LOG_WARN = 1,
    TS_LOG_INFO = 2,
    TS_LOG_DEBUG = 3,
    TS_LOG_TRACE = 4,
} ts_log_level_t;

/* A sink receives one finished line (no trailing newline). */
typedef void (*ts_log_sink_fn)(void *ctx, ts_log_level_t level, const char *line);

void ts_log_set_level(ts_log_level_t level);
ts_log_level_t ts_log_get_level(void);
void ts_log_set_json(bool json_lines);
/* NULL restores the default sink (stderr). */
void ts_log_set_sink(ts_log_sink_fn sink, void *ctx);
/* Parse "error|warn|info|debug|trace"; TS_EINVAL otherwise. */
ts_status_t ts_log_level_parse(const char *name, ts_log_level_t *out);

#if defined(__GNUC__) || defined(__clang__)
#define TS_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TS_PRINTF(fmt, args)
#endif

/*
 * Log one line from `module`. Never pass secret material: keys and plaintexts
 * have no formatter anywhere in tessera, and the logger refuses to print
 * messages longer than 4 KiB (they are truncated) so a buffer cannot be dumped.
 */
void ts_log(ts_log_level_t level, const char *module, const char *fmt, ...) TS_PRINTF(3, 4);
void ts_vlog(ts_log_level_t level, const char *module, const char *fmt, va_list ap);
bool ts_log_enabled(ts_log_level_t level);

/* ------------------------------------------------------------ randomness */

#define TS_SEED_BYTES 32

/* Fill buf from the OS (getrandom). Fails closed with TS_ERANDOM. */
ts_status_t ts_os_random(void *buf, size_t size);

typedef struct ts_prng ts_prng_t;

/* A CSPRNG keyed from the OS; TS_ERANDOM when no entropy is available. */
ts_status_t ts_prng_new_os(ts_prng_t **out);
/*
 * A deterministic stream: AES-256-CTR keyed by `seed`, with `stream_id` in the
 * nonce for domain separation. Same seed and id give the same bytes anywhere.
 */
ts_status_t ts_prng_new_seeded(const uint8_t seed[TS_SEED_BYTES], uint64_t stream_id,
                               ts_prng_t **out);
/* Wipes the key and buffered keystream. Accepts NULL. */
void ts_prng_free(ts_prng_t *prng);

ts_status_t ts_prng_bytes(ts_prng_t *prng, void *buf, size_t size);
ts_status_t ts_prng_u64(ts_prng_t *prng, uint64_t *out);
/* Uniform in [0, bound) by rejection (bound > 0). */
ts_status_t ts_prng_uniform(ts_prng_t *prng, uint64_t bound, uint64_t *out);
/* Uniform double in [0, 1) with 53 random bits. */
ts_status_t ts_prng_double(ts_prng_t *prng, double *out);

/* --------------------------------------------------------- configuration */

/*
 * The YAML loader: a table of directives maps keys to fields of a C struct.
 * Unknown keys, duplicate keys, anchors/aliases, wrong types, out-of-range
 * values and missing required keys are errors reported with file:line:column.
 * Documents are capped in size and nesting depth.
 */
typedef enum {
    TS_CFG_INT,     /* int64_t, range [min, max] when min < max */
    TS_CFG_DOUBLE,  /* double, range [dmin, dmax] when dmin < dmax */
    TS_CFG_BOOL,    /* bool: true/false/yes/no/on/off */
    TS_CFG_STRING,  /* char[cap] (NUL-terminated, cap in `cap`) */
    TS_CFG_INTLIST, /* int64_t[cap] at offset, count (size_t) at count_offset */
    TS_CFG_SECTION, /* nested mapping described by `sub`, struct at offset */
    TS_CFG_ENUM,    /* int: index into the NULL-terminated `choices` */
} ts_cfg_type_t;

typedef struct ts_cfg_error {
    char file[256];
    int line;   /* 1-based; 0 when not tied to a position */
    int column; /* 1-based */
    char msg[256];
} ts_cfg_error_t;

typedef struct ts_cfg_directive ts_cfg_directive_t;
struct ts_cfg_directive {
    const char *name;
    ts_cfg_type_t type;
    size_t offset;
    bool required;
    int64_t min, max;  /* TS_CFG_INT and list items */
    double dmin, dmax; /* TS_CFG_DOUBLE */
    size_t cap;        /* string capacity, list capacity */
    size_t count_offset;
    const ts_cfg_directive_t *sub; /* TS_CFG_SECTION; table ends with name == NULL */
    const char *const *choices;    /* TS_CFG_ENUM */
    /* Optional extra check of the field just stored; write a reason into msg. */
    ts_status_t (*validate)(const void *field, char *msg, size_t msg_size);
};

typedef struct ts_cfg_limits {
    size_t max_bytes; /* default 1 MiB */
    int max_depth;    /* default 16 */
} ts_cfg_limits_t;

/* Fields not present in the document keep the values already in `out`. */
ts_status_t ts_config_load_file(const char *path, const ts_cfg_directive_t *table, void *out,
                                const ts_cfg_limits_t *limits, ts_cfg_error_t *err);
ts_status_t ts_config_load_string(const char *text, size_t size, const char *name,
                                  const ts_cfg_directive_t *table, void *out,
                                  const ts_cfg_limits_t *limits, ts_cfg_error_t *err);
/* "file:line:column: msg" */
void ts_cfg_error_format(const ts_cfg_error_t *err, char *buf, size_t size);

/* ------------------------------------------------------------------ misc */

/* Monotonic clock in nanoseconds. */
uint64_t ts_now_ns(void);
/* Number of online CPU cores (at least 1). */
int ts_cpu_count(void);

#ifdef __cplusplus
}
#endif

#endif /* TS_BASE_H */

/*
 * server/tesserad.h — the daemon's internal pieces: configuration, key store,
 * the server object and the services it runs. Used by server/main.c and by the
 * unit tests (everything but main.c is linked into build/libtessera_net.a).
 */
#ifndef TS_SERVER_TESSERAD_H
#define TS_SERVER_TESSERAD_H

#include <stdbool.h>
#include <stdint.h>

#include "core/base/base.h"
#include "core/serial/serial.h"
#include "server/net.h"

#define TS_SERVER_NAME "tesserad/0.1"

/* ----------------------------------------------------------- configuration */

typedef struct ts_srv_tls_cfg {
    char cert[512];
    char key[512];
    char client_ca[512]; /* empty: no client certificates asked */
    bool require_client_cert;
} ts_srv_tls_cfg_t;

typedef struct ts_srv_keystore_cfg {
    char dir[512];
    int64_t quota_bytes; /* per client namespace */
    int64_t chunk_bytes;
} ts_srv_keystore_cfg_t;

typedef struct ts_srv_limits_cfg {
    int64_t max_frame_bytes;
    int64_t max_decompressed_bytes;
    int64_t max_messages_per_connection; /* 0 = unlimited */
    int64_t max_connections;
    int64_t max_connections_per_client;
    int64_t max_sessions_per_connection;
    int64_t session_memory_bytes;
    int64_t total_memory_bytes;
    int64_t max_queued_jobs;
    int64_t write_buffer_bytes; /* stop reading from a peer that does not read */
    int64_t max_ciphertexts_per_job;
} ts_srv_limits_cfg_t;

typedef struct ts_srv_timeouts_cfg {
    int64_t handshake_ms;
    int64_t idle_ms;
    int64_t request_ms;
    int64_t shutdown_ms;
    int64_t job_ms; /* an aggregation round not complete by then fails */
} ts_srv_timeouts_cfg_t;

typedef struct ts_srv_sanitize_cfg {
    int64_t flood_bits; /* 0: results carry no extra noise */
} ts_srv_sanitize_cfg_t;

typedef struct ts_srv_log_cfg {
    char level[16];
    bool json;
} ts_srv_log_cfg_t;

typedef struct ts_srv_config {
    char listen[128];
    int64_t port;        /* 0: any free port (see port_file) */
    char port_file[512]; /* write the bound port here when set */
    int64_t workers;
    ts_srv_tls_cfg_t tls;
    ts_srv_keystore_cfg_t keystore;
    ts_srv_limits_cfg_t limits;
    ts_srv_timeouts_cfg_t timeouts;
    ts_srv_log_cfg_t log;
    ts_srv_sanitize_cfg_t sanitize;
    char params_dir[512]; /* parameter presets (YAML) */
    char costs_dir[512];  /* cost tables {cpu,gpu}-[KERNELS-]PRESET.yaml for hybrid models w/o
                             `costs` */
    char models_dir[512]; /* decode models: NAME.yaml each (empty: none) */
    int backend;          /* index into ts_srv_backend_names: auto (default), cpu, gpu,
                           * devemu (a testing aid: core/backend/backend.h) */
} ts_srv_config_t;

/* "auto", "cpu", "gpu", NULL: the values of the `backend` directive. */
extern const char *const ts_srv_backend_names[];

/*
 * Make `name` ("cpu", "gpu", "auto"; NULL or "" = "auto") the process's
 * default compute backend (server/backend_sel.c). [out] used: "cpu" or "gpu"
 * (may be NULL); why: the reason, e.g. "backend auto: using the CPU (no GPU
 * support built)" (may be NULL). TS_EINVAL for an unknown name; TS_ENOGPU,
 * TS_EDEVICE when "gpu" is asked for and no working GPU is present.
 */
ts_status_t ts_srv_backend_apply(const char *name, char *used, size_t used_size, char *why,
                                 size_t why_size);

/* Defaults for every field (a file then overrides what it names). */
void ts_srv_config_defaults(ts_srv_config_t *cfg);
/* Load and check a config file; err gets "file:line:column: reason". */
ts_status_t ts_srv_config_load(const char *path, ts_srv_config_t *cfg, char *err, size_t err_size);
/* The same from a string (name is used in messages). */
ts_status_t ts_srv_config_load_string(const char *text, size_t size, const char *name,
                                      ts_srv_config_t *cfg, char *err, size_t err_size);

/* ---------------------------------------------------------------- key store */

/*
 * Keys on disk, content-addressed by SHA-256, one directory per client
 * namespace: <dir>/<ns>/<hex>.key (complete, verified), <hex>.part (the
 * temporary file being uploaded) and <hex>.map (which chunks the .part holds).
 * A key becomes visible only by rename after fsync, so a crash leaves it
 * entirely absent or entirely present; files are mode 0600.
 * All functions run on the event-loop thread except ts_keystore_finish, which
 * is safe on a worker while the upload is marked finishing.
 */
typedef struct ts_keystore ts_keystore_t;

typedef struct ts_key_status {
    uint64_t size;
    uint64_t chunk_bytes;
    uint32_t chunk_count;
    uint32_t received;
    uint8_t *have; /* bitmap, (chunk_count+7)/8 bytes, owned by the store; NULL when complete */
    bool complete;
    bool known;
    bool finishing;
} ts_key_status_t;

ts_status_t ts_keystore_open(const char *dir, uint64_t quota_bytes, uint64_t chunk_bytes,
                             ts_keystore_t **out);
void ts_keystore_free(ts_keystore_t *ks);
void ts_keystore_set_quota(ts_keystore_t *ks, uint64_t quota_bytes);
/* Start or resume an upload. TS_ELIMIT over quota. */
ts_status_t ts_keystore_begin(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                              uint64_t size, ts_key_status_t *st);
ts_status_t ts_keystore_query(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                              ts_key_status_t *st);
/* Store chunk `index`; *all_in tells when every chunk is present. */
ts_status_t ts_keystore_put_chunk(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                                  uint32_t index, const uint8_t *data, size_t n, bool *all_in);
/* Mark the upload finishing (loop thread) before ts_keystore_finish runs. */
ts_status_t ts_keystore_finish_begin(ts_keystore_t *ks, const char *ns, const uint8_t sha[32]);
/* The bytes of an upload marked finishing (any thread), for content checks. */
ts_status_t ts_keystore_part_load(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                                  uint8_t **data, size_t *size);
/* Verify the hash, fsync, rename, fsync the directory (any thread). */
ts_status_t ts_keystore_finish(ts_keystore_t *ks, const char *ns, const uint8_t sha[32]);
/* After finish (loop thread): drop the upload state; on failure forget the chunks. */
void ts_keystore_finish_end(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                            ts_status_t result);
bool ts_keystore_has(ts_keystore_t *ks, const char *ns, const uint8_t sha[32], uint64_t *size);
/* Read a complete key, verifying its hash (TS_EFORMAT when the file is corrupt). */
ts_status_t ts_keystore_load(ts_keystore_t *ks, const char *ns, const uint8_t sha[32],
                             uint8_t **data, size_t *size);
uint64_t ts_keystore_usage(ts_keystore_t *ks, const char *ns);
uint64_t ts_keystore_count(const ts_keystore_t *ks);

/* SHA-256 of a buffer: ts_sha256() of core/serial; of a file by path: */
ts_status_t ts_sha256_path(const char *path, uint8_t out[TS_SHA256_BYTES]);

/*
 * The Renyi sanitization mode's reply count of one model on disk
 * (server/san_state.c: one line, rewritten durably before each reply
 * leaves; PATH.lock flock'ed while open; bound to the weights' SHA-256).
 */
typedef struct ts_san_state ts_san_state_t;
/* Open (create when absent or empty, at 0) the state file of a model whose
 * weights hash to model_sha. TS_ECONFIG: locked by another holder, or the
 * count of other weights; TS_EFORMAT: not a state file (why names the line);
 * TS_EIO. */
ts_status_t ts_san_state_open(const char *path, const uint8_t model_sha[TS_SHA256_BYTES],
                              ts_san_state_t **out, char *why, size_t why_size);
/* What ts_san_state_open checks, without creating or locking the file (a
 * missing file is fine: it would start at 0); *replies the count. */
ts_status_t ts_san_state_check(const char *path, const uint8_t model_sha[TS_SHA256_BYTES],
                               uint64_t *replies, char *why, size_t why_size);
void ts_san_state_free(ts_san_state_t *s);
uint64_t ts_san_state_replies(const ts_san_state_t *s);
/* Count one reply and write it to disk before returning (any thread). limit
 * > 0: TS_ELIMIT when replies >= limit already (nothing counted); TS_EIO
 * when the write failed (the reply is counted in memory all the same: the
 * count never understates). *n: the count after. */
ts_status_t ts_san_state_take(ts_san_state_t *s, uint64_t limit, uint64_t *n);

/* ------------------------------------------------------------------ server */

typedef struct ts_server ts_server_t;

typedef struct ts_server_opts {
    const char *config_path; /* reloaded on SIGHUP */
    bool insecure_params;    /* accept presets marked insecure */
    bool handle_signals;     /* SIGTERM/SIGINT drain, SIGHUP reload */
    bool check_only;         /* --check-config: load and check, never serve */
} ts_server_opts_t;

ts_status_t ts_server_new(const ts_srv_config_t *cfg, const ts_server_opts_t *opts,
                          ts_server_t **out, char *err, size_t err_size);
/* Run the loop until shutdown completes. */
ts_status_t ts_server_run(ts_server_t *srv);
/* Begin a graceful shutdown (thread-safe). */
void ts_server_stop(ts_server_t *srv);
int ts_server_port(const ts_server_t *srv);
void ts_server_free(ts_server_t *srv);

/* --------------------------------------------------------------- services */

/*
 * The encrypted weighted-average service (seed 002, Algorithm 1) as seen by
 * the server: parameter ids it accepts, validation of one ciphertext, and the
 * weighted sum of equally long contributions. The implementation lives in
 * server/svc_aggregate.c; it runs on worker threads.
 */
typedef struct ts_agg_input {
    uint64_t weight;
    size_t count;                   /* ciphertexts */
    const ProtobufCBinaryData *cts; /* serialized by core/serial */
} ts_agg_input_t;

/* Whether `param_id` names a preset this service accepts; insecure ones only when allowed. */
ts_status_t ts_agg_check_params(const char *params_dir, const char *param_id, bool allow_insecure,
                                char *why, size_t why_size);
/* Validate serialized ciphertexts against `param_id` (structure, residues, level). */
ts_status_t ts_agg_validate(const char *params_dir, const char *param_id, bool allow_insecure,
                            const ProtobufCBinaryData *cts, size_t count, char *why,
                            size_t why_size);
/*
 * out[j] = sum_i (w_i / sum w) * in_i[j], serialized; *out is an array of
 * `count` ts_malloc'ed buffers (free with ts_agg_result_free). Every result
 * leaves at the same level (one below the inputs'). flood_bits > 0 adds
 * flooding noise to each result: coefficients uniform in [-2^flood_bits,
 * 2^flood_bits] added to c_0 (the decrypted message carries it), hiding the
 * noise the computation left; it costs precision (see docs/PROTOCOL.md).
 */
ts_status_t ts_agg_compute(const char *params_dir, const char *param_id, bool allow_insecure,
                           int flood_bits, const ts_agg_input_t *inputs, size_t n_inputs,
                           size_t count, ProtobufCBinaryData **out, char *why, size_t why_size);
void ts_agg_result_free(ProtobufCBinaryData *out, size_t count);

/*
 * The private decode service (server/svc_decode.c, issue 10). Models are the
 * files models_dir/NAME.yaml:
 *   path: models/aidreams260K.bin    llama2.c or GGUF model (required)
 *   params: test-boot-n12            CKKS preset in params_dir (required)
 *   approx: configs/approx/X.yaml    the engine's approximations (default: its own)
 *   bootstrap: true                  sessions bootstrap (clients add boot keys)
 *   max_context: 32                  positions per session (capped by the slots; the
 *                                    engine packs the fewest slots that hold it)
 *   max_sessions: 4                  live sessions of this model
 *   session_memory_bytes: 8589934592 keys + KV cache of one session
 *   sanitize_lambda: 40              flooding statistical parameter (bits)
 *   sanitize_noise_l2_log2: 0        > 0: the Renyi mode (projection + Gaussian flood;
 *                                    log2 of the stated l2 bound of the logits' noise,
 *                                    measured with `tessera bench decode --noise`, which
 *                                    builds the engine as tesserad does)
 *   sanitize_queries_log2: 12        replies the Renyi mode's bound covers (log2)
 *   sanitize_state: PATH             the Renyi mode's reply count on disk (kept
 *                                    across restarts, bound to the weights'
 *                                    SHA-256; default: counted per process)
 *   sanitize_budget: warn            past 2^sanitize_queries_log2 replies: warn
 *                                    (log, serve on) or refuse (steps with logits
 *                                    get TS_ELIMIT; needs sanitize_state)
 *   logits_level: 0                  fixed level of returned logits
 *   policies: ckks, hybrid, tfhe     decode policies served (default ckks; hybrid
 *                                    and tfhe need bootstrap: true and the
 *                                    client's conversion keys, PolicyInfo)
 *   costs: costs/cpu-128.yaml        a `tessera bench costs` table: the hybrid
 *                                    policy runs the cheapest assignment of
 *                                    primitive kinds to CKKS or TFHE under it;
 *                                    without the key, the table costs_dir/
 *                                    cpu-KERNELS-PARAMS.yaml for this CPU's
 *                                    kernels, else costs_dir/cpu-PARAMS.yaml
 *                                    (on a GPU costs_dir/gpu-PARAMS.yaml,
 *                                    never a CPU's), when there is one (the daemon's
 *                                    costs_dir, default configs/costs);
 *                                    `none` or no table: the default assignment
 *                                    (1/x and 1/sqrt(x) in TFHE)
 *   prefill_lanes: 16                ciphertexts carry that many lanes of the
 *                                    working slots (a power of two, with
 *                                    bootstrap, policy ckks only): a step may
 *                                    prefill that many prompt positions in one
 *                                    pass (DecodeStep.positions); every step
 *                                    then bootstraps at lanes x slots (fewer
 *                                    levels left: each step costs more)
 * Loading (startup, loop thread) checks everything; sessions open and step on
 * workers. A model is shared read-only by its sessions.
 */
typedef struct ts_dec_registry ts_dec_registry_t;
typedef struct ts_dec_model ts_dec_model_t;
typedef struct ts_dec_session ts_dec_session_t;

typedef struct ts_dec_blob {
    const uint8_t *data;
    size_t size;
} ts_dec_blob_t;

#define TS_DEC_STAGES 8
/* "embed", "matvec", "attention", "nonlinear", "bootstrap", "convert", "other", "sanitize" */
extern const char *const ts_dec_stage_names[TS_DEC_STAGES];

typedef struct ts_dec_result {
    uint8_t *logits; /* serialized sanitized logits (ts_malloc'd) */
    size_t logits_size;
    int level;
    double ms[TS_DEC_STAGES];
    double server_ms;
    double err_bound;
    uint64_t bootstraps;
    /* the bootstraps the engine's plan of this step from the session's state
     * predicted (ts_llm_enc_session_plan; -1: no plan, e.g. a public
     * position): tesserad logs both and warns where they differ */
    int planned_bootstraps;
    bool cache_only;    /* no logits: the KV cache only */
    bool token_public;  /* a public position: the plaintext model, no encrypted step */
    uint32_t positions; /* positions the step ran (a prefill: more than one) */
    bool speculative;   /* the positions are pending (the next step keeps some) */
    uint32_t kept;      /* positions of the previous speculative pass kept before this step */
} ts_dec_result_t;

/* ts_dec_registry_load flags */
enum {
    TS_DEC_LOAD_INSECURE = 1, /* accept presets marked insecure */
    TS_DEC_LOAD_CHECK = 2,    /* tesserad --check-config: sanitize_state files are read
                               * and checked, not created or locked (a live daemon may
                               * hold them) */
};
/* models_dir NULL or "": no models. err: "file: reason". */
/* costs_dir NULL or "": no default cost tables (see `costs` above). */
ts_status_t ts_dec_registry_load(const char *models_dir, const char *params_dir,
                                 const char *costs_dir, unsigned flags, ts_dec_registry_t **out,
                                 char *err, size_t err_size);
void ts_dec_registry_free(ts_dec_registry_t *r);
size_t ts_dec_registry_count(const ts_dec_registry_t *r);
/* name NULL or "": the first model (sorted by name); NULL when unknown. */
ts_dec_model_t *ts_dec_find(ts_dec_registry_t *r, const char *name);
/* "a, b, c": the names of the served models (truncated to size). */
void ts_dec_registry_names(const ts_dec_registry_t *r, char *buf, size_t size);
const char *ts_dec_model_name(const ts_dec_model_t *md);
const char *ts_dec_model_params(const ts_dec_model_t *md);
int *ts_dec_model_sessions(ts_dec_model_t *md); /* live-session counter (loop thread) */
int ts_dec_model_max_sessions(const ts_dec_model_t *md);
/* Fill a ModelInfo whose strings and arrays point into the model (valid while it lives). */
void ts_dec_model_info(const ts_dec_model_t *md, Tessera__ModelInfo *mi);
/* The model's published draft text (model file `draft_text`; public), NULL
 * and *n = 0 when none. Borrowed: valid while the registry lives. */
#define TS_DEC_DRAFT_MAX ((uint64_t)8 << 20)
const uint8_t *ts_dec_model_draft(const ts_dec_model_t *md, size_t *n);
/* The Renyi mode's sanitized replies counted so far (the state file's count
 * when the model keeps one; 0 in the uniform mode). */
uint64_t ts_dec_model_replies(const ts_dec_model_t *md);
/* TS_OK when md serves the policy (empty: "ckks"); TS_ENOTSUP for a policy the
 * model file does not list (its `policies`); TS_EINVAL for an unknown name. */
ts_status_t ts_dec_policy_check(const ts_dec_model_t *md, const char *policy, char *why,
                                size_t why_size);

/* Load key i of a session (ts_malloc'd bytes, freed by the caller of the
 * loader); on failure a sentence in why. */
typedef ts_status_t (*ts_dec_key_load_fn)(void *ctx, size_t i, uint8_t **data, size_t *size,
                                          char *why, size_t why_size);
/* Worker: load and parse the n_keys keys one at a time (public,
 * relinearization, Galois, the encapsulation keys of a dense-secret model and,
 * for the hybrid and tfhe policies, the conversion keys of core/convert; any
 * order), check they belong to the model's parameters (the conversion keys
 * also to the policy's TFHE literal) and cover the policy's rotation steps
 * (and bootstrapping's) at their levels, and build the session of `policy`
 * (NULL or "": ckks). memory_cap: the daemon's limit. */
ts_status_t ts_dec_session_open(ts_dec_model_t *md, const char *policy, size_t n_keys,
                                ts_dec_key_load_fn load, void *load_ctx, uint64_t memory_cap,
                                ts_dec_session_t **out, char *why, size_t why_size);
void ts_dec_session_free(ts_dec_session_t *s);
uint64_t ts_dec_session_memory(const ts_dec_session_t *s);
int ts_dec_session_next_pos(const ts_dec_session_t *s);
/* Positions of a pending speculative pass (the last ones before next_pos; 0: none). */
int ts_dec_session_pending(const ts_dec_session_t *s);
int ts_dec_session_max_context(const ts_dec_session_t *s);
/* Worker: one position (the serialized one-hot token) -> sanitized logits;
 * n >= 2 positions pos..pos + n - 1 in one prefill (a model of prefill_lanes
 * >= n; the token's lane l holds position pos + l's, the logits' lane n - 1
 * are the last position's); cache_only: the KV cache only (ts_llm_enc_step_cache), no logits;
 * public_token >= 0: a public position (DecodeStep.token_public; data empty),
 * allowed only while every earlier position was public; speculative (a
 * prefill with logits): its positions stay pending, and the next step's pos,
 * from the pass's first + 1 to its last + 1, keeps that many of them
 * (ts_llm_enc_commit; res->kept). Errors:
 * TS_ERANGE (not the next position), TS_ELIMIT (context full), TS_EFORMAT /
 * TS_EMISMATCH / TS_ELEVEL / TS_EINVAL (bad ciphertext), engine errors (the
 * session is then unusable). */
ts_status_t ts_dec_session_step(ts_dec_session_t *s, uint32_t pos, uint32_t n, const uint8_t *data,
                                size_t size, bool cache_only, bool speculative, int public_token,
                                ts_dec_result_t *res, char *why, size_t why_size);
void ts_dec_result_clear(ts_dec_result_t *r);

#endif

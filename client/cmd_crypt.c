/*
 * tessera encrypt / tessera decrypt: vectors to and from files of CKKS
 * ciphertexts under the keys of `tessera keygen`.
 *
 * Ciphertext file: "TSCV" | u8 version (1) | u64 length (values) | u32 count |
 * count x (u64 size | size bytes of one ciphertext, server/ckks_wire.h), little endian.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "server/ckks_wire.h"

static void usage(FILE *f, const char *cmd)
{
    fprintf(
        f,
        "usage: tessera %s --keys DIR --input FILE --output FILE [--format F]\n"
        "                      [--params-dir D] [--insecure-params]\n\n"
        "encrypt: a vector (csv, json or raw float32; by extension or --format) into a file of\n"
        "  CKKS ciphertexts (public-key encryption, slots of the preset, top level).\n"
        "decrypt: such a file (or a result) back into a vector.\n\n"
        "  -k, --keys DIR          keys from tessera keygen\n"
        "  -i, --input FILE        input\n"
        "  -o, --output FILE       output ('-' = stdout for vectors)\n"
        "      --format F          csv | json | f32 for the vector side\n"
        "      --params-dir D      preset folder (default configs/params)\n"
        "      --insecure-params   allow presets marked insecure (tests only)\n"
        "      --symmetric         encrypt with the secret key (c_1 stored as a 32-byte seed)\n"
        "  -h, --help              this text\n\n%s",
        cmd, ts_cli_exit_help);
}

static void put64(FILE *f, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        fputc((int)(v >> (8 * i)) & 0xff, f);
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int run(int argc, char **argv, bool encrypt)
{
    const char *cmd = encrypt ? "encrypt" : "decrypt";
    static const struct option opts[] = {{"keys", required_argument, NULL, 'k'},
                                         {"input", required_argument, NULL, 'i'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"format", required_argument, NULL, 'F'},
                                         {"params-dir", required_argument, NULL, 'D'},
                                         {"insecure-params", no_argument, NULL, 'I'},
                                         {"symmetric", no_argument, NULL, 'S'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *keys_dir = NULL, *input = NULL, *output = NULL, *format = NULL;
    const char *pdir = "configs/params";
    bool insecure = false, symmetric = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "k:i:o:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'k':
            keys_dir = optarg;
            break;
        case 'i':
            input = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'F':
            format = optarg;
            break;
        case 'D':
            pdir = optarg;
            break;
        case 'I':
            insecure = true;
            break;
        case 'S':
            symmetric = true;
            break;
        case 'h':
            usage(stdout, cmd);
            return TS_EXIT_OK;
        default:
            usage(stderr, cmd);
            return TS_EXIT_USAGE;
        }
    }
    if (!keys_dir || !input || !output || optind < argc) {
        fprintf(stderr, "tessera %s: --keys, --input and --output are required\n", cmd);
        return TS_EXIT_USAGE;
    }
    char err[600];
    ts_cli_keys_t keys;
    if (ts_cli_keys_load(keys_dir, pdir, insecure, &keys, err, sizeof err) != TS_OK) {
        fprintf(stderr, "tessera %s: %s\n", cmd, err);
        return TS_EXIT_LOCAL;
    }
    ts_ckks_params_t *p = keys.params;
    size_t slots = ts_ckks_params_slots(p);
    int top = ts_ckks_params_max_level(p);
    int rc = TS_EXIT_LOCAL;
    ts_ckks_encoder_t *enc = NULL;
    ts_ckks_plaintext_t *pt = NULL;
    ts_ckks_ciphertext_t *ct = NULL;
    ts_prng_t *prng = NULL;
    double *v = NULL;
    const uint8_t *data = NULL;
    size_t size = 0;
    FILE *f = NULL;
    if (ts_ckks_encoder_new(p, &enc) != TS_OK || ts_prng_new_os(&prng) != TS_OK)
        goto out;
    if (encrypt) {
        size_t len = 0;
        if (ts_cli_vector_read(input, format, &v, &len, err, sizeof err) != TS_OK) {
            fprintf(stderr, "tessera encrypt: %s\n", err);
            goto out;
        }
        f = fopen(output, "wb");
        if (!f || ts_ckks_plaintext_new(p, top, &pt) != TS_OK ||
            ts_ckks_ciphertext_new(p, top, &ct) != TS_OK) {
            fprintf(stderr, "tessera encrypt: cannot write %s\n", output);
            goto out;
        }
        size_t count = (len + slots - 1) / slots;
        fwrite("TSCV\x01", 1, 5, f);
        put64(f, len);
        for (int i = 0; i < 4; i++)
            fputc((int)(count >> (8 * i)) & 0xff, f);
        for (size_t c = 0; c < count; c++) {
            size_t m = len - c * slots < slots ? len - c * slots : slots;
            uint8_t *b = NULL;
            size_t bn = 0;
            ts_status_t st =
                ts_ckks_encode_real(enc, v + c * slots, m, 0, top, ts_ckks_params_scale(p), pt);
            if (st == TS_OK)
                st = symmetric ? ts_ckks_encrypt_sk(keys.sk, pt, prng, NULL, ct)
                               : ts_ckks_encrypt_pk(keys.pk, pt, prng, ct);
            if (st == TS_OK)
                st = ts_wire_ct_encode(ct, keys.params_id, 0, &b, &bn);
            if (st != TS_OK) {
                fprintf(stderr, "tessera encrypt: values %zu..%zu: %s\n", c * slots, c * slots + m,
                        ts_strerror(st));
                goto out;
            }
            put64(f, bn);
            fwrite(b, 1, bn, f);
            ts_free(b);
        }
        if (fclose(f) != 0) {
            f = NULL;
            fprintf(stderr, "tessera encrypt: cannot write %s\n", output);
            goto out;
        }
        f = NULL;
        rc = TS_EXIT_OK;
    } else {
        if (ts_file_map(input, &data, &size, err, sizeof err) != TS_OK) {
            fprintf(stderr, "tessera decrypt: %s\n", err);
            goto out;
        }
        if (size < 17 || memcmp(data, "TSCV\x01", 5) != 0) {
            fprintf(stderr, "tessera decrypt: %s is not a tessera ciphertext file\n", input);
            goto out;
        }
        uint64_t len = get64(data + 5);
        uint32_t count = (uint32_t)data[13] | (uint32_t)data[14] << 8 | (uint32_t)data[15] << 16 |
                         (uint32_t)data[16] << 24;
        if (len == 0 || count != (len + slots - 1) / slots || len > (1ull << 34)) {
            fprintf(stderr, "tessera decrypt: inconsistent header in %s\n", input);
            goto out;
        }
        v = malloc(len * sizeof *v);
        if (!v)
            goto out;
        size_t off = 17;
        for (uint32_t c = 0; c < count; c++) {
            if (size - off < 8 || get64(data + off) > size - off - 8) {
                fprintf(stderr, "tessera decrypt: %s is truncated\n", input);
                goto out;
            }
            size_t bn = (size_t)get64(data + off);
            char why[256];
            ts_ckks_ciphertext_t *r = NULL;
            ts_ckks_plaintext_t *rp = NULL;
            ts_status_t st =
                ts_wire_ct_decode(p, keys.params_id, data + off + 8, bn, 2, &r, why, sizeof why);
            if (st == TS_OK)
                st = ts_ckks_plaintext_new(p, ts_ckks_ciphertext_level(r), &rp);
            if (st == TS_OK)
                st = ts_ckks_decrypt(keys.sk, r, rp);
            size_t m = len - c * slots < slots ? (size_t)(len - c * slots) : slots;
            if (st == TS_OK)
                st = ts_ckks_decode_real(enc, rp, v + (size_t)c * slots, m);
            ts_ckks_plaintext_free(rp);
            ts_ckks_ciphertext_free(r);
            if (st != TS_OK) {
                fprintf(stderr, "tessera decrypt: ciphertext %u: %s\n", c,
                        st == TS_EMISMATCH ? "made under other parameters" : ts_strerror(st));
                goto out;
            }
            off += 8 + bn;
        }
        if (ts_cli_vector_write(output, format, v, len, err, sizeof err) != TS_OK) {
            fprintf(stderr, "tessera decrypt: %s\n", err);
            goto out;
        }
        rc = TS_EXIT_OK;
    }
out:
    if (f)
        fclose(f);
    ts_file_unmap(data, size);
    free(v);
    ts_prng_free(prng);
    ts_ckks_ciphertext_free(ct);
    ts_ckks_plaintext_free(pt);
    ts_ckks_encoder_free(enc);
    ts_cli_keys_clear(&keys);
    return rc;
}

int ts_cmd_encrypt(int argc, char **argv)
{
    return run(argc, argv, true);
}

int ts_cmd_decrypt(int argc, char **argv)
{
    return run(argc, argv, false);
}

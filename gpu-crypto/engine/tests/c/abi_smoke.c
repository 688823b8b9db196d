/* Compiled against include/gpu_crypto.h and run against the built libgpu_crypto.so by
 * tests/ffi.rs: checks the header's declarations and codes against the real library. */
#include "gpu_crypto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond);   \
            return 1;                                                            \
        }                                                                        \
    } while (0)

static void from_hex(const char *hex, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned int byte;
        sscanf(hex + 2 * i, "%2x", &byte);
        out[i] = (uint8_t)byte;
    }
}

/* The G1 generator, compressed and uncompressed. */
static const char *G1_COMPRESSED =
    "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb";
static const char *G1_UNCOMPRESSED =
    "17f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb"
    "08b3f481e3aaa0f1a09e30ed741d8ae4fcf5e095d5d00af600db18cb2c04b3edd03cc744a2888ae40caa232946c5e7e1";

int main(void) {
    CHECK(gpu_crypto_abi_version() == GPU_CRYPTO_ABI_VERSION);

    char err[256];
    gpu_crypto_engine *bad = gpu_crypto_engine_new("{\"no\": 1}", err, sizeof err);
    CHECK(bad == NULL);
    CHECK(strstr(err, "invalid policy") != NULL);

    gpu_crypto_engine *engine = gpu_crypto_engine_new("\"cpu\"", err, sizeof err);
    CHECK(engine != NULL);

    /* Two points: the generator and the generator with its compression flag cleared. */
    uint8_t in[2 * 48], out[2 * 96], codes[2], want[96];
    from_hex(G1_COMPRESSED, in, 48);
    memcpy(in + 48, in, 48);
    in[48] &= 0x7f;
    from_hex(G1_UNCOMPRESSED, want, 96);
    CHECK(gpu_crypto_g1_decompress(engine, in, 2, out, codes) == GPU_CRYPTO_OK);
    CHECK(codes[0] == GPU_CRYPTO_DECODE_OK && memcmp(out, want, 96) == 0);
    CHECK(codes[1] == GPU_CRYPTO_DECODE_NOT_COMPRESSED);

    /* G2: the identity, and the identity with a stray bit in x.c0. */
    uint8_t g2_in[2 * 96], g2_out[2 * 192], g2_codes[2];
    memset(g2_in, 0, sizeof g2_in);
    g2_in[0] = 0xc0;
    g2_in[96] = 0xc0;
    g2_in[96 + 95] = 0x01;
    CHECK(gpu_crypto_g2_decompress(engine, g2_in, 2, g2_out, g2_codes) == GPU_CRYPTO_OK);
    CHECK(g2_codes[0] == GPU_CRYPTO_DECODE_OK && g2_out[0] == 0x40);
    for (int i = 1; i < 192; i++) CHECK(g2_out[i] == 0);
    CHECK(g2_codes[1] == GPU_CRYPTO_DECODE_BAD_INFINITY);

    /* A NULL input with n > 0 fails and leaves the outputs alone. */
    memset(codes, 0xee, sizeof codes);
    CHECK(gpu_crypto_g1_decompress(engine, NULL, 2, out, codes) == GPU_CRYPTO_ERR_NULL_POINTER);
    CHECK(codes[0] == 0xee && codes[1] == 0xee);
    size_t required = 0;
    CHECK(gpu_crypto_last_error(NULL, 0, &required) == GPU_CRYPTO_ERR_BUFFER_TOO_SMALL);
    char *message = malloc(required);
    CHECK(gpu_crypto_last_error(message, required, NULL) == GPU_CRYPTO_OK);
    CHECK(strstr(message, "NULL") != NULL);
    free(message);

    /* MSM: 3 * G, as one MSM of one point. */
    uint8_t scalar[32] = {0};
    scalar[31] = 3;
    size_t len = 1, bad_index = 99;
    uint8_t msm_out[96];
    CHECK(gpu_crypto_g1_msm_batch(engine, want, scalar, &len, 1, msm_out, &bad_index) ==
          GPU_CRYPTO_OK);
    /* 3 * G equals G + G + G, a second MSM of three points. */
    uint8_t points3[3 * 96], scalars3[3 * 32] = {0};
    for (int i = 0; i < 3; i++) {
        memcpy(points3 + 96 * i, want, 96);
        scalars3[32 * i + 31] = 1;
    }
    size_t len3 = 3;
    uint8_t msm3_out[96];
    CHECK(gpu_crypto_g1_msm_batch(engine, points3, scalars3, &len3, 1, msm3_out, NULL) ==
          GPU_CRYPTO_OK);
    CHECK(memcmp(msm_out, msm3_out, 96) == 0);

    /* Shared-base 8-bit MSMs: row 0 = 3 * G over one base, row 1 = 0 * G. */
    uint8_t u8_scalars[2] = {3, 0};
    uint8_t shared_out[2 * 96];
    CHECK(gpu_crypto_g1_msm_shared_u8(engine, want, 1, u8_scalars, 2, 2, shared_out, NULL) ==
          GPU_CRYPTO_OK);
    CHECK(memcmp(shared_out, msm_out, 96) == 0);
    CHECK(shared_out[96] == 0x40);
    CHECK(gpu_crypto_g1_msm_shared_u8(engine, want, 1, u8_scalars, 1, 2, shared_out, NULL) ==
          GPU_CRYPTO_ERR_LENGTH);

    /* A point off the curve is refused with its index. */
    points3[96 + 95] ^= 1;
    memset(msm3_out, 0xee, sizeof msm3_out);
    CHECK(gpu_crypto_g1_msm_batch(engine, points3, scalars3, &len3, 1, msm3_out, &bad_index) ==
          GPU_CRYPTO_ERR_INVALID_POINT);
    CHECK(bad_index == 1 && msm3_out[0] == 0xee);

    /* SHA-256 of an empty chunk under "ic-state-chunk", and the empty batch. */
    const uint8_t *chunks[1] = {NULL};
    size_t chunk_lens[1] = {0};
    uint8_t digest[32];
    const char *ds = "ic-state-chunk";
    CHECK(gpu_crypto_sha256_chunks(engine, (const uint8_t *)ds, strlen(ds), chunks, chunk_lens, 1,
                                   digest) == GPU_CRYPTO_OK);
    CHECK(gpu_crypto_sha256_chunks(engine, NULL, 0, NULL, NULL, 0, NULL) == GPU_CRYPTO_OK);

    /* A BLS item with a bad signature encoding, and an unknown scheme. */
    uint8_t sig[48] = {0}, pk[96] = {0}, vcode = 0xee;
    const uint8_t *msgs[1] = {NULL};
    size_t msg_lens[1] = {0};
    CHECK(gpu_crypto_bls_verify_batch(engine, sig, pk, msgs, msg_lens, 1,
                                      GPU_CRYPTO_SCHEME_THRESHOLD, &vcode) == GPU_CRYPTO_OK);
    CHECK(vcode == GPU_CRYPTO_VERIFY_SIGNATURE_DECODE + GPU_CRYPTO_DECODE_NOT_COMPRESSED);
    CHECK(gpu_crypto_bls_verify_batch(engine, sig, pk, msgs, msg_lens, 1, 7, &vcode) ==
          GPU_CRYPTO_ERR_INVALID_ARGUMENT);

    /* Report JSON through the size protocol. */
    CHECK(gpu_crypto_engine_report_json(engine, NULL, 0, &required) ==
          GPU_CRYPTO_ERR_BUFFER_TOO_SMALL);
    char *report = malloc(required);
    CHECK(gpu_crypto_engine_report_json(engine, report, required, NULL) == GPU_CRYPTO_OK);
    CHECK(strlen(report) + 1 == required);
    CHECK(strstr(report, "\"not_requested\"") != NULL);
    free(report);
    CHECK(gpu_crypto_engine_stats_json(engine, NULL, 0, &required) ==
          GPU_CRYPTO_ERR_BUFFER_TOO_SMALL);
    char *stats = malloc(required);
    CHECK(gpu_crypto_engine_stats_json(engine, stats, required, NULL) == GPU_CRYPTO_OK);
    CHECK(strstr(stats, "\"decompress\"") != NULL);
    free(stats);

    gpu_crypto_engine_free(engine);
    gpu_crypto_engine_free(NULL);
    printf("C ABI OK\n");
    return 0;
}

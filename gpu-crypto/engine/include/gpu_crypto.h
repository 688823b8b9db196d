/*
 * gpu_crypto.h: C ABI of libgpu_crypto.so (gpu-crypto/engine/src/ffi.rs).
 *
 * BLS12-381 and SHA-256 batch operations for the Internet Computer replica, on the GPU
 * (CUDA) or the CPU, bit-exact with ic_bls12_381. Hand-written to match ffi.rs exactly;
 * docs/c-abi.md describes the conventions in more detail.
 *
 * Conventions of every function returning int32_t:
 *   - the return value is a gpu_crypto_status; GPU_CRYPTO_OK (0) is success;
 *   - on any other value no output buffer has been written (except out_error_index and
 *     required, where documented); the reason is kept per thread for gpu_crypto_last_error;
 *   - a pointer paired with a count of 0 may be NULL; otherwise NULL is
 *     GPU_CRYPTO_ERR_NULL_POINTER;
 *   - output buffers must not overlap input buffers;
 *   - no panic or exception crosses the boundary (a caught panic is GPU_CRYPTO_ERR_INTERNAL).
 * Call gpu_crypto_abi_version() first and refuse a library whose version differs from
 * GPU_CRYPTO_ABI_VERSION.
 *
 * An engine is thread-safe: one handle may be used by many threads at once, except that
 * gpu_crypto_engine_free must not run concurrently with any other use of that handle.
 */
#ifndef GPU_CRYPTO_H
#define GPU_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. */
#define GPU_CRYPTO_ABI_VERSION 1u

/* Return codes (int32_t). */
typedef enum gpu_crypto_status {
    GPU_CRYPTO_OK = 0,
    /* A required pointer is NULL. */
    GPU_CRYPTO_ERR_NULL_POINTER = 1,
    /* A length is out of range (its byte size overflows, or lengths disagree). */
    GPU_CRYPTO_ERR_LENGTH = 2,
    /* The policy JSON, the domain separator, the scheme or another argument is invalid. */
    GPU_CRYPTO_ERR_INVALID_ARGUMENT = 3,
    /* An MSM input point is not a valid uncompressed G1 point of the prime-order subgroup. */
    GPU_CRYPTO_ERR_INVALID_POINT = 4,
    /* An MSM scalar is not below the group order r. */
    GPU_CRYPTO_ERR_INVALID_SCALAR = 5,
    /* The caller's buffer is too small; *required holds the size needed. */
    GPU_CRYPTO_ERR_BUFFER_TOO_SMALL = 6,
    /* The policy pins this operation to the GPU and the GPU is unusable. */
    GPU_CRYPTO_ERR_GPU_UNAVAILABLE = 7,
    /* The GPU failed and the policy forbids recomputing on the CPU. */
    GPU_CRYPTO_ERR_GPU_FAILED = 8,
    /* The policy pins this operation to the GPU, which has no implementation of it. */
    GPU_CRYPTO_ERR_NO_GPU_IMPLEMENTATION = 9,
    /* A bug: a panic inside the library, caught at the boundary. */
    GPU_CRYPTO_ERR_INTERNAL = 10
} gpu_crypto_status;

/* Per-item codes of gpu_crypto_g1_decompress and gpu_crypto_g2_decompress
 * (DecodeError::code). 0 is a valid point.
 * Reasons are assigned in this order of precedence, identically on every backend. */
#define GPU_CRYPTO_DECODE_OK 0u
#define GPU_CRYPTO_DECODE_NOT_COMPRESSED 1u  /* compression flag (bit 7 of byte 0) clear */
#define GPU_CRYPTO_DECODE_BAD_INFINITY 2u    /* infinity flag with sort flag or coordinate bits */
#define GPU_CRYPTO_DECODE_NON_CANONICAL 3u   /* coordinate >= p */
#define GPU_CRYPTO_DECODE_NOT_ON_CURVE 4u    /* no point on the curve has this x */
#define GPU_CRYPTO_DECODE_NOT_IN_SUBGROUP 5u /* not in the prime-order subgroup */

/* Per-item codes of gpu_crypto_bls_verify_batch. */
#define GPU_CRYPTO_VERIFY_OK 0u
#define GPU_CRYPTO_VERIFY_INVALID 1u /* decodes, but does not verify */
/* GPU_CRYPTO_VERIFY_SIGNATURE_DECODE + a GPU_CRYPTO_DECODE_* code: bad signature encoding. */
#define GPU_CRYPTO_VERIFY_SIGNATURE_DECODE 0x10u
/* GPU_CRYPTO_VERIFY_PUBLIC_KEY_DECODE + a GPU_CRYPTO_DECODE_* code: bad public key encoding. */
#define GPU_CRYPTO_VERIFY_PUBLIC_KEY_DECODE 0x20u

/* BLS schemes (the hash-to-G1 domain separation tag of messages). */
#define GPU_CRYPTO_SCHEME_THRESHOLD 0u /* BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_ */
#define GPU_CRYPTO_SCHEME_MULTI_SIG 1u /* BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_ */

/* Opaque engine handle. */
typedef struct gpu_crypto_engine gpu_crypto_engine;

/* The ABI version of the loaded library. */
uint32_t gpu_crypto_abi_version(void);

/*
 * Creates an engine. policy_json is NULL or "" for the auto policy, a JSON string
 * ("\"cpu\"", "\"gpu\"" or "\"auto\"") for that backend on every operation, or a full
 * policy object (the serde form of gpu_crypto::Policy, see docs/c-abi.md). Returns NULL on
 * failure (invalid policy, an operation pinned to an unusable GPU) with the reason,
 * NUL-terminated and truncated to fit, in err when err is non-NULL and err_len > 0.
 */
gpu_crypto_engine *gpu_crypto_engine_new(const char *policy_json, char *err, size_t err_len);

/* Frees an engine; NULL is ignored. */
void gpu_crypto_engine_free(gpu_crypto_engine *engine);

/*
 * Copies the reason of the calling thread's last failed call, NUL-terminated, into buf.
 * *required (when required is non-NULL) is always set to the size needed, NUL included;
 * GPU_CRYPTO_ERR_BUFFER_TOO_SMALL (buf untouched) when buf is NULL or buf_len is smaller.
 */
int32_t gpu_crypto_last_error(char *buf, size_t buf_len, size_t *required);

/*
 * The engine report as JSON (GPU status, backend per operation and why), NUL-terminated,
 * with the size protocol of gpu_crypto_last_error.
 */
int32_t gpu_crypto_engine_report_json(const gpu_crypto_engine *engine, char *buf,
                                      size_t buf_len, size_t *required);

/*
 * The engine's counters as JSON (calls and items per operation and backend, CPU
 * recomputations after GPU failures, GPU errors), with the size protocol above.
 */
int32_t gpu_crypto_engine_stats_json(const gpu_crypto_engine *engine, char *buf,
                                     size_t buf_len, size_t *required);

/*
 * Decompresses and fully validates n compressed G1 points (input_compressed: n * 48 bytes). Writes
 * out_uncompressed (n * 96 bytes: the uncompressed encoding, all zero for a rejected
 * item) and out_codes (n bytes: GPU_CRYPTO_DECODE_*). Accepts exactly what
 * ic_bls12_381's G1Affine::from_compressed accepts.
 */
int32_t gpu_crypto_g1_decompress(const gpu_crypto_engine *engine, const uint8_t *input_compressed,
                                 size_t n,
                                 uint8_t *out_uncompressed, uint8_t *out_codes);

/*
 * Decompresses n compressed G2 points (96 bytes each: x.c1 with the flags, then x.c0)
 * with full validation. Writes out_uncompressed (n * 192 bytes: x.c1, x.c0, y.c1, y.c0;
 * zeros for a rejected item) and out_codes (n bytes: GPU_CRYPTO_DECODE_*, the same codes
 * and precedence as G1; either coordinate >= p is NON_CANONICAL). Accepts exactly what
 * ic_bls12_381's G2Affine::from_compressed accepts. Runs under the policy's decompress
 * entry (its crossover counts points of either group).
 */
int32_t gpu_crypto_g2_decompress(const gpu_crypto_engine *engine, const uint8_t *input_compressed,
                                 size_t n,
                                 uint8_t *out_uncompressed, uint8_t *out_codes);

/*
 * n_msms independent multi-scalar multiplications. MSM j takes the next lengths[j]
 * points (96 bytes each, uncompressed G1, validated: on the curve and in the subgroup)
 * and as many scalars (32 bytes each, big-endian, below r). out receives n_msms results,
 * 96 bytes each, uncompressed (the identity for an empty MSM). On
 * GPU_CRYPTO_ERR_INVALID_POINT or GPU_CRYPTO_ERR_INVALID_SCALAR the flat index of the
 * first bad input is written to *out_error_index (when non-NULL); out is untouched.
 */
int32_t gpu_crypto_g1_msm_batch(const gpu_crypto_engine *engine, const uint8_t *points,
                                const uint8_t *scalars, const size_t *lengths, size_t n_msms,
                                uint8_t *out, size_t *out_error_index);

/*
 * rows multi-scalar multiplications over one set of n_bases bases (96 bytes each,
 * uncompressed G1, validated: on the curve and in the subgroup) with 8-bit scalars:
 * result k = sum_p scalars[k * n_bases + p] * bases[p] (NI-DKG chunking proof: 32 MSMs
 * of 16n points). n_scalars must equal rows * n_bases (GPU_CRYPTO_ERR_LENGTH otherwise).
 * out receives rows results, 96 bytes each, uncompressed (the identity for a row of zero
 * scalars or with no bases). On GPU_CRYPTO_ERR_INVALID_POINT the index of the first bad
 * base is written to *out_error_index (when non-NULL); out is untouched.
 */
int32_t gpu_crypto_g1_msm_shared_u8(const gpu_crypto_engine *engine, const uint8_t *bases,
                                    size_t n_bases, const uint8_t *scalars, size_t n_scalars,
                                    size_t rows, uint8_t *out, size_t *out_error_index);

/*
 * Whether each of n_products products of pairings is the identity of GT, as
 * ic_bls12_381's multi_miller_loop(..).final_exponentiation() == Gt::identity().
 * The G2 points form a table (g2: n_g2 uncompressed points of 192 bytes), each prepared
 * once; product k takes the next lengths[k] pairs, pair i being the uncompressed G1 point
 * g1 + 96*i and the table index g2_index[i]. Writes out (n_products bytes): 1 the
 * identity, 0 not. Every point is validated (curve, subgroup): on
 * GPU_CRYPTO_ERR_INVALID_POINT the index of the first bad point (the message says whether
 * of g1 or g2) is written to *out_error_index (when non-NULL); an index outside the table
 * is GPU_CRYPTO_ERR_INVALID_ARGUMENT.
 */
int32_t gpu_crypto_pairing_products_are_identity(const gpu_crypto_engine *engine,
                                                 const uint8_t *g2, size_t n_g2,
                                                 const uint8_t *g1, const size_t *g2_index,
                                                 const size_t *lengths, size_t n_products,
                                                 uint8_t *out, size_t *out_error_index);

/*
 * Verifies n BLS signatures. Item i: signature signatures + 48*i (compressed G1),
 * public key public_keys + 96*i (compressed G2), message messages[i] of message_lens[i]
 * bytes (messages[i] may be NULL when its length is 0), hashed to G1 under scheme
 * (GPU_CRYPTO_SCHEME_*). Writes out_codes (n bytes: GPU_CRYPTO_VERIFY_*).
 */
int32_t gpu_crypto_bls_verify_batch(const gpu_crypto_engine *engine, const uint8_t *signatures,
                                    const uint8_t *public_keys, const uint8_t *const *messages,
                                    const size_t *message_lens, size_t n, uint32_t scheme,
                                    uint8_t *out_codes);

/*
 * SHA-256(len(ds) as one byte || ds || chunk) for n chunks (chunks[i] of chunk_lens[i]
 * bytes; NULL allowed when its length is 0), written to out (n * 32 bytes). The domain
 * separator ds (e.g. "ic-state-chunk", without the length byte, no NUL needed) must be
 * UTF-8 of at most 255 bytes.
 */
int32_t gpu_crypto_sha256_chunks(const gpu_crypto_engine *engine, const uint8_t *domain_separator,
                                 size_t domain_separator_len, const uint8_t *const *chunks,
                                 const size_t *chunk_lens, size_t n, uint8_t *out);

#ifdef __cplusplus
}
#endif

#endif /* GPU_CRYPTO_H */

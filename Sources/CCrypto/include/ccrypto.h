// C shim over OpenSSL's libcrypto. Only DriveSupport imports this module.
#ifndef DRIVEFS_CCRYPTO_H
#define DRIVEFS_CCRYPTO_H
#include <stddef.h>
#include <stdint.h>

// Streaming digests. kind: 0 = MD5, 1 = SHA-1, 2 = SHA-256. Returns NULL on failure.
void *ccrypto_digest_new(int kind);
int ccrypto_digest_update(void *ctx, const void *data, size_t len);
// Writes the digest into out (at least 32 bytes) and frees ctx. Returns the digest length, or -1.
int ccrypto_digest_final(void *ctx, uint8_t *out);
void ccrypto_digest_free(void *ctx);

// Cryptographically secure random bytes. Returns 1 on success.
int ccrypto_random(void *out, size_t len);

// RSA keys (an EVP_PKEY behind an opaque pointer), PEM import/export and RS256 (RSASSA-PKCS1-v1_5
// with SHA-256) signatures. A key is immutable once made and may be used from several threads.

// A fresh RSA key of `bits` bits (2048 for service-account keys). NULL on failure.
void *ccrypto_rsa_generate(int bits);
// Parses a PEM private key (PKCS#8 "BEGIN PRIVATE KEY", also traditional "BEGIN RSA PRIVATE KEY"). NULL on failure.
void *ccrypto_rsa_private_from_pem(const char *pem, size_t len);
// Parses a PEM public key (SubjectPublicKeyInfo "BEGIN PUBLIC KEY"). NULL on failure.
void *ccrypto_rsa_public_from_pem(const char *pem, size_t len);
// Writes the key as PEM: private = 1 → PKCS#8 "BEGIN PRIVATE KEY" (unencrypted), 0 → "BEGIN PUBLIC KEY".
// Returns the PEM length; when it exceeds cap nothing is copied (call again with a larger buffer). -1 on failure.
long ccrypto_rsa_to_pem(void *key, int private_part, char *out, size_t cap);
// 1 when the key holds a private part.
int ccrypto_rsa_has_private(void *key);
// RS256 signature of data into sig (cap at least the modulus size, 256 bytes for 2048-bit keys).
// Returns the signature length, or -1.
long ccrypto_rs256_sign(void *key, const void *data, size_t len, uint8_t *sig, size_t cap);
// 1 = valid signature, 0 = invalid, -1 = error.
int ccrypto_rs256_verify(void *key, const void *data, size_t len, const uint8_t *sig, size_t siglen);
void ccrypto_rsa_free(void *key);

#endif

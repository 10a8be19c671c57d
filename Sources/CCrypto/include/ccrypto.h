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

#endif

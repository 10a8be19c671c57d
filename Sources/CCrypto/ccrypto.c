#include "ccrypto.h"
#include <openssl/evp.h>
#include <openssl/rand.h>

void *ccrypto_digest_new(int kind) {
    const EVP_MD *md = kind == 0 ? EVP_md5() : kind == 1 ? EVP_sha1() : kind == 2 ? EVP_sha256() : NULL;
    if (!md) return NULL;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) return NULL;
    if (EVP_DigestInit_ex(ctx, md, NULL) != 1) { EVP_MD_CTX_free(ctx); return NULL; }
    return ctx;
}

int ccrypto_digest_update(void *ctx, const void *data, size_t len) {
    return EVP_DigestUpdate((EVP_MD_CTX *)ctx, data, len) == 1 ? 1 : 0;
}

int ccrypto_digest_final(void *ctx, uint8_t *out) {
    unsigned int n = 0;
    int ok = EVP_DigestFinal_ex((EVP_MD_CTX *)ctx, out, &n);
    EVP_MD_CTX_free((EVP_MD_CTX *)ctx);
    return ok == 1 ? (int)n : -1;
}

void ccrypto_digest_free(void *ctx) { EVP_MD_CTX_free((EVP_MD_CTX *)ctx); }

int ccrypto_random(void *out, size_t len) { return RAND_bytes((unsigned char *)out, (int)len) == 1 ? 1 : 0; }

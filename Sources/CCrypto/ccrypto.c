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

// ---- RSA keys and RS256 ----
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/rsa.h>
#include <string.h>

void *ccrypto_rsa_generate(int bits) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, NULL);
    if (!ctx) return NULL;
    EVP_PKEY *key = NULL;
    if (EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits) != 1 || EVP_PKEY_keygen(ctx, &key) != 1) {
        key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
}

static int is_rsa(EVP_PKEY *key) { return key && EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA; }

void *ccrypto_rsa_private_from_pem(const char *pem, size_t len) {
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (key && !is_rsa(key)) { EVP_PKEY_free(key); key = NULL; }
    return key;
}

void *ccrypto_rsa_public_from_pem(const char *pem, size_t len) {
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio) return NULL;
    EVP_PKEY *key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (key && !is_rsa(key)) { EVP_PKEY_free(key); key = NULL; }
    return key;
}

long ccrypto_rsa_to_pem(void *key, int private_part, char *out, size_t cap) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio) return -1;
    int ok = private_part
        ? PEM_write_bio_PrivateKey(bio, (EVP_PKEY *)key, NULL, NULL, 0, NULL, NULL)
        : PEM_write_bio_PUBKEY(bio, (EVP_PKEY *)key);
    long result = -1;
    if (ok == 1) {
        char *data = NULL;
        long n = BIO_get_mem_data(bio, &data);
        if (n >= 0) {
            if ((size_t)n <= cap && out) memcpy(out, data, (size_t)n);
            result = n;
        }
    }
    BIO_free(bio);
    return result;
}

int ccrypto_rsa_has_private(void *key) {
    // A public-only EVP_PKEY cannot be written as a private key.
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio) return 0;
    int ok = PEM_write_bio_PrivateKey(bio, (EVP_PKEY *)key, NULL, NULL, 0, NULL, NULL);
    BIO_free(bio);
    return ok == 1 ? 1 : 0;
}

long ccrypto_rs256_sign(void *key, const void *data, size_t len, uint8_t *sig, size_t cap) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) return -1;
    long result = -1;
    size_t siglen = cap;
    if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, (EVP_PKEY *)key) == 1 &&
        EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)data, len) == 1) {
        result = (long)siglen;
    }
    EVP_MD_CTX_free(ctx);
    return result;
}

int ccrypto_rs256_verify(void *key, const void *data, size_t len, const uint8_t *sig, size_t siglen) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) return -1;
    int result = -1;
    if (EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, (EVP_PKEY *)key) == 1) {
        int r = EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)data, len);
        result = r == 1 ? 1 : 0;
    }
    EVP_MD_CTX_free(ctx);
    return result;
}

void ccrypto_rsa_free(void *key) { EVP_PKEY_free((EVP_PKEY *)key); }

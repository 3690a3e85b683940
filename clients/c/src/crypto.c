/* The cryptography, all OpenSSL 3 (EVP): ES256 verification, SHA-256, HKDF-SHA256, AES-256-GCM. */
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void lic_sha256(const void *data, size_t len, unsigned char out[32]) {
    unsigned int n = 32;
    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1) memset(out, 0, 32);
}

/* The P-256 public key of a JWK's x and y; NULL when they are not a point of the curve. */
static EVP_PKEY *p256_key(const unsigned char x[32], const unsigned char y[32]) {
    unsigned char point[65];
    point[0] = 0x04; /* uncompressed */
    memcpy(point + 1, x, 32);
    memcpy(point + 33, y, 32);
    char group[] = "prime256v1";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point),
        OSSL_PARAM_construct_end(),
    };
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *key = NULL;
    if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return key;
}

int lic_es256_verify(const unsigned char x[32], const unsigned char y[32], const unsigned char sig[64],
                     const void *msg, size_t msg_len) {
    EVP_PKEY *key = p256_key(x, y);
    if (!key) return 0;
    /* JOSE and WebCrypto sign r||s (IEEE P1363); OpenSSL verifies DER: convert. */
    int result = 0;
    ECDSA_SIG *ecdsa = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
    unsigned char *der = NULL;
    int der_len = -1;
    if (ecdsa && r && s && ECDSA_SIG_set0(ecdsa, r, s) == 1) {
        r = s = NULL; /* owned by ecdsa */
        der_len = i2d_ECDSA_SIG(ecdsa, &der);
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(ecdsa);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (der_len > 0 && md && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1) {
        result = EVP_DigestVerify(md, der, (size_t)der_len, msg, msg_len) == 1;
    }
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    EVP_PKEY_free(key);
    return result;
}

int lic_hkdf_sha256(const void *ikm, size_t ikm_len, const void *salt, size_t salt_len, const void *info,
                    size_t info_len, unsigned char *out, size_t out_len) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    int ok = ctx && EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) == 1;
    /* An empty salt is HashLen zero bytes (RFC 5869), which is what OpenSSL does without one. */
    if (ok && salt_len > 0) ok = EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt, (int)salt_len) == 1;
    if (ok) ok = EVP_PKEY_CTX_set1_hkdf_key(ctx, ikm, (int)ikm_len) == 1;
    if (ok) ok = EVP_PKEY_CTX_add1_hkdf_info(ctx, info, (int)info_len) == 1;
    size_t n = out_len;
    if (ok) ok = EVP_PKEY_derive(ctx, out, &n) == 1 && n == out_len;
    EVP_PKEY_CTX_free(ctx);
    return ok ? 0 : -1;
}

int lic_aes256gcm_open(const unsigned char key[32], const unsigned char *iv, size_t iv_len,
                       const unsigned char *ciphertext, size_t ct_len, unsigned char **plain, size_t *plain_len) {
    if (iv_len == 0 || iv_len > 1024 || ct_len < 16) return -1;
    size_t body = ct_len - 16;
    unsigned char *out = malloc(body + 1);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0, final = 0;
    int ok = out && ctx && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, (int)iv_len, NULL) == 1 &&
             EVP_DecryptInit_ex(ctx, NULL, NULL, key, iv) == 1 &&
             EVP_DecryptUpdate(ctx, out, &n, ciphertext, (int)body) == 1 &&
             EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)(ciphertext + body)) == 1 &&
             EVP_DecryptFinal_ex(ctx, out + n, &final) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        free(out);
        return -1;
    }
    out[n + final] = '\0';
    *plain = out;
    *plain_len = (size_t)(n + final);
    return 0;
}

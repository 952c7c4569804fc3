#ifndef CSQLCLIENT_OPENSSL_SHIM_H
#define CSQLCLIENT_OPENSSL_SHIM_H
#include <string.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/pkcs12.h>
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
#include <openssl/provider.h>
#endif

/* OpenSSL macros do not import into Swift: these static inline wrappers expose them. */

static inline long csqlclient_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline int csqlclient_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int csqlclient_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline void csqlclient_SSL_CTX_disable_compression_and_renegotiation(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
}

static inline size_t csqlclient_BIO_pending(BIO *bio) {
    return BIO_ctrl_pending(bio);
}

static inline int csqlclient_TLS_version(int which) {
    switch (which) {
    case 10: return TLS1_VERSION;
    case 11: return TLS1_1_VERSION;
    case 12: return TLS1_2_VERSION;
    case 13: return TLS1_3_VERSION;
    default: return 0;
    }
}

static inline X509 *csqlclient_SSL_get_peer_certificate(const SSL *ssl) {
    return SSL_get1_peer_certificate(ssl);
}

static inline int csqlclient_X509_V_OK(void) { return X509_V_OK; }

/* ---- Hashes for NTLM ([MS-NLMP] 3.3.2, 6): MD4, MD5, HMAC-MD5, random bytes. ---- */

/* MD4 of `length` bytes into `out` (16 bytes). On OpenSSL 3 MD4 lives in the legacy provider: it is
   loaded into a private library context for this call only, so the process's default context is
   left as it was. Returns 1 on success, 0 when MD4 is unavailable. */
static inline int csqlclient_md4(const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    int ok = 0;
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    OSSL_LIB_CTX *libctx = OSSL_LIB_CTX_new();
    if (libctx == NULL) return 0;
    OSSL_PROVIDER *legacy = OSSL_PROVIDER_load(libctx, "legacy");
    OSSL_PROVIDER *deflt = OSSL_PROVIDER_load(libctx, "default");
    EVP_MD *md = (legacy != NULL) ? EVP_MD_fetch(libctx, "MD4", NULL) : NULL;
    if (md != NULL) {
        ok = EVP_Digest(data, length, out, &written, md, NULL) == 1 && written == 16;
        EVP_MD_free(md);
    }
    if (deflt != NULL) OSSL_PROVIDER_unload(deflt);
    if (legacy != NULL) OSSL_PROVIDER_unload(legacy);
    OSSL_LIB_CTX_free(libctx);
#else
    ok = EVP_Digest(data, length, out, &written, EVP_md4(), NULL) == 1 && written == 16;
#endif
    return ok;
}

/* HMAC-MD5 (RFC 2104) into `out` (16 bytes). Returns 1 on success. */
static inline int csqlclient_hmac_md5(const unsigned char *key, size_t keyLength,
                                      const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    return HMAC(EVP_md5(), key, (int)keyLength, data, length, out, &written) != NULL && written == 16;
}

/* `count` cryptographically random bytes. Returns 1 on success. */
static inline int csqlclient_random_bytes(unsigned char *out, int count) {
    return RAND_bytes(out, count);
}

/* ---- ALPN for TDS 8.0 (strict): offer one protocol, read back the server's choice. ---- */

/* Offers `protocols` (ALPN wire format: length-prefixed names). Returns 1 on success (note that
   SSL_set_alpn_protos itself returns 0 on success). */
static inline int csqlclient_SSL_set_alpn(SSL *ssl, const unsigned char *protocols, unsigned int length) {
    return SSL_set_alpn_protos(ssl, protocols, length) == 0;
}

/* ---- Server side of TDS 8.0, for the test servers (SQLClientTesting). ---- */

static int csqlclient_alpn_select_tds8_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                          const unsigned char *in, unsigned int inlen, void *arg) {
    static const unsigned char tds8[] = "\x07tds/8.0";
    unsigned char *selected = NULL;
    unsigned char length = 0;
    (void)ssl;
    if (SSL_select_next_proto(&selected, &length, tds8, sizeof(tds8) - 1, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        *outlen = length;
        return SSL_TLSEXT_ERR_OK;
    }
    /* No tds/8.0 offered: refuse the handshake when `arg` is non-NULL, else go on without ALPN. */
    return arg != NULL ? SSL_TLSEXT_ERR_ALERT_FATAL : SSL_TLSEXT_ERR_NOACK;
}

/* Makes a server context select ALPN "tds/8.0"; `required` refuses clients that do not offer it. */
static inline void csqlclient_SSL_CTX_select_alpn_tds8(SSL_CTX *ctx, int required) {
    SSL_CTX_set_alpn_select_cb(ctx, csqlclient_alpn_select_tds8_cb, required ? (void *)ctx : NULL);
}

static inline const char *csqlclient_SSL_get_servername(const SSL *ssl) {
    return SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
}

/* ---- Always Encrypted (issue 42): AES-256-CBC, HMAC-SHA256, SHA-256, RSA-OAEP and RSA-SHA256
   through OpenSSL (macros and version differences wrapped here). ---- */
#include <openssl/pkcs12.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

/* HMAC-SHA256 (RFC 2104) of `length` bytes into `out` (32 bytes). Returns 1 on success. */
static inline int csqlclient_hmac_sha256(const unsigned char *key, size_t keyLength,
                                         const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    static const unsigned char empty = 0;
    return HMAC(EVP_sha256(), key, (int)keyLength, data != NULL ? data : &empty, length, out, &written) != NULL
        && written == 32;
}

/* HMAC-SHA256 with a key set up once: a context keyed by `key` (NULL on failure), then each MAC
   over three parts computed on a copy of it (no key schedule or algorithm lookup per MAC), then
   freed. The keyed context is only read after creation, so several threads may use it at once. */
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
#include <openssl/core_names.h>
static inline void *csqlclient_hmac_sha256_key_new(const unsigned char *key, size_t keyLength) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx;
    OSSL_PARAM params[2];
    if (mac == NULL) return NULL;
    ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    if (ctx == NULL) return NULL;
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    if (EVP_MAC_init(ctx, key, keyLength, params) != 1) { EVP_MAC_CTX_free(ctx); return NULL; }
    return ctx;
}

static inline int csqlclient_hmac_sha256_parts(void *keyed, const unsigned char *a, size_t aLength,
                                               const unsigned char *b, size_t bLength,
                                               const unsigned char *c, size_t cLength, unsigned char *out) {
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_dup((EVP_MAC_CTX *)keyed);
    size_t written = 0;
    int ok;
    if (ctx == NULL) return 0;
    ok = (aLength == 0 || EVP_MAC_update(ctx, a, aLength) == 1)
        && (bLength == 0 || EVP_MAC_update(ctx, b, bLength) == 1)
        && (cLength == 0 || EVP_MAC_update(ctx, c, cLength) == 1)
        && EVP_MAC_final(ctx, out, &written, 32) == 1 && written == 32;
    EVP_MAC_CTX_free(ctx);
    return ok;
}

static inline void csqlclient_hmac_sha256_key_free(void *keyed) { EVP_MAC_CTX_free((EVP_MAC_CTX *)keyed); }
#else
static inline void *csqlclient_hmac_sha256_key_new(const unsigned char *key, size_t keyLength) {
    HMAC_CTX *ctx = HMAC_CTX_new();
    if (ctx == NULL) return NULL;
    if (HMAC_Init_ex(ctx, key, (int)keyLength, EVP_sha256(), NULL) != 1) { HMAC_CTX_free(ctx); return NULL; }
    return ctx;
}

static inline int csqlclient_hmac_sha256_parts(void *keyed, const unsigned char *a, size_t aLength,
                                               const unsigned char *b, size_t bLength,
                                               const unsigned char *c, size_t cLength, unsigned char *out) {
    HMAC_CTX *ctx = HMAC_CTX_new();
    unsigned int written = 0;
    int ok;
    if (ctx == NULL) return 0;
    ok = HMAC_CTX_copy(ctx, (HMAC_CTX *)keyed) == 1
        && (aLength == 0 || HMAC_Update(ctx, a, aLength) == 1)
        && (bLength == 0 || HMAC_Update(ctx, b, bLength) == 1)
        && (cLength == 0 || HMAC_Update(ctx, c, cLength) == 1)
        && HMAC_Final(ctx, out, &written) == 1 && written == 32;
    HMAC_CTX_free(ctx);
    return ok;
}

static inline void csqlclient_hmac_sha256_key_free(void *keyed) { HMAC_CTX_free((HMAC_CTX *)keyed); }
#endif

/* SHA-256 of `length` bytes into `out` (32 bytes). Returns 1 on success. */
static inline int csqlclient_sha256(const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    static const unsigned char empty = 0;
    return EVP_Digest(data != NULL ? data : &empty, length, out, &written, EVP_sha256(), NULL) == 1 && written == 32;
}

/* AES-256-CBC with PKCS #7 padding: `encrypt` 1 or 0; `key` 32 bytes, `iv` 16 bytes; `out` holds
   at least `length` + 16 bytes. Returns the bytes written, or -1 (for a decryption: bad padding
   or a length that is not a multiple of 16). */
/* AES-256-CBC fetched once for the process (OpenSSL 3 looks an algorithm up on every
   EVP_CipherInit_ex given the built-in EVP_aes_256_cbc(); a fetched one skips that). Never freed. */
static inline const void *csqlclient_aes256cbc_fetch(void) {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    return EVP_CIPHER_fetch(NULL, "AES-256-CBC", NULL);
#else
    return EVP_aes_256_cbc();
#endif
}

/* `cipher`: from csqlclient_aes256cbc_fetch, or NULL for EVP_aes_256_cbc(). */
static inline long csqlclient_aes256cbc(const void *cipher, int encrypt, const unsigned char *key, const unsigned char *iv,
                                        const unsigned char *in, size_t length, unsigned char *out) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    static const unsigned char empty = 0;
    int written = 0, last = 0;
    long result = -1;
    if (ctx == NULL || length > 0x7FFFFFF0) { EVP_CIPHER_CTX_free(ctx); return -1; }
    if (EVP_CipherInit_ex(ctx, cipher != NULL ? (const EVP_CIPHER *)cipher : EVP_aes_256_cbc(), NULL, key, iv, encrypt) == 1
        && EVP_CIPHER_CTX_set_padding(ctx, 1) == 1
        && EVP_CipherUpdate(ctx, out, &written, in != NULL ? in : &empty, (int)length) == 1
        && EVP_CipherFinal_ex(ctx, out + written, &last) == 1) {
        result = (long)written + (long)last;
    }
    EVP_CIPHER_CTX_free(ctx);
    return result;
}

/* Compares `length` bytes in time independent of where they differ. Returns 1 when equal. */
static inline int csqlclient_memeq(const unsigned char *a, const unsigned char *b, size_t length) {
    return CRYPTO_memcmp(a, b, length) == 0;
}

/* 1 when `key` is an RSA key. */
static inline int csqlclient_pkey_is_rsa(const EVP_PKEY *key) {
    return EVP_PKEY_base_id(key) == EVP_PKEY_RSA;
}

/* The size of an RSA key's modulus, in bytes (the size of its signatures and OAEP blocks). */
static inline int csqlclient_pkey_size(const EVP_PKEY *key) {
    return EVP_PKEY_size(key);
}

/* A private key from PEM text (PKCS #8, PKCS #1, encrypted PKCS #8 with `password`). NULL when
   the text holds none. */
static inline EVP_PKEY *csqlclient_pkey_from_pem(const unsigned char *pem, int length, const char *password) {
    BIO *bio = BIO_new_mem_buf(pem, length);
    EVP_PKEY *key;
    if (bio == NULL) return NULL;
    key = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)(password != NULL ? password : ""));
    BIO_free(bio);
    return key;
}

/* The private key of a PKCS #12 (.pfx) archive, NULL when it cannot be read with `password`. */
static inline EVP_PKEY *csqlclient_pkey_from_pkcs12(const unsigned char *der, long length, const char *password) {
    const unsigned char *p = der;
    PKCS12 *p12 = d2i_PKCS12(NULL, &p, length);
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    STACK_OF(X509) *ca = NULL;
    if (p12 == NULL) return NULL;
    if (PKCS12_parse(p12, password, &key, &cert, &ca) != 1) key = NULL;
    X509_free(cert);
    sk_X509_pop_free(ca, X509_free);
    PKCS12_free(p12);
    return key;
}

/* The public key of a certificate in PEM text, NULL when there is none. */
static inline EVP_PKEY *csqlclient_pkey_from_certificate_pem(const unsigned char *pem, int length) {
    BIO *bio = BIO_new_mem_buf(pem, length);
    X509 *cert;
    EVP_PKEY *key = NULL;
    if (bio == NULL) return NULL;
    cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (cert == NULL) return NULL;
    key = X509_get_pubkey(cert);
    X509_free(cert);
    return key;
}

/* A new RSA key of `bits` bits (public exponent 65537), for tests and test servers. */
static inline EVP_PKEY *csqlclient_rsa_generate(int bits) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, NULL);
    if (ctx == NULL) return NULL;
    if (EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits) != 1
        || EVP_PKEY_keygen(ctx, &key) != 1) key = NULL;
    EVP_PKEY_CTX_free(ctx);
    return key;
}

/* The private key as unencrypted PKCS #8 PEM into `out` (`capacity` bytes). Returns the length
   written, or -1. */
static inline long csqlclient_pkey_to_pem(EVP_PKEY *key, unsigned char *out, long capacity) {
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL;
    long length = -1;
    if (bio == NULL) return -1;
    if (PEM_write_bio_PKCS8PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) == 1) {
        long n = BIO_get_mem_data(bio, &data);
        if (n >= 0 && n <= capacity && data != NULL) { memcpy(out, data, (size_t)n); length = n; }
    }
    BIO_free(bio);
    return length;
}

/* RSA-OAEP (SHA-1, MGF1 SHA-1: SQL Server's RSA_OAEP) with `key`: `encrypt` 1 or 0. `out` holds
   at least csqlclient_pkey_size(key) bytes. Returns the bytes written, or -1. */
static inline long csqlclient_rsa_oaep(int encrypt, EVP_PKEY *key, const unsigned char *in, size_t length,
                                       unsigned char *out, size_t capacity) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
    size_t written = capacity;
    long result = -1;
    if (ctx == NULL) return -1;
    if ((encrypt ? EVP_PKEY_encrypt_init(ctx) : EVP_PKEY_decrypt_init(ctx)) == 1
        && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
        && EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha1()) == 1
        && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha1()) == 1
        && (encrypt ? EVP_PKEY_encrypt(ctx, out, &written, in, length)
                    : EVP_PKEY_decrypt(ctx, out, &written, in, length)) == 1) {
        result = (long)written;
    }
    EVP_PKEY_CTX_free(ctx);
    return result;
}

/* RSA PKCS #1 v1.5 signature with SHA-256 over `length` bytes. `out` holds at least
   csqlclient_pkey_size(key) bytes. Returns the signature's length, or -1. */
static inline long csqlclient_rsa_sign_sha256(EVP_PKEY *key, const unsigned char *data, size_t length,
                                              unsigned char *out, size_t capacity) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t written = capacity;
    long result = -1;
    if (ctx == NULL) return -1;
    if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestSign(ctx, out, &written, data, length) == 1) result = (long)written;
    EVP_MD_CTX_free(ctx);
    return result;
}

/* Checks an RSA PKCS #1 v1.5 SHA-256 signature. Returns 1 when it verifies. */
static inline int csqlclient_rsa_verify_sha256(EVP_PKEY *key, const unsigned char *data, size_t length,
                                               const unsigned char *signature, size_t signatureLength) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = 0;
    if (ctx == NULL) return 0;
    if (EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestVerify(ctx, signature, signatureLength, data, length) == 1) ok = 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

/* An RSA public key from its PKCS #1 RSAPublicKey DER (SEQUENCE { modulus, publicExponent }),
   NULL when the bytes are not one. */
static inline EVP_PKEY *csqlclient_pkey_from_rsa_public_der(const unsigned char *der, long length) {
    const unsigned char *p = der;
    return d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, length);
}

/* The PKCS #1 RSAPublicKey DER of an RSA key into `out` (`capacity` bytes). Returns the length
   written, or -1. */
static inline long csqlclient_pkey_rsa_public_der(EVP_PKEY *key, unsigned char *out, long capacity) {
    unsigned char *der = NULL;
    int n = i2d_PublicKey(key, &der);
    long length = -1;
    if (n > 0 && der != NULL && n <= capacity) { memcpy(out, der, (size_t)n); length = n; }
    OPENSSL_free(der);
    return length;
}

/* RSA PKCS #1 v1.5 signature of a SHA-256 digest (32 bytes, already hashed: Key Vault's RS256
   `sign`). `out` holds at least csqlclient_pkey_size(key) bytes. Returns the length, or -1. */
static inline long csqlclient_rsa_sign_digest_sha256(EVP_PKEY *key, const unsigned char *digest, size_t length,
                                                     unsigned char *out, size_t capacity) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
    size_t written = capacity;
    long result = -1;
    if (ctx == NULL) return -1;
    if (EVP_PKEY_sign_init(ctx) == 1 && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
        && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1
        && EVP_PKEY_sign(ctx, out, &written, digest, length) == 1) result = (long)written;
    EVP_PKEY_CTX_free(ctx);
    return result;
}

#endif

#ifndef CSQLCLIENT_OPENSSL_SHIM_H
#define CSQLCLIENT_OPENSSL_SHIM_H
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

/* MD5 of `length` bytes into `out` (16 bytes). Returns 1 on success. */
static inline int csqlclient_md5(const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    return EVP_Digest(data, length, out, &written, EVP_md5(), NULL) == 1 && written == 16;
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

#endif

#ifndef CSQLCLIENT_OPENSSL_SHIM_H
#define CSQLCLIENT_OPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>

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

#endif

#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
import TDS

extension OpenSSLTLSSession {
    /// The error for a certificate OpenSSL refused: `verifyResult` (`SSL_get_verify_result`)
    /// mapped to a ``CertificateRefusal``, with OpenSSL's reason text as the detail.
    static func certificateRefusal(verifyResult: Int, serverName: String, expectedName: String) -> SQLClientError {
        let reason = String(cString: X509_verify_cert_error_string(verifyResult))
        return SQLClientError.certificateRefused(refusal(verifyResult: Int32(truncatingIfNeeded: verifyResult),
                                                         expectedName: expectedName, reason: reason),
                                                 serverName: serverName, detail: reason)
    }

    /// The cause behind an `X509_V_ERR_*` code.
    static func refusal(verifyResult code: Int32, expectedName: String, reason: String) -> CertificateRefusal {
        switch code {
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            return .hostNameMismatch(expected: expectedName)
        case X509_V_ERR_CERT_HAS_EXPIRED:
            return .expired
        case X509_V_ERR_CERT_NOT_YET_VALID:
            return .notYetValid
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
             X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
             X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED:
            return .untrustedIssuer
        default:
            return .other(reason)
        }
    }
}
#endif

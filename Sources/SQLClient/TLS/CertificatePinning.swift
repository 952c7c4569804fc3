import Foundation
import TDS

/// Why the server's TLS certificate was refused (package: the user sees the `SQLClientError` it
/// becomes, whose text names the cause and the fix). Every `TLSProvider` reports a refusal through
/// `SQLClientError/certificateRefused(_:serverName:detail:)` with one of these, so the error
/// names the cause and suggests the fix that keeps verification on.
package enum CertificateRefusal: Sendable, Hashable {
    /// The certificate does not carry the expected name (the host connected to, or
    /// ``TLSConfiguration/hostNameInCertificate``).
    case hostNameMismatch(expected: String)
    /// The certificate's validity period has ended.
    case expired
    /// The certificate's validity period has not begun (often this machine's clock).
    case notYetValid
    /// The chain does not end at a trusted CA (a self-signed certificate, or a private CA
    /// that is not in the trust store or ``TLSConfiguration/caFile``).
    case untrustedIssuer
    /// ``TLSConfiguration/serverCertificate`` is set and the server presented another certificate.
    case pinnedCertificateMismatch
    /// Any other verification failure, with the TLS library's reason.
    case other(String)
}

extension SQLClientError {
    /// A `.certificateVerificationFailed` error for `serverName` that names the cause and suggests
    /// the options that keep verification on (``TLSConfiguration/caFile``,
    /// ``TLSConfiguration/hostNameInCertificate``, ``TLSConfiguration/serverCertificate``) before
    /// the switch that turns it off (``TLSConfiguration/trustServerCertificate``).
    /// `detail` is the TLS library's own reason, appended when given.
    package static func certificateRefused(_ cause: CertificateRefusal, serverName: String,
                                          detail: String? = nil) -> SQLClientError {
        let subject = "the server's certificate for \"\(serverName)\""
        var text: String
        switch cause {
        case .hostNameMismatch(let expected):
            text = "\(subject) does not name \"\(expected)\": connect with a host name the certificate carries, "
                + "or set hostNameInCertificate (HostNameInCertificate=) to the name it carries"
        case .expired:
            text = "\(subject) has expired: the server needs a renewed certificate; until then, pin exactly "
                + "this certificate with serverCertificate (ServerCertificate=)"
        case .notYetValid:
            text = "\(subject) is not valid yet: check this machine's clock; or pin exactly this certificate "
                + "with serverCertificate (ServerCertificate=)"
        case .untrustedIssuer:
            text = "\(subject) is not signed by a trusted certificate authority: add the issuing CA with "
                + "caFile (CA File=), or pin the server's certificate with serverCertificate (ServerCertificate=)"
        case .pinnedCertificateMismatch:
            text = "\(subject) is not the certificate in serverCertificate (ServerCertificate=): the server "
                + "presents another one; pin the certificate it presents now, or verify it with caFile (CA File=)"
        case .other(let reason):
            text = "\(subject) was refused (\(reason)): add the issuing CA with caFile (CA File=), or pin the "
                + "certificate with serverCertificate (ServerCertificate=)"
        }
        if let detail, !detail.isEmpty { text += " [\(detail)]" }
        text += ". trustServerCertificate (TrustServerCertificate=true) turns verification off; use it only on a trusted network"
        return SQLClientError(.certificateVerificationFailed, text)
    }
}

// MARK: - ServerCertificate: pinning one exact certificate

extension TLSConfiguration {
    /// The certificate ``serverCertificate`` names, as DER bytes; nil when no certificate is pinned
    /// or when ``trustServerCertificate`` turns verification off (then the pin is not consulted,
    /// as in Microsoft.Data.SqlClient).
    ///
    /// The file holds one certificate in PEM (`-----BEGIN CERTIFICATE-----`, base64) or DER
    /// (`.cer`, `.der`: the bytes of an X.509 `Certificate` SEQUENCE); with several PEM blocks the first is used.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` when the file cannot be read or holds no
    ///   certificate: a pin is never ignored silently.
    package func pinnedCertificateDER() throws(SQLClientError) -> [UInt8]? {
        guard let path = serverCertificate, !trustServerCertificate else { return nil }
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw SQLClientError(.invalidConfiguration, "cannot read the serverCertificate file \(path)")
        }
        guard let der = Self.certificateDER(fromFileContents: [UInt8](contents)) else {
            throw SQLClientError(.invalidConfiguration,
                                 "the serverCertificate file \(path) holds no PEM or DER certificate")
        }
        return der
    }

    /// Checks the certificate the server presented (DER, from ``TLSSession/peerCertificateDER``)
    /// against the pinned one (from `pinnedCertificateDER()`): byte for byte.
    /// - Throws: ``SQLClientError`` `.certificateVerificationFailed` (``CertificateRefusal/pinnedCertificateMismatch``)
    ///   when they differ or the server presented none.
    package static func verifyPinnedCertificate(_ pinned: [UInt8], presented: [UInt8]?,
                                               serverName: String) throws(SQLClientError) {
        guard let presented, presented == pinned else {
            throw SQLClientError.certificateRefused(.pinnedCertificateMismatch, serverName: serverName,
                                                    detail: presented == nil ? "no certificate presented" : nil)
        }
    }

    /// The DER bytes of the first certificate in `bytes`: a PEM `CERTIFICATE` block (base64 between
    /// the BEGIN and END lines), or DER as is when it starts with a SEQUENCE tag (0x30) whose
    /// length covers exactly the bytes given. Nil for anything else.
    static func certificateDER(fromFileContents bytes: [UInt8]) -> [UInt8]? {
        if let text = String(bytes: bytes, encoding: .utf8) ?? String(bytes: bytes, encoding: .isoLatin1),
           let begin = text.range(of: "-----BEGIN CERTIFICATE-----") {
            guard let end = text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound ..< text.endIndex) else {
                return nil
            }
            let body = text[begin.upperBound ..< end.lowerBound].filter { !$0.isWhitespace }
            guard let data = Data(base64Encoded: String(body)), !data.isEmpty else { return nil }
            return [UInt8](data)
        }
        guard bytes.count >= 2, bytes[0] == 0x30, let length = derLength(bytes), length == bytes.count else {
            return nil
        }
        return bytes
    }

    /// The total length (header + content) of the DER element at the start of `bytes`, nil when
    /// its length field is malformed or longer than 4 bytes.
    static func derLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        let first = Int(bytes[1])
        if first < 0x80 { return 2 + first }
        let count = first & 0x7F
        guard count >= 1, count <= 4, bytes.count >= 2 + count else { return nil }
        var length = 0
        for b in bytes[2 ..< 2 + count] { length = length << 8 | Int(b) }
        return 2 + count + length
    }
}

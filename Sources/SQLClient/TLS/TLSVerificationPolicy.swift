import Foundation
import TDS

/// The certificate decisions of a TLS client session, as plain values and pure functions, so an
/// engine whose trust evaluation is a platform call (Security.framework's `SecTrust` in the
/// Network.framework engine) only runs that call and hands its outcome here. Tested on Linux.
///
/// What is decided: the SNI name (never an IP literal, never empty), what the chain is checked
/// against (the system roots, or `caFile`'s certificates as the only anchors), the name the
/// certificate must carry, the exact-certificate pin (`serverCertificate`), and the switch that
/// accepts anything (`trustServerCertificate`); and, once the platform has evaluated the chain,
/// the error the connection fails with.
package struct TLSVerificationPolicy: Sendable, Hashable {
    /// What the server's chain must end at.
    package enum Anchors: Sendable, Hashable {
        /// The platform's trust store.
        case system
        /// Only these certificates (DER), from ``TLSConfiguration/caFile``.
        case only([[UInt8]])
    }

    /// How the server's certificate is verified.
    package enum Mode: Sendable, Hashable {
        /// ``TLSConfiguration/trustServerCertificate``: anything is accepted.
        case trustAny
        /// ``TLSConfiguration/serverCertificate``: exactly this certificate (DER), nothing else checked.
        case pinned([UInt8])
        /// The chain against `anchors`, and the name `hostName` (nil: the name is not checked).
        case chain(anchors: Anchors, hostName: String?)
    }

    /// Why the platform's chain evaluation failed, in the words every engine shares.
    package enum TrustFailure: Sendable, Hashable {
        case hostNameMismatch, expired, notYetValid, untrustedIssuer
        /// Anything else, with the platform's reason.
        case other(String)
    }

    /// The host connected to (named in errors).
    package let serverName: String
    /// The name the certificate is checked against (``TLSConfiguration/expectedHostName(connectingTo:)``).
    package let expectedName: String
    /// The TLS server_name to send: the expected name, or nil for an IP literal or an empty name.
    package let sniName: String?
    /// How the certificate is verified.
    package let mode: Mode

    /// The decisions for a session to `serverName` under `configuration`.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` for an unreadable or empty
    ///   `serverCertificate` file; `.tlsFailed` for an unreadable `caFile`, one with no
    ///   certificate, or no name to check.
    package init(serverName: String, configuration: TLSConfiguration) throws(SQLClientError) {
        self.serverName = serverName
        let expected = configuration.expectedHostName(connectingTo: serverName)
        expectedName = expected
        sniName = expected.isEmpty || Self.isIPAddressLiteral(expected) ? nil : expected
        if configuration.trustServerCertificate {
            mode = .trustAny
        } else if let pin = try configuration.pinnedCertificateDER() {
            mode = .pinned(pin)
        } else {
            let anchors: Anchors
            if let caFile = configuration.caFile {
                guard let contents = FileManager.default.contents(atPath: caFile) else {
                    throw SQLClientError(.tlsFailed, "cannot load the CA file \(caFile)")
                }
                let certificates = Self.certificatesDER(fromPEM: [UInt8](contents))
                guard !certificates.isEmpty else {
                    throw SQLClientError(.tlsFailed, "cannot load the CA file \(caFile): it holds no PEM certificate")
                }
                anchors = .only(certificates)
            } else {
                anchors = .system
            }
            if configuration.verifyHostName && expected.isEmpty {
                throw SQLClientError(.tlsFailed, "no host name to check the server's certificate against")
            }
            mode = .chain(anchors: anchors, hostName: configuration.verifyHostName ? expected : nil)
        }
    }

    /// The verdict once the server's certificate is known: nil to accept, else the error to fail
    /// with. `leafDER` is the certificate presented (DER); `evaluateChain` runs the platform's chain
    /// evaluation under ``mode``'s anchors and name and returns why it failed (nil: trusted). It is
    /// called only in `.chain` mode.
    package func verdict(leafDER: [UInt8]?, evaluateChain: () -> TrustFailure?) -> SQLClientError? {
        switch mode {
        case .trustAny:
            return nil
        case .pinned(let pin):
            do {
                try TLSConfiguration.verifyPinnedCertificate(pin, presented: leafDER, serverName: serverName)
                return nil
            } catch {
                return error
            }
        case .chain:
            guard leafDER != nil else {
                return SQLClientError.certificateRefused(.other("no certificate presented"), serverName: serverName)
            }
            guard let failure = evaluateChain() else { return nil }
            return SQLClientError.certificateRefused(refusal(failure), serverName: serverName,
                                                     detail: { if case .other(let r) = failure { return r } else { return nil } }())
        }
    }

    /// The shared cause behind a platform's failure.
    package func refusal(_ failure: TrustFailure) -> CertificateRefusal {
        switch failure {
        case .hostNameMismatch: return .hostNameMismatch(expected: expectedName)
        case .expired: return .expired
        case .notYetValid: return .notYetValid
        case .untrustedIssuer: return .untrustedIssuer
        case .other(let reason): return .other(reason)
        }
    }

    /// Every `CERTIFICATE` block of a PEM file, as DER, in order (none for anything else).
    package static func certificatesDER(fromPEM bytes: [UInt8]) -> [[UInt8]] {
        guard let text = String(bytes: bytes, encoding: .utf8) ?? String(bytes: bytes, encoding: .isoLatin1) else { return [] }
        var found: [[UInt8]] = []
        var rest = text[...]
        while let begin = rest.range(of: "-----BEGIN CERTIFICATE-----"),
              let end = rest.range(of: "-----END CERTIFICATE-----", range: begin.upperBound ..< rest.endIndex) {
            let body = rest[begin.upperBound ..< end.lowerBound].filter { !$0.isWhitespace }
            if let data = Data(base64Encoded: String(body)), !data.isEmpty { found.append([UInt8](data)) }
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// True for an IPv4 dotted quad (`127.0.0.1`) or an IPv6 address (`::1`, `fe80::1%en0`,
    /// `::ffff:10.0.0.1`), as `inet_pton` reads them; such a name is never sent as SNI (RFC 6066 §3).
    package static func isIPAddressLiteral(_ text: String) -> Bool {
        isIPv4(Substring(text)) || isIPv6(Substring(text))
    }

    private static func isIPv4(_ text: Substring) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        return parts.allSatisfy { part in
            guard (1 ... 3).contains(part.count), part.allSatisfy({ $0 >= "0" && $0 <= "9" }),
                  part.count == 1 || part.first != "0",
                  let value = Int(part), value <= 255 else { return false }
            return true
        }
    }

    private static func isIPv6(_ text: Substring) -> Bool {
        var address = text
        if let percent = address.firstIndex(of: "%") {
            guard address.index(after: percent) < address.endIndex else { return false }
            address = address[..<percent]
        }
        guard address.contains(":") else { return false }
        let halves = address.components(separatedBy: "::")
        guard halves.count <= 2 else { return false }
        var groups = 0
        for (h, half) in halves.enumerated() {
            if half.isEmpty { continue }
            let parts = half.split(separator: ":", omittingEmptySubsequences: false)
            for (i, part) in parts.enumerated() {
                if h == halves.count - 1, i == parts.count - 1, part.contains(".") {
                    guard isIPv4(part) else { return false }
                    groups += 2
                    continue
                }
                guard (1 ... 4).contains(part.count), part.allSatisfy({ $0.isHexDigit }) else { return false }
                groups += 1
            }
        }
        return halves.count == 2 ? groups <= 7 : groups == 8
    }
}

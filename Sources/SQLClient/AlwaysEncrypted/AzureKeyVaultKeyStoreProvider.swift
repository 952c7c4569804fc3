import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

extension ColumnEncryptionError.Code {
    /// A column master key path names a host that is not one of the provider's trusted key
    /// endpoints (Azure Key Vault), so no token is sent there.
    public static let untrustedEndpoint = ColumnEncryptionError.Code("untrustedEndpoint")
    /// The key store refused the caller (HTTP 401 after a token, or 403): the identity lacks a
    /// permission on the key (`get`, `unwrapKey`, `wrapKey`, `sign`).
    public static let accessDenied = ColumnEncryptionError.Code("accessDenied")
}

/// The column master keys of Azure Key Vault and Managed HSM (`AZURE_KEY_VAULT`), through the Key
/// Vault REST API, as Microsoft.Data.SqlClient's `SqlColumnEncryptionAzureKeyVaultProvider`.
///
/// A master key path is the key's identifier, `https://<vault>.vault.azure.net/keys/<name>/<version>`
/// (the version may be left out: the current one). Its host must be one label (the vault) under
/// one of ``trustedEndpoints``; any other host is refused before a request is made, so a server
/// that names a key path cannot make the client send a token elsewhere.
///
/// Unwrapping a column encryption key (see `EncryptedColumnEncryptionKey` for its layout):
/// the key's public part is fetched once (`GET <path>`, cached), the blob's lengths are checked
/// against the modulus size, its RS256 signature is verified here with that public key, and only
/// then is the ciphertext sent to `POST <path>/unwrapkey` (`RSA-OAEP`). Wrapping uses `wrapkey`
/// and `sign` (`RS256` over the SHA-256 of the blob).
///
/// Tokens: the first request of each vault is sent without one; the vault's 401 challenge
/// (`WWW-Authenticate: Bearer authorization="…", resource="…"` or `scope="…"`) names the
/// authority and the resource, and the token comes from ``credential`` through ``tokenCache``
/// (``EntraTokenCache``, shared with the logins). Tokens are never logged.
public struct SQLAzureKeyVaultKeyStoreProvider: SQLColumnEncryptionKeyStoreProvider, CustomStringConvertible {
    /// `AZURE_KEY_VAULT`: the KeyStoreName of Azure Key Vault column master keys.
    public static let providerName = "AZURE_KEY_VAULT"
    /// The Key Vault REST API version sent (`api-version`).
    public static let apiVersion = "7.4"
    /// The key endpoints of the public and sovereign clouds (Key Vault and Managed HSM).
    public static let defaultTrustedEndpoints = [
        "vault.azure.net", "vault.azure.cn", "vault.usgovcloudapi.net", "vault.microsoftazure.de",
        "managedhsm.azure.net", "managedhsm.azure.cn", "managedhsm.usgovcloudapi.net", "managedhsm.microsoftazure.de",
    ]
    /// The largest Key Vault answer read (a key or an operation result is a few kilobytes).
    public static let maximumResponseSize = 64 << 10

    /// Where tokens come from (a service principal, a managed identity, the default chain, …).
    public let credential: any EntraTokenCredential
    /// The key endpoint domains a key path's host may be under (lower case, no leading dot).
    public let trustedEndpoints: [String]
    /// Only for tests: also accept `http` or `https` key paths on a loopback host (127.0.0.0/8,
    /// `::1`, `localhost`), where the challenge's resource is not checked against the host.
    public let allowLoopbackEndpoints: Bool
    /// The cache tokens are asked through.
    public let tokenCache: EntraTokenCache
    /// The time each Key Vault exchange (token included) may take.
    public let timeout: Duration
    private let transport: any EntraHTTPTransport
    private let state = State()

    /// A provider asking Key Vault with tokens from `credential`.
    /// - Parameters:
    ///   - credential: the Entra credential the vault's tokens are asked with.
    ///   - trustedEndpoints: the domains key paths may name (default ``defaultTrustedEndpoints``).
    ///   - allowLoopbackEndpoints: only for tests: also accept key paths on a loopback host.
    ///   - tokenCache: the cache tokens are asked through (default the process's shared one).
    ///   - transport: the HTTP transport (default URLSession).
    ///   - timeout: per operation (default 30 seconds).
    public init(credential: any EntraTokenCredential, trustedEndpoints: [String] = defaultTrustedEndpoints,
                allowLoopbackEndpoints: Bool = false, tokenCache: EntraTokenCache = .shared,
                transport: any EntraHTTPTransport = URLSessionEntraTransport(), timeout: Duration = .seconds(30)) {
        self.credential = credential
        self.trustedEndpoints = trustedEndpoints.map { $0.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: ".")) }
            .filter { !$0.isEmpty }
        self.allowLoopbackEndpoints = allowLoopbackEndpoints
        self.tokenCache = tokenCache
        self.transport = transport
        self.timeout = timeout
    }

    public var description: String {
        "SQLAzureKeyVaultKeyStoreProvider(credential: \(credential.authenticationName), trustedEndpoints: \(trustedEndpoints))"
    }

    // MARK: - The provider's operations

    /// Unwraps `encryptedKey` with the Key Vault key at `masterKeyPath` (see the type's steps).
    /// - Throws: ``ColumnEncryptionError`` naming the path: `.invalidKeyPath`, `.untrustedEndpoint`,
    ///   `.unknownAlgorithm` (not RSA_OAEP), `.invalidEncryptedKey` (malformed, or not the key's
    ///   size), `.signatureMismatch` (tampered, or wrapped by another key), `.accessDenied` (401/403),
    ///   `.keyNotFound` (404), `.keyStoreFailed` (any other failure of Key Vault or the token).
    public func decryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) async throws -> [UInt8] {
        try Self.checkAlgorithm(algorithm, masterKeyPath)
        let key = try parse(masterKeyPath)
        let publicKey = try await self.publicKey(key)
        let parts = try EncryptedColumnEncryptionKey(encryptedKey, keySize: publicKey.size, keyPath: masterKeyPath)
        guard parts.verifies(with: publicKey) else {
            throw ColumnEncryptionError(.signatureMismatch, "the encrypted column encryption key's signature does not verify with"
                                        + " this Key Vault key (tampered, or wrapped by another key)", keyPath: masterKeyPath)
        }
        return try await operation(key, "unwrapkey", ["alg": "RSA-OAEP", "value": EntraJWT.base64URLEncode(Array(parts.ciphertext))])
    }

    /// Wraps `columnEncryptionKey` (`wrapkey`, RSA-OAEP) and signs the blob (`sign`, RS256), in
    /// the layout of `EncryptedColumnEncryptionKey` with the path lower-cased.
    /// - Throws: ``ColumnEncryptionError`` as for decryption.
    public func encryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, columnEncryptionKey: [UInt8]) async throws -> [UInt8] {
        try Self.checkAlgorithm(algorithm, masterKeyPath)
        let key = try parse(masterKeyPath)
        let publicKey = try await self.publicKey(key)
        let ciphertext = try await operation(key, "wrapkey", ["alg": "RSA-OAEP", "value": EntraJWT.base64URLEncode(columnEncryptionKey)])
        guard ciphertext.count == publicKey.size else {
            throw ColumnEncryptionError(.keyStoreFailed, "Key Vault wrapped the key into \(ciphertext.count) bytes, not the key's \(publicKey.size)",
                                        keyPath: masterKeyPath)
        }
        let unsigned = try EncryptedColumnEncryptionKey.unsigned(masterKeyPath: masterKeyPath, ciphertext: ciphertext)
        let signature = try await sign(key, unsigned)
        guard signature.count == publicKey.size, publicKey.verifySHA256(unsigned[...], signature: signature[...]) else {
            throw ColumnEncryptionError(.signatureMismatch, "Key Vault's signature of the new blob does not verify with the key", keyPath: masterKeyPath)
        }
        return unsigned + signature
    }

    /// RS256 signature by Key Vault over the UTF-16LE of (provider name, path, "true"/"false") lower-cased.
    /// - Throws: ``ColumnEncryptionError`` as for decryption.
    public func signColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool) async throws -> [UInt8] {
        try await sign(try parse(masterKeyPath), Self.metadata(masterKeyPath, allowEnclaveComputations))
    }

    /// Checks a metadata signature here with the key's public part.
    /// - Throws: ``ColumnEncryptionError`` as for decryption (never for a signature that does not verify: false).
    public func verifyColumnMasterKeyMetadata(masterKeyPath: String, allowEnclaveComputations: Bool, signature: [UInt8]) async throws -> Bool {
        let publicKey = try await self.publicKey(try parse(masterKeyPath))
        return publicKey.verifySHA256(Self.metadata(masterKeyPath, allowEnclaveComputations)[...], signature: signature[...])
    }

    private static func metadata(_ path: String, _ allow: Bool) -> [UInt8] {
        EncryptedColumnEncryptionKey.utf16LE((providerName + path + (allow ? "true" : "false")).lowercased())
    }

    private static func checkAlgorithm(_ algorithm: String, _ path: String) throws(ColumnEncryptionError) {
        guard algorithm.uppercased() == "RSA_OAEP" else {
            throw ColumnEncryptionError(.unknownAlgorithm, "key encryption algorithm '\(algorithm.prefix(64))' is not RSA_OAEP", keyPath: path)
        }
    }

    // MARK: - Key paths

    /// A checked key path: the vault's origin, the key's path (`/keys/<name>[/<version>]`).
    struct KeyPath: Hashable {
        var text: String
        var origin: String
        var path: String
        /// The trusted endpoint the host is under (nil on loopback).
        var endpoint: String?
    }

    /// Checks `masterKeyPath`: an absolute `https` URL without user, query or fragment, a host of
    /// one label under a trusted endpoint (a proper subdomain: `evil-vault.azure.net` is not under
    /// `vault.azure.net`), and the path `/keys/<name>` or `/keys/<name>/<version>`.
    /// - Throws: ``ColumnEncryptionError`` `.invalidKeyPath` or `.untrustedEndpoint`.
    func parse(_ masterKeyPath: String) throws(ColumnEncryptionError) -> KeyPath {
        func invalid(_ why: String) -> ColumnEncryptionError {
            ColumnEncryptionError(.invalidKeyPath, "an Azure Key Vault key path is https://<vault>.vault.azure.net/keys/<name>/<version>: \(why)",
                                  keyPath: masterKeyPath)
        }
        guard masterKeyPath.utf8.count <= 2048, masterKeyPath.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw invalid("it is longer than 2,048 bytes or holds spaces, controls or non-ASCII characters")
        }
        guard let components = URLComponents(string: masterKeyPath), let scheme = components.scheme?.lowercased(),
              let host = components.host?.lowercased(), !host.isEmpty else { throw invalid("it is not an absolute URL") }
        guard components.user == nil, components.password == nil, components.query == nil, components.fragment == nil else {
            throw invalid("it has a user, a query or a fragment")
        }
        let loopback = allowLoopbackEndpoints && EntraAuthority.isLoopback(host)
        guard scheme == "https" || (loopback && scheme == "http") else { throw invalid("the scheme is not https") }
        var endpoint: String?
        if !loopback {
            guard components.port == nil || components.port == 443 else {
                throw ColumnEncryptionError(.untrustedEndpoint, "the key path names port \(components.port ?? 0); Key Vault is on 443",
                                            keyPath: masterKeyPath)
            }
            endpoint = trustedEndpoints.first { trusted in
                guard host.hasSuffix("." + trusted) else { return false }
                let label = host.dropLast(trusted.count + 1)
                return !label.isEmpty && !label.contains(".")
            }
            guard endpoint != nil else {
                throw ColumnEncryptionError(.untrustedEndpoint, "the host \(host) is not a vault under a trusted key endpoint ("
                                            + trustedEndpoints.joined(separator: ", ") + ")", keyPath: masterKeyPath)
            }
        }
        let segments = components.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        func isName(_ s: Substring) -> Bool {
            (1 ... 127).contains(s.utf8.count) && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D }
        }
        var parts = Array(segments)
        if parts.last == "" { parts.removeLast() }   // a trailing slash
        guard components.path.hasPrefix("/"), (2 ... 3).contains(parts.count), parts[0].lowercased() == "keys",
              parts.dropFirst().allSatisfy(isName) else {
            throw invalid("the path is not /keys/<name>/<version> (letters, digits, '-')")
        }
        var origin = "\(scheme)://\(host)"
        if let port = components.port { origin += ":\(port)" }
        return KeyPath(text: masterKeyPath, origin: origin, path: "/" + parts.joined(separator: "/"), endpoint: endpoint)
    }

    // MARK: - Key Vault requests

    /// The key's public part: cached per path after the first `GET`.
    func publicKey(_ key: KeyPath) async throws(ColumnEncryptionError) -> AERSAKey {
        if let cached = state.publicKey(key.text) { return cached }
        let answer = try await send(key, method: "GET", operation: nil, body: nil)
        guard let jwk = answer["key"] as? [String: Any] else { throw malformed(key, "no \"key\" in the key's answer") }
        let kty = (jwk["kty"] as? String) ?? ""
        guard kty == "RSA" || kty == "RSA-HSM" else {
            throw ColumnEncryptionError(.keyStoreFailed, "the Key Vault key is of type '\(kty.prefix(16))', not RSA", keyPath: key.text)
        }
        guard let n = (jwk["n"] as? String).flatMap(EntraJWT.base64URLDecode), let e = (jwk["e"] as? String).flatMap(EntraJWT.base64URLDecode),
              (64 ... 2048).contains(n.count), (1 ... 8).contains(e.count),
              let publicKey = AERSAKey.publicKey(pkcs1: RSAPublicKeyDER.encode(modulus: [UInt8](n), exponent: [UInt8](e))) else {
            throw malformed(key, "the key's modulus or exponent is missing or not an RSA public key")
        }
        state.setPublicKey(publicKey, for: key.text)
        return publicKey
    }

    private func sign(_ key: KeyPath, _ message: [UInt8]) async throws(ColumnEncryptionError) -> [UInt8] {
        let digest = try AECrypto.sha256(message)
        return try await operation(key, "sign", ["alg": "RS256", "value": EntraJWT.base64URLEncode(digest)])
    }

    /// `POST <path>/<name>` with `body`; the `value` of the answer, decoded.
    private func operation(_ key: KeyPath, _ name: String, _ body: [String: String]) async throws(ColumnEncryptionError) -> [UInt8] {
        let answer = try await send(key, method: "POST", operation: name, body: body)
        guard let value = (answer["value"] as? String).flatMap(EntraJWT.base64URLDecode), !value.isEmpty else {
            throw malformed(key, "no \"value\" in the answer of \(name)")
        }
        return [UInt8](value)
    }

    private func malformed(_ key: KeyPath, _ why: String) -> ColumnEncryptionError {
        ColumnEncryptionError(.keyStoreFailed, "Key Vault's answer is malformed: \(why)", keyPath: key.text)
    }

    /// One Key Vault request, with the challenge and the token handled: the JSON object answered.
    private func send(_ key: KeyPath, method: String, operation: String?, body: [String: String]?) async throws(ColumnEncryptionError) -> [String: Any] {
        guard let url = URL(string: key.origin + key.path + (operation.map { "/" + $0 } ?? "") + "?api-version=\(Self.apiVersion)") else {
            throw ColumnEncryptionError(.invalidKeyPath, "the key path does not make a URL", keyPath: key.text)
        }
        var bodyBytes: [UInt8]?
        if let body { bodyBytes = [UInt8]((try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()) }
        var challenge = state.challenge(key.origin)
        var attempts = 0
        while true {
            attempts += 1
            var headers = ["Accept": "application/json"]
            if bodyBytes != nil { headers["Content-Type"] = "application/json" }
            if let challenge {
                let token: EntraAccessToken
                do {
                    token = try await tokenCache.token(for: challenge, from: credential, timeout: timeout)
                } catch {
                    throw ColumnEncryptionError(.keyStoreFailed, "no token for Key Vault: \(error)", keyPath: key.text)
                }
                headers["Authorization"] = "Bearer " + token.token
            }
            let response: EntraHTTPResponse
            do {
                response = try await transport.send(EntraHTTPRequest(method: method, url: url, headers: headers, body: bodyBytes),
                                                    timeout: timeout, maximumBodySize: Self.maximumResponseSize)
            } catch {
                throw ColumnEncryptionError(.keyStoreFailed, "Key Vault at \(key.origin) did not answer: \(error)", keyPath: key.text)
            }
            switch response.status {
            case 200 ..< 300:
                guard let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] else {
                    throw malformed(key, "not a JSON object")
                }
                return object
            case 401 where attempts == 1:
                // The challenge names the authority and the resource; ask again with a token for them.
                let asked = try readChallenge(response.headers["www-authenticate"], key)
                state.setChallenge(asked, for: key.origin)
                challenge = asked
                continue
            case 401, 403:
                throw ColumnEncryptionError(.accessDenied, "Key Vault refused the request (HTTP \(response.status)\(Self.errorText(response))):"
                                            + " the identity needs the key permission '\(operation ?? "get")'", keyPath: key.text)
            case 404:
                throw ColumnEncryptionError(.keyNotFound, "Key Vault has no such key (HTTP 404\(Self.errorText(response)))", keyPath: key.text)
            default:
                throw ColumnEncryptionError(.keyStoreFailed, "Key Vault answered HTTP \(response.status)\(Self.errorText(response))", keyPath: key.text)
            }
        }
    }

    /// `, <code>: <message>` from Key Vault's error object (bounded, printable), or nothing.
    private static func errorText(_ response: EntraHTTPResponse) -> String {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
              let error = object["error"] as? [String: Any] else { return "" }
        let code = ((error["code"] as? String) ?? "").prefix(64)
        let message = ((error["message"] as? String) ?? "").prefix(200)
        return ", " + String(code + ": " + message).filter { $0.isASCII && !$0.isNewline }
    }

    /// The authority and resource of a `Bearer` challenge. The resource must be the key endpoint
    /// the vault is under (or a parent domain of the vault's host), so that a token for another
    /// service is never asked for on a vault's word.
    func readChallenge(_ header: String?, _ key: KeyPath) throws(ColumnEncryptionError) -> EntraTokenRequest {
        guard let header, header.lowercased().hasPrefix("bearer ") else {
            throw ColumnEncryptionError(.accessDenied, "Key Vault answered 401 without a Bearer challenge", keyPath: key.text)
        }
        var parameters: [String: String] = [:]
        let scanner = header.dropFirst(7)
        var rest = Substring(scanner)
        while let equals = rest.firstIndex(of: "=") {
            let name = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: " ,")).lowercased()
            rest = rest[rest.index(after: equals)...]
            let value: Substring
            if rest.first == "\"" {
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: "\"") else { break }
                value = rest[..<close]
                rest = rest[rest.index(after: close)...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end]
                rest = rest[end...]
            }
            parameters[name] = String(value)
        }
        let authority = parameters["authorization"] ?? parameters["authorization_uri"]
        var resource = parameters["resource"]
        if resource == nil, let scope = parameters["scope"] {
            resource = scope.hasSuffix("/.default") ? String(scope.dropLast(9)) : scope
        }
        guard let authority, let resource, let resourceURL = URL(string: resource), let resourceHost = resourceURL.host?.lowercased(),
              resourceURL.scheme?.lowercased() == "https" else {
            throw ColumnEncryptionError(.accessDenied, "Key Vault's challenge names no authority or no https resource", keyPath: key.text)
        }
        if let endpoint = key.endpoint, !(resourceHost == endpoint || endpoint.hasSuffix("." + resourceHost)) {
            throw ColumnEncryptionError(.untrustedEndpoint, "Key Vault's challenge asks a token for \(resourceHost), not for \(endpoint)",
                                        keyPath: key.text)
        }
        return EntraTokenRequest(authority: authority, resource: resource)
    }

    /// What the provider learned: each vault's challenge, each key's public part.
    private final class State: Sendable {
        private let learned = Mutex<(challenges: [String: EntraTokenRequest], keys: [String: AERSAKey])>(([:], [:]))

        func challenge(_ origin: String) -> EntraTokenRequest? { learned.withLock { $0.challenges[origin] } }
        func setChallenge(_ c: EntraTokenRequest, for origin: String) { learned.withLock { $0.challenges[origin] = c } }
        func publicKey(_ path: String) -> AERSAKey? { learned.withLock { $0.keys[path] } }
        func setPublicKey(_ key: AERSAKey, for path: String) {
            learned.withLock {
                if $0.keys.count >= 1024 { $0.keys.removeAll() }   // bounded: key paths come from servers
                $0.keys[path] = key
            }
        }
    }
}

/// The PKCS #1 RSAPublicKey DER (SEQUENCE { INTEGER modulus, INTEGER publicExponent }) of a
/// JSON Web Key's `n` and `e`, and back.
package enum RSAPublicKeyDER {
    /// The DER of `modulus` and `exponent` (big-endian unsigned integers).
    package static func encode(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02] + length(value.count) + value
        }
        let body = integer(modulus) + integer(exponent)
        return [0x30] + length(body.count) + body
    }

    private static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        if n <= 0xFF { return [0x81, UInt8(n)] }
        if n <= 0xFFFF { return [0x82, UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)] }
        return [0x83, UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
    }

    /// The modulus and exponent (no leading zero bytes) of a PKCS #1 RSAPublicKey DER; nil when
    /// the bytes are not one (every length checked against the bytes present).
    package static func decode(_ der: [UInt8]) -> (modulus: [UInt8], exponent: [UInt8])? {
        var reader = Reader(der)
        guard reader.header(0x30) != nil, let m = reader.header(0x02) else { return nil }
        let modulus = Array(reader.take(m).drop { $0 == 0 })
        guard let e = reader.header(0x02) else { return nil }
        let exponent = Array(reader.take(e).drop { $0 == 0 })
        return (modulus, exponent)
    }

    /// A reader of DER tag-length headers (definite lengths of up to 3 bytes), each length
    /// checked against the bytes left; the one DER reader of the key code (PKCS #1 here, PKCS #8
    /// in the Apple key code).
    package struct Reader {
        private let der: [UInt8]
        private var i = 0

        package init(_ der: [UInt8]) { self.der = der }

        /// The length of the element at the offset when its tag is `tag` (the offset moves to its
        /// contents); nil when the tag differs or the length runs past the bytes.
        package mutating func header(_ tag: UInt8) -> Int? {
            guard i + 2 <= der.count, der[i] == tag else { return nil }
            var n = Int(der[i + 1]); i += 2
            if n & 0x80 != 0 {
                let count = n & 0x7F
                guard (1 ... 3).contains(count), i + count <= der.count else { return nil }
                n = 0
                for _ in 0 ..< count { n = n << 8 | Int(der[i]); i += 1 }
            }
            return n <= der.count - i ? n : nil
        }

        /// The next `count` bytes (a length `header` returned), the offset moved past them.
        package mutating func take(_ count: Int) -> ArraySlice<UInt8> {
            let end = min(i + max(count, 0), der.count)
            defer { i = end }
            return der[i ..< end]
        }
    }
}

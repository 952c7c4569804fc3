import Foundation
import SQLClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A local Azure Key Vault for tests, on 127.0.0.1 only: RSA keys made in the process, the key
/// operations of the REST API that Always Encrypted uses (`GET /keys/<name>/<version>`, and
/// `POST …/unwrapkey`, `…/wrapkey` with `RSA-OAEP`, `…/sign` with `RS256`), the 401 Bearer
/// challenge naming an Entra authority (a ``LocalEntraServer``'s STSURL) and the resource
/// `https://vault.azure.net`, 403 for an identity without access and 404 for an unknown key.
///
/// Tokens are ``FakeEntraToken``s: the server reads their audience (must be the resource) and
/// their `appid` (must be granted with ``grant(identity:)``).
public final class LocalKeyVaultServer: @unchecked Sendable {
    /// The resource the challenge names.
    public static let resource = "https://vault.azure.net"

    /// The STSURL the challenge names as its `authorization`.
    public let authority: String
    private let lock = NSLock()
    private var http: LoopbackHTTPServer!
    private var keys: [String: AERSAKey] = [:]   // "name/version"
    private var current: [String: String] = [:]  // name -> version
    private var granted: Set<String> = []
    private var _requests: [String] = []
    private var _challengeResource = LocalKeyVaultServer.resource
    private var _hostile: Hostile?

    /// Starts on 127.0.0.1, an ephemeral port; challenges name `authority`.
    /// - Throws: when it cannot listen.
    public init(authority: String) throws {
        self.authority = authority
        http = try LoopbackHTTPServer { [self] client, request in serve(client, request) }
    }

    deinit { stop() }

    /// Stops listening and closes every connection.
    public func stop() { http.stop() }

    /// `http://127.0.0.1:<port>`: the vault's origin.
    public var origin: String { "http://127.0.0.1:\(http.port)" }

    /// Makes an RSA key of `bits` bits named `name` (a new version when the name exists).
    /// - Returns: the key's path, `<origin>/keys/<name>/<version>`.
    /// - Throws: ``KeyGenerationFailed`` when the platform's cryptography makes no key.
    public func createKey(name: String, bits: Int = 2048) throws -> String {
        guard let key = AERSAKey.generate(bits: bits) else { throw KeyGenerationFailed() }
        let version = String(format: "%016llx%016llx", UInt64.random(in: 0 ... .max), UInt64.random(in: 0 ... .max))
        lock.withLock {
            keys["\(name.lowercased())/\(version)"] = key
            current[name.lowercased()] = version
        }
        return "\(origin)/keys/\(name)/\(version)"
    }

    /// The platform's cryptography made no RSA key.
    public struct KeyGenerationFailed: Error {}

    /// Lets tokens naming `identity` (their `appid`) use every key.
    public func grant(identity: String) { _ = lock.withLock { granted.insert(identity) } }

    /// A hostile way to answer key requests (after the token is checked).
    public enum Hostile: Sendable {
        /// A 200 whose body is not JSON.
        case notJSON
        /// The key is an elliptic-curve key (`kty` EC), not RSA.
        case ellipticCurveKey
        /// The key's modulus is 4,096 bytes of nothing.
        case hugeModulus
    }

    /// Answers key requests this hostile way (nil: normally).
    public var hostile: Hostile? {
        get { lock.withLock { _hostile } }
        set { lock.withLock { _hostile = newValue } }
    }

    /// The resource the 401 challenge names (default ``resource``; tests of a hostile vault change it).
    public var challengeResource: String {
        get { lock.withLock { _challengeResource } }
        set { lock.withLock { _challengeResource = newValue } }
    }

    /// Every request so far as `METHOD path` (no query).
    public var requests: [String] { lock.withLock { _requests } }

    // MARK: - HTTP

    private func serve(_ client: BlockingSocket, _ request: LoopbackHTTPRequest) {
        let (method, path, headers, body) = (request.method, request.path, request.headers, request.body)
        lock.withLock { _requests.append("\(method) \(path)") }
        let (status, json, extra) = answer(method: method, path: path, headers: headers, body: body)
        LoopbackHTTPServer.reply(client, status, json, extra: extra)
    }

    private func error(_ status: Int, _ code: String, _ message: String) -> (Int, String, String) {
        (status, json(["error": ["code": code, "message": message]]), "")
    }

    private func json(_ object: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func fromBase64URL(_ text: String) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { [UInt8]($0) }
    }

    private func answer(method: String, path: String, headers: [String: String], body: [UInt8]) -> (Int, String, String) {
        let resource = challengeResource
        guard let authorization = headers["authorization"], authorization.hasPrefix("Bearer ") else {
            return (401, json(["error": ["code": "Unauthorized", "message": "AKV10000: Request is missing a Bearer or PoP token."]]),
                    "WWW-Authenticate: Bearer authorization=\"\(authority)\", resource=\"\(resource)\"\r\n")
        }
        let claims = FakeEntraToken.claims(String(authorization.dropFirst(7))) ?? [:]
        guard let audience = claims["aud"] as? String, audience == Self.resource else {
            return error(401, "Unauthorized", "AKV10022: Invalid audience.")
        }
        guard let identity = claims["appid"] as? String, lock.withLock({ granted.contains(identity) }) else {
            return error(403, "Forbidden", "The user, group or application does not have keys permission on key vault.")
        }
        let segments = path.split(separator: "/").map(String.init)
        guard segments.count >= 2, segments[0] == "keys" else { return error(404, "NotFound", "no such route") }
        let name = segments[1].lowercased()
        var version: String?
        var operation: String?
        switch segments.count {
        case 2: break
        case 3: if method == "GET" { version = segments[2] } else { operation = segments[2] }
        case 4: version = segments[2]; operation = segments[3]
        default: return error(404, "NotFound", "no such route")
        }
        let found = lock.withLock { () -> (AERSAKey, String)? in
            guard let v = version ?? current[name], let key = keys["\(name)/\(v.lowercased())"] else { return nil }
            return (key, v)
        }
        guard let (key, v) = found else { return error(404, "KeyNotFound", "A key with (name/id) \(name) was not found in this key vault.") }
        let kid = "\(origin)/keys/\(name)/\(v)"
        switch hostile {
        case .notJSON?: return (200, "{\"key\": {\"kid\": \"unterminated", "")
        case .ellipticCurveKey?: return (200, json(["key": ["kid": kid, "kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"]]), "")
        case .hugeModulus?: return (200, json(["key": ["kid": kid, "kty": "RSA", "n": Self.base64URL([UInt8](repeating: 0xFF, count: 4096)), "e": "AQAB"]]), "")
        case nil: break
        }
        guard let operation else {
            guard method == "GET", let der = key.publicPKCS1(), let (n, e) = RSAPublicKeyDER.decode(der) else {
                return error(400, "BadParameter", "GET a key")
            }
            return (200, json(["key": ["kid": kid, "kty": "RSA", "key_ops": ["wrapKey", "unwrapKey", "sign", "verify"],
                                       "n": Self.base64URL(n), "e": Self.base64URL(e)]]), "")
        }
        guard method == "POST", let request = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let alg = request["alg"] as? String, let value = (request["value"] as? String).flatMap(Self.fromBase64URL) else {
            return error(400, "BadParameter", "the body needs alg and value")
        }
        let result: [UInt8]?
        switch (operation, alg) {
        case ("unwrapkey", "RSA-OAEP"): result = key.decryptOAEP(value[...])
        case ("wrapkey", "RSA-OAEP"): result = key.encryptOAEP(value)
        case ("sign", "RS256"):
            guard value.count == 32 else { return error(400, "BadParameter", "RS256 signs a 32-byte digest") }
            result = key.signDigestSHA256(value)
        default: return error(400, "BadParameter", "operation \(operation) with \(alg) is not supported here")
        }
        guard let result else { return error(400, "BadParameter", "the operation failed (wrong key or altered value)") }
        return (200, json(["kid": kid, "value": Self.base64URL(result)]), "")
    }
}

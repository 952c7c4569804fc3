#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Test access tokens: JWT-shaped (header, claims, a fixed signature part), never signed, so that
/// a test server can read who a token is for (`aud`) and who it names (`appid`, `oid`).
public enum FakeEntraToken {
    /// A token for `audience` naming `identity` (as `appid` and `oid`), expiring at `expiresOn`.
    public static func make(audience: String, identity: String, tenant: String = "tenant", expiresOn: Date,
                            serial: Int = 0) -> String {
        func b64(_ object: [String: Any]) -> String {
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        return b64(["alg": "none", "typ": "JWT"]) + "." + b64([
            "aud": audience, "appid": identity, "oid": identity, "tid": tenant, "exp": Int(expiresOn.timeIntervalSince1970),
            "serial": serial,
        ]) + ".c2lnbmF0dXJl"
    }

    /// The claims of a token made by ``make(audience:identity:tenant:expiresOn:serial:)`` (nil for anything else).
    public static func claims(_ token: String) -> [String: Any]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var s = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        guard let data = Data(base64Encoded: s) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}

/// A local Microsoft Entra ID for tests, on 127.0.0.1 only: the token endpoint of a tenant
/// (client credentials with a secret or a client assertion, the device code grant), the managed
/// identity endpoints (App Service `IDENTITY_ENDPOINT` at `/msi/token` with `X-IDENTITY-HEADER`,
/// the instance metadata endpoint at `/metadata/identity/oauth2/token` with `Metadata: true`), the
/// errors Entra answers (`invalid_client` AADSTS7000215 for a wrong secret, `unauthorized_client`
/// AADSTS700016 for an unknown application), and hostile answers (slow, endless, malformed JSON,
/// a token for another audience, HTTP 500 with Retry-After) to test a client's bounds.
///
/// Tokens are ``FakeEntraToken``s for the resource asked (`scope` without `/.default`), naming the
/// client id (`system-assigned` for a system-assigned identity).
public final class LocalEntraServer: @unchecked Sendable {
    /// A hostile way to answer every request.
    public enum Hostile: Sendable {
        /// Wait this many seconds, then answer normally.
        case slow(seconds: Double)
        /// Send a 200 and then body bytes forever (until the client hangs up).
        case endless
        /// A 200 whose body is not JSON.
        case malformed
        /// A token for another audience.
        case wrongAudience
        /// HTTP 500 with this Retry-After (seconds).
        case serverError(retryAfter: Int)
    }

    /// How the expiry is written in token answers.
    public enum ExpiryForm: Sendable {
        /// `"expires_in": 3599` (a number: Entra's token endpoint).
        case expiresInNumber
        /// `"expires_in": "3599"`, `"expires_on": "1700000000"` (digit strings: managed identity).
        case digitStrings
        /// `"expires_on": "12/05/2026 10:00:00 PM +00:00"` (App Service's older date string).
        case dateString
    }

    /// The tenant in the paths (`/<tenant>/oauth2/v2.0/token`).
    public let tenant: String
    private let lock = NSLock()
    private var http: LoopbackHTTPServer!
    private var secrets: [String: String] = [:]
    private var assertions: [String: String] = [:]
    private var certificates: [String: String] = [:]
    private var _arcKey: (path: String, content: String)?
    private var _hostile: Hostile?
    private var _requests: [String] = []
    private var _lifetime: TimeInterval = 3600
    private var _expiryForm: ExpiryForm = .expiresInNumber
    private var _pendingPolls = 1
    private var _transientFailures = 0
    private var _slowDowns = 0
    private var polls: [String: Int] = [:]
    private var serial = 0
    private var _now: @Sendable () -> Date = { Date() }
    /// The `X-IDENTITY-HEADER` the App Service endpoint requires.
    public let identityHeader = "local-identity-header-\(UInt32.random(in: 0 ... .max))"
    /// The application that signs in with the device code (any client id is accepted).
    public let deviceCodeUser = "device-code-user"

    /// Starts on 127.0.0.1, an ephemeral port.
    /// - Throws: when it cannot listen.
    public init(tenant: String = "00000000-0000-0000-0000-00000000abcd") throws {
        self.tenant = tenant
        http = try LoopbackHTTPServer { [self] client, request in serve(client, request) }
    }

    deinit { stop() }

    /// Stops listening and closes every connection.
    public func stop() { http.stop() }

    /// The port on 127.0.0.1.
    public var port: UInt16 { http.port }
    /// `http://127.0.0.1:<port>`: the authority host.
    public var authorityHost: String { "http://127.0.0.1:\(port)" }
    /// The STSURL a TDS test server names: `http://127.0.0.1:<port>/<tenant>`.
    public var stsURL: String { "\(authorityHost)/\(tenant)" }
    /// The App Service `IDENTITY_ENDPOINT`.
    public var appServiceEndpoint: String { "\(authorityHost)/msi/token" }

    /// Registers an application with a client secret.
    public func register(clientID: String, secret: String) { lock.withLock { secrets[clientID] = secret } }
    /// Registers an application that signs in with a client assertion (workload identity's federated token).
    public func register(clientID: String, assertion: String) { lock.withLock { assertions[clientID] = assertion } }
    /// Registers an application that signs in with a certificate: its client assertion (an RS256 or PS256 JWT) must
    /// carry the certificate's `x5t#S256`, be signed by its key, name the token endpoint as `aud` and
    /// the client id as `iss` and `sub`, and be valid now.
    public func register(clientID: String, certificatePath: String) { lock.withLock { certificates[clientID] = certificatePath } }
    /// Azure Arc: the key file the challenge names and its content (`/arc/token` answers 401 naming it,
    /// then a token to a request with `Authorization: Basic <content>`).
    public func setArcKey(path: String, content: String) { lock.withLock { _arcKey = (path, content) } }
    /// The Azure Arc endpoint (`IDENTITY_ENDPOINT` with `IMDS_ENDPOINT` set).
    public var arcEndpoint: String { "\(authorityHost)/arc/token" }
    /// The Cloud Shell endpoint (`MSI_ENDPOINT`).
    public var cloudShellEndpoint: String { "\(authorityHost)/cloudshell/token" }
    /// Answers every request this hostile way (nil: normally).
    public var hostile: Hostile? {
        get { lock.withLock { _hostile } }
        set { lock.withLock { _hostile = newValue } }
    }
    /// Token lifetime in seconds (default 3600).
    public var lifetime: TimeInterval {
        get { lock.withLock { _lifetime } }
        set { lock.withLock { _lifetime = newValue } }
    }
    /// How the expiry is written.
    public var expiryForm: ExpiryForm {
        get { lock.withLock { _expiryForm } }
        set { lock.withLock { _expiryForm = newValue } }
    }
    /// Device code: how many polls are answered `authorization_pending` before the token (default 1).
    public var pendingPolls: Int {
        get { lock.withLock { _pendingPolls } }
        set { lock.withLock { _pendingPolls = newValue } }
    }
    /// How many token requests are answered HTTP 503 with `Retry-After: 1` before the others are served (default 0).
    public var transientFailures: Int {
        get { lock.withLock { _transientFailures } }
        set { lock.withLock { _transientFailures = newValue } }
    }
    /// Device code: how many polls are answered `slow_down` first (default 0).
    public var slowDowns: Int {
        get { lock.withLock { _slowDowns } }
        set { lock.withLock { _slowDowns = newValue } }
    }
    /// The time tokens are issued at (inject a test clock).
    public var now: @Sendable () -> Date {
        get { lock.withLock { _now } }
        set { lock.withLock { _now = newValue } }
    }
    /// Every request so far as `METHOD path` (no query).
    public var requests: [String] { lock.withLock { _requests } }
    /// Requests that asked for a token (token endpoint, managed identity endpoints; not device code polls that were pending).
    public var tokenRequests: Int { lock.withLock { _requests.filter { $0.contains("token") }.count } }

    // MARK: - HTTP

    struct Request {
        var method: String
        var path: String
        var query: [String: String]
        var headers: [String: String]
        var form: [String: String]
    }

    private func serve(_ client: BlockingSocket, _ http: LoopbackHTTPRequest) {
        let path = http.path
        let request = Request(method: http.method, path: path, query: http.queryText.map(Self.decodeForm) ?? [:],
                              headers: http.headers, form: Self.decodeForm(String(decoding: http.body, as: UTF8.self)))
        lock.withLock { _requests.append("\(request.method) \(path)") }
        switch hostile {
        case .slow(let seconds)?:
            Thread.sleep(forTimeInterval: seconds)
        case .endless?:
            try? client.write(Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"access_token\":\"".utf8))
            let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 16_384)
            while (try? client.write(chunk)) != nil {}
            return
        case .malformed?:
            reply(client, 200, "{\"access_token\": \"unterminated")
            return
        case .serverError(let retryAfter)?:
            reply(client, 500, "{\"error\":\"temporarily_unavailable\",\"error_description\":\"AADSTS50001: try later\"}",
                  extra: "Retry-After: \(retryAfter)\r\n")
            return
        default:
            break
        }
        let transient = lock.withLock { () -> Bool in
            guard _transientFailures > 0 else { return false }
            _transientFailures -= 1
            return true
        }
        if transient {
            reply(client, 503, "{\"error\":\"temporarily_unavailable\"}", extra: "Retry-After: 1\r\n")
            return
        }
        let (status, json) = answer(request)
        if status == 401, let split = json.range(of: "\u{0}") {
            reply(client, 401, String(json[..<split.lowerBound]), extra: "WWW-Authenticate: Basic realm=\(json[split.upperBound...])\r\n")
            return
        }
        reply(client, status, json)
    }

    private func reply(_ client: BlockingSocket, _ status: Int, _ body: String, extra: String = "") {
        LoopbackHTTPServer.reply(client, status, body, extra: extra)
    }

    private func error(_ status: Int, _ code: String, _ description: String) -> (Int, String) {
        (status, json(["error": code, "error_description": description]))
    }

    private func json(_ object: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }

    private func tokenAnswer(resource: String, identity: String) -> (Int, String) {
        let (lifetime, form, now, n, hostile) = lock.withLock { () -> (TimeInterval, ExpiryForm, Date, Int, Hostile?) in
            serial += 1
            return (_lifetime, _expiryForm, _now(), serial, _hostile)
        }
        let expires = now.addingTimeInterval(lifetime)
        var audience = resource
        if case .wrongAudience? = hostile { audience = "https://vault.azure.net" }
        let token = FakeEntraToken.make(audience: audience, identity: identity, tenant: tenant, expiresOn: expires, serial: n)
        var object: [String: Any] = ["access_token": token, "token_type": "Bearer", "resource": resource]
        switch form {
        case .expiresInNumber: object["expires_in"] = Int(lifetime)
        case .digitStrings:
            object["expires_in"] = String(Int(lifetime))
            object["expires_on"] = String(Int(expires.timeIntervalSince1970))
        case .dateString:
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(identifier: "UTC")
            f.dateFormat = "MM/dd/yyyy hh:mm:ss a xxx"
            object["expires_on"] = f.string(from: expires)
        }
        return (200, json(object))
    }

    static func resource(fromScope scope: String) -> String {
        let first = scope.split(separator: " ").first.map(String.init) ?? ""
        return first.hasSuffix("/.default") ? String(first.dropLast(9)) : first
    }

    private func answer(_ r: Request) -> (Int, String) {
        let tokenPath = "/\(tenant)/oauth2/v2.0/token"
        switch r.path {
        case "/\(tenant)/oauth2/v2.0/devicecode":
            guard r.method == "POST", let client = r.form["client_id"], let scope = r.form["scope"] else {
                return error(400, "invalid_request", "AADSTS900144: client_id and scope are required")
            }
            let code = "dc-\(UInt32.random(in: 0 ... .max))|\(Self.resource(fromScope: scope))|\(client)"
            lock.withLock { polls[code] = 0 }
            return (200, json(["device_code": code, "user_code": "LOCAL-CODE", "verification_uri": "\(authorityHost)/devicelogin",
                               "expires_in": 900, "interval": 0,
                               "message": "To sign in, use a web browser to open the page \(authorityHost)/devicelogin and enter the code LOCAL-CODE to authenticate."]))
        case tokenPath:
            guard r.method == "POST" else { return error(405, "invalid_request", "POST only") }
            let grant = r.form["grant_type"] ?? ""
            let client = r.form["client_id"] ?? ""
            if grant == "urn:ietf:params:oauth:grant-type:device_code" {
                guard let code = r.form["device_code"], let count = lock.withLock({ polls[code] }) else {
                    return error(400, "invalid_grant", "AADSTS70000: unknown device code")
                }
                let (slow, pending) = lock.withLock { (_slowDowns, _pendingPolls) }
                lock.withLock { polls[code] = count + 1 }
                if count < slow { return error(400, "slow_down", "AADSTS70016: slow down") }
                if count < slow + pending { return error(400, "authorization_pending", "AADSTS70016: pending") }
                let parts = code.split(separator: "|")
                return tokenAnswer(resource: parts.count > 1 ? String(parts[1]) : "", identity: deviceCodeUser)
            }
            guard grant == "client_credentials", let scope = r.form["scope"] else {
                return error(400, "unsupported_grant_type", "AADSTS70003: grant \(grant) is not supported here")
            }
            let (secret, assertion, certificate) = lock.withLock { (secrets[client], assertions[client], certificates[client]) }
            if let certificate, let given = r.form["client_assertion"] {
                let audience = "\(authorityHost)\(tokenPath)"
                guard let why = Self.checkAssertion(given, certificatePath: certificate, clientID: client, audience: audience,
                                                    now: now()) else {
                    return tokenAnswer(resource: Self.resource(fromScope: r.form["scope"] ?? ""), identity: client)
                }
                return error(401, "invalid_client", "AADSTS700027: Client assertion failed signature validation: \(why)")
            }
            if secret == nil, assertion == nil {
                return error(400, "unauthorized_client", "AADSTS700016: Application with identifier '\(client)' was not found in the directory '\(tenant)'.")
            }
            if let given = r.form["client_secret"] {
                guard given == secret else { return error(401, "invalid_client", "AADSTS7000215: Invalid client secret provided.") }
            } else if let given = r.form["client_assertion"] {
                guard r.form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", given == assertion else {
                    return error(401, "invalid_client", "AADSTS700211: No matching federated identity record found for presented assertion.")
                }
            } else {
                return error(401, "invalid_client", "AADSTS7000216: client_assertion or client_secret is required.")
            }
            return tokenAnswer(resource: Self.resource(fromScope: scope), identity: client)
        case "/msi/token":
            guard r.headers["x-identity-header"] == identityHeader else {
                return error(401, "invalid_request", "X-IDENTITY-HEADER is missing or wrong")
            }
            guard r.query["api-version"] == "2019-08-01", let resource = r.query["resource"] else {
                return error(400, "invalid_request", "api-version 2019-08-01 and resource are required")
            }
            return tokenAnswer(resource: resource, identity: r.query["client_id"] ?? r.query["mi_res_id"] ?? r.query["principal_id"] ?? "system-assigned")
        case "/arc/token":
            // Azure Arc: a challenge naming a key file, then the same request with its content.
            guard r.headers["metadata"] == "true", let resource = r.query["resource"] else {
                return error(400, "invalid_request", "Metadata: true and resource are required")
            }
            let key = lock.withLock { _arcKey }
            guard let (path, content) = key else { return error(404, "not_found", "no Arc agent here") }
            guard let authorization = r.headers["authorization"] else { return (401, "{}\u{0}" + path) }
            guard authorization == "Basic \(content)" else { return error(401, "invalid_request", "the key does not match") }
            return tokenAnswer(resource: resource, identity: "arc-system-assigned")
        case "/cloudshell/token":
            guard r.method == "POST", r.headers["metadata"] == "true", let resource = r.form["resource"] else {
                return error(400, "invalid_request", "POST, Metadata: true and resource are required")
            }
            return tokenAnswer(resource: resource, identity: "cloud-shell-user")
        case "/metadata/identity/oauth2/token":
            guard r.headers["metadata"] == "true" else { return error(400, "invalid_request", "Metadata: true is required") }
            guard let resource = r.query["resource"] else { return error(400, "invalid_request", "resource is required") }
            return tokenAnswer(resource: resource, identity: r.query["client_id"] ?? r.query["msi_res_id"] ?? r.query["object_id"] ?? "system-assigned")
        default:
            return error(404, "not_found", "no such endpoint")
        }
    }

    /// Nil when `jwt` is a valid client assertion for `clientID` signed by the certificate's key; else why not.
    static func checkAssertion(_ jwt: String, certificatePath: String, clientID: String, audience: String, now: Date) -> String? {
        #if canImport(CSQLClientOpenSSL)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { return "not a JWT" }
        func decode(_ s: String) -> [UInt8]? {
            var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while t.count % 4 != 0 { t += "=" }
            return Data(base64Encoded: t).map { [UInt8]($0) }
        }
        guard let headerBytes = decode(parts[0]), let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any],
              let claimBytes = decode(parts[1]), let claims = (try? JSONSerialization.jsonObject(with: Data(claimBytes))) as? [String: Any],
              let signature = decode(parts[2]) else { return "undecodable" }
        let alg = header["alg"] as? String
        guard alg == "RS256" || alg == "PS256" else { return "alg is neither RS256 nor PS256" }
        guard claims["aud"] as? String == audience else { return "aud \(claims["aud"] ?? "") is not \(audience)" }
        guard claims["iss"] as? String == clientID, claims["sub"] as? String == clientID else { return "iss/sub is not the client" }
        let t = Int(now.timeIntervalSince1970)
        guard let nbf = claims["nbf"] as? Int, let exp = claims["exp"] as? Int, nbf <= t + 300, t < exp else { return "not valid now" }
        guard let pem = FileManager.default.contents(atPath: certificatePath) else { return "no certificate" }
        let pemBytes = [UInt8](pem)
        guard let bio = BIO_new_mem_buf(pemBytes, Int32(pemBytes.count)) else { return "BIO" }
        let x509 = PEM_read_bio_X509(bio, nil, nil, nil)
        BIO_free(bio)
        guard let x509 else { return "certificate unreadable" }
        defer { X509_free(x509) }
        let length = i2d_X509(x509, nil)
        var der = [UInt8](repeating: 0, count: Int(max(0, length)))
        der.withUnsafeMutableBufferPointer { b in var p: UnsafeMutablePointer<UInt8>? = b.baseAddress; _ = i2d_X509(x509, &p) }
        var digest = [UInt8](repeating: 0, count: 32)
        var dl: UInt32 = 0
        _ = EVP_Digest(der, der.count, &digest, &dl, EVP_sha256(), nil)
        let thumb = Data(digest).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        guard header["x5t#S256"] as? String == thumb else { return "x5t#S256 does not name the registered certificate" }
        guard let key = X509_get_pubkey(x509) else { return "no public key" }
        defer { EVP_PKEY_free(key) }
        guard let ctx = EVP_MD_CTX_new() else { return "ctx" }
        defer { EVP_MD_CTX_free(ctx) }
        let input = Array((parts[0] + "." + parts[1]).utf8)
        var pctx: OpaquePointer?
        guard EVP_DigestVerifyInit(ctx, &pctx, EVP_sha256(), nil, key) == 1 else { return "bad signature" }
        if alg == "PS256" {   // RSASSA-PSS, SHA-256, salt as long as the digest (RFC 7518 3.5)
            guard EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1 else { return "PSS" }
        }
        guard EVP_DigestVerify(ctx, signature, signature.count, input, input.count) == 1 else { return "bad signature" }
        return nil
        #else
        return "no OpenSSL"
        #endif
    }

    static func decodeForm(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String { (String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding) ?? String(s) }
            result[decode(kv[0])] = kv.count > 1 ? decode(kv[1]) : ""
        }
        return result
    }

    /// Writes an executable fake `az` (or `azd`) into `directory` that prints a token for the resource
    /// it is asked for naming `identity` (and appends its arguments to `directory/<tool>.log`), or,
    /// with `loggedIn` false, fails as the real tool does when nobody signed in. Returns its path.
    /// - Throws: when the file cannot be written.
    @discardableResult
    public static func writeFakeCLI(_ tool: String, in directory: String, identity: String, loggedIn: Bool = true,
                                    expiresOn: Date = Date().addingTimeInterval(3600)) throws -> String {
        let path = directory + "/" + tool
        let epoch = Int(expiresOn.timeIntervalSince1970)
        let token = { (aud: String) in FakeEntraToken.make(audience: aud, identity: identity, expiresOn: expiresOn) }
        // The token's audience is the resource (az --resource) or the scope without /.default (azd --scope).
        let sqlToken = token("https://database.windows.net/")
        var script = "#!/bin/sh\necho \"$@\" >> \"\(directory)/\(tool).log\"\n"
        if !loggedIn {
            script += tool == "az" ? "echo \"ERROR: Please run 'az login' to setup account.\" >&2\nexit 1\n"
                : "echo \"ERROR: not logged in, run \\`azd auth login\\` to login\" >&2\nexit 1\n"
        } else if tool == "az" {
            script += "printf '%s' '{\"accessToken\": \"\(sqlToken)\", \"expiresOn\": \"2099-01-01 00:00:00.000000\", \"expires_on\": \(epoch), \"subscription\": \"sub\", \"tenant\": \"tenant\", \"tokenType\": \"Bearer\"}'\n"
        } else {
            script += "printf '%s' '{\"token\": \"\(sqlToken)\", \"expiresOn\": \"\(ISO8601DateFormatter().string(from: expiresOn))\"}'\n"
        }
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }
}

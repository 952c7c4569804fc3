import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One HTTP request of a credential (a token endpoint, a managed identity endpoint).
public struct EntraHTTPRequest: Sendable, CustomStringConvertible {
    /// `GET` or `POST`.
    public var method: String
    /// The endpoint, with its query.
    public var url: URL
    /// Request headers (some hold secrets: never printed).
    public var headers: [String: String]
    /// The body (a form, holding secrets: never printed).
    public var body: [UInt8]?

    /// A request from its parts.
    public init(method: String, url: URL, headers: [String: String] = [:], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The method and the endpoint without its query; never headers or body.
    public var description: String { "\(method) \(EntraCredentialError.endpointText(url))" }
}

/// An HTTP answer: the status, the headers (names in lower case) and the body (bounded).
public struct EntraHTTPResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The headers, names in lower case.
    public var headers: [String: String]
    /// The body.
    public var body: [UInt8]

    /// A response from its parts (header names are lower-cased).
    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.body = body
    }
}

/// What sends a credential's HTTP requests. The default is ``URLSessionEntraTransport``; tests
/// inject their own (to prove that nothing is sent, or to answer without a socket).
public protocol EntraHTTPTransport: Sendable {
    /// Sends `request` and returns the answer, within `timeout`, reading at most `maximumBodySize` bytes of body.
    /// - Throws: ``EntraHTTPTransportError``.
    func send(_ request: EntraHTTPRequest, timeout: Duration, maximumBodySize: Int) async throws -> EntraHTTPResponse
}

/// Why a request got no answer.
public enum EntraHTTPTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No complete answer within the time given.
    case timeout
    /// The body went past the bound.
    case bodyTooLarge(limit: Int)
    /// The endpoint could not be reached or the exchange broke (the system's reason).
    case failed(String)

    public var description: String {
        switch self {
        case .timeout: return "no answer in time"
        case .bodyTooLarge(let limit): return "the answer is larger than \(limit) bytes"
        case .failed(let reason): return reason
        }
    }
}

/// HTTP through Foundation's URLSession (FoundationNetworking on Linux): an ephemeral session per
/// request, no cookies, no cache, no redirects followed, the whole exchange bounded by the timeout
/// and the body by the size given (the transfer is cancelled as soon as it goes past it).
public struct URLSessionEntraTransport: EntraHTTPTransport {
    /// The transport.
    public init() {}

    public func send(_ request: EntraHTTPRequest, timeout: Duration, maximumBodySize: Int) async throws -> EntraHTTPResponse {
        let seconds = max(0.001, Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        let delegate = BoundedBodyDelegate(limit: maximumBodySize)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { DispatchQueue.global().async { session.invalidateAndCancel() } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<EntraHTTPResponse, any Error>) in
                let task = session.dataTask(with: urlRequest)
                delegate.start(task, continuation: continuation, deadline: seconds)
            }
        } onCancel: {
            delegate.cancel(with: CancellationError())
        }
    }
}

/// Collects one data task's answer, cancelling it past the size bound or the deadline.
private final class BoundedBodyDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let limit: Int
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var body: [UInt8] = []
        var response: HTTPURLResponse?
        var continuation: CheckedContinuation<EntraHTTPResponse, any Error>?
        var task: URLSessionDataTask?
        var pendingError: (any Error)?
    }

    init(limit: Int) { self.limit = limit }

    func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<EntraHTTPResponse, any Error>, deadline: Double) {
        let pendingError = state.withLock { s -> (any Error)? in
            if let pendingError = s.pendingError { return pendingError }
            s.task = task
            s.continuation = continuation
            return nil
        }
        if let pendingError {
            continuation.resume(throwing: pendingError)
            return
        }
        task.resume()
        // URLSession's timeouts count idle time: a server that trickles bytes forever is stopped here.
        DispatchQueue.global().asyncAfter(deadline: .now() + deadline) { [weak self] in
            self?.cancel(with: EntraHTTPTransportError.timeout)
        }
    }

    func cancel(with error: any Error) {
        let continuation = state.withLock { s -> CheckedContinuation<EntraHTTPResponse, any Error>? in
            guard let continuation = s.continuation else {
                if s.task == nil { s.pendingError = error }
                return nil
            }
            s.continuation = nil
            return continuation
        }
        guard let continuation else { return }
        // The transfer itself is stopped by `send`'s session.invalidateAndCancel(), which runs as
        // soon as this resumes it: one cancel per task. A second, task.cancel() from here, raced it
        // in FoundationNetworking (a task cancelled after it left the session's registry traps:
        // "not in the registry", seen once in a loaded test run).
        continuation.resume(throwing: error)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        state.withLock { $0.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = state.withLock { s in
            guard s.continuation != nil else { return false }   // finished: what still arrives is dropped
            s.body.append(contentsOf: data)
            return s.body.count > limit
        }
        if over { cancel(with: EntraHTTPTransportError.bodyTooLarge(limit: limit)) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)   // a redirect is answered as it is, never followed (it could lead off the endpoint)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let finished = state.withLock { s -> (CheckedContinuation<EntraHTTPResponse, any Error>, HTTPURLResponse?, [UInt8])? in
            guard let continuation = s.continuation else { return nil }
            s.continuation = nil
            return (continuation, s.response, s.body)
        }
        guard let (continuation, response, body) = finished else { return }
        if let error {
            let ns = error as NSError
            if ns.domain == NSURLErrorDomain, ns.code == NSURLErrorTimedOut {
                continuation.resume(throwing: EntraHTTPTransportError.timeout)
            } else {
                continuation.resume(throwing: EntraHTTPTransportError.failed(ns.localizedDescription))
            }
            return
        }
        guard let response else {
            continuation.resume(throwing: EntraHTTPTransportError.failed("no HTTP response"))
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        continuation.resume(returning: EntraHTTPResponse(status: response.statusCode, headers: headers, body: body))
    }
}

/// The HTTP side every credential shares: sending through the transport, the bounds, retries
/// of 429/5xx that fit the time left, and reading the token out of the answer (both
/// `expires_in` and `expires_on`, as numbers, digit strings or dates).
public struct EntraHTTPClient: Sendable {
    /// The largest answer read (a token answer is a few kilobytes).
    public static let maximumResponseSize = 256 << 10
    /// The transport.
    public var transport: any EntraHTTPTransport
    /// The clock (for expiry and retry-after waits).
    public var clock: any EntraClock

    /// A client over `transport`.
    public init(transport: any EntraHTTPTransport = URLSessionEntraTransport(), clock: any EntraClock = SystemEntraClock()) {
        self.transport = transport
        self.clock = clock
    }

    /// Sends `request` for `credential` within `timeout`; retries a 429 or 5xx whose Retry-After fits in the time left.
    /// `secrets` are removed from every message. Returns the response of status 2xx, or the last error answer when `acceptErrors`.
    func send(_ request: EntraHTTPRequest, credential: String, timeout: Duration, secrets: [String],
              acceptErrors: Bool = false) async throws -> EntraHTTPResponse {
        let endpoint = EntraCredentialError.endpointText(request.url)
        let start = clock.now()
        func left() -> Duration { timeout - .milliseconds(Int64(clock.now().timeIntervalSince(start) * 1000)) }
        var attempts = 0
        while true {
            attempts += 1
            let remaining = left()
            guard remaining > .zero else {
                throw EntraCredentialError(.timeout, credential: credential, endpoint: endpoint, "no answer within the login timeout")
            }
            let response: EntraHTTPResponse
            do {
                response = try await transport.send(request, timeout: remaining, maximumBodySize: Self.maximumResponseSize)
            } catch let error as EntraHTTPTransportError {
                switch error {
                case .timeout:
                    throw EntraCredentialError(.timeout, credential: credential, endpoint: endpoint,
                                               "no complete answer within the time left for the login (\(remaining))")
                case .bodyTooLarge(let limit):
                    throw EntraCredentialError(.responseTooLarge, credential: credential, endpoint: endpoint,
                                               "the answer is larger than \(limit) bytes")
                case .failed(let reason):
                    throw EntraCredentialError(.unreachable, credential: credential, endpoint: endpoint,
                                               Self.redact(reason, secrets))
                }
            } catch is CancellationError {
                throw SQLClientError(.cancelled, "\(credential): the token request was cancelled")
            }
            if (200 ..< 300).contains(response.status) || acceptErrors && response.status < 500 && response.status != 429 {
                return response
            }
            if response.status == 429 || response.status >= 500, attempts < 3,
               let wait = Self.retryAfter(response.headers["retry-after"]), wait + .milliseconds(100) < left() {
                try await clock.sleep(for: wait)
                continue
            }
            throw Self.errorAnswer(response, credential: credential, endpoint: endpoint, secrets: secrets)
        }
    }

    /// Retry-After in seconds (a date form is not honoured: no wait is taken on it).
    static func retryAfter(_ value: String?) -> Duration? {
        guard let value, let n = Int(value.trimmingCharacters(in: .whitespaces)), n >= 0, n < 3600 else { return nil }
        return .seconds(n)
    }

    /// The error for an HTTP error answer: `error`, the AADSTS code and the first sentence of
    /// `error_description`, bounded, with `secrets` removed.
    static func errorAnswer(_ response: EntraHTTPResponse, credential: String, endpoint: String, secrets: [String]) -> EntraCredentialError {
        var detail = "HTTP \(response.status)"
        if let json = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] {
            var error = json["error"] as? String
            var description = json["error_description"] as? String
            if let nested = json["error"] as? [String: Any] {   // {"error":{"code":…,"message":…}} (managed identity)
                error = nested["code"] as? String
                description = nested["message"] as? String
            }
            if let error { detail += " \(error)" }
            if let description {
                let first = description.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).first.map(String.init) ?? ""
                detail += ": " + String(first.prefix(300))
            }
        }
        if let retry = response.headers["retry-after"] { detail += " (retry after \(retry.prefix(40)) s)" }
        let kind: EntraCredentialError.Kind = (400 ..< 500).contains(response.status) && response.status != 429
            ? .authenticationFailed : .httpError
        return EntraCredentialError(kind, credential: credential, endpoint: endpoint, redact(detail, secrets))
    }

    /// `text` with every secret (longer than 3 characters) replaced.
    static func redact(_ text: String, _ secrets: [String]) -> String {
        var t = text
        for s in secrets where s.count > 3 { t = t.replacingOccurrences(of: s, with: "(redacted)") }
        return t
    }

    /// The token in a JSON answer: `access_token` (or `accessToken`, `token`), and its expiry from
    /// `expires_on`/`expiresOn` (seconds since 1970 as a number or digits, or a date string) or
    /// `expires_in` (seconds, number or digits); checks the audience when the token is a JWT.
    static func parseToken(_ body: [UInt8], credential: String, endpoint: String, request: EntraTokenRequest?,
                           now: Date) throws(EntraCredentialError) -> EntraAccessToken {
        func bad(_ why: String) -> EntraCredentialError {
            EntraCredentialError(.malformedResponse, credential: credential, endpoint: endpoint, why)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)), let json = object as? [String: Any] else {
            throw bad("the answer is not a JSON object (\(body.count) bytes)")
        }
        guard let token = (json["access_token"] ?? json["accessToken"] ?? json["token"]) as? String, !token.isEmpty else {
            throw bad("the answer has no access_token")
        }
        var expiry: Date?
        for key in ["expires_on", "expiresOn", "expires_at"] where expiry == nil {
            if let value = json[key] { expiry = EntraExpiry.date(from: value) }
        }
        if expiry == nil, let value = json["expires_in"] ?? json["expiresIn"], let seconds = EntraExpiry.seconds(from: value) {
            expiry = now.addingTimeInterval(seconds)
        }
        guard let expiresOn = expiry else { throw bad("the answer has no expires_in or expires_on that can be read") }
        if let request, let audience = EntraJWT.audience(of: token), !EntraJWT.audience(audience, matches: request.resource) {
            throw EntraCredentialError(.wrongAudience, credential: credential, endpoint: endpoint,
                                       "the token is for \"\(audience.prefix(200))\", not for \(request.resource)")
        }
        return EntraAccessToken(token: token, expiresOn: expiresOn)
    }
}

/// Reading the expiry forms the endpoints send.
enum EntraExpiry {
    /// Seconds from a number or a digit string.
    static func seconds(from value: Any) -> Double? {
        if let n = value as? NSNumber { return n.doubleValue }
        if let s = value as? String, let n = Double(s.trimmingCharacters(in: .whitespaces)) { return n }
        return nil
    }

    /// A date from seconds since 1970 (number or digits) or a date string: ISO 8601
    /// (`2025-01-01T10:00:00Z`, with or without fractions), App Service's `01/01/2025 10:00:00 AM +00:00`,
    /// or the Azure CLI's local `2025-01-01 10:00:00.000000`.
    static func date(from value: Any) -> Date? {
        if let seconds = seconds(from: value), seconds > 1_000_000 { return Date(timeIntervalSince1970: seconds) }
        guard let text = (value as? String)?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        let iso = ISO8601DateFormatter()
        if let d = iso.date(from: text) { return d }
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = iso.date(from: text) { return d }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        for (format, zone) in [("MM/dd/yyyy hh:mm:ss a xxx", nil), ("M/d/yyyy h:mm:ss a xxx", nil),
                               ("yyyy-MM-dd HH:mm:ss.SSSSSS", TimeZone.current), ("yyyy-MM-dd HH:mm:ss", TimeZone.current)] as [(String, TimeZone?)] {
            formatter.dateFormat = format
            formatter.timeZone = zone ?? TimeZone(identifier: "UTC")
            if let d = formatter.date(from: text) { return d }
        }
        return nil
    }
}

/// Reading (never verifying) a JWT's claims: the token's audience, to refuse a token for another resource.
enum EntraJWT {
    /// The claims of a JWT (its middle part), nil when `token` is not one.
    static func claims(of token: String) -> [String: Any]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = base64URLDecode(String(parts[1])) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    /// The `aud` claim (the first when it is an array).
    static func audience(of token: String) -> String? {
        guard let claims = claims(of: token) else { return nil }
        if let aud = claims["aud"] as? String { return aud }
        return (claims["aud"] as? [String])?.first
    }

    /// Azure SQL's application id, the audience of tokens asked for `https://database.windows.net/`.
    static let azureSQLApplicationID = "022907d3-0f1b-48f7-badc-1ba6abab6d66"

    /// Whether `audience` names `resource` (trailing slashes aside; Azure SQL's application id for its resource).
    static func audience(_ audience: String, matches resource: String) -> Bool {
        func trimmed(_ s: String) -> String {
            var t = s.lowercased()
            if t.hasSuffix("/.default") { t.removeLast(9) }
            while t.hasSuffix("/") { t.removeLast() }
            return t
        }
        let a = trimmed(audience), r = trimmed(resource)
        if a == r { return true }
        if a == azureSQLApplicationID, r.hasPrefix("https://database.") { return true }
        return false
    }

    static func base64URLDecode(_ text: String) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }

    static func base64URLEncode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// `application/x-www-form-urlencoded` bodies and query strings.
enum EntraForm {
    static let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func encode(_ fields: [(String, String)]) -> String {
        fields.map { k, v in
            (k.addingPercentEncoding(withAllowedCharacters: allowed) ?? "") + "="
                + (v.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }.joined(separator: "&")
    }

    static func body(_ fields: [(String, String)]) -> [UInt8] { Array(encode(fields).utf8) }
}

extension EntraHTTPClient {
    /// POSTs `form` to `url` and reads the token from the answer (checking its audience against `request`).
    func postForToken(_ url: URL, form: [(String, String)], credential: String, request: EntraTokenRequest,
                      timeout: Duration, secrets: [String], headers: [String: String] = [:]) async throws -> EntraAccessToken {
        var h = headers
        h["Content-Type"] = "application/x-www-form-urlencoded"
        h["Accept"] = "application/json"
        let http = EntraHTTPRequest(method: "POST", url: url, headers: h, body: EntraForm.body(form))
        let response = try await send(http, credential: credential, timeout: timeout, secrets: secrets)
        return try Self.parseToken(response.body, credential: credential, endpoint: EntraCredentialError.endpointText(url),
                                   request: request, now: clock.now())
    }
}

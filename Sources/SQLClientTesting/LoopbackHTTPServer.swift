import Foundation

/// One HTTP/1.1 request as the loopback test servers read it (``LoopbackHTTPServer``).
struct LoopbackHTTPRequest: Sendable {
    /// `GET`, `POST`, …
    var method: String
    /// The request target as sent (path and query).
    var target: String
    /// Header names lowercased.
    var headers: [String: String]
    /// The body (at most ``LoopbackHTTPServer/maximumBodySize`` bytes are read).
    var body: [UInt8]

    /// The target without its query.
    var path: String { String(target.split(separator: "?", maxSplits: 1).first ?? "") }
    /// The query after `?`, if any.
    var queryText: String? {
        let parts = target.split(separator: "?", maxSplits: 1)
        return parts.count == 2 ? String(parts[1]) : nil
    }
}

/// The HTTP listener under the local test endpoints (``LocalEntraServer``, ``LocalKeyVaultServer``):
/// 127.0.0.1 only, an ephemeral port, a thread per connection, one request per connection
/// (`Connection: close`), its head bounded to 64 KiB and its body to 1 MiB. The handler answers on
/// the socket itself (so that a hostile server can answer slowly or forever).
final class LoopbackHTTPServer: @unchecked Sendable {
    /// The largest request head read (bytes).
    static let maximumHeadSize = 65_536
    /// The largest request body read (bytes).
    static let maximumBodySize = 1 << 20

    /// The port on 127.0.0.1.
    let port: UInt16
    private let lock = NSLock()
    private var listener: BlockingSocket?
    private var open: [BlockingSocket] = []
    private let group = DispatchGroup()

    /// Listens on 127.0.0.1 (an ephemeral port) and answers each request with `handler`.
    /// - Throws: when it cannot listen.
    init(handler: @escaping @Sendable (BlockingSocket, LoopbackHTTPRequest) -> Void) throws {
        let (socket, port) = try BlockingSocket.listen(host: "127.0.0.1", port: 0)
        self.port = port
        listener = socket
        group.enter()
        Thread.detachNewThread { [self] in
            while let client = socket.accept() {
                lock.withLock { open.append(client) }
                group.enter()
                Thread.detachNewThread { [self] in
                    if let request = Self.readRequest(client) { handler(client, request) }
                    client.close()
                    lock.withLock { open.removeAll { $0 === client } }
                    group.leave()
                }
            }
            group.leave()
        }
    }

    /// Stops listening and closes every connection (waits up to 5 s for their threads).
    func stop() {
        let (l, clients) = lock.withLock { () -> (BlockingSocket?, [BlockingSocket]) in
            let r = (listener, open)
            listener = nil
            return r
        }
        l?.shutdown()
        l?.close()
        for c in clients { c.shutdown() }
        _ = group.wait(timeout: .now() + 5)
    }

    /// Reads one request: nil when the peer closes first or the head passes its bound.
    static func readRequest(_ client: BlockingSocket) -> LoopbackHTTPRequest? {
        var buffer: [UInt8] = []
        var headerEnd: Int?
        while headerEnd == nil {
            guard let chunk = try? client.read(), !chunk.isEmpty, buffer.count < maximumHeadSize else { return nil }
            buffer += chunk
            headerEnd = find([13, 10, 13, 10], in: buffer)
        }
        guard let end = headerEnd else { return nil }
        let head = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = head.first?.split(separator: " ") ?? []
        guard parts.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(buffer[(end + 4)...])
        let length = min(Int(headers["content-length"] ?? "0") ?? 0, maximumBodySize)
        while body.count < length {
            guard let chunk = try? client.read(), !chunk.isEmpty else { return nil }
            body += chunk
        }
        return LoopbackHTTPRequest(method: String(parts[0]), target: String(parts[1]), headers: headers, body: body)
    }

    /// Writes a whole JSON answer: status line, `Content-Length`, `extra` header lines (each
    /// ending in CRLF), `Connection: close`, the body.
    static func reply(_ client: BlockingSocket, _ status: Int, _ body: String, extra: String = "") {
        let reasons = [200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"]
        let bytes = Array(body.utf8)
        let head = "HTTP/1.1 \(status) \(reasons[status] ?? "Error")\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(bytes.count)\r\n\(extra)Connection: close\r\n\r\n"
        try? client.write(Array(head.utf8) + bytes)
    }

    /// The first index of `needle` in `haystack`.
    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0 ... haystack.count - needle.count where haystack[i ..< i + needle.count].elementsEqual(needle) { return i }
        return nil
    }
}

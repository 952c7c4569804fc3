import Dispatch
import TDS

/// `MultiSubnetFailover=true`: connect to every address a host resolves to at the same time and keep
/// the first connection that completes (an availability group listener spanning subnets resolves
/// to one address per subnet, and only the current primary's answers). The others are cancelled
/// and closed.
enum ParallelConnect {
    /// Resolves `host` and connects to all of its addresses in parallel; `timeout` bounds both
    /// (resolving the name counts in it).
    /// - Throws: ``SQLClientError`` `.hostNotFound`, `.connectionFailed` (every address failed, each
    ///   named once), `.timeout`, `.cancelled`.
    static func connect(host: String, port: Int, timeout: Duration?) async throws -> SocketStream {
        guard (1 ... 65535).contains(port) else {
            throw SQLClientError(.invalidConfiguration, "port \(port) is out of range 1–65535")
        }
        let clock = ContinuousClock()
        let start = clock.now
        let resolved = try await SocketStream.resolve(host: host, port: port,
                                                      deadline: timeout.map { DispatchTime.now() + $0.dispatchInterval })
        let left = timeout.map { max(.zero, $0 - (clock.now - start)) }
        let literals = resolved.map { address -> String in
            // `text` is "a.b.c.d:port" or "[v6]:port".
            var t = Substring(address.text)
            if let colon = t.lastIndex(of: ":") { t = t[..<colon] }
            if t.hasPrefix("["), t.hasSuffix("]") { t = t.dropFirst().dropLast() }
            return String(t)
        }
        return try await connect(addresses: literals, port: port, timeout: left, host: host)
    }

    /// Connects to each IP literal in `addresses` at once; the first to complete wins.
    static func connect(addresses: [String], port: Int, timeout: Duration?, host: String? = nil) async throws -> SocketStream {
        var unique: [String] = []
        for a in addresses where !unique.contains(a) { unique.append(a) }
        guard !unique.isEmpty else {
            throw SQLClientError(.hostNotFound, "host \"\(host ?? "")\" has no address")
        }
        return try await withThrowingTaskGroup(of: SocketStream.self) { group in
            for address in unique {
                group.addTask { try await SocketStream.connect(host: address, port: port, timeout: timeout) }
            }
            var failures: [String] = []
            var timedOut = false
            var winner: SocketStream?
            while let result = await group.nextResult() {
                switch result {
                case .success(let stream):
                    if winner == nil {
                        winner = stream
                        group.cancelAll()
                    } else {
                        stream.close()   // a second one that completed before it saw the cancellation
                    }
                case .failure(let error as SQLClientError):
                    if error.code == .timeout { timedOut = true }
                    if error.code != .cancelled || winner == nil { failures.append(error.message) }
                case .failure(let error):
                    failures.append("\(error)")
                }
            }
            if let winner { return winner }
            try Task.checkCancellation(orThrow: SQLClientError(.cancelled, "connecting to \(host ?? unique[0]):\(port) was cancelled"))
            if timedOut {
                throw SQLClientError(.timeout, "no address of \(host ?? unique[0]) answered on port \(port) in time: "
                                     + failures.joined(separator: "; "))
            }
            throw SQLClientError(.connectionFailed, "could not connect to \(host ?? unique[0]):\(port) (every address, in parallel): "
                                 + failures.joined(separator: "; "))
        }
    }
}

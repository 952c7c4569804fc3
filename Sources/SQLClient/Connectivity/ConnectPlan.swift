import TDS

/// What to do after each login attempt, within one connect: follow a routing ENVCHANGE (once, as
/// Microsoft.Data.SqlClient allows), retry a transient login error (``SQLConnectRetryPolicy``), or stop.
/// Pure: the caller passes the time left in the connect budget, so tests drive time.
struct ConnectPlan: Sendable {
    /// Where the next attempt goes.
    struct Target: Sendable, Equatable {
        /// The host to resolve and connect to (and to check the certificate against).
        var host: String
        var port: Int
        /// LOGIN7 ServerName: the name the client used for this server (the routing target's name,
        /// instance included, after a redirect).
        var serverName: String
        /// True once a routing ENVCHANGE brought the client here.
        var routed: Bool
    }

    /// How an attempt ended.
    enum Outcome: Sendable {
        case connected
        /// The login response carried ENVCHANGE type 20.
        case routed(EnvChange.Routing)
        case failed(SQLClientError)
    }

    enum Next: Sendable, Equatable {
        /// Logged in where the client ended up.
        case done
        /// Close this connection and log in at `target` (same credentials and options).
        case follow(Target)
        /// Wait `delay`, then log in again at the same target.
        case retry(after: Duration)
        case fail(SQLClientError)

        static func == (a: Next, b: Next) -> Bool {
            switch (a, b) {
            case (.done, .done): return true
            case (.follow(let x), .follow(let y)): return x == y
            case (.retry(let x), .retry(let y)): return x == y
            case (.fail(let x), .fail(let y)): return x.code == y.code && x.message == y.message
            default: return false
            }
        }
    }

    private(set) var target: Target
    let policy: SQLConnectRetryPolicy
    let retries: Int
    private(set) var retriesUsed = 0

    init(host: String, port: Int, serverName: String, policy: SQLConnectRetryPolicy) {
        self.target = Target(host: host, port: port, serverName: serverName, routed: false)
        self.policy = policy
        self.retries = policy.effectiveCount(host: host)
    }

    /// The longest host name a routing ENVCHANGE may name (a DNS name's 253 bytes).
    static let maximumRoutedHostLength = 253

    /// The next step after `outcome`, with `remaining` of the connect budget left.
    mutating func next(after outcome: Outcome, remaining: Duration) -> Next {
        switch outcome {
        case .connected:
            return .done
        case .routed(let routing):
            // "host\instance": connect to the host (the port is given); LOGIN7 names the whole server.
            let parts = routing.server.split(separator: "\\", maxSplits: 1, omittingEmptySubsequences: false)
            let host = parts.first.map(String.init) ?? ""
            // A name the server chose, up to 65,535 characters: a host longer than a DNS name can
            // be ([RFC 1035] 2.3.4: 253 bytes) or an instance name over 255 bytes is refused
            // without being echoed in the error.
            guard host.utf8.count <= Self.maximumRoutedHostLength, (parts.dropFirst().first?.utf8.count ?? 0) <= 255 else {
                return .fail(SQLClientError(.protocolError, "the server redirected the login to a server name of "
                                            + "\(routing.server.utf8.count) bytes (a DNS name has at most "
                                            + "\(Self.maximumRoutedHostLength), an instance name 255)"))
            }
            guard !target.routed else {
                return .fail(SQLClientError(.protocolError, "the server at \(target.host):\(target.port) redirected the login"
                                            + " again, to \(routing.server):\(routing.port); only one redirection per login is followed"))
            }
            guard routing.protocol == 0 else {
                return .fail(SQLClientError(.protocolError, "the server redirected the login with protocol \(routing.protocol) (only TCP, 0, is known)"))
            }
            guard !host.isEmpty, routing.port > 0 else {
                return .fail(SQLClientError(.protocolError, "the server redirected the login to an empty server or port 0"))
            }
            target = Target(host: host, port: Int(routing.port), serverName: routing.server, routed: true)
            return .follow(target)
        case .failed(let error):
            guard error.code == .loginFailed, let number = error.serverMessage?.number,
                  policy.errorNumbers.contains(number), retriesUsed < retries else {
                return .fail(error)
            }
            // Inside the one connect budget: no retry that could not even start before it ends.
            guard remaining > policy.interval else { return .fail(error) }
            retriesUsed += 1
            return .retry(after: policy.interval)
        }
    }
}

import Foundation
import TDS

extension ReplayServer {
    /// How the server serves and matches.
    public struct Options: Sendable {
        /// Offer TLS inside PRELOGIN with this certificate (nil: answer ENCRYPT_NOT_SUP and stay
        /// plaintext). A client that sends ENCRYPT_OFF gets OFF and TLS for its login only; one
        /// that sends ENCRYPT_ON gets ON and TLS for the whole session; ENCRYPT_NOT_SUP stays
        /// plaintext.
        public var tls: TLSServerIdentity?
        /// Each connection must send its section's requests in the recorded order (LOGIN7 and
        /// ATTENTION aside). Any other request is answered with an ERROR (number 50000) whose
        /// text is a diff of what was expected and what came, and listed in ``mismatches``.
        public var strict: Bool
        /// Requests matched whatever their parameter values (see ``ParameterInsensitiveRequest``).
        public var parameterInsensitive: [ParameterInsensitiveRequest]
        /// Keep the bytes of every SQL batch, RPC and transaction manager request in each
        /// connection's ``ConnectionLog/requestMessages`` (for tests that check what a client sent).
        public var recordsRequestMessages: Bool

        /// Plaintext, lenient matching, no request bytes kept, unless told otherwise.
        public init(tls: TLSServerIdentity? = nil, strict: Bool = false,
                    parameterInsensitive: [ParameterInsensitiveRequest] = [], recordsRequestMessages: Bool = false) {
            self.tls = tls
            self.strict = strict
            self.parameterInsensitive = parameterInsensitive
            self.recordsRequestMessages = recordsRequestMessages
        }
    }

    /// A request whose parameter values do not matter for matching (a timestamp, a generated key).
    public struct ParameterInsensitiveRequest: Hashable, Sendable, CustomStringConvertible {
        enum Kind: Hashable, Sendable {
            case procedure(String)
            case statement(String)
        }
        let kind: Kind

        /// Every RPC to `name` (case-insensitive; well-known ProcIDs by name, e.g. `sp_executesql`)
        /// matches a recorded RPC to it whatever the parameters.
        public static func procedure(_ name: String) -> ParameterInsensitiveRequest { .init(kind: .procedure(name)) }

        /// An RPC one of whose parameters is the statement `sql` (the `@stmt` of sp_executesql,
        /// sp_prepexec, sp_prepare, …; compared with line ends normalised and outer whitespace
        /// trimmed) matches a recorded RPC to the same procedure with the same statement, whatever
        /// the other parameters' values.
        public static func statement(_ sql: String) -> ParameterInsensitiveRequest { .init(kind: .statement(sql)) }

        public var description: String {
            switch kind {
            case .procedure(let name): return "procedure \(name)"
            case .statement(let sql): return "statement \(sql)"
            }
        }
    }

    /// A request refused in strict mode: what the connection's section expected next and what came.
    public struct Mismatch: Sendable, Hashable, CustomStringConvertible {
        /// The connection (1-based, in the order clients connected).
        public var connection: Int
        /// The section's name.
        public var section: String
        /// The expected exchange's number in its section (1-based), or nil when every request was replayed.
        public var position: Int?
        /// The request the section expected next; nil when every request was replayed.
        public var expected: ReplaySession.Request?
        /// The request that came instead.
        public var received: ReplaySession.Request

        /// A line diff of the two requests as a session file writes them: `- ` expected,
        /// `+ ` received, `  ` both.
        public var diff: String { LineDiff.render(expected: expected?.text ?? "", received: received.text) }

        public var description: String {
            let place = position.map { "exchange \($0) of \"\(section)\"" } ?? "nothing more (every request of \"\(section)\" was replayed)"
            return "replay (strict): connection \(connection) expected \(place), got another request:\n" + diff
        }
    }

    /// A recorded exchange, by section and position.
    public struct ExchangeReference: Sendable, Hashable, CustomStringConvertible {
        /// The section (0-based) and its name.
        public var section: Int
        /// The section's name (its `@section` line).
        public var sectionName: String
        /// The exchange's index in its section (0-based).
        public var index: Int
        /// The exchange's recorded request.
        public var request: ReplaySession.Request
        public var description: String { "\(sectionName) exchange \(index + 1): \(request)" }
    }

    /// What ``verify(requireAllReplayed:)`` found.
    public struct VerificationFailure: Error, Sendable, CustomStringConvertible {
        /// Requests refused in strict mode, in arrival order.
        public var mismatches: [Mismatch]
        /// Requests that matched no recorded exchange (lenient mode).
        public var unmatched: [ReplaySession.Request]
        /// Recorded exchanges no client asked for (with `requireAllReplayed`).
        public var unreplayed: [ExchangeReference]
        public var description: String {
            var lines: [String] = []
            for m in mismatches { lines.append(m.description) }
            for r in unmatched { lines.append("no recording for: \(r)") }
            if !unreplayed.isEmpty {
                lines.append("recorded but never replayed (\(unreplayed.count)):")
                lines += unreplayed.map { "  \($0)" }
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Requests strict mode refused, in arrival order.
    public var mismatches: [Mismatch] { lock.withLock { _mismatches } }

    /// Recorded exchanges (login responses and ATTENTION acknowledgements included) that no
    /// connection has been served so far, in file order.
    public var unreplayedExchanges: [ExchangeReference] {
        let counts = lock.withLock { replayCounts }
        var out: [ExchangeReference] = []
        for (s, section) in recording.sections.enumerated() {
            for (i, e) in section.exchanges.enumerated() where counts[s][i] == 0 {
                out.append(ExchangeReference(section: s, sectionName: section.name, index: i, request: e.request))
            }
        }
        return out
    }

    /// Throws when a request was refused (strict mode) or had no recording, and, with
    /// `requireAllReplayed`, when a recorded exchange was never replayed. Call it after the
    /// code under test has finished (for example in `tearDown`, or at the end of a test).
    /// - Throws: ``VerificationFailure`` listing all of it.
    public func verify(requireAllReplayed: Bool = false) throws(VerificationFailure) {
        let failure = VerificationFailure(mismatches: mismatches, unmatched: unmatchedRequests,
                                          unreplayed: requireAllReplayed ? unreplayedExchanges : [])
        if !failure.mismatches.isEmpty || !failure.unmatched.isEmpty || !failure.unreplayed.isEmpty { throw failure }
    }

    func noteReplayed(section: Int, index: Int) {
        lock.withLock { replayCounts[section][index] += 1 }
    }

    func recordMismatch(_ m: Mismatch) {
        lock.withLock { _mismatches.append(m) }
    }

    /// True when a received request is answered by a recorded one: SQL text equal (or equal
    /// after trimming whitespace and normalising line ends); procedure names (or transaction
    /// manager request types) equal ignoring case and, when the recording lists parameters, the
    /// same values in the same order (`*` matches any value; names are compared only when both
    /// sides have one), or, for a ``ParameterInsensitiveRequest``, only the statement.
    public static func matches(recorded: ReplaySession.Request, received: ReplaySession.Request,
                        ignoringParameters rules: [ParameterInsensitiveRequest] = []) -> Bool {
        switch (recorded, received) {
        case (.sqlBatch(let a), .sqlBatch(let b)):
            return a == b || normalize(a) == normalize(b)
        case (.rpc(let a, let pa), .rpc(let b, let pb)):
            guard a.caseInsensitiveCompare(b) == .orderedSame else { return false }
            for rule in rules {
                switch rule.kind {
                case .procedure(let name) where name.caseInsensitiveCompare(b) == .orderedSame:
                    return true
                case .statement(let sql):
                    let wanted = normalize(sql)
                    if pb.contains(where: { $0.value.map(normalize) == wanted }) {
                        return pa.isEmpty || pa.contains { $0.matchesAnyValue || $0.value.map(normalize) == wanted }
                    }
                default: continue
                }
            }
            return parametersMatch(recorded: pa, received: pb)
        case (.transactionManager(let a, let pa), .transactionManager(let b, let pb)):
            return a.caseInsensitiveCompare(b) == .orderedSame && parametersMatch(recorded: pa, received: pb)
        case (.login7, .login7), (.attention, .attention): return true
        default: return false
        }
    }

    static func parametersMatch(recorded pa: [ReplaySession.Parameter], received pb: [ReplaySession.Parameter]) -> Bool {
        if pa.isEmpty { return true }
        guard pa.count == pb.count else { return false }
        for (x, y) in zip(pa, pb) {
            if !x.matchesAnyValue, x.value != y.value { return false }
            if !x.name.isEmpty, !y.name.isEmpty, x.name.caseInsensitiveCompare(y.name) != .orderedSame { return false }
        }
        return true
    }

    static func normalize(_ s: String) -> String {
        s.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// One connection's view of the recording: which exchange answers a request.
struct ReplayMatcher {
    enum Outcome {
        case exchange(section: Int, index: Int)
        case unmatched
        case unexpected(ReplayServer.Mismatch)
    }

    struct Key: Hashable { var section: Int; var first: Int }

    let section: Int
    /// The connection's number (1-based, in accept order).
    let connection: Int
    /// Uses so far of each group of equal recorded requests (a request recorded n times is
    /// answered by its recordings in order, the last one repeating).
    var cursors: [Key: Int] = [:]
    /// Strict mode: the index of the next exchange the connection must ask for.
    var strictNext = 0
    /// The next ATTENTION acknowledgement to use.
    var attentionNext = 0

    init(section: Int, connection: Int) {
        self.section = section
        self.connection = connection
    }

    mutating func match(_ request: ReplaySession.Request, server: ReplayServer) -> Outcome {
        let rules = server.options.parameterInsensitive
        if server.options.strict {
            let exchanges = server.sections[section].session.exchanges
            var next = strictNext
            while next < exchanges.count, exchanges[next].request == .login7 || exchanges[next].request == .attention { next += 1 }
            if next < exchanges.count, ReplayServer.matches(recorded: exchanges[next].request, received: request, ignoringParameters: rules) {
                strictNext = next + 1
                return .exchange(section: section, index: next)
            }
            return .unexpected(.init(connection: connection, section: server.sections[section].session.name,
                                     position: next < exchanges.count ? next + 1 : nil,
                                     expected: next < exchanges.count ? exchanges[next].request : nil, received: request))
        }
        func candidates(_ s: Int) -> [Int] {
            let prepared = server.sections[s]
            if case .sqlBatch(let sql) = request, let exact = prepared.batchIndex[sql] { return exact }
            return prepared.session.exchanges.indices.filter {
                ReplayServer.matches(recorded: prepared.session.exchanges[$0].request, received: request, ignoringParameters: rules)
            }
        }
        var chosen = section
        var found = candidates(section)
        if found.isEmpty {
            for other in server.sections.indices where other != section {
                found = candidates(other)
                if !found.isEmpty { chosen = other; break }
            }
        }
        guard let first = found.first else { return .unmatched }
        let key = Key(section: chosen, first: first)
        let used = cursors[key, default: 0]
        cursors[key] = used + 1
        return .exchange(section: chosen, index: found[min(used, found.count - 1)])
    }

    /// The next recorded ATTENTION exchange of this connection's section, if any.
    mutating func nextAttention(in session: ReplaySession) -> Int? {
        let exchanges = session.exchanges
        var i = attentionNext
        while i < exchanges.count, exchanges[i].request != .attention { i += 1 }
        guard i < exchanges.count else { return nil }
        attentionNext = i + 1
        return i
    }
}

extension ReplayConnection {
    /// The acknowledgement of an ATTENTION: the section's next recorded one, or DONE(DONE_ATTN).
    func attentionAcknowledgement() -> [UInt8] {
        if let i = matcher.nextAttention(in: session), !server.sections[section].prepared[i].bytes.isEmpty {
            server.noteReplayed(section: section, index: i)
            return server.sections[section].prepared[i].bytes
        }
        return ServerTokens.done(status: .attention, version: version)
    }
}

/// A line diff (longest common subsequence) for strict-mode reports.
enum LineDiff {
    static func render(expected: String, received: String) -> String {
        let a = expected.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty }
        let b = received.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty }
        // Long requests: diff only the first 200 lines of each (the report stays readable).
        let x = Array(a.prefix(200)), y = Array(b.prefix(200))
        var lcs = Array(repeating: Array(repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in stride(from: x.count - 1, through: 0, by: -1) {
            for j in stride(from: y.count - 1, through: 0, by: -1) {
                lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
            }
        }
        var out: [String] = []
        var i = 0, j = 0
        while i < x.count || j < y.count {
            if i < x.count, j < y.count, x[i] == y[j] { out.append("  " + x[i]); i += 1; j += 1 }
            else if i < x.count, j == y.count || lcs[i + 1][j] >= lcs[i][j + 1] { out.append("- " + x[i]); i += 1 }
            else { out.append("+ " + y[j]); j += 1 }
        }
        if a.count > x.count || b.count > y.count { out.append("  …") }
        return out.joined(separator: "\n")
    }
}

import Foundation
import TDS

/// A recorded (or generated) TDS session that ``ReplayServer`` plays back.
///
/// A session is a list of exchanges: a client request (a SQL batch by its text, an RPC by its
/// procedure name and parameter values, or LOGIN7) and the server's response as the bytes of one
/// TABULAR_RESULT message (a token stream without packet headers; the server splits it into
/// packets of the negotiated size). Session-wide settings say which TDS version the server
/// acknowledges, whether it acknowledges ATTENTION, and whether it acknowledges UTF8_SUPPORT.
///
/// The text form (`.tdssession`) is meant to be read and diffed:
///
/// ```
/// # any comment
/// @name int-7.4
/// @version 7.4              (optional: without it the server acknowledges the client's version)
/// @packet-size 4096         (optional: without it the server accepts the client's size)
/// @attention ignore         (optional: default acknowledge)
/// @utf8 on                  (optional: acknowledge the UTF8_SUPPORT feature when requested)
/// @json 1                   (optional: acknowledge JSONSUPPORT with this version when requested)
/// @vector 1                 (optional: acknowledge VECTORSUPPORT with this version when requested)
///
/// >>> SQL_BATCH
/// | SELECT CAST(1 AS int) AS [c]
/// <<<
/// # COLMETADATA: 1 column
/// 81 01 00 00 00 00 00 08 00 38 01 63 00
/// # ROW
/// D1 01 00 00 00
/// # DONE
/// FD 10 00 C1 00 01 00 00 00 00 00 00 00
///
/// >>> RPC sp_executesql
/// | @stmt = "SELECT @P1"
/// | @P1 = 42
/// | @P2 = null
/// <<< stall-after=20
/// ...
/// ```
///
/// Requests are `>>> SQL_BATCH`, `>>> RPC name`, `>>> TRANSACTION_MANAGER TM_…` (see
/// ``Request``), `>>> LOGIN7` (the recorded login response) and `>>> ATTENTION` (the recorded
/// acknowledgement). Request text lines start with `| `. RPC parameter lines are `@name = `
/// followed by the parameter's canonical text as a JSON string, or `null` (a number-like value
/// may be written bare), or `*` for a parameter that matches any value. Response lines are `#` comments, which the writer keeps next to the bytes they
/// describe, and hexadecimal bytes separated by spaces. Options after `<<<` are fault hooks:
/// `stall-after=N` (send N bytes of the response, then nothing more) and `close-after=N` (send N
/// bytes, then close the connection); N counts response bytes, not packet headers.
public struct ReplaySession: Hashable, Sendable {
    /// What the client sends.
    public enum Request: Hashable, Sendable, CustomStringConvertible {
        /// A SQL_BATCH, matched by its SQL text.
        case sqlBatch(String)
        /// An RPC, matched by procedure name (case-insensitive; well-known ProcIDs by their
        /// names, e.g. `sp_executesql`) and the canonical text of each parameter value
        /// (nil = NULL), in order.
        case rpc(procedure: String, parameters: [Parameter])
        /// LOGIN7: the response is the login response (LOGINACK, ENVCHANGEs, DONE).
        case login7
        /// A TRANSACTION_MANAGER request ([MS-TDS] 2.2.6.9), by its request type name
        /// (`TM_BEGIN_XACT`, `TM_COMMIT_XACT`, …) and its fields as parameters (`isolation`,
        /// `name`, `begin`, `new-isolation`, `new-name`, `cookie`), matched like an RPC's.
        case transactionManager(type: String, parameters: [Parameter])
        /// ATTENTION: the response is the server's acknowledgement (DONE with DONE_ATTN).
        case attention

        public var description: String {
            switch self {
            case .sqlBatch(let sql): return "SQL_BATCH \(sql)"
            case .rpc(let name, let params):
                return "RPC \(name)(" + params.map(\.description).joined(separator: ", ") + ")"
            case .login7: return "LOGIN7"
            case .transactionManager(let type, let params):
                return "TRANSACTION_MANAGER \(type)(" + params.map(\.description).joined(separator: ", ") + ")"
            case .attention: return "ATTENTION"
            }
        }

        /// The request as the session file writes it (`>>> ` line and `| ` lines), for diffs.
        public var text: String {
            var out = ""
            ReplaySession.writeRequest(self, into: &out)
            return out
        }
    }

    /// An RPC parameter as matched by the replay server: its name (may be empty) and the
    /// canonical text of its value (nil = NULL).
    public struct Parameter: Hashable, Sendable, CustomStringConvertible {
        /// The parameter's name with its `@` (empty for a positional parameter).
        public var name: String
        /// The canonical text of its value (see `SQLValue.canonicalText`); nil for NULL.
        public var value: String?
        /// A recorded parameter that matches any value (written `@name = *`).
        public var matchesAnyValue: Bool
        /// A parameter that matches exactly `value` (nil: NULL).
        public init(name: String, value: String?) { self.name = name; self.value = value; self.matchesAnyValue = false }
        /// A parameter that matches whatever value the client sends.
        public static func any(name: String) -> Parameter {
            var p = Parameter(name: name, value: nil)
            p.matchesAnyValue = true
            return p
        }
        public var description: String { "\(name)=" + (matchesAnyValue ? "*" : value ?? "NULL") }
    }

    /// A run of response bytes with the comment that describes them (usually one token).
    public struct Segment: Hashable, Sendable {
        /// The comment written above the bytes in a session file (usually the token's name).
        public var comment: String?
        /// The response bytes (whole tokens).
        public var bytes: [UInt8]
        /// A segment from its bytes and comment.
        public init(comment: String? = nil, bytes: [UInt8]) { self.comment = comment; self.bytes = bytes }
    }

    /// Fault hooks for one response.
    public struct Faults: Hashable, Sendable {
        /// Send this many response bytes, then stall (send nothing more, keep the socket open).
        public var stallAfter: Int?
        /// Send this many response bytes, then close the connection.
        public var closeAfter: Int?
        /// Faults from their byte counts; nil: none of that kind.
        public init(stallAfter: Int? = nil, closeAfter: Int? = nil) {
            self.stallAfter = stallAfter; self.closeAfter = closeAfter
        }
        /// True when neither fault is set. A fault count at or past the end of a non-empty response
        /// does nothing; an empty response with a fault sends nothing and then stalls or closes.
        public var isEmpty: Bool { stallAfter == nil && closeAfter == nil }
    }

    /// One request and the server's recorded response (one TABULAR_RESULT message).
    public struct Exchange: Hashable, Sendable {
        /// The request the client must send (matched as ``ReplayServer/Options`` says).
        public var request: Request
        /// The recorded response, in segments (sent in packets of the session's packet size).
        public var response: [Segment]
        /// What goes wrong while the response is sent (none by default).
        public var faults: Faults
        /// Comment lines written before the request.
        public var comment: String?
        /// An exchange from its request, response segments, faults and comment.
        public init(request: Request, response: [Segment], faults: Faults = Faults(), comment: String? = nil) {
            self.request = request; self.response = response; self.faults = faults; self.comment = comment
        }
        /// The response bytes, all segments concatenated.
        public var responseBytes: [UInt8] { response.flatMap(\.bytes) }
    }

    /// What the server does with an ATTENTION.
    public enum AttentionPolicy: String, Hashable, Sendable {
        /// Stop the current response at a segment boundary and send DONE with DONE_ATTN.
        case acknowledge
        /// Never answer (for testing client timeouts).
        case ignore
    }

    /// The session's name (the `@session` line; also its file name in Fixtures/sessions).
    public var name: String
    /// Comment lines at the top of the file.
    public var comment: String?
    /// The TDS version the server acknowledges in LOGINACK; nil = the version the client asks.
    public var version: TDSVersion?
    /// The packet size the server sets by ENVCHANGE; nil = the size the client asks.
    public var packetSize: Int?
    /// What the server does with an ATTENTION (`@attention acknowledge|ignore`).
    public var attention: AttentionPolicy
    /// Acknowledge the UTF8_SUPPORT feature (FEATUREEXTACK) when the client requests it.
    public var utf8Support: Bool
    /// The JSONSUPPORT version to acknowledge when the client requests it (`@json 1`); nil: not
    /// acknowledged (a generated login response only).
    public var jsonSupport: UInt8? = nil
    /// The VECTORSUPPORT version to acknowledge when the client requests it (`@vector 1`); nil:
    /// not acknowledged (a generated login response only).
    public var vectorSupport: UInt8? = nil
    /// The recorded exchanges (the login's first, when recorded), matched in order or not as
    /// ``ReplayServer/Options/strict`` says.
    public var exchanges: [Exchange]

    /// A session from its parts; the defaults acknowledge what the client asks and answer ATTENTION.
    public init(name: String, comment: String? = nil, version: TDSVersion? = nil, packetSize: Int? = nil,
                attention: AttentionPolicy = .acknowledge, utf8Support: Bool = false, exchanges: [Exchange] = []) {
        self.name = name; self.comment = comment; self.version = version; self.packetSize = packetSize
        self.attention = attention; self.utf8Support = utf8Support; self.exchanges = exchanges
    }

    /// The recorded login response, if the session has one.
    public var loginResponse: Exchange? { exchanges.first { $0.request == .login7 } }

    // MARK: - Parsing

    /// An error in a session file: the line number (1-based) and what is wrong.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The line of the session file (1-based).
        public var line: Int
        /// What is wrong with it.
        public var message: String
        public var description: String { "session line \(line): \(message)" }
    }

    /// Reads a session file.
    public init(contentsOf url: URL) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        try self.init(text: text, defaultName: url.deletingPathExtension().lastPathComponent)
    }

    /// Parses the text form described on ``ReplaySession``.
    public init(text: String, defaultName: String = "session") throws(ParseError) {
        self.init(name: defaultName)
        // A file whose first line ends in CR was converted to CRLF line ends (a Windows
        // checkout): read it as LF. (SQL text with CRLF inside a LF file is kept as it is.)
        let text = text.unicodeScalars.prefix(while: { $0 != "\n" }).last == "\r"
            ? text.replacingOccurrences(of: "\r\n", with: "\n") : text
        var lines = text.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        var headerComments: [String] = []
        var pendingComments: [String] = []
        var index = 0
        var sawExchange = false

        func fail(_ message: String) -> ParseError { ParseError(line: index + 1, message: message) }

        while index < lines.count {
            let line = lines[index]
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty {
                if !sawExchange, !pendingComments.isEmpty { headerComments += pendingComments; pendingComments = [] }
                index += 1; continue
            }
            if trimmed.hasPrefix("#") {
                pendingComments.append(Self.commentText(trimmed)); index += 1; continue
            }
            if trimmed.hasPrefix("@") {
                let parts = trimmed.dropFirst().split(separator: " ", maxSplits: 1).map(String.init)
                let key = parts.first ?? ""
                let value = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
                switch key {
                case "name": name = value
                case "version":
                    guard let v = TDSVersion(string: value) ?? Self.hexVersion(value) else { throw fail("unknown TDS version \(value)") }
                    version = v
                case "packet-size":
                    guard let n = Int(value), (512...32767).contains(n) else { throw fail("bad packet size \(value)") }
                    packetSize = n
                case "attention":
                    guard let p = AttentionPolicy(rawValue: value) else { throw fail("attention must be acknowledge or ignore") }
                    attention = p
                case "utf8":
                    utf8Support = (value == "on" || value == "yes" || value == "true")
                case "json", "vector":
                    guard let n = UInt8(value) else { throw fail("@\(key) takes a version number (0-255)") }
                    if key == "json" { jsonSupport = n } else { vectorSupport = n }
                default: throw fail("unknown setting @\(key)")
                }
                if !sawExchange { headerComments += pendingComments; pendingComments = [] }
                index += 1; continue
            }
            if trimmed.hasPrefix("===") {
                throw fail("a '=== connection' line starts a section of a recording of several connections: read the file with ReplayRecording")
            }
            guard trimmed.hasPrefix(">>>") else { throw fail("expected '>>> REQUEST', '@setting' or '#'") }
            sawExchange = true
            if !headerComments.isEmpty, comment == nil { comment = headerComments.joined(separator: "\n") }
            let exchangeComment = pendingComments.isEmpty ? nil : pendingComments.joined(separator: "\n")
            pendingComments = []
            let head = trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces)
            index += 1
            var body: [String] = []
            while index < lines.count, lines[index].hasPrefix("|") {
                var l = String(lines[index].dropFirst())
                if l.hasPrefix(" ") { l.removeFirst() }
                body.append(l); index += 1
            }
            let request: Request
            if head == "SQL_BATCH" {
                request = .sqlBatch(body.joined(separator: "\n"))
            } else if head == "LOGIN7" {
                request = .login7
            } else if head == "ATTENTION" {
                request = .attention
            } else if head.hasPrefix("RPC") || head.hasPrefix("TRANSACTION_MANAGER") {
                let isRPC = head.hasPrefix("RPC")
                let name = head.dropFirst(isRPC ? 3 : 19).trimmingCharacters(in: .whitespaces)
                guard !name.isEmpty else { throw fail(isRPC ? "RPC needs a procedure name" : "TRANSACTION_MANAGER needs a request type") }
                var params: [Parameter] = []
                for line in body {
                    let p = line.hasPrefix("= ") ? " " + line : line   // an unnamed parameter written with one space
                    guard let eq = p.range(of: " = ") else { throw ParseError(line: index, message: "parameter line needs ' = '") }
                    let pname = String(p[..<eq.lowerBound])
                    let raw = String(p[eq.upperBound...])
                    if raw.trimmingCharacters(in: .whitespaces) == "*" { params.append(.any(name: pname)); continue }
                    guard let value = Self.parseValue(raw) else { throw ParseError(line: index, message: "bad parameter value \(raw)") }
                    params.append(Parameter(name: pname, value: value))
                }
                request = isRPC ? .rpc(procedure: name, parameters: params) : .transactionManager(type: name, parameters: params)
            } else {
                throw ParseError(line: index, message: "unknown request \(head)")
            }
            // Response
            while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces).isEmpty { index += 1 }
            guard index < lines.count, lines[index].hasPrefix("<<<") else { throw fail("expected '<<<' after the request") }
            var faults = Faults()
            for option in lines[index].dropFirst(3).split(separator: " ") {
                let kv = option.split(separator: "=", maxSplits: 1).map(String.init)
                guard kv.count == 2, let n = Int(kv[1]), n >= 0 else { throw fail("bad response option \(option)") }
                switch kv[0] {
                case "stall-after": faults.stallAfter = n
                case "close-after": faults.closeAfter = n
                default: throw fail("unknown response option \(kv[0])")
                }
            }
            index += 1
            var segments: [Segment] = []
            var comments: [String] = []
            var bytes: [UInt8] = []
            func flush() {
                if !bytes.isEmpty || !comments.isEmpty {
                    segments.append(Segment(comment: comments.isEmpty ? nil : comments.joined(separator: "\n"), bytes: bytes))
                }
                comments = []; bytes = []
            }
            while index < lines.count {
                let t = lines[index].trimmingCharacters(in: .whitespaces)
                if t.isEmpty || t.hasPrefix(">>>") || t.hasPrefix("@") { break }
                if t.hasPrefix("#") {
                    if !bytes.isEmpty { flush() }
                    comments.append(Self.commentText(t))
                } else {
                    for word in t.split(separator: " ") {
                        guard word.count == 2, let b = UInt8(word, radix: 16) else { throw fail("bad hex byte '\(word)'") }
                        bytes.append(b)
                    }
                }
                index += 1
            }
            flush()
            // A trailing comment with no bytes after it, followed by a blank line, belongs to the
            // next exchange only if written so; keep it in this response (harmless, 0 bytes).
            exchanges.append(Exchange(request: request, response: segments, faults: faults, comment: exchangeComment))
        }
        if comment == nil, !headerComments.isEmpty { comment = headerComments.joined(separator: "\n") }
    }

    private static func commentText(_ line: String) -> String {
        var s = line.dropFirst()
        if s.hasPrefix(" ") { s = s.dropFirst() }
        return String(s)
    }

    private static func hexVersion(_ s: String) -> TDSVersion? {
        guard s.hasPrefix("0x"), let v = UInt32(s.dropFirst(2), radix: 16) else { return nil }
        return TDSVersion(rawValue: v)
    }

    /// Parses `null`, a JSON string, or a bare token (numbers) into a value (`.some(nil)` = NULL).
    static func parseValue(_ raw: String) -> String?? {
        let t = raw.trimmingCharacters(in: .whitespaces)
        if t == "null" { return .some(nil) }
        if t.hasPrefix("\"") { return JSONText.unquote(t).map { .some($0) } }
        guard !t.isEmpty else { return nil }
        return .some(t)
    }

    // MARK: - Writing

    /// The text form of the session (parses back to an equal session).
    public var text: String { text(includingName: true) }

    /// The text form; without the `@name` line inside a recording's `=== name` section.
    /// `exchangeTexts`: each exchange's ``exchangeText(_:)`` made earlier (a recorder keeps them
    /// rather than formatting every exchange again each time it rewrites its file).
    func text(includingName: Bool, exchangeTexts: [String]? = nil) -> String {
        var out = ""
        if let comment { for l in comment.components(separatedBy: "\n") { out += "# \(l)".trimmingTrailingSpace + "\n" } }
        if includingName { out += "@name \(name)\n" }
        if let version { out += "@version \(Self.versionText(version))\n" }
        if let packetSize { out += "@packet-size \(packetSize)\n" }
        if attention != .acknowledge { out += "@attention \(attention.rawValue)\n" }
        if utf8Support { out += "@utf8 on\n" }
        if let jsonSupport { out += "@json \(jsonSupport)\n" }
        if let vectorSupport { out += "@vector \(vectorSupport)\n" }
        if let exchangeTexts, exchangeTexts.count == exchanges.count {
            for t in exchangeTexts { out += t }
        } else {
            for exchange in exchanges { out += Self.exchangeText(exchange) }
        }
        return out
    }

    /// One exchange in the text form (with the blank line before it).
    static func exchangeText(_ exchange: Exchange) -> String {
        var out = "\n"
        if let c = exchange.comment { for l in c.components(separatedBy: "\n") { out += "# \(l)".trimmingTrailingSpace + "\n" } }
        writeRequest(exchange.request, into: &out)
        out += "<<<"
        if let n = exchange.faults.stallAfter { out += " stall-after=\(n)" }
        if let n = exchange.faults.closeAfter { out += " close-after=\(n)" }
        out += "\n"
        for segment in exchange.response {
            if let c = segment.comment { for l in c.components(separatedBy: "\n") { out += "# \(l)".trimmingTrailingSpace + "\n" } }
            var i = 0
            while i < segment.bytes.count {
                let end = min(i + 32, segment.bytes.count)
                out += segment.bytes[i..<end].map { Self.hexByte($0) }.joined(separator: " ") + "\n"
                i = end
            }
        }
        return out
    }

    static func writeRequest(_ request: Request, into out: inout String) {
        func parameters(_ params: [Parameter]) {
            for p in params { out += "| \(p.name) = " + (p.matchesAnyValue ? "*" : p.value.map(JSONText.quote) ?? "null") + "\n" }
        }
        switch request {
        case .sqlBatch(let sql):
            out += ">>> SQL_BATCH\n"
            for l in sql.components(separatedBy: "\n") { out += "| \(l)\n" }
        case .login7:
            out += ">>> LOGIN7\n"
        case .rpc(let proc, let params):
            out += ">>> RPC \(proc)\n"
            parameters(params)
        case .transactionManager(let type, let params):
            out += ">>> TRANSACTION_MANAGER \(type)\n"
            parameters(params)
        case .attention:
            out += ">>> ATTENTION\n"
        }
    }

    /// Writes the text form to `url` (UTF-8).
    public func write(to url: URL) throws {
        try Data(text.utf8).write(to: url, options: .atomic)
    }

    static func versionText(_ v: TDSVersion) -> String {
        switch v {
        case .v7_0: return "7.0"
        case .v7_1, .v7_1_1: return v == .v7_1_1 ? "7.1" : "0x71000000"
        case .v7_2: return "7.2"
        case .v7_3B: return "7.3"
        case .v7_3A: return "7.3A"
        case .v7_4: return "7.4"
        default: return "0x" + String(v.rawValue, radix: 16, uppercase: true)
        }
    }

    static let hexDigits = Array("0123456789ABCDEF")
    static func hexByte(_ b: UInt8) -> String {
        String([hexDigits[Int(b >> 4)], hexDigits[Int(b & 0x0F)]])
    }
}

extension String {
    var trimmingTrailingSpace: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}

/// Minimal JSON string quoting for session files and oracle output.
enum JSONText {
    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0xFEFF || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    out += String(format: "\\u%04X", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Reverses ``quote(_:)`` (also accepts `\uXXXX` surrogate pairs); nil if malformed.
    static func unquote(_ s: String) -> String? {
        let scalars = Array(s.unicodeScalars)
        guard scalars.count >= 2, scalars.first == "\"", scalars.last == "\"" else { return nil }
        var out = String.UnicodeScalarView()
        var i = 1
        let end = scalars.count - 1
        var pendingHigh: UInt32?
        while i < end {
            let c = scalars[i]
            if c != "\\" { out.append(c); i += 1; continue }
            guard i + 1 < end else { return nil }
            let e = scalars[i + 1]
            i += 2
            switch e {
            case "\"": out.append("\"")
            case "\\": out.append("\\")
            case "/": out.append("/")
            case "n": out.append("\n")
            case "r": out.append("\r")
            case "t": out.append("\t")
            case "b": out.append("\u{08}")
            case "f": out.append("\u{0C}")
            case "u":
                guard i + 4 <= end else { return nil }
                let hex = String(String.UnicodeScalarView(scalars[i..<i + 4]))
                guard let v = UInt32(hex, radix: 16) else { return nil }
                i += 4
                if (0xD800...0xDBFF).contains(v) { pendingHigh = v; continue }
                if (0xDC00...0xDFFF).contains(v) {
                    guard let h = pendingHigh, let sc = Unicode.Scalar(0x10000 + ((h - 0xD800) << 10) + (v - 0xDC00)) else { return nil }
                    pendingHigh = nil
                    out.append(sc)
                    continue
                }
                guard let sc = Unicode.Scalar(v) else { return nil }
                out.append(sc)
            default: return nil
            }
        }
        return String(out)
    }
}

import TDS

/// A decoding failure, naming the message, the token (or structure) and the byte offset.
///
/// `offset` counts from the start of the message body (the bytes after the packet headers,
/// which is also the start of the token stream), or from the start of the file for a
/// malformed capture container. Never contains a password.
public struct DecodeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The message: a packet type name (`TABULAR_RESULT`, `RPC`, …) or `capture`.
    public var message: String
    /// The [MS-TDS] name of the token or structure being decoded, when known.
    public var token: String
    /// Byte offset in the message body (or in the file for `capture`).
    public var offset: Int
    /// The ``TDSDecodingError`` code name, or `capture`, `unsupportedProtocol`, `incomplete`.
    public var code: String
    public var detail: String
    /// `client -> server` for pcap input.
    public var conversation: String?
    /// Where the message starts in its direction's reassembled stream (or in the file).
    public var streamOffset: Int?
    /// 1-based frame number of the message's first byte, for pcap input.
    public var frame: Int?
    /// The last token decoded whole before the failure, when decoding a token stream.
    public var previousToken: String?

    public init(message: String, token: String = "", offset: Int, code: String, detail: String,
                conversation: String? = nil, streamOffset: Int? = nil, frame: Int? = nil) {
        self.message = message
        self.token = token
        self.offset = offset
        self.code = code
        self.detail = detail
        self.conversation = conversation
        self.streamOffset = streamOffset
        self.frame = frame
    }

    init(_ error: TDSDecodingError, message: String) {
        self.init(message: message, token: error.context, offset: error.offset, code: error.code.name, detail: error.detail)
    }

    public var description: String {
        var s = ""
        if let conversation { s += "\(conversation): " }
        s += "\(message) message"
        if let streamOffset { s += " (stream offset \(streamOffset)" + (frame.map { ", frame \($0)" } ?? "") + ")" }
        if !token.isEmpty { s += ", \(token)" }
        if let previousToken { s += " (after \(previousToken))" }
        s += ", at byte offset \(offset): \(code)"
        if !detail.isEmpty { s += ": \(detail)" }
        return s
    }

    var json: JSONValue {
        var o: [(String, JSONValue)] = [("message", .string(message)), ("token", .string(token)), ("offset", .int(Int64(offset))),
                                         ("code", .string(code)), ("detail", .string(detail))]
        if let previousToken { o.append(("after", .string(previousToken))) }
        return .object(o)
    }
}

/// One decoded message (or TLS run, or undecodable stretch) as `sqlclient decode` prints it.
public struct DecodedRecord: Sendable {
    public var conversation: String?
    public var direction: TDSDirection
    /// The packet type name (PRELOGIN, LOGIN7, SQL_BATCH, RPC, TABULAR_RESULT, …), `TLS` for
    /// TLS records sent directly on TCP, `UNDECODED` for skipped bytes.
    public var type: String
    public var streamOffset: Int
    /// 1-based frame number, for pcap input.
    public var frame: Int?
    /// The message's content, in output order (`sql`, `procedure`, `parameters`, `tokens`, …).
    public var fields: [(String, JSONValue)]
    public var failure: DecodeFailure?

    public init(conversation: String?, direction: TDSDirection, type: String, streamOffset: Int, frame: Int?,
                fields: [(String, JSONValue)], failure: DecodeFailure? = nil) {
        self.conversation = conversation
        self.direction = direction
        self.type = type
        self.streamOffset = streamOffset
        self.frame = frame
        self.fields = fields
        self.failure = failure
    }

    /// The JSON Lines object: `direction`, `type`, the fields, then `conversation`/`frame`
    /// (pcap input) and `error` (when decoding failed).
    public var json: JSONValue {
        var o: [(String, JSONValue)] = [("direction", .string(direction.rawValue)), ("type", .string(type))]
        o += fields
        if let conversation { o.append(("conversation", .string(conversation))) }
        if let frame { o.append(("frame", .int(Int64(frame)))) }
        if let failure { o.append(("error", failure.json)) }
        return .object(o)
    }

    /// The member `key` of `fields`.
    public subscript(key: String) -> JSONValue? { fields.first { $0.0 == key }?.1 }
}

/// What a `.hex` or raw input holds, when detection should not guess (a fragment's context).
public struct DecodeHint: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        /// Whole TDS packets with their 8-byte headers.
        case packets
        /// A bare token stream, as in a TABULAR_RESULT body.
        case tokens
        /// A message body without packet header; `messageType` says which.
        case body
    }

    public var kind: Kind
    /// For `.body`: the message type (RPC, LOGIN7, SQL_BATCH, PRELOGIN, BULK_LOAD, TABULAR_RESULT…).
    public var messageType: PacketType?
    /// Bytes to put before the input (e.g. a token byte the fragment lacks).
    public var prefix: [UInt8]
    /// A token stream decoded first, not reported (e.g. the COLMETADATA a ROW needs).
    public var context: [UInt8]?
    public var version: TDSVersion?
    /// COLMETADATA carries the CEK table (column encryption negotiated).
    public var columnEncryption: Bool
    /// For RPC/SQL_BATCH bodies: ALL_HEADERS present (nil: by version).
    public var allHeaders: Bool?

    public init(kind: Kind, messageType: PacketType? = nil, prefix: [UInt8] = [], context: [UInt8]? = nil,
                version: TDSVersion? = nil, columnEncryption: Bool = false, allHeaders: Bool? = nil) {
        self.kind = kind
        self.messageType = messageType
        self.prefix = prefix
        self.context = context
        self.version = version
        self.columnEncryption = columnEncryption
        self.allHeaders = allHeaders
    }
}

/// Options of `sqlclient decode`.
public struct DecodeOptions: Sendable {
    /// A server port besides 1433 (`--port`).
    public var port: UInt16?
    /// `--tokens`: the input is a bare token stream.
    public var tokensOnly: Bool
    /// `--tds-version`.
    public var forcedVersion: TDSVersion?
    /// What a `.hex`/raw input holds (from a manifest); nil: detect.
    public var hint: DecodeHint?

    public init(port: UInt16? = nil, tokensOnly: Bool = false, forcedVersion: TDSVersion? = nil, hint: DecodeHint? = nil) {
        self.port = port
        self.tokensOnly = tokensOnly
        self.forcedVersion = forcedVersion
        self.hint = hint
    }
}

/// The result of decoding one input.
public struct DecodeReport: Sendable {
    public struct SessionSummary: Sendable, Hashable {
        public var name: String
        public var version: InferredTDSVersion
    }

    public var format: CaptureFormat
    public var records: [DecodedRecord]
    /// Every failure (message failures and fatal ones such as a refused Sybase capture).
    public var failures: [DecodeFailure]
    /// pcap input: each TDS conversation and the version used.
    public var sessions: [SessionSummary]
    /// Remarks that are not errors (stream starts mid-connection, capture ends mid-message…).
    public var notes: [String]

    public var isSuccess: Bool { failures.isEmpty }
}

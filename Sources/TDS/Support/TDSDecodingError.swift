/// A typed error for bytes that cannot be decoded.
///
/// Every decoder in this module throws only this type. `offset` is the absolute byte offset,
/// counted from the start of the message (or token stream) being decoded, at which decoding
/// failed; `context` names the message, token or type being decoded (an [MS-TDS] name such as
/// `COLMETADATA`, `LOGIN7` or `DATETIME2N`).
///
/// `code == .truncated` means the input ended before the structure did. Incremental decoders
/// treat it as "need more data" while more bytes may still arrive, and as an error at the end
/// of a message.
public struct TDSDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An extensible error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, for example `truncated`.
        public let name: String
        /// A code named `name`.
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The input ended before the structure did.
        public static let truncated = Code("truncated")
        /// A length field is negative, too large, or disagrees with its structure.
        public static let invalidLength = Code("invalidLength")
        /// A token byte that [MS-TDS] does not define (or not for this TDS version).
        public static let unknownToken = Code("unknownToken")
        /// A data type byte that [MS-TDS] 2.2.5.4 does not define.
        public static let unknownType = Code("unknownType")
        /// A value that is out of range for its type (a date, an offset, a decimal length…).
        public static let invalidValue = Code("invalidValue")
        /// Text that is not valid in its encoding (for example unpaired UTF-16 surrogates).
        public static let invalidEncoding = Code("invalidEncoding")
        /// A packet header that is malformed ([MS-TDS] 2.2.3).
        public static let invalidPacket = Code("invalidPacket")
        /// A token or message that is not allowed in the current state.
        public static let unexpectedToken = Code("unexpectedToken")
        /// A protocol we recognise but do not speak (for example Sybase TDS 5.0).
        public static let unsupportedProtocol = Code("unsupportedProtocol")
        /// A feature we recognise but do not support.
        public static let unsupported = Code("unsupported")
        /// A length or size beyond a cap the decoder was given (a message, a token, one
        /// value): refused before memory is committed to it. `detail` names the cap.
        public static let limitExceeded = Code("limitExceeded")
    }

    /// What kind of malformation this is.
    public var code: Code
    /// Absolute byte offset from the start of the decoded message or stream.
    public var offset: Int
    /// The [MS-TDS] name of the message, token or type being decoded, when known.
    public var context: String
    /// A human-readable explanation. Never contains a password.
    public var detail: String

    /// An error of `code` at byte `offset` of the message or stream, in `context` (the structure being read).
    public init(_ code: Code, offset: Int, context: String = "", _ detail: String = "") {
        self.code = code
        self.offset = offset
        self.context = context
        self.detail = detail
    }

    /// Returns a copy whose `context` is set, unless one was already set.
    public func withContext(_ context: String) -> TDSDecodingError {
        var copy = self
        if copy.context.isEmpty { copy.context = context }
        return copy
    }

    /// What `body` returns; an error it throws gets `context` (``withContext(_:)``): a decoder's
    /// or encoder's whole body, named once.
    @inline(__always)
    static func inContext<T>(_ context: String, _ body: () throws(TDSDecodingError) -> T) throws(TDSDecodingError) -> T {
        do { return try body() } catch { throw error.withContext(context) }
    }

    /// Returns a copy whose offset is moved by `delta` bytes (used when a sub-buffer is decoded).
    public func shifted(by delta: Int) -> TDSDecodingError {
        var copy = self
        copy.offset = offset &+ delta
        return copy
    }

    public var description: String {
        var text = "TDS decoding error \(code)"
        if !context.isEmpty { text += " in \(context)" }
        text += " at byte offset \(offset)"
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }
}

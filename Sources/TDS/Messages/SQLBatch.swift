/// [MS-TDS] 2.2.6.7 SQLBatch: a batch of Transact-SQL text (packet type 0x01).
///
/// Layout: ALL_HEADERS (TDS 7.2 and later only), then the text as UTF-16LE to the end of the
/// message (no length prefix, no terminator).
public struct SQLBatch: Hashable, Sendable {
    /// ALL_HEADERS; nil for TDS 7.1 and earlier.
    public var allHeaders: AllHeaders?
    /// The SQL text (UTF-16LE on the wire).
    public var text: String

    /// A batch of `text` with ALL_HEADERS (by default: no transaction).
    public init(text: String, allHeaders: AllHeaders? = .transaction()) {
        self.text = text
        self.allHeaders = allHeaders
    }

    /// Decodes a SQL_BATCH body (no packet header).
    public static func decode(from bytes: [UInt8], version: TDSVersion, allHeaders: Bool? = nil) throws(TDSDecodingError) -> SQLBatch {
        var reader = ByteReader(bytes)
        return try decode(from: &reader, version: version, allHeaders: allHeaders)
    }

    /// Decodes a SQL_BATCH from the reader's remaining bytes (all of them).
    ///
    /// - Parameter allHeaders: overrides the version rule (ALL_HEADERS from 7.2) when non-nil.
    /// - Throws: ALL_HEADERS errors; `.invalidLength` when the text has an odd byte count;
    ///   `.invalidEncoding` for unpaired surrogates.
    public static func decode(from reader: inout ByteReader, version: TDSVersion, allHeaders: Bool? = nil) throws(TDSDecodingError) -> SQLBatch {
        try TDSDecodingError.inContext("SQLBatch") { () throws(TDSDecodingError) in
            let headers = try AllHeaders.decodeIfPresent(from: &reader, version: version, present: allHeaders)
            let text = try reader.readUTF16LE(byteCount: reader.remaining)
            return SQLBatch(text: text, allHeaders: headers)
        }
    }

    /// Encodes the body. ALL_HEADERS is written when `version` is 7.2 or later (using
    /// `allHeaders`, or an auto-commit transaction header when nil) and never before 7.2.
    public func encode(version: TDSVersion) -> [UInt8] {
        var w = ByteWriter(capacity: 32 + text.utf16.count * 2)
        if AllHeaders.isPresent(in: version) {
            (allHeaders ?? .transaction()).encode(into: &w)
        }
        w.writeUTF16LE(text)
        return w.bytes
    }
}

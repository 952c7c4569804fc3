/// [MS-TDS] 2.2.5.3 ALL_HEADERS: the header block at the start of SQL_BATCH, RPC and
/// TRANSACTION_MANAGER requests from TDS 7.2 on (absent before 7.2).
///
/// Layout: TotalLength (4 bytes LE, including itself), then headers, each HeaderLength (4 bytes
/// LE, including itself), HeaderType (2 bytes LE) and HeaderData. Known types: 1 query
/// notifications, 2 transaction descriptor (8-byte descriptor + 4-byte outstanding request
/// count), 3 trace activity. Types other than 2 are kept raw.
public struct AllHeaders: Hashable, Sendable {
    /// One header of ALL_HEADERS.
    public enum Header: Hashable, Sendable {
        /// Type 2: TransactionDescriptor (8 bytes, as the server sent it in the BEGIN TRANSACTION
        /// ENVCHANGE, read little-endian; 0 outside a transaction) and OutstandingRequestCount.
        case transactionDescriptor(descriptor: UInt64, outstandingRequestCount: UInt32)
        /// Type 3: trace activity (ActivityId GUID + sequence), raw.
        case traceActivity([UInt8])
        /// Type 1 (query notifications) and any other type, raw.
        case other(type: UInt16, data: [UInt8])

        /// The header's HeaderType (1 query notifications, 2 transaction descriptor, 3 trace activity).
        public var type: UInt16 {
            switch self {
            case .transactionDescriptor: return 2
            case .traceActivity: return 3
            case .other(let type, _): return type
            }
        }
    }

    /// HeaderType 1: query notifications.
    public static let queryNotificationsType: UInt16 = 1
    /// HeaderType 2: transaction descriptor and outstanding request count.
    public static let transactionDescriptorType: UInt16 = 2
    /// HeaderType 3: trace activity (an activity id and sequence).
    public static let traceActivityType: UInt16 = 3

    /// The headers in wire order.
    public var headers: [Header]

    /// ALL_HEADERS of `headers`.
    public init(headers: [Header]) { self.headers = headers }

    /// The usual block: one transaction descriptor header (descriptor 0 = auto-commit, one
    /// outstanding request).
    public static func transaction(descriptor: UInt64 = 0, outstandingRequestCount: UInt32 = 1) -> AllHeaders {
        AllHeaders(headers: [.transactionDescriptor(descriptor: descriptor, outstandingRequestCount: outstandingRequestCount)])
    }

    /// The transaction descriptor header's values, if present.
    public var transactionDescriptor: (descriptor: UInt64, outstandingRequestCount: UInt32)? {
        for h in headers {
            if case .transactionDescriptor(let d, let n) = h { return (d, n) }
        }
        return nil
    }

    /// Decodes ALL_HEADERS and advances past TotalLength bytes.
    ///
    /// - Throws: `.truncated` when the input ends inside the block; `.invalidLength` when
    ///   TotalLength is under 4 or a HeaderLength is under 6 or overruns TotalLength.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> AllHeaders {
        try TDSDecodingError.inContext("ALL_HEADERS") { () throws(TDSDecodingError) in
            let start = reader.offset
            let total = Int(try reader.readUInt32LE())
            guard total >= 4 else {
                throw reader.error(.invalidLength, at: start, "TotalLength \(total) is under 4")
            }
            try reader.require(total - 4)
            var block = try reader.subReader(total - 4)
            var headers: [Header] = []
            while !block.isAtEnd {
                let at = block.offset
                let length = Int(try block.readUInt32LE())
                guard length >= 6, length - 4 <= block.remaining else {
                    throw block.error(.invalidLength, at: at, "HeaderLength \(length) does not fit TotalLength \(total)")
                }
                let type = try block.readUInt16LE()
                var data = try block.subReader(length - 6)
                switch type {
                case transactionDescriptorType where data.remaining == 12:
                    let d = try data.readUInt64LE()
                    let n = try data.readUInt32LE()
                    headers.append(.transactionDescriptor(descriptor: d, outstandingRequestCount: n))
                case traceActivityType:
                    headers.append(.traceActivity(try data.readBytes(data.remaining)))
                default:
                    headers.append(.other(type: type, data: try data.readBytes(data.remaining)))
                }
            }
            return AllHeaders(headers: headers)
        }
    }

    /// Appends ALL_HEADERS: TotalLength (4 bytes LE, itself included), then each header's HeaderLength, HeaderType and data.
    public func encode(into writer: inout ByteWriter) {
        let start = writer.count
        writer.writeUInt32LE(0)
        for h in headers {
            switch h {
            case .transactionDescriptor(let d, let n):
                writer.writeUInt32LE(18)
                writer.writeUInt16LE(AllHeaders.transactionDescriptorType)
                writer.writeUInt64LE(d)
                writer.writeUInt32LE(n)
            case .traceActivity(let data):
                writer.writeUInt32LE(UInt32(truncatingIfNeeded: 6 + data.count))
                writer.writeUInt16LE(AllHeaders.traceActivityType)
                writer.writeBytes(data)
            case .other(let type, let data):
                writer.writeUInt32LE(UInt32(truncatingIfNeeded: 6 + data.count))
                writer.writeUInt16LE(type)
                writer.writeBytes(data)
            }
        }
        writer.setUInt32LE(UInt32(truncatingIfNeeded: writer.count - start), at: start)
    }

    /// The encoded bytes (see ``encode(into:)``).
    public var bytes: [UInt8] {
        var w = ByteWriter()
        encode(into: &w)
        return w.bytes
    }

    /// Whether ALL_HEADERS is part of requests in `version` (7.2 and later).
    public static func isPresent(in version: TDSVersion) -> Bool { version.generation >= 0x72 }

    /// Reads ALL_HEADERS when `present` (defaulting to the rule for `version`); nil otherwise.
    static func decodeIfPresent(from reader: inout ByteReader, version: TDSVersion, present: Bool?) throws(TDSDecodingError) -> AllHeaders? {
        guard present ?? isPresent(in: version) else { return nil }
        return try decode(from: &reader)
    }
}

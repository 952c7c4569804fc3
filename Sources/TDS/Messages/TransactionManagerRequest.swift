/// [MS-TDS] 2.2.6.9 Transaction Manager Request (packet type 0x0E).
///
/// Layout: ALL_HEADERS (7.2 and later), RequestType (2 bytes LE), then the payload of that
/// request type:
/// - TM_GET_DTC_ADDRESS (0): a zero-length US_VARBYTE (2 zero bytes);
/// - TM_PROPAGATE_XACT (1): US_VARBYTE, the DTC transaction cookie;
/// - TM_BEGIN_XACT (5): ISOLATION_LEVEL (1 byte), BEGIN_XACT_NAME;
/// - TM_PROMOTE_XACT (6): nothing;
/// - TM_COMMIT_XACT (7) and TM_ROLLBACK_XACT (8): XACT_NAME, XACT_FLAGS (fBeginXact 0x01), and
///   when fBeginXact is set the new transaction's ISOLATION_LEVEL and BEGIN_XACT_NAME;
/// - TM_SAVE_XACT (9): XACT_NAME (the savepoint).
/// Transaction names are B_VARBYTE: a 1-byte **byte** count, then UTF-16LE text (so at most 127
/// characters; longer names are cut when encoding). Other request types are kept raw.
public struct TransactionManagerRequest: Hashable, Sendable {
    /// ISOLATION_LEVEL: 0 no change, 1 read uncommitted, 2 read committed, 3 repeatable read,
    /// 4 serializable, 5 snapshot.
    public struct IsolationLevel: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// 0: keep the session's isolation level.
        public static let noChange = IsolationLevel(rawValue: 0)
        /// 1: read uncommitted.
        public static let readUncommitted = IsolationLevel(rawValue: 1)
        /// 2: read committed.
        public static let readCommitted = IsolationLevel(rawValue: 2)
        /// 3: repeatable read.
        public static let repeatableRead = IsolationLevel(rawValue: 3)
        /// 4: serializable.
        public static let serializable = IsolationLevel(rawValue: 4)
        /// 5: snapshot.
        public static let snapshot = IsolationLevel(rawValue: 5)
    }

    /// A transaction to begin after a commit or rollback (fBeginXact).
    public struct NewTransaction: Hashable, Sendable {
        /// The new transaction's isolation level.
        public var isolationLevel: IsolationLevel
        /// The new transaction's name (empty: none).
        public var name: String
        /// A transaction to begin right after the commit or rollback.
        public init(isolationLevel: IsolationLevel = .noChange, name: String = "") {
            self.isolationLevel = isolationLevel
            self.name = name
        }
    }

    /// The RequestType and its payload.
    public enum Request: Hashable, Sendable {
        /// TM_GET_DTC_ADDRESS (0).
        case getDTCAddress
        /// TM_PROPAGATE_XACT (1) with the DTC cookie.
        case propagate(cookie: [UInt8])
        /// TM_BEGIN_XACT (5).
        case begin(isolationLevel: IsolationLevel, name: String)
        /// TM_PROMOTE_XACT (6).
        case promote
        /// TM_COMMIT_XACT (7), optionally beginning a new transaction (fBeginXact).
        case commit(name: String, thenBegin: NewTransaction?)
        /// TM_ROLLBACK_XACT (8), whole or to the savepoint `name`, optionally beginning a new transaction.
        case rollback(name: String, thenBegin: NewTransaction?)
        /// TM_SAVE_XACT (9): a savepoint named `name`.
        case save(name: String)
        /// A request type this module does not know, with the rest of the message.
        case unknown(type: UInt16, payload: [UInt8])

        /// RequestType on the wire.
        public var type: UInt16 {
            switch self {
            case .getDTCAddress: return 0
            case .propagate: return 1
            case .begin: return 5
            case .promote: return 6
            case .commit: return 7
            case .rollback: return 8
            case .save: return 9
            case .unknown(let t, _): return t
            }
        }
    }

    /// ALL_HEADERS; nil for TDS 7.1 and earlier.
    public var allHeaders: AllHeaders?
    /// What is asked.
    public var request: Request

    /// A request with ALL_HEADERS (by default: no transaction).
    public init(_ request: Request, allHeaders: AllHeaders? = .transaction()) {
        self.request = request
        self.allHeaders = allHeaders
    }

    /// Decodes a whole Transaction Manager request body.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from bytes: [UInt8], version: TDSVersion, allHeaders: Bool? = nil) throws(TDSDecodingError) -> TransactionManagerRequest {
        var reader = ByteReader(bytes)
        return try decode(from: &reader, version: version, allHeaders: allHeaders)
    }

    /// Decodes a TRANSACTION_MANAGER request from the reader's remaining bytes.
    ///
    /// - Throws: `.truncated` when the payload is incomplete; `.invalidLength` when bytes follow
    ///   a known request's payload.
    public static func decode(from reader: inout ByteReader, version: TDSVersion, allHeaders: Bool? = nil) throws(TDSDecodingError) -> TransactionManagerRequest {
        try TDSDecodingError.inContext("TransMgrReq") { () throws(TDSDecodingError) in
            let headers = try AllHeaders.decodeIfPresent(from: &reader, version: version, present: allHeaders)
            let type = try reader.readUInt16LE()
            let request: Request
            func readName() throws(TDSDecodingError) -> String {
                let count = Int(try reader.readUInt8())
                return try reader.readUTF16LE(byteCount: count)
            }
            func afterCommit() throws(TDSDecodingError) -> (String, NewTransaction?) {
                let name = try readName()
                let flags = try reader.readUInt8()
                guard flags & 0x01 != 0 else { return (name, nil) }
                let level = IsolationLevel(rawValue: try reader.readUInt8())
                return (name, NewTransaction(isolationLevel: level, name: try readName()))
            }
            switch type {
            case 0:
                if !reader.isAtEnd { _ = try reader.readUSVarByte() }
                request = .getDTCAddress
            case 1: request = .propagate(cookie: try reader.readUSVarByte())
            case 5:
                let level = IsolationLevel(rawValue: try reader.readUInt8())
                request = .begin(isolationLevel: level, name: try readName())
            case 6: request = .promote
            case 7: let (n, b) = try afterCommit(); request = .commit(name: n, thenBegin: b)
            case 8: let (n, b) = try afterCommit(); request = .rollback(name: n, thenBegin: b)
            case 9: request = .save(name: try readName())
            default: request = .unknown(type: type, payload: try reader.readBytes(reader.remaining))
            }
            guard reader.isAtEnd else {
                throw reader.error(.invalidLength, "\(reader.remaining) byte(s) after the request payload")
            }
            return TransactionManagerRequest(request, allHeaders: headers)
        }
    }

    /// Encodes the body; ALL_HEADERS is written from 7.2 on (auto-commit header when nil).
    public func encode(version: TDSVersion) -> [UInt8] {
        var w = ByteWriter(capacity: 48)
        if AllHeaders.isPresent(in: version) { (allHeaders ?? .transaction()).encode(into: &w) }
        w.writeUInt16LE(request.type)
        /// B_VARBYTE of UTF-16LE: byte count first.
        func writeName(_ s: String) {
            let units = ByteWriter.utf16Prefix(s, maxUnits: 127)
            w.writeUInt8(UInt8(units.count * 2))
            for u in units { w.writeUInt16LE(u) }
        }
        func commitTail(_ name: String, _ begin: NewTransaction?) {
            writeName(name)
            if let begin {
                w.writeUInt8(0x01)
                w.writeUInt8(begin.isolationLevel.rawValue)
                writeName(begin.name)
            } else {
                w.writeUInt8(0)
            }
        }
        switch request {
        case .getDTCAddress: w.writeUInt16LE(0)
        case .propagate(let cookie):
            w.writeUInt16LE(UInt16(truncatingIfNeeded: min(cookie.count, 0xFFFF)))
            w.writeBytes(cookie.prefix(0xFFFF))
        case .begin(let level, let name):
            w.writeUInt8(level.rawValue)
            writeName(name)
        case .promote: break
        case .commit(let name, let begin): commitTail(name, begin)
        case .rollback(let name, let begin): commitTail(name, begin)
        case .save(let name): writeName(name)
        case .unknown(_, let payload): w.writeBytes(payload)
        }
        return w.bytes
    }
}

/// [MS-TDS] 2.2.6.5 PRELOGIN: the first message of a connection, sent by the client and
/// answered by the server with the same layout (in a TABULAR_RESULT packet).
///
/// Layout: a table of options, each `PL_OPTION_TOKEN` (1 byte), `PL_OFFSET` (2 bytes,
/// **big-endian**, from the start of the message) and `PL_OPTION_LENGTH` (2 bytes, big-endian),
/// ended by the terminator 0xFF; then the option data. Options absent from the message are nil.
/// Unknown option tokens are kept raw in `unknownOptions`.
///
/// Encoding writes the options in ascending token order (unknown ones included), as SQL Server
/// and Microsoft clients do.
///
/// During the TLS handshake, TLS records travel in PRELOGIN packets too; those payloads are not
/// PRELOGIN messages and are not decoded by this type.
public struct Prelogin: Hashable, Sendable {
    /// Option tokens ([MS-TDS] 2.2.6.5 PL_OPTION_TOKEN).
    public enum Token {
        /// VERSION (0x00).
        public static let version: UInt8 = 0x00
        /// ENCRYPTION (0x01).
        public static let encryption: UInt8 = 0x01
        /// INSTOPT (0x02): the instance name (client) or whether it matched (server).
        public static let instanceOption: UInt8 = 0x02
        /// THREADID (0x03).
        public static let threadID: UInt8 = 0x03
        /// MARS (0x04).
        public static let mars: UInt8 = 0x04
        /// TRACEID (0x05).
        public static let traceID: UInt8 = 0x05
        /// FEDAUTHREQUIRED (0x06).
        public static let fedAuthRequired: UInt8 = 0x06
        /// NONCEOPT (0x07).
        public static let nonce: UInt8 = 0x07
        /// TERMINATOR (0xFF): ends the option table.
        public static let terminator: UInt8 = 0xFF
    }

    /// VERSION: UL_VERSION (major, minor, build **big-endian**) and US_SUBBUILD (big-endian), 6 bytes.
    /// The client's driver version, or the server's product version (e.g. 17.0.1000).
    public struct Version: Hashable, Sendable, CustomStringConvertible {
        /// The major version (UL_VERSION's first byte), e.g. 17 for SQL Server 2025.
        public var major: UInt8
        /// The minor version (UL_VERSION's second byte).
        public var minor: UInt8
        /// The build number (UL_VERSION's last two bytes, big-endian).
        public var build: UInt16
        /// US_SUBBUILD (big-endian).
        public var subBuild: UInt16
        /// A version from its parts.
        public init(major: UInt8, minor: UInt8, build: UInt16, subBuild: UInt16 = 0) {
            self.major = major; self.minor = minor; self.build = build; self.subBuild = subBuild
        }
        public var description: String { "\(major).\(minor).\(build).\(subBuild)" }
    }

    /// ENCRYPTION (1 byte): ENCRYPT_OFF 0x00, ENCRYPT_ON 0x01, ENCRYPT_NOT_SUP 0x02,
    /// ENCRYPT_REQ 0x03, plus the ENCRYPT_CLIENT_CERT bit 0x80 (client certificate authentication).
    public struct Encryption: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// ENCRYPT_OFF (0x00): encryption available, used for the login only.
        public static let off = Encryption(rawValue: 0x00)
        /// ENCRYPT_ON (0x01): encryption available and wanted for the whole session.
        public static let on = Encryption(rawValue: 0x01)
        /// ENCRYPT_NOT_SUP (0x02): encryption not available.
        public static let notSupported = Encryption(rawValue: 0x02)
        /// ENCRYPT_REQ (0x03, server): encryption required.
        public static let required = Encryption(rawValue: 0x03)
        /// The ENCRYPT_CLIENT_CERT bit (0x80).
        public static let clientCertBit: UInt8 = 0x80

        /// The value without the client-certificate bit.
        public var mode: Encryption { Encryption(rawValue: rawValue & 0x7F) }
        /// True when ENCRYPT_CLIENT_CERT (0x80) is set.
        public var clientCertificate: Bool { rawValue & Encryption.clientCertBit != 0 }
        /// This value with ENCRYPT_CLIENT_CERT set.
        public var withClientCertificate: Encryption { Encryption(rawValue: rawValue | Encryption.clientCertBit) }

        public var description: String {
            let base: String
            switch rawValue & 0x7F {
            case 0: base = "ENCRYPT_OFF"
            case 1: base = "ENCRYPT_ON"
            case 2: base = "ENCRYPT_NOT_SUP"
            case 3: base = "ENCRYPT_REQ"
            default: base = "0x" + String(rawValue & 0x7F, radix: 16, uppercase: true)
            }
            return clientCertificate ? base + "|ENCRYPT_CLIENT_CERT" : base
        }
    }

    /// TRACEID (36 bytes): GUID_CONNID (16), ACTIVITY_GUID (16), ACTIVITY_SEQUENCE (4, little-endian).
    public struct TraceID: Hashable, Sendable {
        /// GUID_CONNID: the client's connection ID (16 bytes).
        public var connectionID: [UInt8]
        /// ACTIVITY_GUID: the client's activity ID (16 bytes).
        public var activityID: [UInt8]
        /// ACTIVITY_SEQUENCE: the activity's sequence number.
        public var activitySequence: UInt32
        /// A TRACEID from its parts (16, 16 bytes and a number).
        public init(connectionID: [UInt8], activityID: [UInt8], activitySequence: UInt32) {
            self.connectionID = connectionID; self.activityID = activityID; self.activitySequence = activitySequence
        }
    }

    /// An option token this type does not interpret, kept with its raw data.
    public struct RawOption: Hashable, Sendable {
        /// The option's PL_OPTION_TOKEN.
        public var token: UInt8
        /// The option's data as sent.
        public var data: [UInt8]
        /// An option from its token and data.
        public init(token: UInt8, data: [UInt8]) { self.token = token; self.data = data }
    }

    /// VERSION: the client's driver version, or the server's product version; nil when absent.
    public var version: Version?
    /// ENCRYPTION; nil when absent.
    public var encryption: Encryption?
    /// INSTOPT raw bytes. From the client: the instance name, MBCS, NUL-terminated. From the
    /// server: one byte, 0x00 when the instance name matched (or none was sent), else 0x01.
    public var instanceOption: [UInt8]?
    /// THREADID (4 bytes): the client's thread id. [MS-TDS] does not name its byte order; the
    /// spec example (B8 0D 00 00 = 3512) and Microsoft clients write it **little-endian**. Servers send it with length 0,
    /// which is kept raw in `unknownOptions` (so that encoding reproduces it).
    public var threadID: UInt32?
    /// MARS (1 byte): 0x00 off, 0x01 on.
    public var mars: UInt8?
    /// TRACEID; nil when absent.
    public var traceID: TraceID?
    /// FEDAUTHREQUIRED (1 byte): 0x01 when the client can do federated authentication / the server requires it.
    public var fedAuthRequired: UInt8?
    /// NONCEOPT (32 bytes).
    public var nonce: [UInt8]?
    /// Options with other tokens, and known options whose length is not the expected one.
    public var unknownOptions: [RawOption]

    /// A PRELOGIN message from its options (nil: the option is not sent).
    public init(version: Version? = nil, encryption: Encryption? = nil, instanceOption: [UInt8]? = nil,
                threadID: UInt32? = nil, mars: UInt8? = nil, traceID: TraceID? = nil,
                fedAuthRequired: UInt8? = nil, nonce: [UInt8]? = nil, unknownOptions: [RawOption] = []) {
        self.version = version
        self.encryption = encryption
        self.instanceOption = instanceOption
        self.threadID = threadID
        self.mars = mars
        self.traceID = traceID
        self.fedAuthRequired = fedAuthRequired
        self.nonce = nonce
        self.unknownOptions = unknownOptions
    }

    /// The client's instance name (INSTOPT up to its NUL), or nil when absent.
    public var instanceName: String? {
        guard let instanceOption else { return nil }
        let bytes = instanceOption.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Sets INSTOPT to `name` followed by NUL (an empty name gives the single byte 0x00).
    public mutating func setInstanceName(_ name: String) {
        instanceOption = Array(name.utf8) + [0]
    }

    /// True when the MARS option is present and non-zero.
    public var isMARSEnabled: Bool { (mars ?? 0) != 0 }

    /// Decodes a PRELOGIN message body (no packet header). `version` is not used: PRELOGIN
    /// precedes version negotiation.
    ///
    /// - Throws: `.truncated` when the option table or an option's data extends past the input.
    ///   A known option with an unexpected length is not an error: it is kept in `unknownOptions`.
    public static func decode(from bytes: [UInt8], version: TDSVersion = .v7_4) throws(TDSDecodingError) -> Prelogin {
        var reader = ByteReader(bytes)
        return try decode(from: &reader, version: version)
    }

    /// Decodes a PRELOGIN message from the reader's remaining bytes (they must be the whole message;
    /// offsets count from the reader's current position). Consumes them all.
    public static func decode(from reader: inout ByteReader, version: TDSVersion = .v7_4) throws(TDSDecodingError) -> Prelogin {
        try TDSDecodingError.inContext("PRELOGIN") { () throws(TDSDecodingError) in
            let start = reader.offset
            var table: [(token: UInt8, offset: Int, length: Int, at: Int)] = []
            while true {
                let at = reader.offset
                let token = try reader.readUInt8()
                if token == Token.terminator { break }
                let off = Int(try reader.readUInt16BE())
                let len = Int(try reader.readUInt16BE())
                table.append((token, off, len, at))
            }
            var result = Prelogin()
            for entry in table {
                let dataStart = start + entry.offset
                var sub = ByteReader(reader.bytes, start: dataStart, end: reader.endIndex, baseOffset: reader.baseOffset)
                guard dataStart <= reader.endIndex else {
                    throw TDSDecodingError(.truncated, offset: reader.baseOffset &+ entry.at,
                                           "option 0x\(String(entry.token, radix: 16)) at offset \(entry.offset) past the end")
                }
                let data = try sub.readBytes(entry.length)
                result.assign(token: entry.token, data: data)
            }
            reader.offset = reader.endIndex
            return result
        }
    }

    private mutating func assign(token: UInt8, data: [UInt8]) {
        func be16(_ i: Int) -> UInt16 { UInt16(data[i]) << 8 | UInt16(data[i + 1]) }
        switch (token, data.count) {
        case (Token.version, 6):
            version = Version(major: data[0], minor: data[1], build: be16(2), subBuild: be16(4))
        case (Token.encryption, 1):
            encryption = Encryption(rawValue: data[0])
        case (Token.instanceOption, _):
            instanceOption = data
        case (Token.threadID, 4):
            threadID = UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16 | UInt32(data[3]) << 24
        case (Token.mars, 1):
            mars = data[0]
        case (Token.traceID, 36):
            let seq = UInt32(data[32]) | UInt32(data[33]) << 8 | UInt32(data[34]) << 16 | UInt32(data[35]) << 24
            traceID = TraceID(connectionID: Array(data[0..<16]), activityID: Array(data[16..<32]), activitySequence: seq)
        case (Token.fedAuthRequired, 1):
            fedAuthRequired = data[0]
        case (Token.nonce, 32):
            nonce = data
        default:
            unknownOptions.append(RawOption(token: token, data: data))
        }
    }

    /// The options as (token, data), in ascending token order.
    public var options: [RawOption] {
        var out: [RawOption] = []
        if let version {
            var w = ByteWriter(capacity: 6)
            w.writeUInt8(version.major); w.writeUInt8(version.minor)
            w.writeUInt16BE(version.build); w.writeUInt16BE(version.subBuild)
            out.append(RawOption(token: Token.version, data: w.bytes))
        }
        if let encryption { out.append(RawOption(token: Token.encryption, data: [encryption.rawValue])) }
        if let instanceOption { out.append(RawOption(token: Token.instanceOption, data: instanceOption)) }
        if let threadID {
            var w = ByteWriter(capacity: 4); w.writeUInt32LE(threadID)
            out.append(RawOption(token: Token.threadID, data: w.bytes))
        }
        if let mars { out.append(RawOption(token: Token.mars, data: [mars])) }
        if let traceID {
            var w = ByteWriter(capacity: 36)
            w.writeBytes(traceID.connectionID.prefix(16)); w.writeBytes([UInt8](repeating: 0, count: max(0, 16 - traceID.connectionID.count)))
            w.writeBytes(traceID.activityID.prefix(16)); w.writeBytes([UInt8](repeating: 0, count: max(0, 16 - traceID.activityID.count)))
            w.writeUInt32LE(traceID.activitySequence)
            out.append(RawOption(token: Token.traceID, data: w.bytes))
        }
        if let fedAuthRequired { out.append(RawOption(token: Token.fedAuthRequired, data: [fedAuthRequired])) }
        if let nonce { out.append(RawOption(token: Token.nonce, data: nonce)) }
        out.append(contentsOf: unknownOptions)
        // Stable sort by token (known options first among equal tokens).
        return out.enumerated().sorted { ($0.element.token, $0.offset) < ($1.element.token, $1.offset) }.map(\.element)
    }

    /// Encodes the message body (no packet header). Option data longer than 65,535 bytes is cut,
    /// and options whose data would start past offset 65,535 (PL_OFFSET is a USHORT) are left out:
    /// the options that fit, in token order, are written whole, so the encoding decodes to them.
    public func encode(version: TDSVersion = .v7_4) -> [UInt8] {
        var opts = options
        // The longest prefix of options whose last one still starts at an addressable offset.
        var fitting = 0
        var dataBefore = 0
        for (i, o) in opts.enumerated() {
            // Kept with the options before it, option i starts after i + 1 table entries, the
            // terminator and their data.
            if 5 * (i + 1) + 1 + dataBefore > Int(UInt16.max) { break }
            fitting = i + 1
            dataBefore += min(o.data.count, Int(UInt16.max))
        }
        opts.removeSubrange(fitting...)
        var w = ByteWriter(capacity: 64)
        var dataOffset = opts.count * 5 + 1
        for o in opts {
            let len = min(o.data.count, Int(UInt16.max))
            w.writeUInt8(o.token)
            w.writeUInt16BE(UInt16(truncatingIfNeeded: dataOffset))
            w.writeUInt16BE(UInt16(len))
            dataOffset += len
        }
        w.writeUInt8(Token.terminator)
        for o in opts { w.writeBytes(o.data.prefix(Int(UInt16.max))) }
        return w.bytes
    }
}

/// The type byte of a TDS packet header ([MS-TDS] 2.2.3.1.1).
public struct PacketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0x01 SQL batch.
    public static let sqlBatch = PacketType(rawValue: 0x01)
    /// 0x02 pre-TDS 7 login (not used by TDS 7+ clients).
    public static let preTDS7Login = PacketType(rawValue: 0x02)
    /// 0x03 RPC request.
    public static let rpc = PacketType(rawValue: 0x03)
    /// 0x04 tabular result (every server response).
    public static let tabularResult = PacketType(rawValue: 0x04)
    /// 0x06 ATTENTION (cancel).
    public static let attention = PacketType(rawValue: 0x06)
    /// 0x07 bulk load data.
    public static let bulkLoad = PacketType(rawValue: 0x07)
    /// 0x08 federated authentication token.
    public static let federatedAuthToken = PacketType(rawValue: 0x08)
    /// 0x0E Transaction Manager request.
    public static let transactionManager = PacketType(rawValue: 0x0E)
    /// 0x10 LOGIN7.
    public static let login7 = PacketType(rawValue: 0x10)
    /// 0x11 SSPI.
    public static let sspi = PacketType(rawValue: 0x11)
    /// 0x12 PRELOGIN (and the TLS handshake it carries).
    public static let prelogin = PacketType(rawValue: 0x12)

    /// The [MS-TDS] name, as printed by `sqlclient decode`.
    public var name: String {
        switch rawValue {
        case 0x01: return "SQL_BATCH"
        case 0x02: return "PRE_TDS7_LOGIN"
        case 0x03: return "RPC"
        case 0x04: return "TABULAR_RESULT"
        case 0x06: return "ATTENTION"
        case 0x07: return "BULK_LOAD"
        case 0x08: return "FEDAUTH_TOKEN"
        case 0x0E: return "TRANSACTION_MANAGER"
        case 0x10: return "LOGIN7"
        case 0x11: return "SSPI"
        case 0x12: return "PRELOGIN"
        default: return "UNKNOWN_0x" + String(rawValue, radix: 16, uppercase: true)
        }
    }
    public var description: String { name }
}

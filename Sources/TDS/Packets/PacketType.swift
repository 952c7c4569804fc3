/// The type byte of a TDS packet header ([MS-TDS] 2.2.3.1.1).
public struct PacketType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let sqlBatch = PacketType(rawValue: 0x01)
    public static let preTDS7Login = PacketType(rawValue: 0x02)
    public static let rpc = PacketType(rawValue: 0x03)
    public static let tabularResult = PacketType(rawValue: 0x04)
    public static let attention = PacketType(rawValue: 0x06)
    public static let bulkLoad = PacketType(rawValue: 0x07)
    public static let federatedAuthToken = PacketType(rawValue: 0x08)
    public static let transactionManager = PacketType(rawValue: 0x0E)
    public static let login7 = PacketType(rawValue: 0x10)
    public static let sspi = PacketType(rawValue: 0x11)
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

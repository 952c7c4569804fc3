/// A TDS protocol version as carried in LOGIN7's TDSVersion field and LOGINACK's TDSVersion
/// ([MS-TDS] 2.2.6.4, 2.2.7.14).
///
/// `rawValue` is the 32-bit value in the byte order LOGINACK sends it (big-endian on the wire),
/// e.g. `0x74000004` for 7.4. Comparison orders by protocol generation.
public struct TDSVersion: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let v7_0 = TDSVersion(rawValue: 0x7000_0000)
    public static let v7_1 = TDSVersion(rawValue: 0x7100_0000)
    /// 7.1 Revision 1, what SQL Server 2000 SP1 and later answer to a 7.1 client.
    public static let v7_1_1 = TDSVersion(rawValue: 0x7100_0001)
    public static let v7_2 = TDSVersion(rawValue: 0x7209_0002)
    public static let v7_3A = TDSVersion(rawValue: 0x730A_0003)
    public static let v7_3B = TDSVersion(rawValue: 0x730B_0003)
    public static let v7_4 = TDSVersion(rawValue: 0x7400_0004)

    /// The major.minor generation: 0x70, 0x71, 0x72, 0x73, 0x74.
    public var generation: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 24) }

    public static func < (a: TDSVersion, b: TDSVersion) -> Bool {
        (a.generation, a.rawValue & 0xFF) < (b.generation, b.rawValue & 0xFF)
    }

    /// 7.2 and later: 8-byte DONE row counts, ALL_HEADERS, PLP and max types, xml, UDT.
    public var hasLongRowCounts: Bool { generation >= 0x72 }
    /// 7.3 and later: date/time types and NBCROW.
    public var hasDateTimeTypes: Bool { generation >= 0x73 }

    /// Parses "7.0", "7.1", "7.2", "7.3", "7.3A", "7.3B", "7.4" (also "71", "74").
    public init?(string: String) {
        switch string.uppercased() {
        case "7.0", "70": self = .v7_0
        case "7.1", "71", "8.0", "80": self = .v7_1_1
        case "7.2", "72": self = .v7_2
        case "7.3", "73", "7.3B": self = .v7_3B
        case "7.3A": self = .v7_3A
        case "7.4", "74": self = .v7_4
        default: return nil
        }
    }

    public var description: String {
        switch generation {
        case 0x70: return "7.0"
        case 0x71: return "7.1"
        case 0x72: return "7.2"
        case 0x73: return rawValue == TDSVersion.v7_3A.rawValue ? "7.3A" : "7.3B"
        case 0x74: return "7.4"
        default:
            return "0x" + String(rawValue, radix: 16, uppercase: true)
        }
    }
}

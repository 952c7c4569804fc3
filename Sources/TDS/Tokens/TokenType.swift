/// The token type byte that starts every token in a tabular result ([MS-TDS] 2.2.4, 2.2.7).
///
/// `name` is the [MS-TDS] name (`COLMETADATA`, `DONEINPROC`, …); unknown bytes print as `0xNN`.
public struct TokenType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// [MS-TDS] 2.2.7.1 ALTMETADATA (0x88).
    public static let altMetadata = TokenType(rawValue: 0x88)
    /// [MS-TDS] 2.2.7.2 ALTROW (0xD3).
    public static let altRow = TokenType(rawValue: 0xD3)
    /// [MS-TDS] 2.2.7.3 COLINFO (0xA5).
    public static let colInfo = TokenType(rawValue: 0xA5)
    /// [MS-TDS] 2.2.7.4 COLMETADATA (0x81).
    public static let colMetadata = TokenType(rawValue: 0x81)
    /// [MS-TDS] 2.2.7.5 DATACLASSIFICATION (0xA3).
    public static let dataClassification = TokenType(rawValue: 0xA3)
    /// [MS-TDS] 2.2.7.6 DONE (0xFD).
    public static let done = TokenType(rawValue: 0xFD)
    /// [MS-TDS] 2.2.7.7 DONEINPROC (0xFF).
    public static let doneInProc = TokenType(rawValue: 0xFF)
    /// [MS-TDS] 2.2.7.8 DONEPROC (0xFE).
    public static let doneProc = TokenType(rawValue: 0xFE)
    /// [MS-TDS] 2.2.7.9 ENVCHANGE (0xE3).
    public static let envChange = TokenType(rawValue: 0xE3)
    /// [MS-TDS] 2.2.7.10 ERROR (0xAA).
    public static let error = TokenType(rawValue: 0xAA)
    /// [MS-TDS] 2.2.7.11 FEATUREEXTACK (0xAE).
    public static let featureExtAck = TokenType(rawValue: 0xAE)
    /// [MS-TDS] 2.2.7.12 FEDAUTHINFO (0xEE).
    public static let fedAuthInfo = TokenType(rawValue: 0xEE)
    /// [MS-TDS] 2.2.7.13 INFO (0xAB).
    public static let info = TokenType(rawValue: 0xAB)
    /// [MS-TDS] 2.2.7.14 LOGINACK (0xAD).
    public static let loginAck = TokenType(rawValue: 0xAD)
    /// [MS-TDS] 2.2.7.15 NBCROW (0xD2).
    public static let nbcRow = TokenType(rawValue: 0xD2)
    /// [MS-TDS] 2.2.7.16 OFFSET (0x78).
    public static let offset = TokenType(rawValue: 0x78)
    /// [MS-TDS] 2.2.7.17 ORDER (0xA9).
    public static let order = TokenType(rawValue: 0xA9)
    /// [MS-TDS] 2.2.7.18 RETURNSTATUS (0x79).
    public static let returnStatus = TokenType(rawValue: 0x79)
    /// [MS-TDS] 2.2.7.19 RETURNVALUE (0xAC).
    public static let returnValue = TokenType(rawValue: 0xAC)
    /// [MS-TDS] 2.2.7.20 ROW (0xD1).
    public static let row = TokenType(rawValue: 0xD1)
    /// [MS-TDS] 2.2.7.21 SESSIONSTATE (0xE4).
    public static let sessionState = TokenType(rawValue: 0xE4)
    /// [MS-TDS] 2.2.7.22 SSPI (0xED).
    public static let sspi = TokenType(rawValue: 0xED)
    /// [MS-TDS] 2.2.7.23 TABNAME (0xA4).
    public static let tabName = TokenType(rawValue: 0xA4)

    /// The [MS-TDS] token name, or `0xNN` for a byte [MS-TDS] does not define.
    public var name: String {
        switch rawValue {
        case 0x88: return "ALTMETADATA"
        case 0xD3: return "ALTROW"
        case 0xA5: return "COLINFO"
        case 0x81: return "COLMETADATA"
        case 0xA3: return "DATACLASSIFICATION"
        case 0xFD: return "DONE"
        case 0xFF: return "DONEINPROC"
        case 0xFE: return "DONEPROC"
        case 0xE3: return "ENVCHANGE"
        case 0xAA: return "ERROR"
        case 0xAE: return "FEATUREEXTACK"
        case 0xEE: return "FEDAUTHINFO"
        case 0xAB: return "INFO"
        case 0xAD: return "LOGINACK"
        case 0xD2: return "NBCROW"
        case 0x78: return "OFFSET"
        case 0xA9: return "ORDER"
        case 0x79: return "RETURNSTATUS"
        case 0xAC: return "RETURNVALUE"
        case 0xD1: return "ROW"
        case 0xE4: return "SESSIONSTATE"
        case 0xED: return "SSPI"
        case 0xA4: return "TABNAME"
        default: return "0x" + TokenType.hex(rawValue)
        }
    }

    /// Whether [MS-TDS] 2.2.7 defines this token byte.
    public var isKnown: Bool { !name.hasPrefix("0x") }

    public var description: String { name }

    static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(b >> 4)], digits[Int(b & 0x0F)]])
    }
}

/// [MS-TDS] 2.2.5.1.2 Collation: 5 bytes.
///
/// Bytes 0-3 (little-endian UInt32): bits 0-19 LCID, bits 20-27 ColFlags (fIgnoreCase, fIgnoreAccent,
/// fIgnoreKana, fIgnoreWidth, fBinary, fBinary2, fUTF8, reserved), bits 28-31 version.
/// All five bytes zero is the "raw collation" ([MS-TDS]); it maps to the 1252 fallback.
/// Byte 4: SortId (non-zero for SQL collations such as `SQL_Latin1_General_CP1_CI_AS`).
///
/// ``codePage`` is the code page of char/varchar/text data in this collation: 65001 when the UTF-8
/// flag is set, else from SortId when it is non-zero, else from the LCID. **Documented fallback:**
/// a SortId or LCID that is not in the table (including Unicode-only locales, which cannot hold
/// varchar data) maps to code page 1252, and ``isCodePageKnown`` is then false, so callers that
/// must be strict can check it.
public struct Collation: Hashable, Sendable, CustomStringConvertible {
    /// Windows locale id (20 bits).
    public var lcid: UInt32
    /// Comparison flags (8 bits) — see ``Flags``.
    public var flags: Flags
    /// Collation version (4 bits).
    public var version: UInt8
    /// SQL sort order id; 0 for Windows collations.
    public var sortID: UInt8

    /// The 8 collation flag bits, in wire order (bit 0 = fIgnoreCase).
    public struct Flags: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// fIgnoreCase: case-insensitive (`_CI`).
        public static let ignoreCase = Flags(rawValue: 1 << 0)
        /// fIgnoreAccent: accent-insensitive (`_AI`).
        public static let ignoreAccent = Flags(rawValue: 1 << 1)
        /// fIgnoreKana: kana-insensitive (without `_KS`).
        public static let ignoreKana = Flags(rawValue: 1 << 2)
        /// fIgnoreWidth: width-insensitive (without `_WS`).
        public static let ignoreWidth = Flags(rawValue: 1 << 3)
        /// fBinary: binary sort (`_BIN`).
        public static let binary = Flags(rawValue: 1 << 4)
        /// fBinary2: code-point binary sort (`_BIN2`).
        public static let binary2 = Flags(rawValue: 1 << 5)
        /// fUTF8: varchar data is UTF-8 (`_UTF8`, SQL Server 2019+).
        public static let utf8 = Flags(rawValue: 1 << 6)
    }

    /// A collation from its fields (LCID kept to 20 bits, version to 4).
    public init(lcid: UInt32, flags: Flags = [], version: UInt8 = 0, sortID: UInt8 = 0) {
        self.lcid = lcid & 0xF_FFFF
        self.flags = flags
        self.version = version & 0x0F
        self.sortID = sortID
    }

    /// Builds a collation from its 5 wire bytes (nil unless exactly 5 bytes).
    public init?(bytes: [UInt8]) {
        guard bytes.count == 5 else { return nil }
        let info = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        self.init(lcid: info & 0xF_FFFF, flags: Flags(rawValue: UInt8(truncatingIfNeeded: info >> 20)),
                  version: UInt8(truncatingIfNeeded: info >> 28), sortID: bytes[4])
    }

    /// `SQL_Latin1_General_CP1_CI_AS` (LCID 0x0409, SortId 52), SQL Server's default.
    public static let sqlLatin1GeneralCP1CIAS = Collation(
        lcid: 0x0409, flags: [.ignoreCase, .ignoreKana, .ignoreWidth], version: 0, sortID: 52)

    /// Whether the UTF-8 flag (fUTF8, SQL Server 2019 `_UTF8` collations) is set.
    public var isUTF8: Bool { flags.contains(.utf8) }

    /// The code page for char/varchar/text data (65001 for UTF-8 collations).
    public var codePage: Int { Collation.codePage(lcid: lcid, sortID: sortID, utf8: isUTF8).codePage }

    /// Whether ``codePage`` came from the table rather than the 1252 fallback.
    public var isCodePageKnown: Bool { Collation.codePage(lcid: lcid, sortID: sortID, utf8: isUTF8).known }

    /// The 5 wire bytes.
    public var bytes: [UInt8] {
        let info = (lcid & 0xF_FFFF) | UInt32(flags.rawValue) << 20 | UInt32(version & 0x0F) << 28
        return [UInt8(truncatingIfNeeded: info), UInt8(truncatingIfNeeded: info >> 8),
                UInt8(truncatingIfNeeded: info >> 16), UInt8(truncatingIfNeeded: info >> 24), sortID]
    }

    /// Reads 5 bytes. Throws `.truncated` if fewer remain.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> Collation {
        let info = try reader.readUInt32LE()
        let sort = try reader.readUInt8()
        return Collation(lcid: info & 0xF_FFFF, flags: Flags(rawValue: UInt8(truncatingIfNeeded: info >> 20)),
                         version: UInt8(truncatingIfNeeded: info >> 28), sortID: sort)
    }

    /// Writes the 5 wire bytes.
    public func encode(into writer: inout ByteWriter) {
        writer.writeBytes(bytes)
    }

    public var description: String {
        let hex = String(lcid, radix: 16, uppercase: true)
        return "Collation(lcid: 0x\(hex), sortID: \(sortID), flags: 0x\(String(flags.rawValue, radix: 16)), codePage: \(codePage))"
    }

    // MARK: Code page tables

    /// SQL sort order id -> code page (SQL collations; SortId != 0).
    static func codePage(sortID: UInt8) -> Int? {
        switch sortID {
        case 30...35: return 437
        case 40...45, 49, 55...61: return 850
        case 50...54, 71...75, 183...186: return 1252
        case 80...98: return 1250
        case 104...108: return 1251
        case 112...114, 120...122, 124: return 1253
        case 128...130: return 1254
        case 136...138: return 1255
        case 144...146: return 1256
        case 152...160: return 1257
        case 192, 193, 200: return 932
        case 194, 195, 201: return 949
        case 196, 197, 202: return 950
        case 198, 199, 203: return 936
        case 204...206: return 874
        case 210...217: return 1252
        default: return nil
        }
    }

    /// Windows LCID -> ANSI code page (Windows collations; SortId == 0).
    static func codePage(lcid: UInt32) -> Int? {
        let langID = lcid & 0xFFFF          // strip the sort id bits 16-19
        let primary = langID & 0x3FF
        switch langID {
        // Chinese: PRC/Singapore simplified, Taiwan/Hong Kong/Macau traditional.
        case 0x0804, 0x1004: return 936
        case 0x0404, 0x0C04, 0x1404: return 950
        // Serbian/Bosnian Cyrillic, Uzbek/Azeri Cyrillic.
        case 0x0C1A, 0x1C1A, 0x201A, 0x281A, 0x082C, 0x0843: return 1251
        // Serbian/Bosnian Latin.
        case 0x081A, 0x141A, 0x181A, 0x241A, 0x2C1A: return 1250
        case 0x042C, 0x0443: return 1254
        default: break
        }
        switch primary {
        case 0x1E: return 874                              // Thai
        case 0x11: return 932                              // Japanese
        case 0x04: return 936
        case 0x12: return 949                              // Korean
        case 0x05, 0x0E, 0x15, 0x18, 0x1A, 0x1B, 0x1C, 0x24, 0x42: return 1250   // cs hu pl ro hr sk sq sl tk
        case 0x02, 0x19, 0x22, 0x23, 0x2F, 0x3F, 0x40, 0x44, 0x50, 0x6D, 0x85: return 1251 // bg ru uk be mk kk ky tt mn ba sah
        case 0x08: return 1253                             // Greek
        case 0x1F, 0x2C, 0x43: return 1254                 // Turkish, Azeri, Uzbek (Latin)
        case 0x0D: return 1255                             // Hebrew
        case 0x01, 0x29, 0x20, 0x8C, 0x80: return 1256     // Arabic, Farsi, Urdu, Dari, Uyghur
        case 0x25, 0x26, 0x27: return 1257                 // Estonian, Latvian, Lithuanian
        case 0x2A: return 1258                             // Vietnamese
        case 0x03, 0x06, 0x07, 0x09, 0x0A, 0x0B, 0x0C, 0x0F, 0x10, 0x13, 0x14, 0x16, 0x1D, 0x21, 0x2D,
             0x36, 0x38, 0x3E, 0x41, 0x52, 0x56, 0x62, 0x6E, 0x83, 0x84, 0x88, 0x2E, 0x3B, 0x3C, 0x6A, 0x6B,
             0x6C, 0x91, 0x34, 0x35, 0x32, 0x46, 0x47, 0x5D, 0x5F, 0x64, 0x70, 0x7A, 0x7C, 0x86, 0x87, 0x17, 0x37, 0x7E:
            return 1252                                   // Western European and other Latin-1 locales
        default: return nil
        }
    }

    static func codePage(lcid: UInt32, sortID: UInt8, utf8: Bool) -> (codePage: Int, known: Bool) {
        if utf8 { return (65001, true) }
        if sortID != 0, let cp = codePage(sortID: sortID) { return (cp, true) }
        if let cp = codePage(lcid: lcid) { return (cp, true) }
        return (1252, false)
    }
}

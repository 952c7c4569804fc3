/// The fields of a ``TypeInfo`` that decoding a value reads ([MS-TDS] 2.2.5.4 TYPE_INFO without
/// the xml schema and UDT names): type, length, precision, scale, collation and the PLP flag.
///
/// It holds no reference-counted storage, so copying it is a plain memory copy: the row decoder
/// keeps one per column of the result set and decodes every value through it, where copying the
/// whole ``TypeInfo`` (with its optional strings) per value would cost retains and releases.
///
/// The collation is kept packed in one word (``collationBits``): a layout passed by value is then
/// whole words, where an optional `Collation` of five fields and a tag was reassembled byte by
/// byte on the stack for every call (a store-forwarding stall per value in the row scan).
struct ValueLayout: Hashable, Sendable {
    var type: TDSDataType
    var length: Int
    var precision: UInt8
    var scale: UInt8
    var isPLP: Bool
    /// The collation: LCID (bits 0-31), flags (32-39), version (40-47), sort id (48-55), bit 63
    /// set when there is one (0: none).
    private var collationBits: UInt64

    /// The column's collation ([MS-TDS] 2.2.5.1.2), nil for types without one.
    var collation: Collation? {
        @inline(__always) get {
            guard collationBits != 0 else { return nil }
            var c = Collation(lcid: 0)
            c.lcid = UInt32(truncatingIfNeeded: collationBits)
            c.flags = Collation.Flags(rawValue: UInt8(truncatingIfNeeded: collationBits >> 32))
            c.version = UInt8(truncatingIfNeeded: collationBits >> 40)
            c.sortID = UInt8(truncatingIfNeeded: collationBits >> 48)
            return c
        }
        set { collationBits = Self.pack(newValue) }
    }

    @inline(__always)
    static func pack(_ c: Collation?) -> UInt64 {
        guard let c else { return 0 }
        return UInt64(c.lcid) | UInt64(c.flags.rawValue) << 32 | UInt64(c.version) << 40 | UInt64(c.sortID) << 48 | 1 << 63
    }

    @inline(__always)
    init(_ info: TypeInfo) {
        type = info.type
        length = info.length
        precision = info.precision
        scale = info.scale
        isPLP = info.isPLP
        collationBits = Self.pack(info.collation)
    }

    /// The type as SQL Server declares it (for error messages), as ``TypeInfo/sqlTypeName``.
    var sqlTypeName: String {
        TypeInfo(type: type, length: length, precision: precision, scale: scale, collation: collation, isPLP: isPLP).sqlTypeName
    }
}

extension TypeInfo {
    /// The TYPE_INFO to send `value` as an RPC parameter (and declare in sp_executesql's
    /// `@params` via ``sqlTypeName``), with the value converted when the TDS version lacks the type.
    ///
    /// Strings go as nvarchar(4000) (nvarchar(max) when longer; ntext before 7.2), binary as
    /// varbinary(8000) (varbinary(max) when longer; image before 7.2), decimals keep their
    /// precision and scale, time types keep their scale. Before TDS 7.3, date, time, datetime2 and
    /// datetimeoffset values are sent as nvarchar text in their canonical form (which SQL Server
    /// converts implicitly). NULL goes as nvarchar(4000). UDT bytes go as varbinary.
    public static func parameter(for value: SQLValue, version: TDSVersion = .v7_4,
                                 collation: Collation = .sqlLatin1GeneralCP1CIAS) -> (TypeInfo, SQLValue) {
        let hasMax = version.generation >= 0x72
        let hasDates = version.generation >= 0x73
        func text(_ s: String, xml: Bool = false) -> (TypeInfo, SQLValue) {
            if s.utf16.count <= 4000 { return (.nvarchar(4000, collation: collation), .string(s)) }
            return hasMax ? (.nvarchar(nil, collation: collation), .string(s)) : (.ntext(collation: collation), .string(s))
        }
        switch value {
        case .null: return (.nvarchar(4000, collation: collation), .null)
        case .bit: return (.bit, value)
        case .tinyint: return (.tinyint, value)
        case .smallint: return (.smallint, value)
        case .int: return (.int, value)
        case .bigint: return (.bigint, value)
        case .real: return (.real, value)
        case .float: return (.float, value)
        case .decimal(let d):
            let digits = max(String(d.magnitude).count, Int(d.scale), 1)
            let p = UInt8(min(38, max(Int(d.precision), digits)))
            return (.decimal(precision: p, scale: min(d.scale, p)), value)
        case .money: return (.money, value)
        case .smallMoney: return (.smallMoney, value)
        case .datetime: return (.datetime, value)
        case .smallDateTime: return (.smallDateTime, value)
        case .uniqueIdentifier: return (.uniqueIdentifier, value)
        case .date, .time, .datetime2, .datetimeOffset:
            guard hasDates else { return text(value.canonicalText ?? "") }
            switch value {
            case .time(let t): return (.time(scale: t.scale), value)
            case .datetime2(let d): return (.datetime2(scale: d.scale), value)
            case .datetimeOffset(let d): return (.datetimeOffset(scale: d.utc.scale), value)
            default: return (.date, value)
            }
        case .string(let s): return text(s)
        case .xml(let s):
            return hasMax ? (.xml, value) : text(s)
        case .binary(let b), .udt(let b):
            if b.count <= 8000 { return (.varbinary(8000), .binary(b)) }
            return hasMax ? (.varbinary(nil), .binary(b)) : (.image, .binary(b))
        case .variant: return (.sqlVariant, value)
        case .json(let s):
            // json as nvarchar(max) where the TDS version has no max types (the caller downgrades
            // it when JSONSUPPORT was not acknowledged, see SQLTypeSupport).
            return hasMax ? (.json, value) : text(s)
        case .vector(let v):
            return (.vector(dimensions: v.dimensions, elementType: v.elementType), value)
        }
    }
}

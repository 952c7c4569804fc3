/// The fields of a ``TypeInfo`` that decoding a value reads ([MS-TDS] 2.2.5.4 TYPE_INFO without
/// the xml schema and UDT names): type, length, precision, scale, collation and the PLP flag.
///
/// It holds no reference-counted storage, so copying it is a plain memory copy: the row decoder
/// keeps one per column of the result set and decodes every value through it, where copying the
/// whole ``TypeInfo`` (with its optional strings) per value would cost retains and releases.
struct ValueLayout: Hashable, Sendable {
    var type: TDSDataType
    var length: Int
    var precision: UInt8
    var scale: UInt8
    var collation: Collation?
    var isPLP: Bool

    @inline(__always)
    init(_ info: TypeInfo) {
        type = info.type
        length = info.length
        precision = info.precision
        scale = info.scale
        collation = info.collation
        isPLP = info.isPLP
    }

    /// The type as SQL Server declares it (for error messages), as ``TypeInfo/sqlTypeName``.
    var sqlTypeName: String {
        TypeInfo(type: type, length: length, precision: precision, scale: scale, collation: collation, isPLP: isPLP).sqlTypeName
    }
}

import Foundation
import TDS

/// Encoders of result-set tokens (COLMETADATA, ROW, NBCROW) for fixtures and replay sessions,
/// built on ``TypeInfo/encode(into:version:)`` and ``TypeInfo/encodeValue(_:into:)``.
extension ServerTokens {
    /// [MS-TDS] 2.2.7.4 COLMETADATA (0x81): Count, then per column UserType (USHORT before TDS
    /// 7.2, ULONG from 7.2), Flags, TYPE_INFO, TableName for text/ntext/image (one US_VARCHAR
    /// before 7.2, NumParts and parts from 7.2) and ColName (B_VARCHAR).
    public static func colMetadata(_ columns: [ColumnMetadata], version: TDSVersion) -> [UInt8] {
        var w = ByteWriter(capacity: 16 + columns.count * 16)
        w.writeUInt8(0x81)
        w.writeUInt16LE(UInt16(clamping: columns.count))
        for c in columns {
            if version.hasLongRowCounts { w.writeUInt32LE(c.userType) } else { w.writeUInt16LE(UInt16(truncatingIfNeeded: c.userType)) }
            w.writeUInt16LE(c.flags.rawValue)
            c.typeInfo.encode(into: &w, version: version)
            let t = c.typeInfo.type
            if t == .text || t == .ntext || t == .image {
                let parts = c.tableName ?? ["oracle"]
                if version.hasLongRowCounts {
                    w.writeUInt8(UInt8(clamping: parts.count))
                    for p in parts { w.writeUSVarChar(p) }
                } else {
                    w.writeUSVarChar(parts.joined(separator: "."))
                }
            }
            w.writeBVarChar(c.name)
        }
        return w.bytes
    }

    /// How a PLP value's chunks are cut ([MS-TDS] 2.2.5.2.3).
    public struct PLPChunking: Hashable, Sendable {
        /// Chunk sizes in bytes, used in turn (the last one repeats); must be positive.
        public var sizes: [Int]
        /// Send PLP_UNKNOWN_LEN (0xFFFFFFFFFFFFFFFE) instead of the total length.
        public var unknownLength: Bool
        /// Chunking with `sizes` (the last repeating), optionally without the total length.
        public init(sizes: [Int], unknownLength: Bool = false) { self.sizes = sizes; self.unknownLength = unknownLength }
    }

    /// Re-cuts an encoded PLP value (total length, chunks, terminator) into other chunks.
    /// PLP NULL (and anything not in PLP form) is returned unchanged.
    static func rechunkPLP(_ encoded: [UInt8], _ chunking: PLPChunking) -> [UInt8] {
        var r = ByteReader(encoded)
        guard let total = try? r.readUInt64LE(), total != 0xFFFF_FFFF_FFFF_FFFF else { return encoded }
        var data: [UInt8] = []
        while let n = try? r.readUInt32LE(), n != 0 {
            guard let chunk = try? r.readBytes(Int(n)) else { return encoded }
            data += chunk
        }
        var w = ByteWriter(capacity: data.count + 64)
        w.writeUInt64LE(chunking.unknownLength ? 0xFFFF_FFFF_FFFF_FFFE : UInt64(data.count))
        var i = 0, k = 0
        while i < data.count {
            let size = max(1, chunking.sizes.isEmpty ? 8000 : chunking.sizes[min(k, chunking.sizes.count - 1)])
            let n = min(size, data.count - i)
            w.writeUInt32LE(UInt32(n))
            w.writeBytes(data[i ..< i + n])
            i += n; k += 1
        }
        w.writeUInt32LE(0)
        return w.bytes
    }

    /// One value as ROW data, PLP values re-chunked when `chunking` is given.
    static func encodeCell(_ value: SQLValue, column: TypeInfo, chunking: PLPChunking?) throws(TDSDecodingError) -> [UInt8] {
        var w = ByteWriter()
        try column.encodeValue(value, into: &w)
        if column.isPLP, let chunking { return rechunkPLP(w.bytes, chunking) }
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.19 ROW (0xD1): every column's value in order.
    public static func row(_ values: [SQLValue], columns: [ColumnMetadata],
                           chunking: [PLPChunking?] = []) throws(TDSDecodingError) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xD1)
        for (i, c) in columns.enumerated() {
            let v = i < values.count ? values[i] : .null
            w.writeBytes(try encodeCell(v, column: c.typeInfo, chunking: i < chunking.count ? chunking[i] : nil))
        }
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.15 NBCROW (0xD2, TDS 7.3+): a null bitmap (bit i of byte i/8 set = column
    /// i is NULL), then the values of the non-NULL columns.
    public static func nbcRow(_ values: [SQLValue], columns: [ColumnMetadata],
                              chunking: [PLPChunking?] = []) throws(TDSDecodingError) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xD2)
        var bitmap = [UInt8](repeating: 0, count: (columns.count + 7) / 8)
        for i in columns.indices where i >= values.count || values[i].isNull { bitmap[i / 8] |= 1 << UInt8(i % 8) }
        w.writeBytes(bitmap)
        for (i, c) in columns.enumerated() where i < values.count && !values[i].isNull {
            w.writeBytes(try encodeCell(values[i], column: c.typeInfo, chunking: i < chunking.count ? chunking[i] : nil))
        }
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.19 RETURNVALUE (0xAC): ParamOrdinal, ParamName (B_VARCHAR), Status (0x01
    /// output parameter, 0x02 UDF result), UserType (USHORT before 7.2, ULONG from 7.2), Flags,
    /// TYPE_INFO, then the value as in ROW (PLP re-chunked when `chunking` is given).
    public static func returnValue(ordinal: UInt16, name: String, status: UInt8 = 0x01, userType: UInt32 = 0,
                                   flags: ColumnFlags = [.nullable], type: TypeInfo, value: SQLValue,
                                   chunking: PLPChunking? = nil, version: TDSVersion) throws(TDSDecodingError) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xAC)
        w.writeUInt16LE(ordinal)
        w.writeBVarChar(name)
        w.writeUInt8(status)
        if version.hasLongRowCounts { w.writeUInt32LE(userType) } else { w.writeUInt16LE(UInt16(truncatingIfNeeded: userType)) }
        w.writeUInt16LE(flags.rawValue)
        type.encode(into: &w, version: version)
        w.writeBytes(try encodeCell(value, column: type, chunking: chunking))
        return w.bytes
    }
}

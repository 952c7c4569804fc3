// libFuzzer harness: TokenStreamDecoder ([MS-TDS] 2.2.7) inside a result set: the decoder is
// first given a COLMETADATA (byte 0 picks which: one column of each type, or all of them), so
// the fuzzed bytes are decoded as ROW/NBCROW/… values of known columns. Byte 1 picks the chunk
// size. Invariants as for TokenStream.
import TDS

let collation = Collation.sqlLatin1GeneralCP1CIAS

let contextTypes: [TypeInfo] = [
    .int, .bigint, .smallint, .tinyint, .bit, .real, .float, .money, .smallMoney, .datetime,
    .smallDateTime, .uniqueIdentifier, .date, .time(scale: 7), .time(scale: 0), .datetime2(scale: 7),
    .datetime2(scale: 3), .datetimeOffset(scale: 7), .datetimeOffset(scale: 0),
    .decimal(precision: 38, scale: 10), .decimal(precision: 5, scale: 2), .numeric(precision: 19, scale: 0),
    .nvarchar(50), .nvarchar(nil), .varchar(50), .varchar(nil), .char(10), .nchar(10),
    .varbinary(50), .varbinary(nil), .binary(16), .text(), .ntext(), .image, .xml, .sqlVariant,
    TypeInfo(type: .int4, length: 4), TypeInfo(type: .int8, length: 8), TypeInfo(type: .flt8, length: 8),
    TypeInfo(type: .datetime, length: 8), TypeInfo(type: .money4, length: 4), TypeInfo(type: .bit, length: 1),
    TypeInfo(type: .varchar, length: 30, collation: collation), TypeInfo(type: .varbinary, length: 30),
    TypeInfo(type: .decimal, length: 17, precision: 38, scale: 4),
    TypeInfo(type: .udt, length: 0xFFFF, isPLP: true,
             udt: UDTInfo(maxByteSize: 0xFFFF, databaseName: "db", schemaName: "sys", typeName: "geography",
                          assemblyQualifiedName: "Microsoft.SqlServer.Types.SqlGeography")),
    .varchar(50, collation: Collation(lcid: 0x0411)),
]

func column(_ t: TypeInfo, _ i: Int) -> ColumnMetadata {
    ColumnMetadata(typeInfo: t, tableName: t.type == .text || t.type == .ntext || t.type == .image ? ["dbo", "t"] : nil,
                   name: "c\(i)")
}

let contexts: [[UInt8]] = {
    var out: [[UInt8]] = []
    for (i, t) in contextTypes.enumerated() {
        var w = ByteWriter()
        ColMetadata(columns: [column(t, i)]).encode(into: &w, version: .v7_4)
        out.append(w.bytes)
    }
    var w = ByteWriter()
    ColMetadata(columns: contextTypes.enumerated().map { column($1, $0) }).encode(into: &w, version: .v7_4)
    out.append(w.bytes)
    return out
}()

/// A decoder that has read each context, copied for every pass (the context is decoded once).
let primedContexts: [TokenStreamDecoder] = contexts.map { primedDecoder(version: .v7_4, prefix: $0) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenStreamInResult(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard input.count >= 2 else { return 0 }
    let context = Int(input[0]) % contexts.count
    let chunk = Int(input[1]) % 64 + 1
    checkStream(Array(input.dropFirst(2)), from: primedContexts[context], prefixCount: contexts[context].count,
                chunk: chunk)
    return 0
}

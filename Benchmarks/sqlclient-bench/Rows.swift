import Foundation
import SQLClient
import TDS

/// The `Decodable` read path: each workload's rows decoded with `row.decode(T.self)` into a
/// struct of its columns (the README's quick start), every field folded into a checksum.
///
/// The fields are the Swift types a user would pick (`Decimal` for decimal and money, `Date`
/// for the date types, `[UInt8]` for binary), so this checksum is not the value digest of
/// ``Digest``: its expected value is computed from the generated rows decoded through the same
/// ``SQLRow/decode(_:)`` (``Workload/expectedDecodableChecksum()``), and the streamed rows
/// must agree with it.
protocol BenchRow: Decodable {
    /// Folds every field, in column order, into `c` (as `c = c &* Digest.mix &+ digest`).
    func fold(into c: inout UInt64)
    /// Hands its large values (vector, varbinary) to the byte-for-byte check, in column order.
    func check(into check: inout LargeValueCheck)
}

extension BenchRow {
    func check(into check: inout LargeValueCheck) {}
}

enum FieldDigest {
    @inline(__always) static func fold(_ c: inout UInt64, _ d: UInt64) { c = c &* Digest.mix &+ d }

    @inline(__always) static func of<I: FixedWidthInteger>(_ v: I?) -> UInt64 {
        guard let v else { return Digest.null }
        return UInt64(truncatingIfNeeded: Int64(truncatingIfNeeded: v))
    }
    @inline(__always) static func of(_ v: Bool?) -> UInt64 { v.map { $0 ? 1 : 0 } ?? Digest.null }
    @inline(__always) static func of(_ v: Double?) -> UInt64 { v?.bitPattern ?? Digest.null }
    @inline(__always) static func of(_ v: Float?) -> UInt64 { v.map { Double($0).bitPattern } ?? Digest.null }
    @inline(__always) static func of(_ v: Date?) -> UInt64 { v?.timeIntervalSinceReferenceDate.bitPattern ?? Digest.null }
    @inline(__always) static func of(_ v: UUID?) -> UInt64 {
        guard let v else { return Digest.null }
        return withUnsafeBytes(of: v.uuid) { Digest.bytes($0, stride: 1) }
    }
    @inline(__always) static func of(_ v: String?) -> UInt64 {
        guard var v else { return Digest.null }
        return v.withUTF8 { Digest.bytes($0, stride: 1) }
    }
    @inline(__always) static func of(_ v: [UInt8]?) -> UInt64 {
        guard let v else { return Digest.null }
        return Digest.bytes(v, stride: 997)
    }
    /// As `[UInt8]`'s (the typed path reads varbinary as `Data`; the `Decodable` struct as `[UInt8]`).
    @inline(__always) static func of(_ v: Data?) -> UInt64 {
        guard let v else { return Digest.null }
        return v.withUnsafeBytes { Digest.bytes($0, stride: 997) }
    }
    /// The bytes of Foundation's `Decimal` (exponent, flags, 128-bit mantissa): both sides build
    /// their `Decimal` through the same conversion, so equal values have equal bytes.
    @inline(__always) static func of(_ v: Decimal?) -> UInt64 {
        guard let v else { return Digest.null }
        return withUnsafeBytes(of: v) { raw in
            var d: UInt64 = 0
            var i = 0
            while i + 4 <= raw.count {
                d = d &* 31 &+ UInt64(raw.loadUnaligned(fromByteOffset: i, as: UInt32.self))
                i += 4
            }
            return d
        }
    }
}

struct NarrowRow: BenchRow {
    var id: Int32
    func fold(into c: inout UInt64) { FieldDigest.fold(&c, FieldDigest.of(id)) }
}

struct WideRow: BenchRow {
    var id: Int32
    var quantity: Int32?
    var account: Int64?
    var code: Int16?
    var level: UInt8?
    var active: Bool?
    var ratio: Double?
    var score: Float?
    var amount: Decimal?
    var price: Decimal?
    var created: Date?
    var updated: Date?
    var birthday: Date?
    var guid: UUID?
    var name: String?
    var street: String?
    var tag: String?
    var hash: [UInt8]?
    var serial: Int64
    var weight: Double

    func fold(into c: inout UInt64) {
        typealias F = FieldDigest
        F.fold(&c, F.of(id)); F.fold(&c, F.of(quantity)); F.fold(&c, F.of(account)); F.fold(&c, F.of(code))
        F.fold(&c, F.of(level)); F.fold(&c, F.of(active)); F.fold(&c, F.of(ratio)); F.fold(&c, F.of(score))
        F.fold(&c, F.of(amount)); F.fold(&c, F.of(price)); F.fold(&c, F.of(created)); F.fold(&c, F.of(updated))
        F.fold(&c, F.of(birthday)); F.fold(&c, F.of(guid)); F.fold(&c, F.of(name)); F.fold(&c, F.of(street))
        F.fold(&c, F.of(tag)); F.fold(&c, F.of(hash)); F.fold(&c, F.of(serial)); F.fold(&c, F.of(weight))
    }
}

struct StringsRow: BenchRow {
    var ascii: String?
    var unicode: String?
    func fold(into c: inout UInt64) {
        FieldDigest.fold(&c, FieldDigest.of(ascii)); FieldDigest.fold(&c, FieldDigest.of(unicode))
    }
}

struct ExactRow: BenchRow {
    var amount: Decimal?
    var balance: Decimal?
    var price: Decimal?
    var at: Date?
    func fold(into c: inout UInt64) {
        typealias F = FieldDigest
        F.fold(&c, F.of(amount)); F.fold(&c, F.of(balance)); F.fold(&c, F.of(price)); F.fold(&c, F.of(at))
    }
}

struct BlobRow: BenchRow {
    var blob: [UInt8]?
    func fold(into c: inout UInt64) { FieldDigest.fold(&c, FieldDigest.of(blob)) }
    func check(into check: inout LargeValueCheck) { check.add(blob) }
}

struct VectorRow: BenchRow {
    var id: Int32
    var embedding: [Float]?
    func fold(into c: inout UInt64) {
        FieldDigest.fold(&c, FieldDigest.of(id)); FieldDigest.fold(&c, embedding.map(Digest.floats) ?? Digest.null)
    }
    func check(into check: inout LargeValueCheck) { check.add(embedding) }
}

extension Workload {
    /// The struct `row.decode(_:)` fills for this workload.
    var rowType: any BenchRow.Type {
        switch name {
        case "narrow": return NarrowRow.self
        case "strings": return StringsRow.self
        case "exact": return ExactRow.self
        case "varbinary": return BlobRow.self
        case "vector": return VectorRow.self
        default: return WideRow.self
        }
    }

    /// The result set's columns as a client sees them.
    var sqlColumns: SQLColumns {
        SQLColumns(columns.map { SQLColumn(name: $0.name, typeInfo: $0.typeInfo, isNullable: $0.isNullable) })
    }

    /// The checksum of the `Decodable` path: the generated rows decoded into ``rowType`` and
    /// folded in order (see ``BenchRow``).
    func expectedDecodableChecksum() throws -> UInt64 {
        try expectedDecodableChecksum(rowType)
    }

    private func expectedDecodableChecksum<T: BenchRow>(_ type: T.Type) throws -> UInt64 {
        let columns = sqlColumns
        // Folding a row into a running checksum c gives c * mix^n + f0 (n fields, f0 the fold
        // from 0): keep (f0, mix^n) per distinct row and replay the stream's rows in order.
        var folds: [(f0: UInt64, mixN: UInt64)] = []
        for i in 0 ..< min(blockSize, max(rows, 1)) {
            let row = try SQLRow(columns: columns, values: makeRow(i)).decode(T.self)
            var zero: UInt64 = 0, one: UInt64 = 1
            row.fold(into: &zero)
            row.fold(into: &one)
            folds.append((zero, one &- zero))
        }
        var c: UInt64 = 0
        for r in 0 ..< rows {
            let f = folds[r % folds.count]
            c = c &* f.mixN &+ f.f0
        }
        return c
    }
}

/// The typed read path: `connection.query(_:).decode((A, B, …).self)`, each row a tuple of the
/// Swift types ``Workload/rowType``'s struct has (in column order), folded field by field as
/// ``BenchRow/fold(into:)`` folds the struct: its checksum is the `Decodable` path's.
enum TypedRows {
    static func readAll(_ w: Workload, _ connection: SQLConnection, _ check: inout LargeValueCheck,
                        isolation: isolated (any Actor)? = #isolation) async throws -> (Int, UInt64) {
        typealias F = FieldDigest
        let query = SQLQuery(unsafeSQL: w.sql)
        var rows = 0
        var c: UInt64 = 0
        switch w.name {
        case "narrow":
            for try await id in connection.query(query).decode(Int32.self) {
                rows += 1
                F.fold(&c, F.of(id))
            }
        case "strings":
            for try await (ascii, unicode) in connection.query(query).decode((String?, String?).self) {
                rows += 1
                F.fold(&c, F.of(ascii)); F.fold(&c, F.of(unicode))
            }
        case "exact":
            for try await (amount, balance, price, at) in connection.query(query).decode((Decimal?, Decimal?, Decimal?, Date?).self) {
                rows += 1
                F.fold(&c, F.of(amount)); F.fold(&c, F.of(balance)); F.fold(&c, F.of(price)); F.fold(&c, F.of(at))
            }
        case "varbinary":
            // As Data (the type a user picks for a BLOB), folded as BlobRow's [UInt8].
            for try await blob in connection.query(query).decode(Data?.self) {
                rows += 1
                F.fold(&c, F.of(blob))
                check.add(blob)
            }
        case "vector":
            // As VectorRow folds: the id, then the embedding's floats (NULL as Digest.null).
            for try await (id, embedding) in connection.query(query).decode((Int32, [Float]?).self) {
                rows += 1
                F.fold(&c, F.of(id)); F.fold(&c, embedding.map(Digest.floats) ?? Digest.null)
                check.add(embedding)
            }
        default:
            let types = (Int32, Int32?, Int64?, Int16?, UInt8?, Bool?, Double?, Float?, Decimal?, Decimal?,
                         Date?, Date?, Date?, UUID?, String?, String?, String?, [UInt8]?, Int64, Double).self
            for try await (id, quantity, account, code, level, active, ratio, score, amount, price,
                           created, updated, birthday, guid, name, street, tag, hash, serial, weight) in connection.query(query).decode(types) {
                rows += 1
                F.fold(&c, F.of(id)); F.fold(&c, F.of(quantity)); F.fold(&c, F.of(account)); F.fold(&c, F.of(code))
                F.fold(&c, F.of(level)); F.fold(&c, F.of(active)); F.fold(&c, F.of(ratio)); F.fold(&c, F.of(score))
                F.fold(&c, F.of(amount)); F.fold(&c, F.of(price)); F.fold(&c, F.of(created)); F.fold(&c, F.of(updated))
                F.fold(&c, F.of(birthday)); F.fold(&c, F.of(guid)); F.fold(&c, F.of(name)); F.fold(&c, F.of(street))
                F.fold(&c, F.of(tag)); F.fold(&c, F.of(hash)); F.fold(&c, F.of(serial)); F.fold(&c, F.of(weight))
            }
        }
        return (rows, c)
    }
}

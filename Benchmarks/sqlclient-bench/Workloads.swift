import Foundation
import SQLClientTesting
import TDS

/// One generated result stream: its columns, how rows are made, and its expected checksum.
///
/// A stream is COLMETADATA, `rows` rows (ROW, or NBCROW for a row holding a NULL, as SQL Server
/// does when it is shorter) and DONE with the row count. Rows cycle through a block of
/// `blockSize` distinct generated rows, so a million-row stream is built by copying bytes;
/// nothing in either client can tell (no decoder caches values).
struct Workload: Sendable {
    var name: String
    var summary: String
    var columns: [ColumnMetadata]
    var rows: Int
    /// Distinct rows before the pattern repeats.
    var blockSize: Int
    /// The generated values of row `i` of the block.
    var makeRow: @Sendable (Int) -> [SQLValue]

    /// The SQL text the bench sends (the replay server matches it).
    var sql: String { "SELECT /* sqlclient-bench */ * FROM \(name)" }

    static let names = ["narrow", "wide", "strings", "exact", "varbinary", "vector"]

    /// The workloads of a run: 1,000,000 rows each by default (`rows`), one `blobMB` value for varbinary.
    static func named(_ name: String, rows: Int, blobMB: Int) -> Workload? {
        switch name {
        case "narrow": return narrow(rows: rows)
        case "wide": return wide(rows: rows)
        case "strings": return strings(rows: rows)
        case "exact": return exact(rows: rows)
        case "varbinary": return varbinary(megabytes: blobMB)
        case "vector": return vector(rows: rows)
        case "stream-1gb": return stream1GB()
        default: return nil
        }
    }

    // MARK: The workloads

    /// One `int NOT NULL` column (INT4).
    static func narrow(rows: Int) -> Workload {
        Workload(name: "narrow", summary: "1 column: int NOT NULL",
                 columns: [ColumnMetadata(flags: [], typeInfo: TypeInfo(type: .int4, length: 4), name: "id")],
                 rows: rows, blockSize: 4096) { i in
            [.int(Int32(truncatingIfNeeded: i &* 2_654_435_761))]
        }
    }

    /// 20 columns of common types, nullable ones NULL about 1 time in 20.
    static func wide(rows: Int, name: String = "wide") -> Workload {
        let latin = Collation.sqlLatin1GeneralCP1CIAS
        func col(_ name: String, _ t: TypeInfo, nullable: Bool = true) -> ColumnMetadata {
            ColumnMetadata(flags: nullable ? [.nullable] : [], typeInfo: t, name: name)
        }
        let columns: [ColumnMetadata] = [
            col("id", TypeInfo(type: .int4, length: 4), nullable: false),
            col("quantity", .int), col("account", .bigint), col("code", .smallint), col("level", .tinyint),
            col("active", .bit), col("ratio", .float), col("score", .real),
            col("amount", .decimal(precision: 18, scale: 4)), col("price", .money),
            col("created", .datetime), col("updated", .datetime2(scale: 7)), col("birthday", .date),
            col("guid", .uniqueIdentifier), col("name", .nvarchar(50)), col("street", .varchar(50, collation: latin)),
            col("tag", .nvarchar(10)), col("hash", .varbinary(16)),
            col("serial", TypeInfo(type: .int8, length: 8), nullable: false),
            col("weight", TypeInfo(type: .flt8, length: 8), nullable: false),
        ]
        return Workload(name: name, summary: "20 columns: int, bigint, smallint, tinyint, bit, float, real, decimal(18,4), money, datetime, datetime2, date, uniqueidentifier, nvarchar(50), varchar(50), nvarchar(10), varbinary(16), ~5% NULL",
                        columns: columns, rows: rows, blockSize: 1000) { i in
            var v: [SQLValue] = []
            v.reserveCapacity(20)
            v.append(.int(Int32(truncatingIfNeeded: i)))
            v.append(.int(Int32(truncatingIfNeeded: i &* 37 &- 5000)))
            v.append(.bigint(Int64(i) &* 1_000_003 &- 7))
            v.append(.smallint(Int16(truncatingIfNeeded: i % 30_000 - 15_000)))
            v.append(.tinyint(UInt8(truncatingIfNeeded: i)))
            v.append(.bit(i % 3 == 0))
            v.append(.float(Double(i) * 1.25 + 0.5))
            v.append(.real(Float(i % 1000) * 0.5))
            v.append(.decimal(SQLDecimal(isNegative: i % 5 == 0, precision: 18, scale: 4, magnitude: UInt128(i * 12_345 + 6789))))
            v.append(.money(SQLMoney(units: Int64(i) * 10_000 + 1234)))
            v.append(.datetime(SQLDateTime(days: Int32(40_000 + i % 3000), ticks: UInt32((i * 7919) % 25_920_000))))
            v.append(.datetime2(SQLDateTime2(date: SQLDate(days: Int32(730_000 + i % 5000)),
                                             time: SQLTime(ticks: UInt64(i) &* 123_456_789 % 864_000_000_000, scale: 7))))
            v.append(.date(SQLDate(days: Int32(737_000 + i % 3000))))
            var g = [UInt8](repeating: 0, count: 16)
            for k in 0 ..< 16 { g[k] = UInt8(truncatingIfNeeded: i &* 131 &+ k &* 17) }
            v.append(.uniqueIdentifier(UUID(uuid: (g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]))))
            v.append(.string(Workload.asciiText(i, length: 10 + i % 41)))
            v.append(.string(i % 7 == 0 ? "Straße \(i) café" : "\(i) Main Street, Springfield"))
            v.append(.string("t\(i % 1000)"))
            v.append(.binary((0 ..< (8 + i % 9)).map { UInt8(truncatingIfNeeded: i &+ $0 &* 29) }))
            v.append(.bigint(Int64(i) << 20))
            v.append(.float(Double(i) / 7))
            // About one nullable cell in 20 is NULL.
            for c in 1 ..< 18 where (i &* 7 &+ c &* 13) % 20 == 0 { v[c] = .null }
            return v
        }
    }

    /// Two nvarchar(50) columns: ASCII text, and text that is not ASCII (Latin, Greek, CJK,
    /// emoji as surrogate pairs), 10 to 50 UTF-16 units.
    static func strings(rows: Int) -> Workload {
        let columns = [ColumnMetadata(typeInfo: .nvarchar(50), name: "ascii"),
                       ColumnMetadata(typeInfo: .nvarchar(50), name: "unicode")]
        return Workload(name: "strings", summary: "2 columns: nvarchar(50) ASCII, nvarchar(50) non-ASCII",
                        columns: columns, rows: rows, blockSize: 2000) { i in
            [.string(Workload.asciiText(i, length: 10 + i % 41)), .string(Workload.unicodeText(i, units: 10 + (i * 7) % 41))]
        }
    }

    /// decimal(18,4), decimal(38,12), money, datetime2(7).
    static func exact(rows: Int) -> Workload {
        let columns = [ColumnMetadata(typeInfo: .decimal(precision: 18, scale: 4), name: "amount"),
                       ColumnMetadata(typeInfo: .decimal(precision: 38, scale: 12), name: "balance"),
                       ColumnMetadata(typeInfo: .money, name: "price"),
                       ColumnMetadata(typeInfo: .datetime2(scale: 7), name: "at")]
        return Workload(name: "exact", summary: "4 columns: decimal(18,4), decimal(38,12), money, datetime2(7)",
                        columns: columns, rows: rows, blockSize: 4096) { i in
            [.decimal(SQLDecimal(isNegative: i % 3 == 0, precision: 18, scale: 4, magnitude: UInt128(i) * 987_654 + 12_345)),
             .decimal(SQLDecimal(isNegative: i % 4 == 1, precision: 38, scale: 12, magnitude: UInt128(i) * 1_234_567_890_123 + 7)),
             .money(SQLMoney(units: Int64(i) * 99_991 - 5_000_000)),
             .datetime2(SQLDateTime2(date: SQLDate(days: Int32(735_000 + i % 4000)),
                                     time: SQLTime(ticks: UInt64(i) &* 987_654_321 % 864_000_000_000, scale: 7)))]
        }
    }

    /// One varbinary(max) value of `megabytes` MB (10^6 bytes) in 8,000-byte PLP chunks.
    static func varbinary(megabytes: Int) -> Workload {
        let size = megabytes * 1_000_000
        return Workload(name: "varbinary", summary: "1 row: varbinary(max) of \(megabytes) MB in PLP chunks of 8000",
                        columns: [ColumnMetadata(typeInfo: .varbinary(nil), name: "blob")],
                        rows: 1, blockSize: 1) { _ in
            [.binary([UInt8](unsafeUninitializedCapacity: size) { buf, n in
                for k in 0 ..< size { buf[k] = UInt8(truncatingIfNeeded: k &* 31 &+ 7) }
                n = size
            })]
        }
    }

    /// The most rows of the vector workload: each row is 8,010 bytes (80 MB of stream at 10,000).
    static let vectorRowLimit = 10_000

    /// SQL Server 2025's vector at its largest: `id int NOT NULL`, `embedding vector(1998)` (float32,
    /// 8,000 bytes a value), NULL one row in 50; at most ``vectorRowLimit`` rows.
    static func vector(rows: Int) -> Workload {
        let columns = [ColumnMetadata(flags: [], typeInfo: TypeInfo(type: .int4, length: 4), name: "id"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 1998), name: "embedding")]
        return Workload(name: "vector", summary: "2 columns: int NOT NULL, vector(1998) float32 (8,000 bytes), 2% NULL",
                        columns: columns, rows: min(rows, vectorRowLimit), blockSize: 100) { i in
            if i % 50 == 49 { return [.int(Int32(i)), .null] }
            return [.int(Int32(i)), .vector(SQLVector((0 ..< 1998).map { k in Float((i &* 31 &+ k &* 7) % 2001 - 1000) / 1024 }))]
        }
    }

    /// The wide rows, repeated to just over 1 GiB of token stream (the memory test).
    static func stream1GB() -> Workload {
        var w = wide(rows: 0, name: "stream-1gb")
        w.summary = "the wide rows repeated to 1 GiB of token stream (memory test)"
        let block = w.encodeBlock()
        w.rows = ((1 << 30) + block.count - 1) / block.count * w.blockSize
        return w
    }

    static func asciiText(_ i: Int, length: Int) -> String {
        let words = Array("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ".utf8)
        var s = Array("r\(i) ".utf8)
        var k = i % words.count
        while s.count < length { s.append(words[k]); k = (k + 1) % words.count }
        s.removeLast(s.count - length)
        // No trailing blank: db-lib's NTBSTRINGBIND (the old client's binding) strips them.
        if s.last == UInt8(ascii: " ") { s[s.count - 1] = UInt8(ascii: ".") }
        return String(decoding: s, as: UTF8.self)
    }

    static func unicodeText(_ i: Int, units: Int) -> String {
        let pieces = ["Zoë", " Ñandú", " Ελλάδα", " 東京都", " Straße", " 😀", " Ωmega", " café", " Привет", " 한국어"]
        var s = ""
        var k = i % pieces.count
        while s.utf16.count < units {
            let p = pieces[k]
            if s.utf16.count + p.utf16.count > units { break }
            s += p
            k = (k + 1) % pieces.count
        }
        while s.utf16.count < units { s += "é" }
        return s
    }

    // MARK: Encoding

    /// The rows of one block as ROW/NBCROW tokens.
    func encodeBlock() -> [UInt8] {
        var out: [UInt8] = []
        for i in 0 ..< min(blockSize, max(rows, blockSize)) {
            let values = makeRow(i)
            do {
                if values.contains(where: \.isNull) {
                    out += try ServerTokens.nbcRow(values, columns: columns)
                } else {
                    out += try ServerTokens.row(values, columns: columns)
                }
            } catch {
                fatalError("sqlclient-bench: cannot encode row \(i) of \(name): \(error)")
            }
        }
        return out
    }

    /// The whole token stream: COLMETADATA, the rows, DONE (final, with the count).
    func encodeStream() -> [UInt8] {
        let head = ServerTokens.colMetadata(columns, version: .v7_4)
        let block = encodeBlock()
        let done = ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(rows), version: .v7_4)
        let full = rows / blockSize, rest = rows % blockSize
        var restBytes: [UInt8] = []
        if rest > 0 {
            // The first `rest` rows of the block: re-encode them (cheap, < one block).
            var partial = self
            partial.rows = rest
            partial.blockSize = rest
            restBytes = partial.encodeBlock()
        }
        var out: [UInt8] = []
        out.reserveCapacity(head.count + block.count * full + restBytes.count + done.count)
        out += head
        for _ in 0 ..< full { out += block }
        out += restBytes
        out += done
        return out
    }

    /// The checksum both clients must arrive at (``Digest``, row by row, column by column).
    func expectedChecksum() -> UInt64 {
        var c: UInt64 = 0
        var rowsDone = 0
        // Fold the block's rows `rows` times in order; the digest of a row depends only on its values.
        var digests: [[UInt64]] = []
        for i in 0 ..< min(blockSize, max(rows, 1)) {
            digests.append(makeRow(i).map(Digest.of))
        }
        while rowsDone < rows {
            for d in digests[rowsDone % digests.count] { c = c &* Digest.mix &+ d }
            rowsDone += 1
        }
        return c
    }
}

/// The per-value digest shared with Benchmarks/freetds/bench.c: folded as
/// `checksum = checksum &* mix &+ digest` in row and column order.
enum Digest {
    static let mix: UInt64 = 1_099_511_628_211
    static let null: UInt64 = 0x9E37_79B9_7F4A_7C15
    /// Days from 0001-01-01 to 1900-01-01 (FreeTDS counts dates from 1900).
    static let days1900 = 693_595

    @inline(__always)
    static func bytes<C: Collection>(_ b: C, stride: Int) -> UInt64 where C.Element == UInt8, C.Index == Int {
        var d = UInt64(b.count)
        var i = b.startIndex
        while i < b.endIndex { d &+= UInt64(b[i]); i += stride }
        return d
    }

    /// Every element's bits, summed, and the count.
    @inline(__always)
    static func floats(_ f: [Float]) -> UInt64 {
        var d = UInt64(f.count)
        for x in f { d &+= UInt64(x.bitPattern) }
        return d
    }

    @inline(__always)
    static func of(_ v: SQLValue) -> UInt64 {
        switch v {
        case .null: return null
        case .bit(let b): return b ? 1 : 0
        case .tinyint(let x): return UInt64(x)
        case .smallint(let x): return UInt64(bitPattern: Int64(x))
        case .int(let x): return UInt64(bitPattern: Int64(x))
        case .bigint(let x): return UInt64(bitPattern: x)
        case .real(let x): return Double(x).bitPattern
        case .float(let x): return x.bitPattern
        case .decimal(let d):
            let m = UInt64(truncatingIfNeeded: d.magnitude)
            return d.isNegative ? 0 &- m : m
        case .money(let m), .smallMoney(let m): return UInt64(bitPattern: m.units)
        case .datetime(let t): return UInt64(bitPattern: Int64(t.days) * 25_920_000 + Int64(t.ticks))
        case .date(let d): return UInt64(bitPattern: Int64(Int(d.days) - days1900))
        case .datetime2(let t):
            return UInt64(bitPattern: Int64(Int(t.date.days) - days1900) * 864_000_000_000 + Int64(t.time.hundredNanoseconds))
        case .uniqueIdentifier(let u):
            let t = u.uuid
            return withUnsafeBytes(of: t) { bytes($0, stride: 1) }
        case .string(let s), .xml(let s):
            var s = s
            return s.withUTF8 { bytes($0, stride: 1) }
        case .binary(let b), .udt(let b): return bytes(b, stride: 997)
        case .vector(let v): return floats(v.values)
        default: return 0
        }
    }
}

/// The byte-for-byte check of the large values (issue 43): every vector's and varbinary's bytes,
/// in order and position by position (``ByteHasher``), folded value after value, against what
/// the generated rows give. ``Digest`` (shared with the C peers) samples a binary value's bytes
/// (every 997th); this reads them all, so a wrong byte anywhere fails the run. It runs in a run
/// of its own (`client --verify-values`, which the driver makes once per large-value path before
/// timing it): hashing in the timed loop would slow a streamed read, which overlaps the reader
/// and the consumer, more than its own time (also kept apart, ``seconds``, and taken out).
struct LargeValueCheck {
    /// The expected fold, nil for a workload without large values (nothing is checked).
    let expected: UInt64?
    private(set) var actual: UInt64 = 0
    private(set) var values = 0
    /// Time spent hashing, seconds.
    private(set) var seconds = 0.0

    init(_ w: Workload, on: Bool) { expected = on ? w.expectedLargeValueChecksum() : nil }

    var isOn: Bool { expected != nil }

    /// Folds one value's bytes (a vector's elements, little-endian as on the wire; a binary value's bytes).
    mutating func add(_ raw: UnsafeRawBufferPointer) {
        let t0 = Measure.now()
        var h = ByteHasher()
        h.update(raw)
        fold(h.finish())
        seconds += Measure.now() - t0
    }

    mutating func add(_ v: SQLValue) {
        guard isOn else { return }
        switch v {
        case .binary(let b): b.withUnsafeBytes { add($0) }
        case .vector(let x): x.values.withUnsafeBytes { add($0) }
        default: break
        }
    }

    mutating func add(_ f: [Float]?) { if isOn, let f { f.withUnsafeBytes { add($0) } } }
    mutating func add(_ b: [UInt8]?) { if isOn, let b { b.withUnsafeBytes { add($0) } } }
    mutating func add(_ d: Data?) { if isOn, let d { d.withUnsafeBytes { add($0) } } }

    /// A value streamed in pieces: its hash, as ``add(_:)-(UnsafeRawBufferPointer)`` would give.
    mutating func add(chunks h: ByteHasher) { fold(h.finish()) }

    mutating func time<R>(_ body: () -> R) -> R {
        let t0 = Measure.now()
        defer { seconds += Measure.now() - t0 }
        return body()
    }

    private mutating func fold(_ d: UInt64) {
        actual = actual &* Digest.mix &+ d
        values += 1
    }

    /// Exits with status 3 (the driver stops the run) when the values read are not the values sent.
    func verify(_ what: String) {
        guard let expected, expected != actual else { return }
        note("sqlclient-bench: \(what): WRONG VALUE: the large values' byte-for-byte checksum is \(hex(actual)) over \(values) value(s), expected \(hex(expected))")
        exit(3)
    }
}

/// A position-sensitive hash of a value's bytes, 8 at a time (little-endian words), fed in pieces
/// of any size (a streamed value's chunks) with the same result as whole.
struct ByteHasher {
    private var h: UInt64 = 0x243F_6A88_85A3_08D3
    private var pending: UInt64 = 0
    private var pendingCount = 0
    private var count = 0

    @inline(__always) private mutating func mix(_ w: UInt64) {
        h = (h ^ w) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 29
    }

    mutating func update(_ raw: UnsafeRawBufferPointer) {
        var i = 0
        let n = raw.count
        while pendingCount != 0 && i < n {
            pending |= UInt64(raw[i]) << (8 * UInt64(pendingCount))
            pendingCount += 1
            i += 1
            if pendingCount == 8 { mix(pending); pending = 0; pendingCount = 0 }
        }
        while n - i >= 8 {
            mix(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
            i += 8
        }
        while i < n {
            pending |= UInt64(raw[i]) << (8 * UInt64(pendingCount))
            pendingCount += 1
            i += 1
        }
        count += n
    }

    func finish() -> UInt64 {
        var x = self
        if x.pendingCount > 0 { x.mix(x.pending ^ 0xFF) }
        x.mix(UInt64(count))
        return x.h
    }
}

extension Workload {
    /// The fold of ``LargeValueCheck`` over the generated rows in stream order (every non-NULL
    /// vector and binary value); nil for a workload other than vector and varbinary.
    func expectedLargeValueChecksum() -> UInt64? {
        guard name == "vector" || name == "varbinary" else { return nil }
        var perRow: [[UInt64]] = []
        for i in 0 ..< min(blockSize, max(rows, 1)) {
            var digests: [UInt64] = []
            for v in makeRow(i) {
                var h = ByteHasher()
                switch v {
                case .binary(let b): b.withUnsafeBytes { h.update($0) }
                case .vector(let x): x.values.withUnsafeBytes { h.update($0) }
                default: continue
                }
                digests.append(h.finish())
            }
            perRow.append(digests)
        }
        var c: UInt64 = 0
        for r in 0 ..< rows {
            for d in perRow[r % perRow.count] { c = c &* Digest.mix &+ d }
        }
        return c
    }
}

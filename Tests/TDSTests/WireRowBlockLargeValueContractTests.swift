import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// The contract of the row scan for every kind of row (issue 27's wire path for large values):
/// driven as the connection drives it — ``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``
/// into a ``WireRowBlock``, the next input on `.needBytes`, ``TokenStreamDecoder/next()`` on
/// `.otherToken`/`.incremental` — every valid row of a result lands in a block (none comes back
/// from `next()` as a ROW/NBCROW token), the block reads exactly the token decoder's values
/// (``WireRowBlock/values(rows:)`` and ``WireRowBlock/value(row:column:)``), whole, byte by byte,
/// split at random and cut in packets, with small limits too (many blocks); a malformed row gives
/// the token decoder's error (code and offset) under every split. The token decoder alone
/// (``TokenStreamDecoder/next()`` on the whole input) is the oracle.
///
/// Large values: PLP ([MS-TDS] 2.2.5.2.3: varchar(max), nvarchar(max), varbinary(max), xml, UDT,
/// json) and text/ntext/image (2.2.5.2.2 textptr), NULLs (PLP_NULL, textptr length 0, the NBCROW
/// bitmap 2.2.7.15), empty values, unknown-length PLP in many small chunks, values of 100 KiB and
/// more beside bounded columns, several rows and two results; hostile chunking, caps
/// (``TokenStreamDecoder/Options/maximumValueSize``, the 2^31-1 PLP bound), bad UTF-16, cuts at
/// every byte and seeded random mutations. Each run is also checked against its row and byte
/// limits, each block read again once complete, and through its typed reads (String, bytes,
/// `isNull`); a declared length of 2^31-1 must reserve no memory.
///
/// The same harness on bounded columns only (int, nvarchar(50), sql_variant, decimal, datetime2)
/// must pass on any build that has the wire path: that proves the harness. The large-value cases
/// fail, with one message per case naming what broke, until the scan takes such rows.
final class WireRowBlockLargeValueContractTests: XCTestCase {
    typealias Options = TokenStreamDecoder.Options

    // MARK: - Feeding

    /// How the input is cut.
    enum Feed: CustomStringConvertible {
        case whole
        case byteByByte
        /// Pieces of 1...97 bytes (``DecoderVerifier/pieces(of:_:using:)``) drawn from `seed`.
        case random(seed: UInt64)
        /// Pieces of `n` bytes (the last one shorter), as packets of `n` payload bytes.
        case packets(Int)

        var description: String {
            switch self {
            case .whole: return "whole"
            case .byteByByte: return "byte by byte"
            case .random(let seed): return "random split (seed \(seed))"
            case .packets(let n): return "packets of \(n)"
            }
        }

        func pieces(of bytes: [UInt8]) -> [[UInt8]] {
            switch self {
            case .whole:
                var rng = SeededRandom(seed: 0)
                return DecoderVerifier.pieces(of: bytes, .whole, using: &rng)
            case .byteByByte:
                var rng = SeededRandom(seed: 0)
                return DecoderVerifier.pieces(of: bytes, .byteByByte, using: &rng)
            case .random(let seed):
                var rng = SeededRandom(seed: seed)
                return DecoderVerifier.pieces(of: bytes, .random, using: &rng)
            case .packets(let n):
                return stride(from: 0, to: bytes.count, by: n).map { Array(bytes[$0 ..< min($0 + n, bytes.count)]) }
            }
        }
    }

    /// The `limit` and `byteLimit` of every run.
    struct Limits: CustomStringConvertible {
        var rows = 1000
        var bytes = 1 << 30
        var description: String { "limit \(rows) rows, \(bytes) bytes" }
    }

    /// The usual feeds: whole, two random splits, 4 KiB and 8,000-byte packets.
    static let feeds: [Feed] = [.whole, .random(seed: 1), .random(seed: 0x5EED), .packets(4096), .packets(8000)]
    /// The usual limits: one block, a row a block, 3 rows a block, a row a block by bytes, 4 KiB blocks.
    static let limits: [Limits] = [Limits(), Limits(rows: 1), Limits(rows: 3), Limits(bytes: 1), Limits(bytes: 4096)]

    /// What reading a stream gave.
    struct Driven {
        /// Every row, in order: from blocks, and any that came back from `next()` as a token.
        var rows: [[SQLValue]] = []
        /// Every token `next()` returned (ROW/NBCROW included, if any did).
        var tokens: [Token] = []
        /// The error that ended the stream (from `next()` or `finish()`).
        var error: TDSDecodingError?
        /// Rows read from blocks.
        var blockRows = 0
        /// Blocks filled (left on `.limit`, `.incremental`, a new result or DONE, or at the end).
        var blocks = 0
        /// Results with columns for which ``TokenStreamDecoder/makeWireRowBlock()`` gave nil.
        var resultsWithoutBlock = 0
        /// How each run that appended rows or did not ask for bytes ended.
        var ends: [String: Int] = [:]
        /// A block that read differently by `values(rows:)` and `value(row:column:)`, or grew by
        /// other than the rows reported.
        var readMismatch: String?
        /// The loop made no progress.
        var stalled: String?
        /// With `measuresMemory`: the most the process's virtual memory grew beyond its size at the
        /// start, sampled after every piece (``virtualMemoryBytes()``: reserved, untouched memory counts too).
        var virtualMemoryGrowth = 0

        /// Rows that came back from `next()` as ROW or NBCROW tokens.
        var rowTokens: Int { tokens.filter(WireRowBlockLargeValueContractTests.isRow).count }
    }

    static func isRow(_ t: Token) -> Bool {
        switch t {
        case .row, .nbcRow: return true
        default: return false
        }
    }

    /// Reads `bytes` cut as `feed` the way the connection reads a response: runs of rows into
    /// blocks (a new block after `.limit`, `.incremental`, a new COLMETADATA or a DONE), the next
    /// piece on `.needBytes`, ``TokenStreamDecoder/next()`` on `.otherToken`/`.incremental`, then
    /// ``TokenStreamDecoder/finish()``.
    static func drive(_ bytes: [UInt8], _ feed: Feed, options: Options = Options(), limits: Limits = Limits(),
                      measuresMemory: Bool = false) -> Driven {
        let memoryAtStart = measuresMemory ? virtualMemoryBytes() ?? 0 : 0
        var decoder = TokenStreamDecoder(version: .v7_4, options: options)
        var out = Driven()
        var block: WireRowBlock?
        let limits = Limits(rows: Swift.max(1, limits.rows), bytes: limits.bytes)
        var triedResult = false   // makeWireRowBlock() was nil for this result (counted once)
        var budget = 8 * bytes.count + 10_000   // loop steps; a correct decoder needs far fewer
        var blockRowIndices: [Int] = []   // where the current block's rows are in `out.rows`
        var binaryHeld = 0                 // the binary/UDT bytes the current block's rows hold
        func leave() {
            if let b = block, !b.isEmpty {
                out.blocks += 1
                // Read again once the block is complete (it grew after its first rows were read):
                // the same rows.
                let all = b.values(rows: 0 ..< b.rowCount)
                let w = b.columnCount
                if all.count == b.rowCount * w, blockRowIndices.count == b.rowCount {
                    for (r, i) in blockRowIndices.enumerated() where !sameRow(Array(all[r * w ..< (r + 1) * w]), out.rows[i]) {
                        if out.readMismatch == nil { out.readMismatch = "block row \(r) reads \(short(Array(all[r * w ..< (r + 1) * w]))) once the block is complete, \(short(out.rows[i])) when it was appended" }
                        break
                    }
                } else if out.readMismatch == nil {
                    out.readMismatch = "a complete block of \(b.rowCount) rows reads \(all.count) values (\(blockRowIndices.count) rows appended)"
                }
            }
            block = nil
            blockRowIndices = []
            binaryHeld = 0
        }
        func take(_ b: WireRowBlock, _ n: Int) {
            guard n > 0 else { return }
            let run = b.rowCount - n ..< b.rowCount
            let flat = b.values(rows: run)
            let w = b.columnCount
            guard flat.count == n * w else {
                if out.readMismatch == nil { out.readMismatch = "values(rows: \(run)) gave \(flat.count) values for \(n) rows of \(w)" }
                return
            }
            for (k, r) in run.enumerated() {
                let row = Array(flat[k * w ..< (k + 1) * w])
                let cells = (0 ..< w).map { b.value(row: r, column: $0) }
                if !sameRow(row, cells), out.readMismatch == nil {
                    out.readMismatch = "row \(out.rows.count): values(rows:) gives \(short(row)) but value(row:column:) \(short(cells))"
                }
                if let c = (0 ..< w).first(where: { b.isNull(row: r, column: $0) != cells[$0].isNull }), out.readMismatch == nil {
                    out.readMismatch = "row \(out.rows.count) column \(c): isNull(row:column:) is \(b.isNull(row: r, column: c)) for \(short(cells[c]))"
                }
                // The typed String and binary reads: the value's own text or bytes, or NULL, or `.other`.
                for c in 0 ..< w where out.readMismatch == nil {
                    switch b.string(row: r, column: c) {
                    case .value(let t):
                        if case .string(let v) = cells[c], sameUTF8(v, t) { break }
                        out.readMismatch = "row \(out.rows.count) column \(c): string(row:column:) reads \(short(.string(t))) for \(short(cells[c]))"
                    case .null:
                        if !cells[c].isNull { out.readMismatch = "row \(out.rows.count) column \(c): string(row:column:) reads NULL for \(short(cells[c]))" }
                    case .other:
                        break
                    }
                    // The typed binary read likewise.
                    switch b.bytes(row: r, column: c) {
                    case .value(let x):
                        if case .binary(let v) = cells[c], v == x { break }
                        if out.readMismatch == nil { out.readMismatch = "row \(out.rows.count) column \(c): bytes(row:column:) reads \(x.count) bytes for \(short(cells[c]))" }
                    case .null:
                        if !cells[c].isNull, out.readMismatch == nil { out.readMismatch = "row \(out.rows.count) column \(c): bytes(row:column:) reads NULL for \(short(cells[c]))" }
                    case .other:
                        break
                    }
                }
                blockRowIndices.append(out.rows.count)
                out.rows.append(row)
                for v in row {
                    if case .binary(let x) = v { binaryHeld += x.count }
                    if case .udt(let x) = v { binaryHeld += x.count }
                }
            }
            out.blockRows += n
        }
        func step() throws(TDSDecodingError) {
            while true {
                budget -= 1
                if budget < 0 {
                    out.stalled = "no progress: over \(8 * bytes.count + 10_000) loop steps (runs: \(out.ends))"
                    return
                }
                if block == nil {
                    block = decoder.makeWireRowBlock()
                    if block == nil, !decoder.columns.isEmpty, !triedResult {
                        out.resultsWithoutBlock += 1
                        triedResult = true
                    }
                }
                if let b = block, b.rowCount >= limits.rows {
                    // Full (the connection's batch row limit): a new block.
                    leave()
                    continue
                }
                if var b = block {
                    block = nil   // uniquely referenced while it grows
                    // What the block holds: its bytes, and at least its binary values' bytes
                    // (however it keeps them: `byteCount` may leave out values kept apart).
                    let before = b.rowCount, bytesBefore = max(b.byteCount, binaryHeld)
                    // As the connection asks: the rows left of the batch, the block's byte limit.
                    let (n, end) = decoder.appendBufferedRows(to: &b, limit: limits.rows - before, byteLimit: limits.bytes)
                    if b.rowCount != before + n, out.readMismatch == nil {
                        out.readMismatch = "appendBufferedRows reported \(n) rows but the block grew by \(b.rowCount - before)"
                    }
                    // The limits: no more rows than asked, no row into a block already at its byte limit.
                    if n > limits.rows - before, out.readMismatch == nil {
                        out.readMismatch = "appendBufferedRows appended \(n) rows, limit \(limits.rows - before)"
                    }
                    if n > 0, bytesBefore >= limits.bytes, out.readMismatch == nil {
                        out.readMismatch = "appendBufferedRows appended \(n) rows to a block of \(bytesBefore) bytes, byte limit \(limits.bytes)"
                    }
                    take(b, n)
                    block = b
                    if n > 0 || end != .needBytes { out.ends["\(end)", default: 0] += 1 }
                    switch end {
                    case .limit:
                        if n == 0, b.isEmpty {
                            out.stalled = "appendBufferedRows gave (0, .limit) on an empty block (\(limits))"
                            return
                        }
                        leave()
                        continue
                    case .needBytes:
                        return
                    case .incremental:
                        leave()
                    case .otherToken:
                        break
                    }
                }
                guard let token = try decoder.next() else { return }
                out.tokens.append(token)
                switch token {
                case .row(let r): out.rows.append(r.values)
                case .nbcRow(let r): out.rows.append(r.values)
                case .colMetadata:
                    leave()
                    triedResult = false
                case .done, .doneInProc, .doneProc:
                    leave()
                default:
                    break
                }
            }
        }
        do throws(TDSDecodingError) {
            for piece in feed.pieces(of: bytes) {
                decoder.append(piece)
                try step()
                if measuresMemory, let now = virtualMemoryBytes() { out.virtualMemoryGrowth = max(out.virtualMemoryGrowth, now - memoryAtStart) }
                if out.stalled != nil { break }
            }
            if out.stalled == nil { try decoder.finish() }
        } catch {
            out.error = error
        }
        leave()
        return out
    }

    /// The process's virtual memory size in bytes (it counts memory reserved and never touched,
    /// as a buffer reserved for a declared length would be), or nil where it cannot be read.
    static func virtualMemoryBytes() -> Int? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").first.flatMap({ Int($0) }) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return nil
        #endif
    }

    /// The token decoder alone on the whole input, ``TokenStreamDecoder/next()`` only: its rows,
    /// its other tokens and the error that ended it.
    static func oracle(_ bytes: [UInt8], options: Options = Options()) -> Driven {
        var decoder = TokenStreamDecoder(version: .v7_4, options: options)
        var out = Driven()
        decoder.append(bytes)
        do throws(TDSDecodingError) {
            while let token = try decoder.next() {
                switch token {
                case .row(let r): out.rows.append(r.values)
                case .nbcRow(let r): out.rows.append(r.values)
                default: out.tokens.append(token)
                }
            }
            try decoder.finish()
        } catch {
            out.error = error
        }
        return out
    }

    // MARK: - Comparing

    /// Equal values; a NaN equal to a NaN of the same bits (mutated bytes make NaNs); text equal
    /// in its UTF-8 bytes (String's `==` takes "é" and "e\u{301}" as equal).
    static func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)), (.xml(let x), .xml(let y)), (.json(let x), .json(let y)):
            return sameUTF8(x, y)
        case (.real(let x), .real(let y)): return x.bitPattern == y.bitPattern
        case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern
        case (.variant, .variant): return a == b || "\(a)" == "\(b)"
        default: return a == b
        }
    }

    /// The same UTF-8 bytes (compared in one `memcmp`: fast in a debug build too).
    static func sameUTF8(_ x: String, _ y: String) -> Bool {
        var x = x, y = y
        return x.withUTF8 { a in
            y.withUTF8 { b in a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0) }
        }
    }

    static func sameRow(_ a: [SQLValue], _ b: [SQLValue]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
    }

    /// A value's description cut to 60 characters, with its length (a 100 KiB value prints short).
    static func short(_ v: SQLValue) -> String {
        let text = "\(v)"
        return text.count <= 60 ? text : "\(text.prefix(60))… (\(text.count) characters)"
    }

    static func short(_ row: [SQLValue]) -> String { "[" + row.map { short($0) }.joined(separator: ", ") + "]" }

    /// What `got` breaks of the contract against `expected` (the oracle); empty when nothing.
    static func problems(_ got: Driven, _ expected: Driven) -> [String] {
        var out: [String] = []
        if let s = got.stalled { out.append(s) }
        if let m = got.readMismatch { out.append(m) }
        if got.rowTokens > 0 {
            out.append("\(got.rowTokens) of \(got.rows.count) rows came back from next() as ROW/NBCROW tokens instead of landing in a WireRowBlock "
                       + "(makeWireRowBlock() nil for \(got.resultsWithoutBlock) result(s) with columns; runs ended \(got.ends))")
        }
        if got.rows.count != expected.rows.count {
            out.append("\(got.rows.count) rows, the token decoder reads \(expected.rows.count)")
        }
        if let i = (0 ..< min(got.rows.count, expected.rows.count)).first(where: { !sameRow(got.rows[$0], expected.rows[$0]) }) {
            let (g, e) = (got.rows[i], expected.rows[i])
            let c = (0 ..< min(g.count, e.count)).first { !same(g[$0], e[$0]) } ?? -1
            out.append("row \(i) differs at column \(c): \(c >= 0 ? short(g[c]) : short(g)) where the token decoder reads \(c >= 0 ? short(e[c]) : short(e))")
        }
        let others = got.tokens.filter { !isRow($0) }
        if others != expected.tokens {
            out.append("tokens \(others.map(\.name)), the token decoder gives \(expected.tokens.map(\.name))")
        }
        if got.error?.code != expected.error?.code || got.error?.offset != expected.error?.offset {
            out.append("error \(got.error.map { "\($0.code) at \($0.offset)" } ?? "none"), the token decoder's: "
                       + (expected.error.map { "\($0.code) at \($0.offset) (\($0.context): \($0.detail))" } ?? "none"))
        }
        return out
    }

    /// Checks the contract on `bytes` under every feed and limit; one failure per call, naming the
    /// configurations that broke it and the first problems. Returns the oracle.
    ///
    /// `rows`: the rows the fixture was built from (the oracle must read them: a check of the
    /// fixture). `error`: the error code the oracle must end with (nil: none).
    @discardableResult
    func assertContract(_ name: String, _ bytes: [UInt8], options: Options = Options(),
                        feeds: [Feed] = WireRowBlockLargeValueContractTests.feeds,
                        limits: [Limits] = WireRowBlockLargeValueContractTests.limits,
                        rows: [[SQLValue]]? = nil, error code: TDSDecodingError.Code? = nil,
                        minimumBlocks: Int = 0,
                        file: StaticString = #filePath, line: UInt = #line) -> Driven {
        let expected = Self.oracle(bytes, options: options)
        if let rows {
            XCTAssertTrue(rows.count == expected.rows.count && zip(rows, expected.rows).allSatisfy { Self.sameRow($0.0, $0.1) },
                          "\(name): fixture: the token decoder reads \(expected.rows.count) rows, not the \(rows.count) built", file: file, line: line)
        }
        XCTAssertEqual(expected.error?.code, code, "\(name): fixture: the token decoder's error \(expected.error.map { "\($0)" } ?? "none")", file: file, line: line)
        var broken = Problems()
        var total = 0, failed = 0
        for feed in feeds {
            for limit in limits {
                total += 1
                let got = Self.drive(bytes, feed, options: options, limits: limit)
                var p = Self.problems(got, expected)
                if got.blocks < minimumBlocks, got.rowTokens == 0 {
                    p.append("\(got.blocks) blocks, at least \(minimumBlocks) expected")
                }
                if !p.isEmpty { failed += 1 }
                for problem in p { broken.note(problem, in: "\(feed), \(limit)") }
            }
        }
        if !broken.isEmpty {
            XCTFail("\(name): the row scan contract is broken in \(failed) of \(total) feeds (\(bytes.count) bytes):\n\(broken)", file: file, line: line)
        }
        return expected
    }

    /// Problems of many runs, each kept once with the number of runs that show it and the first.
    struct Problems: CustomStringConvertible {
        var list: [(kind: String, problem: String, first: String, count: Int)] = []
        var isEmpty: Bool { list.isEmpty }
        /// `problem`, shown by the run `run`: grouped with the problems that differ from it only
        /// in numbers (row counts, offsets) and in what they add in parentheses, the first one kept whole.
        mutating func note(_ problem: String, in run: String) {
            let kind = String(problem.prefix { $0 != "(" }.map { $0.isNumber ? "#" : $0 })
            if let i = list.firstIndex(where: { $0.kind == kind }) { list[i].count += 1 } else { list.append((kind, problem, run, 1)) }
        }
        var description: String {
            list.prefix(6).map { "  [\($0.count) run(s), first \($0.first)] \($0.problem)" }.joined(separator: "\n")
                + (list.count > 6 ? "\n  … \(list.count - 6) more" : "")
        }
    }

    // MARK: - Fixtures

    static let udtInfo = UDTInfo(maxByteSize: 0xFFFF, databaseName: "db", schemaName: "sys", typeName: "geography",
                                 assemblyQualifiedName: "Microsoft.SqlServer.Types.SqlGeography, Microsoft.SqlServer.Types")
    static let udt = TypeInfo(type: .udt, length: 0xFFFF, isPLP: true, udt: udtInfo)

    /// Every large kind: PLP (varchar(max), nvarchar(max), varbinary(max), xml, UDT, json) and
    /// text, ntext, image.
    static let largeKinds: [(String, TypeInfo)] = [
        ("varchar(max)", .varchar(nil)), ("nvarchar(max)", .nvarchar(nil)), ("varbinary(max)", .varbinary(nil)),
        ("xml", .xml), ("udt", udt), ("json", .json),
        ("text", .text()), ("ntext", .ntext()), ("image", .image),
    ]

    /// A value of `type` of about `size` bytes on the wire, varied by `seed`.
    static func value(_ type: TypeInfo, size: Int, seed: Int = 0) -> SQLValue {
        func bytes() -> [UInt8] { (0 ..< size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ $0 >> 8) } }
        func text(_ alphabet: [String], unit: Int) -> String {
            var s = ""
            var i = seed, units = 0
            while units * unit < size {
                let piece = alphabet[i % alphabet.count]
                s += piece
                units += piece.utf16.count
                i += 1
            }
            return s
        }
        switch type.type {
        case .bigVarBinary, .image: return .binary(bytes())
        case .udt: return .udt(bytes())
        case .bigVarChar, .text: return .string(text(["abc", "é", "Zz ", "ÿ", "0123456789"], unit: 1))   // code page 1252
        case .nvarchar, .ntext: return .string(text(["abc", "é", "漢字", "😀", " Ωmega ", "\u{0}", "e\u{301}", "\u{FFFF}", "\u{10FFFF}", "\u{FEFF}"], unit: 2))
        case .xml: return .xml("<r>" + text(["<i>é</i>", "<j a=\"漢\"/>", "text 😀"], unit: 2) + "</r>")
        case .json: return .json("[" + text(["1,", "\"é\",", "{\"k\":\"漢😀\"},"], unit: 1) + "0]")
        default: return .null
        }
    }

    /// An empty non-NULL value of `type`.
    static func empty(_ type: TypeInfo) -> SQLValue {
        switch type.type {
        case .bigVarBinary, .image: return .binary([])
        case .udt: return .udt([])
        case .xml: return .xml("")
        case .json: return .json("")
        default: return .string("")
        }
    }

    static func columns(_ types: [TypeInfo]) -> [ColumnMetadata] {
        types.enumerated().map { ColumnMetadata(flags: [.nullable], typeInfo: $0.element, name: "c\($0.offset)") }
    }

    /// COLMETADATA, the rows (NBCROW where `nbc(i)`, PLP chunked as `chunking(i)`), DONE.
    static func result(_ columns: [ColumnMetadata], _ rows: [[SQLValue]], nbc: (Int) -> Bool = { $0 % 3 == 1 },
                       chunking: (Int) -> [ServerTokens.PLPChunking?] = { _ in [] }, more: Bool = false) throws -> [UInt8] {
        var out = ServerTokens.colMetadata(columns, version: .v7_4)
        for (i, r) in rows.enumerated() {
            out += try nbc(i) ? ServerTokens.nbcRow(r, columns: columns, chunking: chunking(i))
                : ServerTokens.row(r, columns: columns, chunking: chunking(i))
        }
        out += ServerTokens.done(status: more ? [.count, .more] : [.count], rowCount: UInt64(rows.count), version: .v7_4)
        return out
    }

    /// The wire bytes of one value.
    static func cell(_ type: TypeInfo, _ v: SQLValue) throws -> [UInt8] {
        var w = ByteWriter()
        try type.encodeValue(v, into: &w)
        return w.bytes
    }

    static func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    static func le64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }

    /// A PLP body from its parts: the total, then chunks, then (unless `terminated` is false) the terminator.
    static func plp(total: UInt64, chunks: [[UInt8]], terminated: Bool = true) -> [UInt8] {
        var out = le64(total)
        for c in chunks { out += le32(UInt32(c.count)) + c }
        if terminated { out += le32(0) }
        return out
    }

    /// A text/ntext/image value: TextPtr length, TextPtr, 8-byte timestamp, 4-byte length, data.
    static func legacy(_ data: [UInt8], textPtrLength: UInt8 = 16, declared: UInt32? = nil) -> [UInt8] {
        [textPtrLength] + [UInt8](repeating: 0xAB, count: Int(textPtrLength)) + [UInt8](repeating: 0, count: 8)
            + le32(declared ?? UInt32(data.count)) + data
    }

    static func utf16(_ s: String) -> [UInt8] { s.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } }

    /// A stream of one result of `columns` whose rows are `rows` of raw cells (each row one ROW).
    static func rawResult(_ columns: [ColumnMetadata], _ rows: [[[UInt8]]]) -> [UInt8] {
        ServerTokens.colMetadata(columns, version: .v7_4) + rows.flatMap { [TokenType.row.rawValue] + $0.joined() }
            + ServerTokens.done(status: .count, rowCount: UInt64(rows.count), version: .v7_4)
    }

    // MARK: - The harness, on rows the scan takes today

    /// Bounded columns only (int, nvarchar(50), sql_variant, decimal, datetime2), two results,
    /// ROW and NBCROW, NULLs: every row in blocks, the token decoder's values, under every feed
    /// and limit (many blocks with the small ones). Passes wherever the wire path exists: the proof
    /// that the harness is right.
    func testHarnessOnBoundedColumnsMatchesTheTokenDecoder() throws {
        let a = Self.columns([.int, .nvarchar(50), .sqlVariant, .decimal(precision: 18, scale: 4), .datetime2(scale: 7)])
        let b = Self.columns([.nvarchar(50), .bigint])
        var rowsA: [[SQLValue]] = []
        for i in 0 ..< 40 {
            var r: [SQLValue] = [.int(Int32(i)), .string("é\(i) 漢😀"), .variant(try XCTUnwrap(SQLVariant(value: .int(Int32(i * 3))))),
                                 .decimal(SQLDecimal(isNegative: i % 2 == 0, precision: 18, scale: 4, magnitude: UInt128(i) * 977)),
                                 .datetime2(SQLDateTime2(date: SQLDate(days: Int32(700_000 + i)), time: SQLTime(ticks: UInt64(i) * 1_000_003, scale: 7)))]
            if i % 5 == 0 { r[1 + i % 4] = .null }
            rowsA.append(r)
        }
        let rowsB: [[SQLValue]] = (0 ..< 12).map { [$0 % 4 == 0 ? .null : .string("b\($0)"), .bigint(Int64($0) << 33)] }
        let stream = try Self.result(a, rowsA, more: true) + Self.result(b, rowsB)
        let expected = assertContract("bounded", stream, feeds: Self.feeds + [.byteByByte], rows: rowsA + rowsB, minimumBlocks: 2)
        XCTAssertEqual(expected.tokens.map(\.name), ["COLMETADATA", "DONE", "COLMETADATA", "DONE"])
        // The harness itself: every row in a block, many blocks with small limits.
        let small = Self.drive(stream, .random(seed: 3), limits: Limits(rows: 3))
        XCTAssertEqual(small.blockRows, 52)
        XCTAssertEqual(small.rowTokens, 0)
        XCTAssertGreaterThanOrEqual(small.blocks, 52 / 3)
        XCTAssertEqual(small.resultsWithoutBlock, 0)
        let one = Self.drive(stream, .whole, limits: Limits(bytes: 1))
        XCTAssertEqual(one.blocks, 52, "a row a block")
        // A bad row among bounded ones (a lone surrogate): the rows before it, the same error.
        var bad = try Self.result(a, Array(rowsA.prefix(10)))
        let marker = Self.utf16("é7 漢😀")
        let at = try XCTUnwrap((0 ..< bad.count - marker.count).first { Array(bad[$0 ..< $0 + marker.count]) == marker })
        bad[at + 1] = 0xDC   // 'é' (E9 00) becomes a lone low surrogate (E9 DC)
        let refused = assertContract("bounded, lone surrogate in row 7", bad, feeds: Self.feeds + [.byteByByte], error: .invalidEncoding)
        XCTAssertEqual(refused.rows.count, 7)
        // A truncated message, cut inside row 5: `.truncated` at that row, the rows before it.
        let cut = Array(try Self.result(a, Array(rowsA.prefix(6))).dropLast(20))
        assertContract("bounded, cut", cut, feeds: Self.feeds + [.byteByByte], error: .truncated)
    }

    /// The harness tells when rows come back as tokens: a result whose rows the scan does not take
    /// (a PLP column, on a build without the large-value scan) is reported by `drive` (rows as
    /// tokens, a result without a block) and never crashes it; the rows are still the oracle's.
    func testHarnessReportsRowsThatComeBackAsTokens() throws {
        let cols = Self.columns([.int, .varbinary(nil)])
        let rows: [[SQLValue]] = (0 ..< 5).map { [.int(Int32($0)), .binary([UInt8($0), 1, 2])] }
        let stream = try Self.result(cols, rows)
        let got = Self.drive(stream, .random(seed: 9))
        XCTAssertTrue(Self.sameRow(got.rows.flatMap { $0 }, rows.flatMap { $0 }))
        XCTAssertEqual(got.rowTokens + got.blockRows, 5)
        // The comparison is not vacuous: another value, another error, a missing token are seen.
        var other = Self.oracle(stream)
        other.rows[3][1] = .binary([3, 1, 3])
        XCTAssertTrue(Self.problems(got, other).contains { $0.hasPrefix("row 3 differs at column 1") }, "\(Self.problems(got, other))")
        other = Self.oracle(stream)
        other.error = TDSDecodingError(.truncated, offset: 9, context: "ROW", "")
        XCTAssertTrue(Self.problems(got, other).contains { $0.hasPrefix("error none") }, "\(Self.problems(got, other))")
        other = Self.oracle(stream)
        other.tokens.removeLast()
        XCTAssertTrue(Self.problems(got, other).contains { $0.hasPrefix("tokens") }, "\(Self.problems(got, other))")
        if got.rowTokens > 0 {
            XCTAssertEqual(got.resultsWithoutBlock, 1)
            XCTAssertFalse(Self.problems(got, Self.oracle(stream)).isEmpty, "rows as tokens break the contract")
        } else {
            XCTAssertTrue(Self.problems(got, Self.oracle(stream)).isEmpty)
        }
    }

    // MARK: - Large values

    /// Each large kind beside int and nvarchar(50): small, empty, NULL (PLP_NULL or textptr length
    /// 0 in a ROW, the bitmap in an NBCROW), 20 KB values, PLP in 1-byte and uneven chunks and of
    /// unknown length.
    func testEveryLargeKindLandsInTheBlock() throws {
        for (name, type) in Self.largeKinds {
            let cols = Self.columns([.int, type, .nvarchar(50)])
            let values: [SQLValue] = [Self.value(type, size: 40), Self.empty(type), .null, .null,
                                      Self.value(type, size: 20_000, seed: 1), Self.value(type, size: 300, seed: 2),
                                      Self.value(type, size: 5_000, seed: 3), Self.value(type, size: 9, seed: 4)]
            let rows = values.enumerated().map { [.int(Int32($0.offset)), $0.element, .string("r\($0.offset)")] as [SQLValue] }
            let chunkings: [ServerTokens.PLPChunking?] = [nil, nil, nil, nil, nil, .init(sizes: [1]), .init(sizes: [7, 3, 1000]),
                                                          .init(sizes: [2, 5], unknownLength: true)]
            let stream = try Self.result(cols, rows, nbc: { $0 == 3 || $0 == 6 }, chunking: { [nil, chunkings[$0]] })
            assertContract(name, stream, rows: rows, minimumBlocks: 1)
        }
    }

    /// Values of 100 KiB and more (each large kind) between int, nvarchar(50), decimal and datetime2
    /// columns, before and after, several rows, then a second result of text and bounded columns.
    func testHundredKiBValuesAmongBoundedColumnsAndTwoResults() throws {
        let bounded: [TypeInfo] = [.int, .nvarchar(50), .decimal(precision: 18, scale: 4), .datetime2(scale: 7)]
        func boundedValues(_ i: Int) -> [SQLValue] {
            [.int(Int32(i)), .string("n\(i) é"), .decimal(SQLDecimal(isNegative: i % 2 == 1, precision: 18, scale: 4, magnitude: UInt128(i) * 12_345)),
             .datetime2(SQLDateTime2(date: SQLDate(days: Int32(730_000 + i)), time: SQLTime(ticks: UInt64(i) * 7_777_777, scale: 7)))]
        }
        let first = Self.columns(bounded + [.nvarchar(nil), .varbinary(nil)] + bounded + [.varchar(nil)])
        var rowsA: [[SQLValue]] = []
        for i in 0 ..< 4 {
            rowsA.append(boundedValues(i) + [Self.value(.nvarchar(nil), size: 110_000, seed: i), i == 2 ? .null : Self.value(.varbinary(nil), size: 102_400 + i, seed: i)]
                         + boundedValues(100 + i) + [Self.value(.varchar(nil), size: i == 1 ? 0 : 1_000 * i, seed: i)])
        }
        let second = Self.columns([.int, .ntext(), .image, .nvarchar(50), .xml, .json, .text(), Self.udt])
        var rowsB: [[SQLValue]] = []
        for i in 0 ..< 3 {
            rowsB.append([.int(Int32(i)), Self.value(.ntext(), size: 100_000 + i, seed: i), Self.value(.image, size: 120_000, seed: i), .string("after \(i)"),
                          Self.value(.xml, size: 50_000, seed: i), i == 1 ? .null : Self.value(.json, size: 100_000, seed: i),
                          Self.value(.text(), size: 30_000, seed: i), Self.value(Self.udt, size: 2_000, seed: i)])
        }
        // A result the scan takes today first: the block of one result never gets rows of another.
        let lead = Self.columns([.int, .nvarchar(50)])
        let rowsLead: [[SQLValue]] = (0 ..< 5).map { [.int(Int32($0)), .string("lead \($0)")] }
        let stream = try Self.result(lead, rowsLead, more: true) + Self.result(first, rowsA, nbc: { $0 == 2 }, chunking: { i in i == 3 ? Array(repeating: .init(sizes: [4096, 13], unknownLength: true), count: 16) : [] }, more: true)
            + Self.result(second, rowsB, nbc: { $0 == 1 })
        assertContract("100 KiB values, two results", stream, feeds: [.whole, .random(seed: 2), .packets(4096), .packets(8000)],
                       limits: [Limits(), Limits(rows: 2), Limits(bytes: 1), Limits(bytes: 65_536)], rows: rowsLead + rowsA + rowsB, minimumBlocks: 3)
        // Byte by byte: one row of a 110 KB nvarchar(max) (about 115 KB), one limit.
        let one = try Self.result(first, [rowsA[2]])
        assertContract("a 110 KB value, byte by byte", one, feeds: [.byteByByte], limits: [Limits(bytes: 1)], rows: [rowsA[2]])
    }

    /// Large values read in place (issue 43: appended to the row's bytes chunk by chunk, not staged
    /// and copied): varbinary(max), image and UDT values of a known length just under, at and over
    /// the 64 KiB kept apart, and of an unknown length (staged), varchar(max) and text in code page
    /// 1252, json; in chunks of 1 byte to 8,000, beside bounded columns, whole, split and in packets.
    func testValuesReadInPlaceAroundTheSeparateSize() throws {
        let cols = Self.columns([.int, .varbinary(nil), .image, .varchar(nil), .text(), .json, Self.udt, .nvarchar(20)])
        let sizes = [0, 1, 65_535, 65_536, 70_001]
        var rows: [[SQLValue]] = []
        for (i, n) in sizes.enumerated() {
            rows.append([.int(Int32(i)), Self.value(.varbinary(nil), size: n, seed: i), Self.value(.image, size: n == 0 ? 1 : n, seed: i + 1),
                         Self.value(.varchar(nil), size: n / 3, seed: i), Self.value(.text(), size: 100 + i, seed: i),
                         i == 3 ? .null : Self.value(.json, size: 10 + n / 5, seed: i), Self.value(Self.udt, size: n / 2, seed: i),
                         .string("r\(i) é")])
        }
        let chunkings: [ServerTokens.PLPChunking?] = [.init(sizes: [7]), nil, .init(sizes: [8000, 1]), nil, .init(sizes: [3]), .init(sizes: [4096])]
        let stream = try Self.result(cols, rows, nbc: { $0 % 2 == 1 }, chunking: { i in i == 2 ? [nil, .init(sizes: [1000], unknownLength: true)] : chunkings })
        assertContract("values read in place", stream, feeds: Self.feeds, limits: [Limits(), Limits(rows: 1), Limits(bytes: 1)], rows: rows, minimumBlocks: 1)
        let small = try Self.result(cols, Array(rows.prefix(2)), chunking: { _ in chunkings })
        assertContract("values read in place, byte by byte", small, feeds: [.byteByByte], limits: [Limits()], rows: Array(rows.prefix(2)))
    }

    /// The byte limit counts large binary values however the block keeps them: rows of 70 KB to
    /// 100 KB varbinary(max), image and UDT values, blocks of 64 KiB: no row goes into a block that
    /// already holds 64 KiB (so a block holds at most the limit plus one row).
    func testByteLimitCountsLargeBinaryValues() throws {
        let cols = Self.columns([.int, .varbinary(nil), .image, Self.udt])
        let rows: [[SQLValue]] = (0 ..< 8).map { i in
            [.int(Int32(i)), Self.value(.varbinary(nil), size: 100_000 + i, seed: i), Self.value(.image, size: 70_000, seed: i), Self.value(Self.udt, size: 66_000 + i, seed: i)]
        }
        let stream = try Self.result(cols, rows, nbc: { $0 == 5 })
        assertContract("byte limit and large binary values", stream, feeds: [.whole, .random(seed: 10), .packets(8000)],
                       limits: [Limits(bytes: 65_536), Limits(bytes: 300_000)], rows: rows, minimumBlocks: 4)
    }

    /// Unknown-length PLP in many small chunks (1 to 7 bytes), several columns of it in a row.
    func testUnknownLengthPLPInManySmallChunks() throws {
        let cols = Self.columns([.varbinary(nil), .int, .nvarchar(nil), .varchar(nil), .xml, .json])
        var rows: [[SQLValue]] = []
        for i in 0 ..< 6 {
            rows.append([Self.value(.varbinary(nil), size: 3_000 + i, seed: i), .int(Int32(i)), Self.value(.nvarchar(nil), size: 2_000, seed: i),
                         Self.value(.varchar(nil), size: 1_500, seed: i), Self.value(.xml, size: 800, seed: i), Self.value(.json, size: 700, seed: i)])
        }
        let tiny = ServerTokens.PLPChunking(sizes: [1, 2, 3, 4, 5, 6, 7, 1, 1, 2, 7], unknownLength: true)
        let stream = try Self.result(cols, rows, nbc: { $0 % 2 == 1 }, chunking: { _ in Array(repeating: tiny, count: 6) })
        assertContract("unknown length, tiny chunks", stream, feeds: Self.feeds + [.byteByByte], rows: rows, minimumBlocks: 1)
    }

    /// NULL every way: PLP_NULL, textptr length 0, the NBCROW bitmap (a 2-byte bitmap: 11
    /// columns), a row of NULLs only, and empty values next to them.
    func testNullsAndEmptyValuesOfEveryKind() throws {
        let types = Self.largeKinds.map(\.1) + [.int, .nvarchar(50)]
        let cols = Self.columns(types)
        var rows: [[SQLValue]] = []
        rows.append(types.map { _ in .null })                                    // ROW: PLP_NULL, textptr 0, ...
        rows.append(types.map { _ in .null })                                    // NBCROW: every bit set
        rows.append(types.map { $0.type == .intN ? .int(1) : Self.empty($0) })   // empty, not NULL
        rows.append(types.enumerated().map { $0.offset % 2 == 0 ? .null : ($0.element.type == .intN ? .int(2) : Self.value($0.element, size: 33, seed: $0.offset)) })
        rows.append(types.enumerated().map { $0.offset % 2 == 1 ? .null : ($0.element.type == .intN ? .int(3) : Self.value($0.element, size: 70, seed: $0.offset)) })
        let stream = try Self.result(cols, rows, nbc: { $0 == 1 || $0 == 4 })
        assertContract("NULLs and empty values", stream, feeds: Self.feeds + [.byteByByte], rows: rows, minimumBlocks: 1)
    }

    /// Rows of bounded columns only that are long (10 varbinary(8000) values: 80 KB, beyond the
    /// 64 KiB a partial row is waited for whole) and an nvarchar value longer than the block's
    /// 15-bit UTF-8 length (more than SQL Server sends for nvarchar(4000)), in packets: rows split
    /// across many packets land in the block too.
    func testLongRowsOfBoundedColumnsAcrossManyPackets() throws {
        let cols = Self.columns(Array(repeating: .varbinary(8000), count: 10) + [.int])
        let rows: [[SQLValue]] = (0 ..< 3).map { i in (0 ..< 10).map { Self.value(.varbinary(nil), size: 8000, seed: i * 10 + $0) } + [.int(Int32(i))] }
        let stream = try Self.result(cols, rows)
        assertContract("80 KB rows of varbinary(8000)", stream, feeds: [.whole, .random(seed: 4), .packets(4096), .packets(512)], rows: rows)
        // The same rows, the last one's int of 3 bytes: the token decoder's error after 80 KB of the row.
        var bad = stream
        let intAt = bad.count - 13 - 5   // before DONE: the last row's int (length byte, 4 bytes)
        XCTAssertEqual(bad[intAt], 4)
        bad[intAt] = 3
        assertContract("80 KB rows of varbinary(8000), a bad int at the end", bad, feeds: [.whole, .random(seed: 4), .packets(4096), .packets(512)],
                       error: Self.oracle(bad).error?.code)
        XCTAssertNotNil(Self.oracle(bad).error)
        let text = Self.columns([.nvarchar(4000), .int])
        let long = String(repeating: "漢", count: TokenStreamDecoder.wireTextLimit / 2 + 1)
        let raw = try Self.rawResult(text, [[[UInt8((long.utf16.count * 2) & 0xFF), UInt8((long.utf16.count * 2) >> 8)] + Self.utf16(long), [4] + Self.le32(7)],
                                        [Self.cell(.nvarchar(4000), .string("short")), [4] + Self.le32(8)]])
        assertContract("nvarchar beyond the 15-bit block length", raw, feeds: [.whole, .random(seed: 5), .packets(4096)],
                       rows: [[.string(long), .int(7)], [.string("short"), .int(8)]])
    }

    /// Character data in other code pages than 1252 (Cyrillic 1251, Japanese 932, a UTF-8
    /// collation) in varchar(max) and text, valid and not (bytes the code page does not define),
    /// beside sql_variant and vector columns.
    func testLargeTextInOtherCodePages() throws {
        let cyrillic = Collation(lcid: 0x0419), japanese = Collation(lcid: 0x0411), utf8 = Collation(lcid: 0x0409, flags: [.utf8])
        let cols = Self.columns([.int, .varchar(nil, collation: cyrillic), .text(collation: japanese), .varchar(nil, collation: utf8),
                                 .sqlVariant, .vector(dimensions: 3), .text(collation: utf8)])
        var rows: [[SQLValue]] = []
        for i in 0 ..< 6 {
            rows.append([.int(Int32(i)), .string(String(repeating: "Привет мир \(i) ", count: 60 * (i + 1))), .string(String(repeating: "日本語カナ\(i)", count: 80)),
                         i == 2 ? .null : .string(String(repeating: "日本 😀 é \(i)", count: 150)), .variant(try XCTUnwrap(SQLVariant(value: .int(Int32(i))))),
                         .vector(SQLVector([1, Float(i), -2.5])), i == 4 ? .string("") : .string("ü\(i)")])
        }
        let stream = try Self.result(cols, rows, nbc: { $0 % 2 == 0 }, chunking: { _ in [nil, .init(sizes: [333]), nil, .init(sizes: [1, 2, 3], unknownLength: true)] })
        assertContract("varchar(max) and text in 1251, 932, UTF-8", stream, feeds: Self.feeds + [.byteByByte], rows: rows, minimumBlocks: 1)
        // Bytes the code page does not define, in row 3.
        let cells: [(String, Int, [UInt8])] = [
            ("varchar(max) UTF-8: a cut sequence", 3, Self.plp(total: 3, chunks: [[0x41, 0xE6, 0x97]])),
            ("varchar(max) UTF-8: a surrogate", 3, Self.plp(total: PLPProgress.unknownPLPLength, chunks: [[0xED], [0xA0, 0x80]])),
            ("text 932: a lead byte alone", 2, Self.legacy([0x41, 0x82])),
            ("text 932: an undefined byte", 2, Self.legacy([0xFF, 0x41])),
            ("text UTF-8: invalid", 6, Self.legacy([0xC3, 0x28])),
        ]
        for (name, column, bad) in cells {
            var raw: [[[UInt8]]] = []
            for (i, r) in rows.prefix(5).enumerated() {
                var row: [[UInt8]] = []
                for (c, col) in cols.enumerated() { row.append(i == 3 && c == column ? bad : try Self.cell(col.typeInfo, r[c])) }
                raw.append(row)
            }
            let bytes = Self.rawResult(cols, raw)
            let expected = Self.oracle(bytes)
            XCTAssertEqual(expected.error?.code, .invalidEncoding, "\(name): \(expected.error.map { "\($0)" } ?? "no error")")
            assertContract(name, bytes, feeds: Self.feeds + [.byteByByte], error: expected.error?.code)
        }
    }

    /// nvarchar values around the block's UTF-8 length forms (SQL Server sends at most 8,000
    /// bytes; the decoder reads up to 65,534): UTF-8 counts of 32,765 to 32,768 bytes in ASCII, CJK
    /// and surrogate pairs, each beside an int.
    func testNVarCharAtTheUTF8LengthForms() throws {
        let cols = Self.columns([.nvarchar(4000), .int])
        var texts: [String] = []
        for n in [21_844 / 2, 32_765, 32_766, 32_767] { texts.append(String(repeating: "a", count: n)) }    // ASCII: n bytes
        texts.append(String(repeating: "漢", count: 10_922))                                               // 32,766
        texts.append(String(repeating: "漢", count: 10_922) + "a")                                         // 32,767
        texts.append(String(repeating: "漢", count: 10_922) + "ab")                                        // 32,768
        texts.append(String(repeating: "😀", count: 8_191) + "abc")                                         // 32,767
        texts.append(String(repeating: "é", count: 16_383) + "a")                                          // 32,767
        var raw: [[[UInt8]]] = []
        var rows: [[SQLValue]] = []
        for (i, t) in texts.enumerated() {
            let wire = Self.utf16(t)
            raw.append([[UInt8(wire.count & 0xFF), UInt8(wire.count >> 8)] + wire, [4] + Self.le32(UInt32(i))])
            rows.append([.string(t), .int(Int32(i))])
        }
        assertContract("nvarchar at the UTF-8 length forms", Self.rawResult(cols, raw), feeds: [.whole, .random(seed: 6), .packets(8000)],
                       limits: [Limits(), Limits(rows: 3), Limits(bytes: 1)], rows: rows)
    }

    /// A text/ntext/image length of 0xFFFFFFFF under a cap of 4 GiB or more: the token decoder
    /// waits for the 4 GiB it declares (`.truncated` when the message ends), while the value
    /// decoder and the streamed path read it as NULL; the row scan must read it as the token
    /// decoder does. (Under the default 1 GiB cap both give `.limitExceeded`: see
    /// ``testMalformedLargeValuesGiveTheTokenDecodersError()``.)
    func testLegacyLengthOfAllOnesUnderALargeCap() throws {
        let cols = Self.columns([.int, .ntext(), .int])
        let raw: [[[UInt8]]] = [[[4, 1, 0, 0, 0], Self.legacy(Self.utf16("a")), [4, 1, 0, 0, 0]],
                                [[4, 2, 0, 0, 0], Self.legacy([], declared: 0xFFFF_FFFF), [4, 2, 0, 0, 0]]]
        let bytes = Self.rawResult(cols, raw)
        for cap in [1 << 40, 0xFFFF_FFFF, 0xFFFF_FFFE] {
            assertContract("ntext length 0xFFFFFFFF, cap \(cap)", bytes, options: Options(maximumValueSize: cap),
                           feeds: [.whole, .byteByByte, .random(seed: 12)], error: Self.oracle(bytes, options: Options(maximumValueSize: cap)).error?.code)
        }
    }

    /// A malformed bounded value after a large one in the same row, and a large value after a
    /// malformed bounded one: the token decoder's error (code and offset).
    func testBoundedErrorsBesideLargeValues() throws {
        let cols = Self.columns([.varbinary(nil), .int, .nvarchar(nil), .decimal(precision: 10, scale: 2)])
        var good: [[[UInt8]]] = []
        for i in 0 ..< 5 {
            good.append([try Self.cell(.varbinary(nil), .binary([UInt8(i), 9])), [4] + Self.le32(UInt32(i)),
                         try Self.cell(.nvarchar(nil), .string("v\(i)")), try Self.cell(.decimal(precision: 10, scale: 2), .decimal(SQLDecimal("1.25")!))])
        }
        let cases: [(String, Int, [UInt8])] = [
            ("intN of 3 bytes after varbinary(max)", 1, [3, 1, 2, 3]),
            ("decimal sign 7 after nvarchar(max)", 3, [5, 7, 1, 0, 0, 0]),
            ("decimal of 18 bytes after nvarchar(max)", 3, [18, 1] + [UInt8](repeating: 0, count: 17)),
        ]
        for (name, column, bad) in cases {
            var rows = good
            rows[2][column] = bad
            let bytes = Self.rawResult(cols, rows)
            XCTAssertNotNil(Self.oracle(bytes).error, name)
            assertContract(name, bytes, feeds: Self.feeds + [.byteByByte], error: Self.oracle(bytes).error?.code)
        }
    }

    /// Random results (seeded): 1 to 12 columns drawn from bounded and large kinds, 0 to 8 rows of
    /// random values, NULLs (ROW and NBCROW), PLP in random chunks of declared or unknown length,
    /// one or two results, fed whole, byte by byte, at random or in packets of random size, with
    /// random limits. The seed and iteration are in every failure.
    func testRandomResultsOfMixedColumns() throws {
        let seed: UInt64 = 0x5CA7_7E57
        var rng = SeededRandom(seed: seed)
        func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }
        func below(_ n: Int) -> Int { Int(rng.next() % UInt64(max(1, n))) }
        let bounded: [TypeInfo] = [.int, .bigint, .nvarchar(50), .varchar(30), .decimal(precision: 18, scale: 4), .datetime2(scale: 7),
                                   .sqlVariant, .varbinary(16), .bit]
        let kinds = bounded + Self.largeKinds.map(\.1)
        func value(_ t: TypeInfo) throws -> SQLValue {
            switch t.type {
            case .intN: return t.length == 8 ? .bigint(Int64(bitPattern: rng.next())) : .int(Int32(truncatingIfNeeded: rng.next()))
            case .bitN: return .bit(rng.next() % 2 == 0)
            case .nvarchar where !t.isPLP: return .string(String((0 ..< below(20)).map { _ in pick(Array("aé漢😀 Ω\u{0}")) }))
            case .bigVarChar where !t.isPLP: return .string(String((0 ..< below(30)).map { _ in pick(Array("abcé ÿ0")) }))
            case .decimalN: return .decimal(SQLDecimal(isNegative: rng.next() % 2 == 0, precision: 18, scale: 4, magnitude: UInt128(rng.next() % 1_000_000_000_000_000_000)))
            case .datetime2N: return .datetime2(SQLDateTime2(date: SQLDate(days: Int32(below(3_652_059))), time: SQLTime(ticks: rng.next() % 864_000_000_000, scale: 7)))
            case .ssVariant: return .variant(try XCTUnwrap(SQLVariant(value: pick([SQLValue.int(7), .string("v é"), .float(1.5), .binary([1, 2])]))))
            case .bigVarBinary where !t.isPLP: return .binary((0 ..< below(17)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            default:
                let size = pick([0, 1, 2, 17, 100, 333, 2_000, 9_000])
                return size == 0 ? Self.empty(t) : Self.value(t, size: size, seed: below(1000))
            }
        }
        var broken = Problems()
        var runs = 0, failedStreams = 0
        for iteration in 0 ..< 120 {
            var stream: [UInt8] = []
            for result in 0 ..< 1 + below(2) {
                let cols = Self.columns((0 ..< 1 + below(12)).map { _ in pick(kinds) })
                var rows: [[SQLValue]] = []
                for _ in 0 ..< below(9) { rows.append(try cols.map { below(5) == 0 ? .null : try value($0.typeInfo) }) }
                let nbc = (0 ..< rows.count).map { _ in below(2) == 0 }
                let chunking = (0 ..< rows.count).map { _ in cols.map { _ in below(3) == 0 ? nil : ServerTokens.PLPChunking(sizes: (0 ..< 1 + below(3)).map { _ in 1 + below(700) }, unknownLength: below(2) == 0) } }
                stream += try Self.result(cols, rows, nbc: { nbc[$0] }, chunking: { chunking[$0] }, more: result == 0)
            }
            let expected = Self.oracle(stream)
            if expected.error != nil { failedStreams += 1 }
            let feeds: [Feed] = [.whole, .random(seed: UInt64(iteration)), .packets(1 + below(600))] + (stream.count < 20_000 ? [.byteByByte] : [])
            for feed in feeds {
                let limit = pick([Limits(), Limits(rows: 1), Limits(rows: 2 + below(4)), Limits(bytes: 1), Limits(bytes: 1 + below(5000))])
                runs += 1
                for p in Self.problems(Self.drive(stream, feed, limits: limit), expected) {
                    broken.note(p, in: "seed \(seed) iteration \(iteration), \(feed), \(limit)")
                }
            }
        }
        XCTAssertEqual(failedStreams, 0, "every random result is valid")
        if !broken.isEmpty { XCTFail("random results (\(runs) runs): the row scan contract is broken:\n\(broken)") }
    }

    /// vector cells (float32 and float16) valid and mutated (header bytes, lengths, element
    /// bytes), seeded, beside an nvarchar(max): the token decoder's rows and error.
    func testVectorCellsValidAndMutated() throws {
        let seed: UInt64 = 0x7EC7_0125
        var rng = SeededRandom(seed: seed)
        let types: [TypeInfo] = [.vector(dimensions: 3), .vector(dimensions: 2, elementType: .float16)]
        let cols = Self.columns([.int, types[0], .nvarchar(nil), types[1]])
        var broken = Problems()
        var failed = 0
        for iteration in 0 ..< 150 {
            var raw: [[[UInt8]]] = []
            for i in 0 ..< 4 {
                var row: [[UInt8]] = [[4] + Self.le32(UInt32(i)), try Self.cell(types[0], .vector(SQLVector([1.5, Float(i), -2]))),
                                      try Self.cell(.nvarchar(nil), .string("v\(i)")),
                                      try Self.cell(types[1], .vector(SQLVector([0.5, 2], elementType: .float16)))]
                if i == 2 {
                    let c = rng.next() % 2 == 0 ? 1 : 3
                    var cell = row[c]
                    switch rng.next() % 4 {
                    case 0: cell[2 + Int(rng.next() % UInt64(cell.count - 2))] = UInt8(truncatingIfNeeded: rng.next())   // any byte after the length
                    case 1: let n = Int(rng.next() % 40); cell = [UInt8(n & 0xFF), 0] + (0 ..< n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    case 2: cell = [0xFF, 0xFF]   // NULL
                    default: cell[2 + Int(rng.next() % 8)] ^= 1 << UInt8(rng.next() % 8)   // a header bit
                    }
                    row[c] = cell
                }
                raw.append(row)
            }
            let bytes = Self.rawResult(cols, raw)
            let expected = Self.oracle(bytes)
            if expected.error != nil { failed += 1 }
            for feed in [Feed.whole, .byteByByte, .random(seed: UInt64(iteration))] {
                for p in Self.problems(Self.drive(bytes, feed, limits: iteration % 2 == 0 ? Limits() : Limits(rows: 1)), expected) {
                    broken.note(p, in: "seed \(seed) iteration \(iteration), \(feed)")
                }
            }
        }
        XCTAssertGreaterThan(failed, 20, "mutated vectors the token decoder refuses")
        XCTAssertLessThan(failed, 140, "mutated vectors it reads")
        if !broken.isEmpty { XCTFail("vector cells (450 runs): the row scan contract is broken:\n\(broken)") }
    }

    // MARK: - Hostile large values

    /// Malformed PLP and text/ntext/image cells in row 3 of 5 (the rows before it valid): the
    /// token decoder's error, code and offset, under every feed.
    func testMalformedLargeValuesGiveTheTokenDecodersError() throws {
        let cols = Self.columns([.int, .varbinary(nil), .nvarchar(50)])
        var good: [[[UInt8]]] = []
        for i in 0 ..< 5 {
            good.append([[4] + Self.le32(UInt32(i)), try Self.cell(.varbinary(nil), Self.value(.varbinary(nil), size: 100 + i, seed: i)), try Self.cell(.nvarchar(50), .string("ok\(i)"))])
        }
        let ten = [UInt8](repeating: 0x5A, count: 10)
        let cases: [(String, [UInt8], TDSDecodingError.Code)] = [
            ("chunk past the declared total", Self.plp(total: 10, chunks: [Array(ten.prefix(6)), Array(ten.prefix(6))]), .invalidLength),
            ("total above the chunks", Self.plp(total: 10, chunks: [Array(ten.prefix(4))]), .invalidLength),
            ("total of 2^31", Self.plp(total: 1 << 31, chunks: [ten]), .invalidLength),
            ("total 0xFFFFFFFFFFFFFFFD", Self.plp(total: 0xFFFF_FFFF_FFFF_FFFD, chunks: [ten]), .invalidLength),
            ("chunk beyond the total of 0", Self.plp(total: 0, chunks: [ten]), .invalidLength),
        ]
        for (name, bad, code) in cases {
            var rows = good
            rows[3][1] = bad
            let stream = Self.rawResult(cols, rows)
            let expected = assertContract("varbinary(max): " + name, stream, feeds: Self.feeds + [.byteByByte], error: code)
            XCTAssertEqual(expected.rows.count, 3, name)
        }
        // Terminator missing: the next row's (or DONE's) bytes are read as a chunk length.
        for (name, bad) in [("terminator missing", Self.plp(total: 10, chunks: [ten], terminated: false)),
                            ("terminator missing, unknown length", Self.plp(total: PLPProgress.unknownPLPLength, chunks: [ten], terminated: false))] {
            for at in [3, 4] {
                var rows = good
                rows[at][1] = bad
                let stream = Self.rawResult(cols, rows)
                let expected = Self.oracle(stream)
                XCTAssertNotNil(expected.error, "\(name) in row \(at)")
                assertContract("varbinary(max): \(name) in row \(at)", stream, feeds: Self.feeds + [.byteByByte], error: expected.error?.code)
            }
        }
        // text/ntext/image: a length past the data, an odd ntext length, a lone surrogate, a huge
        // TextPtr length, a length of 0xFFFFFFFF.
        let legacyCols = Self.columns([.int, .ntext(), .image])
        let legacyGood = (0 ..< 5).map { i in [[4] + Self.le32(UInt32(i)), Self.legacy(Self.utf16("nt\(i) é漢")), Self.legacy([1, 2, UInt8(i)])] }
        let legacyCases: [(String, Int, [UInt8], TDSDecodingError.Code?)] = [
            ("ntext odd length", 1, Self.legacy([0x41, 0x00, 0x42]), nil),
            ("ntext lone surrogate", 1, Self.legacy(Self.utf16("ab") + [0x00, 0xD8] + Self.utf16("c")), .invalidEncoding),
            ("image length past the data", 2, Self.legacy([1, 2, 3], declared: 40), nil),
            ("image TextPtr of 255", 2, Self.legacy([9, 9], textPtrLength: 255), nil),
            ("image length 0xFFFFFFFF", 2, Self.legacy([9], declared: 0xFFFF_FFFF), .limitExceeded),
        ]
        for (name, column, bad, code) in legacyCases {
            var rows = legacyGood
            rows[3][column] = bad
            let stream = Self.rawResult(legacyCols, rows)
            let expected = Self.oracle(stream)
            if let code { XCTAssertEqual(expected.error?.code, code, name) }
            assertContract(name, stream, feeds: Self.feeds + [.byteByByte], error: expected.error?.code)
        }
        // Text that does not decode: nvarchar(max) and xml with a lone surrogate, nvarchar(max)
        // of an odd byte count, json that is not UTF-8.
        let textCols = Self.columns([.int, .nvarchar(nil), .xml, .json])
        var textGood: [[[UInt8]]] = []
        for i in 0 ..< 5 {
            textGood.append([[4] + Self.le32(UInt32(i)), try Self.cell(.nvarchar(nil), .string("v\(i) 😀")), try Self.cell(.xml, .xml("<a>\(i)</a>")), try Self.cell(.json, .json("[\(i)]"))])
        }
        let textCases: [(String, Int, [UInt8], TDSDecodingError.Code)] = [
            ("nvarchar(max) lone surrogate", 1, Self.plp(total: 6, chunks: [Self.utf16("a"), [0x3D, 0xD8], Self.utf16("b")]), .invalidEncoding),
            ("nvarchar(max) lone surrogate, unknown length", 1, Self.plp(total: PLPProgress.unknownPLPLength, chunks: [[0x00, 0xDC]]), .invalidEncoding),
            ("xml lone surrogate", 2, Self.plp(total: 4, chunks: [Self.utf16("<"), [0x00, 0xD8]]), .invalidEncoding),
            ("json not UTF-8", 3, Self.plp(total: 3, chunks: [[0x5B, 0xC3, 0x5D]]), .invalidEncoding),
        ]
        for (name, column, bad, code) in textCases {
            var rows = textGood
            rows[3][column] = bad
            assertContract(name, Self.rawResult(textCols, rows), feeds: Self.feeds + [.byteByByte], error: code)
        }
        var odd = textGood
        odd[3][1] = Self.plp(total: 3, chunks: [[0x41, 0x00, 0x42]])
        let oddStream = Self.rawResult(textCols, odd)
        assertContract("nvarchar(max) odd byte count", oddStream, feeds: Self.feeds + [.byteByByte], error: Self.oracle(oddStream).error?.code)
    }

    /// ``TokenStreamDecoder/Options/maximumValueSize``: a declared PLP total or a text/ntext/image
    /// length above it is `.limitExceeded` at once (the bytes are never waited for: the stream
    /// ends right after the length); an unknown-length value passing it as chunks arrive too; at
    /// the cap exactly, the value is read. A PLP total above 2^31-1 is `.invalidLength` whatever
    /// the cap.
    func testCapsGiveTheTokenDecodersErrors() throws {
        let cap = Options(maximumValueSize: 1000)
        let cols = Self.columns([.int, .varbinary(nil), .ntext()])
        func stream(_ plpCell: [UInt8], _ ntextCell: [UInt8], complete: Bool = true) -> [UInt8] {
            let head = Self.rawResult(cols, [[[4, 1, 0, 0, 0], Self.plp(total: 3, chunks: [[1, 2, 3]]), Self.legacy(Self.utf16("x"))]]).dropLast(13)
            let row = [TokenType.row.rawValue, 4, 2, 0, 0, 0] + plpCell + ntextCell
            return Array(head) + row + (complete ? ServerTokens.done(status: .count, rowCount: 2, version: .v7_4) : [])
        }
        let okNText = Self.legacy(Self.utf16("ok"))
        let thousand = [UInt8](repeating: 7, count: 1000)
        // At the cap: read.
        assertContract("PLP of exactly the cap", stream(Self.plp(total: 1000, chunks: [thousand]), okNText), options: cap,
                       rows: [[.int(1), .binary([1, 2, 3]), .string("x")], [.int(2), .binary(thousand), .string("ok")]])
        assertContract("ntext of exactly the cap", stream(Self.plp(total: 0, chunks: []), Self.legacy(Array(repeating: 0x41, count: 1000))), options: cap, error: nil)
        // Above it: at once, before any data (the stream ends after the length).
        let cases: [(String, [UInt8], TDSDecodingError.Code, Options)] = [
            ("PLP total of cap + 1", stream(Self.le64(1001), [], complete: false), .limitExceeded, cap),
            ("PLP total of 2^31-1 under the default cap", stream(Self.le64(0x7FFF_FFFF), [], complete: false), .limitExceeded, Options()),
            ("unknown-length PLP passing the cap", stream(Self.plp(total: PLPProgress.unknownPLPLength, chunks: [Array(thousand.prefix(600)), Array(thousand.prefix(401))]), okNText), .limitExceeded, cap),
            ("ntext length of cap + 1", stream(Self.plp(total: 0, chunks: []), Array(Self.legacy([]).dropLast(4)) + Self.le32(1001), complete: false), .limitExceeded, cap),
            ("PLP total of 2^31 with a cap of 2^40", stream(Self.le64(1 << 31), [], complete: false), .invalidLength, Options(maximumValueSize: 1 << 40)),
            ("PLP total of 2^63 with a cap of 2^40", stream(Self.le64(1 << 63), [], complete: false), .invalidLength, Options(maximumValueSize: 1 << 40)),
            ("unknown-length PLP chunk of 2^31 with a cap of 2^40", stream(Self.le64(PLPProgress.unknownPLPLength) + Self.le32(0x8000_0000) + [1, 2], [], complete: false),
             Self.oracle(stream(Self.le64(PLPProgress.unknownPLPLength) + Self.le32(0x8000_0000) + [1, 2], [], complete: false), options: Options(maximumValueSize: 1 << 40)).error?.code ?? .truncated,
             Options(maximumValueSize: 1 << 40)),
        ]
        for (name, bytes, code, options) in cases {
            let expected = assertContract(name, bytes, options: options, feeds: Self.feeds + [.byteByByte], error: code)
            XCTAssertEqual(expected.rows.count, 1, name)
        }
        // A huge declared length under a cap above it (2^31-1 with a cap of 2^40): nothing is
        // allocated by it; the stream ends inside the value: `.truncated` at the row.
        let huge = stream(Self.le64(0x7FFF_FFFF) + Self.le32(0x7FFF_FFFF) + [1, 2, 3], [], complete: false)
        assertContract("PLP total and chunk of 2^31-1, stream ends", huge, options: Options(maximumValueSize: 1 << 40),
                       feeds: Self.feeds + [.byteByByte], error: .truncated)
        let hugeText = stream(Self.plp(total: 0, chunks: []), Array(Self.legacy([]).dropLast(4)) + Self.le32(0x7FFF_FFFF) + [0x41, 0], complete: false)
        assertContract("ntext length of 2^31-1, stream ends", hugeText, options: Options(maximumValueSize: 1 << 40),
                       feeds: Self.feeds + [.byteByByte], error: .truncated)
        // Nothing allocated by those declared lengths (2 GiB each): virtual memory grows by less than 64 MiB.
        guard let before = Self.virtualMemoryBytes() else { return }
        // The probe sees a reservation never touched (1 GiB).
        var reserved: [UInt8] = []
        reserved.reserveCapacity(1 << 30)
        XCTAssertGreaterThan((Self.virtualMemoryBytes() ?? 0) - before, 1 << 29, "the virtual memory probe sees a 1 GiB reservation (capacity \(reserved.capacity))")
        reserved = []
        let hugeUnknown = stream(Self.le64(PLPProgress.unknownPLPLength) + Self.le32(0x7FFF_FFFF) + [1, 2, 3], [], complete: false)
        assertContract("unknown-length PLP, a chunk of 2^31-1, stream ends", hugeUnknown, options: Options(maximumValueSize: 1 << 40),
                       feeds: Self.feeds + [.byteByByte], error: .truncated)
        for (name, bytes) in [("PLP", huge), ("ntext", hugeText), ("unknown-length PLP", hugeUnknown)] {
            for feed in [Feed.whole, .byteByByte, .random(seed: 8)] {
                for limit in [Limits(), Limits(bytes: 1)] {
                    let got = Self.drive(bytes, feed, options: Options(maximumValueSize: 1 << 40), limits: limit, measuresMemory: true)
                    XCTAssertLessThan(got.virtualMemoryGrowth, 64 << 20, "\(name) of 2^31-1 bytes declared, \(feed), \(limit): memory allocated by a declared length")
                }
            }
        }
    }

    /// A message cut at every byte of a stream of large values (PLP, unknown length, text, NBCROW):
    /// `.truncated`, the rows before the cut, as the token decoder says.
    func testMessagesCutAtEveryByte() throws {
        let cols = Self.columns([.int, .nvarchar(nil), .image, .varbinary(nil)])
        let rows: [[SQLValue]] = [[.int(1), .string("ab😀"), .binary([1, 2, 3]), .binary([4, 5])],
                                  [.int(2), .null, .binary([6]), .binary([])],
                                  [.int(3), .string(""), .null, .binary([7, 8, 9, 10, 11])]]
        let whole = try Self.result(cols, rows, nbc: { $0 == 1 }, chunking: { _ in [nil, .init(sizes: [3, 1], unknownLength: true), nil, .init(sizes: [2])] })
        var broken = Problems()
        let head = ServerTokens.colMetadata(cols, version: .v7_4).count
        for cut in head ..< whole.count {
            let bytes = Array(whole[..<cut])
            let expected = Self.oracle(bytes)
            for feed in [Feed.whole, .byteByByte, .random(seed: UInt64(cut))] {
                for limit in [Limits(), Limits(bytes: 1)] {
                    for p in Self.problems(Self.drive(bytes, feed, limits: limit), expected) { broken.note(p, in: "cut at \(cut), \(feed), \(limit)") }
                }
            }
        }
        if !broken.isEmpty { XCTFail("cut at every byte (\(6 * (whole.count - head)) runs): the row scan contract is broken:\n\(broken)") }
    }

    /// Seeded random mutations (1 to 3 bytes) of a valid stream of large values and bounded
    /// columns: the token decoder's rows and error under three feeds. The seed and the mutation
    /// are in every failure.
    func testRandomMutationsGiveTheTokenDecodersRowsAndError() throws {
        let seed: UInt64 = 0x1A26_E5CA
        var rng = SeededRandom(seed: seed)
        let cols = Self.columns([.int, .varchar(nil), .nvarchar(50), .ntext(), .varbinary(nil), .decimal(precision: 10, scale: 2), .xml, .image,
                                 .nvarchar(nil), .json, Self.udt, .varchar(nil, collation: Collation(lcid: 0x0409, flags: [.utf8])), .text()])
        var rows: [[SQLValue]] = []
        for i in 0 ..< 5 {
            rows.append([.int(Int32(i)), Self.value(.varchar(nil), size: 60, seed: i), .string("m\(i)"), Self.value(.ntext(), size: 50, seed: i),
                         i == 2 ? .null : Self.value(.varbinary(nil), size: 90, seed: i), .decimal(SQLDecimal(isNegative: false, precision: 10, scale: 2, magnitude: UInt128(i) * 101)),
                         Self.value(.xml, size: 40, seed: i), Self.value(.image, size: 20, seed: i), Self.value(.nvarchar(nil), size: 30, seed: i),
                         Self.value(.json, size: 20, seed: i), Self.value(Self.udt, size: 12, seed: i), .string("ü😀\(i)"), Self.value(.text(), size: 16, seed: i)])
        }
        let valid = try Self.result(cols, rows, nbc: { $0 % 2 == 1 },
                                    chunking: { i in [nil, .init(sizes: [7], unknownLength: i == 3), nil, nil, .init(sizes: [5, 11]), nil, nil, nil, .init(sizes: [4], unknownLength: true)] })
        let head = ServerTokens.colMetadata(cols, version: .v7_4).count
        var broken = Problems()
        var failedStreams = 0
        let iterations = 300
        for iteration in 0 ..< iterations {
            var bytes = valid
            var mutation: [(Int, UInt8)] = []
            for _ in 0 ... Int(rng.next() % 3) {
                let at = head + Int(rng.next() % UInt64(valid.count - head))
                if rng.next() % 3 == 0, at + 4 <= valid.count {
                    // A 4-byte field (a chunk or text length, a PLP total's half): 0, all ones, small, random.
                    let v: UInt32 = [0, 0xFFFF_FFFF, UInt32(rng.next() % 16), UInt32(truncatingIfNeeded: rng.next())][Int(rng.next() % 4)]
                    for k in 0 ..< 4 { bytes[at + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(k))); mutation.append((at + k, bytes[at + k])) }
                    continue
                }
                let b: UInt8
                switch rng.next() % 4 {
                case 0: b = 0xFF
                case 1: b = 0
                default: b = UInt8(truncatingIfNeeded: rng.next())
                }
                bytes[at] = b
                mutation.append((at, b))
            }
            let expected = Self.oracle(bytes)
            if expected.error != nil { failedStreams += 1 }
            for feed in [Feed.whole, .random(seed: UInt64(iteration)), .byteByByte] {
                let limit = iteration % 2 == 0 ? Limits() : Limits(bytes: 64)
                for p in Self.problems(Self.drive(bytes, feed, limits: limit), expected) {
                    broken.note(p, in: "seed \(seed) iteration \(iteration) mutation \(mutation) (offset, byte), \(feed), \(limit)")
                }
            }
        }
        if !broken.isEmpty { XCTFail("random mutations (\(3 * iterations) runs): the row scan contract is broken:\n\(broken)") }
        XCTAssertGreaterThan(failedStreams, 30, "mutations that the token decoder refuses")
        XCTAssertLessThan(failedStreams, iterations - 30, "mutations that it reads")
    }
}

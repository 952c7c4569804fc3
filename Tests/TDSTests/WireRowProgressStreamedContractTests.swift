import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// The contract of rows read in parts (``TokenStreamDecoder/nextPart()``, the streamed mode of
/// ``WireRowProgress``) against the token decoder (``TokenStreamDecoder/next()``) and the row
/// scan (``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``) on the same stream:
///
/// - every part is in order (a part per column, column by column; a large value's chunks, never
///   empty, then its `.largeValueEnd`; then `.rowEnd`), tokens between rows in the stream's order;
/// - every bounded value is the token decoder's, and a large value's chunks concatenated are its
///   wire bytes (UTF-16LE for nvarchar(max), ntext and xml, code-page bytes for varchar(max) and
///   text, UTF-8 for json, raw for varbinary(max), image and UDT), whole, byte by byte, split at
///   random and in packets;
/// - hostile input (mutated, truncated) never traps, and gives the token decoder's error (code,
///   offset, token name), but where the streamed mode differs by design: a large value is not
///   bounded by ``TokenStreamDecoder/Options/maximumValueSize`` nor checked as a whole (UTF-16,
///   UTF-8, code page);
/// - memory: a streamed value is handed out as it arrives (never more than one packet of chunk
///   bytes queued); a declared length of 2^31-1 allocates nothing;
/// - the row mode is fixed for a response, and each mode (tokens, blocks, parts) gives the same
///   values whole, byte by byte and split at random; a row begun by `next()` is finished by
///   `appendBufferedRows`; ALTROW and RETURNVALUE with a large value split anywhere give the token
///   read whole.
final class WireRowProgressStreamedContractTests: XCTestCase {
    typealias Options = TokenStreamDecoder.Options
    typealias Contract = WireRowBlockLargeValueContractTests
    typealias Feed = WireRowBlockLargeValueContractTests.Feed

    // MARK: - Reading a stream

    /// One column of a row as it was read: a whole value, or a large value's bytes (its chunks
    /// concatenated).
    enum Cell: CustomStringConvertible {
        case value(SQLValue)
        case large([UInt8])
        var description: String {
            switch self {
            case .value(let v): return Contract.short(v)
            case .large(let b): return "\(b.count) bytes in chunks"
            }
        }
    }

    /// A token, or a row of the current result (with its columns' types).
    enum Event: CustomStringConvertible {
        case token(Token)
        case row([Cell], types: [TypeInfo])
        var description: String {
            switch self {
            case .token(let t): return t.name
            case .row(let cells, _): return "row [" + cells.map(\.description).joined(separator: ", ") + "]"
            }
        }
    }

    /// What reading a stream gave.
    struct Run {
        var events: [Event] = []
        var error: TDSDecodingError?
        /// Where the token being read when the error came starts (the last token or row boundary).
        var errorTokenStart = 0
        /// The current result's column types when the error came.
        var errorTypes: [TypeInfo] = []
        /// Breaches of the parts' order (a part for a column out of turn, an empty chunk, …).
        var problems: [String] = []
        /// The most chunk bytes one drain (the parts taken after one append) handed out.
        var largestDrainChunkBytes = 0
        /// The most bytes the decoder held unconsumed after a drain.
        var largestBuffered = 0
    }

    /// The parts of rows as they come (``TokenStreamDecoder/nextPart()``), assembled into events,
    /// their order checked.
    struct PartsState {
        /// The row being read in parts, its columns' types, the large value being read.
        var row: [Cell]?
        var types: [TypeInfo] = []
        var large: [UInt8]?
        var largeColumn = -1
        var problems: [String] = []
        /// Chunk bytes taken since the last reset.
        var chunkBytes = 0
        /// A row is being read in parts.
        var inRow: Bool { row != nil }

        mutating func problem(_ s: String, _ d: TokenStreamDecoder) { if problems.count < 5 { problems.append(s + " (at offset \(d.offset))") } }

        /// Takes `part` of decoder `d`: the event it completes (a token, a row), if any.
        mutating func take(_ part: TokenStreamDecoder.RowPart, _ d: TokenStreamDecoder) -> Event? {
            if case .token = part {} else if row == nil { row = []; types = d.columns.map(\.typeInfo) }
            switch part {
            case .token(let t):
                if row != nil { problem("token \(t.name) inside a row", d) }
                if Contract.isRow(t) {
                    problem("a row of the current result came whole: \(t)", d)
                    return WireRowProgressStreamedContractTests.event(t, d)
                }
                return .token(t)
            case .value(let c, let v):
                if large != nil { problem("a value (column \(c)) inside the large value of column \(largeColumn)", d) }
                if c != row!.count { problem("a value for column \(c) where column \(row!.count) was next", d) }
                row!.append(.value(v))
            case .chunk(let c, let b):
                if b.isEmpty { problem("an empty chunk for column \(c)", d) }
                if large == nil {
                    if c != row!.count { problem("a chunk for column \(c) where column \(row!.count) was next", d) }
                    large = []
                    largeColumn = c
                } else if c != largeColumn {
                    problem("a chunk for column \(c) inside the large value of column \(largeColumn)", d)
                }
                large! += b
                chunkBytes += b.count
            case .largeValueEnd(let c):
                if c != (large == nil ? row!.count : largeColumn) { problem("the end of column \(c) out of turn", d) }
                row!.append(.large(large ?? []))
                large = nil
            case .rowEnd:
                let r = row!
                if large != nil { problem("a row end inside a large value", d) }
                if r.count != types.count { problem("a row of \(r.count) parts for \(types.count) columns", d) }
                row = nil
                return .row(r, types: types)
            }
            return nil
        }
    }

    /// Reads `pieces` (the stream's bytes, in order) with ``TokenStreamDecoder/nextPart()`` (`parts`)
    /// or ``TokenStreamDecoder/next()`` only, draining after each append, then `finish()`.
    /// `from`: go on with this decoder (what it holds is read first) instead of a new one.
    static func read(_ pieces: [[UInt8]], options: Options = Options(), parts: Bool, from start: TokenStreamDecoder? = nil) -> Run {
        var d = start ?? TokenStreamDecoder(version: .v7_4, options: options)
        if parts { d.startResponse(rows: .parts) }
        var out = Run()
        var boundary = 0              // where the token or row being read starts
        var state = PartsState()
        func problem(_ s: String) { if out.problems.count < 5 { out.problems.append(s + " (at offset \(d.offset))") } }
        func drain() throws(TDSDecodingError) {
            state.chunkBytes = 0
            if parts {
                while let part = try d.nextPart() {
                    if let e = state.take(part, d) {
                        out.events.append(e)
                        boundary = d.offset
                    }
                }
            } else {
                while let t = try d.next() {
                    switch t {
                    case .row(let r): out.events.append(.row(r.values.map(Cell.value), types: d.columns.map(\.typeInfo)))
                    case .nbcRow(let r): out.events.append(.row(r.values.map(Cell.value), types: d.columns.map(\.typeInfo)))
                    default: out.events.append(.token(t))
                    }
                    boundary = d.offset
                }
            }
            out.largestDrainChunkBytes = max(out.largestDrainChunkBytes, state.chunkBytes)
            out.largestBuffered = max(out.largestBuffered, d.bufferedByteCount)
        }
        do throws(TDSDecodingError) {
            if start != nil {
                boundary = d.offset
                try drain()
            }
            for piece in pieces {
                d.append(piece)
                try drain()
            }
            if let t = try d.finish() {
                out.events.append(.token(t))
                boundary = d.offset
            }
            try drain()
            out.problems += state.problems
        } catch {
            out.problems += state.problems
            out.error = error
            out.errorTokenStart = boundary
            out.errorTypes = d.columns.map(\.typeInfo)
            // Failed for good: the same error again.
            do throws(TDSDecodingError) {
                _ = parts ? try d.nextPart().map { "\($0)" } : try d.next().map { "\($0)" }
                problem("no error after \(error)")
            } catch {
                if error != out.error { problem("\(error) after \(out.error!)") }
            }
        }
        return out
    }

    // MARK: - Large values' bytes

    /// The data of an encoded large value (PLP chunks concatenated; text/ntext/image after its
    /// TextPtr, timestamp and length).
    static func largeData(ofCell cell: [UInt8], _ type: TypeInfo) -> [UInt8]? {
        var r = ByteReader(cell)
        if type.isPLP {
            guard let total = try? r.readUInt64LE(), total != PLPProgress.plpNull else { return nil }
            var data: [UInt8] = []
            while let n = try? r.readUInt32LE(), n != 0 {
                guard let chunk = try? r.readBytes(Int(n)) else { return nil }
                data += chunk
            }
            return data
        }
        guard let n = try? r.readUInt8(), n != 0, (try? r.skip(Int(n) + 8)) != nil,
              let len = try? r.readUInt32LE(), let data = try? r.readBytes(Int(len)) else { return nil }
        return data
    }

    /// The wire bytes a large value of `type` decoded as `v` has: UTF-16LE for nvarchar(max),
    /// ntext and xml; UTF-8 for json; raw for binary and UDT; for varchar(max) and text the
    /// column's code page (the encoder's bytes).
    static func wireData(_ type: TypeInfo, _ v: SQLValue) -> [UInt8]? {
        switch (type.type, v) {
        case (.nvarchar, .string(let s)), (.ntext, .string(let s)), (.xml, .xml(let s)): return Contract.utf16(s)
        case (.json, .json(let s)): return Array(s.utf8)
        case (_, .binary(let b)), (_, .udt(let b)): return b
        case (.bigVarChar, .string), (.text, .string):
            var w = ByteWriter()
            guard (try? type.encodeValue(v, into: &w)) != nil else { return nil }
            return largeData(ofCell: w.bytes, type)
        default: return nil
        }
    }

    /// `data` decoded as a value of `type` (PLP: ``TypeInfo/decodePLPValue(_:)``; text/ntext/image: rebuilt as such a value),
    /// or the error the value decoder gives.
    static func decode(_ data: [UInt8], _ type: TypeInfo) -> Result<SQLValue, TDSDecodingError> {
        do throws(TDSDecodingError) {
            if type.isPLP { return .success(try type.decodePLPValue(data)) }
            var r = ByteReader(Contract.legacy(data))
            return .success(try type.decodeValue(from: &r))
        } catch {
            return .failure(error)
        }
    }

    /// The streamed cell `got` against the value `expected` (token decoder or block) of a column
    /// of `type`: nil when they agree. `exact`: a large value's bytes must be the wire bytes of
    /// `expected` (else: decoded as its type, they give `expected`).
    static func cellProblem(_ got: Cell, _ expected: SQLValue, _ type: TypeInfo, exact: Bool) -> String? {
        switch got {
        case .value(let v):
            return Contract.same(v, expected) ? nil : "\(Contract.short(v)) where the token decoder reads \(Contract.short(expected))"
        case .large(let data):
            if expected.isNull { return "\(data.count) bytes in chunks where the token decoder reads NULL" }
            if exact {
                guard let wire = wireData(type, expected) else { return "no wire bytes for \(Contract.short(expected)) of \(type.sqlTypeName)" }
                return wire == data ? nil : "chunks of \(data.count) bytes are not the \(wire.count) wire bytes of \(Contract.short(expected)) (\(type.sqlTypeName))"
            }
            switch decode(data, type) {
            case .success(let v): return Contract.same(v, expected) ? nil : "chunks decode as \(Contract.short(v)), the token decoder reads \(Contract.short(expected))"
            case .failure(let e): return "chunks do not decode (\(e)), the token decoder reads \(Contract.short(expected))"
            }
        }
    }

    /// Tokens equal (row-like tokens by their values, a NaN equal to itself).
    static func sameToken(_ a: Token, _ b: Token) -> Bool {
        switch (a, b) {
        case (.altRow(let x), .altRow(let y)): return x.id == y.id && Contract.sameRow(x.values, y.values)
        case (.returnValue(let x), .returnValue(let y)):
            var x0 = x, y0 = y
            x0.value = .null; y0.value = .null
            return x0 == y0 && Contract.same(x.value, y.value)
        default: return a == b
        }
    }

    /// Why `got` (read in parts) stopped agreeing with `expected` (the token decoder), or nil.
    /// `byDesign` is set when the first difference is one the streamed mode makes on purpose: the
    /// token decoder refused a large value for its size (maximumValueSize) or its content as a
    /// whole (its chunks do not decode as its type), and the streamed read handed it out.
    static func difference(_ got: Run, _ expected: Run, exact: Bool, byDesign: inout Bool) -> String? {
        byDesign = false
        for i in 0 ..< max(got.events.count, expected.events.count) {
            guard i < expected.events.count else {
                if let e = expected.error, isByDesign(e, streamed: got.events[i]) { byDesign = true; return nil }
                return "event \(i): \(got.events[i]) where the token decoder ends with \(expected.error.map { "\($0)" } ?? "no error")"
            }
            guard i < got.events.count else {
                return "event \(i): \(got.error.map { "\($0)" } ?? "the end") where the token decoder gives \(expected.events[i])"
            }
            switch (got.events[i], expected.events[i]) {
            case (.token(let a), .token(let b)):
                if !sameToken(a, b) { return "event \(i): token \(a) where the token decoder gives \(b)" }
            case (.row(let cells, let types), .row(let values, _)):
                guard cells.count == values.count, types.count == cells.count else {
                    return "event \(i): a row of \(cells.count) cells, the token decoder's has \(values.count)"
                }
                for c in cells.indices {
                    guard case .value(let v) = values[c] else { continue }
                    if let p = cellProblem(cells[c], v, types[c], exact: exact) { return "event \(i) column \(c) (\(types[c].sqlTypeName)): \(p)" }
                }
            default:
                return "event \(i): \(got.events[i]) where the token decoder gives \(expected.events[i])"
            }
        }
        switch (got.error, expected.error) {
        case (nil, nil): return nil
        case (let g?, let e?):
            if g.code == e.code, g.offset == e.offset, g.context == e.context { return nil }
            // The cap the streamed read does not apply: it reads on to the next rule broken.
            if e.code == .limitExceeded, e.detail.contains("maximum value size") { byDesign = true; return nil }
            // A large value refused as a whole (its content): the streamed read went past it, to
            // a later error in the same row.
            if got.errorTokenStart == expected.errorTokenStart, g.offset > e.offset, ["ROW", "NBCROW"].contains(e.context),
               let c = columnIndex(e), c < expected.errorTypes.count, isLarge(expected.errorTypes[c]) {
                byDesign = true
                return nil
            }
            return "error \(g) where the token decoder's is \(e)"
        case (let g?, nil): return "error \(g) where the token decoder reads the stream"
        case (nil, let e?):
            if e.code == .limitExceeded, e.detail.contains("maximum value size") { byDesign = true; return nil }
            return "no error where the token decoder's is \(e)"
        }
    }

    /// The 0-based column a row's error names ("column N: …"), if any.
    static func columnIndex(_ e: TDSDecodingError) -> Int? {
        guard e.detail.hasPrefix("column ") else { return nil }
        return Int(e.detail.dropFirst(7).prefix { $0.isNumber }).map { $0 - 1 }
    }

    /// The token decoder's `error` is one the streamed read does not make by design, given what
    /// the streamed read gave in its place.
    static func isByDesign(_ error: TDSDecodingError, streamed: Event) -> Bool {
        if error.code == .limitExceeded, error.detail.contains("maximum value size") { return true }
        // The column the error names is a large value whose chunks do not decode as its type.
        guard case .row(let cells, let types) = streamed, let c = columnIndex(error), c < cells.count,
              case .large(let data) = cells[c], case .failure = decode(data, types[c]) else { return false }
        return true
    }

    /// The parts of a stream read `feed`-wise against the token decoder on the whole stream, and the
    /// rows against the row scan's: the problems (empty when it holds).
    static func problems(_ bytes: [UInt8], _ feed: Feed, options: Options = Options(), exact: Bool = true,
                         expected: Run, blockRows: [[SQLValue]]? = nil) -> [String] {
        let got = read(feed.pieces(of: bytes), options: options, parts: true)
        var out = got.problems
        var byDesign = false
        if let d = difference(got, expected, exact: exact, byDesign: &byDesign) { out.append(d) }
        if let e = got.error, let p = errorPlaceProblem(e, tokenStart: got.errorTokenStart, bytes) { out.append("nextPart(): " + p) }
        if let blockRows {
            let rows = got.events.compactMap { e -> ([Cell], [TypeInfo])? in if case .row(let c, let t) = e { return (c, t) } else { return nil } }
            if rows.count != blockRows.count {
                out.append("\(rows.count) rows in parts, \(blockRows.count) from the row scan")
            } else {
                for (i, (cells, types)) in rows.enumerated() {
                    for c in cells.indices where c < blockRows[i].count {
                        if let p = cellProblem(cells[c], blockRows[i][c], types[c], exact: exact) {
                            out.append("row \(i) column \(c) against the row scan: \(p)")
                        }
                    }
                }
            }
        }
        return out
    }

    /// An error names the token being read (the token byte at `tokenStart`) and an offset in the
    /// stream from that token on.
    static func errorPlaceProblem(_ e: TDSDecodingError, tokenStart: Int, _ bytes: [UInt8]) -> String? {
        guard tokenStart < bytes.count else { return "error \(e) after the last token" }
        let name = TokenType(rawValue: bytes[tokenStart]).name
        if e.context != name { return "error \(e) names \(e.context), the token at \(tokenStart) is \(name)" }
        if e.offset < tokenStart || e.offset > bytes.count { return "error \(e) at an offset outside the token at \(tokenStart) ..< \(bytes.count)" }
        return nil
    }

    // MARK: - Fixtures

    /// Every type case of the oracle (every SQL Server type family), with json, vector, a UDT and
    /// large text in other code pages.
    static let typeCases: [OracleFixtures.TypeCase] = {
        var cases = OracleFixtures.typeCases()
        cases.append(.init("json", .json, [.init("NULL", .null), .init("empty", .json("")), .init("doc", .json("{\"k\":[1,\"é漢😀\"]}"))]))
        cases.append(.init("vector(3)", .vector(dimensions: 3), [.init("NULL", .null), .init("v", .vector(SQLVector([1.5, 0, -2])))]))
        cases.append(.init("vector(2) float16", .vector(dimensions: 2, elementType: .float16),
                           [.init("NULL", .null), .init("v", .vector(SQLVector([0.5, 2], elementType: .float16)))]))
        cases.append(.init("geography", Contract.udt, [.init("NULL", .null), .init("empty", .udt([])), .init("bytes", .udt([1, 2, 3, 0xFF]))]))
        cases.append(.init("varchar(max) Cyrillic", .varchar(nil, collation: OracleFixtures.cyrillic),
                           [.init("NULL", .null), .init("cp1251", .string("Привет, мир! Ёё")), .init("empty", .string(""))]))
        cases.append(.init("text Cyrillic", .text(collation: OracleFixtures.cyrillic), [.init("NULL", .null), .init("cp1251", .string("Жж текст"))]))
        cases.append(.init("varchar(max) UTF-8", .varchar(nil, collation: OracleFixtures.utf8), [.init("NULL", .null), .init("utf8", .string("😀 ünïcödé € 日本"))]))
        cases.append(.init("varchar(max) Japanese", .varchar(nil, collation: OracleFixtures.japanese), [.init("cp932", .string("日本語ﾃｷｽﾄ テスト"))]))
        return cases
    }()

    static func isLarge(_ t: TypeInfo) -> Bool { t.isPLP || t.type == .text || t.type == .ntext || t.type == .image }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }

    /// [MS-TDS] 2.2.7.1 ALTMETADATA (7.4: UserType ULONG): Id `id`, BY column 1, each column the
    /// SUM (0x4D) of column 1.
    static func altMetadata(id: UInt16, _ columns: [ColumnMetadata]) -> [UInt8] {
        var out: [UInt8] = [0x88] + le16(UInt16(columns.count)) + le16(id) + [1] + le16(1)
        for c in columns {
            out += [0x4D] + le16(1) + Array(ServerTokens.colMetadata([c], version: .v7_4).dropFirst(3))
        }
        return out
    }

    /// [MS-TDS] 2.2.7.2 ALTROW: Id, then the values as in ROW.
    static func altRow(id: UInt16, _ values: [SQLValue], _ columns: [ColumnMetadata], chunking: [ServerTokens.PLPChunking?] = []) throws -> [UInt8] {
        [0xD3] + le16(id) + Array(try ServerTokens.row(values, columns: columns, chunking: chunking).dropFirst())
    }

    /// A random response of 1 or 2 results of columns of every family (large values of up to
    /// 9,000 bytes in random chunks), ROW and NBCROW, INFO between rows, ALTMETADATA and ALTROW,
    /// then RETURNVALUEs (a large one among them), RETURNSTATUS, DONEPROC, DONE.
    static func mixedStream(_ rng: inout SeededRandom, maxLarge: Int = 9000) throws -> [UInt8] {
        func below(_ n: Int) -> Int { Int(rng.next() % UInt64(max(1, n))) }
        func pick<T>(_ a: [T]) -> T { a[below(a.count)] }
        func chunking() -> ServerTokens.PLPChunking? {
            below(3) == 0 ? nil : ServerTokens.PLPChunking(sizes: (0 ..< 1 + below(3)).map { _ in 1 + below(900) }, unknownLength: below(2) == 0)
        }
        func value(_ c: OracleFixtures.TypeCase) -> SQLValue {
            // A long value of the large types in the default code page (or UTF-16, binary).
            if isLarge(c.type), below(3) == 0, !["Cyrillic", "UTF-8", "Japanese"].contains(where: c.name.contains) {
                return Contract.value(c.type, size: pick([1, 2, 100, 999, 3000, maxLarge]), seed: below(1000))
            }
            return pick(c.values).value
        }
        var out: [UInt8] = []
        let results = 1 + below(2)
        for _ in 0 ..< results {
            let cases = (0 ..< 1 + below(9)).map { _ in pick(typeCases) }
            let columns = cases.enumerated().map { ColumnMetadata(userType: $0.element.userType, flags: [.nullable], typeInfo: $0.element.type, name: "c\($0.offset)") }
            out += ServerTokens.colMetadata(columns, version: .v7_4)
            let altColumns = Contract.columns([pick([.int, .nvarchar(nil), .varbinary(nil), .ntext(), .decimal(precision: 10, scale: 2)]), pick([.bigint, .varchar(nil), .image])])
            let hasAlt = below(2) == 0
            if hasAlt { out += altMetadata(id: 7, altColumns) }
            let rows = below(6)
            for _ in 0 ..< rows {
                let values = cases.map { value($0) }
                let chunks = cases.map { _ in chunking() }
                out += below(2) == 0 ? try ServerTokens.row(values, columns: columns, chunking: chunks)
                                     : try ServerTokens.nbcRow(values, columns: columns, chunking: chunks)
                if below(4) == 0 { out += ServerTokens.message(number: 5701, text: "changed é", version: .v7_4) }
                if hasAlt, below(3) == 0 {
                    let alt: [SQLValue] = altColumns.map { c in
                        below(4) == 0 ? .null : (isLarge(c.typeInfo) ? Contract.value(c.typeInfo, size: pick([1, 5, 700]), seed: below(99))
                                                                     : c.typeInfo.type == .decimalN ? .decimal(SQLDecimal(isNegative: true, precision: 10, scale: 2, magnitude: 12345))
                                                                     : c.typeInfo.length == 8 ? .bigint(-5) : .int(42))
                    }
                    out += try altRow(id: 7, alt, altColumns,
                                      chunking: altColumns.map { _ in chunking() })
                }
            }
            out += ServerTokens.done(token: results > 1 ? 0xFF : 0xFD, status: [.count, .more], rowCount: UInt64(rows), version: .v7_4)
        }
        for k in 0 ..< below(3) {
            let type = pick([TypeInfo.nvarchar(nil), .varbinary(nil), .int, .xml, .varchar(nil), .nvarchar(30)])
            let v: SQLValue = below(4) == 0 ? .null : isLarge(type) ? Contract.value(type, size: pick([0, 3, 900, maxLarge]), seed: k) : type.type == .intN ? .int(-9) : .string("out é")
            out += try ServerTokens.returnValue(ordinal: UInt16(k + 1), name: "@p\(k)", type: type, value: v,
                                                chunking: chunking(), version: .v7_4)
        }
        out += ServerTokens.returnStatus(0)
        out += ServerTokens.done(token: 0xFE, status: [], version: .v7_4)
        out += ServerTokens.done(status: [.count], rowCount: 1, version: .v7_4)
        return out
    }

    // MARK: - 1. Parts of random mixed results

    /// Random responses of every column family (bounded, PLP, text/ntext/image, json, vector,
    /// UDT, NBCROW NULLs), with ALTROW, RETURNVALUE, INFO and DONE tokens, read in parts whole,
    /// byte by byte, split at random and in 4 KiB packets: the parts are in order, each bounded
    /// value is what `next()` and the row scan read, each large value's chunks concatenated are
    /// its wire bytes, the tokens come in the stream's order.
    func testPartsOfRandomMixedResultsAreTheTokenDecodersValuesAndWireBytes() throws {
        let seed: UInt64 = 0x57E4_A3ED
        var rng = SeededRandom(seed: seed)
        var broken = Contract.Problems()
        var runs = 0, rows = 0, largeCells = 0, tokens = 0
        for iteration in 0 ..< 40 {
            let stream = try Self.mixedStream(&rng)
            let expected = Self.read([stream], parts: false)
            XCTAssertNil(expected.error, "iteration \(iteration): the fixture is valid")
            let block = Contract.drive(stream, .whole)
            XCTAssertNil(block.error, "iteration \(iteration): the row scan reads the fixture")
            for e in expected.events {
                if case .row = e { rows += 1 } else { tokens += 1 }
            }
            var feeds: [Feed] = [.whole, .random(seed: UInt64(iteration)), .packets(4096)]
            if iteration % 4 == 0 { feeds.append(.byteByByte) }
            for feed in feeds {
                runs += 1
                let got = Self.read(feed.pieces(of: stream), parts: true)
                for e in got.events {
                    if case .row(let cells, _) = e { largeCells += cells.filter { if case .large = $0 { return true } else { return false } }.count }
                }
                for p in Self.problems(stream, feed, expected: expected, blockRows: block.rows) {
                    broken.note(p, in: "seed \(seed) iteration \(iteration), \(feed)")
                }
            }
        }
        XCTAssertGreaterThan(rows, 60, "rows read")
        XCTAssertGreaterThan(largeCells, 200, "large values read in chunks")
        XCTAssertGreaterThan(tokens, 100, "tokens between rows")
        if !broken.isEmpty { XCTFail("random mixed results (\(runs) runs): parts differ:\n\(broken)") }
    }

    /// One row with a value of every large kind beside bounded ones, PLP in 1-byte chunks and
    /// of unknown length: the chunks concatenated are the wire bytes, byte by byte too.
    func testEveryLargeKindStreamsItsWireBytes() throws {
        let kinds = Contract.largeKinds.map(\.1) + [.varchar(nil, collation: OracleFixtures.cyrillic), .text(collation: OracleFixtures.cyrillic),
                                                    .varchar(nil, collation: OracleFixtures.utf8)]
        let types: [TypeInfo] = kinds.flatMap { [$0, .nvarchar(10)] }
        let columns = Contract.columns(types)
        var values: [SQLValue] = []
        for (i, t) in kinds.enumerated() {
            switch t.collation?.lcid {
            case 0x0419 where t.type == .bigVarChar || t.type == .text: values.append(.string("Привет Ёё \(i)"))
            default:
                if t.collation?.flags.contains(.utf8) == true { values.append(.string("😀 ünï \(i)")) } else { values.append(Contract.value(t, size: 300, seed: i)) }
            }
            values.append(.string("n\(i)"))
        }
        for chunking in [ServerTokens.PLPChunking(sizes: [1]), ServerTokens.PLPChunking(sizes: [7, 1000], unknownLength: true)] {
            let stream = try Contract.result(columns, [values, values.enumerated().map { $0.offset % 4 == 0 ? .null : $0.element }],
                                             nbc: { $0 == 1 }, chunking: { _ in types.map { _ in chunking } })
            let expected = Self.read([stream], parts: false)
            XCTAssertNil(expected.error)
            for feed in [Feed.whole, .byteByByte, .random(seed: 3)] {
                let p = Self.problems(stream, feed, expected: expected, blockRows: Contract.drive(stream, .whole).rows)
                XCTAssertEqual(p, [], "\(feed), \(chunking)")
            }
            // The parts, whole: the chunks are the wire bytes of the values built.
            let got = Self.read([stream], parts: true)
            guard case .row(let cells, _) = got.events[1] else { return XCTFail("no row") }
            for (k, t) in kinds.enumerated() {
                guard case .large(let data) = cells[2 * k] else { XCTFail("\(t.sqlTypeName): not in chunks"); continue }
                XCTAssertEqual(data, Self.wireData(t, values[2 * k]), t.sqlTypeName)
            }
        }
    }

    // MARK: - 2. Hostile input

    /// A valid response of every kind of row and token, mutated (1 to 3 bytes, or a 4-byte
    /// length field) hundreds of times, read in parts whole, at random and byte by byte: no trap;
    /// the token decoder's events and error (code, offset, token name) but where the streamed
    /// mode differs by design (a large value's size or its content as a whole), which is counted.
    func testMutatedStreamsGiveTheTokenDecodersPartsAndErrors() throws {
        let seed: UInt64 = 0x40571_1E
        var rng = SeededRandom(seed: seed)
        let base = try Self.hostileBase()
        let first = ServerTokens.colMetadata([], version: .v7_4).count
        var broken = Contract.Problems()
        var failed = 0, byDesign = 0, sameError = 0
        let iterations = 300
        for iteration in 0 ..< iterations {
            var bytes = base
            var mutation: [(Int, UInt8)] = []
            for _ in 0 ... Int(rng.next() % 3) {
                let at = first + Int(rng.next() % UInt64(base.count - first))
                if rng.next() % 3 == 0, at + 4 <= base.count {
                    let v: UInt32 = [0, 0xFFFF_FFFF, UInt32(rng.next() % 16), 0x7FFF_FFFF, UInt32(truncatingIfNeeded: rng.next())][Int(rng.next() % 5)]
                    for k in 0 ..< 4 { bytes[at + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt32(k))); mutation.append((at + k, bytes[at + k])) }
                    continue
                }
                let b: UInt8 = [0xFF, 0, UInt8(truncatingIfNeeded: rng.next()), bytes[at] ^ 0x80][Int(rng.next() % 4)]
                bytes[at] = b
                mutation.append((at, b))
            }
            if rng.next() % 4 == 0 { bytes.removeLast(Int(rng.next() % UInt64(bytes.count - first))) }   // truncated too
            let expected = Self.read([bytes], parts: false)
            if let e = expected.error {
                failed += 1
                if let p = Self.errorPlaceProblem(e, tokenStart: expected.errorTokenStart, bytes) { broken.note("next(): " + p, in: "iteration \(iteration)") }
            }
            var feeds: [Feed] = [.whole, .random(seed: UInt64(iteration))]
            if iteration % 4 == 0 { feeds.append(.byteByByte) }
            for feed in feeds {
                let got = Self.read(feed.pieces(of: bytes), parts: true)
                var designed = false
                var p = got.problems
                if let d = Self.difference(got, expected, exact: false, byDesign: &designed) { p.append(d) }
                if designed { byDesign += 1 }
                if let e = expected.error, let g = got.error, e.code == g.code, e.offset == g.offset, e.context == g.context { sameError += 1 }
                if let e = got.error, let q = Self.errorPlaceProblem(e, tokenStart: got.errorTokenStart, bytes) { p.append("nextPart(): " + q) }
                for x in p { broken.note(x, in: "seed \(seed) iteration \(iteration) mutation \(mutation) (offset, byte), \(bytes.count) bytes, \(feed)") }
            }
        }
        if !broken.isEmpty { XCTFail("mutations (\(iterations) streams): parts differ from the token decoder:\n\(broken)") }
        XCTAssertGreaterThan(failed, 60, "mutations the token decoder refuses")
        XCTAssertLessThan(failed, iterations - 20, "mutations it reads")
        XCTAssertGreaterThan(sameError, 2 * 60, "runs in parts ending with the token decoder's error")
        print("mutated streams: \(failed) of \(iterations) refused by next(); in parts, \(sameError) runs with its error, \(byDesign) runs differing by design")
    }

    /// The valid stream the hostile tests mutate (about 2.5 KB): a column of every large kind
    /// among bounded ones (vector, sql_variant, decimal, datetime2, nvarchar(20), varchar(max) in
    /// code page 932), ROW and NBCROW with NULLs, PLP in small chunks and of unknown length,
    /// ALTMETADATA and ALTROW with an nvarchar(max), INFO, RETURNVALUE of nvarchar(max) and
    /// varbinary(max), RETURNSTATUS, DONEPROC.
    static func hostileBase() throws -> [UInt8] {
        let types: [TypeInfo] = [.int, .nvarchar(nil), .varchar(50), .ntext(), .varbinary(nil), .decimal(precision: 10, scale: 2), .xml, .image,
                                 .json, Contract.udt, .vector(dimensions: 3), .varchar(nil, collation: OracleFixtures.japanese), .text(), .nvarchar(20),
                                 .sqlVariant, .datetime2(scale: 7)]
        let columns = Contract.columns(types)
        var rows: [[SQLValue]] = []
        for i in 0 ..< 4 {
            var row: [SQLValue] = [.int(Int32(i)), Contract.value(.nvarchar(nil), size: 40, seed: i), .string("m\(i) é"), Contract.value(.ntext(), size: 30, seed: i),
                                   Contract.value(.varbinary(nil), size: 50, seed: i), .decimal(SQLDecimal(isNegative: i == 1, precision: 10, scale: 2, magnitude: UInt128(i) * 1001)),
                                   Contract.value(.xml, size: 30, seed: i), Contract.value(.image, size: 20, seed: i), Contract.value(.json, size: 20, seed: i),
                                   Contract.value(Contract.udt, size: 10, seed: i), .vector(SQLVector([1.5, Float(i), -2])), .string("日本語 \(i)"),
                                   Contract.value(.text(), size: 16, seed: i), .string("😀\(i)"), .variant(SQLVariant(value: .int(Int32(i)))!),
                                   .datetime2(SQLDateTime2(date: SQLDate(days: Int32(700_000 + i)), time: SQLTime(ticks: UInt64(i) * 1_000_000_007, scale: 7)))]
            if i % 2 == 1 { for c in stride(from: 1 + i, to: row.count, by: 3) { row[c] = .null } }
            rows.append(row)
        }
        var out = ServerTokens.colMetadata(columns, version: .v7_4)
        let alt = Contract.columns([.int, .nvarchar(nil)])
        out += altMetadata(id: 2, alt)
        for (i, row) in rows.enumerated() {
            let chunking: [ServerTokens.PLPChunking?] = types.map { _ in ServerTokens.PLPChunking(sizes: [5 + i, 11], unknownLength: i == 2) }
            out += i % 2 == 1 ? try ServerTokens.nbcRow(row, columns: columns, chunking: chunking) : try ServerTokens.row(row, columns: columns, chunking: chunking)
            if i == 1 { out += ServerTokens.message(number: 8153, text: "Warning: null value", version: .v7_4) }
            if i == 2 { out += try altRow(id: 2, [.int(7), .string("sum é😀")], alt, chunking: [nil, .init(sizes: [3])]) }
        }
        out += ServerTokens.done(token: 0xFF, status: [.count, .more], rowCount: 4, version: .v7_4)
        out += try ServerTokens.returnValue(ordinal: 1, name: "@n", type: .nvarchar(nil), value: .string("out 漢字"), chunking: .init(sizes: [4]), version: .v7_4)
        out += try ServerTokens.returnValue(ordinal: 2, name: "@b", type: .varbinary(nil), value: .binary(Array(0 ..< 30)), chunking: .init(sizes: [7], unknownLength: true), version: .v7_4)
        out += ServerTokens.returnStatus(0)
        out += ServerTokens.done(token: 0xFE, status: [.count], rowCount: 4, version: .v7_4)
        return out
    }

    /// The hostile base is what it says (a check of the fixture).
    func testHostileBaseIsValid() throws {
        let base = try Self.hostileBase()
        let run = Self.read([base], parts: false)
        XCTAssertNil(run.error)
        XCTAssertEqual(run.events.map { e -> String in if case .token(let t) = e { return t.name } else { return "row" } },
                       ["COLMETADATA", "ALTMETADATA", "row", "row", "INFO", "row", "ALTROW", "row", "DONEINPROC", "RETURNVALUE", "RETURNVALUE", "RETURNSTATUS", "DONEPROC"])
        XCTAssertEqual(Self.problems(base, .byteByByte, expected: run, blockRows: Contract.drive(base, .whole).rows), [])
        XCTAssertLessThan(base.count, 4000)
    }

    /// A response cut at every byte: in parts, the token decoder's events and its `.truncated`
    /// error (token name and offset).
    func testStreamsCutAtEveryByte() throws {
        let columns = Contract.columns([.int, .nvarchar(nil), .image, .varbinary(nil), .ntext(), .nvarchar(20)])
        let rows: [[SQLValue]] = [[.int(1), .string("ab😀"), .binary([1, 2, 3]), .binary([4, 5]), .string("nt é"), .string("x")],
                                  [.int(2), .null, .binary([6]), .binary([]), .null, .null],
                                  [.int(3), .string(""), .null, .binary([7, 8, 9, 10, 11]), .string(""), .string("")]]
        let whole = try Contract.result(columns, rows, nbc: { $0 == 1 }, chunking: { _ in [nil, .init(sizes: [3, 1], unknownLength: true), nil, .init(sizes: [2])] })
            + ServerTokens.message(number: 1, text: "i", version: .v7_4)
            + ServerTokens.returnValue(ordinal: 1, name: "@o", type: .nvarchar(nil), value: .string("out 😀"), chunking: .init(sizes: [3]), version: .v7_4)
            + ServerTokens.done(version: .v7_4)
        var broken = Contract.Problems()
        var atBoundary = 0
        for cut in 1 ..< whole.count {
            let bytes = Array(whole[..<cut])
            let expected = Self.read([bytes], parts: false)
            if expected.error == nil { atBoundary += 1 } else if expected.error?.code != .truncated { broken.note("the token decoder's error is \(expected.error!)", in: "cut \(cut)") }
            for feed in [Feed.whole, .byteByByte] {
                for p in Self.problems(bytes, feed, exact: true, expected: expected) { broken.note(p, in: "cut at \(cut), \(feed)") }
            }
        }
        XCTAssertEqual(atBoundary, 7, "cuts between tokens (after COLMETADATA, each row, INFO, RETURNVALUE)")
        if !broken.isEmpty { XCTFail("cut at every byte: parts differ:\n\(broken)") }
    }

    /// Large values the token decoder refuses as a whole, streamed: handed out (by design), and the
    /// stream goes on; framing errors (chunk past the total, a total above 2^31-1) are the same.
    func testStreamedLargeValuesAreNotCheckedAsAWholeButFramedAlike() throws {
        let columns = Contract.columns([.int, .nvarchar(nil), .json, .ntext()])
        func stream(_ cells: [[UInt8]]) -> [UInt8] {
            Contract.rawResult(columns, [[[4, 1, 0, 0, 0], Contract.plp(total: 2, chunks: [[0x41, 0]]), Contract.plp(total: 1, chunks: [[0x31]]), Contract.legacy([0x42, 0])],
                                         [[4, 2, 0, 0, 0]] + cells])
        }
        let okN = Contract.plp(total: 2, chunks: [[0x41, 0]]), okJ = Contract.plp(total: 2, chunks: [[0x5B, 0x5D]]), okT = Contract.legacy([0x43, 0])
        // By design: refused by next(), handed out in parts, then the stream goes on.
        let designed: [(String, [[UInt8]], Options)] = [
            ("nvarchar(max) lone surrogate", [Contract.plp(total: 4, chunks: [[0x41, 0], [0x00, 0xD8]]), okJ, okT], Options()),
            ("nvarchar(max) odd byte count", [Contract.plp(total: 3, chunks: [[0x41, 0, 0x42]]), okJ, okT], Options()),
            ("json not UTF-8", [okN, Contract.plp(total: 3, chunks: [[0x5B, 0xC3, 0x5D]]), okT], Options()),
            ("ntext lone surrogate", [okN, okJ, Contract.legacy([0x00, 0xDC])], Options()),
            ("nvarchar(max) above maximumValueSize", [Contract.plp(total: 40, chunks: [[UInt8](repeating: 0x41, count: 40)]), okJ, okT], Options(maximumValueSize: 10)),
            ("ntext above maximumValueSize", [okN, okJ, Contract.legacy([UInt8](repeating: 0x41, count: 40))], Options(maximumValueSize: 10)),
        ]
        for (name, cells, options) in designed {
            let bytes = stream(cells)
            let expected = Self.read([bytes], options: options, parts: false)
            XCTAssertNotNil(expected.error, "\(name): next() refuses it")
            for feed in [Feed.whole, .byteByByte] {
                let got = Self.read(feed.pieces(of: bytes), options: options, parts: true)
                XCTAssertEqual(got.problems, [], name)
                XCTAssertNil(got.error, "\(name), \(feed): read in parts")
                guard got.events.count == 4, case .row(let cells2, _) = got.events[2] else { XCTFail("\(name), \(feed): \(got.events)"); continue }
                let data = cells2.dropFirst().compactMap { c -> [UInt8]? in if case .large(let b) = c { return b } else { return nil } }
                XCTAssertEqual(data, cells.map { Self.largeData(ofCell: $0, columns[1 + cells.firstIndex(of: $0)!].typeInfo) ?? [] }, "\(name), \(feed)")
                var designedFlag = false
                XCTAssertNil(Self.difference(got, expected, exact: false, byDesign: &designedFlag), name)
                XCTAssertTrue(designedFlag, "\(name): classified as by design")
            }
        }
        // An ntext length of 0xFFFFFFFF: NULL in parts (no cap applies), as next() reads it under
        // a cap of 4 GiB or more; under the default cap next() refuses it (by design).
        let allOnes = stream([okN, okJ, Array(Contract.legacy([]).dropLast(4)) + Contract.le32(0xFFFF_FFFF)])
        for options in [Options(), Options(maximumValueSize: 1 << 40)] {
            let expected = Self.read([allOnes], options: options, parts: false)
            for feed in [Feed.whole, .byteByByte] {
                let got = Self.read(feed.pieces(of: allOnes), options: options, parts: true)
                XCTAssertNil(got.error, "ntext length 0xFFFFFFFF, \(feed)")
                guard got.events.count == 4, case .row(let cells, _) = got.events[2], case .value(.null) = cells[3] else {
                    XCTFail("ntext length 0xFFFFFFFF, \(feed): not NULL in parts: \(got.events)"); continue
                }
                var designedFlag = false
                XCTAssertNil(Self.difference(got, expected, exact: true, byDesign: &designedFlag), "ntext length 0xFFFFFFFF, cap \(options.maximumValueSize)")
                XCTAssertEqual(designedFlag, options.maximumValueSize < 1 << 32, "cap \(options.maximumValueSize)")
            }
        }
        // Framing: the same error in parts.
        let framing: [(String, [[UInt8]])] = [
            ("chunk past the total", [Contract.plp(total: 2, chunks: [[0x41, 0, 0x42, 0]]), okJ, okT]),
            ("total above the chunks", [Contract.plp(total: 6, chunks: [[0x41, 0]]), okJ, okT]),
            ("total of 2^31", [Contract.le64(1 << 31) + Contract.le32(2) + [0x41, 0] + Contract.le32(0), okJ, okT]),
            ("chunk past 2^31-1, unknown length", [Contract.le64(PLPProgress.unknownPLPLength) + Contract.le32(0x8000_0000) + [0x41, 0], okJ, okT]),
            ("ntext length above 2^31-1", [okN, okJ, Array(Contract.legacy([]).dropLast(4)) + Contract.le32(0x8000_0001) + [0x41, 0]]),
        ]
        for (name, cells) in framing {
            let bytes = stream(cells)
            let options = Options(maximumValueSize: 1 << 40)   // so next() applies no size cap either
            let expected = Self.read([bytes], options: options, parts: false)
            XCTAssertNotNil(expected.error, name)
            for feed in [Feed.whole, .byteByByte, .random(seed: 2)] {
                let got = Self.read(feed.pieces(of: bytes), options: options, parts: true)
                var designedFlag = false
                XCTAssertNil(Self.difference(got, expected, exact: true, byDesign: &designedFlag), "\(name), \(feed)")
                XCTAssertFalse(designedFlag, name)
                XCTAssertEqual(got.error?.context, "ROW", name)
            }
        }
    }

    // MARK: - 3. Memory

    /// An 8 MB varbinary(max) fed in 4 KiB packets, parts taken as they come: each drain hands out
    /// at most one packet of chunk bytes, the decoder holds at most a packet, and the bytes are the value's.
    func testAnEightMegabyteValueIsHandedOutPacketByPacket() throws {
        let pattern = (0 ..< 8191).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        var value: [UInt8] = []
        value.reserveCapacity(8 << 20)
        while value.count < 8 << 20 { value += pattern }
        value.removeLast(value.count - (8 << 20))
        let columns = Contract.columns([.int, .varbinary(nil), .nvarchar(10)])
        var stream = ServerTokens.colMetadata(columns, version: .v7_4) + [0xD1, 4, 9, 0, 0, 0] + Contract.le64(UInt64(value.count))
        stream.reserveCapacity(stream.count + value.count + value.count / 8000 * 4 + 64)
        for i in stride(from: 0, to: value.count, by: 8000) {
            stream += Contract.le32(UInt32(min(8000, value.count - i)))
            stream += value[i ..< min(i + 8000, value.count)]
        }
        stream += Contract.le32(0) + [4, 0, 0x6F, 0, 0x6B, 0] + ServerTokens.done(version: .v7_4)
        var d = TokenStreamDecoder(version: .v7_4, options: .init(maximumValueSize: 1 << 20))   // a cap below the value: streamed, not bounded
        d.startResponse(rows: .parts)
        var received = 0, largestDrain = 0, largestBuffered = 0, ends = 0
        var mismatch: Int?
        var others: [String] = []
        for start in stride(from: 0, to: stream.count, by: 4096) {
            d.append(Array(stream[start ..< min(start + 4096, stream.count)]))
            var drained = 0
            while let part = try d.nextPart() {
                switch part {
                case .chunk(let c, let b):
                    XCTAssertEqual(c, 1)
                    drained += b.count
                    if mismatch == nil, received + b.count <= value.count,
                       value.withUnsafeBytes({ v in b.withUnsafeBytes { memcmp(v.baseAddress! + received, $0.baseAddress!, b.count) } }) != 0 {
                        mismatch = received
                    }
                    received += b.count
                case .largeValueEnd: ends += 1
                case .value(let c, let v): others.append("\(c)=\(v)")
                case .rowEnd: others.append("end")
                case .token(let t): others.append(t.name)
                }
            }
            largestDrain = max(largestDrain, drained)
            largestBuffered = max(largestBuffered, d.bufferedByteCount)
        }
        try d.finish()
        XCTAssertEqual(received, value.count)
        XCTAssertNil(mismatch, "the chunks differ from the value at byte \(mismatch ?? -1)")
        XCTAssertEqual(ends, 1)
        XCTAssertEqual(others, ["COLMETADATA", "0=9", "2=ok", "end", "DONE"])
        XCTAssertLessThanOrEqual(largestDrain, 4096, "chunk bytes handed out after one packet")
        XCTAssertLessThan(largestBuffered, 4096, "bytes the decoder holds after the parts are taken")
    }

    /// Declared lengths of 2^31-1 (PLP total and chunk, unknown-length chunk, ntext length) with a
    /// few bytes, streamed: nothing large is allocated; the message ends `.truncated` at the row.
    func testDeclaredLengthsOf2GiBAllocateNothingWhenStreamed() throws {
        guard let before = Contract.virtualMemoryBytes() else { throw XCTSkip("no /proc/self/statm: virtual memory cannot be read here") }
        let columns = Contract.columns([.int, .varbinary(nil), .ntext()])
        let head = ServerTokens.colMetadata(columns, version: .v7_4) + [0xD1, 4, 1, 0, 0, 0]
        let cases: [(String, [UInt8])] = [
            ("PLP total and chunk of 2^31-1", head + Contract.le64(0x7FFF_FFFF) + Contract.le32(0x7FFF_FFFF) + [1, 2, 3]),
            ("unknown-length PLP, a chunk of 2^31-1", head + Contract.le64(PLPProgress.unknownPLPLength) + Contract.le32(0x7FFF_FFFF) + [1, 2, 3]),
            ("ntext of 2^31-1", head + Contract.le64(0xFFFF_FFFF_FFFF_FFFF) + Array(Contract.legacy([]).dropLast(4)) + Contract.le32(0x7FFF_FFFF) + [0x41, 0]),
        ]
        for (name, bytes) in cases {
            for feed in [Feed.whole, .byteByByte] {
                var growth = 0
                var d = TokenStreamDecoder(version: .v7_4)
                d.startResponse(rows: .parts)
                var chunkBytes = 0
                do {
                    for piece in feed.pieces(of: bytes) {
                        d.append(piece)
                        while let part = try d.nextPart() { if case .chunk(_, let b) = part { chunkBytes += b.count } }
                        growth = max(growth, (Contract.virtualMemoryBytes() ?? 0) - before)
                    }
                    try d.finish()
                    XCTFail("\(name), \(feed): the message ends inside the row")
                } catch {
                    XCTAssertEqual(error.code, .truncated, name)
                    XCTAssertEqual(error.context, "ROW", name)
                    XCTAssertEqual(error.offset, head.count - 6, name)
                }
                XCTAssertEqual(chunkBytes, bytes.count - bytes.lastIndex(of: 0x7F)! - 1, "\(name): the bytes that arrived are handed out")
                XCTAssertLessThan(growth, 64 << 20, "\(name), \(feed): memory allocated by a declared length")
            }
        }
    }

    // MARK: - 4. One row mode per response

    /// A result: row 0 with large values, row 1 small, an INFO, row 2 with a large value, DONE.
    static func switchStream() throws -> (bytes: [UInt8], columns: [ColumnMetadata], rowStarts: [Int], rows: [[SQLValue]]) {
        let columns = Contract.columns([.int, .varbinary(nil), .nvarchar(nil), .ntext(), .nvarchar(10)])
        let rows: [[SQLValue]] = [[.int(1), .binary((0 ..< 300).map { UInt8(truncatingIfNeeded: $0) }), .string("zero 😀"), .string("nt"), .string("a")],
                                  [.int(2), .null, .string(""), .null, .string("b")],
                                  [.int(3), .binary([9, 9]), .null, .string("é"), .null]]
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        var starts: [Int] = []
        for (i, r) in rows.enumerated() {
            starts.append(bytes.count)
            bytes += i == 1 ? try ServerTokens.nbcRow(r, columns: columns) : try ServerTokens.row(r, columns: columns, chunking: [nil, .init(sizes: [100]), .init(sizes: [3])])
            if i == 1 { bytes += ServerTokens.message(number: 2, text: "between", version: .v7_4) }
        }
        bytes += ServerTokens.done(status: .count, rowCount: 3, version: .v7_4)
        return (bytes, columns, starts, rows)
    }

    /// The row mode is fixed for a response (``TokenStreamDecoder/startResponse(rows:)``): in
    /// `.whole` (the default) `nextPart()` gives every row whole, as its token; in `.parts`,
    /// `next()` passes rows over and `appendBufferedRows` appends none; asked for inside a row (the
    /// input cut anywhere in row 0), a change is ignored and the row ends in parts as if read in
    /// parts whole; a later response sets the mode again.
    func testTheRowModeIsFixedForAResponse() throws {
        let (bytes, _, starts, rows) = try Self.switchStream()
        var d = TokenStreamDecoder(version: .v7_4)
        XCTAssertEqual(d.rowMode, .whole)
        d.append(bytes)
        var names: [String] = []
        while let part = try d.nextPart() {
            guard case .token(let t) = part else { return XCTFail("a part in .whole: \(part)") }
            names.append(t.name)
        }
        XCTAssertEqual(names, ["COLMETADATA", "ROW", "NBCROW", "INFO", "ROW", "DONE"])
        try d.finish()
        d.startResponse(rows: .parts)
        XCTAssertEqual(d.rowMode, .parts)
        d.append(bytes)
        guard case .colMetadata = try d.next() else { return XCTFail("COLMETADATA") }
        guard var block = d.makeWireRowBlock() else { return XCTFail("no block") }
        let (n, end) = d.appendBufferedRows(to: &block, limit: 100, byteLimit: 1 << 20)
        XCTAssertEqual(n, 0)
        XCTAssertEqual(end, .incremental)
        names = []
        while let t = try d.next() { names.append(t.name) }
        XCTAssertEqual(names, ["INFO", "DONE"], "next() in .parts passes the rows over")
        try d.finish()
        d.startResponse(rows: .whole)
        d.append(bytes)
        var whole: [[SQLValue]] = []
        while let t = try d.next() {
            if case .row(let r) = t { whole.append(r.values) }
            if case .nbcRow(let r) = t { whole.append(r.values) }
        }
        XCTAssertTrue(whole.count == 3 && zip(whole, rows).allSatisfy { Contract.sameRow($0.0, $0.1) }, "the next response, whole: \(whole.map(Contract.short))")

        let inParts = Self.read([bytes], parts: true)
        var broken = Contract.Problems()
        for cut in (starts[0] + 1) ..< starts[1] {
            var d = TokenStreamDecoder(version: .v7_4)
            d.startResponse(rows: .parts)
            var state = PartsState()
            var got = Run()
            func drain() throws(TDSDecodingError) {
                while let part = try d.nextPart() { if let e = state.take(part, d) { got.events.append(e) } }
            }
            d.append(Array(bytes[..<cut]))
            try drain()
            XCTAssertTrue(d.isReadingRow, "cut \(cut): row 0 is begun")
            d.startResponse(rows: .whole)
            if d.rowMode != .parts { broken.note("the mode changed inside a row", in: "cut \(cut)") }
            d.append(Array(bytes[cut...]))
            try drain()
            try d.finish()
            for p in state.problems { broken.note(p, in: "cut \(cut)") }
            var designed = false
            if let p = Self.difference(got, inParts, exact: true, byDesign: &designed) { broken.note(p, in: "cut \(cut)") }
        }
        if !broken.isEmpty { XCTFail("a mode change inside a row:\n\(broken)") }
    }

    /// Each row mode reads the same values (the resumability rule): random mixed results read
    /// whole, byte by byte and split at random, as tokens (`.whole`, `next()`), into blocks
    /// (`.whole`, `appendBufferedRows`) and in parts (`.parts`, `nextPart()`), give the rows and
    /// tokens of the stream read whole as tokens.
    func testEachRowModeGivesTheSameValuesWholeByteByByteAndSplitAtRandom() throws {
        let seed: UInt64 = 0x0DE5_F1ED
        var rng = SeededRandom(seed: seed)
        var broken = Contract.Problems()
        var rowCount = 0
        for iteration in 0 ..< 12 {
            let stream = try Self.mixedStream(&rng, maxLarge: 3000)
            let expected = Self.read([stream], parts: false)
            XCTAssertNil(expected.error, "iteration \(iteration): the fixture is valid")
            let expectedRows = expected.events.compactMap { e -> [SQLValue]? in
                guard case .row(let cells, _) = e else { return nil }
                return cells.map { if case .value(let v) = $0 { return v } else { return .null } }
            }
            rowCount += expectedRows.count
            for feed in [Feed.whole, .byteByByte, .random(seed: UInt64(iteration))] {
                let place = "seed \(seed) iteration \(iteration), \(feed)"
                var designed = false
                let tokens = Self.read(feed.pieces(of: stream), parts: false)
                if let p = Self.difference(tokens, expected, exact: true, byDesign: &designed) { broken.note("tokens: " + p, in: place) }
                let blocks = Contract.drive(stream, feed)
                if let e = blocks.error { broken.note("blocks: \(e)", in: place) }
                if blocks.rows.count != expectedRows.count || !zip(blocks.rows, expectedRows).allSatisfy({ Contract.sameRow($0.0, $0.1) }) {
                    broken.note("blocks: \(blocks.rows.count) rows differ from the \(expectedRows.count) tokens", in: place)
                }
                for p in Self.problems(stream, feed, expected: expected, blockRows: blocks.rows) { broken.note("parts: " + p, in: place) }
            }
        }
        XCTAssertGreaterThan(rowCount, 20, "rows read")
        if !broken.isEmpty { XCTFail("the row modes differ:\n\(broken)") }
    }

    // MARK: - The whole-token decoders

    /// The row-like token at `at` (ROW, NBCROW, ALTROW, RETURNVALUE) decoded by its whole-token
    /// decoder over `bytes` up to `end` (offsets absolute), with the columns and ALTMETADATA of `d`.
    static func decodeWhole(_ bytes: [UInt8], at: Int, end: Int, _ d: TokenStreamDecoder) -> (token: Token?, error: TDSDecodingError?, restored: Bool) {
        var r = ByteReader(bytes, start: at + 1, end: end)
        do throws(TDSDecodingError) {
            switch TokenType(rawValue: bytes[at]) {
            case .row: return (.row(try Row.decode(from: &r, columns: d.columns)), nil, true)
            case .nbcRow: return (.nbcRow(try NBCRow.decode(from: &r, columns: d.columns)), nil, true)
            case .altRow: return (.altRow(try AltRow.decode(from: &r, metadata: { d.altMetadata[$0] })), nil, true)
            default: return (.returnValue(try ReturnValue.decode(from: &r, version: .v7_4)), nil, true)
            }
        } catch {
            return (nil, error, r.offset == at + 1)
        }
    }

    /// ``Row/decode(from:columns:)``, ``NBCRow/decode(from:columns:)``, ``AltRow/decode(from:metadata:)``
    /// and ``ReturnValue/decode(from:version:columnEncryption:)`` (read by ``WireRowProgress``) on
    /// each row-like token of the hostile base and of 150 mutations of it: `next()`'s token or error
    /// (code, offset, token name); cut anywhere inside, `.truncated` with the reader left at the token.
    func testWholeTokenDecodersGiveTheStreamsTokensAndErrors() throws {
        let base = try Self.hostileBase()
        var rng = SeededRandom(seed: 0xD3C0_DE)
        var broken = Contract.Problems()
        var checked = 0, errors = 0, cuts = 0
        for iteration in 0 ..< 151 {
            var bytes = base
            if iteration > 0 {
                for _ in 0 ... Int(rng.next() % 2) {
                    let at = 300 + Int(rng.next() % UInt64(base.count - 300))
                    bytes[at] = [0xFF, 0, UInt8(truncatingIfNeeded: rng.next())][Int(rng.next() % 3)]
                }
            }
            var d = TokenStreamDecoder(version: .v7_4)
            d.append(bytes)
            while true {
                let at = d.offset
                guard at < bytes.count else { break }
                let rowLike = [TokenType.row, .nbcRow, .altRow, .returnValue].contains(TokenType(rawValue: bytes[at]))
                let before = d   // the columns and ALTMETADATA the token is read with
                let token: Token?, error: TDSDecodingError?
                do throws(TDSDecodingError) { token = try d.next(); error = nil } catch let e { token = nil; error = e }
                if rowLike, token != nil || error != nil {
                    checked += 1
                    let whole = Self.decodeWhole(bytes, at: at, end: bytes.count, before)
                    let place = "iteration \(iteration), \(TokenType(rawValue: bytes[at]).name) at \(at)"
                    if let token {
                        if !(whole.token.map { Self.sameToken($0, token) } ?? false) {
                            broken.note("the whole-token decoder gives \(whole.token.map { "\($0)" } ?? "\(whole.error!)"), next() \(token)", in: place)
                        }
                        // Cut inside: truncated, the reader left at the token's body.
                        let end = d.offset
                        for cut in Set([at + 1, at + 2, (at + end) / 2, end - 1]) where cut > at && cut < end {
                            cuts += 1
                            let c = Self.decodeWhole(bytes, at: at, end: cut, before)
                            if c.error?.code != .truncated || !c.restored {
                                broken.note("cut at \(cut): \(c.token.map { "\($0)" } ?? "\(c.error!)"), reader restored \(c.restored)", in: place)
                            }
                        }
                    } else if let error {
                        errors += 1
                        guard let w = whole.error, w.code == error.code, w.offset == error.offset, w.context == error.context else {
                            broken.note("the whole-token decoder gives \(whole.error.map { "\($0)" } ?? "a token"), next() \(error)", in: place)
                            break
                        }
                    }
                }
                if token == nil { break }
            }
        }
        XCTAssertGreaterThan(checked, 600, "row-like tokens checked")
        XCTAssertGreaterThan(errors, 30, "row-like tokens refused")
        if !broken.isEmpty { XCTFail("whole-token decoders (\(checked) tokens, \(cuts) cuts):\n\(broken)") }
    }

    static func event(_ t: Token, _ d: TokenStreamDecoder) -> Event {
        switch t {
        case .row(let r): return .row(r.values.map(Cell.value), types: d.columns.map(\.typeInfo))
        case .nbcRow(let r): return .row(r.values.map(Cell.value), types: d.columns.map(\.typeInfo))
        default: return .token(t)
        }
    }

    /// A row begun by `next()` (the input cut anywhere in row 0) and then asked for by
    /// `appendBufferedRows` once the rest arrives: finished into the block with the token
    /// decoder's values, the rows after it too.
    func testARowBegunByNextIsFinishedIntoTheBlock() throws {
        let (bytes, _, starts, rows) = try Self.switchStream()
        var broken = Contract.Problems()
        for cut in (starts[0] + 1) ..< starts[1] {
            var d = TokenStreamDecoder(version: .v7_4)
            d.append(Array(bytes[..<cut]))
            guard case .colMetadata = try d.next() else { return XCTFail("COLMETADATA") }
            if let t = try d.next() { broken.note("next() gave \(t.name) from part of row 0", in: "cut \(cut)"); continue }
            d.append(Array(bytes[cut...]))
            guard var block = d.makeWireRowBlock() else { return XCTFail("no block") }
            var (n, end) = d.appendBufferedRows(to: &block, limit: 100, byteLimit: 1 << 20)
            if n != 2 || end != .otherToken { broken.note("appendBufferedRows gave (\(n), \(end)), expected rows 0 and 1, then .otherToken", in: "cut \(cut)") }
            guard case .info = try d.next() else { broken.note("no INFO after rows 0 and 1", in: "cut \(cut)"); continue }
            (n, end) = d.appendBufferedRows(to: &block, limit: 100, byteLimit: 1 << 20)
            if n != 1 || end != .otherToken { broken.note("appendBufferedRows gave (\(n), \(end)) for row 2", in: "cut \(cut)") }
            let values = block.values(rows: 0 ..< block.rowCount)
            let w = block.columnCount
            let got = (0 ..< block.rowCount).map { Array(values[$0 * w ..< ($0 + 1) * w]) }
            if got.count != 3 || !zip(got, rows).allSatisfy({ Contract.sameRow($0.0, $0.1) }) {
                broken.note("the block reads \(got.map(Contract.short)), expected \(rows.map(Contract.short))", in: "cut \(cut)")
            }
            guard case .done = try d.next() else { broken.note("no DONE", in: "cut \(cut)"); continue }
            try d.finish()
        }
        if !broken.isEmpty { XCTFail("a row begun by next(), finished by appendBufferedRows:\n\(broken)") }
    }

    /// ALTROW and RETURNVALUE with large values (nvarchar(max) in small chunks, ntext,
    /// varbinary(max) of unknown length), cut at every byte into two pieces and fed byte by
    /// byte: `next()` and `nextPart()` give the tokens read whole.
    func testAltRowAndReturnValueWithLargeValuesSplitAtEveryByte() throws {
        let columns = Contract.columns([.int])
        let alt = Contract.columns([.nvarchar(nil), .ntext(), .int, .varbinary(nil)])
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4) + Self.altMetadata(id: 3, alt)
        bytes += try ServerTokens.row([.int(5)], columns: columns)
        bytes += try Self.altRow(id: 3, [.string("sum 😀 é"), .string("nt 漢"), .int(-1), .binary(Array(0 ..< 40))], alt,
                                 chunking: [.init(sizes: [1, 3]), nil, nil, .init(sizes: [7], unknownLength: true)])
        bytes += try Self.altRow(id: 3, [.null, .null, .null, .null], alt)
        bytes += ServerTokens.done(status: .count, rowCount: 1, version: .v7_4)
        bytes += try ServerTokens.returnValue(ordinal: 1, name: "@text", type: .nvarchar(nil), value: .string("rv 😀 " + String(repeating: "ab", count: 40)),
                                              chunking: .init(sizes: [5]), version: .v7_4)
        bytes += try ServerTokens.returnValue(ordinal: 2, name: "@bin", type: .varbinary(nil), value: .binary(Array(0 ..< 90)),
                                              chunking: .init(sizes: [4], unknownLength: true), version: .v7_4)
        bytes += try ServerTokens.returnValue(ordinal: 3, name: "@x", type: .xml, value: .xml("<a>é</a>"), version: .v7_4)
        bytes += try ServerTokens.returnValue(ordinal: 4, name: "@null", type: .nvarchar(nil), value: .null, version: .v7_4)
        bytes += ServerTokens.done(token: 0xFE, version: .v7_4)
        let whole = Self.read([bytes], parts: false)
        XCTAssertNil(whole.error)
        let names = whole.events.map { e -> String in if case .token(let t) = e { return t.name } else { return "row" } }
        XCTAssertEqual(names, ["COLMETADATA", "ALTMETADATA", "row", "ALTROW", "ALTROW", "DONE", "RETURNVALUE", "RETURNVALUE", "RETURNVALUE", "RETURNVALUE", "DONEPROC"])
        if case .token(.altRow(let a)) = whole.events[3] { XCTAssertEqual(a.values, [.string("sum 😀 é"), .string("nt 漢"), .int(-1), .binary(Array(0 ..< 40))]) }
        if case .token(.returnValue(let r)) = whole.events[7] { XCTAssertEqual(r.value, .binary(Array(0 ..< 90))) }
        var broken = Contract.Problems()
        var pieces = (1 ..< bytes.count).map { [Array(bytes[..<$0]), Array(bytes[$0...])] }
        pieces.append(Feed.byteByByte.pieces(of: bytes))
        for (k, p) in pieces.enumerated() {
            for parts in [false, true] {
                let got = Self.read(p, parts: parts)
                var designed = false
                if let d = Self.difference(got, whole, exact: true, byDesign: &designed) { broken.note(d, in: k < bytes.count - 1 ? "cut at \(k + 1)" : "byte by byte") }
                for x in got.problems { broken.note(x, in: "split \(k)") }
            }
        }
        if !broken.isEmpty { XCTFail("ALTROW and RETURNVALUE split: differ from whole:\n\(broken)") }
    }
}

import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// Every row of a result in a ``WireRowBlock`` (issue 27, item 2): large values (PLP, [MS-TDS]
/// 2.2.5.2.3: varchar(max), nvarchar(max), varbinary(max), xml, UDT, json; text, ntext, image)
/// assembled in the block by the row's scan state (``WireRowProgress``), beside bounded columns
/// and NULLs of every form; the block's values equal the token decoder's, whole, byte by byte and
/// split at random; a hostile row gives the token decoder's error (code and offset) under every split.
final class WireRowBlockLargeValueTests: XCTestCase {
    static let cyrillic = Collation(lcid: 0x0419)   // code page 1251

    static let columns: [ColumnMetadata] = [
        ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varchar(nil), name: "vmax"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varchar(nil, collation: cyrillic), name: "vmax1251"),
        ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(nil), name: "nmax"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "bmax"),
        ColumnMetadata(flags: [.nullable], typeInfo: .xml, name: "x"),
        ColumnMetadata(flags: [.nullable], typeInfo: TypeInfo(type: .udt, length: 0xFFFF, isPLP: true), name: "u"),
        ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "j"),
        ColumnMetadata(flags: [.nullable], typeInfo: .text(), name: "t"),
        ColumnMetadata(flags: [.nullable], typeInfo: .ntext(), name: "nt"),
        ColumnMetadata(flags: [.nullable], typeInfo: .image, name: "img"),
        ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "n20"),
        ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 2), name: "vec"),
    ]

    /// Text of `n` characters, ASCII or not by `i`.
    static func text(_ i: Int, _ n: Int) -> String {
        let alphabets = ["abcdefgh", "é東京😀ü", "Привет", "x"]
        let a = Array(alphabets[i % alphabets.count])
        return String((0 ..< n).map { a[($0 &* 7 &+ i) % a.count] })
    }

    /// Row `i`: every large column NULL, empty, short or long (row 5: 100 KiB and more).
    static func rowValues(_ i: Int) -> [SQLValue] {
        let big = i == 5
        let n = big ? 60_000 : (i * 37) % 300
        func pick(_ c: Int, _ v: @autoclosure () -> SQLValue, empty: SQLValue) -> SQLValue {
            switch (i + c) % 6 {
            case 0 where !big: return .null
            case 1 where !big: return empty
            default: return v()
            }
        }
        let ascii = String(repeating: "abc", count: n / 3 + 1)
        return [
            .int(Int32(i)),
            pick(1, .string(ascii), empty: .string("")),
            pick(2, .string("Да \(i) " + String(repeating: "Ж", count: n % 40)), empty: .string("")),
            pick(3, .string(text(i, big ? 20_000 : n)), empty: .string("")),
            pick(4, .binary((0 ..< (big ? 150_000 : n)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }), empty: .binary([])),
            pick(5, .xml("<r i=\"\(i)\">" + text(i + 1, n) + "</r>"), empty: .xml("")),
            pick(6, .udt((0 ..< n % 50).map { UInt8(truncatingIfNeeded: $0 &+ i) }), empty: .udt([])),
            pick(7, .json("{\"i\":\(i),\"s\":\"" + text(i, n % 90) + "\"}"), empty: .json("")),
            pick(8, .string(String(repeating: "t", count: big ? 110_000 : n)), empty: .string("")),
            pick(9, .string(text(i + 2, big ? 10_000 : n)), empty: .string("")),
            pick(10, .binary((0 ..< n).map { UInt8(truncatingIfNeeded: $0 ^ i) }), empty: .binary([])),
            pick(11, .string(text(i, i % 20)), empty: .string("")),
            pick(12, .vector(SQLVector([Float(i), -1])), empty: .vector(SQLVector([0, 0]))),
        ]
    }

    /// How row `i`'s PLP values are cut: one chunk, many small chunks, unknown length.
    static func chunking(_ i: Int) -> [ServerTokens.PLPChunking?] {
        let ways: [ServerTokens.PLPChunking?] = [
            nil, ServerTokens.PLPChunking(sizes: [1, 2, 3]), ServerTokens.PLPChunking(sizes: [7], unknownLength: true),
            ServerTokens.PLPChunking(sizes: [8000], unknownLength: true), ServerTokens.PLPChunking(sizes: [4096, 1]),
        ]
        return (0 ..< columns.count).map { ways[($0 + i) % ways.count] }
    }

    /// COLMETADATA, `rows` rows (every third an NBCROW), DONE.
    static func stream(rows: Int) throws -> [UInt8] {
        var s = ServerTokens.colMetadata(columns, version: .v7_4)
        for i in 0 ..< rows {
            let v = rowValues(i)
            s += i % 3 == 0 ? try ServerTokens.nbcRow(v, columns: columns, chunking: chunking(i))
                            : try ServerTokens.row(v, columns: columns, chunking: chunking(i))
        }
        return s + ServerTokens.done(status: .count, rowCount: UInt64(rows), version: .v7_4)
    }

    struct Drained {
        var rows: [[SQLValue]] = []
        var blocks: [WireRowBlock] = []
        var blockRows = 0
        var tokenRows = 0
        var error: TDSDecodingError?
        /// The most bytes the decoder held unconsumed after a piece was read.
        var peakBuffered = 0
    }

    /// `stream` fed as `split`, rows read into blocks (a new block after `.limit`), anything else by `next()`.
    /// `packetSize`: the stream is cut into TABULAR_RESULT packets of that size, the pieces go to a
    /// framer and each whole packet's payload to the decoder as the connection hands it
    /// (``PacketAssembler/consumePacket(into:)``: a large value read where it is), then the rows are read.
    static func drain(_ stream: [UInt8], _ split: DecoderVerifier.Split, options: TokenStreamDecoder.Options = .init(),
                      limit: Int = 1000, byteLimit: Int = 1 << 30, finish: Bool = true, seed: UInt64 = 11,
                      assemblesData: Bool = false, packetSize: Int? = nil) -> Drained {
        var rng = SeededRandom(seed: seed)
        var decoder = TokenStreamDecoder(version: .v7_4, options: options)
        decoder.assemblesLargeBinaryAsData = assemblesData
        var out = Drained()
        var block: WireRowBlock?
        func leave() {
            if let b = block, !b.isEmpty { out.blocks.append(b) }
            block = nil
        }
        func step() throws(TDSDecodingError) {
            while true {
                if block == nil { block = decoder.makeWireRowBlock() }
                if var b = block {
                    let (n, end) = decoder.appendBufferedRows(to: &b, limit: limit, byteLimit: byteLimit)
                    block = b
                    for r in b.rowCount - n ..< b.rowCount { out.rows.append(b.values(row: r)) }
                    out.blockRows += n
                    if end == .limit || end == .incremental { leave() }
                    if end == .limit { continue }
                    if end == .needBytes { return }
                }
                guard let token = try decoder.next() else { return }
                if let v = token.rowValues { out.rows.append(v); out.tokenRows += 1 }
                if case .done = token { leave() }
            }
        }
        do throws(TDSDecodingError) {
            if let packetSize {
                var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
                let packets = Packet.encode(message: stream, type: .tabularResult, packetSize: packetSize)
                for piece in DecoderVerifier.pieces(of: packets, split, using: &rng) {
                    framer.append(piece)
                    while try framer.peekHeader() != nil {
                        framer.consumePacket(into: &decoder)
                        try step()
                        out.peakBuffered = max(out.peakBuffered, decoder.bufferedByteCount)
                    }
                }
            } else {
                for piece in DecoderVerifier.pieces(of: stream, split, using: &rng) {
                    decoder.append(piece)
                    try step()
                    out.peakBuffered = max(out.peakBuffered, decoder.bufferedByteCount)
                }
            }
            if finish { try decoder.finish() }
        } catch {
            out.error = error
        }
        leave()
        return out
    }

    /// The token decoder alone (``TokenStreamDecoder/next()``): its rows and the error that ended it.
    static func alone(_ stream: [UInt8], options: TokenStreamDecoder.Options = .init(), finish: Bool = true) -> (rows: [[SQLValue]], error: TDSDecodingError?) {
        var decoder = TokenStreamDecoder(version: .v7_4, options: options)
        decoder.append(stream)
        var rows: [[SQLValue]] = []
        do {
            while let token = try decoder.next() {
                if let v = token.rowValues { rows.append(v) }
            }
            if finish { try decoder.finish() }
        } catch {
            return (rows, error)
        }
        return (rows, nil)
    }

    // MARK: - Values

    func testLargeValuesOfEveryKindAreAssembledInTheBlockWithTheTokenDecodersValues() throws {
        let n = 12
        let stream = try Self.stream(rows: n)
        let reference = Self.alone(stream)
        XCTAssertNil(reference.error)
        let expected = (0 ..< n).map(Self.rowValues)
        XCTAssertEqual(reference.rows, expected, "the token decoder reads the values encoded")
        for split in DecoderVerifier.Split.allCases {
            let got = Self.drain(stream, split)
            XCTAssertNil(got.error, "\(split)")
            XCTAssertEqual(got.rows, expected, "\(split)")
            XCTAssertEqual(got.blockRows, n, "\(split): every row in a block")
            XCTAssertEqual(got.tokenRows, 0, "\(split)")
            var r0 = 0
            for b in got.blocks {
                XCTAssertEqual(b.scan.map(\.kind), [.byteLength, .large, .large, .large, .large, .large, .large, .large,
                                                    .large, .large, .large, .utf16, .vector])
                for r in 0 ..< b.rowCount {
                    let values = expected[r0 + r]
                    XCTAssertEqual(b.values(rows: r ..< r + 1), values, "\(split) row \(r0 + r)")
                    for c in 0 ..< b.columnCount {
                        XCTAssertEqual(b.value(row: r, column: c), values[c], "\(split) row \(r0 + r) col \(c)")
                        XCTAssertEqual(b.isNull(row: r, column: c), values[c].isNull, "\(split) row \(r0 + r) col \(c)")
                    }
                    // Typed reads: nvarchar(max), ntext as String; varbinary(max), image as bytes and Data.
                    for c in [3, 9] {
                        switch (b.string(row: r, column: c), values[c]) {
                        case (.value(let s), .string(let e)): XCTAssertEqual(s, e, "\(split) row \(r0 + r) col \(c)")
                        case (.null, .null): break
                        case (let got, let e): XCTFail("\(split) row \(r0 + r) col \(c): typed \(got) for \(e)")
                        }
                    }
                    for c in [4, 10] {
                        switch (b.bytes(row: r, column: c), b.data(row: r, column: c), values[c]) {
                        case (.value(let bytes), .value(let data), .binary(let e)):
                            XCTAssertEqual(bytes, e)
                            XCTAssertEqual(data, Data(e))
                        case (.null, .null, .null): break
                        default: XCTFail("\(split) row \(r0 + r) col \(c): typed read")
                        }
                    }
                }
                r0 += b.rowCount
            }
        }
    }

    func testUTF16TextIsKeptAsUTF8WithItsFormAndHeader() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(nil), name: "n"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .ntext(), name: "nt"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .xml, name: "x")]
        let rows: [[SQLValue]] = [[.string("plain"), .string("東京"), .xml("<a/>")], [.string(""), .null, .xml("<é/>")]]
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        for r in rows { stream += try ServerTokens.nbcRow(r, columns: columns) }
        stream += ServerTokens.done(version: .v7_4)
        let got = Self.drain(stream, .whole)
        XCTAssertNil(got.error)
        let b = try XCTUnwrap(got.blocks.first)
        XCTAssertEqual(b.rowCount, 2)
        func header(_ r: Int, _ c: Int) -> (count: Int, form: UInt8) {
            let o = Int(b.offset(row: r, column: c))
            return ((0 ..< 4).reduce(0) { $0 | Int(b.bytes[o + $1]) << (8 * $1) }, b.bytes[o + 4])
        }
        XCTAssertTrue(header(0, 0) == (5, WireColumn.LargeForm.utf8ASCII.rawValue), "ASCII: 5 UTF-8 bytes")
        XCTAssertTrue(header(0, 1) == (6, WireColumn.LargeForm.utf8.rawValue), "CJK: 3 bytes a character")
        XCTAssertTrue(header(1, 0) == (0, WireColumn.LargeForm.utf8ASCII.rawValue), "empty")
        XCTAssertEqual(b.offset(row: 1, column: 1), WireRowBlock.nullOffset, "an NBCROW NULL")
        XCTAssertTrue(header(1, 2) == (5, WireColumn.LargeForm.utf8.rawValue))
        XCTAssertEqual(got.rows, rows)
    }

    func testAPLPNullATextPtrNullAndABitmapNullAreNull() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .text(), name: "t"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(nil), name: "n")]
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        // ROW: PLP_NULL, TextPtr length 0, PLP_NULL.
        stream += [TokenType.row.rawValue] + [UInt8](repeating: 0xFF, count: 8) + [0] + [UInt8](repeating: 0xFF, count: 8)
        stream += try ServerTokens.nbcRow([.null, .null, .null], columns: columns)
        stream += ServerTokens.done(version: .v7_4)
        for split in DecoderVerifier.Split.allCases {
            let got = Self.drain(stream, split)
            XCTAssertNil(got.error)
            XCTAssertEqual(got.rows, [[.null, .null, .null], [.null, .null, .null]], "\(split)")
            for b in got.blocks {
                for r in 0 ..< b.rowCount {
                    for c in 0 ..< 3 {
                        XCTAssertTrue(b.isNull(row: r, column: c))
                        if case .null = b.string(row: r, column: 2) {} else { XCTFail("typed NULL") }
                    }
                }
            }
        }
    }

    /// A value of 300 KB fed in 1 KiB pieces is consumed as it arrives: the decoder never holds
    /// more than a piece or two unconsumed (the value is held once, staged in its own array), and
    /// the block keeps that array apart (a binary value of 64 KiB or more: the block's bytes hold
    /// only its header), the value read sharing it.
    func testALargeValueIsConsumedAsItArrivesAndKeptApart() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b")]
        let value = (0 ..< 300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        stream += try ServerTokens.row([.binary(value)], columns: columns, chunking: [ServerTokens.PLPChunking(sizes: [8000])])
        stream += ServerTokens.done(version: .v7_4)
        var decoder = TokenStreamDecoder(version: .v7_4)
        var block: WireRowBlock?
        var peak = 0
        var i = 0
        while i < stream.count {
            let end = min(i + 1024, stream.count)
            decoder.append(Array(stream[i ..< end]))
            i = end
            while true {
                if block == nil { block = decoder.makeWireRowBlock() }
                if var b = block {
                    let (_, run) = decoder.appendBufferedRows(to: &b, limit: 10, byteLimit: 1 << 30)
                    block = b
                    if run == .needBytes { break }
                    if run != .otherToken { continue }
                }
                guard try decoder.next() != nil else { break }
            }
            peak = max(peak, decoder.bufferedByteCount)
        }
        try decoder.finish()
        XCTAssertLessThan(peak, 2048, "the value's bytes are consumed as they arrive")
        let b = try XCTUnwrap(block)
        XCTAssertEqual(b.rowCount, 1)
        XCTAssertEqual(b.value(row: 0, column: 0), .binary(value))
        XCTAssertEqual(b.addressedByteCount, WireColumn.largeHeaderSize, "only the header in the block's bytes")
        XCTAssertEqual(b.byteCount, WireColumn.largeHeaderSize + value.count, "the value counts toward the block's size")
        XCTAssertEqual(b.separate.map(\.array), [value])
        if case .value(let bytes) = b.bytes(row: 0, column: 0) { XCTAssertEqual(bytes, value) } else { XCTFail("typed bytes") }
    }

    /// Through a framer (as the connection reads), a large value's bytes are read where the packet
    /// is: a packet inside a PLP chunk leaves nothing in the decoder's buffer (its payload is not
    /// copied there first, issue 43), and the values, under every split and packet size, are the
    /// token decoder's.
    func testAPacketInsideALargeValueIsReadWhereItIs() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b"),
                       ColumnMetadata(flags: [], typeInfo: .int, name: "i")]
        let value = (0 ..< 300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        stream += try ServerTokens.row([.binary(value), .int(7)], columns: columns, chunking: [ServerTokens.PLPChunking(sizes: [8000]), nil])
        stream += try ServerTokens.row([.binary(Array(value.prefix(70_000))), .int(8)], columns: columns,
                                       chunking: [ServerTokens.PLPChunking(sizes: [3, 40_000], unknownLength: true), nil])
        stream += ServerTokens.done(version: .v7_4)
        let expected: [[SQLValue]] = [[.binary(value), .int(7)], [.binary(Array(value.prefix(70_000))), .int(8)]]

        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        framer.append(Packet.encode(message: stream, type: .tabularResult, packetSize: 4096))
        var decoder = TokenStreamDecoder(version: .v7_4)
        var block = try XCTUnwrap({ () throws -> WireRowBlock? in
            framer.consumePacket(into: &decoder)
            guard case .colMetadata = try decoder.next() else { return nil }
            return decoder.makeWireRowBlock()
        }())
        var packets = 0
        var leftEmpty = 0
        while try framer.peekHeader() != nil {
            let inValue = decoder.isReadingRow
            framer.consumePacket(into: &decoder)
            packets += 1
            if inValue && decoder.bufferedByteCount == 0 { leftEmpty += 1 }
            _ = decoder.appendBufferedRows(to: &block, limit: 10, byteLimit: 1 << 30)
        }
        XCTAssertEqual((0 ..< block.rowCount).map { block.values(row: $0) }, expected)
        XCTAssertGreaterThan(leftEmpty, packets * 9 / 10, "packets inside a large value were copied into the decoder's buffer")

        for split in DecoderVerifier.Split.allCases {
            for packetSize in [512, 4096, 32767] {
                let got = Self.drain(stream, split, packetSize: packetSize)
                XCTAssertNil(got.error, "\(split) \(packetSize)")
                XCTAssertEqual(got.rows, expected, "\(split) \(packetSize)")
            }
        }
    }

    func testRowLimitsAndByteLimitsHoldWithLargeRows() throws {
        let stream = try Self.stream(rows: 9)
        let expected = (0 ..< 9).map(Self.rowValues)
        for split in [DecoderVerifier.Split.whole, .random] {
            let one = Self.drain(stream, split, limit: 1)
            XCTAssertEqual(one.rows, expected, "\(split)")
            XCTAssertTrue(one.blocks.allSatisfy { $0.rowCount == 1 }, "\(split): a row a block")
            let small = Self.drain(stream, split, byteLimit: 1000)
            XCTAssertEqual(small.rows, expected, "\(split)")
            XCTAssertGreaterThan(small.blocks.count, 1, "\(split)")
        }
    }

    // MARK: - Hostile rows

    /// A stream of one column of `type` whose only row's value is `cell` (then a DONE, or not).
    static func hostile(_ type: TypeInfo, _ cell: [UInt8], before: [SQLValue]? = nil, done: Bool = true) throws -> (stream: [UInt8], cellAt: Int) {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"), ColumnMetadata(flags: [.nullable], typeInfo: type, name: "v")]
        var s = ServerTokens.colMetadata(columns, version: .v7_4)
        if let before { s += try ServerTokens.row(before, columns: columns) }
        s += [TokenType.row.rawValue, 4, 1, 0, 0, 0]
        let at = s.count
        s += cell
        if done { s += ServerTokens.done(version: .v7_4) }
        return (s, at)
    }

    static func plp(total: UInt64, chunks: [[UInt8]], terminator: Bool = true) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt64LE(total)
        for c in chunks { w.writeUInt32LE(UInt32(c.count)); w.writeBytes(c) }
        if terminator { w.writeUInt32LE(0) }
        return w.bytes
    }

    static func legacy(ptr: [UInt8], length: UInt32, data: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(UInt8(ptr.count))
        w.writeBytes(ptr)
        if !ptr.isEmpty {
            w.writeBytes([UInt8](repeating: 0, count: 8))
            w.writeUInt32LE(length)
            w.writeBytes(data)
        }
        return w.bytes
    }

    /// The block path gives the token decoder's error (code, offset, context) under every split,
    /// after the rows before it.
    func checkSameError(_ stream: [UInt8], options: TokenStreamDecoder.Options = .init(), expect code: TDSDecodingError.Code,
                        at offset: Int? = nil, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let reference = Self.alone(stream, options: options)
        guard let e = reference.error else { return XCTFail("\(what): the token decoder accepts it", file: file, line: line) }
        XCTAssertEqual(e.code, code, "\(what): \(e)", file: file, line: line)
        if let offset { XCTAssertEqual(e.offset, offset, "\(what): \(e)", file: file, line: line) }
        for split in DecoderVerifier.Split.allCases {
            for packetSize in [nil, 512] as [Int?] {   // and through a framer, as the connection reads
                let got = Self.drain(stream, split, options: options, packetSize: packetSize)
                let how = "\(what) \(split) packets \(packetSize.map(String.init) ?? "none")"
                XCTAssertEqual(got.error?.code, e.code, "\(how): \(String(describing: got.error))", file: file, line: line)
                XCTAssertEqual(got.error?.offset, e.offset, how, file: file, line: line)
                XCTAssertEqual(got.error?.context, e.context, how, file: file, line: line)
                XCTAssertEqual(got.rows, reference.rows, how, file: file, line: line)
            }
        }
    }

    func testHostilePLPGivesTheTokenDecodersErrorUnderEverySplit() throws {
        let b = TypeInfo.varbinary(nil)
        var (s, at) = try Self.hostile(b, Self.plp(total: 4, chunks: [[1, 2, 3, 4, 5]]), before: [.int(0), .binary([9])])
        checkSameError(s, expect: .invalidLength, at: at + 8, "a chunk past the declared total")
        (s, at) = try Self.hostile(b, Self.plp(total: 10, chunks: [[1, 2, 3, 4]]))
        checkSameError(s, expect: .invalidLength, at: at + 8 + 4 + 4, "chunks short of the total")
        (s, at) = try Self.hostile(b, Self.plp(total: 0x8000_0000, chunks: []))
        checkSameError(s, expect: .invalidLength, at: at, "a total above 2^31-1")
    }

    func testTruncatedMessageInsideALargeValue() throws {
        let (whole, at) = try Self.hostile(.nvarchar(nil), Self.plp(total: 8, chunks: [[0x41, 0, 0x42, 0, 0x43, 0, 0x44, 0]]), done: false)
        let cut = Array(whole[..<(at + 8 + 4 + 3)])
        checkSameError(cut, expect: .truncated, at: at - 6, "the message ends inside the chunk")
        checkSameError(Array(whole[..<(at + 5)]), expect: .truncated, at: at - 6, "inside the total length")
    }

    func testDeclaredLengthOverTheMaximumValueSizeFailsBeforeItsBytesArrive() throws {
        let options = TokenStreamDecoder.Options(maximumValueSize: 1000)
        var (s, at) = try Self.hostile(.varbinary(nil), Self.plp(total: 5000, chunks: [[UInt8](repeating: 1, count: 5000)]))
        checkSameError(s, options: options, expect: .limitExceeded, at: at, "PLP total over the cap")
        // Only the row's start and the 8-byte total: the error already (nothing waited for, nothing allocated).
        let head = Array(s[..<(at + 8)])
        var decoder = TokenStreamDecoder(version: .v7_4, options: options)
        decoder.append(head)
        XCTAssertNotNil(try decoder.next())   // COLMETADATA
        var block = try XCTUnwrap(decoder.makeWireRowBlock())
        let (rows, end) = decoder.appendBufferedRows(to: &block, limit: 10, byteLimit: 1 << 20)
        XCTAssertEqual(rows, 0)
        XCTAssertEqual(end, .incremental)
        XCTAssertThrowsError(try decoder.next()) { XCTAssertEqual(($0 as? TDSDecodingError)?.code, .limitExceeded) }
        // Unknown length: bounded as the chunks arrive.
        (s, at) = try Self.hostile(.varbinary(nil), Self.plp(total: 0xFFFF_FFFF_FFFF_FFFE, chunks: [[UInt8](repeating: 1, count: 600), [UInt8](repeating: 2, count: 600)]))
        checkSameError(s, options: options, expect: .limitExceeded, at: at + 8 + 4 + 600, "unknown length past the cap")
        // text/ntext/image: the LONG length.
        (s, at) = try Self.hostile(.image, Self.legacy(ptr: [UInt8](repeating: 0, count: 16), length: 0xFFFF_FFF0, data: []))
        checkSameError(s, expect: .limitExceeded, at: at + 1 + 16 + 8, "a giant image length")
        (s, at) = try Self.hostile(.text(), Self.legacy(ptr: [UInt8](repeating: 7, count: 255), length: 2000, data: [UInt8](repeating: 0x41, count: 2000)))
        checkSameError(s, options: options, expect: .limitExceeded, at: at + 1 + 255 + 8, "a 255-byte TextPtr, a length over the cap")
    }

    func testInvalidTextInLargeValuesGivesTheTokenDecodersError() throws {
        var (s, at) = try Self.hostile(.nvarchar(nil), Self.plp(total: 6, chunks: [[0x41, 0], [0x00, 0xD8], [0x42, 0]]))
        checkSameError(s, expect: .invalidEncoding, at: at, "an unpaired surrogate in nvarchar(max)")
        (s, at) = try Self.hostile(.nvarchar(nil), Self.plp(total: 3, chunks: [[0x41, 0, 0x42]]))
        checkSameError(s, expect: .invalidLength, at: at, "an odd UTF-16 byte count")
        (s, at) = try Self.hostile(.xml, Self.plp(total: 0xFFFF_FFFF_FFFF_FFFE, chunks: [[0x00], [0xDC]]))
        checkSameError(s, expect: .invalidEncoding, at: at, "a lone low surrogate in xml")
        (s, at) = try Self.hostile(.json, Self.plp(total: 3, chunks: [[0x7B, 0xC3, 0x7D]]))
        checkSameError(s, expect: .invalidEncoding, at: at, "json that is not UTF-8")
        (s, at) = try Self.hostile(.ntext(), Self.legacy(ptr: [UInt8](repeating: 0, count: 16), length: 4, data: [0x41, 0, 0x00, 0xDC]))
        checkSameError(s, expect: .invalidEncoding, at: at + 1 + 16 + 8 + 4 + 2, "a lone surrogate in ntext")
        (s, _) = try Self.hostile(.nvarchar(20), [6, 0, 0x41, 0, 0x00, 0xD8, 0x42, 0])
        checkSameError(s, expect: .invalidEncoding, "an unpaired surrogate in a bounded nvarchar of a large row")
    }

    /// A bounded column's malformed value inside a row the run leaves to the scan state (the row
    /// has a large value first): the same rule, the same error.
    func testMalformedBoundedValueAfterALargeValue() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "i")]
        var s = ServerTokens.colMetadata(columns, version: .v7_4)
        s += [TokenType.row.rawValue] + Self.plp(total: 2, chunks: [[1, 2]])
        let at = s.count
        s += [3, 1, 2, 3]   // an INTN of 3 bytes
        s += ServerTokens.done(version: .v7_4)
        checkSameError(s, expect: .invalidLength, at: at + 1, "an INTN of 3 bytes after a PLP value (at its data)")
    }

    func testRandomlyMutatedLargeRowsGiveTheTokenDecodersOutcome() throws {
        var rng = SeededRandom(seed: 27)
        let base = try Self.stream(rows: 4)
        let meta = ServerTokens.colMetadata(Self.columns, version: .v7_4).count
        var failures = 0
        for k in 0 ..< 60 {
            var s = base
            for _ in 0 ..< 1 + k % 3 {
                let i = Int.random(in: meta ..< s.count, using: &rng)
                s[i] = UInt8.random(in: 0 ... 255, using: &rng)
            }
            let options = TokenStreamDecoder.Options(maximumValueSize: 1 << 20)
            let reference = Self.alone(s, options: options)
            if reference.error != nil { failures += 1 }
            for (split, packetSize) in [(DecoderVerifier.Split.whole, nil), (.random, nil), (.random, 4096)] as [(DecoderVerifier.Split, Int?)] {
                let got = Self.drain(s, split, options: options, seed: UInt64(k), packetSize: packetSize)
                XCTAssertEqual(got.error?.code, reference.error?.code, "mutation \(k) \(split) \(String(describing: packetSize))")
                XCTAssertEqual(got.error?.offset, reference.error?.offset, "mutation \(k) \(split) \(String(describing: packetSize))")
                XCTAssertEqual(got.rows.count, reference.rows.count, "mutation \(k) \(split)")
                if got.rows.count == reference.rows.count {
                    for (a, b) in zip(got.rows, reference.rows) {
                        XCTAssertTrue(zip(a, b).allSatisfy { WireRowBlockTests.same($0, $1) }, "mutation \(k) \(split)")
                    }
                }
            }
        }
        XCTAssertGreaterThan(failures, 10)
    }

    /// vector cells (kept as wire bytes, checked by the codec's one check): the scan accepts exactly
    /// what the token decoder accepts, the block reads its values, and what it refuses ends the run
    /// with the token decoder's error.
    func testVectorScanAcceptsExactlyWhatTheTokenDecoderAccepts() throws {
        var rng = SeededRandom(seed: 5)
        var accepted = 0, refused = 0
        for type in [TypeInfo.vector(dimensions: 3), .vector(dimensions: 2, elementType: .float16)] {
            for k in 0 ..< 250 {
                let dims = type.scale == 1 ? 2 : 3
                var w = ByteWriter()
                try SQLVector((0 ..< dims).map { Float($0) - 0.5 }, elementType: type.scale == 1 ? .float16 : .float32).encode(into: &w)
                var cell = w.bytes
                switch k % 5 {
                case 0: break
                case 1: cell[Int.random(in: 0 ..< cell.count, using: &rng)] = UInt8.random(in: 0 ... 255, using: &rng)
                case 2: cell[Int.random(in: 8 ..< cell.count, using: &rng)] |= 0x7F   // toward an infinity or NaN
                case 3: cell.removeLast(Int.random(in: 0 ... 3, using: &rng))
                default: cell += [UInt8](repeating: 0, count: Int.random(in: 0 ... 4, using: &rng))
                }
                let bytes = k % 17 == 0 ? [0xFF, 0xFF] : [UInt8(cell.count & 0xFF), UInt8(cell.count >> 8)] + cell
                let (stream, _) = try Self.hostile(type, bytes)
                let reference = Self.alone(stream)
                for split in [DecoderVerifier.Split.whole, .random] {
                    let got = Self.drain(stream, split, seed: UInt64(k))
                    XCTAssertEqual(got.error?.code, reference.error?.code, "\(type) \(bytes) \(split)")
                    XCTAssertEqual(got.error?.offset, reference.error?.offset, "\(type) \(bytes) \(split)")
                    XCTAssertEqual(got.rows, reference.rows, "\(type) \(bytes) \(split)")
                    XCTAssertEqual(got.tokenRows, 0)
                }
                if reference.error == nil { accepted += 1 } else { refused += 1 }
            }
        }
        XCTAssertGreaterThan(accepted, 100)
        XCTAssertGreaterThan(refused, 100)
    }

    /// A row begun by the block path and finished by `next()` comes as a ROW token with the same
    /// values (the connection's `.forwardRow`); the message ending inside it is `.truncated` at the token.
    func testARowBegunInTheBlockPathIsFinishedByNext() throws {
        let stream = try Self.stream(rows: 6)
        let expected = (0 ..< 6).map(Self.rowValues)
        let meta = ServerTokens.colMetadata(Self.columns, version: .v7_4).count
        let row5 = try Self.stream(rows: 5).count - ServerTokens.done(status: .count, rowCount: 5, version: .v7_4).count
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.append(Array(stream[..<(row5 + 1000)]))   // rows 0-4 whole, row 5 begun
        XCTAssertNotNil(try decoder.next())
        var block = try XCTUnwrap(decoder.makeWireRowBlock())
        XCTAssertEqual(decoder.appendBufferedRows(to: &block, limit: 100, byteLimit: 1 << 30).end, .needBytes)
        XCTAssertEqual(block.rowCount, 5)
        XCTAssertNil(try decoder.next(), "row 5 is not whole yet")
        decoder.append(Array(stream[(row5 + 1000)...]))
        guard case .row(let r)? = try decoder.next() else { return XCTFail("row 5 as a token") }
        XCTAssertEqual(r.values, expected[5])
        XCTAssertNotNil(try decoder.next())   // DONE
        try decoder.finish()
        XCTAssertGreaterThan(meta, 0)
        // Cut inside row 5: truncated at its token.
        var cut = TokenStreamDecoder(version: .v7_4)
        cut.append(Array(stream[..<(row5 + 1000)]))
        _ = try cut.next()
        var b = try XCTUnwrap(cut.makeWireRowBlock())
        _ = cut.appendBufferedRows(to: &b, limit: 100, byteLimit: 1 << 30)
        XCTAssertThrowsError(try cut.finish()) {
            XCTAssertEqual(($0 as? TDSDecodingError)?.code, .truncated)
            XCTAssertEqual(($0 as? TDSDecodingError)?.offset, row5)
        }
    }

    /// A packet that straddles two received arrays goes to the decoder in its two parts
    /// (``PacketAssembler/consumePacket(into:)``): the framer copies nothing, where assembling
    /// the packet for ``PacketAssembler/consumePacket(_:)`` copies it whole. Rows of short
    /// values and a large one, in packets of 4,096 bytes received in arrays of 6,000 or 8,194
    /// (nearly every packet straddles, some with their header cut), read the same as whole.
    func testAPacketStraddlingTwoReadsIsHandedOverInItsTwoParts() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "b"),
                       ColumnMetadata(flags: [], typeInfo: .int, name: "i")]
        var stream = ServerTokens.colMetadata(columns, version: .v7_4)
        var expected: [[SQLValue]] = []
        for r in 0 ..< 40 {
            let value = (0 ..< (r == 20 ? 50_000 : 700 + r)).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ r) }
            stream += try ServerTokens.row([.binary(value), .int(Int32(r))], columns: columns,
                                           chunking: [ServerTokens.PLPChunking(sizes: [3000]), nil])
            expected.append([.binary(value), .int(Int32(r))])
        }
        stream += ServerTokens.done(version: .v7_4)
        let packets = Packet.encode(message: stream, type: .tabularResult, packetSize: 4096)

        // Reads of 6,000 bytes cut packets in their payload; of 8,194, in their header (2, 4, 6
        // or 8 bytes of it in the first array).
        for readSize in [6000, 8194] {
            var framer = PacketAssembler(maximumPacketSize: 4096)
            var decoder = TokenStreamDecoder(version: .v7_4)
            var rows: [[SQLValue]] = []
            var done = false
            for start in stride(from: 0, to: packets.count, by: readSize) {
                framer.append(Array(packets[start ..< min(start + readSize, packets.count)]))
                while try framer.peekHeader() != nil {
                    framer.consumePacket(into: &decoder)
                    while let token = try decoder.next() {
                        if let values = token.rowValues { rows.append(values) }
                        if case .done = token { done = true }
                    }
                }
            }
            XCTAssertTrue(done, "reads of \(readSize)")
            XCTAssertEqual(rows, expected, "reads of \(readSize)")
            XCTAssertEqual(framer.streamOffset, packets.count)
            XCTAssertEqual(framer.copiedByteCount, 0, "reads of \(readSize): a straddling packet was assembled")
        }

        var assembling = PacketAssembler(maximumPacketSize: 4096)
        var payload: [UInt8] = []
        for start in stride(from: 0, to: packets.count, by: 6000) {
            assembling.append(Array(packets[start ..< min(start + 6000, packets.count)]))
            while try assembling.peekHeader() != nil {
                _ = assembling.consumePacket { _, p in payload += p }
            }
        }
        XCTAssertEqual(payload, stream)
        XCTAssertGreaterThan(assembling.copiedByteCount, packets.count / 3)
    }
}

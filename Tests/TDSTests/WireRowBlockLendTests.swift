import Foundation
import SQLClientTesting
@testable import TDS
import XCTest

/// Rows lent to a block (``TokenStreamDecoder/lendsRowBytes``, issue 43): the run of rows is left
/// in the decoder's buffer and ``TokenStreamDecoder/settle(_:)`` gives the block that buffer (or
/// a copy of the rows). Driven as the connection drives it, the settled blocks must hold exactly
/// the rows the token decoder reads, whole, byte by byte, split at random and in packets, with
/// blocks of every size; rows the scan state assembles (a large value), results that change, a
/// message that ends while rows are lent, a block dropped unsettled and a buffer set aside at
/// its limit included.
final class WireRowBlockLendTests: XCTestCase {
    static let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
                          ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(8000), name: "b"),
                          ColumnMetadata(flags: [.nullable], typeInfo: .bigint, name: "n")]
    static let largeColumns = [ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
                               ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "big")]

    static func values(_ i: Int) -> [SQLValue] {
        [.int(Int32(i)), i % 5 == 0 ? .null : .binary((0 ..< (i * 37) % 3000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) }),
         i % 3 == 0 ? .null : .bigint(Int64(i) * 1_000_003)]
    }

    /// Two results of `rows` rows (ROW and NBCROW), a DONE between; the second with a large
    /// (PLP) value in every tenth row, which the scan state assembles.
    static func stream(rows: Int) throws -> (bytes: [UInt8], rows: [[SQLValue]]) {
        var s = ServerTokens.colMetadata(columns, version: .v7_4)
        var expected: [[SQLValue]] = []
        for i in 0 ..< rows {
            let v = values(i)
            s += i % 2 == 0 ? try ServerTokens.row(v, columns: columns) : try ServerTokens.nbcRow(v, columns: columns)
            expected.append(v)
        }
        s += ServerTokens.done(status: [.more, .count], rowCount: UInt64(rows), version: .v7_4)
        s += ServerTokens.colMetadata(largeColumns, version: .v7_4)
        for i in 0 ..< rows {
            let big: SQLValue = i % 10 == 0 ? .binary([UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 20_000)) : .binary([UInt8(truncatingIfNeeded: i)])
            s += try ServerTokens.row([.int(Int32(i)), big], columns: largeColumns)
            expected.append([.int(Int32(i)), big])
        }
        return (s + ServerTokens.done(version: .v7_4), expected)
    }

    /// What driving a stream gave: the settled blocks' rows in order, and how many blocks took
    /// the decoder's buffer.
    struct Driven {
        var rows: [[SQLValue]] = []
        var blocks = 0
        var adopted = 0
        var largestBuffer = 0
        /// The largest capacity the decoder's buffer had after a piece was appended.
        var largestCapacity = 0
    }

    /// Reads `pieces` as the connection does: runs of rows into a block, settled and read when
    /// it is handed on (`.limit`, `.incremental`, another token, the end); `dropEvery`: every
    /// n-th block is dropped unsettled once (its rows are read again from nowhere: the test
    /// then expects them missing).
    /// `settlesWhenFull`: a block is handed on before a piece its lend's buffer has no room for
    /// (``TokenStreamDecoder/lendsRows(withRoomUnder:)``), as the connection does.
    static func drive(_ pieces: [[UInt8]], lends: Bool, limits: (rows: Int, bytes: Int), lendLimit: Int? = nil,
                      settleAfterEveryRun: Bool = false, lendBufferCapacity: Int? = nil, settlesWhenFull: Bool = false) throws -> Driven {
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.lendsRowBytes = lends
        if let lendLimit { decoder.lendLimit = lendLimit }
        if let lendBufferCapacity { decoder.lendBufferCapacity = lendBufferCapacity }
        var out = Driven()
        var block: WireRowBlock?
        func handOn() {
            guard var b = block else { return }
            block = nil
            // (The address only: a second reference to the buffer would make the block copy it.)
            let before = decoder.buffer.withUnsafeBufferPointer { $0.baseAddress.map(UInt.init(bitPattern:)) }
            decoder.settle(&b)
            if let before, b.rowCount > 0, b.bytes.withUnsafeBufferPointer({ $0.baseAddress.map(UInt.init(bitPattern:)) }) == before {
                out.adopted += 1
            }
            guard !b.isEmpty else { return }
            out.blocks += 1
            out.rows += (0 ..< b.rowCount).map { b.values(row: $0) }
        }
        for piece in pieces {
            if settlesWhenFull, decoder.lendsRows(withRoomUnder: piece.count) { handOn() }
            decoder.append(piece)
            out.largestBuffer = max(out.largestBuffer, decoder.buffer.count)
            out.largestCapacity = max(out.largestCapacity, decoder.buffer.capacity)
            while true {
                if block == nil {
                    block = decoder.makeWireRowBlock()
                    block?.reserveOnAppend(rows: 4096, bytesPerRow: 256)   // as the connection does: 1 MiB, lent rows
                }
                if var b = block {
                    block = nil
                    let (_, end) = decoder.appendBufferedRows(to: &b, limit: limits.rows, byteLimit: limits.bytes)
                    block = b
                    if settleAfterEveryRun { handOn() }
                    switch end {
                    case .needBytes: break
                    case .limit:
                        handOn()
                        continue
                    case .otherToken, .incremental:
                        handOn()
                    }
                    if end == .needBytes { break }
                }
                guard let token = try decoder.next() else { break }
                if case .row(let r) = token { out.rows.append(r.values) }
                if case .nbcRow(let r) = token { out.rows.append(r.values) }
            }
        }
        try decoder.finish()
        handOn()
        return out
    }

    static func pieces(_ bytes: [UInt8], _ split: DecoderVerifier.Split) -> [[UInt8]] {
        var rng = SeededRandom(seed: 43)
        return DecoderVerifier.pieces(of: bytes, split, using: &rng)
    }

    static func packets(_ bytes: [UInt8], _ n: Int) -> [[UInt8]] {
        stride(from: 0, to: bytes.count, by: n).map { Array(bytes[$0 ..< min($0 + n, bytes.count)]) }
    }

    func testLentRowsReadAsTheTokenDecoderReadsThemUnderEverySplitAndLimit() throws {
        let (bytes, expected) = try Self.stream(rows: 60)
        let feeds: [(String, [[UInt8]])] = [("whole", Self.pieces(bytes, .whole)), ("byte by byte", Self.pieces(bytes, .byteByByte)),
                                             ("random", Self.pieces(bytes, .random)), ("packets of 32,759", Self.packets(bytes, 32_759)),
                                             ("packets of 4,088", Self.packets(bytes, 4_088))]
        for (name, pieces) in feeds {
            for limits in [(rows: 4096, bytes: 1 << 20), (rows: 1, bytes: 1 << 20), (rows: 7, bytes: 1 << 20), (rows: 4096, bytes: 5_000)] {
                for settleAfterEveryRun in [false, true] {
                    let lent = try Self.drive(pieces, lends: true, limits: limits, settleAfterEveryRun: settleAfterEveryRun)
                    let copied = try Self.drive(pieces, lends: false, limits: limits)
                    let what = "\(name), \(limits), settled after every run: \(settleAfterEveryRun)"
                    XCTAssertEqual(lent.rows.count, expected.count, what)
                    XCTAssertEqual(lent.rows, expected, what)
                    XCTAssertEqual(copied.rows, expected, what)
                    if !settleAfterEveryRun { XCTAssertEqual(lent.blocks, copied.blocks, what) }
                }
            }
        }
    }

    func testARunFillingTheBufferIsAdoptedAndASmallOneCopied() throws {
        let (bytes, expected) = try Self.stream(rows: 60)
        let got = try Self.drive(Self.packets(bytes, 32_759), lends: true, limits: (4096, 1 << 20))
        XCTAssertEqual(got.rows, expected)
        XCTAssertGreaterThan(got.adopted, 0, "no block took the decoder's buffer")
        let one = try Self.drive(Self.pieces(bytes, .whole), lends: true, limits: (4096, 1 << 20))
        XCTAssertEqual(one.rows, expected)
        // Whole, the first result's rows are under half of the one buffer (the second result's
        // large values are most of it): copied, so that no block holds more than twice its bytes.
        XCTAssertEqual(one.adopted, 0)
    }

    /// A block handed on when its lend's buffer cannot take the next packet takes that buffer,
    /// and the decoder goes on in a new one of the same room: the buffer never grows (a copy of
    /// the lent rows into fresh pages, issue 43); left lending, it grows.
    func testABlockHandedOnWhenTheBufferIsFullKeepsTheBufferFromGrowing() throws {
        let (bytes, expected) = try Self.stream(rows: 200)
        let room = 64 << 10
        XCTAssertGreaterThan(bytes.count, 4 * room)
        let packets = Self.packets(bytes, 4_088)
        let settled = try Self.drive(packets, lends: true, limits: (4096, 1 << 30), lendBufferCapacity: room, settlesWhenFull: true)
        XCTAssertEqual(settled.rows, expected)
        XCTAssertGreaterThan(settled.adopted, 2, "the full buffers were not taken by their blocks")
        XCTAssertLessThanOrEqual(settled.largestCapacity, room + (64 << 10) + 4_088, "the buffer grew")
        let grown = try Self.drive(packets, lends: true, limits: (4096, 1 << 30), lendBufferCapacity: room)
        XCTAssertEqual(grown.rows, expected)
        XCTAssertGreaterThan(grown.largestCapacity, 2 * room, "left lending, the buffer did not grow: the test shows nothing")
    }

    func testRowsLentWhenTheMessageEndsAreSettledFromTheBufferSetAside() throws {
        var s = ServerTokens.colMetadata(Self.columns, version: .v7_4)
        let rows = (0 ..< 50).map(Self.values)
        for v in rows { s += try ServerTokens.row(v, columns: Self.columns) }
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.lendsRowBytes = true
        decoder.append(s)
        guard case .colMetadata = try XCTUnwrap(decoder.next()) else { return XCTFail("COLMETADATA expected") }
        var block = try XCTUnwrap(decoder.makeWireRowBlock())
        block.reserveOnAppend(rows: 4096, bytesPerRow: 256)
        let (n, end) = decoder.appendBufferedRows(to: &block, limit: 4096, byteLimit: 1 << 20)
        XCTAssertEqual(n, 50)
        XCTAssertEqual(end, .needBytes)
        XCTAssertEqual(block.rowCount, 0, "lent rows are not read before they are settled")
        XCTAssertGreaterThan(block.byteCount, 0, "lent rows count toward the block's bytes")
        XCTAssertNil(try decoder.finish())
        XCTAssertEqual(decoder.buffer.count, 0)
        XCTAssertGreaterThan(decoder.detached.count, 0)
        // The next message's bytes go on while the block waits.
        decoder.append(ServerTokens.done(version: .v7_4))
        guard case .done = try XCTUnwrap(decoder.next()) else { return XCTFail("DONE expected") }
        decoder.settle(&block)
        XCTAssertEqual(block.rowCount, 50)
        XCTAssertEqual((0 ..< 50).map { block.values(row: $0) }, rows)
        XCTAssertEqual(decoder.detached.count, 0, "the buffer set aside is released")
    }

    func testTheBufferIsSetAsideAtItsLimitSoThatMemoryStaysBounded() throws {
        let (bytes, expected) = try Self.stream(rows: 60)
        // Settled only when the run ends; a 20 KB limit sets the buffer aside many times.
        let got = try Self.drive(Self.packets(bytes, 4_088), lends: true, limits: (4096, 1 << 30), lendLimit: 20_000)
        XCTAssertEqual(got.rows, expected)
        XCTAssertLessThan(got.largestBuffer, 20_000 + 25_000, "the buffer grew past its limit and a packet and a row")
    }

    func testABlockDroppedUnsettledEndsItsLendAndTheNextBlockLends() throws {
        var s = ServerTokens.colMetadata(Self.columns, version: .v7_4)
        let rows = (0 ..< 40).map(Self.values)
        for v in rows { s += try ServerTokens.row(v, columns: Self.columns) }
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.lendsRowBytes = true
        decoder.append(Array(s[..<(s.count / 2)]))
        guard case .colMetadata = try XCTUnwrap(decoder.next()) else { return XCTFail("COLMETADATA expected") }
        var dropped = try XCTUnwrap(decoder.makeWireRowBlock())
        dropped.reserveOnAppend(rows: 4096, bytesPerRow: 256)
        let (first, _) = decoder.appendBufferedRows(to: &dropped, limit: 4096, byteLimit: 1 << 20)
        XCTAssertGreaterThan(first, 0)
        // `dropped` is never settled; the next block begins a lend of its own.
        decoder.append(Array(s[(s.count / 2)...]))
        var next = try XCTUnwrap(decoder.makeWireRowBlock())
        next.reserveOnAppend(rows: 4096, bytesPerRow: 256)
        let (second, _) = decoder.appendBufferedRows(to: &next, limit: 4096, byteLimit: 1 << 20)
        XCTAssertEqual(first + second, 40)
        decoder.settle(&next)
        XCTAssertEqual((0 ..< next.rowCount).map { next.values(row: $0) }, Array(rows[first...]))
        // The dropped block, settled late, gets none of its lent rows (its lend ended): empty, not wrong.
        decoder.settle(&dropped)
        XCTAssertEqual(dropped.rowCount, 0)
    }

    func testTextRowsAreNeverLent() throws {
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "s")]
        var s = ServerTokens.colMetadata(columns, version: .v7_4)
        for i in 0 ..< 10 { s += try ServerTokens.row([.string("row \(i)")], columns: columns) }
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.lendsRowBytes = true
        decoder.append(s)
        guard case .colMetadata = try XCTUnwrap(decoder.next()) else { return XCTFail("COLMETADATA expected") }
        var block = try XCTUnwrap(decoder.makeWireRowBlock())
        block.reserveOnAppend(rows: 4096, bytesPerRow: 256)
        let (n, _) = decoder.appendBufferedRows(to: &block, limit: 4096, byteLimit: 1 << 20)
        XCTAssertEqual(n, 10)
        XCTAssertEqual(block.lentSerial, 0)
        XCTAssertEqual(block.rowCount, 10, "transcoded rows are in the block at once")
        XCTAssertEqual(block.values(row: 9), [.string("row 9")])
    }

    func testABufferGivenBackIsTheDecodersNextAndNoneIsKeptOnceTheMessageEnds() throws {
        var s = ServerTokens.colMetadata(Self.columns, version: .v7_4)
        for i in 0 ..< 600 { s += try ServerTokens.row(Self.values(i), columns: Self.columns) }
        let recycler = RowBytesRecycler()
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.lendsRowBytes = true
        decoder.recycler = recycler
        decoder.lendBufferCapacity = 256 << 10
        let half = s.count / 2
        decoder.append(Array(s[..<half]))
        guard case .colMetadata = try XCTUnwrap(decoder.next()) else { return XCTFail("COLMETADATA expected") }
        func lendAndSettle() throws -> WireRowBlock {
            var block = try XCTUnwrap(decoder.makeWireRowBlock())
        block.reserveOnAppend(rows: 4096, bytesPerRow: 256)
            _ = decoder.appendBufferedRows(to: &block, limit: 4096, byteLimit: 1 << 30)
            decoder.settle(&block)
            return block
        }
        func address(_ a: [UInt8]) -> UInt? { a.withUnsafeBufferPointer { $0.baseAddress.map(UInt.init(bitPattern:)) } }
        var first: WireRowBlock? = try lendAndSettle()
        XCTAssertGreaterThan(first?.rowCount ?? 0, 0)
        let firstAddress = first.flatMap { address($0.bytes) }
        XCTAssertNotNil(firstAddress)
        first?.giveBytes(to: recycler)
        first = nil   // released: the buffer's one reference is the recycler's
        // The second lend's rows are in the buffer made at the first settle; the third buffer,
        // made at the second settle, is the first block's.
        decoder.append(Array(s[half...]))
        let second = try lendAndSettle()
        XCTAssertGreaterThan(second.rowCount, 0)
        XCTAssertEqual(address(decoder.buffer), firstAddress, "the buffer given back was not reused")
        XCTAssertEqual(second.values(row: second.rowCount - 1), Self.values(599))
        second.giveBytes(to: recycler)
        XCTAssertNil(try decoder.finish())
        XCTAssertNil(recycler.take(capacity: 1), "a buffer kept after the message ended")
    }

    /// Rows that are copied (text: never lent) go into room taken from the recycler: a block
    /// given back is the next block's storage (pages already touched, issue 43), with the same
    /// values; room more than twice what a block asks is left for a larger one.
    func testCopiedRowsGoIntoRoomABlockGaveBack() throws {
        let columns = [ColumnMetadata(flags: [], typeInfo: .int, name: "id"), ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(100), name: "s")]
        func rows(_ range: Range<Int>) -> [[SQLValue]] {
            range.map { [.int(Int32($0)), $0 % 9 == 0 ? .null : .string("row \($0) · \(String(repeating: "é", count: $0 % 40))")] }
        }
        var s = ServerTokens.colMetadata(columns, version: .v7_4)
        for r in rows(0 ..< 3000) { s += try ServerTokens.row(r, columns: columns) }
        let recycler = RowBytesRecycler()
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.lendsRowBytes = true
        decoder.recycler = recycler
        decoder.append(s)
        guard case .colMetadata = try XCTUnwrap(decoder.next()) else { return XCTFail("COLMETADATA expected") }
        func address(_ a: [UInt8]) -> UInt? { a.withUnsafeBufferPointer { $0.baseAddress.map(UInt.init(bitPattern:)) } }
        func block(rows n: Int, bytesPerRow: Int) throws -> WireRowBlock {
            var b = try XCTUnwrap(decoder.makeWireRowBlock())
            b.reserveOnAppend(rows: n, bytesPerRow: bytesPerRow)
            decoder.provideRoom(&b)   // as the connection does for each new block
            let (got, _) = decoder.appendBufferedRows(to: &b, limit: n, byteLimit: 1 << 30)
            XCTAssertEqual(got, n)
            decoder.settle(&b)
            return b
        }
        var first: WireRowBlock? = try block(rows: 1000, bytesPerRow: 100)   // asks 100 KB
        XCTAssertEqual((0 ..< 1000).map { first?.values(row: $0) }, rows(0 ..< 1000))
        let firstAddress = first.flatMap { address($0.bytes) }
        XCTAssertNotNil(firstAddress)
        first?.giveBytes(to: recycler)
        first = nil   // released: the room's one reference is the recycler's
        var second: WireRowBlock? = try block(rows: 1000, bytesPerRow: 100)
        XCTAssertEqual(second.flatMap { address($0.bytes) }, firstAddress, "the room given back was not the next block's")
        XCTAssertEqual((0 ..< 1000).map { second?.values(row: $0) }, rows(1000 ..< 2000))
        second?.giveBytes(to: recycler)
        second = nil
        // A block asking under half of the room kept takes room of its own.
        let third = try block(rows: 1000, bytesPerRow: 40)
        XCTAssertNotEqual(address(third.bytes), firstAddress)
        XCTAssertEqual((0 ..< 1000).map { third.values(row: $0) }, rows(2000 ..< 3000))
    }

    func testABlockExpectedToBeSmallIsNotLentRows() throws {
        var s = ServerTokens.colMetadata(Self.columns, version: .v7_4)
        let rows = (0 ..< 20).map(Self.values)
        for v in rows { s += try ServerTokens.row(v, columns: Self.columns) }
        var decoder = TokenStreamDecoder(version: .v7_4)
        decoder.lendsRowBytes = true
        decoder.append(s)
        guard case .colMetadata = try XCTUnwrap(decoder.next()) else { return XCTFail("COLMETADATA expected") }
        var block = try XCTUnwrap(decoder.makeWireRowBlock())
        block.reserveOnAppend(rows: 256, bytesPerRow: 100)   // 25 KB: under a quarter of 768 KiB
        let (n, _) = decoder.appendBufferedRows(to: &block, limit: 4096, byteLimit: 1 << 20)
        XCTAssertEqual(n, 20)
        XCTAssertEqual(block.lentSerial, 0)
        XCTAssertNil(decoder.lend)
        XCTAssertEqual((0 ..< block.rowCount).map { block.values(row: $0) }, rows, "copied at once, as without lending")
    }
}

import XCTest
@testable import TDS
import SQLClientTesting
import TDS

/// Streaming behaviour of TokenStreamDecoder: resumability, partial rows, big PLP values,
/// bounded memory, hostile lengths, errors with offsets and token names.
final class TokenStreamDecoderTests: XCTestCase {
    let intCol = ColumnMetadata(typeInfo: .int, name: "id")
    let maxCol = ColumnMetadata(typeInfo: .varbinary(nil), name: "payload")

    func metadata(_ cols: [ColumnMetadata]) -> [UInt8] {
        var w = ByteWriter()
        ColMetadata(columns: cols).encode(into: &w, version: .v7_4)
        return w.bytes
    }

    /// A ROW with an int and a PLP varbinary(max) of `size` bytes in chunks of `chunk` bytes.
    func plpRow(id: Int32, size: Int, chunk: Int, declared: UInt64? = nil) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xD1)
        w.writeUInt8(4); w.writeInt32LE(id)
        w.writeUInt64LE(declared ?? UInt64(size))
        var left = size
        var i = 0
        while left > 0 {
            let n = min(chunk, left)
            w.writeUInt32LE(UInt32(n))
            for _ in 0..<n { w.writeUInt8(UInt8(truncatingIfNeeded: i)); i += 1 }
            left -= n
        }
        w.writeUInt32LE(0)
        return w.bytes
    }

    /// SQL Server 2000 refusing a 7.4 LOGIN7: ERROR (2-byte line number) and a 9-byte DONE, no
    /// LOGINACK. With acceptsShortDoneBeforeLoginAck the message's end makes that DONE whole; without
    /// it, or after a LOGINACK, the same bytes stay a truncated token.
    func testShortDoneBeforeLoginAckIsTheTDS71Form() throws {
        let bytes = ServerTokens.message(token: 0xAA, number: 18456, severity: 14, text: "Login failed for user 'sa'.",
                                         version: .v7_1)
            + ServerTokens.done(status: .error, version: .v7_1)
        XCTAssertEqual(bytes.suffix(9).first, 0xFD)
        var options = TokenStreamDecoder.Options()
        options.acceptsShortDoneBeforeLoginAck = true
        for split in [bytes.count, 1, 7] {
            var decoder = TokenStreamDecoder(version: .v7_4, options: options)
            var tokens: [Token] = []
            var i = 0
            while i < bytes.count {
                decoder.append(Array(bytes[i ..< min(i + split, bytes.count)]))
                i += split
                while let t = try decoder.next() { tokens.append(t) }
            }
            if let last = try decoder.finish() { tokens.append(last) }
            XCTAssertEqual(tokens.count, 2, "split \(split)")
            guard case .error(let e) = tokens.first, case .done(let d) = tokens.last else { return XCTFail("\(tokens)") }
            XCTAssertEqual(e.message.number, 18456)
            XCTAssertTrue(d.status.contains(.error))
        }
        var strict = TokenStreamDecoder(version: .v7_4)
        strict.append(bytes)
        while try strict.next() != nil {}
        XCTAssertThrowsError(try strict.finish()) { XCTAssertEqual(($0 as? TDSDecodingError)?.code, .truncated) }
        var afterAck = TokenStreamDecoder(version: .v7_4, options: options)
        afterAck.append(ServerTokens.loginAck(version: .v7_4) + ServerTokens.done(status: .error, version: .v7_1))
        while try afterAck.next() != nil {}
        XCTAssertThrowsError(try afterAck.finish())
    }

    func testMultiMegabytePLPValueAssembledAcrossPackets() throws {
        let size = 3 * 1024 * 1024 + 17
        let stream = metadata([intCol, maxCol]) + plpRow(id: 1, size: size, chunk: 8000)
            + [0xFD, 0x10, 0, 0xC1, 0, 1, 0, 0, 0, 0, 0, 0, 0]
        var d = TokenStreamDecoder(version: .v7_4)
        var tokens: [Token] = []
        var maxBuffered = 0
        var pos = 0
        while pos < stream.count {
            let n = min(4088, stream.count - pos)   // 4096-byte packets without their headers
            d.append(Array(stream[pos ..< pos + n]))
            pos += n
            while let t = try d.next() { tokens.append(t) }
            maxBuffered = max(maxBuffered, d.bufferedByteCount)
        }
        try d.finish()
        XCTAssertEqual(tokens.names, ["COLMETADATA", "ROW", "DONE"])
        guard case .binary(let b) = tokens[1].rowValues?[1] else { return XCTFail("no binary value") }
        XCTAssertEqual(b.count, size)
        XCTAssertEqual(b[size - 1], UInt8(truncatingIfNeeded: size - 1))
        XCTAssertEqual(b[70000], UInt8(truncatingIfNeeded: 70000))
        // The partial row's chunks are taken out of the input buffer as they arrive.
        XCTAssertLessThan(maxBuffered, 2 * 4088)
    }

    func testPartialRowStateIsKeptBetweenCalls() throws {
        var d = TokenStreamDecoder(version: .v7_4)
        d.append(metadata([intCol, maxCol]))
        XCTAssertEqual(try d.next()?.name, "COLMETADATA")
        XCTAssertEqual(d.columns.map(\.name), ["id", "payload"])
        let row = plpRow(id: 9, size: 100, chunk: 30)
        d.append(Array(row[0..<40]))
        XCTAssertNil(try d.next())
        // The int and the first chunk have been consumed from the buffer.
        XCTAssertEqual(d.bufferedByteCount, 0)
        XCTAssertEqual(d.offset, metadata([intCol, maxCol]).count + 40)
        d.append(Array(row[40...]))
        XCTAssertEqual(try d.next()?.rowValues?.first, .int(9))
        XCTAssertNil(try d.next())
        XCTAssertNoThrow(try d.finish())
    }

    func testHugeDeclaredPLPLengthIsRefusedAtOnce() throws {
        var d = TokenStreamDecoder(version: .v7_4)
        d.append(metadata([intCol, maxCol]))
        _ = try d.next()
        var w = ByteWriter()
        w.writeUInt8(0xD1); w.writeUInt8(4); w.writeInt32LE(1)
        w.writeUInt64LE(0xFFFF_FFFF_FFFF_FFF0)    // absurd total length
        w.writeUInt32LE(0xFFFF_FFF0)              // absurd chunk length
        w.writeBytes([1, 2, 3])
        d.append(w.bytes)
        XCTAssertThrowsError(try d.next()) { error in
            let e = error as? TDSDecodingError
            XCTAssertEqual(e?.code, .invalidLength)
            XCTAssertEqual(e?.context, "ROW")
            XCTAssertEqual(e?.offset, self.metadata([self.intCol, self.maxCol]).count + 6, "at the total length")
            XCTAssertTrue(e?.detail.contains("2^31-1") ?? false, "\(String(describing: e))")
        }
    }

    // MARK: - Caps

    /// Declared PLP lengths: 2^62 and 2^31 are malformed whatever the cap (SQL Server never
    /// sends more than 2^31-1); 2^31-1 itself is accepted by that rule but is over the default
    /// 1 GiB maximumValueSize; PLP_NULL and UNKNOWN_PLP_LEN are markers, not lengths.
    func testDeclaredPLPLengthsAgainstTheCaps() throws {
        let small = TokenStreamDecoder.Options(maximumValueSize: 1 << 20)
        let table: [(declared: UInt64, options: TokenStreamDecoder.Options, expected: String)] = [
            (1 << 62, .init(), "invalidLength"),
            (1 << 31, .init(), "invalidLength"),
            (0x7FFF_FFFF, .init(maximumValueSize: Int(Int32.max)), "waiting"),
            (0x7FFF_FFFF, .init(), "limitExceeded"),   // over the default 1 GiB
            (0x7FFF_FFFF, small, "limitExceeded"),
            ((1 << 20) + 1, small, "limitExceeded"),
            (1 << 20, small, "waiting"),
            (0xFFFF_FFFF_FFFF_FFFF, small, "row"),       // PLP_NULL
            (0xFFFF_FFFF_FFFF_FFFE, small, "waiting"),   // UNKNOWN_PLP_LEN: chunks follow
        ]
        for (declared, options, expected) in table {
            var d = TokenStreamDecoder(version: .v7_4, options: options)
            var w = ByteWriter()
            w.writeUInt8(0xD1); w.writeUInt8(4); w.writeInt32LE(1)
            w.writeUInt64LE(declared)
            d.append(metadata([intCol, maxCol]) + w.bytes)
            var outcome: String
            do {
                _ = try d.next()
                outcome = try d.next() == nil ? "waiting" : "row"
            } catch let e as TDSDecodingError {
                outcome = e.code.name
                XCTAssertEqual(e.offset, metadata([intCol, maxCol]).count + 6, "declared \(declared)")
            }
            XCTAssertEqual(outcome, expected, "declared \(declared), cap \(options.maximumValueSize)")
        }
    }

    /// A value of unknown length is bounded as its chunks arrive: the chunk that would pass the
    /// cap is refused at its length, before its bytes are copied (or even received).
    func testUnknownLengthPLPIsBoundedByTheValueCap() throws {
        var d = TokenStreamDecoder(version: .v7_4, options: .init(maximumValueSize: 100_000))
        d.append(metadata([intCol, maxCol]))
        _ = try d.next()
        var w = ByteWriter()
        w.writeUInt8(0xD1); w.writeUInt8(4); w.writeInt32LE(1)
        w.writeUInt64LE(0xFFFF_FFFF_FFFF_FFFE)
        d.append(w.bytes)
        XCTAssertNil(try d.next())
        var chunks = 0
        var failure: TDSDecodingError?
        while failure == nil, chunks < 100 {
            var c = ByteWriter()
            c.writeUInt32LE(8000)
            c.writeBytes([UInt8](repeating: 7, count: 8000))
            d.append(c.bytes)
            do { let t = try d.next(); XCTAssertNil(t) } catch { failure = error as? TDSDecodingError }
            chunks += 1
        }
        XCTAssertEqual(failure?.code, .limitExceeded)
        XCTAssertEqual(failure?.context, "ROW")
        XCTAssertEqual(chunks, 13, "12 chunks of 8,000 bytes fit in 100,000; the 13th does not")
        XCTAssertTrue(failure?.detail.contains("maximum value size of 100000 bytes") ?? false, "\(String(describing: failure))")
    }

    /// A token other than a row is bounded: a 32-bit declared length over the cap is refused at
    /// once; any token still incomplete past the cap is refused without waiting for more.
    func testTokenSizeCap() throws {
        var d = TokenStreamDecoder(version: .v7_4, options: .init(maximumTokenSize: 1000))
        d.append([0xE4, 0xE9, 0x03, 0x00, 0x00])   // SESSIONSTATE, Length 1001
        XCTAssertThrowsError(try d.next()) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .limitExceeded)
            XCTAssertEqual((error as? TDSDecodingError)?.context, "SESSIONSTATE")
        }
        var e = TokenStreamDecoder(version: .v7_4, options: .init(maximumTokenSize: 1000))
        // FEATUREEXTACK: one feature declaring 100,000 bytes of data, arriving 100 at a time.
        e.append([0xAE, 0x05, 0xA0, 0x86, 0x01, 0x00])
        var failure: TDSDecodingError?
        var appended = 6
        while failure == nil, appended < 100_000 {
            e.append([UInt8](repeating: 0, count: 100))
            appended += 100
            do { let t = try e.next(); XCTAssertNil(t) } catch { failure = error as? TDSDecodingError }
        }
        XCTAssertEqual(failure?.code, .limitExceeded)
        XCTAssertEqual(failure?.context, "FEATUREEXTACK")
        XCTAssertLessThanOrEqual(appended, 1106, "refused once more than 1,000 bytes of it were buffered")
        // A USHORT-length token (ERROR) declaring 5,000 bytes, arriving a byte at a time.
        var f = TokenStreamDecoder(version: .v7_4, options: .init(maximumTokenSize: 1000))
        f.append([0xAA, 0x88, 0x13])
        var fed = 3
        var refused: TDSDecodingError?
        while refused == nil, fed < 5003 {
            f.append([0])
            fed += 1
            do { let t = try f.next(); XCTAssertNil(t) } catch { refused = error }
        }
        XCTAssertEqual(refused?.code, .limitExceeded)
        XCTAssertEqual(refused?.context, "ERROR")
        XCTAssertEqual(refused?.offset, 0)
        XCTAssertEqual(fed, 1001)
    }

    /// A COLMETADATA of 4,000 columns arriving in 512-byte packets is decoded once, column by
    /// column: decoded columns leave the input buffer as they complete (so nothing can be
    /// re-parsed from the token's start: the work is linear in its size), and the columns are
    /// the same as decoded whole.
    func testColMetadataAcrossManyPacketsIsDecodedLinearly() throws {
        let columns = (0 ..< 4000).map { ColumnMetadata(typeInfo: .nvarchar(50), name: "column_\($0)") }
        let bytes = metadata(columns)
        XCTAssertGreaterThan(bytes.count, 100_000)
        var d = TokenStreamDecoder(version: .v7_4)
        var token: Token?
        var maxBuffered = 0
        var pos = 0
        while pos < bytes.count {
            let n = min(504, bytes.count - pos)
            d.append(Array(bytes[pos ..< pos + n]))
            pos += n
            if let t = try d.next() { token = t }
            maxBuffered = max(maxBuffered, d.bufferedByteCount)
        }
        guard case .colMetadata(let m)? = token else { return XCTFail("no COLMETADATA") }
        XCTAssertEqual(m.columns, columns)
        XCTAssertEqual(d.columns.count, 4000)
        XCTAssertLessThan(maxBuffered, 504 + 200, "decoded columns leave the buffer; only a partial column waits")
    }

    func testPLPChunksDisagreeingWithTotalLength() throws {
        let stream = metadata([intCol, maxCol]) + plpRow(id: 1, size: 50, chunk: 20, declared: 40)
        let out = try DecoderVerifier.outcome(stream, version: .v7_4, randomSplits: 8, seed: 3)
        XCTAssertEqual(out.tokens.names, ["COLMETADATA"])
        XCTAssertEqual(out.error?.code, .invalidLength)
        XCTAssertEqual(out.error?.context, "ROW")
        XCTAssertTrue(out.error?.detail.contains("column 2") ?? false, out.error?.detail ?? "")
    }

    func testUnknownPLPLengthIsAccepted() throws {
        let stream = metadata([intCol, maxCol]) + plpRow(id: 2, size: 45, chunk: 10, declared: 0xFFFF_FFFF_FFFF_FFFE)
        let t = try DecoderVerifier.verify(stream, version: .v7_4)
        guard case .binary(let b) = t[1].rowValues?[1] else { return XCTFail() }
        XCTAssertEqual(b, (0..<45).map { UInt8($0) })
    }

    func testUnknownTokenByteHasOffsetAndIsSticky() throws {
        let stream: [UInt8] = [0x79, 0, 0, 0, 0, 0x12, 0xFD]
        var d = TokenStreamDecoder(version: .v7_4)
        d.append(stream)
        XCTAssertEqual(try d.next(), .returnStatus(ReturnStatus(value: 0)))
        XCTAssertThrowsError(try d.next()) { error in
            let e = error as? TDSDecodingError
            XCTAssertEqual(e?.code, .unknownToken)
            XCTAssertEqual(e?.offset, 5)
            XCTAssertEqual(e?.context, "0x12")
        }
        XCTAssertThrowsError(try d.next()) { error in XCTAssertEqual((error as? TDSDecodingError)?.offset, 5) }
        let out = try DecoderVerifier.outcome(stream, version: .v7_4)
        XCTAssertEqual(out.error?.code, .unknownToken)
    }

    func testFinishNamesThePartialToken() throws {
        let env: [UInt8] = [0xE3, 0x1B, 0x00, 0x01, 0x06]
        let out = try DecoderVerifier.outcome([0x79, 1, 0, 0, 0] + env, version: .v7_4)
        XCTAssertEqual(out.tokens, [.returnStatus(ReturnStatus(value: 1))])
        XCTAssertEqual(out.error?.code, .truncated)
        XCTAssertEqual(out.error?.context, "ENVCHANGE")
        XCTAssertEqual(out.error?.offset, 5)
        // Offsets restart after finish() for the next message.
        var d = TokenStreamDecoder(version: .v7_4)
        d.append([0x79, 1, 0, 0, 0])
        _ = try d.next()
        try d.finish()
        XCTAssertEqual(d.offset, 0)
    }

    func testRowWithoutMetadataIsUnexpected() throws {
        let out = try DecoderVerifier.outcome([0xD1, 0x04, 1, 0, 0, 0], version: .v7_4)
        XCTAssertEqual(out.error?.code, .unexpectedToken)
        XCTAssertEqual(out.error?.context, "ROW")
        XCTAssertEqual(out.error?.offset, 0)
    }

    func testValueErrorsCarryTokenContextAndAbsoluteOffset() throws {
        // An INTN with length 3 is invalid; its offset is that of the length byte.
        let meta = metadata([intCol, intCol])
        let stream = meta + [0xD1, 0x04, 1, 0, 0, 0, 0x03, 1, 2, 3]
        let out = try DecoderVerifier.outcome(stream, version: .v7_4)
        XCTAssertEqual(out.error?.context, "ROW")
        XCTAssertNotEqual(out.error?.code, .truncated)
        XCTAssertTrue(out.error?.detail.contains("column 2") ?? false, out.error?.detail ?? "")
        XCTAssertGreaterThanOrEqual(out.error?.offset ?? -1, meta.count + 6)
    }

    func testManyRowsKeepTheBufferBounded() throws {
        let cols = [intCol, ColumnMetadata(typeInfo: .nvarchar(40), name: "s")]
        var w = ByteWriter()
        ColMetadata(columns: cols).encode(into: &w, version: .v7_4)
        for i in 0..<20000 { try Row(values: [.int(Int32(i)), .string("row \(i)")]).encode(into: &w, columns: cols) }
        Done(status: [.count], currentCommand: 0xC1, rowCount: 20000).encode(into: &w, version: .v7_4)
        let stream = w.bytes
        var d = TokenStreamDecoder(version: .v7_4)
        var count = 0
        var last: [SQLValue] = []
        var maxBuffered = 0
        var pos = 0
        while pos < stream.count {
            let n = min(4088, stream.count - pos)
            d.append(Array(stream[pos ..< pos + n]))
            pos += n
            while let t = try d.next() {
                if let v = t.rowValues { count += 1; last = v }
            }
            maxBuffered = max(maxBuffered, d.bufferedByteCount)
        }
        try d.finish()
        XCTAssertEqual(count, 20000)
        XCTAssertEqual(last, [.int(19999), .string("row 19999")])
        XCTAssertLessThan(maxBuffered, 100)
    }

    func testRandomSplitsOfALongMixedStream() throws {
        let cols = [intCol, maxCol, ColumnMetadata(typeInfo: .text(), tableName: ["t"], name: "txt")]
        var w = ByteWriter()
        ColMetadata(columns: cols).encode(into: &w, version: .v7_4)
        for i in 0..<30 {
            let values: [SQLValue] = [.int(Int32(i)), i % 3 == 0 ? .null : .binary(Array(repeating: UInt8(i), count: i * 97)),
                                      i % 4 == 0 ? .null : .string(String(repeating: "t", count: i * 31))]
            if i % 2 == 0 { try NBCRow(values: values).encode(into: &w, columns: cols) } else { try Row(values: values).encode(into: &w, columns: cols) }
        }
        Done(status: [.count], currentCommand: 0xC1, rowCount: 30).encode(into: &w, version: .v7_4)
        let t = try DecoderVerifier.verify(w.bytes, version: .v7_4, randomSplits: 40, seed: 12345)
        XCTAssertEqual(t.count, 32)
        XCTAssertEqual(t[30].rowValues?[1], .binary(Array(repeating: 29, count: 29 * 97)))
        XCTAssertEqual(t[30].rowValues?[2], .string(String(repeating: "t", count: 29 * 31)))
        XCTAssertEqual(t[1].rowValues, [.int(0), .null, .null])
    }

    func testVerifierReportsAMismatch() {
        // Sanity of the verifier itself: different inputs give different outcomes.
        let a = DecoderVerifier.decode([0x79, 1, 0, 0, 0], pieces: [5], version: .v7_4)
        let b = DecoderVerifier.decode([0x79, 2, 0, 0, 0], pieces: [1, 1, 1, 1, 1], version: .v7_4)
        XCTAssertNotEqual(a, b)
        var rng = SeededRandom(seed: 1)
        let pieces = DecoderVerifier.randomPieces(total: 1000, using: &rng)
        XCTAssertEqual(pieces.reduce(0, +), 1000)
        XCTAssertTrue(pieces.allSatisfy { $0 > 0 })
    }
}

extension TokenStreamDecoderTests {
    func testLongReturnValueIsReadIncrementally() throws {
        let info = TypeInfo.varbinary(nil)
        let payload = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var w = ByteWriter()
        w.writeUInt8(0xAC)
        w.writeUInt16LE(1); w.writeBVarChar("@blob"); w.writeUInt8(1)
        w.writeUInt32LE(0); w.writeUInt16LE(1)
        info.encode(into: &w, version: .v7_4)
        try info.encodeValue(.binary(payload), into: &w)
        DoneProc(status: [], currentCommand: 0xE0, rowCount: 0).encode(into: &w, version: .v7_4)
        let stream = w.bytes
        var d = TokenStreamDecoder(version: .v7_4)
        var tokens: [Token] = []
        var maxBuffered = 0
        var pos = 0
        while pos < stream.count {
            let n = min(4088, stream.count - pos)
            d.append(Array(stream[pos ..< pos + n]))
            pos += n
            while let t = try d.next() { tokens.append(t) }
            maxBuffered = max(maxBuffered, d.bufferedByteCount)
        }
        try d.finish()
        XCTAssertEqual(tokens.names, ["RETURNVALUE", "DONEPROC"])
        guard case .returnValue(let rv) = tokens[0] else { return XCTFail() }
        XCTAssertEqual(rv.name, "@blob")
        XCTAssertEqual(rv.value, .binary(payload))
        XCTAssertLessThan(maxBuffered, 2 * 4088)
        // Same answer however it is split.
        XCTAssertEqual(try DecoderVerifier.verify(stream, version: .v7_4, randomSplits: 3, seed: 5), tokens)
    }
}

// MARK: - Rows in parts (nextPart): large values in chunks

extension TokenStreamDecoderTests {
    /// Columns of every large kind beside small ones.
    static let partColumns: [ColumnMetadata] = [
        ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(nil), name: "bin"),
        ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(nil), name: "ntext"),
        ColumnMetadata(flags: [.nullable], typeInfo: .varchar(nil), name: "vtext"),
        ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(20), name: "small"),
        ColumnMetadata(flags: [.nullable], typeInfo: .image, name: "img"),
        ColumnMetadata(flags: [.nullable], typeInfo: .ntext(), name: "nt"),
    ]

    /// A response: COLMETADATA, `rows` (ROW and NBCROW alternately, PLP values cut as `chunking`
    /// says), DONE.
    static func partsStream(_ rows: [[SQLValue]], chunking: [ServerTokens.PLPChunking?]) throws -> [UInt8] {
        var bytes = ServerTokens.colMetadata(partColumns, version: .v7_4)
        for (i, row) in rows.enumerated() {
            bytes += i % 2 == 0 ? try ServerTokens.row(row, columns: partColumns, chunking: chunking)
                                : try ServerTokens.nbcRow(row, columns: partColumns, chunking: chunking)
        }
        return bytes + ServerTokens.done(version: .v7_4)
    }

    /// The rows the parts make (a large value's chunks concatenated and decoded as its type),
    /// and the other tokens, feeding `bytes` cut at `cuts`.
    static func rowsFromParts(_ bytes: [UInt8], cuts: [Int], maximumValueSize: Int = 1 << 30) throws -> (rows: [[SQLValue]], tokens: [Token], largestChunk: Int) {
        var d = TokenStreamDecoder(version: .v7_4, options: .init(maximumValueSize: maximumValueSize))
        d.startResponse(rows: .parts)
        var rows: [[SQLValue]] = [], tokens: [Token] = []
        var row: [SQLValue?] = Array(repeating: nil, count: partColumns.count)
        var large: [Int: [UInt8]] = [:]
        var largest = 0
        func drain() throws {
            while let part = try d.nextPart() {
                switch part {
                case .token(let t): tokens.append(t)
                case .value(let c, let v): XCTAssertNil(row[c]); row[c] = v
                case .chunk(let c, let b):
                    XCTAssertFalse(b.isEmpty, "an empty chunk")
                    largest = max(largest, b.count)
                    large[c, default: []] += b
                case .largeValueEnd(let c):
                    XCTAssertNil(row[c])
                    let b = large.removeValue(forKey: c) ?? []
                    switch partColumns[c].typeInfo.type {
                    case .nvarchar, .ntext: row[c] = .string(String(decoding: stride(from: 0, to: b.count, by: 2).map { UInt16(b[$0]) | UInt16(b[$0 + 1]) << 8 }, as: UTF16.self))
                    case .bigVarChar, .text: row[c] = .string(String(decoding: b, as: UTF8.self))   // ASCII here
                    default: row[c] = .binary(b)
                    }
                case .rowEnd:
                    XCTAssertTrue(large.isEmpty)
                    rows.append(row.map { $0 ?? .null })
                    XCTAssertFalse(row.contains { $0 == nil }, "a column without a part")
                    row = Array(repeating: nil, count: partColumns.count)
                }
            }
        }
        var start = 0
        for cut in cuts + [bytes.count] where cut > start {
            d.append(Array(bytes[start ..< cut]))
            start = cut
            try drain()
        }
        if let last = try d.finish() { tokens.append(last) }
        try drain()
        return (rows, tokens, largest)
    }

    func testRowsInPartsGiveTheRowsOfTheBufferedDecoderWholeByteByByteAndSplitAtRandom() throws {
        var rng = SystemRandomNumberGenerator()
        func bytes(_ n: Int) -> [UInt8] { (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) } }
        let rows: [[SQLValue]] = [
            [.int(1), .binary(bytes(20_000)), .string(String(repeating: "é€😀a", count: 900)), .string(String(repeating: "abc", count: 3000)),
             .string("small"), .binary(bytes(9000)), .string(String(repeating: "ñx", count: 700))],
            [.null, .null, .null, .null, .null, .null, .null],
            [.int(3), .binary([]), .string(""), .string(""), .string(""), .binary([1]), .string("z")],
            [.int(4), .binary(bytes(1)), .null, .string("q"), .null, .null, .string("")],
        ]
        for chunking in [nil, ServerTokens.PLPChunking(sizes: [1, 7, 4096]), ServerTokens.PLPChunking(sizes: [3000], unknownLength: true)] {
            let stream = try Self.partsStream(rows, chunking: Array(repeating: chunking, count: Self.partColumns.count))
            // The buffered decoder's rows.
            var whole = TokenStreamDecoder(version: .v7_4)
            whole.append(stream)
            var expected: [[SQLValue]] = []
            while let t = try whole.next() {
                if case .row(let r) = t { expected.append(r.values) }
                if case .nbcRow(let r) = t { expected.append(r.values) }
            }
            XCTAssertEqual(expected.count, rows.count)
            let splits: [(String, [Int])] = [
                ("whole", []),
                ("byte by byte", Array(1 ..< stream.count)),
                ("random", (0 ..< 40).map { _ in Int.random(in: 1 ..< stream.count, using: &rng) }.sorted()),
            ]
            for (name, cuts) in splits {
                let got = try Self.rowsFromParts(stream, cuts: cuts)
                XCTAssertEqual(got.rows, expected, "\(name), \(String(describing: chunking))")
                XCTAssertEqual(got.tokens.map(\.type), [.colMetadata, .done], name)
            }
        }
    }

    /// A value streamed in parts is not held whole, so it is not bounded by maximumValueSize,
    /// and no chunk is longer than what arrived at once.
    func testAStreamedValuePassesMaximumValueSizeInChunksNoLargerThanWhatArrived() throws {
        let big = [UInt8]((0 ..< 200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let row: [SQLValue] = [.int(9), .binary(big), .null, .null, .null, .null, .null]
        let stream = try Self.partsStream([row], chunking: Array(repeating: .init(sizes: [8000]), count: 7))
        let cuts = Array(stride(from: 4096, to: stream.count, by: 4096))
        let got = try Self.rowsFromParts(stream, cuts: cuts, maximumValueSize: 1000)
        XCTAssertEqual(got.rows, [row])
        XCTAssertLessThanOrEqual(got.largestChunk, 4096)
        // Buffered, the same value passes the cap: an error.
        var d = TokenStreamDecoder(version: .v7_4, options: .init(maximumValueSize: 1000))
        d.append(stream)
        XCTAssertThrowsError(try { while try d.next() != nil {} }())
    }
}

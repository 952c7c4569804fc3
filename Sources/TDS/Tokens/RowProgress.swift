// The resumable value reader behind ROW, NBCROW, ALTROW and RETURNVALUE ([MS-TDS] 2.2.7.20,
// 2.2.7.15, 2.2.7.2, 2.2.5.2.3 PLP). It keeps the column index, the values decoded so far and
// the PLP chunks received so far, so a row that arrives over many packets is read once, in
// linear time, and nothing is allocated by a declared length before its bytes are present.

/// A PLP value being assembled from its chunks ([MS-TDS] 2.2.5.2.3), or, when streamed, a PLP
/// or text/ntext/image value being handed out in pieces.
struct PLPProgress: Sendable {
    /// The chunk bytes so far (empty when streamed).
    var bytes: [UInt8]
    /// PLP_BODY total length (0xFFFFFFFFFFFFFFFE = UNKNOWN_PLP_LEN); a text/ntext/image value's length.
    var declared: UInt64
    /// Bytes still to come in the current chunk; 0 = a chunk length comes next.
    var chunkRemaining: Int
    /// Absolute offset of the ULONGLONG total length (for errors).
    var start: Int
    /// Bytes of the value received so far.
    var received: Int = 0
    /// A text/ntext/image value (one run of `declared` bytes, no chunks).
    var legacy = false

    // The rules every reader of PLP values applies (the token decoder's ``RowProgress``, the row
    // block's ``WireRowProgress``), so both give the same errors at the same offsets. `bounded`:
    // the value is held whole, so ``RowProgress/maximumValueSize`` applies (not when streamed).

    /// Checks the ULONGLONG total length `total` read at `start` (not PLP_NULL).
    /// - Throws: `.invalidLength` above 2^31-1 (but UNKNOWN_PLP_LEN), `.limitExceeded` above
    ///   `maximumValueSize` when `bounded`.
    static func checkTotal(_ total: UInt64, at start: Int, maximumValueSize: Int, bounded: Bool) throws(TDSDecodingError) {
        guard total != RowProgress.unknownPLPLength else { return }
        if total > RowProgress.maximumPLPLength {
            throw TDSDecodingError(.invalidLength, offset: start,
                "PLP total length \(total) is above the 2^31-1 bytes SQL Server sends")
        }
        if bounded, total > UInt64(maximumValueSize) {
            throw TDSDecodingError(.limitExceeded, offset: start,
                "a value of \(total) bytes is longer than the maximum value size of \(maximumValueSize) bytes")
        }
    }

    /// Checks the next chunk length `length` (not the terminator) read at `chunkOffset`.
    /// - Throws: `.invalidLength` past the declared total; `.limitExceeded` when `bounded` and the
    ///   value would pass `maximumValueSize` (UNKNOWN_PLP_LEN: bounded as its chunks arrive, before
    ///   a chunk is copied); `.invalidLength` past 2^31-1 bytes (UNKNOWN_PLP_LEN, as a declared total).
    func checkChunk(_ length: UInt32, at chunkOffset: Int, maximumValueSize: Int, bounded: Bool) throws(TDSDecodingError) {
        if declared != RowProgress.unknownPLPLength, UInt64(received) + UInt64(length) > declared {
            throw TDSDecodingError(.invalidLength, offset: chunkOffset,
                "PLP chunk of \(length) byte(s) exceeds the total length \(declared)")
        }
        if bounded, UInt64(received) + UInt64(length) > UInt64(maximumValueSize) {
            throw TDSDecodingError(.limitExceeded, offset: chunkOffset,
                "a value of unknown length passed the maximum value size of \(maximumValueSize) bytes")
        }
        if UInt64(received) + UInt64(length) > RowProgress.maximumPLPLength {
            throw TDSDecodingError(.invalidLength, offset: chunkOffset,
                "a PLP value of unknown length passed the 2^31-1 bytes SQL Server sends")
        }
    }

    /// Checks the terminator read at `chunkOffset`.
    /// - Throws: `.invalidLength` when the chunks do not hold the declared total.
    func checkEnd(at chunkOffset: Int) throws(TDSDecodingError) {
        if declared != RowProgress.unknownPLPLength && UInt64(received) != declared {
            throw TDSDecodingError(.invalidLength, offset: chunkOffset,
                "PLP total length \(declared) but chunks hold \(received) byte(s)")
        }
    }

    /// The prefix of a text/ntext/image value at `reader` ([MS-TDS] 2.2.5.2.2: TextPtr length BYTE,
    /// 0 = NULL; TextPtr; Timestamp, 8 bytes; LONG length): nil when not all there; else the
    /// reader past it, and the length with its offset (nil for NULL).
    /// - Throws: `.limitExceeded` as soon as the length is above `maximumValueSize` (the bytes
    ///   are never waited for).
    static func legacyPrefix(_ reader: ByteReader, maximumValueSize: Int) throws(TDSDecodingError) -> (reader: ByteReader, length: UInt32, at: Int)?? {
        var p = reader
        guard let n = try? p.readUInt8() else { return nil }
        if n == 0 { return .some(nil) }
        guard (try? p.skip(Int(n) + 8)) != nil else { return nil }
        let at = p.absoluteOffset
        guard let len = try? p.readUInt32LE() else { return nil }
        if Int(len) > maximumValueSize {
            throw TDSDecodingError(.limitExceeded, offset: at,
                "a value of \(len) bytes is longer than the maximum value size of \(maximumValueSize) bytes")
        }
        return (p, len, at)
    }
}

struct RowProgress: Sendable {
    /// ROW, NBCROW, ALTROW or RETURNVALUE (for error context).
    var name: String
    /// Absolute offset of the token byte.
    var tokenStart: Int
    /// NBCROW's null bitmap (empty for other tokens).
    var nullBitmap: [UInt8]
    /// Index of the next column to read.
    var index: Int
    var values: [SQLValue]
    var plp: PLPProgress?
    /// The largest value accepted, in bytes (a PLP value, or a text/ntext/image value).
    var maximumValueSize: Int
    /// Streamed (``TokenStreamDecoder/streamsLargeValues``): every value goes to `parts` instead
    /// of `values`, a PLP or text/ntext/image value as the chunks of its bytes as they arrive
    /// (never held whole, so not bounded by `maximumValueSize`).
    var streams = false
    /// Streamed: what was read, in order, not yet taken by the decoder.
    var parts: [TokenStreamDecoder.RowPart] = []
    /// Streamed: bytes of the current large value read but not yet in `parts`.
    var chunk: [UInt8] = []

    init(name: String, tokenStart: Int, nullBitmap: [UInt8] = [], values: [SQLValue] = [],
         maximumValueSize: Int = RowProgress.defaultMaximumValueSize) {
        self.name = name
        self.tokenStart = tokenStart
        self.nullBitmap = nullBitmap
        self.index = 0
        self.values = values
        self.plp = nil
        self.maximumValueSize = maximumValueSize
    }

    /// The capacity a PLP value's buffer of `count` bytes grows to for `adding` more: never more
    /// than 8x what has actually arrived (so a hostile total length allocates nothing), and,
    /// when the total is declared, a step of a geometric series that ends exactly at the total
    /// (total/8^k): the last growth copies at most an eighth of the value, so a value buffered
    /// whole peaks at about 1.125x its size (a 100 MB value: 12.5 MB, then 100 MB) instead of
    /// the 1.32x of plain 8x steps (32 MB, then 100 MB). Unknown length: 8x steps.
    static func grownCapacity(count: Int, adding n: Int, declared: UInt64) -> Int {
        let needed = count + n
        // At most 8x what arrived (plus 1 MiB: the steps of the series below land within it).
        let bound = max(count * 8, needed, 65_536)
        guard declared != RowProgress.unknownPLPLength else { return bound }
        let total = max(Int(clamping: declared), needed)
        var target = total
        while target / 8 >= needed && target / 8 >= 65_536 { target /= 8 }
        return target <= count * 8 + (1 << 20) ? max(target, needed) : bound
    }

    static let unknownPLPLength: UInt64 = 0xFFFF_FFFF_FFFF_FFFE
    static let plpNull: UInt64 = 0xFFFF_FFFF_FFFF_FFFF
    /// The largest PLP total length SQL Server sends (2^31 - 1: varchar(max), nvarchar(max),
    /// varbinary(max) and xml hold at most 2 GB); a declared length above it is malformed.
    static let maximumPLPLength: UInt64 = 0x7FFF_FFFF
    /// The default cap on one value: 1 GiB.
    static let defaultMaximumValueSize = 1 << 30

    @inline(__always)
    func isNullByBitmap(_ i: Int) -> Bool {
        guard !nullBitmap.isEmpty else { return false }
        let byte = i >> 3
        guard byte < nullBitmap.count else { return false }
        return nullBitmap[byte] & (1 << UInt8(i & 7)) != 0
    }

    /// Reads as many values as `reader` holds. Returns true when all `types` are read; false when
    /// more bytes are needed (everything consumed so far is kept, `reader` is left at the first
    /// unconsumed byte). Throws for malformed data, with `context` = the token name.
    mutating func advance(_ reader: inout ByteReader, types: [TypeInfo]) throws(TDSDecodingError) -> Bool {
        // Through a buffer pointer, `types[index]` is borrowed in place: TypeInfo is a large
        // struct and copying it per value would dominate the row hot path.
        try types.withUnsafeBufferPointer { (types) throws(TDSDecodingError) -> Bool in
            try advance(&reader, columnTypes: types)
        }
    }

    /// Adds a whole value of column `index`.
    @inline(__always)
    private mutating func emit(_ value: SQLValue) {
        if streams { parts.append(.value(column: index, value)) } else { values.append(value) }
    }

    /// Streamed: moves the bytes of the current large value read so far into `parts`.
    mutating func flushChunk() {
        guard streams, !chunk.isEmpty else { return }
        parts.append(.chunk(column: index, chunk))
        chunk = []
    }

    private mutating func advance(_ reader: inout ByteReader, columnTypes types: UnsafeBufferPointer<TypeInfo>) throws(TDSDecodingError) -> Bool {
        defer { flushChunk() }
        while index < types.count {
            if isNullByBitmap(index) {
                emit(.null)
                index += 1
                continue
            }
            if types[index].isPLP {
                if try !advancePLP(&reader, types[index]) { return false }
                continue
            }
            let start = reader.offset
            if types[index].type.isLegacyLOB {
                if streams {
                    if try !advanceStreamedLegacyLOB(&reader) { return false }
                    continue
                }
                let whole = try hasWholeLegacyLOB(reader, maximumValueSize: maximumValueSize)
                if !whole { return false }
            }
            do throws(TDSDecodingError) {
                let value = try types[index].decodeValue(from: &reader)
                emit(value)
                index += 1
            } catch {
                if error.code == .truncated {
                    reader.offset = start
                    return false
                }
                throw columnError(error)
            }
        }
        return true
    }

    func columnError(_ error: TDSDecodingError) -> TDSDecodingError {
        RowProgress.columnError(error, token: name, index: index)
    }

    /// `error` of the value of column `index` (0-based) in token `name`.
    static func columnError(_ error: TDSDecodingError, token name: String, index: Int) -> TDSDecodingError {
        var e = error.inToken(name)
        e.detail = "column \(index + 1): " + e.detail
        return e
    }

    /// text/ntext/image: TextPtr length BYTE (0 = NULL), TextPtr, Timestamp (8 bytes), then a
    /// 4-byte length and the data. Checks that the whole value is present without decoding it.
    /// - Throws: `.limitExceeded` as soon as the declared length is above `maximumValueSize`
    ///   (the bytes are never waited for).
    func hasWholeLegacyLOB(_ reader: ByteReader, maximumValueSize: Int) throws(TDSDecodingError) -> Bool {
        let prefix: (reader: ByteReader, length: UInt32, at: Int)??
        do throws(TDSDecodingError) { prefix = try PLPProgress.legacyPrefix(reader, maximumValueSize: maximumValueSize) } catch {
            throw columnError(error)
        }
        guard let prefix else { return false }
        guard let (p, len, _) = prefix else { return true }   // NULL
        // A length of 0xFFFFFFFF is NULL to the value decoder (and to the row scan and the
        // streamed read): nothing to wait for (reached only under a cap of 4 GiB or more).
        if len == UInt32.max { return true }
        return p.remaining >= Int(len)
    }

    /// Streamed: reads the text/ntext/image value of column `index` — TextPtr length BYTE (0 =
    /// NULL), TextPtr, Timestamp (8 bytes), a 4-byte length, then that many bytes handed out as
    /// they arrive. The prefix is waited for whole (at most 268 bytes).
    mutating func advanceStreamedLegacyLOB(_ reader: inout ByteReader) throws(TDSDecodingError) -> Bool {
        if plp == nil {
            var p = reader
            guard let n = try? p.readUInt8() else { return false }
            if n == 0 {
                reader = p
                emit(.null)
                index += 1
                return true
            }
            guard (try? p.skip(Int(n) + 8)) != nil else { return false }
            let at = p.absoluteOffset
            guard let length = try? p.readUInt32LE() else { return false }
            reader = p
            if length == 0xFFFF_FFFF {
                emit(.null)
                index += 1
                return true
            }
            guard length <= UInt32(Int32.max) else {
                throw columnError(TDSDecodingError(.invalidLength, offset: at, "length \(length)"))
            }
            plp = PLPProgress(bytes: [], declared: UInt64(length), chunkRemaining: Int(length), start: at, legacy: true)
        }
        guard var p = plp else { return false }
        plp = nil
        let n = min(p.chunkRemaining, reader.remaining)
        if n > 0 {
            chunk.append(contentsOf: reader.bytes[reader.offset ..< reader.offset + n])
            reader.offset += n
            p.chunkRemaining -= n
            p.received += n
        }
        if p.chunkRemaining > 0 {
            plp = p
            return false
        }
        flushChunk()
        parts.append(.largeValueEnd(column: index))
        index += 1
        return true
    }

    /// Reads the PLP value of column `index`: ULONGLONG total length (0xFFFFFFFFFFFFFFFF = NULL),
    /// then chunks (ULONG length + data) until a zero-length terminator. Streamed, the chunks'
    /// bytes go to `parts` as they arrive instead of being assembled.
    mutating func advancePLP(_ reader: inout ByteReader, _ info: TypeInfo) throws(TDSDecodingError) -> Bool {
        var p: PLPProgress
        if let existing = plp {
            p = existing
            plp = nil
        } else {
            guard reader.remaining >= 8 else { return false }
            let start = reader.absoluteOffset
            let total = try reader.readUInt64LE()
            if total == RowProgress.plpNull {
                do throws(TDSDecodingError) { emit(try info.decodePLPValue(nil)) } catch {
                    var e = error; e.offset = start; throw columnError(e)
                }
                index += 1
                return true
            }
            do throws(TDSDecodingError) { try PLPProgress.checkTotal(total, at: start, maximumValueSize: maximumValueSize, bounded: !streams) } catch {
                throw columnError(error)
            }
            p = PLPProgress(bytes: [], declared: total, chunkRemaining: 0, start: start)
        }
        while true {
            if p.chunkRemaining == 0 {
                guard reader.remaining >= 4 else { plp = p; return false }
                let chunkOffset = reader.absoluteOffset
                let length = try reader.readUInt32LE()
                if length == 0 {
                    do throws(TDSDecodingError) { try p.checkEnd(at: chunkOffset) } catch { throw columnError(error) }
                    if streams {
                        flushChunk()
                        parts.append(.largeValueEnd(column: index))
                    } else {
                        do throws(TDSDecodingError) { values.append(try info.decodePLPValue(p.bytes)) } catch {
                            var e = error; e.offset = p.start; throw columnError(e)
                        }
                    }
                    index += 1
                    return true
                }
                do throws(TDSDecodingError) {
                    try p.checkChunk(length, at: chunkOffset, maximumValueSize: maximumValueSize, bounded: !streams)
                } catch {
                    throw columnError(error)
                }
                p.chunkRemaining = Int(length)
            }
            let n = min(p.chunkRemaining, reader.remaining)
            if n == 0 { plp = p; return false }
            if streams {
                chunk.append(contentsOf: reader.bytes[reader.offset ..< reader.offset + n])
            } else {
                if p.bytes.capacity - p.bytes.count < n {
                    p.bytes.reserveCapacity(RowProgress.grownCapacity(count: p.bytes.count, adding: n, declared: p.declared))
                }
                p.bytes.append(contentsOf: reader.bytes[reader.offset ..< reader.offset + n])
            }
            reader.offset += n
            p.received += n
            p.chunkRemaining -= n
        }
    }
}

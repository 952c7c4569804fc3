// The resumable value reader behind ROW, NBCROW, ALTROW and RETURNVALUE ([MS-TDS] 2.2.7.20,
// 2.2.7.15, 2.2.7.2, 2.2.5.2.3 PLP). It keeps the column index, the values decoded so far and
// the PLP chunks received so far, so a row that arrives over many packets is read once, in
// linear time, and nothing is allocated by a declared length before its bytes are present.

/// A PLP value being assembled from its chunks ([MS-TDS] 2.2.5.2.3).
struct PLPProgress: Sendable {
    /// The chunk bytes so far.
    var bytes: [UInt8]
    /// PLP_BODY total length (0xFFFFFFFFFFFFFFFE = UNKNOWN_PLP_LEN).
    var declared: UInt64
    /// Bytes still to come in the current chunk; 0 = a chunk length comes next.
    var chunkRemaining: Int
    /// Absolute offset of the ULONGLONG total length (for errors).
    var start: Int
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

    private mutating func advance(_ reader: inout ByteReader, columnTypes types: UnsafeBufferPointer<TypeInfo>) throws(TDSDecodingError) -> Bool {
        while index < types.count {
            if isNullByBitmap(index) {
                values.append(.null)
                index += 1
                continue
            }
            if types[index].isPLP {
                if try !advancePLP(&reader, types[index]) { return false }
                continue
            }
            let start = reader.offset
            if types[index].type.isLegacyLOB {
                let whole = try hasWholeLegacyLOB(reader, maximumValueSize: maximumValueSize)
                if !whole { return false }
            }
            do throws(TDSDecodingError) {
                let value = try types[index].decodeValue(from: &reader)
                values.append(value)
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
        var e = error.inToken(name)
        e.detail = "column \(index + 1): " + e.detail
        return e
    }

    /// text/ntext/image: TextPtr length BYTE (0 = NULL), TextPtr, Timestamp (8 bytes), then a
    /// 4-byte length and the data. Checks that the whole value is present without decoding it.
    /// - Throws: `.limitExceeded` as soon as the declared length is above `maximumValueSize`
    ///   (the bytes are never waited for).
    func hasWholeLegacyLOB(_ reader: ByteReader, maximumValueSize: Int) throws(TDSDecodingError) -> Bool {
        var p = reader
        guard let n = try? p.readUInt8() else { return false }
        if n == 0 { return true }
        guard (try? p.skip(Int(n) + 8)) != nil else { return false }
        let at = p.absoluteOffset
        guard let len = try? p.readUInt32LE() else { return false }
        if Int(len) > maximumValueSize {
            throw columnError(TDSDecodingError(.limitExceeded, offset: at,
                "a value of \(len) bytes is longer than the maximum value size of \(maximumValueSize) bytes"))
        }
        return p.remaining >= Int(len)
    }

    /// Reads the PLP value of column `index`: ULONGLONG total length (0xFFFFFFFFFFFFFFFF = NULL),
    /// then chunks (ULONG length + data) until a zero-length terminator.
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
                do throws(TDSDecodingError) { values.append(try info.decodePLPValue(nil)) } catch {
                    var e = error; e.offset = start; throw columnError(e)
                }
                index += 1
                return true
            }
            if total != RowProgress.unknownPLPLength {
                if total > RowProgress.maximumPLPLength {
                    throw columnError(TDSDecodingError(.invalidLength, offset: start,
                        "PLP total length \(total) is above the 2^31-1 bytes SQL Server sends"))
                }
                if total > UInt64(maximumValueSize) {
                    throw columnError(TDSDecodingError(.limitExceeded, offset: start,
                        "a value of \(total) bytes is longer than the maximum value size of \(maximumValueSize) bytes"))
                }
            }
            p = PLPProgress(bytes: [], declared: total, chunkRemaining: 0, start: start)
        }
        while true {
            if p.chunkRemaining == 0 {
                guard reader.remaining >= 4 else { plp = p; return false }
                let chunkOffset = reader.absoluteOffset
                let length = try reader.readUInt32LE()
                if length == 0 {
                    if p.declared != RowProgress.unknownPLPLength && UInt64(p.bytes.count) != p.declared {
                        throw columnError(TDSDecodingError(.invalidLength, offset: chunkOffset,
                            "PLP total length \(p.declared) but chunks hold \(p.bytes.count) byte(s)"))
                    }
                    do throws(TDSDecodingError) { values.append(try info.decodePLPValue(p.bytes)) } catch {
                        var e = error; e.offset = p.start; throw columnError(e)
                    }
                    index += 1
                    return true
                }
                if p.declared != RowProgress.unknownPLPLength,
                   UInt64(p.bytes.count) + UInt64(length) > p.declared {
                    throw columnError(TDSDecodingError(.invalidLength, offset: chunkOffset,
                        "PLP chunk of \(length) byte(s) exceeds the total length \(p.declared)"))
                }
                if UInt64(p.bytes.count) + UInt64(length) > UInt64(maximumValueSize) {
                    // UNKNOWN_PLP_LEN: bounded as its chunks arrive, before a chunk is copied.
                    throw columnError(TDSDecodingError(.limitExceeded, offset: chunkOffset,
                        "a value of unknown length passed the maximum value size of \(maximumValueSize) bytes"))
                }
                p.chunkRemaining = Int(length)
            }
            let n = min(p.chunkRemaining, reader.remaining)
            if n == 0 { plp = p; return false }
            if p.bytes.capacity - p.bytes.count < n {
                // Grow by 8x, never beyond 8x what has actually arrived nor beyond the declared
                // total: a 100 MB value is copied a few times instead of ~14 doublings (each
                // doubling touches fresh pages), and a hostile total length allocates nothing.
                var target = max(p.bytes.count * 8, p.bytes.count + n, 65_536)
                if p.declared != RowProgress.unknownPLPLength {
                    target = min(target, max(Int(clamping: p.declared), p.bytes.count + n))
                }
                p.bytes.reserveCapacity(target)
            }
            p.bytes.append(contentsOf: reader.bytes[reader.offset ..< reader.offset + n])
            reader.offset += n
            p.chunkRemaining -= n
        }
    }
}

// PLP values ([MS-TDS] 2.2.5.2.3) and text/ntext/image values (2.2.5.2.2) being read: their
// progress and the rules every row reader applies to them (WireRowProgress: a row into a block,
// as a token, or in parts).

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

    static let unknownPLPLength: UInt64 = 0xFFFF_FFFF_FFFF_FFFE
    static let plpNull: UInt64 = 0xFFFF_FFFF_FFFF_FFFF
    /// The largest PLP total length SQL Server sends (2^31 - 1: varchar(max), nvarchar(max),
    /// varbinary(max) and xml hold at most 2 GB); a declared length above it is malformed.
    static let maximumPLPLength: UInt64 = 0x7FFF_FFFF

    /// The capacity a PLP value's buffer of `count` bytes grows to for `adding` more: never more
    /// than ``growthFactor`` times what has actually arrived (so a hostile total length allocates
    /// nothing), and, when the total is declared, a step of a geometric series that ends exactly
    /// at the total (total/64^k): the last growth copies at most a 64th of the value, so a value
    /// buffered whole peaks at about 1.016x its size and its earlier buffers add that much to
    /// the pages touched (a 100 MB value: 1.5 MB, then 100 MB; with 8x steps it was 12.5 MB,
    /// 3,500 more page faults and 14 MB more copied, issue 43). Unknown length: 64x steps.
    static func grownCapacity(count: Int, adding n: Int, declared: UInt64) -> Int {
        let needed = count + n
        // At most 64x what arrived (plus 1 MiB: the steps of the series below land within it).
        let bound = max(count &* growthFactor, needed, 65_536)
        guard declared != PLPProgress.unknownPLPLength else { return bound }
        let total = max(Int(clamping: declared), needed)
        var target = total
        while target / growthFactor >= needed && target / growthFactor >= 65_536 { target /= growthFactor }
        return target <= count &* growthFactor + (1 << 20) ? max(target, needed) : bound
    }

    /// The most a PLP value's buffer grows past what arrived (see ``grownCapacity(count:adding:declared:)``).
    static let growthFactor = 64

    // The rules of a PLP value, for every way a row is read (into a block, as a token, in parts:
    // ``WireRowProgress``), so that each gives the same errors at the same offsets. `bounded`: the
    // value is held whole, so ``TokenStreamDecoder/Options/maximumValueSize`` applies (not when streamed).

    /// Checks the ULONGLONG total length `total` read at `start` (not PLP_NULL).
    /// - Throws: `.invalidLength` above 2^31-1 (but UNKNOWN_PLP_LEN), `.limitExceeded` above
    ///   `maximumValueSize` when `bounded`.
    static func checkTotal(_ total: UInt64, at start: Int, maximumValueSize: Int, bounded: Bool) throws(TDSDecodingError) {
        guard total != PLPProgress.unknownPLPLength else { return }
        if total > PLPProgress.maximumPLPLength {
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
        if declared != PLPProgress.unknownPLPLength, UInt64(received) + UInt64(length) > declared {
            throw TDSDecodingError(.invalidLength, offset: chunkOffset,
                "PLP chunk of \(length) byte(s) exceeds the total length \(declared)")
        }
        if bounded, UInt64(received) + UInt64(length) > UInt64(maximumValueSize) {
            throw TDSDecodingError(.limitExceeded, offset: chunkOffset,
                "a value of unknown length passed the maximum value size of \(maximumValueSize) bytes")
        }
        if UInt64(received) + UInt64(length) > PLPProgress.maximumPLPLength {
            throw TDSDecodingError(.invalidLength, offset: chunkOffset,
                "a PLP value of unknown length passed the 2^31-1 bytes SQL Server sends")
        }
    }

    /// Checks the terminator read at `chunkOffset`.
    /// - Throws: `.invalidLength` when the chunks do not hold the declared total.
    func checkEnd(at chunkOffset: Int) throws(TDSDecodingError) {
        if declared != PLPProgress.unknownPLPLength && UInt64(received) != declared {
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

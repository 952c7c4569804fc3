// The one reader of row values ([MS-TDS] 2.2.7.20 ROW, 2.2.7.15 NBCROW, 2.2.7.2 ALTROW, and the
// value of 2.2.7.19 RETURNVALUE): the scan state of a row. TokenStreamDecoder uses it for a row
// its run of whole rows (appendBufferedRows(to:limit:byteLimit:)) cannot take in one pass (a
// large value: PLP, 2.2.5.2.3, text/ntext/image; a partial row longer than wireRowWaitLimit; a
// malformed one), for a row read as a token (next()), and, streamed, for a row read in parts
// (nextPart()). It assembles the row as a WireRowBlock holds it, value after value, consuming the
// decoder's buffer as each value (and each piece of a large value, staged in its own array) is
// read: a row over many packets is read once, in linear time; a large value that fits the row
// (binary of a known length under 64 KiB, code page 1252 text, json) is appended to the row's
// bytes chunk by chunk as it arrives, and a longer binary value is held once (its staged array
// moves into the block). Streamed, a large value's pieces are handed out as
// they arrive instead of being assembled, and every other value is handed out as soon as it is
// there (read by its family's codec).

import Foundation

/// A row being assembled into ``WireRowBlock`` form (see the file's header).
///
/// Every bounded value is checked by the scan's rule (``WireColumn/scannedSize(_:_:at:end:)``, then
/// the full decoder for what it declines, as the run does); every large value by the rules of
/// ``PLPProgress`` and, once whole, by its family's decoder (UTF-16 by the transcoder that keeps
/// it as UTF-8). So a row gives the same values and the same error (code, offset, text) whether
/// it is read into a block, as a token or in parts.
struct WireRowProgress: Sendable {
    /// ROW, NBCROW, ALTROW or RETURNVALUE.
    let type: TokenType
    /// Absolute offset of the token byte.
    let tokenStart: Int
    /// NBCROW's null bitmap (empty for the others).
    let bitmap: [UInt8]
    /// The row's columns: how each value is decoded and scanned (one per value).
    let scan: [WireColumn]
    /// ALTROW: the ALTMETADATA Id.
    var altID: UInt16 = 0
    /// RETURNVALUE: everything before the value.
    var returnValue: ReturnValue.Header?
    /// Read in parts (``TokenStreamDecoder/nextPart()``): each value is handed out as a part as
    /// soon as it is read, a large value as the pieces of its bytes as they arrive (never held
    /// whole, so not bounded by ``maximumValueSize``).
    let streams: Bool
    /// Streamed: the parts read and not yet taken (the decoder lends its queue's storage while
    /// the row is advanced, see ``TokenStreamDecoder/nextPart()``).
    var parts: [TokenStreamDecoder.RowPart] = []
    /// The next column to read.
    private(set) var index = 0
    /// The row's values so far, as a block holds them.
    private(set) var bytes: [UInt8] = []
    /// Per value so far, its offset in `bytes` (``WireRowBlock/nullOffset`` for a bitmap NULL).
    private(set) var offsets: [UInt32] = []
    /// The large value being read: its chunk progress and its bytes so far (staged in its own
    /// array, grown by what arrives). For text/ntext/image, `start` is the absolute offset of the data.
    private var large: PLPProgress?
    /// The large value being read in place (``keepsInPlace(_:_:declared:)``): where its header is
    /// in `bytes`, its bytes appended after it as they arrive; -1 when it is staged in `large`.
    private var largeAt = -1
    /// Large binary values kept apart (``WireColumn/LargeForm/separate``), in order, and where
    /// their headers are in `bytes` (the block rebases their indexes).
    private(set) var separate: [WireRowBlock.SeparateValue] = []
    private(set) var separateAt: [Int] = []
    /// A large binary value (varbinary(max), image) that is not read in place is assembled as
    /// `Data` instead of staged in an array (``TokenStreamDecoder/assemblesLargeBinaryAsData``):
    /// kept apart as that `Data` (64 KiB or more), a typed read of `Data` takes it with no copy.
    var assemblesData = false
    /// The large binary value being assembled as `Data` (``assemblesData``): its bytes so far,
    /// and the capacity it was made with (`Data(capacity:)`: appends up to it do not reallocate).
    private var stagedData: Data?
    private var stagedCapacity = 0
    /// The largest large value accepted (``TokenStreamDecoder/Options/maximumValueSize``).
    let maximumValueSize: Int

    init(type: TokenType, tokenStart: Int, bitmap: [UInt8], columns: [WireColumn],
         maximumValueSize: Int, streams: Bool = false) {
        self.type = type
        self.tokenStart = tokenStart
        self.bitmap = bitmap
        self.scan = columns
        self.maximumValueSize = maximumValueSize
        self.streams = streams
    }

    /// The row's column count.
    var columnCount: Int { scan.count }

    /// The values of the whole row token at `reader` (after its token byte and its prefix: NBCROW's
    /// `bitmap`, ALTROW's Id, RETURNVALUE's header), one per `types`: nil when the input ends
    /// inside it (`reader` is then unchanged); else `reader` is left after it. For the decoders
    /// of one whole token (``Row/decode(from:columns:)``, …); ``TokenStreamDecoder`` reads rows
    /// as they arrive instead.
    /// - Throws: what reading the row in a ``TokenStreamDecoder`` throws (large values bounded
    ///   by ``TokenStreamDecoder/Options/defaultMaximumValueSize``).
    static func values(of type: TokenType, tokenStart: Int, bitmap: [UInt8] = [], types: [TypeInfo],
                       from reader: inout ByteReader) throws(TDSDecodingError) -> [SQLValue]? {
        var row = WireRowProgress(type: type, tokenStart: tokenStart, bitmap: bitmap, columns: types.map(WireColumn.init(_:)),
                                  maximumValueSize: TokenStreamDecoder.Options.defaultMaximumValueSize)
        var r = reader
        guard try row.advance(&r) else { return nil }
        reader = r
        return row.values()
    }

    /// The whole row's values (the row is complete; its bytes are moved out).
    mutating func values() -> [SQLValue] {
        var block = WireRowBlock(columns: scan, result: 0)
        block.appendRow(take())
        return block.values(row: 0)
    }

    /// The bytes the row holds so far (for the block's byte limit).
    var byteCount: Int { bytes.count }
    /// Every column is read.
    private(set) var isComplete = false

    /// Moves the row's bytes, offsets and separate values out (the row is complete).
    mutating func take() -> WireRowBlock.AssembledRow {
        defer { bytes = []; offsets = []; separate = []; separateAt = [] }
        return WireRowBlock.AssembledRow(bytes: bytes, offsets: offsets, separate: separate, separateAt: separateAt)
    }

    /// The most bytes a row may take in a block, whose offsets are 4 bytes (with room for a
    /// bounded value past it): a row of several values near ``maximumValueSize`` can pass it.
    static let rowByteLimit = Int(UInt32.max) - (1 << 20)

    /// Throws `.limitExceeded` (at the token) when `n` more bytes would pass ``rowByteLimit``.
    private func checkRowSize(adding n: Int) throws(TDSDecodingError) {
        guard bytes.count > WireRowProgress.rowByteLimit - n else { return }
        throw columnError(TDSDecodingError(.limitExceeded, offset: tokenStart,
            "the row's values pass the \(WireRowProgress.rowByteLimit) bytes a row block addresses"))
    }

    private func columnError(_ error: TDSDecodingError) -> TDSDecodingError {
        WireRowProgress.columnError(error, token: type.name, index: index)
    }

    /// `error` of the value of column `index` (0-based) in token `name`.
    static func columnError(_ error: TDSDecodingError, token name: String, index: Int) -> TDSDecodingError {
        var e = error.inToken(name)
        e.detail = "column \(index + 1): " + e.detail
        return e
    }

    /// Reads what `reader` holds of the row. True when every column is read; false when more
    /// bytes are needed (`reader` is left after what was consumed: every whole value and the
    /// part of a large value that arrived). Streamed, what was read is in ``parts``.
    /// - Throws: the row's error (see the type's doc).
    mutating func advance(_ reader: inout ByteReader) throws(TDSDecodingError) -> Bool {
        let done = try scan.withUnsafeBufferPointer { (columns) throws(TDSDecodingError) -> Bool in
            try advance(&reader, columns: columns)
        }
        if streams { flushChunk() }
        return done
    }

    private mutating func advance(_ reader: inout ByteReader, columns: UnsafeBufferPointer<WireColumn>) throws(TDSDecodingError) -> Bool {
        while index < columns.count {
            try checkRowSize(adding: 0)
            if !bitmap.isEmpty, bitmap[index >> 3] & (1 << UInt8(index & 7)) != 0 {
                if streams { parts.append(.value(column: index, .null)) } else { offsets.append(WireRowBlock.nullOffset) }
                index += 1
                continue
            }
            let done: Bool
            let column = columns.baseAddress.unsafelyUnwrapped + index
            if column.pointee.kind == .large {
                done = try advanceLarge(&reader, column.pointee)
            } else if streams {
                done = try streamBounded(&reader, column)
            } else {
                done = try appendBounded(&reader, column)
            }
            if !done { return false }
            index += 1
        }
        try checkRowSize(adding: 0)
        isComplete = true
        return true
    }

    /// Streamed: the bounded value at `reader` as a `.value` part once it is all there (false:
    /// not yet), read by its family's codec: a value the scan's rule takes (fixed size, BYTELEN,
    /// binary and code page 1252 text, the common case of dates, times and decimals) checked by it
    /// and read as a row block reads it (``WireRowBlock/decode(_:at:)``), any other by the full
    /// decoder (``WireColumn/decodeValue(from:)``, what a block reads a value the scan leaves to
    /// it with; the same value and the same error).
    private mutating func streamBounded(_ reader: inout ByteReader, _ column: UnsafePointer<WireColumn>) throws(TDSDecodingError) -> Bool {
        let c = column.pointee
        if c.kind == .fixed || c.kind == .byteLength || c.kind == .ushortBytes || c.kind == .decode {
            let at = reader.offset, end = reader.endIndex
            // nil: not all there; a nil value: the full decoder's (not scanned, or not the common case).
            let read: (value: SQLValue?, size: Int)? = reader.bytes.withUnsafeBufferPointer { p in
                guard let base = p.baseAddress else { return c.kind == .fixed && c.size == 0 ? (.null, 0) : nil }
                let size = WireColumn.scannedSize(column, base, at: at, end: end)
                if size == WireColumn.needsBytes { return nil }
                if size < 0 { return (nil, 0) }
                let raw = UnsafeRawPointer(base + at)
                return (c.kind == .decode ? WireRowBlock.decodeScanned(c, at: raw) : WireRowBlock.decode(c, at: raw), size)
            }
            guard let read else { return false }
            if let v = read.value {
                reader.offset = at + read.size
                parts.append(.value(column: index, v))
                return true
            }
        }
        do throws(TDSDecodingError) {
            parts.append(.value(column: index, try column.pointee.decodeValue(from: &reader)))
            return true
        } catch {
            if error.code == .truncated { return false }
            throw columnError(error)
        }
    }

    /// Streamed: the bytes of the current large value read and not yet in `parts`.
    private var chunk: [UInt8] = []

    /// Streamed: moves the bytes of the current large value read so far into `parts`.
    private mutating func flushChunk() {
        guard !chunk.isEmpty else { return }
        parts.append(.chunk(column: index, chunk))
        chunk = []
    }

    /// Appends the bounded value at `reader` once it is all there (false: not yet).
    private mutating func appendBounded(_ reader: inout ByteReader, _ column: UnsafePointer<WireColumn>) throws(TDSDecodingError) -> Bool {
        let at = reader.offset
        let c = column.pointee
        var size = reader.bytes.withUnsafeBufferPointer { p in
            // No storage (nothing buffered): only a value of no bytes (NULLTYPE) is there.
            guard let base = p.baseAddress else { return c.kind == .fixed && c.size == 0 ? 0 : WireColumn.needsBytes }
            return WireColumn.scannedSize(column, base, at: at, end: reader.endIndex)
        }
        if size == WireColumn.needsBytes { return false }
        if size == WireColumn.notScanned {
            // The full decoder: the value, or its error (the token decoder's).
            var r = reader
            do throws(TDSDecodingError) {
                _ = try column.pointee.decodeValue(from: &r)
            } catch {
                if error.code == .truncated { return false }
                throw columnError(error)
            }
            size = r.offset - at
        }
        let valueAt = bytes.count
        if c.kind == .utf16, size > 2 {
            try appendUTF16(reader, at: at, byteCount: size - 2, column)
        } else if c.kind == .utf16 && size == 2 && reader.bytes[at] == 0xFF && reader.bytes[at + 1] == 0xFF {
            bytes.append(0xFF); bytes.append(0xFF)
        } else if c.kind == .utf16 {
            bytes.append(0); bytes.append(0x80)   // empty: 0 bytes, all ASCII
        } else {
            bytes.append(contentsOf: reader.bytes[at ..< at + size])
        }
        offsets.append(UInt32(truncatingIfNeeded: valueAt))
        reader.offset = at + size
        return true
    }

    /// Appends the nchar/nvarchar value of `n` UTF-16 bytes at `at` (its length at `at`) as UTF-8
    /// (``WireColumn/Kind/utf16``: the long form past 32,766 bytes).
    private mutating func appendUTF16(_ reader: ByteReader, at: Int, byteCount n: Int, _ column: UnsafePointer<WireColumn>) throws(TDSDecodingError) {
        let valueAt = bytes.count
        if n & 1 != 0 { try throwValueError(reader, at: at, column.pointee) }
        let room = n / 2 * 3 + TextCodec.transcodeSlack
        bytes.append(contentsOf: repeatElement(0, count: 6 + room))
        let u = reader.bytes.withUnsafeBytes { src in
            bytes.withUnsafeMutableBufferPointer { out in
                TextCodec.transcodeUTF16LE(src.baseAddress.unsafelyUnwrapped + at + 2, byteCount: n,
                                           into: out.baseAddress.unsafelyUnwrapped + valueAt + 6)
            }
        }
        guard u >= 0 else {
            bytes.removeSubrange(valueAt...)
            try throwValueError(reader, at: at, column.pointee)
        }
        if u < CharacterCodec.utf16LongForm {
            let header = UInt16(truncatingIfNeeded: u) | (u == n >> 1 ? 0x8000 : 0)
            bytes[valueAt] = UInt8(truncatingIfNeeded: header)
            bytes[valueAt + 1] = UInt8(truncatingIfNeeded: header >> 8)
            bytes.removeSubrange((valueAt + 2) ..< (valueAt + 6))
            bytes.removeSubrange((valueAt + 2 + u)...)
        } else {
            let count = UInt32(truncatingIfNeeded: u)
            bytes[valueAt] = 0xFF; bytes[valueAt + 1] = 0x7F   // the long form
            for k in 0 ..< 4 { bytes[valueAt + 2 + k] = UInt8(truncatingIfNeeded: count >> (8 * UInt32(k))) }
            bytes.removeSubrange((valueAt + 6 + u)...)
        }
    }

    /// Throws the full decoder's error for the bounded value at `at` (one the scan found invalid).
    private func throwValueError(_ reader: ByteReader, at: Int, _ c: WireColumn) throws(TDSDecodingError) -> Never {
        var r = reader
        r.offset = at
        do throws(TDSDecodingError) { _ = try c.decodeValue(from: &r) } catch { throw columnError(error) }
        throw columnError(TDSDecodingError(.invalidEncoding, offset: reader.baseOffset + at, context: c.type.name, "invalid UTF-16"))   // not reached
    }

    /// Appends a `.large` value's header (count `n`, form `form`) at `bytes`' end.
    private mutating func appendLargeHeader(_ n: UInt32, _ form: WireColumn.LargeForm) {
        withUnsafeBytes(of: n.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(form.rawValue)
    }

    /// Appends a NULL `.large` value (streamed: a `.value` part).
    private mutating func appendLargeNull() {
        if streams {
            parts.append(.value(column: index, .null))
            return
        }
        offsets.append(UInt32(truncatingIfNeeded: bytes.count))
        appendLargeHeader(WireColumn.largeNull, .raw)
    }

    /// The smallest binary value kept apart (``WireColumn/LargeForm/separate``): its staged
    /// array is moved into the block, and read back as the same array (no copy either time).
    static let separateSize = 64 << 10

    /// Whether a large value of column `c` whose length is `declared` (PLP's total, a
    /// text/image value's length) is read in place, its chunks appended to the row's bytes as
    /// they arrive instead of staged in an array of their own and copied in when whole: a binary
    /// or UDT value of a known length under ``separateSize`` (a longer one is kept apart), text in
    /// a single-byte code page read as it is (``CharacterCodec/keepsSingleByteText(_:)``: nothing
    /// to check), json (its UTF-8 checked in place once whole). UTF-16 text is transcoded from its
    /// staged bytes; text in another code page is checked by the full decoder on them.
    static func keepsInPlace(_ c: WireColumn, declared: UInt64) -> Bool {
        switch c.family {
        case .binary, .udt: return declared != PLPProgress.unknownPLPLength && declared < UInt64(separateSize)
        case .character: return CharacterCodec.keepsSingleByteText(c.collation)
        case .json: return true
        default: return false
        }
    }

    /// Starts the large value `p` (not streamed): in place (its header written now, its count
    /// when it is whole) when ``keepsInPlace(_:_:declared:)``, else staged.
    private mutating func beginLarge(_ c: WireColumn, _ p: PLPProgress) throws(TDSDecodingError) {
        large = p
        guard !streams else { return }
        guard WireRowProgress.keepsInPlace(c, declared: p.declared) else {
            if assemblesData && c.family == .binary {
                stagedCapacity = PLPProgress.grownCapacity(count: 0, adding: 1, declared: p.declared)
                stagedData = Data(capacity: stagedCapacity)
            }
            return
        }
        try checkRowSize(adding: WireColumn.largeHeaderSize)
        largeAt = bytes.count
        appendLargeHeader(0, .raw)
    }

    /// Reads the large value at `reader` (or goes on with the one begun): true when it is whole.
    private mutating func advanceLarge(_ reader: inout ByteReader, _ c: WireColumn) throws(TDSDecodingError) -> Bool {
        if large == nil {
            if c.type.lengthKind == .longLength {   // text, ntext, image: TextPtr, Timestamp, LONG length
                let prefix: (reader: ByteReader, length: UInt32, at: Int)??
                do throws(TDSDecodingError) { prefix = try PLPProgress.legacyPrefix(reader, maximumValueSize: streams ? Int.max : maximumValueSize) } catch {
                    throw columnError(error)
                }
                guard let prefix else { return false }
                guard let (p, length, at) = prefix else {
                    reader.offset += 1   // NULL: a TextPtr length of 0
                    appendLargeNull()
                    return true
                }
                if length == 0xFFFF_FFFF {
                    // NULL as the value decoder reads it (only when maximumValueSize allows the length).
                    reader = p
                    appendLargeNull()
                    return true
                }
                guard length <= UInt32(Int32.max) else {
                    throw columnError(TDSDecodingError(.invalidLength, offset: at, context: c.type.name, "length \(length)"))
                }
                reader = p
                try beginLarge(c, PLPProgress(bytes: [], declared: UInt64(length), chunkRemaining: Int(length), start: p.absoluteOffset, legacy: true))
            } else {
                guard reader.remaining >= 8 else { return false }
                let start = reader.absoluteOffset
                let total = (try? reader.readUInt64LE()) ?? PLPProgress.plpNull
                if total == PLPProgress.plpNull {
                    appendLargeNull()
                    return true
                }
                do throws(TDSDecodingError) { try PLPProgress.checkTotal(total, at: start, maximumValueSize: maximumValueSize, bounded: !streams) } catch {
                    throw columnError(error)
                }
                try beginLarge(c, PLPProgress(bytes: [], declared: total, chunkRemaining: 0, start: start))
            }
        }
        guard var p = large else { return false }
        large = nil
        while true {
            if p.chunkRemaining == 0 {
                if p.legacy { break }
                guard reader.remaining >= 4 else { large = p; return false }
                let chunkOffset = reader.absoluteOffset
                let length = (try? reader.readUInt32LE()) ?? 0
                if length == 0 {
                    do throws(TDSDecodingError) { try p.checkEnd(at: chunkOffset) } catch { throw columnError(error) }
                    break
                }
                do throws(TDSDecodingError) {
                    try p.checkChunk(length, at: chunkOffset, maximumValueSize: maximumValueSize, bounded: !streams)
                } catch {
                    throw columnError(error)
                }
                p.chunkRemaining = Int(length)
            }
            let n = min(p.chunkRemaining, reader.remaining)
            if n == 0 { large = p; return false }
            if streams {
                // One allocation per piece handed out: room for what the buffer holds of the value
                // (bytes already in memory; all of it when its length is known), instead of growing
                // piece by piece over the PLP chunks of a packet.
                if chunk.isEmpty {
                    let left = p.declared != PLPProgress.unknownPLPLength ? Int(clamping: p.declared) - p.received : p.chunkRemaining
                    chunk.reserveCapacity(Swift.min(reader.remaining, Swift.max(left, n)))
                }
                chunk.append(contentsOf: reader.bytes[reader.offset ..< reader.offset + n])
            } else if largeAt >= 0 {
                // In place: the chunk's bytes appended once, after the value's header.
                try checkRowSize(adding: n)
                if bytes.capacity - bytes.count < n {
                    // Grown by what arrived, never by a declared length alone (see grownCapacity).
                    bytes.reserveCapacity(largeAt + WireColumn.largeHeaderSize
                                          + PLPProgress.grownCapacity(count: p.received, adding: n, declared: p.declared))
                }
                bytes.append(contentsOf: reader.bytes[reader.offset ..< reader.offset + n])
            } else if var data = stagedData {
                stagedData = nil   // uniquely referenced while it grows
                if stagedCapacity - data.count < n {
                    // Grown as the array is (see grownCapacity), by what arrived, never by a declared
                    // length alone. In place: Foundation grows a `Data` with `realloc`, which moves
                    // a large buffer's pages rather than copying them into fresh ones (a 100 MB
                    // value: 3,500 page faults and 14 MB of copies fewer than a new `Data` per step).
                    stagedCapacity = PLPProgress.grownCapacity(count: data.count, adding: n, declared: p.declared)
                    data.reserveCapacity(stagedCapacity)
                }
                let at = reader.offset
                reader.bytes.withUnsafeBufferPointer { data.append($0.baseAddress.unsafelyUnwrapped + at, count: n) }
                stagedData = data
            } else {
                if p.bytes.capacity - p.bytes.count < n {
                    // Grown by what arrived, never by a declared length alone (see grownCapacity).
                    p.bytes.reserveCapacity(PLPProgress.grownCapacity(count: p.bytes.count, adding: n, declared: p.declared))
                }
                p.bytes.append(contentsOf: reader.bytes[reader.offset ..< reader.offset + n])
            }
            reader.offset += n
            p.received += n
            p.chunkRemaining -= n
        }
        if streams {
            // Handed out as it arrived: its end (its bytes are not checked as a whole).
            flushChunk()
            parts.append(.largeValueEnd(column: index))
            return true
        }
        if largeAt >= 0 {
            try finishInPlace(c, p)
        } else {
            try finishLarge(c, &p)
        }
        return true
    }

    /// Completes the large value read in place (``keepsInPlace(_:_:declared:)``): json's UTF-8
    /// checked where it is (an invalid value by the full decoder, for its error), its count
    /// written into its header.
    private mutating func finishInPlace(_ c: WireColumn, _ p: PLPProgress) throws(TDSDecodingError) {
        let valueAt = largeAt
        largeAt = -1
        let dataAt = valueAt + WireColumn.largeHeaderSize
        if c.family == .json, String(validating: bytes[dataAt...], as: UTF8.self) == nil {
            var staged = p
            staged.bytes = Array(bytes[dataAt...])
            bytes.removeSubrange(valueAt...)
            try checkByDecoder(c, staged)
            throw columnError(TDSDecodingError(.invalidEncoding, offset: p.start, context: "JSON", "json value is not UTF-8"))   // not reached
        }
        let n = UInt32(truncatingIfNeeded: bytes.count - dataAt)
        for k in 0 ..< 4 { bytes[valueAt + k] = UInt8(truncatingIfNeeded: n >> (8 * UInt32(k))) }
        offsets.append(UInt32(truncatingIfNeeded: valueAt))
    }

    /// Checks the whole large value (staged in `p.bytes`) by its family's rule and appends it:
    /// UTF-16 text transcoded to UTF-8 into the row, a large binary value moved apart, any other
    /// value copied after its header.
    private mutating func finishLarge(_ c: WireColumn, _ p: inout PLPProgress) throws(TDSDecodingError) {
        let valueAt = bytes.count
        if let data = stagedData {
            stagedData = nil
            if data.count >= WireRowProgress.separateSize {
                appendSeparate(.data(data))
                return
            }
            p.bytes = [UInt8](data)   // under 64 KiB: into the row's bytes, below
        }
        let count = p.bytes.count
        switch c.family {
        case .binary, .udt:
            if count >= WireRowProgress.separateSize {
                appendSeparate(.array(p.bytes))
                p.bytes = []
                return
            }
        case .nationalCharacter, .xml:
            if count & 1 == 0 {
                try checkRowSize(adding: WireColumn.largeHeaderSize + count / 2 * 3)
                appendLargeHeader(0, .raw)
                let room = count / 2 * 3 + TextCodec.transcodeSlack
                bytes.reserveCapacity(bytes.count + room)
                var u = -1
                let dataAt = bytes.count
                bytes.append(contentsOf: repeatElement(0, count: room))
                p.bytes.withUnsafeBytes { src in
                    bytes.withUnsafeMutableBufferPointer { out in
                        u = TextCodec.transcodeUTF16LE(src.baseAddress ?? UnsafeRawPointer(out.baseAddress.unsafelyUnwrapped), byteCount: count,
                                                       into: out.baseAddress.unsafelyUnwrapped + dataAt)
                    }
                }
                if u >= 0 {
                    bytes.removeSubrange((dataAt + u)...)
                    let n = UInt32(truncatingIfNeeded: u)
                    for k in 0 ..< 4 { bytes[valueAt + k] = UInt8(truncatingIfNeeded: n >> (8 * UInt32(k))) }
                    bytes[valueAt + 4] = (u == count / 2 ? WireColumn.LargeForm.utf8ASCII : .utf8).rawValue
                    offsets.append(UInt32(truncatingIfNeeded: valueAt))
                    return
                }
                bytes.removeSubrange(valueAt...)
            }
            try checkByDecoder(c, p)
            throw columnError(TDSDecodingError(.invalidEncoding, offset: p.start, "invalid UTF-16"))   // not reached
        case .character:
            if !CharacterCodec.keepsSingleByteText(c.collation) { try checkByDecoder(c, p) }
        default:
            // json (UTF-8), or a type whose decoder refuses it.
            try checkByDecoder(c, p)
        }
        try checkRowSize(adding: WireColumn.largeHeaderSize + count)
        offsets.append(UInt32(truncatingIfNeeded: valueAt))
        appendLargeHeader(UInt32(truncatingIfNeeded: count), .raw)
        bytes.append(contentsOf: p.bytes)
    }

    /// Keeps the large binary value `value` apart (``WireColumn/LargeForm/separate``): its header
    /// in the row's bytes, its index in the count field.
    private mutating func appendSeparate(_ value: WireRowBlock.SeparateValue) {
        let valueAt = bytes.count
        offsets.append(UInt32(truncatingIfNeeded: valueAt))
        separateAt.append(valueAt)
        appendLargeHeader(UInt32(truncatingIfNeeded: separate.count), .separate)
        separate.append(value)
    }

    /// Decodes the whole large value (staged in `p.bytes`) as the token decoder does (the value is
    /// dropped: the block reads it again when asked), throwing its error.
    private func checkByDecoder(_ c: WireColumn, _ p: PLPProgress) throws(TDSDecodingError) {
        if p.legacy {
            // As WireColumn.decodeValue reads it in place: offsets from the data's own.
            var r = ByteReader(p.bytes, start: 0, baseOffset: p.start)
            do throws(TDSDecodingError) {
                _ = try c.decodeData(from: &r, count: p.bytes.count)
            } catch {
                throw columnError(error.withContext(c.type.name))
            }
        } else {
            do throws(TDSDecodingError) {
                _ = try c.decodePLPValue(p.bytes)
            } catch {
                var e = error
                e.offset = p.start
                throw columnError(e)
            }
        }
    }
}

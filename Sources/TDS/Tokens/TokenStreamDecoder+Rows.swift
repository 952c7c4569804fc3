// The row readers of ``TokenStreamDecoder``: rows handed out in parts (``TokenStreamDecoder/nextPart()``),
// rows appended to a block as their wire bytes (``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``
// with its run scan and UTF-16 transcoder), and the row token read by its scan state
// (``WireRowProgress``) for ``TokenStreamDecoder/next()``. Every value is read by that one scan state
// or by the run scan's rules, which check what it checks. Which reader takes the rows is fixed
// for a response (``TokenStreamDecoder/RowMode``): a row is never begun by one and finished by another.

extension TokenStreamDecoder {
    // MARK: - The row mode

    /// How the ROW and NBCROW tokens of a response are read ([MS-TDS] 2.2.7.20, 2.2.7.15).
    public enum RowMode: Sendable, Hashable {
        /// Each row whole: as its token from ``next()``, or into a block from
        /// ``appendBufferedRows(to:limit:byteLimit:)`` (the two share the row being read: a row
        /// begun by one is finished by the other). ``nextPart()`` gives every token whole.
        case whole
        /// Each row in parts, by ``nextPart()``: its values one at a time, a large value in pieces.
        /// ``next()`` passes rows over; ``appendBufferedRows(to:limit:byteLimit:)`` appends none.
        case parts
    }

    /// Fixes how the rows of the response that follows are read (the default is
    /// ``RowMode/whole``); call it before the response's first bytes are read. The mode cannot
    /// change inside a row: while a ROW or NBCROW is being read, the call is ignored.
    public mutating func startResponse(rows mode: RowMode) {
        if wireRowState != .row { rowMode = mode }
    }

    // MARK: - Rows in parts, large values in pieces

    /// One piece of a row read by ``nextPart()``, in the order of the stream.
    public enum RowPart: Hashable, Sendable {
        /// Any token but a ROW or NBCROW of the current result (in ``RowMode/whole``, every token).
        case token(Token)
        /// The whole value of `column` of the current row: every column but the large ones, and a
        /// large value that is NULL.
        case value(column: Int, SQLValue)
        /// The next bytes of the large value of `column` (PLP: varchar(max), nvarchar(max),
        /// varbinary(max), xml, UDT; or text, ntext, image), as they arrived: the PLP chunks'
        /// data concatenated (UTF-16LE for nvarchar(max), ntext and xml, the column's code page
        /// for varchar(max) and text, raw bytes for the others). Where the pieces are cut depends
        /// on how the bytes arrived; their concatenation does not.
        case chunk(column: Int, [UInt8])
        /// The large value of `column` is complete (after its chunks; an empty value has none).
        case largeValueEnd(column: Int)
        /// The current row is complete (after a part for each of its columns).
        case rowEnd
    }

    /// The next part of the stream: a token, or a piece of a ROW/NBCROW of the current result —
    /// its values one at a time as each is complete, a large value as the chunks of its bytes as
    /// they are appended (never held whole: such a value is not bounded by
    /// ``Options/maximumValueSize``; memory stays at what was appended and not yet taken), then
    /// `.rowEnd`. Nil when more bytes are needed. The parts of a row are the same however the
    /// input is split, but for where its chunks are cut. Throws as ``next()`` does. Every value is read by the one row reader
    /// (``WireRowProgress``, in its streamed mode), as ``next()`` and
    /// ``appendBufferedRows(to:limit:byteLimit:)`` read it. In ``RowMode/whole`` (see
    /// ``startResponse(rows:)``), every token comes whole, a row as `.token(.row)`/`.token(.nbcRow)`.
    public mutating func nextPart() throws(TDSDecodingError) -> RowPart? {
        guard rowMode == .parts else { return try nextToken().map(RowPart.token) }
        if let part = takeQueuedPart() { return part }
        if let failure { throw failure }
        do throws(TDSDecodingError) {
            if wireRowState == .row { return try advanceStreamedRow() }
            if wireRowState == .none, pendingTokens.isEmpty, readIndex < buffer.count, !wireColumns.isEmpty, buffer.count != waitingAtCount {
                let type = TokenType(rawValue: buffer[readIndex])
                if type == .row || type == .nbcRow {
                    let n = type == .nbcRow ? (wireColumns.count + 7) / 8 : 0
                    guard buffer.count - readIndex > n else { return nil }
                    let bitmap = Array(buffer[(readIndex + 1) ..< (readIndex + 1 + n)])
                    wireRow = WireRowProgress(type: type, tokenStart: offset, bitmap: bitmap, columns: wireColumns,
                                              maximumValueSize: options.maximumValueSize, streams: true)
                    wireRowState = .row
                    readIndex += 1 + n
                    waitingAtCount = -1
                    return try advanceStreamedRow()
                }
            }
        } catch {
            failure = error
            throw error
        }
        return try nextToken().map(RowPart.token)
    }

    /// Advances the row read in parts, queues what it read (and `.rowEnd` once it is whole) and
    /// returns the first part queued.
    private mutating func advanceStreamedRow() throws(TDSDecodingError) -> RowPart? {
        // The row writes its parts into the queue's storage (empty: every part was taken), lent
        // for the call: no array per row.
        swap(&queuedParts, &wireRow!.parts)
        let done = try advanceWireRow()   // on an error the row and its parts are dropped
        swap(&queuedParts, &wireRow!.parts)
        queuedPartIndex = 0
        if done {
            queuedParts.append(.rowEnd)
            wireRow = nil
            wireRowState = .none
        }
        return takeQueuedPart()
    }

    private mutating func takeQueuedPart() -> RowPart? {
        guard queuedPartIndex < queuedParts.count else {
            if !queuedParts.isEmpty {
                queuedParts.removeAll(keepingCapacity: true)
                queuedPartIndex = 0
            }
            return nil
        }
        var part = RowPart.rowEnd
        swap(&part, &queuedParts[queuedPartIndex])   // moved out: a chunk is not retained twice
        queuedPartIndex += 1
        return part
    }

    // MARK: - Rows as wire bytes

    /// An empty ``WireRowBlock`` for the rows of the current result (whatever its columns: large
    /// values are assembled into it); nil before the first COLMETADATA with columns.
    public func makeWireRowBlock() -> WireRowBlock? {
        guard !wireColumns.isEmpty else { return nil }
        return WireRowBlock(columns: wireColumns, result: resultNumber)
    }

    /// Gives a new `block` that will copy its rows (text, or too small to be lent: see
    /// ``prepareLend(_:)``) room from the recycler, when a released block left one of at least
    /// the room it asked (``WireRowBlock/reserveOnAppend(rows:bytesPerRow:)``) and at most twice
    /// it: pages already touched, not a fresh allocation per block (issue 43: strings streamed
    /// 125 MB of rows through 55,000-65,000 page faults, 3 µs each on this project's VM).
    package func provideRoom(_ block: inout WireRowBlock) {
        let wanted = block.wantedByteCount
        guard wanted >= RowBytesRecycler.smallest, block.bytes.capacity == 0, let recycler,
              rowsHaveText || !lendsRowBytes || wanted * 4 < lendBufferCapacity,
              let room = recycler.take(capacity: wanted, atMost: 2 &* wanted, opening: true) else { return }
        block.useStorage(room)
    }

    /// A row is being read by its scan state (a large value's chunks arriving): the next rows
    /// appended start with it, whose bytes move into an empty block (reserve none for it).
    package var isReadingRow: Bool { wireRowState != .none }

    /// Why ``appendBufferedRows(to:limit:byteLimit:)`` stopped.
    public enum RowRunEnd: Sendable, Equatable {
        /// `limit` rows or `byteLimit` bytes were appended.
        case limit
        /// The next token is not a ROW or NBCROW: read it with ``next()``.
        case otherToken
        /// The buffer ends (between rows or inside one): append the next packet, then call again.
        case needBytes
        /// Read the next token with ``next()``: a row that is malformed (the decoder is failed:
        /// `next()` throws its error, the one it gives for the same bytes, code and offset), an
        /// ALTROW or RETURNVALUE being read, or a row of another result than the block's; or the
        /// rows are read in parts (``RowMode/parts``). (A ROW or NBCROW begun by ``next()`` is
        /// finished into the block.)
        case incremental
    }

    /// The longest partial row waited for whole (rescanned as packets arrive) before it is read
    /// by its scan state instead (``WireRowProgress``: consumed value by value, never rescanned).
    static let wireRowWaitLimit = 64 << 10

    /// Appends consecutive ROW/NBCROW tokens ([MS-TDS] 2.2.7.20, 2.2.7.15) of the current result
    /// that are whole in the buffer to `block` as their wire bytes, each value checked as
    /// ``TypeInfo/decodeValue(from:)`` checks it (so that reading it later cannot fail), up to
    /// `limit` rows and `byteLimit` bytes in the block. Consumes what it appended. Returns the rows
    /// appended and why it stopped.
    ///
    /// A run of rows with no nchar/nvarchar column is found, then copied in one piece. With one,
    /// each such value is transcoded from UTF-16LE to UTF-8 into the block
    /// (``WireColumn/Kind/utf16``; the transcoder refuses what the value decoder refuses: an
    /// unpaired surrogate ends the run at its row, the rows before it kept), and
    /// the bytes between copied. The byte limit counts each such value at its worst case (3 bytes
    /// a UTF-16 unit), so the block's bytes stay below `byteLimit` plus one row's worst case.
    ///
    /// A row the run cannot take whole (a large value: PLP or text/ntext/image; a partial row
    /// longer than ``wireRowWaitLimit``; a value the run's rule declines) is read by its scan
    /// state (``WireRowProgress``): value by value as its bytes arrive, each consumed from the
    /// buffer once read (a large value's chunks too, assembled in the row), so a row over many
    /// packets is read once, in linear time; it is appended to the block when whole (into an
    /// empty block its bytes are moved, not copied). A malformed row ends the run `.incremental`
    /// with the decoder failed: ``next()`` throws the token decoder's error for it. Every large
    /// value is bounded as the token decoder bounds it (``Options/maximumValueSize``; a PLP total
    /// above 2^31-1 is `.invalidLength`).
    public mutating func appendBufferedRows(to block: inout WireRowBlock, limit: Int, byteLimit: Int) -> (rows: Int, end: RowRunEnd) {
        guard failure == nil, pendingTokens.isEmpty, !wireColumns.isEmpty, block.result == resultNumber,
              rowMode == .whole, wireRowState != .other else { return (0, .incremental) }
        var total = 0
        while true {
            if wireRowState == .none {
                let (rows, end) = scanRun(to: &block, limit: limit - total, byteLimit: byteLimit, lending: lendsRowBytes)
                total += rows
                guard end == .incremental else { return (total, end) }
                // A row the run cannot take whole: read by its scan state.
                guard total < limit, block.byteCount < byteLimit else { return (total, .limit) }
                let type = TokenType(rawValue: buffer[readIndex])
                let bitmapCount = type == .nbcRow ? (wireColumns.count + 7) >> 3 : 0
                guard buffer.count - readIndex > bitmapCount else { return (total, .needBytes) }
                let bitmap = type == .nbcRow ? Array(buffer[(readIndex + 1) ..< (readIndex + 1 + bitmapCount)]) : []
                wireRow = WireRowProgress(type: type, tokenStart: offset, bitmap: bitmap, columns: wireColumns,
                                          maximumValueSize: options.maximumValueSize)
                wireRow!.assemblesData = assemblesLargeBinaryAsData
                wireRowState = .row
                readIndex += 1 + bitmapCount
                waitingAtCount = -1
            }
            do throws(TDSDecodingError) {
                guard try advanceWireRow() else { return (total, .needBytes) }
            } catch {
                return (total, .incremental)   // next() throws it
            }
            // Whole: into the block, unless it would pass the 4 GiB its offsets address.
            guard var row = wireRow else { return (total, .incremental) }
            if !block.isEmpty, block.addressedByteCount + row.byteCount >= Int(UInt32.max) { return (total, .limit) }
            wireRow = nil
            wireRowState = .none
            if block.lentSerial != 0 { settle(&block) }   // the lent rows come before it
            block.appendRow(row.take())
            total += 1
            if total >= limit || block.byteCount >= byteLimit { return (total, .limit) }
        }
    }

    /// Advances the row being read by its scan state (``WireRowProgress``) over the buffer,
    /// consuming what it read: true when the row is whole (it stays in `wireRow` to be taken).
    /// - Throws: the row's error (the decoder is then failed).
    mutating func advanceWireRow() throws(TDSDecodingError) -> Bool {
        // A row already complete (kept for a block that had no room) reads nothing more and
        // returns true at once (waitingAtCount is -1 once a row completes).
        guard wireRowState != .none else { return false }
        if buffer.count == waitingAtCount { return false }
        var reader = ByteReader(buffer, start: readIndex, baseOffset: bufferBase)
        let done: Bool
        do throws(TDSDecodingError) {
            done = try wireRow!.advance(&reader)   // in place: the row's bytes stay uniquely referenced, the state is not copied
        } catch {
            wireRow = nil
            wireRowState = .none
            failure = error
            throw error
        }
        readIndex = reader.offset
        waitingAtCount = done ? -1 : buffer.count
        return done
    }

    /// The whole row that ``advanceWireRow()`` read, as its token (ROW, NBCROW, ALTROW, RETURNVALUE).
    mutating func takeWireRowToken() -> Token? {
        guard var row = wireRow else { return nil }
        wireRow = nil
        wireRowState = .none
        let values = row.values()
        switch row.type {
        case .nbcRow: return .nbcRow(NBCRow(values: values))
        case .altRow: return .altRow(AltRow(id: row.altID, values: values))
        case .returnValue: return row.returnValue.map { .returnValue($0.with(value: values.first ?? .null)) }
        default: return .row(Row(values: values))
        }
    }

    /// ``appendBufferedRows(to:limit:byteLimit:)``'s run of whole rows, in one pass: stops
    /// `.incremental` at a row it cannot take whole. `lending`: rows without text are lent to the
    /// block (see `lendsRowBytes`) rather than copied.
    private mutating func scanRun(to block: inout WireRowBlock, limit: Int, byteLimit: Int, lending: Bool) -> (rows: Int, end: RowRunEnd) {
        if readIndex >= buffer.count { return (0, .needBytes) }
        var scratch: [UInt32] = []
        swap(&scratch, &offsetScratch)
        if !scratch.isEmpty { scratch.removeAll(keepingCapacity: true) }
        var starts: [UInt32] = []
        swap(&starts, &rowStartScratch)
        if !starts.isEmpty { starts.removeAll(keepingCapacity: true) }
        var text: [UInt8] = []
        swap(&text, &textScratch)
        defer {
            swap(&scratch, &offsetScratch)
            swap(&starts, &rowStartScratch)
            // Kept for the next run unless a long run made it large.
            if text.count <= TokenStreamDecoder.textScratchLimit { swap(&text, &textScratch) }
        }
        let hasText = rowsHaveText
        // Without text the run's bytes go to the block as they are: lent (left in the buffer
        // until the block is settled) or copied. (First: a lend may move the buffer's bytes.)
        let lends = !hasText && lending && prepareLend(&block)
        /// The most the block's bytes can grow beyond the run's wire bytes: a UTF-16 unit (2
        /// bytes) becomes at most 3 bytes of UTF-8.
        var growth = 0
        let runStart = readIndex
        let count = wireColumns.count
        var rows = 0
        var end = RowRunEnd.limit
        var i = runStart
        var reader = ByteReader(buffer, start: runStart, baseOffset: bufferBase)
        let blockBytes = block.byteCount   // values kept apart count toward byteLimit
        buffer.withUnsafeBufferPointer { p in
            wireColumns.withUnsafeBufferPointer { cols in
                let n = p.count
                rowLoop: while rows < limit {
                    if blockBytes + (i - runStart) + growth >= byteLimit { end = .limit; break }
                    guard i < n else { end = .needBytes; break }
                    let t = p[i]
                    guard t == TokenType.row.rawValue || t == TokenType.nbcRow.rawValue else { end = .otherToken; break }
                    let first = scratch.count
                    let rowGrowth = growth
                    var j = i + 1
                    var bitmap = -1
                    var stop = RowRunEnd.limit   // .needBytes: incomplete; .incremental: malformed
                    columns: do {
                        if t == TokenType.nbcRow.rawValue {
                            let bn = (count + 7) >> 3
                            guard n - j >= bn else { stop = .needBytes; break columns }
                            bitmap = j
                            j += bn
                        }
                        for c in 0 ..< count {
                            if bitmap >= 0, p[bitmap + c >> 3] & (1 << UInt8(c & 7)) != 0 {
                                scratch.append(WireRowBlock.nullOffset)
                                continue
                            }
                            let at = j
                            let col = cols.baseAddress.unsafelyUnwrapped + c   // read in place: no copy of the column per value
                            if col.pointee.kind == .fixed {
                                // The commonest rule in the loop itself (scannedSize's `.fixed`).
                                guard n - j >= col.pointee.size else { stop = .needBytes; break columns }
                                j += col.pointee.size
                                scratch.append(UInt32(truncatingIfNeeded: at - runStart))
                                continue
                            }
                            let size = WireColumn.scannedSize(col, p.baseAddress.unsafelyUnwrapped, at: j, end: n)
                            if size >= 0 {
                                // Transcoded (and so checked) below, as it is copied.
                                if col.pointee.kind == .utf16 { growth &+= (size &- 2) >> 1 }
                                j += size
                            } else if size == WireColumn.needsBytes {
                                stop = .needBytes
                                break columns
                            } else if col.pointee.kind == .decode {
                                // The rest (malformed, rare) by the full decoder.
                                reader.offset = j
                                do throws(TDSDecodingError) {
                                    _ = try col.pointee.decodeValue(from: &reader)
                                    j = reader.offset
                                } catch {
                                    stop = error.code == .truncated ? .needBytes : .incremental
                                    break columns
                                }
                            } else {
                                stop = .incremental
                                break columns
                            }
                            scratch.append(UInt32(truncatingIfNeeded: at - runStart))
                        }
                    }
                    if stop != .limit {
                        scratch.removeSubrange(first...)
                        growth = rowGrowth
                        end = stop
                        if stop == .needBytes, n - i > TokenStreamDecoder.wireRowWaitLimit { end = .incremental }
                        break rowLoop
                    }
                    if hasText { starts.append(UInt32(truncatingIfNeeded: i - runStart)) }
                    rows += 1
                    i = j
                }
                if lends {
                    // Lent: the offsets are recorded below.
                } else if rows > 0, !hasText {
                    block.append(p, from: runStart, count: i - runStart, offsets: scratch[...])
                } else if rows > 0 {
                    // Transcoded into a scratch buffer, then appended in one piece: the
                    // block grows by what the UTF-8 takes, not by its worst case.
                    let room = i - runStart + growth + TextCodec.transcodeSlack
                    if text.count < room { text = [UInt8](repeating: 0, count: Swift.max(room, 2 * text.count)) }
                    let (kept, used) = text.withUnsafeMutableBufferPointer { out in
                        TokenStreamDecoder.transcodeRun(p, from: runStart, count: i - runStart, rows: rows, columns: cols,
                                                        offsets: &scratch, starts: starts, into: out.baseAddress.unsafelyUnwrapped)
                    }
                    if kept > 0 {
                        text.withUnsafeBufferPointer { block.append($0, from: 0, count: used, offsets: scratch[..<(kept * count)]) }
                    }
                    if kept < rows {
                        // A value that is not valid UTF-16: the rows before it are kept, it
                        // is read (and its error reported) incrementally.
                        rows = kept
                        i = runStart + Int(starts[kept])
                        end = .incremental
                    }
                }
            }
        }
        if rows > 0, lends, var lent = lend {   // (begun by prepareLend)
            lend = nil   // uniquely referenced while it grows
            let base = UInt32(truncatingIfNeeded: runStart)
            for o in scratch { lent.offsets.append(o == WireRowBlock.nullOffset ? o : o &+ base) }
            lent.high = i
            block.lentByteCount = lent.high &- lent.low
            lend = lent
        }
        if rows > 0 {
            readIndex = i
            waitingAtCount = -1
        }
        return (rows, end)
    }

    // MARK: - Rows lent to a block

    /// Moves the rows lent to `block` (see `lendsRowBytes`) into it:
    /// the block takes the buffer they are in as its bytes when they fill at least a quarter of it
    /// (no copy; the decoder goes on with a new buffer holding the bytes after them), else they
    /// are copied. Call it before the block is read or handed on. A block with no lent rows is
    /// left as it is; one whose lend ended (the decoder was replaced, or a later block began
    /// lending: the connection settles every block it hands on first) loses its lent rows.
    public mutating func settle(_ block: inout WireRowBlock) {
        guard block.lentSerial != 0 else { return }
        guard let current = lend, current.serial == block.lentSerial else {
            block.lentSerial = 0
            block.lentByteCount = 0
            return
        }
        lend = nil
        let used = current.high &- current.low
        if current.inDetached {
            var source: [UInt8] = []
            swap(&source, &detached)
            if used > 0, used * 4 >= source.capacity {
                source.removeSubrange(current.high...)
                block.adopt(source, offsets: current.offsets, from: current.low)
            } else {
                source.withUnsafeBufferPointer { block.appendLent($0, offsets: current.offsets, low: current.low, high: current.high) }
            }
        } else if used > 0, used * 4 >= buffer.capacity {
            // The bytes after the rows (a partial row, the next tokens) start the next buffer.
            var taken = newBuffer(holding: buffer.count &- readIndex)
            taken.append(contentsOf: buffer[readIndex...])
            swap(&taken, &buffer)
            bufferBase += readIndex
            readIndex = 0
            waitingAtCount = -1
            taken.removeSubrange(current.high...)
            block.adopt(taken, offsets: current.offsets, from: current.low)
        } else {
            buffer.withUnsafeBufferPointer { block.appendLent($0, offsets: current.offsets, low: current.low, high: current.high) }
        }
    }

    /// True when the next run's rows can be lent to `block`: its lend goes on in the buffer, or
    /// a new one begins (the block holds nothing yet). A block whose lent rows were set aside
    /// is settled first (its next rows are copied).
    private mutating func prepareLend(_ block: inout WireRowBlock) -> Bool {
        if block.lentSerial != 0 {
            if let lend, lend.serial == block.lentSerial, !lend.inDetached { return true }
            settle(&block)
            return false
        }
        // Only a block expected to fill a quarter of a lend's buffer (as the connection reserves
        // it: ``WireRowBlock/reserveOnAppend(rows:bytesPerRow:)``) is lent rows: a smaller one
        // would be copied at settle anyway (a short answer, a result's first block, narrow rows).
        guard block.canAdopt, block.wantedByteCount * 4 >= lendBufferCapacity else { return false }
        // An earlier block's lend not settled: that block was dropped.
        detached = []
        // The lend begins as near the buffer's start as compaction allows: the buffer then
        // holds little but the block's rows (with no lend, the bytes read are dropped only as
        // packets are appended, and every append comes while a block lends).
        dropReadBytes()
        // A buffer far larger than a lend's (it grew for a larger input) is replaced, its
        // unread bytes copied: a block takes the buffer it is lent.
        if buffer.capacity > 2 * Swift.max(lendBufferCapacity, buffer.count &- readIndex + (64 << 10)) {
            var smaller = newBuffer(holding: buffer.count &- readIndex)
            smaller.append(contentsOf: buffer[readIndex...])
            buffer = smaller
            bufferBase += readIndex
            readIndex = 0
            waitingAtCount = -1
        }
        lendSerial &+= 1
        var begun = Lend(serial: lendSerial, low: readIndex, high: readIndex)
        begun.offsets.reserveCapacity(block.wantedOffsetCount)
        lend = begun
        block.lentSerial = lendSerial
        block.lentByteCount = 0
        recycler?.open()
        return true
    }

    /// An empty buffer for rows to be lent from, with room for `bytes` and a lend
    /// (``lendBufferCapacity``): one given back by a released block, else a new one. Every such
    /// buffer has the same room, so that each one given back fits the next.
    private func newBuffer(holding bytes: Int) -> [UInt8] {
        let room = Swift.max(lendBufferCapacity, bytes + (64 << 10))
        var fresh = recycler?.take(capacity: room) ?? []
        if fresh.capacity < room { fresh.reserveCapacity(room) }
        return fresh
    }

    /// Sets the buffer aside with the lent rows in it (for ``settle(_:)``); the bytes after
    /// them start a new buffer.
    mutating func detachLend() {
        let rest = Array(buffer[readIndex...])
        detached = buffer
        buffer = rest
        bufferBase += readIndex
        readIndex = 0
        waitingAtCount = -1
        lend?.inDetached = true
    }

    /// The longest nchar/nvarchar value (its UTF-16 bytes) the row scan keeps as UTF-8 in the
    /// block: 3 bytes a unit must fit the 15-bit length of ``WireColumn/Kind/utf16``. SQL Server
    /// sends at most 8,000 (nvarchar(4000)); a longer value makes the scan stop
    /// (``RowRunEnd/incremental``).
    static let wireTextLimit = 21_844

    /// Writes `rows` scanned rows, the `count` bytes of `source` from `start`, at `out` as a
    /// block holds them: each nchar/nvarchar value transcoded to UTF-8 (``WireColumn/Kind/utf16``),
    /// every other byte copied. `offsets` are the values' offsets and `starts` the rows' (relative
    /// to `start`); each offset is replaced by its value's offset in `out`. Returns the rows
    /// written and the bytes: fewer rows than `rows` when a value is not valid UTF-16 (an unpaired
    /// surrogate), the first of the rows not written holding it (then the offsets from that row on
    /// are not meaningful).
    ///
    /// `out` must have room for `count + growth` bytes plus ``TextCodec/transcodeSlack``, `growth`
    /// being half the UTF-16 bytes of the run's nchar/nvarchar values: a unit (2 bytes) gives 1 to
    /// 3 bytes, a surrogate pair (4) 4, every other byte 1.
    static func transcodeRun(_ source: UnsafeBufferPointer<UInt8>, from start: Int, count: Int, rows: Int,
                             columns cols: UnsafeBufferPointer<WireColumn>, offsets: inout [UInt32], starts: [UInt32],
                             into out: UnsafeMutablePointer<UInt8>) -> (rows: Int, bytes: Int) {
        let width = cols.count
        let src = UnsafeRawPointer(source.baseAddress.unsafelyUnwrapped) + start
        var w = 0        // bytes written at `out`
        var cursor = 0   // the run's bytes before it are written
        let kept = offsets.withUnsafeMutableBufferPointer { offs -> Int in
            var v = 0
            for r in 0 ..< rows {
                let rowStart = Int(starts[r])
                let rowAt = w + (rowStart - cursor)   // where the row starts in `out`
                for c in 0 ..< width {
                    let o = offs[v]
                    if o == WireRowBlock.nullOffset {
                        v += 1
                        continue
                    }
                    let at = Int(o)
                    if cols[c].kind == .utf16 {
                        let len = Int(UInt16(littleEndian: src.loadUnaligned(fromByteOffset: at, as: UInt16.self)))
                        if len != 0xFFFF {
                            (out + w).update(from: (src + cursor).assumingMemoryBound(to: UInt8.self), count: at - cursor)
                            w += at - cursor
                            let u = TextCodec.transcodeUTF16LE(src + at + 2, byteCount: len, into: out + w + 2)
                            if u < 0 {
                                // Not valid: the row is left out whole (the bytes before it are
                                // written: this value is after the row's start).
                                w = rowAt
                                cursor = rowStart
                                return r
                            }
                            let header = UInt16(truncatingIfNeeded: u) | (u == len >> 1 ? 0x8000 : 0)
                            UnsafeMutableRawPointer(out + w).storeBytes(of: header.littleEndian, as: UInt16.self)
                            offs[v] = UInt32(truncatingIfNeeded: w)
                            v += 1
                            w += 2 + u
                            cursor = at + 2 + len
                            continue
                        }
                    }
                    offs[v] = UInt32(truncatingIfNeeded: w + (at - cursor))
                    v += 1
                }
            }
            return rows
        }
        let tail = kept == rows ? count : Int(starts[kept])
        if tail > cursor {
            (out + w).update(from: (src + cursor).assumingMemoryBound(to: UInt8.self), count: tail - cursor)
            w += tail - cursor
        }
        return (kept, w)
    }

    /// Starts a ROW, NBCROW or ALTROW once its fixed prefix (NBCROW bitmap, ALTROW Id) is here,
    /// read by its scan state (``WireRowProgress``); the token once it is whole.
    mutating func startRow(_ type: TokenType) throws(TDSDecodingError) -> Token? {
        let tokenStart = offset
        var prefix = 0
        var altID: UInt16 = 0
        var columns = wireColumns
        if type == .altRow {
            guard buffer.count - readIndex >= 3 else { return nil }
            altID = UInt16(buffer[readIndex + 1]) | UInt16(buffer[readIndex + 2]) << 8
            guard let meta = altMetadata[altID] else {
                throw TDSDecodingError(.unexpectedToken, offset: tokenStart + 1, context: type.name,
                                       "no ALTMETADATA with Id \(altID)")
            }
            columns = meta.columns.map { WireColumn($0.metadata.typeInfo) }
            prefix = 2
        } else {
            guard !wireColumns.isEmpty else {
                throw TDSDecodingError(.unexpectedToken, offset: tokenStart, context: type.name,
                                       "a row without a preceding COLMETADATA")
            }
            // A whole row: scanned as the run of rows scans it (one row), into a block reused
            // from row to row; any other row by its scan state below.
            var block = tokenBlock.take() ?? WireRowBlock(columns: wireColumns, result: resultNumber)   // moved out, not copied
            if block.result != resultNumber { block = WireRowBlock(columns: wireColumns, result: resultNumber) }
            block.removeAll()
            let (rows, _) = scanRun(to: &block, limit: 1, byteLimit: Int.max, lending: false)
            let values = rows == 1 ? block.values(row: 0) : nil
            if block.byteCount <= TokenStreamDecoder.textScratchLimit { tokenBlock = consume block }   // not kept large
            if let values { return type == .nbcRow ? .nbcRow(NBCRow(values: values)) : .row(Row(values: values)) }
            if type == .nbcRow {
                prefix = (wireColumns.count + 7) / 8
                guard buffer.count - readIndex > prefix else { return nil }
            }
        }
        let bitmap = type == .nbcRow ? Array(buffer[(readIndex + 1) ..< (readIndex + 1 + prefix)]) : []
        wireRow = WireRowProgress(type: type, tokenStart: tokenStart, bitmap: bitmap, columns: columns,
                                  maximumValueSize: options.maximumValueSize)
        wireRow!.altID = altID
        wireRowState = type == .altRow ? .other : .row
        readIndex += 1 + prefix
        waitingAtCount = -1
        return try advanceWireRow() ? takeWireRowToken() : nil
    }
}

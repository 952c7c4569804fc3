import Foundation

/// Rows of one result set kept as they came on the wire: the value bytes of consecutive ROW and
/// NBCROW tokens ([MS-TDS] 2.2.7.20, 2.2.7.15) in one buffer, with the offset of every value,
/// each value decoded only when it is read (``value(row:column:)``). Every row of a result takes
/// this shape, whatever its columns. Two exceptions to "as on the wire": nchar and nvarchar values
/// ([MS-TDS] 2.2.5.4.3 NCHARTYPE, NVARCHARTYPE: UTF-16LE on the wire) are kept as UTF-8,
/// transcoded once when the row is appended (see ``WireColumn/Kind/utf16``); and large values
/// (PLP, 2.2.5.2.3: varchar(max), nvarchar(max), varbinary(max), xml, UDT, json; text, ntext,
/// image) are kept assembled, a 5-byte header (byte count, NULL, UTF-8 or raw) then their bytes
/// contiguous, UTF-16 text as UTF-8 (see ``WireColumn/Kind/large``).
///
/// Filled by ``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``, which has already
/// checked every value the way the token decoder does (``TypeInfo/decodeValue(from:)``,
/// ``TypeInfo/decodePLPValue(_:)``: lengths, dates, decimals, UTF-16, UTF-8 of json): a row that
/// is not valid is never appended, the decoder reports its error. So reading a value cannot fail,
/// and it costs little until it is read: an nchar/nvarchar/nvarchar(max)/ntext/xml String is made
/// straight from its UTF-8 (a copy, no transcoding, no validation), a varchar transcoded from code
/// page 1252, a binary value copied, in the reader's own thread, when it is asked for.
///
/// Memory: the rows' wire bytes plus 4 bytes per value (a 4-byte `int` row takes 9 bytes, where a
/// decoded ``SQLValue`` takes 48), nchar/nvarchar text as UTF-8 with a 2-byte header: half its
/// UTF-16 bytes when it is ASCII, the same for Latin, Greek and Cyrillic, 1.5 times for CJK
/// (3 bytes a unit; an emoji's surrogate pair takes 4); a large value its bytes (UTF-8 for UTF-16
/// text) and 5. A sql_variant, a vector, and a char/varchar in a code page other than 1252 (a
/// UTF-8 collation included), is kept as its wire bytes and decoded by its codec when it is read
/// (``SQLVariantCodec``, ``SQLVector``, ``CharacterCodec``).
public struct WireRowBlock: Sendable {
    /// The offset of a value the NBCROW null bitmap marks NULL (no bytes).
    static let nullOffset = UInt32.max

    /// One per column, as the decoder read the COLMETADATA, with its scan rule (see ``WireColumn``).
    @usableFromInline let scan: [WireColumn]
    /// ``TokenStreamDecoder``'s result number when the block was made (rows of another result
    /// are never appended).
    let result: Int
    /// The values' bytes, each with its length prefix, row after row.
    @usableFromInline private(set) var bytes: [UInt8] = []
    /// Per value, row by row, its offset in `bytes` (``nullOffset`` for a bitmap NULL).
    @usableFromInline private(set) var offsets: [UInt32] = []
    /// Large binary values kept apart (``WireColumn/LargeForm/separate``), by index.
    private(set) var separate: [SeparateValue] = []
    /// Values per row (at least 1).
    public let columnCount: Int

    init(columns: [WireColumn], result: Int) {
        self.scan = columns
        self.result = result
        self.columnCount = Swift.max(columns.count, 1)
    }


    /// The number of rows (those lent by the decoder not counted until they are settled).
    public var rowCount: Int { offsets.count / columnCount }
    /// The bytes the rows hold (their values' wire bytes, nchar/nvarchar text as UTF-8, large
    /// values as assembled, those kept apart and those lent included).
    public var byteCount: Int { bytes.count &- unaddressedPrefix &+ separateByteCount &+ lentByteCount }
    /// The bytes of the values kept apart (``separate``).
    private(set) var separateByteCount = 0
    /// The bytes the offsets address (all but the values kept apart): below 4 GiB.
    var addressedByteCount: Int { bytes.count &+ lentByteCount }
    /// Bytes at the start of `bytes` that no row holds: the decoder's buffer before the first
    /// lent row, when the block took that buffer as its bytes (``adopt(_:offsets:from:)``).
    private var unaddressedPrefix = 0

    /// The lend of the decoder's whose rows are this block's (0: none): rows the decoder scanned
    /// and left in its own buffer (``TokenStreamDecoder/lendsRowBytes``) with their offsets, until
    /// ``TokenStreamDecoder/settle(_:)`` moves them in. They are not counted by ``rowCount`` and
    /// never read (a block read before it is settled has only its other rows). Only plain values
    /// here: every stored field is copied where a cell is read.
    var lentSerial: UInt64 = 0
    /// The bytes of the lent rows.
    var lentByteCount = 0
    /// True when no row is lent and none is settled: the block can take the decoder's buffer.
    var canAdopt: Bool { lentSerial == 0 && offsets.isEmpty && bytes.isEmpty && separate.isEmpty }
    /// The offsets the block asked room for (``reserveOnAppend(rows:bytesPerRow:)``): the lent rows' reserve.
    var wantedOffsetCount: Int { wantedOffsets }
    /// The bytes the block asked room for (``reserveOnAppend(rows:bytesPerRow:)``): a block
    /// expected to be small is not lent rows.
    var wantedByteCount: Int { wantedBytes }
    /// True when the block holds no row.
    public var isEmpty: Bool { offsets.isEmpty }

    /// The value of `column` in `row` (both 0-based; the caller keeps them in range).
    ///
    /// Inlined into the caller: a fixed-size value (int, bigint, smallint, tinyint, bit, real,
    /// float, money, smallmoney) is read in place; any other through ``value(column:offset:)``.
    @inlinable @inline(__always)
    public func value(row: Int, column: Int) -> SQLValue {
        let o = offsets[row &* columnCount &+ column]
        if o == UInt32.max { return .null }   // nullOffset
        let c = scan[column]
        if c.kind == .fixed {
            // Never nil: a value is present, so are its bytes.
            return bytes.withUnsafeBytes { raw in
                guard let base = raw.baseAddress else { return .null }
                return WireRowBlock.decodeFixed(c, at: base + Int(o))
            }
        }
        return value(column: column, offset: Int(o))
    }

    /// The value of `column` at `offset` of the bytes (not NULL by the bitmap).
    @usableFromInline
    func value(column: Int, offset: Int) -> SQLValue {
        bytes.withUnsafeBytes { raw in
            // Never nil: a row's bytes include its token byte.
            guard let base = raw.baseAddress else { return .null }
            return scan.withUnsafeBufferPointer { kinds in value(kinds.baseAddress.unsafelyUnwrapped + column, column: column, at: base, offset: offset, count: raw.count) }
        }
    }

    /// A value of fixed size (a `.fixed` column `c`) at `p`, as ``TypeInfo/decodeValue(from:)``
    /// reads it: by its family's codec, of the column's size.
    @inlinable @inline(__always)
    static func decodeFixed(_ c: WireColumn, at p: UnsafeRawPointer) -> SQLValue {
        switch c.family {
        case .integer: return IntegerCodec.value(at: p, count: c.size)
        case .float: return FloatCodec.value(at: p, count: c.size)
        case .money: return MoneyCodec.value(at: p, count: c.size)
        case .bit: return BitCodec.value(at: p)
        default: return .null   // NULLTYPE
        }
    }

    /// The value of `column` (scanned as `column`'s rules, read in place at `kind`) at `offset`
    /// of the `count` bytes at `base`.
    @inline(__always)
    func value(_ rules: UnsafePointer<WireColumn>, column: Int, at base: UnsafeRawPointer, offset: Int, count: Int) -> SQLValue {
        let kind = rules.pointee
        // Fixed-size values (no length prefix, never invalid) in the loop itself: no call.
        if kind.kind == .fixed { return WireRowBlock.decodeFixed(kind, at: base + offset) }
        if kind.kind == .decode {
            if let v = WireRowBlock.decodeScanned(kind, at: base + offset) { return v }
            return decodeChecked(column: column, offset: offset)
        }
        if kind.kind == .large { return largeValue(kind, column: column, at: base + offset, offset: offset) }
        if kind.kind == .vector { return vectorView(at: offset) }
        return WireRowBlock.decode(kind, at: base + offset)
    }

    /// A `.decode` value the scan accepted as the common case (``WireColumn/checkedSize(at:available:)``,
    /// by the same ``WireColumn/Check``), built by its family's codec without checking it again;
    /// nil for one the scan left to the full decoder (a decimal magnitude beyond its precision, a
    /// value of a scale over 7 or a precision over 38): read it with ``decodeChecked(column:offset:)``.
    @inline(__always)
    static func decodeScanned(_ c: WireColumn, at p: UnsafeRawPointer) -> SQLValue? {
        switch c.check {
        case .none: return p.load(as: UInt8.self) == 0 ? .null : nil
        // NULL read here; any other value by its codec through the full decoder (decodeChecked).
        case .variant: return SQLVariantCodec.isNull(at: p) ? .null : nil
        case .codePageUShortLength: return UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)) == 0xFFFF ? .null : nil
        case .codePageByteLength: return p.load(as: UInt8.self) == 0 ? .null : nil
        case .datetime: return DateTimeCodec.scannedValue(at: p, count: 8)   // FIXEDLEN: no length byte
        case .smallDateTime: return DateTimeCodec.scannedValue(at: p, count: 4)
        default: break
        }
        let n = Int(p.load(as: UInt8.self))
        if n == 0 { return .null }
        switch c.check {
        case .decimal:
            return DecimalCodec.scannedValue(at: p + 1, count: n, precision: c.precision, scale: c.scale, magnitudeLimit: c.magnitudeLimit)
        case .datetime2: return DateTime73Codec.scannedDateTime2Value(at: p + 1, timeLength: c.timeLength, scale: c.scale)
        case .date: return DateTime73Codec.scannedDate(at: p + 1)
        case .time: return DateTime73Codec.scannedTime(at: p + 1, timeLength: c.timeLength, scale: c.scale)
        case .datetimeOffset: return DateTime73Codec.scannedDateTimeOffsetValue(at: p + 1, timeLength: c.timeLength, scale: c.scale)
        case .datetimeN: return DateTimeCodec.scannedValue(at: p + 1, count: n)
        case .none, .datetime, .smallDateTime, .variant, .codePageByteLength, .codePageUShortLength: return nil
        }
    }

    /// A `.decode` value the scan left to the full decoder (a widened decimal magnitude, a
    /// sql_variant, which ``SQLVariantCodec/read(from:)`` reads in place, a char/varchar in a code
    /// page other than 1252, which ``CharacterCodec/readSingleByte(from:count:collation:)`` decodes
    /// with the column's collation), through it; checked when the row was appended with the same
    /// decoder, so it cannot fail.
    @inline(never)
    func decodeChecked(column: Int, offset: Int) -> SQLValue {
        var reader = ByteReader(bytes, start: offset)
        return (try? scan[column].decodeValue(from: &reader)) ?? .null
    }

    /// The values of rows `rows` (in range), row after row, in one array of their own: one
    /// allocation, each value decoded in place (what ``value(row:column:)`` gives).
    public func values(rows: Range<Int>) -> [SQLValue] {
        let width = scan.count   // = columnCount: a wire block has at least one column
        let total = rows.count &* width
        if total <= 0 { return [] }
        // reserveCapacity, specialized here: the array's storage type is not looked up per call
        // (Array(unsafeUninitializedCapacity:) does, in the standard library: ~600 instructions).
        var out: [SQLValue] = []
        out.reserveCapacity(total)
        bytes.withUnsafeBytes { raw in
            offsets.withUnsafeBufferPointer { offs in
                scan.withUnsafeBufferPointer { kinds in
                    var i = rows.lowerBound &* width
                    var n = 0
                    while n < total {
                        for c in 0 ..< width {
                            let at = offs[i]
                            if at == WireRowBlock.nullOffset {
                                out.append(.null)
                            } else {
                                out.append(value(kinds.baseAddress.unsafelyUnwrapped + c, column: c, at: raw.baseAddress.unsafelyUnwrapped, offset: Int(at), count: raw.count))
                            }
                            i &+= 1
                            n &+= 1
                        }
                    }
                }
            }
        }
        return out
    }

    /// Decodes a value the scan checked (so without checks): the common types read straight
    /// from the bytes, as ``TypeInfo/decodeValue(from:)`` reads them.
    @inline(__always)
    static func decode(_ c: WireColumn, at p: UnsafeRawPointer) -> SQLValue {
        @inline(__always) func u8(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        @inline(__always) func u16(_ i: Int) -> UInt16 { UInt16(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt16.self)) }
        switch c.kind {
        case .fixed:
            return decodeFixed(c, at: p)
        case .byteLength:
            let n = Int(u8(0))
            if n == 0 { return .null }
            switch c.family {
            case .integer: return IntegerCodec.value(at: p + 1, count: n)
            case .float: return FloatCodec.value(at: p + 1, count: n)
            case .money: return MoneyCodec.value(at: p + 1, count: n)
            case .bit: return BitCodec.value(at: p + 1)
            case .guid: return GUIDCodec.value(at: p + 1)
            case .character: return CharacterCodec.cp1252Value(at: p + 1, count: n)
            default: return BinaryCodec.value(at: p + 1, count: n)
            }
        case .utf16:
            let h = u16(0)
            if h == 0xFFFF { return .null }
            return .string(CharacterCodec.utf8String(header: h, at: p))
        case .ushortBytes:
            let n = Int(u16(0))
            if n == 0xFFFF { return .null }
            if c.family == .character { return CharacterCodec.cp1252Value(at: p + 2, count: n) }
            return BinaryCodec.value(at: p + 2, count: n)
        case .vector:
            return VectorCodec.scannedValue(at: p)
        case .decode, .large, .unsupported:
            return .null
        }
    }

    /// A ``WireColumn/Kind/large`` value at `p` (`offset` of the bytes), read by its family's
    /// codec from its assembled bytes (see ``WireColumn/Kind/large`` for the header). Checked when
    /// the row was appended, so it cannot fail.
    @inline(never)
    func largeValue(_ c: WireColumn, column: Int, at p: UnsafeRawPointer, offset: Int) -> SQLValue {
        let n = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
        if n == WireColumn.largeNull { return .null }
        let count = Int(n), data = p + WireColumn.largeHeaderSize
        let form = p.load(fromByteOffset: 4, as: UInt8.self)
        if form == WireColumn.LargeForm.separate.rawValue {
            return c.family == .udt ? UDTCodec.plpValue(separate[count].array) : BinaryCodec.plpValue(separate[count].array)
        }
        switch c.family {
        case .binary: return BinaryCodec.value(at: data, count: count)
        case .udt: return UDTCodec.value(at: data, count: count)
        case .json: return JSONCodec.value(at: data, count: count)
        case .nationalCharacter, .xml:
            if form != WireColumn.LargeForm.raw.rawValue {
                let s = CharacterCodec.largeString(form, at: p)
                return c.family == .xml ? .xml(s) : .string(s)
            }
        default: break
        }
        // Code page text (and raw UTF-16, which the scan does not write): by the token decoder's codec.
        var reader = ByteReader(bytes, start: offset + WireColumn.largeHeaderSize)
        return (try? scan[column].decodeData(from: &reader, count: count)) ?? .null
    }
    /// Whether the value of `column` in `row` is NULL, without decoding it.
    public func isNull(row: Int, column: Int) -> Bool {
        let o = offsets[row &* columnCount &+ column]
        if o == WireRowBlock.nullOffset { return true }
        return scan[column].isNull(bytes, at: Int(o))
    }

    /// The values of `row`, in column order.
    public func values(row: Int) -> [SQLValue] {
        values(rows: row ..< row + 1)
    }

    /// Appends `count` bytes of `source` from `start` and the offsets of their values
    /// (`offsets`, relative to `start`); used by the decoder only.
    mutating func append(_ source: UnsafeBufferPointer<UInt8>, from start: Int, count: Int, offsets new: ArraySlice<UInt32>) {
        let base = UInt32(truncatingIfNeeded: bytes.count)
        makeRoom(bytes: count, offsets: new.count)
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[start ..< start + count]))
        for o in new { offsets.append(o == WireRowBlock.nullOffset ? o : o &+ base) }
    }

    /// Takes `buffer` (the decoder's, cut after the last lent row) as its bytes, `offsets` the
    /// lent rows' (in `buffer`, the first row at `low`): they become its rows with no copy. Only
    /// when ``canAdopt`` was true when the rows were lent.
    mutating func adopt(_ buffer: [UInt8], offsets lent: [UInt32], from low: Int) {
        bytes = buffer
        unaddressedPrefix = low
        offsets = lent
        lentSerial = 0
        lentByteCount = 0
    }

    /// Takes `storage` (emptied, from the decoder's recycler) as the room for the rows it copies,
    /// when it has none yet.
    mutating func useStorage(_ storage: [UInt8]) {
        if bytes.capacity == 0 { bytes = storage }
    }

    /// Gives the bytes to `recycler` for the decoder's next buffer or block (the decoder's buffer
    /// the block took, or the room it copied rows into; the recycler keeps only large ones, while
    /// a response is read): call it when the block is released (its owner's `deinit`), never
    /// while it is read. Bytes a view still holds stay its own: the recycler's next user writes
    /// to a copy.
    package func giveBytes(to recycler: RowBytesRecycler) {
        recycler.give(bytes)
    }

    /// Copies the lent rows, bytes `low ..< high` of `source` (the decoder's buffer they are in)
    /// with their `offsets` (in `source`), after its rows.
    mutating func appendLent(_ source: UnsafeBufferPointer<UInt8>, offsets lent: [UInt32], low: Int, high: Int) {
        let shift = UInt32(truncatingIfNeeded: bytes.count &- low)
        makeRoom(bytes: high &- low, offsets: lent.count)
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: source[low ..< high]))
        for o in lent { offsets.append(o == WireRowBlock.nullOffset ? o : o &+ shift) }
        lentSerial = 0
        lentByteCount = 0
    }

    /// A row assembled by ``WireRowProgress``: its bytes, its values' offsets (relative to its
    /// start), its separate values and where their headers are in its bytes.
    struct AssembledRow {
        var bytes: [UInt8]
        var offsets: [UInt32]
        var separate: [SeparateValue]
        var separateAt: [Int]
    }

    /// Appends one row assembled by ``WireRowProgress``; used by the decoder only. Into an empty
    /// block the row's bytes are moved, not copied; separate values are moved in.
    mutating func appendRow(_ row: AssembledRow) {
        var row = row
        if !separate.isEmpty {
            // Rebase the separate values' indexes (their headers' 4-byte field).
            for at in row.separateAt {
                let i = (0 ..< 4).reduce(0) { $0 | Int(row.bytes[at + $1]) << (8 * $1) } + separate.count
                for k in 0 ..< 4 { row.bytes[at + k] = UInt8(truncatingIfNeeded: i >> (8 * k)) }
            }
        }
        separate.append(contentsOf: row.separate)
        for v in row.separate { separateByteCount &+= v.count }
        if offsets.isEmpty && bytes.isEmpty {
            bytes = row.bytes
            offsets.append(contentsOf: row.offsets)
            return
        }
        let base = UInt32(truncatingIfNeeded: bytes.count)
        makeRoom(bytes: row.bytes.count, offsets: row.offsets.count)
        bytes.append(contentsOf: row.bytes)
        for o in row.offsets { offsets.append(o == WireRowBlock.nullOffset ? o : o &+ base) }
    }

    /// Removes every row, keeping the storage (a block reused row after row).
    mutating func removeAll() {
        if !bytes.isEmpty { bytes.removeAll(keepingCapacity: true) }
        if !offsets.isEmpty { offsets.removeAll(keepingCapacity: true) }
        if !separate.isEmpty { separate.removeAll() }
        separateByteCount = 0
        unaddressedPrefix = 0
        lentSerial = 0
        lentByteCount = 0
    }

    /// Reserves room for about `rows` more rows of `bytesPerRow` bytes.
    public mutating func reserveCapacity(rows: Int, bytesPerRow: Int) {
        offsets.reserveCapacity(offsets.count + rows * columnCount)
        bytes.reserveCapacity(bytes.count + rows * bytesPerRow)
    }

    /// As ``reserveCapacity(rows:bytesPerRow:)``, but only when rows are appended (nothing is
    /// allocated for a block that gets none, or only a row the scan state assembled: a large
    /// value's row is moved in as it is). Issue 43: a block begun while a row was being read
    /// used to grow by doubling from that row's size.
    package mutating func reserveOnAppend(rows: Int, bytesPerRow: Int) {
        wantedOffsets = offsets.count + rows * columnCount
        wantedBytes = bytes.count + rows * bytesPerRow
    }

    /// Room asked by ``reserveOnAppend(rows:bytesPerRow:)``, made by the next append that needs room.
    private var wantedBytes = 0, wantedOffsets = 0

    /// Room for `n` more bytes and `k` more offsets: at least what ``reserveOnAppend(rows:bytesPerRow:)``
    /// asked, else twice the capacity (offsets used to be reserved to the exact count, a
    /// reallocation per row a scan state appended).
    @inline(__always)
    private mutating func makeRoom(bytes n: Int, offsets k: Int) {
        if bytes.capacity &- bytes.count < n {
            bytes.reserveCapacity(Swift.max(bytes.count &+ n, bytes.capacity &* 2, wantedBytes))
        }
        if offsets.capacity &- offsets.count < k {
            offsets.reserveCapacity(Swift.max(offsets.count &+ k, offsets.capacity &* 2, wantedOffsets))
        }
    }
}

/// An incremental, pure (no I/O) decoder of a tabular result token stream ([MS-TDS] 2.2.7).
///
/// Feed it the payload bytes of each packet as they arrive with ``append(_:)``, take tokens
/// with ``next()`` until it returns nil ("need more bytes"), and call ``finish()`` when the
/// message ends (the packet with END_OF_MESSAGE was appended and `next()` returned nil).
///
/// - It gives the same tokens whether the input comes whole, byte by byte or split anywhere.
/// - ROW, NBCROW and ALTROW are decoded incrementally: the column index, the values so far and
///   the PLP chunks so far are kept between calls, so a row that spans many packets (a multi-MB
///   varchar(max)) is read once, in linear time. Nothing is allocated by a declared length
///   before the bytes are present. Consumed bytes are dropped so memory stays bounded. Rows are
///   read whole or in parts, one mode per response (``RowMode``, ``startResponse(rows:)``).
/// - Errors are ``TDSDecodingError`` with the absolute offset in the token stream (counted from
///   the first byte appended, reset by `finish()`), `context` = the [MS-TDS] token name. After a
///   non-`.truncated` error the decoder is failed: every later `next()` throws the same error.
/// - COLMETADATA replaces ``columns``; LOGINACK sets ``version`` (when
///   `options.adoptsLoginAckVersion`); FEATUREEXTACK sets the column-encryption and
///   data-classification options (when `options.followsFeatureExtAck`).
public struct TokenStreamDecoder: Sendable {
    /// Decoding options.
    public struct Options: Hashable, Sendable {
        /// Column encryption (Always Encrypted) was negotiated: COLMETADATA carries a CEK table
        /// and encrypted columns carry CryptoMetaData.
        public var columnEncryption: Bool
        /// The DATACLASSIFICATION version acknowledged at login (1 or 2; 2 adds ranks).
        public var dataClassificationVersion: UInt8
        /// Update `columnEncryption` and `dataClassificationVersion` from FEATUREEXTACK.
        public var followsFeatureExtAck: Bool
        /// Adopt the TDS version of LOGINACK for the tokens that follow it.
        public var adoptsLoginAckVersion: Bool
        /// The largest value accepted, in bytes (default 1 GiB): a PLP value (varchar(max),
        /// nvarchar(max), varbinary(max), xml, UDT) or a text/ntext/image value. A declared
        /// length above it is `.limitExceeded` at once; a PLP value of unknown length is
        /// bounded as its chunks arrive. A PLP total length above 2^31-1 (what SQL Server can
        /// send) is `.invalidLength` whatever this cap, except PLP_NULL and UNKNOWN_PLP_LEN.
        public var maximumValueSize: Int
        /// The largest token accepted other than a row (ROW, NBCROW, ALTROW and RETURNVALUE
        /// are bounded per value instead), in bytes (default 16 MiB): a token still incomplete
        /// when this many bytes of it are buffered, or one declaring a longer 32-bit length
        /// (SESSIONSTATE, FEDAUTHINFO), is `.limitExceeded`.
        public var maximumTokenSize: Int
        /// Reading a login response: before LOGINACK, a message that ends with exactly 9 bytes of
        /// DONE/DONEPROC/DONEINPROC is the TDS 7.1 form (4-byte row count) whatever version was
        /// asked for, and ``finish()`` returns it (default false: a short DONE is `.truncated`).
        public var acceptsShortDoneBeforeLoginAck = false

        /// The default ``maximumValueSize``: 1 GiB.
        public static let defaultMaximumValueSize = 1 << 30
        /// The default ``maximumTokenSize``: 16 MiB.
        public static let defaultMaximumTokenSize = 16 << 20

        public init(columnEncryption: Bool = false, dataClassificationVersion: UInt8 = 1,
                    followsFeatureExtAck: Bool = true, adoptsLoginAckVersion: Bool = true,
                    maximumValueSize: Int = Options.defaultMaximumValueSize,
                    maximumTokenSize: Int = Options.defaultMaximumTokenSize) {
            self.columnEncryption = columnEncryption
            self.dataClassificationVersion = dataClassificationVersion
            self.followsFeatureExtAck = followsFeatureExtAck
            self.adoptsLoginAckVersion = adoptsLoginAckVersion
            self.maximumValueSize = max(0, maximumValueSize)
            self.maximumTokenSize = max(0, maximumTokenSize)
        }
    }

    /// The TDS version tokens are decoded for (row counts, line numbers, UserType sizes).
    public private(set) var version: TDSVersion
    /// The caps in effect (see ``Options``).
    public private(set) var options: Options
    /// Large binary values (varbinary(max), image) of rows read into a ``WireRowBlock`` are
    /// assembled as `Data` (a block's typed read of `Data` then shares it, no copy; its
    /// ``SQLValue`` copies it into an array) instead of an array (shared by its ``SQLValue``).
    /// The connection sets it per request: true while a typed read's rows are read.
    package var assemblesLargeBinaryAsData = false
    /// The current result's columns (from the last COLMETADATA); rows are decoded with these.
    public private(set) var columns: [ColumnMetadata] = []
    /// ALTMETADATA by Id, for ALTROW (cleared by the next COLMETADATA).
    public private(set) var altMetadata: [UInt16: AltMetadata] = [:]

    var buffer: [UInt8] = []
    /// Rows appended to a block are lent to it, left in place in the buffer, rather than copied
    /// (issue 43): ``settle(_:)`` then gives the block the buffer itself when the rows fill at
    /// least a quarter of it (the decoder goes on with a new buffer holding the bytes after them),
    /// else copies them. Only a block that reserved room for a quarter of
    /// ``lendBufferCapacity`` or more is lent rows (``WireRowBlock/reserveOnAppend(rows:bytesPerRow:)``).
    /// A block whose rows are lent must be settled before it is read: until then it shows none
    /// of them. Off by default; the connection turns it on.
    package var lendsRowBytes = false
    /// The rows lent to a block and not yet settled (at most one block at a time).
    var lend: Lend?
    struct Lend: Sendable {
        /// The block's ``WireRowBlock/lentSerial``.
        var serial: UInt64
        /// The rows are in `detached`: the buffer was set aside with them (the message ended, or
        /// the buffer passed ``lendLimit``).
        var inDetached = false
        /// The lent values' offsets in the buffer (``WireRowBlock/nullOffset`` for a bitmap NULL).
        var offsets: [UInt32] = []
        /// The range of the buffer the rows take.
        var low: Int, high: Int
    }
    /// The number of the last lend begun.
    var lendSerial: UInt64 = 0
    /// The buffer set aside with the lent rows in it, until the block is settled.
    var detached: [UInt8] = []
    /// The room of each buffer rows are lent from (``settle(_:)`` makes a new one for the
    /// decoder when a block takes its buffer): the connection's largest read and a packet and
    /// a row beyond it, so that a batch's rows fit without the buffer growing, and a block
    /// holds little more than its rows (it takes the buffer when they fill a quarter of it).
    package var lendBufferCapacity = 768 << 10
    /// Where a block that took the buffer gives it back when it is released, and where the next
    /// buffer comes from (nil: each is a new one).
    package var recycler: RowBytesRecycler?
    /// The most the buffer grows while rows in it are lent before it is set aside (the
    /// connection settles a block every batch, about 1 MiB).
    var lendLimit = 16 << 20
    /// Index in `buffer` of the next unconsumed byte.
    var readIndex = 0
    /// Absolute stream offset of `buffer[0]`.
    var bufferBase = 0
    /// A token without a length field being read unit by unit (see ``PendingToken``): at most
    /// one. An array so that the progress (large: names, TYPE_INFOs) lives out of line, is
    /// advanced in place and is copied only on write, and the checks for it stay cheap.
    var pendingTokens: [PendingToken] = []
    /// `buffer.count` at the last attempt that needed more bytes (no retry until it grows).
    var waitingAtCount = -1
    var failure: TDSDecodingError?
    /// A LOGINACK was decoded (until then the server's TDS version is not known).
    private var sawLoginAck = false
    /// The current result's columns as every row reader reads them (``WireColumn``).
    var wireColumns: [WireColumn] = []
    /// Counts COLMETADATA tokens applied (a ``WireRowBlock`` belongs to one result).
    var resultNumber = 0
    /// Value offsets of the rows being scanned, reused from run to run.
    var offsetScratch: [UInt32] = []
    /// Where the rows being scanned start (relative to the run), reused from run to run; only
    /// when `rowsHaveText`.
    var rowStartScratch: [UInt32] = []
    /// The UTF-8 of the run being scanned (``transcodeRun(_:from:count:rows:columns:offsets:starts:into:)``),
    /// reused from run to run (at most ``textScratchLimit`` bytes are kept).
    var textScratch: [UInt8] = []
    /// The largest `textScratch` kept between runs (a run is usually one packet's rows).
    static let textScratchLimit = 1 << 20
    /// A column of the current result is nchar or nvarchar (``WireColumn/Kind/utf16``): the row
    /// scan transcodes it into the block rather than copying the run whole.
    package internal(set) var rowsHaveText = false
    /// How ROW and NBCROW tokens are read, fixed for a response (``startResponse(rows:)``).
    public internal(set) var rowMode = RowMode.whole
    /// The row token being read by its scan state (``WireRowProgress``, the one reader of row
    /// values): a ROW/NBCROW the run of whole rows cannot take (see
    /// ``appendBufferedRows(to:limit:byteLimit:)``) or read by ``next()``, or, streamed in
    /// ``RowMode/parts``, read by ``nextPart()``; an ALTROW or a RETURNVALUE's value; whole once
    /// ``WireRowProgress/isComplete``, until it is taken.
    var wireRow: WireRowProgress?
    /// What `wireRow` holds, kept beside it: read on every call, where reading the optional
    /// itself would copy the row's state (a large struct) each time.
    var wireRowState = WireRowState.none
    enum WireRowState: Sendable { case none, row, other }
    /// The block a whole ROW/NBCROW read by ``next()`` is scanned into (one row at a time, its
    /// storage reused from row to row).
    var tokenBlock: WireRowBlock?
    /// Parts read and not yet returned by ``nextPart()``, from `queuedPartIndex` on.
    var queuedParts: [RowPart] = []
    var queuedPartIndex = 0

    /// Bytes (re-)read by the attempts to decode tokens other than rows, counted from where each
    /// attempt began to where it stopped (the end of what it consumed, or the read that ran out
    /// of bytes). Linear in the input however it is split: no attempt re-reads more than one
    /// unit of a token already begun (tests read it).
    private(set) var examinedByteCount = 0

    /// A token without a length field (COLMETADATA, ALTMETADATA, DATACLASSIFICATION,
    /// FEATUREEXTACK, or the part of RETURNVALUE before its value) whose bytes are still
    /// arriving: what was read of it is kept and consumed from the buffer, so each attempt goes
    /// on where the last one stopped and the token is read once, in linear time.
    ///
    /// One optional per kind (the one of `type` is set), so that the progress is advanced in
    /// place: never copied per attempt.
    struct PendingToken: Sendable {
        var type: TokenType
        /// Absolute offset of the token byte.
        var tokenStart: Int
        var colMetadata: ColMetadataProgress?
        var altMetadata: AltMetadataProgress?
        var dataClassification: DataClassificationProgress?
        var featureExtAck: FeatureExtAckProgress?
        var returnValueHeader: ReturnValueHeaderProgress?

        init(type: TokenType, tokenStart: Int, dataClassificationVersion: UInt8) {
            self.type = type
            self.tokenStart = tokenStart
            switch type {
            case .colMetadata: colMetadata = ColMetadataProgress(tokenStart: tokenStart, incremental: true)
            case .altMetadata: altMetadata = AltMetadataProgress(incremental: true)
            case .dataClassification:
                dataClassification = DataClassificationProgress(tokenStart: tokenStart, version: dataClassificationVersion)
            case .featureExtAck: featureExtAck = FeatureExtAckProgress()
            default: returnValueHeader = ReturnValueHeaderProgress(incremental: true)
            }
        }
    }

    /// A decoder for a stream of `version`, with `options`' caps.
    public init(version: TDSVersion, options: Options = Options()) {
        self.version = version
        self.options = options
    }

    /// Absolute stream offset of the next byte to decode.
    public var offset: Int { bufferBase + readIndex }

    /// Bytes received but not yet consumed by a whole token (a partial row's consumed values
    /// are not counted).
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Replaces the current column metadata (e.g. when a prepared statement's metadata was
    /// received earlier and the server sends NoMetaData).
    public mutating func setColumns(_ columns: [ColumnMetadata]) {
        self.columns = columns
        self.wireColumns = columns.map { WireColumn($0.typeInfo) }
        self.rowsHaveText = wireColumns.contains { $0.kind == .utf16 }
        self.resultNumber &+= 1
    }

    /// Appends payload bytes of the next packet(s).
    public mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        waitingAtCount = -1
        compact()
        if buffer.isEmpty {
            buffer = bytes
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// Appends payload bytes of the next packet(s).
    public mutating func append<S: Sequence>(contentsOf bytes: S) where S.Element == UInt8 {
        waitingAtCount = -1
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends a packet's payload, `received[range]`, the framer's receive buffer
    /// (``PacketAssembler/consumePacket(into:)``). While a row is read by its scan state and the
    /// buffer holds nothing unread (a large value arriving: a PLP chunk's bytes packet after
    /// packet), the row reads the payload where it is and only what it leaves is appended: a large
    /// value's bytes are copied once, into the value, not first into the buffer (issue 43).
    /// Not for a row read in parts, an ALTROW or RETURNVALUE, or while rows are lent from the
    /// buffer. The row's error, if any, is the decoder's failure (thrown by the next call).
    mutating func append(packetPayload range: Range<Int>, of received: [UInt8]) {
        guard wireRowState == .row, readIndex == buffer.count, lend == nil, detached.isEmpty,
              failure == nil, !range.isEmpty, rowMode == .whole else {
            append(contentsOf: received[range])
            return
        }
        // The payload's first byte follows the buffer's last in the stream.
        let start = bufferBase &+ buffer.count
        dropReadBytes()
        var reader = ByteReader(received, start: range.lowerBound, end: range.upperBound,
                                baseOffset: start &- range.lowerBound)
        do throws(TDSDecodingError) {
            _ = try wireRow!.advance(&reader)   // in place, as advanceWireRow advances it
        } catch {
            wireRow = nil
            wireRowState = .none
            failure = error
        }
        waitingAtCount = -1
        bufferBase &+= reader.offset &- range.lowerBound
        if failure == nil, reader.offset < range.upperBound { buffer.append(contentsOf: received[reader.offset ..< range.upperBound]) }
    }

    /// True when rows are lent from the buffer and it has room for fewer than `bytes` more: the
    /// next packet would grow it (a copy of the lent rows into fresh pages), where settling the
    /// block first hands it the buffer and the decoder goes on in a recycled one.
    package func lendsRows(withRoomUnder bytes: Int) -> Bool {
        guard let lend, !lend.inDetached else { return false }
        return buffer.capacity &- buffer.count < bytes
    }

    private mutating func compact() {
        if readIndex == 0 { return }
        if let lend, !lend.inDetached {
            // The lent rows stay where they are until their block is settled.
            if buffer.count > lendLimit { detachLend() }
            return
        }
        dropReadBytes()
    }

    /// Drops the bytes read from the buffer: all of them when it is read to its end, else when
    /// they are 4 KiB and at least half of it (so that each byte is moved at most once on average).
    mutating func dropReadBytes() {
        if readIndex == 0 { return }
        if readIndex >= buffer.count {
            bufferBase += buffer.count
            buffer.removeAll(keepingCapacity: buffer.capacity <= Swift.max(1 << 20, 2 * lendBufferCapacity))
            readIndex = 0
            waitingAtCount = -1
        } else if readIndex >= 4096 && readIndex * 2 >= buffer.count {
            buffer.removeFirst(readIndex)
            bufferBase += readIndex
            readIndex = 0
            waitingAtCount = -1
        }
    }

    /// The next whole token, or nil when more bytes are needed.
    ///
    /// Throws ``TDSDecodingError``: `.unknownToken` for a token byte [MS-TDS] does not define,
    /// `.invalidLength`, `.invalidValue`, … for malformed tokens, `.unexpectedToken` for a row
    /// without COLMETADATA.
    ///
    /// In ``RowMode/parts`` rows come only in parts: `next()` is ``nextPart()`` without them (it
    /// returns the next token that is not a ROW or NBCROW of the current result).
    public mutating func next() throws(TDSDecodingError) -> Token? {
        if rowMode == .parts {
            while let part = try nextPart() { if case .token(let token) = part { return token } }
            return nil
        }
        return try nextToken()
    }

    /// The next whole token (``next()``), a ROW or NBCROW read whole.
    mutating func nextToken() throws(TDSDecodingError) -> Token? {
        if let failure { throw failure }
        do throws(TDSDecodingError) {
            return try step()
        } catch {
            failure = error
            throw error
        }
    }

    /// Ends the message: throws `.truncated` naming the token and its offset if a partial
    /// token is left over; otherwise resets offsets to 0 for the next message (column metadata
    /// and version are kept).
    ///
    /// The one exception is the DONE width before LOGINACK: a TDS 7.1 server (SQL Server 2000)
    /// answers a 7.2+ LOGIN7 it refuses with ERROR and a 9-byte DONE (4-byte row count). With
    /// ``Options/acceptsShortDoneBeforeLoginAck`` and no LOGINACK yet, a message that ends with exactly 9
    /// bytes of a DONE, DONEPROC or DONEINPROC can only be that form: it is decoded with the 7.1
    /// layout and returned, whatever version was asked for.
    @discardableResult
    public mutating func finish() throws(TDSDecodingError) -> Token? {
        if let failure { throw failure }
        if options.acceptsShortDoneBeforeLoginAck, !sawLoginAck, version.hasLongRowCounts, wireRowState == .none,
           pendingTokens.isEmpty, buffer.count - readIndex == 9,
           [TokenType.done, .doneProc, .doneInProc].contains(TokenType(rawValue: buffer[readIndex])) {
            let type = TokenType(rawValue: buffer[readIndex])
            var reader = ByteReader(buffer, start: readIndex + 1, baseOffset: bufferBase)
            let token: Token
            do throws(TDSDecodingError) {
                switch type {
                case .doneProc: token = .doneProc(try DoneProc.decode(from: &reader, version: .v7_1))
                case .doneInProc: token = .doneInProc(try DoneInProc.decode(from: &reader, version: .v7_1))
                default: token = .done(try Done.decode(from: &reader, version: .v7_1))
                }
            } catch {
                failure = error.inToken(type.name)
                throw error.inToken(type.name)
            }
            readIndex = reader.offset
            try finish()
            return token
        }
        if let pending = wireRow, !pending.isComplete {
            let e = TDSDecodingError(.truncated, offset: pending.tokenStart, context: pending.type.name,
                                     "the message ended inside the token (at column \(pending.index + 1) of \(pending.columnCount))")
            failure = e
            throw e
        }
        if let pending = pendingTokens.first {
            let e: TDSDecodingError
            if let p = pending.colMetadata {
                e = TDSDecodingError(.truncated, offset: pending.tokenStart, context: "COLMETADATA",
                                     "the message ended inside the token (after \(p.columns.count) column(s))")
            } else {
                e = TDSDecodingError(.truncated, offset: pending.tokenStart, context: pending.type.name,
                                     "the message ended inside the token: \(bufferBase + buffer.count - pending.tokenStart) byte(s) of it received")
            }
            failure = e
            throw e
        }
        if readIndex < buffer.count {
            let type = TokenType(rawValue: buffer[readIndex])
            let e = TDSDecodingError(.truncated, offset: offset, context: type.name,
                                     "the message ended inside the token: \(buffer.count - readIndex) byte(s) of it received")
            failure = e
            throw e
        }
        if let lend, !lend.inDetached {
            detachLend()
        } else {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
        }
        recycler?.close()   // an idle connection keeps no spare buffer
        readIndex = 0
        bufferBase = 0
        waitingAtCount = -1
        return nil
    }

    // MARK: - Decoding

    private mutating func step() throws(TDSDecodingError) -> Token? {
        if wireRowState != .none {
            // Never a row in parts: nextPart() reads it before it asks for a token.
            return try advanceWireRow() ? takeWireRowToken() : nil
        }
        if !pendingTokens.isEmpty { return try continuePendingToken() }
        guard readIndex < buffer.count else { return nil }
        if buffer.count == waitingAtCount { return nil }
        let type = TokenType(rawValue: buffer[readIndex])
        switch type {
        case .row, .nbcRow:
            return try startRow(type)
        case .altRow:
            return try startRow(type)
        case .colMetadata, .altMetadata, .dataClassification, .featureExtAck, .returnValue:
            pendingTokens.append(PendingToken(type: type, tokenStart: bufferBase + readIndex,
                                              dataClassificationVersion: options.dataClassificationVersion))
            readIndex += 1
            examinedByteCount += 1
            return try continuePendingToken()
        case .sessionState, .fedAuthInfo:
            // A 32-bit token length: refused at once when above the cap, never waited for.
            if buffer.count - readIndex >= 5 {
                let length = Int(buffer[readIndex + 1]) | Int(buffer[readIndex + 2]) << 8
                    | Int(buffer[readIndex + 3]) << 16 | Int(buffer[readIndex + 4]) << 24
                if length > options.maximumTokenSize { throw tokenTooLong(type, declared: length) }
            }
        default:
            break
        }
        if let size = Self.lengthFieldSize(type) {
            // A token with a USHORT or ULONG length whose body is not all here: its decoder reads
            // that length first, so it could only throw `.truncated`; wait without building it.
            let available = buffer.count - readIndex - 1
            var length = Int.max
            if available >= size {
                length = Int(buffer[readIndex + 1]) | Int(buffer[readIndex + 2]) << 8
                if size == 4 { length |= Int(buffer[readIndex + 3]) << 16 | Int(buffer[readIndex + 4]) << 24 }
            }
            if available < size || available - size < length {
                examinedByteCount += available < size ? 1 : 1 + size
                if buffer.count - readIndex > options.maximumTokenSize { throw tokenTooLong(type, declared: nil) }
                waitingAtCount = buffer.count
                return nil
            }
        }
        var reader = ByteReader(buffer, start: readIndex + 1, baseOffset: bufferBase)
        let token: Token
        do throws(TDSDecodingError) {
            token = try decodeToken(type, &reader)
        } catch {
            if error.code == .truncated {
                examinedByteCount += max(1, error.offset - offset)
                if buffer.count - readIndex > options.maximumTokenSize { throw tokenTooLong(type, declared: nil) }
                waitingAtCount = buffer.count
                return nil
            }
            throw error.inToken(type.name)
        }
        examinedByteCount += reader.offset - readIndex
        readIndex = reader.offset
        waitingAtCount = -1
        apply(token)
        return token
    }

    /// The size of the length field that starts the token of `type` (after its type byte), for
    /// the tokens whose decoder reads nothing before it: ERROR, INFO, ENVCHANGE, LOGINACK, ORDER,
    /// COLINFO, TABNAME, SSPI (USHORT); SESSIONSTATE, FEDAUTHINFO (ULONG).
    private static func lengthFieldSize(_ type: TokenType) -> Int? {
        switch type {
        case .error, .info, .envChange, .loginAck, .order, .colInfo, .tabName, .sspi: return 2
        case .sessionState, .fedAuthInfo: return 4
        default: return nil
        }
    }

    /// `.limitExceeded` for the token of `type` at `tokenStart` (default: the next byte).
    private func tokenTooLong(_ type: TokenType, declared: Int?, tokenStart: Int? = nil) -> TDSDecodingError {
        let start = tokenStart ?? offset
        let size = declared.map { "declares \($0) bytes" } ?? "is still incomplete after \(bufferBase + buffer.count - start) bytes"
        return TDSDecodingError(.limitExceeded, offset: start, context: type.name,
                                "the token \(size), more than the maximum token size of \(options.maximumTokenSize) bytes")
    }

    /// Reads what the buffer holds of the pending token (see ``PendingToken``); the token once
    /// complete (for RETURNVALUE, once its value is read too, see ``continueRow()``).
    private mutating func continuePendingToken() throws(TDSDecodingError) -> Token? {
        guard let type = pendingTokens.first?.type, let tokenStart = pendingTokens.first?.tokenStart else { return nil }
        if buffer.count == waitingAtCount { return nil }
        var reader = ByteReader(buffer, start: readIndex, baseOffset: bufferBase)
        let begin = offset
        let token: Token?
        let truncatedAt: Int?
        // Each progress is advanced in place (`pendingTokens[0].x!`), never copied.
        switch type {
        case .colMetadata:
            token = try pendingTokens[0].colMetadata!.advance(&reader, version: version, columnEncryption: options.columnEncryption).map(Token.colMetadata)
            truncatedAt = pendingTokens[0].colMetadata!.truncation?.offset
        case .altMetadata:
            token = try pendingTokens[0].altMetadata!.advance(&reader, version: version).map(Token.altMetadata)
            truncatedAt = pendingTokens[0].altMetadata!.truncation?.offset
        case .dataClassification:
            token = try pendingTokens[0].dataClassification!.advance(&reader).map(Token.dataClassification)
            truncatedAt = pendingTokens[0].dataClassification!.truncation?.offset
        case .featureExtAck:
            token = try pendingTokens[0].featureExtAck!.advance(&reader).map(Token.featureExtAck)
            truncatedAt = pendingTokens[0].featureExtAck!.truncation?.offset
        default:
            let header: ReturnValue.Header?
            do throws(TDSDecodingError) {
                header = try pendingTokens[0].returnValueHeader!.advance(&reader, version: version, columnEncryption: options.columnEncryption)
            } catch {
                throw error.inToken("RETURNVALUE")
            }
            if let header {
                // The value is read as a row's (a long PLP value incrementally).
                pendingTokens.removeAll(keepingCapacity: true)
                examinedByteCount += reader.absoluteOffset - begin
                readIndex = reader.offset
                waitingAtCount = -1
                wireRow = WireRowProgress(type: .returnValue, tokenStart: tokenStart, bitmap: [], columns: [WireColumn(header.typeInfo)],
                                          maximumValueSize: options.maximumValueSize)
                wireRow!.returnValue = header
                wireRowState = .other
                return try advanceWireRow() ? takeWireRowToken() : nil
            }
            token = nil
            truncatedAt = pendingTokens[0].returnValueHeader!.truncation?.offset
        }
        readIndex = reader.offset
        guard let token else {
            examinedByteCount += max(0, (truncatedAt ?? reader.absoluteOffset) - begin)
            switch type {
            case .colMetadata:
                if pendingTokens[0].colMetadata!.consumed + (buffer.count - readIndex) > options.maximumTokenSize {
                    throw TDSDecodingError(.limitExceeded, offset: tokenStart, context: "COLMETADATA",
                                           "the token is longer than the maximum token size of \(options.maximumTokenSize) bytes")
                }
            case .returnValue:
                break   // at most a few hundred KiB (names, a TYPE_INFO, CryptoMetadata) before the value
            default:
                if bufferBase + buffer.count - tokenStart > options.maximumTokenSize {
                    throw tokenTooLong(type, declared: nil, tokenStart: tokenStart)
                }
            }
            waitingAtCount = buffer.count
            return nil
        }
        pendingTokens.removeAll(keepingCapacity: true)
        examinedByteCount += reader.absoluteOffset - begin
        waitingAtCount = -1
        apply(token)
        return token
    }

    private mutating func decodeToken(_ type: TokenType, _ r: inout ByteReader) throws(TDSDecodingError) -> Token {
        switch type {
        case .colMetadata: return .colMetadata(try ColMetadata.decode(from: &r, version: version, columnEncryption: options.columnEncryption))
        case .done: return .done(try Done.decode(from: &r, version: version))
        case .doneProc: return .doneProc(try DoneProc.decode(from: &r, version: version))
        case .doneInProc: return .doneInProc(try DoneInProc.decode(from: &r, version: version))
        case .error: return .error(try ErrorToken.decode(from: &r, version: version))
        case .info: return .info(try InfoToken.decode(from: &r, version: version))
        case .envChange: return .envChange(try EnvChange.decode(from: &r))
        case .loginAck: return .loginAck(try LoginAck.decode(from: &r))
        case .order: return .order(try Order.decode(from: &r))
        case .returnStatus: return .returnStatus(try ReturnStatus.decode(from: &r))
        case .returnValue: return .returnValue(try ReturnValue.decode(from: &r, version: version, columnEncryption: options.columnEncryption))
        case .colInfo: return .colInfo(try ColInfo.decode(from: &r))
        case .tabName: return .tabName(try TabName.decode(from: &r, version: version))
        case .featureExtAck: return .featureExtAck(try FeatureExtAck.decode(from: &r))
        case .sessionState: return .sessionState(try SessionState.decode(from: &r))
        case .sspi: return .sspi(try SSPIToken.decode(from: &r))
        case .fedAuthInfo: return .fedAuthInfo(try FedAuthInfo.decode(from: &r))
        case .dataClassification: return .dataClassification(try DataClassification.decode(from: &r, version: options.dataClassificationVersion))
        case .offset: return .offset(try Offset.decode(from: &r))
        case .altMetadata: return .altMetadata(try AltMetadata.decode(from: &r, version: version))
        default:
            throw TDSDecodingError(.unknownToken, offset: bufferBase + readIndex, context: type.name,
                                   "token byte 0x\(TokenType.hex(type.rawValue)) is not defined by [MS-TDS] 2.2.7")
        }
    }

    private mutating func apply(_ token: Token) {
        switch token {
        case .colMetadata(let m):
            if !m.isNoMetadata { setColumns(m.columns) }
            altMetadata = [:]
        case .altMetadata(let m):
            altMetadata[m.id] = m
        case .loginAck(let ack):
            sawLoginAck = true
            if options.adoptsLoginAckVersion { version = ack.tdsVersion }
        case .featureExtAck(let ack):
            if options.followsFeatureExtAck {
                if let v = ack.columnEncryptionVersion { options.columnEncryption = v > 0 }
                if let v = ack.dataClassificationVersion { options.dataClassificationVersion = v }
            }
        default:
            break
        }
    }
}

import TDS

/// The receive side of a connection, without I/O: the one packet framer (``PacketAssembler``)
/// and the token decoder, fed with the bytes the driver reads. Packets of a response
/// (TABULAR_RESULT, [MS-TDS] 2.2.4) go to the decoder one payload at a time, straight from the
/// receive buffer, so nothing holds a whole message: memory stays at a packet, a partial token
/// and the values of one partial row (each value bounded by `maximumValueSize`).
struct ResponseReader: Sendable {
    /// What the bytes received so far hold next.
    enum Item: Sendable {
        case token(Token)
        /// The response message ended (its EOM packet was decoded to the end).
        case messageEnded
        /// Nothing more until more bytes arrive.
        case needBytes
    }

    var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
    var decoder: TokenStreamDecoder
    /// The setting named in the error when a message passes `framer.maximumMessageSize`.
    private var messageCapName = ""
    /// The message's last packet (EOM) was handed to the decoder, which may still hold tokens of it.
    private(set) var endOfMessagePending = false
    private var messageEndedAfterToken = false
    private let options: TokenStreamDecoder.Options
    /// The rows and bytes of the current result's last wire row block (0 at a result's start):
    /// the next block of the result reserves as much.
    var wireBlockHint: (rows: Int, bytes: Int) = (0, 0)
    /// Called with each packet's header as it is cut (the trace log), nil when nobody listens.
    var onPacket: (@Sendable (PacketHeader) -> Void)?
    init(version: TDSVersion, options: TokenStreamDecoder.Options) {
        self.options = options
        self.decoder = TokenStreamDecoder(version: version, options: options)
        decoder.lendsRowBytes = true   // every wire block is settled as it is handed on (emitWire)
        decoder.recycler = RowBytesRecycler()
    }

    /// Bounds every following message by `cap` bytes (nil: no bound), naming `capName` when passed.
    mutating func limitMessages(to cap: Int?, capName: String = "") {
        framer.maximumMessageSize = cap
        messageCapName = capName
    }

    mutating func append(_ bytes: [UInt8]) {
        framer.append(bytes)
    }

    /// Drops every buffer (after the connection closed: memory is released at once).
    mutating func release() {
        framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        decoder = TokenStreamDecoder(version: decoder.version, options: options)
        decoder.lendsRowBytes = true
        decoder.recycler = RowBytesRecycler()
        endOfMessagePending = false
        messageEndedAfterToken = false
    }

    /// The next item the buffered bytes hold.
    /// - Throws: ``SQLClientError`` `.protocolError` for malformed packets or tokens, a packet
    ///   that is not TABULAR_RESULT, or a message past the cap.
    mutating func next() throws(SQLClientError) -> Item {
        try nextItem({ decoder throws(TDSDecodingError) in try decoder.next().map(Item.token) },
                     token: Item.token, messageEnded: .messageEnded, needBytes: .needBytes)
    }

    /// What the bytes received so far hold next, for a request read in parts (large values in
    /// pieces, see ``TokenStreamDecoder/nextPart()``).
    enum PartItem: Sendable {
        case part(TokenStreamDecoder.RowPart)
        /// The response message ended (its EOM packet was decoded to the end).
        case messageEnded
        /// Nothing more until more bytes arrive.
        case needBytes
    }

    /// The next part the buffered bytes hold (as ``next()``, rows in parts).
    /// - Throws: as ``next()``.
    mutating func nextPart() throws(SQLClientError) -> PartItem {
        try nextItem({ decoder throws(TDSDecodingError) in try decoder.nextPart().map(PartItem.part) },
                     token: { .part(.token($0)) }, messageEnded: .messageEnded, needBytes: .needBytes)
    }

    /// The one reading loop of ``next()`` and ``nextPart()``: what `step` takes from the decoder,
    /// else the message's end (after the last token only its end made whole, as a TDS 7.1
    /// server's 9-byte DONE before LOGINACK), else the next packet, else `needBytes`.
    @inline(__always)
    private mutating func nextItem<T>(_ step: (inout TokenStreamDecoder) throws(TDSDecodingError) -> T?,
                                      token: (Token) -> T, messageEnded: T, needBytes: T) throws(SQLClientError) -> T {
        while true {
            do throws(TDSDecodingError) {
                if let item = try step(&decoder) { return item }
                if messageEndedAfterToken {
                    messageEndedAfterToken = false
                    return messageEnded
                }
                if endOfMessagePending {
                    endOfMessagePending = false
                    if let last = try decoder.finish() {
                        messageEndedAfterToken = true
                        return token(last)
                    }
                    return messageEnded
                }
            } catch {
                throw SQLClientError.protocolError(error)
            }
            guard try cutPacket() else { return needBytes }
        }
    }

    /// Hands the next whole buffered packet's payload to the decoder; false when none is whole.
    mutating func cutPacket() throws(SQLClientError) -> Bool {
        let header: PacketHeader?
        do {
            header = try framer.peekHeader()
        } catch where error.code == .limitExceeded {
            throw SQLClientError(.protocolError, "the response is longer than its cap of \(framer.maximumMessageSize ?? 0) "
                                 + "bytes (\(messageCapName))", underlying: error)
        } catch {
            throw SQLClientError.protocolError(error)
        }
        guard let header else { return false }
        guard header.type == .tabularResult else {
            throw SQLClientError(.protocolError, "expected TABULAR_RESULT, got a \(header.type) packet")
        }
        onPacket?(header)
        framer.consumePacket(into: &decoder)
        if header.status.contains(.endOfMessage) { endOfMessagePending = true }
        return true
    }
}

// Shared by the token stream harnesses: decode a stream whole and in chunks, compare.
import TDS

struct StreamResult: Equatable {
    var tokens: [Token] = []
    var error: TDSDecodingError?

    /// Compared field by field (`Token`'s `==`), except that floating-point values are compared
    /// by their bit patterns: a NaN is not `==` to itself, and two decodes of the same bytes must
    /// agree bit for bit (so `-0.0` and `0.0` differ too).
    static func == (a: StreamResult, b: StreamResult) -> Bool {
        a.error == b.error && a.tokens.count == b.tokens.count
            && zip(a.tokens, b.tokens).allSatisfy { sameToken($0, $1) }
    }
}

/// `a == b` with floats compared by bit pattern (a sql_variant's base value included).
func sameValue(_ a: SQLValue, _ b: SQLValue) -> Bool {
    switch (a, b) {
    case let (.real(x), .real(y)): return x.bitPattern == y.bitPattern
    case let (.float(x), .float(y)): return x.bitPattern == y.bitPattern
    case let (.variant(x), .variant(y)): return x.baseType == y.baseType && sameValue(x.value, y.value)
    default: return a == b
    }
}

func sameValues(_ a: [SQLValue], _ b: [SQLValue]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { sameValue($0, $1) }
}

/// `a == b` with the values of rows and return values compared by ``sameValue``: the tokens'
/// other fields (compared with their values cleared, so a field added later is compared too)
/// by `==`.
func sameToken(_ a: Token, _ b: Token) -> Bool {
    switch (a, b) {
    case var (.row(x), .row(y)):
        guard sameValues(x.values, y.values) else { return false }
        x.values = []; y.values = []
        return x == y
    case var (.nbcRow(x), .nbcRow(y)):
        guard sameValues(x.values, y.values) else { return false }
        x.values = []; y.values = []
        return x == y
    case var (.altRow(x), .altRow(y)):
        guard sameValues(x.values, y.values) else { return false }
        x.values = []; y.values = []
        return x == y
    case var (.returnValue(x), .returnValue(y)):
        guard sameValue(x.value, y.value) else { return false }
        x.value = .null; y.value = .null
        return x == y
    default:
        return a == b
    }
}

/// How a pass cuts the stream: pieces of `size` bytes, except that the bytes in `window` arrive
/// one at a time (the last piece ends the message).
struct Cuts {
    var size: Int
    var window: Range<Int> = 0..<0

    func pieceEnd(after i: Int, count: Int) -> Int {
        if window.contains(i) { return i + 1 }
        let end = min(i + max(size, 1), count)
        return i < window.lowerBound && end > window.lowerBound ? window.lowerBound : end
    }
}

/// A decoder that has read `prefix` (a context such as a COLMETADATA). The harnesses make one per
/// context when they start and copy it for each pass: `TokenStreamDecoder` is a value, so a copy
/// goes on exactly as a decoder fed the prefix again would.
func primedDecoder(version: TDSVersion, prefix: [UInt8], columnEncryption: Bool = false) -> TokenStreamDecoder {
    var decoder = TokenStreamDecoder(version: version, options: .init(columnEncryption: columnEncryption))
    guard !prefix.isEmpty else { return decoder }
    decoder.append(prefix)
    do {
        while let t = try decoder.next() { _ = t }
    } catch {
        invariant(false, "the context prefix does not decode: \(error)")
    }
    return decoder
}

/// Appends `stream` in the pieces `cuts` gives (the last piece ends the message), taking tokens
/// after each append, then `finish()`.
func decodeStream(_ stream: [UInt8], from start: TokenStreamDecoder, cuts: Cuts) -> StreamResult {
    var decoder = start
    var result = StreamResult()
    var i = 0
    repeat {
        let end = cuts.pieceEnd(after: i, count: stream.count)
        decoder.append(Array(stream[i..<end]))
        i = end
        do {
            while let t = try decoder.next() { result.tokens.append(t) }
        } catch {
            result.error = error
            return result
        }
    } while i < stream.count
    do {
        try decoder.finish()
    } catch {
        result.error = error
    }
    return result
}

/// `stream` cut into TABULAR_RESULT packets of `packetSize` bytes, the packets' bytes appended to a
/// framer in pieces of `size`, each whole packet's payload handed to the decoder as the connection
/// hands it (``PacketAssembler/consumePacket(into:)``: a large value's bytes read where the packet
/// is), tokens taken after each, then `finish()`.
func decodePackets(_ stream: [UInt8], from start: TokenStreamDecoder, packetSize: Int, size: Int) -> StreamResult {
    var decoder = start
    var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
    var result = StreamResult()
    let packets = Packet.encode(message: stream, type: .tabularResult, packetSize: packetSize)
    var i = 0
    do {
        while i < packets.count {
            let end = min(i + max(size, 1), packets.count)
            framer.append(Array(packets[i..<end]))
            i = end
            while try framer.peekHeader() != nil {
                framer.consumePacket(into: &decoder)
                while let t = try decoder.next() { result.tokens.append(t) }
            }
        }
        try decoder.finish()
    } catch {
        result.error = error
    }
    return result
}

/// At most this many pieces of `chunk` bytes in the chunked pass: a longer stream is cut into
/// ⌈count/256⌉-byte pieces, so a 20,000-byte input costs about 256 appends rather than up to
/// 20,000 (see Fixtures/bad/README.md, "Executions per second").
let maxChunkedPieces = 256
/// Streams up to this long are also decoded byte by byte, whole.
let bytewiseLimit = 512
/// A longer stream is read byte by byte over this many bytes, inside its chunked pass.
let bytewiseWindow = 64

/// Where the byte-by-byte window of a long stream starts: a hash of its length, chunk size and
/// first bytes, so every mutation of an input moves the window and a saved input reproduces.
func windowStart(_ stream: [UInt8], chunk: Int) -> Int {
    let span = stream.count - bytewiseWindow
    guard span > 0 else { return 0 }
    var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(stream.count) ^ UInt64(chunk) << 32
    for b in stream.prefix(64) { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return Int(h % UInt64(span + 1))
}

/// The differential check: whole, in `chunk`-byte pieces, byte by byte and through a framer
/// (``decodePackets(_:from:packetSize:size:)``) give the same tokens and the same error, and the
/// error names an offset inside the stream. A stream of up to 512 bytes is decoded four times
/// (whole, in pieces, byte by byte, through packets); a longer one three times: whole, in pieces
/// of `chunk` bytes (at least ⌈count/256⌉) with 64 bytes at `windowStart` fed one at a time, and
/// through packets. So one input costs at most four decodes and about 768 appends whatever its
/// length.
/// `start` is a decoder that has read `prefixCount` bytes of context (none: a new decoder).
func checkStream(_ stream: [UInt8], from start: TokenStreamDecoder, prefixCount: Int = 0, chunk: Int) {
    let n = stream.count
    let whole = decodeStream(stream, from: start, cuts: Cuts(size: max(n, 1)))
    let size = max(chunk, (n + maxChunkedPieces - 1) / maxChunkedPieces)
    if n <= bytewiseLimit {
        let split = decodeStream(stream, from: start, cuts: Cuts(size: size))
        invariant(whole == split, "whole and \(size)-byte chunks differ: \(whole.error.map { "\($0)" } ?? "no error") vs \(split.error.map { "\($0)" } ?? "no error"), \(whole.tokens.count) vs \(split.tokens.count) tokens")
        let bytewise = decodeStream(stream, from: start, cuts: Cuts(size: 1))
        invariant(whole == bytewise, "whole and byte-by-byte differ")
    } else {
        let w = windowStart(stream, chunk: chunk)
        let window = w..<(w + bytewiseWindow)
        let split = decodeStream(stream, from: start, cuts: Cuts(size: size, window: window))
        invariant(whole == split, "whole and \(size)-byte chunks with bytes \(window) one by one differ: \(whole.error.map { "\($0)" } ?? "no error") vs \(split.error.map { "\($0)" } ?? "no error"), \(whole.tokens.count) vs \(split.tokens.count) tokens")
    }
    // Through a framer: packets of 12 to 264 bytes, their bytes in pieces as the chunked pass cuts.
    let packetSize = 8 + 4 * chunk
    let framed = decodePackets(stream, from: start, packetSize: packetSize, size: size)
    invariant(whole == framed, "whole and through \(packetSize)-byte packets differ: \(whole.error.map { "\($0)" } ?? "no error") vs \(framed.error.map { "\($0)" } ?? "no error"), \(whole.tokens.count) vs \(framed.tokens.count) tokens")
    if let e = whole.error { checkOffset(e, inputCount: n, base: prefixCount) }
}

// Shared by the token stream harnesses: decode a stream whole and in chunks, compare.
import TDS

struct StreamResult: Equatable {
    var tokens: [Token] = []
    var error: TDSDecodingError?

    /// Compared by their text: a NaN float is not equal to itself, but prints the same.
    static func == (a: StreamResult, b: StreamResult) -> Bool {
        a.error == b.error && a.tokens.count == b.tokens.count && "\(a.tokens)" == "\(b.tokens)"
    }
}

/// Appends `stream` in chunks of `chunk` bytes (the last chunk ends the message), taking tokens
/// after each append, then `finish()`.
func decodeStream(_ stream: [UInt8], version: TDSVersion, prefix: [UInt8] = [], chunk: Int,
                  columnEncryption: Bool = false) -> StreamResult {
    var decoder = TokenStreamDecoder(version: version,
                                     options: .init(columnEncryption: columnEncryption))
    var result = StreamResult()
    if !prefix.isEmpty {
        decoder.append(prefix)
        do {
            while let t = try decoder.next() { _ = t }
        } catch {
            invariant(false, "the context prefix does not decode: \(error)")
        }
    }
    var i = 0
    repeat {
        let end = min(i + max(chunk, 1), stream.count)
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

/// The differential check: whole, byte by byte (short inputs) and in `chunk`-byte pieces give
/// the same tokens and the same error, and the error names an offset inside the stream.
func checkStream(_ stream: [UInt8], version: TDSVersion, prefix: [UInt8] = [], chunk: Int,
                 columnEncryption: Bool = false) {
    let whole = decodeStream(stream, version: version, prefix: prefix, chunk: stream.count,
                             columnEncryption: columnEncryption)
    let split = decodeStream(stream, version: version, prefix: prefix, chunk: chunk,
                             columnEncryption: columnEncryption)
    invariant(whole == split, "whole and \(chunk)-byte chunks differ: \(whole.error.map { "\($0)" } ?? "no error") vs \(split.error.map { "\($0)" } ?? "no error"), \(whole.tokens.count) vs \(split.tokens.count) tokens")
    if stream.count <= 512 {
        let bytewise = decodeStream(stream, version: version, prefix: prefix, chunk: 1,
                                    columnEncryption: columnEncryption)
        invariant(whole == bytewise, "whole and byte-by-byte differ")
    }
    if let e = whole.error { checkOffset(e, inputCount: stream.count, base: prefix.count) }
}

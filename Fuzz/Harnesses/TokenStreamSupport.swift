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

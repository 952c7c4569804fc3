// Helpers shared by the token decoders ([MS-TDS] 2.2.7).

extension ByteReader {
    /// Reads a USHORT length and returns a reader over exactly that many following bytes
    /// (the token body), advancing past them. Used by the length-prefixed tokens
    /// ([MS-TDS] 2.2.4.2.1.3 variable-length tokens).
    mutating func tokenBody16() throws(TDSDecodingError) -> ByteReader {
        let length = Int(try readUInt16LE())
        return try subReader(length)
    }

    /// Reads a DWORD length and returns a reader over the body (SESSIONSTATE, FEDAUTHINFO).
    mutating func tokenBody32() throws(TDSDecodingError) -> ByteReader {
        let length = Int(try readUInt32LE())
        return try subReader(length)
    }

    /// Throws `.invalidLength` unless every byte of this (sub-)reader was consumed.
    func requireConsumed(_ what: String) throws(TDSDecodingError) {
        if remaining != 0 {
            throw TDSDecodingError(.invalidLength, offset: absoluteOffset, context: what,
                                   "\(remaining) unexpected byte(s) left in the token")
        }
    }
}

/// Runs `body` on a reader bounded by a token's declared length: any `.truncated` from inside
/// means the declared length is too short for its content, which is `.invalidLength` (the outer
/// reader has already proved the declared bytes are present).
@inline(__always)
func decodeBounded<T>(_ what: String, _ body: () throws(TDSDecodingError) -> T) throws(TDSDecodingError) -> T {
    do throws(TDSDecodingError) {
        return try body()
    } catch {
        var e = error
        if e.code == .truncated {
            e.code = .invalidLength
            e.detail = "the token's declared length ends inside its content (" + e.detail + ")"
        }
        throw e.withContext(what)
    }
}

extension TDSDecodingError {
    /// Returns a copy whose `context` is the token name `name`; an inner context (a type
    /// name such as `INTN`) moves to the front of `detail`.
    func inToken(_ name: String) -> TDSDecodingError {
        var e = self
        if e.context.isEmpty {
            e.context = name
        } else if e.context != name {
            e.detail = e.context + (e.detail.isEmpty ? "" : ": " + e.detail)
            e.context = name
        }
        return e
    }
}

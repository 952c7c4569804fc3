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

/// The names inside a TYPE_INFO (xml: DBNAME, OWNING_SCHEMA, XML_SCHEMA_COLLECTION; UDT: DB_NAME,
/// SCHEMA_NAME, TYPE_NAME, ASSEMBLY_QUALIFIED_NAME; [MS-TDS] 2.2.5.6) checked as they arrive, for
/// the resumable token decoders: while the last name (a US_VARCHAR of up to 128 KiB) arrives, a
/// retry checks only the lengths and the names new since the last try, instead of decoding the
/// earlier ones again with ``TypeInfo/decode(from:version:)``.
struct TypeInfoNames: Sendable {
    /// False: the input is final (a standalone decode), so ``ready(_:)`` is always true.
    let incremental: Bool
    /// Absolute offset up to which the names present were found valid UTF-16.
    private var checkedThrough = 0

    init(incremental: Bool) { self.incremental = incremental }

    /// Whether to decode the TYPE_INFO at `reader` now: true when it is not xml or UDT, when all
    /// its names are present, or when one present is not valid UTF-16 (decoding it then throws
    /// what decoding it whole throws); false while a name is still arriving, all those before it
    /// being valid (decoding it would throw `.truncated`).
    mutating func ready(_ reader: ByteReader) -> Bool {
        guard incremental else { return true }
        var p = reader
        guard let type = try? p.readUInt8() else { return true }
        let lengthSizes: [Int]
        switch TDSDataType(type) {
        case .udt:
            guard p.remaining >= 2 else { return true }
            p.offset += 2   // MAX_BYTE_SIZE
            lengthSizes = [1, 1, 1, 2]
        case .xml:
            guard let present = try? p.readUInt8(), present == 1 else { return true }
            lengthSizes = [1, 1, 2]
        default:
            return true
        }
        for size in lengthSizes {
            guard p.remaining >= size else { return false }
            let characters = size == 1 ? Int(p.bytes[p.offset]) : Int(p.bytes[p.offset]) | Int(p.bytes[p.offset + 1]) << 8
            p.offset += size
            let count = characters * 2
            guard p.remaining >= count else { return false }
            if p.absoluteOffset + count > checkedThrough {
                let valid = p.bytes.withUnsafeBufferPointer { TextCodec.isValidUTF16LE($0, start: p.offset, byteCount: count) }
                guard valid else { return true }
                checkedThrough = p.absoluteOffset + count
            }
            p.offset += count
        }
        return true
    }
}

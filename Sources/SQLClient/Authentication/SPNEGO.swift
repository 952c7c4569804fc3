import TDS

/// The little of SPNEGO ([RFC 4178], DER) that wraps NTLM: a NegTokenInit offering NTLM only with
/// the NEGOTIATE_MESSAGE as its mechToken, and NegTokenResp in both directions.
enum SPNEGO {
    /// 1.3.6.1.5.5.2 (SPNEGO), DER contents.
    static let spnegoOID: [UInt8] = [0x2B, 0x06, 0x01, 0x05, 0x05, 0x02]
    /// 1.3.6.1.4.1.311.2.2.10 (NTLMSSP), DER contents.
    static let ntlmOID: [UInt8] = [0x2B, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0A]
    /// Bounds on a server token (it carries a CHALLENGE_MESSAGE of a few hundred bytes).
    static let maximumTokenLength = 65_535

    /// DER tag, length and contents.
    static func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        let n = contents.count
        var out: [UInt8] = [tag]
        if n < 0x80 {
            out.append(UInt8(n))
        } else if n <= 0xFF {
            out += [0x81, UInt8(n)]
        } else if n <= 0xFFFF {
            out += [0x82, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            out += [0x83, UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        }
        return out + contents
    }

    /// MechTypeList with NTLM only (what the mechListMIC covers).
    static var mechTypeList: [UInt8] { tlv(0x30, tlv(0x06, ntlmOID)) }

    /// GSS-API InitialContextToken [APPLICATION 0] { SPNEGO OID, [0] NegTokenInit { [0] mechTypes, [2] mechToken } }.
    static func negTokenInit(mechToken: [UInt8]) -> [UInt8] {
        let init_ = tlv(0x30, tlv(0xA0, mechTypeList) + tlv(0xA2, tlv(0x04, mechToken)))
        return tlv(0x60, tlv(0x06, spnegoOID) + tlv(0xA0, init_))
    }

    /// [1] NegTokenResp { [2] responseToken, [3] mechListMIC } (the client's second leg).
    static func negTokenResp(responseToken: [UInt8], mechListMIC: [UInt8]?) -> [UInt8] {
        var body = tlv(0xA2, tlv(0x04, responseToken))
        if let mechListMIC { body += tlv(0xA3, tlv(0x04, mechListMIC)) }
        return tlv(0xA1, tlv(0x30, body))
    }

    /// A server's NegTokenResp.
    struct NegTokenResp: Sendable, Equatable {
        enum State: UInt8, Sendable { case acceptCompleted = 0, acceptIncomplete = 1, reject = 2, requestMIC = 3 }
        var state: State?
        var supportedMech: [UInt8]?
        var responseToken: [UInt8]?
        var mechListMIC: [UInt8]?

        /// - Throws: ``SQLClientError`` `.protocolError` for malformed DER (lengths are checked
        ///   against the token before use) or a mechanism other than NTLM.
        static func decode(_ bytes: [UInt8]) throws(SQLClientError) -> NegTokenResp {
            guard bytes.count <= SPNEGO.maximumTokenLength else {
                throw SQLClientError(.protocolError, "the SPNEGO token is \(bytes.count) bytes (at most \(SPNEGO.maximumTokenLength))")
            }
            var outer = DERReader(bytes: bytes, range: 0 ..< bytes.count)
            let resp = try outer.expect(0xA1, "NegTokenResp")
            var seqReader = DERReader(bytes: bytes, range: resp)
            let seq = try seqReader.expect(0x30, "NegTokenResp SEQUENCE")
            var fields = DERReader(bytes: bytes, range: seq)
            var result = NegTokenResp()
            while !fields.isAtEnd {
                let (tag, range) = try fields.next()
                var inner = DERReader(bytes: bytes, range: range)
                switch tag {
                case 0xA0:
                    let e = try inner.expect(0x0A, "negState")
                    guard e.count == 1, let s = State(rawValue: bytes[e.lowerBound]) else {
                        throw SQLClientError(.protocolError, "SPNEGO negState is malformed (offset \(e.lowerBound))")
                    }
                    result.state = s
                case 0xA1:
                    let oid = Array(bytes[try inner.expect(0x06, "supportedMech")])
                    guard oid == SPNEGO.ntlmOID else {
                        throw SQLClientError(.protocolError, "the server chose a SPNEGO mechanism other than NTLM")
                    }
                    result.supportedMech = oid
                case 0xA2:
                    result.responseToken = Array(bytes[try inner.expect(0x04, "responseToken")])
                case 0xA3:
                    result.mechListMIC = Array(bytes[try inner.expect(0x04, "mechListMIC")])
                default:
                    continue
                }
            }
            return result
        }
    }

    /// Reads DER elements inside `range` of `bytes`, checking every length against the range.
    struct DERReader {
        let bytes: [UInt8]
        var offset: Int
        let end: Int
        init(bytes: [UInt8], range: Range<Int>) {
            self.bytes = bytes
            self.offset = range.lowerBound
            self.end = range.upperBound
        }
        var isAtEnd: Bool { offset >= end }

        /// The next element's tag and the range of its contents.
        mutating func next() throws(SQLClientError) -> (UInt8, Range<Int>) {
            let at = offset
            guard end - offset >= 2 else { throw malformed(at, "element header") }
            let tag = bytes[offset]
            var length = Int(bytes[offset + 1])
            offset += 2
            if length >= 0x80 {
                let count = length & 0x7F
                guard count >= 1, count <= 3, end - offset >= count else { throw malformed(at, "length") }
                length = 0
                for _ in 0 ..< count { length = length << 8 | Int(bytes[offset]); offset += 1 }
            }
            guard length <= end - offset else { throw malformed(at, "a \(length)-byte element past the end") }
            let range = offset ..< offset + length
            offset += length
            return (tag, range)
        }

        mutating func expect(_ tag: UInt8, _ what: String) throws(SQLClientError) -> Range<Int> {
            let at = offset
            let (t, range) = try next()
            guard t == tag else { throw malformed(at, "\(what): tag 0x\(String(t, radix: 16)), expected 0x\(String(tag, radix: 16))") }
            return range
        }

        private func malformed(_ at: Int, _ what: String) -> SQLClientError {
            SQLClientError(.protocolError, "the server's SPNEGO token is malformed at offset \(at): \(what)")
        }
    }
}

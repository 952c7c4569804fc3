import TDS

/// A TDS version inferred for one conversation, and why.
public struct InferredTDSVersion: Sendable, Hashable, CustomStringConvertible {
    public var version: TDSVersion
    /// What decided it: "LOGINACK", "LOGIN7", "4-byte DONE row counts", "ALL_HEADERS", "--tds-version", "default".
    public var evidence: String
    public init(version: TDSVersion, evidence: String) {
        self.version = version
        self.evidence = evidence
    }
    public var description: String { "\(version) (\(evidence))" }
}

/// Infers the TDS version of a conversation from what its messages hold.
///
/// In order of authority: the server's LOGINACK ([MS-TDS] 2.2.7.14), the client's LOGIN7
/// TDSVersion ([MS-TDS] 2.2.6.4), server messages made only of DONE/DONEPROC/DONEINPROC tokens
/// whose size shows 4-byte (7.0/7.1) or 8-byte (7.2+) row counts ([MS-TDS] 2.2.7.6), and
/// requests that start with ALL_HEADERS (7.2+) or not (7.1) ([MS-TDS] 2.2.5.3). With no
/// evidence at all the answer is 7.4.
public enum TDSVersionInference {
    public static func infer(_ messages: [CapturedMessage]) -> InferredTDSVersion {
        for m in messages where m.direction == .server {
            if let message = m.message, message.type == .tabularResult, let v = loginAckVersion(message.payload) {
                return InferredTDSVersion(version: v, evidence: "LOGINACK")
            }
        }
        for m in messages where m.direction == .client {
            if let message = m.message, message.type == .login7, message.payload.count >= 8 {
                var r = ByteReader(message.payload, start: 4)
                if let raw = try? r.readUInt32LE() {
                    let v = TDSVersion(rawValue: raw)
                    if (0x70...0x74).contains(v.generation) { return InferredTDSVersion(version: v, evidence: "LOGIN7") }
                }
            }
        }
        var sawShort = false, sawLong = false
        for m in messages where m.direction == .server {
            guard let message = m.message, message.type == .tabularResult else { continue }
            switch doneOnlyRowCountWidth(message.payload) {
            case 4: sawShort = true
            case 8: sawLong = true
            default: break
            }
        }
        if sawShort && !sawLong { return InferredTDSVersion(version: .v7_1_1, evidence: "4-byte DONE row counts") }
        if sawLong && !sawShort { return InferredTDSVersion(version: .v7_4, evidence: "8-byte DONE row counts") }
        var withHeaders = 0, without = 0
        for m in messages where m.direction == .client {
            guard let message = m.message, message.type == .sqlBatch || message.type == .rpc else { continue }
            if startsWithAllHeaders(message.payload) { withHeaders += 1 } else { without += 1 }
        }
        if withHeaders > 0 { return InferredTDSVersion(version: .v7_4, evidence: "ALL_HEADERS") }
        if without > 0 { return InferredTDSVersion(version: .v7_1_1, evidence: "requests without ALL_HEADERS") }
        return InferredTDSVersion(version: .v7_4, evidence: "default")
    }

    /// True when `body` starts with a well-formed ALL_HEADERS block ([MS-TDS] 2.2.5.3): a
    /// 4-byte total length, then headers of 4-byte length and 2-byte type (1, 2 or 3) that add
    /// up to exactly the total.
    public static func startsWithAllHeaders(_ body: [UInt8]) -> Bool {
        var r = ByteReader(body)
        guard let total = try? r.readUInt32LE(), total >= 4, Int(total) <= body.count else { return false }
        var consumed = 4
        while consumed < Int(total) {
            guard let length = try? r.readUInt32LE(), let type = try? r.readUInt16LE(),
                  length >= 6, (1...3).contains(type), Int(length) <= Int(total) - consumed else { return false }
            consumed += Int(length)
            guard (try? r.skip(Int(length) - 6)) != nil else { return false }
        }
        return consumed == Int(total) && total > 4
    }

    /// When a TABULAR_RESULT payload is nothing but DONE-family tokens, the width of their row
    /// counts: 4 (9-byte tokens) or 8 (13-byte tokens); nil otherwise or when both fit.
    public static func doneOnlyRowCountWidth(_ payload: [UInt8]) -> Int? {
        func fits(_ size: Int) -> Bool {
            guard !payload.isEmpty, payload.count % size == 0 else { return false }
            var p = 0
            while p < payload.count {
                guard payload[p] == 0xFD || payload[p] == 0xFE || payload[p] == 0xFF else { return false }
                p += size
            }
            // The last token must not announce more results.
            return payload[payload.count - size + 1] & 0x01 == 0
        }
        let short = fits(9), long = fits(13)
        if short == long { return nil }
        return short ? 4 : 8
    }

    /// The TDS version of the LOGINACK in a login response, found by walking the
    /// length-prefixed tokens that precede it (ENVCHANGE, INFO, ERROR, SSPI, FEDAUTHINFO,
    /// SESSIONSTATE).
    public static func loginAckVersion(_ payload: [UInt8]) -> TDSVersion? {
        var r = ByteReader(payload)
        while !r.isAtEnd {
            guard let token = try? r.readUInt8() else { return nil }
            switch token {
            case TokenType.loginAck.rawValue:
                guard let ack = try? LoginAck.decode(from: &r) else { return nil }
                return ack.tdsVersion
            case 0xE3, 0xAB, 0xAA, 0xED:
                guard let length = try? r.readUInt16LE(), (try? r.skip(Int(length))) != nil else { return nil }
            case 0xE4, 0xEE:
                guard let length = try? r.readUInt32LE(), length <= UInt32(Int32.max), (try? r.skip(Int(length))) != nil else { return nil }
            default:
                return nil
            }
        }
        return nil
    }
}

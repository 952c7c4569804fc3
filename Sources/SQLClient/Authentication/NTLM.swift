import Foundation
import TDS

/// A Windows account used for NTLM (Windows authentication with a user name, a domain and a
/// password, from any platform).
///
/// The client sends NTLMSSP messages ([MS-NLMP] 2.2.1) inside TDS SSPI exchanges ([MS-TDS]
/// 2.2.6.4 LOGIN7 SSPI, 2.2.6.8 SSPI message, 2.2.7.22 SSPI token) and answers the server's
/// challenge with an NTLMv2 response ([MS-NLMP] 3.3.2). Kerberos is not supported.
///
/// The password is a `RedactedPassword`: never printed.
public struct NTLMCredentials: Sendable, Hashable, CustomStringConvertible {
    /// How the NTLM messages travel in the SSPI data.
    public enum Wrapping: String, Sendable, Hashable {
        /// Bare NTLMSSP messages (the default, as go-mssqldb and FreeTDS send them: the client's first
        /// message chooses the mechanism).
        case raw
        /// Inside SPNEGO ([RFC 4178]) NegTokenInit / NegTokenResp, offering NTLM only.
        case spnego
    }

    /// The domain (or the machine, for a local account), as the server knows it; may be empty.
    public var domain: String
    /// The account name (without the domain).
    public var user: String
    /// The account's password (never printed).
    public var password: RedactedPassword
    /// The workstation name sent in AUTHENTICATE_MESSAGE; nil sends none.
    public var workstation: String?
    /// How the NTLM messages travel in the SSPI payload (raw, or wrapped as SPNEGO).
    public var wrapping: Wrapping

    /// Credentials for NTLM; the password is kept only to compute the response.
    public init(domain: String, user: String, password: String, workstation: String? = nil, wrapping: Wrapping = .raw) {
        self.domain = domain
        self.user = user
        self.password = RedactedPassword(password)
        self.workstation = workstation
        self.wrapping = wrapping
    }

    /// From a user written `DOMAIN\user` (the form SQL Server shows for Windows logins). A user without
    /// a backslash (for example a UPN `user@example.com`) keeps an empty domain.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` when the domain or the user part is empty.
    public init(qualifiedUser: String, password: String, wrapping: Wrapping = .raw) throws(SQLClientError) {
        if let slash = qualifiedUser.firstIndex(of: "\\") {
            let domain = String(qualifiedUser[..<slash])
            let user = String(qualifiedUser[qualifiedUser.index(after: slash)...])
            guard !domain.isEmpty, !user.isEmpty, !user.contains("\\") else {
                throw SQLClientError(.invalidConfiguration, "a Windows user must be written DOMAIN\\user")
            }
            self.init(domain: domain, user: user, password: password, wrapping: wrapping)
        } else {
            guard !qualifiedUser.isEmpty else {
                throw SQLClientError(.invalidConfiguration, "NTLM needs a user name")
            }
            self.init(domain: "", user: qualifiedUser, password: password, wrapping: wrapping)
        }
    }

    /// `DOMAIN\user`, never the password.
    public var description: String { domain.isEmpty ? user : domain + "\\" + user }
}

/// NTLMSSP messages and the NTLMv2 computations of [MS-NLMP] (sections 2.2.1, 2.2.2, 3.3.2).
/// Only the client side: NEGOTIATE_MESSAGE out, CHALLENGE_MESSAGE in, AUTHENTICATE_MESSAGE out.
enum NTLM {
    /// [MS-NLMP] 2.2.2.5 NEGOTIATE flags (the subset this client uses or reads).
    struct Flags: OptionSet, Hashable, Sendable {
        let rawValue: UInt32
        static let unicode = Flags(rawValue: 0x0000_0001)
        static let oem = Flags(rawValue: 0x0000_0002)
        static let requestTarget = Flags(rawValue: 0x0000_0004)
        static let sign = Flags(rawValue: 0x0000_0010)
        static let ntlm = Flags(rawValue: 0x0000_0200)
        static let alwaysSign = Flags(rawValue: 0x0000_8000)
        static let extendedSessionSecurity = Flags(rawValue: 0x0008_0000)
        static let targetInfo = Flags(rawValue: 0x0080_0000)
        static let version = Flags(rawValue: 0x0200_0000)
        static let use128 = Flags(rawValue: 0x2000_0000)
        static let keyExchange = Flags(rawValue: 0x4000_0000)
        static let use56 = Flags(rawValue: 0x8000_0000)

        /// What this client asks for: Unicode, NTLM with extended session security, target info,
        /// version; no signing, sealing or key exchange (TDS protects the session with TLS, not NTLM).
        static let client: Flags = [.unicode, .requestTarget, .ntlm, .alwaysSign, .extendedSessionSecurity,
                                    .targetInfo, .version, .use128, .use56]
    }

    /// [MS-NLMP] 2.2.2.1 AV_PAIR ids.
    enum AVID {
        static let eol: UInt16 = 0
        static let nbComputerName: UInt16 = 1
        static let nbDomainName: UInt16 = 2
        static let flags: UInt16 = 6
        static let timestamp: UInt16 = 7
    }

    /// One AV_PAIR of a TargetInfo list.
    struct AVPair: Hashable, Sendable {
        var id: UInt16
        var value: [UInt8]
    }

    static let signature: [UInt8] = Array("NTLMSSP".utf8) + [0]
    /// The 8-byte VERSION this client sends ([MS-NLMP] 2.2.2.10; informational): 10.0.0, NTLMSSP_REVISION_W2K3.
    static let clientVersion: [UInt8] = [10, 0, 0, 0, 0, 0, 0, 0x0F]
    /// MsvAvFlags bit 0x2: the AUTHENTICATE_MESSAGE carries a MIC.
    static let micPresentFlag: UInt32 = 0x0000_0002
    /// Bounds on what a server may send (a CHALLENGE_MESSAGE is a few hundred bytes).
    static let maximumChallengeLength = 65_535

    /// [MS-NLMP] 2.2.1.1 NEGOTIATE_MESSAGE with no domain or workstation supplied.
    static func negotiateMessage(flags: Flags = .client) -> [UInt8] {
        var w = ByteWriter(capacity: 40)
        w.writeBytes(signature)
        w.writeUInt32LE(1)
        w.writeUInt32LE(flags.rawValue)
        w.writeBytes([UInt8](repeating: 0, count: 16))   // DomainNameFields, WorkstationFields
        w.writeBytes(clientVersion)
        return w.bytes
    }

    /// [MS-NLMP] 2.2.1.2 CHALLENGE_MESSAGE, as far as the client needs it.
    struct Challenge: Sendable {
        var flags: Flags
        var serverChallenge: [UInt8]
        var targetInfo: [AVPair]
        /// The message as received (it is part of the MIC).
        var bytes: [UInt8]

        /// The server's MsvAvTimestamp (FILETIME), when present.
        var timestamp: UInt64? {
            guard let v = targetInfo.first(where: { $0.id == AVID.timestamp })?.value, v.count == 8 else { return nil }
            var r = ByteReader(v)
            return try? r.readUInt64LE()
        }

        /// Decodes a CHALLENGE_MESSAGE.
        /// - Throws: ``SQLClientError`` `.protocolError` for a message that is not one, is truncated, or
        ///   points outside itself (the offset is named).
        static func decode(_ bytes: [UInt8]) throws(SQLClientError) -> Challenge {
            guard bytes.count <= NTLM.maximumChallengeLength else {
                throw SQLClientError(.protocolError, "the NTLM challenge is \(bytes.count) bytes (at most \(NTLM.maximumChallengeLength))")
            }
            do throws(TDSDecodingError) {
                var r = ByteReader(bytes)
                guard try r.readBytes(8) == NTLM.signature else {
                    throw r.error(.invalidValue, at: 0, "not an NTLMSSP message")
                }
                let type = try r.readUInt32LE()
                guard type == 2 else { throw r.error(.invalidValue, at: 8, "NTLM message type \(type), expected 2 (CHALLENGE)") }
                _ = try Self.field(&r, in: bytes, "TargetName")
                let flags = Flags(rawValue: try r.readUInt32LE())
                let serverChallenge = try r.readBytes(8)
                try r.skip(8)   // Reserved
                var info: [AVPair] = []
                if r.remaining >= 8 {
                    let raw = try Self.field(&r, in: bytes, "TargetInfo")
                    info = try Self.avPairs(raw)
                }
                return Challenge(flags: flags, serverChallenge: serverChallenge, targetInfo: info, bytes: bytes)
            } catch {
                throw SQLClientError(.protocolError, "the server's NTLM challenge is malformed: \(error)", underlying: error)
            }
        }

        /// A (Len, MaxLen, BufferOffset) field and the bytes it points to.
        private static func field(_ r: inout ByteReader, in bytes: [UInt8], _ name: String) throws(TDSDecodingError) -> [UInt8] {
            let at = r.offset
            let length = Int(try r.readUInt16LE())
            _ = try r.readUInt16LE()
            let offset = Int(try r.readUInt32LE())
            guard length == 0 || (offset <= bytes.count && length <= bytes.count - offset) else {
                throw r.error(.invalidLength, at: at, "\(name) (offset \(offset), \(length) bytes) lies outside the \(bytes.count)-byte message")
            }
            return length == 0 ? [] : Array(bytes[offset ..< offset + length])
        }

        /// [MS-NLMP] 2.2.2.1 AV_PAIR list up to MsvAvEOL.
        static func avPairs(_ bytes: [UInt8]) throws(TDSDecodingError) -> [AVPair] {
            var r = ByteReader(bytes)
            var pairs: [AVPair] = []
            while !r.isAtEnd {
                let id = try r.readUInt16LE()
                let length = Int(try r.readUInt16LE())
                if id == AVID.eol { break }
                pairs.append(AVPair(id: id, value: try r.readBytes(length)))
            }
            return pairs
        }
    }

    /// UTF-16LE bytes of `text`.
    static func utf16(_ text: String) -> [UInt8] {
        var w = ByteWriter(capacity: text.utf16.count * 2)
        w.writeUTF16LE(text)
        return w.bytes
    }

    /// [MS-NLMP] 3.3.2 NTOWFv2: HMAC_MD5(MD4(UNICODE(password)), UNICODE(Uppercase(user) + domain)).
    static func ntowfv2(password: String, user: String, domain: String) throws(SQLClientError) -> [UInt8] {
        try NTLMCrypto.hmacMD5(key: try NTLMCrypto.md4(utf16(password)), utf16(user.uppercased() + domain))
    }

    /// The result of [MS-NLMP] 3.3.2 ComputeResponse for NTLMv2.
    struct Responses: Sendable {
        var ntChallengeResponse: [UInt8]
        var lmChallengeResponse: [UInt8]
        var ntProofStr: [UInt8]
        var sessionBaseKey: [UInt8]
    }

    /// NTLMv2 responses ([MS-NLMP] 3.3.2): `temp` = 0x01 0x01, Z(6), `time`, the client challenge,
    /// Z(4), `targetInfo` (AV pairs with their EOL), Z(4); NTProofStr = HMAC_MD5(key, server challenge + temp).
    /// `zeroLM`: send Z(24) as LmChallengeResponse (when the server sent a timestamp).
    static func responses(responseKey key: [UInt8], serverChallenge: [UInt8], clientChallenge: [UInt8],
                          time: UInt64, targetInfo: [UInt8], zeroLM: Bool) throws(SQLClientError) -> Responses {
        var temp = ByteWriter(capacity: 32 + targetInfo.count)
        temp.writeBytes([1, 1, 0, 0, 0, 0, 0, 0])
        temp.writeUInt64LE(time)
        temp.writeBytes(clientChallenge)
        temp.writeBytes([0, 0, 0, 0])
        temp.writeBytes(targetInfo)
        temp.writeBytes([0, 0, 0, 0])
        let proof = try NTLMCrypto.hmacMD5(key: key, serverChallenge + temp.bytes)
        let lm = zeroLM ? [UInt8](repeating: 0, count: 24)
            : try NTLMCrypto.hmacMD5(key: key, serverChallenge + clientChallenge) + clientChallenge
        return Responses(ntChallengeResponse: proof + temp.bytes, lmChallengeResponse: lm, ntProofStr: proof,
                         sessionBaseKey: try NTLMCrypto.hmacMD5(key: key, proof))
    }

    /// Encodes an AV_PAIR list, ending with MsvAvEOL.
    static func encode(_ pairs: [AVPair]) -> [UInt8] {
        var w = ByteWriter()
        for p in pairs {
            w.writeUInt16LE(p.id)
            w.writeUInt16LE(UInt16(truncatingIfNeeded: p.value.count))
            w.writeBytes(p.value)
        }
        w.writeUInt32LE(0)
        return w.bytes
    }

    /// [MS-NLMP] 2.2.1.3 AUTHENTICATE_MESSAGE with VERSION and a MIC field (zero; set by the caller).
    /// The MIC sits at offset 72.
    static func authenticateMessage(flags: Flags, lm: [UInt8], nt: [UInt8], domain: String, user: String,
                                    workstation: String) -> [UInt8] {
        let fields = [utf16(domain), utf16(user), utf16(workstation), lm, nt, []]
        var header = ByteWriter(capacity: 88)
        var payload = ByteWriter()
        let headerLength = 88
        var offsets: [Int] = []
        for f in fields {
            offsets.append(headerLength + payload.count)
            payload.writeBytes(f)
        }
        header.writeBytes(signature)
        header.writeUInt32LE(3)
        // Wire order: LmChallengeResponse, NtChallengeResponse, DomainName, UserName, Workstation, EncryptedRandomSessionKey.
        for i in [3, 4, 0, 1, 2, 5] {
            header.writeUInt16LE(UInt16(truncatingIfNeeded: fields[i].count))
            header.writeUInt16LE(UInt16(truncatingIfNeeded: fields[i].count))
            header.writeUInt32LE(UInt32(truncatingIfNeeded: offsets[i]))
        }
        header.writeUInt32LE(flags.rawValue)
        header.writeBytes(clientVersion)
        header.writeBytes([UInt8](repeating: 0, count: 16))   // MIC
        return header.bytes + payload.bytes
    }

    /// The current time as a Windows FILETIME (100 ns since 1601-01-01 UTC).
    static func fileTimeNow() -> UInt64 {
        let seconds = Date().timeIntervalSince1970
        return UInt64(max(0, (seconds + 11_644_473_600) * 10_000_000))
    }
}

/// One NTLMv2 client exchange for one login: the initial token for LOGIN7's SSPI field, then the
/// answer to the server's challenge (the SSPI message, packet type 0x11).
struct NTLMAuthenticator: Sendable {
    let credentials: NTLMCredentials
    private let negotiate: [UInt8]
    private var answered = false
    /// Fixed in tests ([MS-NLMP] 4.2.4 vectors); random otherwise.
    private let fixedClientChallenge: [UInt8]?
    private let fixedTime: UInt64?

    init(credentials: NTLMCredentials, clientChallenge: [UInt8]? = nil, time: UInt64? = nil) {
        self.credentials = credentials
        self.negotiate = NTLM.negotiateMessage()
        self.fixedClientChallenge = clientChallenge
        self.fixedTime = time
    }

    /// The client's first token: NEGOTIATE_MESSAGE, bare or in a SPNEGO NegTokenInit.
    var initialToken: [UInt8] {
        credentials.wrapping == .spnego ? SPNEGO.negTokenInit(mechToken: negotiate) : negotiate
    }

    /// Answers the server's SSPI token (a CHALLENGE_MESSAGE, bare or in a SPNEGO NegTokenResp) with an
    /// AUTHENTICATE_MESSAGE carrying the NTLMv2 response and a MIC.
    /// - Throws: ``SQLClientError`` `.protocolError` for a malformed or second challenge, or a SPNEGO
    ///   answer that rejects NTLM; `.unsupported` without MD4.
    mutating func respond(to token: [UInt8]) throws(SQLClientError) -> [UInt8] {
        guard !answered else {
            throw SQLClientError(.protocolError, "the server sent a second SSPI challenge; NTLM has only one")
        }
        answered = true
        let challengeBytes: [UInt8]
        let spnego = token.first == 0xA1
        if spnego {
            let response = try SPNEGO.NegTokenResp.decode(token)
            if response.state == .reject {
                throw SQLClientError(.loginFailed, "the server rejected NTLM in SPNEGO")
            }
            guard let inner = response.responseToken else {
                throw SQLClientError(.protocolError, "the server's SPNEGO answer carries no NTLM challenge")
            }
            challengeBytes = inner
        } else {
            challengeBytes = token
        }
        let challenge = try NTLM.Challenge.decode(challengeBytes)
        guard challenge.flags.contains(.unicode) else {
            throw SQLClientError(.protocolError, "the server's NTLM challenge does not allow Unicode")
        }
        let timestamp = challenge.timestamp
        var pairs = challenge.targetInfo
        // With a server timestamp the client MUST send a MIC and say so in MsvAvFlags ([MS-NLMP] 3.1.5.1.2).
        let withMIC = timestamp != nil
        if withMIC {
            if let i = pairs.firstIndex(where: { $0.id == NTLM.AVID.flags }), pairs[i].value.count == 4 {
                var r = ByteReader(pairs[i].value)
                let value = ((try? r.readUInt32LE()) ?? 0) | NTLM.micPresentFlag
                var w = ByteWriter(); w.writeUInt32LE(value)
                pairs[i].value = w.bytes
            } else {
                var w = ByteWriter(); w.writeUInt32LE(NTLM.micPresentFlag)
                pairs.append(NTLM.AVPair(id: NTLM.AVID.flags, value: w.bytes))
            }
        }
        let key = try NTLM.ntowfv2(password: credentials.password.reveal(), user: credentials.user,
                                   domain: credentials.domain)
        let clientChallenge: [UInt8]
        if let fixedClientChallenge { clientChallenge = fixedClientChallenge } else { clientChallenge = try NTLMCrypto.randomBytes(8) }
        let r = try NTLM.responses(responseKey: key, serverChallenge: challenge.serverChallenge,
                                   clientChallenge: clientChallenge, time: fixedTime ?? timestamp ?? NTLM.fileTimeNow(),
                                   targetInfo: NTLM.encode(pairs), zeroLM: timestamp != nil)
        let flags = NTLM.Flags(rawValue: challenge.flags.rawValue & NTLM.Flags.client.rawValue).union(.unicode)
        var message = NTLM.authenticateMessage(flags: flags, lm: r.lmChallengeResponse, nt: r.ntChallengeResponse,
                                               domain: credentials.domain, user: credentials.user,
                                               workstation: credentials.workstation ?? "")
        if withMIC {
            // No key exchange: ExportedSessionKey = KeyExchangeKey = SessionBaseKey ([MS-NLMP] 3.4.5.1).
            let mic = try NTLMCrypto.hmacMD5(key: r.sessionBaseKey, negotiate + challenge.bytes + message)
            message.replaceSubrange(72 ..< 88, with: mic)
        }
        guard spnego || credentials.wrapping == .spnego else { return message }
        // Without NTLMSSP_NEGOTIATE_SIGN the NTLM signature is the fixed 01 00…00 ([MS-NLMP] 3.4.4).
        return SPNEGO.negTokenResp(responseToken: message, mechListMIC: withMIC ? [1] + [UInt8](repeating: 0, count: 15) : nil)
    }
}

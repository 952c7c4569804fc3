import Foundation
import XCTest
import TDS
@testable import SQLClient

/// NTLMSSP messages and NTLMv2 ([MS-NLMP]): the specification's test vectors (4.2.4), the shape
/// of AUTHENTICATE_MESSAGE and its MIC, hostile challenges, and pyspnego's acceptor.
final class NTLMTests: XCTestCase {
    // [MS-NLMP] 4.2.1 common values and 4.2.4 NTLMv2 results.
    let serverChallenge: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]
    let clientChallenge = [UInt8](repeating: 0xAA, count: 8)

    func hex(_ s: String) -> [UInt8] {
        let digits = Array(s.replacingOccurrences(of: " ", with: ""))
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0 ... $0 + 1]), radix: 16)! }
    }

    /// The 4.2.4 TargetInfo: MsvAvNbDomainName "Domain", MsvAvNbComputerName "Server", MsvAvEOL.
    var specTargetInfo: [UInt8] {
        NTLM.encode([NTLM.AVPair(id: 2, value: NTLM.utf16("Domain")), NTLM.AVPair(id: 1, value: NTLM.utf16("Server"))])
    }

    func testNTOWFv2MatchesTheSpecificationVector() throws {
        XCTAssertEqual(try NTLM.ntowfv2(password: "Password", user: "User", domain: "Domain"),
                       hex("0c868a403bfd7a93a3001ef22ef02e3f"))
        // The user name is upper-cased, the domain is not.
        XCTAssertEqual(try NTLM.ntowfv2(password: "Password", user: "user", domain: "Domain"),
                       hex("0c868a403bfd7a93a3001ef22ef02e3f"))
        XCTAssertNotEqual(try NTLM.ntowfv2(password: "Password", user: "User", domain: "DOMAIN"),
                          hex("0c868a403bfd7a93a3001ef22ef02e3f"))
    }

    func testNTLMv2ResponsesMatchTheSpecificationVectors() throws {
        let key = try NTLM.ntowfv2(password: "Password", user: "User", domain: "Domain")
        let r = try NTLM.responses(responseKey: key, serverChallenge: serverChallenge, clientChallenge: clientChallenge,
                                   time: 0, targetInfo: specTargetInfo, zeroLM: false)
        XCTAssertEqual(r.lmChallengeResponse, hex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa"))
        XCTAssertEqual(r.ntProofStr, hex("68cd0ab851e51c96aabc927bebef6a1c"))
        XCTAssertEqual(r.sessionBaseKey, hex("8de40ccadbc14a82f15cb0ad0de95ca3"))
        XCTAssertEqual(Array(r.ntChallengeResponse.prefix(16)), r.ntProofStr)
        // temp: 01 01, Z(6), time, client challenge, Z(4), AV pairs, Z(4).
        XCTAssertEqual(Array(r.ntChallengeResponse[16 ..< 24]), [1, 1, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(Array(r.ntChallengeResponse[32 ..< 40]), clientChallenge)
        XCTAssertEqual(r.ntChallengeResponse.count, 16 + 28 + specTargetInfo.count + 4)
        let zero = try NTLM.responses(responseKey: key, serverChallenge: serverChallenge, clientChallenge: clientChallenge,
                                      time: 0, targetInfo: specTargetInfo, zeroLM: true)
        XCTAssertEqual(zero.lmChallengeResponse, [UInt8](repeating: 0, count: 24))
    }

    /// A CHALLENGE_MESSAGE as a server would send it (Unicode, target info with a timestamp).
    func challenge(timestamp: UInt64? = 0x01D0_0000_0000_0000, flags: NTLM.Flags = .client) -> [UInt8] {
        var pairs = [NTLM.AVPair(id: 2, value: NTLM.utf16("Domain")), NTLM.AVPair(id: 1, value: NTLM.utf16("Server"))]
        if let timestamp {
            var w = ByteWriter(); w.writeUInt64LE(timestamp)
            pairs.append(NTLM.AVPair(id: 7, value: w.bytes))
        }
        let info = NTLM.encode(pairs)
        let name = NTLM.utf16("Server")
        var w = ByteWriter()
        w.writeBytes(NTLM.signature)
        w.writeUInt32LE(2)
        w.writeUInt16LE(UInt16(name.count)); w.writeUInt16LE(UInt16(name.count)); w.writeUInt32LE(56)
        w.writeUInt32LE(flags.rawValue)
        w.writeBytes(serverChallenge)
        w.writeBytes([UInt8](repeating: 0, count: 8))
        w.writeUInt16LE(UInt16(info.count)); w.writeUInt16LE(UInt16(info.count)); w.writeUInt32LE(UInt32(56 + name.count))
        w.writeBytes(NTLM.clientVersion)
        w.writeBytes(name)
        w.writeBytes(info)
        return w.bytes
    }

    /// The payload a (Len, MaxLen, Offset) field at `at` of `message` points to.
    func field(_ message: [UInt8], at: Int) -> [UInt8] {
        var r = ByteReader(message, start: at)
        let length = Int(try! r.readUInt16LE()); _ = try! r.readUInt16LE()
        let offset = Int(try! r.readUInt32LE())
        return Array(message[offset ..< offset + length])
    }

    func testAuthenticateMessageCarriesTheResponsesAndAVerifiableMIC() throws {
        let credentials = NTLMCredentials(domain: "Domain", user: "User", password: "Password", workstation: "COMPUTER")
        var client = NTLMAuthenticator(credentials: credentials, clientChallenge: clientChallenge)
        let negotiate = client.initialToken
        XCTAssertEqual(Array(negotiate.prefix(8)), Array("NTLMSSP\0".utf8))
        XCTAssertEqual(negotiate[8], 1)
        let challengeBytes = challenge()
        let message = try client.respond(to: challengeBytes)
        XCTAssertEqual(Array(message.prefix(12)), Array("NTLMSSP\0".utf8) + [3, 0, 0, 0])
        XCTAssertEqual(field(message, at: 28), NTLM.utf16("Domain"))
        XCTAssertEqual(field(message, at: 36), NTLM.utf16("User"))
        XCTAssertEqual(field(message, at: 44), NTLM.utf16("COMPUTER"))
        // A timestamp from the server: LmChallengeResponse is Z(24), the time is the server's.
        XCTAssertEqual(field(message, at: 12), [UInt8](repeating: 0, count: 24))
        let nt = field(message, at: 20)
        var t = ByteReader(nt, start: 24)
        XCTAssertEqual(try t.readUInt64LE(), 0x01D0_0000_0000_0000)
        // The AV pairs sent add MsvAvFlags with the MIC bit.
        let sentPairs = try NTLM.Challenge.avPairs(Array(nt[44...]))
        XCTAssertEqual(sentPairs.first { $0.id == 6 }?.value, [2, 0, 0, 0])
        // Recompute NTProofStr and the MIC independently of the authenticator.
        let key = try NTLM.ntowfv2(password: "Password", user: "User", domain: "Domain")
        let proof = try NTLMCrypto.hmacMD5(key: key, serverChallenge + Array(nt[16...]))
        XCTAssertEqual(Array(nt.prefix(16)), proof)
        var zeroed = message
        zeroed.replaceSubrange(72 ..< 88, with: [UInt8](repeating: 0, count: 16))
        let mic = try NTLMCrypto.hmacMD5(key: try NTLMCrypto.hmacMD5(key: key, proof), negotiate + challengeBytes + zeroed)
        XCTAssertEqual(Array(message[72 ..< 88]), mic)
        // No key exchange, no signing: the flags never ask for them.
        var f = ByteReader(message, start: 60)
        let flags = NTLM.Flags(rawValue: try f.readUInt32LE())
        XCTAssertFalse(flags.contains(.keyExchange))
        XCTAssertFalse(flags.contains(.sign))
        XCTAssertTrue(flags.contains(.unicode))
        // Only one challenge per exchange.
        XCTAssertThrowsError(try client.respond(to: challengeBytes)) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .protocolError)
        }
    }

    func testWithoutAServerTimestampTheLMv2ResponseIsSentAndNoMIC() throws {
        let credentials = NTLMCredentials(domain: "Domain", user: "User", password: "Password")
        var client = NTLMAuthenticator(credentials: credentials, clientChallenge: clientChallenge, time: 0)
        let message = try client.respond(to: challenge(timestamp: nil))
        XCTAssertEqual(field(message, at: 12), hex("86c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa"))
        XCTAssertEqual(Array(message[72 ..< 88]), [UInt8](repeating: 0, count: 16))
    }

    func testHostileChallengesAreProtocolErrors() throws {
        let good = challenge()
        var wrongSignature = good; wrongSignature[0] = 0x4F
        var wrongType = good; wrongType[8] = 3
        var outside = good; outside[44] = 0xFF; outside[45] = 0xFF   // TargetInfo offset far past the end
        var longLength = good; longLength[40] = 0xFF; longLength[41] = 0x7F
        let cases: [[UInt8]] = [[], Array(good.prefix(20)), wrongSignature, wrongType, outside, longLength,
                                [UInt8](repeating: 0, count: 70_000)]
        for bytes in cases {
            var client = NTLMAuthenticator(credentials: NTLMCredentials(domain: "D", user: "u", password: "p"))
            XCTAssertThrowsError(try client.respond(to: bytes)) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .protocolError, "\(error)")
            }
        }
        // Every truncation of a valid challenge is an error, never a trap.
        for n in 0 ..< 48 {
            var client = NTLMAuthenticator(credentials: NTLMCredentials(domain: "D", user: "u", password: "p"))
            XCTAssertThrowsError(try client.respond(to: Array(good.prefix(n))))
        }
    }

    func testSPNEGOWrapsNegotiateAndUnwrapsTheChallenge() throws {
        let credentials = NTLMCredentials(domain: "Domain", user: "User", password: "Password", wrapping: .spnego)
        var client = NTLMAuthenticator(credentials: credentials, clientChallenge: clientChallenge)
        let initial = client.initialToken
        XCTAssertEqual(initial.first, 0x60)
        XCTAssertNotNil(initial.firstRange(of: SPNEGO.ntlmOID))
        XCTAssertNotNil(initial.firstRange(of: NTLM.negotiateMessage()))
        let wrapped = SPNEGO.tlv(0xA1, SPNEGO.tlv(0x30, SPNEGO.tlv(0xA0, SPNEGO.tlv(0x0A, [1]))
            + SPNEGO.tlv(0xA1, SPNEGO.tlv(0x06, SPNEGO.ntlmOID)) + SPNEGO.tlv(0xA2, SPNEGO.tlv(0x04, challenge()))))
        let answer = try client.respond(to: wrapped)
        let resp = try SPNEGO.NegTokenResp.decode(answer)
        XCTAssertEqual(Array(resp.responseToken?.prefix(8) ?? []), NTLM.signature)
        XCTAssertEqual(resp.mechListMIC, [1] + [UInt8](repeating: 0, count: 15))
        // A rejection and malformed DER.
        let reject = SPNEGO.tlv(0xA1, SPNEGO.tlv(0x30, SPNEGO.tlv(0xA0, SPNEGO.tlv(0x0A, [2]))))
        var again = NTLMAuthenticator(credentials: credentials)
        XCTAssertThrowsError(try again.respond(to: reject)) { XCTAssertEqual(($0 as? SQLClientError)?.code, .loginFailed) }
        for bad in [[0xA1, 0x05, 0x30], [0xA1, 0x84, 0, 0, 0, 1], [0xA1, 0x02, 0x31, 0x00], [0xA1]] as [[UInt8]] {
            XCTAssertThrowsError(try SPNEGO.NegTokenResp.decode(bad)) { XCTAssertEqual(($0 as? SQLClientError)?.code, .protocolError) }
        }
    }

    func testQualifiedUserNames() throws {
        let c = try NTLMCredentials(qualifiedUser: #"CORP\alice"#, password: "x")
        XCTAssertEqual(c.domain, "CORP")
        XCTAssertEqual(c.user, "alice")
        XCTAssertEqual(c.description, #"CORP\alice"#)
        XCTAssertFalse("\(c)".contains("x"))
        let upn = try NTLMCredentials(qualifiedUser: "alice@corp.example", password: "x")
        XCTAssertEqual(upn.domain, "")
        XCTAssertEqual(upn.user, "alice@corp.example")
        for bad in [#"\alice"#, #"CORP\"#, "", #"A\B\C"#] {
            XCTAssertThrowsError(try NTLMCredentials(qualifiedUser: bad, password: "x"))
        }
    }

    /// The whole exchange against pyspnego's acceptor (scripts/pysqlbridge_ntlm.py step): raw and
    /// SPNEGO-wrapped, and a wrong password refused.
    func testPyspnegoAcceptorAcceptsTheExchange() throws {
        let users = try NTLMAcceptor.userFile(["CORP:alice:S3cret-pass", "CORP:bob:other"])
        for (wrapping, password, accepted) in [(NTLMCredentials.Wrapping.raw, "S3cret-pass", true), (.spnego, "S3cret-pass", true),
                                               (.raw, "wrong", false), (.spnego, "wrong", false)] {
            let acceptor = try NTLMAcceptor.Process_(arguments: ["step"] + (wrapping == .spnego ? ["--spnego"] : []),
                                                     userFile: users)
            defer { acceptor.stop() }
            var client = NTLMAuthenticator(credentials: NTLMCredentials(domain: "CORP", user: "alice", password: password,
                                                                        workstation: "WS1", wrapping: wrapping))
            acceptor.send(client.initialToken.map { String(format: "%02x", $0) }.joined())
            let first = try XCTUnwrap(acceptor.readLine())
            XCTAssertTrue(first.hasPrefix("token "), first)
            let answer = try client.respond(to: hex(String(first.dropFirst(6))))
            acceptor.send(answer.map { String(format: "%02x", $0) }.joined())
            let last = try XCTUnwrap(acceptor.readLine())
            if accepted {
                XCTAssertEqual(last.lowercased(), #"complete corp\alice"#, "\(wrapping)")
            } else {
                XCTAssertTrue(last.hasPrefix("error"), "\(wrapping) with a wrong password: \(last)")
            }
        }
    }
}

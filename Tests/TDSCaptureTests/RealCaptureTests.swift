import XCTest
import SQLClientTesting
@testable import TDSCapture
import TDS

/// Checks the readers against the real captures of ../shared/captures. Expected byte counts are
/// what `tshark -z follow,tcp,raw,N` reports for the same streams (the second opinion).
final class RealCaptureTests: XCTestCase {
    func captures() throws -> URL {
        let root = SharedCaptures.packageRoot(from: #filePath)
        guard let dir = SharedCaptures.directory(packageRoot: root) else {
            throw XCTSkip("../shared/captures is absent: real-capture tests skipped")
        }
        return dir
    }

    func load(_ name: String) throws -> CaptureFile {
        let url = try captures().appendingPathComponent(name)
        let data = try Data(contentsOf: url)
        return try CaptureFile(bytes: [UInt8](data), fileName: name)
    }

    func testNDPIConversations() throws {
        let file = try load("ndpi_mssql_tds.pcap")
        let conversations = try file.tdsConversations()
        XCTAssertEqual(conversations.map(\.client.port),
                       [1111, 2222, 3333, 4444, 5555, 6666, 7777, 8888, 9999, 11111, 22222, 33333])
        XCTAssertTrue(conversations.allSatisfy { $0.server.description == "10.0.0.1:1433" })
        let byPort = Dictionary(uniqueKeysWithValues: conversations.map { ($0.client.port, $0) })
        XCTAssertEqual(byPort[1111]?.clientStream.bytes.count, 482)
        XCTAssertEqual(byPort[1111]?.serverStream.bytes.count, 392)
        XCTAssertEqual(byPort[2222]?.clientStream.bytes.count, 44)
        XCTAssertEqual(byPort[2222]?.serverStream.bytes.count, 17)
        XCTAssertEqual(byPort[6666]?.clientStream.bytes.count, 1460 * 5 + 700 + 339)
        XCTAssertEqual(byPort[6666]?.clientStream.bytes.first, 0x03)
        XCTAssertEqual(byPort[1111]?.clientStream.bytes.first, 0x01)
        for c in conversations {
            XCTAssertEqual(c.clientStream.gaps, [], c.name)
            XCTAssertFalse(c.clientStream.sawSYN, "ndpi conversations start mid-connection")
        }
    }

    func testPacketbeatSLLWithDuplicatedFrames() throws {
        let file = try load("packetbeat_mssql_login.pcap")
        XCTAssertEqual(file.frames.first?.linkType, .linuxSLL)
        let conversations = try file.tdsConversations()
        XCTAssertEqual(conversations.count, 1)
        let c = try XCTUnwrap(conversations.first)
        XCTAssertEqual(c.client.description, "10.128.0.3:55015")
        XCTAssertEqual(c.clientStream.bytes.count, 895)
        XCTAssertEqual(c.serverStream.bytes.count, 2333)
        XCTAssertGreaterThan(c.clientStream.duplicateBytes, 0, "every frame is captured twice")
        XCTAssertEqual(c.clientStream.bytes.first, 0x12)
        XCTAssertEqual(c.serverStream.bytes.first, 0x04)
    }

    func testSybaseIsFoundByHeadersNotPortAndRecognisedAsLegacy() throws {
        let file = try load("arkime_tds5_sybase.pcap")
        let conversations = try file.tdsConversations()
        XCTAssertEqual(conversations.count, 1)
        let c = try XCTUnwrap(conversations.first)
        XCTAssertEqual(c.server.port, 3106)
        XCTAssertNotNil(TDSDetection.legacyTDSReason(clientStream: c.clientStream.bytes))
    }
}

extension RealCaptureTests {
    func testNDPISessionsEachGetTheirOwnVersion() throws {
        let sessions = try load("ndpi_mssql_tds.pcap").tdsSessions()
        XCTAssertEqual(sessions.count, 12)
        for s in sessions {
            // 2222 gets a DONE with a 4-byte row count; 4444, 9999, 11111 and 22222 send RPCs
            // without ALL_HEADERS, which a 7.2+ client must send ([MS-TDS] 2.2.6.6): 7.1.
            let expected = [2222, 4444, 9999, 11111, 22222].contains(s.conversation.client.port) ? 0x71 : 0x74
            XCTAssertEqual(s.version.version.generation, UInt8(expected), "\(s.conversation.name): \(s.version)")
            XCTAssertNil(s.legacyProtocolReason)
            for m in s.messages {
                if case .tds = m.content { continue }
                XCTFail("\(s.conversation.name): unexpected \(m.content)")
            }
        }
        let s2222 = try XCTUnwrap(sessions.first { $0.conversation.client.port == 2222 })
        XCTAssertEqual(s2222.version.evidence, "4-byte DONE row counts")
        XCTAssertEqual(s2222.messages.map { $0.message?.type }, [.sqlBatch, .tabularResult])
        let s6666 = try XCTUnwrap(sessions.first { $0.conversation.client.port == 6666 })
        XCTAssertEqual(s6666.messages.compactMap { $0.message?.type }, [.rpc])
        XCTAssertEqual(s6666.messages.first?.message?.packetCount, 2)
        XCTAssertEqual(s6666.messages.first?.message?.payload.count, 8339 - 16)
        XCTAssertEqual(s6666.version.evidence, "ALL_HEADERS")
    }

    func testPacketbeatLoginIsTLSThenPlaintext() throws {
        let sessions = try load("packetbeat_mssql_login.pcap").tdsSessions()   // outside XCTUnwrap: its XCTSkip must skip
        let session = try XCTUnwrap(sessions.first)
        XCTAssertEqual(session.version.evidence, "LOGINACK")
        XCTAssertEqual(session.version.version, .v7_4)
        let client = session.messages.filter { $0.direction == .client }
        guard client.count >= 3 else { return XCTFail("too few client messages") }
        XCTAssertEqual(client[0].message?.type, .prelogin)
        if case .tls(_, _, let inPrelogin) = client[1].content { XCTAssertTrue(inPrelogin) } else { XCTFail("\(client[1].content)") }
        XCTAssertTrue(client.contains { if case .tls(_, _, false) = $0.content { return true } else { return false } },
                      "the LOGIN7 travels as TLS records directly on TCP")
    }
}

extension RealCaptureTests {
    /// Second opinion: Wireshark's `editcap` rewrites each capture as pcapng (and as
    /// nanosecond pcap); the conversations read from the rewritten files must be identical.
    func testEditcapRewritesReadTheSame() throws {
        let editcap = "/usr/bin/editcap"
        guard FileManager.default.isExecutableFile(atPath: editcap) else { throw XCTSkip("editcap is not installed") }
        let dir = try captures()
        for name in ["ndpi_mssql_tds.pcap", "packetbeat_mssql_login_and_insert.pcap"] {
            let original = try load(name).tcpConversations()
            for format in ["pcapng", "nsecpcap"] {
                let out = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID().uuidString).\(format)")
                defer { try? FileManager.default.removeItem(at: out) }
                let p = Process()
                p.executableURL = URL(fileURLWithPath: editcap)
                p.arguments = ["-F", format, dir.appendingPathComponent(name).path, out.path]
                p.standardError = FileHandle.nullDevice
                try p.run()
                p.waitUntilExit()
                XCTAssertEqual(p.terminationStatus, 0)
                let rewritten = try CaptureFile(bytes: [UInt8](try Data(contentsOf: out)))
                XCTAssertEqual(rewritten.format, format == "pcapng" ? .pcapng : .pcap)
                let conversations = try rewritten.tcpConversations()
                XCTAssertEqual(conversations.map(\.name), original.map(\.name), "\(name) as \(format)")
                XCTAssertEqual(conversations.map(\.clientStream.bytes), original.map(\.clientStream.bytes), "\(name) as \(format)")
                XCTAssertEqual(conversations.map(\.serverStream.bytes), original.map(\.serverStream.bytes), "\(name) as \(format)")
                XCTAssertEqual(rewritten.frames.first?.timestamp ?? 0, try load(name).frames.first?.timestamp ?? 1, accuracy: 1e-6)
            }
        }
    }
}

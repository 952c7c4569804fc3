import Foundation
import XCTest
import TDS
import TDSCapture

/// `sqlclient decode` on server packets (issue 26 items 3 and 4): the packet type decides the
/// direction and the message, also when the input is cut short, and TLS records inside
/// TABULAR_RESULT packets (SQL Server 2000's TLS handshake) decode as TLS records.
final class DecodeServerPacketTests: XCTestCase {
    /// A TABULAR_RESULT packet header (status EOM, Packet ID 1) whose length field says `length`.
    static func header(type: UInt8 = 0x04, length: Int) -> [UInt8] {
        [type, 0x01, UInt8(length >> 8), UInt8(length & 0xFF), 0, 0, 1, 0]
    }

    /// A DONE token (TDS 7.2+, 13 bytes), then zero bytes: 100 bytes of a packet that promises 520.
    static let cutServerPacket: [UInt8] = header(length: 520) + [0xFD, 0x00, 0x00, 0xC1, 0, 1, 0, 0, 0, 0, 0, 0, 0]
        + [UInt8](repeating: 0, count: 79)

    /// A TLS handshake record (ClientHello-like type 0x16, TLS 1.0 record version, 5 bytes) inside a 0x04 packet.
    static let tlsRecord: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]
    static let tlsInTabularResult: [UInt8] = header(length: 8 + tlsRecord.count) + tlsRecord

    func testCutServerPacketIsAShortTabularResultNotAClientRPC() throws {
        XCTAssertEqual(Self.cutServerPacket.count, 100)
        let report = CaptureDecoder.decode(bytes: Self.cutServerPacket, fileName: "cut.bin")
        XCTAssertEqual(report.failures.count, 1, "\(report.failures)")
        let failure = try XCTUnwrap(report.failures.first)
        XCTAssertEqual(failure.message, "TABULAR_RESULT")
        XCTAssertEqual(failure.code, "incomplete")
        XCTAssertTrue(failure.detail.hasPrefix("the server's TABULAR_RESULT message is short by 420 byte(s)"), failure.detail)
        XCTAssertTrue(failure.detail.contains("its header gives 520 bytes, 100 are there"), failure.detail)
        XCTAssertFalse(report.records.contains { $0.type == "RPC" }, "\(report.records.map(\.type))")

        // The same through the command line: exit status 1, the short message named on stderr.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cut-\(UUID().uuidString).bin")
        try Data(Self.cutServerPacket).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try CLI.run(["decode", file.path])
        XCTAssertEqual(r.status, 1, r.stderr)
        XCTAssertTrue(r.stderr.contains("TABULAR_RESULT message"), r.stderr)
        XCTAssertTrue(r.stderr.contains("short by 420 byte(s)"), r.stderr)
        XCTAssertFalse(r.stderr.contains("RPC"), r.stderr)
        XCTAssertFalse(r.stdout.contains("C->S"), r.stdout)
    }

    func testCutClientPacketIsTheClientsMessage() throws {
        // A SQL_BATCH packet promising 64 bytes, 20 there.
        let bytes = Self.header(type: 0x01, length: 64) + [UInt8](repeating: 0x41, count: 12)
        let report = CaptureDecoder.decode(bytes: bytes)
        let failure = try XCTUnwrap(report.failures.first)
        XCTAssertEqual(failure.message, "SQL_BATCH")
        XCTAssertTrue(failure.detail.hasPrefix("the client's SQL_BATCH message is short by 44 byte(s)"), failure.detail)
    }

    func testCutSecondPacketCountsTheBytesItLacks() throws {
        // A whole first packet (no EOM), then a second one promising 40 bytes with 10 there.
        var first = Self.header(length: 8 + 13) + [0xFD, 0x01, 0x00, 0xC1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        first[1] = 0x00
        let bytes = first + Self.header(length: 40) + [0xFD, 0x00]
        let report = CaptureDecoder.decode(bytes: bytes)
        let failure = try XCTUnwrap(report.failures.first)
        XCTAssertTrue(failure.detail.hasPrefix("the server's TABULAR_RESULT message is short by 30 byte(s)"), failure.detail)
    }

    func testTLSRecordsInsideTabularResultPacketsDecodeAsTLS() throws {
        let report = CaptureDecoder.decode(bytes: Self.tlsInTabularResult)
        XCTAssertEqual(report.failures.count, 0, "\(report.failures)")
        let record = try XCTUnwrap(report.records.first)
        XCTAssertEqual(record.type, "TABULAR_RESULT")
        XCTAssertEqual(record.direction, .server)
        XCTAssertEqual(record["tls"]?.stringValue, "handshake")
        XCTAssertEqual(record["records"]?.intValue, 1)
        XCTAssertEqual(record["bytes"]?.intValue, Int64(Self.tlsRecord.count))

        // The splitter says which packets carried the records.
        let messages = TDSMessageSplitter.split(Self.tlsInTabularResult, direction: .server)
        XCTAssertEqual(messages.count, 1)
        XCTAssertEqual(messages.first?.packetType, .tabularResult)
        guard case .tls(1, Self.tlsRecord.count, true)? = messages.first?.content else {
            return XCTFail("\(String(describing: messages.first?.content))")
        }

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tls04-\(UUID().uuidString).bin")
        try Data(Self.tlsInTabularResult).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let r = try CLI.run(["decode", file.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse((r.stdout + r.stderr).contains("unknown token"), r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("S->C TABULAR_RESULT"), r.stdout)
        XCTAssertTrue(r.stdout.contains("tls: handshake"), r.stdout)
        // PRELOGIN packets carrying TLS still say PRELOGIN.
        let prelogin = Self.header(type: 0x12, length: 8 + Self.tlsRecord.count) + Self.tlsRecord
        XCTAssertEqual(CaptureDecoder.decode(bytes: prelogin).records.first?.type, "PRELOGIN")
    }
}

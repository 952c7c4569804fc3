import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// The client against a ``HostileServer``: every hostile case ends in a typed error within its
/// timeout, with the client's peak resident memory (measured in a child process: the
/// `sqlclient` executable) under 64 MB, and never a LOGIN7 in the clear to a server that
/// requires encryption. Figures of each run are printed (search the log for "BOUNDS:").
final class SQLConnectionBoundsTests: XCTestCase {
    static let rssLimit = 64 << 20

    private func binary() throws -> String {
        guard let url = CLIComparisonTests.sqlclientBinary() else {
            XCTFail("the sqlclient executable was not built next to the tests")
            throw XCTSkip("no sqlclient binary")
        }
        return url.path
    }

    /// Runs `sqlclient` against a server behaving as `behaviour`; checks the outcome.
    @discardableResult
    private func measure(_ name: String, _ behaviour: HostileServer.Behaviour, encrypt: String = "notsupported",
                         extra: [String] = ["-l", "10"], connectionString: String? = nil, within limit: Double,
                         expecting phrases: [String], file: StaticString = #filePath, line: UInt = #line) throws -> HostileServer {
        let server = try HostileServer(behaviour)
        defer { server.stop() }
        var args: [String]
        if let connectionString {
            args = ["--connection-string", connectionString.replacingOccurrences(of: "PORT", with: "\(server.port)")]
        } else {
            args = ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p", "--encrypt", encrypt, "-C"]
        }
        args += extra + ["--format", "csv", "-Q", "SELECT v FROM t"]
        let outcome = try MeasuredChild.run(try binary(), args, timeout: limit + 20)
        print("BOUNDS: \(name): exit \(outcome.status) after \(String(format: "%.2f", outcome.seconds)) s, "
              + "peak RSS \(outcome.peakRSSBytes >> 20) MiB; \(outcome.stderr.split(separator: "\n").first ?? "")")
        XCTAssertFalse(outcome.timedOut, "\(name): still running after \(limit + 20) s", file: file, line: line)
        XCTAssertNotEqual(outcome.status, 0, "\(name): \(outcome.stderr)", file: file, line: line)
        XCTAssertLessThan(outcome.status, 128, "\(name): killed by a signal (a trap): \(outcome.stderr)", file: file, line: line)
        XCTAssertLessThan(outcome.seconds, limit, "\(name): \(outcome.stderr)", file: file, line: line)
        XCTAssertGreaterThan(outcome.peakRSSBytes, 0, file: file, line: line)
        XCTAssertLessThan(outcome.peakRSSBytes, Self.rssLimit, "\(name): peak RSS \(outcome.peakRSSBytes)", file: file, line: line)
        for phrase in phrases {
            XCTAssertTrue(outcome.stderr.contains(phrase), "\(name): \"\(phrase)\" not in: \(outcome.stderr)", file: file, line: line)
        }
        return server
    }

    func testEndlessPreloginPackets() throws {
        try measure("endless PRELOGIN packets", .endlessPrelogin, within: 5,
                    expecting: ["PRELOGIN response is longer than its cap", "maximumPreloginResponseSize"])
    }

    func testEndlessTLSHandshakePackets() throws {
        try measure("endless TLS handshake packets", .endlessTLSHandshake, encrypt: "on", within: 5,
                    expecting: ["TLS handshake is longer than its cap", "maximumTLSFlightSize"])
    }

    func testPLPDeclaring2e62BytesThenEndlessChunks() throws {
        try measure("PLP of 2^62 bytes then endless chunks", .endlessPLP(declared: 1 << 62), within: 5,
                    expecting: ["invalidLength", "2^31-1"])
    }

    /// Endless rows, ATTENTION ignored: the query timeout (Command Timeout=2) sends ATTENTION, the
    /// cancel bound (5 s) then closes the connection: `.timeout`; rows stream through in bounded memory.
    func testEndlessRowsEndAtTheQueryTimeout() throws {
        try measure("endless rows, ATTENTION ignored", .endlessRows, extra: [],
                    connectionString: "Server=127.0.0.1,PORT;User ID=u;Password=p;Encrypt=notsupported;Command Timeout=2",
                    within: 15, expecting: ["did not acknowledge the cancellation"])
    }

    /// Endless ERROR tokens, ATTENTION ignored: as endless rows, the query timeout then the cancel
    /// bound end it (`.timeout`), in bounded memory: the request keeps only its first 1,000
    /// errors for its `SQLClientError` (it kept every one: 300 MB after 20 s).
    func testEndlessErrorsEndAtTheQueryTimeoutInBoundedMemory() throws {
        try measure("endless ERROR tokens, ATTENTION ignored", .endlessErrors, extra: ["-m", "25"],
                    connectionString: "Server=127.0.0.1,PORT;User ID=u;Password=p;Encrypt=notsupported;Command Timeout=2",
                    within: 15, expecting: ["did not acknowledge the cancellation"])
    }

    /// HTTP text instead of TDS: an immediate protocol error, also with no login timeout (-l 0).
    func testHTTPTextInsteadOfTDS() throws {
        try measure("HTTP text instead of TDS", .httpText, extra: ["-l", "0"], within: 5,
                    expecting: ["did not answer with TDS", "0x48"])
    }

    /// A first packet typed 0x04 whose Length no TDS packet has (over 32,767, under 8): an
    /// immediate protocol error, also with no login timeout (-l 0), before the packet is whole.
    func testAbsurdFirstPacketLength() throws {
        try measure("first packet of 65535 bytes", .absurdFirstPacket(length: 0xFFFF), extra: ["-l", "0"], within: 5,
                    expecting: ["did not answer with TDS", "65535 bytes"])
        try measure("first packet of 3 bytes", .absurdFirstPacket(length: 3), extra: ["-l", "0"], within: 5,
                    expecting: ["did not answer with TDS", "3 bytes"])
    }

    /// ENCRYPT_ON to a client that cannot encrypt: the connection ends before LOGIN7.
    func testEncryptOnToAClientThatCannotEncrypt() throws {
        let server = try measure("ENCRYPT_ON to a client that cannot encrypt", .encryptOn, within: 5,
                                 expecting: ["ENCRYPT_ON"])
        XCTAssertEqual(server.received.map(\.type), [.prelogin], "nothing after PRELOGIN, and no LOGIN7 in the clear")
        let required = try measure("ENCRYPT_REQ to a client that cannot encrypt", .encryptRequired, within: 5,
                                   expecting: ["ENCRYPT_REQ"])
        XCTAssertEqual(required.received.map(\.type), [.prelogin], "nothing after PRELOGIN, and no LOGIN7 in the clear")
    }

    /// A value of unknown length is bounded by maximumValueSize as its chunks arrive: the request
    /// fails with `.protocolError` naming the cap, the connection is closed and its buffers dropped.
    func testUnknownLengthValueOverTheConfiguredMaximum() async throws {
        let server = try HostileServer(.endlessPLP(declared: 0xFFFF_FFFF_FFFF_FFFE))
        defer { server.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: server.port), user: "u",
                                                password: "p", encryption: .notSupported, connectTimeout: .seconds(10))
        config.maximumValueSize = 4 << 20
        let connection = try await SQLConnection.connect(config)
        do {
            _ = try await connection.execute("SELECT v FROM t")
            XCTFail("an endless value was accepted")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .protocolError, "\(error)")
            XCTAssertTrue(error.message.contains("maximum value size of 4194304 bytes"), error.message)
        }
        let open = await connection.isOpen
        XCTAssertFalse(open)
        let buffered = await connection.reader.decoder.bufferedByteCount + connection.reader.framer.bufferedByteCount
        XCTAssertEqual(buffered, 0, "the receive buffers are released")
    }
}

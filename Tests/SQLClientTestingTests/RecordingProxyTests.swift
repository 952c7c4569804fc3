#if canImport(CSQLClientOpenSSL)
import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// The recording proxy between SQLClient and a TLS replay server playing the upstream (no SQL
/// Server needed): TLS on both legs, what reaches the file, ATTENTION, refusals, stops.
final class RecordingProxyTests: XCTestCase {
    static let version = TDSVersion.v7_4
    static let password = "S3cret-Pässword!"

    static func intColumn(_ name: String) -> ColumnMetadata { ColumnMetadata(flags: [.nullable], typeInfo: .int, name: name) }

    /// The upstream: "SELECT 1 AS c", "SELECT 2 AS d", a 2,000-row "SELECT big" in 512-byte
    /// packets, and "SELECT echo", whose answer holds the password as UTF-16 text, as UTF-8 and
    /// obfuscated bytes.
    static func upstreamSession() throws -> ReplaySession {
        func one(_ name: String, _ value: Int32) throws -> [ReplaySession.Segment] {
            let c = intColumn(name)
            return [.init(bytes: ServerTokens.colMetadata([c], version: version)),
                    .init(bytes: try ServerTokens.row([.int(value)], columns: [c])),
                    .init(bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 1, version: version))]
        }
        let b = ColumnMetadata(flags: [.nullable], typeInfo: .varbinary(100), name: "b")
        var big: [ReplaySession.Segment] = [.init(bytes: ServerTokens.colMetadata([b], version: version))]
        for i in 0 ..< 2000 {
            big.append(.init(bytes: try ServerTokens.row([.binary(Array(repeating: UInt8(i & 0xFF), count: 100))], columns: [b])))
        }
        big.append(.init(bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 2000, version: version)))
        let utf16 = Array(password.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let echo: [ReplaySession.Segment] = [
            .init(bytes: ServerTokens.message(number: 1, text: "your password is \(password)", version: version)),
            .init(bytes: ServerTokens.colMetadata([b], version: version)),
            .init(bytes: try ServerTokens.row([.binary(Array(password.utf8))], columns: [b])),
            .init(bytes: try ServerTokens.row([.binary(Login7.obfuscate(utf16))], columns: [b])),
            .init(bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 2, version: version)),
        ]
        return ReplaySession(name: "upstream", version: version, packetSize: 512, exchanges: [
            .init(request: .sqlBatch("SELECT 1 AS c"), response: try one("c", 1)),
            .init(request: .sqlBatch("SELECT 2 AS d"), response: try one("d", 2)),
            .init(request: .sqlBatch("SELECT big"), response: big),
            .init(request: .sqlBatch("SELECT echo"), response: echo),
        ])
    }

    struct Rig {
        var upstream: ReplayServer
        var upstreamIdentity: TLSServerIdentity
        var proxy: RecordingProxy
        var port: UInt16
        func stop() { proxy.stop(); upstream.stop() }
    }

    func rig(_ session: ReplaySession? = nil, output: RecordingProxy.Configuration.Output = .none) throws -> Rig {
        let upstreamIdentity = try TLSServerIdentity.generate()   // not the proxy's: each leg has its own certificate
        let upstream = ReplayServer(session: try session ?? Self.upstreamSession(), options: .init(tls: upstreamIdentity))
        let upstreamPort = try upstream.start()
        let proxy = try RecordingProxy(configuration: .init(
            upstreamHost: "127.0.0.1", upstreamPort: Int(upstreamPort),
            upstreamTLS: TLSConfiguration(caFile: try upstreamIdentity.caCertificateFile()), output: output))
        let port = try proxy.start()
        return Rig(upstream: upstream, upstreamIdentity: upstreamIdentity, proxy: proxy, port: port)
    }

    /// A new empty folder, removed when the test ends.
    func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("record-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    func configuration(port: UInt16, encryption: SQLEncryption = .on, caFile: String) -> SQLConnectionConfiguration {
        SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "tester",
                                   password: Self.password, encryption: encryption,
                                   tls: TLSConfiguration(caFile: caFile), connectTimeout: .seconds(10))
    }

    func intValue(_ connection: SQLConnection, _ sql: String) async throws -> SQLValue? {
        try await connection.execute(SQLQuery(unsafeSQL: sql)).resultSets.first?.rows.first?.values.first
    }

    func testTheWholeSessionUnderTLSOnBothLegsIsRecordedAndReplays() async throws {
        let rig = try rig()
        defer { rig.stop() }
        let connection = try await SQLConnection.connect(configuration(port: rig.port, caFile: try rig.proxy.identity.caCertificateFile()))
        let c = try await intValue(connection, "SELECT 1 AS c")
        let d = try await intValue(connection, "SELECT 2 AS d")
        XCTAssertEqual([c, d], [.int(1), .int(2)])
        await connection.close()
        rig.stop()
        XCTAssertEqual(rig.upstream.connections.first?.tlsProtocol, "TLSv1.2")
        XCTAssertEqual(rig.upstream.connections.first?.tlsLoginOnly, false)
        XCTAssertTrue(rig.proxy.events.contains("connection 1: TLS whole session"), "\(rig.proxy.events)")

        let recording = rig.proxy.recording
        XCTAssertEqual(recording.sections.count, 1)
        let session = try XCTUnwrap(recording.sections.first)
        XCTAssertEqual(session.exchanges.map(\.request), [.login7, .sqlBatch("SELECT 1 AS c"), .sqlBatch("SELECT 2 AS d")])
        XCTAssertEqual(session.version, .v7_4)
        XCTAssertEqual(session.packetSize, 512, "the login response's packet size is the session's")
        // The file form parses back to the same recording, and replays.
        let parsed = try ReplayRecording(text: recording.text)
        XCTAssertEqual(parsed.sections.first?.exchanges.map(\.responseBytes), session.exchanges.map(\.responseBytes))
        let identity = try TLSServerIdentity.generated()
        let replay = ReplayServer(recording: parsed, options: .init(tls: identity, strict: true))
        let replayPort = try replay.start()
        defer { replay.stop() }
        let again = try await SQLConnection.connect(configuration(port: replayPort, caFile: try identity.caCertificateFile()))
        let c2 = try await intValue(again, "SELECT 1 AS c")
        let d2 = try await intValue(again, "SELECT 2 AS d")
        XCTAssertEqual([c2, d2], [.int(1), .int(2)])
        await again.close()
        replay.stop()
        XCTAssertNoThrow(try replay.verify(requireAllReplayed: true))
    }

    func testEncryptOffRunsTLSForTheLoginOnlyOnBothLegs() async throws {
        let rig = try rig()
        defer { rig.stop() }
        let connection = try await SQLConnection.connect(configuration(port: rig.port, encryption: .off,
                                                                       caFile: try rig.proxy.identity.caCertificateFile()))
        let c = try await intValue(connection, "SELECT 1 AS c")
        XCTAssertEqual(c, .int(1))
        await connection.close()
        rig.stop()
        XCTAssertEqual(rig.upstream.connections.first?.tlsLoginOnly, true)
        XCTAssertTrue(rig.proxy.events.contains("connection 1: TLS login only"), "\(rig.proxy.events)")
        XCTAssertEqual(rig.proxy.recording.sections.first?.exchanges.map(\.request), [.login7, .sqlBatch("SELECT 1 AS c")])
        let comment = rig.proxy.recording.sections.first?.exchanges.first?.comment ?? ""
        XCTAssertTrue(comment.contains("client ENCRYPTION ENCRYPT_OFF"), comment)
        XCTAssertTrue(comment.contains("user \"tester\""), comment)
    }

    /// The password is not in the file as text, as UTF-16 or in LOGIN7's obfuscated form, even
    /// where the client's SQL and the server's answer carried it.
    func testThePasswordNeverReachesTheFile() async throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("secret.tdssession")
        let rig = try rig(output: .file(file))
        defer { rig.stop() }
        let connection = try await SQLConnection.connect(configuration(port: rig.port, caFile: try rig.proxy.identity.caCertificateFile()))
        let echoed = try await connection.execute("SELECT echo")
        XCTAssertEqual(echoed.resultSets.first?.rows.count, 2, "the client got the server's bytes unchanged")
        XCTAssertEqual(echoed.resultSets.first?.rows.first?.values.first, .binary(Array(Self.password.utf8)))
        _ = try? await connection.execute("SELECT '\(unsafeRaw: Self.password)' AS p")   // unrecorded upstream: an empty answer
        await connection.close()
        rig.stop()

        let data = try Data(contentsOf: file)
        let text = String(decoding: data, as: UTF8.self)
        let utf16 = Array(Self.password.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let forms: [(String, [UInt8])] = [("UTF-8", Array(Self.password.utf8)), ("UTF-16LE", utf16),
                                          ("obfuscated UTF-16LE", Login7.obfuscate(utf16))]
        XCTAssertFalse(text.contains(Self.password))
        XCTAssertFalse(text.lowercased().contains("s3cret"))
        // Every hex byte of the file, read back in order, and each response on its own.
        let recording = try ReplayRecording(text: text)
        let responses = recording.allExchanges.map(\.responseBytes)
        for (name, form) in forms {
            XCTAssertFalse(Array(data).contains(subsequence: form), "the file's bytes hold the password as \(name)")
            for (i, bytes) in responses.enumerated() {
                XCTAssertFalse(bytes.contains(subsequence: form), "response \(i) holds the password as \(name)")
            }
        }
        XCTAssertTrue(rig.proxy.secretFindings().isEmpty)
        // What was redacted kept its length: the recorded echo still decodes, with stars.
        let echo = try XCTUnwrap(recording.allExchanges.first { $0.request == .sqlBatch("SELECT echo") })
        XCTAssertTrue(echo.comment?.contains("password appeared") ?? false)
        var decoder = TokenStreamDecoder(version: Self.version)
        decoder.append(echo.responseBytes)
        var rows: [[SQLValue]] = []
        while let t = try decoder.next() { if let v = t.rowValues { rows.append(v) } }
        XCTAssertEqual(rows.first, [.binary(Array(String(repeating: "*", count: Self.password.utf8.count).utf8))])
        XCTAssertTrue(recording.allExchanges.contains { $0.request == .sqlBatch("SELECT '<redacted>' AS p") })
    }

    func testAnUpstreamThatRefusesTheLoginSendsItsErrorUnchanged() async throws {
        let refusal = ServerTokens.message(token: 0xAA, number: 18456, state: 1, severity: 14,
                                           text: "Login failed for user 'tester'.", version: Self.version)
            + ServerTokens.done(status: .error, version: Self.version)
        let session = ReplaySession(name: "refuses", version: Self.version, exchanges: [
            .init(request: .login7, response: [.init(comment: "ERROR 18456", bytes: refusal)]),
        ])
        let rig = try rig(session)
        defer { rig.stop() }
        func attempt(port: UInt16, ca: String) async -> SQLClientError? {
            do {
                let c = try await SQLConnection.connect(configuration(port: port, caFile: ca))
                await c.close()
                return nil
            } catch {
                return error as? SQLClientError
            }
        }
        let direct = await attempt(port: rig.upstream.port, ca: try rig.upstreamIdentity.caCertificateFile())
        let proxied = await attempt(port: rig.port, ca: try rig.proxy.identity.caCertificateFile())
        XCTAssertEqual(proxied?.code, .loginFailed, "\(String(describing: proxied))")
        XCTAssertEqual(proxied?.number, 18456)
        XCTAssertEqual(proxied?.serverMessage?.message, "Login failed for user 'tester'.")
        XCTAssertEqual(proxied?.code, direct?.code)
        XCTAssertEqual(proxied?.message, direct?.message)
        rig.stop()
        XCTAssertEqual(rig.proxy.recording.sections.first?.loginResponse?.responseBytes, refusal)
    }

    func testAProxyStoppedMidSessionLeavesAReadableFile() async throws {
        let dir = try temporaryDirectory()
        let file = dir.appendingPathComponent("stopped.tdssession")
        let rig = try rig(output: .file(file))
        defer { rig.stop() }
        let connection = try await SQLConnection.connect(configuration(port: rig.port, caFile: try rig.proxy.identity.caCertificateFile()))
        let c = try await intValue(connection, "SELECT 1 AS c")
        XCTAssertEqual(c, .int(1))
        // Written after every server message: a proxy killed now loses nothing already relayed.
        let whileRunning = try ReplayRecording(contentsOf: file)
        XCTAssertEqual(whileRunning.sections.first?.exchanges.map(\.request), [.login7, .sqlBatch("SELECT 1 AS c")])
        let c2 = try await intValue(connection, "SELECT 2 AS d")
        XCTAssertEqual(c2, .int(2))
        rig.proxy.stop()   // the client is still connected
        // Written a piece at a time (finished exchanges are never written again), the file is the recording's text.
        XCTAssertEqual(try String(contentsOf: file, encoding: .utf8), rig.proxy.recording.text)
        let afterStop = try ReplayRecording(contentsOf: file)
        XCTAssertEqual(afterStop.sections.first?.exchanges.map(\.request), [.login7, .sqlBatch("SELECT 1 AS c"), .sqlBatch("SELECT 2 AS d")])
        XCTAssertEqual(afterStop.sections.first?.exchanges[1].responseBytes, whileRunning.sections.first?.exchanges.last?.responseBytes)
        do {
            _ = try await connection.execute("SELECT 1 AS c")
            XCTFail("the proxy closed the connection")
        } catch {}
        await connection.close()
    }

    func testAnAttentionIsRecordedWithItsAcknowledgementAndReplays() async throws {
        let rig = try rig()
        defer { rig.stop() }
        let ca = try rig.proxy.identity.caCertificateFile()
        func cancelThenQuery(_ port: UInt16, ca: String) async throws -> SQLValue? {
            let connection = try await SQLConnection.connect(configuration(port: port, caFile: ca))
            var seen = 0
            for try await _ in connection.query("SELECT big") {
                seen += 1
                if seen == 10 { break }
            }
            let value = try await intValue(connection, "SELECT 1 AS c")
            await connection.close()
            return value
        }
        let through = try await cancelThenQuery(rig.port, ca: ca)
        XCTAssertEqual(through, .int(1))
        rig.stop()
        let session = try XCTUnwrap(rig.proxy.recording.sections.first)
        XCTAssertEqual(session.exchanges.map(\.request), [.login7, .sqlBatch("SELECT big"), .attention, .sqlBatch("SELECT 1 AS c")])
        let ack = session.exchanges[2].responseBytes
        XCTAssertEqual(ack.first, 0xFD)
        XCTAssertEqual(ack.count >= 3 ? UInt16(ack[1]) | UInt16(ack[2]) << 8 : 0, 0x0020, "DONE with DONE_ATTN")
        // (How much of the cancelled response was relayed before the ATTENTION depends on timing.)
        let big = session.exchanges[1].responseBytes
        XCTAssertGreaterThan(big.count, 0)
        XCTAssertNil(ReplaySessionBuilderTests.doneAttentionOffset(big), "the acknowledgement is not in the cancelled response")
        // The recording replays the same flow.
        let identity = try TLSServerIdentity.generated()
        let replay = ReplayServer(session: session, options: .init(tls: identity))
        let port = try replay.start()
        defer { replay.stop() }
        let replayed = try await cancelThenQuery(port, ca: try identity.caCertificateFile())
        XCTAssertEqual(replayed, .int(1))
    }

    func testEachConnectionIsASectionOrItsOwnFile() async throws {
        let dir = try temporaryDirectory()
        let rig = try rig(output: .directory(dir))
        defer { rig.stop() }
        let ca = try rig.proxy.identity.caCertificateFile()
        for sql in ["SELECT 1 AS c", "SELECT 2 AS d"] {
            let connection = try await SQLConnection.connect(configuration(port: rig.port, caFile: ca))
            _ = try await connection.execute(SQLQuery(unsafeSQL: sql))
            await connection.close()
        }
        rig.stop()
        let recording = rig.proxy.recording
        XCTAssertEqual(recording.sections.map(\.name), ["connection 1", "connection 2"])
        XCTAssertTrue(recording.text.contains("=== connection 2\n"))
        XCTAssertEqual(try ReplayRecording(text: recording.text), recording)
        for (n, sql) in [(1, "SELECT 1 AS c"), (2, "SELECT 2 AS d")] {
            let file = try ReplayRecording(contentsOf: dir.appendingPathComponent("connection-\(n).tdssession"))
            XCTAssertEqual(file.sections.count, 1)
            XCTAssertEqual(file.sections.first?.exchanges.last?.request, .sqlBatch(sql))
        }
    }

    func testAnUpstreamCertificateThatIsNotTrustedClosesTheClientAndSaysWhy() async throws {
        let upstream = ReplayServer(session: try Self.upstreamSession(), options: .init(tls: try TLSServerIdentity.generate()))
        let upstreamPort = try upstream.start()
        defer { upstream.stop() }
        let proxy = try RecordingProxy(configuration: .init(upstreamHost: "127.0.0.1", upstreamPort: Int(upstreamPort),
                                                            upstreamTLS: TLSConfiguration(caFile: try TLSServerIdentity.generate().caCertificateFile())))
        let port = try proxy.start()
        defer { proxy.stop() }
        do {
            let c = try await SQLConnection.connect(configuration(port: port, caFile: try proxy.identity.caCertificateFile()))
            await c.close()
            XCTFail("connected through an upstream whose certificate the proxy refuses")
        } catch {}
        proxy.stop()
        XCTAssertTrue(proxy.events.contains { $0.contains("certificate") }, "\(proxy.events)")
        XCTAssertTrue(proxy.recording.sections.isEmpty)
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, count >= needle.count else { return false }
        for i in 0 ... (count - needle.count) where self[i] == needle[0] && self[i ..< i + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }
}
#endif

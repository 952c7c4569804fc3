import XCTest
@testable import SQLClient
import SQLClientTesting

/// ``TLSFlightParser`` on real TLS 1.2 and 1.3 flights (made by this platform's engine and the
/// contract's server: OpenSSL's on Linux), fed whole, byte by byte and in random pieces: the
/// flight ends must be the same.
final class TLSFlightParserTests: XCTestCase {
    /// Both directions of a handshake, flight by flight.
    struct Flights {
        var client: [[UInt8]] = []
        var server: [[UInt8]] = []
    }

    /// The flights of a handshake between this platform's default provider and the contract's
    /// server (OpenSSL's engine and memory server on Linux; Network.framework against Python's
    /// `ssl` on a Mac).
    private func flights(maximumVersion: TLSConfiguration.ProtocolVersion) async throws -> Flights {
        let environment = try TLSContractEnvironment.current()
        let server = try environment.makeServer(environment.certificates.serverCertificate,
                                                environment.certificates.serverKey, true, false)
        let client = try environment.provider.makeClientSession(
            serverName: "localhost",
            configuration: TLSConfiguration(caFile: environment.certificates.caCertificate, maximumVersion: maximumVersion))
        var flights = Flights()
        var toServer = try await client.startHandshake()
        var serverDone = false
        for _ in 0 ..< 6 {
            flights.client.append(toServer)
            let (toClient, done) = try server.handshake(toServer)
            serverDone = done
            if toClient.isEmpty { break }
            flights.server.append(toClient)
            let step = try await client.continueHandshake(toClient)
            toServer = step.output
            if step.isComplete {
                if !toServer.isEmpty {
                    flights.client.append(toServer)
                    let (last, done) = try server.handshake(toServer)
                    serverDone = done
                    if !last.isEmpty { flights.server.append(last) }
                }
                break
            }
        }
        XCTAssertTrue(serverDone)
        return flights
    }

    /// The boundaries of `stream` under every kind of split, checked to be the same each time.
    private func boundaries(_ stream: [UInt8], sender: TLSFlightParser.Sender,
                            file: StaticString = #filePath, line: UInt = #line) throws -> (TLSFlightParser, [TLSFlightParser.Boundary]) {
        var whole = TLSFlightParser(sender: sender)
        let expected = try whole.append(stream)
        var rng = SeededRandom(seed: 28)
        for split in DecoderVerifier.Split.allCases {
            var parser = TLSFlightParser(sender: sender)
            var found: [TLSFlightParser.Boundary] = []
            for piece in DecoderVerifier.pieces(of: stream, split, using: &rng) { found += try parser.append(piece) }
            XCTAssertEqual(found, expected, "split \(split)", file: file, line: line)
            XCTAssertFalse(parser.endsInsideRecord, file: file, line: line)
        }
        return (whole, expected)
    }

    func testTLS12FlightsEndAtClientHelloServerHelloDoneAndTheFinishedAfterChangeCipherSpec() async throws {
        let f = try await flights(maximumVersion: .tls1_2)
        XCTAssertEqual(f.client.count, 2)
        XCTAssertEqual(f.server.count, 2)
        let (_, client) = try boundaries(f.client.joined().map { $0 }, sender: .client)
        XCTAssertEqual(client, [.init(end: .clientHello, offset: f.client[0].count),
                                .init(end: .finished, offset: f.client[0].count + f.client[1].count)])
        let (serverParser, server) = try boundaries(f.server.joined().map { $0 }, sender: .server)
        XCTAssertEqual(server, [.init(end: .serverHelloDone, offset: f.server[0].count),
                                .init(end: .finished, offset: f.server[0].count + f.server[1].count)])
        XCTAssertFalse(serverParser.negotiatedTLS13)
        // Each flight alone ends exactly at its last byte, never before.
        for flight in f.client {
            var parser = TLSFlightParser(sender: .client)
            var last: TLSFlightParser.Boundary?
            for (i, byte) in flight.enumerated() {
                let found = try parser.append([byte])
                if i < flight.count - 1 { XCTAssertEqual(found, [], "a flight ended early at byte \(i)") } else { last = found.last }
            }
            XCTAssertEqual(last?.offset, flight.count)
            XCTAssertTrue(parser.isAtFlightEnd)
        }
    }

    func testTLS13ClientFlightsEndAtClientHelloAndItsProtectedFinishedAndTheServerIsSeenAsTLS13() async throws {
        let f = try await flights(maximumVersion: .tls1_3)
        XCTAssertEqual(f.client.count, 2)
        let (_, client) = try boundaries(f.client.joined().map { $0 }, sender: .client)
        XCTAssertEqual(client, [.init(end: .clientHello, offset: f.client[0].count),
                                .init(end: .protectedClientFinished, offset: f.client[0].count + f.client[1].count)])
        let (serverParser, server) = try boundaries(f.server[0], sender: .server)
        XCTAssertTrue(serverParser.negotiatedTLS13, "ServerHello's supported_versions selects TLS 1.3")
        // The server's encrypted flight has no end the record layer can show: the engine waits for
        // the connection to be ready or for its barrier instead.
        XCTAssertEqual(server, [])
    }

    func testATLS12FlightFollowedByTheFirstByteOfTheNextIsNotAtAFlightEnd() async throws {
        let f = try await flights(maximumVersion: .tls1_2)
        var parser = TLSFlightParser(sender: .client)
        try parser.append(f.client[0] + [f.client[1][0]])
        XCTAssertEqual(parser.boundaries.count, 1)
        XCTAssertFalse(parser.isAtFlightEnd)
        XCTAssertTrue(parser.endsInsideRecord)
    }

    func testHandshakeProgressOnRealTLS12FlightsWaitsForTheAnswerThenForReady() async throws {
        let f = try await flights(maximumVersion: .tls1_2)
        var client = TLSFlightParser(sender: .client)
        var server = TLSFlightParser(sender: .server)
        try client.append(f.client[0])
        // Half the server's first flight: nothing says the client owes anything yet.
        var half = server
        try half.append(Array(f.server[0][0 ..< f.server[0].count / 2]))
        XCTAssertEqual((0 ..< 3).map { TLSHandshakeProgress.next(client: client, server: half, hasOutput: false, isReady: false,
                                                                 barriersRun: $0) }, [.barrier, .barrier, .needMoreInput])
        try server.append(f.server[0])
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: false, isReady: false, barriersRun: 0),
                       .waitForOutput, "after ServerHelloDone the client owes its key exchange")
        var partial = client
        try partial.append(Array(f.client[1].dropLast()))
        XCTAssertEqual(TLSHandshakeProgress.next(client: partial, server: server, hasOutput: true, isReady: false, barriersRun: 0),
                       .waitForOutput, "a flight without its Finished is not handed out")
        try client.append(f.client[1])
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: true, isReady: false, barriersRun: 0),
                       .returnFlight, "a full TLS 1.2 handshake: the server's Finished comes after the client's")
        try server.append(f.server[1])
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: false, isReady: false, barriersRun: 0),
                       .waitForOutput)
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: false, isReady: true, barriersRun: 0),
                       .returnComplete)
    }

    func testHandshakeProgressOnRealTLS13FlightsWaitsForReadyAfterTheClientFinished() async throws {
        let f = try await flights(maximumVersion: .tls1_3)
        var client = TLSFlightParser(sender: .client)
        var server = TLSFlightParser(sender: .server)
        try client.append(f.client[0])
        try server.append(f.server[0])
        // The server's flight is encrypted after ServerHello: only barriers, then "more input", can tell.
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: false, isReady: false, barriersRun: 0),
                       .barrier)
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: false, isReady: false, barriersRun: 2),
                       .needMoreInput)
        try client.append(f.client[1])
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: true, isReady: false, barriersRun: 0),
                       .waitForReady, "the client's Finished after the server's is its last flight")
        XCTAssertEqual(TLSHandshakeProgress.next(client: client, server: server, hasOutput: true, isReady: true, barriersRun: 0),
                       .returnComplete)
    }

    func testGarbageAndOversizedRecordsAreRefusedWithTheirOffset() {
        var parser = TLSFlightParser(sender: .server)
        XCTAssertThrowsError(try parser.append([0x16, 0x03, 0x03, 0x00, 0x01, 0x01, 0x47, 0x45, 0x54, 0x20])) { error in
            XCTAssertEqual((error as? TLSRecordError)?.offset, 6, "the second record starts at byte 6: refused at its first byte")
        }
        var big = TLSFlightParser(sender: .server)
        // Refused on the header alone: 0x5000 bytes are never waited for nor buffered.
        XCTAssertThrowsError(try big.append([0x17, 0x03, 0x03, 0x50, 0x00])) { error in
            XCTAssertEqual((error as? TLSRecordError)?.offset, 3)
        }
        var version = TLSFlightParser(sender: .server)
        XCTAssertThrowsError(try version.append([0x16, 0x02, 0x00, 0x00, 0x01])) { error in
            XCTAssertEqual((error as? TLSRecordError)?.offset, 1)
        }
        var huge = TLSFlightParser(sender: .server)
        // A handshake message declaring 16 MiB: refused, not reassembled.
        XCTAssertThrowsError(try huge.append([0x16, 0x03, 0x03, 0x00, 0x04, 0x0B, 0xFF, 0xFF, 0xFF])) { error in
            XCTAssertEqual((error as? TLSRecordError)?.offset, 0)
        }
    }

    func testWholeRecordsAreCountedUpToAPartialOne() {
        let record: [UInt8] = [0x17, 0x03, 0x03, 0x00, 0x02, 0xAA, 0xBB]
        XCTAssertEqual(TLSFlightParser.lengthOfWholeRecords(record + record), 14)
        XCTAssertEqual(TLSFlightParser.lengthOfWholeRecords(record + record.dropLast()), 7)
        XCTAssertEqual(TLSFlightParser.lengthOfWholeRecords([0x17, 0x03, 0x03, 0xFF]), 0)
        XCTAssertEqual(TLSFlightParser.lengthOfWholeRecords([]), 0)
    }

    func testAnAlertEndsAFlightAndAHelloRetryRequestAsksForASecondClientHello() throws {
        var parser = TLSFlightParser(sender: .server)
        XCTAssertEqual(try parser.append([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]), [.init(end: .alert, offset: 7)])
        // A ServerHello whose random is the HelloRetryRequest value (RFC 8446 §4.1.3), split in two records.
        var body: [UInt8] = [0x03, 0x03] + TLSFlightParser.helloRetryRandom + [0x00, 0x13, 0x01, 0x00, 0x00, 0x00]
        body = [0x02, 0x00, 0x00, UInt8(body.count)] + body
        var hrr = TLSFlightParser(sender: .server)
        XCTAssertEqual(try hrr.append([0x16, 0x03, 0x03, 0x00, 0x10] + body[0 ..< 16]), [])
        let rest = Array(body[16...])
        XCTAssertEqual(try hrr.append([0x16, 0x03, 0x03, 0x00, UInt8(rest.count)] + rest),
                       [.init(end: .helloRetryRequest, offset: 5 + 16 + 5 + rest.count)])
    }
}

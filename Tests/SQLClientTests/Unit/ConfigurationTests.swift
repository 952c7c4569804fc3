#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

final class ConfigurationTests: XCTestCase {
    func testServerAddressForms() throws {
        let table: [(String, String, Int?, String?)] = [
            ("db.example.com", "db.example.com", nil, nil),
            ("db.example.com:1444", "db.example.com", 1444, nil),
            ("db.example.com,1444", "db.example.com", 1444, nil),
            ("db.example.com, 1444", "db.example.com", 1444, nil),
            ("tcp:db.example.com,1444", "db.example.com", 1444, nil),
            ("db\\SQLEXPRESS", "db", nil, "SQLEXPRESS"),
            ("db\\SQLEXPRESS:1500", "db", 1500, "SQLEXPRESS"),
            ("db\\SQLEXPRESS,1500", "db", 1500, "SQLEXPRESS"),
            ("10.0.0.5\\INST", "10.0.0.5", nil, "INST"),
            ("::1", "::1", nil, nil),
            ("fe80::1:2", "fe80::1:2", nil, nil),
            ("::1,1433", "::1", 1433, nil),
            ("[::1]", "::1", nil, nil),
            ("[::1]:14333", "::1", 14333, nil),
            ("[::1],14333", "::1", 14333, nil),
            ("[2001:db8::7]\\INST", "2001:db8::7", nil, "INST"),
            ("[2001:db8::7]\\INST,1500", "2001:db8::7", 1500, "INST"),
            (".", "localhost", nil, nil),
            ("(local)\\SQLEXPRESS", "localhost", nil, "SQLEXPRESS"),
        ]
        for (text, host, port, instance) in table {
            let address = try SQLServerAddress(parsing: text)
            XCTAssertEqual(address.host, host, text)
            XCTAssertEqual(address.port, port, text)
            XCTAssertEqual(address.instance, instance, text)
        }
        XCTAssertEqual(try SQLServerAddress(parsing: "[::1]\\I,5").description, "[::1]\\I,5")
    }

    func testBadServerAddresses() {
        for text in ["", "host:", "host,abc", "host:70000", "host,0", "[::1", "[::1]x", "host\\", "\\inst", "np:\\\\.\\pipe"] {
            XCTAssertThrowsError(try SQLServerAddress(parsing: text), text) { error in
                let code = (error as? SQLClientError)?.code
                XCTAssertTrue(code == .invalidConfiguration || code == .unsupported, "\(text): \(error)")
            }
        }
    }

    func testConnectionStringKeysAndSynonyms() throws {
        let config = try SQLConnectionConfiguration(connectionString: """
            Data Source=tcp:db.example.com,1444; Initial Catalog=shop; UID=app; PWD='it''s;secret';
            Encrypt=Optional; TrustServerCertificate=yes; Connect Timeout=7; App=reporting;
            Packet Size=8192; WSID=ws-12; Current Language=français; TDS Version=7.3; Text Size=1000;
            HostNameInCertificate=db.internal; Server Certificate=/etc/server.cer; CA File=/etc/ca.pem;
            Integrated Security=false;
            MultipleActiveResultSets=False
            """)
        XCTAssertEqual(config.address, SQLServerAddress(host: "db.example.com", port: 1444))
        XCTAssertEqual(config.database, "shop")
        XCTAssertEqual(config.user, "app")
        XCTAssertEqual(config.password.reveal(), "it's;secret")
        XCTAssertEqual(config.encryption, .off)
        XCTAssertTrue(config.tls.trustServerCertificate)
        XCTAssertEqual(config.connectTimeout, .seconds(7))
        XCTAssertEqual(config.applicationName, "reporting")
        XCTAssertEqual(config.packetSize, 8192)
        XCTAssertEqual(config.workstationID, "ws-12")
        XCTAssertEqual(config.language, "français")
        XCTAssertEqual(config.tdsVersion, .v7_3B)
        XCTAssertEqual(config.textSize, 1000)
        XCTAssertEqual(config.tls.hostNameInCertificate, "db.internal")
        XCTAssertEqual(config.tls.caFile, "/etc/ca.pem")
        XCTAssertEqual(config.tls.serverCertificate, "/etc/server.cer", "ServerCertificate pins, as in SqlClient")
        let pinned = try SQLConnectionConfiguration(connectionString: "Server=h;ServerCertificate=/a.pem;CAFile=/b.pem")
        XCTAssertEqual(pinned.tls.serverCertificate, "/a.pem")
        XCTAssertEqual(pinned.tls.caFile, "/b.pem")
        XCTAssertFalse(config.description.contains("secret"))
        XCTAssertTrue(config.description.contains("<redacted>"))

        let other = try SQLConnectionConfiguration(connectionString:
            "server={db\\INST};database=x;user id=u;password={p}}w};encrypt=true")
        XCTAssertEqual(other.address.instance, "INST")
        XCTAssertEqual(other.password.reveal(), "p}w")
        XCTAssertEqual(other.encryption, .on)
        let required = try SQLConnectionConfiguration(connectionString: "Address=h;Encrypt=required;TDSVersion=7.1")
        XCTAssertEqual(required.encryption, .required)
        XCTAssertEqual(required.tdsVersion.generation, 0x71)
    }

    func testUnknownKeysAreRefusedByName() {
        XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=h;Colour=blue;Password=hunter2")) { error in
            let e = error as? SQLClientError
            XCTAssertEqual(e?.code, .invalidConfiguration)
            XCTAssertTrue(e?.message.contains("\"Colour\"") ?? false, "\(error)")
            XCTAssertFalse("\(error)".contains("hunter2"))
        }
    }

    func testKnownButUnsupportedKeysAreRefusedAsNotSupported() {
        for entry in ["MultipleActiveResultSets=true",
                      "Authentication=ActiveDirectoryPassword", "AttachDbFilename=x.mdf", "Failover Partner=b",
                      "User Instance=true", "Pool Blocking Period=Auto"] {
            XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=h;\(entry)"), entry) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .unsupported, "\(entry): \(error)")
            }
        }
    }

    func testMalformedConnectionStrings() {
        for text in ["Database=x", "Server", "Server=h;Password='open", "Server=h;Packet Size=100",
                     "Server=h;Encrypt=maybe", "Server=h;TDS Version=5.0", "=x", "Server=h;Connect Timeout=-1"] {
            XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: text), text) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration, "\(text): \(error)")
            }
        }
    }

    // MARK: - SSRP ([MC-SQLR])

    func testSSRPRequestAndResponse() throws {
        XCTAssertEqual(SQLServerBrowser.request(instance: "SQLEXPRESS"), [0x04] + Array("SQLEXPRESS".utf8) + [0x00])
        let text = "ServerName;DB1;InstanceName;MSSQLSERVER;IsClustered;No;Version;16.0.1000.6;tcp;1433;;"
            + "ServerName;DB1;InstanceName;SQLEXPRESS;IsClustered;No;Version;16.0.1000.6;tcp;50123;np;\\\\DB1\\pipe\\x;;"
        let body = Array(text.utf8)
        let response = [0x05, UInt8(body.count & 0xFF), UInt8(body.count >> 8)] + body
        let instances = try SQLServerBrowser.parseResponse(response)
        XCTAssertEqual(instances.count, 2)
        XCTAssertEqual(instances[1]["instancename"], "SQLEXPRESS")
        XCTAssertEqual(instances[1]["tcp"], "50123")
        XCTAssertThrowsError(try SQLServerBrowser.parseResponse([0x05, 0x10])) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .protocolError)
        }
        XCTAssertThrowsError(try SQLServerBrowser.parseResponse([0x06, 0, 0])) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .protocolError)
        }
    }

    /// A UDP responder on loopback that answers CLNT_UCAST_INST (and CLNT_BCAST_EX/CLNT_UCAST_EX
    /// with every instance) like the SQL Server Browser.
    final class SSRPResponder: @unchecked Sendable {
        let fd: Int32
        let port: Int
        private(set) var requests: [[UInt8]] = []
        private let lock = NSLock()

        init(instances: [String: Int]) throws {
            #if canImport(Darwin)
            let sock = socket(AF_INET, SOCK_DGRAM, 0)
            #else
            let sock = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            #endif
            fd = sock
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr)
            let rc = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sock, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else { throw POSIXError(.EADDRINUSE) }
            var bound = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sock, $0, &len) }
            }
            port = Int(UInt16(bigEndian: bound.sin_port))
            Thread { [self] in
                while true {
                    var buffer = [UInt8](repeating: 0, count: 1024)
                    var from = sockaddr_storage()
                    var fromLen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let n = buffer.withUnsafeMutableBytes { raw in
                        withUnsafeMutablePointer(to: &from) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                recvfrom(sock, raw.baseAddress, raw.count, 0, $0, &fromLen)
                            }
                        }
                    }
                    if n <= 0 { return }
                    let request = Array(buffer[0 ..< n])
                    self.lock.withLock { self.requests.append(request) }
                    let text: String
                    if request.first == 0x02 || request.first == 0x03 {
                        // CLNT_BCAST_EX / CLNT_UCAST_EX: every instance, in one SVR_RESP.
                        text = instances.sorted { $0.key < $1.key }.map {
                            "ServerName;LOOPBACK;InstanceName;\($0.key.uppercased());IsClustered;No;Version;16.0.1000.6;tcp;\($0.value);;"
                        }.joined()
                    } else {
                        guard request.first == 0x04 else { continue }
                        let name = String(decoding: request.dropFirst().prefix { $0 != 0 }, as: UTF8.self)
                        guard let port = instances.first(where: { $0.key.caseInsensitiveCompare(name) == .orderedSame })?.value else {
                            continue  // a real Browser stays silent for an unknown instance
                        }
                        text = "ServerName;LOOPBACK;InstanceName;\(name.uppercased());IsClustered;No;Version;16.0.1000.6;tcp;\(port);;"
                    }
                    let body = Array(text.utf8)
                    let reply = [0x05, UInt8(body.count & 0xFF), UInt8(body.count >> 8)] + body
                    _ = reply.withUnsafeBytes { raw in
                        withUnsafePointer(to: &from) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                sendto(sock, raw.baseAddress, raw.count, 0, $0, fromLen)
                            }
                        }
                    }
                }
            }.start()
        }

        var received: [[UInt8]] { lock.withLock { requests } }

        func stop() {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    func testNamedInstanceResolvedThroughSSRPResponder() async throws {
        let responder = try SSRPResponder(instances: ["DEMO": 41433])
        defer { responder.stop() }
        let port = try await SQLServerBrowser.resolvePort(host: "127.0.0.1", instance: "demo",
                                                          browserPort: responder.port, timeout: .seconds(5))
        XCTAssertEqual(port, 41433)
        XCTAssertEqual(responder.received.first, SQLServerBrowser.request(instance: "demo"))
        do {
            _ = try await SQLServerBrowser.resolvePort(host: "127.0.0.1", instance: "OTHER", browserPort: responder.port,
                                                       timeout: .milliseconds(300))
            XCTFail("resolved an unknown instance")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .instanceNotFound)
        }
    }

    func testConnectToANamedInstanceOfTheLiveServer() async throws {
        try LiveServer.require()
        let responder = try SSRPResponder(instances: ["BRIDGE": LiveServer.port])
        defer { responder.stop() }
        var config = try SQLConnectionConfiguration(server: "127.0.0.1\\BRIDGE", user: LiveServer.user,
                                                    password: LiveServer.password, trustServerCertificate: true)
        config.browserPort = responder.port
        let connection = try await SQLConnection.connect(config)
        XCTAssertEqual(connection.port, LiveServer.port)
        let tables = try await connection.execute("SELECT COUNT(*) AS n FROM people")
        XCTAssertEqual(tables.resultSets.first?.rows.first?["n"]?.intValue, 4)
        await connection.close()
        XCTAssertEqual(responder.received.count, 1)
    }
}

/// A stream that records whether anything was written and answers nothing (reads wait until closed).
final class SilentStream: ByteStream, @unchecked Sendable {
    private let lock = NSLock()
    private var _written = 0
    private var _closed = false
    var written: Int { lock.withLock { _written } }
    var closed: Bool { lock.withLock { _closed } }
    func read(maxLength: Int) async throws -> [UInt8] { throw SQLClientError(.connectionClosed, "silent") }
    func write(_ bytes: [UInt8]) async throws { lock.withLock { _written += bytes.count } }
    func close() { lock.withLock { _closed = true } }
}

/// Configuration a user can type never traps: durations are clamped (or refused when negative)
/// and LOGIN7 fields over Microsoft's limits are refused by name before anything is sent.
final class ConfigurationValidationTests: XCTestCase {
    func testHugeDurationsFromTheConnectionStringAreClamped() throws {
        let text = "Server=h,1;Connect Timeout=9223372036854775807;Command Timeout=9223372036854775807"
        let c = try SQLConnectionConfiguration(connectionString: text)
        XCTAssertEqual(c.connectTimeout, SQLConnectionConfiguration.maximumTimeout)
        XCTAssertEqual(c.queryTimeout, SQLConnectionConfiguration.maximumTimeout)
        XCTAssertEqual(SQLConnectionConfiguration.maximumTimeout, .seconds(2_147_483_647))
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=h;Connect Timeout=0").connectTimeout,
                       SQLConnectionConfiguration.maximumTimeout)
        // Beyond Int64 is not a number of seconds at all.
        XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=h;Connect Timeout=99999999999999999999")) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .invalidConfiguration)
        }
    }

    func testAPIDurationsAreClampedOrRefusedByName() throws {
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "h", port: 1), user: "u", password: "p")
        c.connectTimeout = .seconds(Int64.max)
        c.loginTimeout = .seconds(Int64.max)
        c.queryTimeout = .seconds(Int64.max)
        c.cancelTimeout = .seconds(Int64.max)
        let v = try c.validated()
        for d in [v.connectTimeout, v.loginTimeout, v.queryTimeout, v.cancelTimeout] {
            XCTAssertEqual(d, SQLConnectionConfiguration.maximumTimeout)
        }
        for (name, adjust) in [("connectTimeout", { (c: inout SQLConnectionConfiguration) in c.connectTimeout = .seconds(-1) }),
                               ("queryTimeout", { $0.queryTimeout = .milliseconds(-5) }),
                               ("cancelTimeout", { $0.cancelTimeout = .seconds(Int64.min) })] {
            var bad = c
            adjust(&bad)
            XCTAssertThrowsError(try bad.validated()) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration)
                XCTAssertTrue((error as? SQLClientError)?.message.contains(name) ?? false, "\(error)")
            }
        }
        var packet = c
        packet.packetSize = -1
        XCTAssertThrowsError(try packet.validated())
        var value = c
        value.maximumValueSize = 0
        XCTAssertThrowsError(try value.validated())
    }

    /// Text Size becomes `SET TEXTSIZE n` after login, an int on the server: beyond -1…2147483647
    /// it is refused where it is configured (connection string, API), never sent.
    func testTextSizeIsBoundedBySetTextSizesInt() throws {
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=h;Text Size=2147483647").textSize, 2_147_483_647)
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=h;Text Size=-1").textSize, -1)
        for value in ["2147483648", "9223372036854775807", "-2"] {
            XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=h;Text Size=\(value)"), value) {
                XCTAssertEqual(($0 as? SQLClientError)?.code, .invalidConfiguration)
                XCTAssertEqual(($0 as? SQLClientError)?.message, "invalid value for Text Size (-1 to 2147483647 bytes)")
            }
        }
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "h", port: 1), user: "u", password: "p")
        c.textSize = Int(Int32.max)
        XCTAssertEqual(try c.validated().textSize, 2_147_483_647)
        c.textSize = Int.max
        XCTAssertThrowsError(try c.validated()) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .invalidConfiguration)
            XCTAssertTrue(($0 as? SQLClientError)?.message.contains("textSize") ?? false, "\($0)")
        }
    }

    /// A 40,000-character password, user or database: `.invalidConfiguration` naming the field
    /// (never its value), and not one byte sent.
    func testLongLogin7FieldsAreRefusedBeforeAnythingIsSent() async throws {
        let long = String(repeating: "s", count: 40_000)
        let cases: [(String, (inout SQLConnectionConfiguration) -> Void)] = [
            ("password", { $0.password = RedactedPassword(long) }),
            ("user", { $0.user = long }),
            ("database", { $0.database = long }),
            ("applicationName", { $0.applicationName = long }),
            ("workstationID", { $0.workstationID = long }),
        ]
        for (field, adjust) in cases {
            var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: 1), user: "u",
                                               password: "p", encryption: .notSupported)
            adjust(&c)
            let stream = SilentStream()
            do {
                _ = try await SQLConnection.connect(c, over: stream)
                XCTFail("\(field): connected")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .invalidConfiguration, "\(field): \(error)")
                XCTAssertTrue(error.message.contains(field), "\(field): \(error.message)")
                XCTAssertFalse(error.message.contains("sssss"), "the value is never shown")
            }
            XCTAssertEqual(stream.written, 0, "\(field): nothing may be sent")
            // Through the socket path the check comes before connecting (port 1 would refuse).
            do {
                _ = try await SQLConnection.connect(c)
                XCTFail("\(field): connected")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .invalidConfiguration, "\(field): \(error)")
            }
        }
    }

    /// `Duration.seconds(Int64.max)` for every timeout, and per request: connecting and running
    /// a query work (clamped, no trap).
    func testInt64MaxDurationsConnectAndRun() async throws {
        let exchange = ReplayConnectionTests.exchange("SELECT id, name FROM t", [
            ReplayConnectionTests.colMetadata(), ReplayConnectionTests.row(7, "x"), ReplayConnectionTests.done([.count], 1),
        ])
        let server = ReplayServer(session: ReplaySession(name: "durations", exchanges: [exchange, exchange]))
        _ = try server.start()
        defer { server.stop() }
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "u",
                                           password: "p", encryption: .notSupported, connectTimeout: .seconds(Int64.max))
        c.loginTimeout = .seconds(Int64.max)
        c.queryTimeout = .seconds(Int64.max)
        c.cancelTimeout = .seconds(Int64.max)
        let connection = try await SQLConnection.connect(c)
        XCTAssertEqual(connection.configuration.queryTimeout, SQLConnectionConfiguration.maximumTimeout)
        let rows = try await connection.execute("SELECT id, name FROM t").resultSets.first?.rows
        XCTAssertEqual(rows?.first?[0], .int(7))
        let literal = try await connection.execute("SELECT id, name FROM t", timeout: .seconds(Int64.max))
        XCTAssertEqual(literal.rows.first?[0], .int(7))
        await connection.close()
    }

    func testEmptyHostNameInCertificateMeansTheHostConnectedTo() throws {
        XCTAssertEqual(TLSConfiguration(hostNameInCertificate: "").expectedHostName(connectingTo: "db.example.com"), "db.example.com")
        XCTAssertEqual(TLSConfiguration(hostNameInCertificate: nil).expectedHostName(connectingTo: "db.example.com"), "db.example.com")
        XCTAssertEqual(TLSConfiguration(hostNameInCertificate: "alias").expectedHostName(connectingTo: "db.example.com"), "alias")
    }
}

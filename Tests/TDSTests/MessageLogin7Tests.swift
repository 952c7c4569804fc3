import XCTest
@testable import TDS

final class MessageLogin7Tests: XCTestCase {
    private func sample(_ version: TDSVersion, features: [Login7Feature]? = nil) -> Login7 {
        Login7(tdsVersion: version, packetSize: 8000, clientProgramVersion: 0x0700_0000, clientPID: 4321,
               connectionID: 7, optionFlags1: [.useDB, .initDBFatal, .setLang], optionFlags2: [.initLangFatal, .odbc],
               typeFlags: [.readOnlyIntent], optionFlags3: [.unknownCollationHandling], clientTimeZone: -300,
               clientLCID: 0x0409, hostName: "büro-host", userName: "sa", password: "p@ssw0rd€😀",
               appName: "sqlclient", serverName: "db.example,1433", libraryName: "SQLClient", language: "us_english",
               database: "master", clientID: [1, 2, 3, 4, 5, 6], sspi: [0x4E, 0x54, 0x4C, 0x4D],
               attachDBFile: "C:\\db.mdf", changePassword: version >= .v7_2 ? "n3w" : "", featureExt: features)
    }

    func testRoundTripEveryVersion() throws {
        for v in [TDSVersion.v7_1_1, .v7_2, .v7_3A, .v7_3B, .v7_4] {
            let login = sample(v, features: v == .v7_4 ? [.utf8Support, Login7Feature(id: 0x77, data: [1, 2, 3])] : nil)
            let bytes = login.encode()
            XCTAssertEqual(Int(bytes[0]) | Int(bytes[1]) << 8, bytes.count)
            XCTAssertEqual(Array(bytes[4..<8]), [UInt8(v.rawValue & 0xFF), UInt8(v.rawValue >> 8 & 0xFF),
                                                  UInt8(v.rawValue >> 16 & 0xFF), UInt8(v.rawValue >> 24)])  // little-endian
            // ibHostName = size of the fixed part.
            XCTAssertEqual(Int(bytes[36]) | Int(bytes[37]) << 8, v >= .v7_2 ? 94 : 86)
            let decoded = try Login7.decode(from: bytes)
            XCTAssertEqual(decoded, login, "\(v)")
            XCTAssertEqual(decoded.password.reveal(), "p@ssw0rd€😀")
            XCTAssertEqual(decoded.encode(), bytes)
        }
    }

    func testFeatureExtUTF8AndTerminator() throws {
        let login = sample(.v7_4, features: [.utf8Support])
        XCTAssertTrue(login.optionFlags3.contains(.extensionUsed))
        let bytes = login.encode()
        // FeatureExt is last: 0x0A, length 0 (4 bytes), terminator 0xFF.
        XCTAssertEqual(Array(bytes.suffix(6)), [0x0A, 0, 0, 0, 0, 0xFF])
        let d = try Login7.decode(from: bytes)
        XCTAssertTrue(d.requestsUTF8Support)
        XCTAssertEqual(d.featureExt, [.utf8Support])
        // An empty FeatureExt (terminator only) is kept distinct from none.
        let empty = try Login7.decode(from: sample(.v7_4, features: []).encode())
        XCTAssertEqual(empty.featureExt, [])
        XCTAssertNil(try Login7.decode(from: sample(.v7_4).encode()).featureExt)
    }

    func testPasswordObfuscation() {
        // 'a' = 0x61 -> swap 0x16 -> ^A5 = 0xB3; 0x00 -> 0xA5.
        XCTAssertEqual(Login7.obfuscate([0x61, 0x00]), [0xB3, 0xA5])
        XCTAssertEqual(Login7.deobfuscate([0xB3, 0xA5]), [0x61, 0x00])
        let all = (0...255).map { UInt8($0) }
        XCTAssertEqual(Login7.deobfuscate(Login7.obfuscate(all)), all)
    }

    func testDescriptionNeverShowsPassword() {
        let secret = "Tr0ub4dor&3-very-secret"
        let login = Login7(userName: "sa", password: RedactedPassword(secret), changePassword: RedactedPassword(secret + "2"))
        var dumped = ""
        dump(login, to: &dumped)
        let texts = [login.description, String(describing: login), String(reflecting: login), "\(login)", dumped,
                     String(describing: login.password), String(reflecting: login.password),
                     Mirror(reflecting: login).children.map { "\($0.label ?? ""): \($0.value)" }.joined(),
                     Mirror(reflecting: login.password).children.map { "\($0.value)" }.joined()]
        for t in texts {
            XCTAssertFalse(t.contains(secret), "password leaked in: \(t)")
            XCTAssertFalse(t.contains("Tr0ub4dor"), "password leaked in: \(t)")
        }
        XCTAssertTrue(login.description.contains("<redacted>"))
        XCTAssertEqual(login.password.reveal(), secret)
    }

    func testSpecLoginRequest() throws {
        let (header, body) = try MessageFixtures.packet("ms-tds-spec/02-login-request.hex")
        XCTAssertEqual(header.type, .login7)
        let l = try Login7.decode(from: body)
        XCTAssertEqual(l.tdsVersion, .v7_2)
        XCTAssertEqual(l.packetSize, 4096)
        XCTAssertEqual(l.clientProgramVersion, 0x0700_0000)
        XCTAssertEqual(l.clientPID, 0x0100)
        XCTAssertEqual(l.connectionID, 0)
        XCTAssertEqual(l.optionFlags1.rawValue, 0xE0)
        XCTAssertEqual(l.optionFlags2.rawValue, 0x03)
        XCTAssertEqual(l.typeFlags.rawValue, 0)
        XCTAssertEqual(l.optionFlags3.rawValue, 0)
        XCTAssertEqual(l.clientTimeZone, 0)
        XCTAssertEqual(l.clientLCID, 0x0409)
        XCTAssertEqual(l.hostName, "skostov1")
        XCTAssertEqual(l.userName, "sa")
        XCTAssertTrue(l.password.isEmpty)
        XCTAssertEqual(l.appName, "OSQL-32")
        XCTAssertEqual(l.serverName, "")
        XCTAssertEqual(l.libraryName, "ODBC")
        XCTAssertEqual(l.language, "")
        XCTAssertEqual(l.database, "")
        XCTAssertEqual(l.clientID, [0x00, 0x50, 0x8B, 0xE2, 0xB7, 0x8F])
        XCTAssertEqual(l.sspi, [])
        XCTAssertNil(l.featureExt)
        XCTAssertEqual(l.encode(), body)
    }

    func testSpecFederatedAuthLogin() throws {
        let (_, body) = try MessageFixtures.packet("ms-tds-spec/03-login-request-federated-auth.hex")
        let l = try Login7.decode(from: body)
        XCTAssertEqual(l.tdsVersion, .v7_4)
        XCTAssertEqual(l.hostName, "DANBENED3-XGZUO")
        XCTAssertEqual(l.userName, "")
        XCTAssertEqual(l.appName, "SQLCMD")
        XCTAssertEqual(l.serverName, "cloud.dev.mscds.com,1435")
        XCTAssertEqual(l.libraryName, "ODBC")
        XCTAssertTrue(l.optionFlags3.contains(.extensionUsed))
        let features = try XCTUnwrap(l.featureExt)
        XCTAssertEqual(features.map(\.id), [Login7Feature.fedAuthID])
        XCTAssertEqual(features[0].data.count, 1854)
        // FEDAUTH data can carry a token: dumps show its length only.
        var dumped = ""
        dump(l, to: &dumped)
        XCTAssertTrue(dumped.contains("1854"))
        XCTAssertLessThan(dumped.split(separator: "\n").count, 100)  // not one line per data byte
        XCTAssertEqual(try Login7.decode(from: l.encode()), l)
    }

    func testSpecFeatureExtSessionRecoveryAndAzure() throws {
        let (_, b16) = try MessageFixtures.packet("ms-tds-spec/16-featureext-sessionrecovery.hex")
        let l16 = try Login7.decode(from: b16)
        XCTAssertEqual(l16.userName, "sa")
        XCTAssertEqual(l16.appName, "OSQL-32")
        XCTAssertEqual(l16.database, "tempdb")
        XCTAssertEqual(l16.featureExt?.map(\.id), [Login7Feature.sessionRecoveryID])
        XCTAssertEqual(l16.featureExt?.first?.data.count, 0x67)
        XCTAssertEqual(l16.encode(), b16)

        let (_, b20) = try MessageFixtures.packet("ms-tds-spec/20-featureext-azuresqlsupport.hex")
        let l20 = try Login7.decode(from: b20)
        XCTAssertEqual(l20.packetSize, 8000)
        XCTAssertEqual(l20.userName, "cloudsa")
        XCTAssertEqual(l20.database, "testdb")
        XCTAssertEqual(l20.appName, ".Net SqlClient Data Provider")
        XCTAssertEqual(l20.typeFlags, [.readOnlyIntent])
        XCTAssertEqual(l20.featureExt?.map(\.id), [0x01, 0x04, 0x05, 0x08])
        XCTAssertEqual(l20.featureExt?.map(\.name), ["SESSIONRECOVERY", "COLUMNENCRYPTION", "GLOBALTRANSACTIONS", "AZURESQLSUPPORT"])
        XCTAssertEqual(try Login7.decode(from: l20.encode()), l20)
    }

    func testPySQLBridgeDotNetLogin7WithSSPI() throws {
        let body = try MessageFixtures.hex("pysqlbridge/client_login7.hex")  // LOGIN7 body, no header
        let l = try Login7.decode(from: body)
        XCTAssertEqual(l.tdsVersion, .v7_4)
        XCTAssertEqual(l.packetSize, 8000)
        XCTAssertEqual(l.hostName, "WORKSTATION1")
        XCTAssertEqual(l.userName, "")
        XCTAssertTrue(l.password.isEmpty)
        XCTAssertTrue(l.optionFlags2.contains(.integratedSecurity))
        XCTAssertEqual(l.serverName, "tcp:127.0.0.1,1337")
        XCTAssertEqual(l.database, "master")
        XCTAssertEqual(l.sspi.count, 129)
        XCTAssertEqual(l.sspi.first, 0x60)  // SPNEGO (ASN.1 application 0)
        XCTAssertEqual(l.featureExt?.map(\.id), [0x01, 0x04, 0x05])
        XCTAssertEqual(try Login7.decode(from: l.encode()), l)
    }

    func testR2DBCLogin7() throws {
        let body = try MessageFixtures.hex("r2dbc-mssql/client-requests/Login7UnitTests_shouldRenderSimpleLoginPacket.hex")
        let l = try Login7.decode(from: body)
        XCTAssertEqual(l.tdsVersion, .v7_4)
        XCTAssertEqual(l.hostName, "some-fancy-hostname")
        XCTAssertEqual(l.userName, "sa")
        XCTAssertEqual(l.password.reveal(), "super-secret")
        XCTAssertFalse(l.description.contains("super-secret"))
        XCTAssertEqual(l.appName, "MyApp")
        XCTAssertEqual(l.serverName, "localhost")
        XCTAssertEqual(l.libraryName, "MyDriver")
        XCTAssertEqual(l.database, "master")
        XCTAssertEqual(l.featureExt?.map(\.id), [Login7Feature.columnEncryptionID])
        XCTAssertEqual(try Login7.decode(from: l.encode()), l)
    }

    /// Recipe: every prefix of three real LOGIN7 messages must throw a typed error, never trap.
    func testTruncationAtEveryOffsetIsTypedError() throws {
        var bodies = [try MessageFixtures.hex("pysqlbridge/client_login7.hex")]
        bodies.append(try MessageFixtures.packet("ms-tds-spec/20-featureext-azuresqlsupport.hex").1)
        bodies.append(try MessageFixtures.hex("r2dbc-mssql/client-requests/Login7UnitTests_shouldRenderSimpleLoginPacket.hex"))
        for body in bodies {
            for cut in 0..<body.count {
                do {
                    _ = try Login7.decode(from: Array(body.prefix(cut)))
                    XCTFail("prefix of \(cut) bytes decoded")
                } catch {
                    XCTAssertEqual(error.code, .truncated, "cut at \(cut)")
                    XCTAssertEqual(error.context, "LOGIN7")
                }
            }
        }
    }

    /// Recipe: corrupt each byte of the fixed part of a real LOGIN7 (set it to 0xFF, then 0x00):
    /// decoding must return or throw a typed error, never trap.
    func testHostileOffsetsNeverTrap() throws {
        let body = try MessageFixtures.hex("pysqlbridge/client_login7.hex")
        var errors = 0
        for i in 0..<94 {
            for v: UInt8 in [0xFF, 0x00, 0x80] {
                var m = body
                m[i] = v
                do { _ = try Login7.decode(from: m) } catch { errors += 1 }
            }
        }
        XCTAssertGreaterThan(errors, 20)
        // A Length under the fixed part is invalidLength.
        var short = body
        short[0] = 10; short[1] = 0
        XCTAssertThrowsError(try Login7.decode(from: short)) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .invalidLength)
        }
    }
}

final class MessageLogin7LimitsTests: XCTestCase {
    /// Microsoft's limits: 128 UTF-16 code units for every string field but AtchDBFile (260);
    /// the violation names the field, never its value.
    func testLimitViolationNamesTheField() {
        let long = String(repeating: "x", count: 40_000)
        let cases: [(Login7, String)] = [
            (Login7(password: RedactedPassword(long)), "Password"),
            (Login7(userName: long), "UserName"),
            (Login7(database: long), "Database"),
            (Login7(hostName: String(repeating: "h", count: 129)), "HostName"),
            (Login7(appName: long), "AppName"),
            (Login7(language: long), "Language"),
            (Login7(attachDBFile: String(repeating: "p", count: 261)), "AtchDBFile"),
            (Login7(changePassword: RedactedPassword(long)), "ChangePassword"),
        ]
        for (login, field) in cases {
            let v = login.limitViolation
            XCTAssertEqual(v?.field, field)
            XCTAssertFalse(v?.description.contains("xxxx") ?? true)
        }
        XCTAssertNil(Login7(hostName: String(repeating: "h", count: 128), userName: String(repeating: "u", count: 128),
                            password: RedactedPassword(String(repeating: "p", count: 128)),
                            attachDBFile: String(repeating: "a", count: 260)).limitViolation)
        // A 128-character password of surrogate pairs is 256 code units.
        XCTAssertEqual(Login7(password: RedactedPassword(String(repeating: "😀", count: 65))).limitViolation?.field, "Password")
    }

    /// Even encoded without checking, fields are cut at their limits: the offsets never wrap,
    /// so the fields never overlap (a 40,000-character password never leaks into AppName).
    func testEncodeNeverWrapsOffsets() throws {
        let long = String(repeating: "p", count: 40_000)
        let login = Login7(userName: "user", password: RedactedPassword(long), appName: "app", database: "db",
                           sspi: [UInt8](repeating: 9, count: 70_000))
        let decoded = try Login7.decode(from: login.encode())
        XCTAssertEqual(decoded.appName, "app")
        XCTAssertEqual(decoded.userName, "user")
        XCTAssertEqual(decoded.database, "db")
        XCTAssertEqual(decoded.password.reveal().count, 128)
        XCTAssertEqual(decoded.sspi.count, 70_000)
    }

    /// A cut never splits a surrogate pair (found by the Login7 fuzz harness: the cut text was
    /// invalid UTF-16 and the encoded LOGIN7 did not decode). 127 units then a pair: the pair
    /// would straddle the 128-unit limit, so both of its units go.
    func testEncodeCutKeepsSurrogatePairsWhole() throws {
        let straddling = String(repeating: "a", count: 127) + "😀" + "b"
        let login = Login7(hostName: straddling, password: RedactedPassword(straddling),
                           attachDBFile: String(repeating: "p", count: 259) + "😀")
        let decoded = try Login7.decode(from: login.encode())
        XCTAssertEqual(decoded.hostName, String(repeating: "a", count: 127))
        XCTAssertEqual(decoded.password.reveal(), String(repeating: "a", count: 127))
        XCTAssertEqual(decoded.attachDBFile, String(repeating: "p", count: 259))
        // A pair that ends exactly at the limit stays.
        let fits = String(repeating: "a", count: 126) + "😀" + "b"
        XCTAssertEqual(try Login7.decode(from: Login7(userName: fits).encode()).userName,
                       String(repeating: "a", count: 126) + "😀")
    }
}

final class MessageLogin7LongSSPITests: XCTestCase {
    /// SSPI of 65,535 bytes or more: cbSSPI = 0xFFFF and the length in cbSSPILong (7.2+).
    func testLongSSPI() throws {
        let sspi = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let login = Login7(tdsVersion: .v7_4, hostName: "h", sspi: sspi)
        let bytes = login.encode()
        XCTAssertEqual(Array(bytes[80..<82]), [0xFF, 0xFF])   // cbSSPI
        XCTAssertEqual(Array(bytes[90..<94]), [0x70, 0x11, 0x01, 0x00])  // cbSSPILong = 70000
        let d = try Login7.decode(from: bytes)
        XCTAssertEqual(d.sspi, sspi)
        XCTAssertEqual(d, login)
    }
}

final class MessageFedAuthTokenTests: XCTestCase {
    func testRoundTripRedactionAndErrors() throws {
        let secret = "eyJ0eXAiOiJKV1QiLCJhbGciOi-secret-token"
        let plain = FedAuthTokenMessage(accessToken: secret)
        let bytes = plain.encode()
        let n = secret.utf16.count * 2
        XCTAssertEqual(Array(bytes.prefix(8)), [UInt8(n + 4), 0, 0, 0, UInt8(n), 0, 0, 0])
        XCTAssertEqual(try FedAuthTokenMessage.decode(from: bytes), plain)
        let withNonce = FedAuthTokenMessage(token: [1, 2, 3], nonce: Array(repeating: 7, count: 32))
        XCTAssertEqual(try FedAuthTokenMessage.decode(from: withNonce.encode()), withNonce)
        var dumped = ""
        dump(plain, to: &dumped)
        for text in [plain.description, String(reflecting: plain), dumped, "\(plain.token)"] {
            XCTAssertFalse(text.contains("eyJ0eXAi"), text)
            XCTAssertFalse(text.contains("e\0y\0J"), text)
        }
        // Trailing bytes that are not a 32-byte nonce, and truncation.
        var bad = FedAuthTokenMessage(token: [1]).encode()
        bad[0] += 2; bad += [0, 0]
        XCTAssertThrowsError(try FedAuthTokenMessage.decode(from: bad)) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .invalidLength)
        }
        for cut in 0..<bytes.count {
            XCTAssertThrowsError(try FedAuthTokenMessage.decode(from: Array(bytes.prefix(cut))))
        }
    }
}

import XCTest
import TDS
@testable import SQLClient

/// The session's server program name without LOGINACK's NUL padding, and a refused connection
/// naming its address once.
extension ConnectionStateMachineTests {
    func testServerProgramNameIsTrimmedOfNULPadding() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        let ack = Token.loginAck(LoginAck(tdsVersion: .v7_4, programName: "Microsoft SQL Server\0\0",
                                          serverVersion: .init(major: 16, minor: 0, build: 4135)))
        _ = run(&machine, [.connected, .prelogin(.notSupported), .token(ack), .token(Self.done([])), .messageEnded])
        XCTAssertEqual(machine.state, .ready)
        XCTAssertEqual(machine.session.serverProgramName, "Microsoft SQL Server")
    }

    func testRefusedConnectionNamesTheAddressOnce() async {
        do {
            _ = try await SocketStream.connect(host: "127.0.0.1", port: 1, timeout: .seconds(10))
            XCTFail("port 1 accepted a connection")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionFailed, error.message)
            XCTAssertEqual(error.message.components(separatedBy: "127.0.0.1:1").count - 1, 1, error.message)
            XCTAssertTrue(error.message.hasPrefix("could not connect to 127.0.0.1:1: "), error.message)
        } catch {
            XCTFail("\(error)")
        }
    }
}

import Foundation
import XCTest
@testable import SQLClient

/// MultiSubnetFailover's connect: every address at once, the first to complete wins.
final class ParallelConnectTests: XCTestCase {
    func testTheAddressThatAnswersWinsWhileAnotherHangs() async throws {
        // 127.0.0.1:P never completes a connection (backlog 0, its one slot taken, nothing accepted);
        // 127.0.0.2:P accepts. In order, the first address would use the whole timeout.
        let hanging = try LoopbackListener(backlog: 0, accepting: false)
        defer { hanging.stop() }
        let filler = try await SocketStream.connect(host: "127.0.0.1", port: hanging.port, timeout: .seconds(5))
        defer { filler.close() }
        let answering: LoopbackListener
        do {
            answering = try LoopbackListener(address: "127.0.0.2", port: UInt16(hanging.port)) { fd in _ = LoopbackListener.readSome(fd) }
        } catch {
            throw XCTSkip("127.0.0.2 is not usable here: \(error)")
        }
        defer { answering.stop() }
        let stream = try await ParallelConnect.connect(addresses: ["127.0.0.1", "127.0.0.2"], port: hanging.port,
                                                       timeout: .seconds(30))
        XCTAssertEqual(stream.remoteAddress, "127.0.0.2:\(hanging.port)")
        stream.close()
    }

    func testEveryAddressFailingNamesEach() async throws {
        let closed = try LoopbackListener(accepting: false)
        let port = closed.port
        closed.stop()
        do {
            _ = try await ParallelConnect.connect(addresses: ["127.0.0.1", "127.0.0.3", "127.0.0.1"], port: port, timeout: .seconds(5))
            XCTFail("connected to a closed port")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionFailed)
            XCTAssertTrue(error.message.contains("127.0.0.1:\(port)") && error.message.contains("127.0.0.3:\(port)"), error.message)
        }
    }

    func testAHostIsResolvedToItsAddresses() async throws {
        let listener = try LoopbackListener { fd in _ = LoopbackListener.readSome(fd) }
        defer { listener.stop() }
        let stream = try await ParallelConnect.connect(host: "localhost", port: listener.port, timeout: .seconds(10))
        XCTAssertTrue(stream.remoteAddress.hasPrefix("127.0.0.1:"), stream.remoteAddress)
        stream.close()
        do {
            _ = try await ParallelConnect.connect(host: "no-such-host.invalid", port: 1433, timeout: .seconds(5))
            XCTFail("resolved a .invalid name")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .hostNotFound)
        }
    }
}

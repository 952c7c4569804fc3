#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
@testable import SQLClient
import XCTest

/// A read receives into the array given back to the socket (``SocketStream/giveBack(_:)``,
/// issue 43: its pages are already touched), with the bytes the peer sent; `[]` lets go of it.
final class SocketStreamStorageTests: XCTestCase {
    /// A listener on 127.0.0.1 that accepts one connection, sends `bytes` and closes it.
    private func serve(_ bytes: [UInt8]) throws -> (port: Int, done: Thread) {
        #if os(Linux)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let noSignal = Int32(MSG_NOSIGNAL)
        #else
        let listener = socket(AF_INET, SOCK_STREAM, 0)
        let noSignal: Int32 = 0
        #endif
        XCTAssertGreaterThanOrEqual(listener, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 1), 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread {
            let peer = accept(listener, nil, nil)
            var sent = 0
            while peer >= 0, sent < bytes.count {
                let n = bytes.withUnsafeBytes { send(peer, $0.baseAddress! + sent, bytes.count - sent, noSignal) }
                if n <= 0 { break }
                sent += n
            }
            if peer >= 0 { close(peer) }
            close(listener)
        }
        thread.start()
        return (port, thread)
    }

    func testAReadReceivesIntoTheArrayGivenBackWithThePeersBytes() async throws {
        let bytes = (0 ..< 1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }
        let (port, _) = try serve(bytes)
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
        defer { stream.close() }
        func address(_ a: [UInt8]) -> UInt? { a.withUnsafeBufferPointer { $0.baseAddress.map(UInt.init(bitPattern:)) } }
        var received: [UInt8] = []
        var reused = 0
        var given: UInt?
        while true {
            // 64 KiB a read: the array given back is large enough for the next.
            let piece = try await stream.read(maxLength: 65_536)
            if piece.isEmpty { break }
            if let given, address(piece) == given { reused += 1 }
            received += piece
            XCTAssertEqual(stream.keptReadStorageCapacity, 0, "a read did not take the array kept")
            if piece.count == 65_536 {
                given = address(piece)
                stream.giveBack(piece)
                XCTAssertGreaterThanOrEqual(stream.keptReadStorageCapacity, 65_536)
            } else {
                given = nil
            }
        }
        // `[]` lets go of the array kept (a response ended: an idle connection keeps none).
        stream.giveBack((0 ..< 70_000).map { UInt8(truncatingIfNeeded: $0) })
        XCTAssertGreaterThanOrEqual(stream.keptReadStorageCapacity, 70_000)
        stream.giveBack([])
        XCTAssertEqual(stream.keptReadStorageCapacity, 0)
        XCTAssertEqual(received, bytes)
        XCTAssertGreaterThan(reused, 0, "no read received into the array given back")
    }
    /// An array given back with the room for a read but fewer bytes (an earlier read came back
    /// short) is still received into: filled out first, then holding only the peer's bytes.
    func testAShortArrayWithRoomForTheReadIsReceivedInto() async throws {
        let bytes = (0 ..< 200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }
        let (port, _) = try serve(bytes)
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: port, timeout: .seconds(10))
        defer { stream.close() }
        func address(_ a: [UInt8]) -> UInt? { a.withUnsafeBufferPointer { $0.baseAddress.map(UInt.init(bitPattern:)) } }
        var short: [UInt8] = Array(repeating: 0xEE, count: 100)
        short.reserveCapacity(65_536)
        let given = address(short)
        stream.giveBack(short)
        short = []   // the kept array's one reference is the stream's
        let first = try await stream.read(maxLength: 65_536)
        XCTAssertEqual(address(first), given, "the array kept, with room for the read, was not received into")
        XCTAssertFalse(first.isEmpty)
        XCTAssertEqual(first, Array(bytes.prefix(first.count)), "the bytes are not the peer's")
        var received = first
        while true {
            let piece = try await stream.read(maxLength: 65_536)
            if piece.isEmpty { break }
            received += piece
        }
        XCTAssertEqual(received, bytes)
    }
}

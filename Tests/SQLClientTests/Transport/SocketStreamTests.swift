#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
@testable import SQLClient

final class SocketStreamTests: XCTestCase {
    /// An echo server: everything received is sent back until the client closes.
    private func echoListener(address: String = "127.0.0.1") throws -> LoopbackListener {
        try LoopbackListener(address: address) { fd in
            while true {
                let chunk = LoopbackListener.readSome(fd)
                if chunk.isEmpty { return }
                LoopbackListener.writeAll(fd, chunk)
            }
        }
    }

    private static func readExactly(_ stream: any ByteStream, _ count: Int) async throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            let chunk = try await stream.read(maxLength: count - out.count)
            if chunk.isEmpty { break }
            out += chunk
        }
        return out
    }

    func testEchoOverIPv4() async throws {
        let listener = try echoListener()
        defer { listener.stop() }
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(10))
        defer { stream.close() }
        XCTAssertEqual(stream.remoteAddress, "127.0.0.1:\(listener.port)")
        let payload: [UInt8] = [0x12, 0x01, 0x00, 0x2F, 0x00, 0x00, 0x01, 0x00]
        try await stream.write(payload)
        let echoed = try await Self.readExactly(stream, payload.count)
        XCTAssertEqual(echoed, payload)
    }

    func testLargeWriteIsReadBackWhole() async throws {
        // 3 MiB exceeds the socket buffers, so writes must wait for writability.
        let listener = try echoListener()
        defer { listener.stop() }
        let stream = try await SocketStream.connect(host: "localhost", port: listener.port, timeout: .seconds(10))
        defer { stream.close() }
        let payload = (0 ..< 3 * 1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        async let echoed = Self.readExactly(stream, payload.count)
        try await stream.write(payload)
        let received = try await echoed
        XCTAssertEqual(received.count, payload.count)
        XCTAssertEqual(received, payload)
    }

    func testReadBuffersGrowWhileReadsComeBackFullAndStartOverAfterAShortOne() {
        XCTAssertEqual(SocketStream.initialReadCapacity, 65_536)
        XCTAssertEqual(SocketStream.readCapacity(after: 65_536, of: 65_536), 131_072)
        XCTAssertEqual(SocketStream.readCapacity(after: 262_144, of: 262_144), 524_288)
        XCTAssertEqual(SocketStream.readCapacity(after: 100, of: 524_288), 65_536)
        XCTAssertEqual(SocketStream.readCapacity(after: 65_535, of: 65_536), 65_536)
        // No overflow whatever the capacity.
        XCTAssertEqual(SocketStream.readCapacity(after: Int.max, of: Int.max), 1 << 31)
    }

    func testAStreamOfMegabytesIsReadWholeInReadsNoLargerThanAsked() async throws {
        // 4 MiB sent at once, read with maxLength 512 KiB: the buffers grow from 64 KiB while
        // reads come back full, never past maxLength, and every byte arrives in order.
        let payload = (0 ..< 4 * 1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let listener = try LoopbackListener { fd in LoopbackListener.writeAll(fd, payload) }
        defer { listener.stop() }
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(10))
        defer { stream.close() }
        var received: [UInt8] = []
        var sizes: [Int] = []
        while received.count < payload.count {
            let chunk = try await stream.read(maxLength: 524_288)
            if chunk.isEmpty { break }
            sizes.append(chunk.count)
            received += chunk
        }
        XCTAssertEqual(received.count, payload.count)
        XCTAssertTrue(received == payload)
        XCTAssertLessThanOrEqual(sizes.first ?? 0, 65_536)
        XCTAssertLessThanOrEqual(sizes.max() ?? 0, 524_288)
    }

    func testEchoOverIPv6Loopback() async throws {
        let listener: LoopbackListener
        do { listener = try echoListener(address: "::1") } catch {
            throw XCTSkip("IPv6 loopback is not available on this machine")
        }
        defer { listener.stop() }
        let stream = try await SocketStream.connect(host: "::1", port: listener.port, timeout: .seconds(10))
        defer { stream.close() }
        XCTAssertEqual(stream.remoteAddress, "[::1]:\(listener.port)")
        try await stream.write(Array("hello".utf8))
        let echoed = try await Self.readExactly(stream, 5)
        XCTAssertEqual(String(decoding: echoed, as: UTF8.self), "hello")
    }

    func testReadReturnsEmptyWhenPeerCloses() async throws {
        let listener = try LoopbackListener { fd in
            LoopbackListener.writeAll(fd, [1, 2, 3])
        }
        defer { listener.stop() }
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        let first = try await Self.readExactly(stream, 3)
        XCTAssertEqual(first, [1, 2, 3])
        let end = try await stream.read(maxLength: 16)
        XCTAssertEqual(end, [])
    }

    func testConnectionRefusedIsTyped() async throws {
        // Take an ephemeral port, then free it: nothing listens there.
        let listener = try LoopbackListener(accepting: false)
        let port = listener.port
        listener.stop()
        do {
            _ = try await SocketStream.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
            XCTFail("connected to a closed port")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionFailed)
            XCTAssertTrue(error.message.contains("127.0.0.1:\(port)"), error.message)
        }
    }

    func testUnknownHostIsTyped() async throws {
        do {
            _ = try await SocketStream.connect(host: "no-such-host.invalid", port: 1433, timeout: .seconds(5))
            XCTFail("resolved a .invalid name")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .hostNotFound)
            XCTAssertTrue(error.message.contains("no-such-host.invalid"))
        }
    }

    /// Name resolution counts in the connect timeout: a lookup that hangs (a resolver blocked
    /// until the test ends) gives `.timeout` at the deadline, not when the lookup returns.
    func testResolvingIsBoundedByTheDeadline() async throws {
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }
        let started = ContinuousClock.now
        do {
            _ = try await SocketStream.resolve(host: "slow.example", port: 1433, deadline: .now() + .milliseconds(200),
                                               resolver: { _, _ in
                                                   release.wait()
                                                   throw SQLClientError(.hostNotFound, "released")
                                               })
            XCTFail("the hanging lookup returned")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .timeout, "\(error)")
            XCTAssertTrue(error.message.contains("slow.example"), error.message)
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3), "ended at the deadline, not with the lookup")
    }

    func testPortOutOfRangeIsRefused() async throws {
        do {
            _ = try await SocketStream.connect(host: "127.0.0.1", port: 70_000)
            XCTFail("accepted port 70000")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .invalidConfiguration)
        }
    }

    func testCancellingAPendingReadThrowsCancelledAndKeepsSocketOpen() async throws {
        // The server answers "pong" to every "ping", so the socket is shown usable after the cancel.
        let listener = try LoopbackListener { fd in
            while true {
                let chunk = LoopbackListener.readSome(fd)
                if chunk.isEmpty { return }
                LoopbackListener.writeAll(fd, Array("pong".utf8))
            }
        }
        defer { listener.stop() }
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        let reader = Task { try await stream.read(maxLength: 16) }
        reader.cancel()
        do {
            let bytes = try await reader.value
            XCTFail("read returned \(bytes) instead of being cancelled")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .cancelled)
        }
        try await stream.write(Array("ping".utf8))
        let reply = try await Self.readExactly(stream, 4)
        XCTAssertEqual(String(decoding: reply, as: UTF8.self), "pong")
    }

    func testCloseWakesAPendingRead() async throws {
        let gate = DispatchSemaphore(value: 0)
        let listener = try LoopbackListener { _ in gate.wait() }
        defer { gate.signal(); listener.stop() }
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port)
        let reader = Task { try await stream.read(maxLength: 16) }
        // Let the read reach its wait, then close: the read must end with .connectionClosed.
        // (If close wins the race, the read fails on its open check with the same code.)
        try await Task.sleep(nanoseconds: 10_000_000)
        stream.close()
        do {
            let bytes = try await reader.value
            XCTFail("read returned \(bytes) after close")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed)
        }
        do {
            try await stream.write([1])
            XCTFail("write succeeded after close")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .connectionClosed)
        }
    }

    /// Streams dropped right after a wait: their descriptor numbers are reused at once by the
    /// next socket, whose readiness events must still arrive (each step is bounded, so a lost
    /// event fails the test instead of hanging it).
    func testDescriptorReuseAfterDroppedStreamsKeepsEventsFlowing() async throws {
        let listener = try echoListener()
        defer { listener.stop() }
        for i in 0 ..< 200 {
            let stream = try await SocketStream.connect(host: "127.0.0.1", port: listener.port, timeout: .seconds(5))
            try await stream.write([UInt8(truncatingIfNeeded: i)])
            let echoed: [UInt8] = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                group.addTask { try await stream.read(maxLength: 1) }
                group.addTask { try await Task.sleep(nanoseconds: 5_000_000_000); return nil }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first ?? []
            }
            XCTAssertEqual(echoed, [UInt8(truncatingIfNeeded: i)], "iteration \(i): the read's event was lost")
            if echoed.isEmpty { break }
            // No close(): the stream is released here and its descriptor closed by deinit.
        }
    }

    /// A refused connection names its address once.
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

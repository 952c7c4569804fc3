import Foundation
import SQLClientTesting
import TDS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `sqlclient-bench serve`: the replay server in its own process, playing back the generated
/// workloads (pre-encoded token streams, one exchange per workload, matched by SQL text).
///
/// Prints `PORT <n>`, then `STREAM <name> <bytes>` per workload, then `READY`, and serves until
/// its standard input closes.
enum ServeCommand {
    static func run(workloads: [Workload]) throws {
        var exchanges: [ReplaySession.Exchange] = []
        var sizes: [(String, Int)] = []
        for w in workloads {
            let bytes = w.encodeStream()
            sizes.append((w.name, bytes.count))
            exchanges.append(ReplaySession.Exchange(request: .sqlBatch(w.sql),
                                                    response: [ReplaySession.Segment(comment: w.name, bytes: bytes)]))
        }
        var session = ReplaySession(name: "sqlclient-bench", version: .v7_4, exchanges: exchanges)
        session.vectorSupport = 1   // the vector workload: VECTORSUPPORT acknowledged to the clients that ask
        session.jsonSupport = 1
        let server = ReplayServer(session: session)
        let port = try server.start()
        var out = "PORT \(port)\n"
        for (name, n) in sizes { out += "STREAM \(name) \(n)\n" }
        out += "READY\n"
        FileHandle.standardOutput.write(Data(out.utf8))
        // Serve until the driver closes our standard input.
        while true {
            let chunk = FileHandle.standardInput.availableData
            if chunk.isEmpty { break }
        }
        server.stop()
    }
}

/// A minimal raw TDS client that logs in and reads a response without decoding tokens (only
/// packet headers), to measure how fast the replay server and loopback deliver bytes.
enum Sink {
    struct Failure: Error, CustomStringConvertible { var description: String }

    static func connect(port: UInt16) throws -> Int32 {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer -> Int32 in
                #if canImport(Darwin)
                return Darwin.connect(fd, sockaddrPointer, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                return Glibc.connect(fd, sockaddrPointer, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
        guard r == 0 else { close(fd); throw Failure(description: "connect to port \(port) failed") }
        return fd
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            #if canImport(Darwin)
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, 0) }
            #else
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            #endif
            guard n > 0 else { throw Failure(description: "send failed") }
            sent += n
        }
    }

    /// Reads one whole message (to the packet with END_OF_MESSAGE); returns its payload byte count.
    static func readMessage(_ fd: Int32, buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var have = 0          // bytes in buffer not yet consumed
        var payload = 0
        while true {
            // Consume whole packets at the front.
            var offset = 0
            while have - offset >= 8 {
                let b = buffer.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
                let length = Int(b[2]) << 8 | Int(b[3])
                guard length >= 8 else { throw Failure(description: "bad packet length") }
                guard have - offset >= length else { break }
                payload += length - 8
                offset += length
                if b[1] & 0x01 != 0 { return payload }
            }
            if offset > 0 {
                memmove(buffer.baseAddress!, buffer.baseAddress! + offset, have - offset)
                have -= offset
            }
            let n = recv(fd, buffer.baseAddress! + have, buffer.count - have, 0)
            guard n > 0 else { throw Failure(description: "connection closed") }
            have += n
        }
    }

    /// Logs in, sends `sql`, reads the whole response. Returns (payload bytes, seconds from
    /// sending the batch to the last byte).
    static func measure(port: UInt16, sql: String, packetSize: Int) throws -> (Int, Double) {
        let fd = try connect(port: port)
        defer { close(fd) }
        let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { raw.deallocate() }
        let prelogin = Prelogin(version: .init(major: 1, minor: 0, build: 0), encryption: .notSupported, threadID: 0, mars: 0)
        try sendAll(fd, Packet.encode(message: prelogin.encode(), type: .prelogin, packetSize: 4096))
        _ = try readMessage(fd, buffer: raw)
        let login = Login7(tdsVersion: .v7_4, packetSize: UInt32(packetSize), hostName: "bench", userName: "bench",
                           password: "bench", appName: "sqlclient-bench sink", serverName: "127.0.0.1", libraryName: "sink")
        try sendAll(fd, Packet.encode(message: login.encode(), type: .login7, packetSize: 4096))
        _ = try readMessage(fd, buffer: raw)
        let batch = SQLBatch(text: sql)
        let t0 = Measure.now()
        try sendAll(fd, Packet.encode(message: batch.encode(version: .v7_4), type: .sqlBatch, packetSize: packetSize))
        let n = try readMessage(fd, buffer: raw)
        return (n, Measure.now() - t0)
    }
}

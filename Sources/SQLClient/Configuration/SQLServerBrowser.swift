#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import TDS

/// Resolves a named instance to its TCP port through the SQL Server Browser service
/// ([MC-SQLR] SQL Server Resolution Protocol, UDP port 1434).
///
/// Sends CLNT_UCAST_INST (0x04, the instance name, NUL) and reads SVR_RESP (0x05, a 2-byte
/// little-endian size, then `ServerName;…;InstanceName;…;IsClustered;…;Version;…;tcp;PORT;…;;`).
///
/// `package` (issue 39): a user connects to `host\instance` and the port is resolved here; the
/// instance list is the `sqlclient -L` command's.
package enum SQLServerBrowser {
    /// [MC-SQLR] 2.2.4 CLNT_UCAST_INST for `instance`.
    package static func request(instance: String) -> [UInt8] {
        [0x04] + Array(instance.utf8) + [0x00]
    }

    /// Parses an SVR_RESP ([MC-SQLR] 2.2.5) and returns the instances it describes, each a
    /// dictionary of its `key;value` pairs with lowercase keys (`servername`, `instancename`, `tcp`, …).
    /// - Throws: ``SQLClientError`` `.protocolError` when the response is malformed.
    package static func parseResponse(_ bytes: [UInt8]) throws -> [[String: String]] {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readUInt8() == 0x05 else {
                throw SQLClientError(.protocolError, "SSRP response does not start with SVR_RESP (0x05)")
            }
            let size = Int(try reader.readUInt16LE())
            let body = try reader.readBytes(min(size, reader.remaining))
            guard let text = String(bytes: body, encoding: .utf8) ?? String(bytes: body, encoding: .isoLatin1) else {
                throw SQLClientError(.protocolError, "SSRP response is not text")
            }
            var instances: [[String: String]] = []
            for record in text.components(separatedBy: ";;") where !record.isEmpty {
                let parts = record.components(separatedBy: ";")
                var entry: [String: String] = [:]
                var i = 0
                while i + 1 < parts.count {
                    entry[parts[i].lowercased()] = parts[i + 1]
                    i += 2
                }
                if !entry.isEmpty { instances.append(entry) }
            }
            return instances
        } catch let error as TDSDecodingError {
            throw SQLClientError(.protocolError, "SSRP response is truncated", underlying: error)
        }
    }

    /// Asks the Browser on `host` for `instance`'s TCP port. `timeout` bounds the whole lookup:
    /// resolving `host`, then the UDP exchange with every address it resolves to (a negative
    /// timeout counts as none left; one beyond ``SQLConnectionConfiguration/maximumTimeout`` is clamped to it).
    /// - Throws: ``SQLClientError`` `.instanceNotFound` when there is no answer within `timeout`,
    ///   or the answer names no TCP port; `.hostNotFound` when `host` does not resolve;
    ///   `.timeout` when resolving `host` takes the whole `timeout`.
    package static func resolvePort(host: String, instance: String, browserPort: Int = 1434,
                                   timeout: Duration = .seconds(2)) async throws -> Int {
        let limit = min(max(timeout, .zero), SQLConnectionConfiguration.maximumTimeout)
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        let addresses = try await SocketStream.resolve(host: host, port: browserPort,
                                                       deadline: DispatchTime.now() + limit.dispatchInterval)
        let response: [UInt8] = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try exchange(addresses: addresses, payload: request(instance: instance),
                                 remaining: { deadline - clock.now }, what: "\(host)\\\(instance)")
                })
            }
        }
        let instances = try parseResponse(response)
        let match = instances.first { ($0["instancename"] ?? "").caseInsensitiveCompare(instance) == .orderedSame }
            ?? (instances.count == 1 ? instances.first : nil)
        guard let entry = match else {
            throw SQLClientError(.instanceNotFound, "the SQL Server Browser on \(host) does not know instance \"\(instance)\"")
        }
        guard let tcp = entry["tcp"], let port = Int(tcp), (1...65535).contains(port) else {
            throw SQLClientError(.instanceNotFound, "instance \"\(instance)\" on \(host) does not listen on TCP")
        }
        return port
    }

    /// Sends the request from a UDP socket to each address until one answers, each waiting at
    /// most what `remaining` says is left of the lookup's budget (blocking; run off the cooperative pool).
    private static func exchange(addresses: [SocketStream.ResolvedAddress], payload: [UInt8],
                                 remaining: () -> Duration, what: String) throws -> [UInt8] {
        for address in addresses {
            let left = remaining()
            guard left > .zero else { break }
            let fd = udpSocket(address)
            guard fd >= 0 else { continue }
            defer { _ = systemClose(fd) }
            guard send(payload, to: address, from: fd) else { continue }
            if let answer = receive(on: fd, waiting: left) { return answer }
        }
        throw SQLClientError(.instanceNotFound, "no answer from the SQL Server Browser (UDP) for \(what)")
    }
}

extension SQLServerBrowser {
    /// [MC-SQLR] 2.2.2 CLNT_BCAST_EX (0x02, broadcast to every Browser on the network) or 2.2.3
    /// CLNT_UCAST_EX (0x03, sent to one host): asks for every instance a Browser knows.
    package static func listRequest(broadcast: Bool) -> [UInt8] { [broadcast ? 0x02 : 0x03] }

    /// The instances SQL Server Browsers announce ([MC-SQLR] SSRP, UDP): with `host` nil, a
    /// CLNT_BCAST_EX broadcast to 255.255.255.255 and every answer that arrives within `timeout`;
    /// with a `host`, a CLNT_UCAST_EX to it and its answer (at most `timeout`). Each instance is a
    /// dictionary of its `key;value` pairs with lowercase keys (`servername`, `instancename`,
    /// `version`, `tcp`, …), as ``parseResponse(_:)`` gives them; an answer that does not parse
    /// is skipped. `timeout` is clamped to 0...``SQLConnectionConfiguration/maximumTimeout``.
    /// - Returns: the instances (empty when no Browser answered).
    /// - Throws: ``SQLClientError`` `.hostNotFound` when `host` does not resolve, `.connectionFailed`
    ///   when no UDP socket can be opened.
    package static func listInstances(host: String? = nil, browserPort: Int = 1434,
                                     timeout: Duration = .seconds(1)) async throws -> [[String: String]] {
        let limit = min(max(timeout, .zero), SQLConnectionConfiguration.maximumTimeout)
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        var targets: [SocketStream.ResolvedAddress] = []
        if let host {
            targets = try await SocketStream.resolve(host: host, port: browserPort,
                                                     deadline: DispatchTime.now() + limit.dispatchInterval)
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = in_port_t(UInt16(truncatingIfNeeded: browserPort).bigEndian)
            sin.sin_addr.s_addr = in_addr_t(UInt32(0xFFFF_FFFF).bigEndian)
            let storage = withUnsafeBytes(of: &sin) { Array($0) }
            targets = [SocketStream.ResolvedAddress(family: AF_INET, storage: storage, text: "255.255.255.255:\(browserPort)")]
        }
        let addresses = targets
        let answers: [[UInt8]] = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try collect(targets: addresses, payload: listRequest(broadcast: host == nil), untilFirst: host != nil,
                                remaining: { deadline - clock.now })
                })
            }
        }
        return answers.flatMap { (try? parseResponse($0)) ?? [] }
    }

    /// Sends `payload` from one UDP socket per address and gathers the datagrams that come back
    /// while `remaining` says there is time (only the first when `untilFirst`). Blocking.
    private static func collect(targets: [SocketStream.ResolvedAddress], payload: [UInt8], untilFirst: Bool,
                                remaining: () -> Duration) throws -> [[UInt8]] {
        var answers: [[UInt8]] = []
        for address in targets {
            let fd = udpSocket(address)
            guard fd >= 0 else { throw SQLClientError(.connectionFailed, "socket(SOCK_DGRAM) failed for the SQL Server Browser") }
            defer { _ = systemClose(fd) }
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, socklen_t(MemoryLayout<Int32>.size))
            guard send(payload, to: address, from: fd) else { continue }
            while true {
                let left = remaining()
                guard left > .zero, let answer = receive(on: fd, waiting: left) else { break }
                answers.append(answer)
                if untilFirst { break }
            }
            if untilFirst, !answers.isEmpty { break }
        }
        return answers
    }

    /// A UDP socket of `address`'s family; -1 when the system gives none.
    private static func udpSocket(_ address: SocketStream.ResolvedAddress) -> Int32 {
        #if canImport(Darwin)
        return socket(address.family, SOCK_DGRAM, 0)
        #else
        return socket(address.family, Int32(SOCK_DGRAM.rawValue), 0)
        #endif
    }

    /// Sends `payload` from `fd` to `address`; true when all of it went.
    private static func send(_ payload: [UInt8], to address: SocketStream.ResolvedAddress, from fd: Int32) -> Bool {
        let sent = address.storage.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return -1 }
            return payload.withUnsafeBytes { p in
                sendto(fd, p.baseAddress, p.count, 0, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
        }
        return sent == payload.count
    }

    /// One datagram from `fd`, waiting at most `left` (whole milliseconds, at least 1: an
    /// SO_RCVTIMEO of zero would mean no timeout); nil when none came in time.
    private static func receive(on fd: Int32, waiting left: Duration) -> [UInt8]? {
        let milliseconds = max(1, Int(left.components.seconds) * 1000 + Int(left.components.attoseconds / 1_000_000_000_000_000))
        var tv = timeval()
        tv.tv_sec = .init(milliseconds / 1000)
        tv.tv_usec = .init((milliseconds % 1000) * 1000)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65_535)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[0 ..< n]) : nil
    }
}

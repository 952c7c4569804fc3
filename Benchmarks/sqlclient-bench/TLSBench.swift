import Foundation
import SQLClient
import SQLClientTesting

/// `sqlclient-bench tls [--mb N]`: the client's TLS read path alone (`TLSStream` over the default
/// provider's session, issue 43). An OpenSSL server session encrypts N MB (default 64) in writes
/// of 32,767 bytes, as a server sends packets. The client reads them back through `TLSStream`, in
/// reads of at most 512 KiB, as the connection asks. The records come from memory in reads of at
/// most what is asked. Then the client writes N MB through `TLSStream` in writes of 32,767 bytes
/// (a bulk load's packets) to a stream that only counts them. Prints the plaintext's MB/s each
/// way, the median of 5 runs.
enum TLSBench {
    /// The records, handed out as a socket with all of them received would.
    final class Records: ByteStream, @unchecked Sendable {
        let bytes: [UInt8]
        var at = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        func read(maxLength: Int) async throws -> [UInt8] {
            let n = min(maxLength, bytes.count - at)
            defer { at += n }
            return Array(bytes[at ..< at + n])
        }
        func write(_ bytes: [UInt8]) async throws { written += bytes.count }
        func close() {}
        var written = 0
    }

    static func main(_ args: ArraySlice<String>) async throws {
        var mb = 64
        var it = args.makeIterator()
        while let a = it.next() {
            if a == "--mb", let v = it.next(), let n = Int(v), n > 0, n <= 4096 { mb = n } else { note("usage: sqlclient-bench tls [--mb N]"); exit(2) }
        }
        guard let provider = DefaultTLSProvider.provider else { note("tls: no TLS provider"); exit(1) }
        let packet = (0 ..< 32_767).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let packets = mb * 32
        var rates: [Double] = []
        var writeRates: [Double] = []
        for _ in 0 ..< 5 {
            let server = try OpenSSLTLSServerSession(identity: try TLSServerIdentity.generated())
            let client = try provider.makeClientSession(serverName: "localhost",
                                                        configuration: TLSConfiguration(trustServerCertificate: true))
            var toServer = try await client.startHandshake()
            while true {
                let answer = try server.handshake(toServer)
                let step = try await client.continueHandshake(answer.output)
                toServer = step.output
                if step.isComplete { _ = try server.handshake(toServer); break }
            }
            var records: [UInt8] = []
            for _ in 0 ..< packets { records += try server.encrypt(packet) }
            let stream = try TLSStream(base: Records(records), session: client)
            var total = 0
            let clock = ContinuousClock()
            let start = clock.now
            while total < packets * packet.count {
                let bytes = try await stream.read(maxLength: 524_288)
                if bytes.isEmpty { break }
                total += bytes.count
            }
            let elapsed = clock.now - start
            guard total == packets * packet.count else { note("tls: read \(total) bytes, expected \(packets * packet.count)"); exit(1) }
            rates.append(Double(total) / seconds(elapsed) / 1e6)

            let sink = Records([])
            let out = try TLSStream(base: sink, session: client)
            let writeStart = clock.now
            for _ in 0 ..< packets { try await out.write(packet) }
            let writeElapsed = clock.now - writeStart
            guard sink.written > packets * packet.count else { note("tls: wrote \(sink.written) bytes of records"); exit(1) }
            writeRates.append(Double(packets * packet.count) / seconds(writeElapsed) / 1e6)
        }
        rates.sort()
        writeRates.sort()
        print("tls read: \(mb) MB of plaintext in records of 32,767-byte writes: \(String(format: "%.0f", rates[2])) MB/s"
              + " (median of 5; \(String(format: "%.0f", rates[0]))-\(String(format: "%.0f", rates[4])))")
        print("tls write: \(mb) MB of plaintext in writes of 32,767 bytes: \(String(format: "%.0f", writeRates[2])) MB/s"
              + " (median of 5; \(String(format: "%.0f", writeRates[0]))-\(String(format: "%.0f", writeRates[4])))")
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}

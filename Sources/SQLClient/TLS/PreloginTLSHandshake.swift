import TDS

/// The client side of the TLS handshake that TDS 7.x carries inside PRELOGIN packets
/// ([MS-TDS] 3.2.5.2, 2.2.6.5), and the bounded message reads it is made of: one function
/// for every client of the protocol (``SQLConnection``'s login, a recording proxy's upstream
/// connection).
///
/// Client records go out as PRELOGIN (0x12) packet payloads; the server's come back the same
/// way (some servers type them TABULAR_RESULT: both are accepted). Each server flight is one
/// message, refused past `maximumFlightSize`; the handshake is refused after 64 flights.
package enum PreloginTLSHandshake {
    /// The largest TLS handshake flight accepted from the server by default (one PRELOGIN
    /// message: ServerHello, certificate chain, …): 256 KiB.
    package static let defaultMaximumFlightSize = 256 << 10
    /// Flights after which a handshake that has not completed is refused.
    package static let maximumFlights = 64

    /// Runs the handshake of `session` over `stream`, reading through `framer` (bytes the server
    /// sent after the handshake stay in it: hand them to the ``TLSStream`` as leftover).
    /// - Throws: ``SQLClientError`` `.tlsFailed`, `.certificateVerificationFailed` (from the
    ///   session), `.protocolError` for a flight over the cap or a packet that is neither
    ///   PRELOGIN nor TABULAR_RESULT, `.connectionClosed`, and whatever `stream` throws.
    package static func perform(_ session: any TLSSession, over stream: any ByteStream, framer: inout PacketAssembler,
                                packetSize: Int = Packet.defaultSize,
                                maximumFlightSize: Int = defaultMaximumFlightSize) async throws {
        var output = try await session.startHandshake()
        var complete = false
        for _ in 0 ..< maximumFlights {
            if !output.isEmpty {
                try await stream.write(Packet.encode(message: output, type: .prelogin, packetSize: packetSize))
            }
            if complete { return }
            let received = try await readMessage(from: stream, framer: &framer, what: "the TLS handshake",
                                                 cap: maximumFlightSize, capName: "maximumTLSFlightSize")
            let step = try await session.continueHandshake(received)
            output = step.output
            complete = step.isComplete
        }
        throw SQLClientError(.tlsFailed, "the TLS handshake did not finish within \(maximumFlights) flights")
    }

    /// Reads one whole message's payload (PRELOGIN or TABULAR_RESULT packets up to EOM) from
    /// `stream`, refusing more than `cap` bytes (`.protocolError` naming `capName`). With
    /// `firstReplyFrom`, this is the server's first answer: each of its packets must be a TDS
    /// reply (type 0x04, checked as soon as its first byte arrives) with a Length of 8–32,767
    /// bytes (checked as soon as its 4th byte arrives), else `.protocolError` ("the server at …
    /// did not answer with TDS"), whatever the login timeout.
    package static func readMessage(from stream: any ByteStream, framer: inout PacketAssembler, what: String,
                                    cap: Int, capName: String, firstReplyFrom server: String? = nil) async throws -> [UInt8] {
        let previousCap = framer.maximumMessageSize
        framer.maximumMessageSize = cap
        defer { framer.maximumMessageSize = previousCap }
        while true {
            if let server {
                if let byte = framer.firstBufferedByte, byte != PacketType.tabularResult.rawValue {
                    throw SQLClientError(.protocolError, "the server at \(server) did not answer with TDS (the first byte "
                                         + "of its reply is 0x\(String(byte, radix: 16, uppercase: true)), not 0x04)")
                }
                if let length = framer.nextPacketLength, !(PacketHeader.size ... Packet.maximumNegotiatedSize).contains(length) {
                    throw SQLClientError(.protocolError, "the server at \(server) did not answer with TDS (its reply "
                                         + "declares a packet of \(length) bytes; a TDS packet is 8–32767 bytes)")
                }
            }
            let message: TDSMessage?
            do {
                message = try framer.nextMessage()
            } catch where error.code == .limitExceeded {
                throw SQLClientError(.protocolError, "\(what) is longer than its cap of \(cap) bytes (\(capName))",
                                     underlying: error)
            } catch {
                throw SQLClientError.protocolError(error)
            }
            if let message {
                guard message.type == .prelogin || message.type == .tabularResult else {
                    throw SQLClientError(.protocolError, "expected \(what), got a \(message.type) packet")
                }
                return message.payload
            }
            let bytes = try await stream.read(maxLength: 65_536)
            if bytes.isEmpty {
                throw SQLClientError(.connectionClosed, "the server closed the connection during \(what)")
            }
            framer.append(bytes)
        }
    }
}

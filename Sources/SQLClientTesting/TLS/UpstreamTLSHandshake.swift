import SQLClient
import TDS

/// The client side of the TLS handshake carried in PRELOGIN (0x12) packets ([MS-TDS] 3.2.5.2),
/// over blocking I/O: the records of `session` go out as PRELOGIN packet payloads of the
/// pre-login packet size, the server's come back the same way (servers type them PRELOGIN or
/// TABULAR_RESULT; `receiveMessage` returns the payload of either).
///
/// Used by ``RecordingProxy`` towards its upstream. (SQLClient's connection has the same
/// handshake, async, inside its login; when it is exposed as one package-level function this one
/// should go.)
/// - Parameters:
///   - send: writes bytes to the server.
///   - receiveMessage: reads the payload of the server's next whole message; nil at end of stream.
/// - Throws: what `session`, `send` or `receiveMessage` throw; ``TLSServerError`` when the
///   server closes the connection or the handshake does not finish within 64 flights.
func upstreamTLSHandshake(_ session: any TLSSession, send: ([UInt8]) throws -> Void,
                          receiveMessage: () throws -> [UInt8]?) throws {
    var output = try session.startHandshake()
    var complete = false
    for _ in 0 ..< 64 {
        if !output.isEmpty {
            try send(Packet.encode(message: output, type: .prelogin, packetSize: Packet.defaultSize))
        }
        if complete { return }
        guard let received = try receiveMessage() else {
            throw TLSServerError("the upstream server closed the connection during the TLS handshake")
        }
        let step = try session.continueHandshake(received)
        output = step.output
        complete = step.isComplete
    }
    throw TLSServerError("the TLS handshake with the upstream server did not finish")
}

import TDS

/// The one write path of a connection: every byte the client sends (PRELOGIN, the TLS
/// handshake, LOGIN7, requests, ATTENTION) is written by whoever holds the write gate, in the
/// order the gate was asked for, so two writes never interleave on the socket.
///
/// Requests are written a slice of packets at a time (``writeSliceSize`` bytes of body); after
/// each slice the state machine says whether to go on. A cancel or a query timeout that comes
/// while a request is being written is only noted; the writer then ends the message with a last
/// packet flagged EOM|IGNORE ([MS-TDS] 2.2.3.1.2: the server discards the whole message) and
/// sends ATTENTION after it, reading the response to the attention acknowledgement, as
/// Microsoft.Data.SqlClient does. A cancel after the last packet sends ATTENTION at once. So
/// ATTENTION never interleaves with a request's packets, and a timeout during a long write
/// leaves a usable connection whenever the server acknowledges.
///
/// Entry points for other parts of the client (internal, documented here for them):
/// - a request whose body is produced incrementally, for bulk copy (BULKLOAD, packet type
///   0x07, row by row): ``sendStreamed(type:timeout:body:)``, or, to stream its response,
///   ``OutgoingRequest/streamed(_:_:)`` with ``ResponseCursor``. Each piece the producer
///   returns is cut into packets of the negotiated size as it arrives; the last packet (EOM)
///   goes out when the producer returns nil; a producer that throws (even before its first
///   piece) ends the message with EOM|IGNORE (and ATTENTION), and the request fails with its
///   error once the server has answered both (the connection is then idle).
/// - RESETCONNECTION for a connection pool: ``resetConnectionBeforeNextRequest(keepingTransaction:)``
///   sets status 0x08 (or 0x10, RESETCONNECTIONSKIPTRAN) on the first packet of the next
///   request, whatever it is ([MS-TDS] 2.2.3.1.2); the server resets the session before running it.
extension SQLConnection {
    /// Bytes of body written between two questions to the state machine (whole packets).
    static let writeSliceSize = 64 << 10

    // MARK: - The write gate

    /// Waits for the write path. Throws the connection's error once it is closed.
    func acquireWriteGate() async throws {
        guard machine.state != .closed else { throw closedError }
        if writeGateBusy {
            // Handed the gate (still busy), or failed by the close.
            try await writeGateWaiters.wait(writeGateWaiters.expectNext())
            guard machine.state != .closed else { throw closedError }
        }
        writeGateBusy = true
    }

    func releaseWriteGate() {
        if !writeGateWaiters.resumeFirst(with: .success(())) {
            writeGateBusy = false
        }   // else handed over: still busy
    }

    /// Writes `bytes` (the caller holds the gate); a failure closes the connection and throws its error.
    func writeHoldingGate(_ bytes: [UInt8], to stream: (any ByteStream)? = nil) async throws {
        if stream == nil || stream.map({ $0 === transport }) == true { logPacketsSent(bytes) }
        do {
            try await (stream ?? transport).write(bytes)
        } catch {
            let failure = error as? SQLClientError ?? SQLClientError(.ioError, "writing failed: \(error)")
            performNow(machine.transportFailed(failure))
            throw closedError
        }
    }

    // MARK: - Requests

    /// Writes request `id` (whose turn it is), packet slice by packet slice, as described above.
    /// - Throws: the connection's error when writing failed (the connection is then closed);
    ///   ``ProducerFailure`` (the producer's error) for a ``RequestBody/produced(_:)`` body.
    func write(_ id: RequestID, type: PacketType, body: RequestBody) async throws {
        try await acquireWriteGate()
        defer { releaseWriteGate() }
        try await recoverIfDropped(before: id)   // idle connection resiliency (SQLConnection+Recovery.swift)
        var packets = MessagePacketizer(type: type, packetSize: packetSize, firstPacketStatus: nextRequestStatus)
        nextRequestStatus = []
        for action in machine.writingStarted(id, now: clock.now()) { performNow(action) }
        switch body {
        case .bytes(let bytes):
            if try await writeSlices(of: bytes, id, &packets) { return }
        case .produced(let next):
            while true {
                let piece: [UInt8]?
                do {
                    piece = try await next()
                } catch {
                    // The message is cut: it ends with EOM|IGNORE (the server discards it), then
                    // ATTENTION; the caller reads the server's answers (``readCutMessageAnswers(_:)``).
                    await perform(machine.cancelRequested(id, reason: .abandoned, now: clock.now()))
                    _ = try await stopWriting(id, &packets)
                    throw ProducerFailure(error: error)
                }
                guard let piece else { break }
                if try await writeSlices(of: piece, id, &packets) { return }
            }
        }
        try await writeHoldingGate(packets.finish())
        for action in machine.packetsWritten(id, complete: true) {
            if case .sendAttention = action { try await writeAttentionHoldingGate() } else { performNow(action) }
        }
    }

    /// Cuts `bytes` (the body, or a piece of it) into packets, ``writeSliceSize`` bytes at a
    /// time, writing the whole packets of each slice and asking the machine after each; true
    /// when a cancel ended the message (IGNORE and ATTENTION sent).
    private func writeSlices(of bytes: [UInt8], _ id: RequestID, _ packets: inout MessagePacketizer) async throws -> Bool {
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + Self.writeSliceSize, bytes.count)
            let out = packets.append(bytes[offset ..< end])
            offset = end
            if !out.isEmpty {
                try await writeHoldingGate(out)
                if try await stopWriting(id, &packets) { return true }
            }
        }
        return false
    }

    /// Asks the machine after some packets; when a cancel came, ends the message with IGNORE,
    /// sends ATTENTION and answers true. A cancelled task cancels its request here (the socket
    /// write itself is never interrupted inside a packet).
    private func stopWriting(_ id: RequestID, _ packets: inout MessagePacketizer) async throws -> Bool {
        if Task.isCancelled { await perform(machine.cancelRequested(id, reason: .cancelled, now: clock.now())) }
        let actions = machine.packetsWritten(id, complete: false)
        guard !actions.isEmpty else { return false }
        for action in actions {
            switch action {
            case .endRequestWithIgnore: try await writeHoldingGate(packets.cancel())
            case .sendAttention: try await writeAttentionHoldingGate()
            default: performNow(action)
            }
        }
        return true
    }

    /// A ``RequestBody/produced(_:)`` body threw `error`: the message was ended with EOM|IGNORE
    /// and ATTENTION sent; the server's answers are still to be read.
    struct ProducerFailure: Error {
        var error: any Error
    }

    /// Reads the server's answers to request `id`, whose producer failed: the DONE of the ignored
    /// message ([MS-TDS] 2.2.1.7: a message ended with IGNORE is answered with a single DONE) and
    /// the ATTENTION acknowledgement, bounded by the cancel timeout. So the producer's error
    /// reaches the caller once the server has discarded the message and the connection is idle.
    /// A task cancelled meanwhile leaves the rest to a background drain (as does a drain already
    /// going on from a read of the socket: not waited for here).
    func readCutMessageAnswers(_ id: RequestID) async {
        if startDrain(id) { await drainToTheEnd(id) }
        if machine.isRunning(id) { await perform(machine.requestAbandoned(id, now: clock.now())) }
    }

    private func writeAttentionHoldingGate() async throws {
        try await writeHoldingGate(Packet.encode(message: [], type: .attention, packetSize: packetSize))
    }

    /// Sends ATTENTION for request `id` through the write path (after whatever is being written).
    /// A failure closes the connection.
    func sendAttention(for id: RequestID) async {
        let reason = machine.request.flatMap { $0.id == id ? $0.cancellation.reason : nil }
        logger?.attention(Int(truncatingIfNeeded: id.value), reason: reason.map { "\($0)" } ?? "cancelled",
                          connection: logNumber)
        do {
            try await acquireWriteGate()
        } catch {
            return
        }
        defer { releaseWriteGate() }
        guard machine.isRunning(id) else { return }
        do {
            try await writeAttentionHoldingGate()
        } catch {
            if machine.state != .closed {
                performNow(machine.transportFailed(SQLClientError(.connectionClosed, "sending ATTENTION failed: \(error)")))
            }
        }
    }

    // MARK: - Entry points

    /// Sets RESETCONNECTION ([MS-TDS] 2.2.3.1.2, status 0x08) on the first packet of the next
    /// request, so that the server resets the session (temporary tables, SET options, the
    /// database) before running it; `keepingTransaction`: RESETCONNECTIONSKIPTRAN (0x10), which
    /// keeps the transaction state. For a connection pool handing the connection to its next user.
    func resetConnectionBeforeNextRequest(keepingTransaction: Bool = false) {
        nextRequestStatus = keepingTransaction ? .resetConnectionSkipTransaction : .resetConnection
    }

    /// Sends a message of `type` whose body `body` produces piece by piece (nil ends it), and
    /// buffers the response, as ``execute(rpc:timeout:)`` does. For bulk copy: BULKLOAD (0x07)
    /// rows, after the `INSERT BULK` batch that announced them.
    /// - Throws: the producer's error (the message is then ended with IGNORE and cancelled, and the
    ///   server's answers read, before it is thrown);
    ///   ``SQLClientError`` as any request.
    func sendStreamed(type: PacketType, timeout: Duration? = nil,
                      body: @escaping @Sendable () async throws -> [UInt8]?) async throws -> SQLResult {
        try await run(.streamed(type, .produced(body)), timeout: timeout)
    }
}

import Foundation
import TDS

/// One step of idle connection recovery at the connection level (``ConnectionStateMachine``'s
/// events below): the recovery sub-machine's action with the connection's part done (the
/// session adopted, or the connection closed).
enum RecoveryStep: Sendable {
    /// Log in again (a new TCP connection, as at the first login) with this SESSIONRECOVERY data.
    case reconnect(attempt: Int, SessionRecoveryFeature)
    /// Sleep on the connection's clock until `until`, then `recoveryRetryDue(now:)`.
    case wait(until: Duration, nextAttempt: Int)
    /// The session is restored (the connection's session as now tracked): write the request.
    case recovered(attempts: Int, duration: Duration, SQLSessionInfo)
    /// Not recovered: perform `close` (it closes the transport and fails the queued requests);
    /// the request fails with `error` (code `.connectionLost`, or the caller's cancellation).
    case failed(SQLClientError, close: ConnectionStateMachine.Action)
}

// MARK: - The events, on the connection's state machine

extension ConnectionStateMachine {
    /// Before request `id`'s first byte, its connection was found dropped while idle (`cause`).
    /// `reconnectable`: the driver knows where to connect again.
    mutating func idleConnectionLost(_ id: RequestID, cause: String, reconnectable: Bool, now: Duration) -> RecoveryStep {
        guard state == .executing, let running = request, running.id == id, running.phase == .writing else {
            return step(recovery.lostOutsideIdle(cause: cause))
        }
        return step(recovery.connectionLost(cause: cause, current: session, inTransaction: session.transactionDescriptor != nil,
                                            reconnectable: reconnectable, now: now))
    }

    /// The recovery attempt failed with `error`.
    mutating func recoveryAttemptFailed(_ error: SQLClientError, now: Duration) -> RecoveryStep {
        step(recovery.attemptFailed(error, now: now))
    }

    /// The wait between two attempts is over; nil when it is not (a stale wake-up).
    mutating func recoveryRetryDue(now: Duration) -> RecoveryStep? {
        recovery.retryDue(now: now, current: session).map { step($0) }
    }

    /// The recovery login succeeded with `restored` (its session) and FEATUREEXTACK `ack`.
    mutating func recoveryLoggedIn(_ restored: SQLSessionInfo, ack: FeatureExtAck?, now: Duration) -> RecoveryStep {
        let action = recovery.attemptSucceeded(ack: ack, now: now)
        if case .recovered(let attempts, let duration) = action {
            return .recovered(attempts: attempts, duration: duration, adoptRecoveredSession(restored))
        }
        return step(action)
    }

    /// The driver gave up on the recovery (its task was cancelled).
    mutating func recoveryAbandoned(_ error: SQLClientError) -> RecoveryStep {
        step(recovery.abandoned(error))
    }

    private mutating func step(_ action: ConnectionRecoveryStateMachine.Action) -> RecoveryStep {
        switch action {
        case .reconnect(let attempt, let feature): return .reconnect(attempt: attempt, feature)
        case .wait(let until, let next): return .wait(until: until, nextAttempt: next)
        case .recovered(let attempts, let duration): return .recovered(attempts: attempts, duration: duration, session)
        case .fail(let error): return .failed(error, close: transportFailed(error))
        }
    }
}

// MARK: - The driver

/// What a recovery login hands over to the connection it recovers: its transport, reader state and
/// session. (The login ran on a connection of its own, through the first login's code: TLS,
/// authentication, routing.)
struct RecoveredTransport: @unchecked Sendable {
    var socket: any ByteStream
    var transport: any ByteStream
    var reader: ResponseReader
    var packetSize: Int
    var session: SQLSessionInfo
    var ack: FeatureExtAck?
}

extension SQLConnection {
    /// LOGIN7 FeatureExt SESSIONRECOVERY ([MS-TDS] 2.2.6.4): empty at a first login when
    /// `ConnectRetryCount` > 0 (TDS 7.4), the initial state and the changes when this login
    /// recovers a session. Called while LOGIN7 is built, before the authentication adds its features.
    func addSessionRecovery(to login: inout Login7) {
        guard login.tdsVersion.generation >= 0x74 else { return }
        let feature: Login7Feature
        if let recovering = sessionRecoveryLogin {
            feature = recovering.feature
        } else {
            guard machine.recovery.retryCount > 0 else { return }
            feature = .sessionRecoveryRequest
            machine.sessionRecoveryRequested()
        }
        var features = login.featureExt ?? []
        features.removeAll { $0.id == Login7Feature.sessionRecoveryID }
        features.append(feature)
        login.featureExt = features
    }

    /// The recovery machine from the configuration's `ConnectRetryCount` and `ConnectRetryInterval`.
    static func recoveryMachine(_ configuration: SQLConnectionConfiguration) -> ConnectionRecoveryStateMachine {
        ConnectionRecoveryStateMachine(retryCount: configuration.connectRetry.effectiveCount(host: configuration.address.host),
                                       interval: configuration.connectRetry.interval)
    }

    /// Before request `id`'s first byte (the write path held): when the socket shows the server
    /// closed (FIN) or reset (RST) the idle connection, recovers the session (see
    /// ``ConnectionRecoveryStateMachine``) or fails with `.connectionLost`.
    func recoverIfDropped(before id: RequestID) async throws {
        guard machine.state == .executing, machine.isRunning(id), let stream = socket as? SocketStream else { return }
        let status = stream.idleStatus()
        guard status != .open else { return }
        let started = clock.now()
        var step = machine.idleConnectionLost(id, cause: status.description, reconnectable: port > 0, now: started)
        logger?.log(.notice, .recovery, "connection lost while idle (\(status)); recovering the session",
                    metadata: [SQLLogEvent.Key.connection: String(logNumber), SQLLogEvent.Key.recoveryCause: status.description])
        transport.close()
        socket.close()
        reader.release()
        while true {
            switch step {
            case .reconnect(let attempt, let feature):
                do {
                    let handOver = try await Self.recoveryLogin(configuration, port: port, feature: feature, clock: clock)
                    guard machine.state != .closed else {
                        // Closed by its user meanwhile (the actor is reentrant across the login).
                        handOver.transport.close()
                        handOver.socket.close()
                        throw closedError
                    }
                    step = machine.recoveryLoggedIn(handOver.session, ack: handOver.ack, now: clock.now())
                    if case .recovered = step {
                        adopt(handOver)
                    } else {
                        handOver.transport.close()
                        handOver.socket.close()
                    }
                } catch let error as SQLClientError where machine.state == .closed {
                    throw error
                } catch is CancellationError {
                    step = machine.recoveryAbandoned(SQLClientError(.cancelled, "cancelled while recovering the connection"))
                } catch {
                    let failure = error as? SQLClientError ?? SQLClientError(.connectionFailed, "\(error)")
                    logger?.log(.warning, .recovery, "recovery attempt \(attempt) failed: \(failure.message)",
                                metadata: [SQLLogEvent.Key.connection: String(logNumber),
                                           SQLLogEvent.Key.recoveryAttempts: String(attempt)])
                    step = machine.recoveryAttemptFailed(failure, now: clock.now())
                }
            case .wait(let until, _):
                do {
                    try await clock.sleep(until: until)
                } catch {
                    step = machine.recoveryAbandoned(SQLClientError(.cancelled, "cancelled while recovering the connection"))
                    continue
                }
                guard machine.state != .closed else { throw closedError }
                if let next = machine.recoveryRetryDue(now: clock.now()) { step = next }
            case .recovered(let attempts, let duration, let info):
                session = info
                packetSize = info.packetSize
                logger?.log(.info, .recovery, "session recovered after \(attempts) attempt(s) in "
                            + "\(SQLClientLogger.milliseconds(duration)) ms",
                            metadata: [SQLLogEvent.Key.connection: String(logNumber),
                                       SQLLogEvent.Key.recoveryAttempts: String(attempts),
                                       SQLLogEvent.Key.durationMilliseconds: SQLClientLogger.milliseconds(duration),
                                       SQLLogEvent.Key.recoveryCause: status.description])
                return
            case .failed(let error, let close):
                logger?.log(.error, .recovery, "session not recovered: \(error.message)",
                            metadata: [SQLLogEvent.Key.connection: String(logNumber),
                                       SQLLogEvent.Key.errorCode: error.code.name,
                                       SQLLogEvent.Key.recoveryAttempts: String(error.sessionRecoveryError?.attempts ?? 0)])
                performNow(close)
                throw error
            }
        }
    }

    /// One recovery attempt: the connect path (`connect(_:port:purpose:clock:deadline:)`) to the
    /// server this connection logged in to, within `connectTimeout`: PRELOGIN, TLS, authentication
    /// (a fresh token from a provider, NTLM) with `feature` in LOGIN7; a routing ENVCHANGE is
    /// followed once, as at the first login; no retry (the recovery machine retries).
    static func recoveryLogin(_ configuration: SQLConnectionConfiguration, port: Int, feature: SessionRecoveryFeature,
                              clock: any ConnectionClock) async throws -> RecoveredTransport {
        var attempt = configuration
        attempt.address = SQLServerAddress(host: configuration.address.host, port: port)
        let connection = try await connect(attempt, port: port, purpose: .recovery(feature), clock: clock,
                                           deadline: clock.now() + configuration.connectTimeout)
        return await connection.handOverForRecovery()
    }

    /// Gives this (recovery) connection's transport to the connection it recovers; this one keeps a
    /// closed stand-in, so that its end closes nothing that was handed over.
    private func handOverForRecovery() -> RecoveredTransport {
        let handOver = RecoveredTransport(socket: socket, transport: transport, reader: reader, packetSize: packetSize,
                                          session: session, ack: machine.featureExtAck)
        let standIn = HandedOverStream()
        socket = standIn
        transport = standIn
        for action in machine.closeRequested() { performNow(action) }
        return handOver
    }

    /// Takes over a recovery login's transport.
    private func adopt(_ handOver: RecoveredTransport) {
        socket = handOver.socket
        transport = handOver.transport
        reader = handOver.reader
        if let logger = configuration.eventLogger, logger.isEnabled(.trace) {
            let number = logNumber
            reader.onPacket = { logger.packetReceived($0, connection: number) }
        } else {
            reader.onPacket = nil
        }
        packetSize = handOver.packetSize
    }

    /// Idle connection recoveries completed over this connection's life.
    var sessionRecoveries: Int { machine.recovery.recoveries }
}

/// The stream a recovery connection keeps once it handed its own over: closed, owning nothing.
private final class HandedOverStream: ByteStream, @unchecked Sendable {
    func read(maxLength: Int) async throws -> [UInt8] { throw SQLClientError.closed() }
    func write(_ bytes: [UInt8]) async throws { throw SQLClientError.closed() }
    func close() {}
}

extension SQLLogEvent.Kind {
    /// Idle connection recovery (SESSIONRECOVERY): the loss found (notice), each failed attempt
    /// (warning), the session recovered with attempts and time (info), or refused (error).
    public static let recovery = SQLLogEvent.Kind("recovery")
}

extension SQLLogEvent.Key {
    /// Recovery attempts made.
    public static let recoveryAttempts = "sql.recovery.attempts"
    /// What the idle check found: `closed by the server (FIN)`, `reset by the server (RST)`….
    public static let recoveryCause = "sql.recovery.cause"
}

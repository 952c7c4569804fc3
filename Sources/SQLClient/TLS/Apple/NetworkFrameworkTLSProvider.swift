#if canImport(Network) && canImport(Security)
import Dispatch
import Foundation
import Network
import Security
import TDS

// Apple platforms only. This folder is the one place with Apple API; Linux compiles and links it
// against Apple's SDKs (scripts/check-apple-sdk.sh) but cannot run it. Everything that is not
// an Apple call is plain Swift shared with Linux and tested there: TLSFlightParser (where a flight
// ends), TLSVerificationPolicy (the certificate decisions), PreloginTLSHandshake and StrictTLS
// (the TDS framing). See the README's "Apple platforms" for what is verified where.

/// TLS through Apple's Network.framework, used as a memory engine: the default `TLSProvider` on
/// macOS and iOS (``DefaultTLSProvider``).
///
/// Each session is an `nw_connection` that never opens a socket: its protocol stack is TLS above
/// a framer of ours above UDP. TLS writes its records to the framer, which hands them to the
/// session instead of the network; the server's bytes are delivered to TLS through the same
/// framer. So the handshake can travel inside TDS PRELOGIN packets ([MS-TDS] 3.2.5.2), LOGIN7
/// alone can be encrypted (login-only), and TDS 8.0 can run TLS first on the socket.
///
/// TLS 1.2 is the minimum (``TLSConfiguration/minimumVersion``), TLS 1.3 is offered when
/// ``TLSConfiguration/maximumVersion`` allows it (strict mode always); SNI carries the expected
/// name unless it is an IP literal; the server's chain is evaluated with `SecTrust` against the
/// system roots or ``TLSConfiguration/caFile`` alone, with the name unless
/// ``TLSConfiguration/verifyHostName`` is off; ``TLSConfiguration/serverCertificate`` pins one
/// exact certificate and ``TLSConfiguration/trustServerCertificate`` accepts any.
package struct NetworkFrameworkTLSProvider: TLSProvider {
    /// The provider (stateless: each session has its own connection and queue).
    package init() {}

    package func makeClientSession(serverName: String, configuration: TLSConfiguration) throws -> any TLSSession {
        try NetworkFrameworkTLSSession(serverName: serverName, configuration: configuration, applicationProtocols: [])
    }

    package func makeStrictClientSession(serverName: String, configuration: TLSConfiguration) throws -> any TLSSession {
        try NetworkFrameworkTLSSession(serverName: serverName, configuration: StrictTLS.configuration(configuration),
                                       applicationProtocols: [StrictTLS.alpn])
    }
}

/// One Network.framework client session over memory. See ``NetworkFrameworkTLSProvider`` and ``TLSSession``.
///
/// Network.framework has no "I need more input" answer: after each delivery the session decides
/// from the records themselves (``TLSFlightParser`` over both directions) and from the
/// connection's state whether the client's flight is whole, the handshake done, or more server
/// bytes are needed; where the records cannot tell (the server's TLS 1.3 flight is encrypted) it
/// lets the connection's queue drain twice (a framer barrier, then a queue hop) before saying
/// "more input". Every callback runs on the session's serial queue; the async calls wait for them
/// with continuations and never block a thread.
package final class NetworkFrameworkTLSSession: TLSSession, @unchecked Sendable {
    private let policy: TLSVerificationPolicy
    private let minimumVersion: TLSConfiguration.ProtocolVersion
    private let maximumVersion: TLSConfiguration.ProtocolVersion
    private let applicationProtocols: [String]
    private let queue = DispatchQueue(label: "SQLClient.NetworkFrameworkTLSSession")

    /// A waiting call: its slot in `waiterQueue` is resumed when `ready` (checked under the lock)
    /// becomes true or the session ends.
    private struct Waiter {
        var id: Int
        var ready: @Sendable () -> Bool
    }

    /// The calls waiting (the client's one waiter primitive; its own lock, taken after `lock`).
    private let waiterQueue = WaiterQueue<Int, Void>()

    private enum Phase { case created, handshaking, ready, failed(SQLClientError), cancelled }

    // Guarded by `lock`.
    private let lock = NSLock()
    private var connection: nw_connection_t?
    private var framer: nw_framer_t?
    private var phase = Phase.created
    private var output: [UInt8] = []
    private var clientRecords = TLSFlightParser(sender: .client)
    private var serverRecords = TLSFlightParser(sender: .server)
    private var plaintext: [UInt8] = []
    /// The server's bytes after its last whole record (decrypt), to tell when a record completes.
    private var inboundPartial: [UInt8] = []
    private var peerClosed = false
    private var refusal: SQLClientError?
    private var peerLeaf: [UInt8]?
    private var chosenProtocol: String?
    private var chosenALPN: String?
    private var waiters: [Waiter] = []
    private var nextWaiterID = 0

    init(serverName: String, configuration: TLSConfiguration, applicationProtocols: [String]) throws {
        policy = try TLSVerificationPolicy(serverName: serverName, configuration: configuration)
        for p in applicationProtocols where p.utf8.isEmpty || p.utf8.count > 255 {
            throw SQLClientError(.invalidConfiguration, "ALPN protocol \"\(p)\" must be 1–255 bytes")
        }
        minimumVersion = max(configuration.minimumVersion, .tls1_2)
        maximumVersion = max(configuration.maximumVersion, minimumVersion)
        self.applicationProtocols = applicationProtocols
    }

    deinit {
        if let connection { nw_connection_cancel(connection) }
    }

    // MARK: - TLSSession

    package func startHandshake() async throws -> [UInt8] {
        let connection = makeConnection()
        let started: Bool = lock.withLock {
            guard case .created = phase else { return false }
            phase = .handshaking
            self.connection = connection
            return true
        }
        guard started else { throw SQLClientError(.tlsFailed, "the TLS handshake was already started") }
        nw_connection_set_state_changed_handler(connection) { [weak self] state, error in
            self?.connectionState(state, error)
        }
        nw_connection_set_queue(connection, queue)
        nw_connection_start(connection)
        // The first flight is the ClientHello, whole.
        await wait { self.isFailedOrReady || self.clientRecords.isAtFlightEnd }
        return try lock.withLock {
            try throwIfFailed()
            return takeOutput()
        }
    }

    package func continueHandshake(_ received: [UInt8]) async throws -> TLSHandshakeStep {
        try lock.withLock {
            try throwIfFailed()
            if case .ready = phase { return }
            do {
                try serverRecords.append(received)
            } catch {
                phase = .failed(SQLClientError(.tlsFailed, "the server's TLS handshake bytes are not TLS (\(error))"))
                try throwIfFailed()
            }
        }
        if !received.isEmpty { try await deliver(received) }
        var barriers = 0
        while true {
            enum Next { case step(TLSHandshakeStep), wait, waitReady, barrier }
            let next: Next = try lock.withLock {
                try throwIfFailed()
                var ready = false
                if case .ready = phase { ready = true }
                switch TLSHandshakeProgress.next(client: clientRecords, server: serverRecords, hasOutput: !output.isEmpty,
                                                 isReady: ready, barriersRun: barriers) {
                case .returnComplete: return .step(TLSHandshakeStep(output: takeOutput(), isComplete: true))
                case .returnFlight: return .step(TLSHandshakeStep(output: takeOutput(), isComplete: false))
                case .needMoreInput: return .step(TLSHandshakeStep(output: [], isComplete: false))  // a partial flight stays
                case .waitForOutput: return .wait
                case .waitForReady: return .waitReady
                case .barrier: return .barrier
                }
            }
            switch next {
            case .step(let step): return step
            case .wait:
                let before = lock.withLock { output.count }
                await wait { self.isFailedOrReady || self.output.count != before }
            case .waitReady:
                await wait { self.isFailedOrReady }
            case .barrier:
                barriers += 1
                await barrier()
            }
        }
    }

    package func encrypt(_ plaintext: [UInt8]) async throws -> [UInt8] {
        let ready: nw_connection_t = try lock.withLock {
            try throwIfFailed()
            guard case .ready = phase, let connection = self.connection else {
                throw SQLClientError(.tlsFailed, "encrypt before the TLS handshake completed")
            }
            return connection
        }
        guard !plaintext.isEmpty else { return [] }
        let content = plaintext.withUnsafeBytes { DispatchData(bytes: $0) }
        let sent: SQLClientError? = await withCheckedContinuation { continuation in
            nw_connection_send(ready, content as __DispatchData, _nw_content_context_default_message, false) { error in
                continuation.resume(returning: error.map { Self.tlsError("TLS encryption failed", $0) })
            }
        }
        if let sent { throw sent }
        await barrier()
        // TLS has written the records for these bytes to the framer: hand them out whole.
        await wait { self.isFailedOrReady && !self.output.isEmpty
            && TLSFlightParser.lengthOfWholeRecords(self.output) == self.output.count }
        return try lock.withLock {
            try throwIfFailed()
            return takeOutput()
        }
    }

    package func decrypt(_ ciphertext: [UInt8]) async throws -> [UInt8] {
        try lock.withLock {
            try throwIfFailed()
            guard case .ready = phase else { throw SQLClientError(.tlsFailed, "decrypt before the TLS handshake completed") }
        }
        if !ciphertext.isEmpty {
            // Whether these bytes complete at least one record (a partial one yields nothing yet).
            let completesRecord: Bool = lock.withLock {
                inboundPartial += ciphertext
                let whole = TLSFlightParser.lengthOfWholeRecords(inboundPartial)
                inboundPartial.removeFirst(whole)
                return whole > 0
            }
            try await deliver(ciphertext)
            // Decrypted bytes reach the outstanding receive on the queue: let it drain, a few more
            // times when a whole record went in and nothing came out yet (a TLS 1.3 ticket yields nothing).
            for pass in 0 ..< 6 {
                await barrier()
                let done = lock.withLock { !plaintext.isEmpty || peerClosed || isTerminal }
                if done || (pass >= 1 && !completesRecord) { break }
            }
        }
        return try lock.withLock {
            let bytes = plaintext
            plaintext = []
            if bytes.isEmpty && peerClosed { throw SQLClientError(.connectionClosed, "the server closed the TLS session") }
            try throwIfFailed()
            return bytes
        }
    }

    package var negotiatedProtocol: String? { lock.withLock { chosenProtocol } }
    package var peerCertificateDER: [UInt8]? { lock.withLock { peerLeaf } }
    package var applicationProtocol: String? { lock.withLock { chosenALPN } }

    // MARK: - The connection that never opens a socket

    /// TLS above our framer above UDP, to an endpoint that is never reached: the framer keeps
    /// every byte TLS writes and never passes it down.
    private func makeConnection() -> nw_connection_t {
        let tls = nw_tls_create_options()
        let security = nw_tls_copy_sec_protocol_options(tls)
        if let name = policy.sniName { sec_protocol_options_set_tls_server_name(security, name) }
        sec_protocol_options_set_min_tls_protocol_version(security, Self.version(minimumVersion))
        sec_protocol_options_set_max_tls_protocol_version(security, Self.version(maximumVersion))
        for p in applicationProtocols { sec_protocol_options_add_tls_application_protocol(security, p) }
        sec_protocol_options_set_verify_block(security, { [weak self] _, trust, complete in
            guard let self else { return complete(false) }
            complete(self.verify(trust))
        }, queue)

        // One framer definition per session: its start handler keeps this session (weakly), so no
        // context has to travel through framer options.
        let definition = nw_framer_create_definition("SQLClient.TDSTLS", 0) { [weak self] framer in
            // `self` here is the start handler's weak reference: the handlers keep it weak too.
            nw_framer_set_output_handler(framer) { framer, _, length, _ in
                _ = nw_framer_parse_output(framer, 1, length, nil) { buffer, count, _ in
                    if let buffer, count > 0 {
                        self?.tlsWrote(Array(UnsafeBufferPointer(start: buffer, count: count)))
                    }
                    return count
                }
            }
            nw_framer_set_stop_handler(framer) { _ in true }
            self?.framerStarted(framer)
            return nw_framer_start_result_ready
        }

        let parameters = nw_parameters_create()
        let stack = nw_parameters_copy_default_protocol_stack(parameters)
        nw_protocol_stack_set_transport_protocol(stack, nw_udp_create_options())
        // Prepending puts a protocol on top: the framer first, then TLS above it.
        nw_protocol_stack_prepend_application_protocol(stack, nw_framer_create_options(definition))
        nw_protocol_stack_prepend_application_protocol(stack, tls)
        return nw_connection_create(nw_endpoint_create_host("127.0.0.1", "9"), parameters)
    }

    private func framerStarted(_ framer: nw_framer_t) {
        lock.withLock { self.framer = framer }
    }

    /// Ciphertext TLS wrote (on the queue).
    private func tlsWrote(_ bytes: [UInt8]) {
        lock.withLock {
            output += bytes
            if case .handshaking = phase {
                do {
                    try clientRecords.append(bytes)
                } catch {
                    phase = .failed(SQLClientError(.tlsFailed, "Network.framework wrote bytes that are not TLS (\(error))"))
                }
            }
            resumeReadyWaiters()
        }
    }

    /// Hands the server's ciphertext to TLS, through the framer, on the queue.
    private func deliver(_ bytes: [UInt8]) async throws {
        guard let framer = lock.withLock({ self.framer }) else {
            throw SQLClientError(.tlsFailed, "the Network.framework TLS framer has not started")
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            nw_framer_async(framer) {
                let message = nw_framer_message_create(framer)
                bytes.withUnsafeBufferPointer { buffer in
                    if let base = buffer.baseAddress {
                        nw_framer_deliver_input(framer, base, buffer.count, message, false)
                    }
                }
                continuation.resume()
            }
        }
    }

    /// Returns once the work queued on the framer and then on the queue before this call has run.
    private func barrier() async {
        guard let framer = lock.withLock({ self.framer }) else { return }
        let queue = self.queue
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            nw_framer_async(framer) {
                queue.async { continuation.resume() }
            }
        }
    }

    private func connectionState(_ state: nw_connection_state_t, _ error: nw_error_t?) {
        var receive = false
        lock.withLock {
            if state == nw_connection_state_ready {
                if case .handshaking = phase {
                    phase = .ready
                    readMetadata()
                    receive = true
                }
            } else if state == nw_connection_state_failed || (state == nw_connection_state_waiting && error != nil) {
                if case .failed = phase {} else {
                    phase = .failed(refusal ?? Self.tlsError("the TLS handshake failed", error))
                }
            } else if state == nw_connection_state_cancelled {
                if case .failed = phase {} else { phase = .cancelled }
            }
            resumeReadyWaiters()
        }
        if receive { receiveNext() }
    }

    /// Keeps one receive outstanding: the plaintext TLS decrypted collects for `decrypt`.
    private func receiveNext() {
        guard let connection = lock.withLock({ self.connection }) else { return }
        nw_connection_receive(connection, 1, 65_536) { [weak self] content, _, isComplete, error in
            guard let self else { return }
            var again = true
            self.lock.withLock {
                if let content {
                    self.plaintext += [UInt8](content as DispatchData)
                }
                if let error {
                    if case .failed = self.phase {} else { self.phase = .failed(Self.tlsError("TLS decryption failed", error)) }
                    again = false
                } else if isComplete && content == nil {
                    self.peerClosed = true
                    again = false
                }
                self.resumeReadyWaiters()
            }
            if again { self.receiveNext() }
        }
    }

    private func readMetadata() {
        guard let connection,
              let metadata = Self.optional(nw_connection_copy_protocol_metadata(connection, nw_protocol_copy_tls_definition())),
              let security = Self.optional(nw_tls_copy_sec_protocol_metadata(metadata)) else { return }
        if let alpn = Self.optional(sec_protocol_metadata_get_negotiated_protocol(security)) {
            chosenALPN = String(cString: alpn)
        }
        switch sec_protocol_metadata_get_negotiated_tls_protocol_version(security) {
        case .TLSv13: chosenProtocol = "TLSv1.3"
        case .TLSv12: chosenProtocol = "TLSv1.2"
        default: chosenProtocol = "TLS"
        }
    }

    // MARK: - Verification (SecTrust; the decisions are TLSVerificationPolicy's)

    /// The verify block's answer (on the queue): true to go on with the handshake.
    private func verify(_ trust: sec_trust_t) -> Bool {
        let secTrust = sec_trust_copy_ref(trust).takeRetainedValue()
        let chain = (SecTrustCopyCertificateChain(secTrust) as? [SecCertificate]) ?? []
        let leaf = chain.first.map { [UInt8](SecCertificateCopyData($0) as Data) }
        let verdict = policy.verdict(leafDER: leaf) { Self.evaluate(secTrust, policy.mode) }
        lock.withLock {
            peerLeaf = leaf
            refusal = verdict
        }
        return verdict == nil
    }

    /// Runs the chain evaluation `mode` asks for; nil when the chain is trusted.
    static func evaluate(_ trust: SecTrust, _ mode: TLSVerificationPolicy.Mode) -> TLSVerificationPolicy.TrustFailure? {
        guard case .chain(let anchors, let hostName) = mode else { return nil }
        SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, hostName.map { $0 as CFString }))
        if case .only(let certificates) = anchors {
            let anchorCertificates = certificates.compactMap { SecCertificateCreateWithData(nil, Data($0) as CFData) }
            SecTrustSetAnchorCertificates(trust, anchorCertificates as CFArray)
            SecTrustSetAnchorCertificatesOnly(trust, true)
        }
        var error: CFError?
        if SecTrustEvaluateWithError(trust, &error) { return nil }
        let code = error.map { OSStatus(truncatingIfNeeded: CFErrorGetCode($0)) } ?? errSecNotTrusted
        switch code {
        case errSecHostNameMismatch: return .hostNameMismatch
        case errSecCertificateExpired: return .expired
        case errSecCertificateNotValidYet: return .notYetValid
        case errSecNotTrusted, errSecCreateChainFailed, -2_147_409_622 /* CSSMERR_TP_NOT_TRUSTED */:
            return .untrustedIssuer
        default:
            return .other(error.map { CFErrorCopyDescription($0) as String } ?? "OSStatus \(code)")
        }
    }

    // MARK: - Helpers (under `lock` unless said otherwise)

    private var isFailedOrReady: Bool {
        switch phase {
        case .ready, .failed, .cancelled: return true
        case .created, .handshaking: return false
        }
    }

    private func throwIfFailed() throws {
        switch phase {
        case .failed(let error): throw error
        case .cancelled: throw SQLClientError(.tlsFailed, "the TLS session was cancelled")
        default: return
        }
    }

    private func takeOutput() -> [UInt8] {
        let bytes = output
        output = []
        return bytes
    }

    /// How long a wait may see no answer from Network.framework before the session fails: a
    /// safety net (the connection's own login timeout normally ends a stalled login first).
    static let stallLimit: DispatchTimeInterval = .seconds(60)

    /// Suspends until `ready` (evaluated under the lock) holds, or the session fails.
    private func wait(_ ready: @escaping @Sendable () -> Bool) async {
        let id: Int = lock.withLock {
            nextWaiterID += 1
            let id = nextWaiterID
            waiterQueue.expect(id)
            if ready() || isTerminal {
                waiterQueue.resume(id, with: .success(()))
            } else {
                waiters.append(Waiter(id: id, ready: ready))
            }
            return id
        }
        queue.asyncAfter(deadline: .now() + Self.stallLimit) { [weak self] in
            self?.stalled(id)
        }
        // Resumed with success only (a failure is the phase, read by the caller after).
        try? await waiterQueue.wait(id)
    }

    /// Fails the session when the waiter `id` is still waiting (on the queue).
    private func stalled(_ id: Int) {
        lock.withLock {
            guard waiters.contains(where: { $0.id == id }) else { return }
            if case .failed = phase {} else {
                phase = .failed(SQLClientError(.tlsFailed, "Network.framework's TLS gave no answer within 60 s"))
            }
            resumeReadyWaiters()
        }
    }

    private func resumeReadyWaiters() {
        var still: [Waiter] = []
        for waiter in waiters {
            if waiter.ready() || isTerminal { waiterQueue.resume(waiter.id, with: .success(())) } else { still.append(waiter) }
        }
        waiters = still
    }

    private var isTerminal: Bool {
        switch phase {
        case .failed, .cancelled: return true
        default: return false
        }
    }

    private static func version(_ version: TLSConfiguration.ProtocolVersion) -> tls_protocol_version_t {
        version >= .tls1_3 ? .TLSv13 : .TLSv12
    }

    /// `value` as an optional whether the SDK declares it nullable or not.
    private static func optional<T>(_ value: T?) -> T? { value }

    private static func tlsError(_ what: String, _ error: nw_error_t?) -> SQLClientError {
        guard let error else { return SQLClientError(.tlsFailed, what) }
        let code = nw_error_get_error_code(error)
        var detail = "Network.framework error \(code)"
        // In the TLS domain the code is a Security OSStatus (for example -9808, errSSLBadCert).
        if nw_error_get_error_domain(error) == nw_error_domain_tls,
           let text = Self.optional(SecCopyErrorMessageString(OSStatus(code), nil)) {
            detail += ": " + (text as String)
        }
        return SQLClientError(.tlsFailed, "\(what) (\(detail))")
    }
}
#endif

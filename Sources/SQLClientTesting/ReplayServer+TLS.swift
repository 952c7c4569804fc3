import Foundation
import TDS
#if canImport(CSQLClientOpenSSL)
import CSQLClientOpenSSL
#endif

/// The replay server's TLS inside PRELOGIN ([MS-TDS] 2.2.6.5 ENCRYPTION, 3.2.5.2): the
/// PRELOGIN answer, the handshake carried in PRELOGIN (0x12) packets, then TLS records bare on
/// the wire, for the login only (the client sent ENCRYPT_OFF) or the whole session (ENCRYPT_ON).
struct ReplayTLSState {
    #if canImport(CSQLClientOpenSSL)
    var session: OpenSSLTLSServerSession?
    #endif
    /// PRELOGIN messages are handshake records until the handshake completes.
    var handshaking = false
    /// Bytes from the client are TLS records (from the end of the handshake; until LOGIN7 in login-only mode).
    var decrypting = false
    /// Bytes to the client become TLS records (whole-session mode).
    var encrypting = false
    var loginOnly = false
}

extension ReplayConnection {
    /// PRELOGIN: the client's request (answered with the encryption this server agrees to), or,
    /// during the handshake, TLS records.
    func handlePrelogin(_ payload: [UInt8]) {
        if tls.handshaking {
            continueTLSHandshake(payload)
            return
        }
        let request = try? Prelogin.decode(from: payload)
        log.clientEncryption = request?.encryption?.rawValue
        var answer = Prelogin.Encryption.notSupported
        #if canImport(CSQLClientOpenSSL)
        if let identity = server.options.tls, let asked = request?.encryption?.mode, asked != .notSupported {
            do {
                tls.session = try OpenSSLTLSServerSession(identity: identity)
                answer = asked == .off ? .off : .on
                tls.handshaking = true
                tls.loginOnly = asked == .off
            } catch {
                answer = .notSupported   // a certificate OpenSSL refuses: the client sees a plaintext server
            }
        }
        #endif
        sendMessage(Self.preloginResponse(encryption: answer))
    }

    /// A PRELOGIN response ([MS-TDS] 2.2.6.5): VERSION 16.0, the ENCRYPTION agreed, INSTOPT 0, MARS off.
    static func preloginResponse(encryption: Prelogin.Encryption) -> [UInt8] {
        Prelogin(version: .init(major: 16, minor: 0, build: 0x1000), encryption: encryption,
                 instanceOption: [0], mars: 0).encode()
    }

    /// Feeds one PRELOGIN message of handshake records; sends the answer in PRELOGIN packets.
    func continueTLSHandshake(_ payload: [UInt8]) {
        #if canImport(CSQLClientOpenSSL)
        guard let session = tls.session else { closed = true; return }
        do {
            let step = try session.handshake(payload)
            if !step.output.isEmpty { sendMessage(step.output, type: PacketType.prelogin.rawValue) }
            guard step.isComplete else { return }
            tls.handshaking = false
            tls.decrypting = true
            tls.encrypting = !tls.loginOnly
            log.tlsProtocol = session.negotiatedProtocol
            log.tlsLoginOnly = tls.loginOnly
            if inbox.bufferedByteCount > 0 {
                // Records that arrived with the handshake's last flight.
                let early = inbox.takeRemaining()
                _ = receivedFromWire(early[...])
            }
        } catch {
            closed = true
        }
        #else
        closed = true
        #endif
    }

    /// Bytes read from the socket: decrypted while TLS covers the client's side.
    func receivedFromWire(_ bytes: ArraySlice<UInt8>) -> Bool {
        #if canImport(CSQLClientOpenSSL)
        if tls.decrypting, let session = tls.session {
            do {
                inbox.append(try session.decrypt(Array(bytes)))
                return true
            } catch {
                closed = true
                return false
            }
        }
        #endif
        inbox.append(bytes)
        return true
    }

    /// Bytes to write to the socket: TLS records in whole-session mode; nil when encryption fails.
    func wireBytes(_ plaintext: [UInt8]) -> [UInt8]? {
        #if canImport(CSQLClientOpenSSL)
        if tls.encrypting, let session = tls.session { return try? session.encrypt(plaintext) }
        #endif
        return plaintext
    }

    /// After a login-only (ENCRYPT_OFF) LOGIN7: everything else is plaintext.
    func endLoginOnlyTLS() {
        if tls.loginOnly { tls.decrypting = false }
    }
}

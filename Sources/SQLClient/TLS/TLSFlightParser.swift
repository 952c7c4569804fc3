import TDS

/// Reads the TLS record layer of one direction of a handshake and tells where a flight ends
/// (RFC 5246 §6.2 and §7.3 for TLS 1.2, RFC 8446 §5 and §4 for TLS 1.3).
///
/// A TLS engine that gives no "I need more input" signal (Network.framework, `Sources/SQLClient/TLS/Apple`)
/// uses two of these: one over the bytes the client's TLS wrote, to know when its flight is whole
/// and can go out in one PRELOGIN message; one over the server's bytes, to know whether the client
/// now owes an answer. Plain Swift, tested on Linux with flights the OpenSSL engine produces.
///
/// Bytes may come in any split; every record length is checked against the protocol's cap
/// before it is buffered, and malformed input is a ``TLSRecordError`` with its offset.
package struct TLSFlightParser: Sendable {
    /// Whose records these are.
    package enum Sender: Sendable { case client, server }

    /// Why a flight ended.
    package enum FlightEnd: Sendable, Hashable {
        /// A ClientHello (the client's first flight, or its answer to a HelloRetryRequest).
        case clientHello
        /// A TLS 1.3 HelloRetryRequest: the client owes a second ClientHello.
        case helloRetryRequest
        /// TLS 1.2 ServerHelloDone: the client owes its key exchange flight.
        case serverHelloDone
        /// The protected record after ChangeCipherSpec (TLS 1.2 Finished, either side).
        case finished
        /// A TLS 1.3 protected record from the client during the handshake: its Finished (this
        /// client offers no certificate, so its second flight is that one record).
        case protectedClientFinished
        /// An alert: the sender gives up (or closes); nothing more follows in this flight.
        case alert
    }

    /// A flight's end and the number of bytes, counted from the first byte ever appended, that it covers.
    package struct Boundary: Sendable, Hashable {
        /// Why the flight ended.
        package var end: FlightEnd
        /// Bytes from the start of the stream to the end of the record that ends the flight.
        package var offset: Int
    }

    /// The largest record fragment accepted: TLSCiphertext's 2^14 + 2048 (RFC 5246 §6.2.3).
    package static let maximumFragmentLength = 16_384 + 2_048
    /// The largest plaintext handshake message reassembled (a certificate chain): 256 KiB.
    package static let maximumHandshakeMessageLength = 256 << 10

    /// The record content types (RFC 8446 §5.1).
    enum ContentType: UInt8 { case changeCipherSpec = 20, alert = 21, handshake = 22, applicationData = 23 }

    /// The SHA-256 of "HelloRetryRequest": a ServerHello with this random is a HelloRetryRequest (RFC 8446 §4.1.3).
    static let helloRetryRandom: [UInt8] = [
        0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
        0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
    ]

    private let sender: Sender
    private var buffer: [UInt8] = []
    /// Stream offset of `buffer[0]`.
    private var consumed = 0
    /// Plaintext handshake bytes not yet a whole message (messages may span records).
    private var handshake: [UInt8] = []
    /// A ChangeCipherSpec was seen: the sender's handshake records are protected from now on.
    private var protected = false
    /// The server's ServerHello selected TLS 1.3 (supported_versions 0x0304).
    private(set) package var negotiatedTLS13 = false
    /// Every flight end found so far, in order.
    private(set) package var boundaries: [Boundary] = []

    /// A parser for the records `sender` writes.
    package init(sender: Sender) { self.sender = sender }

    /// Stream bytes appended so far.
    package var totalBytes: Int { consumed + buffer.count }
    /// True when the bytes end inside a record (more must come before it can be judged).
    package var endsInsideRecord: Bool { !buffer.isEmpty }
    /// True when the last whole record appended ended a flight and no byte followed it.
    package var isAtFlightEnd: Bool { buffer.isEmpty && boundaries.last?.offset == consumed }

    /// Appends `bytes`; returns the flight ends they complete.
    /// - Throws: ``TLSRecordError`` for a record that is not TLS (unknown content type, a version
    ///   byte that is not 3, a length over ``maximumFragmentLength``) or a malformed handshake message.
    @discardableResult
    package mutating func append(_ bytes: [UInt8]) throws(TLSRecordError) -> [Boundary] {
        buffer += bytes
        var found: [Boundary] = []
        // The header is judged as soon as each byte arrives: garbage is refused at its first byte.
        while !buffer.isEmpty {
            guard let type = ContentType(rawValue: buffer[0]) else {
                throw TLSRecordError(offset: consumed, "content type \(buffer[0]) is not a TLS record type")
            }
            if buffer.count >= 2, buffer[1] != 3 {
                throw TLSRecordError(offset: consumed + 1, "record major version \(buffer[1]) is not TLS's 3")
            }
            if buffer.count >= 5 && Int(buffer[3]) << 8 | Int(buffer[4]) > Self.maximumFragmentLength {
                throw TLSRecordError(offset: consumed + 3, "record length is over \(Self.maximumFragmentLength)")
            }
            guard buffer.count >= 5 else { break }
            let length = Int(buffer[3]) << 8 | Int(buffer[4])
            guard buffer.count >= 5 + length else { break }
            let fragment = Array(buffer[5 ..< 5 + length])
            let recordStart = consumed
            buffer.removeFirst(5 + length)
            consumed += 5 + length
            if let end = try record(type, fragment, at: recordStart) {
                let boundary = Boundary(end: end, offset: consumed)
                boundaries.append(boundary)
                found.append(boundary)
            }
        }
        return found
    }

    /// The flight end `fragment` makes, if any.
    private mutating func record(_ type: ContentType, _ fragment: [UInt8], at offset: Int) throws(TLSRecordError) -> FlightEnd? {
        switch type {
        case .alert:
            return .alert
        case .changeCipherSpec:
            // TLS 1.3's compatibility ChangeCipherSpec (RFC 8446 §D.4) changes nothing; TLS 1.2's
            // protects every later record of this sender.
            if !negotiatedTLS13 { protected = true }
            return nil
        case .applicationData:
            // TLS 1.3 protects the handshake in application_data records: from the client during
            // the handshake that is its Finished; from the server, nothing here tells the end.
            return sender == .client ? .protectedClientFinished : nil
        case .handshake:
            if protected {
                // After ChangeCipherSpec the next handshake record is the protected Finished, or
                // (TLS 1.3 middlebox mode after a HelloRetryRequest) a new ClientHello: either ends the flight.
                protected = false
                handshake = []
                return .finished
            }
            guard !fragment.isEmpty else { throw TLSRecordError(offset: offset, "an empty handshake record") }
            guard handshake.count + fragment.count <= Self.maximumHandshakeMessageLength + 4 else {
                throw TLSRecordError(offset: offset, "a handshake message over \(Self.maximumHandshakeMessageLength) bytes")
            }
            handshake += fragment
            var end: FlightEnd?
            while handshake.count >= 4 {
                let length = Int(handshake[1]) << 16 | Int(handshake[2]) << 8 | Int(handshake[3])
                guard length <= Self.maximumHandshakeMessageLength else {
                    throw TLSRecordError(offset: offset, "handshake message length \(length) is over "
                                         + "\(Self.maximumHandshakeMessageLength)")
                }
                guard handshake.count >= 4 + length else { break }
                let message = Array(handshake[0 ..< 4 + length])
                handshake.removeFirst(4 + length)
                if let e = try self.message(message, at: offset) { end = e }
            }
            return end
        }
    }

    /// The flight end one whole plaintext handshake message makes, if any.
    private mutating func message(_ message: [UInt8], at offset: Int) throws(TLSRecordError) -> FlightEnd? {
        switch message[0] {
        case 1:   // client_hello
            return .clientHello
        case 2:   // server_hello
            let body = message.dropFirst(4)
            // legacy_version(2) random(32) session_id<0..32> cipher_suite(2) compression(1) extensions<..>
            guard body.count >= 35 else { throw TLSRecordError(offset: offset, "a ServerHello shorter than 38 bytes") }
            let start = body.startIndex
            let random = Array(body[start + 2 ..< start + 34])
            if random == Self.helloRetryRandom { return .helloRetryRequest }
            if Self.selectsTLS13(body) { negotiatedTLS13 = true }
            return nil
        case 14:  // server_hello_done
            return .serverHelloDone
        default:
            return nil
        }
    }

    /// The length of the whole records at the start of `bytes` (a record's 5-byte header and its
    /// fragment; a partial record at the end is not counted). Used to hand out records whole.
    package static func lengthOfWholeRecords(_ bytes: [UInt8]) -> Int {
        var i = 0
        while bytes.count - i >= 5 {
            let length = 5 + (Int(bytes[i + 3]) << 8 | Int(bytes[i + 4]))
            guard bytes.count - i >= length else { break }
            i += length
        }
        return i
    }

    /// True when a ServerHello body carries supported_versions (43) with TLS 1.3 (0x0304).
    static func selectsTLS13(_ body: ArraySlice<UInt8>) -> Bool {
        var i = body.startIndex + 34
        guard i < body.endIndex else { return false }
        i += 1 + Int(body[i])          // session id
        i += 3                         // cipher suite, compression method
        guard i + 2 <= body.endIndex else { return false }
        let extensionsEnd = i + 2 + (Int(body[i]) << 8 | Int(body[i + 1]))
        i += 2
        guard extensionsEnd <= body.endIndex else { return false }
        while i + 4 <= extensionsEnd {
            let type = Int(body[i]) << 8 | Int(body[i + 1])
            let length = Int(body[i + 2]) << 8 | Int(body[i + 3])
            i += 4
            guard i + length <= extensionsEnd else { return false }
            if type == 43, length == 2 { return body[i] == 3 && body[i + 1] == 4 }
            i += length
        }
        return false
    }
}

/// What a TLS engine without an "I need more input" signal does next during a handshake step,
/// from the records both sides wrote so far: the decision the Network.framework engine takes after
/// delivering the server's bytes, as a pure function (tested on Linux with real flights).
package enum TLSHandshakeProgress: Sendable, Hashable {
    /// Hand out the client's flight; the handshake goes on.
    case returnFlight
    /// The handshake is complete: hand out what is left.
    case returnComplete
    /// The server's records end a flight the client must answer: wait for its output.
    case waitForOutput
    /// The client wrote its last flight (its Finished after the server's): wait for the engine's ready.
    case waitForReady
    /// Nothing tells yet: let the engine's queue drain once more.
    case barrier
    /// Nothing came out and nothing says it will: the server's flight is not whole; ask for more bytes.
    case needMoreInput

    /// The next step. `client` and `server` have seen every byte each side wrote; `hasOutput` says
    /// whether client bytes are waiting to be handed out; `isReady` whether the engine reports the
    /// handshake done; `barriersRun` how many barriers this step has already let pass; `barrierLimit`
    /// how many to let pass before asking for more input.
    package static func next(client: TLSFlightParser, server: TLSFlightParser, hasOutput: Bool, isReady: Bool,
                             barriersRun: Int, barrierLimit: Int = 2) -> TLSHandshakeProgress {
        if isReady { return .returnComplete }
        if hasOutput && client.isAtFlightEnd {
            let last = client.boundaries.last?.end
            let serverFinished = server.negotiatedTLS13 || server.boundaries.contains { $0.end == .finished }
            if (last == .finished || last == .protectedClientFinished) && serverFinished { return .waitForReady }
            return .returnFlight
        }
        if server.isAtFlightEnd { return .waitForOutput }
        return barriersRun < barrierLimit ? .barrier : .needMoreInput
    }
}

/// Bytes that are not a well-formed TLS record stream.
package struct TLSRecordError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stream offset of the offending byte (or of the record that holds it).
    package var offset: Int
    /// What is wrong.
    package var reason: String
    package init(offset: Int, _ reason: String) {
        self.offset = offset
        self.reason = reason
    }
    package var description: String { "malformed TLS at byte \(offset): \(reason)" }
}

import TDS

/// Decodes a whole input for `sqlclient decode`: a pcap/pcapng capture (every TDS
/// conversation, each with its own TDS version), or a `.hex`/raw file holding TDS packets, a
/// bare token stream or a message body.
///
/// Never throws: every problem becomes a ``DecodeFailure`` in the report (a malformed
/// container, a Sybase TDS 5.0 conversation, a message or token that does not decode).
public enum CaptureDecoder {
    public static func decode(bytes: [UInt8], fileName: String? = nil, options: DecodeOptions = DecodeOptions()) -> DecodeReport {
        let file: CaptureFile
        do {
            file = try CaptureFile(bytes: bytes, fileName: fileName)
        } catch {
            return DecodeReport(format: CaptureFormat.detect(bytes, fileName: fileName), records: [],
                                failures: [DecodeFailure(message: "capture", token: "", offset: error.offset, code: "capture", detail: error.detail)],
                                sessions: [], notes: [])
        }
        if file.isPacketCapture && !options.tokensOnly {
            return decodeCapture(file, options: options)
        }
        return decodeBytes(file.format == .raw || file.format == .hex ? file.bytes : bytes, format: file.format, options: options)
    }

    // MARK: pcap / pcapng

    static func decodeCapture(_ file: CaptureFile, options: DecodeOptions) -> DecodeReport {
        var report = DecodeReport(format: file.format, records: [], failures: [], sessions: [], notes: [])
        let sessions: [TDSSession]
        do {
            sessions = try file.tdsSessions(port: options.port, forcedVersion: options.forcedVersion)
        } catch {
            report.failures.append(DecodeFailure(message: "capture", offset: error.offset, code: "capture", detail: error.detail))
            return report
        }
        if sessions.isEmpty {
            report.notes.append("no TDS conversation found (port 1433\(options.port.map { ", \($0)" } ?? ""), or TDS packet headers at the start of a TCP stream)")
        }
        for session in sessions {
            let name = session.conversation.name
            if let reason = session.legacyProtocolReason {
                report.failures.append(DecodeFailure(message: "PRE_TDS7_LOGIN", token: "PacketHeader", offset: 0,
                                                     code: TDSDecodingError.Code.unsupportedProtocol.name,
                                                     detail: "refused: this is Sybase TDS 5.0 (or TDS 4.x), not TDS 7.x: \(reason)",
                                                     conversation: name, streamOffset: 0,
                                                     frame: session.conversation.clientStream.chunks.first.map { $0.frameIndex + 1 }))
                continue
            }
            var (records, failures, used) = decodeSession(session, version: session.version)
            let authoritative = ["LOGINACK", "LOGIN7", "--tds-version"].contains(session.version.evidence)
            if !failures.isEmpty && !authoritative {
                for alternative in [TDSVersion.v7_4, .v7_1_1, .v7_2, .v7_3B] where alternative.generation != session.version.version.generation {
                    let trial = decodeSession(session, version: InferredTDSVersion(version: alternative, evidence: "decodes only as \(alternative)"))
                    if trial.1.isEmpty { (records, failures, used) = trial; break }
                }
            }
            report.sessions.append(DecodeReport.SessionSummary(name: name, version: used))
            if !session.conversation.clientStream.sawSYN && !session.conversation.serverStream.sawSYN {
                report.notes.append("\(name): the capture starts in the middle of the connection")
            }
            report.records += records
            report.failures += failures
        }
        for (i, r) in report.records.enumerated() where r.type == "UNDECODED" || r["incomplete"] != nil {
            _ = i
            report.notes.append("\(r.conversation ?? ""): \(r.direction) stream offset \(r.streamOffset): \(r["reason"]?.stringValue ?? "")")
        }
        return report
    }

    static func decodeSession(_ session: TDSSession, version: InferredTDSVersion) -> ([DecodedRecord], [DecodeFailure], InferredTDSVersion) {
        var decoder = ConversationMessageDecoder(version: version.version)
        var records: [DecodedRecord] = []
        var failures: [DecodeFailure] = []
        let name = session.conversation.name
        // After a TLS handshake, bytes that are not TDS packets are the encrypted session.
        var handshakeSeen: Set<TDSDirection> = []
        for m in session.messages {
            if case .tls(_, _, true) = m.content { handshakeSeen.insert(m.direction) }
            if !handshakeSeen.isEmpty {
                var encryptedBytes: Int?
                if case .skipped(let count, _) = m.content { encryptedBytes = count }
                if case .malformed = m.content { encryptedBytes = 0 }
                if let count = encryptedBytes {
                    records.append(DecodedRecord(conversation: name, direction: m.direction, type: "TLS", streamOffset: m.streamOffset,
                                                 frame: m.frameIndex.map { $0 + 1 },
                                                 fields: [("encrypted", .bool(true)), ("tls", .string("non-TDS bytes after the TLS handshake")),
                                                          ("bytes", .int(Int64(count)))]))
                    continue
                }
            }
            var record = DecodedRecord(conversation: name, direction: m.direction, type: "", streamOffset: m.streamOffset,
                                       frame: m.frameIndex.map { $0 + 1 }, fields: [])
            switch m.content {
            case .tds(let message):
                record.type = message.type.name
                let (fields, failure) = decoder.decode(type: message.type, payload: message.payload, direction: m.direction)
                record.fields = fields
                if var failure {
                    failure.conversation = name
                    failure.streamOffset = m.streamOffset
                    failure.frame = record.frame
                    record.failure = failure
                    failures.append(failure)
                }
            case .tls(let count, let bytes, let inPrelogin):
                record.type = inPrelogin ? (m.packetType ?? .prelogin).name : "TLS"
                record.fields = [("encrypted", .bool(true)), ("tls", .string(inPrelogin ? "handshake" : "records")),
                                 ("records", .int(Int64(count))), ("bytes", .int(Int64(bytes)))]
            case .incomplete(let message, let reason):
                record.type = message.type.name
                record.fields = [("incomplete", .bool(true)), ("reason", .string(reason)), ("bytes", .int(Int64(message.payload.count)))]
            case .skipped(let count, let reason):
                record.type = "UNDECODED"
                record.fields = [("bytes", .int(Int64(count))), ("reason", .string(reason))]
            case .malformed(let error):
                record.type = "UNDECODED"
                var failure = DecodeFailure(error, message: "packet")
                failure.conversation = name
                failure.streamOffset = m.streamOffset
                failure.frame = record.frame
                record.failure = failure
                failures.append(failure)
            }
            records.append(record)
        }
        return (records, failures, version)
    }

    // MARK: .hex and raw

    static func decodeBytes(_ input: [UInt8], format: CaptureFormat, options: DecodeOptions) -> DecodeReport {
        var report = DecodeReport(format: format, records: [], failures: [], sessions: [], notes: [])
        var hint = options.hint
        if options.tokensOnly, hint == nil { hint = DecodeHint(kind: .tokens) }
        let bytes = (hint?.prefix ?? []) + input
        let kind = hint?.kind ?? detectKind(bytes)
        let version = options.forcedVersion ?? hint?.version

        func run(_ v: TDSVersion) -> ([DecodedRecord], [DecodeFailure]) {
            var decoder = ConversationMessageDecoder(version: v, columnEncryption: hint?.columnEncryption ?? false)
            var records: [DecodedRecord] = []
            var failures: [DecodeFailure] = []
            if let context = hint?.context, let failure = decoder.absorbContext(context) {
                var f = failure
                f.message = "context"
                failures.append(f)
            }
            func add(_ direction: TDSDirection, _ type: PacketType, _ payload: [UInt8], offset: Int, allHeaders: Bool?) {
                let (fields, failure) = decoder.decode(type: type, payload: payload, direction: direction, allHeaders: allHeaders)
                var record = DecodedRecord(conversation: nil, direction: direction, type: type.name, streamOffset: offset, frame: nil, fields: fields)
                if var failure {
                    failure.streamOffset = offset
                    record.failure = failure
                    failures.append(failure)
                }
                records.append(record)
            }
            switch kind {
            case .tokens:
                add(.server, .tabularResult, bytes, offset: 0, allHeaders: nil)
            case .body:
                let type = hint?.messageType ?? detectBodyType(bytes)
                let direction: TDSDirection = type == .tabularResult ? .server : .client
                add(direction, type, bytes, offset: 0, allHeaders: hint?.allHeaders ?? allHeadersGuess(type, bytes))
            case .packets:
                let direction: TDSDirection = bytes.first == 0x04 ? .server : .client
                if let reason = TDSDetection.legacyTDSReason(clientStream: bytes) {
                    failures.append(DecodeFailure(message: "PRE_TDS7_LOGIN", token: "PacketHeader", offset: 0,
                                                  code: TDSDecodingError.Code.unsupportedProtocol.name,
                                                  detail: "refused: this is Sybase TDS 5.0 (or TDS 4.x), not TDS 7.x: \(reason)"))
                    return (records, failures)
                }
                for m in TDSMessageSplitter.split(bytes, direction: direction) {
                    switch m.content {
                    case .tds(let message):
                        add(m.direction, message.type, message.payload, offset: m.streamOffset, allHeaders: hint?.allHeaders)
                    case .tls(let count, let n, let inPrelogin):
                        records.append(DecodedRecord(conversation: nil, direction: direction,
                                                     type: inPrelogin ? (m.packetType ?? .prelogin).name : "TLS",
                                                     streamOffset: m.streamOffset, frame: nil,
                                                     fields: [("encrypted", .bool(true)), ("tls", .string(inPrelogin ? "handshake" : "records")),
                                                              ("records", .int(Int64(count))), ("bytes", .int(Int64(n)))]))
                    case .incomplete(let message, let reason):
                        let headerCut = message.packetCount == 0 && bytes.count - m.streamOffset < PacketHeader.size
                        // The first packet's type decided the direction: TABULAR_RESULT is the server's.
                        let sender = m.direction == .server ? "server's" : "client's"
                        failures.append(DecodeFailure(message: headerCut ? "packet" : message.type.name, token: "PacketHeader",
                                                      offset: m.streamOffset, code: "incomplete",
                                                      detail: headerCut ? "\(bytes.count - m.streamOffset) byte(s) after the last packet: \(reason)"
                                                          : "the \(sender) \(message.type.name) message is short"
                                                            + (missingBytes(bytes, from: m.streamOffset).map { " by \($0) byte(s)" } ?? "")
                                                            + ": \(reason)",
                                                      streamOffset: m.streamOffset))
                    case .skipped(let count, let reason):
                        failures.append(DecodeFailure(message: "packet", token: "PacketHeader", offset: m.streamOffset,
                                                      code: TDSDecodingError.Code.invalidPacket.name,
                                                      detail: "\(count) byte(s) are not TDS packets (\(reason))", streamOffset: m.streamOffset))
                    case .malformed(let error):
                        var f = DecodeFailure(error, message: "packet")
                        f.streamOffset = m.streamOffset
                        failures.append(f)
                    }
                }
            }
            return (records, failures)
        }

        var used = version ?? inferVersion(bytes, kind: kind, hint: hint)
        var (records, failures) = run(used)
        if !failures.isEmpty && version == nil {
            for alternative in [TDSVersion.v7_4, .v7_1_1, .v7_2, .v7_3B] where alternative.generation != used.generation {
                let trial = run(alternative)
                if trial.1.isEmpty { (records, failures) = trial; used = alternative; break }
            }
        }
        report.records = records
        report.failures = failures
        report.sessions = [DecodeReport.SessionSummary(name: "input", version: InferredTDSVersion(version: used, evidence: version == nil ? "inferred" : "given"))]
        return report
    }

    /// How many bytes the packets from `offset` on lack: the packet whose header promises more
    /// than `bytes` holds, less what it holds; nil when every packet is whole.
    static func missingBytes(_ bytes: [UInt8], from offset: Int) -> Int? {
        var p = offset
        while p >= 0, bytes.count - p >= PacketHeader.size {
            let length = Int(bytes[p + 2]) << 8 | Int(bytes[p + 3])
            guard length >= PacketHeader.size else { return nil }
            if length > bytes.count - p { return length - (bytes.count - p) }
            p += length
        }
        return nil
    }

    /// What bytes without a hint hold: TDS packets, a token stream or a client request body.
    public static func detectKind(_ bytes: [UInt8]) -> DecodeHint.Kind {
        if TDSDetection.isPacketHeader(bytes) {
            let length = Int(bytes[2]) << 8 | Int(bytes[3])
            if length <= bytes.count { return .packets }
            // A first packet cut short (its header promises more than the input holds): still
            // packets when the header reads like a first one (Packet ID 0 or 1), so that the
            // packet type decides the message and the report says how many bytes are missing.
            if bytes[6] <= 1 { return .packets }
        }
        if TDSDetection.isTLSRecord(bytes) { return .packets }
        if let first = bytes.first, TokenType(rawValue: first).isKnown, detectBodyType(bytes) == .tabularResult { return .tokens }
        return .body
    }

    /// The message type of a body without header: RPC (ProcIDSwitch 0xFFFF or a procedure
    /// name, after optional ALL_HEADERS), LOGIN7 (its Length field equals the size), PRELOGIN
    /// (a valid option table), SQL_BATCH (UTF-16 text), otherwise TABULAR_RESULT (tokens).
    public static func detectBodyType(_ bytes: [UInt8]) -> PacketType {
        if bytes.count >= 8 {
            var r = ByteReader(bytes)
            if let length = try? r.readUInt32LE(), let raw = try? r.readUInt32LE(), Int(length) == bytes.count,
               (0x70...0x74).contains(TDSVersion(rawValue: raw).generation) {
                return .login7
            }
        }
        if let first = bytes.first, TokenType(rawValue: first).isKnown {
            for v in [TDSVersion.v7_4, .v7_1_1] {
                var d = ConversationMessageDecoder(version: v)
                if d.tokens(bytes, message: "", server: true).1 == nil { return .tabularResult }
            }
        }
        let headers = TDSVersionInference.startsWithAllHeaders(bytes)
        for v in [TDSVersion.v7_4, .v7_1_1] {
            if (try? RPCRequest.decode(from: bytes, version: v, allHeaders: headers)) != nil { return .rpc }
        }
        if bytes.first == 0x00, (try? Prelogin.decode(from: bytes)) != nil { return .prelogin }
        if let batch = try? SQLBatch.decode(from: bytes, version: .v7_4, allHeaders: headers), looksLikeText(batch.text) { return .sqlBatch }
        if let first = bytes.first, TokenType(rawValue: first).isKnown { return .tabularResult }
        return .rpc
    }

    /// Text a person wrote: not empty, no control characters but tab and line breaks, no
    /// private-use or replacement characters.
    static func looksLikeText(_ text: String) -> Bool {
        guard !text.isEmpty else { return false }
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if v < 0x20 && v != 0x09 && v != 0x0A && v != 0x0D { return false }
            if (0xE000...0xF8FF).contains(v) || v == 0xFFFD || v == 0xFFFF || v == 0xFFFE { return false }
        }
        return true
    }

    static func allHeadersGuess(_ type: PacketType, _ bytes: [UInt8]) -> Bool? {
        switch type {
        case .rpc, .sqlBatch, .transactionManager: return TDSVersionInference.startsWithAllHeaders(bytes)
        default: return nil
        }
    }

    /// The version for a single input: a LOGINACK or LOGIN7 inside it, the DONE width, else 7.4.
    static func inferVersion(_ bytes: [UInt8], kind: DecodeHint.Kind, hint: DecodeHint?) -> TDSVersion {
        var messages: [CapturedMessage] = []
        switch kind {
        case .packets:
            let direction: TDSDirection = bytes.first == 0x04 ? .server : .client
            messages = TDSMessageSplitter.split(bytes, direction: direction)
        case .tokens:
            messages = [CapturedMessage(direction: .server, content: .tds(TDSMessage(type: .tabularResult, firstStatus: .endOfMessage,
                                                                                      lastStatus: .endOfMessage, spid: 0, packetCount: 1, payload: bytes)),
                                        streamOffset: 0)]
        case .body:
            return .v7_4
        }
        let inferred = TDSVersionInference.infer(messages)
        return inferred.evidence == "requests without ALL_HEADERS" ? .v7_4 : inferred.version
    }
}

import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// Token builders and replay-server helpers for the RPC, transaction and cancellation tests.
enum RPCTokens {
    static let version = TDSVersion.v7_4

    static func colMetadata(_ columns: [ColumnMetadata]) -> [UInt8] {
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: version)
        return w.bytes
    }

    static func row(_ values: [SQLValue], _ columns: [ColumnMetadata]) throws -> [UInt8] {
        var w = ByteWriter()
        try Row(values: values).encode(into: &w, columns: columns)
        return w.bytes
    }

    static func done(_ status: DoneStatus = [], count: UInt64 = 0, command: UInt16 = 0xC1) -> [UInt8] {
        var w = ByteWriter()
        Done(status: status, currentCommand: command, rowCount: count).encode(into: &w, version: version)
        return w.bytes
    }

    static func doneInProc(_ status: DoneStatus = [.more], count: UInt64 = 0, command: UInt16 = 0xC1) -> [UInt8] {
        var w = ByteWriter()
        DoneInProc(status: status, currentCommand: command, rowCount: count).encode(into: &w, version: version)
        return w.bytes
    }

    static func doneProc(_ status: DoneStatus = [], count: UInt64 = 0) -> [UInt8] {
        var w = ByteWriter()
        DoneProc(status: status, currentCommand: 0xE0, rowCount: count).encode(into: &w, version: version)
        return w.bytes
    }

    static func returnStatus(_ value: Int32) -> [UInt8] { ServerTokens.returnStatus(value) }

    /// [MS-TDS] 2.2.7.19 RETURNVALUE (0xAC): ParamOrdinal, ParamName, Status (0x01 output),
    /// UserType (ULONG from 7.2), Flags, TYPE_INFO, value.
    static func returnValue(ordinal: UInt16, name: String, _ info: TypeInfo, _ value: SQLValue, status: UInt8 = 0x01) throws -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xAC)
        w.writeUInt16LE(ordinal)
        w.writeBVarChar(name)
        w.writeUInt8(status)
        w.writeUInt32LE(0)
        w.writeUInt16LE(ColumnFlags.nullable.rawValue)
        info.encode(into: &w, version: version)
        try info.encodeValue(value, into: &w)
        return w.bytes
    }

    /// An RPC exchange: the request as the replay server matches it (procedure and canonical
    /// values), and the response bytes.
    static func rpc(_ procedure: String, _ parameters: [(String, String?)], _ response: [[UInt8]],
                    faults: ReplaySession.Faults = .init()) -> ReplaySession.Exchange {
        ReplaySession.Exchange(request: .rpc(procedure: procedure, parameters: parameters.map { .init(name: $0.0, value: $0.1) }),
                               response: response.map { ReplaySession.Segment(bytes: $0) }, faults: faults)
    }

    static func batch(_ sql: String, _ response: [[UInt8]], faults: ReplaySession.Faults = .init()) -> ReplaySession.Exchange {
        ReplaySession.Exchange(request: .sqlBatch(sql), response: response.map { ReplaySession.Segment(bytes: $0) }, faults: faults)
    }
}

enum RPCReplay {
    static func start(_ session: ReplaySession) throws -> ReplayServer {
        let server = ReplayServer(session: session)
        _ = try server.start()
        return server
    }

    /// The replay server answers PRELOGIN with ENCRYPT_NOT_SUP: connect without TLS.
    static func configuration(_ server: ReplayServer) -> SQLConnectionConfiguration {
        SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "u",
                                   password: "p", encryption: .notSupported, connectTimeout: .seconds(20))
    }

    static func connect(_ server: ReplayServer, _ adjust: (inout SQLConnectionConfiguration) -> Void = { _ in }) async throws -> SQLConnection {
        var config = configuration(server)
        adjust(&config)
        return try await SQLConnection.connect(config)
    }

    /// As ``connect(_:_:)``, with the connection's time from `clock`: a timeout test moves it by
    /// hand instead of waiting for the wall clock.
    static func connect(_ server: ReplayServer, clock: ManualConnectionClock,
                        _ adjust: (inout SQLConnectionConfiguration) -> Void = { _ in }) async throws -> SQLConnection {
        var config = configuration(server)
        adjust(&config)
        let stream = try await SocketStream.connect(host: "127.0.0.1", port: Int(server.port), timeout: .seconds(10))
        return try await SQLConnection.connect(config, port: Int(server.port), over: stream, clock: clock)
    }

    /// Loads a session from Fixtures/sessions.
    static func fixture(_ name: String) throws -> ReplaySession {
        let root = SharedCaptures.packageRoot(from: #filePath)
        return try ReplaySession(contentsOf: root.appendingPathComponent("Fixtures/sessions/\(name)"))
    }
}

/// A ByteStream that records what the client writes (once ``startRecording()`` is called), so
/// tests can decode the requests SQLClient sent (ALL_HEADERS, RPC parameters) with the TDS decoders.
final class RecordingStream: ByteStream, @unchecked Sendable {
    let base: any ByteStream
    private let lock = NSLock()
    private var recording = false
    private var written: [UInt8] = []
    /// Every byte recorded so far.
    var recordedBytes: [UInt8] { lock.withLock { written } }

    init(_ base: any ByteStream) { self.base = base }

    func read(maxLength: Int) async throws -> [UInt8] { try await base.read(maxLength: maxLength) }

    func write(_ bytes: [UInt8]) async throws {
        lock.withLock { if recording { written += bytes } }
        try await base.write(bytes)
    }

    func close() { base.close() }

    /// Records from now on (after the login, whose LOGIN7 may travel as bare TLS records).
    func startRecording() { lock.withLock { recording = true; written = [] } }

    /// The client messages recorded so far: packets ([MS-TDS] 2.2.3 header, big-endian length)
    /// joined up to EOM, decoded with ``ClientRequest``.
    func requests(version: TDSVersion = .v7_4) throws -> [ClientRequest] {
        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        framer.append(lock.withLock { written })
        return try framer.nextMessages().map { try ClientRequest.decode(type: $0.type, payload: $0.payload, version: version) }
    }

    /// The ALL_HEADERS transaction descriptor of each recorded batch, RPC or TM request.
    func descriptors() throws -> [(kind: String, descriptor: UInt64?)] {
        try requests().compactMap { r in
            switch r {
            case .sqlBatch(let b): return ("batch", b.allHeaders?.transactionDescriptor?.descriptor)
            case .rpc(let rpc): return ("rpc", rpc.allHeaders?.transactionDescriptor?.descriptor)
            case .transactionManager(let tm): return ("tm \(tm.request.type)", tm.allHeaders?.transactionDescriptor?.descriptor)
            default: return nil
            }
        }
    }
}

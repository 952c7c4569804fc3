import Foundation
import TDS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TDS server on loopback that accepts bulk loads ([MS-TDS] 2.2.6.1) and records what it
/// received, for conformance tests and benchmarks of bulk-copy clients (SQLClient, FreeTDS's
/// freebcp, Microsoft's mssql-python) with no SQL Server present.
///
/// It answers PRELOGIN (encryption not supported) and LOGIN7 (a generated login response for
/// the TDS version asked), and the metadata queries bulk clients send before loading, for the
/// tables it is given: `SELECT TOP 0 * FROM t`, `SELECT * FROM t WHERE 1=0`, `SET FMTONLY ON
/// select * from t SET FMTONLY OFF` (COLMETADATA of the table, no rows), `select @@trancount`
/// (0) and `sp_tablecollations_100` (each character column's collation), in SQL batches or as the
/// statement of an `sp_executesql`/`sp_prepexec` RPC. `INSERT BULK …` is recorded and answered
/// with DONE; the BULKLOAD message that follows is decoded as its packets arrive
/// (``BulkLoadReader``): its rows are counted (and kept, unless `recordsRows` is false) and the
/// message is answered with DONE(COUNT, rows), or with ERROR and DONE(ERROR) when it is malformed
/// or reaches ``failAtRow``. A message ended with EOM|IGNORE is dropped (DONE with DONE_ERROR, no count, [MS-TDS] 2.2.1.7). Any
/// other request gets an empty DONE.
public final class BulkLoadServer: @unchecked Sendable {
    /// One BULKLOAD message as received.
    public struct Load: Sendable {
        /// The INSERT BULK statement that announced it (nil if none came first).
        public var statement: String?
        /// The BULKLOAD COLMETADATA.
        public var columns: [ColumnMetadata] = []
        /// The rows (empty when the server does not record rows).
        public var rows: [[SQLValue]] = []
        /// The number of rows received.
        public var rowCount = 0
        /// Packets the message came in, and their payload sizes.
        public var packetSizes: [Int] = []
        /// The client ended the message with EOM|IGNORE (discarded).
        public var ignored = false
        /// Why the message was refused (malformed, or ``BulkLoadServer/failAtRow`` reached).
        public var error: String?
        /// The DONE that ended the message (nil when it ended without one, as FreeTDS's bcp sends it).
        public var done: Done?
        /// Departures from [MS-TDS] the reader accepted (``BulkLoadReader/quirks``).
        public var quirks: [String] = []
        /// The message's first bytes (up to 1,024), for diagnostics.
        public var head: [UInt8] = []
    }

    /// Every request of every connection, in order: SQL batch texts, "RPC name: statement", "BULKLOAD n rows".
    public var requests: [String] { lock.withLock { _requests } }
    /// Every bulk-load message received.
    public var loads: [Load] { lock.withLock { _loads } }
    /// Rows of the loads answered with DONE(COUNT).
    public var committedRows: Int { lock.withLock { _committed } }
    /// TDS versions the clients asked for in LOGIN7.
    public var loginVersions: [TDSVersion] { lock.withLock { _logins } }

    /// Tables known to the metadata queries, by lowercased unquoted last name part.
    public let tables: [String: [ColumnMetadata]]
    /// Keep each load's rows (false: only count them, for benchmarks).
    public let recordsRows: Bool
    /// The load whose cumulative row count (over all loads since the server started) reaches this
    /// number is refused with an error, as a server failing mid-load; rows before it in earlier
    /// loads stay committed.
    public let failAtRow: Int?

    private let lock = NSLock()
    private var _requests: [String] = []
    private var _loads: [Load] = []
    private var _committed = 0
    private var _logins: [TDSVersion] = []
    private var _rowsSeen = 0
    private var listenFD: Int32 = -1
    private var clients: Set<Int32> = []
    private let group = DispatchGroup()

    /// A server knowing `tables` (name → columns, answered to `SELECT TOP 0 * FROM name`); it keeps the rows unless `recordsRows` is false, and with `failAtRow` answers the load with an error at that row.
    public init(tables: [String: [ColumnMetadata]], recordsRows: Bool = true, failAtRow: Int? = nil) {
        var t: [String: [ColumnMetadata]] = [:]
        for (k, v) in tables { t[BulkLoadServer.key(k)] = v }
        self.tables = t
        self.recordsRows = recordsRows
        self.failAtRow = failAtRow
    }

    deinit { stop() }

    static func key(_ name: String) -> String {
        ((try? SQLIdentifier.parts(of: name))?.last ?? name).lowercased()
    }

    /// Listens on 127.0.0.1 at an ephemeral port and returns it.
    public func start() throws -> UInt16 {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw ReplayServer.StartError(call: "socket", errno: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else { let e = errno; close(fd); throw ReplayServer.StartError(call: "bind/listen", errno: e) }
        lock.withLock { listenFD = fd }
        group.enter()
        Thread.detachNewThread { [self] in
            defer { group.leave() }
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { if errno == EINTR { continue } else { return } }
                guard lock.withLock({ listenFD >= 0 ? clients.insert(c).inserted : false }) else { close(c); return }
                var one: Int32 = 1
                setsockopt(c, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                group.enter()
                Thread.detachNewThread { [self] in
                    BulkLoadConnection(fd: c, server: self).run()
                    lock.withLock { _ = clients.remove(c) }
                    close(c)
                    group.leave()
                }
            }
        }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// Stops listening, closes every connection and waits (up to 5 s) for their threads.
    public func stop() {
        let (fd, open) = lock.withLock { () -> (Int32, Set<Int32>) in
            defer { listenFD = -1 }
            return (listenFD, clients)
        }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
        for c in open { shutdown(c, Int32(SHUT_RDWR)) }
        _ = group.wait(timeout: .now() + 5)
    }

    fileprivate func record(request: String) { lock.withLock { _requests.append(request) } }
    fileprivate func record(login: TDSVersion) { lock.withLock { _logins.append(login) } }
    /// Counts `n` more rows of the current load; true when ``failAtRow`` is reached.
    fileprivate func countRows(_ n: Int) -> Bool {
        lock.withLock {
            _rowsSeen += n
            return failAtRow.map { _rowsSeen >= $0 } ?? false
        }
    }
    fileprivate func record(load: Load, committed: Bool) {
        lock.withLock {
            _loads.append(load)
            if committed { _committed += load.rowCount }
            _requests.append("BULKLOAD \(load.rowCount) rows")
        }
    }
}

/// One connection of a ``BulkLoadServer`` (blocking I/O on its own thread).
private final class BulkLoadConnection {
    let fd: Int32
    let server: BulkLoadServer
    /// The one packet framer; payloads are taken straight from its buffer, packet by packet
    /// (a BULKLOAD message of any size is never held whole).
    var inbox = PacketAssembler(maximumPacketSize: Int(UInt16.max))
    var version: TDSVersion = .v7_4
    var packetSize = 4096
    var statement: String?
    var message: (type: UInt8, payload: [UInt8])?
    var load: BulkLoadServer.Load?
    var reader: BulkLoadReader?
    var failed = false

    init(fd: Int32, server: BulkLoadServer) { self.fd = fd; self.server = server }

    func run() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            do {
                while try inbox.peekHeader() != nil {
                    inbox.consumePacket { header, payload in handle((header.type.rawValue, header.status.rawValue, payload)) }
                }
            } catch {
                shutdown(fd, Int32(SHUT_RDWR))   // not TDS: end the connection
                return
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return }
            inbox.append(buffer[0 ..< n])
        }
    }

    func handle(_ p: (type: UInt8, status: UInt8, payload: ArraySlice<UInt8>)) {
        let eom = p.status & 0x01 != 0
        if p.type == PacketType.bulkLoad.rawValue {
            bulkPacket(Array(p.payload), eom: eom, ignore: p.status & 0x02 != 0)
            return
        }
        if message == nil { message = (p.type, []) }
        message?.payload.append(contentsOf: p.payload)
        guard eom, let m = message else { return }
        message = nil
        // [MS-TDS] 2.2.1.7: an ignored message is answered with a single DONE with DONE_ERROR.
        guard p.status & 0x02 == 0 else { send(ServerTokens.done(status: [.error], version: version)); return }
        switch m.type {
        case PacketType.prelogin.rawValue:
            send(Prelogin(version: .init(major: 16, minor: 0, build: 0x1000), encryption: .notSupported,
                          instanceOption: [0], mars: 0).encode())
        case PacketType.login7.rawValue:
            let login = try? Login7.decode(from: m.payload)
            let asked = login?.tdsVersion ?? .v7_4
            server.record(login: asked)
            version = ServerTokens.ackVersion(forClient: asked)
            let requested = Int(login?.packetSize ?? 4096)
            let size = (512...32767).contains(requested) ? requested : 4096
            send(ServerTokens.loginResponse(clientVersion: asked, packetSize: size, utf8: false).flatMap(\.bytes))
            packetSize = size
        case PacketType.sqlBatch.rawValue:
            let text = (try? SQLBatch.decode(from: m.payload, version: version))?.text ?? ""
            server.record(request: text)
            send(answer(text))
        case PacketType.rpc.rawValue:
            let call = (try? RPCRequest.decode(from: m.payload, version: version))?.calls.first
            let name: String
            switch call?.procedure {
            case .id(let id)?: name = id.description
            case .name(let n)?: name = n
            case nil: name = "?"
            }
            let text = call?.parameters.first?.value.stringValue ?? ""
            server.record(request: "RPC \(name): \(text)")
            send(answer(text))
        case PacketType.attention.rawValue:
            send(ServerTokens.done(status: .attention, version: version))
        default:
            send(ServerTokens.done(version: version))
        }
    }

    // MARK: Bulk load

    func bulkPacket(_ payload: [UInt8], eom: Bool, ignore: Bool) {
        if load == nil {
            load = BulkLoadServer.Load(statement: statement)
            reader = BulkLoadReader(version: version)
            failed = false
            statement = nil
        }
        load?.packetSizes.append(payload.count)
        if let n = load?.head.count, n < 1024 { load?.head += payload.prefix(1024 - n) }
        if !failed, load?.error == nil {
            reader?.append(payload)
            do {
                var n = 0
                while let item = try reader?.next() {
                    switch item {
                    case .metadata(let c): load?.columns = c
                    case .row(let r):
                        n += 1
                        if server.recordsRows { load?.rows.append(r) }
                    case .done(let d): load?.done = d
                    }
                }
                load?.rowCount += n
                if n > 0, server.countRows(n) {
                    failed = true
                    load?.error = "failAtRow reached"
                }
                if eom, !ignore {
                    try reader?.finish()
                    if load?.done == nil, reader?.endedWithDone == true { load?.done = Done(status: []) }
                }
                load?.quirks = reader?.quirks ?? []
            } catch {
                load?.error = "\(error)"
            }
        }
        guard eom, var finished = load else { return }
        load = nil
        reader = nil
        if ignore {
            finished.ignored = true
            server.record(load: finished, committed: false)
            send(ServerTokens.done(status: [.error], version: version))
        } else if let error = finished.error {
            server.record(load: finished, committed: false)
            send(ServerTokens.message(token: 0xAA, number: 4866, state: 1, severity: 16,
                                      text: "The bulk load failed: \(error)", version: version)
                 + ServerTokens.done(status: [.error], version: version))
        } else {
            server.record(load: finished, committed: true)
            send(ServerTokens.done(status: .count, rowCount: UInt64(finished.rowCount), version: version))
        }
    }

    // MARK: Metadata queries

    /// The response to a batch: a result set for each metadata query found in it, in order, then DONE.
    func answer(_ text: String) -> [UInt8] {
        let lower = text.lowercased()
        if lower.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("insert bulk") {
            statement = text
            return ServerTokens.done(version: version)
        }
        var out: [UInt8] = []
        var found: [(Range<String.Index>, () -> [UInt8])] = []
        if let r = lower.range(of: "@@trancount") {
            found.append((r, { self.resultSet([ColumnMetadata(typeInfo: .int, name: "")], [[.int(0)]]) }))
        }
        // Every `FROM name` of a known table is answered with its COLMETADATA; other names
        // (sys.all_columns in a Microsoft client's IF EXISTS) are not result sets.
        var search = lower.startIndex ..< lower.endIndex
        var named: [String] = []
        while let r = lower.range(of: #"\bfrom\s+"#, options: .regularExpression, range: search) {
            let name = String(text[r.upperBound...].prefix { !$0.isWhitespace && $0 != ";" && $0 != "'" && $0 != ")" })
            named.append(name)
            if let columns = server.tables[BulkLoadServer.key(name)] {
                found.append((r, { self.resultSet(columns, []) }))
            }
            search = r.upperBound ..< lower.endIndex
        }
        if found.isEmpty, let name = named.first,
           lower.range(of: #"^\s*(set fmtonly on\s+)?select\s+(top\s*\(?\s*\d+\s*\)?\s+)?\*\s+from"#, options: .regularExpression) != nil {
            return ServerTokens.message(token: 0xAA, number: 208, state: 1, severity: 16,
                                        text: "Invalid object name '\(name)'.", version: version)
                + ServerTokens.done(status: [.error], version: version)
        }
        if let r = lower.range(of: "sp_tablecollations") {
            let name = text[r.upperBound...].split(separator: "'").dropFirst().first.map(String.init) ?? ""
            found.append((r, {
                let columns = self.server.tables[BulkLoadServer.key(name)] ?? []
                let meta = [ColumnMetadata(typeInfo: .int, name: "colid"), ColumnMetadata(typeInfo: .nvarchar(128), name: "name"),
                            ColumnMetadata(typeInfo: .varbinary(5), name: "tds_collation"),
                            ColumnMetadata(typeInfo: .nvarchar(128), name: "collation_name")]
                var rows: [[SQLValue]] = []
                for (i, c) in columns.enumerated() {
                    let bytes = c.typeInfo.collation?.bytes
                    rows.append([.int(Int32(i + 1)), .string(c.name), bytes.map(SQLValue.binary) ?? .null,
                                 bytes == nil ? .null : .string("SQL_Latin1_General_CP1_CI_AS")])
                }
                return self.resultSet(meta, rows)
            }))
        }
        for (_, make) in found.sorted(by: { $0.0.lowerBound < $1.0.lowerBound }) { out += make() }
        return out + ServerTokens.done(version: version)
    }

    func resultSet(_ columns: [ColumnMetadata], _ rows: [[SQLValue]]) -> [UInt8] {
        var out = ServerTokens.colMetadata(columns, version: version)
        for r in rows { out += (try? ServerTokens.row(r, columns: columns)) ?? [] }
        return out + ServerTokens.done(status: [.more, .count], rowCount: UInt64(rows.count), version: version)
    }

    // MARK: Sending

    func send(_ bytes: [UInt8]) {
        var out: [UInt8] = []
        let chunk = packetSize - 8
        var i = 0
        var id: UInt8 = 1
        repeat {
            let end = min(i + chunk, bytes.count)
            out += PacketHeader(type: .tabularResult, status: end == bytes.count ? .endOfMessage : [],
                                length: UInt16(end - i + 8), spid: 0x34, packetID: id).bytes
            out += bytes[i ..< end]
            id &+= 1
            i = end
        } while i < bytes.count
        var sent = 0
        while sent < out.count {
            let n = out.withUnsafeBytes { raw -> Int in
                #if canImport(Glibc)
                return Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                #else
                return Darwin.send(fd, raw.baseAddress! + sent, raw.count - sent, 0)
                #endif
            }
            if n > 0 { sent += n } else if n < 0, errno == EINTR { continue } else { return }
        }
    }
}

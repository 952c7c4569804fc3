import Foundation
import XCTest
import TDSCapture
import SQLClientTesting
@testable import SQLClient
import TDS

/// The real RPC traffic of `../shared/captures/ndpi_mssql_tds.pcap` (read at test time, never
/// copied): SQLClient's requests for the same calls decode, with our own decoder, to the same
/// procedure, parameter names, types and values as the captured ones; and replayed through the
/// replay server, the captured responses give SQLClient's results their OUTPUT values, return
/// statuses, rows and counts per statement.
final class RPCCaptureTests: XCTestCase {
    struct CapturedCall {
        var session: TDSSession
        var request: RPCRequest
        /// The server's response (token stream), when captured.
        var response: [UInt8]?
    }

    static func capturedCalls() throws -> [CapturedCall] {
        let root = SharedCaptures.packageRoot(from: #filePath)
        guard let dir = SharedCaptures.directory(packageRoot: root) else { throw XCTSkip("../shared/captures is absent") }
        let url = dir.appendingPathComponent("ndpi_mssql_tds.pcap")
        guard let data = FileManager.default.contents(atPath: url.path) else { throw XCTSkip("ndpi_mssql_tds.pcap is absent") }
        let capture = try CaptureFile(bytes: Array(data), fileName: "ndpi_mssql_tds.pcap")
        var out: [CapturedCall] = []
        for session in try capture.tdsSessions() {
            let version = session.version.version
            var pending: CapturedCall?
            for m in session.messages {
                guard let message = m.message else { continue }
                if m.direction == .client {
                    if let p = pending { out.append(p) }
                    pending = nil
                    if message.type == .rpc {
                        pending = CapturedCall(session: session, request: try RPCRequest.decode(from: message.payload, version: version))
                    }
                } else if message.type == .tabularResult, pending != nil {
                    pending?.response = message.payload
                    if let p = pending { out.append(p) }
                    pending = nil
                }
            }
            if let p = pending { out.append(p) }
        }
        return out
    }

    /// How an application would pass a captured parameter to SQLClient: the Swift value whose
    /// inferred type is the captured one (Int32 for int, UInt8 for tinyint, String for
    /// nvarchar(4000)…), else the value with the captured type given explicitly.
    static func sqlParameter(for p: RPCParameter, version: TDSVersion) -> (SQLParameter, inferred: Bool) {
        let direction: SQLParameter.Direction = p.status.contains(.byRefValue) ? (p.value.isNull ? .output : .inputOutput) : .input
        var candidate: SQLParameter?
        switch p.value {
        case .int(let v): candidate = v.sqlParameter
        case .tinyint(let v): candidate = v.sqlParameter
        case .smallint(let v): candidate = v.sqlParameter
        case .bigint(let v): candidate = v.sqlParameter
        case .bit(let v): candidate = v.sqlParameter
        case .float(let v): candidate = v.sqlParameter
        case .string(let s): candidate = s.sqlParameter
        case .null where p.typeInfo.type == .nvarchar: candidate = (nil as String?).sqlParameter
        default: candidate = nil
        }
        if var c = candidate {
            c.name = p.name.isEmpty ? nil : p.name
            c.direction = direction
            c.usesDefault = p.status.contains(.defaultValue)
            if let wire = try? c.rpcParameter(version: version), sameType(wire.typeInfo, p.typeInfo) { return (c, true) }
        }
        let explicit = SQLParameter(p.value, type: p.typeInfo, name: p.name.isEmpty ? nil : p.name, direction: direction,
                                    usesDefault: p.status.contains(.defaultValue))
        return (explicit, false)
    }

    static func sameType(_ a: TypeInfo, _ b: TypeInfo) -> Bool {
        a.type == b.type && a.length == b.length && a.precision == b.precision && a.scale == b.scale && a.isPLP == b.isPLP
    }

    func testEncodedRequestsDecodeToTheCapturedCalls() throws {
        let calls = try Self.capturedCalls()
        XCTAssertGreaterThanOrEqual(calls.count, 8)
        var inferred = 0, explicit = 0, compared = 0
        var procedures = Set<String>()
        for captured in calls {
            let version = captured.session.version.version
            var ours: [RPCCall] = []
            for call in captured.request.calls {
                var params: [RPCParameter] = []
                for p in call.parameters {
                    let (sp, wasInferred) = Self.sqlParameter(for: p, version: version)
                    if wasInferred { inferred += 1 } else { explicit += 1 }
                    params.append(try sp.rpcParameter(version: version))
                }
                ours.append(RPCCall(procedure: call.procedure, options: call.options, parameters: params, separator: call.separator))
            }
            let headers: AllHeaders? = captured.request.allHeaders == nil ? nil : .transaction()
            let bytes = try RPCRequest(calls: ours, allHeaders: headers).encode(version: version)
            let decoded = try RPCRequest.decode(from: bytes, version: version, allHeaders: headers != nil)
            XCTAssertEqual(decoded.calls.count, captured.request.calls.count)
            for (a, b) in zip(decoded.calls, captured.request.calls) {
                XCTAssertEqual(a.procedure, b.procedure)
                XCTAssertEqual(a.options, b.options)
                XCTAssertEqual(a.parameters.count, b.parameters.count)
                switch b.procedure {
                case .id(let id): procedures.insert(id.description)
                case .name(let n): procedures.insert(n)
                }
                for (x, y) in zip(a.parameters, b.parameters) {
                    XCTAssertEqual(x.name, y.name)
                    XCTAssertEqual(x.status, y.status, "\(x.name)")
                    XCTAssertTrue(Self.sameType(x.typeInfo, y.typeInfo), "\(x.typeInfo) vs captured \(y.typeInfo)")
                    XCTAssertEqual(x.value, y.value, "\(x.name) \(y.typeInfo.sqlTypeName)")
                    compared += 1
                }
            }
        }
        XCTAssertTrue(procedures.isSuperset(of: ["sp_prepexec", "sp_execute", "sp_executesql", "p_SaveExample", "p_GetBogusData"]),
                      "\(procedures)")
        XCTAssertGreaterThan(compared, 20)
        XCTAssertGreaterThan(inferred, explicit, "most captured parameters are what SQLClient infers from Swift values")
    }

    /// The captured RPC exchanges of the 7.4 conversations (sp_prepexec, sp_execute), served by
    /// the replay server: SQLClient's calls match the recordings (same procedures and values)
    /// and its results carry the captured OUTPUT handles, return statuses, rows and counts.
    func testCapturedResponsesDecodeIntoProcedureResults() async throws {
        let calls = try Self.capturedCalls().filter {
            $0.session.version.version.generation >= 0x72 && $0.response != nil && $0.request.allHeaders != nil
        }
        let byPort = Dictionary(grouping: calls, by: { $0.session.conversation.client.port })
        var checkedOutputs: [SQLValue] = []
        var checkedRows = 0
        for port in byPort.keys.sorted() {
            guard let group = byPort[port] else { continue }
            let exchanges = group.map { c -> ReplaySession.Exchange in
                let first = c.request.calls[0]
                let name: String
                switch first.procedure {
                case .id(let id): name = id.description
                case .name(let n): name = n
                }
                return ReplaySession.Exchange(
                    request: .rpc(procedure: name, parameters: first.parameters.map { .init(name: $0.name, value: $0.value.canonicalText) }),
                    response: [.init(bytes: c.response ?? [])])
            }
            let server = try RPCReplay.start(ReplaySession(name: "ndpi-\(port)", version: .v7_4, exchanges: exchanges))
            defer { server.stop() }
            let connection = try await RPCReplay.connect(server)
            for c in group {
                // The captured responses, decoded independently, say what to expect.
                let tokens = try DecoderVerifier.verify(c.response ?? [], version: .v7_4, randomSplits: 4, seed: 7)
                let expectedOutputs = tokens.compactMap { t -> SQLValue? in if case .returnValue(let rv) = t { return rv.value }; return nil }
                let expectedStatuses = tokens.compactMap { t -> Int32? in if case .returnStatus(let s) = t { return s.value }; return nil }
                let expectedRows = tokens.compactMap(\.rowValues)
                let expectedCounts = tokens.compactMap { t -> Int? in
                    if case .doneInProc(let d) = t { return d.affectedRows.map { Int($0) } }
                    return nil
                }
                var ours: [RPCCall] = []
                for call in c.request.calls {
                    let params = call.parameters.map { Self.sqlParameter(for: $0, version: .v7_4).0 }
                    var rpc = try await connection.rpcCall(call.procedure, parameters: params, options: call.options)
                    rpc.separator = call.separator
                    ours.append(rpc)
                }
                let result: SQLResult
                if ours.count == 1 {
                    result = try await connection.callProcedure(ours[0].procedure,
                                                                parameters: c.request.calls[0].parameters.map { Self.sqlParameter(for: $0, version: .v7_4).0 },
                                                                options: ours[0].options)
                } else {
                    result = try await connection.execute(rpc: ours)
                }
                XCTAssertEqual(result.outputs.map(\.value), expectedOutputs, "port \(port)")
                XCTAssertEqual(result.returnStatuses, expectedStatuses, "port \(port)")
                XCTAssertEqual(result.rows.map(\.values), expectedRows, "port \(port)")
                XCTAssertEqual(result.rowCounts.compactMap { $0 }, expectedCounts, "port \(port)")
                checkedOutputs += result.outputs.map(\.value)
                checkedRows += result.rows.count
            }
            XCTAssertEqual(server.unmatchedRequests.count, 0, "port \(port): \(server.unmatchedRequests.first?.description.prefix(300) ?? "")")
            await connection.close()
        }
        // The capture's known values: sp_prepexec handles 1 (port 1111) and 1, 2, 3, 4 (port 5555).
        XCTAssertEqual(checkedOutputs, [.int(1), .int(1), .int(2), .int(3), .int(4)])
        XCTAssertEqual(checkedRows, 1 + 3 + 3)
    }
}

import Foundation
import XCTest
@testable import TDS
import TDSCapture
import SQLClientTesting
import TDS

/// Every client message in the real pcap captures decodes with the message types of this
/// module. The TDS version is inferred per message (ALL_HEADERS present means 7.2+), since
/// the ndpi capture starts mid-connection and mixes two TDS generations.
final class MessageCaptureTests: XCTestCase {
    private func clientMessages(_ file: String) throws -> [TDSMessage] {
        guard let dir = SharedCaptures.directory(packageRoot: MessageFixtures.packageRoot) else {
            throw XCTSkip("shared captures not found")
        }
        guard let data = FileManager.default.contents(atPath: dir.appendingPathComponent(file).path) else {
            throw XCTSkip("\(file) not found")
        }
        let capture = try CaptureFile(bytes: Array(data), fileName: file)
        var out: [TDSMessage] = []
        for conversation in try capture.tdsConversations() {
            for m in TDSMessageSplitter.split(conversation.clientStream, direction: .client) {
                if let message = m.message { out.append(message) }
            }
        }
        return out
    }

    private func decodeAll(_ file: String) throws -> [ClientRequest] {
        var requests: [ClientRequest] = []
        var exact = 0
        let messages = try clientMessages(file)   // before the defer: a skip must not reach its assertion
        defer { XCTAssertGreaterThan(exact, 0, "\(file): no message compared byte for byte") }
        for message in messages {
            let hasHeaders = AllHeaders.isLikelyPresent(in: message.payload)
            let version: TDSVersion = (message.type == .sqlBatch || message.type == .rpc || message.type == .transactionManager)
                ? (hasHeaders ? .v7_4 : .v7_1_1) : .v7_4
            do {
                let request = try ClientRequest.decode(message, version: version)
                requests.append(request)
                // Re-encoding a real request decodes to the same request, and gives the very
                // same bytes unless a PLP value's chunking (the sender's choice) is involved.
                let again = try request.encode(version: version)
                XCTAssertEqual(try ClientRequest.decode(type: message.type, payload: again, version: version), request)
                var hasPLP = false
                if case .rpc(let rpc) = request {
                    hasPLP = rpc.calls.contains { $0.parameters.contains { $0.typeInfo.isPLP } }
                }
                if !hasPLP {
                    XCTAssertEqual(again, message.payload, "\(file): \(message.type) at stream offset \(message.streamOffset) re-encodes differently")
                    exact += 1
                }
            } catch {
                XCTFail("\(file): \(message.type) at stream offset \(message.streamOffset): \(error)")
            }
        }
        return requests
    }

    func testNDPIClientRequestsDecode() throws {
        let requests = try decodeAll("ndpi_mssql_tds.pcap")
        var batches = 0, rpcs = 0, procIDs = Set<UInt16>(), names = Set<String>()
        for r in requests {
            switch r {
            case .sqlBatch(let b): batches += 1; XCTAssertFalse(b.text.isEmpty)
            case .rpc(let rpc):
                rpcs += 1
                for call in rpc.calls {
                    switch call.procedure {
                    case .id(let id): procIDs.insert(id.rawValue)
                    case .name(let n): names.insert(n)
                    }
                }
            default: break
            }
        }
        XCTAssertGreaterThan(batches, 0)
        XCTAssertGreaterThan(rpcs, 0)
        // The capture's README: sp_prepexec (13), sp_execute (12), sp_executesql (10) and procedures by name.
        XCTAssertTrue(procIDs.isSuperset(of: [12, 13]), "\(procIDs)")
        XCTAssertTrue(names.isSuperset(of: ["sp_executesql", "p_SaveExample", "dbo.proc_GetMySampleDataItems"]), "\(names)")
        XCTAssertEqual(batches, 3)
        XCTAssertEqual(rpcs, 16)
        let calls = requests.flatMap { r -> [RPCCall] in if case .rpc(let rpc) = r { return rpc.calls } else { return [] } }
        let bogus = try XCTUnwrap(calls.first { $0.procedure == .name("p_SetBogusSample") })
        XCTAssertEqual(bogus.parameters.first?.name, "@BogusDetailsID")
        XCTAssertEqual(bogus.parameters.first?.value, .bigint(74565))
        let save = try XCTUnwrap(calls.first { $0.procedure == .name("p_SaveExample") })
        XCTAssertTrue(save.parameters.first?.typeInfo.isPLP ?? false)
        guard case .string(let long)? = save.parameters.first?.value else { return XCTFail("@LongParam") }
        XCTAssertTrue(long.hasPrefix("Studenckie Koło Przewodników Turystycznych w Gdańsku"))
        let prep = try XCTUnwrap(calls.first { $0.procedure == .id(.spPrepExec) })
        XCTAssertEqual(prep.parameters.dropFirst().first?.value, .string("@P0 nvarchar(4000),@P1 int"))
        XCTAssertFalse(names.isEmpty)
    }

    func testPacketbeatClientRequestsDecode() throws {
        for file in ["packetbeat_mssql_login.pcap", "packetbeat_mssql_login_and_insert.pcap", "packetbeat_mssql_login_and_select.pcap"] {
            let requests = try decodeAll(file)
            XCTAssertTrue(requests.contains { if case .prelogin = $0 { return true } else { return false } }, file)
            XCTAssertTrue(requests.contains { if case .sqlBatch = $0 { return true } else { return false } }, file)
        }
    }
}

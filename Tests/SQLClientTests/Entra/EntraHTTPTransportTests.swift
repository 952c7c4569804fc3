import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting

/// The URLSession transport's bounds against the local hostile endpoint.
final class EntraHTTPTransportTests: XCTestCase {
    func testEndlessBodyIsCutAtTheBound() async throws {
        let entra = try LocalEntraServer()
        defer { entra.stop() }
        entra.hostile = .endless
        let started = Date()
        do {
            _ = try await URLSessionEntraTransport().send(EntraHTTPRequest(method: "GET", url: URL(string: entra.appServiceEndpoint)!),
                                                          timeout: .seconds(3), maximumBodySize: 64 << 10)
            XCTFail("an endless body was read")
        } catch let error as EntraHTTPTransportError {
            XCTAssertEqual(error, .bodyTooLarge(limit: 64 << 10))
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
    }
}

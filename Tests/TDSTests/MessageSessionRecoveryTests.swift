import XCTest
@testable import TDS
import SQLClientTesting

/// [MS-TDS] 2.2.6.4 SESSIONRECOVERY feature data and its FEATUREEXTACK data, against the spec's
/// examples (../shared/captures/ms-tds-spec/16-…, 17-…), and hostile records.
final class MessageSessionRecoveryTests: XCTestCase {
    private func packetBody(_ name: String) throws -> [UInt8] {
        let raw = try TokenCaptures.hex("ms-tds-spec/\(name).hex")
        guard raw.count > 8 else { throw XCTSkip("\(name) is shorter than a packet header") }
        return Array(raw[8...])
    }

    /// The spec's example states (InitSessionStateData of examples 16 and 17).
    static let specStates: [SessionState.State] = [
        .init(id: 0, value: [0x00, 0x60, 0x81, 0x14, 0xFF, 0xE7, 0xFF, 0xFF, 0x00]),
        .init(id: 2, value: [0x07, 0x01]),
        .init(id: 4, value: [0x00]),
        .init(id: 5, value: [0xFF, 0xFF, 0xFF, 0xFF]),
        .init(id: 6, value: [0x00]),
        .init(id: 7, value: [0x02]),
        .init(id: 8, value: [UInt8](repeating: 0, count: 8)),
    ]

    func testSpecExample16LoginFeatureDataFieldByField() throws {
        let login = try Login7.decode(from: try packetBody("16-featureext-sessionrecovery"))
        let feature = try XCTUnwrap(login.featureExt?.first { $0.id == Login7Feature.sessionRecoveryID })
        XCTAssertEqual(feature.data.count, 0x67)
        let data = try XCTUnwrap(try SessionRecoveryFeature.decode(feature.data))
        XCTAssertEqual(data.initial.database, "master")
        XCTAssertEqual(data.initial.collation, [0x09, 0x04, 0xD0, 0x00, 0x34])
        XCTAssertEqual(data.initial.language, "us_english")
        XCTAssertEqual(data.initial.states, Self.specStates + [.init(id: 9, value: [0xFF, 0xFF, 0xFF, 0xFF])])
        XCTAssertEqual(data.toBe, SessionRecoveryData(states: [.init(id: 9, value: [0x28, 0x23, 0x00, 0x00])]))
        // Encoding the decoded records gives the spec's bytes back.
        XCTAssertEqual(data.feature.data, feature.data)
    }

    func testSpecExample17AcknowledgementIsTheInitialStateList() throws {
        let body = try packetBody("17-featureextack-sessionrecovery")
        // The example carries a stray byte earlier (errata): read its FEATUREEXTACK where it starts.
        let start = try XCTUnwrap((0 ..< body.count - 6).first { body[$0 ..< $0 + 6] == [0xAE, 0x01, 0x2E, 0x00, 0x00, 0x00] })
        var reader = ByteReader(body, start: start + 1)
        let ack = try FeatureExtAck.decode(from: &reader)
        var states = ByteReader(try XCTUnwrap(ack.data(for: .sessionRecovery)))
        XCTAssertEqual(try SessionRecoveryData.decodeStates(from: &states),
                       Self.specStates + [.init(id: 9, value: [0x28, 0x23, 0x00, 0x00])])
    }

    func testEmptyFeatureDataIsTheFirstLoginsRequest() throws {
        XCTAssertNil(try SessionRecoveryFeature.decode([]))
        XCTAssertEqual(Login7Feature.sessionRecoveryRequest.data, [])
        XCTAssertEqual(Login7Feature.sessionRecoveryRequest.id, 0x01)
    }

    func testRoundTripWithLongStateValueAndNames() throws {
        let long = [UInt8](repeating: 0xAB, count: 300)
        let feature = SessionRecoveryFeature(
            initial: SessionRecoveryData(database: "shop", collation: [9, 4, 0xD0, 0, 0x34], language: "us_english",
                                         states: [.init(id: 0, value: [1, 2, 3])]),
            toBe: SessionRecoveryData(database: "archive", language: "Deutsch", states: [.init(id: 3, value: long)]))
        let bytes = feature.feature.data
        XCTAssertEqual(try SessionRecoveryFeature.decode(bytes), feature)
        // A value of 255 bytes or more is written as 0xFF then a DWORD length.
        let marker: [UInt8] = [3, 0xFF, 0x2C, 0x01, 0x00, 0x00]
        XCTAssertTrue((0 ... bytes.count - marker.count).contains { Array(bytes[$0 ..< $0 + marker.count]) == marker })
    }

    func testHostileRecordsAreTypedErrorsWithTheOffset() {
        // Length beyond the bytes.
        XCTAssertThrowsError(try SessionRecoveryFeature.decode([0x10, 0, 0, 0, 0, 0])) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .truncated)
        }
        // Length beyond the cap.
        XCTAssertThrowsError(try SessionRecoveryFeature.decode([0xFF, 0xFF, 0xFF, 0x7F])) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .invalidLength)
        }
        // A collation of 3 bytes.
        let badCollation: [UInt8] = [5, 0, 0, 0, 0, 3, 1, 2, 3]
        XCTAssertThrowsError(try SessionRecoveryFeature.decode(badCollation)) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .invalidLength)
            XCTAssertEqual((error as? TDSDecodingError)?.offset, 5)
        }
        // A StateLen longer than the record.
        var r = ByteReader([0x00, 0x09, 1, 2])
        XCTAssertThrowsError(try SessionRecoveryData.decodeStates(from: &r)) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .truncated)
        }
        // A 0xFF StateLen whose DWORD claims 4 GB.
        var huge = ByteReader([0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertThrowsError(try SessionRecoveryData.decodeStates(from: &huge))
        // One record only, and bytes after the second.
        let one = SessionRecoveryFeature(initial: SessionRecoveryData(), toBe: SessionRecoveryData()).feature.data
        XCTAssertThrowsError(try SessionRecoveryFeature.decode(Array(one.prefix(7))))
        XCTAssertThrowsError(try SessionRecoveryFeature.decode(one + [0])) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.code, .invalidLength)
        }
    }

    /// Every prefix of the spec's feature data is refused cleanly (no trap), the whole accepted.
    func testEveryTruncationOfTheSpecExampleThrows() throws {
        let login = try Login7.decode(from: try packetBody("16-featureext-sessionrecovery"))
        let data = try XCTUnwrap(login.featureExt?.first { $0.id == Login7Feature.sessionRecoveryID }?.data)
        for n in 1 ..< data.count {
            XCTAssertThrowsError(try SessionRecoveryFeature.decode(Array(data.prefix(n))), "prefix \(n)")
        }
    }
}

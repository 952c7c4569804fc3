import XCTest
@testable import TDS
import SQLClientTesting

/// FEATUREEXTACK ([MS-TDS] 2.2.7.11) decoded as its bytes arrive (``FeatureExtAckProgress``).
final class FeatureExtAckTests: XCTestCase {
    func ack(_ count: Int) -> (bytes: [UInt8], value: FeatureExtAck) {
        let value = FeatureExtAck(features: (0 ..< count).map {
            .init(id: FeatureID(rawValue: UInt8($0 % 200 + 1)), data: Array(repeating: UInt8(truncatingIfNeeded: $0), count: $0 % 9))
        })
        var w = ByteWriter()
        value.encode(into: &w)
        return (w.bytes, value)
    }

    func testManyFeaturesAreTheSameWholeByteByByteAndSplitAtRandom() throws {
        let (bytes, value) = ack(1500)
        XCTAssertGreaterThan(bytes.count, 10_000)
        let tokens = try DecoderVerifier.verify(bytes, version: .v7_4, options: .init(followsFeatureExtAck: false),
                                                randomSplits: 12, seed: 0xAE)
        XCTAssertEqual(tokens, [.featureExtAck(value)])
        let truncated = try DecoderVerifier.outcome(Array(bytes.dropLast()), version: .v7_4,
                                                    options: .init(followsFeatureExtAck: false), randomSplits: 12, seed: 1)
        XCTAssertEqual(truncated.error?.code, .truncated)
        XCTAssertEqual(truncated.error?.context, "FEATUREEXTACK")
        XCTAssertEqual(truncated.error?.offset, 0)
        var r = ByteReader(Array(bytes.dropLast()), start: 1)
        XCTAssertThrowsError(try FeatureExtAck.decode(from: &r)) { error in
            XCTAssertEqual((error as? TDSDecodingError)?.offset, bytes.count - 1, "the missing terminator")
            XCTAssertEqual((error as? TDSDecodingError)?.context, "FEATUREEXTACK")
        }
    }

    /// One byte at a time, each attempt re-reads at most one feature's FeatureId and length.
    func testByteByByteWorkIsLinearInTheTokensLength() throws {
        let (bytes, value) = ack(2000)
        let (tokens, examined) = try examinedBytes(bytes, options: .init(followsFeatureExtAck: false))
        XCTAssertEqual(tokens, [.featureExtAck(value)])
        XCTAssertLessThanOrEqual(examined, 5 * bytes.count)
    }
}

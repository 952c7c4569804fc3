import XCTest
import TDS
@testable import TDSCapture

/// TDSDetection's packet and TLS record heuristics.
final class TDSDetectionTests: XCTestCase {
    /// The packet types a header may have are exactly those of `clientPacketTypes` and
    /// `serverPacketTypes` (the check uses a bit mask of them).
    func testPacketHeaderTypesAreTheDeclaredOnes() {
        let declared = TDSDetection.clientPacketTypes.union(TDSDetection.serverPacketTypes)
        var accepted: Set<UInt8> = []
        for t in 0 ... 255 {
            let header: [UInt8] = [UInt8(t), 0x01, 0x00, 0x08, 0x00, 0x00, 0x01, 0x00]
            if TDSDetection.isPacketHeader(header) { accepted.insert(UInt8(t)) }
        }
        XCTAssertEqual(accepted, declared)
        XCTAssertEqual(accepted.count, 12)
        // The other checks still apply: undefined status bits, a non-zero Window, a bad length.
        XCTAssertFalse(TDSDetection.isPacketHeader([0x04, 0x21, 0x00, 0x08, 0, 0, 1, 0]))
        XCTAssertFalse(TDSDetection.isPacketHeader([0x04, 0x01, 0x00, 0x08, 0, 0, 1, 1]))
        XCTAssertFalse(TDSDetection.isPacketHeader([0x04, 0x01, 0x00, 0x07, 0, 0, 1, 0]))
        XCTAssertFalse(TDSDetection.isPacketHeader([0x04, 0x01, 0x80, 0x01, 0, 0, 1, 0]))
        XCTAssertTrue(TDSDetection.isPacketHeader([0x12, 0x01, 0x80, 0x00, 0, 0, 1, 0]))
        XCTAssertFalse(TDSDetection.isPacketHeader([0x04, 0x01, 0x00, 0x08, 0, 0, 1]), "7 bytes")
    }
}

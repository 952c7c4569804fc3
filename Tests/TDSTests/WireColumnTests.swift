@testable import TDS
import XCTest

/// ``WireColumn``: the fields of a ``TypeInfo`` that decoding reads, the collation packed in one
/// word and read back exactly as it was (every field, also values the initializer would mask).
final class WireColumnTests: XCTestCase {
    func testCollationReadsBackExactly() {
        var odd = Collation(lcid: 0)
        odd.lcid = 0xFFFF_FFFF
        odd.flags = Collation.Flags(rawValue: 0xFF)
        odd.version = 0xFF
        odd.sortID = 0xFF
        var zero = Collation(lcid: 0)
        zero.sortID = 0
        let collations: [Collation?] = [nil, .sqlLatin1GeneralCP1CIAS, zero, odd,
                                        Collation(lcid: 0x0411, flags: [.ignoreCase, .utf8], version: 2, sortID: 52)]
        for c in collations {
            let info = TypeInfo(type: .nvarchar, length: 100, precision: 0, scale: 0, collation: c, isPLP: false)
            for column in [WireColumn(info), WireColumn(decoding: info)] {
                XCTAssertEqual(column.collation, c)
                XCTAssertEqual(column.type, .nvarchar)
                XCTAssertEqual(column.length, 100)
                XCTAssertFalse(column.isPLP)
            }
        }
        XCTAssertNil(WireColumn(TypeInfo(type: .varchar, length: 10, precision: 0, scale: 0, collation: nil, isPLP: false)).collation)
        XCTAssertEqual(WireColumn(TypeInfo(type: .varchar, length: 10, precision: 0, scale: 0, collation: zero, isPLP: false)).collation, zero)
    }
}

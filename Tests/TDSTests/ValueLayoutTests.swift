@testable import TDS
import XCTest

/// ``ValueLayout``: the fields of a ``TypeInfo`` that decoding reads, the collation packed in
/// one word and read back exactly as it was (every field, also values the initializer would mask).
final class ValueLayoutTests: XCTestCase {
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
            let layout = ValueLayout(info)
            XCTAssertEqual(layout.collation, c)
            XCTAssertEqual(layout.type, .nvarchar)
            XCTAssertEqual(layout.length, 100)
            var changed = layout
            changed.collation = .sqlLatin1GeneralCP1CIAS
            XCTAssertEqual(changed.collation, .sqlLatin1GeneralCP1CIAS)
            XCTAssertEqual(changed == layout, c == .sqlLatin1GeneralCP1CIAS)
        }
        XCTAssertNotEqual(ValueLayout(TypeInfo(type: .varchar, length: 10, precision: 0, scale: 0, collation: nil, isPLP: false)),
                          ValueLayout(TypeInfo(type: .varchar, length: 10, precision: 0, scale: 0, collation: zero, isPLP: false)))
    }
}

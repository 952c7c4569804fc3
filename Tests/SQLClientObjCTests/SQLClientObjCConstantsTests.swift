import Foundation
import SQLClientObjC
import XCTest

/// The Objective-C constants (Sources/SQLClientObjCConstants, compiled only on Apple platforms)
/// against the Swift ones SQLClientObjC posts and reads: same names, same strings, each declared
/// in the header and defined in the Objective-C file. Linux cannot compile the Objective-C, so
/// its source is read and checked here.
final class SQLClientObjCConstantsTests: XCTestCase {
    private static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/SQLClientObjCConstants")

    /// The Swift constants by name: what the Objective-C file must define.
    private let swift: [String: String] = [
        "SQLClientMessageNotification": SQLClientMessageNotification,
        "SQLClientErrorNotification": SQLClientErrorNotification,
        "SQLClientMessageKey": SQLClientMessageKey,
        "SQLClientCodeKey": SQLClientCodeKey,
        "SQLClientSeverityKey": SQLClientSeverityKey,
        "SQLClientErrorKey": SQLClientErrorKey,
    ]

    func testObjectiveCDefinitionsEqualTheSwiftConstants() throws {
        let source = try String(contentsOf: Self.folder.appendingPathComponent("SQLClientObjCConstants.m"), encoding: .utf8)
        let definition = try NSRegularExpression(pattern: #"^NSString \* const (\w+) = @"([^"]*)";$"#, options: .anchorsMatchLines)
        var defined: [String: String] = [:]
        for match in definition.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
            let name = String(source[Range(match.range(at: 1), in: source)!])
            XCTAssertNil(defined[name], "\(name) defined twice")
            defined[name] = String(source[Range(match.range(at: 2), in: source)!])
        }
        XCTAssertEqual(defined, swift)
        // Definitions sit inside the Apple-and-Objective-C guard (Linux compiles the file empty).
        let guardLine = try XCTUnwrap(source.range(of: "#if defined(__OBJC__) && defined(__APPLE__)"))
        let firstDefinition = try XCTUnwrap(source.range(of: "NSString * const"))
        XCTAssertLessThan(guardLine.lowerBound, firstDefinition.lowerBound)
        XCTAssertEqual(SQLClient.errorNotification, SQLClientErrorNotification)
        XCTAssertEqual(Notification.Name.sqlClientMessage.rawValue, SQLClientMessageNotification)
    }

    func testHeaderDeclaresEachConstantOnceAndHidesItFromSwift() throws {
        let header = try String(contentsOf: Self.folder.appendingPathComponent("include/SQLClientObjCConstants.h"), encoding: .utf8)
        for name in swift.keys {
            let declaration = "FOUNDATION_EXPORT NSString * const \(name)\n    NS_SWIFT_UNAVAILABLE("
            XCTAssertEqual(header.components(separatedBy: declaration).count, 2, "\(name) declared once, unavailable in Swift")
        }
        XCTAssertTrue(header.contains("#if defined(__OBJC__)"))
    }
}

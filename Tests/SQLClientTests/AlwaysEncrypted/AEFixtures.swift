import Foundation
import XCTest
@testable import SQLClient

/// The published known answers under Fixtures/AlwaysEncrypted (see its PROVENANCE.md).
enum AEFixtures {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/AlwaysEncrypted")

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    /// `key=hex` lines of a known-answer file.
    static func values(_ name: String) throws -> [String: String] {
        let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        var out: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { out[String(parts[0])] = String(parts[1]) }
        }
        return out
    }

    static func hex(_ text: String?) throws -> [UInt8] {
        let text = try XCTUnwrap(text)
        var out: [UInt8] = []
        var i = text.startIndex
        while i < text.endIndex {
            let j = text.index(i, offsetBy: 2)
            out.append(try XCTUnwrap(UInt8(text[i ..< j], radix: 16)))
            i = j
        }
        return out
    }

    static func utf16LE(_ text: String) -> [UInt8] {
        text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
    }

    /// The swisscom master key's thumbprint and path.
    static let thumbprint = "0be978ba81eed610015fd8b7caef55f1614ca3b6"
    static let masterKeyPath = "CurrentUser/My/0BE978BA81EED610015FD8B7CAEF55F1614CA3B6"

    /// A fresh folder holding the swisscom private key as `<thumbprint>.pem`.
    static func keyFolder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ae-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(try bytes("swisscom/always-encrypted.pem")).write(to: dir.appendingPathComponent("\(thumbprint).pem"))
        return dir
    }
}

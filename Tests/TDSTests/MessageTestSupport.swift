import Foundation
import XCTest
@testable import TDS
import SQLClientTesting
import TDS

/// Test helpers for the message tests: locating and parsing the shared .hex captures.
enum MessageFixtures {
    static let packageRoot = SharedCaptures.packageRoot(from: #filePath)

    /// Bytes of a `.hex` capture (comments dropped), or XCTSkip when the captures are absent.
    static func hex(_ relativePath: String) throws -> [UInt8] {
        guard let dir = SharedCaptures.directory(packageRoot: packageRoot) else {
            throw XCTSkip("shared captures not found (../shared/captures); skipping \(relativePath)")
        }
        let url = dir.appendingPathComponent(relativePath)
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            throw XCTSkip("capture \(relativePath) not found")
        }
        return try parseHex(text)
    }

    /// Parses whitespace-separated hex bytes, skipping lines that start with '#'.
    static func parseHex(_ text: String) throws -> [UInt8] {
        var out: [UInt8] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            for token in trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                guard let b = UInt8(token, radix: 16) else {
                    throw XCTSkip("unparsable hex token \(token)")
                }
                out.append(b)
            }
        }
        return out
    }

    /// A capture holding one whole packet: returns its header and payload (checked to agree).
    static func packet(_ relativePath: String) throws -> (PacketHeader, [UInt8]) {
        let bytes = try hex(relativePath)
        let header = try PacketHeader.decode(from: bytes)
        XCTAssertEqual(Int(header.length), bytes.count, "header length vs file size in \(relativePath)")
        return (header, Array(bytes.dropFirst(8)))
    }
}

/// UTF-16LE bytes of a string, for building expectations.
func utf16le(_ s: String) -> [UInt8] {
    var w = ByteWriter()
    w.writeUTF16LE(s)
    return w.bytes
}

/// A deterministic pseudo-random generator (SplitMix64) so split tests are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

import Foundation
import XCTest
import TDS
import TDSCapture
import SQLClientTesting

/// Reading real captures for token tests (bytes stay in ../shared/captures, never in the repo).
enum TokenCaptures {
    /// The captures folder, or XCTSkip when it is absent.
    static func directory() throws -> URL {
        let root = SharedCaptures.packageRoot(from: #filePath)
        guard let dir = SharedCaptures.directory(packageRoot: root) else {
            throw XCTSkip("../shared/captures is absent: real token stream tests skipped")
        }
        return dir
    }

    /// The bytes of a `.hex` capture (comments dropped).
    static func hex(_ path: String) throws -> [UInt8] {
        let url = try directory().appendingPathComponent(path)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw XCTSkip("capture \(path) is absent")
        }
        let data = try Data(contentsOf: url)
        return try HexCapture.parse(Array(data)).bytes
    }

    /// The payloads of whole TDS packets (8-byte header each, big-endian length at offset 2),
    /// concatenated.
    static func payloads(ofPackets bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            guard bytes.count - i >= 8 else { throw XCTSkip("trailing partial packet header at \(i)") }
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard length >= 8, length <= bytes.count - i else {
                XCTFail("bad packet length \(length) at \(i)")
                return out
            }
            out.append(contentsOf: bytes[(i + 8) ..< (i + length)])
            i += length
        }
        return out
    }

    /// The token stream inside a `.hex` of whole packets.
    static func packetPayloads(_ path: String) throws -> [UInt8] {
        try payloads(ofPackets: try hex(path))
    }
}

extension Array where Element == Token {
    /// The token names, for compact assertions.
    var names: [String] { map(\.name) }
}

func hexBytes(_ text: String) -> [UInt8] {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { UInt8($0, radix: 16) }
}

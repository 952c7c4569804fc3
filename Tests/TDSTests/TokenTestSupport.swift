import Foundation
import XCTest
@testable import TDS
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

    /// The payloads of whole TDS packets, concatenated, cut by the one packet framer
    /// (``PacketAssembler``; packets of up to 65,535 bytes, as a capture may hold).
    static func payloads(ofPackets bytes: [UInt8]) throws -> [UInt8] {
        var framer = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        framer.append(bytes)
        var out: [UInt8] = []
        do {
            while try framer.peekHeader() != nil {
                framer.consumePacket { _, payload in out.append(contentsOf: payload) }
            }
        } catch {
            XCTFail("bad packet: \(error)")
            return out
        }
        if framer.bufferedByteCount > 0 {
            if framer.bufferedByteCount < PacketHeader.size {
                throw XCTSkip("trailing partial packet header at \(framer.streamOffset)")
            }
            XCTFail("bad packet length \(framer.nextPacketLength ?? 0) at \(framer.streamOffset)")
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

/// Work done decoding a stream fed in pieces of `piece` bytes: the tokens and the decoder's
/// count of bytes (re-)read by its attempts (``TokenStreamDecoder/examinedByteCount``).
func examinedBytes(_ bytes: [UInt8], piece: Int = 1, version: TDSVersion = .v7_4,
                   options: TokenStreamDecoder.Options = .init()) throws -> (tokens: [Token], examined: Int) {
    var d = TokenStreamDecoder(version: version, options: options)
    var tokens: [Token] = []
    var i = 0
    while i < bytes.count {
        let end = min(i + piece, bytes.count)
        d.append(Array(bytes[i ..< end]))
        i = end
        while let t = try d.next() { tokens.append(t) }
    }
    try d.finish()
    return (tokens, d.examinedByteCount)
}

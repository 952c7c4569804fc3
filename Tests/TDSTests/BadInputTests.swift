import Foundation
import SQLClientTesting
import TDS
import TDSCapture
import XCTest

/// The malformed-input corpus: every file in `Fixtures/bad/` is decoded by the decoder its
/// manifest entry names, and must give exactly the expected typed error (code and byte offset,
/// and the [MS-TDS] context when given), the same whole and byte by byte, without a trap and
/// without an allocation sized by a declared length. The manifest's recipes derive further
/// malformed inputs from `../shared/captures` at test time (truncation at every offset, bytes
/// appended after the last token).
final class BadInputTests: XCTestCase {
    static let root = SharedCaptures.packageRoot(from: #filePath)
    static let badDirectory = root.appendingPathComponent("Fixtures/bad")

    struct Manifest: Decodable {
        struct Expectation: Decodable {
            /// tokens, packets, prelogin, login7, value, capture.
            var decoder: String
            /// The TDS version ("7.4" when absent).
            var version: String?
            /// The TDSDecodingError code name, "capture" for a CaptureError, or "none" for an input
            /// that must decode (a documented lenient case; its `note` says why).
            var code: String
            var offset: Int
            var context: String?
            /// packets: the negotiated packet size (4096 when absent) and PacketID checking.
            var maxPacketSize: Int?
            var checksPacketIDs: Bool?
        }
        struct Recipe: Decodable {
            /// A path under ../shared/captures.
            var capture: String
            /// tokens, packets, prelogin, login7.
            var decoder: String
            var version: String?
            /// truncate-every-offset, append-unknown-token.
            var mutation: String
        }
        var files: [String: Expectation]
        var recipes: [Recipe]
    }

    /// What a decoder made of some bytes.
    enum Outcome: Equatable, CustomStringConvertible {
        case decoded(count: Int)
        case failed(code: String, offset: Int, context: String)

        var description: String {
            switch self {
            case .decoded(let n): return "decoded (\(n) item(s))"
            case .failed(let code, let offset, let context): return "\(code) at \(offset) in \(context)"
            }
        }
        var isFailure: Bool { if case .failed = self { return true } else { return false } }
    }

    static func manifest() throws -> Manifest {
        let data = try Data(contentsOf: badDirectory.appendingPathComponent("manifest.json"))
        return try JSONDecoder().decode(Manifest.self, from: data)
    }

    static func hexFileBytes(_ url: URL) throws -> [UInt8] {
        let text = try String(contentsOf: url, encoding: .utf8)
        var out: [UInt8] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            for token in line.split(separator: " ") {
                guard let b = UInt8(token, radix: 16) else {
                    throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "bad hex \(token) in \(url.lastPathComponent)"])
                }
                out.append(b)
            }
        }
        return out
    }

    static func version(_ text: String?) -> TDSVersion { text.flatMap(TDSVersion.init(string:)) ?? .v7_4 }

    static func failure(_ e: TDSDecodingError) -> Outcome { .failed(code: e.code.name, offset: e.offset, context: e.context) }

    // MARK: Decoders

    /// A token stream appended in `chunk`-byte pieces, then finished.
    static func decodeTokens(_ bytes: [UInt8], version: TDSVersion, chunk: Int? = nil,
                             boundaries: UnsafeMutablePointer<[Int]>? = nil) -> Outcome {
        var decoder = TokenStreamDecoder(version: version)
        var count = 0
        var i = 0
        let step = max(chunk ?? bytes.count, 1)
        do throws(TDSDecodingError) {
            repeat {
                let end = min(i + step, bytes.count)
                decoder.append(Array(bytes[i..<end]))
                i = end
                while try decoder.next() != nil {
                    count += 1
                    boundaries?.pointee.append(decoder.offset)
                }
            } while i < bytes.count
            try decoder.finish()
        } catch {
            return failure(error)
        }
        return .decoded(count: count)
    }

    static func decodePackets(_ bytes: [UInt8], maxPacketSize: Int = 4096, checksPacketIDs: Bool = false,
                              chunk: Int? = nil) -> Outcome {
        var assembler = PacketAssembler(maximumPacketSize: maxPacketSize)
        assembler.checksPacketIDs = checksPacketIDs
        var messages = 0
        var i = 0
        let step = max(chunk ?? bytes.count, 1)
        do throws(TDSDecodingError) {
            repeat {
                let end = min(i + step, bytes.count)
                assembler.append(bytes[i..<end])
                i = end
                while let out = try assembler.next() { if out.message != nil { messages += 1 } }
            } while i < bytes.count
            try assembler.finish()
        } catch {
            return failure(error)
        }
        return .decoded(count: messages)
    }

    static func decodeValue(_ bytes: [UInt8], version: TDSVersion) -> Outcome {
        var reader = ByteReader(bytes)
        do throws(TDSDecodingError) {
            let info = try TypeInfo.decode(from: &reader, version: version)
            if info.isPLP {
                _ = try info.decodePLPValue(Array(bytes[reader.offset...]))
            } else {
                _ = try info.decodeValue(from: &reader)
            }
        } catch {
            return failure(error)
        }
        return .decoded(count: 1)
    }

    static func decode(_ bytes: [UInt8], as e: Manifest.Expectation, chunk: Int? = nil) -> Outcome {
        let v = version(e.version)
        switch e.decoder {
        case "tokens":
            return decodeTokens(bytes, version: v, chunk: chunk)
        case "packets":
            return decodePackets(bytes, maxPacketSize: e.maxPacketSize ?? 4096,
                                 checksPacketIDs: e.checksPacketIDs ?? false, chunk: chunk)
        case "prelogin":
            do throws(TDSDecodingError) { _ = try Prelogin.decode(from: bytes, version: v) } catch { return failure(error) }
            return .decoded(count: 1)
        case "login7":
            do throws(TDSDecodingError) { _ = try Login7.decode(from: bytes, version: v) } catch { return failure(error) }
            return .decoded(count: 1)
        case "value":
            return decodeValue(bytes, version: v)
        case "capture":
            do throws(CaptureError) {
                let file = try CaptureFile(bytes: bytes)
                _ = try file.tcpConversations()
                return .decoded(count: file.frames.count)
            } catch {
                return .failed(code: "capture", offset: error.offset, context: "")
            }
        default:
            return .failed(code: "unknown decoder \(e.decoder)", offset: -1, context: "")
        }
    }

    // MARK: Memory

    /// Runs `body` and returns how much the peak resident set grew (bytes), or nil when the peak
    /// cannot be reset (`/proc/self/clear_refs`).
    static func peakGrowth(_ body: () -> Void) -> Int? {
        #if os(Linux)
        func hwm() -> Int? {
            guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
            for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
                return line.split(separator: " ").compactMap { Int($0) }.first.map { $0 * 1024 }
            }
            return nil
        }
        guard FileManager.default.isWritableFile(atPath: "/proc/self/clear_refs"),
              (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil,
              let before = hwm() else {
            body()
            return nil
        }
        body()
        guard let after = hwm() else { return nil }
        return after - before
        #else
        body()
        return nil
        #endif
    }

    // MARK: Tests

    func testEveryFileIsInTheManifestAndEveryEntryHasAFile() throws {
        let manifest = try Self.manifest()
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.badDirectory.path)
            .filter { $0.hasSuffix(".hex") || $0.hasSuffix(".bin") }
        XCTAssertGreaterThanOrEqual(files.count, 40)
        XCTAssertEqual(Set(files), Set(manifest.files.keys), "Fixtures/bad and manifest.json disagree")
        for name in files {
            let prefix = String(name.prefix(while: { $0 != "." }))
            XCTAssertEqual(manifest.files[name]?.decoder, prefix, "\(name): the file name starts with its decoder")
        }
    }

    func testEveryFileGivesItsExpectedError() throws {
        let manifest = try Self.manifest()
        for (name, expected) in manifest.files.sorted(by: { $0.key < $1.key }) {
            let url = Self.badDirectory.appendingPathComponent(name)
            let bytes = name.hasSuffix(".bin") ? [UInt8](try Data(contentsOf: url)) : try Self.hexFileBytes(url)
            var outcome = Outcome.decoded(count: 0)
            let growth = Self.peakGrowth { outcome = Self.decode(bytes, as: expected) }
            if expected.code == "none" {
                XCTAssertFalse(outcome.isFailure, "\(name): \(outcome)")
                if expected.decoder == "prelogin" {
                    // What decodes leniently still encodes to a message that decodes to the same.
                    let encoded = try Prelogin.decode(from: bytes, version: Self.version(expected.version)).encode()
                    XCTAssertEqual(try Prelogin.decode(from: encoded).encode(), encoded, "\(name): encode/decode")
                }
                continue
            }
            guard case .failed(let code, let offset, let context) = outcome else {
                XCTFail("\(name): decoded without an error, expected \(expected.code) at \(expected.offset)")
                continue
            }
            XCTAssertEqual(code, expected.code, "\(name): \(outcome)")
            XCTAssertEqual(offset, expected.offset, "\(name): \(outcome)")
            if let c = expected.context { XCTAssertEqual(context, c, "\(name): \(outcome)") }
            XCTAssertTrue((0...bytes.count).contains(offset), "\(name): offset \(offset) outside the \(bytes.count) bytes")
            if let growth {
                XCTAssertLessThan(growth, 32 << 20, "\(name): the peak memory grew by \(growth) bytes")
            }
            // The same error when the bytes arrive one at a time (incremental decoders).
            if expected.decoder == "tokens" || expected.decoder == "packets" {
                XCTAssertEqual(Self.decode(bytes, as: expected, chunk: 1), outcome, "\(name): byte by byte")
                XCTAssertEqual(Self.decode(bytes, as: expected, chunk: 7), outcome, "\(name): 7-byte chunks")
            }
        }
    }

    // MARK: Recipes over ../shared/captures

    static func captureBytes(_ path: String) throws -> [UInt8]? {
        guard let dir = SharedCaptures.directory(packageRoot: root) else { return nil }
        return try hexFileBytes(dir.appendingPathComponent(path))
    }

    /// The message body when `bytes` are whole packets, else `bytes`.
    static func body(_ bytes: [UInt8]) -> [UInt8] {
        var assembler = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        assembler.append(bytes)
        guard let messages = try? assembler.nextMessages(), !messages.isEmpty,
              (try? assembler.finish()) != nil else { return bytes }
        return messages.flatMap(\.payload)
    }

    func testRecipesDerivedFromCaptures() throws {
        let manifest = try Self.manifest()
        var ran = 0
        for recipe in manifest.recipes {
            guard let raw = try Self.captureBytes(recipe.capture) else {
                throw XCTSkip("../shared/captures is absent")
            }
            let v = Self.version(recipe.version)
            switch (recipe.decoder, recipe.mutation) {
            case ("tokens", "truncate-every-offset"):
                try checkTokenTruncations(Self.body(raw), version: v, name: recipe.capture)
            case ("tokens", "append-unknown-token"):
                let stream = Self.body(raw)
                let outcome = Self.decodeTokens(stream + [0x02, 0x00], version: v)
                XCTAssertEqual(outcome, .failed(code: "unknownToken", offset: stream.count, context: "0x02"),
                               "\(recipe.capture) + 0x02")
            case ("packets", "truncate-every-offset"):
                checkPacketTruncations(raw, name: recipe.capture)
            case ("prelogin", "truncate-every-offset"), ("login7", "truncate-every-offset"):
                let body = Self.body(raw)
                let e = Manifest.Expectation(decoder: recipe.decoder, version: recipe.version, code: "", offset: 0)
                XCTAssertFalse(Self.decode(body, as: e).isFailure, "\(recipe.capture) decodes whole")
                for cut in 0..<body.count {
                    let outcome = Self.decode(Array(body[..<cut]), as: e)
                    guard case .failed(_, let offset, _) = outcome else {
                        XCTFail("\(recipe.capture) cut at \(cut) of \(body.count) decoded"); continue
                    }
                    XCTAssertTrue((0...cut).contains(offset), "\(recipe.capture) cut at \(cut): \(outcome)")
                }
            default:
                XCTFail("unknown recipe \(recipe.decoder)/\(recipe.mutation)")
                continue
            }
            ran += 1
        }
        XCTAssertGreaterThanOrEqual(ran, 8)
    }

    /// Every prefix of a real token stream either ends on a token boundary (and gives exactly the
    /// tokens before it) or fails `.truncated` at the offset of the token it cut.
    func checkTokenTruncations(_ stream: [UInt8], version: TDSVersion, name: String) throws {
        var bounds: [Int] = [0]
        let whole = Self.decodeTokens(stream, version: version, boundaries: &bounds)
        guard case .decoded(let total) = whole else { XCTFail("\(name) does not decode whole: \(whole)"); return }
        XCTAssertEqual(bounds.last, stream.count)
        for cut in 0..<stream.count {
            let outcome = Self.decodeTokens(Array(stream[..<cut]), version: version)
            if let index = bounds.firstIndex(of: cut) {
                XCTAssertEqual(outcome, .decoded(count: index), "\(name) cut at \(cut) (a token boundary)")
            } else {
                let start = bounds.last(where: { $0 < cut }) ?? 0
                guard case .failed(let code, let offset, _) = outcome else {
                    XCTFail("\(name) cut at \(cut) decoded: \(outcome)"); continue
                }
                XCTAssertEqual(code, "truncated", "\(name) cut at \(cut): \(outcome)")
                XCTAssertEqual(offset, start, "\(name) cut at \(cut): \(outcome)")
            }
        }
        XCTAssertGreaterThan(total, 0)
    }

    /// Every prefix of real packets ends on a message boundary or fails `.truncated` at the
    /// header of the cut packet (inside a packet) or of the cut message's first packet.
    func checkPacketTruncations(_ bytes: [UInt8], name: String) {
        var packetStarts: [Int] = []
        var messageStarts: [Int] = []
        var i = 0
        var inMessage = false
        while i + 8 <= bytes.count {
            packetStarts.append(i)
            if !inMessage { messageStarts.append(i) }
            inMessage = bytes[i + 1] & 0x01 == 0
            i += Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
        }
        XCTAssertEqual(i, bytes.count, "\(name) is whole packets")
        for cut in 0..<bytes.count {
            let outcome = Self.decodePackets(Array(bytes[..<cut]), maxPacketSize: Int(UInt16.max))
            let packetStart = packetStarts.last(where: { $0 <= cut }) ?? 0
            let messageStart = messageStarts.last(where: { $0 <= cut }) ?? 0
            if cut == packetStart && cut == messageStart {
                XCTAssertFalse(outcome.isFailure, "\(name) cut at \(cut) (a message boundary): \(outcome)")
            } else if cut == packetStart {
                XCTAssertEqual(outcome, .failed(code: "truncated", offset: messageStart,
                                                context: PacketType(rawValue: bytes[messageStart]).name), "\(name) cut at \(cut)")
            } else {
                XCTAssertEqual(outcome, .failed(code: "truncated", offset: packetStart, context: "PacketHeader"),
                               "\(name) cut at \(cut)")
            }
        }
    }
}

import Foundation
import TDS

/// How the replay server reads client requests, reduced to what it matches on.
enum RequestDecoding {
    struct Login7Summary {
        var version: TDSVersion
        var packetSize: Int
        var utf8Requested: Bool
    }

    /// [MS-TDS] 2.2.6.4 LOGIN7: TDSVersion (offset 4, little-endian), PacketSize (offset 8) and
    /// whether FeatureExt (OptionFlags3.fExtension, ibExtension) requests UTF8_SUPPORT (0x0A).
    static func login7Summary(_ payload: [UInt8]) -> Login7Summary? {
        var r = ByteReader(payload)
        do {
            try r.skip(4)
            let version = TDSVersion(rawValue: try r.readUInt32LE())
            let packetSize = Int(try r.readUInt32LE())
            var utf8 = false
            r.offset = 27
            let flags3 = try r.readUInt8()
            if flags3 & 0x10 != 0 {
                r.offset = 56
                let ibExtension = Int(try r.readUInt16LE())
                let cbExtension = Int(try r.readUInt16LE())
                if cbExtension >= 4 {
                    r.offset = ibExtension
                    let featureOffset = Int(try r.readUInt32LE())
                    r.offset = featureOffset
                    while let id = try? r.readUInt8(), id != 0xFF {
                        let length = Int(try r.readUInt32LE())
                        try r.skip(length)
                        if id == 0x0A { utf8 = true }
                    }
                }
            }
            return Login7Summary(version: version, packetSize: packetSize, utf8Requested: utf8)
        } catch {
            return nil
        }
    }

    /// Skips [MS-TDS] 2.2.5.3 ALL_HEADERS (7.2 and later) when present.
    static func skipAllHeaders(_ r: inout ByteReader, version: TDSVersion) {
        guard version.generation >= 0x72 else { return }
        let start = r.offset
        guard let total = try? r.readUInt32LE(), total >= 4, Int(total) <= r.endIndex - start else {
            r.offset = start; return
        }
        r.offset = start + Int(total)
    }

    /// [MS-TDS] 2.2.6.7 SQLBatch: ALL_HEADERS (7.2+), then the SQL text in UTF-16LE.
    static func sqlBatchText(_ payload: [UInt8], version: TDSVersion) -> String? {
        var r = ByteReader(payload)
        skipAllHeaders(&r, version: version)
        let count = r.remaining & ~1
        return try? r.readUTF16LE(byteCount: count)
    }

    /// Well-known ProcIDs ([MS-TDS] 2.2.6.6).
    static let procNames: [UInt16: String] = [
        1: "sp_cursor", 2: "sp_cursoropen", 3: "sp_cursorprepare", 4: "sp_cursorexecute",
        5: "sp_cursorprepexec", 6: "sp_cursorunprepare", 7: "sp_cursorfetch", 8: "sp_cursoroption",
        9: "sp_cursorclose", 10: "sp_executesql", 11: "sp_prepare", 12: "sp_execute",
        13: "sp_prepexec", 14: "sp_prepexecrpc", 15: "sp_unprepare",
    ]

    /// [MS-TDS] 2.2.6.6 RPC Request: the procedure name (or well-known ProcID) and the
    /// parameters' names and canonical values. Parameters are decoded with ``TypeInfo``.
    static func rpcRequest(_ payload: [UInt8], version: TDSVersion) -> ReplaySession.Request? {
        var r = ByteReader(payload)
        skipAllHeaders(&r, version: version)
        do {
            let nameLength = try r.readUInt16LE()
            let name: String
            if nameLength == 0xFFFF {
                let id = try r.readUInt16LE()
                name = procNames[id] ?? "procid:\(id)"
            } else {
                name = try r.readUTF16LE(byteCount: Int(nameLength) * 2)
            }
            _ = try r.readUInt16LE()   // OptionFlags
            let params = RPCParameterDecoding.decodeParameters(&r, version: version)
            return .rpc(procedure: name, parameters: params)
        } catch {
            return nil
        }
    }

    /// True when a received request is answered by a recorded one: SQL text equal (or equal
    /// after trimming whitespace and normalising line ends); procedure names equal ignoring case
    /// and, when the recording lists parameters, the same values in the same order (names are
    /// compared only when both sides have one).
    static func matches(recorded: ReplaySession.Request, received: ReplaySession.Request) -> Bool {
        switch (recorded, received) {
        case (.sqlBatch(let a), .sqlBatch(let b)):
            return a == b || normalize(a) == normalize(b)
        case (.rpc(let a, let pa), .rpc(let b, let pb)):
            guard a.caseInsensitiveCompare(b) == .orderedSame else { return false }
            if pa.isEmpty { return true }
            guard pa.count == pb.count else { return false }
            for (x, y) in zip(pa, pb) {
                if x.value != y.value { return false }
                if !x.name.isEmpty, !y.name.isEmpty, x.name.caseInsensitiveCompare(y.name) != .orderedSame { return false }
            }
            return true
        case (.login7, .login7): return true
        default: return false
        }
    }

    static func normalize(_ s: String) -> String {
        s.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

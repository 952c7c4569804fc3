@testable import TDSCapture

/// Builds synthetic captures for tests: Ethernet / SLL frames holding IPv4 or IPv6 + TCP, then
/// pcap or pcapng files around them.
struct SyntheticCapture {
    typealias S = SyntheticCapture
    struct Frame {
        var bytes: [UInt8]
        var timestamp: UInt32
    }

    static let clientV4: [UInt8] = [192, 168, 1, 10]
    static let serverV4: [UInt8] = [192, 168, 1, 20]
    static let clientV6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a]
    static let serverV6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x14]

    static func be16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
    static func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32($0))) } }
    static func le16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }

    static func tcp(srcPort: UInt16, dstPort: UInt16, seq: UInt32, ack: UInt32 = 0, flags: UInt8, payload: [UInt8]) -> [UInt8] {
        var h: [UInt8] = be16(Int(srcPort)) + be16(Int(dstPort)) + be32(seq) + be32(ack)
        h += [0x50, flags] + be16(65535) + [0, 0, 0, 0]
        return h + payload
    }

    static func ipv4(src: [UInt8], dst: [UInt8], tcp: [UInt8]) -> [UInt8] {
        [0x45, 0] + be16(20 + tcp.count) + [0, 1, 0x40, 0, 64, 6, 0, 0] + src + dst + tcp
    }

    static func ipv6(src: [UInt8], dst: [UInt8], tcp: [UInt8], withExtensionHeader: Bool = false) -> [UInt8] {
        if withExtensionHeader {
            // Hop-by-hop options header (8 bytes: next header TCP, length 0, PadN).
            let ext: [UInt8] = [6, 0, 1, 4, 0, 0, 0, 0]
            return [0x60, 0, 0, 0] + be16(ext.count + tcp.count) + [0, 64] + src + dst + ext + tcp
        }
        return [0x60, 0, 0, 0] + be16(tcp.count) + [6, 64] + src + dst + tcp
    }

    static func ethernet(_ ip: [UInt8], v6: Bool = false, vlan: Bool = false) -> [UInt8] {
        var f: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        if vlan { f += [0x81, 0x00, 0x00, 0x05] }
        f += v6 ? [0x86, 0xDD] : [0x08, 0x00]
        var frame = f + ip
        while frame.count < 60 { frame.append(0) } // Ethernet padding the IP length must cut off
        return frame
    }

    static func sll(_ ip: [UInt8]) -> [UInt8] {
        [0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00] + ip
    }

    /// A classic pcap file (little-endian unless `bigEndian`).
    static func pcap(_ frames: [[UInt8]], linkType: UInt32 = 1, bigEndian: Bool = false) -> [UInt8] {
        let w16: (Int) -> [UInt8] = { bigEndian ? S.be16($0) : S.le16($0) }
        let w32: (UInt32) -> [UInt8] = { bigEndian ? S.be32($0) : S.le32($0) }
        var out = w32(0xA1B2_C3D4) + w16(2) + w16(4) + w32(0) + w32(0) + w32(65535) + w32(linkType)
        for (i, f) in frames.enumerated() {
            out += w32(1_700_000_000 + UInt32(i)) + w32(0) + w32(UInt32(f.count)) + w32(UInt32(f.count)) + f
        }
        return out
    }

    /// A pcapng file with one section, one interface and Enhanced Packet Blocks.
    static func pcapng(_ frames: [[UInt8]], linkType: UInt16 = 1, bigEndian: Bool = false) -> [UInt8] {
        let w16: (Int) -> [UInt8] = { bigEndian ? S.be16($0) : S.le16($0) }
        let w32: (UInt32) -> [UInt8] = { bigEndian ? S.be32($0) : S.le32($0) }
        func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
            var b = body
            while b.count % 4 != 0 { b.append(0) }
            let length = UInt32(12 + b.count)
            return w32(type) + w32(length) + b + w32(length)
        }
        var out = block(0x0A0D_0D0A, w32(0x1A2B_3C4D) + w16(1) + w16(0) + w32(0xFFFF_FFFF) + w32(0xFFFF_FFFF))
        // Interface with if_tsresol = 6 (microseconds) and end-of-options.
        out += block(1, w16(Int(linkType)) + w16(0) + w32(65535) + w16(9) + w16(1) + [6, 0, 0, 0] + w16(0) + w16(0))
        out += block(0x0000_0BAD, [1, 2, 3, 4]) // a custom block, to be skipped
        for (i, f) in frames.enumerated() {
            let ts = UInt64(1_700_000_000 + i) * 1_000_000
            out += block(6, w32(0) + w32(UInt32(ts >> 32)) + w32(UInt32(truncatingIfNeeded: ts)) + w32(UInt32(f.count)) + w32(UInt32(f.count)) + f)
        }
        return out
    }

    /// A TDS packet: 8-byte header and `body`.
    static func tdsPacket(type: UInt8, status: UInt8 = 1, body: [UInt8]) -> [UInt8] {
        [type, status] + be16(8 + body.count) + [0, 0, 1, 0] + body
    }
}

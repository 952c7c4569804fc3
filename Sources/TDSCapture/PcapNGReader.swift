/// Reads pcapng files (IETF draft "PCAP Next Generation Dump File Format").
///
/// Understood blocks: Section Header (0x0A0D0D0A, sets the byte order), Interface Description
/// (1; link type and `if_tsresol`), Enhanced Packet (6), Simple Packet (3) and the obsolete
/// Packet block (2). Other blocks are skipped by their length. Every block length is checked
/// against the file (it must be a multiple of 4, at least 12, and repeated at the block's end).
public enum PcapNGReader {
    /// True when `bytes` starts with a pcapng Section Header Block.
    public static func matches(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && bytes[0] == 0x0A && bytes[1] == 0x0D && bytes[2] == 0x0D && bytes[3] == 0x0A
    }

    private struct Interface {
        var linkType: LinkType
        var snapLength: Int
        /// Timestamp units per second.
        var unitsPerSecond: Double
    }

    /// All packets of all sections, in file order.
    /// - Throws: ``CaptureError`` at the offset of a malformed block.
    public static func frames(from bytes: [UInt8]) throws(CaptureError) -> [CapturedFrame] {
        var file = FileBytes(bytes)
        guard matches(bytes) else { throw CaptureError(offset: 0, "not a pcapng file (no Section Header Block)") }
        var frames: [CapturedFrame] = []
        var interfaces: [Interface] = []
        var offset = 0
        while offset < file.count {
            try file.require(offset, 12, "pcapng block header")
            let rawType = Array(bytes[offset ..< offset + 4])
            if rawType == [0x0A, 0x0D, 0x0D, 0x0A] {
                // A new section: the byte-order magic decides how to read everything that follows.
                try file.require(offset, 28, "pcapng Section Header Block")
                let bom = Array(bytes[offset + 8 ..< offset + 12])
                if bom == [0x1A, 0x2B, 0x3C, 0x4D] { file.bigEndian = true }
                else if bom == [0x4D, 0x3C, 0x2B, 0x1A] { file.bigEndian = false }
                else { throw CaptureError(offset: offset + 8, "pcapng Section Header Block: bad byte-order magic") }
                interfaces = []
            }
            let type = try file.u32(offset, "pcapng block type")
            let length = Int(try file.u32(offset + 4, "pcapng block length"))
            guard length >= 12, length % 4 == 0 else {
                throw CaptureError(offset: offset + 4, "pcapng block length \(length) is invalid")
            }
            try file.require(offset, length, "pcapng block (type 0x\(String(type, radix: 16)))")
            let trailer = Int(try file.u32(offset + length - 4, "pcapng block trailing length"))
            guard trailer == length else {
                throw CaptureError(offset: offset + length - 4, "pcapng block trailing length \(trailer) differs from \(length)")
            }
            let body = offset + 8
            let bodyEnd = offset + length - 4
            switch type {
            case 1: // Interface Description Block
                guard bodyEnd - body >= 8 else { throw CaptureError(offset: body, "pcapng Interface Description Block too short") }
                let linkType = LinkType(rawValue: UInt32(try file.u16(body, "IDB link type")))
                let snap = Int(try file.u32(body + 4, "IDB snap length"))
                var units = 1e6
                var o = body + 8
                while o + 4 <= bodyEnd {
                    let code = try file.u16(o, "IDB option code")
                    let optionLength = Int(try file.u16(o + 2, "IDB option length"))
                    if code == 0 { break }
                    guard optionLength <= bodyEnd - (o + 4) else {
                        throw CaptureError(offset: o + 2, "pcapng option length \(optionLength) exceeds its block")
                    }
                    if code == 9, optionLength >= 1 { // if_tsresol
                        let r = try file.u8(o + 4, "if_tsresol")
                        let exponent = Int(r & 0x7F)
                        if exponent <= 30 {
                            var v = 1.0
                            for _ in 0..<exponent { v *= (r & 0x80) != 0 ? 2 : 10 }
                            units = v
                        }
                    }
                    o += 4 + (optionLength + 3) / 4 * 4
                }
                interfaces.append(Interface(linkType: linkType, snapLength: snap, unitsPerSecond: units))
            case 6, 2: // Enhanced Packet Block, obsolete Packet Block
                guard bodyEnd - body >= 20 else { throw CaptureError(offset: body, "pcapng packet block too short") }
                let interfaceID = type == 6 ? Int(try file.u32(body, "EPB interface id")) : Int(try file.u16(body, "PB interface id"))
                guard interfaceID < interfaces.count else {
                    throw CaptureError(offset: body, "pcapng packet block names interface \(interfaceID), \(interfaces.count) described")
                }
                let high = UInt64(try file.u32(body + 4, "timestamp"))
                let low = UInt64(try file.u32(body + 8, "timestamp"))
                let captured = Int(try file.u32(body + 12, "captured length"))
                let original = Int(try file.u32(body + 16, "original length"))
                let dataOffset = body + 20
                guard captured <= bodyEnd - dataOffset else {
                    throw CaptureError(offset: body + 12, "pcapng packet captured length \(captured) exceeds its block")
                }
                let iface = interfaces[interfaceID]
                let ticks = Double(high << 32 | low)
                frames.append(CapturedFrame(index: frames.count, linkType: iface.linkType,
                                            timestamp: ticks / iface.unitsPerSecond,
                                            data: Array(bytes[dataOffset ..< dataOffset + captured]),
                                            originalLength: original, fileOffset: dataOffset))
            case 3: // Simple Packet Block
                guard bodyEnd - body >= 4 else { throw CaptureError(offset: body, "pcapng Simple Packet Block too short") }
                guard let iface = interfaces.first else {
                    throw CaptureError(offset: offset, "pcapng Simple Packet Block before any Interface Description Block")
                }
                let original = Int(try file.u32(body, "SPB original length"))
                let dataOffset = body + 4
                var captured = min(original, bodyEnd - dataOffset)
                if iface.snapLength > 0 { captured = min(captured, iface.snapLength) }
                frames.append(CapturedFrame(index: frames.count, linkType: iface.linkType, timestamp: 0,
                                            data: Array(bytes[dataOffset ..< dataOffset + captured]),
                                            originalLength: original, fileOffset: dataOffset))
            default:
                break
            }
            offset += length
        }
        return frames
    }
}

/// Reads classic libpcap files (tcpdump.org "pcap" format): a 24-byte global header, then
/// records of a 16-byte header (seconds, micro- or nanoseconds, captured length, original
/// length) followed by the captured bytes.
///
/// Both byte orders and both timestamp resolutions (magic `0xA1B2C3D4` µs, `0xA1B23C4D` ns)
/// are accepted. A record whose captured length exceeds the file or 256 MiB throws a
/// ``CaptureError`` at the record's offset.
public enum PcapReader {
    /// True when `bytes` starts with a pcap magic number, in either byte order.
    public static func matches(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4 else { return false }
        let m = Array(bytes[0..<4])
        return m == [0xD4, 0xC3, 0xB2, 0xA1] || m == [0xA1, 0xB2, 0xC3, 0xD4]
            || m == [0x4D, 0x3C, 0xB2, 0xA1] || m == [0xA1, 0xB2, 0x3C, 0x4D]
    }

    /// Largest captured length accepted for one record, in bytes.
    static let maxRecordLength = 256 * 1024 * 1024

    /// All frames of the file, in file order.
    /// - Throws: ``CaptureError`` for a bad magic number, a truncated header or record, or an
    ///   impossible record length.
    public static func frames(from bytes: [UInt8]) throws(CaptureError) -> [CapturedFrame] {
        var file = FileBytes(bytes, bigEndian: false)
        try file.require(0, 24, "pcap global header")
        let magic = try file.u32(0, "pcap magic")
        var nanoseconds = false
        switch magic {
        case 0xA1B2_C3D4: break
        case 0xA1B2_3C4D: nanoseconds = true
        case 0xD4C3_B2A1: file.bigEndian = true
        case 0x4D3C_B2A1: file.bigEndian = true; nanoseconds = true
        default: throw CaptureError(offset: 0, "not a pcap file (magic 0x\(String(magic, radix: 16)))")
        }
        let major = try file.u16(4, "pcap version")
        guard major == 2 else { throw CaptureError(offset: 4, "unsupported pcap major version \(major)") }
        let linkType = LinkType(rawValue: try file.u32(20, "pcap link type") & 0x0FFF_FFFF)
        var frames: [CapturedFrame] = []
        var offset = 24
        while offset < file.count {
            try file.require(offset, 16, "pcap record header")
            let seconds = try file.u32(offset, "pcap record timestamp")
            let fraction = try file.u32(offset + 4, "pcap record timestamp")
            let capturedLength = Int(try file.u32(offset + 8, "pcap record captured length"))
            let originalLength = Int(try file.u32(offset + 12, "pcap record original length"))
            guard capturedLength <= maxRecordLength else {
                throw CaptureError(offset: offset + 8, "pcap record \(frames.count + 1): captured length \(capturedLength) is impossible")
            }
            let dataOffset = offset + 16
            let data = try file.slice(dataOffset, capturedLength, "pcap record \(frames.count + 1) data")
            let timestamp = Double(seconds) + Double(fraction) / (nanoseconds ? 1e9 : 1e6)
            frames.append(CapturedFrame(index: frames.count, linkType: linkType, timestamp: timestamp, data: data,
                                        originalLength: originalLength, fileOffset: dataOffset))
            offset = dataOffset + capturedLength
        }
        return frames
    }
}

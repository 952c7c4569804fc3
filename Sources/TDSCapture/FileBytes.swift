/// Bounds-checked little/big-endian reads over a capture file, throwing ``CaptureError`` with
/// the file offset instead of trapping.
struct FileBytes {
    let bytes: [UInt8]
    var bigEndian: Bool

    init(_ bytes: [UInt8], bigEndian: Bool = false) {
        self.bytes = bytes
        self.bigEndian = bigEndian
    }

    var count: Int { bytes.count }

    func require(_ offset: Int, _ count: Int, _ what: String) throws(CaptureError) {
        guard offset >= 0, count >= 0, offset <= bytes.count, count <= bytes.count - offset else {
            throw CaptureError(offset: max(0, min(offset, bytes.count)),
                               "\(what): needs \(count) byte(s), file has \(max(0, bytes.count - offset)) left")
        }
    }

    func u8(_ offset: Int, _ what: String) throws(CaptureError) -> UInt8 {
        try require(offset, 1, what)
        return bytes[offset]
    }

    func u16(_ offset: Int, _ what: String) throws(CaptureError) -> UInt16 {
        try require(offset, 2, what)
        let a = UInt16(bytes[offset]), b = UInt16(bytes[offset + 1])
        return bigEndian ? (a << 8 | b) : (b << 8 | a)
    }

    func u32(_ offset: Int, _ what: String) throws(CaptureError) -> UInt32 {
        try require(offset, 4, what)
        var v: UInt32 = 0
        if bigEndian {
            for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        } else {
            for i in (0..<4).reversed() { v = v << 8 | UInt32(bytes[offset + i]) }
        }
        return v
    }

    func slice(_ offset: Int, _ count: Int, _ what: String) throws(CaptureError) -> [UInt8] {
        try require(offset, count, what)
        return Array(bytes[offset ..< offset + count])
    }
}

/// Big-endian reads inside one frame, reporting errors at `fileOffset + index`.
struct FrameBytes {
    let bytes: [UInt8]
    let fileOffset: Int

    func require(_ offset: Int, _ count: Int, _ what: String) throws(CaptureError) {
        guard offset >= 0, count >= 0, offset <= bytes.count, count <= bytes.count - offset else {
            throw CaptureError(offset: fileOffset &+ max(0, min(offset, bytes.count)),
                               "\(what): needs \(count) byte(s), frame has \(max(0, bytes.count - offset)) left")
        }
    }

    func u8(_ offset: Int, _ what: String) throws(CaptureError) -> UInt8 {
        try require(offset, 1, what)
        return bytes[offset]
    }

    func u16(_ offset: Int, _ what: String) throws(CaptureError) -> UInt16 {
        try require(offset, 2, what)
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    func u32(_ offset: Int, _ what: String) throws(CaptureError) -> UInt32 {
        try require(offset, 4, what)
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        return v
    }
}

/// The `.hex` text format of `../shared/captures`: lines starting with `#` are comments (the
/// first names the origin and says what the bytes are), every other line holds hexadecimal
/// bytes separated by white space. Blank lines are ignored.
public struct HexCapture: Sendable, Hashable {
    /// The comment lines, without their leading `#` and surrounding spaces.
    public var comments: [String]
    /// The bytes, in order.
    public var bytes: [UInt8]

    public init(comments: [String], bytes: [UInt8]) {
        self.comments = comments
        self.bytes = bytes
    }

    /// True when `bytes` look like this format: text, and either a `#` comment first or only
    /// hex digits and white space.
    public static func matches(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return false }
        var sawDigit = false
        var atLineStart = true
        var inComment = false
        for b in bytes.prefix(4096) {
            if inComment { if b == 0x0A { inComment = false; atLineStart = true }; continue }
            switch b {
            case UInt8(ascii: "#") where atLineStart: inComment = true
            case 0x0A: atLineStart = true
            case 0x20, 0x09, 0x0D: break
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                 UInt8(ascii: "A")...UInt8(ascii: "F"):
                sawDigit = true; atLineStart = false
            default: return false
            }
        }
        return sawDigit || bytes.first == UInt8(ascii: "#")
    }

    /// Parses the text.
    /// - Throws: ``CaptureError`` at the character offset of a token that is not one or two hex
    ///   digits (the detail names the line number).
    public static func parse(_ data: [UInt8]) throws(CaptureError) -> HexCapture {
        var comments: [String] = []
        var bytes: [UInt8] = []
        var lineStart = 0
        var lineNumber = 1
        while lineStart < data.count {
            var lineEnd = lineStart
            while lineEnd < data.count, data[lineEnd] != 0x0A { lineEnd += 1 }
            let line = data[lineStart ..< lineEnd]
            let firstNonSpace = line.firstIndex { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }
            if let f = firstNonSpace, data[f] == UInt8(ascii: "#") {
                var text = String(decoding: data[(f + 1) ..< lineEnd], as: UTF8.self)
                while text.hasSuffix("\r") { text.removeLast() }
                comments.append(text.trimmingSpaces())
            } else if firstNonSpace != nil {
                var i = lineStart
                while i < lineEnd {
                    let c = data[i]
                    if c == 0x20 || c == 0x09 || c == 0x0D || c == UInt8(ascii: ",") { i += 1; continue }
                    var tokenEnd = i
                    while tokenEnd < lineEnd, data[tokenEnd] != 0x20, data[tokenEnd] != 0x09,
                          data[tokenEnd] != 0x0D, data[tokenEnd] != UInt8(ascii: ",") { tokenEnd += 1 }
                    var token = Array(data[i ..< tokenEnd])
                    if token.count > 2, token[0] == UInt8(ascii: "0"), token[1] | 0x20 == UInt8(ascii: "x") {
                        token.removeFirst(2)
                    }
                    // A run of hex digits of even length is several bytes (e.g. "0a0b").
                    guard !token.isEmpty, token.count % 2 == 0 || token.count == 1 else {
                        throw CaptureError(offset: i, "hex line \(lineNumber): '\(printable(token))' is not a byte")
                    }
                    var k = 0
                    while k < token.count {
                        let hi: UInt8, lo: UInt8
                        if token.count == 1 {
                            hi = 0
                            guard let l = hexValue(token[0]) else { throw badDigit(i, lineNumber, token) }
                            lo = l
                        } else {
                            guard let h = hexValue(token[k]), let l = hexValue(token[k + 1]) else {
                                throw badDigit(i, lineNumber, token)
                            }
                            hi = h; lo = l
                        }
                        bytes.append(hi << 4 | lo)
                        k += 2
                    }
                    i = tokenEnd
                }
            }
            lineStart = lineEnd + 1
            lineNumber += 1
        }
        return HexCapture(comments: comments, bytes: bytes)
    }

    private static func badDigit(_ offset: Int, _ line: Int, _ token: [UInt8]) -> CaptureError {
        CaptureError(offset: offset, "hex line \(line): '\(printable(token))' is not hexadecimal")
    }

    /// `token` for an error message: at most 32 bytes, anything but printable ASCII as `\xNN`.
    private static func printable(_ token: [UInt8]) -> String {
        var s = ""
        for b in token.prefix(32) {
            if (0x20 ... 0x7E).contains(b) {
                s.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                let hex = String(b, radix: 16, uppercase: true)
                s += "\\x" + (b < 0x10 ? "0" : "") + hex
            }
        }
        return token.count > 32 ? s + "…" : s
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}

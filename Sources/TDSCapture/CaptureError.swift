/// An error reading a capture file (pcap, pcapng, `.hex`) or cutting TCP/IP headers out of it.
///
/// `offset` is the byte offset in the capture file at which the problem was found (for a `.hex`
/// file, the character offset of the offending line; `detail` names the line number too).
/// Capture files are treated as hostile input: every malformed length or header ends up here,
/// never in a trap.
public struct CaptureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset in the capture file (or character offset for `.hex`, see `detail`).
    public var offset: Int
    /// A human-readable explanation naming the structure (pcap record, pcapng block, IPv4 header…).
    public var detail: String
    public init(offset: Int, _ detail: String) { self.offset = offset; self.detail = detail }
    public var description: String { "capture error at byte offset \(offset): \(detail)" }
}

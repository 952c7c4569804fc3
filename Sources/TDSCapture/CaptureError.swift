/// An error reading a capture file (pcap, pcapng, `.hex`).
public struct CaptureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset in the capture file (or line number for `.hex`, see `detail`).
    public var offset: Int
    public var detail: String
    public init(offset: Int, _ detail: String) { self.offset = offset; self.detail = detail }
    public var description: String { "capture error at byte offset \(offset): \(detail)" }
}

/// The bytes one side of a TCP connection sent, reassembled in sequence order.
///
/// Retransmitted and overlapping bytes appear once (the first capture of a byte wins);
/// segments captured out of order are put back in order; a stream whose start was not
/// captured begins at its lowest captured sequence number. Bytes never captured leave a
/// ``Gap``: `bytes` then simply continues after it, and `gaps` says where.
public struct TCPStream: Sendable, Hashable {
    /// A hole in the stream: `length` bytes that were never captured, which belonged just
    /// before `bytes[offset]`.
    public struct Gap: Sendable, Hashable {
        public var offset: Int
        public var length: Int
    }

    /// Where a run of `bytes` came from.
    public struct Chunk: Sendable, Hashable {
        /// Offset in `bytes`.
        public var offset: Int
        /// Index of the captured frame.
        public var frameIndex: Int
        public var timestamp: Double
    }

    public var source: IPEndpoint
    public var destination: IPEndpoint
    public var bytes: [UInt8]
    public var gaps: [Gap]
    /// One entry per segment that contributed bytes, in stream order.
    public var chunks: [Chunk]
    /// A SYN from this side was captured (so the stream is complete at its start).
    public var sawSYN: Bool
    public var sawFIN: Bool
    /// Payload bytes dropped as retransmissions or overlaps.
    public var duplicateBytes: Int

    public init(source: IPEndpoint, destination: IPEndpoint, bytes: [UInt8] = [], gaps: [Gap] = [], chunks: [Chunk] = [],
                sawSYN: Bool = false, sawFIN: Bool = false, duplicateBytes: Int = 0) {
        self.source = source
        self.destination = destination
        self.bytes = bytes
        self.gaps = gaps
        self.chunks = chunks
        self.sawSYN = sawSYN
        self.sawFIN = sawFIN
        self.duplicateBytes = duplicateBytes
    }

    /// The frame that carried `bytes[offset]`, when known.
    public func frameIndex(at offset: Int) -> Int? {
        var lo = 0, hi = chunks.count - 1, found: Int?
        while lo <= hi {
            let mid = (lo + hi) / 2
            if chunks[mid].offset <= offset { found = chunks[mid].frameIndex; lo = mid + 1 } else { hi = mid - 1 }
        }
        return found
    }

    /// Reassembles the segments of one direction.
    /// - Parameter segments: (segment, bytes missing from its captured payload) in capture order.
    static func reassemble(source: IPEndpoint, destination: IPEndpoint,
                           segments: [(segment: TCPSegment, missing: Int)]) -> TCPStream {
        var stream = TCPStream(source: source, destination: destination)
        let syn = segments.first { $0.segment.syn }
        stream.sawSYN = syn != nil
        stream.sawFIN = segments.contains { $0.segment.fin }
        let data = segments.filter { !$0.segment.payload.isEmpty }
        guard let first = data.first else { return stream }
        // Sequence numbers wrap: compare them as signed 32-bit distances from a reference.
        let reference = syn.map { $0.segment.sequenceNumber &+ 1 } ?? first.segment.sequenceNumber
        var placed: [(rel: Int, order: Int, segment: TCPSegment)] = []
        for (order, item) in data.enumerated() {
            let rel = Int(Int32(bitPattern: item.segment.sequenceNumber &- reference))
            placed.append((rel, order, item.segment))
        }
        placed.sort { ($0.rel, $0.order) < ($1.rel, $1.order) }
        var next = syn != nil ? 0 : placed[0].rel
        for p in placed {
            let count = p.segment.payload.count
            let end = p.rel + count
            if end <= next { stream.duplicateBytes += count; continue }
            if p.rel > next {
                stream.gaps.append(Gap(offset: stream.bytes.count, length: p.rel - next))
            }
            let skip = max(0, next - p.rel)
            stream.duplicateBytes += skip
            stream.chunks.append(Chunk(offset: stream.bytes.count, frameIndex: p.segment.frameIndex, timestamp: p.segment.timestamp))
            stream.bytes.append(contentsOf: p.segment.payload[skip...])
            next = end
        }
        return stream
    }
}

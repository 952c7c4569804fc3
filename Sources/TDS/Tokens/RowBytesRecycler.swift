import Synchronization

/// Row buffers handed back when their block is released, for the decoder's next buffer (issue 43).
/// A block that took the decoder's buffer (``TokenStreamDecoder/settle(_:)``) gives it back when
/// the rows are dropped, so that a long result reuses the same few buffers instead of asking the
/// allocator, and through it the kernel (fresh pages fault), for a new one per batch. At most
/// ``keep`` buffers of 64 KiB to 64 MiB are kept; any other is simply freed.
package final class RowBytesRecycler: Sendable {
    /// The buffers kept, and whether more are taken (only while a response is read: an idle
    /// connection keeps none).
    private let state = Mutex<(spare: [[UInt8]], open: Bool)>(([], false))
    /// The most buffers kept: the decoder's buffers (one being filled, one read, one spare) and
    /// the storage of blocks whose rows are copied (as many again).
    static let keep = 6
    /// The smallest buffer kept (a smaller one comes from the allocator's free lists).
    static let smallest = 64 << 10

    package init() {}

    /// Keeps `bytes` for a later ``take(capacity:atMost:opening:)`` (its contents are not read again), unless
    /// the recycler is closed, full, or the buffer is under 64 KiB or over 64 MiB.
    package func give(_ bytes: [UInt8]) {
        guard bytes.capacity >= Self.smallest, bytes.capacity <= 64 << 20 else { return }
        state.withLock { if $0.open && $0.spare.count < Self.keep { $0.spare.append(bytes) } }
    }

    /// A buffer kept with room for at least `capacity` bytes (and at most `atMost`), emptied;
    /// nil when none has it. `opening`: ``open()`` first (a block about to copy rows).
    package func take(capacity: Int, atMost: Int = .max, opening: Bool = false) -> [UInt8]? {
        var found = state.withLock { s -> [UInt8]? in
            if opening { s.open = true }
            guard let i = s.spare.lastIndex(where: { $0.capacity >= capacity && $0.capacity <= atMost }) else { return nil }
            return s.spare.remove(at: i)
        }
        found?.removeAll(keepingCapacity: true)
        return found
    }

    /// Buffers given back are kept from now on (a response's rows are being read).
    package func open() {
        state.withLock { $0.open = true }
    }

    /// Frees every buffer kept, and keeps none given back until ``open()`` (the response ended).
    package func close() {
        let freed = state.withLock { s -> [[UInt8]] in
            s.open = false
            defer { s.spare = [] }
            return s.spare
        }
        _ = freed   // freed here, outside the lock
    }
}

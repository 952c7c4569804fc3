import Synchronization

/// Row buffers handed back when their block is released, for the decoder's next buffer (issue 43).
/// A block that took the decoder's buffer (``TokenStreamDecoder/settle(_:)``) gives it back when
/// the rows are dropped, so that a long result reuses the same few buffers instead of asking the
/// allocator, and through it the kernel (fresh pages fault), for a new one per batch. Buffers of
/// 64 KiB to 64 MiB are kept, at most ``keepPerSize`` of each size class (the power of two at or
/// under its capacity) and ``keep`` in all (the oldest freed first); any other is simply freed.
/// Size classes, because a result's blocks need two sizes at once: the decoder's buffers that
/// rows are lent from, and the smaller room of blocks whose rows are copied. A shared limit
/// filled with one size and then freed every buffer of the other (measured on 10,000 vector rows:
/// 299 buffers reused, 499 allocated, 273 freed unused).
package final class RowBytesRecycler: Sendable {
    /// The buffers kept, and whether more are taken (only while a response is read: an idle
    /// connection keeps none).
    private let state = Mutex<(spare: [[UInt8]], open: Bool)>(([], false))
    /// The most buffers kept of one size class: the decoder's buffers (one being filled, one
    /// read, one spare) or the storage of blocks whose rows are copied, with one to spare.
    static let keepPerSize = 4
    /// The most buffers kept in all.
    static let keep = 8
    /// The smallest buffer kept (a smaller one comes from the allocator's free lists).
    static let smallest = 64 << 10

    package init() {}

    /// Keeps `bytes` for a later ``take(capacity:atMost:opening:)`` (its contents are not read again), unless
    /// the recycler is closed, full, or the buffer is under 64 KiB or over 64 MiB.
    package func give(_ bytes: [UInt8]) {
        guard bytes.capacity >= Self.smallest, bytes.capacity <= 64 << 20 else { return }
        let size = Self.sizeClass(bytes.capacity)
        let evicted = state.withLock { s -> [UInt8]? in
            guard s.open, s.spare.count(where: { Self.sizeClass($0.capacity) == size }) < Self.keepPerSize else { return nil }
            s.spare.append(bytes)
            return s.spare.count > Self.keep ? s.spare.removeFirst() : nil
        }
        _ = evicted   // freed here, outside the lock
    }

    /// The size class of a buffer of `capacity` bytes: the position of its highest bit.
    static func sizeClass(_ capacity: Int) -> Int { Int.bitWidth &- capacity.leadingZeroBitCount }

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

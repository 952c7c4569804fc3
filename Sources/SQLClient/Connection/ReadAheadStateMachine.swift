/// The read-ahead of a streamed request as a pure state machine (as PostgresNIO's
/// `RowStreamStateMachine`): while a cursor's caller, off the connection, takes one batch, the
/// connection reads and scans the next (``SQLConnection/nextBatch(_:readsAhead:)``).
/// At most one reader ahead per connection, reading one batch at a time, so a server that sends
/// forever costs bounded memory.
///
/// States: `idle` (nobody reads ahead); `reading` (the reader reads a batch; the cursor may wait
/// for it, and may take what it holds while its read waits for bytes); `ready` (the batch is
/// read and waits for demand: the reader is parked, or stopped after the request's last batch).
///
/// Inputs: the cursor asks for its next batch (``next(_:)``), the reader's read waits for bytes
/// and comes back (``readWaits(_:holding:)``, ``readResumes(_:)``), a batch is read
/// (``batchRead(_:_:)``), a reader is started (``start(_:after:isRunning:)``) or stopped (a drain,
/// a dropped cursor: ``stop()``). Outputs: what the connection does (read itself, hand a batch
/// over, wake the reader or the cursor, park). Time plays no part.
struct ReadAheadStateMachine: Sendable {
    typealias Batch = SQLConnection.ResponseBatch

    /// One reader ahead: the request it reads for, and its number (a stopped reader's late
    /// answers are told from the next one's).
    struct Reader: Sendable, Equatable {
        var id: RequestID
        var serial: UInt64
    }

    enum State: Sendable {
        case idle
        /// `awaited`: the cursor waits for this batch (the read returns once it holds anything).
        /// `partial`: what the batch holds while its read waits for bytes (nil: not in a read).
        case reading(Reader, awaited: Bool, partial: Batch?)
        /// The batch read, until the cursor takes it.
        case ready(Reader, Batch)
    }

    private(set) var state: State = .idle
    /// The number of the last reader started.
    private(set) var serial: UInt64 = 0

    /// The reader ahead, if any (reading, or holding its batch).
    var reader: Reader? {
        switch state {
        case .idle: return nil
        case .reading(let reader, _, _), .ready(let reader, _): return reader
        }
    }

    /// The batch read ahead, until it is taken.
    var readyBatch: Batch? {
        if case .ready(_, let batch) = state { return batch }
        return nil
    }

    /// True when `batch` is the request's last (it ended or failed it).
    static func isLast(_ batch: Batch) -> Bool { batch.ended || batch.error != nil }

    // MARK: - The cursor

    enum NextAction: Sendable {
        /// Nobody reads ahead for this request: the cursor reads its batch itself.
        case read
        /// Hand the cursor this batch; `wakeReader`: the parked reader goes on with the next one.
        case take(Batch, wakeReader: UInt64?)
        /// The cursor waits for reader `serial`'s batch (``batchRead(_:_:)`` delivers it).
        case wait(UInt64)
    }

    /// The cursor of request `id` asks for its next batch (a drain never asks here: it stops the reader first).
    mutating func next(_ id: RequestID) -> NextAction {
        switch state {
        case .ready(let reader, let batch) where reader.id == id:
            if Self.isLast(batch) {
                state = .idle   // its reader has stopped
                return .take(batch, wakeReader: nil)
            }
            state = .reading(reader, awaited: false, partial: nil)   // the next one, while the caller takes this one
            return .take(batch, wakeReader: reader.serial)
        case .reading(let reader, _, let partial?) where reader.id == id && !partial.items.isEmpty:
            // The read waits for bytes: what the batch holds so far; the reader goes on with a new one.
            state = .reading(reader, awaited: false, partial: Batch())
            return .take(partial, wakeReader: nil)
        case .reading(let reader, _, let partial) where reader.id == id:
            state = .reading(reader, awaited: true, partial: partial)
            return .wait(reader.serial)
        default:
            return .read
        }
    }

    // MARK: - The reader

    /// Starts a reader ahead for request `id` after the cursor's `batch` (returns its serial),
    /// unless that batch was the last, the request is over, or a reader is there already (at
    /// most one batch is held, even another request's).
    mutating func start(_ id: RequestID, after batch: Batch, isRunning: Bool) -> UInt64? {
        guard case .idle = state, !Self.isLast(batch), isRunning else { return nil }
        serial &+= 1
        state = .reading(Reader(id: id, serial: serial), awaited: false, partial: nil)
        return serial
    }

    /// True when reader `serial` is the current one and the cursor waits for its batch (the
    /// read then returns as soon as it holds anything).
    func isAwaited(_ serial: UInt64) -> Bool {
        if case .reading(let reader, true, _) = state, reader.serial == serial { return true }
        return false
    }

    /// True while reader `serial` is the current one (not stopped).
    func isCurrent(_ serial: UInt64) -> Bool { reader?.serial == serial }

    /// Reader `serial`'s read waits for bytes, its batch holding `batch` so far (moved here, for
    /// the cursor to take).
    mutating func readWaits(_ serial: UInt64, holding batch: inout Batch) {
        guard case .reading(let reader, let awaited, nil) = state, reader.serial == serial else { return }
        state = .reading(reader, awaited: awaited, partial: batch)
        batch = Batch()
    }

    /// Reader `serial`'s read is back: what its batch still holds (empty when the cursor took
    /// it, or the reader was stopped).
    mutating func readResumes(_ serial: UInt64) -> Batch {
        guard case .reading(let reader, let awaited, let partial?) = state, reader.serial == serial else { return Batch() }
        state = .reading(reader, awaited: awaited, partial: nil)
        return partial
    }

    enum ReadAction: Sendable, Equatable {
        /// The reader was stopped: nobody takes the batch; the reader ends.
        case discard
        /// Hand the batch to the waiting cursor (reader `serial`); `last`: the reader ends, else
        /// it reads the next one at once.
        case deliver(UInt64, last: Bool)
        /// Keep the batch for the cursor; the reader parks until it is taken (or stopped).
        case park(UInt64)
        /// Keep the batch (the request's last) for the cursor; the reader ends.
        case keepLast
    }

    /// Reader `serial` read `batch`.
    mutating func batchRead(_ serial: UInt64, _ batch: Batch) -> ReadAction {
        guard case .reading(let reader, let awaited, _) = state, reader.serial == serial else { return .discard }
        let last = Self.isLast(batch)
        if awaited {
            state = last ? .idle : .reading(reader, awaited: false, partial: nil)
            return .deliver(serial, last: last)
        }
        state = .ready(reader, batch)
        return last ? .keepLast : .park(serial)
    }

    // MARK: - Stopping

    /// What stopping the reader asks of the connection.
    struct StopAction: Sendable, Equatable {
        /// The stopped reader.
        var reader: Reader
        /// The reader is parked with its batch: wake it to end.
        var wakeParkedReader: Bool
        /// The cursor waits for the batch: hand it an error (never reached: a drain follows the
        /// end of the cursor's reads; but never left waiting).
        var failWaitingCursor: Bool
    }

    /// Stops the reader ahead, if any, and lets go of what it read (a drain, a dropped cursor).
    mutating func stop() -> StopAction? {
        switch state {
        case .idle:
            return nil
        case .ready(let reader, let batch):
            state = .idle
            return StopAction(reader: reader, wakeParkedReader: !Self.isLast(batch), failWaitingCursor: false)
        case .reading(let reader, let awaited, _):
            state = .idle
            return StopAction(reader: reader, wakeParkedReader: false, failWaitingCursor: awaited)
        }
    }
}

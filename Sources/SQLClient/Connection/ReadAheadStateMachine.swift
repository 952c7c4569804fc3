/// Who reads the socket, and the read-ahead of a streamed request, as a pure state machine (as
/// PostgresNIO's `RowStreamStateMachine`): while a cursor's caller, off the connection, takes one
/// batch, the connection reads and scans the next (``SQLConnection/nextBatch(_:caller:)``).
///
/// The socket has one reader at a time by construction: it is read only by whom this machine
/// hands it (``socket``): a cursor reading its own batch, the reader ahead (a task per batch read
/// ahead), or the drain of an abandoned request. Nobody waits for it: a drain asked while it is
/// read for that request is handed to that reader, which goes on as the drain when its read ends.
/// At most one batch is read ahead (held until its cursor takes it, even another request's last
/// one), so a server that sends forever costs bounded memory.
///
/// Read-ahead states: `idle`; `reading` (the reader ahead reads a batch; the cursor may wait for
/// it, and may take what it holds while its read waits for bytes); `ready` (the batch read,
/// until the cursor takes it; no task runs then: taking it starts the next read).
///
/// Inputs: the cursor asks for its next batch (``next(_:mayRead:)``) or its own read ends
/// (``cursorRead(_:_:caller:isRunning:)``); the reader ahead's read waits for bytes and comes
/// back (``readWaits(_:holding:)``, ``readResumes(_:)``), its batch is read
/// (``batchRead(_:_:isRunning:)``); a request is drained (``drain(_:isRunning:)``, ended by
/// ``drainEnded()``). Outputs: what the connection does (read, hand a batch over, start the
/// reader ahead or the drain, fail a waiting cursor). Time plays no part.
struct ReadAheadStateMachine: Sendable {
    typealias Batch = SQLConnection.ResponseBatch

    /// One reader ahead: the request it reads for, and its number (a stopped reader's late
    /// answers are told from the next one's), and whose cursor it reads for.
    struct Reader: Sendable, Equatable {
        var id: RequestID
        var serial: UInt64
        var caller: Caller
    }

    /// Where a cursor's caller runs, which says whether its batches are read ahead of it.
    enum Caller: Sendable, Equatable {
        /// The connection itself (the buffered shapes): nothing would run beside it. Never.
        case connection
        /// Isolated to another actor (the main actor): the connection's work runs on another
        /// thread whatever happens, so it runs beside the caller's. Always.
        case actor
        /// Not isolated: the connection's read can run on the caller's thread. Read ahead, unless
        /// the batch's rows are large and plain (``SQLConnection/ResponseBatch/largePlainRows``):
        /// reading those is copying them, and the caller reads them fastest on the core that
        /// copied them (issue 43: 10,000 vector rows from a task took 8-12 ms less CPU and
        /// 2-9 ms less wall time without a reader ahead; strings, wide, exact and narrow rows
        /// took 25-38 % longer without one; ``SQLConnection/largeRowBytes``).
        case task

        /// Whether the batch after `batch` is read ahead.
        func readsAhead(after batch: Batch) -> Bool {
            switch self {
            case .connection: return false
            case .actor: return true
            case .task: return !batch.largePlainRows
            }
        }
    }

    /// Who reads the socket.
    enum Socket: Sendable, Equatable {
        case free
        /// A cursor reads its batch itself.
        case cursor(RequestID)
        /// Reader `serial` reads a batch ahead (also once stopped, until its read ends).
        case ahead(UInt64)
        /// The connection reads an abandoned request to its end.
        case draining(RequestID)
    }

    enum State: Sendable {
        case idle
        /// `awaited`: the cursor waits for this batch (the read returns once it holds anything).
        /// `partial`: what the batch holds while its read waits for bytes (nil: not in a read).
        case reading(Reader, awaited: Bool, partial: Batch?)
        /// The batch read, until the cursor takes it.
        case ready(Reader, Batch)
    }

    private(set) var socket: Socket = .free
    private(set) var state: State = .idle
    /// A drain asked while the socket was read: whoever reads goes on with it when its read ends.
    private(set) var pendingDrain: RequestID?
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
        /// The socket is the cursor's: it reads its batch itself, then says so (``cursorRead(_:_:caller:isRunning:)``).
        case read
        /// Hand the cursor this batch; `startReader`: the reader ahead (this serial) reads the next one.
        case take(Batch, startReader: UInt64?)
        /// The cursor waits for reader `serial`'s batch (``batchRead(_:_:isRunning:)`` delivers it).
        case wait(UInt64)
        /// Nothing for the cursor: its request is over or abandoned (its end was not read for it).
        case over
    }

    /// The cursor of request `id` asks for its next batch; `mayRead`: its request runs and is
    /// not abandoned (a drain reads it otherwise).
    mutating func next(_ id: RequestID, mayRead: Bool) -> NextAction {
        switch state {
        case .ready(let reader, let batch) where reader.id == id:
            guard !Self.isLast(batch), mayRead, socket == .free, reader.caller.readsAhead(after: batch) else {
                state = .idle   // its reader has ended
                return .take(batch, startReader: nil)
            }
            state = .reading(reader, awaited: false, partial: nil)   // the next one, while the caller takes this one
            socket = .ahead(reader.serial)
            return .take(batch, startReader: reader.serial)
        case .reading(let reader, _, let partial?) where reader.id == id && !partial.items.isEmpty:
            // The read waits for bytes: what the batch holds so far; the reader goes on with a new one.
            state = .reading(reader, awaited: false, partial: Batch())
            return .take(partial, startReader: nil)
        case .reading(let reader, _, let partial) where reader.id == id:
            state = .reading(reader, awaited: true, partial: partial)
            return .wait(reader.serial)
        default:
            // (Another request's batch read ahead stays for its cursor.)
            guard mayRead, socket == .free else { return .over }
            socket = .cursor(id)
            return .read
        }
    }

    enum ReadEnd: Sendable, Equatable {
        case none
        /// Start reader `serial` ahead (the socket is its).
        case startReader(UInt64)
        /// Drain request `id` (the socket is the drain's).
        case drain(RequestID)
    }

    /// The cursor of request `id` read `batch` itself; `caller`: where its caller runs (a reader
    /// ahead is started when the caller reads ahead after `batch`, unless that batch was the
    /// last, the request is over, or a batch is held already, even another request's);
    /// `isRunning`: the request runs.
    mutating func cursorRead(_ id: RequestID, _ batch: Batch, caller: Caller, isRunning: Bool) -> ReadEnd {
        guard socket == .cursor(id) else { return .none }
        if let drain = releaseSocket(isRunning: isRunning) { return drain }
        guard caller.readsAhead(after: batch), case .idle = state, !Self.isLast(batch), isRunning else { return .none }
        serial &+= 1
        state = .reading(Reader(id: id, serial: serial, caller: caller), awaited: false, partial: nil)
        socket = .ahead(serial)
        return .startReader(serial)
    }

    /// The socket is let go of by whoever read it: to the drain asked meanwhile, if its request
    /// still runs (`isRunning`).
    private mutating func releaseSocket(isRunning: Bool) -> ReadEnd? {
        socket = .free
        guard let id = pendingDrain else { return nil }
        pendingDrain = nil
        guard isRunning else { return nil }
        socket = .draining(id)
        return .drain(id)
    }

    // MARK: - The reader ahead

    /// True when reader `serial` is the current one and the cursor waits for its batch (the
    /// read then returns as soon as it holds anything).
    func isAwaited(_ serial: UInt64) -> Bool {
        if case .reading(let reader, true, _) = state, reader.serial == serial { return true }
        return false
    }

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
        /// Keep the batch for the cursor (taking it starts the next read); the reader ends.
        case keep
        /// Nobody takes the batch; the reader goes on as the drain of request `id` asked meanwhile.
        case drain(RequestID)
    }

    /// Reader `serial` read `batch`; `isRunning`: its request still runs.
    mutating func batchRead(_ serial: UInt64, _ batch: Batch, isRunning: Bool) -> ReadAction {
        guard socket == .ahead(serial) else { return .discard }
        guard case .reading(let reader, let awaited, _) = state, reader.serial == serial else {
            if case .drain(let id) = releaseSocket(isRunning: isRunning) { return .drain(id) }
            return .discard
        }
        let last = Self.isLast(batch)
        if awaited, !last, isRunning, reader.caller.readsAhead(after: batch) {
            state = .reading(reader, awaited: false, partial: nil)
            return .deliver(serial, last: false)
        }
        socket = .free
        if awaited {
            state = .idle
            return .deliver(serial, last: true)
        }
        state = .ready(reader, batch)
        return .keep
    }

    // MARK: - Draining

    /// What draining (or letting go of) a request asks of the connection.
    struct DrainAction: Sendable, Equatable {
        /// The cursor waiting for this reader's batch: hand it `.cancelled`.
        var failWaitingCursor: UInt64?
        /// The socket is the drain's now: read the request to its end, then ``drainEnded()``.
        /// False when it is read already (that reader goes on as the drain) or there is nothing to drain.
        var drainNow: Bool
    }

    /// Request `id` is the connection's to drain (abandoned), or, when it no longer runs
    /// (`isRunning` false: over, or the connection closed), only to let go of: what was read
    /// ahead for its cursor, which is gone, is dropped, and its reader stopped.
    mutating func drain(_ id: RequestID, isRunning: Bool) -> DrainAction {
        var action = DrainAction(failWaitingCursor: nil, drainNow: false)
        switch state {
        case .ready(let reader, _) where reader.id == id:
            state = .idle
        case .reading(let reader, let awaited, _) where reader.id == id:
            state = .idle
            if awaited { action.failWaitingCursor = reader.serial }
        default:
            break
        }
        guard isRunning else { return action }
        switch socket {
        case .free:
            socket = .draining(id)
            action.drainNow = true
        case .draining(id):
            break   // drained already
        default:
            pendingDrain = id
        }
        return action
    }

    /// The drain has read its request to the end (or the connection closed): the socket is free.
    mutating func drainEnded() {
        if case .draining = socket { socket = .free }
    }
}

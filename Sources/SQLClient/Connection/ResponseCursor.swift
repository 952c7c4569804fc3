import TDS

/// The one cursor over a request's response, behind every streamed shape (events, rows, row
/// blocks, their RPC forms) and the buffered ones (`execute`, `run`).
///
/// It owns the request: it starts it on the first `next…()` call and cancels it (ATTENTION,
/// drained in the background) if it is dropped, or its task cancelled, before the end. Events
/// and rows are fetched from the connection in batches (``SQLConnection/nextBatch(_:caller:)``:
/// what the received bytes already hold), so a million-row result does not cross into the actor
/// a million times. While the caller takes one batch, the connection reads and scans the next
/// (one batch ahead at most: a bounded read-ahead, so the socket is read at most one batch
/// ahead of what the caller consumed; none for the buffered shapes, which run on the
/// connection, nor after large plain rows for a caller off any actor, which reads them itself:
/// ``ReadAheadStateMachine/Caller``). Rows arrive as
/// ``SQLRowBlock``s, blocks of a result set's rows: ``nextBlock()`` hands them over as they are,
/// ``nextRow()`` and ``nextEvent()`` one row at a time, each row an ``SQLRow`` view of its block
/// (nothing copied, nothing allocated per row), ``nextItem()`` events and whole blocks for the
/// buffered shapes.
///
/// Not thread-safe: one iterator, used by one task at a time (as `AsyncIteratorProtocol` is).
/// Its methods run in the caller's isolation (`#isolation`): buffered items are taken without
/// leaving the caller's executor, and the buffered APIs, which run on the connection, never hop
/// off it.
@usableFromInline
final class ResponseCursor: @unchecked Sendable {
    /// What the cursor sends, resolved by the connection when the request starts.
    enum Source: Sendable {
        case request(OutgoingRequest)
        /// A parameterized query: a SQL batch without parameters, else `sp_executesql`.
        case query(SQLQuery)
        /// A stored procedure called by name (``SQLConnection/callProcedure(_:parameters:options:timeout:)``):
        /// its parameters for encrypted columns are encrypted (Always Encrypted).
        case procedure(RPCCall)
    }

    let connection: SQLConnection
    private let source: Source
    private let timeout: Duration?
    /// The response is read in parts, large values in pieces (``nextPart()``).
    private let readsParts: Bool
    /// A typed read's rows: large binary values assembled as `Data` (see
    /// ``TokenStreamDecoder/assemblesLargeBinaryAsData``).
    private let assemblesData: Bool
    /// The transaction the request belongs to (nil: the one the task that starts it works under).
    private let reservation: SQLConnection.ReservationID?
    private(set) var requestID: RequestID?
    /// The request is over on the connection (completed, failed or abandoned).
    private var finished = false
    private var items: [SQLConnection.ResponseBatch.Item] = []
    private var position = 0
    /// The block whose rows are being handed out one at a time: its storage, the next row and
    /// the end of its rows.
    ///
    /// These and `taken` are read and written by the inlined ``takeBufferedRow()`` in the
    /// caller's module, where no dynamic exclusivity check is wanted per row: the cursor is used
    /// by one task at a time (see the type's notes).
    @exclusivity(unchecked) @usableFromInline var rowStorage: SQLRowStorage?
    @exclusivity(unchecked) @usableFromInline var rowNext = 0
    @exclusivity(unchecked) @usableFromInline var rowEnd = 0
    /// ``nextPart()``: the next column of row `rowNext` to hand out.
    private var partColumn = 0
    /// The request's error, thrown after what was fetched with it.
    private var pendingError: (any Error)?
    /// Takes so far (every 32nd checks for cancellation: ``checkCancellation()``).
    @exclusivity(unchecked) @usableFromInline var taken = 0
    /// Rows received so far (for the request's `requestFinished` log event).
    private var rowsReceived = 0

    init(connection: SQLConnection, request: Source, timeout: Duration? = nil, readsParts: Bool = false,
         assemblesData: Bool = false, reservation: SQLConnection.ReservationID? = nil) {
        self.connection = connection
        self.source = request
        self.timeout = timeout
        self.readsParts = readsParts
        self.assemblesData = assemblesData
        self.reservation = reservation
    }

    deinit {
        if let requestID, !finished {
            let connection = self.connection
            // Unstructured: a deinit cannot await; abandoning is the connection's and needs nothing of this object.
            Task { await connection.abandon(requestID) }
        }
    }

    // MARK: - Shapes

    /// The next event: result set starts, rows, statement counts, messages, return statuses;
    /// nil after the last one. Throws the request's error after its events.
    func nextEvent(isolation: isolated (any Actor)? = #isolation) async throws -> SQLResponseEvent? {
        while true {
            if let event = try takeBufferedEvent() { return event }
            guard try await fetch() else { return nil }
        }
    }

    /// The next row of any result set; nil after the last one.
    @usableFromInline
    func nextRow(isolation: isolated (any Actor)? = #isolation) async throws -> SQLRow? {
        while true {
            if let row = try takeBufferedRow() { return row }
            guard try await fetch() else { return nil }
        }
    }

    /// The next block of rows (of one result set); nil after the last one.
    func nextBlock(isolation: isolated (any Actor)? = #isolation) async throws -> SQLRowBlock? {
        while true {
            try checkCancellation()
            if let storage = rowStorage {
                rowStorage = nil
                if rowNext < rowEnd { return SQLRowBlock(storage: storage, rows: rowNext ..< rowEnd) }
            }
            while position < items.count {
                let item = takeItem()
                if case .rows(let rows) = item, rows.count > 0 { return rows }
            }
            guard try await fetch() else { return nil }
        }
    }

    /// The next part of a response read in parts (``init(connection:request:timeout:readsParts:)``):
    /// events, each value of a row, a large value's chunks; nil after the last one.
    func nextPart(isolation: isolated (any Actor)? = #isolation) async throws -> SQLStreamedPart? {
        while true {
            try checkCancellation()
            if let storage = rowStorage {
                // Rows that arrived whole (none do when reading parts): their values one by one.
                if rowNext < rowEnd {
                    if partColumn < storage.width {
                        let column = partColumn
                        partColumn += 1
                        return .value(column: column, storage.value(row: rowNext, column: column))
                    }
                    partColumn = 0
                    rowNext += 1
                    return .rowEnd
                }
                rowStorage = nil
            }
            if position < items.count {
                switch takeItem() {
                case .event(let event): return .event(event)
                case .part(let part): return part
                case .rows(let rows):
                    hold(rows)
                    partColumn = 0
                }
                continue
            }
            guard try await fetch() else { return nil }
        }
    }

    // MARK: - Buffered items

    /// The next event already fetched, without suspending; nil when none is buffered.
    func takeBufferedEvent() throws -> SQLResponseEvent? {
        try checkCancellation()
        if let row = takeBlockRow() { return .row(row) }
        while position < items.count {
            switch takeItem() {
            case .event(let event):
                return event
            case .rows(let rows):
                hold(rows)
                if let row = takeBlockRow() { return .row(row) }
            case .part:
                break   // only read through nextPart()
            }
        }
        return nil
    }

    /// The next event or whole block of rows already fetched, without suspending (for the
    /// buffered shapes, which keep the blocks as they are); nil when none is buffered.
    func takeBufferedItem() throws -> SQLConnection.ResponseBatch.Item? {
        try checkCancellation()
        if let storage = rowStorage {
            rowStorage = nil
            if rowNext < rowEnd { return .rows(SQLRowBlock(storage: storage, rows: rowNext ..< rowEnd)) }
        }
        return position < items.count ? takeItem() : nil
    }

    /// The next event or block of rows (see ``takeBufferedItem()``); nil after the last one.
    func nextItem(isolation: isolated (any Actor)? = #isolation) async throws -> SQLConnection.ResponseBatch.Item? {
        while true {
            if let item = try takeBufferedItem() { return item }
            guard try await fetch() else { return nil }
        }
    }

    /// The next row already fetched, without suspending; nil when none is buffered.
    ///
    /// Inlined into the caller's loop: the next row of the block being handed out is taken in
    /// place (no call), except on every 32nd take, which checks for cancellation
    /// (``takeBufferedRowChecked()``).
    @inlinable @inline(__always)
    func takeBufferedRow() throws -> SQLRow? {
        if rowNext < rowEnd, (taken &+ 1) & 31 != 0, let storage = rowStorage {
            taken &+= 1
            let row = SQLRow(storage: storage, index: rowNext)
            rowNext &+= 1
            return row
        }
        return try takeBufferedRowChecked()
    }

    /// ``takeBufferedRow()`` with its cancellation check, and the next blocks.
    @usableFromInline
    func takeBufferedRowChecked() throws -> SQLRow? {
        try checkCancellation()
        if let row = takeBlockRow() { return row }
        while position < items.count {
            if case .rows(let rows) = takeItem() {
                hold(rows)
                if let row = takeBlockRow() { return row }
            }
        }
        return nil
    }

    /// Makes `block` the one whose rows are handed out next.
    @inline(__always)
    private func hold(_ block: SQLRowBlock) {
        rowStorage = block.storage
        rowNext = block.rows.lowerBound
        rowEnd = block.rows.upperBound
    }

    @inline(__always)
    private func takeBlockRow() -> SQLRow? {
        guard rowNext < rowEnd, let storage = rowStorage else {
            rowStorage = nil
            return nil
        }
        let row = SQLRow(storage: storage, index: rowNext)
        rowNext &+= 1
        return row
    }

    /// Moves the next item out (no reference counting per item).
    @inline(__always)
    private func takeItem() -> SQLConnection.ResponseBatch.Item {
        var item = SQLConnection.ResponseBatch.Item.event(.returnStatus(0))
        swap(&item, &items[position])
        position += 1
        return item
    }

    /// Every 32 takes: a cancelled task stops here (rows already fetched are not all delivered
    /// after it was cancelled); the request is cancelled on the server off this task.
    @inline(__always)
    private func checkCancellation() throws {
        taken &+= 1
        guard taken & 31 == 0, !finished, let requestID, Task.isCancelled else { return }
        finished = true
        items = []
        position = 0
        rowStorage = nil
        let connection = self.connection
        // Unstructured: this check is synchronous, and its task is cancelled (the ATTENTION's write must not be).
        Task { await connection.abandon(requestID, reason: .cancelled) }
        throw SQLClientError(.cancelled, "the request was cancelled")
    }

    /// Fetches the next batch (starting the request first); false when there is nothing more.
    /// Throws the request's error once what came before it was taken.
    private func fetch(isolation: isolated (any Actor)? = #isolation) async throws -> Bool {
        if let error = pendingError {
            pendingError = nil
            throw error
        }
        if finished { return false }
        do {
            if requestID == nil { requestID = try await connection.startRequest(source, timeout: timeout, readsParts: readsParts,
                                                                                  assemblesData: assemblesData, reservation: reservation) }
            guard let requestID else { return false }
            // Where the caller runs decides the read-ahead (the connection itself, another actor, none).
            let caller: ReadAheadStateMachine.Caller = isolation === connection ? .connection : isolation == nil ? .task : .actor
            let batch = await connection.nextBatch(requestID, caller: caller)
            if batch.ended || batch.error != nil { finished = true }
            items = batch.items
            rowsReceived += batch.rowCount
            if (batch.ended || batch.error != nil), connection.configuration.eventLogger != nil {
                await connection.logRequestFinished(requestID, rows: rowsReceived, error: batch.error)
            }
            position = 0
            pendingError = batch.error
            return true
        } catch {
            finished = true
            throw error
        }
    }
}

extension SQLConnection {
    /// Starts the request of a cursor's source.
    func startRequest(_ source: ResponseCursor.Source, timeout: Duration?, readsParts: Bool = false,
                      assemblesData: Bool = false, reservation: ReservationID? = nil) async throws -> RequestID {
        let id: RequestID
        switch source {
        case .request(let request): id = try await startRequest(request, timeout: timeout, reservation: reservation)
        case .query(let query):
            let (request, outputKeys) = try await self.request(encrypting: query)
            id = try await startRequest(request, timeout: timeout, reservation: reservation)
            if !outputKeys.isEmpty { outputParameterKeys[id] = outputKeys }
            // Always Encrypted off for this query: its encrypted columns read as ciphertext.
            if query.columnEncryption == .disabled, session.columnEncryptionVersion > 0 { requestsWithoutDecryption.insert(id) }
        case .procedure(let call):
            let (request, outputKeys) = try await self.request(encryptingProcedure: call)
            id = try await startRequest(request, timeout: timeout, reservation: reservation)
            if !outputKeys.isEmpty { outputParameterKeys[id] = outputKeys }
        }
        // Its response is read only by its cursor (or, abandoned, by the drain), after this.
        if readsParts { partsRequest = id }
        if assemblesData { dataRequest = id }
        return id
    }
}

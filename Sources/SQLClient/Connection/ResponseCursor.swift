import TDS

/// The one cursor over a request's response, behind every streamed shape (events, rows, row
/// blocks, their RPC forms) and the buffered ones (`execute`, `run`).
///
/// It owns the request: it starts it on the first `next…()` call and cancels it (ATTENTION,
/// drained in the background) if it is dropped, or its task cancelled, before the end. Events
/// and rows are fetched from the connection in batches (``SQLConnection/nextBatch(_:drainer:)``:
/// what the received bytes already hold), so a million-row result does not cross into the actor
/// a million times; the socket is still read only as the caller consumes. Rows arrive as
/// ``SQLRowBlock``s, flat blocks of a result set's rows: ``nextBlock()`` hands them over as
/// they are, ``nextRow()`` and ``nextEvent()`` one row at a time, each row a view of its block
/// copied into an ``SQLRow``.
///
/// Not thread-safe: one iterator, used by one task at a time (as `AsyncIteratorProtocol` is).
/// Its methods run in the caller's isolation (`#isolation`): buffered items are taken without
/// leaving the caller's executor, and the buffered APIs, which run on the connection, never hop
/// off it.
final class ResponseCursor: @unchecked Sendable {
    /// What the cursor sends, resolved by the connection when the request starts.
    enum Source: Sendable {
        case request(OutgoingRequest)
        /// A parameterized query: a SQL batch without parameters, else `sp_executesql`.
        case query(SQLQuery)
    }

    let connection: SQLConnection
    private let source: Source
    private let timeout: Duration?
    private(set) var requestID: RequestID?
    /// The request is over on the connection (completed, failed or abandoned).
    private var finished = false
    private var items: [SQLConnection.ResponseBatch.Item] = []
    private var position = 0
    /// The block whose rows are being handed out one at a time, and the next row in it.
    private var block: SQLRowBlock?
    private var blockRow = 0
    /// The request's error, thrown after what was fetched with it.
    private var pendingError: (any Error)?
    private var taken = 0
    /// Rows received so far (for the request's `requestFinished` log event).
    private var rowsReceived = 0

    init(connection: SQLConnection, request: Source, timeout: Duration? = nil) {
        self.connection = connection
        self.source = request
        self.timeout = timeout
    }

    deinit {
        if let requestID, !finished {
            let connection = self.connection
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
            if let block {
                self.block = nil
                if blockRow == 0 { return block }
                let rest = SQLRowBlock(columns: block.columns, values: Array(block.values[(blockRow * block.width)...]))
                if rest.count > 0 { return rest }
            }
            while position < items.count {
                let item = takeItem()
                if case .rows(let rows) = item, rows.count > 0 { return rows }
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
                block = rows
                blockRow = 0
                if let row = takeBlockRow() { return .row(row) }
            }
        }
        return nil
    }

    /// The next row already fetched, without suspending; nil when none is buffered.
    func takeBufferedRow() throws -> SQLRow? {
        try checkCancellation()
        if let row = takeBlockRow() { return row }
        while position < items.count {
            if case .rows(let rows) = takeItem() {
                block = rows
                blockRow = 0
                if let row = takeBlockRow() { return row }
            }
        }
        return nil
    }

    @inline(__always)
    private func takeBlockRow() -> SQLRow? {
        guard let block, blockRow < block.count else {
            self.block = nil
            return nil
        }
        let row = block.row(blockRow)
        blockRow += 1
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
        block = nil
        let connection = self.connection
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
            if requestID == nil { requestID = try await connection.startRequest(source, timeout: timeout) }
            guard let requestID else { return false }
            let batch = await connection.nextBatch(requestID)
            if batch.ended || batch.error != nil { finished = true }
            items = batch.items
            rowsReceived += batch.rowCount
            if (batch.ended || batch.error != nil), connection.configuration.logger != nil {
                await connection.logRequestFinished(requestID, rows: rowsReceived, error: batch.error)
            }
            if batch.ended {
                // RETURNVALUE tokens (OUTPUT parameters), collected by the state machine: after the last statement.
                for value in await connection.takeReturnValues(requestID) {
                    items.append(.event(.outputValue(SQLOutputValue(value))))
                }
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
    func startRequest(_ source: ResponseCursor.Source, timeout: Duration?) async throws -> RequestID {
        switch source {
        case .request(let request): return try await startRequest(request, timeout: timeout)
        case .query(let query): return try await startRequest(try self.request(for: query), timeout: timeout)
        }
    }
}

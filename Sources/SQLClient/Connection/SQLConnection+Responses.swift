import TDS

/// Running requests: waiting for a turn, and reading a request's response into batches of
/// events and row blocks for the one cursor (``ResponseCursor``).
extension SQLConnection {
    /// What one crossing into the connection hands a cursor: the events and rows the received
    /// bytes held, in order.
    struct ResponseBatch: Sendable {
        enum Item: Sendable {
            /// Anything but a row.
            case event(SQLResponseEvent)
            /// Consecutive rows of one result set, in one flat block.
            case rows(SQLRowBlock)
            /// A piece of a row of a response read in parts (``SQLConnection/streamingValues(_:timeout:)``).
            case part(SQLStreamedPart)
        }
        var items: [Item] = []
        var rowCount = 0
        /// The request completed (without error) after `items`.
        var ended = false
        /// The request failed after `items`.
        var error: (any Error)?
    }

    /// Rows per batch at most (one block), other events per batch at most, and about the most
    /// wire bytes of rows per batch.
    static let batchRowLimit = 4096
    static let batchEventLimit = 512
    static let batchByteLimit = 1 << 20
    /// Bytes asked of the socket per read.
    static let readLength = 65_536

    // MARK: - Starting

    /// Starts a request (SQL batch, RPC, Transaction Manager request, streamed message): waits for
    /// its turn, encodes it with the current transaction descriptor in ALL_HEADERS, writes it,
    /// and has its query timeout armed (`timeout`, else ``SQLConnectionConfiguration/queryTimeout``)
    /// from when it starts to be written. Returns the request's id for ``nextBatch(_:drainer:readsAhead:)``.
    ///
    /// Requests run one at a time, in the order they asked, whichever task asks: a request made
    /// while another's response is still being streamed waits until that stream ends, or is
    /// cancelled, or its iterator is released (which cancels it). Nothing depends on which task
    /// calls. `reservation`: the transaction (``SQLTransaction``) the request belongs to; nil
    /// takes the one the calling task works under (inside ``withTransaction(isolationLevel:isolation:_:)``'s
    /// closure), if any.
    func startRequest(_ request: OutgoingRequest, timeout: Duration? = nil,
                      reservation: ReservationID? = nil) async throws -> RequestID {
        let limit = try (timeout ?? configuration.queryTimeout).map {
            try SQLConnectionConfiguration.validatedTimeout($0, "the request timeout")
        }
        nextRequestNumber &+= 1
        let id = RequestID(value: nextRequestNumber)
        let actions = machine.enqueue(id, timeout: limit, now: clock.now(),
                                      reservation: reservation ?? Self.currentReservation)
        try await waitForTurn(id, after: actions)
        let encoded: (PacketType, RequestBody)
        do {
            encoded = try request.encode(descriptor: OutgoingRequest.descriptor(from: session.transactionDescriptor),
                                         version: session.tdsVersion)
        } catch {
            await perform(machine.requestNotSent(id, now: clock.now()))
            throw error
        }
        logRequestStarted(id, request)
        do {
            try await write(id, type: encoded.0, body: encoded.1)
        } catch let failure as ProducerFailure {
            await readCutMessageAnswers(id)
            throw failure.error
        }
        return id
    }

    /// Performs `actions` (from enqueueing `id`) and waits until `id` may be written.
    private func waitForTurn(_ id: RequestID, after actions: [ConnectionStateMachine.Action]) async throws {
        await perform(actions)
        if let early = earlyTurns.removeValue(forKey: id) {
            if let error = early { throw error }
            return
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                requestWaiters[id] = continuation
            }
        } onCancel: {
            Task { await self.abandon(id, reason: .cancelled) }
        }
    }

    // MARK: - Reading

    /// The events and rows of request `id` in order, taken several at a time so that a streaming
    /// reader crosses into the actor once per batch instead of once per row: waits for the
    /// first, then adds what the bytes already received hold (the socket is not read for them),
    /// up to ``batchRowLimit`` rows and ``batchEventLimit`` other events. `ended`: the request
    /// completed after these; `error`: what it failed with after these (deliver them first).
    /// `drainer`: the background reader of an abandoned request (its own reader is refused).
    ///
    /// `readsAhead` (a cursor whose caller runs off the connection): when the batch neither ends
    /// nor fails the request, the next one is read and scanned at once, on the connection, while
    /// the caller takes this one, so that the connection's side of a read (receive, framing,
    /// token scan) runs beside the caller's decoding; the next call returns it. One task per
    /// request reads ahead (``readAheadLoop(_:serial:)``), a batch at a time: at most one batch
    /// is read ahead (at most ``batchRowLimit`` rows, about ``batchByteLimit`` bytes of rows or
    /// chunks, plus one socket read), so a server that sends forever still costs bounded memory.
    /// A caller cancelled while it waits for the batch read ahead cancels that read (as when it
    /// reads itself: ATTENTION, then `.cancelled`); a drain, or the next request, waits for it
    /// and drops it: the socket has one reader at a time (`readerBusy`).
    func nextBatch(_ id: RequestID, drainer: Bool = false, readsAhead: Bool = false) async -> ResponseBatch {
        // Only this request's own batch: another request's (read to its end while its caller was
        // still busy, after which this one could start) stays for its cursor. A drain has
        // stopped this request's reader ahead first (``drain(_:)``).
        if !drainer, let ahead = readAhead, ahead.id == id {
            if let ready = aheadReady {
                aheadReady = nil
                if ready.ended || ready.error != nil {
                    readAhead = nil   // its reader has stopped
                } else if let parked = aheadParked {
                    aheadParked = nil
                    readAheadAwaited = false   // (before the cursor comes back and waits for it)
                    parked.resume(returning: true)   // the next one, while the caller takes this one
                }
                return ready
            }
            if aheadInRead, !aheadPartial.items.isEmpty {
                // The batch read ahead waits for bytes: what it holds so far; it goes on with the next.
                var partial = ResponseBatch()
                swap(&partial, &aheadPartial)
                return partial
            }
            readAheadAwaited = true
            let task = ahead.task
            return await withTaskCancellationHandler {
                await withUnsafeContinuation { aheadTaker = $0 }
            } onCancel: {
                task.cancel()
            }
        }
        let batch = await readBatch(id, drainer: drainer)
        if readsAhead, !drainer { startReadAhead(id, after: batch) }
        return batch
    }

    /// Starts reading ahead for request `id` after `batch`, unless `batch` ended or failed it.
    /// Not while another request's batch read ahead waits for its cursor (at most one is held).
    private func startReadAhead(_ id: RequestID, after batch: ResponseBatch) {
        guard readAhead == nil, !batch.ended, batch.error == nil, machine.isRunning(id) else { return }
        readAheadAwaited = false
        readAheadSerial &+= 1
        let serial = readAheadSerial
        readAhead = (id, serial, Task { await self.readAheadLoop(id, serial: serial) })
    }

    /// Reads request `id`'s batches ahead of its cursor, one at a time: each goes to the cursor
    /// if it waits, else into `aheadReady`, and the reader waits (`aheadParked`) until the
    /// cursor takes it. Ends after the request's last batch, or when stopped
    /// (``stopReadAhead(wait:)``: a drain, a dropped cursor).
    private func readAheadLoop(_ id: RequestID, serial: UInt64) async {
        defer { resumeAheadWatchers() }
        while true {
            let batch = await readBatch(id, drainer: false, ahead: true)
            guard readAhead?.serial == serial else { return }   // stopped: nobody takes it
            let last = batch.ended || batch.error != nil
            if let taker = aheadTaker {
                aheadTaker = nil
                readAheadAwaited = false
                if last { readAhead = nil }
                taker.resume(returning: batch)
                if last { return }
                continue
            }
            aheadReady = batch
            resumeAheadWatchers()
            if last { return }
            let goOn = await withUnsafeContinuation { aheadParked = $0 }
            guard goOn, readAhead?.serial == serial else { return }
        }
    }

    /// Stops the reader ahead, if any, and lets go of what it read: at once when it waits for
    /// its batch to be taken; else, with `wait`, after the read it is in (the socket has one
    /// reader at a time; nobody takes what it reads).
    private func stopReadAhead(wait: Bool) async {
        guard let ahead = readAhead else { return }
        readAhead = nil
        aheadReady = nil
        if let parked = aheadParked {
            aheadParked = nil
            parked.resume(returning: false)
        }
        if let taker = aheadTaker {
            // Not reached (a drain follows the end of the cursor's reads), but never left waiting.
            aheadTaker = nil
            var batch = ResponseBatch()
            batch.error = CancelReason.cancelled.error
            taker.resume(returning: batch)
        }
        if wait { await ahead.task.value }
    }

    private func resumeAheadWatchers() {
        guard !aheadWatchers.isEmpty else { return }
        let watchers = aheadWatchers
        aheadWatchers = []
        for watcher in watchers { watcher.resume() }
    }

    /// The batch read ahead, once it is read (nil when nothing is read ahead, or it was taken).
    /// For tests: what the connection holds while the caller takes the batch before.
    func batchReadAhead() async -> ResponseBatch? {
        while let ahead = readAhead {
            if let ready = aheadReady { return ready }
            await withCheckedContinuation { aheadWatchers.append($0) }
            if readAhead?.serial != ahead.serial { return nil }
        }
        return nil
    }

    /// ``nextBatch(_:drainer:readsAhead:)``'s reading, by the one reader of the socket.
    ///
    /// `ahead`: the batch read ahead, which nobody may be waiting for yet. It goes on reading
    /// while its caller does not wait for it and the batch has room (rows, events, and under
    /// ``batchByteLimit`` bytes received for it; never for a response read in parts, whose chunks
    /// are bounded per batch): fewer, fuller batches, fewer crossings. While it waits for bytes,
    /// what it holds is in `aheadPartial`, which the caller takes when it comes (rows already
    /// received are never held back waiting for more).
    private func readBatch(_ id: RequestID, drainer: Bool, ahead: Bool = false) async -> ResponseBatch {
        if readerBusy {
            await withCheckedContinuation { readerWaiters.append($0) }   // handed over by the reader before
        } else {
            readerBusy = true
        }
        defer {
            if readerWaiters.isEmpty { readerBusy = false } else { readerWaiters.removeFirst().resume() }
        }
        var batch = ResponseBatch()
        guard machine.isRunning(id) else {
            // Over without its cursor seeing the end: abandoned and drained (the drain lets go
            // of an error put aside for the cursor, e.g. a cancelled read ahead).
            if machine.takeAbandoned(id) {
                batch.error = CancelReason.cancelled.error
            } else {
                batch.ended = true
            }
            return batch
        }
        if !drainer, machine.request?.isAbandoned == true {
            batch.error = CancelReason.cancelled.error
            return batch
        }
        var received = 0
        while true {
            collect(id, into: &batch)
            if batch.ended || batch.error != nil { return batch }
            if !batch.items.isEmpty {
                guard ahead, !readAheadAwaited, received < Self.batchByteLimit,
                      batch.rowCount < Self.batchRowLimit, batch.items.count < Self.batchEventLimit,
                      id != partsRequest, machine.forwardsRows else { return batch }
            }
            do {
                let bytes: [UInt8]
                if ahead {
                    // The caller may take what the batch holds while the read waits.
                    swap(&batch, &aheadPartial)
                    aheadInRead = true
                    defer {
                        aheadInRead = false
                        swap(&batch, &aheadPartial)
                        if batch.items.isEmpty { received = 0 }   // taken: a new batch
                    }
                    bytes = try await transport.read(maxLength: Self.readLength)
                } else {
                    bytes = try await transport.read(maxLength: Self.readLength)
                }
                received += bytes.count
                if bytes.isEmpty {
                    performNow(machine.transportFailed(SQLClientError(.connectionClosed, "the server closed the connection")))
                } else {
                    reader.append(bytes)
                }
            } catch let error as SQLClientError where error.code == .cancelled && machine.state != .closed {
                // The reading task was cancelled: cancel on the server and drain, off this task.
                if !drainer { Task { await self.abandon(id, reason: .cancelled) } }
                batch.error = error
                return batch
            } catch {
                let failure = error as? SQLClientError ?? SQLClientError(.ioError, "reading failed: \(error)")
                performNow(machine.transportFailed(failure))
            }
        }
    }

    /// Adds to `batch` what the buffered bytes hold for request `id`, synchronously.
    ///
    /// Rows of one result set go into blocks: as their wire bytes (``WireRowBlock``, decoded when
    /// read) when the result's columns allow it, else as decoded values; rows the wire scan cannot
    /// take (malformed, or a partial row too long to wait for) are decoded incrementally into a
    /// values block of their own, so rows stay in order.
    private func collect(_ id: RequestID, into batch: inout ResponseBatch) {
        var values: [SQLValue] = []
        var wire: WireRowBlock?
        var blockColumns: SQLColumns?
        var full = false
        let parts = id == partsRequest
        func emitWire() {
            if let columns = blockColumns, let w = wire, !w.isEmpty {
                batch.items.append(.rows(SQLRowBlock(storage: SQLRowStorage(columns: columns, wire: w))))
                reader.wireBlockHint = (Swift.min(w.rowCount, Self.batchRowLimit), Swift.min(w.byteCount, Self.batchByteLimit))
            }
            wire = nil
        }
        func emitValues() {
            if let columns = blockColumns, !values.isEmpty {
                batch.items.append(.rows(SQLRowBlock(columns: columns, values: values)))
                values = []
            }
        }
        func flush() {
            emitWire()
            emitValues()
            blockColumns = nil
        }
        func handle(_ action: ConnectionStateMachine.Action) -> Bool {
            switch action {
            case .forwardColumns(let columns):
                flush()
                reader.wireBlockHint = (0, 0)
                let cols = SQLColumns(columns.map(SQLColumn.init))
                currentColumns = cols
                batch.items.append(.event(.columns(cols)))
            case .forwardRow(let rowValues) where parts:
                for (column, value) in rowValues.enumerated() { batch.items.append(.part(.value(column: column, value))) }
                batch.items.append(.part(.rowEnd))
                batch.rowCount += 1
            case .forwardRow(let rowValues):
                guard let columns = currentColumns else { return false }
                if blockColumns !== columns { flush(); blockColumns = columns }
                emitWire()
                values.append(contentsOf: rowValues)
                batch.rowCount += 1
            case .forwardStatementDone(let count):
                flush()
                currentColumns = nil
                batch.items.append(.event(.statementDone(rowsAffected: count.map { Int(clamping: $0) })))
            case .forwardMessage(let message):
                flush()
                deliver(message)
                batch.items.append(.event(.message(message)))
            case .forwardReturnStatus(let status):
                flush()
                batch.items.append(.event(.returnStatus(status)))
            case .requestCompleted(let rid, let error):
                flush()
                currentColumns = nil
                if rid == id {
                    if let error { batch.error = error } else { batch.ended = true }
                    return true
                }
            case .requestCancelled(let rid, let error):
                flush()
                currentColumns = nil
                if rid == id {
                    batch.error = error
                    return true
                }
            case .closeConnection:
                flush()
                performNow(action)
                batch.error = closedError
                return true
            default:
                performNow(action)
            }
            return false
        }

        if parts {
            // A response read in parts: tokens through the state machine, row parts as they
            // come (while rows are forwarded), up to `batchEventLimit` items and about
            // `batchByteLimit` bytes of chunks.
            var bytes = 0
            while batch.items.count < Self.batchEventLimit, bytes < Self.batchByteLimit {
                if machine.state == .closed {
                    batch.error = closedError
                    return
                }
                let next: ResponseReader.PartItem
                do {
                    next = try reader.nextPart()
                } catch {
                    if handle(machine.transportFailed(error)) { return }
                    continue
                }
                switch next {
                case .part(.token(let token)):
                    let action = machine.tokenReceived(token)
                    if case .none = action { continue }
                    if handle(action) { return }
                case .part(let part):
                    guard machine.forwardsRows, currentColumns != nil else { continue }
                    let streamed: SQLStreamedPart
                    switch part {
                    case .value(let column, let value): streamed = .value(column: column, value)
                    case .chunk(let column, let chunk):
                        bytes += chunk.count
                        streamed = .chunk(column: column, chunk)
                    case .largeValueEnd(let column): streamed = .valueEnd(column: column)
                    case .rowEnd:
                        batch.rowCount += 1
                        streamed = .rowEnd
                    case .token: continue
                    }
                    batch.items.append(.part(streamed))
                case .messageEnded:
                    var over = false
                    for action in machine.messageEnded(now: clock.now()) where handle(action) { over = true }
                    if over { return }
                case .needBytes:
                    return
                }
            }
            return
        }
        rows: while !full, batch.rowCount < Self.batchRowLimit, batch.items.count < Self.batchEventLimit {
            if machine.state == .closed {
                flush()
                batch.error = closedError
                return
            }
            if machine.forwardsRows, let columns = currentColumns {
                // Rows straight from the decoder while they are forwarded as they are (see
                // `ConnectionStateMachine.forwardsRows`): runs of whole buffered rows in one
                // pass into the block, anything else one token at a time.
                if blockColumns !== columns {
                    flush()
                    blockColumns = columns
                }
                if wire == nil, var block = reader.decoder.makeWireRowBlock() {
                    emitValues()   // rows read incrementally before these
                    // Room for as many rows and bytes as the result's previous block held (at
                    // least 256 rows): a block of a long result grows without reallocating.
                    let hint = reader.wireBlockHint
                    if hint.rows > 256 {
                        block.reserveCapacity(rows: hint.rows, bytesPerRow: hint.bytes / hint.rows + 1)
                    } else {
                        block.reserveCapacity(rows: 256, bytesPerRow: 8 * columns.count)
                    }
                    wire = block
                }
                if var block = wire {
                    wire = nil   // uniquely referenced while it grows
                    let (n, end) = reader.decoder.appendBufferedRows(to: &block, limit: Self.batchRowLimit - batch.rowCount,
                                                                     byteLimit: Self.batchByteLimit)
                    wire = block
                    batch.rowCount += n
                    switch end {
                    case .limit:
                        full = true
                        continue rows
                    case .needBytes:
                        do {
                            if try reader.cutPacket() { continue rows }
                        } catch {
                            if handle(machine.transportFailed(error)) { return }
                            continue rows
                        }
                        if !reader.endOfMessagePending {
                            flush()
                            return
                        }
                        // The message ended inside a row: the token path below reports it.
                    case .otherToken:
                        break   // the token path below
                    case .incremental:
                        emitWire()
                        let item: TokenStreamDecoder.StreamItem?
                        do {
                            item = try reader.decoder.next(appendingRowValuesTo: &values)
                        } catch {
                            if handle(machine.transportFailed(SQLClientError.protocolError(error))) { return }
                            continue rows
                        }
                        switch item {
                        case .row?:
                            batch.rowCount += 1
                            continue rows
                        case .token(let token)?:
                            let action = machine.tokenReceived(token)
                            if case .none = action { continue rows }
                            if handle(action) { return }
                            continue rows
                        case nil:
                            break   // the next packet, or the message's end: below
                        }
                    }
                } else {
                    if values.isEmpty { values.reserveCapacity(columns.count * 64) }
                    let run = reader.decoder.appendBufferedRows(to: &values, limit: Self.batchRowLimit - batch.rowCount)
                    if run > 0 {
                        batch.rowCount += run
                        continue
                    }
                    let item: TokenStreamDecoder.StreamItem?
                    do {
                        item = try reader.decoder.next(appendingRowValuesTo: &values)
                    } catch {
                        if handle(machine.transportFailed(SQLClientError.protocolError(error))) { return }
                        continue
                    }
                    switch item {
                    case .row?:
                        batch.rowCount += 1
                        continue
                    case .token(let token)?:
                        let action = machine.tokenReceived(token)
                        if case .none = action { continue }
                        if handle(action) { return }
                        continue
                    case nil:
                        break   // the next packet, or the message's end: below
                    }
                }
            }
            let next: ResponseReader.Item
            do {
                next = try reader.next()
            } catch {
                if handle(machine.transportFailed(error)) { return }
                continue
            }
            switch next {
            case .token(let token):
                let action = machine.tokenReceived(token)
                if case .none = action { continue }
                if handle(action) { return }
            case .messageEnded:
                // Every action is performed (after the request's end come its timers' and the
                // next request's start), then the batch ends if the request did.
                var over = false
                for action in machine.messageEnded(now: clock.now()) where handle(action) { over = true }
                if over { return }
            case .needBytes:
                flush()
                return
            }
        }
        flush()
    }

    // MARK: - Abandoning

    /// The reader of request `id` is gone (its stream dropped, its task cancelled): a queued
    /// request is taken out; a running one is cancelled on the server (ATTENTION) and its
    /// response drained in the background, so that the connection can run the next request.
    func abandon(_ id: RequestID, reason: CancelReason = .abandoned) async {
        // What was read ahead for a cursor that is gone, when no drain will follow (the request
        // is over, or the connection closed): nobody will take it.
        if let ahead = readAhead, ahead.id == id, !machine.isRunning(id) || machine.state == .closed {
            await stopReadAhead(wait: false)
        }
        if reason == .cancelled {
            await perform(machine.cancelRequested(id, reason: .cancelled, now: clock.now()))
        }
        await perform(machine.requestAbandoned(id, now: clock.now()))
    }

    /// Reads abandoned request `id` to its end (the attention acknowledgement), discarding it.
    func drain(_ id: RequestID) async {
        // What was read ahead for the request's cursor, which is gone (even when it holds the end).
        if let ahead = readAhead, ahead.id == id { await stopReadAhead(wait: true) }
        while machine.isRunning(id), machine.state != .closed {
            let batch = await nextBatch(id, drainer: true)
            if batch.ended || batch.error != nil { return }
        }
    }

    // MARK: - Results

    /// The RETURNVALUE tokens (OUTPUT parameters, UDF results) of completed request `id`, once.
    func takeReturnValues(_ id: RequestID) -> [ReturnValue] {
        machine.takeReturnValues(of: id)
    }

    /// Sends `request` and buffers everything it returns: the fold of its events (``SQLResult/append(_:)``).
    func run(_ request: OutgoingRequest, timeout: Duration?) async throws -> SQLResult {
        try await run(.request(request), timeout: timeout)
    }

    /// Sends `source` and buffers everything it returns; rows are kept as views of their blocks
    /// (nothing copied, no event per row).
    ///
    /// On the connection, batch after batch, without reading ahead: collecting the blocks is
    /// little work, so a reader ahead would have nothing to run beside (measured: collecting off
    /// the connection while the next batch is read costs 5 to 40% more CPU and no time).
    func run(_ source: ResponseCursor.Source, timeout: Duration?) async throws -> SQLResult {
        let cursor = ResponseCursor(connection: self, request: source, timeout: timeout)
        var result = SQLResult()
        // A result set's blocks are gathered, then its rows array is made once at its size
        // (1M rows: 16 MB, where doubling copies 16 MB and touches 32).
        var blocks: [SQLRowBlock] = []
        while let item = try await cursor.nextItem() {
            switch item {
            case .rows(let block): blocks.append(block)
            case .event(let event):
                if !blocks.isEmpty {
                    result.append(rows: blocks)
                    blocks.removeAll(keepingCapacity: true)
                }
                result.append(event)
            case .part: continue   // only a response read in parts has them
            }
        }
        result.append(rows: blocks)
        result.finish()
        return result
    }
}

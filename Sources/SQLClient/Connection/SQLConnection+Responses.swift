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
        /// The last block's rows average ``SQLConnection/largeRowBytes`` wire bytes or more and no column is
        /// transcoded (nchar, nvarchar): scanning them was copying them (vector, binary, large
        /// values). A caller off any actor reads the next batch itself
        /// (``ReadAheadStateMachine/Caller/task``).
        var largePlainRows = false
    }

    /// Rows per batch at most (one block), other events per batch at most, and about the most
    /// wire bytes of rows per batch.
    static let batchRowLimit = 4096
    static let batchEventLimit = 512
    static let batchByteLimit = 1 << 20
    /// The most bytes asked of the socket per read (it asks 64 KiB, doubled while reads come
    /// back full, up to this: a long result comes in fewer, larger batches).
    static let readLength = 524_288
    /// Wire bytes per row from which a block's plain rows are ``ResponseBatch/largePlainRows``:
    /// vector rows of 0.5-8 KiB were read faster without a reader ahead from a task, rows under
    /// 100 bytes (narrow, exact, vector(16)) faster with one, and rows of 270 bytes either way
    /// (issue 43, `Benchmarks/README.md`, session 23).
    static let largeRowBytes = 1024

    // MARK: - Starting

    /// Starts a request (SQL batch, RPC, Transaction Manager request, streamed message): waits for
    /// its turn, encodes it with the current transaction descriptor in ALL_HEADERS, writes it,
    /// and has its query timeout armed (`timeout`, else ``SQLConnectionConfiguration/queryTimeout``)
    /// from when it starts to be written. Returns the request's id for ``nextBatch(_:caller:)``.
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
        turns.expect(id)   // before the machine can answer
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
        // Cancelled while waiting: the machine takes the request out of its queue and fails it.
        // Unstructured: a cancellation handler runs synchronously, on any thread; it hops to the actor.
        try await turns.wait(id, onCancel: { Task { await self.abandon(id, reason: .cancelled) } })
    }

    // MARK: - Reading

    /// The events and rows of request `id` in order, taken several at a time so that a streaming
    /// reader crosses into the actor once per batch instead of once per row: waits for the
    /// first, then adds what the bytes already received hold (the socket is not read for them),
    /// up to ``batchRowLimit`` rows and ``batchEventLimit`` other events. `ended`: the request
    /// completed after these; `error`: what it failed with after these (deliver them first).
    /// A request abandoned (its cursor dropped or cancelled, see `RequestStateMachine/isAbandoned`)
    /// is the connection's to drain: its cursor gets `.cancelled` at once; a request no longer
    /// running whose end its cursor did not get (abandoned and drained) the same.
    ///
    /// `caller` (where the cursor's caller runs: ``ReadAheadStateMachine/Caller``): when it reads
    /// ahead and the batch neither ends
    /// nor fails the request, the next one is read and scanned at once, on the connection, while
    /// the caller takes this one, so that the connection's side of a read (receive, framing,
    /// token scan) runs beside the caller's decoding; the next call returns it. At most one batch
    /// is read ahead (at most ``batchRowLimit`` rows, about ``batchByteLimit`` bytes of rows or
    /// chunks, plus one socket read), by a task of its own (``readAhead(_:_:)``) that ends with
    /// it: taking it starts the next. So a server that sends forever still costs bounded memory.
    /// Who reads the socket is `ReadAheadStateMachine`'s to say: one reader at a time, and a
    /// drain asked while it is read goes on from that read (nobody waits for the socket). A
    /// caller cancelled while it waits for the batch read ahead gets `.cancelled` at once, and its
    /// request is cancelled (ATTENTION) and drained, as when it reads itself.
    func nextBatch(_ id: RequestID, caller: ReadAheadStateMachine.Caller = .connection) async -> ResponseBatch {
        // Only this request's own batch: another request's (read to its end while its caller was
        // still busy, after which this one could start) stays for its cursor.
        switch machine.nextBatchAsked(id) {
        case .take(let batch, let reader):
            if let reader { startReadingAhead(id, reader) }
            return batch
        case .wait(let serial):
            aheadTakers.expect(serial)
            do {
                return try await aheadTakers.wait(serial, cancellingWith: { CancelReason.cancelled.error })
            } catch {
                // Its task was cancelled while it waited: `.cancelled` at once; the request is
                // cancelled (ATTENTION) and drained (from the read going on: ``startDrain(_:)``).
                abandonNow(id, reason: .cancelled)
                return ResponseBatch(error: CancelReason.cancelled.error)
            }
        case .over:
            // Abandoned: the connection drains it (``startDrain(_:)``); over without its cursor seeing
            // the end (a cursor that got its end asks no more; one whose end was read ahead took
            // it above): abandoned and drained.
            return ResponseBatch(error: CancelReason.cancelled.error)
        case .read:
            let batch = await readBatch(id)
            switch machine.cursorRead(id, batch, caller: caller) {
            case .none: break
            case .startReader(let serial): startReadingAhead(id, serial)
            case .drain(let drained): spawnDrain(drained)   // asked while this cursor read: it goes on after it
            }
            return batch
        }
    }

    private func startReadingAhead(_ id: RequestID, _ serial: UInt64) {
        // Unstructured: it reads beside the caller, who goes on; what becomes of its batch is the
        // machine's to say (``ReadAheadStateMachine/batchRead(_:_:isRunning:)``), nobody awaits it.
        Task { await self.readAhead(id, serial) }
    }

    /// Reads batches of request `id` ahead of its cursor for reader `serial` (see
    /// `ReadAheadStateMachine`): each goes to the cursor if it waits (and the next is read at
    /// once), else is kept for it, and the task ends. Goes on as the drain asked meanwhile.
    private func readAhead(_ id: RequestID, _ serial: UInt64) async {
        while true {
            let batch = await readBatch(id, ahead: serial)
            switch machine.batchReadAhead(serial, of: id, batch) {
            case .discard, .keep:
                return
            case .deliver(let serial, let last):
                aheadTakers.resume(serial, with: .success(batch))
                if last { return }
            case .drain(let drained):
                await drainToTheEnd(drained)
                return
            }
        }
    }

    /// The one reading path (a cursor's, its reader ahead's, a drain's), by the one reader of
    /// the socket (``ReadAheadStateMachine/socket``). What the bytes hold for a request cancelled
    /// or abandoned is discarded by the state machine (`RequestStateMachine/forwardsResults`): no
    /// key is unwrapped for it.
    ///
    /// `ahead`: the serial of the reader ahead reading this batch, which nobody may be waiting
    /// for yet. It goes on reading while its caller does not wait for it and the batch has room
    /// (rows, events, and under ``batchByteLimit`` bytes received for it; never for a response
    /// read in parts, whose chunks are bounded per batch): fewer, fuller batches, fewer
    /// crossings. While it waits for bytes,
    /// what it holds is in the read-ahead state (`ReadAheadStateMachine/readWaits(_:holding:)`),
    /// which the caller takes when it comes (rows already received are never held back waiting
    /// for more).
    private func readBatch(_ id: RequestID, ahead serial: UInt64? = nil) async -> ResponseBatch {
        var batch = ResponseBatch()
        guard machine.isRunning(id) else { return ResponseBatch(error: CancelReason.cancelled.error) }
        var received = 0
        while true {
            let ranOut = collect(id, into: &batch)
            if let metadata = pendingDecryption {
                // Always Encrypted: the keys of the result set's encrypted columns, unwrapped
                // (through the cache, else a key store provider: I/O) before its rows are read.
                pendingDecryption = nil
                do {
                    resultDecryption = try await ResultDecryption.make(
                        for: metadata, keyStores: SQLColumnEncryptionKeyStores(connection: configuration.columnEncryptionKeyStoreProviders),
                        cache: SQLColumnEncryption.keyCache)
                } catch {
                    failDecryption(id, error, &batch)
                    return batch
                }
                if batch.ended || batch.error != nil { return batch }
                continue
            }
            if batch.ended || batch.error != nil { return batch }
            if !batch.items.isEmpty {
                guard let serial, !machine.isReadAheadAwaited(serial), received < Self.batchByteLimit,
                      batch.rowCount < Self.batchRowLimit, batch.items.count < Self.batchEventLimit,
                      id != partsRequest, machine.forwardsRows, ranOut else { return batch }
            }
            do {
                if let spent = reader.framer.takeSpent() { transport.giveBack(spent) }   // the next read's storage
                let bytes: [UInt8]
                if let serial {
                    // The caller may take what the batch holds while the read waits.
                    machine.readerAheadWaits(serial, holding: &batch)
                    defer {
                        batch = machine.readerAheadResumes(serial)
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
                // The reading task was cancelled: cancel on the server (the ATTENTION from a task of
                // its own: this one's cancellation would fail its write) and drain after this read.
                abandonNow(id, reason: .cancelled)
                batch.error = error
                return batch
            } catch {
                let failure = error as? SQLClientError ?? SQLClientError(.ioError, "reading failed: \(error)")
                performNow(machine.transportFailed(failure))
            }
        }
    }

    /// The row block a batch is filling (rows of one result set, in order): as their wire bytes
    /// (``WireRowBlock``, decoded when read), large values and rows split across packets
    /// included; as decoded values only for a row that came as a token (``ConnectionStateMachine``'s
    /// `.forwardRow`: read by ``ResponseReader/next()``, e.g. one begun when the message ended inside
    /// it), in a values block of its own, so rows stay in order.
    private struct BlockBuilder {
        var values: [SQLValue] = []
        var wire: WireRowBlock?
        var columns: SQLColumns?
        /// The batch has its most rows or bytes of rows (the wire scan said so).
        var full = false
        /// A response read in parts: its rows go out as parts, not in blocks.
        let parts: Bool
        /// Bytes of chunks of a response read in parts in this batch.
        var partBytes = 0
    }

    /// What the buffered bytes held next, for ``collect(_:into:)``.
    private enum Step {
        /// Rows went into the block (or the scan moved on): read on.
        case rows
        case token(Token)
        /// A piece of a row of a response read in parts.
        case part(TokenStreamDecoder.RowPart)
        case messageEnded
        case needBytes
        case failed(SQLClientError)
    }

    /// Adds to `batch` what the buffered bytes hold for request `id`, synchronously: one switch
    /// over what the reader returns next (``nextStep(_:_:)``), up to ``batchRowLimit`` rows and
    /// ``batchEventLimit`` other items (a response read in parts: about ``batchByteLimit`` bytes
    /// of chunks). True when the buffered bytes ran out: only then does ``readBatch(_:ahead:)`` read
    /// on (a batch filled from buffered bytes goes out: the rest may be buffered already).
    private func collect(_ id: RequestID, into batch: inout ResponseBatch) -> Bool {
        var block = BlockBuilder(parts: id == partsRequest)
        reader.decoder.startResponse(rows: block.parts ? .parts : .whole)   // the same for every batch of a response
        reader.decoder.assemblesLargeBinaryAsData = id == dataRequest
        // Parts: room for a batch's chunks at once, not grown by doubling from 1 (issue 43 item 2).
        if block.parts && batch.items.isEmpty { batch.items.reserveCapacity(64) }
        while hasRoom(block, batch) {
            if machine.state == .closed {
                flush(&block, &batch)
                batch.error = closedError
                return false
            }
            switch nextStep(&block, &batch) {
            case .rows:
                continue
            case .token(let token):
                let action = machine.tokenReceived(token)
                if case .none = action { continue }
                if handle(action, id, &block, &batch) { return false }
                if pendingDecryption != nil {
                    flush(&block, &batch)
                    return false   // readBatch unwraps the keys, then collects on
                }
            case .part(let part):
                if let failure = append(part, &block, &batch) {
                    flush(&block, &batch)
                    failDecryption(id, failure, &batch)
                    return false
                }
            case .messageEnded:
                // The read storage kept is let go of: an idle connection keeps none.
                _ = reader.framer.takeSpent()
                transport.giveBack([])
                // Every action is performed (after the request's end come its timers' and the
                // next request's start), then the batch ends if the request did.
                var over = false
                for action in machine.messageEnded(now: clock.now()) where handle(action, id, &block, &batch) { over = true }
                if over { return false }
            case .needBytes:
                flush(&block, &batch)
                return true
            case .failed(let error):
                if handle(machine.transportFailed(error), id, &block, &batch) { return false }
            }
        }
        flush(&block, &batch)
        return false
    }

    private func hasRoom(_ block: BlockBuilder, _ batch: ResponseBatch) -> Bool {
        guard batch.items.count < Self.batchEventLimit else { return false }
        if block.parts { return block.partBytes < Self.batchByteLimit }
        return !block.full && batch.rowCount < Self.batchRowLimit
    }

    /// The next step: a response read in parts, part by part; else runs of rows straight from
    /// the decoder while they are forwarded as they are (see `ConnectionStateMachine.forwardsRows`),
    /// anything else a token at a time.
    private func nextStep(_ block: inout BlockBuilder, _ batch: inout ResponseBatch) -> Step {
        if block.parts {
            do {
                switch try reader.nextPart() {
                case .part(.token(let token)): return .token(token)
                case .part(let part): return .part(part)
                case .messageEnded: return .messageEnded
                case .needBytes: return .needBytes
                }
            } catch {
                return .failed(error)
            }
        }
        // A result set with encrypted columns takes the token path: each row is decrypted whole.
        if machine.forwardsRows, resultDecryption == nil, let columns = currentColumns,
           let step = scanRows(columns, &block, &batch) { return step }
        do {
            switch try reader.next() {
            case .token(let token): return .token(token)
            case .messageEnded: return .messageEnded
            case .needBytes: return .needBytes
            }
        } catch {
            return .failed(error)
        }
    }

    /// Runs of whole buffered rows of `columns` in one pass into the block; nil: the token path
    /// (``ResponseReader/next()``) reads what comes next.
    private func scanRows(_ columns: SQLColumns, _ block: inout BlockBuilder, _ batch: inout ResponseBatch) -> Step? {
        if block.columns !== columns {
            flush(&block, &batch)
            block.columns = columns
        }
        if block.wire == nil, var wire = reader.decoder.makeWireRowBlock() {
            emitValues(&block, &batch)   // rows that came as tokens before these
            // Room for half as many rows and bytes again as the result's previous block held (at
            // least 256 rows; at most the batch's limits and a row): a block of a long result,
            // wide rows (vectors) included, seldom reallocates, and commits no more than that.
            let hint = reader.wireBlockHint
            let rows = Swift.min(Swift.max(hint.rows + hint.rows / 2, 256), Self.batchRowLimit)
            let perRow = hint.rows > 0 ? hint.bytes / hint.rows + 1 : 8 * columns.count
            let bytes = hint.rows > 0 ? Swift.min(hint.bytes + hint.bytes / 2 + perRow, Self.batchByteLimit + perRow) : rows * perRow
            // Made when rows are appended (none for a large value's row being read, issue 43).
            wire.reserveOnAppend(rows: rows, bytesPerRow: bytes / rows + 1)
            reader.decoder.provideRoom(&wire)
            block.wire = wire
        }
        guard var wire = block.wire else { return nil }
        block.wire = nil   // uniquely referenced while it grows
        let (n, end) = reader.decoder.appendBufferedRows(to: &wire, limit: Self.batchRowLimit - batch.rowCount,
                                                         byteLimit: Self.batchByteLimit)
        block.wire = wire
        batch.rowCount += n
        switch end {
        case .limit:
            block.full = true
            return .rows
        case .needBytes:
            // The buffer the block's rows are lent from cannot take another packet: the block
            // ends here (it takes the buffer; the decoder goes on in a recycled one) rather than
            // the buffer growing, a copy of its rows into fresh pages (issue 43: 7-18 % faster
            // on vector rows).
            if reader.decoder.lendsRows(withRoomUnder: reader.framer.maximumPacketSize) { emitWire(&block, &batch) }
            do {
                if try reader.cutPacket() { return .rows }
            } catch {
                return .failed(error)
            }
            // The message ended inside a row: the token path reports it.
            return reader.endOfMessagePending ? nil : .needBytes
        case .otherToken:
            return nil
        case .incremental:
            // A malformed row (the token path throws its error), or a row that comes as a token.
            emitWire(&block, &batch)
            return nil
        }
    }

    /// Adds a part of a response read in parts (while rows are forwarded). An encrypted column's
    /// value is decrypted: a large one's chunks are gathered (up to ``SQLConnectionConfiguration/maximumValueSize``)
    /// and its plaintext goes out as one `.value` at its end. Answers the decryption's error, if any.
    private func append(_ part: TokenStreamDecoder.RowPart, _ block: inout BlockBuilder,
                        _ batch: inout ResponseBatch) -> ColumnEncryptionError? {
        guard machine.forwardsRows, currentColumns != nil else { return nil }
        let streamed: SQLStreamedPart
        switch part {
        case .value(let column, let value):
            if let decryption = resultDecryption, decryption.isEncrypted(column) {
                do { streamed = .value(column: column, try decryption.decrypt(value, column: column)) } catch { return error }
            } else {
                streamed = .value(column: column, value)
            }
        case .chunk(let column, let chunk):
            block.partBytes += chunk.count
            // (No copy of `resultDecryption` is held while its chunks grow: they grow in place.)
            if resultDecryption?.isEncrypted(column) == true {
                let (total, overflow) = (resultDecryption?.pendingChunks[column]?.count ?? 0).addingReportingOverflow(chunk.count)
                let cap = configuration.maximumValueSize
                if overflow || total > cap {
                    return ColumnEncryptionError(.invalidCiphertext, "an encrypted value longer than maximumValueSize (\(cap) bytes)",
                                                 column: resultDecryption?.decryptor.columns[column].name)
                }
                resultDecryption?.pendingChunks[column, default: []] += chunk
                return nil
            }
            streamed = .chunk(column: column, chunk)
        case .largeValueEnd(let column):
            if resultDecryption?.isEncrypted(column) == true {
                let ciphertext = resultDecryption?.pendingChunks.removeValue(forKey: column) ?? []
                guard let decryption = resultDecryption else { return nil }
                do { streamed = .value(column: column, try decryption.decrypt(ciphertext: ciphertext, column: column)) } catch { return error }
            } else {
                streamed = .valueEnd(column: column)
            }
        case .rowEnd:
            batch.rowCount += 1
            streamed = .rowEnd
        case .token: return nil   // (a step of its own)
        }
        batch.items.append(.part(streamed))
        return nil
    }

    /// A cell or key of the result could not be decrypted: the request fails with the typed error
    /// (``ColumnEncryptionError/sqlClientError``); the rest of its response is cancelled on the
    /// server and drained.
    private func failDecryption(_ id: RequestID, _ error: ColumnEncryptionError, _ batch: inout ResponseBatch) {
        resultDecryption = nil
        pendingDecryption = nil
        batch.error = error.sqlClientError
        // Unstructured: abandoned once this read has handed its batch, with the error, over
        // (abandoned now, the drain would go on from this read and discard that batch).
        Task { await self.abandon(id) }
    }

    /// Performs `action` for the batch of request `id`; true when the batch ends (the request
    /// completed, was cancelled or failed, or the connection closed).
    private func handle(_ action: ConnectionStateMachine.Action, _ id: RequestID,
                        _ block: inout BlockBuilder, _ batch: inout ResponseBatch) -> Bool {
        switch action {
        case .forwardColumns(let metadata):
            flush(&block, &batch)
            reader.wireBlockHint = (0, 0)
            resultDecryption = nil
            var columns = metadata.columns
            if session.columnEncryptionVersion > 0, !requestsWithoutDecryption.contains(id), ResultDecryption.needed(for: metadata) {
                columns = ResultDecryption.plaintextColumns(columns)
                pendingDecryption = metadata
            }
            let cols = SQLColumns(columns.map(SQLColumn.init))
            currentColumns = cols
            batch.items.append(.event(.columns(cols)))
        case .forwardRow(var rowValues) where block.parts:
            if let failure = decrypt(&rowValues) {
                flush(&block, &batch)
                failDecryption(id, failure, &batch)
                return true
            }
            for (column, value) in rowValues.enumerated() { batch.items.append(.part(.value(column: column, value))) }
            batch.items.append(.part(.rowEnd))
            batch.rowCount += 1
        case .forwardRow(var rowValues):
            guard let columns = currentColumns else { return false }
            if let failure = decrypt(&rowValues) {
                flush(&block, &batch)
                failDecryption(id, failure, &batch)
                return true
            }
            if block.columns !== columns {
                flush(&block, &batch)
                block.columns = columns
            }
            emitWire(&block, &batch)
            block.values.append(contentsOf: rowValues)
            batch.rowCount += 1
        case .forwardStatementDone(let count):
            flush(&block, &batch)
            currentColumns = nil
            resultDecryption = nil
            batch.items.append(.event(.statementDone(rowsAffected: count.map { Int(clamping: $0) })))
        case .forwardMessage(let message):
            flush(&block, &batch)
            // Always Encrypted: stale parameter encryption metadata; described again next time.
            if message.isError, message.number == ParameterEncryptionPlan.staleMetadataError { parameterEncryptionPlans = [:] }
            deliver(message)
            batch.items.append(.event(.message(message)))
        case .forwardReturnStatus(let status):
            flush(&block, &batch)
            batch.items.append(.event(.returnStatus(status)))
        case .requestCompleted(let rid, let error, let values):
            flush(&block, &batch)
            currentColumns = nil
            resultDecryption = nil
            let decrypts = requestsWithoutDecryption.remove(rid) == nil
            let keys = outputParameterKeys.removeValue(forKey: rid)
            if rid == id {
                if let error { batch.error = error } else { batch.ended = true }
                // RETURNVALUE tokens (OUTPUT parameters): after the last statement.
                if error == nil, !values.isEmpty {
                    do {
                        for value in try outputValues(values, keys: keys, decrypts: decrypts) {
                            batch.items.append(.event(.outputValue(SQLOutputValue(value))))
                        }
                    } catch {
                        batch.ended = false
                        batch.error = error
                    }
                }
                return true
            }
        case .requestCancelled(let rid, let error):
            flush(&block, &batch)
            currentColumns = nil
            resultDecryption = nil
            requestsWithoutDecryption.remove(rid)
            outputParameterKeys[rid] = nil
            if rid == id {
                batch.error = error
                return true
            }
        case .closeConnection:
            flush(&block, &batch)
            performNow(action)
            batch.error = closedError
            return true
        default:
            performNow(action)
        }
        return false
    }

    /// Decrypts the encrypted cells of a row of the current result set; the error, if any.
    private func decrypt(_ row: inout [SQLValue]) -> ColumnEncryptionError? {
        guard let decryption = resultDecryption else { return nil }
        do { try decryption.decrypt(row: &row) } catch { return error }
        return nil
    }

    private func emitWire(_ block: inout BlockBuilder, _ batch: inout ResponseBatch) {
        if let columns = block.columns, var wire = block.wire {
            block.wire = nil
            reader.decoder.settle(&wire)   // its rows lent from the decoder's buffer move in
            guard !wire.isEmpty else { return }
            batch.largePlainRows = !reader.decoder.rowsHaveText && wire.byteCount >= Swift.max(wire.rowCount, 1) &* Self.largeRowBytes
            batch.items.append(.rows(SQLRowBlock(storage: SQLRowStorage(columns: columns, wire: wire, recycler: reader.decoder.recycler))))
            reader.wireBlockHint = (Swift.min(wire.rowCount, Self.batchRowLimit), Swift.min(wire.byteCount, Self.batchByteLimit))
        }
        block.wire = nil
    }

    private func emitValues(_ block: inout BlockBuilder, _ batch: inout ResponseBatch) {
        if let columns = block.columns, !block.values.isEmpty {
            batch.items.append(.rows(SQLRowBlock(columns: columns, values: block.values)))
            block.values = []
        }
    }

    /// Ends the block: what it holds goes into the batch.
    private func flush(_ block: inout BlockBuilder, _ batch: inout ResponseBatch) {
        emitWire(&block, &batch)
        emitValues(&block, &batch)
        block.columns = nil
    }

    // MARK: - Abandoning

    /// The reader of request `id` is gone (its stream dropped, its task cancelled): a queued
    /// request is taken out; a running one is cancelled on the server (ATTENTION) and its
    /// response drained in the background, so that the connection can run the next request.
    func abandon(_ id: RequestID, reason: CancelReason = .abandoned) async {
        await perform(abandonment(id, reason: reason))
    }

    /// ``abandon(_:reason:)`` without suspending, on the actor (its ATTENTION is sent from a task of its own).
    func abandonNow(_ id: RequestID, reason: CancelReason) {
        for action in abandonment(id, reason: reason) { performNow(action) }
    }

    /// The machine's actions for abandoning request `id`; what was read ahead for its cursor, which
    /// is gone, is let go of at once when no drain will follow (the request is over, or the connection closed).
    private func abandonment(_ id: RequestID, reason: CancelReason) -> [ConnectionStateMachine.Action] {
        if !machine.isRunning(id) || machine.state == .closed { _ = startDrain(id) }
        let actions = reason == .cancelled ? machine.cancelRequested(id, reason: .cancelled, now: clock.now()) : []
        return actions + machine.requestAbandoned(id, now: clock.now())
    }

    /// Lets go of what was read ahead for request `id`'s cursor, which is gone (even when it holds
    /// the end), and, when the request still runs, has it drained: true when the socket is the
    /// drain's now (the caller reads the request to its end: ``drainToTheEnd(_:)``); false when
    /// it is being read for it (that read goes on as the drain, see `ReadAheadStateMachine`) or
    /// there is nothing to drain.
    func startDrain(_ id: RequestID) -> Bool {
        let action = machine.drainAsked(id)
        if let serial = action.failWaitingCursor {
            aheadTakers.resume(serial, with: .success(ResponseBatch(error: CancelReason.cancelled.error)))
        }
        return action.drainNow
    }

    func spawnDrain(_ id: RequestID) {
        // Unstructured: nobody waits for a drain; the socket is its already (`ReadAheadStateMachine.socket`).
        Task { await self.drainToTheEnd(id) }
    }

    /// Reads abandoned request `id` to its end (the attention acknowledgement), discarding it,
    /// the socket being the drain's; then lets go of the socket.
    func drainToTheEnd(_ id: RequestID) async {
        while machine.isRunning(id), machine.state != .closed {
            let batch = await readBatch(id)
            if batch.ended || batch.error != nil { break }
        }
        machine.drainEnded()
    }

    // MARK: - Results

    /// The RETURNVALUE tokens (OUTPUT parameters, UDF results) of a completed request; encrypted
    /// ones (Always Encrypted) decrypted with the key their parameter was encrypted with (`keys`,
    /// by lowercased name), typed by their base TYPE_INFO, unless the request does not decrypt.
    /// - Throws: ``SQLClientError`` with a ``ColumnEncryptionError`` underlying naming the
    ///   parameter when an encrypted value cannot be decrypted.
    private func outputValues(_ values: [ReturnValue], keys: [String: AEADAes256CbcHmacSha256]?,
                              decrypts: Bool) throws -> [ReturnValue] {
        var values = values
        guard session.columnEncryptionVersion > 0, decrypts else { return values }
        for index in values.indices where values[index].flags.contains(.encrypted) {
            guard let crypto = values[index].cryptoMetadata else { continue }
            do {
                values[index] = try OutputParameterDecryption.decrypt(values[index], crypto: crypto,
                                                                      cipher: keys?[values[index].name.lowercased()])
            } catch {
                throw error.sqlClientError
            }
        }
        return values
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

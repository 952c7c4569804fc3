import Foundation
import TDS

/// Where a bulk load takes its rows from: called once per row, nil at the end. A `Sequence`
/// is read without an `await` per row. (Usable from the inlinable `bulkInsert` overloads.)
@usableFromInline
enum BulkRowSource {
    case sync(([BulkLoadColumn]) throws -> [SQLValue]?)
    case async(([BulkLoadColumn]) async throws -> [SQLValue]?)

}

/// The BULKLOAD message body of one batch, produced piece by piece ([MS-TDS] 2.2.6.1):
/// COLMETADATA, then rows encoded one at a time until about `chunkSize` bytes are ready (a
/// packet's worth), then, when the batch is full or the rows end, DONE. Only the piece being
/// built and one row are held.
///
/// A row that does not fit its column, or a source that throws, makes ``next()`` throw: the
/// message is then ended with EOM|IGNORE, so nothing of the batch is inserted.
final class BulkLoadBody: @unchecked Sendable {   // used by one task at a time: the load's
    private var encoder: BulkLoadEncoder
    private let source: BulkRowSource
    private var first: [SQLValue]?
    private let batchSize: Int
    private let chunkSize: Int
    private var started = false
    private var finished = false
    /// The source returned nil: no row is left after this batch.
    private(set) var exhausted = false
    /// Rows encoded into this batch.
    var rowCount: Int { encoder.rowCount }
    /// The number of the next row of the load (1-based).
    var nextRowNumber: Int { encoder.nextRowNumber }

    init(encoder: BulkLoadEncoder, first: [SQLValue], source: BulkRowSource, batchSize: Int, chunkSize: Int) {
        self.encoder = encoder
        self.first = first
        self.source = source
        self.batchSize = batchSize
        self.chunkSize = max(chunkSize, 512)
    }

    /// The next piece of the body, nil after DONE.
    /// - Throws: ``BulkLoadValueError`` for a row that does not fit; the source's error as
    ///   ``BulkRowSourceError`` (with the row number).
    func next() async throws -> [UInt8]? {
        if let failure { throw failure }
        guard !finished else { return nil }
        var w = ByteWriter(capacity: chunkSize + 256)
        do {
            try await fill(&w)
        } catch {
            // The rows before the failing one go out first, so that the message has begun and is
            // ended with EOM|IGNORE; the error comes on the next call.
            guard w.count > 0 else { throw error }
            failure = error
        }
        return w.bytes
    }

    /// An error found while building the last piece, thrown by the next ``next()``.
    private var failure: (any Error)?

    private func fill(_ w: inout ByteWriter) async throws {
        // The encoder is worked on as a local copy, written back when the piece is done (or on a
        // throw), so that a row costs no exclusivity check on this class's stored property.
        var encoder = self.encoder
        defer { self.encoder = encoder }
        let columns = encoder.columns
        if !started {
            started = true
            encoder.encodeMetadata(into: &w)
        }
        if let f = first {
            first = nil
            try encoder.encodeRow(f, into: &w)
        }
        let chunkSize = self.chunkSize, batchSize = self.batchSize
        switch source {
        case .sync(let next):
            while w.count < chunkSize, encoder.rowCount < batchSize {
                let row: [SQLValue]?
                do { row = try next(columns) } catch { throw BulkRowSourceError(row: encoder.nextRowNumber, error: error) }
                guard let row else { exhausted = true; break }
                try encoder.encodeRow(row, into: &w)
            }
        case .async(let next):
            while w.count < chunkSize, encoder.rowCount < batchSize {
                let row: [SQLValue]?
                do { row = try await next(columns) } catch { throw BulkRowSourceError(row: encoder.nextRowNumber, error: error) }
                guard let row else { exhausted = true; break }
                try encoder.encodeRow(row, into: &w)
            }
        }
        if exhausted || encoder.rowCount >= batchSize {
            encoder.encodeDone(into: &w)
            finished = true
        }
    }
}

/// The iterator of a bulk load's rows, for the row source's closure: held in memory of its own
/// so that each `next()` is a plain mutating call, where a `var` captured by the escaping
/// closure would cost a dynamic exclusivity check (a runtime call) per row. Used by one task at a
/// time, as the load's body is; freed with the closure that holds it.
@usableFromInline
final class BulkRowIterator<Iterator> {
    @usableFromInline let pointer: UnsafeMutablePointer<Iterator>

    @inlinable
    init(_ iterator: Iterator) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: iterator)
    }

    @inlinable
    deinit {
        pointer.deinitialize(count: 1)
        pointer.deallocate()
    }
}

/// A bulk load into a column encrypted with Always Encrypted that cannot go ahead: the column
/// and the `.bulkCopyEncryptedColumn` error.
struct BulkCopyEncryptedColumnError: Error {
    var column: String
    var error: SQLClientError
}

/// A row source that threw, at row `row`.
struct BulkRowSourceError: Error {
    var row: Int
    var error: any Error
}

/// The steps of one bulk load on a connection: the destination's columns, then per batch
/// `INSERT BULK` (a SQL batch) and a BULKLOAD message of the batch's rows, whose DONE count is
/// the rows the server inserted ([MS-TDS] 2.2.6.1).
extension SQLConnection {
    @usableFromInline
    func runBulkCopy(table: String, columns spec: [SQLBulkColumn]?, options: SQLBulkCopyOptions,
                     next: BulkRowSource) async throws -> SQLBulkCopyResult {
        var committed = 0
        var batches = 0
        func failed(_ error: SQLClientError, row: Int? = nil, column: String? = nil) -> SQLBulkCopyError {
            SQLBulkCopyError(rowsCommitted: committed, row: row, column: column, error: error)
        }
        func failed(source e: BulkRowSourceError) -> SQLBulkCopyError {
            failed(SQLClientError(.invalidParameter, "row \(e.row): \(e.error)", underlying: e.error), row: e.row)
        }
        let parts: [String]
        do {
            parts = try SQLIdentifier.parts(of: table)
        } catch {
            throw failed(SQLClientError(.invalidParameter, "bad table name: \(error.detail)", underlying: error))
        }
        let quoted = parts.map(SQLIdentifier.quoted).joined(separator: ".")
        let columns: [BulkLoadColumn]
        do {
            columns = try await bulkColumns(quotedTable: quoted, spec: spec, keepIdentity: options.keepIdentity,
                                            allowEncrypted: options.allowEncryptedValueModifications, timeout: options.timeout)
        } catch let e as BulkCopyEncryptedColumnError {
            throw failed(e.error, column: e.column)
        } catch let e as SQLClientError {
            throw failed(e)
        }
        let statement: BulkLoadStatement
        do {
            statement = try BulkLoadStatement(table: table, columns: columns, options: options.statementOptions)
        } catch {
            throw failed(SQLClientError(.invalidParameter, "INSERT BULK: \(error.detail)", underlying: error))
        }
        let batchSize = max(options.batchSize ?? Int.max, 1)
        var rowNumber = 1
        func take() async throws -> [SQLValue]? {
            switch next {
            case .sync(let f): return try f(columns)
            case .async(let f): return try await f(columns)
            }
        }
        var pending: [SQLValue]?
        do {
            pending = try await take()
        } catch {
            throw failed(source: BulkRowSourceError(row: 1, error: error))
        }
        while let first = pending {
            do {
                _ = try await run(.sqlBatch(statement.text), timeout: options.timeout)
            } catch let e as SQLClientError {
                throw failed(e)
            }
            // With column encryption negotiated, COLMETADATA carries a CEK table (empty: no column
            // is sent with CryptoMetaData; encrypted columns are refused or sent as varbinary).
            let cekTable: [CEKEntry]? = session.columnEncryptionVersion > 0 ? [] : nil
            let body = BulkLoadBody(encoder: BulkLoadEncoder(columns: columns, version: session.tdsVersion, tableName: quoted,
                                                             firstRowNumber: rowNumber, cekTable: cekTable),
                                    first: first, source: next, batchSize: batchSize, chunkSize: packetSizeForBulkLoad - 8)
            let inserted: Int
            do {
                inserted = try await sendBulkLoad(body, timeout: options.timeout)
            } catch let e as BulkLoadValueError {
                throw failed(SQLClientError(.invalidParameter, e.description, underlying: e), row: e.row, column: e.columnName)
            } catch let e as BulkRowSourceError {
                throw failed(source: e)
            } catch let e as SQLClientError {
                throw failed(e)
            }
            committed += inserted
            batches += 1
            rowNumber = body.nextRowNumber
            if body.exhausted { break }
            do {
                pending = try await take()
            } catch {
                throw failed(source: BulkRowSourceError(row: rowNumber, error: error))
            }
        }
        return SQLBulkCopyResult(rowsCopied: committed, batches: batches, columns: columns.map(\.name))
    }

    /// A BULKLOAD body's pieces: one packet each.
    var packetSizeForBulkLoad: Int { max(session.packetSize, Packet.minimumSize) }

    /// Sends one batch's BULKLOAD message through the connection's streamed-body write path
    /// (``sendStreamed(type:timeout:body:)``): each piece goes out in packets as soon as it is
    /// produced. Returns the DONE count (rows inserted). When the body throws (a row that does not
    /// fit, a failing source), the message is ended with EOM|IGNORE, so the server discards the
    /// whole batch, and the error is rethrown.
    func sendBulkLoad(_ body: BulkLoadBody, timeout: Duration?) async throws -> Int {
        let result = try await sendStreamed(type: .bulkLoad, timeout: timeout) { try await body.next() }
        var count = 0
        for statement in result.statements {
            switch statement {
            case .rowsAffected(let n?): count += n
            case .resultSet(let set): count += set.rowsAffected ?? 0
            default: break
            }
        }
        return count
    }

    /// The columns to load: the caller's when every one has a type, else the table's metadata
    /// (`SELECT TOP 0 * FROM table`), filtered to `spec` by name (case-insensitive) in its order.
    ///
    /// A column the metadata marks encrypted (fEncrypted, Always Encrypted) is refused
    /// (``BulkCopyEncryptedColumnError``) unless `allowEncrypted`. When allowed, it travels as the
    /// varbinary the server describes its ciphertext with; on a connection that negotiated column
    /// encryption the CryptoMetaData such a column would need is not sent by this client, so it is
    /// refused there too, saying to copy over a connection without column encryption.
    func bulkColumns(quotedTable: String, spec: [SQLBulkColumn]?, keepIdentity: Bool, allowEncrypted: Bool,
                     timeout: Duration?) async throws -> [BulkLoadColumn] {
        if let spec, !spec.isEmpty, spec.allSatisfy({ $0.type != nil }) {
            return spec.map { BulkLoadColumn(name: $0.name, type: $0.type ?? .int, nullable: $0.isNullable) }
        }
        let sets = try await run(.sqlBatch("SELECT TOP 0 * FROM " + quotedTable), timeout: timeout).resultSets
        guard let table = sets.first?.columns else {
            throw SQLClientError(.bulkCopyInvalidColumns, "\(quotedTable) returned no columns")
        }
        let metadata = table.map {
            ColumnMetadata(userType: $0.userType, flags: $0.flags, typeInfo: $0.typeInfo, name: $0.name)
        }
        let negotiated = session.columnEncryptionVersion > 0
        func checkEncryption(_ c: ColumnMetadata) throws(BulkCopyEncryptedColumnError) {
            guard c.flags.contains(.encrypted) else { return }
            guard allowEncrypted else {
                throw BulkCopyEncryptedColumnError(column: c.name, error: SQLClientError(.bulkCopyEncryptedColumn,
                    "column [\(c.name)] of \(quotedTable) is encrypted (Always Encrypted): a bulk load does not encrypt values;"
                    + " to copy ciphertext as it is, set SQLBulkCopyOptions.allowEncryptedValueModifications"))
            }
            guard !negotiated else {
                throw BulkCopyEncryptedColumnError(column: c.name, error: SQLClientError(.bulkCopyEncryptedColumn,
                    "column [\(c.name)] of \(quotedTable) is encrypted: ciphertext is copied as it is over a connection"
                    + " without columnEncryption (where it reads and writes as varbinary), not over this one"))
            }
        }
        guard let spec, !spec.isEmpty else {
            for c in metadata where BulkLoadColumn(tableColumn: c, includeIdentity: keepIdentity) != nil { try checkEncryption(c) }
            let all = metadata.compactMap { BulkLoadColumn(tableColumn: $0, includeIdentity: keepIdentity) }
            guard !all.isEmpty else { throw SQLClientError(.bulkCopyInvalidColumns, "\(quotedTable) has no column a bulk load can write") }
            return all
        }
        return try spec.map { wanted throws -> BulkLoadColumn in
            guard let c = metadata.first(where: { $0.name == wanted.name })
                    ?? metadata.first(where: { $0.name.caseInsensitiveCompare(wanted.name) == .orderedSame }) else {
                throw SQLClientError(.bulkCopyInvalidColumns, "\(quotedTable) has no column [\(wanted.name)]")
            }
            try checkEncryption(c)
            if let type = wanted.type { return BulkLoadColumn(name: c.name, type: type, nullable: wanted.isNullable) }
            return BulkLoadColumn(name: c.name, type: c.typeInfo, nullable: c.isNullable)
        }
    }
}

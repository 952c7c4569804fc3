import Foundation
import TDS

/// The steps of one bulk load on a connection: the destination's columns, then per batch
/// `INSERT BULK` (a SQL batch) and a BULKLOAD message of the batch's rows, whose DONE count is
/// the rows the server inserted ([MS-TDS] 2.2.6.1).
extension SQLConnection {
    func runBulkCopy(table: String, columns spec: [SQLBulkColumn]?, options: SQLBulkCopyOptions,
                     next: ([BulkLoadColumn]) async throws -> [SQLValue]?) async throws -> SQLBulkCopyResult {
        var committed = 0
        var batches = 0
        func failed(_ error: SQLClientError, row: Int? = nil, column: String? = nil) -> SQLBulkCopyError {
            SQLBulkCopyError(rowsCommitted: committed, row: row, column: column, error: error)
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
                                            timeout: options.timeout)
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
        var pending: [SQLValue]?
        do {
            pending = try await next(columns)
        } catch {
            throw failed(SQLClientError(.invalidParameter, "row 1: \(error)", underlying: error), row: 1)
        }
        while let first = pending {
            do {
                _ = try await executeBatch(statement.text)
            } catch let e as SQLClientError {
                throw failed(e)
            }
            var encoder = BulkLoadEncoder(columns: columns, version: session.tdsVersion, tableName: quoted,
                                          firstRowNumber: rowNumber)
            var body = ByteWriter(capacity: packetSizeForBulkLoad)
            encoder.encodeMetadata(into: &body)
            let metadataSize = body.count
            var valueError: BulkLoadValueError?
            var row: [SQLValue]? = first
            var sourceError: (any Error)?
            while let values = row {
                do {
                    try encoder.encodeRow(values, into: &body)
                } catch {
                    valueError = error
                    break
                }
                if encoder.rowCount >= batchSize { break }
                do { row = try await next(columns) } catch { sourceError = error; break }
            }
            if valueError != nil || sourceError != nil {
                // Nothing of this batch reaches the server: end the announced load with no rows.
                body.bytes.removeLast(body.count - metadataSize)
            }
            encoder.encodeDone(into: &body)
            let inserted: Int
            do {
                inserted = try await sendBulkLoad(body.bytes, timeout: options.timeout)
            } catch let e as SQLClientError {
                throw failed(e)
            }
            if let valueError {
                throw failed(SQLClientError(.invalidParameter, valueError.description, underlying: valueError),
                             row: valueError.row, column: valueError.columnName)
            }
            if let sourceError {
                let at = encoder.nextRowNumber
                throw failed(SQLClientError(.invalidParameter, "row \(at): \(sourceError)",
                                            underlying: sourceError), row: at)
            }
            committed += inserted
            batches += 1
            rowNumber = encoder.nextRowNumber
            do {
                pending = try await next(columns)
            } catch {
                throw failed(SQLClientError(.invalidParameter, "row \(rowNumber): \(error)",
                                            underlying: error), row: rowNumber)
            }
        }
        return SQLBulkCopyResult(rowsCopied: committed, batches: batches, columns: columns.map(\.name))
    }

    /// A BULKLOAD body's first allocation: one packet.
    var packetSizeForBulkLoad: Int { max(session.packetSize, Packet.minimumSize) }

    /// Sends one BULKLOAD message and returns the DONE count (rows inserted).
    ///
    /// Temporary: the body is built whole for its batch and sent through the request path; with
    /// the connection's streamed-body entry point it goes out packet by packet as rows are encoded.
    func sendBulkLoad(_ body: [UInt8], timeout: Duration?) async throws -> Int {
        let id = try await startRequest(.bulkLoad(body), timeout: timeout)
        var count = 0
        while let event = try await nextEvent(id) {
            if case .statementDone(let n?) = event { count += n }
        }
        return count
    }

    /// The columns to load: the caller's when every one has a type, else the table's metadata
    /// (`SELECT TOP 0 * FROM table`), filtered to `spec` by name (case-insensitive) in its order.
    func bulkColumns(quotedTable: String, spec: [SQLBulkColumn]?, keepIdentity: Bool,
                     timeout: Duration?) async throws -> [BulkLoadColumn] {
        if let spec, !spec.isEmpty, spec.allSatisfy({ $0.type != nil }) {
            return spec.map { BulkLoadColumn(name: $0.name, type: $0.type ?? .int, nullable: $0.isNullable) }
        }
        let sets = try await executeBatch("SELECT TOP 0 * FROM " + quotedTable).resultSets
        guard let table = sets.first?.columns else {
            throw SQLClientError(.bulkCopyInvalidColumns, "\(quotedTable) returned no columns")
        }
        let metadata = table.map {
            ColumnMetadata(userType: $0.userType, flags: $0.flags, typeInfo: $0.typeInfo, name: $0.name)
        }
        guard let spec, !spec.isEmpty else {
            let all = metadata.compactMap { BulkLoadColumn(tableColumn: $0, includeIdentity: keepIdentity) }
            guard !all.isEmpty else { throw SQLClientError(.bulkCopyInvalidColumns, "\(quotedTable) has no column a bulk load can write") }
            return all
        }
        return try spec.map { wanted throws(SQLClientError) -> BulkLoadColumn in
            guard let c = metadata.first(where: { $0.name == wanted.name })
                    ?? metadata.first(where: { $0.name.caseInsensitiveCompare(wanted.name) == .orderedSame }) else {
                throw SQLClientError(.bulkCopyInvalidColumns, "\(quotedTable) has no column [\(wanted.name)]")
            }
            if let type = wanted.type { return BulkLoadColumn(name: c.name, type: type, nullable: wanted.isNullable) }
            return BulkLoadColumn(name: c.name, type: c.typeInfo, nullable: c.isNullable)
        }
    }
}

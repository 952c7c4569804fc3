/// An incremental decoder of a BULKLOAD message body ([MS-TDS] 2.2.6.1): COLMETADATA, then ROW
/// tokens, then DONE, enforced in that order. Feed bytes as packets arrive with ``append(_:)``
/// and take items with ``next()``; nothing but the row being decoded is buffered, so a server
/// can count a million rows without holding them.
///
/// COLMETADATA is read in the bulk client form (TableName of text/ntext/image as one
/// US_VARCHAR); ROW and DONE by ``TokenStreamDecoder`` for those columns. Resumable: the same
/// items whether the bytes come whole, byte by byte or in random pieces.
public struct BulkLoadReader: Sendable {
    public enum Item: Hashable, Sendable {
        case metadata([ColumnMetadata])
        case row([SQLValue])
        case done(Done)
    }

    public let version: TDSVersion
    private var decoder: TokenStreamDecoder
    private var header: [UInt8] = []
    private var sawMetadata = false
    private var sawDone = false
    /// The columns of the COLMETADATA read (empty before).
    public private(set) var columns: [ColumnMetadata] = []
    /// ROW tokens read so far.
    public private(set) var rowCount = 0
    /// Departures from [MS-TDS] that the reader accepted, as a sender's quirks (each once): a
    /// DECIMALN/NUMERICN TYPE_INFO whose length byte disagrees with its precision (read by the
    /// precision), a final DONE with a 4-byte row count in TDS 7.2+.
    public private(set) var quirks: [String] = []
    /// The last bytes appended (for a short final DONE).
    private var tail: [UInt8] = []
    /// Bytes the COLMETADATA may take before it is an error (a hostile client cannot grow it).
    public static let maximumMetadataSize = 1 << 20

    public init(version: TDSVersion) {
        self.version = version
        self.decoder = TokenStreamDecoder(version: version)
    }

    public mutating func append(_ bytes: [UInt8]) {
        if sawMetadata { decoder.append(bytes) } else { header += bytes }
        tail = Array((tail + bytes.suffix(9)).suffix(9))
    }

    /// The next whole item, nil when more bytes are needed.
    /// - Throws: `TDSDecodingError`: `.unexpectedToken` for anything but COLMETADATA first, ROW
    ///   after it and one final DONE (context "BulkLoadBCP"); token and value errors as decoded.
    public mutating func next() throws(TDSDecodingError) -> Item? {
        if !sawMetadata {
            guard let columns = try decodeMetadata() else { return nil }
            return .metadata(columns)
        }
        guard let token = try decoder.next() else { return nil }
        guard !sawDone else {
            throw TDSDecodingError(.unexpectedToken, offset: decoder.offset, context: "BulkLoadBCP", "a token after DONE")
        }
        switch token {
        case .row(let r):
            rowCount += 1
            return .row(r.values)
        case .done(let d):
            sawDone = true
            return .done(d)
        default:
            throw TDSDecodingError(.unexpectedToken, offset: decoder.offset, context: "BulkLoadBCP",
                                   "\(token.type) in a bulk load (only ROW tokens and DONE may follow COLMETADATA)")
        }
    }

    /// Whether the message's DONE was read. [MS-TDS] 2.2.6.1 ends the message with DONE;
    /// FreeTDS's bcp sends none, and SQL Server accepts that, so ``finish()`` does too.
    public var endedWithDone: Bool { sawDone }

    /// Checks that the message ended on a token boundary after its COLMETADATA.
    public mutating func finish() throws(TDSDecodingError) {
        guard sawMetadata else {
            throw TDSDecodingError(.truncated, offset: header.count, context: "BulkLoadBCP", "the message ended inside COLMETADATA")
        }
        do {
            try decoder.finish()
        } catch {
            // A DONE with the 4-byte row count of TDS 7.1 at the end of a 7.2+ message.
            guard !sawDone, version.hasLongRowCounts, decoder.bufferedByteCount == 9, tail.count == 9,
                  tail[0] == TokenType.done.rawValue else { throw error }
            var r = ByteReader(Array(tail.dropFirst()))
            _ = try Done.decode(from: &r, version: .v7_1)
            sawDone = true
            quirks.append("DONE with a 4-byte row count in TDS \(version)")
        }
    }

    /// TYPE_INFO, with a DECIMALN/NUMERICN length byte that disagrees with the precision taken
    /// as the precision's length (and noted in ``quirks``).
    private mutating func decodeTypeInfo(_ r: inout ByteReader) throws(TDSDecodingError) -> TypeInfo {
        let at = r.offset
        let type = TDSDataType(try r.peekUInt8())
        guard type == .decimalN || type == .numericN else { return try TypeInfo.decode(from: &r, version: version) }
        var probe = r
        _ = try probe.readUInt8()
        let length = Int(try probe.readUInt8())
        let precision = try probe.readUInt8()
        let scale = try probe.readUInt8()
        guard (1...38).contains(precision), scale <= precision else {
            throw probe.error(.invalidValue, at: at + 2, "precision \(precision), scale \(scale)")
        }
        let expected = SQLDecimal.wireLength(precision: precision)
        if length != expected {
            let note = "\(type.name) TYPE_INFO length \(length) for precision \(precision) (\(expected) expected)"
            if !quirks.contains(note) { quirks.append(note) }
        }
        r = probe
        return TypeInfo(type: type, length: expected, precision: precision, scale: scale)
    }

    private mutating func decodeMetadata() throws(TDSDecodingError) -> [ColumnMetadata]? {
        var r = ByteReader(header)
        do throws(TDSDecodingError) {
            let at = r.offset
            let token = try r.readUInt8()
            guard token == TokenType.colMetadata.rawValue else {
                throw r.error(.unexpectedToken, at: at, "a bulk load starts with COLMETADATA, not 0x\(String(token, radix: 16))")
            }
            let count = Int(try r.readUInt16LE())
            guard count != 0xFFFF else { throw r.error(.invalidValue, at: at + 1, "NoMetaData in a bulk load") }
            var list: [ColumnMetadata] = []
            for _ in 0 ..< count {
                let userType = version.hasLongRowCounts ? try r.readUInt32LE() : UInt32(try r.readUInt16LE())
                let flags = ColumnFlags(rawValue: try r.readUInt16LE())
                let info = try decodeTypeInfo(&r)
                var table: [String]?
                if info.type.isLegacyLOB { table = [try r.readUSVarChar()] }
                let name = try r.readBVarChar()
                list.append(ColumnMetadata(userType: userType, flags: flags, typeInfo: info, tableName: table, name: name))
            }
            sawMetadata = true
            columns = list
            decoder.setColumns(list)
            decoder.append(Array(header[r.offset...]))
            header = []
            return list
        } catch {
            if error.code == .truncated, header.count <= BulkLoadReader.maximumMetadataSize { return nil }
            throw error.withContext("COLMETADATA")
        }
    }
}

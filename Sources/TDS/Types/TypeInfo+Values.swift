extension TypeInfo {
    /// Decodes one value per this TYPE_INFO (its length prefix, then the data). Not for PLP.
    public func decodeValue(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLValue {
        throw reader.error(.unsupported, "not implemented yet").withContext(type.name)
    }

    /// Decodes a PLP value from all its chunks concatenated; nil is PLP NULL.
    public func decodePLPValue(_ bytes: [UInt8]?) throws(TDSDecodingError) -> SQLValue {
        throw TDSDecodingError(.unsupported, offset: 0, context: type.name, "not implemented yet")
    }

    /// Encodes a value with its length prefix (PLP in chunks).
    public func encodeValue(_ value: SQLValue, into writer: inout ByteWriter) throws(TDSDecodingError) {
        throw TDSDecodingError(.unsupported, offset: writer.count, context: type.name, "not implemented yet")
    }
}

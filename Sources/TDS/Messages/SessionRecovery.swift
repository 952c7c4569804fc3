/// [MS-TDS] 2.2.6.4 SESSIONRECOVERY (FeatureId 0x01): the session a client asks the server to
/// restore when it logs in again after an idle connection was dropped ("connection resiliency").
///
/// One record (`InitSessionRecoveryData`, and with the same shape `SessionRecoveryDataToBe`):
/// Length (DWORD, little-endian, the bytes after it), RecoveryDatabase (B_VARCHAR),
/// RecoveryCollation (a length byte, 0 or 5, then the collation), RecoveryLanguage (B_VARCHAR),
/// then SessionStateDataSets to the end: StateId (BYTE), StateLen (BYTE; 0xFF then a DWORD
/// length), StateValue. In the "to be" record an empty database, collation or language means
/// "as in the initial record".
public struct SessionRecoveryData: Hashable, Sendable {
    /// RecoveryDatabase; empty: none (or, in the "to be" record, unchanged).
    public var database: String
    /// RecoveryCollation: 5 bytes, or empty.
    public var collation: [UInt8]
    /// RecoveryLanguage; empty: none (or unchanged).
    public var language: String
    /// The SessionStateDataSets, in order.
    public var states: [SessionState.State]

    /// A record from its fields.
    public init(database: String = "", collation: [UInt8] = [], language: String = "", states: [SessionState.State] = []) {
        self.database = database
        self.collation = collation
        self.language = language
        self.states = states
    }

    /// The largest record accepted when decoding (a real one is a few hundred bytes).
    public static let maximumLength = 1 << 20

    /// Writes Length and the record. Names longer than a B_VARCHAR can hold (255 UTF-16 units)
    /// are cut; a collation that is not 5 bytes is written as none.
    public func encode(into writer: inout ByteWriter) {
        var body = ByteWriter(capacity: 64)
        body.writeBVarChar(database)
        if collation.count == 5 {
            body.writeUInt8(5)
            body.writeBytes(collation)
        } else {
            body.writeUInt8(0)
        }
        body.writeBVarChar(language)
        Self.encodeStates(states, into: &body)
        writer.writeUInt32LE(UInt32(truncatingIfNeeded: body.count))
        writer.writeBytes(body.bytes)
    }

    /// Decodes Length and the record it covers.
    /// - Throws: ``TDSDecodingError`` (`.truncated`, `.invalidLength`) with the offset, naming SESSIONRECOVERY.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> SessionRecoveryData {
        let length = Int(try reader.readUInt32LE())
        guard length <= maximumLength else {
            throw reader.error(.invalidLength, "SESSIONRECOVERY record of \(length) bytes (at most \(maximumLength))")
        }
        guard length <= reader.remaining else { throw reader.truncated(length, "SESSIONRECOVERY") }
        var body = try reader.subReader(length)
        let database = try body.readBVarChar()
        let collationLength = Int(try body.readUInt8())
        guard collationLength == 0 || collationLength == 5 else {
            throw body.error(.invalidLength, at: body.offset - 1, "RecoveryCollation of \(collationLength) bytes (0 or 5)")
        }
        let collation = try body.readBytes(collationLength)
        let language = try body.readBVarChar()
        let states = try decodeStates(from: &body)
        return SessionRecoveryData(database: database, collation: collation, language: language, states: states)
    }

    /// Decodes SessionStateDataSets to the end of `reader` (the FEATUREEXTACK SESSIONRECOVERY data
    /// is this list alone: the server's initial session state).
    /// - Throws: ``TDSDecodingError`` `.truncated` for a StateLen longer than what is left.
    public static func decodeStates(from reader: inout ByteReader) throws(TDSDecodingError) -> [SessionState.State] {
        var states: [SessionState.State] = []
        while !reader.isAtEnd {
            let id = try reader.readUInt8()
            var length = Int(try reader.readUInt8())
            if length == 0xFF { length = Int(try reader.readUInt32LE()) }
            guard length <= reader.remaining else { throw reader.truncated(length, "StateValue of StateId \(id)") }
            states.append(SessionState.State(id: id, value: try reader.readBytes(length)))
        }
        return states
    }

    /// Writes SessionStateDataSets (StateLen as one byte below 0xFF, else 0xFF and a DWORD).
    public static func encodeStates(_ states: [SessionState.State], into writer: inout ByteWriter) {
        for state in states {
            writer.writeUInt8(state.id)
            if state.value.count < 0xFF {
                writer.writeUInt8(UInt8(state.value.count))
            } else {
                writer.writeUInt8(0xFF)
                writer.writeUInt32LE(UInt32(truncatingIfNeeded: state.value.count))
            }
            writer.writeBytes(state.value)
        }
    }
}

/// The SESSIONRECOVERY FeatureData of a LOGIN7 ([MS-TDS] 2.2.6.4): empty at the first login (the
/// client asks for the feature), else `InitSessionRecoveryData` followed by
/// `SessionRecoveryDataToBe` (a reconnect that restores the session).
public struct SessionRecoveryFeature: Hashable, Sendable {
    /// The session as the first login left it (the login's ENVCHANGEs and FEATUREEXTACK).
    public var initial: SessionRecoveryData
    /// What changed since: database, collation, language when different, and the states the
    /// server sent in SESSIONSTATE tokens.
    public var toBe: SessionRecoveryData

    /// The feature data from its two records.
    public init(initial: SessionRecoveryData, toBe: SessionRecoveryData) {
        self.initial = initial
        self.toBe = toBe
    }

    /// The LOGIN7 FeatureExt entry carrying both records.
    public var feature: Login7Feature {
        var w = ByteWriter(capacity: 128)
        initial.encode(into: &w)
        toBe.encode(into: &w)
        return Login7Feature(id: Login7Feature.sessionRecoveryID, data: w.bytes)
    }

    /// Decodes SESSIONRECOVERY FeatureData; nil for empty data (a first login asking for the feature).
    /// - Throws: ``TDSDecodingError`` for data that is not two whole records.
    public static func decode(_ data: [UInt8]) throws(TDSDecodingError) -> SessionRecoveryFeature? {
        guard !data.isEmpty else { return nil }
        var r = ByteReader(data)
        let initial = try SessionRecoveryData.decode(from: &r)
        let toBe = try SessionRecoveryData.decode(from: &r)
        guard r.isAtEnd else {
            throw r.error(.invalidLength, "\(r.remaining) byte(s) after SessionRecoveryDataToBe")
        }
        return SessionRecoveryFeature(initial: initial, toBe: toBe)
    }
}

extension Login7Feature {
    /// SESSIONRECOVERY (0x01) with no data: the first login asks for connection resiliency.
    public static let sessionRecoveryRequest = Login7Feature(id: sessionRecoveryID, data: [])
}

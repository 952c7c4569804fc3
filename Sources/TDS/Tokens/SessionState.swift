/// [MS-TDS] 2.2.7.21 SESSIONSTATE — session state for connection recovery (token 0xE4).
///
/// Wire shape after the token byte: Length DWORD, SeqNo DWORD, Status BYTE (bit 0 =
/// fRecoverable), then SessionStateData to the end: StateId BYTE, StateLen BYTE (0xFF means a
/// DWORD length follows), StateValue.
public struct SessionState: Hashable, Sendable {
    /// One StateId and its value.
    public struct State: Hashable, Sendable {
        /// StateId.
        public var id: UInt8
        /// StateValue.
        public var value: [UInt8]
        /// A state from its fields.
        public init(id: UInt8, value: [UInt8]) { self.id = id; self.value = value }
    }

    /// SeqNo.
    public var sequenceNumber: UInt32
    /// The raw Status byte.
    public var status: UInt8
    /// fRecoverable: the session state is recoverable.
    public var isRecoverable: Bool { status & 0x01 != 0 }
    /// The states in order.
    public var states: [State]

    /// A SESSIONSTATE from its fields.
    public init(sequenceNumber: UInt32, status: UInt8, states: [State]) {
        self.sequenceNumber = sequenceNumber; self.status = status; self.states = states
    }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> SessionState {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody32()
            return try decodeBounded("SESSIONSTATE") { () throws(TDSDecodingError) -> SessionState in
                let seq = try body.readUInt32LE()
                let status = try body.readUInt8()
                var states: [State] = []
                while !body.isAtEnd {
                    let id = try body.readUInt8()
                    var len = Int(try body.readUInt8())
                    if len == 0xFF { len = Int(try body.readUInt32LE()) }
                    states.append(State(id: id, value: try body.readBytes(len)))
                }
                return SessionState(sequenceNumber: seq, status: status, states: states)
            }
        } catch { throw error.inToken("SESSIONSTATE") }
    }
}

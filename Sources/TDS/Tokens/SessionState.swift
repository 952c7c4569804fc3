/// [MS-TDS] 2.2.7.21 SESSIONSTATE — session state for connection recovery (token 0xE4).
///
/// Wire shape after the token byte: Length DWORD, SeqNo DWORD, Status BYTE (bit 0 =
/// fRecoverable), then SessionStateData to the end: StateId BYTE, StateLen BYTE (0xFF means a
/// DWORD length follows), StateValue.
public struct SessionState: Hashable, Sendable {
    public struct State: Hashable, Sendable {
        public var id: UInt8
        public var value: [UInt8]
        public init(id: UInt8, value: [UInt8]) { self.id = id; self.value = value }
    }

    public var sequenceNumber: UInt32
    /// The raw Status byte.
    public var status: UInt8
    /// fRecoverable: the session state is recoverable.
    public var isRecoverable: Bool { status & 0x01 != 0 }
    public var states: [State]

    public init(sequenceNumber: UInt32, status: UInt8, states: [State]) {
        self.sequenceNumber = sequenceNumber; self.status = status; self.states = states
    }

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

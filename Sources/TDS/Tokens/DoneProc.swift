/// [MS-TDS] 2.2.7.8 DONEPROC — completion of a stored procedure (token 0xFE).
///
/// Same body as DONE ([MS-TDS] 2.2.7.6): Status USHORT, CurCmd USHORT, DoneRowCount (LONG before
/// TDS 7.2, ULONGLONG from 7.2). `rowCount` is meaningful only when `status` has `.count`.
public struct DoneProc: Hashable, Sendable {
    /// The status bits (see ``DoneStatus``).
    public var status: DoneStatus
    /// The token of the current SQL statement (CurCmd).
    public var currentCommand: UInt16
    /// Rows affected or returned; valid only when `status.contains(.count)`.
    public var rowCount: UInt64

    /// A DONEPROC from its fields.
    public init(status: DoneStatus, currentCommand: UInt16 = 0, rowCount: UInt64 = 0) {
        self.status = status
        self.currentCommand = currentCommand
        self.rowCount = rowCount
    }

    /// The row count when `.count` is set, else nil.
    public var affectedRows: UInt64? { status.contains(.count) ? rowCount : nil }

    /// Decodes the body (after the 0xFE byte). Throws `.truncated` if the input ends early.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> DoneProc {
        do throws(TDSDecodingError) {
            let b = try DoneBody.decode(from: &reader, version: version)
            return DoneProc(status: b.status, currentCommand: b.currentCommand, rowCount: b.rowCount)
        } catch { throw error.inToken("DONEPROC") }
    }

    /// Writes the token byte 0xFE and the body.
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt8(TokenType.doneProc.rawValue)
        DoneBody(status: status, currentCommand: currentCommand, rowCount: rowCount).encode(into: &writer, version: version)
    }
}

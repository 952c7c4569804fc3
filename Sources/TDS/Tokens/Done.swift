/// The Status field of DONE, DONEPROC and DONEINPROC ([MS-TDS] 2.2.7.6).
///
/// `description` lists the [MS-TDS] flag names joined by `|` (`MORE|COUNT`), or `FINAL` when
/// no bit is set. Bits [MS-TDS] does not name are kept and printed as hex.
public struct DoneStatus: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// DONE_MORE (0x1): more results follow in this response.
    public static let more = DoneStatus(rawValue: 0x0001)
    /// DONE_ERROR (0x2): the statement failed.
    public static let error = DoneStatus(rawValue: 0x0002)
    /// DONE_INXACT (0x4): a transaction is in progress.
    public static let inTransaction = DoneStatus(rawValue: 0x0004)
    /// DONE_COUNT (0x10): `rowCount` is valid.
    public static let count = DoneStatus(rawValue: 0x0010)
    /// DONE_ATTN (0x20): acknowledges an ATTENTION (cancel).
    public static let attention = DoneStatus(rawValue: 0x0020)
    /// DONE_SRVERROR (0x100): a server error discarded the result.
    public static let serverError = DoneStatus(rawValue: 0x0100)

    static let names: [(DoneStatus, String)] = [
        (.more, "MORE"), (.error, "ERROR"), (.inTransaction, "INXACT"),
        (.count, "COUNT"), (.attention, "ATTN"), (.serverError, "SRVERROR"),
    ]

    /// The [MS-TDS] names of the set bits, in bit order (without the `DONE_` prefix).
    public var flagNames: [String] {
        var result: [String] = []
        var rest = rawValue
        for (flag, name) in DoneStatus.names where contains(flag) {
            result.append(name)
            rest &= ~flag.rawValue
        }
        if rest != 0 { result.append("0x" + String(rest, radix: 16, uppercase: true)) }
        return result
    }

    public var description: String { rawValue == 0 ? "FINAL" : flagNames.joined(separator: "|") }
}

/// Status, CurCmd and DoneRowCount, the body shared by DONE, DONEPROC and DONEINPROC.
///
/// DoneRowCount is a 4-byte LONG before TDS 7.2 and an 8-byte ULONGLONG from 7.2 on.
struct DoneBody: Hashable, Sendable {
    var status: DoneStatus
    var currentCommand: UInt16
    var rowCount: UInt64

    static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> DoneBody {
        let status = DoneStatus(rawValue: try reader.readUInt16LE())
        let cmd = try reader.readUInt16LE()
        let count: UInt64
        if version.hasLongRowCounts {
            count = try reader.readUInt64LE()
        } else {
            count = UInt64(try reader.readUInt32LE())
        }
        return DoneBody(status: status, currentCommand: cmd, rowCount: count)
    }

    func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt16LE(status.rawValue)
        writer.writeUInt16LE(currentCommand)
        if version.hasLongRowCounts {
            writer.writeUInt64LE(rowCount)
        } else {
            writer.writeUInt32LE(UInt32(truncatingIfNeeded: rowCount))
        }
    }
}

/// [MS-TDS] 2.2.7.6 DONE — completion of a SQL statement (token 0xFD).
///
/// Wire shape after the token byte: Status USHORT, CurCmd USHORT, DoneRowCount (LONG before
/// TDS 7.2, ULONGLONG from 7.2). `rowCount` is meaningful only when `status` has `.count`.
public struct Done: Hashable, Sendable {
    /// The status bits (MORE, ERROR, INXACT, COUNT, ATTN, SRVERROR).
    public var status: DoneStatus
    /// The token of the current SQL statement (CurCmd), e.g. 0xC1 for SELECT.
    public var currentCommand: UInt16
    /// Rows affected or returned; valid only when `status.contains(.count)`.
    public var rowCount: UInt64

    /// A DONE from its fields.
    public init(status: DoneStatus, currentCommand: UInt16 = 0, rowCount: UInt64 = 0) {
        self.status = status
        self.currentCommand = currentCommand
        self.rowCount = rowCount
    }

    /// The row count when `.count` is set, else nil.
    public var affectedRows: UInt64? { status.contains(.count) ? rowCount : nil }

    /// Decodes the body (after the 0xFD byte). Throws `.truncated` if the input ends early.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> Done {
        do throws(TDSDecodingError) {
            let b = try DoneBody.decode(from: &reader, version: version)
            return Done(status: b.status, currentCommand: b.currentCommand, rowCount: b.rowCount)
        } catch { throw error.inToken("DONE") }
    }

    /// Writes the token byte 0xFD and the body.
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt8(TokenType.done.rawValue)
        DoneBody(status: status, currentCommand: currentCommand, rowCount: rowCount).encode(into: &writer, version: version)
    }
}

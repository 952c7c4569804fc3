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

/// A marker naming one token type, for a token struct that several token types share
/// (``DoneToken`` for DONE, DONEPROC and DONEINPROC; ``MessageToken`` for ERROR and INFO).
public protocol TokenKind: Sendable {
    /// The token byte the kind stands for.
    static var tokenType: TokenType { get }
}

/// The kinds of ``DoneToken`` and ``MessageToken``, one per token type.
public enum TokenKinds {
    /// DONE (0xFD), [MS-TDS] 2.2.7.6.
    public enum Done: TokenKind { public static var tokenType: TokenType { .done } }
    /// DONEINPROC (0xFF), [MS-TDS] 2.2.7.7.
    public enum DoneInProc: TokenKind { public static var tokenType: TokenType { .doneInProc } }
    /// DONEPROC (0xFE), [MS-TDS] 2.2.7.8.
    public enum DoneProc: TokenKind { public static var tokenType: TokenType { .doneProc } }
    /// ERROR (0xAA), [MS-TDS] 2.2.7.10.
    public enum Error: TokenKind { public static var tokenType: TokenType { .error } }
    /// INFO (0xAB), [MS-TDS] 2.2.7.13.
    public enum Info: TokenKind { public static var tokenType: TokenType { .info } }
}

/// [MS-TDS] 2.2.7.6 DONE (0xFD) — completion of a SQL statement.
public typealias Done = DoneToken<TokenKinds.Done>
/// [MS-TDS] 2.2.7.7 DONEINPROC (0xFF) — completion of a SQL statement inside a stored procedure.
public typealias DoneInProc = DoneToken<TokenKinds.DoneInProc>
/// [MS-TDS] 2.2.7.8 DONEPROC (0xFE) — completion of a stored procedure.
public typealias DoneProc = DoneToken<TokenKinds.DoneProc>

/// [MS-TDS] 2.2.7.6-8 DONE, DONEINPROC and DONEPROC: one layout, told apart by `Kind`
/// (use the names ``Done``, ``DoneInProc``, ``DoneProc``).
///
/// Wire shape after the token byte: Status USHORT, CurCmd USHORT, DoneRowCount (LONG before
/// TDS 7.2, ULONGLONG from 7.2). `rowCount` is meaningful only when `status` has `.count`.
public struct DoneToken<Kind: TokenKind>: Hashable, Sendable {
    /// The status bits (MORE, ERROR, INXACT, COUNT, ATTN, SRVERROR).
    public var status: DoneStatus
    /// The token of the current SQL statement (CurCmd), e.g. 0xC1 for SELECT.
    public var currentCommand: UInt16
    /// Rows affected or returned; valid only when `status.contains(.count)`.
    public var rowCount: UInt64

    /// A token from its fields.
    public init(status: DoneStatus, currentCommand: UInt16 = 0, rowCount: UInt64 = 0) {
        self.status = status
        self.currentCommand = currentCommand
        self.rowCount = rowCount
    }

    /// The row count when `.count` is set, else nil.
    public var affectedRows: UInt64? { status.contains(.count) ? rowCount : nil }

    /// Decodes the body (after the token byte). Throws `.truncated` if the input ends early.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> DoneToken {
        do throws(TDSDecodingError) {
            let status = DoneStatus(rawValue: try reader.readUInt16LE())
            let command = try reader.readUInt16LE()
            let count = try version.hasLongRowCounts ? reader.readUInt64LE() : UInt64(reader.readUInt32LE())
            return DoneToken(status: status, currentCommand: command, rowCount: count)
        } catch { throw error.inToken(Kind.tokenType.name) }
    }

    /// Writes the token byte (0xFD, 0xFF or 0xFE) and the body.
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt8(Kind.tokenType.rawValue)
        writer.writeUInt16LE(status.rawValue)
        writer.writeUInt16LE(currentCommand)
        if version.hasLongRowCounts {
            writer.writeUInt64LE(rowCount)
        } else {
            writer.writeUInt32LE(UInt32(truncatingIfNeeded: rowCount))
        }
    }
}

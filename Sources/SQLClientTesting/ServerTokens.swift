import Foundation
import TDS

/// Encoders of server tokens, for replay sessions and fixtures (test support; the client never
/// sends these). Each returns the token's bytes, starting with its token byte.
public enum ServerTokens {
    /// [MS-TDS] 2.2.7.6 DONE status bits.
    public struct DoneStatus: OptionSet, Hashable, Sendable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// No bit: the final DONE.
        public static let final: DoneStatus = []
        /// DONE_MORE: more results follow.
        public static let more = DoneStatus(rawValue: 0x0001)
        /// DONE_ERROR: the statement failed.
        public static let error = DoneStatus(rawValue: 0x0002)
        /// DONE_INXACT: a transaction is open.
        public static let inTransaction = DoneStatus(rawValue: 0x0004)
        /// DONE_COUNT: the row count is valid.
        public static let count = DoneStatus(rawValue: 0x0010)
        /// DONE_ATTN: acknowledges an ATTENTION.
        public static let attention = DoneStatus(rawValue: 0x0020)
        /// DONE_SRVERROR: a severe error ended the batch.
        public static let serverError = DoneStatus(rawValue: 0x0100)
    }

    /// [MS-TDS] 2.2.7.6 DONE (0xFD), 2.2.7.7 DONEINPROC (0xFF), 2.2.7.8 DONEPROC (0xFE).
    /// The row count is 8 bytes from TDS 7.2, 4 bytes before (truncated to 32 bits).
    public static func done(token: UInt8 = 0xFD, status: DoneStatus = [], currentCommand: UInt16 = 0,
                            rowCount: UInt64 = 0, version: TDSVersion) -> [UInt8] {
        var w = ByteWriter(capacity: 13)
        w.writeUInt8(token)
        w.writeUInt16LE(status.rawValue)
        w.writeUInt16LE(currentCommand)
        if version.hasLongRowCounts { w.writeUInt64LE(rowCount) } else { w.writeUInt32LE(UInt32(truncatingIfNeeded: rowCount)) }
        return w.bytes
    }

    /// The version LOGINACK reports for a client's requested LOGIN7 version: what SQL Server
    /// answers (7.1 → 7.1 revision 1, 7.2 → 7.2, 7.3 → 7.3B, 7.4 → 7.4).
    public static func ackVersion(forClient v: TDSVersion) -> TDSVersion {
        switch v.generation {
        case 0x70: return .v7_0
        case 0x71: return .v7_1_1
        case 0x72: return .v7_2
        case 0x73: return v == .v7_3A ? .v7_3A : .v7_3B
        default: return .v7_4
        }
    }

    /// [MS-TDS] 2.2.7.14 LOGINACK (0xAD): interface 1 (SQL), TDS version (big-endian), program
    /// name, program version (major, minor, build high, build low).
    public static func loginAck(version: TDSVersion, programName: String = "Microsoft SQL Server",
                                programVersion: (UInt8, UInt8, UInt8, UInt8) = (16, 0, 0x10, 0x00)) -> [UInt8] {
        var body = ByteWriter()
        body.writeUInt8(1)
        body.writeUInt32BE(version.rawValue)
        body.writeBVarChar(programName)
        body.writeUInt8(programVersion.0); body.writeUInt8(programVersion.1)
        body.writeUInt8(programVersion.2); body.writeUInt8(programVersion.3)
        var w = ByteWriter()
        w.writeUInt8(0xAD)
        w.writeUInt16LE(UInt16(body.count))
        w.writeBytes(body.bytes)
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.9 ENVCHANGE (0xE3) with B_VARCHAR new and old values (types 1 database,
    /// 2 language, 3 character set, 4 packet size).
    public static func envChange(type: UInt8, new: String, old: String) -> [UInt8] {
        var body = ByteWriter()
        body.writeUInt8(type)
        body.writeBVarChar(new)
        body.writeBVarChar(old)
        var w = ByteWriter()
        w.writeUInt8(0xE3)
        w.writeUInt16LE(UInt16(body.count))
        w.writeBytes(body.bytes)
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.9 ENVCHANGE type 7, SQL collation (B_VARBYTE new value, empty old value).
    public static func envChangeCollation(_ collation: [UInt8]) -> [UInt8] {
        var body = ByteWriter()
        body.writeUInt8(7)
        body.writeUInt8(UInt8(collation.count)); body.writeBytes(collation)
        body.writeUInt8(0)
        var w = ByteWriter()
        w.writeUInt8(0xE3)
        w.writeUInt16LE(UInt16(body.count))
        w.writeBytes(body.bytes)
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.13 INFO (0xAB) or 2.2.7.10 ERROR (0xAA).
    public static func message(token: UInt8 = 0xAB, number: Int32, state: UInt8 = 1, severity: UInt8 = 0,
                               text: String, server: String = "replay", procedure: String = "",
                               line: Int32 = 1, version: TDSVersion) -> [UInt8] {
        var body = ByteWriter()
        body.writeInt32LE(number)
        body.writeUInt8(state)
        body.writeUInt8(severity)
        body.writeUSVarChar(text)
        body.writeBVarChar(server)
        body.writeBVarChar(procedure)
        if version.hasLongRowCounts { body.writeInt32LE(line) } else { body.writeUInt16LE(UInt16(truncatingIfNeeded: line)) }
        var w = ByteWriter()
        w.writeUInt8(token)
        w.writeUInt16LE(UInt16(body.count))
        w.writeBytes(body.bytes)
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.18 RETURNSTATUS (0x79).
    public static func returnStatus(_ value: Int32) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0x79)
        w.writeInt32LE(value)
        return w.bytes
    }

    /// [MS-TDS] 2.2.7.11 FEATUREEXTACK (0xAE): (feature id, data) pairs, then 0xFF.
    public static func featureExtAck(_ features: [(UInt8, [UInt8])]) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xAE)
        for (id, data) in features {
            w.writeUInt8(id)
            w.writeUInt32LE(UInt32(data.count))
            w.writeBytes(data)
        }
        w.writeUInt8(0xFF)
        return w.bytes
    }

    /// The collation SQL Server uses by default: SQL_Latin1_General_CP1_CI_AS (LCID 0x0409,
    /// flags IgnoreCase|IgnoreKanaType|IgnoreWidth, sort ID 52), as 5 wire bytes.
    public static let latin1GeneralCP1CIAS: [UInt8] = [0x09, 0x04, 0xD0, 0x00, 0x34]

    /// A generated login response for a client that asked for `clientVersion`: LOGINACK for
    /// the version SQL Server would acknowledge, ENVCHANGEs for database, language, collation
    /// (7.1+) and packet size, an INFO for the database change, FEATUREEXTACK with
    /// UTF8_SUPPORT when `utf8` and `features` (id, data) after it (7.4 only), and DONE.
    public static func loginResponse(clientVersion: TDSVersion, packetSize: Int, utf8: Bool,
                                     database: String = "master", features: [(UInt8, [UInt8])] = []) -> [ReplaySession.Segment] {
        let version = ackVersion(forClient: clientVersion)
        var segments: [ReplaySession.Segment] = []
        segments.append(.init(comment: "ENVCHANGE database", bytes: envChange(type: 1, new: database, old: "master")))
        segments.append(.init(comment: "INFO 5701 database changed",
                              bytes: message(number: 5701, state: 2, severity: 0,
                                             text: "Changed database context to '\(database)'.", version: version)))
        if version.generation >= 0x71 {
            segments.append(.init(comment: "ENVCHANGE collation", bytes: envChangeCollation(latin1GeneralCP1CIAS)))
        }
        segments.append(.init(comment: "ENVCHANGE language", bytes: envChange(type: 2, new: "us_english", old: "")))
        segments.append(.init(comment: "LOGINACK \(version)", bytes: loginAck(version: version)))
        segments.append(.init(comment: "ENVCHANGE packet size", bytes: envChange(type: 4, new: String(packetSize), old: "4096")))
        if (utf8 || !features.isEmpty), version.generation >= 0x74 {
            let acks = (utf8 ? [(UInt8(0x0A), [UInt8(0x01)])] : []) + features
            let names = acks.map { FeatureID(rawValue: $0.0).name }.joined(separator: " ")
            segments.append(.init(comment: "FEATUREEXTACK \(names)", bytes: featureExtAck(acks)))
        }
        segments.append(.init(comment: "DONE", bytes: done(version: version)))
        return segments
    }
}

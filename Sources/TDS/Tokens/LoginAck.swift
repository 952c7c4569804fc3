/// [MS-TDS] 2.2.7.14 LOGINACK — the server accepted the login (token 0xAD).
///
/// Wire shape after the token byte: Length USHORT, Interface BYTE (0 = SQL_DFLT, 1 = SQL_TSQL),
/// TDSVersion DWORD (sent big-endian, e.g. `74 00 00 04`), ProgName B_VARCHAR, ProgVersion
/// (MajorVer BYTE, MinorVer BYTE, BuildNumHi BYTE, BuildNumLow BYTE).
public struct LoginAck: Hashable, Sendable {
    /// The server's product version, e.g. 16.0.1000 for SQL Server 2022.
    public struct ServerVersion: Hashable, Sendable, CustomStringConvertible {
        /// The server's major version.
        public var major: UInt8
        /// The server's minor version.
        public var minor: UInt8
        /// BuildNumHi * 256 + BuildNumLow.
        public var build: UInt16
        /// A version from its fields.
        public init(major: UInt8, minor: UInt8, build: UInt16) { self.major = major; self.minor = minor; self.build = build }
        /// "major.minor.build", e.g. "15.0.2000".
        public var description: String { "\(major).\(minor).\(build)" }
    }

    /// Interface: 1 = T-SQL.
    public var interface: UInt8
    /// The TDS version the server chose.
    public var tdsVersion: TDSVersion
    /// The server program name as sent, e.g. "Microsoft SQL Server\0\0" (SQL Server pads it
    /// with NUL characters); see ``trimmedProgramName``.
    public var programName: String
    /// `programName` without trailing NUL characters.
    public var trimmedProgramName: String {
        var s = Substring(programName)
        while s.last == "\0" { s = s.dropLast() }
        return String(s)
    }
    /// ProgVersion.
    public var serverVersion: ServerVersion

    /// A LOGINACK from its fields.
    public init(interface: UInt8 = 1, tdsVersion: TDSVersion, programName: String, serverVersion: ServerVersion) {
        self.interface = interface; self.tdsVersion = tdsVersion; self.programName = programName; self.serverVersion = serverVersion
    }

    /// Decodes the body after the 0xAD byte. Throws `.truncated` until the declared length is
    /// present, `.invalidLength` if the content does not fit it.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> LoginAck {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody16()
            return try decodeBounded("LOGINACK") { () throws(TDSDecodingError) -> LoginAck in
                let interface = try body.readUInt8()
                let version = TDSVersion(rawValue: try body.readUInt32BE())
                let name = try body.readBVarChar()
                let major = try body.readUInt8()
                let minor = try body.readUInt8()
                let hi = try body.readUInt8()
                let lo = try body.readUInt8()
                try body.requireConsumed("LOGINACK")
                return LoginAck(interface: interface, tdsVersion: version, programName: name,
                                serverVersion: ServerVersion(major: major, minor: minor, build: UInt16(hi) << 8 | UInt16(lo)))
            }
        } catch { throw error.inToken("LOGINACK") }
    }

    /// Writes the token byte 0xAD, the length and the body.
    public func encode(into writer: inout ByteWriter) {
        var body = ByteWriter()
        body.writeUInt8(interface)
        body.writeUInt32BE(tdsVersion.rawValue)
        body.writeBVarChar(programName)
        body.writeUInt8(serverVersion.major)
        body.writeUInt8(serverVersion.minor)
        body.writeUInt16BE(serverVersion.build)
        writer.writeUInt8(TokenType.loginAck.rawValue)
        writer.writeUInt16LE(UInt16(truncatingIfNeeded: body.count))
        writer.writeBytes(body.bytes)
    }
}

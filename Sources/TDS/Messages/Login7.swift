/// [MS-TDS] 2.2.6.4 LOGIN7: the client's login request, for TDS 7.1, 7.2, 7.3 and 7.4.
///
/// Layout (all little-endian, including TDSVersion): Length (4), TDSVersion (4), PacketSize (4),
/// ClientProgVer (4), ClientPID (4), ConnectionID (4), OptionFlags1, OptionFlags2, TypeFlags,
/// OptionFlags3 (1 each), ClientTimeZone (4, signed minutes), ClientLCID (4); then the
/// OffsetLength table — (offset, length) pairs of 2-byte values, offsets from the start of
/// LOGIN7, lengths in characters for text and in bytes for SSPI/extension: HostName, UserName,
/// Password, AppName, ServerName, Extension (7.4; "unused" before), CltIntName (library name),
/// Language, Database, ClientID (6 bytes, a MAC address), SSPI, AtchDBFile, and from 7.2
/// ChangePassword and cbSSPILong (4). The fixed part is 86 bytes before 7.2 and 94 from 7.2.
/// The variable data follows. Text is UTF-16LE. Passwords are obfuscated: each byte has its
/// nibbles swapped, then is XORed with 0xA5.
///
/// The layout used (7.1 or 7.2+) follows `tdsVersion`. From 7.4, when OptionFlags3 has
/// fExtension, the Extension field holds a 4-byte offset to the FeatureExt block.
///
/// The password is held in ``RedactedPassword``: `description`, `debugDescription` and `Mirror`
/// of a `Login7` never show it.
public struct Login7: Hashable, Sendable, CustomStringConvertible {
    /// OptionFlags1: fByteOrder 0x01, fChar 0x02, fFloat 0x0C, fDumpLoad 0x10, fUseDB 0x20,
    /// fDatabase 0x40, fSetLang 0x80.
    public struct OptionFlags1: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// fByteOrder = ORDER_68000 (0x01): big-endian integers (clear: ORDER_X86, what every client sends).
        public static let byteOrderBigEndian = OptionFlags1(rawValue: 0x01)
        /// fChar = CHARSET_EBCDIC (0x02) (clear: ASCII).
        public static let charEBCDIC = OptionFlags1(rawValue: 0x02)
        /// fFloat = FLOAT_VAX (0x04) (clear: IEEE 754).
        public static let floatVAX = OptionFlags1(rawValue: 0x04)
        /// fFloat = ND5000 (0x08).
        public static let floatND5000 = OptionFlags1(rawValue: 0x08)
        /// fDumpLoad: set to turn dump/load and BCP off.
        public static let dumpLoadOff = OptionFlags1(rawValue: 0x10)
        /// fUseDB: the client wants a warning about the initial database change.
        public static let useDB = OptionFlags1(rawValue: 0x20)
        /// fDatabase: failing to switch to the initial database is fatal.
        public static let initDBFatal = OptionFlags1(rawValue: 0x40)
        /// fSetLang: the client wants a warning about language changes.
        public static let setLang = OptionFlags1(rawValue: 0x80)
    }

    /// OptionFlags2: fLanguage 0x01, fODBC 0x02, fTranBoundary 0x04, fCacheConnect 0x08,
    /// fUserType 0x70, fIntSecurity 0x80.
    public struct OptionFlags2: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// fLanguage: failing to set the initial language is fatal.
        public static let initLangFatal = OptionFlags2(rawValue: 0x01)
        /// fODBC: ODBC driver defaults (ANSI_DEFAULTS etc. on).
        public static let odbc = OptionFlags2(rawValue: 0x02)
        /// fTranBoundary (0x04): reserved by [MS-TDS]; sent clear.
        public static let tranBoundary = OptionFlags2(rawValue: 0x04)
        /// fCacheConnect (0x08): reserved by [MS-TDS]; sent clear.
        public static let cacheConnect = OptionFlags2(rawValue: 0x08)
        /// fUserType = USER_SERVER (1).
        public static let userTypeServer = OptionFlags2(rawValue: 0x10)
        /// fUserType = USER_REMUSER (2).
        public static let userTypeRemoteUser = OptionFlags2(rawValue: 0x20)
        /// fUserType = USER_SQLREPL (3).
        public static let userTypeSQLReplication = OptionFlags2(rawValue: 0x30)
        /// fIntSecurity: integrated (SSPI) authentication.
        public static let integratedSecurity = OptionFlags2(rawValue: 0x80)
    }

    /// TypeFlags: fSQLType 0x0F (0 DFLT, 1 TSQL), fOLEDB 0x10, fReadOnlyIntent 0x20.
    public struct TypeFlags: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// fSQLType = SQL_TSQL (1): the client sends T-SQL (clear: SQL_DFLT).
        public static let sqlTypeTSQL = TypeFlags(rawValue: 0x01)
        /// fOLEDB (0x10): the client is an OLE DB driver (the server then sets its OLE DB session defaults).
        public static let oledb = TypeFlags(rawValue: 0x10)
        /// fReadOnlyIntent (0x20, TDS 7.4): the application only reads (`ApplicationIntent=ReadOnly`),
        /// so an availability group listener may route it to a readable secondary.
        public static let readOnlyIntent = TypeFlags(rawValue: 0x20)
    }

    /// OptionFlags3: fChangePassword 0x01, fUserInstance 0x02, fSendYukonBinaryXML 0x04,
    /// fUnknownCollationHandling 0x08, fExtension 0x10.
    public struct OptionFlags3: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// fChangePassword (0x01, 7.2+): ChangePassword carries a new password for the login.
        public static let changePassword = OptionFlags3(rawValue: 0x01)
        /// fUserInstance (0x02): ask for a user instance (SQL Server Express).
        public static let userInstance = OptionFlags3(rawValue: 0x02)
        /// fSendYukonBinaryXML (0x04): the client understands xml in binary form.
        public static let sendYukonBinaryXML = OptionFlags3(rawValue: 0x04)
        /// fUnknownCollationHandling (0x08, 7.3+): the client accepts collations it may not know.
        public static let unknownCollationHandling = OptionFlags3(rawValue: 0x08)
        /// fExtension: the Extension field points to FeatureExt (7.4).
        public static let extensionUsed = OptionFlags3(rawValue: 0x10)
    }

    /// TDSVersion (sent little-endian), e.g. 0x74000004 for 7.4.
    public var tdsVersion: TDSVersion
    /// The packet size the client asks for, in bytes (0 = the server's default).
    public var packetSize: UInt32
    /// ClientProgVer: the client program's version (an opaque 4-byte value; drivers send their own).
    public var clientProgramVersion: UInt32
    /// ClientPID: the client's process ID.
    public var clientPID: UInt32
    /// ConnectionID: 0 for a new physical connection.
    public var connectionID: UInt32
    /// OptionFlags1 (see ``OptionFlags1``).
    public var optionFlags1: OptionFlags1
    /// OptionFlags2 (see ``OptionFlags2``).
    public var optionFlags2: OptionFlags2
    /// TypeFlags (see ``TypeFlags``).
    public var typeFlags: TypeFlags
    /// OptionFlags3. When encoding, fExtension is set exactly when `featureExt` is non-nil (7.4).
    public var optionFlags3: OptionFlags3
    /// Minutes from UTC (signed), as the spec's ClientTimeZone.
    public var clientTimeZone: Int32
    /// ClientLCID: the client's locale ID (0x0409 = en-US); the server uses it for the session's default language.
    public var clientLCID: UInt32
    /// HostName: the client machine's name (at most 128 UTF-16 code units).
    public var hostName: String
    /// UserName: the SQL Server login (empty for integrated security and access tokens; at most 128).
    public var userName: String
    /// Password: the SQL Server login's password (obfuscated on the wire, never printed; at most 128).
    public var password: RedactedPassword
    /// AppName: the application's name (`Application Name=`; at most 128).
    public var appName: String
    /// ServerName: the server name as the client typed it (at most 128).
    public var serverName: String
    /// CltIntName: the client library's name (e.g. "ODBC", "Core .Net SqlClient Data Provider").
    public var libraryName: String
    /// Language: the initial language (empty: the login's default; at most 128).
    public var language: String
    /// Database: the initial database (empty: the login's default; at most 128).
    public var database: String
    /// ClientID: 6 bytes (the client's MAC address).
    public var clientID: [UInt8]
    /// SSPI data (bytes); longer than 65,534 bytes uses cbSSPILong (7.2+).
    public var sspi: [UInt8]
    /// AtchDBFile: a database file to attach as the initial database (`AttachDBFilename=`; at most 260).
    public var attachDBFile: String
    /// ChangePassword (7.2+), obfuscated like the password.
    public var changePassword: RedactedPassword
    /// FeatureExt (7.4); nil when the client sends none (fExtension clear).
    public var featureExt: [Login7Feature]?

    /// A LOGIN7 message from its fields; the defaults are what SQLClient sends (7.4, 4,096-byte
    /// packets, the initial database and language fatal, ODBC defaults, en-US).
    public init(tdsVersion: TDSVersion = .v7_4, packetSize: UInt32 = 4096, clientProgramVersion: UInt32 = 0,
                clientPID: UInt32 = 0, connectionID: UInt32 = 0,
                optionFlags1: OptionFlags1 = [.useDB, .initDBFatal, .setLang],
                optionFlags2: OptionFlags2 = [.initLangFatal, .odbc], typeFlags: TypeFlags = [],
                optionFlags3: OptionFlags3 = [.unknownCollationHandling],
                clientTimeZone: Int32 = 0, clientLCID: UInt32 = 0x0409,
                hostName: String = "", userName: String = "", password: RedactedPassword = "",
                appName: String = "", serverName: String = "", libraryName: String = "",
                language: String = "", database: String = "", clientID: [UInt8] = [0, 0, 0, 0, 0, 0],
                sspi: [UInt8] = [], attachDBFile: String = "", changePassword: RedactedPassword = "",
                featureExt: [Login7Feature]? = nil) {
        self.tdsVersion = tdsVersion
        self.packetSize = packetSize
        self.clientProgramVersion = clientProgramVersion
        self.clientPID = clientPID
        self.connectionID = connectionID
        self.optionFlags1 = optionFlags1
        self.optionFlags2 = optionFlags2
        self.typeFlags = typeFlags
        var f3 = optionFlags3
        if featureExt != nil && tdsVersion.generation >= 0x74 { f3.insert(.extensionUsed) } else { f3.remove(.extensionUsed) }
        self.optionFlags3 = f3
        self.clientTimeZone = clientTimeZone
        self.clientLCID = clientLCID
        self.hostName = hostName
        self.userName = userName
        self.password = password
        self.appName = appName
        self.serverName = serverName
        self.libraryName = libraryName
        self.language = language
        self.database = database
        self.clientID = clientID
        self.sspi = sspi
        self.attachDBFile = attachDBFile
        self.changePassword = changePassword
        self.featureExt = featureExt
    }

    /// True when FeatureExt asks for UTF8_SUPPORT.
    public var requestsUTF8Support: Bool {
        featureExt?.contains { $0.id == Login7Feature.utf8SupportID } ?? false
    }

    /// The size of the fixed part for `version`: 86 bytes before 7.2, 94 from 7.2.
    public static func fixedLength(for version: TDSVersion) -> Int { version.generation >= 0x72 ? 94 : 86 }

    // MARK: Password obfuscation

    /// Obfuscates UTF-16LE password bytes: swap the nibbles of each byte, then XOR 0xA5.
    public static func obfuscate(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { (($0 << 4) | ($0 >> 4)) ^ 0xA5 }
    }

    /// Reverses `obfuscate`: XOR 0xA5, then swap the nibbles.
    public static func deobfuscate(_ bytes: [UInt8]) -> [UInt8] {
        bytes.map { let x = $0 ^ 0xA5; return (x << 4) | (x >> 4) }
    }

    // MARK: Decoding

    /// Decodes a LOGIN7 message body (no packet header).
    public static func decode(from bytes: [UInt8], version: TDSVersion = .v7_4) throws(TDSDecodingError) -> Login7 {
        var reader = ByteReader(bytes)
        return try decode(from: &reader, version: version)
    }

    /// Decodes a LOGIN7 from the reader and consumes its `Length` bytes. The layout follows the
    /// message's own TDSVersion; `version` is not used.
    ///
    /// - Throws: `.truncated` when fewer than Length bytes are available; `.invalidLength` when
    ///   Length is shorter than the fixed part, or an offset/length points outside the message;
    ///   `.invalidEncoding` for bad UTF-16. Offsets in errors count from the start of LOGIN7.
    public static func decode(from reader: inout ByteReader, version: TDSVersion = .v7_4) throws(TDSDecodingError) -> Login7 {
        try TDSDecodingError.inContext("LOGIN7") { () throws(TDSDecodingError) in
            let start = reader.offset
            let base = reader.absoluteOffset
            var r = reader
            let length = Int(try r.readUInt32LE())
            let tdsVersion = TDSVersion(rawValue: try r.readUInt32LE())
            let fixed = fixedLength(for: tdsVersion)
            guard length >= fixed else {
                throw TDSDecodingError(.invalidLength, offset: base, "LOGIN7 Length \(length) is under the \(fixed)-byte fixed part")
            }
            guard length <= reader.remaining else {
                throw reader.truncated(length, "LOGIN7")
            }
            // From here the whole message is present: reads past its Length are malformed, not truncated.
            var login = Login7(tdsVersion: tdsVersion)
            do throws(TDSDecodingError) {
                r = ByteReader(reader.bytes, start: start + 8, end: start + length, baseOffset: reader.baseOffset)
                login.packetSize = try r.readUInt32LE()
                login.clientProgramVersion = try r.readUInt32LE()
                login.clientPID = try r.readUInt32LE()
                login.connectionID = try r.readUInt32LE()
                login.optionFlags1 = OptionFlags1(rawValue: try r.readUInt8())
                login.optionFlags2 = OptionFlags2(rawValue: try r.readUInt8())
                login.typeFlags = TypeFlags(rawValue: try r.readUInt8())
                login.optionFlags3 = OptionFlags3(rawValue: try r.readUInt8())
                login.clientTimeZone = try r.readInt32LE()
                login.clientLCID = try r.readUInt32LE()

                var entries: [(offset: Int, length: Int, at: Int)] = []
                for _ in 0..<9 {
                    let at = r.offset
                    entries.append((Int(try r.readUInt16LE()), Int(try r.readUInt16LE()), at))
                }
                login.clientID = try r.readBytes(6)
                let sspiAt = r.offset
                let ibSSPI = Int(try r.readUInt16LE()), cbSSPI = Int(try r.readUInt16LE())
                let attachAt = r.offset
                let ibAttach = Int(try r.readUInt16LE()), cchAttach = Int(try r.readUInt16LE())
                var change: (offset: Int, length: Int, at: Int) = (0, 0, 0)
                var sspiLong = 0
                if tdsVersion.generation >= 0x72 {
                    let at = r.offset
                    change = (Int(try r.readUInt16LE()), Int(try r.readUInt16LE()), at)
                    sspiLong = Int(try r.readUInt32LE())
                }

                /// A reader over `count` bytes at `offset` from the start of LOGIN7.
                func field(_ offset: Int, _ count: Int, at: Int, _ name: String) throws(TDSDecodingError) -> ByteReader {
                    guard offset >= 0, count >= 0, offset <= length, count <= length - offset else {
                        throw TDSDecodingError(.invalidLength, offset: reader.baseOffset &+ at,
                                               "\(name) (offset \(offset), \(count) bytes) lies outside the \(length)-byte LOGIN7")
                    }
                    return ByteReader(reader.bytes, start: start + offset, end: start + offset + count, baseOffset: reader.baseOffset)
                }
                func text(_ e: (offset: Int, length: Int, at: Int), _ name: String) throws(TDSDecodingError) -> String {
                    var f = try field(e.offset, e.length * 2, at: e.at, name)
                    return try f.readUTF16LE(byteCount: e.length * 2)
                }
                func secret(_ e: (offset: Int, length: Int, at: Int), _ name: String) throws(TDSDecodingError) -> RedactedPassword {
                    var f = try field(e.offset, e.length * 2, at: e.at, name)
                    let plain = deobfuscate(try f.readBytes(e.length * 2))
                    var p = ByteReader(plain, baseOffset: f.baseOffset &+ start &+ e.offset)
                    return RedactedPassword(try p.readUTF16LE(byteCount: plain.count))
                }

                login.hostName = try text(entries[0], "HostName")
                login.userName = try text(entries[1], "UserName")
                login.password = try secret(entries[2], "Password")
                login.appName = try text(entries[3], "AppName")
                login.serverName = try text(entries[4], "ServerName")
                login.libraryName = try text(entries[6], "CltIntName")
                login.language = try text(entries[7], "Language")
                login.database = try text(entries[8], "Database")
                var sspiCount = cbSSPI
                if cbSSPI == 0xFFFF && tdsVersion.generation >= 0x72 && sspiLong > 0 { sspiCount = sspiLong }
                var s = try field(ibSSPI, sspiCount, at: sspiAt, "SSPI")
                login.sspi = try s.readBytes(sspiCount)
                login.attachDBFile = try text((ibAttach, cchAttach, attachAt), "AtchDBFile")
                if tdsVersion.generation >= 0x72 {
                    login.changePassword = try secret(change, "ChangePassword")
                }
                login.featureExt = nil
                if tdsVersion.generation >= 0x74 && login.optionFlags3.contains(.extensionUsed) {
                    let ext = entries[5]
                    guard ext.length >= 4 else {
                        throw TDSDecodingError(.invalidLength, offset: reader.baseOffset &+ ext.at,
                                               "Extension of \(ext.length) bytes cannot hold the FeatureExt offset")
                    }
                    var e = try field(ext.offset, 4, at: ext.at, "Extension")
                    let featureOffset = Int(try e.readUInt32LE())
                    var f = try field(featureOffset, max(0, length - featureOffset), at: ext.offset, "FeatureExt")
                    login.featureExt = try Login7Feature.decodeList(from: &f)
                }
            } catch {
                // Every byte up to Length is present: running out inside it means a bad length.
                if error.code == .truncated {
                    var e = error
                    e.code = .invalidLength
                    throw e
                }
                throw error
            }
            reader.offset = start + length
            return login
        }
    }

    // MARK: Limits

    /// A LOGIN7 field longer than Microsoft's drivers allow (see ``limitViolation``).
    public struct LimitViolation: Hashable, Sendable, CustomStringConvertible {
        /// The field's [MS-TDS] name (`HostName`, `UserName`, `Password`, …); never its value.
        public var field: String
        /// Its length: UTF-16 code units for text, bytes for SSPI and for the whole message.
        public var length: Int
        /// The most the field may hold, in the same unit as ``length``.
        public var limit: Int
        public var description: String { "the LOGIN7 field \(field) is \(length) long; the limit is \(limit)" }
    }

    /// The longest text Microsoft's drivers send in a LOGIN7 string field, in UTF-16 code units:
    /// 128 for HostName, UserName, Password, AppName, ServerName, CltIntName, Language,
    /// Database and ChangePassword.
    public static let maximumFieldLength = 128
    /// The longest AtchDBFile, in UTF-16 code units (a Windows path: 260).
    public static let maximumAttachDBFileLength = 260
    /// The largest LOGIN7 message, in bytes ([MS-TDS] 2.2.6.4: at most 128K - 1).
    public static let maximumLength = 128 * 1024 - 1

    /// The first field over its limit, or over the 128K - 1-byte total; nil when the message
    /// can be sent as it is. ``encode(version:)`` cuts a field at its limit (so offsets never
    /// overlap), which a client should refuse instead: check this first.
    public var limitViolation: LimitViolation? {
        let texts: [(String, Int)] = [
            ("HostName", hostName.utf16.count), ("UserName", userName.utf16.count),
            ("Password", password.reveal().utf16.count), ("AppName", appName.utf16.count),
            ("ServerName", serverName.utf16.count), ("CltIntName", libraryName.utf16.count),
            ("Language", language.utf16.count), ("Database", database.utf16.count),
            ("ChangePassword", changePassword.reveal().utf16.count),
        ]
        for (field, length) in texts where length > Login7.maximumFieldLength {
            return LimitViolation(field: field, length: length, limit: Login7.maximumFieldLength)
        }
        if attachDBFile.utf16.count > Login7.maximumAttachDBFileLength {
            return LimitViolation(field: "AtchDBFile", length: attachDBFile.utf16.count, limit: Login7.maximumAttachDBFileLength)
        }
        if tdsVersion.generation < 0x72 && sspi.count > 0xFFFF {
            return LimitViolation(field: "SSPI", length: sspi.count, limit: 0xFFFF)
        }
        var features = ByteWriter()
        if let featureExt { Login7Feature.encodeList(featureExt, into: &features) }
        let total = Login7.fixedLength(for: tdsVersion) + 2 * texts.reduce(0) { $0 + $1.1 }
            + 2 * attachDBFile.utf16.count + sspi.count + features.count + 4
        if total > Login7.maximumLength {
            return LimitViolation(field: "Length", length: total, limit: Login7.maximumLength)
        }
        return nil
    }

    // MARK: Encoding

    /// Encodes the LOGIN7 body (no packet header), in the layout of `tdsVersion`; `version` is
    /// not used. Variable data is written in table order (HostName … ChangePassword, SSPI data
    /// last when there is any, so that a long SSPI blob never pushes a 16-bit offset past
    /// 65,535), then FeatureExt. Text longer than its limit (``maximumFieldLength``,
    /// ``maximumAttachDBFileLength``) is cut, one unit shorter when the cut would split a
    /// surrogate pair: check ``limitViolation`` before sending.
    public func encode(version: TDSVersion = .v7_4) -> [UInt8] {
        let gen = tdsVersion.generation
        let fixed = Login7.fixedLength(for: tdsVersion)
        var data = ByteWriter(capacity: 256)
        var table = ByteWriter(capacity: 64)
        func units(_ s: String, limit: Int = Login7.maximumFieldLength) -> [UInt8] {
            let kept = ByteWriter.utf16Prefix(s, maxUnits: limit)
            var w = ByteWriter(capacity: kept.count * 2)
            for u in kept { w.writeUInt16LE(u) }
            return w.bytes
        }
        func put(_ bytes: [UInt8], count: Int) {
            table.writeUInt16LE(UInt16(truncatingIfNeeded: fixed + data.count))
            table.writeUInt16LE(UInt16(truncatingIfNeeded: count))
            data.writeBytes(bytes)
        }
        func putText(_ s: String, limit: Int = Login7.maximumFieldLength) { let b = units(s, limit: limit); put(b, count: b.count / 2) }
        func putSecret(_ p: RedactedPassword) { let b = units(p.reveal()); put(Login7.obfuscate(b), count: b.count / 2) }

        putText(hostName)
        putText(userName)
        putSecret(password)
        putText(appName)
        putText(serverName)
        let useExtension = featureExt != nil && gen >= 0x74
        var extensionSlot = -1
        if useExtension {
            extensionSlot = data.count
            put([0, 0, 0, 0], count: 4)
        } else {
            put([], count: 0)
        }
        putText(libraryName)
        putText(language)
        putText(database)
        var clientIDBytes = Array(clientID.prefix(6))
        while clientIDBytes.count < 6 { clientIDBytes.append(0) }
        table.writeBytes(clientIDBytes)
        let longSSPI = gen >= 0x72 && sspi.count >= 0xFFFF
        let sspiBytes = longSSPI ? sspi : Array(sspi.prefix(0xFFFF))
        // ibSSPI: patched below when the SSPI data goes last.
        let sspiSlot = table.count
        table.writeUInt16LE(UInt16(truncatingIfNeeded: fixed + data.count))
        table.writeUInt16LE(longSSPI ? 0xFFFF : UInt16(truncatingIfNeeded: sspiBytes.count))
        putText(attachDBFile, limit: Login7.maximumAttachDBFileLength)
        if gen >= 0x72 {
            putSecret(changePassword)
            table.writeUInt32LE(longSSPI ? UInt32(truncatingIfNeeded: sspi.count) : 0)
        }
        if !sspiBytes.isEmpty {
            table.setUInt16LE(UInt16(truncatingIfNeeded: fixed + data.count), at: sspiSlot)
            data.writeBytes(sspiBytes)
        }
        if useExtension, let featureExt {
            data.setUInt32LE(UInt32(truncatingIfNeeded: fixed + data.count), at: extensionSlot)
            Login7Feature.encodeList(featureExt, into: &data)
        }

        var flags3 = optionFlags3
        if useExtension { flags3.insert(.extensionUsed) } else if gen >= 0x74 { flags3.remove(.extensionUsed) }
        var w = ByteWriter(capacity: fixed + data.count)
        w.writeUInt32LE(UInt32(truncatingIfNeeded: fixed + data.count))
        w.writeUInt32LE(tdsVersion.rawValue)
        w.writeUInt32LE(packetSize)
        w.writeUInt32LE(clientProgramVersion)
        w.writeUInt32LE(clientPID)
        w.writeUInt32LE(connectionID)
        w.writeUInt8(optionFlags1.rawValue)
        w.writeUInt8(optionFlags2.rawValue)
        w.writeUInt8(typeFlags.rawValue)
        w.writeUInt8(flags3.rawValue)
        w.writeInt32LE(clientTimeZone)
        w.writeUInt32LE(clientLCID)
        w.writeBytes(table.bytes)
        w.writeBytes(data.bytes)
        return w.bytes
    }

    /// A one-line summary; the password is never shown.
    public var description: String {
        var parts = ["LOGIN7 \(tdsVersion)", "packetSize=\(packetSize)", "host=\(hostName)", "user=\(userName)",
                     "password=\(password)", "app=\(appName)", "server=\(serverName)", "library=\(libraryName)",
                     "database=\(database)"]
        if !sspi.isEmpty { parts.append("sspi=\(sspi.count) bytes") }
        if let featureExt { parts.append("featureExt=\(featureExt)") }
        return parts.joined(separator: " ")
    }
}

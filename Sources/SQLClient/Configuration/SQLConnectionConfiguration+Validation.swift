import Foundation
import TDS

/// Checks a configuration before anything is sent: every value a user can type is either
/// accepted, clamped (durations, documented below) or refused with `.invalidConfiguration`
/// naming the setting (never its value: it may be a password). No value can trap.
extension SQLConnectionConfiguration {
    /// The longest duration the client waits for anything: Int32.max seconds (about 68 years).
    /// A longer ``connectTimeout``, ``loginTimeout``, ``queryTimeout``, ``cancelTimeout`` or
    /// per-request timeout (`Duration.seconds(Int64.max)`, `Connect Timeout=9223372036854775807`,
    /// `sqlclient -l 9223372036854775807`) is clamped to it: in effect, no timeout.
    public static let maximumTimeout: Duration = .seconds(Int64(Int32.max))

    /// `duration` clamped to 0…``maximumTimeout``; a negative duration is
    /// `.invalidConfiguration` naming `setting`.
    static func validatedTimeout(_ duration: Duration, _ setting: String) throws(SQLClientError) -> Duration {
        guard duration >= .zero else {
            throw SQLClientError(.invalidConfiguration, "\(setting) must not be negative")
        }
        return min(duration, maximumTimeout)
    }

    /// This configuration with its durations clamped, checked as a whole.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration`: a negative duration, a packet size
    ///   outside 512–32767, a ``textSize`` outside -1–2147483647, a ``maximumValueSize`` under 1, a browser port outside 1–65535, a
    ///   LOGIN7 field longer than the limit Microsoft's drivers enforce (128 characters for the
    ///   user, password, database, application, workstation, server and language; see
    ///   ``Login7/limitViolation``), ``columnEncryption`` before TDS 7.4, an empty or over-long
    ///   key store provider name, named by setting.
    func validated() throws(SQLClientError) -> SQLConnectionConfiguration {
        var c = self
        c.connectTimeout = try Self.validatedTimeout(connectTimeout, "connectTimeout")
        if let t = loginTimeout { c.loginTimeout = try Self.validatedTimeout(t, "loginTimeout") }
        if let t = queryTimeout { c.queryTimeout = try Self.validatedTimeout(t, "queryTimeout") }
        c.cancelTimeout = try Self.validatedTimeout(cancelTimeout, "cancelTimeout")
        guard (Packet.minimumSize ... Packet.maximumNegotiatedSize).contains(packetSize) else {
            throw SQLClientError(.invalidConfiguration, "packetSize must be 512–32767, got \(packetSize)")
        }
        if let textSize, !Self.textSizeRange.contains(textSize) {
            throw SQLClientError(.invalidConfiguration, "textSize must be -1 to 2147483647 bytes, got \(textSize)")
        }
        guard maximumValueSize >= 1 else {
            throw SQLClientError(.invalidConfiguration, "maximumValueSize must be at least 1 byte")
        }
        guard (1 ... 65535).contains(browserPort) else {
            throw SQLClientError(.invalidConfiguration, "browserPort must be 1–65535, got \(browserPort)")
        }
        try connectRetry.validate()
        if authentication.usesFedAuth, tdsVersion.generation < 0x74 {
            throw SQLClientError(.invalidConfiguration, "an access token (FEDAUTH) needs TDS 7.4 (tdsVersion is \(tdsVersion))")
        }
        if columnEncryption == .enabled, tdsVersion.generation < 0x74 {
            throw SQLClientError(.invalidConfiguration, "columnEncryption (Always Encrypted) needs TDS 7.4 (tdsVersion is \(tdsVersion))")
        }
        for name in columnEncryptionKeyStoreProviders.keys where name.isEmpty || name.utf16.count > 255 {
            throw SQLClientError(.invalidConfiguration, "columnEncryptionKeyStoreProviders: a provider name is 1 to 255 characters")
        }
        if let violation = c.login7(hostName: c.workstationID ?? "", clientPID: 0).limitViolation {
            throw SQLClientError(.invalidConfiguration, Self.describe(violation))
        }
        return c
    }

    /// The LOGIN7 this configuration sends ([MS-TDS] 2.2.6.4).
    func login7(hostName: String, clientPID: UInt32) -> Login7 {
        Login7(tdsVersion: tdsVersion, packetSize: UInt32(clamping: packetSize),
               clientProgramVersion: 0x0100_0000, clientPID: clientPID,
               hostName: hostName, userName: user, password: password, appName: applicationName,
               serverName: loginServerName ?? address.host, libraryName: "SQLClient", language: language, database: database)
    }

    /// A limit violation in terms of this configuration's settings (the value is never shown).
    static func describe(_ v: Login7.LimitViolation) -> String {
        let setting: String
        switch v.field {
        case "HostName": setting = "workstationID (Workstation ID)"
        case "UserName": setting = "user (User ID)"
        case "Password": setting = "password"
        case "AppName": setting = "applicationName (Application Name)"
        case "ServerName": setting = "the server host name"
        case "Language": setting = "language (Current Language)"
        case "Database": setting = "database (Initial Catalog)"
        case "Length": return "the login request would be \(v.length) bytes, more than the \(v.limit) LOGIN7 allows"
        default: setting = v.field
        }
        return "\(setting) is \(v.length) characters long; LOGIN7 allows at most \(v.limit) (\(v.field))"
    }
}

/// Where to connect: a host, and either a TCP port or a named instance to resolve through the
/// SQL Server Browser ([MC-SQLR], UDP 1434), or both (the port wins).
///
/// Accepted forms (as written for sqlcmd, ADO.NET and the FreeTDS-based library this replaces):
/// `host`, `host:port`, `host,port`, `host\instance`, `host\instance:port`, `host\instance,port`,
/// IPv6 literals `::1`, `[::1]`, `[::1]:port`, `[::1],port`, `::1,port`, `[::1]\instance`,
/// with an optional `tcp:` prefix; `.`, `(local)` and `(localdb)`-free `localhost` mean the local machine.
public struct SQLServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host name or IP literal (IPv6 without brackets).
    public var host: String
    /// The TCP port, when given.
    public var port: Int?
    /// The named instance, when given.
    public var instance: String?

    /// The port SQL Server's default instance listens on.
    public static let defaultPort = 1433

    /// An address by parts: no port and no instance connects to 1433; an instance without a
    /// port is resolved through the SQL Server Browser ([MC-SQLR]).
    public init(host: String, port: Int? = nil, instance: String? = nil) {
        self.host = host
        self.port = port
        self.instance = instance
    }

    /// Parses one of the accepted forms.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` naming what is wrong.
    public init(parsing text: String) throws {
        var rest = text.trimmingCharacters(in: .whitespaces)
        if rest.lowercased().hasPrefix("tcp:") { rest.removeFirst(4) }
        if rest.lowercased().hasPrefix("np:") || rest.lowercased().hasPrefix("lpc:") || rest.lowercased().hasPrefix("admin:") {
            throw SQLClientError(.unsupported, "only TCP connections are supported (\"\(text)\")")
        }
        guard !rest.isEmpty else { throw SQLClientError(.invalidConfiguration, "the server name is empty") }

        var host: String
        var port: Int?
        var instance: String?

        // The port: after the last ',' (any host), or after ':' when the host is not a bare IPv6 literal.
        func parsePort(_ s: Substring) throws -> Int {
            let t = s.trimmingCharacters(in: .whitespaces)
            guard let p = Int(t), (1...65535).contains(p) else {
                throw SQLClientError(.invalidConfiguration, "invalid port \"\(t)\" in server \"\(text)\"")
            }
            return p
        }

        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw SQLClientError(.invalidConfiguration, "unclosed '[' in server \"\(text)\"")
            }
            host = String(rest[rest.index(after: rest.startIndex) ..< close])
            var tail = rest[rest.index(after: close)...]
            if tail.hasPrefix("\\") {
                tail = tail.dropFirst()
                if let sep = tail.firstIndex(where: { $0 == "," || $0 == ":" }) {
                    instance = String(tail[..<sep])
                    port = try parsePort(tail[tail.index(after: sep)...])
                } else {
                    instance = String(tail)
                }
            } else if tail.hasPrefix(",") || tail.hasPrefix(":") {
                port = try parsePort(tail.dropFirst())
            } else if !tail.isEmpty {
                throw SQLClientError(.invalidConfiguration, "unexpected \"\(tail)\" after ']' in server \"\(text)\"")
            }
        } else {
            var main = Substring(rest)
            if let comma = main.lastIndex(of: ",") {
                port = try parsePort(main[main.index(after: comma)...])
                main = main[..<comma]
            }
            if let slash = main.firstIndex(of: "\\") {
                var inst = main[main.index(after: slash)...]
                main = main[..<slash]
                if port == nil, let colon = inst.lastIndex(of: ":") {
                    port = try parsePort(inst[inst.index(after: colon)...])
                    inst = inst[..<colon]
                }
                instance = String(inst)
            } else if port == nil {
                let colons = main.filter { $0 == ":" }.count
                if colons == 1, let colon = main.firstIndex(of: ":") {
                    port = try parsePort(main[main.index(after: colon)...])
                    main = main[..<colon]
                }
                // Two or more colons: a bare IPv6 literal, no port.
            }
            host = String(main)
        }
        host = host.trimmingCharacters(in: .whitespaces)
        if host == "." || host.lowercased() == "(local)" { host = "localhost" }
        guard !host.isEmpty else { throw SQLClientError(.invalidConfiguration, "the host is empty in server \"\(text)\"") }
        if let i = instance {
            let trimmed = i.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else {
                throw SQLClientError(.invalidConfiguration, "the instance name is empty in server \"\(text)\"")
            }
            guard trimmed.utf8.count <= 255, !trimmed.contains("\0") else {
                throw SQLClientError(.invalidConfiguration, "invalid instance name in server \"\(text)\"")
            }
            instance = trimmed
        }
        self.init(host: host, port: port, instance: instance)
    }

    /// `host[\instance][,port]`, with IPv6 literals in brackets.
    public var description: String {
        var text = host.contains(":") ? "[\(host)]" : host
        if let instance { text += "\\" + instance }
        if let port { text += ",\(port)" }
        return text
    }
}

import Foundation
import TDS

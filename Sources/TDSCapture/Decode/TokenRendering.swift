import TDS

/// Renders decoded tokens as ordered JSON objects for `sqlclient decode` ([MS-TDS] 2.2.7).
///
/// Every object starts with `token`, the [MS-TDS] name. COLMETADATA carries `columns` (`name`,
/// `type` as SQL Server declares it, `nullable`); ROW/NBCROW/ALTROW `values` in canonical text
/// (NULL as null); DONE/DONEPROC/DONEINPROC `status` (flag names) and `rowCount`; ERROR/INFO
/// `number`, `state`, `class`, `message`, `server`, `procedure`, `line`; ENVCHANGE `type`,
/// `new`, `old`; LOGINACK `tdsVersion`, `progName`, `progVersion`; RETURNSTATUS `value`;
/// RETURNVALUE `name`, `type`, `value`.
public enum TokenRendering {
    public static func json(_ token: Token) -> JSONValue {
        var o: [(String, JSONValue)] = [("token", .string(token.name))]
        switch token {
        case .colMetadata(let m):
            if m.isNoMetadata { o.append(("noMetadata", .bool(true))) }
            o.append(("columns", .array(m.columns.map(column))))
        case .row(let r): o.append(("values", values(r.values)))
        case .nbcRow(let r): o.append(("values", values(r.values)))
        case .altRow(let r): o.append(("values", values(r.values)))
        case .done(let d): o += done(d.status, d.currentCommand, d.rowCount)
        case .doneProc(let d): o += done(d.status, d.currentCommand, d.rowCount)
        case .doneInProc(let d): o += done(d.status, d.currentCommand, d.rowCount)
        case .error(let e): o += serverMessage(e.message)
        case .info(let i): o += serverMessage(i.message)
        case .envChange(let e):
            o.append(("type", .string(e.type.name)))
            o.append(("new", envValue(e.newValue)))
            o.append(("old", envValue(e.oldValue)))
        case .loginAck(let a):
            o.append(("tdsVersion", .string(a.tdsVersion.description)))
            o.append(("progName", .string(String(a.programName.reversed().drop { $0 == "\u{0}" }.reversed()))))
            o.append(("progVersion", .string(a.serverVersion.description)))
        case .returnStatus(let r):
            o.append(("value", .int(Int64(r.value))))
        case .returnValue(let r):
            o.append(("name", .string(r.name)))
            o.append(("type", .string(r.typeInfo.sqlTypeName)))
            o.append(("value", value(r.value)))
        case .order(let order):
            o.append(("columns", .array(order.columns.map { .int(Int64($0)) })))
        case .colInfo(let c):
            o.append(("columns", .array(c.columns.map { col in
                var m: [(String, JSONValue)] = [("column", .int(Int64(col.columnNumber))), ("table", .int(Int64(col.tableNumber))),
                                                ("status", .int(Int64(col.status.rawValue)))]
                if let name = col.baseName { m.append(("name", .string(name))) }
                return .object(m)
            })))
        case .tabName(let t):
            o.append(("tables", .array(t.tables.map { .string($0.joined(separator: ".")) })))
        case .featureExtAck(let f):
            o.append(("features", .array(f.features.map { .object([("feature", .string($0.id.name)), ("data", JSONValue.hex($0.data))]) })))
        case .sessionState(let s):
            o.append(("sequenceNumber", .uint(UInt64(s.sequenceNumber))))
            o.append(("recoverable", .bool(s.isRecoverable)))
            o.append(("states", .array(s.states.map { .object([("id", .int(Int64($0.id))), ("value", JSONValue.hex($0.value))]) })))
        case .sspi(let s):
            o.append(("length", .int(Int64(s.buffer.count))))
        case .fedAuthInfo(let f):
            if let url = f.stsURL { o.append(("stsURL", .string(url))) }
            if let spn = f.spn { o.append(("spn", .string(spn))) }
        case .offset(let off):
            o.append(("identifier", .int(Int64(off.identifier))))
            o.append(("offset", .int(Int64(off.offset))))
        case .altMetadata(let a):
            o.append(("id", .int(Int64(a.id))))
        case .dataClassification(let d):
            o.append(("labels", .array(d.labels.map { .string($0.name) })))
            o.append(("informationTypes", .array(d.informationTypes.map { .string($0.name) })))
        }
        return .object(o)
    }

    static func column(_ c: ColumnMetadata) -> JSONValue {
        .object([("name", .string(c.name)), ("type", .string(c.typeInfo.sqlTypeName)), ("nullable", .bool(c.isNullable))])
    }

    static func values(_ v: [SQLValue]) -> JSONValue { .array(v.map(value)) }

    /// A value by the JSON rule `sqlclient`'s query output shares (``JSONValue/sqlValue(_:)``).
    public static func value(_ v: SQLValue) -> JSONValue {
        JSONValue.sqlValue(v)
    }

    static func done(_ status: DoneStatus, _ command: UInt16, _ rowCount: UInt64) -> [(String, JSONValue)] {
        [("status", .array(status.flagNames.map { .string($0) })), ("rowCount", .uint(rowCount)),
         ("currentCommand", .int(Int64(command)))]
    }

    static func serverMessage(_ m: ServerMessage) -> [(String, JSONValue)] {
        [("number", .int(Int64(m.number))), ("state", .int(Int64(m.state))), ("class", .int(Int64(m.severity))),
         ("message", .string(m.message)), ("server", .string(m.serverName)), ("procedure", .string(m.procedureName)),
         ("line", .int(Int64(m.lineNumber)))]
    }

    static func envValue(_ v: EnvChange.Value) -> JSONValue {
        switch v {
        case .text(let s): return .string(s)
        case .bytes(let b): return b.isEmpty ? .null : JSONValue.hex(b)
        case .routing(let r):
            guard let r else { return .null }
            return .string("\(r.server):\(r.port)")
        }
    }
}

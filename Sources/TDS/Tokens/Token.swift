/// One token of a tabular result stream ([MS-TDS] 2.2.7), as decoded by ``TokenStreamDecoder``.
///
/// Equatable and Hashable so that decoders can be checked to give identical token lists
/// however the input is split. The rare, large tokens are `indirect` so that a `Token` stays a
/// few words wide and rows (the hot path) are passed around without copying big payloads.
public enum Token: Hashable, Sendable {
    /// [MS-TDS] ALTMETADATA (0x88), 2.2.7.1.
    indirect case altMetadata(AltMetadata)
    /// [MS-TDS] ALTROW (0xD3), 2.2.7.2.
    case altRow(AltRow)
    /// [MS-TDS] COLINFO (0xA5), 2.2.7.3.
    indirect case colInfo(ColInfo)
    /// [MS-TDS] COLMETADATA (0x81), 2.2.7.4.
    indirect case colMetadata(ColMetadata)
    /// [MS-TDS] DATACLASSIFICATION (0xA3), 2.2.7.5.
    indirect case dataClassification(DataClassification)
    /// [MS-TDS] DONE (0xFD), 2.2.7.6.
    case done(Done)
    /// [MS-TDS] DONEINPROC (0xFF), 2.2.7.7.
    case doneInProc(DoneInProc)
    /// [MS-TDS] DONEPROC (0xFE), 2.2.7.8.
    case doneProc(DoneProc)
    /// [MS-TDS] ENVCHANGE (0xE3), 2.2.7.9.
    indirect case envChange(EnvChange)
    /// [MS-TDS] ERROR (0xAA), 2.2.7.10.
    indirect case error(ErrorToken)
    /// [MS-TDS] FEATUREEXTACK (0xAE), 2.2.7.11.
    indirect case featureExtAck(FeatureExtAck)
    /// [MS-TDS] FEDAUTHINFO (0xEE), 2.2.7.12.
    indirect case fedAuthInfo(FedAuthInfo)
    /// [MS-TDS] INFO (0xAB), 2.2.7.13.
    indirect case info(InfoToken)
    /// [MS-TDS] LOGINACK (0xAD), 2.2.7.14.
    indirect case loginAck(LoginAck)
    /// [MS-TDS] NBCROW (0xD2), 2.2.7.15.
    case nbcRow(NBCRow)
    /// [MS-TDS] OFFSET (0x78), 2.2.7.16.
    case offset(Offset)
    /// [MS-TDS] ORDER (0xA9), 2.2.7.17.
    case order(Order)
    /// [MS-TDS] RETURNSTATUS (0x79), 2.2.7.18.
    case returnStatus(ReturnStatus)
    /// [MS-TDS] RETURNVALUE (0xAC), 2.2.7.19.
    indirect case returnValue(ReturnValue)
    /// [MS-TDS] ROW (0xD1), 2.2.7.20.
    case row(Row)
    /// [MS-TDS] SESSIONSTATE (0xE4), 2.2.7.21.
    indirect case sessionState(SessionState)
    /// [MS-TDS] SSPI (0xED), 2.2.7.22.
    case sspi(SSPIToken)
    /// [MS-TDS] TABNAME (0xA4), 2.2.7.23.
    indirect case tabName(TabName)

    /// The token type byte.
    public var type: TokenType {
        switch self {
        case .altMetadata: return .altMetadata
        case .altRow: return .altRow
        case .colInfo: return .colInfo
        case .colMetadata: return .colMetadata
        case .dataClassification: return .dataClassification
        case .done: return .done
        case .doneInProc: return .doneInProc
        case .doneProc: return .doneProc
        case .envChange: return .envChange
        case .error: return .error
        case .featureExtAck: return .featureExtAck
        case .fedAuthInfo: return .fedAuthInfo
        case .info: return .info
        case .loginAck: return .loginAck
        case .nbcRow: return .nbcRow
        case .offset: return .offset
        case .order: return .order
        case .returnStatus: return .returnStatus
        case .returnValue: return .returnValue
        case .row: return .row
        case .sessionState: return .sessionState
        case .sspi: return .sspi
        case .tabName: return .tabName
        }
    }

    /// The [MS-TDS] token name: `COLMETADATA`, `ROW`, `NBCROW`, `DONEINPROC`, …
    public var name: String { type.name }

    /// The values of a ROW, NBCROW or ALTROW; nil for other tokens.
    public var rowValues: [SQLValue]? {
        switch self {
        case .row(let r): return r.values
        case .nbcRow(let r): return r.values
        case .altRow(let r): return r.values
        default: return nil
        }
    }

    /// The status, command and count of DONE, DONEPROC or DONEINPROC; nil for other tokens.
    public var doneStatus: (status: DoneStatus, currentCommand: UInt16, rowCount: UInt64)? {
        switch self {
        case .done(let d): return (d.status, d.currentCommand, d.rowCount)
        case .doneProc(let d): return (d.status, d.currentCommand, d.rowCount)
        case .doneInProc(let d): return (d.status, d.currentCommand, d.rowCount)
        default: return nil
        }
    }
}

extension Token: CustomStringConvertible {
    /// A one-line summary: the token name and its key fields, e.g. `ROW [42, hello, NULL]`,
    /// `DONE COUNT rows=1`, `ENVCHANGE Database master -> tempdb`.
    public var description: String {
        switch self {
        case .row(let r): return "ROW \(r.values)"
        case .nbcRow(let r): return "NBCROW \(r.values)"
        case .altRow(let r): return "ALTROW id=\(r.id) \(r.values)"
        case .done, .doneProc, .doneInProc:
            guard let d = doneStatus else { return name }
            return "\(name) \(d.status)" + (d.status.contains(.count) ? " rows=\(d.rowCount)" : "")
        case .colMetadata(let m):
            return m.isNoMetadata ? "COLMETADATA (none)" : "COLMETADATA " + m.columns.map { "\($0.name) \($0.typeInfo.sqlTypeName)" }.joined(separator: ", ")
        case .envChange(let e):
            func text(_ v: EnvChange.Value) -> String {
                switch v {
                case .text(let s): return s
                case .bytes(let b): return SQLValue.hexText(b)
                case .routing(let r): return r.map { "\($0.server):\($0.port)" } ?? "-"
                }
            }
            return "ENVCHANGE \(e.type) \(text(e.oldValue)) -> \(text(e.newValue))"
        case .error(let e): return "ERROR \(e.message)"
        case .info(let i): return "INFO \(i.message)"
        case .loginAck(let a): return "LOGINACK TDS \(a.tdsVersion) \(a.trimmedProgramName) \(a.serverVersion)"
        case .returnStatus(let r): return "RETURNSTATUS \(r.value)"
        case .returnValue(let r): return "RETURNVALUE \(r.name) \(r.typeInfo.sqlTypeName) = \(r.value)"
        case .featureExtAck(let f): return "FEATUREEXTACK " + f.features.map(\.id.name).joined(separator: ", ")
        default: return name
        }
    }
}

/// One token of a tabular result stream ([MS-TDS] 2.2.7), as decoded by ``TokenStreamDecoder``.
///
/// Equatable and Hashable so that decoders can be checked to give identical token lists
/// however the input is split. The rare, large tokens are `indirect` so that a `Token` stays a
/// few words wide and rows (the hot path) are passed around without copying big payloads.
public enum Token: Hashable, Sendable {
    indirect case altMetadata(AltMetadata)
    case altRow(AltRow)
    indirect case colInfo(ColInfo)
    indirect case colMetadata(ColMetadata)
    indirect case dataClassification(DataClassification)
    case done(Done)
    case doneInProc(DoneInProc)
    case doneProc(DoneProc)
    indirect case envChange(EnvChange)
    indirect case error(ErrorToken)
    indirect case featureExtAck(FeatureExtAck)
    indirect case fedAuthInfo(FedAuthInfo)
    indirect case info(InfoToken)
    indirect case loginAck(LoginAck)
    case nbcRow(NBCRow)
    case offset(Offset)
    case order(Order)
    case returnStatus(ReturnStatus)
    indirect case returnValue(ReturnValue)
    case row(Row)
    indirect case sessionState(SessionState)
    case sspi(SSPIToken)
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

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

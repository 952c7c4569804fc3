import TDS

// The value types a user of SQLClient needs, reachable with `import SQLClient` alone. The wire
// codec (packets, messages, tokens and their decoders) stays in the TDS module: `import TDS`
// for it. Each name is the TDS type itself (no wrapper, no conversion). The wire-level names
// (Collation, TDSVersion, TDSDataType, ColumnFlags, RPCCall, RPCParameter) are `package`: the
// package's own targets spell them short; a user names them `TDS.…` after `import TDS`
// (issue 39: a smaller public surface).

/// A message the server sent in an ERROR or INFO token ([MS-TDS] 2.2.7.10 ERROR, 2.2.7.13 INFO):
/// the TDS module's one message type. `severity` is the token's Class byte (0–10 informational,
/// 11–16 errors the user can correct, 17–19 resource or software errors, 20–25 fatal);
/// `isError` tells ERROR from INFO; `description` is sqlcmd's two-line form.
public typealias SQLServerMessage = TDS.ServerMessage
/// A decoded SQL Server value (see `TDS.SQLValue`).
public typealias SQLValue = TDS.SQLValue
/// decimal/numeric, exact (see `TDS.SQLDecimal`).
public typealias SQLDecimal = TDS.SQLDecimal
/// money/smallmoney, exact to 4 decimal places (see `TDS.SQLMoney`).
public typealias SQLMoney = TDS.SQLMoney
/// A collation (LCID, flags, sort id), as in TYPE_INFO and ENVCHANGE (see `TDS.Collation`).
package typealias Collation = TDS.Collation
/// A TDS protocol version (7.1–7.4) (see `TDS.TDSVersion`).
package typealias TDSVersion = TDS.TDSVersion
/// A column's or parameter's wire type, with length, precision, scale and collation (see `TDS.TypeInfo`).
public typealias TypeInfo = TDS.TypeInfo
/// The data type byte of a TYPE_INFO (see `TDS.TDSDataType`).
package typealias TDSDataType = TDS.TDSDataType
/// COLMETADATA column flags (see `TDS.ColumnFlags`).
package typealias ColumnFlags = TDS.ColumnFlags
/// A password kept out of descriptions and logs (see `TDS.RedactedPassword`).
public typealias RedactedPassword = TDS.RedactedPassword
/// One RPC call: procedure, options, parameters (see `TDS.RPCCall`).
package typealias RPCCall = TDS.RPCCall
/// One RPC parameter on the wire (see `TDS.RPCParameter`).
package typealias RPCParameter = TDS.RPCParameter
/// sql_variant: a value with its base type (see `TDS.SQLVariant`).
public typealias SQLVariant = TDS.SQLVariant
/// date (see `TDS.SQLDate`).
public typealias SQLDate = TDS.SQLDate
/// time(n), in 100 ns ticks (see `TDS.SQLTime`).
public typealias SQLTime = TDS.SQLTime
/// datetime2(n) (see `TDS.SQLDateTime2`).
public typealias SQLDateTime2 = TDS.SQLDateTime2
/// datetimeoffset(n) (see `TDS.SQLDateTimeOffset`).
public typealias SQLDateTimeOffset = TDS.SQLDateTimeOffset
/// datetime, in 1/300 s ticks (see `TDS.SQLDateTime`).
public typealias SQLDateTime = TDS.SQLDateTime
/// smalldatetime (see `TDS.SQLSmallDateTime`).
public typealias SQLSmallDateTime = TDS.SQLSmallDateTime

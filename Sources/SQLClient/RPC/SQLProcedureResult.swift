import TDS

/// An OUTPUT parameter's value (or a user-defined function's result) as the server returned it
/// in a RETURNVALUE token ([MS-TDS] 2.2.7.19).
public struct SQLOutputValue: Sendable, Hashable, CustomStringConvertible {
    /// The parameter name with its `@`; empty when the server sent none (for example the handle
    /// of `sp_prepexec`, or a UDF result).
    public var name: String
    /// ParamOrdinal: the parameter's position in the call (0-based, as the server numbers it).
    public var ordinal: Int
    /// The type the server returned it as.
    public var typeInfo: TypeInfo
    /// The value (lossless).
    public var value: SQLValue
    /// True for a user-defined function's return value (Status 0x02) rather than an OUTPUT parameter.
    public var isFunctionResult: Bool

    /// An output value from its parts.
    public init(name: String, ordinal: Int, typeInfo: TypeInfo, value: SQLValue, isFunctionResult: Bool = false) {
        self.name = name
        self.ordinal = ordinal
        self.typeInfo = typeInfo
        self.value = value
        self.isFunctionResult = isFunctionResult
    }

    init(_ token: ReturnValue) {
        self.init(name: token.name, ordinal: Int(token.ordinal), typeInfo: token.typeInfo, value: token.value,
                  isFunctionResult: token.status & 0x02 != 0)
    }

    /// `@name type = value` (`#ordinal` when unnamed).
    public var description: String { "\(name.isEmpty ? "#\(ordinal)" : name) \(typeInfo.sqlTypeName) = \(value)" }
}


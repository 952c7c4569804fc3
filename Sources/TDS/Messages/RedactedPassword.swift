/// A password (or any secret) whose `description`, `debugDescription` and `Mirror` never show it.
///
/// Used by ``Login7`` for the Password and ChangePassword fields. Call `reveal()` to get the
/// text; nothing else prints it. Equality and hashing compare the secret.
public struct RedactedPassword: Hashable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private var secret: String

    /// Keeps `secret`, which no description shows.
    public init(_ secret: String) { self.secret = secret }
    public init(stringLiteral value: String) { self.secret = value }

    /// The secret text. Do not log it.
    public func reveal() -> String { secret }
    /// True when the secret is the empty string.
    public var isEmpty: Bool { secret.isEmpty }

    public var description: String { secret.isEmpty ? "<empty>" : "<redacted>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// Secret bytes (an access token) whose `description`, `debugDescription` and `Mirror` show
/// only the length. Call `reveal()` to get them.
public struct RedactedBytes: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private var secret: [UInt8]
    /// Keeps `secret`, which no description shows.
    public init(_ secret: [UInt8]) { self.secret = secret }
    /// The secret bytes. Do not log them.
    public func reveal() -> [UInt8] { secret }
    /// The number of secret bytes.
    public var count: Int { secret.count }
    public var description: String { "<redacted \(secret.count) bytes>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

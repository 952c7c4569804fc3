import Foundation
import SQLClient
import Synchronization

// The class itself: on Apple platforms an Objective-C class named `SQLClient` (so code written
// against the Objective-C SQLClient compiles after `@import SQLClientObjC;`), elsewhere the same
// Swift class. Only the declaration differs; everything else is in extensions shared by both
// (SQLClient+Operations.swift, SQLClientNotifications.swift, SQLClientValues.swift).

#if canImport(ObjectiveC)
/// The Objective-C SQLClient's API over `SQLConnection`: completion blocks, notifications and
/// Foundation values (`NSNumber`, `NSDecimalNumber`, `NSDate`, `NSUUID`, `NSData`, `NSString`,
/// `NSNull`), for apps that migrate from that library without rewriting their call sites.
///
/// ```swift
/// let client = SQLClient.sharedInstance()
/// client.connect("server\\instance:port", username: "user", password: "pass", database: "db") { success in
///     guard success else { return }
///     client.execute("SELECT * FROM Users") { results in
///         for table in results ?? [] { for row in table { for (column, value) in row { print("\(column)=\(value)") } } }
///         client.disconnect()
///     }
/// }
/// ```
///
/// Calls run one at a time in the order they were made (a call made while another runs waits
/// its turn); completion blocks and notifications arrive on ``callbackQueue`` (the main queue
/// when nil). Any number of instances may be connected at once. Thread-safe.
@objc(SQLClient) @objcMembers
public final class SQLClient: NSObject, Sendable {
    /// Settings, status, the queue of calls and the connection, behind one lock.
    let state = Mutex(SQLClientState())

    /// A client that is not connected, with the defaults: ``timeout`` 5 s, no ``maxTextSize``
    /// limit, ``charset`` "UTF-8", callbacks on the main queue.
    override public init() {
        super.init()
    }
}
#else
/// The Objective-C SQLClient's API over `SQLConnection`: completion blocks, notifications and
/// Foundation values (`NSNumber`, `NSDecimalNumber`, `NSDate`, `NSUUID`, `NSData`, `NSString`,
/// `NSNull`), for apps that migrate from that library without rewriting their call sites.
///
/// ```swift
/// let client = SQLClient.sharedInstance()
/// client.connect("server\\instance:port", username: "user", password: "pass", database: "db") { success in
///     guard success else { return }
///     client.execute("SELECT * FROM Users") { results in
///         for table in results ?? [] { for row in table { for (column, value) in row { print("\(column)=\(value)") } } }
///         client.disconnect()
///     }
/// }
/// ```
///
/// Calls run one at a time in the order they were made (a call made while another runs waits
/// its turn); completion blocks and notifications arrive on ``callbackQueue`` (the main queue
/// when nil). Any number of instances may be connected at once. Thread-safe.
public final class SQLClient: NSObject, Sendable {
    /// Settings, status, the queue of calls and the connection, behind one lock.
    let state = Mutex(SQLClientState())

    /// A client that is not connected, with the defaults: ``timeout`` 5 s, no ``maxTextSize``
    /// limit, ``charset`` "UTF-8", callbacks on the main queue.
    override public init() {
        super.init()
    }
}
#endif

/// What a ``SQLClient`` holds, behind one lock (its `Mutex`): its settings, its status, the tail
/// of its queue of calls, its connection and the notifications and completions waiting for delivery.
struct SQLClientState: ~Copyable {
    // Settings.
    var timeout: TimeInterval = 5
    var maxTextSize = 0
    var charset = "UTF-8"
    var callbackQueue: OperationQueue?
    var trustServerCertificate = false
    var configurationHandler: (@Sendable (inout SQLConnectionConfiguration) -> Void)?
    // Status.
    var host: String?
    var username: String?
    var database: String?
    var connected = false
    var pendingExecutions = 0
    // The calls, one after another: each waits for the one before it.
    var tail: Task<Void, Never>?
    // Touched only by the running call (calls are serial), kept here so that the lock covers it.
    var connection: SQLConnection?
    var appliedTextSize: Int?
    // Delivery on the callback queue, in order (see SQLClientNotifications.swift).
    var outbox: [@Sendable () -> Void] = []
    var draining = false
    /// Error notifications queued so far (tells a server error already posted from one that was not).
    var errorsPosted = 0
}

extension SQLClient {
    /// The shared client of apps written for the Objective-C SQLClient (`[SQLClient sharedInstance]`).
    /// Nothing ties it to one connection any more: make other instances with `SQLClient()` and
    /// connect them at the same time.
    public static let shared = SQLClient()

    /// The shared client (`[SQLClient sharedInstance]`), the same object every time: ``shared``.
    public class func sharedInstance() -> SQLClient { shared }

    /// Time allowed, in seconds, for logging in (``connect(_:username:password:database:completion:)``:
    /// resolving, TCP, PRELOGIN, TLS and LOGIN7) and for each ``execute(_:completion:)`` (counted
    /// from when it is sent). When a query's time passes the client sends ATTENTION ([MS-TDS]
    /// 2.2.1.7), the call fails with an error notification (code 20003, as FreeTDS's SYBETIME)
    /// and the connection stays usable. Default 5 (the Objective-C SQLClient's); 0, a negative
    /// value or NaN means no limit; values beyond 2,147,483,647 s are clamped. Each call uses the
    /// value it had when the call was made.
    public var timeout: TimeInterval {
        get { state.withLock { $0.timeout } }
        set { state.withLock { $0.timeout = newValue } }
    }

    /// The most bytes the server returns for one text, ntext, varchar(max), nvarchar(max) or
    /// varbinary(max) value (`SET TEXTSIZE`); 0 (the default) means no limit, so large values
    /// arrive whole (the Objective-C SQLClient cut them at 4,096). Applied at login and, when
    /// changed while connected, before the next ``execute(_:completion:)`` (each call uses the
    /// value it had when the call was made). Values above 2,147,483,647 are clamped; negative
    /// means no limit.
    public var maxTextSize: Int {
        get { state.withLock { $0.maxTextSize } }
        set { state.withLock { $0.maxTextSize = newValue } }
    }

    /// Accepted for source compatibility and otherwise ignored: text always arrives as Unicode
    /// (varchar in its column's code page or UTF-8, nvarchar as UTF-16), never through iconv.
    /// Default "UTF-8".
    public var charset: String {
        get { state.withLock { $0.charset } }
        set { state.withLock { $0.charset = newValue } }
    }

    /// Where completion blocks and notifications are delivered, in the order they happened; nil
    /// (the default) is the main queue (`OperationQueue.main`). A concurrent queue keeps the order
    /// too: deliveries run one after another. Read each time something is delivered.
    public var callbackQueue: OperationQueue? {
        get { state.withLock { $0.callbackQueue } }
        set { state.withLock { $0.callbackQueue = newValue } }
    }

    /// Trust the server's certificate without checking it (default false). Connections are
    /// encrypted and the certificate verified by default; a server whose certificate no trusted
    /// authority vouches for (a self-signed one) needs this, or a CA through ``configurationHandler``.
    /// Anyone between the app and the server can read the password when it is true.
    public var trustServerCertificate: Bool {
        get { state.withLock { $0.trustServerCertificate } }
        set { state.withLock { $0.trustServerCertificate = newValue } }
    }

    /// Swift only: adjusts the `SQLConnectionConfiguration` each connect builds from its
    /// arguments and the properties above (encryption, a CA file, the TDS version, the packet
    /// size, the application name…), just before connecting (the handler set when connect was called).
    public var configurationHandler: (@Sendable (inout SQLConnectionConfiguration) -> Void)? {
        get { state.withLock { $0.configurationHandler } }
        set { state.withLock { $0.configurationHandler = newValue } }
    }

    /// The server as last passed to ``connect(_:username:password:database:completion:)``; nil before.
    public var host: String? { state.withLock { $0.host } }

    /// The login name as last passed to ``connect(_:username:password:database:completion:)``; nil before.
    public var username: String? { state.withLock { $0.username } }

    /// The database as last passed to ``connect(_:username:password:database:completion:)``; nil
    /// before, or when none was given (the login's default database).
    public var database: String? { state.withLock { $0.database } }

    /// True from a successful connect until ``disconnect()``, or until a call finds the
    /// connection closed (the server closed it, the network failed, an ATTENTION went unanswered).
    public var isConnected: Bool { state.withLock { $0.connected } }

    /// True while an ``execute(_:completion:)`` is waiting for its turn or running; false again
    /// just before its completion block is queued for delivery.
    public var isExecuting: Bool { state.withLock { $0.pendingExecutions > 0 } }
}

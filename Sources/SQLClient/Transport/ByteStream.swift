import TDS

/// A bidirectional byte stream: a TCP socket, a TLS tunnel over one, or a test double.
///
/// One reader and one writer at a time: ``SQLConnection`` writes through one ordered path (its
/// write gate) and reads from one reader at a time. Reads return
/// whatever is available, at most `maxLength` bytes, waiting without blocking a thread of the
/// Swift cooperative pool; an empty array means the peer closed the stream. Every failure is a
/// ``SQLClientError`` (`.ioError`, `.connectionClosed`, `.timeout`, `.tlsFailed`, `.cancelled`).
package protocol ByteStream: AnyObject, Sendable {
    /// Reads up to `maxLength` (> 0) bytes; returns `[]` at end of stream.
    func read(maxLength: Int) async throws -> [UInt8]
    /// Writes all of `bytes`.
    func write(_ bytes: [UInt8]) async throws
    /// Closes the stream. Pending and later reads and writes fail with `.connectionClosed`.
    func close()
    /// Gives back an array a ``read(maxLength:)`` returned, once its reader is done with it: a
    /// stream may receive a later read into it (pages already touched, not fresh ones). `[]`
    /// lets go of what the stream keeps (a response ended). The default keeps nothing.
    func giveBack(_ storage: [UInt8])
}

extension ByteStream {
    package func giveBack(_ storage: [UInt8]) {}
}

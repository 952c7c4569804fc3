// libFuzzer harness: the whole client (SQLConnection: the packet framer, PRELOGIN, the connection
// state machine, the token decoder, row delivery) against a server whose every byte is the
// fuzz input. Byte 0 picks the read size; the rest is what the server sends: a PRELOGIN
// response, a login response and the response to one SQL batch, as TDS packets.
// Invariants: no trap, no hang; every failure is a SQLClientError; the client closes its stream
// whenever connecting or the query fails.
import Dispatch
import Foundation
import SQLClient
import TDS

/// A ByteStream that plays the fuzz input back in chunks, then reports end of stream.
final class ScriptedStream: ByteStream, @unchecked Sendable {
    private let lock = NSLock()
    private let data: [UInt8]
    private let chunk: Int
    private var position = 0
    private var _closed = false

    init(_ data: [UInt8], chunk: Int) { self.data = data; self.chunk = chunk }

    var closed: Bool { lock.withLock { _closed } }

    func read(maxLength: Int) async throws -> [UInt8] {
        lock.withLock {
            let n = min(maxLength, chunk, data.count - position)
            guard n > 0 else { return [] }
            defer { position += n }
            return Array(data[position ..< position + n])
        }
    }

    func write(_ bytes: [UInt8]) async throws {
        if closed { throw SQLClientError(.connectionClosed, "closed") }
    }

    func close() { lock.withLock { _closed = true } }
}

enum Outcome: Sendable { case ok, sqlError, otherError(String) }

func runClient(_ stream: ScriptedStream) async -> Outcome {
    var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "fuzz", port: 1433), user: "u",
                                            password: "p", encryption: .notSupported, connectTimeout: .seconds(30),
                                            packetSize: 4096)
    config.workstationID = "fuzz"
    do {
        let connection = try await SQLConnection.connect(config, over: stream)
        do {
            for try await event in connection.events("SELECT 1") { _ = "\(event)" }
        } catch is SQLClientError {
            await connection.close()
            return .sqlError
        }
        await connection.close()
        return .ok
    } catch is SQLClientError {
        return .sqlError
    } catch {
        return .otherError("\(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClient(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard !input.isEmpty else { return 0 }
    let chunks = [65_536, 1, 7, 512, 4096]
    let stream = ScriptedStream(Array(input.dropFirst()), chunk: chunks[Int(input[0]) % chunks.count])
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome = Outcome.ok
    Task.detached {
        outcome = await runClient(stream)
        done.signal()
    }
    done.wait()
    switch outcome {
    case .ok: break
    case .sqlError: invariant(stream.closed, "the client failed without closing its stream")
    case .otherError(let text): invariant(false, "not a SQLClientError: \(text)")
    }
    return 0
}

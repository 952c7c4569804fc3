import Dispatch
import SQLClient

/// Waits for one `async` ``TLSSession`` step from a thread that may block: the relay threads of
/// ``RecordingProxy`` (Dispatch threads that already block on sockets, never a thread of the
/// cooperative pool, which this would starve).
/// - Throws: whatever `step` throws.
func waitForTLSStep<T: Sendable>(_ step: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    // Unstructured: a blocking relay thread waits for one async step on a semaphore.
    Task {
        do {
            box.result = .success(try await step())
        } catch {
            box.result = .failure(error)
        }
        done.signal()
    }
    done.wait()
    guard let result = box.result else { throw SQLClientError(.tlsFailed, "the TLS step ended without a result") }
    return try result.get()
}

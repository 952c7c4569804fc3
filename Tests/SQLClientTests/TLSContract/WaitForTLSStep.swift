import Dispatch
import XCTest

/// The outcome of one async step, handed from its task to the waiting thread.
final class TLSStepResult<T: Sendable>: @unchecked Sendable {
    var result: Result<T, Error>?
}

/// Waits for one async TLS step from a synchronous test (XCTest's thread, never the cooperative
/// pool, which runs the step).
func waitFor<T: Sendable>(_ step: @escaping @Sendable () async throws -> T) throws -> T {
    let box = TLSStepResult<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { box.result = .success(try await step()) } catch { box.result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try XCTUnwrap(box.result).get()
}

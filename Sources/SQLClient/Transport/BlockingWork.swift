import Dispatch
import Foundation
import Synchronization

/// Blocking calls (`getaddrinfo`, GSSAPI asking a KDC) run off the cooperative thread pool, on a
/// Dispatch thread, within a deadline: the one helper every such call goes through.
enum BlockingWork {
    /// Runs `work` on a Dispatch thread and returns its result, or throws `timeoutError()` when
    /// `deadline` passes first (the work then finishes in the background and its result is
    /// dropped). A nil deadline waits for the work.
    /// - Throws: what `work` throws, or `timeoutError()`.
    static func run<T: Sendable>(deadline: DispatchTime?, timeoutError: @escaping @Sendable () -> Error,
                                 _ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            let once = Once(continuation)
            DispatchQueue.global().async {
                once.resume(Result { try work() })
            }
            if let deadline {
                DispatchQueue.global().asyncAfter(deadline: deadline) {
                    once.resume(.failure(timeoutError()))
                }
            }
        }
    }

    /// The deadline `timeout` from now (negative as now; capped at a day, so no value overflows).
    static func deadline(after timeout: Duration) -> DispatchTime {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        return .now() + min(max(0, seconds), 86_400)
    }

    /// A continuation resumed once: by whichever of the work and the timer comes first.
    private final class Once<T: Sendable>: Sendable {
        private let continuation: Mutex<CheckedContinuation<T, Error>?>
        init(_ continuation: CheckedContinuation<T, Error>) { self.continuation = Mutex(continuation) }
        func resume(_ result: Result<T, Error>) {
            let taken = continuation.withLock { c -> CheckedContinuation<T, Error>? in
                defer { c = nil }
                return c
            }
            taken?.resume(with: result)
        }
    }
}

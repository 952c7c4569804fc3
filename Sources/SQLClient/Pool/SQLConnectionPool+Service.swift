#if ServiceLifecycle
import ServiceLifecycle

/// The `ServiceLifecycle` trait: a pool runs as a swift-service-lifecycle `Service`.
///
/// ```swift
/// let pool = try SQLConnectionPool(configuration: configuration)
/// let group = ServiceGroup(services: [pool, httpServer], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
extension SQLConnectionPool: Service {
    /// Holds the pool until graceful shutdown is triggered, then closes it: new leases fail at
    /// once with ``SQLClientError`` `.connectionClosed` (so do leases still waiting), connections
    /// lent out are waited for up to ``Options/closeTimeout`` (the drain timeout) and then closed
    /// under their users, idle ones close at once. Returns when every connection is closed.
    ///
    /// Cancelling the task running it (the group's cancellation) ends it at once: lent
    /// connections are closed without waiting for their requests, which fail. A pool closed by
    /// ``close()`` before makes `run()` return as soon as shutdown or cancellation comes.
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled before any graceful shutdown: close everything now.
        }
        if Task.isCancelled {
            await closeNow()
            return
        }
        await withTaskCancellationHandler {
            await close(drainTimeout: nil)
        } onCancel: {
            // Unstructured: a cancellation handler cannot await; the close it starts is the pool's own.
            Task { await self.close(drainTimeout: .zero) }
        }
        if Task.isCancelled { await closeNow() }
    }

    /// Closes with no drain and waits for it outside the (cancelled) task.
    private func closeNow() async {
        // Unstructured on purpose: this task is cancelled, and the close must run to its end anyway.
        await Task { await self.close(drainTimeout: .zero) }.value
    }
}
#endif

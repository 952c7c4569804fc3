import Foundation
import Synchronization

/// Holding the connection for one caller between requests: ``SQLConnection/withTransaction(isolationLevel:isolation:_:)``
/// reserves it, so that requests of other tasks wait until the transaction ends instead of
/// running inside it. The decisions are `ConnectionStateMachine`'s (`ConnectionStateMachine/reserve(_:)`,
/// `ConnectionStateMachine/release(_:now:)`); the key travels with the requests made under it
/// as a task-local value (child tasks and `Task {}` inherit it; `Task.detached` does not).
extension SQLConnection {
    typealias ReservationID = ConnectionStateMachine.ReservationID

    /// The reservation the current task works under, if any.
    @TaskLocal static var currentReservation: ReservationID?

    /// A process-wide counter for reservation keys.
    private static let reservationCounter = Atomic<UInt64>(0)

    /// A new key, unique in this process (so a key never matches another connection's reservation).
    static func newReservationID() -> ReservationID { ReservationID(value: reservationCounter.wrappingAdd(1, ordering: .relaxed).newValue) }

    /// True when `key` holds this connection now.
    func holdsReservation(_ key: ReservationID?) -> Bool {
        key != nil && machine.reservation == key
    }

    /// Waits until `key` holds the connection (after the reservations before it).
    /// - Throws: `.connectionClosed` when the connection closes first; `.cancelled` when the
    ///   task is cancelled while waiting (the reservation is then given up).
    func reserve(_ key: ReservationID) async throws {
        reservations.expect(key)   // before the machine can answer
        performNow(actions: machine.reserve(key))
        do {
            try await reservations.wait(key, cancellingWith: { SQLClientError(.cancelled, "cancelled while waiting for the connection") })
        } catch {
            release(key)   // given up (a granted reservation is never cancelled here: its grant came first)
            throw error
        }
    }

    /// Ends reservation `key` (granted or still waiting): the next one, or the waiting requests, go on.
    func release(_ key: ReservationID) {
        performNow(actions: machine.release(key, now: clock.now()))
    }

    private func performNow(actions: [ConnectionStateMachine.Action]) {
        for action in actions { performNow(action) }
    }
}

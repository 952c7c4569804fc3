import Foundation
import XCTest
@testable import SQLClient

/// Reservations (withTransaction): while one is held, only requests made under it start; the
/// others wait in the queue until it is released, then run in order.
extension ConnectionStateMachineTests {
    private func show(_ actions: [ConnectionStateMachine.Action]) -> String {
        let shown = actions.map(Self.summary).filter { $0 != "none" }
        return shown.isEmpty ? "-" : shown.joined(separator: "; ")
    }

    private func complete(_ machine: inout ConnectionStateMachine, _ n: UInt64) -> String {
        _ = machine.packetsWritten(RequestID(value: n), complete: true)
        _ = machine.tokenReceived(Self.done([]))
        return show(machine.messageEnded(now: .zero))
    }

    func testOtherRequestsWaitForTheReservationToBeReleased() {
        var machine = loggedIn()
        let a = ConnectionStateMachine.ReservationID(value: 1)
        XCTAssertEqual(show(machine.reserve(a)), "granted(reservation1)")
        // Another task's request waits although the connection is idle.
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 1), timeout: nil, now: .zero)), "-")
        // The holder's requests run, ahead of it.
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 2), timeout: nil, now: .zero, reservation: a)), "start#2")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 3), timeout: nil, now: .zero, reservation: a)), "-")
        XCTAssertEqual(complete(&machine, 2), "completed#2(ok); start#3")
        XCTAssertEqual(complete(&machine, 3), "completed#3(ok)", "#1 still waits")
        XCTAssertEqual(machine.queuedRequests, [RequestID(value: 1)])
        // Released: the waiting request starts.
        XCTAssertEqual(show(machine.release(a, now: .zero)), "start#1")
        XCTAssertNil(machine.reservation)
    }

    func testAReservationWaitsForTheOneBeforeItAndARunningRequestFinishes() {
        var machine = loggedIn()
        let a = ConnectionStateMachine.ReservationID(value: 1), b = ConnectionStateMachine.ReservationID(value: 2)
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 1), timeout: nil, now: .zero)), "start#1")
        XCTAssertEqual(show(machine.reserve(a)), "granted(reservation1)", "granted while #1 runs")
        XCTAssertEqual(show(machine.reserve(b)), "-")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 2), timeout: nil, now: .zero, reservation: a)), "-")
        XCTAssertEqual(complete(&machine, 1), "completed#1(ok); start#2", "the running request finishes first")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 3), timeout: nil, now: .zero, reservation: b)), "-")
        XCTAssertEqual(complete(&machine, 2), "completed#2(ok)")
        XCTAssertEqual(show(machine.release(a, now: .zero)), "granted(reservation2); start#3")
        XCTAssertEqual(show(machine.release(b, now: .zero)), "-")
        XCTAssertEqual(show(machine.release(b, now: .zero)), "-", "a second release is ignored")
    }

    func testClosingFailsWaitingReservationsAndAReleasedWaiterIsForgotten() {
        var machine = loggedIn()
        let a = ConnectionStateMachine.ReservationID(value: 1), b = ConnectionStateMachine.ReservationID(value: 2)
        let c = ConnectionStateMachine.ReservationID(value: 3)
        _ = machine.reserve(a)
        _ = machine.reserve(b)
        _ = machine.reserve(c)
        XCTAssertEqual(show(machine.release(b, now: .zero)), "-", "a waiter that gives up leaves the queue")
        let close = machine.closeRequested()
        guard case .closeConnection(let context)? = close.first else { return XCTFail("\(close)") }
        XCTAssertEqual(context.failedReservations, [c])
        XCTAssertEqual(show(machine.reserve(a)), "failReservation(reservation1)(connectionClosed)")
    }

    /// A request made under a reservation that has ended fails (it must not run outside the
    /// transaction unnoticed), and so do the ones made under it still waiting when it ends.
    func testRequestsUnderAnEndedReservationFail() {
        var machine = loggedIn()
        let a = ConnectionStateMachine.ReservationID(value: 1)
        XCTAssertEqual(show(machine.reserve(a)), "granted(reservation1)")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 1), timeout: nil, now: .zero, reservation: a)), "start#1")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 2), timeout: nil, now: .zero, reservation: a)), "-")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 3), timeout: nil, now: .zero)), "-")
        XCTAssertEqual(complete(&machine, 1), "completed#1(ok); start#2")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 4), timeout: nil, now: .zero, reservation: a)), "-")
        XCTAssertEqual(complete(&machine, 2), "completed#2(ok); start#4")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 5), timeout: nil, now: .zero, reservation: a)), "-")
        XCTAssertEqual(complete(&machine, 4), "completed#4(ok); start#5")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 6), timeout: nil, now: .zero, reservation: a)), "-")
        // #5 runs and #6 waits when the reservation ends: #6 fails, #3 (no reservation) goes on after #5.
        XCTAssertEqual(show(machine.release(a, now: .zero)), "fail#6(invalidState)")
        XCTAssertEqual(complete(&machine, 5), "completed#5(ok); start#3")
        XCTAssertEqual(show(machine.enqueue(RequestID(value: 7), timeout: nil, now: .zero, reservation: a)),
                       "fail#7(invalidState)")
    }
}

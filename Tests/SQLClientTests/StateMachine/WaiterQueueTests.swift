import Foundation
import XCTest
@testable import SQLClient

/// The one waiter queue (connection and pool) in isolation: resume before and after parking,
/// order, close, cancellation before and after parking, at most one resume. No sleeping: a test
/// waits for a waiter to park by yielding until the queue shows it parked.
final class WaiterQueueTests: XCTestCase {
    struct Failure: Error, Equatable { var name: String }

    /// Counts calls from any thread (an owner's cancellation hook).
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func increment() { lock.withLock { value += 1 } }
        var count: Int { lock.withLock { value } }
    }

    private func parked<K, V>(_ queue: WaiterQueue<K, V>, _ key: K) async {
        while !queue.isParked(key) { await Task.yield() }
    }

    private func failure(of task: Task<Int, any Error>) async -> Failure? {
        do {
            _ = try await task.value
            return nil
        } catch {
            return error as? Failure
        }
    }

    func testAResumeBeforeTheWaitIsKeptAndReturnedAtOnce() async throws {
        let queue = WaiterQueue<Int, Int>()
        queue.expect(1)
        XCTAssertTrue(queue.resume(1, with: .success(5)))
        XCTAssertFalse(queue.resume(1, with: .success(6)), "a second resume is refused")
        XCTAssertTrue(queue.isIdle)
        XCTAssertEqual(queue.count, 1)
        let value = try await queue.wait(1)
        XCTAssertEqual(value, 5)
        XCTAssertEqual(queue.count, 0)
    }

    func testAnEarlyFailureIsThrownAtOnce() async {
        let queue = WaiterQueue<Int, Int>()
        queue.expect(1)
        queue.resume(1, with: .failure(Failure(name: "early")))
        do {
            _ = try await queue.wait(1)
            XCTFail("no failure")
        } catch {
            XCTAssertEqual(error as? Failure, Failure(name: "early"))
        }
        XCTAssertEqual(queue.count, 0)
    }

    func testAParkedWaiterIsResumedOnceWithItsValue() async throws {
        let queue = WaiterQueue<Int, Int>()
        queue.expect(7)
        let task = Task { try await queue.wait(7) }
        await parked(queue, 7)
        XCTAssertTrue(queue.resume(7, with: .success(42)))
        XCTAssertFalse(queue.resume(7, with: .success(43)), "no double resume")
        let value = try await task.value
        XCTAssertEqual(value, 42)
        XCTAssertEqual(queue.count, 0)
    }

    func testAResumeForAKeyNobodyAnnouncedIsRefusedAndKeepsNothing() {
        let queue = WaiterQueue<Int, Int>()
        XCTAssertFalse(queue.resume(3, with: .success(1)))
        XCTAssertEqual(queue.count, 0)
        XCTAssertFalse(queue.resumeFirst(with: .success(1)))
    }

    func testResumeFirstServesWaitersInTheOrderTheyWereAnnounced() async throws {
        let queue = WaiterQueue<UInt64, Int>()
        let keys = (0 ..< 3).map { _ in queue.expectNext() }
        // Parked in reverse order: the order of announcement decides, not of parking.
        var tasks: [Task<Int, any Error>] = []
        for key in keys.reversed() {
            tasks.append(Task { try await queue.wait(key) })
            await parked(queue, key)
        }
        XCTAssertTrue(queue.resumeFirst(with: .success(10)))
        XCTAssertEqual(keys.map { queue.isParked($0) }, [false, true, true])
        XCTAssertTrue(queue.resumeFirst(with: .success(20)))
        XCTAssertEqual(keys.map { queue.isParked($0) }, [false, false, true])
        XCTAssertTrue(queue.resumeFirst(with: .success(30)))
        XCTAssertFalse(queue.resumeFirst(with: .success(40)), "nobody left")
        let values = try await [tasks[2].value, tasks[1].value, tasks[0].value]
        XCTAssertEqual(values, [10, 20, 30])
    }

    func testResumeFirstHandsAnAnnouncedWaiterItsTurnBeforeItParks() async throws {
        let queue = WaiterQueue<UInt64, Int>()
        let first = queue.expectNext()
        let second = queue.expectNext()
        XCTAssertTrue(queue.resumeFirst(with: .success(1)))
        XCTAssertTrue(queue.resumeFirst(with: .success(2)), "the first is resumed already: the second")
        XCTAssertFalse(queue.resumeFirst(with: .success(3)))
        let a = try await queue.wait(first)
        let b = try await queue.wait(second)
        XCTAssertEqual([a, b], [1, 2])
    }

    func testResumeAllFailsEveryWaiterParkedOrNotAndKeepsEarlyResults() async throws {
        let queue = WaiterQueue<Int, Int>()
        queue.expect(1)
        queue.expect(2)
        queue.expect(3)
        queue.resume(3, with: .success(33))
        let task = Task { try await queue.wait(1) }
        await parked(queue, 1)
        queue.resumeAll(with: .failure(Failure(name: "closed")))
        XCTAssertTrue(queue.isIdle)
        let parkedFailure = await failure(of: task)
        XCTAssertEqual(parkedFailure, Failure(name: "closed"))
        let notParked = await failure(of: Task { try await queue.wait(2) })
        XCTAssertEqual(notParked, Failure(name: "closed"))
        let early = try await queue.wait(3)
        XCTAssertEqual(early, 33, "a result given before the close stays")
        XCTAssertEqual(queue.count, 0)
    }

    func testACancelledParkedWaiterIsRemovedAndThrowsTheCancellationError() async {
        let queue = WaiterQueue<Int, Int>()
        let hook = Counter()
        queue.expect(1)
        let task = Task { try await queue.wait(1, cancellingWith: { Failure(name: "cancelled") }, onCancel: { hook.increment() }) }
        await parked(queue, 1)
        task.cancel()
        let thrown = await failure(of: task)
        XCTAssertEqual(thrown, Failure(name: "cancelled"))
        XCTAssertEqual(hook.count, 1)
        XCTAssertEqual(queue.count, 0)
        XCTAssertFalse(queue.resume(1, with: .success(1)), "a turn after the cancel finds nobody")
    }

    func testAWaiterCancelledBeforeItParksThrowsAtOnce() async {
        let queue = WaiterQueue<Int, Int>()
        let hook = Counter()
        queue.expect(1)
        let task = Task { () throws -> Int in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.wait(1, cancellingWith: { Failure(name: "cancelled") }, onCancel: { hook.increment() })
        }
        let thrown = await failure(of: task)
        XCTAssertEqual(thrown, Failure(name: "cancelled"))
        XCTAssertEqual(hook.count, 1)
        XCTAssertEqual(queue.count, 0)
        XCTAssertFalse(queue.resume(1, with: .success(1)))
    }

    /// A waiter that never announced itself and is cancelled before it parks throws too (the
    /// wait announces it first), instead of parking until somebody resumes it.
    func testAnUnannouncedWaiterCancelledBeforeItParksThrowsAtOnce() async {
        let queue = WaiterQueue<Int, Int>()
        let task = Task { () throws -> Int in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.wait(1, cancellingWith: { Failure(name: "cancelled") })
        }
        let thrown = await failure(of: task)
        XCTAssertEqual(thrown, Failure(name: "cancelled"))
        XCTAssertEqual(queue.count, 0)
    }

    func testACancelAfterTheResumeKeepsTheResult() async throws {
        let queue = WaiterQueue<Int, Int>()
        queue.expect(1)
        queue.resume(1, with: .success(9))
        let task = Task { () throws -> Int in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.wait(1, cancellingWith: { Failure(name: "cancelled") })
        }
        let value = try await task.value
        XCTAssertEqual(value, 9)
    }

    func testWithOnlyAHookTheOwnerDecidesWhatACancelledWaiterGets() async {
        let queue = WaiterQueue<Int, Int>()
        let hook = Counter()
        queue.expect(1)
        let task = Task { try await queue.wait(1, onCancel: { hook.increment() }) }
        await parked(queue, 1)
        task.cancel()
        while hook.count == 0 { await Task.yield() }
        XCTAssertTrue(queue.isParked(1), "still waiting: the owner's machine decides")
        XCTAssertTrue(queue.resume(1, with: .failure(Failure(name: "owner"))))
        let thrown = await failure(of: task)
        XCTAssertEqual(thrown, Failure(name: "owner"))
    }

    func testAGateHandsItselfOverInOrderAndFailsItsWaitersOnClose() async {
        // The connection's write gate: busy flag plus the queue.
        let queue = WaiterQueue<UInt64, Void>()
        let a = queue.expectNext()
        let b = queue.expectNext()
        let first = Task { try await queue.wait(a) }
        let second = Task { try await queue.wait(b) }
        await parked(queue, a)
        await parked(queue, b)
        XCTAssertTrue(queue.resumeFirst(with: .success(())))
        let handedOver: Void? = try? await first.value
        XCTAssertNotNil(handedOver)
        queue.resumeAll(with: .failure(Failure(name: "closed")))
        do {
            try await second.value
            XCTFail("the close did not fail the second")
        } catch {
            XCTAssertEqual(error as? Failure, Failure(name: "closed"))
        }
        XCTAssertFalse(queue.resumeFirst(with: .success(())))
    }
}

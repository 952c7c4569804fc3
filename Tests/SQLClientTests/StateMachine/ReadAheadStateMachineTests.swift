import XCTest
@testable import SQLClient

/// The read-ahead as tables of inputs and expected outputs (no I/O, no tasks, no time: time plays
/// no part in it). A batch is written by its rows and how it ends: `b3` (3 rows), `b3.end`
/// (3 rows, the request's end), `b0.error`.
final class ReadAheadStateMachineTests: XCTestCase {
    typealias Batch = SQLConnection.ResponseBatch

    enum Event {
        /// The cursor of request n read `batch` itself and asks for a reader ahead (running: the request still runs).
        case start(UInt64, after: Batch, running: Bool = true)
        /// The cursor of request n asks for its next batch.
        case next(UInt64)
        /// Reader s's read waits for bytes holding `batch`.
        case readWaits(UInt64, holding: Batch)
        /// Reader s's read is back.
        case readResumes(UInt64)
        /// Reader s read `batch`.
        case read(UInt64, Batch)
        case stop
    }

    static func batch(_ rows: Int, end: Bool = false, error: Bool = false) -> Batch {
        var batch = Batch()
        for _ in 0 ..< rows { batch.items.append(.event(.returnStatus(0))) }
        batch.rowCount = rows
        batch.ended = end
        if error { batch.error = CancelReason.cancelled.error }
        return batch
    }

    static func show(_ batch: Batch) -> String {
        "b\(batch.rowCount)" + (batch.ended ? ".end" : "") + (batch.error != nil ? ".error" : "")
    }

    static func show(_ state: ReadAheadStateMachine.State) -> String {
        switch state {
        case .idle: return "idle"
        case .reading(let r, let awaited, let partial):
            return "reading(#\(r.id.value) s\(r.serial)\(awaited ? " awaited" : "")\(partial.map { " partial " + show($0) } ?? ""))"
        case .ready(let r, let batch): return "ready(#\(r.id.value) s\(r.serial) \(show(batch)))"
        }
    }

    /// Runs `events` and answers each with "output | state".
    static func run(_ events: [Event], _ machine: inout ReadAheadStateMachine) -> [String] {
        events.map { event in
            let output: String
            switch event {
            case .start(let n, let after, let running):
                output = machine.start(RequestID(value: n), after: after, isRunning: running).map { "started s\($0)" } ?? "-"
            case .next(let n):
                switch machine.next(RequestID(value: n)) {
                case .read: output = "read"
                case .take(let batch, let wake): output = "take \(show(batch))" + (wake.map { " wake s\($0)" } ?? "")
                case .wait(let s): output = "wait s\(s)"
                }
            case .readWaits(let s, let holding):
                var batch = holding
                machine.readWaits(s, holding: &batch)
                output = "left " + show(batch)
            case .readResumes(let s):
                output = "back " + show(machine.readResumes(s))
            case .read(let s, let batch):
                switch machine.batchRead(s, batch) {
                case .discard: output = "discard"
                case .deliver(let s, let last): output = "deliver s\(s)" + (last ? " last" : "")
                case .park(let s): output = "park s\(s)"
                case .keepLast: output = "keep last"
                }
            case .stop:
                output = machine.stop().map {
                    "stop s\($0.reader.serial)" + ($0.wakeParkedReader ? " wake reader" : "") + ($0.failWaitingCursor ? " fail cursor" : "")
                } ?? "-"
            }
            return output + " | " + show(machine.state)
        }
    }

    func check(_ rows: [(Event, String)], file: StaticString = #filePath, line: UInt = #line) {
        var machine = ReadAheadStateMachine()
        let got = Self.run(rows.map(\.0), &machine)
        for (index, (answer, row)) in zip(got, rows).enumerated() {
            XCTAssertEqual(answer, row.1, "step \(index + 1)", file: file, line: line)
        }
    }

    let b3 = batch(3), b5 = batch(5), b2end = batch(2, end: true), b0error = batch(0, error: true)

    func testTheCursorTakesABatchReadWhileItWasBusyAndTheParkedReaderGoesOn() {
        check([
            (.next(1), "read | idle"),
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.read(1, b5), "park s1 | ready(#1 s1 b5)"),
            (.next(1), "take b5 wake s1 | reading(#1 s1)"),
            (.read(1, b2end), "keep last | ready(#1 s1 b2.end)"),
            (.next(1), "take b2.end | idle"),
            (.next(1), "read | idle"),
        ])
    }

    func testACursorThatWaitsIsHandedTheBatchAndTheReaderReadsOnAtOnce() {
        check([
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.next(1), "wait s1 | reading(#1 s1 awaited)"),
            (.read(1, b5), "deliver s1 | reading(#1 s1)"),
            (.next(1), "wait s1 | reading(#1 s1 awaited)"),
            (.read(1, b0error), "deliver s1 last | idle"),
        ])
    }

    func testNoReaderAfterTheLastBatchOrForARequestThatIsOver() {
        check([
            (.start(1, after: b2end), "- | idle"),
            (.start(1, after: b0error), "- | idle"),
            (.start(1, after: b3, running: false), "- | idle"),
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.start(1, after: b3), "- | reading(#1 s1)"),
        ])
    }

    func testAnotherRequestsBatchStaysForItsCursorWhileTheNextRequestReadsItself() {
        check([
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.read(1, b2end), "keep last | ready(#1 s1 b2.end)"),
            (.next(2), "read | ready(#1 s1 b2.end)"),
            (.start(2, after: b3), "- | ready(#1 s1 b2.end)"),
            (.next(1), "take b2.end | idle"),
            (.start(2, after: b3), "started s2 | reading(#2 s2)"),
        ])
    }

    func testWhileTheReadWaitsForBytesTheCursorTakesWhatTheBatchHolds() {
        check([
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.readWaits(1, holding: b5), "left b0 | reading(#1 s1 partial b5)"),
            (.next(1), "take b5 | reading(#1 s1 partial b0)"),
            (.next(1), "wait s1 | reading(#1 s1 awaited partial b0)"),
            (.readResumes(1), "back b0 | reading(#1 s1 awaited)"),
            (.read(1, b3), "deliver s1 | reading(#1 s1)"),
            (.readWaits(1, holding: Batch()), "left b0 | reading(#1 s1 partial b0)"),
            (.next(1), "wait s1 | reading(#1 s1 awaited partial b0)"),
        ])
    }

    func testAReadThatComesBackUntouchedKeepsItsRows() {
        check([
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.readWaits(1, holding: b5), "left b0 | reading(#1 s1 partial b5)"),
            (.readResumes(1), "back b5 | reading(#1 s1)"),
            (.read(1, b5), "park s1 | ready(#1 s1 b5)"),
        ])
    }

    func testStoppingLetsGoOfTheBatchAndWakesWhoeverWaits() {
        check([
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.read(1, b5), "park s1 | ready(#1 s1 b5)"),
            (.stop, "stop s1 wake reader | idle"),
            (.stop, "- | idle"),
            (.start(1, after: b3), "started s2 | reading(#1 s2)"),
            (.next(1), "wait s2 | reading(#1 s2 awaited)"),
            (.stop, "stop s2 fail cursor | idle"),
            (.start(1, after: b3), "started s3 | reading(#1 s3)"),
            (.read(3, b2end), "keep last | ready(#1 s3 b2.end)"),
            (.stop, "stop s3 | idle"),
        ])
    }

    func testAStoppedReadersLateAnswersChangeNothing() {
        check([
            (.start(1, after: b3), "started s1 | reading(#1 s1)"),
            (.readWaits(1, holding: b5), "left b0 | reading(#1 s1 partial b5)"),
            (.stop, "stop s1 | idle"),
            (.start(2, after: b3), "started s2 | reading(#2 s2)"),
            (.readWaits(2, holding: b3), "left b0 | reading(#2 s2 partial b3)"),
            (.readResumes(1), "back b0 | reading(#2 s2 partial b3)"),
            (.read(1, b5), "discard | reading(#2 s2 partial b3)"),
            (.readWaits(1, holding: b5), "left b5 | reading(#2 s2 partial b3)"),
            (.readResumes(2), "back b3 | reading(#2 s2)"),
        ])
    }

    func testTheReadReturnsEarlyOnlyForTheCurrentReaderWhenItsCursorWaits() {
        var machine = ReadAheadStateMachine()
        guard let serial = machine.start(RequestID(value: 1), after: b3, isRunning: true) else { return XCTFail("not started") }
        XCTAssertFalse(machine.isAwaited(serial))
        _ = machine.next(RequestID(value: 1))
        XCTAssertTrue(machine.isAwaited(serial))
        XCTAssertFalse(machine.isAwaited(serial + 1))
        XCTAssertTrue(machine.isCurrent(serial))
        _ = machine.stop()
        XCTAssertFalse(machine.isAwaited(serial))
        XCTAssertFalse(machine.isCurrent(serial))
    }
}

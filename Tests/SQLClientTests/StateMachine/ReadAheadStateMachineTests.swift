import XCTest
@testable import SQLClient

/// Who reads the socket and the read-ahead, as tables of inputs and expected outputs (no I/O, no
/// tasks, no time: time plays no part in it). A batch is written by its rows and how it ends:
/// `b3` (3 rows), `b3.end` (3 rows, the request's end), `b0.error`. Each answer is
/// "output | read-ahead state | socket".
final class ReadAheadStateMachineTests: XCTestCase {
    typealias Batch = SQLConnection.ResponseBatch

    enum Event {
        /// The cursor of request n asks for its next batch (`mayRead`: its request runs, not abandoned).
        case next(UInt64, mayRead: Bool = true)
        /// The cursor of request n read `batch` itself (`caller`: where its caller runs;
        /// `running`: the request still runs).
        case cursorRead(UInt64, Batch, caller: ReadAheadStateMachine.Caller = .actor, running: Bool = true)
        /// Reader s's read waits for bytes holding `batch`.
        case readWaits(UInt64, holding: Batch)
        /// Reader s's read is back.
        case readResumes(UInt64)
        /// Reader s read `batch` (`running`: its request still runs).
        case read(UInt64, Batch, running: Bool = true)
        /// Request n is drained (`running`), or let go of (its cursor dropped after it ended).
        case drain(UInt64, running: Bool = true)
        case drainEnded
    }

    static func batch(_ rows: Int, end: Bool = false, error: Bool = false, large: Bool = false) -> Batch {
        var batch = Batch()
        batch.largePlainRows = large
        for _ in 0 ..< rows { batch.items.append(.event(.returnStatus(0))) }
        batch.rowCount = rows
        batch.ended = end
        if error { batch.error = CancelReason.cancelled.error }
        return batch
    }

    static func show(_ batch: Batch) -> String {
        "b\(batch.rowCount)" + (batch.largePlainRows ? ".large" : "") + (batch.ended ? ".end" : "") + (batch.error != nil ? ".error" : "")
    }

    static func show(_ machine: ReadAheadStateMachine) -> String {
        let state: String
        switch machine.state {
        case .idle: state = "idle"
        case .reading(let r, let awaited, let partial):
            state = "reading(#\(r.id.value) s\(r.serial)\(awaited ? " awaited" : "")\(partial.map { " partial " + show($0) } ?? ""))"
        case .ready(let r, let batch): state = "ready(#\(r.id.value) s\(r.serial) \(show(batch)))"
        }
        let socket: String
        switch machine.socket {
        case .free: socket = "free"
        case .cursor(let id): socket = "cursor #\(id.value)"
        case .ahead(let s): socket = "ahead s\(s)"
        case .draining(let id): socket = "draining #\(id.value)"
        }
        return state + " | " + socket + (machine.pendingDrain.map { " then drain #\($0.value)" } ?? "")
    }

    static func show(_ end: ReadAheadStateMachine.ReadEnd) -> String {
        switch end {
        case .none: return "-"
        case .startReader(let s): return "start s\(s)"
        case .drain(let id): return "drain #\(id.value)"
        }
    }

    /// Runs `events` and answers each with "output | state | socket".
    static func run(_ events: [Event], _ machine: inout ReadAheadStateMachine) -> [String] {
        events.map { event in
            let output: String
            switch event {
            case .next(let n, let mayRead):
                switch machine.next(RequestID(value: n), mayRead: mayRead) {
                case .read: output = "read"
                case .take(let batch, let reader): output = "take \(show(batch))" + (reader.map { " start s\($0)" } ?? "")
                case .wait(let s): output = "wait s\(s)"
                case .over: output = "over"
                }
            case .cursorRead(let n, let batch, let caller, let running):
                output = show(machine.cursorRead(RequestID(value: n), batch, caller: caller, isRunning: running))
            case .readWaits(let s, let holding):
                var batch = holding
                machine.readWaits(s, holding: &batch)
                output = "left " + show(batch)
            case .readResumes(let s):
                output = "back " + show(machine.readResumes(s))
            case .read(let s, let batch, let running):
                switch machine.batchRead(s, batch, isRunning: running) {
                case .discard: output = "discard"
                case .deliver(let s, let last): output = "deliver s\(s)" + (last ? " last" : "")
                case .keep: output = "keep"
                case .drain(let id): output = "discard, drain #\(id.value)"
                }
            case .drain(let n, let running):
                let action = machine.drain(RequestID(value: n), isRunning: running)
                output = (action.drainNow ? "drain now" : "-") + (action.failWaitingCursor.map { " fail cursor s\($0)" } ?? "")
            case .drainEnded:
                machine.drainEnded()
                output = "-"
            }
            return output + " | " + show(machine)
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
    /// Rows of 1 KiB or more with no transcoded column (vector, binary).
    let b3large = batch(3, large: true)

    /// A caller off any actor reads large plain rows itself: no reader ahead after such a batch,
    /// whether its cursor read it, took it ready or waited for it. Small rows are read ahead again.
    func testACallerOffAnyActorReadsLargePlainRowsItself() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3large, caller: .task), "- | idle | free"),
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3, caller: .task), "start s1 | reading(#1 s1) | ahead s1"),
            (.read(1, b3large), "keep | ready(#1 s1 b3.large) | free"),
            (.next(1), "take b3.large | idle | free"),
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3, caller: .task), "start s2 | reading(#1 s2) | ahead s2"),
            (.next(1), "wait s2 | reading(#1 s2 awaited) | ahead s2"),
            (.read(2, b3large), "deliver s2 last | idle | free"),
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b5, caller: .task), "start s3 | reading(#1 s3) | ahead s3"),
            (.read(3, b5), "keep | ready(#1 s3 b5) | free"),
            (.next(1), "take b5 start s3 | reading(#1 s3) | ahead s3"),
        ])
    }

    /// A caller on an actor (the main actor) has every batch read ahead, large rows too.
    func testACallerOnAnActorHasLargePlainRowsReadAhead() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3large, caller: .actor), "start s1 | reading(#1 s1) | ahead s1"),
            (.next(1), "wait s1 | reading(#1 s1 awaited) | ahead s1"),
            (.read(1, b3large), "deliver s1 | reading(#1 s1) | ahead s1"),
            (.read(1, b3large), "keep | ready(#1 s1 b3.large) | free"),
            (.next(1), "take b3.large start s1 | reading(#1 s1) | ahead s1"),
        ])
    }

    func testTheCursorTakesABatchReadWhileItWasBusyAndTakingItStartsTheNextRead() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.read(1, b5), "keep | ready(#1 s1 b5) | free"),
            (.next(1), "take b5 start s1 | reading(#1 s1) | ahead s1"),
            (.read(1, b2end), "keep | ready(#1 s1 b2.end) | free"),
            (.next(1), "take b2.end | idle | free"),
            (.next(1, mayRead: false), "over | idle | free"),
        ])
    }

    func testACursorThatWaitsIsHandedTheBatchAndTheReaderReadsOnAtOnce() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.next(1), "wait s1 | reading(#1 s1 awaited) | ahead s1"),
            (.read(1, b5), "deliver s1 | reading(#1 s1) | ahead s1"),
            (.next(1), "wait s1 | reading(#1 s1 awaited) | ahead s1"),
            (.read(1, b0error), "deliver s1 last | idle | free"),
        ])
    }

    func testNoReaderAfterTheLastBatchForARequestThatIsOverOrForTheBufferedShapes() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b2end), "- | idle | free"),
            (.next(2), "read | idle | cursor #2"),
            (.cursorRead(2, b0error), "- | idle | free"),
            (.next(3), "read | idle | cursor #3"),
            (.cursorRead(3, b3, running: false), "- | idle | free"),
            (.next(4), "read | idle | cursor #4"),
            (.cursorRead(4, b3, caller: .connection), "- | idle | free"),
            (.cursorRead(4, b3), "- | idle | free"),   // not the socket's reader: nothing changes
        ])
    }

    func testTheSocketHasOneReaderAtATime() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.next(1), "over | idle | cursor #1"),   // (never: one cursor, one call at a time)
            (.drain(1), "- | idle | cursor #1 then drain #1"),
            (.next(1, mayRead: false), "over | idle | cursor #1 then drain #1"),
            (.cursorRead(1, b0error), "drain #1 | idle | draining #1"),
            (.drain(1), "- | idle | draining #1"),   // a second drain of it: drained already
            (.next(2), "over | idle | draining #1"),
            (.drainEnded, "- | idle | free"),
            (.next(2), "read | idle | cursor #2"),
        ])
    }

    /// The last batch of request 1 read ahead while its caller is busy; that ends request 1, so
    /// request 2 starts and reads itself (no reader ahead for it while 1's batch is held: one
    /// batch held at most); 1's cursor still takes its batch, then 2 reads ahead.
    func testTheLastBatchOfOneRequestStaysForItsCursorWhileTheNextRequestStarts() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.read(1, b2end, running: false), "keep | ready(#1 s1 b2.end) | free"),
            (.next(2), "read | ready(#1 s1 b2.end) | cursor #2"),
            (.cursorRead(2, b3), "- | ready(#1 s1 b2.end) | free"),
            (.next(1, mayRead: false), "take b2.end | idle | free"),
            (.next(2), "read | idle | cursor #2"),
            (.cursorRead(2, b3), "start s2 | reading(#2 s2) | ahead s2"),
        ])
    }

    func testWhileTheReadWaitsForBytesTheCursorTakesWhatTheBatchHolds() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.readWaits(1, holding: b5), "left b0 | reading(#1 s1 partial b5) | ahead s1"),
            (.next(1), "take b5 | reading(#1 s1 partial b0) | ahead s1"),
            (.next(1), "wait s1 | reading(#1 s1 awaited partial b0) | ahead s1"),
            (.readResumes(1), "back b0 | reading(#1 s1 awaited) | ahead s1"),
            (.read(1, b3), "deliver s1 | reading(#1 s1) | ahead s1"),
            (.readWaits(1, holding: Batch()), "left b0 | reading(#1 s1 partial b0) | ahead s1"),
            (.next(1), "wait s1 | reading(#1 s1 awaited partial b0) | ahead s1"),
        ])
    }

    func testAReadThatComesBackUntouchedKeepsItsRows() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.readWaits(1, holding: b5), "left b0 | reading(#1 s1 partial b5) | ahead s1"),
            (.readResumes(1), "back b5 | reading(#1 s1) | ahead s1"),
            (.read(1, b5), "keep | ready(#1 s1 b5) | free"),
        ])
    }

    /// A drain (the request cancelled, or its cursor dropped) while the reader ahead's read waits
    /// for bytes: the waiting cursor is failed, what the batch held let go of, and the read goes
    /// on as the drain once it ends; nobody waits for the socket.
    func testADrainWhileTheReadAheadWaitsForBytesGoesOnFromThatRead() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.readWaits(1, holding: b5), "left b0 | reading(#1 s1 partial b5) | ahead s1"),
            (.next(1), "take b5 | reading(#1 s1 partial b0) | ahead s1"),
            (.next(1), "wait s1 | reading(#1 s1 awaited partial b0) | ahead s1"),
            (.drain(1), "- fail cursor s1 | idle | ahead s1 then drain #1"),
            (.next(1, mayRead: false), "over | idle | ahead s1 then drain #1"),
            (.readResumes(1), "back b0 | idle | ahead s1 then drain #1"),
            (.read(1, b3), "discard, drain #1 | idle | draining #1"),
            (.drainEnded, "- | idle | free"),
        ])
    }

    /// The same when the request ended on that very read (the ATTENTION acknowledged): nothing
    /// is left to drain.
    func testADrainAskedDuringTheReadThatEndsTheRequestIsDropped() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.drain(1), "- | idle | cursor #1 then drain #1"),
            (.cursorRead(1, b0error, running: false), "- | idle | free"),
            (.next(2), "read | idle | cursor #2"),
            (.cursorRead(2, b3), "start s1 | reading(#2 s1) | ahead s1"),
            (.drain(2), "- | idle | ahead s1 then drain #2"),
            (.read(1, b0error, running: false), "discard | idle | free"),
        ])
    }

    /// Cancelled (drained) while the batch read ahead waits to be taken: it is let go of, and the
    /// drain reads at once (no task is parked with it); a request over only lets go.
    func testADrainWhileABatchWaitsToBeTakenLetsGoOfItAndDrainsAtOnce() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.read(1, b5), "keep | ready(#1 s1 b5) | free"),
            (.drain(1), "drain now | idle | draining #1"),
            (.drain(1), "- | idle | draining #1"),
            (.drainEnded, "- | idle | free"),
            (.next(2), "read | idle | cursor #2"),
            (.cursorRead(2, b3), "start s2 | reading(#2 s2) | ahead s2"),
            (.read(2, b2end, running: false), "keep | ready(#2 s2 b2.end) | free"),
            (.drain(2, running: false), "- | idle | free"),   // its cursor dropped after the end: let go
            (.drain(2, running: false), "- | idle | free"),
        ])
    }

    func testAStoppedReadersLateAnswersChangeNothing() {
        check([
            (.next(1), "read | idle | cursor #1"),
            (.cursorRead(1, b3), "start s1 | reading(#1 s1) | ahead s1"),
            (.readWaits(1, holding: b5), "left b0 | reading(#1 s1 partial b5) | ahead s1"),
            (.drain(1, running: false), "- | idle | ahead s1"),
            (.readResumes(1), "back b0 | idle | ahead s1"),
            (.readWaits(1, holding: b5), "left b5 | idle | ahead s1"),
            (.read(1, b5, running: false), "discard | idle | free"),
            (.read(1, b5), "discard | idle | free"),
            (.next(2), "read | idle | cursor #2"),
            (.cursorRead(2, b3), "start s2 | reading(#2 s2) | ahead s2"),
            (.read(1, b5), "discard | reading(#2 s2) | ahead s2"),
            (.readResumes(1), "back b0 | reading(#2 s2) | ahead s2"),
        ])
    }

    func testTheReadReturnsEarlyOnlyForTheCurrentReaderWhenItsCursorWaits() {
        var machine = ReadAheadStateMachine()
        _ = machine.next(RequestID(value: 1), mayRead: true)
        guard case .startReader(let serial) = machine.cursorRead(RequestID(value: 1), b3, caller: .actor, isRunning: true) else {
            return XCTFail("not started")
        }
        XCTAssertFalse(machine.isAwaited(serial))
        _ = machine.next(RequestID(value: 1), mayRead: true)
        XCTAssertTrue(machine.isAwaited(serial))
        XCTAssertFalse(machine.isAwaited(serial + 1))
        _ = machine.drain(RequestID(value: 1), isRunning: true)
        XCTAssertFalse(machine.isAwaited(serial))
    }
}

@testable import TDS
import XCTest

/// The recycler keeps buffers by size class (issue 43): the decoder's lend buffers and the
/// smaller room of copied blocks come back interleaved, and neither size may crowd out the other.
final class RowBytesRecyclerTests: XCTestCase {
    private func buffer(_ capacity: Int) -> [UInt8] {
        var a: [UInt8] = []
        a.reserveCapacity(capacity)
        a.append(1)
        return a
    }

    func testBuffersOfOneSizeDoNotCrowdOutAnother() {
        let recycler = RowBytesRecycler()
        recycler.open()
        for _ in 0 ..< 6 { recycler.give(buffer(100 << 10)) }   // copied blocks' room
        recycler.give(buffer(768 << 10))                        // a lend buffer
        let lend = recycler.take(capacity: 768 << 10)
        XCTAssertNotNil(lend, "the lend buffer was freed because small ones filled the recycler")
        XCTAssertGreaterThanOrEqual(lend?.capacity ?? 0, 768 << 10)
        XCTAssertEqual(lend?.count, 0, "a buffer taken is emptied")
        var small = 0
        while recycler.take(capacity: 100 << 10, atMost: 200 << 10) != nil { small += 1 }
        XCTAssertEqual(small, RowBytesRecycler.keepPerSize, "at most keepPerSize of one size class are kept")
    }

    func testTheOldestIsFreedPastTheOverallLimitAndNoneIsKeptOnceClosed() {
        let recycler = RowBytesRecycler()
        recycler.open()
        let sizes = [64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20]
        XCTAssertEqual(Set(sizes.map(RowBytesRecycler.sizeClass)).count, sizes.count)
        for size in sizes { recycler.give(buffer(size)) }   // one more than `keep`, each its own class
        XCTAssertEqual(sizes.count, RowBytesRecycler.keep + 1)
        XCTAssertNil(recycler.take(capacity: 64 << 10, atMost: 127 << 10), "the oldest was kept past the limit")
        XCTAssertNotNil(recycler.take(capacity: 16 << 20), "the newest was not kept")
        recycler.give(buffer(128 << 10))
        recycler.close()
        XCTAssertNil(recycler.take(capacity: 1), "a buffer kept after close()")
        recycler.give(buffer(128 << 10))
        XCTAssertNil(recycler.take(capacity: 1), "a buffer kept while closed")
    }

    func testBuffersOutsideTheKeptRangeAreFreed() {
        let recycler = RowBytesRecycler()
        recycler.open()
        recycler.give(buffer(RowBytesRecycler.smallest / 2))
        recycler.give(buffer(65 << 20))
        XCTAssertNil(recycler.take(capacity: 1))
    }
}

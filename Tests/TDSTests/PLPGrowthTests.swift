@testable import TDS
import XCTest

/// How a large value's buffer grows as its PLP chunks arrive (``PLPProgress/grownCapacity(count:adding:declared:)``):
/// bounded by what arrived, whatever length is declared, and, for a declared length, ending
/// exactly at it after buffers that add little to the pages touched (issue 43).
final class PLPGrowthTests: XCTestCase {
    /// The capacities a value of `total` bytes (declared, or unknown) takes when it arrives in
    /// `chunk`-byte pieces, as `WireRowProgress` grows its buffer.
    private func capacities(total: Int, chunk: Int, declared: UInt64) -> [Int] {
        var count = 0, capacity = 0
        var steps: [Int] = []
        while count < total {
            let n = min(chunk, total - count)
            if capacity - count < n {
                capacity = PLPProgress.grownCapacity(count: count, adding: n, declared: declared)
                XCTAssertGreaterThanOrEqual(capacity, count + n)
                XCTAssertLessThanOrEqual(capacity, max(count * PLPProgress.growthFactor + (1 << 20), count + n, 65_536),
                                         "more than growthFactor x what arrived")
                steps.append(capacity)
            }
            count += n
        }
        return steps
    }

    func testADeclaredValueEndsAtItsLengthAfterBuffersOfAFewPercent() {
        for total in [100_000_000, 10_000_000, 1_000_000, 70_000] {
            let steps = capacities(total: total, chunk: 8000, declared: UInt64(total))
            XCTAssertEqual(steps.last, total, "\(total): the last buffer is the value's length")
            let before = steps.dropLast().reduce(0, +)
            XCTAssertLessThanOrEqual(Double(before), Double(total) * 0.02 + 65_536,
                                     "\(total): buffers before the last \(steps.dropLast()) touch more than 2 % of the value")
        }
    }

    func testAHostileDeclaredLengthAllocatesByWhatArrived() {
        // 2^31-1 declared, 3 bytes arrived: at most 1 MiB (a step of the series toward the total).
        XCTAssertLessThanOrEqual(PLPProgress.grownCapacity(count: 0, adding: 3, declared: 0x7FFF_FFFF), 1 << 20)
        // 1 MB arrived of 2^31-1 declared: at most 64x that (plus 1 MiB), not the declared length.
        let grown = PLPProgress.grownCapacity(count: 1_000_000, adding: 8000, declared: 0x7FFF_FFFF)
        XCTAssertLessThanOrEqual(grown, 64_000_000 + (1 << 20))
        XCTAssertLessThan(grown, 0x7FFF_FFFF)
    }

    func testAnUnknownLengthGrowsInSteps() {
        let steps = capacities(total: 50_000_000, chunk: 8000, declared: PLPProgress.unknownPLPLength)
        XCTAssertGreaterThanOrEqual(steps.last ?? 0, 50_000_000)
        XCTAssertLessThanOrEqual(steps.count, 5, "\(steps)")
    }
}

// Shared helpers for the libFuzzer harnesses (compiled into each harness; see Fuzz/run.sh).
import TDS

/// The fuzz input as an array.
@inline(__always) func fuzzBytes(_ start: UnsafeRawPointer?, _ count: Int) -> [UInt8] {
    guard let start, count > 0 else { return [] }
    return Array(UnsafeRawBufferPointer(start: start, count: count))
}

/// A property of the decoders that must hold for every input; a violation is a bug, reported
/// as a crash so that libFuzzer saves the input.
func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("invariant violated: \(message())") }
}

/// Errors must name an offset inside the input (the end counts: "ended here").
func checkOffset(_ error: TDSDecodingError, inputCount: Int, base: Int = 0) {
    invariant(error.offset >= base && error.offset <= base + inputCount,
              "error offset \(error.offset) outside 0...\(inputCount): \(error)")
}

let fuzzVersions: [TDSVersion] = [.v7_1_1, .v7_2, .v7_3A, .v7_3B, .v7_4, .v7_0]

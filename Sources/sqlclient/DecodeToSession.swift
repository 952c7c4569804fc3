import Foundation
import SQLClientTesting
import TDSCapture
import TDS

/// `sqlclient decode CAPTURE --to-session FILE.tdssession`: the capture's plaintext
/// conversations as a replay recording (one section per conversation, see
/// `ReplayRecording(capture:)`). Prints what was written; exit status 0 when at least one
/// session was written, 1 when the capture holds none, 2 when it cannot be read or written.
func writeCaptureSessions(_ bytes: [UInt8], fileName: String, options: DecodeOptions, to output: String) -> Int32 {
    let recording: ReplayRecording
    do {
        recording = try ReplayRecording(capture: bytes, fileName: fileName, options: options)
    } catch {
        writeStderr("sqlclient decode: \(fileName): \(error)\n")
        return 2
    }
    guard !recording.sections.isEmpty else {
        writeStderr("sqlclient decode: \(fileName) holds no TDS exchange to replay\n")
        return 1
    }
    do {
        try recording.write(to: URL(fileURLWithPath: output))
    } catch {
        writeStderr("sqlclient decode: cannot write \(output): \(error.localizedDescription)\n")
        return 2
    }
    for s in recording.sections {
        print("\(s.name): \(s.exchanges.count) exchange\(s.exchanges.count == 1 ? "" : "s")")
    }
    print("wrote \(recording.sections.count) session\(recording.sections.count == 1 ? "" : "s") to \(output)")
    return 0
}

// libFuzzer harness: the capture readers (pcap, pcapng, .hex), TCP reassembly, TDS message
// splitting, version inference and the whole `sqlclient decode` pipeline (CaptureDecoder).
// Invariants: no trap, no hang; only CaptureError is thrown by the readers.
import TDS
import TDSCapture

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCapture(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    // CaptureDecoder reads the file (CaptureFile, so the reader its format detection picks),
    // reassembles its conversations and splits them into sessions (CaptureFile.tdsSessions), then
    // decodes every message: the readers, reassembly and TDSSession are not run a second time here.
    let report = CaptureDecoder.decode(bytes: input)
    _ = report.sessions.count
    // The reader that format detection did not pick, on the same bytes.
    let format = CaptureFormat.detect(input, fileName: nil)
    if format != .pcap { _ = try? PcapReader.frames(from: input) }
    if format != .pcapng { _ = try? PcapNGReader.frames(from: input) }
    return 0
}

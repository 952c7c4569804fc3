// libFuzzer harness: the capture readers (pcap, pcapng, .hex), TCP reassembly, TDS message
// splitting, version inference and the whole `sqlclient decode` pipeline (CaptureDecoder).
// Invariants: no trap, no hang; only CaptureError is thrown by the readers.
import TDS
import TDSCapture

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCapture(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    if let file = try? CaptureFile(bytes: input) {
        if let conversations = try? file.tdsConversations() {
            for c in conversations {
                let session = TDSSession(conversation: c)
                _ = session.messages.count
            }
        }
    }
    _ = try? PcapReader.frames(from: input)
    _ = try? PcapNGReader.frames(from: input)
    _ = CaptureDecoder.decode(bytes: input)
    return 0
}

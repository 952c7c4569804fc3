// libFuzzer harness: PacketAssembler ([MS-TDS] 2.2.3) over arbitrary streams.
// Byte 0 picks the negotiated packet size, byte 1 the chunking; the rest is the stream.
// Invariants: no trap; errors name an offset inside the stream; the same packets, messages and
// error whether the stream arrives whole or in chunks; payloads never exceed the packet size.
import TDS

struct FramingResult: Equatable {
    var packets: [Packet] = []
    var messages: [TDSMessage] = []
    var error: TDSDecodingError?
}

func frame(_ stream: [UInt8], maxSize: Int, chunk: Int) -> FramingResult {
    var assembler = PacketAssembler(maximumPacketSize: maxSize)
    var result = FramingResult()
    var i = 0
    repeat {
        let end = min(i + chunk, stream.count)
        assembler.append(stream[i..<end])
        i = end
        do {
            while let out = try assembler.next() {
                invariant(out.packet.payload.count + 8 <= maxSize, "payload over the packet size")
                invariant(Int(out.packet.header.length) == out.packet.payload.count + 8, "length mismatch")
                result.packets.append(out.packet)
                if let m = out.message { result.messages.append(m) }
            }
        } catch {
            result.error = error
            return result
        }
    } while i < stream.count
    return result
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPacketFraming(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard input.count >= 2 else { return 0 }
    let sizes = [512, 4096, 8000, 32767, 65535, 9, 16]
    let maxSize = sizes[Int(input[0]) % sizes.count]
    let chunk = Int(input[1] % 17) + 1
    let stream = Array(input[2...])
    let whole = frame(stream, maxSize: maxSize, chunk: max(stream.count, 1))
    let split = frame(stream, maxSize: maxSize, chunk: chunk)
    invariant(whole == split, "whole and chunked framing differ")
    if let e = whole.error { checkOffset(e, inputCount: stream.count) }
    // Whole messages re-split and re-framed give the same payloads.
    for m in whole.messages where !m.payload.isEmpty {
        let bytes = Packet.encode(message: m.payload, type: m.type, packetSize: 512)
        var a = PacketAssembler(maximumPacketSize: 512)
        a.append(bytes)
        do {
            let again = try a.nextMessages()
            invariant(again.count == 1 && again[0].payload == m.payload, "re-framed message differs")
        } catch {
            invariant(false, "re-framing failed: \(error)")
        }
    }
    return 0
}

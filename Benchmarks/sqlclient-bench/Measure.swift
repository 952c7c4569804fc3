import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Process measurements: heap allocations (through the preloaded malloc counter), resident
/// memory and a monotonic clock.
enum Measure {
    private typealias CountFunction = @convention(c) () -> UInt64

    /// `bench_malloc_count` of Benchmarks/malloc-counter when it is preloaded (LD_PRELOAD).
    private static let countFunction: CountFunction? = {
        #if canImport(Glibc)
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "bench_malloc_count") else { return nil }
        return unsafeBitCast(symbol, to: CountFunction.self)
        #else
        return nil
        #endif
    }()

    /// Heap allocations so far in this process, nil when the counter is not preloaded.
    static func allocations() -> UInt64? { countFunction?() }

    /// A field of /proc/self/status in bytes ("VmHWM" = peak resident set, "VmRSS" = now).
    static func statusBytes(_ field: String) -> Int? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.dropFirst(field.count + 1).filter(\.isNumber)
            return Int(digits).map { $0 * 1024 }
        }
        return nil
        #else
        return nil
        #endif
    }

    static var peakRSS: Int? { statusBytes("VmHWM") }
    static var currentRSS: Int? { statusBytes("VmRSS") }

    /// Resets the peak resident set to the current one (Linux 4.0+: write 5 to clear_refs).
    static func resetPeakRSS() {
        #if os(Linux)
        if let h = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
            h.write(Data("5".utf8))
            try? h.close()
        }
        #endif
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// CPU time of every thread of the process, seconds.
    static func cpuNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Minor page faults of the process so far (a page touched for the first time).
    static func faultsNow() -> Int {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Int(usage.ru_minflt)
    }
}

/// One measurement printed by a child process as a JSON line and read back by the driver.
struct Sample: Codable, Sendable {
    var rows: Int
    var bytes: Int
    var seconds: Double
    var checksum: String
    /// Heap allocations over the measured span; nil without the malloc counter.
    var allocations: Int?
    /// Peak resident memory of the process (VmHWM), bytes.
    var peakRSS: Int?
    var packetSize: Int?
    /// SQLClient: peak resident memory during the read over the resident memory just before it.
    var rssGrowth: Int?
    /// CPU time of the client's process (every thread) over the measured span, seconds.
    var cpuSeconds: Double?
    /// Minor page faults of the client's process over the measured span.
    var pageFaults: Int?

    var rowsPerSecond: Double { seconds > 0 ? Double(rows) / seconds : 0 }
    var megabytesPerSecond: Double { seconds > 0 ? Double(bytes) / seconds / 1e6 : 0 }
    var allocationsPerRow: Double? { allocations.map { rows > 0 ? Double($0) / Double(rows) : 0 } }

    func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    static func parse(_ line: Substring) -> Sample? {
        try? JSONDecoder().decode(Sample.self, from: Data(line.utf8))
    }
}

func hex(_ v: UInt64) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 16 - s.count)) + s
}

/// Prints to standard error.
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

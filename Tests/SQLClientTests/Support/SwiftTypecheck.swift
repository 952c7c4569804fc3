import Foundation
import XCTest
import SQLClientTesting

/// Type-checks a Swift snippet against the modules of this build (`swiftc -typecheck` with the
/// build's Modules directory), to show that something does, or does not, compile.
enum SwiftTypecheck {
    /// The `Modules` directory next to the running test bundle, nil when not found.
    static func modulesDirectory() -> URL? {
        var candidates: [URL] = []
        let runner = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        candidates.append(runner.deletingLastPathComponent().appendingPathComponent("Modules"))
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("Modules"))
        }
        return candidates.first {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("SQLClient.swiftmodule").path)
        }
    }

    /// Type-checks `source`; returns swiftc's exit status and its diagnostics.
    /// Throws XCTSkip when swiftc or the built modules cannot be found.
    static func check(_ source: String) throws -> (status: Int32, diagnostics: String) {
        guard let modules = modulesDirectory() else { throw XCTSkip("the build's Modules directory was not found") }
        let root = SharedCaptures.packageRoot(from: #filePath)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("typecheck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("snippet.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let moduleMap = root.appendingPathComponent("Sources/CSQLClientOpenSSL/module.modulemap").path
        let r = try CLIComparisonTests.run("/usr/bin/env", [
            "swiftc", "-typecheck", file.path, "-I", modules.path, "-Xcc", "-fmodule-map-file=\(moduleMap)",
        ])
        return (r.status, r.stdout + r.stderr)
    }
}

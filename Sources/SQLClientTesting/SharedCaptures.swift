import Foundation

/// Locates `../shared/captures` (relative to the package root) for tests and tools.
public enum SharedCaptures {
    /// The captures folder, or nil when absent. `SQLCLIENT_CAPTURES` overrides the location.
    public static func directory(packageRoot: URL) -> URL? {
        if let env = ProcessInfo.processInfo.environment["SQLCLIENT_CAPTURES"], !env.isEmpty {
            let url = URL(fileURLWithPath: env)
            return FileManager.default.fileExists(atPath: url.path) ? url : nil
        }
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/captures")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// The package root, found from a source file path (`#filePath`) by walking up to Package.swift.
    public static func packageRoot(from filePath: String) -> URL {
        var url = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
            url = url.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }
}

import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Azure CLI (`az account get-access-token --resource <resource> -o json`) or the Azure
/// Developer CLI (`azd auth token --output json --scope <scope>`) as a credential: the token of
/// the developer signed in at this machine. The program is found on `PATH` (of the injected
/// environment), run without a shell, its output bounded (1 MiB) and its run bounded by the login
/// timeout (then killed).
public struct DeveloperCLICredential: EntraTokenCredential, CustomStringConvertible {
    /// Which command-line tool.
    public enum Tool: String, Sendable {
        /// `az`, the Azure CLI.
        case azureCLI = "az"
        /// `azd`, the Azure Developer CLI.
        case azureDeveloperCLI = "azd"
    }

    /// The tool asked.
    public var tool: Tool
    /// The tenant to ask for (nil: the tool's default).
    public var tenantID: String?
    private let environment: EntraEnvironment
    private let clock: any EntraClock

    /// A credential running `tool`.
    public init(_ tool: Tool, tenantID: String? = nil, environment: EntraEnvironment = .process,
                clock: any EntraClock = SystemEntraClock()) {
        self.tool = tool
        self.tenantID = tenantID
        self.environment = environment
        self.clock = clock
    }

    public var authenticationName: String { tool == .azureCLI ? "AzureCliCredential" : "AzureDeveloperCliCredential" }
    public var cacheIdentity: String { tool.rawValue + "@" + (tenantID ?? "") }
    public var description: String { "DeveloperCLICredential(\(tool.rawValue))" }

    /// The largest output read from the tool.
    static let maximumOutput = 1 << 20

    /// The program's path on `PATH`, nil when absent.
    func executable() -> String? {
        let path = environment["PATH"] ?? "/usr/bin:/bin:/usr/local/bin"
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = String(dir) + "/" + tool.rawValue
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    public func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        let name = authenticationName
        guard let program = executable() else {
            throw EntraCredentialError(.notAvailable, credential: name, "\(tool.rawValue) is not on PATH")
        }
        var args: [String]
        switch tool {
        case .azureCLI:
            args = ["account", "get-access-token", "--resource", request.resource, "-o", "json"]
            if let tenantID { args += ["--tenant", tenantID] }
        case .azureDeveloperCLI:
            args = ["auth", "token", "--output", "json", "--scope", request.scope]
            if let tenantID { args += ["--tenant-id", tenantID] }
        }
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        // No child processes on Apple's devices (Foundation has no Process there).
        throw EntraCredentialError(.notAvailable, credential: name, "\(tool.rawValue) cannot be run on this platform")
        #else
        let result = try await BoundedProcess.run(program, args, environment: environment.variables, timeout: timeout,
                                                  maximumOutput: Self.maximumOutput, credential: name)
        guard result.status == 0 else {
            let err = String(decoding: result.stderr.prefix(2000), as: UTF8.self)
            let firstLine = err.split(separator: "\n").first(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }).map(String.init) ?? ""
            let lower = err.lowercased()
            if lower.contains("az login") || lower.contains("azd auth login") || lower.contains("not logged in") || lower.contains("please run") {
                throw EntraCredentialError(.notAvailable, credential: name, endpoint: program,
                                           "not signed in (run `\(tool == .azureCLI ? "az login" : "azd auth login")`): \(firstLine.prefix(300))")
            }
            throw EntraCredentialError(.authenticationFailed, credential: name, endpoint: program,
                                       "exit status \(result.status): \(firstLine.prefix(300))")
        }
        return try EntraHTTPClient.parseToken(result.stdout, credential: name, endpoint: program, request: request, now: clock.now())
        #endif
    }
}

#if !(os(iOS) || os(tvOS) || os(watchOS) || os(visionOS))
/// A child process with bounded output and time (the developer CLIs).
enum BoundedProcess {
    struct Result { var status: Int32; var stdout: [UInt8]; var stderr: [UInt8] }

    static func run(_ program: String, _ arguments: [String], environment: [String: String], timeout: Duration,
                    maximumOutput: Int, credential: String) async throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let state = State(limit: maximumOutput)
        do {
            try process.run()
        } catch {
            throw EntraCredentialError(.notAvailable, credential: credential, endpoint: program, "cannot start: \(error.localizedDescription)")
        }
        let seconds = max(0.001, Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        return try await withCheckedThrowingContinuation { continuation in
            let group = DispatchGroup()
            for (pipe, isOut) in [(out, true), (err, false)] {
                group.enter()
                Thread.detachNewThread {
                    let handle = pipe.fileHandleForReading
                    while true {
                        let chunk = handle.availableData
                        if chunk.isEmpty { break }
                        if !state.append(chunk, toOut: isOut) {
                            kill(process.processIdentifier, SIGKILL)
                            break
                        }
                    }
                    group.leave()
                }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                guard state.claim() else { return }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                // Not waiting for the pipes: a grandchild may hold them open.
                continuation.resume(throwing: EntraCredentialError(.timeout, credential: credential, endpoint: program,
                                                                   "did not finish within the time left for the login"))
            }
            DispatchQueue.global().async {
                group.wait()
                process.waitUntilExit()
                guard state.claim() else { return }
                if state.overflowed {
                    continuation.resume(throwing: EntraCredentialError(.responseTooLarge, credential: credential, endpoint: program,
                                                                       "wrote more than \(maximumOutput) bytes"))
                } else {
                    let (o, e) = state.buffers
                    continuation.resume(returning: Result(status: process.terminationStatus, stdout: o, stderr: e))
                }
            }
        }
    }

    final class State: Sendable {
        let limit: Int
        private let state = Mutex<(out: [UInt8], err: [UInt8], overflowed: Bool, resumed: Bool)>(([], [], false, false))
        var overflowed: Bool { state.withLock { $0.overflowed } }
        init(limit: Int) { self.limit = limit }
        /// True for the first caller only (who resumes the continuation).
        func claim() -> Bool { state.withLock { if $0.resumed { return false }; $0.resumed = true; return true } }
        var buffers: ([UInt8], [UInt8]) { state.withLock { ($0.out, $0.err) } }
        func append(_ data: Data, toOut: Bool) -> Bool {
            state.withLock { s in
                if toOut { s.out.append(contentsOf: data) } else { s.err.append(contentsOf: data) }
                if s.out.count + s.err.count > limit { s.overflowed = true; return false }
                return true
            }
        }
    }
}
#endif

import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting
import TDS

/// `sqlclient -G --authentication-method …` against the local Entra ID and the FEDAUTHINFO TDS
/// server, with exactly the environment given (loopback endpoints only).
final class EntraCLITests: XCTestCase {
    /// Every run also points the metadata endpoint at a closed loopback port, so that even on an
    /// Azure VM the default chain never asks 169.254.169.254.
    func run(_ s: EntraScenario, _ arguments: [String], _ env: [String: String]) throws -> CLI.Result {
        var env = env
        env["AZURE_POD_IDENTITY_AUTHORITY_HOST"] = "http://127.0.0.1:9"
        return try CLI.execute(try CLI.binary(), ["-S", "127.0.0.1,\(s.tds.port)", "-N", "notsupported"] + arguments
                        + ["-Q", "SELECT @@SERVERNAME", "-h", "-1"], environment: env)
    }

    func testDeviceCodeFlowPrintsTheMessageAndSignsIn() throws {
        let s = try EntraScenario(expectedIdentity: "device-code-user")
        defer { s.stop() }
        s.entra.pendingPolls = 2
        let empty = try EntraScenario.temporaryDirectory()
        let r = try run(s, ["-G", "--authentication-method", "ActiveDirectoryDeviceCodeFlow"],
                        ["AZURE_AUTHORITY_HOST": s.entra.authorityHost, "PATH": empty, "HOME": empty])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("enter the code LOCAL-CODE"), r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").first?.trimmingCharacters(in: .whitespaces), "azure", r.stdout)
        XCTAssertEqual(s.tds.records.last?.fedAuth?.workflow, 0x03)
        XCTAssertEqual(s.entra.requests.filter { $0.hasSuffix("/token") }.count, 3)
    }

    func testDefaultChainAndServicePrincipal() throws {
        let s = try EntraScenario(expectedIdentity: "cli-user")
        defer { s.stop() }
        let dir = try EntraScenario.temporaryDirectory()
        try LocalEntraServer.writeFakeCLI("az", in: dir, identity: "cli-user")
        // -G alone is ActiveDirectoryDefault: nothing in the environment, so the Azure CLI's token.
        var r = try run(s, ["-G"], ["AZURE_AUTHORITY_HOST": s.entra.authorityHost, "PATH": dir, "HOME": dir])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout.split(separator: "\n").first?.trimmingCharacters(in: .whitespaces), "azure", r.stdout)
        // The environment step first when it is set.
        s.entra.register(clientID: "env-app", secret: "env-secret-31")
        s.expectedIdentity = "env-app"
        r = try run(s, ["--authentication-method", "ActiveDirectoryDefault"],
                    ["AZURE_AUTHORITY_HOST": s.entra.authorityHost, "PATH": dir, "HOME": dir, "AZURE_TENANT_ID": s.entra.tenant,
                     "AZURE_CLIENT_ID": "env-app", "AZURE_CLIENT_SECRET": "env-secret-31"])
        XCTAssertEqual(r.status, 0, r.stderr)
        // A service principal from -U and -P; a wrong secret fails with Entra's code, the secret never printed.
        s.entra.register(clientID: "sp-app", secret: "sp-secret-42")
        s.expectedIdentity = "sp-app"
        r = try run(s, ["--authentication-method", "ActiveDirectoryServicePrincipal", "-U", "sp-app", "-P", "sp-secret-42"],
                    ["AZURE_AUTHORITY_HOST": s.entra.authorityHost, "PATH": dir, "HOME": dir])
        XCTAssertEqual(r.status, 0, r.stderr)
        r = try run(s, ["--authentication-method", "ActiveDirectoryServicePrincipal", "-U", "sp-app", "-P", "wrong-secret-43"],
                    ["AZURE_AUTHORITY_HOST": s.entra.authorityHost, "PATH": dir, "HOME": dir])
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("AADSTS7000215"), r.stderr)
        XCTAssertFalse(r.stderr.contains("wrong-secret-43") || r.stdout.contains("wrong-secret-43"))
        // Nothing configured at all: one error naming every step, exit status 3.
        let empty = try EntraScenario.temporaryDirectory()
        r = try run(s, ["-G"], ["PATH": empty, "HOME": empty])
        XCTAssertEqual(r.status, 3, r.stderr)
        for step in ["EnvironmentCredential", "ActiveDirectoryWorkloadIdentity", "ActiveDirectoryManagedIdentity",
                     "AzureCliCredential", "AzureDeveloperCliCredential"] {
            XCTAssertTrue(r.stderr.contains(step), "\(step): \(r.stderr)")
        }
    }
}

import Foundation
import SQLClientTesting
import XCTest
@testable import SQLClient

/// The Azure Key Vault key store against a local Key Vault and a local Entra ID (127.0.0.1 only):
/// keys made by the test, the challenge and the token through the Entra token cache, the CEK
/// signature verified here, and every refusal typed and naming the key path.
final class AzureKeyVaultKeyStoreTests: XCTestCase {
    private var entra: LocalEntraServer!
    private var vault: LocalKeyVaultServer!

    override func setUpWithError() throws {
        entra = try LocalEntraServer()
        entra.register(clientID: "ae-app", secret: "ae-secret-5521")
        entra.register(clientID: "other-app", secret: "other-secret")
        vault = try LocalKeyVaultServer(authority: entra.stsURL)
        vault.grant(identity: "ae-app")
    }

    override func tearDown() {
        vault?.stop()
        entra?.stop()
    }

    private func provider(clientID: String = "ae-app", secret: String = "ae-secret-5521", cache: EntraTokenCache = EntraTokenCache(),
                          loopback: Bool = true) -> SQLAzureKeyVaultKeyStoreProvider {
        let credential = ClientSecretCredential(clientID: clientID, secret: secret,
                                                environment: EntraEnvironment(variables: ["AZURE_AUTHORITY_HOST": entra.authorityHost]))
        return SQLAzureKeyVaultKeyStoreProvider(credential: credential, allowLoopbackEndpoints: loopback, tokenCache: cache, timeout: .seconds(10))
    }

    private func code(_ body: () async throws -> some Any) async -> ColumnEncryptionError? {
        do { _ = try await body(); return nil } catch { return error as? ColumnEncryptionError }
    }

    func testWrapThenUnwrapThroughKeyVaultWithOneTokenAndOneKeyFetch() async throws {
        let path = try vault.createKey(name: "cmk1")
        let cache = EntraTokenCache()
        let provider = provider(cache: cache)
        let cek = (0 ..< 32).map { UInt8(255 - $0 * 3) }
        let blob = try await provider.encryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", columnEncryptionKey: cek)
        // SqlClient's layout: version 1, the lower-cased path, 256-byte ciphertext and signature.
        let pathBytes = EncryptedColumnEncryptionKey.utf16LE(path.lowercased())
        XCTAssertEqual(blob[0], 1)
        XCTAssertEqual(Int(blob[1]) | Int(blob[2]) << 8, pathBytes.count)
        XCTAssertEqual(Int(blob[3]) | Int(blob[4]) << 8, 256)
        XCTAssertEqual(Array(blob[5 ..< 5 + pathBytes.count]), pathBytes)
        XCTAssertEqual(blob.count, 5 + pathBytes.count + 512)
        let back = try await provider.decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "rsa_oaep", encryptedKey: blob)
        XCTAssertEqual(back, cek)
        let again = try await provider.decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: blob)
        XCTAssertEqual(again, cek)
        XCTAssertEqual(entra.tokenRequests, 1, "one token for every Key Vault request")
        let requests = vault.requests
        XCTAssertEqual(requests.filter { $0.hasPrefix("GET ") }.count, 2, "the challenge, then the key fetched once: \(requests)")
        XCTAssertEqual(requests.filter { $0.hasSuffix("/unwrapkey") }.count, 2)
        XCTAssertEqual(requests.filter { $0.hasSuffix("/wrapkey") }.count, 1)
        XCTAssertEqual(requests.filter { $0.hasSuffix("/sign") }.count, 1)
        XCTAssertFalse("\(provider)".contains("ae-secret"))
        // The CEK unwrapped decrypts a cell encrypted with it.
        let aead = try AEADAes256CbcHmacSha256(rootKey: back)
        let cell = try aead.encrypt(Array("secret cell".utf8), type: .randomized)
        XCTAssertEqual(try aead.decrypt(cell), Array("secret cell".utf8))
    }

    func testMetadataSignatureByKeyVaultVerifiesHere() async throws {
        let path = try vault.createKey(name: "cmk-meta")
        let provider = provider()
        let signature = try await provider.signColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: true)
        XCTAssertEqual(signature.count, 256)
        let yes = try await provider.verifyColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: true, signature: signature)
        let no = try await provider.verifyColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: false, signature: signature)
        XCTAssertTrue(yes)
        XCTAssertFalse(no)
    }

    /// A changed byte anywhere after the header fails the signature check before any unwrap is
    /// asked; a header byte makes it malformed; a blob wrapped by another key is refused.
    func testTamperedAndWrongKeyBlobsAreRefusedBeforeUnwrap() async throws {
        let path = try vault.createKey(name: "cmk2")
        let otherPath = try vault.createKey(name: "cmk3")
        let provider = provider()
        let cek = [UInt8](repeating: 7, count: 32)
        let blob = try await provider.encryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", columnEncryptionKey: cek)
        let unwraps = vault.requests.filter { $0.hasSuffix("/unwrapkey") }.count
        for i in [0, 1, 3, 5, 40, blob.count - 300, blob.count - 257, blob.count - 256, blob.count - 1] {
            var bad = blob
            bad[i] ^= 0x02
            let error = await code { try await provider.decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: bad) }
            XCTAssertEqual(error?.code, i < 5 ? .invalidEncryptedKey : .signatureMismatch, "byte \(i)")
            XCTAssertEqual(error?.keyPath, path)
            // The version and the ciphertext length are wrong where they are; a path 2 bytes longer
            // or shorter leaves a signature of the wrong size, reported where the signature starts.
            if i == 0 || i == 3 { XCTAssertEqual(error?.offset, i, "byte \(i)") }
            if i == 1 { XCTAssertEqual(error?.offset, 5 + (Int(bad[1]) | Int(bad[2]) << 8) + 256, "byte \(i)") }
        }
        let wrongKey = await code { try await provider.decryptColumnEncryptionKey(masterKeyPath: otherPath, algorithm: "RSA_OAEP", encryptedKey: blob) }
        XCTAssertEqual(wrongKey?.code, .signatureMismatch)
        XCTAssertEqual(wrongKey?.keyPath, otherPath)
        let truncated = await code { try await provider.decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: Array(blob.dropLast())) }
        XCTAssertEqual(truncated?.code, .invalidEncryptedKey)
        XCTAssertEqual(truncated?.offset, blob.count - 256)
        XCTAssertEqual(vault.requests.filter { $0.hasSuffix("/unwrapkey") }.count, unwraps, "nothing tampered reached unwrapKey")
        let algorithm = await code { try await provider.decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA1_5", encryptedKey: blob) }
        XCTAssertEqual(algorithm?.code, .unknownAlgorithm)
    }

    func testAnIdentityWithoutAccessAndAnUnknownKeyAreTyped() async throws {
        let path = try vault.createKey(name: "cmk4")
        let denied = await code { try await self.provider(clientID: "other-app", secret: "other-secret").decryptColumnEncryptionKey(
            masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: [1]) }
        XCTAssertEqual(denied?.code, .accessDenied)
        XCTAssertEqual(denied?.keyPath, path)
        XCTAssertTrue(denied?.message.contains("403") ?? false, denied?.message ?? "")
        let missing = "\(vault.origin)/keys/nosuchkey/0123abcd"
        let notFound = await code { try await self.provider().decryptColumnEncryptionKey(masterKeyPath: missing, algorithm: "RSA_OAEP", encryptedKey: [1]) }
        XCTAssertEqual(notFound?.code, .keyNotFound)
        XCTAssertEqual(notFound?.keyPath, missing)
        let badSecret = await code { try await self.provider(secret: "wrong").decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: [1]) }
        XCTAssertEqual(badSecret?.code, .keyStoreFailed)
        XCTAssertFalse(badSecret?.description.contains("wrong") ?? true)
    }

    /// A challenge naming another service's resource: no token is asked for it.
    func testAChallengeForAnotherResourceIsRefused() throws {
        let provider = provider(loopback: false)
        let key = try provider.parse("https://myvault.vault.azure.net/keys/k/1")
        XCTAssertEqual(try provider.readChallenge("Bearer authorization=\"https://login.microsoftonline.com/t\", resource=\"https://vault.azure.net\"", key),
                       EntraTokenRequest(authority: "https://login.microsoftonline.com/t", resource: "https://vault.azure.net"))
        XCTAssertEqual(try provider.readChallenge("Bearer authorization=\"https://login.microsoftonline.com/t\", scope=\"https://vault.azure.net/.default\"", key).resource,
                       "https://vault.azure.net")
        for header in ["Bearer authorization=\"https://login.microsoftonline.com/t\", resource=\"https://database.windows.net\"",
                       "Bearer authorization=\"https://login.microsoftonline.com/t\", resource=\"https://evilvault.azure.net\""] {
            XCTAssertThrowsError(try provider.readChallenge(header, key)) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .untrustedEndpoint, header)
            }
        }
        for header in [nil, "Basic realm=x", "Bearer resource=\"https://vault.azure.net\"", "Bearer authorization=\"a\", resource=\"http://vault.azure.net\""] {
            XCTAssertThrowsError(try provider.readChallenge(header, key)) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .accessDenied, header ?? "nil")
            }
        }
    }

    func testKeyPathsAreCheckedWithASubdomainBoundary() throws {
        let provider = provider(loopback: false)
        for good in ["https://myvault.vault.azure.net/keys/cmk/0123abcd", "https://MyVault.Vault.Azure.Net/keys/cmk",
                     "https://v.vault.azure.cn/keys/a-b/1", "https://v.vault.usgovcloudapi.net:443/keys/k/2/",
                     "https://hsm1.managedhsm.azure.net/keys/k/3"] {
            XCTAssertNoThrow(try provider.parse(good), good)
        }
        XCTAssertEqual(try provider.parse("https://v.vault.azure.net/keys/k/v1/").path, "/keys/k/v1")
        for untrusted in ["https://evilvault.azure.net/keys/k/1", "https://vault.azure.net/keys/k/1", "https://a.b.vault.azure.net/keys/k/1",
                          "https://myvault.vault.azure.net.evil.com/keys/k/1", "https://myvault.vault.azure.net:8443/keys/k/1",
                          "https://127.0.0.1/keys/k/1", "https://myvault.vaultxazure.net/keys/k/1"] {
            XCTAssertThrowsError(try provider.parse(untrusted), untrusted) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .untrustedEndpoint, untrusted)
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.keyPath, untrusted)
            }
        }
        for invalid in ["", "myvault.vault.azure.net/keys/k", "http://myvault.vault.azure.net/keys/k/1", "https://myvault.vault.azure.net/secrets/k/1",
                        "https://myvault.vault.azure.net/keys/k/1/extra", "https://myvault.vault.azure.net/keys/k/1?x=1",
                        "https://u:p@myvault.vault.azure.net/keys/k/1", "https://myvault.vault.azure.net/keys/../k",
                        "https://myvault.vault.azure.net/keys/k_1/1", "https://myvault.vault.azure.net/keys", "https://myvault.vault.azure.net/keys/k/1#f",
                        "https://myvault.vault.azure.net/keys/ k/1", String(repeating: "a", count: 3000), "http://127.0.0.1:1/keys/k/1"] {
            XCTAssertThrowsError(try provider.parse(invalid), invalid) {
                XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidKeyPath, invalid)
            }
        }
        // Loopback only when the test option is on.
        XCTAssertNoThrow(try self.provider(loopback: true).parse("http://127.0.0.1:8080/keys/k/1"))
        // A custom list replaces the default.
        let custom = SQLAzureKeyVaultKeyStoreProvider(credential: ClientSecretCredential(clientID: "a", secret: "b"), trustedEndpoints: [".vault.contoso.test"])
        XCTAssertNoThrow(try custom.parse("https://v.vault.contoso.test/keys/k"))
        XCTAssertThrowsError(try custom.parse("https://v.vault.azure.net/keys/k"))
    }

    /// No request at all leaves for an untrusted host.
    func testAnUntrustedPathSendsNothing() async throws {
        let before = entra.requests.count
        let error = await code { try await self.provider(loopback: false).decryptColumnEncryptionKey(
            masterKeyPath: "\(self.vault.origin)/keys/k/1", algorithm: "RSA_OAEP", encryptedKey: [1]) }
        XCTAssertEqual(error?.code, .invalidKeyPath)   // http on loopback without the test option
        XCTAssertEqual(vault.requests, [])
        XCTAssertEqual(entra.requests.count, before)
    }

    func testJWKToPKCS1RoundTrip() throws {
        let key = try XCTUnwrap(AERSAKey.generate(bits: 2048))
        let der = try XCTUnwrap(key.publicPKCS1())
        let (n, e) = try XCTUnwrap(RSAPublicKeyDER.decode(der))
        XCTAssertEqual(n.count, 256)
        XCTAssertEqual(e, [1, 0, 1])
        XCTAssertEqual(RSAPublicKeyDER.encode(modulus: n, exponent: e), der)
        let publicKey = try XCTUnwrap(AERSAKey.publicKey(pkcs1: der))
        let signature = try XCTUnwrap(key.signSHA256([1, 2, 3]))
        XCTAssertTrue(publicKey.verifySHA256([1, 2, 3], signature: signature[...]))
        // A digest signed by itself equals the message signed whole (Key Vault's RS256 sign).
        XCTAssertEqual(key.signDigestSHA256(try AECrypto.sha256([1, 2, 3])), signature)
        for cut in [0, 1, 4, 100, der.count - 1] { XCTAssertNil(RSAPublicKeyDER.decode(Array(der.prefix(cut))), "\(cut)") }
    }

    /// A vault whose challenge names another resource gets a token for it, which it then refuses:
    /// a 401 after the token is `accessDenied`, after exactly one retry.
    func testA401AfterTheTokenIsAccessDenied() async throws {
        let path = try vault.createKey(name: "cmk5")
        vault.challengeResource = "https://database.windows.net"
        let error = await code { try await self.provider().decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: [1]) }
        XCTAssertEqual(error?.code, .accessDenied)
        XCTAssertTrue(error?.message.contains("HTTP 401") ?? false, error?.message ?? "")
        XCTAssertEqual(vault.requests.count, 2, "the challenge, then one request with a token")
    }

    func testHostileKeyAnswersAreTypedFailures() async throws {
        let path = try vault.createKey(name: "cmk6")
        for hostile in [LocalKeyVaultServer.Hostile.notJSON, .ellipticCurveKey, .hugeModulus] {
            vault.hostile = hostile
            let error = await code { try await self.provider().decryptColumnEncryptionKey(masterKeyPath: path, algorithm: "RSA_OAEP", encryptedKey: [1]) }
            XCTAssertEqual(error?.code, .keyStoreFailed, "\(hostile)")
            XCTAssertEqual(error?.keyPath, path)
        }
    }

    /// The public key is fetched once per path and the challenge once per vault, across operations.
    func testTheChallengeAndTheKeyAreAskedOnce() async throws {
        let a = try vault.createKey(name: "cmk7"), b = try vault.createKey(name: "cmk8")
        let provider = provider()
        for path in [a, b, a, b] {
            let signature = try await provider.signColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: false)
            let verified = try await provider.verifyColumnMasterKeyMetadata(masterKeyPath: path, allowEnclaveComputations: false, signature: signature)
            XCTAssertTrue(verified)
        }
        let requests = vault.requests
        XCTAssertEqual(requests.filter { $0.hasPrefix("GET ") }.count, 2, "\(requests)")
        XCTAssertEqual(requests.filter { $0.hasSuffix("/sign") }.count, 5, "one challenged, then four signed: \(requests)")
    }
}

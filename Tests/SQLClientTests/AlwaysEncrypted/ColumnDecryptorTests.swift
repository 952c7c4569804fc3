import Foundation
import TDS
import XCTest
@testable import SQLClient

/// The read path's entry point: COLMETADATA's CEK table and CryptoMetaData in, keys unwrapped
/// once through the provider the server names and cached, cells decrypted or a typed error
/// naming the column and the key path.
final class ColumnDecryptorTests: XCTestCase {
    /// A provider that counts its calls and hands out fixed keys by path.
    final class CountingProvider: SQLColumnEncryptionKeyStoreProvider, @unchecked Sendable {
        let lock = NSLock()
        var calls = 0
        let keys: [String: [UInt8]]
        init(keys: [String: [UInt8]]) { self.keys = keys }
        func decryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) async throws -> [UInt8] {
            lock.withLock { calls += 1 }
            guard let key = keys[masterKeyPath] else { throw URLError(.fileDoesNotExist) }
            return key
        }
        var count: Int { lock.lock(); defer { lock.unlock() }; return calls }
    }

    /// A clock moved by hand.
    final class ManualClock: @unchecked Sendable {
        let lock = NSLock()
        var value: Duration = .zero
        func advance(_ d: Duration) { lock.lock(); value += d; lock.unlock() }
        var now: @Sendable () -> Duration { { [self] in lock.lock(); defer { lock.unlock() }; return value } }
    }

    static let store = SQLCertificateFileKeyStoreProvider.providerName

    /// COLMETADATA of (id int, name nchar(10) encrypted with the published CEK, deterministic).
    static func metadata(encryptedKey: [UInt8], path: String = AEFixtures.masterKeyPath, store: String = store,
                         crypto: CryptoMetadata? = nil) -> ColMetadata {
        let value = CEKEntry.Value(encryptedKey: encryptedKey, keyStoreName: store, keyPath: path, algorithm: "RSA_OAEP")
        let entry = CEKEntry(databaseID: 5, cekID: 1, cekVersion: 1, cekMetadataVersion: 0x1122, values: [value])
        let c = crypto ?? CryptoMetadata(ordinal: 0, userType: 0, baseType: .nchar(10), algorithm: 2, encryptionType: 1, normalizationVersion: 1)
        return ColMetadata(columns: [ColumnMetadata(typeInfo: .int, name: "id"),
                                     ColumnMetadata(flags: [.nullable, .encrypted], typeInfo: .varbinary(8000), cryptoMetadata: c, name: "name")],
                           cekTable: [entry])
    }

    func testThePublishedCellDecryptsThroughTheCertificateProvider() async throws {
        let dir = try AEFixtures.keyFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stores = SQLColumnEncryptionKeyStores(only: [Self.store: SQLCertificateFileKeyStoreProvider(folder: dir.path)])
        let cache = ColumnEncryptionKeyCache()
        let decryptor = try await SQLColumnDecryptor.make(for: Self.metadata(encryptedKey: try AEFixtures.bytes("swisscom/cekv.key")),
                                                         keyStores: stores, cache: cache)
        XCTAssertFalse(decryptor.isEncrypted(column: 0))
        XCTAssertTrue(decryptor.isEncrypted(column: 1))
        XCTAssertEqual(try decryptor.decrypt(try AEFixtures.bytes("swisscom/column_value.enc"), column: 1), AEFixtures.utf16LE("12345     "))
        XCTAssertEqual(cache.count, 1)
        // Altered cell: a typed error naming the column and the key path, never a value.
        var bad = try AEFixtures.bytes("swisscom/column_value.enc")
        bad[40] ^= 4
        XCTAssertThrowsError(try decryptor.decrypt(bad, column: 1)) { error in
            let e = error as? ColumnEncryptionError
            XCTAssertEqual(e?.code, .authenticationFailed)
            XCTAssertEqual(e?.column, "name")
            XCTAssertEqual(e?.keyPath, AEFixtures.masterKeyPath)
            XCTAssertTrue("\(error)".contains("column 'name'"), "\(error)")
        }
        XCTAssertThrowsError(try decryptor.decrypt(bad, column: 0)) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidMetadata)
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.column, "id")
        }
        XCTAssertThrowsError(try decryptor.decrypt(bad, column: 7)) { XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidMetadata) }
    }

    func testKeysAreCachedForTheirLifetimeByTheInjectedClock() async throws {
        let key = [UInt8](repeating: 7, count: 32)
        let provider = CountingProvider(keys: ["k/1": key])
        let clock = ManualClock()
        let cache = ColumnEncryptionKeyCache(timeToLive: .seconds(60), now: clock.now)
        let stores = SQLColumnEncryptionKeyStores(only: ["CUSTOM": provider])
        let meta = Self.metadata(encryptedKey: [1, 2, 3], path: "k/1", store: "CUSTOM")
        let cell = try AEADAes256CbcHmacSha256(rootKey: key).encrypt(Array("x".utf8), type: .randomized)
        for _ in 0 ..< 3 {
            let d = try await SQLColumnDecryptor.make(for: meta, keyStores: stores, cache: cache)
            XCTAssertEqual(try d.decrypt(cell, column: 1), Array("x".utf8))
        }
        XCTAssertEqual(provider.count, 1, "asked once, then cached")
        clock.advance(.seconds(59))
        _ = try await SQLColumnDecryptor.make(for: meta, keyStores: stores, cache: cache)
        XCTAssertEqual(provider.count, 1)
        clock.advance(.seconds(1))
        XCTAssertEqual(cache.count, 0, "expired at its lifetime")
        _ = try await SQLColumnDecryptor.make(for: meta, keyStores: stores, cache: cache)
        XCTAssertEqual(provider.count, 2, "asked again after the lifetime")
        // Another encrypted key (or path) is another entry.
        _ = try await SQLColumnDecryptor.make(for: Self.metadata(encryptedKey: [9], path: "k/1", store: "CUSTOM"), keyStores: stores, cache: cache)
        XCTAssertEqual(provider.count, 3)
        // Lifetime zero: nothing kept.
        cache.timeToLive = .zero
        cache.removeAll()
        _ = try await SQLColumnDecryptor.make(for: meta, keyStores: stores, cache: cache)
        _ = try await SQLColumnDecryptor.make(for: meta, keyStores: stores, cache: cache)
        XCTAssertEqual(provider.count, 5)
        XCTAssertEqual(ColumnEncryptionKeyCache(timeToLive: .seconds(-5)).timeToLive, .zero)
        XCTAssertEqual(ColumnEncryptionKeyCache().timeToLive, .seconds(7200))
    }

    func testMissingProviderFailingProviderAndWrongKeySizeAreTypedErrors() async throws {
        let meta = Self.metadata(encryptedKey: [1], path: "k/1", store: "NOPE")
        await assertMake(meta, stores: SQLColumnEncryptionKeyStores(only: [:]), code: .unknownKeyStoreProvider, keyPath: "k/1")
        let failing = CountingProvider(keys: [:])
        await assertMake(Self.metadata(encryptedKey: [1], path: "k/1", store: "C"), stores: SQLColumnEncryptionKeyStores(only: ["C": failing]),
                         code: .keyStoreFailed, keyPath: "k/1")
        let short = CountingProvider(keys: ["k/1": [UInt8](repeating: 1, count: 16)])
        await assertMake(Self.metadata(encryptedKey: [1], path: "k/1", store: "C"), stores: SQLColumnEncryptionKeyStores(only: ["C": short]),
                         code: .invalidKey, keyPath: "k/1")
        // The store name matches in any case.
        let good = CountingProvider(keys: ["k/1": [UInt8](repeating: 1, count: 32)])
        _ = try await SQLColumnDecryptor.make(for: Self.metadata(encryptedKey: [1], path: "k/1", store: "c"),
                                              keyStores: SQLColumnEncryptionKeyStores(only: ["C": good]), cache: ColumnEncryptionKeyCache())
        XCTAssertEqual(good.count, 1)
    }

    /// A CEK encrypted under two master keys (rotation): the first one that works is used.
    func testASecondEncryptedValueIsTriedWhenTheFirstFails() async throws {
        let key = [UInt8](repeating: 3, count: 32)
        let provider = CountingProvider(keys: ["b": key])
        var meta = Self.metadata(encryptedKey: [1], path: "a", store: "C")
        meta.cekTable?[0].values.append(CEKEntry.Value(encryptedKey: [2], keyStoreName: "C", keyPath: "b", algorithm: "RSA_OAEP"))
        let d = try await SQLColumnDecryptor.make(for: meta, keyStores: SQLColumnEncryptionKeyStores(only: ["C": provider]), cache: ColumnEncryptionKeyCache())
        let cell = try AEADAes256CbcHmacSha256(rootKey: key).encrypt([42], type: .deterministic)
        XCTAssertEqual(try d.decrypt(cell, column: 1), [42])
        XCTAssertEqual(provider.count, 2)
    }

    /// A server that lies in CryptoMetaData: each lie its typed error naming the column, before
    /// any provider is asked.
    func testMetadataTheClientCannotUseIsRefused() async throws {
        let provider = CountingProvider(keys: ["k": [UInt8](repeating: 1, count: 32)])
        let stores = SQLColumnEncryptionKeyStores(only: [Self.store: provider])
        func crypto(ordinal: UInt16? = 0, algorithm: UInt8 = 2, name: String? = nil, type: UInt8 = 1, norm: UInt8 = 1) -> CryptoMetadata {
            CryptoMetadata(ordinal: ordinal, userType: 0, baseType: .int, algorithm: algorithm, algorithmName: name,
                           encryptionType: type, normalizationVersion: norm)
        }
        let cases: [(CryptoMetadata, ColumnEncryptionError.Code)] = [
            (crypto(ordinal: 1), .invalidMetadata), (crypto(ordinal: 0xFFFF), .invalidMetadata), (crypto(ordinal: nil), .invalidMetadata),
            (crypto(algorithm: 1), .unknownAlgorithm), (crypto(algorithm: 0, name: "AES_256_CBC"), .unknownAlgorithm),
            (crypto(algorithm: 0, name: nil), .unknownAlgorithm), (crypto(type: 0), .unknownEncryptionType),
            (crypto(type: 3), .unknownEncryptionType), (crypto(norm: 2), .unsupportedNormalization),
        ]
        for (c, code) in cases {
            await assertMake(Self.metadata(encryptedKey: [1], path: "k", crypto: c), stores: stores, code: code, keyPath: nil, column: "name")
        }
        XCTAssertEqual(provider.count, 0)
        // Algorithm 0 naming AEAD_AES_256_CBC_HMAC_SHA256 is accepted.
        _ = try await SQLColumnDecryptor.make(for: Self.metadata(encryptedKey: [1], path: "k", crypto: crypto(algorithm: 0, name: "AEAD_AES_256_CBC_HMAC_SHA256")),
                                              keyStores: stores, cache: ColumnEncryptionKeyCache())
        // An entry without values; an encrypted column without CryptoMetaData.
        var empty = Self.metadata(encryptedKey: [1], path: "k")
        empty.cekTable?[0].values = []
        await assertMake(empty, stores: stores, code: .invalidMetadata, keyPath: nil, column: "name")
        var bare = Self.metadata(encryptedKey: [1], path: "k")
        bare.columns[1].cryptoMetadata = nil
        await assertMake(bare, stores: stores, code: .invalidMetadata, keyPath: nil, column: "name")
    }

    func testGlobalAndPerConnectionRegistration() throws {
        defer { SQLColumnEncryption.removeAllKeyStoreProviders() }
        let global = CountingProvider(keys: [:])
        let mine = CountingProvider(keys: [:])
        try SQLColumnEncryption.registerKeyStoreProviders(["G": global])
        XCTAssertTrue(isSame(SQLColumnEncryptionKeyStores().provider(named: "G"), global))
        XCTAssertNil(SQLColumnEncryptionKeyStores(connection: ["M": mine]).provider(named: "G"), "a connection's providers replace the global ones")
        XCTAssertTrue(isSame(SQLColumnEncryptionKeyStores(connection: ["M": mine]).provider(named: "m"), mine))
        XCTAssertThrowsError(try SQLColumnEncryption.registerKeyStoreProviders(["": mine, "X": mine])) {
            XCTAssertEqual(($0 as? ColumnEncryptionError)?.code, .invalidConfiguration)
        }
        XCTAssertNil(SQLColumnEncryption.registeredKeyStoreProviders["X"], "nothing registered from a refused call")
        XCTAssertThrowsError(try SQLColumnEncryption.registerKeyStoreProviders([String(repeating: "n", count: 256): mine]))
    }

    private func assertMake(_ meta: ColMetadata, stores: SQLColumnEncryptionKeyStores, code: ColumnEncryptionError.Code,
                            keyPath: String?, column: String = "name", line: UInt = #line) async {
        do {
            _ = try await SQLColumnDecryptor.make(for: meta, keyStores: stores, cache: ColumnEncryptionKeyCache())
            XCTFail("expected \(code)", line: line)
        } catch {
            XCTAssertEqual(error.code, code, "\(error)", line: line)
            XCTAssertEqual(error.column, column, line: line)
            if let keyPath { XCTAssertEqual(error.keyPath, keyPath, line: line) }
        }
    }
}

/// True when `provider` is `counting` (the same instance).
func isSame(_ provider: (any SQLColumnEncryptionKeyStoreProvider)?, _ counting: ColumnDecryptorTests.CountingProvider) -> Bool {
    (provider as? ColumnDecryptorTests.CountingProvider).map { $0 === counting } ?? false
}

import XCTest
@testable import SQLClient
import TDS

/// The pool's options: connection string keys (as ADO.NET spells and bounds them) and validation,
/// which refuses what it must and clamps the rest, never trapping.
final class SQLConnectionPoolOptionsTests: XCTestCase {
    func options(_ keys: String) throws -> SQLConnectionPool.Options {
        try SQLConnectionConfiguration(connectionString: "Server=db;User ID=u;Password=p;" + keys).pool
    }

    func testDefaults() throws {
        let o = try options("")
        XCTAssertEqual(o, SQLConnectionPool.Options())
        XCTAssertTrue(o.pooling)
        XCTAssertEqual(o.minimumConnections, 0)
        XCTAssertEqual(o.maximumConnections, 100)
        XCTAssertNil(o.leaseTimeout)
        XCTAssertEqual(o.idleTimeout, .seconds(300))
        XCTAssertNil(o.maximumLifetime)
        XCTAssertNil(o.validationThreshold)
    }

    func testPoolKeysParse() throws {
        let o = try options("Pooling=true;Min Pool Size=2;Max Pool Size=8;Connection Lifetime=90")
        XCTAssertTrue(o.pooling)
        XCTAssertEqual(o.minimumConnections, 2)
        XCTAssertEqual(o.maximumConnections, 8)
        XCTAssertEqual(o.maximumLifetime, .seconds(90))
        XCTAssertFalse(try options("pooling=false").pooling)
        XCTAssertFalse(try options("Pooling=no").pooling)
        XCTAssertEqual(try options("Load Balance Timeout=30").maximumLifetime, .seconds(30))
        XCTAssertEqual(try options("MaxPoolSize=3;minpoolsize=1").maximumConnections, 3)
        XCTAssertNil(try options("Connection Lifetime=0").maximumLifetime, "0 = no limit")
    }

    func testHugeLifetimeIsClampedNotTrapping() throws {
        XCTAssertEqual(try options("Connection Lifetime=9223372036854775807").maximumLifetime,
                       SQLConnectionConfiguration.maximumTimeout)
    }

    func testBadPoolValuesAreRefusedByKeyOnly() {
        for entry in ["Pooling=maybe", "Min Pool Size=-1", "Max Pool Size=0", "Max Pool Size=x", "Min Pool Size=1.5",
                      "Connection Lifetime=-5", "Load Balance Timeout=soon", "Max Pool Size=99999999999999999999",
                      "Min Pool Size=5;Max Pool Size=4"] {
            XCTAssertThrowsError(try options(entry), entry) { error in
                let e = error as? SQLClientError
                XCTAssertEqual(e?.code, .invalidConfiguration, "\(entry): \(error)")
            }
        }
        XCTAssertThrowsError(try options("Min Pool Size=5;Max Pool Size=4")) { error in
            XCTAssertTrue("\(error)".contains("Min Pool Size (5) must not exceed Max Pool Size (4)"), "\(error)")
        }
    }

    func testValidationRefusesAndClamps() throws {
        for bad in [SQLConnectionPool.Options(maximumConnections: 0), SQLConnectionPool.Options(minimumConnections: -1),
                    SQLConnectionPool.Options(minimumConnections: 3, maximumConnections: 2),
                    SQLConnectionPool.Options(leaseTimeout: .seconds(-1)), SQLConnectionPool.Options(idleTimeout: .seconds(-1)),
                    SQLConnectionPool.Options(maximumLifetime: .milliseconds(-1)),
                    SQLConnectionPool.Options(validationThreshold: .seconds(-3)),
                    SQLConnectionPool.Options(validationTimeout: .seconds(-3)), SQLConnectionPool.Options(closeTimeout: .seconds(-3))] {
            XCTAssertThrowsError(try bad.validated(), "\(bad)") { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration)
            }
        }
        let huge = Duration.seconds(Int64.max)
        let clamped = try SQLConnectionPool.Options(leaseTimeout: huge, idleTimeout: huge, maximumLifetime: huge,
                                                    validationThreshold: huge, validationTimeout: huge, closeTimeout: huge).validated()
        for d in [clamped.leaseTimeout, clamped.idleTimeout, clamped.maximumLifetime, clamped.validationThreshold,
                  clamped.validationTimeout, clamped.closeTimeout] {
            XCTAssertEqual(d, SQLConnectionConfiguration.maximumTimeout)
        }
    }

    func testPoolMadeFromAConnectionStringTakesItsKeysAndRefusesBadOptions() throws {
        let pool = try SQLConnectionPool(connectionString: "Server=127.0.0.1,1;User ID=u;Password=p;Max Pool Size=3;Min Pool Size=0")
        XCTAssertEqual(pool.options.maximumConnections, 3)
        let configuration = try SQLConnectionConfiguration(connectionString: "Server=127.0.0.1,1;User ID=u;Password=p")
        XCTAssertThrowsError(try SQLConnectionPool(configuration: configuration, maximumConnections: 0)) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration)
        }
        // The lease timeout defaults to the configuration's connect timeout, as ADO.NET's pool.
        let defaulted = try SQLConnectionPool(configuration: configuration, maximumConnections: 2)
        XCTAssertNil(defaulted.options.leaseTimeout)
        XCTAssertEqual(defaulted.metrics.open, 0)
    }
}

// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "SQLClient",
    // What the code uses sets the floor: UInt128 (decimal and money values in TDS), Duration and
    // Task.sleep(for:) (timeouts), typed throws and `isolated (any Actor)? = #isolation` with the
    // AsyncIteratorProtocol.next(isolation:) streams need macOS 15 / iOS 18. Linux has no floor.
    // Only the platforms something checks are declared: Linux is built and tested here; macOS and
    // iOS are compiled and linked against Apple's SDKs by scripts/check-apple-sdk.sh (and built
    // by the macOS workflow). tvOS, watchOS and visionOS are not checked anywhere, so not declared
    // (watchOS also forbids general-purpose sockets to most apps). See README "Apple platforms".
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "TDS", targets: ["TDS"]),
        .library(name: "SQLClient", targets: ["SQLClient"]),
        .library(name: "SQLClientTesting", targets: ["SQLClientTesting"]),
        .library(name: "SQLClientObjC", targets: ["SQLClientObjC", "SQLClientObjCConstants"]),  // the Objective-C SQLClient's API (issue 29)
        .executable(name: "sqlclient", targets: ["sqlclient"]),
        .executable(name: "sqlclient-bench", targets: ["sqlclient-bench"]),
    ],
    // The Swift server ecosystem, opt in (issue 41): each trait adds one package's product to
    // SQLClient and compiles its adapter (Sources/SQLClient/Observability, under `#if <trait>`).
    // None is on by default, so a plain build has no dependency and fetches nothing: SwiftPM
    // resolves only the dependencies that an enabled trait's `.when(traits:)` condition uses.
    traits: [
        .trait(name: "SwiftLog", description: "Logging.Logger (swift-log) receives SQLClient's events."),
        .trait(name: "Metrics", description: "OpenTelemetry database client metrics through swift-metrics."),
        .trait(name: "Tracing", description: "OpenTelemetry database client spans through swift-distributed-tracing."),
        .trait(name: "ServiceLifecycle", description: "SQLConnectionPool runs as a swift-service-lifecycle Service."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.3.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
    ],
    targets: [
        // Pure wire layer: bytes <-> packets <-> messages <-> tokens <-> values. No I/O.
        .target(name: "TDS"),
        // Capture readers (pcap, pcapng, .hex, raw) and conversation extraction. No I/O beyond reading files given as bytes.
        .target(name: "TDSCapture", dependencies: ["TDS"]),
        // OpenSSL, used only by the Linux TLS provider.
        .systemLibrary(
            name: "CSQLClientOpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "SQLClient",
            dependencies: [
                "TDS",
                .target(name: "CSQLClientOpenSSL", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["SwiftLog"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle",
                         condition: .when(traits: ["ServiceLifecycle"])),
            ]
        ),
        // Test support: the replay server (TLS inside PRELOGIN through OpenSSL on Linux), the
        // recording proxy, captures turned into sessions, the conformance fixtures, the login
        // scenario server (TDS 8.0 TLS first).
        .target(
            name: "SQLClientTesting",
            dependencies: [
                "SQLClient", "TDS", "TDSCapture",
                .target(name: "CSQLClientOpenSSL", condition: .when(platforms: [.linux])),
            ]
        ),
        // The Objective-C SQLClient's API (completion blocks, notifications, Foundation values) over SQLClient.
        .target(name: "SQLClientObjC", dependencies: ["SQLClient"]),
        // Its global constants for Objective-C code (a Swift module cannot export one): a header
        // and an Objective-C file that only Apple platforms compile (elsewhere an empty object).
        .target(name: "SQLClientObjCConstants"),
        .executableTarget(name: "sqlclient", dependencies: ["SQLClient", "TDS", "TDSCapture", "SQLClientTesting"]),
        .executableTarget(
            name: "sqlclient-bench",
            dependencies: ["SQLClient", "TDS", "SQLClientTesting"],
            path: "Benchmarks/sqlclient-bench"
        ),
        .testTarget(name: "TDSTests", dependencies: ["TDS", "TDSCapture", "SQLClientTesting"]),
        .testTarget(name: "TDSCaptureTests", dependencies: ["TDS", "TDSCapture", "SQLClientTesting"]),
        .testTarget(name: "SQLClientTests", dependencies: ["SQLClient", "TDS", "TDSCapture", "SQLClientTesting",
                                                         "SQLClientObjC"],  // README's migration snippets
                    exclude: ["Load/LOAD.md"]),  // the load tests' measured figures
        .testTarget(name: "SQLClientTestingTests", dependencies: ["SQLClient", "TDS", "TDSCapture", "SQLClientTesting"]),
        .testTarget(name: "SQLClientObjCTests", dependencies: ["SQLClientObjC", "SQLClient", "TDS", "SQLClientTesting"]),
        // The traits' adapters, tested with each library's own test kit; its files compile only
        // under their traits (`#if`), so without traits this target is empty.
        .testTarget(name: "SQLClientObservabilityTests", dependencies: [
            "SQLClient", "TDS", "SQLClientTesting",
            .product(name: "Logging", package: "swift-log", condition: .when(traits: ["SwiftLog", "ServiceLifecycle"])),
            .product(name: "InMemoryLogging", package: "swift-log", condition: .when(traits: ["SwiftLog"])),
            .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
            .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
            .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle",
                     condition: .when(traits: ["ServiceLifecycle"])),
        ]),
        .testTarget(name: "ConformanceTests", dependencies: ["SQLClient", "TDS", "SQLClientTesting"],
                    exclude: ["freetds", "msodbc"]),  // the FreeTDS and Microsoft ODBC oracles (C), compiled by the tests themselves
    ]
)

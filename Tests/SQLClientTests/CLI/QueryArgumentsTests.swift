import Foundation
import XCTest

/// `sqlclient`'s command line as sqlcmd users type it (Sources/sqlclient/QueryArguments.swift):
/// help and version on standard output, glued short flags, `-N` with or without a mode, and no
/// argument text echoed in an error when it could be (part of) a password.
final class QueryArgumentsTests: XCTestCase {
    func testVersionOnStandardOutput() throws {
        let r = try CLI.run(["--version"])
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.stdout.hasPrefix("sqlclient 0."), r.stdout)
        XCTAssertEqual(r.stderr, "")
    }

    func testHelpListsSqlcmdFlagsAndExitStatuses() throws {
        let r = try CLI.run(["-?"])
        XCTAssertEqual(r.status, 0)
        for flag in ["-h rows", "-s sep", "-W", "-w width", "-o file", "-b", "-t seconds", "-l seconds", "-v name=value",
                     ":setvar", ":r file", ":on error", "exit(query)", "quit", "-e", "-m level", "--null", "jsonl",
                     "Exit status: 0"] {
            XCTAssertTrue(r.stdout.contains(flag), "\(flag) is not in the help")
        }
    }

    /// `-PAt1secret` (sqlcmd's glued form) and `-P value` both log in; so do `-Udemo` and `-S…` glued.
    func testGluedAndSeparateValues() throws {
        try LiveServer.require()
        let server = LiveServer.serverArgument, user = LiveServer.user
        let rest = Array(LiveServer.cliArguments.dropFirst(4))   // -d, -C
        for args in [["-S", server, "-U", user, "-P\(LiveServer.password)"],
                     ["-S\(server)", "-U\(user)", "-P", LiveServer.password],
                     ["--server", server, "--user", user, "--password", LiveServer.password]] {
            let r = try CLI.run(args + rest + ["-h-1", "-W", "-Q", "SELECT 6 AS n"])
            XCTAssertEqual(r.status, 0, "\(args.count) arguments: \(r.stderr)")
            XCTAssertEqual(r.stdout, "6\n\n(1 row affected)\n")
        }
    }

    /// Nothing typed after -P is shown in an error: not the glued value, not the words of an
    /// unquoted password with spaces, not an unknown flag that follows it.
    func testPasswordAndWhatFollowsItAreNeverEchoed() throws {
        let secret = "At1secret"
        for args in [["-S", "h", "-U", "u", "-P\(secret)", "--bogus\(secret)"],
                     ["-S", "h", "-U", "u", "-P", "At1", secret],
                     ["-S", "h", "-U", "u", "-P\(secret)", secret],
                     ["-S", "h", "-U", "u", "--password", secret, "-Z\(secret)"],
                     ["-P\(secret)", "-S", "h", "-U", "u", "x\(secret)y"]] {
            let r = try CLI.run(args)
            XCTAssertEqual(r.status, 2, "\(args.count)")
            XCTAssertFalse(r.stderr.contains(secret) || r.stdout.contains(secret), r.stderr)
            XCTAssertFalse(r.stderr.contains("At1"), r.stderr)
            XCTAssertTrue(r.stderr.contains("unknown argument #"), r.stderr)
            XCTAssertTrue(r.stderr.contains("it may be part of a password"), r.stderr)
        }
        // Before any password an unknown argument is named, as usual.
        let typo = try CLI.run(["--servr", "h"])
        XCTAssertEqual(typo.status, 2)
        XCTAssertTrue(typo.stderr.contains("unknown argument \"--servr\""), typo.stderr)
        XCTAssertTrue(typo.stderr.contains("sqlclient --help"), typo.stderr)
        XCTAssertFalse(typo.stderr.contains("usage:"), "a usage error is one line and a hint, not the whole help")
    }

    /// `Password=…;Timeout=<rest>`: <rest> may be the rest of a password holding ';'.
    func testConnectionStringValueErrorsNameTheKeyOnly() throws {
        let r = try CLI.run(["--connection-string", "Server=127.0.0.1,1;UID=u;Password=At1;Timeout=se<cret>rest", "-Q", "SELECT 1"])
        XCTAssertEqual(r.status, 2)
        XCTAssertFalse(r.stderr.contains("cret"), r.stderr)
        XCTAssertTrue(r.stderr.contains("invalid value for Timeout"), r.stderr)
        let unknown = try CLI.run(["--connection-string", "Server=h;PWD=ab;Hidden=cd", "-Q", "SELECT 1"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertFalse(unknown.stderr.contains("Hidden") || unknown.stderr.contains("cd"), unknown.stderr)
    }

    /// Standard input is not a terminal and no password is given: a usage error, no prompt.
    func testMissingPasswordWithoutTerminal() throws {
        let r = try CLI.run(["-S", "127.0.0.1,1", "-U", "u", "-Q", "SELECT 1"], stdin: "")
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("no password: give -P, set SQLCMDPASSWORD"), r.stderr)
        XCTAssertFalse(r.stderr.contains("Password:"), r.stderr)
    }

    /// `-N` alone means encryption on and does not swallow the next flag; `-N o` (optional) is
    /// login-only encryption; a bad mode is a usage error.
    func testEncryptFlagTakesAnOptionalMode() throws {
        try LiveServer.require()
        // Login-only encryption (-N o) needs a server that allows it; pysqlbridge does.
        let modes = [["-N"], ["-Nm"], ["--encrypt", "required"]] + (LiveServer.isPysqlbridge ? [["-N", "o"]] : [])
        for mode in modes {
            let r = try CLI.run(LiveServer.cliArguments + mode + ["-h-1", "-W", "-Q", "SELECT 1 AS one"],
                                environment: ["SQLCMDPASSWORD": LiveServer.password])
            XCTAssertEqual(r.status, 0, "\(mode): \(r.stderr)")
            XCTAssertEqual(r.stdout, "1\n\n(1 row affected)\n", "\(mode)")
        }
        let bad = try CLI.run(["-S", LiveServer.serverArgument, "-U", "u", "-Nsideways", "-Q", "SELECT 1"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("unknown encryption mode"), bad.stderr)
    }

    func testOutOfRangeValuesAreUsageErrors() throws {
        for (args, text) in [(["-h", "-2"], "invalid -h"), (["-w", "8"], "invalid screen width"),
                             (["-t", "-1"], "invalid query timeout"), (["-l", "x"], "invalid login timeout"),
                             (["-a", "100"], "invalid packet size"), (["--format", "xml"], "unknown format"),
                             (["--text-size", "2147483648"], "invalid text size (-1 to 2147483647)"),
                             (["-v", "1x=2"], "-v needs name=value"), (["-Q", "x", "-i", "f"], "cannot be combined")] {
            let r = try CLI.run(["-S", "h", "-U", "u"] + args)
            XCTAssertEqual(r.status, 2, "\(args)")
            XCTAssertTrue(r.stderr.contains(text), "\(args): \(r.stderr)")
        }
    }

    /// `-l seconds`: a server that accepts the connection and never answers PRELOGIN ends the
    /// attempt with a timeout (exit status 3).
    func testLoginTimeout() throws {
        let listener = try LoopbackListener { fd in
            while !LoopbackListener.readSome(fd).isEmpty {}
        }
        defer { listener.stop() }
        let r = try CLI.run(["-S", "127.0.0.1,\(listener.port)", "-U", "u", "-P", "p", "-l", "1", "-Q", "SELECT 1"])
        XCTAssertEqual(r.status, 3, r.stderr)
        XCTAssertTrue(r.stderr.contains("did not finish within 1"), r.stderr)
    }
}

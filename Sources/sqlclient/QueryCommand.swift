import Foundation

/// The query part of the CLI (placeholder until the query client lands: prints usage).
/// Returns the process exit status.
func runQueryCommand(_ arguments: [String]) -> Int32 {
    let usage = """
    usage: sqlclient decode FILE [--port N] [--tokens] [--tds-version 7.1|7.2|7.3|7.4] [--format text|json]
    """
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    return 2
}

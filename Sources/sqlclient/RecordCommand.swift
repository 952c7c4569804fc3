import SQLClientTesting
import TDS

/// `sqlclient record --upstream SERVER --out FILE.tdssession …`: a recording TDS proxy
/// (SQLClientTesting's RecordingProxy, whose command line this is).
func runRecordCommand(_ arguments: [String]) -> Int32 {
    RecordingProxy.runCommandLine(arguments: arguments)
}

import Foundation

// A thin dispatcher: `sqlclient decode …` reads captures (DecodeCommand.swift); everything else
// is the query client (runQueryCommand, QueryCommand.swift).
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "decode" {
    exit(runDecodeCommand(Array(arguments.dropFirst())))
} else {
    exit(runQueryCommand(arguments))
}

import Foundation

import SQLClientTesting

// A thin dispatcher: `sqlclient decode …` reads captures (DecodeCommand.swift); `sqlclient bcp …` bulk-loads a
// data file (BcpCommand.swift); `sqlclient replay …`
// serves a recorded session on loopback (ReplayServer); everything else is the query client
// (runQueryCommand, QueryCommand.swift).
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "decode" {
    exit(runDecodeCommand(Array(arguments.dropFirst())))
} else if arguments.first == "bcp" {
    exit(runBcpCommand(Array(arguments.dropFirst())))
} else if arguments.first == "replay" {
    exit(ReplayServer.runCommandLine(arguments: Array(arguments.dropFirst())))
} else {
    exit(runQueryCommand(arguments))
}

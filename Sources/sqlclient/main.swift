import Foundation

import SQLClientTesting

// A thin dispatcher: `sqlclient decode …` reads captures (DecodeCommand.swift); `sqlclient replay …`
// serves a recorded session on loopback (ReplayServer); `sqlclient record …` records one through a
// proxy (RecordingProxy); everything else is the query client
// (runQueryCommand, QueryCommand.swift).
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "decode" {
    exit(runDecodeCommand(Array(arguments.dropFirst())))
} else if arguments.first == "replay" {
    exit(ReplayServer.runCommandLine(arguments: Array(arguments.dropFirst())))
} else if arguments.first == "record" {
    exit(runRecordCommand(Array(arguments.dropFirst())))   // RecordCommand.swift
} else {
    exit(runQueryCommand(arguments))
}

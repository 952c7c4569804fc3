import Foundation

import SQLClientTesting

// A thin dispatcher. Each subcommand is one entry below (name → function taking the arguments
// after the name and returning the exit status); anything else is the query client
// (runQueryCommand, QueryCommand.swift).
let subcommands: [String: ([String]) -> Int32] = [
    "decode": runDecodeCommand,                                         // DecodeCommand.swift
    "replay": { ReplayServer.runCommandLine(arguments: $0) },           // SQLClientTesting
    "record": runRecordCommand,                                         // RecordCommand.swift
    "bcp": runBcpCommand,                                               // BcpCommand.swift
]

let arguments = Array(CommandLine.arguments.dropFirst())
if let name = arguments.first, let command = subcommands[name] {
    exit(command(Array(arguments.dropFirst())))
} else {
    exit(runQueryCommand(arguments))
}

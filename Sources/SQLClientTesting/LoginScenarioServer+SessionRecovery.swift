import Foundation
import TDS

/// How a ``LoginScenarioServer`` keeps sessions for idle connection resiliency ([MS-TDS] 2.2.6.4
/// SESSIONRECOVERY, 2.2.7.11 FEATUREEXTACK, 2.2.7.21 SESSIONSTATE), written from the spec.
///
/// Each connection has a session: database, language, SET options and a transaction. SQL batches
/// change it, one statement per line or `;`:
/// - `USE name` → ENVCHANGE type 1; `SET LANGUAGE name` → ENVCHANGE type 2;
/// - `SET OPTION ON|OFF` (any option name) → SESSIONSTATE (recoverable) with StateId 0 holding every
///   option as text (`ANSI_NULLS=ON;NOCOUNT=OFF;…`);
/// - `BEGIN TRAN[SACTION]`, `COMMIT`, `ROLLBACK` → ENVCHANGE types 8, 9, 10;
/// - `EXEC sp_mark_unrecoverable` → SESSIONSTATE with fRecoverable clear (StateId 1);
/// - `SHUTDOWN WITH NOWAIT` → no answer: the server closes the connection in the middle of the request;
/// - `SELECT …` → one row: `server`, `database`, `language`, `options` (the session as it is).
///
/// LOGIN7 asking for SESSIONRECOVERY is acknowledged (unless told otherwise) with the initial
/// state list; a LOGIN7 carrying SESSIONRECOVERY data (a recovery) gets its session restored from
/// it: the "to be" database, language and states over the initial ones.
public struct SessionRecoveryScenario: Sendable {
    /// Acknowledge SESSIONRECOVERY at a first login (empty feature data).
    public var acknowledgeAtLogin = true
    /// Acknowledge SESSIONRECOVERY in a recovery login (feature data present).
    public var acknowledgeRecovery = true
    /// The SET options a new session starts with.
    public var initialOptions: [String: Bool] = ["ANSI_NULLS": true, "QUOTED_IDENTIFIER": true, "NOCOUNT": false]

    /// A scenario that acknowledges SESSIONRECOVERY at login and on recovery.
    public init(acknowledgeAtLogin: Bool = true, acknowledgeRecovery: Bool = true) {
        self.acknowledgeAtLogin = acknowledgeAtLogin
        self.acknowledgeRecovery = acknowledgeRecovery
    }

    /// StateId of the SET options (text).
    public static let optionsStateID: UInt8 = 0
    /// StateId `sp_mark_unrecoverable` reports unrecoverable.
    public static let unrecoverableStateID: UInt8 = 1

    /// The options as StateValue text: `NAME=ON|OFF` sorted by name, `;`-separated.
    public static func optionsText(_ options: [String: Bool]) -> String {
        options.keys.sorted().map { "\($0)=\(options[$0] == true ? "ON" : "OFF")" }.joined(separator: ";")
    }

    /// Options from their StateValue text (the inverse of ``optionsText(_:)``).
    public static func options(fromText text: String) -> [String: Bool] {
        var options: [String: Bool] = [:]
        for part in text.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { options[String(pair[0])] = pair[1] == "ON" }
        }
        return options
    }

    /// [MS-TDS] 2.2.7.21 SESSIONSTATE: token 0xE4, Length, SeqNo, Status (fRecoverable in bit 0), states.
    public static func sessionStateToken(sequence: UInt32, recoverable: Bool, states: [SessionState.State]) -> [UInt8] {
        var body = ByteWriter()
        body.writeUInt32LE(sequence)
        body.writeUInt8(recoverable ? 1 : 0)
        SessionRecoveryData.encodeStates(states, into: &body)
        var w = ByteWriter()
        w.writeUInt8(TokenType.sessionState.rawValue)
        w.writeUInt32LE(UInt32(body.count))
        w.writeBytes(body.bytes)
        return w.bytes
    }
}

/// One connection's session on a ``LoginScenarioServer`` with a ``SessionRecoveryScenario``.
struct ScenarioSession: Sendable {
    let scenario: SessionRecoveryScenario
    var database: String
    var language: String
    var options: [String: Bool]
    var sequence: UInt32 = 0
    var transaction: [UInt8]?
    /// The batch asked the server to close the connection without answering (`SHUTDOWN`).
    var closesWithoutAnswer = false
    /// The LOGIN7 asked for SESSIONRECOVERY.
    let requested: Bool
    /// The LOGIN7 carried SESSIONRECOVERY data (it recovers a session).
    let recovering: Bool

    init(scenario: SessionRecoveryScenario, login: Login7) {
        self.scenario = scenario
        let feature = login.featureExt?.first { $0.id == Login7Feature.sessionRecoveryID }
        requested = feature != nil
        database = login.database.isEmpty ? "master" : login.database
        language = "us_english"
        options = scenario.initialOptions
        recovering = !(feature?.data.isEmpty ?? true)
        if let data = feature?.data, let recovery = try? SessionRecoveryFeature.decode(data) {
            database = recovery.toBe.database.isEmpty ? recovery.initial.database : recovery.toBe.database
            language = recovery.toBe.language.isEmpty ? recovery.initial.language : recovery.toBe.language
            let state = recovery.toBe.states.first { $0.id == SessionRecoveryScenario.optionsStateID }
                ?? recovery.initial.states.first { $0.id == SessionRecoveryScenario.optionsStateID }
            if let state { options = SessionRecoveryScenario.options(fromText: String(decoding: state.value, as: UTF8.self)) }
        }
    }

    var optionsState: SessionState.State {
        SessionState.State(id: SessionRecoveryScenario.optionsStateID,
                           value: Array(SessionRecoveryScenario.optionsText(options).utf8))
    }

    /// FEATUREEXTACK's SESSIONRECOVERY entry: the session's state list; nil when not acknowledged.
    var featureAcknowledgement: FeatureExtAck.Feature? {
        guard requested, recovering ? scenario.acknowledgeRecovery : scenario.acknowledgeAtLogin else { return nil }
        var w = ByteWriter()
        SessionRecoveryData.encodeStates([optionsState], into: &w)
        return FeatureExtAck.Feature(id: .sessionRecovery, data: w.bytes)
    }

    /// The response to a SQL batch (see ``SessionRecoveryScenario``).
    mutating func respond(to text: String, server: String, version: TDSVersion) -> [UInt8] {
        var t: [UInt8] = []
        var selected = false
        let statements = text.split(whereSeparator: { $0 == ";" || $0 == "\n" })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for statement in statements {
            let words = statement.split(separator: " ").map(String.init)
            let upper = words.map { $0.uppercased() }
            if upper.first == "USE", words.count >= 2 {
                let old = database
                database = words[1].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                t += ServerTokens.envChange(type: 1, new: database, old: old)
            } else if upper.count >= 3, upper[0] == "SET", upper[1] == "LANGUAGE" {
                let old = language
                language = words[2]
                t += ServerTokens.envChange(type: 2, new: language, old: old)
            } else if upper.count == 3, upper[0] == "SET", upper[2] == "ON" || upper[2] == "OFF" {
                options[upper[1]] = upper[2] == "ON"
                sequence &+= 1
                t += SessionRecoveryScenario.sessionStateToken(sequence: sequence, recoverable: true, states: [optionsState])
            } else if upper.first == "BEGIN" {
                let descriptor: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0]
                transaction = descriptor
                var w = ByteWriter()
                EnvChange(type: .beginTransaction, newValue: .bytes(descriptor), oldValue: .bytes([])).encode(into: &w)
                t += w.bytes
            } else if upper.first == "COMMIT" || upper.first == "ROLLBACK" {
                var w = ByteWriter()
                EnvChange(type: upper.first == "COMMIT" ? .commitTransaction : .rollbackTransaction, newValue: .bytes([]),
                          oldValue: .bytes(transaction ?? [])).encode(into: &w)
                t += w.bytes
                transaction = nil
            } else if upper.count >= 2, upper[0] == "EXEC", upper[1] == "SP_MARK_UNRECOVERABLE" {
                sequence &+= 1
                t += SessionRecoveryScenario.sessionStateToken(
                    sequence: sequence, recoverable: false,
                    states: [SessionState.State(id: SessionRecoveryScenario.unrecoverableStateID, value: [1])])
            } else if upper.first == "SHUTDOWN" {
                closesWithoutAnswer = true
                return []
            } else if upper.first == "SELECT" {
                selected = true
            }
        }
        if selected {
            let columns = ["server", "database", "language", "options"].map { ColumnMetadata(typeInfo: .nvarchar(256), name: $0) }
            let values: [SQLValue] = [.string(server), .string(database), .string(language),
                                      .string(SessionRecoveryScenario.optionsText(options))]
            t += ServerTokens.colMetadata(columns, version: version)
            t += (try? ServerTokens.row(values, columns: columns)) ?? []
            t += ServerTokens.done(status: .count, rowCount: 1, version: version)
        } else {
            t += ServerTokens.done(version: version)
        }
        return t
    }
}

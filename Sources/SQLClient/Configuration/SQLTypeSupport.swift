import Foundation
import TDS

/// Which of SQL Server 2025's data types the client asks for in LOGIN7 FeatureExt: json
/// (JSONSUPPORT, 0x0D) and vector (VECTORSUPPORT, 0x0E). Both are asked for by default.
///
/// A server that acknowledges a feature sends that type's columns, output parameters and return
/// values as json (0xF4) or vector (0xF5); one that does not (an older server, or the feature
/// switched off here) sends json as `nvarchar(max)` and vector as `varchar(max)` holding a JSON
/// array, which `SQLValue.floatsValue` and `Decodable` `[Float]` read too.
///
/// Connection string keys: `Json Support` (true/false) and `Vector Support` (`Off`, `Float32`,
/// `Float16`; true/false for Float32/Off). CLI: `--json-support on|off`, `--vector-support off|float32|float16`.
public struct SQLTypeSupport: Sendable, Hashable {
    /// How much of the vector type to ask for.
    public enum Vector: UInt8, Sendable, Hashable, CaseIterable {
        /// VECTORSUPPORT not sent: vectors arrive as varchar(max) JSON text.
        case off = 0
        /// VECTORSUPPORT version 1: float32 vectors.
        case float32 = 1
        /// VECTORSUPPORT version 2: float32 and float16 vectors.
        case float16 = 2
    }

    /// Ask for JSONSUPPORT version 1 (default true).
    public var json: Bool
    /// The VECTORSUPPORT version asked for (default `.float32`).
    public var vector: Vector

    /// Both features asked for (json, float32 vectors) unless told otherwise.
    public init(json: Bool = true, vector: Vector = .float32) {
        self.json = json
        self.vector = vector
    }

    /// The JSONSUPPORT version asked for (1, or 0 when off).
    public var jsonVersion: UInt8 { json ? 1 : 0 }

    /// The FeatureExt entries to add to LOGIN7 ([MS-TDS] 2.2.6.4): FeatureId, a 4-byte length of
    /// 1 and the version byte, for each feature asked for.
    public var login7Features: [Login7Feature] {
        var features: [Login7Feature] = []
        if json { features.append(Login7Feature(id: FeatureID.jsonSupport.rawValue, data: [jsonVersion])) }
        if vector != .off { features.append(Login7Feature(id: FeatureID.vectorSupport.rawValue, data: [vector.rawValue])) }
        return features
    }

    /// Adds ``login7Features`` to `login` (TDS 7.4: FeatureExt needs it; earlier versions send none).
    func request(in login: inout Login7) {
        guard login.tdsVersion.generation >= 0x74 else { return }
        let features = login7Features
        guard !features.isEmpty else { return }
        var list = login.featureExt ?? []
        for f in features where !list.contains(where: { $0.id == f.id }) { list.append(f) }
        login.featureExt = list
    }

    /// The versions the server acknowledged in FEATUREEXTACK (0: not supported), checked against
    /// what was asked: a version 0 (or no acknowledgement) is "not supported"; a version above the
    /// one asked, or an acknowledgement whose data is not exactly one byte, is a protocol error.
    /// - Throws: ``SQLClientError`` `.protocolError` naming the feature.
    public func negotiated(by ack: FeatureExtAck?) throws(SQLClientError) -> (json: UInt8, vector: UInt8) {
        func version(_ id: FeatureID, asked: UInt8) throws(SQLClientError) -> UInt8 {
            guard let data = ack?.data(for: id) else { return 0 }
            guard data.count == 1 else {
                throw SQLClientError(.protocolError, "the server's login response is invalid: \(id) acknowledged with"
                                     + " \(data.count) byte(s) of data, expected a 1-byte version")
            }
            guard data[0] <= asked else {
                throw SQLClientError(.protocolError, "the server's login response is invalid: \(id) version \(data[0])"
                                     + " acknowledged, above the version \(asked) the client asked for")
            }
            return data[0]
        }
        return (try version(.jsonSupport, asked: jsonVersion), try version(.vectorSupport, asked: vector.rawValue))
    }
}

/// The connection-string keys of ``SQLTypeSupport``.
struct TypeSupportKeys {
    var support = SQLTypeSupport()

    /// Takes `key` (normalised: lower case, single spaces) when it is one of these; false otherwise.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` for a bad value (named by key only).
    mutating func take(_ key: String, value: String, rawKey: String) throws(SQLClientError) -> Bool {
        let v = value.lowercased().trimmingCharacters(in: .whitespaces)
        switch key {
        case "json support", "jsonsupport":
            support.json = try ConnectionStringParser.bool(v, key: rawKey)
        case "vector support", "vectorsupport":
            guard let vector = SQLTypeSupport.Vector(text: v) else {
                throw SQLClientError(.invalidConfiguration, "invalid value for \(rawKey) (Off, Float32 or Float16)")
            }
            support.vector = vector
        default:
            return false
        }
        return true
    }
}

extension SQLTypeSupport.Vector {
    /// `off`/`false`/`no`/`0`, `float32`/`true`/`on`/`yes`/`1`, `float16`/`2` (any case); nil otherwise.
    public init?(text: String) {
        switch text.lowercased() {
        case "off", "false", "no", "0", "none": self = .off
        case "float32", "true", "on", "yes", "1": self = .float32
        case "float16", "2": self = .float16
        default: return nil
        }
    }
}

extension SQLSessionInfo {
    /// Whether the server acknowledged JSONSUPPORT: json columns arrive as json (0xF4), and
    /// `.json` parameters are sent as json rather than nvarchar(max).
    public var supportsJSON: Bool { jsonSupportVersion > 0 }
    /// Whether the server acknowledged VECTORSUPPORT: vector columns arrive as vector (0xF5), and
    /// `.vector` parameters are sent as vector rather than varchar(max) JSON text.
    public var supportsVector: Bool { vectorSupportVersion > 0 }
}

/// SQL Server 2025 types a session can carry on the wire (what the server acknowledged at login;
/// ``SQLSessionInfo/supportsJSON`` and ``SQLSessionInfo/supportsVector`` say it publicly).
package struct SQLServerTypes: OptionSet, Sendable, Hashable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }
    /// json (JSONSUPPORT acknowledged).
    package static let json = SQLServerTypes(rawValue: 1)
    /// vector (VECTORSUPPORT acknowledged).
    package static let vector = SQLServerTypes(rawValue: 2)
    /// Both.
    package static let all: SQLServerTypes = [.json, .vector]
}

extension SQLSessionInfo {
    /// The SQL Server 2025 types this session carries (from ``jsonSupportVersion`` and ``vectorSupportVersion``).
    package var serverTypes: SQLServerTypes {
        var t: SQLServerTypes = []
        if supportsJSON { t.insert(.json) }
        if supportsVector { t.insert(.vector) }
        return t
    }
}

extension RPCParameter {
    /// This parameter as a session without `types` takes it: json (0xF4) as nvarchar(max) text,
    /// vector (0xF5) as nvarchar(max) JSON array text (`[1.0,2.0]`), which SQL Server converts
    /// implicitly to the column's or parameter's json or vector type.
    func substitutingTypes(missing types: SQLServerTypes) -> RPCParameter {
        var p = self
        if typeInfo.type == .json, !types.contains(.json) {
            p.typeInfo = .nvarchar(nil)
            if case .json(let s) = value { p.value = .string(s) }
        } else if typeInfo.type == .vector, !types.contains(.vector) {
            p.typeInfo = .nvarchar(nil)
            if case .vector(let v) = value { p.value = .string(v.jsonText) }
        }
        return p
    }
}

extension SQLVector: SQLCellDecodable {
    /// A vector value (``SQLValue/vectorValue``: also one read from a JSON array of numbers held
    /// as json or character text, what a server that did not acknowledge VECTORSUPPORT sends).
    /// `[Float]` in a `Decodable` reads through it.
    /// - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws {
        if case .value(let v) = cell.typed({ $0.vector(row: $1, column: $2) }) {
            self = v
            return
        }
        guard let v = cell.value.vectorValue else { throw cell.failure(SQLVector.self) }
        self = v
    }
}

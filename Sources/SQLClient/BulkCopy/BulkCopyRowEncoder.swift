import Foundation
import TDS

/// Turns one `Encodable` value into a bulk-load row: each top-level property goes to the column
/// of the same name (exact, then case-insensitive), converted to that column's type; columns
/// without a property get NULL; properties without a column are ignored.
struct BulkCopyRowEncoder {
    /// A value that cannot go to its column.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func row<T: Encodable>(_ value: T, columns: [BulkLoadColumn], timeZone: TimeZone) throws -> [SQLValue] {
        let sink = Sink(columns: columns, timeZone: timeZone)
        try value.encode(to: RowEncoder(sink: sink))
        return sink.values
    }

    final class Sink {
        let columns: [BulkLoadColumn]
        let timeZone: TimeZone
        var values: [SQLValue]
        var exact: [String: Int] = [:]
        var folded: [String: Int] = [:]

        init(columns: [BulkLoadColumn], timeZone: TimeZone) {
            self.columns = columns
            self.timeZone = timeZone
            values = Array(repeating: .null, count: columns.count)
            for (i, c) in columns.enumerated() {
                if exact[c.name] == nil { exact[c.name] = i }
                if folded[c.name.lowercased()] == nil { folded[c.name.lowercased()] = i }
            }
        }

        func index(_ key: String) -> Int? { exact[key] ?? folded[key.lowercased()] }

        func set(_ key: String, _ value: Any) throws {
            guard let i = index(key) else { return }
            values[i] = try convert(value, to: columns[i].typeInfo, column: columns[i].name)
        }

        /// A Swift value as an `SQLValue` for a column of type `t`.
        func convert(_ value: Any, to t: TypeInfo, column: String) throws -> SQLValue {
            func fail() -> Failure { Failure(description: "property \(column): \(type(of: value)) cannot go to \(t.sqlTypeName)") }
            switch value {
            case let v as SQLValue: return v
            case let d as Date:
                let v: SQLValue?
                switch t.type {
                case .dateN: v = SQLDate(d, in: timeZone).map(SQLValue.date)
                case .timeN: v = SQLDateTime2(d, in: timeZone, scale: t.scale).map { .time($0.time) }
                case .datetime2N: v = SQLDateTime2(d, in: timeZone, scale: t.scale).map(SQLValue.datetime2)
                case .datetimeOffsetN: v = SQLDateTimeOffset(d, offsetMinutes: 0, scale: t.scale).map(SQLValue.datetimeOffset)
                case .datetimN, .datetime, .datetim4:
                    v = t.length == 4 || t.type == .datetim4 ? SQLSmallDateTime(d, in: timeZone).map(SQLValue.smallDateTime)
                        : SQLDateTime(d, in: timeZone).map(SQLValue.datetime)
                default: throw fail()
                }
                guard let v else { throw Failure(description: "property \(column): the date is outside \(t.sqlTypeName)'s range") }
                return v
            case let d as Decimal:
                switch t.type {
                case .moneyN, .money, .money4:
                    guard let m = SQLMoney(d) else { throw Failure(description: "property \(column): \(d) is outside money's range") }
                    return t.length == 4 || t.type == .money4 ? .smallMoney(m) : .money(m)
                case .decimalN, .numericN:
                    guard let x = SQLDecimal(d, precision: t.precision, scale: t.scale) else {
                        throw Failure(description: "property \(column): \(d) does not fit \(t.sqlTypeName)")
                    }
                    return .decimal(x)
                case .fltN: return .float(NSDecimalNumber(decimal: d).doubleValue)
                default: throw fail()
                }
            case let u as UUID: return .uniqueIdentifier(u)
            case let data as Data: return .binary([UInt8](data))
            case let bytes as [UInt8]: return .binary(bytes)
            case let s as String: return t.type == .xml ? .xml(s) : .string(s)
            case let v as SQLVector: return .vector(v)
            case let f as [Float] where t.type == .vector: return .vector(SQLVector(f, elementType: t.vectorElementType ?? .float32))
            case let b as Bool: return .bit(b)
            case let x as Double: return t.type == .fltN && t.length == 4 ? .real(Float(x)) : .float(x)
            case let x as Float: return t.type == .fltN && t.length == 8 ? .float(Double(x)) : .real(x)
            case let x as any BinaryInteger:
                guard let i = Int64(exactly: x) else { throw Failure(description: "property \(column): \(x) is outside bigint's range") }
                return .bigint(i)
            default: throw fail()
            }
        }
    }

    struct RowEncoder: Encoder {
        let sink: Sink
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(Keyed<Key>(sink: sink))
        }
        func unkeyedContainer() -> any UnkeyedEncodingContainer { Unsupported(codingPath: codingPath) }
        func singleValueContainer() -> any SingleValueEncodingContainer { Unsupported(codingPath: codingPath) }
    }

    /// Top-level properties. Values the column conversion knows (Date, Decimal, UUID, Data…) are
    /// taken whole, not through their own `encode(to:)`.
    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let sink: Sink
        var codingPath: [any CodingKey] = []

        mutating func encodeNil(forKey key: Key) throws { try sink.set(key.stringValue, SQLValue.null) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try sink.set(key.stringValue, value) }
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
            try sink.set(key.stringValue, value.map { $0 as Any } ?? SQLValue.null)
        }
        mutating func nestedContainer<N: CodingKey>(keyedBy keyType: N.Type, forKey key: Key) -> KeyedEncodingContainer<N> {
            KeyedEncodingContainer(Keyed<N>(sink: Sink(columns: [], timeZone: sink.timeZone)))
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { Unsupported(codingPath: codingPath) }
        mutating func superEncoder() -> any Encoder { RowEncoder(sink: sink) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { RowEncoder(sink: sink) }
    }

    /// A row must be a keyed value (a struct or class with properties): anything else fails.
    struct Unsupported: UnkeyedEncodingContainer, SingleValueEncodingContainer {
        var codingPath: [any CodingKey]
        var count = 0
        func fail() -> Failure { Failure(description: "a bulk-load row must encode as properties (a struct), not a single or unkeyed value") }
        mutating func encodeNil() throws { throw fail() }
        mutating func encode<T: Encodable>(_ value: T) throws { throw fail() }
        mutating func nestedContainer<N: CodingKey>(keyedBy keyType: N.Type) -> KeyedEncodingContainer<N> {
            KeyedEncodingContainer(Keyed<N>(sink: Sink(columns: [], timeZone: .current)))
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
        mutating func superEncoder() -> any Encoder { RowEncoder(sink: Sink(columns: [], timeZone: .current)) }
    }
}

import Foundation
import TDS

/// A `Decoder` over one ``SQLRow``: a keyed container whose keys are column names.
struct SQLRowDecoder: Decoder {
    let row: SQLRow
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedContainer<Key>(row: row))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        UnkeyedContainer(row: row)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        guard row.values.count == 1 else {
            throw SQLClientError(.decodingFailed, "a single value needs a row of one column, this row has \(row.values.count)")
        }
        return ValueContainer(value: row.values[0], column: row.columns[0].name, index: 0)
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let row: SQLRow
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { row.columns.compactMap { Key(stringValue: $0.name) } }

        func contains(_ key: Key) -> Bool { row.columns.index(of: key.stringValue) != nil }

        private func cell(_ key: Key) throws -> ValueContainer {
            guard let i = row.columns.index(of: key.stringValue), i < row.values.count else {
                throw SQLClientError(.decodingFailed, "the row has no column named \"\(key.stringValue)\"")
            }
            return ValueContainer(value: row.values[i], column: row.columns[i].name, index: i)
        }

        func decodeNil(forKey key: Key) throws -> Bool { try cell(key).decodeNil() }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try cell(key).decode(type) }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            guard contains(key) else { return nil }
            let c = try cell(key)
            if c.decodeNil() { return nil }
            return try c.decode(type)
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey> {
            throw SQLClientError(.decodingFailed, "column \"\(key.stringValue)\" cannot hold a nested object")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw SQLClientError(.decodingFailed, "column \"\(key.stringValue)\" cannot hold an array")
        }
        func superDecoder() throws -> any Decoder { SQLRowDecoder(row: row) }
        func superDecoder(forKey key: Key) throws -> any Decoder { SQLRowDecoder(row: row) }
    }

    /// Columns in order, for tuples-like types decoded with an unkeyed container.
    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let row: SQLRow
        var codingPath: [any CodingKey] { [] }
        var count: Int? { row.values.count }
        var isAtEnd: Bool { currentIndex >= row.values.count }
        var currentIndex = 0

        init(row: SQLRow) { self.row = row }

        private mutating func next() throws -> ValueContainer {
            guard !isAtEnd else { throw SQLClientError(.decodingFailed, "the row has only \(row.values.count) columns") }
            defer { currentIndex += 1 }
            return ValueContainer(value: row.values[currentIndex], column: row.columns[currentIndex].name, index: currentIndex)
        }
        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd else { return false }
            if row.values[currentIndex].isNull { currentIndex += 1; return true }
            return false
        }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            throw SQLClientError(.decodingFailed, "a column cannot hold a nested object")
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw SQLClientError(.decodingFailed, "a column cannot hold an array")
        }
        mutating func superDecoder() throws -> any Decoder { SQLRowDecoder(row: row) }
    }

    /// One cell. Conversions are exact or fail: an integer that does not fit, text that is not a
    /// number, a fractional decimal asked for as an integer all throw `.decodingFailed`.
    struct ValueContainer: SingleValueDecodingContainer, Decoder {
        let value: SQLValue
        let column: String
        let index: Int
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            throw failure("a keyed container")
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw failure("an array") }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func decodeNil() -> Bool { value.isNull }

        func failure(_ what: String) -> SQLClientError {
            let kind: String
            if value.isNull { kind = "NULL" } else { kind = "\(value)".count > 40 ? "a value" : "value \(value)" }
            return SQLClientError(.decodingFailed, "column \"\(column)\" (index \(index)): cannot convert \(kind) to \(what)")
        }

        private func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            let base = value.baseValue
            switch base {
            case .bit(let b): return b ? 1 : 0
            case .tinyint(let v): if let r = I(exactly: v) { return r }
            case .smallint(let v): if let r = I(exactly: v) { return r }
            case .int(let v): if let r = I(exactly: v) { return r }
            case .bigint(let v): if let r = I(exactly: v) { return r }
            case .real(let v): if let r = I(exactly: v) { return r }
            case .float(let v): if let r = I(exactly: v) { return r }
            default:
                if let d = base.decimalValue {
                    let n = NSDecimalNumber(decimal: d).int64Value
                    if Decimal(n) == d, let r = I(exactly: n) { return r }
                }
                if case .string(let s) = base, let r = I(s.trimmingCharacters(in: .whitespaces)) { return r }
            }
            throw failure("\(I.self)")
        }

        func decode(_ type: Bool.Type) throws -> Bool {
            if let b = value.boolValue { return b }
            throw failure("Bool")
        }
        func decode(_ type: String.Type) throws -> String {
            if let s = value.stringValue { return s }
            if !value.isNull, let t = value.canonicalText { return t }
            throw failure("String")
        }
        func decode(_ type: Double.Type) throws -> Double {
            if let d = value.doubleValue { return d }
            if case .string(let s) = value.baseValue, let d = Double(s) { return d }
            throw failure("Double")
        }
        func decode(_ type: Float.Type) throws -> Float {
            if case .real(let f) = value.baseValue { return f }
            if let d = value.doubleValue { return Float(d) }
            throw failure("Float")
        }
        func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if T.self == Decimal.self {
                if let d = value.decimalValue, let r = d as? T { return r }
                throw failure("Decimal")
            }
            if T.self == Date.self {
                if let d = value.dateValue(), let r = d as? T { return r }
                throw failure("Date")
            }
            if T.self == UUID.self {
                if let u = value.uuidValue, let r = u as? T { return r }
                if case .string(let s) = value.baseValue, let u = UUID(uuidString: s), let r = u as? T { return r }
                throw failure("UUID")
            }
            if T.self == Data.self {
                if let d = value.dataValue, let r = d as? T { return r }
                throw failure("Data")
            }
            if T.self == [UInt8].self {
                if let b = value.bytesValue, let r = b as? T { return r }
                throw failure("[UInt8]")
            }
            if value.isNull { throw failure("\(T.self)") }
            return try T(from: self)
        }
    }
}

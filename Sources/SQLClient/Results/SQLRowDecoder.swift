import Foundation
import Synchronization
import TDS

/// A `Decoder` over one ``SQLRow``: a keyed container whose keys are column names.
///
/// Built for one row per call of ``SQLRow/decode(_:)``, so it does per row only what a row
/// needs: the column of each coding key is resolved once per result set and key type
/// (``SQLColumnKeyPlan``, kept by the result's ``SQLColumns``), every fixed-width and string
/// type has its own `decode` (no generic path, no dynamic cast, no boxing per value), and a
/// value is read straight from the row's block (``SQLRow/subscript(_:)``: decoded there, once).
struct SQLRowDecoder: Decoder {
    let row: SQLRow
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedContainer<Key>(row: row, plan: row.columns.keyPlan(for: Key.self)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        UnkeyedContainer(row: row)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        guard row.count == 1 else {
            throw SQLClientError(.decodingFailed, "a single value needs a row of one column, this row has \(row.count)")
        }
        return ValueContainer(value: row[0], row: row, index: 0)
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let row: SQLRow
        let plan: SQLColumnKeyPlan?
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { row.columns.compactMap { Key(stringValue: $0.name) } }

        /// The column of `key`: from the plan (by the key's value when the plan can, else by the
        /// identity of its name: no string hashing), else by name (exact, then case-insensitive).
        @inline(__always)
        private func column(_ key: Key) -> Int? {
            if let plan {
                if plan.keysByValue, let i = plan.column(ofValue: SQLColumnKeyPlan.valueBits(of: key)) { return i }
                if let i = plan.column(of: key.stringValue) { return i }
            }
            guard let i = row.columns.index(of: key.stringValue), i < row.count else { return nil }
            return i
        }

        @inline(__always)
        private func cell(_ key: Key) throws -> ValueContainer {
            guard let i = column(key) else {
                throw SQLClientError(.decodingFailed, "the row has no column named \"\(key.stringValue)\"")
            }
            return ValueContainer(value: row[i], row: row, index: i)
        }

        /// The cell of `key`, nil when there is no such column or its value is NULL (one read
        /// of the value: a NULL reads as `.null` without decoding anything).
        @inline(__always)
        private func presentCell(_ key: Key) -> ValueContainer? {
            guard let i = column(key) else { return nil }
            let value = row[i]
            if value.isNull { return nil }
            return ValueContainer(value: value, row: row, index: i)
        }

        func contains(_ key: Key) -> Bool { column(key) != nil }

        func decodeNil(forKey key: Key) throws -> Bool {
            guard let i = column(key) else {
                throw SQLClientError(.decodingFailed, "the row has no column named \"\(key.stringValue)\"")
            }
            return row.isNull(at: i)
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try cell(key).decode(type) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try cell(key).decode(type) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try cell(key).decode(type) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try cell(key).decode(type) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try cell(key).decode(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try cell(key).decode(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try cell(key).decode(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try cell(key).decode(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try cell(key).decode(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try cell(key).decode(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try cell(key).decode(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try cell(key).decode(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try cell(key).decode(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try cell(key).decode(type) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try cell(key).decode(type) }

        // One lookup each (the protocol's defaults ask `contains`, then `decodeNil`, then `decode`).
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try presentCell(key)?.decode(type) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try presentCell(key)?.decode(type) }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try presentCell(key)?.decode(type) }

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
        var count: Int? { row.count }
        var isAtEnd: Bool { currentIndex >= row.count }
        var currentIndex = 0

        init(row: SQLRow) { self.row = row }

        private mutating func next() throws -> ValueContainer {
            guard !isAtEnd else { throw SQLClientError(.decodingFailed, "the row has only \(row.count) columns") }
            defer { currentIndex += 1 }
            return ValueContainer(value: row[currentIndex], row: row, index: currentIndex)
        }
        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd else { return false }
            if row.isNull(at: currentIndex) { currentIndex += 1; return true }
            return false
        }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decode(type) }
        mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
        mutating func decode(_ type: Double.Type) throws -> Double { try next().decode(type) }
        mutating func decode(_ type: Float.Type) throws -> Float { try next().decode(type) }
        mutating func decode(_ type: Int.Type) throws -> Int { try next().decode(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().decode(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().decode(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().decode(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().decode(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next().decode(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().decode(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().decode(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decode(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().decode(type) }
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
        /// The row and column the value came from (named in errors).
        let row: SQLRow
        let index: Int
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            throw failure("a keyed container")
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw failure("an array") }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func decodeNil() -> Bool { value.isNull }

        @inline(never)
        func failure(_ what: String) -> SQLClientError {
            let kind: String
            if value.isNull { kind = "NULL" } else { kind = "\(value)".count > 40 ? "a value" : "value \(value)" }
            let column = index < row.columns.count ? row.columns[index].name : ""
            return SQLClientError(.decodingFailed, "column \"\(column)\" (index \(index)): cannot convert \(kind) to \(what)")
        }

        @inline(__always)
        private func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            // The common cases first, without unwrapping a variant.
            switch value {
            case .int(let v): if let r = I(exactly: v) { return r }
            case .bigint(let v): if let r = I(exactly: v) { return r }
            case .smallint(let v): if let r = I(exactly: v) { return r }
            case .tinyint(let v): if let r = I(exactly: v) { return r }
            default: return try otherInteger(type)
            }
            throw failure("\(I.self)")
        }

        private func otherInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
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
            if case .bit(let b) = value { return b }
            if let b = value.boolValue { return b }
            throw failure("Bool")
        }
        func decode(_ type: String.Type) throws -> String {
            if case .string(let s) = value { return s }
            if let s = value.stringValue { return s }
            if !value.isNull, let t = value.canonicalText { return t }
            throw failure("String")
        }
        func decode(_ type: Double.Type) throws -> Double {
            if case .float(let d) = value { return d }
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

        /// `value` as `T`, which the caller has checked to be `U` (no dynamic cast, no box).
        @inline(__always)
        private func exactly<U, T>(_ value: U, as type: T.Type) -> T {
            withUnsafePointer(to: value) { UnsafeRawPointer($0).assumingMemoryBound(to: T.self).pointee }
        }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if T.self == Decimal.self {
                if let d = value.decimalValue { return exactly(d, as: T.self) }
                throw failure("Decimal")
            }
            if T.self == Date.self {
                if let d = value.utcDateValue { return exactly(d, as: T.self) }
                throw failure("Date")
            }
            if T.self == UUID.self {
                if let u = value.uuidValue { return exactly(u, as: T.self) }
                if case .string(let s) = value.baseValue, let u = UUID(uuidString: s) { return exactly(u, as: T.self) }
                throw failure("UUID")
            }
            if T.self == Data.self {
                if let d = value.dataValue { return exactly(d, as: T.self) }
                throw failure("Data")
            }
            if T.self == [UInt8].self {
                if let b = value.bytesValue { return exactly(b, as: T.self) }
                throw failure("[UInt8]")
            }
            if value.isNull { throw failure("\(T.self)") }
            return try T(from: self)
        }
    }
}

extension SQLValue {
    /// ``dateValue(in:)`` in UTC, without building a time zone per value.
    var utcDateValue: Date? {
        switch baseValue {
        case .datetimeOffset(let d): return d.date
        case .date, .datetime2, .datetime, .smallDateTime: return dateValue(in: SQLColumnKeyPlan.utc)
        default: return nil
        }
    }
}

/// The column of each coding key of one key type in one result set, resolved once: a key's
/// `stringValue` (the same string each time for synthesized keys, whose names are literals) is
/// found by the identity of its bytes, so decoding a row does not hash a column name per field.
///
/// A key type of at most one byte (a synthesized `CodingKeys` enum of up to 256 cases: no payload,
/// no reference) is found by its value instead: the plan keeps the column of each key value
/// `Key(stringValue:)` gave for a column name, indexed by the value's byte, and two such values
/// with the same byte are the same key.
///
/// Only exact name matches are in the plan; a key it does not find (a case-insensitive match, a
/// key whose `stringValue` is built per call, no such column) is looked up by name as before.
final class SQLColumnKeyPlan: Sendable {
    static let utc = TimeZone(secondsFromGMT: 0) ?? .current

    /// The key type the plan was made for.
    let keyType: ObjectIdentifier
    /// Whether ``column(ofValue:)`` applies: the key type is trivial and at most one byte.
    let keysByValue: Bool
    /// ``keysByValue``: per key value (its byte), the column of that key, -1 for none.
    private let columnOfValue: [Int32]

    private struct Slot: Sendable {
        var bits: (UInt64, UInt64) = (0, 0)
        var column = -1
    }
    private let slots: [Slot]
    private let mask: Int
    /// The key strings whose bytes the slots hold, kept alive so that their storage (and so
    /// their identity) is not reused while the plan exists.
    private let names: [String]

    /// The bytes of `s` as a String holds them (its length, flags and either its UTF-8 or a
    /// pointer to its storage); nil where a String is not 16 bytes. Equal bits are the same
    /// string: the same storage, or the same inline bytes.
    @inline(__always)
    static func identity(_ s: String) -> (UInt64, UInt64)? {
        guard MemoryLayout<String>.size == 16 else { return nil }
        return withUnsafeBytes(of: s) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
    }

    @inline(__always)
    private static func hash(_ bits: (UInt64, UInt64)) -> Int {
        let h = (bits.0 ^ bits.1 &* 0x9E37_79B9_7F4A_7C15) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: h >> 32)
    }

    /// The byte of a key value of a type of at most one byte (0 for an empty type).
    @inline(__always)
    static func valueBits<Key>(of key: Key) -> Int {
        withUnsafeBytes(of: key) { $0.isEmpty ? 0 : Int($0[0]) }
    }

    init<Key: CodingKey>(_ type: Key.Type, columns: SQLColumns) {
        keyType = ObjectIdentifier(type)
        let byValue = MemoryLayout<Key>.size <= 1 && _isPOD(Key.self)
        var columnOfValue = [Int32](repeating: -1, count: byValue ? 256 : 0)
        var capacity = 8
        while capacity < columns.count * 2 { capacity <<= 1 }
        var slots = [Slot](repeating: Slot(), count: capacity)
        var names: [String] = []
        for (i, column) in columns.enumerated() {
            guard let key = Key(stringValue: column.name) else { continue }
            let name = key.stringValue
            guard name == column.name else { continue }
            if byValue {
                let v = SQLColumnKeyPlan.valueBits(of: key)
                if columnOfValue[v] < 0 { columnOfValue[v] = Int32(i) }   // an earlier column of the same name wins
            }
            guard let bits = SQLColumnKeyPlan.identity(name) else { continue }
            var h = SQLColumnKeyPlan.hash(bits) & (capacity - 1)
            var taken = false
            while slots[h].column >= 0 {
                if slots[h].bits == bits { taken = true; break }   // an earlier column of the same name wins
                h = (h + 1) & (capacity - 1)
            }
            if taken { continue }
            slots[h] = Slot(bits: bits, column: i)
            names.append(name)
        }
        self.slots = slots
        self.mask = capacity - 1
        self.names = names
        self.keysByValue = byValue
        self.columnOfValue = columnOfValue
    }

    /// The column of the key whose value's byte is `bits` (``keysByValue``), nil when no column
    /// is exactly that key's name.
    @inline(__always)
    func column(ofValue bits: Int) -> Int? {
        let i = columnOfValue[bits & 0xFF]
        return i < 0 ? nil : Int(i)
    }

    /// The column whose name is exactly `name`, when `name` is the key string the plan was made with.
    @inline(__always)
    func column(of name: String) -> Int? {
        guard let bits = SQLColumnKeyPlan.identity(name) else { return nil }
        var h = SQLColumnKeyPlan.hash(bits) & mask
        while true {
            let slot = slots[h]
            if slot.column < 0 { return nil }
            if slot.bits == bits { return slot.column }
            h = (h + 1) & mask
        }
    }
}

extension SQLColumns {
    /// The plan of `Key` for these columns (made on first use, then shared by every row).
    /// The first key type's plan is read without a lock (the common case: one type per result).
    func keyPlan<Key: CodingKey>(for type: Key.Type) -> SQLColumnKeyPlan? {
        let id = ObjectIdentifier(type)
        if let plan = firstKeyPlan.load(), plan.keyType == id { return plan }
        if let plan = keyPlans.withLock({ $0[id] }) { return plan }
        let plan = SQLColumnKeyPlan(type, columns: self)
        if firstKeyPlan.storeIfNil(plan) === plan { return plan }
        keyPlans.withLock { plans in
            if plans.count < 16 { plans[id] = plan }
        }
        return plan
    }
}

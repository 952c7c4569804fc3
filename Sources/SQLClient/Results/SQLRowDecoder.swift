import Foundation
import Synchronization
import TDS

/// What ``SQLRow/decode(_:)`` keeps per result set (one per ``SQLColumns``, shared by its rows):
/// the column of each coding key, per key type (``SQLColumnKeyPlan``), made on first use.
final class SQLRowDecoding: Sendable {
    /// The plan of the first key type decoded (the common case: compared by identity, no hashing)
    /// and the plans of the key types after it (at most 16 kept). A `Mutex` (its lock is inlined)
    /// rather than an `AtomicLazyReference`, whose unspecialized `load()` looked up generic
    /// metadata on every row.
    let keyPlans = Mutex<(first: SQLColumnKeyPlan?, others: [ObjectIdentifier: SQLColumnKeyPlan])>((nil, [:]))

    init() {}
}

/// The name-to-index table of one key type over one result set's columns: each column name a
/// key of the type accepts (`Key(stringValue:)` gives back that very name), mapped to its column
/// (the first column of a repeated name). A key not in it (a case-insensitive match) is looked
/// up by name in ``SQLColumns/index(of:)``.
///
/// An open-addressed table hashed on the name's length and its first UTF-8 byte (a synthesized
/// key's `stringValue` is a literal: nothing hashed byte by byte per field), each hit confirmed
/// with `==`.
final class SQLColumnKeyPlan: Sendable {
    /// The key type the plan was made for.
    let keyType: ObjectIdentifier
    private let names: [String]
    private let columns: [Int]
    private let mask: Int

    init<Key: CodingKey>(_ type: Key.Type, columns: SQLColumns) {
        keyType = ObjectIdentifier(type)
        var capacity = 8
        while capacity < columns.count * 2 { capacity <<= 1 }
        var names = [String](repeating: "", count: capacity)
        var slots = [Int](repeating: -1, count: capacity)
        for (i, column) in columns.enumerated() {
            guard let key = Key(stringValue: column.name), key.stringValue == column.name else { continue }
            var h = SQLColumnKeyPlan.hash(column.name) & (capacity - 1)
            var taken = false
            while slots[h] >= 0 {
                if names[h] == column.name { taken = true; break }   // an earlier column of the same name wins
                h = (h + 1) & (capacity - 1)
            }
            if taken { continue }
            names[h] = column.name
            slots[h] = i
        }
        self.names = names
        self.columns = slots
        self.mask = capacity - 1
    }

    /// Length and the first UTF-8 byte (O(1) for a native String).
    @inline(__always)
    static func hash(_ name: String) -> Int {
        let u = name.utf8
        return (u.count &* 0x9E37) ^ (Int(u.first ?? 0) &* 0x3B)
    }

    /// The column named exactly `name`, nil when no column is.
    @inline(__always)
    func column(of name: String) -> Int? {
        var h = SQLColumnKeyPlan.hash(name) & mask
        while true {
            let c = columns[h]
            if c < 0 { return nil }
            if names[h] == name { return c }
            h = (h + 1) & mask
        }
    }
}

extension SQLColumns {
    /// The plan of `Key` for these columns (made on first use, then shared by every row).
    func keyPlan<Key: CodingKey>(for type: Key.Type) -> SQLColumnKeyPlan {
        let id = ObjectIdentifier(type)
        let known = decoding.keyPlans.withLock { plans -> SQLColumnKeyPlan? in
            if let first = plans.first, first.keyType == id { return first }
            return plans.others[id]
        }
        if let known { return known }
        let plan = SQLColumnKeyPlan(type, columns: self)
        return decoding.keyPlans.withLock { plans in
            guard let first = plans.first else { plans.first = plan; return plan }
            if first.keyType == id { return first }
            if let other = plans.others[id] { return other }
            if plans.others.count < 16 { plans.others[id] = plan }
            return plan
        }
    }
}

/// A `Decoder` over one ``SQLRow``: `Decodable` as an adapter over the cells' decoding
/// (``SQLCellDecodable``). A keyed container's keys are column names (exact through the result
/// set's ``SQLColumnKeyPlan``, then case-insensitive); an unkeyed container reads the columns in
/// order; a single-value container reads a one-column row. Every leaf value is one
/// ``SQLCellDecodable`` read of its cell: straight from the row's wire bytes for the standard types.
struct SQLRowDecoder: Decoder {
    let row: SQLRow
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// ``SQLRow/decode(_:)``: `T(from:)` over `row`.
    /// - Throws: ``SQLClientError`` `.decodingFailed`, other errors of `T(from:)` wrapped in one.
    static func decode<T: Decodable>(_ type: T.Type, row: SQLRow) throws -> T {
        do {
            return try T(from: SQLRowDecoder(row: row))
        } catch let error as SQLClientError {
            throw error
        } catch {
            throw SQLClientError(.decodingFailed, "cannot decode \(T.self) from the row: \(error)")
        }
    }

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
        return ValueContainer(cell: SQLCell(storage: row.storage, row: row.index, column: 0))
    }

    /// `T` for a `Decodable` type the containers have no `decode` of their own for: the cell
    /// types `Decodable` knows (Decimal, Date, UUID, Data, [UInt8], SQLVector, [Float]) by their ``SQLCellDecodable``
    /// read, any other (a `RawRepresentable` enum) by its `init(from:)` over the cell (NULL fails).
    ///
    /// Written so that no `T?` is made: code generic over `T` (the standard library's container
    /// box calls it unspecialized) would look up `Optional<T>`'s metadata for each one.
    static func decode<T: Decodable>(_ type: T.Type, _ cell: SQLCell) throws -> T {
        // The value is cast as `C` to `T`, the runtime's identical-type fast path (`T` is `C`:
        // the cast cannot fail).
        if T.self == Decimal.self { return try Decimal(sqlCell: cell) as! T }
        if T.self == Date.self { return try Date(sqlCell: cell) as! T }
        if T.self == UUID.self { return try UUID(sqlCell: cell) as! T }
        if T.self == Data.self { return try Data(sqlCell: cell) as! T }
        if T.self == [UInt8].self { return try [UInt8](sqlCell: cell) as! T }
        if T.self == SQLVector.self { return try SQLVector(sqlCell: cell) as! T }
        if T.self == [Float].self { return try [Float](sqlCell: cell) as! T }   // a vector, or a JSON array of numbers as text
        if cell.isNull { throw cell.failure(T.self) }
        // A nested Decodable over this cell (a RawRepresentable enum's raw value read again here).
        return try T(from: ValueContainer(cell: cell))
    }

    /// As ``decode(_:_:)``, nil for NULL.
    @inline(__always)
    static func decodeIfPresent<T: Decodable>(_ type: T.Type, _ cell: SQLCell) throws -> T? {
        if cell.isNull { return nil }
        return .some(try decode(type, cell))
    }

    /// The columns of a row by coding key, each value read from its cell where it is.
    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let row: SQLRow
        let plan: SQLColumnKeyPlan
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { row.columns.compactMap { Key(stringValue: $0.name) } }

        /// The column of `key`: exact (the plan), else case-insensitive; nil when the row has no such column.
        @inline(__always)
        private func column(_ key: Key) -> Int? {
            let name = key.stringValue
            guard let i = plan.column(of: name) ?? row.columns.index(of: name), i < row.storage.width else { return nil }
            return i
        }

        @inline(__always)
        private func cell(_ key: Key) throws -> SQLCell {
            guard let i = column(key) else { throw noColumn(key) }
            return SQLCell(storage: row.storage, row: row.index, column: i)
        }

        @inline(__always)
        private func cellIfPresent(_ key: Key) -> SQLCell? {
            column(key).map { SQLCell(storage: row.storage, row: row.index, column: $0) }
        }

        @inline(never)
        private func noColumn(_ key: Key) -> SQLClientError {
            SQLDecodingFailure(columnName: key.stringValue, columnIndex: -1, sqlType: "", swiftType: "\(Key.self)", reason: .noColumn)
                .error(detail: "")
        }

        func contains(_ key: Key) -> Bool { column(key) != nil }

        func decodeNil(forKey key: Key) throws -> Bool { try cell(key).isNull }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Bool(sqlCell: cell(key)) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try String(sqlCell: cell(key)) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Double(sqlCell: cell(key)) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try Float(sqlCell: cell(key)) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Int(sqlCell: cell(key)) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Int8(sqlCell: cell(key)) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Int16(sqlCell: cell(key)) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Int32(sqlCell: cell(key)) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Int64(sqlCell: cell(key)) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try UInt(sqlCell: cell(key)) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try UInt8(sqlCell: cell(key)) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try UInt16(sqlCell: cell(key)) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try UInt32(sqlCell: cell(key)) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try UInt64(sqlCell: cell(key)) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try SQLRowDecoder.decode(type, cell(key)) }

        // One lookup and one read each (the protocol's defaults ask `contains`, then `decodeNil`, then `decode`).
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            try cellIfPresent(key).flatMap { try Bool.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            try cellIfPresent(key).flatMap { try String.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            try cellIfPresent(key).flatMap { try Double.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
            try cellIfPresent(key).flatMap { try Float.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            try cellIfPresent(key).flatMap { try Int.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
            try cellIfPresent(key).flatMap { try Int8.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
            try cellIfPresent(key).flatMap { try Int16.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
            try cellIfPresent(key).flatMap { try Int32.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
            try cellIfPresent(key).flatMap { try Int64.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
            try cellIfPresent(key).flatMap { try UInt.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
            try cellIfPresent(key).flatMap { try UInt8.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
            try cellIfPresent(key).flatMap { try UInt16.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
            try cellIfPresent(key).flatMap { try UInt32.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
            try cellIfPresent(key).flatMap { try UInt64.decodeIfPresent(sqlCell: $0) }
        }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            guard let i = column(key) else { return nil }
            return try SQLRowDecoder.decodeIfPresent(type, SQLCell(storage: row.storage, row: row.index, column: i))
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

    /// Columns in order, for tuple-like types decoded with an unkeyed container.
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
            return ValueContainer(cell: SQLCell(storage: row.storage, row: row.index, column: currentIndex))
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

    /// One cell, as a single value (and as the decoder of a `RawRepresentable` enum's `init(from:)`).
    struct ValueContainer: SingleValueDecodingContainer, Decoder {
        let cell: SQLCell
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            throw cell.failure(swiftType: "a keyed container")
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw cell.failure(swiftType: "an array") }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

        func decodeNil() -> Bool { cell.isNull }

        func decode(_ type: Bool.Type) throws -> Bool { try Bool(sqlCell: cell) }
        func decode(_ type: String.Type) throws -> String { try String(sqlCell: cell) }
        func decode(_ type: Double.Type) throws -> Double { try Double(sqlCell: cell) }
        func decode(_ type: Float.Type) throws -> Float { try Float(sqlCell: cell) }
        func decode(_ type: Int.Type) throws -> Int { try Int(sqlCell: cell) }
        func decode(_ type: Int8.Type) throws -> Int8 { try Int8(sqlCell: cell) }
        func decode(_ type: Int16.Type) throws -> Int16 { try Int16(sqlCell: cell) }
        func decode(_ type: Int32.Type) throws -> Int32 { try Int32(sqlCell: cell) }
        func decode(_ type: Int64.Type) throws -> Int64 { try Int64(sqlCell: cell) }
        func decode(_ type: UInt.Type) throws -> UInt { try UInt(sqlCell: cell) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try UInt8(sqlCell: cell) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try UInt16(sqlCell: cell) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try UInt32(sqlCell: cell) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try UInt64(sqlCell: cell) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try SQLRowDecoder.decode(type, cell) }
    }
}

/// The conversions of a cell's ``SQLValue`` to the Swift types ``SQLCellDecodable`` reads, for
/// the values no typed read of the row's wire bytes gives: exact or nil (an integer that does not
/// fit, text that is not a number, a fractional decimal asked for as an integer; NULL is nil).
enum SQLValueConversion {
    @inline(__always)
    static func integer<I: FixedWidthInteger>(_ value: SQLValue, _ type: I.Type) -> I? {
        // The common cases first, without unwrapping a variant.
        switch value {
        case .int(let v): return I(exactly: v)
        case .bigint(let v): return I(exactly: v)
        case .smallint(let v): return I(exactly: v)
        case .tinyint(let v): return I(exactly: v)
        default: return otherInteger(value, type)
        }
    }

    static func otherInteger<I: FixedWidthInteger>(_ value: SQLValue, _ type: I.Type) -> I? {
        let base = value.baseValue
        switch base {
        case .bit(let b): return b ? 1 : 0
        case .tinyint(let v): return I(exactly: v)
        case .smallint(let v): return I(exactly: v)
        case .int(let v): return I(exactly: v)
        case .bigint(let v): return I(exactly: v)
        case .real(let v): return I(exactly: v)
        case .float(let v): return I(exactly: v)
        default:
            if let d = base.decimalValue {
                let n = NSDecimalNumber(decimal: d).int64Value
                if Decimal(n) == d, let r = I(exactly: n) { return r }
            }
            if case .string(let s) = base, let r = I(s.trimmingCharacters(in: .whitespaces)) { return r }
            return nil
        }
    }

    @inline(__always)
    static func bool(_ value: SQLValue) -> Bool? {
        if case .bit(let b) = value { return b }
        return value.boolValue
    }

    @inline(__always)
    static func string(_ value: SQLValue) -> String? {
        if case .string(let s) = value { return s }
        return otherString(value)
    }

    static func otherString(_ value: SQLValue) -> String? {
        if let s = value.stringValue { return s }
        if !value.isNull, let t = value.canonicalText { return t }
        return nil
    }

    @inline(__always)
    static func double(_ value: SQLValue) -> Double? {
        if case .float(let d) = value { return d }
        return otherDouble(value)
    }

    static func otherDouble(_ value: SQLValue) -> Double? {
        if let d = value.doubleValue { return d }
        if case .string(let s) = value.baseValue, let d = Double(s) { return d }
        return nil
    }

    static func float(_ value: SQLValue) -> Float? {
        if case .real(let f) = value.baseValue { return f }
        if let d = value.doubleValue { return Float(d) }
        return nil
    }

    static func decimal(_ value: SQLValue) -> Decimal? {
        switch value {
        case .decimal(let d): return d.decimalValue
        case .money(let m), .smallMoney(let m): return m.decimalValue
        default: return value.decimalValue
        }
    }

    static func uuid(_ value: SQLValue) -> UUID? {
        if case .uniqueIdentifier(let u) = value { return u }
        if let u = value.uuidValue { return u }
        if case .string(let s) = value.baseValue { return UUID(uuidString: s) }
        return nil
    }

    static func bytes(_ value: SQLValue) -> [UInt8]? {
        if case .binary(let b) = value { return b }
        return value.bytesValue
    }
}

import Foundation
import Synchronization
import TDS

/// What ``SQLRow/decode(_:)`` keeps per result set (one per ``SQLColumns``, shared by its rows):
/// the column of each coding key per key type (``SQLColumnKeyPlan``) and one decoder context,
/// reused row after row so that decoding a row allocates nothing and builds no generic
/// metadata (see ``SQLRowDecoderContext``).
///
/// Rows of one result may be decoded concurrently: a decode claims the context by setting
/// ``busy`` with an atomic exchange and clears it when it is done (a plain store: no reference
/// is counted, the context stays owned by this object); a decode that finds it claimed (another
/// one holds it, or a decode inside a decode) makes its own.
final class SQLRowDecoding: @unchecked Sendable {   // `context` is read and written only by the decode that set `busy`
    /// The plans of the key types after the first (see ``SQLColumns/keyPlan(for:)``).
    let keyPlans = Mutex<[ObjectIdentifier: SQLColumnKeyPlan]>([:])
    /// The plan of the first key type decoded (read without a lock).
    let firstKeyPlan = AtomicLazyReference<SQLColumnKeyPlan>()
    /// True while a decode uses ``context``.
    private let busy = Atomic<Bool>(false)
    /// The reused context (nil before the first decode, and after one whose decoder or container
    /// was kept by `init(from:)`: that one is left to its holder).
    @exclusivity(unchecked) private var context: SQLRowDecoderContext?

    init() {}

    /// `T(from:)` over `row` with the reused context when no other decode holds it, else with a
    /// context of its own. A context whose decoder or container outlives the call keeps `row`.
    /// - Throws: what `T(from:)` throws.
    @inline(__always)
    func decode<T: Decodable>(_ type: T.Type, row: SQLRow) throws -> T {
        guard !busy.exchange(true, ordering: .acquiring) else { return try decodeAlone(type, row: row) }
        if context == nil { context = SQLRowDecoderContext(row: row) }
        // Owned by `self` for the call (nothing else may replace it while `busy`): not retained here.
        let c = Unmanaged.passUnretained(context.unsafelyUnwrapped)
        c._withUnsafeGuaranteedRef { $0.slot.borrow(row) }
        defer {
            if !isKnownUniquelyReferenced(&context) || !c._withUnsafeGuaranteedRef({ $0.hasNoOtherReference() }) {
                c._withUnsafeGuaranteedRef { $0.slot.own() }   // something kept the decoder or its container: it keeps this row
                context = nil
            }
            busy.store(false, ordering: .releasing)
        }
        return try T(from: c.takeUnretainedValue())
    }

    /// ``decode(_:row:)`` with a context of its own (the shared one is in use).
    @inline(never)
    private func decodeAlone<T: Decodable>(_ type: T.Type, row: SQLRow) throws -> T {
        var c = SQLRowDecoderContext(row: row)
        defer {
            if !isKnownUniquelyReferenced(&c) || !c.hasNoOtherReference() { c.slot.own() }
        }
        return try T(from: c)
    }
}

/// The row a decoder reads: its storage and index. While a ``SQLRow/decode(_:)`` call runs, the
/// storage is not retained (the call's row holds it); a slot that may outlive the call (a
/// container or decoder kept by the type's `init(from:)`, or one made for a second key type)
/// holds it in ``owner``.
final class SQLRowSlot {
    @exclusivity(unchecked) private(set) var storage: Unmanaged<SQLRowStorage>
    @exclusivity(unchecked) private(set) var index: Int
    /// Values in the row.
    @exclusivity(unchecked) private(set) var width: Int
    /// The storage, retained, when the slot must keep the row alive itself.
    @exclusivity(unchecked) private var owner: SQLRowStorage?
    /// The key plan of the one keyed container reading this slot (set when it is made).
    @exclusivity(unchecked) var plan: SQLColumnKeyPlan? {
        didSet { columnOfValue = plan?.columnOfValue }
    }
    /// ``plan``'s ``SQLColumnKeyPlan/columnOfValue`` (kept alive by ``plan``), read per field
    /// without retaining the plan.
    @exclusivity(unchecked) private(set) var columnOfValue: UnsafePointer<Int32>?

    /// A slot over `row`, keeping it alive, for a container with `plan`.
    init(owning row: SQLRow, plan: SQLColumnKeyPlan?) {
        storage = Unmanaged.passUnretained(row.storage)
        index = row.index
        width = row.storage.width
        owner = row.storage
        self.plan = plan
        columnOfValue = plan?.columnOfValue
    }

    /// A slot over `row` for the duration of a decode call (not retained).
    init(borrowing row: SQLRow) {
        storage = Unmanaged.passUnretained(row.storage)
        index = row.index
        width = row.storage.width
    }

    /// Points the slot at `row` (not retained: the caller keeps `row` alive while it is read).
    @inline(__always)
    func borrow(_ row: SQLRow) {
        storage = Unmanaged.passUnretained(row.storage)
        index = row.index
        width = row.storage.width
    }

    /// Keeps the current row alive for as long as the slot lives.
    func own() { owner = storage.takeUnretainedValue() }

    /// The value of `column` (< ``width``).
    @inline(__always)
    func value(_ column: Int) -> SQLValue {
        storage._withUnsafeGuaranteedRef { $0.value(row: index, column: column) }
    }

    /// A typed read of the row's value (``SQLRowStorage/typed(row:_:)``): `read(block, row)`.
    @inline(__always)
    func typed<R>(_ read: (borrowing WireRowBlock, Int) -> WireTypedValue<R>) -> WireTypedValue<R> {
        storage._withUnsafeGuaranteedRef { $0.typed(row: index, read) }
    }

    /// Whether the value of `column` (< ``width``) is NULL, without decoding it.
    @inline(__always)
    func isNull(_ column: Int) -> Bool {
        storage._withUnsafeGuaranteedRef { $0.isNull(row: index, column: column) }
    }

    /// The row's columns.
    var columns: SQLColumns { storage._withUnsafeGuaranteedRef { $0.columns } }

    /// The row (retained: for what may keep it).
    var row: SQLRow { SQLRow(storage: storage.takeUnretainedValue(), index: index) }
}

/// The decoder ``SQLRow/decode(_:)`` hands to `T(init:)`: reused for every row of a result set
/// (``SQLRowDecoding``), it keeps the keyed container of the first key type asked for, so that
/// `container(keyedBy:)` for the next rows is one identity compare and returns the same
/// container (the row being in the shared ``SQLRowSlot``): no allocation, no generic metadata
/// or witness table looked up per row.
///
/// After each row, the context is reused only if nothing the decode handed out is still
/// referenced (the decoder itself, the container); otherwise its slot keeps that row alive and
/// the context is left to whoever holds it, so a kept container keeps reading its own row.
final class SQLRowDecoderContext: Decoder {
    let slot: SQLRowSlot
    /// The key type of ``box``, nil until a keyed container is asked for.
    @exclusivity(unchecked) private var boxKey: ObjectIdentifier?
    /// The `KeyedDecodingContainer<Key>` of ``boxKey`` over ``slot`` (its one reference: the
    /// standard library's box), or nil.
    @exclusivity(unchecked) private var box: AnyObject?
    /// Returns ``box`` as the `KeyedDecodingContainer<Key>` it is (see ``container(keyedBy:)``):
    /// the ``Unboxing`` of `KeyedDecodingContainer<boxKey>`, kept as an `AnyObject`.
    @exclusivity(unchecked) private var unboxing: AnyObject?

    /// Returns a container's box as the container `C` it is. Made once: its method finds `C`'s
    /// metadata in its own class's (an instance's), so calling it looks nothing up.
    private final class Unboxing<C> {
        /// Not inlined: inlined into a caller generic over `Key`, it would look up `C` there.
        @inline(never)
        func unbox(_ box: AnyObject) -> C { unsafeBitCast(box, to: C.self) }
    }

    init(row: SQLRow) { slot = SQLRowSlot(borrowing: row) }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Whether a `KeyedDecodingContainer<Key>` is one object reference (the standard library's
    /// layout: one box), so that it can be kept as ``box``.
    @inline(__always)
    private static func fitsBox<Key: CodingKey>(_ type: Key.Type) -> Bool {
        MemoryLayout<KeyedDecodingContainer<Key>>.size == MemoryLayout<AnyObject>.size
            && MemoryLayout<KeyedDecodingContainer<Key>>.alignment == MemoryLayout<AnyObject>.alignment
            && !_isPOD(KeyedDecodingContainer<Key>.self)
    }

    /// The keyed container of `Key`. For the first key type, the same container row after row:
    /// its box is kept, and returned through ``unbox`` (made once), because handing out a
    /// `KeyedDecodingContainer<Key>` (resilient, of an unspecialized `Key`) any other way looks up
    /// its generic metadata, a quarter of a one-column row's decode.
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if boxKey == ObjectIdentifier(type), let b = box.map(Unmanaged.passUnretained), let u = unboxing.map(Unmanaged.passUnretained) {
            // Both kept by `self` for the call (not retained here); `u` was made for this key
            // type: an `Unboxing<KeyedDecodingContainer<Key>>`.
            return u._withUnsafeGuaranteedRef { u in
                b._withUnsafeGuaranteedRef { unsafeDowncast(u, to: Unboxing<KeyedDecodingContainer<Key>>.self).unbox($0) }
            }
        }
        let plan = slot.columns.keyPlan(for: type)
        if boxKey == nil && Self.fitsBox(type) {
            slot.plan = plan
            let container = KeyedDecodingContainer(SQLRowDecoder.KeyedContainer<Key>(slot: slot))
            box = unsafeBitCast(container, to: AnyObject.self)
            unboxing = Unboxing<KeyedDecodingContainer<Key>>()
            boxKey = ObjectIdentifier(type)
            return container
        }
        // A second key type (or a layout the box cannot hold): a container of its own that keeps the row.
        return KeyedDecodingContainer(SQLRowDecoder.KeyedContainer<Key>(slot: SQLRowSlot(owning: slot.row, plan: plan)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        SQLRowDecoder.UnkeyedContainer(row: slot.row)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try SQLRowDecoder(row: slot.row).singleValueContainer()
    }

    /// Whether the context's container (if any) is referenced by the context alone: after a
    /// decode, false when `init(from:)` kept it.
    @inline(__always)
    func hasNoOtherReference() -> Bool {
        box == nil || isKnownUniquelyReferenced(&box)
    }
}

/// A `Decoder` over one ``SQLRow``: a keyed container whose keys are column names.
///
/// ``SQLRow/decode(_:)`` decodes with a ``SQLRowDecoderContext`` reused per result set; this
/// decoder (the row held strongly) is what `superDecoder()` returns. Either way the column of
/// each coding key is resolved once per result set and key type (``SQLColumnKeyPlan``, kept by
/// the result's ``SQLColumns``), every fixed-width and string type has its own `decode` (no
/// generic path, no dynamic cast, no boxing per value), and a value is read straight from the
/// row's block (decoded there, once).
struct SQLRowDecoder: Decoder {
    let row: SQLRow
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// ``SQLRow/decode(_:)``: `T(from:)` with the result's reused context (or a new one),
    /// kept for the next row when nothing holds on to it (``SQLRowDecoding/decode(_:row:)``).
    /// - Throws: ``SQLClientError`` `.decodingFailed`, other errors of `T(from:)` wrapped in one.
    static func decode<T: Decodable>(_ type: T.Type, row: SQLRow) throws -> T {
        do {
            // `row` holds its storage for the call, the storage its columns, the columns their decoding.
            return try Unmanaged.passUnretained(row.storage.columns.decoding)._withUnsafeGuaranteedRef { try $0.decode(type, row: row) }
        } catch let error as SQLClientError {
            throw error
        } catch {
            throw SQLClientError(.decodingFailed, "cannot decode \(T.self) from the row: \(error)")
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedContainer<Key>(slot: SQLRowSlot(owning: row, plan: row.columns.keyPlan(for: Key.self))))
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

    /// The columns of a row by coding key. It reads the row in its ``SQLRowSlot`` (shared with a
    /// reused ``SQLRowDecoderContext``) and converts each value where it reads it: no per-field
    /// copy of the row or of the value into a container.
    ///
    /// One reference (the slot, which holds the key plan): the standard library's box copies the
    /// container for every call it forwards, so each field costs one retain, not one per property.
    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let slot: SQLRowSlot
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { slot.columns.compactMap { Key(stringValue: $0.name) } }

        /// The column of `key`: from the plan (by the key's value when the plan can, else by the
        /// identity of its name: no string hashing), else by name (exact, then case-insensitive);
        /// nil when the row has no such column.
        @inline(__always)
        private func column(_ key: Key) -> Int? {
            if let table = slot.columnOfValue {
                let i = Int(table[SQLColumnKeyPlan.valueBits(of: key) & 0xFF])
                if i >= 0 { return i < slot.width ? i : nil }
            }
            return columnOutsideTable(key)
        }

        /// ``column(_:)`` for a key the plan's value table does not hold.
        private func columnOutsideTable(_ key: Key) -> Int? {
            if let plan = slot.plan, let i = plan.column(of: key.stringValue) { return i < slot.width ? i : nil }
            return columnByName(key)
        }

        private func columnByName(_ key: Key) -> Int? {
            guard let i = slot.columns.index(of: key.stringValue), i < slot.width else { return nil }
            return i
        }

        @inline(never)
        private func noColumn(_ key: Key) -> SQLClientError {
            SQLClientError(.decodingFailed, "the row has no column named \"\(key.stringValue)\"")
        }

        @inline(never)
        private func failure(_ value: SQLValue, _ index: Int, _ what: String) -> SQLClientError {
            SQLValueConversion.failure(value, columns: slot.columns, index: index, what)
        }

        /// The value of column `i` converted by `convert` (the ``SQLValue`` path); throws when it
        /// does not convert (NULL included).
        @inline(__always)
        private func converted<R>(_ i: Int, _ what: @autoclosure () -> String, _ convert: (SQLValue) -> R?) throws -> R {
            let value = slot.value(i)
            if let r = convert(value) { return r }
            throw failure(value, i, what())
        }

        /// As ``converted(_:_:_:)``, nil when the value is NULL.
        @inline(__always)
        private func convertedIfPresent<R>(_ i: Int, _ what: @autoclosure () -> String, _ convert: (SQLValue) -> R?) throws -> R? {
            let value = slot.value(i)
            if value.isNull { return nil }
            if let r = convert(value) { return r }
            throw failure(value, i, what())
        }

        /// The value of `key`: the typed read `fast` of the block (``WireRowBlock/integer(row:column:)``
        /// and the others) when it gives a value `exact` takes, else the ``SQLValue`` converted by
        /// `convert`, whose result (or failure: NULL, a value out of range, no conversion) is the
        /// answer. A typed read gives exactly the value the ``SQLValue`` holds, so both ways agree.
        @inline(__always)
        private func read<W, R>(_ key: Key, _ what: @autoclosure () -> String,
                                _ fast: (borrowing WireRowBlock, Int, Int) -> WireTypedValue<W>, _ exact: (W) -> R?,
                                _ convert: (SQLValue) -> R?) throws -> R {
            guard let i = column(key) else { throw noColumn(key) }
            if case .value(let w) = slot.typed({ fast($0, $1, i) }), let r = exact(w) { return r }
            return try converted(i, what(), convert)
        }

        /// As ``read(_:_:_:_:_:)``, nil when there is no such column or its value is NULL (one
        /// typed read: a NULL is seen there, without decoding anything).
        @inline(__always)
        private func readIfPresent<W, R>(_ key: Key, _ what: @autoclosure () -> String,
                                         _ fast: (borrowing WireRowBlock, Int, Int) -> WireTypedValue<W>, _ exact: (W) -> R?,
                                         _ convert: (SQLValue) -> R?) throws -> R? {
            guard let i = column(key) else { return nil }
            switch slot.typed({ fast($0, $1, i) }) {
            case .value(let w): if let r = exact(w) { return r }
            case .null: return nil
            case .other: break
            }
            return try convertedIfPresent(i, what(), convert)
        }

        /// Integers: a tinyint, smallint, int or bigint read as `Int64` and narrowed exactly.
        @inline(__always)
        private func integer<I: FixedWidthInteger>(_ key: Key, _ type: I.Type, _ what: @autoclosure () -> String) throws -> I {
            try read(key, what(), { $0.integer(row: $1, column: $2) }, { I(exactly: $0) }, { C.integer($0, type) })
        }

        @inline(__always)
        private func integerIfPresent<I: FixedWidthInteger>(_ key: Key, _ type: I.Type, _ what: @autoclosure () -> String) throws -> I? {
            try readIfPresent(key, what(), { $0.integer(row: $1, column: $2) }, { I(exactly: $0) }, { C.integer($0, type) })
        }

        /// `T` of the types with a typed read (Decimal, Date, UUID, Data, [UInt8]) read straight
        /// from the block; any other type (or another SQL type) through the ``SQLValue``.
        @inline(__always)
        private func readValue<T: Decodable>(_ key: Key, _ type: T.Type, ifPresent: Bool) throws -> T? {
            guard let i = column(key) else {
                if ifPresent { return nil }
                throw noColumn(key)
            }
            // Whether the typed read answers (a value, or NULL when `ifPresent`), and the value.
            // (No `T??`: an optional of an optional of an unspecialized `T` costs a metadata lookup.)
            @inline(__always) func typed<W>(_ read: (borrowing WireRowBlock, Int, Int) -> WireTypedValue<W>) -> (answered: Bool, value: W?) {
                switch slot.typed({ read($0, $1, i) }) {
                case .value(let v): return (true, v)
                case .null: return (ifPresent, nil)
                case .other: return (false, nil)
                }
            }
            if T.self == Decimal.self {
                let r = typed { $0.decimal(row: $1, column: $2) }
                if r.answered { if let v = r.value { return unsafeBitCast(v, to: T.self) }; return nil }   // W is T
            } else if T.self == Date.self {
                let r = typed { $0.utcDate(row: $1, column: $2) }
                if r.answered { if let v = r.value { return unsafeBitCast(v, to: T.self) }; return nil }
            } else if T.self == UUID.self {
                let r = typed { $0.uuid(row: $1, column: $2) }
                if r.answered { if let v = r.value { return unsafeBitCast(v, to: T.self) }; return nil }
            } else if T.self == Data.self {
                let r = typed { $0.data(row: $1, column: $2) }
                if r.answered { if let v = r.value { return unsafeBitCast(v, to: T.self) }; return nil }
            } else if T.self == [UInt8].self {
                let r = typed { $0.bytes(row: $1, column: $2) }
                if r.answered { if let v = r.value { return unsafeBitCast(v, to: T.self) }; return nil }
            }
            let value = slot.value(i)
            if ifPresent && value.isNull { return nil }
            return try SQLValueConversion.decode(value, as: type, failure: { failure(value, i, $0) },
                                                 nested: { ValueContainer(value: value, row: slot.row, index: i) })
        }

        func contains(_ key: Key) -> Bool { column(key) != nil }

        func decodeNil(forKey key: Key) throws -> Bool {
            guard let i = column(key) else { throw noColumn(key) }
            return slot.isNull(i)
        }

        typealias C = SQLValueConversion
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            try read(key, "Bool", { $0.bit(row: $1, column: $2) }, { $0 }, C.bool)
        }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            try read(key, "String", { $0.string(row: $1, column: $2) }, { $0 }, C.string)
        }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            try read(key, "Double", { $0.double(row: $1, column: $2) }, { $0 }, C.double)
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
            try read(key, "Float", { $0.real(row: $1, column: $2) }, { $0 }, C.float)
        }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key, type, "Int") }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key, type, "Int8") }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key, type, "Int16") }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key, type, "Int32") }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key, type, "Int64") }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key, type, "UInt") }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key, type, "UInt8") }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key, type, "UInt16") }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key, type, "UInt32") }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key, type, "UInt64") }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            // Never nil: not ifPresent.
            guard let v = try readValue(key, type, ifPresent: false) else { throw noColumn(key) }
            return v
        }

        // One lookup and one read each (the protocol's defaults ask `contains`, then `decodeNil`, then `decode`).
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            try readIfPresent(key, "Bool", { $0.bit(row: $1, column: $2) }, { $0 }, C.bool)
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            try readIfPresent(key, "String", { $0.string(row: $1, column: $2) }, { $0 }, C.string)
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            try readIfPresent(key, "Double", { $0.double(row: $1, column: $2) }, { $0 }, C.double)
        }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
            try readIfPresent(key, "Float", { $0.real(row: $1, column: $2) }, { $0 }, C.float)
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try integerIfPresent(key, type, "Int") }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(key, type, "Int8") }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(key, type, "Int16") }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(key, type, "Int32") }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(key, type, "Int64") }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(key, type, "UInt") }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(key, type, "UInt8") }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(key, type, "UInt16") }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(key, type, "UInt32") }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(key, type, "UInt64") }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            try readValue(key, type, ifPresent: true)
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey> {
            throw SQLClientError(.decodingFailed, "column \"\(key.stringValue)\" cannot hold a nested object")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw SQLClientError(.decodingFailed, "column \"\(key.stringValue)\" cannot hold an array")
        }
        func superDecoder() throws -> any Decoder { SQLRowDecoder(row: slot.row) }
        func superDecoder(forKey key: Key) throws -> any Decoder { SQLRowDecoder(row: slot.row) }
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

    /// One cell. Conversions are exact or fail (``SQLValueConversion``).
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
            SQLValueConversion.failure(value, columns: row.columns, index: index, what)
        }

        @inline(__always)
        private func convert<R>(_ what: @autoclosure () -> String, _ convert: (SQLValue) -> R?) throws -> R {
            if let r = convert(value) { return r }
            throw failure(what())
        }

        typealias C = SQLValueConversion
        func decode(_ type: Bool.Type) throws -> Bool { try convert("Bool", C.bool) }
        func decode(_ type: String.Type) throws -> String { try convert("String", C.string) }
        func decode(_ type: Double.Type) throws -> Double { try convert("Double", C.double) }
        func decode(_ type: Float.Type) throws -> Float { try convert("Float", C.float) }
        func decode(_ type: Int.Type) throws -> Int { try convert("Int") { C.integer($0, type) } }
        func decode(_ type: Int8.Type) throws -> Int8 { try convert("Int8") { C.integer($0, type) } }
        func decode(_ type: Int16.Type) throws -> Int16 { try convert("Int16") { C.integer($0, type) } }
        func decode(_ type: Int32.Type) throws -> Int32 { try convert("Int32") { C.integer($0, type) } }
        func decode(_ type: Int64.Type) throws -> Int64 { try convert("Int64") { C.integer($0, type) } }
        func decode(_ type: UInt.Type) throws -> UInt { try convert("UInt") { C.integer($0, type) } }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try convert("UInt8") { C.integer($0, type) } }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try convert("UInt16") { C.integer($0, type) } }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try convert("UInt32") { C.integer($0, type) } }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try convert("UInt64") { C.integer($0, type) } }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try SQLValueConversion.decode(value, as: type, failure: { failure($0) }, nested: { self })
        }
    }
}

/// The conversions of a value to the Swift types a `Decodable` asks for: exact or nil (an
/// integer that does not fit, text that is not a number, a fractional decimal asked for as an
/// integer), the caller throwing `.decodingFailed` (``failure(_:columns:index:_:)``).
enum SQLValueConversion {
    /// `.decodingFailed`: `column "name" (index i): cannot convert value v to Type`.
    static func failure(_ value: SQLValue, columns: SQLColumns, index: Int, _ what: String) -> SQLClientError {
        let kind: String
        if value.isNull { kind = "NULL" } else { kind = "\(value)".count > 40 ? "a value" : "value \(value)" }
        let column = index < columns.count ? columns[index].name : ""
        return SQLClientError(.decodingFailed, "column \"\(column)\" (index \(index)): cannot convert \(kind) to \(what)")
    }

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

    /// `value` as `T`, which the caller has checked to be `U` (no dynamic cast, no box).
    @inline(__always)
    private static func exactly<U, T>(_ value: U, as type: T.Type) -> T {
        unsafeBitCast(value, to: T.self)   // U is T: a plain copy, no generic closure
    }

    /// `value` as `T`: Decimal, Date, UUID, Data, [UInt8], [Float] and SQLVector converted here, any other type
    /// decoded by its `init(from:)` from the single-value decoder `nested()` (NULL fails).
    @inline(__always)
    static func decode<T: Decodable, D: Decoder>(_ value: SQLValue, as type: T.Type,
                                                failure: (String) -> SQLClientError, nested: () -> D) throws -> T {
        if T.self == Decimal.self {
            switch value {
            case .decimal(let d): return exactly(d.decimalValue, as: T.self)
            case .money(let m), .smallMoney(let m): return exactly(m.decimalValue, as: T.self)
            default:
                if let d = value.decimalValue { return exactly(d, as: T.self) }
                throw failure("Decimal")
            }
        }
        if T.self == Date.self {
            if let d = value.utcDateValue { return exactly(d, as: T.self) }
            throw failure("Date")
        }
        if T.self == UUID.self {
            if case .uniqueIdentifier(let u) = value { return exactly(u, as: T.self) }
            if let u = value.uuidValue { return exactly(u, as: T.self) }
            if case .string(let s) = value.baseValue, let u = UUID(uuidString: s) { return exactly(u, as: T.self) }
            throw failure("UUID")
        }
        if T.self == Data.self {
            if let d = value.dataValue { return exactly(d, as: T.self) }
            throw failure("Data")
        }
        if T.self == [UInt8].self {
            if case .binary(let b) = value { return exactly(b, as: T.self) }
            if let b = value.bytesValue { return exactly(b, as: T.self) }
            throw failure("[UInt8]")
        }
        if T.self == [Float].self || T.self == SQLVector.self {   // vector, or a JSON array as text (json, varchar)
            guard let v = value.vectorValue else { throw failure("\(T.self)") }
            return T.self == SQLVector.self ? exactly(v, as: T.self) : exactly(v.values, as: T.self)
        }
        if value.isNull { throw failure("\(T.self)") }
        return try T(from: nested())
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
final class SQLColumnKeyPlan: @unchecked Sendable {   // immutable after init
    static let utc = TimeZone(secondsFromGMT: 0) ?? .current

    /// The key type the plan was made for.
    let keyType: ObjectIdentifier
    /// Whether ``column(ofValue:)`` applies: the key type is trivial and at most one byte.
    let keysByValue: Bool
    /// ``keysByValue``: per key value (its byte), the column of that key, -1 for none (256
    /// entries, owned by the plan; nil when not ``keysByValue``).
    let columnOfValue: UnsafePointer<Int32>?

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
        MemoryLayout<Key>.size == 1 ? Int(unsafeBitCast(key, to: UInt8.self)) : 0
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
        if byValue {
            let table = UnsafeMutablePointer<Int32>.allocate(capacity: 256)
            table.initialize(from: columnOfValue, count: 256)
            self.columnOfValue = UnsafePointer(table)
        } else {
            self.columnOfValue = nil
        }
    }

    deinit { columnOfValue?.deallocate() }

    /// The column of the key whose value's byte is `bits` (``keysByValue``), nil when no column
    /// is exactly that key's name.
    @inline(__always)
    func column(ofValue bits: Int) -> Int? {
        guard let columnOfValue else { return nil }
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
        if let plan = decoding.firstKeyPlan.load(), plan.keyType == id { return plan }
        if let plan = decoding.keyPlans.withLock({ $0[id] }) { return plan }
        let plan = SQLColumnKeyPlan(type, columns: self)
        if decoding.firstKeyPlan.storeIfNil(plan) === plan { return plan }
        decoding.keyPlans.withLock { plans in
            if plans.count < 16 { plans[id] = plan }
        }
        return plan
    }
}

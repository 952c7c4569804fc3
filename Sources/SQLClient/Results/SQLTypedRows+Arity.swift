import TDS

// The fixed-arity forms of typed decoding (PostgresNIO's `PostgresRow.decode` shape): one
// overload per tuple width, 2 to 20 on `SQLRow` and 1 to 20 on `SQLRowSequence`. Each is
// `@inlinable` and generic over plain type parameters, so the caller's module specializes it
// for its Swift types: every cell becomes a direct call of its type's read (no generic metadata
// or witness table looked up per cell, which the parameter pack costs: Swift 6.3 does not
// specialize a pack across modules). The type checker prefers them to the parameter-pack
// `decode((repeat each T).self)`, which stays for wider tuples. All of them read each cell with
// the one per-cell function, `SQLRow.decodeCell` (`SQLCellDecodable.decode(sqlCell:)`).
// Generated (one line shape per width): change the shape in all widths at once.

extension SQLRow {
    /// The row's first 2 values as `(A, B)`: `SQLRow.decode((A, B).self)` for 2 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 2 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable>(_ types: (A, B).Type) throws -> (A, B) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column))
    }

    /// The row's first 3 values as `(A, B, C)`: `SQLRow.decode((A, B).self)` for 3 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 3 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable>(_ types: (A, B, C).Type) throws -> (A, B, C) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column))
    }

    /// The row's first 4 values as `(A, B, C, D)`: `SQLRow.decode((A, B).self)` for 4 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 4 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable>(_ types: (A, B, C, D).Type) throws -> (A, B, C, D) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column))
    }

    /// The row's first 5 values as `(A, B, C, D, E)`: `SQLRow.decode((A, B).self)` for 5 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 5 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable>(_ types: (A, B, C, D, E).Type) throws -> (A, B, C, D, E) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column))
    }

    /// The row's first 6 values as `(A, B, C, D, E, F)`: `SQLRow.decode((A, B).self)` for 6 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 6 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable>(_ types: (A, B, C, D, E, F).Type) throws -> (A, B, C, D, E, F) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column))
    }

    /// The row's first 7 values as `(A, B, C, D, E, F, G)`: `SQLRow.decode((A, B).self)` for 7 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 7 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G).Type) throws -> (A, B, C, D, E, F, G) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column))
    }

    /// The row's first 8 values as `(A, B, C, D, E, F, G, H)`: `SQLRow.decode((A, B).self)` for 8 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 8 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H).Type) throws -> (A, B, C, D, E, F, G, H) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column))
    }

    /// The row's first 9 values as `(A, B, C, D, E, F, G, H, I)`: `SQLRow.decode((A, B).self)` for 9 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 9 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I).Type) throws -> (A, B, C, D, E, F, G, H, I) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column))
    }

    /// The row's first 10 values as `(A, B, C, D, E, F, G, H, I, J)`: `SQLRow.decode((A, B).self)` for 10 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 10 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J).Type) throws -> (A, B, C, D, E, F, G, H, I, J) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column))
    }

    /// The row's first 11 values as `(A, B, C, D, E, F, G, H, I, J, K)`: `SQLRow.decode((A, B).self)` for 11 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 11 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column))
    }

    /// The row's first 12 values as `(A, B, C, D, E, F, G, H, I, J, K, L)`: `SQLRow.decode((A, B).self)` for 12 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 12 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column))
    }

    /// The row's first 13 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M)`: `SQLRow.decode((A, B).self)` for 13 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 13 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column))
    }

    /// The row's first 14 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N)`: `SQLRow.decode((A, B).self)` for 14 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 14 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M, N) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column),
                try SQLRow.decodeCell(N.self, storage, index, &column))
    }

    /// The row's first 15 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O)`: `SQLRow.decode((A, B).self)` for 15 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 15 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column),
                try SQLRow.decodeCell(N.self, storage, index, &column),
                try SQLRow.decodeCell(O.self, storage, index, &column))
    }

    /// The row's first 16 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P)`: `SQLRow.decode((A, B).self)` for 16 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 16 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column),
                try SQLRow.decodeCell(N.self, storage, index, &column),
                try SQLRow.decodeCell(O.self, storage, index, &column),
                try SQLRow.decodeCell(P.self, storage, index, &column))
    }

    /// The row's first 17 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q)`: `SQLRow.decode((A, B).self)` for 17 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 17 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column),
                try SQLRow.decodeCell(N.self, storage, index, &column),
                try SQLRow.decodeCell(O.self, storage, index, &column),
                try SQLRow.decodeCell(P.self, storage, index, &column),
                try SQLRow.decodeCell(Q.self, storage, index, &column))
    }

    /// The row's first 18 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R)`: `SQLRow.decode((A, B).self)` for 18 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 18 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable, R: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column),
                try SQLRow.decodeCell(N.self, storage, index, &column),
                try SQLRow.decodeCell(O.self, storage, index, &column),
                try SQLRow.decodeCell(P.self, storage, index, &column),
                try SQLRow.decodeCell(Q.self, storage, index, &column),
                try SQLRow.decodeCell(R.self, storage, index, &column))
    }

    /// The row's first 19 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S)`: `SQLRow.decode((A, B).self)` for 19 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 19 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable, R: SQLCellDecodable, S: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column),
                try SQLRow.decodeCell(N.self, storage, index, &column),
                try SQLRow.decodeCell(O.self, storage, index, &column),
                try SQLRow.decodeCell(P.self, storage, index, &column),
                try SQLRow.decodeCell(Q.self, storage, index, &column),
                try SQLRow.decodeCell(R.self, storage, index, &column),
                try SQLRow.decodeCell(S.self, storage, index, &column))
    }

    /// The row's first 20 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T)`: `SQLRow.decode((A, B).self)` for 20 columns,
    /// specialized in the caller (see the file's header).
    /// - Parameter types: a tuple of 20 ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable, R: SQLCellDecodable, S: SQLCellDecodable, T: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T).Type) throws -> (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T) {
        var column = 0
        return (try SQLRow.decodeCell(A.self, storage, index, &column),
                try SQLRow.decodeCell(B.self, storage, index, &column),
                try SQLRow.decodeCell(C.self, storage, index, &column),
                try SQLRow.decodeCell(D.self, storage, index, &column),
                try SQLRow.decodeCell(E.self, storage, index, &column),
                try SQLRow.decodeCell(F.self, storage, index, &column),
                try SQLRow.decodeCell(G.self, storage, index, &column),
                try SQLRow.decodeCell(H.self, storage, index, &column),
                try SQLRow.decodeCell(I.self, storage, index, &column),
                try SQLRow.decodeCell(J.self, storage, index, &column),
                try SQLRow.decodeCell(K.self, storage, index, &column),
                try SQLRow.decodeCell(L.self, storage, index, &column),
                try SQLRow.decodeCell(M.self, storage, index, &column),
                try SQLRow.decodeCell(N.self, storage, index, &column),
                try SQLRow.decodeCell(O.self, storage, index, &column),
                try SQLRow.decodeCell(P.self, storage, index, &column),
                try SQLRow.decodeCell(Q.self, storage, index, &column),
                try SQLRow.decodeCell(R.self, storage, index, &column),
                try SQLRow.decodeCell(S.self, storage, index, &column),
                try SQLRow.decodeCell(T.self, storage, index, &column))
    }
}

extension SQLRowSequence {
    /// Each row as its first value as `A`: `decode((A, B).self)` for one column, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: an ``SQLCellDecodable`` type (an `Optional` for a column that may be NULL).
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable>(_ types: A.Type) -> SQLTypedRowSequence<A> {
        SQLTypedRowSequence(rows: self) {
            var column = 0
            return try SQLRow.decodeCell(A.self, $0.storage, $0.index, &column)
        }
    }

    /// Each row as its first 2 values as `(A, B)`: `decode((A, B).self)` for 2 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 2 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable>(_ types: (A, B).Type) -> SQLTypedRowSequence<(A, B)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B).self)
        }
    }

    /// Each row as its first 3 values as `(A, B, C)`: `decode((A, B).self)` for 3 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 3 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable>(_ types: (A, B, C).Type) -> SQLTypedRowSequence<(A, B, C)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C).self)
        }
    }

    /// Each row as its first 4 values as `(A, B, C, D)`: `decode((A, B).self)` for 4 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 4 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable>(_ types: (A, B, C, D).Type) -> SQLTypedRowSequence<(A, B, C, D)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D).self)
        }
    }

    /// Each row as its first 5 values as `(A, B, C, D, E)`: `decode((A, B).self)` for 5 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 5 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable>(_ types: (A, B, C, D, E).Type) -> SQLTypedRowSequence<(A, B, C, D, E)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E).self)
        }
    }

    /// Each row as its first 6 values as `(A, B, C, D, E, F)`: `decode((A, B).self)` for 6 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 6 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable>(_ types: (A, B, C, D, E, F).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F).self)
        }
    }

    /// Each row as its first 7 values as `(A, B, C, D, E, F, G)`: `decode((A, B).self)` for 7 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 7 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G).self)
        }
    }

    /// Each row as its first 8 values as `(A, B, C, D, E, F, G, H)`: `decode((A, B).self)` for 8 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 8 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H).self)
        }
    }

    /// Each row as its first 9 values as `(A, B, C, D, E, F, G, H, I)`: `decode((A, B).self)` for 9 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 9 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I).self)
        }
    }

    /// Each row as its first 10 values as `(A, B, C, D, E, F, G, H, I, J)`: `decode((A, B).self)` for 10 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 10 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J).self)
        }
    }

    /// Each row as its first 11 values as `(A, B, C, D, E, F, G, H, I, J, K)`: `decode((A, B).self)` for 11 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 11 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K).self)
        }
    }

    /// Each row as its first 12 values as `(A, B, C, D, E, F, G, H, I, J, K, L)`: `decode((A, B).self)` for 12 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 12 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L).self)
        }
    }

    /// Each row as its first 13 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M)`: `decode((A, B).self)` for 13 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 13 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M).self)
        }
    }

    /// Each row as its first 14 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N)`: `decode((A, B).self)` for 14 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 14 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M, N)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M, N).self)
        }
    }

    /// Each row as its first 15 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O)`: `decode((A, B).self)` for 15 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 15 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M, N, O).self)
        }
    }

    /// Each row as its first 16 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P)`: `decode((A, B).self)` for 16 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 16 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P).self)
        }
    }

    /// Each row as its first 17 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q)`: `decode((A, B).self)` for 17 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 17 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q).self)
        }
    }

    /// Each row as its first 18 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R)`: `decode((A, B).self)` for 18 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 18 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable, R: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R).self)
        }
    }

    /// Each row as its first 19 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S)`: `decode((A, B).self)` for 19 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 19 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable, R: SQLCellDecodable, S: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S).self)
        }
    }

    /// Each row as its first 20 values as `(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T)`: `decode((A, B).self)` for 20 columns, specialized
    /// in the caller (see the file's header).
    /// - Parameter types: a tuple of 20 ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (the column, its SQL type and the Swift type).
    @inlinable
    public func decode<A: SQLCellDecodable, B: SQLCellDecodable, C: SQLCellDecodable, D: SQLCellDecodable, E: SQLCellDecodable, F: SQLCellDecodable, G: SQLCellDecodable, H: SQLCellDecodable, I: SQLCellDecodable, J: SQLCellDecodable, K: SQLCellDecodable, L: SQLCellDecodable, M: SQLCellDecodable, N: SQLCellDecodable, O: SQLCellDecodable, P: SQLCellDecodable, Q: SQLCellDecodable, R: SQLCellDecodable, S: SQLCellDecodable, T: SQLCellDecodable>(_ types: (A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T).Type) -> SQLTypedRowSequence<(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T)> {
        SQLTypedRowSequence(rows: self) {
            try $0.decode((A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T).self)
        }
    }
}

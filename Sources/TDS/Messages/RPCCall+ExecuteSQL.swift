extension RPCCall {
    /// An `sp_executesql` call (ProcID 10, [MS-TDS] 2.2.6.6): the statement, the parameter
    /// declaration list built from each parameter's TYPE_INFO (`@P1 int, @P2 nvarchar(20)`), then
    /// the parameters.
    ///
    /// The statement and the declaration are NVARCHAR: `nvarchar(4000)` up to 4,000 UTF-16 code
    /// units, `nvarchar(max)` beyond. Parameters without a name are named `@P1`, `@P2`, … in
    /// order. Output parameters keep their fByRefValue status and are declared `output`;
    /// table-valued parameters are declared by their table type, `READONLY`.
    public static func executeSQL(_ statement: String, parameters: [RPCParameter] = [],
                                  collation: Collation = .sqlLatin1GeneralCP1CIAS) -> RPCCall {
        func text(_ s: String) -> RPCParameter {
            let info: TypeInfo = s.utf16.count <= 4000 ? .nvarchar(4000, collation: collation) : .nvarchar(nil, collation: collation)
            return RPCParameter(typeInfo: info, value: .string(s))
        }
        var named: [RPCParameter] = []
        for (i, p) in parameters.enumerated() {
            var p = p
            if p.name.isEmpty { p.name = "@P\(i + 1)" }
            named.append(p)
        }
        var all = [text(statement)]
        if !named.isEmpty {
            let declaration = named.map { p in
                if let t = p.table {   // a table-valued parameter: its table type, READONLY
                    let type = (t.schemaName.isEmpty ? [t.typeName] : [t.schemaName, t.typeName]).map(SQLIdentifier.quoted)
                    return "\(p.name) \(type.joined(separator: ".")) READONLY"
                }
                return "\(p.name) \(p.typeInfo.sqlTypeName)" + (p.status.contains(.byRefValue) ? " output" : "")
            }.joined(separator: ", ")
            all.append(text(declaration))
            all.append(contentsOf: named)
        }
        return RPCCall(procedure: .id(.spExecuteSQL), parameters: all)
    }
}

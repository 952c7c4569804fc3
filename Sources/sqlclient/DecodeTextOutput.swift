import TDSCapture

/// The human-readable form of a ``DecodeReport``: one block per message, tokens indented.
enum DecodeTextOutput {
    static func render(_ report: DecodeReport) -> String {
        var out = ""
        if !report.sessions.isEmpty && report.format != .hex && report.format != .raw {
            for s in report.sessions { out += "# \(s.name): TDS \(s.version)\n" }
        } else if let s = report.sessions.first {
            out += "# TDS \(s.version)\n"
        }
        for note in report.notes { out += "# note: \(note)\n" }
        var lastConversation: String?
        for r in report.records {
            if let c = r.conversation, c != lastConversation {
                out += "\n== \(c)\n"
                lastConversation = c
            }
            let arrow = r.direction == .client ? "C->S" : "S->C"
            var head = "\(arrow) \(r.type)"
            if let frame = r.frame { head += "  (frame \(frame), offset \(r.streamOffset))" }
            out += head + "\n"
            for (key, value) in r.fields {
                switch key {
                case "tokens":
                    for token in value.arrayValue ?? [] { out += "    " + tokenLine(token) + "\n" }
                case "parameters":
                    for p in value.arrayValue ?? [] {
                        let output = p["output"] == .bool(true) ? " OUTPUT" : ""
                        out += "    \(p["name"]?.stringValue ?? "") \(p["type"]?.stringValue ?? "") = \(text(p["value"] ?? .null))\(output)\n"
                    }
                case "sql":
                    out += "    " + (value.stringValue ?? "").split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).joined(separator: "\n    ") + "\n"
                default:
                    out += "    \(key): \(text(value))\n"
                }
            }
            if let f = r.failure { out += "    !! \(f)\n" }
        }
        return escapingControls(out)
    }

    /// `text` safe for a terminal: control characters (C0 but line feed and tab, DEL, C1) from
    /// the capture become `\r`, `\e` or `\u{XX}`, so an ESC sequence in a capture is shown, not run.
    static func escapingControls(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A, 0x09:
                out.append(scalar)
            case 0x0D:
                out.append(contentsOf: "\\r".unicodeScalars)
            case 0x1B:
                out.append(contentsOf: "\\e".unicodeScalars)
            case 0x00 ..< 0x20, 0x7F ... 0x9F:
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            default:
                out.append(scalar)
            }
        }
        return String(out)
    }

    static func tokenLine(_ token: JSONValue) -> String {
        guard case .object(let members) = token else { return token.serialized() }
        var s = members.first?.1.stringValue ?? "?"
        for (k, v) in members.dropFirst() {
            if k == "columns", let cols = v.arrayValue, cols.first?["type"] != nil {
                s += " " + cols.map { "\($0["name"]?.stringValue ?? "") \($0["type"]?.stringValue ?? "")\($0["nullable"] == .bool(true) ? " NULL" : "")" }
                    .joined(separator: ", ")
            } else if k == "values", let vals = v.arrayValue {
                s += " [" + vals.map { text($0, quoted: true) }.joined(separator: ", ") + "]"
            } else {
                s += " \(k)=\(text(v, quoted: true))"
            }
        }
        return s
    }

    static func text(_ v: JSONValue, quoted: Bool = false) -> String {
        switch v {
        case .null: return "NULL"
        case .string(let s): return quoted ? v.serialized() : s
        case .decimal(let digits), .number(let digits): return digits
        case .array(let items): return "[" + items.map { text($0, quoted: true) }.joined(separator: ", ") + "]"
        default: return v.serialized()
        }
    }
}

import Foundation

/// sqlcmd scripting variables: `-v name=value`, `:setvar name value`, then the environment.
/// `$(name)` in SQL text, in `GO $(n)` and in `:r $(file)` is replaced by the value.
struct ScriptVariables {
    private(set) var values: [String: String] = [:]
    var environment: [String: String] = [:]

    /// sqlcmd's rule: a letter or `_` first, then letters, digits, `_` or `-`.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.first, first.isLetter || first == "_" else { return false }
        return name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
    }

    /// A value as written after `=` or `:setvar name`: `"a ""quoted"" value"` loses its quotes
    /// (doubled quotes stand for one); anything else is taken as is.
    static func unquote(_ text: String) -> String {
        guard text.count >= 2, text.first == "\"", text.last == "\"" else { return text }
        return String(text.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
    }

    mutating func set(_ name: String, _ value: String) { values[name.uppercased()] = value }
    mutating func unset(_ name: String) { values[name.uppercased()] = nil }

    func value(_ name: String) -> String? {
        values[name.uppercased()] ?? environment[name] ?? environment.first { $0.key.uppercased() == name.uppercased() }?.value
    }

    struct Undefined: Error, CustomStringConvertible {
        let name: String
        var description: String { "'\(name)' scripting variable not defined" }
    }

    /// `text` with every `$(name)` replaced; a `$(` that does not close on a valid name is kept.
    /// - Throws: ``Undefined`` for a variable that has no value.
    func substitute(_ text: String) throws(Undefined) -> String {
        guard text.contains("$(") else { return text }
        var out = ""
        var rest = Substring(text)
        while let start = rest.range(of: "$(") {
            out += rest[..<start.lowerBound]
            let after = rest[start.upperBound...]
            if let close = after.firstIndex(of: ")"), Self.isValidName(String(after[..<close])) {
                let name = String(after[..<close])
                guard let v = value(name) else { throw Undefined(name: name) }
                out += v
                rest = after[after.index(after: close)...]
            } else {
                out += "$("
                rest = after
            }
        }
        return out + rest
    }
}

/// Where a line of SQL leaves the T-SQL lexer: inside a string ('…'), a quoted name ("…", […]),
/// a block comment (nested, as T-SQL allows) or nowhere. A sqlcmd command (GO, :setvar, …) is
/// only recognised on a line that starts outside all of them.
struct SQLLexState: Equatable {
    enum Quote: Equatable { case none, single, double, bracket }
    var quote = Quote.none
    var commentDepth = 0

    var isNeutral: Bool { quote == .none && commentDepth == 0 }

    mutating func scan(_ line: String) {
        let chars = Array(line.unicodeScalars)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            let next: Unicode.Scalar? = i + 1 < chars.count ? chars[i + 1] : nil
            if commentDepth > 0 {
                if c == "*", next == "/" { commentDepth -= 1; i += 2; continue }
                if c == "/", next == "*" { commentDepth += 1; i += 2; continue }
                i += 1
                continue
            }
            switch quote {
            case .single:
                if c == "'" { if next == "'" { i += 1 } else { quote = .none } }
            case .double:
                if c == "\"" { if next == "\"" { i += 1 } else { quote = .none } }
            case .bracket:
                if c == "]" { if next == "]" { i += 1 } else { quote = .none } }
            case .none:
                if c == "-", next == "-" { return }   // the rest of the line is a comment
                if c == "/", next == "*" { commentDepth = 1; i += 2; continue }
                if c == "'" { quote = .single } else if c == "\"" { quote = .double } else if c == "[" { quote = .bracket }
            }
            i += 1
        }
    }
}

/// A sqlcmd command line. Recognised case-insensitively at the start of a line (after blanks),
/// outside strings and comments; a trailing `-- comment` is ignored.
enum ScriptCommand: Equatable {
    /// `GO` or `GO n`: run the batch (n times).
    case go(count: String?)
    /// `:setvar name [value]` (no value: the variable is removed).
    case setvar(name: String, value: String?)
    /// `:r file`: read the file's lines here.
    case read(file: String)
    /// `:on error exit|ignore`.
    case onError(exit: Bool)
    /// `exit` (stop, the batch is not run), `exit()` (run it, then stop), `exit(query)` (run the
    /// batch and the query; the exit status is the query's first column).
    case exit(query: String?)
    /// `quit`: stop without running the batch.
    case quit
    /// `:reset`: forget the batch typed so far.
    case reset
    /// `:listvar`: print the variables set by -v and :setvar.
    case listVariables
    /// `:out file|STDOUT|STDERR`: where results go from now on.
    case out(target: String)
    /// `:error file|STDOUT|STDERR`: where messages and errors go from now on.
    case error(target: String)
    /// `:connect server [-l timeout] [-U user [-P password]]`: the arguments, as written.
    case connect(arguments: String)
    /// A line starting with ':' that names no command this client knows.
    case unknown(String)

    /// The command on `line`, or nil when it is SQL.
    static func parse(_ line: String) -> ScriptCommand? {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        guard let first = trimmed.first else { return nil }
        let words = trimmed.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
        let head = words.first.map { String($0).lowercased() } ?? ""
        let tail = words.count > 1 ? stripComment(String(words[1])).trimmingCharacters(in: .whitespaces) : ""
        if head == "go" || head.hasPrefix("go--") {
            if head != "go" { return .go(count: nil) }
            return .go(count: tail.isEmpty ? nil : tail)
        }
        let bare = head.hasPrefix(":") ? String(head.dropFirst()) : head
        if bare == "quit" { return tail.isEmpty ? .quit : nil }
        if bare == "exit" || bare.hasPrefix("exit(") {
            let all = (String(trimmed.dropFirst(head.hasPrefix(":") ? 5 : 4))).trimmingCharacters(in: .whitespaces)
            let spec = stripComment(all).trimmingCharacters(in: .whitespaces)
            if spec.isEmpty { return .exit(query: nil) }
            guard spec.hasPrefix("("), spec.hasSuffix(")") else { return head.hasPrefix(":") ? .unknown(String(trimmed)) : nil }
            let inner = spec.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
            return .exit(query: inner)
        }
        guard first == ":" else { return nil }
        switch bare {
        case "setvar":
            guard !tail.isEmpty else { return .unknown(String(trimmed)) }
            let parts = tail.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
            let value = parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : nil
            return .setvar(name: String(parts[0]), value: value)
        case "r":
            guard !tail.isEmpty else { return .unknown(String(trimmed)) }
            return .read(file: ScriptVariables.unquote(tail))
        case "on":
            let parts = tail.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2, parts[0] == "error", parts[1] == "exit" || parts[1] == "ignore" else {
                return .unknown(String(trimmed))
            }
            return .onError(exit: parts[1] == "exit")
        case "reset": return .reset
        case "listvar": return .listVariables
        case "out", "error":
            guard !tail.isEmpty else { return .unknown(String(trimmed)) }
            let target = ScriptVariables.unquote(tail)
            return bare == "out" ? .out(target: target) : .error(target: target)
        case "connect":
            guard !tail.isEmpty else { return .unknown(String(trimmed)) }
            return .connect(arguments: tail)
        default: return .unknown(String(trimmed))
        }
    }

    /// `text` without a `-- comment` that starts outside double quotes.
    static func stripComment(_ text: String) -> String {
        var quoted = false
        var previous: Character = " "
        var index = text.startIndex
        while index < text.endIndex {
            let c = text[index]
            let next = text.index(after: index)
            if c == "\"" { quoted.toggle() }
            if !quoted, c == "-", next < text.endIndex, text[next] == "-", previous == " " || previous == "\t" || index == text.startIndex {
                return String(text[..<index])
            }
            previous = c
            index = next
        }
        return text
    }

    /// The number in `GO n` (after variables are substituted).
    /// - Throws: ``UsageError`` unless it is 1...2147483647.
    static func repeatCount(_ text: String?) throws(UsageError) -> Int {
        guard let text else { return 1 }
        guard let n = Int(text), n >= 1, n <= Int(Int32.max) else {
            throw UsageError("invalid batch count \"\(text)\" after GO (1 to \(Int32.max))")
        }
        return n
    }
}

/// The lines of the script, from -Q/-q text, -i files, `:r` files and standard input, in order.
/// `:r` pushes a file's lines in front of what is left.
final class ScriptInput {
    enum Source {
        case lines([String], name: String)
        case standardInput
    }

    /// `:r` nesting deeper than this is refused (a file that reads itself).
    static let maxDepth = 16
    private var stack: [(lines: [String], index: Int, name: String)] = []
    private var pending: [Source]
    private var stdin: AsyncStream<String>.AsyncIterator?
    private(set) var readingStandardInput = false

    init(_ sources: [Source]) { pending = sources }

    var depth: Int { stack.count }

    /// Reads `path` and puts its lines next.
    /// - Throws: ``UsageError`` for an unreadable file or too deep a nesting.
    func include(_ path: String) throws(UsageError) {
        guard stack.count < Self.maxDepth else { throw UsageError(":r \(path): files nested more than \(Self.maxDepth) deep") }
        stack.append((ScriptText.lines(try ScriptText.read(path)), 0, path))
    }

    /// The next line, or nil at the end of every source.
    func next() async -> String? {
        while true {
            if var top = stack.popLast() {
                if top.index < top.lines.count {
                    let line = top.lines[top.index]
                    top.index += 1
                    stack.append(top)
                    return line
                }
                continue
            }
            if readingStandardInput {
                if let line = await stdin?.next() { return line }
                readingStandardInput = false
                stdin = nil
                continue
            }
            guard !pending.isEmpty else { return nil }
            switch pending.removeFirst() {
            case .lines(let lines, let name): stack.append((lines, 0, name))
            case .standardInput:
                stdin = ScriptText.standardInputLines().makeAsyncIterator()
                readingStandardInput = true
            }
        }
    }
}

/// Reading script text: files (UTF-8, or UTF-16 with a byte order mark) and standard input.
enum ScriptText {
    /// The text of a script file: UTF-8 (a byte order mark is skipped), or UTF-16 with a byte
    /// order mark (FF FE little-endian, FE FF big-endian).
    /// - Throws: ``UsageError`` naming the file and why it cannot be read.
    static func read(_ path: String) throws(UsageError) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw UsageError("cannot read \"\(path)\": no such file")
        }
        guard !isDirectory.boolValue else { throw UsageError("cannot read \"\(path)\": it is a directory") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read \"\(path)\": permission denied or unreadable")
        }
        let bytes = [UInt8](data)
        let text: String?
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            text = String(bytes: bytes.dropFirst(3), encoding: .utf8)
        } else if bytes.starts(with: [0xFF, 0xFE]) {
            text = String(bytes: bytes.dropFirst(2), encoding: .utf16LittleEndian)
        } else if bytes.starts(with: [0xFE, 0xFF]) {
            text = String(bytes: bytes.dropFirst(2), encoding: .utf16BigEndian)
        } else {
            text = String(bytes: bytes, encoding: .utf8)
        }
        guard let text else {
            throw UsageError("cannot read \"\(path)\": not UTF-8 text (UTF-16 needs a byte order mark)")
        }
        return text
    }

    /// `text` split at any line break (LF, CRLF, CR).
    static func lines(_ text: String) -> [String] {
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// The lines of standard input as they arrive (without their line breaks; a leading UTF-8
    /// byte order mark is dropped), read on a thread of their own.
    static func standardInputLines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        let thread = Thread {
            var first = true
            while let line = readLine(strippingNewline: true) {
                var text = line
                if first, text.hasPrefix("\u{FEFF}") { text.removeFirst() }
                first = false
                // readLine strips "\n" and "\r\n"; a lone trailing "\r" (old Mac files) too.
                if text.hasSuffix("\r") { text.removeLast() }
                continuation.yield(text)
            }
            continuation.finish()
        }
        thread.start()
        return stream
    }
}

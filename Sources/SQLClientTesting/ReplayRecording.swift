import Foundation

/// A `.tdssession` file of one or several client connections: one ``ReplaySession`` per
/// connection (a section), as `sqlclient record` writes when several clients connected through
/// it, or as `sqlclient decode --to-session` writes for a capture of several conversations.
///
/// A file with one connection is a plain session file. With several, each section starts with a
/// line `=== NAME` (the section's name); comments and settings before the first section are the
/// recording's and apply to every section (a section's own `@setting` lines override them):
///
/// ```
/// # recorded by sqlclient record, upstream 127.0.0.1:14333
/// @version 7.4
///
/// === connection 1
/// >>> LOGIN7
/// <<<
/// ...
/// === connection 2
/// >>> SQL_BATCH
/// ...
/// ```
///
/// ``ReplayServer`` serves connection *n* (in the order clients connect) from section *n*
/// (cycling when more clients connect than there are sections).
public struct ReplayRecording: Hashable, Sendable {
    /// Comment lines at the top of the file.
    public var comment: String?
    /// The sections, one per client connection in order.
    public var sections: [ReplaySession]

    /// A recording of `sections`.
    public init(comment: String? = nil, sections: [ReplaySession]) {
        self.comment = comment
        self.sections = sections
    }

    /// A recording of one connection.
    public init(_ session: ReplaySession) {
        self.init(comment: nil, sections: [session])
    }

    /// Reads a recording file (UTF-8).
    /// - Throws: the file system's error, or ``ReplaySession/ParseError`` with the file's line number.
    public init(contentsOf url: URL) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        try self.init(text: text, defaultName: url.deletingPathExtension().lastPathComponent)
    }

    /// Parses a recording: a plain session (one section), or `=== NAME` sections.
    /// - Throws: ``ReplaySession/ParseError`` naming the line (of the whole text) and what is wrong.
    public init(text: String, defaultName: String = "session") throws(ReplaySession.ParseError) {
        let normalized = text.unicodeScalars.prefix(while: { $0 != "\n" }).last == "\r"
            ? text.replacingOccurrences(of: "\r\n", with: "\n") : text
        var lines = normalized.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        let starts = lines.indices.filter { lines[$0].hasPrefix("===") }
        guard let first = starts.first else {
            self.init(comment: nil, sections: [try ReplaySession(text: normalized, defaultName: defaultName)])
            return
        }
        // The preamble: comments are the recording's, settings are every section's defaults.
        var comments: [String] = []
        var defaults: [(line: Int, text: String)] = []
        for i in 0 ..< first {
            let t = lines[i].trimmingCharacters(in: .whitespaces)
            if t.hasPrefix("#") {
                var c = t.dropFirst()
                if c.hasPrefix(" ") { c = c.dropFirst() }
                comments.append(String(c))
            } else if t.hasPrefix("@") {
                defaults.append((i, lines[i]))
            } else if !t.isEmpty {
                throw ReplaySession.ParseError(line: i + 1, message: "only comments and @settings may come before the first '=== ' section")
            }
        }
        var sections: [ReplaySession] = []
        for (n, start) in starts.enumerated() {
            let end = n + 1 < starts.count ? starts[n + 1] : lines.count
            var title = lines[start].dropFirst(3).trimmingCharacters(in: .whitespaces)
            while title.hasSuffix("=") { title.removeLast() }
            title = title.trimmingCharacters(in: .whitespaces)
            // Section text: the defaults, then the section's lines; `map` gives each line's place in the file.
            var map = defaults.map(\.line)
            var body = defaults.map(\.text)
            for i in (start + 1) ..< end {
                map.append(i)
                body.append(lines[i])
            }
            do {
                sections.append(try ReplaySession(text: body.joined(separator: "\n") + "\n",
                                                  defaultName: title.isEmpty ? "connection \(n + 1)" : title))
            } catch {
                let line = error.line >= 1 && error.line <= map.count ? map[error.line - 1] + 1 : start + 1
                throw ReplaySession.ParseError(line: line, message: error.message)
            }
        }
        self.init(comment: comments.isEmpty ? nil : comments.joined(separator: "\n"), sections: sections)
    }

    /// The text form: the plain session format for one section (with the recording's comment
    /// first), `=== name` sections for several.
    public var text: String { text(exchangeTexts: nil) }

    /// The text form, with each section's exchanges already formatted (`exchangeTexts[s][i]`, see
    /// ``ReplaySession/exchangeText(_:)``) when given.
    func text(exchangeTexts: [[String]]?) -> String {
        func texts(_ s: Int) -> [String]? { exchangeTexts.flatMap { s < $0.count ? $0[s] : nil } }
        if sections.count == 1 {
            var session = sections[0]
            if let comment { session.comment = [comment, session.comment].compactMap { $0 }.joined(separator: "\n") }
            return session.text(includingName: true, exchangeTexts: texts(0))
        }
        var out = ""
        if let comment { for l in comment.components(separatedBy: "\n") { out += "# \(l)".trimmingTrailingSpace + "\n" } }
        for (n, section) in sections.enumerated() {
            out += (n == 0 && comment == nil ? "" : "\n") + "=== \(section.name)\n"
            out += section.text(includingName: false, exchangeTexts: texts(n))
        }
        return out
    }

    /// Writes the text form to `url` (UTF-8, replacing the file atomically).
    public func write(to url: URL) throws {
        try Data(text.utf8).write(to: url, options: .atomic)
    }

    /// Every exchange of every section, in order (for lookups that ignore connections).
    public var allExchanges: [ReplaySession.Exchange] { sections.flatMap(\.exchanges) }
}

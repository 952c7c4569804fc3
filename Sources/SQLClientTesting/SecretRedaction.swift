import Foundation
import TDS

/// Keeps secrets (the login's password) out of recorded sessions: wherever a secret shows up
/// in an exchange (SQL text, parameter values, comments, or response bytes as UTF-8, as UTF-16LE
/// or in LOGIN7's obfuscated UTF-16 form, [MS-TDS] 2.2.6.4) it is replaced by as many `*`
/// in the same encoding, so a token stream keeps its lengths and still decodes.
///
/// Secrets shorter than ``minimumLength`` characters are not searched for: they match ordinary
/// bytes. (LOGIN7 itself is never written, so its password never reaches a file whatever its length.)
public struct SecretRedaction: Sendable {
    /// The shortest secret searched for.
    public static let minimumLength = 4

    /// The secrets searched for (those at least ``minimumLength`` long).
    public let secrets: [String]
    private let patterns: [(secret: [UInt8], replacement: [UInt8])]

    /// A redactor of `secrets` (shorter ones than ``minimumLength`` are ignored).
    public init(secrets: [String]) {
        let kept = Array(Set(secrets.filter { $0.count >= Self.minimumLength })).sorted { $0.count > $1.count }
        self.secrets = kept
        var patterns: [([UInt8], [UInt8])] = []
        for s in kept {
            let utf16 = Self.utf16LE(s), starsUTF16 = Self.utf16LE(String(repeating: "*", count: s.utf16.count))
            patterns.append((Array(s.utf8), Array(String(repeating: "*", count: s.utf8.count).utf8)))
            patterns.append((utf16, starsUTF16))
            patterns.append((Login7.obfuscate(utf16), Login7.obfuscate(starsUTF16)))
        }
        self.patterns = patterns
    }

    /// True when there is nothing to search for.
    public var isEmpty: Bool { secrets.isEmpty }

    /// `text` with every secret replaced by `<redacted>`.
    public func redact(_ text: String) -> String {
        var out = text
        for s in secrets where out.contains(s) { out = out.replacingOccurrences(of: s, with: "<redacted>") }
        return out
    }

    /// Replaces every secret in `bytes` (UTF-8, UTF-16LE, obfuscated UTF-16LE) with `*` of the
    /// same length and encoding; returns how many were replaced.
    @discardableResult
    public func redact(_ bytes: inout [UInt8]) -> Int {
        var count = 0
        for (secret, replacement) in patterns {
            for start in Self.occurrences(of: secret, in: bytes) {
                bytes.replaceSubrange(start ..< start + secret.count, with: replacement)
                count += 1
            }
        }
        return count
    }

    /// Redacts an exchange in place; a comment says when something was replaced.
    /// Returns true when something was.
    @discardableResult
    public func apply(to exchange: inout ReplaySession.Exchange) -> Bool {
        guard !isEmpty else { return false }
        var changed = false
        func text(_ s: String) -> String {
            let r = redact(s)
            if r != s { changed = true }
            return r
        }
        func params(_ ps: [ReplaySession.Parameter]) -> [ReplaySession.Parameter] {
            ps.map { p in
                var q = p
                q.value = p.value.map(text)
                return q
            }
        }
        switch exchange.request {
        case .sqlBatch(let sql): exchange.request = .sqlBatch(text(sql))
        case .rpc(let name, let ps): exchange.request = .rpc(procedure: name, parameters: params(ps))
        case .transactionManager(let type, let ps): exchange.request = .transactionManager(type: type, parameters: params(ps))
        case .login7, .attention: break
        }
        exchange.comment = exchange.comment.map(text)
        for i in exchange.response.indices {
            exchange.response[i].comment = exchange.response[i].comment.map(text)
            if redact(&exchange.response[i].bytes) > 0 { changed = true }
        }
        if changed {
            let note = "the login's password appeared in this exchange and was replaced"
            exchange.comment = [exchange.comment, note].compactMap { $0 }.joined(separator: "\n")
        }
        return changed
    }

    /// Where a secret still shows in a session file's text: in the text itself, or in any
    /// exchange's response bytes in any of the three encodings. Empty when the file is clean.
    public func findings(inFileText fileText: String) -> [String] {
        var found: [String] = []
        for s in secrets where fileText.contains(s) { found.append("the text holds a secret in plain text") }
        let raw = Array(fileText.utf8)
        for (secret, _) in patterns where !Self.occurrences(of: secret, in: raw).isEmpty {
            found.append("the file's bytes hold a secret")
        }
        if let recording = try? ReplayRecording(text: fileText) {
            for (n, e) in recording.allExchanges.enumerated() {
                let bytes = e.responseBytes
                for (secret, _) in patterns where !Self.occurrences(of: secret, in: bytes).isEmpty {
                    found.append("exchange \(n + 1) (\(e.request)) holds a secret in its response bytes")
                }
            }
        }
        return found
    }

    static func utf16LE(_ s: String) -> [UInt8] {
        s.utf16.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> [Int] {
        guard !needle.isEmpty, haystack.count >= needle.count else { return [] }
        var out: [Int] = []
        var i = 0
        let first = needle[0]
        while i <= haystack.count - needle.count {
            if haystack[i] == first, haystack[i ..< i + needle.count].elementsEqual(needle) {
                out.append(i)
                i += needle.count
            } else {
                i += 1
            }
        }
        return out
    }
}

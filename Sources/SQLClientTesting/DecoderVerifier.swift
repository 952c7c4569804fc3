import TDS

/// Feeds a token stream to ``TokenStreamDecoder`` whole, byte by byte and in seeded random
/// splits, and checks that every way gives the same tokens (and the same error, if any).
///
/// Use it in tests of anything that produces or consumes TDS token streams:
/// ```swift
/// let tokens = try DecoderVerifier.verify(bytes, version: .v7_4)
/// ```
public enum DecoderVerifier {
    /// What one decoding run produced: the tokens up to the end or the first error, and that
    /// error (including a `.truncated` from `finish()` when the stream ends inside a token).
    public struct Outcome: Hashable, Sendable, CustomStringConvertible {
        /// The tokens decoded, in order.
        public var tokens: [Token]
        /// The first error, nil when the stream decoded to its end.
        public var error: TDSDecodingError?
        /// An outcome from its parts.
        public init(tokens: [Token], error: TDSDecodingError?) { self.tokens = tokens; self.error = error }
        public var description: String {
            var text = tokens.map(\.name).joined(separator: " ")
            if let error { text += " !! \(error)" }
            return text
        }
    }

    /// Two ways of feeding the same bytes gave different results.
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        /// How the differing run was fed, e.g. "byte by byte" or "random split #3 (seed 7): [12, 40]".
        public var feeding: String
        /// The outcome of feeding the bytes whole.
        public var expected: Outcome
        /// The outcome of this feeding.
        public var actual: Outcome
        public var description: String {
            var text = "decoder mismatch when fed \(feeding):\n  whole: \(expected)\n  split: \(actual)"
            let n = min(expected.tokens.count, actual.tokens.count)
            if let i = (0..<n).first(where: { expected.tokens[$0] != actual.tokens[$0] }) {
                text += "\n  first differing token #\(i): \(expected.tokens[i]) vs \(actual.tokens[i])"
            }
            return text
        }
    }

    /// Decodes `bytes` fed in pieces of the given sizes (the last piece takes the rest), then
    /// calls `finish()`. `configure` can prepare the decoder (e.g. `setColumns`).
    public static func decode(_ bytes: [UInt8], pieces: [Int], version: TDSVersion,
                              options: TokenStreamDecoder.Options = .init(),
                              configure: (inout TokenStreamDecoder) -> Void = { _ in }) -> Outcome {
        var decoder = TokenStreamDecoder(version: version, options: options)
        configure(&decoder)
        var tokens: [Token] = []
        var position = 0
        var pieceIndex = 0
        do {
            while position < bytes.count {
                var size = pieceIndex < pieces.count ? pieces[pieceIndex] : bytes.count - position
                size = max(1, min(size, bytes.count - position))
                pieceIndex += 1
                decoder.append(Array(bytes[position ..< position + size]))
                position += size
                while let token = try decoder.next() { tokens.append(token) }
            }
            try decoder.finish()
        } catch {
            return Outcome(tokens: tokens, error: error)
        }
        return Outcome(tokens: tokens, error: nil)
    }

    /// Decodes `bytes` whole, byte by byte, and in `randomSplits` random splits drawn from
    /// `seed`, and returns the whole-input outcome if all runs agree; throws ``Mismatch``
    /// otherwise.
    public static func outcome(_ bytes: [UInt8], version: TDSVersion,
                               options: TokenStreamDecoder.Options = .init(),
                               randomSplits: Int = 16, seed: UInt64 = 0x5EED,
                               configure: (inout TokenStreamDecoder) -> Void = { _ in }) throws(Mismatch) -> Outcome {
        let whole = decode(bytes, pieces: [bytes.count], version: version, options: options, configure: configure)
        let single = decode(bytes, pieces: Array(repeating: 1, count: bytes.count), version: version,
                            options: options, configure: configure)
        guard single == whole else { throw Mismatch(feeding: "byte by byte", expected: whole, actual: single) }
        var rng = SeededRandom(seed: seed)
        for run in 0..<randomSplits {
            let pieces = randomPieces(total: bytes.count, using: &rng)
            let split = decode(bytes, pieces: pieces, version: version, options: options, configure: configure)
            guard split == whole else {
                throw Mismatch(feeding: "random split #\(run) (seed \(seed)): \(pieces)", expected: whole, actual: split)
            }
        }
        return whole
    }

    /// Like ``outcome(_:version:options:randomSplits:seed:configure:)``, and also throws the
    /// decoding error if the stream does not decode cleanly. Returns the tokens.
    public static func verify(_ bytes: [UInt8], version: TDSVersion,
                              options: TokenStreamDecoder.Options = .init(),
                              randomSplits: Int = 16, seed: UInt64 = 0x5EED,
                              configure: (inout TokenStreamDecoder) -> Void = { _ in }) throws -> [Token] {
        let result = try outcome(bytes, version: version, options: options, randomSplits: randomSplits,
                                 seed: seed, configure: configure)
        if let error = result.error { throw error }
        return result.tokens
    }

    /// How a test feeds a stream to a decoder: whole, byte by byte, or in random pieces
    /// (``pieces(of:_:using:)``).
    public enum Split: String, CaseIterable, Sendable, CustomStringConvertible {
        case whole, byteByByte = "byte by byte", random
        public var description: String { rawValue }
    }

    /// `stream` cut as `split` says: one piece (none for an empty stream), pieces of one byte,
    /// or pieces of 1...97 bytes drawn from `rng`.
    public static func pieces(of stream: [UInt8], _ split: Split, using rng: inout some RandomNumberGenerator) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        while i < stream.count {
            let n = split == .whole ? stream.count : split == .byteByByte ? 1 : Int.random(in: 1 ... 97, using: &rng)
            out.append(Array(stream[i ..< min(i + n, stream.count)]))
            i += n
        }
        return out
    }

    /// Random piece sizes summing to `total`: a mix of tiny (1–8), medium and large pieces.
    public static func randomPieces(total: Int, using rng: inout SeededRandom) -> [Int] {
        var pieces: [Int] = []
        var left = total
        while left > 0 {
            let kind = rng.next() % 3
            let limit: UInt64 = kind == 0 ? 8 : (kind == 1 ? 64 : UInt64(max(1, total / 2)))
            let size = min(left, Int(rng.next() % limit) + 1)
            pieces.append(size)
            left -= size
        }
        return pieces
    }
}

/// A small seeded pseudo-random generator (SplitMix64) so split tests are reproducible.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

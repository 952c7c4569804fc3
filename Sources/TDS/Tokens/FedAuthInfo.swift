/// [MS-TDS] 2.2.7.12 FEDAUTHINFO — where to get a federated-authentication token (token 0xEE).
///
/// Wire shape after the token byte: TokenLength DWORD, CountOfInfoIDs DWORD, FedAuthInfoOpt ×
/// count (FedAuthInfoID BYTE, FedAuthInfoDataLen DWORD, FedAuthInfoDataOffset DWORD — the
/// offset counted from CountOfInfoIDs), then the data. IDs: 0x01 STSURL, 0x02 SPN; both are
/// UTF-16LE text.
public struct FedAuthInfo: Hashable, Sendable {
    /// One FedAuthInfoOpt: its id (1 STSURL, 2 SPN) and data.
    public struct Option: Hashable, Sendable {
        /// FedAuthInfoID.
        public var id: UInt8
        /// FedAuthInfoData (UTF-16LE text for STSURL and SPN).
        public var data: [UInt8]
        /// An option from its fields.
        public init(id: UInt8, data: [UInt8]) { self.id = id; self.data = data }
    }

    /// The options in order.
    public var options: [Option]
    /// A FEDAUTHINFO of `options`.
    public init(options: [Option]) { self.options = options }

    /// The token endpoint URL (STSURL, id 0x01).
    public var stsURL: String? { text(for: 0x01) }
    /// The service principal name (SPN, id 0x02).
    public var spn: String? { text(for: 0x02) }

    func text(for id: UInt8) -> String? {
        guard let d = options.first(where: { $0.id == id })?.data else { return nil }
        var r = ByteReader(d)
        return try? r.readUTF16LE(byteCount: d.count)
    }

    /// Decodes the token after its type byte.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader) throws(TDSDecodingError) -> FedAuthInfo {
        do throws(TDSDecodingError) {
            var body = try reader.tokenBody32()
            return try decodeBounded("FEDAUTHINFO") { () throws(TDSDecodingError) -> FedAuthInfo in
                let start = body.offset
                let total = body.remaining
                let count = Int(try body.readUInt32LE())
                guard count <= total / 9 else {
                    throw body.error(.invalidLength, "CountOfInfoIDs \(count) does not fit in \(total) bytes")
                }
                var options: [Option] = []
                options.reserveCapacity(count)
                for _ in 0..<count {
                    let id = try body.readUInt8()
                    let len = Int(try body.readUInt32LE())
                    let off = Int(try body.readUInt32LE())
                    guard off <= total, len <= total - off else {
                        throw body.error(.invalidLength, "FedAuthInfoData (offset \(off), length \(len)) outside the token")
                    }
                    let s = start + off
                    options.append(Option(id: id, data: Array(body.bytes[s ..< s + len])))
                }
                body.offset = body.endIndex
                return FedAuthInfo(options: options)
            }
        } catch { throw error.inToken("FEDAUTHINFO") }
    }
}

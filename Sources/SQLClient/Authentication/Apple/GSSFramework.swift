#if canImport(GSS)
import Foundation
import GSS
import Synchronization

/// Kerberos in SPNEGO through Apple's GSS.framework, in the shape of the MIT binding
/// (GSSAPILibrary.swift): the default credential (Ticket Viewer, `kinit`); a cache or keytab in the
/// configuration is `.unsupported` here.
final class GSSFrameworkInitiator: GSSInitiator, Sendable {
    /// The GSS handles and the context's progress; every GSS call on them holds its lock.
    private let state: Mutex<Handles>

    private struct Handles: ~Copyable {
        /// The imported service principal name (released in deinit).
        var target: gss_name_t
        var context: gss_ctx_id_t?
        var isComplete = false
        var grantedFlags: UInt32 = 0
    }

    var isComplete: Bool { state.withLock { $0.isComplete } }
    var grantedFlags: UInt32 { state.withLock { $0.grantedFlags } }

    /// OIDs as gss_OID_desc over bytes kept for the life of the process.
    private static func oid(_ bytes: [UInt8]) -> UnsafeMutablePointer<gss_OID_desc> {
        let elements = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 1)
        elements.copyMemory(from: bytes, byteCount: bytes.count)
        let desc = UnsafeMutablePointer<gss_OID_desc>.allocate(capacity: 1)
        desc.initialize(to: gss_OID_desc(length: OM_uint32(bytes.count), elements: elements))
        return desc
    }
    nonisolated(unsafe) private static let spnego = oid(SPNEGO.spnegoOID)
    nonisolated(unsafe) private static let principalNameType = oid(KerberosAuthenticator.kerberosOID + [0x01])

    init(servicePrincipalName spn: String, credentials: KerberosCredentials) throws(SQLClientError) {
        if credentials.keytab != nil || credentials.credentialCache != nil || credentials.principal != nil {
            throw SQLClientError(.unsupported, "on Apple platforms Kerberos uses the default credential"
                                 + " (kinit or Ticket Viewer): a keytab, cache or principal cannot be given")
        }
        var minor: OM_uint32 = 0
        var name: gss_name_t?
        var bytes = Array(spn.utf8)
        let major = bytes.withUnsafeMutableBytes { raw -> OM_uint32 in
            var buffer = gss_buffer_desc(length: raw.count, value: raw.baseAddress)
            return gss_import_name(&minor, &buffer, Self.principalNameType, &name)
        }
        guard major == 0, let name else {
            throw KerberosAuthenticator.error(KerberosError(major: major, minor: minor, text: "gss_import_name failed"),
                                              doing: "importing the service principal name \(spn)")
        }
        state = Mutex(Handles(target: name))
    }

    func step(_ input: [UInt8]?) throws(SQLClientError) -> [UInt8] {
        try state.withLock { h throws(SQLClientError) -> [UInt8] in try step(input, &h) }
    }

    private func step(_ input: [UInt8]?, _ h: inout Handles) throws(SQLClientError) -> [UInt8] {
        var minor: OM_uint32 = 0
        var flags: OM_uint32 = 0
        var output = gss_buffer_desc(length: 0, value: nil)
        let major: OM_uint32
        if var bytes = input {
            major = bytes.withUnsafeMutableBytes { raw -> OM_uint32 in
                var buffer = gss_buffer_desc(length: raw.count, value: raw.baseAddress)
                return gss_init_sec_context(&minor, nil, &h.context, h.target, Self.spnego, KerberosAuthenticator.requestedFlags, 0,
                                            nil, &buffer, nil, &output, &flags, nil)
            }
        } else {
            major = gss_init_sec_context(&minor, nil, &h.context, h.target, Self.spnego, KerberosAuthenticator.requestedFlags, 0,
                                         nil, nil, nil, &output, &flags, nil)
        }
        var token: [UInt8] = []
        if output.length > 0, output.length <= SPNEGO.maximumTokenLength, let value = output.value {
            token = Array(UnsafeRawBufferPointer(start: value, count: output.length))
        }
        var releaseMinor: OM_uint32 = 0
        _ = gss_release_buffer(&releaseMinor, &output)
        guard major & 0xFFFF_0000 == 0 else {
            throw KerberosAuthenticator.error(KerberosError(major: major, minor: minor, text: "gss_init_sec_context failed"),
                                              doing: input == nil ? "getting a Kerberos service ticket" : "checking the server's Kerberos answer")
        }
        h.grantedFlags = flags
        h.isComplete = major & 1 == 0
        return token
    }

    deinit {
        state.withLock { h in
            var minor: OM_uint32 = 0
            if h.context != nil { _ = gss_delete_sec_context(&minor, &h.context, nil) }
            var name: gss_name_t? = h.target
            _ = gss_release_name(&minor, &name)
        }
    }
}

enum GSSBackend {
    /// GSS.framework is always there.
    static func checkAvailable() throws(SQLClientError) {}

    /// A Kerberos initiator through GSS.framework.
    static func makeInitiator(servicePrincipalName: String, credentials: KerberosCredentials) throws(SQLClientError) -> any GSSInitiator {
        try GSSFrameworkInitiator(servicePrincipalName: servicePrincipalName, credentials: credentials)
    }
}
#endif

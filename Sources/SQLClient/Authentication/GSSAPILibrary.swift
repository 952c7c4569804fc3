#if !canImport(GSS)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// MIT Kerberos's GSSAPI ([RFC 2743], [RFC 2744] C bindings) loaded at run time: `dlopen` of
/// `libgssapi_krb5.so.2` (Debian/Ubuntu package `libgssapi-krb5-2`) and `dlsym` of the few
/// functions used, so that the package builds and runs without it. The C structures are written
/// into raw memory at the offsets the C ABI gives them (no Swift struct is assumed to match one).
///
/// `SQLCLIENT_GSSAPI_LIBRARY` names another library to load (tests point it at a missing one to
/// check the error a machine without Kerberos gets).
final class GSSAPILibrary: @unchecked Sendable {
    /// The library loaded by default.
    static let defaultName = "libgssapi_krb5.so.2"
    /// The Debian/Ubuntu package that provides it (named in the `.unsupported` error).
    static let debianPackage = "libgssapi-krb5-2"

    typealias Minor = UnsafeMutablePointer<UInt32>
    typealias ImportName = @convention(c) (Minor?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?,
                                           UnsafeMutablePointer<OpaquePointer?>?) -> UInt32
    typealias ReleaseName = @convention(c) (Minor?, UnsafeMutablePointer<OpaquePointer?>?) -> UInt32
    typealias InitSecContext = @convention(c) (Minor?, OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?,
                                               UnsafeMutableRawPointer?, UInt32, UInt32, UnsafeMutableRawPointer?,
                                               UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                               UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt32>?,
                                               UnsafeMutablePointer<UInt32>?) -> UInt32
    typealias DeleteSecContext = @convention(c) (Minor?, UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutableRawPointer?) -> UInt32
    typealias ReleaseBuffer = @convention(c) (Minor?, UnsafeMutableRawPointer?) -> UInt32
    typealias DisplayStatus = @convention(c) (Minor?, UInt32, Int32, UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt32>?,
                                              UnsafeMutableRawPointer?) -> UInt32
    typealias AcquireCred = @convention(c) (Minor?, OpaquePointer?, UInt32, UnsafeMutableRawPointer?, Int32,
                                            UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                            UnsafeMutablePointer<UInt32>?) -> UInt32
    typealias AcquireCredFrom = @convention(c) (Minor?, OpaquePointer?, UInt32, UnsafeMutableRawPointer?, Int32,
                                                UnsafeMutableRawPointer?, UnsafeMutablePointer<OpaquePointer?>?,
                                                UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafeMutablePointer<UInt32>?) -> UInt32
    typealias ReleaseCred = @convention(c) (Minor?, UnsafeMutablePointer<OpaquePointer?>?) -> UInt32
    typealias SetNegMechs = @convention(c) (Minor?, OpaquePointer?, UnsafeMutableRawPointer?) -> UInt32

    let importName: ImportName
    let releaseName: ReleaseName
    let initSecContext: InitSecContext
    let deleteSecContext: DeleteSecContext
    let releaseBuffer: ReleaseBuffer
    let displayStatus: DisplayStatus
    let acquireCred: AcquireCred
    let releaseCred: ReleaseCred
    /// MIT 1.11+: credentials from a given cache or client keytab (nil when the library lacks it).
    let acquireCredFrom: AcquireCredFrom?
    /// MIT 1.10+: the mechanisms SPNEGO offers (nil when the library lacks it).
    let setNegMechs: SetNegMechs?

    private init(handle: UnsafeMutableRawPointer) throws(SQLClientError) {
        func symbol<T>(_ name: String, as type: T.Type) throws(SQLClientError) -> T {
            guard let pointer = dlsym(handle, name) else {
                throw SQLClientError(.unsupported, "the GSSAPI library has no \(name): Kerberos needs MIT Kerberos's"
                                     + " \(GSSAPILibrary.defaultName) (Debian/Ubuntu package \(GSSAPILibrary.debianPackage))")
            }
            return unsafeBitCast(pointer, to: type)
        }
        importName = try symbol("gss_import_name", as: ImportName.self)
        releaseName = try symbol("gss_release_name", as: ReleaseName.self)
        initSecContext = try symbol("gss_init_sec_context", as: InitSecContext.self)
        deleteSecContext = try symbol("gss_delete_sec_context", as: DeleteSecContext.self)
        releaseBuffer = try symbol("gss_release_buffer", as: ReleaseBuffer.self)
        displayStatus = try symbol("gss_display_status", as: DisplayStatus.self)
        acquireCred = try symbol("gss_acquire_cred", as: AcquireCred.self)
        releaseCred = try symbol("gss_release_cred", as: ReleaseCred.self)
        acquireCredFrom = dlsym(handle, "gss_acquire_cred_from").map { unsafeBitCast($0, to: AcquireCredFrom.self) }
        setNegMechs = dlsym(handle, "gss_set_neg_mechs").map { unsafeBitCast($0, to: SetNegMechs.self) }
    }

    /// The libraries loaded, by name.
    private static let loaded = Mutex<[String: GSSAPILibrary]>([:])

    /// The library named by `SQLCLIENT_GSSAPI_LIBRARY`, else ``defaultName``, loaded once per name.
    /// - Throws: ``SQLClientError`` `.unsupported` naming the Debian package when it cannot be loaded.
    static func load() throws(SQLClientError) -> GSSAPILibrary {
        let name = ProcessInfo.processInfo.environment["SQLCLIENT_GSSAPI_LIBRARY"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultName
        return try loaded.withLock { loaded throws(SQLClientError) -> GSSAPILibrary in
            if let library = loaded[name] { return library }
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
                throw SQLClientError(.unsupported, "Kerberos (Integrated Security) needs the GSSAPI library \(name), which"
                                     + " could not be loaded: install the Debian/Ubuntu package \(debianPackage) (MIT Kerberos),"
                                     + " or use SQL authentication or NTLM (User ID=DOMAIN\\user with a password)",
                                     underlying: KerberosError(.libraryUnavailable, "dlopen(\(name)) failed"))
            }
            let library = try GSSAPILibrary(handle: handle)
            loaded[name] = library
            return library
        }
    }

    // MARK: C structures in raw memory

    /// The offset of a pointer after a leading OM_uint32 (gss_OID_desc, gss_key_value_set_desc).
    static let pointerAfterUInt32 = max(MemoryLayout<UInt32>.size, MemoryLayout<UnsafeRawPointer>.alignment)
    /// gss_buffer_desc: size_t length, void *value.
    static let bufferSize = MemoryLayout<Int>.stride + MemoryLayout<UnsafeRawPointer>.stride

    /// A gss_OID_desc for `bytes` (DER contents of an OID), kept for the life of the process.
    static func makeOID(_ bytes: [UInt8]) -> UnsafeMutableRawPointer {
        let elements = UnsafeMutableRawPointer.allocate(byteCount: bytes.count, alignment: 1)
        elements.copyMemory(from: bytes, byteCount: bytes.count)
        let oid = UnsafeMutableRawPointer.allocate(byteCount: pointerAfterUInt32 + MemoryLayout<UnsafeRawPointer>.stride,
                                                   alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        oid.storeBytes(of: UInt32(bytes.count), as: UInt32.self)
        oid.storeBytes(of: elements, toByteOffset: pointerAfterUInt32, as: UnsafeMutableRawPointer.self)
        return oid
    }

    /// A gss_OID_set_desc (size_t count, gss_OID elements) of one OID, kept for the life of the process.
    static func makeOIDSet(_ bytes: [UInt8]) -> UnsafeMutableRawPointer {
        let set = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<Int>.stride + MemoryLayout<UnsafeRawPointer>.stride,
                                                   alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        set.storeBytes(of: 1, as: Int.self)
        set.storeBytes(of: makeOID(bytes), toByteOffset: MemoryLayout<Int>.stride, as: UnsafeMutableRawPointer.self)
        return set
    }

    /// SPNEGO 1.3.6.1.5.5.2, Kerberos 5 1.2.840.113554.1.2.2, and the Kerberos principal name type
    /// 1.2.840.113554.1.2.2.1 (GSS_KRB5_NT_PRINCIPAL_NAME), as gss_OID_desc; the Kerberos mechanism
    /// as a one-element set (gss_set_neg_mechs: SPNEGO offers Kerberos only). Written once, only read after.
    nonisolated(unsafe) static let spnegoMechanism = makeOID(SPNEGO.spnegoOID)
    nonisolated(unsafe) static let kerberosMechanisms = makeOIDSet(KerberosAuthenticator.kerberosOID)
    nonisolated(unsafe) static let spnegoMechanisms = makeOIDSet(SPNEGO.spnegoOID)
    nonisolated(unsafe) static let kerberosPrincipalNameType = makeOID(KerberosAuthenticator.kerberosOID + [0x01])

    /// Calls `body` with a gss_buffer_desc holding `bytes` (or an empty one).
    static func withBuffer<R>(_ bytes: [UInt8], _ body: (UnsafeMutableRawPointer) throws -> R) rethrows -> R {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        defer { buffer.deallocate() }
        return try bytes.withUnsafeBytes { raw in
            buffer.storeBytes(of: raw.count, as: Int.self)
            buffer.storeBytes(of: raw.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) },
                              toByteOffset: MemoryLayout<Int>.stride, as: UnsafeMutableRawPointer?.self)
            return try body(buffer)
        }
    }

    /// A zeroed gss_buffer_desc for an output; `take` copies it out and releases it.
    static func makeOutputBuffer() -> UnsafeMutableRawPointer {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: bufferSize)
        return buffer
    }

    /// The bytes of an output gss_buffer_desc (at most `cap`), released with gss_release_buffer and freed.
    func take(_ buffer: UnsafeMutableRawPointer, cap: Int) -> [UInt8] {
        defer {
            var minor: UInt32 = 0
            _ = releaseBuffer(&minor, buffer)
            buffer.deallocate()
        }
        let length = buffer.load(as: Int.self)
        guard length > 0, length <= cap,
              let value = buffer.load(fromByteOffset: MemoryLayout<Int>.stride, as: UnsafeMutableRawPointer?.self) else { return [] }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// gss_display_status's text for a major (GSS) and minor (mechanism) status.
    func describe(major: UInt32, minor: UInt32) -> String {
        func messages(_ status: UInt32, type: Int32, mech: UnsafeMutableRawPointer?) -> [String] {
            var out: [String] = []
            var context: UInt32 = 0
            repeat {
                var m: UInt32 = 0
                let buffer = GSSAPILibrary.makeOutputBuffer()
                let rc = displayStatus(&m, status, type, mech, &context, buffer)
                let text = String(decoding: take(buffer, cap: 4096), as: UTF8.self)
                if rc != 0 { break }
                if !text.isEmpty { out.append(text) }
            } while context != 0 && out.count < 8
            return out
        }
        // GSS_S_FAILURE's own text ("Unspecified GSS failure. Minor code may provide more
        // information") says nothing when the minor code has a message.
        let mechanism = minor != 0 ? messages(minor, type: 2, mech: nil) : []
        var parts = major & 0xFFFF_0000 != 0 && !(major >> 16 & 0xFF == 13 && !mechanism.isEmpty)
            ? messages(major, type: 1, mech: nil) : []
        parts += mechanism
        return parts.isEmpty ? "GSSAPI major status 0x\(String(major, radix: 16)), minor \(Int32(bitPattern: minor))"
            : parts.joined(separator: ": ")
    }
}

/// A Kerberos (SPNEGO) initiator context of MIT GSSAPI.
final class GSSAPIInitiator: GSSInitiator, Sendable {
    private let library: GSSAPILibrary
    /// The GSSAPI handles and the context's progress; every GSSAPI call on them holds its lock.
    private let state: Mutex<Handles>

    private struct Handles: ~Copyable {
        var target: OpaquePointer?
        var credential: OpaquePointer?
        var context: OpaquePointer?
        var isComplete = false
        var grantedFlags: UInt32 = 0
    }

    var isComplete: Bool { state.withLock { $0.isComplete } }
    var grantedFlags: UInt32 { state.withLock { $0.grantedFlags } }

    /// Imports the SPN and acquires the initiator's credential (default cache, or the given cache,
    /// client keytab and principal through gss_acquire_cred_from).
    /// - Throws: ``SQLClientError`` `.unsupported` (no library, or a cache/keytab without
    ///   gss_acquire_cred_from), `.invalidConfiguration` (a malformed name), `.loginFailed` (no credentials).
    init(servicePrincipalName spn: String, credentials: KerberosCredentials) throws(SQLClientError) {
        let library = try GSSAPILibrary.load()
        self.library = library
        var minor: UInt32 = 0
        var name: OpaquePointer?
        let major = GSSAPILibrary.withBuffer(Array(spn.utf8)) { buffer in
            library.importName(&minor, buffer, GSSAPILibrary.kerberosPrincipalNameType, &name)
        }
        guard major == 0 else {
            throw KerberosAuthenticator.error(KerberosError(major: major, minor: minor, text: library.describe(major: major, minor: minor)),
                                              doing: "importing the service principal name \(spn)")
        }
        var handles = Handles(target: name)
        do {
            handles.credential = try Self.acquire(credentials, library)
        } catch {
            Self.releaseAll(&handles, library)
            throw error
        }
        state = Mutex(handles)
    }

    /// The initiator's credential.
    private static func acquire(_ credentials: KerberosCredentials, _ library: GSSAPILibrary) throws(SQLClientError) -> OpaquePointer? {
        var minor: UInt32 = 0
        var desired: OpaquePointer?
        defer { if desired != nil { var m: UInt32 = 0; _ = library.releaseName(&m, &desired) } }
        if let principal = credentials.principal, !principal.isEmpty {
            let major = GSSAPILibrary.withBuffer(Array(principal.utf8)) { buffer in
                library.importName(&minor, buffer, GSSAPILibrary.kerberosPrincipalNameType, &desired)
            }
            guard major == 0 else {
                throw KerberosAuthenticator.error(KerberosError(major: major, minor: minor, text: library.describe(major: major, minor: minor)),
                                                  doing: "importing the client principal \(principal)")
            }
        }
        var store: [(String, String)] = []
        if let cache = credentials.credentialCache, !cache.isEmpty { store.append(("ccache", cache)) }
        if let keytab = credentials.keytab, !keytab.isEmpty { store.append(("client_keytab", keytab)) }
        var cred: OpaquePointer?
        let major: UInt32
        if store.isEmpty {
            major = library.acquireCred(&minor, desired, 0xFFFF_FFFF, GSSAPILibrary.spnegoMechanisms, 1, &cred, nil, nil)
        } else {
            guard let acquireFrom = library.acquireCredFrom else {
                throw SQLClientError(.unsupported, "this GSSAPI library has no gss_acquire_cred_from: a credential cache or"
                                     + " keytab in the configuration needs MIT Kerberos 1.11 or later (or set KRB5CCNAME /"
                                     + " KRB5_CLIENT_KTNAME and leave them out)")
            }
            major = Self.withKeyValueSet(store) { set in
                acquireFrom(&minor, desired, 0xFFFF_FFFF, GSSAPILibrary.spnegoMechanisms, 1, set, &cred, nil, nil)
            }
        }
        guard major == 0 else {
            throw KerberosAuthenticator.error(KerberosError(major: major, minor: minor, text: library.describe(major: major, minor: minor)),
                                              doing: "acquiring Kerberos credentials")
        }
        if let setNegMechs = library.setNegMechs {
            // SPNEGO offers Kerberos only (MIT would otherwise add IAKERB and any installed mechanism).
            var m: UInt32 = 0
            _ = setNegMechs(&m, cred, GSSAPILibrary.kerberosMechanisms)
        }
        return cred
    }

    /// gss_key_value_set_desc (OM_uint32 count, gss_key_value_element_desc *elements) of C strings.
    private static func withKeyValueSet<R>(_ pairs: [(String, String)], _ body: (UnsafeMutableRawPointer) -> R) -> R {
        let pointer = MemoryLayout<UnsafeRawPointer>.stride
        let elements = UnsafeMutableRawPointer.allocate(byteCount: max(1, pairs.count) * 2 * pointer, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        var strings: [UnsafeMutablePointer<CChar>] = []
        for (i, (key, value)) in pairs.enumerated() {
            guard let k = strdup(key), let v = strdup(value) else { continue }
            strings += [k, v]
            elements.storeBytes(of: UnsafeRawPointer(k), toByteOffset: 2 * i * pointer, as: UnsafeRawPointer.self)
            elements.storeBytes(of: UnsafeRawPointer(v), toByteOffset: (2 * i + 1) * pointer, as: UnsafeRawPointer.self)
        }
        let set = UnsafeMutableRawPointer.allocate(byteCount: GSSAPILibrary.pointerAfterUInt32 + pointer, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        set.storeBytes(of: UInt32(strings.count / 2), as: UInt32.self)
        set.storeBytes(of: elements, toByteOffset: GSSAPILibrary.pointerAfterUInt32, as: UnsafeMutableRawPointer.self)
        defer {
            for s in strings { free(s) }
            elements.deallocate()
            set.deallocate()
        }
        return body(set)
    }

    func step(_ input: [UInt8]?) throws(SQLClientError) -> [UInt8] {
        try state.withLock { h throws(SQLClientError) -> [UInt8] in try step(input, &h) }
    }

    private func step(_ input: [UInt8]?, _ h: inout Handles) throws(SQLClientError) -> [UInt8] {
        guard !h.isComplete else {
            throw SQLClientError(.protocolError, "the server sent another SSPI token after Kerberos authentication completed",
                                 underlying: KerberosError(.defectiveToken, "a token after completion"))
        }
        var minor: UInt32 = 0
        var flags: UInt32 = 0
        let output = GSSAPILibrary.makeOutputBuffer()
        let requested = KerberosAuthenticator.requestedFlags
        let major: UInt32
        if let input {
            major = GSSAPILibrary.withBuffer(input) { buffer in
                library.initSecContext(&minor, h.credential, &h.context, h.target, GSSAPILibrary.spnegoMechanism, requested, 0,
                                       nil, buffer, nil, output, &flags, nil)
            }
        } else {
            major = library.initSecContext(&minor, h.credential, &h.context, h.target, GSSAPILibrary.spnegoMechanism, requested, 0,
                                           nil, nil, nil, output, &flags, nil)
        }
        let token = library.take(output, cap: SPNEGO.maximumTokenLength)
        // GSS_S_COMPLETE (0) or GSS_S_CONTINUE_NEEDED (supplementary bit 0); any routine or calling error fails.
        guard major & 0xFFFF_0000 == 0 else {
            throw KerberosAuthenticator.error(KerberosError(major: major, minor: minor, text: library.describe(major: major, minor: minor)),
                                              doing: input == nil ? "getting a Kerberos service ticket" : "checking the server's Kerberos answer")
        }
        h.grantedFlags = flags
        h.isComplete = major & 1 == 0
        return token
    }

    private static func releaseAll(_ h: inout Handles, _ library: GSSAPILibrary) {
        var minor: UInt32 = 0
        if h.context != nil { _ = library.deleteSecContext(&minor, &h.context, nil) }
        if h.credential != nil { _ = library.releaseCred(&minor, &h.credential) }
        if h.target != nil { _ = library.releaseName(&minor, &h.target) }
    }

    deinit { state.withLock { Self.releaseAll(&$0, library) } }
}

enum GSSBackend {
    /// Loads the GSSAPI library.
    /// - Throws: ``SQLClientError`` `.unsupported` naming the Debian package when it is missing.
    static func checkAvailable() throws(SQLClientError) {
        _ = try GSSAPILibrary.load()
    }

    /// A Kerberos initiator through MIT GSSAPI (loaded with dlopen).
    static func makeInitiator(servicePrincipalName: String, credentials: KerberosCredentials) throws(SQLClientError) -> any GSSInitiator {
        try GSSAPIInitiator(servicePrincipalName: servicePrincipalName, credentials: credentials)
    }
}
#endif

// libFuzzer harness: the connection string parser (SQLConnectionConfiguration(connectionString:))
// and the server address forms (SQLServerAddress(parsing:)).
// Invariants: no trap; errors are SQLClientError; a password given in the string never appears
// in the configuration's description or in an error's description.
import Foundation
import SQLClient

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConnectionString(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    let text = String(decoding: input, as: UTF8.self)
    let secret = "Zq9-secret-Xw7"
    for candidate in [text, "Password=\(secret);" + text, text + ";Password=\(secret)"] {
        do {
            let config = try SQLConnectionConfiguration(connectionString: candidate)
            invariant(!config.description.contains(secret), "the password appears in the description")
            _ = config.address.description
        } catch let error as SQLClientError {
            invariant(!"\(error)".contains(secret), "the password appears in an error")
        } catch {
            invariant(false, "not a SQLClientError: \(error)")
        }
    }
    if let address = try? SQLServerAddress(parsing: text) {
        _ = address.description
    }
    return 0
}

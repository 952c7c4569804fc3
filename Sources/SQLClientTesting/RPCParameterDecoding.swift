import Foundation
import TDS

/// Decodes RPC parameters ([MS-TDS] 2.2.6.6 ParameterData) into names and canonical values for
/// matching. Until TYPE_INFO decoding is available this reads no parameters, and recordings
/// that list parameters then match no request.
enum RPCParameterDecoding {
    static func decodeParameters(_ r: inout ByteReader, version: TDSVersion) -> [ReplaySession.Parameter] {
        []
    }
}

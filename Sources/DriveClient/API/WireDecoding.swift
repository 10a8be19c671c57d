import Foundation

extension KeyedDecodingContainer {
    /// An int64 as Drive sends it (a JSON string, "format": "int64" in the discovery document),
    /// tolerating a bare number; a string that is not a number is corrupt data.
    func decodeInt64IfPresent(forKey key: Key) throws -> Int64? {
        if let text = try? decodeIfPresent(String.self, forKey: key) {
            guard let value = Int64(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "not an int64: \(text)")
            }
            return value
        }
        return try decodeIfPresent(Int64.self, forKey: key)
    }
}

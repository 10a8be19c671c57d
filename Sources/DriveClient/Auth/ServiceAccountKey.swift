import DriveSupport
import Foundation

/// A service account's JSON key as Google's console (or the emulator's `--write-service-account`)
/// writes it. Parsing errors name the field, never the key material.
public struct ServiceAccountKey: Sendable {
    public let clientEmail: String
    public let privateKeyID: String?
    public let tokenURI: String?
    public let projectID: String?
    /// The parsed private key (libcrypto); the PEM text is not kept.
    let key: RSAKey

    public init(json data: Data) throws {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw OAuthError.invalidServiceAccountKey("not a JSON object")
        }
        guard (object["type"] as? String) == "service_account" else {
            throw OAuthError.invalidServiceAccountKey("\"type\" is not \"service_account\" (is this an OAuth client file instead?)")
        }
        guard let email = object["client_email"] as? String, !email.isEmpty else {
            throw OAuthError.invalidServiceAccountKey("\"client_email\" is missing")
        }
        guard let pem = object["private_key"] as? String, !pem.isEmpty else {
            throw OAuthError.invalidServiceAccountKey("\"private_key\" is missing")
        }
        do {
            key = try RSAKey(privateKeyPEM: pem)
        } catch {
            throw OAuthError.invalidServiceAccountKey("\"private_key\" is not a PEM RSA private key")
        }
        clientEmail = email
        privateKeyID = object["private_key_id"] as? String
        tokenURI = (object["token_uri"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        projectID = object["project_id"] as? String
    }

    public static func load(path: String) throws -> ServiceAccountKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw OAuthError.invalidServiceAccountKey("cannot read \(path)")
        }
        return try ServiceAccountKey(json: data)
    }
}

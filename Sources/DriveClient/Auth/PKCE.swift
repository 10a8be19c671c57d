import DriveSupport

/// Proof Key for Code Exchange (RFC 7636) with the S256 method: the challenge travels with the
/// consent request, the verifier only with the code exchange.
public struct PKCE: Sendable {
    /// 64 characters of `[A-Za-z0-9-_]` (RFC 7636 allows 43 to 128 unreserved characters).
    public let verifier: String

    public init(verifier: String = SecureRandom.token(length: 64)) { self.verifier = verifier }

    /// base64url(SHA-256(verifier)), unpadded.
    public var challenge: String {
        var d = Digest(.sha256)
        d.update(Array(verifier.utf8))
        return Base64URL.encode(d.finalize())
    }

    public let method = "S256"
}

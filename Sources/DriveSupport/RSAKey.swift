import CCrypto
import Foundation

/// An RSA key held by libcrypto: generated here or read from PEM, used for RS256 signatures
/// (service-account JWTs). Immutable once made, so one key may sign or verify from many threads.
/// @unchecked Sendable: libcrypto's key (a raw pointer) never changes once made; signing and verifying only
/// read it
public final class RSAKey: @unchecked Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case generationFailed
        /// The text is not a PEM RSA key of the expected kind. Never carries the key text.
        case invalidPEM
        case noPrivateKey
        case signingFailed

        public var description: String {
            switch self {
            case .generationFailed: return "libcrypto could not generate an RSA key"
            case .invalidPEM: return "not a PEM-encoded RSA key"
            case .noPrivateKey: return "the RSA key has no private part"
            case .signingFailed: return "libcrypto could not sign with the RSA key"
            }
        }
    }

    private let pkey: UnsafeMutableRawPointer
    /// True when the key can sign (it was generated or read from a private-key PEM).
    public let hasPrivateKey: Bool

    private init(pkey: UnsafeMutableRawPointer, hasPrivateKey: Bool) {
        self.pkey = pkey
        self.hasPrivateKey = hasPrivateKey
    }

    deinit { ccrypto_rsa_free(pkey) }

    /// A fresh key; 2048 bits is what Google issues for service accounts.
    public static func generate(bits: Int = 2048) throws -> RSAKey {
        guard let p = ccrypto_rsa_generate(Int32(bits)) else { throw Failure.generationFailed }
        return RSAKey(pkey: p, hasPrivateKey: true)
    }

    /// Reads a private key: PKCS#8 (`BEGIN PRIVATE KEY`, as in Google's JSON keys) or PKCS#1.
    public convenience init(privateKeyPEM pem: String) throws {
        self.init(pkey: try Self.parsePEM(pem, with: ccrypto_rsa_private_from_pem), hasPrivateKey: true)
    }

    /// Reads a public key (`BEGIN PUBLIC KEY`).
    public convenience init(publicKeyPEM pem: String) throws {
        self.init(pkey: try Self.parsePEM(pem, with: ccrypto_rsa_public_from_pem), hasPrivateKey: false)
    }

    /// Hands the PEM text to one of the shim's parsers; nil from it means the text is not such a key.
    private static func parsePEM<Key>(_ pem: String, with parse: (UnsafePointer<CChar>, Int) -> Key?) throws -> Key {
        let bytes = Array(pem.utf8)
        guard let key = bytes.withUnsafeBufferPointer({ buf in
            buf.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buf.count) { parse($0, buf.count) }
            }
        }) else { throw Failure.invalidPEM }
        return key
    }

    /// The private key as unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), Google's key-file format.
    public func privateKeyPEM() throws -> String {
        guard hasPrivateKey else { throw Failure.noPrivateKey }
        return try pem(privatePart: true)
    }

    /// The public key as SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
    public func publicKeyPEM() throws -> String { try pem(privatePart: false) }

    private func pem(privatePart: Bool) throws -> String {
        let flag: Int32 = privatePart ? 1 : 0
        let needed = ccrypto_rsa_to_pem(pkey, flag, nil, 0)
        guard needed > 0 else { throw Failure.invalidPEM }
        var out = [CChar](repeating: 0, count: Int(needed))
        let n = out.withUnsafeMutableBufferPointer { ccrypto_rsa_to_pem(pkey, flag, $0.baseAddress, $0.count) }
        guard n == needed else { throw Failure.invalidPEM }
        return String(decoding: out.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (JWS `RS256`).
    public func signRS256<C: ContiguousBytes>(_ data: C) throws -> [UInt8] {
        guard hasPrivateKey else { throw Failure.noPrivateKey }
        var sig = [UInt8](repeating: 0, count: 1024)  // room for keys up to 8192 bits
        let n = data.withUnsafeBytes { bytes in
            sig.withUnsafeMutableBufferPointer { out in
                ccrypto_rs256_sign(pkey, bytes.baseAddress ?? UnsafeRawPointer(out.baseAddress!), bytes.count, out.baseAddress, out.count)
            }
        }
        guard n > 0 else { throw Failure.signingFailed }
        return Array(sig[0..<n])
    }

    /// True only for a valid RS256 signature of `data` by this key (or its private counterpart).
    public func verifyRS256<C: ContiguousBytes>(signature: [UInt8], of data: C) -> Bool {
        guard !signature.isEmpty else { return false }
        return data.withUnsafeBytes { bytes in
            signature.withUnsafeBufferPointer { sig in
                ccrypto_rs256_verify(pkey, bytes.baseAddress ?? UnsafeRawPointer(sig.baseAddress!), bytes.count, sig.baseAddress, sig.count) == 1
            }
        }
    }
}

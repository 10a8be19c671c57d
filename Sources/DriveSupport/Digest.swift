import CCrypto
import Foundation

/// A streaming message digest (libcrypto). Drive reports md5Checksum, sha1Checksum and
/// sha256Checksum as lowercase hex.
public struct Digest: ~Copyable {
    public enum Kind: Int32, Sendable { case md5 = 0, sha1 = 1, sha256 = 2 }

    private var ctx: UnsafeMutableRawPointer?

    public init(_ kind: Kind) {
        guard let ctx = ccrypto_digest_new(kind.rawValue) else { fatalError("libcrypto cannot create a \(kind) digest") }
        self.ctx = ctx
    }

    deinit { if let ctx { ccrypto_digest_free(ctx) } }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = ccrypto_digest_update(ctx, base, bytes.count)
    }

    public mutating func update<C: ContiguousBytes>(_ data: C) {
        data.withUnsafeBytes { update($0) }
    }

    /// The digest, as raw bytes. Consumes the digest.
    public consuming func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        let n = ccrypto_digest_final(ctx, &out)
        ctx = nil
        precondition(n > 0, "libcrypto digest failed")
        return Array(out[0..<Int(n)])
    }

    public consuming func hexDigest() -> String { Hex.encode(finalize()) }

    public static func hex<C: ContiguousBytes>(_ kind: Kind, of data: C) -> String {
        var d = Digest(kind)
        d.update(data)
        return d.hexDigest()
    }
}

public enum Hex {
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        precondition(ccrypto_random(&out, count) == 1, "libcrypto RAND_bytes failed")
        return out
    }

    /// A random string over Drive's ID alphabet `[A-Za-z0-9_-]` (also fine for `state` and PKCE verifiers).
    public static func token(length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        return String(decoding: bytes(length).map { alphabet[Int($0 & 63)] }, as: UTF8.self)
    }
}

public enum Base64URL {
    public static func encode<C: ContiguousBytes>(_ data: C) -> String {
        let b = data.withUnsafeBytes { Data($0) }.base64EncodedString()
        return String(b.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .trimmingCharacters(in: CharacterSet(charactersIn: "=")))
    }

    public static func decode(_ text: String) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }
}

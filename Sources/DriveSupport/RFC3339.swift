import Foundation

/// Drive's timestamps: RFC 3339, UTC. Kept as integer milliseconds since the epoch, because
/// Foundation's ISO 8601 style does not round-trip milliseconds. Drive accepts up to 9 fractional
/// digits on input and always answers with exactly 3 and `Z`.
public enum RFC3339 {
    /// `2020-08-29T05:18:45.000Z`
    public static func format(millis: Int64) -> String {
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let ms = Int(millis - seconds * 1000)
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        // Digits by hand: String(format:) was a third of the cost of rendering a file resource.
        var out: [UInt8] = []
        out.reserveCapacity(24)
        func put(_ value: Int, _ width: Int) {
            var digits = [UInt8](repeating: UInt8(ascii: "0"), count: width)
            var v = value
            var i = width - 1
            while i >= 0 { digits[i] = UInt8(ascii: "0") + UInt8(v % 10); v /= 10; i -= 1 }
            if v > 0 { out.append(contentsOf: String(value).utf8) } else { out.append(contentsOf: digits) }
        }
        put(Int(parts.tm_year) + 1900, 4); out.append(UInt8(ascii: "-"))
        put(Int(parts.tm_mon) + 1, 2); out.append(UInt8(ascii: "-"))
        put(Int(parts.tm_mday), 2); out.append(UInt8(ascii: "T"))
        put(Int(parts.tm_hour), 2); out.append(UInt8(ascii: ":"))
        put(Int(parts.tm_min), 2); out.append(UInt8(ascii: ":"))
        put(Int(parts.tm_sec), 2); out.append(UInt8(ascii: "."))
        put(ms, 3); out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; the time part may be omitted in queries
    /// (`allowDateOnly`), and a missing zone means UTC when `defaultUTC` is set (as in `q`).
    /// Fractions beyond milliseconds are truncated. Returns nil on anything malformed.
    public static func parseMillis(_ text: String, defaultUTC: Bool = false, allowDateOnly: Bool = false) -> Int64? {
        let s = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= s.count else { return nil }
            var v = 0
            for k in 0..<n {
                let c = s[i + k]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += n
            return v
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < s.count, s[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")),
              let day = digits(2) else { return nil }
        var hour = 0, minute = 0, second = 0, millis = 0
        var offsetSeconds = 0
        if i == s.count {
            guard allowDateOnly else { return nil }
        } else {
            guard i < s.count, s[i] == UInt8(ascii: "T") || s[i] == UInt8(ascii: "t") else { return nil }
            i += 1
            guard let h = digits(2), expect(UInt8(ascii: ":")), let m = digits(2), expect(UInt8(ascii: ":")),
                  let sec = digits(2) else { return nil }
            hour = h; minute = m; second = sec
            if i < s.count, s[i] == UInt8(ascii: ".") {
                i += 1
                var n = 0
                var frac = 0
                while i < s.count, s[i] >= 48, s[i] <= 57 {
                    if n < 3 { frac = frac * 10 + Int(s[i] - 48) }
                    n += 1
                    i += 1
                }
                guard n >= 1, n <= 9 else { return nil }
                if n < 3 { for _ in n..<3 { frac *= 10 } }
                millis = frac
            }
            if i == s.count {
                guard defaultUTC else { return nil }
            } else if s[i] == UInt8(ascii: "Z") || s[i] == UInt8(ascii: "z") {
                i += 1
            } else if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                let sign = s[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = digits(2), expect(UInt8(ascii: ":")), let om = digits(2), oh < 24, om < 60 else { return nil }
                offsetSeconds = sign * (oh * 3600 + om * 60)
            } else {
                return nil
            }
            guard i == s.count else { return nil }
        }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let epoch = timegm(&parts)
        // Reject dates that timegm normalised (Feb 30 and the like).
        var check = tm()
        var t = epoch
        gmtime_r(&t, &check)
        guard check.tm_mday == Int32(day) || second == 60 else { return nil }
        return (Int64(epoch) - Int64(offsetSeconds)) * 1000 + Int64(millis)
    }
}

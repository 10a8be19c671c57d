import Foundation

/// A parsed `fields` partial-response selector: `a,b/c,files(id,name),*`, spaces allowed,
/// parentheses nested. `b/c` is shorthand for `b(c)`.
struct FieldSelection: Equatable {
    /// `*` at this level: every member.
    var all = false
    /// Selected members; nil means the member whole.
    var members: [String: FieldSelection?] = [:]

    struct Invalid: Error, Equatable { var token: String }

    var error: GoogleError { GoogleError.invalidParameter("fields", "Invalid field selection") }

    static func parse(_ text: String) throws -> FieldSelection {
        var p = Parser(chars: Array(text))
        let sel = try p.selection()
        p.skipSpaces()
        guard p.i == p.chars.count else { throw Invalid(token: String(p.chars[p.i...])) }
        return sel
    }

    mutating func merge(_ name: String, _ sub: FieldSelection?) {
        if let existing = members[name] {
            guard let existing, let sub else { members[name] = .some(nil); return }
            var merged = existing
            merged.all = merged.all || sub.all
            for (k, v) in sub.members { merged.merge(k, v) }
            members[name] = merged
        } else {
            members[name] = .some(sub)
        }
    }

    struct Parser {
        let chars: [Character]
        var i = 0

        mutating func skipSpaces() { while i < chars.count, chars[i] == " " || chars[i] == "\t" || chars[i] == "\n" { i += 1 } }

        mutating func name() throws -> String {
            skipSpaces()
            var s = ""
            while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == "*" || chars[i] == "@" || chars[i] == "." || chars[i] == "-" {
                s.append(chars[i]); i += 1
            }
            guard !s.isEmpty else { throw Invalid(token: i < chars.count ? String(chars[i...]) : "") }
            guard s == "*" || !s.contains("*") else { throw Invalid(token: s) }
            return s
        }

        mutating func selection() throws -> FieldSelection {
            var sel = FieldSelection()
            repeat {
                try item(into: &sel)
                skipSpaces()
                guard i < chars.count, chars[i] == "," else { break }
                i += 1
            } while true
            return sel
        }

        /// path ("(" selection ")")?
        mutating func item(into sel: inout FieldSelection) throws {
            var path = [try name()]
            skipSpaces()
            while i < chars.count, chars[i] == "/" { i += 1; path.append(try name()); skipSpaces() }
            var sub: FieldSelection?
            if i < chars.count, chars[i] == "(" {
                i += 1
                sub = try selection()
                skipSpaces()
                guard i < chars.count, chars[i] == ")" else { throw Invalid(token: path.joined(separator: "/")) }
                i += 1
            }
            // Fold the path from the inside out: a/b(c) = a(b(c)).
            for component in path.dropFirst().reversed() {
                var wrap = FieldSelection()
                if component == "*" { guard sub == nil else { throw Invalid(token: component) }; wrap.all = true } else { wrap.merge(component, sub) }
                sub = wrap
            }
            if path[0] == "*" {
                guard sub == nil else { throw Invalid(token: "*") }
                sel.all = true
            } else {
                sel.merge(path[0], sub)
            }
        }
    }

    /// Checks every named member against a response schema; the first unknown one is reported.
    func validate(_ schema: [String: FieldSchema]) throws {
        for (name, sub) in members.sorted(by: { $0.key < $1.key }) {
            guard let member = schema[name] else { throw Invalid(token: name) }
            guard let sub else { continue }
            switch member {
            case .open: continue
            case .leaf: throw Invalid(token: sub.members.keys.sorted().first.map { "\(name)/\($0)" } ?? name)
            case .object(let inner): try sub.validate(inner)
            }
        }
    }

    /// The members this selection keeps at its top level, or nil for all of them (`*`).
    var topLevelNames: Set<String>? { all ? nil : Set(members.keys) }

    /// The members of `name` that this selection keeps, or nil when it keeps all of them
    /// (`*`, or `name` whole). Empty when `name` is not selected.
    func memberNames(of name: String) -> Set<String>? {
        if all { return nil }
        guard let entry = members[name] else { return [] }
        guard let sub = entry, !sub.all else { return nil }
        return Set(sub.members.keys)
    }

    /// Keeps the selected parts of a JSON value (arrays are filtered element by element).
    func apply(to value: Any) -> Any {
        if let array = value as? [Any] { return array.map { apply(to: $0) } }
        guard let dict = value as? [String: Any] else { return value }
        var out: [String: Any] = all ? dict : [:]
        for (name, sub) in members {
            guard let v = dict[name] else { continue }
            out[name] = sub.map { $0.apply(to: v) } ?? v
        }
        return out
    }
}

import DriveSupport
import Foundation

/// The `q` language of files.list: a lexer, a recursive-descent parser to an AST, and an evaluator.
///
/// Grammar (precedence `not` > `and` > `or`):
///   expr   := andExpr ("or" andExpr)*
///   andExpr:= unary ("and" unary)*
///   unary  := "not" unary | "(" expr ")" | term
///   term   := field op value | value "in" collection
///           | ("properties" | "appProperties") "has" "{" "key" "=" string "and" "value" "=" string "}"
/// Anything outside the documented terms is a 400 "Invalid Value" on `q`, as Google answers.
indirect enum DriveQuery: Equatable {
    case and(DriveQuery, DriveQuery)
    case or(DriveQuery, DriveQuery)
    case not(DriveQuery)
    case compare(field: Field, op: Op, value: Value)
    case inCollection(value: String, collection: Collection)
    /// `properties has { key='k' and value='v' }` (or `appProperties`).
    case has(appProperties: Bool, key: String, value: String)

    enum Field: String, Equatable {
        case name, fullText, mimeType, modifiedTime, viewedByMeTime, createdTime, trashed, starred,
             sharedWithMe, visibility, shortcutTargetId = "shortcutDetails.targetId", parents
    }
    enum Op: String, Equatable { case eq = "=", ne = "!=", lt = "<", le = "<=", gt = ">", ge = ">=", contains }
    enum Collection: String, Equatable { case parents, owners, writers, readers }
    enum Value: Equatable {
        case string(String)
        case bool(Bool)
        case time(Int64)
    }

    struct ParseError: Error, Equatable { var detail: String }

    static func parse(_ text: String) throws -> DriveQuery {
        var parser = Parser(tokens: try lex(text))
        let expr = try parser.expr()
        guard parser.atEnd else { throw ParseError(detail: "trailing input") }
        return expr
    }

    // MARK: Lexer

    enum Token: Equatable {
        case word(String)
        case string(String)
        case op(String)
        case open, close, openBrace, closeBrace
    }

    static func lex(_ text: String) throws -> [Token] {
        let s = Array(text.unicodeScalars)
        var i = 0
        var out: [Token] = []
        while i < s.count {
            let c = s[i]
            if c == " " || c == "\t" || c == "\n" || c == "\r" { i += 1; continue }
            if c == "(" { out.append(.open); i += 1; continue }
            if c == ")" { out.append(.close); i += 1; continue }
            if c == "{" { out.append(.openBrace); i += 1; continue }
            if c == "}" { out.append(.closeBrace); i += 1; continue }
            if c == "'" {
                i += 1
                var value = String.UnicodeScalarView()
                var closed = false
                while i < s.count {
                    let d = s[i]
                    if d == "\\" {
                        guard i + 1 < s.count else { throw ParseError(detail: "dangling escape") }
                        value.append(s[i + 1])
                        i += 2
                        continue
                    }
                    if d == "'" { closed = true; i += 1; break }
                    value.append(d)
                    i += 1
                }
                guard closed else { throw ParseError(detail: "unterminated string") }
                out.append(.string(String(value)))
                continue
            }
            if c == "=" { out.append(.op("=")); i += 1; continue }
            if c == "!" || c == "<" || c == ">" {
                if i + 1 < s.count, s[i + 1] == "=" { out.append(.op(String(c) + "=")); i += 2; continue }
                guard c != "!" else { throw ParseError(detail: "lone !") }
                out.append(.op(String(c))); i += 1; continue
            }
            if c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == "." {
                var word = String.UnicodeScalarView()
                while i < s.count, s[i].properties.isAlphabetic || ("0"..."9").contains(s[i]) || s[i] == "_" || s[i] == "." {
                    word.append(s[i]); i += 1
                }
                out.append(.word(String(word)))
                continue
            }
            throw ParseError(detail: "unexpected character \(c)")
        }
        return out
    }

    // MARK: Parser

    struct Parser {
        let tokens: [Token]
        var i = 0
        var atEnd: Bool { i == tokens.count }

        func peekKeyword(_ k: String) -> Bool {
            if i < tokens.count, case .word(let w) = tokens[i], w.lowercased() == k { return true }
            return false
        }

        mutating func expr() throws -> DriveQuery {
            var left = try andExpr()
            while peekKeyword("or") { i += 1; left = .or(left, try andExpr()) }
            return left
        }

        mutating func andExpr() throws -> DriveQuery {
            var left = try unary()
            while peekKeyword("and") { i += 1; left = .and(left, try unary()) }
            return left
        }

        mutating func unary() throws -> DriveQuery {
            guard i < tokens.count else { throw ParseError(detail: "unexpected end") }
            if peekKeyword("not") { i += 1; return .not(try unary()) }
            if tokens[i] == .open {
                i += 1
                let inner = try expr()
                guard i < tokens.count, tokens[i] == .close else { throw ParseError(detail: "missing )") }
                i += 1
                return inner
            }
            return try term()
        }

        mutating func next() throws -> Token {
            guard i < tokens.count else { throw ParseError(detail: "unexpected end") }
            defer { i += 1 }
            return tokens[i]
        }

        mutating func term() throws -> DriveQuery {
            let first = try next()
            if case .string(let value) = first {
                guard case .word(let kw) = try next(), kw == "in" else { throw ParseError(detail: "expected in") }
                guard case .word(let coll) = try next(), let collection = Collection(rawValue: coll) else {
                    throw ParseError(detail: "unknown collection")
                }
                return .inCollection(value: value, collection: collection)
            }
            if case .word(let w) = first, w == "properties" || w == "appProperties" {
                guard case .word("has") = try next(), try next() == .openBrace,
                      case .word("key") = try next(), try next() == .op("="), case .string(let key) = try next(),
                      case .word(let and) = try next(), and.lowercased() == "and",
                      case .word("value") = try next(), try next() == .op("="), case .string(let value) = try next(),
                      try next() == .closeBrace else {
                    throw ParseError(detail: "bad has term")
                }
                return .has(appProperties: w == "appProperties", key: key, value: value)
            }
            guard case .word(let fieldName) = first, let field = Field(rawValue: fieldName), field != .parents else {
                throw ParseError(detail: "unknown field")
            }
            // A bare `sharedWithMe` (Google's own examples write `sharedWithMe and trashed = false`)
            // stands for `sharedWithMe = true`.
            if field == .sharedWithMe, atEnd || tokens[i] == .close || peekKeyword("and") || peekKeyword("or") {
                return .compare(field: field, op: .eq, value: .bool(true))
            }
            let opToken = try next()
            let op: Op
            switch opToken {
            case .op(let o): op = Op(rawValue: o)!
            case .word("contains"): op = .contains
            default: throw ParseError(detail: "expected operator")
            }
            let valueToken = try next()
            switch field {
            case .name, .mimeType:
                guard [.eq, .ne, .contains].contains(op), case .string(let v) = valueToken else { throw ParseError(detail: "bad name term") }
                return .compare(field: field, op: op, value: .string(v))
            case .fullText:
                guard op == .contains, case .string(let v) = valueToken else { throw ParseError(detail: "bad fullText term") }
                return .compare(field: field, op: op, value: .string(v))
            case .createdTime, .modifiedTime, .viewedByMeTime:
                guard op != .contains, case .string(let v) = valueToken,
                      let ms = RFC3339.parseMillis(v, defaultUTC: true, allowDateOnly: true) else {
                    throw ParseError(detail: "bad time term")
                }
                return .compare(field: field, op: op, value: .time(ms))
            case .trashed, .starred, .sharedWithMe:
                guard op == .eq || op == .ne, case .word(let w) = valueToken, w == "true" || w == "false" else {
                    throw ParseError(detail: "bad boolean term")
                }
                // Google refuses `sharedWithMe = false` with its usual 400 invalid (drive-behaviours §2.5).
                if field == .sharedWithMe, op == .eq, w == "false" { throw ParseError(detail: "sharedWithMe = false") }
                return .compare(field: field, op: op, value: .bool(w == "true"))
            case .visibility, .shortcutTargetId:
                guard op == .eq || op == .ne, case .string(let v) = valueToken else { throw ParseError(detail: "bad term") }
                return .compare(field: field, op: op, value: .string(v))
            case .parents:
                throw ParseError(detail: "unknown field")
            }
        }
    }

    // MARK: Evaluation

    /// What a query needs to know about the world beyond the item.
    struct Context {
        var rootId: String
        var userEmail: String
        /// The user's access to an item (owners, roles, `sharedWithMe`); nil: every item is the
        /// user's own.
        var access: ((DriveItem) -> ItemAccess?)? = nil

        func accessTo(_ item: DriveItem) -> ItemAccess {
            guard item.owner != nil || item.driveId != nil, let access else { return .own }
            return access(item) ?? .own
        }
    }

    func matches(_ item: DriveItem, _ ctx: Context) -> Bool {
        switch self {
        case .and(let a, let b): return a.matches(item, ctx) && b.matches(item, ctx)
        case .or(let a, let b): return a.matches(item, ctx) || b.matches(item, ctx)
        case .not(let a): return !a.matches(item, ctx)
        case .has(let app, let key, let value):
            return (app ? item.appProperties : item.properties)?[key] == value
        case .inCollection(let value, let collection):
            switch collection {
            case .parents: return item.parent != nil && item.parent == (value == "root" ? ctx.rootId : value)
            case .owners, .writers, .readers:
                let me = value == "me" || value.lowercased() == ctx.userEmail.lowercased()
                let access = ctx.accessTo(item)
                guard let owner = access.owner else { return me }
                // Another user's item: its owner is in every collection; the user is a writer or
                // a reader by the role shared with them, never an owner.
                if value.lowercased() == owner.lowercased() { return true }
                switch collection {
                case .owners, .parents: return false
                case .writers: return me && access.canEdit
                case .readers: return me
                }
            }
        case .compare(let field, let op, let value):
            switch (field, value) {
            case (.name, .string(let v)):
                switch op {
                case .eq: return item.name.lowercased() == v.lowercased()
                case .ne: return item.name.lowercased() != v.lowercased()
                default: return DriveQuery.tokenPrefixMatch(v, in: item.name)
                }
            case (.fullText, .string(let v)):
                return DriveQuery.fullTextMatch(v, in: item.name + "\n" + (item.description ?? ""))
            case (.mimeType, .string(let v)):
                switch op {
                case .eq: return item.mimeType == v
                case .ne: return item.mimeType != v
                default: return item.mimeType.contains(v)
                }
            case (.createdTime, .time(let t)): return DriveQuery.compare(item.createdTime, op, t)
            case (.modifiedTime, .time(let t)): return DriveQuery.compare(item.modifiedTime, op, t)
            case (.viewedByMeTime, .time(let t)):
                guard let v = item.viewedByMeTime else { return op == .ne }
                return DriveQuery.compare(v, op, t)
            case (.trashed, .bool(let b)): return (item.trashed == b) == (op == .eq)
            case (.starred, .bool(let b)): return (item.starred == b) == (op == .eq)
            case (.sharedWithMe, .bool(let b)): return (ctx.accessTo(item).isSharedWithMe == b) == (op == .eq)
            case (.visibility, .string(let v)): return (v == "limited") == (op == .eq)
            case (.shortcutTargetId, .string(let v)): return (item.shortcutTargetId == v) == (op == .eq)
            default: return false
            }
        }
    }

    static func compare(_ a: Int64, _ op: Op, _ b: Int64) -> Bool {
        switch op {
        case .eq: return a == b
        case .ne: return a != b
        case .lt: return a < b
        case .le: return a <= b
        case .gt: return a > b
        case .ge: return a >= b
        case .contains: return false
        }
    }

    private static func isWordChar(_ c: Character) -> Bool { c.isLetter || c.isNumber }

    /// `name contains`: the value must start at the beginning of the name or of a word in it
    /// (`HelloWorld` matches `Hello`, not `World`), case-insensitively.
    static func tokenPrefixMatch(_ value: String, in name: String) -> Bool {
        let v = Array(value.lowercased())
        let n = Array(name.lowercased())
        guard !v.isEmpty else { return true }
        guard v.count <= n.count else { return false }
        for start in 0...(n.count - v.count) where start == 0 || !isWordChar(n[start - 1]) {
            if Array(n[start..<(start + v.count)]) == v { return true }
        }
        return false
    }

    /// `fullText contains`: whole words (or a `"quoted phrase"`), case-insensitively; `_` counts as a space.
    static func fullTextMatch(_ value: String, in text: String) -> Bool {
        var v = value.lowercased().replacingOccurrences(of: "_", with: " ")
        let isPhrase = v.count >= 2 && v.hasPrefix("\"") && v.hasSuffix("\"")
        if isPhrase { v = String(v.dropFirst().dropLast()) }
        let t = Array(text.lowercased().replacingOccurrences(of: "_", with: " "))
        func occurs(_ needle: [Character]) -> Bool {
            guard !needle.isEmpty, needle.count <= t.count else { return needle.isEmpty }
            for start in 0...(t.count - needle.count) where start == 0 || !isWordChar(t[start - 1]) {
                let end = start + needle.count
                if Array(t[start..<end]) == needle, end == t.count || !isWordChar(t[end]) { return true }
            }
            return false
        }
        if isPhrase { return occurs(Array(v)) }
        let words = v.split(whereSeparator: { !isWordChar($0) }).map { Array($0) }
        return !words.isEmpty && words.allSatisfy(occurs)
    }
}

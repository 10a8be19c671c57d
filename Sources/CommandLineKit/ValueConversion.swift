/// What is wrong with an option's value, as the end of the parser's message ("expected ...").
public struct ValueProblem: Error, Equatable {
    public let text: String
    public init(_ text: String) { self.text = text }
}

/// How an option's text becomes a typed value: one function that converts the text or says what is
/// wrong with it. As an `OptionSpec`'s `validate` it makes the parser refuse a bad value with the
/// option's name (`invalid value '70000' for '--port': expected an integer in 0...65535`); the
/// program then converts the accepted text with the same function, so the rule lives in one place.
public struct ValueConversion<Value>: Sendable {
    public let convert: @Sendable (String) -> Result<Value, ValueProblem>

    public init(_ convert: @escaping @Sendable (String) -> Result<Value, ValueProblem>) { self.convert = convert }

    /// The problem with `text`, nil when it converts (an `OptionSpec`'s `validate`).
    public func problem(with text: String) -> String? {
        if case .failure(let problem) = convert(text) { return problem.text }
        return nil
    }

    /// The value of a text the parser accepted (checked by `problem(with:)`); a text it did not is
    /// a programming error.
    public func value(ofAccepted text: String) -> Value {
        switch convert(text) {
        case .success(let value): return value
        case .failure(let problem): preconditionFailure("'\(text)' was not checked: \(problem.text)")
        }
    }

    /// The same text, its value transformed (a limit's 0 as "no limit").
    public func map<T>(_ transform: @escaping @Sendable (Value) -> T) -> ValueConversion<T> {
        let convert = self.convert
        return ValueConversion<T> { convert($0).map(transform) }
    }
}

extension ValueConversion where Value == String {
    /// Any text but the empty one; `what` names what it should be ("a host").
    public static func nonEmpty(_ what: String) -> ValueConversion {
        ValueConversion { $0.isEmpty ? .failure(ValueProblem("expected \(what)")) : .success($0) }
    }

    /// Any text.
    public static var text: ValueConversion { ValueConversion { .success($0) } }
}

extension ValueConversion where Value == Int {
    /// A decimal integer in `range`.
    public static func integer(in range: ClosedRange<Int>) -> ValueConversion {
        ValueConversion { text in
            guard let n = Int(text), range.contains(n) else {
                return .failure(ValueProblem("expected an integer in \(range.lowerBound)...\(range.upperBound)"))
            }
            return .success(n)
        }
    }
}

extension ValueConversion where Value == Double {
    /// A finite number in `range`, or above its lower bound when `openBelow` (a rate that must not
    /// be 0: `(0, 1000000]`). `what` says what it counts ("requests per second").
    public static func number(in range: ClosedRange<Double>, openBelow: Bool = false, what: String = "") -> ValueConversion {
        ValueConversion { text in
            guard let x = Double(text), x.isFinite, range.contains(x), !(openBelow && x == range.lowerBound) else {
                let bounds = "\(openBelow ? "(" : "[")\(format(range.lowerBound)), \(format(range.upperBound))]"
                return .failure(ValueProblem("expected a number\(what.isEmpty ? "" : " of " + what) in \(bounds)"))
            }
            return .success(x)
        }
    }

    private static func format(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }
}

extension ValueConversion where Value: RawRepresentable & CaseIterable & Sendable, Value.RawValue == String {
    /// One of the type's raw values.
    public static var choice: ValueConversion {
        ValueConversion { text in
            if let value = Value(rawValue: text) { return .success(value) }
            let names = Value.allCases.map(\.rawValue)
            let list = names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names.last! : names.joined()
            return .failure(ValueProblem("expected \(list)"))
        }
    }
}

extension OptionSpec {
    /// An option whose value is checked by `conversion` as it is parsed.
    public static func value<V>(
        _ long: String, short: Character? = nil, valueName: String, repeatable: Bool = false, help: String,
        conversion: ValueConversion<V>
    ) -> OptionSpec {
        .value(long, short: short, valueName: valueName, repeatable: repeatable, help: help,
               validate: { conversion.problem(with: $0) })
    }
}

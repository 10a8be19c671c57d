/// The children of one folder in default listing order: creation `seq`, then id (a total order,
/// so that a page token can name the exact place to resume). A page of a big folder is found by
/// binary search instead of by sorting the folder: files.list of `'X' in parents` costs
/// O(log n + page) per page, not O(n log n).
///
/// Inserting or removing moves the tail of one array (a memmove: microseconds for 100k children).
struct ChildList: Sequence {
    struct Entry {
        var seq: Int64
        var id: String
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// The first position whose entry sorts after `(seq, id)`.
    func position(after seq: Int64, _ id: String) -> Int {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let e = entries[mid]
            if e.seq < seq || (e.seq == seq && e.id <= id) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The first position whose entry sorts at or after `(seq, id)`.
    private func lowerBound(_ seq: Int64, _ id: String) -> Int {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let e = entries[mid]
            if e.seq < seq || (e.seq == seq && e.id < id) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    mutating func insert(seq: Int64, id: String) {
        let i = lowerBound(seq, id)
        if i < entries.count, entries[i].seq == seq, entries[i].id == id { return }
        entries.insert(Entry(seq: seq, id: id), at: i)
    }

    mutating func remove(seq: Int64, id: String) {
        let i = lowerBound(seq, id)
        if i < entries.count, entries[i].seq == seq, entries[i].id == id { entries.remove(at: i) }
    }

    subscript(_ i: Int) -> Entry { entries[i] }

    func makeIterator() -> LazyMapSequence<[Entry], String>.Iterator { entries.lazy.map(\.id).makeIterator() }
}

extension ChildList: ExpressibleByArrayLiteral {
    init(arrayLiteral elements: Entry...) {
        for e in elements { insert(seq: e.seq, id: e.id) }
    }
}

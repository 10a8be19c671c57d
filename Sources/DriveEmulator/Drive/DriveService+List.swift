import DriveSupport
import Foundation

/// One `orderBy` key.
struct SortKey: Equatable {
    enum Key: String { case folder, name, name_natural, createdTime, modifiedTime, modifiedByMeTime, viewedByMeTime,
                            sharedWithMeTime, quotaBytesUsed, starred, recency }
    var key: Key
    var descending: Bool

    /// `folder,modifiedTime desc,name`; an unknown key or modifier → 400 invalid on `orderBy`.
    static func parse(_ text: String) throws -> [SortKey] {
        try text.split(separator: ",").map { part in
            let words = part.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let first = words.first, let key = Key(rawValue: first), words.count <= 2 else {
                throw GoogleError.invalidValue(location: "orderBy")
            }
            if words.count == 2 {
                guard ["desc", "asc"].contains(words[1].lowercased()) else { throw GoogleError.invalidValue(location: "orderBy") }
            }
            return SortKey(key: key, descending: words.count == 2 && words[1].lowercased() == "desc")
        }
    }

    /// -1, 0, 1 in ascending order of this key.
    func compare(_ a: DriveItem, _ b: DriveItem) -> Int {
        func cmp<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : (x > y ? 1 : 0) }
        switch key {
        case .folder: return cmp(a.isFolder ? 0 : 1, b.isFolder ? 0 : 1)
        case .name:
            let c = cmp(a.name.lowercased(), b.name.lowercased())
            return c != 0 ? c : cmp(a.name, b.name)
        case .name_natural:
            switch a.name.compare(b.name, options: [.numeric, .caseInsensitive]) {
            case .orderedAscending: return -1
            case .orderedDescending: return 1
            case .orderedSame: return cmp(a.name, b.name)
            }
        case .createdTime: return cmp(a.createdTime, b.createdTime)
        case .modifiedTime, .modifiedByMeTime: return cmp(a.modifiedTime, b.modifiedTime)
        case .viewedByMeTime: return cmp(a.viewedByMeTime ?? 0, b.viewedByMeTime ?? 0)
        case .sharedWithMeTime: return cmp(a.sharedRole != nil ? a.sharedTime ?? 0 : 0, b.sharedRole != nil ? b.sharedTime ?? 0 : 0)
        case .quotaBytesUsed: return cmp(a.size ?? 0, b.size ?? 0)
        case .starred: return cmp(a.starred ? 0 : 1, b.starred ? 0 : 1)
        case .recency: return cmp(max(a.modifiedTime, a.viewedByMeTime ?? 0), max(b.modifiedTime, b.viewedByMeTime ?? 0))
        }
    }
}

/// files.list page tokens: opaque (`~!!~` + base64url), carrying where the next page starts — the
/// last item returned and its offset — and a digest of the query they belong to, so a token used
/// with another query is refused. The next page resumes after that item wherever it now sorts, so
/// items created or deleted between pages neither repeat nor vanish from the listing (the offset is
/// the fallback when that item is gone). In the default order (creation), the token also carries
/// the last item's `seq`, and the next page starts by binary search in the folder's `ChildList`.
struct ListPageToken: Equatable {
    var offset: Int
    var lastId: String
    var lastSeq: Int64?

    func encode(binding: String) -> String {
        let seqPart = lastSeq.map { ":\($0)" } ?? ""
        return "~!!~" + Base64URL.encode(Array("\(offset):\(lastId):\(binding)\(seqPart)".utf8))
    }

    static func decode(_ token: String, binding: String) -> ListPageToken? {
        guard token.hasPrefix("~!!~"), let data = Base64URL.decode(String(token.dropFirst(4))),
              let text = String(data: data, encoding: .utf8) else { return nil }
        let parts = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4, parts[2] == binding, let n = Int(parts[0]), n >= 0, n <= 1 << 40 else { return nil }
        var lastSeq: Int64?
        if parts.count == 4 {
            guard let seq = Int64(parts[3]) else { return nil }
            lastSeq = seq
        }
        return ListPageToken(offset: n, lastId: String(parts[1]), lastSeq: lastSeq)
    }

    static func binding(_ parts: [String]) -> String {
        String(Digest.hex(.sha256, of: Array(parts.joined(separator: "\u{0}").utf8)).prefix(16))
    }

    /// Where the page after this token starts in `sorted`.
    func start(in sorted: [DriveItem]) -> Int {
        if let i = sorted.firstIndex(where: { $0.id == lastId }) { return i + 1 }
        return min(offset, sorted.count)
    }
}

extension DriveService {
    func filesList(_ r: HTTPRequest) throws -> HTTPResponse {
        let defaults = try! FieldSelection.parse("kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType,resourceKey)")
        let sel = try selection(r, DriveSchema.fileList, defaults: defaults)
        var pageSize = try pageSizeParam(r, default: 100, maximum: 1000)
        let qText = r.param("q") ?? ""
        let query = try queryParam(r)
        let orderText = r.param("orderBy") ?? ""
        let order = orderText.isEmpty ? [] : try SortKey.parse(orderText)
        if !order.isEmpty, qText.contains("fullText") {
            throw GoogleError(400, reason: "badRequest",
                              message: "Sorting is not supported for queries with fullText terms. Results are always in descending relevance order.",
                              location: "orderBy", locationType: "parameter")
        }
        let corpora = r.param("corpora") ?? r.param("corpus") ?? "user"
        guard ["user", "domain", "drive", "allDrives", "default"].contains(corpora) else { throw GoogleError.invalidValue(location: "corpora") }
        // Which drives the answer may hold (drive-behaviours §3.9): `corpora=drive&driveId=X` that
        // drive only; `includeItemsFromAllDrives=true` My Drive and every shared drive; otherwise
        // My Drive only. Inconsistent combinations are refused in this order.
        let driveId = DriveService.driveIdParam(r)
        let allDrives = DriveService.supportsAllDrives(r)
        let includeAll = try includeItemsFromAllDrives(r)
        if (corpora == "drive") != (driveId != nil) { throw DriveService.driveIdRequiresDriveCorpora }
        if corpora == "drive" || corpora == "allDrives", !includeAll { throw DriveService.includeItemsRequired }
        if includeAll, !allDrives { throw DriveService.supportsAllDrivesRequired }
        if let driveId { _ = try store.read { s in try DriveService.requireDrive(s, driveId, allDrives: allDrives) } }
        let inScope: (DriveItem) -> Bool
        if let driveId { inScope = { $0.driveId == driveId } } else if includeAll { inScope = { _ in true } } else { inScope = { $0.driveId == nil } }
        let spaces = Set((r.param("spaces") ?? "drive").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        guard spaces.isSubset(of: ["drive", "appDataFolder", "photos"]), !spaces.isEmpty else { throw GoogleError.invalidValue(location: "spaces") }
        var bound = [qText, orderText, corpora, spaces.sorted().joined(separator: ",")]
        if driveId != nil || includeAll { bound += [driveId ?? "", includeAll ? "all" : ""] }
        let binding = ListPageToken.binding(bound)
        var resume: ListPageToken?
        if let token = r.param("pageToken"), !token.isEmpty {
            guard let t = ListPageToken.decode(token, binding: binding) else { throw GoogleError.invalidValue(location: "pageToken") }
            resume = t
        }

        if let query, DriveService.parentTermCount(query) > limits.maxParentTerms { throw ListingLimits.queryTooComplex }
        let members = (sel ?? defaults).memberNames(of: "files")
        // Google's short pages when `parents` is selected (drive-behaviours §3.5a).
        if members == nil || members?.contains("parents") == true { pageSize = min(pageSize, ListingLimits.parentsPageCap) }

        let name = query.flatMap(DriveService.requiredName)
        // The parents every match must have one of (`'A' in parents or 'B' in parents …` at the
        // top of an `and` chain), and those whose children this answer leaves out (the quirk).
        let group = query.flatMap(DriveService.requiredParents) ?? []
        let droppedRaw = quirks.droppedParents(group)
        let (page, next, rootId) = store.read { s -> ([(DriveItem, ItemAccess)], ListPageToken?, String) in
            guard spaces.contains("drive") else { return ([], nil, s.rootId) }
            let ctx = DriveQuery.Context(rootId: s.rootId, userEmail: user.emailAddress, access: { s.access($0) })
            let inScope: (DriveItem) -> Bool = { inScope($0) && s.isVisible($0) }
            let parents = DriveService.unique(group.map(s.resolve))
            let dropped = Set(droppedRaw.map(s.resolve))
            // Folder listings in the default order: a page straight from the folders' ChildLists.
            if order.isEmpty, name == nil, !parents.isEmpty, resume == nil || resume?.lastSeq != nil {
                let lists = parents.filter { !dropped.contains($0) }
                let (page, next) = DriveService.childPage(s, parents: lists, query: query!, ctx: ctx, pageSize: pageSize, resume: resume,
                                                          include: inScope)
                return (page.map { ($0, s.access($0) ?? .own) }, next, s.rootId)
            }
            // Otherwise the candidates are the items of that name (`name = 'x'` at the top of an
            // `and` chain), the children of those parents, or every item.
            let candidates: [DriveItem]
            if let name {
                candidates = s.items(named: name)
            } else if !parents.isEmpty {
                candidates = parents.flatMap { s.children(of: $0) }
            } else {
                candidates = Array(s.data.items.values)
            }
            let matches = candidates.filter {
                $0.parent != nil && inScope($0) && !dropped.contains($0.parent ?? "") && (query?.matches($0, ctx) ?? true)
            }
            let sorted = matches.sorted { a, b in
                for key in order {
                    let c = key.compare(a, b)
                    if c != 0 { return key.descending ? c > 0 : c < 0 }
                }
                return a.seq != b.seq ? a.seq < b.seq : a.id < b.id
            }
            let offset = resume?.start(in: sorted) ?? 0
            let page = Array(sorted[offset..<min(sorted.count, offset + pageSize)])
            var next: ListPageToken?
            if offset + pageSize < sorted.count, let last = page.last {
                next = ListPageToken(offset: offset + pageSize, lastId: last.id, lastSeq: order.isEmpty ? last.seq : nil)
            }
            return (page.map { ($0, s.access($0) ?? .own) }, next, s.rootId)
        }
        let res = resource(r, rootId: rootId)
        var body: [String: Any] = ["kind": "drive#fileList", "incompleteSearch": false,
                                   "files": page.map { res.render($0.0, only: members, access: $0.1) }]
        if let next { body["nextPageToken"] = next.encode(binding: binding) }
        return respond(200, body, sel)
    }

    /// One page of the children of `parents` that match `query`, in creation order (seq, then id:
    /// the folders' ChildLists merged), starting after the token's (seq, id); the next token when
    /// more match. Resuming by position, not by finding the last item again, keeps paging exact
    /// whatever the previous page left out.
    static func childPage(_ s: MetadataState, parents: [String], query: DriveQuery, ctx: DriveQuery.Context, pageSize: Int,
                          resume: ListPageToken?, include: (DriveItem) -> Bool = { _ in true }) -> ([DriveItem], ListPageToken?) {
        let lists = parents.compactMap { s.children[$0] }.filter { !$0.isEmpty }
        var cursors = lists.map { list in resume.map { list.position(after: $0.lastSeq ?? 0, $0.lastId) } ?? 0 }
        let offset = resume?.offset ?? 0
        var page: [DriveItem] = []
        page.reserveCapacity(min(pageSize, lists.reduce(0) { $0 + $1.count }))
        while true {
            // The list whose next entry sorts first (a linear scan: groups are tens of folders).
            var best = -1
            for k in lists.indices where cursors[k] < lists[k].count {
                if best < 0 { best = k; continue }
                let e = lists[k][cursors[k]], b = lists[best][cursors[best]]
                if e.seq < b.seq || (e.seq == b.seq && e.id < b.id) { best = k }
            }
            guard best >= 0 else { return (page, nil) }
            let entry = lists[best][cursors[best]]
            cursors[best] += 1
            guard let item = s.data.items[entry.id], include(item), query.matches(item, ctx) else { continue }
            if page.count == pageSize {
                let last = page[page.count - 1]
                return (page, ListPageToken(offset: offset + pageSize, lastId: last.id, lastSeq: last.seq))
            }
            page.append(item)
        }
    }

    /// The parents every match must have one of, when the query is `'X' in parents [and …]` or
    /// `('A' in parents or 'B' in parents …) [and …]`; nil when it does not say.
    static func requiredParents(_ q: DriveQuery) -> [String]? {
        switch q {
        case .inCollection(let value, .parents): return [value]
        case .or(let a, let b):
            guard let x = requiredParents(a), let y = requiredParents(b) else { return nil }
            return unique(x + y)
        case .and(let a, let b): return requiredParents(a) ?? requiredParents(b)
        default: return nil
        }
    }

    /// How many `'X' in parents` terms the query has, anywhere in it.
    static func parentTermCount(_ q: DriveQuery) -> Int {
        switch q {
        case .inCollection(_, .parents): return 1
        case .and(let a, let b), .or(let a, let b): return parentTermCount(a) + parentTermCount(b)
        case .not(let a): return parentTermCount(a)
        default: return 0
        }
    }

    static func unique(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        return ids.filter { seen.insert($0).inserted }
    }

    /// The name that every match must have, when the query is `name = 'x' [and …]`.
    static func requiredName(_ q: DriveQuery) -> String? {
        switch q {
        case .compare(.name, .eq, .string(let value)): return value
        case .and(let a, let b): return requiredName(a) ?? requiredName(b)
        default: return nil
        }
    }
}

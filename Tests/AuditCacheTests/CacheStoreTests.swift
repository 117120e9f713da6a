import AuditCache
import AuditPolicy
import AuditReport
import Foundation
import Testing

@Suite struct CacheStoreTests {
    let maxAge = [("Cache-Control", "max-age=600")]

    @Test("stored responses survive a restart: a new cache on the folder serves them")
    func restart() throws {
        let first = try CacheFixture()
        first.fetch(first.request(), headers: maxAge, body: "kept")
        let second = try CacheFixture(folder: first.folder)
        #expect(second.served(second.request())?.text == "kept")
        #expect(second.cache.usage.entries == 1)
    }

    @Test("the variants of a response that varies survive a restart")
    func variantsRestart() throws {
        let first = try CacheFixture()
        first.fetchEnglishAndFrench()
        let second = try CacheFixture(folder: first.folder)
        #expect(second.cache.usage.entries == 2)
        #expect(second.served(second.request(headers: [("Accept-Language", "fr")]))?.text == "bonjour")
        #expect(second.served(second.request(headers: [("Accept-Language", "en")]))?.text == "hello")
        second.cache.invalidate(url: "http://a.test/x")
        #expect(second.cache.usage.entries == 0)
    }

    @Test("a bound under 1 MiB keeps what fits, evicts the least recently used, and stores no body larger than itself")
    func smallBound() throws {
        let fixture = try CacheFixture(maximumBytes: 10_000)
        let body = String(repeating: "s", count: 1_500)
        for number in 0..<4 {
            fixture.clock.advance(1)
            #expect(fixture.fetch(fixture.request("http://a.test/\(number)"), headers: maxAge, body: body))
        }
        fixture.clock.advance(1)
        #expect(fixture.served(fixture.request("http://a.test/0"))?.text == body)
        for number in 4..<6 {
            fixture.clock.advance(1)
            fixture.fetch(fixture.request("http://a.test/\(number)"), headers: maxAge, body: body)
        }
        #expect(fixture.cache.usage.bytes <= 10_000)
        #expect(fixture.served(fixture.request("http://a.test/0")) != nil)
        #expect(fixture.served(fixture.request("http://a.test/5")) != nil)
        #expect(fixture.served(fixture.request("http://a.test/1")) == nil)
        #expect(
            !fixture.fetch(
                fixture.request("http://a.test/big"), headers: maxAge, body: String(repeating: "b", count: 10_001)))
    }

    @Test("the order of use survives a restart: the reopened cache evicts the least recently used entry first")
    func useOrderSurvivesRestart() throws {
        let first = try CacheFixture(maximumBytes: 1 << 20)
        let body = String(repeating: "u", count: 300_000)
        first.fetch(first.request("http://a.test/used"), headers: maxAge, body: body)
        first.fetch(first.request("http://a.test/unused"), headers: maxAge, body: body)
        // A use is kept on disk at most once a minute.
        first.clock.advance(61)
        #expect(first.served(first.request("http://a.test/used")) != nil)
        let second = try CacheFixture(maximumBytes: 1 << 20, folder: first.folder)
        for number in 0..<2 { second.fetch(second.request("http://a.test/\(number)"), headers: maxAge, body: body) }
        #expect(second.served(second.request("http://a.test/unused")) == nil)
        #expect(second.served(second.request("http://a.test/used")) != nil)
    }

    @Test("an entry file cut short (a crash mid-write, a full disk) is never served")
    func tornEntry() throws {
        let fixture = try CacheFixture()
        fixture.fetch(fixture.request(), headers: maxAge, body: String(repeating: "x", count: 100_000))
        let entries = fixture.folder + "/entries"
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: entries).first)
        let path = entries + "/" + name
        for length in [0, 1, 50_000, 100_000, 100_050] {
            let whole = try Data(contentsOf: URL(fileURLWithPath: path))
            defer { _ = FileManager.default.createFile(atPath: path, contents: whole) }
            _ = FileManager.default.createFile(atPath: path, contents: whole.prefix(length))
            #expect(fixture.served(fixture.request()) == nil, "cut at \(length)")
            guard case .send(let fill) = fixture.lookup(fixture.request()) else { continue }
            fill.finishWithoutStoring()
        }
        #expect(fixture.served(fixture.request())?.body.length == 100_000)
    }

    @Test("what a crash left in tmp/ is removed when a cache opens the folder alone")
    func temporaryFilesRemoved() throws {
        let folder = try CacheFixture().folder
        _ = FileManager.default.createFile(atPath: folder + "/tmp/left-by-a-crash", contents: Data("half".utf8))
        let reopened = try CacheFixture(folder: folder)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/tmp").isEmpty)
        #expect(reopened.served(reopened.request()) == nil)
    }

    @Test("a cache opened on a folder another has open leaves the entry the other is writing, which is stored whole")
    func sharedFolder() throws {
        let first = try CacheFixture()
        guard case .send(let fill) = first.lookup(first.request()) else {
            Issue.record("expected a send")
            return
        }
        let writer = try #require(
            fill.store(status: 200, headers: [RequestSnapshot.Header(name: "Cache-Control", value: "max-age=60")]))
        writer.append(Array("half ".utf8))
        let second = try CacheFixture(folder: first.folder)
        writer.append(Array("whole".utf8))
        #expect(writer.commit())
        #expect(first.served(first.request())?.text == "half whole")
        #expect(second.served(second.request())?.text == "half whole")
    }

    @Test("a folder is in use while a cache has it open, and not once every cache on it is gone")
    func inUse() throws {
        var folder = ""
        do {
            let fixture = try CacheFixture()
            folder = fixture.folder
            #expect(HTTPCache.isInUse(directory: folder))
            let second = try CacheFixture(folder: folder)
            #expect(HTTPCache.isInUse(directory: second.folder))
        }
        #expect(!HTTPCache.isInUse(directory: folder))
        #expect(!HTTPCache.isInUse(directory: folder + "/missing"))
    }

    @Test("over its size bound the cache evicts the least recently used entries")
    func eviction() throws {
        let fixture = try CacheFixture(maximumBytes: 1 << 20)
        let body = String(repeating: "b", count: 100_000)
        for number in 0..<8 {
            fixture.clock.advance(1)
            fixture.fetch(fixture.request("http://a.test/\(number)"), headers: maxAge, body: body)
        }
        // Entry 0 is used again, so entry 1 is the least recently used.
        fixture.clock.advance(1)
        #expect(fixture.served(fixture.request("http://a.test/0")) != nil)
        for number in 8..<12 {
            fixture.clock.advance(1)
            fixture.fetch(fixture.request("http://a.test/\(number)"), headers: maxAge, body: body)
        }
        let usage = fixture.cache.usage
        #expect(usage.bytes <= 1 << 20)
        #expect(fixture.served(fixture.request("http://a.test/0")) != nil)
        #expect(fixture.served(fixture.request("http://a.test/11")) != nil)
        #expect(fixture.served(fixture.request("http://a.test/1")) == nil)
    }

    @Test("a body over an eighth of the bound is not stored, and its partial file is removed")
    func oversizedBody() throws {
        let fixture = try CacheFixture(maximumBytes: 8 << 20)
        guard case .send(let fill) = fixture.lookup(fixture.request()) else {
            Issue.record("expected a send")
            return
        }
        let writer = try #require(
            fill.store(status: 200, headers: [RequestSnapshot.Header(name: "Cache-Control", value: "max-age=60")]))
        for _ in 0..<20 { writer.append([UInt8](repeating: 1, count: 64 * 1024)) }
        #expect(!writer.isOpen)
        #expect(!writer.commit())
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder + "/tmp").isEmpty)
    }

    @Test("entries lists what is stored; purge removes the matching URLs")
    func listAndPurge() throws {
        let fixture = try CacheFixture()
        for path in ["a", "b", "c"] { fixture.fetch(fixture.request("http://a.test/" + path), headers: maxAge) }
        #expect(Set(fixture.cache.entries().map(\.url)) == ["http://a.test/a", "http://a.test/b", "http://a.test/c"])
        #expect(fixture.cache.purge { $0.hasSuffix("/b") } == 1)
        #expect(Set(fixture.cache.entries().map(\.url)) == ["http://a.test/a", "http://a.test/c"])
    }

    @Test(
        "an entry another process purged or replaced is not served from memory: the index holds what the folder holds",
        arguments: ["purged", "replaced"])
    func changedByAnotherProcess(_ change: String) throws {
        let running = try CacheFixture()
        running.fetch(running.request(), headers: maxAge, body: "small, held in memory")
        #expect(running.served(running.request())?.text == "small, held in memory")
        let other = try CacheFixture(folder: running.folder)
        other.cache.purge { _ in true }
        // Replaced by a body of the same length: only the file's identity tells them apart.
        if change == "replaced" { other.fetch(other.request(), headers: maxAge, body: "SMALL, HELD IN MEMORY") }
        let served = running.served(running.request())?.text
        #expect(served == (change == "replaced" ? "SMALL, HELD IN MEMORY" : nil))
        #expect(running.cache.usage.entries == (change == "replaced" ? 1 : 0))
    }

    @Test("a changing request's answer drops the stored response of its URL")
    func invalidation() throws {
        let fixture = try CacheFixture()
        fixture.fetch(fixture.request(), headers: maxAge)
        fixture.cache.invalidate(url: "http://a.test/x")
        #expect(fixture.served(fixture.request()) == nil)
    }

    @Test("a size bound of no bytes and an unusable folder are clear errors")
    func errors() throws {
        for size in [0, -1] {
            #expect(throws: CacheError.invalidSize(size)) {
                try HTTPCache(directory: NSTemporaryDirectory() + UUID().uuidString, maximumBytes: size, isShared: true)
            }
        }
        #expect(CacheError.invalidSize(0).description == "cache size must be a positive number of bytes, got 0")
        let file = NSTemporaryDirectory() + UUID().uuidString
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        #expect {
            try HTTPCache(directory: file, maximumBytes: 1 << 20, isShared: true)
        } throws: { error in
            (error as? CacheError)?.description.hasPrefix("cache folder '\(file)' cannot be used: ") == true
        }
    }
}

import Foundation
import Testing

@testable import AuditPipeline

@Suite struct RequestIdentifierTests {
    @Test("ids handed out by one generator are all different, also from several threads")
    func idsAreUnique() async {
        let identifiers = RequestIdentifiers()
        let ids = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<4 { group.addTask { (0..<50_000).map { _ in identifiers.next() } } }
            var all: [UUID] = []
            for await part in group { all += part }
            return all
        }
        #expect(ids.count == 200_000)
        #expect(Set(ids).count == 200_000)
    }

    @Test("ids are version 4 UUIDs of the RFC 4122 variant")
    func idsAreVersionFour() {
        let identifiers = RequestIdentifiers()
        for _ in 0..<1_000 {
            let text = identifiers.next().uuidString
            let characters = Array(text)
            #expect(characters[14] == "4", "\(text)")
            #expect("89AB".contains(characters[19]), "\(text)")
        }
    }

    @Test("two generators (two processes) start from different ids")
    func generatorsDiffer() {
        let first = (0..<100).map { _ in RequestIdentifiers() }.map { $0.next() }
        #expect(Set(first).count == 100)
    }

    @Test("the mix is a bijection on a sample: distinct inputs give distinct outputs")
    func mixIsInjectiveOnSample() {
        let inputs: [UInt64] = Array(0..<10_000) + (0..<10_000).map { $0 << 40 } + [.max, .max - 1]
        #expect(Set(inputs.map(RequestIdentifiers.mix)).count == Set(inputs).count)
    }
}

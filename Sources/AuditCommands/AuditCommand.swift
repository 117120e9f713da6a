import ArgumentParser
public struct AuditCommand: ParsableCommand {
    public init() {}
    public func run() {}
}

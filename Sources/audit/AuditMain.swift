import AuditCommands

/// The `audit` executable: runs ``AuditCommand``.
@main
enum AuditMain {
    static func main() async {
        await AuditCommand.runFromCommandLine()
    }
}

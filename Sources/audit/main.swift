import AuditCommands

AuditCommand.main()

// Host apps import RequestAudit alone: policies, verdicts, records and redaction come with it.
@_exported import AuditPolicy
@_exported import AuditReport

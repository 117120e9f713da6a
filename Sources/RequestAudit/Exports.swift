// Host apps import RequestAudit alone: policies, verdicts, records, redaction, events and the
// pipeline come with it.
@_exported import AuditPipeline
@_exported import AuditPolicy
@_exported import AuditReport

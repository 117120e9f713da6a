import AuditReport

/// Takes each finished record somewhere else (an OpenTelemetry collector, a queue, a file), beside
/// the audit log. Set in ``PipelineConfiguration/recordExporters``.
///
/// ``export(_:)`` is called once per record, on the request's path: it must only hand the record
/// over (to a bounded queue, say) and return, never wait for the network or the disk.
public protocol AuditRecordExporter: Sendable {
    /// Takes `record`; returns at once.
    func export(_ record: AuditRecord)
    /// Sends what it still holds, within its own time limit; called by the pipeline's `shutdown()`.
    func shutdown() async
}

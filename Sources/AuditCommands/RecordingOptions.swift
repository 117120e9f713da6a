import ArgumentParser
import AuditProxy
import AuditReport

extension HARReplay.OnMiss: ExpressibleByArgument {}

/// `--record FILE.har` and `--replay FILE.har`: exchanges kept as HAR, and served back.
struct RecordingOptions: ParsableArguments {
    @Option(
        name: .customLong("record"),
        help: "Record every exchange a server answers to this HAR 1.2 file (secrets redacted; kept entries stay).")
    var recordPath: String?

    @Option(
        name: .customLong("record-max-body"),
        help: """
            The largest body a recording keeps (default 64M); a larger one is noted by its size (a request's \
            with its digest).
            """,
        transform: { try byteCount($0, option: "--record-max-body") })
    var recordMaximumBody = HARRecorder.defaultMaximumBodyBytes

    @Option(name: .customLong("replay"), help: "Answer the requests this HAR recording has responses for from it.")
    var replayPath: String?

    @Option(
        name: .customLong("on-miss"),
        help: """
            A request the recording has no response for: fail (504 with a JSON body), pass (to the server), or \
            record (to the server, and added to the recording, or to --record's file: new episodes).
            """)
    var onMiss = HARReplay.OnMiss.fail

    @Option(
        name: .customLong("replay-speed"),
        help: "How fast recorded streams are replayed: 1 at their pace (default), 2 twice as fast, 0 at once.")
    var replaySpeed = 1.0

    @Option(
        name: .customLong("match-ignore"),
        help: "A query parameter left out when matching requests to the recording (repeatable), e.g. a timestamp.")
    var matchIgnore: [String] = []

    /// Sets the recorder and the replay of `configuration`; a usage error when a file cannot be used.
    func configure(_ configuration: inout ProxyConfiguration, command: String) throws {
        guard replaySpeed >= 0, replaySpeed.isFinite else {
            throw ValidationError("--replay-speed: expected 0 or more, got \(replaySpeed)")
        }
        if onMiss.addsToRecording, replayPath == nil {
            throw ValidationError("--on-miss record adds to a recording: name it with --replay FILE.har")
        }
        do {
            // A miss recorded goes to --record's file, else to the recording replayed.
            if let path = recordPath ?? (onMiss.addsToRecording ? replayPath : nil) {
                configuration.recorder = try HARRecorder(path: path, maximumBodyBytes: recordMaximumBody)
            }
        } catch {
            CommandOutput.errorLine("\(command): --record: \(error.description)")
            throw ExitCode.validationFailure
        }
        do {
            if let replayPath {
                configuration.replay = try HARReplay(
                    path: replayPath, ignoring: Set(matchIgnore), onMiss: onMiss)
            }
        } catch {
            CommandOutput.errorLine("\(command): --replay: \(error.description)")
            throw ExitCode.validationFailure
        }
        configuration.replayMiss = onMiss
        configuration.replaySpeed = replaySpeed
    }

    /// What the start-up line says of `configuration`'s recording and replay, e.g. `, recording to
    /// new.har, replaying 12 responses from old.har (a miss: fail)`.
    static func note(_ configuration: ProxyConfiguration) -> String {
        var note = ""
        if let recorder = configuration.recorder { note += ", recording to \(recorder.path)" }
        if let replay = configuration.replay {
            note +=
                ", replaying \(plural(replay.count, "response")) from \(replay.path) "
                + "(a miss: \(configuration.replayMiss.rawValue))"
        }
        return note
    }
}

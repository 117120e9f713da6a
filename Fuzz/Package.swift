// swift-tools-version:6.2
// libFuzzer harnesses for RequestAudit. Build and run them with `Fuzz/run.sh` (see README, "Fuzzing").
import PackageDescription

// Every module is built with `-sanitize=fuzzer,address` (run.sh passes it), so libFuzzer sees the
// coverage of the parser and engine themselves, not just of the harness.
let package = Package(
    name: "RequestAuditFuzz",
    platforms: [.macOS(.v26)],
    dependencies: [.package(name: "RequestAudit", path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzRuleFiles",
            dependencies: [
                .product(name: "AuditPolicy", package: "RequestAudit"),
                .product(name: "AuditRegex", package: "RequestAudit"),
            ]),
        .executableTarget(
            name: "FuzzRequests",
            dependencies: [
                .product(name: "AuditPolicy", package: "RequestAudit"),
                .product(name: "AuditRegex", package: "RequestAudit"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

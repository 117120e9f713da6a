// swift-tools-version:6.2
// The benchmarks of RequestAudit: their own package, so that Hyperscan and the benchmark code never
// enter the library's dependency graph. Run them with `make bench` from the repository root.
import PackageDescription

let package = Package(
    name: "RequestAuditBenchmarks",
    platforms: [.macOS(.v26)],
    dependencies: [
        .package(name: "RequestAudit", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(name: "CHyperscan", pkgConfig: "libhs", providers: [.apt(["libhyperscan-dev"])]),
        .executableTarget(
            name: "audit-bench",
            dependencies: [
                "CHyperscan",
                .product(name: "RequestAudit", package: "RequestAudit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

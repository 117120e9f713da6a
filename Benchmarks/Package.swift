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
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
    ],
    targets: [
        .systemLibrary(name: "CHyperscan", pkgConfig: "libhs", providers: [.apt(["libhyperscan-dev"])]),
        // Hyperscan's loop over the subjects, in C, and the same as a program of its own.
        .target(name: "HyperscanLoop", dependencies: ["CHyperscan"], linkerSettings: [.linkedLibrary("hs")]),
        .executableTarget(name: "hyperscan-baseline", dependencies: ["HyperscanLoop"]),
        // Decisions in a function of their own, for callgrind to count (`make count`).
        .executableTarget(
            name: "decision-count", dependencies: [.product(name: "RequestAudit", package: "RequestAudit")]),
        // A server that answers after a fixed delay, in a process of its own (the interception benchmark's server).
        .executableTarget(
            name: "latency-server",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .executableTarget(
            name: "audit-bench",
            dependencies: [
                "CHyperscan",
                "HyperscanLoop",
                .product(name: "RequestAudit", package: "RequestAudit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The load client of the TLS interception benchmark.
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The gRPC load client of the audit authz benchmark.
                .product(name: "AuditAuthzGRPC", package: "RequestAudit"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

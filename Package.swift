// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "RequestAudit",
    // InlineArray needs macOS/iOS 26 at run time and a Swift 6.2 compiler (as does `weak let`).
    platforms: [.macOS(.v26), .iOS(.v26)],
    products: [
        .library(name: "AuditPolicy", targets: ["AuditPolicy"]),
        .library(name: "AuditRegex", targets: ["AuditRegex"]),
        .library(name: "AuditReport", targets: ["AuditReport"]),
        .library(name: "AuditPipeline", targets: ["AuditPipeline"]),
        .library(name: "RequestAudit", targets: ["RequestAudit"]),
        .library(name: "AuditProxy", targets: ["AuditProxy"]),
        .library(name: "AuditCache", targets: ["AuditCache"]),
        .library(name: "AuditTLS", targets: ["AuditTLS"]),
        .library(name: "AuditPrometheus", targets: ["AuditPrometheus"]),
        .library(name: "AuditAuthz", targets: ["AuditAuthz"]),
        .library(name: "AuditAuthzGRPC", targets: ["AuditAuthzGRPC"]),
        .library(name: "AuditOpenTelemetry", targets: ["AuditOpenTelemetry"]),
        .executable(name: "audit", targets: ["audit"]),
    ],
    traits: [
        // TLS interception (`audit proxy --intercept-tls`, `audit run`, `audit ca`, `audit env`) brings
        // swift-nio-ssl, swift-certificates and swift-crypto, two copies of BoringSSL to compile:
        // `make demo` builds `audit` without it to stay fast on a fresh machine.
        .trait(
            name: "TLSInterception",
            description: "TLS interception in audit proxy, and the audit run, ca and env commands"),
        // Envoy's gRPC ext_authz contract (`audit authz --grpc-listen`) brings grpc-swift, its HTTP/2
        // transport and swift-protobuf: `make demo` builds `audit` without it too.
        .trait(name: "EnvoyGRPC", description: "Envoy's gRPC ext_authz contract in audit authz (--grpc-listen)"),
        .default(enabledTraits: ["TLSInterception", "EnvoyGRPC"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CPCRE2",
            pkgConfig: "libpcre2-8",
            providers: [.apt(["libpcre2-dev"]), .brew(["pcre2"])]
        ),
        // zlib, brotli and zstd undo a recorded body's content coding (AuditContentCoding).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        .systemLibrary(
            name: "CBrotli", pkgConfig: "libbrotlidec", providers: [.apt(["libbrotli-dev"]), .brew(["brotli"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        .target(name: "AuditRegex", dependencies: ["CPCRE2", "AuditLocking", "CLiteralSearch"]),
        .target(name: "CLiteralSearch"),
        .target(name: "CByteClasses"),
        .target(name: "CSHA256"),
        .target(name: "AuditPolicy", dependencies: ["AuditRegex", "AuditLocking", "CByteClasses"]),
        .target(name: "AuditLocking"),
        .target(name: "AuditReport", dependencies: ["AuditPolicy", "AuditLocking", "CSHA256"]),
        .target(
            name: "AuditPipeline",
            dependencies: [
                "AuditReport", "AuditPolicy", "AuditLocking", .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        // RFC 9111 caching on disk, for cache rules in every front-end.
        .target(name: "AuditCache", dependencies: ["AuditPolicy", "AuditReport", "AuditLocking"]),
        // Undoes a recorded body's content coding (gzip, deflate, br, zstd), so that it is kept decoded and redacted.
        .target(name: "AuditContentCoding", dependencies: ["AuditReport", "CZlib", "CBrotli", "CZstd"]),
        .target(
            name: "RequestAudit",
            dependencies: [
                "AuditPipeline", "AuditReport", "AuditPolicy", "AuditLocking", "AuditCache",
                // Recording runs where the in-app interceptor does: on Linux.
                .target(name: "AuditContentCoding", condition: .when(platforms: [.linux])),
            ]),
        .target(
            name: "AuditProxy",
            dependencies: [
                "AuditPipeline", "AuditPolicy", "AuditReport", "AuditLocking", "AuditCache", "AuditContentCoding",
                .target(name: "AuditTLS", condition: .when(traits: ["TLSInterception"])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The certificate authority and TLS settings of TLS interception, in a module of their own
        // so that an app embedding RequestAudit never pulls swift-nio-ssl or swift-certificates in.
        .target(
            name: "AuditTLS",
            dependencies: [
                "AuditLocking",
                "AuditReport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Prometheus comes with its own product, so an app that embeds RequestAudit does not pull it in.
        .target(
            name: "AuditPrometheus",
            dependencies: [
                "AuditLocking",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // `audit authz`: the policy as a gateway's external authorization service (its HTTP contracts).
        .target(
            name: "AuditAuthz",
            dependencies: [
                "AuditPipeline", "AuditPolicy", "AuditReport", "AuditLocking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Envoy's gRPC ext_authz contract, in a module of its own so that nothing else pulls gRPC in.
        // Its protobuf code is generated from Protos/ by Scripts/generate-protos.sh and committed.
        .target(
            name: "AuditAuthzGRPC",
            dependencies: [
                "AuditAuthz", "AuditPipeline", "AuditPolicy", "AuditReport",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // OTLP export comes with its own product too; it needs nothing beyond Foundation.
        .target(
            name: "AuditOpenTelemetry",
            dependencies: [
                "AuditPipeline", "AuditReport", "AuditLocking", .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "AuditCommands",
            dependencies: [
                "AuditPipeline",
                "AuditProxy",
                "AuditPrometheus",
                "AuditOpenTelemetry",
                "AuditPolicy",
                "AuditReport",
                "AuditCache",
                "AuditRegex",
                "AuditAuthz",
                "AuditLocking",
                .target(name: "AuditTLS", condition: .when(traits: ["TLSInterception"])),
                .target(name: "AuditAuthzGRPC", condition: .when(traits: ["EnvoyGRPC"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "audit", dependencies: ["AuditCommands"]),
        .testTarget(name: "AuditRegexTests", dependencies: ["AuditRegex"]),
        .testTarget(name: "AuditPolicyTests", dependencies: ["AuditPolicy"], resources: [.copy("Fixtures")]),
        .testTarget(name: "AuditCommandsTests", dependencies: ["AuditCommands", "audit"]),
        .testTarget(
            name: "AuditReportTests", dependencies: ["AuditReport", "AuditPipeline", "CSHA256"], exclude: ["Fixtures"]),
        .testTarget(name: "AuditContentCodingTests", dependencies: ["AuditContentCoding", "AuditReport"]),
        .testTarget(name: "AuditPipelineTests", dependencies: ["AuditPipeline", "AuditLocking"]),
        .testTarget(name: "AuditCacheTests", dependencies: ["AuditCache", "AuditPolicy"]),
        .testTarget(
            name: "AuditAuthzTests",
            dependencies: [
                "AuditAuthz", "AuditPipeline", "AuditPolicy", "AuditReport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(
            name: "AuditTLSTests",
            dependencies: [
                "AuditTLS", .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .testTarget(
            name: "AuditOpenTelemetryTests",
            dependencies: ["AuditOpenTelemetry", "AuditPipeline", "AuditPolicy", "AuditReport"]),
        .testTarget(
            name: "AuditProxyTests",
            dependencies: [
                "AuditProxy", "AuditPipeline", "AuditPolicy", "AuditReport", "AuditTLS", "AuditCache",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .executableTarget(name: "AuditLoadDriver", dependencies: ["RequestAudit"], path: "Tests/AuditLoadDriver"),
        .testTarget(
            name: "RequestAuditTests", dependencies: ["RequestAudit", "AuditLocking", "AuditLoadDriver"],
            exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

// Strict memory safety for every library and the executable: pointer work is marked `unsafe` in a
// few small types (PCRE2Code and MatchSubject, the index's SubjectBytes, CandidateList and
// TokenHashes, JSONLineScanner, SHA256's hand-off to CSHA256, the log reader's read(2) and memchr,
// AuditContentCoding's ContentDecoder (zlib, brotli and zstd streams), the CA folder's rename(2),
// PlatformInternals), and `.ci/run` fails on any warning about it.
for target in package.targets
where (target.type == .regular || target.type == .executable) && target.path?.hasPrefix("Tests") != true
    && !target.name.hasPrefix("C")
    // AuditAuthzGRPC is mostly generated protobuf code, which swift-protobuf writes without `unsafe` marks.
    && target.name != "AuditAuthzGRPC"
{
    target.swiftSettings = (target.swiftSettings ?? []) + [.strictMemorySafety()]
}

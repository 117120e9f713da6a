#!/usr/bin/env bash
# Regenerates Sources/AuditAuthzGRPC/Generated from Protos/ (Envoy's ext_authz messages and service).
# The generated code is committed, so no build runs protoc: run this only after changing Protos/.
# Needs protoc (apt-get install protobuf-compiler) and the plugins protoc-gen-swift (swift-protobuf
# 1.39) and protoc-gen-grpc-swift-2 (grpc-swift-protobuf 2.4), found on PATH or in PLUGINS=DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
plugins=${PLUGINS:-}
swift_plugin=${plugins:+$plugins/}protoc-gen-swift
grpc_plugin=${plugins:+$plugins/}protoc-gen-grpc-swift-2
out=Sources/AuditAuthzGRPC/Generated
rm -rf "$out" && mkdir -p "$out"
protos=$(cd Protos && find . -name '*.proto' | sed 's|^\./||' | sort)
(cd Protos && protoc --plugin=protoc-gen-swift="$(command -v "$swift_plugin")" \
    --swift_out="../$out" --swift_opt=Visibility=Public,FileNaming=PathToUnderscores $protos)
(cd Protos && protoc --plugin=protoc-gen-grpc-swift="$(command -v "$grpc_plugin")" \
    --grpc-swift_out="../$out" \
    --grpc-swift_opt=Visibility=Public,FileNaming=PathToUnderscores,Client=true,Server=true \
    envoy/service/auth/v3/external_auth.proto)

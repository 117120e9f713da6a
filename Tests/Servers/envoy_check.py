"""An Envoy-shaped ext_authz gRPC client: sends CheckRequests to envoy.service.auth.v3.Authorization/Check
the way Envoy's ext_authz filter fills them, and prints each CheckResponse as one JSON line.

Usage: envoy_check.py HOST:PORT < cases.jsonl
Each input line: {"method", "scheme", "host", "path", "headers": {name: value}, "full": bool}; "full" populates
every field of the CheckRequest as Envoy does (peers with addresses and principals, context extensions, metadata,
TLS session, request time, protocol, size, body and raw body). Output per line: {"grpc": code, "allowed": bool,
"status": http status, "headers": {name: value}, "remove": [names], "body": text}.
Uses grpcio and the Envoy API messages of the xds-protos package, installed apart (pip install --target
/opt/request-audit/xds-protos --no-deps xds-protos, or XDS_PROTOS=DIR): it carries its own, older copy of the
opentelemetry protos, which would replace opentelemetry-proto's for the OTLP tests if installed beside it.
"""
import json
import os
import sys

sys.path.insert(0, os.environ.get("XDS_PROTOS", "/opt/request-audit/xds-protos"))

import grpc  # noqa: E402
from envoy.config.core.v3 import address_pb2, base_pb2  # noqa: E402
from envoy.service.auth.v3 import attribute_context_pb2, external_auth_pb2, external_auth_pb2_grpc  # noqa: E402
from google.protobuf import struct_pb2, timestamp_pb2  # noqa: E402


def check_request(case):
    http = attribute_context_pb2.AttributeContext.HttpRequest(
        id=case.get("id", "7f1c4e9a-3c55-4ab0-9f8e-0d6b2f1c9a11"),
        method=case["method"],
        path=case["path"],
        host=case["host"],
        scheme=case.get("scheme", "http"),
        protocol="HTTP/1.1",
        size=case.get("size", -1),
    )
    headers = {":authority": case["host"], ":method": case["method"], ":path": case["path"],
               ":scheme": case.get("scheme", "http")}
    headers.update(case.get("headers", {}))
    for name, value in headers.items():
        http.headers[name] = value
    attributes = attribute_context_pb2.AttributeContext(
        request=attribute_context_pb2.AttributeContext.Request(http=http))
    http = attributes.request.http  # the message inside, which the fields below change
    if case.get("full"):
        if "?" in case["path"]:
            http.query = case["path"].split("?", 1)[1]
        http.fragment = ""
        http.body = "name=value"
        http.raw_body = b"name=value"
        http.size = 10
        for name, value in headers.items():
            http.header_map.headers.append(base_pb2.HeaderValue(key=name, raw_value=value.encode()))
        attributes.request.time.CopyFrom(timestamp_pb2.Timestamp(seconds=1_795_000_000, nanos=123_000_000))
        attributes.source.CopyFrom(attribute_context_pb2.AttributeContext.Peer(
            address=address_pb2.Address(socket_address=address_pb2.SocketAddress(address="10.0.0.7", port_value=51234)),
            service="agent.default.svc.cluster.local",
            principal="spiffe://cluster.local/ns/default/sa/agent",
            certificate="-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            labels={"app": "agent"}))
        attributes.destination.CopyFrom(attribute_context_pb2.AttributeContext.Peer(
            address=address_pb2.Address(socket_address=address_pb2.SocketAddress(address="10.0.0.9", port_value=8080)),
            principal="spiffe://cluster.local/ns/shop/sa/shop"))
        attributes.context_extensions["virtual_host"] = "shop"
        attributes.metadata_context.filter_metadata["envoy.filters.http.jwt_authn"].CopyFrom(
            struct_pb2.Struct(fields={"sub": struct_pb2.Value(string_value="agent-7")}))
        attributes.route_metadata_context.filter_metadata["route"].CopyFrom(
            struct_pb2.Struct(fields={"name": struct_pb2.Value(string_value="shop-route")}))
        attributes.tls_session.sni = case["host"]
    return external_auth_pb2.CheckRequest(attributes=attributes)


def main():
    channel = grpc.insecure_channel(sys.argv[1])
    check = external_auth_pb2_grpc.AuthorizationStub(channel).Check
    for line in sys.stdin:
        if not line.strip():
            continue
        response = check(check_request(json.loads(line)), timeout=10)
        kind = response.WhichOneof("http_response")
        if kind == "ok_response":
            out = {"grpc": response.status.code, "allowed": True, "status": 200,
                   "headers": {h.header.key: h.header.value for h in response.ok_response.headers},
                   "remove": list(response.ok_response.headers_to_remove), "body": ""}
        else:
            denied = getattr(response, kind)
            out = {"grpc": response.status.code, "allowed": False, "status": denied.status.code,
                   "headers": {h.header.key: h.header.value for h in denied.headers}, "remove": [],
                   "body": denied.body}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

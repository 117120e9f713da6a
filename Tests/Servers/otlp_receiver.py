"""An OTLP/HTTP receiver for the tests: decodes each request with the official OpenTelemetry
protobuf definitions (PyPI opentelemetry-proto) and appends one JSON line per log record to OUTPUT
(/v1/logs), and one per metric data point to OUTPUT.metrics (/v1/metrics).

    python3 otlp_receiver.py PORT OUTPUT
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

PORT, OUTPUT = int(sys.argv[1]), sys.argv[2]


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/metrics":
            return self.metrics(body)
        request = logs_service_pb2.ExportLogsServiceRequest()
        try:
            if self.headers.get("Content-Type", "").startswith("application/x-protobuf"):
                request.ParseFromString(body)
            else:
                json_format.Parse(body, request)
        except Exception as error:  # a payload the definitions reject is a test failure
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(error).encode())
            return
        with open(OUTPUT, "a") as output:
            for resource_logs in request.resource_logs:
                service = {a.key: value(a.value) for a in resource_logs.resource.attributes}.get("service.name")
                for scope_logs in resource_logs.scope_logs:
                    for record in scope_logs.log_records:
                        line = {a.key: value(a.value) for a in record.attributes}
                        line.update(service=service, body=record.body.string_value,
                                    severity=record.severity_text, time=record.time_unix_nano)
                        output.write(json.dumps(line) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def metrics(self, body):
        request = metrics_service_pb2.ExportMetricsServiceRequest()
        try:
            json_format.Parse(body, request)
        except Exception as error:
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(error).encode())
            return
        with open(OUTPUT + ".metrics", "a") as output:
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        kind = metric.WhichOneof("data")
                        for point in getattr(metric, kind).data_points:
                            line = {"metric": metric.name, "kind": kind,
                                    "attributes": {a.key: value(a.value) for a in point.attributes}}
                            if kind == "histogram":
                                line.update(count=point.count, sum=point.sum)
                            else:
                                line.update(value=point.as_int if point.WhichOneof("value") == "as_int" else point.as_double)
                            output.write(json.dumps(line) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", PORT), Receiver)
print("ready", flush=True)
server.serve_forever()

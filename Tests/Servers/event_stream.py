"""A server-sent event stream for the interception tests.

GET /events?count=N&interval=MS answers `text/event-stream` with N events, one every MS
milliseconds, each sent as its own HTTP/1.1 chunk as soon as it is due.
Usage: python3 event_stream.py PORT
"""
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class EventStream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        url = urlparse(self.path)
        if url.path != "/events":
            self.send_error(404)
            return
        query = parse_qs(url.query)
        count = int(query.get("count", ["10"])[0])
        interval = int(query.get("interval", ["100"])[0]) / 1000
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for number in range(count):
            if number:
                time.sleep(interval)
            event = f"id: {number}\ndata: event {number}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *arguments):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), EventStream).serve_forever()

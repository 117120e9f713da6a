"""An HTTP/1.1 server that answers each path with a fixed response written byte for byte, including
responses a strict client may refuse, for the tests that compare what a caller sees directly and
through RequestAudit. Each connection serves one request and closes. Listens on 127.0.0.1 and, when
the machine has IPv6 loopback, on ::1, at the same port.

Two paths answer by how often they were asked, for the cache tests (KEY is any name; the query's
`cc` is the answers' Cache-Control, `max-age=1` when absent):
- /counted/KEY: "answer N" on the Nth request;
- /then-fails/KEY: "first answer" on the first request, 500 "server error" (no Cache-Control) after it.
Usage: python3 raw_responses.py PORT
"""
import email.utils
import socket
import sys
import threading
import urllib.parse

from socket_server import read_head, request_path, serve_forever

RESPONSES = {
    b"/ok": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Kind: plain\r\nConnection: close\r\n\r\nok",
    b"/bare-lf": b"HTTP/1.1 200 OK\nContent-Length: 2\nX-Kind: bare-lf\nConnection: close\n\nok",
    b"/no-space": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Kind:no-space\r\nConnection: close\r\n\r\nok",
    b"/latin1": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Kind: caf\xe9\r\nConnection: close\r\n\r\nok",
    b"/no-reason": b"HTTP/1.1 200\r\nContent-Length: 2\r\nX-Kind: no-reason\r\nConnection: close\r\n\r\nok",
    b"/trailing-space": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Kind: spaced  \r\nConnection: close\r\n\r\nok",
    b"/folded": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Kind: one\r\n two\r\nConnection: close\r\n\r\nok",
    b"/repeated": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Kind: a\r\nX-Kind: b\r\nConnection: close\r\n\r\nok",
    b"/short-body": b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nok",
    b"/no-length": b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
    b"/http10": b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"/status-999": b"HTTP/1.1 999 Odd\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    b"/garbage": b"this is not HTTP\r\n\r\n",
}
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

_counts = {}
_counts_lock = threading.Lock()


def counted(request):
    """The answer of /counted/KEY and /then-fails/KEY, or None for another path."""
    parts = request.split(b" ")
    target = parts[1] if len(parts) > 1 else b"/"
    path, _, query = target.partition(b"?")
    if not (path.startswith(b"/counted/") or path.startswith(b"/then-fails/")):
        return None
    with _counts_lock:
        _counts[path] = _counts.get(path, 0) + 1
        count = _counts[path]
    control = urllib.parse.parse_qs(query.decode()).get("cc", ["max-age=1"])[0].encode()
    if path.startswith(b"/counted/"):
        status, body = b"200 OK", b"answer %d" % count
    elif count == 1:
        status, body = b"200 OK", b"first answer"
    else:
        status, body, control = b"500 Internal Server Error", b"server error", None
    head = b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n" % len(body)
    if control is not None:
        head += b"Cache-Control: " + control + b"\r\n"
    date = email.utils.formatdate(usegmt=True).encode()
    return head + b"Date: " + date + b"\r\nConnection: close\r\n\r\n" + body


def serve(connection):
    with connection:
        read = read_head(connection)
        if read is None:
            return
        connection.sendall(counted(read[0]) or RESPONSES.get(request_path(read[0]), NOT_FOUND))
        try:
            connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass


if __name__ == "__main__":
    serve_forever(int(sys.argv[1]), serve, also_ipv6=True)

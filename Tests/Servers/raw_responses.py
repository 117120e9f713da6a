"""An HTTP/1.1 server that answers each path with a fixed response written byte for byte, including
responses a strict client may refuse, for the tests that compare what a caller sees directly and
through RequestAudit. Each connection serves one request and closes. Listens on 127.0.0.1 and, when
the machine has IPv6 loopback, on ::1, at the same port.

Two paths answer by how often they were asked, for the cache tests (KEY is any name; the query's
`cc` is the answers' Cache-Control, `max-age=1` when absent):
- /counted/KEY: "answer N" on the Nth request;
- /then-fails/KEY: "first answer" on the first request, 500 "server error" (no Cache-Control) after it.

/coded/NAME answers a JSON body that holds a credential (`access_token`) with the content coding NAME
names (CODED lists them: gzip, two gzip members, zlib and raw deflate, br, br then gzip, zstd, and gzip
that is not gzip); /coded/gzip-stream sends a chunked gzip body in three pieces 200 ms apart, each
flushed so that it decodes on its own.
/read-body reads the request's body to its end (Content-Length or chunked) before it answers "read N
bytes", for uploads whose answer must not come before their end.
Usage: python3 raw_responses.py PORT
"""
import email.utils
import gzip
import socket
import sys
import threading
import time
import urllib.parse
import zlib

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
CODED_BODY = b'{"access_token": "sk-live-7f3a9c2e5b", "items": ["compressed", "compressed", "compressed"]}'
# The brotli coding of BR_BODY and the zstd coding of ZSTD_BODY, made with libbrotlienc (quality 11)
# and the zstd command: Python's standard library has neither coder.
BR_BODY = (b'{"access_token": "sk-live-7f3a9c2e5b", "items": ["compressed with br", "compressed with br", '
           b'"compressed with br", "compressed with br", "compressed with br", "compressed with br"]}')
BR = b"\x1b\xb4\x00\x88\x2d\x0a\xec\x66\xe2\x04\xe1\x6b\x6a\x7a\x97\x91\x3e\x5a\x47\xa8\x74\x3d\x59\x4d\x66\x5a\xf4\x8f\x22\xd8\x88\xa6\x45\x64\x66\xb6\x26\x8b\x4e\x57\x80\xb4\x48\xcb\x57\x5b\x70\xc8\x09\xc0\xad\x45\x94\x07\x40\x09\x51\xf1\xd2\x25\x38\x3d\x5d\x7c\x2c\xac\x2f\x65\x2b\x57\x9a\x73\x63\x21\x80\xa1\x74\xec\x1f\xeb\xdc\x60\x40\x3f"
ZSTD_BODY = b'{"access_token": "sk-live-7f3a9c2e5b", "note": "compressed with zstd"}'
ZSTD = (b"\x28\xb5\x2f\xfd\x04\x58\x31\x02\x00" + ZSTD_BODY + b"\x57\x0c\xe9\x3c")


def raw_deflate(data):
    coder = zlib.compressobj(wbits=-15)
    return coder.compress(data) + coder.flush()


# NAME: (Content-Encoding, the body as sent)
CODED = {
    b"gzip": (b"gzip", gzip.compress(CODED_BODY)),
    b"x-gzip": (b"x-gzip", gzip.compress(CODED_BODY)),
    b"gzip-members": (b"gzip", gzip.compress(CODED_BODY[:40]) + gzip.compress(CODED_BODY[40:])),
    b"deflate": (b"deflate", zlib.compress(CODED_BODY)),
    b"raw-deflate": (b"deflate", raw_deflate(CODED_BODY)),
    b"br": (b"br", BR),
    b"br-gzip": (b"br, gzip", gzip.compress(BR)),
    b"zstd": (b"zstd", ZSTD),
    b"not-gzip": (b"gzip", CODED_BODY),
}


def coded(path):
    """The answer of /coded/NAME, or None for another path."""
    if not path.startswith(b"/coded/") or path[len(b"/coded/"):] not in CODED:
        return None
    coding, body = CODED[path[len(b"/coded/"):]]
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: " + coding
            + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)


def gzip_stream(connection):
    """/coded/gzip-stream: three JSON lines in one gzip stream, each piece flushed and sent 200 ms apart."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Encoding: gzip\r\n"
                       b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    coder = zlib.compressobj(wbits=31)
    for index in range(3):
        if index:
            time.sleep(0.2)
        piece = coder.compress(b'{"line": %d}\n' % index) + coder.flush(zlib.Z_SYNC_FLUSH)
        if index == 2:
            piece += coder.flush()
        connection.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
    connection.sendall(b"0\r\n\r\n")


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


def read_body(connection, request, rest):
    """The answer of /read-body, once the request's body is read to its end."""
    headers = dict(line.split(b":", 1) for line in request.split(b"\r\n")[1:] if b":" in line)
    headers = {name.strip().lower(): value.strip() for name, value in headers.items()}
    def more():
        chunk = connection.recv(65536)
        if not chunk:
            raise EOFError
        return chunk
    received, count = rest, 0
    try:
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            while True:
                while b"\r\n" not in received:
                    received += more()
                size_line, _, received = received.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                while len(received) < size + 2:
                    received += more()
                received, count = received[size + 2:], count + size
                if size == 0:
                    break
        else:
            length = int(headers.get(b"content-length", b"0"))
            count = len(received)
            while count < length:
                count += len(more())
    except EOFError:
        return None
    text = b"read %d bytes" % count
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(text) + text


def serve(connection):
    with connection:
        read = read_head(connection)
        if read is None:
            return
        path = request_path(read[0])
        if path == b"/coded/gzip-stream":
            gzip_stream(connection)
        elif path == b"/read-body":
            answer = read_body(connection, *read)
            if answer is not None:
                connection.sendall(answer)
        else:
            connection.sendall(counted(read[0]) or coded(path) or RESPONSES.get(path, NOT_FOUND))
        try:
            connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass


if __name__ == "__main__":
    serve_forever(int(sys.argv[1]), serve, also_ipv6=True)

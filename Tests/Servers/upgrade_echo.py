"""An HTTP/1.1 server that accepts any `Upgrade` request with 101 Switching Protocols and then
echoes every byte it receives, for the proxy's upgrade pass-through test; and answers a request for
`/raw` with the bytes of the request as it arrived (head and body, chunked framing included), so a
test sees exactly what the proxy sent.
Usage: python3 upgrade_echo.py PORT [CERTIFICATE KEY] (with a certificate, over TLS)
"""
import sys

from socket_server import read_head, request_path, serve_forever


def serve(connection):
    with connection:
        read = read_head(connection)
        if read is None:
            return
        request, rest = read
        if request_path(request) == b"/raw":
            lower = request.lower()
            if b"chunked" in lower:
                while not rest.endswith(b"0\r\n\r\n"):
                    chunk = connection.recv(4096)
                    if not chunk:
                        break
                    rest += chunk
            raw = request + b"\r\n\r\n" + rest
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n"
                + b"Content-Length: " + str(len(raw)).encode() + b"\r\n\r\n" + raw)
            return
        if b"\nupgrade:" not in request.lower():
            connection.sendall(b"HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        connection.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
        if rest:
            connection.sendall(rest)
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                return
            connection.sendall(chunk)


def main():
    certificate = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else None
    serve_forever(int(sys.argv[1]), serve, certificate=certificate)


if __name__ == "__main__":
    main()

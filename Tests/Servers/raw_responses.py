"""An HTTP/1.1 server that answers each path with a fixed response written byte for byte, including
responses a strict client may refuse, for the tests that compare what a caller sees directly and
through RequestAudit. Each connection serves one request and closes. Listens on 127.0.0.1 and, when
the machine has IPv6 loopback, on ::1, at the same port.
Usage: python3 raw_responses.py PORT
"""
import socket
import sys
import threading

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


def serve(connection):
    with connection:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = connection.recv(4096)
            if not chunk:
                return
            head += chunk
        parts = head.split(b" ")
        path = parts[1].split(b"?")[0] if len(parts) > 1 else b"/"
        connection.sendall(RESPONSES.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
        try:
            connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def accept(listener):
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()


def listen(family, host, port):
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    listener.bind((host, port))
    listener.listen(64)
    return listener


def main():
    port = int(sys.argv[1])
    listeners = [listen(socket.AF_INET, "127.0.0.1", port)]
    try:
        listeners.append(listen(socket.AF_INET6, "::1", port))
    except OSError:
        pass
    for listener in listeners[1:]:
        threading.Thread(target=accept, args=(listener,), daemon=True).start()
    accept(listeners[0])


if __name__ == "__main__":
    main()

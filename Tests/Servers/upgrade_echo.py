"""An HTTP/1.1 server that accepts any `Upgrade` request with 101 Switching Protocols and then
echoes every byte it receives, for the proxy's upgrade pass-through test.
Usage: python3 upgrade_echo.py PORT
"""
import socket
import sys
import threading


def serve(connection):
    with connection:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = connection.recv(4096)
            if not chunk:
                return
            head += chunk
        request, _, rest = head.partition(b"\r\n\r\n")
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
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(sys.argv[1])))
    listener.listen(64)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()


if __name__ == "__main__":
    main()

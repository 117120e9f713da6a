"""What the tests' raw socket servers share: reading a request head, and serving each connection on a
thread of its own, on 127.0.0.1 and, when asked and the machine has IPv6 loopback, on ::1 at the same port.
"""
import socket
import ssl
import threading


def read_head(connection):
    """The request head (without its blank line) and the bytes read after it; None if the client left first."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = connection.recv(4096)
        if not chunk:
            return None
        head += chunk
    request, _, rest = head.partition(b"\r\n\r\n")
    return request, rest


def request_path(request):
    """The path of a request head's target, without its query."""
    parts = request.split(b" ")
    return parts[1].split(b"?")[0] if len(parts) > 1 else b"/"


def _listen(family, host, port):
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    listener.bind((host, port))
    listener.listen(64)
    return listener


def _accept(listener, serve, tls):
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=_serve, args=(connection, serve, tls), daemon=True).start()


def _serve(connection, serve, tls):
    if tls is not None:
        try:
            connection = tls.wrap_socket(connection, server_side=True)
        except (ssl.SSLError, OSError):
            connection.close()
            return
    serve(connection)


def serve_forever(port, serve, also_ipv6=False, certificate=None):
    """Calls `serve(connection)` for every connection to `port`, each on a thread; never returns. With
    `certificate` (a certificate file and its key file), each connection speaks TLS first."""
    tls = None
    if certificate is not None:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(*certificate)
    listeners = [_listen(socket.AF_INET, "127.0.0.1", port)]
    if also_ipv6:
        try:
            listeners.append(_listen(socket.AF_INET6, "::1", port))
        except OSError:
            pass
    for listener in listeners[1:]:
        threading.Thread(target=_accept, args=(listener, serve, tls), daemon=True).start()
    _accept(listeners[0], serve, tls)

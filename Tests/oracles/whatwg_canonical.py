#!/usr/bin/env python3
"""The oracle for RequestAudit's canonical URLs: ada-url (the WHATWG URL Standard's reference
parser), plus the additions RequestAudit documents (docs/rule-language.md), written here on their
own from ada's components.

Reads one JSON string a line (a URL as sent) on standard input; writes one JSON value a line: the
canonical URL, null when the standard calls the URL invalid, or "non-special" for schemes other
than http, https, ws, wss and ftp (which keep their bytes).
"""
import ipaddress
import json
import re
import sys

import ada_url

SPECIAL = {"http", "https", "ws", "wss", "ftp"}
UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def escapes_fixed(text):
    """Escapes of unreserved bytes decoded, the others upper-cased."""
    def replace(match):
        byte = int(match.group(1), 16)
        return chr(byte) if byte in UNRESERVED else "%" + match.group(1).upper()
    return ESCAPE.sub(replace, text)


SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def canonical(text):
    cleaned = re.sub(r"[\t\n\r]", "", text.strip("".join(chr(c) for c in range(0x21))))
    scheme = SCHEME.match(cleaned)
    if scheme is not None and scheme.group(1).lower() not in SPECIAL:
        return "non-special"
    try:
        url = ada_url.URL(text)
    except ValueError:
        return None
    scheme = url.protocol[:-1]
    if scheme not in SPECIAL:
        return "non-special"
    host = url.hostname
    if host.startswith("["):
        mapped = ipaddress.IPv6Address(host[1:-1]).ipv4_mapped
        if mapped is not None:
            host = str(mapped)
    else:
        host = host.rstrip(".") or "."
    port = ":" + url.port if url.port else ""
    segments = url.pathname.split("/")[1:]
    kept = [s for i, s in enumerate(segments) if s or i == len(segments) - 1]
    path = escapes_fixed("/" + "/".join(kept))
    without_fragment = url.href.split("#", 1)[0]
    query = ""
    if "?" in without_fragment:
        query = "?" + escapes_fixed(without_fragment.split("?", 1)[1])
    return f"{scheme}://{host}{port}{path}{query}"


for line in sys.stdin:
    print(json.dumps(canonical(json.loads(line))), flush=False)

#!/usr/bin/env python3
"""Records the bundled sample HAR (policies/traffic/browsing-session.har).

Run with a local httpbin: `Tests/with-httpbin.sh python3 Tests/make-sample-traffic.py`.
Each request of a browsing and API session is really sent to the local httpbin, which stands in
for the sites (nothing leaves the machine); the HAR keeps the session's URLs and headers with the
status, sizes and timings httpbin really answered. Start times follow a 90-minute session schedule.
"""
import datetime, json, os, random, time, urllib.error, urllib.request

BASE = os.environ["HTTPBIN_URL"]
random.seed(20261121)
START = datetime.datetime(2026, 11, 20, 9, 0, 0, tzinfo=datetime.timezone.utc)

# (method, url, headers, httpbin endpoint standing in for the site)
SESSION = [
    ("GET", "https://www.example.org/", {}, "/html"),
    ("GET", "https://www.example.org/assets/site.css", {}, "/bytes/18000"),
    ("GET", "https://cdn.example.net/js/app.4f2a.js", {}, "/bytes/64000"),
    ("POST", "https://www.google-analytics.com/g/collect?v=2&tid=G-EX4MPLE&en=page_view", {}, "/anything"),
    ("GET", "https://news.example.com/2026/11/20/markets", {"Referer": "https://www.example.org/"}, "/html"),
    ("POST", "https://api.segment.io/v1/track", {"Content-Type": "application/json"}, "/anything"),
    ("GET", "https://www.rivalshop.com/", {}, "/html"),
    ("GET", "https://www.rivalshop.com/cart", {"Cookie": "session=3f9a1c"}, "/anything"),
    ("GET", "https://cdn.rival.net/img/banner.png", {}, "/image/png"),
    ("GET", "https://search.rival.com/search?q=trail%20running%20shoes", {}, "/anything"),
    ("GET", "https://www.rivalshop.com/p/4711", {}, "/anything"),
    ("GET", "https://m.rivalshop.com/p/982/reviews", {}, "/anything"),
    ("GET", "https://careers.rivalshop.com/jobs/berlin", {}, "/html"),
    ("GET", "https://www.rivalshop.com/press/2026-results.pdf", {}, "/bytes/52000"),
    ("GET", "https://api.rival.com/v2/prices?sku=4711", {"Accept": "application/json"}, "/json"),
    ("POST", "https://api.rival.com/v2/orders", {"Content-Type": "application/json"}, "/anything"),
    ("GET", "https://docs.example.com/guide/getting-started", {}, "/html"),
    ("GET", "https://api.example.com/v1/items?page=1", {"Authorization": "Bearer eyJhbGciOi.example.token"}, "/json"),
    ("GET", "https://api.example.com/v1/items?page=2", {"Authorization": "Bearer eyJhbGciOi.example.token"}, "/json"),
    ("POST", "https://api.example.com/v1/items", {"Content-Type": "application/json"}, "/anything"),
    ("DELETE", "https://api.example.com/v1/items/17", {}, "/anything"),
    ("POST", "https://shop.example.com/graphql", {"Content-Type": "application/json"}, "/anything"),
    ("GET", "https://api-js.mixpanel.com/track/?data=eyJldmVudCI6InZpZXcifQ", {}, "/anything"),
    ("POST", "https://plausible.io/api/event", {"Content-Type": "text/plain"}, "/anything"),
    ("GET", "https://mail.example.org/inbox", {}, "/html"),
    ("GET", "https://paypa1-secure.test/login?next=%2Faccount", {}, "/html"),
    ("GET", "https://account-pay-pal.example.net/verify", {}, "/html"),
    ("GET", "https://micros0ft-login.test/oauth2/authorize", {}, "/html"),
    ("GET", "https://appleid-unlock.test/", {}, "/html"),
    ("GET", "https://xn--pypal-4ve.com/signin", {}, "/html"),
    ("GET", "https://www.paypal.com/signin", {}, "/html"),
    ("GET", "http://dl.free-crack-downloads.test/setup.exe", {}, "/bytes/90000"),
    ("GET", "http://203.0.113.7/payload.exe", {}, "/bytes/70000"),
    ("GET", "http://intranet.example.com/login?user=ann&password=hunter2", {}, "/html"),
    ("POST", "https://pastebin.com/api/api_post.php", {"Content-Type": "application/x-www-form-urlencoded"}, "/anything"),
    ("PUT", "https://transfer.sh/quarterly-report.csv", {"Content-Length": "1800000"}, "/anything"),
    ("POST", "https://upload.example.com/files", {"Content-Length": "2500000"}, "/anything"),
    ("PUT", "https://upload.example.com/files/backup.tar", {"Content-Length": "73400320"}, "/anything"),
    ("PATCH", "https://upload.example.com/files/backup.tar", {"Content-Length": "1048576"}, "/anything"),
    ("GET", "https://www.example.org/missing-page", {}, "/status/404"),
    ("GET", "https://status.example.com/api/health", {}, "/status/204"),
    ("GET", "https://wiki.example.org/wiki/Stra%C3%9Fe", {}, "/html"),
    ("GET", "https://www.example.org/", {}, "/html"),
]

def har_headers(headers):
    return [{"name": k, "value": v} for k, v in headers.items()]

entries = []
offset = 0.0
for index, (method, url, headers, endpoint) in enumerate(SESSION * 2):
    offset += random.uniform(20, 110) if index else 0
    started = START + datetime.timedelta(seconds=offset)
    request = urllib.request.Request(BASE + endpoint, method=method, headers=dict(headers))
    if method in ("POST", "PUT", "PATCH"):
        request.data = b"x" * 64
    clock = time.perf_counter()
    try:
        with urllib.request.urlopen(request) as response:
            status, body, response_headers = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, body, response_headers = error.code, error.read(), dict(error.headers)
    elapsed = (time.perf_counter() - clock) * 1000
    entries.append({
        "startedDateTime": started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "time": round(elapsed, 3),
        "request": {
            "method": method, "url": url, "httpVersion": "HTTP/1.1", "headers": har_headers(headers),
            "queryString": [], "cookies": [], "headersSize": -1,
            "bodySize": int(headers.get("Content-Length", 64 if request.data else 0)),
        },
        "response": {
            "status": status, "statusText": "", "httpVersion": "HTTP/1.1",
            "headers": har_headers({k: v for k, v in response_headers.items() if k.lower() in ("content-type", "content-length")}),
            "cookies": [], "content": {"size": len(body), "mimeType": response_headers.get("Content-Type", "")},
            "redirectURL": "", "headersSize": -1, "bodySize": len(body),
        },
        "cache": {},
        "timings": {"send": 0, "wait": round(elapsed, 3), "receive": 0},
    })

har = {"log": {"version": "1.2", "creator": {"name": "RequestAudit make-sample-traffic.py", "version": "1"}, "entries": entries}}
path = os.path.join(os.path.dirname(__file__), "..", "policies", "traffic", "browsing-session.har")
with open(path, "w") as handle:
    json.dump(har, handle, indent=1)
    handle.write("\n")
print(f"wrote {len(entries)} entries to {os.path.normpath(path)}")

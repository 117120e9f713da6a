#!/usr/bin/env bash
# Runs a command with a real httpbin (under gunicorn) on 127.0.0.1, for the interception tests.
# Exports HTTPBIN_URL (base URL) and HTTPBIN_ACCESS_LOG (one line per request the server received),
# and EVENTS_URL: a server-sent event stream (Tests/Servers/event_stream.py).
set -euo pipefail

if ! python3 -c "import httpbin, gunicorn" 2>/dev/null; then
    echo "Installing httpbin and gunicorn with pip…"
    python3 -m pip install -q --root-user-action=ignore httpbin gunicorn
fi

work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m gunicorn --bind "127.0.0.1:$port" --workers 4 --worker-class gthread --threads 32 \
    --access-logfile "$work/access.log" --error-logfile "$work/error.log" --pid "$work/pid" \
    --chdir "$work" httpbin:app >"$work/server.log" 2>&1 &
server=$!
events_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$(dirname "$0")/Servers/event_stream.py" "$events_port" >"$work/events.log" 2>&1 &
events=$!
cleanup() {
    kill "$server" "$events" 2>/dev/null || true
    wait "$server" "$events" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/get', timeout=1); \
        urllib.request.urlopen('http://127.0.0.1:$events_port/events?count=1', timeout=1)" 2>/dev/null; then
        break
    fi
    sleep 0.2
done

export HTTPBIN_URL="http://127.0.0.1:$port"
export HTTPBIN_ACCESS_LOG="$work/access.log"
export EVENTS_URL="http://127.0.0.1:$events_port/events"
echo "httpbin on $HTTPBIN_URL"
"$@"

#!/usr/bin/env bash
# Runs a command with a real httpbin (under gunicorn) on 127.0.0.1, for the interception tests.
# Exports HTTPBIN_URL (base URL) and HTTPBIN_ACCESS_LOG (one line per request the server received),
# EVENTS_URL: a server-sent event stream (Tests/Servers/event_stream.py); UPGRADE_URL: a server that
# upgrades any request and echoes (Tests/Servers/upgrade_echo.py); RAW_URL and RAW6_URL (127.0.0.1 and ::1): fixed
# responses written byte for byte, strict clients' refusals included (Tests/Servers/raw_responses.py); and, when nginx is
# installed, NGINX_URL (plain) and NGINX_TLS_URL (TLS, certificate issued by the test CA in NGINX_CA) serving
# Tests/Servers/www plus a 300 MB file, big.bin, a git repository for dumb-HTTP clones (/repo.git) and a pip simple
# index (/simple/), and the same repository over git's smart HTTP at /smart/repo.git when fcgiwrap is installed; and
# NGINX_TLS_WRONG_HOST_URL, NGINX_TLS_EXPIRED_URL and NGINX_TLS_UNTRUSTED_URL, servers whose
# certificates a verifying client refuses (Tests/Servers/make-test-certificates.sh); UPGRADE_TLS_URL, the upgrade
# echo server over TLS with the test CA's certificate.
# The command gets a temporary directory of its own (TMPDIR), removed when it ends with whatever the
# tests left there: FoundationNetworking keeps a download's file, and a test killed midway keeps its
# scratch files.
set -euo pipefail

if ! python3 -c "import httpbin, gunicorn" 2>/dev/null; then
    echo "Installing httpbin and gunicorn with pip…"
    python3 -m pip install -q --root-user-action=ignore httpbin gunicorn
fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

work=$(mktemp -d)
mkdir "$work/tmp"
port=$(free_port)
python3 -m gunicorn --bind "127.0.0.1:$port" --workers 4 --worker-class gthread --threads 32 \
    --access-logfile "$work/access.log" --error-logfile "$work/error.log" --pid "$work/pid" \
    --chdir "$work" httpbin:app >"$work/server.log" 2>&1 &
server=$!
events_port=$(free_port)
python3 "$(dirname "$0")/Servers/event_stream.py" "$events_port" >"$work/events.log" 2>&1 &
events=$!
upgrade_port=$(free_port)
python3 "$(dirname "$0")/Servers/upgrade_echo.py" "$upgrade_port" >"$work/upgrade.log" 2>&1 &
upgrade=$!
raw_port=$(free_port)
python3 "$(dirname "$0")/Servers/raw_responses.py" "$raw_port" >"$work/raw.log" 2>&1 &
raw=$!
nginx=""
cleanup() {
    kill "$server" "$events" "$upgrade" "$raw" $nginx 2>/dev/null || true
    wait "$server" "$events" "$upgrade" "$raw" $nginx 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
if [ -x "$nginx_bin" ] && command -v openssl >/dev/null; then
    chmod 755 "$work"
    mkdir -p "$work/nginx/www"
    cp -r "$(dirname "$0")/Servers/www/." "$work/nginx/www/"
    truncate -s 300000000 "$work/nginx/www/big.bin"
    truncate -s 10000000 "$work/nginx/www/medium.bin"
    "$(dirname "$0")/Servers/make-test-certificates.sh" "$work/nginx/tls"
    "$(dirname "$0")/Servers/make-test-content.sh" "$work/nginx/www"
    nginx_port=$(free_port)
    nginx_tls_port=$(free_port)
    nginx_wrong_host_port=$(free_port)
    nginx_expired_port=$(free_port)
    nginx_untrusted_port=$(free_port)
    tls="$work/nginx/tls"
    # git's smart HTTP (git http-backend under fcgiwrap) at /smart/, when fcgiwrap is installed.
    smart=""
    fcgiwrap_pid=""
    if [ -x /usr/sbin/fcgiwrap ] && [ -x /usr/lib/git-core/git-http-backend ]; then
        /usr/sbin/fcgiwrap -s "unix:$work/fcgiwrap.sock" >"$work/fcgiwrap.log" 2>&1 &
        fcgiwrap_pid=$!
        for _ in $(seq 1 50); do [ -S "$work/fcgiwrap.sock" ] && break; sleep 0.1; done
        chmod 666 "$work/fcgiwrap.sock"
        smart="location ~ ^/smart(/.*)\$ { fastcgi_pass unix:$work/fcgiwrap.sock; include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend; fastcgi_param GIT_PROJECT_ROOT $work/nginx/www;
      fastcgi_param GIT_HTTP_EXPORT_ALL 1; fastcgi_param PATH_INFO \$1; }"
    fi
    # The same files with caching headers: fresh for a minute (/fresh/), to revalidate every time (/no-cache/), or
    # fresh for a second and then served stale while revalidated (/swr/); and gzip-coded for a client that takes it
    # (/gzip/).
    cache_locations="location /fresh/ { alias $work/nginx/www/; expires 60s; }
      location /no-cache/ { alias $work/nginx/www/; add_header Cache-Control no-cache; }
      location /swr/ { alias $work/nginx/www/; add_header Cache-Control \"max-age=1, stale-while-revalidate=600\"; }
      location /gzip/ { alias $work/nginx/www/; gzip on; gzip_min_length 0; gzip_types text/plain; }"
    cat >"$work/nginx/nginx.conf" <<CONF
daemon off; worker_processes 2; pid $work/nginx/nginx.pid; error_log $work/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log $work/nginx/access.log; keepalive_requests 100000;
  types { text/html html; text/plain txt; image/svg+xml svg; application/javascript js; }
  server { listen 127.0.0.1:$nginx_port; root $work/nginx/www; $cache_locations }
  server { listen 127.0.0.1:$nginx_tls_port ssl; root $work/nginx/www;
    ssl_certificate $tls/localhost.pem; ssl_certificate_key $tls/localhost-key.pem;
    $smart $cache_locations }
  server { listen 127.0.0.1:$nginx_wrong_host_port ssl; root $work/nginx/www;
    ssl_certificate $tls/other-host.pem; ssl_certificate_key $tls/other-host-key.pem; }
  server { listen 127.0.0.1:$nginx_expired_port ssl; root $work/nginx/www;
    ssl_certificate $tls/expired.pem; ssl_certificate_key $tls/expired-key.pem; }
  server { listen 127.0.0.1:$nginx_untrusted_port ssl; root $work/nginx/www;
    ssl_certificate $tls/untrusted.pem; ssl_certificate_key $tls/untrusted-key.pem; }
}
CONF
    "$nginx_bin" -c "$work/nginx/nginx.conf" -p "$work/nginx" >"$work/nginx/stdout.log" 2>&1 &
    nginx="$! $fcgiwrap_pid"
    export NGINX_URL="http://127.0.0.1:$nginx_port"
    export NGINX_TLS_URL="https://127.0.0.1:$nginx_tls_port"
    export NGINX_CA="$tls/testca.pem"
    export NGINX_TLS_WRONG_HOST_URL="https://127.0.0.1:$nginx_wrong_host_port"
    export NGINX_TLS_EXPIRED_URL="https://127.0.0.1:$nginx_expired_port"
    export NGINX_TLS_UNTRUSTED_URL="https://127.0.0.1:$nginx_untrusted_port"
    upgrade_tls_port=$(free_port)
    python3 "$(dirname "$0")/Servers/upgrade_echo.py" "$upgrade_tls_port" "$tls/localhost.pem" "$tls/localhost-key.pem" \
        >"$work/upgrade-tls.log" 2>&1 &
    nginx="$nginx $!"
    export UPGRADE_TLS_URL="https://127.0.0.1:$upgrade_tls_port/echo"
    export NGINX_ACCESS_LOG="$work/nginx/access.log"
fi

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
export UPGRADE_URL="http://127.0.0.1:$upgrade_port/echo"
export RAW_URL="http://127.0.0.1:$raw_port"
export RAW6_URL="http://[::1]:$raw_port"
echo "httpbin on $HTTPBIN_URL"
TMPDIR="$work/tmp" "$@"

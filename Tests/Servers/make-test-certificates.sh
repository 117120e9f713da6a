#!/usr/bin/env bash
# Makes the TLS material of the interception tests in folder $1, with openssl:
#   testca.pem            a test CA (the upstream roots: --upstream-ca)
#   localhost.pem/-key    a server certificate for localhost and 127.0.0.1, issued by the test CA
#   other-host.pem/-key   one for other.test only, issued by the test CA (a wrong host for 127.0.0.1)
#   expired.pem/-key      one for localhost and 127.0.0.1 that expired in 2020, issued by the test CA
#   untrusted.pem/-key    a self-signed one for localhost and 127.0.0.1 (no root the proxy knows)
set -euo pipefail
dir=$1
mkdir -p "$dir/db"
cd "$dir"
quiet() { "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; "$@"; exit 1; }; }
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)

quiet openssl req -x509 "${ec[@]}" -days 3 -subj "/CN=RequestAudit test upstream CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout testca-key.pem -out testca.pem
: >db/index.txt
echo 1000 >db/serial
cat >ca.cnf <<CONF
[ca]
default_ca = test
[test]
database = $dir/db/index.txt
serial = $dir/db/serial
new_certs_dir = $dir/db
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
CONF
# issue NAME SUBJECT-ALT-NAMES [openssl ca validity options…]
issue() {
    local name=$1 names=$2 common
    shift 2
    common=${names%%,*}
    quiet openssl req "${ec[@]}" -subj "/CN=${common#*:}" -addext "subjectAltName=$names" \
        -addext "extendedKeyUsage=serverAuth" -keyout "$name-key.pem" -out "$name.csr"
    quiet openssl ca -batch -notext -config ca.cnf -cert testca.pem -keyfile testca-key.pem -in "$name.csr" \
        -out "$name.pem" "$@"
}
issue localhost "DNS:localhost,IP:127.0.0.1" -days 2
issue other-host "DNS:other.test" -days 2
issue expired "DNS:localhost,IP:127.0.0.1" -startdate 20200101000000Z -enddate 20200102000000Z
quiet openssl req -x509 "${ec[@]}" -days 2 -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout untrusted-key.pem -out untrusted.pem

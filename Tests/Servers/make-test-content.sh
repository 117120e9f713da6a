#!/usr/bin/env bash
# Adds to the web root $1 what tools fetch in the interception tests:
#   repo.git/                    a bare git repository with one commit, cloned over (dumb) HTTPS
#   simple/audit-probe/          a pip simple index of one wheel, audit_probe-1.0-py3-none-any.whl
set -euo pipefail
root=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

git init -q "$scratch/source"
printf 'probe\n' >"$scratch/source/README"
git -C "$scratch/source" add README
git -C "$scratch/source" -c user.name=audit -c user.email=audit@example.invalid commit -q -m "the probe"
git clone -q --bare "$scratch/source" "$root/repo.git"
git -C "$root/repo.git" update-server-info

mkdir -p "$root/simple/audit-probe"
python3 - "$root/simple/audit-probe" <<'PY'
import base64, hashlib, sys, zipfile
folder = sys.argv[1]
name = "audit_probe-1.0-py3-none-any.whl"
files = {
    "audit_probe/__init__.py": b"VERSION = '1.0'\n",
    "audit_probe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: audit-probe\nVersion: 1.0\n",
    "audit_probe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: audit\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{path},sha256={digest},{len(data)}\n"
record += "audit_probe-1.0.dist-info/RECORD,,\n"
files["audit_probe-1.0.dist-info/RECORD"] = record.encode()
with zipfile.ZipFile(f"{folder}/{name}", "w") as wheel:
    for path, data in files.items():
        wheel.writestr(path, data)
digest = hashlib.sha256(open(f"{folder}/{name}", "rb").read()).hexdigest()
with open(f"{folder}/index.html", "w") as index:
    index.write(f'<!DOCTYPE html><html><body><a href="{name}#sha256={digest}">{name}</a></body></html>\n')
PY

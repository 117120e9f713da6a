# RequestAudit — `make test` runs the tests, `make demo` runs the main job on the bundled data.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BIN = $(shell $(SWIFT) build --show-bin-path)

.PHONY: test demo build deps test-deps test-tsan test-asan bench count fuzz

## Install the C libraries' headers with apt-get when pkg-config cannot find them: PCRE2 (rules), and zlib,
## brotli and zstd (a recording's compressed bodies).
deps:
	@if ! command -v pkg-config >/dev/null || ! pkg-config --exists libpcre2-8 zlib libbrotlidec libzstd; then \
		echo "Installing libpcre2-dev, zlib1g-dev, libbrotli-dev and libzstd-dev with apt-get…"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libpcre2-dev zlib1g-dev libbrotli-dev \
			libzstd-dev pkg-config >/dev/null; \
	fi

## What the tests use besides Swift: nginx, openssl, curl, chromium, prometheus, fcgiwrap, caddy and squid (apt-get), Python
## requests, opentelemetry-proto, ada-url and grpcio (pip), xds-protos (pip, in /opt/request-audit/xds-protos), and
## mitmproxy, which opens recordings as a HAR reader (pip, in a virtual environment at /opt/request-audit/mitmproxy,
## so that its pinned dependencies stay apart); Tests/with-httpbin.sh installs httpbin and gunicorn itself.
test-deps: deps
	@if ! [ -x /usr/sbin/nginx ] || ! command -v openssl >/dev/null || ! command -v curl >/dev/null \
		|| ! command -v chromium >/dev/null || ! [ -x /usr/bin/prometheus ] || ! [ -x /usr/sbin/fcgiwrap ] \
		|| ! [ -x /usr/bin/caddy ] || ! [ -x /usr/sbin/squid ]; then \
		echo "Installing nginx, openssl, curl, chromium, prometheus, fcgiwrap, caddy and squid with apt-get…"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nginx-light openssl curl chromium prometheus \
			fcgiwrap caddy squid-openssl >/dev/null; \
	fi
	@python3 -c "import requests" 2>/dev/null || python3 -m pip install -q --root-user-action=ignore requests
	@python3 -c "import opentelemetry.proto" 2>/dev/null \
		|| python3 -m pip install -q --root-user-action=ignore opentelemetry-proto
	@python3 -c "import ada_url" 2>/dev/null || python3 -m pip install -q --root-user-action=ignore ada-url
	@[ -d /opt/request-audit/xds-protos/envoy ] && python3 -c "import grpc" 2>/dev/null \
		|| (python3 -m pip install -q --root-user-action=ignore grpcio 'protobuf>=6.31.1,<8' \
		&& python3 -m pip install -q --root-user-action=ignore --no-deps --target /opt/request-audit/xds-protos xds-protos)
	@[ -x /opt/request-audit/mitmproxy/bin/mitmdump ] || (python3 -m venv /opt/request-audit/mitmproxy \
		&& /opt/request-audit/mitmproxy/bin/pip install -q mitmproxy==11.0.2)

build: deps
	$(SWIFT) build

## Run every test (Swift Testing), with a real httpbin on 127.0.0.1 for the interception tests.
# A crash prints the crashed thread's frames only, no registers or images: the end of the output
# (all CI shows) then says where it was.
test: test-deps
	SWIFT_BACKTRACE=enable=yes,threads=crashed,registers=none,images=none \
		Tests/with-httpbin.sh $(SWIFT) test --disable-xctest

## The main job on the bundled data: check the bundled policies, replay the bundled traffic through
## them, and write the summary reports to reports/. It builds only `audit`, without the TLSInterception
## trait (BoringSSL twice, for swift-nio-ssl and swift-crypto), which the demo does not use.
demo: deps
	$(SWIFT) build --product audit --disable-default-traits
	@$(BIN)/audit lint policies
	@$(BIN)/audit test policies --coverage | tail -2
	@rm -f reports/audit.jsonl
	@$(BIN)/audit replay policies/traffic/browsing-session.har policies/traffic/requests.txt \
		--policies policies --log reports/audit.jsonl --start 2026-11-20T10:30:00Z
	@$(BIN)/audit report reports/audit.jsonl --out reports --policies policies

## The concurrency and interception tests under ThreadSanitizer / AddressSanitizer (own build folders).
test-tsan: deps
	Tests/with-httpbin.sh $(SWIFT) test --disable-xctest --sanitize=thread -Xswiftc -DAUDIT_TSAN --scratch-path .build-tsan \
		--filter 'InterceptionTests|DecisionTests|IndexDifferentialTests|LazyJITTests|ParallelCompileTests'

test-asan: deps
	LSAN_OPTIONS=suppressions=$(abspath Tests/lsan-suppressions.txt) \
		Tests/with-httpbin.sh $(SWIFT) test --disable-xctest --sanitize=address --scratch-path .build-asan

## The benchmarks (Benchmarks/, on demand, never part of `make test`): prints the table of ratios.
## Needs ../shared/bench-data (override with BENCH_DATA=…); installs Hyperscan, nginx, wrk, Squid (with ssl-bump),
## mitmproxy, Privoxy and tinyproxy if missing.
BENCH_DATA ?= $(abspath ../shared/bench-data)
bench: deps
	@command -v nginx >/dev/null && pkg-config --exists libhs && command -v wrk >/dev/null && [ -x /usr/sbin/squid ] \
		&& [ -x /usr/lib/squid/security_file_certgen ] && command -v mitmdump >/dev/null \
		&& [ -x /usr/sbin/privoxy ] && [ -x /usr/bin/tinyproxy ] || \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libhyperscan-dev nginx-light wrk squid-openssl \
			mitmproxy privoxy tinyproxy >/dev/null)
	cd Benchmarks && $(SWIFT) build -c release
	$(SWIFT) build -c release --product audit
	cd Benchmarks && .build/release/audit-bench all --data $(BENCH_DATA) --audit $(abspath .build/release/audit)

## Instructions a decision, counted by callgrind (a count does not drift with a shared machine's speed as time
## does): the patterns of COUNT_RULES (default rules-10k.txt) as one block policy, over the first COUNT_URLS
## (default 4000) URLs of urls-bench.txt, decided once to warm up and once counted.
COUNT_RULES ?= rules-10k.txt
COUNT_URLS ?= 4000
count:
	@command -v valgrind >/dev/null || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq valgrind >/dev/null)
	cd Benchmarks && $(SWIFT) build -c release --product decision-count
	@# callgrind cannot read the Swift debug information: it counts a copy without it.
	objcopy --strip-debug Benchmarks/.build/release/decision-count Benchmarks/.build/decision-count-stripped
	valgrind --tool=callgrind --callgrind-out-file=Benchmarks/.build/decision-count.callgrind \
		--toggle-collect='*countedDecisions*' Benchmarks/.build/decision-count-stripped \
		$(BENCH_DATA)/$(COUNT_RULES) $(BENCH_DATA)/urls-bench.txt $(COUNT_URLS) 2>&1 \
		| awk '/URLs,/ { urls = $$1; print } /Collected :/ { printf "%.0f instructions a decision\n", $$4 / urls }'

## Fuzz both harnesses for FUZZ_SECONDS each (default 600) with libFuzzer and AddressSanitizer.
FUZZ_SECONDS ?= 600
fuzz: deps
	Fuzz/run.sh rule-files $(FUZZ_SECONDS)
	Fuzz/run.sh requests $(FUZZ_SECONDS)

#!/usr/bin/env bash
# Builds the libFuzzer harnesses with AddressSanitizer and runs one of them.
#   Fuzz/run.sh rule-files [SECONDS]   # the rule-file parser, compiler and index
#   Fuzz/run.sh requests   [SECONDS]   # URL normalization and evaluation, indexed against exhaustive
# Seeds come from the bundled policies and traffic; new inputs go to Fuzz/corpus/<harness>/ (git-ignored);
# a crash leaves crash-* in Fuzz/artifacts/ and a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")"
harness=${1:?usage: Fuzz/run.sh rule-files|requests [SECONDS]}
seconds=${2:-600}
flags=(-c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
# The requests harness holds its policy in a global for the whole run. At exit, LeakSanitizer reports what that
# policy holds through references Swift keeps in an enum payload's spare bits (a respond rule's template), which
# it does not recognize as pointers: made and dropped, the same policy frees everything. libFuzzer's own check
# after each input (-detect_leaks) still runs.
export ASAN_OPTIONS="leak_check_at_exit=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
swift build "${flags[@]}" --product "$( [ "$harness" = rule-files ] && echo FuzzRuleFiles || echo FuzzRequests )" >&2
bin=$(swift build "${flags[@]}" --show-bin-path)
mkdir -p "corpus/$harness" artifacts seeds/"$harness"
case "$harness" in
rule-files)
    cp ../policies/*.rules "seeds/$harness/"
    # Host rules in the ad-block form, whose tokens the index looks up in the URL's authority only.
    printf '%s\n' '[block]' \
        'host ^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?ads\.example\.com(?:[^a-z0-9_.%-]|$)' \
        'path ^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?tracker\.example\.net:8080/a/' \
        '[record] case=sensitive' 'ip ^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?10\.0\.0\.1(?:[^a-z0-9_.%-]|$)' \
        > "seeds/$harness/hosts.rules"
    # Rules filed by letters inside a token (searched for in the whole subject when few).
    printf '%s\n' '[record]' 'ttp ttp' 'hex 0x5bf076a8' '[block]' 'mixed (?i)q7x' > "seeds/$harness/infix.rules"
    exec "$bin/FuzzRuleFiles" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix=artifacts/ "corpus/$harness" "seeds/$harness"
    ;;
requests)
    n=0
    while IFS= read -r line; do
        case "$line" in "#"* | "") continue ;; esac
        n=$((n + 1)); printf '%s' "$line" | tr ' ' '\n' > "seeds/$harness/request-$n"
    done < ../policies/traffic/requests.txt
    printf 'GET\nhttps://user@ads.example.com:443/x?cdn=1' > "seeds/$harness/host-1"
    printf 'GET\nhttp://127.0.0.1:8080/admin\nx\nblocked.example' > "seeds/$harness/host-header-1"
    printf 'GET\nHTTP://Example.COM.:80/a\nx\nexample.com' > "seeds/$harness/host-header-2"
    printf 'GET\nHTTP:/10.0.0.1/tracker.example.net/pixel/#ads.example.com' > "seeds/$harness/host-2"
    printf 'POST\nhttps://a.test/\nhttps://evil.example/' > "seeds/$harness/host-3"
    printf 'GET\nhttps://a.b/xxxxxxxxQ7Xxxxxx0X5BF076a8' > "seeds/$harness/infix-1"
    exec "$bin/FuzzRequests" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix=artifacts/ -policies=../policies "corpus/$harness" "seeds/$harness"
    ;;
*) echo "unknown harness '$harness' (rule-files, requests)" >&2; exit 64 ;;
esac

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
swift build "${flags[@]}" --product "$( [ "$harness" = rule-files ] && echo FuzzRuleFiles || echo FuzzRequests )" >&2
bin=$(swift build "${flags[@]}" --show-bin-path)
mkdir -p "corpus/$harness" artifacts seeds/"$harness"
case "$harness" in
rule-files)
    cp ../policies/*.rules "seeds/$harness/"
    exec "$bin/FuzzRuleFiles" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix=artifacts/ "corpus/$harness" "seeds/$harness"
    ;;
requests)
    n=0
    while IFS= read -r line; do
        case "$line" in "#"* | "") continue ;; esac
        n=$((n + 1)); printf '%s' "$line" | tr ' ' '\n' > "seeds/$harness/request-$n"
    done < ../policies/traffic/requests.txt
    exec "$bin/FuzzRequests" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix=artifacts/ -policies=../policies "corpus/$harness" "seeds/$harness"
    ;;
*) echo "unknown harness '$harness' (rule-files, requests)" >&2; exit 64 ;;
esac

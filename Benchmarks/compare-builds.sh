#!/usr/bin/env bash
# Decisions per URL of this tree against an earlier commit, in one run: builds audit-bench of both
# (the earlier one in a git worktree under .build-base/), then runs `audit-bench decisions
# --engine-only` of each in turn, RUNS times alternated, and prints each run and the medians' ratio.
#
#   Benchmarks/compare-builds.sh BASE [RUNS] [SETS…]     e.g. Benchmarks/compare-builds.sh 8017d61 3 mix 10k
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: compare-builds.sh BASE [RUNS] [SETS…]}
runs=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
sets=("${@:-mix}")
data=${BENCH_DATA:-$(cd ../shared/bench-data && pwd)}

worktree=.build-base/$(git rev-parse --short "$base")
if [ ! -d "$worktree" ]; then git worktree add --detach "$worktree" "$base" >/dev/null; fi
(cd "$worktree/Benchmarks" && swift build -c release --product audit-bench >/dev/null)
(cd Benchmarks && swift build -c release --product audit-bench >/dev/null)

results=$(mktemp)
for run in $(seq "$runs"); do
    for side in base this; do
        if [ "$side" = base ]; then bench=$worktree/Benchmarks/.build/release/audit-bench; else bench=Benchmarks/.build/release/audit-bench; fi
        "$bench" decisions --engine-only --data "$data" --sets "${sets[@]}" 2>/dev/null \
            | awk -F'|' -v side="$side" -v run="$run" 'NR > 2 { gsub(/ /, "", $2); print side, run, $2, $5 }' \
            | tee -a "$results"
    done
done
python3 - "$results" <<'PY'
import statistics, sys
def ns(text):
    for unit, factor in (("µs", 1e3), ("ms", 1e6), ("ns", 1), ("s", 1e9)):
        if text.strip().endswith(unit):
            return float(text.strip()[: -len(unit)]) * factor
    raise ValueError(text)
rows = {}
for line in open(sys.argv[1]):
    side, run, name, value = line.split(None, 3)
    rows.setdefault(name, {}).setdefault(side, []).append(ns(value))
for name, sides in rows.items():
    base, this = statistics.median(sides["base"]), statistics.median(sides["this"])
    print(f"{name}: base {base:.0f} ns/URL, this {this:.0f} ns/URL (medians of {len(sides['this'])}): "
          f"{(this / base - 1) * 100:+.1f} %")
PY

#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for a bounded time on its
# committed seed corpus (tests/fuzz/corpus/<target>). Fails on any crash, leak, sanitizer report
# or timeout; the input that caused it is left in <build>/artifacts/.
#
#   [SANDGATE_FUZZ_PRESET=fuzz|asan-ubsan] scripts/fuzz.sh [seconds per target, default 60] [target ...]
#
# The `fuzz` preset (build-fuzz/, optimised: the most inputs per second, for long runs by hand)
# is the default; `asan-ubsan` (build-asan/, clang at -O0) carries the same targets beside the
# test suite, so CI fuzzes without a build of its own. New inputs the fuzzer finds go to
# <build>/corpus/<target>, never into the committed seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(http_request jsonrpc tokens_file output_capture saved_sessions oauth egress_request)
preset="${SANDGATE_FUZZ_PRESET:-fuzz}"
case "$preset" in
  fuzz) build=build-fuzz ;;
  asan-ubsan) build=build-asan ;;
  *) echo "fuzz: SANDGATE_FUZZ_PRESET is fuzz or asan-ubsan, not ${preset}" >&2; exit 2 ;;
esac

[[ -n "${SANDGATE_DEPS_INSTALLED:-}" ]] || ./scripts/install-deps.sh > /dev/null
cmake --preset "$preset" > /dev/null
# Only the targets to run: the rest of the tree (the server binary, the benchmarks and the
# test-support library they link) would take most of this stage's build under clang's ASan.
cmake --build --preset "$preset" --target "${targets[@]/%/_fuzz}"
mkdir -p "$build/artifacts"
# Seeds too big to commit: bodies nested 200,000 levels deep (~400 KB, under the body limit),
# the shape that once overflowed the gateway's stack (scripts/fuzz-seeds.py writes them).
/usr/bin/python3 scripts/fuzz-seeds.py "$build/seeds"
# One fuzzer per core at a time (each is single-threaded): CI's six targets on two cores take
# three rounds of `seconds`, not six. Each writes to its own log, printed in order once all
# have ended; should this script stop early, the fuzzers still running go with it.
trap 'kill $(jobs -p) 2> /dev/null || true' EXIT
lanes="${SANDGATE_FUZZ_JOBS:-$(nproc)}"
logs="$build/fuzz-logs"
rm -rf "$logs"
mkdir -p "$logs"
fuzz_one() {  # fuzz_one TARGET: runs it, leaves its output in $logs/TARGET.log, its status in .status
  local target="$1" dict=() seeds=()
  mkdir -p "$build/corpus/${target}"
  case "$target" in
    http_request) dict=(-dict=tests/fuzz/dict/http.dict) ;;
    jsonrpc) dict=(-dict=tests/fuzz/dict/jsonrpc.dict) ;;
    tokens_file) dict=(-dict=tests/fuzz/dict/tokens_file.dict) ;;
  esac
  [[ -d "$build/seeds/${target}" ]] && seeds=("$build/seeds/${target}")
  set +e
  # -max_len covers request bodies of hundreds of KB (libFuzzer's default follows the largest
  # seed, a few KB, and would never build a body deep enough to matter).
  "./$build/tests/fuzz/${target}_fuzz" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
    -max_len=524288 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/${target}-" \
    "$build/corpus/${target}" "tests/fuzz/corpus/${target}" "${seeds[@]}" 2>&1 |
    grep -vE '^(#[0-9]+\s+(NEW|REDUCE|pulse)|"|###### (Recommended|End of))' > "$logs/${target}.log"
  # libFuzzer exits non-zero on a finding; PIPESTATUS keeps its status past the grep.
  echo "${PIPESTATUS[0]}" > "$logs/${target}.status"
}
running=0
for target in "${targets[@]}"; do
  if ((running >= lanes)); then
    wait -n || true  # a lane's status is in its .status file, read below
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait || true
failed=()
for target in "${targets[@]}"; do
  echo "== fuzz: ${target} for ${seconds} s"
  cat "$logs/${target}.log"
  status="$(cat "$logs/${target}.status" 2>/dev/null || echo missing)"
  [[ "$status" == 0 ]] || failed+=("${target} (status ${status})")
done
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]}; see $build/artifacts/" >&2
  exit 1
fi

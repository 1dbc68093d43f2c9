#!/usr/bin/env bash
# Runs clang-tidy 14 with .clang-tidy over pump's own sources: core/, extractors/,
# policies/ and sdk/ (through the release build's compile_commands.json) and the
# outside-style plugins in plugins/ (built by their own CMake projects, so checked here
# with the flags they use: C99 against sdk/include). Exits non-zero on any finding.
# Builds the release preset first: some sources include headers the build generates.
#   bash scripts/tidy.sh [regex]   regex: only the database's files whose path matches
# Pinned to clang-tidy 14 (Debian: apt-get install clang-tidy-14): other major versions
# bring other checks and other findings.
# Measured on a 2-core machine, release build already done, -j2: 162 s for the 76 files
# and the plugins (294 s while other jobs shared the cores), so CI runs it (its own
# stage, after the build). Checking tests/ as well (bash scripts/tidy.sh "^$PWD/tests/") takes about
# as long again and is not part of it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
for tool in clang-tidy-14 run-clang-tidy-14; do
  command -v "$tool" >/dev/null || { echo "pump: $tool not found (apt-get install clang-tidy-14)" >&2; exit 2; }
done
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)"
root=$(printf '%s' "$PWD" | sed 's/[][\.*^$+?(){}|]/\\&/g')  # the path, as a regex
status=0
run-clang-tidy-14 -clang-tidy-binary clang-tidy-14 -p build/release -j"$(nproc)" -quiet \
  "${1:-^$root/(core|extractors|policies|sdk)/.*\.(c|cc)\$}" || status=1
if [ -z "${1:-}" ]; then
  clang-tidy-14 --quiet plugins/*/*.c -- -std=c99 -Isdk/include -Wall -Wextra -pedantic || status=1
fi
[ "$status" -eq 0 ] && echo "pump: clang-tidy found nothing"
exit "$status"

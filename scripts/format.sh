#!/usr/bin/env bash
# Formats every tracked C, C++ and CUDA source in place with .clang-format.
#   bash scripts/format.sh           format the tree
#   bash scripts/format.sh --check   change nothing; list the files that are not formatted
#                                    and exit 1 (what scripts/check_format.sh and CI run)
# The version is pinned to clang-format 14 (Debian: apt-get install clang-format-14):
# other major versions format the same config differently, so a check with another one
# would fail on a formatted tree. CLANG_FORMAT=/path/to/clang-format overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."

# The one list of files clang-format owns (scripts/check_format.sh uses it through
# --check): every tracked source, tests and their plugin fixtures included. The X-macro
# table core/interpose/hook_list.def is listed too; it turns formatting off inside
# itself (clang-format reads its entries as expressions).
pump_format_files() {
  git ls-files -z -- '*.c' '*.cc' '*.h' '*.cu' '*.cuh' '*.def'
}

pump_clang_format() {
  if [ -n "${CLANG_FORMAT:-}" ]; then
    echo "$CLANG_FORMAT"
  elif command -v clang-format-14 >/dev/null; then
    echo clang-format-14
  elif command -v clang-format >/dev/null && clang-format --version | grep -q 'version 14\.'; then
    echo clang-format
  else
    echo "pump: clang-format 14 not found (apt-get install clang-format-14)" >&2
    return 1
  fi
}

cf=$(pump_clang_format)
if [ "${1:-}" = "--check" ]; then
  # One clang-format for all files; it reports each unformatted line as
  # "file:line:col: error: code should be clang-formatted": keep the file names. Any
  # other failure (a bad .clang-format, a missing file) fails the check with its output.
  status=0
  out=$(pump_format_files | xargs -0 "$cf" --dry-run -Werror 2>&1) || status=$?
  bad=$(printf '%s\n' "$out" | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
  if [ -n "$bad" ]; then
    echo "pump: not formatted with $cf (run bash scripts/format.sh):"
    printf '%s\n' "$bad" | sed 's/^/  /'
    exit 1
  elif [ "$status" -ne 0 ]; then
    printf '%s\n' "$out" >&2
    echo "pump: $cf failed (exit $status)" >&2
    exit 1
  fi
  echo "pump: $(pump_format_files | tr -cd '\0' | wc -c) files formatted ($cf)"
else
  pump_format_files | xargs -0 "$cf" -i
fi

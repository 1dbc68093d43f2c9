#!/usr/bin/env bash
# Fails (exit 1) when a tracked source is not formatted with .clang-format, listing the
# files; changes nothing. The file list and the pinned clang-format 14 are scripts/format.sh's.
# Fix with: bash scripts/format.sh
exec bash "$(dirname "$0")/format.sh" --check

#!/usr/bin/env bash
# Fail when any tracked C/CUDA file differs from .clang-format's layout.
set -uo pipefail
files=$(git ls-files '*.c' '*.h' '*.cu' 2>/dev/null)
[ -z "$files" ] && { echo "format-check: no files"; exit 0; }
bad=0
for f in $files; do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "format-check: $f is not formatted (run: clang-format -i $f)"
        bad=1
    fi
done
[ $bad -eq 0 ] && echo "format-check: ok ($(echo "$files" | wc -l) files)"
exit $bad

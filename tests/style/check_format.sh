#!/usr/bin/env bash
# The C and C++ sources git tracks are as clang-format (the repository's .clang-format) writes them.
# Skips (77) where clang-format or git is missing (scripts/setup installs both).
# Fix: git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format -i
set -uo pipefail
root=$1
command -v clang-format >/dev/null || { echo "skip: clang-format is not installed"; exit 77; }
command -v git >/dev/null && git -C "$root" rev-parse >/dev/null 2>&1 || { echo "skip: $root is not a git checkout"; exit 77; }
cd "$root"
bad=()
while IFS= read -r f; do
  [[ -f "$f" ]] || continue
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.c' '*.cpp' '*.h')
if ((${#bad[@]})); then
  echo "not as clang-format writes them (${#bad[@]}): ${bad[*]}"
  echo "fix: git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format -i"
  exit 1
fi
echo "ok: every tracked C/C++ source is formatted"

#!/bin/sh
# The README answers what a new user asks first: what `make check` installs (the packages the
# tests use beyond the build, the npm packages tests/viewers/package.json names), that the
# examples run as build/unwound until `make install`, and its feature paragraphs are scannable
# (lists and tables: no paragraph of prose over five lines).
set -eu
S=${UW_SRC:?}
R=$S/README.md
fail() { echo "FAIL: README.md: $*"; exit 1; }
# the make check row of the table of what each target installs
row=$(grep '^| `make check` |' "$R") || fail "no row saying what make check installs"
for what in cmocka clang Go Node.js npm Chromium; do
    printf '%s' "$row" | grep -qw -- "$what" || fail "make check's row does not name $what"
done
for pkg in $(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["dependencies"]))' \
    "$S/tests/viewers/package.json"); do
    printf '%s' "$row" | grep -q -- "\`$pkg\`" || fail "make check's row does not name the npm package $pkg"
done
grep -q 'tests/viewers/package.json' "$R" || fail "the npm packages' versions are not pointed to"
# the Debian packages install-deps adds for check must all be named (by their usual names)
names() { # Debian package -> the name the README uses
    case $1 in
    libcmocka-dev) echo cmocka ;; python3|python3.11-dbg) echo "Python" ;; nodejs) echo Node.js ;;
    libclang-rt-14-dev|llvm) echo LLVM ;; golang-go) echo Go ;; chromium) echo Chromium ;;
    hotspot) echo hotspot ;; abigail-tools) echo abigail ;; groff-base) echo groff ;; man-db) echo man ;;
    xz-utils) echo xz ;; *) echo "$1" ;;
    esac
}
check=$(sed -n 's/^CHECK="\$DEMO \(.*\)"$/\1/p' "$S/scripts/install-deps")
[ -n "$check" ] || fail "(the test cannot read scripts/install-deps' CHECK list)"
for p in $check; do
    n=$(names "$p")
    [ "$n" = xz ] && continue # (xz-utils: a dependency of the build packages anyway)
    printf '%s' "$row" | grep -qi -- "$n" || fail "make check installs $p: the README does not say so ($n)"
done
# the examples use build/unwound until make install: said before the first example
use=$(sed -n '/^## Using it/,/^```/p' "$R")
printf '%s' "$use" | grep -q 'build/unwound' && printf '%s' "$use" | grep -q 'make install' ||
    fail "'Using it' does not say the CLI is build/unwound until make install"
# scannable: no paragraph of prose (outside code, tables, lists, headings) over five lines
awk '
/^```/ { code = !code; n = 0; next }
code { next }
/^$/ { if (n > 5) { print "FAIL: README.md: a paragraph of " n " lines (lists or a table, please): " first; bad = 1 } n = 0; next }
/^(\||#|- |  )/ { if (n > 5) { print "FAIL: README.md: a paragraph of " n " lines (lists or a table, please): " first; bad = 1 } n = 0; next }
{ if (!n) first = substr($0, 1, 60); n++ }
END { if (n > 5) { print "FAIL: README.md: a paragraph of " n " lines: " first; bad = 1 } exit bad }
' "$R"
echo "README: make check's packages, build/unwound, paragraphs of at most five lines"

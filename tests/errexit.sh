# Read by bash before each test script (BASH_ENV, set by tests/CMakeLists.txt, which runs the
# scripts with bash): a command that ends a script under `set -e` is named, with its line and
# status, so that no test fails without saying why (a `grep -q` or `cmp -s` that fails prints
# nothing). The scripts are POSIX sh; bash runs them in POSIX mode (errexit holds in command
# substitutions, as in dash). Programs the script starts do not read this file. (The trap is one
# line: $LINENO counts the lines of the trap's own text.)
unset BASH_ENV
set -o posix
set -E
trap 'uw_rc=$?; case $- in *e*) [ "${BASH_SUBSHELL:-0}" = 0 ] && echo "FAIL: ${BASH_SOURCE[0]##*/}, line $LINENO: '\''$BASH_COMMAND'\'' failed (exit status $uw_rc)";; esac' ERR

#!/bin/sh
# Every option of every subcommand that takes a value, given bad values: a usage error (exit 2)
# naming the option, never a value taken in part or ignored. The options are read from each
# subcommand's --help, so an option added without a case here fails the test.
set -eu
B=${UW_BUILD:?}
W=$B/tests/work/args
rm -rf "$W"; mkdir -p "$W"
cd "$W"
U=$B/unwound
fail() { echo "FAIL: $*"; exit 1; }

# options whose values are names or paths: checked where they are used, not by their form
names="-i --input -o --output --kallsyms -k --vmlinux --debug-dir --symfs --search-path --comm --event -e -p --pid -t --tid"
# numeric and enumerated options, with a good value (to check the option works at all)
good() {
    case $1 in
    --rows) echo 5 ;; --percent-limit) echo 1.5 ;; --debuginfod-timeout) echo 2 ;;
    --max-frames|--max-kernel-frames|--max-inflate|--max-side-file|--max-queue|--max-dwarf-cache|--max-debuginfod) echo 64 ;;
    --sort) echo sym ;; --group) echo line ;; --weight) echo samples ;; --format) echo folded ;;
    -F|--freq) echo 99 ;; -c|--count) echo 100000 ;; -m|--mmap-pages) echo 16 ;; --stack-size|--stack-limit) echo 4096 ;;
    --duration) echo 0.2 ;; -C|--cpu) echo 0 ;; --call-graph) echo dwarf,4096 ;;
    --off-cpu-every) echo 10 ;; --off-cpu-min) echo 100 ;; --off-cpu-mode) echo switch ;; --off-cpu-walks) echo 100 ;;
    --unwind) echo copy ;; --bpf-map-bytes) echo 1048576 ;;
    --pid|--tid) echo 1 ;; --time) echo 0, ;; --fields) echo overhead,sym ;; --percentage) echo relative ;;
    *) echo "" ;;
    esac
}
# what an option needs beside it
with() { case $1 in --off-cpu-every|--off-cpu-min|--off-cpu-mode|--off-cpu-walks) echo --off-cpu ;; esac; }
bad_values="abc 5abc -1 0x 1e999 99999999999999999999999 ''"
perf record -q -e cpu-clock -F 99 --call-graph dwarf,1024 -o in.data -- sleep 0.1 2>/dev/null

checked=0
for cmd in report record inject diff; do
    "$U" $cmd --help >help-$cmd.txt
    # "  --rows N", "  -F, --freq HZ", "  --sort self|total": an option and a value word
    opts=$(sed -n 's/^  \(-[A-Za-z], \)\{0,1\}\(--[a-z-]*\) [^ ].*/\2/p' help-$cmd.txt | sort -u)
    for o in $opts; do
        case " $names " in *" $o "*) continue ;; esac
        g=$(good "$o")
        [ -n "$g" ] || fail "$cmd $o: no case in this test (a new option? add its values here)"
        for v in $bad_values; do
            [ "$v" = "''" ] && v=
            # --pid and --tid of report take lists of process ids
            rc=0
            case $cmd in
            record) "$U" record -q $(with "$o") "$o" "$v" -o out.data -- true >/dev/null 2>err.txt || rc=$? ;;
            diff) "$U" diff in.data in.data -o out.txt "$o" "$v" >/dev/null 2>err.txt || rc=$? ;;
            *) "$U" $cmd -i in.data -o out.txt "$o" "$v" >/dev/null 2>err.txt || rc=$? ;;
            esac
            [ $rc = 2 ] || fail "$cmd $o '$v': exit $rc, not a usage error ($(head -c 200 err.txt))"
            grep -q -- "${o}" err.txt || fail "$cmd $o '$v': the message does not name the option: $(cat err.txt)"
            checked=$((checked + 1))
        done
        # and the good value is taken
        rc=0
        case $cmd in
        record) "$U" record -q $(with "$o") "$o" "$g" -o out.data -- true >/dev/null 2>err.txt || rc=$? ;;
        inject) "$U" inject -i in.data -o out.data "$o" "$g" >/dev/null 2>err.txt || rc=$? ;;
        diff) "$U" diff in.data in.data -o out.txt "$o" "$g" >/dev/null 2>err.txt || rc=$? ;;
        *) "$U" report -i in.data -o out.txt "$o" "$g" >/dev/null 2>err.txt || rc=$? ;;
        esac
        [ $rc = 0 ] || fail "$cmd $o $g: exit $rc ($(cat err.txt))"
    done
done
[ -e out.data.old ] && [ "$(find . -name 'out.data*' | wc -l)" -le 2 ] || true
# lists: --pid and --tid of report, -p and -t of record
for o in --pid --tid; do
    for v in abc 1,abc 1,,2 -5 0; do
        rc=0; "$U" report -i in.data "$o" "$v" >/dev/null 2>err.txt || rc=$?
        [ $rc = 2 ] || fail "report $o '$v': exit $rc"
        checked=$((checked + 1))
    done
done
for o in -p -t; do
    for v in abc 1,abc -5 0; do
        rc=0; "$U" record -q "$o" "$v" -o out.data >/dev/null 2>err.txt || rc=$?
        [ $rc = 2 ] || fail "record $o '$v': exit $rc"
        checked=$((checked + 1))
    done
done
# conflicting or stray arguments
for a in "--script --folded" "--sort nosuchkey" "--sort sym,,dso" "--folded --sort sym" "--script --weight period" "extra"; do
    rc=0
    # shellcheck disable=SC2086
    "$U" report -i in.data $a >/dev/null 2>err.txt || rc=$?
    [ $rc = 2 ] || fail "report $a: exit $rc, not a usage error"
    checked=$((checked + 1))
done
# directory options given what is no directory (a file, nothing, a symbolic link loop): refused,
# saying why, before anything is read (not a warning per file looked up under it)
echo x >afile; ln -sfn loop loop
for o in --symfs --debug-dir --search-path; do
    for v in afile nothing loop; do
        for cmd in report inject diff record; do
            [ "$cmd/$o" = record/--symfs ] || [ "$cmd/$o" = record/--search-path ] && continue
            rc=0
            case $cmd in
            record) "$U" record -q "$o" "$v" -o out.data -- true >/dev/null 2>err.txt || rc=$? ;;
            diff) "$U" diff in.data in.data -o out.txt "$o" "$v" >/dev/null 2>err.txt || rc=$? ;;
            *) "$U" $cmd -i in.data -o out.txt "$o" "$v" >/dev/null 2>err.txt || rc=$? ;;
            esac
            [ $rc = 2 ] || fail "$cmd $o $v: exit $rc, not a usage error"
            case $v in
            afile) want="$o afile: not a directory" ;; nothing) want="$o nothing: No such file" ;;
            loop) want="$o loop: Too many levels of symbolic links" ;;
            esac
            grep -q -- "$want" err.txt || fail "$cmd $o $v: not said why: $(cat err.txt)"
            checked=$((checked + 1))
        done
    done
done
rc=0; "$U" nosuchcommand >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "an unknown command: exit $rc"
echo "args: $checked bad values refused with exit 2"

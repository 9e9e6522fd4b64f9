#!/bin/sh
# One session, six threads, every public call that touches its shared state
# (tests/tools/hammer.c): kallsyms files changed while kernel frames are named, live trackers
# unloading and reopening shared modules while others name them, the module table walked.
# make check-tsan runs it under ThreadSanitizer, make check-asan under AddressSanitizer.
set -eu
B=${UW_BUILD:?}
S=${UW_SRC:?}
W=$B/tests/work/hammer
rm -rf "$W"; mkdir -p "$W"
sh "$S/tests/api/ltlibs.sh" "$W/lib" 80
# two kallsyms files of 50,000 symbols: a_fn_K and b_fn_K at 0xffffffff81000000 + K * 0x100,
# then lines of a module
n=50000
python3 - "$W" $n <<'PY'
import sys
w, n = sys.argv[1], int(sys.argv[2])
for v in 'ab':
    with open('%s/kallsyms.%s' % (w, v), 'w') as f:
        f.write('ffffffff81000000 T _text\n')
        for k in range(n):
            f.write('%016x T %s_fn_%d\n' % (0xffffffff81000000 + k * 0x100, v, k))
        f.write('ffffffffc0000000 t mod_fn\t[some_module]\n')
PY
"$B/tests/hammer" "$W/kallsyms.a" "$W/kallsyms.b" $n "$W/lib" 80

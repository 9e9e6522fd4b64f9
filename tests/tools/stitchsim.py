#!/usr/bin/env python3
"""What stitching rules could complete, simulated on a stitchcheck dump (STITCHCHECK_DUMP=FILE
stitchcheck REC LIMIT): each truncated sample's outermost frame is looked up, by return address
and stack pointer, in its thread's other stacks that reach a root (complete ones, and, to a
fixpoint, those completed) with no limit on how far before or after; a rule completes it from
them, and the result is compared with the whole copy's stack.

  one-sided:  the nearest earlier stack with the frame
  either:     the nearest earlier, else the nearest later
  two-sided:  the nearest earlier and the nearest later both have it and agree (the reader's
              rule, there with a wait of 64 samples and 16 earlier stacks)
  later-two:  two-sided, or, when no earlier stack has it, the two nearest later agree

    stitchsim.py DUMP
"""
import collections
import sys


def load(path):
    rows = []
    for line in open(path):
        p = line.split()
        tid, whole_stop, cut_stop, nown = map(int, p[:4])
        frames = [tuple(int(x, 16) for x in f.split(':')) for f in p[4:]]
        rows.append((tid, whole_stop, cut_stop, nown, frames))
    return rows


def callers(stack, o):
    for k in range(len(stack) - 2, 0, -1):
        if stack[k] == o:
            return stack[k + 1:]
    return None


def simulate(rows, rule):
    bytid = collections.defaultdict(list)
    for i, r in enumerate(rows):
        if r[4]:
            bytid[r[0]].append(i)
    total = completed = equal = 0
    for idx in bytid.values():
        own, known = {}, {}
        for i in idx:
            _, _, cut_stop, nown, fr = rows[i]
            own[i] = fr[:nown]
            if nown >= len(fr) and cut_stop == 0:
                known[i] = fr
        truncated = [p for p, i in enumerate(idx) if rows[i][1] == 0 and 1 < rows[i][3] < len(rows[i][4])]
        done = {}
        changed = True
        while changed:
            changed = False
            for p in truncated:
                i = idx[p]
                if i in done:
                    continue
                o = own[i][-1]
                before = after = after2 = None
                for q in range(p - 1, -1, -1):
                    if idx[q] in known and (c := callers(known[idx[q]], o)) is not None:
                        before = c
                        break
                for q in range(p + 1, len(idx)):
                    if idx[q] in known and (c := callers(known[idx[q]], o)) is not None:
                        if after is None:
                            after = c
                        else:
                            after2 = c
                            break
                if rule == 'one-sided':
                    got = before
                elif rule == 'either':
                    got = before or after
                elif rule == 'two-sided':
                    got = before if before is not None and before == after else None
                elif before is not None:
                    got = before if before == after else None
                else:
                    got = after if after is not None and after == after2 else None
                if got is not None:
                    done[i] = known[i] = own[i] + got
                    changed = True
        for p in truncated:
            i = idx[p]
            total += 1
            if i in done:
                completed += 1
                equal += done[i] == rows[i][4]
    return total, completed, equal


rows = load(sys.argv[1])
for rule in ('one-sided', 'either', 'two-sided', 'later-two'):
    t, c, e = simulate(rows, rule)
    print(f"{rule:10} truncated {t}: completed {c} ({100 * c / max(t, 1):.1f}%), "
          f"equal {e} ({100 * e / max(c, 1):.2f}% of completed)")

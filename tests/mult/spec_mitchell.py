#!/usr/bin/env python3
"""Mitchell products MIT_m straight from docs/multipliers.md (sections 2 and 3),
written apart from the C code: the source of the vectors' mit14 column.

    python3 tests/mult/spec_mitchell.py tests/mult/am_vectors.tsv COLUMN M

checks the implementation against the mit16 (MIT_7) and mit32 (MIT_23)
columns, then prints the file with COLUMN (MIT_M) added, or refreshed where
it exists. A NaN product takes the bits of the mit16 column's NaN in that row
(the special cases are shared by every approximate mode)."""
import sys

ONE = 1 << 23


def fields(x):
    return x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF


def special(a, b):
    """Section 2, steps 1-3: 'nan', a bit pattern, or None for normal operands."""
    sa, ea, fa = fields(a)
    sb, eb, fb = fields(b)
    s = sa ^ sb
    if (ea == 255 and fa) or (eb == 255 and fb):
        return "nan"
    a_inf, b_inf = ea == 255, eb == 255
    if a_inf or b_inf:
        other = eb if a_inf else ea
        if not (a_inf and b_inf) and other == 0:
            return "nan"
        return (s << 31) | 0x7F800000
    if ea == 0 or eb == 0:
        return s << 31
    return None


def mit(a, b, m):
    r = special(a, b)
    if r is not None:
        return r
    sa, ea, fa = fields(a)
    sb, eb, fb = fields(b)
    keep = ((1 << m) - 1) << (23 - m)
    S = (fa & keep) + (fb & keep)
    c = 1 if S >= ONE else 0
    P = (ONE + S % ONE) << c
    app = 1 if P >= 1 << 24 else 0
    E = ea + eb - 127 + app
    s = sa ^ sb
    if E <= 0:
        return s << 31
    if E >= 255:
        return (s << 31) | 0x7F800000
    M = (P >> app) % (1 << 23)
    if m < 23:
        M &= ~((1 << (23 - m)) - 1)
    return (s << 31) | (E << 23) | M


def main():
    path, column, m = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lines = open(path).read().splitlines()
    header = lines[0].lstrip("# ").split("\t")
    rows = [line.split("\t") for line in lines[1:] if line]
    i16, i32 = header.index("mit16"), header.index("mit32")
    for r in rows:
        a, b = int(r[0], 16), int(r[1], 16)
        for mm, col in ((7, i16), (23, i32)):
            got, want = mit(a, b, mm), int(r[col], 16)
            ok = ((want >> 23) & 0xFF == 255 and want & 0x7FFFFF) if got == "nan" else got == want
            if not ok:
                sys.exit("MIT_%d of %s x %s disagrees with column %s" % (mm, r[0], r[1], header[col]))
    if column not in header:
        header.append(column)
        for r in rows:
            r.append("")
    k = header.index(column)
    for r in rows:
        p = mit(int(r[0], 16), int(r[1], 16), m)
        r[k] = r[i16] if p == "nan" else "%08X" % p
    print("# " + "\t".join(header))
    for r in rows:
        print("\t".join(r))


if __name__ == "__main__":
    main()

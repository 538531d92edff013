"""Compare two reports' data files (reports/<name>/data/*.json), number by number.

Issue 10 moved and renamed but must not change a figure: the 24 shipped samples were reported at
48bc4fc and after the change, and compared with this (RENAMES maps the old roofline field names
to the new ones; paths and calibration-file locations are ignored). It printed 248 differences,
all of them the renamed keys of `flop_check` and of the ceilings' ridge points: no number moved.

    python scripts/compare_report_data.py OLD/data NEW/data
"""
import json, math, sys
from pathlib import Path

RENAMES = {"ai_dram": "ai_dram_flop_per_byte", "ai_l2": "ai_l2_flop_per_byte", "ai_l1": "ai_l1_flop_per_byte",
           "ridge_dram": "ridge_dram_flop_per_byte", "ridge_l2": "ridge_l2_flop_per_byte", "ridge_l1": "ridge_l1_flop_per_byte",
           "ai_dram_change": "ai_dram_flop_per_byte_change", "ai_l2_change": "ai_l2_flop_per_byte_change",
           "ai_l1_change": "ai_l1_flop_per_byte_change", "measured": "measured_per_s", "theoretical": "theoretical_per_s",
           "ridge_points": "ridge_flop_per_byte", "counted_by_precision": "counted_flops_by_precision"}
IGNORE = {"run_dir", "imported_from", "source"}

def norm(x, path=""):
    if isinstance(x, dict):
        return {k: norm(v, path + "/" + k) for k, v in x.items() if k not in IGNORE}
    if isinstance(x, list):
        return [norm(v, path) for v in x]
    return x

def rename_old(x, in_roofline=False):
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            inside = in_roofline or k in ("roofline", "roofline_rows")
            nk = RENAMES.get(k, k) if inside else k
            out[nk] = rename_old(v, inside)
        return out
    if isinstance(x, list):
        return [rename_old(v, in_roofline) for v in x]
    return x

diffs = 0
def cmp(a, b, path):
    global diffs
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                diffs += 1; print("KEY", path + "/" + k, "old" if k in a else "new", "only"); continue
            cmp(a[k], b[k], path + "/" + k)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs += 1; print("LEN", path, len(a), len(b)); return
        for i, (x, y) in enumerate(zip(a, b)):
            cmp(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        if not (a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(abs(a), abs(b))):
            diffs += 1; print("NUM", path, a, b)
    elif a != b:
        diffs += 1; print("VAL", path, repr(a)[:120], repr(b)[:120])

old, new = Path(sys.argv[1]), Path(sys.argv[2])
for f in sorted(old.glob("*.json")):
    a = norm(rename_old(json.loads(f.read_text())))
    b = norm(json.loads((new / f.name).read_text()))
    cmp(a, b, f.name)
print("differences:", diffs)

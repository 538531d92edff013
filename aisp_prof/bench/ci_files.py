"""`bench run --junit FILE --markdown FILE`: the gate's verdicts as files a CI job can show.

Both are made from `bench run --json`'s payload ({"hardware_key", "fails", "pairs": [PairOutcome
.to_dict()]}), so what a CI job shows is what the JSON says. JUnit XML (the Jenkins/Ant schema that
GitLab, GitHub test reporters and Jenkins read): one <testsuite> per pair, one <testcase> per
variant (classname = the pair, name = the variant), a <failure> whose message is the verdict's
cause where the variant fails the gate (SLOWER, MISSING; AMBIGUOUS with --strict), <error> for a
pair that could not be judged, <skipped> for one that cannot run here or that a gate cut off part
way ("interrupted": true) did not run; every case's verdict and change with its 95% interval in
<system-out>. Markdown: one table row per pair and variant, for a job summary or a pull-request
comment, and a line saying when the gate was cut off and which pairs it did not run.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

FAILING = ("SLOWER", "MISSING")
SKIPPED = ("skipped", "not run")          # a pair's status whose case is <skipped>: cannot run here, or cut off
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")     # characters XML 1.0 cannot hold


def _text(value: Any) -> str:
    return _NOT_XML.sub("?", str(value))


def variant_fails(verdict: dict[str, Any], strict: bool = False) -> bool:
    """The gate's rule (`analyze.gate.rules.failing`) on a verdict's dict."""
    if verdict.get("reference") or verdict.get("library"):
        return False
    return verdict["verdict"] in FAILING or (strict and verdict["verdict"] == "AMBIGUOUS")


def change_text(verdict: dict[str, Any]) -> str:
    """'time +3.1% [+3.0, +3.2] (margin 2.0%), cycles ...': each metric's observed/expected."""
    parts = []
    for m in verdict.get("metrics") or []:
        c = m["change"]
        parts.append(f"{m['metric']} {(c['value'] - 1) * 100:+.1f}% [{(c['low'] - 1) * 100:+.1f}, "
                     f"{(c['high'] - 1) * 100:+.1f}] (margin {m['margin'] * 100:.1f}%)")
    return ", ".join(parts) or "no timed change"


def _case(suite: ET.Element, pair: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": _text(pair), "name": _text(name), "time": "0"})


def _pair_suite(root: ET.Element, pair: dict[str, Any], strict: bool) -> dict[str, int]:
    """One <testsuite> of a pair; its counts."""
    suite = ET.SubElement(root, "testsuite", {"name": _text(pair["pair"])})
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    status, message = pair.get("status"), pair.get("message") or ""
    if status != "ok" and not pair.get("verdicts"):
        case = _case(suite, pair["pair"], "(pair)")
        kind = "skipped" if status in SKIPPED else {"error": "error"}.get(status, "failure")
        attrs = {"message": _text(message or status)} | ({} if kind == "skipped" else {"type": _text(status)})
        ET.SubElement(case, kind, attrs).text = _text(message or status)
        counts["tests"] += 1
        counts[{"skipped": "skipped", "error": "errors", "failure": "failures"}[kind]] += 1
    for v in pair.get("verdicts") or []:
        case = _case(suite, pair["pair"], v["variant"])
        counts["tests"] += 1
        cause = v.get("cause") or v["verdict"]
        if variant_fails(v, strict) or status == "failed_check":
            why = cause if status != "failed_check" else f"failed the correctness check: {message}"
            ET.SubElement(case, "failure", {"message": _text(why), "type": _text(v["verdict"])}).text = \
                _text(f"{v['verdict']}: {why}\n{change_text(v)}")
            counts["failures"] += 1
        ET.SubElement(case, "system-out").text = _text(f"{v['verdict']}" + (f" ({v['cause']})" if v.get("cause") else "")
                                                       + f": {change_text(v)}")
    suite.attrib.update({k: str(n) for k, n in counts.items()})
    return counts


def junit_xml(payload: dict[str, Any], strict: bool = False) -> str:
    """The payload as a JUnit XML document (see the module's docstring)."""
    root = ET.Element("testsuites", {"name": _text(f"aisp-prof bench ({payload.get('hardware_key') or 'unknown'})")})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for pair in payload.get("pairs") or []:
        for k, n in _pair_suite(root, pair, strict).items():
            totals[k] += n
    root.attrib.update({k: str(n) for k, n in totals.items() if k != "skipped"})     # testsuites has no skipped
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") or "-"


def markdown(payload: dict[str, Any], strict: bool = False) -> str:
    """The payload as a Markdown summary: the gate's result, then a row per pair and variant."""
    pairs = payload.get("pairs") or []
    fails = sum(1 for p in pairs for v in p.get("verdicts") or [] if variant_fails(v, strict)) + \
        sum(1 for p in pairs if p.get("status") in ("error", "failed_check"))
    result = "FAIL" if payload.get("fails") else "INTERRUPTED" if payload.get("interrupted") else "pass"
    head = (f"## aisp-prof bench: {result} "
            f"({len(pairs)} pair(s) on {payload.get('hardware_key') or 'an unknown GPU'}, {fails} failing)\n\n")
    if payload.get("interrupted"):
        left = [p["pair"] for p in pairs if p.get("status") == "not run"]
        head += (f"**The gate was cut off (interrupted) after {len(pairs) - len(left)} of {len(pairs)} pair(s)**; "
                 f"not run: {', '.join(left)}.\n\n")
    rows = ["| pair | variant | verdict | change (95% interval) | cause |", "| --- | --- | --- | --- | --- |"]
    for p in pairs:
        if p.get("status") != "ok" and not p.get("verdicts"):
            rows.append(f"| {_cell(p['pair'])} | - | {_cell(p.get('status'))} | - | {_cell(p.get('message'))} |")
        for v in p.get("verdicts") or []:
            mark = "**" if variant_fails(v, strict) else ""
            rows.append(f"| {_cell(p['pair'])} | {_cell(v['variant'])} | {mark}{_cell(v['verdict'])}{mark} | "
                        f"{_cell(change_text(v))} | {_cell(v.get('cause'))} |")
    from ..analyze.gate.verdict import MACHINE_SPREAD_GPU       # the library rule's bound (pandas: imported here)

    note = ("\nA variant fails on SLOWER (time and cycles beyond the A/A margin, no reference kernel moved as far) "
            "or MISSING" + (", and on AMBIGUOUS (--strict)" if strict else "") + "; a reference kernel never fails, nor "
            f"a pair's library variant that moved as machines do (at most {MACHINE_SPREAD_GPU:.0%}).\n")
    return head + "\n".join(rows) + "\n" + note


def write_atomic(path: Path, text: str) -> None:
    """`text` into `path` whole, or nothing there (a temporary file beside it, renamed)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)

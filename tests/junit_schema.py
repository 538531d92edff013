"""A check of a JUnit XML document against the structure of the Jenkins JUnit schema (junit-4.xsd,
the one Jenkins' xunit plugin, GitLab and GitHub test reporters accept; Ant's XMLJUnitResultFormatter
writes its subset): which element may hold which, in what order, with which attributes, which are
required, and that the counts add up. Returns the problems found ([] for a valid document)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

ATTRIBUTES = {
    "testsuites": ({"name", "time", "tests", "failures", "disabled", "errors"}, set()),
    "testsuite": ({"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp", "hostname",
                   "id", "package"}, {"name", "tests"}),
    "properties": (set(), set()),
    "property": ({"name", "value"}, {"name", "value"}),
    "testcase": ({"name", "assertions", "time", "classname", "status"}, {"name"}),
    "failure": ({"message", "type"}, set()),
    "error": ({"message", "type"}, set()),
    "skipped": ({"message"}, set()),
    "system-out": (set(), set()),
    "system-err": (set(), set()),
}
# children in schema order, with how many of each: "?" at most one, "*" any
CHILDREN = {
    "testsuites": [("testsuite", "*")],
    "testsuite": [("properties", "?"), ("testcase", "*"), ("system-out", "?"), ("system-err", "?")],
    "properties": [("property", "*")],
    "testcase": [("skipped", "?"), ("error", "*"), ("failure", "*"), ("system-out", "*"), ("system-err", "*")],
}
INTEGER = {"tests", "failures", "errors", "disabled", "skipped", "assertions"}
DECIMAL = re.compile(r"-?\d+(\.\d+)?")


def _check(el: ET.Element, problems: list[str]) -> None:
    allowed, required = ATTRIBUTES.get(el.tag, (None, None))
    if allowed is None:
        problems.append(f"element <{el.tag}> is not in the schema")
        return
    problems += [f"<{el.tag}> has attribute {a!r} the schema does not allow" for a in el.attrib if a not in allowed]
    problems += [f"<{el.tag}> lacks required attribute {a!r}" for a in required if a not in el.attrib]
    problems += [f"<{el.tag} {a}={v!r}> is not an integer" for a, v in el.attrib.items()
                 if a in INTEGER and not v.isdigit()]
    if "time" in el.attrib and not DECIMAL.fullmatch(el.attrib["time"]):
        problems.append(f"<{el.tag} time={el.attrib['time']!r}> is not a decimal")
    order = CHILDREN.get(el.tag, [])
    if not order and len(el):
        problems.append(f"<{el.tag}> may hold text only, holds <{el[0].tag}>")
    if el.tag in CHILDREN and (el.text or "").strip():
        problems.append(f"<{el.tag}> holds text")
    at = 0
    for i, child in enumerate(el):
        while at < len(order) and order[at][0] != child.tag:
            at += 1
        if at == len(order):
            problems.append(f"<{child.tag}> not allowed in <{el.tag}> at position {i} (order: {order})")
            return
        if order[at][1] == "?" and i + 1 < len(el) and el[i + 1].tag == child.tag:
            problems.append(f"<{el.tag}> holds more than one <{child.tag}>")
        _check(child, problems)


def _counts(suite: ET.Element, problems: list[str]) -> dict[str, int]:
    cases = suite.findall("testcase")
    got = {"tests": len(cases), "failures": sum(len(c.findall("failure")) > 0 for c in cases),
           "errors": sum(len(c.findall("error")) > 0 for c in cases),
           "skipped": sum(c.find("skipped") is not None for c in cases)}
    problems += [f"testsuite {suite.get('name')!r}: {k}={suite.get(k)} but {n} found" for k, n in got.items()
                 if suite.get(k) is not None and int(suite.get(k)) != n]
    return got


def junit_problems(text: str) -> list[str]:
    """What in `text` breaks the schema (an empty list: it validates)."""
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as exc:
        return [f"not well-formed XML: {exc}"]
    problems: list[str] = []
    if root.tag not in ("testsuites", "testsuite"):
        return [f"root element <{root.tag}>: must be <testsuites> or <testsuite>"]
    _check(root, problems)
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in suites:
        for k, n in _counts(suite, problems).items():
            if k in totals:
                totals[k] += n
    if root.tag == "testsuites":
        problems += [f"testsuites: {k}={root.get(k)} but {n} found" for k, n in totals.items()
                     if root.get(k) is not None and int(root.get(k)) != n]
    return problems

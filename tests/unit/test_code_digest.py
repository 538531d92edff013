"""A pair's code digest (`code_sha256`) ignores its Python comments and docstrings, so moving
measurements out of a docstring keeps the GPU evidence recorded before it; a change of one token
changes it, as it changes the text digest (`sha256`)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from pair_testing import import_fresh
from repo_paths import ROOT

from aisp_prof.analyze.gate import expectations as exp
from aisp_prof.pairs.source import python_code, source_digest

PAIR = "fused_l2norm"


@pytest.fixture
def module(tmp_path):
    """A copy of a real pair (module and .cu) in a chapter folder of its own."""
    chapter = tmp_path / "ch09"
    chapter.mkdir()
    for f in (ROOT / "kernels" / "ch09").glob(f"{PAIR}.*"):
        shutil.copy(f, chapter / f.name)
    return chapter / f"{PAIR}.py"


def _session(digest):
    return {"source_sha256": digest["sha256"], "code_sha256": digest["code_sha256"]}


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_a_docstring_edit_keeps_the_code_digest(module):
    before = source_digest(module)
    doc = '"""'
    text = module.read_text()
    start = text.index(doc) + 3
    module.write_text(text[:start] + "Measured on an H200: 1.23 ms (moved to the README).\n\n" + text[start:])
    _edit(module, "def ", 'def _added_for_the_test():\n    """A function docstring,\n    two lines."""\n    '
                          'return 1\n\n\ndef ')
    extra = source_digest(module)            # a function was added: other code (the docstring of it aside)
    assert extra["code_sha256"] != before["code_sha256"]
    _edit(module, '    """A function docstring,\n    two lines."""\n', '    """One line now."""\n')
    after = source_digest(module)
    assert after["sha256"] != extra["sha256"] and after["code_sha256"] == extra["code_sha256"]
    assert exp.same_code(_session(extra), _session(after))


def test_the_module_docstring_moved_out_entirely_keeps_the_code_digest(module):
    before = source_digest(module)
    text = module.read_text()
    start = text.index('"""')
    end = text.index('"""', start + 3) + 3
    module.write_text('"""What the pair teaches, in one line."""\n' + text[end:].lstrip("\n"))
    after = source_digest(module)
    assert after["sha256"] != before["sha256"] and after["code_sha256"] == before["code_sha256"]
    assert exp.same_code(_session(before), _session(after))
    assert exp.other_code({"sessions": [_session(before)]}, after["sha256"], after["code_sha256"]) == ""


def test_a_comment_edit_keeps_the_code_digest(module):
    before = source_digest(module)
    lines = module.read_text().splitlines(keepends=True)
    code_line = next(i for i, line in enumerate(lines) if line.startswith("DEFAULT_SIZES"))
    lines[code_line] = lines[code_line].rstrip("\n") + "   # a comment added after code\n"
    lines.insert(code_line, "# a comment line\n\n\n")
    module.write_text("".join(lines))
    after = source_digest(module)
    assert after["sha256"] != before["sha256"] and after["code_sha256"] == before["code_sha256"]
    assert exp.same_code(_session(before), _session(after))


def test_one_token_changes_both_digests(module):
    before = source_digest(module)
    text = module.read_text()
    assert "DEFAULT_SIZES" in text
    _edit(module, "DEFAULT_SIZES = {", "DEFAULT_SIZES = {**{}, ")       # one more token
    after = source_digest(module)
    assert after["sha256"] != before["sha256"] and after["code_sha256"] != before["code_sha256"]
    assert not exp.same_code(_session(before), _session(after))
    said = exp.other_code({"sessions": [_session(before)]}, after["sha256"], after["code_sha256"])
    assert (f"source digest {before['sha256'][:12]}, now {after['sha256'][:12]}" in said
            and f"code digest {before['code_sha256'][:12]}, now {after['code_sha256'][:12]}" in said)


def test_a_cuda_comment_is_code_as_far_as_the_digest_knows(module):
    before = source_digest(module)
    cu = module.with_suffix(".cu")
    cu.write_text("// a comment\n" + cu.read_text())
    after = source_digest(module)
    assert after["code_sha256"] != before["code_sha256"]


def test_same_code_falls_back_to_the_text_digest():
    a = {"source_sha256": "a" * 64, "code_sha256": None}
    assert exp.same_code(a, {"source_sha256": "a" * 64, "code_sha256": "c" * 64})      # text equal, code unknown
    assert not exp.same_code(a, {"source_sha256": "b" * 64, "code_sha256": "c" * 64})
    assert exp.same_code({"source_sha256": "a" * 64, "code_sha256": "c" * 64},
                         {"source_sha256": "b" * 64, "code_sha256": "c" * 64})           # code equal
    assert exp.same_code(a, {})                                                          # unknown: as before
    said = exp.other_code({"sessions": [a]}, "b" * 64, "c" * 64)
    assert "source digest aaaaaaaaaaaa, now bbbbbbbbbbbb" in said and "code digest not recorded" in said


def test_python_code_keeps_strings_and_drops_only_comments_and_docstrings():
    text = ('"""Module doc."""\nimport os  # why\n\n\nclass A:\n    """Class doc."""\n    x = "# not a comment"\n'
            '    def f(self):\n        """Doc."""\n        return """\n\nkeep the blank line above\n"""\n')
    code = python_code(text.encode()).decode()
    assert code == ('import os\nclass A:\n    x = "# not a comment"\n    def f(self):\n'
                    '        return """\n\nkeep the blank line above\n"""')
    blank_changed = text.replace('return """\n\n', 'return """\n')
    assert python_code(blank_changed.encode()) != python_code(text.encode())      # a string's value changed
    assert python_code(b"def broken(:\n") == b"def broken(:\n"                    # not Python: the text itself
    assert python_code('x = "é"  # ü\n'.encode()) == 'x = "é"'.encode()


def _backfill_module():
    return import_fresh(ROOT / "dev" / "backfill_code_digest.py", "backfill_code_digest_dev")


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_backfill_proves_a_session_from_a_git_version(tmp_path):
    """A session recorded from an older commit gets that version's code digest, proven by its text
    digest (the git_sha it names is only a hint: here a wrong one); one of today's text gets
    today's; one no version reproduces, and one without a digest, get none; the file changes only
    by the added keys."""
    repo = tmp_path / "repo"
    chapter, common = repo / "kernels" / "chXX", repo / "kernels" / "common"
    chapter.mkdir(parents=True)
    common.mkdir()
    module = chapter / "k.py"
    module.write_text('"""Measured: 1.0 ms."""\nPAIR = None  # the pair\n')
    (chapter / "k.cu").write_text('#include "../common/h.cuh"\nint k() { return H; }\n')
    (common / "h.cuh").write_text("#define H 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "v1")
    v1 = source_digest(module)
    (common / "h.cuh").write_text("#define H 2\n")                     # the code changes in a header
    _git(repo, "commit", "-qam", "v2")
    module.write_text('"""What the pair teaches."""\nPAIR = None\n')     # then only the docstring
    _git(repo, "commit", "-qam", "v3")
    now = source_digest(module)
    assert v1["code_sha256"] != now["code_sha256"] and v1["files"] == now["files"]

    sessions = [{"source_sha256": v1["sha256"], "git_sha": "0" * 40, "samples": {}},
                {"source_sha256": now["sha256"], "git_sha": _git(repo, "rev-parse", "HEAD~2"), "samples": {}},
                {"source_sha256": "f" * 64, "git_sha": None, "samples": {}},
                {"source_sha256": None, "samples": {}}]
    file = chapter / "expectations_test.json"
    exp.save(file, {"format": exp.FORMAT, "pairs": {"chXX.k": {"sessions": sessions, "sizes": {"n": [1, 2]}}}})
    before = file.read_text()

    counts = _backfill_module().backfill(repo, [file], say=lambda m: None)[str(file)]
    assert (counts["tree"], counts["history"], counts["unproven"], counts["no_digest"]) == (1, 1, 1, 1)
    got = [s.get("code_sha256") for s in exp.read_any(file)["pairs"]["chXX.k"]["sessions"]]
    assert got == [v1["code_sha256"], now["code_sha256"], None, None]
    data = exp.read_any(file)
    for s in data["pairs"]["chXX.k"]["sessions"]:
        s.pop("code_sha256", None)
    assert exp.dumps(data) + "\n" == before                            # nothing else moved
    assert exp.same_code(sessions[1] | {"code_sha256": now["code_sha256"]}, now | {"source_sha256": now["sha256"]})


def test_shipped_h200_sessions_of_todays_text_carry_todays_code_digest():
    """Every H200 session recorded from the pair's files as they are today names today's code
    digest (dev/backfill_code_digest.py gave the older ones theirs)."""
    checked = 0
    for file in sorted((ROOT / "kernels").glob("ch*/expectations_h200.json")):
        for name, entry in exp.read_any(file).get("pairs", {}).items():
            chapter, _, stem = name.partition(".")
            now = source_digest(ROOT / "kernels" / chapter / f"{stem}.py")
            for session in entry.get("sessions", []):
                if session.get("source_sha256") == now["sha256"]:
                    assert session.get("code_sha256") == now["code_sha256"], (file.name, name)
                    checked += 1
    assert checked >= 40


# Pairs whose shipped current-format evidence may name other code than the tree's, each with why (none today).
# A kernel change without a recording on the card is a choice to write here, not something a comment edit in a
# header does unseen: a C/C++ comment is code to the digest (test_a_cuda_comment_is_code_as_far_as_the_digest_knows).
STALE_EVIDENCE: dict[tuple[str, str], str] = {}


def test_the_newest_shipped_evidence_of_every_pair_is_of_the_code_in_the_tree():
    """The gate judges against evidence of the code in the tree, or says "recorded from other code: record it
    again". The shipped current-format evidence files (one card and multi-GPU keys) must not ship that case:
    a one-line comment in kernels/common/build_parts.h (170a37b) made the H200 evidence of three pairs other
    code, which only a fresh machine's gate showed (2026-11-30). The format-2 H100 files predate the format and
    are judged as such (tests/legacy_evidence.py)."""
    stale, checked = [], 0
    for file in sorted((ROOT / "kernels").glob("ch*/expectations_*.json")):
        data = exp.read_any(file)
        if data.get("format") != exp.FORMAT:
            continue
        for name, entry in data["pairs"].items():
            chapter, _, stem = name.partition(".")
            now = source_digest(ROOT / "kernels" / chapter / f"{stem}.py")
            newest = entry["sessions"][-1]
            checked += 1
            if not exp.same_code(newest, _session(now)) and (file.name, name) not in STALE_EVIDENCE:
                stale.append(f"{file.name}: {name} (recorded from code {newest.get('code_sha256', '?')[:12]}, "
                             f"now {now['code_sha256'][:12]}, files {', '.join(now['files'])})")
    assert checked >= 48
    assert not stale, "record these again on the card, or say why in STALE_EVIDENCE:\n" + "\n".join(stale)

"""Give every recorded gate session that lacks one its code digest (`code_sha256`), proven from
the text that produced it.

    python3 dev/backfill_code_digest.py                 # every kernels/*/expectations_*.json
    python3 dev/backfill_code_digest.py --dry-run FILE  # count only

Sessions recorded before `code_sha256` existed name only `source_sha256`, the digest of their
pair's files' text (aisp_prof.pairs.source.source_digest). For each one this finds that text: the
pair's files in the working tree first, else the versions of them in git history (the commit the
session names in `git_sha` first, it is a hint, then every commit that touched kernels/, newest
first; each version read with `git ls-tree`/`git cat-file`, the same as `git show <commit>:<path>`,
into a scratch folder laid out as kernels/ was, so local headers and sibling modules resolve as
they did). Only where the text digest computed there equals the recorded one is that version's
code digest written into the session. A session whose text no version reproduces (a run of an
uncommitted tree, or of a session without any digest) gets none, and is counted.

The files are rewritten with analyze.gate.expectations.save, the function that wrote them, and
only after checking that it reproduces each file byte for byte as it is: the sole change is the
added keys.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from aisp_prof.analyze.gate import expectations as exp  # noqa: E402
from aisp_prof.pairs.source import SOURCE_SUFFIXES, source_digest  # noqa: E402


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


class Versions:
    """The kernels/ source files of one commit after another, written into a scratch folder."""

    def __init__(self, repo: Path, scratch: Path) -> None:
        self.repo, self.scratch = repo, scratch
        self.blobs: dict[str, bytes] = {}
        self.cat = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def close(self) -> None:
        if self.cat.stdin:
            self.cat.stdin.close()
        self.cat.wait()

    def blob(self, sha: str) -> bytes:
        if sha not in self.blobs:
            assert self.cat.stdin and self.cat.stdout
            self.cat.stdin.write(sha.encode() + b"\n")
            self.cat.stdin.flush()
            header = self.cat.stdout.readline().split()
            data = self.cat.stdout.read(int(header[2]))
            self.cat.stdout.read(1)                      # the newline after the contents
            self.blobs[sha] = data
        return self.blobs[sha]

    def commits(self, hints: list[str]) -> Iterator[str]:
        """The hinted commits that exist, then every commit that touched kernels/, newest first."""
        seen: set[str] = set()
        for hint in hints:
            try:
                sha = _git(self.repo, "rev-parse", "--verify", "--quiet", f"{hint}^{{commit}}").strip()
            except subprocess.CalledProcessError:
                continue
            if sha and sha not in seen:
                seen.add(sha)
                yield sha
        for sha in _git(self.repo, "log", "--format=%H", "--", "kernels").split():
            if sha not in seen:
                seen.add(sha)
                yield sha

    def checkout(self, commit: str) -> Path:
        """kernels/ of `commit` (its source files only) in a fresh folder of the scratch space."""
        root = self.scratch / commit
        for line in _git(self.repo, "ls-tree", "-r", commit, "--", "kernels").splitlines():
            meta, path = line.split("\t", 1)
            _, kind, sha = meta.split()
            if kind != "blob" or Path(path).suffix not in SOURCE_SUFFIXES:
                continue
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.blob(sha))
        return root / "kernels"


def module_of(kernels: Path, pair: str) -> Path:
    chapter, _, stem = pair.partition(".")
    return kernels / chapter / f"{stem}.py"


def backfill(repo: Path, files: list[Path], dry_run: bool = False,
             say=print) -> dict[str, Counter]:
    """Add proven code digests to the sessions of `files`; per file, how many sessions were
    proven from the working tree (`tree`), from git history (`history`), or not at all
    (`unproven`; `no_digest`: sessions naming no source digest), and `had` one already."""
    loaded = {}
    wanted: dict[tuple[str, str], list[dict[str, Any]]] = {}      # (pair, source_sha256) -> sessions
    hints: list[str] = []
    counts: dict[str, Counter] = {}
    for path in files:
        text = path.read_text()
        data = exp.read_any(path)
        if exp.dumps(data) + "\n" != text:
            raise SystemExit(f"{path}: expectations.save would not rewrite it byte for byte; not touched")
        loaded[path] = data
        counts[str(path)] = Counter()
        for pair, entry in (data.get("pairs") or {}).items():
            for session in entry.get("sessions") or []:
                if session.get("code_sha256"):
                    counts[str(path)]["had"] += 1
                elif not session.get("source_sha256"):
                    counts[str(path)]["no_digest"] += 1
                else:
                    wanted.setdefault((pair, session["source_sha256"]), []).append(session)
                    if session.get("git_sha"):
                        hints.append(str(session["git_sha"]))
    proven: dict[tuple[str, str], tuple[str, str]] = {}           # -> (code digest, where)

    def look(kernels: Path, where: str) -> None:
        for pair in {p for p, _ in wanted}:
            module = module_of(kernels, pair)
            digest = source_digest(module) if module.is_file() else {}
            key = (pair, digest.get("sha256", ""))
            if key in wanted and key not in proven:
                proven[key] = (digest["code_sha256"], where)

    look(repo / "kernels", "tree")
    if len(proven) < len(wanted):
        with tempfile.TemporaryDirectory(prefix="aisp-backfill-") as scratch:
            versions = Versions(repo, Path(scratch))
            try:
                for commit in versions.commits(list(dict.fromkeys(hints))):
                    look(versions.checkout(commit), commit)
                    if len(proven) == len(wanted):
                        break
            finally:
                versions.close()
    for (pair, sha), sessions in wanted.items():
        code, where = proven.get((pair, sha), (None, ""))
        for session in sessions:
            if code:
                session["code_sha256"] = code
        if code:
            say(f"{pair} {sha[:12]}: code digest {code[:12]} from {'the working tree' if where == 'tree' else where[:12]}")
        else:
            say(f"{pair} {sha[:12]}: no version of its files has this text digest; left without a code digest")
    for path, data in loaded.items():
        c = counts[str(path)]
        for pair, entry in (data.get("pairs") or {}).items():
            for session in entry.get("sessions") or []:
                key = (pair, session.get("source_sha256") or "")
                if key in wanted:
                    c[("tree" if proven[key][1] == "tree" else "history") if key in proven else "unproven"] += 1
        if not dry_run and (c["tree"] or c["history"]):
            exp.save(path, data)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="expectations files (default: kernels/*/expectations_*.json)")
    parser.add_argument("--repo", type=Path, default=REPO, help="the git checkout (default: this one)")
    parser.add_argument("--dry-run", action="store_true", help="count and say, write nothing")
    args = parser.parse_args(argv)
    files = args.files or sorted((args.repo / "kernels").glob("*/expectations_*.json"))
    counts = backfill(args.repo.resolve(), [f.resolve() for f in files], args.dry_run)
    for path, c in counts.items():
        print(f"{Path(path).relative_to(args.repo.resolve()) if Path(path).is_relative_to(args.repo.resolve()) else path}: "
              f"{c['tree']} proven from the working tree, {c['history']} from git history, {c['unproven']} unproven, "
              f"{c['no_digest']} without a source digest, {c['had']} had one")
    return 0


if __name__ == "__main__":
    sys.exit(main())

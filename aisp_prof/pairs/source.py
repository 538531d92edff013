"""Which code a run measured: the pair's module and the sources beside it that share its name
(fused_l2norm.py and fused_l2norm.cu), hashed together with every local header they include.

Recorded evidence must come from the pair's own code. A run made from a test fixture under
$AISP_KERNELS (the gate's deliberate slowdowns carry the real pair's name) or from an older
version of the pair is refused by `bench record`, which compares this digest with the file the
pair resolves to now. Nothing here imports the module (no torch needed).

A local header is a quoted `#include "..."` of a C/C++/CUDA source that resolves beside the file
that includes it (`../common/wgmma_tma.cuh`), followed through headers it includes in turn. Those
bytes are the pair's code as much as its own `.cu`, so they are in the digest and in the CUDA build
cache key (aisp_kernels.build uses `local_includes` too). For the same reason a sibling pair module
that a pair loads with `load_sibling(__file__, "name.py", ...)` (aisp_kernels.siblings) is hashed
with its own same-named sources and their headers: the pair runs that code. Angle-bracket includes are system headers;
a bare quoted name that is not beside the file (`"cutlass/cutlass.h"`) comes from an `-I` folder,
a library like CUTLASS: neither is hashed. An explicitly relative one (`./x.h`, `../x.h`) that is
not there is hashed as its name and a marker (the compiler reports it). A source that includes no
local header digests exactly as it did before headers were followed.

Two digests of the same files. `sha256` hashes their text as it is: any edit, a comment or a
docstring included, changes it. `code_sha256` hashes the code alone: each Python file without its
comments and its docstrings (module, class and function), the C/C++/CUDA files as they are (their
comments are not stripped: doing that safely needs a preprocessor-aware reader, out of scope
here), in the same order and framing. A docstring or comment edit therefore keeps `code_sha256`,
and the gate still counts evidence recorded before it as evidence of this code
(same_code); a change of one token changes both. `dev/backfill_code_digest.py`
gave the sessions recorded before `code_sha256` existed theirs, from the text that produced them.
"""
from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import tokenize
from pathlib import Path
from typing import Any, Mapping

from ..errors import AispError
from ..paths import data_root, kernels_root

SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cpp", ".h", ".hpp")
C_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".hpp")          # sources whose quoted includes are followed
MISSING = b"\0missing local include\0"                      # hashed in place of an absent header's bytes
_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\r\n]+)"', re.MULTILINE)
_SIBLING_LOAD = re.compile(rb'load_sibling\(\s*__file__\s*,\s*"([^"\r\n]+)"')


CODE_DIGEST_VERSION = b"code digest 1\0"                  # hashed first: a new way of stripping gets new digests


def python_code(text: bytes) -> bytes:
    """A Python file's code: its text without comments and without the docstrings of the module,
    its classes and its functions, and without the lines that leaves blank (and those that were);
    every other character as it was. Not parseable (a fragment, a syntax error): the text as it is.

    Why text minus spans rather than `ast.dump` or the token stream: the digest is computed on the
    GPU machine when a run is made and compared later on another machine, maybe under another
    Python, so it must not depend on the interpreter. `ast.dump`'s text does (3.12 added
    `type_params`, 3.13 leaves out empty fields), and so does tokenize's stream (3.12 splits
    f-strings into FSTRING_* tokens, PEP 701). What is used here is stable since Python 3.8: the
    line/column spans of docstring nodes (ast) and of COMMENT tokens (tokenize). Lines inside a
    multi-line string literal are kept even when blank (they are part of its value), and so is
    everything else, so reformatted code (a line rewrapped) counts as other code: the error is on
    the safe side. A docstring is removed even if the module reads its `__doc__`; the pairs do not
    time theirs."""
    try:
        source = text.decode("utf-8")
        tree = ast.parse(source)
        comments = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    except (SyntaxError, ValueError, UnicodeDecodeError, tokenize.TokenError):
        return text
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cut: dict[int, list[tuple[int, int]]] = {}       # line (1-based) -> character ranges removed from it
    protected: set[int] = set()                     # lines inside a multi-line string literal

    def char(line: int, byte_col: int) -> int:      # ast columns count UTF-8 bytes, tokenize's characters
        return len(lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    def remove(start: tuple[int, int], end: tuple[int, int]) -> None:
        for n in range(start[0], end[0] + 1):
            cut.setdefault(n, []).append((start[1] if n == start[0] else 0,
                                          end[1] if n == end[0] else len(lines[n - 1])))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.end_lineno and node.end_lineno > node.lineno:
            protected.update(range(node.lineno + 1, node.end_lineno))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                remove((first.lineno, char(first.lineno, first.col_offset)),
                       (first.end_lineno, char(first.end_lineno, first.end_col_offset)))
    docstring_lines = set(cut)
    for t in comments:
        remove(t.start, t.end)
    kept = []
    for n, line in enumerate(lines, 1):
        for a, b in sorted(cut.get(n, []), reverse=True):
            line = line[:a] + line[b:]
        if n in cut and n not in docstring_lines:   # a comment went: so does the space before it
            line = line.rstrip()
        if line.strip() or n in protected and n not in docstring_lines:
            kept.append(line)
    return "\n".join(kept).encode("utf-8")


def code_bytes(name: str, data: bytes) -> bytes:
    """What `code_sha256` hashes of one file: a Python file's code (python_code), any other as it is."""
    return python_code(data) if name.endswith(".py") else data


def local_includes(*sources: Path) -> list[tuple[str, bytes]]:
    """The local headers `sources` include, directly or through one another: (name, bytes) each
    once, depth first in the order they are included. `name` is the header's path relative to the
    folder of the first source (posix, e.g. "../common/wgmma_tma.cuh"), the same on every machine.
    The sources themselves are never listed (a header that includes its includer ends the walk
    there: cycles terminate). A missing explicitly relative header is (name, MISSING)."""
    if not sources:
        return []
    base = Path(sources[0]).resolve().parent
    seen = {Path(s).resolve() for s in sources}
    found: list[tuple[str, bytes]] = []

    def walk(path: Path, text: bytes) -> None:
        for match in _QUOTED_INCLUDE.finditer(text):
            spelled = match.group(1).decode(errors="replace").strip()
            header = (path.parent / spelled).resolve()
            if header in seen:
                continue
            name = Path(os.path.relpath(header, base)).as_posix()
            if not header.is_file():
                if spelled.startswith(("./", "../")):      # meant to be here, and is not
                    seen.add(header)
                    found.append((name, MISSING))
                continue                                   # from an -I folder (CUTLASS): not ours
            seen.add(header)
            data = header.read_bytes()
            found.append((name, data))
            walk(header, data)

    for source in sources:
        source = Path(source).resolve()
        if source.suffix in C_SUFFIXES and source.is_file():
            walk(source, source.read_bytes())
    return found


def pair_files(module: Path) -> list[Path]:
    """The module and its same-named sources, in a fixed order."""
    return sorted(p for p in module.parent.glob(f"{module.stem}.*")
                  if p.suffix in SOURCE_SUFFIXES and p.is_file())


def sibling_files(files: list[Path]) -> list[Path]:
    """The files of the sibling pair modules that the Python files among `files` load with
    `load_sibling(__file__, "x.py", ...)`, with their same-named sources, and what those load in
    turn: each once, in order of first use, never one of `files`. A sibling that is not there is
    listed as its path (source_digest hashes a marker for it)."""
    seen = {Path(f).resolve() for f in files}
    found: list[Path] = []

    def walk(module: Path) -> None:
        for match in _SIBLING_LOAD.finditer(module.read_bytes()):
            sibling = module.with_name(match.group(1).decode(errors="replace"))
            for f in (pair_files(sibling) if sibling.is_file() else [sibling]):
                if f.resolve() in seen:
                    continue
                seen.add(f.resolve())
                found.append(f)
                if f.suffix == ".py" and f.is_file():
                    walk(f)

    for f in files:
        if Path(f).suffix == ".py" and Path(f).is_file():
            walk(Path(f))
    return found


def shown_path(path: Path) -> str:
    """Relative to the project root when inside it (the same on every machine), else absolute."""
    path = path.resolve()
    try:
        return path.relative_to(data_root().resolve()).as_posix()
    except (ValueError, AispError):
        return str(path)


def source_digest(module: Path) -> dict[str, Any]:
    """{path, sha256, code_sha256, files} of a pair module; {} when it is not a file (a pair built
    in a test). `sha256` hashes the files' text, `code_sha256` their code (module docstring).

    `files`: the pair's own files, then the local headers they and its siblings include, then the
    sibling modules' files (both relative to the module's folder). Headers and siblings are hashed
    after the pair's files, so a pair with neither hashes as it did before either was followed."""
    if not module.is_file():
        return {}
    files = pair_files(module)
    siblings = sibling_files(files)
    headers = local_includes(*files, *[s for s in siblings if s.is_file()]) if files else []
    sibling_names = [Path(os.path.relpath(s.resolve(), module.resolve().parent)).as_posix() for s in siblings]
    parts = ([(b"", f.name, f.read_bytes()) for f in files]
             + [(b"include\0", name, data) for name, data in headers]
             + [(b"sibling\0", name, path.read_bytes() if path.is_file() else MISSING)
                for name, path in zip(sibling_names, siblings)])
    text, code = hashlib.sha256(), hashlib.sha256(CODE_DIGEST_VERSION)
    for tag, name, data in parts:
        text.update(tag + name.encode() + b"\0" + data + b"\0")
        code.update(tag + name.encode() + b"\0" + (data if data is MISSING else code_bytes(name, data)) + b"\0")
    return {"path": shown_path(module), "sha256": text.hexdigest(), "code_sha256": code.hexdigest(),
            "files": [f.name for f in files] + [name for name, _ in headers] + sibling_names}


def expected_module(pair_name: str) -> Path:
    """Where the pair's module is now: kernels/chNN/<name>.py under the current kernels root."""
    chapter, _, stem = pair_name.partition(".")
    return kernels_root() / chapter / f"{stem}.py"


def source_mismatch(recorded: Mapping[str, Any] | None, pair_name: str) -> str:
    """Why a run's code is not the pair's code now ('' when it is, or when the run predates digests).
    The same code: the code digests match where both are known (a docstring or comment edit since
    the run does not matter), else the text digests match."""
    if not recorded:
        return ""
    now = source_digest(expected_module(pair_name))
    if not now:
        return f"the pair's module {shown_path(expected_module(pair_name))} is not here to compare with"
    if recorded.get("path") != now["path"]:
        return f"the run measured {recorded.get('path')}, not the pair's module {now['path']}"
    code, code_now = recorded.get("code_sha256"), now["code_sha256"]
    if (recorded.get("sha256") or code) and same_code({"source_sha256": recorded.get("sha256"), "code_sha256": code},
                                                      {"source_sha256": now["sha256"], "code_sha256": code_now}):
        return ""
    digests = [f"source digest {str(recorded.get('sha256'))[:12]}, now {now['sha256'][:12]}"]
    digests += [f"code digest {code[:12]}, now {code_now[:12]}"] if code else []
    return f"{now['path']} (with {', '.join(now['files'])}) changed since the run ({'; '.join(digests)})"


def same_code(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two sessions (or a session and a source digest) measured the same code. Their code
    digests (`code_sha256`: the code without comments and docstrings) decide where both name one
    and they match; otherwise their text digests (`source_sha256`), where both name one; otherwise
    their code digests, where both name one. False only when the digests both name differ: a
    session that names neither counts as the same (which code it measured is unknown)."""
    code_a, code_b = a.get("code_sha256"), b.get("code_sha256")
    text_a, text_b = a.get("source_sha256"), b.get("source_sha256")
    if code_a and code_b and code_a == code_b:
        return True
    if text_a and text_b:
        return text_a == text_b
    return not (code_a and code_b)

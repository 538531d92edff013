"""`aisp-prof new NAME`: write a commented template of a pair module and its pytest file.

The template is a working pair (unfused eager mul + add + relu against one fused Triton kernel)
that passes its own CPU test, so a user starts from something that runs and edits it.
Nothing is overwritten, and nothing is half-written: both paths are checked first, and each
file is created exclusively.
"""
from __future__ import annotations

import contextlib

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import OutputError, os_error_message

TEMPLATES = Path(__file__).with_name("templates")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class NewPair:
    """The files `new` wrote."""

    module: Path
    test: Path

    def as_dict(self) -> dict[str, str]:
        return {"module": str(self.module), "test": str(self.test)}


def file_stem(name: str) -> str:
    """my.fused_add -> fused_add (the module file's stem: the name's last part)."""
    return name.rsplit(".", 1)[-1]


def render(name: str, chapter: int = 0) -> tuple[str, str]:
    """The pair module's text and its test's, for pair `name`."""
    stem = file_stem(name)
    fields = {"name": name, "chapter": chapter, "module_file": f"{stem}.py", "test_file": f"test_{stem}.py"}
    return ((TEMPLATES / "pair.py.tmpl").read_text().format(**fields),
            (TEMPLATES / "test.py.tmpl").read_text().format(**fields))


def write_new(name: str, folder: Path = Path("."), chapter: int = 0) -> NewPair:
    """Write <folder>/<stem>.py and <folder>/test_<stem>.py for pair `name`. ValueError for a
    name that is not dotted identifiers; OutputError (exit 14) if either file exists or the
    folder cannot be written."""
    if not NAME.match(name):
        raise ValueError(f"bad pair name {name!r}: use letters, digits, _ and dots, e.g. mine.fused_add")
    stem = file_stem(name)
    out = NewPair(folder / f"{stem}.py", folder / f"test_{stem}.py")
    taken = [str(p) for p in (out.module, out.test) if p.exists()]
    if taken:
        raise OutputError(f"not overwriting {', '.join(taken)}: choose another name or --dir")
    module_text, test_text = render(name, chapter)
    written: list[Path] = []
    made = [p for p in (folder, *folder.parents) if not p.exists()]      # folders this call makes
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, text in ((out.module, module_text), (out.test, test_text)):
            with open(path, "x") as fh:
                written.append(path)
                fh.write(text)
    except OSError as exc:            # a full disk: no half file and no empty folder left (issue 31)
        for path in written:
            path.unlink(missing_ok=True)
        for made_folder in made:
            with contextlib.suppress(OSError):
                made_folder.rmdir()
        raise OutputError(os_error_message(exc, f"writing the template to {folder}")) from exc
    return out

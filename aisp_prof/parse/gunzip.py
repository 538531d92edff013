"""A gzipped export read as the plain file: `nsys.sqlite.gz` (the shipped samples' SQLite exports
are ~6x smaller so), parsed by the same code as `nsys.sqlite`.

SQLite needs a file it can open, so the export is decompressed into a temporary folder that is
removed when the reading ends, also on error; a cut or corrupt gzip is an ExportParseError (exit 6)
naming the `.gz` file. Errors raised while the plain copy is read name the `.gz` file too, not the
temporary copy.
"""
from __future__ import annotations

import contextlib
import gzip
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from aisp_prof.errors import ExportParseError

GZ = ".gz"


def is_gzipped(path: Path) -> bool:
    return path.name.lower().endswith(GZ)


@contextlib.contextmanager
def gunzipped(path: Path, hint: str) -> Iterator[Path]:
    """`path` itself, or for `X.gz` a decompressed `X` in a temporary folder, removed on leaving.
    `hint` ends the message of a damaged gzip (what to do about it)."""
    if not is_gzipped(path):
        yield path
        return
    if not path.is_file():
        raise ExportParseError(f"{path}: no such file")
    with tempfile.TemporaryDirectory(prefix="aisp_gunzip_") as tmp:
        plain = Path(tmp) / path.name[: -len(GZ)]
        try:
            with gzip.open(path, "rb") as src, plain.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise ExportParseError(f"{path}: not a whole gzip file ({exc}); {hint}") from exc
        except OSError as exc:
            raise ExportParseError(f"{path}: cannot decompress it into {tmp} ({exc.strerror or exc}); "
                                   "free space there or set TMPDIR") from exc
        try:
            yield plain
        except ExportParseError as exc:
            raise type(exc)(str(exc).replace(str(plain.resolve()), str(path)).replace(str(plain), str(path))) from exc

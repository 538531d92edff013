"""A copy of a real export with one field changed or removed: the fault tests' only way to make a
bad export, so that each is a real capture with exactly one thing wrong. Not a test module."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path


def edited_copy(src: Path, dst: Path, *sql: str) -> Path:
    """`src` copied to `dst`, then each statement of `sql` run on the copy (each must touch one row)."""
    shutil.copyfile(src, dst)
    with sqlite3.connect(dst) as conn:
        for statement in sql:
            assert conn.execute(statement).rowcount == 1, statement
    conn.close()
    return dst

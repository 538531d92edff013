"""The HTML page of `aisp-prof diff --html OUT`: one offline page, the report's style."""
from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path
from typing import Any, Mapping

from ..errors import OutputError, os_error_message
from .report import page_assets, template_env


def write_diff_page(diff: Mapping[str, Any], out: Path) -> Path:
    """Write the diff to `out` (a .html file, or a folder that gets diff.html); its path."""
    from .diff_table import headline, table_rows

    path = out / "diff.html" if out.suffix != ".html" else out
    header, rows = table_rows(diff)
    html = template_env().get_template("diff.html.j2").render(
        d=diff, header=header, rows=rows, lines=headline(diff),
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), **page_assets())
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]     # folders this call makes
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(html)
        tmp.replace(path)
    except OSError as exc:            # a full disk: neither a 0-byte .tmp nor an empty folder is left (issue 31)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise OutputError(os_error_message(exc, f"writing the diff page to {path}")) from exc
    return path

"""Whether a stored run knows a variant: the one check behind `--variant` on every query, so a
typo gets close names instead of an empty table."""
from __future__ import annotations

import difflib

from ..arguments import text
from ..errors import UnknownTargetError
from .db import Reader

VARIANT_TABLES = ("kernels", "timeline", "ranges", "checks", "timings")    # where a run names its variants


def check_variant(conn: Reader, run_id: str, variant: str) -> None:
    """UnknownTargetError (with close names) unless the run knows `variant`: a typo is said,
    while a variant the run has but with no kernel launches is an empty answer, not an error."""
    variant = text(variant, "variant", "a variant's name")
    known: set[str] = set()
    for table in VARIANT_TABLES:
        if "variant" in conn.columns(table):
            known |= {r["variant"] for r in conn.query(f"SELECT DISTINCT variant FROM [{table}] WHERE run_id = ? "
                                                       "AND variant IS NOT NULL AND variant != ''", [run_id])}
    if variant in known:
        return
    close = difflib.get_close_matches(variant, sorted(known), n=3, cutoff=0.4)
    hint = (f"did you mean {', '.join(close)}?" if close else
            f"it has {', '.join(sorted(known))}" if known else "it names no variants")
    raise UnknownTargetError(f"run {run_id} has no variant {variant!r}; {hint}")

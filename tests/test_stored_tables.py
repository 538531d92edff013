"""What the store holds for the shipped samples, value for value, is what the code before issue
17's rewrite of the write path stored (tests/fixtures/stored_tables_digest.json, made by
`python tests/stored_digest.py` at commit 945910d)."""
from __future__ import annotations

import json
from pathlib import Path

from stored_digest import shipped_digest

GOLDEN = Path(__file__).parent / "fixtures" / "stored_tables_digest.json"


def test_shipped_samples_store_the_same_values(tmp_path):
    golden = json.loads(GOLDEN.read_text())
    now = shipped_digest(tmp_path)
    assert sorted(now) == sorted(golden)
    differ = {(run, table): (golden[run][table], now[run][table]) for run in golden for table in golden[run]
              if golden[run][table] != now[run][table]}
    assert not differ, differ

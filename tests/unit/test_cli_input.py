"""Bad input to the CLI: one line on stderr saying what to do and the README's exit code, never a
traceback, an "unexpected <Exception>" line or a half-written output; close names suggested."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from repo_paths import PROFILES

from aisp_prof.cli import cli

CLUSTER = PROFILES / "samples_h100_ch10" / "20261126T122302Z-ch10.cluster_group-eb76"
L2NORM = PROFILES / "samples" / "20261126T011557Z-ch09.fused_l2norm-90df"


def invoke(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_error_line(result, code: int, *said: str) -> str:
    """The error line of a command that must exit `code`, with each of `said` in it."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and "unexpected" not in result.output, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("aisp-prof: error:")] or [result.stderr]
    for text in said:
        assert text in lines[-1], lines
    return lines[-1]


@pytest.fixture
def db(sample_dbs, tmp_path):
    return sample_dbs.copy(tmp_path / "a.db", CLUSTER, L2NORM)


def test_a_plain_folder_is_refused_before_its_files_are_hashed(tmp_path, monkeypatch):
    from aisp_prof.store import identity

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "big.bin").write_bytes(b"x" * 1000)
    hashed = []
    real = identity.content_key
    monkeypatch.setattr(identity, "content_key", lambda paths: hashed.append(paths) or real(paths))
    result = invoke("import", plain, "--db", tmp_path / "a.db")
    one_error_line(result, 6, "not an aisp-prof run folder", "run.json")
    assert hashed == []

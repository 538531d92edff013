"""Size rules: every pair's defaults pass its own rules, a size off them is a SizesError (exit 12)
naming the rule and the nearest valid sizes, raised before anything runs; `list --json` shows them."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from aisp_prof.cli import cli
from aisp_prof.errors import SizesError
from aisp_prof.pairs import SizeRule, discover, pair_sizes
from aisp_prof.pairs.size_rules import broken_rules

pytest.importorskip("torch")
PAIRS = discover()
RULED = [p for p in PAIRS if p.size_rules]


def test_a_rule_names_the_nearest_valid_sizes():
    rule = SizeRule("n", step=1024, minimum=1024, why="whole tiles")
    assert rule.broken({"n": 2048}) is None
    assert rule.broken({"n": 1000}) == ("n=1000: must be a multiple of 1024, >= 1024 (whole tiles); "
                                        "nearest valid: n=1024")
    assert rule.nearest(3000, {}) == [2048, 3072]
    assert SizeRule("k", maximum=512).nearest(600, {}) == [512]
    assert SizeRule("c", choices=(2, 4, 8)).nearest(3, {}) == [2, 4]
    per = SizeRule("embed", step=8, per="heads")
    assert per.valid(100, {"heads": 4}) is False and per.nearest(100, {"heads": 4}) == [96, 128]
    assert per.text() == "embed: a multiple of 8 x heads, >= 1"


def test_a_rule_for_a_size_the_pair_lacks_is_refused():
    from dataclasses import replace

    with pytest.raises(ValueError, match="size rules for sizes it does not have: nope"):
        replace(PAIRS[0], size_rules=(SizeRule("nope"),))


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_the_default_and_small_sizes_pass_the_rules(pair):
    assert pair_sizes(pair) == dict(pair.sizes)
    assert not broken_rules(pair.size_rules, pair.small_sizes or pair.sizes)


def _bad_value(rule: SizeRule, sizes: dict[str, int]) -> int:
    if rule.choices:
        return max(rule.choices) + 1
    if rule.step_for(sizes) > 1:
        return int(sizes[rule.key]) + 1
    return rule.maximum + 1 if rule.maximum is not None else rule.minimum - 1


@pytest.mark.parametrize("pair", RULED, ids=lambda p: p.name)
def test_a_size_off_each_rule_is_a_sizes_error_with_the_nearest(pair):
    for rule in pair.size_rules:
        bad = _bad_value(rule, dict(pair.sizes))
        if bad < 0:             # --sizes takes no negative number at all (parse_sizes)
            continue
        with pytest.raises(SizesError, match=f"{rule.key}={bad}: must be .*nearest valid: {rule.key}="):
            pair_sizes(pair, f"{rule.key}={bad}")


def test_run_refuses_before_anything_runs(tmp_path):
    res = CliRunner().invoke(cli, ["run", "ch10.cluster_pipeline", "--sizes", "n=1000,k=1001",
                                   "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 12, res.output
    line = [ln for ln in res.output.splitlines() if ln.startswith("aisp-prof: error")]
    assert len(line) == 1 and "k=1001: must be a multiple of 8" in line[0]
    assert "nearest valid: k=1000 or k=1008" in line[0]
    assert "Traceback" not in res.output and not (tmp_path / "a.db").exists()


def test_list_json_shows_each_pairs_rules():
    res = CliRunner().invoke(cli, ["list", "--chapter", "ch10", "--json"])
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert any("multiple of" in t for t in rows["ch10.cluster_pipeline"]["size_rules"])
    assert rows["ch10.batch"]["size_rules"] == []

"""`aisp-prof bench agree`: each stored run's ratios against the gate's recorded evidence on its card.

The newest stored run of every pair and card (card: `hardware_key` of the run's GPU and rank count,
the key of the expectations file it is compared with) is read from the run database, its pair's
entry from `kernels/chNN/expectations_<card>.json` (any format: the format-2 files the gate reads
as outdated still hold the ratio it once judged by), and `analyze.gate.agree` compares them.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Sequence

from ..analyze.gate import expectations as exp
from ..analyze.gate.agree import Agreement, Evidence, RunView, agreements
from ..errors import AispError, InstallError, RegressionError, UnknownTargetError, shorten
from ..arguments import texts
from ..naming import chapter_key, chapter_of_pair, close_names, hardware_key
from ..paths import data_root, kernels_root


def agree(db: Any, targets: Sequence[str] = (), card: str | None = None) -> list[Agreement]:
    """Every optimized variant of the newest run of each pair (of `targets`: chapters or pairs; none:
    all) and card (`card`: only that hardware key) in the RunDatabase `db`, against its evidence."""
    runs = [r for r in db.run_list() if r.get("pair")]
    listing = [r for r in runs if r.get("status") == "ok"]      # a failed check's speedups mean nothing
    if not listing:
        raise UnknownTargetError(f"no stored run of a pair in {shorten(db.path)}{_not_ok(runs)}; `aisp-prof import` "
                                 "the shipped samples first (aisp-prof import profiles/samples*/2026*)")
    names = [t.strip() for item in texts(targets, "targets", "a chapter or pair name") for t in item.split(",")
             if t.strip()]
    for t in names:
        if not any(_matches(str(r["pair"]), [t]) for r in listing):
            of_t = [r for r in runs if _matches(str(r["pair"]), [t])]
            raise UnknownTargetError(f"no stored run of target {t!r} in {shorten(db.path)}"
                                     + (_not_ok(of_t) if of_t else _close(t, listing)))
    wanted = [r for r in listing if _matches(str(r["pair"]), names)]
    newest: dict[tuple[str, str], Any] = {}
    cards: set[str] = set()
    for run in db.open_runs([r["run_id"] for r in wanted]):
        info = run.data.info
        key = hardware_key(run.data.gpu_name, int(info.get("world_size") or 1))
        cards.add(key)
        if card is None or key == card:
            newest[(str(run.data.run.get("pair")), key)] = run           # oldest first: the newest wins
    if not newest:
        raise UnknownTargetError(f"no stored run{' of ' + ', '.join(names) if names else ''} on card {card!r} in "
                                 f"{shorten(db.path)}; {_card_hint(card, cards)}" if card else
                                 f"no stored run of {', '.join(names)} in {shorten(db.path)}")
    out: list[Agreement] = []
    for (pair, key), run in sorted(newest.items()):
        out += agreements(run_view(run, key), evidence_of(pair, key))
    return out


def _card_hint(card: str, cards: set[str]) -> str:
    """What --card can be instead: close names among the cards with stored runs, and all of them."""
    close = sorted((c for c in cards if card.lower() in c), key=len)[:3] \
        or difflib.get_close_matches(card, sorted(cards), n=3, cutoff=0.4)       # 'h100': h100_80gb_hbm3 first
    return (f"did you mean {', '.join(close)}? " if close else "") + f"--card takes {', '.join(sorted(cards))}"


def _not_ok(runs: Sequence[Any]) -> str:
    """What the stored runs left out were, where there are some ('' where none): a target whose runs
    all failed their check has runs, just none whose speedups stand."""
    if not runs:
        return ""
    statuses = ", ".join(sorted({str(r.get("status")) for r in runs}))
    return f" whose check passed ({len(runs)} stored with status {statuses}, not compared)"


def _close(target: str, listing: Sequence[Any]) -> str:
    """'; did you mean ch10.cluster_group?' among the pairs (and their chapters) with a passing run."""
    close = close_names(target, sorted({str(r["pair"]) for r in listing}), cutoff=0.4)
    return f"; did you mean {', '.join(close)}?" if close else "; `aisp-prof runs` lists the stored runs"


def _matches(pair: str, names: Sequence[str]) -> bool:
    return not names or any(pair == t or (chapter_key(t) is not None and chapter_of_pair(pair) == chapter_key(t)
                                          and "." not in t) for t in names)


def run_view(run: Any, key: str) -> RunView:
    """What the comparison needs of an api.run.Run."""
    data = run.data
    return RunView(data.run_id, str(data.run.get("pair")), key, str(data.run.get("created_at") or ""), data.info,
                   run.summary, data.samples, run.verdict.get("findings") or [])


def evidence_of(pair: str, key: str) -> Evidence:
    """The pair's entry in the expectations file of its chapter and card (any format)."""
    path = exp.expectations_path(kernels_root(), pair.split(".", 1)[0], key)
    shown = _shown(path)
    if not path.exists():
        return Evidence(shown, None)
    try:
        data = exp.read_any(path)
    except (OSError, ValueError) as e:
        raise InstallError(f"cannot read {shown}: {shorten(e)}") from e
    return Evidence(shown, (data.get("pairs") or {}).get(pair), data.get("format"))


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(data_root().resolve()))
    except (ValueError, AispError):
        return str(path)


def agree_error(found: Sequence[Agreement]) -> AispError | None:
    """Exit 11 (the gate's) when a variant's ratios differ beyond both noises with no reason the data
    shows; None when every variant agrees, is explained, or has no evidence."""
    bad = [a for a in found if not a.explained]
    if not bad:
        return None
    names = ", ".join(f"{a.pair} {a.variant} ({a.card})" for a in bad[:5]) + (" ..." if len(bad) > 5 else "")
    return RegressionError(f"{len(bad)} variant(s) differ between the gate's evidence and the run beyond both "
                           f"noises, with no reason the data shows: {names}")

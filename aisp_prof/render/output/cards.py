"""`aisp-prof compare PAIR --cards --plot DIR`: the pair's roofline on each card, on one set of axes.

Each card's chart is `roofline_plot.draw` of that card's run with the limits `axes_limits` takes
from all of them, so the ridge points, roofs and points of the cards line up when the files are
put side by side. Each file is written under a hidden name and renamed: never half a chart.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ...errors import OutputError, os_error_message, shorten
from ...naming import file_slug


def axes_of(rooflines: dict[str, Any]) -> dict[str, list[float]]:
    """The shared axes of the cards' rooflines, as JSON: x in FLOP/byte (DRAM), y in FLOP/s."""
    from ..roofline_plot import axes_limits

    (x0, x1), (y0, y1) = axes_limits(list(rooflines.values()))
    return {"x_flop_per_byte": [x0, x1], "y_flop_per_s": [y0, y1]}


def draw_cards(pair: str, rooflines: dict[str, Any], out_dir: Path, fmt: str = "png") -> dict[str, str]:
    """{card: RooflineResult} -> {card: the chart's path}, `out_dir`/<pair>.<card>.<fmt>; all drawn
    under hidden names first, then renamed, so a failure leaves none of them."""
    from ..roofline_plot import axes_limits, draw

    limits = axes_limits(list(rooflines.values()))
    paths = {card: Path(out_dir) / f"{file_slug(pair)}.{file_slug(card)}.{fmt}" for card in rooflines}
    tmps = {card: p.with_name(f".{p.stem[:50]}.partial-{os.getpid()}.{fmt}") for card, p in paths.items()}
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        for card, roof in rooflines.items():
            draw(roof, tmps[card], limits=limits)
        for card, tmp in tmps.items():
            os.replace(tmp, paths[card])
    except BaseException as exc:
        for tmp in tmps.values():
            with contextlib.suppress(OSError):
                tmp.unlink()
        if isinstance(exc, OSError):
            raise OutputError(os_error_message(exc, f"writing the charts to {shorten(Path(out_dir))}",
                                               name_file=False)) from exc
        raise
    return {card: str(p) for card, p in paths.items()}

"""How report charts become files (render.drawing): one draw per chart, cropped like a tight
bounding box without clipping long labels, no date or version in the PNG, the same bytes from
one drawing process or several, and a chart that fails is one line in the CLI with nothing left
behind (no partial folder, no worker process)."""
from __future__ import annotations

import multiprocessing
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from aisp_prof.api import open_db
from aisp_prof.errors import AispError
from aisp_prof.render import charts, drawing

RUN_IDS = ("20261126T011557Z-ch09.fused_l2norm-90df", "20261126T034324Z-ch09.structured_sparsity-c433",
           "20261126T041907Z-ch09.warp_specialization_producer_consumer-df40")


@pytest.fixture(scope="module")
def db(tmp_path_factory, sample_dbs) -> Path:
    return sample_dbs.copy(tmp_path_factory.mktemp("drawing") / "a.db", *RUN_IDS)


def _draws(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = FigureCanvasAgg.draw
    monkeypatch.setattr(FigureCanvasAgg, "draw", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    return calls


def _ink_box(path: Path) -> tuple[int, int, int, int, tuple[int, int]]:
    """(left, top, right, bottom) white margins of a PNG in pixels, and its size."""
    rgb = np.asarray(Image.open(path).convert("RGB"))
    ink = (rgb != 255).any(axis=2)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    return cols[0], rows[0], rgb.shape[1] - 1 - cols[-1], rgb.shape[0] - 1 - rows[-1], rgb.shape[:2]


@pytest.mark.slow
def test_a_chart_is_drawn_once_and_cropped_with_a_white_border(tmp_path, monkeypatch):
    draws = _draws(monkeypatch)
    path = charts.stall_chart({"baseline": {"long_scoreboard": 3.0, "barrier": 1.0},
                               "optimized": {"long_scoreboard": 1.0, "wait": 0.5}}, tmp_path / "s.png")
    assert len(draws) == 1
    left, _, right, bottom, (height, width) = _ink_box(path)
    pad = round(drawing.PAD_IN * charts.DPI)
    assert all(pad - 2 <= m <= pad + 2 for m in (left, right, bottom)), (left, right, bottom)
    assert width < 9 * charts.DPI * 1.3 and height < 3 * charts.DPI      # cropped, not the whole canvas
    info = Image.open(path).info
    assert not any(k for k in info if k not in ("dpi",)), info            # no Software or date text


@pytest.mark.slow
def test_a_label_longer_than_the_room_grows_the_canvas_instead_of_being_cut(tmp_path, monkeypatch):
    draws = _draws(monkeypatch)
    name = "variant_" + "x" * 120                                          # ~9 inches of text at 10 pt
    path = charts.stall_chart({"baseline": {"barrier": 1.0}, name: {"barrier": 2.0}}, tmp_path / "s.png")
    assert len(draws) == 2                                                 # grown once, drawn again
    left, _, right, _, (_, width) = _ink_box(path)
    pad = round(drawing.PAD_IN * charts.DPI)
    assert left >= pad - 2 and right >= pad - 2
    assert width > (9 + drawing.ROOM_IN[0]) * charts.DPI


@pytest.mark.slow
def test_minor_ticks_drawn_as_markers_draw_the_same_pixels(tmp_path):
    def chart(fast: bool) -> np.ndarray:
        fig = Figure(figsize=(4, 3), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_axes((0.2, 0.2, 0.7, 0.7))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(3e-2, 2e3)
        ax.set_ylim(1e10, 1e15)
        if fast:
            drawing.minor_ticks_as_markers(ax)
            assert not ax.xaxis.get_minorticklocs().size and not ax.yaxis.get_minorticklocs().size
        fig.canvas.draw()
        return np.asarray(fig.canvas.buffer_rgba()).copy()

    assert (chart(True) == chart(False)).all()


@pytest.mark.slow
def test_roofline_has_a_fixed_layout_and_no_stamp(db, tmp_path):
    from aisp_prof.render.roofline_plot import draw, figure

    result = open_db(db).roofline(RUN_IDS[2])
    fig = figure(result)
    assert fig.get_layout_engine() is None
    path = draw(result, tmp_path / "r.png")
    image = Image.open(path)
    assert image.size == (1140, 744) and set(image.info) == {"dpi"}
    svg = draw(result, tmp_path / "r.svg").read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of a report, the generation time masked (it is the only thing that may differ)."""
    stamp = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")
    return {p.relative_to(folder).as_posix(): stamp.sub(b"<time>", p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_one_drawing_process_or_three_write_the_same_bytes(db, tmp_path, monkeypatch):
    written = {}
    for count in ("1", "3"):
        monkeypatch.setenv("AISP_REPORT_WORKERS", count)
        written[count] = _files(open_db(db).report(list(RUN_IDS), out=tmp_path / count).out_dir)
    for chart in ("roofline", "roofline-thumb", "stalls", "memory", "timeline"):      # all SVG since issue 33
        assert sum(name.endswith(f"-{chart}.svg") for name in written["1"]) == len(RUN_IDS), chart
    assert not any(name.endswith(".png") for name in written["1"])
    assert written["1"].keys() == written["3"].keys()
    assert [n for n in written["1"] if written["1"][n] != written["3"][n]] == []


@pytest.mark.slow
@pytest.mark.parametrize("count", ["1", "2"])
def test_a_chart_that_fails_is_one_line_and_leaves_nothing(db, tmp_path, monkeypatch, count):
    from aisp_prof.cli import cli

    from aisp_prof.render.output import bars

    real = bars.stall_svg

    def broken(stalls, path, *args, **kwargs):
        if "structured_sparsity" in str(path):
            raise ValueError("no room for the bars")
        return real(stalls, path, *args, **kwargs)

    monkeypatch.setattr(bars, "stall_svg", broken)              # forked workers inherit it
    monkeypatch.setenv("AISP_REPORT_WORKERS", count)
    out = tmp_path / "rep"
    res = CliRunner().invoke(cli, ["report", *RUN_IDS, "--db", str(db), "--out", str(out)])
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert lines[-1] == ("aisp-prof: error: could not draw the stall chart of ch09.structured_sparsity: "
                         "ValueError: no room for the bars")
    assert "Traceback" not in res.stderr
    assert not out.exists() and not list(tmp_path.glob(".rep.partial-*"))
    assert multiprocessing.active_children() == []


@pytest.mark.slow
def test_the_pool_cancels_what_has_not_started_and_reaps_its_workers():
    futures = []
    with pytest.raises(AispError, match="stop"), drawing.pool(2) as ex:
        futures += [ex.submit(pow, 2, i) for i in range(50)]
        raise AispError("stop")
    assert any(f.cancelled() for f in futures)
    assert multiprocessing.active_children() == []


def _parsers_in_a_worker() -> int:
    return len(drawing._PARSERS)


@pytest.mark.slow
def test_a_forked_worker_does_not_reuse_the_parents_fonts(tmp_path):
    """Parses hold FreeType fonts, which must not cross fork() (matplotlib empties its own font
    cache in a child): two workers drawing with the parent's fonts corrupted glyphs ('FT_Load_Glyph
    ... too many hints'). The parent draws a log axis first, so it has a shared parser."""
    fig = Figure(figsize=(2, 2))
    ax = fig.add_subplot()
    ax.set_yscale("log")
    ax.set_ylim(1, 1e6)
    drawing.save_png(fig, tmp_path / "parent.png", 100)
    assert drawing._PARSERS
    with drawing.pool(2) as ex:
        assert [ex.submit(_parsers_in_a_worker).result() for _ in range(4)] == [0] * 4


@pytest.mark.slow
def test_the_svg_bars_show_the_pages_numbers(db, tmp_path):
    """The report's stall and memory bars and the index thumbnail, written as SVG (issue 33): every
    bar's hover title carries the number the page's table has, the stacked bars add up to each
    variant's total, and the thumbnail has a dot per variant."""
    import xml.etree.ElementTree as ET

    from aisp_prof.render.output.bars import memory_svg, stall_svg, thumbnail_svg

    data = open_db(db).page(RUN_IDS[0])
    ns = {"s": "http://www.w3.org/2000/svg"}
    tree = ET.parse(stall_svg(data["stalls"], tmp_path / "s.svg"))
    titles = [t.text for t in tree.iterfind(".//s:rect/s:title", ns)]
    for variant, per in data["stalls"].items():
        shown = [float(t.rsplit(" ", 1)[1]) for t in titles if t.startswith(f"{variant}: ")]
        assert sum(shown) == pytest.approx(sum(per.values()), abs=0.01 * len(shown))
        assert f"{variant}: long_scoreboard {per['long_scoreboard']:.2f}" in titles
    tree = ET.parse(memory_svg(data["memory"], tmp_path / "m.svg"))
    titles = [t.text for t in tree.iterfind(".//s:rect/s:title", ns)]
    from aisp_prof.units import si
    for row in data["memory"]:
        assert f"{row['variant']}: DRAM read {si(row['dram_read_bytes'], 'B')}" in titles
    tree = ET.parse(thumbnail_svg(data["roofline"], tmp_path / "t.svg"))
    dots = [t.text for t in tree.iterfind(".//s:circle/s:title", ns)]
    assert dots == [p["variant"] for p in data["roofline"]["points"] if p.get("kernel") is None]
    assert thumbnail_svg({"points": [], "ceilings": {}}, tmp_path / "none.svg") is None

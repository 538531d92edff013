"""Commands for your own pairs and runs: new (a pair template), diff (two runs of one pair)."""
from __future__ import annotations

from pathlib import Path

import click

from .common import echo_json, json_option


@click.command("new")
@click.argument("name")
@click.option("--dir", "folder", default=".", show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="Where to write <name>.py and test_<name>.py.")
@click.option("--chapter", default=0, show_default=True, help="The chapter number stored with the pair's runs.")
@json_option
def new_cmd(name: str, folder: Path, chapter: int, as_json: bool) -> None:
    """Write a commented template pair module (eager mul + add + relu against one fused Triton
    kernel: make_inputs, a float64 reference, FLOPs and bytes, roles, the expected mechanism,
    sizes) and its pytest file. The module file is named after NAME's last part. Never
    overwrites: exit 14 if either file exists; exit 2 for a bad NAME.

    \b
    Example:
      aisp-prof new mine.fused_relu --dir my_pairs
      TRITON_INTERPRET=1 python -m pytest my_pairs/test_fused_relu.py   # CPU check
      aisp-prof run my_pairs/fused_relu.py                               # GPU
    """
    from ..errors import UnknownTargetError
    from ..pairs.new import write_new

    try:
        written = write_new(name, folder, chapter)
    except ValueError as exc:
        raise UnknownTargetError(str(exc)) from exc
    if as_json:
        echo_json(written.as_dict())
        return
    click.echo(f"wrote {written.module}\nwrote {written.test}")
    click.echo(f"next: TRITON_INTERPRET=1 python -m pytest {written.test}   then, on a GPU: aisp-prof run {written.module}")

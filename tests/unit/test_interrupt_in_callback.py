"""A Ctrl-C that lands in a callback whose exceptions Python ignores (a weakref callback: importlib's module
locks use them, so a command's start is full of them) is delivered again, not printed as "Exception ignored
... Traceback" and lost. A clean-clone CI run of tests/integration/test_faults.py::test_sigint_to_a_real_quickstart
caught the loss: the quick start's first SIGINT did nothing, and the traceback reached stderr. Here the
KeyboardInterrupt is raised in a real weakref callback, in a fresh interpreter, with and without the CLI's hook."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from repo_paths import ROOT

SCRIPT = textwrap.dedent("""
    import sys, weakref
    if sys.argv[1] == "hook":
        from aisp_prof.cli import _redeliver_interrupts
        _redeliver_interrupts()
        _redeliver_interrupts()                          # twice: one hook, not two
    class Thing:
        pass
    thing = Thing()
    def callback(ref):
        raise {raised}
    ref = weakref.ref(thing, callback)
    try:
        del thing                                        # the callback runs here, its exception unraisable
        for _ in range(3):
            __import__("time").sleep(0.05)
        print("ran on")
    except KeyboardInterrupt:
        print("interrupted")
""")


def _run(mode: str, raised: str = "KeyboardInterrupt") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(raised=raised), mode], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)


def test_without_the_hook_python_loses_it_with_a_traceback():
    proc = _run("plain")
    assert proc.stdout.strip() == "ran on" and "Traceback" in proc.stderr and "KeyboardInterrupt" in proc.stderr


def test_the_cli_hook_delivers_it_again_and_prints_nothing():
    proc = _run("hook")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "interrupted" and proc.stderr == ""


def test_any_other_unraisable_is_reported_as_before():
    proc = _run("hook", "ValueError('a real bug')")
    assert proc.stdout.strip() == "ran on" and "ValueError: a real bug" in proc.stderr


def test_an_interrupted_command_ends_with_130_whatever_the_teardown_does(tmp_path):
    """main() records its command's exit code; an interrupted one (130) ends in the last atexit function with
    130, after the others ran, so a SIGINT in the modules' teardown (here an object's __del__ sends one, as
    CPython itself sometimes did) no longer turns it into a death by signal (-2); any other code is left to
    Python's own end, which that SIGINT kills."""
    script = textwrap.dedent("""
        import atexit, os, signal, sys
        from pathlib import Path
        import aisp_prof.cli as cli
        atexit.register(lambda: Path(sys.argv[2]).write_text("ran"))      # registered after the CLI's: runs first
        class Teardown:
            def __del__(self):
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
        left = Teardown()
        cli._STATUS[:] = [int(sys.argv[1])]
        sys.exit(int(sys.argv[1]))
    """)
    for code, ends in ((130, 130), (3, -2)):
        mark = tmp_path / f"atexit_{code}"
        proc = subprocess.run([sys.executable, "-c", script, str(code), str(mark)], capture_output=True, text=True,
                              cwd=ROOT, timeout=60)
        assert proc.returncode == ends and mark.read_text() == "ran", proc.stderr

"""What the kernel-pair tests share: a fresh import of a pair module, a package hidden as if not
installed, a guard that importing it does no work (no build, no tool run, no CUDA, no jit), the
nvcc marker, the variants a machine with given tools would run (pairs.capabilities' answer), and
stand-ins for a library build (a recorder of loads) and for CUTLASS headers that are not there;
on a GPU, the pair's correctness check and the activities one call of a variant launches."""
from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import aisp_kernels
from aisp_kernels import build
from aisp_prof import tools
from aisp_prof.errors import ToolNotFoundError
from aisp_prof.pairs.capabilities import Machine, runnable


def import_fresh(path: Path, name: str) -> ModuleType:
    """Execute the module at `path` under a new name (discovery does the same)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hide_package(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make `import NAME` fail for one test, as where NAME is not installed.

    A module binds what its top-level imports found once, when first imported:
    aisp_kernels.triton_helpers keeps `triton = None` where `import triton` failed. So the helpers
    are imported afresh while NAME is hidden (the pair under test meets them as they are without
    it) and the originals are back afterwards: no later test gets a helper imported while NAME was
    hidden. (Hiding only sys.modules[NAME] left test_softmax_launch_config, later in the same
    session, with a triton_helpers whose `triton` was None.)"""
    for module in pkgutil.iter_modules(aisp_kernels.__path__, "aisp_kernels."):
        importlib.import_module(module.name)      # each present now, so that undoing restores it
    for module in sorted(m for m in sys.modules if m.startswith("aisp_kernels.")):
        monkeypatch.delitem(sys.modules, module)
        monkeypatch.delattr(aisp_kernels, module.rpartition(".")[2], raising=False)
    for module in (name, *(m for m in sys.modules if m.startswith(name + "."))):
        monkeypatch.setitem(sys.modules, module, None)   # `import NAME` and `import NAME.x` now fail


def assert_every_variant_needs_triton_when_missing(monkeypatch: pytest.MonkeyPatch, pair_path: Path, name: str,
                                                   sizes: dict) -> None:
    """Where triton is not installed the pair at `pair_path` still imports (under `name`) and makes
    CPU inputs at `sizes`, and every variant is a RequirementError saying it needs triton."""
    from aisp_prof.errors import RequirementError

    hide_package(monkeypatch, "triton")                        # makes `import triton` fail
    module = import_fresh(pair_path, name)
    inputs = module.make_inputs(sizes, "cpu", 0)
    for factory in module.PAIR.variants.values():
        with pytest.raises(RequirementError, match="needs triton"):
            factory(inputs)


def forbid_import_side_effects(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make building, running tools, touching CUDA or jitting raise while a pair is imported."""
    def forbidden(*args, **kwargs):
        raise AssertionError("importing a pair must not build, run tools, touch CUDA or jit")

    import torch  # here, not at the top: without torch the pair tests skip rather than fail to collect

    if importlib.util.find_spec("triton") is not None:
        import triton  # imported first: what triton itself does on import is not the pair's doing

        monkeypatch.setattr(triton, "jit", forbidden)
        monkeypatch.setattr(triton, "compile", forbidden)
    for target, attr in ((build, "build_shared_library"), (build, "load_library"),
                         (tools, "find_nvcc"), (subprocess, "run"), (subprocess, "Popen"),
                         (torch.cuda, "_lazy_init"), (torch.cuda, "is_available")):
        monkeypatch.setattr(target, attr, forbidden)


def forbid_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make building a pair's CUDA library raise: a variant must refuse CPU tensors (or any other
    input it cannot take) before it spends minutes in nvcc. Every pair's library is built through
    aisp_kernels.binding.CudaLibrary.load, which calls build.load_library: the one place to stop."""
    def forbidden(*args, **kwargs):
        raise AssertionError("must not build before checking the device")

    monkeypatch.setattr(build, "load_library", forbidden)


def assert_cpu_tensors_refused_before_any_build(monkeypatch: pytest.MonkeyPatch, mod: ModuleType, variant: str,
                                                 sizes: dict, match: str = "CUDA tensors") -> None:
    """The pair `mod`'s `variant`, handed CPU tensors (`mod.make_inputs(sizes, "cpu", 0)`, which
    must not fail), raises a RequirementError matching `match` before it builds anything
    (`forbid_build`)."""
    from aisp_prof.errors import RequirementError

    forbid_build(monkeypatch)
    inputs = mod.make_inputs(sizes, "cpu", 0)
    with pytest.raises(RequirementError, match=match):
        mod.PAIR.variants[variant](inputs)


def have_nvcc() -> bool:
    try:
        tools.find_nvcc()
    except ToolNotFoundError:
        return False
    return True


requires_nvcc = pytest.mark.skipif(not have_nvcc(), reason="needs nvcc (install the CUDA toolkit or set AISP_NVCC)")


def can_build_cutlass() -> bool:
    """nvcc and the CUTLASS headers are here, and AISP_SKIP_CUTLASS_BUILD=1 does not say skip."""
    return have_nvcc() and tools.have_cutlass() and os.environ.get("AISP_SKIP_CUTLASS_BUILD") != "1"


def cutlass_build(test):
    """Mark a test that compiles CUTLASS templates with nvcc (one to two minutes and ~6 GB for cicc
    per source on 2 cores): `build`, which setup.cfg leaves out of the default run (`pytest -m build`
    runs them; CI does, as its second line), and `slow`; skipped without nvcc and the headers."""
    skip = pytest.mark.skipif(not can_build_cutlass(), reason=(
        "needs nvcc and the CUTLASS headers (pip install nvidia-cutlass or set AISP_CUTLASS_INCLUDE); "
        "AISP_SKIP_CUTLASS_BUILD=1 skips this slow build"))
    return pytest.mark.build(pytest.mark.slow(skip(test)))


def runnable_variants(pair, have_gpu: bool, have_nvcc: bool, have_triton: bool,
                      have_cutlass: bool | None = None) -> list[str]:
    """The variants `capabilities.runnable` runs on a machine with these needs met
    (`have_cutlass` None: whether this machine has the CUTLASS headers)."""
    if have_cutlass is None:
        have_cutlass = tools.have_cutlass()
    have = [need for need, met in (("gpu", have_gpu), ("nvcc", have_nvcc), ("triton", have_triton),
                                   ("cutlass", have_cutlass)) if met]
    return list(runnable(pair, Machine.of(*have)).variants)


def assert_every_variant_needs_gpu_and_nvcc(pair, variants: list[str]) -> None:
    """`variants`, all of `pair`'s, each need a GPU and nvcc (a CUDA source built here): none runs on a
    machine without a GPU, every one on a machine with both (triton or not)."""
    assert pair.variant_needs == {v: ("gpu", "nvcc") for v in variants}
    assert runnable_variants(pair, have_gpu=False, have_nvcc=True, have_triton=True) == []
    assert runnable_variants(pair, have_gpu=True, have_nvcc=True, have_triton=False) == variants


# --- what a CUDA pair's library compiles to (ptxas report, SASS opcodes per kernel) ----------

def kept_build_dir() -> Path:
    """Where the tests' nvcc builds are kept between runs of the suite ($AISP_TEST_BUILD_DIR, else
    ~/.cache/aisp-prof/test-build): keyed by content as aisp_kernels.build keys its own cache, so a
    second run compiles only what changed. The build tests that go through aisp_kernels.build point
    AISP_BUILD_DIR here instead of at a fresh temporary folder."""
    env = os.environ.get("AISP_TEST_BUILD_DIR")
    return Path(env) if env else Path.home() / ".cache" / "aisp-prof" / "test-build"


def run_nvcc(cmd: list[str], source: Path, output: Path | None) -> subprocess.CompletedProcess:
    """Run the nvcc command `cmd` that builds `source` (into `output`, or None where it writes no
    file worth keeping), or give back what an earlier run kept for the same command line, the same
    bytes of `source` and of every local header it includes, and the same `nvcc --version`: the
    output file copied into place and nvcc's printed output. A failed build is never kept."""
    import hashlib
    import shutil

    from aisp_prof.pairs.source import local_includes

    source = Path(source)
    generic = [{str(source): "SOURCE", str(output): "OUTPUT"}.get(a, a) for a in cmd]
    version = subprocess.run([cmd[0], "--version"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256()
    # a header library's folder (-I, CUTLASS) counts by when it was installed
    installed = [str(Path(a[2:]).stat().st_mtime_ns).encode() for a in cmd if a.startswith("-I") and Path(a[2:]).is_dir()]
    for part in (source.read_bytes(), "\0".join(generic).encode(), version.encode(), *installed,
                 *(name.encode() + b"\0" + data for name, data in local_includes(source))):
        key.update(part + b"\0\0")
    kept = kept_build_dir() / f"{source.stem}-{key.hexdigest()[:20]}"
    if (kept / "done").is_file():
        if output is not None:
            shutil.copyfile(kept / "output", output)
        return subprocess.CompletedProcess(cmd, 0, (kept / "stdout").read_text(), (kept / "stderr").read_text())
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if output is not None:
            shutil.copyfile(output, tmp / "output")
        (tmp / "stdout").write_text(proc.stdout)
        (tmp / "stderr").write_text(proc.stderr)
        (tmp / "done").write_text("")
        try:
            tmp.rename(kept)
        except OSError:                      # another run kept the same build first
            shutil.rmtree(tmp, ignore_errors=True)
    return proc


def build_with_report(source: Path, out_dir: Path, arch: str) -> tuple[Path, str]:
    """Build `source` with aisp_kernels.build's own command plus `-Xptxas -v`; (library, report)."""
    library = out_dir / f"{source.stem}.so"
    cmd = build.nvcc_command(source, library, arch, nvcc=tools.find_nvcc())
    proc = run_nvcc(cmd[:-3] + ["-Xptxas", "-v"] + cmd[-3:], source, library)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return library, proc.stderr + proc.stdout


def find_cuobjdump() -> Path | None:
    """cuobjdump on PATH, beside nvcc, or the copy triton ships; None if there is none."""
    import shutil

    candidates = [shutil.which("cuobjdump"), Path(tools.find_nvcc()).resolve().parent / "cuobjdump"]
    if importlib.util.find_spec("triton") is not None:
        import triton

        candidates.append(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump")
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


def sass_functions(library: Path) -> dict[str, str]:
    """{mangled kernel name: its SASS text}, from `cuobjdump -sass` (skips without cuobjdump)."""
    import re

    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("needs cuobjdump (CUDA toolkit or triton's copy) to read the SASS")
    sass = subprocess.run([str(cuobjdump), "-sass", str(library)], capture_output=True, text=True, check=True).stdout
    return {part.split("\n", 1)[0].strip(): part for part in re.split(r"\n\s*Function : ", sass)[1:]}


def opcode_counts(body: str) -> "collections.Counter[str]":
    """Counter of the opcodes in one kernel's SASS text (a `sass_functions` value). Instructions
    predicated on @!PT (never executed; padding the compiler leaves) are not counted."""
    import collections
    import re

    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", body)
    return collections.Counter(op for pred, op in ops if pred.strip() != "@!PT")


def sass_opcodes(library: Path) -> dict[str, "collections.Counter[str]"]:
    """{mangled kernel name: `opcode_counts` of its SASS}, from `cuobjdump -sass`."""
    return {name: opcode_counts(part) for name, part in sass_functions(library).items()}


def triton_sass_opcodes(compiled) -> "collections.Counter[str] | None":
    """Counter of the SASS opcodes in a triton.compile result's cubin, read with the cuobjdump
    triton ships (None where it ships none). Unlike `opcode_counts`, @!PT padding is counted."""
    import collections
    import re
    import tempfile

    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.is_file():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        sass = subprocess.run([str(tool), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    return collections.Counter(re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass))


def fake_library(query: str, code: int, error_text: bytes = b"fake CUDA error") -> "CudaLibrary":
    """A CudaLibrary that is never built: its zero-argument C function `query` answers `code`
    (for testing `CudaLibrary.require` paths of a pair without a GPU)."""
    import ctypes
    from types import SimpleNamespace

    from aisp_kernels.binding import CudaLibrary

    lib = CudaLibrary(Path("fake.cu"), {query: ((), ctypes.c_int)})
    object.__setattr__(lib, "_lib", SimpleNamespace(**{query: lambda: code, lib.error_string: lambda err: error_text}))
    return lib


def assert_probe_gates(monkeypatch: pytest.MonkeyPatch, mod: ModuleType, query: str, require,
                       unsupported: str, require_on_error=None) -> Exception:
    """A pair's capability check `require()` (it calls the library's zero-argument probe `query`)
    against a library that is never built: not supported is a RequirementError matching
    `unsupported` (a skip), 0 passes, any other CUDA error (cudaErrorNoDevice, 100) is a failure,
    not a skip (asked through `require_on_error` where given: another variant's check). Gives the
    RequirementError, for a test that reads more of its text."""
    from aisp_kernels.binding import CUDA_ERROR_NOT_SUPPORTED
    from aisp_prof.errors import RequirementError

    monkeypatch.setattr(mod, "LIBRARY", fake_library(query, CUDA_ERROR_NOT_SUPPORTED))
    with pytest.raises(RequirementError, match=unsupported) as info:
        require()
    monkeypatch.setattr(mod, "LIBRARY", fake_library(query, 0))
    require()                                                 # supported: no error
    monkeypatch.setattr(mod, "LIBRARY", fake_library(query, 100))
    with pytest.raises(RuntimeError, match="cudaError 100"):
        (require_on_error or require)()
    return info.value


def assert_support_probe(monkeypatch: pytest.MonkeyPatch, mod: ModuleType, query: str, variant: str,
                         unsupported: str = "needs an sm_90 GPU") -> None:
    """`assert_probe_gates` for the usual check, `mod._require_support(variant)`."""
    assert_probe_gates(monkeypatch, mod, query, lambda: mod._require_support(variant), unsupported)


def sass_by_kernel(library: Path, kernel_of) -> dict[str, str]:
    """`sass_functions` keyed by `kernel_of(mangled name)` (a test's short kernel name)."""
    return {kernel_of(name): body for name, body in sass_functions(library).items()}


def opcodes_by_kernel(library: Path, kernel_of) -> dict[str, "collections.Counter[str]"]:
    """`sass_opcodes` keyed by `kernel_of(mangled name)`."""
    return {kernel_of(name): counts for name, counts in sass_opcodes(library).items()}


def by_variant(per_kernel: dict, patterns: dict[str, str]) -> dict:
    """{variant: per_kernel[name]} (a `sass_functions` or `sass_opcodes` answer), `name` being the
    one mangled kernel name `patterns[variant]` (a regex) finds; fails unless exactly one does."""
    import re

    out = {}
    for variant, pattern in patterns.items():
        (name,) = [k for k in per_kernel if re.search(pattern, k)]
        out[variant] = per_kernel[name]
    return out


def assert_exports(library: Path, names) -> None:
    """`library` exports every C function in `names` (`nm -D --defined-only`; skips without nm)."""
    nm = shutil.which("nm") or pytest.skip("needs nm (binutils) to list the library's symbols")
    symbols = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True,
                             check=True).stdout
    missing = [name for name in names if f" T {name}" not in symbols]
    assert not missing, f"{library.name} does not export {missing}"


def hopper_only() -> None:
    """Skip a GPU test of sm_90a kernels on any GPU but Hopper (compute capability 9.0)."""
    import torch

    if torch.cuda.get_device_capability()[:2] != (9, 0):
        pytest.skip("sm_90a kernels: Hopper only")


def record_library_loads(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Replace aisp_kernels.build.load_library with a recorder that builds nothing: each load is
    one entry, {"source": Path, "arch": ..., and every keyword it was given (sequences as lists)},
    in the list returned; the handle it gives back grows a settable stand-in for any C function
    asked for (CudaLibrary sets argtypes and restype on each)."""
    loads: list[dict] = []

    class FakeLib:
        def __getattr__(self, name):
            fn = type("Fn", (), {})()
            setattr(self, name, fn)
            return fn

    def fake_load(source, arch=None, **kwargs):
        loads.append({"source": Path(source), "arch": arch,
                      **{k: list(v) if isinstance(v, (list, tuple)) else v for k, v in kwargs.items()}})
        return FakeLib()

    monkeypatch.setattr(build, "load_library", fake_load)
    return loads


def hide_cutlass_headers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No CUTLASS headers anywhere tools looks: no AISP_CUTLASS_INCLUDE, an empty repo copy, no
    nvidia-cutlass package."""
    monkeypatch.delenv("AISP_CUTLASS_INCLUDE", raising=False)
    monkeypatch.setattr(tools, "REPO_CUTLASS_INCLUDE", tmp_path / "none")
    monkeypatch.setattr(tools, "_package_cutlass_includes", list)


PTXAS_FRAME = r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"


def ptxas_entries(report: str, arch: str = "sm_90a") -> tuple[list[str], int]:
    """Read the nvcc + `-Xptxas -v` output of a build that must be clean, asserting no warning (a
    C7510 would say the wgmmas serialize) and no local memory (each function ptxas gives a frame
    line: 0 bytes of stack frame, 0 spill stores, 0 spill loads). Gives (the mangled entry functions
    compiled for `arch`, in report order; how many frame lines), for the test to say which and how
    many."""
    import re

    assert "warning" not in report.lower(), report[-2000:]
    frames = re.findall(PTXAS_FRAME, report)
    assert all(f == ("0", "0", "0") for f in frames), frames
    return re.findall(rf"Compiling entry function '(\S+)' for '{arch}'", report), len(frames)


def dispatched_ops(launch) -> list[str]:
    """The aten ops one call of `launch` dispatches, in order, by short name (aten.bmm.default is
    "bmm"): what an eager variant does, seen on the CPU."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(str(func).split(".")[1])
            return func(*args, **(kwargs or {}))

    with Ops() as ops:
        launch()
    return ops.seen


# --- on the GPU ----------------------------------------------------------------------------

def check_on_gpu(name: str, which: str, **options):
    """aisp_prof's correctness check of pair `name` on the GPU at its small sizes (`which` "small")
    or its book's sizes ("default"), every variant against the reference; fails the test with
    check's own message where one is off, else gives the result for the test's own assertions.
    `options` go to check.check_pair (trials=...)."""
    from aisp_prof import pairs
    from aisp_prof.collect.correctness import check

    pair = pairs.find(name)
    result = check.check_pair(pair, pair.small_sizes if which == "small" else pair.sizes, device="cuda", **options)
    check.raise_if_failed(result)
    return result


def run_with_inputs_freed(mod: ModuleType, variant: str, sizes: dict, calls: int = 1, device: str = "cuda"):
    """Call `variant`'s launch `calls` times after its inputs (seed 5) were deleted and a NaN buffer
    of 16 MiB now lies where they were: bench.timing keeps only the closure, so the closure must
    own its inputs. Gives ([each call's output], the reference computed before the deletion);
    every output but the last is a copy, in case the launch reuses one buffer. (`device` "cpu"
    runs the same steps without a GPU, to check this helper on a pair that runs on the CPU.)"""
    import torch

    inputs = mod.make_inputs(sizes, device, 5)
    ref = mod.reference(inputs)
    launch = mod.PAIR.variants[variant](inputs)
    del inputs
    junk = torch.full((1 << 22,), float("nan"), device=device)   # would reuse a freed input
    outs = [launch().clone() for _ in range(calls - 1)]
    outs.append(launch())
    if device == "cuda":
        torch.cuda.synchronize()
    del junk
    return outs, ref


def device_events_per_call(launch) -> list[str]:
    """Names of the GPU activities (kernels, memsets, copies) one call of `launch` issues, from
    torch.profiler's CUDA activities, after one unprofiled call (compiles, caches, autotuning)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    launch()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        launch()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]

"""Loading an engine's own sampler files from a source tree the user supplies, with only their imports stubbed.

Shared by the Python engine adapters (adapters/vllm, tokenspeed, trtllm, sglang, prime_rl). Nothing here fetches,
installs or vendors an engine: the user points an adapter at a tree (``src=`` / ``--src DIR`` / the adapter's
environment variable) laid out as the engine's repository (``scripts/engine-sources`` copies the files a manifest
names out of the user's own clone). The adapter then

  * installs stub modules for what the engine files import and samplecheck does not carry (a logger, an env-flag
    module, a platform object...), each made by ``stub_module`` and marked ``__samplecheck_stub__``;
  * executes the engine's files with ``importlib.util.spec_from_file_location`` under their own dotted names, so
    that their imports of one another resolve to the files of the tree;
  * restores ``sys.modules`` afterwards (``isolated_modules``): neither the stubs nor the loaded files stay
    registered, so an installed engine in the same process is left alone, and every adapter instance holds its own
    copy of the engine's modules; modules of other packages the files imported (torch, triton) stay loaded. An
    adapter whose engine code imports its own modules by name while it draws (``torch.compile`` tracing) puts its
    copy back for the call (``engine_modules``).

Each loaded file is recorded (``LoadedFile``: path relative to the tree, sha256) and compared with
``adapters/engine_sources.json``, the manifest of the files this project judged (engine, repository, commit, path,
sha256). ``engine_label`` turns that into the prefix of every sampler name: ``vllm@568afb3a`` when every file
matches the manifest's commit, else ``vllm@<commit from the tree's marker or git>+modified`` (a tree at another
commit, or edited files), so a report always says which code ran.

(seed, offset) -> engine seeding. samplecheck gives every draw a (seed, offset) (docs/process-protocol.md). An
engine keyed by a per-request seed and a position (vLLM Model Runner V2, TokenSpeed, SGLang's seeded path) takes
them as they are: request seed = seed, position = offset. An engine seeded through a per-request
``torch.Generator`` (vLLM v1, TensorRT-LLM's TorchSampler) gets, for each draw, a request whose seed is
``request_seed(seed, offset)``: every draw is the first step of a fresh request, exactly what the engine does for a
request carrying that seed (``generator.manual_seed(sampling_params.seed)``). ``request_seed`` is injective on
(seed, offset) pairs with offset < 2^32 and seed < 2^31 and spreads the rest; it is the same mix that
examples/python/torch_client.py uses.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "engine_sources.json"
MARKER = ".samplecheck-source"  # written by scripts/engine-sources: "<repo> <commit>"


class EngineSourceError(RuntimeError):
    """The tree is missing, lacks a file the adapter needs, or a file cannot be loaded."""


def request_seed(seed: int, offset: int) -> int:
    """The per-request seed of the draw at (seed, offset) for engines seeded by a torch.Generator per request."""
    return (int(seed) * 0x9E3779B97F4A7C15 + int(offset) * 0xBF58476D1CE4E5B9) & ((1 << 63) - 1)


_U64 = (1 << 64) - 1
_MIX_SEED, _MIX_OFFSET = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9


def is_tensor(value) -> bool:
    """A torch tensor (without importing torch)."""
    return type(value).__module__.startswith("torch") and hasattr(value, "dim")


def request_seeds(seeds, offsets):
    """``request_seed`` of every row at once: int64 tensors holding the u64 bits of (seed, offset) (a scalar seed is
    broadcast) -> an int64 tensor of the 63-bit request seeds, on the offsets' device. torch's int64 products wrap
    modulo 2^64, and the low 63 bits of the sum are those of the unsigned computation (tested against
    ``request_seed`` in adapters/test_engine_serve.py)."""
    import torch
    o = torch.as_tensor(offsets, dtype=torch.int64)
    s = torch.as_tensor(seeds if is_tensor(seeds) else as_int64(seeds), dtype=torch.int64, device=o.device)
    return (s * as_int64(_MIX_SEED) + o * as_int64(_MIX_OFFSET)) & ((1 << 63) - 1)


def request_seed_list(seeds, offsets, rows: int) -> list:
    """``request_seed`` of each row as Python ints: one vectorized computation when the offsets (or seeds) are a
    tensor (engine_serve's columns), the Python mix of each row otherwise; the same values either way."""
    if is_tensor(offsets) or is_tensor(seeds):
        import torch
        o = offsets if is_tensor(offsets) else torch.tensor([as_int64(v) for v in u64_list(offsets, rows, "offsets")])
        s = seeds if is_tensor(seeds) or uniform(seeds) else torch.tensor(
            [as_int64(v) for v in u64_list(seeds, rows, "seeds")], device=o.device)
        if is_tensor(s) and s.device != o.device:
            s = s.to(o.device)
        return request_seeds(s, o.expand(rows) if o.dim() == 0 else o).tolist()
    return [request_seed(s, o) for s, o in zip(u64_list(seeds, rows, "seeds"), u64_list(offsets, rows, "offsets"))]


def u64_list(values, rows: int, what: str) -> list:
    """Per-row seeds or offsets as unsigned Python ints: a scalar, a list, or an int64 tensor of the u64 bits (what
    engine_serve hands the engines)."""
    return [int(v) & _U64 for v in per_row(values, rows, what, int)]


def uniform(value) -> bool:
    """A per-row parameter given once for every row (a Python scalar), not as one value per row."""
    return not (is_tensor(value) or isinstance(value, (list, tuple)))


def as_int64(value: int) -> int:
    """A u64 seed as the int64 an engine's seed tensor holds (two's complement)."""
    value = int(value) & ((1 << 64) - 1)
    return value - (1 << 64) if value >= (1 << 63) else value


def position_key(seed: int, offset: int, bits: int) -> tuple[int, int]:
    """(request seed as int64, position) for samplecheck's (seed, offset), for engines that key their noise by a
    request seed and a position of limited width (TokenSpeed: int32 ``valid_cache_lengths``, bits = 30; vLLM Model
    Runner V2: int64 positions, bits = 62). An offset below 2^bits is the position under the caller's seed; a larger
    one keeps its low ``bits`` bits as the position and folds the rest into the seed (``request_seed(seed, offset >>
    bits)``), leaving room for the draft slots a verifier adds to the position. The same (seed, offset) is always the
    same key, consecutive offsets of one window are consecutive positions of one seed, and other pairs get other keys
    (injective below 2^bits; the fold spreads the rest)."""
    offset = int(offset)
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    high, position = offset >> bits, offset & ((1 << bits) - 1)
    return (as_int64(seed) if high == 0 else as_int64(request_seed(seed, high))), position


def find_tree(src: str | os.PathLike | None, env_var: str, engine: str, needed: list[str]) -> Path:
    """The engine tree: ``src`` if given, else $env_var. Every path in ``needed`` must exist in it."""
    chosen = src if src is not None else os.environ.get(env_var)
    if not chosen:
        raise EngineSourceError(
            f"no {engine} source tree: pass src=DIR (--src DIR) or set {env_var} to a checkout of the engine "
            f"(scripts/engine-sources lays one out from your clone)")
    root = Path(chosen).expanduser().resolve()
    if not root.is_dir():
        raise EngineSourceError(f"{engine} source tree {root} is not a directory ({env_var} or --src)")
    missing = [p for p in needed if not (root / p).is_file()]
    if missing:
        raise EngineSourceError(f"{engine} source tree {root} lacks {', '.join(missing)} (is it the repository root?)")
    return root


def stub_module(name: str, package: bool = False, **attrs) -> types.ModuleType:
    """A stand-in for a module the engine files import; marked so that a report can list the stubs."""
    module = types.ModuleType(name)
    module.__samplecheck_stub__ = True
    if package:
        module.__path__ = []
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def stub_packages(names: list[str]) -> dict[str, types.ModuleType]:
    """Empty package stubs for every dotted prefix of ``names`` (``a.b.c`` -> ``a``, ``a.b``)."""
    out: dict[str, types.ModuleType] = {}
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            out.setdefault(prefix, stub_module(prefix, package=True))
    return out


def _is_engines(name: str, module, roots: set[str]) -> bool:
    """A module of the engine: under a stub's top-level name, or itself a stub or a file ``EngineTree.load`` ran."""
    return (name.split(".", 1)[0] in roots or getattr(module, "__samplecheck_stub__", False)
            or getattr(module, "__samplecheck_engine_file__", None) is not None)


@contextlib.contextmanager
def isolated_modules(stubs: dict[str, types.ModuleType]):
    """Install ``stubs`` in sys.modules for the duration; afterwards drop the engine's modules and restore the rest.

    The engine's modules are those under the top-level names of the stubs (``vllm``, ``sglang``, ``msgspec``...),
    the stubs, and the files ``EngineTree.load`` executed (marked ``__samplecheck_engine_file__``). They leave
    ``sys.modules`` (another instance loads its own copy; an installed engine is left alone). A module of any other
    package that the engine files imported on the way (a ``torch`` or ``triton`` submodule pulled in by
    ``torch.compile`` or a kernel decorator) stays loaded: dropping it would make the next import execute it a
    second time, and a module that registers an operator library at import (torch/_inductor/test_operators.py,
    ``TORCH_LIBRARY`` namespace ``_inductor_test``, on torch 2.11) raises on its second registration. A module that
    was in ``sys.modules`` before and was replaced is put back.

    Yields a dict that, on exit, holds the engine's modules it took out (name -> module): ``engine_modules`` puts
    them back for the duration of a draw."""
    before = dict(sys.modules)
    kept: dict[str, types.ModuleType] = {}
    roots = {name.split(".", 1)[0] for name in stubs}
    for name, module in stubs.items():
        sys.modules[name] = module
    # A child module must also be reachable as an attribute of its parent stub package.
    for name, module in stubs.items():
        parent, _, leaf = name.rpartition(".")
        if parent in stubs:
            setattr(stubs[parent], leaf, module)
    try:
        yield kept
    finally:
        for name in list(sys.modules):
            if name not in before:
                if _is_engines(name, sys.modules[name], roots):
                    kept[name] = sys.modules.pop(name)
            elif sys.modules[name] is not before[name]:
                if _is_engines(name, sys.modules[name], roots):
                    kept[name] = sys.modules[name]
                sys.modules[name] = before[name]


@contextlib.contextmanager
def engine_modules(kept: dict[str, types.ModuleType]):
    """The engine's modules (``kept``, what ``isolated_modules`` yielded) back in ``sys.modules`` for the duration of
    a draw; afterwards ``sys.modules`` is as it was.

    ``torch.compile`` traces a compiled function at its first call, and again at every recompilation; for a function
    it inlines from another module it resolves that function's globals by importing the module by its name
    (torch/_dynamo/symbolic_convert.py ``import_source``, torch 2.11). SGLang's ``multinomial_with_seed``
    (layers/sampler.py, compiled) calls ``murmur_hash32`` of ``sglang.srt.layers.utils.hash``: with the engine's
    modules out of ``sys.modules``, every seeded draw raised ``InternalTorchDynamoError: ModuleNotFoundError: No
    module named 'sglang.srt'`` (the GPU run of 2026-11-27, results/conformance/README.md)."""
    saved = {name: sys.modules.get(name) for name in kept}
    sys.modules.update(kept)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@dataclass
class LoadedFile:
    path: str    # relative to the tree, as in the repository
    sha256: str


@dataclass
class EngineTree:
    """One engine's source tree and what has been loaded from it."""
    engine: str
    root: Path
    loaded: list[LoadedFile] = field(default_factory=list)
    stubs: list[str] = field(default_factory=list)

    def load(self, relpath: str, modname: str, package: bool = False) -> types.ModuleType:
        """Execute the tree's file under its dotted name (call inside ``isolated_modules``). ``package``: the file
        is a package's ``__init__.py`` whose relative imports load its sibling files from the tree."""
        path = self.root / relpath
        spec = importlib.util.spec_from_file_location(
            modname, path, submodule_search_locations=[str(path.parent)] if package else None)
        if spec is None or spec.loader is None:
            raise EngineSourceError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        module.__samplecheck_engine_file__ = relpath
        sys.modules[modname] = module
        parent, _, leaf = modname.rpartition(".")
        if parent and parent in sys.modules:
            setattr(sys.modules[parent], leaf, module)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the engine file's own error, named with the file
            raise EngineSourceError(f"{self.engine}: loading {relpath} failed: {type(exc).__name__}: {exc}") from exc
        self.record(relpath)
        return module

    def record(self, relpath: str) -> None:
        if any(f.path == relpath for f in self.loaded):
            return
        digest = hashlib.sha256((self.root / relpath).read_bytes()).hexdigest()
        self.loaded.append(LoadedFile(relpath, digest))

    def extract(self, relpath: str, names: list[str], namespace: dict) -> dict:
        """Compile only the named top-level functions of a file (their decorators dropped) into ``namespace``.

        For files whose module-level imports pull in a whole framework (prime-rl's loss.py imports beartype,
        jaxtyping and its config package) when the sampler is one self-contained function. Line numbers stay those
        of the file, so tracebacks point into the engine's source.
        """
        path = self.root / relpath
        tree = ast.parse(path.read_text(), filename=str(path))
        found = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
                node.decorator_list = []
                found[node.name] = node
        missing = [n for n in names if n not in found]
        if missing:
            raise EngineSourceError(f"{self.engine}: {relpath} has no top-level function {', '.join(missing)}")
        module = ast.Module(body=[found[n] for n in names], type_ignores=[])
        exec(compile(module, str(path), "exec"), namespace)
        self.record(relpath)
        return {n: namespace[n] for n in names}

    def commit(self) -> str | None:
        """The tree's commit: its marker file, else ``git rev-parse`` of a checkout (read locally, never fetched)."""
        marker = self.root / MARKER
        if marker.is_file():
            fields = marker.read_text().split()
            if len(fields) >= 2:
                return fields[1]
        try:
            out = subprocess.run(["git", "-C", str(self.root), "rev-parse", "HEAD"], capture_output=True,
                                 text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None

    def label(self) -> str:
        """``<engine>@<commit8>`` when every loaded file matches the manifest at one commit, else ``+modified``."""
        entries = manifest_entries(self.engine)
        by_path: dict[str, list[dict]] = {}
        for entry in entries:
            by_path.setdefault(entry["path"], []).append(entry)
        commits = None
        for f in self.loaded:
            matching = {e["commit"] for e in by_path.get(f.path, []) if e["sha256"] == f.sha256}
            commits = matching if commits is None else commits & matching
        if commits:
            return f"{self.engine}@{sorted(commits)[0][:8]}"
        own = self.commit()
        return f"{self.engine}@{own[:8] if own else 'unknown'}+modified"

    def describe(self) -> str:
        lines = [f"{self.label()} from {self.root}"]
        lines += [f"  loaded {f.path} sha256 {f.sha256[:16]}" for f in self.loaded]
        lines += [f"  stub   {name}" for name in sorted(self.stubs)]
        return "\n".join(lines)


def manifest_entries(engine: str) -> list[dict]:
    with open(MANIFEST) as fh:
        return [e for e in json.load(fh)["files"] if e["engine"] == engine]


def triton_importable() -> bool:
    """Stock triton can be imported (the engines' Triton files need it, and a CUDA device to run)."""
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def no_torch_compile():
    """On torch < 2.0 (no ``torch.compile``), a no-op ``torch.compile`` while engine files load: several decorate
    a module-level function with it. The adapters say which function each time; on torch 2.x nothing changes."""
    import torch
    if hasattr(torch, "compile"):
        yield
        return

    def compile_noop(fn=None, **kwargs):
        return fn if fn is not None else (lambda f: f)

    torch.compile = compile_noop
    try:
        yield
    finally:
        del torch.compile


def logits_2d(logits, device, keep_dtype=False):
    """The logits as a [rows, vocab] tensor on ``device``, fp32 unless ``keep_dtype`` (a trainer's bf16 logits)."""
    import torch
    x = torch.as_tensor(logits)
    if x.dim() != 2:
        raise ValueError(f"logits must be [rows, vocab], got shape {tuple(x.shape)}")
    return x.to(device) if keep_dtype else x.to(device, torch.float32)


def sampling_params(rows: int, temperature, top_k, top_p, min_p):
    """(temperature, top_k, top_p, min_p) as four per-row lists."""
    return (per_row(temperature, rows, "temperature", float), per_row(top_k, rows, "top_k", int),
            per_row(top_p, rows, "top_p", float), per_row(min_p, rows, "min_p", float))


def per_row(values, rows: int, what: str, cast):
    """A per-row parameter given as a scalar or a sequence/tensor of length ``rows``, as a Python list."""
    if hasattr(values, "tolist"):
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        return [cast(values)] * rows
    if len(values) != rows:
        raise ValueError(f"{what} has {len(values)} entries for {rows} rows (give one per row or a scalar)")
    return [cast(v) for v in values]


def run_cli(prog: str, description: str, env_var: str, make, add_arguments=None, argv=None) -> int:
    """The adapters' command line: build the sampler from ``--src`` (or $env_var), print its name and, with
    ``--describe``, the loaded files and stubs. Exit 2 with one line when the tree or an argument is wrong."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--src", help=f"engine source tree (default: ${env_var})")
    ap.add_argument("--describe", action="store_true", help="list the loaded files (sha256) and the stubs")
    if add_arguments is not None:
        add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        sampler = make(args)
    except (EngineSourceError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(sampler.name)
    if args.describe:
        print(sampler.tree.describe())
    return 0

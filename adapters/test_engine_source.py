"""adapters/engine_source.py without any engine tree: what ``isolated_modules`` and ``EngineTree.load`` leave in
sys.modules. A third-party module that an engine file imports must be executed once per process, however many
adapter instances load the file (torch 2.11's torch/_inductor/test_operators.py registers an operator library at
import and raises on a second one: the GPU run of main 18abd63, results/conformance/README.md)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_source as es  # noqa: E402

# A stand-in for a library module that may run once per process (as TORCH_LIBRARY("_inductor_test") may).
LIBRARY = '''
import sys
registry = sys.modules.setdefault("_samplecheck_test_registry", type(sys)("_samplecheck_test_registry"))
if getattr(registry, "registered", False):
    raise RuntimeError("Only a single library can register this namespace")
registry.registered = True
'''
# A stand-in for an engine file: imports its engine's stubbed package, and the library at import time.
ENGINE_FILE = '''
from fakeengine.logger import init_logger
import sc_fakelib.registers_once
LOGGER = init_logger("x")
'''


@pytest.fixture()
def tree(tmp_path, monkeypatch):
    (tmp_path / "sc_fakelib").mkdir()
    (tmp_path / "sc_fakelib" / "__init__.py").write_text("")
    (tmp_path / "sc_fakelib" / "registers_once.py").write_text(LIBRARY)
    (tmp_path / "fakeengine" / "sample").mkdir(parents=True)
    (tmp_path / "fakeengine" / "sample" / "sampler.py").write_text(ENGINE_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield es.EngineTree("fakeengine", tmp_path)
    for name in [n for n in sys.modules if n.split(".")[0] in ("sc_fakelib", "_samplecheck_test_registry")]:
        del sys.modules[name]


def load(tree):
    stubs = {"fakeengine.logger": es.stub_module("fakeengine.logger", init_logger=lambda name: name)}
    stubs.update({n: m for n, m in es.stub_packages(["fakeengine.logger", "fakeengine.sample.sampler"]).items()
                  if n not in stubs})
    with es.isolated_modules(stubs):
        return tree.load("fakeengine/sample/sampler.py", "fakeengine.sample.sampler")


def test_a_library_the_engine_imports_is_executed_once_across_instances(tree):
    first = load(tree)
    second = load(tree)         # a second adapter instance in the same process (pytest, identify's probes)
    assert first is not second and first.LOGGER == second.LOGGER == "x"
    assert "sc_fakelib.registers_once" in sys.modules
    import sc_fakelib.registers_once  # noqa: F401  (what torch.compile does at the first draw: no re-execution)


def test_the_engines_files_and_stubs_leave_sys_modules(tree):
    module = load(tree)
    assert module.__samplecheck_engine_file__ == "fakeengine/sample/sampler.py"
    assert not [n for n in sys.modules if n.split(".")[0] == "fakeengine"]


def test_a_module_replaced_by_a_stub_is_put_back(tree):
    real = sys.modules.setdefault("fakeengine", es.stub_module("fakeengine", package=True))
    try:
        load(tree)
        assert sys.modules["fakeengine"] is real
    finally:
        del sys.modules["fakeengine"]


def test_engine_modules_are_importable_by_name_during_a_draw_only(tree):
    """torch.compile imports a module by name when it traces a function inlined from it (SGLang's compiled
    multinomial_with_seed calls sglang.srt.layers.utils.hash.murmur_hash32): every seeded SGLang draw of the GPU run
    of 2026-11-27 raised ModuleNotFoundError so. ``engine_modules`` puts the engine's copy back for the call."""
    import importlib
    stubs = {"fakeengine.logger": es.stub_module("fakeengine.logger", init_logger=lambda name: name)}
    stubs.update({n: m for n, m in es.stub_packages(["fakeengine.logger", "fakeengine.sample.sampler"]).items()
                  if n not in stubs})
    with es.isolated_modules(stubs) as kept:
        module = tree.load("fakeengine/sample/sampler.py", "fakeengine.sample.sampler")
    assert kept["fakeengine.sample.sampler"] is module and kept["fakeengine.logger"] is stubs["fakeengine.logger"]
    assert not [n for n in sys.modules if n.split(".")[0] == "fakeengine"]
    with es.engine_modules(kept):
        assert importlib.import_module("fakeengine.sample.sampler") is module
        assert importlib.import_module("fakeengine.logger").init_logger("y") == "y"
    assert not [n for n in sys.modules if n.split(".")[0] == "fakeengine"]


def test_engine_modules_put_back_what_was_there(tree):
    real = sys.modules.setdefault("fakeengine", es.stub_module("fakeengine", package=True))
    try:
        stubs = es.stub_packages(["fakeengine.sample.sampler"])
        with es.isolated_modules(stubs) as kept:
            pass
        assert kept["fakeengine"] is stubs["fakeengine"]
        with es.engine_modules(kept):
            assert sys.modules["fakeengine"] is stubs["fakeengine"]
        assert sys.modules["fakeengine"] is real
    finally:
        del sys.modules["fakeengine"]


def test_position_key_keeps_small_offsets_and_folds_large_ones_into_the_seed():
    # below 2^bits: the position under the caller's seed (as int64)
    assert es.position_key(7, 5, 62) == (7, 5)
    assert es.position_key(2 ** 64 - 1, 5, 30) == (-1, 5)
    # offsets past int64 (valid u64 offsets of the property suites: MRV2 raised "Overflow when unpacking long long"
    # on the H100 run of 13a4b57) fold into the seed and leave room for a verifier's draft slots
    for bits in (30, 62):
        big = [2 ** bits, 2 ** 63 - 15, 2 ** 63 + 7, 2 ** 64 - 1]
        keys = [es.position_key(3, o, bits) for o in big]
        assert all(0 <= pos < 2 ** bits and -2 ** 63 <= seed < 2 ** 63 for seed, pos in keys)
        assert len(set(keys)) == len(keys) and all(seed != 3 for seed, _ in keys)
        seed, pos = es.position_key(3, 2 ** 63 + 7, bits)
        assert es.position_key(3, 2 ** 63 + 7 + 4, bits) == (seed, pos + 4)   # a window's offsets stay consecutive
    with pytest.raises(ValueError, match="offset must be >= 0"):
        es.position_key(1, -1, 62)

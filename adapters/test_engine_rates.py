"""scripts/engine-rates' CPU-reachable parts (issue 41), so that it is not first run on the GPU machine: the
arguments, the table, the refusal without CUDA, and whole measurements of the CPU paths at small sizes with the trees
SAMPLECHECK_TRTLLM_SRC / SAMPLECHECK_VLLM_SRC name (skipped without them)."""
import importlib.machinery
import importlib.util
import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "engine-rates"


def load():
    loader = importlib.machinery.SourceFileLoader("engine_rates", str(SCRIPT))
    spec = importlib.util.spec_from_loader("engine_rates", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


rates = load()


def test_arguments_default_to_every_path_both_vocabularies_and_refuse_unknown_names(capsys):
    args = rates.parse_args(["--out", "x"])
    assert args.paths == list(rates.PATHS) and args.vocab == [32000, 128256]
    assert args.params == ["plain", "topk50-topp0.9"] and args.adapter_draws == 1 << 18
    for bad, text in [(["--paths", "vllm-pytorch,nope"], "unknown path(s) nope"), (["--vocab", "1"], "at least 2"),
                      (["--vocab", "a"], "comma-separated integers"), (["--params", "hot"], "unknown parameter")]:
        with pytest.raises(SystemExit) as exit_:
            rates.parse_args(["--out", "x"] + bad)
        assert exit_.value.code == 2 and text in capsys.readouterr().err


def test_the_table_has_a_row_a_measurement_with_its_ratios_and_errors():
    records = [{"path": "trtllm-torch", "vocab": 32000, "params": "plain", "batch_rows": 4096, "kernel": 2.0e6,
                "adapter": 1.5e6, "harness": 1.4e6, "harness_run": 9.0e5},
               {"path": "mrv2", "error": "needs CUDA | and triton"}]
    text = rates.table(records, "header")
    lines = text.splitlines()
    assert lines[0] == "header" and lines[1].startswith("| path | V | params | B | kernel draws/s")
    assert lines[3] == ("| trtllm-torch | 32000 | plain | 4096 | 2e+06 | 1.5e+06 | 1.4e+06 | 9e+05 | 0.75 | 0.70 |  |")
    assert lines[4].startswith("| mrv2 | — |") and "needs CUDA \\| and triton" in lines[4]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the refusal is for machines without")
def test_it_refuses_without_cuda(tmp_path, capsys):
    assert rates.main(["--out", str(tmp_path)]) == 2
    assert "no CUDA device" in capsys.readouterr().err and not (tmp_path / "engine-rates.md").exists()


def run_cpu(tmp_path, engine, var, path):
    src = os.environ.get(var)
    if not src:
        pytest.skip(f"{var} is not set (no {engine} tree)")
    root = tmp_path / "trees"
    root.mkdir()
    (root / f"{engine}-test").symlink_to(src)
    harness = "3000" if rates.find_samplecheck(None) else "0"
    code = rates.main(["--out", str(tmp_path / "out"), "--src-root", str(root), "--paths", path, "--vocab", "300",
                       "--params", "plain,topk50", "--allow-cpu", "--adapter-draws", "1000", "--harness-draws",
                       harness, "--kernel-calls", "2", "--batch-rows", "64"])
    data = json.loads((tmp_path / "out" / "engine-rates.json").read_text())
    assert code == 0, data
    assert [(r["path"], r["vocab"], r["params"]) for r in data["records"]] == [(path, 300, "plain"),
                                                                               (path, 300, "topk50")]
    for r in data["records"]:
        assert r["batch_rows"] == 64 and r["kernel"] > 0 and r["adapter"] > 0
        if harness != "0":
            assert r["harness"] > 0 and Path(r["report"]).is_file()
    assert f"| {path} | 300 | topk50 | 64 |" in (tmp_path / "out" / "engine-rates.md").read_text()


def test_the_trtllm_path_on_the_cpu(tmp_path):
    run_cpu(tmp_path, "trtllm", "SAMPLECHECK_TRTLLM_SRC", "trtllm-torch")


def test_the_vllm_pytorch_path_on_the_cpu(tmp_path):
    run_cpu(tmp_path, "vllm", "SAMPLECHECK_VLLM_SRC", "vllm-pytorch")

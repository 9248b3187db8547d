"""noise_remedy.py without a tree or a GPU: the rewrite of gumbel.py's fp32 Gumbel draws, and its refusals."""
import noise_remedy as nr

FP32 = ("    uniform = tl.maximum(tl.rand(gumbel_seed, cols), 1.0e-7)\n"
        "    gumbel = -tl.log(-tl.log(uniform))\n")


def test_each_fp32_draw_becomes_fp64_of_one_minus_u():
    text, n = nr.remedy("x = 1\n" + FP32 + FP32.replace("cols", "token_offsets"))
    assert n == 2
    assert "tl.rand(gumbel_seed, cols).to(tl.float64), 2.3283064365386963e-10)" in text
    assert "tl.rand(gumbel_seed, token_offsets).to(tl.float64)" in text
    assert text.count("gumbel = (-tl.log(-tl.log(1.0 - uniform))).to(tl.float32)") == 2
    assert "1.0e-7" not in text and text.startswith("x = 1\n")


def test_a_tree_without_gumbel_py_or_an_existing_destination_is_refused(tmp_path, capsys):
    assert nr.main([str(tmp_path), str(tmp_path / "out")]) == 2
    assert "not a TokenSpeed tree" in capsys.readouterr().err
    gumbel = tmp_path / "src" / nr.GUMBEL
    gumbel.parent.mkdir(parents=True)
    gumbel.write_text(FP32)
    assert nr.main([str(tmp_path / "src"), str(tmp_path)]) == 2          # the destination exists
    assert nr.main([str(tmp_path / "src"), str(tmp_path / "out")]) == 1  # one draw, not the commit's two
    assert "found 1" in capsys.readouterr().err and not (tmp_path / "out").exists()
    gumbel.write_text(FP32 + FP32)
    assert nr.main([str(tmp_path / "src"), str(tmp_path / "out")]) == 0
    assert "to(tl.float64)" in (tmp_path / "out" / nr.GUMBEL).read_text()

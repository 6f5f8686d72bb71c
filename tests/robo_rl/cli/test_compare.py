"""`robo-rl compare` overlays several runs' curves in one PNG, one panel per metric, and refuses metrics no run
has."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import matplotlib.image

from robo_rl.cli.main import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _quiet(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        return main(argv), err.getvalue()


def test_compare_writes_one_png_for_several_runs(tmp_path: Path) -> None:
    for seed in ("0", "1"):
        code, _ = _quiet(
            [
                "train",
                "--max-iterations",
                "2",
                "--num-envs",
                "16",
                "--seed",
                seed,
                "--set",
                "runner.loop.eval_interval=1",
                "--runs-root",
                str(tmp_path / "runs"),
                "--quiet",
            ]
        )
        assert code == 0
    runs = sorted(str(p) for p in (tmp_path / "runs" / "pendulum_ppo").iterdir())
    out = tmp_path / "cmp.png"
    assert _quiet(["compare", *runs, "-o", str(out)])[0] == 0
    data = out.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 5_000
    # by default the learning curve's panels: evaluation return and success rate, training reward per step
    assert matplotlib.image.imread(out).shape[:2] == (760, 800)  # 3 panels of 220 px, title 60 px, legend 2 × 20 px
    one = tmp_path / "one.png"
    assert _quiet(["compare", *runs, "-o", str(one), "--metric", "value_loss", "--metric", "no_such_metric"])[0] == 0
    assert matplotlib.image.imread(one).shape[:2] == (320, 800)  # only the metric the runs have
    code, err = _quiet(["compare", *runs, "-o", str(tmp_path / "x.png"), "--metric", "no_such_metric"])
    assert code == 2 and "no_such_metric" in err and err.count("\n") == 1
    assert not (tmp_path / "x.png").exists()

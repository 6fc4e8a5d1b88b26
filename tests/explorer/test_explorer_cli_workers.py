"""`explorer serve` options for run workers: --max-runs, --stall-timeout, --plugin."""

from __future__ import annotations

from explorer.cli import _parser, _serve_config
from explorer.runs.config import RunConfig


def test_serve_run_options_reach_the_run_config(tmp_path):
    args = _parser().parse_args(["serve", "--data", str(tmp_path), "--max-runs", "3",
                                 "--stall-timeout", "90", "--plugin", "a_mod",
                                 "--plugin", "b_mod"])
    config = RunConfig.from_mapping(_serve_config(args))
    assert config.max_concurrent == 3
    assert config.stall_timeout == 90.0
    assert config.plugins == ("a_mod", "b_mod")


def test_run_config_defaults():
    import os

    config = RunConfig.from_mapping(_serve_config(_parser().parse_args(["serve"])))
    assert config.max_concurrent == (os.cpu_count() or 1)
    assert config.stall_timeout == 1800.0 and config.cancel_grace == 2.0
    assert config.plugins == ()
    assert RunConfig.from_mapping({"RUN_PLUGINS": "x, y ,"}).plugins == ("x", "y")

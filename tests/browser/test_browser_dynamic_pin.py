"""A real dynamic-batch export (torch.onnx's TorchScript BERT, batch symbolic) dropped on the
home page: the refusal names the dynamic inputs, the Input shapes field is filled with
their pin (each dynamic dim 1) and opened, and the same file uploaded again opens its
session page."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import sized_page

EXPORTS = Path(__file__).resolve().parents[2] / "bench" / "models" / "torch_export"


def test_the_home_page_offers_the_pin_of_a_dynamic_batch(browser: Any, server: str) -> None:
    pytest.importorskip("torch")
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed")
    from engine.relay.testing.torch_models import Export, cached_export

    path = cached_export(EXPORTS, "bert_tiny", Export("torchscript", None, dynamic_batch=True))
    with sized_page(browser, server, 1280, 900) as (page, errors):
        page.goto("/")
        page.get_by_test_id("autorun").uncheck()
        page.get_by_test_id("file-input").set_input_files(str(path))
        page.get_by_test_id("pin-offered").wait_for()
        status = page.get_by_test_id("upload-status").inner_text()
        assert "dynamic shape" in status and "input_ids [" in status
        shapes = page.get_by_label("Input shapes (JSON)")
        assert shapes.is_visible()
        pin = json.loads(shapes.input_value())
        assert pin["input_ids"][0] == 1 and set(pin) >= {"input_ids", "attention_mask"}
        page.get_by_test_id("file-input").set_input_files(str(path))
        page.wait_for_url("**/s/**")
        assert not errors

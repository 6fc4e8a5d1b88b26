"""A model over the numerics check's weight limit (a server started with
`--numerics-limit`), run with the check on: the run ends without numerics and the page says
why in the numerics banner (a note, not a break); the tensor inspector names the limit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import run_checked, sized_page, upload
from numerics_plugin import conv_chain_onnx


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory, frontend_bundle: Path,
            serve_explorer: Any) -> Iterator[str]:
    yield from serve_explorer(tmp_path_factory.mktemp("limited-data"),
                              "--numerics-limit", "0.000001")


def test_the_page_says_why_numerics_were_not_checked(browser: Any, limited: str,
                                                      tmp_path: Path) -> None:
    session = upload(limited, conv_chain_onnx(tmp_path / "conv_chain.onnx"))
    with sized_page(browser, limited, 1440, 900) as (page, errors):
        run_checked(page, limited, session["id"])
        banner = page.get_by_test_id("numerics-banner")
        banner.wait_for()
        assert "note" in (banner.get_attribute("class") or "")
        reason = page.get_by_test_id("numerics-unchecked").inner_text()
        assert "the model's weights are" in reason and "numerics check's limit of 0.00 GB" in reason
        assert page.locator(".pass-row[data-numerics='introduced']").count() == 0
        assert not errors

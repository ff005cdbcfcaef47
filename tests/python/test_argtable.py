"""docs/arguments.md, the status of every operator argument, is the one the
schemas (and DALI 2.4's, for the refused ones) give today."""

from conftest import dali_or_skip

from ladle import _argtable


def test_the_argument_table_is_current():
    dali_or_skip()  # the refused rows come from DALI's own schema
    assert _argtable.render() == open(_argtable.TABLE).read(), \
        "docs/arguments.md is stale: run python -m ladle._argtable"


def test_hints_are_marked_and_explained():
    text = _argtable.render()
    assert "| `initial_fill` | accepted, no effect | Accepted for DALI scripts" in text
    assert "| `crop_w` | per sample |" in text

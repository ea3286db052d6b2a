"""Runs are unchanged by refactoring: small runs of every algorithm reproduce their pinned
histories bit for bit (``tests/pinned/make_pins.py`` wrote them; re-pin only for an intended
change of results)."""
import json
from pathlib import Path

import pandas as pd
import pytest

from pinned.make_pins import history

PINNED = Path(__file__).resolve().parent / "pinned"
CASES = json.loads((PINNED / "cases.json").read_text())
EXPECTED = pd.read_csv(PINNED / "histories.csv.gz")


@pytest.mark.parametrize("case", sorted(CASES))
def test_history_is_bit_identical_to_the_pinned_one(case):
    expected = EXPECTED[EXPECTED["case"] == case].drop(columns="case").reset_index(drop=True)
    got = history(CASES[case]).reset_index(drop=True)
    got["value"] = got["value"].map(float.hex)
    pd.testing.assert_frame_equal(got[expected.columns], expected, check_dtype=False)

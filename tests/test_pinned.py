"""Runs are unchanged by refactoring: small runs of every algorithm reproduce their pinned
histories (``tests/pinned/make_pins.py`` wrote them; re-pin only for an intended change of
results).

Float32 kernels differ in their last bits between CPUs (measured: up to 1.3e-6 relative
between an AMD EPYC with AVX-512 and the machine of the reference pin, over the cases'
4 rounds), so a history is compared bit for bit with the pin of its own platform, and with the
reference pin to float rounding on every platform."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pinned.make_pins import history, platform_signature

PINNED = Path(__file__).resolve().parent / "pinned"
CASES = json.loads((PINNED / "cases.json").read_text())
REFERENCE = pd.read_csv(PINNED / "histories.csv.gz")
PLATFORM_PIN = PINNED / "platforms" / f"{platform_signature()}.csv.gz"
# Across platforms: float32 rounding of a few rounds (8x the largest difference measured).
CROSS_PLATFORM_RTOL = 1e-5


def _pinned(table: pd.DataFrame, case: str) -> pd.DataFrame:
    return table[table["case"] == case].drop(columns="case").reset_index(drop=True)


@pytest.fixture(scope="module")
def histories():
    return {}


def _history(histories: dict, case: str) -> pd.DataFrame:
    if case not in histories:
        histories[case] = history(CASES[case]).reset_index(drop=True)
    return histories[case]


@pytest.mark.parametrize("case", sorted(CASES))
def test_history_agrees_with_the_reference_pin_to_float_rounding(case, histories):
    expected = _pinned(REFERENCE, case)
    got = _history(histories, case)
    keys = ["round", "agent", "metric"]
    pd.testing.assert_frame_equal(got[keys].astype(str), expected[keys].astype(str))
    np.testing.assert_allclose(got["value"].to_numpy(), expected["value"].map(float.fromhex).to_numpy(),
                               rtol=CROSS_PLATFORM_RTOL, atol=1e-9)


@pytest.mark.skipif(not PLATFORM_PIN.is_file(), reason=f"no pin for this platform ({platform_signature()}); "
                    "add one with `.venv/bin/python tests/pinned/make_pins.py`")
@pytest.mark.parametrize("case", sorted(CASES))
def test_history_is_bit_identical_to_this_platforms_pin(case, histories):
    expected = _pinned(pd.read_csv(PLATFORM_PIN), case)
    got = _history(histories, case).copy()
    got["value"] = got["value"].map(float.hex)
    pd.testing.assert_frame_equal(got[expected.columns], expected, check_dtype=False)

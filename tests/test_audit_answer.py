"""The privacy audit in the answer: seeds of one mechanism together, the stated eps called
violated only where every seed's lower bound exceeds it, the no-noise row shown as the
audit's power; and the README's answer carries the committed audits."""
import numpy as np
import pandas as pd
import pytest

from dpdl_core.verdicts.audit_answer import audit_markdown, audit_summary


def _row(mechanism, rule, nominal, audited, seed=0, accountant=4.0):
    return {"mechanism": mechanism, "sigma_rule": rule, "epsilon_nominal": nominal, "channel": "CG", "rounds": 200,
            "m": 5000, "seed": seed, "epsilon_accountant": accountant, "epsilon_audit_informed": audited,
            "epsilon_audit": 0.0, "epsilon_audit_fdp_informed": 1.25 * audited}


def test_the_stated_epsilon_is_violated_only_where_every_seed_proves_it():
    table = pd.DataFrame([_row("DPDL", "authors_code", 0.5, 1.04, 0), _row("DPDL", "authors_code", 0.5, 0.72, 1),
                          _row("DP-CGA", "authors_code", 0.5, 1.04, 0), _row("DP-CGA", "authors_code", 0.5, 0.3, 1),
                          _row("DP-DPSGD", "rdp", 0.5, 0.02), _row("DP-DPSGD", "rdp", np.nan, 5.5, accountant=np.inf)])
    s = audit_summary(table).set_index(["mechanism", "noise"])
    assert s.loc[("DPDL", "paper"), "stated"] == "violated" and s.loc[("DPDL", "paper"), "audited"] == [1.04, 0.72]
    assert s.loc[("DP-CGA", "paper"), "stated"] == "not shown violated"  # one seed's bound is below 0.5
    assert s.loc[("DP-DPSGD", "equal ε"), "stated"] == "not shown violated"
    assert s.loc[("DP-DPSGD", "none (σ = 0)"), "stated"].startswith("—")
    lines = audit_markdown(audit_summary(table))
    assert lines[0].startswith("| mechanism | noise | rounds | nominal ε |") and len(lines) == 2 + 4
    assert "| DPDL | paper | 200 | 0.5 | 4 | 1.04 / 0.72 | 1.30 / 0.90 | violated |" in lines
    assert "f-DP audited ε" in lines[0] and s.loc[("DPDL", "paper"), "audited_fdp_min"] == pytest.approx(0.9)


def test_the_f_dp_column_is_beside_the_one_run_one_and_the_verdict_reads_the_one_run():
    """A table without the f-DP column (as the stored audits' tables had) shows a dash; an
    f-DP bound above the nominal ε alone does not call the stated ε violated."""
    table = pd.DataFrame([_row("DPDL", "authors_code", 0.5, 0.45)])
    assert audit_summary(table).loc[0, "stated"] == "not shown violated"  # f-DP 0.56 > 0.5
    bare = audit_summary(table.drop(columns="epsilon_audit_fdp_informed"))
    assert "| 0.45 | — | not shown violated |" in audit_markdown(bare)[2]


def test_the_readme_answer_shows_the_committed_audits():
    from dpdl_core.verdicts.answer import BEGIN, ROOT, _audit_summary

    audits = _audit_summary()
    block = (ROOT / "README.md").read_text().split(BEGIN, 1)[1]
    assert len(audits) and "### Privacy audit (beyond the papers)" in block
    for r in audits.itertuples():
        assert f"| {r.mechanism} | {r.noise} |" in block


def test_each_papers_noise_is_named_and_listed_first():
    """PDSL's σ_b and LEASGD's common σ₂ are their papers' noise, listed with DPDL's before
    equal ε, the other readings (PDSL's code base) and no noise."""
    table = pd.DataFrame([_row("DP-DPSGD", "rdp", np.nan, 5.5, accountant=np.inf),
                          _row("PDSL", "pdsl_code_base", 0.3, 2.7), _row("DP-DPSGD", "rdp", 0.5, 0.02),
                          _row("LEASGD", "leasgd_common", 5.0, 0.45),
                          _row("PDSL", "per_message", 0.3, 0.0), _row("DPDL", "authors_code", 0.5, 1.04)])
    s = audit_summary(table)
    assert s["noise"].tolist() == ["paper", "paper", "paper (σ_b)", "equal ε", "code base", "none (σ = 0)"]
    assert s["mechanism"].tolist()[:3] == ["DPDL", "LEASGD", "PDSL"]
    assert s.set_index("noise").loc["code base", "stated"] == "violated"


def test_input_canary_audits_have_their_own_rows_read_from_the_models_observer():
    """Input-canary rows never enter the white-box table; their own summary reads the one
    observer they have (the victim's models) and names the canaries in the mechanism."""
    gradient = {**_row("DPDL", "authors_code", 0.5, 1.04), "kind": "gradient"}
    model_only = {**_row("DPDL", "authors_code", 0.5, np.nan), "kind": "input (mislabelled, loss, final)",
                  "epsilon_audit": 0.8, "epsilon_audit_fdp": 1.0, "epsilon_audit_fdp_informed": np.nan}
    table = pd.DataFrame([gradient, model_only])
    white = audit_summary(table)
    assert white["audited"].tolist() == [[1.04]]
    black = audit_summary(table, "input")
    assert black.loc[0, "mechanism"] == "DPDL, mislabelled, loss, final"
    assert black.loc[0, "audited"] == [0.8] and black.loc[0, "audited_fdp"] == [1.0]
    assert black.loc[0, "stated"] == "violated"  # 0.8 > the nominal 0.5

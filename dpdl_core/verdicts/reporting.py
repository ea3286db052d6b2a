"""Building blocks of every paper's figures and tables: stored histories of a grid, the
training-loss panel figure, Markdown/LaTeX tables and reference numbers (claims: :mod:`dpdl_core.verdicts.claims`).

A paper's builders (``dpdl_core/papers/<paper>/``) combine these with the paper's grid,
reference file and claims, and return an :class:`~dpdl_core.verdicts.outputs.Output`; the paper's
numbers only ever fill a "paper" column.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..runs.config import ExperimentConfig
from ..runs.results import ResultStore, diverged_round
from ..sim.algorithms import display_name, known_algorithms
from .claims import table_view
from .outputs import Output
from .plotting import caption, figures_dir, parse_caption, save_figure, write_metadata

__all__ = ["accountant_note", "check_stored", "fmt_mean_std", "load_histories", "load_reference", "loss_figure",
           "table_output", "write_table"]

GRID_KEYS = ("algorithm", "epsilon", "n_agents", "topology", "alpha_d", "seed")


def load_reference(paper: str, name: str) -> pd.DataFrame:
    """The reference table ``name`` of ``paper`` (``<paper folder>/reference/<name>.csv``)."""
    from ..papers import paper_dir

    return pd.read_csv(paper_dir(paper) / "reference" / f"{name}.csv")


def load_histories(configs: Sequence[ExperimentConfig], store: ResultStore, metrics: Sequence[str],
                   keys: Sequence[str] = GRID_KEYS) -> tuple[pd.DataFrame, str]:
    """The stored histories of ``configs`` (those the store has), restricted to ``metrics``,
    with the config fields ``keys`` as columns; and the label of the data that ran.

    Raises
    ------
    FileNotFoundError
        When the store has none of them (run the sweep first).
    """
    frames, label = [], None
    for cfg in configs:
        if not store.has(cfg.hash):
            continue
        header, hist = store.load_run(cfg.hash)
        hist = hist[hist["metric"].isin(metrics)].copy()
        for k in keys:
            hist[k] = getattr(cfg, k)
        frames.append(hist)
        label = header["meta"].get("dataset_label", label)
    if not frames:
        raise FileNotFoundError("no stored runs for this grid; run the sweep first (run_sweep(configs))")
    return pd.concat(frames, ignore_index=True), label


def check_stored(configs: Sequence[ExperimentConfig], store: ResultStore | None = None) -> list[str]:
    """Check that every run of a grid is stored and finished with a finite loss curve.

    Returns
    -------
    notes : list of str
        One line per run that diverged (a result, not an error): the round it diverged at,
        and whether its curve stops there or it ran on (``stop_on_divergence: false``).

    Raises
    ------
    AssertionError
        Naming the first run that is missing or whose curve is short or not finite.
    """
    store = store or ResultStore()
    notes = []
    for c in configs:
        assert store.has(c.hash), f"run {c.hash} ({c.algorithm}, epsilon={c.epsilon}) is missing from the store"
        header, hist = store.load_run(c.hash)
        loss = hist.loc[hist["metric"] == "train_loss_mean", "value"]
        meta = header["meta"]
        stopped = meta["diverged"] and len(loss) < c.rounds
        if meta["diverged"]:
            at = diverged_round(meta, len(loss))
            how = " (curve stops)" if stopped else f", ran on to round {len(loss)}" if at < len(loss) else ""
            notes.append(f"{c.algorithm} epsilon={c.epsilon} N={c.n_agents} diverged at round {at}{how}")
        if not stopped:
            assert len(loss) == c.rounds and np.isfinite(loss).all(), f"run {c.hash} has an incomplete loss curve"
    return notes


def loss_figure(configs: Sequence[ExperimentConfig], profile: str, name: str, title: str, note: str,
                store: ResultStore | None = None):
    """Training loss (mean over agents and runs) against round, one panel per (N, ε), a
    shaded band for the spread (min–max over agents and runs); saved as ``name`` with the
    data that ran, the profile and ``note`` in the caption.

    Returns
    -------
    fig, dataset_label, files
        ``files``: the saved ``.pdf`` and ``.png``.
    """
    store = store or ResultStore()
    df, label = load_histories(configs, store, ["train_loss_mean", "train_loss_min", "train_loss_max"])
    wide = df.pivot_table(index=["algorithm", "epsilon", "n_agents", "seed", "round"], columns="metric",
                          values="value").reset_index()
    eps_list = sorted(wide["epsilon"].unique())
    n_list = sorted(wide["n_agents"].unique())
    fig, axes = plt.subplots(len(n_list), len(eps_list), figsize=(4.2 * len(eps_list), 3.2 * len(n_list)),
                             squeeze=False, sharey=True)
    names = [a for a in known_algorithms() if a in set(wide["algorithm"])]
    colors = dict(zip(names, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for r, n in enumerate(n_list):
        for c, eps in enumerate(eps_list):
            ax = axes[r, c]
            cell = wide[(wide["n_agents"] == n) & (wide["epsilon"] == eps)]
            for alg in names:
                runs = cell[cell["algorithm"] == alg]
                if not len(runs):
                    continue
                d = runs.groupby("round")
                mean = d["train_loss_mean"].mean()
                ax.plot(mean.index, mean.values, label=display_name(alg), color=colors[alg], lw=1.2)
                ax.fill_between(mean.index, d["train_loss_min"].min(), d["train_loss_max"].max(), color=colors[alg],
                                alpha=0.12)
            ax.set_title(f"({chr(97 + c)}{r + 1}) $\\epsilon$ = {eps}, N = {n}", fontsize=9)
            ax.set_xlabel("round")
            if c == 0:
                ax.set_ylabel("training loss")
    axes[0, -1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return fig, label, save_figure(fig, name, caption(label, profile, note))


def accountant_note(epsilons: pd.DataFrame) -> str:
    """The accountant's ε of the runs behind a figure or table, for its caption.

    Parameters
    ----------
    epsilons : DataFrame
        One row per run: ``curve`` (the algorithm or variant as the output labels it),
        ``nominal`` (the ε the output shows) and ``epsilon_rdp`` (the accountant's ε of the
        run over all its rounds, max over agents).

    Returns
    -------
    str
        ``accountant epsilon ...: nominal 0.5: DPDL 7.59, DP-DPSGD 0.52`` (the range over the
        runs of a curve where they differ), then whether the curves of one nominal ε are at
        equal privacy (within 1 %) or not: a shared nominal ε or σ rule says nothing of that.
    """
    parts, unequal = [], False
    for nominal, group in epsilons.groupby("nominal", sort=True):
        per_curve = group.groupby("curve", sort=False)["epsilon_rdp"].agg(["min", "max"])
        parts.append(f"nominal {nominal:g}: " + ", ".join(
            f"{curve} {lo:.3g}" if np.isclose(lo, hi, rtol=1e-3) else f"{curve} {lo:.3g}-{hi:.3g}"
            for curve, (lo, hi) in per_curve.iterrows()))
        unequal |= bool(per_curve["max"].max() > 1.01 * per_curve["min"].min())
    verdict = "not equal privacy" if unequal else "equal privacy (within 1%)"
    return (f"accountant epsilon over all rounds (max over agents) by nominal epsilon, {'; '.join(parts)}: "
            f"{verdict}")


def fmt_mean_std(mean: float, std: float, runs: int = 2) -> str:
    """``mean ± std``, or the mean alone for a single run (no spread to show)."""
    return f"{mean:.1f} ± {std:.1f}" if runs >= 2 else f"{mean:.1f}"


def _tex(s) -> str:
    return (str(s).replace("_", r"\_").replace("%", r"\%").replace("±", r"$\pm$").replace("—", "--")
            .replace(">=", r"$\geq$"))


def write_table(name: str, title: str, note: str, cols: Sequence[str], rows: Sequence[Sequence],
                bold: Sequence[tuple[int, int]] = (), claims: pd.DataFrame | None = None) -> str:
    """Render a table to ``figures/<profile>/<name>.md`` and ``.tex`` (with its metadata
    ``<name>.json``: the data and profile ``note`` names); return the Markdown.

    Parameters
    ----------
    rows : rows of cell values, in the order of ``cols``
    bold : (row, column) positions to set in bold (e.g. the best algorithm of a cell)
    claims : DataFrame, optional
        Appended under the table (its columns as the header).
    """
    cells = [[str(v) for v in r] for r in rows]
    md_cells = [list(r) for r in cells]
    tex_cells = [[_tex(v) for v in r] for r in cells]
    for i, j in bold:
        md_cells[i][j] = f"**{md_cells[i][j]}**"
        tex_cells[i][j] = r"\textbf{" + tex_cells[i][j] + "}"
    md = [f"**{title}**", "", f"_{note}_", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(r) + " |" for r in md_cells]
    if claims is not None and len(claims):
        ccols = list(claims.columns)
        md += ["", "| " + " | ".join(ccols) + " |", "|" + "---|" * len(ccols)]
        md += ["| " + " | ".join(str(v) for v in r) + " |" for r in claims.itertuples(index=False)]
    text = "\n".join(md) + "\n"
    md_path, tex_path = _table_paths(name, note)
    md_path.write_text(text)
    lines = [r"\begin{table}[t]", r"\centering", r"\caption{" + _tex(title) + ". " + _tex(note) + "}",
             r"\begin{tabular}{" + "l" * len(cols) + "}", r"\hline", " & ".join(_tex(c) for c in cols) + r" \\",
             r"\hline"]
    lines += [" & ".join(r) + r" \\" for r in tex_cells]
    lines += [r"\hline", r"\end{tabular}", r"\end{table}"]
    tex_path.write_text("\n".join(lines) + "\n")
    write_metadata(name, "table", note, title=title)
    return text


def _table_paths(name: str, note: str) -> tuple[Path, Path]:
    """``<name>.md`` and ``.tex`` in the folder of the profile ``note`` names (as for its metadata)."""
    folder = figures_dir(parse_caption(note)["profile"])
    return folder / f"{name}.md", folder / f"{name}.tex"


def table_output(name: str, title: str, note: str, cols: Sequence[str], rows: Sequence[Sequence],
                 claims: pd.DataFrame, tables: Mapping[str, pd.DataFrame],
                 bold: Sequence[tuple[int, int]] = ()) -> Output:
    """A table builder's output: :func:`write_table` with the claims under the table.

    Parameters
    ----------
    claims : DataFrame
        :func:`~dpdl_core.verdicts.claims.claims_frame` of the table's claims (shown as its
        :func:`~dpdl_core.verdicts.claims.table_view`).
    tables : mapping of str to DataFrame
        The data the notebook shows or asserts on.

    Returns
    -------
    Output
        ``files`` the ``.md`` and ``.tex``, ``text`` the Markdown.
    """
    text = write_table(name, title, note, cols, rows, bold, table_view(claims))
    return Output(_table_paths(name, note), claims, tables, text=text)

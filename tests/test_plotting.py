"""The shared figure helpers: one distinct colour per series, one legend below the panels
(never over a curve) and above the caption, and the study figures' pairs of panels."""
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D

from dpdl_core.verdicts.plotting import legend_below, loss_accuracy_panels, save_figure, series_colours


def test_series_colours_are_distinct_and_kept_in_order():
    names = [f"alg{i}" for i in range(12)]
    colours = series_colours(names + ["alg0"])
    assert list(colours) == names and len(set(colours.values())) == len(names)
    assert series_colours(names[:5]) == dict(zip(names[:5], plt.get_cmap("tab10").colors))


def _history(rounds: int = 5) -> pd.DataFrame:
    rows = [(r, "train_loss_mean", 2.0 / r) for r in range(1, rounds + 1)]
    rows += [(r, "avg_test_acc", 0.1 * r) for r in range(1, rounds + 1)]
    return pd.DataFrame(rows, columns=["round", "metric", "value"])


def test_the_legend_lies_below_every_panel_and_above_the_caption(tmp_path, monkeypatch):
    monkeypatch.setenv("DPDL_FIGURES_DIR", str(tmp_path))
    panels = [(f"cell {i}", [(_history(), {"color": "C0"}), (_history(), {"color": "C1", "ls": "--"})])
              for i in range(5)]
    fig = loss_accuracy_panels(panels, ncols=4)
    assert len(fig.axes) == 2 * 2 * 4 and sum(ax.axison for ax in fig.axes) == 2 * 5  # three empty pairs hidden
    legend = legend_below(fig, [Line2D([], [], color=f"C{i}", label=f"algorithm {i}") for i in range(7)])
    save_figure(fig, "legend_check", "MNIST subset · profile smoke · " + "a long caption " * 30)
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    lowest_panel = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes if ax.axison)
    caption_top = max(t.get_window_extent(renderer).y1 for t in fig.texts)
    assert caption_top <= box.y0 and box.y1 <= lowest_panel
    assert (tmp_path / "smoke" / "legend_check.png").exists()
    plt.close(fig)

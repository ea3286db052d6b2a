"""The verdicts wing: claims and their rules, figures and tables, the notebooks' pipeline,
the report site and the answer. It imports the runs and simulation wings and the ground
floor. The names below are its face: what the papers use.
"""
from ..home import lazy_face

_PUBLIC = {
    "Claim": "claims",
    "ClaimSpec": "claims",
    "Comparison": "claims",
    "LOSS_REL_TOL": "claims",
    "NOT_TESTABLE_EPSILON": "claims",
    "SPREAD_Z": "claims",
    "calibration": "claims",
    "claims_frame": "claims",
    "combine": "claims",
    "difference_margin": "claims",
    "deciding": "claims",
    "effect_interval": "claims",
    "effect_note": "claims",
    "interval_note": "claims",
    "margin_from_stats": "claims",
    "mean_interval": "claims",
    "margin_note": "claims",
    "paired_margin": "claims",
    "parts_margin": "claims",
    "spread_z": "claims",
    "worst_calibration": "claims",
    "Output": "outputs",
    "Evidence": "paper_contract",
    "caption": "plotting",
    "figures_dir": "plotting",
    "legend_below": "plotting",
    "loss_accuracy_panels": "plotting",
    "save_figure": "plotting",
    "series_colours": "plotting",
    "accountant_note": "reporting",
    "check_stored": "reporting",
    "fmt_mean_std": "reporting",
    "load_histories": "reporting",
    "load_reference": "reporting",
    "loss_figure": "reporting",
    "table_output": "reporting",
    "Statement": "statements",
    "answer_frame": "answer",
    "render": "study_report",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_face(__name__, _PUBLIC)

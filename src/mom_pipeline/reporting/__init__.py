"""Tables and figures from evaluation tables (matplotlib PNG and plotly JSON)."""

from .figures import (box_metric, boxplot_figure, boxplot_plotly, look_ahead_note, regret_axis, regret_curve_figure,
                      regret_curve_plotly, setting_label, trial_count)
from .tables import (metric_name, online_markdown, online_metrics, online_summary, summary_markdown, summary_metrics,
                     summary_table)

__all__ = [
    "box_metric",
    "boxplot_figure",
    "boxplot_plotly",
    "look_ahead_note",
    "metric_name",
    "online_markdown",
    "online_metrics",
    "online_summary",
    "regret_axis",
    "regret_curve_figure",
    "regret_curve_plotly",
    "summary_markdown",
    "summary_metrics",
    "setting_label",
    "summary_table",
    "trial_count",
]

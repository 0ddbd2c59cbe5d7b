"""Tables and figures from evaluation tables (matplotlib PNG and plotly JSON)."""

from .figures import boxplot_figure, boxplot_plotly, regret_curve_figure, regret_curve_plotly
from .tables import online_markdown, online_summary, summary_markdown, summary_table

__all__ = [
    "boxplot_figure",
    "boxplot_plotly",
    "online_markdown",
    "online_summary",
    "regret_curve_figure",
    "regret_curve_plotly",
    "summary_markdown",
    "summary_table",
]

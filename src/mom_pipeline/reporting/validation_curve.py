"""The cost-free validation curve of the inverse pipeline: held-out decisions reproduced per lambda."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: figures are written to files
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def validation_curve_figure(curve: pd.DataFrame, scored_from: str = "x* alone", fixed: bool = False):
    """Reproduced share (mean +- std over folds) and, when the curve has it, held-out MOM hinge against
    lambda; the chosen one marked. `scored_from`: what the held-out score uses; `fixed`: the user
    set lambda (``model.lam``), so the title says it was not chosen."""
    title = (f"lambda fixed by the user (model.lam), scored from {scored_from}" if fixed
             else f"lambda chosen from {scored_from}")
    fig, share_axis = plt.subplots(figsize=(6.4, 3.8))
    share_axis.errorbar(curve["lam"], curve["reproduced_share"], yerr=curve["reproduced_share_std"], marker="o",
                        color="#1f77b4", capsize=3, label="held-out decisions reproduced")
    share_axis.set_xscale("log")
    share_axis.set_xlabel("lambda")
    share_axis.set_ylabel("share reproduced (mean over folds)", color="#1f77b4")
    share_axis.set_ylim(-0.02, 1.02)
    if "heldout_hinge" in curve:  # the route pipeline's curve has no hinge column
        hinge_axis = share_axis.twinx()
        hinge_axis.plot(curve["lam"], curve["heldout_hinge"], marker="s", ls="--", color="#ff7f0e",
                        label="held-out MOM hinge")
        hinge_axis.set_ylabel("held-out MOM hinge (tie-break)", color="#ff7f0e")
    chosen = curve[curve["chosen"]].iloc[0]
    share_axis.axvline(chosen["lam"], color="#2ca02c", lw=1.5, alpha=0.7)
    share_axis.set_title(f"{title}:\nlambda = {chosen['lam']:.0e} "
                         f"({100 * chosen['reproduced_share']:.1f}% reproduced)", fontsize=10)
    share_axis.grid(alpha=0.3)
    fig.tight_layout()
    return fig

"""Project datasets: a markdown file that kedro-viz previews."""

from __future__ import annotations

import html

from kedro_datasets._typing import HTMLPreview
from kedro_datasets.text import TextDataset


class MarkdownDataset(TextDataset):
    """A text dataset whose kedro-viz preview is the whole markdown file (monospaced, so the
    pipe tables stay aligned)."""

    def preview(self) -> HTMLPreview:
        text = html.escape(self.load())
        return HTMLPreview(f'<pre style="font-size:12px;white-space:pre">{text}</pre>')

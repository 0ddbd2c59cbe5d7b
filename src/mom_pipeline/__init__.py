"""mom_pipeline: Maximum Optimality Margin for contextual and inverse linear programming."""

from .allocator import keep_freed_memory

__version__ = "0.1.0"

# Freed temporaries stay in the process for the next Newton step (see allocator.py).
keep_freed_memory()

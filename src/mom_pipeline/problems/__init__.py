"""Problem generators faithful to the paper's appendix (shortest path, fractional knapsack)."""

from .common import Samples, Trial, as_generator
from .knapsack import generate_knapsack, knapsack_costs, knapsack_instance
from .pyepo_knapsack import generate_multi_knapsack
from .shortest_path import generate_shortest_path, shortest_path_costs

GENERATORS = {"shortest_path": generate_shortest_path, "knapsack": generate_knapsack,
              "multi_knapsack": generate_multi_knapsack}


def generate_trial(problem: str, **kwargs) -> Trial:
    """Dispatch to the generator of `problem` (a key of GENERATORS)."""
    if problem not in GENERATORS:
        raise ValueError(f"unknown problem {problem!r}; choose one of {sorted(GENERATORS)}")
    return GENERATORS[problem](**kwargs)


__all__ = [
    "GENERATORS",
    "Samples",
    "Trial",
    "as_generator",
    "generate_knapsack",
    "generate_multi_knapsack",
    "generate_shortest_path",
    "generate_trial",
    "knapsack_costs",
    "knapsack_instance",
    "shortest_path_costs",
]

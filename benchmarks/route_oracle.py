"""Benchmark: the batched shortest-route oracle against one HiGHS solve per sample, in one run.

On each real TNTP network found in MOM_NETWORKS_DIR (skipped with a note when absent): T samples
with random positive costs (Dijkstra path) and T with potential-shifted costs that have negative
arcs but no negative cycle (Bellman-Ford path), random zone-to-zone pairs, TNTP zones respected.
Prints time per sample of both and the ratio, and the largest objective difference.
Usage: python benchmarks/route_oracle.py [--samples 1000] [--highs-samples 200]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from mom_pipeline.networks import read_tntp_network, shortest_routes, usable_arcs
from mom_pipeline.networks.files import KNOWN_NETWORKS, NetworkNotFound, locate_network
from mom_pipeline.networks.reference import highs_shortest_routes


def cases(network, T: int, rng):
    ends = network.first_thru_node or network.n_nodes
    o = rng.integers(0, ends, T)
    d = (o + 1 + rng.integers(0, ends - 1, T)) % ends
    positive = rng.uniform(0.1, 1.0, (T, network.n_arcs))
    potential = rng.uniform(0.0, 1.0, (T, network.n_nodes))
    shifted = positive + potential[:, network.tails] - potential[:, network.heads]
    return o, d, {"costs >= 0 (Dijkstra)": positive, "negative arcs (Bellman-Ford)": shifted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--highs-samples", type=int, default=200, help="HiGHS solves timed (per-sample time)")
    args = parser.parse_args()
    print(f"Route oracle vs HiGHS, {args.samples} samples ({args.highs_samples} for HiGHS), "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'network':24s} {'costs':30s} {'oracle ms/sample':>17s} {'HiGHS ms/sample':>16s} {'ratio':>8s} "
          f"{'max |obj diff|':>15s}")
    for name in KNOWN_NETWORKS:
        try:
            net_file, _ = locate_network(name)
        except NetworkNotFound as missing:
            print(f"{name:24s} skipped: {missing}")
            continue
        network = read_tntp_network(net_file)
        rng = np.random.default_rng(0)
        o, d, costs = cases(network, args.samples, rng)
        usable = usable_arcs(network, o, d)
        for label, C in costs.items():
            started = time.perf_counter()
            _, value = shortest_routes(network, C, o, d, usable, return_cost=True)
            oracle = (time.perf_counter() - started) / args.samples
            k = min(args.highs_samples, args.samples)
            started = time.perf_counter()
            _, reference = highs_shortest_routes(network, C[:k], o[:k], d[:k], usable[:k])
            highs = (time.perf_counter() - started) / k
            gap = np.abs(value[:k] - reference).max()
            print(f"{name:24s} {label:30s} {1e3 * oracle:17.3f} {1e3 * highs:16.3f} {highs / oracle:7.1f}x "
                  f"{gap:15.1e}")


if __name__ == "__main__":
    main()

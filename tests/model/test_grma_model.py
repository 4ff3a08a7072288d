#!/usr/bin/env python3
"""The performance model's HD predictions (scripts/grma-model.py predict) on
hand-made figures: each variant's sum of stencils and exchanges, and
HD-OVERLAP's phases as the implementation runs them (one warp exchanging
while the others compute, or all of them claiming rows of blocks)."""
import importlib.util
import math
import pathlib
import unittest

_script = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "grma-model.py"
_spec = importlib.util.spec_from_file_location("grma_model", _script)
model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(model)

LATENCY = 10.0  # us, one way
BANDWIDTH = 1000.0  # bytes per us on the path
MEMORY_GBS = 4.0  # per device: with 4 ranks, 1000 bytes per us each
RANKS, ROWS = 4, 4


def job(backend, threads, widths, variants, devices=1):
    results = [{"width": max(widths), "variant": "compute", "memory_gbs_per_device": MEMORY_GBS}]
    results += [{"width": n, "variant": v} for n in widths for v in variants]
    return {"backend": backend, "threads_per_rank": threads, "rows_per_rank": ROWS,
            "ranks_per_device": RANKS, "devices": devices, "results": results}


def paths():
    segment = (0, LATENCY, BANDWIDTH)
    return {"same device": {"put": [segment], "largest": 1 << 20},
            "peer device": {"put": [segment], "largest": 1 << 20}}


def stencils(n):
    """lap, fluxes and out of one band: 2, 4 and 3 passes over 8 * ROWS * n
    bytes at the rank's share of the memory bandwidth (1000 bytes per us)."""
    s_m = 8.0 * ROWS * n
    return 2 * s_m / 1000.0, 4 * s_m / 1000.0, 3 * s_m / 1000.0


class HorizontalDiffusion(unittest.TestCase):
    def test_hd_is_its_stencils_and_three_exchanges(self):
        predicted, _ = model.predict(job("cuda", 256, [64], ["hd"]), paths())
        # One device: halos are not copied, each exchange costs the latency.
        self.assertAlmostEqual(predicted[(64, "hd")], sum(stencils(64)) + 3 * LATENCY)

    def test_a_peer_device_copies_the_rows(self):
        predicted, _ = model.predict(job("cuda", 256, [64], ["hd"], devices=2), paths())
        row = 8.0 * 64
        exchanges = (LATENCY + 2 * row / BANDWIDTH) + 2 * (LATENCY + row / BANDWIDTH)
        self.assertAlmostEqual(predicted[(64, "hd")], sum(stencils(64)) + exchanges)

    def test_overlap_on_one_thread_takes_the_longer_of_stencil_and_exchange(self):
        n = 512  # stencils 32.768, 65.536 and 49.152 us: every phase is its stencil
        predicted, _ = model.predict(job("cpu", 1, [n], ["overlap"]), paths())
        lap, flx, out = stencils(n)
        self.assertAlmostEqual(predicted[(n, "overlap")], 2 * (lap + flx + out))

    def test_overlap_by_warps_computes_on_the_other_warps(self):
        # 256 threads: 8 warps, of which 7 compute; 512 columns are fewer
        # than two blocks of 128 columns a warp, so the warps do not claim.
        n = 512
        predicted, _ = model.predict(job("cuda", 256, [n], ["overlap"]), paths())
        lap, flx, out = stencils(n)
        self.assertAlmostEqual(predicted[(n, "overlap")], 2 * (lap + flx + out) * 8 / 7)

    def test_overlap_by_claiming_warps_adds_a_share_of_the_round(self):
        # 2048 columns: two blocks a warp; the exchanging warp joins after its
        # round, so each phase is its stencil and an eighth of the round.
        n = 2048
        predicted, _ = model.predict(job("cuda", 256, [n], ["overlap"]), paths())
        lap, flx, out = stencils(n)
        self.assertAlmostEqual(predicted[(n, "overlap")],
                               2 * (lap + flx + out) + 6 * LATENCY / 8)

    def test_a_round_longer_than_the_stencil_is_the_phase(self):
        n = 8  # stencils under 1 us, rounds 10 us: six rounds an iteration
        for backend, threads in (("cuda", 256), ("cpu", 1)):
            predicted, _ = model.predict(job(backend, threads, [n], ["overlap"]), paths())
            self.assertTrue(math.isclose(predicted[(n, "overlap")], 6 * LATENCY), backend)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""The grma performance model (papers/000 §4.2-4.3.2) and plots.

Fits the Hockney model t(s) = L + s / B to the one-way times (half the
ping-pong round trip) that grma-bench measured, per path (same device,
peer device, remote) and, where the curve bends, per size range; prints the
parameters as papers/000 Table 4.2 does. Given grma-hd's JSON, predicts the
time of an iteration of HD, HD-NOOVERLAP and HD-OVERLAP from them and prints
the prediction beside the measurement. With --plots DIR, writes PNG plots
(needs matplotlib): latency and bandwidth against size, grma beside each
baseline; HD time against width, grma beside the baseline and the model.

  scripts/grma-model.py --bench F [--bench F ...] [--hd F[:LABEL] ...] [--halo F ...]
                        [--plots DIR]
Standard library only, except for the plots.
"""
import argparse
import json
import math
import sys


def weighted_fit(points):
    """L [us] and B [bytes/us] minimizing the squared relative error."""
    # t = L + s * x (x = 1/B): least squares with weights 1/t^2.
    sw = sws = swss = swt = swst = 0.0
    for s, t in points:
        w = 1.0 / (t * t)
        sw += w; sws += w * s; swss += w * s * s; swt += w * t; swst += w * s * t
    det = sw * swss - sws * sws
    if det == 0:
        return points[0][1], math.inf
    latency = (swss * swt - sws * swst) / det
    inverse = (sw * swst - sws * swt) / det
    return max(latency, 0.0), (1.0 / inverse if inverse > 0 else math.inf)


def worst_error(points, latency, bandwidth):
    return max(abs(latency + s / bandwidth - t) / t for s, t in points)


def hockney(points):
    """One segment, or two where one line misses some point by more than 10 %
    and two lines fit at least twice as well. Returns [(first size, L, B)]."""
    latency, bandwidth = weighted_fit(points)
    single = worst_error(points, latency, bandwidth)
    best = [(points[0][0], latency, bandwidth)]
    if single <= 0.10 or len(points) < 5:
        return best
    best_error = single
    for k in range(2, len(points) - 2):  # at least three points on each side
        low, high = points[:k + 1], points[k:]  # the bend's point belongs to both fits
        l1, b1 = weighted_fit(low)
        l2, b2 = weighted_fit(high)
        error = max(worst_error(low, l1, b1), worst_error(high, l2, b2))
        if error < best_error / 2:
            best_error = error
            best = [(points[0][0], l1, b1), (points[k][0], l2, b2)]
    return best


def segment_for(segments, size):
    chosen = segments[0]
    for seg in segments:
        if size >= seg[0]:
            chosen = seg
    return chosen


def halo_time(segments, size, copies):
    """t_Halo: one latency, then the bytes; a halo that is not copied (no-copy
    on one device) costs the latency of the smallest message."""
    if not copies:
        return segment_for(segments, 8)[1]
    _, latency, bandwidth = segment_for(segments, max(size, 1))
    return latency + size / bandwidth


def load(path):
    with open(path) as f:
        return json.load(f)


def runs_of(data):
    """grma-bench's runs, one per backend (a file of one run before "runs")."""
    return data["runs"] if "runs" in data else [data]


def bench_runs(path):
    return runs_of(load(path))


def fit_latency(latency):
    """Hockney segments of put and get from a list of ping-pong entries, and
    the largest size measured (beyond it a segment is extrapolated)."""
    entry = {"largest": max((p["bytes"] for p in latency), default=0)}
    for op, key in (("put", "notified_put_us"), ("get", "notified_get_us")):
        points = [(p["bytes"], p[key] / 2) for p in latency if p.get(key)]
        if points:
            entry[op] = hockney(points)
    return entry


def paths_from(args):
    """{path: {"put": segments, "get": segments}} from one-way times in us,
    from grma-bench's JSON (every path it measured). Of several files, the
    first that measured a path gives it."""
    paths = {}
    for bench in args.bench:  # each file's first run: the GPUs' when it had any
        for p in bench_runs(bench)[0]["paths"]:
            paths.setdefault("remote" if p["name"] == "other node" else p["name"], fit_latency(p["latency"]))
    return paths


def print_table(paths):
    print("Table 4.2 (grma): Hockney parameters, one-way notified access")
    print(f"{'path':<28} {'L put [us]':>11} {'L get [us]':>11} {'B put [GB/s]':>13} {'B get [GB/s]':>13}")
    for name, entry in paths.items():
        starts = sorted({seg[0] for op in ("put", "get") for seg in entry.get(op, [])})
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else None
            label = name + (f" >= {start} B" if i else "") + (f" < {end} B" if end else "")
            cells = []
            for op in ("put", "get"):
                seg = segment_for(entry[op], start) if op in entry else None
                cells.append(seg)
            lat = [f"{c[1]:.2f}" if c else "-" for c in cells]
            bw = [f"{c[2] / 1e3:.1f}" if c and c[2] != math.inf else "-" for c in cells]
            print(f"{label:<28} {lat[0]:>11} {lat[1]:>11} {bw[0]:>13} {bw[1]:>13}")
    print()


def halo_segments(halos, ranks, backend):
    """Hockney segments of a halo exchange of `ranks` ranks on `backend`
    (grma-bench), or None."""
    for data in halos:
        for run in runs_of(data):
            points = [(h["bytes"], h["round_us"]) for h in run.get("halo", []) if h["ranks"] == ranks]
            if points and run["backend"] == backend:
                return hockney(points)
    return None


def predict(hd, paths, loaded=None):
    """{(width, variant): predicted us} for grma-hd's results (papers/000 §4.3.2).
    With `loaded` (the Hockney segments of a halo exchange of all the job's
    ranks), an exchange's latency is a round of it instead of the ping-pong's
    one-way time: the latency under the load of every rank at once. A round
    under that load is bound by each rank's own work for its puts and waits
    (grma-bench's round costs several times one way of its ping-pong). In
    HD-NOOVERLAP the rank's threads do that work between their stencils, so
    each data set's exchange is a round of its own; HD-OVERLAP on ranks of
    two GPU warps or more gives it to one warp while the others compute
    (iterate_by_warps), so each of its phases costs the longer of a stencil
    and a round (smaller ranks alternate: rounds of their own again). The
    stencil of such a phase runs on the other warps: a rank's stencil is
    bound by its loads in flight, so it takes warps / (warps - 1) as long;
    where the warps claim rows of blocks (a band of two blocks of 128
    columns a warp or more, hd_grma.hpp's wide_enough_to_claim) the
    exchanging warp joins once its round is done, and the phase takes the
    stencil and a share of the round."""
    rows, ranks = hd["rows_per_rank"], hd["ranks_per_device"]
    warps = hd["threads_per_rank"] // 32
    by_warps = hd["backend"] == "cuda" and warps >= 2
    devices, nodes = hd["devices"], hd.get("nodes", 1)
    compute = [r for r in hd["results"] if r["variant"] == "compute"]
    if not compute:
        return None, None
    widest = max(compute, key=lambda r: r["width"])
    memory = widest["memory_gbs_per_device"] * 1e3  # bytes per us, shared by the device's ranks
    # Halos cross to a peer device where the job has several; the slowest
    # path bounds the iteration (papers/000 §4.3.2, "Choosing GPU RMA Model
    # Parameters"). Halos between ranks of one device are not copied (no-copy).
    path = "remote" if nodes > 1 else "peer device" if devices > 1 else "same device"
    if path not in paths or "put" not in paths[path]:
        return None, None
    segments = paths[path]["put"]
    copies = devices > 1
    if loaded is not None:
        # The latency under load, the bandwidth of the path: only the rows
        # between devices are copied (the halo benchmark copies every row,
        # so its own slope is memory contention HD does not have).
        load_latency = segment_for(loaded, 8)[1]
        segments = [(start, load_latency, bandwidth) for start, _, bandwidth in segments]
    predicted, extrapolated = {}, set()
    largest = paths[path]["largest"]
    for r in hd["results"]:
        n = r["width"]
        s_m, s_r = 8.0 * rows * n, 8.0 * n
        per_rank = memory / ranks
        t_lap = 2 * s_m / per_rank
        t_flx = 4 * s_m / per_rank
        t_out = 3 * s_m / per_rank

        def halo(rows_sent, key=(n, r["variant"])):
            # A copied halo larger than the path's largest ping-pong: the fit is extrapolated.
            if copies and rows_sent * s_r > largest:
                extrapolated.add(key)
            return halo_time(segments, rows_sent * s_r, copies)
        # Exchanges: in (a row each way), lap (one row up), fli (one row down).
        one_set = t_lap + t_flx + t_out + halo(2) + halo(1) + halo(1)
        if r["variant"] == "hd":
            t = one_set
        elif r["variant"] not in ("nooverlap", "overlap"):
            continue
        elif loaded is not None and (r["variant"] == "nooverlap" or not by_warps):
            t = 2 * one_set  # each set's exchanges are rounds of their own
        elif r["variant"] == "nooverlap":
            t = 2 * (t_lap + t_flx + t_out) + halo(4) + halo(2) + halo(2)
        else:
            # HD-OVERLAP, papers/000 Figure 4.2: six phases, each the longer of a stencil
            # of one set and a halo exchange of the other.
            claims = by_warps and n >= 2 * 128 * warps

            def phase(stencil, exchange):
                if claims:
                    return max(exchange, stencil + exchange / warps)
                return max(exchange, stencil * warps / (warps - 1) if by_warps else stencil)
            t = (phase(t_lap, halo(2)) + phase(t_lap, halo(1)) + phase(t_flx, halo(1)) +
                 phase(t_flx, halo(1)) + phase(t_out, halo(1)) + phase(t_out, halo(2)))
        predicted[(n, r["variant"])] = t
    return predicted, {"path": "halo exchange of all ranks" if loaded else path + " ping-pong",
                       "memory_gbs": memory / 1e3, "extrapolated": extrapolated,
                       "largest": largest}


def print_hd(hd, predicted, about, label, loaded=None):
    print(f"Horizontal diffusion, {label}: {hd['devices']} device(s) x {hd['ranks_per_device']} ranks, "
          f"{hd['rows_per_rank']} rows per rank; model: latency from the {about['path']}, "
          f"B_M {about['memory_gbs']:.0f} GB/s per device"
          + ("; loaded: a round of the halo exchange of all ranks" if loaded else ""))
    print(f"{'width':>7} {'variant':>10} {'grma [us]':>10} {'model [us]':>11} {'model/grma':>11} "
          f"{'loaded [us]':>12} {'loaded/grma':>12} {'baseline [us]':>14} {'baseline/grma':>14}")
    for r in hd["results"]:
        key = (r["width"], r["variant"])
        if key not in predicted:
            continue
        g, m, b = r["grma_us"], predicted[key], r.get("baseline_us")
        l = loaded[key] if loaded else None
        mark = "*" if key in about["extrapolated"] else " "
        print(f"{r['width']:>7} {r['variant']:>10} {g:>10.2f} {m:>10.2f}{mark} {m / g:>11.2f} "
              f"{(f'{l:.2f}' if l else '-'):>12} {(f'{l / g:.2f}' if l else '-'):>12} "
              f"{(f'{b:.2f}' if b else '-'):>14} {(f'{b / g:.2f}' if b else '-'):>14}")
    if about["extrapolated"]:
        print(f"* halos above the largest ping-pong measured on the path ({about['largest']} B): "
              "its Hockney fit is extrapolated there")
    print()


def plots(args, paths, hds):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import os
    os.makedirs(args.plots, exist_ok=True)
    written = []
    # Latency and bandwidth against size: each path of each backend, grma
    # beside the floors and baselines measured in the same run.
    sources, named = [], set()
    for bench in args.bench:
        for run in bench_runs(bench):
            for p in run["paths"]:
                path = "remote" if p["name"] == "other node" else p["name"]
                name = f"{path} ({run['backend']})"
                if name in named:  # drawn from an earlier file (same plot file)
                    continue
                named.add(name)
                sources.append((name, p, [("floor_us", p["floor"]),
                                          ("release_floor_us", "release flag (floor of any put)"),
                                          ("nvshmem_signal_us", "NVSHMEM putmem_signal"),
                                          ("staged_mpi_us", "MPI, staged through the host")],
                                [("one_rank_gbs", "grma, one rank"), ("all_pairs_gbs", "grma, all pairs"),
                                 ("copy_floor_gbs", p["copy_baseline"]),
                                 ("nvshmem_one_block_gbs", "NVSHMEM, one block"),
                                 ("nvshmem_blocks_gbs", "NVSHMEM, as many blocks as pairs"),
                                 ("staged_mpi_gbs", "MPI, staged through the host")]))
    for name, data, floors, bands in sources:
        if not data.get("bandwidth"):
            data["bandwidth"] = [{"bytes": 1}]
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        sizes = [p["bytes"] for p in data["latency"]]
        for key, label in [("notified_put_us", "grma notified put"), ("signal_put_us", "grma signal put"),
                           ("notified_get_us", "grma notified get")] + floors:
            if data["latency"][0].get(key) is not None:
                left.plot(sizes, [p[key] for p in data["latency"]], marker="o", label=label)
        fitted = fit_latency(data["latency"])  # the Hockney fit of this source's own points
        if "put" in fitted:
            model = [2 * halo_time(fitted["put"], s, True) for s in sizes]
            left.plot(sizes, model, linestyle="--", color="gray", label="Hockney fit (put)")
        left.set(xscale="log", yscale="log", xlabel="bytes", ylabel="round trip [us]",
                 title=f"{name}: ping-pong")
        left.legend(fontsize=8)
        bw_sizes = [p["bytes"] for p in data["bandwidth"]]
        for key, label in bands:
            if any(p.get(key) is not None for p in data["bandwidth"]):
                # null where not measured (all pairs of sizes the heap cannot hold for all)
                values = [float("nan") if p.get(key) is None else p[key] for p in data["bandwidth"]]
                right.plot(bw_sizes, values, marker="o", label=label)
        right.set(xscale="log", xlabel="bytes per rank", ylabel="GB/s", title=f"{name}: bandwidth")
        right.legend(fontsize=8)
        fig.tight_layout()
        file = os.path.join(args.plots, name.replace(" (", "_").replace(")", "").replace(", ", "_").replace(" ", "_") + ".png")
        fig.savefig(file, dpi=110)
        plt.close(fig)
        written.append(file)
    for hd, predicted, label, loaded, extrapolated in hds:
        fig, axes = plt.subplots(1, 3, figsize=(14, 4), sharey=False)
        for ax, variant in zip(axes, ("hd", "overlap", "nooverlap")):
            rows = [r for r in hd["results"] if r["variant"] == variant]
            widths = [r["width"] for r in rows]
            ax.plot(widths, [r["grma_us"] for r in rows], marker="o", label="grma")
            if any(r.get("baseline_us") for r in rows):
                ax.plot(widths, [r["baseline_us"] for r in rows], marker="s", label="kernel-boundary baseline")
            modelled = [w for w in widths if (w, variant) not in extrapolated]  # within the fitted sizes
            if predicted and modelled:
                ax.plot(modelled, [predicted[(w, variant)] for w in modelled], linestyle="--", marker="x", color="gray",
                        label="model (ping-pong latency)")
            if loaded and modelled:
                ax.plot(modelled, [loaded[(w, variant)] for w in modelled], linestyle=":", marker="x", color="black",
                        label="model (halo exchange under load)")
            ax.set(xscale="log", yscale="log", xlabel="grid width", ylabel="us per iteration",
                   title=f"{variant.upper() if variant == 'hd' else 'HD-' + variant.upper()} ({label})")
            ax.legend(fontsize=8)
        fig.tight_layout()
        file = os.path.join(args.plots, f"hd_{label.replace(' ', '_')}.png")
        fig.savefig(file, dpi=110)
        plt.close(fig)
        written.append(file)
    print("plots:", " ".join(written))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", action="append", default=[], metavar="FILE",
                        help="grma-bench's JSON; of several, the first to measure a path gives it")
    parser.add_argument("--hd", action="append", default=[], metavar="FILE[:LABEL]")
    parser.add_argument("--halo", action="append", default=[], metavar="FILE",
                        help="grma-bench JSON with a halo exchange of as many ranks as an --hd run")
    parser.add_argument("--plots", metavar="DIR")
    args = parser.parse_args()
    paths = paths_from(args)
    if not paths:
        parser.error("give at least one grma-bench JSON (--bench)")
    print_table(paths)
    halos = [load(f) for f in args.bench + args.halo]
    hds = []
    for spec in args.hd:
        file, _, label = spec.partition(":")
        hd = load(file)
        label = label or f"{hd['devices']} device{'s' if hd['devices'] > 1 else ''}"
        predicted, about = predict(hd, paths)
        segments = halo_segments(halos, hd["ranks"], hd["backend"])
        loaded = predict(hd, paths, segments)[0] if segments and predicted else None
        if predicted is None:
            print(f"{file}: no model (needs the compute variant and the path's benchmark)", file=sys.stderr)
        else:
            print_hd(hd, predicted, about, label, loaded)
        hds.append((hd, predicted, label, loaded, about["extrapolated"] if about else set()))
    if args.plots:
        plots(args, paths, hds)


if __name__ == "__main__":
    main()

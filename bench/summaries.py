#!/usr/bin/env python3
"""The floor and scale summaries of scripts/bench-compare.sh, from `zk-rwlock-bench` JSON lines.

  python3 bench/summaries.py floors FILE   # medians per (workload, clients), lock / floor ratios
  python3 bench/summaries.py scale FILE    # herd per hand-off time by waiters, and their ratio
  python3 bench/summaries.py memory FILE   # bytes per idle lock handle and per queued waiter

Rows with a "latency_us" (measured through bench/peers/run.sh's delay proxy) or an "ensemble" > 1
(measured on an ensemble of that many servers; absent means 1) are grouped apart from the loopback
rows and from each other, and named with the round trip they add ("@1ms" for 500) or the ensemble
("ens3"); a ratio is only taken between rows of one group.
Standard library only.
"""
import json
import statistics
import sys

from report import at, ensemble, latency_us


def grouped(path, key):
    """The JSON rows of `path` (lines starting with "{"), grouped by key(row), in file order."""
    by = {}
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                r = json.loads(line)
                by.setdefault(key(r), []).append(r)
    return by


def median(rs, field):
    return statistics.median(r[field] for r in rs)


def floors(path):
    by = grouped(path, lambda r: (r["workload"], r["clients"], latency_us(r), ensemble(r)))
    for (w, c, lat, ens), rs in by.items():
        name = w + at(lat, ens)
        print(f"  {name:<22} {c:>2} client(s) {median(rs, 'grants_per_s'):8.0f} per s   p50 {median(rs, 'p50_ms'):.3f} ms")
    for lat, ens in dict.fromkeys((lat, ens) for (_w, _c, lat, ens) in by):
        for w, c in (("uncontended_write", 1), ("contended_write", 2)):
            floor = by.get(("floor_cycle", c, lat, ens))
            if (w, c, lat, ens) in by and floor:
                ratio = median(by[(w, c, lat, ens)], "grants_per_s") / median(floor, "grants_per_s")
                print(f"  {w} ({c}){at(lat, ens)} / floor_cycle ({c}){at(lat, ens)}: {ratio:.2f}")


def scale(path):
    by = grouped(path, lambda r: (latency_us(r), ensemble(r), r["clients"]))
    med = {}
    for (lat, ens, n), rs in sorted(by.items()):
        per = [1e3 * r["secs"] / r["grants"] for r in rs]
        med[(lat, ens, n)] = statistics.median(per)
        rss = max(r["max_rss_kb"] for r in rs) / 1024
        relisted = sum(r["relisted_wakeups"] for r in rs)
        print(f"  {n:>5} waiters{at(lat, ens)}: {med[(lat, ens, n)]:.3f} ms per hand-off (rounds: "
              + ", ".join(f"{x:.3f}" for x in per)
              + f"), p50 {median(rs, 'p50_ms'):.3f} ms, client RSS {rss:.0f} MB, re-listed wake-ups {relisted}")
    for lat, ens in sorted({(lat, ens) for (lat, ens, _n) in med}):
        counts = [n for (l, e, n) in med if (l, e) == (lat, ens)]
        small, big = min(counts), max(counts)
        print(f"  per hand-off{at(lat, ens)}, {big} / {small} waiters: "
              f"{med[(lat, ens, big)] / med[(lat, ens, small)]:.2f}x")


def memory(path):
    by = grouped(path, lambda r: (r["workload"], r["clients"], latency_us(r), ensemble(r)))
    what = {"memory_handles": "idle lock handles", "memory_waiters": "waiters on one lock"}
    for (w, c, lat, ens), rs in by.items():
        each = [r["bytes_each"] for r in rs]
        name = what.get(w, w) + at(lat, ens)
        print(f"  {c:>6} {name:<20} {statistics.median(each):7.0f} bytes each (rounds: "
              + ", ".join(f"{x:.0f}" for x in each) + f"), errors {sum(r['errors'] for r in rs)}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("floors", "scale", "memory"):
        sys.exit(__doc__)
    {"floors": floors, "scale": scale, "memory": memory}[sys.argv[1]](sys.argv[2])

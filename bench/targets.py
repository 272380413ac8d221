#!/usr/bin/env python3
"""Checks every target of the comparison, run by run, from run.sh JSONL files.

  python3 bench/targets.py bench/peers/results/run-A.jsonl [run-B.jsonl ...]

One column per file (run), one line per target, each cell the measured ratio and
"ok" or "MISS". Ratios are taken within one run: zk-rwlock ("rust") against Curator,
or against the better of Curator and kazoo for herd_release. Exit status 1 if any
target is missed in any run. Standard library only.

The targets (docs/benchmarks.md):
  uncontended_{write,read,mutex}           grants/s >= 1.25 x Curator
  contended_{write,mutex}, mixed_90r10w    grants/s >= 1.5 x Curator
  semaphore                                grants/s >= 2.0 x Curator's InterProcessSemaphoreV2
                                           (16 clients, 4 permits), with fewer requests per grant
                                           (the every-row target below) and 0 violations (never
                                           more than 4 holders at once)
  entity_locks                             grants/s >= 1.5 x Curator and >= 0.85 x its floor
                                           (the entity_floor row of the same run), p99 <= 0.5 x
                                           Curator's
  herd_release                             total and hand-off p50 <= 0.5 x the better peer
  (the *_hold1ms safety rows have no throughput target)
  contended_write(8) @1ms                  grants/s >= 2.0 x Curator and acquire p50 <= 0.55 x
                                           Curator's (through run.sh's delay proxy, LATENCY_US=500)
  every row                                violations 0, ZooKeeper requests per grant <= Curator's,
                                           client CPU per grant <= 0.25 x Curator's
The others' rows are the loopback rows (latency_us absent or 0). A row measured through the
delay proxy (latency_us > 0, named by its round trip: "@1ms" for 500) is a row of its own,
compared with Curator's row at the same latency; it has the LATENCY_TARGETS that name its
latency and the every-row targets, no others. The contended rows' p50 is the acquire latency
(call -> grant, latency_kind "acquire": for 8 clients mostly the wait in the queue); they carry no
hand-off figure of their own, unlike herd_release, whose p50 is the hand-off.
Client CPU is window_cpu_s: the process's CPU, all threads, from the clock's start to the run's
end (a JVM's start-up and the connections' set-up are not in it).
"""
import sys

from report import at, load

PEERS = ("curator", "kazoo")
# grants/s / Curator's of the loopback rows, where not the default (1.25 uncontended, 1.5 others).
THROUGHPUT = {"semaphore": 2.0}
# Rows of zk-rwlock-bench that are floors, not locks: no targets of their own.
FLOORS = {"entity_locks": "entity_floor"}
# The targets of rows measured with network latency: (latency_us, workload, clients) ->
# (field, its name, ">=" or "<=", bound) for zk-rwlock's field / Curator's in the same run.
LATENCY_TARGETS = {
    (500, "contended_write", 8): (
        ("grants_per_s", "grants/s", ">=", 2.0),
        ("p50_ms", "acquire p50", "<=", 0.55),
    ),
}


def per_grant(r, key):
    if not r or not r.get("grants") or r.get(key) is None:
        return None
    return r[key] / r["grants"]


def checks(run):
    """Yields (target, ratio, ok) for one run."""
    for (w, c, lat, impl), r in sorted(run.items()):
        if impl != "rust" or w in FLOORS.values():
            continue
        cur = run.get((w, c, lat, "curator"))
        row = f"{w}({c}){at(lat)}"
        if lat:
            for field, name, op, bound in LATENCY_TARGETS.get((lat, w, c), ()):
                target = f"{row} {name} / Curator {op} {bound}"
                if cur and cur.get(field) and r.get(field) is not None:
                    ratio = r[field] / cur[field]
                    yield target, ratio, ratio >= bound if op == ">=" else ratio <= bound
                else:
                    yield f"{target} (no Curator row)", float("nan"), False
        elif w == "herd_release":
            peers = [run.get((w, c, lat, p)) for p in PEERS]
            peers = [p for p in peers if p and p.get("secs")]
            if peers and r.get("secs"):
                best = min(p["secs"] for p in peers)
                yield f"{row} total / better peer <= 0.5", r["secs"] / best, r["secs"] / best <= 0.5
                best_p50 = min(p["p50_ms"] for p in peers)
                yield f"{row} p50 / better peer <= 0.5", r["p50_ms"] / best_p50, r["p50_ms"] / best_p50 <= 0.5
        elif cur and cur.get("grants_per_s") and "_hold" not in w:
            floor = THROUGHPUT.get(w, 1.25 if w.startswith("uncontended") else 1.5)
            ratio = r["grants_per_s"] / cur["grants_per_s"]
            yield f"{row} grants/s / Curator >= {floor}", ratio, ratio >= floor
        if w in FLOORS and not lat:
            fl = run.get((FLOORS[w], c, lat, "rust"))
            if fl and fl.get("grants_per_s"):
                ratio = r["grants_per_s"] / fl["grants_per_s"]
                yield f"{row} grants/s / {FLOORS[w]} >= 0.85", ratio, ratio >= 0.85
            else:
                yield f"{row} grants/s / {FLOORS[w]} >= 0.85 (no floor row)", float("nan"), False
            if cur and cur.get("p99_ms") and r.get("p99_ms") is not None:
                ratio = r["p99_ms"] / cur["p99_ms"]
                yield f"{row} p99 / Curator <= 0.5", ratio, ratio <= 0.5
        yield f"{row} violations == 0", r.get("violations", 0), r.get("violations", 0) == 0
        rx, rx_cur = per_grant(r, "zk_rx"), per_grant(cur, "zk_rx")
        if rx is not None and rx_cur:
            yield f"{row} requests/grant / Curator <= 1", rx / rx_cur, rx <= rx_cur
        cpu, cpu_cur = per_grant(r, "window_cpu_s"), per_grant(cur, "window_cpu_s")
        if cpu is not None and cpu_cur:
            yield f"{row} CPU/grant / Curator <= 0.25", cpu / cpu_cur, cpu / cpu_cur <= 0.25


def main(paths):
    results = [dict((t, (v, ok)) for t, v, ok in checks(load(p))) for p in paths]
    targets = []
    for res in results:
        targets += [t for t in res if t not in targets]
    width = max(len(t) for t in targets) if targets else 10
    print(f"{'target':<{width}}  " + "  ".join(f"run {i + 1:<10}" for i in range(len(paths))))
    missed = 0
    for t in targets:
        cells = []
        for res in results:
            if t not in res:
                cells.append(f"{'-':<14}")
                continue
            v, ok = res[t]
            missed += not ok
            cells.append(f"{v:<8.2f}{'ok' if ok else 'MISS':<6}")
        print(f"{t:<{width}}  " + "  ".join(cells))
    print()
    print(f"{missed} miss(es) over {len(paths)} run(s)")
    return 1 if missed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))

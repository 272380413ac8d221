#!/usr/bin/env python3
"""Markdown comparison of zk-rwlock ("rust") with Curator and kazoo from run.sh JSONL files.

  python3 bench/report.py bench/peers/results/run-A.jsonl [run-B.jsonl ...]

For every (workload, clients, latency_us, ensemble): the median over the files of grants/s per
implementation, zk-rwlock's ratio to Curator, p99, ZooKeeper requests per grant (zk_rx / (grants +
warmup)) and client CPU per grant (window_cpu_s / grants: the process's CPU from the clock's start
to the run's end), with the per-file ratios in brackets so that the spread is visible. The floor
rows that run.sh got from bench/floor-impl.sh (entity_floor, contended_floor) are zk-rwlock-bench
rows without peers; after the table, each lock row with a floor row in the same run gets its ratio
to it. Ratios are taken within one file (one run), then the median is reported.
Rows measured through run.sh's delay proxy (LATENCY_US, the row's "latency_us") are rows of their
own, named with the round trip they add: latency_us 500 is "contended_write @1ms". So are the rows
measured on an ensemble (run.sh's ENSEMBLE, the row's "ensemble"; absent means 1, one server):
ensemble 3 is "contended_write ens3", compared with Curator's row on the same ensemble. A file may
hold the loopback, latency and ensemble passes of one run (scripts/bench-compare.sh joins them).
After the table, for the semaphore rows (rows with "permits"): the most holders each implementation
saw at once, run by run.
Standard library only.
"""
import json
import statistics
import sys

IMPLS = ["rust", "curator", "kazoo"]
NAMES = {"rust": "zk-rwlock", "curator": "Curator", "kazoo": "kazoo"}
# Lock workloads and their floors: zk-rwlock-bench rows of impl "rust" (bench/floor-impl.sh), the
# same work without the lock logic, measured in the same run, in the rotation with the locks.
FLOORS = {"entity_locks": "entity_floor", "contended_write": "contended_floor"}


def latency_us(r):
    """The one-way latency a row was measured with (run.sh's LATENCY_US; 0 = loopback)."""
    return r.get("latency_us") or 0


def ensemble(r):
    """The number of ZooKeeper servers a row was measured on (run.sh's ENSEMBLE; absent = 1)."""
    return r.get("ensemble") or 1


def at(lat, ens=1):
    """The suffix naming a row by how it reached ZooKeeper: "" for one server on loopback,
    " @1ms" for 500 us each way through the delay proxy, " ens3" for an ensemble of 3."""
    return (f" @{2 * lat / 1000:g}ms" if lat else "") + (f" ens{ens}" if ens > 1 else "")


def load(path):
    """The rows of one run.sh JSONL file, by (workload, clients, latency_us, ensemble, impl)."""
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                rows[(r["workload"], r["clients"], latency_us(r), ensemble(r), r["impl"])] = r
    return rows


def per_grant(r, key, warmup):
    if r is None or key not in r or not r.get("grants"):
        return None
    extra = warmup if key == "zk_rx" else 0
    return r[key] / (r["grants"] + extra)


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, nd=0, suffix=""):
    if v is None:
        return "-"
    return f"{v:.{nd}f}{suffix}"


def main(paths):
    runs = [load(p) for p in paths]
    keys = []
    for run in runs:
        for (w, c, lat, ens, _i) in run:
            if (w, c, lat, ens) not in keys:
                keys.append((w, c, lat, ens))
    print(f"Medians of {len(runs)} run(s). Ratios are zk-rwlock / Curator within a run; brackets: each run.")
    print()
    print("| workload | clients | zk-rwlock grants/s | Curator | kazoo | ÷ Curator | zk-rwlock p50 ms | Curator p50 | kazoo p50 "
          "| zk-rwlock p99 ms | Curator p99 | requests/grant (zk-rwlock, Curator) | CPU ms/grant (zk-rwlock, Curator) "
          "| violations |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|---:|")
    for (w, c, lat, ens) in keys:
        got = {i: [run.get((w, c, lat, ens, i)) for run in runs] for i in IMPLS}
        gps = {i: med([r and r.get("grants_per_s") for r in got[i]]) for i in IMPLS}
        p50 = {i: med([r and r.get("p50_ms") for r in got[i]]) for i in IMPLS}
        p99 = {i: med([r and r.get("p99_ms") for r in got[i]]) for i in IMPLS}
        ratios = []
        for rr, rc in zip(got["rust"], got["curator"]):
            if w == "herd_release":
                # lower is better: total time of the hand-off chain
                ratios.append(rr["secs"] / rc["secs"] if rr and rc and rr.get("secs") is not None and rc.get("secs") else None)
            else:
                ratios.append(rr["grants_per_s"] / rc["grants_per_s"]
                              if rr and rc and rr.get("grants_per_s") is not None and rc.get("grants_per_s") else None)
        warm = 200 if w.startswith(("uncontended", "entity_")) else 0
        rx = [med([per_grant(r, "zk_rx", warm) for r in got[i]]) for i in ("rust", "curator")]
        cpu = [med([per_grant(r, "window_cpu_s", 0) for r in got[i]]) for i in ("rust", "curator")]
        viol = sum((r or {}).get("violations", 0) for i in IMPLS for r in got[i] if r and i == "rust")
        spread = ", ".join(fmt(x, 2) for x in ratios)
        label = "time ÷ Curator" if w == "herd_release" else ""
        print(f"| {w}{at(lat, ens)} | {c} | {fmt(gps['rust'])} | {fmt(gps['curator'])} | {fmt(gps['kazoo'])} "
              f"| {fmt(med(ratios), 2)} {label}({spread}) | {fmt(p50['rust'], 2)} | {fmt(p50['curator'], 2)} "
              f"| {fmt(p50['kazoo'], 2)} | {fmt(p99['rust'], 2)} | {fmt(p99['curator'], 2)} "
              f"| {fmt(rx[0], 2)}, {fmt(rx[1], 2)} "
              f"| {fmt(cpu[0] and cpu[0] * 1000, 3)}, {fmt(cpu[1] and cpu[1] * 1000, 3)} | {viol} |")
    for (w, c, lat, ens) in keys:
        if w not in FLOORS:
            continue
        floor = FLOORS[w]
        pairs = [(run.get((w, c, lat, ens, "rust")), run.get((floor, c, lat, ens, "rust"))) for run in runs]
        ratios = [lk["grants_per_s"] / fl["grants_per_s"] for lk, fl in pairs
                  if lk and fl and lk.get("grants_per_s") and fl.get("grants_per_s")]
        if ratios:
            who = "workers" if w == "entity_locks" else "clients"
            warm = 200 if w.startswith(("uncontended", "entity_")) else 0
            print()
            print(f"{w}{at(lat, ens)} ({c} {who}) / its floor {floor}, same run: {fmt(med(ratios), 2)} "
                  f"({', '.join(fmt(x, 2) for x in ratios)})")
            # Where the time goes: the server's CPU (zk_cpu_s, the whole process's time, warm-up
            # included) and requests per grant, the lock against its floor.
            for label, i in ((w, 0), (floor, 1)):
                rows = [pair[i] for pair in pairs if pair[i] and pair[i].get("grants")]
                srv = med([r["zk_cpu_s"] / r["grants"] * 1000 for r in rows if "zk_cpu_s" in r])
                per_req = med([r["zk_cpu_s"] / r["zk_rx"] * 1e6 for r in rows if r.get("zk_rx")])
                rx = med([per_grant(r, "zk_rx", warm) for r in rows])
                print(f"  {label}: server CPU {fmt(srv, 3)} ms per grant, {fmt(per_req, 0)} us per request, "
                      f"{fmt(rx, 2)} requests per grant")
    semaphore_holders(runs, keys)


def semaphore_holders(runs, keys):
    """The most permit holders seen at once, per semaphore row and implementation, run by run."""
    for (w, c, lat, ens) in keys:
        got = {i: [run.get((w, c, lat, ens, i)) for run in runs] for i in IMPLS}
        permits = {r["permits"] for i in IMPLS for r in got[i] if r and r.get("permits") is not None}
        if not permits:
            continue
        cells = []
        for i in IMPLS:
            seen = [str(r["max_holders"]) for r in got[i] if r and r.get("max_holders") is not None]
            if seen:
                cells.append(f"{NAMES[i]} {', '.join(seen)}")
        n = "/".join(str(p) for p in sorted(permits))
        print()
        print(f"{w}{at(lat, ens)} ({c} clients, {n} permits): most holders at once: {'; '.join(cells)}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])

#!/usr/bin/env python3
"""Checks every target of the comparison, run by run, from run.sh JSONL files.

  python3 bench/targets.py bench/peers/results/run-A.jsonl [run-B.jsonl ...]

One column per file (run), one line per target, each cell the measured ratio and
"ok" or "MISS". Ratios are taken within one run: zk-rwlock ("rust") against Curator,
against the better of Curator and kazoo for herd_release on loopback, or against its floor (a
zk-rwlock-bench row of the same run doing the same work without the lock logic,
bench/floor-impl.sh). Exit status 1 if any target is missed in any run. Standard library only.

A row is a (workload, clients, latency_us, ensemble): the loopback rows (one server, latency_us
absent or 0, ensemble absent or 1), the rows measured through run.sh's delay proxy (latency_us > 0,
named by their round trip: "@1ms" for 500) and the rows measured on an ensemble (ensemble > 1,
"ens3" for 3) are rows of their own, each compared with Curator's row of the same latency and
ensemble, never with another pass's. The targets:

  every row (loopback, latency, ensemble, and the *_hold1ms safety rows)
                                           violations 0; ZooKeeper requests per grant (zk_rx /
                                           grants) <= 1.01 x Curator's; client CPU per grant
                                           (window_cpu_s / grants) <= 0.2 x Curator's
  loopback
    uncontended_{write,read,mutex}         grants/s >= 1.5 x Curator
    contended_write(8), contended_write(32),
    contended_mutex, mixed_90r10w          grants/s >= 2.0 x Curator
    contended_write(2)                     grants/s >= 0.9 x its floor (contended_floor, 2 clients)
    entity_locks                           grants/s >= 2.5 x Curator and >= 0.8 x its floor
                                           (entity_floor, same workers); p99 <= 0.5 x Curator's
    semaphore                              grants/s >= 2.0 x Curator's InterProcessSemaphoreV2
                                           (16 clients, 4 permits; violations 0 = never more than
                                           4 holders at once)
    herd_release                           total and hand-off p50 <= 0.5 x the better peer
    (other client counts of contended_write and the *_hold1ms rows: the every-row targets only)
  at a 1 ms round trip (latency_us 500)
    contended_write(8)                     grants/s >= 2.0 x Curator
    herd_release                           hand-off p50 <= 0.5 x Curator's
    (the other latency rows: the every-row targets only)
  on an ensemble (ensemble > 1)
    contended_write (any clients),
    contended_mutex, mixed_90r10w          grants/s >= 2.0 x Curator on the same ensemble
    (the other ensemble rows: the every-row targets only)
  the floors (entity_floor, contended_floor) have no targets of their own.

A target that cannot be checked is a MISS that says why, in its name: "(no Curator row)",
"(no peer row)", "(no floor row)", "(no zk-rwlock row)" (Curator or kazoo measured the row, zk-rwlock
did not), "(no row)" (a row a target names, e.g. contended_write(8), is absent from a pass that ran
its workload), or "(no <figure> in ... row)" (a failed run: e.g. an error row without grants).
The contended rows' p50 is the acquire latency (call -> grant, latency_kind "acquire"); herd_release's
p50 is the hand-off (previous holder's release call -> this grant, latency_kind "handoff").
Client CPU is window_cpu_s: the process's CPU, all threads, from the clock's start to the run's
end (a JVM's start-up and the connections' set-up are not in it).
"""
import sys

from report import FLOORS, at, load

LOCKS = ("rust", "curator", "kazoo")
CURATOR = "curator"
PEERS = ("curator", "kazoo")
LOOPBACK, ENSEMBLE = "loopback", "ensemble"
GRANTS = ("grants_per_s", "grants/s", ">=")
# (pass: LOOPBACK, ENSEMBLE or a latency_us; workload; clients, None = any; (field, its name, ">="
# or "<="); bound; against: CURATOR, PEERS (the better one) or a floor workload of impl "rust").
TARGETS = (
    (LOOPBACK, "uncontended_write", None, GRANTS, 1.5, CURATOR),
    (LOOPBACK, "uncontended_read", None, GRANTS, 1.5, CURATOR),
    (LOOPBACK, "uncontended_mutex", None, GRANTS, 1.5, CURATOR),
    (LOOPBACK, "contended_write", 2, GRANTS, 0.9, FLOORS["contended_write"]),
    (LOOPBACK, "contended_write", 8, GRANTS, 2.0, CURATOR),
    (LOOPBACK, "contended_write", 32, GRANTS, 2.0, CURATOR),
    (LOOPBACK, "contended_mutex", None, GRANTS, 2.0, CURATOR),
    (LOOPBACK, "mixed_90r10w", None, GRANTS, 2.0, CURATOR),
    (LOOPBACK, "entity_locks", None, GRANTS, 2.5, CURATOR),
    (LOOPBACK, "entity_locks", None, GRANTS, 0.8, FLOORS["entity_locks"]),
    (LOOPBACK, "entity_locks", None, ("p99_ms", "p99", "<="), 0.5, CURATOR),
    (LOOPBACK, "semaphore", None, GRANTS, 2.0, CURATOR),
    (LOOPBACK, "herd_release", None, ("secs", "total", "<="), 0.5, PEERS),
    (LOOPBACK, "herd_release", None, ("p50_ms", "hand-off p50", "<="), 0.5, PEERS),
    (500, "contended_write", 8, GRANTS, 2.0, CURATOR),
    (500, "herd_release", None, ("p50_ms", "hand-off p50", "<="), 0.5, CURATOR),
    (ENSEMBLE, "contended_write", None, GRANTS, 2.0, CURATOR),
    (ENSEMBLE, "contended_mutex", None, GRANTS, 2.0, CURATOR),
    (ENSEMBLE, "mixed_90r10w", None, GRANTS, 2.0, CURATOR),
)
# Every row's, after violations == 0: (field per grant, its name, op, bound) against Curator's.
EVERY_ROW = (
    ("zk_rx", "requests/grant", "<=", 1.01),
    ("window_cpu_s", "CPU/grant", "<=", 0.2),
)


def pass_of(lat, ens):
    return ENSEMBLE if ens > 1 else lat if lat else LOOPBACK


def value(r, field, per_grant=False):
    """A row's figure (per grant if asked), None if the row or the figure is missing."""
    if r is None or r.get(field) is None:
        return None
    if per_grant:
        return r[field] / r["grants"] if r.get("grants") else None
    return r[field]


def compare(row, r, refs, who, missing, field, name, op, bound, per_grant=False):
    """(target, ratio, ok) of zk-rwlock's row r against refs, the rows of `who` (the best of them
    if several); `missing` names them when none is there."""
    target = f"{row} {name} / {who} {op} {bound}"
    refs = [x for x in refs if x is not None]
    if not refs:
        return f"{target} (no {missing} row)", float("nan"), False
    mine = value(r, field, per_grant)
    if mine is None:
        return f"{target} (no {name} in zk-rwlock's row)", float("nan"), False
    theirs = [v for v in (value(x, field, per_grant) for x in refs) if v]
    if not theirs:
        return f"{target} (no {name} in the {missing} row)", float("nan"), False
    best = min(theirs) if op == "<=" else max(theirs)
    ratio = mine / best
    return target, ratio, ratio <= bound if op == "<=" else ratio >= bound


def checks(run):
    """Yields (target, ratio, ok) for one run."""
    floors = set(FLOORS.values())
    keys = {(w, c, lat, ens) for (w, c, lat, ens, impl) in run if impl in LOCKS and w not in floors}
    # A row a target names (by its clients) is expected in every pass that ran its workload.
    for (lat, ens) in {(lat, ens) for (_w, _c, lat, ens) in keys}:
        ran = {w for (w, _c, l, e) in keys if (l, e) == (lat, ens)}
        for (kind, w, c, *_rest) in TARGETS:
            if c is not None and kind == pass_of(lat, ens) and w in ran:
                keys.add((w, c, lat, ens))
    for (w, c, lat, ens) in sorted(keys):
        row = f"{w}({c}){at(lat, ens)}"
        r = run.get((w, c, lat, ens, "rust"))
        if r is None:
            others = any((w, c, lat, ens, i) in run for i in LOCKS)
            yield f"{row} ({'no zk-rwlock row' if others else 'no row'})", float("nan"), False
            continue
        cur = run.get((w, c, lat, ens, CURATOR))
        for (kind, tw, tc, (field, name, op), bound, against) in TARGETS:
            if kind != pass_of(lat, ens) or tw != w or tc not in (None, c):
                continue
            if against == CURATOR:
                yield compare(row, r, [cur], "Curator", "Curator", field, name, op, bound)
            elif against == PEERS:
                peers = [run.get((w, c, lat, ens, p)) for p in PEERS]
                yield compare(row, r, peers, "better peer", "peer", field, name, op, bound)
            else:
                fl = run.get((against, c, lat, ens, "rust"))
                yield compare(row, r, [fl], against, "floor", field, name, op, bound)
        v = r.get("violations")
        if v is None:
            yield f"{row} violations == 0 (no violations in zk-rwlock's row)", float("nan"), False
        else:
            yield f"{row} violations == 0", v, v == 0
        for field, name, op, bound in EVERY_ROW:
            yield compare(row, r, [cur], "Curator", "Curator", field, name, op, bound, per_grant=True)


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

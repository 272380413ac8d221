"""kazoo contenders for tests/interop.rs.

    python contender.py CONNECT PATH LOG ROUNDS HOLD_MS KIND...
        One thread and one KazooClient per KIND (read: ReadLock, write:
        WriteLock, lock: Lock; read+native and write+native: the same with
        extra_lock_patterns that recognise zk-rwlock's native nodes), each
        taking its lock ROUNDS times and holding it HOLD_MS. Appends
        "A <R|W> <name>" to LOG when it holds, "R <R|W> <name>" before it
        releases (one write each, to a file opened for appending).
    python contender.py CONNECT PATH probe-reader-then-lock
        Takes a ReadLock, then tries a Lock for 2 s on the same path;
        prints "lock granted: True|False".
"""
import os
import random
import sys
import threading
import time

from kazoo.client import KazooClient

# What kazoo needs to see zk-rwlock's native nodes (`<host>-R-<seq>`, `<host>-W-<seq>`).
NATIVE = {"read+native": ["-W-"], "write+native": ["-W-", "-R-"]}


def client(connect):
    zk = KazooClient(hosts=connect, timeout=10.0)
    zk.start(timeout=30)
    return zk


def append(log, line):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def run(connect, path, log, rounds, hold, kind, name, errors):
    try:
        zk = client(connect)
        base = kind.split("+")[0]
        make = {"read": zk.ReadLock, "write": zk.WriteLock, "lock": zk.Lock}[base]
        lock = make(path, name, extra_lock_patterns=NATIVE.get(kind, ()))
        mode = "R" if base == "read" else "W"
        for _ in range(rounds):
            if not lock.acquire(timeout=60):
                raise RuntimeError(name + ": not granted within 60 s")
            append(log, "A %s %s" % (mode, name))
            time.sleep(hold / 1000.0)
            append(log, "R %s %s" % (mode, name))
            lock.release()
            time.sleep(random.random() * hold / 1000.0)
        zk.stop()
        zk.close()
    except Exception as e:  # reported by the main thread
        errors.append(e)


def main():
    connect, path = sys.argv[1], sys.argv[2]
    if sys.argv[3] == "probe-reader-then-lock":
        zk = client(connect)
        reader = zk.ReadLock(path, "probe-reader")
        reader.acquire()
        lock = zk.Lock(path, "probe-lock")
        granted = lock.acquire(timeout=2)
        print("lock granted: %s" % granted)
        if granted:
            lock.release()
        reader.release()
        zk.stop()
        return
    log, rounds, hold = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    errors = []
    threads = []
    for i, kind in enumerate(sys.argv[6:]):
        name = "kazoo-%s-%d" % (kind, i)
        t = threading.Thread(target=run, args=(connect, path, log, rounds, hold, kind, name, errors))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


if __name__ == "__main__":
    main()

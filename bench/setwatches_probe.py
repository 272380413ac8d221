#!/usr/bin/env python3
"""What ZooKeeper does with a SetWatches request (op 101) sent in the middle of a session.

  python3 bench/setwatches_probe.py PORT     (a running server on 127.0.0.1:PORT)

Speaks the wire protocol directly (standard library only). Two sessions: A watches, B acts.
Each check prints ok/FAIL with what was seen.
"""
import socket
import struct
import sys
import time

NOTIFY, PING, SETW = -1, -2, -8
CREATED, DELETED, CHANGED, CHILD = 1, 2, 3, 4
EPHEMERAL = 1
OPEN = [(31, "world", "anyone")]


def ustr(s):
    b = s.encode()
    return struct.pack(">i", len(b)) + b


def buf(b):
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def strs(xs):
    return struct.pack(">i", len(xs)) + b"".join(ustr(x) for x in xs)


def acl(entries):
    return struct.pack(">i", len(entries)) + b"".join(
        struct.pack(">i", p) + ustr(s) + ustr(i) for p, s, i in entries)


class Session:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.xid = 0
        self.events = []
        body = struct.pack(">iqiq", 0, 0, 10000, 0) + buf(b"\0" * 16) + b"\0"
        self.send_raw(body)
        self.recv_frame()

    def send_raw(self, body):
        self.s.sendall(struct.pack(">i", len(body)) + body)

    def recv_frame(self):
        n = struct.unpack(">i", self.read(4))[0]
        return self.read(n)

    def read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def call(self, op, body, xid=None):
        if xid is None:
            self.xid += 1
            xid = self.xid
        self.send_raw(struct.pack(">ii", xid, op) + body)
        while True:
            frame = self.recv_frame()
            rxid, zxid, err = struct.unpack(">iqi", frame[:16])
            if rxid == NOTIFY:
                self.note(frame[16:])
                continue
            if rxid == xid:
                return zxid, err, frame[16:]

    def note(self, body):
        typ, _state, n = struct.unpack(">iii", body[:12])
        self.events.append((typ, body[12:12 + n].decode()))

    def drain(self, secs=0.3):
        """Notifications that arrive within secs (none expected later: they are sent at once)."""
        self.s.settimeout(secs)
        try:
            while True:
                frame = self.recv_frame()
                if struct.unpack(">i", frame[:4])[0] == NOTIFY:
                    self.note(frame[16:])
        except (socket.timeout, TimeoutError):
            pass
        finally:
            self.s.settimeout(None)
        seen, self.events = self.events, []
        return seen

    def create(self, path, data=b"", flags=EPHEMERAL, entries=OPEN):
        return self.call(1, ustr(path) + buf(data) + acl(entries) + struct.pack(">i", flags))

    def delete(self, path):
        return self.call(2, ustr(path) + struct.pack(">i", -1))

    def set_data(self, path, data):
        return self.call(5, ustr(path) + buf(data) + struct.pack(">i", -1))

    def get_data(self, path, watch):
        return self.call(4, ustr(path) + struct.pack(">?", watch))

    def children(self, path):
        return self.call(8, ustr(path) + b"\0")

    def set_watches(self, rel, data=(), exist=(), child=()):
        return self.call(101, struct.pack(">q", rel) + strs(list(data)) + strs(list(exist)) + strs(list(child)), xid=SETW)

    def add_auth(self, scheme, auth):
        return self.call(100, struct.pack(">i", 0) + ustr(scheme) + buf(auth), xid=-4)


def srvr_received(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"srvr")
    out = b""
    while True:
        c = s.recv(4096)
        if not c:
            break
        out += c
    for line in out.decode().splitlines():
        if line.startswith("Received:"):
            return int(line.split(":")[1])
    return None


failed = 0


def check(name, seen, want):
    global failed
    ok = sorted(seen) == sorted(want)
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: saw {seen}, expected {want}")


def main(port):
    a, b = Session(port), Session(port)
    root = f"/setwatches-probe-{int(time.time() * 1000)}"
    b.create(root, flags=0)
    n1, n2, own, marker = (f"{root}/{x}" for x in ("n1", "n2", "own", "n1.released"))
    b.create(n1)
    b.create(n2)
    a.create(own)

    # 1. One SetWatches sets three watches; each fires when its node changes later.
    zxid, err, _ = a.children(root)
    before = srvr_received(port)
    _, err, _ = a.set_watches(zxid, data=[n1, own], exist=[marker])
    after = srvr_received(port)
    print(f"     SetWatches answered with error {err}; the server counted {after - before - 1} request(s) for it "
          "(the srvr connection itself counts one)")
    check("nothing fires at once when nothing changed", a.drain(), [])
    b.create(marker)
    b.delete(n1)
    check("exist watch: creation; data watch: deletion", a.drain(), [(CREATED, marker), (DELETED, n1)])
    b.set_data(own, b"revoke")
    check("data watch on my own node: a data change", a.drain(), [(CHANGED, own)])

    # 2. What changed between the listing's zxid and the SetWatches fires at once.
    m2 = f"{root}/n2.released"
    zxid, _, _ = a.children(root)
    b.set_data(own, b"again")
    b.create(m2)
    b.delete(n2)
    a.set_watches(zxid, data=[n2, own], exist=[m2])
    check("changes after the relative zxid fire at once", a.drain(),
          [(DELETED, n2), (CHANGED, own), (CREATED, m2)])

    # 3. A data change before the relative zxid does not fire.
    n3 = f"{root}/n3"
    b.create(n3)
    b.set_data(n3, b"old")
    zxid, _, _ = a.children(root)
    a.set_watches(zxid, data=[n3])
    check("a change before the relative zxid does not fire", a.drain(), [])
    b.delete(n3)
    check("... and the watch is set", a.drain(), [(DELETED, n3)])

    # 4. A node this session may not read: getData says NoAuth; does SetWatches set a watch?
    b.add_auth("digest", b"probe:secret")
    secret = f"{root}/secret"
    _, err, _ = b.create(secret, entries=[(31, "auth", "")])
    _, err_read, _ = a.get_data(secret, True)
    print(f"     getData of an unreadable node: error {err_read} (NoAuth is -102)")
    zxid, _, _ = a.children(root)
    a.set_watches(zxid, data=[secret])
    b.delete(secret)
    # SetWatches answers no error for it, and its deletion brings no event: a wait may set
    # watches this way only on nodes it knows it may read.
    check("an unreadable node's watch set by SetWatches is silent", a.drain(), [])

    # 5. A node that does not exist in a data watch fires NodeDeleted at once; an existing
    #    node in an exist watch fires NodeCreated at once.
    zxid, _, _ = a.children(root)
    ghost = f"{root}/ghost"
    a.set_watches(zxid, data=[ghost], exist=[own])
    check("absent in data watches, present in exist watches: fire at once", a.drain(),
          [(DELETED, ghost), (CREATED, own)])

    a.delete(own)
    b.delete(marker)
    b.delete(m2)
    b.delete(root)
    print("all checks passed" if not failed else f"{failed} check(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))

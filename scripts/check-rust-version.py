#!/usr/bin/env python3
"""Checks that the manifest's `rust-version` is true for the locked dependencies:
no package in Cargo.lock (as `cargo metadata --locked` resolves it) asks for a newer Rust."""
import json
import subprocess
import sys


def version(text):
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


meta = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
)
ours = {p["name"]: p for p in meta["packages"] if p["id"] in meta["workspace_members"]}
declared = ours["zk-rwlock"].get("rust_version")
if not declared:
    sys.exit("check-rust-version: zk-rwlock declares no rust-version")
newer = [
    f"{p['name']} {p['version']} needs Rust {p['rust_version']}"
    for p in meta["packages"]
    if p.get("rust_version") and version(p["rust_version"]) > version(declared)
]
if newer:
    sys.exit(f"check-rust-version: rust-version = {declared}, but\n  " + "\n  ".join(newer))
print(f"check-rust-version: every locked dependency builds with Rust {declared}")

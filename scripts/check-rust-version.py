#!/usr/bin/env python3
"""Checks that the `rust-version` of every publishable workspace member is true for the
locked dependencies: no package in Cargo.lock (as `cargo metadata --locked` resolves it,
for every member and platform) asks for a newer Rust than a member that users build."""
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
members = [p for p in meta["packages"] if p["id"] in meta["workspace_members"]]
# `publish = false` reads as an empty list; no `publish` key as null.
publishable = sorted(
    (p for p in members if p.get("publish") is None or p["publish"]), key=lambda p: p["name"]
)
if not publishable:
    sys.exit("check-rust-version: no publishable workspace member found")
failures = []
for member in publishable:
    declared = member.get("rust_version")
    if not declared:
        failures.append(f"{member['name']} declares no rust-version")
        continue
    failures += [
        f"{member['name']} has rust-version = {declared}, but {p['name']} {p['version']} "
        f"needs Rust {p['rust_version']}"
        for p in meta["packages"]
        if p.get("rust_version") and version(p["rust_version"]) > version(declared)
    ]
if failures:
    sys.exit("check-rust-version:\n  " + "\n  ".join(failures))
for member in publishable:
    print(
        f"check-rust-version: {member['name']}: every locked dependency builds with "
        f"Rust {member['rust_version']}"
    )

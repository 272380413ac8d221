//! `zk-rwlock-bench` and the comparison's scripts.
//!
//! * `workloads`: every workload, small, on a throwaway server; its JSON line
//!   checked against the peers' contract (`peers/README.md`).
//! * `secured`: a workload on TLS with credentials and creator-only nodes.
//! * `targets`: `targets.py` and `report.py` on made-up results (no server).

mod secured;
mod targets;
mod workloads;

//! The test kit's throwaway ZooKeeper servers, for real (needs Java and the
//! ZooKeeper 3.8 jars; see `zk_rwlock_testkit::launcher`).
//!
//! * `launcher`: standalone servers and ensembles started, stopped, killed,
//!   restarted, and what a missing piece says.
//! * `partition`: partitions inside an ensemble, through the links between
//!   its members.
//! * `dev_server`: the `zk-dev-server` binary; a session survives its restart
//!   on the same data directory.

mod dev_server;
mod launcher;
mod partition;

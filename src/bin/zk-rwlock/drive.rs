//! How `bench` drives its clients.
//!
//! zookeeper-client does its socket I/O on `async-io`'s reactor, whatever
//! runtime spawns its session tasks. On tokio, every answer from the server
//! therefore crosses threads: the reactor thread wakes, then wakes a tokio
//! worker that runs the session task and the lock. [`Executor::AsyncIo`]
//! runs the session tasks and the benchmark's own tasks on the thread that
//! polls the sockets (`async_io::block_on`), so an answer is handled where
//! it arrives. A tokio runtime stays entered for the lock's timers and its
//! background releases. Both are ways an application can run the library;
//! `--executor` picks one and the output names it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::Runtime;

/// Where the clients' tasks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Executor {
    /// One thread polls the sockets and runs every client task
    AsyncIo,
    /// Tokio's worker threads run the client tasks
    Tokio,
}

impl Executor {
    /// The name printed in the output.
    pub fn name(self) -> &'static str {
        match self {
            Executor::AsyncIo => "async-io",
            Executor::Tokio => "tokio",
        }
    }
}

/// The single-thread executor of [`Executor::AsyncIo`], once it runs.
static LOCAL: OnceLock<Arc<async_executor::Executor<'static>>> = OnceLock::new();

/// Lets zookeeper-client's `spawns` put its session tasks on [`LOCAL`].
struct LocalSpawner(Arc<async_executor::Executor<'static>>);

impl spawns_core::Spawn for LocalSpawner {
    fn spawn(&self, task: spawns_core::Task) {
        self.0.spawn(Box::into_pin(task.future)).detach();
    }
}

/// Runs `fut` to completion on `executor`, inside `runtime`'s context.
pub fn block_on<F>(executor: Executor, runtime: &Runtime, fut: F) -> Result<F::Output, String>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match executor {
        Executor::Tokio => runtime.block_on(async { tokio::spawn(fut).await.map_err(|e| e.to_string()) }),
        Executor::AsyncIo => {
            let _context = runtime.enter();
            let local = LOCAL
                .get_or_init(|| Arc::new(async_executor::Executor::new()))
                .clone();
            let spawner = LocalSpawner(local.clone());
            let _scope = spawns_core::enter(&spawner);
            Ok(async_io::block_on(local.run(fut)))
        }
    }
}

/// Spawns a client task where [`block_on`] runs them.
pub fn spawn<F>(fut: F) -> Task<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match LOCAL.get() {
        Some(local) => Task::Local(local.spawn(fut)),
        None => Task::Tokio(tokio::spawn(fut)),
    }
}

/// A spawned task. Awaiting it gives its output (or why it failed);
/// dropping it cancels the task.
pub enum Task<T> {
    Local(async_executor::Task<T>),
    Tokio(tokio::task::JoinHandle<T>),
}

impl<T> Future for Task<T> {
    type Output = Result<T, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Task::Local(task) => Pin::new(task).poll(cx).map(Ok),
            Task::Tokio(handle) => Pin::new(handle).poll(cx).map(|r| r.map_err(|e| e.to_string())),
        }
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        // A local task is cancelled by dropping it; a tokio one must be told.
        if let Task::Tokio(handle) = self {
            handle.abort();
        }
    }
}

/// Holds a grant for `hold` on a sleeping thread, as the peers do, without
/// stopping the other clients.
pub async fn hold(hold: Duration) {
    if LOCAL.get().is_some() {
        // The one executor thread must keep serving the other clients.
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(hold)).await;
    } else {
        tokio::task::block_in_place(|| std::thread::sleep(hold));
    }
}

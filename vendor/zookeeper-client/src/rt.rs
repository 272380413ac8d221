//! Sockets and timers of the client (patch 7 in PATCHES.md).
//!
//! With feature `tokio`, they run on tokio's I/O driver and timer, so the session needs a tokio
//! runtime with IO and time enabled (`enable_all`). Otherwise, they run on async-io's reactor, as
//! upstream does.

// Each implementation has: `TcpStream` (futures-io's `AsyncRead` and `AsyncWrite`),
// `connect(host, port)`, `into_std(stream)` and `from_std(socket)` (patch 20), `sleep(duration)`,
// `Interval::new(period)` (first tick one period from now, missed ticks in a burst) with `tick()`
// (cancel safe, returns the tick's scheduled instant), and `Alarm::at(instant)` /
// `Alarm::never()` (an `Unpin` future of `()`).
pub use self::imp::{connect, from_std, into_std, sleep, Alarm, Interval, TcpStream};

#[cfg(not(feature = "tokio"))]
mod imp {
    use std::future::Future;
    use std::io::Result;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::{Duration, Instant};

    pub use async_net::TcpStream;
    use async_io::Timer;

    pub async fn connect(host: &str, port: u16) -> Result<TcpStream> {
        TcpStream::connect((host, port)).await
    }

    /// The socket, out of the reactor (patch 20): not done with async-io; the stream is dropped,
    /// and the connection is lost.
    pub fn into_std(_stream: TcpStream) -> Result<std::net::TcpStream> {
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "a socket is not moved between reactors"))
    }

    /// A socket taken out of a reactor, in this one (patch 20).
    pub fn from_std(stream: std::net::TcpStream) -> Result<TcpStream> {
        TcpStream::try_from(stream)
    }

    pub async fn sleep(duration: Duration) {
        Timer::after(duration).await;
    }

    pub struct Interval(Timer);

    impl Interval {
        pub fn new(period: Duration) -> Self {
            Self(Timer::interval(period))
        }

        pub async fn tick(&mut self) -> Instant {
            (&mut self.0).await
        }
    }

    pub struct Alarm(Timer);

    impl Alarm {
        pub fn at(deadline: Instant) -> Self {
            Self(Timer::at(deadline))
        }

        pub fn never() -> Self {
            Self(Timer::never())
        }
    }

    impl Future for Alarm {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            Pin::new(&mut self.get_mut().0).poll(cx).map(|_| ())
        }
    }
}

#[cfg(feature = "tokio")]
mod imp {
    use std::future::Future;
    use std::io::{IoSlice, Result};
    use std::pin::Pin;
    use std::task::{ready, Context, Poll};
    use std::time::{Duration, Instant};

    use futures::io::{AsyncRead, AsyncWrite};
    use tokio::io::{AsyncRead as _, AsyncWrite as _, ReadBuf};

    /// A tokio TCP stream with futures-io's traits, as the connection and TLS use them.
    ///
    /// Not `tokio_util::compat`: its `Compat` does not pass `poll_write_vectored` on, and the
    /// depot writes queued requests with one vectored write.
    #[derive(Debug)]
    pub struct TcpStream(tokio::net::TcpStream);

    pub async fn connect(host: &str, port: u16) -> Result<TcpStream> {
        let stream = tokio::net::TcpStream::connect((host, port)).await?;
        Ok(TcpStream(stream))
    }

    /// The socket, out of the I/O driver of the runtime it was registered with, in non-blocking
    /// mode (patch 20). On failure the stream is gone: the connection is lost.
    pub fn into_std(stream: TcpStream) -> Result<std::net::TcpStream> {
        stream.0.into_std()
    }

    /// A socket taken out of a runtime (`into_std`), in the current runtime's I/O driver.
    pub fn from_std(stream: std::net::TcpStream) -> Result<TcpStream> {
        tokio::net::TcpStream::from_std(stream).map(TcpStream)
    }

    pub async fn sleep(duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    impl AsyncRead for TcpStream {
        fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<Result<usize>> {
            let mut buf = ReadBuf::new(buf);
            ready!(Pin::new(&mut self.get_mut().0).poll_read(cx, &mut buf))?;
            Poll::Ready(Ok(buf.filled().len()))
        }
    }

    impl AsyncWrite for TcpStream {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<Result<usize>> {
            Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
        }

        fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<Result<usize>> {
            Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
            Pin::new(&mut self.get_mut().0).poll_flush(cx)
        }

        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
            Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
        }
    }

    pub struct Interval(tokio::time::Interval);

    impl Interval {
        pub fn new(period: Duration) -> Self {
            // As async-io's: the first tick one period from now (tokio's `interval` ticks at
            // once), missed ticks in a burst (tokio's default). Tokio panics on a zero period; the
            // session's tick is at least 1 ms.
            Self(tokio::time::interval_at(tokio::time::Instant::now() + period, period))
        }

        pub async fn tick(&mut self) -> Instant {
            self.0.tick().await.into_std()
        }
    }

    /// Boxed: `Sleep` is not `Unpin`, async-io's `Timer` is, and the session pins the `Deadline`
    /// that holds one through a plain `&mut`.
    pub struct Alarm(Option<Pin<Box<tokio::time::Sleep>>>);

    impl Alarm {
        pub fn at(deadline: Instant) -> Self {
            Self(Some(Box::pin(tokio::time::sleep_until(deadline.into()))))
        }

        pub fn never() -> Self {
            Self(None)
        }
    }

    impl Future for Alarm {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            match self.get_mut().0.as_mut() {
                None => Poll::Pending,
                Some(sleep) => sleep.as_mut().poll(cx),
            }
        }
    }
}

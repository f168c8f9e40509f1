//! [`Background`]: a local actix-web server on 127.0.0.1 in a thread and
//! actix system of its own, as the bench's sinks run.

use std::{io, net::SocketAddr, sync::mpsc, thread::JoinHandle};

use actix_web::dev::{Server, ServerHandle};
use anyhow::Context;

/// A server started by [`Background::start`].
pub struct Background {
    /// Where it listens.
    pub addr: SocketAddr,
    handle: ServerHandle,
    thread: JoinHandle<io::Result<()>>,
}

impl Background {
    /// Runs `bind` on a new thread `name` inside an actix system: it binds
    /// the server and answers its address and the running server.
    pub fn start<F>(name: &str, bind: F) -> anyhow::Result<Background>
    where
        F: FnOnce() -> io::Result<(SocketAddr, Server)> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                actix_rt::System::new().block_on(async move {
                    let (addr, running) = match bind() {
                        Ok(bound) => bound,
                        Err(e) => {
                            let _ = tx.send(Err(e.to_string()));
                            return Ok(());
                        }
                    };
                    let _ = tx.send(Ok((addr, running.handle())));
                    running.await
                })
            })
            .with_context(|| format!("cannot start the {name} thread"))?;
        let (addr, handle) = rx
            .recv()
            .with_context(|| format!("the {name} thread ended before binding"))?
            .map_err(|e| anyhow::anyhow!("{name} cannot bind 127.0.0.1:0: {e}"))?;
        Ok(Background {
            addr,
            handle,
            thread,
        })
    }

    /// Stops the server without waiting for open requests.
    pub async fn stop(self) {
        self.handle.stop(false).await;
        let _ = tokio::task::spawn_blocking(move || self.thread.join()).await;
    }
}

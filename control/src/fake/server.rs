//! The fake control plane served over real gRPC, for the SDK's and
//! hookctl's tests.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::FakeBackend;

/// The fake served over gRPC on 127.0.0.1 with [`crate::serve`], until
/// [`FakeServer::stop`] or drop.
pub struct FakeServer {
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// The backend behind it.
    pub backend: Arc<FakeBackend>,
    stop: Option<oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Serves `backend` on a free port; must run inside a tokio runtime.
    pub async fn start(backend: Arc<FakeBackend>) -> FakeServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let endpoint = format!("http://{}", listener.local_addr().expect("local address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = Arc::clone(&backend);
        let served = tokio::spawn(async move {
            crate::serve(listener, serving, None, async {
                let _ = stopped.await;
            })
            .await
            .expect("the fake control plane serves");
        });
        FakeServer {
            endpoint,
            backend,
            stop: Some(stop),
            served,
        }
    }

    /// Shuts the server down as hookd does (open watch streams end with
    /// UNAVAILABLE) and waits until it stopped.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.served)
            .await
            .expect("the fake control plane stops");
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.served.abort();
    }
}

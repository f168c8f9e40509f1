//! The bare server `compare` measures hookd against: actix-web reading the
//! whole body of `POST /hooks/{tenant_id}` and answering 202 with a small
//! JSON body, and nothing else: no verification, no storage.

use std::net::SocketAddr;

use actix_web::{web, App, HttpResponse, HttpServer};

/// Bodies up to this size are read (hookd's own limit is per tenant).
const MAX_BODY: usize = 64 * 1024 * 1024;

async fn accept(_tenant: web::Path<String>, body: web::Bytes) -> HttpResponse {
    HttpResponse::Accepted()
        .content_type("application/json")
        .body(format!(r#"{{"status":"accepted","bytes":{}}}"#, body.len()))
}

/// Serves on `addr` with `workers` threads (0: one per core) and prints
/// `listening on ADDR` on stdout once bound; runs until killed.
pub fn serve(addr: SocketAddr, workers: usize) -> anyhow::Result<()> {
    actix_rt::System::new().block_on(async move {
        let mut server = HttpServer::new(|| {
            App::new()
                .app_data(web::PayloadConfig::new(MAX_BODY))
                .route("/hooks/{tenant_id}", web::post().to(accept))
        })
        .bind(addr)?;
        if workers > 0 {
            server = server.workers(workers);
        }
        let bound = server.addrs()[0];
        println!("listening on {bound}");
        server.run().await?;
        Ok(())
    })
}

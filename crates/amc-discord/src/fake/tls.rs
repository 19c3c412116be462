//! The local Discord as AMC's HTTPS client meets Discord: `https://discord.com` and
//! Discord's CDN, reached through an HTTP proxy (`discord_proxy`). The proxy takes
//! `CONNECT discord.com:443` (and the CDN's hosts), then speaks TLS with a certificate
//! for those names, signed by the test CA in `certs/` (`discord_ca_file`), and serves the
//! same routes as the plain stand-in. So serenity runs with its rate limiter on, as in
//! production, and no test request can reach the real Discord: every other host is
//! refused.

use std::sync::Arc;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tower::ServiceExt;

use super::FakeDiscord;

/// The CA that signs the local Discord's certificate (PEM), for `discord_ca_file`.
pub const CA_PEM: &str = include_str!("certs/ca.pem");
const CERT_PEM: &str = include_str!("certs/discord.pem");
const KEY_PEM: &str = include_str!("certs/discord.key");

/// The hosts the proxy opens a tunnel to.
const HOSTS: &[&str] =
    &["discord.com", "canary.discord.com", "ptb.discord.com", "cdn.discordapp.com", "media.discordapp.net"];

fn acceptor() -> std::io::Result<TlsAcceptor> {
    let bad = |e: &dyn std::fmt::Display| std::io::Error::other(e.to_string());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(CERT_PEM.as_bytes())
        .chain(CertificateDer::pem_slice_iter(CA_PEM.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&e))?;
    let key = PrivateKeyDer::from_pem_slice(KEY_PEM.as_bytes()).map_err(|e| bad(&e))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(&e))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Listens for the proxy's clients until the runtime ends.
pub(super) async fn serve(fake: FakeDiscord, listener: TcpListener) {
    let Ok(tls) = acceptor() else { return };
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(tunnel(fake.clone(), stream, tls.clone()));
    }
}

/// One proxied connection: `CONNECT host:443`, then TLS, then HTTP/1.1 to the routes.
async fn tunnel(fake: FakeDiscord, mut stream: TcpStream, tls: TlsAcceptor) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() > 8192 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
    let target = match line.split(' ').collect::<Vec<_>>()[..] {
        ["CONNECT", target, _] => target.to_owned(),
        _ => String::new(),
    };
    let allowed = target.rsplit_once(':').is_some_and(|(host, port)| port == "443" && HOSTS.contains(&host));
    fake.lock().tunnels.push(target.clone());
    if !allowed {
        stream.write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n").await?;
        return Ok(());
    }
    stream.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
    let tls = tls.accept(stream).await?;
    let app = super::router(fake);
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        app.clone().oneshot(req.map(axum::body::Body::new))
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(tls), service)
        .await
        .map_err(std::io::Error::other)
}

//! Fetching an attachment an agent gave as a URL. One that could name any URL could
//! reach services on the person's network, so: `http`/`https` only, and every address
//! connected to (the first and after each redirect) must be public. Downloads are
//! capped in size and time.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use amc_types::error::{Error, ErrorCode, Result};

/// How long a download may take in all.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// How many redirects are followed.
const MAX_REDIRECTS: usize = 5;

/// Which addresses may be connected to; [`is_public`] outside tests.
pub type AddressFilter = fn(IpAddr) -> bool;

/// A downloaded file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// The URL the agent gave.
    pub url: String,
    /// A file name from the URL's path, or `download`.
    pub filename: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Whether an address is on the public internet: not loopback, private, link-local,
/// carrier-grade NAT, multicast, documentation, benchmarking or reserved space.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 88 && c == 99)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

/// Only global unicast (`2000::/3`) counts, less the ranges inside it that embed IPv4
/// addresses or are reserved; everything else (IPv4-compatible, NAT64, site-local,
/// unique-local, link-local, multicast) is refused.
fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    (s[0] & 0xe000) == 0x2000
        && !(s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        && !(s[0] == 0x2001 && s[1] == 0x0000) // Teredo embeds IPv4
        && !(s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0) // benchmarking
        && !(s[0] == 0x2001 && s[1] < 0x0200) // other IETF protocol assignments
        && s[0] != 0x2002 // 6to4 embeds IPv4
}

/// Resolves names like the system does, then drops every address the filter refuses.
struct FilteringResolver(AddressFilter);

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let filter = self.0;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = addrs.into_iter().filter(|a| filter(a.ip())).collect();
            if allowed.is_empty() {
                return Err(format!("{host} does not resolve to a public address").into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

fn refusal(url: &str, why: &str) -> Error {
    Error::validation(format!("attachment url {url:?} cannot be fetched: {why}"))
}

fn host_allowed(url: &reqwest::Url, filter: AddressFilter) -> std::result::Result<(), &'static str> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err("only http and https URLs are fetched");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("URLs with credentials are not fetched");
    }
    match url.host() {
        None => Err("the URL has no host"),
        Some(url::Host::Ipv4(ip)) if !filter(IpAddr::V4(ip)) => Err("it points to a private or local address"),
        Some(url::Host::Ipv6(ip)) if !filter(IpAddr::V6(ip)) => Err("it points to a private or local address"),
        Some(_) => Ok(()),
    }
}

/// Downloads `raw` (at most `max_bytes`), refusing anything but public http(s).
pub async fn fetch(raw: &str, max_bytes: u64, filter: AddressFilter) -> Result<Download> {
    let url = reqwest::Url::parse(raw).map_err(|_| refusal(raw, "it is not a valid URL"))?;
    host_allowed(&url, filter).map_err(|why| refusal(raw, why))?;
    let redirect = reqwest::redirect::Policy::custom(move |attempt| {
        // `previous` holds every URL asked so far, the first included: the redirect about
        // to be followed is number `previous().len()`.
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else if let Err(why) = host_allowed(attempt.url(), filter) {
            attempt.error(why)
        } else {
            attempt.follow()
        }
    });
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(redirect)
        .dns_resolver(Arc::new(FilteringResolver(filter)))
        .connect_timeout(Duration::from_secs(10))
        .timeout(FETCH_TIMEOUT)
        .user_agent(concat!("AMC/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(Error::internal)?;
    let mut resp = client.get(url.clone()).send().await.map_err(|e| refusal(raw, &describe(&e)))?;
    if !resp.status().is_success() {
        return Err(refusal(raw, &format!("the server answered {}", resp.status())));
    }
    if resp.content_length().is_some_and(|n| n > max_bytes) {
        return Err(too_large(max_bytes));
    }
    let final_url = resp.url().clone();
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| refusal(raw, &describe(&e)))? {
        if (bytes.len() + chunk.len()) as u64 > max_bytes {
            return Err(too_large(max_bytes));
        }
        bytes.extend_from_slice(&chunk);
    }
    let filename = final_url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .map(|s| s.chars().filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c)).collect::<String>())
        .filter(|s| !s.is_empty() && s != "." && s != "..")
        .unwrap_or_else(|| "download".to_owned());
    Ok(Download { url: raw.to_owned(), filename, bytes })
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "it took too long".to_owned()
    } else if e.is_redirect() {
        "a redirect went somewhere not allowed".to_owned()
    } else if e.is_connect() {
        "could not connect to a public address for it".to_owned()
    } else {
        "the download failed".to_owned()
    }
}

fn too_large(max: u64) -> Error {
    Error::new(ErrorCode::AttachmentTooLargeForPlatform, format!("the file at this URL is over {max} bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:192.168.0.1",
            "2002:c0a8:0101::1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(private.parse().expect("ip")), "{private}");
        }
        for public in ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(public.parse().expect("ip")), "{public}");
        }
    }

    #[tokio::test]
    async fn schemes_hosts_and_private_addresses_are_refused_before_any_connection() {
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/a",
            "http://127.0.0.1:1/a",
            "http://[::1]:1/a",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost:1/a",
            "http://user:pw@example.com/a",
            "not a url",
        ] {
            let err = fetch(url, 1024, is_public).await.expect_err(url);
            assert_eq!(err.code, ErrorCode::ValidationFailed, "{url}");
        }
    }

    fn only_127_0_0_1(ip: IpAddr) -> bool {
        ip == IpAddr::V4(Ipv4Addr::LOCALHOST)
    }

    async fn serve(router: axum::Router) -> SocketAddr {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(l, router).await });
        addr
    }

    #[tokio::test]
    async fn downloads_follow_allowed_redirects_and_respect_the_size_cap() {
        use axum::response::Redirect;
        use axum::routing::get;
        let addr = serve(
            axum::Router::new()
                .route("/files/photo.jpg", get(|| async { vec![7u8; 100] }))
                .route("/big.bin", get(|| async { vec![0u8; 5000] }))
                .route("/moved", get(|| async { Redirect::temporary("/files/photo.jpg") }))
                .route("/to-private", get(|| async { Redirect::temporary("http://127.0.0.2:9/secret") }))
                .route("/to-file", get(|| async { Redirect::temporary("file:///etc/passwd") }))
                .route(
                    "/hop/{n}",
                    get(|axum::extract::Path(n): axum::extract::Path<u32>| async move {
                        if n == 0 {
                            Redirect::temporary("/files/photo.jpg")
                        } else {
                            Redirect::temporary(&format!("/hop/{}", n - 1))
                        }
                    }),
                ),
        )
        .await;
        let base = format!("http://{addr}");
        let d = fetch(&format!("{base}/moved"), 1000, only_127_0_0_1).await.expect("fetched");
        assert_eq!((d.filename.as_str(), d.bytes.len()), ("photo.jpg", 100));
        let err = fetch(&format!("{base}/big.bin"), 1000, only_127_0_0_1).await.expect_err("too big");
        assert_eq!(err.code, ErrorCode::AttachmentTooLargeForPlatform);
        for path in ["/to-private", "/to-file", "/missing"] {
            let err = fetch(&format!("{base}{path}"), 1000, only_127_0_0_1).await.expect_err(path);
            assert_eq!(err.code, ErrorCode::ValidationFailed, "{path}: {}", err.message);
        }
        // Exactly MAX_REDIRECTS redirects are followed (/hop/n makes n + 1 of them), not one more.
        let hops = MAX_REDIRECTS - 1;
        let d = fetch(&format!("{base}/hop/{hops}"), 1000, only_127_0_0_1).await.expect("five redirects");
        assert_eq!(d.bytes.len(), 100);
        let err = fetch(&format!("{base}/hop/{}", hops + 1), 1000, only_127_0_0_1).await.expect_err("six redirects");
        assert_eq!(err.code, ErrorCode::ValidationFailed, "{}", err.message);
        // A name that resolves only to refused addresses is refused.
        let err = fetch(&format!("http://localhost:{}/files/photo.jpg", addr.port()), 1000, |_| false)
            .await
            .expect_err("filtered");
        assert_eq!(err.code, ErrorCode::ValidationFailed);
    }
}

//! What names a request on its line: its ID, and the address of the peer
//! that sent it, both held as text without an allocation.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use http::HeaderValue;

/// A request ID: unique within this process, and unlikely to repeat across
/// restarts because the counter starts from the clock.
pub(super) fn next_request_id() -> RequestId {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| {
                u64::try_from(d.as_nanos() & u128::from(u64::MAX)).unwrap_or(0)
            })
    });
    RequestId::new(start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// A request's ID as it is shown: 16 lowercase hexadecimal digits, held
/// without an allocation.
pub(super) struct RequestId([u8; 16]);

impl RequestId {
    pub(super) fn new(n: u64) -> RequestId {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0; 16];
        for (i, digit) in text.iter_mut().enumerate() {
            *digit = DIGITS[usize::try_from((n >> (60 - 4 * i)) & 0xf).unwrap_or(0)];
        }
        RequestId(text)
    }

    pub(super) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hexadecimal digits are UTF-8")
    }

    /// The ID as the `X-Request-Id` header's value: never indexed by
    /// HTTP/2's header compression, as a value used once would only push
    /// reusable entries out of its table.
    pub(super) fn header_value(&self) -> HeaderValue {
        let mut value =
            HeaderValue::from_bytes(&self.0).expect("hexadecimal digits are a header value");
        value.set_sensitive(true);
        value
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A connection's peer: its address, and the address's text, made once
/// for the lines of every request on the connection.
#[derive(Clone, Copy)]
pub struct Peer {
    pub(super) ip: IpAddr,
    /// The text, in the first `len` bytes (an IPv6 address's text is at
    /// most 45 bytes).
    text: [u8; 45],
    len: u8,
}

impl Peer {
    /// The peer at `ip`.
    pub fn new(ip: IpAddr) -> Peer {
        use std::io::Write;
        let mut text = [0; 45];
        let mut rest = &mut text[..];
        write!(rest, "{ip}").expect("an IP address's text fits in 45 bytes");
        let unused = rest.len();
        Peer {
            ip,
            text,
            len: u8::try_from(45 - unused).expect("at most 45"),
        }
    }

    pub(super) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.text[..usize::from(self.len)])
            .expect("an address's text is ASCII")
    }
}

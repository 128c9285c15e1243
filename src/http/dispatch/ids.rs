//! What names a request's client on its line: the address of the peer
//! that sent it, held as text without an allocation. (Its ID is
//! [`crate::log_context::RequestId`].)

use std::net::IpAddr;

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

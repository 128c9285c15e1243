use std::net::IpAddr;

use super::ids::Peer;
use super::*;
use crate::log_context::RequestId;

/// The size of the future `f` returns, without making one.
fn future_size<A, B, C, F: std::future::Future>(_: impl FnOnce(A, B, C) -> F) -> usize {
    std::mem::size_of::<F>()
}

#[test]
fn request_ids_are_sixteen_lowercase_hexadecimal_digits() {
    for n in [
        0,
        1,
        0xf,
        0x10,
        0xabc_def,
        0x0123_4567_89ab_cdef,
        u64::MAX - 1,
        u64::MAX,
    ] {
        let id = RequestId::new(n);
        assert_eq!(id.as_str(), format!("{n:016x}"));
        assert_eq!(id.to_string(), format!("{n:016x}"));
        let value = id.header_value();
        assert_eq!(value.to_str().unwrap(), format!("{n:016x}"));
        assert!(value.is_sensitive(), "never indexed by HTTP/2");
    }
    let (a, b) = (next_request_id(), next_request_id());
    assert_ne!(a.as_str(), b.as_str());
    // The values a thread makes share buffers: each keeps its own bytes,
    // however many are alive at once, across several buffers.
    let ids: Vec<RequestId> = (0..200_u64).map(|n| RequestId::new(n * 0x1_0001)).collect();
    let values: Vec<HeaderValue> = ids.iter().map(RequestId::header_value).collect();
    for (id, value) in ids.iter().zip(&values) {
        assert_eq!(value.to_str().unwrap(), id.as_str());
    }
}

/// The size of the future `f` returns, without making one.
fn later_size<A, B, C, D, E, F: std::future::Future>(_: impl FnOnce(A, B, C, D, E) -> F) -> usize {
    std::mem::size_of::<F>()
}

/// What hyper moves for each request is what [`handle`] gives: a held
/// document's answer, or a pointer to the future that makes it. That
/// future holds the state of everything it awaits inline: every route's
/// work that waits is boxed, so answering keeps next to no state of its
/// own (a document's loading inline made every request's future 3.4 KiB,
/// an archive's 11).
#[test]
fn a_request_future_holds_no_routes_state() {
    let handled = std::mem::size_of::<Handled>();
    let answer = std::mem::size_of::<Response<Body>>();
    assert!(
        handled <= answer + 16,
        "what hyper moves for a request is {handled} bytes, an answer {answer}"
    );
    let later = later_size(answer_later::<hyper::body::Incoming>);
    let respond = future_size(respond);
    let archive = future_size(archive_response);
    assert!(
        archive > 6 * 1024,
        "an archive's answer is large ({archive} bytes): the bounds below mean something"
    );
    assert!(
        respond <= 512,
        "respond's future is {respond} bytes: some route's waiting is inline"
    );
    assert!(
        later <= 2560,
        "a request's future is {later} bytes: a route's work is no longer boxed"
    );
}

#[test]
fn a_peer_reads_as_its_address() {
    for ip in [
        "127.0.0.1",
        "255.255.255.255",
        "0.0.0.0",
        "::1",
        "::",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "::ffff:255.255.255.255",
        "fe80::1:2:3:4",
    ] {
        let ip: IpAddr = ip.parse().unwrap();
        let peer = Peer::new(ip);
        assert_eq!(peer.as_str(), ip.to_string());
        assert_eq!(peer.ip, ip);
    }
}

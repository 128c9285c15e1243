//! The one body type of every answer, with helpers so that handlers never
//! spell out the boxing.

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Frame;

/// The body type of every answer.
pub type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// An empty body.
pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// A body of bytes held in memory.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A body streamed from `chunks`; an error ends the response early.
pub fn stream<S>(chunks: S) -> Body
where
    S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
{
    StreamBody::new(chunks.map(|chunk| chunk.map(Frame::data))).boxed_unsync()
}

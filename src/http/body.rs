//! The one body type of every answer, with helpers so that handlers never
//! spell out the boxing.

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Either, Full, StreamBody};
use hyper::body::Frame;

/// The body type of every answer: bytes held in memory (the documents,
/// nearly every answer; no allocation beyond the bytes' own), or a boxed
/// stream.
pub type Body = Either<Full<Bytes>, UnsyncBoxBody<Bytes, std::io::Error>>;

/// What a request's body may be: hyper's, or one a test builds. Only a
/// form sent to a page is read.
pub trait RequestBody:
    http_body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
    + Send
    + Unpin
    + 'static
{
}

impl<B> RequestBody for B where
    B: http_body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + Unpin
        + 'static
{
}

/// An empty body.
pub fn empty() -> Body {
    full(Bytes::new())
}

/// A body of bytes held in memory.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Either::Left(Full::new(bytes.into()))
}

/// A body streamed from `chunks`; an error ends the response early.
pub fn stream<S>(chunks: S) -> Body
where
    S: Stream<Item = std::io::Result<Bytes>> + Send + 'static,
{
    Either::Right(StreamBody::new(chunks.map(|chunk| chunk.map(Frame::data))).boxed_unsync())
}

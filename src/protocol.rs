//! The Provider Network Mirror Protocol's JSON documents, as tfmirror
//! renders them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::address::Platform;
use crate::store::{IndexRecord, VersionRecord};
use crate::verify;

/// `index.json`: `{"versions": {"1.2.3": {}, …}}`.
#[derive(Debug, Serialize, Deserialize)]
pub struct IndexDocument {
    /// Every available version, each with an empty object.
    #[allow(clippy::zero_sized_map_values)] // the protocol's shape: `{"1.0.0": {}}`
    pub versions: BTreeMap<String, Empty>,
}

/// The empty object the protocol puts beside each version.
#[derive(Debug, Serialize, Deserialize)]
pub struct Empty {}

/// `:version.json`: `{"archives": {"os_arch": {"url": …, "hashes": […]}}}`.
#[derive(Debug, Serialize, Deserialize)]
pub struct VersionDocument {
    /// One entry per platform the mirror can serve.
    pub archives: BTreeMap<Platform, ArchiveEntry>,
}

/// One platform's archive in a [`VersionDocument`].
#[derive(Debug, Serialize, Deserialize)]
pub struct ArchiveEntry {
    /// The archive's URL, relative to the document's own URL.
    pub url: String,
    /// `h1:` (once the archive is cached) and `zh:` hashes.
    pub hashes: Vec<String>,
}

impl IndexDocument {
    /// Renders a provider's version list.
    pub fn from_record(record: &IndexRecord) -> Self {
        IndexDocument {
            versions: record
                .versions
                .keys()
                .map(|v| (v.to_string(), Empty {}))
                .collect(),
        }
    }
}

impl VersionDocument {
    /// Renders a version's packages; `h1` holds the hashes of the archives
    /// already in the cache, and `query` gives the query string (if any)
    /// to append to each archive's URL.
    pub fn from_record(
        record: &VersionRecord,
        h1: &BTreeMap<Platform, String>,
        query: impl Fn(&Platform) -> Option<String>,
    ) -> Self {
        let archives = record
            .packages
            .iter()
            .map(|(platform, pkg)| {
                let name = record.provider.archive_name(&record.version, platform);
                // Path-segment encoding keeps names with `+` or non-ASCII
                // characters intact when the client resolves them.
                let mut url = path_segment(&name);
                if let Some(q) = query(platform) {
                    url.push('?');
                    url.push_str(&q);
                }
                let mut hashes: Vec<String> = h1.get(platform).cloned().into_iter().collect();
                hashes.push(verify::zh(&pkg.sha256));
                (platform.clone(), ArchiveEntry { url, hashes })
            })
            .collect();
        VersionDocument { archives }
    }

    /// The rendered document `plain` again, with `query(platform)` after
    /// each archive's URL: the answer made for one caller from the one
    /// made for all.
    pub fn with_queries(
        plain: &[u8],
        query: impl Fn(&Platform) -> String,
    ) -> Result<VersionDocument, serde_json::Error> {
        let mut doc: VersionDocument = serde_json::from_slice(plain)?;
        for (platform, entry) in &mut doc.archives {
            entry.url.push('?');
            entry.url.push_str(&query(platform));
        }
        Ok(doc)
    }
}

/// A document rendered once, with its strong entity tag (a digest of its
/// bytes), served as it is until what it renders changes.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The JSON bytes.
    pub bytes: bytes::Bytes,
    /// The `ETag`, quotes included, ready to send (a copy shares it).
    pub etag: http::HeaderValue,
    /// The bytes' length as a `Content-Length` value (a copy shares it),
    /// for HTTP/2 answers.
    pub length: http::HeaderValue,
    /// The headers of an answer carrying the document, made by whoever
    /// answers with it the first time and shared by every copy, so that
    /// each answer copies them instead of building them.
    pub answer_headers: std::sync::Arc<std::sync::OnceLock<http::HeaderMap>>,
}

impl Rendered {
    /// Renders a document.
    pub fn new<T: Serialize>(doc: &T) -> Rendered {
        Rendered::new_json(serde_json::to_vec(doc).expect("documents always serialize"))
    }

    /// A document already rendered as JSON `bytes`.
    pub fn new_json(bytes: Vec<u8>) -> Rendered {
        let digest = verify::Sha256::digest(&bytes);
        let tag = format!("\"{}\"", verify::hex(&digest[..16]));
        Rendered {
            etag: http::HeaderValue::from_str(&tag)
                .expect("quotes and hexadecimal digits are a valid header value"),
            length: http::HeaderValue::from(bytes.len()),
            bytes: bytes.into(),
            answer_headers: std::sync::Arc::default(),
        }
    }
}

/// Characters escaped in a relative URL made of one path segment (`:`
/// too, which would otherwise read as a scheme).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `s` escaped as one URL path segment.
pub fn path_segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, SEGMENT).to_string()
}

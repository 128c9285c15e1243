//! Answers for CLI release paths: the listings and JSON documents version
//! managers read, and the release files themselves, streamed from the
//! store. JSON goes out as exactly `application/json` and zips as
//! `application/zip`: hc-install refuses any other content type.

use http::{header, HeaderValue, Response, StatusCode};

use super::body::{self, Body};
use super::respond::{json_response, with_type};
use super::routes::ReleaseRoute;
use crate::error::RequestError;
use crate::mirror::Mirror;
use crate::releases::layouts;
use crate::releases::ReleaseBody;

/// The answer to a release route; `base` is this mirror's URL as the
/// client reaches it (for the build URLs of a version's `index.json`).
pub async fn respond(
    mirror: &std::sync::Arc<Mirror>,
    base: &str,
    route: ReleaseRoute,
) -> Result<Response<Body>, RequestError> {
    let html = |page: String| {
        with_type(
            StatusCode::OK,
            page.into_bytes(),
            "text/html; charset=utf-8",
        )
    };
    match route {
        ReleaseRoute::Listing(product, style) => {
            let list = mirror.release_list(product).await?;
            Ok(html(layouts::listing(&list, style)))
        }
        ReleaseRoute::ProductIndex(product) => {
            let list = mirror.release_list(product).await?;
            Ok(json_response(
                StatusCode::OK,
                &layouts::product_index(&list),
            ))
        }
        ReleaseRoute::Api(product) => {
            let list = mirror.release_list(product).await?;
            let source = mirror.release_source(product)?;
            let mut held = std::collections::BTreeMap::new();
            for version in list.versions.keys() {
                if let Some(record) = mirror.held_release(product, version).await {
                    held.insert(version.clone(), layouts::served_files(&record, source));
                }
            }
            let doc = layouts::api_json(&list, &|v| held.get(v).cloned());
            Ok(json_response(StatusCode::OK, &doc))
        }
        ReleaseRoute::VersionIndex(product, version) => {
            let record = mirror.release_record(product, &version).await?;
            let doc = layouts::version_index(&record, mirror.release_source(product)?, base);
            Ok(json_response(StatusCode::OK, &doc))
        }
        ReleaseRoute::VersionListing(product, version) => {
            let record = mirror.release_record(product, &version).await?;
            Ok(html(layouts::version_listing(
                &record,
                mirror.release_source(product)?,
            )))
        }
        ReleaseRoute::File(file) => {
            let kind = layouts::content_type(&file.name);
            match mirror
                .release_file(file.product, &file.version, &file.name)
                .await?
            {
                ReleaseBody::Small(bytes) => Ok(with_type(StatusCode::OK, bytes.to_vec(), kind)),
                ReleaseBody::Stored(reader) => {
                    let size = reader.size;
                    let mut resp = Response::new(body::stream(tokio_util::io::ReaderStream::new(
                        reader.into_reader(),
                    )));
                    let h = resp.headers_mut();
                    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
                    h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
                    Ok(resp)
                }
            }
        }
    }
}

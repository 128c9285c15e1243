//! The pages for people, as requests reach them: a form's body read (up
//! to [`crate::web::form::MAX_BODY`]), the address clients reach the
//! mirror by, and the page's answer sent with the headers every page
//! carries ([`crate::web::answer`]).

use http::{header, HeaderValue, Response};
use http_body_util::BodyExt;

use super::Asked;
use crate::error::RequestError;
use crate::http::body::{self, Body, RequestBody};
use crate::http::App;
use crate::web::answer::{Keep, HEADERS};
use crate::web::routes::PageRoute;
use crate::web::{PageAnswer, PageRequest, Site};

/// Reads a form's body whole into `asked`, refusing one larger than a
/// page takes.
pub(super) async fn read_form(
    asked: &mut Asked<'_>,
    body: impl RequestBody,
) -> Result<(), RequestError> {
    let limit = crate::web::form::MAX_BODY;
    let limited = http_body_util::Limited::new(body, limit);
    match limited.collect().await {
        Ok(collected) => {
            asked.form = collected.to_bytes();
            Ok(())
        }
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(RequestError::TooLarge(
            format!("a form may send at most {} MiB", limit >> 20),
        )),
        Err(e) => Err(RequestError::InvalidRequest(format!(
            "the form could not be read: {e}"
        ))),
    }
}

/// The scheme and authority clients reach this mirror at:
/// `server.public_url`, else the scheme a trusted proxy forwarded (or the
/// listener's) and the `Host` the client used (or the listen address).
pub(super) fn public_address(app: &App, asked: &Asked<'_>) -> (String, String) {
    let cfg = app.mirror.config();
    let public = cfg.server.public_url.as_ref().and_then(|url| {
        let host = url.host_str()?;
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Some((url.scheme().to_owned(), authority))
    });
    public.unwrap_or_else(|| {
        let served = if cfg.server.tls { "https" } else { "http" };
        let listen = cfg.server.listen.to_string();
        let authority = asked
            .host()
            .filter(|h| h.len() < 300 && h.bytes().all(|b| b.is_ascii_graphic()))
            .map_or(listen, str::to_owned);
        (asked.scheme().unwrap_or(served).to_owned(), authority)
    })
}

/// Answers a page.
pub(super) async fn answer(app: &App, asked: &Asked<'_>, route: &PageRoute) -> Response<Body> {
    let (scheme, authority) = public_address(app, asked);
    let cookies: Vec<&str> = (asked.parts.headers.get_all(header::COOKIE).iter())
        .filter_map(|v| v.to_str().ok())
        .collect();
    let request = PageRequest {
        route,
        path: asked.path,
        post: asked.method == http::Method::POST,
        query: asked.query,
        cookies: &cookies,
        authorization: asked.authorization,
        content_type: asked.header(&header::CONTENT_TYPE),
        origin: asked.header(&header::ORIGIN),
        body: asked.form.clone(),
        scheme: &scheme,
        authority: &authority,
        client: asked.client,
    };
    let site = Site {
        mirror: &app.mirror,
        auth: &app.auth,
        watch: app.watch.as_deref(),
    };
    response(crate::web::serve(site, &request).await)
}

/// A page's answer as a response.
fn response(page: PageAnswer) -> Response<Body> {
    let mut resp = Response::new(body::full(page.body));
    *resp.status_mut() = page.status;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(page.content_type),
    );
    for (name, value) in HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(match page.keep {
            Keep::Never => "no-store",
            Keep::Asset => "public, max-age=86400",
        }),
    );
    for cookie in page.cookies {
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    if let Some(location) = page.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::LOCATION, location);
    }
    resp
}

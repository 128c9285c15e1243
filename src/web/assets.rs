//! The pages' one style sheet, embedded in the binary: nothing a page
//! shows is loaded from anywhere but the mirror itself.

use http::StatusCode;

use super::answer::{Keep, PageAnswer};

/// The style sheet.
const STYLE: &str = include_str!("assets/style.css");

/// An asset by name (the router names only those that exist).
pub fn asset(name: &str) -> PageAnswer {
    match name {
        "style.css" => {
            let mut answer = PageAnswer::new(
                StatusCode::OK,
                "text/css; charset=utf-8",
                STYLE.as_bytes().to_vec(),
            );
            answer.keep = Keep::Asset;
            answer
        }
        _ => PageAnswer::new(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            b"no such asset\n".to_vec(),
        ),
    }
}

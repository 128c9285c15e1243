//! What a form sent: `application/x-www-form-urlencoded` fields, or
//! `multipart/form-data` fields and files, read whole (the HTTP layer
//! caps the body at [`MAX_BODY`]).

use crate::error::RequestError;

use super::PageRequest;

/// The largest form a page takes, files included.
pub const MAX_BODY: usize = 8 << 20;

/// The most parts one multipart form may have.
const MAX_PARTS: usize = 1000;

/// One field or file.
#[derive(Debug)]
pub struct Part {
    /// The field's name.
    pub name: String,
    /// The file's name, for a file.
    pub file_name: Option<String>,
    /// What was sent.
    pub bytes: bytes::Bytes,
}

/// A form as sent.
#[derive(Debug, Default)]
pub struct Form {
    /// Its parts, in order.
    pub parts: Vec<Part>,
}

impl Form {
    /// Reads `req`'s body as its `Content-Type` says.
    pub async fn read(req: &PageRequest<'_>) -> Result<Form, RequestError> {
        let kind = req.content_type.unwrap_or("");
        let essence = kind.split(';').next().unwrap_or("").trim();
        match essence {
            "application/x-www-form-urlencoded" => Ok(Form {
                parts: url::form_urlencoded::parse(&req.body)
                    .map(|(k, v)| Part {
                        name: k.into_owned(),
                        file_name: None,
                        bytes: bytes::Bytes::from(v.into_owned()),
                    })
                    .collect(),
            }),
            "multipart/form-data" => multipart(kind, req.body.clone()).await,
            _ => Err(RequestError::InvalidRequest(format!(
                "a form is sent as application/x-www-form-urlencoded or multipart/form-data, not {essence:?}"
            ))),
        }
    }

    /// A field's text (the first of that name).
    pub fn text(&self, name: &str) -> Option<String> {
        let part = self.parts.iter().find(|p| p.name == name)?;
        Some(String::from_utf8_lossy(&part.bytes).into_owned())
    }

    /// The files sent under `name` that are not empty.
    pub fn files<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Part> + 'a {
        self.parts
            .iter()
            .filter(move |p| p.name == name && p.file_name.is_some() && !p.bytes.is_empty())
    }
}

async fn multipart(kind: &str, body: bytes::Bytes) -> Result<Form, RequestError> {
    let bad =
        |e: multer::Error| RequestError::InvalidRequest(format!("the form cannot be read: {e}"));
    let boundary = multer::parse_boundary(kind).map_err(bad)?;
    let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(body) });
    let mut reader = multer::Multipart::new(stream, boundary);
    let mut form = Form::default();
    while let Some(field) = reader.next_field().await.map_err(bad)? {
        if form.parts.len() == MAX_PARTS {
            return Err(RequestError::TooLarge(format!(
                "the form has more than {MAX_PARTS} parts"
            )));
        }
        let name = field.name().unwrap_or("").to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let bytes = field.bytes().await.map_err(bad)?;
        form.parts.push(Part {
            name,
            file_name,
            bytes,
        });
    }
    Ok(form)
}

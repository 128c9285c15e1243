//! Registry answers read the way Terraform and OpenTofu read them.
//!
//! Both clients decode registry answers with Go's `encoding/json` into
//! plain structs, so an answer they accept may carry `null` where a value
//! stands (read as the empty value), leave optional fields out, add fields
//! they do not know, spell a key in another case (Go matches keys without
//! regard to case), and have anything after the first JSON value (they use
//! a streaming decoder, which reads one value and stops). A value of the
//! wrong type (a number where a string stands, a string where a list
//! stands) is what they refuse. tfmirror reads every answer through
//! [`Node`], which has exactly these rules, so that it accepts what the
//! clients accept and names the field when it refuses.
//!
//! Deviation, on purpose: where one object holds two keys that differ only
//! in case, Go takes whichever comes last in the document; tfmirror prefers
//! the exact spelling (the order is not kept once parsed). No registry
//! sends such a pair.

use std::fmt;

use serde_json::{Map, Value};

/// Why a field of an answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{path}`: {reason}")]
pub struct FieldError {
    /// Where in the document, e.g. `signing_keys.gpg_public_keys[0].ascii_armor`.
    pub path: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Reads the first JSON value of `body`, as Go's `json.Decoder` does:
/// whatever follows it is not looked at, and bytes that are not UTF-8 are
/// read as U+FFFD. Returns the parser's message when there is no value.
pub fn first_value(body: &[u8]) -> Result<Value, String> {
    let text = String::from_utf8_lossy(body);
    let mut values = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    match values.next() {
        Some(Ok(value)) => Ok(value),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("the body is empty".into()),
    }
}

/// One place in a JSON document: a value, `null`, or nothing (the key is
/// absent), with the path that leads to it.
#[derive(Debug, Clone)]
pub struct Node<'a> {
    value: Option<&'a Value>,
    path: String,
}

/// An object of a document (possibly absent or `null`, then empty).
#[derive(Debug, Clone)]
pub struct Object<'a> {
    map: Option<&'a Map<String, Value>>,
    path: String,
}

impl<'a> Node<'a> {
    /// The document's root.
    pub fn root(value: &'a Value) -> Self {
        Node {
            value: Some(value),
            path: String::new(),
        }
    }

    /// Where this node is, for messages (`(the document)` for the root).
    pub fn path(&self) -> &str {
        if self.path.is_empty() {
            "(the document)"
        } else {
            &self.path
        }
    }

    /// Whether the key is absent or its value is `null`: what Go reads as
    /// the empty value.
    pub fn is_empty_value(&self) -> bool {
        matches!(self.value, None | Some(Value::Null))
    }

    fn wrong(&self, expected: &str) -> FieldError {
        FieldError {
            path: self.path().to_owned(),
            reason: format!("expected {expected}, found {}", kind(self.value)),
        }
    }

    /// A string; absent or `null` is the empty string.
    pub fn string(&self) -> Result<String, FieldError> {
        match self.value {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(self.wrong("a string")),
        }
    }

    /// A boolean; absent or `null` is `false`.
    pub fn boolean(&self) -> Result<bool, FieldError> {
        match self.value {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.wrong("a boolean")),
        }
    }

    /// A string that must be there and not be empty: a required field.
    pub fn required_string(&self) -> Result<String, FieldError> {
        let s = self.string()?;
        if s.is_empty() {
            return Err(FieldError {
                path: self.path().to_owned(),
                reason: format!("required, but {}", kind(self.value)),
            });
        }
        Ok(s)
    }

    /// A list of strings; absent or `null` is the empty list, and a `null`
    /// element is the empty string (as Go reads `[]string`).
    pub fn strings(&self) -> Result<Vec<String>, FieldError> {
        self.items()?.iter().map(Node::string).collect()
    }

    /// The elements of a list; absent or `null` is the empty list.
    pub fn items(&self) -> Result<Vec<Node<'a>>, FieldError> {
        match self.value {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, v)| Node {
                    value: Some(v),
                    path: format!("{}[{i}]", self.path),
                })
                .collect()),
            Some(_) => Err(self.wrong("a list")),
        }
    }

    /// An object; absent or `null` is the empty object.
    pub fn object(&self) -> Result<Object<'a>, FieldError> {
        match self.value {
            None | Some(Value::Null) => Ok(Object {
                map: None,
                path: self.path.clone(),
            }),
            Some(Value::Object(map)) => Ok(Object {
                map: Some(map),
                path: self.path.clone(),
            }),
            Some(_) => Err(self.wrong("an object")),
        }
    }

    /// An element of a list that Go reads into a pointer (`[]*T`): a `null`
    /// element is a nil pointer, which the clients dereference and fail
    /// on, so it is refused here.
    pub fn required_object(&self) -> Result<Object<'a>, FieldError> {
        if matches!(self.value, Some(Value::Null)) {
            return Err(FieldError {
                path: self.path().to_owned(),
                reason: "is null, which the clients cannot use".into(),
            });
        }
        self.object()
    }

    /// A whole number (Go's `int64`); absent or `null` is 0. A fraction, an
    /// exponent or a number out of range is refused, as Go refuses it.
    pub fn integer(&self) -> Result<i64, FieldError> {
        match self.value {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Number(n)) => n.as_i64().ok_or_else(|| FieldError {
                path: self.path().to_owned(),
                reason: format!("{n} is not a whole number that fits 64 bits"),
            }),
            Some(_) => Err(self.wrong("a number")),
        }
    }
}

impl<'a> Object<'a> {
    /// The field named `key`: the exact spelling if the object has it,
    /// else a key that differs only in case (as Go matches keys).
    pub fn get(&self, key: &str) -> Node<'a> {
        let value = self.map.and_then(|map| {
            map.get(key).or_else(|| {
                map.iter()
                    .filter(|(k, _)| same_folded(k, key))
                    .map(|(_, v)| v)
                    .next_back()
            })
        });
        Node {
            value,
            path: if self.path.is_empty() {
                key.to_owned()
            } else {
                format!("{}.{key}", self.path)
            },
        }
    }

    /// Every key and value of the object (none when it is absent or `null`).
    pub fn entries(&self) -> impl Iterator<Item = (&'a str, Node<'a>)> + '_ {
        self.map.into_iter().flatten().map(move |(k, v)| {
            (
                k.as_str(),
                Node {
                    value: Some(v),
                    path: if self.path.is_empty() {
                        k.clone()
                    } else {
                        format!("{}.{k}", self.path)
                    },
                },
            )
        })
    }
}

/// Whether two keys are equal under simple case folding.
fn same_folded(a: &str, b: &str) -> bool {
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// What a JSON value is, for messages.
fn kind(value: Option<&Value>) -> Kind<'_> {
    Kind(value)
}

struct Kind<'a>(Option<&'a Value>);

impl fmt::Display for Kind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("absent"),
            Some(Value::Null) => f.write_str("null"),
            Some(Value::Bool(b)) => write!(f, "the boolean {b}"),
            Some(Value::Number(n)) => write!(f, "the number {n}"),
            Some(Value::String(s)) if s.is_empty() => f.write_str("an empty string"),
            Some(Value::String(_)) => f.write_str("a string"),
            Some(Value::Array(_)) => f.write_str("a list"),
            Some(Value::Object(_)) => f.write_str("an object"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_and_absent_are_the_empty_value() {
        let doc = json!({"a": null, "l": null, "o": null, "n": null});
        let root = Node::root(&doc).object().unwrap();
        assert_eq!(root.get("a").string().unwrap(), "");
        assert_eq!(root.get("missing").string().unwrap(), "");
        assert!(root.get("l").strings().unwrap().is_empty());
        assert!(root.get("o").object().unwrap().entries().next().is_none());
        assert_eq!(root.get("n").integer().unwrap(), 0);
        let list = json!(["x", null]);
        assert_eq!(Node::root(&list).strings().unwrap(), ["x", ""]);
    }

    #[test]
    fn keys_match_without_regard_to_case_preferring_the_exact_one() {
        let doc = json!({"Download_URL": "a", "os": "linux", "OS": "other"});
        let root = Node::root(&doc).object().unwrap();
        assert_eq!(root.get("download_url").string().unwrap(), "a");
        assert_eq!(root.get("os").string().unwrap(), "linux");
    }

    #[test]
    fn wrong_types_name_the_field() {
        let doc = json!({"keys": {"list": [{"id": 5}]}, "s": "x", "f": 1.5});
        let root = Node::root(&doc).object().unwrap();
        let item = &root
            .get("keys")
            .object()
            .unwrap()
            .get("list")
            .items()
            .unwrap()[0];
        let err = item.object().unwrap().get("id").string().unwrap_err();
        assert_eq!(err.path, "keys.list[0].id");
        assert_eq!(err.reason, "expected a string, found the number 5");
        assert!(root.get("s").items().is_err());
        assert!(root.get("s").object().is_err());
        assert!(root.get("f").integer().is_err());
        let err = root.get("gone").required_string().unwrap_err();
        assert_eq!(err.to_string(), "`gone`: required, but absent");
        let list = json!([null]);
        assert!(Node::root(&list).items().unwrap()[0]
            .required_object()
            .is_err());
    }

    #[test]
    fn only_the_first_value_is_read() {
        assert_eq!(first_value(b"{\"a\":1} trailing").unwrap(), json!({"a": 1}));
        assert_eq!(first_value(b"{\"a\":1}{\"b\":2}").unwrap(), json!({"a": 1}));
        assert_eq!(first_value(b" null ").unwrap(), Value::Null);
        assert_eq!(
            first_value(b"{\"a\":\"\xff\"}").unwrap(),
            json!({"a": "\u{fffd}"})
        );
        assert!(first_value(b"<!DOCTYPE html>").is_err());
        assert!(first_value(b"{\"a\":").is_err());
        assert!(first_value(b"").is_err());
    }
}

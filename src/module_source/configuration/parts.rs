//! What one configuration file declares that decides what `init`
//! installs: `required_providers` entries and `required_version` (in
//! `terraform` blocks), `provider` blocks, the resources and data sources
//! whose provider is implied or named (`provider = aws.west`), and
//! `module` calls with the line they start on. Read from the native
//! syntax (`.tf`, `.tofu`) or the JSON syntax (`.tf.json`, `.tofu.json`).

use std::path::Path;

use anyhow::{anyhow, bail, Context};
use hcl::edit::Span;
use hcl::{Block, Body, Expression, ObjectKey};
use serde_json::Value;

use super::fs::ConfigFs;

/// A `required_providers` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `source`, when given.
    pub source: Option<String>,
    /// `version`, when given.
    pub version: Option<String>,
    /// Where it is written: the file's name.
    pub at: String,
}

/// A `provider` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderBlock {
    /// The provider's local name (the block's label).
    pub local: String,
    /// `alias`, when given.
    pub alias: Option<String>,
    /// `version` (the old way of constraining a provider), when given.
    pub version: Option<String>,
}

/// A resource, data source or ephemeral resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// What makes it unique in its module (`data.aws_ami.x`).
    pub key: String,
    /// Its type (`aws_ami`).
    pub kind: String,
    /// The local name of the provider its `provider` argument names.
    pub provider: Option<String>,
}

/// A `module` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The call's name (the block's label).
    pub name: String,
    /// `source`, when given.
    pub source: Option<String>,
    /// `version`, when given.
    pub version: Option<String>,
    /// Where it is written: `file:line` (`file` alone in JSON syntax).
    pub at: String,
}

/// What one file declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileParts {
    /// `required_providers` entries by local name, in order.
    pub required: Vec<(String, Entry)>,
    /// `required_version` constraints.
    pub core: Vec<String>,
    /// `provider` blocks.
    pub providers: Vec<ProviderBlock>,
    /// Resources and data sources.
    pub resources: Vec<Resource>,
    /// `module` blocks.
    pub calls: Vec<Call>,
}

/// Reads one configuration file of `fs`, native or JSON syntax by its
/// ending; `name` names it in messages.
pub fn read_file(fs: &dyn ConfigFs, path: &Path, name: &str) -> anyhow::Result<FileParts> {
    let text = fs.read(path)?;
    let parts = if name.ends_with(".json") {
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{name} is not valid JSON configuration: {e}"))?;
        from_json(&value, name)
    } else {
        from_native(&text, name)
    };
    parts.with_context(|| format!("reading {name}"))
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).unwrap_or(text).matches('\n').count() + 1
}

/// Reads the native syntax; `name` names the file in messages.
pub fn from_native(text: &str, name: &str) -> anyhow::Result<FileParts> {
    let edit: hcl::edit::structure::Body = text
        .parse()
        .map_err(|e| anyhow!("{name} is not valid HCL: {e}"))?;
    let lines: Vec<usize> = edit
        .blocks()
        .map(|b| b.span().map_or(0, |r| line_of(text, r.start)))
        .collect();
    let body: Body = edit.into();
    let mut out = FileParts::default();
    for (block, line) in body.blocks().zip(lines) {
        let labels: Vec<&str> = block.labels().iter().map(hcl::BlockLabel::as_str).collect();
        match (block.identifier(), labels.as_slice()) {
            ("terraform", _) => terraform_block(block.body(), name, &mut out)?,
            ("provider", [local]) => out.providers.push(ProviderBlock {
                local: (*local).to_owned(),
                alias: string(block.body(), "alias")?,
                version: string(block.body(), "version")?,
            }),
            (mode @ ("resource" | "data" | "ephemeral"), [kind, label]) => {
                out.resources.push(resource(block, mode, kind, label));
            }
            ("check", [check]) => {
                for data in block.body().blocks().filter(|b| b.identifier() == "data") {
                    if let [kind, label] = data.labels() {
                        let key = format!("check.{check}");
                        out.resources
                            .push(resource(data, &key, kind.as_str(), label.as_str()));
                    }
                }
            }
            ("module", [call]) => out.calls.push(Call {
                name: (*call).to_owned(),
                source: string(block.body(), "source")
                    .with_context(|| format!("module {call:?} ({name}:{line})"))?,
                version: string(block.body(), "version")
                    .with_context(|| format!("module {call:?} ({name}:{line})"))?,
                at: format!("{name}:{line}"),
            }),
            _ => {}
        }
    }
    Ok(out)
}

fn resource(block: &Block, mode: &str, kind: &str, label: &str) -> Resource {
    let provider = block
        .body()
        .attributes()
        .find(|a| a.key() == "provider")
        .and_then(|a| provider_reference(a.expr()));
    Resource {
        key: format!("{mode}.{kind}.{label}"),
        kind: kind.to_owned(),
        provider,
    }
}

/// The local name a `provider` argument names: `aws` of `aws` or
/// `aws.west` (or of the old quoted form `"aws.west"`).
fn provider_reference(expr: &Expression) -> Option<String> {
    match expr {
        Expression::Variable(v) => Some(v.as_str().to_owned()),
        Expression::Traversal(t) => match &t.expr {
            Expression::Variable(v) => Some(v.as_str().to_owned()),
            _ => None,
        },
        Expression::String(s) => s.split('.').next().map(str::to_owned),
        _ => None,
    }
}

/// The literal string value of attribute `key`; an error when it is
/// there but not a literal string (the clients refuse expressions there).
fn string(body: &Body, key: &str) -> anyhow::Result<Option<String>> {
    match body
        .attributes()
        .find(|a| a.key() == key)
        .map(hcl::Attribute::expr)
    {
        None | Some(Expression::Null) => Ok(None),
        Some(Expression::String(s)) => Ok(Some(s.clone())),
        Some(_) => bail!("`{key}` must be a literal string"),
    }
}

fn terraform_block(body: &Body, name: &str, out: &mut FileParts) -> anyhow::Result<()> {
    if let Some(v) = string(body, "required_version")? {
        out.core.push(v);
    }
    for block in body
        .blocks()
        .filter(|b| b.identifier() == "required_providers")
    {
        for attr in block.body().attributes() {
            let local = attr.key().to_owned();
            let what = || format!("required_providers entry {local:?}");
            let entry = match attr.expr() {
                // The old form: `aws = "~> 5.0"`.
                Expression::String(v) => Entry {
                    source: None,
                    version: Some(v.clone()),
                    at: name.to_owned(),
                },
                Expression::Object(fields) => {
                    let field = |key: &str| -> anyhow::Result<Option<String>> {
                        let found = fields.iter().find(|(k, _)| match k {
                            ObjectKey::Identifier(i) => i.as_str() == key,
                            ObjectKey::Expression(Expression::String(s)) => s == key,
                            _ => false,
                        });
                        match found.map(|(_, v)| v) {
                            None | Some(Expression::Null) => Ok(None),
                            Some(Expression::String(s)) => Ok(Some(s.clone())),
                            Some(_) => bail!("{}: `{key}` must be a literal string", what()),
                        }
                    };
                    Entry {
                        source: field("source")?,
                        version: field("version")?,
                        at: name.to_owned(),
                    }
                }
                _ => bail!("{} is neither a string nor an object", what()),
            };
            out.required.push((local, entry));
        }
    }
    Ok(())
}

/// A JSON block: an object, or an array of objects (several blocks of
/// the same kind and labels).
fn each_object(value: &Value) -> Vec<&serde_json::Map<String, Value>> {
    match value {
        Value::Object(o) => vec![o],
        Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
        _ => Vec::new(),
    }
}

fn json_string(
    object: &serde_json::Map<String, Value>,
    key: &str,
) -> anyhow::Result<Option<String>> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => bail!("`{key}` must be a string"),
    }
}

/// Reads the JSON syntax; `name` names the file in messages.
pub fn from_json(value: &Value, name: &str) -> anyhow::Result<FileParts> {
    let Some(root) = value.as_object() else {
        bail!("{name}: the root of a JSON configuration file must be an object");
    };
    let mut out = FileParts::default();
    for (kind, value) in root {
        match kind.as_str() {
            "terraform" => {
                for t in each_object(value) {
                    out.core.extend(json_string(t, "required_version")?);
                    for rp in t
                        .get("required_providers")
                        .map(each_object)
                        .unwrap_or_default()
                    {
                        for (local, v) in rp {
                            let entry = match v {
                                Value::String(s) => Entry {
                                    source: None,
                                    version: Some(s.clone()),
                                    at: name.to_owned(),
                                },
                                Value::Object(o) => Entry {
                                    source: json_string(o, "source")?,
                                    version: json_string(o, "version")?,
                                    at: name.to_owned(),
                                },
                                _ => bail!("required_providers entry {local:?} is neither a string nor an object"),
                            };
                            out.required.push((local.clone(), entry));
                        }
                    }
                }
            }
            "provider" => {
                for by_name in each_object(value) {
                    for (local, blocks) in by_name {
                        for b in each_object(blocks) {
                            out.providers.push(ProviderBlock {
                                local: local.clone(),
                                alias: json_string(b, "alias")?,
                                version: json_string(b, "version")?,
                            });
                        }
                    }
                }
            }
            mode @ ("resource" | "data" | "ephemeral") => {
                for by_type in each_object(value) {
                    for (kind, by_name) in by_type {
                        for named in each_object(by_name) {
                            for (label, body) in named {
                                for b in each_object(body) {
                                    let provider = json_string(b, "provider")?
                                        .and_then(|p| p.split('.').next().map(str::to_owned));
                                    out.resources.push(Resource {
                                        key: format!("{mode}.{kind}.{label}"),
                                        kind: kind.clone(),
                                        provider,
                                    });
                                }
                            }
                        }
                    }
                }
            }
            "module" => {
                for by_name in each_object(value) {
                    for (call, body) in by_name {
                        for b in each_object(body) {
                            let what = || format!("module {call:?} ({name})");
                            out.calls.push(Call {
                                name: call.clone(),
                                source: json_string(b, "source").with_context(what)?,
                                version: json_string(b, "version").with_context(what)?,
                                at: name.to_owned(),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;

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

/// A declaration that must be unique in its module: the clients refuse a
/// configuration that declares one twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// What is declared, as the clients name it in their refusal
    /// (`resource "aws_vpc"`, `variable`, `module call`).
    pub what: String,
    /// What makes it unique (`aws_vpc.main`, `region`, `aws.west`).
    pub key: String,
    /// Where it is written: `file:line` (`file` alone in JSON syntax).
    pub at: String,
}

/// A `variable` block's type constraint and default (native syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// `type`, when given.
    pub ty: Option<Expression>,
    /// `default`, when given.
    pub default: Option<Expression>,
    /// Where it is written: `file:line`.
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
    /// Every declaration that must be unique in its module.
    pub declared: Vec<Declared>,
    /// `variable` blocks with their type and default.
    pub variables: Vec<Variable>,
}

impl FileParts {
    fn declare(&mut self, what: impl Into<String>, key: impl Into<String>, at: &str) {
        self.declared.push(Declared {
            what: what.into(),
            key: key.into(),
            at: at.to_owned(),
        });
    }
}

/// The unique declarations of a native block, besides those whose
/// contents are read (`terraform`, `locals`).
fn declare_block(block: &Block, labels: &[&str], at: &str, out: &mut FileParts) {
    match (block.identifier(), labels) {
        (mode @ ("resource" | "data" | "ephemeral"), [kind, label]) => {
            out.declare(format!("{mode} {kind:?}"), format!("{kind}.{label}"), at);
        }
        ("provider", [local]) => {
            let alias = string(block.body(), "alias").ok().flatten();
            let key = alias.map_or_else(|| (*local).to_owned(), |a| format!("{local}.{a}"));
            out.declare("provider configuration", key, at);
        }
        ("variable", [name]) => out.declare("variable", *name, at),
        ("output", [name]) => out.declare("output", *name, at),
        ("module", [name]) => out.declare("module call", *name, at),
        ("check", [name]) => out.declare("check", *name, at),
        ("locals", []) => {
            for attr in block.body().attributes() {
                out.declare("local value", attr.key(), at);
            }
        }
        ("terraform", []) => {
            for _ in block
                .body()
                .blocks()
                .filter(|b| b.identifier() == "required_providers")
            {
                out.declare("required providers configuration", "", at);
            }
        }
        _ => {}
    }
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
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).unwrap_or(text).matches('\n').count() + 1
}

/// Parses the native syntax as the clients do: an object constructor
/// that gives a key twice is an expression the clients evaluate later
/// (`init` reads past it), where the parser refuses it outright; each
/// repeated key is renamed in place (`key` becomes `"key#2"`, on the same
/// line) until the text parses. Returns the text parsed and its body.
pub(super) fn parse_native(
    text: &str,
    name: &str,
) -> anyhow::Result<(String, hcl::edit::structure::Body)> {
    let mut text = text.to_owned();
    for n in 2.. {
        let error = match text.parse::<hcl::edit::structure::Body>() {
            Ok(body) => return Ok((text, body)),
            Err(e) => e,
        };
        let at = error.location().offset();
        let repeated = error.message().contains("redefined object key");
        let key_end = text
            .get(at..)
            .and_then(|rest| rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')))
            .map(|len| at + len);
        match key_end {
            Some(end) if repeated && end > at && n < 10_000 => {
                let key = text[at..end].to_owned();
                text.replace_range(at..end, &format!("\"{key}#{n}\""));
            }
            Some(end) if repeated && text[at..].starts_with('"') && n < 10_000 => {
                let close = text[at + 1..].find('"').map(|i| at + 1 + i);
                let Some(close) = close.filter(|_| end == at) else {
                    bail!("{name} is not valid HCL: {error}");
                };
                text.insert_str(close, &format!("#{n}"));
            }
            _ => bail!("{name} is not valid HCL: {error}"),
        }
    }
    unreachable!("the loop returns")
}

/// Reads the native syntax; `name` names the file in messages.
pub fn from_native(text: &str, name: &str) -> anyhow::Result<FileParts> {
    let (text, edit) = parse_native(text, name)?;
    let text = text.as_str();
    let lines: Vec<usize> = edit
        .blocks()
        .map(|b| b.span().map_or(0, |r| line_of(text, r.start)))
        .collect();
    let body: Body = edit.into();
    let mut out = FileParts::default();
    for (block, line) in body.blocks().zip(lines) {
        let labels: Vec<&str> = block.labels().iter().map(hcl::BlockLabel::as_str).collect();
        declare_block(block, &labels, &format!("{name}:{line}"), &mut out);
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
            ("variable", [variable]) => {
                let expr = |key: &str| {
                    (block.body().attributes())
                        .find(|a| a.key() == key)
                        .map(|a| a.expr().clone())
                };
                out.variables.push(Variable {
                    name: (*variable).to_owned(),
                    ty: expr("type"),
                    default: expr("default"),
                    at: format!("{name}:{line}"),
                });
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
pub(super) fn string(body: &Body, key: &str) -> anyhow::Result<Option<String>> {
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
                        out.declare("required providers configuration", "", name);
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
                            let alias = json_string(b, "alias")?;
                            let key = alias
                                .as_ref()
                                .map_or_else(|| local.clone(), |a| format!("{local}.{a}"));
                            out.declare("provider configuration", key, name);
                            out.providers.push(ProviderBlock {
                                local: local.clone(),
                                alias,
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
                                    out.declare(
                                        format!("{mode} {kind:?}"),
                                        format!("{kind}.{label}"),
                                        name,
                                    );
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
                            out.declare("module call", call.clone(), name);
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
            what @ ("variable" | "output" | "check" | "locals") => {
                for by_name in each_object(value) {
                    for (key, body) in by_name {
                        // A `locals` object's keys are its values' names;
                        // the others' are their blocks' labels, each given
                        // once per object in an array of blocks.
                        let times = if what == "locals" {
                            1
                        } else {
                            each_object(body).len().max(1)
                        };
                        let what = if what == "locals" {
                            "local value"
                        } else {
                            what
                        };
                        for _ in 0..times {
                            out.declare(what, key.clone(), name);
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

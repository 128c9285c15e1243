//! A module's interface, as its page shows it: its input variables (type,
//! default, description, whether required and sensitive) and its outputs
//! (description, sensitive), read from the files its client reads for it
//! ([`super::files`]), in the native or the JSON syntax. An override file
//! changes what its variable or output says, as the clients merge it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::anyhow;
use hcl::{Body, Expression};
use serde::Serialize;
use serde_json::Value;

use super::files::module_files;
use super::fs::ConfigFs;
use crate::address::Product;

/// An input variable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Input {
    /// Its name.
    pub name: String,
    /// Its type constraint as written, when given.
    pub kind: Option<String>,
    /// Its default as written, when given.
    pub default: Option<String>,
    /// Its description.
    pub description: String,
    /// Whether a caller must set it (no default).
    pub required: bool,
    /// Whether it is marked sensitive.
    pub sensitive: bool,
}

/// An output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Output {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Whether it is marked sensitive.
    pub sensitive: bool,
}

/// A module's inputs and outputs, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Interface {
    /// Input variables, by name.
    pub inputs: Vec<Input>,
    /// Outputs, by name.
    pub outputs: Vec<Output>,
}

/// The interface of the module in `dir` of `fs`, as `client` reads it.
pub fn read_interface(fs: &dyn ConfigFs, dir: &Path, client: Product) -> anyhow::Result<Interface> {
    let files = module_files(fs, dir, client)?;
    let mut inputs: BTreeMap<String, Input> = BTreeMap::new();
    let mut outputs: BTreeMap<String, Output> = BTreeMap::new();
    for (path, overriding) in
        (files.primary.iter().map(|p| (p, false))).chain(files.overrides.iter().map(|p| (p, true)))
    {
        let name = path.display().to_string();
        let text = fs.read(path)?;
        let (ins, outs) = if name.ends_with(".json") {
            let value: Value = serde_json::from_str(&text)
                .map_err(|e| anyhow!("{name} is not valid JSON configuration: {e}"))?;
            from_json(&value)
        } else {
            let body: Body =
                hcl::parse(&text).map_err(|e| anyhow!("{name} is not valid HCL: {e}"))?;
            from_native(&body)
        };
        for input in ins {
            match inputs.get_mut(&input.name) {
                Some(known) if overriding => merge_input(known, input),
                _ => {
                    inputs.insert(input.name.clone(), input);
                }
            }
        }
        for output in outs {
            match outputs.get_mut(&output.name) {
                Some(known) if overriding => {
                    if !output.description.is_empty() {
                        known.description = output.description;
                    }
                    known.sensitive |= output.sensitive;
                }
                _ => {
                    outputs.insert(output.name.clone(), output);
                }
            }
        }
    }
    Ok(Interface {
        inputs: inputs.into_values().collect(),
        outputs: outputs.into_values().collect(),
    })
}

/// An override's variable block changes only what it sets.
fn merge_input(known: &mut Input, over: Input) {
    if over.kind.is_some() {
        known.kind = over.kind;
    }
    if over.default.is_some() {
        known.default = over.default;
        known.required = false;
    }
    if !over.description.is_empty() {
        known.description = over.description;
    }
    known.sensitive |= over.sensitive;
}

fn from_native(body: &Body) -> (Vec<Input>, Vec<Output>) {
    fn attr<'b>(b: &'b Body, key: &str) -> Option<&'b Expression> {
        b.attributes()
            .find(|a| a.key() == key)
            .map(hcl::Attribute::expr)
    }
    let text = |e: Option<&Expression>| match e {
        Some(Expression::String(s)) => s.clone(),
        _ => String::new(),
    };
    let flag = |e: Option<&Expression>| matches!(e, Some(Expression::Bool(true)));
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    for block in body.blocks() {
        let [label] = block.labels() else { continue };
        let b = block.body();
        match block.identifier() {
            "variable" => {
                let default = attr(b, "default").map(ToString::to_string);
                inputs.push(Input {
                    name: label.as_str().to_owned(),
                    kind: attr(b, "type").map(ToString::to_string),
                    required: default.is_none(),
                    default,
                    description: text(attr(b, "description")),
                    sensitive: flag(attr(b, "sensitive")),
                });
            }
            "output" => outputs.push(Output {
                name: label.as_str().to_owned(),
                description: text(attr(b, "description")),
                sensitive: flag(attr(b, "sensitive")),
            }),
            _ => {}
        }
    }
    (inputs, outputs)
}

fn from_json(value: &Value) -> (Vec<Input>, Vec<Output>) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let flag = |v: Option<&Value>| v.and_then(Value::as_bool).unwrap_or(false);
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    // Each block type's value is an object of labels, or an array of them.
    let labelled = |kind: &str| -> Vec<(String, Value)> {
        let objects = match value.get(kind) {
            Some(Value::Object(o)) => vec![o.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(|v| v.as_object().cloned()).collect(),
            _ => Vec::new(),
        };
        objects
            .into_iter()
            .flat_map(IntoIterator::into_iter)
            .collect()
    };
    for (name, v) in labelled("variable") {
        let default = v.get("default").map(ToString::to_string);
        inputs.push(Input {
            name,
            kind: v
                .get("type")
                .map(|t| t.as_str().map_or_else(|| t.to_string(), str::to_owned)),
            required: default.is_none(),
            default,
            description: text(v.get("description")),
            sensitive: flag(v.get("sensitive")),
        });
    }
    for (name, v) in labelled("output") {
        outputs.push(Output {
            name,
            description: text(v.get("description")),
            sensitive: flag(v.get("sensitive")),
        });
    }
    (inputs, outputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module_source::configuration::fs::Package;

    #[test]
    fn inputs_and_outputs_are_read_from_both_syntaxes_and_overrides_merge() {
        let package = Package::of(&[
            (
                "variables.tf",
                "variable \"name\" {\n  type = string\n  description = \"What to call it\"\n}\nvariable \"size\" {\n  type = number\n  default = 3\n}\nvariable \"secret\" {\n  sensitive = true\n  default = null\n}\n",
            ),
            ("outputs.tf.json", r#"{"output": {"id": {"value": "x", "description": "The id", "sensitive": true}}, "variable": {"tags": {"type": "map(string)", "default": {}}}}"#),
            ("override.tf", "variable \"size\" {\n  description = \"How many\"\n}\n"),
            ("ignored.tofu", "variable \"tofu_only\" {}\n"),
        ]);
        let interface = read_interface(&package, Path::new(""), Product::Terraform).unwrap();
        let names: Vec<&str> = interface.inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["name", "secret", "size", "tags"]);
        let name = &interface.inputs[0];
        assert!(name.required && name.kind.as_deref() == Some("string"));
        assert_eq!(name.description, "What to call it");
        let secret = &interface.inputs[1];
        assert!(
            secret.sensitive && !secret.required,
            "a null default is a default"
        );
        let size = &interface.inputs[2];
        assert_eq!(size.default.as_deref(), Some("3"));
        assert_eq!(
            size.description, "How many",
            "the override adds a description"
        );
        assert_eq!(interface.inputs[3].kind.as_deref(), Some("map(string)"));
        assert_eq!(interface.outputs.len(), 1);
        assert!(interface.outputs[0].sensitive && interface.outputs[0].description == "The id");
        let tofu = read_interface(&package, Path::new(""), Product::Tofu).unwrap();
        assert!(tofu.inputs.iter().any(|i| i.name == "tofu_only"));
    }
}

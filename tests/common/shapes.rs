//! The registry answers of `tests/fixtures/registries/`: one directory per
//! registry shape, each file a template the fake origin fills in (the
//! placeholders are described in that directory's README).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

/// Values a template's placeholders stand for.
pub type Vars = BTreeMap<String, Value>;

/// The lists a template repeats over, given the variables bound so far:
/// `version` (the versions), `os` and `platform` (the platforms of the
/// bound version), `ascii_armor` (the listed keys).
pub trait Lists {
    /// One set of bindings per item of the list that `trigger` starts, or
    /// `None` when `trigger` starts no list.
    fn list(&self, trigger: &str, bound: &Vars) -> Option<Vec<Vars>>;
}

/// No repetitions: for documents that list nothing.
pub struct NoLists;

impl Lists for NoLists {
    fn list(&self, _: &str, _: &Vars) -> Option<Vec<Vars>> {
        None
    }
}

/// The placeholders that start a repetition.
const TRIGGERS: [&str; 4] = ["version", "os", "platform", "ascii_armor"];

/// One registry's shapes: the template of each answer it has.
#[derive(Clone, Debug)]
pub struct Shape {
    /// The directory's name, e.g. `terraform-registry`.
    pub name: String,
    files: BTreeMap<String, String>,
}

/// The directory that holds the shapes.
pub fn shapes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/registries")
}

/// Every shape in the corpus, by name.
pub fn all_shapes() -> Vec<Shape> {
    let mut names: Vec<String> = std::fs::read_dir(shapes_dir())
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            e.file_type()
                .unwrap()
                .is_dir()
                .then(|| e.file_name().into_string().unwrap())
        })
        .collect();
    names.sort();
    names.iter().map(|n| Shape::load(n)).collect()
}

impl Shape {
    /// Loads `tests/fixtures/registries/<name>/`. Every file must open with
    /// its `#` line saying where the shape comes from.
    pub fn load(name: &str) -> Shape {
        let dir = shapes_dir().join(name);
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
            assert!(
                first.starts_with("# ") && first.len() > 20,
                "{} must open with a line saying where its shape comes from",
                path.display()
            );
            let file = path.file_name().unwrap().to_str().unwrap().to_owned();
            files.insert(file, rest.to_owned());
        }
        Shape {
            name: name.to_owned(),
            files,
        }
    }

    /// The template of `file`, this shape's or else the default shape's.
    fn template(&self, file: &str) -> String {
        if let Some(t) = self.files.get(file) {
            return t.clone();
        }
        let default = Shape::load("terraform-registry");
        default
            .files
            .get(file)
            .unwrap_or_else(|| panic!("the default shape has no {file}"))
            .clone()
    }

    /// Whether this shape has its own `file`.
    pub fn has(&self, file: &str) -> bool {
        self.files.contains_key(file)
    }

    /// A JSON answer: the template of `file` filled in.
    pub fn json(&self, file: &str, vars: &Vars, lists: &dyn Lists) -> Value {
        let template: Value = serde_json::from_str(&self.template(file))
            .unwrap_or_else(|e| panic!("{}/{file} is not JSON: {e}", self.name));
        render(&template, vars, lists)
    }

    /// An HTTP answer (`module-download.http`): status, headers and body,
    /// with the placeholders filled in.
    pub fn http(&self, file: &str, vars: &Vars) -> (u16, Vec<(String, String)>, String) {
        let text = substitute(&self.template(file), vars);
        let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines.next().unwrap().trim().parse().unwrap();
        let headers = lines
            .map(|l| {
                let (name, value) = l.split_once(':').unwrap();
                (name.trim().to_owned(), value.trim().to_owned())
            })
            .collect();
        (status, headers, body.to_owned())
    }
}

/// Fills in a template: placeholders in strings, and repetitions.
fn render(template: &Value, vars: &Vars, lists: &dyn Lists) -> Value {
    match template {
        Value::String(s) => {
            // A whole-string placeholder takes its value's type.
            if let Some(name) = s.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
                if let Some(v) = vars.get(name) {
                    return v.clone();
                }
            }
            Value::String(substitute(s, vars))
        }
        Value::Array(items) if items.len() == 1 => {
            if let Some(each) = repetition(&items[0], vars, lists) {
                return Value::Array(
                    each.iter()
                        .map(|bound| render(&items[0], bound, lists))
                        .collect(),
                );
            }
            Value::Array(vec![render(&items[0], vars, lists)])
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| render(i, vars, lists)).collect()),
        Value::Object(map) if map.len() == 1 => {
            let (key, value) = map.iter().next().unwrap();
            if let Some(each) = repetition(&Value::String(key.clone()), vars, lists) {
                return Value::Object(
                    each.iter()
                        .map(|bound| (substitute(key, bound), render(value, bound, lists)))
                        .collect(),
                );
            }
            Value::Object(
                [(substitute(key, vars), render(value, vars, lists))]
                    .into_iter()
                    .collect(),
            )
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (substitute(k, vars), render(v, vars, lists)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The bindings to repeat `element` with: when it mentions (outside the
/// lists it holds) a trigger not bound yet, one set per item of that list.
fn repetition(element: &Value, vars: &Vars, lists: &dyn Lists) -> Option<Vec<Vars>> {
    let text = shallow_text(element);
    let trigger = TRIGGERS
        .iter()
        .find(|t| !vars.contains_key(**t) && text.contains(&format!("{{{{{t}}}}}")))?;
    let items = lists.list(trigger, vars)?;
    Some(
        items
            .into_iter()
            .map(|item| {
                let mut bound = vars.clone();
                bound.extend(item);
                bound
            })
            .collect(),
    )
}

/// The strings of a value, leaving out those inside the lists it holds.
fn shallow_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k} {}", shallow_text(v)))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Replaces every `{{name}}` whose name is bound.
fn substitute(text: &str, vars: &Vars) -> String {
    let mut out = text.to_owned();
    for (name, value) in vars {
        let with = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("{{{{{name}}}}}"), &with);
    }
    out
}

/// Bindings from pairs of strings.
pub fn vars<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>) -> Vars {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect()
}

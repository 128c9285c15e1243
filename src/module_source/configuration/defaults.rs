//! Whether a variable's `default` conforms to its `type`, as the clients
//! check when they load a configuration (`init` refuses "Invalid default
//! value for variable"): a list or a map where a string is required, an
//! object where a list is, a string that is not a number or a bool where
//! one is, an object lacking a required attribute. Only literal values
//! are judged; anything else passes.

use hcl::{Expression, ObjectKey};

/// Why `value` does not conform to the type constraint `ty`, if it does
/// not.
pub fn mismatch(ty: &Expression, value: &Expression) -> Option<String> {
    if matches!(value, Expression::Null) {
        return None;
    }
    match ty {
        Expression::Variable(name) => primitive(name.as_str(), value),
        Expression::FuncCall(call) => {
            let arg = call.args.first()?;
            match call.name.name.as_str() {
                "list" | "set" => match value {
                    Expression::Array(items) => items.iter().find_map(|i| mismatch(arg, i)),
                    other => not_a("a list", other),
                },
                "map" => match value {
                    Expression::Object(items) => items.values().find_map(|v| mismatch(arg, v)),
                    other => not_a("a map", other),
                },
                "tuple" => match (arg, value) {
                    (Expression::Array(types), Expression::Array(items)) => {
                        if types.len() == items.len() {
                            types.iter().zip(items).find_map(|(t, i)| mismatch(t, i))
                        } else {
                            Some(format!("a tuple of {} elements is required", types.len()))
                        }
                    }
                    (_, Expression::Array(_)) => None,
                    (_, other) => not_a("a tuple", other),
                },
                "object" => object(arg, value),
                "optional" => mismatch(arg, value),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A primitive type (`string`, `number`, `bool`; `any` takes anything).
fn primitive(name: &str, value: &Expression) -> Option<String> {
    let wanted = match name {
        "string" => "a string",
        "number" => "a number",
        "bool" => "a bool",
        _ => return None,
    };
    match value {
        Expression::Array(_) | Expression::Object(_) => not_a(wanted, value),
        Expression::String(s) if name == "number" && s.trim().parse::<f64>().is_err() => {
            Some(format!("a number is required, not {s:?}"))
        }
        Expression::String(s) if name == "bool" && s != "true" && s != "false" => {
            Some(format!("a bool is required, not {s:?}"))
        }
        Expression::Number(_) if name == "bool" => Some("a bool is required, not a number".into()),
        Expression::Bool(_) if name == "number" => Some("a number is required, not a bool".into()),
        _ => None,
    }
}

fn object(ty: &Expression, value: &Expression) -> Option<String> {
    let Expression::Object(attributes) = ty else {
        return None;
    };
    let Expression::Object(given) = value else {
        return not_a("an object", value);
    };
    let name = |key: &ObjectKey| match key {
        ObjectKey::Identifier(i) => Some(i.as_str().to_owned()),
        ObjectKey::Expression(Expression::String(s)) => Some(s.clone()),
        _ => None,
    };
    for (key, attribute) in attributes {
        let Some(key) = name(key) else { continue };
        let found = given
            .iter()
            .find(|(k, _)| name(k).as_deref() == Some(key.as_str()));
        let why = match found {
            Some((_, v)) => mismatch(attribute, v).map(|why| format!("attribute {key:?}: {why}")),
            None if is_optional(attribute) => None,
            None => Some(format!("attribute {key:?} is required")),
        };
        if why.is_some() {
            return why;
        }
    }
    None
}

fn is_optional(ty: &Expression) -> bool {
    matches!(ty, Expression::FuncCall(c) if c.name.name.as_str() == "optional")
}

fn not_a(wanted: &str, value: &Expression) -> Option<String> {
    let given = match value {
        Expression::Array(_) => "a list",
        Expression::Object(_) => "an object",
        Expression::String(_) => "a string",
        Expression::Number(_) => "a number",
        Expression::Bool(_) => "a bool",
        // Not a literal: not judged.
        _ => return None,
    };
    Some(format!("{wanted} is required, not {given}"))
}

#[cfg(test)]
mod tests {
    use super::mismatch;

    fn check(ty: &str, value: &str) -> Option<String> {
        let body: hcl::Body = hcl::from_str(&format!("t = {ty}\nv = {value}\n")).unwrap();
        let get = |k: &str| {
            body.attributes()
                .find(|a| a.key() == k)
                .unwrap()
                .expr()
                .clone()
        };
        mismatch(&get("t"), &get("v"))
    }

    #[test]
    fn defaults_are_judged_as_the_clients_convert_them() {
        // The two shapes real configurations got wrong.
        assert!(check("list(string)", "[{ name = \"tls\" }]")
            .unwrap()
            .contains("a string is required, not an object"));
        assert!(check("map(string)", "{ a = [\"x\"] }")
            .unwrap()
            .contains("a string is required, not a list"));
        // What the clients convert.
        assert_eq!(check("string", "12"), None);
        assert_eq!(check("string", "true"), None);
        assert_eq!(check("number", "\"12\""), None);
        assert_eq!(check("bool", "\"false\""), None);
        assert_eq!(check("any", "{ a = [1] }"), None);
        assert_eq!(check("list(any)", "[1, \"a\"]"), None);
        assert_eq!(check("set(string)", "[]"), None);
        assert_eq!(check("map(string)", "{}"), None);
        assert_eq!(check("list(string)", "null"), None);
        assert_eq!(
            check(
                "object({ a = string, b = optional(number) })",
                "{ a = \"x\" }"
            ),
            None
        );
        assert_eq!(
            check("object({ a = string })", "{ a = \"x\", extra = 1 }"),
            None
        );
        assert_eq!(check("tuple([string, number])", "[\"a\", 1]"), None);
        // What they refuse.
        assert!(check("number", "\"twelve\"").is_some());
        assert!(check("bool", "\"yes\"").is_some());
        assert!(check("list(string)", "{}").is_some());
        assert!(check("map(number)", "[]").is_some());
        assert!(check("object({ a = string })", "{ b = \"x\" }")
            .unwrap()
            .contains("\"a\" is required"));
        assert!(check("tuple([string])", "[\"a\", \"b\"]").is_some());
    }
}

//! Named, typed, documented parameters of policies and workloads.
//!
//! Each policy and workload declares its parameters once as a list of [`ParamSpec`]; the scenario
//! loader checks `[host.params]` / `[vm.params]` against that list (unknown keys and wrong types
//! are errors) and fills in defaults, and `vcpusim list` prints the same list.

use crate::time::{format_duration, parse_duration, Nanos};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamKind {
    /// A duration string with a unit ("30ms").
    Duration,
    /// A non-negative integer.
    Int,
    /// A real number.
    Float,
    Bool,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Duration(Nanos),
    Int(u64),
    Float(f64),
    Bool(bool),
    Choice(String),
}

impl ParamValue {
    pub fn display(&self) -> String {
        match self {
            ParamValue::Duration(ns) => format_duration(*ns),
            ParamValue::Int(v) => v.to_string(),
            ParamValue::Float(v) => v.to_string(),
            ParamValue::Bool(v) => v.to_string(),
            ParamValue::Choice(s) => s.clone(),
        }
    }
}

/// One parameter: its name, type, default, inclusive bounds and meaning (with its source).
#[derive(Clone, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: ParamValue,
    /// Inclusive lower / upper bound for Int, Float and Duration (as f64 in the kind's unit: ns).
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub doc: &'static str,
}

impl ParamSpec {
    pub fn duration(name: &'static str, default: Nanos, doc: &'static str) -> Self {
        ParamSpec { name, kind: ParamKind::Duration, default: ParamValue::Duration(default), min: None, max: None, doc }
    }
    pub fn int(name: &'static str, default: u64, doc: &'static str) -> Self {
        ParamSpec { name, kind: ParamKind::Int, default: ParamValue::Int(default), min: None, max: None, doc }
    }
    pub fn float(name: &'static str, default: f64, doc: &'static str) -> Self {
        ParamSpec { name, kind: ParamKind::Float, default: ParamValue::Float(default), min: None, max: None, doc }
    }
    pub fn boolean(name: &'static str, default: bool, doc: &'static str) -> Self {
        ParamSpec { name, kind: ParamKind::Bool, default: ParamValue::Bool(default), min: None, max: None, doc }
    }
    pub fn choice(name: &'static str, choices: &'static [&'static str], default: &'static str, doc: &'static str) -> Self {
        ParamSpec { name, kind: ParamKind::Choice(choices), default: ParamValue::Choice(default.to_string()), min: None, max: None, doc }
    }
    /// Inclusive bounds (ns for durations).
    pub fn range(mut self, min: f64, max: f64) -> Self {
        self.min = Some(min);
        self.max = Some(max);
        self
    }
    pub fn at_least(mut self, min: f64) -> Self {
        self.min = Some(min);
        self
    }

    pub fn expected(&self) -> String {
        let base = match self.kind {
            ParamKind::Duration => "a duration with a unit such as \"30ms\"".to_string(),
            ParamKind::Int => "a non-negative integer".to_string(),
            ParamKind::Float => "a number".to_string(),
            ParamKind::Bool => "true or false".to_string(),
            ParamKind::Choice(c) => format!("one of {}", c.join(", ")),
        };
        let show = |v: f64| match self.kind {
            ParamKind::Duration => format_duration(v as Nanos),
            _ => v.to_string(),
        };
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => format!("{base} between {} and {}", show(lo), show(hi)),
            (Some(lo), None) => format!("{base} of at least {}", show(lo)),
            (None, Some(hi)) => format!("{base} of at most {}", show(hi)),
            (None, None) => base,
        }
    }

    /// Convert a TOML value to this parameter's type, or say what was expected.
    pub fn parse(&self, value: &toml::Value) -> Result<ParamValue, String> {
        let bad = || format!("expected {}, got {}", self.expected(), show_toml(value));
        let v = match (self.kind, value) {
            (ParamKind::Duration, toml::Value::String(s)) => ParamValue::Duration(parse_duration(s).map_err(|e| e.to_string())?),
            (ParamKind::Int, toml::Value::Integer(i)) if *i >= 0 => ParamValue::Int(*i as u64),
            (ParamKind::Float, toml::Value::Float(f)) => ParamValue::Float(*f),
            (ParamKind::Float, toml::Value::Integer(i)) => ParamValue::Float(*i as f64),
            (ParamKind::Bool, toml::Value::Boolean(b)) => ParamValue::Bool(*b),
            (ParamKind::Choice(choices), toml::Value::String(s)) if choices.contains(&s.as_str()) => ParamValue::Choice(s.clone()),
            (ParamKind::Choice(choices), toml::Value::Integer(_) | toml::Value::Float(_)) => {
                // `xen = 4.4` (or `--set host.params.xen=4.4`) reads as a TOML number: say so,
                // rather than "expected one of ... 4.4 ..., got 4.4". (3.10 would read as 3.1.)
                let shown = show_toml(value);
                let example = if choices.contains(&shown.as_str()) { shown.clone() } else { self.default.display() };
                return Err(format!(
                    "expected one of {} as a string, got the number {shown}; the choices are strings: \
                     {name} = \"{example}\" (with --set, quote the value inside the shell's quotes: '...{name}=\"{example}\"')",
                    choices.join(", "),
                    name = self.name
                ));
            }
            _ => return Err(bad()),
        };
        let numeric = match &v {
            ParamValue::Duration(ns) => Some(*ns as f64),
            ParamValue::Int(i) => Some(*i as f64),
            ParamValue::Float(f) => Some(*f),
            _ => None,
        };
        if let Some(x) = numeric {
            if self.min.is_some_and(|lo| x < lo) || self.max.is_some_and(|hi| x > hi) {
                return Err(bad());
            }
        }
        Ok(v)
    }
}

pub fn show_toml(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// Parameter values after validation, defaults filled in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    values: BTreeMap<String, ParamValue>,
}

impl Params {
    /// All defaults of a spec list.
    pub fn defaults(specs: &[ParamSpec]) -> Self {
        let values = specs.iter().map(|s| (s.name.to_string(), s.default.clone())).collect();
        Params { values }
    }
    pub fn set(&mut self, name: &str, value: ParamValue) {
        self.values.insert(name.to_string(), value);
    }
    pub fn iter(&self) -> impl Iterator<Item = (&String, &ParamValue)> {
        self.values.iter()
    }
    /// The value of `name`, if set.
    pub fn value(&self, name: &str) -> Option<&ParamValue> {
        self.values.get(name)
    }
    fn get(&self, name: &str) -> &ParamValue {
        self.value(name).unwrap_or_else(|| panic!("parameter {name:?} is not declared by its spec list"))
    }
    pub fn duration(&self, name: &str) -> Nanos {
        match self.get(name) {
            ParamValue::Duration(v) => *v,
            other => panic!("parameter {name:?} is {other:?}, not a duration"),
        }
    }
    pub fn int(&self, name: &str) -> u64 {
        match self.get(name) {
            ParamValue::Int(v) => *v,
            other => panic!("parameter {name:?} is {other:?}, not an integer"),
        }
    }
    pub fn float(&self, name: &str) -> f64 {
        match self.get(name) {
            ParamValue::Float(v) => *v,
            other => panic!("parameter {name:?} is {other:?}, not a number"),
        }
    }
    pub fn boolean(&self, name: &str) -> bool {
        match self.get(name) {
            ParamValue::Bool(v) => *v,
            other => panic!("parameter {name:?} is {other:?}, not a bool"),
        }
    }
    pub fn choice(&self, name: &str) -> &str {
        match self.get(name) {
            ParamValue::Choice(v) => v,
            other => panic!("parameter {name:?} is {other:?}, not a choice"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_bounds() {
        let spec = ParamSpec::duration("slice", 30_000_000, "x").range(1e6, 1e9);
        assert_eq!(spec.parse(&toml::Value::String("5ms".into())), Ok(ParamValue::Duration(5_000_000)));
        let err = spec.parse(&toml::Value::String("0ms".into())).unwrap_err();
        assert!(err.contains("between 1ms and 1s"), "{err}");
        let err = spec.parse(&toml::Value::Integer(5)).unwrap_err();
        assert!(err.contains("expected a duration"), "{err}");
        let choice = ParamSpec::choice("mode", &["a", "b"], "a", "x");
        assert!(choice.parse(&toml::Value::String("c".into())).unwrap_err().contains("one of a, b"));
    }
}

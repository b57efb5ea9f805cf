//! Walking a TOML table while remembering where it is, so every error names the exact key
//! (`vm[1].params.spin`) together with the bad value and what was expected.

use super::suggest::unknown_key_message;
use crate::error::SimError;
use crate::hardware::cpumask::{parse_cpulist, CpuMask};
use crate::params::{show_toml, ParamSpec, ParamValue, Params};
use crate::time::{parse_duration, Nanos};
use toml::{Table, Value};

/// Join a key onto a path: `host` + `pcpus` -> `host.pcpus`; the root path is empty.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A scenario error at `key` of file `file`.
pub fn error(file: &str, key: &str, message: impl Into<String>) -> SimError {
    SimError::Scenario { file: file.to_string(), key: key.to_string(), message: message.into() }
}

/// Bounds at or above this are a representation limit rather than a rule of the model, so
/// messages leave them out unless the value actually exceeds them.
const NO_PRACTICAL_MAX: i64 = u32::MAX as i64;

/// What an integer key accepts, in words: `an integer of at least 1`.
pub fn int_expectation(min: i64, max: i64) -> String {
    match (min, max) {
        (0, hi) if hi >= NO_PRACTICAL_MAX => "a non-negative integer".to_string(),
        (lo, hi) if hi >= NO_PRACTICAL_MAX => format!("an integer of at least {lo}"),
        (lo, hi) => format!("an integer between {lo} and {hi}"),
    }
}

/// Check an integer value against inclusive bounds; `key` is the full path for the error.
pub fn int_value(file: &str, key: &str, value: &Value, min: i64, max: i64) -> Result<i64, SimError> {
    match value {
        Value::Integer(i) if (min..=max).contains(i) => Ok(*i),
        Value::Integer(i) if *i > max => Err(error(file, key, format!("expected an integer of at most {max}, got {i}"))),
        other => Err(error(file, key, format!("expected {}, got {}", int_expectation(min, max), show_toml(other)))),
    }
}

/// A duration string ("5us"), optionally required to be more than zero.
pub fn duration_value(file: &str, key: &str, value: &Value, positive: bool) -> Result<Nanos, SimError> {
    let expected =
        if positive { "a duration greater than 0 with a unit, such as \"30ms\"" } else { "a duration with a unit, such as \"30ms\"" };
    let Value::String(text) = value else {
        return Err(error(file, key, format!("expected {expected}, got {}", show_toml(value))));
    };
    let ns = parse_duration(text).map_err(|e| error(file, key, e))?;
    if positive && ns == 0 {
        return Err(error(file, key, format!("expected {expected}, got {text:?}")));
    }
    Ok(ns)
}

/// Units a memory size may carry, with their size in MiB. Decimal and binary spellings mean the
/// same (binary) size, as xl counts `memory=` in MiB and Xen reports node memory in pages.
const MEMORY_UNITS: &[(&str, u64)] =
    &[("MiB", 1), ("MB", 1), ("M", 1), ("GiB", 1024), ("GB", 1024), ("G", 1024), ("TiB", 1 << 20), ("TB", 1 << 20), ("T", 1 << 20)];

/// The largest memory size accepted, in MiB (1 EiB: far above any host, safe from overflow).
const MAX_MEMORY_MIB: u64 = 1 << 40;

/// A memory size string with a unit (`"4GB"`, `"512MB"`, `"1TiB"`), in MiB; at least 1 MiB.
pub fn memory_value(file: &str, key: &str, value: &Value) -> Result<u64, SimError> {
    let expected = "a memory size with a unit, such as \"4GB\" or \"512MB\" (MB, GB, TB: binary, as xl counts)";
    let Value::String(text) = value else {
        return Err(error(file, key, format!("expected {expected}, got {}", show_toml(value))));
    };
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = (&t[..split], t[split..].trim());
    let factor = MEMORY_UNITS.iter().find(|(u, _)| *u == unit).map(|(_, f)| *f);
    match (digits.parse::<u64>(), factor) {
        (Ok(n), Some(f)) if n > 0 && n.checked_mul(f).is_some_and(|m| m <= MAX_MEMORY_MIB) => Ok(n * f),
        (Ok(n), Some(_)) if n > 0 => Err(error(file, key, format!("expected at most 1048576TB, got {text:?}"))),
        _ => Err(error(file, key, format!("expected {expected}, more than 0; got {text:?}"))),
    }
}

/// A cpulist string (`"0-3,8"`) written at the full key path `key` in `section`'s file.
pub(super) fn cpulist(section: &Section, key: &str, value: &Value, npcpus: usize) -> Result<CpuMask, SimError> {
    match value {
        Value::String(text) => parse_cpulist(text, npcpus).map_err(|m| error(section.file, key, m)),
        other => Err(error(
            section.file,
            key,
            format!("expected a cpulist string such as \"0-3,8\" (pCPU numbers and inclusive ranges), got {}", show_toml(other)),
        )),
    }
}

/// Letters, digits, `-`, `_` and `.`: safe in file names, CSV cells and trace track names (VM
/// and pool names).
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A table of the scenario and its key path.
#[derive(Clone)]
pub struct Section<'a> {
    pub file: &'a str,
    pub path: String,
    pub table: &'a Table,
}

impl<'a> Section<'a> {
    pub fn new(file: &'a str, path: impl Into<String>, table: &'a Table) -> Self {
        Section { file, path: path.into(), table }
    }

    /// The full path of one of this table's keys.
    pub fn key(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// An error about one of this table's keys.
    pub fn error_at(&self, key: &str, message: impl Into<String>) -> SimError {
        error(self.file, &self.key(key), message)
    }

    /// An error about the table as a whole.
    pub fn error(&self, message: impl Into<String>) -> SimError {
        error(self.file, &self.path, message)
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.table.get(key)
    }

    /// Reject every key not in `valid`, suggesting the closest valid one.
    pub fn allow_only(&self, valid: &[&str]) -> Result<(), SimError> {
        match self.table.keys().find(|k| !valid.contains(&k.as_str())) {
            Some(k) => Err(self.error_at(k, unknown_key_message(k, valid))),
            None => Ok(()),
        }
    }

    /// The value of a key that must be present; `expected` describes it for the error.
    pub fn require(&self, key: &str, expected: &str) -> Result<&'a Value, SimError> {
        self.get(key).ok_or_else(|| self.error_at(key, format!("missing; expected {expected}")))
    }

    pub fn int(&self, key: &str, min: i64, max: i64) -> Result<Option<i64>, SimError> {
        self.get(key).map(|v| int_value(self.file, &self.key(key), v, min, max)).transpose()
    }

    /// An integer that must be present.
    pub fn required_int(&self, key: &str, min: i64, max: i64) -> Result<i64, SimError> {
        let value = self.require(key, &int_expectation(min, max))?;
        int_value(self.file, &self.key(key), value, min, max)
    }

    /// A `true` / `false` key; absent is false.
    pub fn flag(&self, key: &str) -> Result<bool, SimError> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(self.error_at(key, format!("expected true or false, got {}", show_toml(other)))),
        }
    }

    /// Refuse the first of `keys` present, each given as (key, what it would set): the message
    /// is "got `<value>`, but `<why(what)>`; drop `<key>`".
    pub fn refuse(&self, keys: &[(&str, &str)], why: impl Fn(&str) -> String) -> Result<(), SimError> {
        match keys.iter().find_map(|(key, what)| self.get(key).map(|v| (key, what, v))) {
            Some((key, what, value)) => Err(self.error_at(key, format!("got {}, but {}; drop {key}", show_toml(value), why(what)))),
            None => Ok(()),
        }
    }

    pub fn string(&self, key: &str) -> Result<Option<&'a str>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.error_at(key, format!("expected a string, got {}", show_toml(other)))),
        }
    }

    /// A string that must be present; `expected` describes it for the error.
    pub fn required_string(&self, key: &str, expected: &str) -> Result<&'a str, SimError> {
        match self.require(key, expected)? {
            Value::String(s) => Ok(s),
            other => Err(self.error_at(key, format!("expected {expected}, got {}", show_toml(other)))),
        }
    }

    /// A sub-table (`[host.params]`, or an inline table); absent gives `None`.
    pub fn table(&self, key: &str) -> Result<Option<Section<'a>>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(Section::new(self.file, self.key(key), t))),
            Some(other) => Err(self.error_at(key, format!("expected a table, got {}", show_toml(other)))),
        }
    }

    pub fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, SimError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(other) => Err(self.error_at(key, format!("expected an array, got {}", show_toml(other)))),
        }
    }

    /// The value of a declared parameter, if the key is present.
    pub fn param(&self, spec: &ParamSpec) -> Result<Option<ParamValue>, SimError> {
        self.get(spec.name).map(|v| spec.parse(v).map_err(|m| self.error_at(spec.name, m))).transpose()
    }

    /// Check this table against a parameter list: unknown keys and bad values are errors,
    /// absent parameters take their defaults.
    pub fn params(&self, specs: &[ParamSpec]) -> Result<Params, SimError> {
        let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        self.allow_only(&names)?;
        let mut params = Params::defaults(specs);
        for spec in specs {
            if let Some(value) = self.param(spec)? {
                params.set(spec.name, value);
            }
        }
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn integer_errors_name_the_key_and_the_bound() {
        let t = table("pcpus = 0\nweight = 1.5");
        let s = Section::new("f.toml", "host", &t);
        let e = s.required_int("pcpus", 1, i64::MAX).unwrap_err();
        assert_eq!(e.to_string(), "f.toml: host.pcpus: expected an integer of at least 1, got 0");
        let e = s.int("weight", 1, 10).unwrap_err();
        assert_eq!(e.to_string(), "f.toml: host.weight: expected an integer between 1 and 10, got 1.5");
        let e = s.required_int("sockets", 1, 4).unwrap_err();
        assert!(e.to_string().contains("host.sockets: missing"), "{e}");
    }

    #[test]
    fn durations_need_units_and_sign() {
        let t = table("a = \"-1ms\"\nb = \"30\"\nc = \"0s\"\nd = 5");
        let s = Section::new("f", "run", &t);
        let get = |k| duration_value("f", &s.key(k), s.get(k).unwrap(), true).unwrap_err().to_string();
        assert!(get("a").contains("run.a: expected a non-negative duration"), "{}", get("a"));
        assert!(get("b").contains("run.b: \"30\" has no unit"), "{}", get("b"));
        assert!(get("c").contains("greater than 0"), "{}", get("c"));
        assert!(get("d").contains("got 5"), "{}", get("d"));
    }

    #[test]
    fn params_fill_defaults_and_reject_unknown_keys() {
        let specs = vec![ParamSpec::duration("slice", 30_000_000, "x"), ParamSpec::int("n", 3, "y")];
        let t = table("slice = \"5ms\"");
        let p = Section::new("f", "host.params", &t).params(&specs).unwrap();
        assert_eq!(p.duration("slice"), 5_000_000);
        assert_eq!(p.int("n"), 3);
        let t = table("slcie = \"5ms\"");
        let e = Section::new("f", "host.params", &t).params(&specs).unwrap_err();
        assert_eq!(e.to_string(), "f: host.params.slcie: unknown key; did you mean \"slice\"?");
    }
}

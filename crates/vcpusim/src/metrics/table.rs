//! Writing the result tables' cells: fixed precision (so the bytes are the same on any machine)
//! and metrics.csv's `vm,metric,value` rows written in place.

use std::fmt::{Display, Write};

/// A value with three decimals (`{:.3}`), written straight into a table.
pub struct F3(pub f64);

impl Display for F3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.3}", self.0)
    }
}

/// One VM's rows of metrics.csv: metric and value are anything displayable (`format_args!`,
/// [`F3`]), so the rows allocate nothing (a 1,024-pCPU host has 1,024 `pcpu_busy_ms` rows per
/// VM).
pub struct MetricRows<'a> {
    out: &'a mut String,
    /// The VM's name as a CSV field (quoted where it must be).
    vm: &'a str,
}

impl<'a> MetricRows<'a> {
    pub fn new(out: &'a mut String, vm: &'a str) -> Self {
        MetricRows { out, vm }
    }

    /// One row: `vm,metric,value`. A metric name that holds a comma, a quote or a line break (a
    /// lock class or a device named so in the scenario: `spin_wait_count[x,y]`) is quoted as RFC
    /// 4180 says, so the row keeps its three fields.
    pub fn put(&mut self, metric: impl Display, value: impl Display) {
        let metric = metric.to_string();
        writeln!(self.out, "{},{},{}", self.vm, csv_field(&metric), value).expect("writing to a String cannot fail");
    }
}

/// `s` as one CSV field: quoted, with its quotes doubled, when it holds a comma, a quote or a
/// line break (RFC 4180 section 2); as it is otherwise.
pub fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

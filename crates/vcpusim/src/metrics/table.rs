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

    /// One row: `vm,metric,value`.
    pub fn put(&mut self, metric: impl Display, value: impl Display) {
        writeln!(self.out, "{},{},{}", self.vm, metric, value).expect("writing to a String cannot fail");
    }
}

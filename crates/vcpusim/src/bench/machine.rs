//! The machine a benchmark ran on, as the report names it: the processor's model and its caches.
//!
//! The same code runs the quickstart at 11.5 M live events/s on one machine and at 5.4 M on an
//! AMD EPYC (docs/speed.md), and the per-event wall time of a 1,024-pCPU host is set by how
//! much of it the caches hold.
//! A figure without its machine cannot be compared with another, so the report carries it.
//!
//! ```text
//!   /proc/cpuinfo                         "model name : AMD EPYC"      -> cpu_model
//!   available_parallelism()               2                            -> logical_cpus
//!   /sys/devices/system/cpu/cpu0/cache/   index0 1 Data 32K            -> caches
//!                                         index2 2 Unified 512K ...
//! ```
//!
//! Linux only: elsewhere (or where a file is missing, as in some containers) a field is left
//! empty and the summary says "unknown"; nothing here can fail a benchmark.

use serde::Serialize;
use std::path::Path;

/// One cache of the first logical CPU, as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cache {
    /// 1, 2, 3.
    pub level: u32,
    /// "Data", "Instruction" or "Unified".
    pub kind: String,
    pub size_kib: u64,
}

/// What the benchmark report says of the machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// The first `model name` of /proc/cpuinfo (a virtual machine's may be generic: "AMD EPYC").
    pub cpu_model: Option<String>,
    /// Logical CPUs this process may run on.
    pub logical_cpus: Option<usize>,
    /// cpu0's caches, first level first.
    pub caches: Vec<Cache>,
    /// One line: model, CPUs, caches (`describe`).
    pub summary: String,
}

/// Where Linux describes cpu0's caches, one `indexN` folder each.
const CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";

impl Machine {
    /// This machine, as far as /proc and /sys tell.
    pub fn this() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| parse_cpu_model(&t));
        let logical_cpus = std::thread::available_parallelism().ok().map(|n| n.get());
        Machine::new(cpu_model, logical_cpus, read_caches(Path::new(CACHE_DIR)))
    }

    pub fn new(cpu_model: Option<String>, logical_cpus: Option<usize>, caches: Vec<Cache>) -> Machine {
        let summary = describe(cpu_model.as_deref(), logical_cpus, &caches);
        Machine { cpu_model, logical_cpus, caches, summary }
    }
}

/// "AMD EPYC, 2 logical CPUs, L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB".
fn describe(model: Option<&str>, cpus: Option<usize>, caches: &[Cache]) -> String {
    let mut parts = vec![model.unwrap_or("unknown processor").to_string()];
    parts.push(match cpus {
        Some(1) => "1 logical CPU".to_string(),
        Some(n) => format!("{n} logical CPUs"),
        None => "logical CPUs unknown".to_string(),
    });
    if caches.is_empty() {
        parts.push("caches unknown".to_string());
    }
    for c in caches {
        let suffix = match c.kind.as_str() {
            "Data" => "d",
            "Instruction" => "i",
            _ => "",
        };
        let size = if c.size_kib >= 1024 && c.size_kib.is_multiple_of(1024) {
            format!("{} MiB", c.size_kib / 1024)
        } else {
            format!("{} KiB", c.size_kib)
        };
        parts.push(format!("L{}{suffix} {size}", c.level));
    }
    parts.join(", ")
}

/// The first `model name` line's value (x86 and most others write it; None where absent).
fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "model name").then(|| value.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .filter(|m| !m.is_empty())
}

/// A sysfs cache size ("32K", "512K", "32768K", "1M") in KiB.
fn parse_size_kib(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits.parse().ok()?;
    match unit {
        "K" => Some(n),
        "M" => n.checked_mul(1024),
        "" => Some(n / 1024),
        _ => None,
    }
}

/// cpu0's caches from `dir` (`index0`, `index1`, ... until one is missing), first level first;
/// a folder whose files cannot be read or parsed is left out.
fn read_caches(dir: &Path) -> Vec<Cache> {
    let mut caches = Vec::new();
    for i in 0.. {
        let index = dir.join(format!("index{i}"));
        if !index.is_dir() {
            break;
        }
        let read = |name: &str| std::fs::read_to_string(index.join(name)).ok();
        let level = read("level").and_then(|t| t.trim().parse().ok());
        let kind = read("type").map(|t| t.trim().to_string());
        let size = read("size").and_then(|t| parse_size_kib(&t));
        if let (Some(level), Some(kind), Some(size_kib)) = (level, kind, size) {
            caches.push(Cache { level, kind, size_kib });
        }
    }
    caches.sort_by_key(|c| (c.level, c.kind != "Data"));
    caches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_model_name_and_not_another_key() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\nmodel name\t: AMD EPYC  7B13 64-Core\nflags\t\t: fpu\n";
        assert_eq!(parse_cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13 64-Core"));
        assert_eq!(parse_cpu_model("processor : 0\nmodel : 1\n"), None);
        assert_eq!(parse_cpu_model("model name :   \n"), None);
    }

    #[test]
    fn parses_sysfs_sizes() {
        assert_eq!(parse_size_kib("32K\n"), Some(32));
        assert_eq!(parse_size_kib("32768K"), Some(32768));
        assert_eq!(parse_size_kib("2M"), Some(2048));
        assert_eq!(parse_size_kib("4096"), Some(4));
        assert_eq!(parse_size_kib("big"), None);
        assert_eq!(parse_size_kib("3G"), None);
    }

    #[test]
    fn reads_a_cache_folder_in_level_order_and_skips_a_broken_entry() {
        let dir = std::env::temp_dir().join(format!("vcpusim-machine-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (i, level, kind, size) in
            [(0, "2", "Unified", "512K"), (1, "1", "Instruction", "32K"), (2, "1", "Data", "48K"), (3, "x", "Data", "1K")]
        {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        // index5 without index4: the walk stops at the first gap, as sysfs numbers them densely.
        std::fs::create_dir_all(dir.join("index5")).unwrap();
        let caches = read_caches(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        let got: Vec<_> = caches.iter().map(|c| (c.level, c.kind.as_str(), c.size_kib)).collect();
        assert_eq!(got, [(1, "Data", 48), (1, "Instruction", 32), (2, "Unified", 512)]);
        let m = Machine::new(Some("Some CPU".into()), Some(2), caches);
        assert_eq!(m.summary, "Some CPU, 2 logical CPUs, L1d 48 KiB, L1i 32 KiB, L2 512 KiB");
    }

    #[test]
    fn says_unknown_rather_than_nothing() {
        let m = Machine::new(None, None, vec![]);
        assert_eq!(m.summary, "unknown processor, logical CPUs unknown, caches unknown");
        let l3 = Cache { level: 3, kind: "Unified".into(), size_kib: 32768 };
        assert_eq!(Machine::new(None, Some(1), vec![l3]).summary, "unknown processor, 1 logical CPU, L3 32 MiB");
    }
}

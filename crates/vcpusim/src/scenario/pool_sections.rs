//! `[[host.pool]]` and `[[host.pool_change]]`: Xen cpupools, each with its pCPUs and its own
//! policy instance, and pCPUs moved between them at run time; each entry is read on its own, and
//! the changes are played through once the VMs are known. See "`[[host.pool]]` and
//! `[[host.pool_change]]`: Xen cpupools" in docs/scenario-format.md.

use super::bounds::MAX_POOL_PCPU_PAIRS;
use super::section::{cpulist, error, valid_name, Section};
use super::spec::{HostSpec, PoolChange, PoolSpec, VmSpec, DEFAULT_POOL};
use super::suggest::with_suggestion;
use crate::error::SimError;
use crate::hardware::cpumask::CpuMask;
use crate::hardware::topology::Topology;
use crate::hypervisor::policies;
use crate::ids::PcpuId;
use crate::params::{show_toml, Params};
use toml::Value;

/// The policy named `name`, for `section.policy` (`[host]` or a `[[host.pool]]`).
pub(super) fn policy_kind(section: &Section, name: &str) -> Result<&'static dyn policies::PolicyKind, SimError> {
    policies::find(name).map_err(|m| {
        let names: Vec<&str> = policies::registry().iter().map(|p| p.name()).collect();
        section.error_at("policy", with_suggestion(m, name, &names))
    })
}

/// `section.params` (`[host.params]` or a pool's `params`) checked against `kind`'s parameter
/// specs, defaults filled in (those that depend on another parameter by `resolve_params`).
pub(super) fn policy_params(section: &Section, kind: &dyn policies::PolicyKind) -> Result<Params, SimError> {
    let specs = kind.params();
    let table = section.table("params")?;
    let mut params = match &table {
        Some(t) => t.params(&specs)?,
        None => Params::defaults(&specs),
    };
    let given = |name: &str| table.as_ref().is_some_and(|t| t.get(name).is_some());
    kind.resolve_params(&mut params, &given).map_err(|(key, message)| match &table {
        Some(t) => t.error_at(key, message),
        None => section.error_at("params", message),
    })?;
    Ok(params)
}

/// Keys of one `[[host.pool]]` entry.
const POOL_KEYS: &[&str] = &["name", "pcpus", "policy", "params"];
/// Keys of one `[[host.pool_change]]` entry.
const POOL_CHANGE_KEYS: &[&str] = &["at", "pcpu", "to"];

/// `[[host.pool]]`: Xen cpupools. `pools[0]` is the default pool `default_pool` (`[host] policy`
/// and params), which keeps every pCPU no entry lists; the entries follow in file order. A pCPU
/// is in at most one entry, and the default pool keeps at least one (Xen's Pool-0 always does).
pub(super) fn pools(
    host: &Section,
    topology: &Topology,
    mut default_pool: PoolSpec,
    host_kind: &dyn policies::PolicyKind,
) -> Result<Vec<PoolSpec>, SimError> {
    let npcpus = topology.npcpus();
    let list = match host.get("pool") {
        None => &Vec::new(),
        Some(Value::Array(list)) => list,
        Some(Value::Table(_)) => {
            return Err(host.error_at(
                "pool",
                "expected [[host.pool]] sections (an array of tables), got a single [host.pool] table; write [[host.pool]]",
            ))
        }
        Some(other) => return Err(host.error_at("pool", format!("expected [[host.pool]] sections, got {}", show_toml(other)))),
    };
    // Before any pool is read: each pool's scheduler instance keeps state for every pCPU.
    let pairs = (list.len() as u64 + 1) * npcpus as u64;
    if pairs > MAX_POOL_PCPU_PAIRS {
        return Err(host.error_at(
            "pool",
            format!(
                "{} [[host.pool]] entries and the default pool on {npcpus} pCPUs: each pool's scheduler instance keeps \
                 state for every pCPU of the host, {pairs} (pool, pCPU) pairs; expected at most {MAX_POOL_PCPU_PAIRS} \
                 (at most {} entries on this host)",
                list.len(),
                (MAX_POOL_PCPU_PAIRS / npcpus as u64).saturating_sub(1)
            ),
        ));
    }
    let mut pools: Vec<PoolSpec> = Vec::new();
    // Which pool (index into `pools`) each pCPU was given to, to report overlaps.
    let mut owner: Vec<Option<usize>> = vec![None; npcpus];
    for (i, value) in list.iter().enumerate() {
        let path = host.key(&format!("pool[{i}]"));
        let Value::Table(table) = value else {
            return Err(error(host.file, &path, format!("expected a [[host.pool]] table with name and pcpus, got {}", show_toml(value))));
        };
        let entry = Section::new(host.file, path, table);
        entry.allow_only(POOL_KEYS)?;
        let name = entry.required_string("name", "a pool name such as \"fast\"")?;
        if !valid_name(name) {
            return Err(entry.error_at("name", format!("expected a name of letters, digits, '-', '_' and '.', got {name:?}")));
        }
        if name == DEFAULT_POOL {
            return Err(entry.error_at(
                "name",
                format!(
                    "{DEFAULT_POOL:?} is the default pool's name ([host] policy and every pCPU no [[host.pool]] lists); \
                     choose another name"
                ),
            ));
        }
        if let Some(first) = pools.iter().position(|p| p.name == name) {
            return Err(entry.error_at("name", format!("duplicate pool name {name:?}: host.pool[{first}] already has it")));
        }
        let pcpus_value = entry.require("pcpus", "a cpulist such as \"10-11\" (the pool's pCPUs)")?;
        let pcpus = cpulist(&entry, &entry.key("pcpus"), pcpus_value, npcpus)?;
        for p in pcpus.iter() {
            if let Some(j) = owner[p.idx()] {
                return Err(entry.error_at(
                    "pcpus",
                    format!(
                        "pCPU {} is in pool {:?} (host.pool[{j}]) and in pool {name:?}; a pCPU belongs to one pool",
                        p.0, pools[j].name
                    ),
                ));
            }
            owner[p.idx()] = Some(i);
        }
        let kind = match entry.string("policy")? {
            Some(policy) => policy_kind(&entry, policy)?,
            None => host_kind,
        };
        let params = policy_params(&entry, kind)?;
        pools.push(PoolSpec { name: name.to_string(), pcpus, policy: kind.name().to_string(), params });
    }
    default_pool.pcpus = CpuMask::from_pcpus((0..npcpus).filter(|&p| owner[p].is_none()).map(|p| PcpuId(p as u32)));
    if default_pool.pcpus.is_empty() {
        return Err(host.error_at(
            "pool",
            format!(
                "the [[host.pool]] entries take every pCPU (0-{}), leaving the default pool {DEFAULT_POOL:?} with none; \
                 Xen's Pool-0 always keeps at least one pCPU: leave one out of every [[host.pool]]",
                npcpus - 1
            ),
        ));
    }
    pools.insert(0, default_pool);
    Ok(pools)
}

/// `[[host.pool_change]]`: pCPUs moved between pools at run time, sorted by `at` (stable). Each
/// entry is checked on its own here; `replay_pool_changes` checks the sequence once the VMs are
/// known, and `from_toml_str` checks the times against the run's duration.
/// Each change comes with its index in the file, for messages.
pub(super) fn pool_changes(host: &Section, topology: &Topology, pools: &[PoolSpec]) -> Result<Vec<(usize, PoolChange)>, SimError> {
    let Some(list) = host.array("pool_change")? else { return Ok(Vec::new()) };
    let npcpus = topology.npcpus();
    let names: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
    let mut changes = Vec::new();
    for (i, value) in list.iter().enumerate() {
        let path = host.key(&format!("pool_change[{i}]"));
        let Value::Table(table) = value else {
            return Err(error(
                host.file,
                &path,
                format!("expected a [[host.pool_change]] table with at, pcpu and to, got {}", show_toml(value)),
            ));
        };
        let entry = Section::new(host.file, path, table);
        entry.allow_only(POOL_CHANGE_KEYS)?;
        let at_value = entry.require("at", "a duration with a unit, such as \"2s\" (when the pCPU moves)")?;
        let at = super::section::duration_value(entry.file, &entry.key("at"), at_value, false)?;
        let pcpu = entry.required_int("pcpu", 0, i64::MAX)?;
        if pcpu >= npcpus as i64 {
            return Err(entry.error_at("pcpu", format!("pCPU {pcpu} is out of range: the host has pCPUs 0-{}", npcpus - 1)));
        }
        let to = entry.required_string("to", "a pool name (\"pool0\" or a [[host.pool]] name)")?;
        let Some(to) = names.iter().position(|n| *n == to) else {
            let m = format!("unknown pool {to:?}; expected one of: {}", pool_names(pools));
            return Err(entry.error_at("to", with_suggestion(m, to, &names)));
        };
        changes.push((i, PoolChange { at, pcpu: PcpuId(pcpu as u32), to }));
    }
    // Stable: equal times keep file order.
    changes.sort_by_key(|(_, c)| c.at);
    Ok(changes)
}

/// The pool names, quoted, for messages: `"pool0", "fast"`.
pub(super) fn pool_names(pools: &[PoolSpec]) -> String {
    pools.iter().map(|p| format!("{:?}", p.name)).collect::<Vec<_>>().join(", ")
}

/// Play `[[host.pool_change]]` through in time order, refusing what Xen refuses: moving a pCPU
/// into the pool it is in, emptying the default pool (Pool-0 always keeps a pCPU), and taking
/// the last pCPU of a pool that has VMs (`cpupool_unassign_cpu` returns -EBUSY). A pool without
/// VMs may become empty. `change_index[k]` is the file index of `host.pool_changes[k]`.
pub(super) fn replay_pool_changes(source: &str, host: &HostSpec, change_index: &[usize], vms: &[VmSpec]) -> Result<(), SimError> {
    let npcpus = host.topology.npcpus();
    let mut pool_of = vec![0; npcpus];
    for (k, pool) in host.pools.iter().enumerate() {
        for p in pool.pcpus.iter() {
            pool_of[p.idx()] = k;
        }
    }
    let mut size: Vec<usize> = host.pools.iter().map(|p| p.pcpus.count()).collect();
    for (change, &i) in host.pool_changes.iter().zip(change_index) {
        let path = format!("host.pool_change[{i}]");
        let (p, at) = (change.pcpu, crate::time::format_duration(change.at));
        let from = pool_of[p.idx()];
        let (from_name, to_name) = (&host.pools[from].name, &host.pools[change.to].name);
        if from == change.to {
            return Err(error(
                source,
                &format!("{path}.to"),
                format!("pCPU {} is already in pool {to_name:?} at {at}; a change must move it to another pool", p.0),
            ));
        }
        for (k, name) in [(from, from_name), (change.to, to_name)] {
            let policy = &host.pools[k].policy;
            let supported = policies::find(policy).is_ok_and(|kind| kind.supports_pool_changes());
            if !supported {
                let able: Vec<&str> = policies::registry().iter().filter(|k| k.supports_pool_changes()).map(|k| k.name()).collect();
                return Err(error(
                    source,
                    &path,
                    format!(
                        "pool {name:?} runs policy = {policy:?}, which cannot gain or lose pCPUs during a run; pool changes need a pool of {}",
                        able.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(" or ")
                    ),
                ));
            }
        }
        if size[from] == 1 {
            if from == 0 {
                return Err(error(
                    source,
                    &path,
                    format!(
                        "moving pCPU {} to {to_name:?} at {at} would leave the default pool {from_name:?} with no pCPU; \
                         Xen's Pool-0 always keeps at least one pCPU",
                        p.0
                    ),
                ));
            }
            let members: Vec<String> = vms.iter().filter(|vm| vm.pool == from).map(|vm| format!("{:?}", vm.name)).collect();
            if !members.is_empty() {
                return Err(error(
                    source,
                    &path,
                    format!(
                        "moving pCPU {} to {to_name:?} at {at} would leave pool {from_name:?} with no pCPU while it has \
                         VMs ({}) (Xen refuses: cpupool_unassign_cpu returns -EBUSY); move another pCPU into \
                         {from_name:?} first or drop the change",
                        p.0,
                        members.join(", ")
                    ),
                ));
            }
        }
        size[from] -= 1;
        size[change.to] += 1;
        pool_of[p.idx()] = change.to;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::spec::PoolChange;
    use super::super::test_support::{assert_error, load, mask, message, minimal, pools, POOLS};
    use crate::ids::PcpuId;
    use crate::time::SEC;

    #[test]
    fn pools_load() {
        let s = load(POOLS).unwrap();
        let names: Vec<&str> = s.host.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["pool0", "fast"]);
        assert_eq!(s.host.pools[0].pcpus, mask("0-9", 12));
        assert_eq!((s.host.pools[0].policy.as_str(), &s.host.pools[0].params), ("credit", &s.host.params));
        let fast = &s.host.pools[1];
        assert_eq!((fast.pcpus.to_cpulist().as_str(), fast.policy.as_str()), ("10-11", "credit"));
        assert_eq!(fast.params.duration("tslice"), crate::time::MS);
        assert_eq!(fast.params.duration("ratelimit"), crate::time::MS, "defaults are filled");
        assert_eq!(s.host.pool_changes, [PoolChange { at: 2 * SEC, pcpu: PcpuId(9), to: 1 }]);

        // A pool's policy defaults to [host] policy; params are that policy's, cfs takes placement.
        let s = load(&pools(&[("policy = \"credit\"\nparams = { tslice = \"1ms\" }\n", "")], "")).unwrap();
        assert_eq!(s.host.pools[1].policy, "credit");
        assert_eq!(s.host.pools[1].params, s.host.params);
        let s = load(&pools(
            &[("policy = \"credit\"\nparams = { tslice = \"1ms\" }", "policy = \"cfs\"\nparams = { placement = \"balance\" }")],
            "",
        ))
        .unwrap();
        assert_eq!(s.host.pools[1].params.choice("placement"), "balance");

        // Without pool keys: one pool0 of every pCPU, full masks, no cap.
        let s = load(&minimal("", "")).unwrap();
        assert_eq!(s.host.pools.len(), 1);
        assert_eq!((s.host.pools[0].name.as_str(), &s.host.pools[0].pcpus), ("pool0", &mask("0-1", 2)));
        assert!(s.host.pool_changes.is_empty());
    }

    #[test]
    fn bad_pools_are_rejected() {
        let pool = |from: &str, to: &str| pools(&[(from, to)], "");
        assert_error(&pool("name = \"fast\"\n", ""), "host.pool[0].name: missing; expected a pool name such as \"fast\"");
        assert_error(
            &pool("name = \"fast\"", "name = \"my pool\""),
            "host.pool[0].name: expected a name of letters, digits, '-', '_' and '.', got \"my pool\"",
        );
        assert_error(&pool("name = \"fast\"", "name = \"pool0\""), "host.pool[0].name: \"pool0\" is the default pool's name");
        let two = "[[host.pool]]\nname = \"fast\"\npcpus = \"8\"\n[[host.pool]]\nname = \"fast\"\npcpus = \"9\"\n";
        assert_error(
            &pool("[[host.pool_change]]", &format!("{two}[[host.pool_change]]")),
            "host.pool[1].name: duplicate pool name \"fast\": host.pool[0] already has it",
        );
        assert_error(&pool("pcpus = \"10-11\"\n", ""), "host.pool[0].pcpus: missing; expected a cpulist such as \"10-11\"");
        assert_error(
            &pool("pcpus = \"10-11\"", "pcpus = \"3-1\""),
            "host.pool[0].pcpus: range \"3-1\" in \"3-1\" runs backwards; write it low-high",
        );
        assert_error(
            &pool("pcpus = \"10-11\"", "pcpus = \"a\""),
            "host.pool[0].pcpus: \"a\" in \"a\" is not a pCPU number; expected a cpulist",
        );
        assert_error(
            &pool("pcpus = \"10-11\"", "pcpus = \"12\""),
            "host.pool[0].pcpus: pCPU 12 in \"12\" is out of range: the host has pCPUs 0-11",
        );
        assert_error(&pool("pcpus = \"10-11\"", "pcpus = 10"), "host.pool[0].pcpus: expected a cpulist string such as \"0-3,8\"");
        let overlap = "[[host.pool]]\nname = \"slow\"\npcpus = \"0-3,11\"\n";
        assert_error(
            &pool("[[host.pool_change]]", &format!("{overlap}[[host.pool_change]]")),
            "host.pool[1].pcpus: pCPU 11 is in pool \"fast\" (host.pool[0]) and in pool \"slow\"; a pCPU belongs to one pool",
        );
        assert_error(&pool("pcpus = \"10-11\"", "pcpus = \"0-11\""), "host.pool: the [[host.pool]] entries take every pCPU (0-11), leaving the default pool \"pool0\" with none; Xen's Pool-0 always keeps at least one pCPU");
        assert_error(
            &pool("policy = \"credit\"\nparams", "policy = \"credt\"\nparams"),
            "host.pool[0].policy: unknown policy \"credt\"; expected one of: cfs, credit, credit2, eevdf, gang, hybrid; did you mean \"credit\"?",
        );
        assert_error(&pool("tslice = \"1ms\"", "tslce = \"1ms\""), "host.pool[0].params.tslce: unknown key; did you mean \"tslice\"?");
        assert_error(&pool("tslice = \"1ms\"", "tslice = \"1\""), "host.pool[0].params.tslice: \"1\" has no unit");
        // params are checked against the pool's policy, as [host.params] is.
        assert_error(&pool("tslice = \"1ms\"", "placement = \"balance\""), "host.pool[0].params.placement: unknown key");
        assert_error(&pool("name = \"fast\"", "name = \"fast\"\ncpus = \"1\""), "host.pool[0].cpus: unknown key; did you mean \"pcpus\"?");
        let single = minimal("[host.pool]\nname = \"x\"\npcpus = \"1\"", "");
        assert_error(&single, "host.pool: expected [[host.pool]] sections (an array of tables), got a single [host.pool] table");
    }

    #[test]
    fn pool_changes_are_sorted_replayed_and_bad_ones_rejected() {
        let change = |at: &str, pcpu: u32, to: &str| format!("[[host.pool_change]]\nat = \"{at}\"\npcpu = {pcpu}\nto = \"{to}\"\n");
        // Sorted by time, stable for equal times; a pool with no VMs may be emptied.
        let extra = format!("{}{}{}", change("5s", 10, "pool0"), change("1s", 8, "fast"), change("1s", 7, "fast"));
        let s = load(&pools(
            &[("name = \"web\"\nvcpus = 4\npool = \"fast\"\ncpus = \"10-11\"\ncpus_soft = \"11\"", "name = \"web\"\nvcpus = 4")],
            &extra,
        ))
        .unwrap();
        let got: Vec<(u64, u32, usize)> = s.host.pool_changes.iter().map(|c| (c.at / SEC, c.pcpu.0, c.to)).collect();
        assert_eq!(got, [(1, 8, 1), (1, 7, 1), (2, 9, 1), (5, 10, 0)]);
        let s = load(&format!(
            "{}{}{}",
            pools(&[("pool = \"fast\"\ncpus = \"10-11\"\n", "")], ""),
            change("3s", 10, "pool0"),
            change("3s", 11, "pool0")
        ));
        let s = s.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.host.pool_changes.len(), 3);

        let with = |entry: &str| pools(&[], entry);
        assert_error(&with("[[host.pool_change]]\npcpu = 1\nto = \"fast\"\n"), "host.pool_change[1].at: missing; expected a duration");
        assert_error(&with("[[host.pool_change]]\nat = \"1\"\npcpu = 1\nto = \"fast\"\n"), "host.pool_change[1].at: \"1\" has no unit");
        assert_error(&with(&change("1s", 12, "fast")), "host.pool_change[1].pcpu: pCPU 12 is out of range: the host has pCPUs 0-11");
        assert_error(
            &with("[[host.pool_change]]\nat = \"1s\"\npcpu = -1\nto = \"fast\"\n"),
            "host.pool_change[1].pcpu: expected a non-negative integer, got -1",
        );
        assert_error(
            &with(&change("1s", 1, "fats")),
            "host.pool_change[1].to: unknown pool \"fats\"; expected one of: \"pool0\", \"fast\"; did you mean \"fast\"?",
        );
        assert_error(
            &with("[[host.pool_change]]\nat = \"1s\"\npcpu = 1\nto = \"fast\"\nfrom = \"pool0\"\n"),
            "host.pool_change[1].from: unknown key",
        );
        assert_error(
            &with("[run]\nduration = \"1s\"\n"),
            "run.duration: host.pool_change[0] moves pCPU 9 at 2s, after the run ends (duration = 1s); lengthen the run or drop the change",
        );
        assert_error(
            &with(&change("1s", 10, "fast")),
            "host.pool_change[1].to: pCPU 10 is already in pool \"fast\" at 1s; a change must move it to another pool",
        );
        // pCPU 9 joined "fast" at 2s (pool_change[0]), so moving it again to "fast" later is an error.
        assert_error(&with(&change("3s", 9, "fast")), "host.pool_change[1].to: pCPU 9 is already in pool \"fast\" at 3s");
        let empties = format!("{}{}{}", change("3s", 10, "pool0"), change("3s", 11, "pool0"), change("3s", 9, "pool0"));
        assert_error(&with(&empties), "host.pool_change[3]: moving pCPU 9 to \"pool0\" at 3s would leave pool \"fast\" with no pCPU while it has VMs (\"web\") (Xen refuses: cpupool_unassign_cpu returns -EBUSY)");
        let host =
            "[host]\npcpus = 2\n[[host.pool]]\nname = \"p\"\npcpus = \"1\"\n[[host.pool_change]]\nat = \"1s\"\npcpu = 0\nto = \"p\"\n";
        assert_error(&minimal("", "").replace("[host]\npcpus = 2\n", host), "host.pool_change[0]: moving pCPU 0 to \"p\" at 1s would leave the default pool \"pool0\" with no pCPU; Xen's Pool-0 always keeps at least one pCPU");
    }

    #[test]
    fn pool_changes_need_policies_that_support_them() {
        let text = |policy: &str| {
            format!(
                "[host]\npcpus = 4\n[[host.pool]]\nname = \"g\"\npcpus = \"2-3\"\npolicy = \"{policy}\"\n\
                 [[host.pool_change]]\nat = \"1s\"\npcpu = 1\nto = \"g\"\n\
                 [[vm]]\nname = \"a\"\nvcpus = 1\nworkload = \"cpu-bound\"\n[run]\nduration = \"2s\"\n"
            )
        };
        assert!(load(&text("credit")).is_ok());
        assert!(load(&text("cfs")).is_ok());
        assert_error(
            &text("gang"),
            "host.pool_change[0]: pool \"g\" runs policy = \"gang\", which cannot gain or lose pCPUs during a run; pool changes need a pool of \"cfs\" or \"credit\"",
        );
        assert!(message(&text("hybrid")).contains("policy = \"hybrid\", which cannot gain or lose pCPUs"));
    }
}

//! "Did you mean ...?" suggestions for misspelt keys and names.
//!
//! A suggestion is the valid word closest in edit distance to what the user wrote, when it is
//! close enough to be a likely typo. A few synonyms users reach for (`scheduler` for `policy`,
//! `cpus` for `pcpus`) are matched too, so `schduler` still points at `policy`.

/// Words users write for a key that has another name here: (what they write, the real key).
/// Only used when the real key is valid where the user wrote the alias.
const ALIASES: &[(&str, &str)] = &[
    ("scheduler", "policy"),
    ("sched", "policy"),
    ("cpus", "pcpus"),
    ("ncpus", "pcpus"),
    ("cores", "pcpus"),
    ("nvcpus", "vcpus"),
    ("workers", "threads"),
    ("nthreads", "threads"),
    ("iters", "iterations"),
    ("loops", "iterations"),
    ("shares", "weight"),
    ("time", "duration"),
    ("runtime", "duration"),
    ("length", "duration"),
    ("random_seed", "seed"),
    ("instances", "count"),
    ("replicas", "count"),
    ("copies", "count"),
    ("smt", "threads_per_core"),
    ("nodes", "numa_nodes"),
    ("hz", "tick"),
];

/// Levenshtein distance between two words, counted in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// How many edits still look like a typo of a word this long.
fn tolerance(len: usize) -> usize {
    match len {
        0..=3 => 1,
        4..=6 => 2,
        n => n / 3,
    }
}

/// The valid word `word` most likely meant, if any is close enough (ties go to the earlier word).
pub fn did_you_mean<'a>(word: &str, valid: &[&'a str]) -> Option<&'a str> {
    let word = word.to_lowercase();
    let aliases = ALIASES.iter().filter_map(|(alias, target)| valid.iter().find(|v| *v == target).map(|v| (*alias, *v)));
    let candidates = valid.iter().map(|v| (*v, *v)).chain(aliases);
    let (distance, best) =
        candidates.map(|(spelling, target)| (edit_distance(&word, &spelling.to_lowercase()), target)).min_by_key(|(d, _)| *d)?;
    if distance <= tolerance(word.chars().count()) {
        return Some(best);
    }
    // A shortened key (`window` for `window_cycles`): the shortest valid key it begins.
    let min_prefix = 4;
    valid.iter().filter(|v| word.chars().count() >= min_prefix && v.to_lowercase().starts_with(&word)).min_by_key(|v| v.len()).copied()
}

/// The message for a key that is not valid where it was written.
pub fn unknown_key_message(key: &str, valid: &[&str]) -> String {
    match did_you_mean(key, valid) {
        Some(s) => format!("unknown key; did you mean {s:?}?"),
        None if valid.is_empty() => "unknown key; this table takes no keys".to_string(),
        None => format!("unknown key; valid keys: {}", valid.join(", ")),
    }
}

/// Append a suggestion to a "not one of these names" message, when one is close.
pub fn with_suggestion(message: String, word: &str, valid: &[&str]) -> String {
    match did_you_mean(word, valid) {
        Some(s) => format!("{message}; did you mean {s:?}?"),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_edits() {
        assert_eq!(edit_distance("pcpus", "pcpus"), 0);
        assert_eq!(edit_distance("pcpu", "pcpus"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn suggests_typos_and_aliases() {
        let host = ["pcpus", "policy", "sockets", "numa_nodes", "threads_per_core", "params", "ple", "costs"];
        assert_eq!(did_you_mean("pcpu", &host), Some("pcpus"));
        assert_eq!(did_you_mean("PCPUS", &host), Some("pcpus"));
        assert_eq!(did_you_mean("schduler", &host), Some("policy"));
        assert_eq!(did_you_mean("numa-nodes", &host), Some("numa_nodes"));
        assert_eq!(did_you_mean("frobnicate", &host), None);
        assert_eq!(did_you_mean("threads", &host), Some("threads_per_core"));
        assert_eq!(did_you_mean("window", &["window_max_cycles", "window_cycles"]), Some("window_cycles"));
        // An alias only counts where its target is valid.
        assert_eq!(did_you_mean("scheduler", &["seed", "duration"]), None);
    }

    #[test]
    fn unknown_key_lists_valid_keys_without_a_close_match() {
        let m = unknown_key_message("zzz", &["seed", "duration"]);
        assert_eq!(m, "unknown key; valid keys: seed, duration");
        assert_eq!(unknown_key_message("sed", &["seed", "duration"]), "unknown key; did you mean \"seed\"?");
    }
}

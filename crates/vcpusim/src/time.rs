//! Simulated time: integer nanoseconds, and the duration strings scenarios use ("100us", "30ms").

/// Simulated time and durations, in nanoseconds.
pub type Nanos = u64;

pub const NS: Nanos = 1;
pub const US: Nanos = 1_000;
pub const MS: Nanos = 1_000_000;
pub const SEC: Nanos = 1_000_000_000;

/// The longest duration a scenario may give (2^63 - 1 ns, about 292 years): half the range, so
/// that `now + duration` never wraps for any time within a run.
pub const MAX_DURATION: Nanos = u64::MAX / 2;

/// `a x b / c` rounded down, exactly (the product may pass u64; `c` must not be 0): in u64
/// arithmetic when the product fits, one division instruction, else in u128, a library call
/// (`__udivti3`, a few percent of a CFS yield storm when every division took it).
#[inline]
pub fn mul_div(a: u64, b: u64, c: u64) -> u128 {
    match a.checked_mul(b) {
        Some(product) => (product / c) as u128,
        None => a as u128 * b as u128 / c as u128,
    }
}

/// Parse a duration with a unit: `"100ns"`, `"2.5us"`, `"30ms"`, `"2s"`, `"1min"`.
/// Returns a message that says what was expected when the text is not a non-negative duration.
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')).unwrap_or(t.len());
    // "1e3ms" is fine, but an 'e' that starts the unit is not part of the number.
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let expected = "a duration with a unit, such as \"100us\", \"30ms\" or \"2s\" (units: ns, us, ms, s, min)";
    if num.is_empty() {
        return Err(format!("expected {expected}, got {text:?}"));
    }
    let value: f64 = num.parse().map_err(|_| format!("expected {expected}, got {text:?}"))?;
    let scale = match unit {
        "ns" => NS,
        "us" | "µs" => US,
        "ms" => MS,
        "s" => SEC,
        "min" => 60 * SEC,
        "" => return Err(format!("{text:?} has no unit; expected {expected}")),
        _ => return Err(format!("unknown unit {unit:?} in {text:?}; expected {expected}")),
    };
    if !value.is_finite() || value < 0.0 {
        return Err(format!("expected a non-negative duration, got {text:?}"));
    }
    let too_long = || format!("duration {text:?} is too long; expected at most {MAX_DURATION}ns (about 292 years)");
    // A whole number is converted exactly (through f64, "9223372036854775807ns" became 2^63, one
    // past the limit, and 2^53 + 1 ns became 2^53); a fraction or exponent through f64.
    if num.bytes().all(|b| b.is_ascii_digit()) {
        return match num.parse::<u64>().ok().and_then(|n| n.checked_mul(scale)) {
            Some(ns) if ns <= MAX_DURATION => Ok(ns),
            _ => Err(too_long()),
        };
    }
    let ns = (value * scale as f64).round();
    if ns >= MAX_DURATION as f64 {
        // MAX_DURATION (2^63 - 1) rounds up to 2^63 as an f64: anything this large is refused.
        return Err(too_long());
    }
    Ok(ns as Nanos)
}

/// Format a duration compactly with the largest unit that keeps it exact, e.g. `30ms`.
pub fn format_duration(ns: Nanos) -> String {
    for (unit, scale) in [("s", SEC), ("ms", MS), ("us", US)] {
        if ns != 0 && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

pub fn to_ms(ns: Nanos) -> f64 {
    ns as f64 / MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_div_is_the_exact_quotient_on_both_sides_of_u64() {
        let exact = |a: u64, b: u64, c: u64| a as u128 * b as u128 / c as u128;
        let cases = [
            (0, 5, 3),
            (7, 1024, 3),
            (u64::MAX, 1, 1),
            (u64::MAX, 2, 3),            // the product passes u64
            (1 << 32, 1 << 32, 7),       // exactly 2^64: just past
            ((1 << 32) - 1, 1 << 32, 7), // just below
            (u64::MAX, u64::MAX, u64::MAX),
            (u64::MAX, u64::MAX, 1), // a quotient beyond u64
        ];
        for (a, b, c) in cases {
            assert_eq!(mul_div(a, b, c), exact(a, b, c), "{a} x {b} / {c}");
        }
        let mut rng = crate::engine::rng::stream(1, "mul_div test");
        for _ in 0..100_000 {
            let a: u64 = rand::Rng::random::<u64>(&mut rng) >> rand::Rng::random_range(&mut rng, 0..64);
            let b: u64 = rand::Rng::random::<u64>(&mut rng) >> rand::Rng::random_range(&mut rng, 0..64);
            let c: u64 = (rand::Rng::random::<u64>(&mut rng) >> rand::Rng::random_range(&mut rng, 0..64)).max(1);
            assert_eq!(mul_div(a, b, c), exact(a, b, c), "{a} x {b} / {c}");
        }
    }

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("100us"), Ok(100 * US));
        assert_eq!(parse_duration("30ms"), Ok(30 * MS));
        assert_eq!(parse_duration("2s"), Ok(2 * SEC));
        assert_eq!(parse_duration("2.5us"), Ok(2_500));
        assert_eq!(parse_duration("0ns"), Ok(0));
        assert_eq!(parse_duration("2min"), Ok(120 * SEC));
        assert_eq!(parse_duration("1.5min"), Ok(90 * SEC));
        assert_eq!(parse_duration("7µs"), Ok(7 * US));
        assert_eq!(parse_duration("1e3ms"), Ok(SEC));
        assert_eq!((to_ms(1_500_000), to_ms(250), to_ms(0)), (1.5, 0.00025, 0.0));
    }

    #[test]
    fn rejects_bad_durations() {
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("-5ms").unwrap_err().contains("non-negative"));
        assert!(parse_duration("5 fortnights").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn whole_numbers_are_exact_up_to_the_limit_and_refused_past_it() {
        assert_eq!(parse_duration("9223372036854775807ns"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("9007199254740993ns"), Ok((1 << 53) + 1), "not rounded to an f64");
        for past in ["9223372036854775808ns", "18446744073709551616ns", "9223372036854776s", "99999999999999999999999min"] {
            assert!(parse_duration(past).unwrap_err().contains("too long"), "{past}");
        }
        // Fractions and exponents go through f64, and are refused at the limit too.
        assert_eq!(parse_duration("1e3ms"), Ok(SEC));
        assert_eq!(parse_duration("0.1ms"), Ok(100 * US));
        assert!(parse_duration("9.3e18ns").unwrap_err().contains("too long"));
        assert!(parse_duration("9223372036854775807.0ns").unwrap_err().contains("too long"), "2^63 - 1 as an f64 is 2^63");
    }

    #[test]
    fn formats_round_trip() {
        for ns in [30 * MS, 100 * US, 2 * SEC, 1234] {
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns));
        }
    }
}

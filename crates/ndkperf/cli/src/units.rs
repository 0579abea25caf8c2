//! Parsing of sizes (`4K`, `1M`, `64`) and durations (`500ms`, `2s`), and
//! printing sizes back the same way.

use std::time::Duration;

/// The largest message size the tool accepts: 1 GiB.
pub const MAX_SIZE: u64 = 1 << 30;

/// Parses a byte count with an optional binary unit: `64`, `4K`, `4k`,
/// `4KiB`, `1M`, `1MB`, `1G`. Zero and sizes above 1 GiB are refused.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(format!(
            "'{text}' is not a size (use a number with an optional K, M or G suffix, e.g. 64, 4K, 1M)"
        ));
    }
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "'{text}' has an unknown unit '{unit}' (use K, M or G, e.g. 4K, 1M)"
            ));
        }
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is too large (the maximum is 1G)"))?;
    let bytes = value
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("'{text}' is too large (the maximum is 1G)"))?;
    if bytes == 0 {
        return Err("the size must be at least 1 byte".into());
    }
    if bytes > MAX_SIZE {
        return Err(format!("'{text}' is too large (the maximum is 1G)"));
    }
    Ok(bytes)
}

/// Parses a duration: `500ms`, `2s`, `1.5s`, `100us`, or a bare number of
/// seconds. Zero is refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t.as_str(), 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (e.g. 500ms, 2s)"))?;
    let seconds = value * scale;
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 86_400.0 {
        return Err(format!(
            "'{text}' is out of range (more than 0, at most a day)"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a probability between 0 and 1.
pub fn parse_probability(text: &str) -> Result<f64, String> {
    let p: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number between 0 and 1"))?;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("'{text}' is not between 0 and 1"));
    }
    Ok(p)
}

/// A byte count the way a user writes it: `64`, `4K`, `1M`, `1.5M`.
#[allow(clippy::cast_precision_loss)] // sizes are at most 1 GiB
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift {
            if bytes % (1 << shift) == 0 {
                return format!("{}{unit}", bytes >> shift);
            }
            return format!("{:.1}{unit}", bytes as f64 / f64::from(1u32 << shift));
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("0K").is_err());
        assert!(parse_size("2G").is_err());
        assert!(parse_size("1025M").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("K").is_err());
        assert!(parse_size("4X").is_err());
        assert!(parse_size("-4").is_err());
        assert!(parse_size("99999999999999999999999").is_err());
        assert!(parse_size("18014398509481984K").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5S"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn probabilities_and_formatting() {
        assert_eq!(parse_probability("0.05"), Ok(0.05));
        assert!(parse_probability("1.5").is_err());
        assert!(parse_probability("nan").is_err());
        assert_eq!(format_size(64), "64");
        assert_eq!(format_size(4096), "4K");
        assert_eq!(format_size(1 << 20), "1M");
        assert_eq!(format_size(1536), "1.5K");
    }
}

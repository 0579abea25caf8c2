//! What the WDK's stampinf does to an `.inx`, as `Makefile.toml` runs it
//! on Windows (`stampinf -f X.inf -d * -a amd64 -c rsndk.cat -v *`),
//! after "Stampinf command options": `-a` replaces every `$ARCH$` with the
//! architecture; `-d *` writes the current date, month/day/year, as
//! DriverVer's date; `-v *` writes the current time,
//! hours.minutes.seconds.milliseconds, as its version; both go to the
//! `DriverVer` directive of `[Version]` (the default `-s` section);
//! `-c` writes the `CatalogFile` directive there.

use std::fmt;

/// A moment in UTC, as stampinf's `*` takes it from the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Year.
    pub year: u32,
    /// Month, 1-12.
    pub month: u32,
    /// Day, 1-31.
    pub day: u32,
    /// Hour, 0-23.
    pub hour: u32,
    /// Minute.
    pub minute: u32,
    /// Second.
    pub second: u32,
    /// Millisecond.
    pub millisecond: u32,
}

impl Stamp {
    /// The moment `millis` milliseconds after the Unix epoch (civil
    /// calendar from the day count, Howard Hinnant's algorithm).
    pub fn from_unix_millis(millis: u64) -> Stamp {
        let days = millis / 86_400_000;
        let of_day = millis % 86_400_000;
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + u64::from(month <= 2);
        Stamp {
            year: year as u32,
            month: month as u32,
            day: day as u32,
            hour: (of_day / 3_600_000) as u32,
            minute: (of_day / 60_000 % 60) as u32,
            second: (of_day / 1000 % 60) as u32,
            millisecond: (of_day % 1000) as u32,
        }
    }

    /// Now, or `$SOURCE_DATE_EPOCH` (seconds) when set, for a build that
    /// must be reproducible.
    pub fn now() -> Stamp {
        let from_env = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(|s| s * 1000);
        let millis = from_env.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        });
        Stamp::from_unix_millis(millis)
    }

    /// DriverVer's value: `mm/dd/yyyy,hh.mm.ss.mmm`.
    pub fn driver_ver(&self) -> String {
        format!(
            "{:02}/{:02}/{:04},{}.{}.{}.{}",
            self.month, self.day, self.year, self.hour, self.minute, self.second, self.millisecond
        )
    }
}

/// Why an `.inx` cannot be stamped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StampError {
    /// No `[Version]` section.
    NoVersionSection,
    /// `[Version]` has no `DriverVer` line, or more than one.
    DriverVerLines(usize),
    /// `[Version]` has more than one `CatalogFile` line.
    CatalogFileLines(usize),
}

impl fmt::Display for StampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoVersionSection => write!(f, "no [Version] section"),
            Self::DriverVerLines(n) => write!(f, "[Version] has {n} DriverVer lines, not 1"),
            Self::CatalogFileLines(n) => write!(f, "[Version] has {n} CatalogFile lines"),
        }
    }
}

impl std::error::Error for StampError {}

/// The key of an INF line (`Key = ...`), if the line has one.
fn key_of(line: &str) -> Option<&str> {
    let code = line.split(';').next().unwrap_or_default();
    code.split_once('=').map(|(k, _)| k.trim())
}

/// Stamps `inx`: `$ARCH$` becomes `arch`, `[Version]`'s DriverVer becomes
/// `stamp`'s date and time, its CatalogFile `catalog` (added after
/// DriverVer if absent). Line endings become CRLF, as in every INF
/// Windows ships. Comments and everything else stay as written.
pub fn stamp(inx: &str, arch: &str, catalog: &str, stamp: &Stamp) -> Result<String, StampError> {
    let text = inx.replace("$ARCH$", arch);
    let lines: Vec<&str> = text.lines().collect();
    let version_start = lines
        .iter()
        .position(|l| l.trim().eq_ignore_ascii_case("[Version]"))
        .ok_or(StampError::NoVersionSection)?;
    let version_end = lines[version_start + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| version_start + 1 + i);
    let in_version = |i: usize, key: &str| {
        (version_start..version_end).contains(&i)
            && key_of(lines[i]).is_some_and(|k| k.eq_ignore_ascii_case(key))
    };
    let driver_ver: Vec<usize> = (0..lines.len())
        .filter(|&i| in_version(i, "DriverVer"))
        .collect();
    if driver_ver.len() != 1 {
        return Err(StampError::DriverVerLines(driver_ver.len()));
    }
    let catalog_lines: Vec<usize> = (0..lines.len())
        .filter(|&i| in_version(i, "CatalogFile"))
        .collect();
    if catalog_lines.len() > 1 {
        return Err(StampError::CatalogFileLines(catalog_lines.len()));
    }
    let catalog_line = format!("CatalogFile = {catalog}\r\n");
    let mut out = String::with_capacity(text.len() + 64);
    for (i, line) in lines.iter().enumerate() {
        if i == driver_ver[0] {
            out.push_str("DriverVer   = ");
            out.push_str(&stamp.driver_ver());
            out.push_str("\r\n");
            if catalog_lines.is_empty() {
                out.push_str(&catalog_line);
            }
        } else if catalog_lines.first() == Some(&i) {
            out.push_str(&catalog_line);
        } else {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        let s = Stamp::from_unix_millis(0);
        assert_eq!((s.year, s.month, s.day, s.hour), (1970, 1, 1, 0));
        // 2024-02-29T23:59:58.123Z
        let s = Stamp::from_unix_millis(1_709_251_198_123);
        assert_eq!((s.year, s.month, s.day), (2024, 2, 29));
        assert_eq!(
            (s.hour, s.minute, s.second, s.millisecond),
            (23, 59, 58, 123)
        );
        assert_eq!(s.driver_ver(), "02/29/2024,23.59.58.123");
    }

    #[test]
    fn stamps_version_arch_and_catalog() {
        let inx = "[Version]\nSignature = \"$WINDOWS NT$\"\nDriverVer   =\n\n\
                   [Manufacturer]\n%M% = S,NT$ARCH$.10.0...19041\n[S.NT$ARCH$.10.0...19041]\n";
        let s = Stamp::from_unix_millis(1_709_251_198_123);
        let out = stamp(inx, "amd64", "rsndk.cat", &s).unwrap();
        assert_eq!(
            out,
            "[Version]\r\nSignature = \"$WINDOWS NT$\"\r\n\
             DriverVer   = 02/29/2024,23.59.58.123\r\nCatalogFile = rsndk.cat\r\n\r\n\
             [Manufacturer]\r\n%M% = S,NTamd64.10.0...19041\r\n[S.NTamd64.10.0...19041]\r\n"
        );
        let with_catalog = "[Version]\nCatalogFile = old.cat\nDriverVer=\n";
        let out = stamp(with_catalog, "amd64", "rsndk.cat", &s).unwrap();
        assert_eq!(
            out,
            "[Version]\r\nCatalogFile = rsndk.cat\r\nDriverVer   = 02/29/2024,23.59.58.123\r\n"
        );
    }

    #[test]
    fn refuses_what_it_cannot_stamp() {
        let s = Stamp::from_unix_millis(0);
        assert_eq!(
            stamp("[A]\n", "amd64", "c", &s),
            Err(StampError::NoVersionSection)
        );
        assert_eq!(
            stamp("[Version]\n[B]\nDriverVer=\n", "amd64", "c", &s),
            Err(StampError::DriverVerLines(0))
        );
    }
}

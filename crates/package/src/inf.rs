//! A reader for the INF subset rsndk's two INFs use, after Microsoft's
//! "General Syntax Rules for INF Files": `[section]` headers, `key = value`
//! entries or bare value lists, values separated by commas, `;` comments
//! outside double quotes, `""` as a quote inside a quoted string, section
//! names and keys compared without case, `%key%` tokens resolved from
//! `[Strings]`. A backslash continuation line is refused rather than
//! guessed at (neither INF uses one).

use std::fmt;

/// One line of a section: `key = v1, v2` or a bare `v1, v2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// The line number in the file (1-based).
    pub number: usize,
    /// The key left of `=`, if any, as written.
    pub key: Option<String>,
    /// The comma-separated values, trimmed, quotes removed.
    pub values: Vec<String>,
}

impl Line {
    /// Whether the key is `key`, compared without case.
    pub fn is(&self, key: &str) -> bool {
        self.key
            .as_deref()
            .is_some_and(|k| k.eq_ignore_ascii_case(key))
    }

    /// The value at `index`, or "" when the line has fewer values.
    pub fn value(&self, index: usize) -> &str {
        self.values.get(index).map_or("", String::as_str)
    }
}

/// One `[section]` and its lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The name between the brackets, as written.
    pub name: String,
    /// The header's line number.
    pub number: usize,
    /// The section's lines, comments and blank lines dropped.
    pub lines: Vec<Line>,
}

impl Section {
    /// The lines whose key is `key`.
    pub fn entries<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a Line> + 'a {
        self.lines.iter().filter(move |l| l.is(key))
    }

    /// The lines whose key is `key`, not borrowing `key` beyond the call.
    fn entries_of(&self, key: &str) -> Vec<&Line> {
        self.lines.iter().filter(|l| l.is(key)).collect()
    }

    /// The first value of the one line whose key is `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries_of(key).first().map(|l| l.value(0))
    }

    /// The values of every line with `key`, each line's list split on
    /// commas (`AddReg = a, b` and two `AddReg` lines both give a, b).
    pub fn list(&self, key: &str) -> Vec<&str> {
        self.entries_of(key)
            .into_iter()
            .flat_map(|l| l.values.iter().map(String::as_str))
            .filter(|v| !v.is_empty())
            .collect()
    }
}

/// A parsed INF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inf {
    /// The sections in file order.
    pub sections: Vec<Section>,
}

/// Why a text is not an INF this reader accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The offending line (1-based).
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}

/// Splits the text of one line (comment not yet removed) into its
/// comma-separated fields and the position of an unquoted `=`, if any.
fn fields(text: &str, line: usize) -> Result<(Vec<String>, Option<usize>), ParseError> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut equals = None;
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            '"' => quoted = !quoted,
            ';' if !quoted => break,
            ',' if !quoted => fields.push(std::mem::take(&mut field).trim().to_owned()),
            '=' if !quoted && equals.is_none() && fields.is_empty() => {
                equals = Some(0);
                fields.push(std::mem::take(&mut field).trim().to_owned());
            }
            _ => field.push(c),
        }
    }
    if quoted {
        return Err(ParseError {
            line,
            reason: "unterminated quoted string",
        });
    }
    fields.push(field.trim().to_owned());
    Ok((fields, equals))
}

impl Inf {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Inf, ParseError> {
        let mut sections: Vec<Section> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let number = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with(';') {
                continue;
            }
            if let Some(rest) = trimmed.strip_prefix('[') {
                let name = rest.split(']').next().unwrap_or_default().trim();
                if !rest.contains(']') || name.is_empty() {
                    return Err(ParseError {
                        line: number,
                        reason: "malformed section header",
                    });
                }
                sections.push(Section {
                    name: name.to_owned(),
                    number,
                    lines: Vec::new(),
                });
                continue;
            }
            let (mut values, equals) = fields(raw, number)?;
            if values.last().is_some_and(|v| v.ends_with('\\')) {
                return Err(ParseError {
                    line: number,
                    reason: "line continuation is not supported",
                });
            }
            let Some(section) = sections.last_mut() else {
                return Err(ParseError {
                    line: number,
                    reason: "entry before the first section",
                });
            };
            let key = equals.map(|_| values.remove(0));
            section.lines.push(Line {
                number,
                key,
                values,
            });
        }
        Ok(Inf { sections })
    }

    /// The section named `name` (without case). Every name must be unique:
    /// Windows merges sections of one name, which neither INF relies on.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// `text` with each `%key%` replaced from `[Strings]` and `%%` by `%`;
    /// a key `[Strings]` lacks stays as written (DIRIDs like `%13%` are
    /// not strings).
    pub fn resolve(&self, text: &str) -> String {
        let strings = self.section("Strings");
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find('%') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            let Some(end) = after.find('%') else {
                out.push_str(&rest[start..]);
                return out;
            };
            let key = &after[..end];
            match strings.and_then(|s| s.get(key)) {
                _ if key.is_empty() => out.push('%'),
                Some(value) => out.push_str(value),
                None => {
                    out.push('%');
                    out.push_str(key);
                    out.push('%');
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    }
}

/// A `[Manufacturer]` models entry's TargetOSVersion decoration,
/// `NT[Architecture][.[OSMajorVersion][.[OSMinorVersion][.[ProductType][.[SuiteMask][.[BuildNumber]]]]]]`
/// ("INF Manufacturer Section").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetOsVersion {
    /// The decoration as written (`NT$ARCH$.10.0...25341`).
    pub text: String,
    /// `$ARCH$`, `amd64`, ... (empty when absent).
    pub architecture: String,
    /// OSMajorVersion.
    pub major: Option<u32>,
    /// OSMinorVersion.
    pub minor: Option<u32>,
    /// ProductType, as written (empty when absent).
    pub product_type: String,
    /// SuiteMask, as written (empty when absent).
    pub suite_mask: String,
    /// BuildNumber.
    pub build: Option<u32>,
}

impl TargetOsVersion {
    /// Parses a decoration; `None` unless it starts with `NT` and every
    /// number field is a number.
    pub fn parse(text: &str) -> Option<TargetOsVersion> {
        let rest = text
            .get(..2)?
            .eq_ignore_ascii_case("NT")
            .then(|| &text[2..])?;
        let mut parts = rest.split('.');
        let architecture = parts.next().unwrap_or_default().to_owned();
        let number = |p: Option<&str>| -> Option<Option<u32>> {
            match p {
                None | Some("") => Some(None),
                Some(n) => n.parse().ok().map(Some),
            }
        };
        let major = number(parts.next())?;
        let minor = number(parts.next())?;
        let product_type = parts.next().unwrap_or_default().to_owned();
        let suite_mask = parts.next().unwrap_or_default().to_owned();
        let build = number(parts.next())?;
        if parts.next().is_some() {
            return None;
        }
        Some(TargetOsVersion {
            text: text.to_owned(),
            architecture,
            major,
            minor,
            product_type,
            suite_mask,
            build,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_entries_quotes_and_comments() {
        let inf = Inf::parse(
            "; head\n[Version]\nSignature = \"$WINDOWS NT$\" ; c\n\
             [R]\nHKR, Ndi, Service, 0, \"a;b\"\nHKR, , X, 0x10001, 7\n\
             [Strings]\nName = \"say \"\"hi\"\"\"\n",
        )
        .unwrap();
        assert_eq!(
            inf.section("version").unwrap().get("SIGNATURE"),
            Some("$WINDOWS NT$")
        );
        let r = inf.section("R").unwrap();
        assert_eq!(r.lines[0].key, None);
        assert_eq!(r.lines[0].values, ["HKR", "Ndi", "Service", "0", "a;b"]);
        assert_eq!(r.lines[1].values, ["HKR", "", "X", "0x10001", "7"]);
        assert_eq!(
            inf.resolve("%Name% at %13%\\x %%"),
            "say \"hi\" at %13%\\x %"
        );
    }

    #[test]
    fn malformed_text_is_refused() {
        assert_eq!(Inf::parse("x = 1\n").unwrap_err().line, 1);
        assert!(Inf::parse("[A\n").is_err());
        assert!(Inf::parse("[A]\nx = \"open\n").is_err());
        assert!(Inf::parse("[A]\nx = a, \\\n b\n").is_err());
    }

    #[test]
    fn target_os_versions() {
        let d = TargetOsVersion::parse("NT$ARCH$.10.0...25341").unwrap();
        assert_eq!(
            (d.major, d.minor, d.build),
            (Some(10), Some(0), Some(25341))
        );
        assert_eq!((d.product_type.as_str(), d.suite_mask.as_str()), ("", ""));
        let d = TargetOsVersion::parse("NTamd64.10.0.3.0x110.20348").unwrap();
        assert_eq!(d.product_type, "3");
        assert_eq!(TargetOsVersion::parse("NTamd64").unwrap().build, None);
        assert_eq!(TargetOsVersion::parse("Win.10"), None);
        assert_eq!(TargetOsVersion::parse("NTamd64.x"), None);
    }
}

//! The arguments `Makefile.toml` gives a task's command (`[tasks.NAME]`'s
//! `args = [...]`), read from the file itself so that the INF test checks
//! what the Windows flow really runs. Only basic TOML strings are read (the
//! file uses no other kind in `args`).

/// Why the arguments of a task could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgsError {
    /// No `[tasks.NAME]` table.
    NoTask(String),
    /// The table has no `args` array.
    NoArgs(String),
    /// The array is not a list of basic strings.
    Malformed(String),
}

impl std::fmt::Display for ArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoTask(t) => write!(f, "Makefile.toml has no [tasks.{t}]"),
            Self::NoArgs(t) => write!(f, "[tasks.{t}] has no args array"),
            Self::Malformed(t) => write!(f, "[tasks.{t}]'s args are not a list of strings"),
        }
    }
}

impl std::error::Error for ArgsError {}

/// The strings of `[tasks.<task>]`'s `args` array in `makefile`.
pub fn task_args(makefile: &str, task: &str) -> Result<Vec<String>, ArgsError> {
    let header = format!("[tasks.{task}]");
    let mut lines = makefile.lines().skip_while(|l| l.trim() != header);
    if lines.next().is_none() {
        return Err(ArgsError::NoTask(task.to_owned()));
    }
    let body: Vec<&str> = lines
        .take_while(|l| !l.trim_start().starts_with('['))
        .collect();
    let start = body
        .iter()
        .position(|l| l.trim_start().starts_with("args") && l.contains('['))
        .ok_or_else(|| ArgsError::NoArgs(task.to_owned()))?;
    let mut text = String::new();
    for line in &body[start..] {
        text.push_str(line);
        text.push('\n');
        if line.trim_end().ends_with(']') {
            break;
        }
    }
    let open = text.find('[').unwrap_or_default();
    let close = text
        .rfind(']')
        .ok_or_else(|| ArgsError::Malformed(task.to_owned()))?;
    parse_strings(&text[open + 1..close]).ok_or_else(|| ArgsError::Malformed(task.to_owned()))
}

/// `"a", "b\"c"` -> [a, b"c]; `None` for anything but basic strings,
/// commas, blanks and `#` comments.
fn parse_strings(list: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = list.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            '\\' => s.push('\\'),
                            '"' => s.push('"'),
                            'n' => s.push('\n'),
                            't' => s.push('\t'),
                            _ => return None,
                        },
                        other => s.push(other),
                    }
                }
                out.push(s);
            }
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            ',' => {}
            c if c.is_whitespace() => {}
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_and_many_line_arrays() {
        let m = "[tasks.a]\ncommand = \"x\"\nargs = [\"/v\", \"a\\\\b\"]\n\n\
                 [tasks.b]\nargs = [\n  \"/os:X\", # why\n  \"q\\\"r\",\n]\n[tasks.c]\n";
        assert_eq!(task_args(m, "a").unwrap(), ["/v", "a\\b"]);
        assert_eq!(task_args(m, "b").unwrap(), ["/os:X", "q\"r"]);
        assert_eq!(task_args(m, "c"), Err(ArgsError::NoArgs("c".into())));
        assert_eq!(task_args(m, "d"), Err(ArgsError::NoTask("d".into())));
        let bad = "[tasks.e]\nargs = [1, 2]\n";
        assert_eq!(task_args(bad, "e"), Err(ArgsError::Malformed("e".into())));
    }
}

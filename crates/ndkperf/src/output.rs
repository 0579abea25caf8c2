//! `--output FILE --format csv|json`: the results of a run with what a
//! reader needs to reproduce it (tool version, git commit, transport,
//! options, host name, start time).

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Context, Result};
use crate::report::PerfResult;
use ndkperf_cli::OutputFormat;

/// The run's metadata: `transport` and the options as given.
pub fn metadata(transport: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("tool".into(), "ndkperf".into());
    m.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    m.insert("commit".into(), env!("NDKPERF_GIT_COMMIT").into());
    m.insert("transport".into(), transport.into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    m.insert("options".into(), args.join(" ").into());
    m.insert("host".into(), host_name().into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    m.insert("unix_time".into(), now.into());
    m
}

/// This machine's name (`/proc/sys/kernel/hostname`, else `HOSTNAME`).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Checks that `path` can be written before a run spends time measuring.
pub fn check_path(path: &Path) -> Result<()> {
    std::fs::File::create(path)
        .map(drop)
        .with_context(|| format!("--output {}", path.display()))
}

/// Writes `results` (and `summary`, if any) with `meta` to `path`.
pub fn write(
    path: &Path,
    format: OutputFormat,
    meta: &Map<String, Value>,
    results: &[PerfResult],
    summary: Option<&Value>,
) -> Result<()> {
    let rows: Vec<Value> = results
        .iter()
        .map(|r| serde_json::to_value(r).unwrap_or_default())
        .collect();
    let text = match format {
        OutputFormat::Json => {
            let mut doc = Map::new();
            doc.insert("metadata".into(), Value::Object(meta.clone()));
            doc.insert("results".into(), Value::Array(rows));
            if let Some(s) = summary {
                doc.insert("summary".into(), s.clone());
            }
            serde_json::to_string_pretty(&Value::Object(doc)).unwrap_or_default() + "\n"
        }
        OutputFormat::Csv => csv(meta, &rows),
    };
    let mut f =
        std::fs::File::create(path).with_context(|| format!("--output {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("--output {}", path.display()))
}

/// One header line and one line per result: the metadata's columns,
/// then the result's plain fields (`extra` as one JSON text column).
fn csv(meta: &Map<String, Value>, rows: &[Value]) -> String {
    let mut columns: Vec<String> = meta.keys().cloned().collect();
    // A result field the metadata also has (transport) is one column.
    let fields: Vec<String> = rows
        .first()
        .and_then(Value::as_object)
        .map(|o| {
            o.keys()
                .filter(|k| !meta.contains_key(*k))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    columns.extend(fields.iter().cloned());
    let mut out = columns
        .iter()
        .map(|c| quote(c))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    for row in rows {
        let mut cells: Vec<String> = meta.values().map(cell).collect();
        for f in &fields {
            cells.push(row.get(f).map(cell).unwrap_or_default());
        }
        out += &cells.join(",");
        out.push('\n');
    }
    out
}

fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Null => String::new(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        other => quote(&other.to_string()),
    }
}

/// RFC 4180 quoting where a field needs it.
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Kind;

    #[test]
    fn csv_has_a_header_and_quoted_cells() {
        let mut meta = Map::new();
        meta.insert("options".into(), "bw --op \"read\", fast".into());
        meta.insert("version".into(), "1.0".into());
        let mut r = PerfResult::new(Kind::Bw, "read", "mem", 64, 10, 1.0);
        r.set_extra("note", "a,b");
        let rows = vec![serde_json::to_value(&r).unwrap()];
        let text = csv(&meta, &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("options,version,bytes,"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("\"bw --op \"\"read\"\", fast\",1.0,640,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains(",\"{\"\"note\"\":\"\"a,b\"\"}\","),
            "{}",
            lines[1]
        );
        assert!(lines[0].contains("cpu_seconds_per_gb"));
        let mut columns: Vec<&str> = lines[0].split(',').collect();
        let n = columns.len();
        columns.sort_unstable();
        columns.dedup();
        assert_eq!(columns.len(), n, "a column twice: {}", lines[0]);
    }
}

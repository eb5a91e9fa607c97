//! BENCHMARKS.md's tables of current figures, and the check that ties them to what was
//! measured (the `check_benchmarks` binary).
//!
//! A table of figures is a Markdown table whose header has exactly the columns of
//! [`COLUMNS`]; other tables on the page are left alone. In each row:
//!
//! - `id` names the figure the row is about, as `<tool>:<name>` (an optional qualifier in
//!   square brackets at the end tells apart rows of one id measured on different machines).
//!   Two tools can be compared with fresh output: `criterion:<full id>` (as criterion prints
//!   it, such as `msm/cuda-resident/2^20`), and `report:<primitive> @ <items> @ <backend>`,
//!   a row of `report.json` by its primitive, its item count (`2^24` or a number) and a
//!   piece of its backend's name. Other tools (`pir_scale:...`) are only named.
//! - The figure cells (`ours, GPU`, `ours, CPU`, `best outside`, `floor`) hold `—` or figures
//!   such as `7.88 ms` or `33,443/s`, each with a unit, the first of which is the cell's
//!   figure; the row's own figure is that of `ours, GPU`, or of `ours, CPU` where the GPU
//!   cell has none.
//! - `ratios` holds `—` or `;`-separated entries `vs CPU 44.7x`, `vs outside 2.16x`,
//!   `vs floor 0.47x`: the speed of the row's own figure over that of the other cell (times
//!   inverted, rates as they are), each recomputed here from the figures shown.
//! - `GPU`, `date` (`YYYY-MM-DD ...` or `not recorded ...`), `commit` (hex ids or
//!   `not recorded ...`) and `command` must be filled in.
//! - `source` links what the figures come from: journal sections
//!   (`docs/journal/<crate>.md#<heading>`), in whose text every number of the figure cells
//!   must appear as written (links may be inline or by reference, `[text][name]` with
//!   `[name]: target` on a line of its own), or raw output committed beside the page (a `report.json`, or a
//!   criterion `estimates.json` with its `benchmark.json`), which the row's own figure must
//!   equal to the precision shown.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// The columns of a table of figures, in order.
pub const COLUMNS: [&str; 12] = [
    "id",
    "workload",
    "ours, GPU",
    "ours, CPU",
    "best outside",
    "floor",
    "ratios",
    "GPU",
    "date",
    "commit",
    "command",
    "source",
];

const ID: usize = 0;
const OURS_GPU: usize = 2;
const OURS_CPU: usize = 3;
const OUTSIDE: usize = 4;
const FLOOR: usize = 5;
const RATIOS: usize = 6;
const GPU: usize = 7;
const DATE: usize = 8;
const COMMIT: usize = 9;
const COMMAND: usize = 10;
const SOURCE: usize = 11;
const FIGURES: [usize; 4] = [OURS_GPU, OURS_CPU, OUTSIDE, FLOOR];

/// One row of a table of figures.
#[derive(Debug, Clone)]
pub struct Row {
    /// Line of the page (from 1).
    pub line: usize,
    /// The cells, one per entry of [`COLUMNS`], trimmed, `\|` unescaped.
    pub cells: Vec<String>,
}

impl Row {
    /// The id without backticks and without a trailing `[qualifier]`.
    pub fn id(&self) -> String {
        let id = self.cells[ID].replace('`', "");
        match id.rfind(" [") {
            Some(at) if id.ends_with(']') => id[..at].trim().to_owned(),
            _ => id.trim().to_owned(),
        }
    }

    /// The row's own figure: the GPU's, or the CPU's where the GPU cell has none.
    pub fn own_figure(&self) -> Option<Quantity> {
        first_quantity(&self.cells[OURS_GPU]).or_else(|| first_quantity(&self.cells[OURS_CPU]))
    }

    /// Whether the row's own figure is the GPU's.
    pub fn own_figure_is_gpu(&self) -> bool {
        first_quantity(&self.cells[OURS_GPU]).is_some()
    }

    /// The GPU cell up to its first parenthesis: `NVIDIA H100 80GB HBM3`.
    pub fn gpu(&self) -> &str {
        let gpu = &self.cells[GPU];
        gpu.split(" (").next().unwrap_or(gpu).trim()
    }
}

/// Splits a table line into its cells (`\|` is a `|` inside a cell).
fn split_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(cell) = cells.last_mut() {
                    cell.push('|');
                }
            }
            '|' => cells.push(String::new()),
            c => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The rows of every table of figures on the page.
pub fn rows(page: &str) -> Result<Vec<Row>, String> {
    let lines: Vec<&str> = page.lines().collect();
    let mut rows = Vec::new();
    let mut tables = 0;
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with('|') {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && lines[i].trim_start().starts_with('|') {
            i += 1;
        }
        if split_cells(lines[start]) != COLUMNS {
            continue;
        }
        tables += 1;
        for (n, line) in lines.iter().enumerate().take(i).skip(start + 2) {
            let cells = split_cells(line);
            if cells.len() != COLUMNS.len() {
                return Err(format!(
                    "line {}: {} cells, the header has {}",
                    n + 1,
                    cells.len(),
                    COLUMNS.len()
                ));
            }
            rows.push(Row { line: n + 1, cells });
        }
    }
    if tables == 0 {
        return Err(format!(
            "no table with the columns | {} |",
            COLUMNS.join(" | ")
        ));
    }
    Ok(rows)
}

/// A number as written: its text (with any thousands commas), value and decimals.
#[derive(Debug, Clone, PartialEq)]
struct Number {
    text: String,
    value: f64,
    decimals: usize,
    end: usize,
}

/// The numbers of `text`. With `figures_only`, a number that is part of a name or a power
/// (`H100`, `sm_90`, `2^20`, `2^-128`, `f202f5d`) is left out.
fn numbers(text: &str, figures_only: bool) -> Vec<Number> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].1.is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len()
            && (chars[i].1.is_ascii_digit()
                || (matches!(chars[i].1, ',' | '.')
                    && chars.get(i + 1).is_some_and(|c| c.1.is_ascii_digit())))
        {
            i += 1;
        }
        let before = start.checked_sub(1).map(|b| chars[b].1);
        let before2 = start.checked_sub(2).map(|b| chars[b].1);
        let after = chars.get(i).map(|c| c.1);
        let in_name = before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '^')
            || (before == Some('-') && before2 == Some('^'))
            || after == Some('^');
        if figures_only && in_name {
            continue;
        }
        let byte_end = chars.get(i).map_or(text.len(), |c| c.0);
        let written = &text[chars[start].0..byte_end];
        let plain = written.replace(',', "");
        let decimals = plain.split_once('.').map_or(0, |(_, d)| d.len());
        if let Ok(value) = plain.parse() {
            out.push(Number {
                text: written.to_owned(),
                value,
                decimals,
                end: byte_end,
            });
        }
    }
    out
}

/// What a figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A duration.
    Time,
    /// Items (blocks, values, ciphertexts...) per second.
    Items,
    /// Bytes per second.
    Bytes,
}

/// Units a figure may carry: text, kind, factor to seconds or to one per second. Where one
/// unit begins another, the longer comes first.
const UNITS: [(&str, Kind, f64); 17] = [
    ("G blocks/s", Kind::Items, 1e9),
    ("M blocks/s", Kind::Items, 1e6),
    ("hints/s", Kind::Items, 1.0),
    ("TB/s", Kind::Bytes, 1e12),
    ("GB/s", Kind::Bytes, 1e9),
    ("MB/s", Kind::Bytes, 1e6),
    ("G/s", Kind::Items, 1e9),
    ("M/s", Kind::Items, 1e6),
    ("k/s", Kind::Items, 1e3),
    ("/s", Kind::Items, 1.0),
    ("min", Kind::Time, 60.0),
    ("ms", Kind::Time, 1e-3),
    ("µs", Kind::Time, 1e-6),
    ("us", Kind::Time, 1e-6),
    ("ns", Kind::Time, 1e-9),
    ("s", Kind::Time, 1.0),
    ("h", Kind::Time, 3600.0),
];

/// A figure as shown: `7.88 ms`, `33,443/s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantity {
    /// The number shown.
    pub shown: f64,
    /// Its decimals.
    pub decimals: usize,
    /// The unit's factor to seconds (times) or to one per second (rates).
    pub factor: f64,
    /// What it measures.
    pub kind: Kind,
    /// Its unit as written: `ms`, `G blocks/s`.
    pub unit: &'static str,
}

impl Quantity {
    /// In seconds, or per second.
    pub fn value(&self) -> f64 {
        self.shown * self.factor
    }

    /// Whether `value` (seconds, or per second) shows as this figure at its precision.
    pub fn shows(&self, value: f64) -> bool {
        let scaled = value / self.factor;
        let unit = 10f64.powi(-(self.decimals as i32));
        (scaled - self.shown).abs() <= 0.5 * unit * (1.0 + 1e-9)
    }
}

/// The first number of `cell` that carries a unit.
pub fn first_quantity(cell: &str) -> Option<Quantity> {
    numbers(cell, true).into_iter().find_map(|n| {
        let rest = &cell[n.end..];
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        UNITS.iter().find_map(|&(unit, kind, factor)| {
            let after = rest.strip_prefix(unit)?;
            if after.chars().next().is_some_and(char::is_alphanumeric) {
                return None;
            }
            Some(Quantity {
                shown: n.value,
                decimals: n.decimals,
                factor,
                kind,
                unit,
            })
        })
    })
}

/// How many times faster `ours` is than `other` (times inverted, rates as they are); `None`
/// when they measure different things.
pub fn speedup(ours: Quantity, other: Quantity) -> Option<f64> {
    match (ours.kind, other.kind) {
        (Kind::Time, Kind::Time) => Some(other.value() / ours.value()),
        (a, b) if a == b => Some(ours.value() / other.value()),
        _ => None,
    }
}

/// GitHub's anchor for a heading: lower case, spaces to `-`, punctuation other than `-` and
/// `_` dropped.
pub fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The text of the section of `markdown` whose heading has the anchor `anchor` (to the next
/// heading of the same or a higher level), or the whole text for an empty anchor.
pub fn section(markdown: &str, anchor: &str) -> Option<String> {
    if anchor.is_empty() {
        return Some(markdown.to_owned());
    }
    let mut seen: Vec<String> = Vec::new();
    let mut found: Option<(usize, Vec<&str>)> = None;
    let mut fenced = false;
    for line in markdown.lines() {
        fenced ^= line.trim_start().starts_with("```");
        let level = line.chars().take_while(|&c| c == '#').count();
        let heading = !fenced && level > 0 && line[level..].starts_with(' ');
        if let Some((open, lines)) = found.as_mut() {
            if heading && level <= *open {
                break;
            }
            lines.push(line);
            continue;
        }
        if heading {
            let base = slug(line[level..].trim());
            let repeats = seen.iter().filter(|s| **s == base).count();
            let name = match repeats {
                0 => base.clone(),
                n => format!("{base}-{n}"),
            };
            seen.push(base);
            if name == anchor {
                found = Some((level, vec![line]));
            }
        }
    }
    found.map(|(_, lines)| lines.join("\n"))
}

/// The reference-link definitions `[name]: target` of a page, names in lower case.
fn definitions(page: &str) -> HashMap<String, String> {
    page.lines()
        .filter_map(|line| {
            let (name, target) = line.trim().strip_prefix('[')?.split_once("]:")?;
            Some((name.to_lowercase(), target.trim().to_owned()))
        })
        .collect()
}

/// The targets of a cell's links, inline `[text](target)` or by reference `[text][name]`
/// (an undefined name gives a target that cannot be read).
fn links(cell: &str, definitions: &HashMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = cell;
    while let Some(at) = rest.find(']') {
        let after = &rest[at + 1..];
        let close = match after.chars().next() {
            Some('(') => ')',
            Some('[') => ']',
            _ => {
                rest = after;
                continue;
            }
        };
        let Some(end) = after.find(close) else {
            break;
        };
        let inner = &after[1..end];
        out.push(match close {
            ')' => inner.to_owned(),
            _ => definitions
                .get(&inner.to_lowercase())
                .cloned()
                .unwrap_or_else(|| format!("[{inner}] (no such link definition)")),
        });
        rest = &after[end + 1..];
    }
    out
}

/// A `report:` id's parts: primitive, item count and a piece of the backend's name.
fn report_id(id: &str) -> Option<(String, u64, String)> {
    let rest = id.strip_prefix("report:")?;
    let parts: Vec<&str> = rest.split(" @ ").map(str::trim).collect();
    let [primitive, items, backend] = parts[..] else {
        return None;
    };
    let items = match items.split_once('^') {
        Some(("2", k)) => 1u64.checked_shl(k.parse().ok()?)?,
        Some(_) => return None,
        None => items.replace(',', "").parse().ok()?,
    };
    Some((primitive.to_owned(), items, backend.to_lowercase()))
}

/// A measured value: seconds per run, and the items and bytes one run processes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Seconds per run (a median).
    pub seconds: f64,
    /// Items per run, if known.
    pub items: Option<f64>,
    /// Bytes per run, if known.
    pub bytes: Option<f64>,
}

impl Measured {
    /// The value in `figure`'s terms: seconds, items per second or bytes per second.
    pub fn value_for(&self, figure: &Quantity) -> Option<f64> {
        match figure.kind {
            Kind::Time => Some(self.seconds),
            Kind::Items => Some(self.items? / self.seconds),
            Kind::Bytes => Some(self.bytes? / self.seconds),
        }
    }
}

/// A fresh measurement, and the GPU it ran on where its output names one.
pub type Fresh = (Measured, Option<String>);

/// The row of a parsed `report.json` that a `report:` id names, and the report's GPU.
pub fn in_report(report: &Value, id: &str) -> Option<Fresh> {
    let (primitive, items, backend) = report_id(id)?;
    let row = report["rows"].as_array()?.iter().find(|row| {
        row["primitive"].as_str() == Some(primitive.as_str())
            && row["items"].as_u64() == Some(items)
            && row["backend"]
                .as_str()
                .is_some_and(|b| b.to_lowercase().contains(&backend))
    })?;
    let measured = Measured {
        seconds: row["seconds"].as_f64()?,
        items: row["items"].as_f64(),
        bytes: row["bytes"].as_f64().filter(|b| *b > 0.0),
    };
    let gpu = report["machine"]["gpu"].as_str().map(str::to_owned);
    Some((measured, gpu))
}

/// A criterion measurement from its `estimates.json` (the median) and `benchmark.json`
/// (the id and the throughput), as criterion writes them under `<id>/new/`.
pub fn from_criterion(estimates: &Value, benchmark: &Value) -> Option<(String, Measured)> {
    let id = benchmark["full_id"].as_str()?.to_owned();
    let seconds = estimates["median"]["point_estimate"].as_f64()? * 1e-9;
    let throughput = &benchmark["throughput"];
    let measured = Measured {
        seconds,
        items: throughput["Elements"].as_f64(),
        bytes: throughput["Bytes"].as_f64(),
    };
    Some((id, measured))
}

fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

fn has_commit(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| (7..=40).contains(&w.len()) && w.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Checks the page. `read` gives a linked file's text by its path relative to the page.
/// Returns the problems found, each with its line.
pub fn check(page: &str, read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let rows = match rows(page) {
        Ok(rows) => rows,
        Err(why) => return vec![why],
    };
    let definitions = definitions(page);
    let mut problems = Vec::new();
    let mut ids = HashSet::new();
    for row in &rows {
        let mut problem = |what: String| problems.push(format!("line {}: {what}", row.line));
        let cells = &row.cells;
        let id = row.id();
        if !id.contains(':') {
            problem(format!("id `{id}` is not `<tool>:<name>`"));
        } else if id.starts_with("report:") && report_id(&id).is_none() {
            problem(format!(
                "id `{id}` is not `report:<primitive> @ <items> @ <backend>`"
            ));
        }
        if !ids.insert(cells[ID].replace('`', "")) {
            problem(format!("id `{}` is used twice", cells[ID]));
        }
        for column in [GPU, DATE, COMMIT, COMMAND] {
            if cells[column].is_empty() {
                problem(format!(
                    "no {} (write `not recorded` if none was)",
                    COLUMNS[column]
                ));
            }
        }
        let unrecorded = |cell: &str| cell.is_empty() || cell.starts_with("not recorded");
        if !is_date(&cells[DATE]) && !unrecorded(&cells[DATE]) {
            problem(format!("date `{}` is not YYYY-MM-DD", cells[DATE]));
        }
        if !has_commit(&cells[COMMIT]) && !unrecorded(&cells[COMMIT]) {
            problem(format!("commit `{}` names no commit", cells[COMMIT]));
        }
        let Some(own) = row.own_figure() else {
            problem("no figure of ours (a number with a unit)".to_owned());
            continue;
        };

        // Sources: journal sections, or raw output.
        let mut journal = String::new();
        let mut raw_checked = false;
        let targets = links(&cells[SOURCE], &definitions);
        if targets.is_empty() {
            problem("no source linked".to_owned());
        }
        for target in &targets {
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let Some(text) = read(path) else {
                problem(format!("source {path} cannot be read"));
                continue;
            };
            if path.ends_with(".md") {
                match section(&text, anchor) {
                    Some(section) => journal += &section,
                    None => problem(format!("{path} has no heading #{anchor}")),
                }
                continue;
            }
            let measured = match serde_json::from_str::<Value>(&text) {
                Ok(json) if id.starts_with("report:") => in_report(&json, &id).map(|m| m.0),
                Ok(estimates) => {
                    let benchmark = path
                        .rsplit_once('/')
                        .and_then(|(dir, _)| read(&format!("{dir}/benchmark.json")))
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
                    benchmark
                        .and_then(|b| from_criterion(&estimates, &b))
                        .filter(|(criterion_id, _)| {
                            Some(criterion_id.as_str()) == id.strip_prefix("criterion:")
                        })
                        .map(|(_, m)| m)
                }
                Err(e) => {
                    problem(format!("{path}: {e}"));
                    continue;
                }
            };
            match measured.and_then(|m| m.value_for(&own)) {
                Some(value) if own.shows(value) => raw_checked = true,
                Some(value) => problem(format!(
                    "the figure {} differs from {path}: {:.*}",
                    own.shown,
                    own.decimals + 2,
                    value / own.factor
                )),
                None => problem(format!("{path} has no value for id `{id}`")),
            }
        }
        let written: HashSet<String> = numbers(&journal, false)
            .into_iter()
            .map(|n| n.text)
            .collect();
        for column in FIGURES {
            let mut figures = numbers(&cells[column], true);
            if raw_checked {
                let own_column = if row.own_figure_is_gpu() {
                    OURS_GPU
                } else {
                    OURS_CPU
                };
                if column == own_column && !figures.is_empty() {
                    figures.remove(0);
                }
            }
            for n in figures.iter().filter(|n| !written.contains(&n.text)) {
                problem(format!(
                    "{} `{}` is not in the linked sources",
                    COLUMNS[column], n.text
                ));
            }
        }

        // Ratios, recomputed from the figures shown.
        for entry in cells[RATIOS].split(';').map(str::trim) {
            if entry.is_empty() || entry == "—" {
                continue;
            }
            let other = [
                ("vs CPU", OURS_CPU),
                ("vs outside", OUTSIDE),
                ("vs floor", FLOOR),
            ]
            .into_iter()
            .find_map(|(label, column)| Some((entry.strip_prefix(label)?, column)));
            let Some((rest, column)) = other else {
                problem(format!(
                    "ratio `{entry}` is not `vs CPU|outside|floor <r>x`"
                ));
                continue;
            };
            let shown = numbers(rest, false)
                .into_iter()
                .next()
                .filter(|n| rest[n.end..].starts_with('x'));
            let Some(shown) = shown else {
                problem(format!("ratio `{entry}` has no `<r>x`"));
                continue;
            };
            if column == OURS_CPU && !row.own_figure_is_gpu() {
                problem(format!(
                    "ratio `{entry}`: the row's own figure is the CPU's"
                ));
                continue;
            }
            let Some(expected) = first_quantity(&cells[column]).and_then(|q| speedup(own, q))
            else {
                problem(format!(
                    "ratio `{entry}`: no comparable figure in {}",
                    COLUMNS[column]
                ));
                continue;
            };
            let unit = 10f64.powi(-(shown.decimals as i32));
            if (shown.value - expected).abs() > (0.5 * unit).max(0.01 * expected) {
                problem(format!(
                    "ratio `{entry}`: the figures shown give {expected:.3}x"
                ));
            }
        }
    }
    problems
}

/// A row's figure against a fresh measurement.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The row's id.
    pub id: String,
    /// The page's figure, as shown.
    pub page: Quantity,
    /// The fresh value in the same unit.
    pub fresh: f64,
    /// Why it was not compared (another GPU), if so.
    pub skipped: Option<String>,
}

impl Comparison {
    /// fresh / page - 1 in the direction of speed: positive is faster.
    pub fn change(&self) -> f64 {
        match self.page.kind {
            Kind::Time => self.page.shown / self.fresh - 1.0,
            _ => self.fresh / self.page.shown - 1.0,
        }
    }
}

/// Compares each row whose id `find` knows with the fresh measurement it returns (and the
/// GPU it ran on, where known).
pub fn compare(
    page: &str,
    find: &dyn Fn(&str) -> Option<Fresh>,
) -> Result<Vec<Comparison>, String> {
    let mut out = Vec::new();
    for row in rows(page)? {
        let id = row.id();
        let (Some(page_figure), Some((measured, gpu))) = (row.own_figure(), find(&id)) else {
            continue;
        };
        let Some(fresh) = measured.value_for(&page_figure) else {
            continue;
        };
        let skipped = match gpu {
            Some(gpu) if row.own_figure_is_gpu() && !gpu.starts_with(row.gpu()) => Some(format!(
                "measured on {gpu}, the page's figure on {}",
                row.gpu()
            )),
            _ => None,
        };
        out.push(Comparison {
            id,
            page: page_figure,
            fresh: fresh / page_figure.factor,
            skipped,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOURNAL: &str = "# Journal\n\n## msm: run (2026-11-22, commit 05df698)\n\n\
        | 2^20 | **7.88 ms** | 9.60 ms |\n\nThe anchor: about 109 ms on an RTX 5000 Ada.\n\n## Other\n\n12.5 ms\n";

    fn page(row: &str) -> String {
        format!(
            "# Benchmarks\n\n| {} |\n|{}\n{row}\n",
            COLUMNS.join(" | "),
            "---|".repeat(COLUMNS.len())
        )
    }

    const GOOD: &str = "| `criterion:msm/cuda-resident/2^20` | MSM, 2^20 points | **7.88 ms** \
        (uploaded: 9.60 ms) | — | about 109 ms (RTX 5000 Ada) | — | vs outside 13.8x | \
        NVIDIA H100 80GB HBM3 | 2026-11-22 | 05df698 | `bash .gpu/run bench msm` | \
        [msm.md](docs/journal/msm.md#msm-run-2026-11-22-commit-05df698) |";

    fn read(path: &str) -> Option<String> {
        match path {
            "docs/journal/msm.md" => Some(JOURNAL.to_owned()),
            "docs/figures/x/report.json" => Some(
                r#"{"machine": {"gpu": "NVIDIA H100 80GB HBM3 (sm_90)"}, "rows": [
                    {"primitive": "BLS12-381 G1 MSM", "backend": "cuda: NVIDIA H100 (scalars resident)",
                     "items": 16384, "bytes": 0, "seconds": 0.0011749}]}"#
                    .to_owned(),
            ),
            _ => None,
        }
    }

    /// The project's own page, as `check_benchmarks` checks it without options (CI runs this in
    /// the test step, so it shares the test build instead of a build of the binary).
    #[test]
    fn the_project_page_is_consistent() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let page = std::fs::read_to_string(root.join("BENCHMARKS.md")).expect("BENCHMARKS.md");
        let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
        assert!(rows(&page).expect("its tables parse").len() > 30);
        assert_eq!(check(&page, &read), Vec::<String>::new());
    }

    #[test]
    fn a_row_tied_to_its_journal_passes() {
        assert_eq!(check(&page(GOOD), &read), Vec::<String>::new());
    }

    #[test]
    fn sources_may_be_linked_by_reference() {
        let row = GOOD.replace(
            "[msm.md](docs/journal/msm.md#msm-run-2026-11-22-commit-05df698)",
            "[msm.md][Run]",
        );
        let defined =
            page(&row) + "\n[run]: docs/journal/msm.md#msm-run-2026-11-22-commit-05df698\n";
        assert_eq!(check(&defined, &read), Vec::<String>::new());
        let problems = check(&page(&row), &read);
        assert!(
            problems.iter().any(|p| p.contains("no such link")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_figure_not_in_the_journal_fails() {
        let problems = check(&page(&GOOD.replace("7.88 ms", "7.8 ms")), &read);
        assert!(problems.iter().any(|p| p.contains("`7.8`")), "{problems:?}");
        let problems = check(&page(&GOOD.replace("109 ms", "12.5 ms")), &read);
        assert!(
            problems.iter().any(|p| p.contains("`12.5`")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_wrong_ratio_or_missing_cell_fails() {
        let problems = check(&page(&GOOD.replace("13.8x", "12.0x")), &read);
        assert!(
            problems.iter().any(|p| p.contains("give 13.832x")),
            "{problems:?}"
        );
        let problems = check(&page(&GOOD.replace("| 05df698 |", "| |")), &read);
        assert!(
            problems.iter().any(|p| p.contains("no commit")),
            "{problems:?}"
        );
        let problems = check(&page(&GOOD.replace("2026-11-22 |", "yesterday |")), &read);
        assert!(
            problems.iter().any(|p| p.contains("YYYY-MM-DD")),
            "{problems:?}"
        );
        let problems = check(&page(&GOOD.replace("#msm-run", "#msm-walk")), &read);
        assert!(
            problems.iter().any(|p| p.contains("no heading")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_raw_report_is_matched_to_the_shown_precision() {
        let row = "| `report:BLS12-381 G1 MSM @ 2^14 @ resident` | MSM | 1.175 ms | — | — | — | — \
            | NVIDIA H100 80GB HBM3 | 2026-11-22 | 35d27e6 | `report` | \
            [report.json](docs/figures/x/report.json) |";
        assert_eq!(check(&page(row), &read), Vec::<String>::new());
        let problems = check(&page(&row.replace("1.175 ms", "1.180 ms")), &read);
        assert!(
            problems.iter().any(|p| p.contains("differs")),
            "{problems:?}"
        );
    }

    #[test]
    fn figures_and_units_parse() {
        let q = first_quantity("~65 G blocks/s (4.2 TB/s) on an H100").unwrap();
        assert_eq!((q.shown, q.kind, q.factor), (65.0, Kind::Items, 1e9));
        let q = first_quantity("sm_90, 2^20 leaves: 33,443/s").unwrap();
        assert_eq!((q.shown, q.decimals, q.kind), (33443.0, 0, Kind::Items));
        let q = first_quantity("1.991 ms and 1.995 ms").unwrap();
        assert_eq!((q.shown, q.decimals, q.kind), (1.991, 3, Kind::Time));
        assert!(first_quantity("not measured at 2^20").is_none());
        assert!(first_quantity("16 threads").is_none());
        let time = first_quantity("2 s").unwrap();
        let rate = first_quantity("10 /s").unwrap();
        assert_eq!(speedup(time, first_quantity("1 min").unwrap()), Some(30.0));
        assert_eq!(speedup(time, rate), None);
        assert!(q.shows(1.9914e-3) && !q.shows(1.9916e-3));
    }

    #[test]
    fn anchors_follow_github() {
        assert_eq!(
            slug("2026-11-21 — ChaCha8 keystream, NVIDIA H100 (commit 9865318)"),
            "2026-11-21--chacha8-keystream-nvidia-h100-commit-9865318"
        );
        assert_eq!(slug("`report` on the H100"), "report-on-the-h100");
        let text = "## A\n\none\n\n## A\n\ntwo\n\n### B\n\nthree\n\n## C\n";
        assert_eq!(
            section(text, "a-1").unwrap(),
            "## A\n\ntwo\n\n### B\n\nthree\n"
        );
        assert_eq!(section(text, "b").unwrap(), "### B\n\nthree\n");
        assert!(section(text, "d").is_none());
    }

    #[test]
    fn fresh_runs_are_compared_on_the_same_gpu_only() {
        let report: Value =
            serde_json::from_str(&read("docs/figures/x/report.json").unwrap()).unwrap();
        let row = "| `report:BLS12-381 G1 MSM @ 2^14 @ resident` | MSM | 1.000 ms | — | — | — | — \
            | NVIDIA H100 80GB HBM3 | 2026-11-22 | 35d27e6 | `report` | [j](j.md) |";
        let find = |id: &str| in_report(&report, id);
        let compared = compare(&page(row), &find).unwrap();
        assert_eq!(compared.len(), 1);
        assert!((compared[0].change() + 0.1489).abs() < 1e-3, "{compared:?}");
        assert!(compared[0].skipped.is_none());
        let other = page(&row.replace("H100 80GB HBM3 |", "H200 |"));
        assert!(compare(&other, &find).unwrap()[0].skipped.is_some());
    }
}

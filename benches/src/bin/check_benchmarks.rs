//! `check_benchmarks`: checks BENCHMARKS.md against what its figures come from, and lists the
//! rows a fresh run moved.
//!
//! ```text
//! cargo run -p benches --bin check_benchmarks [-- [--page BENCHMARKS.md]
//!     [--report report/report.json]... [--criterion target/criterion]... [--tolerance 5]]
//! ```
//!
//! Without options it checks the page alone (no GPU needed; CI runs it): every row of its
//! tables of figures names its GPU, date, commit, command and sources; every number in its
//! figure cells is written in the journal sections it links, or equals the raw output it
//! links; every ratio follows from the figures shown (the format: `benches::figures`).
//!
//! With `--report` (a `report.json`) or `--criterion` (criterion's output folder), it also
//! compares each row whose id that output has with the fresh value and lists the rows that
//! moved by more than the tolerance (in percent of speed). Rows measured on another GPU than
//! the page's figure are shown but not counted; criterion's output names no GPU, so compare
//! it only on the GPU the page names. It exits with status 1 on any problem or any moved row.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use benches::figures::{self, Measured};
use clap::Parser;
use serde_json::Value;

/// Checks BENCHMARKS.md against its sources, and optionally against a fresh run.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The page to check; its links are relative to its folder.
    #[arg(long, default_value = "BENCHMARKS.md")]
    page: PathBuf,
    /// A fresh `report.json` to compare the `report:` rows with.
    #[arg(long)]
    report: Vec<PathBuf>,
    /// A criterion output folder (such as target/criterion) to compare the `criterion:` rows with.
    #[arg(long)]
    criterion: Vec<PathBuf>,
    /// How far (percent of speed) a fresh figure may move before its row is listed.
    #[arg(long, default_value_t = 5.0)]
    tolerance: f64,
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every criterion measurement under `dir`: `<id>/new/benchmark.json` beside `estimates.json`.
fn criterion_runs(dir: &Path, out: &mut Vec<(String, Measured)>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let (benchmark, estimates) = (path.join("benchmark.json"), path.join("estimates.json"));
        if path.ends_with("new") && benchmark.is_file() && estimates.is_file() {
            let run = figures::from_criterion(&read_json(&estimates)?, &read_json(&benchmark)?);
            out.extend(run);
        } else {
            criterion_runs(&path, out)?;
        }
    }
    Ok(())
}

fn run(args: &Args) -> Result<bool, String> {
    let page = std::fs::read_to_string(&args.page)
        .map_err(|e| format!("cannot read {}: {e}", args.page.display()))?;
    let base = args.page.parent().unwrap_or(Path::new("")).to_owned();
    let read = |path: &str| std::fs::read_to_string(base.join(path)).ok();
    let problems = figures::check(&page, &read);
    let rows = figures::rows(&page).map_or(0, |r| r.len());
    for problem in &problems {
        println!("{}:{problem}", args.page.display());
    }
    println!(
        "{}: {rows} rows, {} problems",
        args.page.display(),
        problems.len()
    );

    let reports = args
        .report
        .iter()
        .map(|p| read_json(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut criterion = Vec::new();
    for dir in &args.criterion {
        criterion_runs(dir, &mut criterion)?;
    }
    if reports.is_empty() && criterion.is_empty() {
        return Ok(problems.is_empty());
    }
    let find = |id: &str| {
        if let Some(name) = id.strip_prefix("criterion:") {
            let run = criterion.iter().find(|(run, _)| run == name);
            return run.map(|(_, measured)| (*measured, None));
        }
        reports.iter().find_map(|r| figures::in_report(r, id))
    };
    let compared = figures::compare(&page, &find)?;
    let mut moved = 0;
    for c in &compared {
        let change = 100.0 * c.change();
        let verdict = match &c.skipped {
            Some(why) => format!("not counted: {why}"),
            None if change.abs() > args.tolerance => {
                moved += 1;
                "MOVED".to_owned()
            }
            None => "ok".to_owned(),
        };
        let (decimals, unit) = (c.page.decimals, c.page.unit);
        println!(
            "{}: page {:.decimals$} {unit}, now {:.decimals$} {unit} ({change:+.1}% speed): {verdict}",
            c.id, c.page.shown, c.fresh
        );
    }
    println!(
        "{} rows compared with the fresh output, {moved} moved by more than {}%",
        compared.len(),
        args.tolerance
    );
    Ok(problems.is_empty() && moved == 0)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(why) => {
            eprintln!("check_benchmarks: {why}");
            ExitCode::FAILURE
        }
    }
}
